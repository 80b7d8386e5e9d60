//! SORT and SORT_RO (Redis's `sort.c`): sort a list, set or sorted set numerically or
//! (ALPHA) by bytes, by the element itself or by the value of other keys (BY pattern, with
//! `pattern->field` for hash fields; a pattern without `*` means "do not sort"), take a
//! LIMIT range, reply the elements or values of other keys (GET pattern, `#` for the
//! element) or store them as a list (STORE; an empty result deletes the destination).
//!
//! BY and GET read keys named by the elements, which can live on any worker, so SORT runs as
//! an async command on the connection's worker ([`sort`]): it holds the workers involved (all
//! of them when a pattern reads other keys, otherwise the owners of the source and the
//! destination) for one [`Txn`], reads the source from its owner, fetches the pattern keys
//! from their owners (grouped by owner, made resident first), sorts here, and writes the
//! destination on its owner. Nothing else runs on a held worker meanwhile, so the command
//! is atomic as in Redis. Inside MULTI, EXEC (which holds every worker) runs it through
//! [`sort_in_txn`].

use smallvec::SmallVec;

use super::{is, parse_i64};
use crate::coll::VALUE_TYPE_ZSET;
use crate::coll::{list::List, Coll, VALUE_TYPE_HASH, VALUE_TYPE_LIST, VALUE_TYPE_SET};
use crate::conn::Conn;
use crate::keyspace::{CollError, Expiry, Keyspace, Value};
use crate::reply::errors::{NOT_INT, SYNTAX, WRONGTYPE};
use crate::slot;
use crate::worker::Txn;

/// The error of a numeric sort meeting a value that is not a number.
pub const NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";

/// Pattern keys fetched from one owner per step (bounds what is resident at once).
const LOOKUP_CHUNK: usize = 4096;

