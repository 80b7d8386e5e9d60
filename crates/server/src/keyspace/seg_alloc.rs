//! The allocator of the index's segment tables: a table of [`MAP_MIN_BYTES`] or more is its
//! own anonymous mapping, returned to the OS when the table is freed; smaller ones come
//! from the global allocator.
//!
//! Why: a segment's table is rebuilt as it fills and replaced when the segment splits, so
//! the index frees a table of every size it grows through. mimalloc keeps such freed
//! blocks; at 10,000,000 keys that was ~200 MB of RSS over the tables' 554 MB (measured
//! with `storage_index_bytes` and VmRSS; the same inserts under glibc, which maps blocks
//! this large, cost only 8% over the tables).
//!
//! Every segment of a large index holds one mapping: about 2,000 at 10M keys, 20,000 at
//! 100M keys, below Linux's default `vm.max_map_count` (65,530).

use std::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator, Global, Layout};

/// Tables at least this large are anonymous mappings.
pub const MAP_MIN_BYTES: usize = 128 << 10;

/// Mappings are page aligned; a larger alignment goes to the global allocator.
const PAGE_BYTES: usize = 4096;

#[inline]
fn mapped(layout: &Layout) -> bool {
    layout.size() >= MAP_MIN_BYTES && layout.align() <= PAGE_BYTES
}

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct SegAlloc;

// SAFETY: blocks from `allocate` stay valid until `deallocate` with the same layout (a
// mapping lives until it is unmapped; the global allocator keeps its own contract), the
// size-based choice between the two is the same for a block's allocate and deallocate
// (the trait requires the same layout), and copies of `SegAlloc` are interchangeable
// (it has no state).
unsafe impl Allocator for SegAlloc {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if !mapped(&layout) {
            return Global.allocate(layout);
        }
        // SAFETY: an anonymous private mapping of a non-zero length with no address hint
        // has no preconditions; the kernel returns zeroed, page-aligned memory or
        // MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                layout.size(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(AllocError);
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(AllocError)?;
        Ok(NonNull::slice_from_raw_parts(ptr, layout.size()))
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if !mapped(&layout) {
            // SAFETY: the caller passes a block `allocate` got from `Global` with this
            // layout (same size, so the same choice above).
            unsafe { Global.deallocate(ptr, layout) };
            return;
        }
        // SAFETY: `ptr` is a mapping of `layout.size()` bytes made by `allocate` (same
        // layout, same choice) and the caller frees it once.
        let rc = unsafe { libc::munmap(ptr.as_ptr().cast(), layout.size()) };
        debug_assert_eq!(rc, 0, "munmap of an index table failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_blocks_round_trip() {
        for size in [16usize, 4096, MAP_MIN_BYTES - 8, MAP_MIN_BYTES, 3 << 20] {
            let layout = Layout::from_size_align(size, 16).unwrap();
            let block = SegAlloc.allocate(layout).unwrap();
            let p = block.cast::<u8>();
            // SAFETY: the block is `size` bytes, writable, ours until deallocated below.
            unsafe {
                std::ptr::write_bytes(p.as_ptr(), 0xAB, size);
                assert_eq!(*p.as_ptr().add(size - 1), 0xAB);
                SegAlloc.deallocate(p, layout);
            }
        }
    }
}
