//! Functions: FUNCTION LOAD, DELETE, LIST, FLUSH, KILL, STATS and FCALL / FCALL_RO.
//!
//! The registry of libraries (their code, and the names and flags of their functions) is
//! shared by the workers; each worker loads every library into its own interpreter the
//! first time it runs a function after a change (the registry's epoch).
//!
//! **Durable.** Every change is written to `<dir>/skerry.functions` (written whole to a
//! temporary file, synced, renamed over the old one, directory synced) before the reply,
//! so libraries survive a restart and `kill -9` as data does; the server loads the file at
//! start (docs/decisions/0027-scripts-atomic-across-workers.md, "Functions").

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::commands::parse_i64;
use crate::conn::Conn;

use super::{vm, Prepared};

/// Function flags in the order FUNCTION LIST gives them.
const FLAG_ORDER: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// Redis's DUMP payload of function libraries (FUNCTION DUMP / RESTORE): for each library
/// the RDB opcode `FUNCTION2` and its code as an RDB string, then the RDB version (2 bytes,
/// little-endian) and the CRC64 (Jones, little-endian) of everything before it. Redis
/// writes long codes LZF-compressed; Skerry reads those and writes plain strings, which
/// Redis reads too. The RDB primitives, LZF and CRC64 are `skerry-codec`'s.
mod payload {
    use skerry_codec as codec;

    /// RDB opcode of a function library (Redis 7.0+).
    const OPCODE_FUNCTION2: u8 = 245;
    /// The RDB version written (Redis 7.0's: its RESTORE refuses newer ones).
    const RDB_VERSION_WRITTEN: u16 = codec::RDB_VERSION_7_0;

    /// The payload of `codes`.
    pub fn encode(codes: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for c in codes {
            out.push(OPCODE_FUNCTION2);
            codec::write_len(&mut out, c.len() as u64);
            out.extend_from_slice(c);
        }
        codec::seal_payload(out, RDB_VERSION_WRITTEN)
    }

    /// The library codes of `data`, or the error to reply with.
    pub fn decode(data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let (body, _) = codec::open_payload(data, codec::RDB_VERSION)
            .map_err(|_| "ERR DUMP payload version or checksum are wrong".to_string())?;
        let mut r = codec::Reader::new(body);
        let mut out = Vec::new();
        while r.remaining() > 0 {
            match r.byte() {
                Ok(OPCODE_FUNCTION2) => {}
                Ok(_) => return Err("ERR given type is not a function".into()),
                Err(_) => return Err("ERR can not read data type".into()),
            }
            match r.string() {
                Ok(code) => out.push(code),
                Err(_) => return Err("ERR failed loading the given functions payload".into()),
            }
        }
        Ok(out)
    }
}

/// The libraries loaded with FUNCTION LOAD.
#[derive(Default)]
pub struct Libraries {
    libs: Mutex<BTreeMap<String, Library>>,
    /// Bumped on every change: workers reload their functions.
    epoch: AtomicU64,
    /// Where the libraries are kept (None: not kept, e.g. in unit tests).
    file: Mutex<Option<std::path::PathBuf>>,
}

/// First bytes of the libraries file.
const FILE_MAGIC: &[u8; 8] = b"SKFUNC1\n";

