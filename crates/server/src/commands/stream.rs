//! STREAM commands (Redis 8.0's `t_stream.c`): XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM,
//! XREAD, XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO, XSETID. Each runs
//! on the worker that owns its keys, on the decoded stream the keyspace hands out (see
//! `crate::coll::stream`); XREAD and XREADGROUP over keys of several workers run on lent
//! values like every multi-key command.
//!
//! Arguments are checked in the order Redis checks them, so that the same bad command gets
//! the same error.
//!
//! XREAD and XREADGROUP with BLOCK that find nothing ask to wait ([`Exec::block_on_again`]);
//! XREAD's `$` is then replaced by the stream's last ID, as Redis rewrites the blocked
//! command, so that running it again serves what came after.

use super::{coll_error, is, parse_i64, Exec, TimeoutReply};
use crate::coll::stream::{
    parse_id, Consumer, Fields, Group, Need, Pending, Stream, StreamId, Trim,
};
use crate::coll::{Coll, VALUE_TYPE_STREAM};
use crate::reply::errors::{NOT_INT, SYNTAX};
use crate::reply::Reply;
use skerry_resp::Proto;

const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// The stream under `key` to change; None (after replying) when of another type. Ok(None)
/// inside: the key does not exist.
fn take(x: &mut Exec, key: &[u8]) -> Result<Option<Stream>, ()> {
    match x.ks.take_coll(x.db, key, VALUE_TYPE_STREAM, x.now_ms) {
        Ok(c) => Ok(c.map(Coll::into_stream)),
        Err(e) => {
            coll_error(x.reply, e);
            Err(())
        }
    }
}

/// Stores `s` under `key`; false when the write was refused.
fn put(x: &mut Exec, key: &[u8], s: Stream) -> bool {
    let t = x.thresholds();
    x.ks.put_coll(x.db, key, Coll::Stream(s), &t, x.now_ms)
}

/// Hands back a stream taken with [`take`] that the command did not change.
fn keep(x: &mut Exec, key: &[u8], s: Stream) {
    x.ks.keep_coll(x.db, key, Coll::Stream(s));
}

/// Runs `f` on the stream under `key` (None when missing); replies WRONGTYPE itself.
fn read(x: &mut Exec, key: &[u8], f: impl FnOnce(&mut Reply, Option<&Stream>)) {
    match x.ks.coll(x.db, key, VALUE_TYPE_STREAM, x.now_ms) {
        Ok(c) => f(x.reply, c.map(|c| c.as_stream())),
        Err(e) => coll_error(x.reply, e),
    }
}

/// Looks at the stream under `key` without counting a hit; Err after replying WRONGTYPE.
fn peek<R>(x: &mut Exec, key: &[u8], f: impl FnOnce(Option<&Stream>) -> R) -> Result<R, ()> {
    match x.ks.peek_coll(x.db, key, VALUE_TYPE_STREAM, x.now_ms) {
        Ok(c) => Ok(f(c.map(|c| c.as_stream()))),
        Err(e) => {
            coll_error(x.reply, e);
            Err(())
        }
    }
}

fn reply_id(r: &mut Reply, id: StreamId) {
    r.bulk(&id.to_bytes());
}

fn reply_entry(r: &mut Reply, id: StreamId, fields: &Fields) {
    r.array(2);
    reply_id(r, id);
    r.array(fields.len());
    for f in fields {
        r.bulk(f);
    }
}

fn int_arg(r: &mut Reply, a: &[u8]) -> Option<i64> {
    let v = parse_i64(a);
    if v.is_none() {
        r.error(NOT_INT);
    }
    v
}

fn int_arg_msg(r: &mut Reply, a: &[u8], msg: &str) -> Option<i64> {
    let v = parse_i64(a);
    if v.is_none() {
        r.error(&format!("ERR {msg}"));
    }
    v
}

/// A strict ID (no `-` / `+`), replying the error when invalid.
fn strict_id(r: &mut Reply, a: &[u8]) -> Option<StreamId> {
    match parse_id(a, 0, true, false) {
        Some((id, _)) => Some(id),
        None => {
            r.error(INVALID_ID);
            None
        }
    }
}

/// An ID (with `-` / `+`), missing sequence `missing_seq`.
fn loose_id(r: &mut Reply, a: &[u8], missing_seq: u64) -> Option<StreamId> {
    match parse_id(a, missing_seq, false, false) {
        Some((id, _)) => Some(id),
        None => {
            r.error(INVALID_ID);
            None
        }
    }
}

/// An interval bound: `(id` excludes (Redis's `streamParseIntervalIDOrReply`).
fn interval_id(r: &mut Reply, a: &[u8], missing_seq: u64) -> Option<(StreamId, bool)> {
    if a.len() > 1 && a[0] == b'(' {
        match parse_id(&a[1..], missing_seq, true, false) {
            Some((id, _)) => Some((id, true)),
            None => {
                r.error(INVALID_ID);
                None
            }
        }
    } else {
        loose_id(r, a, missing_seq).map(|id| (id, false))
    }
}

/// A range start (exclusive bound moved up), replying its error.
fn range_start(r: &mut Reply, a: &[u8]) -> Option<StreamId> {
    let (id, ex) = interval_id(r, a, 0)?;
    if !ex {
        return Some(id);
    }
    let next = id.incr();
    if next.is_none() {
        r.error("ERR invalid start ID for the interval");
    }
    next
}

/// A range end (exclusive bound moved down), replying its error.
fn range_end(r: &mut Reply, a: &[u8]) -> Option<StreamId> {
    let (id, ex) = interval_id(r, a, u64::MAX)?;
    if !ex {
        return Some(id);
    }
    let prev = id.decr();
    if prev.is_none() {
        r.error("ERR invalid end ID for the interval");
    }
    prev
}

fn nogroup_key_group(r: &mut Reply, key: &[u8], group: &[u8], suffix: &str) {
    let mut m = b"NOGROUP No such key '".to_vec();
    m.extend_from_slice(key);
    m.extend_from_slice(b"' or consumer group '");
    m.extend_from_slice(group);
    m.push(b'\'');
    m.extend_from_slice(suffix.as_bytes());
    r.error(&String::from_utf8_lossy(&m));
}

fn nogroup_for_key(r: &mut Reply, group: &[u8], key: &[u8]) {
    let mut m = b"NOGROUP No such consumer group '".to_vec();
    m.extend_from_slice(group);
    m.extend_from_slice(b"' for key name '");
    m.extend_from_slice(key);
    m.push(b'\'');
    r.error(&String::from_utf8_lossy(&m));
}

/// Parsed XADD / XTRIM options.
#[derive(Default)]
struct TrimArgs {
    how: Option<Trim>,
    approx: bool,
    limit: u64,
    nomkstream: bool,
    /// The ID argument of XADD: the ID and whether its sequence was given.
    id: Option<(StreamId, bool)>,
    /// Where XADD's ID is.
    idpos: usize,
}

