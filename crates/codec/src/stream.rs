//! Streams (`RDB_TYPE_STREAM_LISTPACKS`, `_2`, `_3`): entries in listpacks under radix
//! tree keys, then the metadata, then the consumer groups with their PELs and consumers.

use std::collections::{BTreeMap, HashSet};

use crate::packed::{self, Elem, ListpackWriter};
use crate::rdb::{write_len, write_millis, write_string, Reader};
use crate::rdb_type as t;
use crate::value::*;
use crate::DecodeError;

const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;
/// Entries per listpack node written (Redis's `stream-node-max-entries` default).
const NODE_MAX_ENTRIES: usize = 100;
/// Bytes per listpack node written (Redis's `stream-node-max-bytes` default).
const NODE_MAX_BYTES: usize = 4096;

fn bad(what: &'static str) -> DecodeError {
    DecodeError::new(what)
}

fn id(r: &mut Reader<'_>) -> Result<StreamId, DecodeError> {
    Ok(StreamId {
        ms: r.length()?,
        seq: r.length()?,
    })
}

fn raw_id(r: &mut Reader<'_>) -> Result<StreamId, DecodeError> {
    Ok(StreamId::from_be_bytes(r.take(16)?.try_into().expect("16")))
}

/// The entries of one listpack node whose master ID is `master`.
fn node_entries(
    master: StreamId,
    lp: &[u8],
    out: &mut Vec<StreamEntry>,
) -> Result<(), DecodeError> {
    let elems = packed::listpack(lp)?;
    let mut it = elems.into_iter();
    fn nx<'a>(it: &mut std::vec::IntoIter<Elem<'a>>) -> Result<Elem<'a>, DecodeError> {
        it.next().ok_or(bad("stream listpack truncated"))
    }
    let count = nx(&mut it)?.to_i64()?;
    let deleted = nx(&mut it)?.to_i64()?;
    let nfields = nx(&mut it)?.to_i64()?;
    if count < 0 || deleted < 0 || nfields < 0 {
        return Err(bad("damaged stream listpack"));
    }
    let mut master_fields: Vec<Elem<'_>> = Vec::new();
    for _ in 0..nfields {
        master_fields.push(nx(&mut it)?);
    }
    if nx(&mut it)?.to_i64()? != 0 {
        return Err(bad("damaged stream master entry"));
    }
    let mut live = 0;
    let total = count
        .checked_add(deleted)
        .ok_or(bad("damaged stream listpack"))?;
    for _ in 0..total {
        let flags = nx(&mut it)?.to_i64()?;
        let ms = nx(&mut it)?.to_i64()?;
        let seq = nx(&mut it)?.to_i64()?;
        let id = StreamId {
            ms: master
                .ms
                .checked_add(ms as u64)
                .ok_or(bad("stream ID out of range"))?,
            seq: master.seq.wrapping_add(seq as u64),
        };
        let mut fields = Vec::new();
        let n;
        if flags & FLAG_SAMEFIELDS != 0 {
            n = nfields;
            for f in &master_fields {
                fields.push((f.to_vec(), nx(&mut it)?.to_vec()));
            }
        } else {
            n = nx(&mut it)?.to_i64()?;
            if n < 0 {
                return Err(bad("damaged stream entry"));
            }
            for _ in 0..n {
                let f = nx(&mut it)?.to_vec();
                fields.push((f, nx(&mut it)?.to_vec()));
            }
        }
        let lp_count = nx(&mut it)?.to_i64()?;
        let want = if flags & FLAG_SAMEFIELDS != 0 {
            n.saturating_add(3)
        } else {
            n.saturating_mul(2).saturating_add(4)
        };
        if lp_count != want {
            return Err(bad("damaged stream entry count"));
        }
        if flags & FLAG_DELETED == 0 {
            live += 1;
            if out.last().is_some_and(|e| e.id >= id) {
                return Err(bad("stream entries out of order"));
            }
            out.push(StreamEntry { id, fields });
        }
    }
    if live != count || it.next().is_some() {
        return Err(bad("damaged stream listpack"));
    }
    Ok(())
}

