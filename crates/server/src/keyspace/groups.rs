//! The keyspace's half of the grouped form of big collections (the collection half is
//! `crate::coll::groups`; the design is decision 0009).
//!
//! A grouped collection is a root record under its own key, as any value, plus one group
//! record per group. A group record's record key is in a database number of its own
//! ([`GROUP_DB_BIT`] | db) and its key is the collection's key followed by the group id
//! (8 bytes, big-endian), so every part of the engine that works record by record
//! (recovery, checkpoints, defrag, live-byte accounting, tombstone reclaim) handles groups
//! as it handles keys, and no group can be mistaken for a user key.
//!
//! In RAM each database keeps the groups' index entries in a table of their own
//! ([`super::Db::groups`]) and, per grouped key, the sorted list of its group ids
//! ([`super::Db::dirs`], the directory), so that a grouped key's groups can be found, made
//! resident and dropped without reading its root.
//!
//! Invariant: a key has group entries exactly while its root record is a grouped
//! collection root. Every write that ends a grouped collection (DEL, overwrite, expiry,
//! FLUSH, conversion back to one record) writes tombstones for its groups, in the same
//! crash-atomic command as the root's change; groups left without a root of their type by
//! anything else are tombstoned when the worker starts.

use super::entry::{Entry, PackedLoc};
use super::table::hash_key;
use super::{record_key, Expiry, Keyspace};
use crate::coll::stream::{Need, Stream, INDEX_ID_BASE};
use crate::coll::Coll;

/// Bit set in the record-key database number of a group record.
pub const GROUP_DB_BIT: usize = 1 << 32;

/// The group table key of group `gid` of `key`.
pub fn group_key(key: &[u8], gid: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 8);
    k.extend_from_slice(key);
    k.extend_from_slice(&gid.to_be_bytes());
    k
}

/// Splits a group table key into the collection's key and the group id.
pub fn split_group_key(gk: &[u8]) -> Option<(&[u8], u64)> {
    let at = gk.len().checked_sub(8)?;
    let gid = u64::from_be_bytes(gk[at..].try_into().ok()?);
    Some((&gk[..at], gid))
}

/// Splits a record-key database number into the database and whether it is a group's.
pub fn split_db(raw: usize) -> (usize, bool) {
    (raw & !GROUP_DB_BIT, raw & GROUP_DB_BIT != 0)
}

impl Keyspace {
    /// True when `key` (in `db`) is a grouped collection.
    pub(super) fn is_grouped_key(&self, db: usize, key: &[u8]) -> bool {
        !self.dbs[db].dirs.is_empty() && self.dbs[db].dirs.contains_key(key)
    }

    /// The location of group `gid` of `key`.
    fn group_loc(&self, db: usize, key: &[u8], gid: u64) -> Option<PackedLoc> {
        let gk = group_key(key, gid);
        self.dbs[db].groups.get(hash_key(&gk), &gk).map(|e| e.loc())
    }

    /// Adds the locations of the groups of grouped `key` that are not resident to `out`
    /// (for [`Keyspace::missing`]).
    pub(super) fn missing_groups(
        &mut self,
        db: usize,
        key: &[u8],
        mark: u64,
        out: &mut super::Locations,
    ) {
        let ids = self.dbs[db].dirs.get(key).cloned().unwrap_or_default();
        // The chunks of a big string enter the value cache only when the whole value
        // takes at most an eighth of it (decision 0019): one big GET must not replace
        // the cache's small FIFO.
        let admit = !self.is_chunked(db, key)
            || ids.len() * super::chunked::STRING_CHUNK_BYTES
                <= self.cache.stats().capacity_bytes as usize / 8;
        for gid in ids {
            if let Some(loc) = self.group_loc(db, key, gid) {
                if matches!(
                    self.resident_now(loc, mark, false, admit),
                    super::Resident::No
                ) {
                    let l = loc.unpack();
                    if !out.contains(&l) {
                        out.push(l);
                    }
                }
            }
        }
    }

