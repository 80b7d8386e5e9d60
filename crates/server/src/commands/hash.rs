//! HASH commands (Redis's `t_hash.c`). Each runs on the worker that owns its keys, on the
//! decoded collection the keyspace hands out (see `crate::coll`).
//!
//! Every handler checks its arguments in the order Redis 8.0 does (some before the key
//! lookup, some after), so that the same bad command gets the same error.
//!
//! Hash field expiry (Redis 7.4+: HEXPIRE and friends, HGETEX, HSETEX, HGETDEL): an
//! expired field stays in the hash until something deletes it, as in Redis. The commands
//! that read given fields (HGET, HMGET, HEXISTS, HSTRLEN, HSETNX, HINCRBY*, HGETDEL,
//! HGETEX, HSETEX FNX/FXX) delete those of them that expired first (Redis's lazy expiry,
//! and the key goes with its last field); HGETALL, HKEYS, HVALS and HSCAN skip expired
//! fields; HRANDFIELD deletes every expired field first; HLEN and HDEL count them. The
//! worker's active expiry deletes the rest (`keyspace/hfe.rs`).

use super::{coll_error, is, parse_i64, Exec};
use crate::coll::hash::Hash;
use crate::coll::{scan_by_hash, Coll, VALUE_TYPE_HASH};
use crate::reply::errors::{NOT_FLOAT, NOT_INT, OVERFLOW, SYNTAX};
use rand::Rng;

/// The hash under `key` taken out to change (empty when the key does not exist); None after
/// replying WRONGTYPE (or when the keyspace kept a read error for the dispatcher).
fn take(x: &mut Exec, key: &[u8]) -> Option<Hash> {
    match x.ks.take_coll(x.db, key, VALUE_TYPE_HASH, x.now_ms) {
        Ok(Some(c)) => Some(c.into_hash()),
        Ok(None) => Some(Hash::default()),
        Err(e) => {
            coll_error(x.reply, e);
            None
        }
    }
}

/// Stores `h` as the new version of `key` (deleting the key when it is empty); false when
/// the write was refused (the dispatcher replies with the kept error).
fn put(x: &mut Exec, key: &[u8], h: Hash) -> bool {
    let t = x.thresholds();
    x.ks.put_coll(x.db, key, Coll::Hash(h), &t, x.now_ms)
}

/// Runs `f` on the hash under `key` (None when the key does not exist) without counting a
/// keyspace hit or miss: a write checks first whether it changes anything, and a no-op
/// keeps the decoded hash cached. None after replying WRONGTYPE.
fn peek<R>(x: &mut Exec, key: &[u8], f: impl FnOnce(Option<&Hash>) -> R) -> Option<R> {
    match x.ks.peek_coll(x.db, key, VALUE_TYPE_HASH, x.now_ms) {
        Ok(c) => Some(f(c.map(|c| c.as_hash()))),
        Err(e) => {
            coll_error(x.reply, e);
            None
        }
    }
}

/// Deletes those of `fields` that expired (Redis's lazy expiry of the fields a command
/// reads); the key goes with the hash's last field. None after replying WRONGTYPE, or when
/// the write was refused (the dispatcher replies with the kept error).
fn expire_fields(x: &mut Exec, key: &[u8], fields: &[&[u8]]) -> Option<()> {
    let now = x.now_ms;
    let any = peek(x, key, |h| {
        h.is_some_and(|h| h.has_expired(now) && fields.iter().any(|f| h.is_expired(f, now)))
    })?;
    if !any {
        return Some(());
    }
    let mut h = take(x, key)?;
    for f in fields {
        if h.is_expired(f, now) {
            h.remove(f);
            x.ks.stats.expired_subkeys += 1;
        }
    }
    put(x, key, h).then_some(())
}

/// Deletes every expired field of the hash under `key` (HRANDFIELD does, as Redis's
/// `hashTypeExpireIfNeeded`). None as for [`expire_fields`].
fn expire_all(x: &mut Exec, key: &[u8]) -> Option<()> {
    let now = x.now_ms;
    let any = peek(x, key, |h| h.is_some_and(|h| h.has_expired(now)))?;
    if !any {
        return Some(());
    }
    let mut h = take(x, key)?;
    for f in h.expired_fields(now, usize::MAX) {
        h.remove(&f);
        x.ks.stats.expired_subkeys += 1;
    }
    put(x, key, h).then_some(())
}

