//! Connection commands (Redis's `networking.c` and friends): PING, ECHO, HELLO, AUTH, SELECT,
//! QUIT, RESET and the CLIENT container.

use std::sync::atomic::Ordering;
use std::time::Instant;

use skerry_resp::Proto;

use super::{is, parse_i64};
use crate::conn::{Conn, ReplyMode};
use crate::reply::errors::*;

/// PING [message]
pub fn ping(c: &mut Conn, a: &[&[u8]]) {
    if c.reply.proto == Proto::Resp2 && c.info.subscribed() && a.len() <= 2 {
        // In RESP2 subscribed mode a reply must look like a message: ["pong", message].
        c.reply.array(2);
        c.reply.bulk(b"pong");
        c.reply.bulk(a.get(1).copied().unwrap_or(b""));
        return;
    }
    match a.len() {
        1 => c.reply.simple("PONG"),
        2 => c.reply.bulk(a[1]),
        _ => c
            .reply
            .error("ERR wrong number of arguments for 'ping' command"),
    }
}

/// ECHO message
pub fn echo(c: &mut Conn, a: &[&[u8]]) {
    c.reply.bulk(a[1]);
}

/// Checks a password against `requirepass` for `user` (only `default` exists).
fn check_password(c: &Conn, user: &[u8], pass: &[u8]) -> bool {
    let required = c.shared.config.get("requirepass");
    user == b"default" && (required.is_empty() || required.as_bytes() == pass)
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// AUTH [username] password
pub fn auth(c: &mut Conn, a: &[&[u8]]) {
    if a.len() > 3 {
        c.reply.error(SYNTAX);
        return;
    }
    let (user, pass): (&[u8], &[u8]) = if a.len() == 2 {
        (b"default", a[1])
    } else {
        (a[1], a[2])
    };
    if a.len() == 2 && c.shared.config.get("requirepass").is_empty() {
        c.reply.error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
        return;
    }
    if check_password(c, user, pass) {
        c.authenticated = true;
        c.reply.ok();
    } else {
        c.reply.error(WRONGPASS);
    }
}

fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

/// HELLO [protover [AUTH username password] [SETNAME clientname]]
pub fn hello(c: &mut Conn, a: &[&[u8]]) {
    let mut proto = None;
    if a.len() >= 2 {
        match parse_i64(a[1]) {
            None => {
                c.reply
                    .error("ERR Protocol version is not an integer or out of range");
                return;
            }
            Some(v) if !(2..=3).contains(&v) => {
                c.reply.error("NOPROTO unsupported protocol version");
                return;
            }
            Some(v) => proto = Some(v),
        }
    }
    let mut auth: Option<(&[u8], &[u8])> = None;
    let mut setname: Option<&[u8]> = None;
    let mut i = 2;
    while i < a.len() {
        let more = a.len() - i - 1;
        if is(a[i], "auth") && more >= 2 {
            auth = Some((a[i + 1], a[i + 2]));
            i += 3;
        } else if is(a[i], "setname") && more >= 1 {
            setname = Some(a[i + 1]);
            i += 2;
        } else {
            c.reply.error(&format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(a[i])
            ));
            return;
        }
    }
    if let Some((user, pass)) = auth {
        if !check_password(c, user, pass) {
            c.reply.error(WRONGPASS);
            return;
        }
        c.authenticated = true;
    }
    if !c.authenticated && c.shared.config.hot.auth_required.load(Ordering::Relaxed) {
        c.reply.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
        return;
    }
    if let Some(name) = setname {
        if !valid_name(name) {
            c.reply
                .error("ERR Client names cannot contain spaces, newlines or special characters.");
            return;
        }
        *c.info.name.borrow_mut() = name.to_vec();
    }
    if let Some(v) = proto {
        c.reply.proto = if v == 3 { Proto::Resp3 } else { Proto::Resp2 };
        c.info.resp.set(v as u8);
    }
    c.reply.map(7);
    c.reply.bulk_str("server");
    c.reply.bulk_str("redis");
    c.reply.bulk_str("version");
    c.reply.bulk_str(crate::REDIS_VERSION);
    c.reply.bulk_str("proto");
    c.reply
        .int(if c.reply.proto == Proto::Resp3 { 3 } else { 2 });
    c.reply.bulk_str("id");
    c.reply.int(c.info.id as i64);
    c.reply.bulk_str("mode");
    c.reply.bulk_str("standalone");
    c.reply.bulk_str("role");
    c.reply.bulk_str("master");
    c.reply.bulk_str("modules");
    c.reply.array(0);
}

