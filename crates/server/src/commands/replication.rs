//! WAIT and WAITAOF (Redis's `replication.c`).
//!
//! Skerry has no replicas yet (issue 28), so both count none: a wait for replicas lasts
//! until its time-out (0: for ever), CLIENT UNBLOCK or the client's disconnect, and then
//! answers what Redis answers with no replica connected.
//!
//! WAITAOF's local part is real. Every write of every worker is appended to that worker's
//! log in the data file, so Skerry always has what Redis calls an append-only file:
//! `numlocal` 1 makes every worker's appended records durable (one fdatasync per worker,
//! all at once; see [`crate::worker::sync_all`]) before it answers. `appendonly` is
//! `yes` by default; `no` refuses the local part with Redis's error (the log is written
//! all the same).
//!
//! As in Redis, WAITAOF's first number says whether the connection's writes are durable
//! here, whatever `numlocal` asked for: outside MULTI Skerry syncs whenever `appendonly`
//! is on, so it is 1 then.
//!
//! Inside MULTI and scripts neither blocks (Redis's `CLIENT_DENY_BLOCKING`): WAIT answers
//! 0, and WAITAOF answers its local part as 1 only under `appendfsync always`, where EXEC's
//! or the script's writes are durable before its reply leaves (Redis may answer 1 under
//! `everysec` too, when the writes before the transaction happen to be synced already).

use std::time::{Duration, Instant};

use skerry_store::Durability;

use crate::blocking::WaitEnd;
use crate::conn::Conn;
use crate::reply::Reply;

/// Replicas that acknowledged the connection's writes: none until replication exists.
const ACKED_REPLICAS: i64 = 0;

const APPENDONLY_OFF: &str =
    "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.";

/// A parsed argument, or the error Redis replies for it.
type Parsed<T> = Result<T, &'static str>;

fn long(arg: &[u8]) -> Parsed<i64> {
    super::parse_i64(arg).ok_or("ERR value is not an integer or out of range")
}

/// A timeout in milliseconds (0: none) as Redis's `getTimeoutFromObjectOrReply` parses it.
fn timeout_ms(arg: &[u8]) -> Parsed<u64> {
    let ms = super::parse_i64(arg).ok_or("ERR timeout is not an integer or out of range")?;
    if ms < 0 {
        return Err("ERR timeout is negative");
    }
    Ok(ms as u64)
}

/// WAIT's arguments: (numreplicas, timeout in ms).
fn parse_wait(a: &[&[u8]]) -> Parsed<(i64, u64)> {
    Ok((long(a[1])?, timeout_ms(a[2])?))
}

/// WAITAOF's arguments: (numlocal, numreplicas, timeout in ms).
fn parse_waitaof(a: &[&[u8]]) -> Parsed<(i64, i64, u64)> {
    let numlocal = long(a[1])?;
    if !(0..=1).contains(&numlocal) {
        return Err("ERR value is out of range, value must between 0 and 1");
    }
    let numreplicas = long(a[2])?;
    if numreplicas < 0 {
        return Err("ERR value is out of range, must be positive");
    }
    Ok((numlocal, numreplicas, timeout_ms(a[3])?))
}

/// `appendonly yes`: WAITAOF's local part is offered.
fn aof_on(c: &Conn) -> bool {
    c.shared.config.get("appendonly") == "yes"
}

fn waitaof_reply(reply: &mut Reply, acked_local: bool) {
    reply.array(2);
    reply.int(i64::from(acked_local));
    reply.int(ACKED_REPLICAS);
}

/// WAIT numreplicas timeout
pub async fn wait(c: &mut Conn, a: &[&[u8]]) {
    let (numreplicas, timeout_ms) = match parse_wait(a) {
        Ok(p) => p,
        Err(e) => return c.reply.error(e),
    };
    if ACKED_REPLICAS >= numreplicas {
        return c.reply.int(ACKED_REPLICAS);
    }
    if wait_for_replicas(c, timeout_ms).await {
        c.reply.int(ACKED_REPLICAS);
    }
}

