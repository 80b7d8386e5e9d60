//! End-to-end tests of skerry-bench against a real `redis-server` (Debian's, started by each
//! test on a free port): exact request counts, fill completeness, misses and errors.
//!
//! Skipped, with a message, when `redis-server` is not installed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use skerry_bench::{run, Args, Config, Report};

/// A `redis-server` child process, killed when dropped.
struct Redis {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn redis_bin() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("REDIS_SERVER").map(PathBuf::from),
        Some(PathBuf::from("/usr/bin/redis-server")),
    ];
    candidates.into_iter().flatten().find(|p| p.exists())
}

/// Starts redis-server, or returns None (and says so) if it is not installed.
fn start_redis(test: &str) -> Option<Redis> {
    let Some(bin) = redis_bin() else {
        eprintln!("SKIPPED {test}: redis-server not found at /usr/bin/redis-server (apt-get install redis-server)");
        return None;
    };
    for _ in 0..20 {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir =
            std::env::temp_dir().join(format!("skerry-bench-test-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new(&bin)
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--daemonize", "no", "--dir"])
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        let mut redis = Redis { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = redis.child.try_wait() {
                break; // exited: the port was taken after all; try another
            }
            // Fallible: until it listens, the port may belong to another process, or the
            // server may still be starting and reset the connection.
            if let Ok(mut c) = TcpStream::connect(("127.0.0.1", port)) {
                let pong = try_cmd(&mut c, &["PING"]).is_ok_and(|r| r == "PONG");
                if pong && matches!(redis.child.try_wait(), Ok(None)) {
                    return Some(redis);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!("could not start redis-server");
}

/// Sends one command and returns its reply: the line after the type byte, or the payload
/// of a bulk string ("(nil)" for a nil).
fn cmd(c: &mut TcpStream, args: &[&str]) -> String {
    try_cmd(c, args).unwrap()
}

/// [`cmd`], with I/O errors returned.
fn try_cmd(c: &mut TcpStream, args: &[&str]) -> std::io::Result<String> {
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    c.write_all(req.as_bytes())?;
    let mut r = BufReader::new(c.try_clone()?);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let line = line.trim_end().to_string();
    if line.is_empty() {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    if let Some(n) = line.strip_prefix('$') {
        let n: i64 = n.parse().unwrap();
        if n < 0 {
            return Ok("(nil)".into());
        }
        let mut buf = vec![0u8; n as usize + 2];
        r.read_exact(&mut buf)?;
        buf.truncate(n as usize);
        return Ok(String::from_utf8_lossy(&buf).into_owned());
    }
    Ok(line[1..].to_string())
}

impl Redis {
    fn conn(&self) -> TcpStream {
        TcpStream::connect(("127.0.0.1", self.port)).unwrap()
    }

    fn query(&self, args: &[&str]) -> String {
        cmd(&mut self.conn(), args)
    }

    fn dbsize(&self) -> u64 {
        self.query(&["DBSIZE"]).parse().unwrap()
    }

    /// `calls` of a command in INFO commandstats.
    fn calls(&self, command: &str) -> u64 {
        let info = self.query(&["INFO", "commandstats"]);
        let key = format!("cmdstat_{command}:calls=");
        info.lines()
            .find_map(|l| l.strip_prefix(&key))
            .map(|rest| rest.split(',').next().unwrap().parse().unwrap())
            .unwrap_or(0)
    }

    /// Runs skerry-bench (in-process) with these arguments against this server.
    fn bench(&self, args: &[&str]) -> Report {
        let port = self.port.to_string();
        let mut v = vec!["skerry-bench", "-p", &port];
        v.extend_from_slice(args);
        let cfg = Config::from_args(&Args::try_parse_from(v).unwrap()).unwrap();
        run(&cfg, None).unwrap()
    }
}

fn bench_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_skerry-bench"))
}

#[test]
fn sequential_fill_writes_every_key_exactly_once() {
    let Some(redis) = start_redis("sequential_fill_writes_every_key_exactly_once") else {
        return;
    };
    // 2 threads x 7 connections, pipeline 3: 10000 is not a multiple of 14.
    let r = redis.bench(&[
        "-n",
        "10000",
        "--key-pattern",
        "sequential",
        "--ratio",
        "1:0",
        "--requests",
        "10000",
        "-t",
        "2",
        "-c",
        "7",
        "-P",
        "3",
        "-d",
        "100",
    ]);
    assert_eq!(
        (r.ops, r.sets, r.gets, r.misses, r.errors),
        (10_000, 10_000, 0, 0, 0)
    );
    assert_eq!(r.latency.count, 10_000);
    assert_eq!(redis.dbsize(), 10_000);
    assert_eq!(
        redis.calls("set"),
        10_000,
        "every key written once: no more SETs than keys"
    );
    for k in ["1", "2", "5000", "9999", "10000"] {
        assert_eq!(redis.query(&["STRLEN", k]), "100", "key {k}");
    }
    assert_eq!(redis.query(&["EXISTS", "0"]), "0");
    assert_eq!(redis.query(&["EXISTS", "10001"]), "0");

    // GETs after the fill all hit.
    let r = redis.bench(&[
        "-n",
        "10000",
        "--ratio",
        "0:1",
        "--requests",
        "20000",
        "-c",
        "16",
    ]);
    assert_eq!((r.ops, r.gets, r.misses, r.errors), (20_000, 20_000, 0, 0));
    assert_eq!(redis.calls("get"), 20_000);
    // And a zipf mix too.
    let r = redis.bench(&[
        "-n",
        "10000",
        "--key-pattern",
        "zipf",
        "--ratio",
        "1:10",
        "--requests",
        "1100",
        "-c",
        "4",
    ]);
    assert_eq!((r.ops, r.sets, r.gets, r.misses), (1100, 100, 1000, 0));
    assert_eq!(redis.dbsize(), 10_000);
}

#[test]
fn default_sequential_run_is_one_pass_over_the_keys() {
    let Some(redis) = start_redis("default_sequential_run_is_one_pass_over_the_keys") else {
        return;
    };
    // No --requests: a sequential run makes exactly key_max requests, even with more
    // connections than a round number.
    let r = redis.bench(&[
        "-n",
        "4321",
        "--key-pattern",
        "sequential",
        "--ratio",
        "1:0",
        "-c",
        "50",
        "-P",
        "4",
    ]);
    assert_eq!((r.ops, r.sets), (4321, 4321));
    assert_eq!(redis.dbsize(), 4321);
    assert_eq!(redis.calls("set"), 4321);
}

#[test]
fn exact_request_counts() {
    let Some(redis) = start_redis("exact_request_counts") else {
        return;
    };
    let mut total = 0;
    for (threads, conns, pipeline, requests) in [
        ("1", "1", "1", 1u64),
        ("1", "3", "1", 2),
        ("2", "5", "16", 12_345),
        ("1", "50", "1", 777),
    ] {
        let n = requests.to_string();
        let r = redis.bench(&[
            "-n",
            "1000",
            "--ratio",
            "1:1",
            "--requests",
            &n,
            "-t",
            threads,
            "-c",
            conns,
            "-P",
            pipeline,
            "-d",
            "16",
        ]);
        assert_eq!(r.ops, requests);
        assert_eq!(r.sets + r.gets, requests);
        assert_eq!(r.latency.count, requests);
        total += requests;
        assert_eq!(redis.calls("set") + redis.calls("get"), total);
    }
}

#[test]
fn misses_and_errors_are_counted() {
    let Some(redis) = start_redis("misses_and_errors_are_counted") else {
        return;
    };
    let r = redis.bench(&["--ratio", "0:1", "--requests", "500", "-c", "5"]);
    assert_eq!((r.ops, r.misses, r.errors), (500, 500, 0));
    let r = redis.bench(&["--command", "LPUSH", "--requests", "30", "-c", "3"]);
    assert_eq!((r.ops, r.misses, r.errors), (30, 0, 30));
    assert!(r.first_error.unwrap().contains("wrong number of arguments"));
    // A command template with placeholders.
    let r = redis.bench(&[
        "--command",
        "HSET h:__key__ f __data__",
        "-n",
        "300",
        "--key-pattern",
        "sequential",
        "-d",
        "10",
    ]);
    assert_eq!((r.ops, r.errors), (300, 0));
    assert_eq!(redis.dbsize(), 300);
    assert_eq!(redis.query(&["HSTRLEN", "h:300", "f"]), "10");
}

#[test]
fn timed_run_and_binary_exit_codes() {
    let Some(redis) = start_redis("timed_run_and_binary_exit_codes") else {
        return;
    };
    let port = redis.port.to_string();
    let dir = redis.dir.clone();
    let json = dir.join("out.json");
    let csv = dir.join("out.csv");
    // Fill 1..=2000 and read it back for a short timed run: exit 0, files written.
    let st = Command::new(bench_bin())
        .args([
            "-p",
            &port,
            "-n",
            "2000",
            "--key-pattern",
            "sequential",
            "--ratio",
            "1:0",
            "-q",
        ])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let started = Instant::now();
    let st = Command::new(bench_bin())
        .args([
            "-p",
            &port,
            "-n",
            "2000",
            "--ratio",
            "0:1",
            "--test-time",
            "0.5",
            "-c",
            "4",
        ])
        .args(["--require-no-misses", "--require-no-errors", "--json"])
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    assert!(started.elapsed() >= Duration::from_millis(500));
    let j = std::fs::read_to_string(&json).unwrap();
    assert!(j.contains("\"misses\":0,"), "{j}");
    assert!(j.contains("\"test_time_s\":0.5"), "{j}");
    let c = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(c.lines().count(), 2);
    // GETs of keys that do not exist: exit status 3 with --require-no-misses.
    let st = Command::new(bench_bin())
        .args([
            "-p",
            &port,
            "-n",
            "4000",
            "--key-pattern",
            "sequential",
            "--ratio",
            "0:1",
            "-q",
        ])
        .args(["--require-no-misses"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(3));
    // Error replies: exit status 4 with --require-no-errors.
    let st = Command::new(bench_bin())
        .args([
            "-p",
            &port,
            "--command",
            "LPUSH",
            "--requests",
            "3",
            "-q",
            "--require-no-errors",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(4));
    // Nobody listening: exit status 2.
    drop(redis);
    let st = Command::new(bench_bin())
        .args([
            "-p",
            &port,
            "--requests",
            "1",
            "-q",
            "--connect-timeout",
            "0.1",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(2));
}
