//! The store handle: opens or formats the data devices, runs recovery, and
//! owns the shared block allocator and the per-block space accounting.
//!
//! [`Store`] is a cheap clone (`Arc`) shared by every worker. It holds only
//! what all workers need: per-device geometry, per block its block sequence
//! (lock-free reads, used to check record CRCs), live bytes, tombstone flag
//! and life-cycle state (atomics: any worker may release a record in a block
//! another worker wrote; reclaim claims a block with one compare-and-swap of
//! its state), and the free block allocator behind a `Mutex` (one allocation
//! per block, e.g. 8 MiB of writes). Device handles are per worker:
//! [`Store::open_devices`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use compio::BufResult;

use crate::device::{AnyDevice, Device, RamControl};
use crate::error::{Result, StoreError};
use crate::format::{
    format_device, read_superblock, FormatParams, Superblock, SuperblockError, BLOCK_HEADER_BYTES,
    DEFAULT_BLOCK_SIZE_BYTES, SUPERBLOCK_SLOT_BYTES,
};
use crate::grow::{self, Growth, GrowthOptions, GrowthStats, Urgency};
use crate::recovery::{self, Recovered, RecoveredOpenBlock, RecoveredRecord, Recovery};
use crate::{AlignedBuf, FileDevice};

/// Options used when formatting fresh devices (ignored for formatted ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// Block size of freshly formatted devices (power of two, 64 KiB..1 GiB).
    pub block_size_bytes: u64,
    /// Data files (not block devices, not RAM devices) grow as data arrives, within these
    /// limits (see [`crate::grow`]); `None`: every device keeps its size.
    pub growth: Option<GrowthOptions>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            block_size_bytes: DEFAULT_BLOCK_SIZE_BYTES,
            growth: None,
        }
    }
}

/// One block of one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId {
    /// Device index (the superblock's `device_index`).
    pub device: u16,
    /// Block index on the device.
    pub block: u32,
}

/// A block handed out by [`Store::alloc_block`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocatedBlock {
    /// Which block.
    pub id: BlockId,
    /// Its new block sequence (store-wide monotonic; seeds record CRCs).
    pub block_seq: u64,
}

/// Where a new worker handle of a device comes from.
enum DeviceSource {
    File(PathBuf),
    Ram(RamControl),
}

/// Immutable facts about one device.
pub(crate) struct DeviceInfo {
    pub(crate) superblock: Superblock,
    pub(crate) align_bytes: usize,
    source: DeviceSource,
}

/// Life-cycle states of a block ([`BlockMeta::state`]).
pub(crate) mod block_state {
    /// In the allocator's free list (no block sequence).
    pub(crate) const FREE: u8 = 0;
    /// Taken out of the free list as a writer's tombstone reserve; holds no
    /// data and no block sequence yet.
    pub(crate) const RESERVED: u8 = 1;
    /// Allocated to a writer (or adopted by one, see
    /// [`Writer::adopt`](crate::Writer::adopt)): its open block, or sealed
    /// with staged bytes not yet durable. Never reclaimed.
    pub(crate) const WRITING: u8 = 2;
    /// Sealed (or abandoned by its writer) and every byte durable: reclaimed
    /// once dead.
    pub(crate) const SEALED: u8 = 3;
    /// Found by recovery (sealed, or open and not adopted by a writer):
    /// reclaimable once dead, after [`Store::recovery_done`](super::Store::recovery_done).
    pub(crate) const RECOVERED: u8 = 4;
    /// Claimed by one reclaimer (its header is being zeroed).
    pub(crate) const RECLAIMING: u8 = 5;
    /// A non-data block found by recovery (checkpoint): never reclaimed.
    pub(crate) const PINNED: u8 = 6;
}

/// Shared facts about one block.
#[derive(Default)]
pub(crate) struct BlockMeta {
    /// Block sequence while in use; 0 = free or reserved.
    pub(crate) seq: AtomicU64,
    /// Encoded bytes of the block's records that are still needed (value
    /// records appended or [`Store::add_live`]d and not yet released).
    pub(crate) live_bytes: AtomicU64,
    /// The block holds at least one tombstone record.
    pub(crate) tombstones: AtomicBool,
    /// The block's header (with its block sequence) is on the device and
    /// durable: recovered, sealed and synced, or an open block whose first
    /// write was synced.
    pub(crate) header_durable: AtomicBool,
    /// One of [`block_state`].
    pub(crate) state: AtomicU8,
    /// The worker (plus one) whose writer allocated the block in this run; 0 for a block
    /// found by recovery (its keys may belong to any worker now).
    pub(crate) run_writer: AtomicU32,
}

/// Blocks per chunk of a [`BlockMetas`] table.
const META_CHUNK_BLOCKS: usize = 1024;

/// The [`BlockMeta`] of every block of one device. Grows without moving: chunks of
/// [`META_CHUNK_BLOCKS`] are allocated as the device grows, so a reference to a block's
/// metadata stays valid and lookups take no lock.
pub(crate) struct BlockMetas {
    chunks: Box<[OnceLock<Box<[BlockMeta]>>]>,
    /// Blocks the device has now.
    len: AtomicU64,
}

impl BlockMetas {
    /// A table of `len` blocks that may grow to `max_len`.
    fn new(len: u64, max_len: u64) -> Self {
        let max_len = max_len.max(len);
        let chunks = (max_len as usize).div_ceil(META_CHUNK_BLOCKS);
        let table = BlockMetas {
            chunks: (0..chunks).map(|_| OnceLock::new()).collect(),
            len: AtomicU64::new(0),
        };
        table.grow_to(len);
        table
    }

    /// Blocks the device has now.
    pub(crate) fn len(&self) -> u64 {
        self.len.load(Ordering::Acquire)
    }

    /// The metadata of block `b`.
    ///
    /// # Panics
    /// If block `b` is beyond every block the device has had in this run.
    pub(crate) fn get(&self, b: u32) -> &BlockMeta {
        let i = b as usize;
        &self.chunks[i / META_CHUNK_BLOCKS]
            .get()
            .unwrap_or_else(|| panic!("block {b} is beyond the device ({} blocks)", self.len()))
            [i % META_CHUNK_BLOCKS]
    }

