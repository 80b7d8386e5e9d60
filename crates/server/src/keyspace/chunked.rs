//! Big strings: a string value longer than [`STRING_CHUNK_BYTES`] is stored as a root
//! record plus one chunk record per [`STRING_CHUNK_BYTES`] of the value (decision 0019).
//!
//! The chunks are group records (see [`super::groups`]): record key in database
//! `GROUP_DB_BIT | db`, key the string's key followed by the chunk index (8 bytes,
//! big-endian), value type string. Chunk `i` holds bytes `i * STRING_CHUNK_BYTES ..` of the
//! value; every chunk but the last is full. The root record is a string record under the
//! key itself whose value is a small header ([`ChunkedRoot`]: magic, total length, chunk
//! size); it carries the key's expiry. Whether a string key is chunked is known from the
//! directory of groups ([`Keyspace::is_grouped_key`]), never from the root's bytes.
//!
//! A write of a chunked value is one crash-atomic multi-record command (JOIN flags and an
//! end marker, decision 0008): the chunks that changed, then the root, then tombstones of
//! chunks that are gone. A chunk whose bytes equal the resident old chunk at the same
//! index is not written again, so APPEND writes the last chunk and the new ones, and
//! SETRANGE the chunks it touches (the handlers still build the whole value in RAM).
//!
//! Reads: the dispatcher makes the root and every chunk resident, each chunk with its own
//! device read of at most one chunk (see [`super::fetch`], which keeps a bounded number of
//! bytes in flight); GET writes the reply from the chunks without joining them first.

use super::cache::SharedValue;
use super::entry::PackedLoc;
use super::table::hash_key;
use super::{Expiry, Keyspace};
use skerry_store::format::VALUE_TYPE_STRING;
use skerry_store::StoreError;

/// Size of one chunk of a big string, and the longest string stored as one record.
///
/// 1 MiB: an eighth of a block, so a chunk record always fits a block with room to spare
/// and a block fills to within one chunk; one device read of a chunk is ~1 MiB, past the
/// size where an NVMe or a page-cache read reaches its full bandwidth, and small enough
/// that reading a value chunk by chunk keeps a few MiB of read buffers in flight.
pub const STRING_CHUNK_BYTES: usize = 1 << 20;

/// Device bytes kept in flight at once when chunks are read ([`super::fetch`]).
pub const CHUNK_READ_WINDOW_BYTES: usize = 16 << 20;

/// Magic at the start of a chunked string's root value.
const ROOT_MAGIC: &[u8; 8] = b"SKRYBIGS";

/// Encoded size of a chunked string's root value.
pub const ROOT_BYTES: usize = 24;

/// The root value of a chunked string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkedRoot {
    /// Length of the whole string.
    pub len_bytes: u64,
    /// Size of every chunk but the last.
    pub chunk_bytes: u32,
}

impl ChunkedRoot {
    /// Encodes the root value: magic, length (u64 LE), chunk size (u32 LE), 4 zero bytes.
    pub fn encode(&self) -> [u8; ROOT_BYTES] {
        let mut out = [0u8; ROOT_BYTES];
        out[..8].copy_from_slice(ROOT_MAGIC);
        out[8..16].copy_from_slice(&self.len_bytes.to_le_bytes());
        out[16..20].copy_from_slice(&self.chunk_bytes.to_le_bytes());
        out
    }

    /// Decodes a root value; None when the bytes are not one.
    pub fn decode(v: &[u8]) -> Option<ChunkedRoot> {
        if v.len() != ROOT_BYTES || &v[..8] != ROOT_MAGIC || v[20..] != [0; 4] {
            return None;
        }
        let len_bytes = u64::from_le_bytes(v[8..16].try_into().ok()?);
        let chunk_bytes = u32::from_le_bytes(v[16..20].try_into().ok()?);
        (chunk_bytes > 0).then_some(ChunkedRoot {
            len_bytes,
            chunk_bytes,
        })
    }

    /// Number of chunks.
    pub fn chunks(&self) -> u64 {
        self.len_bytes.div_ceil(u64::from(self.chunk_bytes))
    }
}

