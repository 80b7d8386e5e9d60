//! A segmented hash table (extendible hashing): a directory indexed by the top bits of a key's
//! hash points at segments, each a small open-addressing table of its own. A full segment
//! splits in two by the next hash bit, so growth touches at most one segment (a few thousand
//! entries) at a time and never stalls the worker the way a whole-table rehash would.
//!
//! Segments are sized to what they hold rather than to a power of two: a segment grows in
//! steps of 1/16 and stays between 88% and 94% full, where a power-of-two table (hashbrown)
//! swings between 44% and 87% (decision 0006 has the measurements). A segment is an array
//! of buckets, each 16 control bytes (empty, deleted, or 7 bits of the hash) followed by
//! its 16 entries; a lookup compares a bucket's control bytes in one 128-bit word and
//! probes buckets linearly from a home bucket chosen by multiply-shift over the bucket
//! count, which is why the count need not be a power of two.
//!
//! Segments cover contiguous ranges of the 64-bit hash space, which gives SCAN a cursor that is
//! simply a hash position: a scan walks the hash space upwards, so every entry present for
//! the whole scan is returned exactly once, whatever splits happen meanwhile.

use super::seg_alloc::SegAlloc;

/// Entries hold their own key; the hash is [`hash_key`] of it (cached or recomputed).
pub trait Keyed {
    /// The entry's key.
    fn key(&self) -> &[u8];
    /// The hash of the key, as produced by [`hash_key`].
    fn hash(&self) -> u64;
    /// A placeholder for an unused slot: owns nothing, dropping it does nothing.
    fn vacant() -> Self;
    /// Starts bringing the key's bytes into the CPU cache when they live outside the entry
    /// (see [`SegTable::prefetch_keys`]); nothing for a key held inline.
    #[inline]
    fn prefetch_key(&self) {}
}

/// A segment splits when it holds this many entries.
const SEGMENT_MAX: usize = 8192;

/// Slots per probe group (one 128-bit word of control bytes).
const GROUP: usize = 16;

/// A segment holds at most `LOAD_NUM / LOAD_DEN` of its slots in use (live or deleted).
const LOAD_NUM: usize = 15;
const LOAD_DEN: usize = 16;

/// A segment that fills up is rebuilt for its live entries plus 1 / `GROWTH_DIV` more.
const GROWTH_DIV: usize = 16;

/// The growth step while a bulk load runs ([`SegTable::set_bulk_load`]): 1/2, so that an
/// entry is moved about twice by growth instead of about sixteen times; the load's end
/// fits every segment back to the 1/16 step.
const BULK_GROWTH_DIV: usize = 2;

/// Control byte of a never-used slot.
const EMPTY: u8 = 0xFF;
/// Control byte of a slot whose entry was removed while its group was full.
const DELETED: u8 = 0x80;

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

/// The 7 hash bits kept in a full slot's control byte (bits the directory never uses).
#[inline]
fn tag(hash: u64) -> u8 {
    ((hash >> 32) & 0x7F) as u8
}

/// A byte repeated over a group word.
#[inline]
const fn splat(b: u8) -> u128 {
    u128::from_ne_bytes([b; GROUP])
}

/// Bits 7, 15, ... set for the bytes of `group` that may equal `tag` (false positives are
/// possible, false negatives are not: callers compare keys).
#[inline]
fn match_tag(group: u128, tag: u8) -> u128 {
    let x = group ^ splat(tag);
    x.wrapping_sub(splat(0x01)) & !x & splat(0x80)
}

/// Bits set exactly for the EMPTY bytes of `group` (only EMPTY has bits 7 and 6 both set).
#[inline]
fn match_empty(group: u128) -> u128 {
    group & (group << 1) & splat(0x80)
}

/// Bits set exactly for the EMPTY or DELETED bytes of `group`.
#[inline]
fn match_free(group: u128) -> u128 {
    group & splat(0x80)
}

/// Slot index within the group of the lowest set bit of a match word.
#[inline]
fn lowest(bits: u128) -> usize {
    (bits.trailing_zeros() / 8) as usize
}

/// A hint to bring the cache line holding `*p` into the CPU cache (the keyspace's one
/// prefetch: index buckets and entries here, cached values in `cache.rs`).
#[inline]
pub(super) fn prefetch<U>(p: &U) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch changes no program state and never faults; `p` is a live
        // reference anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((p as *const U).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Slots needed so that `entries` fit under the load limit, rounded up to whole groups.
fn groups_for(entries: usize) -> usize {
    (entries * LOAD_DEN).div_ceil(LOAD_NUM * GROUP).max(1)
}

