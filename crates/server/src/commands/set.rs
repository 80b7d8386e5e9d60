//! SET commands (Redis's `t_set.c`). Each runs on the worker that owns its keys, on the
//! decoded collection the keyspace hands out (see `crate::coll`).
//!
//! Replies follow Redis 7.0.15: SMEMBERS, SINTER, SUNION, SDIFF and SPOP with a count answer
//! a RESP3 set; SRANDMEMBER with a count an array. An intset-encoded set (and a result that
//! Redis would build as an intset) is listed in increasing numeric order, as Redis's intset
//! iterates. The *STORE commands write their destination as a new value (any old type and
//! TTL gone) and delete it when the result is empty.

use super::{coll_error, is, parse_i64, Exec};
use crate::coll::set::{fits_intset, sort_numeric, Set};
use crate::coll::{scan_by_hash, Coll, Thresholds, VALUE_TYPE_SET};
use crate::reply::errors::{NOT_INT, SYNTAX};

/// Takes the set under `key` out to change it: Ok(None) when the key does not exist, Err
/// after replying the error (WRONGTYPE, or nothing when the keyspace kept a read error).
fn take(x: &mut Exec, key: &[u8]) -> Result<Option<Set>, ()> {
    match x.ks.take_coll(x.db, key, VALUE_TYPE_SET, x.now_ms) {
        Ok(c) => Ok(c.map(Coll::into_set)),
        Err(e) => {
            coll_error(x.reply, e);
            Err(())
        }
    }
}

/// Stores `s` as the new version of `key` (keeping its TTL; empty deletes the key). False
/// when the write was refused: the handler then replies nothing.
fn put(x: &mut Exec, key: &[u8], s: Set) -> bool {
    let t = x.thresholds();
    x.ks.put_coll(x.db, key, Coll::Set(s), &t, x.now_ms)
}

/// Hands back a set taken with [`take`] that the command left unchanged (see
/// `Keyspace::keep_coll`).
fn keep(x: &mut Exec, key: &[u8], s: Set) {
    x.ks.keep_coll(x.db, key, Coll::Set(s));
}

/// [`put`] after members were only removed: Redis never converts a set then (an intset
/// stays one even when `set-max-intset-entries` was lowered below its size meanwhile).
fn put_removed(x: &mut Exec, key: &[u8], s: Set) -> bool {
    let t = Thresholds {
        set_max_intset_entries: usize::MAX,
        ..x.thresholds()
    };
    x.ks.put_coll(x.db, key, Coll::Set(s), &t, x.now_ms)
}

/// Stores `s` under `key` as a new value, the way Redis's `setKey` does for the *STORE
/// commands: whatever `key` held (of any type) and its TTL are gone; an empty `s` deletes
/// the key. False when the write was refused.
fn store(x: &mut Exec, key: &[u8], s: Set) -> bool {
    if !s.is_empty()
        && x.ks
            .meta(x.db, key, x.now_ms)
            .is_some_and(|m| m.expire_at_ms != 0)
    {
        // put_coll keeps a TTL; a stored result has none.
        x.ks.delete(x.db, key, x.now_ms);
    }
    put(x, key, s)
}

/// Replies `members` as a RESP3 set (an array in RESP2).
fn reply_set(x: &mut Exec, members: &[&[u8]]) {
    x.reply.set(members.len());
    for m in members {
        x.reply.bulk(m);
    }
}

/// Orders a computed result as Redis would list it: numerically when the result set would
/// be intset-encoded, as built otherwise.
fn order_result(x: &Exec, members: &mut [&[u8]]) {
    if fits_intset(members.len(), members.iter().copied(), &x.thresholds()) {
        sort_numeric(members);
    }
}

