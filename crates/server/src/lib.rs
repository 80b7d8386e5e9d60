//! Skerry's server: workers, connections, command dispatch, configuration and INFO.
//!
//! Start with [`main_from_args`]; the shape of the process is described in
//! `docs/architecture.md`.

pub mod blocking;
pub mod checkpoint;
pub mod client;
pub mod coll;
pub mod commands;
pub mod config;
pub mod conn;
pub mod dbmap;
pub mod defrag;
pub mod geohash;
pub mod glob;
pub mod hll;
pub mod hop;
pub mod keyspace;
pub mod longdouble;
pub mod memory;
pub mod metrics;
pub mod netbuf;
pub mod persist;
pub mod prefetch;
pub mod pubsub;
pub mod rdb;
pub mod replica;
pub mod reply;
pub mod scripting;
pub mod slot;
pub mod slowlog;
pub mod space;
pub mod worker;
pub use worker::set_allocator_collect;

use std::ffi::OsString;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use config::Config;
use worker::{unix_ms, Shared};

/// The Redis version Skerry's behaviour follows (reported in HELLO and INFO for clients that
/// check it).
pub const REDIS_VERSION: &str = "8.0.2";

const USAGE: &str = "Usage: skerry [/path/to/skerry.conf] [--<config-name> <value>]...
       skerry --version
       skerry --help

