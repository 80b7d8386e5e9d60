//! Recovery: a cold-start scan of every block of every device.
//!
//! **Headers first.** Every block's 4 KiB header is read (many reads in
//! flight). A block whose header is all zero is free; a damaged or foreign
//! header is logged and the block is treated as free. Checkpoint blocks are
//! recognised and kept (not scanned). Sealed data blocks covered by an index
//! checkpoint ([`Store::open_with_checkpoint`](crate::Store::open_with_checkpoint))
//! are kept without reading their records.
//!
//! **Then data blocks, in mutation order.** Data blocks are delivered sorted
//! by their first mutation sequence (from a sealed header; for an open block,
//! the sequence of its first valid record, which needs one extra read of the
//! block), records in block order. Each key is written by one worker per run,
//! a worker's blocks have increasing, non-overlapping sequence ranges, and a
//! run's sequences start above every recovered one, so every key's versions
//! reach the callback in increasing mutation sequence order: the last one
//! delivered is the one that wins. Up to [`MAX_BLOCK_READS_IN_FLIGHT`] whole
//! block reads are in flight (on the caller's io_uring) while blocks are
//! delivered in that order.
//!
//! **Summaries.** A sealed block whose header lists a summary (its records'
//! headers and keys, see [`crate::format::summary`]) is read as that summary
//! only, about 4% of the block for 1 KiB values: its records are delivered from
//! it, their values unread (a value's CRC is checked when it is read, as on any
//! read). A summary that fails its checks is logged and counted
//! ([`Recovery::bad_summaries`]) and the block is read and scanned whole.
//!
//! Otherwise a data block's records are decoded with [`RecordIter`] over the committed
//! length (sealed blocks) or the whole record area (open blocks); every valid
//! record goes to the caller's callback, which rebuilds its index
//! ([`RecoveredIndex`] does this with a `HashMap`). Blocks holding tombstones
//! are noted for reclaim's log-tail rule; recovered blocks start with zero live
//! bytes (the caller counts what it keeps with
//! [`Store::add_live`](crate::Store::add_live)).
//!
//! A corrupt record (bit flip) that is followed by valid records is skipped
//! (its claimed length is used to find the next record; the block-sequence
//! seeded CRC makes a wrong guess fail) and counted in
//! [`Recovery::corrupt_records`]. Where the valid records of a block end
//! before the scanned area does (a torn tail, damage), the block is reported
//! in [`Recovery::truncations`]. Recovery never writes. Blocks found open are
//! listed in [`Recovery::open_blocks`]; a writer may continue one with
//! [`Writer::adopt`](crate::Writer::adopt), which zeroes everything past its
//! valid records first (see `docs/storage-engine.md`, Recovery).

use std::collections::{HashMap, VecDeque};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::{Duration, Instant};

use compio::BufResult;

use crate::device::{AnyDevice, Device};
use crate::error::Result;
use crate::format::summary::{decode_summary, SummaryError};
use crate::format::{
    encoded_record_len, BlockHeader, BlockHeaderError, BlockKind, BlockState, RecordError,
    RecordIter, RecordKind, RecordMeta, RecordStop, BLOCK_HEADER_BYTES, MAX_KEY_BYTES,
    MAX_VALUE_BYTES, RECORD_FLAG_JOIN, RECORD_HEADER_BYTES,
};
use crate::store::{block_state, io_err, BlockId, BlockMeta, BlockMetas, DeviceInfo, Location};
use crate::AlignedBuf;

/// Whole-block reads kept in flight while data blocks are delivered in order.
pub const MAX_BLOCK_READS_IN_FLIGHT: usize = 8;

/// Header reads kept in flight (4 KiB each).
const HEADER_READS_IN_FLIGHT: usize = 32;

/// Bytes of block buffers recovery may hold at once (fewer reads are kept in
/// flight when blocks are very large).
const MAX_BUFFERED_BYTES: usize = 64 << 20;

/// One valid record found by recovery.
#[derive(Clone, Copy, Debug)]
pub struct RecoveredRecord<'a> {
    /// Header fields (kind, value type, mutation sequence, expiry).
    pub meta: RecordMeta,
    /// The key. (Recovery does not hand out values: a block with a summary is recovered
    /// without reading them; read a value at its location.)
    pub key: &'a [u8],
    /// Where the record is.
    pub location: Location,
}

/// A record that failed its checks but is followed by valid records in its block (damage,
/// not a torn tail), with the key its header claims (untrusted: the damage may be in the
/// key). Delivered in place, between the valid records around it, by
/// [`Store::create_or_open_reporting`](crate::Store::create_or_open_reporting), so a caller
/// can make the key answer an error instead of silently falling back to an older version.
#[derive(Clone, Copy, Debug)]
pub struct DamagedRecord<'a> {
    /// The key the damaged header claims, if its length fits the record.
    pub key: Option<&'a [u8]>,
    /// Where the damaged record is (its claimed length).
    pub location: Location,
}

/// What recovery hands the caller, in delivery order.
#[derive(Clone, Copy, Debug)]
pub enum Recovered<'r, 'a> {
    /// A valid record.
    Record(&'r RecoveredRecord<'a>),
    /// A damaged record followed by valid ones.
    Damaged(&'r DamagedRecord<'a>),
}

