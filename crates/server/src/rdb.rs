//! RDB files in and out (Redis's `rdb.c`): SAVE, DEBUG RELOAD and `--rdb-import`.
//!
//! **Writing** ([`save`]) runs while a transaction holds every worker, so the file is the
//! dataset at one instant (as Redis's SAVE, which blocks the server). The coordinator asks
//! each worker for its keys a batch at a time, in each database's hash order
//! (`Keyspace::scan`); the worker makes their values resident (reading what is only on
//! the devices, without blocking its loop) and encodes each as Redis encodes it
//! (`commands::dump::encode_key`, the DUMP/RESTORE codec); the coordinator appends the
//! entries to a temporary file, syncs it, and renames it over `dir`/`dbfilename`, as
//! Redis does. The RDB version written is the lowest that holds every value: 10 (Redis
//! 7.0), 11 with streams (consumers' active times, Redis 7.2), 12 with hashes whose
//! fields expire (Redis 7.4+), so that Redis 7.0 loads the files of a dataset it could
//! hold.
//!
//! **Reading** ([`load`]) maps the file and walks it (`skerry_codec::FileReader`: every
//! RDB version from Redis 2.x's to 8.0's, every type and encoding, the checksum checked
//! at the end); keys go to their owning workers in batches and are stored there as
//! RESTORE ... REPLACE ABSTTL would store them (`commands::dump::load_key`); keys
//! already expired are left out, as a Redis primary leaves them out; function libraries
//! are loaded (replacing those of the same name).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use skerry_codec::{self as codec, FileReader, FileWriter, Item, KeyMeta};

use crate::commands::dump;
use crate::scripting::functions::RestorePolicy;
use crate::worker::{unix_ms, Shard, Shared, Txn};

/// Keys asked of a worker per step of a walk (SAVE, DEBUG DIGEST).
const WALK_BATCH_KEYS: usize = 512;
/// File bytes gathered before they are written out.
const SAVE_WRITE_BYTES: usize = 1 << 20;
/// Keys sent to a worker per step of a load, at most.
const LOAD_BATCH_KEYS: usize = 1024;
/// File bytes of the keys sent to a worker per step of a load, at most.
const LOAD_BATCH_BYTES: usize = 8 << 20;

/// The server's RDB state: INFO persistence, LASTSAVE.
#[derive(Debug)]
pub struct State {
    /// Unix seconds of the last successful save (the start time until then).
    pub lastsave_s: AtomicI64,
    /// The workers' change counters, summed, when the last save started.
    pub dirty_at_save: AtomicU64,
    /// The last save failed (`rdb_last_bgsave_status:err`).
    pub last_failed: AtomicBool,
    /// A save is being written.
    pub saving: AtomicBool,
    /// Successful saves since the start (`rdb_saves`).
    pub saves: AtomicU64,
    /// Seconds the last save took (`rdb_last_bgsave_time_sec`; -1 before the first).
    pub last_save_s: AtomicI64,
    /// Keys the last load stored (`rdb_last_load_keys_loaded`).
    pub last_load_keys: AtomicU64,
    /// Keys the last load left out because they had expired
    /// (`rdb_last_load_keys_expired`).
    pub last_load_expired: AtomicU64,
}

impl State {
    /// The state of a server that has saved nothing yet.
    pub fn new(now_ms: i64) -> State {
        State {
            lastsave_s: AtomicI64::new(now_ms / 1000),
            dirty_at_save: AtomicU64::new(0),
            last_failed: AtomicBool::new(false),
            saving: AtomicBool::new(false),
            saves: AtomicU64::new(0),
            last_save_s: AtomicI64::new(-1),
            last_load_keys: AtomicU64::new(0),
            last_load_expired: AtomicU64::new(0),
        }
    }
}

/// `dir`/`dbfilename`: where SAVE writes and DEBUG RELOAD reads.
pub fn path(shared: &Shared) -> PathBuf {
    Path::new(&shared.config.get("dir")).join(shared.config.get("dbfilename"))
}

/// What a save wrote.
#[derive(Clone, Copy, Debug)]
pub struct Saved {
    /// Keys written.
    pub keys: u64,
    /// Bytes of the file.
    pub bytes: u64,
}

