//! The on-device format (see `docs/storage-format.md`): superblock, block
//! headers and records. Everything is little-endian and protected by CRC32C
//! (Castagnoli).
//!
//! Device layout:
//!
//! ```text
//! [0, 4 KiB)        superblock copy A
//! [4 KiB, 8 KiB)    superblock copy B
//! [8 KiB, 1 MiB)    reserved (zero)
//! [1 MiB, ...)      block 0, block 1, ... (8 MiB each; a 4 KiB header, records, and
//!                   in a sealed block a summary of the records)
//! ```

mod block;
mod record;
pub mod summary;
mod superblock;

pub use block::{
    BlockHeader, BlockHeaderError, BlockKind, BlockState, BLOCK_HEADER_BYTES, SUMMARY_GAP_BYTES,
};
pub use record::{
    decode_record, encode_record, encoded_record_len, CorruptReason, RecordError, RecordIter,
    RecordKind, RecordMeta, RecordRef, RecordStop, MAX_KEY_BYTES, MAX_VALUE_BYTES,
    RECORD_ALIGN_BYTES, RECORD_FLAG_JOIN, RECORD_HEADER_BYTES, VALUE_TYPE_STRING,
};
pub use superblock::{
    format_device, read_superblock, write_superblock, FormatParams, Superblock,
    SuperblockCopyError, SuperblockError, FORMAT_VERSION, SUPERBLOCK_SLOT_BYTES,
};

/// Size of the reserved area at the start of a device (superblocks, then
/// zeros); block 0 starts here.
pub const RESERVED_BYTES: u64 = 1 << 20;

/// Default block size.
pub const DEFAULT_BLOCK_SIZE_BYTES: u64 = 8 << 20;

/// Largest direct-I/O alignment the format supports (superblock slots and block
/// headers are 4 KiB).
pub const MAX_DEVICE_ALIGN_BYTES: usize = 4096;

#[inline]
fn get_u16(buf: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(buf[at..at + 2].try_into().expect("2 bytes"))
}

#[inline]
fn get_u32(buf: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes"))
}

#[inline]
fn get_u64(buf: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}

#[inline]
fn put_u16(buf: &mut [u8], at: usize, v: u16) {
    buf[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

#[inline]
fn put_u32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[inline]
fn put_u64(buf: &mut [u8], at: usize, v: u64) {
    buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    #[test]
    fn crc32c_is_castagnoli() {
        // The standard check value pins the exact CRC variant the format uses.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
    }
}
