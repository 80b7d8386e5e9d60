//! Records: the log entries inside data blocks.
//!
//! ```text
//! offset size field
//!  0     4    crc32c   over block_seq (u64 LE, not stored) ‖ header[4..32] ‖ key ‖ value
//!  4     1    kind     1 value, 2 tombstone, 3 collection group, 4 checkpoint, 5 command end
//!  5     1    value type (0 string)
//!  6     2    flags    bit 0: JOIN (same command as the writer's previous record)
//!  8     8    mutation sequence
//! 16     8    expiry, ms since the Unix epoch (i64; 0 = none)
//! 24     4    key length
//! 28     4    value length
//! 32          key, value, then zero padding to a multiple of 8 bytes
//! ```
//!
//! Seeding the CRC with the owning block's sequence number makes a record left
//! over from an earlier use of the block fail its check, so a scan cannot run
//! past the real tail into stale data.

use super::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};

/// Size of the fixed record header.
pub const RECORD_HEADER_BYTES: usize = 32;

/// Records start at and are padded to multiples of this.
pub const RECORD_ALIGN_BYTES: usize = 8;

/// Largest key (512 MiB, as `proto-max-bulk-len`).
pub const MAX_KEY_BYTES: u32 = 512 << 20;

/// Largest value (512 MiB, as `proto-max-bulk-len`).
pub const MAX_VALUE_BYTES: u32 = 512 << 20;

/// Value type of a plain string value.
pub const VALUE_TYPE_STRING: u8 = 0;

const OFF_CRC: usize = 0;
const OFF_KIND: usize = 4;
const OFF_VALUE_TYPE: usize = 5;
const OFF_FLAGS: usize = 6;
const OFF_SEQ: usize = 8;
const OFF_EXPIRY: usize = 16;
const OFF_KEY_LEN: usize = 24;
const OFF_VALUE_LEN: usize = 28;

/// What a record says about its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RecordKind {
    /// The key's whole value.
    Value = 1,
    /// The key was deleted (empty value).
    Tombstone = 2,
    /// One group of a large collection.
    CollectionGroup = 3,
    /// An index checkpoint entry.
    Checkpoint = 4,
    /// Ends a command that wrote several records (the later ones flagged
    /// [`RECORD_FLAG_JOIN`]); empty key and value. Recovery applies such a command's
    /// records only when this marker made it to the device.
    CommandEnd = 5,
}

/// Record flag: this record belongs to the same command as the writer's previous
/// record (see [`RecordKind::CommandEnd`]).
pub const RECORD_FLAG_JOIN: u16 = 1;

impl RecordKind {
    fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::Value,
            2 => Self::Tombstone,
            3 => Self::CollectionGroup,
            4 => Self::Checkpoint,
            5 => Self::CommandEnd,
            _ => return None,
        })
    }
}

/// The header fields of a record to encode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordMeta {
    /// Record kind.
    pub kind: RecordKind,
    /// Value type ([`VALUE_TYPE_STRING`], ...).
    pub value_type: u8,
    /// Flags (reserved: 0).
    pub flags: u16,
    /// Mutation sequence (the highest one of a key wins).
    pub mutation_seq: u64,
    /// Absolute expiry in ms since the Unix epoch, 0 for none (never negative).
    pub expiry_ms: i64,
}

/// A decoded, CRC-checked record borrowing its key and value from the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// Header fields.
    pub meta: RecordMeta,
    /// The key bytes.
    pub key: &'a [u8],
    /// The value bytes.
    pub value: &'a [u8],
    /// Encoded size including padding (the next record starts this far on).
    pub encoded_len_bytes: usize,
}

/// Why a record could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The buffer ends inside the record; `needed_bytes` (from its start) are
    /// required. At the end of written data this means a torn tail.
    #[error("incomplete record: {needed_bytes} bytes needed")]
    Incomplete {
        /// Bytes from the record start needed to decode it.
        needed_bytes: usize,
    },
    /// The bytes are not a valid record.
    #[error("corrupt record: {0}")]
    Corrupt(CorruptReason),
}

