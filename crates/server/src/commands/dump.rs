//! DUMP and RESTORE (Redis's `cluster.c`): a key's value as Redis's DUMP payload (the RDB
//! value encoding, the RDB version and a CRC64; see the `skerry-codec` crate), and a key
//! made from one. Payloads are exchangeable with Redis 7.0 and later both ways (hashes
//! with field TTLs with Redis 7.4 and later).
//!
//! Streams carry everything: entries, last ID, max deleted ID, entries added, groups with
//! their last ID, entries-read, PELs (delivery time and count) and consumers (seen and
//! active times, pending IDs). A restored stream's node model (XINFO's `radix-tree-keys`,
//! what `~` trims) is rebuilt as XADDs of its entries would build it under the current
//! `stream-node-max-*`; Redis keeps the nodes of the payload, so the two differ only for a
//! stream whose nodes hold deleted entries or were built under other limits.
//!
//! A hash with field expiry on dumps as Redis 8.0 does: a small one (`listpackex`) as
//! `RDB_TYPE_HASH_LISTPACK_EX` in its field order, a big one as `RDB_TYPE_HASH_METADATA`;
//! fields already expired are left out. RESTORE leaves out the fields expired by then
//! (Redis keeps them until its expiry deletes them), creates no key when none is left, and
//! the hash goes into the active-expiry index as any stored hash does.
//!
//! RESTORE's IDLETIME and FREQ set the restored key's access clock as Redis's
//! `objectSetLRUOrLFU` does (`keyspace/clock.rs`: IDLETIME under an LRU policy, FREQ under
//! an LFU one, the other ignored); without them the key is new (just accessed, or
//! `LFU_INIT_VAL`).

use skerry_codec::{self as codec, PayloadError, RdbValue};
use skerry_store::format::VALUE_TYPE_STRING;

use super::{is, parse_i64, Exec};
use crate::coll::{hash, list, set, stream, zset, Coll, Thresholds};
use crate::keyspace::{CollError, Expiry, Got, Value};
use crate::reply::errors::{NOT_INT, SYNTAX};

/// The neutral form of a collection at `now_ms`, and whether it is a hash in Redis's
/// `listpackex` encoding (small, field expiry on); None for a hash whose fields have all
/// expired (not deleted yet).
fn coll_value(c: &Coll, now_ms: i64) -> Option<(RdbValue, bool)> {
    let value = match c {
        Coll::Hash(h) if h.ttl_enabled() => {
            // Expired fields are not dumped (Redis's DUMP skips them too).
            let fields: Vec<codec::HashField> = h
                .iter_ex()
                .filter(|&(_, _, exp)| exp.is_none_or(|t| t >= now_ms))
                .map(|(f, v, exp)| codec::HashField {
                    field: f.to_vec(),
                    value: v.to_vec(),
                    expire_at_ms: exp.map(|t| t as u64),
                })
                .collect();
            if fields.is_empty() {
                return None;
            }
            return Some((RdbValue::HashWithTtl(fields), !h.big));
        }
        Coll::Hash(h) => RdbValue::Hash(h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()),
        Coll::List(l) => RdbValue::List(l.items().iter().cloned().collect()),
        Coll::Set(s) => RdbValue::Set(s.iter().map(<[u8]>::to_vec).collect()),
        Coll::Zset(z) => RdbValue::Zset(z.iter().map(|(m, s)| (m.to_vec(), s)).collect()),
        Coll::Stream(s) => RdbValue::Stream(Box::new(stream_to_rdb(s))),
    };
    Some((value, false))
}

