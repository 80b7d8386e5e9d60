//! The superblock: two copies (A at offset 0, B at 4 KiB) describing the
//! device. The valid copy with the higher generation wins; an update writes the
//! copy `generation % 2` so the other one survives a torn write.

use std::io;
use std::time::{SystemTime, UNIX_EPOCH};

use compio::BufResult;

use super::{
    get_u32, get_u64, put_u32, put_u64, DEFAULT_BLOCK_SIZE_BYTES, MAX_DEVICE_ALIGN_BYTES,
    RESERVED_BYTES,
};
use crate::aligned::AlignedBuf;
use crate::device::Device;

/// Magic bytes at the start of each superblock copy.
pub const SUPERBLOCK_MAGIC: [u8; 8] = *b"SKERRYDB";

/// The on-device format version this build reads and writes.
pub const FORMAT_VERSION: u32 = 2;

/// Bytes reserved for each superblock copy.
pub const SUPERBLOCK_SLOT_BYTES: usize = 4096;

/// Encoded length of the superblock, unchanged since version 1 (the rest of the slot is zero).
const SUPERBLOCK_V1_BYTES: usize = 128;

const MIN_BLOCK_SIZE_BYTES: u64 = 64 << 10;
const MAX_BLOCK_SIZE_BYTES: u64 = 1 << 30;

// Field offsets (unchanged since version 1). Magic, version and length never move.
const OFF_MAGIC: usize = 0;
const OFF_VERSION: usize = 8;
const OFF_LEN: usize = 12;
const OFF_STORE_ID: usize = 16;
const OFF_DEVICE_ID: usize = 32;
const OFF_DEVICE_INDEX: usize = 48;
const OFF_DEVICE_COUNT: usize = 52;
const OFF_BLOCK_SIZE: usize = 56;
const OFF_BLOCK_COUNT: usize = 64;
const OFF_FIRST_BLOCK: usize = 72;
const OFF_DEVICE_SIZE: usize = 80;
const OFF_CREATED: usize = 88;
const OFF_GENERATION: usize = 96;
const OFF_RESERVED: usize = 104;
const OFF_CRC: usize = 124;

/// The decoded superblock of one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// Random id shared by all devices of one store.
    pub store_id: [u8; 16],
    /// Random id of this device, chosen when it was formatted (block headers
    /// repeat it, so blocks left from an earlier format are recognised).
    pub device_id: [u8; 16],
    /// Position of this device in the store's device list.
    pub device_index: u32,
    /// Number of devices in the store.
    pub device_count: u32,
    /// Block size in bytes (a power of two).
    pub block_size_bytes: u64,
    /// Number of blocks on this device.
    pub block_count: u64,
    /// Device offset of block 0.
    pub first_block_offset_bytes: u64,
    /// Device size when formatted.
    pub device_size_bytes: u64,
    /// Format time, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// Update counter: the valid copy with the higher generation wins.
    pub generation: u64,
}

/// Parameters for [`format_device`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatParams {
    /// Id of the store the device belongs to.
    pub store_id: [u8; 16],
    /// Position of the device in the store.
    pub device_index: u32,
    /// Number of devices in the store.
    pub device_count: u32,
    /// Block size (a power of two between 64 KiB and 1 GiB).
    pub block_size_bytes: u64,
}

impl FormatParams {
    /// A one-device store with a fresh random id and 8 MiB blocks.
    pub fn single_device() -> Self {
        Self {
            store_id: rand::random(),
            device_index: 0,
            device_count: 1,
            block_size_bytes: DEFAULT_BLOCK_SIZE_BYTES,
        }
    }
}

/// Why one superblock copy is not usable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SuperblockCopyError {
    /// The magic bytes are wrong (not a Skerry device, or never written).
    #[error("bad magic")]
    BadMagic,
    /// The recorded length is impossible.
    #[error("bad length {0}")]
    BadLength(u32),
    /// CRC32C mismatch.
    #[error("checksum mismatch")]
    BadChecksum,
    /// The copy is intact but written by another format version.
    #[error("format version {0}")]
    UnsupportedVersion(u32),
    /// The copy is intact but its fields contradict each other.
    #[error("bad geometry: {0}")]
    BadGeometry(&'static str),
}

