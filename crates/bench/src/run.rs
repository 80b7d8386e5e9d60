//! The load generator: one compio runtime (io_uring) per thread, one task per connection.
//!
//! Each connection keeps up to `pipeline` requests in flight: it encodes as many requests as
//! it may into one reused write buffer, sends them with one write, then reads whatever
//! replies have arrived into one reused read buffer and parses them in place
//! ([`crate::resp::ReplyParser`]). Nothing is allocated per request. Latency is measured from
//! the moment a request's batch is written to the moment the read that completes its reply
//! returns, and recorded in the thread's HDR histogram; the histograms are merged at the end.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use compio::buf::{BufResult, IntoInner, IoBuf};
use compio::io::{AsyncRead, AsyncWriteExt};
use compio::net::TcpStream;
use hdrhistogram::Histogram;

use crate::command::Template;
use crate::config::{Config, Stop, Workload};
use crate::keys::{split, KeyGen};
use crate::resp::{Reply, ReplyParser};
use crate::stats::{new_histogram, percentiles, Percentiles};

/// The result of a run.
#[derive(Debug, Clone)]
pub struct Report {
    /// Requests answered.
    pub ops: u64,
    /// SET requests made (ratio workloads).
    pub sets: u64,
    /// GET requests made (ratio workloads).
    pub gets: u64,
    /// Nil replies (GET misses).
    pub misses: u64,
    /// Error replies.
    pub errors: u64,
    /// The first error reply, if any.
    pub first_error: Option<String>,
    /// From the start of the load (all connections established) to the last reply.
    pub duration: Duration,
    /// Latency percentiles.
    pub latency: Percentiles,
    /// CPU time (user + system) this process used during the run, in seconds.
    pub client_cpu_s: f64,
}

impl Report {
    /// Requests answered per second.
    pub fn ops_per_sec(&self) -> f64 {
        let s = self.duration.as_secs_f64();
        if s > 0.0 {
            self.ops as f64 / s
        } else {
            0.0
        }
    }
}

/// A live progress sample, taken about once a second.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Since the start of the load.
    pub elapsed: Duration,
    /// Requests answered so far.
    pub ops: u64,
    /// Requests answered per second over the last interval.
    pub ops_per_sec: f64,
    /// Nil replies so far.
    pub misses: u64,
    /// Error replies so far.
    pub errors: u64,
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchError(pub String);

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BenchError {}

/// Counters a thread publishes for the progress line (one cache line per thread).
#[repr(align(128))]
#[derive(Default)]
struct Live {
    ops: AtomicU64,
    misses: AtomicU64,
    errors: AtomicU64,
}

/// State shared by all threads.
struct Shared {
    cfg: Config,
    addr: SocketAddr,
    start: Barrier,
    abort: AtomicBool,
    live: Vec<Live>,
}

/// What one thread measured.
struct ThreadResult {
    hist: Histogram<u64>,
    counts: Counts,
    first_error: Option<String>,
    end: Instant,
}

/// Request and reply counts.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    ops: u64,
    sets: u64,
    gets: u64,
    misses: u64,
    errors: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.ops += o.ops;
        self.sets += o.sets;
        self.gets += o.gets;
        self.misses += o.misses;
        self.errors += o.errors;
    }
}

/// Per-thread state the connections of a thread share.
struct ThreadState {
    hist: Histogram<u64>,
    counts: Counts,
    first_error: Option<String>,
    end: Option<Instant>,
}