/// Redis's `streamParseAddOrTrimArgsOrReply`; `node_max_entries` is
/// `stream-node-max-entries` (the default LIMIT of `~` is 100 nodes).
fn parse_trim(r: &mut Reply, a: &[&[u8]], xadd: bool, node_max_entries: u64) -> Option<TrimArgs> {
    let mut t = TrimArgs::default();
    let mut limit_given = false;
    let mut i = 2;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let opt = a[i];
        if xadd && opt == b"*" {
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if t.how.is_some() {
                r.error("ERR syntax error, MAXLEN and MINID options at the same time are not compatible");
                return None;
            }
            t.approx = false;
            let next = a[i + 1];
            if more >= 2 && next == b"~" {
                t.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            if is(opt, "maxlen") {
                let n = int_arg(r, a[i + 1])?;
                if n < 0 {
                    r.error("ERR The MAXLEN argument must be >= 0.");
                    return None;
                }
                t.how = Some(Trim::MaxLen(n as u64));
            } else {
                t.how = Some(Trim::MinId(strict_id(r, a[i + 1])?));
            }
            i += 1;
        } else if is(opt, "limit") && more > 0 {
            let n = int_arg(r, a[i + 1])?;
            if n < 0 {
                r.error("ERR The LIMIT argument must be >= 0.");
                return None;
            }
            t.limit = n as u64;
            limit_given = true;
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            t.nomkstream = true;
        } else if xadd {
            match parse_id(opt, 0, true, true) {
                Some(id) => t.id = Some(id),
                None => {
                    r.error(INVALID_ID);
                    return None;
                }
            }
            break;
        } else {
            r.error(SYNTAX);
            return None;
        }
        i += 1;
    }
    t.idpos = i;
    if t.limit > 0 && t.how.is_none() {
        r.error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy");
        return None;
    }
    if !xadd && t.how.is_none() {
        r.error("ERR syntax error, XTRIM must be called with a trimming strategy");
        return None;
    }
    if limit_given {
        if !t.approx {
            r.error("ERR syntax error, LIMIT cannot be used without the special ~ option");
            return None;
        }
    } else if t.approx {
        t.limit = node_max_entries.saturating_mul(100);
        if t.limit == 0 {
            t.limit = 10000;
        }
        t.limit = t.limit.min(1_000_000);
    } else {
        t.limit = 0;
    }
    Some(t)
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value ...
pub fn xadd(x: &mut Exec, a: &[&[u8]]) {
    let th = x.thresholds();
    let Some(t) = parse_trim(x.reply, a, true, th.stream_node_max_entries as u64) else {
        return;
    };
    let field_pos = t.idpos + 1;
    if a.len() < field_pos + 2 || !(a.len() - field_pos).is_multiple_of(2) {
        return x
            .reply
            .error("ERR wrong number of arguments for 'xadd' command");
    }
    if let Some((id, true)) = t.id {
        if id.is_zero() {
            return x
                .reply
                .error("ERR The ID specified in XADD must be greater than 0-0");
        }
    }
    let Ok(s) = take(x, a[1]) else { return };
    let mut s = match s {
        Some(s) => s,
        None if t.nomkstream => return x.reply.null(),
        None => Stream::default(),
    };
    if s.last_id == StreamId::MAX {
        keep(x, a[1], s);
        return x
            .reply
            .error("ERR The stream has exhausted the last possible ID, unable to add more items");
    }
    let id = match t.id {
        Some((id, true)) => Some(id),
        Some((id, false)) => {
            if s.last_id.ms == id.ms {
                if s.last_id.seq == u64::MAX {
                    None
                } else {
                    Some(StreamId::new(id.ms, s.last_id.seq + 1))
                }
            } else {
                Some(id)
            }
        }
        None => {
            let ms = x.now_ms.max(0) as u64;
            if ms > s.last_id.ms {
                Some(StreamId::new(ms, 0))
            } else {
                s.last_id.incr()
            }
        }
    };
    let Some(id) = id.filter(|id| *id > s.last_id) else {
        keep(x, a[1], s);
        return x.reply.error(
            "ERR The ID specified in XADD is equal or smaller than the target stream top item",
        );
    };
    let fields: Fields = a[field_pos..].iter().map(|f| f.to_vec()).collect();
    s.append(
        id,
        fields,
        th.stream_node_max_entries as u64,
        th.stream_node_max_bytes as u64,
    );
    if let Some(how) = t.how {
        s.trim(how, t.approx, t.limit);
    }
    if put(x, a[1], s) {
        reply_id(x.reply, id);
    }
}

/// XRANGE / XREVRANGE key start end [COUNT count]
fn range(x: &mut Exec, a: &[&[u8]], rev: bool) {
    let (sa, ea) = if rev { (a[3], a[2]) } else { (a[2], a[3]) };
    let Some(start) = range_start(x.reply, sa) else {
        return;
    };
    let Some(end) = range_end(x.reply, ea) else {
        return;
    };
    let mut count: i64 = -1;
    let mut j = 4;
    while j < a.len() {
        if is(a[j], "count") && j + 1 < a.len() {
            let Some(c) = int_arg(x.reply, a[j + 1]) else {
                return;
            };
            count = c.max(0);
            j += 2;
        } else {
            return x.reply.error(SYNTAX);
        }
    }
    read(x, a[1], |r, s| {
        let Some(s) = s else {
            return r.array(0);
        };
        if count == 0 {
            return r.null_array();
        }
        let limit = if count < 0 {
            usize::MAX
        } else {
            count as usize
        };
        let items: Vec<(&StreamId, &Fields)> = if rev {
            s.range(start, end).rev().take(limit).collect()
        } else {
            s.range(start, end).take(limit).collect()
        };
        r.array(items.len());
        for (id, f) in items {
            reply_entry(r, *id, f);
        }
    });
}

/// XRANGE key start end [COUNT count]
pub fn xrange(x: &mut Exec, a: &[&[u8]]) {
    range(x, a, false)
}

/// XREVRANGE key end start [COUNT count]
pub fn xrevrange(x: &mut Exec, a: &[&[u8]]) {
    range(x, a, true)
}

/// XLEN key
pub fn xlen(x: &mut Exec, a: &[&[u8]]) {
    read(x, a[1], |r, s| r.int(s.map_or(0, |s| s.len() as i64)));
}

/// XDEL key id [id ...]
pub fn xdel(x: &mut Exec, a: &[&[u8]]) {
    let Ok(exists) = peek(x, a[1], |s| s.is_some()) else {
        return;
    };
    if !exists {
        return x.reply.int(0);
    }
    let mut ids = Vec::with_capacity(a.len() - 2);
    for arg in &a[2..] {
        let Some(id) = strict_id(x.reply, arg) else {
            return;
        };
        ids.push(id);
    }
    let Ok(any) = peek(x, a[1], |s| {
        s.is_some_and(|s| ids.iter().any(|id| s.contains(*id)))
    }) else {
        return;
    };
    if !any {
        return x.reply.int(0);
    }
    let Ok(Some(mut s)) = take(x, a[1]) else {
        return;
    };
    let deleted = ids.iter().filter(|id| s.delete(**id)).count();
    if put(x, a[1], s) {
        x.reply.int(deleted as i64);
    }
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
pub fn xtrim(x: &mut Exec, a: &[&[u8]]) {
    let th = x.thresholds();
    let Some(t) = parse_trim(x.reply, a, false, th.stream_node_max_entries as u64) else {
        return;
    };
    let how = t.how.expect("checked");
    let Ok(exists) = peek(x, a[1], |s| s.is_some()) else {
        return;
    };
    if !exists {
        return x.reply.int(0);
    }
    // Trim the taken stream and write it only when something went (a stream taken and
    // not put back is only gone from the decoded cache; its record stays).
    let Ok(Some(mut s)) = take(x, a[1]) else {
        return;
    };
    let deleted = s.trim(how, t.approx, t.limit);
    if deleted == 0 {
        return x.reply.int(0);
    }
    if put(x, a[1], s) {
        x.reply.int(deleted as i64);
    }
}

/// The parsed arguments of XREAD / XREADGROUP.
struct ReadArgs<'a> {
    block_ms: Option<u64>,
    count: usize,
    noack: bool,
    group: Option<(&'a [u8], &'a [u8])>,
    keys: Vec<&'a [u8]>,
    id_args: Vec<&'a [u8]>,
    streams_arg: usize,
}

fn parse_read<'a>(r: &mut Reply, a: &[&'a [u8]], xreadgroup: bool) -> Option<ReadArgs<'a>> {
    let mut out = ReadArgs {
        block_ms: None,
        count: 0,
        noack: false,
        group: None,
        keys: Vec::new(),
        id_args: Vec::new(),
        streams_arg: 0,
    };
    let mut i = 1;
    while i < a.len() {
        let more = a.len() - i - 1;
        let o = a[i];
        if is(o, "block") && more > 0 {
            i += 1;
            let Some(ms) = parse_i64(a[i]) else {
                r.error("ERR timeout is not an integer or out of range");
                return None;
            };
            if ms < 0 {
                r.error("ERR timeout is negative");
                return None;
            }
            out.block_ms = Some(ms as u64);
        } else if is(o, "count") && more > 0 {
            i += 1;
            out.count = int_arg(r, a[i])?.max(0) as usize;
        } else if is(o, "streams") && more > 0 {
            out.streams_arg = i + 1;
            let n = a.len() - out.streams_arg;
            if !n.is_multiple_of(2) {
                let (name, symbol) = if xreadgroup {
                    ("xreadgroup", "ID or '>'")
                } else {
                    ("xread", "ID, '+', or '$'")
                };
                r.error(&format!(
                    "ERR Unbalanced '{name}' list of streams: for each stream key an {symbol} must be specified."
                ));
                return None;
            }
            let n = n / 2;
            out.keys = a[out.streams_arg..out.streams_arg + n].to_vec();
            out.id_args = a[out.streams_arg + n..].to_vec();
            break;
        } else if is(o, "group") && more >= 2 {
            if !xreadgroup {
                r.error("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.");
                return None;
            }
            out.group = Some((a[i + 1], a[i + 2]));
            i += 2;
        } else if is(o, "noack") {
            if !xreadgroup {
                r.error("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.");
                return None;
            }
            out.noack = true;
        } else {
            r.error(SYNTAX);
            return None;
        }
        i += 1;
    }
    if out.streams_arg == 0 {
        r.error(SYNTAX);
        return None;
    }
    if xreadgroup && out.group.is_none() {
        r.error("ERR Missing GROUP option for XREADGROUP");
        return None;
    }
    Some(out)
}

