//! Server commands (Redis's `server.c`, `config.c`, `debug.c`): COMMAND, CONFIG, INFO, TIME,
//! LASTSAVE, SHUTDOWN, DEBUG.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use super::docs;
use super::keyspecs as ks;
use super::{is, lookup, CommandSpec, SubSpec, COMMANDS};
use crate::config::{self, ConfigError};
use crate::conn::Conn;
use crate::glob::glob_match;
use crate::reply::Reply;
use crate::worker::unix_ms;
use skerry_resp::{self as resp, Proto};

/// TIME. Inside a script or EXEC it is the time the script or EXEC started (Redis 8.0 does
/// not update its cached clock for nested calls): a script's loop on TIME never advances.
pub fn time(c: &mut Conn, _a: &[&[u8]]) {
    let (secs, micros) = if c.in_script || c.in_exec {
        (c.now_ms.div_euclid(1000), c.now_ms.rem_euclid(1000) * 1000)
    } else {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        (now.as_secs() as i64, i64::from(now.subsec_micros()))
    };
    c.reply.array(2);
    c.reply.bulk_int(secs);
    c.reply.bulk_int(micros);
}

/// LASTSAVE
pub fn lastsave(c: &mut Conn, _a: &[&[u8]]) {
    c.reply.int(c.shared.rdb.lastsave_s.load(Ordering::Relaxed));
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]
pub fn shutdown(c: &mut Conn, a: &[&[u8]]) {
    for opt in &a[1..] {
        if is(opt, "abort") {
            c.reply.error("ERR No shutdown in progress.");
            return;
        }
        if !(is(opt, "nosave") || is(opt, "save") || is(opt, "now") || is(opt, "force")) {
            c.reply.error(super::super::reply::errors::SYNTAX);
            return;
        }
    }
    tracing::warn!("User requested shutdown...");
    c.shared.request_shutdown();
    // No reply: the connection closes when the process exits, as with Redis.
    c.close_after_reply = true;
}

