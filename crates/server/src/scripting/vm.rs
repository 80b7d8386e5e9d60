//! One Lua 5.1 interpreter per worker, set up as Redis sets up its own: the libraries
//! Redis loads, Redis's `redis` table, protected globals, Redis's error tables and
//! handler, and the conversions between Lua values and RESP replies.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use mlua::{Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value};
use skerry_resp::Proto;
use skerry_resp::{decode_value, Value as Resp};

use crate::reply::Reply;

/// The Lua code that builds the sandbox (chunk `=skerry`; the error handler skips its
/// frames when it looks for the script's line).
const PRELUDE: &str = include_str!("prelude.lua");

/// Script flags from a `#!lua flags=...` shebang.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    /// No shebang: Redis's compatibility mode (EVAL without flags).
    pub compat: bool,
    /// `no-writes`.
    pub no_writes: bool,
    /// `allow-oom`.
    pub allow_oom: bool,
    /// `allow-stale`.
    pub allow_stale: bool,
    /// `no-cluster`.
    pub no_cluster: bool,
    /// `allow-cross-slot-keys`.
    pub allow_cross_slot_keys: bool,
}

/// Parses the shebang line of `body`: its flags and the length of the line (kept out of
/// the compiled code, its line feed kept so that line numbers stay the user's).
pub fn shebang(body: &[u8]) -> Result<(ScriptFlags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((
            ScriptFlags {
                compat: true,
                ..ScriptFlags::default()
            },
            0,
        ));
    }
    let Some(end) = memchr::memchr(b'\n', body) else {
        return Err("ERR Invalid script shebang".into());
    };
    let line = String::from_utf8_lossy(&body[..end]);
    let mut parts = line.split_ascii_whitespace();
    let Some(engine) = parts.next() else {
        return Err("ERR Invalid engine in script shebang".into());
    };
    if engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = ScriptFlags::default();
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {part}"));
        };
        for f in list.split(',') {
            match f {
                "no-writes" => flags.no_writes = true,
                "allow-oom" => flags.allow_oom = true,
                "allow-stale" => flags.allow_stale = true,
                "no-cluster" => flags.no_cluster = true,
                "allow-cross-slot-keys" => flags.allow_cross_slot_keys = true,
                "" if list.is_empty() => {}
                other => {
                    return Err(format!("ERR Unexpected flag in script shebang: {other}"));
                }
            }
        }
    }
    Ok((flags, end))
}

/// A function a library registered while it loaded.
pub struct LoadedFunction {
    /// Its name.
    pub name: String,
    /// Its flags (`no-writes`, ...).
    pub flags: Vec<String>,
    /// Its description.
    pub description: Option<String>,
}

/// The [`ScriptFlags`] of a function's flag list.
pub fn script_flags(flags: &[String]) -> ScriptFlags {
    let mut f = ScriptFlags::default();
    for s in flags {
        match s.as_str() {
            "no-writes" => f.no_writes = true,
            "allow-oom" => f.allow_oom = true,
            "allow-stale" => f.allow_stale = true,
            "no-cluster" => f.no_cluster = true,
            "allow-cross-slot-keys" => f.allow_cross_slot_keys = true,
            _ => {}
        }
    }
    f
}

/// One call of a script or function: its keys and arguments, its name in error replies
/// (the script's SHA1, or the function's name), and whether it is a function (KEYS and ARGV
/// are then its arguments, not globals).
pub struct Invocation {
    /// KEYS.
    pub keys: Vec<Vec<u8>>,
    /// ARGV.
    pub args: Vec<Vec<u8>>,
    /// The script's SHA1 or the function's name.
    pub name: String,
    /// A library's function.
    pub function: bool,
}

/// A compiled script.
#[derive(Clone)]
pub struct Compiled {
    /// Its function (environment: the protected globals).
    pub func: Function,
    /// Its shebang flags.
    pub flags: ScriptFlags,
}

/// The state of the script being run on this worker.
#[derive(Default)]
struct RunState {
    /// Inside a run (the `redis` functions that need one refuse otherwise).
    active: Cell<bool>,
    /// The protocol of replies the script receives (`redis.setresp`).
    resp3: Cell<bool>,
    /// The running script's shared state (time, SCRIPT KILL).
    running: RefCell<Option<Arc<super::Running>>>,
    /// While a library loads: when its code must have finished.
    load_deadline: Cell<Option<std::time::Instant>>,
}

/// The most memory one worker's interpreter may hold.
const LUA_MEMORY_LIMIT_BYTES: usize = 1 << 30;

/// How long a library's code may run while it loads (Redis's LOAD_TIMEOUT_MS).
const LOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

