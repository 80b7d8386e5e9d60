//! Generic keyspace commands (Redis's `db.c` and `expire.c`): DEL, EXISTS, TYPE, TTL and the
//! EXPIRE family on the owner worker; KEYS, SCAN, DBSIZE, FLUSHDB, FLUSHALL, RANDOMKEY across
//! every worker.

use super::{is, parse_i64, Exec};
use crate::conn::Conn;
use crate::glob::glob_match;
use crate::keyspace::table::SCAN_GRANULE_BITS;
use crate::keyspace::{Expiry, Got};
use crate::reply::errors::*;

/// Commands whose key lookups are not accesses (Redis's `LOOKUP_NOTOUCH`, or a lookup
/// through `dbFind`): their keys' access clocks stay as they are.
const NO_TOUCH_COMMANDS: &[&str] = &[
    "type",
    "ttl",
    "pttl",
    "expiretime",
    "pexpiretime",
    "exists",
    "object",
    "memory",
];

/// True when keyed command `idx` updates the access clocks of the keys it looks up (see
/// `keyspace/clock.rs`): not for [`NO_TOUCH_COMMANDS`], and for a client in CLIENT
/// NO-TOUCH (`client_no_touch`) only for TOUCH (Redis's `lookupKey`).
#[inline]
pub fn touches(idx: usize, client_no_touch: bool) -> bool {
    static TOUCHES: std::sync::LazyLock<Vec<(bool, bool)>> = std::sync::LazyLock::new(|| {
        super::COMMANDS
            .iter()
            .map(|c| (!NO_TOUCH_COMMANDS.contains(&c.name), c.name == "touch"))
            .collect()
    });
    let (touches, is_touch) = TOUCHES[idx];
    if client_no_touch {
        is_touch
    } else {
        touches
    }
}

/// DEL / UNLINK key [key ...] (keys on this worker)
pub fn del(x: &mut Exec, a: &[&[u8]]) {
    let n = a[1..]
        .iter()
        .filter(|k| x.ks.delete(x.db, k, x.now_ms))
        .count();
    x.reply.int(n as i64);
}

/// EXISTS / TOUCH key [key ...] (keys on this worker; a repeated key counts each time)
pub fn exists(x: &mut Exec, a: &[&[u8]]) {
    let n = a[1..]
        .iter()
        .filter(|k| x.ks.exists(x.db, k, x.now_ms))
        .count();
    x.reply.int(n as i64);
}

fn rename_common(x: &mut Exec, a: &[&[u8]], nx: bool) {
    if !x.ks.exists(x.db, a[1], x.now_ms) {
        x.reply.error("ERR no such key");
        return;
    }
    if a[1] == a[2] {
        if nx {
            x.reply.int(0);
        } else {
            x.reply.ok();
        }
        return;
    }
    if nx && x.ks.exists(x.db, a[2], x.now_ms) {
        x.reply.int(0);
        return;
    }
    // The new key is written first: on a full device nothing is lost. On failure the kept
    // error is the reply.
    let dirty_before = x.ks.stats.dirty;
    if !x.ks.copy_value(x.db, a[1], x.db, a[2], x.now_ms) || !x.ks.delete(x.db, a[1], x.now_ms) {
        return;
    }
    // Redis counts a rename as one change.
    x.ks.count_changes_as(dirty_before, 1);
    if nx {
        x.reply.int(1);
    } else {
        x.reply.ok();
    }
}

/// RENAME key newkey (both keys on this worker)
pub fn rename(x: &mut Exec, a: &[&[u8]]) {
    rename_common(x, a, false);
}

/// RENAMENX key newkey (both keys on this worker)
pub fn renamenx(x: &mut Exec, a: &[&[u8]]) {
    rename_common(x, a, true);
}

/// The owners of `src` and `dst`, held together for one atomic two-key step.
async fn hold_pair(c: &Conn, src: &[u8], dst: &[u8]) -> (usize, usize, crate::worker::Txn) {
    let workers = c.shared.workers;
    let (ws, wd) = (
        crate::slot::owner(src, workers),
        crate::slot::owner(dst, workers),
    );
    let txn = crate::worker::Txn::begin(&c.shared, c.worker, vec![ws, wd]).await;
    (ws, wd, txn)
}