/// Where a block's valid records end before its scanned area does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Truncation {
    /// The block.
    pub block: BlockId,
    /// Offset from the block start where the valid records end.
    pub offset_bytes: u32,
    /// Why scanning stopped there.
    pub reason: String,
}

/// A data block found open by recovery: where its valid records end and what
/// they hold. [`Writer::adopt`](crate::Writer::adopt) continues appending at
/// `valid_end_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecoveredOpenBlock {
    /// The block.
    pub id: BlockId,
    /// The worker that wrote it (`owner_worker` of its header).
    pub owner_worker: u16,
    /// Offset from the block start where its valid records end (the end of
    /// the last valid record; [`BLOCK_HEADER_BYTES`] when it has none): where
    /// appends continue.
    pub valid_end_bytes: u32,
    /// Lowest mutation sequence of its valid records (0 if none).
    pub first_mutation_seq: u64,
    /// Highest mutation sequence of its valid records (0 if none).
    pub last_mutation_seq: u64,
    /// Its valid records include a tombstone.
    pub has_tombstones: bool,
}

/// What recovery found.
#[derive(Clone, Debug, Default)]
pub struct Recovery {
    /// Highest mutation sequence seen (start every writer above it).
    pub max_mutation_seq: u64,
    /// Highest block sequence seen.
    pub max_block_seq: u64,
    /// Commands of several records cut short by the crash (no end marker), dropped whole.
    pub partial_commands_dropped: u64,
    /// Valid records passed to the callback.
    pub records: u64,
    /// Block headers read.
    pub blocks_scanned: u64,
    /// Data blocks whose records were read and delivered (every data block on a full scan;
    /// the blocks not covered by an index checkpoint otherwise).
    pub data_blocks_scanned: u64,
    /// Sealed data blocks covered by an index checkpoint: their headers were read, their
    /// records were not (see [`Store::open_with_checkpoint`](crate::Store::open_with_checkpoint)).
    pub covered_blocks: u64,
    /// Blocks in use (valid data or checkpoint header).
    pub used_blocks: u64,
    /// Data blocks whose header says open (the block each writer was
    /// appending to when the previous run stopped, empty ones included), in
    /// delivery order; a [`Writer`](crate::Writer) may continue one with
    /// [`Writer::adopt`](crate::Writer::adopt).
    pub open_blocks: Vec<RecoveredOpenBlock>,
    /// Data blocks holding at least one valid tombstone record.
    pub tombstone_blocks: u64,
    /// Corrupt records skipped (followed by valid records in their block).
    pub corrupt_records: u64,
    /// Blocks whose valid records end early (torn tails, damage).
    pub truncations: Vec<Truncation>,
    /// Sealed data blocks recovered from their summary (their values were not read).
    pub summarised_blocks: u64,
    /// Sealed data blocks whose summary failed its checks (scanned whole instead).
    pub bad_summaries: u64,
    /// Blocks with a damaged or foreign header (treated as free).
    pub bad_headers: Vec<(BlockId, BlockHeaderError)>,
    /// Bytes read.
    pub bytes_read: u64,
    /// Time taken.
    pub elapsed: Duration,
}

/// The result of scanning one block's record area.
pub(crate) struct AreaScan {
    /// End of the last valid record (from the area start).
    pub(crate) valid_end: usize,
    /// Corrupt records skipped before `valid_end`.
    corrupt: u64,
    /// Why the scan stopped after `valid_end`, when not a clean end.
    stop_reason: Option<String>,
}

/// Claimed encoded length of the (corrupt) record at the start of `buf`, if
/// its length fields are plausible.
fn claimed_len(buf: &[u8]) -> Option<usize> {
    let header = buf.get(..RECORD_HEADER_BYTES)?;
    let key_len = u32::from_le_bytes(header[24..28].try_into().ok()?);
    let value_len = u32::from_le_bytes(header[28..32].try_into().ok()?);
    if key_len > MAX_KEY_BYTES || value_len > MAX_VALUE_BYTES {
        return None;
    }
    Some(encoded_record_len(key_len as usize, value_len as usize))
}

/// One item of a scanned record area.
pub(crate) enum AreaItem<'a> {
    Valid(crate::format::RecordRef<'a>),
    /// A corrupt record with a plausible length, followed by valid records: its
    /// claimed length and key.
    Damaged {
        len_bytes: usize,
        key: Option<&'a [u8]>,
    },
}

/// The key a corrupt record's header claims, if it fits in `len` bytes.
fn claimed_key(buf: &[u8], len: usize) -> Option<&[u8]> {
    let header = buf.get(..RECORD_HEADER_BYTES)?;
    let key_len = u32::from_le_bytes(header[24..28].try_into().ok()?) as usize;
    (RECORD_HEADER_BYTES + key_len <= len)
        .then(|| buf.get(RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + key_len))
        .flatten()
}

/// Scans `area` (a record area of block `block_seq`), calling `f(offset,
/// item)` for each valid record and for each corrupt record whose length is
/// plausible and that valid records follow (corrupt records at the end, a torn
/// tail, are not passed on).
pub(crate) fn scan_area<'a>(
    area: &'a [u8],
    block_seq: u64,
    mut f: impl FnMut(usize, AreaItem<'a>),
) -> AreaScan {
    let mut scanner = AreaScanner::default();
    while !scanner.step(area, block_seq, usize::MAX, &mut f) {}
    scanner.finish()
}

