//! End-to-end test harness: starts the real `skerry` binary (or Debian's `redis-server` when
//! `SKERRY_TEST_SERVER=redis`, to check that the tests describe real Redis behaviour) on a free
//! port in its own temporary directory, and offers clients to talk to it.

#![allow(dead_code)]

pub mod diff;
pub mod migrate;
pub mod resp;

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use resp::Value;

/// Default time to wait for a reply before failing a test.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// True when the tests run against Debian's redis-server instead of skerry.
pub fn is_redis() -> bool {
    std::env::var("SKERRY_TEST_SERVER").is_ok_and(|v| v == "redis")
}

/// Returns early from a test that checks Skerry-only behaviour when running against Redis.
#[macro_export]
macro_rules! skip_if_redis {
    () => {
        if $crate::common::is_redis() {
            eprintln!("skipped: Skerry-only behaviour");
            return;
        }
    };
}

static PORTS: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
static DIR_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A port that was free a moment ago and that this process has not handed out before.
pub fn free_port() -> u16 {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = l.local_addr().unwrap().port();
        let mut g = PORTS.lock().unwrap();
        if g.get_or_insert_with(HashSet::new).insert(port) {
            return port;
        }
    }
}

/// A temporary directory removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        let n = DIR_COUNTER.fetch_add(1, Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!("skerry-e2e-{}-{}", std::process::id(), n));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// How to start a server.
#[derive(Clone, Default)]
pub struct Opts {
    /// Contents of a config file written to `<dir>/skerry.conf` and passed as the first argument.
    pub config: Option<String>,
    /// Do not pass `--port` on the command line (the config file sets it).
    pub no_port_arg: bool,
    /// Extra command-line arguments.
    pub args: Vec<String>,
    /// Start the reference redis-server ([`redis_server_bin`]) whatever `SKERRY_TEST_SERVER`
    /// says: the other side of a differential test.
    pub reference: bool,
}

/// A running server process. Killed (SIGKILL) on drop; its directory is removed.
pub struct Server {
    child: Option<Child>,
    port: u16,
    dir: TempDir,
    opts: Opts,
    log_path: PathBuf,
}

/// The reference redis-server binary: `SKERRY_REDIS_SERVER` when set (scripts/test.sh
/// points it at the Redis 8.0 it builds), else Debian's `/usr/bin/redis-server`.
pub fn redis_server_bin() -> String {
    std::env::var("SKERRY_REDIS_SERVER")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "/usr/bin/redis-server".to_string())
}

impl Opts {
    fn is_redis(&self) -> bool {
        self.reference || is_redis()
    }

    fn binary(&self) -> String {
        if self.is_redis() {
            redis_server_bin()
        } else {
            env!("CARGO_BIN_EXE_skerry").to_string()
        }
    }
}

impl Server {
    /// Starts a server with the given extra arguments and waits until it answers PING.
    pub fn start(args: &[&str]) -> Server {
        Server::start_opts(Opts {
            args: args.iter().map(|s| s.to_string()).collect(),
            ..Opts::default()
        })
    }

    /// Starts the reference redis-server ([`redis_server_bin`]) with the given extra
    /// arguments (Skerry-only flags such as `--threads` are dropped), for differential tests.
    pub fn start_reference(args: &[&str]) -> Server {
        Server::start_opts(Opts {
            args: args.iter().map(|s| s.to_string()).collect(),
            reference: true,
            ..Opts::default()
        })
    }

    /// Starts the reference redis-server with `args` when it is Redis 8.0 or later (the
    /// tests that compare with it use 8.0's commands and replies); None, said on stderr,
    /// when it is older (set `SKERRY_REDIS_SERVER` to an 8.0 binary).
    pub fn start_reference_8(args: &[&str]) -> Option<Server> {
        let s = Server::start_reference(args);
        let version = redis_version(&mut s.raw());
        let major: u32 = version
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        if major < 8 {
            eprintln!(
                "SKIPPED: the reference redis-server is {version:?}; this test needs Redis 8.0 \
                 (set SKERRY_REDIS_SERVER to its binary)"
            );
            return None;
        }
        Some(s)
    }

