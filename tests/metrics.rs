//! The Prometheus endpoint (`--metrics-port`) and the storage observability figures: the
//! real server is scraped over plain TCP, the text format is parsed strictly, and the
//! figures must move as the commands sent say they should.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{free_port, Server};

// ---------------------------------------------------------------------------------------
// HTTP

/// An HTTP answer: status code, headers (lower-case names), body.
struct Answer {
    status: u16,
    headers: HashMap<String, String>,
    body: String,
}

/// Sends `request` as is and reads the whole answer (the server closes after one).
fn http_raw(port: u16, request: &[u8]) -> std::io::Result<Vec<u8>> {
    // The listener starts next to the Redis port: give it a moment after a (re)start.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut s = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            Err(e)
                if e.kind() == std::io::ErrorKind::ConnectionRefused
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => return Err(e),
        }
    };
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.set_write_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(request)?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    Ok(out)
}

fn parse_answer(raw: &[u8]) -> Answer {
    parse_answer_to(raw, false)
}

/// Parses an answer; `to_head`: the answer to a HEAD request (Content-Length describes the
/// body a GET would get; there is none).
fn parse_answer_to(raw: &[u8], to_head: bool) -> Answer {
    let text = String::from_utf8(raw.to_vec()).expect("answer is UTF-8");
    let (head, body) = text.split_once("\r\n\r\n").expect("answer has a head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let mut parts = status_line.splitn(3, ' ');
    assert_eq!(
        parts.next(),
        Some("HTTP/1.1"),
        "status line {status_line:?}"
    );
    let status: u16 = parts.next().unwrap().parse().unwrap();
    let mut headers = HashMap::new();
    for l in lines {
        let (k, v) = l.split_once(':').expect("header line");
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    let len: usize = headers
        .get("content-length")
        .expect("Content-Length")
        .parse()
        .unwrap();
    if to_head {
        assert!(body.is_empty(), "a body after HEAD");
        assert!(len > 0);
    } else {
        assert_eq!(len, body.len(), "Content-Length");
    }
    Answer {
        status,
        headers,
        body: body.to_string(),
    }
}

fn get(port: u16, path: &str) -> Answer {
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: test\r\n\r\n");
    parse_answer(&http_raw(port, req.as_bytes()).expect("HTTP request"))
}

/// Scrapes `/metrics` and parses it strictly.
fn scrape(port: u16) -> Metrics {
    let a = get(port, "/metrics");
    assert_eq!(a.status, 200, "body: {}", a.body);
    assert_eq!(
        a.headers.get("content-type").map(String::as_str),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    parse_metrics(&a.body).unwrap_or_else(|e| panic!("bad exposition: {e}\n{}", a.body))
}

// ---------------------------------------------------------------------------------------
// A strict parser of the text exposition format 0.0.4

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

type Labels = BTreeMap<String, String>;

#[derive(Debug)]
struct Family {
    kind: Kind,
    /// (sample name, labels, value) in file order.
    samples: Vec<(String, Labels, f64)>,
}

#[derive(Debug, Default)]
struct Metrics {
    families: BTreeMap<String, Family>,
}

impl Metrics {
    /// The value of the sample `name` with exactly `labels`.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let want: Labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.families
            .values()
            .flat_map(|f| f.samples.iter())
            .find(|(n, l, _)| n == name && *l == want)
            .map(|s| s.2)
    }

    /// [`Metrics::value`] that must exist.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.value(name, labels)
            .unwrap_or_else(|| panic!("no sample {name} {labels:?}"))
    }

    fn kind(&self, family: &str) -> Kind {
        self.families
            .get(family)
            .unwrap_or_else(|| panic!("no family {family}"))
            .kind
    }
}

fn is_metric_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_' || ch == ':')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => s.parse::<f64>().map_err(|_| format!("bad value {s:?}")),
    }
}

/// Parses `{a="x",b="y"}` at the start of `s`; returns the labels and the rest.
fn parse_labels(s: &str) -> Result<(Labels, &str), String> {
    let mut labels = Labels::new();
    let Some(mut rest) = s.strip_prefix('{') else {
        return Ok((labels, s));
    };
    loop {
        if let Some(r) = rest.strip_prefix('}') {
            return Ok((labels, r));
        }
        let eq = rest.find('=').ok_or("label without '='")?;
        let name = &rest[..eq];
        if !is_label_name(name) {
            return Err(format!("bad label name {name:?}"));
        }
        rest = rest[eq + 1..]
            .strip_prefix('"')
            .ok_or("label value not quoted")?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err("unterminated label value".into()),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => return Err(format!("bad escape {other:?}")),
                },
                Some((_, c)) => value.push(c),
            }
        };
        if labels.insert(name.to_string(), value).is_some() {
            return Err(format!("label {name} given twice"));
        }
        rest = &rest[end + 1..];
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
        } else if !rest.starts_with('}') {
            return Err("labels not separated by ','".into());
        }
    }
}

