//! [`AlignedBuf`]: a heap buffer whose memory is aligned for `O_DIRECT` I/O.
//!
//! compio's drivers take ownership of a buffer for the duration of an operation
//! and trust its [`IoBuf`] / [`IoBufMut`] / [`SetLen`] implementations for
//! pointers and lengths, so this module is written and tested as unsafe code.
//!
//! The whole allocation is zero-initialised when it is made (`alloc_zeroed`, or
//! a fresh anonymous mapping), so every byte of the capacity is always
//! initialised: the length is only a logical marker and can be changed safely
//! with [`AlignedBuf::set_len_bytes`].
//!
//! Buffers of [`MMAP_MIN_BYTES`] or more (block staging images, recovery's
//! block reads) are their own anonymous mappings, so their memory goes back to
//! the OS when they are dropped instead of staying in the allocator's heap:
//! without this a burst of writes (sealed images waiting for their sync) left
//! hundreds of MiB of RSS behind.

use std::alloc::{self, Layout};
use std::fmt;
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use compio::buf::{IoBuf, IoBufMut, SetLen};

/// Smallest alignment an [`AlignedBuf`] accepts (one 512-byte sector).
pub const MIN_ALIGN_BYTES: usize = 512;

/// Buffers at least this large are anonymous mappings (see the module doc).
pub const MMAP_MIN_BYTES: usize = 1 << 20;

/// Page size assumed for mappings: their alignment (mmap returns page-aligned
/// memory); a larger requested alignment falls back to the allocator.
const PAGE_BYTES: usize = 4096;

#[inline]
fn is_mapped(capacity_bytes: usize, align_bytes: usize) -> bool {
    capacity_bytes >= MMAP_MIN_BYTES && align_bytes <= PAGE_BYTES
}

/// Huge page size: a mapping of at least this many bytes starts on such a boundary and asks
/// for transparent huge pages.
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// A zero-filled private anonymous mapping of exactly `len_bytes`, page aligned; one of
/// [`HUGE_PAGE_BYTES`] or more starts on a huge page boundary and is advised to use huge
/// pages, so that the first touch of an 8 MiB block image faults 4 times rather than
/// 2,048 (decision 0034). None when the kernel refuses the mapping.
fn map_huge_aligned(len_bytes: usize) -> Option<*mut u8> {
    let huge = len_bytes >= HUGE_PAGE_BYTES;
    let map_bytes = if huge {
        len_bytes + HUGE_PAGE_BYTES
    } else {
        len_bytes
    };
    // SAFETY: an anonymous private mapping of a non-zero length with no address hint has no
    // preconditions; the kernel zero-fills it and returns page-aligned memory (or
    // MAP_FAILED, handled below).
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            map_bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let p = p.cast::<u8>();
    if !huge {
        return Some(p);
    }
    let head_bytes = p.addr().next_multiple_of(HUGE_PAGE_BYTES) - p.addr();
    let tail_bytes = HUGE_PAGE_BYTES - head_bytes;
    // SAFETY: `[p, p + map_bytes)` is the mapping just made; the head `[p, p + head)` and
    // the tail `[start + len, p + map_bytes)` are page-aligned parts of it (mmap returns
    // page-aligned memory and both ends of the kept range are huge page aligned or the
    // mapping's own end), unmapped here once and never used. The kept range
    // `[start, start + len)` lies inside it; MADV_HUGEPAGE only changes how it is backed.
    unsafe {
        let start = p.add(head_bytes);
        if head_bytes > 0 {
            libc::munmap(p.cast(), head_bytes);
        }
        if tail_bytes > 0 {
            libc::munmap(start.add(len_bytes).cast(), tail_bytes);
        }
        libc::madvise(start.cast(), len_bytes, libc::MADV_HUGEPAGE);
        Some(start)
    }
}

/// A fixed-capacity heap buffer aligned to a power of two (at least 512 bytes),
/// usable as the owned buffer of compio `O_DIRECT` reads and writes.
///
/// Invariants: `ptr` points to an allocation of `capacity_bytes` bytes with
/// alignment `align_bytes`, all of them initialised; `len_bytes <=
/// capacity_bytes`; `capacity_bytes` is a non-zero multiple of `align_bytes`.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len_bytes: usize,
    capacity_bytes: usize,
    align_bytes: usize,
}

