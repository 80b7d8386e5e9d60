//! Store-side support for defrag: choosing the block a worker should rewrite next, and
//! reading a block's records for it.
//!
//! The store cannot tell which records of a block are still needed (only the caller's index
//! knows), so defrag is driven by the caller: it asks [`Store::defrag_victim`] for a block,
//! reads it with [`Writer::read_block`], and for every record its index still points at,
//! appends a copy through its writer (a fresh mutation sequence: the copy *is* the key's
//! current version) and [`Writer::release`]s the old location. Releases take effect once
//! the copies are durable, and the emptied block is then reclaimed like any other. Because
//! copies only ever move live records to the log head, the ordering arguments of recovery
//! and the log-tail rule of reclaim hold unchanged (`docs/decisions/0007-defrag.md`).
//!
//! Which worker rewrites which block: a block written in this run holds only keys of the
//! worker that wrote it, so only that worker is offered it; a recovered block may hold keys
//! of any worker (the thread count may have changed), so every worker is offered it once and
//! moves its own keys (the caller remembers which recovered blocks it has done).

use std::ops::Range;
use std::sync::atomic::Ordering;

use compio::BufResult;

use crate::error::Result;
use crate::format::summary::decode_summary;
use crate::format::{
    decode_record, BlockHeader, BlockKind, BlockState, RecordKind, RecordMeta, BLOCK_HEADER_BYTES,
    RECORD_HEADER_BYTES,
};
use crate::recovery::{AreaItem, AreaScanner};
use crate::store::{block_state, io_err, BlockId, Location};
use crate::{AlignedBuf, Device, Store, Writer};

/// What defrag may do ([`Store::defrag_victim`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefragPolicy {
    /// A block is rewritten only when its live bytes are below this percentage of its
    /// record area.
    pub max_live_ratio_pct: u32,
    /// Sparse blocks are rewritten only while free blocks are below this percentage of all
    /// blocks (100: always). Rewriting early costs device bandwidth for space not needed yet.
    pub free_target_pct: u32,
    /// When at least this many blocks holding only obsolete records and tombstones wait
    /// behind the log tail (the oldest block in use, which still has live records), the
    /// tail block is rewritten whatever its live ratio, so the tombstones can go. 0: never.
    pub tombstone_backlog_blocks: u32,
}

impl Default for DefragPolicy {
    fn default() -> Self {
        DefragPolicy {
            max_live_ratio_pct: 50,
            free_target_pct: 20,
            tombstone_backlog_blocks: 4,
        }
    }
}

/// Why a block was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VictimReason {
    /// Its live ratio is under the policy's limit and free space is under the target.
    Sparse,
    /// It is the log tail holding tombstone blocks back.
    LogTail,
}

/// A block to rewrite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Victim {
    /// The block.
    pub id: BlockId,
    /// Its block sequence when chosen (the block is skipped if it changes).
    pub block_seq: u64,
    /// Its live bytes when chosen.
    pub live_bytes: u64,
    /// Why.
    pub reason: VictimReason,
}

/// Space facts defrag reports ([`Store::defrag_outlook`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefragOutlook {
    /// Sealed or recovered blocks with live bytes under the policy's ratio.
    pub sparse_blocks: u64,
    /// Blocks holding only obsolete records and tombstones, waiting for the log tail.
    pub tombstone_backlog_blocks: u64,
}