/// The family a sample name belongs to, given the family kinds declared so far.
fn family_of<'a>(name: &'a str, families: &BTreeMap<String, Family>) -> Option<&'a str> {
    if let Some(f) = families.get(name) {
        if f.kind != Kind::Histogram {
            return Some(name);
        }
    }
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix) {
            if families
                .get(base)
                .is_some_and(|f| f.kind == Kind::Histogram)
            {
                return Some(base);
            }
        }
    }
    None
}

fn parse_metrics(text: &str) -> Result<Metrics, String> {
    let mut m = Metrics::default();
    let mut helped: HashSet<String> = HashSet::new();
    let mut closed: HashSet<String> = HashSet::new();
    let mut current: Option<String> = None;
    let mut seen: HashSet<(String, Labels)> = HashSet::new();
    if !text.ends_with('\n') {
        return Err("the last line does not end with a line feed".into());
    }
    for (no, line) in text.lines().enumerate() {
        let no = no + 1;
        let err = |e: String| format!("line {no}: {e}: {line:?}");
        if line.is_empty() {
            return Err(err("empty line".into()));
        }
        // A new family (TYPE or HELP) or a sample of another family ends the current one.
        let mut switch_to = |name: &str, current: &mut Option<String>| -> Result<(), String> {
            if current.as_deref() != Some(name) {
                if closed.contains(name) {
                    return Err(format!("family {name} is not contiguous"));
                }
                if let Some(c) = current.take() {
                    closed.insert(c);
                }
                *current = Some(name.to_string());
            }
            Ok(())
        };
        if let Some(rest) = line.strip_prefix("# ") {
            let (word, rest) = rest
                .split_once(' ')
                .ok_or_else(|| err("bad comment".into()))?;
            let (name, arg) = rest.split_once(' ').ok_or_else(|| err("no text".into()))?;
            if !is_metric_name(name) {
                return Err(err(format!("bad metric name {name:?}")));
            }
            switch_to(name, &mut current).map_err(err)?;
            match word {
                "HELP" => {
                    if !helped.insert(name.to_string()) {
                        return Err(err("second HELP".into()));
                    }
                    if arg.trim().is_empty() {
                        return Err(err("empty HELP".into()));
                    }
                }
                "TYPE" => {
                    let kind = match arg {
                        "counter" => Kind::Counter,
                        "gauge" => Kind::Gauge,
                        "histogram" => Kind::Histogram,
                        other => return Err(err(format!("unexpected type {other:?}"))),
                    };
                    if m.families.contains_key(name) {
                        return Err(err("second TYPE".into()));
                    }
                    if kind == Kind::Counter && !name.ends_with("_total") {
                        return Err(err("counter name does not end in _total".into()));
                    }
                    m.families.insert(
                        name.to_string(),
                        Family {
                            kind,
                            samples: Vec::new(),
                        },
                    );
                }
                _ => return Err(err("comment other than HELP or TYPE".into())),
            }
            continue;
        }
        let name_end = line
            .find(['{', ' '])
            .ok_or_else(|| err("no value".into()))?;
        let name = &line[..name_end];
        if !is_metric_name(name) {
            return Err(err(format!("bad metric name {name:?}")));
        }
        let (labels, rest) = parse_labels(&line[name_end..]).map_err(err)?;
        let value = rest
            .strip_prefix(' ')
            .ok_or_else(|| err("no space before the value".into()))?;
        if value.contains(' ') {
            return Err(err("timestamps are not expected".into()));
        }
        let value = parse_value(value).map_err(err)?;
        let family = family_of(name, &m.families)
            .ok_or_else(|| err(format!("sample {name} of no declared family")))?
            .to_string();
        switch_to(&family, &mut current).map_err(err)?;
        if !seen.insert((name.to_string(), labels.clone())) {
            return Err(err("duplicate sample".into()));
        }
        let f = m.families.get_mut(&family).unwrap();
        if f.kind == Kind::Histogram && name.ends_with("_bucket") != labels.contains_key("le") {
            return Err(err(
                "le label on a non-bucket sample or bucket without le".into()
            ));
        }
        if f.kind == Kind::Counter && value < 0.0 {
            return Err(err("negative counter".into()));
        }
        f.samples.push((name.to_string(), labels, value));
    }
    // Every family has a HELP, and every histogram's buckets are ascending, cumulative and
    // end in +Inf equal to _count, with a _sum.
    for (name, f) in &m.families {
        if !helped.contains(name) {
            return Err(format!("family {name} has no HELP"));
        }
        if f.kind != Kind::Histogram {
            continue;
        }
        let mut series: BTreeMap<Labels, Vec<(f64, f64)>> = BTreeMap::new();
        for (n, l, v) in &f.samples {
            if n.ends_with("_bucket") {
                let mut key = l.clone();
                let le = parse_value(&key.remove("le").unwrap())?;
                series.entry(key).or_default().push((le, *v));
            }
        }
        for (labels, buckets) in series {
            for w in buckets.windows(2) {
                if w[1].0 <= w[0].0 {
                    return Err(format!("{name} {labels:?}: le not ascending"));
                }
                if w[1].1 < w[0].1 {
                    return Err(format!("{name} {labels:?}: bucket counts not cumulative"));
                }
            }
            let last = buckets.last().unwrap();
            if last.0 != f64::INFINITY {
                return Err(format!("{name} {labels:?}: last bucket is not +Inf"));
            }
            let find = |suffix: &str| {
                f.samples
                    .iter()
                    .find(|(n, l, _)| n == &format!("{name}{suffix}") && *l == labels)
                    .map(|s| s.2)
            };
            let count = find("_count").ok_or(format!("{name} {labels:?}: no _count"))?;
            find("_sum").ok_or(format!("{name} {labels:?}: no _sum"))?;
            if count != last.1 {
                return Err(format!(
                    "{name} {labels:?}: +Inf {} != _count {count}",
                    last.1
                ));
            }
        }
    }
    Ok(m)
}

