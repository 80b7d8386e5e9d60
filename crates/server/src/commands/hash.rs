//! HASH commands (Redis's `t_hash.c`). Each runs on the worker that owns its keys, on the
//! decoded collection the keyspace hands out (see `crate::coll`).
//!
//! Every handler checks its arguments in the order Redis 7.0.15 does (some before the key
//! lookup, some after), so that the same bad command gets the same error.

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
    let Some(present) = peek(x, a[1], |h| h.is_some_and(|h| h.contains(a[2]))) else {
        return;
    };
    if present {
        return x.reply.int(0);
    }
    let Some(mut h) = take(x, a[1]) else { return };
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

/// HGET key field
pub fn hget(x: &mut Exec, a: &[&[u8]]) {
    read(x, a[1], |r, h| match h.and_then(|h| h.get(a[2])) {
        Some(v) => r.bulk(v),
        None => r.null(),
    });
}

/// HMGET key field [field ...]
pub fn hmget(x: &mut Exec, a: &[&[u8]]) {
    read(x, a[1], |r, h| {
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
    read(x, a[1], |r, h| {
        r.int(h.and_then(|h| h.get(a[2])).map_or(0, |v| v.len() as i64))
    });
}

/// HEXISTS key field
pub fn hexists(x: &mut Exec, a: &[&[u8]]) {
    read(x, a[1], |r, h| {
        r.int(h.is_some_and(|h| h.contains(a[2])) as i64)
    });
}

/// HGETALL key (a map in RESP3)
pub fn hgetall(x: &mut Exec, a: &[&[u8]]) {
    read(x, a[1], |r, h| match h {
        None => r.map(0),
        Some(h) => {
            r.map(h.len());
            for (f, v) in h.iter() {
                r.bulk(f);
                r.bulk(v);
            }
        }
    });
}

/// HKEYS key
pub fn hkeys(x: &mut Exec, a: &[&[u8]]) {
    read(x, a[1], |r, h| match h {
        None => r.array(0),
        Some(h) => {
            r.array(h.len());
            for (f, _) in h.iter() {
                r.bulk(f);
            }
        }
    });
}

/// HVALS key
pub fn hvals(x: &mut Exec, a: &[&[u8]]) {
    read(x, a[1], |r, h| match h {
        None => r.array(0),
        Some(h) => {
            r.array(h.len());
            for (_, v) in h.iter() {
                r.bulk(v);
            }
        }
    });
}

/// HINCRBY key field increment
pub fn hincrby(x: &mut Exec, a: &[&[u8]]) {
    let Some(incr) = parse_i64(a[3]) else {
        x.reply.error(NOT_INT);
        return;
    };
    let Some(new) = peek(x, a[1], |h| {
        let old = match h.and_then(|h| h.get(a[2])) {
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
    let Some(mut h) = take(x, a[1]) else { return };
    let mut buf = itoa::Buffer::new();
    h.insert(a[2], buf.format(new).as_bytes());
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
    let Some(text) = peek(x, a[1], |h| {
        add(h.and_then(|h| h.get(a[2])), a[3]).map_err(|e| match e {
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
    let Some(mut h) = take(x, a[1]) else { return };
    h.insert(a[2], &text);
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

/// Parses a SCAN cursor as Redis does (`strtoul` in base 10: an optional sign, a negative
/// cursor wraps; no leading space; nothing after the digits, an embedded NUL ends them).
fn parse_cursor(b: &[u8]) -> Option<u64> {
    let b = &b[..memchr::memchr(0, b).unwrap_or(b.len())];
    if b.is_empty() {
        return Some(0);
    }
    let (neg, digits) = match b[0] {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// HSCAN key cursor [MATCH pattern] [COUNT count]
pub fn hscan(x: &mut Exec, a: &[&[u8]]) {
    let Some(cursor) = parse_cursor(a[2]) else {
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
        let mut i = 3;
        while i < a.len() {
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
        let items: Vec<_> = match pattern {
            None => items,
            Some(p) => items
                .into_iter()
                .filter(|(f, _)| crate::glob::glob_match(p, f, false))
                .collect(),
        };
        r.array(2);
        r.bulk(itoa::Buffer::new().format(next).as_bytes());
        r.array(items.len() * 2);
        for (f, v) in items {
            r.bulk(f);
            r.bulk(v);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_parse_like_strtoul() {
        assert_eq!(parse_cursor(b"0"), Some(0));
        assert_eq!(parse_cursor(b""), Some(0));
        assert_eq!(parse_cursor(b"123"), Some(123));
        assert_eq!(parse_cursor(b"+7"), Some(7));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551616"), None);
        assert_eq!(parse_cursor(b"12\x00zz"), Some(12));
        assert_eq!(parse_cursor(b" 1"), None);
        assert_eq!(parse_cursor(b"1 "), None);
        assert_eq!(parse_cursor(b"abc"), None);
        assert_eq!(parse_cursor(b"-"), None);
        assert_eq!(parse_cursor(b"1.5"), None);
    }
}