/// [`scan_area`] in steps: each [`AreaScanner::step`] looks at about a budget of bytes, so
/// a block-sized area can be scanned between other work (defrag does).
#[derive(Default)]
pub(crate) struct AreaScanner {
    /// Where the next step starts.
    base: usize,
    valid_end: usize,
    skipped: Vec<usize>,
    /// Damaged records not yet followed by a valid one: (offset, claimed length).
    pending: Vec<(usize, usize)>,
    /// `Some` once the scan has ended (with why it stopped, when not a clean end).
    stopped: Option<Option<String>>,
}

impl AreaScanner {
    /// True once the whole area has been scanned.
    pub(crate) fn done(&self) -> bool {
        self.stopped.is_some()
    }

    /// Scans on from where the last step stopped until about `budget_bytes` of records
    /// have been looked at (at least one record) or the area ends; calls `f` as
    /// [`scan_area`] does. Returns true when the scan has ended. Every step must be given
    /// the same `area` and `block_seq`.
    pub(crate) fn step<'a>(
        &mut self,
        area: &'a [u8],
        block_seq: u64,
        budget_bytes: usize,
        mut f: impl FnMut(usize, AreaItem<'a>),
    ) -> bool {
        if self.done() {
            return true;
        }
        let step_start = self.base;
        loop {
            let base = self.base;
            let mut it = RecordIter::new(&area[base..], block_seq);
            for (offset, record) in &mut it {
                for (at, len) in self.pending.drain(..) {
                    let key = claimed_key(&area[at..], len);
                    f(
                        at,
                        AreaItem::Damaged {
                            len_bytes: len,
                            key,
                        },
                    );
                }
                f(base + offset, AreaItem::Valid(record));
                self.valid_end = base + offset + record.encoded_len_bytes;
                if self.valid_end - step_start >= budget_bytes {
                    self.base = self.valid_end;
                    return false;
                }
            }
            let at = base + it.offset_bytes();
            match it.stop() {
                Some(RecordStop::EndOfBuffer) | Some(RecordStop::Unwritten) | None => {
                    let reason =
                        (at != self.valid_end).then(|| format!("skipped corrupt record at {at}"));
                    self.stopped = Some(reason);
                    return true;
                }
                Some(RecordStop::Error(RecordError::Corrupt(reason))) => {
                    match claimed_len(&area[at..]) {
                        Some(len) if at + len < area.len() => {
                            self.skipped.push(at);
                            self.pending.push((at, len));
                            self.base = at + len;
                        }
                        _ => {
                            self.stopped = Some(Some(format!("corrupt record ({reason})")));
                            return true;
                        }
                    }
                }
                Some(RecordStop::Error(e)) => {
                    self.stopped = Some(Some(e.to_string()));
                    return true;
                }
            }
        }
    }

    /// What the scan found (call once [`AreaScanner::step`] has returned true).
    pub(crate) fn finish(self) -> AreaScan {
        debug_assert!(self.done(), "area scan not finished");
        let valid_end = self.valid_end;
        let corrupt = self.skipped.iter().filter(|&&at| at < valid_end).count() as u64;
        AreaScan {
            valid_end,
            corrupt,
            stop_reason: self.stopped.flatten(),
        }
    }
}

/// Runs futures with several in flight and yields their outputs in the order
/// they were pushed (every running future is polled on each wake-up, so all of
/// them are submitted to the ring at once).
pub(crate) struct InOrder<'a, T> {
    slots: VecDeque<Slot<'a, T>>,
}

enum Slot<'a, T> {
    Running(Pin<Box<dyn Future<Output = T> + 'a>>),
    Done(T),
}