/// WAITAOF numlocal numreplicas timeout
pub async fn waitaof(c: &mut Conn, a: &[&[u8]]) {
    let (numlocal, numreplicas, timeout_ms) = match parse_waitaof(a) {
        Ok(p) => p,
        Err(e) => return c.reply.error(e),
    };
    let aof = aof_on(c);
    if numlocal > 0 && !aof {
        return c.reply.error(APPENDONLY_OFF);
    }
    // As Redis, it reports whether the connection's writes are durable here whatever
    // `numlocal` asks; Skerry finds out by making them so.
    if aof {
        // The commands before it have run (`Conn::run_async` waited for their replies),
        // so their records are appended; now every worker's log is made durable.
        crate::worker::sync_all(&c.shared, c.worker).await;
    }
    if ACKED_REPLICAS < numreplicas && !wait_for_replicas(c, timeout_ms).await {
        return;
    }
    waitaof_reply(&mut c.reply, aof);
}

/// Waits for replicas that do not exist: until `timeout_ms` (0: no limit) or CLIENT
/// UNBLOCK. False when the client went (no reply is due), or when CLIENT UNBLOCK ERROR
/// answered for it.
async fn wait_for_replicas(c: &mut Conn, timeout_ms: u64) -> bool {
    let deadline = (timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(timeout_ms));
    let end = c.block_until(deadline).await;
    let unblocked = c.info.unblock.replace(0);
    match end {
        WaitEnd::Gone => false,
        _ if unblocked == 2 => {
            c.reply
                .error("UNBLOCKED client unblocked via CLIENT UNBLOCK");
            false
        }
        WaitEnd::Reply(()) | WaitEnd::TimedOut => true,
    }
}

/// WAIT or WAITAOF inside MULTI or a script, where it may not block: its reply in `proto`.
pub fn reply_without_blocking(c: &Conn, name: &str, a: &[&[u8]], reply: &mut Reply) {
    if name == "wait" {
        match parse_wait(a) {
            Ok(_) => reply.int(ACKED_REPLICAS),
            Err(e) => reply.error(e),
        }
        return;
    }
    match parse_waitaof(a) {
        Ok((numlocal, _, _)) if numlocal > 0 && !aof_on(c) => reply.error(APPENDONLY_OFF),
        Ok(_) => {
            let durable = crate::persist::durability(&c.shared.config) == Durability::Always;
            waitaof_reply(reply, durable && aof_on(c));
        }
        Err(e) => reply.error(e),
    }
}

/// REPLICAOF host port | NO ONE (and SLAVEOF): follows a primary, or stops following
/// (`crate::replica`).
pub fn replicaof(c: &mut Conn, a: &[&[u8]]) {
    use std::sync::atomic::Ordering;
    if a[1].eq_ignore_ascii_case(b"no") && a[2].eq_ignore_ascii_case(b"one") {
        if c.shared.repl.master.lock().expect("repl master").is_some() {
            crate::replica::replicaof(&c.shared, c.worker, None);
        }
        c.reply.ok();
        return;
    }
    let Some(port) = crate::commands::parse_i64(a[2]).filter(|p| (0..=65535).contains(p)) else {
        c.reply.error("ERR Invalid master port");
        return;
    };
    let host = String::from_utf8_lossy(a[1]).into_owned();
    let target = (host, port as u16);
    let same = c.shared.repl.master.lock().expect("repl master").as_ref() == Some(&target);
    if same {
        c.reply.simple("OK Already connected to specified master");
        return;
    }
    // A new primary: its data replaces this one's at the full sync; the old primary's
    // replication ID and offset mean nothing to it.
    c.shared.repl.replid.lock().expect("replid").clear();
    c.shared.repl.offset.store(0, Ordering::SeqCst);
    crate::replica::replicaof(&c.shared, c.worker, Some(target));
    c.reply.ok();
}