/// DEBUG subcommand ...
pub fn debug(c: &mut Conn, a: &[&[u8]]) {
    let sub = a[1].to_ascii_lowercase();
    match sub.as_slice() {
        b"sleep" if a.len() == 3 => {
            let secs = super::parse_f64(a[2]).unwrap_or(0.0).max(0.0);
            // Like Redis, DEBUG SLEEP blocks the worker thread.
            std::thread::sleep(std::time::Duration::from_secs_f64(secs));
            c.reply.ok();
        }
        b"protocol" if a.len() == 3 => debug_protocol(c, a[2]),
        b"set-active-expire" if a.len() == 3 => {
            // Redis reads the flag with atoi: anything not a non-zero number is 0 (off).
            let on = super::parse_i64(a[2]).is_some_and(|n| n != 0);
            c.shared.active_expire.store(on, Ordering::Relaxed);
            c.reply.ok();
        }
        b"help" => {
            c.reply.array(16);
            c.reply
                .simple("DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
            c.reply.simple("DIGEST");
            c.reply
                .simple("    Output a hex signature representing the current DB content.");
            c.reply.simple("DIGEST-VALUE <key> [<key> ...]");
            c.reply
                .simple("    Output a hex signature of the values of all the specified keys.");
            c.reply.simple("RELOAD [option ...]");
            c.reply.simple(
                "    Save the RDB on disk and reload it back to memory. Available <option> values:",
            );
            c.reply.simple(
                "    * MERGE: Merge the content of the RDB instead of flushing the current data.",
            );
            c.reply
                .simple("    * NOFLUSH: Do not flush the current data before loading.");
            c.reply
                .simple("    * NOSAVE: Do not save the RDB on disk before reloading.");
            c.reply.simple("SLEEP <seconds>");
            c.reply
                .simple("    Stop the server for <seconds>. Decimals allowed.");
            c.reply.simple("SET-ACTIVE-EXPIRE <0|1>");
            c.reply.simple(
                "    Setting it to 0 disables expiring keys in background when they are not",
            );
            c.reply.simple(
                "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            );
            c.reply.simple("    default.");
        }
        _ => crate::commands::subcommand_syntax_error(&mut c.reply, "DEBUG", a[1]),
    }
}

/// DEBUG PROTOCOL type: one reply of each RESP type, as Redis's `debug.c` gives them (for
/// clients' and tests' protocol checks).
#[allow(clippy::approx_constant)] // Redis's double is 3.141, not π.
fn debug_protocol(c: &mut Conn, name: &[u8]) {
    let proto = c.reply.proto;
    let buf = &mut c.reply.buf;
    match name.to_ascii_lowercase().as_slice() {
        b"string" => resp::bulk(buf, b"Hello World"),
        b"integer" => resp::integer(buf, 12345),
        b"double" => resp::double(buf, 3.141, proto),
        b"bignum" => resp::big_number(buf, b"1234567999999999999999999999999999999", proto),
        b"null" => resp::null(buf, proto),
        b"array" | b"set" => {
            if name.eq_ignore_ascii_case(b"set") {
                resp::set_len(buf, 3, proto);
            } else {
                resp::array_len(buf, 3);
            }
            (0..3).for_each(|j| resp::integer(buf, j));
        }
        b"map" => {
            resp::map_len(buf, 3, proto);
            for j in 0..3 {
                resp::integer(buf, j);
                resp::boolean(buf, j == 1, proto);
            }
        }
        b"attrib" => {
            if proto != Proto::Resp2 {
                resp::attribute_len(buf, 1);
                resp::bulk(buf, b"key-popularity");
                resp::array_len(buf, 2);
                resp::bulk(buf, b"key:123");
                resp::integer(buf, 90);
            }
            // An attribute is not a reply: a real one follows.
            resp::bulk(buf, b"Some real reply following the attribute");
        }
        b"push" => {
            if proto == Proto::Resp2 {
                c.reply.error("ERR RESP2 is not supported by this command");
                return;
            }
            let pushing = std::mem::replace(&mut c.pushing, true);
            resp::push_len(&mut c.reply.buf, 2, proto);
            resp::bulk(&mut c.reply.buf, b"server-cpu-usage");
            resp::integer(&mut c.reply.buf, 42);
            c.pushing = pushing;
            // A push is not a reply either.
            resp::bulk(&mut c.reply.buf, b"Some real reply following the push reply");
        }
        b"true" => resp::boolean(buf, true, proto),
        b"false" => resp::boolean(buf, false, proto),
        b"verbatim" => resp::verbatim(buf, b"txt", b"This is a verbatim\nstring", proto),
        _ => c.reply.error("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false"),
    }
}

// ---------------------------------------------------------------------------------------
// COMMAND

fn write_flags(r: &mut Reply, flags: &[&str]) {
    r.set(flags.len());
    for f in flags {
        r.simple(f);
    }
}

/// Key-spec flags Skerry synthesizes for a command Redis does not have.
fn key_flags(write: bool) -> u16 {
    if write {
        ks::KS_RW | ks::KS_UPDATE
    } else {
        ks::KS_RO | ks::KS_ACCESS
    }
}

/// Key flags as Redis prints them (a set: access kinds upper-case, operations lower-case).
fn write_key_flags(r: &mut Reply, bits: u16) {
    let names: Vec<&str> = ks::KS_NAMES
        .iter()
        .filter(|(b, _)| bits & b != 0)
        .map(|(_, n)| *n)
        .collect();
    write_flags(r, &names);
}

/// One key specification, as Redis's `addReplyCommandKeySpecs` writes it.
fn write_spec(r: &mut Reply, s: &ks::KeySpec) {
    r.map(3 + usize::from(s.notes.is_some()));
    if let Some(n) = s.notes {
        r.bulk_str("notes");
        r.bulk_str(n);
    }
    r.bulk_str("flags");
    write_key_flags(r, s.flags);
    r.bulk_str("begin_search");
    r.map(2);
    r.bulk_str("type");
    match s.begin {
        ks::Begin::Index(i) => {
            r.bulk_str("index");
            r.bulk_str("spec");
            r.map(1);
            r.bulk_str("index");
            r.int(i64::from(i));
        }
        ks::Begin::Keyword(k, from) => {
            r.bulk_str("keyword");
            r.bulk_str("spec");
            r.map(2);
            r.bulk_str("keyword");
            r.bulk_str(k);
            r.bulk_str("startfrom");
            r.int(i64::from(from));
        }
        ks::Begin::Unknown => {
            r.bulk_str("unknown");
            r.bulk_str("spec");
            r.map(0);
        }
    }
    r.bulk_str("find_keys");
    r.map(2);
    r.bulk_str("type");
    match s.find {
        ks::Find::Range(last, step, limit) => {
            r.bulk_str("range");
            r.bulk_str("spec");
            r.map(3);
            r.bulk_str("lastkey");
            r.int(i64::from(last));
            r.bulk_str("keystep");
            r.int(i64::from(step));
            r.bulk_str("limit");
            r.int(i64::from(limit));
        }
        ks::Find::Keynum(idx, first, step) => {
            r.bulk_str("keynum");
            r.bulk_str("spec");
            r.map(3);
            r.bulk_str("keynumidx");
            r.int(i64::from(idx));
            r.bulk_str("firstkey");
            r.int(i64::from(first));
            r.bulk_str("keystep");
            r.int(i64::from(step));
        }
        ks::Find::Unknown => {
            r.bulk_str("unknown");
            r.bulk_str("spec");
            r.map(0);
        }
    }
}

/// The key specifications of `name`: Redis's (from [`ks::COMMAND_KEYS`]), or for a
/// Skerry-only command one range spec from its first/last/step.
fn write_key_specs(r: &mut Reply, name: &str, first: i32, last: i32, step: i32, write: bool) {
    if let Some(k) = ks::find(name) {
        r.set(k.specs.len());
        for s in k.specs {
            write_spec(r, s);
        }
        return;
    }
    if first <= 0 {
        r.set(0);
        return;
    }
    let lastkey = if last < 0 { last } else { last - first };
    let spec = ks::KeySpec {
        flags: key_flags(write),
        begin: ks::Begin::Index(first),
        find: ks::Find::Range(lastkey, step, 0),
        notes: None,
    };
    r.set(1);
    write_spec(r, &spec);
}

/// Command flags in the order COMMAND INFO prints them (Redis's `addReplyFlagsForCommand`;
/// the flags it hides, such as `may_replicate`, are left out).
const INFO_FLAG_ORDER: &[&str] = &[
    "write",
    "readonly",
    "denyoom",
    "module",
    "admin",
    "pubsub",
    "noscript",
    "blocking",
    "loading",
    "stale",
    "skip_monitor",
    "skip_slowlog",
    "asking",
    "fast",
    "no_auth",
    "no_mandatory_keys",
    "no_async_loading",
    "no_multi",
    "movablekeys",
    "allow_busy",
];

/// The flags COMMAND INFO prints for a command with the table's `flags`: those Redis shows,
/// in its order, with `movablekeys` when the key specs make the command movable.
fn info_flags(name: &str, flags: &[&str]) -> Vec<&'static str> {
    let movable = ks::find(name).is_some_and(|k| k.movable);
    INFO_FLAG_ORDER
        .iter()
        .copied()
        .filter(|f| flags.contains(f) || (movable && *f == "movablekeys"))
        .collect()
}

/// ACL categories and command tips of `name` (Redis's, or the command table's categories
/// for a command Redis does not have), as COMMAND INFO prints them.
fn write_categories_and_tips(r: &mut Reply, name: &str, table_acl: &[&str]) {
    match docs::doc_of(name) {
        Some(d) => {
            write_flags(r, d.acl);
            docs::write_tips(r, d.tips);
        }
        None => {
            write_flags(r, table_acl);
            r.set(0);
        }
    }
}

fn write_sub_info(r: &mut Reply, s: &SubSpec) {
    let (first, last, step) = ks::find(s.name).map_or((0, 0, 0), |k| (k.first, k.last, k.step));
    r.array(10);
    r.bulk_str(s.name);
    r.int(s.arity as i64);
    write_flags(r, &info_flags(s.name, s.flags));
    r.int(i64::from(first));
    r.int(i64::from(last));
    r.int(i64::from(step));
    write_categories_and_tips(r, s.name, &[]);
    write_key_specs(r, s.name, first, last, step, s.flags.contains(&"write"));
    // No subcommands: an empty set, as Redis's addReplyCommandSubCommands.
    r.set(0);
}

fn write_info(r: &mut Reply, c: &CommandSpec) {
    // Redis's legacy range (a key finder's command keeps a first key only for routing).
    let (first, last, step) = match ks::find(c.name) {
        Some(k) => (k.first, k.last, k.step),
        None => (c.first_key, c.last_key, c.step),
    };
    r.array(10);
    r.bulk_str(c.name);
    r.int(c.arity as i64);
    write_flags(r, &info_flags(c.name, c.flags));
    r.int(i64::from(first));
    r.int(i64::from(last));
    r.int(i64::from(step));
    write_categories_and_tips(r, c.name, c.acl);
    write_key_specs(
        r,
        c.name,
        c.first_key,
        c.last_key,
        c.step,
        c.has_flag("write"),
    );
    if c.subcommands.is_empty() {
        r.set(0);
    } else {
        r.array(c.subcommands.len());
    }
    for s in c.subcommands {
        write_sub_info(r, s);
    }
}

/// The keys the specs find in `argv` (Redis's `getKeysUsingKeySpecs`): positions with their
/// flags, or None when a spec cannot answer (unknown, incomplete, a bad `numkeys`), where
/// Redis turns to the command's own key function.
fn keys_by_specs(specs: &[ks::KeySpec], argv: &[&[u8]]) -> Option<Vec<(usize, u16)>> {
    let argc = argv.len() as i64;
    let mut out = Vec::new();
    for s in specs {
        if s.flags & ks::KS_NOT_KEY != 0 {
            continue;
        }
        let first: i64 = match s.begin {
            ks::Begin::Index(i) => i64::from(i),
            ks::Begin::Keyword(k, from) => {
                let from = i64::from(from);
                let start = if from > 0 { from } else { argc + from };
                let end = if from > 0 { argc - 1 } else { 1 };
                let mut found = 0;
                let mut i = start;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if is(argv[i as usize], k) {
                        found = i + 1;
                        break;
                    }
                    i = if start <= end { i + 1 } else { i - 1 };
                }
                if found == 0 {
                    continue;
                }
                found
            }
            ks::Begin::Unknown => return None,
        };
        let (first, last, step) = match s.find {
            ks::Find::Range(lastkey, step, limit) => {
                let (lastkey, limit) = (i64::from(lastkey), i64::from(limit));
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, i64::from(step))
            }
            ks::Find::Keynum(idx, firstkey, step) => {
                let at = first + i64::from(idx);
                if i64::from(idx) >= argc || at >= argc {
                    return None;
                }
                let n = super::parse_i64(argv[at as usize]).filter(|&n| n >= 0)?;
                let first = first + i64::from(firstkey);
                (first, first + n - 1, i64::from(step))
            }
            ks::Find::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let mut i = first;
        while i <= last {
            out.push((i as usize, s.flags));
            i += step.max(1);
        }
        if s.flags & ks::KS_INCOMPLETE != 0 {
            return None;
        }
    }
    Some(out)
}

