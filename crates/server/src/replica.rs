//! The replica side of Redis's replication protocol (REPLICAOF host port): Skerry follows a
//! Redis (or Valkey, or Skerry) primary, for live migration and read scaling.
//!
//! **The link** (one task, on the worker that ran REPLICAOF): connect, `PING`, `AUTH` with
//! `masterauth` (and `masteruser`) when set, `REPLCONF listening-port`, `REPLCONF capa
//! psync2`, then `PSYNC`: `? -1` the first time, else the primary's replication ID and the
//! next offset, so that a link broken and made again continues where it stopped when the
//! primary's backlog still holds it (`+CONTINUE`).
//!
//! **Full sync** (`+FULLRESYNC id offset`): the primary sends its RDB file as one bulk
//! (Skerry does not announce `capa eof`, so Redis writes the file to disk and sends it
//! sized); it is received into `dir/temp-repl-<pid>.rdb`, then, every worker held, the
//! dataset and the function libraries are emptied and the file is loaded (`crate::rdb`).
//!
//! **The stream**: every command the primary sends after the file is applied, in order, by
//! one local client connected over loopback TCP to this server (the *master client*: its
//! commands go through the normal paths, so MULTI/EXEC, scripts and cross-worker commands
//! behave as for any client; it runs with CLIENT REPLY OFF). `PING` is only counted, and
//! `REPLCONF GETACK` is answered with `REPLCONF ACK <offset>`; the link also acknowledges
//! by itself at most once a second while the stream flows. The offset counts the stream's
//! bytes once handed to the master client (applied in order by it), not once applied.
//!
//! **Read-only**: with `replica-read-only yes` (the default), a write command from any
//! client but the master client gets Redis's `-READONLY` error.
//!
//! Not built yet (issue 28): serving replicas (PSYNC/SYNC as a primary), diskless loading,
//! chained replicas, and a replica's own expiry waiting for the primary's DELs (Skerry's
//! replica expires keys itself).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use compio::buf::{BufResult, IntoInner, IoBuf};
use compio::io::{AsyncRead, AsyncWriteExt};
use compio::net::TcpStream;
use skerry_resp::{Limits, Parsed, RequestParser};

use crate::worker::{unix_ms, Shared};

/// The replica state shared by the workers.
#[derive(Debug, Default)]
pub struct State {
    /// Bumped by every REPLICAOF: a link whose generation is not the current one stops.
    pub generation: AtomicU64,
    /// The primary followed (None: this server is a primary).
    pub master: Mutex<Option<(String, u16)>>,
    /// `master` is set, for the command path's read-only check without the lock.
    following: AtomicBool,
    /// The link is up (full sync done, the stream flowing).
    pub link_up: AtomicBool,
    /// A full sync is being received or loaded.
    pub syncing: AtomicBool,
    /// The CLIENT ID of the local client applying the primary's stream (0: none).
    pub master_client_id: AtomicU64,
    /// Replication offset handed to the master client.
    pub offset: AtomicI64,
    /// The primary's replication ID (empty before the first sync).
    pub replid: Mutex<String>,
    /// Unix ms of the last bytes read from the primary.
    pub last_io_ms: AtomicI64,
    /// Full syncs completed (`sync_full` as a replica sees it, for tests).
    pub full_syncs: AtomicU64,
    /// Partial resyncs accepted by the primary.
    pub partial_syncs: AtomicU64,
}

impl State {
    /// True when writes from clients other than the master client are refused.
    pub fn read_only_for(&self, shared: &Shared, client_id: u64) -> bool {
        self.following.load(Ordering::Relaxed)
            && client_id != self.master_client_id.load(Ordering::Relaxed)
            && shared.config.get("replica-read-only") == "yes"
    }
}

/// Redis's error for a write on a read-only replica.
///
/// A script or function that may write, by its flags, gets it before it runs, as Redis's
/// `processCommand` gives it; a script without flags gets it from the write it calls.
pub const READONLY: &str = "READONLY You can't write against a read only replica.";

