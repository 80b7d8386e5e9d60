//! LIST commands (Redis's `t_list.c`). Each runs on the worker that owns its keys, on the
//! decoded collection the keyspace hands out (see `crate::coll`).
//!
//! Arguments are checked in the order Redis checks them, so a command with several faults
//! answers the same error as Redis (e.g. LINDEX reads the key before parsing the index,
//! LRANGE parses before reading the key).
//!
//! The blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) serve at once when
//! they can; otherwise they ask to wait with [`Exec::block_on`] and reply nothing, and run
//! again when one of their keys is written.

use super::{coll_error, is, parse_block_timeout, parse_i64, Exec, TimeoutReply};
use crate::coll::list::{End, List};
use crate::coll::{Coll, VALUE_TYPE_LIST};
use crate::keyspace::CollError;
use crate::reply::errors::{NOT_INT, SYNTAX};

/// ACL categories of the blocking list commands.
pub(super) const A_LIST_BLOCKING: &[&str] = &["@write", "@list", "@slow", "@blocking"];

/// Redis's reply to a wrong number of arguments.
fn arity_error(x: &mut Exec, name: &str) {
    x.reply.error(&format!(
        "ERR wrong number of arguments for '{name}' command"
    ));
}

/// A non-negative integer argument (Redis's `getPositiveLongFromObjectOrReply`): `msg`
/// answers any fault, a negative value or not an integer alike.
fn parse_non_negative(x: &mut Exec, arg: &[u8], msg: &str) -> Option<i64> {
    let v = parse_i64(arg).filter(|v| *v >= 0);
    if v.is_none() {
        x.reply.error(msg);
    }
    v
}

/// An integer argument, replying Redis's error when it is not one.
fn parse_int(x: &mut Exec, arg: &[u8]) -> Option<i64> {
    let v = parse_i64(arg);
    if v.is_none() {
        x.reply.error(NOT_INT);
    }
    v
}

/// LEFT / RIGHT, replying a syntax error otherwise.
fn parse_end(x: &mut Exec, arg: &[u8]) -> Option<End> {
    if is(arg, "left") {
        Some(End::Head)
    } else if is(arg, "right") {
        Some(End::Tail)
    } else {
        x.reply.error(SYNTAX);
        None
    }
}

/// The list under `key` taken out to change (empty when the key does not exist); Err when
/// the reply was written (WRONGTYPE, or a kept read error).
fn take_list(x: &mut Exec, key: &[u8]) -> Result<Option<List>, ()> {
    match x.ks.take_coll(x.db, key, VALUE_TYPE_LIST, x.now_ms) {
        Ok(c) => Ok(c.map(Coll::into_list)),
        Err(e) => {
            coll_error(x.reply, e);
            Err(())
        }
    }
}

/// `list-max-listpack-size`, which decides the list encoding (see `coll::list`).
fn fill(x: &Exec) -> i64 {
    x.config.hot.coll.get().list_max_listpack_size
}

/// Elements about to be added, as Redis counts them for the list encoding: their bytes
/// and number.
fn adding(values: &[&[u8]]) -> (usize, usize) {
    (values.iter().map(|v| v.len()).sum(), values.len())
}

/// Stores the new version of the list under `key` (deleting the key when it is empty);
/// false when the write was refused (the dispatcher replies the kept error).
fn put_list(x: &mut Exec, key: &[u8], l: List) -> bool {
    let t = x.thresholds();
    x.ks.put_coll(x.db, key, Coll::List(l), &t, x.now_ms)
}

/// LPUSH / RPUSH / LPUSHX / RPUSHX key element [element ...]
fn push(x: &mut Exec, a: &[&[u8]], end: End, only_existing: bool) {
    let key = a[1];
    let Ok(l) = take_list(x, key) else {
        return;
    };
    let mut l = match l {
        Some(l) => l,
        None if only_existing => return x.reply.int(0),
        None => List::default(),
    };
    let (bytes, count) = adding(&a[2..]);
    l.before_growth(fill(x), bytes, count);
    for v in &a[2..] {
        l.push(end, v.to_vec());
    }
    let n = l.len() as i64;
    if put_list(x, key, l) {
        x.reply.int(n);
    }
}

