//! Write stalls: when the data devices are nearly full but space can come back (releases
//! waiting for a sync, blocks waiting for reclaim, sparse blocks for defrag), a command that
//! may add data (`denyoom`, as Redis's maxmemory check) waits for room instead of failing.
//!
//! The first stalled connection of a worker makes room itself (a sync, which applies the
//! releases of overwritten records, then reclaim); the others poll. The worker's defrag
//! loop runs meanwhile without its rate limit (see `crate::defrag`). A stall ends when space
//! is no longer low, when nothing could come back (the live data fills the devices: the
//! command then fails with the usual no-space error), or after
//! `storage-write-stall-max-ms` (0: never stall).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::worker::{local_shard, Shared};

/// Write stalls since start (all workers).
pub static STALLS: AtomicU64 = AtomicU64::new(0);
/// Milliseconds commands spent stalled (all workers).
pub static STALLED_MS: AtomicU64 = AtomicU64::new(0);
/// Stalls that ended without room (timeout, or nothing could come back).
pub static STALLS_FAILED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// A connection of this worker is syncing and reclaiming for the stalled ones.
    static MAKING_ROOM: Cell<bool> = const { Cell::new(false) };
}

/// True when space is low on the data devices (one atomic load; the fast path of every
/// `denyoom` command).
pub fn space_low() -> bool {
    local_shard().borrow().keyspace.log().store().space_low()
}

/// Waits until a write can find room (see the module doc). Call when [`space_low`].
pub async fn wait_for_room(shared: &Shared) {
    let max_ms = shared.config.get_i64("storage-write-stall-max-ms").max(0) as u64;
    if max_ms == 0 {
        return;
    }
    let log = local_shard().borrow().keyspace.log().clone();
    let store = log.store().clone();
    let started = Instant::now();
    STALLS.fetch_add(1, Ordering::Relaxed);
    let mut ok = false;
    loop {
        if !MAKING_ROOM.get() {
            MAKING_ROOM.set(true);
            let r = async {
                log.commit().await?;
                log.reclaim().await
            }
            .await;
            MAKING_ROOM.set(false);
            if let Err(e) = r {
                tracing::error!("making room for a write failed: {e}");
                break;
            }
        }
        if !store.space_low() {
            ok = true;
            break;
        }
        // Could anything come back? Garbage of at least two blocks' worth (or blocks
        // waiting for reclaim); otherwise the live data fills the devices.
        let st = store.stats();
        let garbage = (st.used_blocks * st.block_size_bytes).saturating_sub(st.live_bytes);
        if garbage < 2 * st.block_size_bytes && st.pending_reclaim_blocks == 0 {
            break;
        }
        if started.elapsed() >= Duration::from_millis(max_ms) {
            tracing::warn!(
                "a write waited {max_ms} ms for room on the data devices (storage-write-stall-max-ms); it fails"
            );
            break;
        }
        compio::time::sleep(Duration::from_millis(1)).await;
    }
    if !ok {
        STALLS_FAILED.fetch_add(1, Ordering::Relaxed);
    }
    STALLED_MS.fetch_add(started.elapsed().as_millis() as u64, Ordering::Relaxed);
}
