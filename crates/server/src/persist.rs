//! Opening the data devices (`crates/store`) at startup: every value lives there, and the
//! recovery scan rebuilds each worker's index from the records found.
//!
//! A record's key is the database number (LEB128) followed by the user key
//! ([`crate::keyspace::record_key`]). The store delivers each key's records in increasing
//! mutation sequence order, so the last record seen wins; each record goes to the worker
//! that owns its key's slot under the current `--threads`, whatever the count was when it
//! was written.

use std::path::PathBuf;

use skerry_store::format::summary::SUMMARY_ENTRY_HEADER_BYTES;
use skerry_store::format::{RecordKind, RESERVED_BYTES, VALUE_TYPE_STRING};
use skerry_store::{
    AnyDevice, BlockId, Durability, FileDevice, GrowthOptions, Recovered, RecoveredOpenBlock,
    Store, StoreOptions,
};

use crate::config::Config;
use crate::keyspace::entry::{MAX_BLOCKS_PER_DEVICE, MAX_BLOCK_SIZE_BYTES, MAX_DEVICES};
use crate::keyspace::{split_record_key, RecoveredIndex};

/// The opened store and the recovered index of each worker.
pub struct Opened {
    /// The store (shared by all workers).
    pub store: Store,
    /// Highest mutation sequence found; writers start above it.
    pub max_seq: u64,
    /// Recovered index, per owning worker.
    pub per_worker: Vec<RecoveredIndex>,
    /// Per worker, the recovered open blocks it may continue
    /// (`skerry_store::Writer::adopt`; see [`Routing::adoptable`]).
    pub adoptable: Vec<Vec<BlockId>>,
}

/// Which workers the records of each recovered block route to, per block in delivery order
/// (a block's records are delivered together).
#[derive(Default)]
struct Routing {
    blocks: Vec<BlockRoutes>,
    /// Blocks covered by the index checkpoints (not delivered): where the full scan would
    /// have delivered them (first mutation sequence), their block sequence and route
    /// (`checkpoint::ROUTE_*` or a worker).
    covered: Vec<CoveredRoute>,
}

struct CoveredRoute {
    first_mutation_seq: u64,
    block_seq: u64,
    route: u16,
}

struct BlockRoutes {
    id: BlockId,
    /// Workers owning the key of at least one record (sorted, deduplicated).
    workers: Vec<usize>,
    /// A record whose key cannot be read or parsed.
    unroutable: bool,
}

impl Routing {
    /// A record of block `id` routes to `worker` (`None`: its key is unreadable).
    fn note(&mut self, id: BlockId, worker: Option<usize>) {
        if self.blocks.last().map(|b| b.id) != Some(id) {
            self.blocks.push(BlockRoutes {
                id,
                workers: Vec::new(),
                unroutable: false,
            });
        }
        let b = self.blocks.last_mut().expect("just pushed");
        match worker {
            Some(w) => {
                if let Err(i) = b.workers.binary_search(&w) {
                    b.workers.insert(i, w);
                }
            }
            None => b.unroutable = true,
        }
    }

    /// The route of every recovered block, for the next index checkpoint.
    fn routes(&self, store: &Store, covered: &[(BlockId, u16)]) -> crate::checkpoint::Routes {
        use crate::checkpoint::{ROUTE_MIXED, ROUTE_NONE};
        let mut out = crate::checkpoint::Routes::new();
        for b in &self.blocks {
            let route = match (&b.workers[..], b.unroutable) {
                ([], false) => ROUTE_NONE,
                ([w], false) => *w as u16,
                _ => ROUTE_MIXED,
            };
            out.insert(b.id, (store.block_seq(b.id), route));
        }
        for &(id, route) in covered {
            out.insert(id, (store.block_seq(id), route));
        }
        out
    }

    /// Per worker, the recovered open blocks it may adopt. `Writer::adopt` is correct only if
    /// no other recovered block holding a record of a key the adopting worker writes from now
    /// on is delivered after the adopted block or has a higher block sequence (see
    /// `docs/storage-engine.md`, Recovery, Adopted blocks). Checked here for every key that
    /// routes to the worker; on top of that (to keep it simple), the block's `owner_worker` is
    /// the worker and each of its records routes to it.
    fn adoptable(
        &self,
        store: &Store,
        open: &[RecoveredOpenBlock],
        workers: usize,
    ) -> Vec<Vec<BlockId>> {
        let mut out = vec![Vec::new(); workers];
        for b in open {
            let w = usize::from(b.owner_worker);
            if w >= workers {
                continue;
            }
            let pos = self.blocks.iter().position(|r| r.id == b.id);
            if let Some(p) = pos {
                let r = &self.blocks[p];
                if r.unroutable || r.workers != [w] {
                    continue;
                }
            }
            // An empty block (no record delivered) sorts after every recovered block once it
            // holds new records: only the block sequences matter then.
            let seq = store.block_seq(b.id);
            let newest = self.blocks.iter().enumerate().all(|(i, r)| {
                Some(i) == pos
                    || r.workers.binary_search(&w).is_err()
                    || (pos.is_none_or(|p| i < p) && store.block_seq(r.id) < seq)
            });
            // Covered blocks holding keys of `w` must come before `b` in the full scan's
            // order (first mutation sequence, then block sequence) and have a lower block
            // sequence.
            let covered_ok = self.covered.iter().all(|c| {
                let holds = usize::from(c.route) == w || c.route == crate::checkpoint::ROUTE_MIXED;
                !holds
                    || (c.block_seq < seq
                        && (pos.is_none() || c.first_mutation_seq <= b.first_mutation_seq))
            });
            if newest && covered_ok {
                out[w].push(b.id);
            }
        }
        out
    }
}

