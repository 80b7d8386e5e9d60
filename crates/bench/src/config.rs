//! Command-line options ([`Args`]) and the validated run configuration ([`Config`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::command::{make_data, Template};
use crate::keys::Pattern;

/// skerry-bench: a memtier-like RESP load generator (compio/io_uring; one runtime per
/// thread, one task per connection).
///
/// Keys are the decimal numbers 1..=KEY_MAX without prefix. Without --requests or
/// --test-time, a sequential run makes exactly KEY_MAX requests (a fill: every key once) and
/// other patterns run for 10 seconds.
#[derive(Parser, Debug, Clone)]
#[command(name = "skerry-bench", version, about, long_about = None)]
pub struct Args {
    /// Server host name or address.
    #[arg(short = 's', long, default_value = "127.0.0.1")]
    pub host: String,
    /// Server port.
    #[arg(short = 'p', long, default_value_t = 6379)]
    pub port: u16,
    /// Threads (one compio runtime each).
    #[arg(short = 't', long, default_value_t = 1)]
    pub threads: usize,
    /// Connections per thread.
    #[arg(short = 'c', long, alias = "clients", default_value_t = 50)]
    pub connections: usize,
    /// Requests in flight per connection.
    #[arg(short = 'P', long, default_value_t = 1)]
    pub pipeline: usize,
    /// Keys are 1..=KEY_MAX.
    #[arg(short = 'n', long = "key-maximum", default_value_t = 1_000_000)]
    pub key_max: u64,
    /// Key pattern: sequential (disjoint contiguous stream per connection: a fill), uniform,
    /// or zipf (see --zipf-exponent).
    #[arg(long = "key-pattern", default_value = "uniform", value_parser = ["sequential", "uniform", "zipf"])]
    pub key_pattern: String,
    /// Exponent of the zipf pattern.
    #[arg(long = "zipf-exponent", default_value_t = 0.99)]
    pub zipf_exponent: f64,
    /// Seed of the random key patterns (each connection derives its own from it).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Value size in bytes (__data__).
    #[arg(short = 'd', long = "data-size", default_value_t = 1024)]
    pub data_size: usize,
    /// SET:GET ratio, e.g. 1:0 (only SET), 0:1 (only GET), 1:10.
    #[arg(long, default_value = "1:10", conflicts_with = "command")]
    pub ratio: String,
    /// Command template instead of --ratio, e.g. "HSET __key__ f __data__".
    #[arg(long)]
    pub command: Option<String>,
    /// Run for this many seconds (each connection stops issuing at the deadline and waits
    /// for its replies).
    #[arg(long = "test-time", conflicts_with = "requests")]
    pub test_time: Option<f64>,
    /// Make exactly this many requests in total, split over all connections.
    #[arg(long)]
    pub requests: Option<u64>,
    /// At most this many requests per second per connection.
    #[arg(long = "rate-limit")]
    pub rate_limit: Option<f64>,
    /// Pin the threads to these CPUs (round robin), e.g. "1" or "0,2-3".
    #[arg(long)]
    pub cpus: Option<String>,
    /// Write the summary as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the summary as CSV (a header line and one row) to this file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Exit with status 3 if any GET (any request) got a nil reply.
    #[arg(long = "require-no-misses")]
    pub require_no_misses: bool,
    /// Exit with status 4 if any request got an error reply.
    #[arg(long = "require-no-errors")]
    pub require_no_errors: bool,
    /// No progress line on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Seconds to keep trying to connect (the server may be starting).
    #[arg(long = "connect-timeout", default_value_t = 5.0)]
    pub connect_timeout: f64,
}

/// When a run stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// After exactly this many requests in total.
    Requests(u64),
    /// After this long (requests in flight at the deadline are still awaited).
    Time(Duration),
}

/// What the requests are.
#[derive(Debug, Clone)]
pub enum Workload {
    /// SETs and GETs in this ratio (`set` SETs then `get` GETs, repeated).
    Ratio {
        /// SETs per cycle.
        set: u32,
        /// GETs per cycle.
        get: u32,
        /// `SET __key__ __data__`.
        set_t: Template,
        /// `GET __key__`.
        get_t: Template,
    },
    /// Every request from this template.
    Command(Template),
}

