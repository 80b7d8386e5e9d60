//! ZSET commands (Redis's `t_zset.c`). Each runs on the worker that owns its keys, on the
//! decoded collection the keyspace hands out (see `crate::coll`).
//!
//! Argument checks, their order and the error texts follow Redis 7.0.15: a command
//! validates every argument before it changes anything, scores are parsed with C `strtod`
//! (as Redis does, so `inf`, `-inf`, hex floats and the range limits behave the same) and
//! replied as Redis 8.0 `d2string` doubles (RESP3 `,` doubles; WITHSCORES as `[member, score]`
//! pairs; ZSCAN of a skiplist still uses `%.17g`).

use super::{coll_error, is, parse_block_timeout, parse_i64, Exec, TimeoutReply};
use crate::coll::zset::{LexItem, LexRange, ScoreRange, Zset};
use crate::coll::{Coll, Thresholds, VALUE_TYPE_SET, VALUE_TYPE_ZSET};
use crate::keyspace::Keyspace;
use crate::reply::{errors, Reply};
use skerry_resp::Proto;

const NAN_ERR: &str = "ERR resulting score is not a number (NaN)";
const RANGE_NOT_FLOAT: &str = "ERR min or max is not a float";
const RANGE_NOT_LEX: &str = "ERR min or max not valid string range item";
const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";

// ----- parsing -----

/// C `strtod` on `b` (up to its first NUL byte, as C sees the string): the value, the number
/// of bytes it used, and whether it set `ERANGE`.
fn strtod(b: &[u8]) -> (f64, usize, bool) {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let mut buf = Vec::with_capacity(end + 1);
    buf.extend_from_slice(&b[..end]);
    buf.push(0);
    let start = buf.as_ptr() as *const libc::c_char;
    let mut eptr: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: `buf` is NUL-terminated and lives across the call; strtod reads up to the NUL
    // and sets `eptr` to a position inside it; errno is the calling thread's.
    unsafe {
        *libc::__errno_location() = 0;
        let v = libc::strtod(start, &mut eptr);
        let erange = *libc::__errno_location() == libc::ERANGE;
        (v, eptr.offset_from(start) as usize, erange)
    }
}

/// A score or weight argument, as Redis's `getDoubleFromObject` accepts it: the whole
/// argument is a `strtod` number (no leading space, no NaN, no overflow to infinity or
/// underflow to zero; `inf` itself is fine).
pub fn parse_score(b: &[u8]) -> Option<f64> {
    if b.is_empty() || b[0].is_ascii_whitespace() || b[0] == 0x0b {
        return None;
    }
    let (v, used, erange) = strtod(b);
    if used != b.len() || v.is_nan() || (erange && (v.is_infinite() || v == 0.0)) {
        return None;
    }
    Some(v)
}

/// One end of a score range (`zslParseRange`): `(` makes it exclusive; the rest must be a
/// whole `strtod` number that is not NaN.
fn parse_range_end(b: &[u8]) -> Option<(f64, bool)> {
    let (ex, rest) = match b.first() {
        Some(b'(') => (true, &b[1..]),
        _ => (false, b),
    };
    let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
    let (v, used, _) = strtod(rest);
    if used != end || v.is_nan() {
        return None;
    }
    Some((v, ex))
}

/// A score range `min max`.
pub fn parse_score_range(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
    let (min, minex) = parse_range_end(min)?;
    let (max, maxex) = parse_range_end(max)?;
    Some(ScoreRange {
        min,
        max,
        minex,
        maxex,
    })
}

/// One end of a lex range (`zslParseLexRangeItem`): `+`, `-`, `[x` or `(x`.
fn parse_lex_end(b: &[u8]) -> Option<(LexItem, bool)> {
    match b.first()? {
        b'+' if b.len() == 1 => Some((LexItem::Max, true)),
        b'-' if b.len() == 1 => Some((LexItem::Min, true)),
        b'(' => Some((LexItem::Str(b[1..].to_vec()), true)),
        b'[' => Some((LexItem::Str(b[1..].to_vec()), false)),
        _ => None,
    }
}

/// A lex range `min max`.
pub fn parse_lex_range(min: &[u8], max: &[u8]) -> Option<LexRange> {
    let (min, minex) = parse_lex_end(min)?;
    let (max, maxex) = parse_lex_end(max)?;
    Some(LexRange {
        min,
        max,
        minex,
        maxex,
    })
}

/// Redis's `getRangeLongFromObjectOrReply` with a message for both a non-integer and an
/// out-of-range value.
fn parse_range_long(r: &mut Reply, b: &[u8], min: i64, msg: &str) -> Option<i64> {
    match parse_i64(b) {
        Some(v) if v >= min => Some(v),
        _ => {
            r.error(msg);
            None
        }
    }
}

fn parse_long(r: &mut Reply, b: &[u8]) -> Option<i64> {
    let v = parse_i64(b);
    if v.is_none() {
        r.error(errors::NOT_INT);
    }
    v
}

// ----- access -----

/// The zset under `key` to read: Ok(None) when missing; Err after replying WRONGTYPE (or
/// leaving a read error for the dispatcher).
pub(crate) fn zset_ref<'a>(
    ks: &'a mut Keyspace,
    reply: &mut Reply,
    db: usize,
    key: &[u8],
    now_ms: i64,
) -> Result<Option<&'a Zset>, ()> {
    match ks.coll(db, key, VALUE_TYPE_ZSET, now_ms) {
        Ok(c) => Ok(c.map(|c| c.as_zset())),
        Err(e) => {
            coll_error(reply, e);
            Err(())
        }
    }
}

/// The zset under `key` for a write command to check first whether it changes anything:
/// like [`zset_ref`] but without counting a keyspace hit or miss (Redis's write lookups do
/// not count them).
fn peek_zset<'a>(x: &'a mut Exec, key: &[u8]) -> Result<Option<&'a Zset>, ()> {
    match x.ks.peek_coll(x.db, key, VALUE_TYPE_ZSET, x.now_ms) {
        Ok(c) => Ok(c.map(|c| c.as_zset())),
        Err(e) => {
            coll_error(x.reply, e);
            Err(())
        }
    }
}

/// The zset under `key`, taken out to change (hand it back with [`put_zset`]).
fn take_zset(x: &mut Exec, key: &[u8]) -> Result<Option<Zset>, ()> {
    match x.ks.take_coll(x.db, key, VALUE_TYPE_ZSET, x.now_ms) {
        Ok(c) => Ok(c.map(|c| c.into_zset())),
        Err(e) => {
            coll_error(x.reply, e);
            Err(())
        }
    }
}

/// Stores `z` as the new version of `key` (TTL kept; an empty zset deletes the key). False
/// when the write was refused (reply nothing then).
fn put_zset(x: &mut Exec, key: &[u8], z: Zset) -> bool {
    let t = x.thresholds();
    x.ks.put_coll(x.db, key, Coll::Zset(z), &t, x.now_ms)
}

