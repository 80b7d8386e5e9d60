//! Data files that grow as data arrives.
//!
//! A data file starts small and the store adds whole blocks to it when its free blocks
//! run short, up to a cap ([`GrowthOptions::max_device_bytes`]) or until the file system
//! would be left with less than [`GrowthOptions::fs_reserve_bytes`] free. A raw block
//! device and a RAM device keep their size.
//!
//! One growth step, on a background thread (`skerry-grow`), so no worker waits for it:
//!
//! 1. `fallocate` the file past its end to the new length and `fdatasync` it (the length
//!    and the allocation are durable);
//! 2. write the superblock copy of the next generation with the new `block_count` and
//!    `device_size_bytes`, and `fdatasync` (the update rule of the superblock: the other
//!    copy keeps the previous geometry if this write tears);
//! 3. publish: the device's shared size, the new blocks' metadata, then the new blocks in
//!    the allocator's free list.
//!
//! A new block is handed out only after step 2 is durable, so recovery, which scans the
//! blocks the superblock counts, always sees every block that may hold data. A crash
//! between steps leaves a file longer than its geometry, which is allowed (the next
//! growth uses the extra length without allocating it again).
//!
//! When to grow: ahead of need, when a device's free blocks fall to an eighth of its
//! blocks (below defrag's free-space target, so defrag is at work) and at least half of
//! the space in use holds live records (below that, defrag can make room by rewriting
//! sparse blocks, and the file is not grown for dead records); and at once, whatever
//! the live ratio, when writes are about to fail for lack of space ([`Store::space_low`],
//! or an allocation that found no block). A step adds a quarter of the device's blocks
//! (at least [`MIN_STEP_BLOCKS`], at most [`MAX_STEP_BYTES`]), so a bulk load grows the
//! file a logarithmic number of times.

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::aligned::AlignedBuf;
use crate::device::{extend_file, fs_space};
use crate::format::{Superblock, BLOCK_HEADER_BYTES, SUPERBLOCK_SLOT_BYTES};
use crate::store::{block_state, Inner};

/// How the store may grow its data files ([`StoreOptions::growth`](crate::StoreOptions)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrowthOptions {
    /// Largest size of one data file, in bytes (0: no cap but the file system's reserve).
    pub max_device_bytes: u64,
    /// Free space the file system keeps: a data file never grows past the point where
    /// less than this many bytes would be left.
    pub fs_reserve_bytes: u64,
    /// Most blocks one device may have (the index's limit).
    pub max_blocks_per_device: u64,
}

impl Default for GrowthOptions {
    fn default() -> Self {
        Self {
            max_device_bytes: 0,
            fs_reserve_bytes: DEFAULT_FS_RESERVE_BYTES,
            max_blocks_per_device: 1 << 20,
        }
    }
}

/// The file system space a growing data file leaves free by default: 1 GiB.
pub const DEFAULT_FS_RESERVE_BYTES: u64 = 1 << 30;

/// The smallest growth step, in blocks.
pub const MIN_STEP_BLOCKS: u64 = 8;

/// The largest growth step, in bytes (4 GiB).
pub const MAX_STEP_BYTES: u64 = 4 << 30;

/// After a growth that could not add a block (cap, file system reserve, I/O error), no
/// new attempt for this long.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Growth counters ([`Store::growth_stats`](crate::Store::growth_stats)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrowthStats {
    /// True when at least one device can grow.
    pub enabled: bool,
    /// Growth steps done since the store was opened.
    pub grows: u64,
    /// Growth attempts that added nothing (cap reached, file system reserve, error).
    pub refused: u64,
    /// Why the last refused attempt added nothing (empty if none was refused).
    pub last_refusal: String,
}

/// One growable device.
struct Slot {
    /// Handle for the growth's own I/O (`O_DIRECT`, blocking calls on the grower thread).
    file: File,
    path: PathBuf,
    /// The superblock as last written (its generation is the last used).
    sb: Superblock,
    /// Most blocks the device may have (cap and index limit; the file system's reserve
    /// is checked at each step).
    max_blocks: u64,
    /// No attempt before this instant (after one that added nothing).
    retry_at: Option<Instant>,
}

/// The growth state of a store ([`Inner::growth`]).
pub(crate) struct Growth {
    options: GrowthOptions,
    /// Per device (`None`: the device does not grow). Locked for a whole growth step.
    slots: Mutex<Vec<Option<Slot>>>,
    /// Per device: a growth was asked for (0: no, 1: ahead of need, 2: urgent).
    requested: Vec<AtomicU64>,
    /// Wakes the grower thread.
    signal: Mutex<bool>,
    wake: Condvar,
    thread_started: AtomicBool,
    grows: AtomicU64,
    refused: AtomicU64,
    last_refusal: Mutex<String>,
    /// Free blocks to keep beyond the reserves for writes of many blocks at once (big
    /// values, see [`Store::keep_free_blocks`](crate::Store::keep_free_blocks)): an urgent
    /// step grows while the free blocks are fewer, whatever the usual threshold.
    pub(crate) headroom_blocks: AtomicU64,
}

