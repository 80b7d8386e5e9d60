//! Defrag: each worker rewrites the live records of sparse blocks at the log head, so their
//! space comes back, and rewrites the log tail when it holds tombstone blocks back (the
//! tombstones of blocks that are otherwise empty are dropped once every older block is
//! gone). The store picks the blocks (`skerry_store::defrag`), the keyspace decides which
//! records are still current (`keyspace::defrag`); this module paces the work.
//!
//! Settings (CONFIG names, also `DEFRAG SET`): `storage-defrag` (yes/no),
//! `storage-defrag-live-ratio` (percent), `storage-defrag-free-target` (percent of blocks),
//! `storage-defrag-max-mb-per-sec` (device bytes read plus rewritten, per process),
//! `storage-defrag-tombstone-blocks` (tombstone backlog that triggers a tail rewrite),
//! `storage-defrag-interval-ms`. `DEFRAG PAUSE` / `RESUME` stop and restart it at once.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use skerry_store::{BlockId, DefragPolicy, VictimReason};

use crate::keyspace::Relocation;
use crate::worker::{local_shard, unix_ms, Shared};

/// One step of a block's rewrite, between two pauses that let the worker's connections run:
/// at most this many records copied (a copy of a 1 KiB record costs about 2 µs), records
/// looked at for this long, and, when every record found so far has been looked at, this
/// many bytes of the block scanned for more (CRC-checked, about 150 µs per MiB): about
/// 230 µs in all. A sealed block with a sound summary, the usual victim, lists all its
/// records at once and needs no scan: only the values of the records still live are read
/// and checked (`skerry_store::BlockImage`, decision 0025). (Smaller steps, 100 µs and
/// 256 KiB, stretched a block's rewrite over more time, and its 8 MiB device reads then
/// delayed more cold GETs: p99.9 of the first GET pass after a SET burst 5.3–6.1 ms
/// against 1.8–2.1 ms.) A step is the longest a client of the worker waits for defrag
/// (decision 0021); while writes wait for space, steps are four times larger.
const CHUNK_MOVED_RECORDS: u64 = 64;
const CHUNK_TIME: Duration = Duration::from_micros(150);
const CHUNK_SCANNED_BYTES: usize = 512 << 10;

/// Records whose index entries are prefetched together, a batch ahead of the lookups.
const PREFETCH_RECORDS: usize = crate::keyspace::PREFETCH_MAX_KEYS;

/// How long the buffer of the last block read stays for the next one. Under a steady
/// write load defrag finds a block every few hundred milliseconds; dropping the buffer
/// in between cost an unmap of 8 MiB (0.4–1.2 ms, while the worker's clients wait) and a
/// fresh mapping faulted in by the next read.
const SPARE_KEPT: Duration = Duration::from_secs(10);

/// While space is low, how often a worker with nothing to rewrite syncs and reclaims.
const ROOM_INTERVAL: Duration = Duration::from_millis(10);

/// The pause between chunks (a timer, so the worker's I/O completions are polled).
const CHUNK_PAUSE: Duration = Duration::from_millis(1);

/// Process-wide defrag counters (all workers).
#[derive(Default)]
pub struct DefragCounters {
    /// Blocks whose records were all handled (their space comes back once the copies are
    /// durable).
    pub blocks: AtomicU64,
    /// Of those, log-tail blocks rewritten to let tombstone blocks go.
    pub tail_blocks: AtomicU64,
    /// Records copied to the log head.
    pub records: AtomicU64,
    /// Encoded bytes copied.
    pub bytes: AtomicU64,
    /// Bytes read from the devices for defrag.
    pub read_bytes: AtomicU64,
    /// Copies refused (no space) or blocks skipped after a read error.
    pub failures: AtomicU64,
    /// Workers rewriting a block right now.
    pub active: AtomicU64,
}

/// The counters.
pub static COUNTERS: DefragCounters = DefragCounters {
    blocks: AtomicU64::new(0),
    tail_blocks: AtomicU64::new(0),
    records: AtomicU64::new(0),
    bytes: AtomicU64::new(0),
    read_bytes: AtomicU64::new(0),
    failures: AtomicU64::new(0),
    active: AtomicU64::new(0),
};

/// Set by `DEFRAG PAUSE`, cleared by `DEFRAG RESUME`.
pub static PAUSED: AtomicBool = AtomicBool::new(false);

