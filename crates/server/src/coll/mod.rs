//! Collection values: hashes, lists, sets and sorted sets.
//!
//! A collection is stored as one compact record (see `docs/storage-format.md`, "Collection
//! values"): a flags byte, the member count, then the members. A command that works on a
//! collection finds it decoded ([`Coll`]) in the worker's decoded-collection cache, or
//! decodes it from the record the dispatcher made resident; a change encodes the new
//! version and appends it as a new record (the keyspace does both, see
//! [`crate::keyspace::Keyspace::take_coll`] and [`crate::keyspace::Keyspace::put_coll`]).
//!
//! One file per type holds its data structure and its codec; the commands are in
//! `commands/{hash,list,set,zset}.rs`.

pub mod codec;
pub mod groups;
pub mod hash;
pub mod list;
pub mod set;
pub mod stream;
pub mod zset;

#[cfg(test)]
mod groups_tests;
#[cfg(test)]
mod model_tests;

use std::sync::atomic::{AtomicI64, Ordering};

pub use codec::DecodeError;

/// Record value type of a hash (the string type is the store's `VALUE_TYPE_STRING`, 0).
pub const VALUE_TYPE_HASH: u8 = 1;
/// Record value type of a list.
pub const VALUE_TYPE_LIST: u8 = 2;
/// Record value type of a set.
pub const VALUE_TYPE_SET: u8 = 3;
/// Record value type of a sorted set.
pub const VALUE_TYPE_ZSET: u8 = 4;
/// Record value type of a stream (compact, or grouped when big; see [`stream`]).
pub const VALUE_TYPE_STREAM: u8 = 5;

/// Flag bit in a collection record's first byte: the collection has outgrown Redis's
/// compact encoding (listpack / intset) once, so OBJECT ENCODING keeps naming the big one
/// (hashtable / skiplist), as Redis never converts back.
pub const FLAG_BIG: u8 = 1;

/// Flag bit in a collection record's first byte: the record is the root of a grouped
/// collection (see [`groups`]); the members are in its group records.
pub const FLAG_GROUPED: u8 = 2;

/// True when a collection record value is the root of a grouped collection.
pub fn is_grouped_root(value: &[u8]) -> bool {
    value.first().is_some_and(|f| f & FLAG_GROUPED != 0)
}

/// A decoded collection.
#[derive(Clone, Debug, PartialEq)]
pub enum Coll {
    /// A hash.
    Hash(hash::Hash),
    /// A list.
    List(list::List),
    /// A set.
    Set(set::Set),
    /// A sorted set.
    Zset(zset::Zset),
    /// A stream.
    Stream(stream::Stream),
}

impl Coll {
    /// The record value type (`VALUE_TYPE_*`).
    pub fn value_type(&self) -> u8 {
        match self {
            Coll::Hash(_) => VALUE_TYPE_HASH,
            Coll::List(_) => VALUE_TYPE_LIST,
            Coll::Set(_) => VALUE_TYPE_SET,
            Coll::Zset(_) => VALUE_TYPE_ZSET,
            Coll::Stream(_) => VALUE_TYPE_STREAM,
        }
    }

    /// An empty collection of `value_type` (None for a type that is not a collection).
    pub fn empty(value_type: u8) -> Option<Coll> {
        Some(match value_type {
            VALUE_TYPE_HASH => Coll::Hash(Default::default()),
            VALUE_TYPE_LIST => Coll::List(Default::default()),
            VALUE_TYPE_SET => Coll::Set(Default::default()),
            VALUE_TYPE_ZSET => Coll::Zset(Default::default()),
            VALUE_TYPE_STREAM => Coll::Stream(Default::default()),
            _ => return None,
        })
    }

    /// Number of members (fields, elements).
    pub fn len(&self) -> usize {
        match self {
            Coll::Hash(h) => h.len(),
            Coll::List(l) => l.len(),
            Coll::Set(s) => s.len(),
            Coll::Zset(z) => z.len(),
            Coll::Stream(s) => s.len(),
        }
    }