/// RENAME / RENAMENX with the keys on two workers: both workers are held while the value and
/// its TTL move from the source's worker to the destination's.
pub async fn rename_cross(c: &mut Conn, a: &[&[u8]]) {
    let nx = is(a[0], "renamenx");
    let (db, now) = (c.db, c.now_ms);
    let (src, dst) = (a[1].to_vec(), a[2].to_vec());
    let (ws, wd, txn) = hold_pair(c, &src, &dst).await;
    let probe = src.clone();
    let exists = txn
        .run(ws, move |s| s.keyspace.exists(db, &probe, now))
        .await;
    if !exists {
        c.reply.error("ERR no such key");
        return;
    }
    if nx {
        let probe = dst.clone();
        if txn
            .run(wd, move |s| s.keyspace.exists(db, &probe, now))
            .await
        {
            c.reply.int(0);
            return;
        }
    }
    let probe = src.clone();
    let taken = txn
        .run_resident(ws, db, vec![src.clone()], now, move |s| {
            s.keyspace.peek(db, &probe, now)
        })
        .await;
    let (value, at) = match taken {
        Ok(Some(Got {
            value,
            expire_at_ms,
        })) => (value, expire_at_ms),
        Ok(None) => {
            c.reply.error("ERR no such key");
            return;
        }
        Err(e) => {
            c.reply.error(&format!("ERR {e}"));
            return;
        }
    };
    crate::space::wait_for_value_blocks(&c.shared, &value).await;
    // Write the new key first, then remove the old one: a refused write loses nothing.
    let put = txn
        .run(wd, move |s| {
            let ok = s
                .keyspace
                .put_value(db, &dst, &value, Expiry::of_entry_ms(at), now);
            (ok, s.keyspace.take_error())
        })
        .await;
    if let (false, e) = put {
        c.reply.error(&format!("ERR {}", e.unwrap_or_default()));
        return;
    }
    let deleted = txn
        .run(ws, move |s| {
            // Redis counts a rename as one change: the new key's write was it.
            let dirty_before = s.keyspace.stats.dirty;
            s.keyspace.delete(db, &src, now);
            s.keyspace.count_changes_as(dirty_before, 0);
            s.keyspace.take_error()
        })
        .await;
    if let Some(e) = deleted {
        c.reply.error(&format!("ERR {e}"));
        return;
    }
    if nx {
        c.reply.int(1);
    } else {
        c.reply.ok();
    }
}

/// Parses a database index argument; replies with Redis's error when it is not valid.
fn parse_db(reply: &mut crate::reply::Reply, arg: &[u8], databases: usize) -> Option<usize> {
    match parse_i64(arg) {
        None => {
            reply.error(NOT_INT);
            None
        }
        Some(n) if n < 0 || n as usize >= databases => {
            reply.error("ERR DB index is out of range");
            None
        }
        Some(n) => Some(n as usize),
    }
}

/// Options of COPY: (destination database, replace).
fn copy_opts(
    reply: &mut crate::reply::Reply,
    a: &[&[u8]],
    db: usize,
    databases: usize,
) -> Option<(usize, bool)> {
    let (mut dst_db, mut replace) = (db, false);
    let mut i = 3;
    while i < a.len() {
        if is(a[i], "replace") {
            replace = true;
        } else if is(a[i], "db") && i + 1 < a.len() {
            dst_db = parse_db(reply, a[i + 1], databases)?;
            i += 1;
        } else {
            reply.error(SYNTAX);
            return None;
        }
        i += 1;
    }
    if dst_db == db && a[1] == a[2] {
        reply.error("ERR source and destination objects are the same");
        return None;
    }
    Some((dst_db, replace))
}