/// HSET key field value [field value ...] / HMSET (which replies +OK)
pub fn hset(x: &mut Exec, a: &[&[u8]]) {
    let hmset = is(a[0], "hmset");
    if !a.len().is_multiple_of(2) {
        let name = if hmset { "hmset" } else { "hset" };
        x.reply.error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
        return;
    }
    let Some(mut h) = take(x, a[1]) else { return };
    let mut added = 0;
    for pair in a[2..].chunks(2) {
        added += h.insert(pair[0], pair[1]) as i64;
    }
    if put(x, a[1], h) {
        if hmset {
            x.reply.ok();
        } else {
            x.reply.int(added);
        }
    }
}

/// HSETNX key field value
pub fn hsetnx(x: &mut Exec, a: &[&[u8]]) {
    let now = x.now_ms;
    let Some(present) = peek(x, a[1], |h| {
        h.is_some_and(|h| h.contains(a[2]) && !h.is_expired(a[2], now))
    }) else {
        return;
    };
    if present {
        return x.reply.int(0);
    }
    let Some(mut h) = take(x, a[1]) else { return };
    if h.is_expired(a[2], now) {
        h.remove(a[2]);
        x.ks.stats.expired_subkeys += 1;
        if h.is_empty() {
            // Redis deletes the hash with its last field and creates a new one.
            h = Hash::default();
        }
    }
    h.insert(a[2], a[3]);
    if put(x, a[1], h) {
        x.reply.int(1);
    }
}

/// Runs `f` on the hash under `key` (None when the key does not exist); replies WRONGTYPE
/// itself.
fn read(x: &mut Exec, key: &[u8], f: impl FnOnce(&mut crate::reply::Reply, Option<&Hash>)) {
    match x.ks.coll(x.db, key, VALUE_TYPE_HASH, x.now_ms) {
        Ok(c) => f(x.reply, c.map(|c| c.as_hash())),
        Err(e) => coll_error(x.reply, e),
    }
}

/// Like [`read`] for a command that reads `fields`: when one of them expired, it is
/// deleted first ([`expire_fields`]) and `f` runs on what is left. The common case (no
/// expired field among them) looks the hash up once.
fn read_fields(
    x: &mut Exec,
    key: &[u8],
    fields: &[&[u8]],
    f: impl Fn(&mut crate::reply::Reply, Option<&Hash>),
) {
    let now = x.now_ms;
    let mut stale = false;
    read(x, key, |r, h| {
        if h.is_some_and(|h| h.has_expired(now) && fields.iter().any(|fl| h.is_expired(fl, now))) {
            stale = true;
            return;
        }
        f(r, h)
    });
    if stale && expire_fields(x, key, fields).is_some() {
        read(x, key, f);
    }
}

/// HGET key field
pub fn hget(x: &mut Exec, a: &[&[u8]]) {
    read_fields(x, a[1], &a[2..3], |r, h| {
        match h.and_then(|h| h.get(a[2])) {
            Some(v) => r.bulk(v),
            None => r.null(),
        }
    });
}

/// HMGET key field [field ...]
pub fn hmget(x: &mut Exec, a: &[&[u8]]) {
    read_fields(x, a[1], &a[2..], |r, h| {
        r.array(a.len() - 2);
        for f in &a[2..] {
            match h.and_then(|h| h.get(f)) {
                Some(v) => r.bulk(v),
                None => r.null(),
            }
        }
    });
}

/// HDEL key field [field ...]
pub fn hdel(x: &mut Exec, a: &[&[u8]]) {
    let Some(any) = peek(x, a[1], |h| {
        h.is_some_and(|h| a[2..].iter().any(|f| h.contains(f)))
    }) else {
        return;
    };
    // Nothing to remove (a missing key is an empty hash): nothing to write.
    if !any {
        return x.reply.int(0);
    }
    let Some(mut h) = take(x, a[1]) else { return };
    let mut deleted = 0;
    for f in &a[2..] {
        if h.remove(f) {
            deleted += 1;
            if h.is_empty() {
                break;
            }
        }
    }
    if put(x, a[1], h) {
        x.reply.int(deleted);
    }
}

/// HLEN key
pub fn hlen(x: &mut Exec, a: &[&[u8]]) {
    read(x, a[1], |r, h| r.int(h.map_or(0, |h| h.len() as i64)));
}

/// HSTRLEN key field
pub fn hstrlen(x: &mut Exec, a: &[&[u8]]) {
    read_fields(x, a[1], &a[2..3], |r, h| {
        r.int(h.and_then(|h| h.get(a[2])).map_or(0, |v| v.len() as i64))
    });
}

