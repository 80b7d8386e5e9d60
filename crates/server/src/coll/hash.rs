//! The hash type: fields and values in insertion order (as Redis's listpack keeps them),
//! with an optional expiry per field (Redis 7.4's hash field expiration).
//!
//! Record value (see `docs/storage-format.md`, "Collection values"):
//!
//! ```text
//! flags: u8            bit 0 = FLAG_BIG (OBJECT ENCODING says "hashtable")
//!                      bit 2 = FLAG_FIELD_TTL (entries carry an expiry; "listpackex")
//! count: varint        number of fields
//! count × { field: bytes, value: bytes [, expiry: bytes] }
//!                      (bytes = varint length + the bytes; expiry, only with
//!                      FLAG_FIELD_TTL: empty = none, else 8 bytes, Unix ms little-endian)
//! ```
//!
//! Fields are distinct; a record with a repeated field does not decode. While the hash is
//! small (not big), the record keeps Redis's listpack order (insertion order; a removed
//! field closes its gap), which HGETALL, HKEYS, HVALS and HSCAN reply in; once a field
//! expiry command touched it (FLAG_FIELD_TTL, Redis's `listpackex`), the order is Redis's
//! listpackex order: fields with an expiry first, by expiry, then the others. Once big,
//! the order is arbitrary, as in Redis's hashtable.
//!
//! An expired field stays in the hash until a command or the active expiry deletes it, as
//! in Redis: the readers skip it ([`Hash::is_expired`]), HLEN still counts it.

use super::codec::{find_entry, put_bytes, put_varint, Reader};
use super::groups::{part_of_bits, Changes, Grouping, Shadows};
use super::{DecodeError, Thresholds, FLAG_BIG};
use indexmap::IndexMap;
use std::collections::{BTreeSet, HashMap};

type Map = IndexMap<Vec<u8>, Vec<u8>, foldhash::fast::RandomState>;

/// Flag bit in a hash record's first byte (root and groups): the entries carry an expiry
/// each (the hash is Redis's `listpackex` while small).
pub const FLAG_FIELD_TTL: u8 = 4;

/// Encoded bytes of one field and its value (an estimate: one-byte length prefixes).
#[inline]
fn entry_bytes(f: &[u8], v: &[u8]) -> isize {
    (f.len() + v.len() + 2) as isize
}

/// Appends the encoded expiry of an entry (empty: none).
#[inline]
fn put_expiry(out: &mut Vec<u8>, exp: Option<i64>) {
    match exp {
        None => put_bytes(out, &[]),
        Some(t) => put_bytes(out, &t.to_le_bytes()),
    }
}

/// A hash: field → value, in one part while compact, in 2^bits parts by member hash once
/// grouped (see [`super::groups`]).
#[derive(Clone, Debug, Default)]
pub struct Hash {
    /// Fields and values by part, in insertion order within a part (while not big).
    parts: Vec<Map>,
    /// Outgrown the listpack encoding once (see [`FLAG_BIG`]).
    pub big: bool,
    /// Layout and change marks.
    grouping: Grouping,
    /// The longest field or value written by [`Hash::insert`] since the last
    /// [`Hash::note_encoding`] (None: nothing written). Redis checks its listpack limits
    /// only against what a command writes, so a lowered threshold converts a hash at its
    /// next write of a field, never at a removal. Not part of the record.
    written: Option<usize>,
    /// Number of fields.
    len: usize,
    /// While grouped: each part's fields and values as its group record holds them.
    shadow: Shadows,
    /// Field expiry is on (sticky, [`FLAG_FIELD_TTL`]): Redis's `listpackex` encoding.
    ttl: bool,
    /// The field expiries (boxed: most hashes have none, and a [`super::Coll`] stays small).
    fx: Box<Expiries>,
}

/// The expiries of a hash's fields.
#[derive(Clone, Debug, Default)]
struct Expiries {
    /// The expiry (Unix ms) of each field that has one.
    map: HashMap<Vec<u8>, i64, foldhash::fast::RandomState>,
    /// The same, ordered by expiry.
    order: BTreeSet<(i64, Vec<u8>)>,
}