/// Adds or updates a member the way Redis's `zsetAdd` does on a zset that may still be a
/// listpack (`*listpack`): a new member converts it to a skiplist first when it would
/// outgrow the thresholds; a listpack keeps an integral score as an integer, so -0 is
/// stored as 0 there (a skiplist keeps -0).
fn zset_add(z: &mut Zset, listpack: &mut bool, m: &[u8], mut score: f64, t: &Thresholds) {
    if *listpack
        && z.score(m).is_none()
        && (z.len() + 1 > t.zset_max_listpack_entries || m.len() > t.zset_max_listpack_value)
    {
        *listpack = false;
    }
    if *listpack && score == 0.0 {
        score = 0.0;
    }
    z.insert(m, score);
}

/// Stores `z` under `dst` as a new key, whatever `dst` held before (the *STORE commands:
/// no TTL kept; an empty result deletes `dst`).
pub(crate) fn store_zset(x: &mut Exec, dst: &[u8], z: Zset) -> bool {
    if !z.is_empty() {
        if let Some(m) = x.ks.meta(x.db, dst, x.now_ms) {
            if m.expire_at_ms != 0 {
                x.ks.delete(x.db, dst, x.now_ms);
            }
        }
    }
    put_zset(x, dst, z)
}

// ----- replies -----

fn resp2(r: &Reply) -> bool {
    r.proto == Proto::Resp2
}

/// A list of members, with their scores when `withscores` (RESP2: one flat array; RESP3: an
/// array of `[member, score]` pairs).
fn reply_members<M: AsRef<[u8]>>(r: &mut Reply, items: &[(M, f64)], withscores: bool) {
    if withscores && resp2(r) {
        r.array(items.len() * 2);
    } else {
        r.array(items.len());
    }
    for (m, s) in items {
        if withscores && !resp2(r) {
            r.array(2);
        }
        r.bulk(m.as_ref());
        if withscores {
            r.double(*s);
        }
    }
}

// ----- ZADD, ZINCRBY, ZREM -----

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
pub fn zadd(x: &mut Exec, a: &[&[u8]]) {
    zadd_generic(x, a, false);
}

/// ZINCRBY key increment member
pub fn zincrby(x: &mut Exec, a: &[&[u8]]) {
    zadd_generic(x, a, true);
}