// SAFETY: `AlignedBuf` owns its allocation exclusively (like `Vec<u8>`); the raw
// pointer is never shared with another owner, so moving it to another thread or
// sharing `&AlignedBuf` (which only hands out `&[u8]`) is sound.
unsafe impl Send for AlignedBuf {}
// SAFETY: see `Send` above; `&AlignedBuf` gives read-only access.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates a zeroed buffer of `capacity_bytes` with memory aligned to
    /// `align_bytes`; its length starts at 0.
    ///
    /// # Panics
    /// If `align_bytes` is not a power of two of at least [`MIN_ALIGN_BYTES`], if
    /// `capacity_bytes` is zero or not a multiple of `align_bytes`, or if the
    /// allocation fails (via [`alloc::handle_alloc_error`]).
    pub fn new(capacity_bytes: usize, align_bytes: usize) -> Self {
        assert!(
            align_bytes.is_power_of_two() && align_bytes >= MIN_ALIGN_BYTES,
            "alignment must be a power of two >= {MIN_ALIGN_BYTES}, got {align_bytes}"
        );
        assert!(
            capacity_bytes > 0 && capacity_bytes.is_multiple_of(align_bytes),
            "capacity {capacity_bytes} must be a non-zero multiple of the alignment {align_bytes}"
        );
        let layout = Layout::from_size_align(capacity_bytes, align_bytes)
            .expect("capacity too large for the alignment");
        let raw = if is_mapped(capacity_bytes, align_bytes) {
            map_huge_aligned(capacity_bytes).unwrap_or_else(|| alloc::handle_alloc_error(layout))
        } else {
            // SAFETY: `layout` has a non-zero size (checked above).
            unsafe { alloc::alloc_zeroed(layout) }
        };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        debug_assert!(ptr.as_ptr().addr().is_multiple_of(align_bytes));
        Self {
            ptr,
            len_bytes: 0,
            capacity_bytes,
            align_bytes,
        }
    }

    /// Allocates a zeroed buffer like [`AlignedBuf::new`] whose length is its
    /// full capacity (ready to be read into or filled and written).
    pub fn zeroed(capacity_bytes: usize, align_bytes: usize) -> Self {
        let mut buf = Self::new(capacity_bytes, align_bytes);
        buf.len_bytes = capacity_bytes;
        buf
    }

    /// Memory alignment of the buffer, in bytes.
    pub fn align_bytes(&self) -> usize {
        self.align_bytes
    }

    /// Capacity of the buffer, in bytes.
    pub fn capacity_bytes(&self) -> usize {
        self.capacity_bytes
    }

    /// Length (the bytes a write sends, or the bytes a read asks for), in bytes.
    pub fn len_bytes(&self) -> usize {
        self.len_bytes
    }

    /// True when the length is zero.
    pub fn is_empty(&self) -> bool {
        self.len_bytes == 0
    }

    /// Sets the length. Bytes between the old and the new length keep whatever
    /// they held before (zero for never-written bytes).
    ///
    /// # Panics
    /// If `len_bytes` exceeds the capacity.
    pub fn set_len_bytes(&mut self, len_bytes: usize) {
        assert!(
            len_bytes <= self.capacity_bytes,
            "length {len_bytes} exceeds capacity {}",
            self.capacity_bytes
        );
        self.len_bytes = len_bytes;
    }

    /// Sets the length to 0 (the bytes are kept).
    pub fn clear(&mut self) {
        self.len_bytes = 0;
    }

    /// Appends `src` after the current length.
    ///
    /// # Panics
    /// If the bytes do not fit in the capacity.
    pub fn extend_from_slice(&mut self, src: &[u8]) {
        let end = self
            .len_bytes
            .checked_add(src.len())
            .filter(|&end| end <= self.capacity_bytes)
            .expect("AlignedBuf capacity exceeded");
        let start = self.len_bytes;
        self.len_bytes = end;
        self.as_mut_slice()[start..end].copy_from_slice(src);
    }

    /// Zeroes every whole page inside `[from_bytes, to_bytes)` of the capacity and, for a
    /// mapped buffer, gives their memory back to the OS (`MADV_DONTNEED`: the pages read
    /// as zero again, and are resident only once written). Bytes of the partial pages at
    /// either end are unchanged. Returns the bytes zeroed (a multiple of the page size).
    ///
    /// # Panics
    /// If `to_bytes` exceeds the capacity.
    pub fn zero_pages(&mut self, from_bytes: usize, to_bytes: usize) -> usize {
        assert!(
            to_bytes <= self.capacity_bytes,
            "range end {to_bytes} exceeds capacity {}",
            self.capacity_bytes
        );
        let start = from_bytes.next_multiple_of(PAGE_BYTES);
        let end = to_bytes / PAGE_BYTES * PAGE_BYTES;
        if start >= end {
            return 0;
        }
        if is_mapped(self.capacity_bytes, self.align_bytes) {
            // SAFETY: `[start, end)` is a page-aligned range inside the private anonymous
            // mapping `new` made (a mapping is page aligned and `end <= capacity_bytes`);
            // MADV_DONTNEED on such a range replaces its pages with zero-fill-on-demand
            // ones, so every byte stays initialised (zero). `&mut self` means no borrow of
            // the bytes is alive, and no I/O owns the buffer while we hold it.
            let rc = unsafe {
                libc::madvise(
                    self.ptr.as_ptr().add(start).cast(),
                    end - start,
                    libc::MADV_DONTNEED,
                )
            };
            if rc == 0 {
                return end - start;
            }
        }
        self.full_mut()[start..end].fill(0);
        end - start
    }

    /// The initialised bytes up to the length.
    pub fn as_slice(&self) -> &[u8] {
        &self.full()[..self.len_bytes]
    }

    /// The bytes up to the length, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let len = self.len_bytes;
        &mut self.full_mut()[..len]
    }

    /// The whole capacity (all bytes are initialised).
    pub fn full(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for reads of `capacity_bytes` initialised bytes
        // (zeroed at allocation, only ever written with initialised bytes) for
        // as long as `self` lives; the returned borrow is tied to `&self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.capacity_bytes) }
    }

    /// The whole capacity, mutable (all bytes are initialised).
    pub fn full_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `full`, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.capacity_bytes) }
    }

    /// A hint to bring bytes `[from_bytes, to_bytes)` (clamped to the capacity) into the
    /// CPU cache for writing, so that a later copy into them does not wait for each line
    /// to be read from memory. Changes nothing.
    pub fn prefetch_for_write(&self, from_bytes: usize, to_bytes: usize) {
        let to_bytes = to_bytes.min(self.capacity_bytes);
        let mut at = from_bytes & !63;
        while at < to_bytes {
            #[cfg(target_arch = "x86_64")]
            {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
                // SAFETY: `at` is within the allocation (checked against the capacity);
                // a prefetch changes no program state and never faults.
                unsafe { _mm_prefetch::<_MM_HINT_ET0>(self.ptr.as_ptr().add(at).cast::<i8>()) };
            }
            at += 64;
        }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if is_mapped(self.capacity_bytes, self.align_bytes) {
            // SAFETY: `new` mapped exactly `capacity_bytes` at `ptr` (the same
            // `is_mapped` decision) and it is unmapped only here, once.
            let rc = unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.capacity_bytes) };
            debug_assert_eq!(rc, 0, "munmap of a staging buffer failed");
            return;
        }
        // SAFETY: the allocation was made in `new` with exactly this layout
        // (validated there) and is freed only here, once.
        unsafe {
            let layout = Layout::from_size_align_unchecked(self.capacity_bytes, self.align_bytes);
            alloc::dealloc(self.ptr.as_ptr(), layout);
        }
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len_bytes", &self.len_bytes)
            .field("capacity_bytes", &self.capacity_bytes)
            .field("align_bytes", &self.align_bytes)
            .finish()
    }
}