/// Errors opening, formatting or updating a device's superblock.
#[derive(Debug, thiserror::Error)]
pub enum SuperblockError {
    /// Neither copy is valid.
    #[error("not a Skerry data file (bad superblock): copy A: {a}, copy B: {b}")]
    BadSuperblock {
        /// Why copy A was rejected.
        a: SuperblockCopyError,
        /// Why copy B was rejected.
        b: SuperblockCopyError,
    },
    /// A valid copy has a format version this build does not support.
    #[error(
        "data file format version {found} is not supported by this build (supports {supported})"
    )]
    UnsupportedVersion {
        /// Version found on the device.
        found: u32,
        /// Version this build supports.
        supported: u32,
    },
    /// The device is smaller than when it was formatted, or too small to format.
    #[error("device too small: needs {needed_bytes} bytes, has {actual_bytes}")]
    DeviceTooSmall {
        /// Bytes the superblock (or the format request) needs.
        needed_bytes: u64,
        /// Bytes the device has.
        actual_bytes: u64,
    },
    /// The format parameters are invalid.
    #[error("invalid format parameters: {0}")]
    InvalidParams(&'static str),
    /// The device's direct-I/O alignment exceeds what the format supports.
    #[error("device alignment {0} bytes is not supported (at most {MAX_DEVICE_ALIGN_BYTES})")]
    UnsupportedAlignment(usize),
    /// Device I/O failed.
    #[error("superblock I/O: {0}")]
    Io(#[from] io::Error),
}

impl Superblock {
    /// Encodes into the first bytes of `slot` (at least 128 bytes); the rest of
    /// the slot is not touched (write it as zeros).
    pub fn encode(&self, slot: &mut [u8]) {
        let out = &mut slot[..SUPERBLOCK_V1_BYTES];
        out.fill(0);
        out[OFF_MAGIC..OFF_MAGIC + 8].copy_from_slice(&SUPERBLOCK_MAGIC);
        put_u32(out, OFF_VERSION, FORMAT_VERSION);
        put_u32(out, OFF_LEN, SUPERBLOCK_V1_BYTES as u32);
        out[OFF_STORE_ID..OFF_STORE_ID + 16].copy_from_slice(&self.store_id);
        out[OFF_DEVICE_ID..OFF_DEVICE_ID + 16].copy_from_slice(&self.device_id);
        put_u32(out, OFF_DEVICE_INDEX, self.device_index);
        put_u32(out, OFF_DEVICE_COUNT, self.device_count);
        put_u64(out, OFF_BLOCK_SIZE, self.block_size_bytes);
        put_u64(out, OFF_BLOCK_COUNT, self.block_count);
        put_u64(out, OFF_FIRST_BLOCK, self.first_block_offset_bytes);
        put_u64(out, OFF_DEVICE_SIZE, self.device_size_bytes);
        put_u64(out, OFF_CREATED, self.created_unix_ms);
        put_u64(out, OFF_GENERATION, self.generation);
        let crc = crc32c::crc32c(&out[..OFF_CRC]);
        put_u32(out, OFF_CRC, crc);
    }

    /// Decodes and validates one copy. Any byte slice is accepted (never
    /// panics).
    pub fn decode(slot: &[u8]) -> Result<Self, SuperblockCopyError> {
        if slot.len() < 16 || slot[OFF_MAGIC..OFF_MAGIC + 8] != SUPERBLOCK_MAGIC {
            return Err(SuperblockCopyError::BadMagic);
        }
        // Version-independent rule: `len` at 12, CRC32C of [0, len-4) at len-4.
        let len = get_u32(slot, OFF_LEN);
        let len_usize = len as usize;
        if !(16..=SUPERBLOCK_SLOT_BYTES).contains(&len_usize)
            || !len_usize.is_multiple_of(4)
            || len_usize > slot.len()
        {
            return Err(SuperblockCopyError::BadLength(len));
        }
        if crc32c::crc32c(&slot[..len_usize - 4]) != get_u32(slot, len_usize - 4) {
            return Err(SuperblockCopyError::BadChecksum);
        }
        let version = get_u32(slot, OFF_VERSION);
        if version != FORMAT_VERSION {
            return Err(SuperblockCopyError::UnsupportedVersion(version));
        }
        if len_usize != SUPERBLOCK_V1_BYTES {
            return Err(SuperblockCopyError::BadLength(len));
        }
        if slot[OFF_RESERVED..OFF_CRC].iter().any(|&b| b != 0) {
            return Err(SuperblockCopyError::BadGeometry(
                "reserved bytes are not zero",
            ));
        }
        let sb = Self {
            store_id: slot[OFF_STORE_ID..OFF_STORE_ID + 16]
                .try_into()
                .expect("16"),
            device_id: slot[OFF_DEVICE_ID..OFF_DEVICE_ID + 16]
                .try_into()
                .expect("16"),
            device_index: get_u32(slot, OFF_DEVICE_INDEX),
            device_count: get_u32(slot, OFF_DEVICE_COUNT),
            block_size_bytes: get_u64(slot, OFF_BLOCK_SIZE),
            block_count: get_u64(slot, OFF_BLOCK_COUNT),
            first_block_offset_bytes: get_u64(slot, OFF_FIRST_BLOCK),
            device_size_bytes: get_u64(slot, OFF_DEVICE_SIZE),
            created_unix_ms: get_u64(slot, OFF_CREATED),
            generation: get_u64(slot, OFF_GENERATION),
        };
        sb.check_geometry()
            .map_err(SuperblockCopyError::BadGeometry)?;
        Ok(sb)
    }

    fn check_geometry(&self) -> Result<(), &'static str> {
        if self.device_count == 0 || self.device_index >= self.device_count {
            return Err("device index out of range");
        }
        check_block_size(self.block_size_bytes)?;
        if self.first_block_offset_bytes < 2 * SUPERBLOCK_SLOT_BYTES as u64
            || !self
                .first_block_offset_bytes
                .is_multiple_of(MAX_DEVICE_ALIGN_BYTES as u64)
        {
            return Err("bad first block offset");
        }
        if self.block_count == 0 {
            return Err("no blocks");
        }
        let end = self
            .block_count
            .checked_mul(self.block_size_bytes)
            .and_then(|b| b.checked_add(self.first_block_offset_bytes));
        if end.is_none_or(|end| end > self.device_size_bytes) {
            return Err("blocks extend past the device end");
        }
        if self.generation == 0 {
            return Err("generation 0");
        }
        Ok(())
    }

    /// Device offset of block `block_index`.
    ///
    /// # Panics
    /// If `block_index >= block_count`.
    pub fn block_offset_bytes(&self, block_index: u64) -> u64 {
        assert!(
            block_index < self.block_count,
            "block {block_index} out of range ({} blocks)",
            self.block_count
        );
        self.first_block_offset_bytes + block_index * self.block_size_bytes
    }

    /// Device offset of the copy that a superblock of this generation is
    /// written to (A for even generations, B for odd).
    pub fn slot_offset_bytes(&self) -> u64 {
        (self.generation % 2) * SUPERBLOCK_SLOT_BYTES as u64
    }

    /// Picks the superblock from the decode results of copies A and B: the
    /// valid copy with the higher generation (A on a tie). An intact copy of
    /// another format version is an error even if the other copy is valid.
    pub fn choose(
        a: Result<Self, SuperblockCopyError>,
        b: Result<Self, SuperblockCopyError>,
    ) -> Result<Self, SuperblockError> {
        for r in [&a, &b] {
            if let Err(SuperblockCopyError::UnsupportedVersion(found)) = r {
                return Err(SuperblockError::UnsupportedVersion {
                    found: *found,
                    supported: FORMAT_VERSION,
                });
            }
        }
        match (a, b) {
            (Ok(a), Ok(b)) => Ok(if b.generation > a.generation { b } else { a }),
            (Ok(a), Err(_)) => Ok(a),
            (Err(_), Ok(b)) => Ok(b),
            (Err(a), Err(b)) => Err(SuperblockError::BadSuperblock { a, b }),
        }
    }
}

