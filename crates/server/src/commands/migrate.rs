//! MIGRATE (Redis's `cluster.c`: `migrateCommand`, `migrateGetSocket`,
//! `migrateCloseTimedoutSockets`): DUMPs keys, RESTOREs them on another server (Redis,
//! Valkey or Skerry) and deletes them here unless COPY.
//!
//! `MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
//! [AUTH2 username password] [KEYS key [key ...]]`
//!
//! As Redis does: the keys that exist are DUMPed (the same payloads as DUMP: chunked strings
//! and grouped collections included) and sent in one pipelined batch, `AUTH` first when
//! asked, `SELECT db` when the cached connection's last database differs, then one
//! `RESTORE key ttl payload [REPLACE]` per key with its remaining TTL in ms. Every reply line
//! is read; a key whose RESTORE the target acknowledged is deleted here (unless COPY), the
//! others stay. Replies: `+OK`, `+NOKEY` when none of the keys exists, the target's first
//! error as `ERR Target instance replied with error: ...`, and `IOERR error or timeout
//! ...` on a socket error or time-out (connecting, writing or reading, each step within
//! `timeout` ms; `timeout` <= 0 means 1000). A socket error before the first reply (not a
//! time-out) closes the connection and tries once more on a new one: a cached connection the
//! target closed meanwhile costs no error.
//!
//! **Connections.** The connections to one `host:port` live on one worker, chosen by a hash
//! of `host:port`, so that the process keeps one cached connection per target as Redis does
//! (and INFO's `migrate_cached_sockets` counts as Redis's). The DUMPed payloads travel to
//! that worker (a job that does not touch its shard, so it starts even while a transaction
//! holds the worker), which talks to the target through a compio `TcpStream`, awaited like
//! any other I/O: every worker goes on serving its clients while a MIGRATE waits, and the
//! connection's worker gets the outcome back. A cached connection is taken out of the cache
//! while a MIGRATE uses it (a second MIGRATE to the same target meanwhile opens one of its
//! own, not cached). At most [`CACHE_ITEMS`] are cached (Redis's
//! `MIGRATE_SOCKET_CACHE_ITEMS`; when full, one of the worker's idle ones is dropped, or the
//! new one is not kept), each closed once unused for more than [`CACHE_TTL`] (Redis's 10 s)
//! by a once-a-second sweep that runs on a worker while it has cached connections.
//!
//! **Consistency across workers.** Redis runs MIGRATE alone, so the keys it DUMPs are the
//! keys it deletes. Here the keys' owners are held (as MSET or DEL across workers hold
//! them) only while the values are DUMPed, and again while the acknowledged keys are
//! deleted: never while the network is waited for. In between, other clients may write the
//! keys. So, while the values are DUMPed, each key gets a WATCH flag on its owner (the
//! mechanism of WATCH/EXEC: any write, expiry, deletion, FLUSHDB or SWAPDB of the key sets
//! it), and an acknowledged key is deleted only when its flag is still clear: a write that
//! came after the DUMP is kept here (the target holds the value as it was at the DUMP),
//! never lost silently. Flags are removed at the end, whatever way the command ends.
//!
//!
//! **Inside MULTI and scripts** (`migrate_in_txn`) the transaction already holds every
//! worker, for the whole command: as in Redis, nothing else runs while the target is
//! waited for, so no flags are needed and the acknowledged keys are deleted in the same
//! transaction.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use compio::buf::{BufResult, IntoInner, IoBuf};
use compio::io::{AsyncRead, AsyncWrite};
use compio::net::TcpStream;
use smallvec::SmallVec;

use super::{is, parse_i64};
use crate::conn::Conn;
use crate::reply::errors::{NOT_INT, SYNTAX};
use crate::slot;
use crate::worker::{local_shard, Envelope, Job, Shard, Shared, Txn};