impl<'a, T> InOrder<'a, T> {
    pub(crate) fn new() -> Self {
        Self {
            slots: VecDeque::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn push(&mut self, f: impl Future<Output = T> + 'a) {
        self.slots.push_back(Slot::Running(Box::pin(f)));
    }

    /// The output of the oldest pushed future (`None` when none is left).
    pub(crate) async fn next(&mut self) -> Option<T> {
        poll_fn(|cx| {
            for slot in self.slots.iter_mut() {
                if let Slot::Running(f) = slot {
                    if let Poll::Ready(v) = f.as_mut().poll(cx) {
                        *slot = Slot::Done(v);
                    }
                }
            }
            match self.slots.front() {
                None => Poll::Ready(None),
                Some(Slot::Running(_)) => Poll::Pending,
                Some(Slot::Done(_)) => match self.slots.pop_front() {
                    Some(Slot::Done(v)) => Poll::Ready(Some(v)),
                    _ => unreachable!("front slot is done"),
                },
            }
        })
        .await
    }
}

/// A finished read of (part of) a block.
struct BlockRead {
    id: BlockId,
    offset_bytes: u64,
    res: std::io::Result<usize>,
    buf: AlignedBuf,
}

async fn read_block(
    device: &AnyDevice,
    id: BlockId,
    buf: AlignedBuf,
    offset_bytes: u64,
) -> BlockRead {
    let BufResult(res, buf) = device.read_at(buf, offset_bytes).await;
    BlockRead {
        id,
        offset_bytes,
        res,
        buf,
    }
}

/// A data block found by the header pass.
struct DataBlock {
    id: BlockId,
    header: BlockHeader,
    /// Delivery order: the first mutation sequence of the block.
    order_seq: u64,
}

/// Logs a progress line at most once a second.
struct Progress {
    start: Instant,
    last: Instant,
}

impl Progress {
    fn tick(&mut self, phase: &'static str, done: u64, total: u64, rec: &Recovery) {
        if self.last.elapsed() < Duration::from_secs(1) {
            return;
        }
        self.last = Instant::now();
        let secs = self.start.elapsed().as_secs_f64().max(1e-9);
        tracing::info!(
            phase,
            percent = done * 100 / total.max(1),
            records = rec.records,
            mb_per_s = (rec.bytes_read as f64 / 1e6 / secs) as u64,
            "recovery progress"
        );
    }
}

/// Scans every block of `devices` (ordered by device index), fills in the
/// block sequence, state and tombstone flag of each used block and calls
/// `on_record` per valid record, every key's versions in increasing mutation
/// sequence order (see the module documentation).
///
/// `covered(id, header)` is asked about every sealed data block: `Some(tombstones)` means
/// an index checkpoint covers it, so its records are not read (the block is kept as a
/// recovered block with that tombstone flag); `None` scans it.
pub(crate) async fn scan(
    devices: &[AnyDevice],
    infos: &[DeviceInfo],
    blocks: &[BlockMetas],
    covered: &mut dyn FnMut(BlockId, &BlockHeader) -> Option<bool>,
    mut on_record: impl FnMut(Recovered<'_, '_>),
) -> Result<Recovery> {
    let start = Instant::now();
    let mut rec = Recovery::default();
    let mut progress = Progress {
        start,
        last: Instant::now(),
    };
    let total_blocks: u64 = infos.iter().map(|d| d.superblock.block_count).sum();
    let max_align = infos.iter().map(|d| d.align_bytes).max().unwrap_or(4096);
    let max_block_bytes = infos
        .iter()
        .map(|d| d.superblock.block_size_bytes as usize)
        .max()
        .unwrap_or(BLOCK_HEADER_BYTES);
    let window = (MAX_BUFFERED_BYTES / max_block_bytes).clamp(1, MAX_BLOCK_READS_IN_FLIGHT);

    // Pass 1: every block header.
    let mut data: Vec<DataBlock> = Vec::new();
    {
        let mut ids = infos.iter().enumerate().flat_map(|(d, info)| {
            (0..info.superblock.block_count).map(move |b| BlockId {
                device: d as u16,
                block: b as u32,
            })
        });
        let mut bufs: Vec<AlignedBuf> = Vec::new();
        let mut reads = InOrder::new();
        loop {
            while reads.len() < HEADER_READS_IN_FLIGHT {
                let Some(id) = ids.next() else { break };
                let info = &infos[usize::from(id.device)];
                let buf = bufs
                    .pop()
                    .unwrap_or_else(|| AlignedBuf::zeroed(BLOCK_HEADER_BYTES, max_align));
                let offset = info.superblock.block_offset_bytes(u64::from(id.block));
                reads.push(read_block(
                    &devices[usize::from(id.device)],
                    id,
                    buf,
                    offset,
                ));
            }
            let Some(r) = reads.next().await else { break };
            r.res.map_err(|e| io_err(r.id.device, r.offset_bytes, e))?;
            rec.blocks_scanned += 1;
            rec.bytes_read += BLOCK_HEADER_BYTES as u64;
            let sb = &infos[usize::from(r.id.device)].superblock;
            let b = u64::from(r.id.block);
            let header = BlockHeader::decode(&r.buf[..BLOCK_HEADER_BYTES])
                .and_then(|h| h.map(|h| h.check_placement(sb, b).map(|()| h)).transpose());
            bufs.push(r.buf);
            let (d, id) = (r.id.device, r.id);
            let header = match header {
                Ok(None) => continue,
                Ok(Some(h)) => h,
                Err(e) => {
                    tracing::warn!(device = d, block = b, error = %e, "block header not usable; block treated as free");
                    rec.bad_headers.push((id, e));
                    continue;
                }
            };
            rec.used_blocks += 1;
            rec.max_block_seq = rec.max_block_seq.max(header.block_seq);
            rec.max_mutation_seq = rec.max_mutation_seq.max(header.last_mutation_seq);
            let meta = blocks[usize::from(d)].get(b as u32);
            meta.seq.store(header.block_seq, Ordering::Relaxed);
            meta.header_durable.store(true, Ordering::Relaxed);
            if header.kind != BlockKind::Data {
                // Checkpoints: not written yet; kept, never reclaimed.
                meta.state.store(block_state::PINNED, Ordering::Relaxed);
                continue;
            }
            meta.state.store(block_state::RECOVERED, Ordering::Relaxed);
            if header.state == BlockState::Sealed {
                if let Some(tombstones) = covered(id, &header) {
                    rec.covered_blocks += 1;
                    if tombstones {
                        meta.tombstones.store(true, Ordering::Relaxed);
                        rec.tombstone_blocks += 1;
                    }
                    continue;
                }
            }
            data.push(DataBlock {
                id,
                header,
                order_seq: header.first_mutation_seq,
            });
            progress.tick("block headers", rec.blocks_scanned, total_blocks, &rec);
        }
    }

    let mut bufs: Vec<AlignedBuf> = Vec::new();
    let take_buf = |bufs: &mut Vec<AlignedBuf>, id: BlockId| {
        let len = infos[usize::from(id.device)].superblock.block_size_bytes as usize;
        let mut buf = bufs
            .pop()
            .unwrap_or_else(|| AlignedBuf::zeroed(max_block_bytes, max_align));
        buf.set_len_bytes(len);
        buf
    };

    // Pass 2: an open block's header has no sequence range; its first valid
    // record gives its place in the order.
    {
        let open: Vec<usize> = (0..data.len())
            .filter(|&i| data[i].header.state == BlockState::Open)
            .collect();
        let mut next = open.iter();
        let mut reads = InOrder::new();
        loop {
            while reads.len() < window {
                let Some(&i) = next.next() else { break };
                let id = data[i].id;
                let offset = infos[usize::from(id.device)]
                    .superblock
                    .block_offset_bytes(u64::from(id.block));
                let buf = take_buf(&mut bufs, id);
                reads.push(async move {
                    (
                        i,
                        read_block(&devices[usize::from(id.device)], id, buf, offset).await,
                    )
                });
            }
            let Some((i, r)) = reads.next().await else {
                break;
            };
            r.res.map_err(|e| io_err(r.id.device, r.offset_bytes, e))?;
            rec.bytes_read += r.buf.len_bytes() as u64;
            let mut first = None;
            scan_area(
                &r.buf[BLOCK_HEADER_BYTES..],
                data[i].header.block_seq,
                |_, item| {
                    if let AreaItem::Valid(rr) = item {
                        first.get_or_insert(rr.meta.mutation_seq);
                    }
                },
            );
            // No valid record: nothing is delivered, the place does not matter.
            data[i].order_seq = first.unwrap_or(u64::MAX);
            bufs.push(r.buf);
        }
    }

    // Pass 3: data blocks in mutation order, records in block order. A sealed block with a
    // summary is read as its summary only (the records' headers and keys).
    data.sort_by_key(|b| (b.order_seq, b.header.block_seq));
    let mut commands = Commands::default();
    let data_blocks = data.len() as u64;
    rec.data_blocks_scanned = data_blocks;
    let mut delivered = 0u64;
    let mut next = data.iter();
    let mut reads = InOrder::new();
    // What pass 3 reads of a block: (where its summary starts in the read, if it has one;
    // device offset; length). A summary read covers the sectors holding the summary.
    let whole_block = |block: &DataBlock| -> (u64, usize) {
        let sb = &infos[usize::from(block.id.device)].superblock;
        (
            sb.block_offset_bytes(u64::from(block.id.block)),
            sb.block_size_bytes as usize,
        )
    };
    let block_read = |block: &DataBlock| -> (Option<usize>, u64, usize) {
        let (block_offset, block_len) = whole_block(block);
        let h = &block.header;
        if h.state == BlockState::Sealed && h.summary_len_bytes > 0 {
            let align = infos[usize::from(block.id.device)].align_bytes;
            let at = h.summary_offset_bytes();
            let start = at / align * align;
            let end = (at + h.summary_len_bytes as usize).next_multiple_of(align);
            (Some(at - start), block_offset + start as u64, end - start)
        } else {
            (None, block_offset, block_len)
        }
    };
    loop {
        while reads.len() < window {
            let Some(block) = next.next() else { break };
            let id = block.id;
            let (summary, offset, len) = block_read(block);
            let mut buf = take_buf(&mut bufs, id);
            buf.set_len_bytes(len);
            reads.push(async move {
                (
                    block,
                    summary,
                    read_block(&devices[usize::from(id.device)], id, buf, offset).await,
                )
            });
        }
        let Some((block, summary, r)) = reads.next().await else {
            break;
        };
        r.res.map_err(|e| io_err(r.id.device, r.offset_bytes, e))?;
        rec.bytes_read += r.buf.len_bytes() as u64;
        let meta = blocks[usize::from(block.id.device)].get(block.id.block);
        commands.before_block(block.header.owner_worker, block.order_seq, &mut rec);
        let summarised = summary.is_some_and(|skip| {
            match deliver_summary(
                &mut rec,
                block,
                &r.buf[skip..],
                meta,
                &mut commands,
                &mut on_record,
            ) {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(
                        device = block.id.device,
                        block = block.id.block,
                        error = %e,
                        "block summary not usable; scanning the whole block"
                    );
                    rec.bad_summaries += 1;
                    false
                }
            }
        });
        let buf = if summarised || summary.is_none() {
            r.buf
        } else {
            // The summary failed: the whole block, read now.
            bufs.push(r.buf);
            let (offset, _) = whole_block(block);
            let buf = take_buf(&mut bufs, block.id);
            let r = read_block(
                &devices[usize::from(block.id.device)],
                block.id,
                buf,
                offset,
            )
            .await;
            r.res.map_err(|e| io_err(r.id.device, r.offset_bytes, e))?;
            rec.bytes_read += r.buf.len_bytes() as u64;
            r.buf
        };
        if !summarised {
            deliver_block(&mut rec, block, &buf, meta, &mut commands, &mut on_record);
        }
        bufs.push(buf);
        delivered += 1;
        progress.tick("data blocks", delivered, data_blocks, &rec);
    }

    commands.finish(&mut rec);
    rec.elapsed = start.elapsed();
    let secs = rec.elapsed.as_secs_f64().max(1e-9);
    tracing::info!(
        percent = 100,
        records = rec.records,
        used_blocks = rec.used_blocks,
        scanned_blocks = rec.data_blocks_scanned,
        summarised_blocks = rec.summarised_blocks,
        covered_blocks = rec.covered_blocks,
        truncated_blocks = rec.truncations.len(),
        corrupt_records = rec.corrupt_records,
        max_mutation_seq = rec.max_mutation_seq,
        mb_per_s = (rec.bytes_read as f64 / 1e6 / secs) as u64,
        "recovery done"
    );
    Ok(rec)
}

/// Counts one valid record of a block and hands it to its writer's command `cmd` (which
/// delivers it, or holds it until its command is known to be whole); true for a tombstone.
fn deliver_record<'a>(
    rec: &mut Recovery,
    cmd: &mut Cmd<'a>,
    meta: RecordMeta,
    key: &'a [u8],
    location: Location,
    on_record: &mut impl FnMut(Recovered<'_, '_>),
) -> bool {
    rec.records += 1;
    rec.max_mutation_seq = rec.max_mutation_seq.max(meta.mutation_seq);
    let key = std::borrow::Cow::Borrowed(key);
    cmd.record(
        Held {
            meta,
            key,
            location,
        },
        rec,
        on_record,
    );
    meta.kind == RecordKind::Tombstone
}

