//! The per-worker writer: appends records to the worker's open block through
//! an aligned staging buffer, flushes them with `O_DIRECT` writes and makes
//! them durable with group commit.
//!
//! A staged block is a RAM image of the whole block (header + records). An
//! append copies the encoded record into it (synchronously: no await, so a
//! command's append is atomic on its worker) and returns its [`Location`] at
//! once; reads of that location are served from the image until the bytes are
//! durable. A flush writes, per staged block, the range from the last
//! flushed byte rounded down to the device alignment up to the last appended
//! byte rounded up: the partial last sector is rewritten with the same prefix
//! plus the new records (the rest of the image is zero). When a block is
//! full it is sealed (its header is rewritten with the final length and
//! sequence range, and a summary of its records' headers and keys is placed
//! after them, for recovery: see [`crate::format::summary`]) and a new block
//! is allocated; the sealed image stays until it is durable, and then while
//! it fits the retention budget ([`Writer::set_retained_image_budget`]).
//!
//! Methods take `&self` (state in a `RefCell`, never borrowed across an
//! await) so the connection tasks of one worker can share the writer through
//! an `Rc`. Only one flush/sync runs at a time; [`Writer::commit`] waiters
//! that arrive while one runs share the next one (group commit).
//!
//! Space: every appended non-tombstone record counts as live bytes of its
//! block (in the shared [`Store`]); [`Writer::release`] subtracts an obsolete
//! record once the records appended before the call are durable, and
//! [`Writer::reclaim`] frees dead blocks (zeroing their header on the device
//! first). Each writer keeps one free block in reserve for tombstones, so
//! deletes work on a full device.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::task::{Poll, Waker};

use compio::BufResult;

use crate::aligned::ImagePiece;
use crate::device::{AnyDevice, Device};
use crate::error::{Result, StoreError};
use crate::format::summary::{push_summary_entry, summary_entry_len};
use crate::format::{
    encode_record, encoded_record_len, BlockHeader, BlockKind, BlockState, RecordKind, RecordMeta,
    BLOCK_HEADER_BYTES, RECORD_HEADER_BYTES, SUMMARY_GAP_BYTES,
};
use crate::recovery::{scan_area, AreaItem, InOrder, RecoveredOpenBlock};
use crate::store::{io_err, AllocatedBlock, BlockId, Location, Store};
use crate::{yield_now, AlignedBuf, IoLatency};
use std::rc::Rc;

/// When appended records are made durable (`appendfsync`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Every acknowledged write is durable: [`Writer::ack`] waits for a
    /// group-committed flush + fdatasync.
    Always,
    /// Durable within about one second: [`Writer::tick`] (called every second)
    /// flushes and syncs.
    #[default]
    EverySec,
    /// [`Writer::tick`] flushes; the device decides when data is durable.
    No,
}

/// A single-threaded "wake every waiter" event.
#[derive(Default)]
struct Notify {
    epoch: Cell<u64>,
    wakers: RefCell<Vec<Waker>>,
}

