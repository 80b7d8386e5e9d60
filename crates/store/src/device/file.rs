//! The `O_DIRECT` file / block device, read and written through the current
//! compio runtime's io_uring.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use compio::buf::{IntoInner, IoBuf};
use compio::fs::{File, OpenOptions};
use compio::io::{AsyncReadAt, AsyncWriteAt};
use compio::BufResult;

use super::{assert_io_ok, Device};
use crate::aligned::{AlignedBuf, WriteBuf, MIN_ALIGN_BYTES};

/// Alignment assumed when the kernel or file system does not report one.
const FALLBACK_ALIGN_BYTES: usize = 4096;

/// A preallocated data file or a raw block device opened with
/// `O_RDWR | O_DIRECT | O_CLOEXEC`.
///
/// All I/O is submitted to the io_uring of the compio runtime that runs the
/// calling task; a handle is used from one worker thread (open one handle per
/// worker). `sync` is `fdatasync` through the ring.
///
/// A data file may grow while it is open ([`Store`](crate::Store) grows it as data
/// arrives): every handle of one device shares its usable size
/// ([`FileDevice::share_size`]), so I/O to blocks added by another thread passes the
/// bounds check.
#[derive(Debug)]
pub struct FileDevice {
    file: File,
    path: PathBuf,
    /// Usable size in bytes, shared by every handle of the device.
    size_bytes: Arc<AtomicU64>,
    align_bytes: usize,
    is_block_device: bool,
}

impl FileDevice {
    /// Opens an existing data file or block device. Its usable size is its
    /// length rounded down to the direct-I/O alignment.
    pub async fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT | libc::O_CLOEXEC)
            .open(path)
            .await
            .map_err(|e| annotate(e, "cannot open", path))?;
        Self::from_file(file, path)
    }

    /// Opens a data file, creating it if absent, and preallocates it
    /// (`fallocate`) to at least `size_bytes` (an existing longer file is not
    /// shrunk). A block device is opened as it is and `size_bytes` is ignored.
    pub async fn open_or_create(path: impl AsRef<Path>, size_bytes: u64) -> io::Result<Self> {
        let path = path.as_ref();
        let existed = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .custom_flags(libc::O_DIRECT | libc::O_CLOEXEC)
            .open(path)
            .await
            .map_err(|e| annotate(e, "cannot open or create", path))?;
        let info = probe(file.as_raw_fd()).map_err(|e| annotate(e, "cannot stat", path))?;
        if !info.is_block_device && info.len_bytes < size_bytes {
            if let Err(e) = preallocate(file.as_raw_fd(), size_bytes) {
                // A failed fallocate (ENOSPC) may have allocated part of the space on the
                // way: give it back, so a too large --data-size does not leave the disk
                // full.
                if existed {
                    // SAFETY: ftruncate on a valid descriptor has no memory effects.
                    let _ =
                        unsafe { libc::ftruncate(file.as_raw_fd(), info.len_bytes as libc::off_t) };
                } else {
                    let _ = std::fs::remove_file(path);
                }
                return Err(annotate(e, "cannot preallocate", path));
            }
            file.sync_all().await?;
        }
        if !existed {
            // Make the new directory entry durable too.
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::File::open(dir)?.sync_all()?;
            }
        }
        Self::from_file(file, path)
    }

    fn from_file(file: File, path: &Path) -> io::Result<Self> {
        let info = probe(file.as_raw_fd()).map_err(|e| annotate(e, "cannot stat", path))?;
        let align = info.align_bytes as u64;
        Ok(Self {
            file,
            path: path.to_path_buf(),
            size_bytes: Arc::new(AtomicU64::new(info.len_bytes / align * align)),
            align_bytes: info.align_bytes,
            is_block_device: info.is_block_device,
        })
    }

    /// Makes this handle use `size` as its usable size (the store's shared size of the
    /// device), raised first to this handle's own probed size if that is larger.
    pub fn share_size(&mut self, size: Arc<AtomicU64>) {
        size.fetch_max(self.size_bytes.load(Ordering::Acquire), Ordering::AcqRel);
        self.size_bytes = size;
    }

    /// The shared usable size of this device (see [`FileDevice::share_size`]).
    pub fn shared_size(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.size_bytes)
    }

    /// The path this device was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True for a raw block device, false for a regular data file.
    pub fn is_block_device(&self) -> bool {
        self.is_block_device
    }
}

impl Device for FileDevice {
    fn size_bytes(&self) -> u64 {
        self.size_bytes.load(Ordering::Acquire)
    }

    fn align_bytes(&self) -> usize {
        self.align_bytes
    }

