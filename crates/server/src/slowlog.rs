//! The slow log (SLOWLOG): commands whose execution took at least
//! `slowlog-log-slower-than` microseconds, newest first, at most `slowlog-max-len`.
//!
//! Each worker logs the commands it executes (a command forwarded to its keys' owner is
//! logged there), so logging costs one relaxed load and a compare per command and never
//! crosses workers. Entry ids come from one process-wide counter, so SLOWLOG GET merges
//! the workers' logs by id into Redis's single log: the newest `slowlog-max-len` of them.
//! As in Redis, the time is the command's execution alone (not the wait of a blocked
//! command, nor its hop), EXEC is not logged but the commands it ran are, and arguments are
//! trimmed (32 arguments, 128 bytes each) and passwords redacted.
//!
//! A command forwarded from a connection of another worker is logged with the client's id;
//! its address and name are looked up when the log is read, and are empty if the client has
//! gone by then (Redis copies them when it logs).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::commands::COMMANDS;
use crate::worker::Shard;

/// Arguments kept per entry (Redis's `SLOWLOG_ENTRY_MAX_ARGC`).
const ENTRY_MAX_ARGS: usize = 32;
/// Bytes kept per argument (Redis's `SLOWLOG_ENTRY_MAX_STRING`).
const ENTRY_MAX_ARG_BYTES: usize = 128;
/// What replaces a password.
const REDACTED: &[u8] = b"(redacted)";

/// The next entry id, process-wide (Redis's `slowlog_entry_id`).
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// A logged command.
#[derive(Clone, Debug)]
pub struct SlowEntry {
    /// Unique, increasing id.
    pub id: u64,
    /// When it was logged (Unix seconds).
    pub time_s: i64,
    /// Execution time in microseconds.
    pub duration_us: u64,
    /// Its arguments, trimmed and redacted.
    pub argv: Vec<Vec<u8>>,
    /// CLIENT ID of the connection that sent it (0: none, e.g. a script's caller).
    pub client_id: u64,
    /// The client's `ip:port`, when known where it ran.
    pub peer: Option<String>,
    /// The client's name, when known where it ran.
    pub name: Vec<u8>,
}

/// One worker's slow log, newest first.
#[derive(Default)]
pub struct SlowLog {
    entries: VecDeque<SlowEntry>,
}

impl SlowLog {
    /// Entries, newest first.
    pub fn entries(&self) -> impl Iterator<Item = &SlowEntry> {
        self.entries.iter()
    }

    /// Number of entries kept here.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is logged here.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets every entry (SLOWLOG RESET).
    pub fn reset(&mut self) {
        self.entries.clear();
    }
}

/// Logs command `idx` with `argv`, sent by client `client_id`, when its execution took
/// `duration_ns` or more than the threshold.
#[inline]
pub fn note(shard: &mut Shard, idx: usize, argv: &[&[u8]], client_id: u64, duration_ns: u64) {
    let hot = &shard.shared.config.hot;
    let threshold_us = hot.slowlog_slower_than_us.load(Ordering::Relaxed);
    let duration_us = duration_ns / 1000;
    if threshold_us < 0 || duration_us < threshold_us as u64 {
        return;
    }
    let max_len = hot.slowlog_max_len.load(Ordering::Relaxed) as usize;
    if max_len == 0 || COMMANDS[idx].has_flag("skip_slowlog") {
        return;
    }
    let (peer, name) = match shard.clients.get(&client_id) {
        Some(c) => (Some(c.addr.to_string()), c.name.borrow().clone()),
        None => (None, Vec::new()),
    };
    let entry = SlowEntry {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        time_s: crate::worker::unix_ms() / 1000,
        duration_us,
        argv: logged_args(argv),
        client_id,
        peer,
        name,
    };
    let log = &mut shard.slowlog.entries;
    log.push_front(entry);
    log.truncate(max_len);
}

/// The arguments as logged: passwords redacted, at most [`ENTRY_MAX_ARGS`] (the last then
/// says how many more there were), each at most [`ENTRY_MAX_ARG_BYTES`] bytes.
fn logged_args(argv: &[&[u8]]) -> Vec<Vec<u8>> {
    let redacted = redacted_positions(argv);
    let kept = argv.len().min(ENTRY_MAX_ARGS);
    let mut out = Vec::with_capacity(kept);
    for (j, a) in argv.iter().enumerate().take(kept) {
        if kept != argv.len() && j == kept - 1 {
            out.push(format!("... ({} more arguments)", argv.len() - kept + 1).into_bytes());
        } else if redacted.contains(&j) {
            out.push(REDACTED.to_vec());
        } else if a.len() > ENTRY_MAX_ARG_BYTES {
            let mut s = a[..ENTRY_MAX_ARG_BYTES].to_vec();
            s.extend_from_slice(
                format!("... ({} more bytes)", a.len() - ENTRY_MAX_ARG_BYTES).as_bytes(),
            );
            out.push(s);
        } else {
            out.push(a.to_vec());
        }
    }
    out
}