    /// Every block the device has now, in block order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &BlockMeta> + '_ {
        (0..self.len() as u32).map(|b| self.get(b))
    }

    /// Makes blocks `len()..new_len` exist (free, zeroed metadata).
    fn grow_to(&self, new_len: u64) {
        assert!(
            new_len as usize <= self.chunks.len() * META_CHUNK_BLOCKS,
            "growing a block table past its bound"
        );
        for c in 0..(new_len as usize).div_ceil(META_CHUNK_BLOCKS) {
            self.chunks[c].get_or_init(|| {
                (0..META_CHUNK_BLOCKS)
                    .map(|_| BlockMeta::default())
                    .collect()
            });
        }
        self.len.fetch_max(new_len, Ordering::AcqRel);
    }
}

struct Allocator {
    /// Free blocks per device, highest index first (pop gives the lowest).
    free: Vec<Vec<u32>>,
    /// Blocks held as tombstone reserves (out of the free lists).
    reserved: u64,
    next_block_seq: u64,
    next_device: usize,
}

pub(crate) struct Inner {
    devices: Vec<DeviceInfo>,
    /// Per device, per block.
    pub(crate) blocks: Vec<BlockMetas>,
    /// Per device, its usable size in bytes, shared with every file handle of it.
    sizes: Vec<Arc<AtomicU64>>,
    /// Data files that grow (`None`: no device grows).
    pub(crate) growth: Option<Growth>,
    allocator: Mutex<Allocator>,
    /// Set after something happened that may make a block reclaimable
    /// (live bytes reached 0, a block became durable, a block was freed,
    /// recovery finished); cleared by the reclaim scan.
    reclaim_hint: AtomicBool,
    /// [`Store::recovery_done`] was called.
    pub(crate) recovery_done: AtomicBool,
    /// Blocks freed by reclaim since the store was opened.
    reclaimed_blocks: AtomicU64,
    /// Blocks in the free lists, updated under the allocator lock and read
    /// without it (a writer without a reserve checks it on every append).
    pub(crate) free_count: AtomicU64,
    /// Free blocks that value appends leave to defrag's copies
    /// ([`Store::set_defrag_reserve_blocks`]).
    defrag_reserve_blocks: AtomicU64,
    /// Free blocks, above the defrag reserve, under which space counts as low
    /// ([`Store::space_low`]).
    low_space_blocks: AtomicU64,
    /// Recovered open blocks not adopted by a writer yet
    /// ([`Writer::adopt`](crate::Writer::adopt)).
    adoptable: Mutex<HashMap<BlockId, RecoveredOpenBlock>>,
}

/// Space counters of the whole store ([`Store::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Blocks over all devices.
    pub total_blocks: u64,
    /// Blocks in the free lists (allocatable).
    pub free_blocks: u64,
    /// Free blocks held as writers' tombstone reserves.
    pub reserved_blocks: u64,
    /// Blocks holding data or being written (`total − free − reserved`).
    pub used_blocks: u64,
    /// Used blocks holding at least one tombstone.
    pub tombstone_blocks: u64,
    /// Used blocks whose records are all obsolete (live bytes 0) and that no
    /// writer is writing, waiting to be reclaimed (the log-tail rule holds
    /// tombstone blocks back; recovered blocks wait for
    /// [`Store::recovery_done`]).
    pub pending_reclaim_blocks: u64,
    /// Live bytes over all blocks (encoded record lengths).
    pub live_bytes: u64,
    /// Blocks freed by reclaim since the store was opened.
    pub reclaimed_blocks: u64,
    /// Block size of device 0, in bytes (the devices of a store are formatted
    /// together, with one block size).
    pub block_size_bytes: u64,
    /// Bytes of all data devices now (a growing data file adds blocks).
    pub device_bytes: u64,
    /// Growth steps of the data files since the store was opened.
    pub grows: u64,
    /// Growth attempts that added nothing (cap, file system reserve, I/O error).
    pub grow_refusals: u64,
}