/// COPY source destination [DB destination-db] [REPLACE] (both keys on this worker)
pub fn copy(x: &mut Exec, a: &[&[u8]]) {
    let Some((dst_db, replace)) = copy_opts(x.reply, a, x.db, x.ks.databases()) else {
        return;
    };
    if !x.ks.exists(x.db, a[1], x.now_ms) {
        x.reply.int(0);
        return;
    }
    if !replace && x.ks.exists(dst_db, a[2], x.now_ms) {
        x.reply.int(0);
        return;
    }
    if x.ks.copy_value(x.db, a[1], dst_db, a[2], x.now_ms) {
        x.reply.int(1);
    }
}

/// COPY with the two keys on different workers.
pub async fn copy_cross(c: &mut Conn, a: &[&[u8]]) {
    let databases = c.shared.config.get_i64("databases") as usize;
    let Some((dst_db, replace)) = copy_opts(&mut c.reply, a, c.db, databases) else {
        return;
    };
    let (db, now) = (c.db, c.now_ms);
    let (src, dst) = (a[1].to_vec(), a[2].to_vec());
    let (ws, wd, txn) = hold_pair(c, &src, &dst).await;
    let probe = src.clone();
    let found = txn
        .run_resident(ws, db, vec![src], now, move |s| {
            s.keyspace.peek(db, &probe, now)
        })
        .await;
    let (value, at) = match found {
        Ok(Some(Got {
            value,
            expire_at_ms,
        })) => (value, expire_at_ms),
        Ok(None) => {
            c.reply.int(0);
            return;
        }
        Err(e) => {
            c.reply.error(&format!("ERR {e}"));
            return;
        }
    };
    crate::space::wait_for_value_blocks(&c.shared, &value).await;
    let copied = txn
        .run(wd, move |s| {
            if !replace && s.keyspace.exists(dst_db, &dst, now) {
                return Ok(false);
            }
            if s.keyspace
                .put_value(dst_db, &dst, &value, Expiry::of_entry_ms(at), now)
            {
                Ok(true)
            } else {
                Err(s.keyspace.take_error().unwrap_or_default())
            }
        })
        .await;
    match copied {
        Ok(copied) => c.reply.int(copied as i64),
        Err(e) => c.reply.error(&format!("ERR {e}")),
    }
}

/// MOVE key db
pub fn move_(x: &mut Exec, a: &[&[u8]]) {
    let Some(dst_db) = parse_db(x.reply, a[2], x.ks.databases()) else {
        return;
    };
    if dst_db == x.db {
        x.reply
            .error("ERR source and destination objects are the same");
        return;
    }
    if !x.ks.exists(x.db, a[1], x.now_ms) {
        x.reply.int(0);
        return;
    }
    if x.ks.exists(dst_db, a[1], x.now_ms) {
        x.reply.int(0);
        return;
    }
    if x.ks.copy_value(x.db, a[1], dst_db, a[1], x.now_ms) && x.ks.delete(x.db, a[1], x.now_ms) {
        x.reply.int(1);
    }
}

/// TYPE key
pub fn type_(x: &mut Exec, a: &[&[u8]]) {
    let t =
        x.ks.meta(x.db, a[1], x.now_ms)
            .map_or("none", |m| m.type_name());
    x.reply.simple(t);
}

fn ttl_common(x: &mut Exec, key: &[u8], ms: bool, absolute: bool) {
    let Some(m) = x.ks.meta(x.db, key, x.now_ms) else {
        x.reply.int(-2);
        return;
    };
    let at = m.expire_at_ms;
    if at == 0 {
        x.reply.int(-1);
        return;
    }
    let v = match (absolute, ms) {
        (true, true) => at,
        // Rounded to the nearest second like TTL (Redis: `(ms + 500) / 1000`), without
        // overflowing near the largest time.
        (true, false) => at / 1000 + i64::from(at % 1000 >= 500),
        (false, true) => (at - x.now_ms).max(0),
        (false, false) => ((at - x.now_ms).max(0) + 500) / 1000,
    };
    x.reply.int(v);
}

