//! The per-worker value cache: an S3-FIFO cache (Yang et al., SOSP 2023) of values read
//! from the data devices, keyed like the read buffer by (packed location, block sequence).
//!
//! A key's new version always has a new location, and a reused block a new block sequence,
//! so an entry can never be served for anything but the exact record it was read from:
//! overwritten, deleted and moved values are never looked up again. The keyspace still frees
//! an overwritten or deleted value at once ([`ValueCache::invalidate`]) rather than letting
//! it age out through the small FIFO; moved ones age out. The cache never holds the only copy of anything: values enter it only after they were read
//! from the device or decoded from the writer's staging images.
//!
//! Policy (S3-FIFO): new entries go to a small FIFO (~10% of the bytes); a hit only bumps a
//! 2-bit frequency (no list moves). An entry reaching the small FIFO's tail moves to the
//! main FIFO if it was hit while there, else it is evicted and its fingerprint goes to a
//! ghost FIFO; an entry whose fingerprint is in the ghost FIFO when it is inserted again
//! goes straight to the main FIFO. The main FIFO is a CLOCK: its tail entry is re-queued
//! with its frequency decremented while it is non-zero, else evicted. A one-pass scan over
//! cold values therefore only churns the small FIFO and never evicts the re-read hot set.
//!
//! Bytes are counted honestly: every entry is charged its value's allocation plus a fixed
//! overhead for its map slot, its queue slot and the `Rc` header; every ghost entry is
//! charged too. The charge never exceeds the capacity.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::rc::Rc;

/// What an entry is keyed by: the packed location bits and the block's sequence.
pub type CacheKey = (u64, u64);

/// A value shared by the cache, the read buffer and the handler: a `Vec` of exactly the
/// value's length (a 1 KiB value takes a 1 KiB allocation; an `Rc<[u8]>` would add its
/// 16-byte counts to the same allocation and land in mimalloc's 1280-byte size class).
pub type SharedValue = Rc<Vec<u8>>;

/// Per-entry bytes charged besides the value's allocations: the map slot (key 16 bytes,
/// pointer 8, frequency and queue flag: 32 bytes) over the hash table's lowest load factor
/// (7/16 right after it grows) plus its control byte (74), the queue slots (16 bytes; the
/// small and the main FIFO each grow to hold every entry at some point, by doubling: 64),
/// and 40 for the allocator's partly used pages, measured: with this charge RSS grew by at
/// most the cache's used bytes for 100-byte, 1 KiB and 4000-byte values
/// (docs/storage-engine.md, "Value cache").
pub const ENTRY_OVERHEAD_BYTES: usize = 32 * 16 / 7 + 1 + 4 * 16 + 40;

/// Bytes charged per ghost fingerprint: 8 in the queue and 16 in the count map, over the
/// same growth factors.
pub const GHOST_ENTRY_BYTES: usize = 2 * 8 + 16 * 16 / 7 + 1;

/// The size class mimalloc serves an allocation of `size` bytes from: exact 8-byte words up
/// to 64 bytes, then four classes per power of two (at most 25% over the size).
pub fn allocator_size_bytes(size: usize) -> usize {
    let words = size.div_ceil(8);
    if words <= 8 {
        return words * 8;
    }
    let v = words - 1;
    let top_bit = usize::BITS - 1 - v.leading_zeros();
    let step_words = 1usize << (top_bit - 2);
    ((v >> (top_bit - 2)) + 1) * step_words * 8
}

/// The bytes a cached value of `len` bytes takes from the allocator: its `Vec` buffer and
/// the `Rc` box (two counts and the `Vec`: 40 bytes).
pub fn value_alloc_bytes(len: usize) -> usize {
    let buffer = if len == 0 {
        0
    } else {
        allocator_size_bytes(len)
    };
    buffer + allocator_size_bytes(40)
}

/// Starts bringing the first bytes of `value` into the CPU cache (a reply will copy it).
#[inline]
pub fn prefetch_value(value: &SharedValue) {
    for at in (0..value.len().min(PREFETCH_VALUE_BYTES)).step_by(64) {
        super::table::prefetch(&value[at]);
    }
}

/// Bytes of a value [`prefetch_value`] brings in; the rest of a longer value streams (the
/// hardware prefetcher follows a sequential copy). All of a 1 KiB value: with only its
/// first 256 bytes prefetched, the reply's copy of the rest was 16% of a cached GET's CPU
/// at pipeline 16, and prefetching 2 KiB made those GETs 15% cheaper (decision 0024).
const PREFETCH_VALUE_BYTES: usize = 2048;