/// At most this many cached connections in the process (Redis's
/// `MIGRATE_SOCKET_CACHE_ITEMS`).
pub const CACHE_ITEMS: usize = 64;
/// A cached connection unused for longer than this is closed (Redis's
/// `MIGRATE_SOCKET_CACHE_TTL`).
pub const CACHE_TTL: Duration = Duration::from_secs(10);
/// How often a worker with cached connections looks for stale ones (Redis: once a second,
/// from `serverCron`).
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Cached connections over every worker (INFO's `migrate_cached_sockets`).
static CACHED: AtomicUsize = AtomicUsize::new(0);

/// The number of cached MIGRATE connections, over every worker.
pub fn cached_sockets() -> usize {
    CACHED.load(Ordering::Relaxed)
}

/// A cached connection to one `host:port`.
struct Cached {
    /// None while a MIGRATE uses it.
    stream: Option<TcpStream>,
    /// The database last SELECTed on it; -1: unknown (SELECT next time).
    last_dbid: i64,
    last_use: Instant,
}

thread_local! {
    /// This worker's cached connections, by `host:port`.
    static CACHE: RefCell<foldhash::HashMap<Vec<u8>, Cached>> = RefCell::new(Default::default());
    /// The sweep of stale connections runs on this worker.
    static SWEEPING: Cell<bool> = const { Cell::new(false) };
}

/// A connection a MIGRATE uses. Dropped (not given back with [`put_back`]), it is closed
/// and its cache entry goes: Redis's `migrateCloseSocket` after a socket error.
struct Sock {
    /// `host:port`.
    name: Vec<u8>,
    /// None once given back.
    stream: Option<TcpStream>,
    last_dbid: i64,
    /// Taken from the cache (goes back there when it is still good).
    cached: bool,
    /// Bytes read past the last reply line.
    rbuf: Vec<u8>,
}

impl Sock {
    fn new(name: &[u8], stream: TcpStream, last_dbid: i64, cached: bool) -> Sock {
        Sock {
            name: name.to_vec(),
            stream: Some(stream),
            last_dbid,
            cached,
            rbuf: Vec::new(),
        }
    }

    fn stream(&mut self) -> &mut TcpStream {
        self.stream.as_mut().expect("a connection in use")
    }
}

impl Drop for Sock {
    fn drop(&mut self) {
        if self.cached {
            forget(&self.name);
        }
    }
}

/// Why a socket step failed; Redis retries unless it timed out (`errno != ETIMEDOUT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IoFail {
    TimedOut,
    Broken,
}

fn forget(name: &[u8]) {
    CACHE.with_borrow_mut(|c| {
        if c.remove(name).is_some() {
            CACHED.fetch_sub(1, Ordering::Relaxed);
        }
    });
}

/// Closes the cached connections unused for longer than [`CACHE_TTL`]; false when none is
/// left on this worker.
fn sweep() -> bool {
    CACHE.with_borrow_mut(|c| {
        let before = c.len();
        c.retain(|_, e| e.stream.is_none() || e.last_use.elapsed() <= CACHE_TTL);
        CACHED.fetch_sub(before - c.len(), Ordering::Relaxed);
        !c.is_empty()
    })
}

fn start_sweeping() {
    if SWEEPING.replace(true) {
        return;
    }
    compio::runtime::spawn(async {
        loop {
            compio::time::sleep(SWEEP_EVERY).await;
            if !sweep() {
                break;
            }
        }
        SWEEPING.set(false);
    })
    .detach();
}

/// Why no connection could be had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ConnectFail {
    /// The address does not resolve, or the connection did not complete within the
    /// time-out: Redis's "connecting" error.
    Unreachable,
    /// The connection failed at once (refused, ...). Redis's blocking connect waits only for
    /// the socket to be writable, takes it as connected, and fails writing to it.
    Refused,
}

/// Redis's `atoi` of the port (leading digits; 0 without any).
fn atoi(b: &[u8]) -> u64 {
    b.iter()
        .take_while(|c| c.is_ascii_digit())
        .take(19)
        .fold(0, |n, &c| n * 10 + u64::from(c - b'0'))
}

