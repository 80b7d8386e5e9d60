//! Functions: FUNCTION LOAD, DELETE, LIST, FLUSH, KILL, STATS and FCALL / FCALL_RO.
//!
//! The registry of libraries (their code, and the names and flags of their functions) is
//! shared by the workers; each worker loads every library into its own interpreter the
//! first time it runs a function after a change (the registry's epoch).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::commands::parse_i64;
use crate::conn::Conn;

use super::{vm, Prepared};

/// The libraries loaded with FUNCTION LOAD.
#[derive(Default)]
pub struct Libraries {
    libs: Mutex<BTreeMap<String, Library>>,
    /// Bumped on every change: workers reload their functions.
    epoch: AtomicU64,
}

/// One library.
struct Library {
    code: Arc<[u8]>,
    /// Its functions: name, flags, description.
    functions: BTreeMap<String, (Vec<String>, Option<String>)>,
}

impl Libraries {
    /// Number of libraries and of functions.
    pub fn counts(&self) -> (usize, usize) {
        let libs = self.libs.lock().expect("libraries");
        (libs.len(), libs.values().map(|l| l.functions.len()).sum())
    }

    fn codes(&self) -> Vec<Arc<[u8]>> {
        let libs = self.libs.lock().expect("libraries");
        libs.values().map(|l| l.code.clone()).collect()
    }

    fn bump(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }
}

/// The library name in `code`'s first line (`#!lua name=<name>`), checked as Redis checks
/// it.
fn library_name(code: &[u8]) -> Result<String, String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let end = memchr::memchr(b'\n', code).unwrap_or(code.len());
    let line = String::from_utf8_lossy(&code[2..end]).into_owned();
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let Some(engine) = parts.next() else {
        return Err("ERR Invalid library metadata".into());
    };
    let mut name = None;
    for part in parts {
        match part.strip_prefix("name=") {
            Some(n) if name.is_none() => name = Some(n.to_string()),
            Some(_) => {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                )
            }
            None => return Err(format!("ERR Invalid metadata value given: {part}")),
        }
    }
    let Some(name) = name else {
        return Err("ERR Library name was not given".into());
    };
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    Ok(name)
}

/// FCALL / FCALL_RO: the function to run, checked as Redis checks it.
pub fn prepare(c: &Conn, argv: &[&[u8]]) -> Result<Prepared, String> {
    let ro = argv[0].eq_ignore_ascii_case(b"fcall_ro");
    let libraries = &c.shared.scripts.libraries;
    // Function names are case-insensitive, as Redis's.
    let name = String::from_utf8_lossy(argv[1]).to_ascii_lowercase();
    let epoch = libraries.epoch.load(Ordering::SeqCst);
    let Some(script) = vm::local().function(&name, epoch, || libraries.codes()) else {
        return Err("ERR Function not found".into());
    };
    let Some(numkeys) = parse_i64(argv[2]) else {
        return Err("ERR Bad number of keys provided".into());
    };
    if numkeys > (argv.len() - 3) as i64 {
        return Err("ERR Number of keys can't be greater than number of args".into());
    }
    if numkeys < 0 {
        return Err("ERR Number of keys can't be negative".into());
    }
    if ro && !script.flags.no_writes {
        return Err("ERR Can not execute a script with write flag using *_ro command.".into());
    }
    if !script.flags.no_writes && !script.flags.allow_oom && crate::memory::over_maxmemory() {
        return Err(
            "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"
                .into(),
        );
    }
    let n = numkeys as usize;
    Ok(Prepared {
        read_only: ro || script.flags.no_writes,
        sha: name,
        script,
        keys: argv[3..3 + n].iter().map(|k| k.to_vec()).collect(),
        args: argv[3 + n..].iter().map(|a| a.to_vec()).collect(),
        function: true,
        command: argv.iter().map(|a| a.to_vec()).collect(),
    })
}