/// The durability policy named by `appendfsync`.
pub fn durability(cfg: &Config) -> Durability {
    durability_of(&cfg.get("appendfsync"))
}

/// The durability policy named by an `appendfsync` value.
pub fn durability_of(name: &str) -> Durability {
    match name {
        "always" => Durability::Always,
        "no" => Durability::No,
        _ => Durability::EverySec,
    }
}

/// Takes an exclusive `flock` on `path` for the life of the process, so a second server
/// started on the same data file refuses to start instead of writing over the first one's
/// log. (The lock's file handle is kept open on purpose until the process exits.)
fn lock_for_life(path: &std::path::Path) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path).map_err(|e| {
        format!(
            "cannot open the data file {} to lock it: {e}",
            path.display()
        )
    })?;
    // SAFETY: flock on a file descriptor this function owns; no memory is involved.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        return Err(if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            format!(
                "the data file {} is in use by another process (another server on it?)",
                path.display()
            )
        } else {
            format!("cannot lock the data file {}: {e}", path.display())
        });
    }
    std::mem::forget(file);
    Ok(())
}

/// The data files: every `data-file` given (space-separated), or `<dir>/skerry.data`.
pub fn data_paths(cfg: &Config) -> Vec<PathBuf> {
    let f = cfg.get("data-file");
    let given: Vec<PathBuf> = f.split_whitespace().map(PathBuf::from).collect();
    if given.is_empty() {
        vec![PathBuf::from(cfg.get("dir")).join("skerry.data")]
    } else {
        given
    }
}