/// The keys of `argv` with their flags, as Redis's COMMAND GETKEYSANDFLAGS finds them: by
/// the key specs when they are reliable, else by the command's own key function (Redis's
/// `*GetKeys`; Skerry's key finder, with the flags Redis's function gives).
fn keys_and_flags(
    entry: Option<&ks::CommandKeys>,
    cmd: Option<&CommandSpec>,
    argv: &[&[u8]],
) -> Vec<(usize, u16)> {
    let Some(k) = entry else {
        // A Skerry-only command: its first/last/step.
        return cmd.map_or_else(Vec::new, |c| {
            let f = key_flags(c.has_flag("write"));
            c.key_positions(argv).iter().map(|&p| (p, f)).collect()
        });
    };
    let all: u16 = k.specs.iter().fold(0, |a, s| a | s.flags);
    let has_key = k.specs.iter().any(|s| s.flags & ks::KS_NOT_KEY == 0);
    if has_key && all & ks::KS_VARIABLE_FLAGS == 0 {
        if let Some(keys) = keys_by_specs(k.specs, argv) {
            return keys;
        }
    }
    if !k.getkeys {
        return Vec::new();
    }
    match k.name {
        "set" => {
            let f = if argv.iter().skip(3).any(|a| is(a, "get")) {
                ks::KS_RW | ks::KS_ACCESS | ks::KS_UPDATE
            } else {
                ks::KS_OW | ks::KS_UPDATE
            };
            vec![(1, f)]
        }
        "bitfield" | "bitfield_ro" => {
            let mut readonly = true;
            let mut i = 2;
            while i < argv.len() {
                let remaining = argv.len() - i - 1;
                if is(argv[i], "get") && remaining >= 2 {
                    i += 3;
                } else if (is(argv[i], "set") || is(argv[i], "incrby")) && remaining >= 3 {
                    readonly = false;
                    i += 4;
                } else if is(argv[i], "overflow") && remaining >= 1 {
                    i += 2;
                } else {
                    readonly = false;
                    break;
                }
            }
            let f = if readonly {
                ks::KS_RO | ks::KS_ACCESS
            } else {
                ks::KS_RW | ks::KS_ACCESS | ks::KS_UPDATE
            };
            vec![(1, f)]
        }
        "sort" | "sort_ro" => {
            // sortGetKeys: the key, then the last STORE's destination.
            let mut out = vec![(1, ks::KS_RO | ks::KS_ACCESS)];
            if k.name == "sort" {
                let mut store = None;
                let mut i = 2;
                while i < argv.len() {
                    let skip = if is(argv[i], "limit") {
                        2
                    } else if is(argv[i], "get") || is(argv[i], "by") {
                        1
                    } else if is(argv[i], "store") {
                        if i + 1 < argv.len() {
                            store = Some(i + 1);
                        }
                        1
                    } else {
                        0
                    };
                    i += skip + 1;
                }
                if let Some(p) = store {
                    out.push((p, ks::KS_OW | ks::KS_UPDATE));
                }
            }
            out
        }
        "migrate" => {
            // migrateGetKeys.
            let f = ks::KS_RW | ks::KS_ACCESS | ks::KS_DELETE;
            super::migrate::keys_migrate(argv)
                .into_iter()
                .map(|p| (p, f))
                .collect()
        }
        _ => {
            // The keyed commands with a key function Skerry has (numkeys commands): their
            // keys with the flags of the spec that describes each position.
            let Some(c) = cmd else { return Vec::new() };
            c.key_positions(argv)
                .iter()
                .map(|&p| {
                    let f = k
                        .specs
                        .iter()
                        .find(|s| s.begin == ks::Begin::Index(p as i32))
                        .or(k.specs.last())
                        .map_or(0, |s| s.flags);
                    (p, f)
                })
                .collect()
        }
    }
}

/// COMMAND DOCS of a command (with its subcommands' when it is a container) or of a
/// subcommand (`sub` is Some): its name and its map. A command without documentation
/// writes nothing.
fn write_docs(r: &mut Reply, c: &CommandSpec, sub: Option<&SubSpec>) {
    let name = sub.map_or(c.name, |s| s.name);
    let Some(d) = docs::doc_of(name) else {
        return;
    };
    r.bulk_str(name);
    if sub.is_none() && !c.subcommands.is_empty() {
        let subs: Vec<&docs::Doc> = c
            .subcommands
            .iter()
            .filter_map(|s| docs::doc_of(s.name))
            .collect();
        docs::write_doc(r, d, Some(&subs));
    } else {
        docs::write_doc(r, d, None);
    }
}

const COMMAND_HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all commands.",
    "COUNT",
    "    Return the total number of commands in this server.",
    "LIST",
    "    Return a list of all commands in this server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple commands.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple commands.",
    "GETKEYS <full-command>",
    "    Return the keys from a full command.",
    "HELP",
    "    Print this help.",
];

/// Finds a top-level command for COMMAND INFO/DOCS/GETKEYS.
fn find_command(name: &[u8]) -> Option<&'static CommandSpec> {
    lookup(name).map(|i| &COMMANDS[i])
}

/// Finds a `parent|sub` subcommand.
fn find_subcommand(name: &[u8]) -> Option<&'static SubSpec> {
    find_subcommand_of(name).map(|(_, s)| s)
}

/// Finds a `parent|sub` subcommand with its container.
fn find_subcommand_of(name: &[u8]) -> Option<(&'static CommandSpec, &'static SubSpec)> {
    let bar = name.iter().position(|&b| b == b'|')?;
    let parent = find_command(&name[..bar])?;
    Some((parent, parent.subcommand(&name[bar + 1..])?))
}

/// Every command name, subcommands after their parent (COMMAND LIST).
fn all_names() -> impl Iterator<Item = &'static str> {
    COMMANDS
        .iter()
        .flat_map(|c| std::iter::once(c.name).chain(c.subcommands.iter().map(|s| s.name)))
}

/// COMMAND [COUNT|INFO|DOCS|LIST|GETKEYS|HELP ...]
pub fn command(c: &mut Conn, a: &[&[u8]]) {
    if a.len() == 1 {
        c.reply.array(COMMANDS.len());
        for cmd in COMMANDS {
            write_info(&mut c.reply, cmd);
        }
        return;
    }
    let sub = a[1].to_ascii_lowercase();
    match sub.as_slice() {
        b"count" if a.len() == 2 => c.reply.int(COMMANDS.len() as i64),
        b"info" => {
            if a.len() == 2 {
                c.reply.array(COMMANDS.len());
                for cmd in COMMANDS {
                    write_info(&mut c.reply, cmd);
                }
                return;
            }
            c.reply.array(a.len() - 2);
            for name in &a[2..] {
                match (find_command(name), find_subcommand(name)) {
                    (Some(cmd), _) => write_info(&mut c.reply, cmd),
                    (None, Some(sub)) => write_sub_info(&mut c.reply, sub),
                    (None, None) => c.reply.null(),
                }
            }
        }
        b"docs" => {
            // Redis answers for each name it finds (`parent|sub` for a subcommand) and
            // skips the others.
            let found: Vec<(&CommandSpec, Option<&SubSpec>)> = if a.len() == 2 {
                COMMANDS.iter().map(|cmd| (cmd, None)).collect()
            } else {
                a[2..]
                    .iter()
                    .filter_map(|name| match find_command(name) {
                        Some(cmd) => Some((cmd, None)),
                        None => find_subcommand_of(name).map(|(cmd, s)| (cmd, Some(s))),
                    })
                    .collect()
            };
            let found: Vec<_> = found
                .into_iter()
                .filter(|(cmd, s)| docs::doc_of(s.map_or(cmd.name, |s| s.name)).is_some())
                .collect();
            c.reply.map(found.len());
            for (cmd, s) in found {
                write_docs(&mut c.reply, cmd, s);
            }
        }
        b"list" => {
            let names: Vec<&str> = match a.len() {
                2 => all_names().collect(),
                5 if is(a[2], "filterby") => {
                    let v = a[4];
                    if is(a[3], "pattern") {
                        COMMANDS
                            .iter()
                            .flat_map(|c| {
                                std::iter::once(c.name).chain(c.subcommands.iter().map(|s| s.name))
                            })
                            .filter(|n| glob_match(v, n.as_bytes(), true))
                            .collect()
                    } else if is(a[3], "aclcat") {
                        // Redis matches the category name case-insensitively, without the
                        // `@`, against every command and subcommand.
                        let cat = format!("@{}", String::from_utf8_lossy(v).to_ascii_lowercase());
                        all_names()
                            .filter(|n| {
                                docs::doc_of(n)
                                    .map_or_else(
                                        || find_command(n.as_bytes()).map_or(&[][..], |c| c.acl),
                                        |d| d.acl,
                                    )
                                    .contains(&cat.as_str())
                            })
                            .collect()
                    } else if is(a[3], "module") {
                        Vec::new()
                    } else {
                        c.reply.error(super::super::reply::errors::SYNTAX);
                        return;
                    }
                }
                _ => {
                    c.reply.error(super::super::reply::errors::SYNTAX);
                    return;
                }
            };
            c.reply.array(names.len());
            for n in names {
                c.reply.bulk_str(n);
            }
        }
        b"getkeys" | b"getkeysandflags" if a.len() >= 3 => {
            let with_flags = sub.as_slice() == b"getkeysandflags";
            let argv = &a[2..];
            // Redis's lookupCommand: a container's subcommand when there is one more
            // argument.
            let Some(cmd) = find_command(argv[0]) else {
                c.reply.error("ERR Invalid command specified");
                return;
            };
            let (name, arity, own) = if !cmd.subcommands.is_empty() && argv.len() > 1 {
                match cmd.subcommand(argv[1]) {
                    Some(s) => (s.name, s.arity, None),
                    None => {
                        c.reply.error("ERR Invalid command specified");
                        return;
                    }
                }
            } else {
                (cmd.name, cmd.arity, Some(cmd))
            };
            let entry = ks::find(name);
            let has_keys = match entry {
                Some(k) => k.getkeys || k.specs.iter().any(|s| s.flags & ks::KS_NOT_KEY == 0),
                None => own.is_some_and(|c| c.first_key > 0 || c.key_finder.is_some()),
            };
            if !has_keys {
                c.reply.error("ERR The command has no key arguments");
                return;
            }
            if (arity > 0 && arity as usize != argv.len())
                || (argv.len() as i64) < -i64::from(arity)
            {
                c.reply
                    .error("ERR Invalid number of arguments specified for command");
                return;
            }
            let keys = keys_and_flags(entry, own, argv);
            if keys.is_empty() {
                if entry.is_some_and(|k| k.no_mandatory_keys) {
                    c.reply.array(0);
                } else {
                    c.reply.error("ERR Invalid arguments specified for command");
                }
                return;
            }
            c.reply.array(keys.len());
            for (p, f) in keys {
                if with_flags {
                    c.reply.array(2);
                    c.reply.bulk(argv[p]);
                    write_key_flags(&mut c.reply, f);
                } else {
                    c.reply.bulk(argv[p]);
                }
            }
        }
        b"help" if a.len() == 2 => {
            c.reply.array(COMMAND_HELP.len());
            for l in COMMAND_HELP {
                c.reply.simple(l);
            }
        }
        _ => crate::commands::subcommand_syntax_error(&mut c.reply, "COMMAND", a[1]),
    }
}