impl Notify {
    /// Resolves at the next [`Notify::notify_all`] after the call.
    async fn wait(&self) {
        let start = self.epoch.get();
        poll_fn(|cx| {
            if self.epoch.get() != start {
                return Poll::Ready(());
            }
            let mut wakers = self.wakers.borrow_mut();
            if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    fn notify_all(&self) {
        self.epoch.set(self.epoch.get() + 1);
        let wakers = std::mem::take(&mut *self.wakers.borrow_mut());
        for w in wakers {
            w.wake();
        }
    }
}

/// An open block's image, to append to. A block's image is shared only once the block is
/// sealed: nothing changes it again, and its writes to the device take shares of it
/// ([`ImagePiece`]) instead of copies (decision 0026).
fn image_mut(image: &mut Rc<AlignedBuf>) -> &mut AlignedBuf {
    Rc::get_mut(image).expect("a block's image is shared only once the block is sealed")
}

/// The RAM image of one block being written.
struct StagedBlock {
    alloc: AllocatedBlock,
    /// The whole block; bytes past `used_bytes` are zero, and so are the whole pages
    /// between the header and `staged_from` once released (their records are read from
    /// the device). Shared with its writes once the block is sealed ([`image_mut`]).
    buf: Rc<AlignedBuf>,
    /// Bytes in use from the block start (header included).
    used_bytes: usize,
    /// Bytes `[0, flushed_bytes)` have been written to the device.
    flushed_bytes: usize,
    /// Bytes `[0, synced_bytes)` are durable.
    synced_bytes: usize,
    sealed: bool,
    /// The sealed header still has to be written.
    header_dirty: bool,
    /// The sealed header is durable.
    header_synced: bool,
    min_seq: u64,
    max_seq: u64,
    /// Opened from the tombstone reserve on a full device: only tombstones
    /// are appended to it until the writer holds a new reserve.
    tombstones_only: bool,
    /// The store was told that the block's header is durable.
    header_durable: bool,
    /// Records before this offset are read from the device, not from the
    /// image: those of an adopted block that recovery found there (durable;
    /// at-rest damage is reported as for any recovered record), and those that
    /// were durable when an idle writer released the image's pages
    /// ([`StagedBlock::release_durable_records`]). [`BLOCK_HEADER_BYTES`] for a
    /// block this writer allocated, until then.
    staged_from: usize,
    /// The summary of the records appended so far, written after them when the block is
    /// sealed (see [`crate::format::summary`]); `None` once given up ([`SUMMARY_MAX_SHARE`]).
    /// An adopted block starts with the summary of the records recovery found in it.
    summary: Option<Vec<u8>>,
    /// Live bytes appended to this block and not yet added to its shared count
    /// ([`Writer::publish_live`]). Counted here, not with an atomic add per record: a locked
    /// instruction right after a record's copy into the image waits for that copy's stores
    /// to reach the cache, which cost 9% of a SET's CPU (decision 0024).
    unpublished_live_bytes: u64,
    /// The image's bytes up to here were prefetched for the next records
    /// ([`AlignedBuf::prefetch_for_write`]).
    prefetched_to: usize,
}

impl StagedBlock {
    fn is_durable(&self) -> bool {
        self.sealed && self.header_synced && self.synced_bytes == self.used_bytes
    }

    /// When every record of the (open) block is durable: its records are read from the
    /// device from now on, and the image's pages below the last partial sector go back to
    /// the OS (the header page and that sector stay: sealing rewrites the one, the next
    /// flush the other). Returns the bytes released.
    fn release_durable_records(&mut self, align_bytes: usize) -> usize {
        if self.sealed
            || self.synced_bytes != self.used_bytes
            || self.staged_from >= self.used_bytes
        {
            return 0;
        }
        self.staged_from = self.used_bytes;
        self.release_unstaged_pages(align_bytes)
    }

    /// Gives back the image's pages between the header page and the sector holding
    /// `staged_from` (records there are read from the device); the header page and that
    /// partial sector stay, for sealing and the next flush. Returns the bytes released.
    fn release_unstaged_pages(&mut self, align_bytes: usize) -> usize {
        image_mut(&mut self.buf).zero_pages(
            BLOCK_HEADER_BYTES,
            self.staged_from / align_bytes * align_bytes,
        )
    }

    /// True when a record of `len` bytes fits, and with it its summary entry of
    /// `entry_len` bytes while the block keeps a summary.
    fn fits(&self, len: usize, entry_len: usize) -> bool {
        let end = self.used_bytes + len;
        let block_len = self.buf.len_bytes();
        end <= block_len
            && self
                .summary
                .as_ref()
                .is_none_or(|s| end + SUMMARY_GAP_BYTES + s.len() + entry_len <= block_len)
    }

    /// Adds the summary entry of a record just appended; gives the summary up when it
    /// outgrows its share of the block's records.
    fn summarise(&mut self, meta: &RecordMeta, key: &[u8], value_len: usize) {
        let records_bytes = self.used_bytes - BLOCK_HEADER_BYTES;
        if let Some(s) = self.summary.as_mut() {
            push_summary_entry(s, meta, key, value_len);
            if summary_outgrown(s.len(), records_bytes) {
                self.summary = None;
            }
        }
    }
}

/// A block gives its summary up when the summary grows past 1/`SUMMARY_MAX_SHARE` of its
/// records' bytes (small records: the summary would cost about as much space as they do,
/// and save little of a scan's reading)...
const SUMMARY_MAX_SHARE: usize = 8;

/// At most this many bytes of a block image past its last record are prefetched for the
/// next appends (two records of the last size ahead, see [`Writer::append`]).
const PREFETCH_AHEAD_MAX_BYTES: usize = 16 << 10;

/// ... once the records hold this many bytes (a block that starts with a few tombstones
/// keeps its summary).
const SUMMARY_MIN_RECORD_BYTES: usize = 16 << 10;

/// True when a summary of `summary_len` bytes is past its share of `records_bytes` of
/// records (see [`SUMMARY_MAX_SHARE`]): the block gives it up.
fn summary_outgrown(summary_len: usize, records_bytes: usize) -> bool {
    records_bytes >= SUMMARY_MIN_RECORD_BYTES && summary_len * SUMMARY_MAX_SHARE > records_bytes
}

/// One planned write of a staged block: `[start, end)` of its image (sector-aligned),
/// copied a piece at a time as it goes out ([`Writer::write_out`]).
struct WriteJob {
    block: BlockId,
    device: u16,
    /// Device offset of the block.
    block_offset_bytes: u64,
    start: usize,
    end: usize,
    /// The image's bytes up to here are written; the rest of `[start, end)` is zeros (a
    /// recycled image holds an older block's bytes past its records).
    data_end: usize,
    /// The header page as it was when the write was planned (the first write of a block
    /// and header writes): sealing may rewrite the image's header before the write goes
    /// out, and a sealed header must not reach the device before the records it covers.
    header: Option<Box<[u8]>>,
    /// `flushed_bytes` of the block once written (`None` for a header write).
    flushed_to: Option<usize>,
    /// The write carries the sealed header.
    writes_sealed_header: bool,
    /// The block's image when it was already sealed as the write was planned: its bytes
    /// are then exactly what the write must put on the device (header included, zeros
    /// past the block's end), and the pieces are shares of it instead of copies.
    image: Option<Rc<AlignedBuf>>,
}

/// Staged bytes are copied to a write buffer at most this many at a time (a copy holds the
/// worker: about 60 µs per 512 KiB), each piece one write.
const WRITE_PIECE_BYTES: usize = 512 << 10;

/// Pieces of a flush in flight at once (4 MiB).
const WRITE_PIECES_IN_FLIGHT: usize = 8;

/// A completed piece of [`Writer::write_out`].
struct PieceDone {
    res: std::io::Result<()>,
    /// The write buffer the piece was copied into (none for a share of a sealed image).
    buf: Option<AlignedBuf>,
    len_bytes: u64,
    /// Index of its planned write.
    job: usize,
    offset_bytes: u64,
    /// The planned write's last piece.
    last: bool,
}

/// One piece of a planned write: copied from an open block's image, or a share of a
/// sealed one.
enum Piece {
    Copied(AlignedBuf),
    Shared(ImagePiece),
}

/// Released bytes summed per block (dense per device, reused between syncs).
#[derive(Default)]
struct ReleaseSums {
    /// Per device, per block index: bytes released.
    bytes: Vec<Vec<u64>>,
    /// Blocks with a non-zero sum, in first-release order.
    touched: Vec<BlockId>,
}

impl ReleaseSums {
    fn add(&mut self, id: BlockId, len_bytes: u64) {
        let d = usize::from(id.device);
        if self.bytes.len() <= d {
            self.bytes.resize_with(d + 1, Vec::new);
        }
        let per_block = &mut self.bytes[d];
        let i = id.block as usize;
        if per_block.len() <= i {
            per_block.resize(i + 1, 0);
        }
        if per_block[i] == 0 {
            self.touched.push(id);
        }
        per_block[i] += len_bytes;
    }

    /// Calls `f(block, bytes)` for every block with released bytes, and empties the sums.
    fn apply(&mut self, mut f: impl FnMut(BlockId, u64)) {
        for id in self.touched.drain(..) {
            let sum = std::mem::take(&mut self.bytes[usize::from(id.device)][id.block as usize]);
            debug_assert!(sum > 0);
            f(id, sum);
        }
    }
}

struct State {
    open: Option<StagedBlock>,
    /// Full blocks, sealed, not yet durable.
    sealed: Vec<StagedBlock>,
    /// Block images for reuse (holding their last block's bytes: see `Writer::start_block`).
    spare: Vec<AlignedBuf>,
    /// Images of durable blocks kept for reads, by block, within
    /// [`Writer::set_retained_image_budget`]: a value written a moment ago is read from RAM
    /// (a staged read) rather than from the device (decisions 0033 and 0034).
    retained: HashMap<BlockId, StagedBlock, foldhash::fast::FixedState>,
    /// Bytes of the images in `retained`.
    retained_bytes: usize,
    /// Records appended since the writer started.
    appends: u64,
    /// `appends` at the previous [`Writer::tick`].
    appends_at_last_tick: u64,
    /// `appends` at the previous [`Writer::flush`].
    appends_at_last_flush: u64,
    /// Records appended and durable.
    durable_appends: u64,
    /// Devices written since their last sync.
    unsynced_devices: Vec<bool>,
    /// The free block kept for tombstones when no block is free.
    reserve: Option<BlockId>,
    /// Released locations waiting until the appends made before their
    /// release (`.0` = append count then) are durable.
    pending_releases: VecDeque<(u64, Location)>,
    /// Released bytes per block, summed while pending releases are applied.
    release_sums: ReleaseSums,
    /// Highest mutation sequence appended (appends must not go backwards).
    last_seq: u64,
    stats: WriterStats,
}

/// Counters of one writer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Records appended.
    pub appends: u64,
    /// Records appended and durable.
    pub durable_appends: u64,
    /// Device writes issued (successful).
    pub writes: u64,
    /// Bytes written to devices (including rewritten partial sectors).
    pub written_bytes: u64,
    /// Of those, bytes written straight from sealed blocks' images, without a copy.
    pub written_uncopied_bytes: u64,
    /// Successful flush + fdatasync rounds (group commits).
    pub syncs: u64,
    /// Blocks opened.
    pub blocks_opened: u64,
    /// [`Writer::release`] calls.
    pub releases: u64,
    /// Releases not yet applied (waiting for a sync).
    pub pending_releases: u64,
    /// Live bytes appended to the open block and not yet in the store's count
    /// ([`crate::StoreStats::live_bytes`]): add them for the live bytes right now.
    pub unpublished_live_bytes: u64,
    /// Blocks this writer reclaimed (zeroed and freed).
    pub reclaimed_blocks: u64,
    /// Times the tombstone reserve was put to use (the device was full).
    pub reserve_uses: u64,
    /// Recovered open blocks adopted ([`Writer::adopt`]).
    pub adopted_blocks: u64,
}

/// The per-worker writer (and reader: [`Writer::read`]).
pub struct Writer {
    store: Store,
    worker: u16,
    devices: Vec<AnyDevice>,
    durability: Cell<Durability>,
    state: RefCell<State>,
    next_seq: Cell<u64>,
    /// Bytes of durable block images that may be kept for reads (`State::retained`).
    retain_max_bytes: Cell<usize>,
    /// Bytes of them kept whatever their records' liveness ([`Writer::set_retained_image_budget`]).
    retain_floor_bytes: Cell<usize>,
    io_busy: Cell<bool>,
    io_done: Notify,
    /// Device I/O latencies (never borrowed across an await).
    io_latency: RefCell<IoLatency>,
    /// Buffers of finished device writes, for the next ones: a write copies the staged
    /// bytes into a buffer of its own, and a fresh one of that size (mapped memory) would
    /// cost a page fault per page and an unmap at every write.
    write_bufs: RefCell<Vec<AlignedBuf>>,
    /// Buffers of finished value reads ([`Writer::recycle`]), for the next ones: a fresh
    /// aligned, zeroed allocation and its free cost 2–3% of a device GET's CPU
    /// (decision 0012).
    pub(crate) read_bufs: RefCell<Vec<AlignedBuf>>,
}

/// Past its floor, the retained images may hold at most this many bytes per live byte of
/// their blocks (decision 0034): an image whose records were mostly overwritten or deleted
/// costs RAM that serves little.
const RETAINED_BYTES_PER_LIVE_BYTE_MAX: u64 = 4;

/// Block images a busy writer keeps for its next blocks once their records are durable
/// (decision 0021): a new block takes one instead of mapping 8 MiB and faulting it in page
/// by page (2,048 faults per block: 13% of a SET's CPU at pipeline 16), and a sync does
/// not unmap the images it frees (0.3–0.5 ms each, several per sync). A busy writer needs
/// about as many as it has blocks sealed and waiting while a sync runs (the server syncs
/// once 32 MiB of sealed images are staged; with eight pieces of a flush in flight a sync
/// keeps up with 500 MB/s of SETs). They were all in use a moment before, so keeping them
/// costs no RSS beyond the writer's peak; a writer that stops appending frees one per
/// flush and per tick (at 10M keys, 16 of them would be 13 bytes per key).
const SPARE_IMAGES_KEPT: usize = 8;

/// Write buffers kept for reuse (see `Writer::write_bufs`).
const WRITE_BUFS_KEPT: usize = WRITE_PIECES_IN_FLIGHT + 2;

/// Smallest capacity of a write buffer: capacities are powers of two from here, so that
/// buffers fit later writes of other sizes.
const WRITE_BUF_MIN_BYTES: usize = 64 << 10;

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("worker", &self.worker)
            .field("durability", &self.durability.get())
            .finish_non_exhaustive()
    }
}