#[test]
fn the_parser_rejects_what_it_should() {
    let ok = "# HELP a_total x\n# TYPE a_total counter\na_total{cmd=\"g\\\"et\"} 1\n";
    let m = parse_metrics(ok).unwrap();
    assert_eq!(m.get("a_total", &[("cmd", "g\"et")]), 1.0);
    for bad in [
        // no TYPE
        "# HELP a x\na 1\n",
        // counter without _total
        "# HELP a x\n# TYPE a counter\na 1\n",
        // unquoted label
        "# HELP a x\n# TYPE a gauge\na{b=c} 1\n",
        // not contiguous
        "# HELP a x\n# TYPE a gauge\n# HELP b x\n# TYPE b gauge\nb 1\na 1\n",
        // buckets not cumulative
        "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        // +Inf != _count
        "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 2\n",
        // duplicate sample
        "# HELP a x\n# TYPE a gauge\na 1\na 2\n",
        // no final line feed
        "# HELP a x\n# TYPE a gauge\na 1",
    ] {
        assert!(parse_metrics(bad).is_err(), "accepted {bad:?}");
    }
}

// ---------------------------------------------------------------------------------------
// The server

fn start(extra: &[&str]) -> (Server, u16) {
    let mport = free_port();
    let mp = mport.to_string();
    let mut args = vec![
        "--metrics-port",
        mp.as_str(),
        "--data-size",
        "64mb",
        "--threads",
        "2",
    ];
    args.extend_from_slice(extra);
    let s = Server::start(&args);
    assert!(
        s.wait_for_log("Serving Prometheus metrics", Duration::from_secs(5)),
        "no metrics listener"
    );
    (s, mport)
}

fn set_n(con: &mut redis::Connection, prefix: &str, n: usize) {
    for i in 0..n {
        let _: () = redis::cmd("SET")
            .arg(format!("{prefix}:{i}"))
            .arg(format!("value-{i}-{}", "x".repeat(100)))
            .query(con)
            .unwrap();
    }
}

fn info_field(con: &mut redis::Connection, section: &str, field: &str) -> Option<String> {
    let info: String = redis::cmd("INFO").arg(section).query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .map(|v| v.trim().to_string())
}