/// SELECT index
pub fn select(c: &mut Conn, a: &[&[u8]]) {
    let Some(db) = parse_i64(a[1]) else {
        c.reply.error(NOT_INT);
        return;
    };
    let databases = c.shared.config.get_i64("databases");
    if db < 0 || db >= databases {
        c.reply.error("ERR DB index is out of range");
        return;
    }
    c.db = db as usize;
    c.info.db.set(c.db);
    c.reply.ok();
}

/// QUIT
pub fn quit(c: &mut Conn, _a: &[&[u8]]) {
    c.reply.ok();
    c.close_after_reply = true;
}

/// RESET
pub fn reset(c: &mut Conn, _a: &[&[u8]]) {
    super::pubsub::drop_all(c);
    c.multi = None;
    c.info.multi.set(-1);
    c.unwatch_all();
    c.db = 0;
    c.info.db.set(0);
    c.reply.proto = Proto::Resp2;
    c.info.resp.set(2);
    c.reply_mode = ReplyMode::On;
    c.info.name.borrow_mut().clear();
    c.info.no_evict.set(false);
    c.info.no_touch.set(false);
    c.authenticated = !c.shared.config.hot.auth_required.load(Ordering::Relaxed);
    c.reply.simple("RESET");
}

fn on_off(c: &mut Conn, arg: &[u8]) -> Option<bool> {
    if is(arg, "on") {
        Some(true)
    } else if is(arg, "off") {
        Some(false)
    } else {
        c.reply.error(SYNTAX);
        None
    }
}

const CLIENT_HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "    * MAXAGE <maxage>",
    "      Kill connections older than the specified age.",
    "LIST [options ...]",
    "    Return information about client connections. Options: TYPE, ID.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <LIB-NAME|LIB-VER> <value>",
    "    Set client meta attributes.",
    "HELP",
    "    Print this help.",
];

/// Filters of CLIENT KILL / CLIENT LIST.
#[derive(Clone, Default)]
struct ClientFilter {
    ids: Option<Vec<u64>>,
    addr: Option<String>,
    laddr: Option<String>,
    user: Option<String>,
    skip_id: Option<u64>,
    type_normal: Option<bool>,
    /// CLIENT KILL MAXAGE: only connections at least this many seconds old.
    max_age_s: Option<u64>,
}

impl ClientFilter {
    fn matches(&self, info: &crate::client::ClientInfo) -> bool {
        // A killed client is on its way out (its task has not run yet): it is gone for
        // CLIENT LIST and a second CLIENT KILL, as in Redis, which frees it at once.
        if info.killed.get() {
            return false;
        }
        if let Some(ids) = &self.ids {
            if !ids.contains(&info.id) {
                return false;
            }
        }
        if self
            .addr
            .as_ref()
            .is_some_and(|a| *a != info.addr.to_string())
        {
            return false;
        }
        if self
            .laddr
            .as_ref()
            .is_some_and(|a| *a != info.laddr.to_string())
        {
            return false;
        }
        if self
            .user
            .as_ref()
            .is_some_and(|u| u.as_str() != *info.user.borrow())
        {
            return false;
        }
        if self.skip_id == Some(info.id) {
            return false;
        }
        if self.type_normal == Some(false) {
            return false;
        }
        if self
            .max_age_s
            .is_some_and(|m| info.created.elapsed().as_secs() < m)
        {
            return false;
        }
        true
    }
}