// ---------------------------------------------------------------------------------------
// CONFIG

const CONFIG_HELP: &[&str] = &[
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Print this help.",
];

/// CONFIG GET|SET|RESETSTAT|REWRITE|HELP
pub async fn config(c: &mut Conn, a: &[&[u8]]) {
    let sub = a[1].to_ascii_lowercase();
    let cfg = &c.shared.config;
    match (sub.as_slice(), a.len()) {
        (b"get", n) if n >= 3 => {
            // A plain name is echoed as given (CONFIG GET PORT answers "PORT"); a glob
            // pattern answers with the parameters' own names.
            let mut seen: Vec<(String, String)> = Vec::new();
            for pattern in &a[2..] {
                let is_glob = pattern.iter().any(|b| matches!(b, b'*' | b'?' | b'['));
                let text = String::from_utf8_lossy(pattern).into_owned();
                let found: Vec<(String, String)> = if is_glob {
                    cfg.matching(pattern)
                        .into_iter()
                        .map(|(n, v)| (n.to_string(), v))
                        .collect()
                } else {
                    match config::param(&text) {
                        Some((_, p)) => vec![(text.clone(), cfg.get(p.name))],
                        None => Vec::new(),
                    }
                };
                for (name, value) in found {
                    if !seen.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
                        seen.push((name, value));
                    }
                }
            }
            c.reply.map(seen.len());
            for (name, value) in seen {
                c.reply.bulk_str(&name);
                c.reply.bulk_str(&value);
            }
        }
        (b"set", n) if n % 2 == 1 => c.reply.error(crate::reply::errors::SYNTAX),
        (b"set", _) => {
            // Check every pair first so that the change is all-or-nothing.
            let mut pairs = Vec::new();
            for kv in a[2..].chunks(2) {
                let name = String::from_utf8_lossy(kv[0]).to_ascii_lowercase();
                let value = String::from_utf8_lossy(kv[1]).into_owned();
                let Some((_, param)) = config::param(&name) else {
                    c.reply.error(&format!(
                        "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                    ));
                    return;
                };
                if pairs.iter().any(|(n, _): &(String, String)| *n == name) {
                    c.reply.error(&format!("ERR CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter"));
                    return;
                }
                let problem = if !param.mutable {
                    Some(ConfigError::Immutable.to_string())
                } else {
                    config::validate(param, &value).err().map(|e| e.to_string())
                };
                if let Some(p) = problem {
                    c.reply.error(&format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - {p}"
                    ));
                    return;
                }
                pairs.push((name, value));
            }
            let mut durability = None;
            let mut cache_resized = false;
            for (name, value) in pairs {
                if let Err(e) = cfg.set(&name, &value, true) {
                    c.reply.error(&format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - {e}"
                    ));
                    return;
                }
                if name == "appendfsync" {
                    durability = Some(crate::persist::durability_of(&cfg.get("appendfsync")));
                }
                cache_resized |= name == "value-cache-mb" || name == "maxmemory";
            }
            if let Some(d) = durability {
                // Every worker's log follows the new policy before the reply goes out.
                c.on_all(move |s| s.keyspace.log().set_durability(d)).await;
            }
            if cache_resized {
                // Every worker's cache has its new size (a smaller one evicted, 0 freed)
                // before the reply goes out.
                crate::memory::update(cfg, c.shared.workers);
                let bytes = crate::memory::per_worker_cache_bytes(cfg, c.shared.workers);
                c.on_all(move |s| s.keyspace.set_value_cache_bytes(bytes))
                    .await;
            }
            c.reply.ok();
        }
        (b"resetstat", 2) => {
            c.on_all(|s| {
                s.stats.reset();
                s.keyspace.stats = Default::default();
                s.keyspace.reset_value_cache_stats();
            })
            .await;
            c.shared.total_connections.store(0, Ordering::Relaxed);
            c.shared.rejected_connections.store(0, Ordering::Relaxed);
            c.reply.ok();
        }
        (b"rewrite", 2) => match cfg.rewrite() {
            Ok(()) => c.reply.ok(),
            Err(e) => c.reply.error(&format!("ERR {e}")),
        },
        (b"help", 2) => {
            c.reply.array(CONFIG_HELP.len());
            for l in CONFIG_HELP {
                c.reply.simple(l);
            }
        }
        _ => crate::commands::subcommand_syntax_error(&mut c.reply, "CONFIG", a[1]),
    }
}

// ---------------------------------------------------------------------------------------
// INFO