    /// True when the collection has no members (such a key does not exist in Redis). A
    /// stream is never empty in this sense: a stream without entries still exists.
    pub fn is_empty(&self) -> bool {
        !matches!(self, Coll::Stream(_)) && self.len() == 0
    }

    /// Approximate bytes of RAM the decoded collection takes (for the cache's budget).
    pub fn ram_bytes(&self) -> usize {
        match self {
            Coll::Hash(h) => h.ram_bytes(),
            Coll::List(l) => l.ram_bytes(),
            Coll::Set(s) => s.ram_bytes(),
            Coll::Zset(z) => z.ram_bytes(),
            Coll::Stream(s) => s.ram_bytes(),
        }
    }

    /// Appends the record value of the collection to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Coll::Hash(h) => h.encode(out),
            Coll::List(l) => l.encode(out),
            Coll::Set(s) => s.encode(out),
            Coll::Zset(z) => z.encode(out),
            Coll::Stream(s) => s.encode(out),
        }
    }

    /// Decodes a record value of type `value_type`.
    pub fn decode(value_type: u8, bytes: &[u8]) -> Result<Coll, DecodeError> {
        Ok(match value_type {
            VALUE_TYPE_HASH => Coll::Hash(hash::Hash::decode(bytes)?),
            VALUE_TYPE_LIST => Coll::List(list::List::decode(bytes)?),
            VALUE_TYPE_SET => Coll::Set(set::Set::decode(bytes)?),
            VALUE_TYPE_ZSET => Coll::Zset(zset::Zset::decode(bytes)?),
            VALUE_TYPE_STREAM => Coll::Stream(stream::Stream::decode(bytes)?),
            t => return Err(DecodeError(format!("value type {t} is not a collection"))),
        })
    }

    /// Decodes a grouped collection of type `value_type` from its root record value and its
    /// group records (id, value), in id order.
    pub fn decode_grouped(
        value_type: u8,
        root: &[u8],
        groups: &[(u64, &[u8])],
    ) -> Result<Coll, DecodeError> {
        Ok(match value_type {
            VALUE_TYPE_HASH => Coll::Hash(hash::Hash::decode_grouped(root, groups)?),
            VALUE_TYPE_LIST => Coll::List(list::List::decode_grouped(root, groups)?),
            VALUE_TYPE_SET => Coll::Set(set::Set::decode_grouped(root, groups)?),
            VALUE_TYPE_ZSET => Coll::Zset(zset::Zset::decode_grouped(root, groups)?),
            VALUE_TYPE_STREAM => Coll::Stream(stream::Stream::decode_grouped(root, groups)?),
            t => return Err(DecodeError(format!("value type {t} is not a collection"))),
        })
    }

    /// Re-plans the stored layout (compact, or grouped and how) for groups of about
    /// `group_bytes`; called before every write of the collection.
    pub fn plan_layout(&mut self, group_bytes: usize) {
        match self {
            Coll::Hash(h) => h.plan_layout(group_bytes),
            Coll::List(l) => l.plan_layout(group_bytes),
            Coll::Set(s) => s.plan_layout(group_bytes),
            Coll::Zset(z) => z.plan_layout(group_bytes),
            Coll::Stream(s) => s.plan_layout(group_bytes),
        }
    }

    /// True when stored grouped (a root record plus group records).
    pub fn is_grouped(&self) -> bool {
        match self {
            Coll::Hash(h) => h.grouping().is_grouped(),
            Coll::List(l) => l.is_grouped(),
            Coll::Set(s) => s.grouping().is_grouped(),
            Coll::Zset(z) => z.grouping().is_grouped(),
            Coll::Stream(s) => s.is_grouped(),
        }
    }

    /// The ids of the groups the collection is stored in, ascending (empty when compact).
    pub fn group_ids(&self) -> Vec<u64> {
        match self {
            Coll::Hash(h) => h.grouping().group_ids(),
            Coll::List(l) => l.group_ids(),
            Coll::Set(s) => s.grouping().group_ids(),
            Coll::Zset(z) => z.grouping().group_ids(),
            Coll::Stream(s) => s.group_ids(),
        }
    }

    /// What changed since the last call (the root, and the groups to write again).
    pub fn take_changes(&mut self) -> groups::Changes {
        match self {
            Coll::Hash(h) => h.take_changes(),
            Coll::List(l) => l.take_changes(),
            Coll::Set(s) => s.take_changes(),
            Coll::Zset(z) => z.take_changes(),
            Coll::Stream(s) => s.take_changes(),
        }
    }

    /// Appends the record value of group `g` of a grouped collection.
    pub fn encode_group(&self, g: u64, out: &mut Vec<u8>) {
        match self {
            Coll::Hash(h) => h.encode_group(g, out),
            Coll::List(l) => l.encode_group(g, out),
            Coll::Set(s) => s.encode_group(g, out),
            Coll::Zset(z) => z.encode_group(g, out),
            Coll::Stream(s) => s.encode_group(g, out),
        }
    }

    /// Appends the whole collection as one compact record value, whatever its layout
    /// (for DUMP-like copies: lending, COPY, RENAME, MOVE).
    pub fn encode_compact(&self, out: &mut Vec<u8>) {
        if !self.is_grouped() {
            return self.encode(out);
        }
        let mut c = self.clone();
        c.plan_layout(usize::MAX / 4);
        c.encode(out);
    }

    /// Marks the collection as having outgrown the compact encoding when it has (sticky;
    /// see [`FLAG_BIG`]). Called before every write of the collection.
    pub fn note_encoding(&mut self, t: &Thresholds) {
        match self {
            Coll::Hash(h) => h.note_encoding(t),
            Coll::List(_) => {}
            Coll::Set(s) => s.note_encoding(t),
            Coll::Zset(z) => z.note_encoding(t),
            Coll::Stream(_) => {}
        }
    }

    /// The name OBJECT ENCODING answers (Redis 7.0's closest encoding).
    pub fn encoding_name(&self) -> &'static str {
        match self {
            Coll::Hash(h) => h.encoding_name(),
            Coll::List(_) => "quicklist",
            Coll::Set(s) => s.encoding_name(),
            Coll::Zset(z) => z.encoding_name(),
            Coll::Stream(_) => "stream",
        }
    }
}