/// Redis's `streamEstimateDistanceFromFirstEverEntry`, for groups of streams written before
/// Redis 7.0 (which kept no read counter).
fn estimate_entries_read(s: &Stream, id: StreamId) -> Option<u64> {
    let length = s.entries.len() as u64;
    if s.entries_added == 0 {
        return Some(0);
    }
    if length == 0 && id <= s.last_id {
        return Some(s.entries_added);
    }
    let zero = StreamId::default();
    if id != zero && id < s.max_deleted_entry_id {
        return None;
    }
    if id == s.last_id {
        return Some(s.entries_added);
    } else if id > s.last_id {
        return None;
    }
    if s.max_deleted_entry_id == zero || s.max_deleted_entry_id < s.first_id {
        if id < s.first_id {
            return Some(s.entries_added - length);
        } else if id == s.first_id {
            return Some(s.entries_added - length + 1);
        }
    }
    None
}

/// Decodes a stream of RDB type `rdb_type`.
pub fn decode(rdb_type: u8, r: &mut Reader<'_>) -> Result<Stream, DecodeError> {
    let mut s = Stream::default();
    let nodes = r.count(2)?;
    for _ in 0..nodes {
        let key = r.string()?;
        let key: [u8; 16] = key
            .try_into()
            .map_err(|_| bad("stream node key is not an ID"))?;
        let lp = r.string()?;
        node_entries(StreamId::from_be_bytes(key), &lp, &mut s.entries)?;
    }
    let length = r.length()?;
    if length != s.entries.len() as u64 {
        return Err(bad("stream length differs from its entries"));
    }
    s.last_id = id(r)?;
    if rdb_type >= t::STREAM_LISTPACKS_2 {
        s.first_id = id(r)?;
        s.max_deleted_entry_id = id(r)?;
        s.entries_added = r.length()?;
    } else {
        s.first_id = s.entries.first().map_or_else(StreamId::default, |e| e.id);
        s.entries_added = length;
    }
    let ngroups = r.count(2)?;
    let mut names = HashSet::new();
    for _ in 0..ngroups {
        let name = r.string()?;
        if !names.insert(name.clone()) {
            return Err(bad("duplicate consumer group"));
        }
        let last_id = id(r)?;
        let entries_read = if rdb_type >= t::STREAM_LISTPACKS_2 {
            match r.length()? {
                u64::MAX => None,
                n => Some(n),
            }
        } else {
            estimate_entries_read(&s, last_id)
        };
        let npel = r.count(18)?;
        let mut pending: BTreeMap<StreamId, PendingEntry> = BTreeMap::new();
        for _ in 0..npel {
            let id = raw_id(r)?;
            let p = PendingEntry {
                id,
                delivery_time_ms: r.millis()?,
                delivery_count: r.length()?,
            };
            if pending.insert(id, p).is_some() {
                return Err(bad("duplicate pending entry"));
            }
        }
        let nconsumers = r.count(10)?;
        let mut consumers = Vec::with_capacity(nconsumers);
        let mut cnames = HashSet::new();
        let mut owned = HashSet::new();
        for _ in 0..nconsumers {
            let name = r.string()?;
            if !cnames.insert(name.clone()) {
                return Err(bad("duplicate consumer"));
            }
            let seen_time_ms = r.millis()?;
            let active_time_ms = if rdb_type >= t::STREAM_LISTPACKS_3 {
                r.millis()?
            } else {
                seen_time_ms
            };
            let n = r.count(16)?;
            let mut ids = Vec::with_capacity(n);
            for _ in 0..n {
                let id = raw_id(r)?;
                if !pending.contains_key(&id) || !owned.insert(id) {
                    return Err(bad("consumer pending entry not in the group's"));
                }
                ids.push(id);
            }
            ids.sort_unstable();
            consumers.push(StreamConsumer {
                name,
                seen_time_ms,
                active_time_ms,
                pending: ids,
            });
        }
        s.groups.push(StreamGroup {
            name,
            last_id,
            entries_read,
            pending: pending.into_values().collect(),
            consumers,
        });
    }
    Ok(s)
}

