//! Block headers: the first 4 KiB of every block.

use super::superblock::Superblock;
use super::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};

/// Magic bytes at the start of a block header.
pub const BLOCK_MAGIC: [u8; 8] = *b"SKERRYBK";

/// Bytes reserved for the header at the start of each block; records start
/// right after it.
pub const BLOCK_HEADER_BYTES: usize = 4096;

/// Encoded length of a block header (format version 2; the rest of the 4 KiB is zero).
const BLOCK_HEADER_V2_BYTES: usize = 80;

/// Zero bytes between a block's records and its summary: a scan of the records (of a block
/// whose sealed header did not reach the device) stops there as at unwritten space.
pub const SUMMARY_GAP_BYTES: usize = super::record::RECORD_HEADER_BYTES;

const OFF_MAGIC: usize = 0;
const OFF_LEN: usize = 8;
const OFF_KIND: usize = 10;
const OFF_STATE: usize = 11;
const OFF_OWNER: usize = 12;
const OFF_PAD: usize = 14;
const OFF_BLOCK_INDEX: usize = 16;
const OFF_COMMITTED: usize = 20;
const OFF_BLOCK_SEQ: usize = 24;
const OFF_FIRST_SEQ: usize = 32;
const OFF_LAST_SEQ: usize = 40;
const OFF_DEVICE_ID: usize = 48;
const OFF_FLAGS: usize = 64;
const OFF_SUMMARY_LEN: usize = 68;
const OFF_SUMMARY_CRC: usize = 72;
const OFF_CRC: usize = 76;

/// What a block holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BlockKind {
    /// Log records written by one worker.
    Data = 1,
    /// Index checkpoint records.
    Checkpoint = 2,
}

/// Whether a block is still being appended to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BlockState {
    /// Being appended to: the header's length and sequence range are those at
    /// open time (0); recovery scans the records to find the tail.
    Open = 1,
    /// Complete: the header's length and sequence range are final.
    Sealed = 2,
}

/// The decoded header of one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    /// What the block holds.
    pub kind: BlockKind,
    /// Open or sealed.
    pub state: BlockState,
    /// Worker that wrote the block.
    pub owner_worker: u16,
    /// Position of the block on its device.
    pub block_index: u32,
    /// Bytes of records after the header (0 while open).
    pub committed_len_bytes: u32,
    /// Monotonic sequence of block allocations across the store; also seeds
    /// the CRC of every record in the block.
    pub block_seq: u64,
    /// Lowest mutation sequence in the block (0 when unknown / empty).
    pub first_mutation_seq: u64,
    /// Highest mutation sequence in the block (0 when unknown / empty).
    pub last_mutation_seq: u64,
    /// The device id from the superblock when the block was written.
    pub device_id: [u8; 16],
    /// Bytes of the block's summary (its records' headers and keys, see
    /// [`crate::format::summary`]), which follows the records at
    /// [`BlockHeader::summary_offset_bytes`]; 0 when it has none (always while open).
    pub summary_len_bytes: u32,
    /// CRC32C of the summary, seeded with `block_seq` (0 without a summary).
    pub summary_crc: u32,
}

/// Why a block header is not usable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BlockHeaderError {
    /// Fewer than the header's bytes were given.
    #[error("block header truncated")]
    Truncated,
    /// Wrong magic bytes (and not all zero).
    #[error("bad block magic")]
    BadMagic,
    /// Recorded header length is not the supported one.
    #[error("bad block header length {0}")]
    BadLength(u16),
    /// CRC32C mismatch.
    #[error("block header checksum mismatch")]
    BadChecksum,
    /// Intact header with impossible field values.
    #[error("bad block header: {0}")]
    Invalid(&'static str),
    /// Intact header of another device (e.g. left from an earlier format).
    #[error("block header belongs to another device or format")]
    ForeignDevice,
    /// Intact header at the wrong position.
    #[error("block header index {found} at block {expected}")]
    WrongIndex {
        /// Index recorded in the header.
        found: u32,
        /// Index of the block it was read from.
        expected: u64,
    },
}

