//! Block summaries: what recovery needs to know of a sealed block's records, without their
//! values.
//!
//! A writer that seals a data block writes, after its records (and
//! [`SUMMARY_GAP_BYTES`](super::block::SUMMARY_GAP_BYTES) of zeros), one entry per record,
//! in block order:
//!
//! ```text
//! offset size field
//!  0     1    kind
//!  1     1    value type
//!  2     2    flags
//!  4     8    mutation sequence
//! 12     8    expiry, ms since the Unix epoch (i64; 0 = none)
//! 20     4    key length
//! 24     4    value length
//! 28          key (no padding: the next entry follows at once)
//! ```
//!
//! An entry is its record's header without the CRC, then the key. Records are contiguous,
//! so a record's offset is where the previous one ends (the first starts right after the
//! block header) and its length is [`encoded_record_len`]. The block header holds the
//! summary's length and its CRC32C, seeded with the block's `block_seq` like the records'
//! (so a summary left over from an earlier use of the block never checks out).
//!
//! Recovery reads the summary instead of the block: for values of 1 KiB that is about 4%
//! of the bytes. The values' own CRCs are then checked when they are read, as on every
//! read; a summary that fails its checks makes recovery read and scan the whole block.

use super::record::{encoded_record_len, RecordKind, RecordMeta, MAX_KEY_BYTES, MAX_VALUE_BYTES};
use super::{get_u16, get_u32, get_u64, BLOCK_HEADER_BYTES};

/// Bytes of an entry before its key.
pub const SUMMARY_ENTRY_HEADER_BYTES: usize = 28;

/// Encoded length of the entry of a record with a key of `key_len` bytes.
#[inline]
pub fn summary_entry_len(key_len: usize) -> usize {
    SUMMARY_ENTRY_HEADER_BYTES + key_len
}

/// Appends the entry of a record (`meta`, `key`, a value of `value_len` bytes) to `out`.
pub fn push_summary_entry(out: &mut Vec<u8>, meta: &RecordMeta, key: &[u8], value_len: usize) {
    out.push(meta.kind as u8);
    out.push(meta.value_type);
    out.extend_from_slice(&meta.flags.to_le_bytes());
    out.extend_from_slice(&meta.mutation_seq.to_le_bytes());
    out.extend_from_slice(&(meta.expiry_ms as u64).to_le_bytes());
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(&(value_len as u32).to_le_bytes());
    out.extend_from_slice(key);
}

/// The CRC32C of `summary`, the summary of block `block_seq`.
pub fn summary_crc(block_seq: u64, summary: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&block_seq.to_le_bytes()), summary)
}

/// One decoded entry: a record of the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SummaryEntry<'a> {
    /// The record's header fields.
    pub meta: RecordMeta,
    /// Its key.
    pub key: &'a [u8],
    /// Where the record starts, from the block start.
    pub offset_bytes: usize,
    /// Its encoded length (padding included).
    pub encoded_len_bytes: usize,
}

/// Why a summary cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SummaryError {
    /// CRC32C mismatch.
    #[error("summary checksum mismatch")]
    BadChecksum,
    /// An entry runs past the summary's end.
    #[error("summary entry truncated at {0}")]
    Truncated(usize),
    /// An entry holds impossible fields.
    #[error("bad summary entry at {at}: {why}")]
    Invalid {
        /// The entry's offset in the summary.
        at: usize,
        /// What is wrong.
        why: &'static str,
    },
    /// The entries' records do not add up to the block's committed length.
    #[error("summary records cover {covered} bytes, the block has {committed}")]
    LengthMismatch {
        /// Bytes the entries' records cover.
        covered: usize,
        /// The block's committed record bytes.
        committed: usize,
    },
}