/// A probe group: the control bytes of 16 slots and the slots, side by side, so that a
/// segment is one allocation (one mapping once it is large; see `seg_alloc`).
struct Bucket<T> {
    ctrl: [u8; GROUP],
    slots: [T; GROUP],
}

impl<T: Keyed> Bucket<T> {
    fn vacant() -> Self {
        Bucket {
            ctrl: [EMPTY; GROUP],
            slots: std::array::from_fn(|_| T::vacant()),
        }
    }
}

/// Where an entry is in a [`SegTable`]: valid until the table's next change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotRef {
    seg: u32,
    slot: u32,
}

/// One segment: slot `i` is `buckets[i / GROUP].slots[i % GROUP]`, in use when its control
/// byte is below 0x80.
struct Segment<T> {
    /// Number of leading hash bits shared by every entry of this segment.
    depth: u32,
    buckets: allocator_api2::vec::Vec<Bucket<T>, SegAlloc>,
    /// Live entries.
    len: usize,
    /// Live plus deleted slots; at most `max_used`.
    used: usize,
}

impl<T: Keyed> Segment<T> {
    fn with_groups(depth: u32, groups: usize) -> Self {
        let mut buckets = allocator_api2::vec::Vec::with_capacity_in(groups, SegAlloc);
        buckets.resize_with(groups, Bucket::vacant);
        Segment {
            depth,
            buckets,
            len: 0,
            used: 0,
        }
    }

    #[inline]
    fn slot_count(&self) -> usize {
        self.buckets.len() * GROUP
    }

    #[inline]
    fn ctrl(&self, i: usize) -> u8 {
        self.buckets[i / GROUP].ctrl[i % GROUP]
    }

    #[inline]
    fn set_ctrl(&mut self, i: usize, c: u8) {
        self.buckets[i / GROUP].ctrl[i % GROUP] = c;
    }

    #[inline]
    fn slot(&self, i: usize) -> &T {
        &self.buckets[i / GROUP].slots[i % GROUP]
    }

    #[inline]
    fn slot_mut(&mut self, i: usize) -> &mut T {
        &mut self.buckets[i / GROUP].slots[i % GROUP]
    }

    #[inline]
    fn groups(&self) -> usize {
        self.buckets.len()
    }

    #[inline]
    fn max_used(&self) -> usize {
        self.slot_count() * LOAD_NUM / LOAD_DEN
    }

    #[inline]
    fn group_word(&self, g: usize) -> u128 {
        u128::from_le_bytes(self.buckets[g].ctrl)
    }

    /// The home group of `hash`: multiply-shift of its low 32 bits over the group count.
    #[inline]
    fn home(&self, hash: u64) -> usize {
        (((hash & 0xFFFF_FFFF) * self.groups() as u64) >> 32) as usize
    }

    /// The slot holding `key`.
    #[inline]
    fn find(&self, hash: u64, key: &[u8]) -> Option<usize> {
        let groups = self.groups();
        let t = tag(hash);
        let mut g = self.home(hash);
        // The load limit leaves empty slots, so a probe ends within `groups` steps.
        for _ in 0..groups {
            let word = self.group_word(g);
            let mut m = match_tag(word, t);
            while m != 0 {
                let i = g * GROUP + lowest(m);
                if self.ctrl(i) == t && self.slot(i).key() == key {
                    return Some(i);
                }
                m &= m - 1;
            }
            if match_empty(word) != 0 {
                return None;
            }
            g += 1;
            if g == groups {
                g = 0;
            }
        }
        None
    }

    /// Puts an entry known to be absent into the first free slot of its probe sequence,
    /// growing the segment first when it is at its load limit.
    fn place(&mut self, hash: u64, entry: T, growth_div: usize) {
        self.reserve_one(growth_div);
        let groups = self.groups();
        let mut g = self.home(hash);
        loop {
            let m = match_free(self.group_word(g));
            if m != 0 {
                let i = g * GROUP + lowest(m);
                if self.ctrl(i) == EMPTY {
                    self.used += 1;
                }
                self.set_ctrl(i, tag(hash));
                *self.slot_mut(i) = entry;
                self.len += 1;
                debug_assert!(self.used <= self.max_used() || self.max_used() == 0);
                return;
            }
            g += 1;
            if g == groups {
                g = 0;
            }
        }
    }

