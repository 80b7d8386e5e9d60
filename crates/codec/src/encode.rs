//! Encoding a value in an encoding Redis 7.0+ reads, with the lowest RDB version that
//! expresses it.

use crate::packed::{write_intset, ListpackWriter};
use crate::rdb::{canonical_i64, write_binary_double, write_len, write_millis, write_string};
use crate::rdb_type as t;
use crate::value::*;

/// Redis 7.0's RDB version: every encoding written here but the ones below.
pub const RDB_VERSION_7_0: u16 = 10;
/// Redis 7.2's RDB version (stream consumers' active time, `RDB_TYPE_STREAM_LISTPACKS_3`).
pub const RDB_VERSION_7_2: u16 = 11;
/// Redis 7.4's RDB version (hash field TTLs, `RDB_TYPE_HASH_METADATA`).
pub const RDB_VERSION_7_4: u16 = 12;

/// Redis's defaults for the compact encodings: below them a value is written as a
/// listpack (or intset) as Redis itself would, else in its hashtable form.
const HASH_MAX_LISTPACK_ENTRIES: usize = 512;
const ZSET_MAX_LISTPACK_ENTRIES: usize = 128;
const MAX_LISTPACK_VALUE: usize = 64;
const SET_MAX_INTSET_ENTRIES: usize = 512;
/// Bytes of a list's listpack node (`list-max-listpack-size -2`: 8 KB).
const LIST_NODE_BYTES: usize = 8192;
/// An element at least this long is a plain quicklist node (Redis's packed threshold).
const LIST_PLAIN_BYTES: usize = 1 << 30;

/// A value encoded: its RDB type byte, its bytes, and the RDB version that reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// The RDB type byte (`RDB_TYPE_*`).
    pub rdb_type: u8,
    /// The value's bytes (without the type byte).
    pub bytes: Vec<u8>,
    /// The lowest RDB version that has this encoding.
    pub rdb_version: u16,
}

fn short(items: &[&[u8]]) -> bool {
    items.iter().all(|s| s.len() <= MAX_LISTPACK_VALUE)
}

