//! Redis's RDB **value** encodings, both ways, over neutral data types ([`RdbValue`]), for
//! DUMP / RESTORE payloads and RDB files ([`FileWriter`], [`FileReader`]), and later replication.
//!
//! Decoding reads every encoding Redis 5 to 8.0 writes for strings, lists, sets, sorted
//! sets, hashes (also with field TTLs) and streams ([`decode_value`]). Encoding writes an
//! encoding Redis 7.0+ reads, and says which RDB version that takes ([`encode_value`]):
//! Redis 7.0's (10) for everything but hashes with field TTLs (12) and streams whose
//! consumers' active time differs from their seen time (11).
//!
//! A DUMP payload is the type byte and the value, then the RDB version (2 bytes,
//! little-endian) and the CRC64 of everything before it (8 bytes, little-endian):
//! [`dump`], [`restore`], and [`seal_payload`] / [`open_payload`] for other payloads
//! (FUNCTION DUMP).
//!
//! No I/O; every length in the input is checked against the bytes present, so damaged
//! input is an error, never a panic or an unbounded allocation.

#![deny(missing_docs)]

mod crc64;
mod decode;
mod encode;
mod file;
mod lzf;
mod packed;
mod rdb;
mod stream;
mod value;

pub use crc64::crc64;
pub use encode::{Encoded, RDB_VERSION_7_0, RDB_VERSION_7_2, RDB_VERSION_7_4};
pub use file::{opcode, Entry, FileError, FileReader, FileWriter, Item, KeyMeta};
pub use lzf::{compress as lzf_compress, decompress as lzf_decompress};
pub use rdb::{write_len, write_string, Reader};
pub use value::{
    HashField, PendingEntry, RdbValue, Stream, StreamConsumer, StreamEntry, StreamGroup, StreamId,
};

/// The newest RDB version read (Redis 8.0's).
pub const RDB_VERSION: u16 = 12;

/// RDB value type bytes (`RDB_TYPE_*` of Redis's `rdb.h`).
pub mod rdb_type {
    /// A string.
    pub const STRING: u8 = 0;
    /// A list as a linked list of strings (before Redis 3.2).
    pub const LIST: u8 = 1;
    /// A set as a hashtable.
    pub const SET: u8 = 2;
    /// A sorted set with scores as text (Redis before 4.0).
    pub const ZSET: u8 = 3;
    /// A hash as a hashtable.
    pub const HASH: u8 = 4;
    /// A sorted set with binary scores.
    pub const ZSET_2: u8 = 5;
    /// A module value in the pre-release 4.0 format.
    pub const MODULE_PRE_GA: u8 = 6;
    /// A module value.
    pub const MODULE_2: u8 = 7;
    /// A hash as a zipmap (before Redis 2.6).
    pub const HASH_ZIPMAP: u8 = 9;
    /// A list as a ziplist (before Redis 3.2).
    pub const LIST_ZIPLIST: u8 = 10;
    /// A set as an intset.
    pub const SET_INTSET: u8 = 11;
    /// A sorted set as a ziplist (before Redis 7.0).
    pub const ZSET_ZIPLIST: u8 = 12;
    /// A hash as a ziplist (before Redis 7.0).
    pub const HASH_ZIPLIST: u8 = 13;
    /// A list as a quicklist of ziplists (Redis 3.2 to 6.2).
    pub const LIST_QUICKLIST: u8 = 14;
    /// A stream (Redis 5.0 to 6.2).
    pub const STREAM_LISTPACKS: u8 = 15;
    /// A hash as a listpack (Redis 7.0+).
    pub const HASH_LISTPACK: u8 = 16;
    /// A sorted set as a listpack (Redis 7.0+).
    pub const ZSET_LISTPACK: u8 = 17;
    /// A list as a quicklist of listpacks and plain nodes (Redis 7.0+).
    pub const LIST_QUICKLIST_2: u8 = 18;
    /// A stream with its first ID, deletion high mark and read counters (Redis 7.0).
    pub const STREAM_LISTPACKS_2: u8 = 19;
    /// A set as a listpack (Redis 7.2+).
    pub const SET_LISTPACK: u8 = 20;
    /// A stream with consumers' active times (Redis 7.2+).
    pub const STREAM_LISTPACKS_3: u8 = 21;
    /// A hash with field TTLs, absolute (Redis 7.4 release candidates).
    pub const HASH_METADATA_PRE_GA: u8 = 22;
    /// A listpack hash with field TTLs (Redis 7.4 release candidates).
    pub const HASH_LISTPACK_EX_PRE_GA: u8 = 23;
    /// A hash with field TTLs relative to the smallest (Redis 7.4+).
    pub const HASH_METADATA: u8 = 24;
    /// A listpack hash with field TTLs (Redis 7.4+).
    pub const HASH_LISTPACK_EX: u8 = 25;
}