/// What INFO (and `/metrics`, see [`crate::metrics`]) gathers from one worker.
pub(crate) struct WorkerInfo {
    pub(crate) commands: Vec<super::CommandStats>,
    pub(crate) subcommands: Vec<(&'static str, super::CommandStats)>,
    /// Latency histograms by command or subcommand name (those called at least once).
    pub(crate) latency: Vec<(&'static str, Box<skerry_store::LatencyHistogram>)>,
    pub(crate) errors: Vec<(String, u64)>,
    pub(crate) total_commands: u64,
    pub(crate) total_error_replies: u64,
    pub(crate) net_in: u64,
    pub(crate) net_out: u64,
    pub(crate) out_limit_kills: u64,
    pub(crate) query_limit_kills: u64,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) expired: u64,
    /// Hash fields deleted because their time ran out (`expired_subkeys`).
    pub(crate) expired_subkeys: u64,
    /// Changes to keys (`rdb_changes_since_last_save`).
    pub(crate) dirty: u64,
    /// Per database: hashes with field expiries (`subexpiry`).
    pub(crate) subexpiry: Vec<usize>,
    /// Per database: keys, volatile keys, average TTL.
    pub(crate) dbs: Vec<(usize, usize, i64)>,
    pub(crate) clients: usize,
    /// Bytes of the worker's Lua interpreter.
    pub(crate) lua_bytes: usize,
    /// Keys with blocked clients, and of them keys whose clients are also served on
    /// deletion (`total_blocking_keys`, `total_blocking_keys_on_nokey`).
    pub(crate) blocking_keys: (usize, usize),
    pub(crate) storage: StorageInfo,
}

/// One worker's storage figures (INFO storage).
pub(crate) struct StorageInfo {
    pub(crate) writer: skerry_store::WriterStats,
    pub(crate) reads: crate::keyspace::ReadStats,
    pub(crate) cache: crate::keyspace::cache::CacheStats,
    pub(crate) index_bytes: usize,
    pub(crate) read_buffer_bytes: usize,
    pub(crate) io_buffer_bytes: usize,
    pub(crate) decoded_coll_bytes: usize,
    pub(crate) group_records: usize,
    pub(crate) store: skerry_store::StoreStats,
    pub(crate) durability: skerry_store::Durability,
    /// Device read, write and fdatasync latencies of the worker's writer.
    pub(crate) io: skerry_store::IoLatency,
}

impl StorageInfo {
    fn of(ks: &crate::keyspace::Keyspace) -> Self {
        let log = ks.log();
        StorageInfo {
            writer: log.stats(),
            reads: ks.reads,
            cache: ks.value_cache_stats(),
            index_bytes: ks.index_bytes(),
            read_buffer_bytes: ks.read_buffer_bytes(),
            io_buffer_bytes: log.kept_buffer_bytes(),
            decoded_coll_bytes: ks.decoded_coll_bytes(),
            group_records: (0..ks.databases()).map(|db| ks.group_records(db)).sum(),
            store: log.store().stats(),
            durability: log.durability(),
            io: log.io_latency(),
        }
    }
}

/// Gathers one worker's figures (runs on the worker, see [`crate::worker::run_on_all`]).
pub(crate) fn gather(s: &mut crate::worker::Shard) -> WorkerInfo {
    let mut errors: Vec<(String, u64)> = s
        .stats
        .errors
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    errors.sort();
    let now = unix_ms();
    let latency = s
        .stats
        .command_latency
        .iter()
        .enumerate()
        .filter_map(|(i, h)| h.as_ref().map(|h| (COMMANDS[i].name, h.clone())))
        .chain(
            s.stats
                .subcommand_latency
                .iter()
                .map(|(name, h)| (*name, h.clone())),
        )
        .collect();
    WorkerInfo {
        commands: s.stats.commands.clone(),
        subcommands: s.stats.subcommands.iter().map(|(k, v)| (*k, *v)).collect(),
        latency,
        errors,
        total_commands: s.stats.total_commands,
        total_error_replies: s.stats.total_error_replies,
        net_in: s.stats.net_input_bytes,
        net_out: s.stats.net_output_bytes,
        out_limit_kills: s.stats.client_output_limit_disconnections,
        query_limit_kills: s.stats.client_query_limit_disconnections,
        hits: s.keyspace.stats.hits,
        misses: s.keyspace.stats.misses,
        expired: s.keyspace.stats.expired,
        expired_subkeys: s.keyspace.stats.expired_subkeys,
        dirty: s.keyspace.stats.dirty,
        subexpiry: (0..s.keyspace.databases())
            .map(|db| s.keyspace.hfe_hashes_in(db))
            .collect(),
        dbs: (0..s.keyspace.databases())
            .map(|db| {
                (
                    s.keyspace.len(db),
                    s.keyspace.volatile_len(db),
                    s.keyspace.avg_ttl_ms(db, now),
                )
            })
            .collect(),
        clients: s.clients.len(),
        lua_bytes: crate::scripting::lua_memory_bytes(),
        blocking_keys: s.blocking.key_counts(),
        storage: StorageInfo::of(&s.keyspace),
    }
}

/// Per command and subcommand name, the call counters summed over workers (INFO
/// commandstats, `/metrics`), in name order.
pub(crate) fn command_totals(
    w: &[WorkerInfo],
) -> std::collections::BTreeMap<&'static str, super::CommandStats> {
    let mut all: std::collections::BTreeMap<&'static str, super::CommandStats> = Default::default();
    for x in w {
        for (i, st) in x.commands.iter().enumerate() {
            add_stats(all.entry(COMMANDS[i].name).or_default(), st);
        }
        for (name, st) in &x.subcommands {
            add_stats(all.entry(name).or_default(), st);
        }
    }
    all
}

/// Per command and subcommand name, the latency histograms merged over workers.
pub(crate) fn command_latency(
    w: &[WorkerInfo],
) -> std::collections::BTreeMap<&'static str, skerry_store::LatencyHistogram> {
    let mut all: std::collections::BTreeMap<&'static str, skerry_store::LatencyHistogram> =
        Default::default();
    for x in w {
        for (name, h) in &x.latency {
            all.entry(name).or_default().merge(h);
        }
    }
    all
}

/// A storage figure's value.
pub(crate) enum FigureValue {
    /// A number (every figure `/metrics` exports).
    Num(u64),
    /// Text, INFO only (paths, policy names).
    Text(String),
}

/// How a numeric storage figure behaves: a Prometheus counter only grows (until restart or
/// reset); a gauge goes up and down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FigureKind {
    /// Only grows.
    Counter,
    /// Goes up and down.
    Gauge,
}

/// One storage figure: INFO storage prints it as `storage_<name>:<value>`, `/metrics` as
/// `skerry_storage_<name>` (counters with `_total`).
pub(crate) struct Figure {
    /// Name without the `storage_` prefix; carries the unit (`_bytes`, `_blocks`).
    pub(crate) name: &'static str,
    /// Counter or gauge.
    pub(crate) kind: FigureKind,
    /// One line for `# HELP` (and docs/observability.md).
    pub(crate) help: &'static str,
    /// The value.
    pub(crate) value: FigureValue,
}

impl Figure {
    /// A numeric figure (INFO storage and `/metrics`).
    pub(crate) fn num(name: &'static str, kind: FigureKind, help: &'static str, v: u64) -> Self {
        Figure {
            name,
            kind,
            help,
            value: FigureValue::Num(v),
        }
    }

    /// A text figure (INFO storage only).
    pub(crate) fn text(name: &'static str, help: &'static str, v: String) -> Self {
        Figure {
            name,
            kind: FigureKind::Gauge,
            help,
            value: FigureValue::Text(v),
        }
    }
}

/// The device latencies of every worker, merged.
pub(crate) fn merged_io(w: &[WorkerInfo]) -> skerry_store::IoLatency {
    let mut io = skerry_store::IoLatency::default();
    for x in w {
        io.merge(&x.storage.io);
    }
    io
}

