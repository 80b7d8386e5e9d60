//! The grouped form of a big collection (DESIGN §2 "Collections", decision 0009).
//!
//! Past about twice the group size (`collection-group-bytes`, 8 KiB by default) a
//! collection is no longer one record but a root record plus group records of about that
//! size each, so that a change writes the groups it touched, not the whole collection.
//!
//! - Hashes, sets and sorted sets are split by the top `bits` of [`super::member_hash`]:
//!   group `g` holds the members whose hash starts with `g`. The decoded structure is
//!   partitioned the same way ([`Grouping`] keeps the per-part byte estimates and dirty
//!   marks), so encoding a group costs the group, not the collection. The number of groups
//!   doubles when their average passes 1.5 × the group size and halves below a quarter.
//! - Lists are a chain of pages of about the group size (see `list.rs`), ordered by page id.
//!
//! A group record holds its members in the compact record format of its type (a flags
//! byte, a count, the members); the root record holds the flags (with [`super::FLAG_GROUPED`])
//! and, for the hashed types, `bits`. The keyspace (`keyspace/groups.rs`) keeps where each
//! group is and writes what [`super::Coll::take_changes`] reports.

use super::member_hash;

/// Default `collection-group-bytes`: the target size of one group record.
pub const DEFAULT_GROUP_BYTES: usize = 8192;

/// The most groups a hashed collection is split into (2^16 groups of 8 KiB hold 512 MiB,
/// far beyond the largest collection a worker's RAM holds decoded).
pub const MAX_BITS: u8 = 16;

/// What a write of a collection must store, as reported by [`super::Coll::take_changes`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// The root record changed (layout, flags) and must be written again.
    pub root: bool,
    /// The groups (by id) whose members changed, ascending.
    pub groups: Vec<u64>,
    /// The set of group ids may have changed (groups added or removed).
    pub layout: bool,
}

/// The partitioning state of a hashed collection (hash, set, sorted set).
#[derive(Clone, Debug)]
pub struct Grouping {
    /// log2 of the number of parts; 0 while the collection is compact (one part).
    bits: u8,
    /// True while the collection is stored grouped (a collection of one part can be
    /// grouped: it is then one group record).
    grouped: bool,
    /// Estimated encoded bytes per part.
    bytes: Vec<usize>,
    /// Parts changed since the last [`Grouping::take_changes`].
    dirty: Vec<bool>,
    /// The parts marked in `dirty`, in marking order.
    dirty_list: Vec<u32>,
    /// Sum of `bytes`.
    total: usize,
    /// The root must be written again (a new collection, a new layout, new flags).
    root_dirty: bool,
}

impl Default for Grouping {
    fn default() -> Self {
        Grouping::new_compact()
    }
}

impl Grouping {
    /// A compact collection's grouping, whose root is new (never stored).
    pub fn new_compact() -> Grouping {
        Grouping {
            bits: 0,
            grouped: false,
            bytes: Vec::new(),
            dirty: Vec::new(),
            dirty_list: Vec::new(),
            total: 0,
            root_dirty: true,
        }
    }

    /// The grouping of a collection decoded from the device (nothing dirty).
    pub fn stored(grouped: bool, bits: u8, bytes: Vec<usize>) -> Grouping {
        debug_assert_eq!(bytes.len(), 1 << bits);
        let total = bytes.iter().sum();
        // A compact collection keeps no per-part state (it is written whole): nothing
        // allocated for the many small ones.
        let bytes = if grouped { bytes } else { Vec::new() };
        Grouping {
            bits,
            grouped,
            dirty: vec![false; bytes.len()],
            total,
            bytes,
            dirty_list: Vec::new(),
            root_dirty: false,
        }
    }

    /// log2 of the number of parts.
    pub fn bits(&self) -> u8 {
        self.bits
    }

    /// Number of parts.
    pub fn parts(&self) -> usize {
        1 << self.bits
    }

    /// True when stored grouped.
    pub fn is_grouped(&self) -> bool {
        self.grouped
    }

    /// The part member `m` belongs to.
    #[inline]
    pub fn part_of(&self, m: &[u8]) -> usize {
        part_of_bits(self.bits, m)
    }

    /// Notes a change of about `delta` encoded bytes in part `p`.
    #[inline]
    pub fn changed(&mut self, p: usize, delta: isize) {
        if !self.grouped {
            self.total = self.total.saturating_add_signed(delta);
            return;
        }
        let b = &mut self.bytes[p];
        let old = *b;
        *b = b.saturating_add_signed(delta);
        self.total = self.total - old + *b;
        if !self.dirty[p] {
            self.dirty[p] = true;
            self.dirty_list.push(p as u32);
        }
    }