/// A worker's interpreter.
pub struct Vm {
    lua: Lua,
    /// `run(f)`: calls `f` under Redis's error handler, returns (ok, value).
    runner: Function,
    /// `run_function(f, keys, args)`: the same for a function of a library (FCALL).
    run_function: Function,
    /// `load_library(chunk)`: runs a library's code, returns what it registered.
    load_library: Function,
    /// The flags of every library's function loaded on this worker (by function name);
    /// the functions themselves are in `function_fns`.
    functions: RefCell<HashMap<String, ScriptFlags>>,
    /// The functions of every library, by name: a Lua table rather than one Rust-held
    /// reference each (mlua's references live on a stack of at most ~8,000 slots).
    function_fns: RefCell<Table>,
    /// The library registry's epoch `functions` were loaded under.
    fn_epoch: Cell<u64>,
    /// The real globals table (KEYS and ARGV are set here).
    globals: Table,
    /// The protected environment scripts run in.
    env: Table,
    /// The flags of the scripts compiled on this worker, by SHA1 (hex, lower case); the
    /// functions themselves are in `compiled_fns`.
    compiled: RefCell<HashMap<String, ScriptFlags>>,
    /// The compiled scripts' functions by SHA1: a Lua table, so that any number of scripts
    /// costs one mlua reference (they are limited), and dropping an entry lets Lua's
    /// collector free the function.
    compiled_fns: RefCell<Table>,
    /// When `compiled` reaches this many scripts, those no longer in the shared cache
    /// (evicted on another worker) are dropped (see [`Vm::prune_due`]).
    prune_at: Cell<usize>,
    /// The script cache epoch these were compiled under (SCRIPT FLUSH empties them).
    epoch: Cell<u64>,
    run: Rc<RunState>,
    /// Scripts run or compiled, and libraries loaded, since the last explicit collection
    /// step.
    runs: Cell<u32>,
}

/// The fewest compiled scripts a worker holds before it checks which of them the shared
/// cache still has.
const PRUNE_MIN: usize = 1024;

/// Scripts between two explicit collection steps (Redis's `LUA_GC_CYCLE_PERIOD`).
const GC_CYCLE_PERIOD: u32 = 50;

thread_local! {
    static VM: RefCell<Option<Rc<Vm>>> = const { RefCell::new(None) };
    /// The rand48 state of `math.random` (Redis's own generator, not the C library's).
    static RAND48: Cell<u64> = const { Cell::new(0x1234_ABCD_330E) };
}

/// This worker's interpreter (made on first use).
pub fn local() -> Rc<Vm> {
    VM.with(|v| {
        let mut v = v.borrow_mut();
        if let Some(vm) = v.as_ref() {
            return vm.clone();
        }
        let vm = Rc::new(Vm::new().expect("the Lua interpreter starts"));
        *v = Some(vm.clone());
        vm
    })
}

/// Retires this worker's interpreter without closing it: a script's stack was abandoned
/// mid-call (see `fiber`), so its state may be inconsistent; it is leaked, and the next
/// script gets a new one.
pub fn retire_local() {
    VM.with(|v| {
        if let Some(vm) = v.borrow_mut().take() {
            std::mem::forget(vm);
        }
    });
}

/// Memory used by this worker's interpreter, in bytes (0 before its first script).
pub fn used_memory_bytes() -> usize {
    VM.with(|v| v.borrow().as_ref().map_or(0, |vm| vm.lua.used_memory()))
}

fn rand48_next() -> i32 {
    RAND48.with(|s| {
        let x = s.get().wrapping_mul(0x5_DEEC_E66D).wrapping_add(0xB) & ((1 << 48) - 1);
        s.set(x);
        (x >> 17) as i32
    })
}

fn rand48_seed(seed: i32) {
    let seed = seed as u32 as u64;
    RAND48.with(|s| s.set(((seed & 0xFFFF_FFFF) << 16) | 0x330E));
}

/// An error a `redis` function raises: Redis raises a table `{err = msg}`; a Rust
/// callback raises this, and the prelude's error handler and `pcall` turn it into that
/// table (or its text) with [`error_message`].
#[derive(Debug, thiserror::Error)]
#[error("{}", String::from_utf8_lossy(.0))]
struct ScriptError(Vec<u8>);

/// Raises `msg` (Redis's `luaPushError` then `luaError`).
fn raise<T>(msg: &[u8]) -> mlua::Result<T> {
    Err(mlua::Error::external(ScriptError(error_text(msg))))
}

/// The `err` text of a [`ScriptError`] raised by a callback, if `e` is one.
fn error_message(e: &mlua::Error) -> Option<&[u8]> {
    match e {
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<ScriptError>().map(|s| &s.0[..]),
        mlua::Error::CallbackError { cause, .. } => error_message(cause),
        mlua::Error::WithContext { cause, .. } => error_message(cause),
        _ => None,
    }
}

/// `{err = msg}` as Redis's `luaPushErrorBuff` makes it: a leading `-` dropped, `ERR`
/// added when the message has no code of its own, line ends trimmed.
fn error_table(lua: &Lua, msg: &[u8]) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(error_text(msg))?)?;
    Ok(t)
}

/// The `err` text of an error message: a leading `-` dropped, `ERR` added when the message
/// has no code of its own, line ends trimmed.
fn error_text(msg: &[u8]) -> Vec<u8> {
    let mut m: &[u8] = msg;
    while let [rest @ .., b'\r' | b'\n'] = m {
        m = rest;
    }
    let full = if let Some(rest) = m.strip_prefix(b"-") {
        match memchr::memchr(b' ', rest) {
            Some(_) => rest.to_vec(),
            None => [b"ERR ".as_slice(), rest].concat(),
        }
    } else {
        [b"ERR ".as_slice(), m].concat()
    };
    full
}

