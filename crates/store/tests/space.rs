//! Space: live bytes per block, deferred releases, reclaim (zeroed headers,
//! the log-tail rule for tombstones), the tombstone reserve on a full device,
//! and the order in which recovery delivers records.

mod common;

use std::collections::{HashMap, HashSet};

use common::small::{opts, ram, tombstone, value};
use common::{read, run, temp_dir};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use skerry_store::device::{CrashSpec, Fault, FaultOp, RamControl};
use skerry_store::format::{
    RecordKind, Superblock, BLOCK_HEADER_BYTES, RESERVED_BYTES, SUPERBLOCK_SLOT_BYTES,
};
use skerry_store::{
    AnyDevice, BlockId, Durability, FileDevice, Location, RecoveredIndex, RecoveredRecord,
    Recovery, Store, StoreError, StoreOptions, Writer,
};

fn key(k: u32) -> Vec<u8> {
    format!("key-{k}").into_bytes()
}

/// Opens the store on `ctls`, passing every record to `f`.
async fn open_with(ctls: &[RamControl], f: impl FnMut(&RecoveredRecord<'_>)) -> (Store, Recovery) {
    Store::create_or_open(ctls.iter().map(|c| c.device().into()).collect(), &opts(), f)
        .await
        .expect("open")
}

async fn open(ctl: &RamControl) -> (Store, RecoveredIndex, Recovery) {
    let mut index = RecoveredIndex::default();
    let (store, rec) = open_with(std::slice::from_ref(ctl), |r| index.apply(r)).await;
    (store, index, rec)
}

/// Counts every live record of `index` in the store, then ends recovery.
fn account(store: &Store, index: &RecoveredIndex) {
    for (_, e) in index.live() {
        store.add_live(&e.location);
    }
    store.recovery_done();
}

fn header_is_zero(ctl: &RamControl, store: &Store, id: BlockId) -> bool {
    let at = store.block_offset_bytes(id) as usize;
    ctl.durable_image()[at..at + BLOCK_HEADER_BYTES]
        .iter()
        .all(|&b| b == 0)
}

/// Fails if a release is applied before the record superseding it is
/// durable: the old block would be reclaimed and a crash would lose the key.
#[test]
fn release_waits_until_the_overwrite_is_durable() {
    let dev = ram(6);
    let ctl = dev.control();
    let v1 = vec![1u8; 20_000];
    let old = run(async {
        let (store, _, _) = open(&ctl).await;
        let w = Writer::open(store.clone(), 0, Durability::EverySec, 0)
            .await
            .unwrap();
        // Another worker's writer does the reclaiming: it has no pending
        // release of its own, so it never syncs w's records.
        let other = Writer::open(store.clone(), 1, Durability::EverySec, 0)
            .await
            .unwrap();
        let old = w.append(value(w.next_seq()), b"k", &v1).unwrap();
        // Does not fit: seals block A (holding only k) and opens block B.
        let filler = w
            .append(value(w.next_seq()), b"filler", &[9u8; 50_000])
            .unwrap();
        assert_ne!(old.block_id(), filler.block_id());
        w.sync().await.unwrap();
        let a = old.block_id();
        assert_eq!(store.block_live_bytes(a), u64::from(old.len_bytes));
        // Overwrite k and release the old record; nothing synced yet.
        w.append(value(w.next_seq()), b"k", b"v2").unwrap();
        w.release(old);
        assert_eq!(w.stats().releases, 1);
        assert_eq!(w.stats().pending_releases, 1);
        assert_eq!(store.block_live_bytes(a), u64::from(old.len_bytes));
        // A failed sync keeps the release pending.
        ctl.inject(Fault::eio(FaultOp::Sync));
        assert!(w.sync().await.is_err());
        assert_eq!(w.stats().pending_releases, 1);
        w.flush().await.unwrap(); // written, not durable
        assert_eq!(other.reclaim().await.unwrap(), 0);
        assert_ne!(store.block_seq(a), 0, "block A is still in use");
        assert_eq!(store.stats().pending_reclaim_blocks, 0);
        old
    });
    // Crash: the overwrite is lost, so the old value must still be there.
    ctl.crash(CrashSpec::lose_unsynced());
    let v3 = b"v3".to_vec();
    run(async {
        let (store, index, _) = open(&ctl).await;
        let e = index.get(b"k").expect("k survives the crash");
        assert_eq!(e.location, old);
        assert_eq!(e.meta.mutation_seq, 1);
        assert!(!header_is_zero(&ctl, &store, old.block_id()));
        account(&store, &index);
        assert_eq!(
            store.stats().live_bytes,
            index
                .live()
                .map(|(_, e)| u64::from(e.location.len_bytes))
                .sum::<u64>()
        );
        let w = Writer::open(store.clone(), 0, Durability::EverySec, 2)
            .await
            .unwrap();
        let other = Writer::open(store.clone(), 1, Durability::EverySec, 2)
            .await
            .unwrap();
        assert_eq!(w.read(&old).await.unwrap().value(), v1.as_slice());
        w.append(value(w.next_seq()), b"k", &v3).unwrap();
        w.release(old);
        w.sync().await.unwrap();
        assert_eq!(w.stats().pending_releases, 0);
        assert_eq!(store.block_live_bytes(old.block_id()), 0);
        // Now block A goes (to whichever writer asks first).
        assert_eq!(other.reclaim().await.unwrap(), 1);
        assert_eq!(w.reclaim().await.unwrap(), 0);
        assert_eq!(store.block_seq(old.block_id()), 0);
        assert!(header_is_zero(&ctl, &store, old.block_id()));
        assert_eq!(store.stats().reclaimed_blocks, 1);
        assert_eq!(other.stats().reclaimed_blocks, 1);
    });
    ctl.crash(CrashSpec::lose_unsynced());
    run(async {
        let (store, index, _) = open(&ctl).await;
        let e = index.get(b"k").unwrap();
        let w = Writer::open(store, 0, Durability::EverySec, 9)
            .await
            .unwrap();
        assert_eq!(w.read(&e.location).await.unwrap().value(), v3.as_slice());
    });
}

/// Overwrites a few keys far more often than the device holds: blocks are
/// reclaimed, appends never run out of space, and live bytes are exactly
/// the sum of the live records, also after a recovery.
#[test]
fn overwrites_reclaim_blocks_indefinitely() {
    let dev = ram(8);
    let ctl = dev.control();
    let mut rng = StdRng::seed_from_u64(5);
    let mut live: HashMap<u32, (Location, Vec<u8>)> = HashMap::new();
    let overwrite = |w: &Writer, rng: &mut StdRng, live: &mut HashMap<u32, (Location, Vec<u8>)>| {
        let k = rng.random_range(0..40u32);
        let v = vec![rng.random::<u8>(); rng.random_range(100..1500)];
        let loc = w
            .append(value(w.next_seq()), &key(k), &v)
            .expect("overwrites never run out of space");
        if let Some((old, _)) = live.insert(k, (loc, v)) {
            w.release(old);
        }
    };
    let live_sum = |live: &HashMap<u32, (Location, Vec<u8>)>| -> u64 {
        live.values().map(|(l, _)| u64::from(l.len_bytes)).sum()
    };
    let max_block_seq = run(async {
        let (store, _, _) = open(&ctl).await;
        let w = Writer::open(store.clone(), 0, Durability::EverySec, 0)
            .await
            .unwrap();
        for i in 0..20_000 {
            overwrite(&w, &mut rng, &mut live);
            if i % 50 == 49 {
                w.tick().await.unwrap();
                assert_eq!(w.stats().pending_releases, 0);
                assert_eq!(store.stats().live_bytes, live_sum(&live), "after op {i}");
            }
        }
        w.sync().await.unwrap();
        let stats = store.stats();
        // ~16 MB written through a 512 KiB device.
        assert!(stats.reclaimed_blocks > 150, "{stats:?}");
        assert_eq!(w.stats().reclaimed_blocks, stats.reclaimed_blocks);
        assert_eq!(stats.tombstone_blocks, 0);
        assert_eq!(stats.total_blocks, 8);
        assert_eq!(
            stats.used_blocks + stats.free_blocks + stats.reserved_blocks,
            8
        );
        (0..8)
            .map(|b| {
                store.block_seq(BlockId {
                    device: 0,
                    block: b,
                })
            })
            .max()
            .unwrap()
    });
    ctl.crash(CrashSpec::lose_unsynced());
    run(async {
        let (store, index, rec) = open(&ctl).await;
        assert_eq!(rec.max_block_seq, max_block_seq);
        assert_eq!(index.live().count(), live.len());
        for (k, (loc, _)) in &live {
            assert_eq!(index.get(&key(*k)).unwrap().location, *loc);
        }
        account(&store, &index);
        assert_eq!(store.stats().live_bytes, live_sum(&live));
        let w = Writer::open(store.clone(), 0, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        for (loc, v) in live.values() {
            assert_eq!(w.read(loc).await.unwrap().value(), v.as_slice());
        }
        for i in 0..5_000 {
            overwrite(&w, &mut rng, &mut live);
            if i % 50 == 49 {
                w.tick().await.unwrap();
                assert_eq!(store.stats().live_bytes, live_sum(&live));
            }
        }
        w.tick().await.unwrap();
        // Every recovered block (sealed or open) was reclaimed.
        for b in 0..8 {
            let seq = store.block_seq(BlockId {
                device: 0,
                block: b,
            });
            assert!(
                seq == 0 || seq > rec.max_block_seq,
                "recovered block {b} (seq {seq}) not reclaimed"
            );
        }
        assert_eq!(store.stats().pending_reclaim_blocks, 0);
        for (loc, v) in live.values() {
            assert_eq!(w.read(loc).await.unwrap().value(), v.as_slice());
        }
    });
}

/// A tombstone block whose records are all obsolete stays while an older
/// block is in use (it may hold an older version of a deleted key), and goes
/// once the older block is reclaimed.
#[test]
fn tombstone_block_waits_for_older_blocks() {
    let dev = ram(8);
    let ctl = dev.control();
    let (a, b) = run(async {
        let (store, _, _) = open(&ctl).await;
        let w = Writer::open(store.clone(), 0, Durability::EverySec, 0)
            .await
            .unwrap();
        // Block A: x (long-lived) and k.
        let x = w.append(value(w.next_seq()), b"x", &[1u8; 30_000]).unwrap();
        let k = w.append(value(w.next_seq()), b"k", b"old").unwrap();
        // Block B: f, then the tombstone of k.
        let f = w.append(value(w.next_seq()), b"f", &[2u8; 40_000]).unwrap();
        w.append(tombstone(w.next_seq()), b"k", &[]).unwrap();
        w.release(k);
        // Block C: f overwritten, so B holds nothing live.
        w.append(value(w.next_seq()), b"f", &[3u8; 40_000]).unwrap();
        w.release(f);
        let (a, b) = (x.block_id(), f.block_id());
        assert_eq!(a, k.block_id());
        assert_ne!(a, b);
        w.sync().await.unwrap();
        assert_eq!(store.block_live_bytes(b), 0);
        assert!(store.block_has_tombstones(b));
        assert!(!store.block_has_tombstones(a));
        assert_eq!(w.reclaim().await.unwrap(), 0, "B must wait for A");
        let stats = store.stats();
        assert_eq!(stats.pending_reclaim_blocks, 1);
        assert_eq!(stats.tombstone_blocks, 1);
        (a, b)
    });
    ctl.crash(CrashSpec::lose_unsynced());
    run(async {
        let (store, index, rec) = open(&ctl).await;
        assert!(index.get(b"k").is_none(), "deleted key came back");
        assert_eq!(rec.tombstone_blocks, 1);
        assert!(store.block_has_tombstones(b));
        account(&store, &index);
        let w = Writer::open(store.clone(), 0, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        assert_eq!(w.reclaim().await.unwrap(), 0);
        // Overwrite x: A dies, and then B is the oldest block.
        let x = index.get(b"x").unwrap().location;
        w.append(value(w.next_seq()), b"x", b"new").unwrap();
        w.release(x);
        assert_eq!(w.reclaim().await.unwrap(), 2);
        assert!(header_is_zero(&ctl, &store, a));
        assert!(header_is_zero(&ctl, &store, b));
        assert_eq!(store.stats().tombstone_blocks, 0);
    });
    ctl.crash(CrashSpec::lose_unsynced());
    run(async {
        let (_, index, _) = open(&ctl).await;
        assert!(!index.entries.contains_key(b"k".as_slice()));
        assert_eq!(index.live().count(), 2);
    });
}

/// The newest block with a durable header is never reclaimed, so after a
/// crash block sequences restart above the sequence of every reclaimed block
/// (whose stale records, seeded with it, stay in its body until overwritten).
#[test]
fn block_sequences_restart_above_every_reclaimed_block() {
    let dev = ram(8);
    let ctl = dev.control();
    let (high, newest) = run(async {
        let (store, _, _) = open(&ctl).await;
        // b's open block is old (low block sequence) and stays in use. (b's
        // mutation sequences start above a's: it supersedes a record of a.)
        let b = Writer::open(store.clone(), 1, Durability::EverySec, 1000)
            .await
            .unwrap();
        b.append(value(b.next_seq()), b"b", b"1").unwrap();
        b.sync().await.unwrap();
        let a = Writer::open(store.clone(), 0, Durability::EverySec, 0)
            .await
            .unwrap();
        let mut high = 0;
        let mut old: Option<Location> = None;
        for _ in 0..40 {
            let loc = a.append(value(a.next_seq()), b"a", &[1u8; 30_000]).unwrap();
            high = high.max(store.block_seq(loc.block_id()));
            if let Some(o) = old.replace(loc) {
                a.release(o);
            }
            a.tick().await.unwrap();
        }
        a.sync().await.unwrap();
        let newest = old.unwrap();
        assert_eq!(store.block_seq(newest.block_id()), high);
        // Its open block, all synced, is handed to reclaim.
        drop(a);
        // Supersede a's last record, so every block a wrote is dead.
        b.append(value(b.next_seq()), b"a", b"2").unwrap();
        b.release(newest);
        b.sync().await.unwrap();
        assert_eq!(store.block_live_bytes(newest.block_id()), 0);
        b.reclaim().await.unwrap();
        assert_eq!(
            store.block_seq(newest.block_id()),
            high,
            "the newest durable header must stay"
        );
        assert_eq!(store.stats().pending_reclaim_blocks, 1);
        (high, newest)
    });
    ctl.crash(CrashSpec::lose_unsynced());
    run(async {
        let (store, index, rec) = open(&ctl).await;
        assert_eq!(rec.max_block_seq, high);
        let next = store.alloc_block(0).unwrap().block_seq;
        assert!(next > high, "block sequence {next} reused (<= {high})");
        assert_ne!(index.get(b"a").unwrap().location, newest);
    });
}

/// On a full device a value append fails with NoSpace and appends nothing,
/// deletes still work through the reserve, and once blocks are released and
/// reclaimed value appends succeed again.
#[test]
fn full_device_takes_deletes_and_recovers_space() {
    let dev = ram(4);
    let ctl = dev.control();
    let deleted: Vec<u32> = run(async {
        let (store, _, _) = open(&ctl).await;
        let w = Writer::open(store.clone(), 0, Durability::EverySec, 0)
            .await
            .unwrap();
        let stats = store.stats();
        assert_eq!((stats.reserved_blocks, stats.free_blocks), (1, 3));
        let mut locs = Vec::new();
        let err = loop {
            let n = locs.len() as u32;
            match w.append(value(w.next_seq()), &key(n), &[n as u8; 1000]) {
                Ok(loc) => locs.push(loc),
                Err(e) => break e,
            }
        };
        assert!(matches!(err, StoreError::NoSpace), "{err}");
        assert_eq!(err.to_string(), "no space left on the data devices");
        assert_eq!(store.free_blocks(), 0);
        w.sync().await.unwrap();
        let appended = w.appended();
        // (Larger than the record that did not fit.)
        let more = [7u8; 1100];
        assert!(matches!(
            w.append(value(w.next_seq()), b"more", &more),
            Err(StoreError::NoSpace)
        ));
        assert_eq!(w.appended(), appended, "a refused append appends nothing");
        // Delete every key of the first two blocks: tombstones go to the reserve.
        let first_blocks = [locs[0].block_id(), locs[locs.len() / 2].block_id()];
        let mut deleted = Vec::new();
        for (n, loc) in locs.iter().enumerate() {
            if first_blocks.contains(&loc.block_id()) {
                w.append(tombstone(w.next_seq()), &key(n as u32), &[])
                    .expect("deletes work on a full device");
                w.release(*loc);
                deleted.push(n as u32);
            }
        }
        assert!(deleted.len() > 50);
        assert_eq!(w.stats().reserve_uses, 1);
        assert_eq!(store.stats().reserved_blocks, 0);
        // The reserve block takes tombstones only.
        assert!(matches!(
            w.append(value(w.next_seq()), b"more", &more),
            Err(StoreError::NoSpace)
        ));
        w.sync().await.unwrap();
        assert_eq!(w.reclaim().await.unwrap(), 2);
        // One freed block refilled the reserve; values use the other.
        assert_eq!(store.stats().reserved_blocks, 1);
        assert_eq!(store.free_blocks(), 1);
        w.append(value(w.next_seq()), b"more", &more).unwrap();
        w.sync().await.unwrap();
        drop(w);
        assert_eq!(store.stats().reserved_blocks, 0, "reserve returned on drop");
        deleted
    });
    ctl.crash(CrashSpec::lose_unsynced());
    run(async {
        let (_, index, _) = open(&ctl).await;
        for n in &deleted {
            assert!(index.get(&key(*n)).is_none(), "deleted key {n} came back");
        }
        assert!(index.get(b"more").is_some());
        assert!(index.live().count() > 50);
    });
}

/// One entry of the model's history: when it was written (op counter, never
/// reused), its key and value (`None`: tombstone).
struct Written {
    time: u64,
    key: u32,
    value: Option<Vec<u8>>,
}

/// Random puts and deletes with reclaim, crashed at random points and
/// recovered many times (the index rebuilt from recovery, live bytes counted
/// again): a key is never older than what was durable, a durable value is
/// never lost, and a deleted key never comes back.
#[test]
fn tombstones_never_resurrect_keys() {
    for seed in 1..=10u64 {
        random_crash_cycles(seed);
    }
}

fn random_crash_cycles(seed: u64) {
    const KEYS: u32 = 16;
    const COLD_KEYS: u32 = 3;
    let dev = ram(6);
    let ctl = dev.control();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut history: HashMap<u64, Written> = HashMap::new();
    // Per key: time of the newest durable record, and whether it is a value.
    let mut durable: HashMap<u32, (u64, bool)> = HashMap::new();
    let mut time = 0u64;
    let mut reclaimed = 0u64;
    let mut no_space = 0u64;
    for cycle in 0..20 {
        let what = format!("seed {seed} cycle {cycle}");
        run(async {
            let (store, index, rec) = open(&ctl).await;
            history.retain(|&seq, _| seq <= rec.max_mutation_seq);
            let w = Writer::open(store.clone(), 0, Durability::EverySec, rec.max_mutation_seq)
                .await
                .unwrap();
            // Check the recovered state against the model.
            let mut current: HashMap<u32, (u64, bool)> = HashMap::new();
            let mut live: HashMap<u32, Location> = HashMap::new();
            for k in 0..KEYS {
                let got = index.entries.get(&key(k));
                match (got, durable.get(&k)) {
                    (None, Some(&(_, true))) => panic!("{what}: durable key {k} lost"),
                    (None, _) => {}
                    (Some(e), floor) => {
                        let h = history.get(&e.meta.mutation_seq).unwrap_or_else(|| {
                            panic!("{what}: key {k} at unknown seq {}", e.meta.mutation_seq)
                        });
                        assert_eq!(h.key, k, "{what}");
                        if let Some(&(floor_time, _)) = floor {
                            assert!(
                                h.time >= floor_time,
                                "{what}: key {k} recovered older than durable (resurrected)"
                            );
                        }
                        let is_value = e.meta.kind == RecordKind::Value;
                        assert_eq!(is_value, h.value.is_some(), "{what}");
                        if let Some(v) = &h.value {
                            let r = w.read(&e.location).await.expect("read recovered");
                            assert_eq!(r.value(), v.as_slice(), "{what}: key {k}");
                            live.insert(k, e.location);
                        }
                        current.insert(k, (h.time, is_value));
                    }
                }
            }
            // What is on the device after a crash is durable.
            durable.extend(current.iter().map(|(&k, &v)| (k, v)));
            account(&store, &index);
            let live_sum: u64 = live.values().map(|l| u64::from(l.len_bytes)).sum();
            assert_eq!(store.stats().live_bytes, live_sum, "{what}");

            let dropped_before = ctl.stats().dropped_writes;
            if cycle % 3 != 2 {
                ctl.set_crash_point(rng.random_range(0..120));
            }
            for _ in 0..300 {
                match rng.random_range(0..100) {
                    0..55 => {
                        // Cold keys (rarely overwritten) keep old blocks in
                        // use while the hot keys' blocks die.
                        let k = if rng.random_bool(0.03) {
                            rng.random_range(0..COLD_KEYS)
                        } else {
                            rng.random_range(COLD_KEYS..KEYS)
                        };
                        let v = vec![rng.random::<u8>(); rng.random_range(1..3000)];
                        let seq = w.next_seq();
                        match w.append(value(seq), &key(k), &v) {
                            Ok(loc) => {
                                time += 1;
                                history.insert(
                                    seq,
                                    Written {
                                        time,
                                        key: k,
                                        value: Some(v),
                                    },
                                );
                                current.insert(k, (time, true));
                                if let Some(old) = live.insert(k, loc) {
                                    w.release(old);
                                }
                            }
                            Err(StoreError::NoSpace) => no_space += 1,
                            Err(e) => panic!("{what}: {e}"),
                        }
                    }
                    55..75 => {
                        let k = rng.random_range(0..KEYS);
                        let Some(&old) = live.get(&k) else { continue };
                        let seq = w.next_seq();
                        match w.append(tombstone(seq), &key(k), &[]) {
                            Ok(_) => {
                                time += 1;
                                history.insert(
                                    seq,
                                    Written {
                                        time,
                                        key: k,
                                        value: None,
                                    },
                                );
                                current.insert(k, (time, false));
                                live.remove(&k);
                                w.release(old);
                            }
                            Err(StoreError::NoSpace) => no_space += 1,
                            Err(e) => panic!("{what}: {e}"),
                        }
                    }
                    75..85 => {
                        w.flush().await.unwrap();
                    }
                    85..95 => {
                        w.sync().await.unwrap();
                        // Only a sync before the power cut made data durable.
                        if ctl.stats().dropped_writes == dropped_before {
                            durable.extend(current.iter().map(|(&k, &v)| (k, v)));
                        }
                        if rng.random_bool(0.5) {
                            reclaimed += w.reclaim().await.unwrap();
                        }
                    }
                    _ => {
                        // Reclaim with unsynced appends: it syncs first when
                        // releases are pending.
                        let syncs = w.stats().pending_releases > 0;
                        reclaimed += w.reclaim().await.unwrap();
                        if syncs && ctl.stats().dropped_writes == dropped_before {
                            durable.extend(current.iter().map(|(&k, &v)| (k, v)));
                        }
                    }
                }
            }
            drop(w);
            let pending = ctl.unsynced_writes();
            let spec = match (rng.random_range(0..3), pending.len()) {
                (0, n) if n > 0 => {
                    let keep = rng.random_range(0..n);
                    let len = pending[keep].1;
                    CrashSpec {
                        keep_writes: keep,
                        torn_bytes: rng.random_range(0..len / 512) * 512,
                    }
                }
                (1, n) => CrashSpec {
                    keep_writes: n,
                    torn_bytes: 0,
                },
                _ => CrashSpec::lose_unsynced(),
            };
            ctl.crash(spec);
        });
    }
    assert!(
        reclaimed > 20,
        "seed {seed}: only {reclaimed} blocks reclaimed"
    );
    assert!(no_space < 600, "seed {seed}: {no_space} appends refused");
}

/// Recovery delivers every key's versions in increasing mutation sequence
/// order, over two devices written by two writers (blocks alternate between
/// the devices), then by three writers after a reopen.
#[test]
fn recovery_delivers_versions_in_sequence_order() {
    let devs = [ram(24), ram(24)];
    let ctls: Vec<RamControl> = devs.iter().map(|d| d.control()).collect();
    const KEYS: u32 = 40;

    /// Opens the store and checks the delivery order; returns the last value
    /// delivered per key.
    fn reopen(ctls: &[RamControl]) -> (Store, Recovery, HashMap<u32, Vec<u8>>) {
        run(async {
            let mut last_seq: HashMap<Vec<u8>, u64> = HashMap::new();
            let mut last: HashMap<u32, Location> = HashMap::new();
            let mut index = RecoveredIndex::default();
            let (store, rec) = open_with(ctls, |r| {
                index.apply(r);
                if let Some(&prev) = last_seq.get(r.key) {
                    assert!(
                        r.meta.mutation_seq > prev,
                        "key {:?}: seq {} delivered after {prev}",
                        String::from_utf8_lossy(r.key),
                        r.meta.mutation_seq
                    );
                }
                last_seq.insert(r.key.to_vec(), r.meta.mutation_seq);
                let k: u32 = std::str::from_utf8(&r.key[4..]).unwrap().parse().unwrap();
                last.insert(k, r.location);
            })
            .await;
            // Each device's image by its index (the caller may pass them in any order).
            let mut images: Vec<Vec<u8>> = ctls.iter().map(|c| c.visible_image()).collect();
            images.sort_by_key(|img| {
                Superblock::decode(&img[..SUPERBLOCK_SLOT_BYTES])
                    .expect("superblock")
                    .device_index
            });
            let last: HashMap<u32, Vec<u8>> = last
                .into_iter()
                .map(|(k, loc)| {
                    let v = common::value_in(&images[usize::from(loc.device)], &store, &loc);
                    (k, v)
                })
                .collect();
            // The last version delivered is the winner.
            for (k, v) in &last {
                let e = index.get(&key(*k)).unwrap();
                assert_eq!(e.meta.mutation_seq, last_seq[&key(*k)]);
                assert_eq!(v.len(), 1500);
            }
            (store, rec, last)
        })
    }

    /// `workers` threads, each writing `versions` versions of its keys.
    fn write(store: &Store, after_seq: u64, workers: u32, versions: u32, run_id: u8) {
        let handles: Vec<_> = (0..workers)
            .map(|worker| {
                let store = store.clone();
                std::thread::spawn(move || {
                    run(async move {
                        let w = Writer::open(store, worker as u16, Durability::EverySec, after_seq)
                            .await
                            .unwrap();
                        for version in 0..versions {
                            for k in (0..KEYS).filter(|k| k % workers == worker) {
                                let mut v = vec![run_id; 1500];
                                v[1] = version as u8;
                                w.append(value(w.next_seq()), &key(k), &v).unwrap();
                            }
                            if version % 3 == 2 {
                                w.sync().await.unwrap();
                            }
                        }
                        w.sync().await.unwrap();
                    })
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }

    let (store, rec, last) = reopen(&ctls);
    assert_eq!(rec.records, 0);
    assert!(last.is_empty());
    write(&store, 0, 2, 8, 1);
    drop(store);
    for c in &ctls {
        c.crash(CrashSpec::lose_unsynced());
    }
    let (store, rec, last) = reopen(&[ctls[1].clone(), ctls[0].clone()]);
    assert_eq!(rec.records, u64::from(KEYS) * 8);
    assert!(rec.open_blocks.len() >= 2, "{rec:?}");
    assert_eq!(last.len(), KEYS as usize);
    assert!(last.values().all(|v| v[0] == 1 && v[1] == 7));
    write(&store, rec.max_mutation_seq, 3, 4, 2);
    drop(store);
    for c in &ctls {
        c.crash(CrashSpec::lose_unsynced());
    }
    let (_, rec, last) = reopen(&ctls);
    assert_eq!(rec.records, u64::from(KEYS) * 12);
    assert!(rec.open_blocks.len() >= 5, "{rec:?}");
    assert!(last.values().all(|v| v[0] == 2 && v[1] == 3));
}

/// Two writers on two threads reclaim the same dead blocks: each block is
/// freed once, and the free lists hold no block twice.
#[test]
fn concurrent_reclaimers_free_each_block_once() {
    let dev = ram(40);
    let store = run(async {
        let (store, _, _) = open(&dev.control()).await;
        let w = Writer::open(store.clone(), 0, Durability::EverySec, 0)
            .await
            .unwrap();
        let mut old: Option<Location> = None;
        for _ in 0..70 {
            let loc = w.append(value(w.next_seq()), b"k", &[5u8; 30_000]).unwrap();
            if let Some(o) = old.replace(loc) {
                w.release(o);
            }
        }
        w.sync().await.unwrap();
        store
    });
    let dead = store.stats().pending_reclaim_blocks;
    assert!(dead >= 30, "{:?}", store.stats());
    let handles: Vec<_> = (1..=2u16)
        .map(|worker| {
            let store = store.clone();
            std::thread::spawn(move || {
                run(async move {
                    let w = Writer::open(store, worker, Durability::EverySec, 1000)
                        .await
                        .unwrap();
                    w.reclaim().await.unwrap()
                })
            })
        })
        .collect();
    let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(total, dead);
    let stats = store.stats();
    assert_eq!(stats.reclaimed_blocks, dead);
    assert_eq!(stats.pending_reclaim_blocks, 0);
    let free = store.free_blocks();
    let mut seen = HashSet::new();
    while let Some(a) = store.alloc_block(9) {
        assert!(seen.insert(a.id), "block {:?} handed out twice", a.id);
    }
    assert_eq!(seen.len() as u64, free);
}

/// Overwrites through reclaim on an O_DIRECT data file; reclaimed blocks
/// have zero headers on the file, and everything reads back after reopening.
#[test]
fn reclaim_on_a_file_device() {
    let dir = temp_dir("space-file");
    let path = dir.join("data");
    let options = StoreOptions {
        block_size_bytes: 1 << 20,
        ..StoreOptions::default()
    };
    let mut rng = StdRng::seed_from_u64(3);
    let mut live: HashMap<u32, (Location, Vec<u8>)> = HashMap::new();
    run(async {
        let dev = FileDevice::open_or_create(&path, RESERVED_BYTES + 6 * (1 << 20))
            .await
            .unwrap();
        let (store, _) = Store::create_or_open(vec![AnyDevice::File(dev)], &options, |_| {})
            .await
            .unwrap();
        store.recovery_done();
        let w = Writer::open(store.clone(), 0, Durability::EverySec, 0)
            .await
            .unwrap();
        for i in 0..2500 {
            let k = rng.random_range(0..30u32);
            let v = vec![rng.random::<u8>(); 8192];
            let loc = w.append(value(w.next_seq()), &key(k), &v).unwrap();
            if let Some((old, _)) = live.insert(k, (loc, v)) {
                w.release(old);
            }
            if i % 100 == 99 {
                w.tick().await.unwrap();
            }
        }
        w.tick().await.unwrap();
        let stats = store.stats();
        assert!(stats.reclaimed_blocks >= 10, "{stats:?}");
        assert_eq!(
            stats.live_bytes,
            live.values()
                .map(|(l, _)| u64::from(l.len_bytes))
                .sum::<u64>()
        );
        for b in 0..store.block_count(0) as u32 {
            let id = BlockId {
                device: 0,
                block: b,
            };
            if store.block_seq(id) == 0 {
                let header = read(
                    &w.devices()[0],
                    store.block_offset_bytes(id),
                    BLOCK_HEADER_BYTES,
                )
                .await;
                assert!(
                    header.iter().all(|&x| x == 0),
                    "free block {b} has a header"
                );
            }
        }
    });
    run(async {
        let dev = FileDevice::open(&path).await.unwrap();
        let mut index = RecoveredIndex::default();
        let (store, rec) =
            Store::create_or_open(vec![AnyDevice::File(dev)], &options, |r| index.apply(r))
                .await
                .unwrap();
        assert!(rec.truncations.is_empty(), "{:?}", rec.truncations);
        let w = Writer::open(store, 0, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        assert_eq!(index.live().count(), live.len());
        for (k, (loc, v)) in &live {
            assert_eq!(index.get(&key(*k)).unwrap().location, *loc);
            assert_eq!(w.read(loc).await.unwrap().value(), v.as_slice());
        }
    });
}