/// Per worker: each database's keys and keys with an expiry, and the RDB version its
/// values need.
fn facts(s: &mut Shard, databases: usize, now_ms: i64) -> (Vec<(u64, u64)>, u16) {
    let ks = &mut s.keyspace;
    let ttl_hashes = ks.hfe_hashes() > 0 || ks.hfe_discovering();
    let mut version = codec::RDB_VERSION_7_0;
    let mut counts = Vec::with_capacity(databases);
    for db in 0..databases {
        ks.keys(db, now_ms, |e| match e.value_type() {
            crate::coll::VALUE_TYPE_STREAM => version = version.max(codec::RDB_VERSION_7_2),
            crate::coll::VALUE_TYPE_HASH if ttl_hashes => {
                version = version.max(codec::RDB_VERSION_7_4)
            }
            _ => {}
        });
        counts.push((ks.len(db) as u64, ks.volatile_len(db) as u64));
    }
    (counts, version)
}

/// One encoded key: key, value, expiry (Unix ms, 0: none).
type Encoded = (Vec<u8>, codec::Encoded, i64);

/// Encodes `keys` of `db` (resident); keys gone meanwhile are left out.
fn encode_batch(
    s: &mut Shard,
    db: usize,
    keys: &[Vec<u8>],
    now_ms: i64,
) -> Result<Vec<Encoded>, String> {
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        match dump::encode_key(&mut s.keyspace, db, key, now_ms) {
            Ok(Some((e, at))) => out.push((key.clone(), e, at)),
            Ok(None) => {}
            Err(dump::Unreadable) => {
                let e = s.keyspace.take_error().unwrap_or_default();
                return Err(format!(
                    "the value of key '{}' could not be read: {e}",
                    String::from_utf8_lossy(key)
                ));
            }
        }
    }
    Ok(out)
}

/// A [`Walk`] step: (shard, db, keys with their values resident, now in Unix ms).
pub type WalkStep<T> = fn(&mut Shard, usize, &[Vec<u8>], i64) -> Result<T, String>;

/// The keys of one database, on every worker in turn, a batch at a time in hash order
/// (`Keyspace::scan`), while a transaction holds every worker: what SAVE writes and DEBUG
/// DIGEST hashes.
pub struct Walk {
    db: usize,
    workers: usize,
    now_ms: i64,
    /// The worker walked now, and its scan position.
    w: usize,
    position: u64,
}

impl Walk {
    /// A walk over `db` of `workers` workers at `now_ms`.
    pub fn new(db: usize, workers: usize, now_ms: i64) -> Walk {
        Walk {
            db,
            workers,
            now_ms,
            w: 0,
            position: 0,
        }
    }

    /// Runs `step` on the next batch of keys (never empty), on their worker with their
    /// values resident; `Ok(None)` once every worker is done. Err: a value could not be
    /// read, or `step`'s error.
    pub async fn next<T: Send + 'static>(
        &mut self,
        txn: &Txn,
        step: WalkStep<T>,
    ) -> Result<Option<T>, String> {
        let (db, now_ms) = (self.db, self.now_ms);
        while self.w < self.workers {
            let (w, position) = (self.w, self.position);
            let (batch, next) = txn
                .run(w, move |s| {
                    let mut batch = Vec::new();
                    let next = s.keyspace.scan(db, position, WALK_BATCH_KEYS, now_ms, |e| {
                        batch.push(e.key().to_vec())
                    });
                    (batch, next)
                })
                .await;
            match next {
                Some(p) => self.position = p,
                None => (self.w, self.position) = (w + 1, 0),
            }
            if batch.is_empty() {
                continue;
            }
            let keys = batch.clone();
            return txn
                .run_resident(w, db, batch, now_ms, move |s| step(s, db, &keys, now_ms))
                .await?
                .map(Some);
        }
        Ok(None)
    }
}

/// Empties every database of every worker (`txn` holds them all) and the function
/// libraries: before DEBUG RELOAD's load and a replica's full sync.
pub async fn empty_dataset(txn: &Txn, shared: &Shared) {
    for w in 0..shared.workers {
        txn.run(w, |s| {
            for db in 0..s.keyspace.databases() {
                s.keyspace.flush(db);
            }
            crate::blocking::serve_ready(s);
        })
        .await;
    }
    if let Err(e) = shared
        .scripts
        .libraries
        .restore(Vec::new(), RestorePolicy::Flush)
    {
        tracing::error!("emptying the function libraries: {e}");
    }
}

