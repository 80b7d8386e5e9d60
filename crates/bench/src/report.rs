//! The final summary: human text, JSON and CSV.

use std::fmt::Write as _;

use crate::config::{Config, Stop};
use crate::run::Report;

/// One line describing the configuration.
pub fn describe(cfg: &Config) -> String {
    let stop = match cfg.stop {
        Stop::Requests(n) => format!("{n} requests"),
        Stop::Time(d) => format!("{} s", d.as_secs_f64()),
    };
    let mut s = format!(
        "{}:{}, {} thread(s) x {} connection(s), pipeline {}, {}, keys 1..={} {}, {}-byte values, {}",
        cfg.host,
        cfg.port,
        cfg.threads,
        cfg.conns_per_thread,
        cfg.pipeline,
        cfg.workload.describe(),
        cfg.key_max,
        cfg.pattern,
        cfg.data_size,
        stop
    );
    if let Some(r) = cfg.rate_limit {
        let _ = write!(s, ", at most {r} ops/s per connection");
    }
    if !cfg.cpus.is_empty() {
        let _ = write!(s, ", CPUs {:?}", cfg.cpus);
    }
    s
}

/// The human-readable summary.
pub fn text(cfg: &Config, r: &Report) -> String {
    let l = &r.latency;
    let secs = r.duration.as_secs_f64();
    let mut s = String::new();
    let _ = writeln!(s, "skerry-bench: {}", describe(cfg));
    let _ = writeln!(
        s,
        "ops        {} in {:.3} s: {:.0} ops/s (SET {}, GET {})",
        r.ops,
        secs,
        r.ops_per_sec(),
        r.sets,
        r.gets
    );
    let _ = writeln!(s, "misses     {} (nil replies)", r.misses);
    let _ = write!(s, "errors     {}", r.errors);
    if let Some(e) = &r.first_error {
        let _ = write!(s, " (first: {e})");
    }
    s.push('\n');
    let _ = writeln!(
        s,
        "latency us p50 {:.1}  p99 {:.1}  p99.9 {:.1}  p99.99 {:.1}  max {:.1}  (mean {:.1})",
        l.p50, l.p99, l.p99_9, l.p99_99, l.max, l.mean
    );
    let util = if secs > 0.0 {
        r.client_cpu_s / secs
    } else {
        0.0
    };
    let _ = writeln!(
        s,
        "client CPU {:.2} s ({:.0}% of one core)",
        r.client_cpu_s,
        util * 100.0
    );
    s
}

/// Escapes `s` as a JSON string (with the quotes).
fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A finite number for JSON (NaN and infinities become 0).
fn num(v: f64) -> String {
    if v.is_finite() {
        let r = (v * 1000.0).round() / 1000.0;
        format!("{r}")
    } else {
        "0".into()
    }
}

/// The summary as a JSON object (one line, trailing newline).
pub fn json(cfg: &Config, r: &Report) -> String {
    let l = &r.latency;
    let (requests, test_time) = match cfg.stop {
        Stop::Requests(n) => (n.to_string(), "null".to_string()),
        Stop::Time(d) => ("null".to_string(), num(d.as_secs_f64())),
    };
    let (ratio, command) = match &cfg.workload {
        crate::config::Workload::Ratio { set, get, .. } => {
            (json_str(&format!("{set}:{get}")), "null".to_string())
        }
        crate::config::Workload::Command(t) => ("null".to_string(), json_str(t.text())),
    };
    let cpus = cfg
        .cpus
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",");
    format!(
        concat!(
            "{{\"ops\":{},\"ops_per_sec\":{},\"sets\":{},\"gets\":{},\"misses\":{},\"errors\":{},",
            "\"first_error\":{},\"duration_s\":{},\"client_cpu_s\":{},",
            "\"latency_us\":{{\"p50\":{},\"p99\":{},\"p99_9\":{},\"p99_99\":{},\"max\":{},\"mean\":{},\"min\":{},\"count\":{}}},",
            "\"config\":{{\"host\":{},\"port\":{},\"threads\":{},\"connections_per_thread\":{},\"connections\":{},",
            "\"pipeline\":{},\"key_max\":{},\"key_pattern\":{},\"seed\":{},\"data_size\":{},\"ratio\":{},\"command\":{},",
            "\"requests\":{},\"test_time_s\":{},\"rate_limit\":{},\"cpus\":[{}]}}}}\n"
        ),
        r.ops,
        num(r.ops_per_sec()),
        r.sets,
        r.gets,
        r.misses,
        r.errors,
        r.first_error.as_deref().map_or("null".to_string(), json_str),
        num(r.duration.as_secs_f64()),
        num(r.client_cpu_s),
        num(l.p50),
        num(l.p99),
        num(l.p99_9),
        num(l.p99_99),
        num(l.max),
        num(l.mean),
        num(l.min),
        l.count,
        json_str(&cfg.host),
        cfg.port,
        cfg.threads,
        cfg.conns_per_thread,
        cfg.total_conns(),
        cfg.pipeline,
        cfg.key_max,
        json_str(&cfg.pattern.to_string()),
        cfg.seed,
        cfg.data_size,
        ratio,
        command,
        requests,
        test_time,
        cfg.rate_limit.map_or("null".to_string(), num),
        cpus,
    )
}

