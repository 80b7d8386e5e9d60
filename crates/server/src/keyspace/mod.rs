//! The per-worker keyspace: the interface every keyed command uses (get, put with expiry
//! options, delete, exists, TTL metadata, scan cursor). One `Keyspace` per worker holds the
//! worker's keys for every database; nothing else touches it.
//!
//! The index is in RAM ([`entry::Entry`], 32 bytes a key); values are only on the data
//! devices, in the worker's log ([`skerry_store::Writer`]). Every change appends a record
//! (value or tombstone) before the index changes, and releases the record it supersedes.
//!
//! Handlers stay synchronous: before a command that reads values runs, the caller makes
//! them resident ([`make_resident`]): values still in the writer's staging images are
//! decoded from there, the others are read from the devices together (one O_DIRECT read
//! each, CRC-checked) into the worker's small read buffer. The handler then finds every
//! value it needs without waiting (see `docs/decisions/0004-values-out-of-ram.md`). Values
//! read from the devices also enter the worker's value cache ([`cache::ValueCache`],
//! `value-cache-mb`), which serves later reads of the same record without I/O.

pub mod behind;
pub mod cache;
pub mod chunked;
pub mod clock;
mod colls;
mod defrag;
pub mod entry;
pub mod groups;
pub mod hfe;
pub mod lent;
mod seg_alloc;
pub mod table;

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use crate::coll::{Coll, Thresholds};
pub use defrag::Relocation;
use entry::{Entry, PackedLoc};
use skerry_store::format::{RecordKind, RecordMeta, VALUE_TYPE_STRING};
use skerry_store::{Location, StoreError, Writer};
use table::{hash_key, Keyed, SegTable, SlotRef};

/// A value read from the data devices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A string.
    Str(Vec<u8>),
    /// A collection (hash, list, set, sorted set) as its record value (see [`crate::coll`]).
    Coll {
        /// The record value type (`coll::VALUE_TYPE_*`).
        value_type: u8,
        /// The encoded collection.
        encoded: Vec<u8>,
    },
}

impl Value {
    /// The name TYPE prints.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Coll { value_type, .. } => type_name(*value_type),
        }
    }

    /// The record value type and bytes.
    pub fn record(&self) -> (u8, &[u8]) {
        match self {
            Value::Str(v) => (VALUE_TYPE_STRING, v),
            Value::Coll {
                value_type,
                encoded,
            } => (*value_type, encoded),
        }
    }
}

/// The name TYPE prints for a value type byte.
pub fn type_name(value_type: u8) -> &'static str {
    crate::coll::type_name(value_type)
}

/// The key holds a value of another type (the handler replies Redis's WRONGTYPE error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrongType;

/// Why a collection could not be handed to a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollError {
    /// The key holds another type: reply WRONGTYPE.
    WrongType,
    /// The value could not be read or decoded; the error is kept for the reply (the
    /// dispatcher sends it), so the handler just returns.
    Failed,
}

/// What a write does to the key's expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// No expiry (clears an existing one).
    Persist,
    /// Keep the existing expiry, if any.
    Keep,
    /// Expire at this absolute Unix time in milliseconds.
    At(i64),
}

impl Expiry {
    /// The expiry an entry's `expire_at_ms` stands for (0: none), to carry a TTL to a copy.
    pub fn of_entry_ms(expire_at_ms: i64) -> Expiry {
        if expire_at_ms == 0 {
            Expiry::Persist
        } else {
            Expiry::At(expire_at_ms)
        }
    }
}

/// A live key's value and expiry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Got {
    /// The value.
    pub value: Value,
    /// Absolute expiry in Unix milliseconds; 0 = none.
    pub expire_at_ms: i64,
}

/// A live key's metadata (no value read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Absolute expiry in Unix milliseconds; 0 = none.
    pub expire_at_ms: i64,
    /// The value type (the store's `VALUE_TYPE_*`).
    pub value_type: u8,
}

impl Meta {
    /// The name TYPE prints.
    pub fn type_name(&self) -> &'static str {
        type_name(self.value_type)
    }
}

impl Keyed for Entry {
    #[inline]
    fn key(&self) -> &[u8] {
        Entry::key(self)
    }
    #[inline]
    fn hash(&self) -> u64 {
        hash_key(Entry::key(self))
    }
    #[inline]
    fn vacant() -> Self {
        Entry::vacant()
    }
    #[inline]
    fn prefetch_key(&self) {
        if let Some(first) = self.heap_key().and_then(|k| k.first()) {
            table::prefetch(first);
        }
    }
}

/// The keys of one database.
#[derive(Default)]
pub struct Db {
    table: SegTable<Entry>,
    /// Keys with an expiry.
    volatile: usize,
    /// Where active expiry continues (a scan position).
    expire_cursor: u64,
    /// Index entries of the group records of grouped collections (see [`groups`]).
    groups: SegTable<Entry>,
    /// The group ids of each grouped collection, ascending (see [`groups`]); a deque, as a
    /// list grows pages at its head.
    dirs: hashbrown::HashMap<Vec<u8>, VecDeque<u64>, foldhash::fast::FixedState>,
}

/// Counters kept by the keyspace.
#[derive(Default, Debug, Clone, Copy)]
pub struct KeyspaceStats {
    /// Lookups that found a key.
    pub hits: u64,
    /// Lookups that found nothing.
    pub misses: u64,
    /// Keys removed because their time ran out.
    pub expired: u64,
    /// Hash fields deleted because their time ran out (lazily or actively).
    pub expired_subkeys: u64,
    /// Writes of keys (Redis's `server.dirty`, INFO `rdb_changes_since_last_save`): one per
    /// key a command writes or deletes; a command that Redis counts by its own rule sets its
    /// count with [`Keyspace::count_changes_as`]. Expiry is not a
    /// change, as in Redis. Never reset: Skerry's data is always saved.
    pub dirty: u64,
}

/// Counters of the value read path.
#[derive(Default, Debug, Clone, Copy)]
pub struct ReadStats {
    /// Values read from the devices (one O_DIRECT read each).
    pub device_reads: u64,
    /// Values decoded from the writer's staging images.
    pub staged_reads: u64,
    /// Values found in the read buffer (read for an earlier command, not evicted yet).
    pub buffer_hits: u64,
    /// Values a handler needed that were not resident (a bug: the command got an error).
    pub missing_reads: u64,
    /// Reads that failed their checks (corruption) or the device.
    pub failed_reads: u64,
}

/// The most bytes of recently written block images one worker keeps for reads whatever the
/// value cache holds (decision 0033): 32 blocks of 8 MiB, a few seconds of writes at full
/// speed. Past it they only use the budget the value cache leaves free (decision 0034).
pub const RETAINED_IMAGES_FLOOR_MAX_BYTES: usize = 256 << 20;

/// Values read from the devices (or decoded from staging) for the commands about to run,
/// keyed by packed location and the block's sequence (a reused block has a new sequence,
/// so a stale copy is never found). Oldest entries are evicted past a byte budget, but
/// never those inserted since the caller's mark ([`Keyspace::read_mark`]): a command whose
/// values exceed the budget still finds all of them.
///
/// With the value cache off, the read buffer is also a small cache of recent values (up to
/// [`READ_BUF_MAX_ENTRIES`]). With the cache on, every value read also enters the cache, so
/// the buffer keeps only [`READ_BUF_CACHED_MAX_ENTRIES`], enough for the commands in
/// flight: a small map stays in the CPU caches, where a large one costs cache misses on
/// every insert and eviction (decision 0012).
#[derive(Default)]
struct ReadBuf {
    /// Values with their insertion number.
    map: HashMap<cache::CacheKey, (cache::SharedValue, u64), foldhash::fast::FixedState>,
    /// Keys in insertion order, with their insertion number.
    order: VecDeque<((u64, u64), u64)>,
    bytes: usize,
    /// Insertion number of the next entry.
    next: u64,
}

const READ_BUF_BUDGET_BYTES: usize = 8 << 20;
const READ_BUF_MAX_ENTRIES: usize = 4096;
const READ_BUF_CACHED_MAX_ENTRIES: usize = 256;

impl ReadBuf {
    fn get(&self, k: (u64, u64)) -> Option<&cache::SharedValue> {
        self.map.get(&k).map(|(v, _)| v)
    }

    /// The value under `k` if it was inserted at or after `mark` (by the command holding
    /// that mark, which fetched it).
    fn get_since(&self, k: (u64, u64), mark: u64) -> Option<&cache::SharedValue> {
        if self.next <= mark {
            return None;
        }
        match self.map.get(&k) {
            Some((v, n)) if *n >= mark => Some(v),
            _ => None,
        }
    }

    /// Evicts the oldest entries past the budget and past `max_entries`, keeping those
    /// inserted at or after `mark`.
    fn make_room(&mut self, mark: u64, max_entries: usize) {
        while self.bytes > READ_BUF_BUDGET_BYTES || self.order.len() > max_entries {
            match self.order.front() {
                Some(&(_, n)) if n < mark => {}
                _ => break,
            }
            let (k, _) = self.order.pop_front().expect("front");
            if let Some((v, _)) = self.map.remove(&k) {
                self.bytes -= v.len();
            }
        }
    }

    /// Inserts `v` under `k` (keeping an existing entry) and returns the entry.
    fn insert(&mut self, k: (u64, u64), v: cache::SharedValue) -> cache::SharedValue {
        if let Some((old, _)) = self.map.get(&k) {
            return old.clone();
        }
        self.bytes += v.len();
        self.order.push_back((k, self.next));
        self.map.insert(k, (v.clone(), self.next));
        self.next += 1;
        v
    }
}

/// The keys one worker owns, in every database.
pub struct Keyspace {
    dbs: Vec<Db>,
    /// Hit, miss and expiry counters.
    pub stats: KeyspaceStats,
    /// Value read counters.
    pub reads: ReadStats,
    /// The worker's log on the data devices: every change is appended before it is applied.
    log: Rc<Writer>,
    read_buf: ReadBuf,
    /// The string value [`Keyspace::missing`] found resident for a one-key command, kept
    /// for the handler (see [`Prepared`]).
    prepared: Option<Prepared>,
    /// The key of `prepared` (its buffer is kept between commands).
    prepared_key: Vec<u8>,
    /// Values read before, kept for later reads (`value-cache-mb`).
    cache: cache::ValueCache,
    /// The part of the value cache's budget that keeps recently written block images
    /// whatever the cache holds ([`Keyspace::set_value_cache_bytes`]).
    retained_budget_bytes: usize,
    /// The whole budget: the value cache's and the retained images' (decision 0034).
    cache_budget_bytes: usize,
    /// Collections decoded for earlier commands, by record (see [`colls::CollCache`]).
    colls: colls::CollCache,
    /// Set when an append or a value read failed (the change was not applied); the
    /// dispatcher turns it into the command's error reply.
    error: Option<String>,
    /// Writes appended so far (a counter: a caller compares two readings to learn whether
    /// anything was appended in between; see [`Keyspace::writes`]).
    writes: u64,
    /// Heap bytes of long keys.
    heap_key_bytes: usize,
    /// An early sync (too many full blocks waiting for durability) is running.
    early_sync: Rc<std::cell::Cell<bool>>,
    /// Keys blocked commands wait on, with how many wait (see `crate::blocking`).
    watched: hashbrown::HashMap<(usize, Vec<u8>), u32>,
    /// Watched keys written since the blocked commands were last served.
    ready: Vec<(usize, Vec<u8>)>,
    /// Keys of other workers lent to the running command (see [`lent`]).
    lent: Option<lent::Lent>,
    /// Nesting depth of [`Keyspace::begin_command`].
    cmd_depth: u32,
    /// Records the running command appended.
    cmd_records: u32,
    /// The running command may write several records (see [`Keyspace::begin_command`]).
    cmd_multi: bool,
    /// WATCHed keys: the flags of the connections watching them, set by any change.
    cas: hashbrown::HashMap<(usize, Vec<u8>), Vec<std::sync::Arc<std::sync::atomic::AtomicBool>>>,
    /// `collection-group-bytes`, as last passed to [`Keyspace::put_coll`].
    group_bytes: usize,
    /// Values being read that must not enter the value cache (chunks of a big string, see
    /// [`Keyspace::resident_now`]); emptied by [`Keyspace::fill`].
    uncached: hashbrown::HashSet<cache::CacheKey, foldhash::fast::FixedState>,
    /// Hashes with field expiries, for their active expiry (see [`hfe`]).
    hfe: hfe::HfeIndex,
    /// The collection the turn's commands changed and left behind its record (see
    /// [`behind`], decision 0035).
    behind: Option<behind::Behind>,
    /// The running command may leave its collection behind ([`Keyspace::allow_behind`]).
    behind_allowed: bool,
    /// The physical database of each logical one (see `crate::dbmap`): `dbs[l]` holds the
    /// keys whose records name database `phys[l]`.
    phys: Vec<usize>,
    /// The inverse of `phys`.
    logi: Vec<usize>,
    /// How access clocks are read and updated (`maxmemory-policy`, `lfu-*`; see
    /// [`clock`]), as the running command found the configuration.
    clock_mode: clock::ClockMode,
    /// Lookups update the access clock of the key they find (see [`Keyspace::set_touch`]).
    touch: bool,
    /// Random numbers for LFU counter increments.
    rng: clock::Rng,
    /// Counts [`Keyspace::set_touch`] calls: the commands (and multi-worker steps) run.
    touch_serial: u64,
    /// Under LFU, the last key whose lookup counted an access: `(touch_serial, db, hash)`.
    /// A write to that key in the same command counts no second access (Redis's write
    /// after `lookupKeyWrite` keeps the clock it left).
    lfu_last: (u64, usize, u64),
}

