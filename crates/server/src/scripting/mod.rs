//! Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT.
//!
//! Scripts are Redis's: Lua 5.1 (vendored through `mlua`), the libraries and sandbox of
//! Redis ([`vm`], [`libs`]). Each worker has its own interpreter; the script cache (bodies
//! by SHA1) is shared, and each worker compiles a script the first time it runs it.
//!
//! A script is atomic (docs/decisions/0027-scripts-atomic-across-workers.md): it runs
//! holding every worker, as EXEC holds the workers of its keys, inside one recovery unit
//! per worker, so its writes are whole or absent after a crash and no other client sees
//! its intermediate state, whatever keys it touches, declared or not. The script runs on a
//! fiber of its own ([`fiber`]); each `redis.call` suspends it while the command runs on
//! the worker that owns its keys, as a queued command of EXEC runs.

mod fiber;
pub mod functions;
pub mod libs;
mod vm;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use skerry_resp::Proto;

use crate::commands::{lookup, parse_i64, COMMANDS};
use crate::conn::Conn;
use crate::reply::{errors, Reply};
use crate::worker::Txn;

/// How many scripts that came with EVAL (not SCRIPT LOAD) the cache keeps: past this, the
/// least recently used of them goes, as in Redis 7.4+ (`evictedScripts`).
const EVAL_SCRIPTS_KEPT: usize = 500;

/// The script running now (one at a time: a script holds every worker), as SCRIPT KILL and
/// the BUSY replies see it.
#[derive(Debug)]
pub struct Running {
    /// The script's SHA1 or the function's name.
    name: String,
    /// A function (FCALL), not an EVAL script.
    function: bool,
    /// The command that runs it (FUNCTION STATS).
    command: Vec<Vec<u8>>,
    /// When it started.
    started: std::time::Instant,
    /// `busy-reply-threshold` when it started, in ms (0: never busy).
    threshold_ms: u64,
    /// It called a write command (SCRIPT KILL refuses then).
    wrote: AtomicBool,
    /// SCRIPT KILL asked it to stop.
    kill: AtomicBool,
}

impl Running {
    /// True once it has run past `busy-reply-threshold`.
    pub fn past_threshold(&self) -> bool {
        self.threshold_ms > 0 && self.started.elapsed().as_millis() as u64 >= self.threshold_ms
    }

    /// True once SCRIPT KILL asked it to stop.
    pub fn killed(&self) -> bool {
        self.kill.load(Ordering::Relaxed)
    }
}

/// The script cache shared by the workers: bodies by SHA1.
#[derive(Default)]
pub struct Scripts {
    inner: Mutex<Cache>,
    /// The running script, if any.
    running: Mutex<Option<Arc<Running>>>,
    /// A script has run past `busy-reply-threshold`: other clients get BUSY (checked on
    /// every command, hence an atomic of its own).
    busy: AtomicBool,
    /// Bumped by SCRIPT FLUSH: workers drop what they compiled under an older epoch.
    epoch: AtomicU64,
    /// Scripts evicted from the cache since start (INFO `evicted_scripts`).
    evicted: AtomicU64,
    /// The function libraries (FUNCTION LOAD).
    pub libraries: functions::Libraries,
}

#[derive(Default)]
struct Cache {
    bodies: HashMap<String, Entry>,
    /// Use counter (the LRU clock of EVAL scripts).
    clock: u64,
}

struct Entry {
    body: Arc<[u8]>,
    /// Loaded with SCRIPT LOAD: never evicted.
    loaded: bool,
    last_used: u64,
}

