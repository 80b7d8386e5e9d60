//! Block devices the store reads and writes: the `O_DIRECT` [`FileDevice`]
//! (data file or raw block device, I/O through the worker's io_uring) and the
//! fault-injecting [`RamDevice`] for tests, behind the [`Device`] trait and the
//! [`AnyDevice`] enum.
//!
//! A device handle is used from one worker thread at a time; each worker opens
//! its own handle. Every offset and length must be a multiple of
//! [`Device::align_bytes`] and lie inside [`Device::size_bytes`] (asserted: a
//! violation is a bug in the caller, not an I/O error).

use std::io;

use compio::BufResult;

use crate::aligned::{AlignedBuf, WriteBuf};

mod file;
mod ram;

pub use file::FileDevice;
pub(crate) use file::{extend_file, fs_space};
pub use ram::{CrashSpec, Fault, FaultOp, RamControl, RamDevice, RamStats, SECTOR_BYTES};

/// Positional, aligned, asynchronous block I/O.
///
/// Reads and writes transfer exactly `buf.len_bytes()` bytes: they return
/// `Ok(len)` or an error, never a short count (a short transfer from the
/// kernel is resumed, an unexpected end of file becomes
/// [`io::ErrorKind::UnexpectedEof`]). The buffer comes back in every case.
#[allow(async_fn_in_trait)] // used through generics / `AnyDevice`, never `dyn`, on one thread
pub trait Device {
    /// Usable size of the device in bytes (a multiple of `align_bytes`).
    fn size_bytes(&self) -> u64;

    /// Direct-I/O alignment in bytes (power of two, at least 512): offsets,
    /// lengths and buffer memory must be multiples of it.
    fn align_bytes(&self) -> usize;

    /// Reads `buf.len_bytes()` bytes at `offset_bytes` into `buf[..len]`.
    async fn read_at(&self, buf: AlignedBuf, offset_bytes: u64) -> BufResult<usize, AlignedBuf>;

    /// Writes `buf[..buf.len_bytes()]` at `offset_bytes`. The data is durable
    /// only after a later [`Device::sync`] succeeds.
    async fn write_at<B: WriteBuf>(&self, buf: B, offset_bytes: u64) -> BufResult<usize, B>;

    /// Makes every completed write durable (`fdatasync`).
    async fn sync(&self) -> io::Result<()>;
}

/// Any device, dispatched by `match` (no boxing per I/O).
#[derive(Debug)]
pub enum AnyDevice {
    /// An `O_DIRECT` data file or block device.
    File(FileDevice),
    /// A RAM device (tests).
    Ram(RamDevice),
}

impl From<FileDevice> for AnyDevice {
    fn from(device: FileDevice) -> Self {
        AnyDevice::File(device)
    }
}

impl From<RamDevice> for AnyDevice {
    fn from(device: RamDevice) -> Self {
        AnyDevice::Ram(device)
    }
}

impl Device for AnyDevice {
    fn size_bytes(&self) -> u64 {
        match self {
            AnyDevice::File(d) => d.size_bytes(),
            AnyDevice::Ram(d) => d.size_bytes(),
        }
    }

    fn align_bytes(&self) -> usize {
        match self {
            AnyDevice::File(d) => d.align_bytes(),
            AnyDevice::Ram(d) => d.align_bytes(),
        }
    }

    async fn read_at(&self, buf: AlignedBuf, offset_bytes: u64) -> BufResult<usize, AlignedBuf> {
        match self {
            AnyDevice::File(d) => d.read_at(buf, offset_bytes).await,
            AnyDevice::Ram(d) => d.read_at(buf, offset_bytes).await,
        }
    }

    async fn write_at<B: WriteBuf>(&self, buf: B, offset_bytes: u64) -> BufResult<usize, B> {
        match self {
            AnyDevice::File(d) => d.write_at(buf, offset_bytes).await,
            AnyDevice::Ram(d) => d.write_at(buf, offset_bytes).await,
        }
    }

    async fn sync(&self) -> io::Result<()> {
        match self {
            AnyDevice::File(d) => d.sync().await,
            AnyDevice::Ram(d) => d.sync().await,
        }
    }
}

/// Asserts the alignment and bounds contract of [`Device`] for one I/O.
#[track_caller]
pub(crate) fn assert_io_ok(
    size_bytes: u64,
    align_bytes: usize,
    buf: &impl WriteBuf,
    offset_bytes: u64,
) {
    let len = buf.bytes().len();
    let align = align_bytes as u64;
    assert!(
        offset_bytes.is_multiple_of(align),
        "device I/O offset {offset_bytes} is not a multiple of the alignment {align_bytes}"
    );
    assert!(
        len > 0 && (len as u64).is_multiple_of(align),
        "device I/O length {len} is not a non-zero multiple of the alignment {align_bytes}"
    );
    assert!(
        buf.align_bytes() >= align_bytes,
        "buffer memory alignment {} is below the device alignment {align_bytes}",
        buf.align_bytes()
    );
    assert!(
        offset_bytes
            .checked_add(len as u64)
            .is_some_and(|end| end <= size_bytes),
        "device I/O [{offset_bytes}, +{len}) is past the device end {size_bytes}"
    );
}