impl Vm {
    fn new() -> mlua::Result<Vm> {
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::OS,
            LuaOptions::new(),
        )?;
        super::libs::register(&lua)?;
        // A runaway script (`string.rep` of gigabytes) gets Lua's `not enough memory`
        // error instead of taking the server's memory.
        lua.set_memory_limit(LUA_MEMORY_LIMIT_BYTES)?;
        let run = Rc::new(RunState::default());
        let redis = lua.create_table()?;
        lua.globals().raw_set("redis", redis.clone())?;
        // redis.call (raises a command's error) and redis.pcall (returns it as a table).
        let make_call = |raising: bool| {
            let r = run.clone();
            lua.create_function(move |lua, args: MultiValue| -> mlua::Result<Value> {
                let fail = |msg: &[u8]| -> mlua::Result<Value> {
                    if raising {
                        raise(msg)
                    } else {
                        Ok(Value::Table(error_table(lua, msg)?))
                    }
                };
                if !r.active.get() {
                    return fail(b"redis.call/pcall can only be called inside a script invocation");
                }
                if args.is_empty() {
                    return fail(b"Please specify at least one argument for this redis lib call");
                }
                let mut argv = Vec::with_capacity(args.len());
                for a in args {
                    // Numbers as Redis 8.0 passes them: integers (`double2ll`) as such,
                    // else fpconv's Grisu2 digits.
                    let number = |n: f64| match skerry_resp::double_to_i64_exact(n) {
                        Some(i) => i.to_string().into_bytes(),
                        None => {
                            let mut out = Vec::new();
                            skerry_resp::format_double_shortest(n, &mut out);
                            out
                        }
                    };
                    let s = match a {
                        Value::String(s) => Some(s.as_bytes().to_vec()),
                        Value::Integer(n) => Some(number(n as f64)),
                        Value::Number(n) => Some(number(n)),
                        _ => None,
                    };
                    match s {
                        Some(s) => argv.push(s),
                        None => {
                            return fail(
                                b"Lua redis lib command arguments must be strings or integers",
                            )
                        }
                    }
                }
                let Some(answer) = super::fiber::suspend(argv) else {
                    return fail(b"redis.call/pcall can only be called inside a script invocation");
                };
                match resp_to_lua(lua, &answer, r.resp3.get())? {
                    Ok(v) => Ok(v),
                    Err(msg) => fail(&msg),
                }
            })
        };
        let call = make_call(true)?;
        let pcall = make_call(false)?;
        // The position (source, line) of the innermost frame of the user's code.
        let place = lua.create_function(|lua, ()| -> mlua::Result<(Value, Value)> {
            let mut level = 1;
            while let Some(d) = lua.inspect_stack(level) {
                let src = d.source();
                let user = src.what != "C"
                    && src.what != "tail"
                    && src.source.as_deref() != Some("=skerry");
                if user {
                    let s = src.source.map(|s| s.into_owned()).unwrap_or_default();
                    let line = d.curr_line();
                    return Ok((
                        Value::String(lua.create_string(s)?),
                        Value::Integer(line as i64),
                    ));
                }
                level += 1;
            }
            Ok((Value::Nil, Value::Nil))
        })?;
        // An error a callback raised: (text, true) for a `redis` error (Redis raises a
        // table), (text, false) for a library's (Redis raises a string); nil otherwise.
        // With `at`, from the error handler: a library's error gets the position of the
        // Lua code that called the library, as `luaL_error` gives it.
        let error_of = lua.create_function(
            |lua, (v, at): (Value, bool)| -> mlua::Result<(Value, bool)> {
                match &v {
                    Value::Error(e) => match error_message(e) {
                        Some(m) => Ok((Value::String(lua.create_string(m)?), true)),
                        None => {
                            let mut m = super::libs::error_message(e);
                            // Levels: 0 this function, 1 the handler, 2 the library function,
                            // 3 its caller.
                            if let Some(d) = at.then(|| lua.inspect_stack(3)).flatten() {
                                let src = d.source();
                                if matches!(src.what, "Lua" | "main") {
                                    let short = src.short_src.as_deref().unwrap_or("?").to_string();
                                    m = format!("{short}:{}: {m}", d.curr_line());
                                }
                            }
                            Ok((Value::String(lua.create_string(m)?), false))
                        }
                    },
                    _ => Ok((Value::Nil, false)),
                }
            },
        )?;
        let sha1hex = lua.create_function(|lua, args: MultiValue| -> mlua::Result<Value> {
            if args.len() != 1 {
                return raise(b"wrong number of arguments");
            }
            let s = match args.into_iter().next() {
                Some(v) => lua
                    .coerce_string(v)?
                    .map(|s| s.as_bytes().to_vec())
                    .unwrap_or_default(),
                None => Vec::new(),
            };
            Ok(Value::String(lua.create_string(super::sha1_hex(&s))?))
        })?;
        let r = run.clone();
        let setresp = lua.create_function(move |_, args: MultiValue| -> mlua::Result<()> {
            if !r.active.get() {
                return raise(b"redis.setresp can only be called inside a script invocation");
            }
            if args.len() != 1 {
                return raise(b"redis.setresp() requires one argument.");
            }
            let n = match args.into_iter().next() {
                Some(Value::Integer(n)) => n as f64,
                Some(Value::Number(n)) => n,
                Some(Value::String(s)) => s
                    .to_str()
                    .ok()
                    .and_then(|s| s.trim().parse::<f64>().ok())
                    .unwrap_or(0.0),
                _ => 0.0,
            };
            match n as i64 {
                2 => r.resp3.set(false),
                3 => r.resp3.set(true),
                _ => return raise(b"RESP version must be 2 or 3."),
            }
            Ok(())
        })?;
        let log = lua.create_function(move |lua, args: MultiValue| -> mlua::Result<()> {
            if args.len() < 2 {
                return raise(b"redis.log() requires two arguments or more.");
            }
            let mut it = args.into_iter();
            let level = match it.next() {
                Some(Value::Integer(n)) => n,
                Some(Value::Number(n)) => n as i64,
                // Lua's lua_isnumber: a numeric string is a number too.
                Some(Value::String(s)) => match std::str::from_utf8(&s.as_bytes())
                    .ok()
                    .and_then(|t| t.trim().parse::<f64>().ok())
                {
                    Some(n) => n as i64,
                    None => return raise(b"First argument must be a number (log level)."),
                },
                _ => return raise(b"First argument must be a number (log level)."),
            };
            if !(0..=3).contains(&level) {
                return raise(b"Invalid log level.");
            }
            let mut line = Vec::new();
            for (i, v) in it.enumerate() {
                if i > 0 {
                    line.push(b' ');
                }
                if let Some(s) = lua.coerce_string(v)? {
                    line.extend_from_slice(&s.as_bytes());
                }
            }
            let text = String::from_utf8_lossy(&line);
            match level {
                0 => tracing::debug!(target: "script", "{text}"),
                1 | 2 => tracing::info!(target: "script", "{text}"),
                _ => tracing::warn!(target: "script", "{text}"),
            }
            Ok(())
        })?;
        let r = run.clone();
        let set_repl = lua.create_function(move |_, args: MultiValue| -> mlua::Result<()> {
            if !r.active.get() {
                return raise(b"redis.set_repl can only be called inside a script invocation");
            }
            if args.len() != 1 {
                return raise(b"redis.set_repl() requires two arguments.");
            }
            let n = match args.into_iter().next() {
                Some(Value::Integer(n)) => n,
                Some(Value::Number(n)) => n as i64,
                _ => -1,
            };
            if !(0..=3).contains(&n) {
                return raise(b"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
            }
            Ok(())
        })?;
        let acl_check = lua.create_function(|lua, args: MultiValue| -> mlua::Result<bool> {
            let name = match args.into_iter().next() {
                Some(v) => lua.coerce_string(v)?.map(|s| s.as_bytes().to_vec()),
                None => None,
            };
            match name.and_then(|n| crate::commands::lookup(&n)) {
                Some(_) => Ok(true),
                None => raise(b"Invalid command passed to redis.acl_check_cmd()"),
            }
        })?;
        let random = lua.create_function(|_, ()| {
            let r = rand48_next() % i32::MAX;
            Ok(r as f64 / i32::MAX as f64)
        })?;
        let randomseed = lua.create_function(|_, seed: f64| {
            rand48_seed(seed as i32);
            Ok(())
        })?;
        redis.raw_set("REDIS_VERSION", crate::REDIS_VERSION)?;
        let num = crate::REDIS_VERSION
            .split('.')
            .map(|p| p.parse::<i64>().unwrap_or(0))
            .fold(0, |acc, p| acc * 256 + p);
        redis.raw_set("REDIS_VERSION_NUM", num)?;
        // Every 100,000 instructions (Redis's period): a script killed by SCRIPT KILL stops
        // with Redis's error, and one past busy-reply-threshold pauses so that its worker
        // serves other clients meanwhile (an empty call is a pause, see `fiber`).
        let r = run.clone();
        lua.set_hook(
            mlua::HookTriggers::new().every_nth_instruction(100_000),
            move |_, _| {
                if let Some(deadline) = r.load_deadline.get() {
                    if std::time::Instant::now() > deadline {
                        return raise(b"FUNCTION LOAD timeout");
                    }
                }
                let Some(running) = r.running.borrow().clone() else {
                    return Ok(mlua::VmState::Continue);
                };
                if running.killed() {
                    return raise(b"Script killed by user with SCRIPT KILL...");
                }
                if running.past_threshold() {
                    let _ = super::fiber::suspend(Vec::new());
                    if running.killed() {
                        return raise(b"Script killed by user with SCRIPT KILL...");
                    }
                }
                Ok(mlua::VmState::Continue)
            },
        );
        let r = run.clone();
        let killed = lua.create_function(move |_, ()| {
            Ok(r.running.borrow().as_ref().is_some_and(|x| x.killed()))
        })?;
        let f: Function = lua.load(PRELUDE).set_name("=skerry").into_function()?;
        let (runner, env, run_function, load_library): (Function, Table, Function, Function) = f
            .call((
                call, pcall, place, error_of, sha1hex, setresp, log, set_repl, acl_check, random,
                randomseed, killed,
            ))?;
        let globals = lua.globals();
        let function_fns = lua.create_table()?;
        let compiled_fns = lua.create_table()?;
        Ok(Vm {
            lua,
            runner,
            run_function,
            load_library,
            functions: RefCell::new(HashMap::new()),
            function_fns: RefCell::new(function_fns),
            fn_epoch: Cell::new(u64::MAX),
            globals,
            env,
            compiled: RefCell::new(HashMap::new()),
            compiled_fns: RefCell::new(compiled_fns),
            prune_at: Cell::new(PRUNE_MIN),
            epoch: Cell::new(0),
            run,
            runs: Cell::new(0),
        })
    }