macro_rules! typed {
    ($variant:ident, $ty:ty, $as_ref:ident, $as_mut:ident, $into:ident) => {
        impl Coll {
            #[doc = concat!("The ", stringify!($variant), " (the caller checked the type; panics otherwise).")]
            pub fn $as_ref(&self) -> &$ty {
                match self {
                    Coll::$variant(v) => v,
                    _ => unreachable!("collection type checked by the keyspace"),
                }
            }
            #[doc = concat!("The ", stringify!($variant), ", to change (the caller checked the type).")]
            pub fn $as_mut(&mut self) -> &mut $ty {
                match self {
                    Coll::$variant(v) => v,
                    _ => unreachable!("collection type checked by the keyspace"),
                }
            }
            #[doc = concat!("The ", stringify!($variant), ", owned (the caller checked the type).")]
            pub fn $into(self) -> $ty {
                match self {
                    Coll::$variant(v) => v,
                    _ => unreachable!("collection type checked by the keyspace"),
                }
            }
        }
    };
}
typed!(Hash, hash::Hash, as_hash, as_hash_mut, into_hash);
typed!(List, list::List, as_list, as_list_mut, into_list);
typed!(Set, set::Set, as_set, as_set_mut, into_set);
typed!(Zset, zset::Zset, as_zset, as_zset_mut, into_zset);
typed!(
    Stream,
    stream::Stream,
    as_stream,
    as_stream_mut,
    into_stream
);

/// The 64-bit hash that orders a collection's members for HSCAN, SSCAN and ZSCAN (fixed
/// seed, so a cursor stays valid while the server runs and across restarts).
pub fn member_hash(m: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x5ce1_1a2d_0c0f_fee5).hash_one(m)
}