    /// The grouped stream `key`'s part of [`Keyspace::missing_need`] (its root at
    /// `root_loc` was looked at already): with a need less than everything, the stream is
    /// decoded partially from its root, index records, consumer groups and head and tail
    /// pages, then the pages the need names are loaded into the decoded copy as they
    /// become resident (a cached copy may lack pages too). Adds the locations to read to
    /// `out`. Anything that does not decode falls back to reading every record, so that
    /// the command's own decode reports it.
    pub(super) fn missing_stream(
        &mut self,
        db: usize,
        key: &[u8],
        root_loc: PackedLoc,
        need: Option<&Need>,
        mark: u64,
        out: &mut super::Locations,
    ) {
        let k = self.buf_key(root_loc);
        let need = need.unwrap_or(&Need::All);
        if !self.colls.contains(k) {
            if *need == Need::All {
                return self.missing_groups(db, key, mark, out);
            }
            let ids = self.dbs[db].dirs.get(key).cloned().unwrap_or_default();
            let pages = ids.partition_point(|&g| g < INDEX_ID_BASE);
            let mut want: Vec<u64> = ids.range(pages..).copied().collect();
            if pages > 0 {
                want.push(ids[0]);
                want.push(ids[pages - 1]);
            }
            want.sort_unstable();
            want.dedup();
            let Some(values) = self.resident_groups(db, key, &want, mark, out) else {
                return;
            };
            let Some(root) = self.resident(root_loc) else {
                return;
            };
            if !Stream::root_is_indexed(&root) {
                return self.missing_groups(db, key, mark, out);
            }
            let records: Vec<(u64, &[u8])> = want
                .iter()
                .zip(&values)
                .map(|(g, v)| (*g, &v[..]))
                .collect();
            match Stream::decode_partial(&root, &records) {
                Ok(s) => self.colls.insert(k, Coll::Stream(s)),
                Err(e) => {
                    tracing::debug!("partial load of a stream in db {db}: {e}");
                    return self.missing_groups(db, key, mark, out);
                }
            }
        }
        loop {
            let want = match self.colls.get(k) {
                Some(Coll::Stream(s)) => s.pages_needed(need),
                _ => return,
            };
            if want.is_empty() {
                return;
            }
            let Some(values) = self.resident_groups(db, key, &want, mark, out) else {
                return;
            };
            let Some(Coll::Stream(mut s)) = self.colls.take(k) else {
                return;
            };
            let records: Vec<(u64, &[u8])> = want
                .iter()
                .zip(&values)
                .map(|(g, v)| (*g, &v[..]))
                .collect();
            match s.load_pages(&records) {
                Ok(()) => self.colls.insert(k, Coll::Stream(s)),
                Err(e) => {
                    tracing::debug!("pages of a stream in db {db}: {e}");
                    return self.missing_groups(db, key, mark, out);
                }
            }
        }
    }

    /// The values of groups `gids` of `key` when all are resident; else None, with the
    /// locations of those that are not added to `out` (a group without an index entry
    /// adds every group of the key, so that the decode reports it).
    fn resident_groups(
        &mut self,
        db: usize,
        key: &[u8],
        gids: &[u64],
        mark: u64,
        out: &mut super::Locations,
    ) -> Option<Vec<crate::keyspace::cache::SharedValue>> {
        let mut values = Vec::with_capacity(gids.len());
        let mut all = true;
        for &gid in gids {
            let Some(loc) = self.group_loc(db, key, gid) else {
                self.missing_groups(db, key, mark, out);
                return None;
            };
            match self.resident_now(loc, mark, false, true) {
                super::Resident::Value(v) => values.push(v),
                _ => {
                    all = false;
                    let l = loc.unpack();
                    if !out.contains(&l) {
                        out.push(l);
                    }
                }
            }
        }
        all.then_some(values)
    }

