//! The set type: distinct members, with O(1) random access (SRANDMEMBER, SPOP).
//!
//! Record value of a set (value type `VALUE_TYPE_SET`, the compact single-record form):
//!
//! ```text
//! flags:u8          bit 0 = FLAG_BIG (the set has outgrown the small encodings once),
//!                   bit 2 = FLAG_LISTPACK (Redis 7.2+: it left the intset encoding for a
//!                   listpack; without bit 0)
//! count:varint      number of members
//! count × (len:varint, bytes)   the members, each once, in the set's iteration order
//! ```
//!
//! A record with a repeated member, a short or a long value does not decode.
//!
//! OBJECT ENCODING answers as Redis 7.2+ would: `intset` while every member is a canonical
//! 64-bit integer and there are at most `set-max-intset-entries` of them; a member that is
//! not an integer moves it to `listpack` while it holds at most `set-max-listpack-entries`
//! members of at most `set-max-listpack-value` bytes, to `hashtable` otherwise (and a
//! listpack to `hashtable` once it outgrows those; too many integers move an intset straight
//! to `hashtable`). Sticky: Redis never converts back. An intset-encoded set iterates
//! in increasing numeric order, as Redis's intset does ([`Set::ordered`]).

use super::codec::{find_entry, put_bytes, put_varint, Reader};
use super::groups::{part_of_bits, Changes, Grouping, Shadows};
use super::{DecodeError, Thresholds, FLAG_BIG};
use indexmap::IndexSet;
use rand::Rng;

/// Set flag bit 2: the set left the intset encoding for a listpack (Redis 7.2+).
pub const FLAG_LISTPACK: u8 = 4;

type Members = IndexSet<Vec<u8>, foldhash::fast::RandomState>;

/// Encoded bytes of one member (an estimate: a one-byte length prefix).
#[inline]
fn member_bytes(m: &[u8]) -> isize {
    (m.len() + 1) as isize
}

/// A set: one part while compact, 2^bits parts by member hash once grouped (see
/// [`super::groups`]).
#[derive(Clone, Debug, Default)]
pub struct Set {
    /// The members by part (insertion order until removals swap members around).
    parts: Vec<Members>,
    /// Outgrown the small encodings once (see [`FLAG_BIG`]).
    pub big: bool,
    /// Left the intset encoding for a listpack (see [`FLAG_LISTPACK`]; meaningless once
    /// `big`).
    pub listpack: bool,
    grouping: Grouping,
    len: usize,
    /// While grouped: each part's members as its group record holds them.
    shadow: Shadows,
}

impl PartialEq for Set {
    fn eq(&self, o: &Set) -> bool {
        // Order matters only within one part (the compact form's iteration order).
        self.big == o.big
            && (self.big || self.listpack == o.listpack)
            && self.len == o.len
            && if self.parts.len() <= 1 && o.parts.len() <= 1 {
                self.iter().eq(o.iter())
            } else {
                self.iter().all(|m| o.contains(m))
            }
    }
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
            parts: vec![IndexSet::with_capacity_and_hasher(n, Default::default())],
            ..Default::default()
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no members.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when `m` is a member.
    pub fn contains(&self, m: &[u8]) -> bool {
        self.parts
            .get(self.grouping.part_of(m))
            .is_some_and(|p| p.contains(m))
    }

    /// Adds `m`; true when it is new.
    pub fn insert(&mut self, m: &[u8]) -> bool {
        if self.contains(m) {
            return false;
        }
        self.insert_owned(m.to_vec())
    }

    /// Adds the owned `m`; true when it is new.
    pub fn insert_owned(&mut self, m: Vec<u8>) -> bool {
        if self.parts.is_empty() {
            self.parts.push(Members::default());
        }
        let p = self.grouping.part_of(&m);
        let b = member_bytes(&m);
        if self.parts[p].contains(&m) {
            return false;
        }
        self.shadow.edit(p, |sh| {
            put_bytes(sh, &m);
            true
        });
        self.parts[p].insert(m);
        self.grouping.changed(p, b);
        self.len += 1;
        true
    }