/// ROLE: `master` with no replicas, or `slave` with its primary, the link's state and the
/// offset.
pub fn role(c: &mut Conn, _a: &[&[u8]]) {
    use std::sync::atomic::Ordering;
    let repl = &c.shared.repl;
    let master = repl.master.lock().expect("repl master").clone();
    match master {
        None => {
            c.reply.array(3);
            c.reply.bulk(b"master");
            c.reply.int(0);
            c.reply.array(0);
        }
        Some((host, port)) => {
            let state = if repl.link_up.load(Ordering::SeqCst) {
                "connected"
            } else if repl.syncing.load(Ordering::SeqCst) {
                "sync"
            } else {
                "connect"
            };
            c.reply.array(5);
            c.reply.bulk(b"slave");
            c.reply.bulk(host.as_bytes());
            c.reply.int(i64::from(port));
            c.reply.bulk(state.as_bytes());
            c.reply.int(repl.offset.load(Ordering::SeqCst));
        }
    }
}

/// INFO's replication section.
pub fn info_section(shared: &crate::worker::Shared, o: &mut String) {
    use std::fmt::Write as _;
    use std::sync::atomic::Ordering;
    let repl = &shared.repl;
    let master = repl.master.lock().expect("repl master").clone();
    let offset = repl.offset.load(Ordering::SeqCst);
    let replid = repl.replid.lock().expect("replid").clone();
    match master {
        None => {
            let _ = write!(
                o,
                "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:{offset}\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\n",
                if replid.is_empty() { shared.run_id.as_str() } else { replid.as_str() },
            );
        }
        Some((host, port)) => {
            let up = repl.link_up.load(Ordering::SeqCst);
            let io_ago =
                (crate::worker::unix_ms() - repl.last_io_ms.load(Ordering::Relaxed)).max(0) / 1000;
            let _ = write!(
                o,
                "# Replication\r\nrole:slave\r\nmaster_host:{host}\r\nmaster_port:{port}\r\nmaster_link_status:{}\r\nmaster_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\nslave_read_repl_offset:{offset}\r\nslave_repl_offset:{offset}\r\nslave_priority:100\r\nslave_read_only:{}\r\nreplica_announced:1\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\nmaster_replid:{replid}\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:{offset}\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\nskerry_full_syncs:{}\r\nskerry_partial_syncs:{}\r\n",
                if up { "up" } else { "down" },
                if up { io_ago } else { -1 },
                repl.syncing.load(Ordering::SeqCst) as u8,
                (shared.config.get("replica-read-only") == "yes") as u8,
                repl.full_syncs.load(Ordering::Relaxed),
                repl.partial_syncs.load(Ordering::Relaxed),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_in_redis_order_with_its_errors() {
        assert_eq!(parse_wait(&[b"wait", b"1", b"100"]), Ok((1, 100)));
        assert_eq!(
            parse_wait(&[b"wait", b"x", b"-1"]),
            Err("ERR value is not an integer or out of range")
        );
        assert_eq!(
            parse_wait(&[b"wait", b"0", b"-1"]),
            Err("ERR timeout is negative")
        );
        assert_eq!(
            parse_wait(&[b"wait", b"0", b"1.5"]),
            Err("ERR timeout is not an integer or out of range")
        );
        assert_eq!(
            parse_waitaof(&[b"waitaof", b"1", b"0", b"0"]),
            Ok((1, 0, 0))
        );
        assert_eq!(
            parse_waitaof(&[b"waitaof", b"2", b"x", b"x"]),
            Err("ERR value is out of range, value must between 0 and 1")
        );
        assert_eq!(
            parse_waitaof(&[b"waitaof", b"1", b"-1", b"x"]),
            Err("ERR value is out of range, must be positive")
        );
        assert_eq!(
            parse_waitaof(&[b"waitaof", b"0", b"1", b"-3"]),
            Err("ERR timeout is negative")
        );
    }
}