/// Encodes `v`.
pub fn encode(v: &RdbValue) -> Encoded {
    let mut out = Vec::new();
    let (rdb_type, rdb_version) = match v {
        RdbValue::String(s) => {
            write_string(&mut out, s);
            (t::STRING, RDB_VERSION_7_0)
        }
        RdbValue::List(items) => {
            let mut nodes: Vec<(u64, Vec<u8>)> = Vec::new();
            let mut w = ListpackWriter::new();
            for it in items {
                if it.len() >= LIST_PLAIN_BYTES {
                    if w.len() > 0 {
                        nodes.push((2, std::mem::take(&mut w).finish()));
                        w = ListpackWriter::new();
                    }
                    nodes.push((1, it.clone()));
                    continue;
                }
                if w.len() > 0 && w.bytes() + it.len() + 11 > LIST_NODE_BYTES {
                    nodes.push((2, std::mem::replace(&mut w, ListpackWriter::new()).finish()));
                }
                w.push(it);
            }
            if w.len() > 0 {
                nodes.push((2, w.finish()));
            }
            write_len(&mut out, nodes.len() as u64);
            for (container, b) in &nodes {
                write_len(&mut out, *container);
                write_string(&mut out, b);
            }
            (t::LIST_QUICKLIST_2, RDB_VERSION_7_0)
        }
        RdbValue::Set(members) => {
            let ints: Option<Vec<i64>> = if members.len() <= SET_MAX_INTSET_ENTRIES {
                members.iter().map(|m| canonical_i64(m)).collect()
            } else {
                None
            };
            if let Some(ints) = ints {
                write_string(&mut out, &write_intset(&ints));
                (t::SET_INTSET, RDB_VERSION_7_0)
            } else {
                write_len(&mut out, members.len() as u64);
                for m in members {
                    write_string(&mut out, m);
                }
                (t::SET, RDB_VERSION_7_0)
            }
        }
        RdbValue::Zset(members) => {
            let refs: Vec<&[u8]> = members.iter().map(|(m, _)| &m[..]).collect();
            if members.len() <= ZSET_MAX_LISTPACK_ENTRIES && short(&refs) {
                let mut sorted: Vec<&(Vec<u8>, f64)> = members.iter().collect();
                sorted.sort_by(|a, b| {
                    a.1.partial_cmp(&b.1)
                        .unwrap_or(std::cmp::Ordering::Equal)
                        .then_with(|| a.0.cmp(&b.0))
                });
                let mut w = ListpackWriter::new();
                for (m, s) in sorted {
                    w.push(m);
                    w.push(format_score(*s).as_bytes());
                }
                write_string(&mut out, &w.finish());
                (t::ZSET_LISTPACK, RDB_VERSION_7_0)
            } else {
                write_len(&mut out, members.len() as u64);
                for (m, s) in members {
                    write_string(&mut out, m);
                    write_binary_double(&mut out, *s);
                }
                (t::ZSET_2, RDB_VERSION_7_0)
            }
        }
        RdbValue::Hash(fields) => {
            let refs: Vec<&[u8]> = fields.iter().flat_map(|(f, v)| [&f[..], &v[..]]).collect();
            if fields.len() <= HASH_MAX_LISTPACK_ENTRIES && short(&refs) {
                let mut w = ListpackWriter::new();
                for r in refs {
                    w.push(r);
                }
                write_string(&mut out, &w.finish());
                (t::HASH_LISTPACK, RDB_VERSION_7_0)
            } else {
                write_len(&mut out, fields.len() as u64);
                for (f, v) in fields {
                    write_string(&mut out, f);
                    write_string(&mut out, v);
                }
                (t::HASH, RDB_VERSION_7_0)
            }
        }
        RdbValue::HashWithTtl(fields) => {
            let min = fields.iter().filter_map(|f| f.expire_at_ms).min();
            let Some(min) = min else {
                // No field has a TTL: a plain hash.
                let plain = RdbValue::Hash(
                    fields
                        .iter()
                        .map(|f| (f.field.clone(), f.value.clone()))
                        .collect(),
                );
                return encode(&plain);
            };
            write_millis(&mut out, min);
            write_len(&mut out, fields.len() as u64);
            for f in fields {
                write_len(&mut out, f.expire_at_ms.map_or(0, |at| at - min + 1));
                write_string(&mut out, &f.field);
                write_string(&mut out, &f.value);
            }
            (t::HASH_METADATA, RDB_VERSION_7_4)
        }
        RdbValue::Stream(s) => {
            let ty = crate::stream::rdb_type_for(s);
            crate::stream::encode(s, ty, &mut out);
            let version = if ty == t::STREAM_LISTPACKS_3 {
                RDB_VERSION_7_2
            } else {
                RDB_VERSION_7_0
            };
            (ty, version)
        }
    };
    Encoded {
        rdb_type,
        bytes: out,
        rdb_version,
    }
}

/// A score as text that reads back to the same double (shortest round-trip form).
fn format_score(s: f64) -> String {
    if s == f64::INFINITY {
        "inf".into()
    } else if s == f64::NEG_INFINITY {
        "-inf".into()
    } else if s == 0.0 && s.is_sign_negative() {
        "-0".into()
    } else if s == s.trunc() && s.abs() < 1e17 {
        // Integral scores as integers (Redis stores them integer-encoded).
        format!("{}", s as i64)
    } else {
        format!("{s:e}")
    }
}

/// Encodes a hash with field expiry on as Redis's `listpackex` (`RDB_TYPE_HASH_LISTPACK_EX`,
/// Redis 7.4+): the earliest field expiry (0 when none), then one listpack of (field,
/// value, expiry) triples in the given order, expiry 0 for a field without one.
pub fn encode_hash_listpack_ex(fields: &[HashField]) -> Encoded {
    let mut out = Vec::new();
    let min = fields
        .iter()
        .filter_map(|f| f.expire_at_ms)
        .min()
        .unwrap_or(0);
    write_millis(&mut out, min);
    let mut w = ListpackWriter::new();
    for f in fields {
        w.push(&f.field);
        w.push(&f.value);
        w.push_int(f.expire_at_ms.map_or(0, |t| t as i64));
    }
    write_string(&mut out, &w.finish());
    Encoded {
        rdb_type: t::HASH_LISTPACK_EX,
        bytes: out,
        rdb_version: RDB_VERSION_7_4,
    }
}