/// Clears the writer's I/O flag and wakes waiters when dropped (also when the
/// flushing future is cancelled).
struct IoGuard<'a>(&'a Writer);

impl Drop for IoGuard<'_> {
    fn drop(&mut self) {
        self.0.io_busy.set(false);
        self.0.io_done.notify_all();
    }
}

impl Writer {
    /// A writer for `worker` using the worker's own device handles
    /// (from [`Store::open_devices`]); mutation sequences start at
    /// `after_seq + 1` (pass [`Recovery::max_mutation_seq`](crate::Recovery)).
    /// Takes one free block (if any) as its tombstone reserve; dropping the
    /// writer returns it.
    pub fn new(
        store: Store,
        worker: u16,
        devices: Vec<AnyDevice>,
        durability: Durability,
        after_seq: u64,
    ) -> Self {
        assert_eq!(devices.len(), store.device_count(), "one handle per device");
        let n = devices.len();
        let reserve = store.reserve_block();
        Self {
            store,
            worker,
            devices,
            durability: Cell::new(durability),
            state: RefCell::new(State {
                open: None,
                sealed: Vec::new(),
                spare: Vec::new(),
                retained: HashMap::default(),
                retained_bytes: 0,
                appends: 0,
                appends_at_last_tick: 0,
                appends_at_last_flush: 0,
                durable_appends: 0,
                unsynced_devices: vec![false; n],
                reserve,
                pending_releases: VecDeque::new(),
                release_sums: ReleaseSums::default(),
                last_seq: 0,
                stats: WriterStats::default(),
            }),
            next_seq: Cell::new(after_seq + 1),
            retain_max_bytes: Cell::new(0),
            retain_floor_bytes: Cell::new(0),
            io_busy: Cell::new(false),
            io_done: Notify::default(),
            io_latency: RefCell::new(IoLatency::default()),
            write_bufs: RefCell::new(Vec::new()),
            read_bufs: RefCell::new(Vec::new()),
        }
    }

    /// Opens this worker's device handles and creates its writer.
    pub async fn open(
        store: Store,
        worker: u16,
        durability: Durability,
        after_seq: u64,
    ) -> Result<Self> {
        let devices = store.open_devices().await?;
        Ok(Self::new(store, worker, devices, durability, after_seq))
    }

    /// Continues recovered open block `id` (one of
    /// [`Recovery::open_blocks`](crate::Recovery::open_blocks)) as this
    /// writer's open block, so the block the previous run was appending to is
    /// not left partly used (and, on a full device, the space left in it takes
    /// tombstones again). Call it before the first append (the writer must
    /// have no open block), after [`Store::add_live`] of the records the
    /// index keeps and [`Store::recovery_done`].
    ///
    /// Returns `Ok(false)` and does nothing when `id` is not adoptable: not a
    /// recovered open block, adopted already (by any writer), reclaimed (or
    /// being reclaimed), or this writer already has an open block.
    ///
    /// What it does: claims the block in the [`Store`] (atomically, so no
    /// reclaim takes it and no other writer adopts it), reads it whole (one
    /// aligned read; the records before `valid_end_bytes` must be the ones
    /// recovery found, else it is given back and `Ok(false)` is returned),
    /// then zeroes everything past `valid_end_bytes`, in the image and on the
    /// device, durably, before anything is appended there: first the
    /// sector(s) holding the record header at `valid_end_bytes` (write +
    /// fdatasync), so that from then on every scan stops there, then the rest
    /// up to the last non-zero byte (write + fdatasync). Bytes beyond a torn
    /// point may hold records of the block's own block sequence with valid
    /// CRCs (durable out of order): recovery ignores them only because the
    /// scan stops at the torn point, and a new record appended over part of
    /// that area would move the stop past them. Then appends continue at
    /// `valid_end_bytes` with the block's own block sequence; its header stays
    /// *open* until it is sealed (sealing writes the sequence range of the
    /// old and new records); live bytes and the tombstone flag are
    /// unchanged (the caller already counted the live records). The block
    /// takes values only while this writer holds a tombstone reserve (like a
    /// block opened from the reserve), so on a full device its room is kept
    /// for deletes. Reads of the records it held when adopted still go to the
    /// device (they are durable), not to the staging image. A crash at any
    /// point leaves a block that recovers to the same records as before, plus
    /// the synced appends.
    ///
    /// # The caller guarantees key ownership
    ///
    /// Recovery delivers blocks sorted by their first mutation sequence and
    /// the last record of a key wins; reclaim's log-tail rule needs the older
    /// versions of a key to live in blocks with a block sequence at most that
    /// of the block holding the tombstone that superseded them. An adopted
    /// block holds records of the old run followed by records of this run,
    /// sorted (and with a block sequence) among the old run's blocks. That is
    /// correct only if **every key this writer appends in this run belongs to
    /// it alone** (one writer per key, as always) **and no other recovered
    /// block holding a record (valid or damaged) of any of those keys is
    /// delivered after the adopted block by recovery or has a higher block
    /// sequence** than it. The server also requires every record already in
    /// the block to be of a key this worker owns and the block's
    /// `owner_worker` to be this worker. With an unchanged key routing, the
    /// block a worker was appending to satisfies this (its keys' other
    /// records are in its earlier blocks and in earlier runs' blocks), except
    /// after a torn seal left two of its blocks open: only the later one
    /// does. The store cannot check key routing: it does not know which keys
    /// a writer owns.
    pub async fn adopt(&self, id: BlockId) -> Result<bool> {
        if self.state.borrow().open.is_some() {
            return Ok(false);
        }
        let Some(info) = self.store.claim_open_block(id) else {
            return Ok(false);
        };
        let mut claim = AdoptClaim {
            store: &self.store,
            info: Some(info),
        };
        let _io = self.begin_io().await;
        let Some(block) = self.prepare_adopted(&info).await? else {
            return Ok(false);
        };
        let mut st = self.state.borrow_mut();
        if st.open.is_some() {
            return Ok(false); // an append opened a block meanwhile
        }
        claim.info = None;
        if info.valid_end_bytes as usize > BLOCK_HEADER_BYTES {
            st.last_seq = st.last_seq.max(info.last_mutation_seq);
            if self.next_seq.get() <= info.last_mutation_seq {
                self.next_seq.set(info.last_mutation_seq + 1);
            }
        }
        st.open = Some(block);
        st.stats.adopted_blocks += 1;
        tracing::info!(
            worker = self.worker,
            device = id.device,
            block = id.block,
            valid_end_bytes = info.valid_end_bytes,
            "adopted the recovered open block"
        );
        Ok(true)
    }