/// Why a record is corrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CorruptReason {
    /// Unknown kind byte.
    #[error("unknown kind {0}")]
    UnknownKind(u8),
    /// Key or value length over the limit.
    #[error("length over the limit")]
    LengthTooLarge,
    /// A tombstone with a value.
    #[error("tombstone with a value")]
    TombstoneWithValue,
    /// Negative expiry.
    #[error("negative expiry")]
    NegativeExpiry,
    /// CRC32C mismatch.
    #[error("checksum mismatch")]
    BadChecksum,
    /// Non-zero padding after the value.
    #[error("non-zero padding")]
    BadPadding,
}

/// Encoded size of a record with these key and value lengths (header, key,
/// value, padding to 8 bytes).
#[inline]
pub fn encoded_record_len(key_len: usize, value_len: usize) -> usize {
    (RECORD_HEADER_BYTES + key_len + value_len).next_multiple_of(RECORD_ALIGN_BYTES)
}

/// The record checksum: CRC32C of the block sequence (little-endian), then of the header
/// after the checksum field, the key and the value. Computed from the sources before they
/// are copied into a block image: over the copy (one call instead of four) it had to wait
/// for the copy's stores and made a SET at pipeline 16 9% slower.
fn record_crc(block_seq: u64, header: &[u8], key: &[u8], value: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&block_seq.to_le_bytes());
    let crc = crc32c::crc32c_append(crc, &header[OFF_CRC + 4..RECORD_HEADER_BYTES]);
    let crc = crc32c::crc32c_append(crc, key);
    crc32c::crc32c_append(crc, value)
}

/// Encodes a record of block `block_seq` at the start of `dst` and returns
/// its encoded length ([`encoded_record_len`]); padding bytes are zeroed.
///
/// # Panics
/// If `dst` is too short, a length exceeds its limit, a tombstone has a value,
/// or the expiry is negative.
pub fn encode_record(
    dst: &mut [u8],
    block_seq: u64,
    meta: &RecordMeta,
    key: &[u8],
    value: &[u8],
) -> usize {
    assert!(key.len() <= MAX_KEY_BYTES as usize, "key too long");
    assert!(value.len() <= MAX_VALUE_BYTES as usize, "value too long");
    assert!(
        meta.kind != RecordKind::Tombstone || value.is_empty(),
        "tombstone with a value"
    );
    assert!(meta.expiry_ms >= 0, "negative expiry");
    let total = encoded_record_len(key.len(), value.len());
    let out = &mut dst[..total];
    let (header, body) = out.split_at_mut(RECORD_HEADER_BYTES);
    header[OFF_KIND] = meta.kind as u8;
    header[OFF_VALUE_TYPE] = meta.value_type;
    put_u16(header, OFF_FLAGS, meta.flags);
    put_u64(header, OFF_SEQ, meta.mutation_seq);
    put_u64(header, OFF_EXPIRY, meta.expiry_ms as u64);
    put_u32(header, OFF_KEY_LEN, key.len() as u32);
    put_u32(header, OFF_VALUE_LEN, value.len() as u32);
    let crc = record_crc(block_seq, header, key, value);
    put_u32(header, OFF_CRC, crc);
    body[..key.len()].copy_from_slice(key);
    body[key.len()..key.len() + value.len()].copy_from_slice(value);
    body[key.len() + value.len()..].fill(0);
    total
}

