//! String commands (Redis's `t_string.c`): GET, SET and its variants, counters, ranges, LCS.
//! Each runs on the worker that owns its keys, through the keyspace interface.

use super::{is, parse_i64, Exec};
use crate::keyspace::{Expiry, Value};
use crate::reply::errors::*;

/// The string under `key`: Ok(None) when missing, Err(()) after replying WRONGTYPE.
pub(super) fn read_str(x: &mut Exec, key: &[u8]) -> Result<Option<Vec<u8>>, ()> {
    let found = x.ks.get(x.db, key, x.now_ms).map(|g| g.value);
    match found {
        None => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s)),
        Some(_) => {
            x.reply.error(WRONGTYPE);
            Err(())
        }
    }
}

/// Like [`read_str`] but without counting a keyspace hit or miss (for writes).
pub(super) fn peek_str(x: &mut Exec, key: &[u8]) -> Result<Option<Vec<u8>>, ()> {
    match x.ks.peek(x.db, key, x.now_ms).map(|g| g.value) {
        None => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s)),
        Some(_) => {
            x.reply.error(WRONGTYPE);
            Err(())
        }
    }
}

pub(super) fn max_len(x: &Exec) -> u64 {
    x.config
        .hot
        .proto_max_bulk_len
        .load(std::sync::atomic::Ordering::Relaxed)
}

/// GET key
pub fn get(x: &mut Exec, a: &[&[u8]]) {
    let reply = &mut *x.reply;
    let found =
        x.ks.with_value_parts(x.db, a[1], x.now_ms, |parts| match parts {
            [v] => skerry_resp::bulk(&mut reply.buf, v),
            // A big string: its chunks in order, never joined.
            parts => {
                let len = parts.iter().map(|p| p.len()).sum();
                reply.buf.reserve(len + 32);
                skerry_resp::bulk_header(&mut reply.buf, len);
                for p in parts {
                    reply.buf.extend_from_slice(p);
                }
                reply.buf.extend_from_slice(b"\r\n");
            }
        });
    match found {
        Ok(Some(())) => {}
        Ok(None) => reply.null(),
        Err(_) => reply.error(WRONGTYPE),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cond {
    Always,
    Nx,
    Xx,
}

/// Turns an expire argument into an absolute Unix ms time, as Redis's `getExpireMillisecondsOrReply`.
/// `unit_ms` is 1000 for seconds; `relative` adds the command time.
fn expire_at(x: &mut Exec, arg: &[u8], unit_ms: i64, relative: bool, cmd: &str) -> Option<i64> {
    let Some(v) = parse_i64(arg) else {
        x.reply.error(NOT_INT);
        return None;
    };
    let invalid = |x: &mut Exec| {
        x.reply
            .error(&format!("ERR invalid expire time in '{cmd}' command"))
    };
    if v <= 0 || (unit_ms == 1000 && v > i64::MAX / 1000) {
        invalid(x);
        return None;
    }
    let mut ms = v * unit_ms;
    if relative {
        match ms.checked_add(x.now_ms) {
            Some(t) => ms = t,
            None => {
                invalid(x);
                return None;
            }
        }
    }
    Some(ms)
}

/// The expire option of SET or GETEX (Redis's `OBJ_EX` ... `OBJ_PERSIST` flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ExpireKind {
    Ex,
    Px,
    Exat,
    Pxat,
    KeepTtl,
    Persist,
}

/// The expire option `opt` names, if any (`keepttl` only for SET, `persist` only for GETEX).
fn expire_kind(opt: &[u8], set: bool) -> Option<ExpireKind> {
    if is(opt, "ex") {
        Some(ExpireKind::Ex)
    } else if is(opt, "px") {
        Some(ExpireKind::Px)
    } else if is(opt, "exat") {
        Some(ExpireKind::Exat)
    } else if is(opt, "pxat") {
        Some(ExpireKind::Pxat)
    } else if set && is(opt, "keepttl") {
        Some(ExpireKind::KeepTtl)
    } else if !set && is(opt, "persist") {
        Some(ExpireKind::Persist)
    } else {
        None
    }
}

/// The expire options seen so far, as Redis's `parseExtendedStringArgumentsOrReply` takes
/// them: one kind per command, but that kind may be repeated (the last time given wins);
/// the time itself is validated only after every option was parsed.
#[derive(Default)]
struct ExpireOpt<'a> {
    kind: Option<ExpireKind>,
    arg: Option<&'a [u8]>,
}