/// HEXISTS key field
pub fn hexists(x: &mut Exec, a: &[&[u8]]) {
    read_fields(x, a[1], &a[2..3], |r, h| {
        r.int(h.is_some_and(|h| h.contains(a[2])) as i64)
    });
}

/// HGETALL key (a map in RESP3)
pub fn hgetall(x: &mut Exec, a: &[&[u8]]) {
    let now = x.now_ms;
    read(x, a[1], |r, h| match h {
        None => r.map(0),
        Some(h) => {
            r.map(h.live_len(now));
            for (f, v) in h.iter_live(now) {
                r.bulk(f);
                r.bulk(v);
            }
        }
    });
}

/// HKEYS key
pub fn hkeys(x: &mut Exec, a: &[&[u8]]) {
    let now = x.now_ms;
    read(x, a[1], |r, h| match h {
        None => r.array(0),
        Some(h) => {
            r.array(h.live_len(now));
            for (f, _) in h.iter_live(now) {
                r.bulk(f);
            }
        }
    });
}

/// HVALS key
pub fn hvals(x: &mut Exec, a: &[&[u8]]) {
    let now = x.now_ms;
    read(x, a[1], |r, h| match h {
        None => r.array(0),
        Some(h) => {
            r.array(h.live_len(now));
            for (_, v) in h.iter_live(now) {
                r.bulk(v);
            }
        }
    });
}

/// The hash under `key` taken out for HINCRBY / HINCRBYFLOAT of `field`: an expired
/// `field` is deleted first, and a hash it was the last field of is replaced by a new one
/// (Redis deletes the key and creates a hash).
fn take_for_incr(x: &mut Exec, key: &[u8], field: &[u8]) -> Option<Hash> {
    let mut h = take(x, key)?;
    if h.is_expired(field, x.now_ms) {
        h.remove(field);
        x.ks.stats.expired_subkeys += 1;
        if h.is_empty() {
            h = Hash::default();
        }
    }
    Some(h)
}

/// HINCRBY key field increment
pub fn hincrby(x: &mut Exec, a: &[&[u8]]) {
    let Some(incr) = parse_i64(a[3]) else {
        x.reply.error(NOT_INT);
        return;
    };
    let now = x.now_ms;
    let Some(new) = peek(x, a[1], |h| {
        let old = match h.and_then(|h| h.get_live(a[2], now)) {
            None => 0,
            Some(v) => parse_i64(v).ok_or("ERR hash value is not an integer")?,
        };
        old.checked_add(incr).ok_or(OVERFLOW)
    }) else {
        return;
    };
    let new = match new {
        Ok(n) => n,
        Err(e) => return x.reply.error(e),
    };
    let Some(mut h) = take_for_incr(x, a[1], a[2]) else {
        return;
    };
    let mut buf = itoa::Buffer::new();
    h.insert_keep_ttl(a[2], buf.format(new).as_bytes());
    if put(x, a[1], h) {
        x.reply.int(new);
    }
}

/// HINCRBYFLOAT key field increment (long double arithmetic, as Redis)
pub fn hincrbyfloat(x: &mut Exec, a: &[&[u8]]) {
    use crate::longdouble::{add, LdError};
    // The increment alone: not a float, or NaN/Infinity (0 + inf is not finite).
    match add(None, a[3]) {
        Ok(_) => {}
        Err(LdError::NotFinite) => return x.reply.error("ERR value is NaN or Infinity"),
        Err(_) => return x.reply.error(NOT_FLOAT),
    }
    let now = x.now_ms;
    let Some(text) = peek(x, a[1], |h| {
        add(h.and_then(|h| h.get_live(a[2], now)), a[3]).map_err(|e| match e {
            LdError::BaseNotFloat => "ERR hash value is not a float",
            LdError::NotFinite => "ERR increment would produce NaN or Infinity",
            LdError::IncrNotFloat => NOT_FLOAT,
        })
    }) else {
        return;
    };
    let text = match text {
        Ok(t) => t,
        Err(e) => return x.reply.error(e),
    };
    let Some(mut h) = take_for_incr(x, a[1], a[2]) else {
        return;
    };
    h.insert_keep_ttl(a[2], &text);
    if put(x, a[1], h) {
        x.reply.bulk(&text);
    }
}

