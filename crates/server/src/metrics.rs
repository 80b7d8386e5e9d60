//! The Prometheus endpoint: `GET /metrics` over HTTP/1.1 on `--metrics-port` (0 = off),
//! in the text exposition format 0.0.4.
//!
//! It runs on its own small threads, never on a worker: one thread per bound address
//! accepts, and each connection gets a short-lived thread (at most [`MAX_CONNECTIONS`] at
//! a time; more are closed at once). A scrape gathers the same figures as INFO
//! ([`crate::commands::server::gather`]) by sending one job to every worker's inbox, so the
//! workers' data path only pays for copying their counters. Requests are bounded: the head
//! must arrive within [`READ_TIMEOUT`] and fit in [`MAX_HEAD_BYTES`] (else `431`); anything
//! that is not a well-formed request line answers `400` and closes.
//!
//! The metrics and their units are listed in `docs/observability.md`.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use skerry_store::LatencyHistogram;

use crate::commands::server::{
    command_latency, command_totals, gather, merged_io, storage_figures, Figure, FigureKind,
    FigureValue, WorkerInfo,
};
use crate::worker::{Envelope, Job, Shared};

/// Connections served at the same time; more are closed without an answer.
pub const MAX_CONNECTIONS: usize = 8;
/// Longest request head (request line and headers) accepted.
pub const MAX_HEAD_BYTES: usize = 8192;
/// Time a client has to send its request head (and to take the answer).
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Time a scrape waits for the workers' figures before answering `503`.
const GATHER_TIMEOUT: Duration = Duration::from_secs(5);
/// The Content-Type of the text exposition format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Histogram bucket bounds, in nanoseconds: every power of two from 256 ns to about 34 s
/// (exact bucket bounds of [`LatencyHistogram`]).
fn bucket_bounds_ns() -> impl Iterator<Item = u64> {
    (8..=35).map(|k| 1u64 << k)
}

/// Binds `port` on every address of the `bind` setting (an address with a leading `-` is
/// optional, as in Redis) and starts the accept threads. Errors: no address could be bound.
pub fn start(shared: &Arc<Shared>, port: u16) -> Result<(), String> {
    let mut listeners = Vec::new();
    for spec in shared.config.get("bind").split_whitespace() {
        let (optional, host) = match spec.strip_prefix('-') {
            Some(h) => (true, h),
            None => (false, spec),
        };
        let ip: IpAddr = match host {
            "*" => IpAddr::from([0, 0, 0, 0]),
            _ => host
                .parse()
                .map_err(|_| format!("Invalid bind address '{host}'"))?,
        };
        let addr = SocketAddr::new(ip, port);
        match TcpListener::bind(addr) {
            Ok(l) => listeners.push(l),
            Err(_) if optional => {}
            Err(e) => {
                return Err(format!(
                    "Could not create the metrics listening socket {addr}: {e}"
                ))
            }
        }
    }
    if listeners.is_empty() {
        return Err("Failed listening for metrics on any bind address".into());
    }
    let active = Arc::new(AtomicUsize::new(0));
    for l in listeners {
        let shared = shared.clone();
        let active = active.clone();
        let addr = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
        std::thread::Builder::new()
            .name("skerry-metrics".into())
            .spawn(move || accept_loop(l, shared, active))
            .map_err(|e| format!("cannot start the metrics thread: {e}"))?;
        tracing::info!("Serving Prometheus metrics on http://{addr}/metrics");
    }
    Ok(())
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>, active: Arc<AtomicUsize>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // EMFILE and the like: do not spin.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::AcqRel);
            continue; // dropped: closed
        }
        let shared = shared.clone();
        let active2 = active.clone();
        let spawned = std::thread::Builder::new()
            .name("skerry-metrics-conn".into())
            .spawn(move || {
                serve(stream, &shared);
                active2.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            active.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    /// `GET /metrics` (`head`: HEAD, no body).
    Metrics { head: bool },
    /// A well-formed request for another path.
    NotFound { head: bool },
    /// A method other than GET or HEAD.
    BadMethod,
    /// Not an HTTP/1.x request line.
    Bad,
}

/// Parses the request line of `head` (the bytes before the blank line).
fn parse_head(head: &[u8]) -> Request {
    let Ok(text) = std::str::from_utf8(head) else {
        return Request::Bad;
    };
    let line = text.split("\r\n").next().unwrap_or("");
    let line = line.strip_suffix('\n').unwrap_or(line);
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Request::Bad;
    };
    if !version.starts_with("HTTP/1.") || !target.starts_with('/') || method.is_empty() {
        return Request::Bad;
    }
    let head = match method {
        "GET" => false,
        "HEAD" => true,
        m if m.bytes().all(|b| b.is_ascii_uppercase()) => return Request::BadMethod,
        _ => return Request::Bad,
    };
    let path = target.split('?').next().unwrap_or("");
    if path == "/metrics" {
        Request::Metrics { head }
    } else {
        Request::NotFound { head }
    }
}

