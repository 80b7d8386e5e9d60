//! DUMP and RESTORE (Redis's `cluster.c`): a key's value as Redis's DUMP payload (the RDB
//! value encoding, the RDB version and a CRC64; see the `skerry-codec` crate), and a key
//! made from one. Payloads are exchangeable with Redis 7.0 and later both ways.
//!
//! Skerry keeps no access time or frequency per key: RESTORE checks IDLETIME and FREQ as
//! Redis does and then has nothing to set.

use skerry_codec::{self as codec, PayloadError, RdbValue};
use skerry_store::format::VALUE_TYPE_STRING;

use super::{coll_error, is, parse_i64, Exec};
use crate::coll::{hash, list, set, zset, Coll};
use crate::keyspace::{Expiry, Got, Value};
use crate::reply::errors::{NOT_INT, SYNTAX};

/// The neutral form of a collection.
fn to_rdb(c: &Coll) -> Option<RdbValue> {
    Some(match c {
        Coll::Hash(h) => RdbValue::Hash(h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()),
        Coll::List(l) => RdbValue::List(l.items().iter().cloned().collect()),
        Coll::Set(s) => RdbValue::Set(s.iter().map(<[u8]>::to_vec).collect()),
        Coll::Zset(z) => RdbValue::Zset(z.iter().map(|(m, s)| (m.to_vec(), s)).collect()),
        Coll::Stream(_) => return None,
    })
}

/// The Skerry value of a decoded payload: a string or a collection; None for a type
/// Skerry does not have (streams, hashes with field TTLs).
enum Restored {
    Str(Vec<u8>),
    Coll(Coll),
}

fn from_rdb(v: RdbValue) -> Option<Restored> {
    Some(match v {
        RdbValue::String(s) => Restored::Str(s),
        RdbValue::List(items) => Restored::Coll(Coll::List(list::List::from_items(items.into()))),
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
        RdbValue::Hash(fields) => {
            let mut h = hash::Hash::default();
            for (f, v) in fields {
                h.insert(&f, &v);
            }
            Restored::Coll(Coll::Hash(h))
        }
        RdbValue::HashWithTtl(_) | RdbValue::Stream(_) => return None,
    })
}

/// DUMP key
pub fn dump(x: &mut Exec, a: &[&[u8]]) {
    let Some(meta) = x.ks.meta(x.db, a[1], x.now_ms) else {
        x.reply.null();
        return;
    };
    let value = if meta.value_type == VALUE_TYPE_STRING {
        match x.ks.get(x.db, a[1], x.now_ms) {
            Some(Got {
                value: Value::Str(v),
                ..
            }) => RdbValue::String(v),
            // Not readable: the kept error is the reply.
            _ => return,
        }
    } else {
        match x.ks.coll(x.db, a[1], meta.value_type, x.now_ms) {
            Ok(Some(c)) => match to_rdb(c) {
                Some(v) => v,
                None => return x.reply.error("ERR DUMP of this type is not built yet"),
            },
            Ok(None) => return x.reply.null(),
            Err(e) => return coll_error(x.reply, e),
        }
    };
    x.reply.bulk(&codec::dump(&value));
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
    let Some(value) = from_rdb(value) else {
        // A stream or a hash with field TTLs: types Skerry does not have yet.
        return x.reply.error("ERR Bad data format");
    };
    let expiry = match ttl {
        0 => Expiry::Persist,
        t if absttl => Expiry::At(t),
        t => Expiry::At(t.saturating_add(x.now_ms)),
    };
    if let Expiry::At(at) = expiry {
        if at <= x.now_ms {
            // Already expired: the key is not created (an old one is removed).
            if replace && existing.is_some() && !x.ks.delete(x.db, key, x.now_ms) {
                return;
            }
            return x.reply.ok();
        }
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
            let t = x.thresholds();
            x.ks.put_coll_with_expiry(x.db, key, c, expiry, &t, x.now_ms)
        }
    };
    if ok {
        x.reply.ok();
    }
}
