//! The store handle: opens or formats the data devices, runs recovery, and
//! owns the shared block allocator.
//!
//! [`Store`] is a cheap clone (`Arc`) shared by every worker. It holds only
//! what all workers need: per-device geometry, the block sequence of every
//! block in use (lock-free reads, used to check record CRCs), and the free
//! block allocator behind a `Mutex` (one allocation per block, e.g. 8 MiB of
//! writes). Device handles are per worker: [`Store::open_devices`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use compio::BufResult;

use crate::device::{AnyDevice, Device, RamControl};
use crate::error::{Result, StoreError};
use crate::format::{
    format_device, read_superblock, FormatParams, Superblock, SuperblockError, BLOCK_HEADER_BYTES,
    DEFAULT_BLOCK_SIZE_BYTES, SUPERBLOCK_SLOT_BYTES,
};
use crate::recovery::{self, RecoveredRecord, Recovery};
use crate::{AlignedBuf, FileDevice};

/// Options used when formatting fresh devices (ignored for formatted ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// Block size of freshly formatted devices (power of two, 64 KiB..1 GiB).
    pub block_size_bytes: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            block_size_bytes: DEFAULT_BLOCK_SIZE_BYTES,
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

struct Allocator {
    /// Free blocks per device, highest index first (pop gives the lowest).
    free: Vec<Vec<u32>>,
    next_block_seq: u64,
    next_device: usize,
}

struct Inner {
    devices: Vec<DeviceInfo>,
    /// Block sequence of each block in use, per device; 0 = free.
    block_seqs: Vec<Vec<AtomicU64>>,
    allocator: Mutex<Allocator>,
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
        on_record: impl FnMut(&RecoveredRecord<'_>),
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
        let block_seqs: Vec<Vec<AtomicU64>> = infos
            .iter()
            .map(|d| {
                (0..d.superblock.block_count)
                    .map(|_| AtomicU64::new(0))
                    .collect()
            })
            .collect();
        let recovery = recovery::scan(&ordered, &infos, &block_seqs, on_record).await?;
        let total_blocks: u64 = infos.iter().map(|d| d.superblock.block_count).sum();
        let free = block_seqs
            .iter()
            .map(|seqs| {
                (0..seqs.len() as u32)
                    .rev()
                    .filter(|&b| seqs[b as usize].load(Ordering::Relaxed) == 0)
                    .collect()
            })
            .collect();
        let store = Store {
            inner: Arc::new(Inner {
                devices: infos,
                block_seqs,
                allocator: Mutex::new(Allocator {
                    free,
                    // A block allocated after the highest surviving header
                    // may have left records whose header was lost (a write
                    // reordered before a crash). Skipping one sequence per
                    // block keeps every new block's CRC seed unique even then.
                    next_block_seq: recovery.max_block_seq + 1 + total_blocks,
                    next_device: 0,
                }),
            }),
        };
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

    /// Number of blocks of `device`.
    pub fn block_count(&self, device: u16) -> u64 {
        self.info(device).superblock.block_count
    }

    /// Direct-I/O alignment of `device`, in bytes.
    pub fn align_bytes(&self, device: u16) -> usize {
        self.info(device).align_bytes
    }

    /// Device offset of a block's first byte (its header).
    pub fn block_offset_bytes(&self, id: BlockId) -> u64 {
        self.info(id.device)
            .superblock
            .block_offset_bytes(u64::from(id.block))
    }

    /// The superblock of `device`.
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
        self.inner.block_seqs[usize::from(id.device)][id.block as usize].load(Ordering::Acquire)
    }

    /// Allocates a free block for `worker` (devices are used round-robin), or
    /// `None` when every block is in use.
    pub fn alloc_block(&self, worker: u16) -> Option<AllocatedBlock> {
        let mut a = self.lock();
        let n = a.free.len();
        for step in 0..n {
            let device = (a.next_device + step) % n;
            if let Some(block) = a.free[device].pop() {
                a.next_device = (device + 1) % n;
                let block_seq = a.next_block_seq;
                a.next_block_seq += 1;
                let id = BlockId {
                    device: device as u16,
                    block,
                };
                let slot = &self.inner.block_seqs[device][block as usize];
                debug_assert_eq!(slot.load(Ordering::Relaxed), 0, "allocating a used block");
                slot.store(block_seq, Ordering::Release);
                tracing::debug!(worker, ?id, block_seq, "allocated block");
                return Some(AllocatedBlock { id, block_seq });
            }
        }
        None
    }

    /// Returns a block to the free list. The caller guarantees that nothing
    /// still needs its records, even if a crash brings the block back before
    /// it is reused (its header stays on the device until then).
    pub fn free_block(&self, id: BlockId) {
        let slot = &self.inner.block_seqs[usize::from(id.device)][id.block as usize];
        let old = slot.swap(0, Ordering::AcqRel);
        assert_ne!(old, 0, "freeing block {id:?} which is already free");
        self.lock().free[usize::from(id.device)].push(id.block);
    }

    /// Free blocks over all devices.
    pub fn free_blocks(&self) -> u64 {
        self.lock().free.iter().map(|f| f.len() as u64).sum()
    }

    /// Opens a new handle of every device for the calling worker thread (in
    /// device-index order). A data file is opened again by path; a RAM device
    /// shares its state.
    pub async fn open_devices(&self) -> Result<Vec<AnyDevice>> {
        let mut out = Vec::with_capacity(self.inner.devices.len());
        for (i, info) in self.inner.devices.iter().enumerate() {
            out.push(match &info.source {
                DeviceSource::File(path) => AnyDevice::File(
                    FileDevice::open(path)
                        .await
                        .map_err(|e| io_err(i as u16, 0, e))?,
                ),
                DeviceSource::Ram(control) => AnyDevice::Ram(control.device()),
            });
        }
        Ok(out)
    }

    fn info(&self, device: u16) -> &DeviceInfo {
        &self.inner.devices[usize::from(device)]
    }

    fn lock(&self) -> MutexGuard<'_, Allocator> {
        self.inner
            .allocator
            .lock()
            .unwrap_or_else(|e| e.into_inner())
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