/// Reads the request head: `Ok(Some(bytes before the blank line))`, `Ok(None)` when the
/// client closed (or timed out) before sending a whole head, `Err(())` when it is too long.
fn read_head(stream: &mut TcpStream) -> Result<Option<Vec<u8>>, ()> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(end) = memchr::memmem::find(&buf, b"\r\n\r\n") {
            buf.truncate(end);
            return Ok(Some(buf));
        }
        if let Some(end) = memchr::memmem::find(&buf, b"\n\n") {
            buf.truncate(end);
            return Ok(Some(buf));
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(());
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return Ok(None),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn respond(stream: &mut TcpStream, status: &str, content_type: &str, body: &[u8], head: bool) {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head {
        out.extend_from_slice(body);
    }
    let _ = stream.write_all(&out);
    let _ = stream.flush();
}

/// Closes after an error answer without losing it: stops writing, then reads and drops
/// what the client still sends (up to 1 MiB or one second), so that closing with unread
/// input (which sends a reset) does not destroy the answer in flight.
fn linger_close(stream: &mut TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    let mut chunk = [0u8; 8192];
    let mut drained = 0usize;
    while drained < (1 << 20) && std::time::Instant::now() < deadline {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

/// Serves one connection: one request, then close.
fn serve(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let _ = stream.set_write_timeout(Some(READ_TIMEOUT));
    let _ = stream.set_nodelay(true);
    let text = "text/plain; charset=utf-8";
    match read_head(&mut stream) {
        Err(()) => {
            respond(
                &mut stream,
                "431 Request Header Fields Too Large",
                text,
                b"Request header fields too large\n",
                false,
            );
            linger_close(&mut stream);
        }
        Ok(None) => {}
        Ok(Some(head)) => match parse_head(&head) {
            Request::Metrics { head } => match gather_all(shared) {
                Some(w) => {
                    let body = render(shared, &w);
                    respond(&mut stream, "200 OK", CONTENT_TYPE, body.as_bytes(), head)
                }
                None => respond(
                    &mut stream,
                    "503 Service Unavailable",
                    text,
                    b"The workers did not answer\n",
                    head,
                ),
            },
            Request::NotFound { head } => {
                respond(&mut stream, "404 Not Found", text, b"Not Found\n", head)
            }
            Request::BadMethod => respond(
                &mut stream,
                "405 Method Not Allowed",
                text,
                b"Method Not Allowed\n",
                false,
            ),
            Request::Bad => respond(
                &mut stream,
                "400 Bad Request",
                text,
                b"Bad Request\n",
                false,
            ),
        },
    }
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// Gathers every worker's figures (as INFO does) from this non-worker thread; `None` when
/// a worker does not answer in time.
fn gather_all(shared: &Shared) -> Option<Vec<WorkerInfo>> {
    let mut waiting = Vec::with_capacity(shared.workers);
    for w in 0..shared.workers {
        let (tx, rx) = flume::bounded(1);
        let job: Job = Box::new(move |s| {
            let _ = tx.send(gather(s));
        });
        shared.inboxes[w].send(Envelope::job(0, job)).ok()?;
        waiting.push(rx);
    }
    waiting
        .into_iter()
        .map(|rx| rx.recv_timeout(GATHER_TIMEOUT).ok())
        .collect()
}

/// Text exposition writer: families with `# HELP` and `# TYPE`, then their samples.
struct Out(String);

/// Escapes a label value (backslash, double quote, line feed).
fn escape_label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

fn labels_text(labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

impl Out {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = write!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        let _ = writeln!(self.0, "{name}{} {value}", labels_text(labels));
    }

    /// One family with one unlabelled sample.
    fn single(&mut self, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }

    /// The samples of one histogram (`_bucket` per bound and `+Inf`, `_sum` in seconds,
    /// `_count`); the family header is written by the caller.
    fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &LatencyHistogram) {
        let bounds: Vec<u64> = bucket_bounds_ns().collect();
        let cumulative = h.cumulative_le_ns(&bounds);
        let bucket = format!("{name}_bucket");
        for (b, c) in bounds.iter().zip(cumulative) {
            let le = (*b as f64 / 1e9).to_string();
            let mut l = labels.to_vec();
            l.push(("le", &le));
            self.sample(&bucket, &l, c);
        }
        let mut l = labels.to_vec();
        l.push(("le", "+Inf"));
        self.sample(&bucket, &l, h.count());
        self.sample(&format!("{name}_sum"), labels, h.sum_ns() as f64 / 1e9);
        self.sample(&format!("{name}_count"), labels, h.count());
    }
}

/// The storage figures as `skerry_storage_<name>` (counters with `_total`; text figures are
/// INFO only). Every figure added to [`storage_figures`] appears here without more code.
fn render_storage(out: &mut Out, figures: &[Figure]) {
    for f in figures {
        let FigureValue::Num(v) = f.value else {
            continue;
        };
        match f.kind {
            FigureKind::Counter => out.single(
                &format!("skerry_storage_{}_total", f.name),
                "counter",
                f.help,
                v,
            ),
            FigureKind::Gauge => {
                out.single(&format!("skerry_storage_{}", f.name), "gauge", f.help, v)
            }
        }
    }
}

/// Renders every metric (see `docs/observability.md`).
fn render(shared: &Shared, w: &[WorkerInfo]) -> String {
    let mut out = Out(String::with_capacity(64 * 1024));
    let o = &mut out;
    let sum = |f: &dyn Fn(&WorkerInfo) -> u64| -> u64 { w.iter().map(f).sum() };

    o.family("skerry_info", "gauge", "Build information (always 1).");
    o.sample(
        "skerry_info",
        &[
            ("version", env!("CARGO_PKG_VERSION")),
            ("redis_version", crate::REDIS_VERSION),
        ],
        1,
    );
    o.single(
        "skerry_uptime_seconds",
        "gauge",
        "Seconds since the server started.",
        shared.started.elapsed().as_secs(),
    );
    o.single("skerry_workers", "gauge", "Worker threads.", shared.workers);

    // Clients.
    o.single(
        "skerry_connected_clients",
        "gauge",
        "Client connections open now.",
        w.iter().map(|x| x.clients).sum::<usize>(),
    );
    o.single(
        "skerry_connections_received_total",
        "counter",
        "Client connections accepted since start.",
        shared.total_connections.load(Ordering::Relaxed),
    );
    o.single(
        "skerry_rejected_connections_total",
        "counter",
        "Client connections refused (maxclients).",
        shared.rejected_connections.load(Ordering::Relaxed),
    );

    // Commands.
    o.single(
        "skerry_commands_processed_total",
        "counter",
        "Commands processed (all commands).",
        sum(&|x| x.total_commands),
    );
    let totals = command_totals(w);
    let called: Vec<_> = totals
        .iter()
        .filter(|(_, st)| st.calls > 0 || st.rejected > 0)
        .collect();
    type Calls = fn(&crate::commands::CommandStats) -> u64;
    let per_command: [(&str, &str, Calls); 3] = [
        (
            "skerry_commands_total",
            "Calls of each command or subcommand (INFO commandstats calls).",
            |st| st.calls,
        ),
        (
            "skerry_commands_failed_total",
            "Calls that replied with an error (INFO commandstats failed_calls).",
            |st| st.failed,
        ),
        (
            "skerry_commands_rejected_total",
            "Calls rejected before running (INFO commandstats rejected_calls).",
            |st| st.rejected,
        ),
    ];
    for (family, help, value) in per_command {
        o.family(family, "counter", help);
        for (name, st) in &called {
            o.sample(family, &[("cmd", name)], value(st));
        }
    }
    o.family(
        "skerry_command_duration_seconds",
        "histogram",
        "Time each command took on its worker (INFO latencystats).",
    );
    for (name, h) in command_latency(w) {
        o.histogram("skerry_command_duration_seconds", &[("cmd", name)], &h);
    }
    o.single(
        "skerry_error_replies_total",
        "counter",
        "Error replies sent.",
        sum(&|x| x.total_error_replies),
    );
    let mut errors: std::collections::BTreeMap<&str, u64> = Default::default();
    for x in w {
        for (k, v) in &x.errors {
            *errors.entry(k.as_str()).or_insert(0) += v;
        }
    }
    o.family(
        "skerry_errors_total",
        "counter",
        "Error replies by their first word (INFO errorstats).",
    );
    for (k, v) in errors {
        o.sample("skerry_errors_total", &[("error", k)], v);
    }

    // Network and keyspace.
    o.single(
        "skerry_net_input_bytes_total",
        "counter",
        "Bytes read from clients.",
        sum(&|x| x.net_in),
    );
    o.single(
        "skerry_net_output_bytes_total",
        "counter",
        "Bytes written to clients.",
        sum(&|x| x.net_out),
    );
    o.single(
        "skerry_keyspace_hits_total",
        "counter",
        "Key lookups that found the key.",
        sum(&|x| x.hits),
    );
    o.single(
        "skerry_keyspace_misses_total",
        "counter",
        "Key lookups that found nothing.",
        sum(&|x| x.misses),
    );
    o.single(
        "skerry_expired_keys_total",
        "counter",
        "Keys removed because their time to live ran out.",
        sum(&|x| x.expired),
    );
    let dbs = w.first().map_or(0, |x| x.dbs.len());
    o.family("skerry_keys", "gauge", "Keys in each database (DBSIZE).");
    for db in 0..dbs {
        let n: usize = w.iter().map(|x| x.dbs[db].0).sum();
        o.sample("skerry_keys", &[("db", &db.to_string())], n);
    }
    o.family(
        "skerry_expiring_keys",
        "gauge",
        "Keys with a time to live in each database.",
    );
    for db in 0..dbs {
        let n: usize = w.iter().map(|x| x.dbs[db].1).sum();
        o.sample("skerry_expiring_keys", &[("db", &db.to_string())], n);
    }

    // Memory and CPU.
    o.single(
        "skerry_memory_rss_bytes",
        "gauge",
        "Resident set size of the process.",
        crate::commands::server::rss_bytes(),
    );
    o.single(
        "skerry_memory_index_bytes",
        "gauge",
        "Bytes of the in-RAM key index, all workers.",
        w.iter().map(|x| x.storage.index_bytes as u64).sum::<u64>(),
    );
    let (sys, user, _, _) = crate::commands::server::cpu_times();
    o.single(
        "skerry_cpu_user_seconds_total",
        "counter",
        "User CPU time of the process.",
        user,
    );
    o.single(
        "skerry_cpu_system_seconds_total",
        "counter",
        "System CPU time of the process.",
        sys,
    );

    // Storage.
    render_storage(o, &storage_figures(shared, w));
    let io = merged_io(w);
    for (name, help, h) in [
        (
            "skerry_storage_read_latency_seconds",
            "Device read latency (one O_DIRECT read of a record).",
            &io.read,
        ),
        (
            "skerry_storage_write_latency_seconds",
            "Device write latency (one write of staged records).",
            &io.write,
        ),
        (
            "skerry_storage_fdatasync_latency_seconds",
            "fdatasync latency (one call on one device).",
            &io.fdatasync,
        ),
    ] {
        o.family(name, "histogram", help);
        o.histogram(name, &[], h);
    }
    out.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines() {
        assert_eq!(
            parse_head(b"GET /metrics HTTP/1.1\r\nHost: x"),
            Request::Metrics { head: false }
        );
        assert_eq!(
            parse_head(b"HEAD /metrics?x=1 HTTP/1.0"),
            Request::Metrics { head: true }
        );
        assert_eq!(
            parse_head(b"GET / HTTP/1.1"),
            Request::NotFound { head: false }
        );
        assert_eq!(parse_head(b"POST /metrics HTTP/1.1"), Request::BadMethod);
        assert_eq!(parse_head(b"GET /metrics"), Request::Bad);
        assert_eq!(parse_head(b"GET /metrics HTTP/2.0"), Request::Bad);
        assert_eq!(parse_head(b"\x00\xff garbage"), Request::Bad);
        assert_eq!(parse_head(b"get /metrics HTTP/1.1"), Request::Bad);
        assert_eq!(parse_head(b""), Request::Bad);
    }

    #[test]
    fn label_escaping() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(
            labels_text(&[("cmd", "get"), ("db", "0")]),
            "{cmd=\"get\",db=\"0\"}"
        );
        assert_eq!(labels_text(&[]), "");
    }

    #[test]
    fn histogram_samples_are_cumulative_and_end_in_inf() {
        let mut h = LatencyHistogram::new();
        h.record_ns(100);
        h.record_ns(2_000);
        h.record_ns(60_000_000_000); // past the last bound
        let mut out = Out(String::new());
        out.histogram("x_seconds", &[("cmd", "get")], &h);
        let lines: Vec<&str> = out.0.lines().collect();
        assert_eq!(
            lines[0],
            "x_seconds_bucket{cmd=\"get\",le=\"0.000000256\"} 1"
        );
        assert!(lines.contains(&"x_seconds_bucket{cmd=\"get\",le=\"0.000002048\"} 2"));
        assert!(lines.contains(&"x_seconds_bucket{cmd=\"get\",le=\"34.359738368\"} 2"));
        assert!(lines.contains(&"x_seconds_bucket{cmd=\"get\",le=\"+Inf\"} 3"));
        assert!(lines.contains(&"x_seconds_count{cmd=\"get\"} 3"));
        assert!(lines.contains(&"x_seconds_sum{cmd=\"get\"} 60.0000021"));
    }
}