/// Waits until the unlabelled gauge `name` reads `want`.
fn wait_gauge(mport: u16, name: &str, want: f64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let got = scrape(mport).get(name, &[]);
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "{name} is {got}, not {want}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn commands_keys_and_clients_are_counted() {
    skip_if_redis!();
    let (s, mport) = start(&[]);
    let mut con = s.client();
    let before = scrape(mport);
    assert_eq!(before.kind("skerry_commands_total"), Kind::Counter);
    assert_eq!(
        before.kind("skerry_command_duration_seconds"),
        Kind::Histogram
    );
    assert_eq!(before.kind("skerry_keys"), Kind::Gauge);
    let sets_before = before
        .value("skerry_commands_total", &[("cmd", "set")])
        .unwrap_or(0.0);
    assert_eq!(sets_before, 0.0);
    let conns_before = before.get("skerry_connections_received_total", &[]);

    set_n(&mut con, "k", 37);
    for i in 0..5 {
        let _: Option<String> = redis::cmd("GET")
            .arg(format!("k:{i}"))
            .query(&mut con)
            .unwrap();
    }
    let _: Option<String> = redis::cmd("GET").arg("missing").query(&mut con).unwrap();
    // One failing call: INCR on a non-number.
    assert!(redis::cmd("INCR")
        .arg("k:0")
        .query::<i64>(&mut con)
        .is_err());
    let mut con2 = s.client();
    let dbsize: u64 = redis::cmd("DBSIZE").query(&mut con2).unwrap();
    assert_eq!(dbsize, 37);

    let after = scrape(mport);
    // Exactly the calls sent (the scrapes themselves are not commands).
    assert_eq!(after.get("skerry_commands_total", &[("cmd", "set")]), 37.0);
    assert_eq!(after.get("skerry_commands_total", &[("cmd", "get")]), 6.0);
    assert_eq!(after.get("skerry_commands_total", &[("cmd", "incr")]), 1.0);
    assert_eq!(
        after.get("skerry_commands_failed_total", &[("cmd", "incr")]),
        1.0
    );
    assert_eq!(
        after.get("skerry_commands_failed_total", &[("cmd", "set")]),
        0.0
    );
    assert!(after.get("skerry_errors_total", &[("error", "ERR")]) >= 1.0);
    // The histogram counts every call, and its sum is positive and plausible (< 10 s total).
    assert_eq!(
        after.get("skerry_command_duration_seconds_count", &[("cmd", "set")]),
        37.0
    );
    let sum = after.get("skerry_command_duration_seconds_sum", &[("cmd", "set")]);
    assert!(sum > 0.0 && sum < 10.0, "sum {sum}");
    // Keys equal DBSIZE; other databases are empty.
    assert_eq!(after.get("skerry_keys", &[("db", "0")]), dbsize as f64);
    assert_eq!(after.get("skerry_keys", &[("db", "1")]), 0.0);
    assert!(after.get("skerry_keyspace_hits_total", &[]) >= 5.0);
    assert!(after.get("skerry_keyspace_misses_total", &[]) >= 1.0);
    // Two clients connected (the harness's start-up PING may still be closing), both
    // counted as received.
    wait_gauge(mport, "skerry_connected_clients", 2.0);
    assert!(after.get("skerry_connections_received_total", &[]) >= conns_before + 1.0);
    assert!(after.get("skerry_memory_rss_bytes", &[]) > 1e6);
    assert!(after.get("skerry_memory_index_bytes", &[]) > 0.0);
    assert_eq!(after.get("skerry_workers", &[]), 2.0);

    // Another batch moves the counters by exactly that much.
    set_n(&mut con, "more", 11);
    let third = scrape(mport);
    assert_eq!(third.get("skerry_commands_total", &[("cmd", "set")]), 48.0);
    assert_eq!(third.get("skerry_keys", &[("db", "0")]), 48.0);

    // Dropping a client lowers the gauge.
    drop(con2);
    wait_gauge(mport, "skerry_connected_clients", 1.0);
    // The setting is visible.
    let got: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("metrics-port")
        .query(&mut con)
        .unwrap();
    assert_eq!(got, vec!["metrics-port".to_string(), mport.to_string()]);
}