impl BlockHeader {
    /// Where the block's summary starts, from the block start: [`SUMMARY_GAP_BYTES`] after
    /// the end of its records.
    pub fn summary_offset_bytes(&self) -> usize {
        BLOCK_HEADER_BYTES + self.committed_len_bytes as usize + SUMMARY_GAP_BYTES
    }

    /// Encodes into the first bytes of `out` (at least 80 bytes; write the
    /// header's whole 4 KiB with the rest zero).
    pub fn encode(&self, out: &mut [u8]) {
        let out = &mut out[..BLOCK_HEADER_V2_BYTES];
        out.fill(0);
        out[OFF_MAGIC..OFF_MAGIC + 8].copy_from_slice(&BLOCK_MAGIC);
        put_u16(out, OFF_LEN, BLOCK_HEADER_V2_BYTES as u16);
        out[OFF_KIND] = self.kind as u8;
        out[OFF_STATE] = self.state as u8;
        put_u16(out, OFF_OWNER, self.owner_worker);
        put_u32(out, OFF_BLOCK_INDEX, self.block_index);
        put_u32(out, OFF_COMMITTED, self.committed_len_bytes);
        put_u64(out, OFF_BLOCK_SEQ, self.block_seq);
        put_u64(out, OFF_FIRST_SEQ, self.first_mutation_seq);
        put_u64(out, OFF_LAST_SEQ, self.last_mutation_seq);
        out[OFF_DEVICE_ID..OFF_DEVICE_ID + 16].copy_from_slice(&self.device_id);
        put_u32(out, OFF_SUMMARY_LEN, self.summary_len_bytes);
        put_u32(out, OFF_SUMMARY_CRC, self.summary_crc);
        let crc = crc32c::crc32c(&out[..OFF_CRC]);
        put_u32(out, OFF_CRC, crc);
    }

    /// Decodes a header from the start of `buf`: `Ok(None)` for a never-written
    /// block (all 80 header bytes zero), `Ok(Some(_))` for an intact header.
    /// Never panics.
    pub fn decode(buf: &[u8]) -> Result<Option<Self>, BlockHeaderError> {
        let Some(h) = buf.get(..BLOCK_HEADER_V2_BYTES) else {
            return Err(BlockHeaderError::Truncated);
        };
        if h.iter().all(|&b| b == 0) {
            return Ok(None);
        }
        if h[OFF_MAGIC..OFF_MAGIC + 8] != BLOCK_MAGIC {
            return Err(BlockHeaderError::BadMagic);
        }
        let len = get_u16(h, OFF_LEN);
        if len as usize != BLOCK_HEADER_V2_BYTES {
            return Err(BlockHeaderError::BadLength(len));
        }
        if crc32c::crc32c(&h[..OFF_CRC]) != get_u32(h, OFF_CRC) {
            return Err(BlockHeaderError::BadChecksum);
        }
        let kind = match h[OFF_KIND] {
            1 => BlockKind::Data,
            2 => BlockKind::Checkpoint,
            _ => return Err(BlockHeaderError::Invalid("unknown block kind")),
        };
        let state = match h[OFF_STATE] {
            1 => BlockState::Open,
            2 => BlockState::Sealed,
            _ => return Err(BlockHeaderError::Invalid("unknown block state")),
        };
        if get_u16(h, OFF_PAD) != 0 || get_u32(h, OFF_FLAGS) != 0 {
            return Err(BlockHeaderError::Invalid("reserved bytes are not zero"));
        }
        let header = Self {
            kind,
            state,
            owner_worker: get_u16(h, OFF_OWNER),
            block_index: get_u32(h, OFF_BLOCK_INDEX),
            committed_len_bytes: get_u32(h, OFF_COMMITTED),
            block_seq: get_u64(h, OFF_BLOCK_SEQ),
            first_mutation_seq: get_u64(h, OFF_FIRST_SEQ),
            last_mutation_seq: get_u64(h, OFF_LAST_SEQ),
            device_id: h[OFF_DEVICE_ID..OFF_DEVICE_ID + 16].try_into().expect("16"),
            summary_len_bytes: get_u32(h, OFF_SUMMARY_LEN),
            summary_crc: get_u32(h, OFF_SUMMARY_CRC),
        };
        if header.summary_len_bytes == 0 && header.summary_crc != 0 {
            return Err(BlockHeaderError::Invalid(
                "summary checksum without a summary",
            ));
        }
        if header.summary_len_bytes != 0
            && (header.state != BlockState::Sealed || header.kind != BlockKind::Data)
        {
            return Err(BlockHeaderError::Invalid(
                "summary in a block that is not a sealed data block",
            ));
        }
        if header.first_mutation_seq > header.last_mutation_seq {
            return Err(BlockHeaderError::Invalid("first sequence above last"));
        }
        if header.state == BlockState::Open
            && (header.committed_len_bytes != 0 || header.last_mutation_seq != 0)
        {
            return Err(BlockHeaderError::Invalid("open block with a final length"));
        }
        if !header.committed_len_bytes.is_multiple_of(8) {
            return Err(BlockHeaderError::Invalid(
                "committed length not 8-byte aligned",
            ));
        }
        Ok(Some(header))
    }

