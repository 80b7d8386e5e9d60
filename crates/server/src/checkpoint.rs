//! Index checkpoints: each worker writes its part of the index (every key with its record's
//! location, expiry and type) to a file in the data directory, at clean shutdown and every
//! `checkpoint-interval-seconds`; a restart loads the checkpoints and scans only the data
//! blocks they do not cover (see `docs/storage-format.md`, Index checkpoint, and decision
//! 0005 for why this restores exactly what the full scan would).
//!
//! Writing, on the worker: take the checkpoint's start sequence (`Writer::next_seq`) and the
//! sealed, durable blocks (`Store::sealed_blocks`, the *covered* blocks) in one synchronous
//! step; serialize the index a few thousand entries at a time (yielding between steps, so
//! the worker never stalls for long; the table's scan cursor walks the hash space stably
//! while keys change); wait until everything appended so far is durable
//! (`Writer::commit`), so that no entry references a record a crash could lose; only then
//! write the footer (CRC32C over the whole file), fsync, and rename the file into place.
//! The file I/O runs on a helper thread fed through a bounded channel.
//!
//! Loading ([`load_files`], used by `persist::open`): every worker's file must be intact
//! (length, CRC, version), written for the same number of workers and the same data
//! devices; otherwise the full scan is used and one log line says why.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use skerry_store::{BlockId, SealedBlock};

use crate::commands::server::{Figure, FigureKind};
use crate::keyspace::entry::PackedLoc;
use crate::worker::{local_shard, unix_ms, Shared};

/// Magic bytes at the start of a checkpoint file.
pub const MAGIC: [u8; 8] = *b"SKERRYIX";
/// Magic bytes at the very end of a complete checkpoint file.
pub const END_MAGIC: [u8; 4] = *b"IXOK";
/// Format version written and accepted by this build.
pub const VERSION: u32 = 1;
/// Bytes of the fixed header.
pub const HEADER_BYTES: usize = 64;
/// Bytes of one block-table row.
pub const BLOCK_ROW_BYTES: usize = 24;
/// Bytes of the footer.
pub const FOOTER_BYTES: usize = 24;

/// Route of a covered block: the block holds no record (of any key).
pub const ROUTE_NONE: u16 = 0xFFFE;
/// Route of a covered block: its records' keys route to several workers (or one is unreadable).
pub const ROUTE_MIXED: u16 = 0xFFFF;
/// Route of a covered block: every record's key routes to the block header's `owner_worker`
/// (a block written in the run that wrote the checkpoint).
pub const ROUTE_OWNER: u16 = 0xFFFD;

/// Entries serialized per step before the worker yields.
const ENTRIES_PER_STEP: usize = 4096;
/// Bytes of a buffer handed to the file thread.
const CHUNK_BYTES: usize = 1 << 20;
/// Bytes of each sequential read when loading.
const READ_BYTES: usize = 4 << 20;

/// The checkpoint file of `worker` in `dir`.
pub fn path(dir: &Path, worker: usize) -> PathBuf {
    dir.join(format!("skerry-index-{worker}.ckpt"))
}

fn tmp_path(dir: &Path, worker: usize) -> PathBuf {
    dir.join(format!("skerry-index-{worker}.ckpt.tmp"))
}

// ----- process-wide state (INFO, the routes recovery found) -----

/// How the index was rebuilt at startup.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    /// `checkpoint` or `scan`.
    pub source: &'static str,
    /// Why the checkpoints were not used (empty when they were, or when there were none).
    pub fallback_reason: String,
    /// Data blocks whose records were read.
    pub scanned_blocks: u64,
    /// Of those, the sealed blocks read as their summary (records' headers and keys only).
    pub summarised_blocks: u64,
    /// Data blocks covered by the checkpoints (records not read).
    pub covered_blocks: u64,
    /// Keys loaded from checkpoint files.
    pub checkpoint_entries: u64,
    /// Time from opening the data files to the index being ready, in ms.
    pub elapsed_ms: u64,
}

/// The route (see [`ROUTE_NONE`] and friends, or a worker index) of each block recovered
/// at startup, with its block sequence: what the next checkpoint records for it.
pub type Routes = std::collections::HashMap<BlockId, (u64, u16)>;

