//! Write stalls: when the data devices are nearly full but space can come back (releases
//! waiting for a sync, blocks waiting for reclaim, sparse blocks for defrag), a command that
//! may add data (`denyoom`, as Redis's maxmemory check) waits for room instead of failing.
//!
//! The first stalled connection of a worker makes room itself (`Writer::reclaim`, which
//! first syncs when releases of overwritten records are pending, applying them); the
//! others poll. The worker's defrag
//! loop runs meanwhile without its rate limit (see `crate::defrag`). A stall ends when space
//! is no longer low, when nothing came back for 300 ms (no block freed, nothing copied by
//! defrag: the live data fills the devices, and the command fails with the usual no-space
//! error), or after `storage-write-stall-max-ms` (0: never stall).

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

/// Writes that waited for the worker's staged blocks to reach the devices
/// (`storage-write-backlog-max-mb`).
pub static BACKLOG_WAITS: AtomicU64 = AtomicU64::new(0);

/// Bytes of full blocks' staging images of one worker waiting for the devices beyond which
/// writes wait for a sync first (`storage-write-backlog-max-mb`, 128 by default): when
/// clients write faster than the devices take the bytes, the backlog (RAM) stays bounded
/// instead of growing with the excess (decision 0021).
fn backlog_max_bytes(shared: &Shared) -> u64 {
    shared
        .config
        .hot
        .write_backlog_max_bytes
        .load(Ordering::Relaxed)
}

/// A stall gives up when no block was freed and defrag copied nothing for this long.
const NO_PROGRESS: Duration = Duration::from_millis(300);

thread_local! {
    /// A connection of this worker is syncing and reclaiming for the stalled ones.
    static MAKING_ROOM: Cell<bool> = const { Cell::new(false) };
    /// The progress mark when a stall of this worker last gave up.
    static LAST_FAILED: Cell<Option<(u64, u64, u64)>> = const { Cell::new(None) };
}

/// True when a write must wait before it runs: the data devices are nearly full
/// ([`space_low`]) or this worker's staged backlog is over `storage-write-backlog-max-mb`.
/// Cheap: a few loads.
#[inline]
pub fn writes_must_wait() -> bool {
    let shard = local_shard();
    let s = shard.borrow();
    let log = s.keyspace.log();
    log.store().space_low() || log.sealed_staged_bytes() > backlog_max_bytes(&s.shared)
}

/// Waits for what [`writes_must_wait`] found: room on the devices, then the backlog synced.
pub async fn wait_before_write(shared: &Shared) {
    if space_low() {
        wait_for_room(shared).await;
    }
    let log = local_shard().borrow().keyspace.log().clone();
    if log.sealed_staged_bytes() > backlog_max_bytes(shared) {
        BACKLOG_WAITS.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = log.commit().await {
            tracing::error!("data file sync failed: {e}");
        }
    }
}

/// True when space is low on the data devices (one atomic load).
pub fn space_low() -> bool {
    local_shard().borrow().keyspace.log().store().space_low()
}

/// Waits until a write can find room (see the module doc). Call when [`space_low`].
pub async fn wait_for_room(shared: &Shared) {
    wait_until(shared, |store| !store.space_low()).await
}

/// The data blocks command `name` may take when it writes big strings (decision 0019): its
/// arguments longer than a chunk; for RESTORE and RESTORE-ASKING the string its payload
/// restores to (a DUMP payload may be LZF-compressed far below a chunk); for SETRANGE,
/// SETBIT and BITFIELD the string their offsets grow the value to, at most (a small
/// argument can make a value of hundreds of MiB). 0 for every other command. The argument lengths are looked
/// at first: almost no command has a big one.
#[inline]
pub fn command_write_blocks(name: &str, argv: &[&[u8]]) -> u64 {
    let blocks = big_write_blocks(argv);
    if blocks > 0 || argv.len() < 4 {
        return blocks;
    }
    // Parsed as the handlers parse it: a non-negative integer.
    let offset = || crate::commands::parse_i64(argv[2]).and_then(|o| u64::try_from(o).ok());
    let len = match name {
        "restore" | "restore-asking" => skerry_codec::string_payload_len(argv[3]),
        "setrange" => offset().map(|o| o.saturating_add(argv[3].len() as u64)),
        "setbit" => offset().map(|bit| bit / 8 + 1),
        "bitfield" => crate::commands::bitops::grown_len(argv),
        _ => None,
    };
    let chunk = crate::keyspace::chunked::STRING_CHUNK_BYTES as u64;
    match len {
        // Past Redis's largest string the handler refuses it: nothing to wait for.
        Some(len) if len > chunk && len <= MAX_STRING_BYTES => string_blocks(len),
        _ => 0,
    }
}