    /// The compiled script `sha` (its `body` compiled now if this worker has not yet),
    /// or the compile error to reply with. `epoch` is the script cache's: a newer one
    /// (SCRIPT FLUSH) empties this worker's compiled scripts first.
    pub fn compile(&self, sha: &str, body: &[u8], epoch: u64) -> Result<Compiled, String> {
        if self.epoch.get() != epoch {
            self.forget_all_scripts();
            self.epoch.set(epoch);
        }
        let known = self.compiled.borrow().get(sha).copied();
        if let Some(flags) = known {
            if let Ok(Value::Function(func)) = self.compiled_fns.borrow().raw_get::<Value>(sha) {
                return Ok(Compiled { func, flags });
            }
        }
        let (flags, skip) = shebang(body)?;
        self.gc_tick();
        let func = self
            .lua
            .load(&body[skip..])
            .set_name("@user_script")
            .set_mode(mlua::ChunkMode::Text)
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|e| {
                let msg = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    other => other.to_string(),
                };
                format!("ERR Error compiling script (new function): {msg}")
            })?;
        self.compiled_fns
            .borrow()
            .raw_set(sha, func.clone())
            .map_err(|e| format!("ERR Error compiling script (new function): {e}"))?;
        self.compiled.borrow_mut().insert(sha.to_string(), flags);
        Ok(Compiled { func, flags })
    }

    /// Drops every compiled script (a new, empty table: the old one's hash part goes with
    /// it), for Lua's collector to free.
    fn forget_all_scripts(&self) {
        self.compiled.borrow_mut().clear();
        let fresh = self.lua.create_table();
        match fresh {
            Ok(t) => *self.compiled_fns.borrow_mut() = t,
            Err(_) => {
                let _ = self.compiled_fns.borrow().clear();
            }
        }
    }

    /// SCRIPT FLUSH on this worker: drops its compiled scripts now (the others drop theirs
    /// when they next see the new `epoch`) and runs a full collection, so that Lua's
    /// memory falls at once, as Redis's (which resets its interpreter).
    pub fn flush_scripts(&self, epoch: u64) {
        self.forget_all_scripts();
        self.epoch.set(epoch);
        self.prune_at.set(PRUNE_MIN);
        let _ = self.lua.gc_collect();
        let _ = self.lua.gc_collect();
    }

    /// Drops compiled scripts `shas` (evicted from the shared cache).
    pub fn forget_scripts(&self, shas: &[String]) {
        let mut compiled = self.compiled.borrow_mut();
        let fns = self.compiled_fns.borrow();
        for sha in shas {
            if compiled.remove(sha).is_some() {
                let _ = fns.raw_set(sha.as_str(), Value::Nil);
            }
        }
    }

    /// The SHA1s this worker has compiled when it is time to check which of them the
    /// shared cache still holds (their number doubled since the last check), else `None`.
    /// The caller passes those gone to [`Vm::forget_scripts`].
    pub fn prune_due(&self) -> Option<Vec<String>> {
        let compiled = self.compiled.borrow();
        if compiled.len() < self.prune_at.get() {
            return None;
        }
        Some(compiled.keys().cloned().collect())
    }

    /// After a prune: the next one is due when the compiled scripts double.
    pub fn pruned(&self) {
        let n = self.compiled.borrow().len();
        self.prune_at.set((n * 2).max(PRUNE_MIN));
    }

    /// Loads library `code` (its `#!lua name=...` line already checked) on this worker:
    /// the functions it registers, or the error to reply with.
    pub fn load_library(&self, code: &[u8]) -> Result<Vec<LoadedFunction>, String> {
        self.load_library_into(code, None)
    }

    /// [`Vm::load_library`], also putting each callback in `sink` (by lower-case name) when
    /// given: callbacks stay in Lua tables, never one mlua reference each, as a library may
    /// register thousands (mlua's references are limited to ~8,000).
    fn load_library_into(
        &self,
        code: &[u8],
        sink: Option<&Table>,
    ) -> Result<Vec<LoadedFunction>, String> {
        let skip = memchr::memchr(b'\n', code).unwrap_or(code.len());
        self.gc_tick();
        let chunk = self
            .lua
            .load(&code[skip..])
            .set_name("@user_function")
            .set_mode(mlua::ChunkMode::Text)
            .into_function()
            .map_err(|e| {
                let msg = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    other => other.to_string(),
                };
                format!("ERR Error compiling function: {msg}")
            })?;
        self.run
            .load_deadline
            .set(Some(std::time::Instant::now() + LOAD_TIMEOUT));
        let loaded = self.load_library.call::<(Value, Value)>(chunk);
        self.run.load_deadline.set(None);
        let (ctx, err) = loaded.map_err(|e| format!("ERR Error registering functions: {e}"))?;
        let Value::Table(ctx) = ctx else {
            let msg = match &err {
                Value::Table(t) => match t.raw_get::<Value>("err") {
                    Ok(Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
                    _ => "ERR unknown error".into(),
                },
                Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
                _ => "ERR unknown error".into(),
            };
            return Err(format!("ERR Error registering functions: {msg}"));
        };
        let mut out = Vec::new();
        for i in 1..=ctx.raw_len() {
            let name: String = ctx.raw_get(i).map_err(|e| e.to_string())?;
            let f: Table = ctx.raw_get(name.as_str()).map_err(|e| e.to_string())?;
            if let Some(sink) = sink {
                let func: Value = f.raw_get("callback").map_err(|e| e.to_string())?;
                sink.raw_set(name.to_ascii_lowercase(), func)
                    .map_err(|e| e.to_string())?;
            }
            let flags: Table = f.raw_get("flags").map_err(|e| e.to_string())?;
            let flags: Vec<String> = flags
                .sequence_values::<String>()
                .collect::<mlua::Result<_>>()
                .map_err(|e| e.to_string())?;
            let description: Option<String> =
                f.raw_get("description").map_err(|e| e.to_string())?;
            out.push(LoadedFunction {
                name,
                flags,
                description,
            });
        }
        if out.is_empty() {
            return Err("ERR No functions registered".into());
        }
        Ok(out)
    }

    /// Function `name` of the libraries (`codes`, the registry's at `epoch`), loading them
    /// all on this worker first when it has not yet at this epoch.
    pub fn function(
        &self,
        name: &str,
        epoch: u64,
        codes: impl FnOnce() -> Vec<std::sync::Arc<[u8]>>,
    ) -> Option<Compiled> {
        if self.fn_epoch.get() != epoch {
            let mut map = HashMap::new();
            self.functions.borrow_mut().clear();
            let fns = match self.lua.create_table() {
                Ok(t) => t,
                Err(e) => {
                    tracing::error!("the functions table could not be made: {e}");
                    return None;
                }
            };
            for code in codes() {
                match self.load_library_into(&code, Some(&fns)) {
                    Ok(loaded) => {
                        for f in loaded {
                            map.insert(f.name.to_ascii_lowercase(), script_flags(&f.flags));
                        }
                    }
                    Err(e) => tracing::error!("a library failed to load on this worker: {e}"),
                }
            }
            *self.function_fns.borrow_mut() = fns;
            *self.functions.borrow_mut() = map;
            self.fn_epoch.set(epoch);
        }
        let flags = *self.functions.borrow().get(name)?;
        match self.function_fns.borrow().raw_get::<Value>(name) {
            Ok(Value::Function(func)) => Some(Compiled { func, flags }),
            _ => None,
        }
    }

    /// True when the running script asked for RESP3 replies (`redis.setresp(3)`).
    pub fn script_resp3(&self) -> bool {
        self.run.resp3.get()
    }

    /// Runs `script` (inside a fiber: its calls suspend it) with `keys` and `args` as KEYS
    /// and ARGV, and returns its reply encoded for a client speaking `proto`. `sha` names
    /// the script in error replies.
    pub fn run(
        &self,
        script: &Compiled,
        inv: Invocation,
        proto: Proto,
        running: &Arc<super::Running>,
    ) -> Vec<u8> {
        let Invocation {
            keys,
            args,
            name: sha,
            function,
        } = inv;
        let sha = sha.as_str();
        let mut reply = Reply::lazy(proto);
        *self.run.running.borrow_mut() = Some(running.clone());
        self.run.active.set(true);
        self.run.resp3.set(false);
        let out = self.run_inner(script, keys, args, function);
        self.run.active.set(false);
        self.run.running.borrow_mut().take();
        match out {
            Ok((true, v)) => {
                let resp3 = self.run.resp3.get();
                if let Err(e) = lua_to_resp(&mut reply, &v, resp3, 0) {
                    reply.buf.clear();
                    reply.error(&format!("ERR {e}"));
                }
            }
            Ok((false, err)) => script_error(&mut reply, &err, sha),
            Err(e) => {
                reply.error(&format!("ERR Error running script {sha}, {e}"));
            }
        }
        self.run.resp3.set(false);
        self.gc_tick();
        reply.buf
    }

    /// Besides Lua's own incremental collection, a step every 50 scripts run, compiled or
    /// libraries loaded, as Redis does (`luaGC`, LUA_GC_CYCLE_PERIOD).
    fn gc_tick(&self) {
        let runs = self.runs.get() + 1;
        if runs >= GC_CYCLE_PERIOD {
            self.runs.set(0);
            let _ = self.lua.gc_step_kbytes(GC_CYCLE_PERIOD as i32);
        } else {
            self.runs.set(runs);
        }
    }

    fn run_inner(
        &self,
        script: &Compiled,
        keys: Vec<Vec<u8>>,
        args: Vec<Vec<u8>>,
        function: bool,
    ) -> mlua::Result<(bool, Value)> {
        let k = self.lua.create_sequence_from(
            keys.iter()
                .map(|a| self.lua.create_string(a))
                .collect::<mlua::Result<Vec<_>>>()?,
        )?;
        let a = self.lua.create_sequence_from(
            args.iter()
                .map(|a| self.lua.create_string(a))
                .collect::<mlua::Result<Vec<_>>>()?,
        )?;
        if function {
            return self
                .run_function
                .call::<(bool, Value)>((script.func.clone(), k, a));
        }
        self.globals.raw_set("KEYS", k)?;
        self.globals.raw_set("ARGV", a)?;
        self.runner.call::<(bool, Value)>(script.func.clone())
    }
}

