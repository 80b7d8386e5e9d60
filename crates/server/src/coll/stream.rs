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
//! Stored as one compact record (flags byte, then the fields below); see
//! `docs/storage-format.md`. The in-memory form maps one to one onto the neutral form used
//! for DUMP/RESTORE: entries (id, fields), groups (name, last-id, entries-read, PEL (id,
//! consumer, delivery time, count)), consumers (name, seen-time, active-time).

use std::collections::{BTreeMap, BTreeSet};

use super::codec::{put_bytes, put_varint, Reader};
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
    /// The consumer groups, by name.
    pub groups: BTreeMap<Vec<u8>, Group>,
    /// Redis's listpack nodes, by master ID.
    nodes: BTreeMap<StreamId, Node>,
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
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the stream has no entries (the key still exists).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
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
        self.nodes.len()
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
        }
        self.entries.insert(id, fields);
        self.last_id = id;
        self.entries_added += 1;
    }

    /// Deletes entry `id` (XDEL); true when it existed. Updates `max_deleted_id`.
    pub fn delete(&mut self, id: StreamId) -> bool {
        if self.entries.remove(&id).is_none() {
            return false;
        }
        if let Some((&master, node)) = self.nodes.range_mut(..=id).next_back() {
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
        let mut deleted: u64 = 0;
        loop {
            if let Trim::MaxLen(max) = how {
                if self.entries.len() as u64 <= max {
                    break;
                }
            }
            let Some((&master, node)) = self.nodes.iter().next() else {
                break;
            };
            let live = node.live as u64;
            if limit > 0 && deleted + live > limit {
                break;
            }
            let remove_node = match how {
                Trim::MaxLen(max) => self.entries.len() as u64 - live >= max,
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
                    self.entries.remove(&id);
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
                    Trim::MaxLen(max) => self.entries.len() as u64 <= max,
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
                self.entries.remove(&id);
                n += 1;
            }
            if let Some(node) = self.nodes.get_mut(&master) {
                node.live -= n;
            }
            deleted += n as u64;
            break;
        }
        deleted
    }

    /// True when a deleted entry may lie between `start` and `end` (Redis's
    /// `streamRangeHasTombstones`).
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.entries.is_empty() || self.max_deleted_id.is_zero() {
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
        if self.entries.is_empty() && id <= self.last_id {
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
            let len = self.entries.len() as i64;
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
        if self.entries_added == 0 || self.entries.is_empty() {
            return Some(0);
        }
        let first = self.first_id();
        if g.last_id < first && self.max_deleted_id < first {
            return Some(self.entries.len() as i64);
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
        let mut n = 128 + self.nodes.len() * 96;
        for f in self.entries.values() {
            n += 64 + f.iter().map(|x| x.len() + 24).sum::<usize>();
        }
        for (name, g) in &self.groups {
            n += 128 + name.len() + g.pel.len() * 96;
            for (c, _) in g.consumers.iter() {
                n += 96 + c.len();
            }
        }
        n
    }

    /// Appends the record value.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(0);
        let id = |out: &mut Vec<u8>, i: StreamId| {
            put_varint(out, i.ms);
            put_varint(out, i.seq);
        };
        id(out, self.last_id);
        id(out, self.max_deleted_id);
        put_varint(out, self.entries_added);
        put_varint(out, self.nodes.len() as u64);
        for (m, n) in &self.nodes {
            id(out, *m);
            id(out, n.last);
            put_varint(out, n.live as u64);
            put_varint(out, n.total as u64);
            put_varint(out, n.bytes);
            put_varint(out, n.master_fields.len() as u64);
            for f in &n.master_fields {
                put_bytes(out, f);
            }
        }
        put_varint(out, self.entries.len() as u64);
        for (i, f) in &self.entries {
            id(out, *i);
            put_varint(out, f.len() as u64);
            for x in f {
                put_bytes(out, x);
            }
        }
        put_varint(out, self.groups.len() as u64);
        for (name, g) in &self.groups {
            put_bytes(out, name);
            id(out, g.last_id);
            put_varint(out, (g.entries_read + 1) as u64);
            put_varint(out, g.consumers.len() as u64);
            for (cname, c) in &g.consumers {
                put_bytes(out, cname);
                put_varint(out, zigzag(c.seen_time));
                put_varint(out, zigzag(c.active_time));
            }
            put_varint(out, g.pel.len() as u64);
            for (i, p) in &g.pel {
                id(out, *i);
                put_bytes(out, &p.consumer);
                put_varint(out, zigzag(p.delivery_time));
                put_varint(out, p.delivery_count);
            }
        }
    }

    /// Decodes a record value.
    pub fn decode(bytes: &[u8]) -> Result<Stream, DecodeError> {
        let mut r = Reader::new(bytes);
        let flags = r.byte()?;
        if flags & super::FLAG_GROUPED != 0 {
            return Err(DecodeError("grouped streams are not supported".into()));
        }
        let id = |r: &mut Reader| -> Result<StreamId, DecodeError> {
            Ok(StreamId::new(r.varint()?, r.varint()?))
        };
        let mut s = Stream {
            last_id: id(&mut r)?,
            max_deleted_id: id(&mut r)?,
            entries_added: r.varint()?,
            ..Default::default()
        };
        let n = r.count(7)?;
        for _ in 0..n {
            let m = id(&mut r)?;
            let last = id(&mut r)?;
            let live = r.varint()? as u32;
            let total = r.varint()? as u32;
            let bytes = r.varint()?;
            let nf = r.count(1)?;
            let mut master_fields = Vec::with_capacity(nf);
            for _ in 0..nf {
                master_fields.push(r.bytes()?.to_vec());
            }
            s.nodes.insert(
                m,
                Node {
                    last,
                    live,
                    total,
                    bytes,
                    master_fields,
                },
            );
        }
        let n = r.count(3)?;
        for _ in 0..n {
            let i = id(&mut r)?;
            let nf = r.count(1)?;
            let mut f = Vec::with_capacity(nf);
            for _ in 0..nf {
                f.push(r.bytes()?.to_vec());
            }
            s.entries.insert(i, f);
        }
        let ng = r.count(4)?;
        for _ in 0..ng {
            let name = r.bytes()?.to_vec();
            let mut g = Group {
                last_id: id(&mut r)?,
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
            let np = r.count(5)?;
            for _ in 0..np {
                let i = id(&mut r)?;
                let consumer = r.bytes()?.to_vec();
                let delivery_time = unzigzag(r.varint()?);
                let delivery_count = r.varint()?;
                match g.consumers.get_mut(&consumer) {
                    Some(c) => {
                        c.pel.insert(i);
                    }
                    None => return Err(DecodeError("pending entry of no consumer".into())),
                }
                g.pel.insert(
                    i,
                    Pending {
                        consumer,
                        delivery_time,
                        delivery_count,
                    },
                );
            }
            s.groups.insert(name, g);
        }
        r.finish()?;
        Ok(s)
    }
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
        s.groups.insert(b"g".to_vec(), g);
        let mut out = Vec::new();
        s.encode(&mut out);
        assert_eq!(Stream::decode(&out).unwrap(), s);
        for cut in 0..out.len() {
            assert!(Stream::decode(&out[..cut]).is_err());
        }
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
