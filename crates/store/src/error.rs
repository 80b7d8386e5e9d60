//! The store's error type.

use std::io;

use crate::format::SuperblockError;

/// Errors of the store's write, read and open paths.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Every block of every device is in use.
    #[error("no space left on the data devices")]
    NoSpace,
    /// A device read, write or sync failed.
    #[error("I/O error on data device {device} at offset {offset_bytes}: {source}")]
    Io {
        /// Device index (the superblock's `device_index`).
        device: u16,
        /// Device offset of the failed operation (0 for a sync).
        offset_bytes: u64,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A record read from a device failed its checks (CRC, lengths): the bytes
    /// are not served.
    #[error("corrupt record on data device {device}, block {block}, offset {offset_bytes}")]
    Corrupt {
        /// Device index.
        device: u16,
        /// Block index on the device.
        block: u32,
        /// Offset of the record from the block start.
        offset_bytes: u32,
    },
    /// A record larger than a block's record area.
    #[error(
        "record of {size_bytes} bytes exceeds the largest storable record ({max_bytes} bytes)"
    )]
    TooLarge {
        /// Encoded size of the record.
        size_bytes: u64,
        /// Largest encoded record a block holds.
        max_bytes: u64,
    },
    /// A device's superblock could not be read, written or accepted.
    #[error("data device {device}: {source}")]
    Superblock {
        /// Position of the device in the list given to the open call.
        device: usize,
        /// Why.
        #[source]
        source: SuperblockError,
    },
    /// The devices do not form one store (mixed stores, missing devices, ...).
    #[error("data devices: {0}")]
    Config(String),
}

/// Result alias of the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
