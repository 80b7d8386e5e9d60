//! The set type: distinct members, with O(1) random access (SRANDMEMBER, SPOP).

use super::codec::{put_bytes, put_varint, Reader};
use super::{DecodeError, Thresholds, FLAG_BIG};
use indexmap::IndexSet;

/// A set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Set {
    /// The members (insertion order until removals swap members around).
    pub members: IndexSet<Vec<u8>, foldhash::fast::RandomState>,
    /// Outgrown the intset encoding once (see [`FLAG_BIG`]).
    pub big: bool,
}

/// True when Redis would keep `m` in an intset (a canonical 64-bit integer).
pub fn is_intset_member(m: &[u8]) -> bool {
    crate::commands::parse_i64(m).is_some()
}

impl Set {
    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// True when there are no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// True when `m` is a member.
    pub fn contains(&self, m: &[u8]) -> bool {
        self.members.contains(m)
    }

    /// Adds `m`; true when it is new.
    pub fn insert(&mut self, m: &[u8]) -> bool {
        if self.members.contains(m) {
            return false;
        }
        self.members.insert(m.to_vec())
    }

    /// Removes `m`; true when it was a member.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        self.members.swap_remove(m)
    }

    /// Approximate RAM bytes.
    pub fn ram_bytes(&self) -> usize {
        64 + self
            .members
            .iter()
            .map(|m| m.capacity() + 40)
            .sum::<usize>()
    }

    /// Appends the record value.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(if self.big { FLAG_BIG } else { 0 });
        put_varint(out, self.members.len() as u64);
        for m in &self.members {
            put_bytes(out, m);
        }
    }

    /// Decodes a record value.
    pub fn decode(bytes: &[u8]) -> Result<Set, DecodeError> {
        let mut r = Reader::new(bytes);
        let big = r.byte()? & FLAG_BIG != 0;
        let n = r.count(1)?;
        let mut members = IndexSet::with_capacity_and_hasher(n, Default::default());
        for _ in 0..n {
            if !members.insert(r.bytes()?.to_vec()) {
                return Err(DecodeError("duplicate set member".into()));
            }
        }
        r.finish()?;
        Ok(Set { members, big })
    }

    /// Sets the sticky big flag when the set no longer fits Redis's intset limits.
    pub fn note_encoding(&mut self, t: &Thresholds) {
        if !self.big
            && (self.members.len() > t.set_max_intset_entries
                || self.members.iter().any(|m| !is_intset_member(m)))
        {
            self.big = true;
        }
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding_name(&self) -> &'static str {
        if self.big {
            "hashtable"
        } else {
            "intset"
        }
    }
}