/// LPUSH key element [element ...]
pub fn lpush(x: &mut Exec, a: &[&[u8]]) {
    push(x, a, End::Head, false)
}

/// RPUSH key element [element ...]
pub fn rpush(x: &mut Exec, a: &[&[u8]]) {
    push(x, a, End::Tail, false)
}

/// LPUSHX key element [element ...]
pub fn lpushx(x: &mut Exec, a: &[&[u8]]) {
    push(x, a, End::Head, true)
}

/// RPUSHX key element [element ...]
pub fn rpushx(x: &mut Exec, a: &[&[u8]]) {
    push(x, a, End::Tail, true)
}

/// LPOP / RPOP key [count]
fn pop(x: &mut Exec, a: &[&[u8]], end: End) {
    if a.len() > 3 {
        let name = if end == End::Head { "lpop" } else { "rpop" };
        return arity_error(x, name);
    }
    let count = match a.get(2) {
        Some(arg) => {
            match parse_non_negative(x, arg, "ERR value is out of range, must be positive") {
                Some(n) => Some(n),
                None => return,
            }
        }
        None => None,
    };
    let key = a[1];
    let Ok(l) = take_list(x, key) else {
        return;
    };
    let Some(mut l) = l else {
        return if count.is_some() {
            x.reply.null_array()
        } else {
            x.reply.null()
        };
    };
    if count == Some(0) {
        // Nothing popped.
        x.ks.keep_coll(x.db, key, Coll::List(l));
        return x.reply.array(0);
    }
    match count {
        None => {
            let v = l.pop(end).unwrap_or_default();
            l.after_shrink(fill(x));
            if put_list(x, key, l) {
                x.reply.bulk(&v);
            }
        }
        Some(n) => {
            let vals = l.pop_many(end, n as usize);
            l.after_shrink(fill(x));
            if put_list(x, key, l) {
                x.reply.array(vals.len());
                for v in &vals {
                    x.reply.bulk(v);
                }
            }
        }
    }
}

/// LPOP key [count]
pub fn lpop(x: &mut Exec, a: &[&[u8]]) {
    pop(x, a, End::Head)
}

/// RPOP key [count]
pub fn rpop(x: &mut Exec, a: &[&[u8]]) {
    pop(x, a, End::Tail)
}

/// LLEN key
pub fn llen(x: &mut Exec, a: &[&[u8]]) {
    match x.ks.coll(x.db, a[1], VALUE_TYPE_LIST, x.now_ms) {
        Ok(c) => x.reply.int(c.map_or(0, |c| c.len() as i64)),
        Err(e) => coll_error(x.reply, e),
    }
}

/// LINDEX key index
pub fn lindex(x: &mut Exec, a: &[&[u8]]) {
    let index = parse_i64(a[2]);
    match x.ks.coll(x.db, a[1], VALUE_TYPE_LIST, x.now_ms) {
        Ok(None) => x.reply.null(),
        Err(e) => coll_error(x.reply, e),
        Ok(Some(c)) => match index {
            None => x.reply.error(NOT_INT),
            Some(i) => match c.as_list().get(i) {
                Some(v) => x.reply.bulk(v),
                None => x.reply.null(),
            },
        },
    }
}

/// LSET key index element
pub fn lset(x: &mut Exec, a: &[&[u8]]) {
    let key = a[1];
    let index = parse_i64(a[2]);
    let Ok(l) = take_list(x, key) else {
        return;
    };
    let Some(mut l) = l else {
        return x.reply.error("ERR no such key");
    };
    let Some(i) = index.and_then(|index| l.position(index)) else {
        x.ks.keep_coll(x.db, key, Coll::List(l));
        return x.reply.error(if index.is_none() {
            NOT_INT
        } else {
            "ERR index out of range"
        });
    };
    // As Redis: the new element counts as one more before, then the list may shrink.
    let (bytes, count) = adding(&a[3..4]);
    l.before_growth(fill(x), bytes, count);
    l.set(i, a[3].to_vec());
    l.after_shrink(fill(x));
    if put_list(x, key, l) {
        x.reply.ok();
    }
}