/// Counters and sizes of one cache (INFO storage sums them over the workers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// The budget in bytes (0: disabled).
    pub capacity_bytes: u64,
    /// Bytes charged for the entries and ghost fingerprints held now.
    pub used_bytes: u64,
    /// Values held now.
    pub entries: u64,
    /// Lookups that found their value.
    pub hits: u64,
    /// Lookups that did not (while the cache was enabled).
    pub misses: u64,
    /// Values evicted to make room (not counting those dropped by a resize to 0).
    pub evictions: u64,
}

#[derive(Debug)]
struct Slot {
    value: SharedValue,
    /// Hits since insertion (or since the last pass of the main FIFO's hand), at most 3.
    freq: u8,
    /// In the main FIFO (else in the small one).
    main: bool,
}

/// Maximum of the 2-bit frequency.
const MAX_FREQ: u8 = 3;

/// One worker's value cache (S3-FIFO). Not thread-safe: each worker owns its own.
#[derive(Debug, Default)]
pub struct ValueCache {
    capacity_bytes: usize,
    used_bytes: usize,
    small_bytes: usize,
    map: HashMap<CacheKey, Slot, foldhash::fast::FixedState>,
    small: VecDeque<CacheKey>,
    main: VecDeque<CacheKey>,
    /// Fingerprints of entries evicted from the small FIFO, oldest first.
    ghost: VecDeque<u64>,
    /// How many times each fingerprint is in `ghost`.
    ghost_count: HashMap<u64, u32, foldhash::fast::FixedState>,
    /// An empty value, put in the place of an invalidated one ([`ValueCache::invalidate`]).
    empty: SharedValue,
    hits: u64,
    misses: u64,
    evictions: u64,
    /// Lookups and hits of the current admission window ([`ADMISSION_WINDOW`]).
    window_lookups: u32,
    window_hits: u32,
    /// Misses admitted: one in `admit_every` (0 or 1: all; [`SAMPLED_ADMISSION`] while the
    /// last window's hit ratio was under 1/8); `admit_tick` counts the inserts offered.
    admit_every: u32,
    admit_tick: u32,
}

/// Lookups per admission window.
const ADMISSION_WINDOW: u32 = 1 << 16;

/// While the cache hits less than one lookup in 8 (uniform traffic over data several times
/// the cache), only one miss in this many is admitted. Each admission costs an insert, an
/// eviction and ghost bookkeeping (together about 10% of a device GET's CPU when every
/// miss was admitted), and under uniform traffic the hit ratio is the cached share of the
/// data whatever is admitted. Skewed traffic keeps the hit ratio above the threshold and
/// every miss admitted; a cold cache under skewed traffic still admits its hot keys within
/// a few misses each.
const SAMPLED_ADMISSION: u32 = 8;

impl ValueCache {
    /// An empty cache with a budget of `capacity_bytes` (0: disabled).
    pub fn new(capacity_bytes: usize) -> Self {
        ValueCache {
            capacity_bytes,
            ..Default::default()
        }
    }