impl<'a> ExpireOpt<'a> {
    /// Takes `opt` (with `next` as its time, if it needs one) when it is an expire option
    /// compatible with the ones before; returns how many arguments it used (0: not taken).
    fn take(&mut self, opt: &[u8], next: Option<&'a [u8]>, set: bool) -> usize {
        let Some(k) = expire_kind(opt, set) else {
            return 0;
        };
        if self.kind.is_some_and(|have| have != k) {
            return 0;
        }
        if matches!(k, ExpireKind::KeepTtl | ExpireKind::Persist) {
            self.kind = Some(k);
            return 1;
        }
        let Some(arg) = next else {
            return 0;
        };
        self.kind = Some(k);
        self.arg = Some(arg);
        2
    }

    /// The absolute expiry (Unix ms) of an `EX|PX|EXAT|PXAT` option; `None` for KEEPTTL,
    /// PERSIST or no option; `Err` after replying with the error.
    fn at_ms(&self, x: &mut Exec, cmd: &str) -> Result<Option<i64>, ()> {
        let (Some(k), Some(arg)) = (self.kind, self.arg) else {
            return Ok(None);
        };
        let unit_ms = if matches!(k, ExpireKind::Ex | ExpireKind::Exat) {
            1000
        } else {
            1
        };
        let relative = matches!(k, ExpireKind::Ex | ExpireKind::Px);
        expire_at(x, arg, unit_ms, relative, cmd)
            .map(Some)
            .ok_or(())
    }
}

/// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ms|KEEPTTL]
pub fn set(x: &mut Exec, a: &[&[u8]]) {
    let mut cond = Cond::Always;
    let mut want_old = false;
    let mut exp = ExpireOpt::default();
    let mut i = 3;
    while i < a.len() {
        let opt = a[i];
        if is(opt, "nx") && cond != Cond::Xx {
            cond = Cond::Nx;
        } else if is(opt, "xx") && cond != Cond::Nx {
            cond = Cond::Xx;
        } else if is(opt, "get") {
            want_old = true;
        } else {
            match exp.take(opt, a.get(i + 1).copied(), true) {
                0 => {
                    x.reply.error(SYNTAX);
                    return;
                }
                used => i += used - 1,
            }
        }
        i += 1;
    }
    let expiry = match exp.at_ms(x, "set") {
        Err(()) => return,
        Ok(Some(t)) => Expiry::At(t),
        Ok(None) if exp.kind == Some(ExpireKind::KeepTtl) => Expiry::Keep,
        Ok(None) => Expiry::Persist,
    };
    let old = if want_old {
        match peek_str(x, a[1]) {
            Ok(v) => v,
            Err(()) => return,
        }
    } else {
        None
    };
    let exists = if want_old {
        old.is_some()
    } else if cond != Cond::Always {
        x.ks.exists(x.db, a[1], x.now_ms)
    } else {
        false
    };
    let allowed = match cond {
        Cond::Always => true,
        Cond::Nx => !exists,
        Cond::Xx => exists,
    };
    if allowed {
        x.ks.put(x.db, a[1], a[2], expiry, x.now_ms);
    }
    if want_old {
        match old {
            Some(v) => x.reply.bulk(&v),
            None => x.reply.null(),
        }
    } else if allowed {
        x.reply.ok();
    } else {
        x.reply.null();
    }
}

/// SETNX key value
pub fn setnx(x: &mut Exec, a: &[&[u8]]) {
    if x.ks.exists(x.db, a[1], x.now_ms) {
        x.reply.int(0);
    } else {
        x.ks.put(x.db, a[1], a[2], Expiry::Persist, x.now_ms);
        x.reply.int(1);
    }
}

fn setex_common(x: &mut Exec, a: &[&[u8]], unit: i64, cmd: &str) {
    let Some(t) = expire_at(x, a[2], unit, true, cmd) else {
        return;
    };
    x.ks.put(x.db, a[1], a[3], Expiry::At(t), x.now_ms);
    x.reply.ok();
}

/// SETEX key seconds value
pub fn setex(x: &mut Exec, a: &[&[u8]]) {
    setex_common(x, a, 1000, "setex");
}

/// PSETEX key milliseconds value
pub fn psetex(x: &mut Exec, a: &[&[u8]]) {
    setex_common(x, a, 1, "psetex");
}

/// GETSET key value
pub fn getset(x: &mut Exec, a: &[&[u8]]) {
    let Ok(old) = peek_str(x, a[1]) else { return };
    x.ks.put(x.db, a[1], a[2], Expiry::Persist, x.now_ms);
    match old {
        Some(v) => x.reply.bulk(&v),
        None => x.reply.null(),
    }
}