    /// Reads a claimed recovered open block, checks it, zeroes its tail on
    /// the device and returns its staging image (`None`: not what recovery
    /// found, not adopted).
    async fn prepare_adopted(&self, info: &RecoveredOpenBlock) -> Result<Option<StagedBlock>> {
        let id = info.id;
        let dev = &self.devices[usize::from(id.device)];
        let block_size = self.store.block_size_bytes(id.device) as usize;
        let align = self.store.align_bytes(id.device);
        let block_offset = self.store.block_offset_bytes(id);
        let block_seq = self.store.block_seq(id);
        let valid_end = info.valid_end_bytes as usize;
        let BufResult(res, mut buf) = dev
            .read_at(AlignedBuf::zeroed(block_size, align), block_offset)
            .await;
        res.map_err(|e| io_err(id.device, block_offset, e))?;
        let header = BlockHeader::decode(&buf[..BLOCK_HEADER_BYTES]);
        // The summary of the records found, for when the block is sealed (none when one of
        // them is damaged: a summary lists every record).
        let mut summary = Some(Vec::new());
        let rescan = scan_area(
            &buf[BLOCK_HEADER_BYTES..],
            block_seq,
            |_, item| match item {
                AreaItem::Valid(r) => {
                    if let Some(s) = summary.as_mut() {
                        push_summary_entry(s, &r.meta, r.key, r.value.len());
                    }
                }
                AreaItem::Damaged { .. } => summary = None,
            },
        )
        .valid_end
            + BLOCK_HEADER_BYTES;
        let records_bytes = rescan - BLOCK_HEADER_BYTES;
        if summary.as_ref().is_some_and(|s| {
            summary_outgrown(s.len(), records_bytes)
                || rescan + SUMMARY_GAP_BYTES + s.len() > block_size
        }) {
            summary = None;
        }
        let header_ok = matches!(header, Ok(Some(h)) if h.kind == BlockKind::Data
            && h.state == BlockState::Open && h.block_seq == block_seq);
        if !header_ok || rescan != valid_end || valid_end > block_size {
            tracing::error!(
                device = id.device,
                block = id.block,
                valid_end_bytes = valid_end,
                rescanned_end_bytes = rescan,
                header_ok,
                "recovered open block changed on the device since recovery; not adopted"
            );
            return Ok(None);
        }
        // Zero the tail: first the record header slot at `valid_end` (then
        // every scan stops there, whatever the rest holds), then the rest.
        if let Some(last) = buf[valid_end..].iter().rposition(|&b| b != 0) {
            let slot_end = (valid_end + RECORD_HEADER_BYTES).min(block_size);
            let slot_dirty = buf[valid_end..slot_end].iter().any(|&b| b != 0);
            let end = (valid_end + last + 1).next_multiple_of(align);
            buf[valid_end..].fill(0);
            // The valid prefix of the first sector is rewritten unchanged.
            let mut from = valid_end / align * align;
            if slot_dirty {
                let slot_sectors_end = slot_end.next_multiple_of(align);
                self.write_and_sync(id, &buf[from..slot_sectors_end], block_offset + from as u64)
                    .await?;
                from = slot_sectors_end;
            }
            if end > from {
                self.write_and_sync(id, &buf[from..end], block_offset + from as u64)
                    .await?;
            }
        }
        let mut block = StagedBlock {
            alloc: AllocatedBlock { id, block_seq },
            buf: Rc::new(buf),
            used_bytes: valid_end,
            flushed_bytes: valid_end,
            synced_bytes: valid_end,
            sealed: false,
            header_dirty: false,
            header_synced: false,
            min_seq: if valid_end > BLOCK_HEADER_BYTES {
                info.first_mutation_seq
            } else {
                u64::MAX
            },
            max_seq: info.last_mutation_seq,
            tombstones_only: true,
            header_durable: true,
            staged_from: valid_end,
            summary,
            unpublished_live_bytes: 0,
            prefetched_to: 0,
        };
        // The recovered records are read from the device (`staged_from`), and the tail is
        // zero: only the header page and the last partial sector stay in RAM.
        block.release_unstaged_pages(align);
        image_mut(&mut block.buf).zero_pages(valid_end, block_size);
        Ok(Some(block))
    }

    /// One aligned write of `bytes` at `offset_bytes` of `id`'s device, then
    /// fdatasync of that device.
    async fn write_and_sync(&self, id: BlockId, bytes: &[u8], offset_bytes: u64) -> Result<()> {
        let d = usize::from(id.device);
        let mut out = AlignedBuf::new(bytes.len(), self.store.align_bytes(id.device));
        out.extend_from_slice(bytes);
        let len_bytes = out.len_bytes() as u64;
        let BufResult(res, _) = self.devices[d].write_at(out, offset_bytes).await;
        if let Err(e) = res {
            tracing::error!(device = id.device, offset_bytes, error = %e, "zeroing an adopted block's tail failed");
            return Err(io_err(id.device, offset_bytes, e));
        }
        {
            let mut st = self.state.borrow_mut();
            st.stats.writes += 1;
            st.stats.written_bytes += len_bytes;
        }
        if let Err(e) = self.devices[d].sync().await {
            tracing::error!(device = id.device, error = %e, "data device sync failed (adopt)");
            return Err(io_err(id.device, 0, e));
        }
        Ok(())
    }

    /// The store this writer belongs to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The durability policy.
    pub fn durability(&self) -> Durability {
        self.durability.get()
    }

    /// Changes the durability policy (`CONFIG SET appendfsync`). Takes effect
    /// for the next [`Writer::ack`] / [`Writer::tick`]; switching to
    /// [`Durability::Always`] does not make earlier appends durable by itself
    /// (call [`Writer::commit`] for that).
    pub fn set_durability(&self, durability: Durability) {
        self.durability.set(durability);
    }

    /// This worker's device handles (device-index order).
    pub fn devices(&self) -> &[AnyDevice] {
        &self.devices
    }

    /// Allocates the next mutation sequence of this worker (monotonic). Take
    /// it and append in the same synchronous section.
    pub fn next_seq(&self) -> u64 {
        let seq = self.next_seq.get();
        self.next_seq.set(seq + 1);
        seq
    }

    /// Bytes of I/O buffers this writer keeps for reuse: its spare block images, its
    /// finished write buffers and its pooled read buffers (an idle writer's [`Writer::tick`]
    /// frees the first two).
    pub fn kept_buffer_bytes(&self) -> usize {
        let capacity =
            |bufs: &[AlignedBuf]| bufs.iter().map(AlignedBuf::capacity_bytes).sum::<usize>();
        capacity(&self.state.borrow().spare)
            + capacity(&self.write_bufs.borrow())
            + capacity(&self.read_bufs.borrow())
    }

    /// Counters.
    pub fn stats(&self) -> WriterStats {
        let st = self.state.borrow();
        WriterStats {
            appends: st.appends,
            durable_appends: st.durable_appends,
            pending_releases: st.pending_releases.len() as u64,
            unpublished_live_bytes: st.open.as_ref().map_or(0, |b| b.unpublished_live_bytes),
            ..st.stats
        }
    }

    /// Latencies of this writer's device reads, writes and fdatasyncs.
    pub fn io_latency(&self) -> IoLatency {
        self.io_latency.borrow().clone()
    }

    /// Counts one device read of `len_bytes` that took `ns` nanoseconds.
    pub(crate) fn record_read(&self, ns: u64, len_bytes: u64) {
        let mut l = self.io_latency.borrow_mut();
        l.read.record_ns(ns);
        l.read_bytes += len_bytes;
    }

    /// Records appended so far.
    pub fn appended(&self) -> u64 {
        self.state.borrow().appends
    }

    /// Records appended and durable so far.
    pub fn durable(&self) -> u64 {
        self.state.borrow().durable_appends
    }

    /// Bytes held in staging images of full (sealed) blocks that are not yet
    /// durable; flush when this grows past a few blocks.
    pub fn sealed_staged_bytes(&self) -> u64 {
        self.state
            .borrow()
            .sealed
            .iter()
            .map(|b| b.buf.len_bytes() as u64)
            .sum()
    }

    /// Appends one record and returns its location. The record is readable at
    /// once ([`Writer::read`]) and durable after a later [`Writer::sync`] /
    /// [`Writer::commit`]. Mutation sequences of one writer's appends must
    /// not decrease (recovery delivers records in block order).
    ///
    /// Space: a tombstone marks its block as holding tombstones; any other
    /// record adds its encoded length to its block's live bytes, until
    /// [`Writer::release`]d.
    ///
    /// Errors: [`StoreError::TooLarge`] when the encoded record exceeds a
    /// block's record area; [`StoreError::NoSpace`] when the open block is
    /// full and no block is free (nothing is appended; retry once blocks are
    /// reclaimed). A tombstone then goes to the writer's reserve block, if it
    /// still has one.
    pub fn append(&self, meta: RecordMeta, key: &[u8], value: &[u8]) -> Result<Location> {
        self.append_inner(meta, key, value, false)
    }