/// Every storage figure, in INFO order: the data devices, blocks and live bytes
/// (store-wide), and the write and read paths summed over workers. This is the one place to
/// add a storage figure (defrag, tombstones, the value cache): INFO storage and `/metrics`
/// both print this list. The latency percentiles and histograms are added by their
/// renderers from [`merged_io`].
pub(crate) fn storage_figures(shared: &crate::worker::Shared, w: &[WorkerInfo]) -> Vec<Figure> {
    use FigureKind::{Counter, Gauge};
    let sum = |f: &dyn Fn(&StorageInfo) -> u64| -> u64 { w.iter().map(|x| f(&x.storage)).sum() };
    let Some(first) = w.first() else {
        return Vec::new();
    };
    let st = &first.storage.store;
    let paths = crate::persist::data_paths(&shared.config);
    let policy = match first.storage.durability {
        skerry_store::Durability::Always => "always",
        skerry_store::Durability::EverySec => "everysec",
        skerry_store::Durability::No => "no",
    };
    let io = merged_io(w);
    let (num, text) = (Figure::num, Figure::text);
    let mut figures = vec![
        num(
            "devices",
            Gauge,
            "Data devices (files or block devices).",
            paths.len() as u64,
        ),
        text(
            "data_files",
            "Paths of the data devices.",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
        num(
            "capacity_bytes",
            Gauge,
            "Bytes of all blocks of all data devices.",
            st.total_blocks * st.block_size_bytes,
        ),
        num(
            "data_file_bytes",
            Gauge,
            "Bytes of all data devices (a data file grows as data arrives).",
            st.device_bytes,
        ),
        num(
            "data_size_limit_bytes",
            Gauge,
            "Largest size of one data file (data-size; 0: none but the file system's data-disk-reserve).",
            shared.config.get_i64("data-size") as u64,
        ),
        num(
            "data_file_grows",
            Counter,
            "Growth steps of the data files since start.",
            st.grows,
        ),
        num(
            "data_file_grow_refusals",
            Counter,
            "Growth attempts that added nothing (data-size reached, data-disk-reserve, I/O error; the log says which).",
            st.grow_refusals,
        ),
        num(
            "block_size_bytes",
            Gauge,
            "Size of one block.",
            st.block_size_bytes,
        ),
        num(
            "total_blocks",
            Gauge,
            "Blocks over all devices.",
            st.total_blocks,
        ),
        num(
            "used_blocks",
            Gauge,
            "Blocks holding data or being written.",
            st.used_blocks,
        ),
        num(
            "free_blocks",
            Gauge,
            "Blocks free to allocate.",
            st.free_blocks,
        ),
        num(
            "reserved_blocks",
            Gauge,
            "Free blocks held back as the workers' tombstone reserves.",
            st.reserved_blocks,
        ),
        num(
            "tombstone_blocks",
            Gauge,
            "Used blocks holding at least one tombstone.",
            st.tombstone_blocks,
        ),
        num(
            "reclaimable_blocks",
            Gauge,
            "Used blocks whose records are all obsolete, waiting to be reclaimed.",
            st.pending_reclaim_blocks,
        ),
        num(
            "reclaimed_blocks",
            Counter,
            "Blocks freed by reclaim since start.",
            st.reclaimed_blocks,
        ),
        num(
            "live_bytes",
            Gauge,
            "Encoded bytes of the live records over all blocks.",
            st.live_bytes + sum(&|x| x.writer.unpublished_live_bytes),
        ),
        text("appendfsync", "The durability policy.", policy.to_string()),
        num(
            "records_appended",
            Counter,
            "Records appended to the log.",
            sum(&|s| s.writer.appends),
        ),
        num(
            "records_durable",
            Counter,
            "Records appended and durable.",
            sum(&|s| s.writer.durable_appends),
        ),
        num(
            "device_writes",
            Counter,
            "Device writes of staged records.",
            sum(&|s| s.writer.writes),
        ),
        num(
            "device_written_bytes",
            Counter,
            "Bytes written to the devices (partial sectors rewritten count again).",
            sum(&|s| s.writer.written_bytes),
        ),
        num(
            "device_written_uncopied_bytes",
            Counter,
            "Of the bytes written, those written straight from sealed blocks' images.",
            sum(&|s| s.writer.written_uncopied_bytes),
        ),
        num(
            "fdatasyncs",
            Counter,
            "Flush + fdatasync rounds (group commits).",
            sum(&|s| s.writer.syncs),
        ),
        num(
            "blocks_opened",
            Counter,
            "Blocks opened for appending.",
            sum(&|s| s.writer.blocks_opened),
        ),
        num(
            "value_reads",
            Counter,
            "Values read from the devices for commands.",
            sum(&|s| s.reads.device_reads),
        ),
        num(
            "staged_reads",
            Counter,
            "Values decoded from the writer's block images (records not yet read back from the device).",
            sum(&|s| s.reads.staged_reads),
        ),
        num(
            "read_buffer_hits",
            Counter,
            "Values found in the read buffer (read for an earlier command).",
            sum(&|s| s.reads.buffer_hits),
        ),
        num(
            "failed_reads",
            Counter,
            "Value reads that failed (checksum mismatch or device error).",
            sum(&|s| s.reads.failed_reads),
        ),
        num(
            "blocking_reads",
            Counter,
            "Values a command needed that were not read in advance (should stay 0).",
            sum(&|s| s.reads.missing_reads),
        ),
        num(
            "read_buffer_bytes",
            Gauge,
            "Bytes of values held in the read buffers.",
            sum(&|s| s.read_buffer_bytes as u64),
        ),
        num(
            "io_buffer_bytes",
            Gauge,
            "Bytes of I/O buffers kept for reuse (spare block images, write and read buffers; freed when a worker idles).",
            sum(&|s| s.io_buffer_bytes as u64),
        ),
        num(
            "decoded_collection_bytes",
            Gauge,
            "Bytes of RAM held by decoded collections (the decoded-collection cache).",
            sum(&|s| s.decoded_coll_bytes as u64),
        ),
        num(
            "collection_group_records",
            Gauge,
            "Group records of grouped (big) collections.",
            sum(&|s| s.group_records as u64),
        ),
        num(
            "index_bytes",
            Gauge,
            "Bytes of the in-RAM key index.",
            sum(&|s| s.index_bytes as u64),
        ),
        num(
            "device_reads",
            Counter,
            "O_DIRECT device reads (values and records).",
            io.read.count(),
        ),
        num(
            "device_read_bytes",
            Counter,
            "Bytes read from the devices (aligned lengths).",
            io.read_bytes,
        ),
        num(
            "fdatasync_calls",
            Counter,
            "fdatasync calls (one per device synced in a round).",
            io.fdatasync.count(),
        ),
        text(
            "defrag_state",
            "Defrag: running, idle, paused or disabled.",
            crate::defrag::state(shared).to_string(),
        ),
        num(
            "defrag_blocks_rewritten",
            Counter,
            "Blocks whose live records defrag moved to the log head.",
            crate::defrag::COUNTERS.blocks.load(Ordering::Relaxed),
        ),
        num(
            "defrag_tail_blocks_rewritten",
            Counter,
            "Of those, log-tail blocks rewritten so that tombstone blocks behind them can go.",
            crate::defrag::COUNTERS.tail_blocks.load(Ordering::Relaxed),
        ),
        num(
            "defrag_records_moved",
            Counter,
            "Records copied by defrag.",
            crate::defrag::COUNTERS.records.load(Ordering::Relaxed),
        ),
        num(
            "defrag_bytes_moved",
            Counter,
            "Encoded bytes copied by defrag.",
            crate::defrag::COUNTERS.bytes.load(Ordering::Relaxed),
        ),
        num(
            "defrag_bytes_read",
            Counter,
            "Bytes defrag read from the devices.",
            crate::defrag::COUNTERS.read_bytes.load(Ordering::Relaxed),
        ),
        num(
            "defrag_failures",
            Counter,
            "Blocks defrag could not finish (no space for the copies, read errors).",
            crate::defrag::COUNTERS.failures.load(Ordering::Relaxed),
        ),
        num(
            "write_stalls",
            Counter,
            "Writes that waited for room on nearly full data devices.",
            crate::space::STALLS.load(Ordering::Relaxed),
        ),
        num(
            "write_stalls_failed",
            Counter,
            "Stalled writes that found no room (they failed with the no-space error).",
            crate::space::STALLS_FAILED.load(Ordering::Relaxed),
        ),
        num(
            "write_backlog_waits",
            Counter,
            "Writes that waited for the worker's staged blocks to reach the devices (backlog over storage-write-backlog-max-mb).",
            crate::space::BACKLOG_WAITS.load(Ordering::Relaxed),
        ),
        num(
            "write_stalled_ms",
            Counter,
            "Milliseconds writes spent waiting for room.",
            crate::space::STALLED_MS.load(Ordering::Relaxed),
        ),
    ];
    let (hits, misses) = (sum(&|s| s.cache.hits), sum(&|s| s.cache.misses));
    let budget = crate::memory::budget();
    let ratio = if hits + misses == 0 {
        0.0
    } else {
        hits as f64 / (hits + misses) as f64
    };
    figures.extend([
        num(
            "cache_capacity_bytes",
            Gauge,
            "Bytes the value caches may hold (value-cache-mb).",
            sum(&|s| s.cache.capacity_bytes),
        ),
        text(
            "cache_budget_source",
            "How the value cache is sized: auto from maxmemory, cgroup or machine, or fixed (value-cache-mb).",
            if crate::memory::cache_is_auto(&shared.config) {
                format!(
                    "auto:{}",
                    budget.source.map_or("?", crate::memory::Source::name)
                )
            } else {
                "fixed".to_string()
            },
        ),
        num(
            "memory_limit_bytes",
            Gauge,
            "The memory limit the value cache's budget is derived from (maxmemory, the cgroup's limit or the machine's RAM).",
            budget.limit_bytes,
        ),
        num(
            "memory_non_cache_bytes",
            Gauge,
            "What the process holds besides the value caches (RSS less their bytes): index, buffers, connections.",
            budget.non_cache_bytes,
        ),
        num(
            "cache_budget_bytes",
            Gauge,
            "Bytes the value caches may take by the budget: limit less the rest of the process less a margin (1/16 of the limit, at least 64 MiB).",
            budget.cache_bytes,
        ),
        num(
            "cache_used_bytes",
            Gauge,
            "Bytes the value caches hold.",
            sum(&|s| s.cache.used_bytes),
        ),
        num(
            "cache_entries",
            Gauge,
            "Values in the value caches.",
            sum(&|s| s.cache.entries),
        ),
        num(
            "cache_hits",
            Counter,
            "Device values served from the value cache.",
            hits,
        ),
        num(
            "cache_misses",
            Counter,
            "Device values not in the value cache (read from the device).",
            misses,
        ),
        text(
            "cache_hit_ratio",
            "cache_hits / (cache_hits + cache_misses).",
            format!("{ratio:.4}"),
        ),
        num(
            "cache_evictions",
            Counter,
            "Values evicted from the value cache.",
            sum(&|s| s.cache.evictions),
        ),
    ]);
    figures.extend(crate::checkpoint::figures());
    figures
}

/// Microseconds with three decimals, as Redis prints latency percentiles.
fn us(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1000.0)
}

pub(crate) fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    pages * page
}

fn human_bytes(n: u64) -> String {
    let n = n as f64;
    if n < 1024.0 {
        format!("{n}B")
    } else if n < 1024.0 * 1024.0 {
        format!("{:.2}K", n / 1024.0)
    } else if n < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", n / 1024.0 / 1024.0)
    } else {
        format!("{:.2}G", n / 1024.0 / 1024.0 / 1024.0)
    }
}

