//! The stream type (Redis's `t_stream.c`): entries ordered by ID, consumer groups with
//! their pending entries lists (PEL) and consumers.
//!
//! The entries live in a `BTreeMap` by ID. Redis keeps them in listpack "nodes" of up to
//! `stream-node-max-entries` (100) entries and `stream-node-max-bytes` (4096) bytes, and
//! approximate trimming (`MAXLEN ~`, `MINID ~`) only ever removes whole nodes; so that `~`
//! trims exactly what Redis trims, the stream keeps a model of those nodes ([`Node`]): their
//! first and last IDs, how many entries each holds (live and deleted) and an estimate of
//! their listpack size. The entries themselves are not stored per node.
//!
//! Stored as one compact record (flags byte, then the fields below) while small; see
//! `docs/storage-format.md`. The in-memory form maps one to one onto the neutral form used
//! for DUMP/RESTORE: entries (id, fields), groups (name, last-id, entries-read, PEL (id,
//! consumer, delivery time, count)), consumers (name, seen-time, active-time).
//!
//! # Grouped form
//!
//! Past twice `collection-group-bytes` (decision 0009) a stream is a root record (the
//! counters and an index of the consumer groups' records), one page per node (the node's
//! model and its entries; page ids grow with the master IDs) and one record per consumer
//! group (ids from 2^63). Appends, deletions and trims mark the nodes they touch
//! (`Layout::dirty`), so an XADD writes the tail page and the root; consumer groups are
//! changed in place by the commands, so [`Stream::take_changes`] compares each group's
//! encoding with the one last written.
//!
//! Index records (page id → master ID) let a grouped stream be loaded partially: the root,
//! the index, the consumer groups and the head and tail pages first
//! ([`Stream::decode_partial`]), then the pages a command's [`Need`] names
//! ([`Stream::pages_needed`], [`Stream::load_pages`]); the stream then answers for those
//! pages (its length, first and last entries and node count are always right). A
//! consumer group's PEL is stored in pages of at most 128 entries by ID and
//! a directory, so that XACK and XREADGROUP write a page of it.

use std::collections::{BTreeMap, BTreeSet};

use super::codec::{put_bytes, put_varint, Reader};
use super::groups::Changes;
use super::DecodeError;

/// A stream entry ID: milliseconds and sequence number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// The milliseconds part.
    pub ms: u64,
    /// The sequence part.
    pub seq: u64,
}

impl StreamId {
    /// 0-0.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The largest ID.
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// An ID.
    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The next ID (None past the last possible one).
    pub fn incr(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                None
            } else {
                Some(StreamId::new(self.ms + 1, 0))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq + 1))
        }
    }

    /// The previous ID (None before 0-0).
    pub fn decr(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                None
            } else {
                Some(StreamId::new(self.ms - 1, u64::MAX))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq - 1))
        }
    }

    /// True for 0-0.
    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The `ms-seq` form.
    pub fn to_bytes(self) -> Vec<u8> {
        format!("{}-{}", self.ms, self.seq).into_bytes()
    }
}

/// A pending entry of a consumer group (Redis's `streamNACK`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// The consumer that owns it.
    pub consumer: Vec<u8>,
    /// When it was last delivered (Unix ms).
    pub delivery_time: i64,
    /// How many times it was delivered.
    pub delivery_count: u64,
}

/// A consumer of a group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Consumer {
    /// Last time the consumer was seen (any interaction), Unix ms.
    pub seen_time: i64,
    /// Last time it read or claimed an entry, Unix ms; -1 = never.
    pub active_time: i64,
    /// Its pending entries (the details are in the group's PEL).
    pub pel: BTreeSet<StreamId>,
}

/// A consumer group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    /// The last ID delivered to the group.
    pub last_id: StreamId,
    /// The group's logical read counter; -1 when unknown.
    pub entries_read: i64,
    /// The group's pending entries.
    pub pel: BTreeMap<StreamId, Pending>,
    /// Its consumers, by name (byte order, as Redis's rax).
    pub consumers: BTreeMap<Vec<u8>, Consumer>,
}

impl Group {
    /// Creates consumer `name` if it does not exist (true when created), seen at `now`.
    pub fn create_consumer(&mut self, name: &[u8], now: i64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(
            name.to_vec(),
            Consumer {
                seen_time: now,
                active_time: -1,
                pel: BTreeSet::new(),
            },
        );
        true
    }

    /// Removes pending entry `id` from the PEL and its consumer (true when it was there).
    pub fn remove_pending(&mut self, id: StreamId) -> bool {
        match self.pel.remove(&id) {
            Some(p) => {
                if let Some(c) = self.consumers.get_mut(&p.consumer) {
                    c.pel.remove(&id);
                }
                true
            }
            None => false,
        }
    }

    /// Gives pending entry `id` to `consumer` (which must exist), moving it from its owner.
    pub fn assign(&mut self, id: StreamId, consumer: &[u8]) {
        let Some(p) = self.pel.get_mut(&id) else {
            return;
        };
        if p.consumer != consumer {
            let old = std::mem::replace(&mut p.consumer, consumer.to_vec());
            if let Some(c) = self.consumers.get_mut(&old) {
                c.pel.remove(&id);
            }
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }
}

/// A model of one of Redis's listpack nodes (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The ID of the last entry appended to it (deleted or not).
    pub last: StreamId,
    /// Entries not deleted.
    pub live: u32,
    /// Entries ever appended (live and deleted).
    pub total: u32,
    /// Estimated listpack bytes.
    pub bytes: u64,
    /// The master entry's field names (for the size estimate).
    pub master_fields: Vec<Vec<u8>>,
}

/// A stream entry's fields and values, back to back (field, value, field, value, ...).
pub type Fields = Vec<Vec<u8>>;

/// A stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stream {
    entries: BTreeMap<StreamId, Fields>,
    /// The last ID ever generated (or set by XSETID).
    pub last_id: StreamId,
    /// The largest ID ever deleted.
    pub max_deleted_id: StreamId,
    /// Count of entries ever added.
    pub entries_added: u64,
    /// The consumer groups, by name (changed through [`Stream::groups_mut`], which tells
    /// the grouped form to look for changed groups at the next write).
    groups: BTreeMap<Vec<u8>, Group>,
    /// Redis's listpack nodes, by master ID.
    nodes: BTreeMap<StreamId, Node>,
    /// How the stream is stored (compact or grouped) and what changed since its last
    /// write; not part of the value (equality ignores it).
    layout: Box<Layout>,
}

/// First record id of a consumer group's group record; page ids are below it, so a
/// grouped stream's records come in id order: its pages (in ID order), its index records,
/// then its consumer groups.
const CGROUP_ID_BASE: u64 = 1 << 63;

/// First record id of an index record: index record `INDEX_ID_BASE + c` lists the pages
/// whose ids are in `c * INDEX_PAGES .. (c + 1) * INDEX_PAGES` with their master IDs, so
/// that a stream can be loaded partially (root, index, consumer groups, then the pages a
/// command needs, see [`Need`]). Page ids are below it.
pub const INDEX_ID_BASE: u64 = 1 << 62;

/// First record id of a consumer group's pending-entries (PEL) records: those of consumer
/// group record `CGROUP_ID_BASE + n` are `PEL_ID_BASE + (n << 32) + page`, page
/// [`PEL_DIR_PAGE`] being their directory (first ID of each page). A group's PEL is
/// split by ID into pages of at most [`PEL_PAGE_MAX`] entries, so that XREADGROUP and XACK
/// write a page, not the PEL.
const PEL_ID_BASE: u64 = CGROUP_ID_BASE + (1 << 62);

/// The page number of a PEL's directory record.
const PEL_DIR_PAGE: u32 = u32::MAX;

/// A PEL page past this many entries is split in pages of [`PEL_PAGE_SPLIT`].
const PEL_PAGE_MAX: usize = 128;

/// Entries per page when a PEL page is split.
const PEL_PAGE_SPLIT: usize = 64;

/// Flags of a consumer-group record whose PEL is in pages (0: the PEL is in the record).
const CGROUP_PAGED: u8 = 1;

/// The record id of page `page` of the PEL of consumer group record `cgroup`.
fn pel_record_id(cgroup: u64, page: u32) -> u64 {
    PEL_ID_BASE + ((cgroup - CGROUP_ID_BASE) << 32) + u64::from(page)
}

/// Pages listed per index record (about 6 KiB of record at most).
const INDEX_PAGES: u64 = 512;

/// The root's format version byte that says the stream has index records (roots written
/// before them end after the consumer-group index and are loaded whole).
const ROOT_INDEXED: u64 = 1;

/// What a command needs of a grouped stream beyond its root, index, consumer groups and
/// its head and tail pages (which a partially loaded stream always holds): the keyspace
/// loads those pages before the command runs (`keyspace/groups.rs`), so that a command
/// reads a few records of a big stream, not all of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Need {
    /// Every page (the default for any command not known to need less).
    All,
    /// Nothing more.
    Skeleton,
    /// The pages that hold the first `count` entries from `start` to `end` (inclusive),
    /// scanning up (down when `rev`).
    Scan {
        /// Lowest ID.
        start: StreamId,
        /// Highest ID.
        end: StreamId,
        /// From the end.
        rev: bool,
        /// At most this many entries (None: all in the range).
        count: Option<usize>,
    },
    /// The pages holding any of these IDs.
    Ids(Vec<StreamId>),
    /// The entries after consumer group `0`'s last ID, at most `1` pages.
    AfterGroup(Vec<u8>, Option<usize>),
    /// The pages of the first `count` pending entries (all when None) from `start` in a
    /// consumer group's pending list, or in one of its consumers' (XAUTOCLAIM, XREADGROUP
    /// of history).
    Pending {
        /// The consumer group.
        group: Vec<u8>,
        /// Only this consumer's pending entries.
        consumer: Option<Vec<u8>>,
        /// Lowest ID.
        start: StreamId,
        /// At most this many pending entries.
        count: Option<usize>,
    },
    /// The head pages a trim looks at (the pages it removes and the first it keeps).
    Trim(Trim, u64),
    /// Several needs together.
    Each(Vec<Need>),
}

/// The stored layout of a stream (see the module documentation, "Grouped form").
#[derive(Clone, Debug, Default)]
struct Layout {
    /// Estimated encoded bytes of the entries (kept in step by every change).
    entry_bytes: usize,
    /// Stored grouped: a root record, one page per node, one record per consumer group.
    grouped: bool,
    /// Page id of each node, by master ID (grouped only).
    pages: BTreeMap<StreamId, u64>,
    /// Master ID of each page id (grouped only).
    masters: BTreeMap<u64, StreamId>,
    /// The next page id (page ids grow with the master IDs, as nodes are only added at
    /// the tail).
    next_page: u64,
    /// Record id of each consumer group, by name (grouped only).
    cgroups: BTreeMap<Vec<u8>, u64>,
    /// The next consumer-group record id.
    next_cgroup: u64,
    /// Masters of the nodes whose entries changed (or which were added or removed) since
    /// the last write (grouped only).
    dirty: BTreeSet<StreamId>,
    /// The consumer groups were handed out for changes since the last write (their
    /// encodings are compared with the shadows only then).
    groups_touched: bool,
    /// Record ids were added or removed (or the layout changed) since the last write.
    layout_changed: bool,
    /// The root record value as last written (None: to write).
    root_shadow: Option<Vec<u8>>,
    /// Each consumer group's record value as last written, by record id. Consumer groups
    /// are changed in place by the commands, so a write compares their encodings with
    /// these to find the ones that changed.
    cgroup_shadow: BTreeMap<u64, Vec<u8>>,
    /// Page ids of the pages not loaded (a stream loaded partially; grouped only). Their
    /// nodes are not in `nodes`, their entries not in `entries`.
    unloaded: BTreeSet<u64>,
    /// Entries in the pages not loaded.
    unloaded_len: usize,
    /// Index records (by number: page id / [`INDEX_PAGES`]) to write again.
    index_dirty: BTreeSet<u64>,
    /// Each consumer group's PEL pages (by consumer-group record id): first ID → page
    /// number (the first page also holds anything below its first ID).
    pel_dirs: BTreeMap<u64, BTreeMap<StreamId, u32>>,
    /// The next PEL page number of each consumer group.
    pel_next: BTreeMap<u64, u32>,
    /// Each PEL record's value (pages and directories) as last written, by record id.
    pel_shadow: BTreeMap<u64, Vec<u8>>,
    /// The tail page's entries as its record holds them (master, entry count, bytes), kept
    /// up by the appends, so that an XADD copies them instead of encoding every entry of
    /// the page again. None: built at the next write (any other change drops it).
    tail_shadow: Option<(StreamId, usize, Vec<u8>)>,
    /// Record ids that went away since [`Stream::take_gone`] (pages, index records,
    /// consumer groups and their PEL records), unless `gone_unknown`.
    gone: Vec<u64>,
    /// The layout changed wholesale since [`Stream::take_gone`] (conversion, a load of an
    /// older format): the records that went away are found by comparing id lists.
    gone_unknown: bool,
    /// Consumer groups changed through [`Stream::ack`] or [`Stream::put_group`] since the
    /// last write: whether the group itself (not its PEL) may have changed, and the pending
    /// IDs added, changed or removed (only those pages are written again when no group
    /// was handed out through [`Stream::groups_mut`]).
    pel_changes: BTreeMap<Vec<u8>, (bool, Vec<StreamId>)>,
}