    /// [`Writer::append`] for defrag's copy of a live record: it may use the free blocks
    /// kept for defrag ([`Store::set_defrag_reserve_blocks`]), which value appends leave.
    pub fn append_relocated(&self, meta: RecordMeta, key: &[u8], value: &[u8]) -> Result<Location> {
        self.append_inner(meta, key, value, true)
    }

    fn append_inner(
        &self,
        meta: RecordMeta,
        key: &[u8],
        value: &[u8],
        relocated: bool,
    ) -> Result<Location> {
        debug_assert!(meta.kind != RecordKind::Tombstone || value.is_empty());
        let tombstone = meta.kind == RecordKind::Tombstone;
        let len = encoded_record_len(key.len(), value.len());
        let max = self.store.max_record_bytes();
        if len as u64 > max {
            return Err(StoreError::TooLarge {
                size_bytes: len as u64,
                max_bytes: max,
            });
        }
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        debug_assert!(
            meta.mutation_seq >= st.last_seq,
            "mutation sequence {} appended after {}",
            meta.mutation_seq,
            st.last_seq
        );
        if st.reserve.is_none() {
            // The reserve comes first: a full device must still take deletes.
            st.reserve = self.store.reserve_block();
        }
        // A block opened from the reserve takes values again once a new reserve is held
        // (the device has room again), so its remaining space is not wasted.
        let has_reserve = st.reserve.is_some();
        let entry_len = summary_entry_len(key.len());
        let fits = st.open.as_ref().is_some_and(|b| {
            b.fits(len, entry_len) && (tombstone || !b.tombstones_only || has_reserve)
        });
        if !fits {
            let keep = if tombstone || relocated {
                0
            } else {
                self.store.defrag_reserve_blocks()
            };
            let (alloc, tombstones_only) = match self.store.alloc_block_keeping(self.worker, keep) {
                Some(a) => (a, false),
                None => match st.reserve.take_if(|_| tombstone) {
                    Some(id) => {
                        st.stats.reserve_uses += 1;
                        tracing::warn!(
                            worker = self.worker,
                            "data devices full: tombstone written to the reserve block"
                        );
                        (self.store.use_reserved(id, self.worker), true)
                    }
                    None => return Err(StoreError::NoSpace),
                },
            };
            if let Some(mut old) = st.open.take() {
                self.seal(&mut old);
                st.sealed.push(old);
            }
            let mut block = self.start_block(alloc, st.spare.pop());
            block.tombstones_only = tombstones_only;
            st.open = Some(block);
            st.stats.blocks_opened += 1;
        }
        let block = st.open.as_mut().expect("open block");
        if !block.fits(len, entry_len) {
            // A record too large for a fresh block with a summary: the block has none.
            block.summary = None;
        }
        let at = block.used_bytes;
        let written = encode_record(
            &mut image_mut(&mut block.buf).full_mut()[at..],
            block.alloc.block_seq,
            &meta,
            key,
            value,
        );
        debug_assert_eq!(written, len);
        block.used_bytes += len;
        // The next records go right after this one: bring their lines in now (two records
        // of this size ahead), so that their copies find the lines in the cache. Without
        // it each line of a copy waited for memory, and an instruction that must see the
        // copy done (a locked add, a load of bytes just stored) waited for all of them.
        let ahead_to = block.used_bytes + (2 * len).clamp(256, PREFETCH_AHEAD_MAX_BYTES);
        if ahead_to > block.prefetched_to {
            let from = block.prefetched_to.max(block.used_bytes);
            block.buf.prefetch_for_write(from, ahead_to);
            block.prefetched_to = ahead_to;
        }
        block.summarise(&meta, key, value.len());
        block.min_seq = block.min_seq.min(meta.mutation_seq);
        block.max_seq = block.max_seq.max(meta.mutation_seq);
        let id = block.alloc.id;
        if tombstone {
            self.store.mark_tombstones(id);
        } else {
            block.unpublished_live_bytes += len as u64;
        }
        st.last_seq = meta.mutation_seq;
        st.appends += 1;
        Ok(Location {
            device: id.device,
            block: id.block,
            offset_bytes: at as u32,
            len_bytes: len as u32,
        })
    }

    /// The record at `location` is obsolete: superseded by a record of the
    /// same key appended through this writer before the call (a newer value
    /// or a tombstone). Its bytes stop counting as live once every record
    /// appended before the call is durable (after the next successful sync
    /// covering them; at once if they already are; a failed sync keeps it
    /// pending): freeing the old record's block earlier could lose the key
    /// in a crash.
    ///
    /// Release only records that count as live (appended non-tombstone
    /// records, or recovered ones passed to [`Store::add_live`]), each once:
    /// a double release is a bug (debug assertion).
    pub fn release(&self, location: Location) {
        let mut st = self.state.borrow_mut();
        st.stats.releases += 1;
        let after = st.appends;
        if after <= st.durable_appends {
            drop(st);
            self.store.sub_live(&location);
        } else {
            st.pending_releases.push_back((after, location));
        }
    }

    /// Frees every block that is reclaimable now (see
    /// [`Writer::reclaim`]'s rules in `docs/storage-engine.md`): its live
    /// bytes are 0, it is durable and not any writer's open block, and it
    /// holds no tombstones or is the oldest block in use. Each block's header
    /// is overwritten with zeros and synced before the block returns to the
    /// allocator, so a crash cannot bring its stale records back. Any writer
    /// may reclaim any block; each block goes to one reclaimer. Returns the
    /// number of blocks freed.
    ///
    /// Pending releases are made effective first, with a sync if needed (also
    /// under [`Durability::No`]). Refills the tombstone reserve.
    pub async fn reclaim(&self) -> Result<u64> {
        if !self.state.borrow().pending_releases.is_empty() {
            self.commit().await?;
        }
        let mut total = 0u64;
        loop {
            let claimed = Claimed {
                store: &self.store,
                ids: self.store.claim_reclaimable(),
                done: false,
            };
            if claimed.ids.is_empty() {
                break;
            }
            self.zero_headers(&claimed.ids).await?;
            let n = claimed.finish();
            total += n;
            self.state.borrow_mut().stats.reclaimed_blocks += n;
        }
        if total > 0 {
            tracing::debug!(worker = self.worker, blocks = total, "reclaimed blocks");
        }
        self.refill_reserve();
        Ok(total)
    }

    /// Takes a tombstone reserve block if this writer has none.
    fn refill_reserve(&self) {
        let mut st = self.state.borrow_mut();
        if st.reserve.is_none() {
            st.reserve = self.store.reserve_block();
        }
    }

    /// Writes zeros over the headers of `ids` and syncs their devices.
    async fn zero_headers(&self, ids: &[BlockId]) -> Result<()> {
        let mut touched = vec![false; self.devices.len()];
        for &id in ids {
            let align = self.store.align_bytes(id.device);
            let buf = AlignedBuf::zeroed(BLOCK_HEADER_BYTES, align);
            let offset_bytes = self.store.block_offset_bytes(id);
            let BufResult(res, _) = self.devices[usize::from(id.device)]
                .write_at(buf, offset_bytes)
                .await;
            if let Err(e) = res {
                tracing::error!(device = id.device, offset_bytes, error = %e, "zeroing a reclaimed block header failed");
                return Err(io_err(id.device, offset_bytes, e));
            }
            touched[usize::from(id.device)] = true;
        }
        for (d, _) in touched.iter().enumerate().filter(|(_, &t)| t) {
            if let Err(e) = self.devices[d].sync().await {
                tracing::error!(device = d, error = %e, "data device sync failed (reclaim)");
                return Err(io_err(d as u16, 0, e));
            }
        }
        Ok(())
    }