/// An access to `e` at `now_ms`: its clock becomes the current second (stored only when it
/// changes), or under LFU its counter decays and counts the access (Redis's `updateLFU`).
#[inline(always)]
fn touch_entry(e: &mut Entry, mode: clock::ClockMode, now_ms: i64, rng: &mut clock::Rng) {
    if !mode.lfu {
        let c = clock::seconds(now_ms);
        if e.clock() != c {
            e.set_clock(c);
        }
        return;
    }
    e.set_clock(mode.touched(e.clock(), now_ms, || rng.next_f64()));
}

/// Most keys [`Keyspace::prefetch`] takes at once.
pub const PREFETCH_MAX_KEYS: usize = 16;

/// A string value looked up by [`Keyspace::missing`] for a one-key command, so that the
/// handler's [`Keyspace::with_value`] serves it without a second index probe, block
/// sequence lookup and cache lookup (a GET probes the index once). It is valid while
/// nothing changed in its database's table (the table's change count), for the same key
/// and command time; [`Keyspace::end_command`] drops it.
struct Prepared {
    db: usize,
    /// Where the key's entry is (its access clock is updated through it).
    slot: SlotRef,
    table_changes: u64,
    now_ms: i64,
    value: cache::SharedValue,
}

/// Where [`Keyspace::resident_now`] found a value.
enum Resident {
    /// Nowhere without I/O: it must be read from the devices.
    No,
    /// Decoded in the collection cache.
    Decoded,
    /// This value.
    Value(cache::SharedValue),
}

/// Full blocks' staging images waiting for their sync beyond this start a sync at once
/// (rather than at the next second), which bounds the writer's memory under a write burst.
const SEALED_STAGED_MAX_BYTES: u64 = 32 << 20;

/// Encodes a record key: database number (LEB128) then the user key.
pub fn record_key(db: usize, key: &[u8]) -> smallvec::SmallVec<[u8; 48]> {
    let mut out = smallvec::SmallVec::with_capacity(key.len() + 2);
    let mut n = db as u64;
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    out.extend_from_slice(key);
    out
}

/// Splits a record key into database and user key.
pub fn split_record_key(rk: &[u8]) -> Option<(usize, &[u8])> {
    let mut db: u64 = 0;
    for (i, &b) in rk.iter().enumerate().take(10) {
        db |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((usize::try_from(db).ok()?, &rk[i + 1..]));
        }
    }
    None
}

/// The message of a failed value read, as the client sees it (after `ERR `).
pub fn read_error_message(e: &StoreError) -> String {
    match e {
        StoreError::Corrupt {
            device,
            block,
            offset_bytes,
        } => format!(
            "data corruption detected on data device {device}, block {block}, offset {offset_bytes}; the value is not served"
        ),
        other => format!("data device read failed: {other}"),
    }
}

/// An index under construction from a recovery scan: records arrive in increasing mutation
/// sequence order per key (the store guarantees it), so the last one seen wins.
pub struct RecoveredIndex {
    dbs: Vec<Db>,
    /// Records not applied yet, in arrival order (see [`RecoveredIndex::value`]).
    batch: Vec<Pending>,
    /// The batch's (hash, arrival index) pairs, sorted to apply it (kept for reuse).
    order: Vec<(u64, u32)>,
    /// Records arrive in the index's order (see [`RecoveredIndex::reserve`]): applied at
    /// once, without batching.
    in_order: bool,
    heap_key_bytes: usize,
    /// Keys whose time ran out before the restart: dropped from the index, their records
    /// kept live until the worker has written their tombstones.
    expired: Vec<(usize, Vec<u8>, PackedLoc)>,
}

/// Records a recovery collects before applying them in hash order. A batch this size is
/// about 3.5 MB, and spreads over a 10M-key index's ~1,700 segments ~40 per segment.
const LOAD_BATCH: usize = 1 << 16;

/// How far ahead of the record being applied its bucket is prefetched: enough for a
/// bucket's memory latency to overlap the work of the records in between.
const LOAD_PREFETCH: usize = 8;

/// A record waiting in [`RecoveredIndex`]'s batch.
struct Pending {
    hash: u64,
    db: usize,
    /// For the group table.
    group: bool,
    /// A tombstone: removes the key (`entry` only carries it).
    remove: bool,
    entry: Entry,
}

impl RecoveredIndex {
    /// An empty index with `databases` databases.
    pub fn new(databases: usize) -> Self {
        let mut dbs: Vec<Db> = (0..databases).map(|_| Db::default()).collect();
        for d in &mut dbs {
            d.table.set_bulk_load(true);
            d.groups.set_bulk_load(true);
        }
        RecoveredIndex {
            dbs,
            batch: Vec::new(),
            order: Vec::new(),
            in_order: false,
            heap_key_bytes: 0,
            expired: Vec::new(),
        }
    }

    /// Sizes database `db`'s table for `entries` keys before a load that knows its count
    /// (see [`table::SegTable::reserve_empty`]); only while it is empty.
    ///
    /// Such a load (a checkpoint, written in the index's own order) is applied as it
    /// arrives, not in sorted batches: its records are already grouped by segment.
    pub fn reserve(&mut self, db: usize, entries: usize) {
        self.flush();
        self.dbs[db].table.reserve_empty(entries);
        self.in_order = true;
    }

    /// Sizes database `db`'s table for about `entries` keys before a load that can only
    /// estimate its count (a full scan, from block summary sizes); unlike
    /// [`RecoveredIndex::reserve`] its records are still applied in sorted batches. An
    /// estimate above what arrives is fitted back at the end of the load
    /// ([`table::SegTable::set_bulk_load`]).
    pub fn expect(&mut self, db: usize, entries: usize) {
        if self.batch.is_empty() {
            self.dbs[db].table.reserve_empty(entries);
        }
    }

    /// A value record of `key` at `loc` (replaces an older one).
    ///
    /// `db` is the record key's database number: with [`groups::GROUP_DB_BIT`] set, the
    /// record is a group record and goes to the database's group table.
    ///
    /// Records are applied in batches of [`LOAD_BATCH`], sorted by hash (stably, so the
    /// records of one key keep their order and the last still wins). Segments cover
    /// ranges of the hash space, so a sorted batch walks the index from one end to the
    /// other instead of landing on a random page of it per record: in random order every
    /// insert into a 10M-key index waited for a TLB walk and a cache miss, and the full
    /// scan spent most of its time there.
    pub fn value(&mut self, db: usize, key: &[u8], loc: &Location, value_type: u8, at_ms: i64) {
        let (db, group) = groups::split_db(db);
        let entry = Entry::new(
            key,
            PackedLoc::pack(loc),
            value_type,
            if group { 0 } else { at_ms },
        );
        self.push(db, group, false, entry);
    }

    /// A tombstone of `key` (`db` as for [`RecoveredIndex::value`]).
    pub fn tombstone(&mut self, db: usize, key: &[u8]) {
        let (db, group) = groups::split_db(db);
        let entry = Entry::new(key, Entry::vacant().loc(), 0, 0);
        self.push(db, group, true, entry);
    }

    fn push(&mut self, db: usize, group: bool, remove: bool, entry: Entry) {
        if self.in_order {
            let hash = hash_key(entry.key());
            self.apply(db, group, remove, hash, entry);
            return;
        }
        if self.batch.capacity() == 0 {
            self.batch.reserve_exact(LOAD_BATCH);
        }
        self.batch.push(Pending {
            hash: hash_key(entry.key()),
            db,
            group,
            remove,
            entry,
        });
        if self.batch.len() >= LOAD_BATCH {
            self.apply_batch();
        }
    }

    fn table(&self, db: usize, group: bool) -> &SegTable<Entry> {
        let d = &self.dbs[db];
        if group {
            &d.groups
        } else {
            &d.table
        }
    }

    /// Applies one record: inserts `entry`, or removes its key.
    fn apply(&mut self, db: usize, group: bool, remove: bool, hash: u64, entry: Entry) {
        let d = &mut self.dbs[db];
        let table = if group { &mut d.groups } else { &mut d.table };
        let old = if remove {
            table.remove(hash, entry.key())
        } else {
            self.heap_key_bytes += entry.heap_bytes();
            table.insert(entry)
        };
        if let Some(old) = old {
            self.heap_key_bytes -= old.heap_bytes();
        }
    }

    /// Applies the batch in hash order (stable: one key's records in arrival order).
    fn apply_batch(&mut self) {
        let mut batch = std::mem::take(&mut self.batch);
        // Sort (hash, arrival) pairs rather than the records themselves: 16-byte elements
        // sort several times faster, and the arrival index keeps one key's records in order.
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(batch.iter().enumerate().map(|(i, p)| (p.hash, i as u32)));
        order.sort_unstable();
        for (n, &(_, i)) in order.iter().enumerate() {
            if let Some(&(_, ahead)) = order.get(n + LOAD_PREFETCH) {
                let a = &batch[ahead as usize];
                self.table(a.db, a.group).prefetch_bucket(a.hash);
            }
            let p = &mut batch[i as usize];
            let entry = std::mem::replace(&mut p.entry, Entry::vacant());
            let (db, group, remove, hash) = (p.db, p.group, p.remove, p.hash);
            self.apply(db, group, remove, hash, entry);
        }
        self.order = order;
        batch.clear();
        // Keep the allocation for the next batch.
        self.batch = batch;
    }

    /// Drops keys whose time ran out (their tombstones are written when the worker starts,
    /// see [`Keyspace::new`]) and calls `live` with the location of every record still
    /// needed. Returns the number of keys kept.
    ///
    /// Every key kept gets `clock` as its access clock (the clock of a key accessed at the
    /// load: access clocks are not persisted, decision 0029).
    pub fn finish(&mut self, now_ms: i64, clock: u16, mut live: impl FnMut(&Location)) -> usize {
        self.end_load();
        let mut kept = 0;
        let mut freed_heap = 0;
        for (db, d) in self.dbs.iter_mut().enumerate() {
            let expired = &mut self.expired;
            d.table.retain(|e| {
                if e.expired(now_ms) {
                    freed_heap += e.heap_bytes();
                    expired.push((db, e.key().to_vec(), e.loc()));
                    false
                } else {
                    e.set_clock(clock);
                    true
                }
            });
            d.volatile = 0;
            d.table.for_each(|e| {
                if e.expire_at_ms() != 0 {
                    d.volatile += 1;
                }
                live(&e.loc().unpack());
            });
            d.groups.for_each(|e| live(&e.loc().unpack()));
            kept += d.table.len();
        }
        self.heap_key_bytes -= freed_heap;
        for (_, _, loc) in &self.expired {
            live(&loc.unpack());
        }
        kept
    }

    /// Applies what is pending and ends the tables' bulk load (fitting their segments).
    fn end_load(&mut self) {
        self.flush();
        self.batch = Vec::new();
        self.order = Vec::new();
        for d in &mut self.dbs {
            d.table.set_bulk_load(false);
            d.groups.set_bulk_load(false);
        }
    }

    /// Applies every pending record.
    fn flush(&mut self) {
        if !self.batch.is_empty() {
            self.apply_batch();
        }
    }

    /// Keys in `db`.
    pub fn len(&mut self, db: usize) -> usize {
        self.flush();
        self.dbs[db].table.len()
    }

    /// True when no database holds a key.
    pub fn is_empty(&mut self) -> bool {
        self.flush();
        self.dbs.iter().all(|d| d.table.is_empty())
    }
}

impl Keyspace {
    /// A keyspace holding `index` (empty or recovered) whose changes go to `log`.
    pub fn new(mut index: RecoveredIndex, log: Rc<Writer>) -> Self {
        index.end_load();
        let expired = std::mem::take(&mut index.expired);
        let mut ks = Keyspace {
            dbs: index.dbs,
            stats: KeyspaceStats::default(),
            reads: ReadStats::default(),
            log,
            read_buf: ReadBuf::default(),
            prepared: None,
            prepared_key: Vec::new(),
            cache: cache::ValueCache::default(),
            retained_budget_bytes: 0,
            cache_budget_bytes: 0,
            colls: colls::CollCache::default(),
            error: None,
            writes: 0,
            heap_key_bytes: index.heap_key_bytes,
            early_sync: Rc::default(),
            watched: Default::default(),
            ready: Vec::new(),
            lent: None,
            cmd_depth: 0,
            cmd_records: 0,
            cmd_multi: false,
            cas: Default::default(),
            group_bytes: crate::coll::groups::DEFAULT_GROUP_BYTES,
            uncached: Default::default(),
            hfe: hfe::HfeIndex::discovering(),
            behind: None,
            behind_allowed: false,
            phys: Vec::new(),
            logi: Vec::new(),
            clock_mode: clock::ClockMode::default(),
            touch: true,
            rng: clock::Rng::default(),
            touch_serial: 0,
            lfu_last: (u64::MAX, 0, 0),
        };
        ks.phys = (0..ks.dbs.len()).collect();
        ks.logi = ks.phys.clone();
        // Keys that expired while the server was down: a tombstone each, so an older
        // version can never come back once their records' blocks are reclaimed (the
        // groups of a grouped one go with it, see [`Keyspace::load_groups`]).
        for (db, key, loc) in expired {
            if ks.append_tombstone(db, &key, true) {
                ks.log.release(loc.unpack());
            }
        }
        ks.load_groups();
        ks.writes = 0;
        ks
    }

