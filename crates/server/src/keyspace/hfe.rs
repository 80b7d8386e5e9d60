//! Hash field expiry in the keyspace: which hashes have fields with an expiry, and when
//! the earliest of them is due, for the active expiry of hash fields (Redis's
//! `hexpires`, which its `activeExpireCycle` walks).
//!
//! The expiries themselves are in the hash records (see `coll/hash.rs`); this index only
//! points at the hashes, in RAM. It is kept by the writes of hashes: every hash a command
//! stores is noted with its earliest field expiry ([`Keyspace::store_coll`] calls
//! [`Keyspace::hfe_note_coll`]); a hash written from its bytes (RENAME, COPY, MOVE,
//! RESTORE, a lent key) whose record has field expiry on is noted as due at once, so the
//! next pass decodes it and learns its earliest expiry. An entry may be early (the field
//! was persisted or deleted since) or point at a key that is gone or no longer a hash:
//! the pass then corrects or drops it. After a restart the index is rebuilt by a
//! discovery walk over the keys ([`Keyspace::hfe_discover_step`]): each hash is noted as
//! due, decoded once by the pass, and kept only when it has a field with an expiry.

use std::collections::{BTreeSet, HashMap};

use super::table::hash_key;
use super::Keyspace;
use crate::coll::hash::FLAG_FIELD_TTL;
use crate::coll::{Coll, Thresholds, VALUE_TYPE_HASH};

/// Hashes with field expiries, by when their earliest field is due.
#[derive(Debug, Default)]
pub struct HfeIndex {
    /// (due Unix ms, db, key).
    due: BTreeSet<(i64, usize, Vec<u8>)>,
    /// The due time of each noted hash.
    at: HashMap<(usize, Vec<u8>), i64>,
    /// After a restart: the discovery walk's position (db, table scan position).
    discover: Option<(usize, u64)>,
}

impl HfeIndex {
    /// An index that starts with a discovery walk over the recovered keys.
    pub fn discovering() -> HfeIndex {
        HfeIndex {
            discover: Some((0, 0)),
            ..HfeIndex::default()
        }
    }

    /// Notes that the earliest field expiry of hash `key` is `due` (None: it has none).
    pub fn note(&mut self, db: usize, key: &[u8], due: Option<i64>) {
        let k = (db, key.to_vec());
        match due {
            Some(t) => {
                if let Some(old) = self.at.insert(k, t) {
                    if old == t {
                        return;
                    }
                    self.due.remove(&(old, db, key.to_vec()));
                }
                self.due.insert((t, db, key.to_vec()));
            }
            None => self.forget_key(k),
        }
    }

    fn forget_key(&mut self, k: (usize, Vec<u8>)) {
        if let Some(old) = self.at.remove(&k) {
            self.due.remove(&(old, k.0, k.1));
        }
    }

    /// Drops `key` (deleted).
    pub fn forget(&mut self, db: usize, key: &[u8]) {
        if !self.at.is_empty() {
            self.forget_key((db, key.to_vec()));
        }
    }

    /// Drops every hash of `db` (flushed).
    pub fn clear_db(&mut self, db: usize) {
        self.due.retain(|(_, d, _)| *d != db);
        self.at.retain(|(d, _), _| *d != db);
    }