/// The longest string a command can make (Redis's `proto-max-bulk-len` at its largest
/// default, 512 MiB).
const MAX_STRING_BYTES: u64 = 512 << 20;

/// The data blocks `argv`'s arguments take when written as big strings (those longer than
/// a chunk); 0 when none is.
#[inline]
pub fn big_write_blocks(argv: &[&[u8]]) -> u64 {
    let chunk = crate::keyspace::chunked::STRING_CHUNK_BYTES;
    let bytes: u64 = argv
        .iter()
        .filter(|a| a.len() > chunk)
        .map(|a| a.len() as u64)
        .sum();
    if bytes == 0 {
        return 0;
    }
    string_blocks(bytes)
}

/// The data blocks `bytes` of big string take on this worker's store, as
/// `keyspace::chunked` counts them.
fn string_blocks(bytes: u64) -> u64 {
    let record_bytes = local_shard()
        .borrow()
        .keyspace
        .log()
        .store()
        .max_record_bytes();
    crate::keyspace::chunked::blocks_for_bytes(bytes, record_bytes)
}

/// Waits until `blocks` free blocks are there for a big write (a growing data file is
/// asked to grow; releases and reclaim make room as in [`wait_for_room`]), and one block
/// more per worker: until the write runs on its owner, each worker may open a new block
/// for other writes (a fresh data file's first writes do).
pub async fn wait_for_blocks(shared: &Shared, blocks: u64) {
    let blocks = blocks + shared.workers as u64;
    if local_shard()
        .borrow()
        .keyspace
        .log()
        .store()
        .has_room_for_blocks(blocks)
    {
        return;
    }
    wait_until(shared, |store| store.has_room_for_blocks(blocks)).await
}

/// Before a copy of `value` to another worker (RENAME, COPY): waits for the blocks it
/// takes when it is a big string ([`wait_for_blocks`]); at once otherwise.
pub async fn wait_for_value_blocks(shared: &Shared, value: &crate::keyspace::Value) {
    let crate::keyspace::Value::Str(v) = value else {
        return;
    };
    let blocks = big_write_blocks(&[v]);
    if blocks > 0 {
        wait_for_blocks(shared, blocks).await;
    }
}

/// The stall loop of [`wait_for_room`], until `enough`.
async fn wait_until(shared: &Shared, enough: impl Fn(&skerry_store::Store) -> bool) {
    let max_ms = shared.config.get_i64("storage-write-stall-max-ms").max(0) as u64;
    if max_ms == 0 {
        return;
    }
    let log = local_shard().borrow().keyspace.log().clone();
    let store = log.store().clone();
    let started = Instant::now();
    STALLS.fetch_add(1, Ordering::Relaxed);
    let mark = || {
        let (free, reclaimed) = store.space_mark();
        (
            free,
            reclaimed,
            crate::defrag::COUNTERS.records.load(Ordering::Relaxed),
        )
    };
    let (mut progress, mut progress_at) = (mark(), Instant::now());
    let mut ok = false;
    loop {
        if !MAKING_ROOM.get() {
            MAKING_ROOM.set(true);
            // reclaim syncs first when releases are pending (that applies them).
            let r = log.reclaim().await;
            MAKING_ROOM.set(false);
            if let Err(e) = r {
                tracing::error!("making room for a write failed: {e}");
                break;
            }
        }
        if enough(&store) {
            ok = true;
            break;
        }
        if LAST_FAILED.get() == Some(mark()) {
            // Nothing changed since the last stall of this worker gave up: fail at once
            // (a full device answers as fast as Redis at maxmemory).
            break;
        }
        // Is space coming back (blocks freed or allocated, defrag copying)? If nothing
        // moved for a while, the live data fills the devices (or what is dead cannot be
        // freed yet): the write fails instead of waiting out the maximum.
        let now_mark = mark();
        if now_mark != progress {
            (progress, progress_at) = (now_mark, Instant::now());
        } else if progress_at.elapsed() >= NO_PROGRESS {
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
    if ok {
        LAST_FAILED.set(None);
    } else {
        LAST_FAILED.set(Some(mark()));
        STALLS_FAILED.fetch_add(1, Ordering::Relaxed);
    }
    STALLED_MS.fetch_add(started.elapsed().as_millis() as u64, Ordering::Relaxed);
}