#[test]
fn storage_figures_move_with_writes_syncs_and_reads() {
    skip_if_redis!();
    let (mut s, mport) = start(&["--appendfsync", "always"]);
    let mut con = s.client();
    let before = scrape(mport);
    for f in [
        "skerry_storage_capacity_bytes",
        "skerry_storage_used_blocks",
        "skerry_storage_free_blocks",
        "skerry_storage_live_bytes",
    ] {
        assert_eq!(before.kind(f), Kind::Gauge, "{f}");
    }
    assert_eq!(
        before.get("skerry_storage_capacity_bytes", &[]),
        before.get("skerry_storage_total_blocks", &[])
            * before.get("skerry_storage_block_size_bytes", &[])
    );
    assert!(before.get("skerry_storage_total_blocks", &[]) >= 2.0);
    assert_eq!(before.get("skerry_storage_live_bytes", &[]), 0.0);
    let syncs0 = before.get("skerry_storage_fdatasyncs_total", &[]);

    set_n(&mut con, "s", 20);
    let after = scrape(mport);
    let writes = after.get("skerry_storage_device_writes_total", &[]);
    assert!(writes > before.get("skerry_storage_device_writes_total", &[]));
    assert!(after.get("skerry_storage_device_written_bytes_total", &[]) >= 20.0 * 100.0);
    // appendfsync always, one client: every SET waited for its own flush + fdatasync.
    let syncs = after.get("skerry_storage_fdatasyncs_total", &[]);
    assert!(syncs - syncs0 >= 20.0, "fdatasyncs {syncs0} -> {syncs}");
    let fsync_count = after.get("skerry_storage_fdatasync_latency_seconds_count", &[]);
    assert!(
        fsync_count >= 20.0,
        "fdatasync histogram count {fsync_count}"
    );
    assert_eq!(
        fsync_count,
        after.get("skerry_storage_fdatasync_calls_total", &[])
    );
    assert!(after.get("skerry_storage_fdatasync_latency_seconds_sum", &[]) > 0.0);
    // The write histogram counts every device write.
    assert_eq!(
        after.get("skerry_storage_write_latency_seconds_count", &[]),
        writes
    );
    assert!(after.get("skerry_storage_live_bytes", &[]) >= 20.0 * 100.0);
    assert!(after.get("skerry_storage_used_blocks", &[]) >= 1.0);
    assert_eq!(
        after.get("skerry_storage_records_appended_total", &[]),
        20.0
    );
    assert_eq!(after.get("skerry_storage_records_durable_total", &[]), 20.0);
    assert_eq!(after.get("skerry_storage_device_reads_total", &[]), 0.0);

    // After a restart the values are on the device only: GETs read it.
    s.restart();
    let mut con = s.client();
    assert!(s.wait_for_log("Serving Prometheus metrics", Duration::from_secs(5)));
    for i in 0..20 {
        let v: String = redis::cmd("GET")
            .arg(format!("s:{i}"))
            .query(&mut con)
            .unwrap();
        assert!(v.starts_with(&format!("value-{i}-")));
    }
    let read = scrape(mport);
    let reads = read.get("skerry_storage_device_reads_total", &[]);
    assert!(reads >= 1.0, "device reads {reads}");
    assert_eq!(
        read.get("skerry_storage_read_latency_seconds_count", &[]),
        reads
    );
    assert!(read.get("skerry_storage_read_latency_seconds_sum", &[]) > 0.0);
    assert!(read.get("skerry_storage_device_read_bytes_total", &[]) >= reads * 512.0);
    assert!(read.get("skerry_storage_value_reads_total", &[]) >= 1.0);
    assert_eq!(read.get("skerry_keys", &[("db", "0")]), 20.0);
}

#[test]
fn info_shows_latency_percentiles() {
    skip_if_redis!();
    let (s, _mport) = start(&["--appendfsync", "always"]);
    let mut con = s.client();
    set_n(&mut con, "p", 30);
    let f = |con: &mut redis::Connection, name: &str| -> f64 {
        info_field(con, "storage", name)
            .unwrap_or_else(|| panic!("INFO storage has no {name}"))
            .parse()
            .unwrap()
    };
    for io in ["write", "fdatasync"] {
        let p50 = f(&mut con, &format!("storage_{io}_latency_p50_us"));
        let p99 = f(&mut con, &format!("storage_{io}_latency_p99_us"));
        let p999 = f(&mut con, &format!("storage_{io}_latency_p999_us"));
        let max = f(&mut con, &format!("storage_{io}_latency_max_us"));
        assert!(p50 > 0.0, "{io} p50 {p50}");
        assert!(
            p50 <= p99 && p99 <= p999 && p999 <= max,
            "{io}: {p50} {p99} {p999} {max}"
        );
        // Plausible for a device: under 10 s.
        assert!(max < 10_000_000.0, "{io} max {max}");
    }
    // No device read yet: the read percentiles are 0.
    assert_eq!(f(&mut con, "storage_read_latency_p50_us"), 0.0);
    assert!(f(&mut con, "storage_fdatasyncs") >= 30.0);
    // Redis's latencystats format, per command.
    let line = info_field(&mut con, "latencystats", "latency_percentiles_usec_set")
        .expect("latencystats for set");
    let parts: Vec<(&str, f64)> = line
        .split(',')
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap();
            (k, v.parse::<f64>().unwrap())
        })
        .collect();
    assert_eq!(
        parts.iter().map(|p| p.0).collect::<Vec<_>>(),
        ["p50", "p99", "p99.9"]
    );
    assert!(parts[0].1 > 0.0 && parts[0].1 <= parts[1].1 && parts[1].1 <= parts[2].1);
    // CONFIG RESETSTAT clears the command histograms, as in Redis.
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut con)
        .unwrap();
    assert_eq!(
        info_field(&mut con, "latencystats", "latency_percentiles_usec_set"),
        None
    );
}