impl Layout {
    /// True when no page before the one of `master` is unloaded.
    fn none_unloaded_before(&self, master: StreamId) -> bool {
        match (self.unloaded.iter().next(), self.pages.get(&master)) {
            (None, _) => true,
            (Some(&u), Some(&id)) => u > id,
            (Some(_), None) => false,
        }
    }

    /// The page (master, id) that holds `id`'s entry if it exists: the last page whose
    /// master is not above it (the first page holds anything before its master).
    fn page_of(&self, id: StreamId) -> Option<(StreamId, u64)> {
        self.pages
            .range(..=id)
            .next_back()
            .or_else(|| self.pages.iter().next())
            .map(|(m, p)| (*m, *p))
    }
}

impl PartialEq for Layout {
    fn eq(&self, _: &Layout) -> bool {
        true
    }
}

impl Eq for Layout {}

/// Estimated encoded bytes of one entry.
fn entry_bytes(fields: &Fields) -> usize {
    6 + fields.iter().map(|f| f.len() + 2).sum::<usize>()
}

/// Estimated encoded bytes of a consumer group (for the layout plan).
fn cgroup_bytes(name: &[u8], g: &Group) -> usize {
    24 + name.len() + g.pel.len() * 24 + g.consumers.keys().map(|c| 16 + c.len()).sum::<usize>()
}

/// How a trim chooses what goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trim {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Remove entries below this ID.
    MinId(StreamId),
}

/// Size of an integer as a listpack element (encoding + back length).
fn lp_int_size(v: i64) -> u64 {
    let enc = if (0..=127).contains(&v) {
        1
    } else if (-4096..=4095).contains(&v) {
        2
    } else if i16::try_from(v).is_ok() {
        3
    } else if (-(1 << 23)..(1 << 23)).contains(&v) {
        4
    } else if i32::try_from(v).is_ok() {
        5
    } else {
        9
    };
    enc + 1
}

/// Size of a string as a listpack element (integers in canonical form are stored as
/// integers).
fn lp_str_size(s: &[u8]) -> u64 {
    if s.len() <= 20 {
        if let Some(v) = crate::commands::parse_i64(s) {
            if v.to_string().as_bytes() == s {
                return lp_int_size(v);
            }
        }
    }
    let n = s.len() as u64;
    let enc = if n <= 63 {
        1 + n
    } else if n <= 4095 {
        2 + n
    } else {
        5 + n
    };
    let back = if enc <= 127 {
        1
    } else if enc < 16383 {
        2
    } else if enc < 2097151 {
        3
    } else if enc < 268435455 {
        4
    } else {
        5
    };
    enc + back
}

impl Stream {
    /// The consumer groups, by name.
    pub fn groups(&self) -> &BTreeMap<Vec<u8>, Group> {
        &self.groups
    }

    /// Removes the pending entries `ids` of consumer group `group` (XACK); how many there
    /// were. Only the PEL pages of those IDs are written again.
    pub fn ack(&mut self, group: &[u8], ids: &[StreamId]) -> usize {
        let Some(g) = self.groups.get_mut(group) else {
            return 0;
        };
        let acked: Vec<StreamId> = ids
            .iter()
            .copied()
            .filter(|id| g.remove_pending(*id))
            .collect();
        let n = acked.len();
        if n > 0 {
            self.layout
                .pel_changes
                .entry(group.to_vec())
                .or_default()
                .1
                .extend(acked);
        }
        n
    }

    /// Takes consumer group `name` out to change it (XREADGROUP); hand it back with
    /// [`Stream::put_group`].
    pub fn take_group(&mut self, name: &[u8]) -> Option<Group> {
        self.groups.remove(name)
    }

    /// Hands back consumer group `name` taken with [`Stream::take_group`], whose pending
    /// entries `pel_ids` (only those) were added or changed.
    pub fn put_group(&mut self, name: &[u8], g: Group, pel_ids: Vec<StreamId>) {
        self.groups.insert(name.to_vec(), g);
        let c = self.layout.pel_changes.entry(name.to_vec()).or_default();
        c.0 = true;
        c.1.extend(pel_ids);
    }

    /// The consumer groups, to change.
    pub fn groups_mut(&mut self) -> &mut BTreeMap<Vec<u8>, Group> {
        self.layout.groups_touched = true;
        &mut self.groups
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len() + self.layout.unloaded_len
    }

    /// True when the stream has no entries (the key still exists).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entry `id`.
    pub fn get(&self, id: StreamId) -> Option<&Fields> {
        self.entries.get(&id)
    }

    /// True when entry `id` exists.
    pub fn contains(&self, id: StreamId) -> bool {
        self.entries.contains_key(&id)
    }