/// Urgency of a growth request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Urgency {
    /// Free blocks are running short: grow if the space in use is mostly live.
    Ahead = 1,
    /// Writes are about to fail: grow whatever the live ratio.
    Urgent = 2,
}

impl Growth {
    /// Growth state for devices `paths` (`None`: not growable) whose superblocks are `sbs`.
    pub(crate) fn new(
        options: GrowthOptions,
        paths: Vec<Option<PathBuf>>,
        sbs: &[Superblock],
    ) -> std::io::Result<Option<Growth>> {
        if paths.iter().all(Option::is_none) {
            return Ok(None);
        }
        let mut slots = Vec::with_capacity(paths.len());
        for (path, sb) in paths.into_iter().zip(sbs) {
            let Some(path) = path else {
                slots.push(None);
                continue;
            };
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_DIRECT | libc::O_CLOEXEC)
                .open(&path)?;
            let mut max_blocks = options.max_blocks_per_device;
            if options.max_device_bytes > 0 {
                let cap = options
                    .max_device_bytes
                    .saturating_sub(sb.first_block_offset_bytes)
                    / sb.block_size_bytes;
                max_blocks = max_blocks.min(cap.max(sb.block_count));
            }
            slots.push(Some(Slot {
                file,
                path,
                sb: *sb,
                max_blocks: max_blocks.max(sb.block_count),
                retry_at: None,
            }));
        }
        let requested = (0..slots.len()).map(|_| AtomicU64::new(0)).collect();
        Ok(Some(Growth {
            options,
            slots: Mutex::new(slots),
            requested,
            signal: Mutex::new(false),
            wake: Condvar::new(),
            thread_started: AtomicBool::new(false),
            grows: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            last_refusal: Mutex::new(String::new()),
            headroom_blocks: AtomicU64::new(0),
        }))
    }

    /// Most blocks device `d` may ever have in this run (for sizing the block table).
    pub(crate) fn max_blocks(&self, d: usize) -> Option<u64> {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots[d].as_ref().map(|s| s.max_blocks)
    }

    /// True when device `d` may grow.
    pub(crate) fn growable(&self, d: usize) -> bool {
        self.requested.len() > d && self.max_blocks(d).is_some()
    }

    pub(crate) fn stats(&self) -> GrowthStats {
        GrowthStats {
            enabled: true,
            grows: self.grows.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            last_refusal: self
                .last_refusal
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }
}

/// Asks the grower thread to grow device `d` (cheap: one atomic when already asked).
pub(crate) fn request(inner: &Arc<Inner>, d: usize, urgency: Urgency) {
    let Some(g) = inner.growth.as_ref() else {
        return;
    };
    let Some(flag) = g.requested.get(d) else {
        return;
    };
    if flag.fetch_max(urgency as u64, Ordering::AcqRel) >= urgency as u64 {
        return;
    }
    if !g.thread_started.swap(true, Ordering::AcqRel) {
        let weak = Arc::downgrade(inner);
        let spawned = std::thread::Builder::new()
            .name("skerry-grow".into())
            .spawn(move || grower(weak));
        if let Err(e) = spawned {
            tracing::error!("cannot start the data file growth thread: {e}");
            g.thread_started.store(false, Ordering::Release);
            return;
        }
    }
    let mut s = g.signal.lock().unwrap_or_else(|e| e.into_inner());
    *s = true;
    g.wake.notify_one();
}