/// TTL key
pub fn ttl(x: &mut Exec, a: &[&[u8]]) {
    ttl_common(x, a[1], false, false);
}
/// PTTL key
pub fn pttl(x: &mut Exec, a: &[&[u8]]) {
    ttl_common(x, a[1], true, false);
}
/// EXPIRETIME key
pub fn expiretime(x: &mut Exec, a: &[&[u8]]) {
    ttl_common(x, a[1], false, true);
}
/// PEXPIRETIME key
pub fn pexpiretime(x: &mut Exec, a: &[&[u8]]) {
    ttl_common(x, a[1], true, true);
}

fn expire_common(x: &mut Exec, a: &[&[u8]], unit_ms: i64, relative: bool, cmd: &str) {
    // The options are checked before the time, as Redis's expireGenericCommand does.
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &a[3..] {
        if is(opt, "nx") {
            nx = true;
        } else if is(opt, "xx") {
            xx = true;
        } else if is(opt, "gt") {
            gt = true;
        } else if is(opt, "lt") {
            lt = true;
        } else {
            x.reply.error(&format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(opt)
            ));
            return;
        }
    }
    if nx && (xx || gt || lt) {
        x.reply
            .error("ERR NX and XX, GT or LT options at the same time are not compatible");
        return;
    }
    if gt && lt {
        x.reply
            .error("ERR GT and LT options at the same time are not compatible");
        return;
    }
    let Some(mut when) = parse_i64(a[2]) else {
        x.reply.error(NOT_INT);
        return;
    };
    let invalid = |x: &mut Exec| {
        x.reply
            .error(&format!("ERR invalid expire time in '{cmd}' command"))
    };
    if unit_ms == 1000 {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            invalid(x);
            return;
        }
        when *= 1000;
    }
    if relative {
        match when.checked_add(x.now_ms) {
            Some(t) => when = t,
            None => {
                invalid(x);
                return;
            }
        }
    }
    let Some(m) = x.ks.meta(x.db, a[1], x.now_ms) else {
        x.reply.int(0);
        return;
    };
    let current = m.expire_at_ms;
    let has_ttl = current != 0;
    let ok = if nx {
        !has_ttl
    } else if xx && !has_ttl {
        false
    } else if gt {
        has_ttl && when > current
    } else if lt {
        !has_ttl || when < current
    } else {
        true
    };
    if !ok {
        x.reply.int(0);
        return;
    }
    if when <= x.now_ms {
        x.ks.delete(x.db, a[1], x.now_ms);
    } else {
        x.ks.set_expiry(x.db, a[1], when, x.now_ms);
    }
    x.reply.int(1);
}

/// EXPIRE key seconds [NX|XX|GT|LT]
pub fn expire(x: &mut Exec, a: &[&[u8]]) {
    expire_common(x, a, 1000, true, "expire");
}
/// PEXPIRE key milliseconds [NX|XX|GT|LT]
pub fn pexpire(x: &mut Exec, a: &[&[u8]]) {
    expire_common(x, a, 1, true, "pexpire");
}
/// EXPIREAT key unix-time-seconds [NX|XX|GT|LT]
pub fn expireat(x: &mut Exec, a: &[&[u8]]) {
    expire_common(x, a, 1000, false, "expireat");
}
/// PEXPIREAT key unix-time-milliseconds [NX|XX|GT|LT]
pub fn pexpireat(x: &mut Exec, a: &[&[u8]]) {
    expire_common(x, a, 1, false, "pexpireat");
}

/// PERSIST key
pub fn persist(x: &mut Exec, a: &[&[u8]]) {
    let has_ttl =
        x.ks.meta(x.db, a[1], x.now_ms)
            .is_some_and(|m| m.expire_at_ms != 0);
    if has_ttl {
        x.ks.set_expiry(x.db, a[1], 0, x.now_ms);
    }
    x.reply.int(has_ttl as i64);
}

/// KEYS pattern
pub async fn keys(c: &mut Conn, a: &[&[u8]]) {
    let pattern = a[1].to_vec();
    let (db, now) = (c.db, c.now_ms);
    let all_match = pattern == b"*";
    let parts = c
        .on_all(move |s| {
            let mut found: Vec<Vec<u8>> = Vec::new();
            s.keyspace.keys(db, now, |e| {
                if all_match || glob_match(&pattern, e.key(), false) {
                    found.push(e.key().to_vec());
                }
            });
            found
        })
        .await;
    let total: usize = parts.iter().map(|p| p.len()).sum();
    c.reply.array(total);
    for k in parts.iter().flatten() {
        c.reply.bulk(k);
    }
}

