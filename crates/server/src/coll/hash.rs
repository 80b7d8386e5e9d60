//! The hash type: fields and values in insertion order (as Redis's listpack keeps them).

use super::codec::{put_bytes, put_varint, Reader};
use super::{DecodeError, Thresholds, FLAG_BIG};
use indexmap::IndexMap;

/// A hash: field → value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hash {
    /// Fields and values, in insertion order.
    pub map: IndexMap<Vec<u8>, Vec<u8>, foldhash::fast::RandomState>,
    /// Outgrown the listpack encoding once (see [`FLAG_BIG`]).
    pub big: bool,
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

    /// Sets `field`; true when the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
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

    /// Removes `field` (keeping the order of the others); true when it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        self.map.shift_remove(field).is_some()
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
        let big = r.byte()? & FLAG_BIG != 0;
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
        Ok(Hash { map, big })
    }

    /// Sets the sticky big flag when the hash no longer fits Redis's listpack limits.
    pub fn note_encoding(&mut self, t: &Thresholds) {
        if !self.big
            && (self.map.len() > t.hash_max_listpack_entries
                || self.map.iter().any(|(f, v)| {
                    f.len() > t.hash_max_listpack_value || v.len() > t.hash_max_listpack_value
                }))
        {
            self.big = true;
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