/// Most elements one HRANDFIELD with a negative count replies with (Redis has no limit but
/// the memory of the reply; this keeps a runaway count from exhausting the server's).
const HRANDFIELD_MAX_REPEATS: u64 = 1 << 24;

/// HRANDFIELD key [count [WITHVALUES]]
pub fn hrandfield(x: &mut Exec, a: &[&[u8]]) {
    if a.len() == 2 {
        if expire_all(x, a[1]).is_none() {
            return;
        }
        return read(x, a[1], |r, h| match h {
            None => r.null(),
            Some(h) => {
                let i = rand::rng().random_range(0..h.len());
                r.bulk(h.get_index(i).expect("index in range").0);
            }
        });
    }
    let Some(l) = parse_i64(a[2]) else {
        x.reply.error(NOT_INT);
        return;
    };
    if l == i64::MIN {
        x.reply.error(&format!(
            "ERR value is out of range, value must between {} and {}",
            -i64::MAX,
            i64::MAX
        ));
        return;
    }
    if a.len() > 4 || (a.len() == 4 && !is(a[3], "withvalues")) {
        x.reply.error(SYNTAX);
        return;
    }
    let withvalues = a.len() == 4;
    if withvalues && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
        x.reply.error("ERR value is out of range");
        return;
    }
    let (count, unique) = (l.unsigned_abs(), l >= 0);
    if !unique && count > HRANDFIELD_MAX_REPEATS {
        x.reply.error("ERR value is out of range");
        return;
    }
    let resp3 = x.reply.proto == skerry_resp::Proto::Resp3;
    if expire_all(x, a[1]).is_none() {
        return;
    }
    read(x, a[1], |r, h| {
        let Some(h) = h.filter(|_| count > 0) else {
            // A missing key or a count of 0: an empty array (`*0` in RESP3 too).
            r.array(0);
            return;
        };
        let size = h.len() as u64;
        let n = if unique { count.min(size) } else { count };
        r.array(if withvalues && !resp3 { n * 2 } else { n } as usize);
        let one = |r: &mut crate::reply::Reply, (f, v): (&[u8], &[u8])| {
            if withvalues && resp3 {
                r.array(2);
            }
            r.bulk(f);
            if withvalues {
                r.bulk(v);
            }
        };
        let mut rng = rand::rng();
        if !unique {
            for _ in 0..n {
                let i = rng.random_range(0..h.len());
                one(r, h.get_index(i).expect("index in range"));
            }
        } else if n == size {
            for fv in h.iter() {
                one(r, fv);
            }
        } else {
            for i in rand::seq::index::sample(&mut rng, h.len(), n as usize) {
                one(r, h.get_index(i).expect("index in range"));
            }
        }
    });
}

/// HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES]
pub fn hscan(x: &mut Exec, a: &[&[u8]]) {
    let now = x.now_ms;
    let Some(cursor) = super::parse_scan_cursor(a[2]) else {
        x.reply.error("ERR invalid cursor");
        return;
    };
    read(x, a[1], |r, h| {
        let Some(h) = h else {
            r.array(2);
            r.bulk(b"0");
            r.array(0);
            return;
        };
        // The options are parsed only for an existing hash, as Redis does.
        let mut count: i64 = 10;
        let mut pattern: Option<&[u8]> = None;
        let mut novalues = false;
        let mut i = 3;
        while i < a.len() {
            if is(a[i], "novalues") {
                novalues = true;
                i += 1;
                continue;
            }
            let more = a.len() - i >= 2;
            if more && is(a[i], "count") {
                let Some(c) = parse_i64(a[i + 1]) else {
                    r.error(NOT_INT);
                    return;
                };
                if c < 1 {
                    r.error(SYNTAX);
                    return;
                }
                count = c;
            } else if more && is(a[i], "match") {
                pattern = (a[i + 1] != b"*").then_some(a[i + 1]);
            } else {
                r.error(SYNTAX);
                return;
            }
            i += 2;
        }
        // A listpack is returned whole in one step (cursor 0), as Redis does.
        let (next, items) = if h.big {
            scan_by_hash(h.iter(), |it| it.0, cursor, count as usize)
        } else {
            (0, h.iter().collect())
        };
        let items: Vec<_> = if h.has_expired(now) {
            items
                .into_iter()
                .filter(|(f, _)| !h.is_expired(f, now))
                .collect()
        } else {
            items
        };
        let items: Vec<_> = match pattern {
            None => items,
            Some(p) => items
                .into_iter()
                .filter(|(f, _)| crate::glob::glob_match(p, f, false))
                .collect(),
        };
        r.array(2);
        r.bulk(itoa::Buffer::new().format(next).as_bytes());
        r.array(items.len() * if novalues { 1 } else { 2 });
        for (f, v) in items {
            r.bulk(f);
            if !novalues {
                r.bulk(v);
            }
        }
    });
}

