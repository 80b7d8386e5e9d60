//! A segmented hash table (extendible hashing): a directory indexed by the top bits of a key's
//! hash points at segments, each a small `hashbrown::HashTable`. A full segment splits in two
//! by the next hash bit, so growth touches at most one segment (a few thousand entries) at a
//! time and never stalls the worker the way a whole-table rehash would.
//!
//! Segments cover contiguous ranges of the 64-bit hash space, which gives SCAN a cursor that is
//! simply a hash position: a scan walks the hash space upwards, so every entry present for
//! the whole scan is returned exactly once, whatever splits happen meanwhile.

use hashbrown::HashTable;

use super::seg_alloc::SegAlloc;

/// Entries hold their own key; the hash is [`hash_key`] of it (cached or recomputed).
pub trait Keyed {
    /// The entry's key.
    fn key(&self) -> &[u8];
    /// The hash of the key, as produced by [`hash_key`].
    fn hash(&self) -> u64;
}

/// Segments split when they reach this many entries: 7/8 of 8192 buckets, hashbrown's
/// highest load, so a segment is full when it splits (at 4096 a segment split at half load).
const SEGMENT_MAX: usize = 7168;

/// Scan positions are rounded to this granule, leaving the low bits of a cursor free for the
/// worker index.
pub const SCAN_GRANULE_BITS: u32 = 10;

static HASH_STATE: foldhash::quality::FixedState =
    foldhash::quality::FixedState::with_seed(0x5ce2_2a11);

/// The hash of a key, fixed for the life of the process.
#[inline]
pub fn hash_key(key: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    HASH_STATE.hash_one(key)
}

struct Segment<T> {
    /// Number of leading hash bits shared by every entry of this segment.
    depth: u32,
    table: HashTable<T, SegAlloc>,
}

/// The segmented table.
pub struct SegTable<T> {
    /// `1 << global_depth` slots, each the index of a segment.
    dir: Vec<u32>,
    global_depth: u32,
    segments: Vec<Segment<T>>,
    len: usize,
}

impl<T: Keyed> Default for SegTable<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn prefix(hash: u64, depth: u32) -> usize {
    if depth == 0 {
        0
    } else {
        (hash >> (64 - depth)) as usize
    }
}