impl Store {
    /// The block `worker` should rewrite next under `policy`, if any; `done(id, block_seq)`
    /// says which recovered blocks the caller has already rewritten its keys from.
    pub fn defrag_victim(
        &self,
        worker: u16,
        policy: &DefragPolicy,
        done: impl Fn(BlockId, u64) -> bool,
    ) -> Option<Victim> {
        let recovery_done = self.inner().recovery_done.load(Ordering::SeqCst);
        if !recovery_done {
            return None;
        }
        let mut total = 0u64;
        let mut tail: Option<(u64, BlockId)> = None;
        let mut backlog = 0u32;
        let mut best: Option<(u64, BlockId, u64)> = None; // (live, id, seq)
        for (d, metas) in self.inner().blocks.iter().enumerate() {
            for (b, m) in metas.iter().enumerate() {
                total += 1;
                let state = m.state.load(Ordering::SeqCst);
                if matches!(state, block_state::FREE | block_state::RESERVED) {
                    continue;
                }
                let id = BlockId {
                    device: d as u16,
                    block: b as u32,
                };
                let seq = m.seq.load(Ordering::SeqCst);
                if tail.is_none_or(|(s, _)| seq < s) {
                    tail = Some((seq, id));
                }
                let live = m.live_bytes.load(Ordering::SeqCst);
                let settled = matches!(state, block_state::SEALED | block_state::RECOVERED);
                if settled && live == 0 && m.tombstones.load(Ordering::SeqCst) {
                    backlog += 1;
                }
                if !self.defraggable(id, state, worker) || live == 0 || done(id, seq) {
                    continue;
                }
                if best.is_none_or(|(l, _, _)| live < l) {
                    best = Some((live, id, seq));
                }
            }
        }
        let free = self.inner().free_count.load(Ordering::Relaxed);
        if let Some((live, id, seq)) = best {
            let area = self.block_size_bytes(id.device) - BLOCK_HEADER_BYTES as u64;
            let sparse = live * 100 < area * u64::from(policy.max_live_ratio_pct);
            // Short of space: under the target, or low enough that writes wait for room.
            let short = free * 100 < total * u64::from(policy.free_target_pct) || self.space_low();
            if sparse && short && !self.is_adoptable(id) {
                return Some(Victim {
                    id,
                    block_seq: seq,
                    live_bytes: live,
                    reason: VictimReason::Sparse,
                });
            }
        }
        if policy.tombstone_backlog_blocks > 0 && backlog >= policy.tombstone_backlog_blocks {
            if let Some((seq, id)) = tail {
                let m = self.meta(id);
                let state = m.state.load(Ordering::SeqCst);
                let live = m.live_bytes.load(Ordering::SeqCst);
                if live > 0
                    && self.defraggable(id, state, worker)
                    && !done(id, seq)
                    && !self.is_adoptable(id)
                {
                    return Some(Victim {
                        id,
                        block_seq: seq,
                        live_bytes: live,
                        reason: VictimReason::LogTail,
                    });
                }
            }
        }
        None
    }

    /// Counts of what defrag may have to do (for INFO; one pass over the blocks).
    pub fn defrag_outlook(&self, policy: &DefragPolicy) -> DefragOutlook {
        let mut out = DefragOutlook::default();
        for (d, metas) in self.inner().blocks.iter().enumerate() {
            let area = self.block_size_bytes(d as u16) - BLOCK_HEADER_BYTES as u64;
            for m in metas.iter() {
                let state = m.state.load(Ordering::Relaxed);
                if !matches!(state, block_state::SEALED | block_state::RECOVERED) {
                    continue;
                }
                let live = m.live_bytes.load(Ordering::Relaxed);
                if live == 0 {
                    if m.tombstones.load(Ordering::Relaxed) {
                        out.tombstone_backlog_blocks += 1;
                    }
                } else if live * 100 < area * u64::from(policy.max_live_ratio_pct) {
                    out.sparse_blocks += 1;
                }
            }
        }
        out
    }

    /// A settled block `worker` may rewrite: sealed and durable (or recovered, after
    /// recovery), written by `worker` in this run or recovered.
    fn defraggable(&self, id: BlockId, state: u8, worker: u16) -> bool {
        if !matches!(state, block_state::SEALED | block_state::RECOVERED) {
            return false;
        }
        let writer = self.meta(id).run_writer.load(Ordering::Relaxed);
        writer == 0 || writer == u32::from(worker) + 1
    }
}

/// One record of a [`BlockImage`].
#[derive(Clone, Debug)]
struct ImageRecord {
    offset_bytes: u32,
    len_bytes: u32,
    meta: RecordMeta,
    key: Range<usize>,
    value: Range<usize>,
}