    /// Estimated encoded bytes of part `p`.
    pub fn part_bytes(&self, p: usize) -> usize {
        if self.grouped {
            self.bytes[p]
        } else {
            self.total
        }
    }

    /// Marks the root as changed (flags).
    pub fn root_changed(&mut self) {
        self.root_dirty = true;
    }

    /// Estimated encoded bytes of the whole collection.
    pub fn total_bytes(&self) -> usize {
        self.total
    }

    /// The layout the collection should have now, given its size: `Some(bits)` grouped
    /// with 2^bits parts, `None` compact. `big`: the collection has outgrown Redis's small
    /// encoding (only such a collection is grouped, so a small one keeps its listpack
    /// order in one record).
    pub fn plan(&self, group_bytes: usize, big: bool) -> Option<u8> {
        let total = self.total_bytes();
        let g = group_bytes.max(64);
        if !self.grouped {
            if !big || total <= 2 * g {
                return None;
            }
            // Groups of about `g`: the smallest power of two of parts at or above total/g.
            let mut bits = 0u8;
            while bits < MAX_BITS && (total >> bits) > g {
                bits += 1;
            }
            return Some(bits);
        }
        if !big || total < g / 2 {
            return None;
        }
        let parts = self.parts();
        let avg = total / parts;
        if avg > g + g / 2 && self.bits < MAX_BITS {
            Some(self.bits + 1)
        } else if avg < g / 4 && self.bits > 0 {
            Some(self.bits - 1)
        } else {
            Some(self.bits)
        }
    }

    /// Adopts a new layout (the caller moved the members into `1 << bits` parts whose
    /// estimated sizes are `bytes`): every part and the root are dirty.
    pub fn relayout(&mut self, grouped: bool, bits: u8, bytes: Vec<usize>) {
        debug_assert_eq!(bytes.len(), 1 << bits);
        self.grouped = grouped;
        self.bits = bits;
        self.total = bytes.iter().sum();
        let bytes = if grouped { bytes } else { Vec::new() };
        self.dirty = vec![true; bytes.len()];
        self.dirty_list = (0..bytes.len() as u32).collect();
        self.bytes = bytes;
        self.root_dirty = true;
    }

    /// What changed since the last call, clearing the marks.
    pub fn take_changes(&mut self) -> Changes {
        let mut groups: Vec<u64> = Vec::with_capacity(self.dirty_list.len());
        for p in self.dirty_list.drain(..) {
            self.dirty[p as usize] = false;
            groups.push(u64::from(p));
        }
        groups.sort_unstable();
        let root = std::mem::take(&mut self.root_dirty);
        Changes {
            root,
            groups,
            // The ids change only with the layout, which also changes the root.
            layout: root,
        }
    }

    /// The ids of the groups the collection is stored in (empty when compact).
    pub fn group_ids(&self) -> Vec<u64> {
        if self.grouped {
            (0..self.parts() as u64).collect()
        } else {
            Vec::new()
        }
    }
}

/// While a hashed collection is grouped: each group's members encoded as its group record
/// holds them (after the record's flags byte and count), kept in step with the decoded
/// parts by every change, so that writing a group copies one buffer instead of visiting
/// every member (which, in a big collection, costs a cache miss per member). Empty while
/// compact; None for a group whose bytes are built at its next write.
#[derive(Clone, Debug, Default)]
pub struct Shadows(Vec<Option<Vec<u8>>>);

impl Shadows {
    /// The shadows of a new layout of `parts` parts: none yet (built at the writes).
    pub fn for_layout(grouped: bool, parts: usize) -> Shadows {
        Shadows(if grouped {
            vec![None; parts]
        } else {
            Vec::new()
        })
    }

    /// Empty, with room for `parts` stored groups (see [`Shadows::push_stored`]).
    pub fn with_capacity(parts: usize) -> Shadows {
        Shadows(Vec::with_capacity(parts))
    }

    /// Adds the shadow of the next group, from its record value as read from the device.
    pub fn push_stored(&mut self, group_value: &[u8]) -> Result<(), super::DecodeError> {
        let mut r = super::codec::Reader::new(group_value);
        r.byte()?;
        r.varint()?;
        self.0.push(Some(group_value[r.pos()..].to_vec()));
        Ok(())
    }

    /// Changes the shadow of part `p` with `f`, if it has one; `f` returning false (the
    /// entry it looked for is not there) drops it, to be built again.
    #[inline]
    pub fn edit(&mut self, p: usize, f: impl FnOnce(&mut Vec<u8>) -> bool) {
        if let Some(slot) = self.0.get_mut(p) {
            if let Some(b) = slot {
                if !f(b) {
                    *slot = None;
                }
            }
        }
    }