// ----- hash field expiry (Redis 7.4+) -----

/// Redis's largest field expiry, Unix ms (`HFE_MAX_ABS_TIME_MSEC`: 2^48 - 1, shifted by 2).
const HFE_MAX_ABS_TIME_MSEC: i64 = 0xFFFF_FFFF_FFFF >> 2;

/// Reply of a field that does not exist (HEXPIRE, HTTL, HPERSIST).
const NO_FIELD: i64 = -2;

/// Parses an expiry argument as Redis's `parseExpireTime`: an integer of `seconds` or
/// milliseconds, not negative, added to `base_ms` (0 for absolute times); the error reply
/// otherwise (`cmd` names the command in it).
fn parse_expire_time(arg: &[u8], seconds: bool, base_ms: i64, cmd: &str) -> Result<i64, String> {
    let Some(mut v) = parse_i64(arg) else {
        return Err(NOT_INT.to_string());
    };
    if v < 0 {
        return Err("ERR invalid expire time, must be >= 0".to_string());
    }
    let too_big = || format!("ERR invalid expire time in '{cmd}' command");
    if seconds {
        if v > HFE_MAX_ABS_TIME_MSEC / 1000 {
            return Err(too_big());
        }
        v *= 1000;
    }
    if v > HFE_MAX_ABS_TIME_MSEC - base_ms {
        return Err(too_big());
    }
    Ok(v + base_ms)
}

/// Parses `numfields` as Redis's `getRangeLongFromObjectOrReply(1, LONG_MAX)` with the
/// message `msg`.
fn parse_numfields(arg: &[u8], msg: &str) -> Result<usize, String> {
    match parse_i64(arg) {
        Some(n) if n >= 1 => Ok(n as usize),
        _ => Err(format!("ERR {msg}")),
    }
}

/// Checks `FIELDS numfields field...` starting at `a[at]` (the FIELDS keyword); the
/// fields, or the error reply.
fn fields_arg<'a>(a: &[&'a [u8]], at: usize, msg: &str) -> Result<Vec<&'a [u8]>, String> {
    if a.get(at).is_none_or(|w| !is(w, "fields")) {
        return Err(
            "ERR Mandatory argument FIELDS is missing or not at the right position".to_string(),
        );
    }
    let n = parse_numfields(a.get(at + 1).copied().unwrap_or(b""), msg)?;
    if n != a.len().saturating_sub(at + 2) {
        return Err("ERR The `numfields` parameter must match the number of arguments".into());
    }
    Ok(a[at + 2..].to_vec())
}

/// True when the key holds a hash or nothing; replies WRONGTYPE (false) otherwise. The
/// hash is looked at without counting a hit or a miss.
fn type_ok(x: &mut Exec, key: &[u8]) -> bool {
    peek(x, key, |_| ()).is_some()
}

/// True when `key` exists (a hash; the caller checked the type).
fn exists(x: &mut Exec, key: &[u8]) -> bool {
    peek(x, key, |h| h.is_some()).unwrap_or(false)
}

/// What HEXPIRE's condition allows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cond {
    None,
    Nx,
    Xx,
    Gt,
    Lt,
}

/// Sets the expiry of one field as Redis's `hashTypeSetEx` (field expiry on): -2 no
/// such field, 0 condition not met, 2 deleted (the time is not in the future), 1 set.
fn set_field_expiry(h: &mut Hash, field: &[u8], t: i64, cond: Cond, now: i64) -> i64 {
    if !h.contains(field) {
        return NO_FIELD;
    }
    match h.expiry(field) {
        None => {
            if matches!(cond, Cond::Xx | Cond::Gt) {
                return 0;
            }
        }
        Some(prev) => {
            if (cond == Cond::Gt && prev >= t)
                || (cond == Cond::Lt && prev <= t)
                || cond == Cond::Nx
            {
                return 0;
            }
        }
    }
    if t <= now {
        h.remove(field);
        return 2;
    }
    h.set_expiry(field, Some(t));
    1
}