    /// Places the databases as `map` says (`map[l]` = the physical database of logical
    /// database `l`, see `crate::dbmap`); called once, on a keyspace fresh from recovery
    /// (whose tables are in physical order).
    pub fn apply_db_map(&mut self, map: &[usize]) {
        assert_eq!(map.len(), self.dbs.len(), "database map size");
        let mut by_phys: Vec<Option<Db>> = std::mem::take(&mut self.dbs)
            .into_iter()
            .map(Some)
            .collect();
        self.dbs = map
            .iter()
            .map(|&p| by_phys[p].take().expect("database map is a permutation"))
            .collect();
        self.phys = map.to_vec();
        for (l, &p) in map.iter().enumerate() {
            self.logi[p] = l;
        }
    }

    /// The physical database (as record keys name it) of logical database `db`; a group
    /// record's database keeps its [`groups::GROUP_DB_BIT`].
    #[inline]
    pub fn physical_db(&self, db: usize) -> usize {
        let (d, group) = groups::split_db(db);
        match self.phys.get(d) {
            Some(&p) if group => p | groups::GROUP_DB_BIT,
            Some(&p) => p,
            None => db,
        }
    }

    /// The logical database of physical database `db` (the inverse of
    /// [`Keyspace::physical_db`]).
    #[inline]
    pub fn logical_db(&self, db: usize) -> usize {
        let (d, group) = groups::split_db(db);
        match self.logi.get(d) {
            Some(&l) if group => l | groups::GROUP_DB_BIT,
            Some(&l) => l,
            None => db,
        }
    }

    /// SWAPDB on this worker: databases `a` and `b` trade their keys. WATCHed keys of
    /// either database that exist in either are touched, and keys that blocked commands
    /// wait on in either database are marked ready when they now exist (as Redis does).
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        self.dbs.swap(a, b);
        self.hfe.swap_dbs(a, b);
        self.phys.swap(a, b);
        let (pa, pb) = (self.phys[a], self.phys[b]);
        self.logi[pa] = a;
        self.logi[pb] = b;
        self.prepared = None;
        if !self.cas.is_empty() {
            let exists =
                |ks: &Self, db: usize, k: &[u8]| ks.dbs[db].table.get(hash_key(k), k).is_some();
            for ((db, key), flags) in &self.cas {
                if (*db == a || *db == b) && (exists(self, a, key) || exists(self, b, key)) {
                    for f in flags {
                        f.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                }
            }
        }
        let waited: Vec<(usize, Vec<u8>)> = self
            .watched
            .keys()
            .filter(|(db, k)| {
                (*db == a || *db == b) && self.dbs[*db].table.get(hash_key(k), k).is_some()
            })
            .cloned()
            .collect();
        for (db, k) in waited {
            self.mark_ready(db, &k);
        }
    }

    /// The worker's log.
    pub fn log(&self) -> &Rc<Writer> {
        &self.log
    }

    /// The error of a failed append or read since the last call (the change was not
    /// applied).
    pub fn take_error(&mut self) -> Option<String> {
        self.error.take()
    }

    /// How many records have been appended so far (value records and tombstones). Two
    /// readings differ when something was appended in between; callers that must make
    /// their own writes durable compare readings around their own work, so no caller can
    /// consume another's "wrote" (under `appendfsync always` that let a reply out before
    /// its write was durable).
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// Number of databases.
    pub fn databases(&self) -> usize {
        self.dbs.len()
    }

    /// Bytes of RAM the index uses (tables and long keys).
    pub fn index_bytes(&self) -> usize {
        self.dbs
            .iter()
            .map(|d| {
                d.table.allocation_bytes()
                    + d.groups.allocation_bytes()
                    + d.dirs
                        .values()
                        .map(|v| v.capacity() * 8 + 48)
                        .sum::<usize>()
            })
            .sum::<usize>()
            + self.heap_key_bytes
    }

    /// Bytes held by the read buffer.
    pub fn read_buffer_bytes(&self) -> usize {
        self.read_buf.bytes
    }

    /// Bytes of RAM held by decoded collections (a cache; see `keyspace/colls.rs`).
    pub fn decoded_coll_bytes(&self) -> usize {
        self.colls.bytes()
    }

    /// Sets the value cache's budget (this worker's share of `value-cache-mb`); a smaller
    /// one evicts at once, 0 disables the cache and frees what it held.
    ///
    /// A quarter of it, in whole blocks and at most [`RETAINED_IMAGES_FLOOR_MAX_BYTES`],
    /// keeps the images of the blocks written last (decision 0033): a value written a moment
    /// ago is then read from RAM, with no cost to the write. Past that, the images may use
    /// what the cache leaves free while their records are live enough (decision 0034). The
    /// cache's stats count them in.
    pub fn set_value_cache_bytes(&mut self, capacity_bytes: usize) {
        let before = self.cache.stats().used_bytes;
        let block = self.log.store().block_size_bytes(0) as usize;
        let retained = (capacity_bytes / 4).min(RETAINED_IMAGES_FLOOR_MAX_BYTES) / block * block;
        self.retained_budget_bytes = retained;
        self.cache_budget_bytes = capacity_bytes;
        self.cache.set_capacity(capacity_bytes - retained);
        self.retune_retained_images();
        if self.cache.stats().used_bytes < before / 2 {
            crate::worker::collect_allocator(true);
        }
    }

    /// Gives the retained block images the part of the budget the value cache does not use
    /// (at least their floor), in whole blocks (decision 0034). Called once a second, and
    /// after an admission that took the cache and the images together over the budget.
    pub fn retune_retained_images(&mut self) {
        let block = self.log.store().block_size_bytes(0) as usize;
        let free = self
            .cache_budget_bytes
            .saturating_sub(self.cache.used_bytes())
            / block
            * block;
        let max = free.max(self.retained_budget_bytes);
        self.log
            .set_retained_image_budget(self.retained_budget_bytes, max);
    }

    /// Admits `v` (at `k`) to the value cache; the retained images give way if the two
    /// together are now over the budget.
    #[inline]
    fn admit(&mut self, k: cache::CacheKey, v: cache::SharedValue) {
        self.cache.insert(k, v);
        let retained_max = self.log.retained_image_max_bytes();
        if self.cache.used_bytes() + retained_max > self.cache_budget_bytes
            && retained_max > self.retained_budget_bytes
        {
            self.retune_retained_images();
        }
    }

    /// The value cache's sizes and counters.
    pub fn value_cache_stats(&self) -> cache::CacheStats {
        let mut s = self.cache.stats();
        s.capacity_bytes += self.retained_budget_bytes as u64;
        s.used_bytes += self.log.retained_image_bytes() as u64;
        s
    }

    /// Clears the value cache's hit, miss and eviction counters (CONFIG RESETSTAT).
    pub fn reset_value_cache_stats(&mut self) {
        self.cache.reset_stats();
    }

    // ----- the log -----

    fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            self.error = Some(msg);
        }
    }

    /// Appends a value record; None (and the error kept for the reply) when refused.
    fn append_value(
        &mut self,
        db: usize,
        key: &[u8],
        value_type: u8,
        value: &[u8],
        at_ms: i64,
    ) -> Option<PackedLoc> {
        if self.error.is_some() {
            return None;
        }
        let rk = record_key(self.physical_db(db), key);
        let meta = RecordMeta {
            kind: RecordKind::Value,
            value_type,
            flags: self.join_flag(),
            mutation_seq: self.log.next_seq(),
            expiry_ms: at_ms.max(0),
        };
        match self.log.append(meta, &rk, value) {
            Ok(loc) => {
                self.writes += 1;
                self.cmd_records += 1;
                if loc.offset_bytes == skerry_store::format::BLOCK_HEADER_BYTES as u32 {
                    // A block was just opened (so one may have been sealed).
                    self.sync_if_backlogged();
                }
                Some(PackedLoc::pack(&loc))
            }
            Err(e) => {
                tracing::warn!("write refused: {e}");
                self.fail(e.to_string());
                None
            }
        }
    }

    /// Appends a tombstone; false (error kept unless `quiet`) when refused.
    fn append_tombstone(&mut self, db: usize, key: &[u8], quiet: bool) -> bool {
        if self.error.is_some() && !quiet {
            return false;
        }
        let rk = record_key(self.physical_db(db), key);
        let meta = RecordMeta {
            kind: RecordKind::Tombstone,
            value_type: VALUE_TYPE_STRING,
            flags: self.join_flag(),
            mutation_seq: self.log.next_seq(),
            expiry_ms: 0,
        };
        match self.log.append(meta, &rk, &[]) {
            Ok(_) => {
                self.writes += 1;
                self.cmd_records += 1;
                true
            }
            Err(e) => {
                tracing::warn!("tombstone refused: {e}");
                if !quiet {
                    self.fail(e.to_string());
                }
                false
            }
        }
    }

    /// The record flags of the next append: JOIN inside a multi-record command (see
    /// [`Keyspace::begin_command`]).
    fn join_flag(&self) -> u16 {
        if self.cmd_multi {
            skerry_store::format::RECORD_FLAG_JOIN
        } else {
            0
        }
    }

    /// A command starts. With `multi` (a command that may write several records: several
    /// keys, MOVE, EXEC), every record it appends is flagged JOIN and
    /// [`Keyspace::end_command`] appends an end marker: recovery applies such a command's
    /// records only when the marker made it to the device, so the command is whole or
    /// absent after a crash. Nests: the outermost begin decides (EXEC around its commands).
    pub fn begin_command(&mut self, multi: bool) {
        if self.cmd_depth == 0 {
            self.cmd_records = 0;
            self.cmd_multi = multi;
        }
        self.cmd_depth += 1;
    }

    /// The command is done; a multi-record command that wrote something gets its end
    /// marker.
    pub fn end_command(&mut self) {
        debug_assert!(self.cmd_depth > 0, "end_command without begin_command");
        self.cmd_depth = self.cmd_depth.saturating_sub(1);
        if self.cmd_depth > 0 {
            return;
        }
        self.prepared = None;
        let wrote = std::mem::take(&mut self.cmd_records) > 0;
        if !std::mem::take(&mut self.cmd_multi) || !wrote {
            return;
        }
        let meta = RecordMeta {
            kind: RecordKind::CommandEnd,
            value_type: 0,
            flags: 0,
            mutation_seq: self.log.next_seq(),
            expiry_ms: 0,
        };
        match self.log.append(meta, &[], &[]) {
            // Nothing ever points at the marker: its space is free once it is durable.
            Ok(loc) => self.log.release(loc),
            Err(e) => {
                tracing::error!("end marker of a multi-record command refused: {e}");
                self.fail(format!(
                    "{e} (the command's changes may not survive a restart)"
                ));
            }
        }
    }

    /// Starts a sync when sealed staging images pile up (see [`SEALED_STAGED_MAX_BYTES`]).
    fn sync_if_backlogged(&self) {
        if self.early_sync.get() || self.log.sealed_staged_bytes() <= SEALED_STAGED_MAX_BYTES {
            return;
        }
        self.early_sync.set(true);
        let (log, flag) = (self.log.clone(), self.early_sync.clone());
        compio::runtime::spawn(async move {
            if let Err(e) = log.commit().await {
                tracing::error!("data file sync failed: {e}");
            }
            flag.set(false);
        })
        .detach();
    }

    // ----- values -----

    fn buf_key(&self, loc: PackedLoc) -> (u64, u64) {
        let l = loc.unpack();
        (loc.bits(), self.log.store().block_seq(l.block_id()))
    }

    /// The value at `loc` if it can be served without waiting: from the read buffer, the
    /// value cache, or decoded from the writer's staging images (and then kept in the read
    /// buffer). Counts nothing (the handler's lookup; [`Keyspace::missing`] counted).
    fn resident(&mut self, loc: PackedLoc) -> Option<cache::SharedValue> {
        let k = self.buf_key(loc);
        if let Some(v) = self.cache.peek(k) {
            return Some(v.clone());
        }
        if let Some(v) = self.read_buf.get(k) {
            return Some(v.clone());
        }
        let v = self.log.staged_value(&loc.unpack())?;
        self.reads.staged_reads += 1;
        Some(self.read_buf.insert(k, Rc::new(v)))
    }

    /// Starts bringing the index entries of `keys` (in `db`) and their cached values into
    /// the CPU cache, for commands that will look them up soon: the next commands of a
    /// pipeline. Each lookup of a GET or SET waits for a few memory loads, one after the
    /// other (the bucket's control bytes, the entry, the cache's slot, the value); done for
    /// a batch, step by step, the loads of different keys overlap. Each key comes with
    /// whether its command reads the value (only then is the value brought in). Only a
    /// hint: changes nothing, counts nothing.
    pub fn prefetch(&self, db: usize, keys: &[(&[u8], bool)]) {
        let Some(d) = self.dbs.get(db) else {
            return;
        };
        let mut hashes = [0u64; PREFETCH_MAX_KEYS];
        let n = keys.len().min(PREFETCH_MAX_KEYS);
        for (h, (k, _)) in hashes.iter_mut().zip(keys) {
            *h = hash_key(k);
            d.table.prefetch_bucket(*h);
        }
        for &h in &hashes[..n] {
            d.table.prefetch_slots(h);
        }
        for &h in &hashes[..n] {
            d.table.prefetch_keys(h);
        }
        if self.cache.is_empty() {
            return;
        }
        // The values, for the commands that read them.
        for (&h, &(k, reads)) in hashes[..n].iter().zip(keys) {
            if !reads {
                continue;
            }
            if let Some(e) = d.table.get(h, k) {
                if let Some(v) = self.cache.peek(self.buf_key(e.loc())) {
                    cache::prefetch_value(v);
                }
            }
        }
    }

    /// The string value [`Keyspace::missing`] prepared for `key`, if it is still the key's
    /// (nothing changed in the table since, same command time).
    fn take_prepared(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: i64,
    ) -> Option<(cache::SharedValue, SlotRef)> {
        let p = self.prepared.take()?;
        (p.db == db
            && p.now_ms == now_ms
            && p.table_changes == self.dbs[db].table.changes()
            && self.prepared_key == key)
            .then_some((p.value, p.slot))
    }

    /// The value at `loc`, which the caller made resident; None (and an error for the
    /// reply) when it is not.
    fn resident_value(&mut self, loc: PackedLoc) -> Option<cache::SharedValue> {
        let v = self.resident(loc);
        if v.is_none() {
            self.reads.missing_reads += 1;
            tracing::error!(
                "value at {:?} needed but not resident (not prefetched)",
                loc.unpack()
            );
            self.fail("internal error: value not resident, please report".into());
        }
        v
    }

    /// Trims the read buffer ([`ReadBuf::make_room`]) to its budget and to its entry cap,
    /// which follows the value cache: [`READ_BUF_CACHED_MAX_ENTRIES`] when it is on,
    /// [`READ_BUF_MAX_ENTRIES`] when it is off.
    fn trim_read_buf(&mut self, mark: u64) {
        let max_entries = if self.cache.enabled() {
            READ_BUF_CACHED_MAX_ENTRIES
        } else {
            READ_BUF_MAX_ENTRIES
        };
        self.read_buf.make_room(mark, max_entries);
    }

    /// Trims the read buffer to its budget when it holds more (the chunks of a big value
    /// read for a command that has run), keeping nothing back: for the worker's periodic
    /// housekeeping, so that an idle worker does not keep a big value's chunks. A command
    /// between its residency check and its handler never awaits, so it cannot lose its
    /// values; one still reading reads them again.
    pub fn trim_read_buffer(&mut self) {
        if self.read_buf.bytes > READ_BUF_BUDGET_BYTES {
            let mark = self.read_buf.next;
            self.trim_read_buf(mark);
        }
    }

    /// The read buffer's mark: values made resident after it are not evicted by calls
    /// passing it (take it once per command, before its first [`Keyspace::missing`]).
    pub fn read_mark(&self) -> u64 {
        self.read_buf.next
    }

    /// Makes the value at `loc` resident without I/O if it can be (counting where it was
    /// found). `coll`: the record is a collection's, which may be decoded already.
    /// `admit` false: the value does not enter the value cache (now, or when
    /// [`Keyspace::fill`] gets it: the chunks of a string too big for the cache, see
    /// [`chunked`]).
    fn resident_now(&mut self, loc: PackedLoc, mark: u64, coll: bool, admit: bool) -> Resident {
        let k = self.buf_key(loc);
        // Fetched for this command by an earlier round: already counted.
        if let Some(v) = self.read_buf.get_since(k, mark) {
            return Resident::Value(v.clone());
        }
        if coll && self.colls.contains(k) {
            return Resident::Decoded;
        }
        if let Some(v) = self.cache.get(k) {
            return Resident::Value(v.clone());
        }
        // A cache miss (when enabled) from here on: the value enters the cache, read now.
        if let Some(v) = self.read_buf.get(k) {
            self.reads.buffer_hits += 1;
            let v = v.clone();
            if admit {
                self.admit(k, v.clone());
            }
            return Resident::Value(v);
        }
        if let Some(v) = self.log.staged_value(&loc.unpack()) {
            self.reads.staged_reads += 1;
            let v = self.read_buf.insert(k, Rc::new(v));
            if admit {
                self.admit(k, v.clone());
            }
            return Resident::Value(v);
        }
        if !admit {
            self.uncached.insert(k);
        }
        Resident::No
    }

    /// Locations of the values of `keys` (in `db`) that are not resident; expired keys are
    /// removed on the way. Older values than `mark` may be evicted from the read buffer.
    pub fn missing(&mut self, db: usize, keys: &[&[u8]], now_ms: i64, mark: u64) -> Locations {
        self.missing_need(db, keys, None, now_ms, mark)
    }

    /// [`Keyspace::missing`] for a command that needs only part of its grouped streams:
    /// `needs[i]` is what it needs of `keys[i]` (see [`crate::coll::stream::Need`]; None,
    /// or a key past the end: everything).
    pub fn missing_need(
        &mut self,
        db: usize,
        keys: &[&[u8]],
        needs: Option<&[crate::coll::stream::Need]>,
        now_ms: i64,
        mark: u64,
    ) -> Locations {
        self.trim_read_buf(mark);
        self.colls.make_room();
        self.prepared = None;
        let mut out = Locations::new();
        for (i, key) in keys.iter().enumerate() {
            let hash = hash_key(key);
            // Not an access yet: the handler's lookup is (or, for the value prepared here,
            // [`Keyspace::with_value_parts`] through `slot`).
            let Some((slot, loc, value_type)) = self.live_slot(db, hash, key, now_ms) else {
                continue;
            };
            let grouped = self.is_grouped_key(db, key);
            match self.resident_now(loc, mark, value_type != VALUE_TYPE_STRING, true) {
                Resident::No => {
                    let l = loc.unpack();
                    if !out.contains(&l) {
                        out.push(l);
                    }
                }
                Resident::Value(value)
                    if keys.len() == 1 && value_type == VALUE_TYPE_STRING && !grouped =>
                {
                    self.prepared_key.clear();
                    self.prepared_key.extend_from_slice(key);
                    self.prepared = Some(Prepared {
                        db,
                        slot,
                        table_changes: self.dbs[db].table.changes(),
                        now_ms,
                        value,
                    });
                }
                Resident::Value(_) | Resident::Decoded => {}
            }
            // A grouped collection not decoded yet needs its groups too; a grouped stream
            // only those the command needs.
            if grouped && value_type == crate::coll::VALUE_TYPE_STREAM {
                let need = needs.and_then(|n| n.get(i));
                self.missing_stream(db, key, loc, need, mark, &mut out);
            } else if grouped {
                let k = self.buf_key(loc);
                if !self.colls.contains(k) {
                    self.missing_groups(db, key, mark, &mut out);
                }
            }
        }
        out
    }

    /// Puts values read by [`fetch`] into the read buffer (evicting values older than
    /// `mark` past the budget first) and the value cache. Err with the reply message when a
    /// read failed.
    pub fn fill(&mut self, got: FetchedValues, mark: u64) -> Result<(), String> {
        self.trim_read_buf(mark);
        let mut first_err = None;
        for f in got {
            match f.value {
                Ok(v) => {
                    self.reads.device_reads += 1;
                    let Some(block_seq) = f.block_seq else {
                        // The block was reused while the read was in flight: the bytes
                        // belong to no record the index still points at; the caller's next
                        // `missing` reads what the key points at now.
                        continue;
                    };
                    let k = (PackedLoc::pack(&f.location).bits(), block_seq);
                    let v = self.read_buf.insert(k, v);
                    if self.uncached.is_empty() || !self.uncached.contains(&k) {
                        self.admit(k, v);
                    }
                }
                Err(e) => {
                    self.reads.failed_reads += 1;
                    first_err.get_or_insert_with(|| read_error_message(&e));
                }
            }
        }
        self.uncached.clear();
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    // ----- reads -----

    /// Removes `key` if its time has run out (leaving a tombstone); true when removed.
    fn expire_if_due(&mut self, db: usize, hash: u64, key: &[u8], now_ms: i64) -> bool {
        let due = self.dbs[db]
            .table
            .get(hash, key)
            .is_some_and(|e| e.expired(now_ms));
        if due {
            self.remove_expired(db, hash, key);
        }
        due
    }

    /// Removes an expired key: a tombstone first, so an older version can never come back;
    /// when even the tombstone cannot be written, the record is kept on the device (it is
    /// expired there too).
    fn remove_expired(&mut self, db: usize, hash: u64, key: &[u8]) {
        let grouped = self.is_grouped_key(db, key);
        let logged = self.as_one_unit(grouped, |ks| {
            let logged = ks.append_tombstone(db, key, true);
            if grouped && logged {
                ks.drop_groups(db, key, true);
            }
            logged
        });
        let d = &mut self.dbs[db];
        if let Some(e) = d.table.remove(hash, key) {
            d.volatile -= 1;
            self.heap_key_bytes -= e.heap_bytes();
            self.stats.expired += 1;
            self.forget_decoded(&e);
            if logged {
                self.log.release(e.loc().unpack());
            }
        }
        self.signal_watchers(db, key);
    }

    /// The location of the live key's record, its expiry and its value type (one table
    /// lookup; an expired key is removed). An access: the key's clock is updated unless
    /// the command does not touch ([`Keyspace::set_touch`]).
    #[inline]
    fn live_loc_typed(
        &mut self,
        db: usize,
        hash: u64,
        key: &[u8],
        now_ms: i64,
    ) -> Option<(PackedLoc, i64, u8)> {
        let e = self.dbs[db].table.get_quiet_mut(hash, key)?;
        if e.expired(now_ms) {
            self.remove_expired(db, hash, key);
            return None;
        }
        if self.touch {
            touch_entry(e, self.clock_mode, now_ms, &mut self.rng);
            if self.clock_mode.lfu {
                self.lfu_last = (self.touch_serial, db, hash);
            }
        }
        Some((e.loc(), e.expire_at_ms(), e.value_type()))
    }

    /// [`Keyspace::live_loc_typed`] without the access, with where the entry is.
    #[inline]
    fn live_slot(
        &mut self,
        db: usize,
        hash: u64,
        key: &[u8],
        now_ms: i64,
    ) -> Option<(SlotRef, PackedLoc, u8)> {
        let (slot, e) = self.dbs[db].table.find_ref(hash, key)?;
        if e.expired(now_ms) {
            self.remove_expired(db, hash, key);
            return None;
        }
        Some((slot, e.loc(), e.value_type()))
    }

    /// The live key's entry (an access, as for [`Keyspace::live_loc_typed`]).
    fn live_entry(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<&Entry> {
        let hash = hash_key(key);
        let e = self.dbs[db].table.get_quiet_mut(hash, key)?;
        if e.expired(now_ms) {
            self.remove_expired(db, hash, key);
            return None;
        }
        if self.touch {
            touch_entry(e, self.clock_mode, now_ms, &mut self.rng);
            if self.clock_mode.lfu {
                self.lfu_last = (self.touch_serial, db, hash);
            }
        }
        self.dbs[db].table.get(hash, key)
    }

    // ----- the access clock -----

    /// Whether the next lookups are accesses that update the key's clock (Redis's
    /// `lookupKey` without `LOOKUP_NOTOUCH`): the dispatcher sets it for each command
    /// (false for TYPE, TTL, EXISTS, OBJECT, ... and for a client in CLIENT NO-TOUCH
    /// unless the command is TOUCH).
    ///
    /// Each call also starts a new command for the LFU counter: a key looked up and then
    /// written by one command counts one access, as in Redis.
    #[inline]
    pub fn set_touch(&mut self, on: bool) {
        self.touch = on;
        self.touch_serial = self.touch_serial.wrapping_add(1);
    }

    /// Sets how access clocks are read and updated (from the configuration).
    #[inline]
    pub fn set_clock_mode(&mut self, mode: clock::ClockMode) {
        self.clock_mode = mode;
    }

    /// How access clocks are read and updated.
    pub fn clock_mode(&self) -> clock::ClockMode {
        self.clock_mode
    }

    /// The access clock of the live key (no access; expired keys are removed), None when
    /// the key does not exist. A key lent to the running command reads as just accessed.
    pub fn access_clock(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<u16> {
        if let Some(l) = self.lent_for(db, key) {
            return l
                .get(db, key, now_ms)
                .map(|_| self.clock_mode.new_clock(now_ms));
        }
        let hash = hash_key(key);
        self.live_slot(db, hash, key, now_ms)?;
        self.dbs[db].table.get(hash, key).map(|e| e.clock())
    }

    /// Sets the access clock of an existing key (RESTORE's IDLETIME and FREQ); false when
    /// the key does not exist.
    pub fn set_access_clock(&mut self, db: usize, key: &[u8], clock: u16) -> bool {
        match self.dbs[db].table.get_quiet_mut(hash_key(key), key) {
            Some(e) => {
                e.set_clock(clock);
                true
            }
            None => false,
        }
    }

    /// The live key's value and expiry, counting a hit or a miss. None also when the value
    /// could not be read (the error is kept for the reply).
    pub fn get(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<Got> {
        let found = self.peek(db, key, now_ms);
        if found.is_some() {
            self.stats.hits += 1;
        } else {
            self.stats.misses += 1;
        }
        found
    }

    /// Calls `f` with the live key's value in place (no copy; for GET), counting a hit or a
    /// miss. None when the key is missing or its value could not be read (the error is
    /// kept for the reply).
    pub fn with_value<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: i64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>, WrongType> {
        self.with_value_parts(db, key, now_ms, |parts| match parts {
            [v] => f(v),
            parts => f(&parts.concat()),
        })
    }

    /// [`Keyspace::with_value`] with the value as its parts in order: one part for a value
    /// stored as one record, its chunks for a big string (keyspace/chunked.rs), so that
    /// GET writes a big value's reply without joining it first.
    pub fn with_value_parts<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: i64,
        f: impl FnOnce(&[&[u8]]) -> R,
    ) -> Result<Option<R>, WrongType> {
        if let Some((v, slot)) = self.take_prepared(db, key, now_ms) {
            // Found by this command's `missing` (never a big string's root): no second
            // probe; the access goes through the slot found then.
            if self.touch {
                let e = self.dbs[db].table.at_quiet_mut(slot);
                touch_entry(e, self.clock_mode, now_ms, &mut self.rng);
                if self.clock_mode.lfu {
                    self.lfu_last = (self.touch_serial, db, hash_key(key));
                }
            }
            self.stats.hits += 1;
            return Ok(Some(f(&[&v[..]])));
        }
        let hash = hash_key(key);
        let found = match self.live_loc_typed(db, hash, key, now_ms) {
            None => None,
            Some((loc, _, value_type)) => {
                if value_type != VALUE_TYPE_STRING {
                    self.stats.hits += 1;
                    return Err(WrongType);
                }
                let v = self.resident_value(loc);
                // Only a value shaped like a big string's root costs a directory lookup.
                if v.as_ref().is_some_and(|v| chunked::looks_like_root(v))
                    && self.is_grouped_key(db, key)
                {
                    let Some(parts) = self.chunk_parts(db, key, loc) else {
                        self.stats.misses += 1;
                        return Ok(None);
                    };
                    self.stats.hits += 1;
                    let refs: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
                    return Ok(Some(f(&refs)));
                }
                v
            }
        };
        let Some(v) = found else {
            self.stats.misses += 1;
            return Ok(None);
        };
        self.stats.hits += 1;
        Ok(Some(f(&[&v[..]])))
    }

    /// [`Keyspace::get`] without touching hit/miss counters (for writes that read).
    pub fn peek(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<Got> {
        if let Some(l) = self.lent_for(db, key) {
            return l.get(db, key, now_ms).map(|v| v.to_got());
        }
        let hash = hash_key(key);
        let (loc, expire_at_ms, value_type) = self.live_loc_typed(db, hash, key, now_ms)?;
        if value_type != VALUE_TYPE_STRING {
            if self.is_grouped_key(db, key) {
                // The whole collection as one value (the caller made its groups resident).
                self.decode_coll(db, key, value_type, now_ms).ok()??;
            }
            if let Some(c) = self.colls.get(self.buf_key(loc)) {
                let mut encoded = Vec::new();
                c.encode_compact(&mut encoded);
                return Some(Got {
                    value: Value::Coll {
                        value_type,
                        encoded,
                    },
                    expire_at_ms,
                });
            }
        }
        let v = self.resident_value(loc)?;
        if value_type == VALUE_TYPE_STRING
            && chunked::looks_like_root(&v)
            && self.is_grouped_key(db, key)
        {
            let v = self.chunked_value(db, key, loc)?;
            return Some(Got {
                value: Value::Str(v),
                expire_at_ms,
            });
        }
        let value = if value_type == VALUE_TYPE_STRING {
            Value::Str(v.to_vec())
        } else {
            Value::Coll {
                value_type,
                encoded: v.to_vec(),
            }
        };
        Some(Got {
            value,
            expire_at_ms,
        })
    }

    /// The live key's metadata, without reading its value.
    pub fn meta(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<Meta> {
        if let Some(l) = self.lent_for(db, key) {
            return l.get(db, key, now_ms).map(|v| Meta {
                expire_at_ms: v.expire_at_ms,
                value_type: v.value_type(),
            });
        }
        self.live_entry(db, key, now_ms).map(|e| Meta {
            expire_at_ms: e.expire_at_ms(),
            value_type: e.value_type(),
        })
    }

    /// True when `key` exists and has not expired.
    pub fn exists(&mut self, db: usize, key: &[u8], now_ms: i64) -> bool {
        if let Some(l) = self.lent_for(db, key) {
            return l.get(db, key, now_ms).is_some();
        }
        self.live_entry(db, key, now_ms).is_some()
    }

    // ----- writes -----

    /// Stores the string `value` under `key`, with `expiry` deciding the key's TTL. False
    /// when the write was refused (the error is kept for the reply; nothing changed).
    pub fn put(
        &mut self,
        db: usize,
        key: &[u8],
        value: &[u8],
        expiry: Expiry,
        now_ms: i64,
    ) -> bool {
        if let Some(l) = self.lent_for_mut(db, key) {
            l.set(db, key, Some(lent::LentData::Str(value.to_vec())), expiry);
            self.stats.dirty += 1;
            return true;
        }
        self.put_record(db, key, VALUE_TYPE_STRING, value, expiry, now_ms)
            .is_some()
    }

    /// Stores `value` (a record value of `value_type`, not a grouped root) under `key`,
    /// removing the groups of a grouped collection it replaces; the new record's location,
    /// None when the write was refused (the error is kept).
    fn put_record(
        &mut self,
        db: usize,
        key: &[u8],
        value_type: u8,
        value: &[u8],
        expiry: Expiry,
        now_ms: i64,
    ) -> Option<PackedLoc> {
        if value_type == VALUE_TYPE_STRING && chunked::is_big(value.len()) {
            // A big string: a root and chunks (keyspace/chunked.rs).
            return self.put_chunked(db, key, value, expiry, now_ms);
        }
        if !self.is_grouped_key(db, key) {
            return self.put_record_keep(db, key, value_type, value, expiry, now_ms);
        }
        let loc = self.as_one_unit(true, |ks| {
            let loc = ks.put_record_keep(db, key, value_type, value, expiry, now_ms);
            if loc.is_some() {
                ks.drop_groups(db, key, false);
            }
            loc
        });
        loc.filter(|_| self.error.is_none())
    }

    /// Stores `value` (a record value of `value_type`) under `key`, leaving group records
    /// alone; the new record's location, None when the write was refused (the error is
    /// kept; nothing changed).
    fn put_record_keep(
        &mut self,
        db: usize,
        key: &[u8],
        value_type: u8,
        value: &[u8],
        expiry: Expiry,
        now_ms: i64,
    ) -> Option<PackedLoc> {
        let hash = hash_key(key);
        // An expired old version is simply superseded by the new record. Where the entry
        // is (or that there is none) holds until the table changes: the append below
        // rarely changes it, and then the entry is looked up again.
        let found = self.dbs[db].table.find_ref(hash, key);
        let slot = found.as_ref().map(|(r, _)| *r);
        let old = found.map(|(_, e)| (e.expired(now_ms), e.expire_at_ms()));
        let changes = self.dbs[db].table.changes();
        let kept = match old {
            Some((false, at)) => at,
            _ => 0,
        };
        let at = match expiry {
            Expiry::Persist => 0,
            Expiry::Keep => kept,
            Expiry::At(t) => t,
        };
        let loc = self.append_value(db, key, value_type, value, at)?;
        if !self.watched.is_empty() {
            self.mark_ready(db, key);
        }
        self.touch(db, key);
        let (mut touch, mode) = (self.touch, self.clock_mode);
        if mode.lfu && self.lfu_last == (self.touch_serial, db, hash) {
            // Looked up (and counted) by this command already.
            touch = false;
        }
        let d = &mut self.dbs[db];
        let unchanged = d.table.changes() == changes;
        let entry = match slot {
            Some(r) if unchanged => Some(d.table.at_mut(r)),
            None if unchanged => None,
            _ => d.table.get_mut(hash, key),
        };
        if let Some(e) = entry {
            let old_loc = e.loc();
            let old_type = e.value_type();
            let was_volatile = e.expire_at_ms() != 0;
            // A write is an access (Redis's lookupKeyWrite before it keeps the old
            // object's clock); a key whose time had run out is a new key.
            match old {
                Some((true, _)) => e.set_clock(mode.new_clock(now_ms)),
                _ if touch => touch_entry(e, mode, now_ms, &mut self.rng),
                _ => {}
            }
            e.set_loc(loc);
            e.set_expire_at_ms(at);
            e.set_value_type(value_type);
            match (was_volatile, at != 0) {
                (false, true) => d.volatile += 1,
                (true, false) => d.volatile -= 1,
                _ => {}
            }
            if matches!(old, Some((true, _))) {
                self.stats.expired += 1;
            }
            self.forget_value(old_loc, old_type);
            self.log.release(old_loc.unpack());
            return Some(loc);
        }
        if at != 0 {
            d.volatile += 1;
        }
        let mut e = Entry::new(key, loc, value_type, at);
        e.set_clock(mode.new_clock(now_ms));
        self.heap_key_bytes += e.heap_bytes();
        if unchanged {
            d.table.insert_absent(hash, e);
        } else {
            d.table.insert(e);
        }
        Some(loc)
    }

    /// Stores `value` (of any type) under `key` with `expiry`; false when refused.
    pub fn put_value(
        &mut self,
        db: usize,
        key: &[u8],
        value: &Value,
        expiry: Expiry,
        now_ms: i64,
    ) -> bool {
        if self.lent_for(db, key).is_some() {
            let data = match value {
                Value::Str(v) => lent::LentData::Str(v.clone()),
                Value::Coll {
                    value_type,
                    encoded,
                } => match Coll::decode(*value_type, encoded) {
                    Ok(c) => lent::LentData::Coll(c),
                    Err(e) => {
                        self.fail(e.to_string());
                        return false;
                    }
                },
            };
            let l = self.lent_for_mut(db, key).expect("lent");
            l.set(db, key, Some(data), expiry);
            self.stats.dirty += 1;
            return true;
        }
        let (value_type, bytes) = value.record();
        if value_type != VALUE_TYPE_STRING
            && (bytes.len() > 2 * self.group_bytes || self.is_grouped_key(db, key))
        {
            // Big enough to be grouped (or replacing a grouped one): through the
            // collection writer, which picks the layout.
            return match Coll::decode(value_type, bytes) {
                Ok(c) => self.store_coll(db, key, c, expiry, now_ms),
                Err(e) => {
                    self.fail(e.to_string());
                    false
                }
            };
        }
        self.hfe_note_record(db, key, value_type, bytes, now_ms);
        self.put_record(db, key, value_type, bytes, expiry, now_ms)
            .is_some()
    }

    /// Drops the decoded copy of a collection entry being removed or replaced, and frees its
    /// value from the value cache.
    fn forget_decoded(&mut self, e: &Entry) {
        self.forget_value(e.loc(), e.value_type());
    }

    /// Drops what is held in memory of the record at `loc` (of `value_type`), which was
    /// replaced or removed: its decoded collection, and its value in the value cache.
    fn forget_value(&mut self, loc: PackedLoc, value_type: u8) {
        let k = self.buf_key(loc);
        if value_type != VALUE_TYPE_STRING {
            self.colls.remove(k);
        }
        self.cache.invalidate(k);
    }

    /// Removes `key`; true when a live key was removed.
    pub fn delete(&mut self, db: usize, key: &[u8], now_ms: i64) -> bool {
        if let Some(l) = self.lent_for_mut(db, key) {
            let existed = l.get(db, key, now_ms).is_some();
            l.set(db, key, None, Expiry::Persist);
            self.stats.dirty += u64::from(existed);
            return existed;
        }
        self.hfe.forget(db, key);
        let hash = hash_key(key);
        if self.expire_if_due(db, hash, key, now_ms) {
            return false;
        }
        if self.dbs[db].table.get(hash, key).is_none() {
            return false;
        }
        let grouped = self.is_grouped_key(db, key);
        self.as_one_unit(grouped, |ks| {
            let logged = ks.append_tombstone(db, key, false);
            if logged {
                let d = &mut ks.dbs[db];
                let e = d.table.remove(hash, key).expect("present");
                if e.expire_at_ms() != 0 {
                    d.volatile -= 1;
                }
                ks.heap_key_bytes -= e.heap_bytes();
                ks.forget_decoded(&e);
                ks.log.release(e.loc().unpack());
                ks.touch(db, key);
                if grouped {
                    ks.drop_groups(db, key, false);
                }
                // A blocked XREADGROUP is served (with its error) when its key goes.
                if !ks.watched.is_empty() {
                    ks.mark_ready(db, key);
                }
            }
            logged
        })
    }

    /// Writes the live value and expiry of `key` (in `db`) under `dst` in `dst_db`, for
    /// COPY, RENAME and MOVE; the value must be resident. False when `key` is missing or the
    /// read or the write failed (the error is kept for the reply).
    pub fn copy_value(
        &mut self,
        db: usize,
        key: &[u8],
        dst_db: usize,
        dst: &[u8],
        now_ms: i64,
    ) -> bool {
        let Some(Got {
            value,
            expire_at_ms,
        }) = self.peek(db, key, now_ms)
        else {
            return false;
        };
        self.put_value(
            dst_db,
            dst,
            &value,
            Expiry::of_entry_ms(expire_at_ms),
            now_ms,
        )
    }

    /// Sets or clears the expiry of an existing key (rewriting its record, so its value
    /// must be resident); false when the key does not exist or the write was refused.
    pub fn set_expiry(&mut self, db: usize, key: &[u8], expire_at_ms: i64, now_ms: i64) -> bool {
        if self.lent_for(db, key).is_none() && self.is_grouped_key(db, key) {
            // Only the root carries the expiry: rewrite it alone.
            let hash = hash_key(key);
            let Some((loc, _, value_type)) = self.live_loc_typed(db, hash, key, now_ms) else {
                return false;
            };
            let decoded = self.colls.take(self.buf_key(loc));
            let root = match &decoded {
                Some(c) => {
                    let mut v = Vec::new();
                    c.encode(&mut v);
                    Rc::new(v)
                }
                None => match self.resident_value(loc) {
                    Some(v) => v,
                    None => return false,
                },
            };
            let Some(new) =
                self.put_record_keep(db, key, value_type, &root, Expiry::At(expire_at_ms), now_ms)
            else {
                return false;
            };
            if let Some(c) = decoded {
                let k = self.buf_key(new);
                self.colls.insert(k, c);
            }
            return true;
        }
        let Some(Got { value, .. }) = self.peek(db, key, now_ms) else {
            return false;
        };
        self.put_value(db, key, &value, Expiry::At(expire_at_ms), now_ms)
    }

    /// Number of keys in `db` (including keys whose time ran out but were not yet removed,
    /// as Redis's DBSIZE does).
    pub fn len(&self, db: usize) -> usize {
        self.dbs[db].table.len()
    }

    /// True when `db` holds no keys.
    pub fn is_empty(&self, db: usize) -> bool {
        self.dbs[db].table.is_empty()
    }

    /// Number of keys with an expiry in `db`.
    pub fn volatile_len(&self, db: usize) -> usize {
        self.dbs[db].volatile
    }

    /// Sum of remaining TTLs over volatile keys of `db` (for INFO's avg_ttl).
    pub fn avg_ttl_ms(&self, db: usize, now_ms: i64) -> i64 {
        let mut sum: i64 = 0;
        let mut n: i64 = 0;
        self.dbs[db].table.for_each(|e| {
            if e.expire_at_ms() != 0 {
                sum += (e.expire_at_ms() - now_ms).max(0);
                n += 1;
            }
        });
        if n == 0 {
            0
        } else {
            sum / n
        }
    }

    /// Removes every key of `db` (one tombstone each); returns how many there were. Stops
    /// early (the error kept for the reply) when a tombstone cannot be written.
    pub fn flush(&mut self, db: usize) -> usize {
        for ((d, k), flags) in &self.cas {
            // Only keys that exist change (Redis: a watched missing key stays untouched).
            if *d == db && self.dbs[db].table.get(hash_key(k), k).is_some() {
                for f in flags {
                    f.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
        }
        let mut keys: Vec<Vec<u8>> = Vec::with_capacity(self.dbs[db].table.len());
        self.dbs[db].table.for_each(|e| keys.push(e.key().to_vec()));
        let n = keys.len();
        for k in keys {
            // The root first: a crash in between leaves groups without a root, which the
            // next start removes (never a root without its groups).
            if !self.append_tombstone(db, &k, false) {
                return n - self.dbs[db].table.len();
            }
            if self.is_grouped_key(db, &k) && !self.drop_groups(db, &k, false) {
                return n - self.dbs[db].table.len();
            }
            let d = &mut self.dbs[db];
            if let Some(e) = d.table.remove(hash_key(&k), &k) {
                if e.expire_at_ms() != 0 {
                    d.volatile -= 1;
                }
                self.heap_key_bytes -= e.heap_bytes();
                self.forget_decoded(&e);
                self.log.release(e.loc().unpack());
                self.stats.dirty += 1;
            }
            // A blocked XREADGROUP is served (with its error) when its key goes.
            if !self.watched.is_empty() {
                self.mark_ready(db, &k);
            }
        }
        self.hfe.clear_db(db);
        let d = &mut self.dbs[db];
        d.expire_cursor = 0;
        if d.table.is_empty() {
            d.table.clear();
        }
        n
    }

    /// One step of active expiry: in every database holding keys with a TTL, examines about
    /// `chunk` keys from where the previous step stopped and removes those whose time ran
    /// out. Returns (keys examined, keys removed, true when every such database finished a
    /// full pass over its keys in this step).
    pub fn active_expire_step(&mut self, now_ms: i64, chunk: usize) -> (usize, usize, bool) {
        let (mut examined, mut removed, mut all_wrapped) = (0, 0, true);
        for db in 0..self.dbs.len() {
            let d = &mut self.dbs[db];
            if d.volatile == 0 {
                d.expire_cursor = 0;
                continue;
            }
            let mut due: Vec<(u64, Vec<u8>)> = Vec::new();
            let next = d.table.scan(d.expire_cursor, chunk, |e| {
                examined += 1;
                if e.expired(now_ms) {
                    due.push((hash_key(e.key()), e.key().to_vec()));
                }
            });
            match next {
                Some(p) => {
                    d.expire_cursor = p;
                    all_wrapped = false;
                }
                None => d.expire_cursor = 0,
            }
            for (hash, key) in due {
                self.remove_expired(db, hash, &key);
                removed += 1;
            }
        }
        (examined, removed, all_wrapped)
    }

    fn remove_all_expired(&mut self, db: usize, now_ms: i64) {
        let mut due: Vec<Vec<u8>> = Vec::new();
        self.dbs[db].table.for_each(|e| {
            if e.expired(now_ms) {
                due.push(e.key().to_vec());
            }
        });
        for k in due {
            self.remove_expired(db, hash_key(&k), &k);
        }
    }

    /// Live keys of `db` (expired ones are removed on the way).
    pub fn keys(&mut self, db: usize, now_ms: i64, mut f: impl FnMut(&Entry)) {
        self.remove_all_expired(db, now_ms);
        self.dbs[db].table.for_each(|e| f(e));
    }

    /// One SCAN step over `db` from `position` (see [`SegTable::scan`]); expired keys are
    /// skipped. Returns the next position, `None` when done.
    pub fn scan(
        &mut self,
        db: usize,
        position: u64,
        count: usize,
        now_ms: i64,
        mut f: impl FnMut(&Entry),
    ) -> Option<u64> {
        self.dbs[db].table.scan(position, count, |e| {
            if !e.expired(now_ms) {
                f(e)
            }
        })
    }
}

/// Collections (see [`crate::coll`]): a handler borrows a live collection with
/// [`Keyspace::coll`], or takes it out with [`Keyspace::take_coll`], changes it, and hands
/// the new version back with [`Keyspace::put_coll`], which appends it as one record.
impl Keyspace {
    /// Checks that `key`, if live, holds a `value_type` collection, and makes sure its decoded
    /// form is in the cache. Ok(None) when the key does not exist.
    fn decode_coll(
        &mut self,
        db: usize,
        key: &[u8],
        value_type: u8,
        now_ms: i64,
    ) -> Result<Option<colls::CollKey>, CollError> {
        let hash = hash_key(key);
        let Some((loc, _, found_type)) = self.live_loc_typed(db, hash, key, now_ms) else {
            return Ok(None);
        };
        if found_type != value_type {
            return Err(CollError::WrongType);
        }
        let k = self.buf_key(loc);
        if self.colls.contains(k) {
            return Ok(Some(k));
        }
        let Some(bytes) = self.resident_value(loc) else {
            return Err(CollError::Failed);
        };
        let decoded = if crate::coll::is_grouped_root(&bytes) {
            tracing::debug!(
                "decoding a grouped collection of db {db} ({} groups)",
                self.dbs[db].dirs.get(key).map_or(0, VecDeque::len)
            );
            match self.decode_grouped(db, key, value_type, &bytes) {
                Ok(c) => Ok(c),
                Err((_, e)) if self.error.is_some() => {
                    tracing::error!("grouped collection of a key in db {db}: {e}");
                    return Err(CollError::Failed);
                }
                Err((gloc, e)) => Err((gloc.unwrap_or(loc), e)),
            }
        } else {
            Coll::decode(value_type, &bytes).map_err(|e| (loc, e.to_string()))
        };
        match decoded {
            Ok(c) => {
                self.colls.insert(k, c);
                Ok(Some(k))
            }
            Err((loc, e)) => {
                let l = loc.unpack();
                tracing::error!(
                    "collection record of a key in db {db} at {l:?} does not decode: {e}"
                );
                self.fail(format!(
                    "data corruption detected on data device {}, block {}, offset {}; the value is not served",
                    l.device, l.block, l.offset_bytes
                ));
                Err(CollError::Failed)
            }
        }
    }

    /// The live `value_type` collection under `key`, counting a keyspace hit or miss:
    /// Ok(None) when the key does not exist; `CollError::WrongType` when it holds another
    /// type. The dispatcher made its record resident.
    pub fn coll(
        &mut self,
        db: usize,
        key: &[u8],
        value_type: u8,
        now_ms: i64,
    ) -> Result<Option<&Coll>, CollError> {
        if self.check_behind(db, key, value_type, now_ms)? {
            self.stats.hits += 1;
            return Ok(self.behind_ref(db, key));
        }
        if self.lent_for(db, key).is_some() {
            let l = self.lent.as_ref().expect("lent");
            return match l.get(db, key, now_ms) {
                None => Ok(None),
                Some(lent::LentValue {
                    data: lent::LentData::Coll(c),
                    ..
                }) if c.value_type() == value_type => Ok(Some(c)),
                Some(_) => Err(CollError::WrongType),
            };
        }
        match self.decode_coll(db, key, value_type, now_ms) {
            Ok(Some(k)) => {
                self.stats.hits += 1;
                Ok(self.colls.get(k))
            }
            Ok(None) => {
                self.stats.misses += 1;
                Ok(None)
            }
            Err(e) => {
                self.stats.hits += 1;
                Err(e)
            }
        }
    }

    /// Like [`Keyspace::coll`] but without counting a keyspace hit or miss: for a write
    /// command that first checks whether it has anything to change (HDEL of absent fields,
    /// HSETNX of a present one), so that a no-op keeps the decoded collection cached.
    pub fn peek_coll(
        &mut self,
        db: usize,
        key: &[u8],
        value_type: u8,
        now_ms: i64,
    ) -> Result<Option<&Coll>, CollError> {
        if self.check_behind(db, key, value_type, now_ms)? {
            return Ok(self.behind_ref(db, key));
        }
        if self.lent_for(db, key).is_some() {
            // A lent key is answered from the lent values (no hit or miss counted there).
            return self.coll(db, key, value_type, now_ms);
        }
        Ok(self
            .decode_coll(db, key, value_type, now_ms)?
            .and_then(|k| self.colls.get(k)))
    }

    /// Takes the live `value_type` collection under `key` out of the cache to change it
    /// (hand it back with [`Keyspace::put_coll`]; dropping it changes nothing). Ok(None)
    /// when the key does not exist.
    pub fn take_coll(
        &mut self,
        db: usize,
        key: &[u8],
        value_type: u8,
        now_ms: i64,
    ) -> Result<Option<Coll>, CollError> {
        if self.check_behind(db, key, value_type, now_ms)? {
            return Ok(self.take_behind(db, key));
        }
        if self.lent_for(db, key).is_some() {
            return self.coll(db, key, value_type, now_ms).map(|c| c.cloned());
        }
        Ok(self
            .decode_coll(db, key, value_type, now_ms)?
            .and_then(|k| self.colls.take(k)))
    }

    /// Hands back a collection taken with [`Keyspace::take_coll`] that the command did not
    /// change (a no-op: SADD of present members, SREM of absent ones), so that it stays
    /// decoded; dropping it would cost a decode at the next use (of every group, for a
    /// grouped one). It must be unchanged: nothing is written.
    pub fn keep_coll(&mut self, db: usize, key: &[u8], coll: Coll) {
        let Some(coll) = self.keep_behind(db, key, coll) else {
            return;
        };
        if self.lent_for(db, key).is_some() {
            return;
        }
        if let Some(e) = self.dbs[db].table.get(hash_key(key), key) {
            if e.value_type() == coll.value_type() {
                let k = self.buf_key(e.loc());
                self.colls.insert(k, coll);
            }
        }
    }

    /// Stores `coll` as the new version of `key` (keeping the key's TTL; a new key has
    /// none), or removes the key when `coll` is empty, as Redis does. False when the write
    /// was refused (the error is kept for the reply; nothing changed).
    pub fn put_coll(
        &mut self,
        db: usize,
        key: &[u8],
        mut coll: Coll,
        thresholds: &Thresholds,
        now_ms: i64,
    ) -> bool {
        if coll.is_empty() {
            self.forget_behind(db, key);
            self.delete(db, key, now_ms);
            return self.error.is_none();
        }
        coll.note_encoding(thresholds);
        if let Some(l) = self.lent_for_mut(db, key) {
            l.set(db, key, Some(lent::LentData::Coll(coll)), Expiry::Keep);
            self.stats.dirty += 1;
            return true;
        }
        self.group_bytes = thresholds.group_bytes;
        let Some(coll) = self.leave_behind(db, key, coll, now_ms) else {
            return true;
        };
        self.forget_behind(db, key);
        self.store_coll(db, key, coll, Expiry::Keep, now_ms)
    }

    /// Stores `coll` (not empty) under `key` with `expiry`, laid out as a command would
    /// build it (grouped when big), replacing whatever the key held (RESTORE). False when
    /// the write was refused (the error is kept for the reply).
    pub fn put_coll_with_expiry(
        &mut self,
        db: usize,
        key: &[u8],
        mut coll: Coll,
        expiry: Expiry,
        thresholds: &Thresholds,
        now_ms: i64,
    ) -> bool {
        debug_assert!(
            !self.holds_behind(db, key),
            "a write past a collection left behind"
        );
        coll.note_encoding(thresholds);
        if let Some(l) = self.lent_for_mut(db, key) {
            l.set(db, key, Some(lent::LentData::Coll(coll)), expiry);
            self.stats.dirty += 1;
            return true;
        }
        self.group_bytes = thresholds.group_bytes;
        self.store_coll(db, key, coll, expiry, now_ms)
    }

    /// OBJECT ENCODING's answer for a live key (its value must be resident).
    pub fn encoding(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<&'static str> {
        if let Some(l) = self.lent_for(db, key) {
            return l.get(db, key, now_ms).map(|v| match &v.data {
                lent::LentData::Str(s) => string_encoding(s),
                lent::LentData::Coll(c) => c.encoding_name(),
            });
        }
        let hash = hash_key(key);
        let (loc, _, value_type) = self.live_loc_typed(db, hash, key, now_ms)?;
        if value_type == VALUE_TYPE_STRING {
            if self.is_grouped_key(db, key) {
                // A big string (longer than any embstr or integer).
                return Some("raw");
            }
            let v = self.resident_value(loc)?;
            return Some(string_encoding(&v));
        }
        match self.decode_coll(db, key, value_type, now_ms) {
            Ok(Some(k)) => self.colls.get(k).map(|c| c.encoding_name()),
            _ => None,
        }
    }
}

/// Lending keys to a command whose keys live on several workers (see [`lent`]).
impl Keyspace {
    #[inline]
    fn lent_for(&self, db: usize, key: &[u8]) -> Option<&lent::Lent> {
        self.lent.as_ref().filter(|l| l.has(db, key))
    }

    #[inline]
    fn lent_for_mut(&mut self, db: usize, key: &[u8]) -> Option<&mut lent::Lent> {
        self.lent.as_mut().filter(|l| l.has(db, key))
    }

    /// Lends `items` (key and value of `db`, as [`Keyspace::peek`] gave them on their
    /// owners) to the next command; Err when a value does not decode.
    pub fn lend(&mut self, db: usize, items: Vec<(Vec<u8>, Option<Got>)>) -> Result<(), String> {
        debug_assert!(self.lent.is_none());
        self.lent = Some(lent::Lent::new(db, items)?);
        Ok(())
    }

    /// Ends the lending: the keys the command changed, with their new values (None:
    /// deleted), for their owners ([`Keyspace::apply_lent`]).
    pub fn end_lend(&mut self) -> Vec<(Vec<u8>, Option<Got>)> {
        self.lent
            .take()
            .map(|l| l.into_changes())
            .unwrap_or_default()
    }

    /// Applies a change made to one of this worker's keys while it was lent; false when
    /// the write was refused (the error is kept).
    pub fn apply_lent(&mut self, db: usize, key: &[u8], value: Option<Got>, now_ms: i64) -> bool {
        match value {
            None => {
                self.delete(db, key, now_ms);
                self.error.is_none()
            }
            Some(g) => self.put_value(
                db,
                key,
                &g.value,
                Expiry::of_entry_ms(g.expire_at_ms),
                now_ms,
            ),
        }
    }
}

/// WATCH: connections watching keys learn about any change through a flag.
impl Keyspace {
    /// `flag` is set by the next change of `key`.
    pub fn watch_cas(
        &mut self,
        db: usize,
        key: &[u8],
        flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) {
        self.cas.entry((db, key.to_vec())).or_default().push(flag);
    }

    /// `flag` no longer watches `key`.
    pub fn unwatch_cas(
        &mut self,
        db: usize,
        key: &[u8],
        flag: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) {
        let k = (db, key.to_vec());
        if let Some(v) = self.cas.get_mut(&k) {
            v.retain(|f| !std::sync::Arc::ptr_eq(f, flag));
            if v.is_empty() {
                self.cas.remove(&k);
            }
        }
    }

    /// A write of `key`: counts the change and tells the WATCHing connections.
    #[inline]
    fn touch(&mut self, db: usize, key: &[u8]) {
        self.stats.dirty += 1;
        self.signal_watchers(db, key);
    }

    /// Counts the changes since `dirty_before` (a value of `stats.dirty`) as `changes`, for
    /// the commands Redis counts by their own rule whatever records they write: one for
    /// LMOVE or RENAME, none for an XREADGROUP that only read its history.
    pub fn count_changes_as(&mut self, dirty_before: u64, changes: u64) {
        self.stats.dirty = dirty_before + changes;
    }

    /// Tells the connections WATCHing `key` that it changed.
    #[inline]
    fn signal_watchers(&mut self, db: usize, key: &[u8]) {
        if self.cas.is_empty() {
            return;
        }
        if let Some(v) = self.cas.get(&(db, key.to_vec())) {
            for f in v {
                f.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
    }
}

/// Keys that blocked commands wait on (see `crate::blocking`): every write of a watched key
/// marks it ready; the worker then serves its waiters.
impl Keyspace {
    /// One more blocked command waits on `key`.
    pub fn watch(&mut self, db: usize, key: &[u8]) {
        *self.watched.entry((db, key.to_vec())).or_insert(0) += 1;
    }

    /// One blocked command fewer waits on `key`.
    pub fn unwatch(&mut self, db: usize, key: &[u8]) {
        let k = (db, key.to_vec());
        if let Some(n) = self.watched.get_mut(&k) {
            *n -= 1;
            if *n == 0 {
                self.watched.remove(&k);
            }
        }
    }

    /// Marks `key` ready when blocked commands wait on it.
    pub fn mark_ready(&mut self, db: usize, key: &[u8]) {
        let k = (db, key.to_vec());
        if self.watched.contains_key(&k) && !self.ready.contains(&k) {
            self.ready.push(k);
        }
    }

    /// True when a watched key was written since the last [`Keyspace::pop_ready`].
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// The oldest ready key.
    pub fn pop_ready(&mut self) -> Option<(usize, Vec<u8>)> {
        if self.ready.is_empty() {
            None
        } else {
            Some(self.ready.remove(0))
        }
    }
}

/// Redis's encoding of a string value: `int` for a canonical integer, `embstr` up to 44
/// bytes, `raw` beyond.
pub fn string_encoding(v: &[u8]) -> &'static str {
    if v.len() <= 20 && crate::commands::parse_i64(v).is_some() {
        "int"
    } else if v.len() <= 44 {
        "embstr"
    } else {
        "raw"
    }
}

impl Keyspace {
    /// One step over `db` from `position` like [`Keyspace::scan`], expired keys included
    /// (index checkpoints write every entry; the load drops expired ones as recovery does).
    pub fn scan_all(
        &self,
        db: usize,
        position: u64,
        count: usize,
        f: impl FnMut(&Entry),
    ) -> Option<u64> {
        match groups::split_db(db) {
            (db, false) => self.dbs[db].table.scan(position, count, f),
            (db, true) => self.dbs[db].groups.scan(position, count, f),
        }
    }
}

/// Locations of values to read ([`Keyspace::missing`]); one or two without an allocation
/// (a GET's value read from the device allocates only its value).
pub type Locations = smallvec::SmallVec<[Location; 2]>;

/// Values read by [`fetch`], in the order asked.
pub type FetchedValues = smallvec::SmallVec<[Fetched; 1]>;

/// A value read by [`fetch`].
#[derive(Debug)]
pub struct Fetched {
    /// Where it was read.
    pub location: Location,
    /// The block's sequence the read was checked against; None when the block was reused
    /// while the read was in flight (the value is then not kept).
    pub block_seq: Option<u64>,
    /// The value (CRC-checked by the store), or why it could not be read.
    pub value: Result<cache::SharedValue, StoreError>,
}

/// Reads one record; the block sequence is taken before and after the read (the store
/// checks the CRC against the one current when the read completes), so a value is only
/// ever kept under the block sequence it was checked with.
async fn fetch_one(log: &Writer, location: Location) -> Fetched {
    let store = log.store();
    let before = store.block_seq(location.block_id());
    let value = log.read(&location).await.map(|rec| {
        let v = Rc::new(rec.value().to_vec());
        log.recycle(rec);
        v
    });
    let after = store.block_seq(location.block_id());
    Fetched {
        location,
        block_seq: (before == after).then_some(after),
        value,
    }
}

/// Reads the records at `locs` through the worker's io_uring, all in flight together, and
/// returns their values (CRC-checked by the store).
///
/// At most about [`chunked::CHUNK_READ_WINDOW_BYTES`] are in flight at once (the chunks of
/// a big string are read a window at a time, each read the size of one chunk).
pub async fn fetch(log: Rc<Writer>, locs: Locations) -> FetchedValues {
    if let [loc] = locs[..] {
        // The common case (one key): no task to spawn.
        return smallvec::smallvec![fetch_one(&log, loc).await];
    }
    let total_bytes: usize = locs.iter().map(|l| l.len_bytes as usize).sum();
    if total_bytes <= chunked::CHUNK_READ_WINDOW_BYTES {
        return fetch_together(log, locs.into_vec()).await;
    }
    let mut out = FetchedValues::with_capacity(locs.len());
    let mut window = Vec::new();
    let mut window_bytes = 0;
    for loc in locs {
        if !window.is_empty()
            && window_bytes + loc.len_bytes as usize > chunked::CHUNK_READ_WINDOW_BYTES
        {
            out.extend(fetch_together(log.clone(), std::mem::take(&mut window)).await);
            window_bytes = 0;
        }
        window_bytes += loc.len_bytes as usize;
        window.push(loc);
    }
    out.extend(fetch_together(log, window).await);
    out
}

/// Reads the records at `locs` all in flight together.
async fn fetch_together(log: Rc<Writer>, locs: Vec<Location>) -> FetchedValues {
    let tasks: Vec<_> = locs
        .into_iter()
        .map(|loc| {
            let log = log.clone();
            compio::runtime::spawn(async move { fetch_one(&log, loc).await })
        })
        .collect();
    let mut out = FetchedValues::with_capacity(tasks.len());
    for t in tasks {
        match t.await {
            Ok(r) => out.push(r),
            Err(_) => panic!("value read task panicked"),
        }
    }
    out
}

/// Makes the values of `keys` in `db` resident in `ks`'s read buffer: loops until nothing
/// is missing. When it returns `Ok`, a synchronous handler run before the next await finds
/// every value; `Ok(true)` when it had to wait (the caller re-checks what may have changed
/// meanwhile, such as a transaction's hold, and calls again with the same `mark`, the
/// read buffer's mark taken before the first call, so that values it made resident are not
/// evicted by the next call). `Err` holds the reply message of a failed read.
pub async fn make_resident(
    db: usize,
    keys: &[&[u8]],
    now_ms: i64,
    mark: Option<u64>,
) -> Result<bool, String> {
    make_resident_need(db, keys, None, now_ms, mark).await
}

/// [`make_resident`] for a command that needs only part of its grouped streams (see
/// [`Keyspace::missing_need`]).
pub async fn make_resident_need(
    db: usize,
    keys: &[&[u8]],
    needs: Option<&[crate::coll::stream::Need]>,
    now_ms: i64,
    mark: Option<u64>,
) -> Result<bool, String> {
    let shard: Rc<RefCell<crate::worker::Shard>> = crate::worker::local_shard();
    let mark = mark.unwrap_or_else(|| shard.borrow().keyspace.read_mark());
    let mut waited = false;
    loop {
        let (missing, log, changes) = {
            let mut s = shard.borrow_mut();
            let missing = s.keyspace.missing_need(db, keys, needs, now_ms, mark);
            let changes = s.keyspace.dbs[db].table.changes();
            (missing, s.keyspace.log().clone(), changes)
        };
        if missing.is_empty() {
            return Ok(waited);
        }
        waited = true;
        let got = fetch(log, missing).await;
        // One plain key, read whole, and no entry of its database changed during the read:
        // the value `fill` puts in the read buffer (past the mark) is the key's, so the
        // check the loop would make again is skipped (decision 0012).
        let settled =
            keys.len() == 1 && matches!(&got[..], [f] if f.value.is_ok() && f.block_seq.is_some());
        let mut s = shard.borrow_mut();
        s.keyspace.fill(got, mark)?;
        if settled
            && s.keyspace.dbs[db].table.changes() == changes
            && !s.keyspace.is_grouped_key(db, keys[0])
        {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skerry_store::device::RamDevice;
    use skerry_store::{Durability, Store, StoreOptions};

    /// A keyspace over a fresh 64 MiB RAM device (1 MiB blocks), inside a compio runtime.
    fn with_keyspace(databases: usize, f: impl FnOnce(&mut Keyspace)) {
        compio::runtime::Runtime::new()
            .unwrap()
            .block_on(async move {
                let dev = RamDevice::new(64 << 20, 512);
                let opts = StoreOptions {
                    block_size_bytes: 1 << 20,
                    ..StoreOptions::default()
                };
                let (store, rec) = Store::create_or_open(vec![dev.into()], &opts, |_| {})
                    .await
                    .unwrap();
                let log = Writer::open(store, 0, Durability::EverySec, rec.max_mutation_seq)
                    .await
                    .unwrap();
                let mut ks = Keyspace::new(RecoveredIndex::new(databases), Rc::new(log));
                f(&mut ks);
            });
    }

    fn val(ks: &mut Keyspace, db: usize, k: &[u8], now: i64) -> Option<Vec<u8>> {
        ks.get(db, k, now).map(|g| match g.value {
            Value::Str(v) => v,
            Value::Coll { .. } => panic!("not a string"),
        })
    }

    /// A full scan sizes the table from an estimate ([`RecoveredIndex::expect`]): the same
    /// keys as without one, and a table no bigger than normal growth leaves even when the
    /// estimate was far too high.
    #[test]
    fn an_expected_load_ends_with_the_same_index_and_memory() {
        let load = |expect: Option<usize>| {
            let mut index = RecoveredIndex::new(1);
            if let Some(n) = expect {
                index.expect(0, n);
            }
            for n in 0..200_000u32 {
                let key = format!("key:{:012}", n % 150_000);
                let loc = Location {
                    device: 0,
                    block: 1 + n / 1000,
                    offset_bytes: 4096 + 8 * (n % 1000),
                    len_bytes: 64,
                };
                index.value(0, key.as_bytes(), &loc, VALUE_TYPE_STRING, 0);
            }
            index.end_load();
            index
        };
        let plain = load(None);
        let plain_bytes = plain.dbs[0].table.allocation_bytes();
        for expect in [150_000, 1_000_000] {
            let sized = load(Some(expect));
            let t = &sized.dbs[0].table;
            assert_eq!(t.len(), 150_000);
            for n in 150_000..200_000u32 {
                let key = format!("key:{:012}", n % 150_000);
                let got = t.get(hash_key(key.as_bytes()), key.as_bytes());
                assert_eq!(
                    got.map(|e| e.loc().unpack().block),
                    Some(1 + n / 1000),
                    "{key}"
                );
            }
            let bytes = t.allocation_bytes();
            assert!(
                bytes <= plain_bytes + plain_bytes / 16,
                "expecting {expect}: {bytes} bytes against {plain_bytes} without an estimate"
            );
        }
    }

    /// A recovery's records are applied in hash-sorted batches: the last record of each key
    /// still wins (a value or a tombstone), across batch boundaries, in both tables.
    #[test]
    fn recovered_index_keeps_the_last_record_of_each_key() {
        use std::collections::HashMap;
        let mut index = RecoveredIndex::new(2);
        let mut model: HashMap<(usize, Vec<u8>), Option<u32>> = HashMap::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let total = 3 * LOAD_BATCH as u32 + 1234;
        for n in 0..total {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let db = (x % 2) as usize;
            let key = format!("k{}", (x >> 8) % 20_000).into_bytes();
            let record_db = if x & 0x100 != 0 {
                db | groups::GROUP_DB_BIT
            } else {
                db
            };
            if (x >> 40).is_multiple_of(5) {
                index.tombstone(record_db, &key);
                model.insert((record_db, key), None);
            } else {
                let loc = Location {
                    device: 0,
                    block: 1 + n / 1000,
                    offset_bytes: 4096 + 8 * (n % 1000),
                    len_bytes: 64,
                };
                index.value(record_db, &key, &loc, VALUE_TYPE_STRING, 0);
                model.insert((record_db, key), Some(n));
            }
        }
        index.end_load();
        let mut live = 0;
        for ((record_db, key), want) in &model {
            let (db, group) = groups::split_db(*record_db);
            let t = if group {
                &index.dbs[db].groups
            } else {
                &index.dbs[db].table
            };
            let got = t.get(hash_key(key), key).map(|e| e.loc().unpack());
            let want = want.map(|n| Location {
                device: 0,
                block: 1 + n / 1000,
                offset_bytes: 4096 + 8 * (n % 1000),
                len_bytes: 64,
            });
            assert_eq!(got, want, "{record_db} {}", String::from_utf8_lossy(key));
            live += usize::from(want.is_some() && !group);
        }
        assert_eq!(index.len(0) + index.len(1), live);
    }

    #[test]
    fn put_get_delete_and_expiry() {
        with_keyspace(16, |ks| {
            assert!(ks.put(0, b"a", b"1", Expiry::Persist, 1000));
            assert_eq!(val(ks, 0, b"a", 1000), Some(b"1".to_vec()));
            assert!(ks.get(1, b"a", 1000).is_none(), "databases are separate");
            ks.put(0, b"t", b"x", Expiry::At(2000), 1000);
            assert_eq!(ks.volatile_len(0), 1);
            assert!(ks.exists(0, b"t", 1999));
            assert!(!ks.exists(0, b"t", 2000), "expired key is never returned");
            assert_eq!(ks.volatile_len(0), 0);
            ks.put(0, b"a", b"2", Expiry::At(5000), 1000);
            ks.put(0, b"a", b"3", Expiry::Keep, 1000);
            assert_eq!(ks.get(0, b"a", 1000).unwrap().expire_at_ms, 5000);
            ks.put(0, b"a", b"4", Expiry::Persist, 1000);
            assert_eq!(ks.get(0, b"a", 1000).unwrap().expire_at_ms, 0);
            let long = vec![b'k'; 300];
            assert!(ks.put(0, &long, b"long key", Expiry::Persist, 1000));
            assert_eq!(val(ks, 0, &long, 1000), Some(b"long key".to_vec()));
            assert!(ks.delete(0, b"a", 1000));
            assert!(!ks.delete(0, b"a", 1000));
            assert!(ks.delete(0, &long, 1000));
            assert_eq!(ks.len(0), 0);
            assert!(ks.take_error().is_none());
            assert_eq!(ks.reads.missing_reads, 0);
        });
    }

    #[test]
    fn active_expiry_removes_only_due_keys() {
        with_keyspace(2, |ks| {
            for i in 0..20_000 {
                let expiry = if i % 2 == 0 {
                    Expiry::At(1500)
                } else {
                    Expiry::Persist
                };
                ks.put(i % 2, format!("k{i}").as_bytes(), b"v", expiry, 1000);
            }
            ks.put(0, b"later", b"v", Expiry::At(9000), 1000);
            let mut removed = 0;
            loop {
                let (_, r, done) = ks.active_expire_step(2000, 1000);
                removed += r;
                if done {
                    break;
                }
            }
            assert_eq!(removed, 10_000);
            assert_eq!(ks.len(0), 1);
            assert_eq!(ks.len(1), 10_000);
            assert_eq!(ks.volatile_len(0), 1);
            assert!(ks.exists(0, b"later", 2000));
        });
    }

    /// One command's values stay resident together even past the read buffer's entry cap
    /// (its mark protects them); the next command's call trims the buffer to the cap:
    /// [`READ_BUF_CACHED_MAX_ENTRIES`] with the value cache on, [`READ_BUF_MAX_ENTRIES`] off.
    #[test]
    fn read_buffer_keeps_a_command_whole_and_its_cap_follows_the_cache() {
        for cache_bytes in [1usize << 20, 0] {
            with_keyspace(1, |ks| {
                ks.set_value_cache_bytes(cache_bytes);
                let keys: Vec<Vec<u8>> = (0..1000).map(|i| format!("k{i}").into_bytes()).collect();
                for k in &keys {
                    assert!(ks.put(0, k, &[7u8; 100], Expiry::Persist, 1000));
                }
                let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
                let mark = ks.read_mark();
                // Still in the writer's staging image: resident without I/O.
                assert!(ks.missing(0, &refs, 1000, mark).is_empty());
                assert_eq!(ks.read_buffer_bytes(), 1000 * 100);
                for k in &refs {
                    let got = ks.with_value(0, k, 1000, |v| v.len()).unwrap();
                    assert_eq!(got, Some(100), "cache {cache_bytes}");
                }
                assert!(ks.take_error().is_none());
                // The next command trims what the last one left.
                let mark = ks.read_mark();
                assert!(ks.missing(0, &refs[..1], 1000, mark).is_empty());
                let cap = if cache_bytes == 0 {
                    READ_BUF_MAX_ENTRIES
                } else {
                    READ_BUF_CACHED_MAX_ENTRIES
                };
                assert_eq!(
                    ks.read_buffer_bytes(),
                    1000.min(cap) * 100,
                    "cache {cache_bytes}"
                );
            });
        }
    }

    /// The value `missing` prepares for a one-key command is served only while it is still
    /// the key's: a write, a delete, an expiry (a later command time) or another key in
    /// between makes the handler look the key up again.
    #[test]
    fn a_prepared_value_is_never_served_stale() {
        with_keyspace(2, |ks| {
            ks.set_value_cache_bytes(1 << 20);
            let get = |ks: &mut Keyspace, db: usize, k: &[u8], now: i64| {
                ks.with_value(db, k, now, |v| v.to_vec()).unwrap()
            };
            let prepare = |ks: &mut Keyspace, db: usize, k: &[u8], now: i64| {
                let mark = ks.read_mark();
                assert!(ks.missing(db, &[k], now, mark).is_empty());
            };
            assert!(ks.put(0, b"k", b"old", Expiry::Persist, 1000));
            assert!(ks.put(0, b"other", b"o", Expiry::Persist, 1000));
            assert!(ks.put(1, b"k", b"db1", Expiry::Persist, 1000));

            prepare(ks, 0, b"k", 1000);
            assert!(ks.put(0, b"k", b"new", Expiry::Persist, 1000));
            assert_eq!(get(ks, 0, b"k", 1000), Some(b"new".to_vec()));

            prepare(ks, 0, b"k", 1000);
            assert!(ks.delete(0, b"k", 1000));
            assert_eq!(get(ks, 0, b"k", 1000), None);

            assert!(ks.put(0, b"k", b"v", Expiry::At(2000), 1000));
            prepare(ks, 0, b"k", 1000);
            assert_eq!(get(ks, 0, b"k", 2500), None, "expired at the later time");

            assert!(ks.put(0, b"k", b"v2", Expiry::Persist, 3000));
            prepare(ks, 0, b"k", 3000);
            assert_eq!(get(ks, 0, b"other", 3000), Some(b"o".to_vec()));
            assert_eq!(get(ks, 1, b"k", 3000), Some(b"db1".to_vec()));
            // Used once: the key's own lookup after it probes again and finds the same.
            prepare(ks, 0, b"k", 3000);
            assert_eq!(get(ks, 0, b"k", 3000), Some(b"v2".to_vec()));
            assert_eq!(get(ks, 0, b"k", 3000), Some(b"v2".to_vec()));
            assert!(ks.take_error().is_none());
        });
    }

    /// A key that expired while the server was down gets a tombstone at startup (else an
    /// older version could come back once the expired record's block is reclaimed).
    #[test]
    fn keys_expired_at_recovery_get_tombstones() {
        compio::runtime::Runtime::new().unwrap().block_on(async {
            let dev = RamDevice::new(64 << 20, 512);
            let control = dev.control();
            let opts = StoreOptions {
                block_size_bytes: 1 << 20,
                ..StoreOptions::default()
            };
            let (store, rec) = Store::create_or_open(vec![dev.into()], &opts, |_| {})
                .await
                .unwrap();
            let log = Rc::new(
                Writer::open(store, 0, Durability::EverySec, rec.max_mutation_seq)
                    .await
                    .unwrap(),
            );
            let mut ks = Keyspace::new(RecoveredIndex::new(1), log.clone());
            assert!(ks.put(0, b"k", b"v1", Expiry::Persist, 1000));
            assert!(ks.put(0, b"k", b"v2", Expiry::At(2000), 1000));
            assert!(ks.put(0, b"other", b"x", Expiry::Persist, 1000));
            log.commit().await.unwrap();
            drop(ks);
            drop(log);
            // Restart after the expiry.
            let recover = |image: Vec<u8>| async move {
                let mut index = RecoveredIndex::new(1);
                let mut tombstones = 0;
                let dev = RamDevice::from_image(image, 512);
                let control = dev.control();
                let (store, rec) = Store::create_or_open(vec![dev.into()], &opts, |r| {
                    let (db, key) = split_record_key(r.key).unwrap();
                    match r.meta.kind {
                        RecordKind::Value => {
                            index.value(db, key, &r.location, r.meta.value_type, r.meta.expiry_ms)
                        }
                        _ => {
                            tombstones += 1;
                            index.tombstone(db, key)
                        }
                    }
                })
                .await
                .unwrap();
                (store, rec, index, tombstones, control)
            };
            let (store, rec, mut index, tombstones, control) =
                recover(control.durable_image()).await;
            assert_eq!(tombstones, 0);
            assert_eq!(index.finish(5000, 0, |l| store.add_live(l)), 1, "k expired");
            store.recovery_done();
            let log = Rc::new(
                Writer::open(store, 0, Durability::EverySec, rec.max_mutation_seq)
                    .await
                    .unwrap(),
            );
            let mut ks = Keyspace::new(index, log.clone());
            assert_eq!(log.appended(), 1, "one tombstone for the expired key");
            assert!(!ks.exists(0, b"k", 5000));
            assert!(ks.exists(0, b"other", 5000));
            log.commit().await.unwrap();
            drop(ks);
            drop(log);
            let (_, _, mut index, tombstones, _) = recover(control.durable_image()).await;
            assert_eq!(tombstones, 1, "the tombstone is on the device");
            assert_eq!(index.finish(5000, 0, |_| {}), 1);
        });
    }

    #[test]
    fn record_keys_round_trip() {
        for db in [0usize, 1, 15, 127, 128, 300, 1_000_000] {
            let rk = record_key(db, b"user:1");
            assert_eq!(split_record_key(&rk), Some((db, &b"user:1"[..])));
        }
        assert_eq!(&record_key(0, b"k")[..], b"\x00k");
        assert_eq!(split_record_key(&[0x80, 0x80]), None);
    }
}