    /// Starts a server with a config file (Redis syntax) as the first argument.
    /// If `port_in_config` is true the caller's config must contain `port {PORT}`: the text
    /// `{PORT}` is replaced by the chosen port and no `--port` argument is passed.
    pub fn start_with_config(config: &str, port_in_config: bool, args: &[&str]) -> Server {
        Server::start_opts(Opts {
            config: Some(config.to_string()),
            no_port_arg: port_in_config,
            args: args.iter().map(|s| s.to_string()).collect(),
            ..Opts::default()
        })
    }

    pub fn start_opts(opts: Opts) -> Server {
        let mut last_err = String::new();
        for _attempt in 0..4 {
            let dir = TempDir::new();
            let port = free_port();
            let mut s = Server {
                child: None,
                port,
                log_path: dir.path().join("server.log"),
                dir,
                opts: opts.clone(),
            };
            match s.spawn_and_wait() {
                Ok(()) => return s,
                Err(e) => last_err = e,
            }
        }
        panic!("server did not start: {last_err}");
    }

    /// Spawns the server with `opts` and waits for it to exit (for start-up failures).
    /// Returns the exit status and everything it logged.
    pub fn run_expect_exit(opts: Opts, timeout: Duration) -> (ExitStatus, String) {
        let dir = TempDir::new();
        let port = free_port();
        let mut s = Server {
            child: None,
            port,
            log_path: dir.path().join("server.log"),
            dir,
            opts,
        };
        s.spawn();
        let status = s
            .wait_exit(timeout)
            .expect("server was expected to exit but is still running");
        (status, s.log_contents())
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("skerry.conf")
    }

    fn command_line(&self) -> Vec<String> {
        let mut argv = Vec::new();
        if let Some(conf) = &self.opts.config {
            let path = self.config_path();
            if !path.exists() {
                fs::write(&path, conf.replace("{PORT}", &self.port.to_string()))
                    .expect("write config");
            }
            argv.push(path.to_string_lossy().into_owned());
        }
        if !self.opts.no_port_arg {
            argv.push("--port".into());
            argv.push(self.port.to_string());
        }
        argv.push("--dir".into());
        argv.push(self.dir.path().to_string_lossy().into_owned());
        if self.opts.is_redis() {
            // Redis 7 refuses DEBUG unless enabled; Skerry allows it. Skerry always keeps
            // every acknowledged write: a test that names an `--appendfsync` policy (to
            // restart and find its writes) gets Redis's AOF with that policy.
            let durable = self.opts.args.iter().any(|a| a == "--appendfsync");
            argv.extend(
                [
                    "--save",
                    "",
                    "--appendonly",
                    if durable { "yes" } else { "no" },
                    "--enable-debug-command",
                    "yes",
                ]
                .map(String::from),
            );
            let mut it = self.opts.args.iter();
            while let Some(a) = it.next() {
                // Skerry-only flags with one value.
                if a == "--threads" || a == "--data-size" {
                    it.next();
                    continue;
                }
                argv.push(a.clone());
            }
        } else {
            argv.extend(self.opts.args.iter().cloned());
        }
        argv
    }