/// The libraries file's bytes: magic, then each library's code as a little-endian u32
/// length and the bytes, then the CRC32C of everything before it.
fn encode_file(codes: &[Arc<[u8]>]) -> Vec<u8> {
    let mut out = FILE_MAGIC.to_vec();
    for c in codes {
        out.extend_from_slice(&(c.len() as u32).to_le_bytes());
        out.extend_from_slice(c);
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The library codes of a libraries file, or why it cannot be read.
fn decode_file(data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    if data.len() < FILE_MAGIC.len() + 4 || &data[..FILE_MAGIC.len()] != FILE_MAGIC {
        return Err("not a Skerry functions file".into());
    }
    let (body, crc) = data.split_at(data.len() - 4);
    if crc32c::crc32c(body).to_le_bytes() != crc {
        return Err("checksum mismatch (damaged)".into());
    }
    let mut rest = &body[FILE_MAGIC.len()..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        if rest.len() < 4 {
            return Err("truncated".into());
        }
        let n = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        rest = &rest[4..];
        if rest.len() < n {
            return Err("truncated".into());
        }
        out.push(rest[..n].to_vec());
        rest = &rest[n..];
    }
    Ok(out)
}

/// One library.
#[derive(Clone)]
struct Library {
    code: Arc<[u8]>,
    /// Its functions: name, flags, description.
    functions: BTreeMap<String, (Vec<String>, Option<String>)>,
}

impl Library {
    /// Library `code` with the functions it registered when it loaded.
    fn new(code: &[u8], loaded: Vec<vm::LoadedFunction>) -> Library {
        Library {
            code: Arc::from(code),
            functions: loaded
                .into_iter()
                .map(|f| (f.name, (f.flags, f.description)))
                .collect(),
        }
    }
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

    /// Loads the libraries kept in `dir` (none when there is no file yet) and keeps them
    /// there from now on. A file that cannot be read is an error: starting without the
    /// libraries would lose them at the next change.
    pub fn open(&self, dir: &std::path::Path) -> Result<usize, String> {
        let path = dir.join("skerry.functions");
        let codes = match std::fs::read(&path) {
            Ok(data) => decode_file(&data).map_err(|e| format!("{}: {e}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let mut libs = self.libs.lock().expect("libraries");
        for code in codes {
            let name = library_name(&code).map_err(|e| format!("{}: {e}", path.display()))?;
            let loaded = vm::local()
                .load_library(&code)
                .map_err(|e| format!("{}: library '{name}': {e}", path.display()))?;
            libs.insert(name, Library::new(&code, loaded));
        }
        let n = libs.len();
        drop(libs);
        *self.file.lock().expect("libraries file") = Some(path);
        self.bump();
        Ok(n)
    }

    /// Writes `libs` to the libraries file, durably (see the module doc).
    fn save(&self, libs: &BTreeMap<String, Library>) -> std::io::Result<()> {
        use std::io::Write;
        let Some(path) = self.file.lock().expect("libraries file").clone() else {
            return Ok(());
        };
        let codes: Vec<Arc<[u8]>> = libs.values().map(|l| l.code.clone()).collect();
        let tmp = path.with_extension("functions.tmp");
        {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&encode_file(&codes))?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &path)?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}

/// The library name in `code`'s first line (`#!lua name=<name>`), checked as Redis checks
/// it.
fn library_name(code: &[u8]) -> Result<String, String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let Some(end) = memchr::memchr(b'\n', code) else {
        return Err("ERR Invalid library metadata".into());
    };
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
    if !script.flags.no_writes && c.shared.repl.read_only_for(&c.shared, c.info.id) {
        return Err(crate::replica::READONLY.into());
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
            let old = libs.insert(name.clone(), Library::new(code, loaded));
            if let Err(e) = libraries.save(&libs) {
                // Not kept: the registry goes back to what the file holds.
                match old {
                    Some(o) => libs.insert(name.clone(), o),
                    None => libs.remove(&name),
                };
                c.reply
                    .error(&format!("ERR the libraries could not be saved: {e}"));
                return;
            }
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
            let mut libs = libraries.libs.lock().expect("libraries");
            let Some(removed) = libs.remove(&name) else {
                c.reply.error("ERR Library not found");
                return;
            };
            if let Err(e) = libraries.save(&libs) {
                libs.insert(name, removed);
                c.reply
                    .error(&format!("ERR the libraries could not be saved: {e}"));
                return;
            }
            drop(libs);
            libraries.bump();
            c.reply.ok();
        }
        b"flush" if a.len() > 3 => {
            crate::commands::subcommand_syntax_error(&mut c.reply, "FUNCTION", a[1])
        }
        b"flush" => {
            let ok = match a.len() {
                2 => true,
                3 => a[2].eq_ignore_ascii_case(b"async") || a[2].eq_ignore_ascii_case(b"sync"),
                _ => false,
            };
            if ok {
                let mut libs = libraries.libs.lock().expect("libraries");
                let old = std::mem::take(&mut *libs);
                if let Err(e) = libraries.save(&libs) {
                    *libs = old;
                    c.reply
                        .error(&format!("ERR the libraries could not be saved: {e}"));
                    return;
                }
                drop(libs);
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
        b"dump" => {
            let libs = libraries.libs.lock().expect("libraries");
            let codes: Vec<&[u8]> = libs.values().map(|l| &l.code[..]).collect();
            let data = payload::encode(&codes);
            drop(libs);
            c.reply.bulk(&data);
        }
        b"restore" => restore(c, a, libraries),
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

/// How restored libraries meet the ones already loaded (FUNCTION RESTORE's policy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestorePolicy {
    /// A library of the same name is an error.
    Append,
    /// A library of the same name is replaced.
    Replace,
    /// Every loaded library goes first.
    Flush,
}

impl Libraries {
    /// The code of every library, in name order (RDB files).
    pub fn all_codes(&self) -> Vec<Arc<[u8]>> {
        self.codes()
    }

    /// Loads the libraries `codes` under `policy`: all of them or none (every library is
    /// checked, and its functions listed, before anything changes), kept durably. Err
    /// with the reply's message.
    pub fn restore(&self, codes: Vec<Vec<u8>>, policy: RestorePolicy) -> Result<(), String> {
        let mut incoming: BTreeMap<String, Library> = BTreeMap::new();
        for code in codes {
            let name = library_name(&code)?;
            let loaded = vm::local().load_library(&code)?;
            incoming.insert(name, Library::new(&code, loaded));
        }
        let mut libs = self.libs.lock().expect("libraries");
        let old = libs.clone();
        if policy == RestorePolicy::Flush {
            libs.clear();
        }
        for (name, lib) in incoming {
            if libs.contains_key(&name) {
                if policy == RestorePolicy::Append {
                    *libs = old;
                    return Err(format!("ERR Library {name} already exists"));
                }
                libs.remove(&name);
            }
            for f in lib.functions.keys() {
                if libs
                    .values()
                    .any(|l| l.functions.keys().any(|k| k.eq_ignore_ascii_case(f)))
                {
                    *libs = old;
                    return Err(format!("ERR Function {f} already exists"));
                }
            }
            libs.insert(name, lib);
        }
        if let Err(e) = self.save(&libs) {
            *libs = old;
            return Err(format!("ERR the libraries could not be saved: {e}"));
        }
        drop(libs);
        self.bump();
        Ok(())
    }
}

/// FUNCTION RESTORE serialized-value [FLUSH|APPEND|REPLACE]
fn restore(c: &mut Conn, a: &[&[u8]], libraries: &Libraries) {
    if a.len() > 4 {
        crate::commands::subcommand_syntax_error(&mut c.reply, "FUNCTION", a[1]);
        return;
    }
    let policy = match a.get(3) {
        None => RestorePolicy::Append,
        Some(p) if p.eq_ignore_ascii_case(b"append") => RestorePolicy::Append,
        Some(p) if p.eq_ignore_ascii_case(b"replace") => RestorePolicy::Replace,
        Some(p) if p.eq_ignore_ascii_case(b"flush") => RestorePolicy::Flush,
        Some(_) => {
            c.reply.error(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            );
            return;
        }
    };
    let codes = match payload::decode(a[2]) {
        Ok(c) => c,
        Err(e) => {
            c.reply.error(&e);
            return;
        }
    };
    match libraries.restore(codes, policy) {
        Ok(()) => c.reply.ok(),
        Err(e) => c.reply.error(&e),
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
                .is_none_or(|p| crate::glob::glob_match(p, name.as_bytes(), true))
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
            // Redis lists them in its own order, as status replies.
            let listed: Vec<&str> = FLAG_ORDER
                .iter()
                .copied()
                .filter(|f| flags.iter().any(|g| g == f))
                .collect();
            c.reply.bulk(b"flags");
            c.reply.set(listed.len());
            for f in listed {
                c.reply.simple(f);
            }
        }
        if with_code {
            c.reply.bulk(b"library_code");
            c.reply.bulk(&lib.code);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_file_round_trips_and_refuses_damage() {
        let codes: Vec<Arc<[u8]>> = vec![
            Arc::from(&b"#!lua name=a\nredis.register_function('f', function() end)"[..]),
            Arc::from(&b""[..]),
        ];
        let data = encode_file(&codes);
        let back = decode_file(&data).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(&back[0][..], &codes[0][..]);
        let mut bad = data.clone();
        bad[12] ^= 1;
        assert!(decode_file(&bad).unwrap_err().contains("checksum"));
        assert!(decode_file(&data[..data.len() - 1]).is_err());
        assert!(decode_file(b"nonsense").is_err());
    }

    /// FUNCTION DUMP of Debian's redis-server 7.0.15 after loading library `dumplib` (two
    /// functions; Redis compressed the code with LZF).
    const REDIS_DUMP_HEX: &str = "f5c340ae40f11f23216c7561206e616d653d64756d706c69620a72656469732e726567697374650b725f66756e6374696f6e28274020055f6631272c20e00013116b6579732c2061726773292072657475726e2006403e0863616c6c2827676574202d4024085b315d2920656e6429e00f5e007bc053005f608ca06c0032203e404a046261636b3dc0210028e0006b062768656c6c6f20e008050027406a20a6126c6167733d7b276e6f2d777269746573277d7d0a00c32f4e069cda221d";

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn a_redis_function_dump_decodes_to_its_library_code() {
        let codes = payload::decode(&unhex(REDIS_DUMP_HEX)).unwrap();
        assert_eq!(codes.len(), 1);
        let code = String::from_utf8(codes[0].clone()).unwrap();
        assert!(code.starts_with("#!lua name=dumplib\nredis.register_function('dump_f1', function(keys, args) return redis.call('get', keys[1]) end)"), "{code}");
        assert!(
            code.contains("function_name='dump_f2'") && code.contains("'hello hello hello hello'"),
            "{code}"
        );
        // A flipped bit is refused, as a newer RDB version would be.
        let mut bad = unhex(REDIS_DUMP_HEX);
        bad[20] ^= 1;
        assert_eq!(
            payload::decode(&bad).unwrap_err(),
            "ERR DUMP payload version or checksum are wrong"
        );
    }

    #[test]
    fn skerry_function_dumps_round_trip() {
        let long = vec![b'x'; 20_000];
        let codes: Vec<&[u8]> = vec![b"#!lua name=a\n", &long, b""];
        let data = payload::encode(&codes);
        let back = payload::decode(&data).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back[1], long);
        assert!(payload::decode(&data[..5]).is_err());
    }

    #[test]
    fn library_names_are_checked_as_redis_checks_them() {
        assert_eq!(library_name(b"#!lua name=lib_1\n").unwrap(), "lib_1");
        assert_eq!(
            library_name(b"#!lua name=a").unwrap_err(),
            "ERR Invalid library metadata"
        );
        assert_eq!(
            library_name(b"return 1").unwrap_err(),
            "ERR Missing library metadata"
        );
        assert_eq!(
            library_name(b"#!lua\n").unwrap_err(),
            "ERR Library name was not given"
        );
        assert_eq!(
            library_name(b"#!js name=x\n").unwrap_err(),
            "ERR Engine 'js' not found"
        );
        assert_eq!(
            library_name(b"#!lua name=x foo=bar\n").unwrap_err(),
            "ERR Invalid metadata value given: foo=bar"
        );
        assert!(library_name(b"#!lua name=a-b\n").is_err());
    }
}