/// The error reply of a script that raised `err` (Redis's `luaCallFunction`).
fn script_error(reply: &mut Reply, err: &Value, sha: &str) {
    let Value::Table(t) = err else {
        let msg = match err {
            Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            _ => "execution failure".into(),
        };
        let msg: String = msg.chars().take(100).collect();
        reply.error(&sanitize(&format!("ERR Error running script {sha}, {msg}")));
        return;
    };
    let msg = match t.raw_get::<Value>("err") {
        Ok(Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        _ => "ERR unknown error".into(),
    };
    let source = t.raw_get::<Option<mlua::String>>("source").ok().flatten();
    let line = t.raw_get::<Value>("line").ok();
    let mut full = msg;
    if let (Some(src), Some(line)) = (source, line) {
        let line = match line {
            Value::Integer(n) => n.to_string(),
            Value::Number(n) => (n as i64).to_string(),
            Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            _ => String::new(),
        };
        if !line.is_empty() {
            full.push_str(&format!(
                " script: {sha}, on {}:{line}.",
                String::from_utf8_lossy(&src.as_bytes())
            ));
        }
    }
    reply.error(&sanitize(&full));
}

/// An error or status text with its line ends made spaces (one RESP line).
fn sanitize(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}

/// Converts a command's reply (`answer`, RESP in the script's protocol) into the Lua
/// value the script receives, or the error message of an error reply. Redis's
/// `redisProtocolToLuaType`.
fn resp_to_lua(lua: &Lua, answer: &[u8], resp3: bool) -> mlua::Result<Result<Value, Vec<u8>>> {
    let v = match decode_value(answer) {
        Ok(Some((v, _))) => v,
        _ => return Ok(Err(b"ERR unreadable reply".to_vec())),
    };
    if let Resp::Error(e) = &v {
        return Ok(Err([b"-".as_slice(), e].concat()));
    }
    Ok(Ok(to_lua(lua, v, resp3)?))
}

fn to_lua(lua: &Lua, v: Resp, resp3: bool) -> mlua::Result<Value> {
    Ok(match v {
        Resp::Simple(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", lua.create_string(&s)?)?;
            Value::Table(t)
        }
        Resp::Error(e) => Value::Table(error_table(lua, &[b"-".as_slice(), &e].concat())?),
        Resp::Integer(n) => Value::Number(n as f64),
        Resp::Bulk(b) => Value::String(lua.create_string(&b)?),
        Resp::Null if resp3 => Value::Nil,
        Resp::Null | Resp::NullArray => Value::Boolean(false),
        Resp::Array(items) | Resp::Push(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item, resp3)?)?;
            }
            Value::Table(t)
        }
        Resp::Map(pairs) => {
            let m = lua.create_table()?;
            for (k, v) in pairs {
                m.raw_set(to_lua(lua, k, resp3)?, to_lua(lua, v, resp3)?)?;
            }
            let t = lua.create_table()?;
            t.raw_set("map", m)?;
            Value::Table(t)
        }
        Resp::Set(items) => {
            let m = lua.create_table()?;
            for k in items {
                m.raw_set(to_lua(lua, k, resp3)?, true)?;
            }
            let t = lua.create_table()?;
            t.raw_set("set", m)?;
            Value::Table(t)
        }
        Resp::Double(d) => {
            let t = lua.create_table()?;
            t.raw_set("double", d)?;
            Value::Table(t)
        }
        Resp::Boolean(b) => Value::Boolean(b),
        Resp::BigNumber(n) => {
            let t = lua.create_table()?;
            t.raw_set("big_number", lua.create_string(&n)?)?;
            Value::Table(t)
        }
        Resp::Verbatim(fmt, text) => {
            let inner = lua.create_table()?;
            inner.raw_set("format", lua.create_string(fmt)?)?;
            inner.raw_set("string", lua.create_string(&text)?)?;
            let t = lua.create_table()?;
            t.raw_set("verbatim_string", inner)?;
            Value::Table(t)
        }
        Resp::Attribute(_, v) => to_lua(lua, *v, resp3)?,
    })
}