pub(crate) fn cpu_times() -> (f64, f64, f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let (mut me, mut children): (libc::rusage, libc::rusage) =
        unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    // SAFETY: as above.
    unsafe {
        libc::getrusage(libc::RUSAGE_SELF, &mut me);
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut children);
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (
        t(me.ru_stime),
        t(me.ru_utime),
        t(children.ru_stime),
        t(children.ru_utime),
    )
}

const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "storage",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];
const ALL_EXTRA: &[&str] = &["commandstats", "latencystats"];

/// INFO [section ...]
pub async fn info(c: &mut Conn, a: &[&[u8]]) {
    let mut sections: Vec<String> = Vec::new();
    if a.len() == 1 {
        sections.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string()));
    }
    for arg in &a[1..] {
        let s = String::from_utf8_lossy(arg).to_ascii_lowercase();
        match s.as_str() {
            "default" => sections.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string())),
            "all" | "everything" => {
                sections.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string()));
                sections.extend(ALL_EXTRA.iter().map(|s| s.to_string()));
            }
            _ => sections.push(s),
        }
    }
    // The stats section counts unique channels and patterns over every worker: their names
    // come back with the same visit.
    let want_pubsub = sections.iter().any(|s| s == "stats");
    let (gathered, names): (Vec<WorkerInfo>, Vec<_>) = c
        .on_all(move |s| {
            let names = want_pubsub.then(|| {
                (
                    s.pubsub.channel_names(crate::pubsub::Space::Global, None),
                    s.pubsub.pattern_names(),
                )
            });
            (gather(s), names)
        })
        .await
        .into_iter()
        .unzip();
    type Names = std::collections::HashSet<Vec<u8>>;
    let (channels, patterns): (Names, Names) =
        names
            .into_iter()
            .flatten()
            .fold(Default::default(), |(mut ch, mut pat), (c, p)| {
                ch.extend(c);
                pat.extend(p);
                (ch, pat)
            });
    let text = render_info(c, &sections, &gathered, (channels.len(), patterns.len()));
    c.reply.verbatim(text.as_bytes());
}

/// The `storage` section: [`storage_figures`], then the device latency percentiles.
fn render_storage(o: &mut String, shared: &crate::worker::Shared, w: &[WorkerInfo]) {
    if w.is_empty() {
        return;
    }
    o.push_str("# Storage\r\n");
    for f in storage_figures(shared, w) {
        let _ = match f.value {
            FigureValue::Num(v) => write!(o, "storage_{}:{v}\r\n", f.name),
            FigureValue::Text(t) => write!(o, "storage_{}:{t}\r\n", f.name),
        };
    }
    let io = merged_io(w);
    for (name, h) in [
        ("read", &io.read),
        ("write", &io.write),
        ("fdatasync", &io.fdatasync),
    ] {
        let _ = write!(
            o,
            "storage_{name}_latency_p50_us:{}\r\nstorage_{name}_latency_p99_us:{}\r\nstorage_{name}_latency_p999_us:{}\r\nstorage_{name}_latency_max_us:{}\r\n",
            us(h.quantile_ns(0.5)),
            us(h.quantile_ns(0.99)),
            us(h.quantile_ns(0.999)),
            us(h.max_ns()),
        );
    }
}

fn add_stats(into: &mut super::CommandStats, from: &super::CommandStats) {
    into.calls += from.calls;
    into.usec += from.usec;
    into.rejected += from.rejected;
    into.failed += from.failed;
}

/// INFO's text; `pubsub` is (unique channels, unique patterns) over every worker.
fn render_info(c: &Conn, sections: &[String], w: &[WorkerInfo], pubsub: (usize, usize)) -> String {
    let shared = &c.shared;
    let mut out = String::new();
    let mut done = std::collections::HashSet::new();
    let sum = |f: &dyn Fn(&WorkerInfo) -> u64| -> u64 { w.iter().map(f).sum() };
    let uptime = shared.started.elapsed().as_secs();
    let (sys, user, csys, cuser) = cpu_times();
    for section in sections {
        if !done.insert(section.clone()) {
            continue;
        }
        let o = &mut out;
        if !o.is_empty() {
            o.push_str("\r\n");
        }
        match section.as_str() {
            "server" => {
                let _ = write!(
                    o,
                    "# Server\r\nredis_version:{}\r\nskerry_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:standalone\r\nos:{} {}\r\narch_bits:64\r\nmonotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:io_uring\r\nprocess_id:{}\r\nprocess_supervised:no\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nio_threads_active:0\r\nworker_threads:{}\r\nexecutable:{}\r\nconfig_file:{}\r\n",
                    crate::REDIS_VERSION,
                    env!("CARGO_PKG_VERSION"),
                    std::env::consts::OS,
                    std::env::consts::ARCH,
                    std::process::id(),
                    shared.run_id,
                    shared.port,
                    unix_ms() * 1000,
                    uptime,
                    uptime / 86400,
                    shared.config.get("hz"),
                    shared.config.get("hz"),
                    shared.workers,
                    shared.executable,
                    shared.config.file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                );
            }
            "clients" => {
                let _ = write!(
                    o,
                    "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\nclient_recent_max_input_buffer:0\r\nclient_recent_max_output_buffer:0\r\nblocked_clients:{}\r\ntracking_clients:0\r\nclients_in_timeout_table:{}\r\ntotal_blocking_keys:{}\r\ntotal_blocking_keys_on_nokey:{}\r\n",
                    w.iter().map(|x| x.clients).sum::<usize>(),
                    shared.config.get("maxclients"),
                    shared.blocked_clients.load(std::sync::atomic::Ordering::Relaxed),
                    shared.blocked_clients.load(std::sync::atomic::Ordering::Relaxed),
                    w.iter().map(|x| x.blocking_keys.0).sum::<usize>(),
                    w.iter().map(|x| x.blocking_keys.1).sum::<usize>(),
                );
            }
            "memory" => {
                let rss = rss_bytes();
                let lua: usize = w.iter().map(|x| x.lua_bytes).sum();
                let scripts = shared.scripts.body_bytes();
                let _ = write!(
                    o,
                    "# Memory\r\nused_memory:{rss}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{rss}\r\nused_memory_lua:{lua}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{scripts}\r\nnumber_of_cached_scripts:{}\r\nnumber_of_functions:{}\r\nused_memory_vm_eval:{lua}\r\nused_memory_scripts:{scripts}\r\nused_memory_scripts_human:{}\r\nmaxmemory:{}\r\nmaxmemory_policy:{}\r\nmem_allocator:mimalloc\r\n",
                    human_bytes(rss),
                    human_bytes(rss),
                    human_bytes(lua as u64),
                    shared.scripts.len(),
                    shared.scripts.libraries.counts().1,
                    human_bytes(scripts as u64),
                    shared.config.get("maxmemory"),
                    shared.config.get("maxmemory-policy"),
                );
            }
            "persistence" => {
                let rdb = &shared.rdb;
                let _ = write!(
                    o,
                    "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\nrdb_last_bgsave_time_sec:{}\r\nrdb_current_bgsave_time_sec:-1\r\nrdb_saves:{}\r\nrdb_last_load_keys_expired:{}\r\nrdb_last_load_keys_loaded:{}\r\naof_enabled:{}\r\naof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\naof_last_write_status:ok\r\n",
                    w.iter()
                        .map(|x| x.dirty)
                        .sum::<u64>()
                        .saturating_sub(rdb.dirty_at_save.load(Ordering::Relaxed)),
                    rdb.saving.load(Ordering::Relaxed) as u8,
                    rdb.lastsave_s.load(Ordering::Relaxed),
                    if rdb.last_failed.load(Ordering::Relaxed) { "err" } else { "ok" },
                    rdb.last_save_s.load(Ordering::Relaxed),
                    rdb.saves.load(Ordering::Relaxed),
                    rdb.last_load_expired.load(Ordering::Relaxed),
                    rdb.last_load_keys.load(Ordering::Relaxed),
                    (shared.config.get("appendonly") == "yes") as u8,
                );
            }
            "stats" => {
                let ops = sum(&|x| x.total_commands);
                let _ = write!(
                    o,
                    "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:0\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\nexpired_subkeys:{}\r\nexpired_keys:{}\r\nevicted_keys:0\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\nmigrate_cached_sockets:{}\r\ntotal_error_replies:{}\r\nclient_query_buffer_limit_disconnections:{}\r\nclient_output_buffer_limit_disconnections:{}\r\n",
                    shared.total_connections.load(Ordering::Relaxed),
                    ops,
                    sum(&|x| x.net_in),
                    sum(&|x| x.net_out),
                    shared.rejected_connections.load(Ordering::Relaxed),
                    sum(&|x| x.expired_subkeys),
                    sum(&|x| x.expired),
                    sum(&|x| x.hits),
                    sum(&|x| x.misses),
                    pubsub.0,
                    pubsub.1,
                    super::migrate::cached_sockets(),
                    sum(&|x| x.total_error_replies),
                    sum(&|x| x.query_limit_kills),
                    sum(&|x| x.out_limit_kills),
                );
            }
            "replication" => {
                crate::commands::replication::info_section(shared, o);
            }
            "cpu" => {
                let _ = write!(
                    o,
                    "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\nused_cpu_sys_children:{csys:.6}\r\nused_cpu_user_children:{cuser:.6}\r\n"
                );
            }
            "modules" => o.push_str("# Modules\r\n"),
            "cluster" => o.push_str("# Cluster\r\ncluster_enabled:0\r\n"),
            "errorstats" => {
                o.push_str("# Errorstats\r\n");
                let mut all: std::collections::BTreeMap<&str, u64> = Default::default();
                for x in w {
                    for (k, v) in &x.errors {
                        *all.entry(k.as_str()).or_insert(0) += v;
                    }
                }
                for (k, v) in all {
                    let _ = write!(o, "errorstat_{k}:count={v}\r\n");
                }
            }
            "commandstats" => {
                o.push_str("# Commandstats\r\n");
                // Top-level commands and subcommands (`config|get`), summed over workers,
                // in name order as Redis prints them.
                let all = command_totals(w);
                for (name, st) in all {
                    if st.calls == 0 && st.rejected == 0 {
                        continue;
                    }
                    let per = if st.calls > 0 {
                        st.usec as f64 / st.calls as f64
                    } else {
                        0.0
                    };
                    let _ = write!(
                        o,
                        "cmdstat_{name}:calls={},usec={},usec_per_call={per:.2},rejected_calls={},failed_calls={}\r\n",
                        st.calls, st.usec, st.rejected, st.failed
                    );
                }
            }
            "latencystats" => {
                // Redis's format: latency_percentiles_usec_<cmd>:p50=..,p99=..,p99.9=..
                o.push_str("# Latencystats\r\n");
                if shared.config.get("latency-tracking") == "yes" {
                    for (name, h) in command_latency(w) {
                        if h.count() == 0 {
                            continue;
                        }
                        let _ = write!(
                            o,
                            "latency_percentiles_usec_{name}:p50={},p99={},p99.9={}\r\n",
                            us(h.quantile_ns(0.5)),
                            us(h.quantile_ns(0.99)),
                            us(h.quantile_ns(0.999)),
                        );
                    }
                }
            }
            "storage" => render_storage(o, shared, w),
            "keyspace" => {
                o.push_str("# Keyspace\r\n");
                let dbs = w.first().map_or(0, |x| x.dbs.len());
                for db in 0..dbs {
                    let keys: usize = w.iter().map(|x| x.dbs[db].0).sum();
                    let expires: usize = w.iter().map(|x| x.dbs[db].1).sum();
                    if keys == 0 {
                        continue;
                    }
                    let ttl_sum: i64 = w.iter().map(|x| x.dbs[db].2 * x.dbs[db].1 as i64).sum();
                    let avg = if expires > 0 {
                        ttl_sum / expires as i64
                    } else {
                        0
                    };
                    let subexpiry: usize = w.iter().map(|x| x.subexpiry[db]).sum();
                    let _ = write!(
                        o,
                        "db{db}:keys={keys},expires={expires},avg_ttl={avg},subexpiry={subexpiry}\r\n"
                    );
                }
            }
            _ => {
                // Unknown sections print nothing, as in Redis.
                if o.ends_with("\r\n\r\n") {
                    o.truncate(o.len() - 2);
                }
            }
        }
    }
    out
}