struct Global {
    report: Mutex<RecoveryReport>,
    routes: OnceLock<Routes>,
    written: AtomicU64,
    failed: AtomicU64,
    last_unix_ms: AtomicU64,
    last_duration_ms: AtomicU64,
    last_bytes: AtomicU64,
    in_progress: AtomicU64,
}

fn global() -> &'static Global {
    static G: OnceLock<Global> = OnceLock::new();
    G.get_or_init(|| Global {
        report: Mutex::new(RecoveryReport::default()),
        routes: OnceLock::new(),
        written: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        last_unix_ms: AtomicU64::new(0),
        last_duration_ms: AtomicU64::new(0),
        last_bytes: AtomicU64::new(0),
        in_progress: AtomicU64::new(0),
    })
}

/// Records how startup rebuilt the index (INFO `storage_recovery_*`).
pub fn set_report(report: RecoveryReport) {
    *global().report.lock().unwrap_or_else(|e| e.into_inner()) = report;
}

/// Records the routes of the blocks recovered at startup (once per process).
pub fn set_routes(routes: Routes) {
    let _ = global().routes.set(routes);
}

/// The `recovery_*` and `checkpoint_*` storage figures (INFO storage and `/metrics`).
pub(crate) fn figures() -> Vec<Figure> {
    use FigureKind::{Counter, Gauge};
    let g = global();
    let r = g.report.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let num = Figure::num;
    let source = if r.source.is_empty() {
        "scan"
    } else {
        r.source
    };
    vec![
        Figure::text(
            "recovery_source",
            "How the index was rebuilt at start: checkpoint or scan.",
            source.to_string(),
        ),
        num(
            "recovery_scanned_blocks",
            Gauge,
            "Blocks scanned at start.",
            r.scanned_blocks,
        ),
        num(
            "recovery_summarised_blocks",
            Gauge,
            "Scanned blocks read as their summary of keys, without their values.",
            r.summarised_blocks,
        ),
        num(
            "recovery_covered_blocks",
            Gauge,
            "Blocks covered by the loaded checkpoints (not scanned).",
            r.covered_blocks,
        ),
        num(
            "recovery_checkpoint_keys",
            Gauge,
            "Index entries loaded from checkpoints at start.",
            r.checkpoint_entries,
        ),
        num(
            "recovery_time_ms",
            Gauge,
            "Milliseconds the index rebuild took at start.",
            r.elapsed_ms,
        ),
        num(
            "checkpoints_written",
            Counter,
            "Index checkpoints written since start.",
            g.written.load(Ordering::Relaxed),
        ),
        num(
            "checkpoints_failed",
            Counter,
            "Index checkpoints that failed since start.",
            g.failed.load(Ordering::Relaxed),
        ),
        num(
            "checkpoint_in_progress",
            Gauge,
            "1 while a checkpoint is being written.",
            g.in_progress.load(Ordering::Relaxed),
        ),
        num(
            "checkpoint_last_unix_ms",
            Gauge,
            "Unix time in ms when the last checkpoint finished.",
            g.last_unix_ms.load(Ordering::Relaxed),
        ),
        num(
            "checkpoint_last_duration_ms",
            Gauge,
            "Milliseconds the last checkpoint took.",
            g.last_duration_ms.load(Ordering::Relaxed),
        ),
        num(
            "checkpoint_last_bytes",
            Gauge,
            "Bytes of the last checkpoint's files.",
            g.last_bytes.load(Ordering::Relaxed),
        ),
    ]
}

// ----- encoding helpers -----

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn get_varint(buf: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = *buf.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Appends one entry: value type (u8), database (varint), key length (varint), key, packed
/// location (u64 LE), expiry in Unix ms (varint, 0 = none).
pub fn encode_entry(out: &mut Vec<u8>, db: usize, key: &[u8], loc: PackedLoc, vt: u8, exp: i64) {
    out.push(vt);
    put_varint(out, db as u64);
    put_varint(out, key.len() as u64);
    out.extend_from_slice(key);
    out.extend_from_slice(&loc.bits().to_le_bytes());
    put_varint(out, exp.max(0) as u64);
}

/// One decoded entry (the key borrows the read buffer).
#[derive(Debug, PartialEq, Eq)]
pub struct CkEntry<'a> {
    /// Database.
    pub db: usize,
    /// User key.
    pub key: &'a [u8],
    /// Packed location of the key's record.
    pub loc: PackedLoc,
    /// Value type.
    pub value_type: u8,
    /// Expiry (Unix ms, 0 = none).
    pub expire_at_ms: i64,
}