/// The value of `key` at `now_ms` in neutral form, whether it is a hash in Redis's
/// `listpackex` encoding, and the key's expiry (Unix ms, 0: none); `Ok(None)` when there
/// is no key (or a hash whose fields have all expired), `Err` when its value could not be
/// read. The value must be resident.
fn key_value_ex(
    ks: &mut crate::keyspace::Keyspace,
    db: usize,
    key: &[u8],
    now_ms: i64,
) -> Result<Option<(RdbValue, bool, i64)>, Unreadable> {
    let Some(meta) = ks.meta(db, key, now_ms) else {
        return Ok(None);
    };
    let (value, listpack_ex) = if meta.value_type == VALUE_TYPE_STRING {
        match ks.get(db, key, now_ms) {
            Some(Got {
                value: Value::Str(v),
                ..
            }) => (RdbValue::String(v), false),
            _ => return Err(Unreadable),
        }
    } else {
        match ks.coll(db, key, meta.value_type, now_ms) {
            Ok(Some(c)) => match coll_value(c, now_ms) {
                Some(v) => v,
                None => return Ok(None),
            },
            // (WRONGTYPE cannot be: the type asked is the key's own.)
            Ok(None) | Err(CollError::WrongType) => return Ok(None),
            Err(CollError::Failed) => return Err(Unreadable),
        }
    };
    Ok(Some((value, listpack_ex, meta.expire_at_ms)))
}

/// The value of `key` at `now_ms` in neutral form and the key's expiry (Unix ms, 0:
/// none), for DEBUG DIGEST (see [`key_value_ex`]).
pub fn key_value(
    ks: &mut crate::keyspace::Keyspace,
    db: usize,
    key: &[u8],
    now_ms: i64,
) -> Result<Option<(RdbValue, i64)>, Unreadable> {
    Ok(key_value_ex(ks, db, key, now_ms)?.map(|(v, _, at)| (v, at)))
}

fn rdb_id(id: stream::StreamId) -> codec::StreamId {
    codec::StreamId {
        ms: id.ms,
        seq: id.seq,
    }
}

fn skerry_id(id: codec::StreamId) -> stream::StreamId {
    stream::StreamId::new(id.ms, id.seq)
}