    /// Gives up retained images (to the spare images, not zeroed: a new block's image is zero
    /// only in its header page, and the bytes past its records are written as zeros,
    /// Writer::copy_piece; or to the OS) while they are over the budget's maximum, and, at
    /// most `waste_drops` of them, while they are over its floor and hold more than
    /// [`RETAINED_BYTES_PER_LIVE_BYTE_MAX`] bytes per live byte. The least live go first;
    /// among equally live ones (to 1/64 of a block), the oldest.
    ///
    /// Bounding the drops for waste to the blocks just retained makes a busy writer trade
    /// one image for one: the image given up becomes the next block's, where dropping a
    /// burst of them would give them to the OS and map fresh ones for the next blocks.
    fn trim_retained(&self, st: &mut State, mut waste_drops: usize) {
        let max = self.retain_max_bytes.get();
        let floor = self.retain_floor_bytes.get().min(max);
        if st.retained_bytes <= floor {
            return;
        }
        let mut live_sum = 0u64;
        let mut order: Vec<(u64, u64, BlockId, u64)> = st
            .retained
            .iter()
            .map(|(&id, b)| {
                // A reused block's live bytes are its new incarnation's.
                let live = if b.alloc.block_seq == self.store.block_seq(id) {
                    self.store.block_live_bytes(id)
                } else {
                    0
                };
                live_sum += live;
                let level = live * 64 / (b.buf.capacity_bytes() as u64).max(1);
                (level, b.alloc.block_seq, id, live)
            })
            .collect();
        order.sort_unstable();
        for (_, _, id, live) in order {
            let bytes = st.retained_bytes as u64;
            let over = bytes > max as u64;
            let wasteful = waste_drops > 0
                && bytes > floor as u64
                && bytes > RETAINED_BYTES_PER_LIVE_BYTE_MAX * live_sum;
            if !over && !wasteful {
                break;
            }
            if !over {
                waste_drops -= 1;
            }
            let old = st.retained.remove(&id).expect("listed above");
            st.retained_bytes -= old.buf.capacity_bytes();
            live_sum -= live;
            if st.spare.len() < SPARE_IMAGES_KEPT {
                st.spare.extend(Rc::try_unwrap(old.buf).ok());
            }
        }
    }

    /// Sets how many bytes of durable block images are kept for reads (decisions 0033 and
    /// 0034): up to `max_bytes`, and past `floor_bytes` only while they hold at least one
    /// live byte in [`RETAINED_BYTES_PER_LIVE_BYTE_MAX`]. A smaller maximum gives images up
    /// at once (0 keeps none); a call also gives up a few images that hold too little live
    /// data (the server calls it once a second: images whose records were deleted go even
    /// when nothing is written).
    pub fn set_retained_image_budget(&self, floor_bytes: usize, max_bytes: usize) {
        self.retain_floor_bytes.set(floor_bytes);
        self.retain_max_bytes.set(max_bytes);
        let mut st = self.state.borrow_mut();
        self.trim_retained(&mut st, SPARE_IMAGES_KEPT);
    }

    /// The most bytes of durable block images that may be kept for reads
    /// ([`Writer::set_retained_image_budget`]).
    pub fn retained_image_max_bytes(&self) -> usize {
        self.retain_max_bytes.get()
    }

    /// Bytes of durable block images kept for reads now.
    pub fn retained_image_bytes(&self) -> usize {
        self.state.borrow().retained_bytes
    }

    fn start_block(&self, alloc: AllocatedBlock, spare: Option<AlignedBuf>) -> StagedBlock {
        let block_size = self.store.block_size_bytes(alloc.id.device) as usize;
        let align = self.store.align_bytes(alloc.id.device);
        let mut buf = match spare {
            Some(b) if b.capacity_bytes() == block_size && b.align_bytes() >= align => b,
            _ => AlignedBuf::zeroed(block_size, align),
        };
        buf.set_len_bytes(block_size);
        // A recycled image still holds its last block's bytes: only the header page must
        // be zero (the header fills a prefix of it), the rest is written before it is read.
        buf[..BLOCK_HEADER_BYTES].fill(0);
        let header = BlockHeader {
            kind: BlockKind::Data,
            state: BlockState::Open,
            owner_worker: self.worker,
            block_index: alloc.id.block,
            committed_len_bytes: 0,
            block_seq: alloc.block_seq,
            first_mutation_seq: 0,
            last_mutation_seq: 0,
            device_id: self.store.superblock(alloc.id.device).device_id,
            summary_len_bytes: 0,
            summary_crc: 0,
        };
        header.encode(&mut buf[..BLOCK_HEADER_BYTES]);
        StagedBlock {
            alloc,
            buf: Rc::new(buf),
            used_bytes: BLOCK_HEADER_BYTES,
            flushed_bytes: 0,
            synced_bytes: 0,
            sealed: false,
            header_dirty: false,
            header_synced: false,
            min_seq: u64::MAX,
            max_seq: 0,
            tombstones_only: false,
            header_durable: false,
            staged_from: BLOCK_HEADER_BYTES,
            summary: Some(Vec::new()),
            unpublished_live_bytes: 0,
            prefetched_to: 0,
        }
    }

    /// Adds `block`'s unpublished live bytes to its shared count. Done when the block is
    /// sealed and before every write-out. A record's bytes are released only once a sync
    /// covers it, and that sync's write-out published them first, so a release never
    /// finds the shared count behind; defrag and reclaim never read an open block's.
    fn publish_live(&self, block: &mut StagedBlock) {
        if block.unpublished_live_bytes > 0 {
            self.store
                .add_live_bytes(block.alloc.id, block.unpublished_live_bytes);
            block.unpublished_live_bytes = 0;
        }
    }

    /// Rewrites the staged header as sealed and places the block's summary after its
    /// records (both written by the next flush).
    fn seal(&self, block: &mut StagedBlock) {
        debug_assert!(!block.sealed);
        self.publish_live(block);
        debug_assert!(
            block.used_bytes > BLOCK_HEADER_BYTES,
            "sealing an empty block"
        );
        let records_end = block.used_bytes;
        let block_seq = block.alloc.block_seq;
        let (summary_len_bytes, summary_crc) = match block.summary.take() {
            Some(s) if !s.is_empty() => {
                let at = records_end + SUMMARY_GAP_BYTES;
                debug_assert!(at + s.len() <= block.buf.len_bytes(), "summary room kept");
                // The gap reads as the end of the records (a zero record header).
                let image = image_mut(&mut block.buf);
                image[records_end..at].fill(0);
                image[at..at + s.len()].copy_from_slice(&s);
                block.used_bytes = at + s.len();
                (
                    s.len() as u32,
                    crate::format::summary::summary_crc(block_seq, &s),
                )
            }
            _ => (0, 0),
        };
        let header = BlockHeader {
            kind: BlockKind::Data,
            state: BlockState::Sealed,
            owner_worker: self.worker,
            block_index: block.alloc.id.block,
            committed_len_bytes: (records_end - BLOCK_HEADER_BYTES) as u32,
            block_seq,
            first_mutation_seq: block.min_seq.min(block.max_seq),
            last_mutation_seq: block.max_seq,
            device_id: self.store.superblock(block.alloc.id.device).device_id,
            summary_len_bytes,
            summary_crc,
        };
        let image = image_mut(&mut block.buf);
        header.encode(&mut image[..BLOCK_HEADER_BYTES]);
        // The last sector's bytes past the block's end are written as they are (the
        // image is written without a copy from now on): zeros, as a copy would write.
        let align = self.store.align_bytes(block.alloc.id.device);
        let tail_end = block
            .used_bytes
            .next_multiple_of(align)
            .min(image.len_bytes());
        image[block.used_bytes..tail_end].fill(0);
        block.sealed = true;
        block.header_dirty = true;
    }

    /// The staging image holding `location`'s record, and the record's byte range in it,
    /// if this writer still holds it (not yet durable, in the open block, or retained; not
    /// the records an adopted block held when it was adopted, nor those that were durable
    /// when an idle writer released its open image: those are read from the device).
    fn staged_with<R>(
        &self,
        location: &Location,
        f: impl FnOnce(&[u8], u64) -> Option<R>,
    ) -> Option<R> {
        let st = self.state.borrow();
        let id = location.block_id();
        let block = match st
            .open
            .iter()
            .chain(st.sealed.iter())
            .find(|b| b.alloc.id == id)
        {
            Some(b) => b,
            // A retained image serves only the block's incarnation it was written for:
            // the block may have been reclaimed and reused since.
            None => st
                .retained
                .get(&id)
                .filter(|b| b.alloc.block_seq == self.store.block_seq(id))?,
        };
        let start = location.offset_bytes as usize;
        let end = start + location.len_bytes as usize;
        if start < block.staged_from || end > block.used_bytes {
            return None;
        }
        f(&block.buf[start..end], block.alloc.block_seq)
    }

    /// Copies the record at `location` out of the staging images, if this writer still
    /// holds it (see [`Writer::staged_value`] for its value alone).
    pub fn staged(&self, location: &Location) -> Option<crate::RecordBytes> {
        self.staged_with(location, |bytes, block_seq| {
            crate::RecordBytes::decode(bytes.to_vec().into(), 0, block_seq)
        })
    }