/// Configuration parameters whose values CONFIG SET keeps out of the log, as Redis does.
const SENSITIVE_CONFIGS: &[&str] = &[
    "masteruser",
    "masterauth",
    "requirepass",
    "tls-key-file-pass",
    "tls-client-key-file-pass",
];

/// The argument positions Redis redacts in logged commands: AUTH's arguments, HELLO's AUTH
/// user and password, MIGRATE's AUTH / AUTH2 credentials, and CONFIG SET of a password.
fn redacted_positions(argv: &[&[u8]]) -> Vec<usize> {
    let is = |a: &[u8], s: &str| a.eq_ignore_ascii_case(s.as_bytes());
    let mut out = Vec::new();
    match argv.first() {
        Some(c) if is(c, "auth") => out.extend(1..argv.len()),
        Some(c) if is(c, "hello") => {
            if let Some(p) = argv.iter().position(|a| is(a, "auth")) {
                out.extend((p + 1..p + 3).filter(|&j| j < argv.len()));
            }
        }
        Some(c) if is(c, "migrate") => {
            let mut j = 6;
            while j < argv.len() {
                if is(argv[j], "keys") {
                    break;
                }
                if is(argv[j], "auth") {
                    out.push(j + 1);
                    j += 2;
                } else if is(argv[j], "auth2") {
                    out.extend([j + 1, j + 2]);
                    j += 3;
                } else {
                    j += 1;
                }
            }
            out.retain(|&j| j < argv.len());
        }
        Some(c) if is(c, "config") && argv.len() > 1 && is(argv[1], "set") => {
            for j in (2..argv.len()).step_by(2) {
                if SENSITIVE_CONFIGS.iter().any(|n| is(argv[j], n)) && j + 1 < argv.len() {
                    out.push(j + 1);
                }
            }
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<Vec<u8>> {
        let a: Vec<&[u8]> = v.iter().map(|s| s.as_bytes()).collect();
        logged_args(&a)
    }

    fn strs(v: Vec<Vec<u8>>) -> Vec<String> {
        v.into_iter()
            .map(|a| String::from_utf8(a).unwrap())
            .collect()
    }

    #[test]
    fn trims_arguments_as_redis() {
        let mut v = vec!["sadd", "set"];
        let nums: Vec<String> = (3..=33).map(|i| i.to_string()).collect();
        v.extend(nums.iter().map(|s| s.as_str()));
        let got = strs(args(&v));
        assert_eq!(got.len(), 32);
        assert_eq!(got[30], "31");
        assert_eq!(got[31], "... (2 more arguments)");
        let long = "A".repeat(129);
        let got = strs(args(&["sadd", "set", "foo", &long]));
        assert_eq!(got[3], format!("{}... (1 more bytes)", "A".repeat(128)));
        // Exactly 32 arguments and 128 bytes are kept whole.
        let v32: Vec<&str> = (0..32).map(|_| "x").collect();
        assert_eq!(strs(args(&v32)), v32);
        let a128 = "B".repeat(128);
        assert_eq!(strs(args(&["set", "k", &a128]))[2], a128);
    }

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            strs(args(&["AUTH", "user", "pass"])),
            ["AUTH", "(redacted)", "(redacted)"]
        );
        assert_eq!(
            strs(args(&["hello", "3", "AUTH", "u", "p", "SETNAME", "n"])),
            [
                "hello",
                "3",
                "AUTH",
                "(redacted)",
                "(redacted)",
                "SETNAME",
                "n"
            ]
        );
        assert_eq!(
            strs(args(&[
                "migrate", "h", "1", "key", "9", "5000", "AUTH", "user"
            ])),
            [
                "migrate",
                "h",
                "1",
                "key",
                "9",
                "5000",
                "AUTH",
                "(redacted)"
            ]
        );
        assert_eq!(
            strs(args(&[
                "migrate", "h", "1", "", "9", "5000", "COPY", "AUTH2", "u", "p", "KEYS", "a"
            ])),
            [
                "migrate",
                "h",
                "1",
                "",
                "9",
                "5000",
                "COPY",
                "AUTH2",
                "(redacted)",
                "(redacted)",
                "KEYS",
                "a"
            ]
        );
        assert_eq!(
            strs(args(&["config", "set", "requirepass", "x", "hz", "10"])),
            ["config", "set", "requirepass", "(redacted)", "hz", "10"]
        );
    }
}
