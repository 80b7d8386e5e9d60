//! The read path: a record by [`Location`], from the writer's staging images
//! when it is still there, else with one aligned device read, CRC-checked.

use compio::BufResult;

use crate::device::Device;
use crate::error::{Result, StoreError};
use crate::format::{decode_record, RecordMeta};
use crate::store::Location;
use crate::writer::Writer;
use crate::AlignedBuf;

/// Reads of at most this many bytes (after alignment) use a pooled buffer of this
/// capacity (or of the device alignment, when that is larger).
const POOLED_READ_BYTES: usize = 4096;

/// Capacity of a pooled read buffer for a device of alignment `align_bytes`.
fn pooled_read_capacity(align_bytes: usize) -> usize {
    POOLED_READ_BYTES.max(align_bytes)
}

/// Pooled read buffers kept per writer (one per read in flight is enough; beyond this,
/// buffers are freed).
const POOLED_READ_BUFS_KEPT: usize = 256;

/// Owned bytes of a record.
#[derive(Debug)]
pub(crate) enum Bytes {
    Vec(Vec<u8>),
    Aligned(AlignedBuf),
}

impl From<Vec<u8>> for Bytes {
    fn from(v: Vec<u8>) -> Self {
        Bytes::Vec(v)
    }
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Vec(v) => v,
            Bytes::Aligned(b) => b.as_slice(),
        }
    }
}

/// A decoded, checked record owning its bytes.
#[derive(Debug)]
pub struct RecordBytes {
    bytes: Bytes,
    meta: RecordMeta,
    key_start: usize,
    key_len: usize,
    value_len: usize,
}

impl RecordBytes {
    /// Decodes the record at `start` of `bytes` (block `block_seq`); `None`
    /// unless it is a valid record.
    pub(crate) fn decode(bytes: Bytes, start: usize, block_seq: u64) -> Option<Self> {
        let r = decode_record(bytes.as_slice().get(start..)?, block_seq).ok()??;
        let (meta, key_len, value_len) = (r.meta, r.key.len(), r.value.len());
        Some(Self {
            bytes,
            meta,
            key_start: start + crate::format::RECORD_HEADER_BYTES,
            key_len,
            value_len,
        })
    }

    /// The record's header fields.
    pub fn meta(&self) -> &RecordMeta {
        &self.meta
    }

    /// The key.
    pub fn key(&self) -> &[u8] {
        &self.bytes.as_slice()[self.key_start..self.key_start + self.key_len]
    }

    /// The value (empty for a tombstone).
    pub fn value(&self) -> &[u8] {
        let start = self.key_start + self.key_len;
        &self.bytes.as_slice()[start..start + self.value_len]
    }
}

impl Writer {
    /// A buffer of `len_bytes` (a multiple of `align_bytes`) for a device read: from the
    /// pool when it is small, else a fresh one.
    fn read_buf(&self, len_bytes: usize, align_bytes: usize) -> AlignedBuf {
        let pooled_bytes = pooled_read_capacity(align_bytes);
        if len_bytes > pooled_bytes {
            return AlignedBuf::zeroed(len_bytes, align_bytes);
        }
        let mut buf = match self.read_bufs.borrow_mut().pop() {
            Some(b) if b.align_bytes() == align_bytes => b,
            _ => AlignedBuf::new(pooled_bytes, align_bytes),
        };
        buf.set_len_bytes(len_bytes);
        buf
    }

    /// Gives the buffer of a record returned by [`Writer::read`] back to this writer's
    /// read pool (the caller is done with its value). Optional: a dropped record frees
    /// its buffer.
    pub fn recycle(&self, record: RecordBytes) {
        let Bytes::Aligned(buf) = record.bytes else {
            return;
        };
        if buf.capacity_bytes() == pooled_read_capacity(buf.align_bytes()) {
            let mut pool = self.read_bufs.borrow_mut();
            if pool.len() < POOLED_READ_BUFS_KEPT {
                pool.push(buf);
            }
        }
    }

    /// Reads the record at `location`: from this writer's staging images when
    /// it is there, else with one aligned read covering the record (start
    /// rounded down, end rounded up to the device alignment), then decoded and
    /// CRC-checked.
    ///
    /// Errors: [`StoreError::Corrupt`] (and an error log line) when the bytes
    /// are not the intact record the location describes — never wrong bytes;
    /// [`StoreError::Io`] when the read fails.
    pub async fn read(&self, location: &Location) -> Result<RecordBytes> {
        if let Some(r) = self.staged(location) {
            return Ok(r);
        }
        let store = self.store();
        let id = location.block_id();
        let align = store.align_bytes(location.device) as u64;
        let start_bytes = store.block_offset_bytes(id) + u64::from(location.offset_bytes);
        let end_bytes = start_bytes + u64::from(location.len_bytes);
        let read_start = start_bytes / align * align;
        let read_end = end_bytes.next_multiple_of(align);
        let buf = self.read_buf((read_end - read_start) as usize, align as usize);
        let device = &self.devices()[usize::from(location.device)];
        let started = quanta::Instant::now();
        let BufResult(res, buf) = device.read_at(buf, read_start).await;
        self.record_read(started.elapsed().as_nanos() as u64, read_end - read_start);
        res.map_err(|e| StoreError::Io {
            device: location.device,
            offset_bytes: read_start,
            source: e,
        })?;
        let block_seq = store.block_seq(id);
        let start = (start_bytes - read_start) as usize;
        let record = (block_seq != 0)
            .then(|| RecordBytes::decode(Bytes::Aligned(buf), start, block_seq))
            .flatten()
            .filter(|r| {
                crate::format::encoded_record_len(r.key_len, r.value_len)
                    == location.len_bytes as usize
            });
        record.ok_or_else(|| {
            tracing::error!(
                device = location.device,
                block = location.block,
                offset_bytes = location.offset_bytes,
                len_bytes = location.len_bytes,
                "corrupt record: checksum or length mismatch; not served"
            );
            StoreError::Corrupt {
                device: location.device,
                block: location.block,
                offset_bytes: location.offset_bytes,
            }
        })
    }
}