/// Runs the benchmark described by `cfg`. `progress`, if given, is called on this thread about
/// once a second while the load runs.
pub fn run(
    cfg: &Config,
    mut progress: Option<&mut dyn FnMut(Progress)>,
) -> Result<Report, BenchError> {
    let addr = (cfg.host.as_str(), cfg.port)
        .to_socket_addrs()
        .map_err(|e| BenchError(format!("cannot resolve {}:{}: {e}", cfg.host, cfg.port)))?
        .next()
        .ok_or_else(|| BenchError(format!("{} resolves to no address", cfg.host)))?;
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        addr,
        start: Barrier::new(cfg.threads + 1),
        abort: AtomicBool::new(false),
        live: (0..cfg.threads).map(|_| Live::default()).collect(),
    });
    let mut handles = Vec::with_capacity(cfg.threads);
    for t in 0..cfg.threads {
        let shared = shared.clone();
        let h = std::thread::Builder::new()
            .name(format!("bench-{t}"))
            .spawn(move || thread_main(t, &shared))
            .map_err(|e| BenchError(format!("cannot start thread: {e}")))?;
        handles.push(h);
    }
    // Every thread has connected (or failed to) when the barrier opens.
    shared.start.wait();
    let start = Instant::now();
    let cpu0 = process_cpu_seconds();
    if !shared.abort.load(Ordering::Acquire) {
        let mut last = (start, 0u64);
        let mut next = start + Duration::from_secs(1);
        while !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(20));
            let now = Instant::now();
            if now < next {
                continue;
            }
            next += Duration::from_secs(1);
            if let Some(cb) = progress.as_mut() {
                let sum = |f: fn(&Live) -> &AtomicU64| {
                    shared
                        .live
                        .iter()
                        .map(|l| f(l).load(Ordering::Relaxed))
                        .sum::<u64>()
                };
                let ops = sum(|l| &l.ops);
                let dt = now.duration_since(last.0).as_secs_f64();
                cb(Progress {
                    elapsed: now.duration_since(start),
                    ops,
                    ops_per_sec: if dt > 0.0 {
                        (ops - last.1) as f64 / dt
                    } else {
                        0.0
                    },
                    misses: sum(|l| &l.misses),
                    errors: sum(|l| &l.errors),
                });
                last = (now, ops);
            }
        }
    }
    let mut results = Vec::with_capacity(handles.len());
    let mut failure = None;
    for h in handles {
        match h.join() {
            Ok(Ok(r)) => results.push(r),
            Ok(Err(e)) => {
                failure.get_or_insert(e);
            }
            Err(_) => {
                failure.get_or_insert_with(|| "a load thread panicked".to_string());
            }
        }
    }
    let cpu = process_cpu_seconds() - cpu0;
    if let Some(e) = failure {
        return Err(BenchError(e));
    }
    let mut hist = new_histogram();
    let mut counts = Counts::default();
    let mut first_error = None;
    let mut end = start;
    for r in results {
        hist.add(&r.hist)
            .map_err(|e| BenchError(format!("merging histograms: {e:?}")))?;
        counts.add(&r.counts);
        if first_error.is_none() {
            first_error = r.first_error;
        }
        end = end.max(r.end);
    }
    Ok(Report {
        ops: counts.ops,
        sets: counts.sets,
        gets: counts.gets,
        misses: counts.misses,
        errors: counts.errors,
        first_error,
        duration: end.duration_since(start),
        latency: percentiles(&hist),
        client_cpu_s: cpu,
    })
}

/// One load thread: connects its connections, waits for the others, runs them to the end.
fn thread_main(t: usize, shared: &Arc<Shared>) -> Result<ThreadResult, String> {
    let cfg = &shared.cfg;
    let rt = match build_runtime(cfg, t) {
        Ok(rt) => rt,
        Err(e) => {
            shared.abort.store(true, Ordering::Release);
            shared.start.wait();
            return Err(format!("cannot start the io_uring runtime: {e}"));
        }
    };
    rt.block_on(async {
        let mut streams = Vec::with_capacity(cfg.conns_per_thread);
        let mut failed = None;
        for _ in 0..cfg.conns_per_thread {
            match connect(shared.addr, cfg.connect_timeout).await {
                Ok(s) => streams.push(s),
                Err(e) => {
                    failed = Some(format!("cannot connect to {}: {e}", shared.addr));
                    break;
                }
            }
        }
        if failed.is_some() {
            shared.abort.store(true, Ordering::Release);
        }
        // Blocking here is fine: nothing else runs on this runtime yet.
        shared.start.wait();
        if let Some(e) = failed {
            return Err(e);
        }
        if shared.abort.load(Ordering::Acquire) {
            return Err("another thread failed to start".into());
        }
        let start = Instant::now();
        let state = Rc::new(RefCell::new(ThreadState {
            hist: new_histogram(),
            counts: Counts::default(),
            first_error: None,
            end: None,
        }));
        let mut tasks = Vec::with_capacity(streams.len());
        for (i, stream) in streams.into_iter().enumerate() {
            let conn = (t * cfg.conns_per_thread + i) as u64;
            let c = Conn::new(cfg, conn, start, stream);
            let shared = shared.clone();
            let state = state.clone();
            tasks.push(compio::runtime::spawn(async move {
                c.run(&shared, t, &state).await
            }));
        }
        let mut failure = None;
        for task in tasks {
            match task.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    failure.get_or_insert(e);
                }
                Err(e) => {
                    failure.get_or_insert(format!("connection task failed: {e:?}"));
                }
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        let st = Rc::try_unwrap(state)
            .map_err(|_| "connection state still shared".to_string())?
            .into_inner();
        Ok(ThreadResult {
            hist: st.hist,
            counts: st.counts,
            first_error: st.first_error,
            end: st.end.unwrap_or(start),
        })
    })
}