impl Scripts {
    /// Adds `body` (its SHA1 `sha`): `loaded` for SCRIPT LOAD (kept until SCRIPT FLUSH),
    /// else an EVAL script, evicted past [`EVAL_SCRIPTS_KEPT`]. Returns its body and the
    /// script evicted to make room, if any.
    fn add(&self, sha: &str, body: &[u8], loaded: bool) -> (Arc<[u8]>, Option<String>) {
        let mut c = self.inner.lock().expect("script cache");
        c.clock += 1;
        let clock = c.clock;
        if let Some(e) = c.bodies.get_mut(sha) {
            e.loaded |= loaded;
            e.last_used = clock;
            return (e.body.clone(), None);
        }
        let body: Arc<[u8]> = body.into();
        c.bodies.insert(
            sha.to_string(),
            Entry {
                body: body.clone(),
                loaded,
                last_used: clock,
            },
        );
        let mut evicted = None;
        if !loaded {
            let evals = c.bodies.values().filter(|e| !e.loaded).count();
            if evals > EVAL_SCRIPTS_KEPT {
                let oldest = c
                    .bodies
                    .iter()
                    .filter(|(_, e)| !e.loaded)
                    .min_by_key(|(_, e)| e.last_used)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    c.bodies.remove(&k);
                    self.evicted.fetch_add(1, Ordering::Relaxed);
                    evicted = Some(k);
                }
            }
        }
        (body, evicted)
    }

    /// Of `shas`, those no longer cached.
    fn missing(&self, shas: Vec<String>) -> Vec<String> {
        let c = self.inner.lock().expect("script cache");
        shas.into_iter()
            .filter(|s| !c.bodies.contains_key(s))
            .collect()
    }

    /// Keeps this worker's compiled scripts in step with the cache: drops `evicted` now,
    /// and, each time their number has doubled, those evicted on other workers.
    fn sync_compiled(&self, evicted: Option<String>) {
        let vm = vm::local();
        if let Some(sha) = evicted {
            vm.forget_scripts(&[sha]);
        }
        if let Some(shas) = vm.prune_due() {
            vm.forget_scripts(&self.missing(shas));
            vm.pruned();
        }
    }

    /// The body of script `sha` (lower-case hex), marking it used.
    fn get(&self, sha: &str) -> Option<Arc<[u8]>> {
        let mut c = self.inner.lock().expect("script cache");
        c.clock += 1;
        let clock = c.clock;
        c.bodies.get_mut(sha).map(|e| {
            e.last_used = clock;
            e.body.clone()
        })
    }

    fn exists(&self, sha: &str) -> bool {
        self.inner
            .lock()
            .expect("script cache")
            .bodies
            .contains_key(sha)
    }

    fn flush(&self) {
        self.inner.lock().expect("script cache").bodies.clear();
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Number of cached scripts (INFO `number_of_cached_scripts`).
    pub fn len(&self) -> usize {
        self.inner.lock().expect("script cache").bodies.len()
    }

    /// True when no script is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the cached bodies (INFO `used_memory_scripts_eval`).
    pub fn body_bytes(&self) -> usize {
        let c = self.inner.lock().expect("script cache");
        c.bodies.values().map(|e| e.body.len() + 40).sum()
    }

    /// Scripts evicted since start.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// True while a script runs past `busy-reply-threshold`: commands without the
    /// `allow_busy` flag get [`Scripts::busy_error`].
    #[inline]
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Relaxed)
    }

    /// The reply to a command refused while a script is busy (it names the kill command
    /// for an EVAL script or a function, as Redis does).
    pub fn busy_error(&self) -> &'static str {
        let running = self.running.lock().expect("running script");
        if running.as_ref().is_some_and(|r| r.function) {
            BUSY_FUNCTION_ERROR
        } else {
            BUSY_ERROR
        }
    }

    fn start(
        &self,
        name: &str,
        function: bool,
        command: Vec<Vec<u8>>,
        threshold_ms: u64,
    ) -> Arc<Running> {
        let r = Arc::new(Running {
            name: name.to_string(),
            function,
            command,
            started: std::time::Instant::now(),
            threshold_ms,
            wrote: AtomicBool::new(false),
            kill: AtomicBool::new(false),
        });
        *self.running.lock().expect("running script") = Some(r.clone());
        r
    }

    fn finish(&self) {
        *self.running.lock().expect("running script") = None;
        self.busy.store(false, Ordering::Relaxed);
    }
}