/// True when `v` may be a big string's root value (its length and magic; whether it is
/// one is the key's directory's say).
#[inline]
pub fn looks_like_root(v: &[u8]) -> bool {
    v.len() == ROOT_BYTES && v.starts_with(ROOT_MAGIC)
}

/// True when a string of `len_bytes` is stored chunked.
#[inline]
pub fn is_big(len_bytes: usize) -> bool {
    len_bytes > STRING_CHUNK_BYTES
}

/// The data blocks a write of `bytes` of values may need at most (for the write stall
/// before a big write, see `crate::space`): the chunks' records, one block partly used
/// before them, one for the root and the end marker.
pub fn blocks_for_bytes(bytes: u64, block_record_bytes: u64) -> u64 {
    blocks_for_chunks(
        bytes.div_ceil(STRING_CHUNK_BYTES as u64),
        block_record_bytes,
    )
}

/// [`blocks_for_bytes`] for a write of `chunks` chunk records (each at most a chunk of
/// value plus its header and key, counted as 4 KiB).
pub fn blocks_for_chunks(chunks: u64, block_record_bytes: u64) -> u64 {
    let per_block = (block_record_bytes / (STRING_CHUNK_BYTES as u64 + 4096)).max(1);
    chunks.div_ceil(per_block) + 2
}

impl Keyspace {
    /// The chunks of chunked string `key` (root at `root`), in order, all resident (the
    /// dispatcher made them so); None, with the error kept for the reply, when one is
    /// missing, damaged or of the wrong length (a big value is served whole or not at all).
    pub(super) fn chunk_parts(
        &mut self,
        db: usize,
        key: &[u8],
        root: PackedLoc,
    ) -> Option<Vec<SharedValue>> {
        let root_value = self.resident_value(root)?;
        let Some(r) = ChunkedRoot::decode(&root_value) else {
            self.fail("big value damaged: its root record is not a chunked string root".into());
            return None;
        };
        let ids = self.dbs[db].dirs.get(key).cloned().unwrap_or_default();
        let n = r.chunks();
        if ids.len() as u64 != n || ids.iter().enumerate().any(|(i, &g)| g != i as u64) {
            tracing::error!(
                "big value damaged: {} chunks found, {n} expected ({} bytes)",
                ids.len(),
                r.len_bytes
            );
            self.fail(format!(
                "big value damaged: {} of its {n} chunks found",
                ids.len()
            ));
            return None;
        }
        let mut parts = Vec::with_capacity(ids.len());
        let chunk = u64::from(r.chunk_bytes);
        for i in 0..n {
            let gk = super::groups::group_key(key, i);
            let Some(loc) = self.dbs[db].groups.get(hash_key(&gk), &gk).map(|e| e.loc()) else {
                self.fail(format!("big value damaged: chunk {i} has no index entry"));
                return None;
            };
            let v = self.resident_value(loc)?;
            let want = if i + 1 == n {
                r.len_bytes - chunk * (n - 1)
            } else {
                chunk
            };
            if v.len() as u64 != want {
                self.fail(format!(
                    "big value damaged: chunk {i} holds {} bytes, {want} expected",
                    v.len()
                ));
                return None;
            }
            parts.push(v);
        }
        Some(parts)
    }

    /// True when `key` holds a chunked string (its entry is a string with groups).
    pub(super) fn is_chunked(&self, db: usize, key: &[u8]) -> bool {
        self.is_grouped_key(db, key)
            && self.dbs[db]
                .table
                .get(hash_key(key), key)
                .is_some_and(|e| e.value_type() == VALUE_TYPE_STRING)
    }