    /// Takes the entry out of slot `i`. The slot becomes EMPTY when its group already has an
    /// empty slot (no probe ever went past such a group), else DELETED, so that the probes
    /// of entries placed beyond it still reach them.
    fn take(&mut self, i: usize) -> T {
        debug_assert!(self.ctrl(i) < 0x80, "take of a free slot");
        if match_empty(self.group_word(i / GROUP)) != 0 {
            self.set_ctrl(i, EMPTY);
            self.used -= 1;
        } else {
            self.set_ctrl(i, DELETED);
        }
        self.len -= 1;
        std::mem::replace(self.slot_mut(i), T::vacant())
    }

    /// Moves every entry into `into`, or, when `split` is given, those with its hash bit
    /// set into the other segment. The halves of a split are sized for an even split; a
    /// skewed one (keys inserted in hash order, as a checkpoint load or a SCAN-ordered copy
    /// does) makes `place` grow the fuller half.
    ///
    /// An entry's hash is computed from its key, and a key longer than an entry holds lives
    /// on the heap, rarely in the CPU cache: the keys of the buckets a few ahead are
    /// prefetched, so that their loads overlap instead of each waiting in turn (a rebuild
    /// of a full segment of such keys, one wait each, held its worker for about 1 ms).
    fn drain_into(self, into: &mut Segment<T>, mut split: Option<(u64, &mut Segment<T>)>) {
        /// How many buckets ahead the keys are prefetched.
        const AHEAD: usize = 2;
        let mut buckets = self.buckets;
        let live = |b: &Bucket<T>| {
            let ctrl = b.ctrl;
            (0..GROUP).filter(move |&i| ctrl[i] < 0x80)
        };
        for b in buckets.iter().take(AHEAD) {
            live(b).for_each(|i| b.slots[i].prefetch_key());
        }
        for g in 0..buckets.len() {
            if let Some(b) = buckets.get(g + AHEAD) {
                live(b).for_each(|i| b.slots[i].prefetch_key());
            }
            let b = &mut buckets[g];
            for i in live(b) {
                let e = std::mem::replace(&mut b.slots[i], T::vacant());
                let h = e.hash();
                match &mut split {
                    Some((bit, with_bit)) if h & *bit != 0 => with_bit.place(h, e, GROWTH_DIV),
                    _ => into.place(h, e, GROWTH_DIV),
                }
            }
        }
    }

    /// Rebuilds the segment for its live entries plus room to grow (this also clears the
    /// deleted slots).
    fn rebuild(&mut self, target_entries: usize) {
        let fresh = Segment::with_groups(self.depth, groups_for(target_entries.max(self.len)));
        let old = std::mem::replace(self, fresh);
        old.drain_into(self, None);
    }

    /// Makes room for one more entry in an EMPTY slot (a rebuild when at the load limit).
    #[inline]
    fn reserve_one(&mut self, growth_div: usize) {
        if self.used >= self.max_used() {
            let grown =
                (self.len + (self.len / growth_div).max(GROUP)).min(SEGMENT_MAX.max(self.len + 1));
            self.rebuild(grown);
        }
    }

    /// Every entry.
    fn iter(&self) -> impl Iterator<Item = &T> {
        self.buckets.iter().flat_map(|b| {
            b.ctrl
                .iter()
                .zip(b.slots.iter())
                .filter(|(c, _)| **c < 0x80)
                .map(|(_, e)| e)
        })
    }

    fn allocation_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<Bucket<T>>()
    }
}