/// Marks a delivered block as holding tombstones (for reclaim's log-tail rule).
fn note_tombstones(rec: &mut Recovery, meta: &BlockMeta, tombstones: bool) {
    if tombstones {
        meta.tombstones.store(true, Ordering::Relaxed);
        rec.tombstone_blocks += 1;
    }
}

/// Passes the records of one sealed data block, as its summary `buf` lists them (the
/// summary's bytes first, then padding), to `on_record` and notes tombstones. Nothing is
/// delivered when the summary fails its checks (the caller scans the block instead).
fn deliver_summary(
    rec: &mut Recovery,
    block: &DataBlock,
    buf: &[u8],
    meta: &BlockMeta,
    commands: &mut Commands,
    on_record: &mut impl FnMut(Recovered<'_, '_>),
) -> std::result::Result<(), SummaryError> {
    let header = &block.header;
    let summary = buf
        .get(..header.summary_len_bytes as usize)
        .ok_or(SummaryError::Truncated(buf.len()))?;
    let entries = decode_summary(
        summary,
        header.block_seq,
        header.summary_crc,
        header.committed_len_bytes as usize,
    )?;
    let owner = header.owner_worker;
    let mut cmd: Cmd<'_> = commands.take(owner);
    let mut tombstones = false;
    for e in &entries {
        let location = Location {
            device: block.id.device,
            block: block.id.block,
            offset_bytes: e.offset_bytes as u32,
            len_bytes: e.encoded_len_bytes as u32,
        };
        tombstones |= deliver_record(rec, &mut cmd, e.meta, e.key, location, on_record);
    }
    commands.put(owner, cmd.into_owned());
    note_tombstones(rec, meta, tombstones);
    rec.summarised_blocks += 1;
    Ok(())
}

