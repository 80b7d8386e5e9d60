//! The set type: distinct members, with O(1) random access (SRANDMEMBER, SPOP).
//!
//! Record value of a set (value type `VALUE_TYPE_SET`, the compact single-record form):
//!
//! ```text
//! flags:u8          bit 0 = FLAG_BIG (the set has outgrown the intset encoding once)
//! count:varint      number of members
//! count × (len:varint, bytes)   the members, each once, in the set's iteration order
//! ```
//!
//! A record with a repeated member, a short or a long value does not decode.
//!
//! OBJECT ENCODING answers as Redis 7.0 would: `intset` while every member is a canonical
//! 64-bit integer and there are at most `set-max-intset-entries` of them, `hashtable` once
//! the set outgrew that (sticky: Redis never converts back). An intset-encoded set iterates
//! in increasing numeric order, as Redis's intset does ([`Set::ordered`]).

use super::codec::{put_bytes, put_varint, Reader};
use super::{DecodeError, Thresholds, FLAG_BIG};
use indexmap::IndexSet;
use rand::Rng;

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

/// True when a new set holding exactly `members` (`len` of them) would be intset-encoded in
/// Redis 7.0 (all canonical integers, at most `set-max-intset-entries`).
pub fn fits_intset<'a>(
    len: usize,
    mut members: impl Iterator<Item = &'a [u8]>,
    t: &Thresholds,
) -> bool {
    len <= t.set_max_intset_entries && members.all(is_intset_member)
}

/// Sorts members that are all canonical integers into increasing numeric order (the order
/// an intset iterates in).
pub fn sort_numeric(members: &mut [&[u8]]) {
    members.sort_unstable_by_key(|m| crate::commands::parse_i64(m).unwrap_or(i64::MAX));
}

impl Set {
    /// An empty set with room for `n` members.
    pub fn with_capacity(n: usize) -> Set {
        Set {
            members: IndexSet::with_capacity_and_hasher(n, Default::default()),
            big: false,
        }
    }

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

    /// Adds the owned `m`; true when it is new.
    pub fn insert_owned(&mut self, m: Vec<u8>) -> bool {
        self.members.insert(m)
    }

