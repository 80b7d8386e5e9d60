//! Decoding an RDB value of any type Redis 5 to 8.0 writes for the core types.

use std::collections::HashSet;

use crate::packed::{self, Elem};
use crate::rdb::Reader;
use crate::rdb_type as t;
use crate::value::*;
use crate::DecodeError;

fn no_dups<'a>(
    items: impl Iterator<Item = &'a [u8]>,
    what: &'static str,
) -> Result<(), DecodeError> {
    let mut seen = HashSet::new();
    for i in items {
        if !seen.insert(i) {
            return Err(DecodeError::new(what));
        }
    }
    Ok(())
}

fn non_empty<T>(v: Vec<T>) -> Result<Vec<T>, DecodeError> {
    if v.is_empty() {
        Err(DecodeError::new("an empty collection"))
    } else {
        Ok(v)
    }
}

fn pairs(elems: Vec<Elem<'_>>) -> Result<Vec<(Elem<'_>, Elem<'_>)>, DecodeError> {
    if !elems.len().is_multiple_of(2) {
        return Err(DecodeError::new(
            "an odd number of elements in a hash or sorted set",
        ));
    }
    let mut it = elems.into_iter();
    let mut out = Vec::new();
    while let (Some(a), Some(b)) = (it.next(), it.next()) {
        out.push((a, b));
    }
    Ok(out)
}

fn hash(h: Vec<(Vec<u8>, Vec<u8>)>) -> Result<RdbValue, DecodeError> {
    no_dups(h.iter().map(|(f, _)| &f[..]), "duplicate hash fields")?;
    Ok(RdbValue::Hash(non_empty(h)?))
}

fn set(s: Vec<Vec<u8>>) -> Result<RdbValue, DecodeError> {
    no_dups(s.iter().map(|m| &m[..]), "duplicate set members")?;
    Ok(RdbValue::Set(non_empty(s)?))
}

fn zset(z: Vec<(Vec<u8>, f64)>) -> Result<RdbValue, DecodeError> {
    if z.iter().any(|(_, s)| s.is_nan()) {
        return Err(DecodeError::new("a NaN score"));
    }
    no_dups(
        z.iter().map(|(m, _)| &m[..]),
        "duplicate sorted set members",
    )?;
    Ok(RdbValue::Zset(non_empty(z)?))
}

fn hash_ttl(fields: Vec<HashField>) -> Result<RdbValue, DecodeError> {
    no_dups(fields.iter().map(|f| &f.field[..]), "duplicate hash fields")?;
    let fields = non_empty(fields)?;
    if fields.iter().all(|f| f.expire_at_ms.is_none()) {
        return Ok(RdbValue::Hash(
            fields.into_iter().map(|f| (f.field, f.value)).collect(),
        ));
    }
    Ok(RdbValue::HashWithTtl(fields))
}

/// The largest field expiry Redis accepts (`EB_EXPIRE_TIME_MAX`, 2^48 - 1).
const EXPIRE_TIME_MAX: u64 = (1 << 48) - 1;