/// Passes the valid records of one data block (read whole into `buf`) to
/// `on_record` and notes truncations, corrupt records and tombstones.
fn deliver_block(
    rec: &mut Recovery,
    block: &DataBlock,
    buf: &[u8],
    meta: &BlockMeta,
    commands: &mut Commands,
    on_record: &mut impl FnMut(Recovered<'_, '_>),
) {
    let owner = block.header.owner_worker;
    let mut cmd: Cmd<'_> = commands.take(owner);
    let (d, b) = (block.id.device, block.id.block);
    let header = &block.header;
    let area_end = match header.state {
        BlockState::Open => buf.len(),
        BlockState::Sealed => BLOCK_HEADER_BYTES + header.committed_len_bytes as usize,
    };
    let area = &buf[BLOCK_HEADER_BYTES..area_end];
    let mut tombstones = false;
    let (mut first_seq, mut last_seq, mut valid) = (u64::MAX, 0u64, false);
    let scan = scan_area(area, header.block_seq, |offset, item| {
        let r = match item {
            AreaItem::Valid(r) => r,
            AreaItem::Damaged { len_bytes, key } => {
                on_record(Recovered::Damaged(&DamagedRecord {
                    key,
                    location: Location {
                        device: d,
                        block: b,
                        offset_bytes: (BLOCK_HEADER_BYTES + offset) as u32,
                        len_bytes: len_bytes as u32,
                    },
                }));
                return;
            }
        };
        let location = Location {
            device: d,
            block: b,
            offset_bytes: (BLOCK_HEADER_BYTES + offset) as u32,
            len_bytes: r.encoded_len_bytes as u32,
        };
        first_seq = first_seq.min(r.meta.mutation_seq);
        last_seq = last_seq.max(r.meta.mutation_seq);
        valid = true;
        tombstones |= deliver_record(rec, &mut cmd, r.meta, r.key, location, on_record);
    });
    commands.put(owner, cmd.into_owned());
    note_tombstones(rec, meta, tombstones);
    if header.state == BlockState::Open {
        rec.open_blocks.push(RecoveredOpenBlock {
            id: block.id,
            owner_worker: header.owner_worker,
            valid_end_bytes: (BLOCK_HEADER_BYTES + scan.valid_end) as u32,
            first_mutation_seq: if valid { first_seq } else { 0 },
            last_mutation_seq: last_seq,
            has_tombstones: tombstones,
        });
    }
    if scan.corrupt > 0 {
        tracing::error!(
            device = d,
            block = b,
            records = scan.corrupt,
            "corrupt records skipped by recovery"
        );
        rec.corrupt_records += scan.corrupt;
    }
    let stop_reason = scan.stop_reason.or_else(|| {
        (header.state == BlockState::Sealed && scan.valid_end < area.len())
            .then(|| "sealed block's records end before its committed length".to_string())
    });
    if let Some(reason) = stop_reason {
        let offset_bytes = (BLOCK_HEADER_BYTES + scan.valid_end) as u32;
        tracing::info!(device = d, block = b, offset_bytes, %reason, "block tail truncated");
        rec.truncations.push(Truncation {
            block: block.id,
            offset_bytes,
            reason,
        });
    }
}