/// The shared store handle (clone per worker).
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("devices", &self.inner.devices.len())
            .field("free_blocks", &self.free_blocks())
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens the store on `devices`, formatting them first when they are all
    /// fresh (their superblock area is all zero), then scans every block and
    /// calls `on_record` for each valid record found (see
    /// [`recovery`](crate::recovery)). Blocks holding no recovered block header
    /// are free.
    ///
    /// Errors: an unsupported format version or a damaged superblock (never
    /// overwritten), devices of different stores, a mix of fresh and
    /// formatted devices, I/O errors.
    pub async fn create_or_open(
        devices: Vec<AnyDevice>,
        options: &StoreOptions,
        mut on_record: impl FnMut(&RecoveredRecord<'_>),
    ) -> Result<(Store, Recovery)> {
        Self::create_or_open_reporting(devices, options, |r| {
            if let Recovered::Record(r) = r {
                on_record(r)
            }
        })
        .await
    }

    /// [`Store::create_or_open`] that also reports damaged records (corrupt
    /// records followed by valid ones in their block, see
    /// [`DamagedRecord`](crate::recovery::DamagedRecord)) in delivery order.
    pub async fn create_or_open_reporting(
        devices: Vec<AnyDevice>,
        options: &StoreOptions,
        on_record: impl FnMut(Recovered<'_, '_>),
    ) -> Result<(Store, Recovery)> {
        Self::open_inner(devices, options, &mut |_, _| None, on_record).await
    }

    /// [`Store::create_or_open_reporting`] after an index checkpoint: `covered(id, header)`
    /// is asked about every sealed data block; `Some(tombstones)` means the caller's
    /// checkpoint covers it (its identity, `header.block_seq`, is the one the checkpoint
    /// recorded), so its records are not read or delivered: it becomes a recovered block with
    /// that tombstone flag, whose live bytes the caller adds with [`Store::add_live`] like any
    /// other. Every other block is scanned and delivered as usual (in mutation order).
    /// [`Recovery::covered_blocks`] and [`Recovery::data_blocks_scanned`] say how many.
    pub async fn open_with_checkpoint(
        devices: Vec<AnyDevice>,
        options: &StoreOptions,
        covered: &mut dyn FnMut(BlockId, &crate::format::BlockHeader) -> Option<bool>,
        on_record: impl FnMut(Recovered<'_, '_>),
    ) -> Result<(Store, Recovery)> {
        Self::open_inner(devices, options, covered, on_record).await
    }

    async fn open_inner(
        devices: Vec<AnyDevice>,
        options: &StoreOptions,
        covered: &mut dyn FnMut(BlockId, &crate::format::BlockHeader) -> Option<bool>,
        on_record: impl FnMut(Recovered<'_, '_>),
    ) -> Result<(Store, Recovery)> {
        if devices.is_empty() || devices.len() > usize::from(u16::MAX) {
            return Err(StoreError::Config(format!(
                "need 1 to {} data devices, got {}",
                u16::MAX,
                devices.len()
            )));
        }
        let mut found = Vec::with_capacity(devices.len());
        for (i, device) in devices.iter().enumerate() {
            match read_superblock(device).await {
                Ok(sb) => found.push(Some(sb)),
                Err(SuperblockError::BadSuperblock { a, b }) => {
                    if is_fresh(device).await.map_err(|e| io_err(i as u16, 0, e))? {
                        found.push(None);
                    } else {
                        return Err(StoreError::Superblock {
                            device: i,
                            source: SuperblockError::BadSuperblock { a, b },
                        });
                    }
                }
                Err(source) => return Err(StoreError::Superblock { device: i, source }),
            }
        }
        let fresh = found.iter().filter(|f| f.is_none()).count();
        if fresh == devices.len() {
            let store_id: [u8; 16] = rand::random();
            for (i, device) in devices.iter().enumerate() {
                let params = FormatParams {
                    store_id,
                    device_index: i as u32,
                    device_count: devices.len() as u32,
                    block_size_bytes: options.block_size_bytes,
                };
                let sb = format_device(device, params)
                    .await
                    .map_err(|source| StoreError::Superblock { device: i, source })?;
                tracing::info!(
                    device = i,
                    blocks = sb.block_count,
                    block_size_bytes = sb.block_size_bytes,
                    "formatted data device"
                );
                found[i] = Some(sb);
            }
        } else if fresh > 0 {
            let i = found.iter().position(|f| f.is_none()).expect("fresh");
            return Err(StoreError::Config(format!(
                "device {i} is not formatted but the others are (add new devices offline)"
            )));
        }
        let sbs: Vec<Superblock> = found.into_iter().map(|f| f.expect("set")).collect();
        check_same_store(&sbs)?;
        // Order devices by their recorded index.
        let mut order: Vec<usize> = (0..devices.len()).collect();
        order.sort_by_key(|&i| sbs[i].device_index);
        let mut slots: Vec<Option<AnyDevice>> = devices.into_iter().map(Some).collect();
        let mut ordered = Vec::with_capacity(slots.len());
        let mut infos = Vec::with_capacity(slots.len());
        for &i in &order {
            let device = slots[i].take().expect("each once");
            let source = match &device {
                AnyDevice::File(f) => DeviceSource::File(f.path().to_path_buf()),
                AnyDevice::Ram(r) => DeviceSource::Ram(r.control()),
            };
            infos.push(DeviceInfo {
                superblock: sbs[i],
                align_bytes: device.align_bytes(),
                source,
            });
            ordered.push(device);
        }
        let growth = match options.growth {
            Some(opts) => {
                let paths = ordered
                    .iter()
                    .map(|d| match d {
                        AnyDevice::File(f) if !f.is_block_device() => Some(f.path().to_path_buf()),
                        _ => None,
                    })
                    .collect();
                let sbs: Vec<Superblock> = infos.iter().map(|d| d.superblock).collect();
                Growth::new(opts, paths, &sbs).map_err(|e| io_err(0, 0, e))?
            }
            None => None,
        };
        let sizes: Vec<Arc<AtomicU64>> = ordered
            .iter_mut()
            .map(|d| match d {
                AnyDevice::File(f) => f.shared_size(),
                AnyDevice::Ram(r) => Arc::new(AtomicU64::new(r.size_bytes())),
            })
            .collect();
        let blocks: Vec<BlockMetas> = infos
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let max = growth
                    .as_ref()
                    .and_then(|g| g.max_blocks(i))
                    .unwrap_or(d.superblock.block_count);
                BlockMetas::new(d.superblock.block_count, max)
            })
            .collect();
        let recovery = recovery::scan(&ordered, &infos, &blocks, covered, on_record).await?;
        let total_blocks: u64 = infos.iter().map(|d| d.superblock.block_count).sum();
        let free = blocks
            .iter()
            .map(|metas| {
                (0..metas.len() as u32)
                    .rev()
                    .filter(|&b| metas.get(b).state.load(Ordering::Relaxed) == block_state::FREE)
                    .collect()
            })
            .collect();
        let store = Store {
            inner: Arc::new(Inner {
                devices: infos,
                blocks,
                sizes,
                growth,
                reclaim_hint: AtomicBool::new(false),
                recovery_done: AtomicBool::new(false),
                reclaimed_blocks: AtomicU64::new(0),
                defrag_reserve_blocks: AtomicU64::new(0),
                low_space_blocks: AtomicU64::new(0),
                free_count: AtomicU64::new(0),
                adoptable: Mutex::new(recovery.open_blocks.iter().map(|b| (b.id, *b)).collect()),
                allocator: Mutex::new(Allocator {
                    free,
                    reserved: 0,
                    // A block allocated after the highest surviving header
                    // may have left records whose header was lost (a write
                    // reordered before a crash). Skipping one sequence per
                    // block keeps every new block's CRC seed unique even then.
                    next_block_seq: recovery.max_block_seq + 1 + total_blocks,
                    next_device: 0,
                }),
            }),
        };
        store.inner.update_free_count(&store.lock());
        Ok((store, recovery))
    }

    /// Number of devices.
    pub fn device_count(&self) -> usize {
        self.inner.devices.len()
    }

    /// Block size of `device`, in bytes.
    pub fn block_size_bytes(&self, device: u16) -> u64 {
        self.info(device).superblock.block_size_bytes
    }

    /// Number of blocks `device` has now (a growing data file adds blocks).
    pub fn block_count(&self, device: u16) -> u64 {
        self.inner.blocks[usize::from(device)].len()
    }

    /// Current size of `device`, in bytes.
    pub fn device_size_bytes(&self, device: u16) -> u64 {
        self.inner.sizes[usize::from(device)].load(Ordering::Acquire)
    }

    /// Growth counters of the data files (all zero and `enabled: false` when no device
    /// grows).
    pub fn growth_stats(&self) -> GrowthStats {
        self.inner
            .growth
            .as_ref()
            .map(Growth::stats)
            .unwrap_or_default()
    }

    /// Direct-I/O alignment of `device`, in bytes.
    pub fn align_bytes(&self, device: u16) -> usize {
        self.info(device).align_bytes
    }

    /// Device offset of a block's first byte (its header).
    pub fn block_offset_bytes(&self, id: BlockId) -> u64 {
        let sb = &self.info(id.device).superblock;
        debug_assert!(u64::from(id.block) < self.block_count(id.device));
        sb.first_block_offset_bytes + u64::from(id.block) * sb.block_size_bytes
    }

    /// The superblock of `device` as it was when the store was opened (its ids and block
    /// size; [`Store::block_count`] and [`Store::device_size_bytes`] give today's
    /// geometry of a growing data file).
    pub fn superblock(&self, device: u16) -> &Superblock {
        &self.info(device).superblock
    }

    /// Largest encoded record any block holds (the smallest record area).
    pub fn max_record_bytes(&self) -> u64 {
        self.inner
            .devices
            .iter()
            .map(|d| d.superblock.block_size_bytes - BLOCK_HEADER_BYTES as u64)
            .min()
            .expect("at least one device")
    }

    /// The block sequence of a block in use (0 when the block is free).
    pub fn block_seq(&self, id: BlockId) -> u64 {
        self.meta(id).seq.load(Ordering::Acquire)
    }

    /// Allocates a free block for `worker` (devices are used round-robin), or
    /// `None` when every block is in use.
    pub fn alloc_block(&self, worker: u16) -> Option<AllocatedBlock> {
        self.alloc_block_keeping(worker, 0)
    }

    /// Keeps `n` free blocks for defrag: value appends ([`Writer::append`](crate::Writer::append))
    /// get [`NoSpace`](crate::StoreError::NoSpace) rather than take the last `n` free blocks,
    /// which only defrag's copies ([`Writer::append_relocated`](crate::Writer::append_relocated))
    /// and tombstones may use. Without it a device filled by writes leaves defrag no room to
    /// copy the live records of sparse blocks into, and space never comes back.
    pub fn set_defrag_reserve_blocks(&self, n: u64) {
        self.inner.defrag_reserve_blocks.store(n, Ordering::Relaxed);
    }

    /// Free blocks kept for defrag.
    pub fn defrag_reserve_blocks(&self) -> u64 {
        self.inner.defrag_reserve_blocks.load(Ordering::Relaxed)
    }

    /// Sets how many free blocks above the defrag reserve count as "space low"
    /// ([`Store::space_low`]): typically one per writer, the blocks the writers may open
    /// next.
    pub fn set_low_space_blocks(&self, n: u64) {
        self.inner.low_space_blocks.store(n, Ordering::Relaxed);
    }

    /// True when value appends may soon get [`NoSpace`](crate::StoreError::NoSpace): free
    /// blocks are at most the defrag reserve plus [`Store::set_low_space_blocks`]. One
    /// atomic load each; callers use it to hold writes back while space comes back (a sync
    /// applying releases, reclaim, defrag).
    ///
    /// When space is low and a data file can grow, this asks for a growth step (the
    /// write stall that follows sees the new blocks as progress).
    pub fn space_low(&self) -> bool {
        let low =
            self.inner.free_count.load(Ordering::Relaxed) <= self.inner.reserved_free_blocks();
        if low && self.inner.growth.is_some() {
            for d in 0..self.inner.devices.len() {
                grow::request(&self.inner, d, Urgency::Urgent);
            }
        }
        low
    }

    /// True when value appends can take `blocks` more blocks now: that many free blocks
    /// beyond the defrag reserve and the low-space margin ([`Store::space_low`]'s). When
    /// not, a growing data file is asked to grow at once, and keeps that many blocks free
    /// from then on ([`Store::keep_free_blocks`]). For a write of many records (a big
    /// value) to check before its first append, so that a refusal changes nothing.
    pub fn has_room_for_blocks(&self, blocks: u64) -> bool {
        let free = self.inner.free_count.load(Ordering::Relaxed);
        let ok = free >= self.inner.reserved_free_blocks() + blocks;
        if !ok {
            self.keep_free_blocks(blocks);
        }
        ok
    }

    /// [`Store::has_room_for_blocks`], but a growing data file that has not the room yet
    /// grows at once, the caller waiting for the steps (as an allocation that finds no
    /// block does): a big write checked for room before it ran (and that waited for it)
    /// is not refused because the blocks it saw were taken, or its growth not yet made,
    /// by the time it appends.
    pub fn make_room_for_blocks(&self, blocks: u64) -> bool {
        if self.has_room_for_blocks(blocks) {
            return true;
        }
        let Some(g) = self.inner.growth.as_ref() else {
            return false;
        };
        // Each step adds a quarter of the blocks (at least a few): a few rounds.
        for _ in 0..8 {
            let mut grown = false;
            for d in 0..self.inner.devices.len() {
                if g.growable(d) {
                    grown |= grow::grow(&self.inner, d, Urgency::Urgent);
                }
            }
            if self.has_room_for_blocks(blocks) {
                return true;
            }
            if !grown {
                break;
            }
        }
        false
    }

    /// A growing data file keeps at least `blocks` free blocks beyond the reserves from now
    /// on (the largest such request of the run wins), growing at once if it has fewer: so
    /// that a write of that many blocks at once (a copy of a big value: RENAME, COPY, MOVE)
    /// finds room without waiting. No effect on a device that does not grow.
    pub fn keep_free_blocks(&self, blocks: u64) {
        let Some(g) = self.inner.growth.as_ref() else {
            return;
        };
        g.headroom_blocks.fetch_max(blocks, Ordering::Relaxed);
        let free = self.inner.free_count.load(Ordering::Relaxed);
        if free < self.inner.reserved_free_blocks() + blocks {
            for d in 0..self.inner.devices.len() {
                grow::request(&self.inner, d, Urgency::Urgent);
            }
        }
    }

    /// A cheap progress mark of space coming back: free blocks and blocks reclaimed so far
    /// (two atomic loads; it changes whenever a block is freed or allocated).
    pub fn space_mark(&self) -> (u64, u64) {
        (
            self.inner.free_count.load(Ordering::Relaxed),
            self.inner.reclaimed_blocks.load(Ordering::Relaxed),
        )
    }

    /// [`Store::alloc_block`], but `None` while `keep` or fewer blocks are free.
    ///
    /// A growing data file grows ahead of need when its free blocks run short, and at
    /// once (the caller waits for the step) when there is no block to give.
    pub(crate) fn alloc_block_keeping(&self, worker: u16, keep: u64) -> Option<AllocatedBlock> {
        if let Some(got) = self.try_alloc_block(worker, keep) {
            return Some(got);
        }
        let g = self.inner.growth.as_ref()?;
        // A few rounds: other workers may take the new blocks first.
        for _ in 0..3 {
            let mut grown = false;
            for d in 0..self.inner.devices.len() {
                if g.growable(d) {
                    // Waits for a step the grower thread may be taking (this one then
                    // finds nothing to do, but that step's blocks are there).
                    grown |= grow::grow(&self.inner, d, Urgency::Urgent);
                }
            }
            if let Some(got) = self.try_alloc_block(worker, keep) {
                return Some(got);
            }
            if !grown {
                break;
            }
        }
        None
    }

    fn try_alloc_block(&self, worker: u16, keep: u64) -> Option<AllocatedBlock> {
        let mut a = self.lock();
        if keep > 0 && a.free.iter().map(|f| f.len() as u64).sum::<u64>() <= keep {
            return None;
        }
        let n = a.free.len();
        for step in 0..n {
            let device = (a.next_device + step) % n;
            if let Some(block) = a.free[device].pop() {
                self.inner.update_free_count(&a);
                if self.inner.growth.is_some() {
                    let count = self.inner.blocks[device].len();
                    if a.free[device].len() as u64
                        <= grow::ahead_threshold(count) + self.inner.reserved_free_blocks()
                    {
                        grow::request(&self.inner, device, Urgency::Ahead);
                    }
                }
                a.next_device = (device + 1) % n;
                let id = BlockId {
                    device: device as u16,
                    block,
                };
                let m = self.meta(id);
                let was = m.state.swap(block_state::WRITING, Ordering::SeqCst);
                assert_eq!(was, block_state::FREE, "allocating block {id:?} not free");
                return Some(self.start_use(&mut a, id, worker));
            }
        }
        None
    }

    /// Gives a block that just left the free list (or a reserve) its block
    /// sequence. The block's state is already [`block_state::WRITING`].
    fn start_use(&self, a: &mut Allocator, id: BlockId, worker: u16) -> AllocatedBlock {
        let block_seq = a.next_block_seq;
        a.next_block_seq += 1;
        let m = self.meta(id);
        debug_assert_eq!(m.seq.load(Ordering::Relaxed), 0, "allocating a used block");
        debug_assert_eq!(m.live_bytes.load(Ordering::Relaxed), 0, "stale live bytes");
        debug_assert!(
            !m.tombstones.load(Ordering::Relaxed),
            "stale tombstone flag"
        );
        debug_assert!(
            !m.header_durable.load(Ordering::Relaxed),
            "stale header flag"
        );
        m.seq.store(block_seq, Ordering::Release);
        m.run_writer.store(u32::from(worker) + 1, Ordering::Relaxed);
        tracing::debug!(worker, ?id, block_seq, "allocated block");
        AllocatedBlock { id, block_seq }
    }

    /// Takes a free block out of the free lists as a tombstone reserve (it
    /// gets its block sequence only when used: [`Store::use_reserved`]).
    pub(crate) fn reserve_block(&self) -> Option<BlockId> {
        if self.inner.free_count.load(Ordering::Relaxed) == 0 {
            return None; // full: no lock taken
        }
        let mut a = self.lock();
        let device = (0..a.free.len()).max_by_key(|&d| a.free[d].len())?;
        let block = a.free[device].pop()?;
        self.inner.update_free_count(&a);
        a.reserved += 1;
        let id = BlockId {
            device: device as u16,
            block,
        };
        let was = self
            .meta(id)
            .state
            .swap(block_state::RESERVED, Ordering::SeqCst);
        assert_eq!(was, block_state::FREE, "reserving block {id:?} not free");
        Some(id)
    }

    /// Puts a reserved block to use as `worker`'s new open block, with a
    /// fresh block sequence (above every block written so far, as the
    /// log-tail rule of reclaim requires).
    pub(crate) fn use_reserved(&self, id: BlockId, worker: u16) -> AllocatedBlock {
        let mut a = self.lock();
        let was = self
            .meta(id)
            .state
            .swap(block_state::WRITING, Ordering::SeqCst);
        assert_eq!(was, block_state::RESERVED, "block {id:?} is not reserved");
        a.reserved -= 1;
        self.start_use(&mut a, id, worker)
    }

    /// Returns an unused reserve to the free lists.
    pub(crate) fn unreserve(&self, id: BlockId) {
        let mut a = self.lock();
        let was = self
            .meta(id)
            .state
            .swap(block_state::FREE, Ordering::SeqCst);
        assert_eq!(was, block_state::RESERVED, "block {id:?} is not reserved");
        a.reserved -= 1;
        a.free[usize::from(id.device)].push(id.block);
        self.inner.update_free_count(&a);
        self.hint_reclaim();
    }

    /// Returns a block to the free list. The caller guarantees that nothing
    /// still needs its records, even if a crash brings the block back before
    /// it is reused (its header stays on the device until then; the safe way
    /// to free blocks is [`Writer::reclaim`](crate::Writer::reclaim), which
    /// zeroes the header first). Its live bytes and tombstone flag are reset.
    pub fn free_block(&self, id: BlockId) {
        let m = self.meta(id);
        let old = m.seq.swap(0, Ordering::AcqRel);
        assert_ne!(old, 0, "freeing block {id:?} which is already free");
        let mut a = self.lock();
        let was = m.state.swap(block_state::FREE, Ordering::SeqCst);
        assert_ne!(
            was,
            block_state::RECLAIMING,
            "freeing block {id:?} being reclaimed"
        );
        m.live_bytes.store(0, Ordering::Relaxed);
        m.tombstones.store(false, Ordering::Relaxed);
        m.header_durable.store(false, Ordering::Relaxed);
        m.run_writer.store(0, Ordering::Relaxed);
        a.free[usize::from(id.device)].push(id.block);
        self.inner.update_free_count(&a);
        drop(a);
        self.hint_reclaim();
    }

    /// The data blocks whose records are all on the device for good right now: sealed by a
    /// writer and durable, or found sealed by recovery (not a recovered open block, not one
    /// being reclaimed). An index checkpoint started now covers exactly these (see
    /// `docs/storage-format.md`, Index checkpoint): their records never change until the
    /// block is reclaimed, which zeroes its header (a reused block gets a new block
    /// sequence).
    pub fn sealed_blocks(&self) -> Vec<crate::checkpoint::SealedBlock> {
        let adoptable = self
            .inner
            .adoptable
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for (d, metas) in self.inner.blocks.iter().enumerate() {
            for (b, m) in metas.iter().enumerate() {
                let id = BlockId {
                    device: d as u16,
                    block: b as u32,
                };
                let state = m.state.load(Ordering::SeqCst);
                let sealed = state == block_state::SEALED
                    || (state == block_state::RECOVERED && !adoptable.contains_key(&id));
                if !sealed {
                    continue;
                }
                out.push(crate::checkpoint::SealedBlock {
                    id,
                    block_seq: m.seq.load(Ordering::SeqCst),
                    tombstones: m.tombstones.load(Ordering::SeqCst),
                });
            }
        }
        out
    }

    /// Free blocks over all devices (not counting writers' tombstone reserves).
    pub fn free_blocks(&self) -> u64 {
        self.lock().free.iter().map(|f| f.len() as u64).sum()
    }

    /// Counts the record at `location` as live in its block. After recovery,
    /// call it for every record the index keeps (recovered blocks start with
    /// zero live bytes), then [`Store::recovery_done`]. Records appended
    /// through a [`Writer`](crate::Writer) are counted by the append.
    pub fn add_live(&self, location: &Location) {
        let m = self.meta(location.block_id());
        debug_assert_ne!(
            m.seq.load(Ordering::Relaxed),
            0,
            "add_live in free block {location:?}"
        );
        m.live_bytes
            .fetch_add(u64::from(location.len_bytes), Ordering::Relaxed);
    }

    /// Marks the end of the caller's recovery: every record it keeps was
    /// passed to [`Store::add_live`]. From now on recovered blocks whose live
    /// bytes are 0 (every record obsolete) can be reclaimed; before, nothing
    /// recovered is.
    pub fn recovery_done(&self) {
        self.inner.recovery_done.store(true, Ordering::SeqCst);
        self.hint_reclaim();
    }

    /// Live bytes of block `id` (encoded lengths of its live records).
    pub fn block_live_bytes(&self, id: BlockId) -> u64 {
        self.meta(id).live_bytes.load(Ordering::Acquire)
    }

    /// True when block `id` holds tombstone records (appended in this run or
    /// found by recovery).
    pub fn block_has_tombstones(&self, id: BlockId) -> bool {
        self.meta(id).tombstones.load(Ordering::Acquire)
    }

    /// Space counters (one pass over the per-block atomics; cheap enough for
    /// INFO, not for every command).
    pub fn stats(&self) -> StoreStats {
        let (free, reserved) = {
            let a = self.lock();
            (a.free.iter().map(|f| f.len() as u64).sum(), a.reserved)
        };
        let growth = self.growth_stats();
        let mut st = StoreStats {
            free_blocks: free,
            reserved_blocks: reserved,
            reclaimed_blocks: self.inner.reclaimed_blocks.load(Ordering::Relaxed),
            block_size_bytes: self.block_size_bytes(0),
            device_bytes: (0..self.device_count() as u16)
                .map(|d| self.device_size_bytes(d))
                .sum(),
            grows: growth.grows,
            grow_refusals: growth.refused,
            ..StoreStats::default()
        };
        for m in self.inner.blocks.iter().flat_map(BlockMetas::iter) {
            st.total_blocks += 1;
            let live = m.live_bytes.load(Ordering::Relaxed);
            st.live_bytes += live;
            let state = m.state.load(Ordering::Relaxed);
            if matches!(state, block_state::FREE | block_state::RESERVED) {
                continue;
            }
            if m.tombstones.load(Ordering::Relaxed) {
                st.tombstone_blocks += 1;
            }
            if live == 0
                && matches!(
                    state,
                    block_state::SEALED | block_state::RECOVERED | block_state::RECLAIMING
                )
            {
                st.pending_reclaim_blocks += 1;
            }
        }
        st.used_blocks = st.total_blocks - st.free_blocks - st.reserved_blocks;
        st
    }

    /// Adds an appended record's encoded length to its block's live bytes.
    pub(crate) fn add_live_bytes(&self, id: BlockId, len_bytes: u64) {
        self.meta(id)
            .live_bytes
            .fetch_add(len_bytes, Ordering::Relaxed);
    }

    /// Notes that block `id` holds a tombstone.
    pub(crate) fn mark_tombstones(&self, id: BlockId) {
        let m = self.meta(id);
        if !m.tombstones.load(Ordering::Relaxed) {
            m.tombstones.store(true, Ordering::Release);
        }
    }

    /// Subtracts a released record from its block's live bytes. Releasing
    /// more than is live (a double release) is a bug: it panics in debug
    /// builds and is ignored with an error log otherwise (leaking the block
    /// rather than freeing one that may still hold live records).
    pub(crate) fn sub_live(&self, location: &Location) {
        self.sub_live_bytes(location.block_id(), u64::from(location.len_bytes));
    }

    /// [`Store::sub_live`] for released records of block `id` totalling `len_bytes`.
    pub(crate) fn sub_live_bytes(&self, id: BlockId, len_bytes: u64) {
        let m = self.meta(id);
        let res = m
            .live_bytes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |live| {
                live.checked_sub(len_bytes)
            });
        match res {
            Ok(old) if old == len_bytes => self.hint_reclaim(),
            Ok(_) => {}
            Err(live) => {
                tracing::error!(
                    ?id,
                    len_bytes,
                    live_bytes = live,
                    "release of more bytes than live (double release?); ignored"
                );
                debug_assert!(
                    false,
                    "releasing {len_bytes} bytes of {id:?} but only {live} live (double release?)"
                );
            }
        }
    }

    /// The first write of a writer's block (carrying its header) is durable.
    pub(crate) fn header_durable(&self, id: BlockId) {
        self.meta(id).header_durable.store(true, Ordering::SeqCst);
    }

    /// A writer's block is now sealed (or abandoned) and durable.
    pub(crate) fn block_durable(&self, id: BlockId) {
        let m = self.meta(id);
        m.header_durable.store(true, Ordering::SeqCst);
        let was = m.state.swap(block_state::SEALED, Ordering::SeqCst);
        debug_assert_eq!(
            was,
            block_state::WRITING,
            "block {id:?} was not being written"
        );
        self.hint_reclaim();
    }

    fn hint_reclaim(&self) {
        self.inner.reclaim_hint.store(true, Ordering::SeqCst);
    }

    /// Claims every block reclaimable right now for the caller (state
    /// [`block_state::RECLAIMING`], so no other reclaimer gets it). Empty
    /// when nothing changed since the last scan.
    ///
    /// Reclaimable: sealed/recovered (not being written), live bytes 0, and
    /// either no tombstones or no other non-free block with a lower block
    /// sequence (older versions of a key live only in blocks with a block
    /// sequence at most that of the record superseding them, so a tombstone
    /// is needed until everything older is gone: the log-tail rule).
    ///
    /// The block with the highest block sequence among those whose header is
    /// durable is never reclaimed: after a crash, block sequences restart
    /// above the highest surviving header (plus one per block, for blocks
    /// allocated later whose header was lost), so this keeps the restart
    /// above the sequence of every reclaimed block, whose stale records stay
    /// in its body (seeded with that sequence) until overwritten.
    pub(crate) fn claim_reclaimable(&self) -> Vec<BlockId> {
        if !self.inner.reclaim_hint.swap(false, Ordering::SeqCst) {
            return Vec::new();
        }
        let recovery_done = self.inner.recovery_done.load(Ordering::SeqCst);
        // No lock: a block is claimed by one compare-exchange, so concurrent
        // reclaimers get disjoint sets, and allocation is not stalled by the
        // scan. Concurrent changes only make the minimum below conservative:
        // a new block gets a sequence above every other (a block seen in use
        // before its sequence is stored counts as 0), and a block becomes
        // free only after its zeroed header is durable.
        // The lowest block sequence in use, and how many blocks have it; the
        // highest one with a durable header (not being reclaimed).
        let mut min_seq = u64::MAX;
        let mut min_count = 0u32;
        let mut max_durable_seq = 0u64;
        for m in self.inner.blocks.iter().flat_map(BlockMetas::iter) {
            let state = m.state.load(Ordering::SeqCst);
            if matches!(state, block_state::FREE | block_state::RESERVED) {
                continue;
            }
            let seq = m.seq.load(Ordering::SeqCst);
            match seq.cmp(&min_seq) {
                std::cmp::Ordering::Less => (min_seq, min_count) = (seq, 1),
                std::cmp::Ordering::Equal => min_count += 1,
                std::cmp::Ordering::Greater => {}
            }
            if state != block_state::RECLAIMING && m.header_durable.load(Ordering::SeqCst) {
                max_durable_seq = max_durable_seq.max(seq);
            }
        }
        let mut claimed = Vec::new();
        for (d, metas) in self.inner.blocks.iter().enumerate() {
            for (b, m) in metas.iter().enumerate() {
                let state = m.state.load(Ordering::SeqCst);
                let candidate = state == block_state::SEALED
                    || (state == block_state::RECOVERED && recovery_done);
                if !candidate || m.live_bytes.load(Ordering::SeqCst) != 0 {
                    continue;
                }
                if m.seq.load(Ordering::SeqCst) >= max_durable_seq {
                    continue; // the newest durable header stays (see above)
                }
                if m.tombstones.load(Ordering::SeqCst)
                    && !(m.seq.load(Ordering::SeqCst) == min_seq && min_count == 1)
                {
                    continue;
                }
                if m.state
                    .compare_exchange(
                        state,
                        block_state::RECLAIMING,
                        Ordering::SeqCst,
                        Ordering::SeqCst,
                    )
                    .is_ok()
                {
                    claimed.push(BlockId {
                        device: d as u16,
                        block: b as u32,
                    });
                }
            }
        }
        claimed
    }

    /// A claimed block's zeroed header is durable: the block is free.
    pub(crate) fn finish_reclaim(&self, id: BlockId) {
        let m = self.meta(id);
        let mut a = self.lock();
        let was = m.state.swap(block_state::FREE, Ordering::SeqCst);
        assert_eq!(was, block_state::RECLAIMING, "block {id:?} was not claimed");
        assert_eq!(
            m.live_bytes.load(Ordering::SeqCst),
            0,
            "reclaimed block {id:?} has live bytes"
        );
        m.tombstones.store(false, Ordering::Relaxed);
        m.header_durable.store(false, Ordering::Relaxed);
        m.run_writer.store(0, Ordering::Relaxed);
        m.seq.store(0, Ordering::Release);
        a.free[usize::from(id.device)].push(id.block);
        self.inner.update_free_count(&a);
        drop(a);
        self.inner.reclaimed_blocks.fetch_add(1, Ordering::Relaxed);
        self.hint_reclaim();
    }

    /// A claimed block could not be reclaimed (I/O error, cancelled): it
    /// stays in use and is tried again later.
    pub(crate) fn abort_reclaim(&self, id: BlockId) {
        let was = self
            .meta(id)
            .state
            .swap(block_state::SEALED, Ordering::SeqCst);
        assert_eq!(was, block_state::RECLAIMING, "block {id:?} was not claimed");
        self.hint_reclaim();
    }

    /// Claims recovered open block `id` for a writer adopting it: atomically
    /// moves it from [`block_state::RECOVERED`] to [`block_state::WRITING`]
    /// (so no reclaimer takes it), once. `None` when `id` is not a recovered
    /// open block, was adopted already, or was reclaimed (or is being).
    pub(crate) fn claim_open_block(&self, id: BlockId) -> Option<RecoveredOpenBlock> {
        let mut adoptable = self
            .inner
            .adoptable
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let info = adoptable.remove(&id)?;
        // Out of the map either way: a block leaves RECOVERED only for good
        // (reclaimed, freed, or adopted).
        self.meta(id)
            .state
            .compare_exchange(
                block_state::RECOVERED,
                block_state::WRITING,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .ok()?;
        Some(info)
    }

    /// An adoption claimed with [`Store::claim_open_block`] did not complete
    /// (I/O error, cancelled): the block is a recovered block again.
    pub(crate) fn unclaim_open_block(&self, info: RecoveredOpenBlock) {
        let was = self
            .meta(info.id)
            .state
            .swap(block_state::RECOVERED, Ordering::SeqCst);
        assert_eq!(
            was,
            block_state::WRITING,
            "block {:?} was not claimed",
            info.id
        );
        self.inner
            .adoptable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(info.id, info);
        self.hint_reclaim();
    }

    /// True when block `id` is a recovered open block that no writer adopted
    /// (and that was not reclaimed).
    pub fn is_adoptable(&self, id: BlockId) -> bool {
        self.inner
            .adoptable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&id)
            && self.meta(id).state.load(Ordering::SeqCst) == block_state::RECOVERED
    }

    /// Opens a new handle of every device for the calling worker thread (in
    /// device-index order). A data file is opened again by path; a RAM device
    /// shares its state.
    pub async fn open_devices(&self) -> Result<Vec<AnyDevice>> {
        let mut out = Vec::with_capacity(self.inner.devices.len());
        for (i, info) in self.inner.devices.iter().enumerate() {
            out.push(match &info.source {
                DeviceSource::File(path) => {
                    let mut device = FileDevice::open(path)
                        .await
                        .map_err(|e| io_err(i as u16, 0, e))?;
                    device.share_size(Arc::clone(&self.inner.sizes[i]));
                    AnyDevice::File(device)
                }
                DeviceSource::Ram(control) => AnyDevice::Ram(control.device()),
            });
        }
        Ok(out)
    }

    fn info(&self, device: u16) -> &DeviceInfo {
        &self.inner.devices[usize::from(device)]
    }

    /// The shared state (for the store's own modules).
    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    pub(crate) fn meta(&self, id: BlockId) -> &BlockMeta {
        self.inner.blocks[usize::from(id.device)].get(id.block)
    }

    fn lock(&self) -> MutexGuard<'_, Allocator> {
        self.inner.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn store_is_shared_between_threads() {
        assert_send_sync::<Store>();
    }
}

