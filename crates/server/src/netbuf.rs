//! Connection buffers, taken when a connection has something to read or write and given
//! back when it is done, so that an idle connection holds none
//! (docs/decisions/0018-connection-memory.md).
//!
//! - **Reads** land in a buffer the kernel picks from the worker's provided-buffer ring
//!   (io_uring `IORING_REGISTER_PBUF_RING`, compio's buffer pool) when the data arrives, not
//!   when the recv is queued: a connection waiting for its next request holds no buffer.
//!   The buffer goes back to the ring once the requests in it have run. Only a request that
//!   did not arrive whole is copied into a buffer of the connection's own, until it is
//!   complete.
//! - **Replies and partial requests** use plain `Vec<u8>`s from a small per-worker free list
//!   ([`take`], [`give`]), returned once written or parsed.

use std::cell::{Cell, RefCell};
use std::mem::MaybeUninit;
use std::num::NonZero;
use std::ptr::NonNull;

/// Size of one ring buffer: the most one recv of a new request reads (what the connection's
/// own read buffer used to take per read).
pub const RING_BUF_LEN: usize = 16 * 1024;
/// Ring buffers per worker. A buffer is held only between its recv's completion and the end
/// of the run of the requests in it; when every one is in use a recv fails with ENOBUFS and
/// that connection reads into a buffer of its own instead (see [`take`]).
pub const RING_BUFS: u16 = 256;

/// Capacity of a buffer handed out by [`take`].
pub const BUF_LEN: usize = 16 * 1024;
/// Buffers kept per worker for reuse.
const FREE_MAX: usize = 128;
/// Buffers that grew past this are freed rather than kept.
const KEEP_MAX_CAPACITY: usize = 64 * 1024;

thread_local! {
    static FREE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    /// False once the ring could not be set up on this worker (an old kernel): reads then
    /// use taken buffers only.
    static RING_OK: Cell<bool> = const { Cell::new(true) };
}

/// An empty buffer with room for at least [`BUF_LEN`] bytes, reused when one is free.
#[inline]
pub fn take() -> Vec<u8> {
    FREE.with_borrow_mut(|f| f.pop())
        .unwrap_or_else(|| Vec::with_capacity(BUF_LEN))
}

/// Gives `buf` back for reuse (cleared), or frees it when it grew large or enough are kept.
#[inline]
pub fn give(mut buf: Vec<u8>) {
    let cap = buf.capacity();
    if !(BUF_LEN..=KEEP_MAX_CAPACITY).contains(&cap) {
        return;
    }
    buf.clear();
    FREE.with_borrow_mut(|f| {
        if f.len() < FREE_MAX {
            f.push(buf);
        }
    });
}

/// Gives back `buf` when it holds nothing (a connection going idle keeps no buffer).
#[inline]
pub fn release_if_empty(buf: &mut Vec<u8>) {
    if buf.is_empty() && buf.capacity() > 0 {
        give(std::mem::take(buf));
    }
}

/// True while reads may use the worker's buffer ring.
#[inline]
pub fn ring_enabled() -> bool {
    RING_OK.with(Cell::get)
}

/// The ring could not be used on this worker: reads fall back to taken buffers.
pub fn disable_ring(why: &std::io::Error) {
    if RING_OK.with(|ok| ok.replace(false)) {
        tracing::warn!(
            "io_uring provided buffers unavailable ({why}): idle connections keep a read buffer"
        );
    }
}

/// Sets the worker's io_uring buffer ring: [`RING_BUFS`] buffers of [`RING_BUF_LEN`] bytes,
/// mapped with [`PageAllocator`] so that only pages that ever received data use RAM.
///
/// `SKERRY_TEST_RING_BUFFERS=N` (tests only) sets a smaller ring, so that a test can run it
/// dry and check the fallback reads.
pub fn configure(proactor: &mut compio::driver::ProactorBuilder) {
    let bufs = std::env::var("SKERRY_TEST_RING_BUFFERS")
        .ok()
        .and_then(|v| v.parse::<u16>().ok())
        .and_then(NonZero::new)
        .unwrap_or(NonZero::new(RING_BUFS).expect("non-zero"));
    proactor
        .buffer_pool_size(bufs)
        .buffer_pool_buffer_len(RING_BUF_LEN)
        .buffer_pool_allocator::<PageAllocator>();
}

/// Ring buffers as anonymous mappings of their own, outside the allocator's heap (which
/// asks for huge pages, where a buffer would cost its whole size as soon as it exists): a
/// page takes RAM only once the kernel writes received bytes into it.
pub struct PageAllocator;

impl compio::driver::BufferAllocator for PageAllocator {
    fn allocate(len: u32) -> NonNull<MaybeUninit<u8>> {
        // SAFETY: an anonymous private mapping of `len` bytes at an address the kernel
        // picks; no existing memory is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(len as usize, 4096).expect("layout"),
            );
        }
        NonNull::new(p.cast()).expect("mmap returned a null mapping")
    }

    unsafe fn deallocate(ptr: NonNull<MaybeUninit<u8>>, len: u32) {
        // SAFETY: the caller passes a mapping `allocate` made with this `len`, no longer
        // in use.
        unsafe {
            libc::munmap(ptr.as_ptr().cast(), len as usize);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taken_buffers_come_back_and_large_ones_are_freed() {
        let mut a = take();
        assert!(a.capacity() >= BUF_LEN);
        a.extend_from_slice(b"hello");
        let ptr = a.as_ptr();
        give(a);
        let b = take();
        assert!(b.is_empty());
        assert_eq!(b.as_ptr(), ptr, "the given buffer is reused");
        let mut big = Vec::with_capacity(KEEP_MAX_CAPACITY * 2);
        big.push(1u8);
        give(big);
        let c = take();
        assert!(c.capacity() <= KEEP_MAX_CAPACITY);
        let mut empty = b;
        release_if_empty(&mut empty);
        assert_eq!(empty.capacity(), 0);
        give(c);
    }

    #[test]
    fn page_allocator_maps_and_unmaps() {
        use compio::driver::BufferAllocator;
        let p = PageAllocator::allocate(RING_BUF_LEN as u32);
        // SAFETY: `p` is a fresh writable mapping of RING_BUF_LEN bytes.
        unsafe {
            p.as_ptr().cast::<u8>().write(7);
            assert_eq!(p.as_ptr().cast::<u8>().read(), 7);
            PageAllocator::deallocate(p, RING_BUF_LEN as u32);
        }
    }
}