fn describe(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Opens (or creates) the data files and rebuilds every worker's index from them: from the
/// index checkpoints plus the blocks they do not cover when every worker has a usable one,
/// else by scanning every block. Runs before the workers start.
pub fn open(cfg: &Config, workers: usize, databases: usize, now_ms: i64) -> Result<Opened, String> {
    let paths = data_paths(cfg);
    if paths.len() > MAX_DEVICES {
        return Err(format!(
            "at most {MAX_DEVICES} data files are supported, {} given",
            paths.len()
        ));
    }
    let max_bytes = cfg.get_i64("data-size") as u64;
    // A full scan sizes its index from an estimate; at most a quarter of the memory the
    // process may use goes to that up front (decision 0023).
    let scan_reserve_max = reserve_cap_entries(crate::memory::limit_bytes(cfg));
    if max_bytes != 0 && max_bytes < MIN_DATA_SIZE_BYTES {
        return Err(format!(
            "data-size must be 0 (no cap) or at least {} MiB",
            MIN_DATA_SIZE_BYTES >> 20
        ));
    }
    let size_bytes = initial_file_bytes(max_bytes, workers);
    let options = StoreOptions {
        growth: Some(GrowthOptions {
            max_device_bytes: max_bytes,
            fs_reserve_bytes: cfg.get_i64("data-disk-reserve") as u64,
            max_blocks_per_device: MAX_BLOCKS_PER_DEVICE,
        }),
        ..StoreOptions::default()
    };
    let options = &options;
    let dir = PathBuf::from(cfg.get("dir"));
    let rt = compio::runtime::Runtime::new()
        .map_err(|e| format!("cannot start the recovery runtime: {e}"))?;
    let started = std::time::Instant::now();
    rt.block_on(async move {
        let mut devices = open_devices(&paths, size_bytes).await?;
        for path in &paths {
            lock_for_life(path)?;
        }
        let mut files = match checkpoint_files(&dir, workers) {
            Ok(files) => Some(files),
            Err(reason) => {
                if !reason.is_empty() {
                    tracing::warn!("Index checkpoint not used ({reason}): scanning every data block");
                }
                fallback_reason(reason);
                None
            }
        };
        if let Some(f) = &files {
            if let Err(reason) = same_devices(&devices, f).await {
                tracing::warn!("Index checkpoint not used ({reason}): scanning every data block");
                fallback_reason(reason);
                files = None;
            }
        }
        let mut scan = match files {
            Some(files) => match open_checkpointed(devices, options, &files, workers, databases)
                .await
            {
                Ok(scan) => scan,
                Err(reason) => {
                    tracing::warn!(
                        "Index checkpoint not used ({reason}): scanning every data block"
                    );
                    fallback_reason(reason);
                    devices = open_devices(&paths, size_bytes).await?;
                    open_scanning(devices, options, workers, databases, scan_reserve_max).await
                }
            },
            None => open_scanning(devices, options, workers, databases, scan_reserve_max).await,
        };
        let (store, recovery) = scan
            .opened
            .take()
            .expect("set")
            .map_err(|e| format!("cannot open the data files {}: {e}", describe(&paths)))?;
        let mut per_worker = std::mem::take(&mut scan.per_worker);
        for d in 0..store.device_count() as u16 {
            let (bs, n) = (store.block_size_bytes(d), store.block_count(d));
            if bs > MAX_BLOCK_SIZE_BYTES || n > MAX_BLOCKS_PER_DEVICE {
                return Err(format!(
                    "data device {d}: {n} blocks of {bs} bytes; at most {MAX_BLOCKS_PER_DEVICE} blocks of at most {MAX_BLOCK_SIZE_BYTES} bytes are supported"
                ));
            }
        }
        if scan.damaged > 0 {
            tracing::error!("{} damaged records found by recovery (see above)", scan.damaged);
        }
        if scan.beyond_databases > 0 {
            tracing::warn!(
                "{} records belong to databases beyond 'databases' ({databases}); ignored",
                scan.beyond_databases
            );
        }
        let mut keys = 0usize;
        // Access clocks are not persisted: every key starts as accessed now.
        let clock = cfg.hot.clock_mode().new_clock(now_ms);
        for idx in &mut per_worker {
            keys += idx.finish(now_ms, clock, |loc| store.add_live(loc));
        }
        store.recovery_done();
        // One block per worker stays free for defrag's copies (fewer on a tiny store: one
        // whose data files are capped small).
        let total_blocks: u64 = (0..store.device_count() as u16)
            .map(|d| {
                let bs = store.block_size_bytes(d);
                let cap = if max_bytes == 0 {
                    u64::MAX
                } else {
                    max_bytes.saturating_sub(RESERVED_BYTES) / bs
                };
                store.block_count(d).max(cap)
            })
            .fold(0u64, u64::saturating_add);
        store.set_defrag_reserve_blocks((workers as u64).min(total_blocks / 8));
        // Writes stall (crate::space) once a block rollover of every worker but one could
        // not find a free block above the reserve (one worker: once it could not).
        store.set_low_space_blocks(workers as u64 - 1);
        let source = if scan.checkpoint_entries.is_some() {
            "checkpoint"
        } else {
            "scan"
        };
        tracing::info!(
            "Data files {} loaded in {:.2} s ({}): {keys} keys, {} checkpoint entries and {} records in {} blocks ({} scanned, {} of them from their summaries; {} covered by the index checkpoint), max mutation sequence {}",
            describe(&paths),
            started.elapsed().as_secs_f64(),
            if source == "checkpoint" { "index checkpoint + scan of newer blocks" } else { "full scan" },
            scan.checkpoint_entries.unwrap_or(0),
            recovery.records,
            recovery.used_blocks,
            recovery.data_blocks_scanned,
            recovery.summarised_blocks,
            recovery.covered_blocks,
            recovery.max_mutation_seq
        );
        if recovery.bad_summaries > 0 {
            tracing::warn!(
                "{} block summaries failed their checks; those blocks were scanned whole",
                recovery.bad_summaries
            );
        }
        for t in &recovery.truncations {
            tracing::warn!(
                "data device {} block {}: valid records end at offset {} ({}); the rest is ignored",
                t.block.device,
                t.block.block,
                t.offset_bytes,
                t.reason
            );
        }
        let adoptable = scan
            .routing
            .adoptable(&store, &recovery.open_blocks, workers);
        crate::checkpoint::set_routes(scan.routing.routes(&store, &scan.covered_routes));
        let reason = take_fallback_reason();
        crate::checkpoint::set_report(crate::checkpoint::RecoveryReport {
            source,
            fallback_reason: reason,
            scanned_blocks: recovery.data_blocks_scanned,
            summarised_blocks: recovery.summarised_blocks,
            covered_blocks: recovery.covered_blocks,
            checkpoint_entries: scan.checkpoint_entries.unwrap_or(0),
            elapsed_ms: started.elapsed().as_millis() as u64,
        });
        Ok(Opened {
            store,
            max_seq: recovery.max_mutation_seq,
            per_worker,
            adoptable,
        })
    })
}

thread_local! {
    static FALLBACK: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn fallback_reason(reason: String) {
    FALLBACK.with(|f| *f.borrow_mut() = reason);
}

fn take_fallback_reason() -> String {
    FALLBACK.with(|f| std::mem::take(&mut *f.borrow_mut()))
}

/// Smallest `data-size` other than 0.
const MIN_DATA_SIZE_BYTES: u64 = 16 << 20;

/// Size a new data file is created with: room for a few blocks per worker (each writes
/// its own open block and holds a tombstone reserve; defrag keeps one per worker), within
/// `data-size`. The file grows from there as data arrives.
fn initial_file_bytes(max_bytes: u64, workers: usize) -> u64 {
    let blocks = (4 * workers as u64).max(8);
    let want = RESERVED_BYTES + blocks * skerry_store::format::DEFAULT_BLOCK_SIZE_BYTES;
    if max_bytes == 0 {
        want
    } else {
        want.min(max_bytes)
    }
}

/// Opens the data files, creating a missing one with `size_bytes` (an existing shorter one
/// is extended to it; the store grows them from there).
async fn open_devices(paths: &[PathBuf], size_bytes: u64) -> Result<Vec<AnyDevice>, String> {
    let mut devices: Vec<AnyDevice> = Vec::new();
    for path in paths {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let device = FileDevice::open_or_create(path, size_bytes)
            .await
            .map_err(|e| format!("cannot open the data file {}: {e}", path.display()))?;
        devices.push(device.into());
    }
    Ok(devices)
}

/// What a recovery (full scan or checkpoint + scan) produced.
struct Scanned {
    opened: Option<skerry_store::Result<(Store, skerry_store::Recovery)>>,
    per_worker: Vec<RecoveredIndex>,
    routing: Routing,
    /// Covered blocks with their routes (checkpoint load only).
    covered_routes: Vec<(BlockId, u16)>,
    damaged: u64,
    beyond_databases: u64,
    /// Keys read from checkpoint files (`None`: full scan).
    checkpoint_entries: Option<u64>,
}

/// One recovered record, reduced to what the index needs.
#[derive(Clone, Copy)]
enum Item {
    Value {
        loc: skerry_store::Location,
        value_type: u8,
        expire_at_ms: i64,
    },
    Tombstone,
    /// A damaged record followed by valid ones: reading the key answers an error.
    Damaged(skerry_store::Location),
}

impl Item {
    fn apply(&self, idx: &mut RecoveredIndex, db: usize, key: &[u8]) {
        match *self {
            Item::Value {
                loc,
                value_type,
                expire_at_ms,
            } => idx.value(db, key, &loc, value_type, expire_at_ms),
            Item::Tombstone => idx.tombstone(db, key),
            Item::Damaged(loc) => idx.value(db, key, &loc, VALUE_TYPE_STRING, 0),
        }
    }
}

/// The worker owning a record of `key` in record-key database `db`: a group record goes
/// to the owner of its collection's key.
fn owner_of(db: usize, key: &[u8], workers: usize) -> usize {
    use crate::keyspace::groups;
    match groups::split_db(db) {
        (_, true) => {
            groups::split_group_key(key).map_or(0, |(k, _)| crate::slot::owner(k, workers))
        }
        (_, false) => crate::slot::owner(key, workers),
    }
}

/// Turns one delivered record into (owning worker, database, key, item), noting its route.
/// `None`: nothing to apply (unreadable key, database beyond the configured count).
fn classify<'a>(
    item: Recovered<'_, 'a>,
    workers: usize,
    databases: usize,
    routing: &mut Routing,
    damaged: &mut u64,
    beyond_databases: &mut u64,
) -> Option<(usize, usize, &'a [u8], Item, u64)> {
    let r = match item {
        Recovered::Record(r) => r,
        Recovered::Damaged(d) => {
            // The key's newest record is damaged: the key answers an error rather
            // than falling back to an older version (unless a newer record follows).
            *damaged += 1;
            let Some((db, key)) = d.key.and_then(split_record_key) else {
                routing.note(d.location.block_id(), None);
                tracing::error!(
                    "damaged record at data device {} block {} offset {}: its key is unreadable",
                    d.location.device,
                    d.location.block,
                    d.location.offset_bytes
                );
                return None;
            };
            tracing::error!(
                "damaged record of key '{}' (db {db}) at data device {} block {} offset {}: reading the key answers an error",
                String::from_utf8_lossy(key).escape_debug(),
                d.location.device, d.location.block, d.location.offset_bytes
            );
            let w = owner_of(db, key, workers);
            routing.note(d.location.block_id(), Some(w));
            if crate::keyspace::groups::split_db(db).0 >= databases {
                return None;
            }
            return Some((w, db, key, Item::Damaged(d.location), u64::MAX));
        }
    };
    let Some((db, key)) = split_record_key(r.key) else {
        routing.note(r.location.block_id(), None);
        return None;
    };
    let w = owner_of(db, key, workers);
    routing.note(r.location.block_id(), Some(w));
    if crate::keyspace::groups::split_db(db).0 >= databases {
        *beyond_databases += 1;
        return None;
    }
    let item = match r.meta.kind {
        RecordKind::Value => Item::Value {
            loc: r.location,
            value_type: r.meta.value_type,
            expire_at_ms: r.meta.expiry_ms,
        },
        RecordKind::Tombstone => Item::Tombstone,
        _ => return None,
    };
    Some((w, db, key, item, r.meta.mutation_seq))
}

/// Records a full scan is expected to deliver, from the summary bytes of the sealed blocks:
/// an entry is [`SUMMARY_ENTRY_HEADER_BYTES`] plus its record key, counted here as 16
/// bytes. Longer keys, records of open blocks (no summary yet) and keys in other
/// databases make it low, and a low estimate only leaves some growth to the load; short
/// keys and records made obsolete by newer ones make it high, and the end of the load fits
/// the table back to what it holds.
fn estimated_records(summary_bytes: u64) -> usize {
    const ASSUMED_KEY_BYTES: u64 = 16;
    (summary_bytes / (SUMMARY_ENTRY_HEADER_BYTES as u64 + ASSUMED_KEY_BYTES)) as usize
}

/// The most index entries a full scan sizes its tables for up front, with `limit_bytes` of
/// memory for the process: a quarter of it, at about 34 bytes a slot (a 32-byte entry at
/// the table's load), so that an estimate far above what the file holds (records of keys
/// rewritten many times, very short keys) cannot take the memory a load needs before the
/// end of the load fits the table back.
fn reserve_cap_entries(limit_bytes: u64) -> usize {
    const SLOT_BYTES: u64 = 34;
    usize::try_from(limit_bytes / 4 / SLOT_BYTES).unwrap_or(usize::MAX)
}

/// The full scan: every record straight into its owner's index (the last one wins).
async fn open_scanning(
    devices: Vec<AnyDevice>,
    options: &StoreOptions,
    workers: usize,
    databases: usize,
    reserve_max_entries: usize,
) -> Scanned {
    let mut per_worker: Vec<RecoveredIndex> = (0..workers)
        .map(|_| RecoveredIndex::new(databases))
        .collect();
    let (mut damaged, mut beyond_databases) = (0u64, 0u64);
    let mut routing = Routing::default();
    // The store reads every block header before it delivers the first record: their
    // summary sizes give an estimate of the records to come, and each worker's table is
    // sized for its share before the first one lands (decision 0023).
    let summary_bytes = std::cell::Cell::new(0u64);
    let mut sized = false;
    let mut note_header = |_: skerry_store::BlockId, h: &skerry_store::format::BlockHeader| {
        summary_bytes.set(summary_bytes.get() + u64::from(h.summary_len_bytes));
        None
    };
    let opened = Store::open_with_checkpoint(devices, options, &mut note_header, |item| {
        if !sized {
            sized = true;
            let records = estimated_records(summary_bytes.get()).min(reserve_max_entries);
            for index in &mut per_worker {
                index.expect(0, records / workers);
            }
        }
        if let Some((w, db, key, item, _)) = classify(
            item,
            workers,
            databases,
            &mut routing,
            &mut damaged,
            &mut beyond_databases,
        ) {
            item.apply(&mut per_worker[w], db, key);
        }
    })
    .await;
    Scanned {
        opened: Some(opened),
        per_worker,
        routing,
        covered_routes: Vec::new(),
        damaged,
        beyond_databases,
        checkpoint_entries: None,
    }
}

/// Every worker's checkpoint file, checked. `Err(reason)` when they cannot be used (empty
/// reason: there are none at all).
fn checkpoint_files(
    dir: &std::path::Path,
    workers: usize,
) -> Result<Vec<crate::checkpoint::CheckpointFile>, String> {
    let mut files = Vec::with_capacity(workers);
    let mut missing = Vec::new();
    for w in 0..workers {
        match crate::checkpoint::check_file(dir, w)? {
            Some(f) => files.push(f),
            None => missing.push(w),
        }
    }
    if files.is_empty() {
        return Err(String::new());
    }
    for f in &files {
        if f.header.workers as usize != workers {
            return Err(format!(
                "{} was written with {} threads, now {workers}",
                f.path.display(),
                f.header.workers
            ));
        }
    }
    if let Some(w) = missing.first() {
        return Err(format!("no checkpoint file for worker {w}"));
    }
    Ok(files)
}

/// The checkpoint files were written for these data devices (store and device ids).
async fn same_devices(
    devices: &[AnyDevice],
    files: &[crate::checkpoint::CheckpointFile],
) -> Result<(), String> {
    let mut by_index: Vec<Option<skerry_store::format::Superblock>> = vec![None; devices.len()];
    for d in devices {
        let sb = skerry_store::format::read_superblock(d)
            .await
            .map_err(|e| format!("data files not readable as a store: {e}"))?;
        let i = sb.device_index as usize;
        if i >= by_index.len() {
            return Err("data device index out of range".into());
        }
        by_index[i] = Some(sb);
    }
    for f in files {
        let h = &f.header;
        if h.device_ids.len() != devices.len() {
            return Err(format!(
                "{} refers to {} data devices, {} given",
                f.path.display(),
                h.device_ids.len(),
                devices.len()
            ));
        }
        for (i, sb) in by_index.iter().enumerate() {
            let Some(sb) = sb else {
                return Err(format!("data device {i} missing"));
            };
            if sb.store_id != h.store_id || sb.device_id != h.device_ids[i] {
                return Err(format!("{} belongs to other data files", f.path.display()));
            }
        }
    }
    Ok(())
}

/// Records of the scanned blocks for one key, split at the owning worker's checkpoint start.
#[derive(Default)]
struct Pending {
    /// The one with the highest mutation sequence at or above the start (appended after the
    /// checkpoint started), or a damaged record delivered after every record seen so far.
    post: Option<(u64, Item)>,
    /// The one with the highest mutation sequence below the start.
    pre: Option<(u64, Item)>,
}

impl Pending {
    /// Notes one delivered record (`seq`: its mutation sequence; ignored for a damaged one).
    /// Highest sequence wins, ties go to the later one (a defrag copy of the same record);
    /// a damaged record counts as newer than everything delivered before it.
    fn note(&mut self, item: Item, seq: u64, start_seq: u64) {
        let seen = self
            .post
            .map_or(0, |p| p.0)
            .max(self.pre.map_or(0, |p| p.0));
        if let Item::Damaged(_) = item {
            self.post = Some((seen, item));
            return;
        }
        if let Some((d, Item::Damaged(_))) = self.post {
            if seq >= d {
                self.post = None;
            }
        }
        let slot = if seq >= start_seq {
            &mut self.post
        } else {
            &mut self.pre
        };
        if slot.is_none_or(|(s, _)| seq >= s) {
            *slot = Some((seq, item));
        }
    }
}

/// Checkpoint load: the blocks every checkpoint covers are not read; the records of the
/// others are kept per key (split at each worker's checkpoint start), then each worker's
/// checkpoint entries are merged with them (decision 0005 gives the rules and why they
/// restore what the full scan would).
async fn open_checkpointed(
    devices: Vec<AnyDevice>,
    options: &StoreOptions,
    files: &[crate::checkpoint::CheckpointFile],
    workers: usize,
    databases: usize,
) -> Result<Scanned, String> {
    use std::collections::{HashMap, HashSet};
    let mut set = skerry_store::checkpoint::CoveredSet::new();
    for f in files {
        let blocks: Vec<_> = f.header.blocks.iter().map(|(b, _)| *b).collect();
        set.add_table(&blocks);
    }
    let table_routes: HashMap<BlockId, u16> = files[0]
        .header
        .blocks
        .iter()
        .map(|(b, r)| (b.id, *r))
        .collect();
    let start_seq: Vec<u64> = files.iter().map(|f| f.header.start_seq).collect();
    let mut skipped: HashSet<BlockId> = HashSet::new();
    let mut routing = Routing::default();
    let mut covered_routes = Vec::new();
    type PendingMap = HashMap<Vec<u8>, Pending, foldhash::fast::FixedState>;
    let mut pending: Vec<PendingMap> = (0..workers).map(|_| PendingMap::default()).collect();
    let (mut damaged, mut beyond_databases) = (0u64, 0u64);
    let mut covered = |id: BlockId, h: &skerry_store::format::BlockHeader| {
        let tombstones = set.covers(id, h)?;
        let route = match table_routes.get(&id).copied() {
            Some(crate::checkpoint::ROUTE_OWNER) | None => h.owner_worker,
            Some(r) => r,
        };
        skipped.insert(id);
        covered_routes.push((id, route));
        routing.covered.push(CoveredRoute {
            first_mutation_seq: h.first_mutation_seq,
            block_seq: h.block_seq,
            route,
        });
        Some(tombstones)
    };
    // The closure above borrows `routing`; records note theirs in a second one.
    let mut scan_routing = Routing::default();
    let opened = Store::open_with_checkpoint(devices, options, &mut covered, |item| {
        let Some((w, db, key, item, seq)) = classify(
            item,
            workers,
            databases,
            &mut scan_routing,
            &mut damaged,
            &mut beyond_databases,
        ) else {
            return;
        };
        let rk = crate::keyspace::record_key(db, key);
        let p = match pending[w].get_mut(rk.as_slice()) {
            Some(p) => p,
            None => pending[w].entry(rk.to_vec()).or_default(),
        };
        p.note(item, seq, start_seq[w]);
    })
    .await;
    routing.blocks = scan_routing.blocks;
    let (store, recovery) = match opened {
        Ok(o) => o,
        Err(e) => {
            return Ok(Scanned {
                opened: Some(Err(e)),
                per_worker: Vec::new(),
                routing,
                covered_routes,
                damaged,
                beyond_databases,
                checkpoint_entries: Some(0),
            })
        }
    };
    tracing::info!(
        "Loading the index checkpoints: {} data blocks covered, {} scanned ({} records)",
        recovery.covered_blocks,
        recovery.data_blocks_scanned,
        recovery.records
    );
    // Each worker's file in its own thread, into its own index.
    let mut per_worker: Vec<RecoveredIndex> = (0..workers)
        .map(|_| RecoveredIndex::new(databases))
        .collect();
    // Per device, per block: covered and skipped (a lookup per checkpoint entry).
    let mut skipped_map: Vec<Vec<bool>> = (0..store.device_count() as u16)
        .map(|d| vec![false; store.block_count(d) as usize])
        .collect();
    for id in &skipped {
        skipped_map[usize::from(id.device)][id.block as usize] = true;
    }
    let skipped = &skipped_map;
    let results: Vec<Result<(u64, u64), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .iter()
            .zip(per_worker.iter_mut())
            .zip(pending.iter_mut())
            .map(|((file, idx), pend)| {
                scope.spawn(move || -> Result<(u64, u64), String> {
                    // Count the entries per database first (a quick pass that also brings
                    // the file into the page cache), so each table is sized once for its
                    // load instead of growing through every step on the way.
                    let mut per_db = vec![0usize; databases];
                    crate::checkpoint::for_each_entry(file, |e| {
                        if let Some(n) = per_db.get_mut(e.db) {
                            *n += 1;
                        }
                    })?;
                    for (db, n) in per_db.into_iter().enumerate() {
                        idx.reserve(db, n);
                    }
                    let (mut entries, mut lost) = (0u64, 0u64);
                    crate::checkpoint::for_each_entry(file, |e| {
                        if crate::keyspace::groups::split_db(e.db).0 >= databases {
                            return;
                        }
                        entries += 1;
                        let loc = e.loc.unpack();
                        let covered = skipped
                            .get(usize::from(loc.device))
                            .and_then(|d| d.get(loc.block as usize))
                            .copied()
                            .unwrap_or(false);
                        let p = if pend.is_empty() {
                            None
                        } else {
                            pend.remove(crate::keyspace::record_key(e.db, e.key).as_slice())
                        };
                        let entry = Item::Value {
                            loc,
                            value_type: e.value_type,
                            expire_at_ms: e.expire_at_ms,
                        };
                        let chosen = match p {
                            Some(Pending {
                                post: Some((_, item)),
                                ..
                            }) => Some(item),
                            _ if covered => Some(entry),
                            Some(Pending {
                                pre: Some((_, item)),
                                ..
                            }) => Some(item),
                            _ => None,
                        };
                        match chosen {
                            Some(item) => item.apply(idx, e.db, e.key),
                            None => lost += 1,
                        }
                    })?;
                    // Keys absent from the checkpoint: only what was written after its start.
                    for (rk, p) in pend.drain() {
                        if let (Some((_, item)), Some((db, key))) = (p.post, split_record_key(&rk))
                        {
                            item.apply(idx, db, key);
                        }
                    }
                    Ok((entries, lost))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("checkpoint load panicked".into()))
            })
            .collect()
    });
    let mut total = 0u64;
    for (w, r) in results.into_iter().enumerate() {
        let (entries, lost) = r?;
        total += entries;
        if lost > 0 {
            tracing::warn!(
                "worker {w}: {lost} checkpoint entries point into blocks changed since the checkpoint and no newer record was found (damaged data device?)"
            );
        }
    }
    Ok(Scanned {
        opened: Some(Ok((store, recovery))),
        per_worker,
        routing,
        covered_routes,
        damaged,
        beyond_databases,
        checkpoint_entries: Some(total),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use skerry_store::device::RamDevice;
    use skerry_store::format::{RecordMeta, RESERVED_BYTES};
    use skerry_store::Writer;

    #[test]
    fn a_full_scan_sizes_its_index_with_at_most_a_quarter_of_the_memory() {
        // Inside `memcap 2048` the suite's 10M keys are sized for in full; 100M are not.
        let cap = reserve_cap_entries(2048 << 20);
        assert!((10_000_000..16_000_000).contains(&cap), "{cap}");
        assert!(cap as u64 * 34 <= (2048u64 << 20) / 4);
        assert_eq!(reserve_cap_entries(0), 0);
        // The estimate: 16-byte keys (18 with the database prefix) come out within 5%.
        let entry = (SUMMARY_ENTRY_HEADER_BYTES + 18) as u64;
        let est = estimated_records(1_000_000 * entry);
        assert!((1_000_000..1_050_000).contains(&est), "{est}");
    }

    /// A store whose three open blocks were written by workers 0, 1, 2 (in that order, so
    /// their block sequences increase), reopened.
    fn three_open_blocks() -> (Store, Vec<RecoveredOpenBlock>) {
        let opts = StoreOptions {
            block_size_bytes: 64 << 10,
            ..StoreOptions::default()
        };
        let dev = RamDevice::new(RESERVED_BYTES + 10 * (64 << 10), 512);
        let ctl = dev.control();
        let rt = compio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let (store, _) = Store::create_or_open(vec![dev.into()], &opts, |_| {})
                .await
                .unwrap();
            for w in 0..3u16 {
                let writer = Writer::open(store.clone(), w, Durability::Always, 0)
                    .await
                    .unwrap();
                let meta = RecordMeta {
                    kind: RecordKind::Value,
                    value_type: VALUE_TYPE_STRING,
                    flags: 0,
                    mutation_seq: writer.next_seq(),
                    expiry_ms: 0,
                };
                writer.append(meta, b"\0k", b"v").unwrap();
                writer.sync().await.unwrap();
            }
            let (store, rec) = Store::create_or_open(vec![ctl.device().into()], &opts, |_| {})
                .await
                .unwrap();
            let mut open = rec.open_blocks;
            open.sort_by_key(|b| b.owner_worker);
            assert_eq!(open.len(), 3);
            assert!(store.block_seq(open[0].id) < store.block_seq(open[1].id));
            assert!(store.block_seq(open[1].id) < store.block_seq(open[2].id));
            (store, open)
        })
    }

    fn routing(notes: &[(BlockId, Option<usize>)]) -> Routing {
        let mut r = Routing::default();
        for &(id, w) in notes {
            r.note(id, w);
        }
        r
    }

    #[test]
    fn covered_blocks_take_part_in_the_adoption_check() {
        use crate::checkpoint::ROUTE_MIXED;
        let (store, open) = three_open_blocks();
        let [b0, b1, b2] = [open[0].id, open[1].id, open[2].id];
        let seq0 = store.block_seq(b0);
        let first0 = open[0].first_mutation_seq;
        let with = |route, block_seq, first_mutation_seq| {
            let mut r = routing(&[(b0, Some(0)), (b1, Some(1)), (b2, Some(2))]);
            r.covered.push(CoveredRoute {
                first_mutation_seq,
                block_seq,
                route,
            });
            r.adoptable(&store, &open, 3)
        };
        // Older and delivered before b0: no obstacle, whoever's keys it holds.
        assert_eq!(with(0, 0, 0)[0], vec![b0]);
        assert_eq!(with(ROUTE_MIXED, 0, 0)[0], vec![b0]);
        // A newer block sequence, or delivered after b0, holding worker 0's keys: b0 stays.
        assert_eq!(with(0, seq0 + 10, 0)[0], Vec::<BlockId>::new());
        assert_eq!(with(ROUTE_MIXED, seq0 + 10, 0)[0], Vec::<BlockId>::new());
        assert_eq!(with(0, 0, first0 + 1)[0], Vec::<BlockId>::new());
        // Only other workers' keys: no obstacle for worker 0 (but one for worker 1).
        assert_eq!(with(1, seq0 + 10, first0 + 1)[0], vec![b0]);
        assert_eq!(with(1, u64::MAX, u64::MAX)[1], Vec::<BlockId>::new());
    }

    #[test]
    fn adoptable_only_when_no_later_or_newer_block_holds_the_workers_keys() {
        let (store, open) = three_open_blocks();
        let [b0, b1, b2] = [open[0].id, open[1].id, open[2].id];
        // Unchanged routing: every worker continues its block.
        let r = routing(&[(b0, Some(0)), (b1, Some(1)), (b2, Some(2))]);
        assert_eq!(
            r.adoptable(&store, &open, 3),
            vec![vec![b0], vec![b1], vec![b2]]
        );
        // A block owned by a worker beyond the current count is not adopted.
        let r = routing(&[(b0, Some(0)), (b1, Some(1)), (b2, Some(1))]);
        assert_eq!(r.adoptable(&store, &open, 2), vec![vec![b0], vec![]]);
        // A key of worker 0 in a block delivered after b0 (the worker count changed): b0
        // would sort before that older record; b1 holds two workers' keys.
        let r = routing(&[(b0, Some(0)), (b1, Some(1)), (b1, Some(0)), (b2, Some(2))]);
        assert_eq!(
            r.adoptable(&store, &open, 3),
            vec![vec![], vec![], vec![b2]]
        );
        // Delivered before b0 but with a higher block sequence: a tombstone in b0 could be
        // reclaimed before that older record.
        let r = routing(&[(b2, Some(0)), (b0, Some(0)), (b1, Some(1))]);
        assert_eq!(
            r.adoptable(&store, &open, 3),
            vec![vec![], vec![b1], vec![]]
        );
        // An unreadable key in b0.
        let r = routing(&[(b0, Some(0)), (b0, None), (b1, Some(1)), (b2, Some(2))]);
        assert_eq!(
            r.adoptable(&store, &open, 3),
            vec![vec![], vec![b1], vec![b2]]
        );
        // An empty b0 (no record delivered): only the block sequences matter.
        let r = routing(&[(b1, Some(1)), (b2, Some(2))]);
        assert_eq!(
            r.adoptable(&store, &open, 3),
            vec![vec![b0], vec![b1], vec![b2]]
        );
        let r = routing(&[(b1, Some(1)), (b2, Some(0))]);
        assert_eq!(
            r.adoptable(&store, &open, 3),
            vec![vec![], vec![b1], vec![]]
        );
    }
}