impl PartialEq for Hash {
    fn eq(&self, other: &Hash) -> bool {
        if self.big != other.big
            || self.len != other.len
            || self.ttl != other.ttl
            || self.fx.map != other.fx.map
        {
            return false;
        }
        if self.big {
            // A hashtable has no order.
            self.iter().all(|(f, v)| other.get(f) == Some(v))
        } else {
            // Insertion order is part of a small hash's state (the replies follow it).
            self.iter().eq(other.iter())
        }
    }
}

impl Hash {
    fn part(&self, field: &[u8]) -> Option<&Map> {
        self.parts.get(self.grouping.part_of(field))
    }

    /// Number of fields (expired ones not yet deleted included, as Redis's HLEN).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no fields.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value of `field` (expired or not).
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.part(field)?.get(field).map(|v| &v[..])
    }

    /// The value of `field` unless it expired before `now_ms`.
    pub fn get_live(&self, field: &[u8], now_ms: i64) -> Option<&[u8]> {
        if self.is_expired(field, now_ms) {
            return None;
        }
        self.get(field)
    }

    /// True when `field` is there (expired or not).
    pub fn contains(&self, field: &[u8]) -> bool {
        self.part(field).is_some_and(|m| m.contains_key(field))
    }

    /// True when `field` has an expiry before `now_ms` (Redis: expired when the expiry is
    /// before the command's time).
    #[inline]
    pub fn is_expired(&self, field: &[u8], now_ms: i64) -> bool {
        !self.fx.map.is_empty() && self.fx.map.get(field).is_some_and(|&t| t < now_ms)
    }

    /// The expiry of `field` (Unix ms), if it has one.
    pub fn expiry(&self, field: &[u8]) -> Option<i64> {
        self.fx.map.get(field).copied()
    }

    /// True when field expiry is on (see [`FLAG_FIELD_TTL`]).
    pub fn ttl_enabled(&self) -> bool {
        self.ttl
    }

    /// Number of fields with an expiry.
    pub fn volatile_fields(&self) -> usize {
        self.fx.map.len()
    }

    /// The earliest field expiry, if any field has one.
    pub fn min_expiry(&self) -> Option<i64> {
        self.fx.order.first().map(|(t, _)| *t)
    }

    /// True when some field expired before `now_ms`.
    pub fn has_expired(&self, now_ms: i64) -> bool {
        self.min_expiry().is_some_and(|t| t < now_ms)
    }

    /// The fields whose expiry is before `before_ms`, earliest first, at most `max`.
    pub fn expired_fields(&self, before_ms: i64, max: usize) -> Vec<Vec<u8>> {
        self.fx
            .order
            .iter()
            .take_while(|(t, _)| *t < before_ms)
            .take(max)
            .map(|(_, f)| f.clone())
            .collect()
    }

    /// Number of fields not expired at `now_ms`.
    pub fn live_len(&self, now_ms: i64) -> usize {
        self.len
            - self
                .fx
                .order
                .iter()
                .take_while(|(t, _)| *t < now_ms)
                .count()
    }

    /// Turns field expiry on (Redis's conversion of a listpack to `listpackex`; sticky).
    /// Every group is written again (their records gain the expiry of each entry).
    pub fn enable_ttl(&mut self) {
        if self.ttl {
            return;
        }
        self.ttl = true;
        self.mark_all_changed();
    }

    /// Marks the root and every part as changed (the record layout of every entry
    /// changed).
    fn mark_all_changed(&mut self) {
        self.grouping.root_changed();
        if self.grouping.is_grouped() {
            for p in 0..self.parts.len() {
                self.grouping.changed(p, 0);
                self.shadow.forget(p);
            }
        }
    }

    /// Notes a change of part `p` that the shadow cannot follow by an edit.
    fn changed_whole(&mut self, p: usize, delta: isize) {
        self.grouping.changed(p, delta);
        self.shadow.forget(p);
    }

    /// Sets `field`, clearing its expiry (HSET); true when the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        let new = self.insert_keep_ttl(field, value);
        if !new && self.fx.map.contains_key(field) {
            self.set_expiry(field, None);
        }
        new
    }

    /// Sets `field`, keeping the expiry of an existing field (HINCRBY, HSETEX); true when
    /// the field is new.
    pub fn insert_keep_ttl(&mut self, field: &[u8], value: &[u8]) -> bool {
        let longest = field.len().max(value.len());
        self.written = Some(self.written.map_or(longest, |w| w.max(longest)));
        if self.parts.is_empty() {
            self.parts.push(Map::default());
        }
        let p = self.grouping.part_of(field);
        let ttl = self.ttl;
        match self.parts[p].get_mut(field) {
            Some(v) => {
                let delta = value.len() as isize - v.len() as isize;
                v.clear();
                v.extend_from_slice(value);
                if ttl {
                    self.changed_whole(p, delta);
                    return false;
                }
                self.grouping.changed(p, delta);
                self.shadow.edit(p, |b| match find_entry(b, 2, field) {
                    Some((_, old)) => {
                        let mut new = Vec::with_capacity(value.len() + 2);
                        put_bytes(&mut new, value);
                        b.splice(old, new);
                        true
                    }
                    None => false,
                });
                false
            }
            None => {
                self.parts[p].insert(field.to_vec(), value.to_vec());
                self.len += 1;
                if ttl {
                    self.changed_whole(p, entry_bytes(field, value));
                    return true;
                }
                self.grouping.changed(p, entry_bytes(field, value));
                self.shadow.edit(p, |b| {
                    put_bytes(b, field);
                    put_bytes(b, value);
                    true
                });
                true
            }
        }
    }

    /// Sets (Some) or clears (None) the expiry of `field`, which must be there; field
    /// expiry must be on to set one. A small hash keeps Redis's listpackex order: a field
    /// with an expiry goes before the first other field whose expiry is not earlier (or
    /// that has none), a field without one goes last.
    pub fn set_expiry(&mut self, field: &[u8], exp: Option<i64>) {
        self.set_expiry_placed(field, exp, true);
    }

    /// Sets the expiry of `field` as [`Hash::set_expiry`] does, but leaves it where it is:
    /// for a hash built in listpackex order already (RESTORE of Redis's payload).
    pub fn set_expiry_in_place(&mut self, field: &[u8], exp: Option<i64>) {
        self.set_expiry_placed(field, exp, false);
    }

    fn set_expiry_placed(&mut self, field: &[u8], exp: Option<i64>, move_it: bool) {
        let p = self.grouping.part_of(field);
        if !self.parts.get(p).is_some_and(|m| m.contains_key(field)) {
            debug_assert!(false, "set_expiry of a missing field");
            return;
        }
        debug_assert!(
            exp.is_none() || self.ttl,
            "set_expiry without field expiry on"
        );
        let old = match exp {
            Some(t) => self.fx.map.insert(field.to_vec(), t),
            None => self.fx.map.remove(field),
        };
        if let Some(o) = old {
            self.fx.order.remove(&(o, field.to_vec()));
        }
        if let Some(t) = exp {
            self.fx.order.insert((t, field.to_vec()));
        }
        if old.is_none() && exp.is_none() {
            return;
        }
        if move_it && !self.big && self.ttl {
            self.place(p, field, exp);
        }
        self.changed_whole(p, 0);
    }

    /// Moves `field` (in part `p`) to its listpackex position for expiry `exp`.
    fn place(&mut self, p: usize, field: &[u8], exp: Option<i64>) {
        let exps = &self.fx.map;
        let m = &mut self.parts[p];
        let Some(i) = m.get_index_of(field) else {
            return;
        };
        let last = m.len() - 1;
        let target = match exp {
            None => last,
            Some(t) => {
                // The first other field whose expiry is none or not before `t`.
                let found = (0..m.len()).filter(|&k| k != i).find(|&k| {
                    let f = m.get_index(k).expect("in range").0;
                    exps.get(f).is_none_or(|&e| e >= t)
                });
                match found {
                    None => last,
                    Some(k) if k < i => k,
                    Some(k) => k - 1,
                }
            }
        };
        if target != i {
            m.move_index(i, target);
        }
    }

    /// Removes `field`; true when it was there. A small hash keeps the order of the
    /// others (as a listpack does); a big one may move the last field into the gap.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let p = self.grouping.part_of(field);
        let Some(m) = self.parts.get_mut(p) else {
            return false;
        };
        let removed = if self.big {
            m.swap_remove_entry(field)
        } else {
            m.shift_remove_entry(field)
        };
        match removed {
            Some((f, v)) => {
                self.len -= 1;
                if let Some(t) = self.fx.map.remove(&f) {
                    self.fx.order.remove(&(t, f.clone()));
                }
                if self.ttl {
                    self.changed_whole(p, -entry_bytes(&f, &v));
                    return true;
                }
                self.grouping.changed(p, -entry_bytes(&f, &v));
                self.shadow.edit(p, |b| {
                    find_entry(b, 2, &f)
                        .map(|(entry, _)| b.drain(entry))
                        .is_some()
                });
                true
            }
            None => false,
        }
    }

    /// The field and value at position `i` (0..len) of the iteration order, for random
    /// picks (O(parts)).
    pub fn get_index(&self, mut i: usize) -> Option<(&[u8], &[u8])> {
        for m in &self.parts {
            if i < m.len() {
                return m.get_index(i).map(|(f, v)| (&f[..], &v[..]));
            }
            i -= m.len();
        }
        None
    }

    /// Fields and values in reply order (expired ones included).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.parts
            .iter()
            .flat_map(|m| m.iter().map(|(f, v)| (&f[..], &v[..])))
    }

    /// Fields and values not expired at `now_ms`, in reply order.
    pub fn iter_live(&self, now_ms: i64) -> impl Iterator<Item = (&[u8], &[u8])> {
        let check = self.has_expired(now_ms);
        self.iter()
            .filter(move |(f, _)| !check || !self.is_expired(f, now_ms))
    }

    /// Fields, values and expiries in reply order (expired ones included).
    pub fn iter_ex(&self) -> impl Iterator<Item = (&[u8], &[u8], Option<i64>)> {
        self.iter().map(|(f, v)| (f, v, self.expiry(f)))
    }

    /// Approximate RAM bytes.
    pub fn ram_bytes(&self) -> usize {
        // O(1): from the encoded-size estimate (the cache asks at every write); the
        // shadow of a grouped hash holds about the encoded size again.
        let shadow = if self.grouping.is_grouped() {
            self.grouping.total_bytes()
        } else {
            0
        };
        64 + self.parts.len() * 64
            + self.grouping.total_bytes()
            + shadow
            + self.len * 72
            + self.fx.map.len() * 160
    }

    fn encode_entries<'a>(
        out: &mut Vec<u8>,
        ttl: bool,
        items: impl Iterator<Item = (&'a [u8], &'a [u8], Option<i64>)>,
    ) {
        for (f, v, t) in items {
            put_bytes(out, f);
            put_bytes(out, v);
            if ttl {
                put_expiry(out, t);
            }
        }
    }

    fn ttl_flag(&self) -> u8 {
        if self.ttl {
            FLAG_FIELD_TTL
        } else {
            0
        }
    }

    /// Appends the record value: the whole hash while compact, the root once grouped.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let big = if self.big { FLAG_BIG } else { 0 };
        if self.grouping.is_grouped() {
            out.push(big | super::FLAG_GROUPED | self.ttl_flag());
            out.push(self.grouping.bits());
        } else {
            out.push(big | self.ttl_flag());
            put_varint(out, self.len as u64);
            Self::encode_entries(out, self.ttl, self.iter_ex());
        }
    }

    /// Appends the record value of group `g` (grouped only).
    pub fn encode_group(&self, g: u64, out: &mut Vec<u8>) {
        let m = &self.parts[g as usize];
        if self
            .shadow
            .write_group_flagged(g as usize, self.ttl_flag(), m.len(), out)
        {
            #[cfg(debug_assertions)]
            self.check_shadow(g as usize);
        } else {
            out.push(self.ttl_flag());
            put_varint(out, m.len() as u64);
            Self::encode_entries(
                out,
                self.ttl,
                m.iter().map(|(f, v)| (&f[..], &v[..], self.expiry(f))),
            );
        }
    }

    /// Debug builds: the shadow of part `p` holds exactly the part's fields and values.
    #[cfg(debug_assertions)]
    fn check_shadow(&self, p: usize) {
        let Some(b) = self.shadow.get(p) else {
            return;
        };
        let mut r = Reader::new(b);
        let mut n = 0;
        while r.pos() < b.len() {
            let f = r.bytes().expect("shadow field");
            let v = r.bytes().expect("shadow value");
            if self.ttl {
                let t = decode_expiry(r.bytes().expect("shadow expiry")).expect("expiry");
                assert_eq!(self.expiry(f), t, "shadow of part {p}");
            }
            assert_eq!(
                self.parts[p].get(f).map(|x| &x[..]),
                Some(v),
                "shadow of part {p}"
            );
            n += 1;
        }
        assert_eq!(n, self.parts[p].len(), "shadow of part {p}");
    }

    fn decode_part(
        r: &mut Reader<'_>,
        bits: u8,
        part: Option<usize>,
        ttl: bool,
        into: &mut [Map],
        exps: &mut Vec<(Vec<u8>, i64)>,
    ) -> Result<(usize, usize), DecodeError> {
        let n = r.count(if ttl { 3 } else { 2 })?;
        let mut bytes = 0usize;
        for _ in 0..n {
            let f = r.bytes()?;
            let v = r.bytes()?;
            if ttl {
                if let Some(t) = decode_expiry(r.bytes()?)? {
                    exps.push((f.to_vec(), t));
                }
            }
            let p = part_of_bits(bits, f);
            if part.is_some_and(|want| want != p) {
                return Err(DecodeError("hash field in the wrong group".into()));
            }
            bytes += entry_bytes(f, v) as usize;
            if into[p].insert(f.to_vec(), v.to_vec()).is_some() {
                return Err(DecodeError("duplicate hash field".into()));
            }
        }
        r.finish()?;
        Ok((n, bytes))
    }

    /// Builds the expiry maps from decoded (field, expiry) pairs.
    fn with_expiries(mut self, exps: Vec<(Vec<u8>, i64)>) -> Hash {
        for (f, t) in exps {
            self.fx.order.insert((t, f.clone()));
            self.fx.map.insert(f, t);
        }
        self
    }

    /// Decodes a compact record value.
    pub fn decode(bytes: &[u8]) -> Result<Hash, DecodeError> {
        let mut r = Reader::new(bytes);
        let flags = r.byte()?;
        if flags & !(FLAG_BIG | FLAG_FIELD_TTL) != 0 {
            return Err(DecodeError(format!("unknown hash flags {flags:#x}")));
        }
        let ttl = flags & FLAG_FIELD_TTL != 0;
        let mut parts = vec![Map::default()];
        let mut exps = Vec::new();
        let (len, b) = Self::decode_part(&mut r, 0, None, ttl, &mut parts, &mut exps)?;
        Ok(Hash {
            parts,
            big: flags & FLAG_BIG != 0,
            grouping: Grouping::stored(false, 0, vec![b]),
            written: None,
            len,
            shadow: Shadows::default(),
            ttl,
            ..Hash::default()
        }
        .with_expiries(exps))
    }

    /// Decodes a grouped hash: its root record value and its groups (id, value) in id
    /// order.
    pub fn decode_grouped(root: &[u8], groups: &[(u64, &[u8])]) -> Result<Hash, DecodeError> {
        let mut r = Reader::new(root);
        let flags = r.byte()?;
        if flags & !FLAG_FIELD_TTL != FLAG_BIG | super::FLAG_GROUPED {
            return Err(DecodeError(format!(
                "unknown grouped hash flags {flags:#x}"
            )));
        }
        let ttl_flag = flags & FLAG_FIELD_TTL;
        let bits = r.byte()?;
        r.finish()?;
        let ids: Vec<u64> = groups.iter().map(|(g, _)| *g).collect();
        super::groups::check_hashed_groups(bits, &ids)?;
        let mut parts = vec![Map::default(); 1 << bits];
        let mut sizes = Vec::with_capacity(parts.len());
        let mut len = 0;
        let mut shadow = Shadows::with_capacity(parts.len());
        let mut exps = Vec::new();
        for (g, v) in groups {
            let mut r = Reader::new(v);
            if r.byte()? != ttl_flag {
                return Err(DecodeError("unknown hash group flags".into()));
            }
            shadow.push_stored(v)?;
            let (n, b) = Self::decode_part(
                &mut r,
                bits,
                Some(*g as usize),
                ttl_flag != 0,
                &mut parts,
                &mut exps,
            )?;
            len += n;
            sizes.push(b);
        }
        Ok(Hash {
            parts,
            big: true,
            grouping: Grouping::stored(true, bits, sizes),
            written: None,
            len,
            shadow,
            ttl: ttl_flag != 0,
            ..Hash::default()
        }
        .with_expiries(exps))
    }

    /// Re-plans the layout for groups of about `group_bytes` (moving the fields into the
    /// new parts when it changes).
    pub fn plan_layout(&mut self, group_bytes: usize) {
        let want = self.grouping.plan(group_bytes, self.big);
        let (grouped, bits) = match want {
            None => (false, 0),
            Some(b) => (true, b),
        };
        if grouped == self.grouping.is_grouped() && bits == self.grouping.bits() {
            return;
        }
        let mut parts = vec![Map::default(); 1 << bits];
        let mut sizes = vec![0usize; parts.len()];
        for m in std::mem::take(&mut self.parts) {
            for (f, v) in m {
                let p = part_of_bits(bits, &f);
                sizes[p] += entry_bytes(&f, &v) as usize;
                parts[p].insert(f, v);
            }
        }
        self.shadow = Shadows::for_layout(grouped, parts.len());
        self.parts = parts;
        self.grouping.relayout(grouped, bits, sizes);
    }

    /// The layout's state (grouped, group ids).
    pub fn grouping(&self) -> &Grouping {
        &self.grouping
    }

    /// What to write since the last call (building the shadows of the groups to write).
    pub fn take_changes(&mut self) -> Changes {
        let c = self.grouping.take_changes();
        let (grouping, parts, exps, ttl) = (&self.grouping, &self.parts, &self.fx.map, self.ttl);
        self.shadow.fill(
            &c.groups,
            |g| grouping.part_bytes(g),
            |g, b| {
                Self::encode_entries(
                    b,
                    ttl,
                    parts[g]
                        .iter()
                        .map(|(f, v)| (&f[..], &v[..], exps.get(f).copied())),
                )
            },
        );
        c
    }

    /// Sets the sticky big flag when a write since the last call took the hash past Redis's
    /// listpack limits: more than `hash-max-listpack-entries` fields, or a field or value
    /// written longer than `hash-max-listpack-value` bytes (Redis's `hashTypeSet` /
    /// `hashTypeTryConversion`). A removal alone never converts.
    pub fn note_encoding(&mut self, t: &Thresholds) {
        if let Some(longest) = self.written.take() {
            if !self.big
                && (self.len > t.hash_max_listpack_entries || longest > t.hash_max_listpack_value)
            {
                self.big = true;
                self.grouping.root_changed();
            }
        }
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding_name(&self) -> &'static str {
        if self.big {
            "hashtable"
        } else if self.ttl {
            "listpackex"
        } else {
            "listpack"
        }
    }
}