/// The entries of `summary`, the summary of block `block_seq` whose header says its CRC is
/// `crc` and its records hold `committed_len_bytes`: checked whole (CRC, every field, the
/// records' lengths adding up to the committed length) before any is returned. Never
/// panics.
pub fn decode_summary(
    summary: &[u8],
    block_seq: u64,
    crc: u32,
    committed_len_bytes: usize,
) -> Result<Vec<SummaryEntry<'_>>, SummaryError> {
    if summary_crc(block_seq, summary) != crc {
        return Err(SummaryError::BadChecksum);
    }
    let mut entries = Vec::with_capacity(summary.len() / (SUMMARY_ENTRY_HEADER_BYTES + 16));
    let (mut at, mut offset) = (0usize, BLOCK_HEADER_BYTES);
    while at < summary.len() {
        let Some(h) = summary.get(at..at + SUMMARY_ENTRY_HEADER_BYTES) else {
            return Err(SummaryError::Truncated(at));
        };
        let invalid = |why| Err(SummaryError::Invalid { at, why });
        let kind = match h[0] {
            1 => RecordKind::Value,
            2 => RecordKind::Tombstone,
            3 => RecordKind::CollectionGroup,
            5 => RecordKind::CommandEnd,
            _ => return invalid("not a data record kind"),
        };
        let expiry_ms = get_u64(h, 12) as i64;
        let (key_len, value_len) = (get_u32(h, 20), get_u32(h, 24));
        if key_len > MAX_KEY_BYTES || value_len > MAX_VALUE_BYTES {
            return invalid("length over the limit");
        }
        if expiry_ms < 0 {
            return invalid("negative expiry");
        }
        if kind == RecordKind::Tombstone && value_len != 0 {
            return invalid("tombstone with a value");
        }
        let key_at = at + SUMMARY_ENTRY_HEADER_BYTES;
        let Some(key) = summary.get(key_at..key_at + key_len as usize) else {
            return Err(SummaryError::Truncated(at));
        };
        let encoded_len_bytes = encoded_record_len(key_len as usize, value_len as usize);
        entries.push(SummaryEntry {
            meta: RecordMeta {
                kind,
                value_type: h[1],
                flags: get_u16(h, 2),
                mutation_seq: get_u64(h, 4),
                expiry_ms,
            },
            key,
            offset_bytes: offset,
            encoded_len_bytes,
        });
        offset += encoded_len_bytes;
        at = key_at + key_len as usize;
    }
    let covered = offset - BLOCK_HEADER_BYTES;
    if covered != committed_len_bytes {
        return Err(SummaryError::LengthMismatch {
            covered,
            committed: committed_len_bytes,
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::RECORD_FLAG_JOIN;

    fn meta(kind: RecordKind, seq: u64, expiry_ms: i64) -> RecordMeta {
        RecordMeta {
            kind,
            value_type: 4,
            flags: if seq.is_multiple_of(2) {
                RECORD_FLAG_JOIN
            } else {
                0
            },
            mutation_seq: seq,
            expiry_ms,
        }
    }

    /// Records as (header fields, key, value length).
    type Records = Vec<(RecordMeta, Vec<u8>, usize)>;

    /// A summary of some records, the records, and their total encoded length.
    fn sample() -> (Vec<u8>, Records, usize) {
        let recs = vec![
            (meta(RecordKind::Value, 7, 0), b"alpha".to_vec(), 1000),
            (meta(RecordKind::Tombstone, 8, 0), b"b".to_vec(), 0),
            (
                meta(RecordKind::CollectionGroup, 9, 1 << 40),
                vec![0xff; 300],
                8000,
            ),
            (meta(RecordKind::CommandEnd, 10, 0), Vec::new(), 0),
            (meta(RecordKind::Value, 11, 5), Vec::new(), 3),
        ];
        let mut out = Vec::new();
        let mut len = 0;
        for (m, k, v) in &recs {
            push_summary_entry(&mut out, m, k, *v);
            len += encoded_record_len(k.len(), *v);
        }
        (out, recs, len)
    }

    #[test]
    fn round_trip_gives_every_record_and_its_place() {
        let (s, recs, len) = sample();
        let crc = summary_crc(42, &s);
        let got = decode_summary(&s, 42, crc, len).unwrap();
        assert_eq!(got.len(), recs.len());
        let mut offset = BLOCK_HEADER_BYTES;
        for (e, (m, k, v)) in got.iter().zip(&recs) {
            assert_eq!(e.meta, *m);
            assert_eq!(e.key, &k[..]);
            assert_eq!(e.offset_bytes, offset);
            assert_eq!(e.encoded_len_bytes, encoded_record_len(k.len(), *v));
            offset += e.encoded_len_bytes;
        }
        assert_eq!(decode_summary(&[], 42, summary_crc(42, &[]), 0), Ok(vec![]));
    }

    #[test]
    fn another_block_seq_or_any_bit_flip_fails() {
        let (s, _, len) = sample();
        let crc = summary_crc(42, &s);
        assert_eq!(
            decode_summary(&s, 43, crc, len),
            Err(SummaryError::BadChecksum)
        );
        for bit in 0..s.len() * 8 {
            let mut bad = s.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(decode_summary(&bad, 42, crc, len).is_err(), "bit {bit}");
        }
    }

    #[test]
    fn structure_is_checked_even_when_the_crc_matches() {
        let (s, _, len) = sample();
        // Truncated inside an entry's key, and inside an entry's header.
        for cut in [s.len() - 1, 30, 3] {
            let t = &s[..cut];
            let crc = summary_crc(1, t);
            assert!(
                matches!(
                    decode_summary(t, 1, crc, len),
                    Err(SummaryError::Truncated(_))
                ),
                "cut {cut}"
            );
        }
        // Lengths that do not add up to the block's records.
        let crc = summary_crc(1, &s);
        assert_eq!(
            decode_summary(&s, 1, crc, len + 8),
            Err(SummaryError::LengthMismatch {
                covered: len,
                committed: len + 8
            })
        );
        // A checkpoint kind, a negative expiry, a tombstone with a value.
        for (at, byte) in [(0usize, 4u8), (19, 0x80), (28 + 5 + 24, 1)] {
            let mut bad = s.clone();
            bad[at] = byte;
            let crc = summary_crc(1, &bad);
            assert!(
                matches!(
                    decode_summary(&bad, 1, crc, len),
                    Err(SummaryError::Invalid { .. })
                ),
                "byte {at}"
            );
        }
    }
}