/// The policy from the configuration.
pub fn policy(shared: &Shared) -> DefragPolicy {
    let c = &shared.config;
    DefragPolicy {
        max_live_ratio_pct: c.get_i64("storage-defrag-live-ratio").clamp(0, 100) as u32,
        free_target_pct: c.get_i64("storage-defrag-free-target").clamp(0, 100) as u32,
        tombstone_backlog_blocks: c
            .get_i64("storage-defrag-tombstone-blocks")
            .clamp(0, 1 << 30) as u32,
    }
}

/// `running`, `paused`, `disabled` or `idle`.
pub fn state(shared: &Shared) -> &'static str {
    if shared.config.get("storage-defrag") != "yes" {
        "disabled"
    } else if PAUSED.load(Ordering::Relaxed) {
        "paused"
    } else if COUNTERS.active.load(Ordering::Relaxed) > 0 {
        "running"
    } else {
        "idle"
    }
}

/// Marks a worker busy with a block for as long as it lives.
struct Active;

impl Active {
    fn new() -> Active {
        COUNTERS.active.fetch_add(1, Ordering::Relaxed);
        Active
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        COUNTERS.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The defrag loop of worker `worker` (spawned next to its cron task).
pub async fn run(shared: Arc<Shared>, worker: usize) {
    // Blocks (with their block sequence) this worker has handled: a handled block never
    // gets live records of this worker again, so it is not read twice.
    let mut done: HashSet<(BlockId, u64)> = HashSet::new();
    let mut tokens_bytes: f64 = 0.0;
    let mut last = Instant::now();
    // After a block, the next one is looked for at once; when idle, every interval.
    let mut busy = false;
    // The last image's buffer, read into again by the next block; dropped once no block
    // has needed it for `SPARE_KEPT`, so an idle worker holds no block-sized buffer.
    let mut spare: Option<skerry_store::AlignedBuf> = None;
    let mut last_block = Instant::now();
    let mut last_room = Instant::now();
    loop {
        let interval_ms = shared.config.get_i64("storage-defrag-interval-ms").max(1) as u64;
        let low = crate::space::space_low();
        let pause = if busy || low {
            CHUNK_PAUSE
        } else {
            Duration::from_millis(interval_ms)
        };
        busy = false;
        compio::time::sleep(pause).await;
        if shared.stopping.load(Ordering::Relaxed) {
            return;
        }
        let now = Instant::now();
        let dt = now.duration_since(last).as_secs_f64();
        last = now;
        if shared.config.get("storage-defrag") != "yes" || PAUSED.load(Ordering::Relaxed) {
            tokens_bytes = 0.0;
            continue;
        }
        let shard = local_shard();
        let log = shard.borrow().keyspace.log().clone();
        let store = log.store().clone();
        let block_bytes = store.block_size_bytes(0) as f64;
        let rate = shared
            .config
            .get_i64("storage-defrag-max-mb-per-sec")
            .max(1) as f64
            * 1e6
            / shared.workers.max(1) as f64;
        // Enough burst for one full block (read plus rewrite), so any rate makes progress.
        tokens_bytes = (tokens_bytes + rate * dt).min((2.0 * block_bytes).max(rate));
        done.retain(|(id, seq)| store.block_seq(*id) == *seq);
        let policy = policy(&shared);
        let Some(victim) =
            store.defrag_victim(worker as u16, &policy, |id, seq| done.contains(&(id, seq)))
        else {
            if last_block.elapsed() >= SPARE_KEPT {
                spare = None;
            }
            if low && last_room.elapsed() >= ROOM_INTERVAL {
                // Space is low and nothing to rewrite: apply this worker's releases and
                // reclaim what they free (the other workers' stalled writes wait on it).
                last_room = Instant::now();
                if let Err(e) = log.reclaim().await {
                    tracing::error!("defrag: making room failed: {e}");
                }
            }
            continue;
        };
        // Under half the free-space target the device is close to full: no rate limit.
        let total_blocks: u64 = (0..store.device_count() as u16)
            .map(|d| store.block_count(d))
            .sum();
        let urgent = store.free_blocks() * 200 < total_blocks * u64::from(policy.free_target_pct);
        let cost = block_bytes + victim.live_bytes as f64;
        if !urgent {
            if tokens_bytes < cost {
                continue;
            }
            tokens_bytes -= cost;
        }
        busy = true;
        let _active = Active::new();
        let mut image = match log
            .read_block(victim.id, victim.block_seq, spare.take())
            .await
        {
            Ok(Some(image)) => image,
            Ok(None) => continue,
            Err(e) => {
                tracing::error!(?victim, "defrag: reading the block failed: {e}");
                COUNTERS.failures.fetch_add(1, Ordering::Relaxed);
                done.insert((victim.id, victim.block_seq));
                continue;
            }
        };
        COUNTERS
            .read_bytes
            .fetch_add(block_bytes as u64, Ordering::Relaxed);
        let mut next = 0usize;
        // Records whose index entries have been prefetched: `..prefetched_to`.
        let mut prefetched_to = 0usize;
        let mut complete = true;
        // Writes are waiting for space: bigger steps (connections wait longer between
        // them, but their writes are waiting anyway). Free space under half the target
        // without writes waiting lifts only the rate limit: the clients would wait for
        // bigger steps for nothing (600 µs steps, p99.9 of SET at pipeline 1 up to
        // 1.1 ms, with a data file kept small by defrag).
        let budget: usize = if low { 4 } else { 1 };
        loop {
            if shard.borrow().hold.is_some() {
                // A multi-worker transaction owns the shard: wait for it.
                compio::time::sleep(Duration::from_millis(1)).await;
                continue;
            }
            {
                let started = Instant::now();
                let mut s = shard.borrow_mut();
                if store.block_seq(victim.id) != victim.block_seq {
                    // Reclaimed meanwhile (every record became obsolete).
                    break;
                }
                if next == image.len() {
                    image.scan(CHUNK_SCANNED_BYTES * budget);
                }
                let now_ms = unix_ms();
                let (mut moved, mut bytes, mut looked) = (0u64, 0u64, 0usize);
                while next < image.len() && moved < budget as u64 * CHUNK_MOVED_RECORDS {
                    if prefetched_to < image.len() && prefetched_to <= next + PREFETCH_RECORDS {
                        // The index entries of the next batch of records, a batch ahead.
                        let to = (prefetched_to + PREFETCH_RECORDS).min(image.len());
                        s.keyspace
                            .prefetch_relocations((prefetched_to..to).map(|i| image.record(i).2));
                        prefetched_to = to;
                    }
                    let (loc, meta, key) = image.record(next);
                    match s.keyspace.relocate(
                        key,
                        &loc,
                        meta.value_type,
                        || image.value(next),
                        now_ms,
                    ) {
                        Ok(Relocation::Moved) => {
                            moved += 1;
                            bytes += u64::from(loc.len_bytes);
                        }
                        Ok(Relocation::Obsolete) | Ok(Relocation::Damaged) => {}
                        Ok(Relocation::Refused) => {
                            complete = false;
                            break;
                        }
                        Err(e) => {
                            tracing::error!(?victim, "defrag: copy failed: {e}");
                            complete = false;
                            break;
                        }
                    }
                    next += 1;
                    looked += 1;
                    if looked.is_multiple_of(32) && started.elapsed() >= CHUNK_TIME * budget as u32
                    {
                        break;
                    }
                }
                COUNTERS.records.fetch_add(moved, Ordering::Relaxed);
                COUNTERS.bytes.fetch_add(bytes, Ordering::Relaxed);
                if !complete {
                    COUNTERS.failures.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
            if next == image.len() && image.scanned() {
                break;
            }
            // Let the worker's connections run between steps.
            compio::time::sleep(CHUNK_PAUSE).await;
        }
        spare = Some(image.into_buf());
        last_block = Instant::now();
        if !complete {
            // No room for the copies (or an error): wait an interval before trying again.
            busy = false;
            continue;
        }
        done.insert((victim.id, victim.block_seq));
        COUNTERS.blocks.fetch_add(1, Ordering::Relaxed);
        if victim.reason == VictimReason::LogTail {
            COUNTERS.tail_blocks.fetch_add(1, Ordering::Relaxed);
        }
        // Reclaim now (it syncs first, so the copies are durable and the victim's releases
        // apply) so the block comes back without waiting for the next tick.
        if let Err(e) = log.reclaim().await {
            tracing::error!("defrag: reclaim failed: {e}");
        }
    }
}
