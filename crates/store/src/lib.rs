//! Skerry's storage engine: devices, the on-device format and (later) the log
//! write path, index, cache, recovery and defrag. It knows nothing of Redis
//! commands.
//!
//! The engine runs inside a per-core worker: one compio runtime (io_uring) on
//! one OS thread. Devices are read and written with `O_DIRECT` through that
//! ring, so every buffer is an [`AlignedBuf`].
//!
//! * [`AlignedBuf`]: aligned, owned I/O buffer (compio `IoBuf`/`IoBufMut`).
//! * [`device`]: the [`Device`] trait, [`FileDevice`] (data file or block
//!   device) and the fault-injecting [`RamDevice`](device::RamDevice) for tests.
//! * [`format`](mod@format): superblock, block headers and records, as described in
//!   `docs/storage-format.md`.

#![deny(missing_docs)]

mod aligned;
pub mod device;
pub mod format;

pub use aligned::{AlignedBuf, MIN_ALIGN_BYTES};
pub use device::{AnyDevice, Device, FileDevice};