/// Starts following `host`:`port` (or stops following, `None`); the link runs on worker
/// `me`, the caller's.
pub fn replicaof(shared: &Arc<Shared>, me: usize, target: Option<(String, u16)>) {
    let repl = &shared.repl;
    let generation = repl.generation.fetch_add(1, Ordering::SeqCst) + 1;
    repl.link_up.store(false, Ordering::SeqCst);
    repl.master_client_id.store(0, Ordering::SeqCst);
    *repl.master.lock().expect("repl master") = target.clone();
    repl.following.store(target.is_some(), Ordering::SeqCst);
    let Some((host, port)) = target else {
        tracing::info!("MASTER MODE enabled");
        return;
    };
    tracing::info!("Connecting to MASTER {host}:{port}");
    let shared = shared.clone();
    compio::runtime::spawn(async move { run(shared, me, generation, host, port).await }).detach();
}

fn current(shared: &Shared, generation: u64) -> bool {
    shared.repl.generation.load(Ordering::SeqCst) == generation
}

/// The link: (re)connects until REPLICAOF changes the target.
async fn run(shared: Arc<Shared>, me: usize, generation: u64, host: String, port: u16) {
    // The master client outlives a broken link: what it was sent is applied, in order,
    // before what the next link sends through it.
    let mut applier = None;
    while current(&shared, generation) {
        match link(&shared, me, generation, &host, port, &mut applier).await {
            Ok(()) => {}
            Err(e) => tracing::warn!("MASTER {host}:{port} link: {e}"),
        }
        shared.repl.link_up.store(false, Ordering::SeqCst);
        shared.repl.syncing.store(false, Ordering::SeqCst);
        if current(&shared, generation) {
            compio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// Bytes read from the primary, not consumed yet.
struct Inbound {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
}

impl Inbound {
    /// Connects to `host`:`port`; `what` names the connection in the error.
    async fn connect(host: &str, port: u16, what: &str) -> Result<Inbound, String> {
        let stream = TcpStream::connect((host, port))
            .await
            .map_err(|e| format!("{what}: {e}"))?;
        let _ = stream.set_nodelay(true);
        Ok(Inbound {
            stream,
            buf: Vec::new(),
            start: 0,
        })
    }

    fn pending(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }

    /// Reads more bytes; Err at the end of the stream.
    async fn fill(&mut self) -> Result<(), String> {
        if self.start > 0 && self.start * 2 > self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        let len = self.buf.len();
        self.buf.reserve(64 << 10);
        let spare = std::mem::take(&mut self.buf);
        let BufResult(res, slice) = self.stream.read(spare.slice(len..)).await;
        self.buf = slice.into_inner();
        match res {
            Ok(0) => Err("the primary closed the connection".into()),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("read: {e}")),
        }
    }

    /// One line (without CRLF).
    async fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', self.pending()) {
                let raw = &self.pending()[..i];
                let line =
                    String::from_utf8_lossy(raw.strip_suffix(b"\r").unwrap_or(raw)).into_owned();
                self.consume(i + 1);
                return Ok(line);
            }
            self.fill().await?;
        }
    }
}

async fn send(stream: &mut TcpStream, args: &[&[u8]]) -> Result<(), String> {
    let mut out = Vec::new();
    skerry_resp::encode_command(&mut out, args);
    let BufResult(res, _) = stream.write_all(out).await;
    res.map_err(|e| format!("write: {e}"))
}

/// Sends a command and reads its one-line reply.
async fn call(inb: &mut Inbound, args: &[&[u8]]) -> Result<String, String> {
    send(&mut inb.stream, args).await?;
    inb.line().await
}

/// [`call`] for a command that must succeed (a `+` reply); Err names it as `what`.
async fn call_ok(inb: &mut Inbound, args: &[&[u8]], what: &str) -> Result<(), String> {
    let reply = call(inb, args).await?;
    if reply.starts_with('+') {
        Ok(())
    } else {
        Err(format!("{what}: {reply}"))
    }
}