impl Inner {
    /// Free blocks that value appends leave alone: the defrag reserve plus the low-space
    /// margin ([`Store::space_low`]).
    pub(crate) fn reserved_free_blocks(&self) -> u64 {
        self.defrag_reserve_blocks.load(Ordering::Relaxed)
            + self.low_space_blocks.load(Ordering::Relaxed)
    }

    /// Free blocks of device `d`.
    pub(crate) fn free_on_device(&self, d: usize) -> u64 {
        self.lock().free.get(d).map_or(0, |f| f.len() as u64)
    }

    /// Direct-I/O alignment of device `d`.
    pub(crate) fn align_bytes_of(&self, d: usize) -> usize {
        self.devices[d].align_bytes
    }

    /// Block size of device `d`.
    pub(crate) fn block_size_of(&self, d: usize) -> u64 {
        self.devices[d].superblock.block_size_bytes
    }

    /// Device `d` now has `block_count` blocks and `size_bytes` bytes, durably (its
    /// superblock says so): makes the new blocks usable.
    pub(crate) fn publish_blocks(&self, d: usize, block_count: u64, size_bytes: u64) {
        self.sizes[d].fetch_max(size_bytes, Ordering::AcqRel);
        let metas = &self.blocks[d];
        let old = metas.len();
        metas.grow_to(block_count);
        let mut a = self.lock();
        // Blocks already free go out first, then the new ones, lowest first (the free
        // list pops from its end).
        a.free[d].splice(0..0, (old as u32..block_count as u32).rev());
        self.update_free_count(&a);
    }