/// Decodes a value of RDB type `rdb_type` from `r` (positioned after the type byte).
pub fn decode(rdb_type: u8, r: &mut Reader<'_>) -> Result<RdbValue, DecodeError> {
    Ok(match rdb_type {
        t::STRING => RdbValue::String(r.string()?),
        t::LIST => {
            let n = r.count(1)?;
            let mut l = Vec::with_capacity(n);
            for _ in 0..n {
                l.push(r.string()?);
            }
            RdbValue::List(non_empty(l)?)
        }
        t::SET => {
            let n = r.count(1)?;
            let mut s = Vec::with_capacity(n);
            for _ in 0..n {
                s.push(r.string()?);
            }
            set(s)?
        }
        t::ZSET | t::ZSET_2 => {
            let n = r.count(if rdb_type == t::ZSET { 2 } else { 9 })?;
            let mut z = Vec::with_capacity(n);
            for _ in 0..n {
                let m = r.string()?;
                let s = if rdb_type == t::ZSET {
                    r.string_double()?
                } else {
                    r.binary_double()?
                };
                z.push((m, s));
            }
            zset(z)?
        }
        t::HASH => {
            let n = r.count(2)?;
            let mut h = Vec::with_capacity(n);
            for _ in 0..n {
                h.push((r.string()?, r.string()?));
            }
            hash(h)?
        }
        t::HASH_ZIPMAP => hash(packed::zipmap(&r.string()?)?)?,
        t::LIST_ZIPLIST => {
            let zl = r.string()?;
            RdbValue::List(non_empty(
                packed::ziplist(&zl)?
                    .into_iter()
                    .map(Elem::to_vec)
                    .collect(),
            )?)
        }
        t::SET_INTSET => {
            let is = r.string()?;
            set(packed::intset(&is)?
                .into_iter()
                .map(|v| v.to_string().into_bytes())
                .collect())?
        }
        t::SET_LISTPACK => {
            let lp = r.string()?;
            set(packed::listpack(&lp)?
                .into_iter()
                .map(Elem::to_vec)
                .collect())?
        }
        t::ZSET_ZIPLIST | t::ZSET_LISTPACK => {
            let b = r.string()?;
            let elems = if rdb_type == t::ZSET_ZIPLIST {
                packed::ziplist(&b)?
            } else {
                packed::listpack(&b)?
            };
            let z = pairs(elems)?
                .into_iter()
                .map(|(m, s)| Ok((m.to_vec(), s.to_f64()?)))
                .collect::<Result<Vec<_>, DecodeError>>()?;
            zset(z)?
        }
        t::HASH_ZIPLIST | t::HASH_LISTPACK => {
            let b = r.string()?;
            let elems = if rdb_type == t::HASH_ZIPLIST {
                packed::ziplist(&b)?
            } else {
                packed::listpack(&b)?
            };
            hash(
                pairs(elems)?
                    .into_iter()
                    .map(|(f, v)| (f.to_vec(), v.to_vec()))
                    .collect(),
            )?
        }
        t::LIST_QUICKLIST | t::LIST_QUICKLIST_2 => {
            let nodes = r.count(2)?;
            let mut l = Vec::new();
            for _ in 0..nodes {
                let container = if rdb_type == t::LIST_QUICKLIST_2 {
                    r.length()?
                } else {
                    2
                };
                let b = r.string()?;
                match container {
                    // A plain node: one element.
                    1 => l.push(b),
                    2 => {
                        let elems = if rdb_type == t::LIST_QUICKLIST {
                            packed::ziplist(&b)?
                        } else {
                            packed::listpack(&b)?
                        };
                        l.extend(elems.into_iter().map(Elem::to_vec));
                    }
                    _ => return Err(DecodeError::new("unknown quicklist container")),
                }
            }
            RdbValue::List(non_empty(l)?)
        }
        t::HASH_METADATA | t::HASH_METADATA_PRE_GA => {
            let min = if rdb_type == t::HASH_METADATA {
                r.millis()?
            } else {
                0
            };
            let n = r.count(3)?;
            let mut fields = Vec::with_capacity(n);
            for _ in 0..n {
                let ttl = r.length()?;
                let expire_at_ms = match ttl {
                    0 => None,
                    ttl if rdb_type == t::HASH_METADATA => Some(
                        (ttl - 1)
                            .checked_add(min)
                            .ok_or(DecodeError::new("a field expiry out of range"))?,
                    ),
                    ttl => Some(ttl),
                };
                if expire_at_ms.is_some_and(|at| at > EXPIRE_TIME_MAX) {
                    return Err(DecodeError::new("a field expiry out of range"));
                }
                fields.push(HashField {
                    field: r.string()?,
                    value: r.string()?,
                    expire_at_ms,
                });
            }
            hash_ttl(fields)?
        }
        t::HASH_LISTPACK_EX | t::HASH_LISTPACK_EX_PRE_GA => {
            if rdb_type == t::HASH_LISTPACK_EX {
                r.millis()?;
            }
            let lp = r.string()?;
            let elems = packed::listpack(&lp)?;
            if !elems.len().is_multiple_of(3) {
                return Err(DecodeError::new("a hash listpack-ex not made of triples"));
            }
            let mut fields = Vec::with_capacity(elems.len() / 3);
            for c in elems.chunks_exact(3) {
                let ttl = c[2].to_i64()?;
                if !(0..=EXPIRE_TIME_MAX as i64).contains(&ttl) {
                    return Err(DecodeError::new("a field expiry out of range"));
                }
                fields.push(HashField {
                    field: c[0].to_vec(),
                    value: c[1].to_vec(),
                    expire_at_ms: (ttl != 0).then_some(ttl as u64),
                });
            }
            hash_ttl(fields)?
        }
        t::STREAM_LISTPACKS | t::STREAM_LISTPACKS_2 | t::STREAM_LISTPACKS_3 => {
            RdbValue::Stream(Box::new(crate::stream::decode(rdb_type, r)?))
        }
        _ => return Err(DecodeError::new("an unknown or unsupported value type")),
    })
}