/// The key positions of XREAD / XREADGROUP: after STREAMS, the first half of the rest.
pub fn keys_xread(argv: &[&[u8]]) -> smallvec::SmallVec<[usize; 8]> {
    let mut out = smallvec::SmallVec::new();
    // Redis's xreadGetKeys: the first STREAMS that is not an option's value.
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i];
        if is(a, "block") || is(a, "count") {
            i += 2;
            continue;
        }
        if is(a, "group") {
            i += 3;
            continue;
        }
        if is(a, "streams") {
            let rest = argv.len() - i - 1;
            if rest == 0 || !rest.is_multiple_of(2) {
                return out;
            }
            out.extend(i + 1..i + 1 + rest / 2);
            return out;
        }
        i += 1;
    }
    out
}

/// One key's part of an XREAD reply: the entries after `after`, `count` at most (0 = all).
fn entries_after(s: &Stream, after: StreamId, count: usize) -> Vec<(StreamId, Fields)> {
    let Some(start) = after.incr() else {
        return Vec::new();
    };
    let limit = if count == 0 { usize::MAX } else { count };
    s.range(start, StreamId::MAX)
        .take(limit)
        .map(|(id, f)| (*id, f.clone()))
        .collect()
}

/// One key's part of an XREAD / XREADGROUP reply: the key and its entries (None: a pending
/// entry deleted since).
type KeyPart<'a> = (&'a [u8], Vec<(StreamId, Option<Fields>)>);

fn reply_key_entries(r: &mut Reply, key: &[u8], entries: &[(StreamId, Option<Fields>)]) {
    if r.proto == Proto::Resp2 {
        r.array(2);
    }
    r.bulk(key);
    r.array(entries.len());
    for (id, f) in entries {
        match f {
            Some(f) => reply_entry(r, *id, f),
            None => {
                r.array(2);
                reply_id(r, *id);
                r.null_array();
            }
        }
    }
}

fn reply_read_header(r: &mut Reply, n: usize) {
    if r.proto == Proto::Resp2 {
        r.array(n);
    } else {
        r.map(n);
    }
}

/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
pub fn xread(x: &mut Exec, a: &[&[u8]]) {
    let Some(p) = parse_read(x.reply, a, false) else {
        return;
    };
    let mut ids = Vec::with_capacity(p.keys.len());
    for (k, arg) in p.keys.iter().zip(&p.id_args) {
        let Ok(info) = peek(x, k, |s| s.map(|s| (s.last_id, s.last_valid_id(), s.len()))) else {
            return;
        };
        let id = if *arg == b"$" {
            info.map_or(StreamId::MIN, |i| i.0)
        } else if *arg == b"+" {
            match info {
                Some((_, last, len)) if len > 0 => last.decr().unwrap_or(StreamId::MAX),
                _ => StreamId::MIN,
            }
        } else if *arg == b">" {
            return x.reply.error(
                "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
            );
        } else {
            match strict_id(x.reply, arg) {
                Some(id) => id,
                None => return,
            }
        };
        ids.push(id);
    }
    let mut parts: Vec<KeyPart> = Vec::new();
    for (k, after) in p.keys.iter().zip(&ids) {
        let got = match x.ks.coll(x.db, k, VALUE_TYPE_STREAM, x.now_ms) {
            Ok(Some(c)) => {
                let s = c.as_stream();
                if !s.is_empty() && s.last_valid_id() > *after {
                    Some(entries_after(s, *after, p.count))
                } else {
                    None
                }
            }
            Ok(None) => None,
            Err(e) => return coll_error(x.reply, e),
        };
        if let Some(e) = got {
            parts.push((k, e.into_iter().map(|(i, f)| (i, Some(f))).collect()));
        }
    }
    if !parts.is_empty() {
        reply_read_header(x.reply, parts.len());
        for (k, e) in &parts {
            reply_key_entries(x.reply, k, e);
        }
        return;
    }
    match p.block_ms {
        Some(ms) => {
            // Run again with `$` replaced by the IDs it stood for now.
            let mut again: Vec<Vec<u8>> = a.iter().map(|v| v.to_vec()).collect();
            let first_id = p.streams_arg + p.keys.len();
            for (n, arg) in p.id_args.iter().enumerate() {
                if *arg == b"$" {
                    again[first_id + n] = ids[n].to_bytes();
                }
            }
            let keys = distinct(&p.keys);
            x.block_on_again(&keys, ms, TimeoutReply::NullArray, again);
        }
        None => x.reply.null_array(),
    }
}