/// The thread's runtime: io_uring with a single issuer and deferred task running (as the
/// server's workers), falling back to the defaults on kernels without them; pinned to the
/// thread's CPU if `--cpus` was given.
fn build_runtime(cfg: &Config, t: usize) -> std::io::Result<compio::runtime::Runtime> {
    let cpu = (!cfg.cpus.is_empty()).then(|| cfg.cpus[t % cfg.cpus.len()]);
    let build = |tuned: bool| {
        let mut builder = compio::runtime::RuntimeBuilder::new();
        if tuned {
            let mut proactor = compio::driver::ProactorBuilder::new();
            proactor
                .capacity(1024)
                .single_issuer(true)
                .defer_taskrun(true);
            builder.with_proactor(proactor);
        }
        if let Some(cpu) = cpu {
            builder.thread_affinity(std::iter::once(cpu).collect());
        }
        builder.build()
    };
    build(true).or_else(|_| build(false))
}

/// Connects to `addr`, retrying refused connections for up to `timeout`.
async fn connect(addr: SocketAddr, timeout: Duration) -> std::io::Result<TcpStream> {
    let deadline = Instant::now() + timeout;
    loop {
        match TcpStream::connect(addr).await {
            Ok(s) => {
                s.set_nodelay(true)?;
                return Ok(s);
            }
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                compio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// One connection's load.
struct Conn {
    stream: TcpStream,
    keys: KeyGen,
    /// The templates cycled through, and whether each is a GET (for the SET/GET counts).
    cycle: Vec<(Template, Kind)>,
    pos: usize,
    pipeline: usize,
    /// Requests this connection still has to make.
    remaining: u64,
    deadline: Option<Instant>,
    interval: Option<Duration>,
    next_due: Instant,
}

/// What a request counts as.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Set,
    Get,
    Other,
}

impl Conn {
    fn new(cfg: &Config, conn: u64, start: Instant, stream: TcpStream) -> Conn {
        let conns = cfg.total_conns() as u64;
        let (total, remaining, deadline) = match cfg.stop {
            Stop::Requests(n) => (Some(n), split(n, conns, conn).1, None),
            Stop::Time(d) => (None, u64::MAX, Some(start + d)),
        };
        let cycle: Vec<(Template, Kind)> = match &cfg.workload {
            Workload::Ratio {
                set,
                get,
                set_t,
                get_t,
            } => std::iter::repeat_n((set_t.clone(), Kind::Set), *set as usize)
                .chain(std::iter::repeat_n(
                    (get_t.clone(), Kind::Get),
                    *get as usize,
                ))
                .collect(),
            Workload::Command(t) => vec![(t.clone(), Kind::Other)],
        };
        let pos = (conn as usize) % cycle.len();
        Conn {
            stream,
            keys: KeyGen::new(cfg.pattern, cfg.key_max, conn, conns, total, cfg.seed),
            cycle,
            pos,
            pipeline: cfg.pipeline,
            remaining,
            deadline,
            interval: cfg.rate_limit.map(|r| Duration::from_secs_f64(1.0 / r)),
            next_due: start,
        }
    }

    async fn run(
        mut self,
        shared: &Shared,
        t: usize,
        state: &RefCell<ThreadState>,
    ) -> Result<(), String> {
        let max_len = self
            .cycle
            .iter()
            .map(|(t, _)| t.max_len())
            .max()
            .unwrap_or(64);
        let mut wbuf: Vec<u8> = Vec::with_capacity(self.pipeline * max_len + 64);
        const READ_CHUNK: usize = 64 * 1024;
        let mut rbuf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
        let mut sent_at: VecDeque<Instant> = VecDeque::with_capacity(self.pipeline);
        let mut parser = ReplyParser::new();
        let mut counts = Counts::default();
        let live = &shared.live[t];
        let mut issuing = self.remaining > 0;
        let result: Result<(), String> = async {
            loop {
                let now = Instant::now();
                if issuing
                    && (self.deadline.is_some_and(|d| now >= d)
                        || shared.abort.load(Ordering::Relaxed))
                {
                    issuing = false;
                }
                if issuing {
                    while sent_at.len() < self.pipeline && self.remaining > 0 {
                        if let Some(iv) = self.interval {
                            if self.next_due > now {
                                break;
                            }
                            self.next_due += iv;
                        }
                        let (template, kind) = &self.cycle[self.pos];
                        self.pos += 1;
                        if self.pos == self.cycle.len() {
                            self.pos = 0;
                        }
                        template.encode(self.keys.next_key(), &mut wbuf);
                        match kind {
                            Kind::Set => counts.sets += 1,
                            Kind::Get => counts.gets += 1,
                            Kind::Other => {}
                        }
                        sent_at.push_back(now);
                        self.remaining -= 1;
                    }
                    if self.remaining == 0 {
                        issuing = false;
                    }
                }
                if !wbuf.is_empty() {
                    let BufResult(res, buf) = self.stream.write_all(wbuf).await;
                    wbuf = buf;
                    res.map_err(|e| format!("write: {e}"))?;
                    wbuf.clear();
                }
                if sent_at.is_empty() {
                    if !issuing {
                        break;
                    }
                    // Rate limited with nothing in flight: wait for the next slot.
                    let wake = match self.deadline {
                        Some(d) => self.next_due.min(d),
                        None => self.next_due,
                    };
                    compio::time::sleep_until(wake).await;
                    continue;
                }
                if rbuf.capacity() - rbuf.len() < READ_CHUNK / 2 {
                    rbuf.reserve(READ_CHUNK);
                }
                let len = rbuf.len();
                let BufResult(res, slice) = self.stream.read(rbuf.slice(len..)).await;
                rbuf = slice.into_inner();
                match res {
                    Ok(0) => return Err("the server closed the connection".into()),
                    Ok(_) => {}
                    Err(e) => return Err(format!("read: {e}")),
                }
                let done_at = Instant::now();
                let before = counts;
                let mut unexpected = false;
                let consumed = {
                    let mut st = state.borrow_mut();
                    let st = &mut *st;
                    let hist = &mut st.hist;
                    let first_error = &mut st.first_error;
                    let consumed = parser
                        .parse(&rbuf, |reply| {
                            let Some(sent) = sent_at.pop_front() else {
                                unexpected = true;
                                return;
                            };
                            hist.saturating_record(
                                (done_at.duration_since(sent).as_nanos() as u64).max(1),
                            );
                            counts.ops += 1;
                            match reply {
                                Reply::Value => {}
                                Reply::Nil => counts.misses += 1,
                                Reply::Error(msg) => {
                                    counts.errors += 1;
                                    if first_error.is_none() {
                                        *first_error =
                                            Some(String::from_utf8_lossy(msg).into_owned());
                                    }
                                }
                            }
                        })
                        .map_err(|e| e.to_string())?;
                    st.end = Some(st.end.map_or(done_at, |e| e.max(done_at)));
                    consumed
                };
                if unexpected {
                    return Err("the server sent a reply to a request never made".into());
                }
                if consumed == rbuf.len() {
                    rbuf.clear();
                } else {
                    rbuf.drain(..consumed);
                }
                live.ops
                    .fetch_add(counts.ops - before.ops, Ordering::Relaxed);
                if counts.misses != before.misses {
                    live.misses
                        .fetch_add(counts.misses - before.misses, Ordering::Relaxed);
                }
                if counts.errors != before.errors {
                    live.errors
                        .fetch_add(counts.errors - before.errors, Ordering::Relaxed);
                }
            }
            Ok(())
        }
        .await;
        if result.is_err() {
            shared.abort.store(true, Ordering::Relaxed);
        }
        state.borrow_mut().counts.add(&counts);
        result
    }
}

/// User + system CPU time of this process so far, in seconds.
pub fn process_cpu_seconds() -> f64 {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a complete `rusage` into the pointer we pass, which points
    // to memory of that type that we own; RUSAGE_SELF is always a valid `who`.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if rc != 0 {
        return 0.0;
    }
    // SAFETY: getrusage returned 0, so it filled the struct (and it was zeroed before).
    let ru = unsafe { ru.assume_init() };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