    /// Checks a decoded header against the device's superblock and the block
    /// index it was read from.
    pub fn check_placement(
        &self,
        sb: &Superblock,
        block_index: u64,
    ) -> Result<(), BlockHeaderError> {
        if self.device_id != sb.device_id {
            return Err(BlockHeaderError::ForeignDevice);
        }
        if u64::from(self.block_index) != block_index {
            return Err(BlockHeaderError::WrongIndex {
                found: self.block_index,
                expected: block_index,
            });
        }
        if u64::from(self.committed_len_bytes) > sb.block_size_bytes - BLOCK_HEADER_BYTES as u64 {
            return Err(BlockHeaderError::Invalid(
                "committed length exceeds the block",
            ));
        }
        if self.summary_len_bytes != 0
            && (self.summary_offset_bytes() + self.summary_len_bytes as usize) as u64
                > sb.block_size_bytes
        {
            return Err(BlockHeaderError::Invalid("summary exceeds the block"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::RESERVED_BYTES;

    fn sample() -> BlockHeader {
        BlockHeader {
            kind: BlockKind::Data,
            state: BlockState::Sealed,
            owner_worker: 3,
            block_index: 2,
            committed_len_bytes: 4 << 20,
            block_seq: 77,
            first_mutation_seq: 1000,
            last_mutation_seq: 2000,
            device_id: [5; 16],
            summary_len_bytes: 0,
            summary_crc: 0,
        }
    }

    fn superblock() -> Superblock {
        Superblock {
            store_id: [1; 16],
            device_id: [5; 16],
            device_index: 0,
            device_count: 1,
            block_size_bytes: 8 << 20,
            block_count: 4,
            first_block_offset_bytes: RESERVED_BYTES,
            device_size_bytes: RESERVED_BYTES + 4 * (8 << 20),
            created_unix_ms: 0,
            generation: 1,
        }
    }

    fn encoded(h: &BlockHeader) -> Vec<u8> {
        let mut buf = vec![0u8; BLOCK_HEADER_BYTES];
        h.encode(&mut buf);
        buf
    }

    #[test]
    fn round_trip() {
        let h = sample();
        assert_eq!(BlockHeader::decode(&encoded(&h)), Ok(Some(h)));
        let summarised = BlockHeader {
            summary_len_bytes: 40_000,
            summary_crc: 0xdead_beef,
            ..h
        };
        assert_eq!(
            BlockHeader::decode(&encoded(&summarised)),
            Ok(Some(summarised))
        );
        assert_eq!(
            summarised.summary_offset_bytes(),
            BLOCK_HEADER_BYTES + (4 << 20) + SUMMARY_GAP_BYTES
        );
        let open = BlockHeader {
            state: BlockState::Open,
            committed_len_bytes: 0,
            first_mutation_seq: 0,
            last_mutation_seq: 0,
            kind: BlockKind::Checkpoint,
            ..h
        };
        assert_eq!(BlockHeader::decode(&encoded(&open)), Ok(Some(open)));
    }

    #[test]
    fn zeroed_is_unwritten() {
        assert_eq!(BlockHeader::decode(&[0; BLOCK_HEADER_BYTES]), Ok(None));
        assert_eq!(
            BlockHeader::decode(&[0; 10]),
            Err(BlockHeaderError::Truncated)
        );
    }

    #[test]
    fn every_bit_flip_is_detected() {
        let buf = encoded(&sample());
        for bit in 0..BLOCK_HEADER_V2_BYTES * 8 {
            let mut bad = buf.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(
                BlockHeader::decode(&bad).is_err(),
                "bit {bit} flip not detected"
            );
        }
    }

    #[test]
    fn truncation_is_rejected() {
        let buf = encoded(&sample());
        for len in 0..BLOCK_HEADER_V2_BYTES {
            assert_eq!(
                BlockHeader::decode(&buf[..len]),
                Err(BlockHeaderError::Truncated)
            );
        }
    }

    #[test]
    fn invalid_fields_are_rejected() {
        let bad = [
            BlockHeader {
                first_mutation_seq: 3000,
                ..sample()
            },
            BlockHeader {
                state: BlockState::Open,
                ..sample()
            },
            BlockHeader {
                committed_len_bytes: 13,
                ..sample()
            },
            BlockHeader {
                summary_crc: 9,
                ..sample()
            },
            BlockHeader {
                state: BlockState::Open,
                committed_len_bytes: 0,
                first_mutation_seq: 0,
                last_mutation_seq: 0,
                summary_len_bytes: 64,
                ..sample()
            },
            BlockHeader {
                kind: BlockKind::Checkpoint,
                summary_len_bytes: 64,
                ..sample()
            },
        ];
        for h in bad {
            assert!(
                matches!(
                    BlockHeader::decode(&encoded(&h)),
                    Err(BlockHeaderError::Invalid(_))
                ),
                "{h:?}"
            );
        }
    }

    #[test]
    fn placement_is_checked() {
        let sb = superblock();
        let h = sample();
        assert_eq!(h.check_placement(&sb, 2), Ok(()));
        assert_eq!(
            h.check_placement(&sb, 1),
            Err(BlockHeaderError::WrongIndex {
                found: 2,
                expected: 1
            })
        );
        let foreign = BlockHeader {
            device_id: [6; 16],
            ..h
        };
        assert_eq!(
            foreign.check_placement(&sb, 2),
            Err(BlockHeaderError::ForeignDevice)
        );
        let too_long = BlockHeader {
            committed_len_bytes: 8 << 20,
            ..h
        };
        assert!(too_long.check_placement(&sb, 2).is_err());
        // The summary must end inside the block: 4 MiB of records after the 4 KiB header
        // leave 4 MiB - 4 KiB, less the gap, from the summary's start.
        let room = (4 << 20) - (BLOCK_HEADER_BYTES + SUMMARY_GAP_BYTES) as u32;
        let fits = BlockHeader {
            committed_len_bytes: 4 << 20,
            summary_len_bytes: room,
            summary_crc: 1,
            ..h
        };
        assert_eq!(fits.check_placement(&sb, 2), Ok(()));
        let over = BlockHeader {
            summary_len_bytes: room + 8,
            ..fits
        };
        assert!(over.check_placement(&sb, 2).is_err());
    }
}