    /// Drops the shadow of part `p` (built again at its next write).
    pub fn forget(&mut self, p: usize) {
        if let Some(slot) = self.0.get_mut(p) {
            *slot = None;
        }
    }

    /// The shadow of part `p`, if built.
    pub fn get(&self, p: usize) -> Option<&[u8]> {
        self.0.get(p).and_then(|s| s.as_deref())
    }

    /// Builds the missing shadows of `groups` (while grouped): `build(p, out)` encodes part
    /// `p`'s members, `bytes_of(p)` sizes the buffer.
    pub fn fill(
        &mut self,
        groups: &[u64],
        bytes_of: impl Fn(usize) -> usize,
        mut build: impl FnMut(usize, &mut Vec<u8>),
    ) {
        for &g in groups {
            let g = g as usize;
            if let Some(slot @ None) = self.0.get_mut(g) {
                let mut b = Vec::with_capacity(bytes_of(g));
                build(g, &mut b);
                *slot = Some(b);
            }
        }
    }

    /// Appends the record value of group `p` holding `count` members from its shadow;
    /// false when it has none (the caller encodes the part).
    pub fn write_group(&self, p: usize, count: usize, out: &mut Vec<u8>) -> bool {
        self.write_group_flagged(p, 0, count, out)
    }

    /// [`Shadows::write_group`] with the group record's `flags` byte (a hash with field
    /// expiry marks its groups).
    pub fn write_group_flagged(
        &self,
        p: usize,
        flags: u8,
        count: usize,
        out: &mut Vec<u8>,
    ) -> bool {
        let Some(b) = self.get(p) else {
            return false;
        };
        out.push(flags);
        super::codec::put_varint(out, count as u64);
        out.extend_from_slice(b);
        true
    }
}

/// The part member `m` belongs to among `1 << bits`.
#[inline]
pub fn part_of_bits(bits: u8, m: &[u8]) -> usize {
    if bits == 0 {
        0
    } else {
        (member_hash(m) >> (64 - u32::from(bits))) as usize
    }
}

/// Decodes the `bits` byte of a grouped root and checks the group ids the keyspace found
/// for it: exactly 0..2^bits.
pub fn check_hashed_groups(bits: u8, ids: &[u64]) -> Result<(), super::DecodeError> {
    if bits > MAX_BITS {
        return Err(super::DecodeError(format!(
            "group bits {bits} out of range"
        )));
    }
    let n = 1u64 << bits;
    if ids.len() as u64 != n || ids.iter().enumerate().any(|(i, &g)| g != i as u64) {
        return Err(super::DecodeError(format!(
            "grouped collection of {n} groups has {} group records",
            ids.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_groups_big_collections_and_keeps_groups_near_the_target() {
        let mut g = Grouping::new_compact();
        g.changed(0, 10_000);
        assert_eq!(g.plan(8192, true), None, "under twice the group size");
        g.changed(0, 10_000);
        assert_eq!(g.plan(8192, false), None, "small encodings stay compact");
        assert_eq!(g.plan(8192, true), Some(2));
        g.relayout(true, 2, vec![5000; 4]);
        assert_eq!(g.plan(8192, true), Some(2));
        let c = g.take_changes();
        assert!(c.root);
        assert_eq!(c.groups, vec![0, 1, 2, 3]);
        assert_eq!(g.take_changes(), Changes::default());
        g.changed(3, 40_000);
        assert_eq!(g.plan(8192, true), Some(3), "average above 1.5 × target");
        assert_eq!(g.take_changes().groups, vec![3]);
        g.relayout(true, 2, vec![1500; 4]);
        assert_eq!(g.plan(8192, true), Some(1), "average under a quarter");
        g.relayout(true, 1, vec![1000; 2]);
        assert_eq!(
            g.plan(8192, true),
            None,
            "under half a group: compact again"
        );
    }

    #[test]
    fn parts_follow_the_top_bits_of_the_member_hash() {
        for m in [&b"a"[..], b"bb", b"", b"member:12345"] {
            assert_eq!(part_of_bits(0, m), 0);
            let p4 = part_of_bits(4, m);
            let p5 = part_of_bits(5, m);
            assert!(p4 < 16 && p5 < 32);
            assert_eq!(p5 >> 1, p4, "doubling splits each part in two");
        }
        assert!(check_hashed_groups(2, &[0, 1, 2, 3]).is_ok());
        assert!(check_hashed_groups(2, &[0, 1, 3]).is_err());
        assert!(check_hashed_groups(1, &[0, 2]).is_err());
    }
}