/// Decodes the record at the start of `buf`, written in block `block_seq`.
///
/// * `Ok(Some(record))`: a complete record whose CRC matches.
/// * `Ok(None)`: end of data: the 32 header bytes are all zero (unwritten).
/// * `Err(Incomplete)`: the buffer ends inside the record.
/// * `Err(Corrupt)`: CRC mismatch or impossible fields.
///
/// Lengths are checked against their limits before they are used. Never
/// panics.
pub fn decode_record(buf: &[u8], block_seq: u64) -> Result<Option<RecordRef<'_>>, RecordError> {
    let Some(header) = buf.get(..RECORD_HEADER_BYTES) else {
        return Err(RecordError::Incomplete {
            needed_bytes: RECORD_HEADER_BYTES,
        });
    };
    if header.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let corrupt = |r| Err(RecordError::Corrupt(r));
    let Some(kind) = RecordKind::from_u8(header[OFF_KIND]) else {
        return corrupt(CorruptReason::UnknownKind(header[OFF_KIND]));
    };
    let key_len = get_u32(header, OFF_KEY_LEN);
    let value_len = get_u32(header, OFF_VALUE_LEN);
    if key_len > MAX_KEY_BYTES || value_len > MAX_VALUE_BYTES {
        return corrupt(CorruptReason::LengthTooLarge);
    }
    let (key_len, value_len) = (key_len as usize, value_len as usize);
    let total = encoded_record_len(key_len, value_len);
    if buf.len() < total {
        return Err(RecordError::Incomplete {
            needed_bytes: total,
        });
    }
    let body_end = RECORD_HEADER_BYTES + key_len + value_len;
    let key = &buf[RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + key_len];
    let value = &buf[RECORD_HEADER_BYTES + key_len..body_end];
    if record_crc(block_seq, header, key, value) != get_u32(header, OFF_CRC) {
        return corrupt(CorruptReason::BadChecksum);
    }
    if buf[body_end..total].iter().any(|&b| b != 0) {
        return corrupt(CorruptReason::BadPadding);
    }
    let expiry_ms = get_u64(header, OFF_EXPIRY) as i64;
    if expiry_ms < 0 {
        return corrupt(CorruptReason::NegativeExpiry);
    }
    if kind == RecordKind::Tombstone && value_len != 0 {
        return corrupt(CorruptReason::TombstoneWithValue);
    }
    Ok(Some(RecordRef {
        meta: RecordMeta {
            kind,
            value_type: header[OFF_VALUE_TYPE],
            flags: get_u16(header, OFF_FLAGS),
            mutation_seq: get_u64(header, OFF_SEQ),
            expiry_ms,
        },
        key,
        value,
        encoded_len_bytes: total,
    }))
}

/// Why a [`RecordIter`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordStop {
    /// The buffer ended exactly at a record boundary.
    EndOfBuffer,
    /// Unwritten space: a zeroed header, or fewer than 32 bytes left, all zero.
    Unwritten,
    /// An incomplete or corrupt record (a torn tail, or damage).
    Error(RecordError),
}

/// Iterates over the records of one block's record area (the bytes after the
/// block header), yielding `(offset_bytes, record)`. It stops at the first
/// unwritten, incomplete or corrupt record; then [`RecordIter::offset_bytes`]
/// is where the valid prefix ends (the truncation point of a torn tail) and
/// [`RecordIter::stop`] says why.
#[derive(Clone, Debug)]
pub struct RecordIter<'a> {
    buf: &'a [u8],
    block_seq: u64,
    offset_bytes: usize,
    stop: Option<RecordStop>,
}

impl<'a> RecordIter<'a> {
    /// Iterates over `buf`, the record area of block `block_seq`.
    pub fn new(buf: &'a [u8], block_seq: u64) -> Self {
        Self {
            buf,
            block_seq,
            offset_bytes: 0,
            stop: None,
        }
    }

    /// Offset just past the last record yielded (where scanning stopped).
    pub fn offset_bytes(&self) -> usize {
        self.offset_bytes
    }