    /// Databases `a` and `b` swapped (SWAPDB): their hashes follow them. A discovery walk
    /// that has reached either of them walks again from the first.
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        let other = |d: usize| {
            if d == a {
                b
            } else if d == b {
                a
            } else {
                d
            }
        };
        if self.at.keys().any(|(d, _)| *d == a || *d == b) {
            self.due = std::mem::take(&mut self.due)
                .into_iter()
                .map(|(t, d, k)| (t, other(d), k))
                .collect();
            self.at = std::mem::take(&mut self.at)
                .into_iter()
                .map(|((d, k), t)| ((other(d), k), t))
                .collect();
        }
        // A walk between the two swapped databases has seen one but not the other's keys:
        // it walks again from the first of them (noting a hash twice is harmless).
        let (lo, hi) = (a.min(b), a.max(b));
        if let Some((d, pos)) = self.discover.as_mut() {
            if (lo..=hi).contains(d) {
                *d = lo;
                *pos = 0;
            }
        }
    }

    /// Number of hashes noted.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// True when no hash is noted.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// Up to `max` hashes whose earliest field expiry is at or before `now_ms`, earliest
    /// first.
    pub fn due(&self, now_ms: i64, max: usize) -> Vec<(usize, Vec<u8>)> {
        self.due
            .iter()
            .take_while(|(t, _, _)| *t <= now_ms)
            .take(max)
            .map(|(_, db, k)| (*db, k.clone()))
            .collect()
    }
}

impl Keyspace {
    /// Notes the hash `coll` stored under `key` (no-op for other types).
    pub(super) fn hfe_note_coll(&mut self, db: usize, key: &[u8], coll: &Coll) {
        // Field expiry once on stays on: a hash without it never had a field expiry (an
        // entry left by an older hash under the key is dropped by the next pass).
        if let Coll::Hash(h) = coll {
            if h.ttl_enabled() {
                self.hfe.note(db, key, h.min_expiry());
            }
        }
    }

    /// Notes a hash stored from its record value: one with field expiry on is due at once
    /// (the next pass decodes it).
    pub(super) fn hfe_note_record(
        &mut self,
        db: usize,
        key: &[u8],
        value_type: u8,
        bytes: &[u8],
        now_ms: i64,
    ) {
        if value_type == VALUE_TYPE_HASH && bytes.first().is_some_and(|f| f & FLAG_FIELD_TTL != 0) {
            self.hfe.note(db, key, Some(now_ms));
        } else {
            self.hfe.forget(db, key);
        }
    }

    /// True while the walk after a restart has not yet found every hash with field
    /// expiries ([`Keyspace::hfe_hashes`] may then count too few).
    pub fn hfe_discovering(&self) -> bool {
        self.hfe.discover.is_some()
    }

    /// Number of hashes with field expiries the worker knows of.
    pub fn hfe_hashes(&self) -> usize {
        self.hfe.len()
    }

    /// Number of hashes of `db` with field expiries the worker knows of (INFO keyspace's
    /// `subexpiry`; like Redis's, it may count a hash whose last such field just went).
    pub fn hfe_hashes_in(&self, db: usize) -> usize {
        self.hfe.at.keys().filter(|(d, _)| *d == db).count()
    }

    /// Up to `max` hashes (db, key) with a field due at `now_ms` (earliest first), for the
    /// active expiry; the caller makes each resident, then calls
    /// [`Keyspace::hfe_expire_fields`].
    pub fn hfe_due(&self, now_ms: i64, max: usize) -> Vec<(usize, Vec<u8>)> {
        self.hfe.due(now_ms, max)
    }

    /// Puts off the hash `key` (its value could not be read) for a second.
    pub fn hfe_retry_later(&mut self, db: usize, key: &[u8], now_ms: i64) {
        self.hfe.note(db, key, Some(now_ms + 1000));
    }

