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

use super::codec::{put_bytes, put_varint, Reader};
use super::{DecodeError, Thresholds, FLAG_BIG};
use indexmap::IndexMap;

/// A hash: field → value.
#[derive(Clone, Debug, Default)]
pub struct Hash {
    /// Fields and values, in insertion order (while not big).
    pub map: IndexMap<Vec<u8>, Vec<u8>, foldhash::fast::RandomState>,
    /// Outgrown the listpack encoding once (see [`FLAG_BIG`]).
    pub big: bool,
    /// The longest field or value written by [`Hash::insert`] since the last
    /// [`Hash::note_encoding`] (None: nothing written). Redis checks its listpack limits
    /// only against what a command writes, so a lowered threshold converts a hash at its
    /// next write of a field, never at a removal. Not part of the record.
    written: Option<usize>,
}

impl PartialEq for Hash {
    fn eq(&self, other: &Hash) -> bool {
        // Insertion order is part of a small hash's state (the replies follow it).
        self.big == other.big
            && self.map.len() == other.map.len()
            && self.map.iter().eq(other.map.iter())
    }
}

impl Hash {
    /// Number of fields.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when there are no fields.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.map.get(field).map(|v| &v[..])
    }

    /// True when `field` is there.
    pub fn contains(&self, field: &[u8]) -> bool {
        self.map.contains_key(field)
    }

    /// Sets `field`; true when the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        let longest = field.len().max(value.len());
        self.written = Some(self.written.map_or(longest, |w| w.max(longest)));
        match self.map.get_mut(field) {
            Some(v) => {
                v.clear();
                v.extend_from_slice(value);
                false
            }
            None => {
                self.map.insert(field.to_vec(), value.to_vec());
                true
            }
        }
    }

    /// Removes `field`; true when it was there. A small hash keeps the order of the
    /// others (as a listpack does); a big one may move the last field into the gap.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        if self.big {
            self.map.swap_remove(field).is_some()
        } else {
            self.map.shift_remove(field).is_some()
        }
    }

    /// The field and value at position `i` (0..len), for random picks.
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.map.get_index(i).map(|(f, v)| (&f[..], &v[..]))
    }

    /// Fields and values in reply order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.map.iter().map(|(f, v)| (&f[..], &v[..]))
    }

    /// Approximate RAM bytes.
    pub fn ram_bytes(&self) -> usize {
        64 + self
            .map
            .iter()
            .map(|(f, v)| f.capacity() + v.capacity() + 56)
            .sum::<usize>()
    }

    /// Appends the record value.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(if self.big { FLAG_BIG } else { 0 });
        put_varint(out, self.map.len() as u64);
        for (f, v) in &self.map {
            put_bytes(out, f);
            put_bytes(out, v);
        }
    }

    /// Decodes a record value.
    pub fn decode(bytes: &[u8]) -> Result<Hash, DecodeError> {
        let mut r = Reader::new(bytes);
        let flags = r.byte()?;
        if flags & !FLAG_BIG != 0 {
            return Err(DecodeError(format!("unknown hash flags {flags:#x}")));
        }
        let big = flags & FLAG_BIG != 0;
        let n = r.count(2)?;
        let mut map = IndexMap::with_capacity_and_hasher(n, Default::default());
        for _ in 0..n {
            let f = r.bytes()?.to_vec();
            let v = r.bytes()?.to_vec();
            if map.insert(f, v).is_some() {
                return Err(DecodeError("duplicate hash field".into()));
            }
        }
        r.finish()?;
        Ok(Hash {
            map,
            big,
            written: None,
        })
    }

    /// Sets the sticky big flag when a write since the last call took the hash past Redis's
    /// listpack limits: more than `hash-max-listpack-entries` fields, or a field or value
    /// written longer than `hash-max-listpack-value` bytes (Redis's `hashTypeSet` /
    /// `hashTypeTryConversion`). A removal alone never converts.
    pub fn note_encoding(&mut self, t: &Thresholds) {
        if let Some(longest) = self.written.take() {
            if !self.big
                && (self.map.len() > t.hash_max_listpack_entries
                    || longest > t.hash_max_listpack_value)
            {
                self.big = true;
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