/// Writes every database to `path` as an RDB file; `txn` holds every worker.
pub async fn save(txn: &Txn, shared: &Arc<Shared>, path: &Path) -> Result<Saved, String> {
    debug_assert!(txn.holds_all());
    let now_ms = unix_ms();
    let databases = shared.config.get_i64("databases") as usize;
    let mut counts = vec![(0u64, 0u64); databases];
    let mut version = codec::RDB_VERSION_7_0;
    for w in 0..shared.workers {
        let (c, v) = txn.run(w, move |s| facts(s, databases, now_ms)).await;
        for (total, (keys, expires)) in counts.iter_mut().zip(c) {
            total.0 += keys;
            total.1 += expires;
        }
        version = version.max(v);
    }
    let checksum = shared.config.get("rdbchecksum") == "yes";
    let mut out = FileWriter::new(version, checksum);
    out.aux(b"redis-ver", crate::REDIS_VERSION.as_bytes());
    out.aux(b"redis-bits", b"64");
    out.aux(b"ctime", (now_ms / 1000).to_string().as_bytes());
    out.aux(
        b"used-mem",
        crate::commands::server::rss_bytes().to_string().as_bytes(),
    );
    out.aux(b"aof-base", b"0");
    for code in shared.scripts.libraries.all_codes() {
        out.function(&code);
    }
    let file_name = format!("temp-{}.rdb", std::process::id());
    let tmp = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(&file_name),
        _ => PathBuf::from(&file_name),
    };
    let io = |what: &str, e: std::io::Error| format!("{what} {}: {e}", tmp.display());
    let mut file = std::fs::File::create(&tmp).map_err(|e| io("Failed opening", e))?;
    let mut keys = 0u64;
    let written = async {
        for (db, &(db_keys, db_expires)) in counts.iter().enumerate() {
            if db_keys == 0 {
                continue;
            }
            out.select_db(db as u64, db_keys, db_expires);
            let mut walk = Walk::new(db, shared.workers, now_ms);
            while let Some(entries) = walk.next(txn, encode_batch).await? {
                let delay_us = shared.config.get_i64("rdb-key-save-delay");
                for (key, value, at) in entries {
                    if delay_us > 0 {
                        // A test knob (Redis's): every key written takes this long.
                        compio::time::sleep(std::time::Duration::from_micros(delay_us as u64))
                            .await;
                    }
                    let meta = KeyMeta {
                        expire_at_ms: (at != 0).then_some(at),
                        ..KeyMeta::default()
                    };
                    out.entry(&key, &value, meta);
                    keys += 1;
                }
                if out.buffered() >= SAVE_WRITE_BYTES {
                    file.write_all(&out.take())
                        .map_err(|e| io("Failed writing", e))?;
                }
            }
        }
        let bytes = out.taken_bytes();
        let tail = out.finish();
        file.write_all(&tail).map_err(|e| io("Failed writing", e))?;
        file.sync_all().map_err(|e| io("Failed syncing", e))?;
        Ok::<u64, String>(bytes + tail.len() as u64)
    }
    .await;
    let bytes = match written {
        Ok(b) => b,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    drop(file);
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "Failed moving {} to {}: {e}",
            tmp.display(),
            path.display()
        ));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(Saved { keys, bytes })
}

/// Marks a save as started; false when one already is.
pub fn try_begin(shared: &Shared) -> bool {
    !shared.rdb.saving.swap(true, Ordering::SeqCst)
}