/// GETDEL key
pub fn getdel(x: &mut Exec, a: &[&[u8]]) {
    match read_str(x, a[1]) {
        Err(()) => {}
        Ok(None) => x.reply.null(),
        Ok(Some(v)) => {
            let v = v.to_vec();
            x.ks.delete(x.db, a[1], x.now_ms);
            x.reply.bulk(&v);
        }
    }
}

/// GETEX key [EX s|PX ms|EXAT ts|PXAT ms|PERSIST]
pub fn getex(x: &mut Exec, a: &[&[u8]]) {
    let mut exp = ExpireOpt::default();
    let mut i = 2;
    while i < a.len() {
        match exp.take(a[i], a.get(i + 1).copied(), false) {
            0 => {
                x.reply.error(SYNTAX);
                return;
            }
            used => i += used,
        }
    }
    // As Redis: a missing key answers nil before the time is validated.
    match read_str(x, a[1]) {
        Err(()) => {}
        Ok(None) => x.reply.null(),
        Ok(Some(v)) => {
            let change = match exp.at_ms(x, "getex") {
                Err(()) => return,
                Ok(Some(t)) => Some(t),
                Ok(None) if exp.kind == Some(ExpireKind::Persist) => Some(0), // 0 = persist
                Ok(None) => None,
            };
            match change {
                Some(t) if t != 0 && t <= x.now_ms => {
                    x.ks.delete(x.db, a[1], x.now_ms);
                }
                Some(t) => {
                    x.ks.set_expiry(x.db, a[1], t, x.now_ms);
                }
                None => {}
            }
            x.reply.bulk(&v);
        }
    }
}

/// MGET key [key ...] (keys on this worker)
pub fn mget(x: &mut Exec, a: &[&[u8]]) {
    x.reply.array(a.len() - 1);
    for key in &a[1..] {
        match x.ks.get(x.db, key, x.now_ms).map(|g| g.value) {
            Some(Value::Str(s)) => skerry_resp::bulk(&mut x.reply.buf, &s),
            _ => x.reply.null(),
        }
    }
}

/// Replies with the arity error of MSET/MSETNX (`cmd`) unless the arguments are key/value
/// pairs; shared with the cross-worker path.
pub fn pairs_ok(reply: &mut crate::reply::Reply, a: &[&[u8]], cmd: &str) -> bool {
    if a.len().is_multiple_of(2) {
        reply.error(&format!(
            "ERR wrong number of arguments for '{cmd}' command"
        ));
        return false;
    }
    true
}

fn put_pairs(x: &mut Exec, a: &[&[u8]]) {
    for kv in a[1..].chunks(2) {
        x.ks.put(x.db, kv[0], kv[1], Expiry::Persist, x.now_ms);
    }
}

/// MSET key value [key value ...] (keys on this worker)
pub fn mset(x: &mut Exec, a: &[&[u8]]) {
    if pairs_ok(x.reply, a, "mset") {
        put_pairs(x, a);
        x.reply.ok();
    }
}

/// MSETNX key value [key value ...] (keys on this worker)
pub fn msetnx(x: &mut Exec, a: &[&[u8]]) {
    if !pairs_ok(x.reply, a, "msetnx") {
        return;
    }
    if a[1..]
        .chunks(2)
        .any(|kv| x.ks.exists(x.db, kv[0], x.now_ms))
    {
        x.reply.int(0);
        return;
    }
    put_pairs(x, a);
    x.reply.int(1);
}

fn incr_common(x: &mut Exec, key: &[u8], by: i64) {
    let Ok(cur) = peek_str(x, key) else { return };
    let n = match cur {
        None => 0,
        Some(v) => match parse_i64(&v) {
            Some(n) => n,
            None => {
                x.reply.error(NOT_INT);
                return;
            }
        },
    };
    let Some(result) = n.checked_add(by) else {
        x.reply.error(OVERFLOW);
        return;
    };
    let mut buf = itoa::Buffer::new();
    x.ks.put(
        x.db,
        key,
        buf.format(result).as_bytes(),
        Expiry::Keep,
        x.now_ms,
    );
    x.reply.int(result);
}

/// INCR key
pub fn incr(x: &mut Exec, a: &[&[u8]]) {
    incr_common(x, a[1], 1);
}

/// DECR key
pub fn decr(x: &mut Exec, a: &[&[u8]]) {
    incr_common(x, a[1], -1);
}

/// INCRBY key increment
pub fn incrby(x: &mut Exec, a: &[&[u8]]) {
    match parse_i64(a[2]) {
        Some(by) => incr_common(x, a[1], by),
        None => x.reply.error(NOT_INT),
    }
}