/// The neutral form of a stream. Times are Unix ms; Redis's -1 ("never", a consumer's
/// active time) is written as its two's complement, as Redis writes it.
fn stream_to_rdb(s: &stream::Stream) -> codec::Stream {
    codec::Stream {
        entries: s
            .iter()
            .map(|(id, f)| codec::StreamEntry {
                id: rdb_id(*id),
                fields: f
                    .chunks_exact(2)
                    .map(|p| (p[0].clone(), p[1].clone()))
                    .collect(),
            })
            .collect(),
        last_id: rdb_id(s.last_id),
        first_id: rdb_id(s.first_id()),
        max_deleted_entry_id: rdb_id(s.max_deleted_id),
        entries_added: s.entries_added,
        groups: s
            .groups()
            .iter()
            .map(|(name, g)| codec::StreamGroup {
                name: name.clone(),
                last_id: rdb_id(g.last_id),
                entries_read: u64::try_from(g.entries_read).ok(),
                pending: g
                    .pel
                    .iter()
                    .map(|(id, p)| codec::PendingEntry {
                        id: rdb_id(*id),
                        delivery_time_ms: p.delivery_time as u64,
                        delivery_count: p.delivery_count,
                    })
                    .collect(),
                consumers: g
                    .consumers
                    .iter()
                    .map(|(cname, c)| codec::StreamConsumer {
                        name: cname.clone(),
                        seen_time_ms: c.seen_time as u64,
                        active_time_ms: c.active_time as u64,
                        pending: c.pel.iter().map(|id| rdb_id(*id)).collect(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The Skerry stream of a decoded one; None when it is inconsistent (entries out of
/// order, without fields or above the last ID, a pending entry owned by no consumer or by two, a consumer's
/// pending entry not in its group's list, a repeated group or consumer).
fn stream_from_rdb(r: codec::Stream, t: &Thresholds) -> Option<stream::Stream> {
    let mut prev: Option<codec::StreamId> = None;
    for e in &r.entries {
        if prev.is_some_and(|p| p >= e.id) || e.fields.is_empty() {
            return None;
        }
        prev = Some(e.id);
    }
    if prev.is_some_and(|p| p > r.last_id) {
        // An entry above the last ID: XADD could generate an ID taken already.
        return None;
    }
    let mut s = stream::Stream::from_entries(
        r.entries.into_iter().map(|e| {
            let mut f = Vec::with_capacity(e.fields.len() * 2);
            for (k, v) in e.fields {
                f.push(k);
                f.push(v);
            }
            (skerry_id(e.id), f)
        }),
        t.stream_node_max_entries as u64,
        t.stream_node_max_bytes as u64,
    );
    s.last_id = skerry_id(r.last_id);
    s.max_deleted_id = skerry_id(r.max_deleted_entry_id);
    s.entries_added = r.entries_added;
    for g in r.groups {
        let mut group = stream::Group {
            last_id: skerry_id(g.last_id),
            entries_read: g.entries_read.map_or(-1, |n| n as i64),
            ..Default::default()
        };
        let mut times = std::collections::BTreeMap::new();
        for p in g.pending {
            if times
                .insert(skerry_id(p.id), (p.delivery_time_ms, p.delivery_count))
                .is_some()
            {
                return None;
            }
        }
        for c in g.consumers {
            let mut consumer = stream::Consumer {
                seen_time: c.seen_time_ms as i64,
                active_time: c.active_time_ms as i64,
                pel: Default::default(),
            };
            for id in c.pending {
                let id = skerry_id(id);
                let (time, count) = *times.get(&id)?;
                let p = stream::Pending {
                    consumer: c.name.clone(),
                    delivery_time: time as i64,
                    delivery_count: count,
                };
                if group.pel.insert(id, p).is_some() {
                    return None;
                }
                consumer.pel.insert(id);
            }
            if group.consumers.insert(c.name, consumer).is_some() {
                return None;
            }
        }
        if group.pel.len() != times.len() || s.groups_mut().insert(g.name, group).is_some() {
            return None;
        }
    }
    Some(s)
}

/// The hash of fields with expiries, without the fields expired at `now_ms` (None when
/// none is left): field expiry on, Redis's `listpackex` while within the listpack limits,
/// else `hashtable` (as Redis's RESTORE makes it). A `listpackex` has its fields in
/// Redis's order: a `listpackex` payload's (`listpack_ex`) as they are; those of another
/// payload inserted one by one where Redis's `listpackExAddNew` puts them (before the
/// first field whose expiry is not earlier, or that has none).
fn hash_with_ttl(
    fields: Vec<codec::HashField>,
    t: &Thresholds,
    now_ms: i64,
    listpack_ex: bool,
) -> Option<Coll> {
    let mut h = hash::Hash::default();
    h.enable_ttl();
    if fields.len() > t.hash_max_listpack_entries
        || fields
            .iter()
            .any(|f| f.field.len().max(f.value.len()) > t.hash_max_listpack_value)
    {
        // Known big up front: no listpackex order to keep.
        h.big = true;
    }
    for f in fields {
        let exp = f.expire_at_ms.map(|t| t as i64);
        if exp.is_some_and(|t| t < now_ms) {
            continue;
        }
        h.insert(&f.field, &f.value);
        if exp.is_some() && listpack_ex {
            h.set_expiry_in_place(&f.field, exp);
        } else if exp.is_some() {
            h.set_expiry(&f.field, exp);
        }
    }
    (!h.is_empty()).then_some(Coll::Hash(h))
}

/// The Skerry value of a decoded payload: a string or a collection.
enum Restored {
    Str(Vec<u8>),
    Coll(Coll),
    /// A hash whose fields have all expired: no key.
    Nothing,
}

/// None: a payload that decodes but is inconsistent. `listpack_ex`: the payload was a
/// hash in Redis's `listpackex` encoding (field expiry on, maybe no field with a TTL).
fn from_rdb(v: RdbValue, t: &Thresholds, now_ms: i64, listpack_ex: bool) -> Option<Restored> {
    Some(match v {
        RdbValue::String(s) => Restored::Str(s),
        RdbValue::List(items) => {
            let mut l = list::List::from_items(items.into());
            l.settle_encoding(t.list_max_listpack_size);
            Restored::Coll(Coll::List(l))
        }
        RdbValue::Set(members) => {
            let mut s = set::Set::with_capacity(members.len());
            for m in members {
                s.insert_owned(m);
            }
            Restored::Coll(Coll::Set(s))
        }
        RdbValue::Zset(members) => {
            let mut z = zset::Zset::default();
            for (m, score) in members {
                z.insert(&m, score);
            }
            Restored::Coll(Coll::Zset(z))
        }
        RdbValue::Hash(fields) if listpack_ex => {
            let fields = fields
                .into_iter()
                .map(|(field, value)| codec::HashField {
                    field,
                    value,
                    expire_at_ms: None,
                })
                .collect();
            Restored::Coll(hash_with_ttl(fields, t, now_ms, true)?)
        }
        RdbValue::Hash(fields) => {
            let mut h = hash::Hash::default();
            for (f, v) in fields {
                h.insert(&f, &v);
            }
            Restored::Coll(Coll::Hash(h))
        }
        RdbValue::HashWithTtl(fields) => match hash_with_ttl(fields, t, now_ms, listpack_ex) {
            Some(c) => Restored::Coll(c),
            None => Restored::Nothing,
        },
        RdbValue::Stream(st) => Restored::Coll(Coll::Stream(stream_from_rdb(*st, t)?)),
    })
}

/// Stores `key` in `db` as an RDB file gives it (Redis's `rdbLoad`, or RESTORE with
/// ABSTTL, and REPLACE when `replace`): `rdb_type` is the value's RDB type byte, `meta`
/// its expiry and access clock. Returns false for a key not stored because it had expired
/// (or every field of its hash had); Err with the reason when the value is inconsistent,
/// the key exists and `replace` is off, or the write failed.
#[allow(clippy::too_many_arguments)]
pub fn load_key(
    ks: &mut crate::keyspace::Keyspace,
    db: usize,
    key: &[u8],
    rdb_type: u8,
    value: RdbValue,
    meta: &codec::KeyMeta,
    replace: bool,
    t: &Thresholds,
    now_ms: i64,
) -> Result<bool, String> {
    let listpack_ex = matches!(
        rdb_type,
        codec::rdb_type::HASH_LISTPACK_EX | codec::rdb_type::HASH_LISTPACK_EX_PRE_GA
    );
    let Some(value) = from_rdb(value, t, now_ms, listpack_ex) else {
        return Err("a value that decodes but is inconsistent".into());
    };
    let expiry = match meta.expire_at_ms {
        None => Expiry::Persist,
        Some(at) => Expiry::At(at),
    };
    let failed = |ks: &mut crate::keyspace::Keyspace| {
        ks.take_error()
            .unwrap_or_else(|| "the write was refused".into())
    };
    let existing = ks.meta(db, key, now_ms).is_some();
    if existing && !replace {
        return Err("the key already exists (duplicated key)".into());
    }
    if matches!(expiry, Expiry::At(at) if at <= now_ms) || matches!(value, Restored::Nothing) {
        if existing && !ks.delete(db, key, now_ms) {
            return Err(failed(ks));
        }
        return Ok(false);
    }
    let ok = match value {
        Restored::Str(s) => ks.put(db, key, &s, expiry, now_ms),
        Restored::Coll(c) => {
            if existing && !ks.delete(db, key, now_ms) && ks.exists(db, key, now_ms) {
                return Err(failed(ks));
            }
            ks.put_coll_with_expiry(db, key, c, expiry, t, now_ms)
        }
        Restored::Nothing => return Ok(false),
    };
    if !ok {
        return Err(failed(ks));
    }
    let mode = ks.clock_mode();
    let clock = mode
        .restored(
            meta.idle_s.map(|s| s.min(i64::MAX as u64) as i64),
            meta.freq.map(i64::from),
            now_ms,
        )
        .unwrap_or_else(|| mode.new_clock(now_ms));
    ks.set_access_clock(db, key, clock);
    Ok(true)
}

/// A value that could not be read: the keyspace kept the error (see
/// [`crate::keyspace::Keyspace::take_error`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unreadable;

/// The RDB encoding of `key`'s value at `now_ms` and the key's expiry (Unix ms, 0:
/// none), for DUMP, MIGRATE and RDB files (see [`key_value_ex`]).
pub fn encode_key(
    ks: &mut crate::keyspace::Keyspace,
    db: usize,
    key: &[u8],
    now_ms: i64,
) -> Result<Option<(codec::Encoded, i64)>, Unreadable> {
    Ok(
        key_value_ex(ks, db, key, now_ms)?.map(|(value, listpack_ex, at)| {
            let encoded = match value {
                // Redis's `listpackex`: restored as `listpackex` again.
                RdbValue::HashWithTtl(fields) if listpack_ex => {
                    codec::encode_hash_listpack_ex(&fields)
                }
                value => codec::encode_value(&value),
            };
            (encoded, at)
        }),
    )
}

/// The DUMP payload of `key` at `now_ms` and the key's expiry (Unix ms, 0: none), for DUMP
/// and MIGRATE (see [`encode_key`]).
pub fn dump_payload(
    ks: &mut crate::keyspace::Keyspace,
    db: usize,
    key: &[u8],
    now_ms: i64,
) -> Result<Option<(Vec<u8>, i64)>, Unreadable> {
    Ok(encode_key(ks, db, key, now_ms)?.map(|(e, at)| (codec::seal(e), at)))
}

/// DUMP key
pub fn dump(x: &mut Exec, a: &[&[u8]]) {
    match dump_payload(x.ks, x.db, a[1], x.now_ms) {
        Ok(Some((payload, _))) => x.reply.bulk(&payload),
        Ok(None) => x.reply.null(),
        // Not readable: the kept error is the reply.
        Err(Unreadable) => {}
    }
}

/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
pub fn restore(x: &mut Exec, a: &[&[u8]]) {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq) = (None, None);
    let mut j = 4;
    while j < a.len() {
        let more = a.len() - j - 1;
        if is(a[j], "replace") {
            replace = true;
        } else if is(a[j], "absttl") {
            absttl = true;
        } else if is(a[j], "idletime") && more >= 1 && freq.is_none() {
            let Some(v) = parse_i64(a[j + 1]) else {
                return x.reply.error(NOT_INT);
            };
            if v < 0 {
                return x.reply.error("ERR Invalid IDLETIME value, must be >= 0");
            }
            idle = Some(v);
            j += 1;
        } else if is(a[j], "freq") && more >= 1 && idle.is_none() {
            let Some(v) = parse_i64(a[j + 1]) else {
                return x.reply.error(NOT_INT);
            };
            if !(0..=255).contains(&v) {
                return x
                    .reply
                    .error("ERR Invalid FREQ value, must be >= 0 and <= 255");
            }
            freq = Some(v);
            j += 1;
        } else {
            return x.reply.error(SYNTAX);
        }
        j += 1;
    }
    let key = a[1];
    let existing = x.ks.meta(x.db, key, x.now_ms);
    if !replace && existing.is_some() {
        return x.reply.error("BUSYKEY Target key name already exists.");
    }
    let Some(ttl) = parse_i64(a[2]) else {
        return x.reply.error(NOT_INT);
    };
    if ttl < 0 {
        return x.reply.error("ERR Invalid TTL value, must be >= 0");
    }
    let value = match codec::restore(a[3]) {
        Ok(v) => v,
        Err(PayloadError::VersionOrChecksum) => {
            return x
                .reply
                .error("ERR DUMP payload version or checksum are wrong")
        }
        Err(PayloadError::BadData(e)) => {
            tracing::debug!("RESTORE of a payload that does not decode: {e}");
            return x.reply.error("ERR Bad data format");
        }
    };
    let t = x.thresholds();
    let listpack_ex = matches!(
        a[3].first(),
        Some(&(codec::rdb_type::HASH_LISTPACK_EX | codec::rdb_type::HASH_LISTPACK_EX_PRE_GA))
    );
    let Some(value) = from_rdb(value, &t, x.now_ms, listpack_ex) else {
        return x.reply.error("ERR Bad data format");
    };
    let expiry = match ttl {
        0 => Expiry::Persist,
        t if absttl => Expiry::At(t),
        t => Expiry::At(t.saturating_add(x.now_ms)),
    };
    let expired = matches!(expiry, Expiry::At(at) if at <= x.now_ms);
    if expired || matches!(value, Restored::Nothing) {
        // Already expired (the key, or every field of a hash): the key is not created
        // (an old one is removed).
        if replace && existing.is_some() && !x.ks.delete(x.db, key, x.now_ms) {
            return;
        }
        return x.reply.ok();
    }
    let ok = match value {
        // A string replaces any old value in one write.
        Restored::Str(s) => x.ks.put(x.db, key, &s, expiry, x.now_ms),
        Restored::Coll(c) => {
            if existing.is_some()
                && !x.ks.delete(x.db, key, x.now_ms)
                && x.ks.exists(x.db, key, x.now_ms)
            {
                return;
            }
            x.ks.put_coll_with_expiry(x.db, key, c, expiry, &t, x.now_ms)
        }
        Restored::Nothing => return x.reply.ok(),
    };
    if ok {
        set_restored_clock(x, key, idle, freq);
        x.reply.ok();
    }
}

/// Sets the access clock of `key`, just restored, from RESTORE's IDLETIME or FREQ (as
/// Redis's `objectSetLRUOrLFU`), else to a new key's.
pub fn set_restored_clock(x: &mut Exec, key: &[u8], idle: Option<i64>, freq: Option<i64>) {
    let mode = x.ks.clock_mode();
    let clock = mode
        .restored(idle, freq, x.now_ms)
        .unwrap_or_else(|| mode.new_clock(x.now_ms));
    x.ks.set_access_clock(x.db, key, clock);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64) -> codec::StreamId {
        codec::StreamId { ms, seq: 0 }
    }

    fn sample() -> codec::Stream {
        codec::Stream {
            entries: (1..=3)
                .map(|i| codec::StreamEntry {
                    id: id(i),
                    fields: vec![(b"f".to_vec(), i.to_string().into_bytes())],
                })
                .collect(),
            last_id: id(3),
            first_id: id(1),
            max_deleted_entry_id: id(0),
            entries_added: 3,
            groups: vec![codec::StreamGroup {
                name: b"g".to_vec(),
                last_id: id(2),
                entries_read: Some(2),
                pending: vec![codec::PendingEntry {
                    id: id(2),
                    delivery_time_ms: 7,
                    delivery_count: 2,
                }],
                consumers: vec![codec::StreamConsumer {
                    name: b"c".to_vec(),
                    seen_time_ms: 5,
                    active_time_ms: u64::MAX,
                    pending: vec![id(2)],
                }],
            }],
        }
    }

    #[test]
    fn streams_convert_both_ways_and_inconsistent_ones_are_refused() {
        let t = Thresholds::default();
        let s = stream_from_rdb(sample(), &t).expect("consistent");
        assert_eq!(s.groups()[&b"g"[..]].consumers[&b"c"[..]].active_time, -1);
        assert_eq!(
            s.groups()[&b"g"[..]].pel[&stream::StreamId::new(2, 0)].consumer,
            b"c"
        );
        assert_eq!(stream_to_rdb(&s), sample());
        let mut bad = sample();
        bad.last_id = id(2);
        assert!(
            stream_from_rdb(bad, &t).is_none(),
            "entry above the last ID"
        );
        let mut bad = sample();
        bad.groups[0].consumers[0].pending.clear();
        assert!(
            stream_from_rdb(bad, &t).is_none(),
            "pending entry of no consumer"
        );
        let mut bad = sample();
        bad.groups[0].consumers[0].pending.push(id(3));
        assert!(
            stream_from_rdb(bad, &t).is_none(),
            "consumer entry not in the PEL"
        );
        let mut bad = sample();
        bad.entries.swap(0, 1);
        assert!(stream_from_rdb(bad, &t).is_none(), "entries out of order");
    }
}