impl IoBuf for AlignedBuf {
    fn as_init(&self) -> &[u8] {
        self.as_slice()
    }
}

/// What a device write takes: a buffer whose bytes are aligned for `O_DIRECT` and stay
/// unchanged while the write is in flight (the write owns it, or a share of it).
pub trait WriteBuf: IoBuf {
    /// The bytes to write.
    fn bytes(&self) -> &[u8] {
        self.as_init()
    }
    /// Alignment of the bytes' memory.
    fn align_bytes(&self) -> usize;
}

impl WriteBuf for AlignedBuf {
    fn align_bytes(&self) -> usize {
        self.align_bytes
    }
}

/// A range of a sealed block's staging image, written to the device without a copy. The
/// image is shared (`Rc`) and never changed once sealed, so the range stays as it was
/// for as long as the write holds it, and its memory stays allocated even if the write's
/// future is dropped before the kernel is done with it.
pub struct ImagePiece {
    image: std::rc::Rc<AlignedBuf>,
    start: usize,
    end: usize,
}

impl ImagePiece {
    /// `image[start..end]`; `start` and `end` must be multiples of the image's alignment.
    pub fn new(image: std::rc::Rc<AlignedBuf>, start: usize, end: usize) -> ImagePiece {
        assert!(start < end && end <= image.len_bytes());
        assert!(start.is_multiple_of(image.align_bytes) && end.is_multiple_of(image.align_bytes));
        ImagePiece { image, start, end }
    }
}