/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
///
/// The cursor holds a hash position (high bits) and a worker index (low bits): each worker's
/// keys are walked in hash order, then the next worker's.
pub async fn scan(c: &mut Conn, a: &[&[u8]]) {
    let Some(cursor) = super::parse_scan_cursor(a[1]) else {
        c.reply.error("ERR invalid cursor");
        return;
    };
    let mut pattern: Option<Vec<u8>> = None;
    let mut count: usize = 10;
    let mut type_filter: Option<Vec<u8>> = None;
    let mut i = 2;
    while i < a.len() {
        if i + 1 >= a.len() {
            c.reply.error(SYNTAX);
            return;
        }
        if is(a[i], "count") {
            match parse_i64(a[i + 1]) {
                Some(n) if n >= 1 => count = n as usize,
                Some(_) => {
                    c.reply.error(SYNTAX);
                    return;
                }
                None => {
                    c.reply.error(NOT_INT);
                    return;
                }
            }
        } else if is(a[i], "match") {
            pattern = Some(a[i + 1].to_vec()).filter(|p| p != b"*");
        } else if is(a[i], "type") {
            type_filter = Some(a[i + 1].to_ascii_lowercase());
        } else {
            c.reply.error(SYNTAX);
            return;
        }
        i += 2;
    }
    let granule_mask = (1u64 << SCAN_GRANULE_BITS) - 1;
    let workers = c.shared.workers as u64;
    let mut worker = cursor & granule_mask;
    let mut position = cursor & !granule_mask;
    if worker >= workers {
        // No cursor Skerry hands out names a worker past the last; Redis accepts any
        // cursor, so treat it as the end of the iteration rather than an error.
        c.reply.array(2);
        c.reply.bulk(b"0");
        c.reply.array(0);
        return;
    }
    let (db, now) = (c.db, c.now_ms);
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let next_cursor: u64 = loop {
        let pattern = pattern.clone();
        let type_filter = type_filter.clone();
        let want = count.saturating_sub(keys.len()).max(1);
        let (found, next) = c
            .on(worker as usize, move |s| {
                let mut found = Vec::new();
                let next = s.keyspace.scan(db, position, want, now, |e| {
                    if pattern
                        .as_ref()
                        .is_some_and(|p| !glob_match(p, e.key(), false))
                    {
                        return;
                    }
                    if type_filter
                        .as_ref()
                        .is_some_and(|t| t != crate::keyspace::type_name(e.value_type()).as_bytes())
                    {
                        return;
                    }
                    found.push(e.key().to_vec());
                });
                (found, next)
            })
            .await;
        keys.extend(found);
        match next {
            Some(p) => {
                position = p;
                if keys.len() >= count {
                    break position | worker;
                }
            }
            None => {
                worker += 1;
                position = 0;
                if worker == workers {
                    break 0;
                }
                if keys.len() >= count {
                    break worker;
                }
            }
        }
    };
    c.reply.array(2);
    let mut buf = itoa::Buffer::new();
    c.reply.bulk(buf.format(next_cursor).as_bytes());
    c.reply.array(keys.len());
    for k in &keys {
        c.reply.bulk(k);
    }
}

/// DBSIZE
pub async fn dbsize(c: &mut Conn) {
    let db = c.db;
    let n: usize = c
        .on_all(move |s| s.keyspace.len(db))
        .await
        .into_iter()
        .sum();
    c.reply.int(n as i64);
}

fn flush_args_ok(c: &mut Conn, a: &[&[u8]]) -> bool {
    match a.len() {
        1 => true,
        2 if is(a[1], "sync") || is(a[1], "async") => true,
        _ => {
            c.reply.error(SYNTAX);
            false
        }
    }
}