/// One step of a collection SCAN: the items whose member hash is at or after `cursor`, in
/// hash order, `count` of them (more when several share the last hash), and the cursor to
/// continue from (0 when done). A member present for the whole iteration is returned at
/// least once, whatever else is added or removed meanwhile, as Redis guarantees.
///
/// `member` gives the member of an item (the hash field, set member, zset member).
pub fn scan_by_hash<'a, T>(
    items: impl Iterator<Item = T>,
    member: impl Fn(&T) -> &'a [u8],
    cursor: u64,
    count: usize,
) -> (u64, Vec<T>) {
    let mut found: Vec<(u64, T)> = items
        .filter_map(|it| {
            let h = member_hash(member(&it));
            (h >= cursor).then_some((h, it))
        })
        .collect();
    found.sort_unstable_by_key(|(h, _)| *h);
    let count = count.max(1);
    if found.len() <= count {
        return (0, found.into_iter().map(|(_, it)| it).collect());
    }
    let mut end = count;
    while end < found.len() && found[end].0 == found[end - 1].0 {
        end += 1;
    }
    let next = match found.get(end) {
        // Cursor 0 means "done" to the client, so a member hashing to 0 is never a resume
        // point: the step ends only where a later hash is above 0, which it always is
        // after a sorted run starting at or above `cursor`.
        Some((h, _)) => *h,
        None => 0,
    };
    found.truncate(end);
    (next, found.into_iter().map(|(_, it)| it).collect())
}

/// The name TYPE prints for a record value type.
pub fn type_name(value_type: u8) -> &'static str {
    match value_type {
        0 => "string",
        VALUE_TYPE_HASH => "hash",
        VALUE_TYPE_LIST => "list",
        VALUE_TYPE_SET => "set",
        VALUE_TYPE_ZSET => "zset",
        VALUE_TYPE_STREAM => "stream",
        _ => "unknown",
    }
}

/// Redis's encoding thresholds (`hash-max-listpack-entries` and friends): in Skerry they only
/// decide what OBJECT ENCODING answers, as the stored form does not depend on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// `hash-max-listpack-entries`.
    pub hash_max_listpack_entries: usize,
    /// `hash-max-listpack-value`.
    pub hash_max_listpack_value: usize,
    /// `set-max-intset-entries`.
    pub set_max_intset_entries: usize,
    /// `set-max-listpack-entries` (Redis 7.2+).
    pub set_max_listpack_entries: usize,
    /// `set-max-listpack-value` (Redis 7.2+).
    pub set_max_listpack_value: usize,
    /// `zset-max-listpack-entries`.
    pub zset_max_listpack_entries: usize,
    /// `zset-max-listpack-value`.
    pub zset_max_listpack_value: usize,
    /// `collection-group-bytes` (Skerry's): the target size of a group record of a big
    /// collection (see [`groups`]).
    pub group_bytes: usize,
    /// `stream-node-max-entries`: entries per node of Redis's stream layout, which decides
    /// what `~` trimming removes (see [`stream`]).
    pub stream_node_max_entries: usize,
    /// `stream-node-max-bytes`: bytes per node of Redis's stream layout.
    pub stream_node_max_bytes: usize,
    /// `list-max-listpack-size` (Redis's quicklist `fill`), which decides a list's
    /// encoding (see [`list`]).
    pub list_max_listpack_size: i64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            set_max_listpack_entries: 128,
            set_max_listpack_value: 64,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            group_bytes: groups::DEFAULT_GROUP_BYTES,
            stream_node_max_entries: 100,
            stream_node_max_bytes: 4096,
            list_max_listpack_size: -2,
        }
    }
}

/// The thresholds as atomics, mirrored from the configuration (`Config::hot`).
#[derive(Debug)]
pub struct HotThresholds {
    v: [AtomicI64; 11],
}

impl Default for HotThresholds {
    fn default() -> Self {
        let d = Thresholds::default();
        HotThresholds {
            v: [
                AtomicI64::new(d.hash_max_listpack_entries as i64),
                AtomicI64::new(d.hash_max_listpack_value as i64),
                AtomicI64::new(d.set_max_intset_entries as i64),
                AtomicI64::new(d.zset_max_listpack_entries as i64),
                AtomicI64::new(d.zset_max_listpack_value as i64),
                AtomicI64::new(d.group_bytes as i64),
                AtomicI64::new(d.set_max_listpack_entries as i64),
                AtomicI64::new(d.set_max_listpack_value as i64),
                AtomicI64::new(d.stream_node_max_entries as i64),
                AtomicI64::new(d.stream_node_max_bytes as i64),
                AtomicI64::new(d.list_max_listpack_size),
            ],
        }
    }
}

