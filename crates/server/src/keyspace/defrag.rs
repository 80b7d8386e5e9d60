//! The keyspace's half of defrag: deciding, record by record, whether a record read back
//! from a victim block is still a key's current version, and moving it to the log head if
//! so. The loop that picks blocks, reads them and paces the work is `crate::defrag`.

use skerry_store::format::{RecordKind, RecordMeta};
use skerry_store::{Location, StoreError};

use super::entry::PackedLoc;
use super::table::hash_key;
use super::{split_record_key, Keyspace};

/// What [`Keyspace::relocate`] did with one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relocation {
    /// The record was the key's current version; a copy now is, the old one is released.
    Moved,
    /// The record is obsolete here (superseded, deleted, expired, or a key of another
    /// worker): nothing to do.
    Obsolete,
    /// The copy could not be written (no space, too large): the record stays where it is.
    Refused,
    /// The record is the key's current version but its bytes are damaged: it stays where
    /// it is, and reads of the key report the damage.
    Damaged,
}

impl Keyspace {
    /// Moves the record at `from` (record key `record_key`, `value_type`, as read back from
    /// the device) to the log head if this worker's index still points at it; `value`
    /// gives its value, CRC-checked, and is called only then (`None`: damaged). The copy
    /// gets a fresh mutation sequence: it is the key's current version, and newer writes
    /// get higher sequences still. The old record is released, which takes effect once the
    /// copy is durable.
    pub fn relocate<'v>(
        &mut self,
        record_key: &[u8],
        from: &Location,
        value_type: u8,
        value: impl FnOnce() -> Option<&'v [u8]>,
        now_ms: i64,
    ) -> Result<Relocation, StoreError> {
        let Some((raw_db, key)) = split_record_key(record_key) else {
            return Ok(Relocation::Obsolete);
        };
        // A group record (see `groups`) is checked against the group table; the record
        // names the physical database (see `crate::dbmap`).
        let (db, group) = super::groups::split_db(self.logical_db(raw_db));
        if db >= self.dbs.len() {
            return Ok(Relocation::Obsolete);
        }
        let hash = hash_key(key);
        let from_packed = PackedLoc::pack(from);
        let d = &self.dbs[db];
        let table = if group { &d.groups } else { &d.table };
        // By key, then the location: most records of a victim are obsolete but their keys
        // are in the table, and a lookup by key stops at the key's entry. (A lookup for
        // the entry with the record's location, comparing keys only there, read no
        // out-of-entry key but probed on past the key's entry to an empty slot, into
        // groups not prefetched: it measured no faster.)
        let expire_at_ms = match table.get(hash, key) {
            Some(e) if e.loc() == from_packed && e.value_type() == value_type => {
                if e.expired(now_ms) {
                    // Expiry writes its tombstone and releases the record.
                    return Ok(Relocation::Obsolete);
                }
                e.expire_at_ms()
            }
            _ => return Ok(Relocation::Obsolete),
        };
        let Some(value) = value() else {
            return Ok(Relocation::Damaged);
        };
        let meta = RecordMeta {
            kind: RecordKind::Value,
            value_type,
            flags: 0,
            mutation_seq: self.log.next_seq(),
            expiry_ms: expire_at_ms,
        };
        let to = match self.log.append_relocated(meta, record_key, value) {
            Ok(to) => to,
            Err(e @ (StoreError::NoSpace | StoreError::TooLarge { .. })) => {
                tracing::debug!("defrag copy refused: {e}");
                return Ok(Relocation::Refused);
            }
            Err(e) => return Err(e),
        };
        if to.offset_bytes == skerry_store::format::BLOCK_HEADER_BYTES as u32 {
            self.sync_if_backlogged();
        }
        let d = &mut self.dbs[db];
        let table = if group { &mut d.groups } else { &mut d.table };
        let e = table.get_mut(hash, key).expect("entry checked above");
        e.set_loc(PackedLoc::pack(&to));
        if !group && value_type != skerry_store::format::VALUE_TYPE_STRING {
            // The decoded collection is cached under its record's location: it moves too
            // (a big grouped one would otherwise be read and decoded whole again).
            let old = self.buf_key(from_packed);
            if let Some(c) = self.colls.take(old) {
                let new = self.buf_key(PackedLoc::pack(&to));
                self.colls.insert(new, c);
            }
        }
        self.log.release(*from);
        Ok(Relocation::Moved)
    }

    /// Starts bringing the index entries of the records `record_keys` (read back from a
    /// victim block, see [`Keyspace::relocate`]) into the CPU cache: a victim's records
    /// are mostly obsolete, so the time of looking them up is mostly waiting for the
    /// table's memory, and loads of several keys overlap (as [`Keyspace::prefetch`] does
    /// for a pipeline): the buckets, then the entries, then the keys stored out of their
    /// entries. Only a hint.
    pub fn prefetch_relocations<'k>(&self, record_keys: impl Iterator<Item = &'k [u8]>) {
        let Some(first) = self.dbs.first() else {
            return;
        };
        let mut lookups = [(&first.table, 0u64); super::PREFETCH_MAX_KEYS];
        let mut n = 0;
        for record_key in record_keys.take(super::PREFETCH_MAX_KEYS) {
            let Some((raw_db, key)) = split_record_key(record_key) else {
                continue;
            };
            let (db, group) = super::groups::split_db(self.logical_db(raw_db));
            let Some(d) = self.dbs.get(db) else {
                continue;
            };
            let table = if group { &d.groups } else { &d.table };
            let hash = hash_key(key);
            table.prefetch_bucket(hash);
            lookups[n] = (table, hash);
            n += 1;
        }
        super::table::SegTable::prefetch_lookups(&lookups[..n]);
    }
}