/// The segmented table.
pub struct SegTable<T> {
    /// `1 << global_depth` slots, each the index of a segment.
    dir: Vec<u32>,
    global_depth: u32,
    segments: Vec<Segment<T>>,
    len: usize,
    /// Growth step divisor: [`GROWTH_DIV`], or [`BULK_GROWTH_DIV`] during a bulk load.
    growth_div: usize,
    /// Bumped by every call that can change an entry ([`SegTable::changes`]).
    changes: u64,
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
            segments: vec![Segment::with_groups(0, 1)],
            len: 0,
            growth_div: GROWTH_DIV,
            changes: 0,
        }
    }

    /// Starts (`true`) or ends a bulk load. During one, a full segment grows by half
    /// instead of by a sixteenth, which cuts the moves per inserted entry from about
    /// sixteen to about two when the final size is not known up front (a recovery scan).
    /// Ending it rebuilds every segment left with more room than normal growth leaves, so
    /// the table's memory afterwards is what normal growth would have left.
    pub fn set_bulk_load(&mut self, on: bool) {
        if on {
            self.growth_div = BULK_GROWTH_DIV;
            return;
        }
        self.growth_div = GROWTH_DIV;
        // Entries move: a SlotRef taken before is no longer valid.
        self.changes += 1;
        for seg in &mut self.segments {
            // Normal growth leaves a segment with 0 to 1/16 of room to grow, 1/32 on
            // average: a segment with more than the most is fitted to the average.
            if seg.groups() > groups_for(seg.len + seg.len / GROWTH_DIV) {
                seg.rebuild(seg.len + seg.len / (2 * GROWTH_DIV));
            }
        }
    }

    /// Starts bringing the control bytes of the home bucket of `hash` into the CPU cache,
    /// for a lookup or an insert of that hash soon after (a load pipelines its inserts
    /// this way, so that the memory latency of one overlaps the work of the others). Only
    /// a hint: correct whatever happens to the table in between.
    #[inline]
    pub fn prefetch_bucket(&self, hash: u64) {
        let seg = &self.segments[self.segment_of(hash)];
        prefetch(&seg.buckets[seg.home(hash)].ctrl);
    }

    /// Prefetches the slots of `hash`'s home bucket whose control byte matches its tag
    /// (after [`SegTable::prefetch_bucket`] brought the control bytes in): the second
    /// step of a batch lookup, so that the lookup itself finds the entry in the cache.
    #[inline]
    pub fn prefetch_slots(&self, hash: u64) {
        self.for_home_tag_matches(hash, |slot| prefetch(slot));
    }

    /// Prefetches the out-of-entry keys of the slots of `hash`'s home bucket whose control
    /// byte matches its tag (after [`SegTable::prefetch_slots`] brought the entries in): the
    /// third step of a batch lookup, so that the key comparison of a key longer than an
    /// entry holds does not wait for memory either.
    #[inline]
    pub fn prefetch_keys(&self, hash: u64) {
        self.for_home_tag_matches(hash, T::prefetch_key);
    }

    /// The second and third steps of a batch lookup, for `lookups` (a table and a hash
    /// each, whose buckets [`SegTable::prefetch_bucket`] has already been asked for): all
    /// the candidate entries, then all their out-of-entry keys, so that the loads of
    /// different lookups overlap.
    pub fn prefetch_lookups(lookups: &[(&SegTable<T>, u64)]) {
        for &(table, hash) in lookups {
            table.prefetch_slots(hash);
        }
        for &(table, hash) in lookups {
            table.prefetch_keys(hash);
        }
    }

    /// Calls `f` on each slot of `hash`'s home bucket whose control byte matches its tag
    /// (the candidates a lookup of `hash` compares first; vacant slots may be among them).
    #[inline]
    fn for_home_tag_matches(&self, hash: u64, mut f: impl FnMut(&T)) {
        let seg = &self.segments[self.segment_of(hash)];
        if seg.buckets.is_empty() {
            return;
        }
        let g = seg.home(hash);
        let mut m = match_tag(seg.group_word(g), tag(hash));
        while m != 0 {
            f(&seg.buckets[g].slots[lowest(m)]);
            m &= m - 1;
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Prepares an empty table for about `entries` entries (a load that knows its size, such
    /// as an index checkpoint): the directory and every segment start at the size the load
    /// leaves them, so each entry is placed once instead of being moved again by every
    /// growth step and split on the way (about twenty moves per entry at millions). No
    /// effect on a non-empty table or for fewer entries than one segment holds.
    pub fn reserve_empty(&mut self, entries: usize) {
        if self.len != 0 || entries < SEGMENT_MAX {
            return;
        }
        // Segments at three quarters of the split size leave room for the spread of a
        // uniform hash over them.
        let depth = entries
            .div_ceil(SEGMENT_MAX * 3 / 4)
            .next_power_of_two()
            .trailing_zeros();
        let count = 1usize << depth;
        let each = entries.div_ceil(count);
        let groups = groups_for(each + each / GROWTH_DIV);
        self.segments = (0..count)
            .map(|_| Segment::with_groups(depth, groups))
            .collect();
        self.dir = (0..count as u32).collect();
        self.global_depth = depth;
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
        let seg = &self.segments[self.segment_of(hash)];
        seg.find(hash, key).map(|i| seg.slot(i))
    }

    /// The entry for `key`, mutable.
    #[inline]
    pub fn get_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut T> {
        self.changes += 1;
        let s = self.segment_of(hash);
        let seg = &mut self.segments[s];
        seg.find(hash, key).map(move |i| seg.slot_mut(i))
    }

    /// Where `key`'s entry is ([`SegTable::at_quiet_mut`] finds it again without a probe
    /// while [`SegTable::changes`] stays the same), and the entry.
    #[inline]
    pub fn find_ref(&self, hash: u64, key: &[u8]) -> Option<(SlotRef, &T)> {
        let s = self.segment_of(hash);
        let seg = &self.segments[s];
        seg.find(hash, key).map(|i| {
            (
                SlotRef {
                    seg: s as u32,
                    slot: i as u32,
                },
                seg.slot(i),
            )
        })
    }

    /// The entry for `key`, mutable, without counting a change: only for bookkeeping no
    /// reader of [`SegTable::changes`] depends on (the access clock: never the key, the
    /// location or the expiry).
    #[inline]
    pub fn get_quiet_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut T> {
        let s = self.segment_of(hash);
        let seg = &mut self.segments[s];
        seg.find(hash, key).map(move |i| seg.slot_mut(i))
    }

    /// The entry at `r` (from [`SegTable::find_ref`], with no change since), mutable, as
    /// [`SegTable::get_quiet_mut`] gives it.
    #[inline]
    pub fn at_quiet_mut(&mut self, r: SlotRef) -> &mut T {
        self.segments[r.seg as usize].slot_mut(r.slot as usize)
    }

    /// The entry at `r` (from [`SegTable::find_ref`], with no change since), mutable, as
    /// [`SegTable::get_mut`] gives it (counted as a change).
    #[inline]
    pub fn at_mut(&mut self, r: SlotRef) -> &mut T {
        self.changes += 1;
        self.segments[r.seg as usize].slot_mut(r.slot as usize)
    }

    /// Inserts `entry`, whose hash is `hash`, for a key the caller found absent (with no
    /// change since, [`SegTable::changes`]): [`SegTable::insert`] without its lookup.
    pub fn insert_absent(&mut self, hash: u64, entry: T) {
        debug_assert_eq!(hash, entry.hash());
        self.changes += 1;
        let s = self.segment_of(hash);
        let seg = &mut self.segments[s];
        debug_assert!(
            seg.find(hash, entry.key()).is_none(),
            "insert_absent of a key present"
        );
        seg.place(hash, entry, self.growth_div);
        self.len += 1;
        if seg.len >= SEGMENT_MAX {
            self.split(s);
        }
    }

    /// Inserts `entry`, replacing and returning an entry with the same key.
    pub fn insert(&mut self, entry: T) -> Option<T> {
        self.changes += 1;
        let hash = entry.hash();
        let s = self.segment_of(hash);
        let seg = &mut self.segments[s];
        if let Some(i) = seg.find(hash, entry.key()) {
            return Some(std::mem::replace(seg.slot_mut(i), entry));
        }
        seg.place(hash, entry, self.growth_div);
        self.len += 1;
        if seg.len >= SEGMENT_MAX {
            self.split(s);
        }
        None
    }

    /// Removes and returns the entry for `key`.
    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<T> {
        self.changes += 1;
        let s = self.segment_of(hash);
        let seg = &mut self.segments[s];
        let i = seg.find(hash, key)?;
        let e = seg.take(i);
        self.len -= 1;
        Self::maybe_shrink(seg);
        Some(e)
    }

    /// A segment down to a quarter of what it can hold gives the memory back.
    fn maybe_shrink(seg: &mut Segment<T>) {
        if seg.groups() > 1 && seg.len * 4 < seg.max_used() {
            seg.rebuild(seg.len + seg.len / GROWTH_DIV);
        }
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        let changes = self.changes + 1;
        *self = Self::new();
        self.changes = changes;
    }

    /// A count that grows with every call that can change an entry (`get_mut`, `insert`,
    /// `remove`, `clear`, `retain`; also when nothing changed): equal counts before and
    /// after some work mean no entry changed in between.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Calls `f` on every entry.
    pub fn for_each(&self, mut f: impl FnMut(&T)) {
        for seg in &self.segments {
            for e in seg.iter() {
                f(e);
            }
        }
    }

    /// Keeps only the entries for which `keep` returns true.
    pub fn retain(&mut self, mut keep: impl FnMut(&mut T) -> bool) {
        self.changes += 1;
        for seg in &mut self.segments {
            let mut removed = 0;
            for i in 0..seg.slot_count() {
                if seg.ctrl(i) < 0x80 && !keep(seg.slot_mut(i)) {
                    drop(seg.take(i));
                    removed += 1;
                }
            }
            self.len -= removed;
            Self::maybe_shrink(seg);
        }
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
        // Each half gets about half the entries and room to grow by a step before its
        // first rebuild.
        let half = self.segments[s].len / 2;
        let groups = groups_for(half + half / GROWTH_DIV);
        let mut low = Segment::with_groups(new_depth, groups);
        let mut high = Segment::with_groups(new_depth, groups);
        let old = std::mem::replace(&mut self.segments[s], Segment::with_groups(new_depth, 1));
        old.drain_into(&mut low, Some((bit, &mut high)));
        self.segments[s] = low;
        let new_index = self.segments.len() as u32;
        self.segments.push(high);
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
            let mut items: Vec<(u64, &T)> = seg
                .iter()
                .map(|e| (e.hash(), e))
                .filter(|(h, _)| *h >= pos)
                .collect();
            let want = count.saturating_sub(visited).max(1);
            if items.len() > want {
                items.select_nth_unstable_by_key(want - 1, |(h, _)| *h);
                let cut = items[want - 1].0 | granule_mask;
                for (h, e) in items {
                    if h <= cut {
                        f(e);
                    }
                }
                return cut.checked_add(1);
            }
            visited += items.len();
            for (_, e) in items {
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
            + self.segments.len() * std::mem::size_of::<Segment<T>>()
            + self
                .segments
                .iter()
                .map(|s| s.allocation_bytes())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    struct E(Vec<u8>, u64);
    impl Keyed for E {
        fn key(&self) -> &[u8] {
            &self.0
        }
        fn hash(&self) -> u64 {
            self.1
        }
        fn vacant() -> Self {
            E(Vec::new(), 0)
        }
    }
    fn e(k: &str) -> E {
        E(k.as_bytes().to_vec(), hash_key(k.as_bytes()))
    }
    fn h(k: &str) -> u64 {
        hash_key(k.as_bytes())
    }

    #[test]
    fn group_matches_are_exact_for_free_slots() {
        let mut bytes = [0u8; GROUP];
        bytes[0] = EMPTY;
        bytes[3] = DELETED;
        bytes[4] = 0x7F;
        bytes[5] = 0x01;
        bytes[15] = EMPTY;
        let w = u128::from_le_bytes(bytes);
        let empties: Vec<usize> = (0..GROUP)
            .filter(|i| match_empty(w) >> (i * 8 + 7) & 1 == 1)
            .collect();
        assert_eq!(empties, vec![0, 15]);
        let free: Vec<usize> = (0..GROUP)
            .filter(|i| match_free(w) >> (i * 8 + 7) & 1 == 1)
            .collect();
        assert_eq!(free, vec![0, 3, 15]);
        // A tag match may have false positives but never misses.
        let m = match_tag(w, 0x01);
        assert_eq!(m >> (5 * 8 + 7) & 1, 1);
        assert_eq!(lowest(match_tag(w, 0x7F)), 4);
    }

    #[test]
    fn a_reserved_table_takes_its_entries_without_growing() {
        let mut t = SegTable::new();
        t.reserve_empty(100_000);
        let segments = t.segments.len();
        let bytes = t.allocation_bytes();
        assert!(segments >= 16, "{segments} segments for 100k entries");
        for i in 0..100_000 {
            assert!(t.insert(e(&format!("r{i}"))).is_none());
        }
        assert_eq!(t.len(), 100_000);
        for i in 0..100_000 {
            let k = format!("r{i}");
            assert!(t.get(h(&k), k.as_bytes()).is_some(), "{k}");
        }
        // No split, and at most a few segments grew past their start size.
        assert_eq!(t.segments.len(), segments);
        assert!(
            t.allocation_bytes() < bytes + bytes / 8,
            "{} bytes after the load, {bytes} reserved",
            t.allocation_bytes()
        );
        // A reserved table keeps working as any other: more inserts split, removes shrink.
        for i in 100_000..300_000 {
            t.insert(e(&format!("r{i}")));
        }
        assert!(t.segments.len() > segments);
        for i in 0..300_000 {
            let k = format!("r{i}");
            assert!(t.remove(h(&k), k.as_bytes()).is_some(), "{k}");
        }
        assert!(t.is_empty());
        // Only an empty table is reserved.
        t.insert(e("x"));
        let n = t.segments.len();
        t.reserve_empty(1_000_000);
        assert_eq!(t.segments.len(), n);
    }

    /// `changes` grows with every call that can change an entry, never with reads, and
    /// never goes back (not even when `clear` starts a new table).
    #[test]
    fn changes_count_every_mutating_call() {
        let mut t = SegTable::new();
        let mut last = t.changes();
        let mut bumped = |t: &SegTable<E>, what: &str| {
            assert!(t.changes() > last, "{what} did not count");
            last = t.changes();
        };
        for i in 0..2000 {
            t.insert(e(&format!("k{i}")));
        }
        bumped(&t, "insert");
        let before = t.changes();
        assert!(t.get(h("k1"), b"k1").is_some());
        t.for_each(|_| {});
        assert_eq!(t.changes(), before, "reads count nothing");
        t.get_mut(h("k1"), b"k1").unwrap().1 = h("k1");
        bumped(&t, "get_mut");
        t.remove(h("k2"), b"k2");
        bumped(&t, "remove");
        t.retain(|_| true);
        bumped(&t, "retain");
        t.insert_absent(h("new"), e("new"));
        bumped(&t, "insert_absent");
        let (r, _) = t.find_ref(h("new"), b"new").unwrap();
        t.at_mut(r);
        bumped(&t, "at_mut");
        t.set_bulk_load(true);
        t.set_bulk_load(false);
        bumped(&t, "the end of a bulk load");
        t.clear();
        bumped(&t, "clear");
        assert!(t.is_empty());
    }

    #[test]
    fn insert_absent_across_splits_finds_every_key() {
        let mut t = SegTable::new();
        for i in 0..30_000 {
            let k = format!("key:{i}");
            assert!(t.get(h(&k), k.as_bytes()).is_none());
            t.insert_absent(h(&k), e(&k));
        }
        assert_eq!(t.len(), 30_000);
        for i in 0..30_000 {
            let k = format!("key:{i}");
            assert!(t.get(h(&k), k.as_bytes()).is_some(), "{k}");
        }
    }

    #[test]
    fn insert_get_remove_across_splits() {
        let mut t = SegTable::new();
        for i in 0..50_000 {
            assert!(t.insert(e(&format!("k{i}"))).is_none());
        }
        assert_eq!(t.len(), 50_000);
        assert!(t.global_depth >= 2);
        for i in 0..50_000 {
            let k = format!("k{i}");
            assert!(t.get(h(&k), k.as_bytes()).is_some());
        }
        assert!(t.insert(e("k7")).is_some());
        for i in (0..50_000).step_by(2) {
            let k = format!("k{i}");
            assert!(t.remove(h(&k), k.as_bytes()).is_some());
        }
        assert_eq!(t.len(), 25_000);
        assert!(t.get(h("k0"), b"k0").is_none());
        assert!(t.get(h("k1"), b"k1").is_some());
        let mut n = 0;
        t.for_each(|_| n += 1);
        assert_eq!(n, 25_000);
    }

    /// Random inserts, overwrites and removes against a std HashMap, with many deletions
    /// in full groups (DELETED slots) and shrinking segments.
    #[test]
    fn matches_a_model_under_churn() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut t: SegTable<E> = SegTable::new();
        let mut model: HashMap<String, ()> = HashMap::new();
        for round in 0..300_000u32 {
            let k = format!("key:{}", rng.random_range(0..20_000u32));
            // Phases: grow, churn, shrink, grow again.
            let p_insert = match round / 75_000 {
                0 => 0.9,
                1 => 0.5,
                2 => 0.1,
                _ => 0.7,
            };
            if rng.random_bool(p_insert) {
                assert_eq!(t.insert(e(&k)).is_some(), model.insert(k, ()).is_some());
            } else {
                assert_eq!(
                    t.remove(h(&k), k.as_bytes()).is_some(),
                    model.remove(&k).is_some()
                );
            }
            assert_eq!(t.len(), model.len());
            if round % 25_000 == 0 {
                for k in model.keys() {
                    assert!(t.get(h(k), k.as_bytes()).is_some(), "{k} lost");
                }
            }
        }
        for i in 0..20_000 {
            let k = format!("key:{i}");
            assert_eq!(t.get(h(&k), k.as_bytes()).is_some(), model.contains_key(&k));
        }
        t.retain(|x| x.0.ends_with(b"7"));
        let kept = model.keys().filter(|k| k.ends_with('7')).count();
        assert_eq!(t.len(), kept);
        for k in model.keys() {
            assert_eq!(t.get(h(k), k.as_bytes()).is_some(), k.ends_with('7'));
        }
    }

    /// The point of the segment sizing: slots per entry stay near the load limit at every
    /// size (a power-of-two table averages about 1.6 slots per entry).
    #[test]
    fn segments_stay_full() {
        let mut t = SegTable::new();
        let mut worst: f64 = 0.0;
        for i in 0..400_000u32 {
            t.insert(e(&i.to_string()));
            if i > 20_000 && i % 10_007 == 0 {
                let slots: usize = t.segments.iter().map(|s| s.slot_count()).sum();
                worst = worst.max(slots as f64 / t.len() as f64);
            }
        }
        assert!(worst < 1.25, "{worst:.3} slots per entry");
    }

    /// A bulk load (growth by half) ends with the memory normal growth leaves, every entry
    /// findable, in random and in hash order.
    #[test]
    fn a_bulk_load_ends_as_compact_as_normal_growth() {
        for sorted in [false, true] {
            let mut keys: Vec<String> = (0..300_000u32).map(|i| format!("key:{i}")).collect();
            if sorted {
                keys.sort_by_key(|k| h(k));
            }
            let mut normal = SegTable::new();
            let mut bulk = SegTable::new();
            bulk.set_bulk_load(true);
            for k in &keys {
                normal.insert(e(k));
                bulk.insert(e(k));
            }
            let during = bulk.allocation_bytes();
            bulk.set_bulk_load(false);
            let (n, b) = (normal.allocation_bytes(), bulk.allocation_bytes());
            assert!(
                during > b,
                "sorted={sorted}: the end of the load fitted nothing"
            );
            assert!(
                (b as f64) < n as f64 * 1.02,
                "sorted={sorted}: bulk {b} bytes vs normal {n}"
            );
            assert_eq!(bulk.len(), keys.len());
            for k in keys.iter().step_by(7) {
                assert!(bulk.get(h(k), k.as_bytes()).is_some(), "{k} lost");
            }
            // After the load, growth is the normal step again.
            for i in 0..50_000u32 {
                bulk.insert(e(&format!("more:{i}")));
            }
            let slots: usize = bulk.segments.iter().map(|s| s.slot_count()).sum();
            assert!((slots as f64 / bulk.len() as f64) < 1.25);
        }
    }

    /// Removing and re-adding keys in a full segment leaves DELETED slots; the segment is
    /// rebuilt rather than probing ever longer.
    #[test]
    fn deleted_slots_are_reclaimed() {
        let mut t = SegTable::new();
        for i in 0..5_000 {
            t.insert(e(&format!("a{i}")));
        }
        for round in 0..50 {
            for i in 0..5_000 {
                let k = format!("a{i}");
                assert!(t.remove(h(&k), k.as_bytes()).is_some(), "round {round}");
                t.insert(e(&format!("a{i}")));
            }
        }
        let seg = &t.segments[0];
        assert!(seg.used <= seg.max_used());
        assert_eq!(t.len(), 5_000);
        assert!(t.allocation_bytes() < 5_000 * 64);
    }

    /// Keys inserted in hash order make every split send all entries to one half.
    #[test]
    fn inserts_in_hash_order_split_without_overfilling() {
        let mut keys: Vec<String> = (0..60_000).map(|i| format!("h{i}")).collect();
        keys.sort_by_key(|k| h(k));
        let mut t = SegTable::new();
        for k in &keys {
            t.insert(e(k));
        }
        assert_eq!(t.len(), keys.len());
        for k in &keys {
            assert!(t.get(h(k), k.as_bytes()).is_some(), "{k} lost");
        }
        for seg in &t.segments {
            assert!(seg.used <= seg.max_used());
        }
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

#[cfg(test)]
mod speed {
    use super::super::entry::{Entry, PackedLoc};
    use super::*;
    use skerry_store::Location;
    use std::time::Instant;

    /// `cargo test --release -p skerry-server --lib table_speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn table_speed() {
        let n: u32 = std::env::var("N")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(10_000_000);
        let loc = PackedLoc::pack(&Location {
            device: 0,
            block: 1,
            offset_bytes: 8,
            len_bytes: 8,
        });
        let mut t: SegTable<Entry> = SegTable::new();
        let start = Instant::now();
        for i in 1..=n {
            t.insert(Entry::new(i.to_string().as_bytes(), loc, 0, 0));
        }
        let fill = start.elapsed();
        let keys: Vec<String> = (0..2_000_000u64)
            .map(|i| ((i * 2_654_435_761) % n as u64 + 1).to_string())
            .collect();
        let start = Instant::now();
        let mut found = 0;
        for k in &keys {
            found += t.get(hash_key(k.as_bytes()), k.as_bytes()).is_some() as usize;
        }
        let get = start.elapsed();
        let start = Instant::now();
        let mut miss = 0;
        for k in &keys {
            let k = format!("x{k}");
            miss += t.get(hash_key(k.as_bytes()), k.as_bytes()).is_none() as usize;
        }
        let missing = start.elapsed();
        let slots: usize = t.segments.iter().map(|s| s.slot_count()).sum();
        println!(
            "n={n} fill {:.0} ns/insert, get {:.0} ns (found {found}), miss {:.0} ns ({miss}), {:.2} B/entry, {:.3} load, {} segments",
            fill.as_nanos() as f64 / n as f64,
            get.as_nanos() as f64 / keys.len() as f64,
            missing.as_nanos() as f64 / keys.len() as f64,
            t.allocation_bytes() as f64 / n as f64,
            n as f64 / slots as f64,
            t.segments.len()
        );
    }
}