/// LRANGE key start stop
pub fn lrange(x: &mut Exec, a: &[&[u8]]) {
    let Some(start) = parse_int(x, a[2]) else {
        return;
    };
    let Some(stop) = parse_int(x, a[3]) else {
        return;
    };
    match x.ks.coll(x.db, a[1], VALUE_TYPE_LIST, x.now_ms) {
        Ok(None) => x.reply.array(0),
        Err(e) => coll_error(x.reply, e),
        Ok(Some(c)) => {
            let l = c.as_list();
            match l.range(start, stop) {
                None => x.reply.array(0),
                Some((s, e)) => {
                    x.reply.array(e - s + 1);
                    for v in l.items().range(s..=e) {
                        x.reply.bulk(v);
                    }
                }
            }
        }
    }
}

/// LTRIM key start stop
pub fn ltrim(x: &mut Exec, a: &[&[u8]]) {
    let key = a[1];
    let Some(start) = parse_int(x, a[2]) else {
        return;
    };
    let Some(stop) = parse_int(x, a[3]) else {
        return;
    };
    match x.ks.coll(x.db, key, VALUE_TYPE_LIST, x.now_ms) {
        Ok(None) => return x.reply.ok(),
        Err(e) => return coll_error(x.reply, e),
        Ok(Some(c)) => {
            let l = c.as_list();
            if l.range(start, stop) == Some((0, l.len() - 1)) {
                // Nothing to remove: no new version.
                return x.reply.ok();
            }
        }
    }
    let Ok(Some(mut l)) = take_list(x, key) else {
        return;
    };
    l.trim(start, stop);
    l.after_shrink(fill(x));
    if put_list(x, key, l) {
        x.reply.ok();
    }
}

/// LINSERT key BEFORE|AFTER pivot element
pub fn linsert(x: &mut Exec, a: &[&[u8]]) {
    let after = if is(a[2], "after") {
        true
    } else if is(a[2], "before") {
        false
    } else {
        return x.reply.error(SYNTAX);
    };
    let key = a[1];
    let (bytes, count) = adding(&a[4..5]);
    let fill = fill(x);
    match x.ks.coll(x.db, key, VALUE_TYPE_LIST, x.now_ms) {
        Ok(None) => return x.reply.int(0),
        Err(e) => return coll_error(x.reply, e),
        Ok(Some(c)) => {
            if !c.as_list().items().iter().any(|e| e[..] == *a[3]) {
                // Redis converts the list before it looks for the pivot, so a missing
                // pivot may still make it a quicklist; Skerry writes nothing here.
                return x.reply.int(-1);
            }
        }
    }
    let Ok(Some(mut l)) = take_list(x, key) else {
        return;
    };
    l.before_growth(fill, bytes, count);
    l.insert_at_pivot(a[3], after, a[4].to_vec());
    let n = l.len() as i64;
    if put_list(x, key, l) {
        x.reply.int(n);
    }
}

/// LREM key count element
pub fn lrem(x: &mut Exec, a: &[&[u8]]) {
    let key = a[1];
    let Some(count) = parse_int(x, a[2]) else {
        return;
    };
    match x.ks.coll(x.db, key, VALUE_TYPE_LIST, x.now_ms) {
        Ok(None) => return x.reply.int(0),
        Err(e) => return coll_error(x.reply, e),
        Ok(Some(c)) => {
            if !c.as_list().items().iter().any(|e| e[..] == *a[3]) {
                return x.reply.int(0);
            }
        }
    }
    let Ok(Some(mut l)) = take_list(x, key) else {
        return;
    };
    let removed = l.remove(a[3], count) as i64;
    l.after_shrink(fill(x));
    if put_list(x, key, l) {
        x.reply.int(removed);
    }
}