/// The RDB type a stream is written with: `_2` (Redis 7.0) unless a consumer's active
/// time differs from its seen time, which only `_3` (Redis 7.2) keeps.
pub fn rdb_type_for(s: &Stream) -> u8 {
    let v3 = s
        .groups
        .iter()
        .flat_map(|g| &g.consumers)
        .any(|c| c.active_time_ms != c.seen_time_ms);
    if v3 {
        t::STREAM_LISTPACKS_3
    } else {
        t::STREAM_LISTPACKS_2
    }
}

/// Appends stream `s` as RDB type `rdb_type` (`_2` or `_3`).
pub fn encode(s: &Stream, rdb_type: u8, out: &mut Vec<u8>) {
    // The nodes: up to NODE_MAX_ENTRIES entries or about NODE_MAX_BYTES each.
    let mut nodes: Vec<(StreamId, Vec<u8>)> = Vec::new();
    let mut i = 0;
    while i < s.entries.len() {
        let master = &s.entries[i];
        let mut end = i + 1;
        let mut bytes = 0;
        while end < s.entries.len() && end - i < NODE_MAX_ENTRIES && bytes < NODE_MAX_BYTES {
            bytes += s.entries[end]
                .fields
                .iter()
                .map(|(f, v)| f.len() + v.len() + 4)
                .sum::<usize>();
            end += 1;
        }
        let mut w = ListpackWriter::new();
        w.push_int((end - i) as i64);
        w.push_int(0);
        w.push_int(master.fields.len() as i64);
        for (f, _) in &master.fields {
            w.push(f);
        }
        w.push_int(0);
        for e in &s.entries[i..end] {
            let same = e.fields.len() == master.fields.len()
                && e.fields.iter().zip(&master.fields).all(|(a, b)| a.0 == b.0);
            let n = e.fields.len() as i64;
            w.push_int(if same { FLAG_SAMEFIELDS } else { 0 });
            w.push_int(e.id.ms.wrapping_sub(master.id.ms) as i64);
            w.push_int(e.id.seq.wrapping_sub(master.id.seq) as i64);
            if !same {
                w.push_int(n);
            }
            for (f, v) in &e.fields {
                if !same {
                    w.push(f);
                }
                w.push(v);
            }
            w.push_int(if same { n + 3 } else { 2 * n + 4 });
        }
        nodes.push((master.id, w.finish()));
        i = end;
    }
    write_len(out, nodes.len() as u64);
    for (id, lp) in &nodes {
        write_string(out, &id.to_be_bytes());
        write_string(out, lp);
    }
    write_len(out, s.entries.len() as u64);
    let put_id = |out: &mut Vec<u8>, id: StreamId| {
        write_len(out, id.ms);
        write_len(out, id.seq);
    };
    put_id(out, s.last_id);
    put_id(out, s.first_id);
    put_id(out, s.max_deleted_entry_id);
    write_len(out, s.entries_added);
    write_len(out, s.groups.len() as u64);
    for g in &s.groups {
        write_string(out, &g.name);
        put_id(out, g.last_id);
        write_len(out, g.entries_read.unwrap_or(u64::MAX));
        write_len(out, g.pending.len() as u64);
        for p in &g.pending {
            out.extend_from_slice(&p.id.to_be_bytes());
            write_millis(out, p.delivery_time_ms);
            write_len(out, p.delivery_count);
        }
        write_len(out, g.consumers.len() as u64);
        for c in &g.consumers {
            write_string(out, &c.name);
            write_millis(out, c.seen_time_ms);
            if rdb_type >= t::STREAM_LISTPACKS_3 {
                write_millis(out, c.active_time_ms);
            }
            write_len(out, c.pending.len() as u64);
            for id in &c.pending {
                out.extend_from_slice(&id.to_be_bytes());
            }
        }
    }
}
