//! The hash type: fields and values in insertion order (as Redis's listpack keeps them).
//!
//! Record value (see `docs/storage-format.md`, "Collection values"):
//!
//! ```text
//! flags: u8            bit 0 = FLAG_BIG (OBJECT ENCODING says "hashtable")
//! count: varint        number of fields
//! count × { field: bytes, value: bytes }   (bytes = varint length + the bytes)
//! ```
//!
//! Fields are distinct; a record with a repeated field does not decode. While the hash is
//! small (not big), the record keeps Redis's listpack order (insertion order; a removed
//! field closes its gap), which HGETALL, HKEYS, HVALS and HSCAN reply in. Once big, the
//! order is arbitrary, as in Redis's hashtable.

use super::codec::{find_entry, put_bytes, put_varint, Reader};
use super::groups::{part_of_bits, Changes, Grouping, Shadows};
use super::{DecodeError, Thresholds, FLAG_BIG};
use indexmap::IndexMap;

type Map = IndexMap<Vec<u8>, Vec<u8>, foldhash::fast::RandomState>;

/// Encoded bytes of one field and its value (an estimate: one-byte length prefixes).
#[inline]
fn entry_bytes(f: &[u8], v: &[u8]) -> isize {
    (f.len() + v.len() + 2) as isize
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
}

impl PartialEq for Hash {
    fn eq(&self, other: &Hash) -> bool {
        if self.big != other.big || self.len != other.len {
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

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no fields.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.part(field)?.get(field).map(|v| &v[..])
    }

    /// True when `field` is there.
    pub fn contains(&self, field: &[u8]) -> bool {
        self.part(field).is_some_and(|m| m.contains_key(field))
    }

    /// Sets `field`; true when the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        let longest = field.len().max(value.len());
        self.written = Some(self.written.map_or(longest, |w| w.max(longest)));
        if self.parts.is_empty() {
            self.parts.push(Map::default());
        }
        let p = self.grouping.part_of(field);
        match self.parts[p].get_mut(field) {
            Some(v) => {
                let delta = value.len() as isize - v.len() as isize;
                v.clear();
                v.extend_from_slice(value);
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
                self.grouping.changed(p, entry_bytes(field, value));
                self.len += 1;
                self.shadow.edit(p, |b| {
                    put_bytes(b, field);
                    put_bytes(b, value);
                    true
                });
                true
            }
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
                self.grouping.changed(p, -entry_bytes(&f, &v));
                self.len -= 1;
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

    /// Fields and values in reply order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.parts
            .iter()
            .flat_map(|m| m.iter().map(|(f, v)| (&f[..], &v[..])))
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
        64 + self.parts.len() * 64 + self.grouping.total_bytes() + shadow + self.len * 72
    }

    fn encode_part<'a>(
        out: &mut Vec<u8>,
        flags: u8,
        n: usize,
        items: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    ) {
        out.push(flags);
        put_varint(out, n as u64);
        for (f, v) in items {
            put_bytes(out, f);
            put_bytes(out, v);
        }
    }

    /// Appends the record value: the whole hash while compact, the root once grouped.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let big = if self.big { FLAG_BIG } else { 0 };
        if self.grouping.is_grouped() {
            out.push(big | super::FLAG_GROUPED);
            out.push(self.grouping.bits());
        } else {
            Self::encode_part(out, big, self.len, self.iter());
        }
    }

    /// Appends the record value of group `g` (grouped only).
    pub fn encode_group(&self, g: u64, out: &mut Vec<u8>) {
        let m = &self.parts[g as usize];
        if self.shadow.write_group(g as usize, m.len(), out) {
            #[cfg(debug_assertions)]
            self.check_shadow(g as usize);
        } else {
            Self::encode_part(out, 0, m.len(), m.iter().map(|(f, v)| (&f[..], &v[..])));
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
        into: &mut [Map],
    ) -> Result<(usize, usize), DecodeError> {
        let n = r.count(2)?;
        let mut bytes = 0usize;
        for _ in 0..n {
            let f = r.bytes()?;
            let v = r.bytes()?;
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

    /// Decodes a compact record value.
    pub fn decode(bytes: &[u8]) -> Result<Hash, DecodeError> {
        let mut r = Reader::new(bytes);
        let flags = r.byte()?;
        if flags & !FLAG_BIG != 0 {
            return Err(DecodeError(format!("unknown hash flags {flags:#x}")));
        }
        let mut parts = vec![Map::default()];
        let (len, b) = Self::decode_part(&mut r, 0, None, &mut parts)?;
        Ok(Hash {
            parts,
            big: flags & FLAG_BIG != 0,
            grouping: Grouping::stored(false, 0, vec![b]),
            written: None,
            len,
            shadow: Shadows::default(),
        })
    }

    /// Decodes a grouped hash: its root record value and its groups (id, value) in id
    /// order.
    pub fn decode_grouped(root: &[u8], groups: &[(u64, &[u8])]) -> Result<Hash, DecodeError> {
        let mut r = Reader::new(root);
        let flags = r.byte()?;
        if flags != FLAG_BIG | super::FLAG_GROUPED {
            return Err(DecodeError(format!(
                "unknown grouped hash flags {flags:#x}"
            )));
        }
        let bits = r.byte()?;
        r.finish()?;
        let ids: Vec<u64> = groups.iter().map(|(g, _)| *g).collect();
        super::groups::check_hashed_groups(bits, &ids)?;
        let mut parts = vec![Map::default(); 1 << bits];
        let mut sizes = Vec::with_capacity(parts.len());
        let mut len = 0;
        let mut shadow = Shadows::with_capacity(parts.len());
        for (g, v) in groups {
            let mut r = Reader::new(v);
            if r.byte()? != 0 {
                return Err(DecodeError("unknown hash group flags".into()));
            }
            shadow.push_stored(v)?;
            let (n, b) = Self::decode_part(&mut r, bits, Some(*g as usize), &mut parts)?;
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
        })
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
        let (grouping, parts) = (&self.grouping, &self.parts);
        self.shadow.fill(
            &c.groups,
            |g| grouping.part_bytes(g),
            |g, b| {
                for (f, v) in &parts[g] {
                    put_bytes(b, f);
                    put_bytes(b, v);
                }
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
        } else {
            "listpack"
        }
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