/// The CSV header line.
pub const CSV_HEADER: &str = "ops,ops_per_sec,sets,gets,misses,errors,duration_s,client_cpu_s,p50_us,p99_us,p99_9_us,p99_99_us,max_us,mean_us,threads,connections,pipeline,key_max,key_pattern,data_size,workload";

/// The summary as CSV: [`CSV_HEADER`] and one row.
pub fn csv(cfg: &Config, r: &Report) -> String {
    let l = &r.latency;
    let workload = cfg.workload.describe().replace('"', "\"\"");
    format!(
        "{CSV_HEADER}\n{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\"\n",
        r.ops,
        num(r.ops_per_sec()),
        r.sets,
        r.gets,
        r.misses,
        r.errors,
        num(r.duration.as_secs_f64()),
        num(r.client_cpu_s),
        num(l.p50),
        num(l.p99),
        num(l.p99_9),
        num(l.p99_99),
        num(l.max),
        num(l.mean),
        cfg.threads,
        cfg.total_conns(),
        cfg.pipeline,
        cfg.key_max,
        cfg.pattern,
        cfg.data_size,
        workload
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Args;
    use crate::stats::Percentiles;
    use clap::Parser;
    use std::time::Duration;

    fn sample() -> (Config, Report) {
        let args = Args::parse_from(["skerry-bench", "--command", "SET \"a\" __data__", "-d", "4"]);
        let cfg = Config::from_args(&args).unwrap();
        let r = Report {
            ops: 1000,
            sets: 0,
            gets: 0,
            misses: 2,
            errors: 1,
            first_error: Some("ERR \"bad\"\n".into()),
            duration: Duration::from_millis(500),
            latency: Percentiles {
                count: 1000,
                mean: 10.0,
                min: 1.0,
                p50: 9.5,
                p99: 20.25,
                p99_9: 30.0,
                p99_99: 40.0,
                max: 50.0,
            },
            client_cpu_s: 0.25,
        };
        (cfg, r)
    }

    #[test]
    fn json_has_the_fields_and_escapes() {
        let (cfg, r) = sample();
        let j = json(&cfg, &r);
        for want in [
            "\"ops\":1000,",
            "\"ops_per_sec\":2000,",
            "\"misses\":2,",
            "\"errors\":1,",
            "\"first_error\":\"ERR \\\"bad\\\"\\n\"",
            "\"duration_s\":0.5,",
            "\"p99\":20.25,",
            "\"p99_9\":30,",
            "\"command\":\"SET \\\"a\\\" __data__\"",
            "\"ratio\":null",
            "\"cpus\":[]",
        ] {
            assert!(j.contains(want), "{want} not in {j}");
        }
        assert_eq!(j.matches('{').count(), j.matches('}').count());
    }

    #[test]
    fn csv_has_a_header_and_one_row() {
        let (cfg, r) = sample();
        let c = csv(&cfg, &r);
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], CSV_HEADER);
        assert!(lines[1].starts_with("1000,2000,0,0,2,1,0.5,0.25,9.5,20.25,"));
        let t = text(&cfg, &r);
        assert!(t.contains("2000 ops/s"));
        assert!(t.contains("first: ERR"));
    }
}