const SLOWLOG_HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Print this help.",
];

/// SLOWLOG GET [count] | LEN | RESET | HELP, over the logs of every worker (see
/// `crate::slowlog`).
pub async fn slowlog(c: &mut Conn, a: &[&[u8]]) {
    let max_len = c.shared.config.hot.slowlog_max_len.load(Ordering::Relaxed) as usize;
    let sub = a[1].to_ascii_lowercase();
    match (&sub[..], a.len()) {
        (b"help", 2) => c.reply.simple_lines(SLOWLOG_HELP),
        (b"reset", 2) => {
            c.on_all(|s| s.slowlog.reset()).await;
            c.reply.ok();
        }
        (b"len", 2) => {
            let n: usize = c.on_all(|s| s.slowlog.len()).await.into_iter().sum();
            c.reply.int(n.min(max_len) as i64);
        }
        (b"get", 2 | 3) => {
            let mut count = 10usize;
            if a.len() == 3 {
                match super::parse_i64(a[2]) {
                    Some(-1) => count = usize::MAX,
                    Some(n) if n >= 0 => count = n as usize,
                    Some(_) => {
                        return c
                            .reply
                            .error("ERR count should be greater than or equal to -1")
                    }
                    None => return c.reply.error("ERR value is not an integer or out of range"),
                }
            }
            let count = count.min(max_len);
            let mut entries: Vec<crate::slowlog::SlowEntry> = c
                .on_all(move |s| s.slowlog.entries().take(count).cloned().collect::<Vec<_>>())
                .await
                .into_iter()
                .flatten()
                .collect();
            entries.sort_unstable_by_key(|e| std::cmp::Reverse(e.id));
            entries.truncate(count);
            // Commands forwarded from another worker's connection: that worker knows the
            // client's address and name.
            let unknown: Vec<u64> = entries
                .iter()
                .filter(|e| e.peer.is_none() && e.client_id != 0)
                .map(|e| e.client_id)
                .collect();
            let mut found: std::collections::HashMap<u64, (String, Vec<u8>)> = Default::default();
            if !unknown.is_empty() {
                for part in c
                    .on_all(move |s| {
                        unknown
                            .iter()
                            .filter_map(|id| s.clients.get(id))
                            .map(|ci| (ci.id, (ci.addr.to_string(), ci.name.borrow().clone())))
                            .collect::<Vec<_>>()
                    })
                    .await
                {
                    found.extend(part);
                }
            }
            c.reply.array(entries.len());
            for e in &entries {
                c.reply.array(6);
                c.reply.int(e.id as i64);
                c.reply.int(e.time_s);
                c.reply.int(e.duration_us as i64);
                c.reply.array(e.argv.len());
                for arg in &e.argv {
                    c.reply.bulk(arg);
                }
                match (&e.peer, found.get(&e.client_id)) {
                    (Some(p), _) => {
                        c.reply.bulk(p.as_bytes());
                        c.reply.bulk(&e.name);
                    }
                    (None, Some((p, n))) => {
                        c.reply.bulk(p.as_bytes());
                        c.reply.bulk(n);
                    }
                    (None, None) => {
                        c.reply.bulk(b"");
                        c.reply.bulk(b"");
                    }
                }
            }
        }
        _ => super::subcommand_syntax_error(&mut c.reply, "SLOWLOG", a[1]),
    }
}

const MODULE_HELP: &[&str] = &[
    "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
    "HELP",
    "    Print this help.",
];

/// MODULE LIST | LOAD | LOADEX | UNLOAD | HELP. Skerry's target is Redis without modules
/// (their C API reaches into Redis's own objects): none is ever loaded, so LIST is empty
/// and LOAD fails with Redis's error (the log says why).
pub fn module(c: &mut Conn, a: &[&[u8]]) {
    let sub = a[1].to_ascii_lowercase();
    match (&sub[..], a.len()) {
        (b"help", 2) => c.reply.simple_lines(MODULE_HELP),
        (b"list", 2) => c.reply.array(0),
        (b"load" | b"loadex", n) if n >= 3 => {
            tracing::warn!(
                "MODULE {} {}: Skerry cannot load Redis modules",
                String::from_utf8_lossy(a[1]),
                String::from_utf8_lossy(a[2])
            );
            c.reply
                .error("ERR Error loading the extension. Please check the server logs.");
        }
        (b"unload", 3) => c
            .reply
            .error("ERR Error unloading module: no such module with that name"),
        _ => super::subcommand_syntax_error(&mut c.reply, "MODULE", a[1]),
    }
}