    /// Why iteration stopped (`None` while it has not).
    pub fn stop(&self) -> Option<RecordStop> {
        self.stop
    }
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = (usize, RecordRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.stop.is_some() {
            return None;
        }
        debug_assert!(self.offset_bytes.is_multiple_of(RECORD_ALIGN_BYTES));
        let rest = &self.buf[self.offset_bytes..];
        if rest.is_empty() {
            self.stop = Some(RecordStop::EndOfBuffer);
            return None;
        }
        match decode_record(rest, self.block_seq) {
            Ok(Some(record)) => {
                let at = self.offset_bytes;
                self.offset_bytes += record.encoded_len_bytes;
                Some((at, record))
            }
            Ok(None) => {
                self.stop = Some(RecordStop::Unwritten);
                None
            }
            Err(RecordError::Incomplete { .. })
                if rest.len() < RECORD_HEADER_BYTES && rest.iter().all(|&b| b == 0) =>
            {
                self.stop = Some(RecordStop::Unwritten);
                None
            }
            Err(e) => {
                self.stop = Some(RecordStop::Error(e));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SEQ: u64 = 42;

    fn meta(kind: RecordKind) -> RecordMeta {
        RecordMeta {
            kind,
            value_type: VALUE_TYPE_STRING,
            flags: 0,
            mutation_seq: 123_456,
            expiry_ms: 1_800_000_000_000,
        }
    }

    fn encode(m: &RecordMeta, key: &[u8], value: &[u8]) -> Vec<u8> {
        let mut buf = vec![0xAA; encoded_record_len(key.len(), value.len())];
        let n = encode_record(&mut buf, SEQ, m, key, value);
        assert_eq!(n, buf.len());
        buf
    }

    #[test]
    fn round_trip_and_layout() {
        let m = meta(RecordKind::Value);
        let buf = encode(&m, b"key", b"hello");
        assert_eq!(buf.len(), 40); // 32 + 3 + 5 = 40
        assert_eq!(buf[4], 1);
        assert_eq!(&buf[32..35], b"key");
        let r = decode_record(&buf, SEQ).unwrap().unwrap();
        assert_eq!(r.meta, m);
        assert_eq!(r.key, b"key");
        assert_eq!(r.value, b"hello");
        assert_eq!(r.encoded_len_bytes, 40);
        // Padding is zeroed even over a dirty destination.
        let buf = encode(&m, b"k", b"v");
        assert_eq!(buf.len(), 40);
        assert!(buf[34..].iter().all(|&b| b == 0));
    }

    /// The checksum is the one data files have always carried: CRC32C of the block
    /// sequence, then of the header after the checksum field, the key and the value.
    #[test]
    fn checksum_covers_sequence_header_key_and_value_in_order() {
        let (key, value) = (b"user:1".as_slice(), vec![7u8; 1000]);
        let rec = encode(&meta(RecordKind::Value), key, &value);
        let mut crc = crc32c::crc32c(&SEQ.to_le_bytes());
        crc = crc32c::crc32c_append(crc, &rec[OFF_CRC + 4..RECORD_HEADER_BYTES]);
        crc = crc32c::crc32c_append(crc, key);
        crc = crc32c::crc32c_append(crc, &value);
        assert_eq!(get_u32(&rec, OFF_CRC), crc);
    }

    #[test]
    fn empty_key_tombstone_round_trip() {
        let m = RecordMeta {
            expiry_ms: 0,
            ..meta(RecordKind::Tombstone)
        };
        let buf = encode(&m, b"", b"");
        assert_eq!(buf.len(), RECORD_HEADER_BYTES);
        let r = decode_record(&buf, SEQ).unwrap().unwrap();
        assert_eq!((r.meta, r.key, r.value), (m, &b""[..], &b""[..]));
    }

    #[test]
    fn other_block_seq_is_corrupt() {
        let buf = encode(&meta(RecordKind::Value), b"key", b"value");
        assert_eq!(
            decode_record(&buf, SEQ + 1),
            Err(RecordError::Corrupt(CorruptReason::BadChecksum))
        );
    }

    #[test]
    fn zeroed_header_is_end_of_data() {
        assert_eq!(decode_record(&[0; 64], SEQ), Ok(None));
        assert_eq!(
            decode_record(&[0; 31], SEQ),
            Err(RecordError::Incomplete { needed_bytes: 32 })
        );
    }

    #[test]
    fn every_single_bit_flip_is_detected() {
        for (key, value) in [(&b"k"[..], &b"v"[..]), (b"somekey", b"a longer value 123")] {
            let buf = encode(&meta(RecordKind::Value), key, value);
            for bit in 0..buf.len() * 8 {
                let mut bad = buf.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                match decode_record(&bad, SEQ) {
                    Ok(Some(r)) => panic!("bit {bit}: flipped record decoded as valid: {r:?}"),
                    Ok(None) => panic!("bit {bit}: flipped record read as unwritten"),
                    Err(_) => {}
                }
            }
        }
    }

    #[test]
    fn truncation_is_never_valid() {
        let buf = encode(&meta(RecordKind::Value), b"somekey", b"some value bytes");
        for len in 0..buf.len() {
            // Plain truncation: the buffer ends early.
            match decode_record(&buf[..len], SEQ) {
                Err(RecordError::Incomplete { needed_bytes }) => assert!(needed_bytes > len),
                other => panic!("truncated at {len}: {other:?}"),
            }
            // Torn write: the rest of the record area is zero (unwritten).
            let mut torn = buf.clone();
            torn[len..].fill(0);
            match decode_record(&torn, SEQ) {
                Err(RecordError::Corrupt(_)) => {}
                // Only when the whole header was cut off.
                Ok(None) if torn[..RECORD_HEADER_BYTES].iter().all(|&b| b == 0) => {}
                // Only when the cut-off bytes were zero anyway (padding).
                Ok(Some(r)) if torn == buf => assert_eq!(r.value, b"some value bytes"),
                other => panic!("torn at {len}: {other:?}"),
            }
        }
    }

    #[test]
    fn impossible_lengths_are_corrupt_before_use() {
        let mut buf = encode(&meta(RecordKind::Value), b"k", b"v");
        put_u32(&mut buf, OFF_VALUE_LEN, u32::MAX);
        assert_eq!(
            decode_record(&buf, SEQ),
            Err(RecordError::Corrupt(CorruptReason::LengthTooLarge))
        );
        let mut buf = encode(&meta(RecordKind::Value), b"k", b"v");
        put_u32(&mut buf, OFF_KEY_LEN, MAX_KEY_BYTES + 1);
        assert_eq!(
            decode_record(&buf, SEQ),
            Err(RecordError::Corrupt(CorruptReason::LengthTooLarge))
        );
        // Lengths within the limits but past the buffer: incomplete.
        let mut buf = encode(&meta(RecordKind::Value), b"k", b"v");
        put_u32(&mut buf, OFF_VALUE_LEN, MAX_VALUE_BYTES);
        assert!(matches!(
            decode_record(&buf, SEQ),
            Err(RecordError::Incomplete { .. })
        ));
    }

    #[test]
    fn iterator_stops_at_tail_and_reports_offset() {
        let mut area = vec![0u8; 4096];
        let mut at = 0;
        let mut offsets = Vec::new();
        for i in 0..10u64 {
            let key = format!("key{i}");
            let value = vec![i as u8; i as usize * 7];
            let m = RecordMeta {
                mutation_seq: i,
                ..meta(RecordKind::Value)
            };
            offsets.push(at);
            at += encode_record(&mut area[at..], SEQ, &m, key.as_bytes(), &value);
        }
        let end = at;
        let mut it = RecordIter::new(&area, SEQ);
        let got: Vec<_> = it
            .by_ref()
            .map(|(off, r)| (off, r.meta.mutation_seq))
            .collect();
        assert_eq!(got, offsets.iter().copied().zip(0..10).collect::<Vec<_>>());
        assert_eq!(it.offset_bytes(), end);
        assert_eq!(it.stop(), Some(RecordStop::Unwritten));
        assert_eq!(it.next(), None);

        // Exactly filled buffer.
        let mut it = RecordIter::new(&area[..end], SEQ);
        assert_eq!(it.by_ref().count(), 10);
        assert_eq!(it.stop(), Some(RecordStop::EndOfBuffer));

        // Torn tail: corrupt the 8th record; the valid prefix ends there.
        let mut torn = area.clone();
        torn[offsets[7] + 33] ^= 0x10;
        let mut it = RecordIter::new(&torn, SEQ);
        assert_eq!(it.by_ref().count(), 7);
        assert_eq!(it.offset_bytes(), offsets[7]);
        assert_eq!(
            it.stop(),
            Some(RecordStop::Error(RecordError::Corrupt(
                CorruptReason::BadChecksum
            )))
        );

        // Buffer cut inside the last record.
        let mut it = RecordIter::new(&area[..end - 8], SEQ);
        assert_eq!(it.by_ref().count(), 9);
        assert_eq!(it.offset_bytes(), offsets[9]);
        assert!(matches!(
            it.stop(),
            Some(RecordStop::Error(RecordError::Incomplete { .. }))
        ));

        // A few zero bytes left at the end of the area: unwritten.
        let mut it = RecordIter::new(&area[..end + 16], SEQ);
        assert_eq!(it.by_ref().count(), 10);
        assert_eq!(it.stop(), Some(RecordStop::Unwritten));
    }

    #[test]
    fn stale_records_of_an_earlier_block_use_end_the_scan() {
        // The block held records of block_seq 7; it is reused as block_seq 8
        // and only one new record is written over the start.
        let mut area = vec![0u8; 1024];
        let m = meta(RecordKind::Value);
        let mut at = 0;
        for _ in 0..5 {
            at += encode_record(&mut area[at..], 7, &m, b"old-key", b"old value");
        }
        let new_len = encode_record(&mut area, 8, &m, b"new", b"v");
        assert!(new_len < at);
        let mut it = RecordIter::new(&area, 8);
        assert_eq!(it.by_ref().count(), 1);
        assert_eq!(it.offset_bytes(), new_len);
        assert!(matches!(
            it.stop(),
            Some(RecordStop::Error(RecordError::Corrupt(_)))
        ));
    }

    fn arb_meta() -> impl Strategy<Value = RecordMeta> {
        (
            prop_oneof![
                Just(RecordKind::Value),
                Just(RecordKind::Tombstone),
                Just(RecordKind::CollectionGroup),
                Just(RecordKind::Checkpoint)
            ],
            any::<u8>(),
            any::<u16>(),
            any::<u64>(),
            0..=i64::MAX,
        )
            .prop_map(
                |(kind, value_type, flags, mutation_seq, expiry_ms)| RecordMeta {
                    kind,
                    value_type,
                    flags,
                    mutation_seq,
                    expiry_ms,
                },
            )
    }

    proptest! {
        #[test]
        fn prop_round_trip(
            records in proptest::collection::vec(
                (arb_meta(), proptest::collection::vec(any::<u8>(), 0..64),
                 proptest::collection::vec(any::<u8>(), 0..300)),
                1..8),
            block_seq in any::<u64>(),
        ) {
            let mut area = Vec::new();
            let mut expected = Vec::new();
            for (m, key, mut value) in records {
                if m.kind == RecordKind::Tombstone {
                    value.clear();
                }
                let at = area.len();
                area.resize(at + encoded_record_len(key.len(), value.len()), 0);
                let n = encode_record(&mut area[at..], block_seq, &m, &key, &value);
                prop_assert_eq!(n % RECORD_ALIGN_BYTES, 0);
                expected.push((at, m, key, value));
            }
            let total = area.len();
            area.extend_from_slice(&[0; 40]);
            let mut it = RecordIter::new(&area, block_seq);
            for (at, m, key, value) in &expected {
                let (off, r) = it.next().expect("record");
                prop_assert_eq!(off, *at);
                prop_assert_eq!(r.meta, *m);
                prop_assert_eq!(r.key, &key[..]);
                prop_assert_eq!(r.value, &value[..]);
            }
            prop_assert_eq!(it.next(), None);
            prop_assert_eq!(it.offset_bytes(), total);
            prop_assert_eq!(it.stop(), Some(RecordStop::Unwritten));
        }
    }
}