/// Nesting limit of a script's reply (Lua tables may be cyclic).
const MAX_REPLY_DEPTH: usize = 1000;

/// Encodes a script's return value `v` for the client (Redis's `luaReplyToRedisReply`):
/// `resp3` is the script's protocol (`redis.setresp`), which decides booleans.
fn lua_to_resp(reply: &mut Reply, v: &Value, resp3: bool, depth: usize) -> Result<(), String> {
    if depth > MAX_REPLY_DEPTH {
        return Err("reached lua stack limit".into());
    }
    match v {
        Value::String(s) => reply.bulk(&s.as_bytes()),
        Value::Boolean(b) => {
            if resp3 {
                reply.boolean(*b);
            } else if *b {
                reply.int(1);
            } else {
                reply.null();
            }
        }
        Value::Integer(n) => reply.int(*n),
        Value::Number(n) => reply.int(float_to_i64(*n)),
        Value::Table(t) => {
            if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
                let msg = String::from_utf8_lossy(&e.as_bytes()).into_owned();
                let msg = msg.strip_prefix('-').unwrap_or(&msg).to_string();
                reply.error(&sanitize(&msg));
                return Ok(());
            }
            if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
                let text = String::from_utf8_lossy(&s.as_bytes()).into_owned();
                reply.simple(&sanitize(&text));
                return Ok(());
            }
            if let Ok(Value::Number(_) | Value::Integer(_)) = t.raw_get::<Value>("double") {
                // Read as f64 straight from the Lua stack: mlua's `Value` (Lua 5.1) turns a
                // number within f64::EPSILON of an integer into `Integer`, so 1e-20 would
                // print as 0.
                if let Ok(d) = t.raw_get::<f64>("double") {
                    reply.double(d);
                    return Ok(());
                }
            }
            if let Ok(Value::String(s)) = t.raw_get::<Value>("big_number") {
                let digits: Vec<u8> = s
                    .as_bytes()
                    .iter()
                    .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
                    .collect();
                big_number(reply, &digits);
                return Ok(());
            }
            if let Ok(Value::Table(vt)) = t.raw_get::<Value>("verbatim_string") {
                if let (Ok(Value::String(fmt)), Ok(Value::String(s))) =
                    (vt.raw_get::<Value>("format"), vt.raw_get::<Value>("string"))
                {
                    verbatim(reply, &fmt.as_bytes(), &s.as_bytes());
                    return Ok(());
                }
            }
            if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
                let pairs: Vec<(Value, Value)> = m
                    .pairs::<Value, Value>()
                    .collect::<mlua::Result<_>>()
                    .map_err(|e| e.to_string())?;
                reply.map(pairs.len());
                for (k, v) in &pairs {
                    lua_to_resp(reply, k, resp3, depth + 1)?;
                    lua_to_resp(reply, v, resp3, depth + 1)?;
                }
                return Ok(());
            }
            if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
                let keys: Vec<Value> = s
                    .pairs::<Value, Value>()
                    .map(|p| p.map(|(k, _)| k))
                    .collect::<mlua::Result<_>>()
                    .map_err(|e| e.to_string())?;
                reply.set(keys.len());
                for k in &keys {
                    lua_to_resp(reply, k, resp3, depth + 1)?;
                }
                return Ok(());
            }
            let mut items = Vec::new();
            loop {
                match t.raw_get::<Value>(items.len() + 1) {
                    Ok(Value::Nil) | Err(_) => break,
                    Ok(v) => items.push(v),
                }
            }
            reply.array(items.len());
            for item in &items {
                lua_to_resp(reply, item, resp3, depth + 1)?;
            }
        }
        _ => reply.null(),
    }
    Ok(())
}

