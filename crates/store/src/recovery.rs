//! Recovery: a cold-start scan of every block of every device.
//!
//! Each block is read with one aligned read of the whole block. A block whose
//! header is all zero is free; a damaged or foreign header is logged and the
//! block is treated as free. A data block's records are decoded with
//! [`RecordIter`] over the committed length (sealed blocks) or the whole
//! record area (open blocks); every valid record goes to the caller's
//! callback, which rebuilds its index (the highest mutation sequence of a key
//! wins: [`RecoveredIndex`] does this with a `HashMap`).
//!
//! A corrupt record (bit flip) that is followed by valid records is skipped
//! (its claimed length is used to find the next record; the block-sequence
//! seeded CRC makes a wrong guess fail) and counted in
//! [`Recovery::corrupt_records`]. Where the valid records of a block end
//! before the scanned area does (a torn tail, damage), the block is reported
//! in [`Recovery::truncations`]. Recovery never writes: blocks found open are
//! not appended to again, so a later scan stops at the same place.
//!
//! Devices are scanned one after the other (parallel scan: not yet).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use compio::BufResult;

use crate::device::{AnyDevice, Device};
use crate::error::Result;
use crate::format::{
    encoded_record_len, BlockHeader, BlockHeaderError, BlockKind, BlockState, RecordError,
    RecordIter, RecordKind, RecordMeta, RecordStop, BLOCK_HEADER_BYTES, MAX_KEY_BYTES,
    MAX_VALUE_BYTES, RECORD_HEADER_BYTES,
};
use crate::store::{io_err, BlockId, DeviceInfo, Location};
use crate::AlignedBuf;

/// One valid record found by recovery.
#[derive(Clone, Copy, Debug)]
pub struct RecoveredRecord<'a> {
    /// Header fields (kind, value type, mutation sequence, expiry).
    pub meta: RecordMeta,
    /// The key.
    pub key: &'a [u8],
    /// The value (empty for a tombstone).
    pub value: &'a [u8],
    /// Where the record is.
    pub location: Location,
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

/// What recovery found.
#[derive(Clone, Debug, Default)]
pub struct Recovery {
    /// Highest mutation sequence seen (start every writer above it).
    pub max_mutation_seq: u64,
    /// Highest block sequence seen.
    pub max_block_seq: u64,
    /// Valid records passed to the callback.
    pub records: u64,
    /// Blocks scanned.
    pub blocks_scanned: u64,
    /// Blocks in use (valid data or checkpoint header).
    pub used_blocks: u64,
    /// Used blocks whose header says open.
    pub open_blocks: u64,
    /// Corrupt records skipped (followed by valid records in their block).
    pub corrupt_records: u64,
    /// Blocks whose valid records end early (torn tails, damage).
    pub truncations: Vec<Truncation>,
    /// Blocks with a damaged or foreign header (treated as free).
    pub bad_headers: Vec<(BlockId, BlockHeaderError)>,
    /// Bytes read.
    pub bytes_read: u64,
    /// Time taken.
    pub elapsed: Duration,
}