Every Redis configuration name can be given as a flag (--port 7000, --requirepass secret,
--save \"\"). Skerry's own: --threads N (worker threads; default: one per CPU),
--metrics-port PORT (Prometheus /metrics over HTTP; default 0: off).";

/// Parses the command line (config file first, then `--name value...` pairs, as Redis does:
/// a value runs until the next `--`).
fn parse_args(args: Vec<String>) -> Result<Config, String> {
    let mut cfg = Config::defaults();
    let mut rest = &args[..];
    if let Some(first) = rest.first() {
        if !first.starts_with("--") {
            cfg.load_file(std::path::Path::new(first))?;
            rest = &rest[1..];
        }
    }
    let mut i = 0;
    while i < rest.len() {
        let Some(name) = rest[i].strip_prefix("--") else {
            return Err(format!(
                "Unexpected argument '{}' (expected --name value)\n{USAGE}",
                rest[i]
            ));
        };
        let mut values = Vec::new();
        i += 1;
        while i < rest.len() && !rest[i].starts_with("--") {
            values.push(rest[i].clone());
            i += 1;
        }
        // `--save ""` is one empty value.
        let value = values.join(" ");
        cfg.set(name, &value, false).map_err(|e| {
            format!("*** FATAL CONFIG ERROR *** in command-line option '--{name} {value}': {e}")
        })?;
    }
    Ok(cfg)
}

fn init_logging(cfg: &Config) {
    let level = match cfg.get("loglevel").as_str() {
        "debug" => "debug",
        "verbose" => "info",
        "notice" => "info",
        "warning" => "warn",
        _ => "error",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("SKERRY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let logfile = cfg.get("logfile");
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(false);
    if logfile.is_empty() {
        builder.with_writer(std::io::stderr).init();
    } else {
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&logfile)
        {
            Ok(f) => builder.with_writer(std::sync::Mutex::new(f)).init(),
            Err(e) => {
                eprintln!("Can't open the log file {logfile}: {e}");
                std::process::exit(1);
            }
        }
    }
}

fn bind_all(cfg: &Config, port: u16, count: usize) -> Result<Vec<Vec<TcpListener>>, String> {
    use socket2::{Domain, Protocol, Socket, Type};
    let backlog = cfg.get_i64("tcp-backlog").clamp(128, 65535) as i32;
    let mut per_worker: Vec<Vec<TcpListener>> = (0..count).map(|_| Vec::new()).collect();
    let bind = cfg.get("bind");
    let mut bound_any = false;
    for spec in bind.split_whitespace() {
        let (optional, host) = match spec.strip_prefix('-') {
            Some(h) => (true, h),
            None => (false, spec),
        };
        let ip: std::net::IpAddr = match host.parse() {
            Ok(ip) => ip,
            Err(_) if host == "*" => "0.0.0.0".parse().unwrap(),
            Err(_) => return Err(format!("Invalid bind address '{host}'")),
        };
        let addr = SocketAddr::new(ip, port);
        let mut made = Vec::new();
        for _ in 0..count {
            let r = (|| -> std::io::Result<TcpListener> {
                let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
                s.set_reuse_address(true)?;
                s.set_reuse_port(true)?;
                if addr.is_ipv6() {
                    s.set_only_v6(true)?;
                }
                s.bind(&addr.into())?;
                s.listen(backlog)?;
                s.set_nonblocking(true)?;
                Ok(s.into())
            })();
            match r {
                Ok(l) => made.push(l),
                Err(e) => {
                    if optional {
                        made.clear();
                        break;
                    }
                    return Err(format!(
                        "Could not create server TCP listening socket {addr}: {e}"
                    ));
                }
            }
        }
        if !made.is_empty() {
            bound_any = true;
            for (w, l) in made.into_iter().enumerate() {
                per_worker[w].push(l);
            }
        }
    }
    if !bound_any {
        return Err("Failed listening on any bind address".into());
    }
    Ok(per_worker)
}

fn random_run_id() -> String {
    use rand::Rng;
    let mut r = rand::rng();
    (0..40)
        .map(|_| std::char::from_digit(r.random_range(0..16), 16).unwrap())
        .collect()
}

/// Runs the server with the given process arguments (including argv[0]); returns the exit code.
pub fn main_from_args<I: IntoIterator<Item = OsString>>(args: I) -> i32 {
    let args: Vec<String> = args
        .into_iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if args.iter().any(|a| a == "--version" || a == "-v") {
        println!(
            "Skerry server v={} (Redis {REDIS_VERSION} compatible)",
            env!("CARGO_PKG_VERSION")
        );
        return 0;
    }
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return 0;
    }
    let cfg = match parse_args(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    init_logging(&cfg);
    let threads = match cfg.get_i64("threads") {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n as usize,
    };
    let port = cfg.get_i64("port") as u16;
    let dir = cfg.get("dir");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        tracing::error!("Can't create the data directory '{dir}': {e}");
        return 1;
    }
    let listeners = match bind_all(&cfg, port, threads) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("{e}");
            return 1;
        }
    };
    // Block SIGTERM and SIGINT in every thread; the main thread waits for them below.
    // SAFETY: plain signal-mask manipulation on a zero-initialised sigset_t.
    let sigset = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    for _ in 0..threads {
        let (tx, rx) = flume::unbounded();
        senders.push(tx);
        receivers.push(rx);
    }
    let shared = Arc::new(Shared {
        config: cfg,
        workers: threads,
        inboxes: senders,
        next_txn: AtomicU64::new(1),
        connected_clients: AtomicU64::new(0),
        next_client_id: AtomicU64::new(1),
        total_connections: AtomicU64::new(0),
        rejected_connections: AtomicU64::new(0),
        blocked_clients: AtomicU64::new(0),
        pubsub_active: pubsub::Active::new(threads),
        stopping: AtomicBool::new(false),
        active_expire: AtomicBool::new(true),
        rdb: rdb::State::new(unix_ms()),
        repl: Default::default(),
        started: Instant::now(),
        started_unix_ms: unix_ms(),
        port,
        run_id: random_run_id(),
        executable: std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        scripts: Default::default(),
    });
    // Function libraries kept in the data directory (FUNCTION LOAD).
    match shared.scripts.libraries.open(std::path::Path::new(&dir)) {
        Ok(0) => {}
        Ok(n) => tracing::info!("{n} function libraries loaded"),
        Err(e) => {
            tracing::error!("Can't load the function libraries: {e}");
            return 1;
        }
    }
    // Calibrate the TSC clock used for command timing now, not on the first command.
    let _ = quanta::Instant::now();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pin = threads <= cpus;
    let databases = shared.config.get_i64("databases") as usize;
    let opened = match persist::open(&shared.config, threads, databases, unix_ms()) {
        Ok(opened) => opened,
        Err(e) => {
            tracing::error!("{e}");
            return 1;
        }
    };
    // Which physical database each database number is (SWAPDB, see `dbmap`).
    if let Err(e) = dbmap::load(
        std::path::Path::new(&dir),
        opened.store.superblock(0).store_id,
        databases,
    ) {
        tracing::error!("{e}");
        return 1;
    }
    // The value cache's budget (value-cache-mb auto) from the memory left after the index.
    memory::update(&shared.config, threads);
    let b = memory::budget();
    tracing::info!(
        "Value cache: {} ({} MiB limit from {}, {} MiB used by the rest of the process)",
        if memory::cache_is_auto(&shared.config) {
            format!("auto, {} MiB", b.cache_bytes >> 20)
        } else {
            format!(
                "{} MiB (value-cache-mb)",
                shared.config.get("value-cache-mb")
            )
        },
        b.limit_bytes >> 20,
        b.source.map_or("?", memory::Source::name),
        b.non_cache_bytes >> 20
    );
    let persisted: Vec<_> = opened
        .per_worker
        .into_iter()
        .zip(opened.adoptable)
        .map(|(index, adopt)| (opened.store.clone(), opened.max_seq, index, adopt))
        .collect();
    let mut handles = Vec::new();
    for (id, ((rx, ls), p)) in receivers
        .into_iter()
        .zip(listeners)
        .zip(persisted)
        .enumerate()
    {
        match worker::spawn_worker(id, pin.then_some(id % cpus), shared.clone(), rx, ls, p) {
            Ok(h) => handles.push(h),
            Err(e) => {
                tracing::error!("cannot start worker {id}: {e}");
                return 1;
            }
        }
    }
    // --rdb-import: the file is loaded before the server says it is ready (clients that
    // connect meanwhile wait for the workers, which the import holds).
    let import = shared.config.get("rdb-import");
    if !import.is_empty() {
        let (tx, rx) = flume::bounded(1);
        let s = shared.clone();
        let path = std::path::PathBuf::from(import);
        let job: worker::Job = Box::new(move |_shard: &mut worker::Shard| {
            compio::runtime::spawn(async move {
                let _ = tx.send(rdb::import_at_start(s, 0, path).await);
            })
            .detach();
        });
        let imported = match shared.inboxes[0].send(worker::Envelope::job(0, job)) {
            Ok(()) => rx
                .recv()
                .unwrap_or_else(|_| Err("the import task stopped".into())),
            Err(_) => Err("worker 0 has stopped".into()),
        };
        if let Err(e) = imported {
            tracing::error!("{e}");
            return 1;
        }
    }
    let metrics_port = shared.config.get_i64("metrics-port") as u16;
    if metrics_port != 0 {
        if let Err(e) = metrics::start(&shared, metrics_port) {
            tracing::error!("{e}");
            return 1;
        }
    }
    tracing::info!(
        "Skerry {} (Redis {REDIS_VERSION} compatible) started: pid={} port={port} workers={threads} dir={}",
        env!("CARGO_PKG_VERSION"),
        std::process::id(),
        shared.config.get("dir"),
    );
    tracing::info!("Ready to accept connections tcp");
    // Wait for SIGTERM / SIGINT (SHUTDOWN sends SIGTERM to ourselves).
    let mut sig: libc::c_int = 0;
    // SAFETY: sigwait on the set built above; writes the signal number into `sig`.
    unsafe {
        libc::sigwait(&sigset, &mut sig);
    }
    let name = if sig == libc::SIGINT {
        "SIGINT"
    } else {
        "SIGTERM"
    };
    if !shared.stopping.swap(true, Ordering::SeqCst) {
        tracing::warn!("Received {name} scheduling shutdown...");
    }
    // Every worker's sealed blocks durable first, so that each checkpoint covers them all.
    sync_before_exit(&shared);
    checkpoint::write_all_before_exit(&shared, std::time::Duration::from_secs(120));
    sync_before_exit(&shared);
    tracing::warn!("Skerry is now ready to exit, bye bye...");
    0
}

/// Makes every worker's appended records durable before the process exits (clean
/// shutdown); gives up on a worker after 30 s.
fn sync_before_exit(shared: &Shared) {
    let mut waiting = Vec::new();
    for w in 0..shared.workers {
        let (tx, rx) = flume::bounded(1);
        let job = worker::commit_job(tx);
        if shared.inboxes[w]
            .send(worker::Envelope::job(0, job))
            .is_ok()
        {
            waiting.push((w, rx));
        }
    }
    for (w, rx) in waiting {
        match rx.recv_timeout(std::time::Duration::from_secs(30)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!("worker {w}: data file sync at shutdown failed: {e}"),
            Err(_) => tracing::error!("worker {w}: data file sync at shutdown timed out"),
        }
    }
    tracing::info!("Data file synced.");
}