impl Workload {
    /// A short description ("SET:GET 1:10" or the template).
    pub fn describe(&self) -> String {
        match self {
            Workload::Ratio { set, get, .. } => format!("SET:GET {set}:{get}"),
            Workload::Command(t) => format!("command \"{}\"", t.text()),
        }
    }
}

/// A validated run configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Server host.
    pub host: String,
    /// Server port.
    pub port: u16,
    /// Threads.
    pub threads: usize,
    /// Connections per thread.
    pub conns_per_thread: usize,
    /// Requests in flight per connection.
    pub pipeline: usize,
    /// Keys are `1..=key_max`.
    pub key_max: u64,
    /// Key pattern.
    pub pattern: Pattern,
    /// Seed of the random patterns.
    pub seed: u64,
    /// Value size.
    pub data_size: usize,
    /// The requests.
    pub workload: Workload,
    /// When to stop.
    pub stop: Stop,
    /// Requests per second per connection, if limited.
    pub rate_limit: Option<f64>,
    /// CPUs to pin threads to (round robin); empty: no pinning.
    pub cpus: Vec<usize>,
    /// How long to keep retrying connections.
    pub connect_timeout: Duration,
}

impl Config {
    /// Total connections over all threads.
    pub fn total_conns(&self) -> usize {
        self.threads * self.conns_per_thread
    }

    /// Validates `args` into a configuration.
    pub fn from_args(args: &Args) -> Result<Config, String> {
        if args.threads == 0 || args.connections == 0 || args.pipeline == 0 {
            return Err("--threads, --connections and --pipeline must be >= 1".into());
        }
        if args.key_max == 0 {
            return Err("--key-maximum must be >= 1".into());
        }
        let pattern = match args.key_pattern.as_str() {
            "sequential" => Pattern::Sequential,
            "uniform" => Pattern::Uniform,
            "zipf" => {
                if !(args.zipf_exponent > 0.0 && args.zipf_exponent.is_finite()) {
                    return Err("--zipf-exponent must be > 0".into());
                }
                Pattern::Zipf(args.zipf_exponent)
            }
            other => return Err(format!("unknown key pattern '{other}'")),
        };
        let data = make_data(args.data_size, args.seed);
        let workload = match &args.command {
            Some(text) => Workload::Command(Template::new(text, &data)?),
            None => {
                let (set, get) = parse_ratio(&args.ratio)?;
                Workload::Ratio {
                    set,
                    get,
                    set_t: Template::new("SET __key__ __data__", &data)?,
                    get_t: Template::new("GET __key__", &data)?,
                }
            }
        };
        let stop = match (args.requests, args.test_time) {
            (Some(n), _) => Stop::Requests(n),
            (None, Some(t)) => {
                if !(t > 0.0 && t.is_finite()) {
                    return Err("--test-time must be > 0".into());
                }
                Stop::Time(Duration::from_secs_f64(t))
            }
            (None, None) if pattern == Pattern::Sequential => Stop::Requests(args.key_max),
            (None, None) => Stop::Time(Duration::from_secs(10)),
        };
        if let Some(r) = args.rate_limit {
            if !(r > 0.0 && r.is_finite()) {
                return Err("--rate-limit must be > 0".into());
            }
        }
        let cpus = match &args.cpus {
            Some(list) => parse_cpus(list)?,
            None => Vec::new(),
        };
        if !(args.connect_timeout >= 0.0 && args.connect_timeout.is_finite()) {
            return Err("--connect-timeout must be >= 0".into());
        }
        Ok(Config {
            host: args.host.clone(),
            port: args.port,
            threads: args.threads,
            conns_per_thread: args.connections,
            pipeline: args.pipeline,
            key_max: args.key_max,
            pattern,
            seed: args.seed,
            data_size: args.data_size,
            workload,
            stop,
            rate_limit: args.rate_limit,
            cpus,
            connect_timeout: Duration::from_secs_f64(args.connect_timeout),
        })
    }
}