fn parse_type(c: &mut Conn, t: &[u8]) -> Option<bool> {
    if is(t, "normal") {
        Some(true)
    } else if is(t, "master") || is(t, "replica") || is(t, "slave") || is(t, "pubsub") {
        Some(false)
    } else {
        c.reply.error(&format!(
            "ERR Unknown client type '{}'",
            String::from_utf8_lossy(t)
        ));
        None
    }
}

/// CLIENT subcommand ...
pub async fn client(c: &mut Conn, a: &[&[u8]]) {
    let sub = a[1].to_ascii_lowercase();
    let argc = a.len();
    let wrong =
        |c: &mut Conn| crate::commands::subcommand_syntax_error(&mut c.reply, "CLIENT", a[1]);
    match (sub.as_slice(), argc) {
        (b"id", 2) => c.reply.int(c.info.id as i64),
        (b"getname", 2) => {
            let name = c.info.name.borrow().clone();
            if name.is_empty() {
                c.reply.null();
            } else {
                c.reply.bulk(&name);
            }
        }
        (b"setname", 3) => {
            if !valid_name(a[2]) {
                c.reply.error(
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                );
            } else {
                *c.info.name.borrow_mut() = a[2].to_vec();
                c.reply.ok();
            }
        }
        (b"setinfo", 4) => {
            let field = if is(a[2], "lib-name") {
                &c.info.lib_name
            } else if is(a[2], "lib-ver") {
                &c.info.lib_ver
            } else {
                c.reply.error(&format!(
                    "ERR Unrecognized option '{}'",
                    String::from_utf8_lossy(a[2])
                ));
                return;
            };
            if !valid_name(a[3]) && !a[3].is_empty() {
                c.reply.error(&format!(
                    "ERR {} cannot contain spaces, newlines or special characters.",
                    String::from_utf8_lossy(&a[2].to_ascii_lowercase())
                ));
                return;
            }
            *field.borrow_mut() = a[3].to_vec();
            c.reply.ok();
        }
        (b"info", 2) => {
            let line = c.info.describe(Instant::now()) + "\n";
            c.reply.verbatim(line.as_bytes());
        }
        (b"unblock", 3 | 4) => {
            let Some(id) = parse_i64(a[2]) else {
                c.reply.error(NOT_INT);
                return;
            };
            let how = match a.get(3) {
                None => 1,
                Some(m) if is(m, "timeout") => 1,
                Some(m) if is(m, "error") => 2,
                Some(_) => {
                    c.reply
                        .error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
                    return;
                }
            };
            let found = c
                .on_all(move |s| {
                    s.clients.values().any(|info| {
                        let hit = info.id as i64 == id && info.in_blocking.get();
                        if hit {
                            info.unblock_with(how);
                        }
                        hit
                    })
                })
                .await;
            c.reply.int(found.into_iter().any(|f| f) as i64);
        }
        (b"no-evict", 3) => {
            if let Some(v) = on_off(c, a[2]) {
                c.info.no_evict.set(v);
                c.reply.ok();
            }
        }
        (b"no-touch", 3) => {
            if let Some(v) = on_off(c, a[2]) {
                c.info.no_touch.set(v);
                c.reply.ok();
            }
        }
        (b"reply", 3) => {
            if is(a[2], "on") {
                c.reply_mode = ReplyMode::On;
                c.reply.ok();
            } else if is(a[2], "off") {
                c.reply_mode = ReplyMode::Off;
            } else if is(a[2], "skip") {
                if c.reply_mode != ReplyMode::Off {
                    c.reply_mode = ReplyMode::Skip;
                }
            } else {
                c.reply.error(SYNTAX);
            }
        }
        (b"list", _) => {
            let mut filter = ClientFilter::default();
            let mut i = 2;
            while i < argc {
                if is(a[i], "type") && i + 1 < argc {
                    match parse_type(c, a[i + 1]) {
                        Some(t) => filter.type_normal = Some(t),
                        None => return,
                    }
                    i += 2;
                } else if is(a[i], "id") && i + 1 < argc {
                    let mut ids = Vec::new();
                    for arg in &a[i + 1..] {
                        match parse_i64(arg) {
                            Some(id) if id > 0 => ids.push(id as u64),
                            _ => {
                                c.reply.error("ERR Invalid client ID");
                                return;
                            }
                        }
                    }
                    filter.ids = Some(ids);
                    i = argc;
                } else {
                    c.reply.error(SYNTAX);
                    return;
                }
            }
            let lines = c
                .on_all(move |s| {
                    let now = Instant::now();
                    let mut v: Vec<(u64, String)> = s
                        .clients
                        .values()
                        .filter(|info| filter.matches(info))
                        .map(|info| (info.id, info.describe(now)))
                        .collect();
                    v.sort();
                    v
                })
                .await;
            let mut all: Vec<(u64, String)> = lines.into_iter().flatten().collect();
            all.sort();
            let mut text = String::new();
            for (_, l) in all {
                text.push_str(&l);
                text.push('\n');
            }
            c.reply.verbatim(text.as_bytes());
        }
        (b"kill", 3) => {
            // Old form: CLIENT KILL addr:port
            let addr = String::from_utf8_lossy(a[2]).into_owned();
            let filter = ClientFilter {
                addr: Some(addr),
                ..Default::default()
            };
            let killed = kill_matching(c, filter).await;
            if killed == 0 {
                c.reply.error("ERR No such client");
            } else {
                c.reply.ok();
            }
        }
        (b"kill", n) if n >= 4 => {
            let mut filter = ClientFilter {
                skip_id: Some(c.info.id),
                ..Default::default()
            };
            let mut i = 2;
            while i < n {
                if i + 1 >= n {
                    c.reply.error(SYNTAX);
                    return;
                }
                let v = a[i + 1];
                if is(a[i], "id") {
                    match parse_i64(v) {
                        Some(id) if id > 0 => filter.ids = Some(vec![id as u64]),
                        _ => {
                            c.reply.error("ERR client-id should be greater than 0");
                            return;
                        }
                    }
                } else if is(a[i], "maxage") {
                    match parse_i64(v) {
                        Some(m) if m > 0 => filter.max_age_s = Some(m as u64),
                        Some(_) => {
                            c.reply.error("ERR maxage should be greater than 0");
                            return;
                        }
                        None => {
                            c.reply
                                .error("ERR maxage is not an integer or out of range");
                            return;
                        }
                    }
                } else if is(a[i], "addr") {
                    filter.addr = Some(String::from_utf8_lossy(v).into_owned());
                } else if is(a[i], "laddr") {
                    filter.laddr = Some(String::from_utf8_lossy(v).into_owned());
                } else if is(a[i], "user") {
                    filter.user = Some(String::from_utf8_lossy(v).into_owned());
                } else if is(a[i], "type") {
                    match parse_type(c, v) {
                        Some(t) => filter.type_normal = Some(t),
                        None => return,
                    }
                } else if is(a[i], "skipme") {
                    if is(v, "yes") {
                        filter.skip_id = Some(c.info.id);
                    } else if is(v, "no") {
                        filter.skip_id = None;
                    } else {
                        c.reply.error(SYNTAX);
                        return;
                    }
                } else {
                    c.reply.error(SYNTAX);
                    return;
                }
                i += 2;
            }
            let killed = kill_matching(c, filter).await;
            c.reply.int(killed as i64);
        }
        (b"help", 2) => {
            c.reply.array(CLIENT_HELP.len());
            for line in CLIENT_HELP {
                c.reply.simple(line);
            }
        }
        _ => wrong(c),
    }
}

/// Kills every client matching `filter` on every worker; the caller's own connection, when it
/// matches, closes after its reply.
async fn kill_matching(c: &mut Conn, filter: ClientFilter) -> usize {
    let me = c.info.id;
    if filter.matches(&c.info) {
        c.close_after_reply = true;
    }
    let counts = c
        .on_all(move |s| {
            let mut n = 0;
            for info in s.clients.values() {
                if filter.matches(info) {
                    n += 1;
                    if info.id != me {
                        info.kill();
                    }
                }
            }
            n
        })
        .await;
    counts.into_iter().sum()
}