fn check_block_size(block_size_bytes: u64) -> Result<(), &'static str> {
    if !block_size_bytes.is_power_of_two()
        || !(MIN_BLOCK_SIZE_BYTES..=MAX_BLOCK_SIZE_BYTES).contains(&block_size_bytes)
    {
        return Err("block size must be a power of two between 64 KiB and 1 GiB");
    }
    Ok(())
}

fn check_alignment<D: Device>(device: &D) -> Result<(), SuperblockError> {
    let align = device.align_bytes();
    if align > MAX_DEVICE_ALIGN_BYTES {
        return Err(SuperblockError::UnsupportedAlignment(align));
    }
    Ok(())
}

/// Formats `device`: writes both superblock copies (generation 1, a fresh
/// random device id) and syncs. Existing data becomes unreachable (block
/// headers carry the device id). Uses every whole block that fits.
pub async fn format_device<D: Device>(
    device: &D,
    params: FormatParams,
) -> Result<Superblock, SuperblockError> {
    check_alignment(device)?;
    check_block_size(params.block_size_bytes).map_err(SuperblockError::InvalidParams)?;
    if params.device_count == 0 || params.device_index >= params.device_count {
        return Err(SuperblockError::InvalidParams("device index out of range"));
    }
    let size = device.size_bytes();
    let block_count = size.saturating_sub(RESERVED_BYTES) / params.block_size_bytes;
    if block_count == 0 {
        return Err(SuperblockError::DeviceTooSmall {
            needed_bytes: RESERVED_BYTES + params.block_size_bytes,
            actual_bytes: size,
        });
    }
    let created_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let sb = Superblock {
        store_id: params.store_id,
        device_id: rand::random(),
        device_index: params.device_index,
        device_count: params.device_count,
        block_size_bytes: params.block_size_bytes,
        block_count,
        first_block_offset_bytes: RESERVED_BYTES,
        device_size_bytes: size,
        created_unix_ms,
        generation: 1,
    };
    let mut buf = AlignedBuf::zeroed(2 * SUPERBLOCK_SLOT_BYTES, device.align_bytes());
    sb.encode(&mut buf[..SUPERBLOCK_SLOT_BYTES]);
    sb.encode(&mut buf[SUPERBLOCK_SLOT_BYTES..]);
    let BufResult(res, _) = device.write_at(buf, 0).await;
    res?;
    device.sync().await?;
    Ok(sb)
}