/// Decodes an entry's expiry (empty: none; else 8 bytes, Unix ms little-endian, > 0).
fn decode_expiry(b: &[u8]) -> Result<Option<i64>, DecodeError> {
    match b.len() {
        0 => Ok(None),
        8 => {
            let t = i64::from_le_bytes(b.try_into().expect("8 bytes"));
            if t <= 0 {
                return Err(DecodeError(format!("hash field expiry {t} out of range")));
            }
            Ok(Some(t))
        }
        n => Err(DecodeError(format!("hash field expiry of {n} bytes"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(h: &Hash) -> Hash {
        let mut out = Vec::new();
        h.encode(&mut out);
        let back = Hash::decode(&out).unwrap();
        assert_eq!(&back, h);
        back
    }

    fn small() -> Thresholds {
        Thresholds {
            hash_max_listpack_entries: 4,
            hash_max_listpack_value: 8,
            ..Thresholds::default()
        }
    }

    #[test]
    fn round_trips_keep_order_values_and_flag() {
        let mut h = Hash::default();
        round_trip(&h);
        for i in (0..50).rev() {
            h.insert(format!("f{i}").as_bytes(), format!("{i}").as_bytes());
        }
        h.insert(b"", b"");
        h.insert(b"bin\x00\xff", &[0u8; 300]);
        assert!(h.remove(b"f10"));
        assert!(!h.remove(b"f10"));
        let back = round_trip(&h);
        let order: Vec<&[u8]> = back.iter().map(|(f, _)| f).collect();
        assert_eq!(order[0], b"f49");
        assert_eq!(order[39], b"f9");
        assert_eq!(order[40], b"f8");
        assert_eq!(back.get(b"bin\x00\xff"), Some(&[0u8; 300][..]));
        h.big = true;
        let back = round_trip(&h);
        assert!(back.big);
        assert_eq!(back.encoding_name(), "hashtable");
    }

    #[test]
    fn order_matters_for_equality() {
        let mut a = Hash::default();
        a.insert(b"x", b"1");
        a.insert(b"y", b"2");
        let mut b = Hash::default();
        b.insert(b"y", b"2");
        b.insert(b"x", b"1");
        assert_ne!(a, b);
    }

    #[test]
    fn small_hash_removal_keeps_order() {
        let mut h = Hash::default();
        for f in ["a", "b", "c", "d"] {
            h.insert(f.as_bytes(), b"v");
        }
        h.remove(b"b");
        let order: Vec<&[u8]> = h.iter().map(|(f, _)| f).collect();
        assert_eq!(order, vec![&b"a"[..], b"c", b"d"]);
    }

    #[test]
    fn encoding_follows_redis_limits() {
        let t = small();
        let mut h = Hash::default();
        for i in 0..4 {
            h.insert(format!("f{i}").as_bytes(), b"12345678");
        }
        h.note_encoding(&t);
        assert_eq!(h.encoding_name(), "listpack");
        // An update does not add a field; a value at the limit is still small.
        h.insert(b"f0", b"abcdefgh");
        h.note_encoding(&t);
        assert!(!h.big);
        // A fifth field converts.
        h.insert(b"f4", b"x");
        h.note_encoding(&t);
        assert!(h.big);
        // Sticky: removals never convert back.
        for i in 0..5 {
            h.remove(format!("f{i}").as_bytes());
        }
        h.insert(b"a", b"b");
        h.note_encoding(&t);
        assert_eq!(h.encoding_name(), "hashtable");

        // A long field or value converts.
        let mut h = Hash::default();
        h.insert(b"abcdefghi", b"1");
        h.note_encoding(&t);
        assert!(h.big);
        let mut h = Hash::default();
        h.insert(b"f", b"123456789");
        h.note_encoding(&t);
        assert!(h.big);
    }

    #[test]
    fn only_writes_are_checked_against_the_limits() {
        // Written under generous limits, then the limits drop: Redis keeps the listpack until
        // a field is written.
        let mut h = Hash::default();
        for i in 0..10 {
            h.insert(format!("f{i}").as_bytes(), b"a long value, longer than 8");
        }
        h.note_encoding(&Thresholds::default());
        assert!(!h.big);
        let t = small();
        h.remove(b"f0");
        h.note_encoding(&t);
        assert!(!h.big, "a removal does not convert");
        // A decoded hash has nothing pending either.
        let mut back = round_trip(&h);
        back.note_encoding(&t);
        assert!(!back.big);
        // A short write converts through the field count.
        back.insert(b"f1", b"x");
        back.note_encoding(&t);
        assert!(back.big);
    }

    #[test]
    fn field_expiries_round_trip_and_old_records_decode() {
        // A record written before field expiry existed (flags without FLAG_FIELD_TTL).
        let mut old = vec![0u8];
        put_varint(&mut old, 2);
        for (f, v) in [("a", "1"), ("b", "2")] {
            put_bytes(&mut old, f.as_bytes());
            put_bytes(&mut old, v.as_bytes());
        }
        let mut h = Hash::decode(&old).unwrap();
        assert!(!h.ttl_enabled());
        assert_eq!(h.encoding_name(), "listpack");
        h.enable_ttl();
        h.set_expiry(b"b", Some(5_000));
        h.insert(b"c", b"3");
        h.set_expiry(b"c", Some(4_000));
        let back = round_trip(&h);
        assert_eq!(back.encoding_name(), "listpackex");
        assert_eq!(back.expiry(b"b"), Some(5_000));
        assert_eq!(back.expiry(b"c"), Some(4_000));
        assert_eq!(back.expiry(b"a"), None);
        // Listpackex order: by expiry, then the fields without one.
        let order: Vec<&[u8]> = back.iter().map(|(f, _)| f).collect();
        assert_eq!(order, vec![&b"c"[..], b"b", b"a"]);
        assert_eq!(back.min_expiry(), Some(4_000));
        assert!(back.is_expired(b"c", 4_001) && !back.is_expired(b"c", 4_000));
        assert_eq!(back.live_len(4_500), 2);
        assert_eq!(
            back.expired_fields(10_000, 10),
            vec![b"c".to_vec(), b"b".to_vec()]
        );
        // HSET clears, removal forgets.
        let mut h = back;
        h.insert(b"b", b"x");
        assert_eq!(h.expiry(b"b"), None);
        h.remove(b"c");
        assert_eq!(h.min_expiry(), None);
        let back = round_trip(&h);
        assert!(back.ttl_enabled(), "field expiry stays on");
        // A bad expiry does not decode.
        let mut bad = vec![FLAG_FIELD_TTL];
        put_varint(&mut bad, 1);
        put_bytes(&mut bad, b"f");
        put_bytes(&mut bad, b"v");
        put_bytes(&mut bad, &[1, 2, 3]);
        assert!(Hash::decode(&bad).is_err());
    }

    #[test]
    fn grouped_hashes_keep_field_expiries() {
        let mut h = Hash::default();
        for i in 0..2000 {
            h.insert(format!("field:{i}").as_bytes(), &[b'v'; 40]);
        }
        h.big = true;
        h.enable_ttl();
        for i in 0..500 {
            h.set_expiry(format!("field:{i}").as_bytes(), Some(1_000 + i));
        }
        h.plan_layout(8192);
        assert!(h.grouping().is_grouped());
        let c = h.take_changes();
        let mut root = Vec::new();
        h.encode(&mut root);
        let groups: Vec<(u64, Vec<u8>)> = c
            .groups
            .iter()
            .map(|&g| {
                let mut b = Vec::new();
                h.encode_group(g, &mut b);
                (g, b)
            })
            .collect();
        let refs: Vec<(u64, &[u8])> = groups.iter().map(|(g, b)| (*g, &b[..])).collect();
        let mut back = Hash::decode_grouped(&root, &refs).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.min_expiry(), Some(1_000));
        assert_eq!(back.volatile_fields(), 500);
        // A change through the shadows still writes the expiries.
        back.set_expiry(b"field:1999", Some(7));
        back.insert_keep_ttl(b"field:1", b"new");
        let c = back.take_changes();
        let mut root = Vec::new();
        back.encode(&mut root);
        let mut all: std::collections::BTreeMap<u64, Vec<u8>> = groups.into_iter().collect();
        for &g in &c.groups {
            let mut b = Vec::new();
            back.encode_group(g, &mut b);
            all.insert(g, b);
        }
        let refs: Vec<(u64, &[u8])> = all.iter().map(|(g, b)| (*g, &b[..])).collect();
        let again = Hash::decode_grouped(&root, &refs).unwrap();
        assert_eq!(again, back);
        assert_eq!(again.expiry(b"field:1999"), Some(7));
        assert_eq!(again.expiry(b"field:1"), Some(1_001), "HINCRBY-like: kept");
    }

    #[test]
    fn damaged_records_are_errors() {
        let mut h = Hash::default();
        h.insert(b"field", b"value");
        h.insert(b"other", b"");
        let mut out = Vec::new();
        h.encode(&mut out);
        for cut in 0..out.len() {
            assert!(Hash::decode(&out[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad_flags = out.clone();
        bad_flags[0] = 0x80;
        assert!(Hash::decode(&bad_flags).is_err());
        // The same field twice.
        let mut dup = vec![0u8];
        put_varint(&mut dup, 2);
        for _ in 0..2 {
            put_bytes(&mut dup, b"f");
            put_bytes(&mut dup, b"v");
        }
        assert!(Hash::decode(&dup).is_err());
        // A count larger than the bytes can hold.
        let mut huge = vec![0u8];
        put_varint(&mut huge, u64::MAX);
        assert!(Hash::decode(&huge).is_err());
    }
}