    /// The entries from `start` to `end` inclusive, ascending.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> impl DoubleEndedIterator<Item = (&StreamId, &Fields)> {
        let r = if start <= end {
            Some(self.entries.range(start..=end))
        } else {
            None
        };
        r.into_iter().flatten()
    }

    /// Every entry, ascending.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&StreamId, &Fields)> {
        self.entries.iter()
    }

    /// The first entry's ID (0-0 when empty): Redis's `first_id`.
    pub fn first_id(&self) -> StreamId {
        self.entries.keys().next().copied().unwrap_or_default()
    }

    /// The last entry's ID (0-0 when empty): Redis's `streamLastValidID`.
    pub fn last_valid_id(&self) -> StreamId {
        self.entries.keys().next_back().copied().unwrap_or_default()
    }

    /// A stream of `entries` (ascending IDs), its node model built as by XADDs of them in
    /// nodes of `max_entries` entries and `max_bytes` bytes (see [`Stream::append`]); the
    /// caller sets `last_id`, `max_deleted_id`, `entries_added` and the groups (RESTORE).
    pub fn from_entries(
        entries: impl IntoIterator<Item = (StreamId, Fields)>,
        max_entries: u64,
        max_bytes: u64,
    ) -> Stream {
        let mut s = Stream::default();
        for (id, fields) in entries {
            s.append(id, fields, max_entries, max_bytes);
        }
        s
    }

    /// Number of modelled nodes (XINFO's `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len() + self.layout.unloaded.len()
    }

    /// Appends entry `id` (greater than `last_id`, checked by the caller), in nodes of
    /// `max_entries` entries (0: no limit) and `max_bytes` bytes (0: Redis's 1 GiB cap), as
    /// `stream-node-max-entries` and `stream-node-max-bytes` say.
    pub fn append(&mut self, id: StreamId, fields: Fields, max_entries: u64, max_bytes: u64) {
        let totelelen: u64 = fields.iter().map(|f| f.len() as u64).sum();
        let numfields = fields.len() / 2;
        let max_bytes = if max_bytes == 0 || max_bytes > (1 << 30) {
            1 << 30
        } else {
            max_bytes
        };
        let tail = self.nodes.iter_mut().next_back();
        let mut placed = false;
        if let Some((master, node)) = tail {
            let full = node.bytes + totelelen >= max_bytes
                || (max_entries > 0 && node.total as u64 >= max_entries);
            if !full {
                let same = node.master_fields.len() == numfields
                    && node
                        .master_fields
                        .iter()
                        .zip(fields.iter().step_by(2))
                        .all(|(a, b)| a == b);
                let mut b = lp_int_size(if same { 2 } else { 0 })
                    + lp_int_size(id.ms.wrapping_sub(master.ms) as i64)
                    + lp_int_size(id.seq.wrapping_sub(master.seq) as i64);
                if same {
                    b += fields
                        .iter()
                        .skip(1)
                        .step_by(2)
                        .map(|v| lp_str_size(v))
                        .sum::<u64>();
                    b += lp_int_size(numfields as i64 + 3);
                } else {
                    b += lp_int_size(numfields as i64);
                    b += fields.iter().map(|v| lp_str_size(v)).sum::<u64>();
                    b += lp_int_size(2 * numfields as i64 + 4);
                }
                node.bytes += b;
                node.total += 1;
                node.live += 1;
                node.last = id;
                placed = true;
                if self.layout.grouped {
                    self.layout.dirty.insert(*master);
                    match &mut self.layout.tail_shadow {
                        Some((m, n, b)) if m == master => {
                            put_entry(b, id, &fields);
                            *n += 1;
                        }
                        t => *t = None,
                    }
                }
            }
        }
        if !placed {
            let master_fields: Vec<Vec<u8>> = fields.iter().step_by(2).cloned().collect();
            let mut b = 7
                + lp_int_size(1)
                + lp_int_size(0)
                + lp_int_size(numfields as i64)
                + master_fields.iter().map(|f| lp_str_size(f)).sum::<u64>()
                + lp_int_size(0);
            // The first entry: flags, deltas 0, its values, lp-count.
            b += lp_int_size(2) + 2 * lp_int_size(0);
            b += fields
                .iter()
                .skip(1)
                .step_by(2)
                .map(|v| lp_str_size(v))
                .sum::<u64>();
            b += lp_int_size(numfields as i64 + 3);
            self.nodes.insert(
                id,
                Node {
                    last: id,
                    live: 1,
                    total: 1,
                    bytes: b,
                    master_fields,
                },
            );
            if self.layout.grouped {
                self.layout.dirty.insert(id);
                // A new tail page (its master is above every entry).
                let mut b = Vec::new();
                put_entry(&mut b, id, &fields);
                self.layout.tail_shadow = Some((id, 1, b));
            }
        }
        self.layout.entry_bytes += entry_bytes(&fields);
        self.entries.insert(id, fields);
        self.last_id = id;
        self.entries_added += 1;
    }

    /// Removes entry `id` from the entries (not from the node model); true when it existed.
    fn remove_entry(&mut self, id: StreamId) -> bool {
        match self.entries.remove(&id) {
            Some(f) => {
                self.layout.entry_bytes = self.layout.entry_bytes.saturating_sub(entry_bytes(&f));
                true
            }
            None => false,
        }
    }

    /// Deletes entry `id` (XDEL); true when it existed. Updates `max_deleted_id`.
    pub fn delete(&mut self, id: StreamId) -> bool {
        if !self.remove_entry(id) {
            return false;
        }
        self.layout.tail_shadow = None;
        if let Some((&master, node)) = self.nodes.range_mut(..=id).next_back() {
            if self.layout.grouped {
                self.layout.dirty.insert(master);
            }
            node.live = node.live.saturating_sub(1);
            if node.live == 0 {
                self.nodes.remove(&master);
            }
        }
        if id > self.max_deleted_id {
            self.max_deleted_id = id;
        }
        true
    }

    /// Trims as Redis's `streamTrim`: whole nodes first; with `approx` only whole nodes;
    /// `limit` (0 = none) caps the entries removed. Returns how many entries went.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        self.layout.tail_shadow = None;
        let mut deleted: u64 = 0;
        loop {
            if let Trim::MaxLen(max) = how {
                if self.len() as u64 <= max {
                    break;
                }
            }
            let Some((&master, node)) = self.nodes.iter().next() else {
                break;
            };
            if !self.layout.none_unloaded_before(master) {
                // Not expected: the command's need loads the head pages a trim looks at.
                debug_assert!(false, "trim reached a page that is not loaded");
                break;
            }
            let live = node.live as u64;
            if limit > 0 && deleted + live > limit {
                break;
            }
            let remove_node = match how {
                Trim::MaxLen(max) => self.len() as u64 - live >= max,
                Trim::MinId(min) => node.last < min,
            };
            if remove_node {
                let last = node.last;
                self.nodes.remove(&master);
                let gone: Vec<StreamId> = self
                    .entries
                    .range(master..=last)
                    .map(|(id, _)| *id)
                    .collect();
                for id in gone {
                    self.remove_entry(id);
                }
                if self.layout.grouped {
                    self.layout.dirty.insert(master);
                }
                deleted += live;
                continue;
            }
            if approx {
                break;
            }
            let last = node.last;
            let mut n = 0u32;
            loop {
                let stop = match how {
                    Trim::MaxLen(max) => self.len() as u64 <= max,
                    Trim::MinId(min) => self
                        .entries
                        .range(master..=last)
                        .next()
                        .is_none_or(|(id, _)| *id >= min),
                };
                if stop {
                    break;
                }
                let Some((&id, _)) = self.entries.range(master..=last).next() else {
                    break;
                };
                self.remove_entry(id);
                n += 1;
            }
            if let Some(node) = self.nodes.get_mut(&master) {
                node.live -= n;
            }
            if n > 0 && self.layout.grouped {
                self.layout.dirty.insert(master);
            }
            deleted += n as u64;
            break;
        }
        deleted
    }

    /// True when a deleted entry may lie between `start` and `end` (Redis's
    /// `streamRangeHasTombstones`).
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.is_empty() || self.max_deleted_id.is_zero() {
            return false;
        }
        start <= self.max_deleted_id && self.max_deleted_id <= end
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry` (None: not obtainable).
    pub fn estimate_distance(&self, id: StreamId) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        let added = self.entries_added as i64;
        if self.is_empty() && id <= self.last_id {
            return Some(added);
        }
        if !id.is_zero() && id < self.max_deleted_id {
            return None;
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return Some(added),
            std::cmp::Ordering::Greater => return None,
            _ => {}
        }
        let first = self.first_id();
        if self.max_deleted_id.is_zero() || self.max_deleted_id < first {
            let len = self.len() as i64;
            match id.cmp(&first) {
                std::cmp::Ordering::Less => return Some(added - len),
                std::cmp::Ordering::Equal => return Some(added - len + 1),
                _ => {}
            }
        }
        None
    }

    /// The lag of group `g` (None: not obtainable), as Redis's `streamReplyWithCGLag`.
    pub fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 || self.is_empty() {
            return Some(0);
        }
        let first = self.first_id();
        if g.last_id < first && self.max_deleted_id < first {
            return Some(self.len() as i64);
        }
        if g.entries_read != -1 && !self.range_has_tombstones(g.last_id, StreamId::MAX) {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        self.estimate_distance(g.last_id)
            .map(|read| self.entries_added as i64 - read)
    }

    /// Moves group `g`'s last ID to `id`, delivered now (Redis's counter update in
    /// `streamReplyWithRange`).
    pub fn advance_group(&self, g: &mut Group, id: StreamId) {
        if g.entries_read != -1
            && g.last_id >= self.first_id()
            && !self.range_has_tombstones(g.last_id, StreamId::MAX)
        {
            g.entries_read += 1;
        } else if self.entries_added > 0 {
            g.entries_read = self.estimate_distance(id).unwrap_or(-1);
        }
        g.last_id = id;
    }

    /// Approximate bytes of RAM.
    pub fn ram_bytes(&self) -> usize {
        // From the encoded-size estimate, not a walk of the entries (the decoded cache asks
        // at every write).
        let mut n = 128
            + self.nodes.len() * 96
            + self.entries.len() * 80
            + self.layout.entry_bytes * 2
            + self.layout.pages.len() * 96;
        for (name, g) in &self.groups {
            n += 128 + name.len() + g.pel.len() * 96;
            for (c, _) in g.consumers.iter() {
                n += 96 + c.len();
            }
        }
        n
    }

    /// Appends the record value: the whole stream while compact, the root once grouped.
    pub fn encode(&self, out: &mut Vec<u8>) {
        if self.layout.grouped {
            return self.encode_root(out);
        }
        out.push(0);
        self.encode_head(out);
        put_varint(out, self.nodes.len() as u64);
        for (m, n) in &self.nodes {
            put_node(out, *m, n);
        }
        put_varint(out, self.entries.len() as u64);
        for (i, f) in &self.entries {
            put_entry(out, *i, f);
        }
        put_varint(out, self.groups.len() as u64);
        for (name, g) in &self.groups {
            put_cgroup(out, name, g);
        }
    }

    /// The fields shared by the compact record and the grouped root: last ID, max
    /// deleted ID, entries added.
    fn encode_head(&self, out: &mut Vec<u8>) {
        put_id(out, self.last_id);
        put_id(out, self.max_deleted_id);
        put_varint(out, self.entries_added);
    }

    /// Appends the root record value of the grouped form.
    fn encode_root(&self, out: &mut Vec<u8>) {
        out.push(super::FLAG_GROUPED);
        self.encode_head(out);
        put_varint(out, self.layout.next_page);
        put_varint(out, self.layout.next_cgroup);
        // Counts, so that a page record gone missing is reported, not a shorter stream.
        put_varint(out, self.len() as u64);
        put_varint(out, self.node_count() as u64);
        put_varint(out, self.layout.cgroups.len() as u64);
        for (name, id) in &self.layout.cgroups {
            put_bytes(out, name);
            put_varint(out, *id);
        }
        put_varint(out, ROOT_INDEXED);
    }

    /// True when a grouped stream's root record value says the stream has index records
    /// (so that it can be loaded partially, [`Stream::decode_partial`]).
    pub fn root_is_indexed(root: &[u8]) -> bool {
        let mut r = Reader::new(root);
        let head = (|| -> Result<bool, DecodeError> {
            if r.byte()? != super::FLAG_GROUPED {
                return Ok(false);
            }
            for _ in 0..9 {
                r.varint()?;
            }
            let n = r.count(2)?;
            for _ in 0..n {
                r.bytes()?;
                r.varint()?;
            }
            Ok(r.pos() < root.len() && r.varint()? == ROOT_INDEXED)
        })();
        head.unwrap_or(false)
    }

    /// Appends the record value of index record `c` (pages `c * INDEX_PAGES ..`).
    fn encode_index(&self, c: u64, out: &mut Vec<u8>) {
        out.push(0);
        let lo = c * INDEX_PAGES;
        let range = self.layout.masters.range(lo..lo + INDEX_PAGES);
        put_varint(out, range.clone().count() as u64);
        for (id, m) in range {
            put_varint(out, id - lo);
            put_id(out, *m);
        }
    }

    /// The numbers of the index records of the pages there are.
    fn index_records(&self) -> Vec<u64> {
        let mut v: Vec<u64> = Vec::new();
        for id in self.layout.masters.keys() {
            let c = id / INDEX_PAGES;
            if v.last() != Some(&c) {
                v.push(c);
            }
        }
        v
    }

    /// Appends the record value of group record `id` of a grouped stream: a page (one
    /// node and its entries) or a consumer group.
    pub fn encode_group(&self, id: u64, out: &mut Vec<u8>) {
        if id >= PEL_ID_BASE {
            let b = self
                .layout
                .pel_shadow
                .get(&id)
                .expect("PEL record encoded by take_changes");
            out.extend_from_slice(b);
            return;
        }
        if id >= CGROUP_ID_BASE {
            let b = self
                .layout
                .cgroup_shadow
                .get(&id)
                .expect("consumer group record encoded by take_changes");
            out.extend_from_slice(b);
            return;
        }
        if id >= INDEX_ID_BASE {
            return self.encode_index(id - INDEX_ID_BASE, out);
        }
        let master = self.layout.masters[&id];
        let node = &self.nodes[&master];
        out.push(0);
        put_node(out, master, node);
        if let Some((m, n, b)) = &self.layout.tail_shadow {
            if *m == master && self.layout.pages.keys().next_back() == Some(&master) {
                put_varint(out, *n as u64);
                out.extend_from_slice(b);
                return;
            }
        }
        // The page holds the entries from its master (from the start for the first page)
        // up to the next node's master.
        let first = self.layout.pages.keys().next() == Some(&master);
        let from = if first { StreamId::MIN } else { master };
        let next = self
            .layout
            .pages
            .range((
                std::ops::Bound::Excluded(master),
                std::ops::Bound::Unbounded,
            ))
            .next()
            .map(|(m, _)| *m);
        let range = match next {
            Some(n) => self.entries.range(from..n),
            None => self.entries.range(from..),
        };
        let n = range.clone().count();
        put_varint(out, n as u64);
        for (i, f) in range {
            put_entry(out, *i, f);
        }
    }

    /// Decodes a compact record value.
    pub fn decode(bytes: &[u8]) -> Result<Stream, DecodeError> {
        let mut r = Reader::new(bytes);
        let flags = r.byte()?;
        if flags != 0 {
            return Err(DecodeError(format!("unknown stream flags {flags}")));
        }
        let mut s = Stream::default();
        s.decode_head(&mut r)?;
        let n = r.count(7)?;
        for _ in 0..n {
            let (m, node) = get_node(&mut r)?;
            s.nodes.insert(m, node);
        }
        let n = r.count(3)?;
        for _ in 0..n {
            let (i, f) = get_entry(&mut r)?;
            s.layout.entry_bytes += entry_bytes(&f);
            s.entries.insert(i, f);
        }
        let ng = r.count(4)?;
        for _ in 0..ng {
            let (name, g) = get_cgroup(&mut r)?;
            s.groups.insert(name, g);
        }
        r.finish()?;
        Ok(s)
    }

    fn decode_head(&mut self, r: &mut Reader) -> Result<(), DecodeError> {
        self.last_id = get_id(r)?;
        self.max_deleted_id = get_id(r)?;
        self.entries_added = r.varint()?;
        Ok(())
    }

    /// Decodes a grouped stream: its root record value and its group records (id, value)
    /// in id order (pages, index records, then consumer groups).
    pub fn decode_grouped(root: &[u8], groups: &[(u64, &[u8])]) -> Result<Stream, DecodeError> {
        let s = Stream::decode_partial(root, groups)?;
        if !s.layout.unloaded.is_empty() {
            return Err(DecodeError(format!(
                "grouped stream misses {} of its pages",
                s.layout.unloaded.len()
            )));
        }
        Ok(s)
    }

    /// Decodes a grouped stream from its root record value and some of its group records
    /// (id, value; in id order): with index records (see [`Stream::root_is_indexed`]), all
    /// of them and every consumer group, and any of the pages (the others stay unloaded
    /// until [`Stream::load_pages`]); without, every record.
    pub fn decode_partial(root: &[u8], groups: &[(u64, &[u8])]) -> Result<Stream, DecodeError> {
        let mut r = Reader::new(root);
        if r.byte()? != super::FLAG_GROUPED {
            return Err(DecodeError("unknown grouped stream root".into()));
        }
        let mut s = Stream::default();
        s.decode_head(&mut r)?;
        s.layout.grouped = true;
        s.layout.next_page = r.varint()?;
        s.layout.next_cgroup = r.varint()?;
        let want_entries = r.varint()?;
        let want_pages = r.varint()?;
        let n = r.count(2)?;
        for _ in 0..n {
            let name = r.bytes()?.to_vec();
            let id = r.varint()?;
            if id < CGROUP_ID_BASE || id >= s.layout.next_cgroup {
                return Err(DecodeError(format!(
                    "consumer group record id {id} out of range"
                )));
            }
            s.layout.cgroups.insert(name, id);
        }
        let indexed = if r.pos() < root.len() {
            match r.varint()? {
                ROOT_INDEXED => true,
                v => return Err(DecodeError(format!("unknown stream root version {v}"))),
            }
        } else {
            false
        };
        r.finish()?;
        if s.layout.next_page > INDEX_ID_BASE {
            return Err(DecodeError("stream page ids out of range".into()));
        }
        let names: BTreeMap<u64, Vec<u8>> = s
            .layout
            .cgroups
            .iter()
            .map(|(n, id)| (*id, n.clone()))
            .collect();
        let mut index: BTreeMap<u64, StreamId> = BTreeMap::new();
        let mut loaded: Vec<u64> = Vec::new();
        let mut page_records: Vec<(u64, Reader)> = Vec::new();
        let mut pel_records: Vec<(u64, &[u8])> = Vec::new();
        for &(id, v) in groups {
            let mut r = Reader::new(v);
            let flags = r.byte()?;
            if id >= PEL_ID_BASE {
                pel_records.push((id, v));
                continue;
            }
            if id >= CGROUP_ID_BASE {
                let (name, g) = match flags {
                    0 => {
                        // Written before PEL pages: paged at the next write.
                        s.layout.groups_touched = true;
                        get_cgroup(&mut r)?
                    }
                    CGROUP_PAGED => {
                        s.layout.pel_dirs.insert(id, BTreeMap::new());
                        get_cgroup_head(&mut r)?
                    }
                    f => return Err(DecodeError(format!("unknown consumer group flags {f}"))),
                };
                r.finish()?;
                if names.get(&id) != Some(&name) {
                    return Err(DecodeError(format!(
                        "consumer group record {id} not in the stream's index"
                    )));
                }
                s.layout.cgroup_shadow.insert(id, v.to_vec());
                s.groups.insert(name, g);
                continue;
            }
            if flags != 0 {
                return Err(DecodeError("unknown stream group record flags".into()));
            }
            if id >= INDEX_ID_BASE {
                if !indexed {
                    return Err(DecodeError("stream index record of no index".into()));
                }
                let lo = (id - INDEX_ID_BASE) * INDEX_PAGES;
                let n = r.count(3)?;
                for _ in 0..n {
                    let off = r.varint()?;
                    let m = get_id(&mut r)?;
                    if off >= INDEX_PAGES || lo + off >= s.layout.next_page {
                        return Err(DecodeError("stream index entry out of range".into()));
                    }
                    if index.insert(lo + off, m).is_some() {
                        return Err(DecodeError("stream page indexed twice".into()));
                    }
                }
                r.finish()?;
                continue;
            }
            if id >= s.layout.next_page {
                return Err(DecodeError(format!("stream page id {id} out of range")));
            }
            page_records.push((id, r));
        }
        // Pages after the index records (which come after them in id order).
        for (id, mut r) in page_records {
            let m = s.decode_page(&mut r)?;
            r.finish()?;
            if indexed {
                if index.get(&id) != Some(&m) {
                    return Err(DecodeError(format!("stream page {id} not in the index")));
                }
            } else {
                index.insert(id, m);
            }
            loaded.push(id);
        }
        if s.groups.len() != s.layout.cgroups.len() {
            return Err(DecodeError(format!(
                "grouped stream of {} consumer groups has {} group records",
                s.layout.cgroups.len(),
                s.groups.len()
            )));
        }
        s.decode_pel_records(&names, &pel_records)?;
        // The index: page ids in the order of their masters, one node per master.
        let mut prev: Option<StreamId> = None;
        for (&id, &m) in &index {
            if prev.is_some_and(|p| p >= m) {
                return Err(DecodeError("stream pages out of order".into()));
            }
            prev = Some(m);
            s.layout.pages.insert(m, id);
            s.layout.masters.insert(id, m);
        }
        if s.layout.pages.len() != index.len() {
            return Err(DecodeError("two stream pages of one node".into()));
        }
        let loaded: BTreeSet<u64> = loaded.into_iter().collect();
        if loaded.len() != s.nodes.len() {
            return Err(DecodeError("two stream pages of one node".into()));
        }
        s.layout.unloaded = index
            .keys()
            .filter(|id| !loaded.contains(id))
            .copied()
            .collect();
        let have = s.entries.len() as u64;
        if index.len() as u64 != want_pages
            || have > want_entries
            || (s.layout.unloaded.is_empty() && have != want_entries)
        {
            return Err(DecodeError(format!(
                "grouped stream of {want_entries} entries in {want_pages} pages has {} in {}",
                have,
                index.len()
            )));
        }
        s.layout.unloaded_len = (want_entries - have) as usize;
        if indexed {
            s.layout.root_shadow = Some(root.to_vec());
        } else {
            // Written before index records: they are written at the next change, with the
            // root that says so.
            s.layout.index_dirty = s.index_records().into_iter().collect();
            s.layout.layout_changed = true;
        }
        Ok(s)
    }

    /// Decodes the PEL records (directories, then pages, in id order) of the paged consumer
    /// groups (`names`: consumer group record id → name).
    fn decode_pel_records(
        &mut self,
        names: &BTreeMap<u64, Vec<u8>>,
        records: &[(u64, &[u8])],
    ) -> Result<(), DecodeError> {
        let split = |rid: u64| {
            let cgroup = CGROUP_ID_BASE + ((rid - PEL_ID_BASE) >> 32);
            (cgroup, (rid & 0xffff_ffff) as u32)
        };
        // Directories first (each is its group's last PEL record in id order).
        for &(rid, v) in records {
            let (cgroup, page) = split(rid);
            if page != PEL_DIR_PAGE {
                continue;
            }
            let Some(dir) = self.layout.pel_dirs.get_mut(&cgroup) else {
                return Err(DecodeError(
                    "PEL directory of no paged consumer group".into(),
                ));
            };
            let mut r = Reader::new(v);
            if r.byte()? != 0 {
                return Err(DecodeError("unknown PEL directory flags".into()));
            }
            let next = r.varint()?;
            let n = r.count(3)?;
            for _ in 0..n {
                let lo = get_id(&mut r)?;
                let p = r.varint()?;
                if p >= next || p >= u64::from(PEL_DIR_PAGE) || dir.insert(lo, p as u32).is_some() {
                    return Err(DecodeError("bad PEL directory entry".into()));
                }
            }
            r.finish()?;
            self.layout.pel_next.insert(cgroup, next as u32);
            self.layout.pel_shadow.insert(rid, v.to_vec());
        }
        for (cgroup, dir) in &self.layout.pel_dirs {
            if !self.layout.pel_next.contains_key(cgroup) {
                return Err(DecodeError(
                    "paged consumer group without its PEL directory".into(),
                ));
            }
            // Every page of the directory must come.
            for p in dir.values() {
                let rid = pel_record_id(*cgroup, *p);
                if !records.iter().any(|(r, _)| *r == rid) {
                    return Err(DecodeError("a PEL page is missing".into()));
                }
            }
        }
        for &(rid, v) in records {
            let (cgroup, page) = split(rid);
            if page == PEL_DIR_PAGE {
                continue;
            }
            let in_dir = self
                .layout
                .pel_dirs
                .get(&cgroup)
                .is_some_and(|d| d.values().any(|p| *p == page));
            let Some(name) = names.get(&cgroup).filter(|_| in_dir) else {
                return Err(DecodeError("PEL page of no consumer group".into()));
            };
            let Some(g) = self.groups.get_mut(name) else {
                return Err(DecodeError("PEL page of no consumer group".into()));
            };
            let mut r = Reader::new(v);
            if r.byte()? != 0 {
                return Err(DecodeError("unknown PEL page flags".into()));
            }
            get_pel(&mut r, g)?;
            r.finish()?;
            self.layout.pel_shadow.insert(rid, v.to_vec());
        }
        Ok(())
    }

    /// Decodes a page record's node and entries (after its flags byte) into the stream;
    /// its master ID.
    fn decode_page(&mut self, r: &mut Reader) -> Result<StreamId, DecodeError> {
        let (m, node) = get_node(r)?;
        let n = r.count(3)?;
        for _ in 0..n {
            let (i, f) = get_entry(r)?;
            self.layout.entry_bytes += entry_bytes(&f);
            if self.entries.insert(i, f).is_some() {
                return Err(DecodeError("stream entry in two pages".into()));
            }
        }
        if self.nodes.insert(m, node).is_some() {
            return Err(DecodeError("two stream pages of one node".into()));
        }
        Ok(m)
    }

    /// True when some of the pages are not loaded.
    pub fn is_partial(&self) -> bool {
        !self.layout.unloaded.is_empty()
    }

    /// Loads pages (id, record value) that are not loaded yet.
    pub fn load_pages(&mut self, pages: &[(u64, &[u8])]) -> Result<(), DecodeError> {
        for &(id, v) in pages {
            if !self.layout.unloaded.contains(&id) {
                continue;
            }
            let before = self.entries.len();
            let mut r = Reader::new(v);
            if r.byte()? != 0 {
                return Err(DecodeError("unknown stream group record flags".into()));
            }
            let m = self.decode_page(&mut r)?;
            r.finish()?;
            if self.layout.masters.get(&id) != Some(&m) {
                return Err(DecodeError(format!("stream page {id} not in the index")));
            }
            let n = self.entries.len() - before;
            if n > self.layout.unloaded_len {
                return Err(DecodeError(
                    "stream pages hold more entries than the root".into(),
                ));
            }
            self.layout.unloaded_len -= n;
            self.layout.unloaded.remove(&id);
        }
        if self.layout.unloaded.is_empty() && self.layout.unloaded_len != 0 {
            return Err(DecodeError(
                "stream pages hold fewer entries than the root".into(),
            ));
        }
        Ok(())
    }

    /// The ids of the pages not loaded that `need` asks for, ascending; the head and
    /// tail pages always.
    pub fn pages_needed(&self, need: &Need) -> Vec<u64> {
        let l = &self.layout;
        if l.unloaded.is_empty() {
            return Vec::new();
        }
        let mut out: BTreeSet<u64> = BTreeSet::new();
        for p in [l.masters.keys().next(), l.masters.keys().next_back()]
            .into_iter()
            .flatten()
        {
            out.insert(*p);
        }
        self.need_pages(need, &mut out);
        out.retain(|p| l.unloaded.contains(p));
        out.into_iter().collect()
    }

    fn need_pages(&self, need: &Need, out: &mut BTreeSet<u64>) {
        let l = &self.layout;
        match need {
            Need::All => out.extend(l.unloaded.iter().copied()),
            Need::Skeleton => {}
            Need::Each(v) => {
                for n in v {
                    self.need_pages(n, out);
                }
            }
            Need::Ids(ids) => {
                // With the pages around: a deletion that empties a page leaves the stream's
                // first and last entries in its neighbours.
                for id in ids {
                    if let Some((m, p)) = l.page_of(*id) {
                        out.insert(p);
                        out.extend(l.pages.range(..m).next_back().map(|(_, p)| *p));
                        out.extend(
                            l.pages
                                .range((std::ops::Bound::Excluded(m), std::ops::Bound::Unbounded))
                                .next()
                                .map(|(_, p)| *p),
                        );
                    }
                }
            }
            &Need::Scan {
                start,
                end,
                rev,
                count,
            } => {
                if start > end {
                    return;
                }
                let (Some((first, _)), Some((last, _))) = (l.page_of(start), l.page_of(end)) else {
                    return;
                };
                // Through the loaded pages, counting their entries in the range, until
                // `count` entries; at the first page not loaded, it and a guess of how many
                // more (every page holds at least one entry; the next round goes on).
                let mut left = count.unwrap_or(usize::MAX);
                let avg = (self.len() / l.pages.len().max(1)).max(1);
                let range = l.pages.range(first..=last);
                let walk: Box<dyn Iterator<Item = (&StreamId, &u64)>> = if rev {
                    Box::new(range.rev())
                } else {
                    Box::new(range)
                };
                let mut unloaded = 0usize;
                for (m, p) in walk {
                    if left == 0 {
                        return;
                    }
                    if unloaded > 0 || l.unloaded.contains(p) {
                        out.insert(*p);
                        unloaded += 1;
                        if unloaded > left / avg + 1 {
                            return;
                        }
                        continue;
                    }
                    let lo = if l.pages.keys().next() == Some(m) {
                        StreamId::MIN
                    } else {
                        *m
                    };
                    let hi = l
                        .pages
                        .range((std::ops::Bound::Excluded(*m), std::ops::Bound::Unbounded))
                        .next()
                        .and_then(|(n, _)| n.decr())
                        .unwrap_or(StreamId::MAX);
                    let (lo, hi) = (lo.max(start), hi.min(end));
                    if lo <= hi {
                        let n = self.entries.range(lo..=hi).take(left).count();
                        left -= n;
                    }
                }
            }
            Need::AfterGroup(name, pages) => {
                if let Some(g) = self.groups.get(name) {
                    if let Some(start) = g.last_id.incr() {
                        self.need_pages(
                            &Need::Scan {
                                start,
                                end: StreamId::MAX,
                                rev: false,
                                count: *pages,
                            },
                            out,
                        );
                    }
                }
            }
            Need::Pending {
                group,
                consumer,
                start,
                count,
            } => {
                let Some(g) = self.groups.get(group) else {
                    return;
                };
                let take = count.unwrap_or(usize::MAX);
                let ids: Vec<StreamId> = match consumer {
                    Some(c) => g.consumers.get(c).map_or_else(Vec::new, |c| {
                        c.pel.range(*start..).take(take).copied().collect()
                    }),
                    None => g
                        .pel
                        .range(*start..)
                        .take(take)
                        .map(|(id, _)| *id)
                        .collect(),
                };
                for id in ids {
                    if let Some((_, p)) = l.page_of(id) {
                        out.insert(p);
                    }
                }
            }
            &Need::Trim(how, limit) => {
                // Walks the head pages as the trim would, through the loaded ones; the
                // first unloaded page it reaches is needed, with a guess of how many after
                // it (the next round goes on from there).
                let mut len = self.len() as u64;
                let mut deleted = 0u64;
                let avg = (len / l.pages.len().max(1) as u64).max(1);
                // The first page kept is needed too: it becomes the head.
                for (m, p) in &l.pages {
                    let Some(node) = self.nodes.get(m) else {
                        let more = match how {
                            Trim::MaxLen(max) => len.saturating_sub(max) / avg + 1,
                            Trim::MinId(_) => 8,
                        };
                        out.extend(
                            l.pages
                                .range(*m..)
                                .map(|(_, p)| *p)
                                .take(more.min(1024) as usize),
                        );
                        return;
                    };
                    out.insert(*p);
                    if let Trim::MaxLen(max) = how {
                        if len <= max {
                            return;
                        }
                    }
                    let live = node.live as u64;
                    if limit > 0 && deleted + live > limit {
                        return;
                    }
                    let gone = match how {
                        Trim::MaxLen(max) => len - live >= max,
                        Trim::MinId(min) => node.last < min,
                    };
                    if !gone {
                        return;
                    }
                    len -= live;
                    deleted += live;
                }
            }
        }
    }

    /// Re-plans the stored layout for group records of about `group_bytes` (the pages
    /// themselves are Redis's nodes, sized by `stream-node-max-*`): grouped past twice
    /// that, compact again under half of it.
    pub fn plan_layout(&mut self, group_bytes: usize) {
        if self.is_partial() {
            // Only a stream loaded whole can become one record again.
            return;
        }
        let g = group_bytes.max(64);
        let total = self.layout.entry_bytes
            + self
                .groups
                .iter()
                .map(|(n, c)| cgroup_bytes(n, c))
                .sum::<usize>();
        // Entries outside every node cannot be paged (not expected: every entry is added
        // through a node).
        let pageable = self.entries.is_empty() || !self.nodes.is_empty();
        if !self.layout.grouped {
            if total > 2 * g && pageable {
                self.make_grouped();
            }
        } else if total < g / 2 || (self.nodes.is_empty() && self.groups.is_empty()) {
            let entry_bytes = self.layout.entry_bytes;
            *self.layout = Layout {
                entry_bytes,
                layout_changed: true,
                ..Default::default()
            };
        }
    }

    /// Switches to the grouped form: every node a page, every record to write.
    fn make_grouped(&mut self) {
        let l = &mut self.layout;
        l.grouped = true;
        l.tail_shadow = None;
        l.pages.clear();
        l.masters.clear();
        l.cgroups.clear();
        l.cgroup_shadow.clear();
        l.pel_dirs.clear();
        l.pel_next.clear();
        l.pel_shadow.clear();
        l.next_page = 1;
        l.next_cgroup = CGROUP_ID_BASE;
        l.dirty = self.nodes.keys().copied().collect();
        l.root_shadow = None;
        l.layout_changed = true;
        l.groups_touched = true;
    }

    /// True when stored grouped.
    pub fn is_grouped(&self) -> bool {
        self.layout.grouped
    }

    /// The ids of the records that went away since the last call (a write stores
    /// tombstones for them), or None when only a comparison of the stored and the new
    /// id lists ([`Stream::group_ids`]) tells (the layout changed wholesale).
    pub fn take_gone(&mut self) -> Option<Vec<u64>> {
        let l = &mut self.layout;
        let gone = std::mem::take(&mut l.gone);
        (!std::mem::take(&mut l.gone_unknown)).then_some(gone)
    }

    /// The ids of the group records, ascending (empty when compact).
    pub fn group_ids(&self) -> Vec<u64> {
        if !self.layout.grouped {
            return Vec::new();
        }
        let mut ids: Vec<u64> = self.layout.masters.keys().copied().collect();
        ids.extend(self.index_records().into_iter().map(|c| INDEX_ID_BASE + c));
        let mut c: Vec<u64> = self.layout.cgroups.values().copied().collect();
        c.sort_unstable();
        ids.extend(c);
        ids.extend(self.layout.pel_shadow.keys().copied());
        ids
    }

    /// What to write since the last call: the pages whose node changed, the consumer
    /// groups whose encoding changed, the root when its encoding changed.
    pub fn take_changes(&mut self) -> Changes {
        let l = &mut self.layout;
        if !l.grouped {
            l.dirty.clear();
            l.index_dirty.clear();
            l.pel_changes.clear();
            l.root_shadow = None;
            return Changes {
                root: true,
                groups: Vec::new(),
                layout: std::mem::take(&mut l.layout_changed),
            };
        }
        let mut layout = std::mem::take(&mut l.layout_changed);
        l.gone_unknown |= layout;
        let mut groups = Vec::new();
        for master in std::mem::take(&mut l.dirty) {
            if self.nodes.contains_key(&master) {
                let id = match l.pages.get(&master) {
                    Some(id) => *id,
                    None => {
                        let id = l.next_page;
                        l.next_page += 1;
                        l.pages.insert(master, id);
                        l.masters.insert(id, master);
                        l.index_dirty.insert(id / INDEX_PAGES);
                        layout = true;
                        id
                    }
                };
                groups.push(id);
            } else if let Some(id) = l.pages.remove(&master) {
                l.masters.remove(&id);
                l.index_dirty.insert(id / INDEX_PAGES);
                l.gone.push(id);
                layout = true;
            }
        }
        // The tail page's shadow, when it is written without one (the first write after a
        // load or another change): built once, then kept up by the appends.
        if let Some((&tail, &id)) = l.pages.iter().next_back() {
            let stale = l.tail_shadow.as_ref().is_none_or(|(m, _, _)| *m != tail);
            if stale && groups.contains(&id) && l.pages.len() > 1 {
                let mut b = Vec::new();
                let mut n = 0;
                for (i, f) in self.entries.range(tail..) {
                    put_entry(&mut b, *i, f);
                    n += 1;
                }
                l.tail_shadow = Some((tail, n, b));
            }
        }
        // Index records of pages added or removed (those left without pages are gone).
        for c in std::mem::take(&mut l.index_dirty) {
            let lo = c * INDEX_PAGES;
            if l.masters.range(lo..lo + INDEX_PAGES).next().is_some() {
                groups.push(INDEX_ID_BASE + c);
            } else {
                l.gone.push(INDEX_ID_BASE + c);
            }
            layout = true;
        }
        // Consumer groups: removed ones, then changed or new ones (only when handed out
        // for changes: an XADD costs nothing per group; an XACK only its PEL pages).
        let changed = std::mem::take(&mut l.pel_changes);
        if !l.groups_touched {
            let mut buf = Vec::new();
            for (name, (head, ids)) in changed {
                let Some(g) = self.groups.get(&name) else {
                    continue;
                };
                let Some(&cid) = l.cgroups.get(&name) else {
                    l.groups_touched = true;
                    break;
                };
                match update_pel_pages(l, cid, g, &ids, &mut groups) {
                    Some(c) => layout |= c,
                    // Not paged yet: the whole group.
                    None => {
                        l.groups_touched = true;
                        break;
                    }
                }
                if head {
                    buf.clear();
                    buf.push(CGROUP_PAGED);
                    put_cgroup_head(&mut buf, &name, g);
                    if l.cgroup_shadow.get(&cid) != Some(&buf) {
                        l.cgroup_shadow.insert(cid, buf.clone());
                        groups.push(cid);
                    }
                }
            }
        }
        if !std::mem::take(&mut l.groups_touched) {
            return self.finish_changes(groups, layout);
        }
        let gone: Vec<Vec<u8>> = l
            .cgroups
            .keys()
            .filter(|n| !self.groups.contains_key(*n))
            .cloned()
            .collect();
        for n in gone {
            if let Some(id) = l.cgroups.remove(&n) {
                l.cgroup_shadow.remove(&id);
                l.pel_dirs.remove(&id);
                l.pel_next.remove(&id);
                let pel = pel_record_id(id, 0)..=pel_record_id(id, PEL_DIR_PAGE);
                let gone = &mut l.gone;
                gone.push(id);
                l.pel_shadow.retain(|r, _| {
                    let keep = !pel.contains(r);
                    if !keep {
                        gone.push(*r);
                    }
                    keep
                });
                layout = true;
            }
        }
        let mut buf = Vec::new();
        for (name, g) in &self.groups {
            buf.clear();
            buf.push(CGROUP_PAGED);
            put_cgroup_head(&mut buf, name, g);
            let id = match l.cgroups.get(name) {
                Some(id) => *id,
                None => {
                    let id = l.next_cgroup;
                    l.next_cgroup += 1;
                    l.cgroups.insert(name.clone(), id);
                    layout = true;
                    id
                }
            };
            if l.cgroup_shadow.get(&id).map(Vec::as_slice) != Some(&buf[..]) {
                l.cgroup_shadow.insert(id, buf.clone());
                groups.push(id);
            }
            layout |= write_pel_pages(l, id, g, &mut groups);
        }
        self.finish_changes(groups, layout)
    }

    /// The end of [`Stream::take_changes`]: the root when its encoding changed.
    fn finish_changes(&mut self, mut groups: Vec<u64>, layout: bool) -> Changes {
        groups.sort_unstable();
        let mut root = Vec::new();
        self.encode_root(&mut root);
        let l = &mut self.layout;
        let root_changed = l.root_shadow.as_deref() != Some(&root[..]);
        if root_changed {
            l.root_shadow = Some(root);
        }
        Changes {
            root: root_changed,
            groups,
            layout,
        }
    }
}

/// Writes again the PEL pages of consumer group record `cgroup` that hold (or held) the
/// pending entries `ids` (added, changed or removed since), splitting those past
/// [`PEL_PAGE_MAX`] and dropping those left empty (the directory then too); adds the
/// record ids written to `out`. Some(true) when records came or went; None when the
/// group's PEL is not paged yet.
/// Encodes PEL page record `rid` holding `entries` (in `buf`) and, when that differs from
/// what the record last held (`shadow`: the PEL records as last written), keeps it and adds
/// `rid` to `out`. True when the record is new (the layout changed).
fn note_pel_page(
    shadow: &mut BTreeMap<u64, Vec<u8>>,
    rid: u64,
    entries: &[(&StreamId, &Pending)],
    buf: &mut Vec<u8>,
    out: &mut Vec<u64>,
) -> bool {
    buf.clear();
    buf.push(0);
    put_pel(buf, entries.len(), entries.iter().copied());
    match shadow.get(&rid) {
        Some(b) if b == buf => false,
        old => {
            let new = old.is_none();
            shadow.insert(rid, buf.clone());
            out.push(rid);
            new
        }
    }
}

fn update_pel_pages(
    l: &mut Layout,
    cgroup: u64,
    g: &Group,
    ids: &[StreamId],
    out: &mut Vec<u64>,
) -> Option<bool> {
    let dir_rid = pel_record_id(cgroup, PEL_DIR_PAGE);
    if !l.pel_shadow.contains_key(&dir_rid) {
        return None;
    }
    let dir = l.pel_dirs.get_mut(&cgroup)?;
    let next = l.pel_next.entry(cgroup).or_insert(0);
    let mut dir_changed = false;
    let mut layout = false;
    if dir.is_empty() {
        if g.pel.is_empty() {
            return Some(false);
        }
        dir.insert(StreamId::MIN, *next);
        *next += 1;
        dir_changed = true;
    }
    let first = *dir.keys().next().expect("not empty");
    let mut pages: BTreeSet<StreamId> = BTreeSet::new();
    for id in ids {
        let lo = dir.range(..=*id).next_back().map_or(first, |(lo, _)| *lo);
        pages.insert(lo);
    }
    let mut buf = Vec::new();
    for lo in pages {
        let page = dir[&lo];
        let from = if lo == first { StreamId::MIN } else { lo };
        let next_lo = dir
            .range((std::ops::Bound::Excluded(lo), std::ops::Bound::Unbounded))
            .next()
            .map(|(n, _)| *n);
        let entries: Vec<(&StreamId, &Pending)> = match next_lo {
            Some(n) => g.pel.range(from..n).collect(),
            None => g.pel.range(from..).collect(),
        };
        let rid = pel_record_id(cgroup, page);
        if entries.is_empty() {
            dir.remove(&lo);
            l.pel_shadow.remove(&rid);
            l.gone.push(rid);
            layout = true;
            dir_changed = true;
            continue;
        }
        let size = if entries.len() > PEL_PAGE_MAX {
            PEL_PAGE_SPLIT
        } else {
            entries.len()
        };
        for (k, chunk) in entries.chunks(size).enumerate() {
            let p = if k == 0 {
                page
            } else {
                let p = *next;
                *next += 1;
                dir.insert(*chunk[0].0, p);
                dir_changed = true;
                p
            };
            let rid = pel_record_id(cgroup, p);
            layout |= note_pel_page(&mut l.pel_shadow, rid, chunk, &mut buf, out);
        }
    }
    if dir_changed {
        // (A first page gone: the next one holds anything below its first ID, as the
        // first page did.)
        buf.clear();
        buf.push(0);
        put_varint(&mut buf, u64::from(*next));
        put_varint(&mut buf, dir.len() as u64);
        for (lo, p) in dir.iter() {
            put_id(&mut buf, *lo);
            put_varint(&mut buf, u64::from(*p));
        }
        l.pel_shadow.insert(dir_rid, buf);
        out.push(dir_rid);
    }
    Some(layout)
}

/// A PEL page being laid out: its first ID, its page number, its entries.
type PelPage<'a> = (StreamId, u32, Vec<(&'a StreamId, &'a Pending)>);

/// Splits consumer group record `cgroup`'s PEL (`g.pel`) in its pages (new pages for
/// those past [`PEL_PAGE_MAX`], none for empty ones), encodes each and its directory, and
/// adds the record ids of those whose encoding changed to `out`; true when records were
/// added or removed.
fn write_pel_pages(l: &mut Layout, cgroup: u64, g: &Group, out: &mut Vec<u64>) -> bool {
    let dir = l.pel_dirs.entry(cgroup).or_default();
    let next = l.pel_next.entry(cgroup).or_insert(0);
    // The entries of each page, by the current directory.
    let mut pages: Vec<PelPage> = dir.iter().map(|(lo, p)| (*lo, *p, Vec::new())).collect();
    if pages.is_empty() && !g.pel.is_empty() {
        pages.push((StreamId::MIN, *next, Vec::new()));
        *next += 1;
    }
    let mut at = 0;
    for (id, p) in &g.pel {
        while at + 1 < pages.len() && pages[at + 1].0 <= *id {
            at += 1;
        }
        pages[at].2.push((id, p));
    }
    // The new directory: empty pages gone, full ones split.
    let mut new_pages: Vec<PelPage> = Vec::new();
    for (lo, page, entries) in pages {
        if entries.is_empty() {
            continue;
        }
        if entries.len() <= PEL_PAGE_MAX {
            new_pages.push((lo, page, entries));
            continue;
        }
        for (k, chunk) in entries.chunks(PEL_PAGE_SPLIT).enumerate() {
            if k == 0 {
                new_pages.push((lo, page, chunk.to_vec()));
            } else {
                new_pages.push((*chunk[0].0, *next, chunk.to_vec()));
                *next += 1;
            }
        }
    }
    let new_dir: BTreeMap<StreamId, u32> = new_pages.iter().map(|(lo, p, _)| (*lo, *p)).collect();
    let mut layout = false;
    let mut buf = Vec::new();
    let mut live: BTreeSet<u64> = BTreeSet::new();
    for (_, page, entries) in &new_pages {
        let rid = pel_record_id(cgroup, *page);
        live.insert(rid);
        layout |= note_pel_page(&mut l.pel_shadow, rid, entries, &mut buf, out);
    }
    let dir_rid = pel_record_id(cgroup, PEL_DIR_PAGE);
    live.insert(dir_rid);
    buf.clear();
    buf.push(0);
    put_varint(&mut buf, u64::from(*next));
    put_varint(&mut buf, new_dir.len() as u64);
    for (lo, p) in &new_dir {
        put_id(&mut buf, *lo);
        put_varint(&mut buf, u64::from(*p));
    }
    match l.pel_shadow.get(&dir_rid) {
        Some(b) if *b == buf => {}
        old => {
            layout |= old.is_none();
            l.pel_shadow.insert(dir_rid, buf);
            out.push(dir_rid);
        }
    }
    let range = pel_record_id(cgroup, 0)..=dir_rid;
    let gone = &mut l.gone;
    l.pel_shadow.retain(|r, _| {
        let keep = !range.contains(r) || live.contains(r);
        if !keep {
            gone.push(*r);
            layout = true;
        }
        keep
    });
    l.pel_dirs.insert(cgroup, new_dir);
    layout
}

fn put_id(out: &mut Vec<u8>, i: StreamId) {
    put_varint(out, i.ms);
    put_varint(out, i.seq);
}

fn get_id(r: &mut Reader) -> Result<StreamId, DecodeError> {
    Ok(StreamId::new(r.varint()?, r.varint()?))
}

fn put_node(out: &mut Vec<u8>, m: StreamId, n: &Node) {
    put_id(out, m);
    put_id(out, n.last);
    put_varint(out, n.live as u64);
    put_varint(out, n.total as u64);
    put_varint(out, n.bytes);
    put_varint(out, n.master_fields.len() as u64);
    for f in &n.master_fields {
        put_bytes(out, f);
    }
}

fn get_node(r: &mut Reader) -> Result<(StreamId, Node), DecodeError> {
    let m = get_id(r)?;
    let last = get_id(r)?;
    let live = r.varint()? as u32;
    let total = r.varint()? as u32;
    let bytes = r.varint()?;
    let nf = r.count(1)?;
    let mut master_fields = Vec::with_capacity(nf);
    for _ in 0..nf {
        master_fields.push(r.bytes()?.to_vec());
    }
    Ok((
        m,
        Node {
            last,
            live,
            total,
            bytes,
            master_fields,
        },
    ))
}

fn put_entry(out: &mut Vec<u8>, i: StreamId, f: &Fields) {
    put_id(out, i);
    put_varint(out, f.len() as u64);
    for x in f {
        put_bytes(out, x);
    }
}

fn get_entry(r: &mut Reader) -> Result<(StreamId, Fields), DecodeError> {
    let i = get_id(r)?;
    let nf = r.count(1)?;
    let mut f = Vec::with_capacity(nf);
    for _ in 0..nf {
        f.push(r.bytes()?.to_vec());
    }
    Ok((i, f))
}

/// A consumer group without its PEL: name, last ID, entries read, consumers.
fn put_cgroup_head(out: &mut Vec<u8>, name: &[u8], g: &Group) {
    put_bytes(out, name);
    put_id(out, g.last_id);
    put_varint(out, (g.entries_read + 1) as u64);
    put_varint(out, g.consumers.len() as u64);
    for (cname, c) in &g.consumers {
        put_bytes(out, cname);
        put_varint(out, zigzag(c.seen_time));
        put_varint(out, zigzag(c.active_time));
    }
}

/// Pending entries: a count, then each.
fn put_pel<'a>(
    out: &mut Vec<u8>,
    n: usize,
    pel: impl Iterator<Item = (&'a StreamId, &'a Pending)>,
) {
    put_varint(out, n as u64);
    for (i, p) in pel {
        put_id(out, *i);
        put_bytes(out, &p.consumer);
        put_varint(out, zigzag(p.delivery_time));
        put_varint(out, p.delivery_count);
    }
}

/// A consumer group with its PEL (compact records, and consumer-group records written
/// before PEL pages).
fn put_cgroup(out: &mut Vec<u8>, name: &[u8], g: &Group) {
    put_cgroup_head(out, name, g);
    put_pel(out, g.pel.len(), g.pel.iter());
}

fn get_cgroup(r: &mut Reader) -> Result<(Vec<u8>, Group), DecodeError> {
    let (name, mut g) = get_cgroup_head(r)?;
    get_pel(r, &mut g)?;
    Ok((name, g))
}

fn get_cgroup_head(r: &mut Reader) -> Result<(Vec<u8>, Group), DecodeError> {
    let name = r.bytes()?.to_vec();
    let mut g = Group {
        last_id: get_id(r)?,
        entries_read: r.varint()? as i64 - 1,
        ..Default::default()
    };
    let nc = r.count(3)?;
    for _ in 0..nc {
        let cname = r.bytes()?.to_vec();
        let seen_time = unzigzag(r.varint()?);
        let active_time = unzigzag(r.varint()?);
        g.consumers.insert(
            cname,
            Consumer {
                seen_time,
                active_time,
                pel: BTreeSet::new(),
            },
        );
    }
    Ok((name, g))
}

/// Reads pending entries into `g` (their consumers must exist); how many.
fn get_pel(r: &mut Reader, g: &mut Group) -> Result<usize, DecodeError> {
    let np = r.count(5)?;
    for _ in 0..np {
        let i = get_id(r)?;
        let consumer = r.bytes()?.to_vec();
        let delivery_time = unzigzag(r.varint()?);
        let delivery_count = r.varint()?;
        match g.consumers.get_mut(&consumer) {
            Some(c) => {
                c.pel.insert(i);
            }
            None => return Err(DecodeError("pending entry of no consumer".into())),
        }
        let dup = g.pel.insert(
            i,
            Pending {
                consumer,
                delivery_time,
                delivery_count,
            },
        );
        if dup.is_some() {
            return Err(DecodeError("pending entry in two pages".into()));
        }
    }
    Ok(np)
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Parses a stream ID as Redis's `streamGenericParseIDOrReply`: `ms-seq`, `ms` (the
/// sequence is `missing_seq`), `-` and `+` unless `strict`; with `seq_given` also `ms-*`
/// (then the returned flag is false). None when invalid.
pub fn parse_id(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    allow_star: bool,
) -> Option<(StreamId, bool)> {
    if arg.len() > 127 {
        return None;
    }
    if arg == b"-" || arg == b"+" {
        if strict {
            return None;
        }
        return Some((
            if arg == b"-" {
                StreamId::MIN
            } else {
                StreamId::MAX
            },
            true,
        ));
    }
    match arg.iter().position(|&b| b == b'-') {
        Some(p) => {
            let ms = parse_u64(&arg[..p])?;
            let rest = &arg[p + 1..];
            if allow_star && rest == b"*" {
                return Some((StreamId::new(ms, 0), false));
            }
            Some((StreamId::new(ms, parse_u64(rest)?), true))
        }
        None => Some((StreamId::new(parse_u64(arg)?, missing_seq), true)),
    }
}

/// Redis's `string2ull`: a non-negative integer (as `string2ll`), or else what `strtoull`
/// takes whole (leading spaces, a sign).
fn parse_u64(s: &[u8]) -> Option<u64> {
    if let Some(v) = crate::commands::parse_i64(s) {
        return (v >= 0).then_some(v as u64);
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: &str) -> Fields {
        vec![b"f".to_vec(), v.as_bytes().to_vec()]
    }

    #[test]
    fn round_trips_with_groups() {
        let mut s = Stream::default();
        for i in 1..=250 {
            s.append(StreamId::new(i, 0), f(&i.to_string()), 100, 4096);
        }
        s.delete(StreamId::new(5, 0));
        let mut g = Group {
            entries_read: -1,
            ..Default::default()
        };
        g.create_consumer(b"alice", 10);
        g.pel.insert(
            StreamId::new(3, 0),
            Pending {
                consumer: b"alice".to_vec(),
                delivery_time: 7,
                delivery_count: 2,
            },
        );
        g.consumers
            .get_mut(&b"alice"[..])
            .unwrap()
            .pel
            .insert(StreamId::new(3, 0));
        s.groups_mut().insert(b"g".to_vec(), g);
        let mut out = Vec::new();
        s.encode(&mut out);
        assert_eq!(Stream::decode(&out).unwrap(), s);
        for cut in 0..out.len() {
            assert!(Stream::decode(&out[..cut]).is_err());
        }
    }

    /// A store of records as the keyspace keeps them: the root and the group records by id.
    #[derive(Clone, Default)]
    struct Store {
        root: Vec<u8>,
        groups: BTreeMap<u64, Vec<u8>>,
        /// Bytes written by the last write.
        written: usize,
    }

    impl Store {
        /// Writes `s` as `store_coll` does; returns the stream decoded from the store.
        fn write(&mut self, s: &mut Stream, group_bytes: usize) -> Stream {
            s.plan_layout(group_bytes);
            let c = s.take_changes();
            self.written = 0;
            if !s.is_grouped() {
                self.groups.clear();
                self.root.clear();
                s.encode(&mut self.root);
                self.written = self.root.len();
                return Stream::decode(&self.root).unwrap();
            }
            for &g in &c.groups {
                let mut b = Vec::new();
                s.encode_group(g, &mut b);
                self.written += b.len();
                self.groups.insert(g, b);
            }
            let ids = s.group_ids();
            // The records the stream says went away are exactly those no longer listed.
            let expected: Vec<u64> = self
                .groups
                .keys()
                .copied()
                .filter(|g| ids.binary_search(g).is_err())
                .collect();
            if let Some(mut gone) = s.take_gone() {
                gone.retain(|g| self.groups.contains_key(g));
                gone.sort_unstable();
                assert_eq!(gone, expected, "records gone");
            }
            if c.layout {
                self.groups.retain(|g, _| ids.binary_search(g).is_ok());
            }
            assert_eq!(self.groups.keys().copied().collect::<Vec<_>>(), ids);
            if c.root || !is_root(&self.root) {
                self.root.clear();
                s.encode(&mut self.root);
                self.written += self.root.len();
            }
            let gs: Vec<(u64, &[u8])> = self.groups.iter().map(|(g, v)| (*g, &v[..])).collect();
            Stream::decode_grouped(&self.root, &gs).unwrap()
        }
    }

    fn is_root(b: &[u8]) -> bool {
        b.first() == Some(&crate::coll::FLAG_GROUPED)
    }

    /// Grouped records cut short, dropped or swapped give errors, never panics or a
    /// shorter stream.
    fn damaged_grouped_records_are_errors(s: &mut Stream, st: &mut Store) {
        for i in 0..300u64 {
            s.append(StreamId::new(1 << 40, i), f("tail"), 10, 300);
        }
        let mut back = st.write(s, 512);
        back.groups_mut().insert(
            b"extra".to_vec(),
            Group {
                entries_read: -1,
                ..Default::default()
            },
        );
        *s = back;
        st.write(s, 512);
        assert!(s.is_grouped() && st.groups.len() > 10);
        let all: Vec<(u64, Vec<u8>)> = st.groups.iter().map(|(g, v)| (*g, v.clone())).collect();
        let decode = |gs: &[(u64, Vec<u8>)]| {
            let gs: Vec<(u64, &[u8])> = gs.iter().map(|(g, v)| (*g, &v[..])).collect();
            Stream::decode_grouped(&st.root, &gs)
        };
        assert_eq!(&decode(&all).unwrap(), s);
        for drop in 0..all.len() {
            let mut gs = all.clone();
            gs.remove(drop);
            assert!(
                decode(&gs).is_err(),
                "record {drop} of {} dropped",
                all.len()
            );
        }
        for (i, (_, v)) in all.iter().enumerate().step_by(7) {
            for cut in (0..v.len()).step_by(v.len() / 16 + 1) {
                let mut gs = all.clone();
                gs[i].1.truncate(cut);
                assert!(decode(&gs).is_err(), "record {i} cut at {cut}");
            }
        }
        for cut in 0..st.root.len() {
            let gs: Vec<(u64, &[u8])> = all.iter().map(|(g, v)| (*g, &v[..])).collect();
            assert!(Stream::decode_grouped(&st.root[..cut], &gs).is_err());
        }
    }

    #[test]
    fn grouped_form_follows_every_change_and_writes_little() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(27);
        let mut s = Stream::default();
        let mut st = Store::default();
        let mut ms = 1u64;
        let mut was_grouped = false;
        for step in 0..6000 {
            let op = rng.random_range(0..100);
            if op < 70 {
                ms += rng.random_range(0..3);
                let id = s.last_id.incr().unwrap().max(StreamId::new(ms, 0));
                let v = "x".repeat(rng.random_range(1..40));
                s.append(id, f(&v), 10, 300);
            } else if op < 80 && !s.is_empty() {
                let ids: Vec<StreamId> = s.iter().map(|(i, _)| *i).collect();
                s.delete(ids[rng.random_range(0..ids.len())]);
            } else if op < 84 {
                let keep = rng.random_range(0..(s.len() as u64 + 1).max(1));
                s.trim(
                    Trim::MaxLen(keep.max(s.len() as u64 * 3 / 4)),
                    rng.random_bool(0.5),
                    0,
                );
            } else if op < 92 {
                let name = format!("g{}", rng.random_range(0..4)).into_bytes();
                let last = s.entries.iter().next_back().map(|(id, _)| *id);
                let g = s.groups_mut().entry(name).or_insert_with(|| Group {
                    entries_read: -1,
                    ..Default::default()
                });
                g.create_consumer(b"c", step);
                if let Some(id) = last {
                    g.pel.entry(id).or_insert(Pending {
                        consumer: b"c".to_vec(),
                        delivery_time: step,
                        delivery_count: 1,
                    });
                    g.consumers.get_mut(&b"c"[..]).unwrap().pel.insert(id);
                    g.last_id = id;
                }
            } else if op < 94 {
                let name = format!("g{}", rng.random_range(0..4)).into_bytes();
                s.groups_mut().remove(&name);
            } else if op < 95 && step % 7 == 0 {
                // Shrink a lot, so that the stream goes back to one record.
                s.trim(Trim::MaxLen(2), false, 0);
            }
            let before = st.groups.len();
            let back = st.write(&mut s, 512);
            assert_eq!(back, s, "step {step}");
            assert_eq!(back.node_count(), s.node_count());
            was_grouped |= s.is_grouped();
            if s.is_grouped() && op < 70 && before > 20 {
                // An append rewrites the tail page and the root, not the stream.
                assert!(st.written < 1200, "step {step}: {} bytes", st.written);
            }
        }
        assert!(was_grouped);
        damaged_grouped_records_are_errors(&mut s, &mut st);
        // A decoded grouped stream writes nothing until it changes, then as little.
        if s.is_grouped() {
            let mut back = st.write(&mut s, 512);
            let c = back.take_changes();
            assert!(c.groups.is_empty() && !c.root, "{c:?}");
        }
    }

    impl Store {
        /// The stream decoded partially, as the keyspace first loads it: root, index
        /// records, consumer groups, head and tail pages.
        fn skeleton(&self) -> Stream {
            let pages: Vec<u64> = self
                .groups
                .keys()
                .copied()
                .filter(|g| *g < INDEX_ID_BASE)
                .collect();
            let gs: Vec<(u64, &[u8])> = self
                .groups
                .iter()
                .filter(|(g, _)| {
                    **g >= INDEX_ID_BASE || Some(*g) == pages.first() || Some(*g) == pages.last()
                })
                .map(|(g, v)| (*g, &v[..]))
                .collect();
            Stream::decode_partial(&self.root, &gs).unwrap()
        }

        /// Loads what `need` asks for into `s`, round after round as the keyspace does;
        /// the number of pages read.
        fn load(&self, s: &mut Stream, need: &Need) -> usize {
            let mut n = 0;
            loop {
                let want = s.pages_needed(need);
                if want.is_empty() {
                    return n;
                }
                n += want.len();
                let gs: Vec<(u64, &[u8])> =
                    want.iter().map(|g| (*g, &self.groups[g][..])).collect();
                s.load_pages(&gs).unwrap();
            }
        }
    }

    fn same_view(a: &Stream, b: &Stream) {
        assert_eq!(a.len(), b.len());
        assert_eq!(a.first_id(), b.first_id());
        assert_eq!(a.last_valid_id(), b.last_valid_id());
        assert_eq!(a.node_count(), b.node_count());
        assert_eq!(a.last_id, b.last_id);
        assert_eq!(a.groups(), b.groups());
    }

    /// A stream loaded partially answers every need as the whole stream does, and its
    /// writes leave the store as the whole stream's do.
    #[test]
    fn partial_loads_answer_like_the_whole_stream() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(2712);
        let mut s = Stream::default();
        let mut st = Store::default();
        for i in 0..3000u64 {
            s.append(
                StreamId::new(10 + i / 3, i % 3),
                f(&"v".repeat((i % 13) as usize)),
                10,
                300,
            );
        }
        s.groups_mut().insert(
            b"g".to_vec(),
            Group {
                last_id: StreamId::new(500, 0),
                entries_read: -1,
                ..Default::default()
            },
        );
        let mut full = st.write(&mut s, 512);
        assert!(full.is_grouped() && full.node_count() > 200);
        let any_id = |rng: &mut rand::rngs::StdRng, s: &Stream| {
            StreamId::new(
                rng.random_range(0..s.last_id.ms + 5),
                rng.random_range(0..4),
            )
        };
        for trial in 0..400 {
            let mut part = st.skeleton();
            assert!(part.is_partial());
            same_view(&part, &full);
            let op = rng.random_range(0..5);
            if op == 0 {
                let (a, b) = (any_id(&mut rng, &full), any_id(&mut rng, &full));
                let (start, end) = (a.min(b), a.max(b));
                let rev = rng.random_bool(0.5);
                let count = rng.random_range(1..30);
                let read = st.load(
                    &mut part,
                    &Need::Scan {
                        start,
                        end,
                        rev,
                        count: Some(count),
                    },
                );
                assert!(
                    read <= count / 5 + 4,
                    "trial {trial}: {read} pages for {count}"
                );
                let got = |s: &Stream| -> Vec<StreamId> {
                    if rev {
                        s.range(start, end)
                            .rev()
                            .take(count)
                            .map(|(i, _)| *i)
                            .collect()
                    } else {
                        s.range(start, end).take(count).map(|(i, _)| *i).collect()
                    }
                };
                assert_eq!(got(&part), got(&full), "trial {trial}");
                continue;
            }
            if op == 1 {
                let g = full.groups()[&b"g"[..]].clone();
                st.load(&mut part, &Need::AfterGroup(b"g".to_vec(), Some(5)));
                let after = |s: &Stream| -> Vec<StreamId> {
                    s.range(g.last_id.incr().unwrap(), StreamId::MAX)
                        .take(5)
                        .map(|(i, _)| *i)
                        .collect()
                };
                assert_eq!(after(&part), after(&full));
                let mut gp = g.clone();
                let mut gf = g.clone();
                part.advance_group(&mut gp, StreamId::new(600, 1));
                full.advance_group(&mut gf, StreamId::new(600, 1));
                assert_eq!(gp, gf);
                continue;
            }
            // Changes: both copies changed alike, then written; the store must agree.
            let mut st2 = st.clone();
            if op == 2 {
                let ids: Vec<StreamId> = (0..rng.random_range(1..4))
                    .map(|_| any_id(&mut rng, &full))
                    .collect();
                st.load(&mut part, &Need::Ids(ids.clone()));
                for id in ids {
                    assert_eq!(part.delete(id), full.delete(id), "trial {trial}");
                }
            } else if op == 3 {
                let how = if rng.random_bool(0.5) {
                    Trim::MaxLen(full.len() as u64 - rng.random_range(0..40))
                } else {
                    Trim::MinId(StreamId::new(
                        full.first_id().ms + rng.random_range(0..15),
                        1,
                    ))
                };
                let approx = rng.random_bool(0.5);
                let limit = if approx { rng.random_range(0..60) } else { 0 };
                let read = st.load(&mut part, &Need::Trim(how, limit));
                assert!(read < 80, "trial {trial}: {read} pages for a small trim");
                assert_eq!(part.trim(how, approx, limit), full.trim(how, approx, limit));
            } else {
                st.load(&mut part, &Need::Skeleton);
                for _ in 0..rng.random_range(1..30) {
                    let id = full.last_id.incr().unwrap();
                    full.append(id, f("new"), 10, 300);
                    part.append(id, f("new"), 10, 300);
                }
            }
            same_view(&part, &full);
            let back_full = st.write(&mut full, 512);
            let back_part = st2.write(&mut part, 512);
            assert_eq!(st.root, st2.root, "trial {trial}");
            assert_eq!(st.groups, st2.groups, "trial {trial}");
            assert_eq!(back_full, back_part);
            full = back_full;
        }
    }

    #[test]
    fn roots_without_index_records_load_whole_and_get_them() {
        let mut s = Stream::default();
        for i in 1..=1000u64 {
            s.append(StreamId::new(i, 0), f("x"), 10, 300);
        }
        let mut st = Store::default();
        st.write(&mut s, 512);
        // The root and records as written before index records existed.
        let mut old_root = st.root.clone();
        assert_eq!(old_root.pop(), Some(ROOT_INDEXED as u8));
        let old: Vec<(u64, &[u8])> = st
            .groups
            .iter()
            .filter(|(g, _)| **g < INDEX_ID_BASE)
            .map(|(g, v)| (*g, &v[..]))
            .collect();
        assert!(!Stream::root_is_indexed(&old_root));
        assert!(Stream::root_is_indexed(&st.root));
        let mut back = Stream::decode_grouped(&old_root, &old).unwrap();
        assert_eq!(back, s);
        let c = back.take_changes();
        assert!(c.root && c.layout);
        let index: Vec<u64> = c
            .groups
            .iter()
            .copied()
            .filter(|g| *g >= INDEX_ID_BASE)
            .collect();
        assert_eq!(index.len(), 1, "{c:?}");
        let mut buf = Vec::new();
        back.encode_group(index[0], &mut buf);
        assert_eq!(buf, st.groups[&index[0]]);
    }

    /// A big PEL is stored in pages: acknowledging or delivering an entry writes a page
    /// (and the group's head), not the PEL; consumer-group records written before pages
    /// (the PEL inline) still load, and are paged at the next write.
    #[test]
    fn big_pending_lists_are_paged() {
        let mut s = Stream::default();
        for i in 1..=30_000u64 {
            s.append(StreamId::new(i, 0), f("x"), 100, 4096);
        }
        let mut g = Group {
            entries_read: -1,
            ..Default::default()
        };
        g.create_consumer(b"alice", 1);
        g.create_consumer(b"bob", 1);
        for i in 1..=20_000u64 {
            let c: &[u8] = if i % 3 == 0 { b"bob" } else { b"alice" };
            g.pel.insert(
                StreamId::new(i, 0),
                Pending {
                    consumer: c.to_vec(),
                    delivery_time: i as i64,
                    delivery_count: 1,
                },
            );
            g.consumers
                .get_mut(c)
                .unwrap()
                .pel
                .insert(StreamId::new(i, 0));
        }
        g.last_id = StreamId::new(20_000, 0);
        s.groups_mut().insert(b"g".to_vec(), g);
        let mut st = Store::default();
        let mut back = st.write(&mut s, 8192);
        assert_eq!(back, s);
        let pel_records = st.groups.keys().filter(|g| **g >= PEL_ID_BASE).count();
        assert!(
            pel_records > 20_000 / PEL_PAGE_MAX,
            "{pel_records} PEL records"
        );
        // XACKs here and there, deliveries at the end: each write a few small records.
        for k in 0..40u64 {
            if k % 2 == 1 {
                // XACK alone: the pages of the acknowledged IDs (a run of them empties a
                // page now and then), nothing else.
                let ids: Vec<StreamId> = (0..70)
                    .map(|i| StreamId::new(10_000 + k * 200 + i, 0))
                    .collect();
                assert!(back.ack(b"g", &ids) > 0);
                let want = back.clone();
                back = st.write(&mut back, 8192);
                assert_eq!(back, want, "step {k}");
                assert!(
                    st.written < 3 * 4000,
                    "step {k}: {} bytes written",
                    st.written
                );
                continue;
            }
            if k % 4 == 2 {
                // XREADGROUP: the group taken and handed back with the pending IDs it
                // delivered (150 at the end of the PEL: its tail page splits).
                let mut g = back.take_group(b"g").unwrap();
                let mut delivered = Vec::new();
                for j in 0..150 {
                    let id = StreamId::new(100_000 + k * 1000 + j, 0);
                    g.pel.insert(
                        id,
                        Pending {
                            consumer: b"bob".to_vec(),
                            delivery_time: 9,
                            delivery_count: 1,
                        },
                    );
                    g.consumers.get_mut(&b"bob"[..]).unwrap().pel.insert(id);
                    g.last_id = id;
                    delivered.push(id);
                }
                g.consumers.get_mut(&b"bob"[..]).unwrap().seen_time = k as i64;
                back.put_group(b"g", g, delivered);
                let want = back.clone();
                back = st.write(&mut back, 8192);
                assert_eq!(back, want, "step {k}");
                continue;
            }
            let g = back.groups_mut().get_mut(&b"g"[..]).unwrap();
            assert!(g.remove_pending(StreamId::new(1 + k * 97, 0)));
            let id = StreamId::new(20_001 + k, 0);
            g.pel.insert(
                id,
                Pending {
                    consumer: b"alice".to_vec(),
                    delivery_time: 5,
                    delivery_count: 1,
                },
            );
            g.consumers.get_mut(&b"alice"[..]).unwrap().pel.insert(id);
            g.last_id = id;
            if k % 10 == 0 {
                let want = back.clone();
                back = st.write(&mut back, 8192);
                assert_eq!(back, want);
            } else {
                back = st.write(&mut back, 8192);
            }
            assert!(st.written < 8000, "step {k}: {} bytes written", st.written);
        }
        // An old consumer-group record (the PEL inline, flags 0) loads whole, then pages.
        let cid = back.layout.cgroups[&b"g"[..]];
        let mut old = vec![0u8];
        put_cgroup(&mut old, b"g", &back.groups()[&b"g"[..]]);
        let mut legacy = st.clone();
        legacy.groups.retain(|g, _| *g < PEL_ID_BASE);
        legacy.groups.insert(cid, old);
        let gs: Vec<(u64, &[u8])> = legacy.groups.iter().map(|(g, v)| (*g, &v[..])).collect();
        let mut from_old = Stream::decode_grouped(&legacy.root, &gs).unwrap();
        assert_eq!(from_old, back);
        let c = from_old.take_changes();
        assert!(c.layout && c.groups.contains(&cid), "{c:?}");
        assert!(c.groups.iter().filter(|g| **g >= PEL_ID_BASE).count() > 100);
    }

    #[test]
    fn approximate_trim_removes_whole_nodes_only() {
        let mut s = Stream::default();
        for i in 1..=250 {
            s.append(StreamId::new(i, 0), f("x"), 100, 4096);
        }
        assert_eq!(s.node_count(), 3);
        assert_eq!(s.trim(Trim::MaxLen(120), true, 0), 100);
        assert_eq!(s.len(), 150);
        assert_eq!(s.trim(Trim::MaxLen(120), false, 0), 30);
        assert_eq!(s.len(), 120);
        assert_eq!(s.first_id(), StreamId::new(131, 0));
    }

    #[test]
    fn ids_parse_like_redis() {
        assert_eq!(
            parse_id(b"5", 0, true, false),
            Some((StreamId::new(5, 0), true))
        );
        assert_eq!(
            parse_id(b"5-*", 0, true, true),
            Some((StreamId::new(5, 0), false))
        );
        assert_eq!(parse_id(b"5-*", 0, true, false), None);
        assert_eq!(parse_id(b"-", 0, true, false), None);
        assert_eq!(parse_id(b"+", 0, false, false), Some((StreamId::MAX, true)));
        assert_eq!(parse_id(b"1-2-3", 0, false, false), None);
        assert_eq!(parse_id(b"-1", 0, false, false), None);
        assert_eq!(parse_id(b"abc", 0, false, false), None);
    }
}
