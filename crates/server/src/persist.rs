//! Opening the data devices (`crates/store`) at startup: every value lives there, and the
//! recovery scan rebuilds each worker's index from the records found.
//!
//! A record's key is the database number (LEB128) followed by the user key
//! ([`crate::keyspace::record_key`]). The store delivers each key's records in increasing
//! mutation sequence order, so the last record seen wins; each record goes to the worker
//! that owns its key's slot under the current `--threads`, whatever the count was when it
//! was written.

use std::path::PathBuf;

use skerry_store::format::{RecordKind, VALUE_TYPE_STRING};
use skerry_store::{
    AnyDevice, BlockId, Durability, FileDevice, Recovered, RecoveredOpenBlock, Store, StoreOptions,
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
            if newest {
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

/// Opens (or creates) the data files and rebuilds every worker's index from them. Runs
/// before the workers start.
pub fn open(cfg: &Config, workers: usize, databases: usize, now_ms: i64) -> Result<Opened, String> {
    let paths = data_paths(cfg);
    if paths.len() > MAX_DEVICES {
        return Err(format!(
            "at most {MAX_DEVICES} data files are supported, {} given",
            paths.len()
        ));
    }
    let size_bytes = cfg.get_i64("data-size") as u64;
    let rt = compio::runtime::Runtime::new()
        .map_err(|e| format!("cannot start the recovery runtime: {e}"))?;
    let started = std::time::Instant::now();
    rt.block_on(async move {
        let mut devices: Vec<AnyDevice> = Vec::new();
        for path in &paths {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            let device = FileDevice::open_or_create(path, size_bytes)
                .await
                .map_err(|e| format!("cannot open the data file {}: {e}", path.display()))?;
            lock_for_life(path)?;
            devices.push(device.into());
        }
        let mut per_worker: Vec<RecoveredIndex> =
            (0..workers).map(|_| RecoveredIndex::new(databases)).collect();
        let mut beyond_databases = 0u64;
        let mut damaged = 0u64;
        let mut routing = Routing::default();
        let opened = Store::create_or_open_reporting(devices, &StoreOptions::default(), |item| {
            let r = match item {
                Recovered::Record(r) => r,
                Recovered::Damaged(d) => {
                    // The key's newest record is damaged: the key answers an error rather
                    // than falling back to an older version (unless a newer record follows).
                    damaged += 1;
                    let Some((db, key)) = d.key.and_then(split_record_key) else {
                        routing.note(d.location.block_id(), None);
                        tracing::error!(
                            "damaged record at data device {} block {} offset {}: its key is unreadable",
                            d.location.device, d.location.block, d.location.offset_bytes
                        );
                        return;
                    };
                    tracing::error!(
                        "damaged record of key '{}' (db {db}) at data device {} block {} offset {}: reading the key answers an error",
                        String::from_utf8_lossy(key).escape_debug(),
                        d.location.device, d.location.block, d.location.offset_bytes
                    );
                    let w = crate::slot::owner(key, workers);
                    routing.note(d.location.block_id(), Some(w));
                    if db < databases {
                        per_worker[w].value(db, key, &d.location, VALUE_TYPE_STRING, 0);
                    }
                    return;
                }
            };
            let Some((db, key)) = split_record_key(r.key) else {
                routing.note(r.location.block_id(), None);
                return;
            };
            let w = crate::slot::owner(key, workers);
            routing.note(r.location.block_id(), Some(w));
            if db >= databases {
                beyond_databases += 1;
                return;
            }
            match r.meta.kind {
                RecordKind::Value => per_worker[w].value(
                    db,
                    key,
                    &r.location,
                    r.meta.value_type,
                    r.meta.expiry_ms,
                ),
                RecordKind::Tombstone => per_worker[w].tombstone(db, key),
                _ => {}
            }
        })
        .await;
        let (store, recovery) =
            opened.map_err(|e| format!("cannot open the data files {}: {e}", describe(&paths)))?;
        for d in 0..store.device_count() as u16 {
            let (bs, n) = (store.block_size_bytes(d), store.block_count(d));
            if bs > MAX_BLOCK_SIZE_BYTES || n > MAX_BLOCKS_PER_DEVICE {
                return Err(format!(
                    "data device {d}: {n} blocks of {bs} bytes; at most {MAX_BLOCKS_PER_DEVICE} blocks of at most {MAX_BLOCK_SIZE_BYTES} bytes are supported"
                ));
            }
        }
        if damaged > 0 {
            tracing::error!("{damaged} damaged records found by recovery (see above)");
        }
        if beyond_databases > 0 {
            tracing::warn!(
                "{beyond_databases} records belong to databases beyond 'databases' ({databases}); ignored"
            );
        }
        let mut keys = 0usize;
        for idx in &mut per_worker {
            keys += idx.finish(now_ms, |loc| store.add_live(loc));
        }
        store.recovery_done();
        tracing::info!(
            "Data files {} loaded in {:.2} s: {keys} keys from {} records in {} blocks, max mutation sequence {}",
            describe(&paths),
            started.elapsed().as_secs_f64(),
            recovery.records,
            recovery.used_blocks,
            recovery.max_mutation_seq
        );
        for t in &recovery.truncations {
            tracing::warn!(
                "data device {} block {}: valid records end at offset {} ({}); the rest is ignored",
                t.block.device,
                t.block.block,
                t.offset_bytes,
                t.reason
            );
        }
        let adoptable = routing.adoptable(&store, &recovery.open_blocks, workers);
        Ok(Opened {
            store,
            max_seq: recovery.max_mutation_seq,
            per_worker,
            adoptable,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use skerry_store::device::RamDevice;
    use skerry_store::format::{RecordMeta, RESERVED_BYTES};
    use skerry_store::Writer;

    /// A store whose three open blocks were written by workers 0, 1, 2 (in that order, so
    /// their block sequences increase), reopened.
    fn three_open_blocks() -> (Store, Vec<RecoveredOpenBlock>) {
        let opts = StoreOptions {
            block_size_bytes: 64 << 10,
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
