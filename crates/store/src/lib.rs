//! Skerry's storage engine: devices, the on-device format, the per-worker log
//! writer and reader, and recovery (later: index checkpoints, value cache,
//! defrag). It knows nothing of Redis commands.
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
//! * [`Store`]: opens/formats the devices, runs [`recovery`], shares the block
//!   allocator and the per-block live-byte accounting between workers
//!   ([`StoreStats`]).
//! * [`LatencyHistogram`] / [`IoLatency`]: each writer's device read, write
//!   and fdatasync latencies (INFO storage, `/metrics`).
//! * [`Writer`]: one per worker; appends, flushes, group commit, reads,
//!   releases of obsolete records, reclaim of dead blocks, a tombstone
//!   reserve block, adoption of a recovered open block.
//! * [`checkpoint`]: what an index checkpoint needs from the store (the sealed
//!   blocks it covers, [`Store::open_with_checkpoint`]).
//! * [`defrag`]: the block a worker should rewrite next ([`Store::defrag_victim`])
//!   and a block's records read back for it ([`Writer::read_block`]).
//!
//! See `docs/storage-engine.md`.

#![deny(missing_docs)]

mod aligned;
pub mod checkpoint;
pub mod defrag;
pub mod device;
mod error;
pub mod format;
pub mod grow;
mod latency;
mod reader;
pub mod recovery;
mod store;
mod writer;

pub use aligned::{AlignedBuf, ImagePiece, WriteBuf, MIN_ALIGN_BYTES};
pub use checkpoint::SealedBlock;
pub use defrag::{BlockImage, DefragOutlook, DefragPolicy, Victim, VictimReason};
pub use device::{AnyDevice, Device, FileDevice};
pub use error::{Result, StoreError};
pub use grow::{GrowthOptions, GrowthStats};
pub use latency::{IoLatency, LatencyHistogram, LATENCY_BUCKETS};
pub use reader::RecordBytes;
pub use recovery::{
    DamagedRecord, IndexEntry, Recovered, RecoveredIndex, RecoveredOpenBlock, RecoveredRecord,
    Recovery, Truncation,
};
pub use store::{AllocatedBlock, BlockId, Location, Store, StoreOptions, StoreStats};
pub use writer::{Durability, Writer, WriterStats};

/// Yields once to the other tasks of the calling thread's runtime: returns `Pending` once,
/// after waking itself, so long work can let a worker's connections run between its steps
/// (the writer between two copies of a flush, the server's index checkpoints).
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await
}