/// DECRBY key decrement
pub fn decrby(x: &mut Exec, a: &[&[u8]]) {
    match parse_i64(a[2]) {
        Some(i64::MIN) => x.reply.error("ERR decrement would overflow"),
        Some(by) => incr_common(x, a[1], -by),
        None => x.reply.error(NOT_INT),
    }
}

/// INCRBYFLOAT key increment (computed in long double, as Redis does)
pub fn incrbyfloat(x: &mut Exec, a: &[&[u8]]) {
    let Ok(cur) = peek_str(x, a[1]) else { return };
    match crate::longdouble::add(cur.as_deref(), a[2]) {
        Ok(text) => {
            x.reply.bulk(&text);
            x.ks.put(x.db, a[1], &text, Expiry::Keep, x.now_ms);
        }
        Err(crate::longdouble::LdError::NotFinite) => {
            x.reply.error("ERR increment would produce NaN or Infinity")
        }
        Err(_) => x.reply.error(NOT_FLOAT),
    }
}

/// APPEND key value
pub fn append(x: &mut Exec, a: &[&[u8]]) {
    let Ok(cur) = peek_str(x, a[1]) else { return };
    let mut v = cur.unwrap_or_default();
    if (v.len() + a[2].len()) as u64 > max_len(x) {
        x.reply.error(TOO_BIG);
        return;
    }
    v.extend_from_slice(a[2]);
    let len = v.len();
    x.ks.put(x.db, a[1], &v, Expiry::Keep, x.now_ms);
    x.reply.int(len as i64);
}

/// STRLEN key
pub fn strlen(x: &mut Exec, a: &[&[u8]]) {
    match read_str(x, a[1]) {
        Err(()) => {}
        Ok(v) => {
            let n = v.map_or(0, |v| v.len()) as i64;
            x.reply.int(n);
        }
    }
}

/// Redis's inclusive index range over a string of `len` units (bytes, or bits for the
/// bitmap commands): negative indexes count from the end and both ends are clamped to the
/// string. None when the range is empty.
pub(super) fn clamp_index_range(len: i64, start: i64, end: i64) -> Option<(u64, u64)> {
    let s = if start < 0 { start + len } else { start }.max(0);
    let e = if end < 0 { end + len } else { end }.max(0).min(len - 1);
    (len > 0 && s <= e).then_some((s as u64, e as u64))
}

/// GETRANGE key start end (also SUBSTR)
pub fn getrange(x: &mut Exec, a: &[&[u8]]) {
    let (Some(start), Some(end)) = (parse_i64(a[2]), parse_i64(a[3])) else {
        x.reply.error(NOT_INT);
        return;
    };
    let v = match read_str(x, a[1]) {
        Err(()) => return,
        Ok(None) => {
            x.reply.bulk(b"");
            return;
        }
        Ok(Some(v)) => v,
    };
    let range = if start < 0 && end < 0 && start > end {
        None
    } else {
        clamp_index_range(v.len() as i64, start, end)
    };
    let Some((start, end)) = range else {
        x.reply.bulk(b"");
        return;
    };
    let piece = v[start as usize..=end as usize].to_vec();
    x.reply.bulk(&piece);
}

/// SETRANGE key offset value
pub fn setrange(x: &mut Exec, a: &[&[u8]]) {
    let Some(offset) = parse_i64(a[2]) else {
        x.reply.error(NOT_INT);
        return;
    };
    if offset < 0 {
        x.reply.error("ERR offset is out of range");
        return;
    }
    let Ok(cur) = peek_str(x, a[1]) else { return };
    let value = a[3];
    match cur {
        None if value.is_empty() => x.reply.int(0),
        Some(v) if value.is_empty() => x.reply.int(v.len() as i64),
        cur => {
            if offset as u64 + value.len() as u64 > max_len(x) {
                x.reply.error(TOO_BIG);
                return;
            }
            let mut v = cur.unwrap_or_default();
            let end = offset as usize + value.len();
            if v.len() < end {
                v.resize(end, 0);
            }
            v[offset as usize..end].copy_from_slice(value);
            let len = v.len();
            x.ks.put(x.db, a[1], &v, Expiry::Keep, x.now_ms);
            x.reply.int(len as i64);
        }
    }
}

/// One LCS match: range in the first string, range in the second, length.
type LcsMatch = ((usize, usize), (usize, usize), usize);

/// Options of LCS.
struct LcsOpts {
    len_only: bool,
    idx: bool,
    min_match_len: i64,
    with_match_len: bool,
}

