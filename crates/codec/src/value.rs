//! The crate's neutral value types: what an RDB value decodes to and encodes from.

/// A key's value, independent of how Redis encoded it.
#[derive(Clone, Debug, PartialEq)]
pub enum RdbValue {
    /// A string.
    String(Vec<u8>),
    /// A list, head first.
    List(Vec<Vec<u8>>),
    /// A set's members (distinct).
    Set(Vec<Vec<u8>>),
    /// A sorted set's members and scores (distinct members, no NaN score).
    Zset(Vec<(Vec<u8>, f64)>),
    /// A hash's fields and values (distinct fields).
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    /// A hash where at least one field has a TTL (HEXPIRE, Redis 7.4+).
    HashWithTtl(Vec<HashField>),
    /// A stream.
    Stream(Box<Stream>),
}

impl RdbValue {
    /// The name TYPE prints for the value.
    pub fn type_name(&self) -> &'static str {
        match self {
            RdbValue::String(_) => "string",
            RdbValue::List(_) => "list",
            RdbValue::Set(_) => "set",
            RdbValue::Zset(_) => "zset",
            RdbValue::Hash(_) | RdbValue::HashWithTtl(_) => "hash",
            RdbValue::Stream(_) => "stream",
        }
    }
}

/// A field of a hash with field TTLs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashField {
    /// The field.
    pub field: Vec<u8>,
    /// Its value.
    pub value: Vec<u8>,
    /// When it expires (Unix time in milliseconds); None: never.
    pub expire_at_ms: Option<u64>,
}

/// A stream ID.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// Milliseconds part.
    pub ms: u64,
    /// Sequence part.
    pub seq: u64,
}

impl StreamId {
    /// The 16 bytes Redis uses as a radix tree key (both parts big-endian).
    pub fn to_be_bytes(self) -> [u8; 16] {
        let mut b = [0; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    /// The ID of 16 radix tree key bytes.
    pub fn from_be_bytes(b: [u8; 16]) -> Self {
        StreamId {
            ms: u64::from_be_bytes(b[..8].try_into().expect("8")),
            seq: u64::from_be_bytes(b[8..].try_into().expect("8")),
        }
    }
}

/// One stream entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamEntry {
    /// Its ID.
    pub id: StreamId,
    /// Its fields and values, in order (a field may repeat).
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
}

/// A stream: its entries, its metadata and its consumer groups.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stream {
    /// The live entries, in ID order.
    pub entries: Vec<StreamEntry>,
    /// The last ID ever added (XADD's floor).
    pub last_id: StreamId,
    /// The first live entry's ID (0-0 when empty).
    pub first_id: StreamId,
    /// The largest ID ever deleted (0-0 when none).
    pub max_deleted_entry_id: StreamId,
    /// How many entries were ever added.
    pub entries_added: u64,
    /// The consumer groups.
    pub groups: Vec<StreamGroup>,
}

/// A consumer group of a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamGroup {
    /// Its name.
    pub name: Vec<u8>,
    /// The last ID delivered to it.
    pub last_id: StreamId,
    /// Its logical read counter (`entries-read`); None when unknown (Redis's -1).
    pub entries_read: Option<u64>,
    /// Its pending entries list, in ID order.
    pub pending: Vec<PendingEntry>,
    /// Its consumers.
    pub consumers: Vec<StreamConsumer>,
}

/// An entry delivered to a group and not yet acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingEntry {
    /// The entry's ID.
    pub id: StreamId,
    /// When it was last delivered (Unix ms).
    pub delivery_time_ms: u64,
    /// How many times it was delivered.
    pub delivery_count: u64,
}

/// A consumer of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamConsumer {
    /// Its name.
    pub name: Vec<u8>,
    /// When it last attempted an interaction (Unix ms).
    pub seen_time_ms: u64,
    /// When it last succeeded in one (Unix ms; Redis 7.2+, else equal to `seen_time_ms`).
    pub active_time_ms: u64,
    /// The IDs of the group's pending entries it owns, in ID order.
    pub pending: Vec<StreamId>,
}