/// Saves to `dir`/`dbfilename` with `txn` holding every worker, after [`try_begin`]
/// (the save is over when this returns), and keeps the state INFO shows. Err with the
/// reason, logged.
pub async fn save_and_record(txn: &Txn, shared: &Arc<Shared>) -> Result<Saved, String> {
    let rdb = &shared.rdb;
    debug_assert!(rdb.saving.load(Ordering::SeqCst));
    let started = Instant::now();
    let dirty = dirty_total(txn, shared).await;
    let path = path(shared);
    let result = save(txn, shared, &path).await;
    rdb.saving.store(false, Ordering::SeqCst);
    match &result {
        Ok(saved) => {
            rdb.dirty_at_save.store(dirty, Ordering::Relaxed);
            rdb.lastsave_s.store(unix_ms() / 1000, Ordering::Relaxed);
            rdb.last_failed.store(false, Ordering::Relaxed);
            rdb.saves.fetch_add(1, Ordering::Relaxed);
            rdb.last_save_s
                .store(started.elapsed().as_secs() as i64, Ordering::Relaxed);
            tracing::info!(
                "DB saved on disk: {} keys, {} bytes in {} ms ({})",
                saved.keys,
                saved.bytes,
                started.elapsed().as_millis(),
                path.display()
            );
        }
        Err(e) => {
            rdb.last_failed.store(true, Ordering::Relaxed);
            tracing::error!("Error saving the DB to {}: {e}", path.display());
        }
    }
    result
}

/// A transaction holding every worker for `me`: the running one (`txn_id`, an EXEC's,
/// which holds them all) or a new one.
pub async fn hold_all(shared: &Arc<Shared>, me: usize, txn_id: u64) -> Txn {
    hold_workers(shared, me, txn_id, (0..shared.workers).collect()).await
}

/// A transaction holding `workers` for `me`: the running one (`txn_id`, an EXEC's, which
/// holds every worker) or a new one.
pub async fn hold_workers(
    shared: &Arc<Shared>,
    me: usize,
    txn_id: u64,
    workers: Vec<usize>,
) -> Txn {
    if txn_id == 0 {
        Txn::begin(shared, me, workers).await
    } else {
        Txn::join(shared, me, txn_id)
    }
}

/// The workers' change counters, summed.
async fn dirty_total(txn: &Txn, shared: &Shared) -> u64 {
    let mut total = 0;
    for w in 0..shared.workers {
        total += txn.run(w, |s| s.keyspace.stats.dirty).await;
    }
    total
}

/// What a load stored.
#[derive(Clone, Copy, Debug, Default)]
pub struct Loaded {
    /// Keys stored.
    pub keys: u64,
    /// Keys left out because they had expired.
    pub expired: u64,
    /// Function libraries loaded.
    pub functions: u64,
    /// Bytes of the file.
    pub bytes: u64,
}

/// A batch of keys for one worker: (db, entry).
type Batch = Vec<(usize, codec::Entry)>;

/// Stores `batch` on its worker (replacing keys of the same name when `merge`); returns
/// (stored, expired).
async fn store_batch(
    txn: &Txn,
    shared: &Shared,
    w: usize,
    batch: Batch,
    merge: bool,
) -> Result<(u64, u64), String> {
    let t = shared.config.hot.coll.get();
    txn.run(w, move |s| {
        let now_ms = unix_ms();
        let (mut stored, mut expired) = (0, 0);
        for (db, e) in batch {
            match dump::load_key(
                &mut s.keyspace,
                db,
                &e.key,
                e.rdb_type,
                e.value,
                &e.meta,
                merge,
                &t,
                now_ms,
            ) {
                Ok(true) => stored += 1,
                Ok(false) => expired += 1,
                Err(why) => {
                    return Err(format!(
                        "key '{}' of db {db}: {why}",
                        String::from_utf8_lossy(&e.key)
                    ))
                }
            }
        }
        Ok((stored, expired))
    })
    .await
}