/// One key's winning record in a [`RecoveredIndex`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    /// The record's header fields.
    pub meta: RecordMeta,
    /// Where the record is.
    pub location: Location,
}

/// A simple `HashMap` index rebuilt from recovered records: the highest
/// mutation sequence of each key wins (tombstones included, so an older value
/// never resurfaces). For tests and tools; the server has its own index.
#[derive(Clone, Debug, Default)]
pub struct RecoveredIndex {
    /// Winning record per key.
    pub entries: HashMap<Vec<u8>, IndexEntry>,
}

impl RecoveredIndex {
    /// Applies one recovered record.
    pub fn apply(&mut self, r: &RecoveredRecord<'_>) {
        let entry = IndexEntry {
            meta: r.meta,
            location: r.location,
        };
        match self.entries.get_mut(r.key) {
            Some(old) if old.meta.mutation_seq >= r.meta.mutation_seq => {}
            Some(old) => *old = entry,
            None => {
                self.entries.insert(r.key.to_vec(), entry);
            }
        }
    }

    /// The winning value record of `key` (`None` if absent or deleted).
    pub fn get(&self, key: &[u8]) -> Option<&IndexEntry> {
        self.entries
            .get(key)
            .filter(|e| e.meta.kind != RecordKind::Tombstone)
    }

    /// Keys whose winning record is not a tombstone.
    pub fn live(&self) -> impl Iterator<Item = (&[u8], &IndexEntry)> {
        self.entries
            .iter()
            .filter(|(_, e)| e.meta.kind != RecordKind::Tombstone)
            .map(|(k, e)| (k.as_slice(), e))
    }
}

/// A record held back until its command is known to be whole.
struct Held<'a> {
    meta: RecordMeta,
    key: std::borrow::Cow<'a, [u8]>,
    location: Location,
}

impl Held<'_> {
    fn deliver(&self, on_record: &mut impl FnMut(Recovered<'_, '_>)) {
        on_record(Recovered::Record(&RecoveredRecord {
            meta: self.meta,
            key: &self.key,
            location: self.location,
        }));
    }

    fn into_owned(self) -> Held<'static> {
        Held {
            meta: self.meta,
            key: std::borrow::Cow::Owned(self.key.into_owned()),
            location: self.location,
        }
    }
}

/// The records of one writer's multi-record command seen so far. Such a command flags
/// every record it writes `RECORD_FLAG_JOIN` and ends with a `CommandEnd` marker; its
/// records are delivered only once the marker is seen. A command cut short by the crash
/// (no marker before the writer's next plain record, or before the writer's records end)
/// is dropped whole, so a multi-key command is all or nothing after a torn write, as an
/// AOF replay is in Redis. Plain records (one-record commands) are delivered at once.
#[derive(Default)]
struct Cmd<'a> {
    records: Vec<Held<'a>>,
}

impl<'a> Cmd<'a> {
    fn last_seq(&self) -> u64 {
        self.records.last().map_or(0, |r| r.meta.mutation_seq)
    }

    fn record(
        &mut self,
        r: Held<'a>,
        rec: &mut Recovery,
        on_record: &mut impl FnMut(Recovered<'_, '_>),
    ) {
        if r.meta.kind == RecordKind::CommandEnd {
            for h in self.records.drain(..) {
                h.deliver(on_record);
            }
        } else if r.meta.flags & RECORD_FLAG_JOIN != 0 {
            self.records.push(r);
        } else {
            self.drop_partial(rec);
            r.deliver(on_record);
        }
    }

    /// The command's marker will never come: drop what it wrote.
    fn drop_partial(&mut self, rec: &mut Recovery) {
        if self.records.is_empty() {
            return;
        }
        rec.partial_commands_dropped += 1;
        tracing::warn!(
            records = self.records.len(),
            first_seq = self.records[0].meta.mutation_seq,
            "a multi-record command cut short by the crash is dropped whole"
        );
        self.records.clear();
    }