/// FLUSHDB [ASYNC|SYNC]
pub async fn flushdb(c: &mut Conn, a: &[&[u8]]) {
    if !flush_args_ok(c, a) {
        return;
    }
    let db = c.db;
    c.on_all(move |s| {
        let n = s.keyspace.flush(db);
        // Blocked XREADGROUPs on the flushed keys answer their error now.
        crate::blocking::serve_ready(s);
        n
    })
    .await;
    c.reply.ok();
}

/// FLUSHALL [ASYNC|SYNC]
pub async fn flushall(c: &mut Conn, a: &[&[u8]]) {
    if !flush_args_ok(c, a) {
        return;
    }
    c.on_all(|s| {
        for db in 0..s.keyspace.databases() {
            s.keyspace.flush(db);
        }
        crate::blocking::serve_ready(s);
    })
    .await;
    c.reply.ok();
}

/// SWAPDB index1 index2: every worker swaps the two databases' tables while all workers
/// are held (inside EXEC or a script, by the transaction that already holds them all),
/// after the new database map is durable (see `crate::dbmap`).
pub async fn swapdb(c: &mut Conn, a: &[&[u8]]) {
    let index = |arg: &[u8]| parse_i64(arg).and_then(|v| i32::try_from(v).ok());
    let Some(id1) = index(a[1]) else {
        c.reply.error("ERR invalid first DB index");
        return;
    };
    let Some(id2) = index(a[2]) else {
        c.reply.error("ERR invalid second DB index");
        return;
    };
    let databases = c.shared.config.get_i64("databases");
    if id1 < 0 || i64::from(id1) >= databases || id2 < 0 || i64::from(id2) >= databases {
        c.reply.error("ERR DB index is out of range");
        return;
    }
    let (id1, id2) = (id1 as usize, id2 as usize);
    if id1 == id2 {
        c.reply.ok();
        return;
    }
    // Hold every worker unless the running transaction already does.
    let own = if c.ambient_txn == 0 {
        let all: Vec<usize> = (0..c.shared.workers).collect();
        let txn = crate::worker::Txn::begin(&c.shared, c.worker, all).await;
        c.ambient_txn = txn.id();
        Some(txn)
    } else {
        None
    };
    // Every record so far durable first: after a crash the map never describes a swap
    // whose earlier writes were lost.
    let synced = c
        .on_all(|s| {
            let (tx, rx) = flume::bounded(1);
            crate::worker::commit_job(tx)(s);
            rx
        })
        .await;
    let mut failed = None;
    for rx in synced {
        if let Ok(Err(e)) = rx.recv_async().await {
            failed = Some(e);
        }
    }
    let result = match failed {
        Some(e) => Err(format!("data file sync failed: {e}")),
        None => crate::dbmap::swap(id1, id2),
    };
    if result.is_ok() {
        c.on_all(move |s| s.keyspace.swap_dbs(id1, id2)).await;
    }
    if let Some(txn) = own {
        c.ambient_txn = 0;
        drop(txn);
    }
    match result {
        Ok(()) => c.reply.ok(),
        Err(e) => {
            tracing::error!("SWAPDB {id1} {id2}: {e}");
            c.reply.error(&format!("ERR SWAPDB failed: {e}"));
        }
    }
}

/// RANDOMKEY
pub async fn randomkey(c: &mut Conn) {
    use rand::Rng;
    let db = c.db;
    let now = c.now_ms;
    let sizes = c.on_all(move |s| s.keyspace.len(db)).await;
    let total: usize = sizes.iter().sum();
    if total == 0 {
        c.reply.null();
        return;
    }
    // Pick a worker weighted by its key count, then a random hash position inside it.
    for _ in 0..16 {
        let mut pick = rand::rng().random_range(0..total);
        let mut worker = 0;
        while pick >= sizes[worker] {
            pick -= sizes[worker];
            worker += 1;
        }
        let position: u64 = rand::rng().random();
        let key = c
            .on(worker, move |s| {
                let mut found: Option<Vec<u8>> = None;
                for start in [position, 0] {
                    s.keyspace.scan(db, start, 1, now, |e| {
                        if found.is_none() {
                            found = Some(e.key().to_vec());
                        }
                    });
                    if found.is_some() {
                        break;
                    }
                }
                found
            })
            .await;
        if let Some(k) = key {
            c.reply.bulk(&k);
            return;
        }
    }
    c.reply.null();
}