/// Parses `SET:GET`, e.g. `1:10`.
pub fn parse_ratio(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("bad --ratio '{s}' (want SET:GET, e.g. 1:0, 0:1, 1:10)");
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let set: u32 = a.trim().parse().map_err(|_| bad())?;
    let get: u32 = b.trim().parse().map_err(|_| bad())?;
    if set == 0 && get == 0 {
        return Err(bad());
    }
    Ok((set, get))
}

/// Parses a CPU list: `1`, `0,1`, `0-3,6`.
pub fn parse_cpus(s: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("bad --cpus '{s}' (want e.g. 1 or 0,2-3)");
    let mut cpus = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.trim().parse().map_err(|_| bad())?;
                let b: usize = b.trim().parse().map_err(|_| bad())?;
                if a > b {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    if cpus.is_empty() {
        return Err(bad());
    }
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(args: &[&str]) -> Result<Config, String> {
        let mut v = vec!["skerry-bench"];
        v.extend_from_slice(args);
        Config::from_args(&Args::try_parse_from(v).map_err(|e| e.to_string())?)
    }

    #[test]
    fn defaults() {
        let c = cfg(&[]).unwrap();
        assert_eq!((c.host.as_str(), c.port), ("127.0.0.1", 6379));
        assert_eq!((c.threads, c.conns_per_thread, c.pipeline), (1, 50, 1));
        assert_eq!(c.pattern, Pattern::Uniform);
        assert_eq!(c.stop, Stop::Time(Duration::from_secs(10)));
        assert_eq!(c.data_size, 1024);
        assert!(matches!(
            c.workload,
            Workload::Ratio {
                set: 1,
                get: 10,
                ..
            }
        ));
        // A sequential run without a stop condition is one pass over the keys.
        let c = cfg(&["--key-pattern", "sequential", "-n", "777"]).unwrap();
        assert_eq!(c.stop, Stop::Requests(777));
    }

    #[test]
    fn options() {
        let c = cfg(&[
            "-t",
            "2",
            "-c",
            "64",
            "-P",
            "16",
            "--key-pattern",
            "zipf",
            "--zipf-exponent",
            "1.1",
            "--ratio",
            "0:1",
            "--test-time",
            "2.5",
            "--cpus",
            "1",
            "--rate-limit",
            "100",
        ])
        .unwrap();
        assert_eq!(c.total_conns(), 128);
        assert_eq!(c.pattern, Pattern::Zipf(1.1));
        assert_eq!(c.stop, Stop::Time(Duration::from_millis(2500)));
        assert_eq!(c.cpus, vec![1]);
        assert!(matches!(c.workload, Workload::Ratio { set: 0, get: 1, .. }));
        let c = cfg(&["--command", "HSET __key__ f __data__", "--requests", "5"]).unwrap();
        assert!(matches!(c.workload, Workload::Command(_)));
        assert_eq!(c.stop, Stop::Requests(5));
    }

    #[test]
    fn rejects_bad_values() {
        assert!(cfg(&["--ratio", "0:0"]).is_err());
        assert!(cfg(&["--ratio", "1-1"]).is_err());
        assert!(cfg(&["-c", "0"]).is_err());
        assert!(cfg(&["--key-pattern", "random"]).is_err());
        assert!(cfg(&["--test-time", "1", "--requests", "1"]).is_err());
        assert!(cfg(&["--ratio", "1:1", "--command", "GET __key__"]).is_err());
        assert!(cfg(&["--key-pattern", "zipf", "--zipf-exponent", "0"]).is_err());
        assert!(cfg(&["--cpus", "3-1"]).is_err());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpus("1").unwrap(), vec![1]);
        assert_eq!(parse_cpus("0,2-4").unwrap(), vec![0, 2, 3, 4]);
        assert!(parse_cpus("x").is_err());
        assert!(parse_cpus("").is_err());
    }
}