/// The result of scanning one block's record area.
struct AreaScan {
    /// End of the last valid record (from the area start).
    valid_end: usize,
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

/// Scans `area` (a record area of block `block_seq`), calling `f(offset,
/// record)` for each valid record, skipping corrupt records whose length is
/// plausible.
fn scan_area<'a>(
    area: &'a [u8],
    block_seq: u64,
    mut f: impl FnMut(usize, crate::format::RecordRef<'a>),
) -> AreaScan {
    let mut base = 0usize;
    let mut valid_end = 0usize;
    let mut skipped: Vec<usize> = Vec::new();
    let stop_reason;
    loop {
        let mut it = RecordIter::new(&area[base..], block_seq);
        for (offset, record) in &mut it {
            f(base + offset, record);
            valid_end = base + offset + record.encoded_len_bytes;
        }
        let at = base + it.offset_bytes();
        match it.stop() {
            Some(RecordStop::EndOfBuffer) | Some(RecordStop::Unwritten) | None => {
                stop_reason = (at != valid_end).then(|| format!("skipped corrupt record at {at}"));
                break;
            }
            Some(RecordStop::Error(RecordError::Corrupt(reason))) => {
                match claimed_len(&area[at..]) {
                    Some(len) if at + len < area.len() => {
                        skipped.push(at);
                        base = at + len;
                    }
                    _ => {
                        stop_reason = Some(format!("corrupt record ({reason})"));
                        break;
                    }
                }
            }
            Some(RecordStop::Error(e)) => {
                stop_reason = Some(e.to_string());
                break;
            }
        }
    }
    let corrupt = skipped.iter().filter(|&&at| at < valid_end).count() as u64;
    AreaScan {
        valid_end,
        corrupt,
        stop_reason,
    }
}

/// Scans every block of `devices` (ordered by device index), fills in the
/// block sequence of each used block and calls `on_record` per valid record.
pub(crate) async fn scan(
    devices: &[AnyDevice],
    infos: &[DeviceInfo],
    block_seqs: &[Vec<AtomicU64>],
    mut on_record: impl FnMut(&RecoveredRecord<'_>),
) -> Result<Recovery> {
    let start = Instant::now();
    let mut rec = Recovery::default();
    let total_blocks: u64 = infos.iter().map(|d| d.superblock.block_count).sum();
    let mut last_progress = Instant::now();
    for (d, (device, info)) in devices.iter().zip(infos).enumerate() {
        let sb = &info.superblock;
        let block_size = sb.block_size_bytes as usize;
        let mut buf = AlignedBuf::zeroed(block_size, info.align_bytes);
        for b in 0..sb.block_count {
            let offset = sb.block_offset_bytes(b);
            let BufResult(res, back) = device.read_at(buf, offset).await;
            buf = back;
            res.map_err(|e| io_err(d as u16, offset, e))?;
            rec.blocks_scanned += 1;
            rec.bytes_read += block_size as u64;
            let id = BlockId {
                device: d as u16,
                block: b as u32,
            };
            let header = match BlockHeader::decode(&buf[..BLOCK_HEADER_BYTES])
                .and_then(|h| h.map(|h| h.check_placement(sb, b).map(|()| h)).transpose())
            {
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
            block_seqs[d][b as usize].store(header.block_seq, Ordering::Relaxed);
            if header.kind != BlockKind::Data {
                continue; // checkpoints: not written yet
            }
            let area_end = match header.state {
                BlockState::Open => {
                    rec.open_blocks += 1;
                    block_size
                }
                BlockState::Sealed => BLOCK_HEADER_BYTES + header.committed_len_bytes as usize,
            };
            let area = &buf[BLOCK_HEADER_BYTES..area_end];
            let scan = scan_area(area, header.block_seq, |offset, r| {
                let location = Location {
                    device: d as u16,
                    block: b as u32,
                    offset_bytes: (BLOCK_HEADER_BYTES + offset) as u32,
                    len_bytes: r.encoded_len_bytes as u32,
                };
                rec.records += 1;
                rec.max_mutation_seq = rec.max_mutation_seq.max(r.meta.mutation_seq);
                on_record(&RecoveredRecord {
                    meta: r.meta,
                    key: r.key,
                    value: r.value,
                    location,
                });
            });
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
                    block: id,
                    offset_bytes,
                    reason,
                });
            }
            if last_progress.elapsed() >= Duration::from_secs(1) {
                last_progress = Instant::now();
                let secs = start.elapsed().as_secs_f64().max(1e-9);
                tracing::info!(
                    percent = rec.blocks_scanned * 100 / total_blocks.max(1),
                    records = rec.records,
                    mb_per_s = (rec.bytes_read as f64 / 1e6 / secs) as u64,
                    "recovery progress"
                );
            }
        }
    }
    rec.elapsed = start.elapsed();
    let secs = rec.elapsed.as_secs_f64().max(1e-9);
    tracing::info!(
        percent = 100,
        records = rec.records,
        used_blocks = rec.used_blocks,
        truncated_blocks = rec.truncations.len(),
        corrupt_records = rec.corrupt_records,
        max_mutation_seq = rec.max_mutation_seq,
        mb_per_s = (rec.bytes_read as f64 / 1e6 / secs) as u64,
        "recovery done"
    );
    Ok(rec)
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