    fn spawn(&mut self) {
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .expect("open log");
        let log2 = log.try_clone().unwrap();
        let child = Command::new(self.opts.binary())
            .args(self.command_line())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2))
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", self.opts.binary()));
        self.child = Some(child);
    }

    fn spawn_and_wait(&mut self) -> Result<(), String> {
        self.spawn();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                return Err(format!(
                    "server exited early with {st}; log:\n{}",
                    self.log_contents()
                ));
            }
            if ping_once(self.port) {
                // Make sure the process answering is ours (a port clash would make ours exit).
                std::thread::sleep(Duration::from_millis(5));
                if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                    return Err(format!("server exited with {st} after answering"));
                }
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = self.child.as_mut().unwrap().kill();
                let _ = self.child.as_mut().unwrap().wait();
                return Err(format!(
                    "server did not answer PING within 10 s; log:\n{}",
                    self.log_contents()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server (SIGKILL), starts it again with the same directory, port and
    /// options, and waits for it to exit (a start that must fail). Returns the exit status
    /// and the whole log.
    pub fn restart_expect_exit(&mut self, timeout: Duration) -> (ExitStatus, String) {
        self.kill();
        self.spawn();
        let status = self
            .wait_exit(timeout)
            .expect("server was expected to exit but is still running");
        (status, self.log_contents())
    }

    /// Kills the server (SIGKILL) and starts it again with the same directory, port and options.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn_and_wait().expect("restart");
    }

    /// Starts the server again after it exited (same directory, port and options).
    pub fn start_again(&mut self) {
        self.spawn_and_wait().expect("start again");
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Sends a signal to the server process.
    pub fn signal(&self, sig: i32) {
        let pid = self.pid() as i32;
        // SAFETY: plain kill(2) on our own child.
        let rc = unsafe { libc::kill(pid, sig) };
        assert_eq!(rc, 0, "kill({pid}, {sig})");
    }

    /// Waits for the process to exit; `None` on timeout.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            let c = self.child.as_mut().expect("no child");
            if let Some(st) = c.try_wait().unwrap() {
                return Some(st);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("no child").id()
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn config_file(&self) -> PathBuf {
        self.config_path()
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Everything the server wrote to stdout and stderr so far.
    pub fn log_contents(&self) -> String {
        fs::read(&self.log_path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// Waits until the log contains `needle` (case-sensitive); returns whether it did.
    pub fn wait_for_log(&self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.log_contents().contains(needle) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A RESP2 `redis` crate connection.
    pub fn client(&self) -> redis::Connection {
        self.client_url(&self.url())
    }

    /// A RESP3 `redis` crate connection (`?protocol=resp3`).
    pub fn client_resp3(&self) -> redis::Connection {
        self.client_url(&format!("{}?protocol=resp3", self.url()))
    }

    pub fn client_url(&self, url: &str) -> redis::Connection {
        let c = redis::Client::open(url).expect("client url");
        let con = c
            .get_connection_with_timeout(REPLY_TIMEOUT)
            .expect("connect");
        con.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
        con.set_write_timeout(Some(REPLY_TIMEOUT)).unwrap();
        con
    }

    /// A raw TCP connection speaking hand-written RESP.
    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.log_contents();
            let tail = &log[log.len().saturating_sub(4000)..];
            eprintln!(
                "---- server log tail (port {}) ----\n{tail}\n----",
                self.port
            );
        }
        self.kill();
    }
}

fn ping_once(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(
        &format!("127.0.0.1:{port}").parse().unwrap(),
        Duration::from_millis(500),
    ) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"*1\r\n$4\r\nPING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(n) if n > 0 => buf[0] == b'+' || buf[0] == b'-',
        _ => false,
    }
}

/// A raw TCP client: write bytes, read decoded replies.
pub struct Raw {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    pub fn connect(port: u16) -> Raw {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
        stream.set_write_timeout(Some(REPLY_TIMEOUT)).unwrap();
        Raw {
            stream,
            buf: Vec::new(),
        }
    }

    /// Wraps an already connected stream.
    pub fn from_stream(stream: TcpStream) -> Raw {
        stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
        stream.set_write_timeout(Some(REPLY_TIMEOUT)).unwrap();
        Raw {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write to server");
    }

    /// Like `send` but returns the error instead of panicking (the server may have closed).
    pub fn try_send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Reads more bytes into the buffer. Returns the count (0 = EOF).
    fn fill(&mut self) -> std::io::Result<usize> {
        let mut chunk = vec![0u8; 64 * 1024];
        let n = self.stream.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// Reads one reply and returns its exact bytes.
    pub fn read_raw(&mut self) -> Vec<u8> {
        loop {
            if let Some((_, used)) = resp::decode(&self.buf) {
                let out = self.buf[..used].to_vec();
                self.buf.drain(..used);
                return out;
            }
            match self.fill() {
                Ok(0) => panic!(
                    "connection closed while waiting for a reply (buffered: {:?})",
                    preview(&self.buf)
                ),
                Ok(_) => {}
                Err(e) => panic!(
                    "error while waiting for a reply: {e} (buffered: {:?})\n{}",
                    preview(&self.buf),
                    self.server_state()
                ),
            }
        }
    }

    /// What the server says about its clients and itself (CLIENT LIST, INFO), asked over a
    /// new connection: put in the message of a reply that never came, so that a hang seen
    /// once in CI says which client waits and where.
    fn server_state(&self) -> String {
        let Ok(addr) = self.stream.peer_addr() else {
            return String::new();
        };
        let me = self
            .stream
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let ask = || -> std::io::Result<String> {
            let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
            stream.set_read_timeout(Some(Duration::from_secs(2)))?;
            let mut r = Raw {
                stream,
                buf: Vec::new(),
            };
            let mut out = format!("---- server state (this client: {me}) ----\n");
            for args in [&["CLIENT", "LIST"][..], &["INFO", "everything"][..]] {
                r.send(&resp::encode(args));
                loop {
                    if let Some((v, _)) = resp::decode(&r.buf) {
                        if let Value::Bulk(b) | Value::Verbatim(_, b) = v {
                            out.push_str(&String::from_utf8_lossy(&b));
                        }
                        r.buf.clear();
                        break;
                    }
                    if r.fill()? == 0 {
                        return Ok(out);
                    }
                }
            }
            Ok(out)
        };
        ask().unwrap_or_else(|e| format!("(server state not available: {e})"))
    }

    /// Reads one reply.
    pub fn read_value(&mut self) -> Value {
        let raw = self.read_raw();
        resp::decode(&raw).unwrap().0
    }

    /// Reads one reply, or `None` if none arrives within `timeout` (or the connection closes).
    pub fn try_read_value(&mut self, timeout: Duration) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some((v, used)) = resp::decode(&self.buf) {
                self.buf.drain(..used);
                return Some(v);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            self.stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .unwrap();
            let r = self.fill();
            self.stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
            match r {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return None
                }
                Err(_) => return None,
            }
        }
    }

    /// Sends a command (each argument a bulk string) and reads its reply.
    pub fn cmd(&mut self, args: &[&str]) -> Value {
        self.send(&resp::encode(args));
        self.read_value()
    }

    /// Sends a command with binary arguments and reads its reply.
    pub fn cmd_bytes(&mut self, args: &[&[u8]]) -> Value {
        self.send(&resp::encode(args));
        self.read_value()
    }

    /// Sends a command and returns the exact bytes of its reply.
    pub fn cmd_raw(&mut self, args: &[&str]) -> Vec<u8> {
        self.send(&resp::encode(args));
        self.read_raw()
    }

    /// Asserts that the server closes the connection (EOF or reset) within 10 s, with no
    /// further reply bytes. Returns any bytes that arrived before the close.
    pub fn expect_closed(&mut self) -> Vec<u8> {
        let deadline = Instant::now() + REPLY_TIMEOUT;
        loop {
            match self.fill() {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    panic!(
                        "connection was not closed by the server (buffered: {:?})",
                        preview(&self.buf)
                    )
                }
                Err(e) => panic!("unexpected read error {e}"),
            }
            if Instant::now() > deadline {
                panic!("connection was not closed by the server");
            }
        }
        std::mem::take(&mut self.buf)
    }

    /// Whether the server has closed the connection (checks within `timeout`).
    pub fn is_closed_within(&mut self, timeout: Duration) -> bool {
        self.stream.set_read_timeout(Some(timeout)).unwrap();
        let r = self.fill();
        self.stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
        match r {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => true,
            Err(_) => false,
        }
    }

    pub fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}

/// The start of a byte buffer as text, for panic messages.
fn preview(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(200)]).into_owned();
    if b.len() > 200 {
        format!("{s}... ({} bytes)", b.len())
    } else {
        s
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers for building expected values.

pub fn bulk(s: &str) -> Value {
    Value::Bulk(s.as_bytes().to_vec())
}

pub fn simple(s: &str) -> Value {
    Value::Simple(s.to_string())
}

pub fn ok() -> Value {
    simple("OK")
}

pub fn int(i: i64) -> Value {
    Value::Integer(i)
}

pub fn err(s: &str) -> Value {
    Value::Error(s.to_string())
}

pub fn arr(items: Vec<Value>) -> Value {
    Value::Array(items)
}

pub fn bulks(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|s| bulk(s)).collect())
}