/// The value records of one block as read from its device, for defrag.
///
/// A sealed block with a sound summary lists its records from the summary at once, and a
/// record's value is CRC-checked only when it is asked for ([`BlockImage::value`]): defrag
/// asks only for the records still live, which in a victim are a small part of the block,
/// so the dead ones' bytes are never read by the CPU. Any other block (open when its
/// writer stopped, or a damaged summary) is scanned, CRC-checking every record, a step at
/// a time ([`BlockImage::scan`]), so a block-sized image never holds its worker for long.
pub struct BlockImage {
    id: BlockId,
    block_seq: u64,
    buf: AlignedBuf,
    /// End of the record area (the committed length of a sealed block).
    end: usize,
    scanner: AreaScanner,
    records: Vec<ImageRecord>,
    /// The records came from the summary: every one is listed, none is CRC-checked yet.
    from_summary: bool,
}

impl BlockImage {
    /// The block.
    pub fn id(&self) -> BlockId {
        self.id
    }

    /// The block sequence the image was read with.
    pub fn block_seq(&self) -> u64 {
        self.block_seq
    }

    /// Number of value records found so far (tombstones are not listed: they are never
    /// live).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when no value record has been found so far.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// True once every record of the block has been found.
    pub fn scanned(&self) -> bool {
        self.from_summary || self.scanner.done()
    }

    /// Finds the next records: looks at about `budget_bytes` of the block (at least one
    /// record) and adds the valid value records among them. Damaged records are skipped
    /// (their keys keep reporting the damage). Returns true once the whole block has been
    /// scanned.
    pub fn scan(&mut self, budget_bytes: usize) -> bool {
        if self.from_summary {
            return true;
        }
        let area = &self.buf[BLOCK_HEADER_BYTES..self.end];
        let base = self.buf.as_ptr() as usize;
        let records = &mut self.records;
        self.scanner
            .step(area, self.block_seq, budget_bytes, |offset, item| {
                if let AreaItem::Valid(r) = item {
                    if r.meta.kind == RecordKind::Tombstone {
                        return;
                    }
                    // Key and value are sub-slices of `area`; keep them as ranges of `buf`.
                    let range = |s: &[u8]| {
                        if s.is_empty() {
                            0..0
                        } else {
                            let at = s.as_ptr() as usize - base;
                            at..at + s.len()
                        }
                    };
                    records.push(ImageRecord {
                        offset_bytes: (BLOCK_HEADER_BYTES + offset) as u32,
                        len_bytes: r.encoded_len_bytes as u32,
                        meta: r.meta,
                        key: range(r.key),
                        value: range(r.value),
                    });
                }
            })
    }

    /// The buffer the block was read into, for the next [`Writer::read_block`].
    pub fn into_buf(self) -> AlignedBuf {
        self.buf
    }

    /// Value record `i` (`i < len()`): where it is, its header fields and its key.
    pub fn record(&self, i: usize) -> (Location, &RecordMeta, &[u8]) {
        let r = &self.records[i];
        (
            Location {
                device: self.id.device,
                block: self.id.block,
                offset_bytes: r.offset_bytes,
                len_bytes: r.len_bytes,
            },
            &r.meta,
            &self.buf[r.key.clone()],
        )
    }

    /// The value of record `i` (`i < len()`), CRC-checked; `None` when the record is
    /// damaged (its bytes do not match its checksum, or not the header and key the
    /// summary lists). A damaged record is left where it is: reads of its key report the
    /// damage.
    pub fn value(&self, i: usize) -> Option<&[u8]> {
        let r = &self.records[i];
        if !self.from_summary {
            // The scan checked it.
            return Some(&self.buf[r.value.clone()]);
        }
        let at = r.offset_bytes as usize;
        let bytes = self.buf.get(at..at + r.len_bytes as usize)?;
        match decode_record(bytes, self.block_seq) {
            Ok(Some(rec))
                if rec.meta == r.meta
                    && rec.key == &self.buf[r.key.clone()]
                    && rec.encoded_len_bytes == r.len_bytes as usize =>
            {
                Some(rec.value)
            }
            _ => None,
        }
    }

