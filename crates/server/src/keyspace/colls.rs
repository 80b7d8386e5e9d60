//! The decoded-collection cache: collections decoded (or written) for earlier commands,
//! keyed like the read buffer by record location and block sequence, so a stale copy is
//! never found once the key moves on. A command that finds its collection here neither
//! reads the device nor decodes. It is only a cache: the record on the device is always the
//! copy of record, and an entry taken out by a handler that then fails is simply gone.
//!
//! Eviction (oldest first, past [`BUDGET_BYTES`]) happens only in [`CollCache::make_room`],
//! which the keyspace calls before a command's residency check, never while a handler
//! runs: a collection found resident stays until the command is done.

use std::collections::VecDeque;

use hashbrown::HashMap;

use crate::coll::Coll;

/// A cache key: packed location bits and the block's sequence.
pub type CollKey = (u64, u64);

/// RAM budget of one worker's decoded collections. The collection decoded or written last
/// is never evicted, so one bigger than the budget still stays while it is in use.
pub const BUDGET_BYTES: usize = 128 << 20;

/// See the module documentation.
pub struct CollCache {
    /// Boxed: a table of small collections grows (and moves) pointers, not collections.
    map: HashMap<CollKey, (Box<Coll>, usize, u64), foldhash::fast::FixedState>,
    order: VecDeque<(CollKey, u64)>,
    bytes: usize,
    next: u64,
    budget_bytes: usize,
}

impl Default for CollCache {
    /// A cache of [`BUDGET_BYTES`], or of `SKERRY_DECODED_COLL_BYTES` when that is set (for
    /// tests: a tiny budget evicts every collection but the one in use, so that the next
    /// command on another reads it again, partially for a grouped stream).
    fn default() -> Self {
        let budget = std::env::var("SKERRY_DECODED_COLL_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(BUDGET_BYTES);
        CollCache::with_budget(budget)
    }
}

impl CollCache {
    /// An empty cache holding up to about `budget_bytes`.
    pub fn with_budget(budget_bytes: usize) -> Self {
        CollCache {
            map: HashMap::default(),
            order: VecDeque::new(),
            bytes: 0,
            next: 0,
            budget_bytes,
        }
    }

    /// True when the collection at `k` is here.
    pub fn contains(&self, k: CollKey) -> bool {
        self.map.contains_key(&k)
    }

    /// The collection at `k`.
    pub fn get(&self, k: CollKey) -> Option<&Coll> {
        self.map.get(&k).map(|(c, _, _)| &**c)
    }

    /// Takes the collection at `k` out.
    pub fn take(&mut self, k: CollKey) -> Option<Coll> {
        let (c, bytes, _) = self.map.remove(&k)?;
        self.bytes -= bytes;
        Some(*c)
    }

    /// Drops the collection at `k`, if here.
    pub fn remove(&mut self, k: CollKey) {
        self.take(k);
    }

    /// Puts `c` under `k` (replacing what was there).
    pub fn insert(&mut self, k: CollKey, c: Coll) {
        let bytes = c.ram_bytes();
        self.remove(k);
        self.bytes += bytes;
        let n = self.next;
        self.next += 1;
        self.map.insert(k, (Box::new(c), bytes, n));
        self.order.push_back((k, n));
        // Queue entries of keys taken or replaced since: drop them when they pile up.
        if self.order.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.order
                .retain(|(k, n)| map.get(k).is_some_and(|(_, _, m)| m == n));
        }
    }

    /// Evicts the oldest collections past the budget.
    pub fn make_room(&mut self) {
        while self.bytes > self.budget_bytes {
            let Some((k, n)) = self.order.pop_front() else {
                break;
            };
            if self.map.get(&k).is_some_and(|(_, _, m)| *m == n) {
                if n + 1 == self.next {
                    // The newest: kept (see [`BUDGET_BYTES`]).
                    self.order.push_front((k, n));
                    break;
                }
                self.remove(k);
            }
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::set::Set;

    fn set_of(n: usize) -> Coll {
        let mut s = Set::default();
        for i in 0..n {
            s.insert(format!("member-{i}").as_bytes());
        }
        Coll::Set(s)
    }

    #[test]
    fn evicts_oldest_only_in_make_room() {
        let budget = 16 << 20;
        let mut c = CollCache::with_budget(budget);
        let big = set_of(20_000);
        let per = big.ram_bytes();
        let fit = budget / per;
        for i in 0..fit as u64 + 3 {
            c.insert((i, 1), big.clone());
        }
        assert!(c.bytes() > budget, "no eviction while inserting");
        assert!(c.contains((0, 1)));
        c.make_room();
        assert!(c.bytes() <= budget);
        assert!(!c.contains((0, 1)), "oldest went first");
        assert!(c.contains((fit as u64 + 2, 1)), "newest kept");
        let taken = c.take((fit as u64 + 2, 1)).unwrap();
        assert_eq!(taken, big);
        assert!(!c.contains((fit as u64 + 2, 1)));
    }

    #[test]
    fn the_newest_collection_stays_even_over_budget() {
        let mut c = CollCache::with_budget(1 << 10);
        c.insert((1, 1), set_of(1000));
        c.insert((2, 1), set_of(1000));
        c.make_room();
        assert!(!c.contains((1, 1)));
        assert!(c.contains((2, 1)), "the one in use is kept");
        c.make_room();
        assert!(c.contains((2, 1)));
    }
}