/// Reads both superblock copies and returns the valid one with the higher
/// generation; checks that the device is at least as large as formatted.
pub async fn read_superblock<D: Device>(device: &D) -> Result<Superblock, SuperblockError> {
    check_alignment(device)?;
    let size = device.size_bytes();
    if size < 2 * SUPERBLOCK_SLOT_BYTES as u64 {
        return Err(SuperblockError::BadSuperblock {
            a: SuperblockCopyError::BadMagic,
            b: SuperblockCopyError::BadMagic,
        });
    }
    let buf = AlignedBuf::zeroed(2 * SUPERBLOCK_SLOT_BYTES, device.align_bytes());
    let BufResult(res, buf) = device.read_at(buf, 0).await;
    res?;
    let sb = Superblock::choose(
        Superblock::decode(&buf[..SUPERBLOCK_SLOT_BYTES]),
        Superblock::decode(&buf[SUPERBLOCK_SLOT_BYTES..]),
    )?;
    if sb.device_size_bytes > size {
        return Err(SuperblockError::DeviceTooSmall {
            needed_bytes: sb.device_size_bytes,
            actual_bytes: size,
        });
    }
    Ok(sb)
}

/// Writes `sb` to the copy its generation selects
/// ([`Superblock::slot_offset_bytes`]) and syncs. The caller increments the
/// generation for each update, so the previous copy stays intact.
pub async fn write_superblock<D: Device>(
    device: &D,
    sb: &Superblock,
) -> Result<(), SuperblockError> {
    check_alignment(device)?;
    assert!(
        sb.check_geometry().is_ok(),
        "writing an invalid superblock: {sb:?}"
    );
    let mut buf = AlignedBuf::zeroed(SUPERBLOCK_SLOT_BYTES, device.align_bytes());
    sb.encode(&mut buf);
    let BufResult(res, _) = device.write_at(buf, sb.slot_offset_bytes()).await;
    res?;
    device.sync().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Superblock {
        Superblock {
            store_id: [7; 16],
            device_id: [9; 16],
            device_index: 1,
            device_count: 3,
            block_size_bytes: 8 << 20,
            block_count: 10,
            first_block_offset_bytes: RESERVED_BYTES,
            device_size_bytes: RESERVED_BYTES + 10 * (8 << 20) + 4096,
            created_unix_ms: 1_700_000_000_000,
            generation: 5,
        }
    }

    fn encoded(sb: &Superblock) -> Vec<u8> {
        let mut slot = vec![0u8; SUPERBLOCK_SLOT_BYTES];
        sb.encode(&mut slot);
        slot
    }

    #[test]
    fn round_trip() {
        let sb = sample();
        assert_eq!(Superblock::decode(&encoded(&sb)), Ok(sb));
        assert_eq!(&encoded(&sb)[..8], b"SKERRYDB");
    }

    #[test]
    fn every_bit_flip_is_detected() {
        let slot = encoded(&sample());
        for bit in 0..SUPERBLOCK_V1_BYTES * 8 {
            let mut bad = slot.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(
                Superblock::decode(&bad).is_err(),
                "bit {bit} flip not detected"
            );
        }
    }

    #[test]
    fn truncated_or_garbage_never_panics() {
        let slot = encoded(&sample());
        for len in 0..SUPERBLOCK_V1_BYTES {
            assert!(Superblock::decode(&slot[..len]).is_err());
        }
        assert_eq!(
            Superblock::decode(&[0; 4096]),
            Err(SuperblockCopyError::BadMagic)
        );
    }

    #[test]
    fn newer_version_is_reported_with_both_versions() {
        let mut slot = encoded(&sample());
        put_u32(&mut slot, OFF_VERSION, 3);
        let crc = crc32c::crc32c(&slot[..OFF_CRC]);
        put_u32(&mut slot, OFF_CRC, crc);
        assert_eq!(
            Superblock::decode(&slot),
            Err(SuperblockCopyError::UnsupportedVersion(3))
        );
        let err = Superblock::choose(Superblock::decode(&slot), Ok(sample())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "data file format version 3 is not supported by this build (supports 2)"
        );
        // A version-1 device (no block summaries) is refused the same way: its blocks'
        // headers would not decode.
        let mut old = encoded(&sample());
        put_u32(&mut old, OFF_VERSION, 1);
        let crc = crc32c::crc32c(&old[..OFF_CRC]);
        put_u32(&mut old, OFF_CRC, crc);
        let err = Superblock::choose(Superblock::decode(&old), Ok(sample())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "data file format version 1 is not supported by this build (supports 2)"
        );
    }

    #[test]
    fn future_version_with_longer_header_still_checks_crc() {
        // A version-3 superblock of 256 bytes: its CRC sits at 252.
        let mut slot = vec![0u8; SUPERBLOCK_SLOT_BYTES];
        slot[..8].copy_from_slice(b"SKERRYDB");
        put_u32(&mut slot, OFF_VERSION, 3);
        put_u32(&mut slot, OFF_LEN, 256);
        let crc = crc32c::crc32c(&slot[..252]);
        put_u32(&mut slot, 252, crc);
        assert_eq!(
            Superblock::decode(&slot),
            Err(SuperblockCopyError::UnsupportedVersion(3))
        );
        slot[100] ^= 1;
        assert_eq!(
            Superblock::decode(&slot),
            Err(SuperblockCopyError::BadChecksum)
        );
    }

    #[test]
    fn choose_prefers_newer_valid_copy() {
        let old = sample();
        let new = Superblock {
            generation: 6,
            ..sample()
        };
        assert_eq!(Superblock::choose(Ok(old), Ok(new)).unwrap(), new);
        assert_eq!(Superblock::choose(Ok(new), Ok(old)).unwrap(), new);
        assert_eq!(
            Superblock::choose(Err(SuperblockCopyError::BadChecksum), Ok(old)).unwrap(),
            old
        );
        assert_eq!(
            Superblock::choose(Ok(old), Err(SuperblockCopyError::BadMagic)).unwrap(),
            old
        );
        let err = Superblock::choose(
            Err(SuperblockCopyError::BadMagic),
            Err(SuperblockCopyError::BadChecksum),
        )
        .unwrap_err();
        assert!(err
            .to_string()
            .starts_with("not a Skerry data file (bad superblock)"));
    }

    #[test]
    fn geometry_is_validated() {
        let bad = [
            Superblock {
                device_index: 3,
                ..sample()
            },
            Superblock {
                block_size_bytes: 3 << 20,
                ..sample()
            },
            Superblock {
                block_count: 11,
                ..sample()
            },
            Superblock {
                block_count: u64::MAX,
                ..sample()
            },
            Superblock {
                first_block_offset_bytes: 4096,
                ..sample()
            },
            Superblock {
                generation: 0,
                ..sample()
            },
        ];
        for sb in bad {
            assert!(
                matches!(
                    Superblock::decode(&encoded(&sb)),
                    Err(SuperblockCopyError::BadGeometry(_))
                ),
                "{sb:?}"
            );
        }
    }

    #[test]
    fn slots_alternate_and_blocks_are_placed() {
        let sb = sample();
        assert_eq!(sb.slot_offset_bytes(), 4096);
        assert_eq!(
            Superblock {
                generation: 6,
                ..sb
            }
            .slot_offset_bytes(),
            0
        );
        assert_eq!(sb.block_offset_bytes(0), RESERVED_BYTES);
        assert_eq!(sb.block_offset_bytes(2), RESERVED_BYTES + 2 * (8 << 20));
    }
}