/// Decodes the entry at `buf[*at..]`; `None` when the buffer ends first (or it is malformed,
/// which the CRC already excluded).
fn decode_entry<'a>(buf: &'a [u8], at: &mut usize) -> Option<CkEntry<'a>> {
    let mut p = *at;
    let vt = *buf.get(p)?;
    p += 1;
    let db = get_varint(buf, &mut p)? as usize;
    let klen = get_varint(buf, &mut p)? as usize;
    let key = buf.get(p..p.checked_add(klen)?)?;
    p += klen;
    let loc = u64::from_le_bytes(buf.get(p..p + 8)?.try_into().ok()?);
    p += 8;
    let exp = get_varint(buf, &mut p)?;
    *at = p;
    Some(CkEntry {
        db,
        key,
        loc: PackedLoc::from_bits(loc),
        value_type: vt,
        expire_at_ms: exp.min(i64::MAX as u64) as i64,
    })
}

/// What a checkpoint file's header and block table say.
#[derive(Clone, Debug)]
pub struct Header {
    /// `store_id` of the data devices.
    pub store_id: [u8; 16],
    /// Worker that wrote it.
    pub worker: u32,
    /// Worker count of the run that wrote it.
    pub workers: u32,
    /// Mutation sequence taken at the start: every record appended by the worker after the
    /// start has a higher one.
    pub start_seq: u64,
    /// When it was started.
    pub created_unix_ms: u64,
    /// `device_id` of every data device, in device-index order.
    pub device_ids: Vec<[u8; 16]>,
    /// The covered blocks (sealed and durable at the start), with their routes.
    pub blocks: Vec<(SealedBlock, u16)>,
}

impl Header {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(HEADER_BYTES as u32).to_le_bytes());
        out.extend_from_slice(&self.store_id);
        out.extend_from_slice(&self.worker.to_le_bytes());
        out.extend_from_slice(&self.workers.to_le_bytes());
        out.extend_from_slice(&self.start_seq.to_le_bytes());
        out.extend_from_slice(&self.created_unix_ms.to_le_bytes());
        out.extend_from_slice(&(self.device_ids.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.blocks.len() as u32).to_le_bytes());
        for id in &self.device_ids {
            out.extend_from_slice(id);
        }
        for (b, route) in &self.blocks {
            out.extend_from_slice(&b.id.device.to_le_bytes());
            out.extend_from_slice(&route.to_le_bytes());
            out.extend_from_slice(&b.id.block.to_le_bytes());
            out.extend_from_slice(&b.block_seq.to_le_bytes());
            out.extend_from_slice(&u32::from(b.tombstones).to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
        }
    }

    /// Decodes a header from the start of a file; `Err` says what is wrong.
    fn decode(buf: &[u8]) -> Result<(Header, usize), String> {
        let u32_at = |o: usize| u32::from_le_bytes(buf[o..o + 4].try_into().expect("4"));
        let u64_at = |o: usize| u64::from_le_bytes(buf[o..o + 8].try_into().expect("8"));
        if buf.len() < HEADER_BYTES || buf[..8] != MAGIC {
            return Err("not a checkpoint file (bad magic)".into());
        }
        if u32_at(8) != VERSION {
            return Err(format!(
                "checkpoint format version {} (this build reads {VERSION})",
                u32_at(8)
            ));
        }
        if u32_at(12) as usize != HEADER_BYTES {
            return Err("bad checkpoint header length".into());
        }
        let devices = u32_at(56) as usize;
        let blocks = u32_at(60) as usize;
        let need = HEADER_BYTES + devices * 16 + blocks * BLOCK_ROW_BYTES;
        if buf.len() < need {
            return Err("checkpoint truncated in its block table".into());
        }
        let mut h = Header {
            store_id: buf[16..32].try_into().expect("16"),
            worker: u32_at(32),
            workers: u32_at(36),
            start_seq: u64_at(40),
            created_unix_ms: u64_at(48),
            device_ids: Vec::with_capacity(devices),
            blocks: Vec::with_capacity(blocks),
        };
        let mut o = HEADER_BYTES;
        for _ in 0..devices {
            h.device_ids.push(buf[o..o + 16].try_into().expect("16"));
            o += 16;
        }
        for _ in 0..blocks {
            let device = u16::from_le_bytes(buf[o..o + 2].try_into().expect("2"));
            let route = u16::from_le_bytes(buf[o + 2..o + 4].try_into().expect("2"));
            let block = u32_at(o + 4);
            let block_seq = u64_at(o + 8);
            let flags = u32_at(o + 16);
            h.blocks.push((
                SealedBlock {
                    id: BlockId { device, block },
                    block_seq,
                    tombstones: flags & 1 != 0,
                },
                route,
            ));
            o += BLOCK_ROW_BYTES;
        }
        Ok((h, o))
    }
}