/// HEXPIRE / HPEXPIRE / HEXPIREAT / HPEXPIREAT key time [NX|XX|GT|LT] FIELDS numfields
/// field [field ...]
pub fn hexpire(x: &mut Exec, a: &[&[u8]]) {
    let name = String::from_utf8_lossy(a[0]).to_ascii_lowercase();
    let seconds = name == "hexpire" || name == "hexpireat";
    let base = if name.ends_with("at") { 0 } else { x.now_ms };
    if !type_ok(x, a[1]) {
        return;
    }
    let t = match parse_expire_time(a[2], seconds, base, &name) {
        Ok(t) => t,
        Err(e) => return x.reply.error(&e),
    };
    let cond = match a[3] {
        c if is(c, "nx") => Cond::Nx,
        c if is(c, "xx") => Cond::Xx,
        c if is(c, "gt") => Cond::Gt,
        c if is(c, "lt") => Cond::Lt,
        _ => Cond::None,
    };
    let at = if cond == Cond::None { 3 } else { 4 };
    let fields = match fields_arg(a, at, "Parameter `numFields` should be greater than 0") {
        Ok(f) => f,
        Err(e) => return x.reply.error(&e),
    };
    if !exists(x, a[1]) {
        x.reply.array(fields.len());
        for _ in &fields {
            x.reply.int(NO_FIELD);
        }
        return;
    }
    let Some(mut h) = take(x, a[1]) else { return };
    let was_enabled = h.ttl_enabled();
    h.enable_ttl();
    let now = x.now_ms;
    let codes: Vec<i64> = fields
        .iter()
        .map(|f| set_field_expiry(&mut h, f, t, cond, now))
        .collect();
    x.ks.stats.expired_subkeys += codes.iter().filter(|&&c| c == 2).count() as u64;
    if !was_enabled || codes.iter().any(|&c| c == 1 || c == 2) {
        if !put(x, a[1], h) {
            return;
        }
    } else {
        x.ks.keep_coll(x.db, a[1], Coll::Hash(h));
    }
    x.reply.array(codes.len());
    for c in codes {
        x.reply.int(c);
    }
}

/// HTTL / HPTTL / HEXPIRETIME / HPEXPIRETIME key FIELDS numfields field [field ...]
pub fn httl(x: &mut Exec, a: &[&[u8]]) {
    let name = String::from_utf8_lossy(a[0]).to_ascii_lowercase();
    let seconds = name == "httl" || name == "hexpiretime";
    let base = if name.ends_with("time") { 0 } else { x.now_ms };
    if !type_ok(x, a[1]) {
        return;
    }
    let fields = match fields_arg(a, 2, "Number of fields must be a positive integer") {
        Ok(f) => f,
        Err(e) => return x.reply.error(&e),
    };
    let now = x.now_ms;
    read(x, a[1], |r, h| {
        r.array(fields.len());
        for f in &fields {
            let code = match h {
                Some(h) if h.contains(f) => match h.expiry(f) {
                    None => -1,
                    // A listpackex says expired at its time, a hashtable after it.
                    Some(t) if t < now || (t == now && !h.big) => NO_FIELD,
                    Some(t) if seconds => (t + 999 - base) / 1000,
                    Some(t) => t - base,
                },
                _ => NO_FIELD,
            };
            r.int(code);
        }
    });
}

/// HPERSIST key FIELDS numfields field [field ...]
pub fn hpersist(x: &mut Exec, a: &[&[u8]]) {
    if !type_ok(x, a[1]) {
        return;
    }
    let fields = match fields_arg(a, 2, "Number of fields must be a positive integer") {
        Ok(f) => f,
        Err(e) => return x.reply.error(&e),
    };
    let now = x.now_ms;
    let Some(todo) = peek(x, a[1], |h| {
        h.is_some_and(|h| fields.iter().any(|f| h.expiry(f).is_some_and(|t| t >= now)))
    }) else {
        return;
    };
    let codes: Vec<i64> = if todo {
        let Some(mut h) = take(x, a[1]) else { return };
        let codes = fields
            .iter()
            .map(|f| match h.expiry(f) {
                _ if !h.contains(f) => NO_FIELD,
                None => -1,
                Some(t) if t < now => NO_FIELD,
                Some(_) => {
                    h.set_expiry(f, None);
                    1
                }
            })
            .collect();
        if !put(x, a[1], h) {
            return;
        }
        codes
    } else {
        let Some(codes) = peek(x, a[1], |h| {
            fields
                .iter()
                .map(|f| match h {
                    Some(h) if h.contains(f) => match h.expiry(f) {
                        None => -1,
                        Some(_) => NO_FIELD,
                    },
                    _ => NO_FIELD,
                })
                .collect::<Vec<i64>>()
        }) else {
            return;
        };
        codes
    };
    x.reply.array(codes.len());
    for c in codes {
        x.reply.int(c);
    }
}