/// OBJECT ENCODING|REFCOUNT|IDLETIME|FREQ key, OBJECT HELP
pub fn object(x: &mut Exec, a: &[&[u8]]) {
    if is(a[1], "help") {
        x.reply.simple_lines(&[
            "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
            "HELP",
            "    Print this help.",
        ]);
        return;
    }
    let key = a[2];
    if is(a[1], "encoding") {
        let is_list =
            x.ks.meta(x.db, key, x.now_ms)
                .is_some_and(|m| m.value_type == crate::coll::VALUE_TYPE_LIST);
        if is_list {
            let fill = x.config.get_i64("list-max-listpack-size");
            if let Ok(Some(c)) = x.ks.coll(x.db, key, crate::coll::VALUE_TYPE_LIST, x.now_ms) {
                x.reply.bulk(c.as_list().encoding(fill).as_bytes());
            }
            return;
        }
        match x.ks.encoding(x.db, key, x.now_ms) {
            Some(e) => x.reply.bulk(e.as_bytes()),
            None => x.reply.null(),
        }
        return;
    }
    if is(a[1], "idletime") || is(a[1], "freq") {
        // The access clock (keyspace/clock.rs); OBJECT does not touch the key.
        let Some(clock) = x.ks.access_clock(x.db, key, x.now_ms) else {
            x.reply.null();
            return;
        };
        let mode = x.ks.clock_mode();
        if is(a[1], "idletime") {
            if mode.lfu {
                x.reply.error("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
            } else {
                let idle = crate::keyspace::clock::idle_ms(clock, x.now_ms) / 1000;
                x.reply.int(idle as i64);
            }
        } else if mode.lfu {
            x.reply.int(i64::from(mode.decayed(clock, x.now_ms)));
        } else {
            x.reply.error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
        }
        return;
    }
    if !x.ks.exists(x.db, key, x.now_ms) {
        x.reply.null();
        return;
    }
    if is(a[1], "refcount") {
        // Redis shares the integers 0..9999 between keys (OBJ_SHARED_REFCOUNT, whatever
        // their number of users); every other value is referenced by its key alone.
        let shared = x.ks.meta(x.db, key, x.now_ms).is_some_and(|m| {
            m.value_type == skerry_store::format::VALUE_TYPE_STRING
                && x.ks
                    .with_value(x.db, key, x.now_ms, |v| {
                        crate::keyspace::string_encoding(v) == "int"
                            && parse_i64(v).is_some_and(|n| (0..10_000).contains(&n))
                    })
                    .ok()
                    .flatten()
                    .unwrap_or(false)
        });
        x.reply.int(if shared { i64::from(i32::MAX) } else { 1 });
    }
}

/// MEMORY USAGE key [SAMPLES count], MEMORY HELP. The figure is an estimate: the key, the
/// value as stored, and a fixed per-key overhead (Skerry's values live on the data device,
/// so Redis's in-RAM accounting has no exact counterpart).
pub fn memory(x: &mut Exec, a: &[&[u8]]) {
    if is(a[1], "help") {
        x.reply.simple_lines(&[
            "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
            "HELP",
            "    Print this help.",
        ]);
        return;
    }
    let mut j = 3;
    while j < a.len() {
        if is(a[j], "samples") && j + 1 < a.len() {
            match parse_i64(a[j + 1]) {
                None => return x.reply.error(NOT_INT),
                Some(n) if n < 0 => return x.reply.error(SYNTAX),
                Some(_) => j += 2,
            }
        } else {
            return x.reply.error(SYNTAX);
        }
    }
    match x.ks.peek(x.db, a[2], x.now_ms) {
        None => x.reply.null(),
        Some(g) => {
            let value = match &g.value {
                crate::keyspace::Value::Str(s) => s.len(),
                crate::keyspace::Value::Coll { encoded, .. } => encoded.len(),
            };
            x.reply.int((a[2].len() + value + 56) as i64);
        }
    }
}