    /// Stores the big string `value` ([`is_big`]) under `key` as a root and chunks, one
    /// crash-atomic unit; chunks equal to the resident old chunk at their index are kept.
    /// The root's location, None when refused (the error is kept; nothing changed).
    pub(super) fn put_chunked(
        &mut self,
        db: usize,
        key: &[u8],
        value: &[u8],
        expiry: Expiry,
        now_ms: i64,
    ) -> Option<PackedLoc> {
        if self.error.is_some() {
            return None;
        }
        let chunk = STRING_CHUNK_BYTES;
        let n = value.len().div_ceil(chunk) as u64;
        let was_chunked = self.is_chunked(db, key);
        let old_ids = self.dbs[db].dirs.get(key).cloned().unwrap_or_default();
        // Chunks to write: those whose bytes differ from the old chunk at the same index
        // (only when that chunk is resident: comparing must not cost a read).
        let mut write: Vec<u64> = Vec::with_capacity(n as usize);
        for i in 0..n {
            let new = &value[i as usize * chunk..((i as usize + 1) * chunk).min(value.len())];
            let same = was_chunked && old_ids.binary_search(&i).is_ok() && {
                let gk = super::groups::group_key(key, i);
                let loc = self.dbs[db].groups.get(hash_key(&gk), &gk).map(|e| e.loc());
                loc.and_then(|l| self.resident(l))
                    .is_some_and(|old| old[..] == *new)
            };
            if !same {
                write.push(i);
            }
        }
        let gone: Vec<u64> = old_ids.iter().copied().filter(|&g| g >= n).collect();
        // Room for every record first, so that a refusal changes nothing. Counted as the
        // dispatcher counted before it waited for room (`crate::space::big_write_blocks`:
        // by chunks of value), so that a write it waited for is never refused here.
        let store = self.log.store().clone();
        let need = blocks_for_chunks(write.len() as u64, store.max_record_bytes());
        if !store.make_room_for_blocks(need) {
            tracing::warn!(
                "a big value of {} bytes needs {need} free blocks: refused",
                value.len()
            );
            self.fail(StoreError::NoSpace.to_string());
            return None;
        }
        let root = ChunkedRoot {
            len_bytes: value.len() as u64,
            chunk_bytes: chunk as u32,
        }
        .encode();
        let loc = self.as_one_unit(true, |ks| {
            for &i in &write {
                let part = &value[i as usize * chunk..((i as usize + 1) * chunk).min(value.len())];
                if !ks.put_group(db, key, i, VALUE_TYPE_STRING, part) {
                    return None;
                }
            }
            let loc = ks.put_record_keep(db, key, VALUE_TYPE_STRING, &root, expiry, now_ms)?;
            for &g in &gone {
                if !ks.drop_group(db, key, g, false) {
                    return None;
                }
            }
            Some(loc)
        });
        // Keep room for a copy of the whole value (RENAME, COPY, MOVE run synchronously
        // and cannot wait for the data file to grow).
        if loc.is_some() {
            store.keep_free_blocks(blocks_for_chunks(n, store.max_record_bytes()));
        }
        // A grouped collection replaced by a big string: its groups below `n` were
        // overwritten by chunks (all written: nothing compared equal), the others are gone.
        loc.filter(|_| self.error.is_none())
    }

    /// The whole chunked string `key` (root at `root`) joined in one buffer.
    pub(super) fn chunked_value(
        &mut self,
        db: usize,
        key: &[u8],
        root: PackedLoc,
    ) -> Option<Vec<u8>> {
        let parts = self.chunk_parts(db, key, root)?;
        let mut v = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
        for p in &parts {
            v.extend_from_slice(p);
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_round_trips_and_rejects_other_bytes() {
        let r = ChunkedRoot {
            len_bytes: 100 << 20,
            chunk_bytes: STRING_CHUNK_BYTES as u32,
        };
        let e = r.encode();
        assert_eq!(ChunkedRoot::decode(&e), Some(r));
        assert_eq!(r.chunks(), 100);
        assert_eq!(ChunkedRoot::decode(&e[..23]), None);
        let mut bad = e;
        bad[0] ^= 1;
        assert_eq!(ChunkedRoot::decode(&bad), None);
        let mut zero_chunk = e;
        zero_chunk[16..20].fill(0);
        assert_eq!(ChunkedRoot::decode(&zero_chunk), None);
        assert!(!is_big(STRING_CHUNK_BYTES));
        assert!(is_big(STRING_CHUNK_BYTES + 1));
    }

    #[test]
    fn blocks_for_bytes_covers_the_chunks() {
        let block = (8 << 20) - 4096;
        // 7 chunks a block; 100 chunks: 15 blocks + 2.
        assert_eq!(blocks_for_bytes(100 << 20, block), 17);
        assert_eq!(blocks_for_bytes(0, block), 2);
    }
}