/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
pub fn lpos(x: &mut Exec, a: &[&[u8]]) {
    let mut rank: i64 = 1;
    let mut count: Option<i64> = None;
    let mut maxlen: i64 = 0;
    let mut j = 3;
    while j < a.len() {
        let more = j + 1 < a.len();
        if is(a[j], "rank") && more {
            j += 1;
            let Some(r) = parse_int(x, a[j]) else {
                return;
            };
            if r == i64::MIN {
                // Redis 7.2+ takes RANK in [-LONG_MAX, LONG_MAX].
                return x.reply.error(
                    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
                );
            }
            if r == 0 {
                return x.reply.error(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                );
            }
            rank = r;
        } else if is(a[j], "count") && more {
            j += 1;
            let Some(c) = parse_non_negative(x, a[j], "ERR COUNT can't be negative") else {
                return;
            };
            count = Some(c);
        } else if is(a[j], "maxlen") && more {
            j += 1;
            let Some(m) = parse_non_negative(x, a[j], "ERR MAXLEN can't be negative") else {
                return;
            };
            maxlen = m;
        } else {
            return x.reply.error(SYNTAX);
        }
        j += 1;
    }
    let l = match x.ks.coll(x.db, a[1], VALUE_TYPE_LIST, x.now_ms) {
        Ok(Some(c)) => c.as_list(),
        Ok(None) => {
            return if count.is_some() {
                x.reply.array(0)
            } else {
                x.reply.null()
            }
        }
        Err(e) => return coll_error(x.reply, e),
    };
    let maxlen = maxlen as usize;
    let count = count.map(|c| c as usize);
    match count {
        Some(c) => {
            let found = l.positions(a[2], rank, c, maxlen);
            x.reply.array(found.len());
            for i in found {
                x.reply.int(i as i64);
            }
        }
        None => match l.positions(a[2], rank, 1, maxlen).first() {
            Some(&i) => x.reply.int(i as i64),
            None => x.reply.null(),
        },
    }
}

/// What LMOVE found: the element moved, or the reply was written (or nothing to move).
enum Moved {
    /// The source does not exist.
    NoSource,
    /// The reply (an error) was written, or the write was refused.
    Done,
}

/// Moves an element from the `from` end of `src` to the `to` end of `dst`, replying with
/// it. `NoSource` (nothing replied) when the source does not exist.
fn move_element(x: &mut Exec, src: &[u8], dst: &[u8], from: End, to: End) -> Moved {
    let dirty_before = x.ks.stats.dirty;
    let moved = move_element_once(x, src, dst, from, to);
    // Redis counts a move as one change, whatever it wrote.
    if x.ks.stats.dirty > dirty_before {
        x.ks.count_changes_as(dirty_before, 1);
    }
    moved
}

fn move_element_once(x: &mut Exec, src: &[u8], dst: &[u8], from: End, to: End) -> Moved {
    let Ok(s) = take_list(x, src) else {
        return Moved::Done;
    };
    let Some(mut s) = s else {
        return Moved::NoSource;
    };
    let fill = fill(x);
    if src == dst {
        let v = s.pop(from).unwrap_or_default();
        s.before_growth(fill, v.len(), 1);
        s.push(to, v.clone());
        s.after_shrink(fill);
        if put_list(x, src, s) {
            x.reply.bulk(&v);
        }
        return Moved::Done;
    }
    let d = match x.ks.take_coll(x.db, dst, VALUE_TYPE_LIST, x.now_ms) {
        Ok(d) => d.map(Coll::into_list),
        Err(e) => {
            // The source goes back unchanged.
            x.ks.keep_coll(x.db, src, Coll::List(s));
            coll_error(x.reply, e);
            return Moved::Done;
        }
    };
    let mut d = d.unwrap_or_default();
    let v = s.pop(from).unwrap_or_default();
    s.after_shrink(fill);
    d.before_growth(fill, v.len(), 1);
    d.push(to, v.clone());
    // The destination first: should the second write be refused, the element is in both
    // lists rather than in neither.
    if put_list(x, dst, d) && put_list(x, src, s) {
        x.reply.bulk(&v);
    }
    Moved::Done
}

/// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
pub fn lmove(x: &mut Exec, a: &[&[u8]]) {
    let Some(from) = parse_end(x, a[3]) else {
        return;
    };
    let Some(to) = parse_end(x, a[4]) else {
        return;
    };
    if let Moved::NoSource = move_element(x, a[1], a[2], from, to) {
        x.reply.null();
    }
}

/// RPOPLPUSH source destination
pub fn rpoplpush(x: &mut Exec, a: &[&[u8]]) {
    if let Moved::NoSource = move_element(x, a[1], a[2], End::Tail, End::Head) {
        x.reply.null();
    }
}

/// Pops from the first non-empty list of `keys`: one element replied as [key, element]
/// (`count` None, BLPOP/BRPOP) or up to `count` as [key, [elements]] (LMPOP). False when no
/// key holds a list (nothing replied); true when the reply was written.
fn pop_first(x: &mut Exec, keys: &[&[u8]], end: End, count: Option<usize>) -> bool {
    for &key in keys {
        let mut l = match x.ks.take_coll(x.db, key, VALUE_TYPE_LIST, x.now_ms) {
            Ok(Some(c)) => c.into_list(),
            Ok(None) => continue,
            Err(CollError::WrongType) => {
                coll_error(x.reply, CollError::WrongType);
                return true;
            }
            Err(e) => {
                coll_error(x.reply, e);
                return true;
            }
        };
        if l.is_empty() {
            continue;
        }
        match count {
            None => {
                let v = l.pop(end).unwrap_or_default();
                l.after_shrink(fill(x));
                if put_list(x, key, l) {
                    x.reply.array(2);
                    x.reply.bulk(key);
                    x.reply.bulk(&v);
                }
            }
            Some(n) => {
                let vals = l.pop_many(end, n);
                l.after_shrink(fill(x));
                if put_list(x, key, l) {
                    x.reply.array(2);
                    x.reply.bulk(key);
                    x.reply.array(vals.len());
                    for v in &vals {
                        x.reply.bulk(v);
                    }
                }
            }
        }
        return true;
    }
    false
}

/// The parsed arguments of LMPOP / BLMPOP after the numkeys argument at `at`: the key
/// range, the end and the count. None when the error was replied.
fn parse_mpop(x: &mut Exec, a: &[&[u8]], at: usize) -> Option<(usize, usize, End, usize)> {
    let numkeys = match parse_i64(a[at]) {
        Some(n) if n > 0 => n as u64,
        _ => {
            x.reply.error("ERR numkeys should be greater than 0");
            return None;
        }
    };
    let where_idx = (at as u64 + 1).saturating_add(numkeys);
    if where_idx >= a.len() as u64 {
        x.reply.error(SYNTAX);
        return None;
    }
    let where_idx = where_idx as usize;
    let end = parse_end(x, a[where_idx])?;
    let mut count: Option<usize> = None;
    let mut j = where_idx + 1;
    while j < a.len() {
        if count.is_none() && is(a[j], "count") && j + 1 < a.len() {
            j += 1;
            match parse_i64(a[j]) {
                Some(n) if n > 0 => count = Some(n as usize),
                _ => {
                    x.reply.error("ERR count should be greater than 0");
                    return None;
                }
            }
        } else {
            x.reply.error(SYNTAX);
            return None;
        }
        j += 1;
    }
    Some((at + 1, where_idx, end, count.unwrap_or(1)))
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]
pub fn lmpop(x: &mut Exec, a: &[&[u8]]) {
    let Some((first, end_idx, end, count)) = parse_mpop(x, a, 1) else {
        return;
    };
    if !pop_first(x, &a[first..end_idx], end, Some(count)) {
        x.reply.null_array();
    }
}