fn zadd_generic(x: &mut Exec, a: &[&[u8]], mut incr: bool) {
    let (mut nx, mut xx, mut ch, mut gt, mut lt) = (false, false, false, false, false);
    let mut i = 2;
    while i < a.len() {
        let o = a[i];
        if is(o, "nx") {
            nx = true;
        } else if is(o, "xx") {
            xx = true;
        } else if is(o, "ch") {
            ch = true;
        } else if is(o, "incr") {
            incr = true;
        } else if is(o, "gt") {
            gt = true;
        } else if is(o, "lt") {
            lt = true;
        } else {
            break;
        }
        i += 1;
    }
    let elements = a.len() - i;
    if elements == 0 || !elements.is_multiple_of(2) {
        return x.reply.error(errors::SYNTAX);
    }
    let elements = elements / 2;
    if nx && xx {
        return x
            .reply
            .error("ERR XX and NX options at the same time are not compatible");
    }
    if (nx && (gt || lt)) || (gt && lt) {
        return x
            .reply
            .error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if incr && elements > 1 {
        return x
            .reply
            .error("ERR INCR option supports a single increment-element pair");
    }
    let mut scores = Vec::with_capacity(elements);
    for j in 0..elements {
        match parse_score(a[i + 2 * j]) {
            Some(s) => scores.push(s),
            None => return x.reply.error(errors::NOT_FLOAT),
        }
    }
    // First work out what changes, on the zset as it is (a no-op writes nothing and keeps
    // the decoded zset cached), then apply the changes in order.
    let key = a[1];
    let t = x.thresholds();
    let Ok(z) = peek_zset(x, key) else {
        return;
    };
    let mut planned: hashbrown::HashMap<&[u8], f64> = hashbrown::HashMap::new();
    let mut changes: Vec<(&[u8], f64)> = Vec::new();
    let (mut added, mut updated, mut processed) = (0i64, 0i64, 0i64);
    let mut score = 0.0;
    for (j, &s) in scores.iter().enumerate() {
        let m = a[i + 2 * j + 1];
        match planned
            .get(m)
            .copied()
            .or_else(|| z.and_then(|z| z.score(m)))
        {
            Some(cur) => {
                if nx {
                    continue;
                }
                let mut new = s;
                if incr {
                    new += cur;
                    if new.is_nan() {
                        return x.reply.error(NAN_ERR);
                    }
                }
                if (lt && new >= cur) || (gt && new <= cur) {
                    continue;
                }
                processed += 1;
                score = new;
                if new != cur {
                    changes.push((m, new));
                    planned.insert(m, new);
                    updated += 1;
                }
            }
            None => {
                if xx {
                    continue;
                }
                changes.push((m, s));
                planned.insert(m, s);
                added += 1;
                processed += 1;
                score = s;
            }
        }
    }
    // Redis 8.0 picks the encoding from the request's size first (`zsetTypeCreate` /
    // `zsetTypeMaybeConvert`): more pairs than zset-max-listpack-entries make a new zset a
    // skiplist from the start (so a -0 score stays -0) and convert an existing listpack even
    // when nothing else changes.
    // A new zset also starts as a skiplist when its first member is longer than
    // zset-max-listpack-value (`zsetTypeCreate(elements, first member's length)`).
    let presize = elements > t.zset_max_listpack_entries && z.is_none_or(|z| !z.big);
    let long_first = z.is_none() && a[i + 1].len() > t.zset_max_listpack_value;
    if !changes.is_empty() || (presize && z.is_some()) {
        let mut z = match take_zset(x, key) {
            Ok(z) => z.unwrap_or_default(),
            Err(()) => return,
        };
        if presize || long_first {
            z.big = true;
        }
        let mut listpack = !z.big;
        for (m, s) in changes {
            zset_add(&mut z, &mut listpack, m, s, &t);
        }
        if !put_zset(x, key, z) {
            return;
        }
    }
    if incr {
        if processed > 0 {
            x.reply.double(score);
        } else {
            x.reply.null();
        }
    } else {
        x.reply.int(if ch { added + updated } else { added });
    }
}

/// ZREM key member [member ...]
pub fn zrem(x: &mut Exec, a: &[&[u8]]) {
    match peek_zset(x, a[1]) {
        Ok(Some(z)) if a[2..].iter().any(|m| z.score(m).is_some()) => {}
        Ok(_) => return x.reply.int(0),
        Err(()) => return,
    }
    let mut z = match take_zset(x, a[1]) {
        Ok(Some(z)) => z,
        Ok(None) => return x.reply.int(0),
        Err(()) => return,
    };
    let mut deleted = 0;
    for m in &a[2..] {
        deleted += z.remove(m) as i64;
        if z.is_empty() {
            break;
        }
    }
    if deleted > 0 && !put_zset(x, a[1], z) {
        return;
    }
    x.reply.int(deleted);
}

// ----- reads by member -----

/// ZCARD key
pub fn zcard(x: &mut Exec, a: &[&[u8]]) {
    if let Ok(z) = zset_ref(x.ks, x.reply, x.db, a[1], x.now_ms) {
        x.reply.int(z.map_or(0, |z| z.len() as i64));
    }
}

/// ZSCORE key member
pub fn zscore(x: &mut Exec, a: &[&[u8]]) {
    if let Ok(z) = zset_ref(x.ks, x.reply, x.db, a[1], x.now_ms) {
        match z.and_then(|z| z.score(a[2])) {
            Some(s) => x.reply.double(s),
            None => x.reply.null(),
        }
    }
}

/// ZMSCORE key member [member ...]
pub fn zmscore(x: &mut Exec, a: &[&[u8]]) {
    let Ok(z) = zset_ref(x.ks, x.reply, x.db, a[1], x.now_ms) else {
        return;
    };
    x.reply.array(a.len() - 2);
    for m in &a[2..] {
        match z.and_then(|z| z.score(m)) {
            Some(s) => x.reply.double(s),
            None => x.reply.null(),
        }
    }
}

/// ZRANK key member [WITHSCORE]
pub fn zrank(x: &mut Exec, a: &[&[u8]]) {
    zrank_generic(x, a, false);
}

/// ZREVRANK key member [WITHSCORE]
pub fn zrevrank(x: &mut Exec, a: &[&[u8]]) {
    zrank_generic(x, a, true);
}

fn zrank_generic(x: &mut Exec, a: &[&[u8]], rev: bool) {
    if a.len() > 4 {
        let name = if rev { "zrevrank" } else { "zrank" };
        return x.reply.error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }
    let withscore = match a.get(3) {
        None => false,
        Some(o) if is(o, "withscore") => true,
        Some(_) => return x.reply.error(errors::SYNTAX),
    };
    let z = match zset_ref(x.ks, x.reply, x.db, a[1], x.now_ms) {
        Ok(Some(z)) => z,
        Ok(None) if withscore => return x.reply.null_array(),
        Ok(None) => return x.reply.null(),
        Err(()) => return,
    };
    let Some(r) = z.rank(a[2]) else {
        return if withscore {
            x.reply.null_array()
        } else {
            x.reply.null()
        };
    };
    let rank = if rev { z.len() - 1 - r } else { r };
    if withscore {
        let score = z.score(a[2]).unwrap_or(0.0);
        x.reply.array(2);
        x.reply.int(rank as i64);
        x.reply.double(score);
    } else {
        x.reply.int(rank as i64);
    }
}

// ----- counts -----

/// ZCOUNT key min max
pub fn zcount(x: &mut Exec, a: &[&[u8]]) {
    let Some(r) = parse_score_range(a[2], a[3]) else {
        return x.reply.error(RANGE_NOT_FLOAT);
    };
    if let Ok(z) = zset_ref(x.ks, x.reply, x.db, a[1], x.now_ms) {
        x.reply
            .int(z.map_or(0, |z| z.score_range(&r).count() as i64));
    }
}

/// ZLEXCOUNT key min max
pub fn zlexcount(x: &mut Exec, a: &[&[u8]]) {
    let Some(r) = parse_lex_range(a[2], a[3]) else {
        return x.reply.error(RANGE_NOT_LEX);
    };
    if let Ok(z) = zset_ref(x.ks, x.reply, x.db, a[1], x.now_ms) {
        x.reply.int(z.map_or(0, |z| z.lex_span(&r).1 as i64));
    }
}

// ----- ranges -----

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum RangeType {
    Auto,
    Rank,
    Score,
    Lex,
}

/// The parsed range of a ZRANGE-family command.
enum Range {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// Normalizes rank indexes as Redis does (negative from the end); None when empty.
fn rank_span(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let llen = len as i64;
    let mut start = if start < 0 { llen + start } else { start };
    let mut end = if end < 0 { llen + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= llen {
        return None;
    }
    if end >= llen {
        end = llen - 1;
    }
    Some((start as usize, (end - start + 1) as usize))
}

/// The members of `z` in `range`, in the order asked, after `offset` and up to `limit`
/// (negative: no limit; a negative offset gives nothing, as in Redis).
fn collect_range<'a>(
    z: &'a Zset,
    range: &Range,
    rev: bool,
    offset: i64,
    limit: i64,
) -> Vec<(&'a [u8], f64)> {
    let len = z.len();
    let (skip, take) = if offset < 0 {
        (usize::MAX, 0)
    } else {
        (
            offset as usize,
            if limit < 0 {
                usize::MAX
            } else {
                limit as usize
            },
        )
    };
    match range {
        Range::Rank(s, e) => match rank_span(*s, *e, len) {
            None => Vec::new(),
            Some((start, n)) if rev => z.iter().rev().skip(start).take(n).collect(),
            Some((start, n)) => z.iter().skip(start).take(n).collect(),
        },
        Range::Score(r) => {
            if offset < 0 || (offset > 0 && offset as usize >= len) {
                return Vec::new();
            }
            if rev {
                z.score_range(r).rev().skip(skip).take(take).collect()
            } else {
                z.score_range(r).skip(skip).take(take).collect()
            }
        }
        Range::Lex(r) => {
            if offset < 0 {
                return Vec::new();
            }
            if rev {
                let (hi, n) = z.lex_span_rev(r);
                z.iter()
                    .rev()
                    .skip(len.saturating_sub(hi + 1))
                    .take(n)
                    .skip(skip)
                    .take(take)
                    .collect()
            } else {
                let (lo, n) = z.lex_span(r);
                z.iter().skip(lo).take(n).skip(skip).take(take).collect()
            }
        }
    }
}

/// Redis's `zrangeGenericCommand`: the source key at `a[src]`, then min, max and options;
/// `store` for ZRANGESTORE (destination `a[1]`).
fn zrange_generic(
    x: &mut Exec,
    a: &[&[u8]],
    src: usize,
    store: bool,
    mut rt: RangeType,
    mut rev: Option<bool>,
) {
    let (mut minidx, mut maxidx) = (src + 1, src + 2);
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut j = src + 3;
    while j < a.len() {
        let left = a.len() - j - 1;
        if !store && is(a[j], "withscores") {
            withscores = true;
        } else if is(a[j], "limit") && left >= 2 {
            let Some(o) = parse_long(x.reply, a[j + 1]) else {
                return;
            };
            let Some(l) = parse_long(x.reply, a[j + 2]) else {
                return;
            };
            offset = o;
            limit = l;
            j += 2;
        } else if rev.is_none() && is(a[j], "rev") {
            rev = Some(true);
        } else if rt == RangeType::Auto && is(a[j], "bylex") {
            rt = RangeType::Lex;
        } else if rt == RangeType::Auto && is(a[j], "byscore") {
            rt = RangeType::Score;
        } else {
            return x.reply.error(errors::SYNTAX);
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    if rt == RangeType::Auto {
        rt = RangeType::Rank;
    }
    if limit != -1 && rt == RangeType::Rank {
        return x.reply.error(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if withscores && rt == RangeType::Lex {
        return x
            .reply
            .error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    if rev && rt != RangeType::Rank {
        std::mem::swap(&mut minidx, &mut maxidx);
    }
    let range = match rt {
        RangeType::Score => match parse_score_range(a[minidx], a[maxidx]) {
            Some(r) => Range::Score(r),
            None => return x.reply.error(RANGE_NOT_FLOAT),
        },
        RangeType::Lex => match parse_lex_range(a[minidx], a[maxidx]) {
            Some(r) => Range::Lex(r),
            None => return x.reply.error(RANGE_NOT_LEX),
        },
        _ => {
            let Some(s) = parse_long(x.reply, a[minidx]) else {
                return;
            };
            let Some(e) = parse_long(x.reply, a[maxidx]) else {
                return;
            };
            Range::Rank(s, e)
        }
    };
    let t = x.thresholds();
    let z = match zset_ref(x.ks, x.reply, x.db, a[src], x.now_ms) {
        Ok(z) => z,
        Err(()) => return,
    };
    if !store {
        match z {
            Some(z) => {
                let items = collect_range(z, &range, rev, offset, limit);
                reply_members(x.reply, &items, withscores);
            }
            None => x.reply.array(0),
        }
        return;
    }
    let mut out = Zset::default();
    if let Some(z) = z {
        let items = collect_range(z, &range, rev, offset, limit);
        // Redis starts a skiplist when a rank range is known to be too long, else a
        // listpack that converts as it grows.
        let mut listpack =
            !matches!(range, Range::Rank(..)) || items.len() <= t.zset_max_listpack_entries;
        for (m, s) in items {
            zset_add(&mut out, &mut listpack, m, s, &t);
        }
    }
    let n = out.len() as i64;
    if store_zset(x, a[1], out) {
        x.reply.int(n);
    }
}

/// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]
pub fn zrange(x: &mut Exec, a: &[&[u8]]) {
    zrange_generic(x, a, 1, false, RangeType::Auto, None);
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
pub fn zrangestore(x: &mut Exec, a: &[&[u8]]) {
    zrange_generic(x, a, 2, true, RangeType::Auto, None);
}

/// ZREVRANGE key start stop [WITHSCORES]
pub fn zrevrange(x: &mut Exec, a: &[&[u8]]) {
    zrange_generic(x, a, 1, false, RangeType::Rank, Some(true));
}

/// ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]
pub fn zrangebyscore(x: &mut Exec, a: &[&[u8]]) {
    zrange_generic(x, a, 1, false, RangeType::Score, Some(false));
}

/// ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]
pub fn zrevrangebyscore(x: &mut Exec, a: &[&[u8]]) {
    zrange_generic(x, a, 1, false, RangeType::Score, Some(true));
}

/// ZRANGEBYLEX key min max [LIMIT offset count]
pub fn zrangebylex(x: &mut Exec, a: &[&[u8]]) {
    zrange_generic(x, a, 1, false, RangeType::Lex, Some(false));
}

/// ZREVRANGEBYLEX key max min [LIMIT offset count]
pub fn zrevrangebylex(x: &mut Exec, a: &[&[u8]]) {
    zrange_generic(x, a, 1, false, RangeType::Lex, Some(true));
}

// ----- ZREMRANGEBY* -----

fn zremrange_generic(x: &mut Exec, a: &[&[u8]], rt: RangeType) {
    let range = match rt {
        RangeType::Score => match parse_score_range(a[2], a[3]) {
            Some(r) => Range::Score(r),
            None => return x.reply.error(RANGE_NOT_FLOAT),
        },
        RangeType::Lex => match parse_lex_range(a[2], a[3]) {
            Some(r) => Range::Lex(r),
            None => return x.reply.error(RANGE_NOT_LEX),
        },
        _ => {
            let Some(s) = parse_long(x.reply, a[2]) else {
                return;
            };
            let Some(e) = parse_long(x.reply, a[3]) else {
                return;
            };
            Range::Rank(s, e)
        }
    };
    let doomed: Vec<Vec<u8>> = match peek_zset(x, a[1]) {
        Ok(Some(z)) => collect_range(z, &range, false, 0, -1)
            .into_iter()
            .map(|(m, _)| m.to_vec())
            .collect(),
        Ok(None) => Vec::new(),
        Err(()) => return,
    };
    if doomed.is_empty() {
        return x.reply.int(0);
    }
    let mut z = match take_zset(x, a[1]) {
        Ok(Some(z)) => z,
        Ok(None) => return x.reply.int(0),
        Err(()) => return,
    };
    for m in &doomed {
        z.remove(m);
    }
    if !put_zset(x, a[1], z) {
        return;
    }
    x.reply.int(doomed.len() as i64);
}

/// ZREMRANGEBYRANK key start stop
pub fn zremrangebyrank(x: &mut Exec, a: &[&[u8]]) {
    zremrange_generic(x, a, RangeType::Rank);
}

/// ZREMRANGEBYSCORE key min max
pub fn zremrangebyscore(x: &mut Exec, a: &[&[u8]]) {
    zremrange_generic(x, a, RangeType::Score);
}

/// ZREMRANGEBYLEX key min max
pub fn zremrangebylex(x: &mut Exec, a: &[&[u8]]) {
    zremrange_generic(x, a, RangeType::Lex);
}

// ----- pops -----

/// How a pop replies (Redis's `emitkey` and `use_nested_array`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum PopReply {
    /// `[member, score, ...]` (ZPOPMIN/ZPOPMAX in RESP2, or without COUNT).
    Flat,
    /// `[[member, score], ...]` (ZPOPMIN/ZPOPMAX with COUNT in RESP3).
    Nested,
    /// `[key, member, score]` (BZPOPMIN/BZPOPMAX).
    KeyFlat,
    /// `[key, [[member, score], ...]]` (ZMPOP/BZMPOP).
    KeyNested,
}

/// Pops up to `count` members (-1: one) from the zset `z` under `key`, stores what is left
/// and replies. `z` is not empty.
fn pop_from(x: &mut Exec, key: &[u8], mut z: Zset, max: bool, count: i64, style: PopReply) {
    let count = if count == -1 { 1 } else { count as usize };
    let n = count.min(z.len());
    let mut popped = Vec::with_capacity(n);
    for _ in 0..n {
        popped.push(z.pop(max).expect("counted"));
    }
    if !put_zset(x, key, z) {
        return;
    }
    let r = &mut *x.reply;
    match style {
        PopReply::Flat => r.array(n * 2),
        PopReply::Nested => r.array(n),
        PopReply::KeyFlat => {
            r.array(n * 2 + 1);
            r.bulk(key);
        }
        PopReply::KeyNested => {
            r.array(2);
            r.bulk(key);
            r.array(n);
        }
    }
    for (m, s) in popped {
        if matches!(style, PopReply::Nested | PopReply::KeyNested) {
            r.array(2);
        }
        r.bulk(&m);
        r.double(s);
    }
}

/// Redis's `genericZpopCommand`: pops from the first of `keys` that exists.
fn zpop_generic(
    x: &mut Exec,
    keys: &[&[u8]],
    max: bool,
    count: i64,
    style: PopReply,
    nil_when_empty: bool,
) {
    for &key in keys {
        match peek_zset(x, key) {
            Ok(Some(_)) => {
                if count == 0 {
                    return x.reply.array(0);
                }
                match take_zset(x, key) {
                    Ok(Some(z)) => pop_from(x, key, z, max, count, style),
                    Ok(None) => break,
                    Err(()) => {}
                }
                return;
            }
            Ok(None) => continue,
            Err(()) => return,
        }
    }
    if nil_when_empty {
        x.reply.null_array();
    } else {
        x.reply.array(0);
    }
}

fn zpop_min_max(x: &mut Exec, a: &[&[u8]], max: bool) {
    if a.len() > 3 {
        return x.reply.error(errors::SYNTAX);
    }
    let mut count = -1;
    if a.len() == 3 {
        match parse_range_long(x.reply, a[2], 0, NOT_POSITIVE) {
            Some(c) => count = c,
            None => return,
        }
    }
    let style = if !resp2(x.reply) && count != -1 {
        PopReply::Nested
    } else {
        PopReply::Flat
    };
    zpop_generic(x, &a[1..2], max, count, style, false);
}

/// ZPOPMIN key [count]
pub fn zpopmin(x: &mut Exec, a: &[&[u8]]) {
    zpop_min_max(x, a, false);
}

/// ZPOPMAX key [count]
pub fn zpopmax(x: &mut Exec, a: &[&[u8]]) {
    zpop_min_max(x, a, true);
}

/// Redis's `blockingGenericZpopCommand`: serves from the first non-empty key now, or makes
/// the client wait for one of `keys`.
fn blocking_zpop(
    x: &mut Exec,
    keys: &[&[u8]],
    max: bool,
    timeout_arg: &[u8],
    count: i64,
    style: PopReply,
) {
    let Some(timeout_ms) = parse_block_timeout(x.reply, timeout_arg) else {
        return;
    };
    for &key in keys {
        match peek_zset(x, key) {
            Ok(Some(z)) if !z.is_empty() => {
                match take_zset(x, key) {
                    Ok(Some(z)) => pop_from(x, key, z, max, count, style),
                    Ok(None) => break,
                    Err(()) => {}
                }
                return;
            }
            Ok(_) => continue,
            Err(()) => return,
        }
    }
    x.block_on(keys, timeout_ms, TimeoutReply::NullArray);
}

/// BZPOPMIN key [key ...] timeout
pub fn bzpopmin(x: &mut Exec, a: &[&[u8]]) {
    let n = a.len();
    blocking_zpop(x, &a[1..n - 1], false, a[n - 1], -1, PopReply::KeyFlat);
}

/// BZPOPMAX key [key ...] timeout
pub fn bzpopmax(x: &mut Exec, a: &[&[u8]]) {
    let n = a.len();
    blocking_zpop(x, &a[1..n - 1], true, a[n - 1], -1, PopReply::KeyFlat);
}

/// Parses `numkeys key... MIN|MAX [COUNT count]` from `a[numkeys_idx]`: (keys, max, count).
fn parse_mpop<'a>(
    r: &mut Reply,
    a: &[&'a [u8]],
    numkeys_idx: usize,
) -> Option<(Vec<&'a [u8]>, bool, i64)> {
    let numkeys = parse_range_long(r, a[numkeys_idx], 1, "ERR numkeys should be greater than 0")?;
    let where_idx = (numkeys_idx as u64).saturating_add(numkeys as u64 + 1);
    if where_idx >= a.len() as u64 {
        r.error(errors::SYNTAX);
        return None;
    }
    let where_idx = where_idx as usize;
    let max = if is(a[where_idx], "min") {
        false
    } else if is(a[where_idx], "max") {
        true
    } else {
        r.error(errors::SYNTAX);
        return None;
    };
    let mut count = -1;
    let mut j = where_idx + 1;
    while j < a.len() {
        let more = a.len() - 1 - j;
        if count == -1 && is(a[j], "count") && more > 0 {
            j += 1;
            count = parse_range_long(r, a[j], 1, "ERR count should be greater than 0")?;
        } else {
            r.error(errors::SYNTAX);
            return None;
        }
        j += 1;
    }
    if count == -1 {
        count = 1;
    }
    Some((a[numkeys_idx + 1..where_idx].to_vec(), max, count))
}

/// Key positions of `numkeys key... MIN|MAX ...` with numkeys at `at`: none unless a
/// MIN|MAX position follows the keys (otherwise the command is a syntax error, which it
/// then replies without its arguments being routed as keys).
fn mpop_keys(argv: &[&[u8]], at: usize) -> smallvec::SmallVec<[usize; 8]> {
    let mut out = smallvec::SmallVec::new();
    let Some(n) = argv.get(at).and_then(|a| parse_i64(a)) else {
        return out;
    };
    if n <= 0 || n >= argv.len().saturating_sub(at + 1) as i64 {
        return out;
    }
    out.extend(at + 1..at + 1 + n as usize);
    out
}

/// Key positions of `numkeys key...` with numkeys at `at` (none when it does not parse or
/// does not fit; the handler then replies Redis's error). Like the shared
/// `keys_numkeys_at_1`, but safe from overflow with a huge numkeys.
fn numkeys_keys(argv: &[&[u8]], at: usize) -> smallvec::SmallVec<[usize; 8]> {
    let mut out = smallvec::SmallVec::new();
    let Some(n) = argv.get(at).and_then(|a| parse_i64(a)) else {
        return out;
    };
    if n <= 0 || n > argv.len().saturating_sub(at + 1) as i64 {
        return out;
    }
    out.extend(at + 1..at + 1 + n as usize);
    out
}

/// Key finder of ZUNION, ZINTER, ZINTERCARD and ZDIFF: `numkeys key...`.
pub fn keys_numkeys(argv: &[&[u8]]) -> smallvec::SmallVec<[usize; 8]> {
    numkeys_keys(argv, 1)
}

/// Key finder of ZUNIONSTORE, ZINTERSTORE and ZDIFFSTORE: `destination numkeys key...`.
pub fn keys_store_numkeys(argv: &[&[u8]]) -> smallvec::SmallVec<[usize; 8]> {
    let mut out = numkeys_keys(argv, 2);
    if !out.is_empty() {
        out.insert(0, 1);
    }
    out
}

/// Key finder of ZMPOP (see [`mpop_keys`]).
pub fn keys_zmpop(argv: &[&[u8]]) -> smallvec::SmallVec<[usize; 8]> {
    mpop_keys(argv, 1)
}

/// Key finder of BZMPOP (see [`mpop_keys`]).
pub fn keys_bzmpop(argv: &[&[u8]]) -> smallvec::SmallVec<[usize; 8]> {
    mpop_keys(argv, 2)
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]
pub fn zmpop(x: &mut Exec, a: &[&[u8]]) {
    let Some((keys, max, count)) = parse_mpop(x.reply, a, 1) else {
        return;
    };
    zpop_generic(x, &keys, max, count, PopReply::KeyNested, true);
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]
pub fn bzmpop(x: &mut Exec, a: &[&[u8]]) {
    let Some((keys, max, count)) = parse_mpop(x.reply, a, 2) else {
        return;
    };
    blocking_zpop(x, &keys, max, a[1], count, PopReply::KeyNested);
}

// ----- ZRANDMEMBER -----

/// Most members one ZRANDMEMBER with a negative count replies with (Redis has no limit but
/// the memory of the reply; this keeps a runaway count from exhausting the server's, as
/// HRANDFIELD does).
const ZRANDMEMBER_MAX_REPEATS: u64 = 1 << 24;

/// ZRANDMEMBER key [count [WITHSCORES]]
pub fn zrandmember(x: &mut Exec, a: &[&[u8]]) {
    use rand::Rng;
    if a.len() >= 3 {
        let Some(l) = parse_long(x.reply, a[2]) else {
            return;
        };
        if l == i64::MIN {
            return x.reply.error(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            );
        }
        let withscores = a.len() == 4;
        if a.len() > 4 || (withscores && !is(a[3], "withscores")) {
            return x.reply.error(errors::SYNTAX);
        }
        if withscores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
            return x.reply.error("ERR value is out of range");
        }
        if l < 0 && l.unsigned_abs() > ZRANDMEMBER_MAX_REPEATS {
            return x.reply.error("ERR value is out of range");
        }
        return zrandmember_count(x, a[1], l, withscores);
    }
    let z = match zset_ref(x.ks, x.reply, x.db, a[1], x.now_ms) {
        Ok(Some(z)) => z,
        Ok(None) => return x.reply.null(),
        Err(()) => return,
    };
    let i = rand::rng().random_range(0..z.len());
    let (m, _) = z.iter().nth(i).expect("in range");
    x.reply.bulk(m);
}

fn zrandmember_count(x: &mut Exec, key: &[u8], l: i64, withscores: bool) {
    use rand::Rng;
    let z = match zset_ref(x.ks, x.reply, x.db, key, x.now_ms) {
        Ok(Some(z)) => z,
        Ok(None) => return x.reply.array(0),
        Err(()) => return,
    };
    let size = z.len();
    let (count, uniq) = if l >= 0 {
        (l as u64, true)
    } else {
        (l.unsigned_abs(), false)
    };
    if count == 0 {
        return x.reply.array(0);
    }
    let r = &mut *x.reply;
    let mut rng = rand::rng();
    let all: Vec<(&[u8], f64)> = z.iter().collect();
    let emit = |r: &mut Reply, (m, s): (&[u8], f64)| {
        if withscores && !resp2(r) {
            r.array(2);
        }
        r.bulk(m);
        if withscores {
            r.double(s);
        }
    };
    // Repeats allowed (negative count), or a single member.
    if !uniq || count == 1 {
        let n = count as usize;
        r.array(if withscores && resp2(r) { n * 2 } else { n });
        for _ in 0..n {
            emit(r, all[rng.random_range(0..size)]);
        }
        return;
    }
    let n = (count as usize).min(size);
    r.array(if withscores && resp2(r) { n * 2 } else { n });
    if n == size {
        for it in all {
            emit(r, it);
        }
        return;
    }
    // Distinct members, in the zset's order (as Redis's listpack sampling returns them).
    let mut picked = rand::seq::index::sample(&mut rng, size, n).into_vec();
    picked.sort_unstable();
    for i in picked {
        emit(r, all[i]);
    }
}

// ----- ZUNION, ZINTER, ZDIFF (and *STORE, ZINTERCARD) -----

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

fn aggregate(target: &mut f64, val: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += val;
            // +inf + -inf: Redis's convention is 0.
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if val < *target {
                *target = val;
            }
        }
        Aggregate::Max => {
            if val > *target {
                *target = val;
            }
        }
    }
}

/// A source collection of a set operation: a zset, or a set whose members score 1.
fn src_score(c: &Coll, m: &[u8]) -> Option<f64> {
    match c {
        Coll::Zset(z) => z.score(m),
        Coll::Set(s) => s.contains(m).then_some(1.0),
        _ => None,
    }
}

fn src_items(c: &Coll) -> Vec<(Vec<u8>, f64)> {
    match c {
        Coll::Zset(z) => z.iter().map(|(m, s)| (m.to_vec(), s)).collect(),
        Coll::Set(s) => s.iter().map(|m| (m.to_vec(), 1.0)).collect(),
        _ => Vec::new(),
    }
}

/// The source under `key` (a zset or a set; None when missing). The caller checked types.
fn src_coll<'a>(x: &'a mut Exec, key: &[u8], vt: u8) -> Option<&'a Coll> {
    if vt == 0 {
        return None;
    }
    // (Already looked up once, which counted the keyspace hit.)
    x.ks.peek_coll(x.db, key, vt, x.now_ms).ok().flatten()
}

/// Redis's `zunionInterDiffGenericCommand`: `numkeys` at `a[numkeys_idx]`; `dst` for the
/// *STORE forms; `card_only` for ZINTERCARD.
fn zsetop_generic(
    x: &mut Exec,
    a: &[&[u8]],
    numkeys_idx: usize,
    dst: Option<&[u8]>,
    op: SetOp,
    card_only: bool,
    name: &str,
) {
    let Some(setnum) = parse_long(x.reply, a[numkeys_idx]) else {
        return;
    };
    if setnum < 1 {
        return x.reply.error(&format!(
            "ERR at least 1 input key is needed for '{name}' command"
        ));
    }
    if setnum > (a.len() - (numkeys_idx + 1)) as i64 {
        return x.reply.error(errors::SYNTAX);
    }
    let setnum = setnum as usize;
    let keys = &a[numkeys_idx + 1..numkeys_idx + 1 + setnum];
    // Types first (WRONGTYPE before any option error), and sizes.
    let mut types = Vec::with_capacity(setnum);
    let mut lens = Vec::with_capacity(setnum);
    for &k in keys {
        match x.ks.meta(x.db, k, x.now_ms) {
            None => {
                // (Counts the keyspace miss a read lookup counts in Redis.)
                let _ = x.ks.coll(x.db, k, VALUE_TYPE_ZSET, x.now_ms);
                types.push(0u8);
                lens.push(0usize);
            }
            Some(m) if m.value_type == VALUE_TYPE_ZSET || m.value_type == VALUE_TYPE_SET => {
                match x.ks.coll(x.db, k, m.value_type, x.now_ms) {
                    Ok(c) => {
                        types.push(m.value_type);
                        lens.push(c.map_or(0, |c| c.len()));
                    }
                    Err(e) => return coll_error(x.reply, e),
                }
            }
            Some(_) => {
                // (Counts the keyspace hit, then replies WRONGTYPE.)
                if let Err(e) = x.ks.coll(x.db, k, VALUE_TYPE_ZSET, x.now_ms) {
                    return coll_error(x.reply, e);
                }
                return x.reply.error(errors::WRONGTYPE);
            }
        }
    }
    let mut weights = vec![1.0f64; setnum];
    let mut how = Aggregate::Sum;
    let mut withscores = false;
    let mut limit = 0i64;
    let mut j = numkeys_idx + 1 + setnum;
    while j < a.len() {
        let remaining = a.len() - j;
        if op != SetOp::Diff && !card_only && remaining > setnum && is(a[j], "weights") {
            j += 1;
            for w in weights.iter_mut() {
                match parse_score(a[j]) {
                    Some(v) => *w = v,
                    None => return x.reply.error("ERR weight value is not a float"),
                }
                j += 1;
            }
        } else if op != SetOp::Diff && !card_only && remaining >= 2 && is(a[j], "aggregate") {
            how = if is(a[j + 1], "sum") {
                Aggregate::Sum
            } else if is(a[j + 1], "min") {
                Aggregate::Min
            } else if is(a[j + 1], "max") {
                Aggregate::Max
            } else {
                return x.reply.error(errors::SYNTAX);
            };
            j += 2;
        } else if dst.is_none() && !card_only && is(a[j], "withscores") {
            withscores = true;
            j += 1;
        } else if card_only && remaining >= 2 && is(a[j], "limit") {
            match parse_range_long(x.reply, a[j + 1], 0, "ERR LIMIT can't be negative") {
                Some(l) => limit = l,
                None => return,
            }
            j += 2;
        } else {
            return x.reply.error(errors::SYNTAX);
        }
    }
    let mut order: Vec<usize> = (0..setnum).collect();
    if op != SetOp::Diff {
        order.sort_by_key(|&i| lens[i]);
    }
    let weighted = |s: f64, w: f64| {
        let v = w * s;
        if v.is_nan() {
            0.0
        } else {
            v
        }
    };
    let mut result: Vec<(Vec<u8>, f64)> = Vec::new();
    match op {
        SetOp::Inter => {
            let first = order[0];
            if let Some(c) = src_coll(x, keys[first], types[first]).filter(|_| lens[first] > 0) {
                result = src_items(c)
                    .into_iter()
                    .map(|(m, s)| (m, weighted(s, weights[first])))
                    .collect();
                for &i in &order[1..] {
                    let Some(c) = src_coll(x, keys[i], types[i]) else {
                        result.clear();
                        break;
                    };
                    result.retain_mut(|(m, score)| match src_score(c, m) {
                        Some(v) => {
                            aggregate(score, v * weights[i], how);
                            true
                        }
                        None => false,
                    });
                }
            }
        }
        SetOp::Union => {
            let mut acc: indexmap::IndexMap<Vec<u8>, f64, foldhash::fast::RandomState> =
                Default::default();
            for &i in &order {
                if lens[i] == 0 {
                    continue;
                }
                let Some(c) = src_coll(x, keys[i], types[i]) else {
                    continue;
                };
                let mut add = |m: &[u8], s: f64| {
                    let v = weighted(s, weights[i]);
                    match acc.get_mut(m) {
                        Some(t) => aggregate(t, v, how),
                        None => {
                            acc.insert(m.to_vec(), v);
                        }
                    }
                };
                match c {
                    Coll::Zset(z) => z.iter().for_each(|(m, s)| add(m, s)),
                    Coll::Set(s) => s.iter().for_each(|m| add(m, 1.0)),
                    _ => {}
                }
            }
            result = acc.into_iter().collect();
        }
        SetOp::Diff => {
            let first = if lens[0] > 0 && !keys[1..].contains(&keys[0]) {
                src_coll(x, keys[0], types[0])
            } else {
                None
            };
            if let Some(c) = first {
                result = src_items(c);
                for i in 1..setnum {
                    if lens[i] == 0 {
                        continue;
                    }
                    let Some(c) = src_coll(x, keys[i], types[i]) else {
                        continue;
                    };
                    result.retain(|(m, _)| src_score(c, m).is_none());
                }
            }
        }
    }
    if card_only {
        let n = result.len() as i64;
        return x.reply.int(if limit > 0 { n.min(limit) } else { n });
    }
    let mut out = Zset::default();
    for (m, s) in &result {
        out.insert(m, *s);
    }
    match dst {
        Some(d) => {
            // Built as a skiplist, then turned into a listpack when small enough.
            out.note_encoding(&x.thresholds());
            if !out.big {
                out.unsign_zeros();
            }
            let n = out.len() as i64;
            if store_zset(x, d, out) {
                x.reply.int(n);
            }
        }
        None => {
            let items: Vec<(&[u8], f64)> = out.iter().collect();
            reply_members(x.reply, &items, withscores);
        }
    }
}

/// ZUNION numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
pub fn zunion(x: &mut Exec, a: &[&[u8]]) {
    zsetop_generic(x, a, 1, None, SetOp::Union, false, "zunion");
}

/// ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE ...]
pub fn zunionstore(x: &mut Exec, a: &[&[u8]]) {
    zsetop_generic(x, a, 2, Some(a[1]), SetOp::Union, false, "zunionstore");
}

/// ZINTER numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
pub fn zinter(x: &mut Exec, a: &[&[u8]]) {
    zsetop_generic(x, a, 1, None, SetOp::Inter, false, "zinter");
}

/// ZINTERSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE ...]
pub fn zinterstore(x: &mut Exec, a: &[&[u8]]) {
    zsetop_generic(x, a, 2, Some(a[1]), SetOp::Inter, false, "zinterstore");
}

/// ZINTERCARD numkeys key [key ...] [LIMIT limit]
pub fn zintercard(x: &mut Exec, a: &[&[u8]]) {
    zsetop_generic(x, a, 1, None, SetOp::Inter, true, "zintercard");
}

/// ZDIFF numkeys key [key ...] [WITHSCORES]
pub fn zdiff(x: &mut Exec, a: &[&[u8]]) {
    zsetop_generic(x, a, 1, None, SetOp::Diff, false, "zdiff");
}

/// ZDIFFSTORE destination numkeys key [key ...]
pub fn zdiffstore(x: &mut Exec, a: &[&[u8]]) {
    zsetop_generic(x, a, 2, Some(a[1]), SetOp::Diff, false, "zdiffstore");
}

// ----- ZSCAN -----

/// ZSCAN key cursor [MATCH pattern] [COUNT count]
pub fn zscan(x: &mut Exec, a: &[&[u8]]) {
    let Some(cursor) = super::parse_scan_cursor(a[2]) else {
        return x.reply.error("ERR invalid cursor");
    };
    let z = match zset_ref(x.ks, x.reply, x.db, a[1], x.now_ms) {
        Ok(Some(z)) => z,
        Ok(None) => {
            x.reply.array(2);
            x.reply.bulk(b"0");
            x.reply.array(0);
            return;
        }
        Err(()) => return,
    };
    let mut count = 10usize;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 3;
    while i < a.len() {
        let left = a.len() - i;
        if is(a[i], "count") && left >= 2 {
            match parse_i64(a[i + 1]) {
                Some(n) if n >= 1 => count = n as usize,
                Some(_) => return x.reply.error(errors::SYNTAX),
                None => return x.reply.error(errors::NOT_INT),
            }
        } else if is(a[i], "match") && left >= 2 {
            pattern = Some(a[i + 1]).filter(|p| *p != b"*");
        } else {
            return x.reply.error(errors::SYNTAX);
        }
        i += 2;
    }
    // A listpack-encoded zset is returned whole, as Redis does.
    let (next, items) = if z.big {
        crate::coll::scan_by_hash(z.iter(), |(m, _)| m, cursor, count)
    } else {
        (0, z.iter().collect())
    };
    let items: Vec<(&[u8], f64)> = match pattern {
        Some(p) => items
            .into_iter()
            .filter(|(m, _)| crate::glob::glob_match(p, m, false))
            .collect(),
        None => items,
    };
    let r = &mut *x.reply;
    r.array(2);
    r.bulk(next.to_string().as_bytes());
    r.array(items.len() * 2);
    let mut buf = Vec::with_capacity(32);
    for (m, s) in items {
        r.bulk(m);
        buf.clear();
        // Redis 8.0 returns a listpack's scores as stored there (`d2string` text) but
        // formats a skiplist's with `ld2string(.., LD_STR_AUTO)`, i.e. `%.17Lg`.
        if z.big {
            skerry_resp::format_double_g17(s, &mut buf);
        } else {
            skerry_resp::format_double(s, &mut buf);
        }
        r.bulk(&buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse_as_strtod_does() {
        assert_eq!(parse_score(b"1.5"), Some(1.5));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"0x10"), Some(16.0));
        assert_eq!(parse_score(b"1e2"), Some(100.0));
        assert_eq!(parse_score(b"nan"), None);
        assert_eq!(parse_score(b""), None);
        assert_eq!(parse_score(b" 1"), None);
        assert_eq!(parse_score(b"1 "), None);
        assert_eq!(parse_score(b"1e400"), None);
        assert_eq!(parse_score(b"1e-400"), None);
        assert_eq!(parse_score(b"abc"), None);
        assert_eq!(parse_score(b"1\x002"), None);
        assert!(parse_score(b"9.8813129168249309e-323").is_some_and(|v| v > 0.0));
    }

    #[test]
    fn ranges_parse_as_redis_does() {
        let r = parse_score_range(b"(1", b"+inf").unwrap();
        assert!(r.minex && !r.maxex && r.min == 1.0 && r.max == f64::INFINITY);
        assert!(parse_score_range(b"(nan", b"1").is_none());
        assert!(parse_score_range(b"1", b"x").is_none());
        // strtod of "" is 0 with nothing left over, so Redis takes it.
        assert_eq!(parse_score_range(b"", b"(").unwrap().min, 0.0);
        let l = parse_lex_range(b"-", b"(b").unwrap();
        assert_eq!(l.min, LexItem::Min);
        assert_eq!(l.max, LexItem::Str(b"b".to_vec()));
        assert!(l.maxex);
        assert!(parse_lex_range(b"a", b"+").is_none());
        assert!(parse_lex_range(b"+x", b"+").is_none());
        assert!(parse_lex_range(b"", b"+").is_none());
    }

    #[test]
    fn mpop_keys_need_a_where_after_them() {
        let a: Vec<&[u8]> = vec![b"zmpop", b"2", b"a", b"b", b"min"];
        assert_eq!(keys_zmpop(&a).to_vec(), vec![2, 3]);
        assert!(keys_zmpop(&a[..4]).is_empty());
        let b: Vec<&[u8]> = vec![b"bzmpop", b"0", b"1", b"a", b"max", b"count", b"2"];
        assert_eq!(keys_bzmpop(&b).to_vec(), vec![3]);
        assert!(keys_bzmpop(&b[..4]).is_empty());
        let c: Vec<&[u8]> = vec![b"zmpop", b"0", b"a", b"min"];
        assert!(keys_zmpop(&c).is_empty());
        let huge: Vec<&[u8]> = vec![b"zmpop", b"9223372036854775807", b"a", b"min"];
        assert!(keys_zmpop(&huge).is_empty());
        let huge: Vec<&[u8]> = vec![b"bzmpop", b"0", b"9223372036854775807", b"a", b"min"];
        assert!(keys_bzmpop(&huge).is_empty());
    }

    #[test]
    fn numkeys_keys_fit_the_arguments() {
        let u: Vec<&[u8]> = vec![b"zunion", b"2", b"a", b"b", b"weights", b"1", b"2"];
        assert_eq!(keys_numkeys(&u).to_vec(), vec![2, 3]);
        assert_eq!(keys_numkeys(&u[..4]).to_vec(), vec![2, 3]);
        assert!(keys_numkeys(&u[..3]).is_empty());
        let s: Vec<&[u8]> = vec![b"zunionstore", b"d", b"2", b"a", b"b"];
        assert_eq!(keys_store_numkeys(&s).to_vec(), vec![1, 3, 4]);
        assert!(keys_store_numkeys(&s[..4]).is_empty());
        for n in [
            &b"9223372036854775807"[..],
            b"-9223372036854775808",
            b"0",
            b"x",
        ] {
            let h: Vec<&[u8]> = vec![b"zunion", n, b"a"];
            assert!(keys_numkeys(&h).is_empty());
            let h: Vec<&[u8]> = vec![b"zunionstore", b"d", n, b"a"];
            assert!(keys_store_numkeys(&h).is_empty());
        }
    }

    #[test]
    fn rank_spans() {
        assert_eq!(rank_span(0, -1, 3), Some((0, 3)));
        assert_eq!(rank_span(-2, -1, 3), Some((1, 2)));
        assert_eq!(rank_span(-10, 1, 3), Some((0, 2)));
        assert_eq!(rank_span(2, 1, 3), None);
        assert_eq!(rank_span(3, 10, 3), None);
        assert_eq!(rank_span(1, 100, 3), Some((1, 2)));
        assert_eq!(rank_span(0, 0, 0), None);
    }
}