#[test]
fn bad_http_input_does_not_kill_the_server() {
    skip_if_redis!();
    let (s, mport) = start(&[]);
    let mut con = s.client();

    assert_eq!(get(mport, "/").status, 404);
    assert_eq!(get(mport, "/metricsx").status, 404);
    assert_eq!(get(mport, "/metrics?name[]=x").status, 200);
    let post = parse_answer(&http_raw(mport, b"POST /metrics HTTP/1.1\r\n\r\n").unwrap());
    assert_eq!(post.status, 405);
    let head = parse_answer_to(
        &http_raw(mport, b"HEAD /metrics HTTP/1.1\r\n\r\n").unwrap(),
        true,
    );
    assert_eq!(head.status, 200);

    // Garbage: a 400 answer, or just a close; never a crash.
    for junk in [
        &b"\x00\x01\x02\xff\xfe garbage\r\n\r\n"[..],
        b"GET\r\n\r\n",
        b"GET /metrics HTTP/9.9\r\n\r\n",
        b"*1\r\n$4\r\nPING\r\n\r\n",
    ] {
        let raw = http_raw(mport, junk).unwrap();
        assert_eq!(parse_answer(&raw).status, 400, "for {junk:?}");
    }
    // A header over the limit: refused with 431.
    let mut big = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 16 * 1024));
    big.extend_from_slice(b"\r\n\r\n");
    assert_eq!(parse_answer(&http_raw(mport, &big).unwrap()).status, 431);
    // A huge one (1 MiB): 431, or the connection is closed while we still write.
    let mut huge = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 1 << 20));
    huge.extend_from_slice(b"\r\n\r\n");
    if let Ok(raw) = http_raw(mport, &huge) {
        if !raw.is_empty() {
            assert_eq!(parse_answer(&raw).status, 431);
        }
    }
    // A client that connects and goes away, and a burst of idle connections.
    drop(TcpStream::connect(("127.0.0.1", mport)).unwrap());
    let idle: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(("127.0.0.1", mport)).unwrap())
        .collect();
    drop(idle);

    // The endpoint and the server still work.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = http_raw(mport, b"GET /metrics HTTP/1.1\r\n\r\n");
        if let Ok(raw) = r {
            if !raw.is_empty() && parse_answer(&raw).status == 200 {
                break;
            }
        }
        assert!(Instant::now() < deadline, "/metrics did not come back");
        std::thread::sleep(Duration::from_millis(50));
    }
    let m = scrape(mport);
    assert!(m.get("skerry_uptime_seconds", &[]) >= 0.0);
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}

#[test]
fn a_metrics_port_in_use_stops_startup() {
    skip_if_redis!();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let (status, log) = Server::run_expect_exit(
        common::Opts {
            args: ["--metrics-port", &port, "--data-size", "64mb"]
                .map(String::from)
                .to_vec(),
            ..Default::default()
        },
        Duration::from_secs(10),
    );
    assert!(!status.success());
    assert!(log.contains("metrics listening socket"), "log: {log}");
}

#[test]
fn the_config_file_sets_the_metrics_port() {
    skip_if_redis!();
    let mport = free_port();
    let s = Server::start_with_config(
        &format!("metrics-port {mport}\ndata-size 64mb\n"),
        false,
        &[],
    );
    let mut con = s.client();
    let _: () = redis::cmd("SET").arg("a").arg("b").query(&mut con).unwrap();
    let m = scrape(mport);
    assert_eq!(m.get("skerry_commands_total", &[("cmd", "set")]), 1.0);
    assert_eq!(m.get("skerry_keys", &[("db", "0")]), 1.0);
}