/// The keys without repeats, first occurrence first (a blocked client waits on each key
/// once, as Redis's `blockForKeys`).
fn distinct<'a>(keys: &[&'a [u8]]) -> Vec<&'a [u8]> {
    let mut out: Vec<&[u8]> = Vec::with_capacity(keys.len());
    for &k in keys {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// BLPOP / BRPOP key [key ...] timeout
fn bpop(x: &mut Exec, a: &[&[u8]], end: End) {
    let Some(timeout_ms) = parse_block_timeout(x.reply, a[a.len() - 1]) else {
        return;
    };
    let keys = &a[1..a.len() - 1];
    if !pop_first(x, keys, end, None) {
        x.block_on(&distinct(keys), timeout_ms, TimeoutReply::NullArray);
    }
}

/// BLPOP key [key ...] timeout
pub fn blpop(x: &mut Exec, a: &[&[u8]]) {
    bpop(x, a, End::Head)
}

/// BRPOP key [key ...] timeout
pub fn brpop(x: &mut Exec, a: &[&[u8]]) {
    bpop(x, a, End::Tail)
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]
pub fn blmpop(x: &mut Exec, a: &[&[u8]]) {
    let Some((first, end_idx, end, count)) = parse_mpop(x, a, 2) else {
        return;
    };
    let Some(timeout_ms) = parse_block_timeout(x.reply, a[1]) else {
        return;
    };
    let keys = &a[first..end_idx];
    if !pop_first(x, keys, end, Some(count)) {
        x.block_on(&distinct(keys), timeout_ms, TimeoutReply::NullArray);
    }
}

/// BLMOVE / BRPOPLPUSH once the arguments are parsed. They wait on the source only (a
/// wrong-typed destination is found when an element arrives), and time out with a null
/// array as every blocked list command in Redis 7.0 (`replyToBlockedClientTimedOut`),
/// though they answer a null bulk where blocking is not allowed (MULTI).
fn bmove(x: &mut Exec, a: &[&[u8]], from: End, to: End, timeout_ms: u64) {
    if let Moved::NoSource = move_element(x, a[1], a[2], from, to) {
        x.block_on(&[a[1]], timeout_ms, TimeoutReply::NullArray);
    }
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
pub fn blmove(x: &mut Exec, a: &[&[u8]]) {
    let Some(from) = parse_end(x, a[3]) else {
        return;
    };
    let Some(to) = parse_end(x, a[4]) else {
        return;
    };
    let Some(timeout_ms) = parse_block_timeout(x.reply, a[5]) else {
        return;
    };
    bmove(x, a, from, to, timeout_ms)
}

/// BRPOPLPUSH source destination timeout
pub fn brpoplpush(x: &mut Exec, a: &[&[u8]]) {
    let Some(timeout_ms) = parse_block_timeout(x.reply, a[3]) else {
        return;
    };
    bmove(x, a, End::Tail, End::Head, timeout_ms)
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use skerry_resp::Proto;
    use skerry_store::device::RamDevice;
    use skerry_store::{Durability, Store, StoreOptions, Writer};

    use super::super::{lookup, BlockRequest, Exec, Handler, COMMANDS};
    use super::TimeoutReply;
    use crate::config::Config;
    use crate::keyspace::{Keyspace, RecoveredIndex};
    use crate::reply::Reply;

    /// Runs `f` with a keyspace over a fresh RAM device, inside a compio runtime.
    fn with_keyspace(f: impl FnOnce(&mut Keyspace)) {
        compio::runtime::Runtime::new()
            .unwrap()
            .block_on(async move {
                let dev = RamDevice::new(64 << 20, 512);
                let opts = StoreOptions {
                    block_size_bytes: 1 << 20,
                    ..StoreOptions::default()
                };
                let (store, rec) = Store::create_or_open(vec![dev.into()], &opts, |_| {})
                    .await
                    .unwrap();
                let log = Writer::open(store, 0, Durability::EverySec, rec.max_mutation_seq)
                    .await
                    .unwrap();
                let mut ks = Keyspace::new(RecoveredIndex::new(1), Rc::new(log));
                f(&mut ks);
            });
    }

    /// Runs one command as the dispatcher would (values are resident in a RAM keyspace):
    /// its reply bytes and its block request.
    fn run(ks: &mut Keyspace, config: &Config, args: &[&str]) -> (String, Option<BlockRequest>) {
        let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let Handler::Keyed { run, .. } = COMMANDS[lookup(argv[0]).unwrap()].handler else {
            panic!("{} is not keyed", args[0]);
        };
        let mut reply = Reply::new(Proto::Resp2);
        let mut x = Exec {
            ks,
            db: 0,
            now_ms: 1_000_000,
            reply: &mut reply,
            config,
            block: None,
        };
        run(&mut x, &argv);
        let block = x.block.take();
        (String::from_utf8(reply.buf).unwrap(), block)
    }

    fn waits(keys: &[&str], timeout_ms: u64) -> Option<BlockRequest> {
        Some(BlockRequest {
            keys: keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
            timeout_ms,
            on_timeout: TimeoutReply::NullArray,
            argv: None,
        })
    }

    #[test]
    fn blocking_commands_wait_then_serve_when_run_again() {
        let config = Config::defaults();
        with_keyspace(|ks| {
            // Nothing to serve: no reply, a wait on each key once.
            let got = run(ks, &config, &["BLPOP", "a", "b", "a", "1.5"]);
            assert_eq!(got, (String::new(), waits(&["a", "b"], 1500)));
            let got = run(ks, &config, &["BRPOP", "a", "0"]);
            assert_eq!(got, (String::new(), waits(&["a"], 0)));
            let got = run(ks, &config, &["BLMPOP", "0.001", "2", "b", "b", "LEFT"]);
            assert_eq!(got, (String::new(), waits(&["b"], 1)));
            // The moves wait on the source only, even with a wrong-typed destination.
            run(ks, &config, &["SET", "s", "x"]);
            let got = run(ks, &config, &["BLMOVE", "a", "s", "LEFT", "RIGHT", "2"]);
            assert_eq!(got, (String::new(), waits(&["a"], 2000)));
            let got = run(ks, &config, &["BRPOPLPUSH", "a", "d", "0"]);
            assert_eq!(got, (String::new(), waits(&["a"], 0)));

            // Once a key is written, the same command serves.
            run(ks, &config, &["RPUSH", "b", "1", "2", "3"]);
            let got = run(ks, &config, &["BLPOP", "a", "b", "a", "1.5"]);
            assert_eq!(got, ("*2\r\n$1\r\nb\r\n$1\r\n1\r\n".into(), None));
            let got = run(
                ks,
                &config,
                &["BLMPOP", "0", "1", "b", "RIGHT", "COUNT", "5"],
            );
            assert_eq!(
                got,
                ("*2\r\n$1\r\nb\r\n*2\r\n$1\r\n3\r\n$1\r\n2\r\n".into(), None)
            );
            // The list was emptied, so deleted: waiting again.
            let got = run(ks, &config, &["BRPOP", "b", "0"]);
            assert_eq!(got, (String::new(), waits(&["b"], 0)));
            run(ks, &config, &["LPUSH", "a", "x"]);
            // A wrong-typed destination is an error when an element arrives, and the
            // element stays in the source.
            let got = run(ks, &config, &["BLMOVE", "a", "s", "LEFT", "RIGHT", "2"]);
            assert_eq!(got.0, format!("-{}\r\n", crate::reply::errors::WRONGTYPE));
            assert_eq!(got.1, None);
            let got = run(ks, &config, &["BRPOPLPUSH", "a", "d", "0"]);
            assert_eq!(got, ("$1\r\nx\r\n".into(), None));
            assert_eq!(run(ks, &config, &["LLEN", "a"]).0, ":0\r\n");
            assert_eq!(
                run(ks, &config, &["LRANGE", "d", "0", "-1"]).0,
                "*1\r\n$1\r\nx\r\n"
            );
            // Argument errors never wait.
            let got = run(ks, &config, &["BLPOP", "a", "-1"]);
            assert_eq!(got, ("-ERR timeout is negative\r\n".into(), None));
        });
    }
}