impl<T: Keyed> SegTable<T> {
    /// An empty table.
    pub fn new() -> Self {
        SegTable {
            dir: vec![0],
            global_depth: 0,
            segments: vec![Segment {
                depth: 0,
                table: HashTable::new_in(SegAlloc),
            }],
            len: 0,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn segment_of(&self, hash: u64) -> usize {
        self.dir[prefix(hash, self.global_depth)] as usize
    }

    /// The entry for `key`.
    #[inline]
    pub fn get(&self, hash: u64, key: &[u8]) -> Option<&T> {
        let s = self.segment_of(hash);
        self.segments[s].table.find(hash, |e| e.key() == key)
    }

    /// The entry for `key`, mutable.
    #[inline]
    pub fn get_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut T> {
        let s = self.segment_of(hash);
        self.segments[s].table.find_mut(hash, |e| e.key() == key)
    }

    /// Inserts `entry`, replacing and returning an entry with the same key.
    pub fn insert(&mut self, entry: T) -> Option<T> {
        let hash = entry.hash();
        let s = self.segment_of(hash);
        let seg = &mut self.segments[s];
        match seg
            .table
            .entry(hash, |e| e.key() == entry.key(), |e| e.hash())
        {
            hashbrown::hash_table::Entry::Occupied(mut o) => {
                Some(std::mem::replace(o.get_mut(), entry))
            }
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert(entry);
                self.len += 1;
                if seg.table.len() >= SEGMENT_MAX {
                    self.split(s);
                }
                None
            }
        }
    }

    /// Removes and returns the entry for `key`.
    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<T> {
        let s = self.segment_of(hash);
        match self.segments[s].table.find_entry(hash, |e| e.key() == key) {
            Ok(o) => {
                self.len -= 1;
                Some(o.remove().0)
            }
            Err(_) => None,
        }
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        *self = Self::new();
    }

    /// Calls `f` on every entry.
    pub fn for_each(&self, mut f: impl FnMut(&T)) {
        for seg in &self.segments {
            for e in seg.table.iter() {
                f(e);
            }
        }
    }

    /// Keeps only the entries for which `keep` returns true.
    pub fn retain(&mut self, mut keep: impl FnMut(&mut T) -> bool) {
        let mut removed = 0;
        for seg in &mut self.segments {
            seg.table.retain(|e| {
                let k = keep(e);
                if !k {
                    removed += 1;
                }
                k
            });
        }
        self.len -= removed;
    }

    fn split(&mut self, s: usize) {
        let depth = self.segments[s].depth;
        if depth == 64 {
            return;
        }
        if depth == self.global_depth {
            // Double the directory: slot i becomes slots 2i and 2i+1.
            let mut dir = Vec::with_capacity(self.dir.len() * 2);
            for &d in &self.dir {
                dir.push(d);
                dir.push(d);
            }
            self.dir = dir;
            self.global_depth += 1;
        }
        let new_depth = depth + 1;
        let bit = 1u64 << (64 - new_depth);
        let old = &mut self.segments[s];
        old.depth = new_depth;
        let mut moved = HashTable::with_capacity_in(old.table.len() / 2 + 16, SegAlloc);
        for e in old.table.extract_if(|e| e.hash() & bit != 0) {
            let h = e.hash();
            moved.insert_unique(h, e, |e| e.hash());
        }
        // Both halves sized to what they hold (the old one kept its full-size buckets).
        old.table.shrink_to_fit(|e| e.hash());
        moved.shrink_to_fit(|e| e.hash());
        let new_index = self.segments.len() as u32;
        self.segments.push(Segment {
            depth: new_depth,
            table: moved,
        });
        // Directory slots whose prefix matches the old segment and has the new bit set move.
        let shift = self.global_depth - new_depth;
        for (i, slot) in self.dir.iter_mut().enumerate() {
            if *slot as usize == s && (i >> shift) & 1 == 1 {
                *slot = new_index;
            }
        }
    }

    /// Visits entries with hash at or above `position` in hash order, about `count` of them,
    /// and returns the position to continue from (`None` when the hash space is exhausted).
    /// Positions are multiples of `1 << SCAN_GRANULE_BITS`; entries sharing a granule are
    /// always visited together.
    pub fn scan(&self, position: u64, count: usize, mut f: impl FnMut(&T)) -> Option<u64> {
        let granule_mask = (1u64 << SCAN_GRANULE_BITS) - 1;
        let mut pos = position & !granule_mask;
        let mut visited = 0usize;
        loop {
            let s = self.segment_of(pos);
            let seg = &self.segments[s];
            // End of this segment's hash range.
            let seg_end: Option<u64> = if seg.depth == 0 {
                None
            } else {
                let span = 1u64 << (64 - seg.depth);
                (pos & !(span - 1)).checked_add(span)
            };
            let mut items: Vec<&T> = seg.table.iter().filter(|e| e.hash() >= pos).collect();
            let want = count.saturating_sub(visited).max(1);
            if items.len() > want {
                items.select_nth_unstable_by_key(want - 1, |e| e.hash());
                let cut = items[want - 1].hash() | granule_mask;
                for e in seg.table.iter() {
                    let h = e.hash();
                    if h >= pos && h <= cut {
                        f(e);
                    }
                }
                return cut.checked_add(1);
            }
            visited += items.len();
            for e in items {
                f(e);
            }
            match seg_end {
                None => return None,
                Some(end) => {
                    pos = end;
                    if visited >= count {
                        return Some(pos);
                    }
                }
            }
        }
    }

    /// Approximate heap bytes used by the table structure (not counting entry heap data).
    pub fn allocation_bytes(&self) -> usize {
        self.dir.len() * 4
            + self
                .segments
                .iter()
                .map(|s| s.table.allocation_size())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    struct E(Vec<u8>, u64);
    impl Keyed for E {
        fn key(&self) -> &[u8] {
            &self.0
        }
        fn hash(&self) -> u64 {
            self.1
        }
    }
    fn e(k: &str) -> E {
        E(k.as_bytes().to_vec(), hash_key(k.as_bytes()))
    }

    #[test]
    fn insert_get_remove_across_splits() {
        let mut t = SegTable::new();
        for i in 0..50_000 {
            assert!(t.insert(e(&format!("k{i}"))).is_none());
        }
        assert_eq!(t.len(), 50_000);
        assert!(t.global_depth >= 3);
        for i in 0..50_000 {
            let k = format!("k{i}");
            assert!(t.get(hash_key(k.as_bytes()), k.as_bytes()).is_some());
        }
        assert!(t.insert(e("k7")).is_some());
        for i in (0..50_000).step_by(2) {
            let k = format!("k{i}");
            assert!(t.remove(hash_key(k.as_bytes()), k.as_bytes()).is_some());
        }
        assert_eq!(t.len(), 25_000);
        assert!(t.get(hash_key(b"k0"), b"k0").is_none());
        assert!(t.get(hash_key(b"k1"), b"k1").is_some());
    }

    #[test]
    fn scan_returns_every_entry_once_while_growing() {
        let mut t = SegTable::new();
        for i in 0..10_000 {
            t.insert(e(&format!("old{i}")));
        }
        let mut seen = HashSet::new();
        let mut pos = 0u64;
        let mut round = 0;
        loop {
            let mut batch = Vec::new();
            let next = t.scan(pos, 37, |x| batch.push(x.0.clone()));
            for k in batch {
                assert!(seen.insert(k), "duplicate");
            }
            // Grow the table while the scan is under way.
            for j in 0..200 {
                t.insert(e(&format!("new{round}-{j}")));
            }
            round += 1;
            match next {
                None => break,
                Some(p) => pos = p,
            }
        }
        for i in 0..10_000 {
            assert!(seen.contains(format!("old{i}").as_bytes()));
        }
    }
}