/// `(long long)` of a Lua number as C converts it on x86-64 (`cvttsd2si`): truncation, and
/// `i64::MIN` for NaN and anything outside the i64 range (both directions).
fn float_to_i64(n: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if (-LIMIT..LIMIT).contains(&n) {
        n as i64
    } else {
        i64::MIN
    }
}

fn big_number(reply: &mut Reply, digits: &[u8]) {
    if reply.proto == Proto::Resp3 {
        reply.buf.push(b'(');
        reply.buf.extend_from_slice(digits);
        reply.buf.extend_from_slice(b"\r\n");
    } else {
        reply.bulk(digits);
    }
}

fn verbatim(reply: &mut Reply, fmt: &[u8], text: &[u8]) {
    if reply.proto == Proto::Resp3 {
        let mut f = [b' '; 3];
        for (d, s) in f.iter_mut().zip(fmt) {
            *d = *s;
        }
        let len = text.len() + 4;
        reply.buf.push(b'=');
        reply.buf.extend_from_slice(len.to_string().as_bytes());
        reply.buf.extend_from_slice(b"\r\n");
        reply.buf.extend_from_slice(&f);
        reply.buf.push(b':');
        reply.buf.extend_from_slice(text);
        reply.buf.extend_from_slice(b"\r\n");
    } else {
        reply.bulk(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_flags_and_errors_are_redis_s() {
        assert!(shebang(b"return 1").unwrap().0.compat);
        let (f, n) = shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(f.no_writes && f.allow_oom && !f.compat);
        assert_eq!(n, 31);
        assert_eq!(
            shebang(b"#!lua\nreturn 1").unwrap().0,
            ScriptFlags::default()
        );
        assert_eq!(
            shebang(b"#!lua flags=bad\n").unwrap_err(),
            "ERR Unexpected flag in script shebang: bad"
        );
        assert_eq!(
            shebang(b"#!python\n").unwrap_err(),
            "ERR Unexpected engine in script shebang: #!python"
        );
        assert_eq!(shebang(b"#!lua").unwrap_err(), "ERR Invalid script shebang");
        assert_eq!(
            shebang(b"#!lua foo=bar\n").unwrap_err(),
            "ERR Unknown lua shebang option: foo=bar"
        );
    }

    #[test]
    fn rand48_matches_redis_after_randomseed() {
        // Redis 7.0: `math.randomseed(7); return tostring(math.random())` gives
        // 0.26644419658298 (rand48, as Redis's own generator).
        rand48_seed(7);
        let r = (rand48_next() % i32::MAX) as f64 / i32::MAX as f64;
        assert!((r - 0.266_444_196_582_98).abs() < 1e-12, "{r}");
    }
}