    async fn read_at(
        &self,
        mut buf: AlignedBuf,
        offset_bytes: u64,
    ) -> BufResult<usize, AlignedBuf> {
        assert_io_ok(self.size_bytes(), self.align_bytes, &buf, offset_bytes);
        let len = buf.len_bytes();
        let mut done = 0usize;
        while done < len {
            // The slice exposes buf[done..len]; the driver reads into it from its
            // start and never changes `buf`'s length (it only grows a length
            // past the slice's, which a read of at most `len - done` cannot).
            let slice = buf.slice(done..len);
            let BufResult(res, slice) = self.file.read_at(slice, offset_bytes + done as u64).await;
            buf = slice.into_inner();
            match res {
                Ok(0) => {
                    let err = io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "{}: end of file at offset {} (device size {})",
                            self.path.display(),
                            offset_bytes + done as u64,
                            self.size_bytes()
                        ),
                    );
                    return BufResult(Err(err), buf);
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return BufResult(Err(e), buf),
            }
        }
        debug_assert_eq!(buf.len_bytes(), len);
        BufResult(Ok(len), buf)
    }

    async fn write_at<B: WriteBuf>(&self, mut buf: B, offset_bytes: u64) -> BufResult<usize, B> {
        assert_io_ok(self.size_bytes(), self.align_bytes, &buf, offset_bytes);
        let len = buf.bytes().len();
        let mut done = 0usize;
        let mut file = &self.file;
        while done < len {
            let slice = buf.slice(done..len);
            let BufResult(res, slice) = file.write_at(slice, offset_bytes + done as u64).await;
            buf = slice.into_inner();
            match res {
                Ok(0) => {
                    let err = io::Error::new(io::ErrorKind::WriteZero, "device accepted no bytes");
                    return BufResult(Err(err), buf);
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return BufResult(Err(e), buf),
            }
        }
        BufResult(Ok(len), buf)
    }

    async fn sync(&self) -> io::Result<()> {
        self.file.sync_data().await
    }
}

fn annotate(err: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(err.kind(), format!("{what} {}: {err}", path.display()))
}

/// What `statx` (and, for block devices, ioctls) tell about an open file.
struct Probe {
    len_bytes: u64,
    align_bytes: usize,
    is_block_device: bool,
}

fn probe(fd: RawFd) -> io::Result<Probe> {
    // SAFETY: `statx` is plain data; all-zero is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let empty = CString::new("").expect("no NUL");
    // SAFETY: `fd` is an open descriptor owned by the caller for the duration of
    // the call, `empty` is a valid NUL-terminated string (AT_EMPTY_PATH: stat
    // the descriptor itself) and `stx` is a valid, writable `statx`.
    let rc = unsafe {
        libc::statx(
            fd,
            empty.as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_TYPE | libc::STATX_SIZE | libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let is_block_device = u32::from(stx.stx_mode) & libc::S_IFMT == libc::S_IFBLK;
    let mut align = if stx.stx_mask & libc::STATX_DIOALIGN != 0 && stx.stx_dio_offset_align != 0 {
        stx.stx_dio_offset_align.max(stx.stx_dio_mem_align) as usize
    } else if is_block_device {
        logical_block_size(fd).unwrap_or(FALLBACK_ALIGN_BYTES)
    } else {
        FALLBACK_ALIGN_BYTES
    };
    align = align.max(MIN_ALIGN_BYTES);
    if !align.is_power_of_two() {
        align = align.next_power_of_two();
    }
    let len_bytes = if is_block_device {
        // SAFETY: lseek on a valid descriptor has no memory effects. The file
        // position is irrelevant: all I/O is positional.
        let end = unsafe { libc::lseek(fd, 0, libc::SEEK_END) };
        if end < 0 {
            return Err(io::Error::last_os_error());
        }
        end as u64
    } else {
        stx.stx_size
    };
    Ok(Probe {
        len_bytes,
        align_bytes: align,
        is_block_device,
    })
}

fn logical_block_size(fd: RawFd) -> Option<usize> {
    let mut size: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one `int` through the pointer, which points to a
    // live local.
    let rc = unsafe { libc::ioctl(fd, libc::BLKSSZGET, &mut size) };
    (rc == 0 && size > 0).then_some(size as usize)
}

fn preallocate(fd: RawFd, size_bytes: u64) -> io::Result<()> {
    let len = libc::off_t::try_from(size_bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "size too large"))?;
    // SAFETY: fallocate on a valid descriptor has no memory effects.
    let rc = unsafe { libc::fallocate(fd, 0, 0, len) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EOPNOTSUPP) {
        // File systems without fallocate: extend the file (sparse).
        // SAFETY: as above.
        if unsafe { libc::ftruncate(fd, len) } == 0 {
            return Ok(());
        }
        return Err(io::Error::last_os_error());
    }
    Err(err)
}

/// Free space of the file system holding `file`, in bytes, as an unprivileged writer
/// sees it (`fstatvfs`: `f_bavail × f_frsize`), and its total size.
pub(crate) fn fs_space(file: &std::fs::File) -> io::Result<(u64, u64)> {
    // SAFETY: `statvfs` is plain data; all-zero is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open for the duration of the call and `st` is a valid,
    // writable `statvfs`.
    let rc = unsafe { libc::fstatvfs(file.as_raw_fd(), &mut st) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let frsize = st.f_frsize as u64;
    Ok((
        (st.f_bavail as u64).saturating_mul(frsize),
        (st.f_blocks as u64).saturating_mul(frsize),
    ))
}

/// Extends `file` to at least `len_bytes` with allocated space (`fallocate` of the range
/// past its current end; a sparse extension on file systems without `fallocate`). Does
/// not sync.
pub(crate) fn extend_file(file: &std::fs::File, len_bytes: u64) -> io::Result<()> {
    let cur = file.metadata()?.len();
    if cur >= len_bytes {
        return Ok(());
    }
    let (off, len) = (
        libc::off_t::try_from(cur),
        libc::off_t::try_from(len_bytes - cur),
    );
    let (Ok(off), Ok(len)) = (off, len) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "size too large",
        ));
    };
    // SAFETY: fallocate on a valid descriptor has no memory effects.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, off, len) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EOPNOTSUPP) {
        return file.set_len(len_bytes);
    }
    Err(err)
}