/// Where the block table ends (from the counts in the fixed header), if `buf` holds it.
fn table_end_bytes(buf: &[u8]) -> Option<u64> {
    let counts = buf.get(56..64)?;
    let devices = u64::from(u32::from_le_bytes(counts[0..4].try_into().ok()?));
    let blocks = u64::from(u32::from_le_bytes(counts[4..8].try_into().ok()?));
    Some(HEADER_BYTES as u64 + devices * 16 + blocks * BLOCK_ROW_BYTES as u64)
}

// ----- writing -----

enum Msg {
    Data(Vec<u8>),
    Finish { entries: u64 },
}

/// The file thread: writes the chunks, then the footer, fsyncs, renames into place and
/// fsyncs the directory. Without `Finish` (the worker gave up) the temporary file is removed.
fn file_thread(dir: PathBuf, worker: usize, rx: flume::Receiver<Msg>) -> Result<u64, String> {
    let tmp = tmp_path(&dir, worker);
    let run = || -> Result<Option<u64>, String> {
        let mut f = std::fs::File::create(&tmp)
            .map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
        let mut crc = 0u32;
        let mut len = 0u64;
        while let Ok(msg) = rx.recv() {
            match msg {
                Msg::Data(buf) => {
                    crc = crc32c::crc32c_append(crc, &buf);
                    len += buf.len() as u64;
                    f.write_all(&buf)
                        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
                }
                Msg::Finish { entries } => {
                    let mut foot = Vec::with_capacity(FOOTER_BYTES);
                    let total = len + FOOTER_BYTES as u64;
                    foot.extend_from_slice(&entries.to_le_bytes());
                    foot.extend_from_slice(&total.to_le_bytes());
                    crc = crc32c::crc32c_append(crc, &foot);
                    foot.extend_from_slice(&crc.to_le_bytes());
                    foot.extend_from_slice(&END_MAGIC);
                    f.write_all(&foot)
                        .and_then(|()| f.sync_all())
                        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
                    let dst = path(&dir, worker);
                    std::fs::rename(&tmp, &dst)
                        .map_err(|e| format!("cannot rename to {}: {e}", dst.display()))?;
                    if let Ok(d) = std::fs::File::open(&dir) {
                        let _ = d.sync_all();
                    }
                    return Ok(Some(total));
                }
            }
        }
        Ok(None)
    };
    match run() {
        Ok(Some(n)) => Ok(n),
        Ok(None) => {
            let _ = std::fs::remove_file(&tmp);
            Err("checkpoint abandoned".into())
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

thread_local! {
    static RUNNING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// What one checkpoint wrote.
#[derive(Clone, Copy, Debug)]
pub struct Written {
    /// Keys written.
    pub entries: u64,
    /// File size.
    pub size_bytes: u64,
    /// Covered blocks.
    pub covered_blocks: u64,
}

/// Writes this worker's checkpoint (call on the worker thread). Waits for a checkpoint
/// already running on this worker to finish first.
pub async fn write(shared: Arc<Shared>, worker: usize) -> Result<Written, String> {
    while RUNNING.with(|r| r.replace(true)) {
        compio::time::sleep(Duration::from_millis(10)).await;
    }
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            RUNNING.with(|r| r.set(false));
        }
    }
    let _reset = Reset;
    let g = global();
    g.in_progress.fetch_add(1, Ordering::Relaxed);
    let started = Instant::now();
    let r = write_inner(&shared, worker).await;
    g.in_progress.fetch_sub(1, Ordering::Relaxed);
    match &r {
        Ok(w) => {
            g.written.fetch_add(1, Ordering::Relaxed);
            g.last_unix_ms.store(unix_ms() as u64, Ordering::Relaxed);
            g.last_duration_ms
                .store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
            g.last_bytes.store(w.size_bytes, Ordering::Relaxed);
            let secs = started.elapsed().as_secs_f64().max(1e-9);
            tracing::info!(
                "worker {worker}: index checkpoint written: {} keys, {} covered blocks, {:.1} MB in {:.2} s ({:.0} MB/s)",
                w.entries,
                w.covered_blocks,
                w.size_bytes as f64 / 1e6,
                secs,
                w.size_bytes as f64 / 1e6 / secs
            );
        }
        Err(e) => {
            g.failed.fetch_add(1, Ordering::Relaxed);
            tracing::error!("worker {worker}: index checkpoint failed: {e}");
        }
    }
    r
}

async fn write_inner(shared: &Arc<Shared>, worker: usize) -> Result<Written, String> {
    let dir = PathBuf::from(shared.config.get("dir"));
    let shard = local_shard();
    // Blocks this worker sealed become durable (and so covered) first.
    let log = shard.borrow().keyspace.log().clone();
    log.commit()
        .await
        .map_err(|e| format!("data file sync failed: {e}"))?;
    drop(log);
    // The start: one synchronous step, so no append of this worker falls in between.
    let (log, header, total_keys, databases) = {
        let s = shard.borrow();
        let log = s.keyspace.log().clone();
        let store = log.store().clone();
        let start_seq = log.next_seq();
        let routes = global().routes.get();
        let blocks: Vec<(SealedBlock, u16)> = store
            .sealed_blocks()
            .into_iter()
            .map(|b| {
                let route = routes
                    .and_then(|r| r.get(&b.id))
                    .filter(|(seq, _)| *seq == b.block_seq)
                    .map_or(ROUTE_OWNER, |&(_, route)| route);
                (b, route)
            })
            .collect();
        let header = Header {
            store_id: store.superblock(0).store_id,
            worker: worker as u32,
            workers: shared.workers as u32,
            start_seq,
            created_unix_ms: unix_ms() as u64,
            device_ids: (0..store.device_count() as u16)
                .map(|d| store.superblock(d).device_id)
                .collect(),
            blocks,
        };
        let dbs = s.keyspace.databases();
        let total: usize = (0..dbs).map(|db| s.keyspace.len(db)).sum();
        (log, header, total, dbs)
    };
    let covered_blocks = header.blocks.len() as u64;
    let (tx, rx) = flume::bounded::<Msg>(4);
    let (done_tx, done_rx) = flume::bounded(1);
    {
        let dir = dir.clone();
        std::thread::Builder::new()
            .name(format!("skerry-ckpt{worker}"))
            .spawn(move || {
                let _ = done_tx.send(file_thread(dir, worker, rx));
            })
            .map_err(|e| format!("cannot start the checkpoint thread: {e}"))?;
    }
    let mut buf = Vec::with_capacity(CHUNK_BYTES + 4096);
    header.encode(&mut buf);
    let mut entries = 0u64;
    let mut sent_bytes = 0u64;
    let started = Instant::now();
    let mut last_progress = Instant::now();
    // Every database's keys, then every database's group records (whose database numbers
    // carry `GROUP_DB_BIT`, as their record keys do).
    let group = crate::keyspace::groups::GROUP_DB_BIT;
    for db in (0..databases).chain((0..databases).map(|d| d | group)) {
        let mut pos = 0u64;
        loop {
            let next = {
                let s = shard.borrow();
                if crate::keyspace::groups::split_db(db).0 >= s.keyspace.databases() {
                    break;
                }
                // Entries name the physical database, as records do (see `crate::dbmap`).
                let physical = s.keyspace.physical_db(db);
                s.keyspace.scan_all(db, pos, ENTRIES_PER_STEP, |e| {
                    encode_entry(
                        &mut buf,
                        physical,
                        e.key(),
                        e.loc(),
                        e.value_type(),
                        e.expire_at_ms(),
                    );
                    entries += 1;
                })
            };
            if buf.len() >= CHUNK_BYTES {
                sent_bytes += buf.len() as u64;
                let full = std::mem::replace(&mut buf, Vec::with_capacity(CHUNK_BYTES + 4096));
                tx.send_async(Msg::Data(full))
                    .await
                    .map_err(|_| file_error(&done_rx))?;
            } else {
                skerry_store::yield_now().await;
            }
            if last_progress.elapsed() >= Duration::from_secs(1) {
                last_progress = Instant::now();
                let secs = started.elapsed().as_secs_f64().max(1e-9);
                tracing::info!(
                    "worker {worker}: index checkpoint {}% ({entries} keys, {:.0} MB/s)",
                    (entries as usize * 100 / total_keys.max(1)).min(99),
                    sent_bytes as f64 / 1e6 / secs
                );
            }
            match next {
                Some(p) => pos = p,
                None => break,
            }
        }
    }
    if !buf.is_empty() {
        tx.send_async(Msg::Data(buf))
            .await
            .map_err(|_| file_error(&done_rx))?;
    }
    // No entry may reference a record a crash could still lose.
    log.commit()
        .await
        .map_err(|e| format!("data file sync failed: {e}"))?;
    tx.send_async(Msg::Finish { entries })
        .await
        .map_err(|_| file_error(&done_rx))?;
    drop(tx);
    let bytes = done_rx
        .recv_async()
        .await
        .map_err(|_| "checkpoint thread stopped".to_string())??;
    Ok(Written {
        entries,
        size_bytes: bytes,
        covered_blocks,
    })
}

fn file_error(done: &flume::Receiver<Result<u64, String>>) -> String {
    match done.recv() {
        Ok(Err(e)) => e,
        _ => "checkpoint thread stopped".into(),
    }
}

/// The worker's checkpoint timer (a task on the worker): once a second, starts a
/// checkpoint when `checkpoint-interval-seconds` (0: never) has passed since the last one.
pub async fn timer(shared: Arc<Shared>, worker: usize) {
    let mut last = Instant::now();
    loop {
        compio::time::sleep(Duration::from_secs(1)).await;
        timer_tick(&shared, worker, &mut last);
    }
}

/// One second of [`timer`]: starts a checkpoint when the interval has passed.
fn timer_tick(shared: &Arc<Shared>, worker: usize, last: &mut Instant) {
    let interval_s = shared.config.get_i64("checkpoint-interval-seconds");
    if interval_s <= 0 || last.elapsed() < Duration::from_secs(interval_s as u64) {
        return;
    }
    *last = Instant::now();
    if RUNNING.with(|r| r.get()) || shared.stopping.load(Ordering::Relaxed) {
        return;
    }
    let shared = shared.clone();
    compio::runtime::spawn(async move {
        let _ = write(shared, worker).await;
    })
    .detach();
}

/// Writes every worker's checkpoint (clean shutdown); waits at most `timeout` for each.
pub fn write_all_before_exit(shared: &Arc<Shared>, timeout: Duration) {
    let mut waiting = Vec::new();
    for w in 0..shared.workers {
        let (tx, rx) = flume::bounded(1);
        let sh = shared.clone();
        let job: crate::worker::Job = Box::new(move |_s| {
            compio::runtime::spawn(async move {
                let _ = tx.send(write(sh, w).await);
            })
            .detach()
        });
        if shared.inboxes[w]
            .send(crate::worker::Envelope::job(0, job))
            .is_ok()
        {
            waiting.push((w, rx));
        }
    }
    let deadline = Instant::now() + timeout;
    for (w, rx) in waiting {
        let left = deadline.saturating_duration_since(Instant::now());
        if rx.recv_timeout(left).is_err() {
            tracing::error!("worker {w}: index checkpoint at shutdown timed out");
        }
    }
}

// ----- loading -----

/// One worker's checkpoint file, checked (length, CRC, version) and its header decoded.
#[derive(Debug)]
pub struct CheckpointFile {
    /// Its path.
    pub path: PathBuf,
    /// Header and block table.
    pub header: Header,
    /// Where the entries start.
    pub entries_offset_bytes: u64,
    /// Entries it holds.
    pub entry_count: u64,
    /// File size.
    pub file_len_bytes: u64,
}

/// Reads and checks the checkpoint of `worker` in `dir`: the whole file is read once for its
/// CRC. `Err` says why it cannot be used (`Ok(None)`: there is none).
pub fn check_file(dir: &Path, worker: usize) -> Result<Option<CheckpointFile>, String> {
    let path = path(dir, worker);
    let mut f = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open {}: {e}", path.display())),
    };
    let file_len_bytes = f
        .metadata()
        .map_err(|e| format!("cannot stat {}: {e}", path.display()))?
        .len();
    if file_len_bytes < (HEADER_BYTES + FOOTER_BYTES) as u64 {
        return Err(format!("{} is truncated", path.display()));
    }
    let mut crc = 0u32;
    let mut head: Vec<u8> = Vec::new(); // the first bytes of the file
    let mut tail = [0u8; FOOTER_BYTES];
    let mut buf = vec![0u8; READ_BYTES];
    let mut done = 0u64;
    let crc_end = file_len_bytes - 8;
    while done < file_len_bytes {
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            return Err(format!("{} is truncated", path.display()));
        }
        let chunk = &buf[..n];
        let crc_part = crc_end.saturating_sub(done).min(n as u64) as usize;
        crc = crc32c::crc32c_append(crc, &chunk[..crc_part]);
        if head.len() < READ_BYTES {
            let want = (READ_BYTES - head.len()).min(n);
            head.extend_from_slice(&chunk[..want]);
        }
        // Footer bytes in this chunk.
        let foot_start = file_len_bytes - FOOTER_BYTES as u64;
        let chunk_end = done + n as u64;
        if chunk_end > foot_start {
            let from = foot_start.max(done);
            let src =
                &chunk[(from - done) as usize..(chunk_end.min(file_len_bytes) - done) as usize];
            let dst = (from - foot_start) as usize;
            tail[dst..dst + src.len()].copy_from_slice(src);
        }
        done += n as u64;
    }
    let entry_count = u64::from_le_bytes(tail[0..8].try_into().expect("8"));
    let total = u64::from_le_bytes(tail[8..16].try_into().expect("8"));
    let stored_crc = u32::from_le_bytes(tail[16..20].try_into().expect("4"));
    if tail[20..24] != END_MAGIC || total != file_len_bytes {
        return Err(format!(
            "{} is incomplete or truncated (no valid end)",
            path.display()
        ));
    }
    if stored_crc != crc {
        return Err(format!("{} is damaged (checksum mismatch)", path.display()));
    }
    // The header and block table may be longer than the first read: read exactly them.
    let need = table_end_bytes(&head)
        .ok_or_else(|| format!("{}: not a checkpoint file (bad header)", path.display()))?;
    if need + FOOTER_BYTES as u64 > file_len_bytes {
        return Err(format!(
            "{} is truncated in its block table",
            path.display()
        ));
    }
    if need > head.len() as u64 {
        let mut fh = std::fs::File::open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        head = vec![0u8; need as usize];
        fh.read_exact(&mut head)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    }
    let (header, entries_offset_bytes) =
        Header::decode(&head).map_err(|e| format!("{}: {e}", path.display()))?;
    if header.worker as usize != worker {
        return Err(format!(
            "{} was written by worker {} (expected {worker})",
            path.display(),
            header.worker
        ));
    }
    Ok(Some(CheckpointFile {
        path,
        header,
        entries_offset_bytes: entries_offset_bytes as u64,
        entry_count,
        file_len_bytes,
    }))
}