    /// True when the cache has a non-zero budget.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.capacity_bytes != 0
    }

    /// Bytes charged for what the cache holds now (entries and ghosts).
    #[inline]
    pub fn used_bytes(&self) -> usize {
        self.used_bytes
    }

    /// The bytes charged for a value of `len` bytes.
    #[inline]
    pub fn charge_bytes(len: usize) -> usize {
        value_alloc_bytes(len) + ENTRY_OVERHEAD_BYTES
    }

    /// The largest charge admitted: the small FIFO's share, so that one value never
    /// flushes the whole small FIFO.
    fn max_charge_bytes(&self) -> usize {
        self.capacity_bytes / 10
    }

    /// Looks `key` up, counting a hit (and bumping its frequency) or a miss.
    #[inline]
    pub fn get(&mut self, key: CacheKey) -> Option<&SharedValue> {
        if !self.enabled() {
            return None;
        }
        self.window_lookups += 1;
        if self.window_lookups >= ADMISSION_WINDOW {
            self.admit_every = if self.window_hits * 8 < self.window_lookups {
                SAMPLED_ADMISSION
            } else {
                1
            };
            self.window_lookups = 0;
            self.window_hits = 0;
        }
        match self.map.get_mut(&key) {
            // An invalidated record's slot waiting for the FIFOs: never served.
            Some(slot) if Rc::ptr_eq(&slot.value, &self.empty) => {
                self.misses += 1;
                None
            }
            Some(slot) => {
                self.hits += 1;
                self.window_hits += 1;
                slot.freq = (slot.freq + 1).min(MAX_FREQ);
                Some(&slot.value)
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Frees the value cached under `key` now: its record was overwritten or deleted, so
    /// it is never looked up again. Its slot stays (with an empty value, charged only its
    /// overhead) until the FIFOs reach it, as they would have, but its bytes go back to the
    /// allocator at once instead of after a pass through the small FIFO (10% of the budget:
    /// gigabytes of dead versions under overwrites, each needing fresh pages).
    pub fn invalidate(&mut self, key: CacheKey) {
        if self.map.is_empty() {
            return;
        }
        let empty = self.empty.clone();
        if let Some(slot) = self.map.get_mut(&key) {
            let freed = Self::charge_bytes(slot.value.len()) - Self::charge_bytes(0);
            slot.value = empty;
            slot.freq = 0;
            self.used_bytes -= freed;
            if !slot.main {
                self.small_bytes -= freed;
            }
        }
    }

    /// Looks `key` up without counting anything or touching its frequency.
    #[inline]
    pub fn peek(&self, key: CacheKey) -> Option<&SharedValue> {
        if self.map.is_empty() {
            return None;
        }
        self.map
            .get(&key)
            .map(|s| &s.value)
            .filter(|v| !Rc::ptr_eq(v, &self.empty))
    }

    /// True when nothing is cached.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// True when `key` is cached (for tests and assertions).
    pub fn contains(&self, key: CacheKey) -> bool {
        self.map.contains_key(&key)
    }

    /// True when `key` is cached in the main FIFO.
    pub fn in_main(&self, key: CacheKey) -> bool {
        self.map.get(&key).is_some_and(|s| s.main)
    }

    fn fingerprint(key: CacheKey) -> u64 {
        foldhash::fast::FixedState::with_seed(0x5eed_cace).hash_one(key)
    }

    /// Inserts `value` under `key` (nothing happens when it is already there, the cache is
    /// disabled, or the value is larger than the small FIFO's share), evicting as needed.
    pub fn insert(&mut self, key: CacheKey, value: SharedValue) {
        let charge = Self::charge_bytes(value.len());
        if !self.enabled() || charge > self.max_charge_bytes() {
            return;
        }
        if self.admit_every > 1 {
            self.admit_tick = self.admit_tick.wrapping_add(1);
            if !self.admit_tick.is_multiple_of(self.admit_every) {
                return;
            }
        }
        if self.map.contains_key(&key) {
            return;
        }
        while self.used_bytes + charge > self.capacity_bytes {
            if !self.evict_one() {
                return;
            }
        }
        let fp = Self::fingerprint(key);
        let main = self.ghost_count.contains_key(&fp);
        if main {
            self.main.push_back(key);
        } else {
            self.small.push_back(key);
            self.small_bytes += charge;
        }
        self.map.insert(
            key,
            Slot {
                value,
                freq: 0,
                main,
            },
        );
        self.used_bytes += charge;
    }

    /// Evicts one value (or, with no value left, one ghost fingerprint); false when the
    /// cache holds nothing at all.
    fn evict_one(&mut self) -> bool {
        let small_share = self.capacity_bytes / 10;
        if !self.small.is_empty()
            && (self.small_bytes >= small_share || self.main.is_empty())
            && self.evict_small()
        {
            return true;
        }
        if self.evict_main() {
            return true;
        }
        self.pop_ghost()
    }

    /// Takes the small FIFO's tail: to the main FIFO if it was hit, else out (its
    /// fingerprint to the ghost FIFO). Repeats until one value left the cache or the small
    /// FIFO is empty; true when one left.
    fn evict_small(&mut self) -> bool {
        while let Some(key) = self.small.pop_front() {
            let slot = self.map.get_mut(&key).expect("small FIFO entry in the map");
            let charge = Self::charge_bytes(slot.value.len());
            self.small_bytes -= charge;
            if slot.freq >= 1 {
                slot.main = true;
                self.main.push_back(key);
                continue;
            }
            self.map.remove(&key);
            self.used_bytes -= charge;
            self.evictions += 1;
            self.push_ghost(Self::fingerprint(key));
            return true;
        }
        false
    }

    /// The main FIFO's CLOCK hand: re-queues hit entries (frequency decremented), evicts
    /// the first one with frequency 0; true when one left.
    fn evict_main(&mut self) -> bool {
        while let Some(key) = self.main.pop_front() {
            let slot = self.map.get_mut(&key).expect("main FIFO entry in the map");
            if slot.freq > 0 {
                slot.freq -= 1;
                self.main.push_back(key);
                continue;
            }
            let charge = Self::charge_bytes(slot.value.len());
            self.map.remove(&key);
            self.used_bytes -= charge;
            self.evictions += 1;
            return true;
        }
        false
    }

    /// Adds a ghost fingerprint; the ghost FIFO holds at most as many fingerprints as the
    /// cache holds values (at least 64).
    fn push_ghost(&mut self, fp: u64) {
        let max = self.map.len().max(64);
        while self.ghost.len() >= max {
            self.pop_ghost();
        }
        self.ghost.push_back(fp);
        *self.ghost_count.entry(fp).or_insert(0) += 1;
        self.used_bytes += GHOST_ENTRY_BYTES;
    }

    fn pop_ghost(&mut self) -> bool {
        let Some(fp) = self.ghost.pop_front() else {
            return false;
        };
        if let Some(n) = self.ghost_count.get_mut(&fp) {
            *n -= 1;
            if *n == 0 {
                self.ghost_count.remove(&fp);
            }
        }
        self.used_bytes -= GHOST_ENTRY_BYTES;
        true
    }

    /// Changes the budget: a smaller one evicts at once; 0 disables the cache and frees
    /// everything it held.
    pub fn set_capacity(&mut self, capacity_bytes: usize) {
        self.capacity_bytes = capacity_bytes;
        if capacity_bytes == 0 {
            let (hits, misses, evictions) = (self.hits, self.misses, self.evictions);
            *self = ValueCache {
                hits,
                misses,
                evictions,
                ..Default::default()
            };
            return;
        }
        let before = self.map.len();
        while self.used_bytes > self.capacity_bytes {
            if !self.evict_one() {
                break;
            }
        }
        if self.map.len() < before / 2 {
            self.map.shrink_to_fit();
            self.small.shrink_to_fit();
            self.main.shrink_to_fit();
            self.ghost.shrink_to_fit();
            self.ghost_count.shrink_to_fit();
        }
    }

    /// Clears the hit, miss and eviction counters (CONFIG RESETSTAT).
    pub fn reset_stats(&mut self) {
        self.hits = 0;
        self.misses = 0;
        self.evictions = 0;
    }

    /// Sizes and counters.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            capacity_bytes: self.capacity_bytes as u64,
            used_bytes: self.used_bytes as u64,
            entries: self.map.len() as u64,
            hits: self.hits,
            misses: self.misses,
            evictions: self.evictions,
        }
    }

    /// Checks the internal bookkeeping (tests).
    #[cfg(test)]
    fn check(&self) {
        assert!(self.used_bytes <= self.capacity_bytes || self.capacity_bytes == 0);
        assert_eq!(self.small.len() + self.main.len(), self.map.len());
        let small: usize = self
            .small
            .iter()
            .map(|k| Self::charge_bytes(self.map[k].value.len()))
            .sum();
        assert_eq!(small, self.small_bytes);
        let main: usize = self
            .main
            .iter()
            .map(|k| Self::charge_bytes(self.map[k].value.len()))
            .sum();
        assert_eq!(
            small + main + self.ghost.len() * GHOST_ENTRY_BYTES,
            self.used_bytes
        );
        assert!(self.small.iter().all(|k| !self.map[k].main));
        assert!(self.main.iter().all(|k| self.map[k].main));
        assert_eq!(
            self.ghost_count
                .values()
                .map(|&n| n as usize)
                .sum::<usize>(),
            self.ghost.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalidated_values_are_freed_and_never_served() {
        let mut c = ValueCache::new(10 << 20);
        let (a, b) = ((1, 1), (2, 1));
        c.insert(a, Rc::new(vec![7u8; 12_000]));
        c.insert(b, Rc::new(vec![8u8; 100]));
        let used = c.stats().used_bytes;
        c.invalidate(a);
        let freed = ValueCache::charge_bytes(12_000) - ValueCache::charge_bytes(0);
        assert_eq!(c.stats().used_bytes, used - freed as u64);
        assert!(c.get(a).is_none());
        assert!(c.peek(a).is_none());
        assert_eq!(c.get(b).map(|v| v.len()), Some(100));
        // Invalidating what is not cached, or twice, changes nothing.
        c.invalidate((3, 1));
        c.invalidate(a);
        assert_eq!(c.stats().used_bytes, used - freed as u64);
        // The dead slot leaves through the FIFOs with the right charge: filling the cache
        // evicts everything and the accounting ends at what is held.
        for i in 0..2000u64 {
            c.insert((100 + i, 1), Rc::new(vec![1u8; 10_000]));
        }
        assert!(c.stats().used_bytes <= 10 << 20);
        assert!(!c.contains(a));
    }

    fn val(len: usize, tag: u8) -> SharedValue {
        Rc::new(vec![tag; len])
    }

    #[test]
    fn allocator_size_classes() {
        assert_eq!(allocator_size_bytes(1), 8);
        assert_eq!(allocator_size_bytes(40), 40);
        assert_eq!(allocator_size_bytes(64), 64);
        assert_eq!(allocator_size_bytes(65), 80);
        assert_eq!(allocator_size_bytes(100), 112);
        assert_eq!(allocator_size_bytes(1024), 1024);
        assert_eq!(allocator_size_bytes(1040), 1280);
        assert_eq!(allocator_size_bytes(4096), 4096);
        for size in 1..100_000 {
            let c = allocator_size_bytes(size);
            assert!(c >= size && c <= size + size / 4 + 8, "{size} -> {c}");
        }
    }

    fn key(i: u64) -> CacheKey {
        (i, 7)
    }

    /// Reads `k` the way the server does: a lookup, and an insert after a miss.
    fn read(c: &mut ValueCache, k: CacheKey, len: usize) -> bool {
        if c.get(k).is_some() {
            return true;
        }
        c.insert(k, val(len, k.0 as u8));
        false
    }

    const LEN: usize = 1000;

    fn cap_for(entries: usize) -> usize {
        entries * ValueCache::charge_bytes(LEN)
    }

    /// Uniform reads over far more keys than the cache holds: after one window of almost
    /// only misses, one miss in `SAMPLED_ADMISSION` is admitted. Skewed reads (a hot set
    /// that fits) bring the hit ratio, and with it full admission, back.
    #[test]
    fn misses_are_sampled_while_the_cache_barely_hits() {
        let mut c = ValueCache::new(cap_for(1000));
        let mut rng = 12345u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for _ in 0..ADMISSION_WINDOW {
            read(&mut c, key(next() % 10_000_000), LEN);
        }
        assert_eq!(c.admit_every, SAMPLED_ADMISSION);
        let before = c.admit_tick;
        let inserted_before = c.stats().entries + c.stats().evictions;
        for _ in 0..80_000 {
            read(&mut c, key(next() % 10_000_000), LEN);
        }
        let offered = u64::from(c.admit_tick - before);
        let admitted = c.stats().entries + c.stats().evictions - inserted_before;
        assert!(offered > 70_000, "{offered} misses offered");
        assert!(
            admitted <= offered / u64::from(SAMPLED_ADMISSION) + 1,
            "{admitted} of {offered} misses admitted"
        );
        for i in 0..3 * u64::from(ADMISSION_WINDOW) {
            read(&mut c, key(i % 500), LEN);
        }
        assert!(c.admit_every <= 1, "admission still sampled");
        let s = c.stats();
        assert!(
            s.hits * 10 > (s.hits + s.misses) * 4,
            "hot set not cached: {s:?}"
        );
        c.check();
    }

    #[test]
    fn hits_return_the_inserted_value_and_count() {
        let mut c = ValueCache::new(cap_for(100));
        assert!(c.get(key(1)).is_none());
        c.insert(key(1), val(LEN, 1));
        assert_eq!(&c.get(key(1)).unwrap()[..], &[1u8; LEN][..]);
        assert!(
            c.get((1, 8)).is_none(),
            "another block sequence is another entry"
        );
        assert_eq!(c.peek(key(1)).map(|v| v.len()), Some(LEN));
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.entries), (1, 2, 1));
        assert_eq!(s.used_bytes, ValueCache::charge_bytes(LEN) as u64);
        c.check();
    }

    #[test]
    fn a_disabled_cache_holds_nothing_and_counts_nothing() {
        let mut c = ValueCache::new(0);
        c.insert(key(1), val(10, 1));
        assert!(c.get(key(1)).is_none());
        assert_eq!(c.stats(), CacheStats::default());
    }

    #[test]
    fn capacity_is_never_exceeded() {
        let cap = 200_000;
        let mut c = ValueCache::new(cap);
        let mut x: u64 = 12345;
        for i in 0..50_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = key(x % 3000);
            let len = (x >> 20) as usize % 4000;
            read(&mut c, k, len);
            assert!(c.stats().used_bytes <= cap as u64, "step {i}");
            if i % 997 == 0 {
                c.check();
            }
        }
        c.check();
        assert!(c.stats().evictions > 0);
        // Values over the small FIFO's share are not admitted.
        c.insert(key(99_999), val(cap / 10, 9));
        assert!(!c.contains(key(99_999)));
    }

    /// A one-pass scan over many cold keys (each read once) does not evict a hot set that is
    /// re-read meanwhile: the scan only churns the small FIFO, every hot re-read hits.
    #[test]
    fn a_scan_does_not_evict_the_hot_set() {
        let mut c = ValueCache::new(cap_for(1000));
        let hot: Vec<CacheKey> = (0..500).map(key).collect();
        for _ in 0..2 {
            for &k in &hot {
                read(&mut c, k, LEN);
            }
        }
        assert!(hot.iter().all(|&k| c.contains(k)));
        // 20,000 cold keys (20 times the cache), each read once, with a pass over the hot
        // set every 1,000. A FIFO or LRU of this size would miss every hot key on every
        // pass (1,000 cold keys push the whole hot set out).
        let mut hot_misses = 0;
        for i in 0..20_000u64 {
            assert!(!read(&mut c, key(1_000_000 + i), LEN), "cold keys are new");
            if i % 1000 == 999 {
                hot_misses += hot.iter().filter(|&&k| !read(&mut c, k, LEN)).count();
            }
        }
        c.check();
        assert_eq!(hot_misses, 0, "hot keys evicted by the scan");
        assert!(hot.iter().all(|&k| c.in_main(k)));
        assert!(c.stats().evictions >= 19_000, "the cold keys were evicted");
    }

    /// An entry evicted from the small FIFO without a hit leaves a ghost; read again while
    /// the ghost is remembered, it goes straight to the main FIFO.
    #[test]
    fn ghost_hits_promote_to_main() {
        let mut c = ValueCache::new(cap_for(100));
        c.insert(key(1), val(LEN, 1));
        assert!(!c.in_main(key(1)));
        // Push it out of the small FIFO with one-time keys.
        let mut i = 100;
        while c.contains(key(1)) {
            c.insert(key(i), val(LEN, 2));
            i += 1;
        }
        assert!(c.stats().evictions >= 1);
        c.insert(key(1), val(LEN, 1));
        assert!(c.in_main(key(1)), "a ghost hit goes to the main FIFO");
        // A key never seen goes to the small FIFO.
        c.insert(key(50_000), val(LEN, 3));
        assert!(c.contains(key(50_000)) && !c.in_main(key(50_000)));
        c.check();
    }

    /// An entry hit while in the small FIFO moves to the main FIFO when it reaches the tail.
    #[test]
    fn small_fifo_hits_move_to_main() {
        let mut c = ValueCache::new(cap_for(50));
        c.insert(key(1), val(LEN, 1));
        assert!(c.get(key(1)).is_some());
        for i in 100..300 {
            c.insert(key(i), val(LEN, 2));
        }
        assert!(c.in_main(key(1)));
        c.check();
    }

    #[test]
    fn shrinking_evicts_at_once_and_zero_frees_everything() {
        let mut c = ValueCache::new(cap_for(1000));
        for i in 0..1000 {
            read(&mut c, key(i), LEN);
        }
        assert_eq!(c.stats().entries, 1000);
        c.set_capacity(cap_for(100));
        assert!(c.stats().used_bytes <= cap_for(100) as u64);
        assert!(c.stats().entries <= 100);
        c.check();
        let hits = c.stats().hits;
        c.set_capacity(0);
        let s = c.stats();
        assert_eq!((s.entries, s.used_bytes, s.capacity_bytes), (0, 0, 0));
        assert_eq!(s.hits, hits, "counters survive a resize");
        assert!(c.get(key(1)).is_none());
        c.set_capacity(cap_for(10));
        c.insert(key(1), val(LEN, 1));
        assert!(c.get(key(1)).is_some());
    }
}