fn lcs_opts(x: &mut Exec, a: &[&[u8]]) -> Option<LcsOpts> {
    let mut o = LcsOpts {
        len_only: false,
        idx: false,
        min_match_len: 0,
        with_match_len: false,
    };
    let mut i = 3;
    while i < a.len() {
        if is(a[i], "idx") {
            o.idx = true;
        } else if is(a[i], "len") {
            o.len_only = true;
        } else if is(a[i], "withmatchlen") {
            o.with_match_len = true;
        } else if is(a[i], "minmatchlen") && i + 1 < a.len() {
            match parse_i64(a[i + 1]) {
                Some(n) => o.min_match_len = n.max(0),
                None => {
                    x.reply.error(NOT_INT);
                    return None;
                }
            }
            i += 1;
        } else {
            x.reply.error(SYNTAX);
            return None;
        }
        i += 1;
    }
    if o.len_only && o.idx {
        x.reply
            .error("ERR If you want both the length and indexes, please just use IDX.");
        return None;
    }
    Some(o)
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN] (both keys on this worker)
pub fn lcs(x: &mut Exec, a: &[&[u8]]) {
    let mut values = Vec::with_capacity(2);
    for key in &a[1..3] {
        match x.ks.get(x.db, key, x.now_ms).map(|g| g.value) {
            None => values.push(Vec::new()),
            Some(Value::Str(s)) => values.push(s),
            Some(_) => {
                x.reply
                    .error("ERR The specified keys must contain string values");
                return;
            }
        }
    }
    lcs_reply(x, a, &values[0], &values[1]);
}

/// Computes LCS of `s1` and `s2` and replies per the options in `a` (shared with the
/// cross-worker path, which fetches the two values first).
pub fn lcs_reply(x: &mut Exec, a: &[&[u8]], s1: &[u8], s2: &[u8]) {
    let Some(o) = lcs_opts(x, a) else { return };
    let (n1, n2) = (s1.len(), s2.len());
    // Dynamic programming table of (n1+1) x (n2+1) lengths.
    let cells = (n1 + 1).checked_mul(n2 + 1).filter(|&c| c <= (1 << 31));
    let Some(cells) = cells else {
        x.reply
            .error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
        return;
    };
    let mut dp = vec![0u32; cells];
    let w = n2 + 1;
    for i in 1..=n1 {
        for j in 1..=n2 {
            dp[i * w + j] = if s1[i - 1] == s2[j - 1] {
                dp[(i - 1) * w + j - 1] + 1
            } else {
                dp[(i - 1) * w + j].max(dp[i * w + j - 1])
            };
        }
    }
    let total = dp[n1 * w + n2] as usize;
    if o.len_only {
        x.reply.int(total as i64);
        return;
    }
    // Walk back, collecting the string and the match ranges (from the end, as Redis does).
    let mut result = vec![0u8; total];
    let mut idx = total;
    let (mut i, mut j) = (n1, n2);
    let mut matches: Vec<LcsMatch> = Vec::new();
    let mut cur: Option<(usize, usize, usize, usize)> = None; // a_start, a_end, b_start, b_end
    let flush = |cur: &mut Option<(usize, usize, usize, usize)>, matches: &mut Vec<_>| {
        if let Some((as_, ae, bs, be)) = cur.take() {
            let len = ae - as_ + 1;
            if len as i64 >= o.min_match_len {
                matches.push(((as_, ae), (bs, be), len));
            }
        }
    };
    while i > 0 && j > 0 {
        if s1[i - 1] == s2[j - 1] {
            idx -= 1;
            result[idx] = s1[i - 1];
            match &mut cur {
                Some((as_, _, bs, _)) if *as_ == i && *bs == j => {
                    *as_ = i - 1;
                    *bs = j - 1;
                }
                _ => {
                    flush(&mut cur, &mut matches);
                    cur = Some((i - 1, i - 1, j - 1, j - 1));
                }
            }
            i -= 1;
            j -= 1;
        } else if dp[(i - 1) * w + j] > dp[i * w + j - 1] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    flush(&mut cur, &mut matches);
    if !o.idx {
        x.reply.bulk(&result);
        return;
    }
    x.reply.map(2);
    x.reply.bulk_str("matches");
    x.reply.array(matches.len());
    for ((as_, ae), (bs, be), len) in &matches {
        x.reply.array(if o.with_match_len { 3 } else { 2 });
        x.reply.array(2);
        x.reply.int(*as_ as i64);
        x.reply.int(*ae as i64);
        x.reply.array(2);
        x.reply.int(*bs as i64);
        x.reply.int(*be as i64);
        if o.with_match_len {
            x.reply.int(*len as i64);
        }
    }
    x.reply.bulk_str("len");
    x.reply.int(total as i64);
}