    /// Removes `m`; true when it was a member.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        let p = self.grouping.part_of(m);
        if !self.parts.get_mut(p).is_some_and(|s| s.swap_remove(m)) {
            return false;
        }
        self.grouping.changed(p, -member_bytes(m));
        self.len -= 1;
        self.shadow_remove(p, m);
        true
    }

    fn shadow_remove(&mut self, p: usize, m: &[u8]) {
        self.shadow.edit(p, |sh| {
            find_entry(sh, 1, m).map(|(e, _)| sh.drain(e)).is_some()
        });
    }

    /// Keeps only the members for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8]) -> bool) {
        for (p, s) in self.parts.iter_mut().enumerate() {
            let before = s.len();
            let mut freed = 0isize;
            s.retain(|m| {
                let k = keep(m);
                if !k {
                    freed += member_bytes(m);
                }
                k
            });
            if s.len() != before {
                self.len -= before - s.len();
                self.grouping.changed(p, -freed);
                self.shadow.forget(p);
            }
        }
    }

    /// The members in iteration order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.parts.iter().flat_map(|p| p.iter().map(|m| &m[..]))
    }

    /// The part and position within it of position `i` of the iteration order.
    fn locate(&self, mut i: usize) -> (usize, usize) {
        for (p, s) in self.parts.iter().enumerate() {
            if i < s.len() {
                return (p, i);
            }
            i -= s.len();
        }
        panic!("set position out of range");
    }

    /// The member at position `i` (0 ≤ i < len) of the iteration order (O(parts)).
    pub fn get_index(&self, i: usize) -> &[u8] {
        let (p, j) = self.locate(i);
        &self.parts[p][j]
    }

    /// A uniformly random member (None when empty).
    pub fn random(&self, rng: &mut impl Rng) -> Option<&[u8]> {
        if self.len == 0 {
            return None;
        }
        Some(self.get_index(rng.random_range(0..self.len)))
    }

    /// Removes and returns a uniformly random member (None when empty).
    pub fn pop_random(&mut self, rng: &mut impl Rng) -> Option<Vec<u8>> {
        if self.len == 0 {
            return None;
        }
        let (p, j) = self.locate(rng.random_range(0..self.len));
        let m = self.parts[p].swap_remove_index(j)?;
        self.grouping.changed(p, -member_bytes(&m));
        self.len -= 1;
        self.shadow_remove(p, &m);
        Some(m)
    }

    /// The members in the order Redis would iterate them: increasing numeric order while
    /// the set is intset-encoded, the set's own order otherwise.
    pub fn ordered(&self) -> Vec<&[u8]> {
        let mut out: Vec<&[u8]> = self.iter().collect();
        if !self.big && !self.listpack {
            sort_numeric(&mut out);
        }
        out
    }

    /// Approximate RAM bytes.
    pub fn ram_bytes(&self) -> usize {
        // O(1): from the encoded-size estimate (the cache asks at every write).
        let shadow = if self.grouping.is_grouped() {
            self.grouping.total_bytes()
        } else {
            0
        };
        64 + self.parts.len() * 64 + self.grouping.total_bytes() + shadow + self.len * 48
    }

    fn encode_part<'a>(
        out: &mut Vec<u8>,
        flags: u8,
        n: usize,
        items: impl Iterator<Item = &'a [u8]>,
    ) {
        out.push(flags);
        put_varint(out, n as u64);
        for m in items {
            put_bytes(out, m);
        }
    }

    /// Appends the record value: the whole set while compact, the root once grouped.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let big = if self.big {
            FLAG_BIG
        } else if self.listpack {
            FLAG_LISTPACK
        } else {
            0
        };
        if self.grouping.is_grouped() {
            out.push(big | super::FLAG_GROUPED);
            out.push(self.grouping.bits());
        } else {
            Self::encode_part(out, big, self.len, self.iter());
        }
    }

    /// Appends the record value of group `g` (grouped only).
    pub fn encode_group(&self, g: u64, out: &mut Vec<u8>) {
        let s = &self.parts[g as usize];
        match self.shadow.get(g as usize) {
            Some(_sh) => {
                self.shadow.write_group(g as usize, s.len(), out);
                #[cfg(debug_assertions)]
                {
                    let mut r = Reader::new(_sh);
                    let mut n = 0;
                    while r.pos() < _sh.len() {
                        assert!(
                            s.contains(r.bytes().expect("shadow member")),
                            "shadow of {g}"
                        );
                        n += 1;
                    }
                    assert_eq!(n, s.len(), "shadow of part {g}");
                }
            }
            _ => Self::encode_part(out, 0, s.len(), s.iter().map(|m| &m[..])),
        }
    }

    fn decode_part(
        r: &mut Reader<'_>,
        bits: u8,
        part: Option<usize>,
        into: &mut [Members],
    ) -> Result<(usize, usize), DecodeError> {
        let n = r.count(1)?;
        let mut bytes = 0;
        for _ in 0..n {
            let m = r.bytes()?;
            let p = part_of_bits(bits, m);
            if part.is_some_and(|want| want != p) {
                return Err(DecodeError("set member in the wrong group".into()));
            }
            bytes += member_bytes(m) as usize;
            if !into[p].insert(m.to_vec()) {
                return Err(DecodeError("duplicate set member".into()));
            }
        }
        r.finish()?;
        Ok((n, bytes))
    }

    /// Decodes a compact record value.
    pub fn decode(bytes: &[u8]) -> Result<Set, DecodeError> {
        let mut r = Reader::new(bytes);
        let flags = r.byte()?;
        let big = flags & FLAG_BIG != 0;
        let mut parts = vec![Members::default()];
        let (len, b) = Self::decode_part(&mut r, 0, None, &mut parts)?;
        Ok(Set {
            parts,
            big,
            listpack: !big && flags & FLAG_LISTPACK != 0,
            grouping: Grouping::stored(false, 0, vec![b]),
            len,
            shadow: Shadows::default(),
        })
    }

    /// Decodes a grouped set: its root record value and its groups (id, value) in id order.
    pub fn decode_grouped(root: &[u8], groups: &[(u64, &[u8])]) -> Result<Set, DecodeError> {
        let mut r = Reader::new(root);
        let flags = r.byte()?;
        if flags != FLAG_BIG | super::FLAG_GROUPED {
            return Err(DecodeError(format!("unknown grouped set flags {flags:#x}")));
        }
        let bits = r.byte()?;
        r.finish()?;
        let ids: Vec<u64> = groups.iter().map(|(g, _)| *g).collect();
        super::groups::check_hashed_groups(bits, &ids)?;
        let mut parts = vec![Members::default(); 1 << bits];
        let (mut len, mut sizes) = (0, Vec::with_capacity(parts.len()));
        let mut shadow = Shadows::with_capacity(parts.len());
        for (g, v) in groups {
            let mut r = Reader::new(v);
            if r.byte()? != 0 {
                return Err(DecodeError("unknown set group flags".into()));
            }
            shadow.push_stored(v)?;
            let (n, b) = Self::decode_part(&mut r, bits, Some(*g as usize), &mut parts)?;
            len += n;
            sizes.push(b);
        }
        Ok(Set {
            parts,
            big: true,
            listpack: false,
            grouping: Grouping::stored(true, bits, sizes),
            len,
            shadow,
        })
    }

    /// Re-plans the layout for groups of about `group_bytes`.
    pub fn plan_layout(&mut self, group_bytes: usize) {
        let (grouped, bits) = match self.grouping.plan(group_bytes, self.big) {
            None => (false, 0),
            Some(b) => (true, b),
        };
        if grouped == self.grouping.is_grouped() && bits == self.grouping.bits() {
            return;
        }
        let mut parts = vec![Members::default(); 1 << bits];
        let mut sizes = vec![0usize; parts.len()];
        for s in std::mem::take(&mut self.parts) {
            for m in s {
                let p = part_of_bits(bits, &m);
                sizes[p] += member_bytes(&m) as usize;
                parts[p].insert(m);
            }
        }
        self.shadow = Shadows::for_layout(grouped, parts.len());
        self.parts = parts;
        self.grouping.relayout(grouped, bits, sizes);
    }

    /// The layout's state.
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
                for m in &parts[g] {
                    put_bytes(b, m);
                }
            },
        );
        c
    }

    /// Moves the encoding on (never back) when the set no longer fits its current one, as
    /// Redis 7.2+ converts: intset → listpack (a member that is not an integer, within the
    /// listpack limits) or hashtable; listpack → hashtable.
    pub fn note_encoding(&mut self, t: &Thresholds) {
        if self.big {
            return;
        }
        let fits_listpack = |s: &Self| {
            s.len <= t.set_max_listpack_entries
                && s.iter().all(|m| m.len() <= t.set_max_listpack_value)
        };
        if !self.listpack {
            if self.iter().all(is_intset_member) {
                if self.len > t.set_max_intset_entries {
                    self.big = true;
                }
            } else if fits_listpack(self) {
                self.listpack = true;
                self.sort_int_prefix();
            } else {
                self.big = true;
            }
        } else if !fits_listpack(self) {
            self.big = true;
        }
    }

    /// On leaving the intset encoding for a listpack: the members the intset held (the
    /// integers before the first other member) take the intset's numeric order, which
    /// Redis's conversion keeps; the members added since follow in their order.
    fn sort_int_prefix(&mut self) {
        let [p] = &mut self.parts[..] else {
            return;
        };
        let n = p.iter().take_while(|m| is_intset_member(m)).count();
        let mut all: Vec<Vec<u8>> = p.drain(..).collect();
        all[..n].sort_by_key(|m| {
            std::str::from_utf8(m)
                .ok()
                .and_then(|t| t.parse::<i64>().ok())
                .unwrap_or(0)
        });
        p.extend(all);
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding_name(&self) -> &'static str {
        if self.big {
            "hashtable"
        } else if self.listpack {
            "listpack"
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
        let order: Vec<&[u8]> = back.iter().collect();
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
            assert_eq!(s.encoding_name(), "listpack", "{not_int:?}");
        }
        // A listpack past its limits becomes a hashtable.
        let mut s = set_of(&["a", "b"]);
        s.note_encoding(&t);
        assert_eq!(s.encoding_name(), "listpack");
        s.insert("x".repeat(t.set_max_listpack_value + 1).as_bytes());
        s.note_encoding(&t);
        assert_eq!(s.encoding_name(), "hashtable");
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
        s.retain(|_| false);
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
        assert_eq!(s.encoding_name(), "listpack");
        // A listpack set keeps the intset's order, then the members added since.
        let got: Vec<&[u8]> = s.ordered();
        assert_eq!(got, vec![&b"-20"[..], b"-3", b"2", b"10", b"100", b"x"]);
        s.insert(b"-50");
        s.note_encoding(&Thresholds::default());
        let got: Vec<&[u8]> = s.ordered();
        assert_eq!(got.last(), Some(&&b"-50"[..]));
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