/// Parses `key:value` lines of an INFO reply into pairs.
pub fn info_fields(info: &str) -> Vec<(String, String)> {
    info.lines()
        .filter(|l| !l.starts_with('#') && l.contains(':'))
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.to_string(), v.trim_end().to_string())
        })
        .collect()
}

/// The value of one INFO field.
pub fn info_field(info: &str, key: &str) -> Option<String> {
    info_fields(info)
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

/// Redis Cluster's key slot: CRC16/XMODEM of the hash tag (or the whole key) mod 16384, as
/// `crates/server/src/slot.rs` computes it; a key belongs to worker `slot % workers`.
pub fn key_slot(key: &[u8]) -> u16 {
    let mut k = key;
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                k = &key[open + 1..open + 1 + len];
            }
        }
    }
    let mut crc: u16 = 0;
    for &b in k {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

/// The first key `{prefix}{n}` (n = 0, 1, ...) owned by worker `w` of 2.
pub fn key_on(prefix: &str, w: usize) -> String {
    (0..)
        .map(|n| format!("{prefix}{n}"))
        .find(|k| key_slot(k.as_bytes()) as usize % 2 == w)
        .unwrap()
}

/// Waits until INFO clients reports `n` blocked clients.
pub fn wait_blocked(r: &mut Raw, n: u64) {
    let mut last = None;
    let ok = wait_until(Duration::from_secs(5), || {
        last = info_u64(r, "clients", "blocked_clients");
        last == Some(n)
    });
    assert!(ok, "blocked_clients stayed {last:?}, expected {n}");
}

/// A RESP3 connection (HELLO 3 sent).
pub fn resp3(s: &Server) -> Raw {
    let mut r = s.raw();
    assert!(matches!(r.cmd(&["HELLO", "3"]), Value::Map(_)));
    r
}

/// The server's `redis_version` (INFO server); empty when it has none.
pub fn redis_version(r: &mut Raw) -> String {
    let info = match r.cmd(&["INFO", "server"]) {
        Value::Bulk(b) | Value::Verbatim(_, b) => String::from_utf8_lossy(&b).into_owned(),
        _ => String::new(),
    };
    info_field(&info, "redis_version").unwrap_or_default()
}

/// Polls `f` until it returns true or `timeout` passes.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers for the persistence and storage tests.

impl Server {
    /// Replaces the command-line arguments used by the next `start_again` / `restart`.
    pub fn set_args(&mut self, args: &[&str]) {
        self.opts.args = args.iter().map(|s| s.to_string()).collect();
    }

    /// The default data file, `<dir>/skerry.data`.
    pub fn data_file(&self) -> PathBuf {
        self.dir.path().join("skerry.data")
    }

    /// Stops the server with SIGTERM and asserts it exits cleanly within 10 s.
    pub fn stop_clean(&mut self) {
        self.signal(libc::SIGTERM);
        let st = self.wait_exit(Duration::from_secs(10));
        assert!(
            st.is_some_and(|st| st.success()),
            "clean shutdown failed ({st:?}); log:\n{}",
            self.log_contents()
        );
        self.child = None;
    }
}

/// How long `appendfsync everysec` may take to make an acknowledged write durable ("within
/// about one second"), with a margin for a loaded machine.
pub const EVERYSEC_WAIT: Duration = Duration::from_millis(1500);

/// A small deterministic pseudo-random generator (SplitMix64).
#[derive(Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi` (hi exclusive).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo)
    }

    /// `len` pseudo-random bytes (every byte value, including `\r`, `\n` and NUL).
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(len);
        out
    }
}