    /// Lists the records from the block's summary (`header`'s), if it has a sound one
    /// (else the block is scanned).
    fn list_from_summary(&mut self, header: &BlockHeader) {
        if header.state != BlockState::Sealed || header.summary_len_bytes == 0 {
            return;
        }
        let at = header.summary_offset_bytes();
        let Some(summary) = self.buf.get(at..at + header.summary_len_bytes as usize) else {
            return;
        };
        let entries = match decode_summary(
            summary,
            self.block_seq,
            header.summary_crc,
            header.committed_len_bytes as usize,
        ) {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(
                    device = self.id.device,
                    block = self.id.block,
                    "defrag: block summary not usable ({e}); scanning the block"
                );
                return;
            }
        };
        let base = self.buf.as_ptr() as usize;
        self.records.clear();
        self.records.reserve_exact(entries.len());
        for e in entries {
            if e.meta.kind == RecordKind::Tombstone {
                continue;
            }
            let key_at = e.key.as_ptr() as usize - base;
            let value_at = e.offset_bytes + RECORD_HEADER_BYTES + e.key.len();
            self.records.push(ImageRecord {
                offset_bytes: e.offset_bytes as u32,
                len_bytes: e.encoded_len_bytes as u32,
                meta: e.meta,
                // The summary's copy of the key: checked by the summary's CRC, and
                // compared with the record's own when its value is asked for.
                key: key_at..key_at + e.key.len(),
                value: value_at..value_at,
            });
        }
        self.from_summary = true;
    }
}

impl Writer {
    /// Reads block `id` for defrag; its records are then found by [`BlockImage::scan`].
    /// `None` when the block is no longer the one chosen (its block sequence changed:
    /// reclaimed, reused) or its header is not a data block's with that sequence.
    ///
    /// `spare` is a buffer from an earlier image ([`BlockImage::into_buf`]) to read into
    /// instead of mapping a new block-sized one (it is used when its size and alignment
    /// fit); every byte the image looks at is overwritten by the read.
    pub async fn read_block(
        &self,
        id: BlockId,
        block_seq: u64,
        spare: Option<AlignedBuf>,
    ) -> Result<Option<BlockImage>> {
        if self.store().block_seq(id) != block_seq {
            return Ok(None);
        }
        let dev = &self.devices()[usize::from(id.device)];
        let block_size = self.store().block_size_bytes(id.device) as usize;
        let align = self.store().align_bytes(id.device);
        let block_offset = self.store().block_offset_bytes(id);
        let mut buf = match spare {
            Some(b) if b.capacity_bytes() == block_size && b.align_bytes() >= align => b,
            _ => AlignedBuf::new(block_size, align),
        };
        buf.set_len_bytes(block_size);
        let BufResult(res, buf) = dev.read_at(buf, block_offset).await;
        let read_bytes = res.map_err(|e| io_err(id.device, block_offset, e))?;
        if read_bytes != block_size {
            return Err(io_err(
                id.device,
                block_offset,
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("short read of a block: {read_bytes} of {block_size} bytes"),
                ),
            ));
        }
        if self.store().block_seq(id) != block_seq {
            return Ok(None);
        }
        let header = match BlockHeader::decode(&buf[..BLOCK_HEADER_BYTES]) {
            Ok(Some(h)) if h.kind == BlockKind::Data && h.block_seq == block_seq => h,
            _ => {
                tracing::warn!(
                    device = id.device,
                    block = id.block,
                    "defrag: block header is not the expected one; block skipped"
                );
                return Ok(None);
            }
        };
        let end = match header.state {
            BlockState::Sealed => {
                (BLOCK_HEADER_BYTES + header.committed_len_bytes as usize).min(block_size)
            }
            _ => block_size,
        };
        let mut image = BlockImage {
            id,
            block_seq,
            buf,
            end,
            scanner: AreaScanner::default(),
            records: Vec::new(),
            from_summary: false,
        };
        image.list_from_summary(&header);
        Ok(Some(image))
    }
}