/// The grower thread: waits for requests and serves them until the store is dropped (it
/// holds the store only while waiting at most a second, or while growing).
fn grower(store: Weak<Inner>) {
    loop {
        let Some(inner) = store.upgrade() else { return };
        let g = inner.growth.as_ref().expect("growth");
        {
            let mut asked = g.signal.lock().unwrap_or_else(|e| e.into_inner());
            if !*asked {
                asked = g
                    .wake
                    .wait_timeout(asked, Duration::from_secs(1))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            *asked = false;
        }
        for d in 0..g.requested.len() {
            let urgency = match g.requested[d].swap(0, Ordering::AcqRel) {
                0 => continue,
                1 => Urgency::Ahead,
                _ => Urgency::Urgent,
            };
            grow(&inner, d, urgency);
        }
    }
}

/// One growth step of device `d`, if it is still needed and allowed. Returns true when
/// blocks were added. Blocking: called on the grower thread, or by an allocation that
/// found no block (which then waits for the step).
pub(crate) fn grow(inner: &Inner, d: usize, urgency: Urgency) -> bool {
    let Some(g) = inner.growth.as_ref() else {
        return false;
    };
    let mut slots = g.slots.lock().unwrap_or_else(|e| e.into_inner());
    let Some(slot) = slots.get_mut(d).and_then(Option::as_mut) else {
        return false;
    };
    if slot.retry_at.is_some_and(|t| Instant::now() < t) {
        return false;
    }
    let count = inner.blocks[d].len();
    let free = inner.free_on_device(d);
    // Still needed? (Another step, or reclaim, may have made room meanwhile.)
    let headroom = g.headroom_blocks.load(Ordering::Relaxed);
    let short = free <= ahead_threshold(count) + inner.reserved_free_blocks()
        || (urgency == Urgency::Urgent && free < headroom + inner.reserved_free_blocks());
    let needed = match urgency {
        Urgency::Ahead => short && mostly_live(inner, d),
        Urgency::Urgent => short,
    };
    if !needed {
        return false;
    }
    let block = slot.sb.block_size_bytes;
    let want = (count / 4)
        .max(MIN_STEP_BLOCKS)
        .min((MAX_STEP_BYTES / block).max(1));
    let by_cap = slot.max_blocks.saturating_sub(count);
    let by_fs = match fs_space(&slot.file) {
        Ok((avail, _)) => {
            let cur_len = slot.file.metadata().map(|m| m.len()).unwrap_or(0);
            let end = slot.sb.first_block_offset_bytes + count * block;
            // Space already allocated past the last block (an earlier step that crashed
            // before its superblock update) costs nothing more.
            let spare = cur_len.saturating_sub(end);
            (avail.saturating_sub(g.options.fs_reserve_bytes) + spare) / block
        }
        Err(e) => {
            refuse(
                g,
                slot,
                format!("cannot read the file system's free space: {e}"),
            );
            return false;
        }
    };
    let add = want.min(by_cap).min(by_fs);
    if add == 0 {
        let why = if by_cap == 0 {
            format!(
                "{} reached its size limit ({} blocks; data-size)",
                slot.path.display(),
                slot.max_blocks
            )
        } else {
            format!(
                "the file system of {} would keep less than {} bytes free (data-disk-reserve)",
                slot.path.display(),
                g.options.fs_reserve_bytes
            )
        };
        refuse(g, slot, why);
        return false;
    }
    let new_count = count + add;
    let new_len = slot.sb.first_block_offset_bytes + new_count * block;
    let started = Instant::now();
    if let Err(e) = extend_file(&slot.file, new_len).and_then(|()| slot.file.sync_data()) {
        refuse(
            g,
            slot,
            format!(
                "cannot extend {} to {new_len} bytes: {e}",
                slot.path.display()
            ),
        );
        return false;
    }
    let mut sb = slot.sb;
    sb.block_count = new_count;
    sb.device_size_bytes = new_len;
    sb.generation += 1;
    let mut buf = AlignedBuf::zeroed(SUPERBLOCK_SLOT_BYTES, inner.align_bytes_of(d));
    sb.encode(&mut buf);
    let written = slot
        .file
        .write_all_at(&buf[..], sb.slot_offset_bytes())
        .and_then(|()| slot.file.sync_data());
    if let Err(e) = written {
        // The copy of this generation may be torn: the next update must use another
        // generation (the previous copy is intact and still describes the old geometry).
        slot.sb.generation = sb.generation;
        refuse(
            g,
            slot,
            format!(
                "cannot update the superblock of {}: {e}",
                slot.path.display()
            ),
        );
        return false;
    }
    slot.sb = sb;
    slot.retry_at = None;
    inner.publish_blocks(d, new_count, new_len);
    g.grows.fetch_add(1, Ordering::Relaxed);
    tracing::info!(
        device = d,
        blocks = new_count,
        size_bytes = new_len,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "data file {} grown to {:.2} GiB",
        slot.path.display(),
        new_len as f64 / (1u64 << 30) as f64
    );
    true
}

fn refuse(g: &Growth, slot: &mut Slot, why: String) {
    slot.retry_at = Some(Instant::now() + RETRY_AFTER);
    g.refused.fetch_add(1, Ordering::Relaxed);
    let mut last = g.last_refusal.lock().unwrap_or_else(|e| e.into_inner());
    if *last != why {
        tracing::warn!("data file not grown: {why}");
        *last = why;
    }
}

/// Free blocks of a device at or under which it grows ahead of need: an eighth of its
/// blocks (at least 2).
pub(crate) fn ahead_threshold(block_count: u64) -> u64 {
    (block_count / 8).max(2)
}

/// True when at least half of the record space of device `d`'s blocks in use holds live
/// records (one pass over the device's block metadata).
fn mostly_live(inner: &Inner, d: usize) -> bool {
    let metas = &inner.blocks[d];
    let area = inner.block_size_of(d) - BLOCK_HEADER_BYTES as u64;
    let (mut used, mut live) = (0u64, 0u64);
    for m in metas.iter() {
        let state = m.state.load(Ordering::Relaxed);
        if matches!(state, block_state::FREE | block_state::RESERVED) {
            continue;
        }
        used += area;
        live += m.live_bytes.load(Ordering::Relaxed);
    }
    live * 2 >= used
}