/// Key positions of SORT for COMMAND GETKEYS, as Redis's `sortGetKeys`: the sorted key and
/// the last STORE destination (options with arguments are skipped).
pub fn sort_keys(argv: &[&[u8]]) -> SmallVec<[usize; 8]> {
    let mut out = SmallVec::new();
    if argv.len() < 2 {
        return out;
    }
    out.push(1);
    let mut store = None;
    let mut i = 2;
    while i < argv.len() {
        if is(argv[i], "limit") {
            i += 2;
        } else if is(argv[i], "get") || is(argv[i], "by") {
            i += 1;
        } else if is(argv[i], "store") && i + 1 < argv.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    out.extend(store);
    out
}

/// Key positions of SORT_RO: the sorted key only.
pub fn sort_ro_keys(argv: &[&[u8]]) -> SmallVec<[usize; 8]> {
    let mut out = SmallVec::new();
    if argv.len() >= 2 {
        out.push(1);
    }
    out
}

/// The parsed options of one SORT.
#[derive(Clone, Debug, Default, PartialEq)]
struct Opts {
    key: Vec<u8>,
    desc: bool,
    alpha: bool,
    limit_start: i64,
    limit_count: i64,
    store: Option<Vec<u8>>,
    /// The BY pattern (the last one given).
    by: Option<Vec<u8>>,
    /// A BY pattern without `*` was given: nothing is sorted (sticky, as in Redis).
    dontsort: bool,
    /// GET patterns, in order.
    gets: Vec<Vec<u8>>,
    /// Called from a script: a set's order must not leak into the result.
    from_script: bool,
}

impl Opts {
    /// True when the command may read keys other than the source and the destination.
    fn reads_pattern_keys(&self) -> bool {
        let by = !self.dontsort && self.by.as_ref().is_some_and(|p| p.contains(&b'*'));
        by || self
            .gets
            .iter()
            .any(|g| &g[..] != b"#" && g.contains(&b'*'))
    }
}

/// Parses SORT's options as Redis does (the first bad one answers), or the error to reply.
fn parse(a: &[&[u8]], readonly: bool) -> Result<Opts, &'static str> {
    let mut o = Opts {
        key: a[1].to_vec(),
        limit_count: -1,
        ..Opts::default()
    };
    let mut j = 2;
    while j < a.len() {
        let left = a.len() - j - 1;
        let arg = a[j];
        if is(arg, "asc") {
            o.desc = false;
        } else if is(arg, "desc") {
            o.desc = true;
        } else if is(arg, "alpha") {
            o.alpha = true;
        } else if is(arg, "limit") && left >= 2 {
            match (parse_i64(a[j + 1]), parse_i64(a[j + 2])) {
                (Some(s), Some(c)) => (o.limit_start, o.limit_count) = (s, c),
                _ => return Err(NOT_INT),
            }
            j += 2;
        } else if !readonly && is(arg, "store") && left >= 1 {
            o.store = Some(a[j + 1].to_vec());
            j += 1;
        } else if is(arg, "by") && left >= 1 {
            o.by = Some(a[j + 1].to_vec());
            if !a[j + 1].contains(&b'*') {
                o.dontsort = true;
            }
            j += 1;
        } else if is(arg, "get") && left >= 1 {
            o.gets.push(a[j + 1].to_vec());
            j += 1;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    Ok(o)
}

/// The elements to sort, loaded from the source as Redis's `sortCommandGeneric` loads its
/// vector, with the options the source's type adjusted.
#[derive(Debug, PartialEq)]
struct Loaded {
    elems: Vec<Vec<u8>>,
    /// The output range within `elems` (inclusive; empty when `end < start`).
    start: i64,
    end: i64,
    dontsort: bool,
    alpha: bool,
    /// The BY pattern still applies (a forced ALPHA sort of a set drops it).
    by: bool,
}

/// Loads the vector from the source collection (None: the key does not exist, an empty
/// list). Lists and sorted sets not sorted (BY without `*`) load only the LIMIT range, in
/// their own order (reversed by DESC); everything else loads in full.
fn load(coll: Option<&Coll>, o: &Opts) -> Loaded {
    let empty = Coll::List(List::default());
    let coll = coll.unwrap_or(&empty);
    let (mut dontsort, mut alpha, mut by) = (o.dontsort, o.alpha, o.by.is_some());
    // A set has no order of its own: with STORE, or from a script, Redis sorts it (ALPHA)
    // so that the result does not depend on the set's internal order.
    if dontsort && matches!(coll, Coll::Set(_)) && (o.store.is_some() || o.from_script) {
        dontsort = false;
        alpha = true;
        by = false;
    }
    let len = coll.len() as i64;
    let mut start = o.limit_start.max(0).min(len);
    let count = o.limit_count.max(-1).min(len);
    let mut end = if count < 0 {
        len - 1
    } else {
        start + count - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    let ranged = matches!(coll, Coll::List(_) | Coll::Zset(_)) && dontsort;
    let take = if ranged && (start != 0 || end != len - 1) {
        (end - start + 1).max(0) as usize
    } else {
        len as usize
    };
    let elems: Vec<Vec<u8>> = match coll {
        Coll::List(l) if dontsort => {
            if end >= start {
                let v: Vec<Vec<u8>> = if o.desc {
                    let first = (len - start - 1) as usize;
                    (0..=first)
                        .rev()
                        .take(take)
                        .map(|i| l.items()[i].clone())
                        .collect()
                } else {
                    l.items()
                        .iter()
                        .skip(start as usize)
                        .take(take)
                        .cloned()
                        .collect()
                };
                end -= start;
                start = 0;
                v
            } else {
                Vec::new()
            }
        }
        Coll::List(l) => l.items().iter().cloned().collect(),
        Coll::Set(s) => s.ordered().into_iter().map(|m| m.to_vec()).collect(),
        Coll::Zset(z) if dontsort => {
            let skip = start.max(0) as usize;
            let v = if o.desc {
                z.iter()
                    .rev()
                    .skip(skip)
                    .take(take)
                    .map(|(m, _)| m.to_vec())
                    .collect()
            } else {
                z.iter()
                    .skip(skip)
                    .take(take)
                    .map(|(m, _)| m.to_vec())
                    .collect()
            };
            end -= start;
            start = 0;
            v
        }
        Coll::Zset(z) => z.iter().map(|(m, _)| m.to_vec()).collect(),
        Coll::Hash(_) | Coll::Stream(_) => unreachable!("the caller checked the type"),
    };
    Loaded {
        elems,
        start,
        end,
        dontsort,
        alpha,
        by,
    }
}

/// The key (and hash field) a pattern names for element `subst`, as Redis's
/// `lookupKeyByPattern`: the first `*` is replaced by the element; `->field` after it (with
/// a non-empty field) names a hash field. None when the pattern has no `*` (a constant GET
/// finds nothing). The caller handles `#`.
fn pattern_key(pattern: &[u8], subst: &[u8]) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let star = memchr::memchr(b'*', pattern)?;
    let after = &pattern[star + 1..];
    let (postfix, field) = match memchr::memmem::find(after, b"->") {
        Some(f) if f + 2 < after.len() => (&after[..f], Some(after[f + 2..].to_vec())),
        _ => (after, None),
    };
    let mut key = Vec::with_capacity(star + subst.len() + postfix.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(subst);
    key.extend_from_slice(postfix);
    Some((key, field))
}

/// The value a pattern key gives: a string key's value, or a hash's field; None for a
/// missing key or field, or a key of another type. Counts a keyspace hit or miss, as
/// Redis's `lookupKeyRead`.
fn pattern_value(
    ks: &mut Keyspace,
    db: usize,
    key: &[u8],
    field: Option<&[u8]>,
    now: i64,
) -> Option<Vec<u8>> {
    match field {
        None => ks.with_value(db, key, now, |v| v.to_vec()).ok().flatten(),
        Some(f) => match ks.coll(db, key, VALUE_TYPE_HASH, now) {
            Ok(Some(c)) => c.as_hash().get_live(f, now).map(|v| v.to_vec()),
            _ => None,
        },
    }
}

/// Fetches the values `reqs` name (key, optional hash field) from their owners, grouped by
/// owner, inside `txn` (which holds every owner). Err: a value could not be read.
async fn lookup(
    txn: &Txn,
    workers: usize,
    db: usize,
    now: i64,
    reqs: Vec<(Vec<u8>, Option<Vec<u8>>)>,
) -> Result<Vec<Option<Vec<u8>>>, String> {
    let mut out: Vec<Option<Vec<u8>>> = vec![None; reqs.len()];
    type Req = (usize, Vec<u8>, Option<Vec<u8>>);
    let mut groups: Vec<Vec<Req>> = vec![Vec::new(); workers];
    for (i, (k, f)) in reqs.into_iter().enumerate() {
        groups[slot::owner(&k, workers)].push((i, k, f));
    }
    for (w, group) in groups.into_iter().enumerate() {
        let mut rest = group;
        while !rest.is_empty() {
            let tail = rest.split_off(rest.len().min(LOOKUP_CHUNK));
            let chunk = std::mem::replace(&mut rest, tail);
            let mut keys: Vec<Vec<u8>> = chunk.iter().map(|(_, k, _)| k.clone()).collect();
            keys.sort_unstable();
            keys.dedup();
            let (vals, e) = txn
                .run_resident(w, db, keys, now, move |s| {
                    let vals: Vec<(usize, Option<Vec<u8>>)> = chunk
                        .into_iter()
                        .map(|(i, k, f)| {
                            (i, pattern_value(&mut s.keyspace, db, &k, f.as_deref(), now))
                        })
                        .collect();
                    (vals, s.keyspace.take_error())
                })
                .await?;
            if let Some(e) = e {
                return Err(e);
            }
            for (i, v) in vals {
                out[i] = v;
            }
        }
    }
    Ok(out)
}

/// A SORT score as Redis 8.0 reads it: `fast_float_strtod` (fast_float's `from_chars`,
/// leading '+' allowed) over the C string `v` (the bytes before any NUL). A sign, then a
/// decimal number (digits with an optional fraction and an exponent taken only with digits)
/// or `inf`/`infinity` (any case); no white space, no hexadecimal. Err when bytes are left
/// over or the value is NaN. Out-of-range values are not errors: they round to infinity or
/// zero (fast_float sets EINVAL, which SORT ignores, rather than ERANGE). An empty string
/// is 0 (nothing converted, and the terminator is next).
fn score_of(v: &[u8]) -> Result<f64, ()> {
    let s = match memchr::memchr(0, v) {
        Some(n) => &v[..n],
        None => v,
    };
    if s.is_empty() {
        return Ok(0.0);
    }
    let (neg, i) = match s[0] {
        b'-' => (true, 1),
        b'+' => (false, 1),
        _ => (false, 0),
    };
    let rest = &s[i..];
    let starts = |w: &[u8]| rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w);
    if starts(b"inf") {
        let n = if starts(b"infinity") { 8 } else { 3 };
        if i + n != s.len() {
            return Err(());
        }
        return Ok(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    // Decimal: digits, optional fraction, optional exponent (taken only with digits).
    let mut e = i;
    let mut digits = 0;
    while e < s.len() && s[e].is_ascii_digit() {
        digits += 1;
        e += 1;
    }
    if e < s.len() && s[e] == b'.' {
        e += 1;
        while e < s.len() && s[e].is_ascii_digit() {
            digits += 1;
            e += 1;
        }
    }
    if digits == 0 {
        return Err(()); // nothing converted ("nan" included): the first byte is left over
    }
    if e < s.len() && (s[e] | 0x20) == b'e' {
        let mut x = e + 1;
        if x < s.len() && matches!(s[x], b'+' | b'-') {
            x += 1;
        }
        if x < s.len() && s[x].is_ascii_digit() {
            while x < s.len() && s[x].is_ascii_digit() {
                x += 1;
            }
            e = x;
        }
    }
    if e != s.len() {
        return Err(());
    }
    let text = std::str::from_utf8(&s[i..e]).map_err(|_| ())?;
    let v: f64 = text.parse().map_err(|_| ())?;
    Ok(if neg { -v } else { v })
}

/// C's `strcmp` (what `strcoll` is in the C locale): bytes up to the first NUL.
fn c_str_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let cut = |v: &[u8]| match memchr::memchr(0, v) {
        Some(n) => v.len().min(n),
        None => v.len(),
    };
    a[..cut(a)].cmp(&b[..cut(b)])
}

/// Sorts the loaded elements as Redis's `sortCompare` orders them, stably (glibc's qsort is
/// a merge sort): numerically by the element or its BY value (equal scores by the bytes of
/// the elements; a missing BY value scores 0), or ALPHA by the element or its BY value (a
/// missing BY value first; C-string comparison, binary with STORE). Returns the order of
/// the elements, or Err when a value is not a number.
fn sort_order(
    elems: &[Vec<u8>],
    byvals: Option<&[Option<Vec<u8>>]>,
    alpha: bool,
    desc: bool,
    store: bool,
) -> Result<Vec<usize>, ()> {
    use std::cmp::Ordering;
    let mut order: Vec<usize> = (0..elems.len()).collect();
    let fix = |o: Ordering| if desc { o.reverse() } else { o };
    if alpha {
        match byvals {
            Some(by) => order.sort_by(|&x, &y| {
                fix(match (&by[x], &by[y]) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(a), Some(b)) if store => a.cmp(b),
                    (Some(a), Some(b)) => c_str_cmp(a, b),
                })
            }),
            None if store => order.sort_by(|&x, &y| fix(elems[x].cmp(&elems[y]))),
            None => order.sort_by(|&x, &y| fix(c_str_cmp(&elems[x], &elems[y]))),
        }
        return Ok(order);
    }
    let mut scores = Vec::with_capacity(elems.len());
    for (i, e) in elems.iter().enumerate() {
        let v = match byvals {
            Some(by) => match &by[i] {
                Some(v) => v,
                None => {
                    scores.push(0.0);
                    continue;
                }
            },
            None => e,
        };
        scores.push(score_of(v)?);
    }
    order.sort_by(|&x, &y| {
        let c = if scores[x] > scores[y] {
            Ordering::Greater
        } else if scores[x] < scores[y] {
            Ordering::Less
        } else {
            elems[x].cmp(&elems[y])
        };
        fix(c)
    });
    Ok(order)
}

/// What reading the source found.
enum Source {
    Loaded(Loaded),
    WrongType,
}

/// SORT / SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
/// [ALPHA] [STORE destination]: holds the workers involved (every worker when a pattern
/// reads other keys, else the owners of the source and the destination) for one
/// transaction and runs the command in it.
pub async fn sort(c: &mut Conn, a: &[&[u8]]) {
    let readonly = is(a[0], "sort_ro");
    let o = match parse(a, readonly) {
        Ok(o) => o,
        Err(e) => return c.reply.error(e),
    };
    let workers = c.shared.workers;
    let held: Vec<usize> = if o.reads_pattern_keys() {
        (0..workers).collect()
    } else {
        let mut w = vec![slot::owner(&o.key, workers)];
        w.extend(o.store.as_ref().map(|d| slot::owner(d, workers)));
        w
    };
    let txn = Txn::begin(&c.shared, c.worker, held).await;
    run(c, &txn, o).await;
}

/// SORT / SORT_RO inside `txn`, which must hold every worker (EXEC): the reply goes to the
/// connection's reply. True when it wrote (STORE).
pub async fn sort_in_txn(c: &mut Conn, txn: &Txn, a: &[&[u8]]) -> bool {
    match parse(a, is(a[0], "sort_ro")) {
        Ok(mut o) => {
            o.from_script = c.in_script;
            run(c, txn, o).await
        }
        Err(e) => {
            c.reply.error(e);
            false
        }
    }
}

/// Runs a parsed SORT in `txn` (holding the owners of every key it touches); true when it
/// wrote the destination.
async fn run(c: &mut Conn, txn: &Txn, o: Opts) -> bool {
    let (db, now, workers) = (c.db, c.now_ms, c.shared.workers);
    let ws = slot::owner(&o.key, workers);
    let (key, opts) = (o.key.clone(), o.clone());
    let got = txn
        .run_resident(ws, db, vec![key.clone()], now, move |s| {
            let ks = &mut s.keyspace;
            // The type decides which collection to ask for; the lookup counts a keyspace
            // hit or miss as Redis's does.
            let src = match ks.meta(db, &key, now).map(|m| m.value_type) {
                Some(vt @ (VALUE_TYPE_LIST | VALUE_TYPE_SET | VALUE_TYPE_ZSET)) => {
                    match ks.coll(db, &key, vt, now) {
                        Ok(coll) => Ok(Source::Loaded(load(coll, &opts))),
                        Err(CollError::WrongType) => Ok(Source::WrongType),
                        Err(CollError::Failed) => Err(()),
                    }
                }
                // Missing (a miss), or a string or hash (a hit): no value is copied.
                _ => match ks.with_value(db, &key, now, |_| ()) {
                    Ok(None) => Ok(Source::Loaded(load(None, &opts))),
                    Ok(Some(())) | Err(_) => Ok(Source::WrongType),
                },
            };
            (src, ks.take_error())
        })
        .await;
    let l = match got {
        Err(e) | Ok((_, Some(e))) => {
            c.reply.error(&format!("ERR {e}"));
            return false;
        }
        Ok((Err(()), None)) => {
            c.reply.error("ERR the value could not be read");
            return false;
        }
        Ok((Ok(Source::WrongType), None)) => {
            c.reply.error(WRONGTYPE);
            return false;
        }
        Ok((Ok(Source::Loaded(l)), None)) => l,
    };
    // Sort, by the BY values when the pattern names other keys.
    let order: Vec<usize> = if l.dontsort {
        (0..l.elems.len()).collect()
    } else {
        let byvals = match o.by.as_ref().filter(|_| l.by) {
            Some(pat) => {
                let reqs: Vec<_> = l
                    .elems
                    .iter()
                    .map(|e| pattern_key(pat, e).expect("a sorting BY pattern has a '*'"))
                    .collect();
                match lookup(txn, workers, db, now, reqs).await {
                    Ok(v) => Some(v),
                    Err(e) => {
                        c.reply.error(&format!("ERR {e}"));
                        return false;
                    }
                }
            }
            None => None,
        };
        match sort_order(
            &l.elems,
            byvals.as_deref(),
            l.alpha,
            o.desc,
            o.store.is_some(),
        ) {
            Ok(order) => order,
            Err(()) => {
                c.reply.error(NOT_DOUBLE);
                return false;
            }
        }
    };
    let picked: Vec<&[u8]> = if l.end >= l.start {
        order[l.start as usize..=l.end as usize]
            .iter()
            .map(|&i| &l.elems[i][..])
            .collect()
    } else {
        Vec::new()
    };
    // The output: the elements, or the GET values of each element in turn.
    let out: Vec<Option<Vec<u8>>> = if o.gets.is_empty() {
        picked.iter().map(|e| Some(e.to_vec())).collect()
    } else {
        let mut reqs = Vec::new();
        // Per output slot: Ok(element), Err(Some(index into reqs)), Err(None) = nothing.
        let mut slots: Vec<Result<&[u8], Option<usize>>> = Vec::new();
        for e in &picked {
            for g in &o.gets {
                if &g[..] == b"#" {
                    slots.push(Ok(e));
                } else if let Some(r) = pattern_key(g, e) {
                    slots.push(Err(Some(reqs.len())));
                    reqs.push(r);
                } else {
                    slots.push(Err(None));
                }
            }
        }
        let mut vals = if reqs.is_empty() {
            Vec::new()
        } else {
            match lookup(txn, workers, db, now, reqs).await {
                Ok(v) => v,
                Err(e) => {
                    c.reply.error(&format!("ERR {e}"));
                    return false;
                }
            }
        };
        slots
            .into_iter()
            .map(|s| match s {
                Ok(e) => Some(e.to_vec()),
                Err(Some(i)) => vals[i].take(),
                Err(None) => None,
            })
            .collect()
    };
    let Some(dst) = o.store else {
        c.reply.array(out.len());
        for v in out {
            match v {
                Some(v) => c.reply.bulk(&v),
                None => c.reply.null(),
            }
        }
        return false;
    };
    let n = out.len();
    let wd = slot::owner(&dst, workers);
    let failed = txn
        .run(wd, move |s| {
            let done = if n > 0 {
                let list =
                    List::from_items(out.into_iter().map(Option::unwrap_or_default).collect());
                let mut encoded = Vec::new();
                Coll::List(list).encode(&mut encoded);
                let value = Value::Coll {
                    value_type: VALUE_TYPE_LIST,
                    encoded,
                };
                s.keyspace.put_value(db, &dst, &value, Expiry::Persist, now)
            } else {
                s.keyspace.delete(db, &dst, now);
                true
            };
            let e = s.keyspace.take_error();
            // Clients blocked on the destination are served when the transaction releases
            // this worker, right after the command (after EXEC inside MULTI), as in Redis.
            (!done || e.is_some()).then(|| e.unwrap_or_default())
        })
        .await;
    match failed {
        Some(e) => c.reply.error(&format!("ERR {e}")),
        None => c.reply.int(n as i64),
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::{set::Set, zset::Zset};

    fn args(s: &str) -> Vec<Vec<u8>> {
        s.split(' ').map(|w| w.as_bytes().to_vec()).collect()
    }

    fn opts(s: &str) -> Result<Opts, &'static str> {
        let a = args(s);
        let refs: Vec<&[u8]> = a.iter().map(|v| &v[..]).collect();
        parse(&refs, refs[0] == b"sort_ro")
    }

    fn list(items: &[&str]) -> Coll {
        let mut l = List::default();
        for i in items {
            l.push_back(i.as_bytes().to_vec());
        }
        Coll::List(l)
    }

    fn strs(v: &[Vec<u8>]) -> Vec<String> {
        v.iter()
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect()
    }

    #[test]
    fn getkeys_as_redis() {
        let keys = |s: &str| {
            let a = args(s);
            let refs: Vec<&[u8]> = a.iter().map(|v| &v[..]).collect();
            sort_keys(&refs).to_vec()
        };
        assert_eq!(keys("sort abc store def"), vec![1, 3]);
        assert_eq!(
            keys("sort abc store invalid store stillbad store def"),
            vec![1, 7]
        );
        assert_eq!(keys("sort abc by store get store limit store 1"), vec![1]);
        assert_eq!(keys("sort abc store"), vec![1]);
        assert_eq!(sort_ro_keys(&[b"sort_ro", b"k"]).to_vec(), vec![1]);
    }

    #[test]
    fn options_parse_as_redis() {
        let o = opts("sort k by w_* limit 1 2 get # get x desc alpha store d").unwrap();
        assert_eq!(o.by.as_deref(), Some(&b"w_*"[..]));
        assert!(!o.dontsort && o.desc && o.alpha);
        assert_eq!((o.limit_start, o.limit_count), (1, 2));
        assert_eq!(o.gets, args("# x"));
        assert_eq!(o.store.as_deref(), Some(&b"d"[..]));
        assert!(o.reads_pattern_keys());
        // A constant BY stops sorting for good, even when a later BY has a '*'.
        let o = opts("sort k by nosort by w_*").unwrap();
        assert!(o.dontsort && !o.reads_pattern_keys());
        assert!(!opts("sort k get # get const").unwrap().reads_pattern_keys());
        assert_eq!(opts("sort k limit 1"), Err(SYNTAX));
        assert_eq!(opts("sort k limit 1 x"), Err(NOT_INT));
        assert_eq!(opts("sort k limit 01 1"), Err(NOT_INT));
        assert_eq!(opts("sort k store"), Err(SYNTAX));
        assert_eq!(opts("sort_ro k store d"), Err(SYNTAX));
        assert_eq!(opts("sort k bogus"), Err(SYNTAX));
        assert!(opts("sort k ASC Desc ALPHA").unwrap().desc);
    }

    #[test]
    fn patterns_substitute_the_first_star() {
        assert_eq!(pattern_key(b"w_*", b"3"), Some((b"w_3".to_vec(), None)));
        assert_eq!(
            pattern_key(b"o_*->weight", b"3"),
            Some((b"o_3".to_vec(), Some(b"weight".to_vec())))
        );
        // "->" with nothing after it is part of the key name.
        assert_eq!(pattern_key(b"x:*->", b"a"), Some((b"x:a->".to_vec(), None)));
        // Only the first '*' is replaced; "->" before the '*' does not count.
        assert_eq!(
            pattern_key(b"a->*_*", b"z"),
            Some((b"a->z_*".to_vec(), None))
        );
        assert_eq!(
            pattern_key(b"*x->f->g", b"e"),
            Some((b"ex".to_vec(), Some(b"f->g".to_vec())))
        );
        assert_eq!(pattern_key(b"const", b"e"), None);
    }

    #[test]
    fn scores_as_fast_float_strtod() {
        for (s, v) in [
            ("1", 1.0),
            ("-2.5", -2.5),
            ("1e3", 1000.0),
            ("1E+3", 1000.0),
            ("1.", 1.0),
            (".5", 0.5),
            ("-.5", -0.5),
            ("+3", 3.0),
            ("00012", 12.0),
            ("inf", f64::INFINITY),
            ("+inf", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("", 0.0),
            ("0e999", 0.0),
            ("1e400", f64::INFINITY),
            ("-1e400", f64::NEG_INFINITY),
            ("1e-400", 0.0),
            ("5\0junk", 5.0),
        ] {
            assert_eq!(score_of(s.as_bytes()), Ok(v), "{s:?}");
        }
        assert!(score_of(b"1e-320").is_ok_and(|v| v > 0.0 && v < 1e-300));
        for s in [
            "5 ", " 5", "  ", "abc", "nan", "NaN", "-nan", "1e", "1e+", "e5", ".", "-", "+",
            "0x10", "0x", "infx", "1,5", "1_0", "++1",
        ] {
            assert_eq!(score_of(s.as_bytes()), Err(()), "{s:?}");
        }
    }

    #[test]
    fn limit_ranges_as_redis() {
        let l = list(&["a", "b", "c", "d", "e"]);
        let range = |s: &str| {
            let o = opts(s).unwrap();
            let r = load(Some(&l), &o);
            (strs(&r.elems), r.start, r.end)
        };
        // Sorted: every element is loaded, the range applies to the sorted vector.
        assert_eq!(
            range("sort k limit 1 2").1..=range("sort k limit 1 2").2,
            1..=2
        );
        assert_eq!(
            (range("sort k limit 3 100").1, range("sort k limit 3 100").2),
            (3, 4)
        );
        assert_eq!(
            (range("sort k limit -5 2").1, range("sort k limit -5 2").2),
            (0, 1)
        );
        assert_eq!(
            (range("sort k limit 5 1").1, range("sort k limit 5 1").2),
            (4, 3)
        );
        assert_eq!(
            (range("sort k limit 0 0").1, range("sort k limit 0 0").2),
            (0, -1)
        );
        assert_eq!(
            (range("sort k limit 2 -7").1, range("sort k limit 2 -7").2),
            (2, 4)
        );
        // Not sorted: a list loads just the range, in its order (reversed by DESC).
        assert_eq!(
            range("sort k by nosort limit 1 2"),
            (strs(&args("b c")), 0, 1)
        );
        assert_eq!(
            strs(&load(Some(&l), &opts("sort k by nosort desc limit 1 3").unwrap()).elems),
            vec!["d", "c", "b"]
        );
        assert_eq!(
            strs(&load(Some(&l), &opts("sort k by nosort desc").unwrap()).elems),
            vec!["e", "d", "c", "b", "a"]
        );
        let r = load(Some(&l), &opts("sort k by nosort limit 9 9").unwrap());
        assert!(r.elems.is_empty() && r.end < r.start);
        let r = load(None, &opts("sort k").unwrap());
        assert!(r.elems.is_empty() && r.end < r.start);
    }

    #[test]
    fn sorted_sets_unsorted_keep_their_order() {
        let mut z = Zset::default();
        for (m, s) in [("a", 1.0), ("b", 5.0), ("c", 2.0), ("d", 10.0), ("e", 3.0)] {
            z.insert(m.as_bytes(), s);
        }
        let z = Coll::Zset(z);
        let got = |s: &str| {
            let r = load(Some(&z), &opts(s).unwrap());
            let n = (r.end - r.start + 1).max(0) as usize;
            strs(&r.elems[r.start.max(0) as usize..][..n])
        };
        assert_eq!(got("sort z by nosort"), vec!["a", "c", "e", "b", "d"]);
        assert_eq!(got("sort z by nosort desc"), vec!["d", "b", "e", "c", "a"]);
        assert_eq!(got("sort z by nosort desc limit 0 2"), vec!["d", "b"]);
        assert_eq!(got("sort z by nosort limit 1 2"), vec!["c", "e"]);
        assert_eq!(got("sort z by nosort desc limit 1 2"), vec!["b", "e"]);
        assert!(got("sort z by nosort limit 5 10").is_empty());
        assert_eq!(got("sort z by nosort limit -10 100").len(), 5);
    }

    #[test]
    fn a_set_stored_unsorted_is_sorted_alpha() {
        let mut s = Set::default();
        for m in ["b", "a", "c"] {
            s.insert(m.as_bytes());
        }
        let s = Coll::Set(s);
        let r = load(Some(&s), &opts("sort s by nosort store d").unwrap());
        assert!(!r.dontsort && r.alpha && !r.by);
        let r = load(Some(&s), &opts("sort s by nosort").unwrap());
        assert!(r.dontsort);
    }

    #[test]
    fn comparisons_as_sort_compare() {
        let e = args("10 9 2 b a");
        let e = &e[..];
        let sorted =
            |order: Vec<usize>| strs(&order.iter().map(|&i| e[i].clone()).collect::<Vec<_>>());
        assert_eq!(
            sort_order(&e[..3], None, false, false, false).map(|o| o.len()),
            Ok(3)
        );
        assert_eq!(
            sorted(sort_order(&e[..3], None, false, false, false).unwrap()),
            vec!["2", "9", "10"]
        );
        assert_eq!(
            sorted(sort_order(&e[..3], None, false, true, false).unwrap()),
            vec!["10", "9", "2"]
        );
        assert_eq!(sort_order(e, None, false, false, false), Err(()));
        assert_eq!(
            sorted(sort_order(e, None, true, false, false).unwrap()),
            vec!["10", "2", "9", "a", "b"]
        );
        // BY values: missing ones score 0 (numeric) or come first (ALPHA); equal scores
        // fall back to the elements' bytes.
        let by = vec![
            Some(b"3".to_vec()),
            None,
            Some(b"3".to_vec()),
            Some(b"1".to_vec()),
            None,
        ];
        assert_eq!(
            sorted(sort_order(e, Some(&by), false, false, false).unwrap()),
            vec!["9", "a", "b", "10", "2"]
        );
        assert_eq!(
            sorted(sort_order(e, Some(&by), true, false, false).unwrap()),
            vec!["9", "a", "b", "10", "2"]
        );
        // ALPHA ties keep the input order, also when descending.
        assert_eq!(
            sorted(sort_order(e, Some(&by), true, true, false).unwrap()),
            vec!["10", "2", "b", "9", "a"]
        );
        let bad = vec![Some(b"x".to_vec()), None, None, None, None];
        assert_eq!(sort_order(e, Some(&bad), false, false, false), Err(()));
        // Without STORE, ALPHA compares C strings (up to a NUL); with STORE, all bytes.
        let z = vec![b"a\0b".to_vec(), b"a\0a".to_vec()];
        assert_eq!(
            sort_order(&z, None, true, false, false).unwrap(),
            vec![0, 1]
        );
        assert_eq!(sort_order(&z, None, true, false, true).unwrap(), vec![1, 0]);
    }
}