    /// Publishes the free-list length (the caller holds the allocator lock).
    fn update_free_count(&self, a: &Allocator) {
        let n: u64 = a.free.iter().map(|f| f.len() as u64).sum();
        self.free_count.store(n, Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, Allocator> {
        self.allocator.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) fn io_err(device: u16, offset_bytes: u64, source: std::io::Error) -> StoreError {
    StoreError::Io {
        device,
        offset_bytes,
        source,
    }
}

/// True when both superblock slots are all zero (never formatted).
async fn is_fresh(device: &AnyDevice) -> std::io::Result<bool> {
    let buf = AlignedBuf::zeroed(2 * SUPERBLOCK_SLOT_BYTES, device.align_bytes());
    let BufResult(res, buf) = device.read_at(buf, 0).await;
    res?;
    Ok(buf.as_slice().iter().all(|&b| b == 0))
}

fn check_same_store(sbs: &[Superblock]) -> Result<()> {
    let first = &sbs[0];
    let mut seen = vec![false; sbs.len()];
    for (i, sb) in sbs.iter().enumerate() {
        if sb.store_id != first.store_id {
            return Err(StoreError::Config(format!(
                "device {i} belongs to another store than device 0"
            )));
        }
        if sb.device_count as usize != sbs.len() {
            return Err(StoreError::Config(format!(
                "device {i} is one of {} devices, {} given",
                sb.device_count,
                sbs.len()
            )));
        }
        let idx = sb.device_index as usize;
        if idx >= seen.len() || std::mem::replace(&mut seen[idx], true) {
            return Err(StoreError::Config(format!(
                "device index {idx} given twice"
            )));
        }
    }
    Ok(())
}

/// Where one record lives: device, block, offset from the block start, and
/// encoded length (header, key, value, padding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    /// Device index.
    pub device: u16,
    /// Block index on the device.
    pub block: u32,
    /// Offset of the record from the block start (≥ the 4 KiB header), bytes.
    pub offset_bytes: u32,
    /// Encoded record length, bytes (a multiple of 8).
    pub len_bytes: u32,
}

impl Location {
    /// The block holding the record.
    pub fn block_id(&self) -> BlockId {
        BlockId {
            device: self.device,
            block: self.block,
        }
    }
}