/// FUNCTION LOAD | DELETE | LIST | FLUSH | KILL | STATS | HELP.
pub fn function(c: &mut Conn, a: &[&[u8]]) {
    let sub = a[1].to_ascii_lowercase();
    let scripts = c.shared.scripts.clone();
    let libraries = &scripts.libraries;
    match sub.as_slice() {
        b"load" => {
            let mut replace = false;
            let mut i = 2;
            while i + 1 < a.len() {
                if a[i].eq_ignore_ascii_case(b"replace") {
                    replace = true;
                    i += 1;
                } else {
                    let opt = String::from_utf8_lossy(a[i]);
                    c.reply.error(&format!("ERR Unknown option given: {opt}"));
                    return;
                }
            }
            let Some(code) = a.get(i) else {
                c.reply.error("ERR Function code is missing");
                return;
            };
            let name = match library_name(code) {
                Ok(n) => n,
                Err(e) => {
                    c.reply.error(&e);
                    return;
                }
            };
            let mut libs = libraries.libs.lock().expect("libraries");
            if libs.contains_key(&name) && !replace {
                c.reply
                    .error(&format!("ERR Library '{name}' already exists"));
                return;
            }
            let loaded = match vm::local().load_library(code) {
                Ok(f) => f,
                Err(e) => {
                    c.reply.error(&e);
                    return;
                }
            };
            for f in &loaded {
                let taken = libs.iter().any(|(lib, l)| {
                    *lib != name && l.functions.keys().any(|k| k.eq_ignore_ascii_case(&f.name))
                });
                if taken {
                    c.reply
                        .error(&format!("ERR Function {} already exists", f.name));
                    return;
                }
            }
            let functions = loaded
                .into_iter()
                .map(|f| (f.name, (f.flags, f.description)))
                .collect();
            libs.insert(
                name.clone(),
                Library {
                    code: Arc::from(&code[..]),
                    functions,
                },
            );
            drop(libs);
            libraries.bump();
            c.reply.bulk(name.as_bytes());
        }
        b"delete" => {
            if a.len() != 3 {
                c.reply
                    .error("ERR wrong number of arguments for 'function|delete' command");
                return;
            }
            let name = String::from_utf8_lossy(a[2]).into_owned();
            let removed = libraries.libs.lock().expect("libraries").remove(&name);
            if removed.is_some() {
                libraries.bump();
                c.reply.ok();
            } else {
                c.reply.error("ERR Library not found");
            }
        }
        b"flush" if a.len() > 3 => c.reply.error(
            "ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.",
        ),
        b"flush" => {
            let ok = match a.len() {
                2 => true,
                3 => a[2].eq_ignore_ascii_case(b"async") || a[2].eq_ignore_ascii_case(b"sync"),
                _ => false,
            };
            if ok {
                libraries.libs.lock().expect("libraries").clear();
                libraries.bump();
                c.reply.ok();
            } else {
                c.reply
                    .error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
            }
        }
        b"list" => list(c, a, libraries),
        b"kill" => {
            let running = scripts.running.lock().expect("running script").clone();
            match running {
                Some(r) if !r.function => c.reply.error(super::BUSY_ERROR),
                Some(r) if r.wrote.load(Ordering::Relaxed) => c.reply.error(
                    "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
                ),
                Some(r) => {
                    r.kill.store(true, Ordering::Relaxed);
                    c.reply.ok();
                }
                None => c.reply.error("NOTBUSY No scripts in execution right now."),
            }
        }
        b"stats" => {
            let (nlibs, nfuncs) = libraries.counts();
            c.reply.map(2);
            c.reply.bulk(b"running_script");
            let running = scripts.running.lock().expect("running script").clone();
            match running {
                Some(r) => {
                    c.reply.map(3);
                    c.reply.bulk(b"name");
                    c.reply.bulk(r.name.as_bytes());
                    c.reply.bulk(b"command");
                    c.reply.array(r.command.len());
                    for a in &r.command {
                        c.reply.bulk(a);
                    }
                    c.reply.bulk(b"duration_ms");
                    c.reply.int(r.started.elapsed().as_millis() as i64);
                }
                None => c.reply.null(),
            }
            c.reply.bulk(b"engines");
            c.reply.map(1);
            c.reply.bulk(b"LUA");
            c.reply.map(2);
            c.reply.bulk(b"libraries_count");
            c.reply.int(nlibs as i64);
            c.reply.bulk(b"functions_count");
            c.reply.int(nfuncs as i64);
        }
        b"dump" | b"restore" => c.reply.error(
            "ERR FUNCTION DUMP and RESTORE are not supported by Skerry yet (they need Redis's RDB payload codec)",
        ),
        _ => c.reply.simple_lines(&[
            "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "HELP",
            "    Print this help.",
        ]),
    }
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
fn list(c: &mut Conn, a: &[&[u8]], libraries: &Libraries) {
    let mut pattern: Option<Vec<u8>> = None;
    let mut with_code = false;
    let mut i = 2;
    while i < a.len() {
        if a[i].eq_ignore_ascii_case(b"withcode") && !with_code {
            with_code = true;
            i += 1;
        } else if a[i].eq_ignore_ascii_case(b"libraryname") && pattern.is_none() {
            let Some(p) = a.get(i + 1) else {
                c.reply.error("ERR library name argument was not given");
                return;
            };
            pattern = Some(p.to_vec());
            i += 2;
        } else {
            let arg = String::from_utf8_lossy(a[i]);
            c.reply.error(&format!("ERR Unknown argument {arg}"));
            return;
        }
    }
    let libs = libraries.libs.lock().expect("libraries");
    let chosen: Vec<(&String, &Library)> = libs
        .iter()
        .filter(|(name, _)| {
            pattern
                .as_ref()
                .is_none_or(|p| crate::glob::glob_match(p, name.as_bytes(), false))
        })
        .collect();
    c.reply.array(chosen.len());
    for (name, lib) in chosen {
        c.reply.map(if with_code { 4 } else { 3 });
        c.reply.bulk(b"library_name");
        c.reply.bulk(name.as_bytes());
        c.reply.bulk(b"engine");
        c.reply.bulk(b"LUA");
        c.reply.bulk(b"functions");
        c.reply.array(lib.functions.len());
        for (fname, (flags, desc)) in &lib.functions {
            c.reply.map(3);
            c.reply.bulk(b"name");
            c.reply.bulk(fname.as_bytes());
            c.reply.bulk(b"description");
            match desc {
                Some(d) => c.reply.bulk(d.as_bytes()),
                None => c.reply.null(),
            }
            c.reply.bulk(b"flags");
            c.reply.set(flags.len());
            for f in flags {
                c.reply.bulk(f.as_bytes());
            }
        }
        if with_code {
            c.reply.bulk(b"library_code");
            c.reply.bulk(&lib.code);
        }
    }
}