    /// Removes `m`; true when it was a member.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        self.members.swap_remove(m)
    }

    /// The member at position `i` (0 ≤ i < len) of the iteration order.
    pub fn get_index(&self, i: usize) -> &[u8] {
        &self.members[i]
    }

    /// A uniformly random member (None when empty).
    pub fn random(&self, rng: &mut impl Rng) -> Option<&[u8]> {
        if self.members.is_empty() {
            return None;
        }
        Some(self.get_index(rng.random_range(0..self.members.len())))
    }

    /// Removes and returns a uniformly random member (None when empty).
    pub fn pop_random(&mut self, rng: &mut impl Rng) -> Option<Vec<u8>> {
        if self.members.is_empty() {
            return None;
        }
        let i = rng.random_range(0..self.members.len());
        self.members.swap_remove_index(i)
    }

    /// The members in the order Redis would iterate them: increasing numeric order while
    /// the set is intset-encoded, the set's own order otherwise.
    pub fn ordered(&self) -> Vec<&[u8]> {
        let mut out: Vec<&[u8]> = self.members.iter().map(|m| &m[..]).collect();
        if !self.big {
            sort_numeric(&mut out);
        }
        out
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

#[cfg(test)]
mod tests {
    use super::*;

    fn set_of(members: &[&str]) -> Set {
        let mut s = Set::default();
        for m in members {
            s.insert(m.as_bytes());
        }
        s
    }

    fn round_trip(s: &Set) -> Set {
        let mut out = Vec::new();
        s.encode(&mut out);
        Set::decode(&out).unwrap()
    }

    #[test]
    fn codec_round_trips_members_order_and_flag() {
        let mut s = set_of(&["b", "", "a", "12", "\u{0}bin"]);
        let back = round_trip(&s);
        assert_eq!(back, s);
        let order: Vec<&[u8]> = back.members.iter().map(|m| &m[..]).collect();
        assert_eq!(order, vec![&b"b"[..], b"", b"a", b"12", b"\0bin"]);
        s.big = true;
        assert!(round_trip(&s).big);
        assert_eq!(round_trip(&Set::default()), Set::default());
        // A large set.
        let mut big = Set::default();
        for i in 0..5000 {
            big.insert(format!("member:{i}").as_bytes());
        }
        assert_eq!(round_trip(&big), big);
    }

    #[test]
    fn damaged_records_do_not_decode() {
        let s = set_of(&["x", "yy", "zzz"]);
        let mut out = Vec::new();
        s.encode(&mut out);
        for cut in 0..out.len() {
            assert!(Set::decode(&out[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = out.clone();
        longer.push(7);
        assert!(Set::decode(&longer).is_err());
        // The same member twice.
        let mut dup = vec![0u8];
        put_varint(&mut dup, 2);
        put_bytes(&mut dup, b"m");
        put_bytes(&mut dup, b"m");
        assert!(Set::decode(&dup).is_err());
        // A count larger than the bytes can hold.
        let mut huge = vec![0u8];
        put_varint(&mut huge, u64::MAX);
        assert!(Set::decode(&huge).is_err());
    }

    #[test]
    fn encoding_follows_redis_intset_rules_and_sticks() {
        let t = Thresholds::default();
        let mut s = set_of(&["1", "-5", "9223372036854775807"]);
        s.note_encoding(&t);
        assert_eq!(s.encoding_name(), "intset");
        for not_int in [
            "a",
            "01",
            "+1",
            "-0",
            " 1",
            "9223372036854775808",
            "1.0",
            "",
        ] {
            let mut s = set_of(&["1", not_int]);
            s.note_encoding(&t);
            assert_eq!(s.encoding_name(), "hashtable", "{not_int:?}");
        }
        let mut s = Set::default();
        for i in 0..t.set_max_intset_entries {
            s.insert(i.to_string().as_bytes());
        }
        s.note_encoding(&t);
        assert_eq!(s.encoding_name(), "intset");
        s.insert(b"100000");
        s.note_encoding(&t);
        assert_eq!(s.encoding_name(), "hashtable");
        // Removing members does not convert back.
        s.members.clear();
        s.insert(b"1");
        s.note_encoding(&t);
        assert_eq!(s.encoding_name(), "hashtable");
    }

    #[test]
    fn intset_order_is_numeric() {
        let mut s = set_of(&["10", "-3", "2", "100", "-20"]);
        s.note_encoding(&Thresholds::default());
        let got: Vec<&[u8]> = s.ordered();
        assert_eq!(got, vec![&b"-20"[..], b"-3", b"2", b"10", b"100"]);
        s.insert(b"x");
        s.note_encoding(&Thresholds::default());
        // A hashtable set keeps its own order.
        let got: Vec<&[u8]> = s.ordered();
        assert_eq!(got, vec![&b"10"[..], b"-3", b"2", b"100", b"-20", b"x"]);
        let t = Thresholds::default();
        assert!(fits_intset(2, [&b"1"[..], b"2"].into_iter(), &t));
        assert!(!fits_intset(2, [&b"1"[..], b"b"].into_iter(), &t));
        assert!(!fits_intset(513, std::iter::empty(), &t));
    }

    #[test]
    fn random_access_and_pop() {
        let mut rng = rand::rng();
        let mut s = set_of(&["a", "b", "c"]);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            seen.insert(s.random(&mut rng).unwrap().to_vec());
        }
        assert_eq!(seen.len(), 3);
        let mut popped = Vec::new();
        while let Some(m) = s.pop_random(&mut rng) {
            assert!(!s.contains(&m));
            popped.push(m);
        }
        popped.sort();
        assert_eq!(popped, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        assert!(s.random(&mut rng).is_none());
    }
}