    /// Copies the value of the record at `location` out of the staging images, if this
    /// writer still holds it: checked as [`Writer::staged`] checks it, with one copy (of
    /// the value) instead of two.
    pub fn staged_value(&self, location: &Location) -> Option<Vec<u8>> {
        self.staged_with(location, |bytes, block_seq| {
            let r = crate::format::decode_record(bytes, block_seq).ok()??;
            Some(r.value.to_vec())
        })
    }

    /// Waits until no flush/sync runs, then marks one as running.
    async fn begin_io(&self) -> IoGuard<'_> {
        while self.io_busy.get() {
            self.io_done.wait().await;
        }
        self.io_busy.set(true);
        IoGuard(self)
    }

    /// Writes every staged byte not yet written (not durable until a sync).
    ///
    /// A flush that finds no append since the previous flush also frees one spare block
    /// image (the server flushes every 100 ms: a writer that stops gives its spares back
    /// within a second or two, one unmap at a time).
    pub async fn flush(&self) -> Result<()> {
        {
            let mut st = self.state.borrow_mut();
            if st.appends == st.appends_at_last_flush {
                st.spare.pop();
            }
            st.appends_at_last_flush = st.appends;
        }
        let _io = self.begin_io().await;
        self.write_out().await.map(|_| ())
    }

    /// Flushes and fdatasyncs the written devices: everything appended before
    /// the call is durable when it returns `Ok`. Same as [`Writer::commit`].
    pub async fn sync(&self) -> Result<()> {
        self.commit().await
    }

    /// Resolves once everything appended before the call is durable. Callers
    /// that arrive while a flush/sync runs wait for it and then share one more
    /// flush + fdatasync (group commit): N concurrent committers cause at most
    /// two syncs, usually one.
    pub async fn commit(&self) -> Result<()> {
        let target = self.state.borrow().appends;
        loop {
            if self.state.borrow().durable_appends >= target {
                return Ok(());
            }
            if self.io_busy.get() {
                self.io_done.wait().await;
                continue;
            }
            let _io = self.begin_io().await;
            return self.sync_locked().await;
        }
    }

    /// What the durability policy requires before a write is acknowledged:
    /// [`Durability::Always`] → [`Writer::commit`]; otherwise nothing.
    pub async fn ack(&self) -> Result<()> {
        match self.durability.get() {
            Durability::Always => self.commit().await,
            Durability::EverySec | Durability::No => Ok(()),
        }
    }

    /// Periodic work; call about once per second: [`Durability::EverySec`]
    /// syncs, [`Durability::No`] and [`Durability::Always`] flush; then
    /// [`Writer::reclaim`] (which syncs if releases are pending). A writer with no
    /// appends since the previous tick frees its spare image and write buffers, and the
    /// pages of its open block's image whose records are durable (they are read from the
    /// device from then on).
    pub async fn tick(&self) -> Result<()> {
        match self.durability.get() {
            Durability::EverySec => self.commit().await?,
            Durability::No | Durability::Always => self.flush().await?,
        }
        {
            // An idle writer gives its spare block images and its kept write buffers
            // back to the OS (up to SPARE_IMAGES_KEPT blocks and WRITE_BUFS_KEPT mapped
            // buffers of up to WRITE_PIECE_BYTES each); a busy one keeps them to write
            // without page faults. One image per tick: unmapping one costs 0.3–0.5 ms
            // of the worker, and reads may still be running.
            // Its open block's image keeps only what the next append needs once every
            // record in it is durable (`Durability::No` may not get there).
            let mut st = self.state.borrow_mut();
            if st.appends == st.appends_at_last_tick {
                st.spare.pop();
                self.write_bufs.borrow_mut().clear();
                if let Some(b) = st.open.as_mut() {
                    let align = self.store.align_bytes(b.alloc.id.device);
                    b.release_durable_records(align);
                }
            }
            st.appends_at_last_tick = st.appends;
        }
        self.reclaim().await.map(|_| ())
    }

    /// Flush + sync; the caller holds the I/O guard.
    async fn sync_locked(&self) -> Result<()> {
        let covered = self.write_out().await?;
        let to_sync: Vec<usize> = {
            let st = self.state.borrow();
            (0..st.unsynced_devices.len())
                .filter(|&d| st.unsynced_devices[d])
                .collect()
        };
        for d in to_sync {
            let started = quanta::Instant::now();
            let res = self.devices[d].sync().await;
            self.io_latency
                .borrow_mut()
                .fdatasync
                .record_ns(started.elapsed().as_nanos() as u64);
            if let Err(e) = res {
                tracing::error!(device = d, error = %e, "data device sync failed");
                self.reset_after_error();
                return Err(io_err(d as u16, 0, e));
            }
            self.state.borrow_mut().unsynced_devices[d] = false;
        }
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        for b in st.open.iter_mut().chain(st.sealed.iter_mut()) {
            b.synced_bytes = b.flushed_bytes;
            if b.sealed && !b.header_dirty {
                b.header_synced = true;
            }
            // The first write of a block carries its header.
            if b.synced_bytes > 0 && !b.header_durable {
                b.header_durable = true;
                self.store.header_durable(b.alloc.id);
            }
        }
        // Durable sealed images: kept for reads within the retention budget, the least live
        // given up (`trim_retained`; their bytes are read from the device from then on).
        let mut retained_more = 0;
        let mut i = 0;
        while i < st.sealed.len() {
            if st.sealed[i].is_durable() {
                let done = st.sealed.swap_remove(i);
                self.store.block_durable(done.alloc.id);
                st.retained_bytes += done.buf.capacity_bytes();
                // An older incarnation of the block (reclaimed and reused since) is stale.
                if let Some(old) = st.retained.insert(done.alloc.id, done) {
                    st.retained_bytes -= old.buf.capacity_bytes();
                }
                retained_more += 1;
            } else {
                i += 1;
            }
        }
        if retained_more > 0 {
            self.trim_retained(st, retained_more);
        }
        debug_assert!(covered >= st.durable_appends);
        st.durable_appends = covered;
        st.stats.syncs += 1;
        // Releases whose superseding records are now durable, summed per block first: one
        // atomic update per block, not per record (a second of writes releases tens of
        // thousands of records, and this runs between two commands of the worker).
        let due = st
            .pending_releases
            .partition_point(|&(after, _)| after <= covered);
        let sums = &mut st.release_sums;
        for (_, location) in st.pending_releases.drain(..due) {
            sums.add(location.block_id(), u64::from(location.len_bytes));
        }
        sums.apply(|id, len_bytes| self.store.sub_live_bytes(id, len_bytes));
        Ok(())
    }

    /// After a failed write or sync: everything since the last successful sync
    /// is written again by the next flush.
    fn reset_after_error(&self) {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        for b in st.open.iter_mut().chain(st.sealed.iter_mut()) {
            b.flushed_bytes = b.synced_bytes;
            b.header_dirty = b.sealed && !b.header_synced;
        }
    }

    /// Writes all unwritten staged bytes; returns the append count covered.
    /// The caller holds the I/O guard.
    ///
    /// Each planned write goes out in pieces of [`WRITE_PIECE_BYTES`], copied just before
    /// they are submitted, with up to [`WRITE_PIECES_IN_FLIGHT`] pieces in flight (a
    /// piece at a time would halve the device's write throughput). A sealed header written
    /// on its own waits for every earlier piece to complete first.
    async fn write_out(&self) -> Result<u64> {
        if let Some(b) = self.state.borrow_mut().open.as_mut() {
            self.publish_live(b);
        }
        let (jobs, covered) = self.plan_writes();
        // One clock read per completed write: each write is timed from the previous
        // completion (or the start), which is its latency when one is in flight.
        let mut started = quanta::Instant::now();
        let mut in_flight = InOrder::new();
        let mut failed: Option<StoreError> = None;
        // Completed pieces: the job is done when its last piece is.
        let mut finish = |done: PieceDone, failed: &mut Option<StoreError>| {
            let ended = quanta::Instant::now();
            self.io_latency
                .borrow_mut()
                .write
                .record_ns(ended.duration_since(started).as_nanos() as u64);
            started = ended;
            let PieceDone {
                res,
                buf,
                len_bytes,
                job,
                offset_bytes,
                last,
            } = done;
            let copied = buf.is_some();
            if let Some(buf) = buf {
                self.give_write_buf(buf);
            }
            let device = jobs[job].device;
            if let Err(e) = res {
                if failed.is_none() {
                    tracing::error!(device, offset_bytes, error = %e, "data device write failed");
                    *failed = Some(io_err(device, offset_bytes, e));
                }
                return;
            }
            let mut st = self.state.borrow_mut();
            let st = &mut *st;
            st.unsynced_devices[usize::from(device)] = true;
            st.stats.writes += 1;
            st.stats.written_bytes += len_bytes;
            if !copied {
                st.stats.written_uncopied_bytes += len_bytes;
            }
            if !last || failed.is_some() {
                return;
            }
            let j = &jobs[job];
            if let Some(b) = st
                .open
                .iter_mut()
                .chain(st.sealed.iter_mut())
                .find(|b| b.alloc.id == j.block)
            {
                if let Some(to) = j.flushed_to {
                    b.flushed_bytes = b.flushed_bytes.max(to);
                }
                if j.writes_sealed_header {
                    b.header_dirty = false;
                }
            }
        };
        'jobs: for (i, job) in jobs.iter().enumerate() {
            if job.flushed_to.is_none() {
                // A header on its own: after the records it covers.
                while let Some(done) = in_flight.next().await {
                    finish(done, &mut failed);
                }
            }
            let mut at = job.start;
            while at < job.end {
                if failed.is_some() {
                    break 'jobs;
                }
                let piece_end = (at + WRITE_PIECE_BYTES).min(job.end);
                let piece = match &job.image {
                    Some(image) => Piece::Shared(ImagePiece::new(image.clone(), at, piece_end)),
                    None => match self.copy_piece(job, at, piece_end) {
                        Some(buf) => Piece::Copied(buf),
                        None => break,
                    },
                };
                let offset_bytes = job.block_offset_bytes + at as u64;
                let device = &self.devices[usize::from(job.device)];
                let last = piece_end == job.end;
                let len_bytes = (piece_end - at) as u64;
                in_flight.push(async move {
                    let (res, buf) = match piece {
                        Piece::Copied(buf) => {
                            let BufResult(res, buf) = device.write_at(buf, offset_bytes).await;
                            (res, Some(buf))
                        }
                        Piece::Shared(piece) => {
                            (device.write_at(piece, offset_bytes).await.0, None)
                        }
                    };
                    PieceDone {
                        res: res.map(|_| ()),
                        buf,
                        len_bytes,
                        job: i,
                        offset_bytes,
                        last,
                    }
                });
                if in_flight.len() >= WRITE_PIECES_IN_FLIGHT {
                    if let Some(done) = in_flight.next().await {
                        finish(done, &mut failed);
                    }
                } else if piece_end < job.end || i + 1 < jobs.len() {
                    // More to copy: let the worker's other tasks run between two copies.
                    yield_now().await;
                }
                at = piece_end;
            }
        }
        while let Some(done) = in_flight.next().await {
            finish(done, &mut failed);
        }
        if let Some(e) = failed {
            self.reset_after_error();
            return Err(e);
        }
        Ok(covered)
    }

    /// `[at, end)` of a planned write, copied from its block's image into a write buffer:
    /// zeros past the planned data, the planned header page over the image's. `None` if
    /// the block is no longer staged (never while the caller holds the I/O guard: images
    /// leave only in [`Writer::sync_locked`]).
    fn copy_piece(&self, job: &WriteJob, at: usize, end: usize) -> Option<AlignedBuf> {
        let st = self.state.borrow();
        let Some(b) = st
            .open
            .iter()
            .chain(st.sealed.iter())
            .find(|b| b.alloc.id == job.block)
        else {
            debug_assert!(false, "planned write of block {:?} not staged", job.block);
            return None;
        };
        let align = self.store.align_bytes(job.device);
        let mut buf = self.write_buf(end - at, align);
        let data_end = job.data_end.clamp(at, end);
        buf.extend_from_slice(&b.buf[at..data_end]);
        buf.set_len_bytes(end - at);
        buf[data_end - at..].fill(0);
        if let Some(h) = job.header.as_deref() {
            if at < h.len() {
                let n = h.len().min(end) - at;
                buf[..n].copy_from_slice(&h[at..at + n]);
            }
        }
        Some(buf)
    }

    /// An empty buffer of at least `len_bytes` aligned to `align_bytes`, reused when one
    /// is kept.
    fn write_buf(&self, len_bytes: usize, align_bytes: usize) -> AlignedBuf {
        let cap = len_bytes
            .next_power_of_two()
            .max(WRITE_BUF_MIN_BYTES)
            .max(align_bytes);
        let mut kept = self.write_bufs.borrow_mut();
        if let Some(i) = kept
            .iter()
            .position(|b| b.capacity_bytes() == cap && b.align_bytes() >= align_bytes)
        {
            let mut b = kept.swap_remove(i);
            b.clear();
            return b;
        }
        AlignedBuf::new(cap, align_bytes)
    }

    /// Keeps the buffer of a finished write for [`Writer::write_buf`].
    fn give_write_buf(&self, buf: AlignedBuf) {
        let mut kept = self.write_bufs.borrow_mut();
        if buf.capacity_bytes() >= WRITE_BUF_MIN_BYTES && kept.len() < WRITE_BUFS_KEPT {
            kept.push(buf);
        }
    }

    fn plan_writes(&self) -> (Vec<WriteJob>, u64) {
        let st = self.state.borrow();
        let mut jobs = Vec::new();
        let header_page = |b: &StagedBlock| Some(Box::<[u8]>::from(&b.buf[..BLOCK_HEADER_BYTES]));
        for b in st.sealed.iter().chain(st.open.iter()) {
            let id = b.alloc.id;
            let align = self.store.align_bytes(id.device);
            let block_offset_bytes = self.store.block_offset_bytes(id);
            let mut header_written = false;
            if b.used_bytes > b.flushed_bytes {
                let start = b.flushed_bytes / align * align;
                let end = b.used_bytes.next_multiple_of(align);
                debug_assert!(end <= b.buf.len_bytes());
                header_written = start == 0;
                jobs.push(WriteJob {
                    block: id,
                    device: id.device,
                    block_offset_bytes,
                    start,
                    end,
                    data_end: b.used_bytes,
                    header: if header_written { header_page(b) } else { None },
                    flushed_to: Some(b.used_bytes),
                    writes_sealed_header: header_written && b.sealed,
                    image: b.sealed.then(|| b.buf.clone()),
                });
            }
            if b.sealed && b.header_dirty && !header_written {
                jobs.push(WriteJob {
                    block: id,
                    device: id.device,
                    block_offset_bytes,
                    start: 0,
                    end: BLOCK_HEADER_BYTES,
                    data_end: BLOCK_HEADER_BYTES,
                    header: header_page(b),
                    flushed_to: None,
                    writes_sealed_header: true,
                    image: b.sealed.then(|| b.buf.clone()),
                });
            }
        }
        (jobs, st.appends)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let st = self.state.get_mut();
        if let Some(id) = st.reserve.take() {
            self.store.unreserve(id);
        }
        // An open block whose bytes are all durable is never written again:
        // reclaim may free it once its records are obsolete. (Blocks with
        // bytes not durable stay in use: a crash decides what they hold.)
        if let Some(b) = &st.open {
            if b.synced_bytes == b.used_bytes {
                self.store.block_durable(b.alloc.id);
            }
        }
    }
}

/// A recovered open block claimed by [`Writer::adopt`]; given back (a
/// recovered block again) unless the adoption completes.
struct AdoptClaim<'a> {
    store: &'a Store,
    info: Option<RecoveredOpenBlock>,
}

impl Drop for AdoptClaim<'_> {
    fn drop(&mut self) {
        if let Some(info) = self.info.take() {
            self.store.unclaim_open_block(info);
        }
    }
}

/// Blocks claimed by one reclaim round; given back (still in use) if the
/// round does not finish (error, cancelled future).
struct Claimed<'a> {
    store: &'a Store,
    ids: Vec<BlockId>,
    done: bool,
}

impl Claimed<'_> {
    /// The zeroed headers are durable: frees the blocks; returns how many.
    fn finish(mut self) -> u64 {
        self.done = true;
        for &id in &self.ids {
            self.store.finish_reclaim(id);
        }
        self.ids.len() as u64
    }
}

impl Drop for Claimed<'_> {
    fn drop(&mut self) {
        if !self.done {
            for &id in &self.ids {
                self.store.abort_reclaim(id);
            }
        }
    }
}