/// The reply to a command refused while a script runs past `busy-reply-threshold`.
pub const BUSY_ERROR: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

/// [`BUSY_ERROR`] while the busy script is a function.
pub const BUSY_FUNCTION_ERROR: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// How long a script past `busy-reply-threshold` lets its worker serve other clients (with
/// BUSY) each time it pauses.
const BUSY_PAUSE: std::time::Duration = std::time::Duration::from_micros(200);

/// How often a script past `busy-reply-threshold` that keeps calling commands pauses.
const BUSY_PAUSE_EVERY: std::time::Duration = std::time::Duration::from_millis(2);

/// Memory of this worker's Lua interpreter, in bytes.
pub fn lua_memory_bytes() -> usize {
    vm::used_memory_bytes()
}

/// SHA1 of `data` as 40 lower-case hex digits.
pub fn sha1_hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}

/// An EVAL-family call, parsed and checked, ready to run.
pub struct Prepared {
    sha: String,
    script: vm::Compiled,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
    /// The command that runs it.
    command: Vec<Vec<u8>>,
    /// EVAL_RO / EVALSHA_RO, or a `no-writes` script: writes are refused.
    read_only: bool,
    /// A library's function (FCALL): KEYS and ARGV are its arguments, not globals.
    function: bool,
}

/// Parses an EVAL, EVALSHA, EVAL_RO or EVALSHA_RO call and compiles its script on this
/// worker; `Err` holds the error reply.
pub fn prepare(c: &Conn, argv: &[&[u8]]) -> Result<Prepared, String> {
    if argv[0].len() >= 5 && argv[0][..5].eq_ignore_ascii_case(b"fcall") {
        return functions::prepare(c, argv);
    }
    let name = argv[0].to_ascii_lowercase();
    let by_sha = name.starts_with(b"evalsha");
    let ro = name.ends_with(b"_ro");
    let Some(numkeys) = parse_i64(argv[2]) else {
        return Err(errors::NOT_INT.into());
    };
    if numkeys > (argv.len() - 3) as i64 {
        return Err("ERR Number of keys can't be greater than number of args".into());
    }
    if numkeys < 0 {
        return Err("ERR Number of keys can't be negative".into());
    }
    let scripts = &c.shared.scripts;
    let (sha, body) = if by_sha {
        let sha = String::from_utf8_lossy(argv[1]).to_ascii_lowercase();
        match (sha.len() == 40).then(|| scripts.get(&sha)).flatten() {
            Some(body) => (sha, body),
            None => return Err("NOSCRIPT No matching script. Please use EVAL.".into()),
        }
    } else {
        let sha = sha1_hex(argv[1]);
        // Compiled before it is cached: a script that does not compile is not kept.
        vm::local().compile(&sha, argv[1], scripts.epoch.load(Ordering::SeqCst))?;
        let (body, evicted) = scripts.add(&sha, argv[1], false);
        scripts.sync_compiled(evicted);
        (sha, body)
    };
    let script = vm::local().compile(&sha, &body, scripts.epoch.load(Ordering::SeqCst))?;
    let flags = script.flags;
    if !flags.compat && !flags.no_writes && ro {
        return Err("ERR Can not execute a script with write flag using *_ro command.".into());
    }
    if !flags.compat && !flags.no_writes && c.shared.repl.read_only_for(&c.shared, c.info.id) {
        return Err(crate::replica::READONLY.into());
    }
    if !flags.compat && !flags.no_writes && !flags.allow_oom && crate::memory::over_maxmemory() {
        return Err(
            "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"
                .into(),
        );
    }
    let n = numkeys as usize;
    Ok(Prepared {
        sha,
        script,
        keys: argv[3..3 + n].iter().map(|k| k.to_vec()).collect(),
        args: argv[3 + n..].iter().map(|a| a.to_vec()).collect(),
        read_only: ro || flags.no_writes,
        function: false,
        command: argv.iter().map(|a| a.to_vec()).collect(),
    })
}

/// EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO: runs the script holding every
/// worker.
pub async fn eval(c: &mut Conn, argv: &[&[u8]]) {
    let p = match prepare(c, argv) {
        Ok(p) => p,
        Err(e) => {
            c.reply.error(&e);
            return;
        }
    };
    let all: Vec<usize> = (0..c.shared.workers).collect();
    let txn = Txn::begin(&c.shared, c.worker, all).await;
    let mut units = Units::Lazy(vec![false; c.shared.workers]);
    let wrote = run_in_txn_with(c, &txn, p, &mut units).await;
    if let Units::Lazy(begun) = units {
        for (w, _) in begun.iter().enumerate().filter(|(_, b)| **b) {
            txn.run(w, |s| {
                s.keyspace.end_command();
                if let Some(e) = s.keyspace.take_error() {
                    tracing::error!("script end: {e}");
                }
            })
            .await;
        }
    }
    drop(txn);
    c.sync_multi_worker_writes(wrote).await;
}

/// The recovery units of a script's writes: one per worker it touches (its records are
/// whole or absent after a crash on each), opened on a worker before its first command
/// there, so that a script never costs a hop to a worker it does not use.
enum Units {
    /// Already open on every held worker (EXEC opened them).
    Open,
    /// Opened on demand: which workers have one open.
    Lazy(Vec<bool>),
}

impl Units {
    /// Opens the unit on each of `workers` that has none yet.
    async fn open(&mut self, txn: &Txn, workers: impl IntoIterator<Item = usize>) {
        let Units::Lazy(begun) = self else {
            return;
        };
        for w in workers {
            if !std::mem::replace(&mut begun[w], true) {
                txn.run(w, |s| s.keyspace.begin_command(true)).await;
            }
        }
    }
}

/// The workers command `idx` (with `argv`) may touch: its keys' owners; every worker for
/// one that visits them all by itself; none for one that touches no key.
fn workers_touched(c: &Conn, idx: usize, argv: &[Vec<u8>]) -> Vec<usize> {
    use crate::commands::Handler;
    let spec = &COMMANDS[idx];
    let workers = c.shared.workers;
    match spec.handler {
        Handler::Keyed { .. } => {
            let refs: Vec<&[u8]> = argv.iter().map(|a| &a[..]).collect();
            let mut ws: Vec<usize> = spec
                .key_positions(&refs)
                .into_iter()
                .map(|p| crate::slot::owner(refs[p], workers))
                .collect();
            // Keys on several workers are lent to the connection's worker (see
            // `Conn::cross_in_txn`); a keyed command without keys runs there too. (MOVE's
            // and COPY's other database keeps the key on its owner.)
            ws.push(c.worker);
            ws
        }
        Handler::Conn(_) => Vec::new(),
        Handler::Async(_) => (0..workers).collect(),
    }
}

/// Runs a prepared script inside `txn`, which holds every worker (EVAL, or EXEC with an
/// EVAL queued); its reply goes to the connection's reply buffer. Returns whether it wrote.
pub async fn run_in_txn(c: &mut Conn, txn: &Txn, p: Prepared) -> bool {
    run_in_txn_with(c, txn, p, &mut Units::Open).await
}