/// One connection to the primary: handshake, sync, stream, until it breaks or REPLICAOF
/// changes the target.
async fn link(
    shared: &Arc<Shared>,
    me: usize,
    generation: u64,
    host: &str,
    port: u16,
    applier: &mut Option<TcpStream>,
) -> Result<(), String> {
    let repl = &shared.repl;
    let mut inb = Inbound::connect(host, port, "connect").await?;
    let auth = shared.config.get("masterauth");
    if !auth.is_empty() {
        let user = shared.config.get("masteruser");
        if user.is_empty() {
            call_ok(&mut inb, &[b"AUTH", auth.as_bytes()], "AUTH").await?;
        } else {
            call_ok(
                &mut inb,
                &[b"AUTH", user.as_bytes(), auth.as_bytes()],
                "AUTH",
            )
            .await?;
        }
    }
    call_ok(&mut inb, &[b"PING"], "PING").await?;
    let my_port = shared.port.to_string();
    let listening = [&b"REPLCONF"[..], b"listening-port", my_port.as_bytes()];
    call_ok(&mut inb, &listening, "REPLCONF listening-port").await?;
    call_ok(
        &mut inb,
        &[b"REPLCONF", b"capa", b"psync2"],
        "REPLCONF capa",
    )
    .await?;
    let replid = repl.replid.lock().expect("replid").clone();
    let offset = repl.offset.load(Ordering::SeqCst);
    let (psync_id, psync_offset) = if replid.is_empty() {
        ("?".to_string(), "-1".to_string())
    } else {
        (replid, (offset + 1).to_string())
    };
    let reply = call(
        &mut inb,
        &[b"PSYNC", psync_id.as_bytes(), psync_offset.as_bytes()],
    )
    .await?;
    let mut words = reply.split_whitespace();
    match words.next() {
        Some("+FULLRESYNC") => {
            let id = words.next().ok_or("FULLRESYNC without an ID")?.to_string();
            let at: i64 = words
                .next()
                .and_then(|o| o.parse().ok())
                .ok_or("FULLRESYNC without an offset")?;
            repl.syncing.store(true, Ordering::SeqCst);
            full_sync(shared, me, generation, &mut inb).await?;
            *repl.replid.lock().expect("replid") = id;
            repl.offset.store(at, Ordering::SeqCst);
            repl.full_syncs.fetch_add(1, Ordering::Relaxed);
            repl.syncing.store(false, Ordering::SeqCst);
        }
        Some("+CONTINUE") => {
            if let Some(new_id) = words.next() {
                *repl.replid.lock().expect("replid") = new_id.to_string();
            }
            repl.partial_syncs.fetch_add(1, Ordering::Relaxed);
            tracing::info!("MASTER <-> REPLICA sync: partial resynchronization accepted");
        }
        _ => return Err(format!("PSYNC: {reply}")),
    }
    if !current(shared, generation) {
        return Ok(());
    }
    if applier.is_none() {
        *applier = Some(master_client(shared).await?);
    }
    repl.link_up.store(true, Ordering::SeqCst);
    tracing::info!("MASTER <-> REPLICA sync: finished with success");
    let applied = stream_commands(shared, generation, &mut inb, applier).await;
    if matches!(&applied, Err(e) if e.starts_with("the master client")) {
        *applier = None;
    }
    applied
}

/// Receives the primary's RDB file and loads it in place of the dataset.
async fn full_sync(
    shared: &Arc<Shared>,
    me: usize,
    generation: u64,
    inb: &mut Inbound,
) -> Result<(), String> {
    // Newlines keep the link alive while the primary prepares the file.
    let header = loop {
        let line = inb.line().await?;
        if !line.is_empty() {
            break line;
        }
    };
    let len: usize = header
        .strip_prefix('$')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("unexpected start of the RDB transfer: {header:?}"))?;
    tracing::info!("MASTER <-> REPLICA sync: receiving {len} bytes from master to disk");
    let dir = std::path::PathBuf::from(shared.config.get("dir"));
    let tmp = dir.join(format!("temp-repl-{}.rdb", std::process::id()));
    let mut file = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let mut left = len;
    while left > 0 {
        if inb.pending().is_empty() {
            inb.fill().await?;
        }
        let n = left.min(inb.pending().len());
        std::io::Write::write_all(&mut file, &inb.pending()[..n])
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        inb.consume(n);
        left -= n;
        shared.repl.last_io_ms.store(unix_ms(), Ordering::Relaxed);
    }
    drop(file);
    if !current(shared, generation) {
        let _ = std::fs::remove_file(&tmp);
        return Ok(());
    }
    let started = Instant::now();
    let txn = crate::rdb::hold_all(shared, me, 0).await;
    crate::rdb::empty_dataset(&txn, shared).await;
    let loaded = crate::rdb::load(&txn, shared, &tmp, true, true).await;
    drop(txn);
    let _ = std::fs::remove_file(&tmp);
    let loaded = loaded?;
    tracing::info!(
        "MASTER <-> REPLICA sync: loaded {} keys in {} ms",
        loaded.keys,
        started.elapsed().as_millis()
    );
    Ok(())
}

