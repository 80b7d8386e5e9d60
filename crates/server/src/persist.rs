//! Persistence through the storage engine (`crates/store`), enabled with `appendonly yes`:
//! every write is appended to the data file as a record, and startup replays the data file
//! into the keyspaces. Values also stay in RAM in this step (write-through); moving them out
//! of RAM comes with the value cache (docs/storage-engine.md, "Wiring into the server").
//!
//! A record's key is the database number (LEB128) followed by the user key.

use std::collections::HashMap;
use std::path::PathBuf;

use skerry_store::format::{RecordKind, RecordMeta, VALUE_TYPE_STRING};
use skerry_store::{Durability, FileDevice, Store, StoreOptions};

use crate::config::Config;

/// One key recovered from the data file, for the worker that owns it.
pub struct RecoveredKey {
    /// Database.
    pub db: usize,
    /// User key.
    pub key: Vec<u8>,
    /// Value.
    pub value: Vec<u8>,
    /// Absolute expiry (Unix ms), 0 = none.
    pub expire_at_ms: i64,
}

/// The opened store and what it held.
pub struct Opened {
    /// The store (shared by all workers).
    pub store: Store,
    /// Highest mutation sequence found; writers start above it.
    pub max_seq: u64,
    /// Recovered keys, per owning worker.
    pub per_worker: Vec<Vec<RecoveredKey>>,
}

/// Encodes a record key: database number (LEB128) then the user key.
pub fn record_key(db: usize, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 2);
    let mut n = db as u64;
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    out.extend_from_slice(key);
    out
}

/// Splits a record key into database and user key.
pub fn split_record_key(rk: &[u8]) -> Option<(usize, &[u8])> {
    let mut db: u64 = 0;
    for (i, &b) in rk.iter().enumerate().take(10) {
        db |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((usize::try_from(db).ok()?, &rk[i + 1..]));
        }
    }
    None
}

/// Record header for a value or tombstone.
pub fn meta(kind: RecordKind, mutation_seq: u64, expire_at_ms: i64) -> RecordMeta {
    RecordMeta {
        kind,
        value_type: VALUE_TYPE_STRING,
        flags: 0,
        mutation_seq,
        expiry_ms: expire_at_ms.max(0),
    }
}

/// The durability policy named by `appendfsync`.
pub fn durability(cfg: &Config) -> Durability {
    match cfg.get("appendfsync").as_str() {
        "always" => Durability::Always,
        "no" => Durability::No,
        _ => Durability::EverySec,
    }
}

/// The data file: `data-file`, or `<dir>/skerry.data`.
pub fn data_path(cfg: &Config) -> PathBuf {
    let f = cfg.get("data-file");
    if f.is_empty() {
        PathBuf::from(cfg.get("dir")).join("skerry.data")
    } else {
        PathBuf::from(f)
    }
}

/// Opens (or creates) the data file and replays it: the highest mutation sequence of each
/// key wins; tombstones and expired keys are dropped. Runs before the workers start.
pub fn open(cfg: &Config, workers: usize, databases: usize, now_ms: i64) -> Result<Opened, String> {
    let path = data_path(cfg);
    let size_bytes = cfg.get_i64("data-size") as u64;
    let rt = compio::runtime::Runtime::new()
        .map_err(|e| format!("cannot start the recovery runtime: {e}"))?;
    rt.block_on(async move {
        let device = FileDevice::open_or_create(&path, size_bytes)
            .await
            .map_err(|e| format!("cannot open the data file {}: {e}", path.display()))?;
        // Record key -> (sequence, None for a tombstone or Some((value, expiry))).
        type Latest = HashMap<Vec<u8>, (u64, Option<(Vec<u8>, i64)>)>;
        let mut latest: Latest = HashMap::new();
        let (store, recovery) = Store::create_or_open(vec![device.into()], &StoreOptions::default(), |r| {
            let seq = r.meta.mutation_seq;
            let entry = latest.entry(r.key.to_vec()).or_insert((0, None));
            if seq >= entry.0 {
                *entry = match r.meta.kind {
                    RecordKind::Value => (seq, Some((r.value.to_vec(), r.meta.expiry_ms))),
                    _ => (seq, None),
                };
            }
        })
        .await
        .map_err(|e| format!("cannot open the data file {}: {e}", path.display()))?;
        let mut per_worker: Vec<Vec<RecoveredKey>> = (0..workers).map(|_| Vec::new()).collect();
        let mut keys = 0usize;
        for (rk, (_, v)) in latest {
            let Some((value, expire_at_ms)) = v else { continue };
            if expire_at_ms != 0 && expire_at_ms <= now_ms {
                continue;
            }
            let Some((db, key)) = split_record_key(&rk) else { continue };
            if db >= databases {
                tracing::warn!("data file holds database {db}, beyond 'databases'; skipped");
                continue;
            }
            keys += 1;
            per_worker[crate::slot::owner(key, workers)].push(RecoveredKey {
                db,
                key: key.to_vec(),
                value,
                expire_at_ms,
            });
        }
        tracing::info!(
            "Data file {} loaded: {keys} keys from {} records in {} blocks, max mutation sequence {}",
            data_path(cfg).display(),
            recovery.records,
            recovery.used_blocks,
            recovery.max_mutation_seq
        );
        Ok(Opened {
            store,
            max_seq: recovery.max_mutation_seq,
            per_worker,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_keys_round_trip() {
        for db in [0usize, 1, 15, 127, 128, 300, 1_000_000] {
            let rk = record_key(db, b"user:1");
            assert_eq!(split_record_key(&rk), Some((db, &b"user:1"[..])));
        }
        assert_eq!(record_key(0, b"k"), b"\x00k");
        assert_eq!(split_record_key(&[0x80, 0x80]), None);
    }
}