/// Connects to `host:port` within `timeout`.
async fn connect(host: &[u8], port: &[u8], timeout: Duration) -> Result<TcpStream, ConnectFail> {
    use compio::net::ToSocketAddrsAsync;
    let host = std::str::from_utf8(host).map_err(|_| ConnectFail::Unreachable)?;
    // (An int's low 16 bits, as the port Redis's getaddrinfo ends up with.)
    let port = atoi(port) as u16;
    let addr = compio::time::timeout(timeout, (host, port).to_socket_addrs_async())
        .await
        .ok()
        .and_then(Result::ok)
        .and_then(|mut a| a.next())
        .ok_or(ConnectFail::Unreachable)?;
    let stream = compio::time::timeout(timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| ConnectFail::Unreachable)?
        .map_err(|_| ConnectFail::Refused)?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// The cached connection to `name` (`host:port`), or a new one (cached when there is
/// room).
async fn get_socket(
    name: &[u8],
    host: &[u8],
    port: &[u8],
    timeout: Duration,
) -> Result<Sock, ConnectFail> {
    let found = CACHE.with_borrow_mut(|c| {
        c.get_mut(name).map(|e| {
            e.last_use = Instant::now();
            (e.stream.take(), e.last_dbid)
        })
    });
    match found {
        Some((Some(stream), last_dbid)) => return Ok(Sock::new(name, stream, last_dbid, true)),
        Some((None, _)) => {
            // Another MIGRATE of this worker uses the cached one: a connection of its own.
            let stream = connect(host, port, timeout).await?;
            return Ok(Sock::new(name, stream, -1, false));
        }
        None => {}
    }
    let stream = connect(host, port, timeout).await?;
    let cached = CACHE.with_borrow_mut(|c| {
        if c.contains_key(name) {
            // Cached by another MIGRATE while this one connected.
            return false;
        }
        if CACHED.load(Ordering::Relaxed) >= CACHE_ITEMS {
            // Full: drop one of this worker's idle ones (Redis drops one at random).
            let Some(victim) = c
                .iter()
                .find(|(_, e)| e.stream.is_some())
                .map(|(k, _)| k.clone())
            else {
                return false;
            };
            c.remove(&victim);
            CACHED.fetch_sub(1, Ordering::Relaxed);
        }
        c.insert(
            name.to_vec(),
            Cached {
                stream: None,
                last_dbid: -1,
                last_use: Instant::now(),
            },
        );
        CACHED.fetch_add(1, Ordering::Relaxed);
        true
    });
    if cached {
        start_sweeping();
    }
    Ok(Sock::new(name, stream, -1, cached))
}

/// Gives a connection in good state back to the cache (closed when it was not cached or its
/// entry went meanwhile).
fn put_back(mut sock: Sock) {
    if !sock.cached || !sock.rbuf.is_empty() {
        return;
    }
    CACHE.with_borrow_mut(|c| {
        if let Some(e) = c.get_mut(&sock.name) {
            if e.stream.is_none() {
                e.stream = sock.stream.take();
                e.last_dbid = sock.last_dbid;
                e.last_use = Instant::now();
                sock.cached = false;
            }
        }
    });
}

/// Writes `buf`, each write making progress within `timeout`.
async fn write_all(
    stream: &mut TcpStream,
    mut buf: Vec<u8>,
    timeout: Duration,
) -> Result<(), IoFail> {
    let mut pos = 0;
    while pos < buf.len() {
        let BufResult(res, slice) = compio::time::timeout(timeout, stream.write(buf.slice(pos..)))
            .await
            .map_err(|_| IoFail::TimedOut)?;
        buf = slice.into_inner();
        match res {
            Ok(n) if n > 0 => pos += n,
            _ => return Err(IoFail::Broken),
        }
    }
    Ok(())
}

/// Reads one reply line (without its CRLF) within `timeout`. An empty line fails, as
/// Redis's `connSyncReadLine` returning 0.
async fn read_line(sock: &mut Sock, timeout: Duration) -> Result<Vec<u8>, IoFail> {
    loop {
        if let Some(nl) = memchr::memchr(b'\n', &sock.rbuf) {
            let mut line: Vec<u8> = sock.rbuf.drain(..=nl).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.is_empty() {
                return Err(IoFail::Broken);
            }
            return Ok(line);
        }
        let BufResult(res, got) =
            compio::time::timeout(timeout, sock.stream().read(Vec::with_capacity(4096)))
                .await
                .map_err(|_| IoFail::TimedOut)?;
        match res {
            Ok(n) if n > 0 => sock.rbuf.extend_from_slice(&got),
            _ => return Err(IoFail::Broken),
        }
    }
}

/// Appends a RESP array of bulk strings.
fn push_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    let mut n = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(n.format(args.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        out.push(b'$');
        out.extend_from_slice(n.format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// MIGRATE's options.
#[derive(Debug)]
struct Args<'a> {
    copy: bool,
    replace: bool,
    /// (username, password).
    auth: Option<(Option<&'a [u8]>, &'a [u8])>,
    keys: &'a [&'a [u8]],
    timeout: Duration,
    dbid: i64,
}

/// Parses the options as `migrateCommand` does (options, then timeout, then db).
fn parse<'a>(a: &'a [&'a [u8]]) -> Result<Args<'a>, &'static str> {
    let (mut copy, mut replace) = (false, false);
    let mut auth = None;
    let mut keys = &a[3..4];
    let mut j = 6;
    while j < a.len() {
        let more = a.len() - 1 - j;
        if is(a[j], "copy") {
            copy = true;
        } else if is(a[j], "replace") {
            replace = true;
        } else if is(a[j], "auth") {
            if more < 1 {
                return Err(SYNTAX);
            }
            auth = Some((None, a[j + 1]));
            j += 1;
        } else if is(a[j], "auth2") {
            if more < 2 {
                return Err(SYNTAX);
            }
            auth = Some((Some(a[j + 1]), a[j + 2]));
            j += 2;
        } else if is(a[j], "keys") {
            if !a[3].is_empty() {
                return Err("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string");
            }
            keys = &a[j + 1..];
            break;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    let timeout = parse_i64(a[5]).ok_or(NOT_INT)?;
    let dbid = parse_i64(a[4]).ok_or(NOT_INT)?;
    let timeout = if timeout <= 0 { 1000 } else { timeout };
    Ok(Args {
        copy,
        replace,
        auth,
        keys,
        timeout: Duration::from_millis(timeout as u64),
        dbid,
    })
}

/// The key arguments of MIGRATE (Redis's `migrateGetKeys`): the key argument, or with KEYS
/// the keys after it (none when the key argument is not empty: MIGRATE's error).
pub fn keys_migrate(argv: &[&[u8]]) -> SmallVec<[usize; 8]> {
    let (mut first, mut num) = (3, 1);
    let mut i = 6;
    while i < argv.len() {
        if is(argv[i], "keys") {
            if argv[3].is_empty() {
                first = i + 1;
                num = argv.len() - first;
            } else {
                num = 0;
            }
            break;
        }
        if is(argv[i], "auth") {
            i += 1;
        } else if is(argv[i], "auth2") {
            i += 2;
        }
        i += 1;
    }
    (first..first + num).filter(|&p| p < argv.len()).collect()
}

/// One key DUMPed.
struct Dumped {
    key: Vec<u8>,
    payload: Vec<u8>,
    expire_at_ms: i64,
    worker: usize,
    /// Set by any change of the key after its DUMP (None with COPY: nothing to delete).
    changed: Option<Arc<AtomicBool>>,
}

/// The WATCH flags of DUMPed keys, removed from their owners when dropped (whatever way
/// the command ends).
struct Flags {
    shared: Arc<Shared>,
    me: usize,
    db: usize,
    flags: Vec<(usize, Vec<u8>, Arc<AtomicBool>)>,
}

impl Drop for Flags {
    fn drop(&mut self) {
        for (w, key, flag) in std::mem::take(&mut self.flags) {
            let db = self.db;
            let job: Job = Box::new(move |s: &mut Shard| s.keyspace.unwatch_cas(db, &key, &flag));
            if w == self.me {
                if let Ok(mut s) = local_shard().try_borrow_mut() {
                    job(&mut s);
                    continue;
                }
            }
            let _ = self.shared.inboxes[w].send(Envelope::job(0, job));
        }
    }
}

/// DUMPs the keys that exist, their owners held meanwhile; with `watch`, each gets a flag
/// that any later change sets. Err: the reply of a failed read.
/// Inside a transaction (`held`: it holds every worker) no flag is taken.
async fn snapshot(
    c: &Conn,
    keys: &[&[u8]],
    watch: bool,
    flags: &mut Flags,
    held: Option<&Txn>,
) -> Result<Vec<Dumped>, String> {
    let workers = c.shared.workers;
    let mut groups: Vec<Vec<(usize, Vec<u8>)>> = vec![Vec::new(); workers];
    for (i, k) in keys.iter().enumerate() {
        groups[slot::owner(k, workers)].push((i, k.to_vec()));
    }
    let owners: Vec<usize> = (0..workers).filter(|&w| !groups[w].is_empty()).collect();
    let watch = watch && held.is_none();
    let own;
    let txn = match held {
        Some(t) => t,
        None => {
            own = Txn::begin(&c.shared, c.worker, owners.clone()).await;
            &own
        }
    };
    let (db, now) = (c.db, c.now_ms);
    let mut found: Vec<Option<Dumped>> = (0..keys.len()).map(|_| None).collect();
    for w in owners {
        let group = std::mem::take(&mut groups[w]);
        let names: Vec<Vec<u8>> = group.iter().map(|(_, k)| k.clone()).collect();
        let got = txn
            .run_resident(w, db, names, now, move |s| {
                let mut out = Vec::with_capacity(group.len());
                for (i, key) in group {
                    match super::dump::dump_payload(&mut s.keyspace, db, &key, now) {
                        Ok(Some((payload, expire_at_ms))) => {
                            let changed = watch.then(|| {
                                let f = Arc::new(AtomicBool::new(false));
                                s.keyspace.watch_cas(db, &key, f.clone());
                                f
                            });
                            out.push((i, key, payload, expire_at_ms, changed));
                        }
                        Ok(None) => {}
                        Err(super::dump::Unreadable) => {
                            let e = s.keyspace.take_error().unwrap_or_default();
                            return Err((out, e));
                        }
                    }
                }
                Ok(out)
            })
            .await?;
        let (got, failed) = match got {
            Ok(got) => (got, None),
            Err((got, e)) => (got, Some(e)),
        };
        for (i, key, payload, expire_at_ms, changed) in got {
            if let Some(f) = &changed {
                flags.flags.push((w, key.clone(), f.clone()));
            }
            found[i] = Some(Dumped {
                key,
                payload,
                expire_at_ms,
                worker: w,
                changed,
            });
        }
        if let Some(e) = failed {
            return Err(e);
        }
    }
    Ok(found.into_iter().flatten().collect())
}

/// Deletes the acknowledged keys inside the transaction `txn` that held their owners since
/// their DUMP (so none can have changed).
async fn delete_acked_in(c: &Conn, txn: &Txn, dumped: &[Dumped], acked: &[bool]) {
    let (db, now) = (c.db, c.now_ms);
    for (d, _) in dumped.iter().zip(acked).filter(|(_, ack)| **ack) {
        let key = d.key.clone();
        txn.run(d.worker, move |s| {
            s.keyspace.delete(db, &key, now);
        })
        .await;
    }
}

/// Deletes the acknowledged keys that did not change since their DUMP, their owners held
/// meanwhile, and removes every flag.
async fn delete_acked(c: &Conn, dumped: &[Dumped], acked: &[bool], flags: &mut Flags) {
    let workers = c.shared.workers;
    // Per worker: (key, its flag, acknowledged).
    type Step = Vec<(Vec<u8>, Arc<AtomicBool>, bool)>;
    let mut groups: Vec<Step> = vec![Vec::new(); workers];
    for (d, &ack) in dumped.iter().zip(acked) {
        if let Some(f) = &d.changed {
            groups[d.worker].push((d.key.clone(), f.clone(), ack));
        }
    }
    let owners: Vec<usize> = (0..workers).filter(|&w| !groups[w].is_empty()).collect();
    if owners.is_empty() {
        return;
    }
    let txn = Txn::begin(&c.shared, c.worker, owners.clone()).await;
    let (db, now) = (c.db, c.now_ms);
    for w in owners {
        let group = std::mem::take(&mut groups[w]);
        txn.run(w, move |s| {
            for (key, flag, ack) in group {
                s.keyspace.unwatch_cas(db, &key, &flag);
                if ack && !flag.load(Ordering::SeqCst) {
                    s.keyspace.delete(db, &key, now);
                }
            }
        })
        .await;
    }
    flags.flags.clear();
}

/// What to send to one target: everything owned, so that it can travel to the worker that
/// keeps the connections to `host:port`.
struct Transfer {
    host: Vec<u8>,
    port: Vec<u8>,
    /// (username, password).
    auth: Option<(Option<Vec<u8>>, Vec<u8>)>,
    dbid: i64,
    replace: bool,
    timeout: Duration,
    /// (key, TTL in ms (0: none), payload) of each key.
    restores: Vec<(Vec<u8>, i64, Vec<u8>)>,
}

/// How a transfer ended.
#[derive(Debug, PartialEq, Eq)]
enum Failure {
    Connect,
    Write,
    Read,
    /// The first error line the target replied (with its `-`).
    Target(Vec<u8>),
}

/// The keys the target acknowledged, and the failure if any.
type Outcome = (Vec<bool>, Option<Failure>);

/// Sends the RESTOREs of `t` to its target and reads the replies, on this worker's cached
/// connection to it (see the module doc for the retry).
async fn transfer(t: Transfer) -> Outcome {
    let name = [&t.host[..], b":", &t.port[..]].concat();
    let n = t.restores.len();
    let mut may_retry = true;
    loop {
        let mut sock = match get_socket(&name, &t.host, &t.port, t.timeout).await {
            Ok(sock) => sock,
            Err(ConnectFail::Unreachable) => return (vec![false; n], Some(Failure::Connect)),
            // As Redis: a failed write, tried once more.
            Err(ConnectFail::Refused) if may_retry => {
                may_retry = false;
                continue;
            }
            Err(ConnectFail::Refused) => return (vec![false; n], Some(Failure::Write)),
        };
        let mut cmd = Vec::new();
        if let Some((user, pass)) = &t.auth {
            match user {
                Some(u) => push_command(&mut cmd, &[b"AUTH", u, pass]),
                None => push_command(&mut cmd, &[b"AUTH", pass]),
            }
        }
        let select = sock.last_dbid != t.dbid;
        if select {
            let mut b = itoa::Buffer::new();
            push_command(&mut cmd, &[b"SELECT", b.format(t.dbid).as_bytes()]);
        }
        for (key, ttl, payload) in &t.restores {
            let mut b = itoa::Buffer::new();
            let ttl = b.format(*ttl).as_bytes();
            if t.replace {
                push_command(&mut cmd, &[b"RESTORE", key, ttl, payload, b"REPLACE"]);
            } else {
                push_command(&mut cmd, &[b"RESTORE", key, ttl, payload]);
            }
        }
        if let Err(fail) = write_all(sock.stream(), cmd, t.timeout).await {
            drop(sock);
            if fail != IoFail::TimedOut && may_retry {
                may_retry = false;
                continue;
            }
            return (vec![false; n], Some(Failure::Write));
        }
        // The AUTH and SELECT replies, then one per RESTORE.
        let mut pre_err: Option<Vec<u8>> = None;
        let mut pre_fail = None;
        for asked in [t.auth.is_some(), select] {
            if !asked || pre_fail.is_some() {
                continue;
            }
            match read_line(&mut sock, t.timeout).await {
                Ok(line) if line[0] == b'-' && pre_err.is_none() => pre_err = Some(line),
                Ok(_) => {}
                Err(f) => pre_fail = Some(f),
            }
        }
        if let Some(fail) = pre_fail {
            drop(sock);
            if fail != IoFail::TimedOut && may_retry {
                may_retry = false;
                continue;
            }
            return (vec![false; n], Some(Failure::Read));
        }
        let mut acked = vec![false; n];
        let mut target_err: Option<Vec<u8>> = None;
        let mut socket_fail = None;
        let mut read = 0;
        for ack in acked.iter_mut() {
            match read_line(&mut sock, t.timeout).await {
                Ok(line) => {
                    read += 1;
                    match pre_err.as_ref().or((line[0] == b'-').then_some(&line)) {
                        Some(e) => {
                            if target_err.is_none() {
                                // SELECT again next time.
                                sock.last_dbid = -1;
                                target_err = Some(e.clone());
                            }
                        }
                        None => *ack = true,
                    }
                }
                Err(f) => {
                    socket_fail = Some(f);
                    break;
                }
            }
        }
        match socket_fail {
            Some(fail) => {
                // Closed (Redis's migrateCloseSocket); tried again only when nothing was
                // read and it did not time out.
                drop(sock);
                if target_err.is_none() && read == 0 && fail != IoFail::TimedOut && may_retry {
                    may_retry = false;
                    continue;
                }
            }
            None => {
                if target_err.is_none() {
                    sock.last_dbid = t.dbid;
                }
                put_back(sock);
            }
        }
        let failure = match (target_err, socket_fail) {
            (Some(e), _) => Some(Failure::Target(e)),
            (None, Some(_)) => Some(Failure::Read),
            (None, None) => None,
        };
        return (acked, failure);
    }
}

/// The worker that keeps the connections to `name` (`host:port`): one per target in the
/// whole process, as Redis keeps one.
fn connection_worker(name: &[u8], workers: usize) -> usize {
    (crc32c::crc32c(name) as usize) % workers
}

/// Runs [`transfer`] on worker `w` (not touching its shard: it runs even while a
/// transaction holds `w`) and waits for its outcome.
async fn transfer_on(shared: &Shared, me: usize, w: usize, t: Transfer) -> Outcome {
    if w == me {
        return transfer(t).await;
    }
    let (tx, rx) = flume::bounded(1);
    let job: Job = Box::new(move |_s: &mut Shard| {
        compio::runtime::spawn(async move {
            let _ = tx.send(transfer(t).await);
        })
        .detach();
    });
    if shared.inboxes[w]
        .send(Envelope::job(crate::worker::UNHELD, job))
        .is_err()
    {
        panic!("worker {w} has stopped");
    }
    rx.recv_async().await.expect("worker dropped a job")
}

/// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
/// [AUTH2 username password] [KEYS key [key ...]]
pub async fn migrate(c: &mut Conn, a: &[&[u8]]) {
    migrate_with(c, a, None).await
}

/// MIGRATE inside EXEC or a script, whose transaction `txn` holds every worker.
pub async fn migrate_in_txn(c: &mut Conn, txn: &Txn, a: &[&[u8]]) {
    debug_assert!(txn.holds_all());
    migrate_with(c, a, Some(txn)).await
}

async fn migrate_with(c: &mut Conn, a: &[&[u8]], held: Option<&Txn>) {
    let args = match parse(a) {
        Ok(args) => args,
        Err(e) => return c.reply.error(e),
    };
    let mut flags = Flags {
        shared: c.shared.clone(),
        me: c.worker,
        db: c.db,
        flags: Vec::new(),
    };
    let mut dumped = match snapshot(c, args.keys, !args.copy, &mut flags, held).await {
        Ok(d) => d,
        Err(e) => return c.reply.error(&format!("ERR {e}")),
    };
    if dumped.is_empty() {
        return c.reply.simple("NOKEY");
    }
    let now = c.now_ms;
    let t = Transfer {
        host: a[1].to_vec(),
        port: a[2].to_vec(),
        auth: args.auth.map(|(u, p)| (u.map(<[u8]>::to_vec), p.to_vec())),
        dbid: args.dbid,
        replace: args.replace,
        timeout: args.timeout,
        restores: dumped
            .iter_mut()
            .map(|d| {
                let ttl = if d.expire_at_ms == 0 {
                    0
                } else {
                    (d.expire_at_ms - now).max(1)
                };
                (d.key.clone(), ttl, std::mem::take(&mut d.payload))
            })
            .collect(),
    };
    let name = [a[1], b":", a[2]].concat();
    let w = connection_worker(&name, c.shared.workers);
    let (acked, failure) = transfer_on(&c.shared, c.worker, w, t).await;
    if !args.copy && acked.contains(&true) {
        match held {
            Some(txn) => delete_acked_in(c, txn, &dumped, &acked).await,
            None => delete_acked(c, &dumped, &acked, &mut flags).await,
        }
    }
    // (Otherwise the flags go when `flags` is dropped, without holding any worker.)
    match failure {
        None => c.reply.ok(),
        Some(Failure::Connect) => c
            .reply
            .error("IOERR error or timeout connecting to the client"),
        Some(Failure::Write) => c
            .reply
            .error("IOERR error or timeout writing to target instance"),
        Some(Failure::Read) => c
            .reply
            .error("IOERR error or timeout reading to target instance"),
        Some(Failure::Target(e)) => {
            let mut msg = b"ERR Target instance replied with error: ".to_vec();
            msg.extend_from_slice(&e[1..]);
            c.reply.error(&String::from_utf8_lossy(&msg));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<Vec<u8>> {
        s.split(' ')
            .map(|a| {
                if a == "\"\"" {
                    Vec::new()
                } else {
                    a.as_bytes().to_vec()
                }
            })
            .collect()
    }

    #[test]
    fn options_and_key_positions() {
        let v = argv("MIGRATE h 1 \"\" 0 0 AUTH2 u p COPY KEYS a b");
        let a: Vec<&[u8]> = v.iter().map(|x| &x[..]).collect();
        let p = parse(&a).expect("parses");
        assert!(p.copy && !p.replace);
        assert_eq!(p.auth, Some((Some(&b"u"[..]), &b"p"[..])));
        assert_eq!(p.keys, &[&b"a"[..], &b"b"[..]]);
        assert_eq!(p.timeout, Duration::from_millis(1000));
        assert_eq!(&keys_migrate(&a)[..], &[11, 12]);
        let v = argv("MIGRATE h 1 k 0 5 KEYS a");
        let a: Vec<&[u8]> = v.iter().map(|x| &x[..]).collect();
        assert!(parse(&a).err().unwrap().contains("empty string"));
        assert!(keys_migrate(&a).is_empty());
        let v = argv("MIGRATE h 1 k x 5 AUTH");
        let a: Vec<&[u8]> = v.iter().map(|x| &x[..]).collect();
        assert_eq!(parse(&a).err(), Some(SYNTAX));
        let v = argv("MIGRATE h 1 k x 5");
        let a: Vec<&[u8]> = v.iter().map(|x| &x[..]).collect();
        assert_eq!(parse(&a).err(), Some(NOT_INT));
    }

    #[test]
    fn commands_are_resp_arrays() {
        let mut out = Vec::new();
        push_command(&mut out, &[b"SELECT", b"9"]);
        assert_eq!(out, b"*2\r\n$6\r\nSELECT\r\n$1\r\n9\r\n");
    }
}