async fn run_in_txn_with(c: &mut Conn, txn: &Txn, p: Prepared, units: &mut Units) -> bool {
    let proto = c.reply.proto;
    let vm = vm::local();
    let Prepared {
        sha,
        script,
        keys,
        args,
        read_only,
        function,
        command,
    } = p;
    let threshold_ms = c
        .shared
        .config
        .get("busy-reply-threshold")
        .parse::<u64>()
        .unwrap_or(5000);
    let scripts = c.shared.scripts.clone();
    let running = scripts.start(&sha, function, command, threshold_ms);
    let run_vm = vm.clone();
    let on_fiber = running.clone();
    let mut f = fiber::Fiber::new(
        move || {
            let inv = vm::Invocation {
                keys,
                args,
                name: sha,
                function,
            };
            run_vm.run(&script, inv, proto, &on_fiber)
        },
        vm::retire_local,
    );
    let saved_db = c.db;
    let was_in_exec = std::mem::replace(&mut c.in_exec, true);
    c.in_script = true;
    let mut wrote = false;
    let mut answer = Vec::new();
    let mut last_pause = std::time::Instant::now();
    let out = loop {
        match f.resume(std::mem::take(&mut answer)) {
            fiber::Step::Done(out) => break out,
            // Past busy-reply-threshold the script pauses now and then (see `vm`): its
            // worker serves other clients, with BUSY, and SCRIPT KILL.
            fiber::Step::Call(call) if call.is_empty() => {
                scripts.busy.store(true, Ordering::Relaxed);
                if c.shared.stopping.load(Ordering::Relaxed) {
                    // SIGTERM or SHUTDOWN NOSAVE: the script stops, even one that wrote
                    // (its unfinished units are dropped at the next start).
                    running.kill.store(true, Ordering::Relaxed);
                }
                compio::time::sleep(BUSY_PAUSE).await;
            }
            fiber::Step::Call(call) => {
                let resp3 = vm.script_resp3();
                let (a, w) = call_command(c, txn, call, read_only, resp3, &running, units).await;
                answer = a;
                wrote |= w;
                // A script that spends its time in calls reaches the Lua hook seldom: past
                // busy-reply-threshold it also pauses here, every BUSY_PAUSE_EVERY.
                if running.past_threshold() && last_pause.elapsed() >= BUSY_PAUSE_EVERY {
                    scripts.busy.store(true, Ordering::Relaxed);
                    compio::time::sleep(BUSY_PAUSE).await;
                    last_pause = std::time::Instant::now();
                }
            }
        }
    };
    scripts.finish();
    c.in_exec = was_in_exec;
    c.in_script = false;
    // SELECT inside a script changes the script's database only (Redis 7).
    c.db = saved_db;
    c.reply.buf.extend_from_slice(&out);
    wrote
}

/// Runs one `redis.call` of a script: Redis's checks (`scriptCall`), then the command as
/// EXEC runs a queued one. Returns the reply (in the script's protocol) and whether it
/// wrote.
async fn call_command(
    c: &mut Conn,
    txn: &Txn,
    argv: Vec<Vec<u8>>,
    read_only: bool,
    resp3: bool,
    running: &Running,
    units: &mut Units,
) -> (Vec<u8>, bool) {
    let proto = if resp3 { Proto::Resp3 } else { Proto::Resp2 };
    let err = |msg: &str| {
        let mut r = Reply::lazy(proto);
        r.error(msg);
        (r.buf, false)
    };
    let Some(idx) = lookup(&argv[0]) else {
        return err("ERR Unknown Redis command called from script");
    };
    let spec = &COMMANDS[idx];
    if !spec.arity_ok(argv.len()) {
        return err("ERR Wrong number of args calling Redis command from script");
    }
    if !spec.subcommands.is_empty() && argv.len() >= 2 {
        match spec.subcommand(&argv[1]) {
            Some(sub) if !sub.arity_ok(argv.len()) => {
                return err("ERR Wrong number of args calling Redis command from script");
            }
            Some(sub) if sub.flags.contains(&"noscript") => {
                return err("ERR This Redis command is not allowed from script");
            }
            None => {
                let name = String::from_utf8_lossy(&argv[1]).to_string();
                return err(&format!(
                    "ERR unknown subcommand '{}'. Try {} HELP.",
                    name.chars().take(128).collect::<String>(),
                    spec.name.to_ascii_uppercase()
                ));
            }
            _ => {}
        }
    }
    if spec.has_flag("noscript") {
        return err("ERR This Redis command is not allowed from script");
    }
    let writes = spec.has_flag("write") || spec.has_flag("may_replicate");
    if read_only && writes {
        return err("ERR Write commands are not allowed from read-only scripts.");
    }
    if spec.has_flag("write") && c.shared.repl.read_only_for(&c.shared, c.info.id) {
        return err(crate::replica::READONLY);
    }
    if spec.has_flag("write") {
        // From here on SCRIPT KILL cannot stop it without leaving half its work.
        running.wrote.store(true, Ordering::Relaxed);
    }
    units.open(txn, workers_touched(c, idx, &argv)).await;
    match c.run_in_txn(txn, idx, argv, proto).await {
        (Some(out), wrote) => (out, wrote),
        (None, _) => err(&format!(
            "ERR '{}' cannot be called from a script in Skerry yet",
            spec.name
        )),
    }
}