    fn into_owned(self) -> Cmd<'static> {
        Cmd {
            records: self.records.into_iter().map(Held::into_owned).collect(),
        }
    }
}

/// Every writer's multi-record command still open at the end of its last delivered block
/// (one that straddles two blocks).
#[derive(Default)]
struct Commands {
    open: HashMap<u16, Cmd<'static>>,
}

impl Commands {
    fn take(&mut self, owner: u16) -> Cmd<'static> {
        self.open.remove(&owner).unwrap_or_default()
    }

    fn put(&mut self, owner: u16, cmd: Cmd<'static>) {
        if !cmd.records.is_empty() {
            self.open.insert(owner, cmd);
        }
    }

    /// Before a block of `owner` starting at mutation sequence `first_seq`: a writer's open
    /// command can go on only in that writer's next block, which starts right after its
    /// last record and sorts before any block starting later; anything else settles it.
    fn before_block(&mut self, owner: u16, first_seq: u64, rec: &mut Recovery) {
        let settled: Vec<u16> = self
            .open
            .iter()
            .filter(|(&u, c)| {
                let next = c.last_seq() + 1;
                let continues_here = u == owner && first_seq == next;
                !continues_here && (first_seq > next || u == owner)
            })
            .map(|(&u, _)| u)
            .collect();
        for u in settled {
            let mut c = self.open.remove(&u).expect("open");
            c.drop_partial(rec);
        }
    }

    fn finish(&mut self, rec: &mut Recovery) {
        for (_, mut c) in self.open.drain() {
            c.drop_partial(rec);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{encode_record, RecordKind, RecordMeta, VALUE_TYPE_STRING};

    /// An area of `n` records of mixed sizes with the records at `damaged` corrupted (one
    /// flipped value byte each); returns it and the records' offsets.
    fn area(n: usize, damaged: &[usize]) -> (Vec<u8>, Vec<usize>) {
        let mut buf = vec![0u8; 256 << 10];
        let mut at = 0;
        let mut offsets = Vec::new();
        for i in 0..n {
            let meta = RecordMeta {
                kind: RecordKind::Value,
                value_type: VALUE_TYPE_STRING,
                flags: 0,
                mutation_seq: i as u64 + 1,
                expiry_ms: 0,
            };
            let value = vec![i as u8; 100 + (i * 37) % 900];
            let key = format!("key{i}");
            offsets.push(at);
            let len = encode_record(&mut buf[at..], 7, &meta, key.as_bytes(), &value);
            if damaged.contains(&i) {
                buf[at + len - 20] ^= 0x40;
            }
            at += len;
        }
        (buf, offsets)
    }

    /// What a scan reports: (offset, valid, length).
    fn items(area: &[u8], step_bytes: Option<usize>) -> (Vec<(usize, bool, usize)>, AreaScan) {
        let mut out = Vec::new();
        let mut f = |at: usize, item: AreaItem<'_>| match item {
            AreaItem::Valid(r) => out.push((at, true, r.encoded_len_bytes)),
            AreaItem::Damaged { len_bytes, .. } => out.push((at, false, len_bytes)),
        };
        let scan = match step_bytes {
            None => scan_area(area, 7, &mut f),
            Some(budget) => {
                let mut scanner = AreaScanner::default();
                let mut steps = 0;
                while !scanner.step(area, 7, budget, &mut f) {
                    steps += 1;
                    assert!(steps < 10_000, "the scan does not advance");
                }
                assert!(scanner.done());
                scanner.finish()
            }
        };
        (out, scan)
    }

    #[test]
    fn a_scan_in_steps_finds_what_one_scan_finds() {
        for damaged in [vec![], vec![3], vec![0, 10, 11, 40], vec![59]] {
            let (buf, offsets) = area(60, &damaged);
            let (whole, whole_scan) = items(&buf, None);
            // Every record is reported, valid or damaged, except a damaged last one (a
            // torn tail is not passed on).
            let valid = whole.iter().filter(|i| i.1).count();
            assert_eq!(valid, 60 - damaged.len(), "{damaged:?}");
            assert_eq!(
                whole.len(),
                60 - usize::from(damaged.contains(&59)),
                "{damaged:?}"
            );
            for (at, valid, _) in &whole {
                assert!(offsets.contains(at));
                let i = offsets
                    .iter()
                    .position(|o| o == at)
                    .expect("a record's offset");
                assert_eq!(*valid, !damaged.contains(&i));
            }
            for budget in [1, 500, 4096, 64 << 10] {
                let (stepped, scan) = items(&buf, Some(budget));
                assert_eq!(stepped, whole, "{damaged:?} budget {budget}");
                assert_eq!(scan.valid_end, whole_scan.valid_end);
                assert_eq!(scan.corrupt, whole_scan.corrupt);
                assert_eq!(scan.stop_reason, whole_scan.stop_reason);
            }
        }
    }

    #[test]
    fn a_step_stops_near_its_budget() {
        let (buf, _) = area(60, &[]);
        let mut scanner = AreaScanner::default();
        let mut seen = 0usize;
        assert!(!scanner.step(&buf, 7, 4096, |_, item| {
            if let AreaItem::Valid(r) = item {
                seen += r.encoded_len_bytes;
            }
        }));
        assert!((4096..4096 + 1100).contains(&seen), "{seen}");
    }
}