    /// Decodes grouped `key` from its resident root value `root` and its resident groups.
    /// Err with the location of the record that failed.
    pub(super) fn decode_grouped(
        &mut self,
        db: usize,
        key: &[u8],
        value_type: u8,
        root: &[u8],
    ) -> Result<Coll, (Option<PackedLoc>, String)> {
        let ids = self.dbs[db].dirs.get(key).cloned().unwrap_or_default();
        let mut values = Vec::with_capacity(ids.len());
        for &gid in &ids {
            let Some(loc) = self.group_loc(db, key, gid) else {
                return Err((None, format!("group {gid} has no index entry")));
            };
            let Some(v) = self.resident_value(loc) else {
                return Err((Some(loc), "group not resident".into()));
            };
            values.push(v);
        }
        let groups: Vec<(u64, &[u8])> =
            ids.iter().zip(&values).map(|(g, v)| (*g, &v[..])).collect();
        Coll::decode_grouped(value_type, root, &groups).map_err(|e| (None, e.to_string()))
    }

    /// Runs `f`, whose appends are one crash-atomic unit when `several` (JOIN flags and an
    /// end marker, see [`Keyspace::begin_command`]): inside a command, that command's; at
    /// top level, a command of its own around `f`.
    pub(super) fn as_one_unit<R>(&mut self, several: bool, f: impl FnOnce(&mut Self) -> R) -> R {
        if !several {
            return f(self);
        }
        if self.cmd_depth == 0 {
            self.begin_command(true);
            let r = f(self);
            self.end_command();
            return r;
        }
        if !self.cmd_multi {
            if self.cmd_records == 0 {
                self.cmd_multi = true;
            } else {
                // Not expected: a command not marked as writing several records already
                // wrote one. Its records stay unflagged (whole per record only).
                debug_assert!(false, "several records after an unflagged write");
                tracing::warn!("multi-record write inside a single-record command");
            }
        }
        f(self)
    }

    /// Writes group `gid` of `key` with `value` (value type `value_type`).
    pub(super) fn put_group(
        &mut self,
        db: usize,
        key: &[u8],
        gid: u64,
        value_type: u8,
        value: &[u8],
    ) -> bool {
        let gk = group_key(key, gid);
        let Some(loc) = self.append_value(db | GROUP_DB_BIT, &gk, value_type, value, 0) else {
            return false;
        };
        let hash = hash_key(&gk);
        let d = &mut self.dbs[db];
        if let Some(e) = d.groups.get_mut(hash, &gk) {
            let old = e.loc();
            e.set_loc(loc);
            e.set_value_type(value_type);
            self.log.release(old.unpack());
        } else {
            let e = Entry::new(&gk, loc, value_type, 0);
            self.heap_key_bytes += e.heap_bytes();
            d.groups.insert(e);
            let ids = d.dirs.entry(key.to_vec()).or_default();
            if let Err(at) = ids.binary_search(&gid) {
                ids.insert(at, gid);
            }
        }
        true
    }

    /// Removes group `gid` of `key` (a tombstone, then the entry). `quiet`: a refused
    /// tombstone keeps no error (expiry).
    pub(super) fn drop_group(&mut self, db: usize, key: &[u8], gid: u64, quiet: bool) -> bool {
        let gk = group_key(key, gid);
        let logged = self.append_tombstone(db | GROUP_DB_BIT, &gk, quiet);
        if !logged && !quiet {
            return false;
        }
        let d = &mut self.dbs[db];
        if let Some(e) = d.groups.remove(hash_key(&gk), &gk) {
            self.heap_key_bytes -= e.heap_bytes();
            if logged {
                self.log.release(e.loc().unpack());
            }
        }
        if let Some(ids) = d.dirs.get_mut(key) {
            if let Ok(at) = ids.binary_search(&gid) {
                ids.remove(at);
            }
            if ids.is_empty() {
                d.dirs.remove(key);
            }
        }
        logged
    }