/// SCRIPT LOAD | EXISTS | FLUSH | KILL | HELP.
pub fn script(c: &mut Conn, a: &[&[u8]]) {
    let sub = a[1].to_ascii_lowercase();
    let scripts = c.shared.scripts.clone();
    match sub.as_slice() {
        b"load" => {
            let sha = sha1_hex(a[2]);
            let epoch = scripts.epoch.load(Ordering::SeqCst);
            match vm::local().compile(&sha, a[2], epoch) {
                Ok(_) => {
                    let (_, evicted) = scripts.add(&sha, a[2], true);
                    scripts.sync_compiled(evicted);
                    c.reply.bulk(sha.as_bytes());
                }
                Err(e) => c.reply.error(&e),
            }
        }
        b"exists" => {
            c.reply.array(a.len() - 2);
            for sha in &a[2..] {
                let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
                c.reply.int(i64::from(scripts.exists(&sha)));
            }
        }
        b"flush" => {
            let ok = match a.len() {
                2 => true,
                3 => a[2].eq_ignore_ascii_case(b"async") || a[2].eq_ignore_ascii_case(b"sync"),
                _ => false,
            };
            if ok {
                scripts.flush();
                vm::local().flush_scripts(scripts.epoch.load(Ordering::SeqCst));
                c.reply.ok();
            } else {
                c.reply
                    .error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
            }
        }
        b"kill" => {
            let running = scripts.running.lock().expect("running script").clone();
            match running {
                None => c.reply.error("NOTBUSY No scripts in execution right now."),
                Some(r) if r.function => c.reply.error(BUSY_FUNCTION_ERROR),
                Some(r) if r.wrote.load(Ordering::Relaxed) => c.reply.error(
                    "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
                ),
                Some(r) => {
                    r.kill.store(true, Ordering::Relaxed);
                    c.reply.ok();
                }
            }
        }
        _ => c.reply.simple_lines(&[
            "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
            "HELP",
            "    Print this help.",
        ]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eval_scripts_past_the_bound_go_least_recently_used_first_and_loaded_ones_stay() {
        let s = Scripts::default();
        s.add("loaded", b"return 0", true);
        for i in 0..EVAL_SCRIPTS_KEPT {
            s.add(&format!("e{i}"), b"return 1", false);
        }
        // e0 is used again: e1 is now the least recently used.
        assert!(s.get("e0").is_some());
        s.add("new", b"return 2", false);
        assert_eq!(s.len(), EVAL_SCRIPTS_KEPT + 1);
        assert!(s.exists("e0") && s.exists("new") && s.exists("loaded"));
        assert!(!s.exists("e1"));
        assert_eq!(s.evicted(), 1);
        s.flush();
        assert!(s.is_empty());
    }

    #[test]
    fn sha1_is_lower_case_hex_of_the_body() {
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(
            sha1_hex(b"return 1"),
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        );
    }
}