/// One numeric field of an INFO section, read through a raw client.
pub fn info_u64(r: &mut Raw, section: &str, field: &str) -> Option<u64> {
    let info = r.cmd(&["INFO", section]).text();
    info_field(&info, field).and_then(|v| v.parse().ok())
}

/// One field of an INFO section, read through a raw client; panics, with the section,
/// when it is missing.
pub fn info_text(r: &mut Raw, section: &str, field: &str) -> String {
    let info = r.cmd(&["INFO", section]).text();
    info_field(&info, field).unwrap_or_else(|| panic!("INFO {section} has no {field}: {info}"))
}

/// Sends all `cmds` in one write and reads one reply per command.
pub fn pipeline<A: AsRef<[u8]>>(r: &mut Raw, cmds: &[Vec<A>]) -> Vec<Value> {
    let mut out = Vec::new();
    for c in cmds {
        out.extend_from_slice(&resp::encode(c));
    }
    r.send(&out);
    cmds.iter().map(|_| r.read_value()).collect()
}

impl Server {
    /// Like `start_again`, but returns the reason instead of panicking when the server exits
    /// or does not answer.
    pub fn try_start_again(&mut self) -> Result<(), String> {
        self.spawn_and_wait()
    }
}

/// The resident set of process `pid`, in bytes (VmRSS).
pub fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .map(|v| v.trim().parse().expect("VmRSS number"))
        .expect("VmRSS line");
    kb * 1024
}