    /// Active expiry of one hash (its value resident): deletes up to `max` fields whose
    /// expiry is at or before `now_ms` (the hash, and its key, when none is left) and notes
    /// when the next one is due. Returns the number of fields deleted.
    pub fn hfe_expire_fields(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: i64,
        thresholds: &Thresholds,
        max: usize,
    ) -> usize {
        let loc = match self.dbs[db].table.get(hash_key(key), key) {
            Some(e) if e.value_type() == VALUE_TYPE_HASH => e.loc(),
            _ => {
                self.hfe.forget(db, key);
                return 0;
            }
        };
        // A hash whose record says field expiry is off (most of those the discovery walk
        // after a restart finds) is dropped without decoding it.
        if !self.colls.contains(self.buf_key(loc)) {
            if let Some(v) = self.resident(loc) {
                if v.first().is_some_and(|f| f & FLAG_FIELD_TTL == 0) {
                    self.hfe.forget(db, key);
                    return 0;
                }
            }
        }
        let h = match self.take_coll(db, key, VALUE_TYPE_HASH, now_ms) {
            Ok(Some(c)) => c.into_hash(),
            Ok(None) | Err(super::CollError::WrongType) => {
                self.hfe.forget(db, key);
                return 0;
            }
            Err(super::CollError::Failed) => {
                if let Some(e) = self.take_error() {
                    tracing::warn!("active expiry of hash fields: {e}");
                }
                self.hfe_retry_later(db, key, now_ms);
                return 0;
            }
        };
        let mut h = h;
        let due = h.expired_fields(now_ms.saturating_add(1), max);
        if due.is_empty() {
            let next = h.min_expiry();
            self.keep_coll(db, key, Coll::Hash(h));
            self.hfe.note(db, key, next);
            return 0;
        }
        for f in &due {
            h.remove(f);
        }
        self.stats.expired_subkeys += due.len() as u64;
        // The store notes the next expiry (or the delete forgets the key).
        if !self.put_coll(db, key, Coll::Hash(h), thresholds, now_ms) {
            if let Some(e) = self.take_error() {
                tracing::warn!("active expiry of hash fields: {e}");
            }
            self.hfe_retry_later(db, key, now_ms);
        }
        due.len()
    }

    /// One step of the discovery walk after a restart: notes the hashes among about
    /// `chunk` keys as due at once (their records tell whether they have field expiries
    /// once decoded). Waits while hashes noted by the previous step are still to be
    /// checked. False when the walk is done.
    pub fn hfe_discover_step(&mut self, chunk: usize) -> bool {
        let Some((db, pos)) = self.hfe.discover else {
            return false;
        };
        if self.hfe.due.first().is_some_and(|(t, _, _)| *t == 0) {
            return true;
        }
        let mut found: Vec<Vec<u8>> = Vec::new();
        let next = if self.dbs[db].table.is_empty() {
            None
        } else {
            self.dbs[db].table.scan(pos, chunk, |e| {
                if e.value_type() == VALUE_TYPE_HASH {
                    found.push(e.key().to_vec());
                }
            })
        };
        for k in found {
            if !self.hfe.at.contains_key(&(db, k.clone())) {
                self.hfe.note(db, &k, Some(0));
            }
        }
        self.hfe.discover = match next {
            Some(p) => Some((db, p)),
            None => (db + 1 < self.dbs.len()).then_some((db + 1, 0)),
        };
        self.hfe.discover.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_orders_hashes_by_their_earliest_field() {
        let mut ix = HfeIndex::default();
        ix.note(0, b"a", Some(300));
        ix.note(0, b"b", Some(100));
        ix.note(1, b"a", Some(200));
        assert_eq!(ix.len(), 3);
        assert_eq!(
            ix.due(250, 10),
            vec![(0, b"b".to_vec()), (1, b"a".to_vec())]
        );
        assert_eq!(ix.due(250, 1), vec![(0, b"b".to_vec())]);
        // A new earliest time replaces the old one.
        ix.note(0, b"b", Some(400));
        assert_eq!(ix.due(250, 10), vec![(1, b"a".to_vec())]);
        ix.note(1, b"a", None);
        assert!(ix.due(1000, 10).iter().all(|(db, _)| *db == 0));
        ix.forget(0, b"a");
        assert_eq!(ix.due(1000, 10), vec![(0, b"b".to_vec())]);
        ix.note(2, b"c", Some(1));
        ix.clear_db(0);
        assert_eq!(ix.due(1000, 10), vec![(2, b"c".to_vec())]);
        assert_eq!(ix.len(), 1);
        ix.forget(2, b"c");
        assert!(ix.is_empty());
    }
}