/// HGETDEL key FIELDS numfields field [field ...]
pub fn hgetdel(x: &mut Exec, a: &[&[u8]]) {
    if !type_ok(x, a[1]) {
        return;
    }
    let fields = match fields_arg(a, 2, "Number of fields must be a positive integer") {
        Ok(f) => f,
        Err(e) => return x.reply.error(&e),
    };
    let now = x.now_ms;
    let Some(any) = peek(x, a[1], |h| {
        h.is_some_and(|h| fields.iter().any(|f| h.contains(f)))
    }) else {
        return;
    };
    if !any {
        x.reply.array(fields.len());
        for _ in &fields {
            x.reply.null();
        }
        return;
    }
    let Some(mut h) = take(x, a[1]) else { return };
    let mut values: Vec<Option<Vec<u8>>> = Vec::with_capacity(fields.len());
    for f in &fields {
        if h.is_expired(f, now) {
            h.remove(f);
            x.ks.stats.expired_subkeys += 1;
            values.push(None);
            continue;
        }
        let v = h.get(f).map(|v| v.to_vec());
        if v.is_some() {
            h.remove(f);
        }
        values.push(v);
    }
    if !put(x, a[1], h) {
        return;
    }
    x.reply.array(values.len());
    for v in values {
        match v {
            Some(v) => x.reply.bulk(&v),
            None => x.reply.null(),
        }
    }
}

/// What HGETEX / HSETEX do to the expiry of the fields.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ExOpt {
    /// Nothing said.
    None,
    /// EX, PX, EXAT or PXAT: this Unix time in ms.
    At(i64),
    /// PERSIST (HGETEX).
    Persist,
    /// KEEPTTL (HSETEX).
    Keep,
}

/// HGETEX key [EX seconds | PX ms | EXAT unix-seconds | PXAT unix-ms | PERSIST] FIELDS
/// numfields field [field ...]
pub fn hgetex(x: &mut Exec, a: &[&[u8]]) {
    if !type_ok(x, a[1]) {
        return;
    }
    let opt = a[2];
    let (ex, fields_at) = if is(opt, "ex") || is(opt, "px") || is(opt, "exat") || is(opt, "pxat") {
        let seconds = is(opt, "ex") || is(opt, "exat");
        let base = if is(opt, "ex") || is(opt, "px") {
            x.now_ms
        } else {
            0
        };
        match parse_expire_time(a[3], seconds, base, "hgetex") {
            Ok(t) => (ExOpt::At(t), 4),
            Err(e) => return x.reply.error(&e),
        }
    } else if is(opt, "persist") {
        (ExOpt::Persist, 3)
    } else {
        (ExOpt::None, 2)
    };
    let fields = match fields_arg(a, fields_at, "Number of fields must be a positive integer") {
        Ok(f) => f,
        Err(e) => return x.reply.error(&e),
    };
    if !exists(x, a[1]) {
        x.reply.array(fields.len());
        for _ in &fields {
            x.reply.null();
        }
        return;
    }
    let now = x.now_ms;
    let Some(mut h) = take(x, a[1]) else { return };
    let mut changed = false;
    if ex != ExOpt::None && !h.ttl_enabled() {
        h.enable_ttl();
        changed = true;
    }
    let mut values: Vec<Option<Vec<u8>>> = Vec::with_capacity(fields.len());
    for f in &fields {
        if h.is_expired(f, now) {
            h.remove(f);
            x.ks.stats.expired_subkeys += 1;
            changed = true;
            values.push(None);
            continue;
        }
        let v = h.get(f).map(|v| v.to_vec());
        if v.is_some() {
            match ex {
                ExOpt::At(t) => {
                    if set_field_expiry(&mut h, f, t, Cond::None, now) == 2 {
                        x.ks.stats.expired_subkeys += 1;
                    }
                    changed = true;
                }
                ExOpt::Persist if h.expiry(f).is_some() => {
                    h.set_expiry(f, None);
                    changed = true;
                }
                _ => {}
            }
        }
        values.push(v);
    }
    if changed {
        if !put(x, a[1], h) {
            return;
        }
    } else {
        x.ks.keep_coll(x.db, a[1], Coll::Hash(h));
    }
    x.reply.array(values.len());
    for v in values {
        match v {
            Some(v) => x.reply.bulk(&v),
            None => x.reply.null(),
        }
    }
}