/// SADD key member [member ...]
pub fn sadd(x: &mut Exec, a: &[&[u8]]) {
    let Ok(s) = take(x, a[1]) else { return };
    let mut s = s.unwrap_or_else(|| {
        // Redis's setTypeCreate(first member, members given): the new set's encoding.
        let t = x.thresholds();
        let hint = a.len() - 2;
        let mut s = Set::default();
        if !(crate::coll::set::is_intset_member(a[2]) && hint <= t.set_max_intset_entries) {
            if hint <= t.set_max_listpack_entries {
                s.listpack = true;
            } else {
                s.big = true;
            }
        }
        s
    });
    let mut added = 0;
    for m in &a[2..] {
        added += i64::from(s.insert(m));
    }
    if added == 0 {
        keep(x, a[1], s);
    } else if !put(x, a[1], s) {
        return;
    }
    x.reply.int(added);
}

/// SREM key member [member ...]
pub fn srem(x: &mut Exec, a: &[&[u8]]) {
    let mut s = match take(x, a[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return x.reply.int(0),
        Err(()) => return,
    };
    let mut removed = 0;
    for m in &a[2..] {
        removed += i64::from(s.remove(m));
    }
    if removed == 0 {
        keep(x, a[1], s);
    } else if !put_removed(x, a[1], s) {
        return;
    }
    x.reply.int(removed);
}

/// SCARD key
pub fn scard(x: &mut Exec, a: &[&[u8]]) {
    match x.ks.coll(x.db, a[1], VALUE_TYPE_SET, x.now_ms) {
        Ok(c) => x.reply.int(c.map_or(0, |c| c.len() as i64)),
        Err(e) => coll_error(x.reply, e),
    }
}

/// SISMEMBER key member
pub fn sismember(x: &mut Exec, a: &[&[u8]]) {
    match x.ks.coll(x.db, a[1], VALUE_TYPE_SET, x.now_ms) {
        Ok(c) => x
            .reply
            .int(i64::from(c.is_some_and(|c| c.as_set().contains(a[2])))),
        Err(e) => coll_error(x.reply, e),
    }
}

/// SMISMEMBER key member [member ...]
pub fn smismember(x: &mut Exec, a: &[&[u8]]) {
    match x.ks.coll(x.db, a[1], VALUE_TYPE_SET, x.now_ms) {
        Ok(c) => {
            x.reply.array(a.len() - 2);
            for m in &a[2..] {
                x.reply
                    .int(i64::from(c.is_some_and(|c| c.as_set().contains(m))));
            }
        }
        Err(e) => coll_error(x.reply, e),
    }
}

/// SMEMBERS key (Redis's SINTER of the one key)
pub fn smembers(x: &mut Exec, a: &[&[u8]]) {
    match x.ks.coll(x.db, a[1], VALUE_TYPE_SET, x.now_ms) {
        Ok(Some(c)) => {
            let members = c.as_set().ordered();
            x.reply.set(members.len());
            for m in members {
                x.reply.bulk(m);
            }
        }
        Ok(None) => x.reply.set(0),
        Err(e) => coll_error(x.reply, e),
    }
}

/// SMOVE source destination member
pub fn smove(x: &mut Exec, a: &[&[u8]]) {
    let (src_key, dst_key, member) = (a[1], a[2], a[3]);
    let mut src = match take(x, src_key) {
        Ok(Some(s)) => s,
        Ok(None) => return x.reply.int(0),
        Err(()) => return,
    };
    if src_key == dst_key {
        x.reply.int(i64::from(src.contains(member)));
        return keep(x, src_key, src);
    }
    let Ok(dst) = take(x, dst_key) else {
        return keep(x, src_key, src);
    };
    if !src.remove(member) {
        keep(x, src_key, src);
        if let Some(d) = dst {
            keep(x, dst_key, d);
        }
        return x.reply.int(0);
    }
    if !put_removed(x, src_key, src) {
        return;
    }
    let mut dst = dst.unwrap_or_default();
    if !dst.insert(member) {
        keep(x, dst_key, dst);
    } else if !put(x, dst_key, dst) {
        return;
    }
    x.reply.int(1);
}

/// SPOP key [count]
pub fn spop(x: &mut Exec, a: &[&[u8]]) {
    match a.len() {
        2 => {}
        3 => return spop_count(x, a),
        _ => return x.reply.error(SYNTAX),
    }
    let mut s = match take(x, a[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return x.reply.null(),
        Err(()) => return,
    };
    let m = s
        .pop_random(&mut rand::rng())
        .expect("a stored set is never empty");
    if put_removed(x, a[1], s) {
        x.reply.bulk(&m);
    }
}

/// How many times larger than what stays the popped part must be for SPOP to rebuild the
/// set from what stays (Redis's `SPOP_MOVE_STRATEGY_MUL`): the new set's encoding is then
/// decided afresh by its members.
const SPOP_MOVE_STRATEGY_MUL: usize = 5;

/// SPOP key count
fn spop_count(x: &mut Exec, a: &[&[u8]]) {
    let count = match parse_i64(a[2]) {
        Some(n) if n >= 0 => n as u64,
        // (Redis's getPositiveLongFromObjectOrReply: one message for both.)
        _ => return x.reply.error("ERR value is out of range, must be positive"),
    };
    let mut s = match take(x, a[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return x.reply.set(0),
        Err(()) => return,
    };
    if count == 0 {
        keep(x, a[1], s);
        return x.reply.set(0);
    }
    let size = s.len();
    if count >= size as u64 {
        // The whole set (listed as Redis's SUNION of it would), then the key is gone.
        if !put(x, a[1], Set::default()) {
            return;
        }
        let mut all: Vec<&[u8]> = s.iter().collect();
        order_result(x, &mut all);
        return reply_set(x, &all);
    }
    let count = count as usize;
    let remaining = size - count;
    let was_intset = !s.big && !s.listpack;
    let mut rng = rand::rng();
    let mut popped: Vec<Vec<u8>> = (0..count)
        .map(|_| s.pop_random(&mut rng).expect("count < size"))
        .collect();
    let stored = if remaining * SPOP_MOVE_STRATEGY_MUL <= count {
        // Redis builds a new set of the members that stay and lists the old one.
        // Redis 7.2+: an intset stays one; a listpack or hashtable leaves a new listpack.
        s.listpack = !was_intset;
        s.big = false;
        if was_intset {
            let mut refs: Vec<&[u8]> = popped.iter().map(|m| &m[..]).collect();
            sort_numeric(&mut refs);
            popped = refs.into_iter().map(<[u8]>::to_vec).collect();
        }
        put(x, a[1], s)
    } else {
        put_removed(x, a[1], s)
    };
    if !stored {
        return;
    }
    x.reply.set(popped.len());
    for m in &popped {
        x.reply.bulk(m);
    }
}

/// SRANDMEMBER key [count]
pub fn srandmember(x: &mut Exec, a: &[&[u8]]) {
    match a.len() {
        2 => {}
        3 => return srandmember_count(x, a),
        _ => return x.reply.error(SYNTAX),
    }
    match x.ks.coll(x.db, a[1], VALUE_TYPE_SET, x.now_ms) {
        Ok(Some(c)) => {
            let m = c.as_set().random(&mut rand::rng());
            x.reply.bulk(m.expect("a stored set is never empty"));
        }
        Ok(None) => x.reply.null(),
        Err(e) => coll_error(x.reply, e),
    }
}

/// SRANDMEMBER key count: distinct members for a positive count, samples with repetition
/// for a negative one.
fn srandmember_count(x: &mut Exec, a: &[&[u8]]) {
    let (count, distinct) = match parse_i64(a[2]) {
        None => return x.reply.error(NOT_INT),
        Some(i64::MIN) => {
            return x.reply.error(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            )
        }
        Some(n) if n >= 0 => (n as u64, true),
        Some(n) => (n.unsigned_abs(), false),
    };
    let s = match x.ks.coll(x.db, a[1], VALUE_TYPE_SET, x.now_ms) {
        Ok(Some(c)) => c.as_set(),
        Ok(None) => return x.reply.array(0),
        Err(e) => return coll_error(x.reply, e),
    };
    let size = s.len();
    let mut rng = rand::rng();
    if count == 0 {
        x.reply.array(0);
    } else if !distinct || count == 1 {
        x.reply.array(count as usize);
        for _ in 0..count {
            x.reply.bulk(s.random(&mut rng).expect("not empty"));
        }
    } else if count >= size as u64 {
        x.reply.array(size);
        for m in s.ordered() {
            x.reply.bulk(m);
        }
    } else {
        let picked = rand::seq::index::sample(&mut rng, size, count as usize);
        x.reply.array(picked.len());
        for i in picked {
            x.reply.bulk(s.get_index(i));
        }
    }
}

/// What an intersection does with its result.
#[derive(Clone, Copy)]
enum Inter<'k> {
    /// Reply the members (SINTER, SMEMBERS).
    Reply,
    /// Reply how many, stopping at a limit (0 = none) (SINTERCARD).
    Card(u64),
    /// Store them under the key (SINTERSTORE).
    Store(&'k [u8]),
}

/// SINTER key [key ...]
pub fn sinter(x: &mut Exec, a: &[&[u8]]) {
    inter(x, &a[1..], Inter::Reply);
}

/// SINTERSTORE destination key [key ...]
pub fn sinterstore(x: &mut Exec, a: &[&[u8]]) {
    inter(x, &a[2..], Inter::Store(a[1]));
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit]
pub fn sintercard(x: &mut Exec, a: &[&[u8]]) {
    let numkeys = match parse_i64(a[1]) {
        Some(n) if n >= 1 => n as u64,
        _ => return x.reply.error("ERR numkeys should be greater than 0"),
    };
    if numkeys > (a.len() - 2) as u64 {
        return x
            .reply
            .error("ERR Number of keys can't be greater than number of args");
    }
    let numkeys = numkeys as usize;
    let mut limit = 0;
    let mut j = 2 + numkeys;
    while j < a.len() {
        if is(a[j], "limit") && j + 1 < a.len() {
            j += 1;
            match parse_i64(a[j]) {
                Some(n) if n >= 0 => limit = n as u64,
                _ => return x.reply.error("ERR LIMIT can't be negative"),
            }
        } else {
            return x.reply.error(SYNTAX);
        }
        j += 1;
    }
    inter(x, &a[2..2 + numkeys], Inter::Card(limit));
}

/// The intersection of the sets under `keys` (a missing key is an empty set; any key of
/// another type is WRONGTYPE, checked before anything else, as Redis does).
fn inter(x: &mut Exec, keys: &[&[u8]], mode: Inter) {
    // Types and sizes first.
    let mut smallest: Option<(usize, usize)> = None;
    let mut empty = false;
    for (i, k) in keys.iter().enumerate() {
        match x.ks.coll(x.db, k, VALUE_TYPE_SET, x.now_ms) {
            Ok(Some(c)) => {
                if smallest.is_none_or(|(_, n)| c.len() < n) {
                    smallest = Some((i, c.len()));
                }
            }
            Ok(None) => empty = true,
            Err(e) => return coll_error(x.reply, e),
        }
    }
    let mut result: Vec<Vec<u8>> = Vec::new();
    if let (false, Some((first, _))) = (empty, smallest) {
        // The smallest set's members (in its iteration order), kept while every other set
        // holds them.
        match x.ks.coll(x.db, keys[first], VALUE_TYPE_SET, x.now_ms) {
            Ok(Some(c)) => {
                result = c
                    .as_set()
                    .ordered()
                    .into_iter()
                    .map(<[u8]>::to_vec)
                    .collect()
            }
            Ok(None) => {}
            Err(e) => return coll_error(x.reply, e),
        }
        for (i, k) in keys.iter().enumerate() {
            if result.is_empty() {
                break;
            }
            if i == first || *k == keys[first] {
                continue;
            }
            match x.ks.coll(x.db, k, VALUE_TYPE_SET, x.now_ms) {
                Ok(Some(c)) => {
                    let s = c.as_set();
                    result.retain(|m| s.contains(m));
                }
                Ok(None) => result.clear(),
                Err(e) => return coll_error(x.reply, e),
            }
        }
    }
    match mode {
        Inter::Reply => {
            let refs: Vec<&[u8]> = result.iter().map(|m| &m[..]).collect();
            reply_set(x, &refs);
        }
        Inter::Card(limit) => {
            let n = result.len() as u64;
            x.reply.int(if limit > 0 { n.min(limit) } else { n } as i64);
        }
        Inter::Store(dest) => {
            let n = result.len();
            let mut s = Set::with_capacity(n);
            for m in result {
                s.insert_owned(m);
            }
            if store(x, dest, s) {
                x.reply.int(n as i64);
            }
        }
    }
}

/// SUNION key [key ...]
pub fn sunion(x: &mut Exec, a: &[&[u8]]) {
    union_diff(x, &a[1..], None, false);
}

/// SUNIONSTORE destination key [key ...]
pub fn sunionstore(x: &mut Exec, a: &[&[u8]]) {
    union_diff(x, &a[2..], Some(a[1]), false);
}

/// SDIFF key [key ...]
pub fn sdiff(x: &mut Exec, a: &[&[u8]]) {
    union_diff(x, &a[1..], None, true);
}

/// SDIFFSTORE destination key [key ...]
pub fn sdiffstore(x: &mut Exec, a: &[&[u8]]) {
    union_diff(x, &a[2..], Some(a[1]), true);
}

/// The union, or the difference (`diff`: the first set minus the others), of the sets
/// under `keys` (missing keys are empty sets; WRONGTYPE for any key of another type),
/// replied or stored under `dest`.
///
/// The result's encoding (and so its order) is the one Redis's `sunionDiffGenericCommand`
/// ends with: it adds to a new intset, so the result is an intset when it fits one, except
/// after its second difference algorithm, which first adds the whole first set.
fn union_diff(x: &mut Exec, keys: &[&[u8]], dest: Option<&[u8]>, diff: bool) {
    // Sizes (None: missing) and types first.
    let mut sizes: Vec<Option<usize>> = Vec::with_capacity(keys.len());
    for k in keys {
        match x.ks.coll(x.db, k, VALUE_TYPE_SET, x.now_ms) {
            Ok(c) => sizes.push(c.map(Coll::len)),
            Err(e) => return coll_error(x.reply, e),
        }
    }
    let mut result = Set::default();
    let (mut big, mut listpack) = (false, false);
    if !diff {
        for (k, _) in keys.iter().zip(&sizes).filter(|(_, n)| n.is_some()) {
            match x.ks.coll(x.db, k, VALUE_TYPE_SET, x.now_ms) {
                Ok(Some(c)) => {
                    for m in c.as_set().iter() {
                        result.insert(m);
                    }
                }
                Ok(None) => {}
                Err(e) => return coll_error(x.reply, e),
            }
        }
    } else if let Some(first_len) = sizes[0].filter(|_| !keys[1..].contains(&keys[0])) {
        // (The first set minus itself is empty.) Redis's choice of algorithm: the second
        // one (copy the first set, then remove the others) when it is clearly less work.
        let present = sizes.iter().flatten().count();
        let algo_one_work = first_len * present / 2;
        let algo_two_work: usize = sizes.iter().flatten().sum();
        let copies_first = algo_one_work > algo_two_work;
        let t = x.thresholds();
        match x.ks.coll(x.db, keys[0], VALUE_TYPE_SET, x.now_ms) {
            Ok(Some(c)) => {
                let first = c.as_set();
                result = Set::with_capacity(first.len());
                for m in first.ordered() {
                    result.insert(m);
                }
                if copies_first {
                    (big, listpack) = encoding_of_new(first, &t);
                }
            }
            Ok(None) => {}
            Err(e) => return coll_error(x.reply, e),
        }
        for (k, _) in keys.iter().zip(&sizes).skip(1).filter(|(_, n)| n.is_some()) {
            if result.is_empty() {
                break;
            }
            match x.ks.coll(x.db, k, VALUE_TYPE_SET, x.now_ms) {
                Ok(Some(c)) => {
                    let other = c.as_set();
                    result.retain(|m| !other.contains(m));
                }
                Ok(None) => {}
                Err(e) => return coll_error(x.reply, e),
            }
        }
    }
    match dest {
        None => {
            let mut refs: Vec<&[u8]> = result.iter().collect();
            if !big {
                order_result(x, &mut refs);
            }
            reply_set(x, &refs);
        }
        Some(dest) => {
            let n = result.len();
            result.big = big;
            result.listpack = listpack;
            if store(x, dest, result) {
                x.reply.int(n as i64);
            }
        }
    }
}

/// The encoding (big, listpack) a new intset reaches when every member of `s` is added to
/// it (Redis 7.2+'s conversions; removals afterwards never convert back).
fn encoding_of_new(s: &Set, t: &Thresholds) -> (bool, bool) {
    if s.iter().all(crate::coll::set::is_intset_member) {
        (s.len() > t.set_max_intset_entries, false)
    } else if s.len() <= t.set_max_listpack_entries
        && s.iter().all(|m| m.len() <= t.set_max_listpack_value)
    {
        (false, true)
    } else {
        (true, false)
    }
}

/// SSCAN key cursor [MATCH pattern] [COUNT count]
///
/// A hashtable-encoded set is walked in member-hash order ([`scan_by_hash`]); an
/// intset-encoded one is returned whole with cursor 0, as Redis does.
pub fn sscan(x: &mut Exec, a: &[&[u8]]) {
    let Some(cursor) = super::parse_scan_cursor(a[2]) else {
        return x.reply.error("ERR invalid cursor");
    };
    let s = match x.ks.coll(x.db, a[1], VALUE_TYPE_SET, x.now_ms) {
        Ok(Some(c)) => c.as_set(),
        Ok(None) => {
            x.reply.array(2);
            x.reply.bulk(b"0");
            x.reply.array(0);
            return;
        }
        Err(e) => return coll_error(x.reply, e),
    };
    let mut count: usize = 10;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 3;
    while i < a.len() {
        let more = a.len() - i >= 2;
        if is(a[i], "count") && more {
            match parse_i64(a[i + 1]) {
                Some(n) if n >= 1 => count = n as usize,
                Some(_) => return x.reply.error(SYNTAX),
                None => return x.reply.error(NOT_INT),
            }
        } else if is(a[i], "match") && more {
            pattern = Some(a[i + 1]).filter(|p| *p != b"*");
        } else {
            return x.reply.error(SYNTAX);
        }
        i += 2;
    }
    let (next, items) = if s.big {
        scan_by_hash(s.iter(), |m| *m, cursor, count)
    } else {
        (0, s.ordered())
    };
    let items: Vec<&[u8]> = match pattern {
        Some(p) => items
            .into_iter()
            .filter(|m| crate::glob::glob_match(p, m, false))
            .collect(),
        None => items,
    };
    x.reply.array(2);
    x.reply.bulk(next.to_string().as_bytes());
    x.reply.array(items.len());
    for m in items {
        x.reply.bulk(m);
    }
}

#[cfg(test)]
mod tests {
    use crate::commands::parse_scan_cursor as parse_cursor;

    #[test]
    fn cursors_parse_as_redis_8_does() {
        assert_eq!(parse_cursor(b"0"), Some(0));
        assert_eq!(parse_cursor(b""), None);
        assert_eq!(parse_cursor(b"+7"), Some(7));
        assert_eq!(parse_cursor(b" 1"), Some(1));
        assert_eq!(parse_cursor(b"-1"), None);
        assert_eq!(parse_cursor(b"-0"), Some(0));
        assert_eq!(parse_cursor(b" -1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551616"), None);
        assert_eq!(parse_cursor(b"12\x00zz"), Some(12));
        assert_eq!(parse_cursor(b"\t+3"), Some(3));
        for bad in [&b"1 "[..], b"x", b"-", b"+", b"1.5", b"0x10"] {
            assert_eq!(parse_cursor(bad), None, "{bad:?}");
        }
    }
}