/// Loads the RDB file at `path` into the keyspace; `txn` holds every worker. With `merge`,
/// keys and function libraries already there are replaced by the file's; without, one
/// that is already there is an error (what was stored until then stays). Logs progress
/// every few seconds when `progress`.
pub async fn load(
    txn: &Txn,
    shared: &Arc<Shared>,
    path: &Path,
    merge: bool,
    progress: bool,
) -> Result<Loaded, String> {
    debug_assert!(txn.holds_all());
    let started = Instant::now();
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: the file is mapped read-only and only read through `map` while it lives;
    // Skerry never writes a file it loads (SAVE writes a temporary file and renames it
    // over this name, which leaves this mapping's pages alone). Another process truncating
    // the file meanwhile could fault the read, as for any reader of a shared file.
    let map =
        unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("{}: {e}", path.display()))?;
    let mut r = FileReader::new(&map).map_err(|e| format!("{}: {e}", path.display()))?;
    let databases = shared.config.get_i64("databases") as u64;
    let workers = shared.workers;
    let mut db = 0usize;
    let mut batches: Vec<Batch> = (0..workers).map(|_| Vec::new()).collect();
    let mut batch_bytes = vec![0usize; workers];
    let mut loaded = Loaded {
        bytes: map.len() as u64,
        ..Loaded::default()
    };
    let mut last_report = Instant::now();
    let add = |loaded: &mut Loaded, (stored, expired): (u64, u64)| {
        loaded.keys += stored;
        loaded.expired += expired;
    };
    loop {
        let before = r.position();
        let item = r
            .next_item()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let Some(item) = item else { break };
        match item {
            Item::SelectDb(n) => {
                if n >= databases {
                    return Err(format!(
                        "{}: the file holds database {n}, and this server has {databases} (databases)",
                        path.display()
                    ));
                }
                db = n as usize;
            }
            Item::Entry(e) => {
                let w = crate::slot::owner(&e.key, workers);
                batches[w].push((db, e));
                batch_bytes[w] += r.position() - before;
                if batches[w].len() >= LOAD_BATCH_KEYS || batch_bytes[w] >= LOAD_BATCH_BYTES {
                    let batch = std::mem::take(&mut batches[w]);
                    batch_bytes[w] = 0;
                    let n = store_batch(txn, shared, w, batch, merge).await?;
                    add(&mut loaded, n);
                }
            }
            Item::Function(code) => {
                // In file order (Redis writes them before the keys).
                let policy = if merge {
                    RestorePolicy::Replace
                } else {
                    RestorePolicy::Append
                };
                shared
                    .scripts
                    .libraries
                    .restore(vec![code], policy)
                    .map_err(|e| format!("{}: function library: {e}", path.display()))?;
                loaded.functions += 1;
            }
            Item::Aux { .. } | Item::ResizeDb { .. } => {}
        }
        if progress && last_report.elapsed().as_secs() >= 2 {
            last_report = Instant::now();
            let secs = started.elapsed().as_secs_f64().max(1e-3);
            tracing::info!(
                "Loading {}: {}% ({} keys, {:.0} MB/s)",
                path.display(),
                r.position() * 100 / r.len().max(1),
                loaded.keys,
                r.position() as f64 / secs / 1e6
            );
        }
    }
    for (w, batch) in batches.into_iter().enumerate() {
        if !batch.is_empty() {
            let n = store_batch(txn, shared, w, batch, merge).await?;
            add(&mut loaded, n);
        }
    }
    shared
        .rdb
        .last_load_keys
        .store(loaded.keys, Ordering::Relaxed);
    shared
        .rdb
        .last_load_expired
        .store(loaded.expired, Ordering::Relaxed);
    Ok(loaded)
}

/// `--rdb-import PATH` at start, on worker `me`: loads the file into the store, which must
/// hold no key (a second start with the same flag must not load it twice over newer
/// writes), every worker held meanwhile (clients wait).
pub async fn import_at_start(
    shared: Arc<Shared>,
    me: usize,
    path: PathBuf,
) -> Result<Loaded, String> {
    let started = Instant::now();
    let txn = Txn::begin(&shared, me, (0..shared.workers).collect()).await;
    let mut existing = 0;
    for w in 0..shared.workers {
        existing += txn
            .run(w, |s| {
                (0..s.keyspace.databases())
                    .map(|db| s.keyspace.len(db))
                    .sum::<usize>()
            })
            .await;
    }
    if existing > 0 {
        return Err(format!(
            "--rdb-import {}: the data files already hold {existing} keys; an RDB file is imported into an empty store only (start without --rdb-import, or with an empty --dir)",
            path.display()
        ));
    }
    tracing::info!("Importing {}", path.display());
    let loaded = load(&txn, &shared, &path, true, true).await?;
    let secs = started.elapsed().as_secs_f64();
    tracing::info!(
        "Imported {}: {} keys ({} expired left out), {} function libraries, {} bytes in {:.2} s ({:.0} keys/s)",
        path.display(),
        loaded.keys,
        loaded.expired,
        loaded.functions,
        loaded.bytes,
        secs,
        loaded.keys as f64 / secs.max(1e-6)
    );
    Ok(loaded)
}