impl HotThresholds {
    /// The current thresholds.
    pub fn get(&self) -> Thresholds {
        let g = |i: usize| self.v[i].load(Ordering::Relaxed).max(0) as usize;
        Thresholds {
            hash_max_listpack_entries: g(0),
            hash_max_listpack_value: g(1),
            set_max_intset_entries: g(2),
            zset_max_listpack_entries: g(3),
            zset_max_listpack_value: g(4),
            group_bytes: g(5),
            set_max_listpack_entries: g(6),
            set_max_listpack_value: g(7),
            stream_node_max_entries: g(8),
            stream_node_max_bytes: g(9),
            list_max_listpack_size: self.v[10].load(Ordering::Relaxed),
        }
    }

    /// Stores new thresholds.
    pub fn set(&self, t: Thresholds) {
        let vals = [
            t.hash_max_listpack_entries as i64,
            t.hash_max_listpack_value as i64,
            t.set_max_intset_entries as i64,
            t.zset_max_listpack_entries as i64,
            t.zset_max_listpack_value as i64,
            t.group_bytes as i64,
            t.set_max_listpack_entries as i64,
            t.set_max_listpack_value as i64,
            t.stream_node_max_entries as i64,
            t.stream_node_max_bytes as i64,
            t.list_max_listpack_size,
        ];
        for (a, v) in self.v.iter().zip(vals) {
            a.store(v, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(c: &Coll) {
        let mut out = Vec::new();
        c.encode(&mut out);
        let back = Coll::decode(c.value_type(), &out).unwrap();
        assert_eq!(&back, c);
    }

    #[test]
    fn every_type_round_trips() {
        let mut h = hash::Hash::default();
        h.insert(b"f1", b"v1");
        h.insert(b"", b"empty field");
        round_trip(&Coll::Hash(h));
        let mut l = list::List::default();
        l.push_back(b"a".to_vec());
        l.push_front(b"".to_vec());
        round_trip(&Coll::List(l));
        let mut s = set::Set::default();
        s.insert(b"x");
        s.insert(b"12");
        round_trip(&Coll::Set(s));
        let mut z = zset::Zset::default();
        z.insert(b"m", 1.5);
        z.insert(b"n", f64::NEG_INFINITY);
        z.insert(b"o", -0.0);
        round_trip(&Coll::Zset(z));
        for t in [
            VALUE_TYPE_HASH,
            VALUE_TYPE_LIST,
            VALUE_TYPE_SET,
            VALUE_TYPE_ZSET,
        ] {
            round_trip(&Coll::empty(t).unwrap());
        }
    }

    #[test]
    fn scan_returns_every_member_once_over_a_full_iteration() {
        let members: Vec<Vec<u8>> = (0..1000).map(|i| format!("m{i}").into_bytes()).collect();
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut steps = 0;
        loop {
            let (next, got) = scan_by_hash(members.iter(), |m| &m[..], cursor, 10);
            assert!(got.len() >= 10 || next == 0);
            for m in got {
                assert!(seen.insert(m.clone()), "returned twice");
            }
            steps += 1;
            if next == 0 {
                break;
            }
            assert!(next > cursor);
            cursor = next;
        }
        assert_eq!(seen.len(), 1000);
        assert!(steps >= 100);
    }

    #[test]
    fn damaged_values_are_errors_not_panics() {
        let mut h = hash::Hash::default();
        h.insert(b"field", b"value");
        let mut out = Vec::new();
        Coll::Hash(h).encode(&mut out);
        for cut in 0..out.len() {
            assert!(Coll::decode(VALUE_TYPE_HASH, &out[..cut]).is_err());
        }
        let mut longer = out.clone();
        longer.push(0);
        assert!(Coll::decode(VALUE_TYPE_HASH, &longer).is_err());
        assert!(Coll::decode(0, &out).is_err());
    }
}