/// Streams the entries of a checked checkpoint file in large sequential reads, calling `f`
/// for each; logs progress lines once a second.
pub fn for_each_entry(file: &CheckpointFile, mut f: impl FnMut(CkEntry<'_>)) -> Result<(), String> {
    use std::io::Seek;
    let p = &file.path;
    let mut fh = std::fs::File::open(p).map_err(|e| format!("cannot open {}: {e}", p.display()))?;
    fh.seek(std::io::SeekFrom::Start(file.entries_offset_bytes))
        .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    let end = file.file_len_bytes - FOOTER_BYTES as u64;
    let mut left = end - file.entries_offset_bytes;
    let mut buf: Vec<u8> = Vec::with_capacity(READ_BYTES + 4096);
    let mut start = 0usize;
    let mut seen = 0u64;
    let t0 = Instant::now();
    let mut last = Instant::now();
    loop {
        // Move the unparsed tail to the front, then fill.
        buf.drain(..start);
        start = 0;
        if left > 0 {
            let old = buf.len();
            let want = (READ_BYTES as u64).min(left) as usize;
            buf.resize(old + want, 0);
            fh.read_exact(&mut buf[old..])
                .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
            left -= want as u64;
        }
        let mut at = start;
        while let Some(e) = decode_entry(&buf, &mut at) {
            f(e);
            seen += 1;
        }
        start = at;
        if left == 0 {
            if start != buf.len() || seen != file.entry_count {
                return Err(format!(
                    "{}: {} of {} entries decoded, {} bytes left over",
                    p.display(),
                    seen,
                    file.entry_count,
                    buf.len() - start
                ));
            }
            return Ok(());
        }
        if last.elapsed() >= Duration::from_secs(1) {
            last = Instant::now();
            let done = end - file.entries_offset_bytes - left;
            let secs = t0.elapsed().as_secs_f64().max(1e-9);
            tracing::info!(
                "loading {}: {}% ({seen} keys, {:.0} MB/s)",
                p.display(),
                done * 100 / (end - file.entries_offset_bytes).max(1),
                done as f64 / 1e6 / secs
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            store_id: [7; 16],
            worker: 1,
            workers: 2,
            start_seq: 12345,
            created_unix_ms: 99,
            device_ids: vec![[1; 16], [2; 16]],
            blocks: vec![(
                SealedBlock {
                    id: BlockId {
                        device: 1,
                        block: 77,
                    },
                    block_seq: 5,
                    tombstones: true,
                },
                ROUTE_OWNER,
            )],
        }
    }

    #[test]
    fn header_and_entries_round_trip() {
        let mut out = Vec::new();
        header().encode(&mut out);
        let (h, off) = Header::decode(&out).unwrap();
        assert_eq!(off, out.len());
        assert_eq!(h.start_seq, 12345);
        assert_eq!(h.device_ids, vec![[1; 16], [2; 16]]);
        assert_eq!(h.blocks, header().blocks);
        let loc = PackedLoc::from_bits(0x1234_5678_9abc_def0);
        let mut e = Vec::new();
        encode_entry(&mut e, 3, b"key", loc, 0, 0);
        encode_entry(&mut e, 300, &[b'x'; 200], loc, 1, 1_700_000_000_000);
        let mut at = 0;
        let a = decode_entry(&e, &mut at).unwrap();
        assert_eq!(
            (a.db, a.key, a.loc, a.expire_at_ms),
            (3, &b"key"[..], loc, 0)
        );
        let b = decode_entry(&e, &mut at).unwrap();
        assert_eq!((b.db, b.key.len(), b.value_type), (300, 200, 1));
        assert_eq!(b.expire_at_ms, 1_700_000_000_000);
        assert_eq!(at, e.len());
        // A cut entry is not decoded.
        for cut in 0..e.len() - at.min(e.len()) {
            let mut at = 0;
            let _ = decode_entry(&e[..cut], &mut at);
        }
        let mut at = 0;
        assert!(decode_entry(&e[..5], &mut at).is_none());
        assert_eq!(at, 0);
    }

    #[test]
    fn damaged_or_truncated_files_are_refused() {
        let dir = std::env::temp_dir().join(format!("skerry-ckpt-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (tx, rx) = flume::unbounded();
        let mut buf = Vec::new();
        header().encode(&mut buf);
        encode_entry(&mut buf, 0, b"k", PackedLoc::from_bits(8), 0, 0);
        tx.send(Msg::Data(buf)).unwrap();
        tx.send(Msg::Finish { entries: 1 }).unwrap();
        file_thread(dir.clone(), 1, rx).unwrap();
        let f = check_file(&dir, 1).unwrap().unwrap();
        assert_eq!(f.entry_count, 1);
        let mut keys = Vec::new();
        for_each_entry(&f, |e| keys.push(e.key.to_vec())).unwrap();
        assert_eq!(keys, vec![b"k".to_vec()]);
        assert!(check_file(&dir, 0).unwrap().is_none());
        let p = path(&dir, 1);
        let good = std::fs::read(&p).unwrap();
        // Every single flipped byte and every truncation is detected.
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            std::fs::write(&p, &bad).unwrap();
            assert!(check_file(&dir, 1).is_err(), "flip at {i} accepted");
        }
        for n in 0..good.len() {
            std::fs::write(&p, &good[..n]).unwrap();
            assert!(check_file(&dir, 1).is_err(), "truncation to {n} accepted");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