impl IoBuf for ImagePiece {
    fn as_init(&self) -> &[u8] {
        &self.image[self.start..self.end]
    }
}

impl WriteBuf for ImagePiece {
    fn align_bytes(&self) -> usize {
        self.image.align_bytes
    }
}

impl SetLen for AlignedBuf {
    unsafe fn set_len(&mut self, len: usize) {
        // The trait's contract (len <= capacity) is checked anyway: every byte of
        // the capacity is initialised, so any length within it is sound.
        self.set_len_bytes(len);
    }
}

impl IoBufMut for AlignedBuf {
    fn as_uninit(&mut self) -> &mut [MaybeUninit<u8>] {
        // SAFETY: `ptr` is valid for `capacity_bytes` bytes and exclusively
        // borrowed through `&mut self`; `MaybeUninit<u8>` has the layout of
        // `u8`. The all-initialised invariant relies on writers storing plain
        // bytes through this slice, which the kernel and compio's drivers do.
        // Storing `MaybeUninit::uninit()` here would break it, exactly as it
        // would break compio's own `IoBufMut for Vec<u8>`, which exposes the
        // initialised prefix the same way; nothing in this crate does.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.ptr.as_ptr().cast::<MaybeUninit<u8>>(),
                self.capacity_bytes,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use compio::buf::IntoInner;

    #[test]
    fn alignment_and_zeroing() {
        for align in [512usize, 4096, 65536] {
            let buf = AlignedBuf::zeroed(align * 3, align);
            assert_eq!(buf.as_ptr() as usize % align, 0);
            assert_eq!(buf.len_bytes(), align * 3);
            assert!(buf.iter().all(|&b| b == 0));
            assert_eq!(IoBuf::buf_ptr(&buf) as usize % align, 0);
        }
    }

    #[test]
    fn io_buf_traits() {
        let mut buf = AlignedBuf::new(1024, 512);
        assert_eq!(buf.buf_len(), 0);
        assert_eq!(buf.buf_capacity(), 1024);
        assert!(IoBuf::is_empty(&buf));
        buf.extend_from_slice(b"hello");
        assert_eq!(buf.as_init(), b"hello");
        assert_eq!(buf.as_uninit().len(), 1024);
        // SAFETY: 700 <= capacity; all bytes are initialised.
        unsafe { SetLen::set_len(&mut buf, 700) };
        assert_eq!(buf.len_bytes(), 700);
        assert_eq!(&buf[..5], b"hello");
        assert!(buf[5..].iter().all(|&b| b == 0));
        // advance_to never shrinks.
        // SAFETY: as above.
        unsafe { buf.advance_to(10) };
        assert_eq!(buf.len_bytes(), 700);
        // A compio slice of the buffer sees the right range and hands it back.
        let slice = buf.slice(512..);
        assert_eq!(slice.as_init().len(), 188);
        let buf = slice.into_inner();
        assert_eq!(buf.len_bytes(), 700);
    }

    /// Resident pages of `buf`'s capacity (mincore).
    fn resident_pages(buf: &AlignedBuf) -> usize {
        let pages = buf.capacity_bytes() / PAGE_BYTES;
        let mut vec = vec![0u8; pages];
        // SAFETY: the buffer is a page-aligned mapping of `pages` pages, and `vec` has one
        // byte per page, as mincore requires.
        let rc = unsafe {
            libc::mincore(
                buf.full().as_ptr() as *mut libc::c_void,
                buf.capacity_bytes(),
                vec.as_mut_ptr(),
            )
        };
        assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
        vec.iter().filter(|&&v| v & 1 != 0).count()
    }

    #[test]
    fn zero_pages_zeroes_whole_pages_and_returns_mapped_memory() {
        // Mapped: the pages go back to the OS, the partial pages at the ends stay.
        let cap = MMAP_MIN_BYTES * 2;
        let mut buf = AlignedBuf::zeroed(cap, 4096);
        buf.full_mut().fill(0xA5);
        assert_eq!(resident_pages(&buf), cap / PAGE_BYTES);
        let (from, to) = (PAGE_BYTES + 100, cap - PAGE_BYTES - 1);
        let zeroed = buf.zero_pages(from, to);
        assert_eq!(zeroed, cap - 4 * PAGE_BYTES);
        assert_eq!(resident_pages(&buf), 4, "two pages kept at each end");
        assert!(buf[..2 * PAGE_BYTES].iter().all(|&b| b == 0xA5));
        assert!(buf[2 * PAGE_BYTES..cap - 2 * PAGE_BYTES]
            .iter()
            .all(|&b| b == 0));
        assert!(buf[cap - 2 * PAGE_BYTES..].iter().all(|&b| b == 0xA5));
        buf[3 * PAGE_BYTES] = 1;
        assert_eq!(buf[3 * PAGE_BYTES], 1, "a released page takes writes again");
        // Heap-allocated: the same bytes are zeroed, in place.
        let mut small = AlignedBuf::zeroed(4 * PAGE_BYTES, 4096);
        small.full_mut().fill(7);
        assert_eq!(small.zero_pages(1, 3 * PAGE_BYTES), 2 * PAGE_BYTES);
        assert!(small[..PAGE_BYTES].iter().all(|&b| b == 7));
        assert!(small[PAGE_BYTES..3 * PAGE_BYTES].iter().all(|&b| b == 0));
        assert!(small[3 * PAGE_BYTES..].iter().all(|&b| b == 7));
        // No whole page inside: nothing changes.
        assert_eq!(small.zero_pages(10, PAGE_BYTES + 10), 0);
        assert_eq!(small[PAGE_BYTES - 1], 7);
    }

    #[test]
    fn writes_through_uninit_are_visible() {
        let mut buf = AlignedBuf::new(512, 512);
        buf.as_uninit()[100] = MaybeUninit::new(7);
        buf.set_len_bytes(512);
        assert_eq!(buf[100], 7);
        buf.clear();
        assert!(buf.is_empty());
        assert_eq!(buf.full()[100], 7);
    }

    #[test]
    #[should_panic(expected = "exceeds capacity")]
    fn set_len_past_capacity_panics() {
        let mut buf = AlignedBuf::new(512, 512);
        buf.set_len_bytes(513);
    }

    #[test]
    #[should_panic(expected = "multiple of the alignment")]
    fn capacity_must_be_aligned() {
        let _ = AlignedBuf::new(1000, 512);
    }

    #[test]
    #[should_panic(expected = "power of two")]
    fn alignment_must_be_power_of_two() {
        let _ = AlignedBuf::new(3072, 1536);
    }

    #[test]
    #[should_panic(expected = "capacity exceeded")]
    fn extend_past_capacity_panics() {
        let mut buf = AlignedBuf::new(512, 512);
        buf.extend_from_slice(&[1; 600]);
    }
}