/// Why input does not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError(&'static str);

impl DecodeError {
    pub(crate) const TRUNCATED: DecodeError = DecodeError("truncated");

    pub(crate) const fn new(what: &'static str) -> Self {
        DecodeError(what)
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for DecodeError {}

/// Why a DUMP payload is refused, as RESTORE tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadError {
    /// Too short, a newer RDB version, or a wrong checksum ("DUMP payload version or
    /// checksum are wrong").
    VersionOrChecksum,
    /// The value does not decode ("Bad data format").
    BadData(DecodeError),
}

impl std::fmt::Display for PayloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PayloadError::VersionOrChecksum => {
                f.write_str("DUMP payload version or checksum are wrong")
            }
            PayloadError::BadData(e) => write!(f, "Bad data format ({e})"),
        }
    }
}

impl std::error::Error for PayloadError {}

/// Decodes a value of RDB type `rdb_type` from `r` (positioned after the type byte).
pub fn decode_value(rdb_type: u8, r: &mut Reader<'_>) -> Result<RdbValue, DecodeError> {
    decode::decode(rdb_type, r)
}

/// Encodes `v` in an encoding Redis 7.0+ reads.
pub fn encode_value(v: &RdbValue) -> Encoded {
    encode::encode(v)
}

/// Appends the payload footer to `body`: `version` and the CRC64 of both.
pub fn seal_payload(mut body: Vec<u8>, version: u16) -> Vec<u8> {
    body.extend_from_slice(&version.to_le_bytes());
    let crc = crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// The body and RDB version of a payload whose version is at most `max_version` and whose
/// checksum is right (Redis's `verifyDumpPayload`).
pub fn open_payload(payload: &[u8], max_version: u16) -> Result<(&[u8], u16), PayloadError> {
    if payload.len() < 10 {
        return Err(PayloadError::VersionOrChecksum);
    }
    let (body, footer) = payload.split_at(payload.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > max_version {
        return Err(PayloadError::VersionOrChecksum);
    }
    if crc64(&payload[..payload.len() - 8]).to_le_bytes() != footer[2..] {
        return Err(PayloadError::VersionOrChecksum);
    }
    Ok((body, version))
}

/// The length a DUMP payload's value takes once restored, when it is a string (read from
/// its header: no checksum check, nothing decompressed); None for other types or a payload
/// too short to say. Lets a server make room for a big string before it restores it.
pub fn string_payload_len(payload: &[u8]) -> Option<u64> {
    let body = payload.get(..payload.len().checked_sub(10)?)?;
    let (&kind, rest) = body.split_first()?;
    if kind != rdb_type::STRING {
        return None;
    }
    Reader::new(rest).string_len().ok()
}

/// The encoding of a hash in Redis's `listpackex` form (see [`dump_hash_listpack_ex`]).
pub fn encode_hash_listpack_ex(fields: &[HashField]) -> Encoded {
    encode::encode_hash_listpack_ex(fields)
}

/// The DUMP payload of an encoded value.
pub fn seal(e: Encoded) -> Vec<u8> {
    seal_encoded(e)
}

/// The DUMP payload of `v`.
pub fn dump(v: &RdbValue) -> Vec<u8> {
    seal_encoded(encode_value(v))
}

/// The DUMP payload of a hash in Redis's `listpackex` encoding (a small hash with field
/// expiry on; see [`RdbValue::HashWithTtl`] for the fields): what Redis 7.4+ DUMPs for
/// such a hash, restored there as `listpackex` again.
pub fn dump_hash_listpack_ex(fields: &[HashField]) -> Vec<u8> {
    seal_encoded(encode::encode_hash_listpack_ex(fields))
}

fn seal_encoded(e: Encoded) -> Vec<u8> {
    let mut body = Vec::with_capacity(e.bytes.len() + 11);
    body.push(e.rdb_type);
    body.extend_from_slice(&e.bytes);
    seal_payload(body, e.rdb_version)
}

/// The value of a DUMP payload, read as Redis's RESTORE reads it: from the start of the
/// whole payload, footer included (a value cut short may take footer bytes, as in Redis),
/// and ignoring whatever follows the value.
pub fn restore(payload: &[u8]) -> Result<RdbValue, PayloadError> {
    open_payload(payload, RDB_VERSION)?;
    let mut r = Reader::new(payload);
    let ty = r.byte().map_err(PayloadError::BadData)?;
    decode_value(ty, &mut r).map_err(PayloadError::BadData)
}

#[cfg(test)]
mod tests;