/// HSETEX key [FNX | FXX] [EX seconds | PX ms | EXAT unix-seconds | PXAT unix-ms |
/// KEEPTTL] FIELDS numfields field value [field value ...]
pub fn hsetex(x: &mut Exec, a: &[&[u8]]) {
    const ARITY: &str = "ERR wrong number of arguments for 'hsetex' command";
    let (mut fnx, mut fxx) = (false, false);
    let mut ex = ExOpt::None;
    let mut pairs: Option<&[&[u8]]> = None;
    let mut i = 2;
    while i < a.len() {
        let w = a[i];
        if is(w, "fields") {
            if i + 3 >= a.len() {
                return x.reply.error(ARITY);
            }
            let n = match parse_i64(a[i + 1]) {
                Some(n) if (1..=i64::from(i32::MAX)).contains(&n) => n as usize,
                _ => return x.reply.error("ERR invalid number of fields"),
            };
            let remaining = a.len() - i - 2;
            if !remaining.is_multiple_of(2) || n != remaining / 2 {
                return x.reply.error(ARITY);
            }
            pairs = Some(&a[i + 2..]);
            break;
        } else if is(w, "ex") || is(w, "px") || is(w, "exat") || is(w, "pxat") {
            if ex != ExOpt::None {
                return x.reply.error(
                    "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified",
                );
            }
            if i + 1 >= a.len() {
                return x.reply.error("ERR missing expire time");
            }
            let seconds = is(w, "ex") || is(w, "exat");
            let base = if is(w, "ex") || is(w, "px") {
                x.now_ms
            } else {
                0
            };
            match parse_expire_time(a[i + 1], seconds, base, "hsetex") {
                Ok(t) => ex = ExOpt::At(t),
                Err(e) => return x.reply.error(&e),
            }
            i += 2;
            continue;
        } else if is(w, "keepttl") {
            if ex != ExOpt::None {
                return x.reply.error(
                    "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified",
                );
            }
            ex = ExOpt::Keep;
        } else if is(w, "fxx") || is(w, "fnx") {
            if fnx || fxx {
                return x
                    .reply
                    .error("ERR Only one of FXX or FNX arguments can be specified");
            }
            if is(w, "fxx") {
                fxx = true;
            } else {
                fnx = true;
            }
        } else {
            return x.reply.error(&format!(
                "ERR unknown argument: {}",
                String::from_utf8_lossy(w)
            ));
        }
        i += 1;
    }
    let Some(pairs) = pairs else {
        return x.reply.error(ARITY);
    };
    if !type_ok(x, a[1]) {
        return;
    }
    let existed = exists(x, a[1]);
    if !existed && fxx {
        return x.reply.int(0);
    }
    let now = x.now_ms;
    let Some(mut h) = take(x, a[1]) else { return };
    let mut changed = false;
    if fnx || fxx {
        let mut found = 0;
        for pair in pairs.chunks(2) {
            let f = pair[0];
            if h.is_expired(f, now) {
                h.remove(f);
                x.ks.stats.expired_subkeys += 1;
                changed = true;
            }
            let exists = h.contains(f);
            found += exists as usize;
            if (fxx && !exists) || (fnx && exists) {
                break;
            }
        }
        let n = pairs.len() / 2;
        if (fnx && found != 0) || (fxx && found != n) {
            if changed {
                if !put(x, a[1], h) {
                    return;
                }
            } else if existed {
                x.ks.keep_coll(x.db, a[1], Coll::Hash(h));
            }
            return x.reply.int(0);
        }
    }
    if let ExOpt::At(_) = ex {
        h.enable_ttl();
    }
    for pair in pairs.chunks(2) {
        let (f, v) = (pair[0], pair[1]);
        if ex == ExOpt::None {
            h.insert(f, v);
        } else {
            h.insert_keep_ttl(f, v);
        }
        if let ExOpt::At(t) = ex {
            if set_field_expiry(&mut h, f, t, Cond::None, now) == 2 {
                x.ks.stats.expired_subkeys += 1;
            }
        }
    }
    if put(x, a[1], h) {
        x.reply.int(1);
    }
}