/// Connects the local client that applies the stream (see the module doc).
async fn master_client(shared: &Arc<Shared>) -> Result<TcpStream, String> {
    let what = "the master client's loopback connection";
    let mut inb = Inbound::connect("127.0.0.1", shared.port, what).await?;
    let pass = shared.config.get("requirepass");
    if !pass.is_empty() {
        call_ok(&mut inb, &[b"AUTH", pass.as_bytes()], "master client AUTH").await?;
    }
    let id = call(&mut inb, &[b"CLIENT", b"ID"]).await?;
    let id: u64 = id
        .strip_prefix(':')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("master client CLIENT ID: {id}"))?;
    call_ok(
        &mut inb,
        &[b"CLIENT", b"SETNAME", b"master"],
        "master client SETNAME",
    )
    .await?;
    // Its commands are the primary's: nothing to answer (and nothing to read back).
    send(&mut inb.stream, &[b"CLIENT", b"REPLY", b"OFF"]).await?;
    shared.repl.master_client_id.store(id, Ordering::SeqCst);
    Ok(inb.stream)
}

/// Applies the primary's commands until the link breaks or REPLICAOF changes the target.
async fn stream_commands(
    shared: &Arc<Shared>,
    generation: u64,
    inb: &mut Inbound,
    applier: &mut Option<TcpStream>,
) -> Result<(), String> {
    let applier = applier.as_mut().expect("the master client is connected");
    let repl = &shared.repl;
    let limits = Limits::default();
    let mut parser = RequestParser::new();
    let mut last_ack = Instant::now();
    let mut out = Vec::new();
    loop {
        if !current(shared, generation) {
            return Ok(());
        }
        // Every whole command buffered: forwarded in one write, then counted.
        let mut ack_now = false;
        out.clear();
        let mut advanced = 0i64;
        loop {
            let pending = inb.pending();
            let consumed = match parser.parse(pending, &limits) {
                Ok(Parsed::Complete { consumed }) => consumed,
                Ok(Parsed::Incomplete { .. }) => break,
                Err(e) => return Err(format!("protocol error in the primary's stream: {e:?}")),
            };
            let argc = parser.argc();
            if argc > 0 {
                let name = parser.arg(pending, 0).to_ascii_lowercase();
                if name == b"replconf" {
                    if argc >= 2 && parser.arg(pending, 1).eq_ignore_ascii_case(b"getack") {
                        ack_now = true;
                    }
                } else if name != b"ping" {
                    out.extend_from_slice(&pending[..consumed]);
                }
            }
            inb.consume(consumed);
            advanced += consumed as i64;
        }
        if !out.is_empty() {
            let BufResult(res, buf) = applier.write_all(std::mem::take(&mut out)).await;
            out = buf;
            res.map_err(|e| format!("the master client: {e}"))?;
        }
        let offset = repl.offset.fetch_add(advanced, Ordering::SeqCst) + advanced;
        if ack_now || (advanced > 0 && last_ack.elapsed() >= Duration::from_secs(1)) {
            last_ack = Instant::now();
            let o = offset.to_string();
            send(&mut inb.stream, &[b"REPLCONF", b"ACK", o.as_bytes()]).await?;
        }
        inb.fill().await?;
        repl.last_io_ms.store(unix_ms(), Ordering::Relaxed);
    }
}