fn distinct<'a>(keys: &[&'a [u8]]) -> Vec<&'a [u8]> {
    let mut out: Vec<&[u8]> = Vec::with_capacity(keys.len());
    for &k in keys {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key
/// [key ...] id [id ...]
pub fn xreadgroup(x: &mut Exec, a: &[&[u8]]) {
    let Some(p) = parse_read(x.reply, a, true) else {
        return;
    };
    let (gname, cname) = p.group.expect("checked");
    // Every key first: its type, its group, its ID.
    let mut ids = Vec::with_capacity(p.keys.len());
    for (k, arg) in p.keys.iter().zip(&p.id_args) {
        let Ok(has_group) = peek(x, k, |s| s.is_some_and(|s| s.groups().contains_key(gname)))
        else {
            return;
        };
        if !has_group {
            return nogroup_key_group(x.reply, k, gname, " in XREADGROUP with GROUP option");
        }
        let id = if *arg == b"$" {
            return x.reply.error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.");
        } else if *arg == b"+" {
            return x.reply.error("ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set.");
        } else if *arg == b">" {
            StreamId::MAX
        } else {
            match strict_id(x.reply, arg) {
                Some(id) => id,
                None => return,
            }
        };
        ids.push(id);
    }
    let now = x.now_ms;
    let mut parts: Vec<KeyPart> = Vec::new();
    for (n, k) in p.keys.iter().enumerate() {
        let dirty_before = x.ks.stats.dirty;
        let Ok(Some(mut s)) = take(x, k) else {
            return;
        };
        // The same key twice: the second sees the first's changes (taken again).
        let gt = ids[n];
        let mut g = s.take_group(gname).expect("checked");
        // The pending entries changed (only their PEL pages are written again).
        let mut pel_ids: Vec<StreamId> = Vec::new();
        let history = gt != StreamId::MAX;
        let serve = history || (!s.is_empty() && s.last_valid_id() > g.last_id);
        let created = g.create_consumer(cname, now);
        g.consumers.get_mut(cname).expect("created").seen_time = now;
        let mut out: Vec<(StreamId, Option<Fields>)> = Vec::new();
        if serve {
            if history {
                let start = gt.incr().unwrap_or(StreamId::MAX);
                let c = g.consumers.get(cname).expect("created");
                let limit = if p.count == 0 { usize::MAX } else { p.count };
                let pend: Vec<StreamId> = c.pel.range(start..).take(limit).copied().collect();
                for id in pend {
                    match s.get(id) {
                        Some(f) => {
                            out.push((id, Some(f.clone())));
                            if let Some(pe) = g.pel.get_mut(&id) {
                                pe.delivery_time = now;
                                pe.delivery_count += 1;
                                pel_ids.push(id);
                            }
                        }
                        None => out.push((id, None)),
                    }
                }
            } else {
                let got = entries_after(&s, g.last_id, p.count);
                for (id, f) in got {
                    if id > g.last_id {
                        s.advance_group(&mut g, id);
                    }
                    if !p.noack {
                        deliver(&mut g, id, cname, now);
                        pel_ids.push(id);
                    }
                    out.push((id, Some(f)));
                }
            }
        }
        s.put_group(gname, g, pel_ids);
        // Nothing served to a known consumer of a call that is about to block: only its
        // seen-time moved, which is not written (a blocked XREADGROUP runs again on every
        // write of its key, and a write of its own would wake it again).
        if (serve || created || p.block_ms.is_none()) && !put(x, k, s) {
            return;
        }
        // Redis counts a new consumer and a moved last-delivered ID as a change each; the
        // delivery counts of a history read are not (they are not propagated either).
        let advanced = !history && !out.is_empty();
        x.ks.count_changes_as(dirty_before, u64::from(created) + u64::from(advanced));
        if serve {
            parts.push((k, out));
        }
    }
    if !parts.is_empty() {
        reply_read_header(x.reply, parts.len());
        for (k, e) in &parts {
            reply_key_entries(x.reply, k, e);
        }
        return;
    }
    match p.block_ms {
        Some(ms) => {
            let keys = distinct(&p.keys);
            x.block_on(&keys, ms, TimeoutReply::NullArray);
        }
        None => x.reply.null_array(),
    }
}

/// Records the delivery of `id` to consumer `cname` now (XREADGROUP with `>`).
fn deliver(g: &mut Group, id: StreamId, cname: &[u8], now: i64) {
    match g.pel.get_mut(&id) {
        Some(pe) => {
            // Already pending (the group's last ID was moved back): it changes owner.
            let old = std::mem::replace(&mut pe.consumer, cname.to_vec());
            pe.delivery_time = now;
            pe.delivery_count = 1;
            if let Some(c) = g.consumers.get_mut(&old) {
                c.pel.remove(&id);
            }
        }
        None => {
            g.pel.insert(
                id,
                Pending {
                    consumer: cname.to_vec(),
                    delivery_time: now,
                    delivery_count: 1,
                },
            );
        }
    }
    let c = g.consumers.get_mut(cname).expect("created");
    c.pel.insert(id);
    c.active_time = now;
}

/// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER|HELP ...
pub fn xgroup(x: &mut Exec, a: &[&[u8]]) {
    let opt = a[1];
    let mut mkstream = false;
    let mut entries_read: i64 = -1;
    if a.len() >= 4 {
        let create = is(opt, "create");
        let setid = is(opt, "setid");
        let mut i = 5;
        while i < a.len() {
            if create && is(a[i], "mkstream") {
                mkstream = true;
                i += 1;
            } else if (create || setid) && is(a[i], "entriesread") && i + 1 < a.len() {
                let Some(v) = int_arg(x.reply, a[i + 1]) else {
                    return;
                };
                if v < 0 && v != -1 {
                    return x
                        .reply
                        .error("ERR value for ENTRIESREAD must be positive or -1");
                }
                entries_read = v;
                i += 2;
            } else {
                return crate::commands::subcommand_syntax_error(x.reply, "XGROUP", opt);
            }
        }
    }
    if is(opt, "help") && a.len() == 2 {
        return x.reply.simple_lines(&[
            "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
            "HELP",
            "    Print this help.",
        ]);
    }
    if a.len() < 4 {
        return crate::commands::subcommand_syntax_error(x.reply, "XGROUP", opt);
    }
    let (key, gname) = (a[2], a[3]);
    let Ok(state) = peek(x, key, |s| s.map(|s| s.groups().contains_key(gname))) else {
        return;
    };
    if !mkstream {
        let Some(has_group) = state else {
            return x.reply.error("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.");
        };
        if !has_group && (is(opt, "setid") || is(opt, "createconsumer") || is(opt, "delconsumer")) {
            return nogroup_for_key(x.reply, gname, key);
        }
    }
    let now = x.now_ms;
    if is(opt, "create") && (5..=8).contains(&a.len()) {
        let id = if a[4] == b"$" {
            None
        } else {
            match strict_id(x.reply, a[4]) {
                Some(id) => Some(id),
                None => return,
            }
        };
        if state == Some(true) {
            return x
                .reply
                .error("BUSYGROUP Consumer Group name already exists");
        }
        let Ok(s) = take(x, key) else { return };
        let mut s = s.unwrap_or_default();
        let id = id.unwrap_or(s.last_id);
        s.groups_mut().insert(
            gname.to_vec(),
            Group {
                last_id: id,
                entries_read,
                ..Default::default()
            },
        );
        if put(x, key, s) {
            x.reply.ok();
        }
    } else if is(opt, "setid") && (a.len() == 5 || a.len() == 7) {
        let id = if a[4] == b"$" {
            None
        } else {
            match loose_id(x.reply, a[4], 0) {
                Some(id) => Some(id),
                None => return,
            }
        };
        if state.is_none() {
            // SETID with MKSTREAM is a syntax error above; a missing key was answered.
            return crate::commands::subcommand_syntax_error(x.reply, "XGROUP", opt);
        }
        let Ok(Some(mut s)) = take(x, key) else {
            return;
        };
        let id = id.unwrap_or(s.last_id);
        let g = s.groups_mut().get_mut(gname).expect("checked");
        g.last_id = id;
        g.entries_read = entries_read;
        if put(x, key, s) {
            x.reply.ok();
        }
    } else if is(opt, "destroy") && a.len() == 4 {
        if state != Some(true) {
            return x.reply.int(0);
        }
        let Ok(Some(mut s)) = take(x, key) else {
            return;
        };
        s.groups_mut().remove(gname);
        if put(x, key, s) {
            x.reply.int(1);
        }
    } else if is(opt, "createconsumer") && a.len() == 5 {
        let Ok(exists) = peek(x, key, |s| {
            s.and_then(|s| s.groups().get(gname))
                .is_some_and(|g| g.consumers.contains_key(a[4]))
        }) else {
            return;
        };
        if exists || state != Some(true) {
            return x.reply.int(0);
        }
        let Ok(Some(mut s)) = take(x, key) else {
            return;
        };
        s.groups_mut()
            .get_mut(gname)
            .expect("checked")
            .create_consumer(a[4], now);
        if put(x, key, s) {
            x.reply.int(1);
        }
    } else if is(opt, "delconsumer") && a.len() == 5 {
        let Ok(exists) = peek(x, key, |s| {
            s.and_then(|s| s.groups().get(gname))
                .is_some_and(|g| g.consumers.contains_key(a[4]))
        }) else {
            return;
        };
        if !exists {
            return x.reply.int(0);
        }
        let Ok(Some(mut s)) = take(x, key) else {
            return;
        };
        let g = s.groups_mut().get_mut(gname).expect("checked");
        let c = g.consumers.remove(a[4]).expect("checked");
        for id in &c.pel {
            g.pel.remove(id);
        }
        if put(x, key, s) {
            x.reply.int(c.pel.len() as i64);
        }
    } else {
        crate::commands::subcommand_syntax_error(x.reply, "XGROUP", opt)
    }
}

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
pub fn xsetid(x: &mut Exec, a: &[&[u8]]) {
    let Some(id) = strict_id(x.reply, a[2]) else {
        return;
    };
    let mut entries_added: i64 = -1;
    let mut max_xdel = StreamId::MIN;
    let mut i = 3;
    while i < a.len() {
        let more = a.len() - 1 - i;
        if is(a[i], "entriesadded") && more > 0 {
            let Some(v) = int_arg(x.reply, a[i + 1]) else {
                return;
            };
            if v < 0 {
                return x.reply.error("ERR entries_added must be positive");
            }
            entries_added = v;
            i += 2;
        } else if is(a[i], "maxdeletedid") && more > 0 {
            let Some(m) = strict_id(x.reply, a[i + 1]) else {
                return;
            };
            if id < m {
                return x.reply.error(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                );
            }
            max_xdel = m;
            i += 2;
        } else {
            return x.reply.error(SYNTAX);
        }
    }
    let Ok(info) = peek(x, a[1], |s| {
        s.map(|s| (s.max_deleted_id, s.len(), s.last_valid_id()))
    }) else {
        return;
    };
    let Some((maxdel, len, last)) = info else {
        return x.reply.error("ERR no such key");
    };
    if id < maxdel {
        return x
            .reply
            .error("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id");
    }
    if len > 0 {
        if id < last {
            return x.reply.error(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            );
        }
        if entries_added != -1 && len as i64 > entries_added {
            return x.reply.error(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            );
        }
    }
    let Ok(Some(mut s)) = take(x, a[1]) else {
        return;
    };
    s.last_id = id;
    if entries_added != -1 {
        s.entries_added = entries_added as u64;
    }
    if !max_xdel.is_zero() {
        s.max_deleted_id = max_xdel;
    }
    if put(x, a[1], s) {
        x.reply.ok();
    }
}

/// XACK key group id [id ...]
pub fn xack(x: &mut Exec, a: &[&[u8]]) {
    let Ok(has_group) = peek(x, a[1], |s| {
        s.is_some_and(|s| s.groups().contains_key(a[2]))
    }) else {
        return;
    };
    if !has_group {
        return x.reply.int(0);
    }
    let mut ids = Vec::with_capacity(a.len() - 3);
    for arg in &a[3..] {
        let Some(id) = strict_id(x.reply, arg) else {
            return;
        };
        ids.push(id);
    }
    let Ok(any) = peek(x, a[1], |s| {
        let g = &s.expect("exists").groups()[a[2]];
        ids.iter().any(|id| g.pel.contains_key(id))
    }) else {
        return;
    };
    if !any {
        return x.reply.int(0);
    }
    let Ok(Some(mut s)) = take(x, a[1]) else {
        return;
    };
    let acked = s.ack(a[2], &ids);
    if put(x, a[1], s) {
        x.reply.int(acked as i64);
    }
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
pub fn xpending(x: &mut Exec, a: &[&[u8]]) {
    let justinfo = a.len() == 3;
    if a.len() != 3 && !(6..=9).contains(&a.len()) {
        return x.reply.error(SYNTAX);
    }
    let mut minidle = 0i64;
    let mut start = StreamId::MIN;
    let mut end = StreamId::MAX;
    let mut count = 0i64;
    let mut consumer: Option<&[u8]> = None;
    if a.len() >= 6 {
        let mut si = 3;
        if is(a[3], "idle") {
            let Some(v) = int_arg(x.reply, a[4]) else {
                return;
            };
            minidle = v;
            if a.len() < 8 {
                return x.reply.error(SYNTAX);
            }
            si += 2;
        }
        let Some(c) = int_arg(x.reply, a[si + 2]) else {
            return;
        };
        count = c.max(0);
        let Some(s) = range_start(x.reply, a[si]) else {
            return;
        };
        let Some(e) = range_end(x.reply, a[si + 1]) else {
            return;
        };
        start = s;
        end = e;
        if si + 3 < a.len() {
            consumer = Some(a[si + 3]);
        }
    }
    let now = x.now_ms;
    let (key, gname) = (a[1], a[2]);
    read(x, key, |r, s| {
        let Some(g) = s.and_then(|s| s.groups().get(gname)) else {
            return nogroup_key_group(r, key, gname, "");
        };
        if justinfo {
            r.array(4);
            r.int(g.pel.len() as i64);
            if g.pel.is_empty() {
                r.null();
                r.null();
                r.null_array();
                return;
            }
            reply_id(r, *g.pel.keys().next().expect("not empty"));
            reply_id(r, *g.pel.keys().next_back().expect("not empty"));
            let owners: Vec<(&Vec<u8>, &Consumer)> = g
                .consumers
                .iter()
                .filter(|(_, c)| !c.pel.is_empty())
                .collect();
            r.array(owners.len());
            for (name, c) in owners {
                r.array(2);
                r.bulk(name);
                r.bulk_int(c.pel.len() as i64);
            }
            return;
        }
        let ids: Vec<StreamId> = match consumer {
            Some(cn) => match g.consumers.get(cn) {
                Some(c) if start <= end => c.pel.range(start..=end).copied().collect(),
                Some(_) => Vec::new(),
                None => return r.array(0),
            },
            None if start <= end => g.pel.range(start..=end).map(|(id, _)| *id).collect(),
            None => Vec::new(),
        };
        let mut out = Vec::new();
        for id in ids {
            if out.len() as i64 >= count {
                break;
            }
            let p = &g.pel[&id];
            if minidle != 0 && now - p.delivery_time < minidle {
                continue;
            }
            out.push((id, p));
        }
        r.array(out.len());
        for (id, p) in out {
            r.array(4);
            reply_id(r, id);
            r.bulk(&p.consumer);
            r.int((now - p.delivery_time).max(0));
            r.int(p.delivery_count as i64);
        }
    });
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-ms]
/// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]
pub fn xclaim(x: &mut Exec, a: &[&[u8]]) {
    let (key, gname, cname) = (a[1], a[2], a[3]);
    let Ok(has_group) = peek(x, key, |s| {
        s.is_some_and(|s| s.groups().contains_key(gname))
    }) else {
        return;
    };
    if !has_group {
        return nogroup_key_group(x.reply, key, gname, "");
    }
    let Some(minidle) = int_arg_msg(x.reply, a[4], "Invalid min-idle-time argument for XCLAIM")
    else {
        return;
    };
    let minidle = minidle.max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while j < a.len() {
        match parse_id(a[j], 0, true, false) {
            Some((id, _)) => ids.push(id),
            None => break,
        }
        j += 1;
    }
    let now = x.now_ms;
    let mut retrycount: i64 = -1;
    let mut deliverytime: i64 = -1;
    let mut force = false;
    let mut justid = false;
    let mut last_id = StreamId::MIN;
    while j < a.len() {
        let more = a.len() - 1 - j;
        let opt = a[j];
        if is(opt, "force") {
            force = true;
        } else if is(opt, "justid") {
            justid = true;
        } else if is(opt, "idle") && more > 0 {
            j += 1;
            let Some(v) = int_arg_msg(x.reply, a[j], "Invalid IDLE option argument for XCLAIM")
            else {
                return;
            };
            deliverytime = now - v;
        } else if is(opt, "time") && more > 0 {
            j += 1;
            let Some(v) = int_arg_msg(x.reply, a[j], "Invalid TIME option argument for XCLAIM")
            else {
                return;
            };
            deliverytime = v;
        } else if is(opt, "retrycount") && more > 0 {
            j += 1;
            let Some(v) = int_arg_msg(
                x.reply,
                a[j],
                "Invalid RETRYCOUNT option argument for XCLAIM",
            ) else {
                return;
            };
            retrycount = v;
        } else if is(opt, "lastid") && more > 0 {
            j += 1;
            let Some(v) = strict_id(x.reply, a[j]) else {
                return;
            };
            last_id = v;
        } else {
            let o = String::from_utf8_lossy(opt);
            return x
                .reply
                .error(&format!("ERR Unrecognized XCLAIM option '{o}'"));
        }
        j += 1;
    }
    let Ok(Some(mut s)) = take(x, key) else {
        return;
    };
    let mut g = s.groups_mut().remove(gname).expect("checked");
    if last_id > g.last_id {
        g.last_id = last_id;
    }
    if deliverytime != -1 {
        if deliverytime < 0 || deliverytime > now {
            deliverytime = now;
        }
    } else {
        deliverytime = now;
    }
    g.create_consumer(cname, now);
    g.consumers.get_mut(cname).expect("created").seen_time = now;
    let mut out: Vec<StreamId> = Vec::new();
    for id in ids {
        let exists = s.contains(id);
        if !exists {
            g.remove_pending(id);
            continue;
        }
        let mut fresh = false;
        if force && !g.pel.contains_key(&id) {
            g.pel.insert(
                id,
                Pending {
                    consumer: Vec::new(),
                    delivery_time: now,
                    delivery_count: 1,
                },
            );
            fresh = true;
        }
        let Some(p) = g.pel.get(&id) else {
            continue;
        };
        if !fresh && minidle > 0 && now - p.delivery_time < minidle {
            continue;
        }
        g.assign(id, cname);
        let p = g.pel.get_mut(&id).expect("pending");
        p.delivery_time = deliverytime;
        if retrycount >= 0 {
            p.delivery_count = retrycount as u64;
        } else if !justid {
            p.delivery_count += 1;
        }
        out.push(id);
        g.consumers.get_mut(cname).expect("created").active_time = now;
    }
    let mut r = Reply::new(x.reply.proto);
    r.array(out.len());
    for id in &out {
        if justid {
            reply_id(&mut r, *id);
        } else {
            reply_entry(&mut r, *id, s.get(*id).expect("exists"));
        }
    }
    s.groups_mut().insert(gname.to_vec(), g);
    if put(x, key, s) {
        x.reply.buf.extend_from_slice(&r.buf);
    }
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
pub fn xautoclaim(x: &mut Exec, a: &[&[u8]]) {
    let (key, gname, cname) = (a[1], a[2], a[3]);
    let Some(minidle) = int_arg_msg(
        x.reply,
        a[4],
        "Invalid min-idle-time argument for XAUTOCLAIM",
    ) else {
        return;
    };
    let minidle = minidle.max(0);
    let Some(start) = range_start(x.reply, a[5]) else {
        return;
    };
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < a.len() {
        let more = a.len() - 1 - j;
        if is(a[j], "count") && more > 0 {
            let max = i64::MAX / 16;
            match parse_i64(a[j + 1]) {
                Some(v) if (1..=max).contains(&v) => count = v,
                _ => return x.reply.error("ERR COUNT must be > 0"),
            }
            j += 1;
        } else if is(a[j], "justid") {
            justid = true;
        } else {
            return x.reply.error(SYNTAX);
        }
        j += 1;
    }
    let Ok(has_group) = peek(x, key, |s| {
        s.is_some_and(|s| s.groups().contains_key(gname))
    }) else {
        return;
    };
    if !has_group {
        return nogroup_key_group(x.reply, key, gname, "");
    }
    let Ok(Some(mut s)) = take(x, key) else {
        return;
    };
    let now = x.now_ms;
    let mut g = s.groups_mut().remove(gname).expect("checked");
    g.create_consumer(cname, now);
    g.consumers.get_mut(cname).expect("created").seen_time = now;
    let mut attempts = count * 10;
    let mut claimed: Vec<StreamId> = Vec::new();
    let mut deleted: Vec<StreamId> = Vec::new();
    let mut cursor = start;
    let mut next: Option<StreamId> = None;
    loop {
        let Some((&id, _)) = g.pel.range(cursor..).next() else {
            next = None;
            break;
        };
        if attempts == 0 || count == 0 {
            next = Some(id);
            break;
        }
        attempts -= 1;
        cursor = match id.incr() {
            Some(c) => c,
            None => StreamId::MAX,
        };
        let last = id == StreamId::MAX;
        if !s.contains(id) {
            g.remove_pending(id);
            deleted.push(id);
            count -= 1;
        } else {
            let p = &g.pel[&id];
            if !(minidle > 0 && now - p.delivery_time < minidle) {
                g.assign(id, cname);
                let p = g.pel.get_mut(&id).expect("pending");
                p.delivery_time = now;
                if !justid {
                    p.delivery_count += 1;
                }
                claimed.push(id);
                count -= 1;
                g.consumers.get_mut(cname).expect("created").active_time = now;
            }
        }
        if last {
            break;
        }
    }
    let mut r = Reply::new(x.reply.proto);
    r.array(3);
    reply_id(&mut r, next.unwrap_or(StreamId::MIN));
    r.array(claimed.len());
    for id in &claimed {
        if justid {
            reply_id(&mut r, *id);
        } else {
            reply_entry(&mut r, *id, s.get(*id).expect("exists"));
        }
    }
    r.array(deleted.len());
    for id in &deleted {
        reply_id(&mut r, *id);
    }
    s.groups_mut().insert(gname.to_vec(), g);
    if put(x, key, s) {
        x.reply.buf.extend_from_slice(&r.buf);
    }
}

fn reply_lag(r: &mut Reply, s: &Stream, g: &Group) {
    match s.lag(g) {
        Some(l) => r.int(l),
        None => r.null(),
    }
}

fn reply_entries_read(r: &mut Reply, g: &Group) {
    if g.entries_read != -1 {
        r.int(g.entries_read);
    } else {
        r.null();
    }
}

/// XINFO STREAM|GROUPS|CONSUMERS|HELP ...
pub fn xinfo(x: &mut Exec, a: &[&[u8]]) {
    if is(a[1], "help") {
        return x.reply.simple_lines(&[
            "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
            "HELP",
            "    Print this help.",
        ]);
    }
    let opt = a[1];
    let key = a[2];
    let now = x.now_ms;
    read(x, key, |r, s| {
        let Some(s) = s else {
            return r.error("ERR no such key");
        };
        if is(opt, "consumers") && a.len() == 4 {
            let Some(g) = s.groups().get(a[3]) else {
                return nogroup_for_key(r, a[3], key);
            };
            r.array(g.consumers.len());
            for (name, c) in &g.consumers {
                let inactive = if c.active_time != -1 {
                    now - c.active_time
                } else {
                    -1
                };
                r.map(4);
                r.bulk(b"name");
                r.bulk(name);
                r.bulk(b"pending");
                r.int(c.pel.len() as i64);
                r.bulk(b"idle");
                r.int((now - c.seen_time).max(0));
                r.bulk(b"inactive");
                r.int(inactive);
            }
        } else if is(opt, "groups") && a.len() == 3 {
            r.array(s.groups().len());
            for (name, g) in s.groups() {
                r.map(6);
                r.bulk(b"name");
                r.bulk(name);
                r.bulk(b"consumers");
                r.int(g.consumers.len() as i64);
                r.bulk(b"pending");
                r.int(g.pel.len() as i64);
                r.bulk(b"last-delivered-id");
                reply_id(r, g.last_id);
                r.bulk(b"entries-read");
                reply_entries_read(r, g);
                r.bulk(b"lag");
                reply_lag(r, s, g);
            }
        } else if is(opt, "stream") {
            xinfo_stream(r, s, a);
        } else {
            crate::commands::subcommand_syntax_error(r, "XINFO", opt);
        }
    });
}

fn xinfo_stream(r: &mut Reply, s: &Stream, a: &[&[u8]]) {
    let optv = &a[3..];
    let mut full = false;
    let mut count: i64 = 10;
    if !optv.is_empty() {
        if (optv.len() != 1 && optv.len() != 3) || !is(optv[0], "full") {
            return crate::commands::subcommand_syntax_error(r, "XINFO", a[1]);
        }
        full = true;
        if optv.len() == 3 {
            if !is(optv[1], "count") {
                return crate::commands::subcommand_syntax_error(r, "XINFO", a[1]);
            }
            let Some(c) = int_arg(r, optv[2]) else {
                return;
            };
            count = if c < 0 { 10 } else { c };
        }
    }
    let limit = if count == 0 {
        usize::MAX
    } else {
        count as usize
    };
    r.map(if full { 9 } else { 10 });
    r.bulk(b"length");
    r.int(s.len() as i64);
    r.bulk(b"radix-tree-keys");
    r.int(s.node_count() as i64);
    r.bulk(b"radix-tree-nodes");
    r.int(radix_nodes(s.node_count()) as i64);
    r.bulk(b"last-generated-id");
    reply_id(r, s.last_id);
    r.bulk(b"max-deleted-entry-id");
    reply_id(r, s.max_deleted_id);
    r.bulk(b"entries-added");
    r.int(s.entries_added as i64);
    r.bulk(b"recorded-first-entry-id");
    reply_id(r, s.first_id());
    if !full {
        r.bulk(b"groups");
        r.int(s.groups().len() as i64);
        r.bulk(b"first-entry");
        match s.iter().next() {
            Some((id, f)) => reply_entry(r, *id, f),
            None => r.null(),
        }
        r.bulk(b"last-entry");
        match s.iter().next_back() {
            Some((id, f)) => reply_entry(r, *id, f),
            None => r.null(),
        }
        return;
    }
    r.bulk(b"entries");
    let entries: Vec<_> = s.iter().take(limit).collect();
    r.array(entries.len());
    for (id, f) in entries {
        reply_entry(r, *id, f);
    }
    r.bulk(b"groups");
    r.array(s.groups().len());
    for (name, g) in s.groups() {
        r.map(7);
        r.bulk(b"name");
        r.bulk(name);
        r.bulk(b"last-delivered-id");
        reply_id(r, g.last_id);
        r.bulk(b"entries-read");
        reply_entries_read(r, g);
        r.bulk(b"lag");
        reply_lag(r, s, g);
        r.bulk(b"pel-count");
        r.int(g.pel.len() as i64);
        r.bulk(b"pending");
        let pel: Vec<_> = g.pel.iter().take(limit).collect();
        r.array(pel.len());
        for (id, p) in pel {
            r.array(4);
            reply_id(r, *id);
            r.bulk(&p.consumer);
            r.int(p.delivery_time);
            r.int(p.delivery_count as i64);
        }
        r.bulk(b"consumers");
        r.array(g.consumers.len());
        for (cname, c) in &g.consumers {
            r.map(5);
            r.bulk(b"name");
            r.bulk(cname);
            r.bulk(b"seen-time");
            r.int(c.seen_time);
            r.bulk(b"active-time");
            r.int(c.active_time);
            r.bulk(b"pel-count");
            r.int(c.pel.len() as i64);
            r.bulk(b"pending");
            let pel: Vec<_> = c.pel.iter().take(limit).collect();
            r.array(pel.len());
            for id in pel {
                let p = &g.pel[id];
                r.array(3);
                reply_id(r, *id);
                r.int(p.delivery_time);
                r.int(p.delivery_count as i64);
            }
        }
    }
}

/// An estimate of the rax node count for `keys` 16-byte keys (XINFO's `radix-tree-nodes`;
/// Redis's exact figure depends on its radix tree's compression).
fn radix_nodes(keys: usize) -> usize {
    if keys == 0 {
        1
    } else {
        keys + 1
    }
}

/// What stream command `name` with arguments `a` needs of each of its keys' streams, in
/// key order (see [`Need`]): the keyspace loads only that much of a big (grouped) stream
/// before the command runs. None: everything (any command not listed, and XINFO STREAM
/// FULL COUNT 0). Arguments are parsed as the handlers parse them; a command they would
/// refuse needs only the skeleton (the handler replies the error before reading entries).
/// The commands that look at entries by their pending IDs (XCLAIM, XAUTOCLAIM, XREADGROUP
/// of history) need the pages of exactly the IDs they may look at: an entry whose page is
/// not loaded would read as deleted, and leave their pending lists.
/// `node_max_entries` is `stream-node-max-entries` (XTRIM's default `~` LIMIT).
pub fn needs(name: &str, a: &[&[u8]], node_max_entries: u64) -> Option<Vec<Need>> {
    let mut scratch = Reply::new(Proto::Resp2);
    let one = |n: Need| Some(vec![n]);
    match name {
        "xlen" | "xack" | "xpending" | "xgroup" | "xsetid" => one(Need::Skeleton),
        "xinfo" => {
            if a.len() > 3 && is(a[1], "stream") {
                // FULL [COUNT n]: the first n entries (10 by default, 0: all).
                let count = match a.get(5).map(|c| parse_i64(c)) {
                    None => Some(10),
                    Some(Some(0)) => return None,
                    Some(Some(c)) if c > 0 => Some(c as usize),
                    Some(Some(_)) => Some(10),
                    Some(None) => return one(Need::Skeleton),
                };
                one(Need::Scan {
                    start: StreamId::MIN,
                    end: StreamId::MAX,
                    rev: false,
                    count,
                })
            } else {
                one(Need::Skeleton)
            }
        }
        "xclaim" => {
            // The IDs as the handler takes them: up to the first argument that is not one.
            let ids = a
                .get(5..)?
                .iter()
                .map_while(|i| parse_id(i, 0, true, false).map(|(id, _)| id))
                .collect();
            one(Need::Ids(ids))
        }
        "xautoclaim" => {
            if a.len() < 6 {
                return one(Need::Skeleton);
            }
            let Some(start) = range_start(&mut scratch, a[5]) else {
                return one(Need::Skeleton);
            };
            // COUNT (default 100) bounds the pending entries it looks at to 10 times it.
            let mut count: usize = 100;
            let mut j = 6;
            while j + 1 < a.len() {
                if is(a[j], "count") {
                    match parse_i64(a[j + 1]) {
                        Some(v) if v > 0 => count = v.min(i64::MAX / 16) as usize,
                        _ => return one(Need::Skeleton),
                    }
                    j += 1;
                }
                j += 1;
            }
            one(Need::Pending {
                group: a[2].to_vec(),
                consumer: None,
                start,
                count: Some(count.saturating_mul(10)),
            })
        }
        "xrange" | "xrevrange" => {
            if a.len() < 4 {
                return one(Need::Skeleton);
            }
            let rev = name == "xrevrange";
            let (sa, ea) = if rev { (a[3], a[2]) } else { (a[2], a[3]) };
            let (Some(start), Some(end)) =
                (range_start(&mut scratch, sa), range_end(&mut scratch, ea))
            else {
                return one(Need::Skeleton);
            };
            let mut count = None;
            if a.len() == 6 && is(a[4], "count") {
                count = parse_i64(a[5]).map(|c| c.max(0) as usize);
            }
            one(Need::Scan {
                start,
                end,
                rev,
                count,
            })
        }
        "xdel" => {
            let ids: Option<Vec<StreamId>> = a
                .get(2..)?
                .iter()
                .map(|i| parse_id(i, 0, true, false).map(|(id, _)| id))
                .collect();
            one(ids.map_or(Need::Skeleton, Need::Ids))
        }
        "xadd" | "xtrim" => {
            let xadd = name == "xadd";
            let Some(t) = parse_trim(&mut scratch, a, xadd, node_max_entries) else {
                return one(Need::Skeleton);
            };
            one(match t.how {
                None => Need::Skeleton,
                // XADD trims after its append: one entry more to trim.
                Some(Trim::MaxLen(max)) if xadd => {
                    Need::Trim(Trim::MaxLen(max.saturating_sub(1)), t.limit)
                }
                Some(how) => Need::Trim(how, t.limit),
            })
        }
        "xread" | "xreadgroup" => {
            let group = name == "xreadgroup";
            let Some(p) = parse_read(&mut scratch, a, group) else {
                return one(Need::Skeleton);
            };
            let pages = (p.count > 0).then_some(p.count);
            let mut out = Vec::with_capacity(p.keys.len());
            for arg in &p.id_args {
                out.push(if group {
                    let (gname, cname) = p.group.expect("parsed");
                    if *arg != b">" {
                        // History: the consumer's pending entries after the ID.
                        match parse_id(arg, 0, true, false) {
                            Some((id, _)) => Need::Pending {
                                group: gname.to_vec(),
                                consumer: Some(cname.to_vec()),
                                start: id.incr().unwrap_or(StreamId::MAX),
                                count: pages,
                            },
                            None => Need::Skeleton,
                        }
                    } else {
                        Need::AfterGroup(gname.to_vec(), pages)
                    }
                } else if *arg == b"$" || *arg == b"+" {
                    Need::Skeleton
                } else {
                    match parse_id(arg, 0, true, false).and_then(|(id, _)| id.incr()) {
                        Some(start) => Need::Scan {
                            start,
                            end: StreamId::MAX,
                            rev: false,
                            count: pages,
                        },
                        None => Need::Skeleton,
                    }
                });
            }
            Some(out)
        }
        _ => None,
    }
}

/// [`needs`] for command `idx` run on `shard` (None at once for other families).
#[inline]
pub fn needs_of(shard: &crate::worker::Shard, idx: usize, a: &[&[u8]]) -> Option<Vec<Need>> {
    let spec = &super::COMMANDS[idx];
    if spec.group != "stream" {
        return None;
    }
    let t = shard.shared.config.hot.coll.get();
    needs(spec.name, a, t.stream_node_max_entries as u64)
}