    /// Removes every group of `key` (after its root was removed or replaced by a value
    /// that is not grouped). False when a tombstone was refused (the error is kept unless
    /// `quiet`).
    pub(super) fn drop_groups(&mut self, db: usize, key: &[u8], quiet: bool) -> bool {
        let ids = self.dbs[db].dirs.get(key).cloned().unwrap_or_default();
        let mut ok = true;
        for gid in ids {
            ok &= self.drop_group(db, key, gid, quiet);
            if !ok && !quiet {
                break;
            }
        }
        ok
    }

    /// Stores `coll` under `key` with `expiry`, compact or grouped as its size asks:
    /// writes the groups that changed, the root when it changed (or is new, or takes a new
    /// expiry), and tombstones for groups that are gone; several records are one
    /// crash-atomic unit. False when a write was refused (the error is kept; the decoded
    /// copy is dropped, so the key answers from what the index holds).
    pub(super) fn store_coll(
        &mut self,
        db: usize,
        key: &[u8],
        mut coll: Coll,
        expiry: Expiry,
        now_ms: i64,
    ) -> bool {
        self.hfe_note_coll(db, key, &coll);
        coll.plan_layout(self.group_bytes);
        let had_groups = self.is_grouped_key(db, key);
        let value_type = coll.value_type();
        if !coll.is_grouped() && !had_groups {
            coll.take_changes();
            let mut bytes = Vec::new();
            coll.encode(&mut bytes);
            let Some(loc) = self.put_record_keep(db, key, value_type, &bytes, expiry, now_ms)
            else {
                return false;
            };
            let k = self.buf_key(loc);
            self.colls.insert(k, coll);
            return true;
        }
        let changes = coll.take_changes();
        // Groups that are gone: only when the set of ids may have changed (or the key was
        // stored otherwise before), so a plain change costs nothing per group.
        // A grouped stream knows the records it dropped (its id list is long: a page per
        // node), unless its layout changed wholesale.
        // So does a grouped list (it pushes and pops pages at its ends: a list of 100,000
        // pages must not compare them all at each new page).
        let known_gone = match &mut coll {
            Coll::Stream(s) if had_groups && s.is_grouped() => s.take_gone(),
            Coll::List(l) => l.take_gone().filter(|_| had_groups),
            _ => None,
        };
        let gone: Vec<u64> = if let Some(mut g) = known_gone {
            let stored = self.dbs[db].dirs.get(key);
            g.retain(|id| stored.is_some_and(|s| s.binary_search(id).is_ok()));
            g
        } else if changes.layout || !had_groups || !coll.is_grouped() {
            let new_ids = coll.group_ids();
            self.dbs[db]
                .dirs
                .get(key)
                .map(|old| {
                    old.iter()
                        .copied()
                        .filter(|g| new_ids.binary_search(g).is_err())
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let hash = hash_key(key);
        let root_loc = self.dbs[db]
            .table
            .get(hash, key)
            .filter(|e| !e.expired(now_ms) && e.value_type() == value_type)
            .map(|e| e.loc());
        let write_root = !coll.is_grouped()
            || changes.root
            || root_loc.is_none()
            || !matches!(expiry, Expiry::Keep);
        let groups: &[u64] = if coll.is_grouped() {
            &changes.groups
        } else {
            &[]
        };
        let records = groups.len() + gone.len() + usize::from(write_root);
        let ok = self.as_one_unit(records > 1, |ks| {
            ks.store_coll_records(db, key, &coll, groups, &gone, write_root, expiry, now_ms)
        });
        match ok {
            Some(loc) => {
                let k = self.buf_key(loc);
                self.colls.insert(k, coll);
                true
            }
            None => false,
        }
    }

    /// The appends of [`Keyspace::store_coll`]'s grouped case: groups first, then the root,
    /// then the tombstones of groups that are gone. The root's location, None when refused.
    #[allow(clippy::too_many_arguments)]
    fn store_coll_records(
        &mut self,
        db: usize,
        key: &[u8],
        coll: &Coll,
        groups: &[u64],
        gone: &[u64],
        write_root: bool,
        expiry: Expiry,
        now_ms: i64,
    ) -> Option<PackedLoc> {
        let value_type = coll.value_type();
        let mut buf = Vec::with_capacity(2 * self.group_bytes + 64);
        for &gid in groups {
            buf.clear();
            coll.encode_group(gid, &mut buf);
            if !self.put_group(db, key, gid, value_type, &buf) {
                return None;
            }
        }
        let loc = if write_root {
            buf.clear();
            coll.encode(&mut buf);
            self.put_record_keep(db, key, value_type, &buf, expiry, now_ms)?
        } else {
            if !self.watched.is_empty() {
                self.mark_ready(db, key);
            }
            self.touch(db, key);
            let e = self.dbs[db].table.get(hash_key(key), key)?;
            e.loc()
        };
        for &gid in gone {
            if !self.drop_group(db, key, gid, false) {
                return None;
            }
        }
        Some(loc)
    }

    /// Builds the directories from the recovered group entries and tombstones the groups
    /// whose root is gone or of another type (when the worker starts).
    pub(super) fn load_groups(&mut self) {
        for db in 0..self.dbs.len() {
            let mut found: Vec<(Vec<u8>, u64, u8)> = Vec::new();
            self.dbs[db].groups.for_each(|e| {
                if let Some((k, g)) = split_group_key(e.key()) {
                    found.push((k.to_vec(), g, e.value_type()));
                }
            });
            let mut orphans: Vec<(Vec<u8>, u64)> = Vec::new();
            for (k, g, vt) in found {
                let root_type = self.dbs[db]
                    .table
                    .get(hash_key(&k), &k)
                    .map(|e| e.value_type());
                // A damaged group record (recovered as a string) stays with its root, so
                // that reading the collection reports the damage.
                let belongs = root_type.is_some()
                    && (root_type == Some(vt) || vt == skerry_store::format::VALUE_TYPE_STRING);
                if belongs {
                    let ids = self.dbs[db].dirs.entry(k).or_default();
                    ids.push_back(g);
                } else {
                    orphans.push((k, g));
                }
            }
            for ids in self.dbs[db].dirs.values_mut() {
                ids.make_contiguous().sort_unstable();
            }
            if !orphans.is_empty() {
                tracing::warn!(
                    "db {db}: {} group records without their collection root; removing them",
                    orphans.len()
                );
            }
            for (k, g) in orphans {
                let gk = group_key(&k, g);
                let logged = self.append_tombstone(db | GROUP_DB_BIT, &gk, true);
                if let Some(e) = self.dbs[db].groups.remove(hash_key(&gk), &gk) {
                    self.heap_key_bytes -= e.heap_bytes();
                    if logged {
                        self.log.release(e.loc().unpack());
                    }
                }
            }
        }
    }

    /// Number of group records of `db` (for INFO and tests).
    pub fn group_records(&self, db: usize) -> usize {
        self.dbs[db].groups.len()
    }

    /// The record key of group `gid` of `key` in `db` (for tests and tools).
    pub fn group_record_key(db: usize, key: &[u8], gid: u64) -> smallvec::SmallVec<[u8; 48]> {
        record_key(db | GROUP_DB_BIT, &group_key(key, gid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_keys_round_trip_and_never_meet_user_keys() {
        let gk = group_key(b"user:1", 42);
        assert_eq!(split_group_key(&gk), Some((&b"user:1"[..], 42)));
        assert_eq!(split_group_key(b"short"), None);
        assert_eq!(
            split_group_key(&group_key(b"", u64::MAX)),
            Some((&b""[..], u64::MAX))
        );
        let rk = Keyspace::group_record_key(3, b"k", 7);
        let (raw, k) = super::super::split_record_key(&rk).unwrap();
        assert_eq!(split_db(raw), (3, true));
        assert_eq!(split_group_key(k), Some((&b"k"[..], 7)));
        assert_eq!(split_db(3), (3, false));
    }
}
