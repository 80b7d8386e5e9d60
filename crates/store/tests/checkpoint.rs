//! Store support for index checkpoints: `Store::sealed_blocks` lists exactly the blocks
//! whose records are durable for good, and `Store::open_with_checkpoint` skips the records
//! of the blocks a `CoveredSet` covers while leaving the store in the state the full scan
//! gives (tombstone flags, open blocks, sequences, live bytes once the caller adds them);
//! blocks reclaimed or reused since the checkpoint are scanned, never trusted.

mod common;

use std::collections::{HashMap, HashSet};

use common::run;
use common::small::{opts, ram, tombstone, value};
use skerry_store::checkpoint::CoveredSet;
use skerry_store::device::RamControl;
use skerry_store::{
    BlockId, Durability, Recovered, RecoveredIndex, Recovery, Store, StoreStats, Writer,
};

fn key(k: u32) -> Vec<u8> {
    format!("key-{k}").into_bytes()
}

async fn open_full(ctl: &RamControl) -> (Store, RecoveredIndex, Recovery) {
    let mut index = RecoveredIndex::default();
    let (store, rec) =
        Store::create_or_open(vec![ctl.device().into()], &opts(), |r| index.apply(r))
            .await
            .expect("open");
    (store, index, rec)
}

/// Live bytes and tombstone flag of every block, after `add_live` of `index`.
fn block_state(store: &Store, index: &RecoveredIndex, blocks: u32) -> Vec<(u64, bool)> {
    for (_, e) in index.live() {
        store.add_live(&e.location);
    }
    store.recovery_done();
    (0..blocks)
        .map(|b| {
            let id = BlockId {
                device: 0,
                block: b,
            };
            (store.block_live_bytes(id), store.block_has_tombstones(id))
        })
        .collect()
}

#[test]
fn open_with_checkpoint_skips_covered_blocks_and_matches_the_full_scan() {
    const BLOCKS: u32 = 40;
    let dev = ram(u64::from(BLOCKS));
    let ctl = dev.control();
    let v = vec![7u8; 10_000];
    let (snapshot, changed) = run(async {
        let (store, _, _) = open_full(&ctl).await;
        let w = Writer::open(store.clone(), 0, Durability::Always, 0)
            .await
            .unwrap();
        let mut locs = HashMap::new();
        for k in 0..40 {
            let loc = w.append(value(w.next_seq()), &key(k), &v).unwrap();
            locs.insert(k, loc);
        }
        for k in 0..3 {
            w.append(tombstone(w.next_seq()), &key(k), b"").unwrap();
            w.release(locs.remove(&k).unwrap());
        }
        w.sync().await.unwrap();
        // Open and not-yet-durable blocks are not listed; every listed block is sealed.
        let snapshot = store.sealed_blocks();
        assert!(snapshot.len() >= 4, "{snapshot:?}");
        let open_now = w.stats();
        assert!(open_now.blocks_opened as usize > snapshot.len());
        // After the checkpoint: overwrite and delete keys of the covered blocks, so some are
        // reclaimed (and may be reused), then more values.
        for k in 3..20 {
            let loc = w.append(value(w.next_seq()), &key(k), &v).unwrap();
            w.release(locs.insert(k, loc).unwrap());
        }
        for k in 20..26 {
            w.append(tombstone(w.next_seq()), &key(k), b"").unwrap();
            w.release(locs.remove(&k).unwrap());
        }
        w.sync().await.unwrap();
        assert!(w.reclaim().await.unwrap() > 0, "nothing reclaimed");
        for k in 100..110 {
            w.append(value(w.next_seq()), &key(k), &v).unwrap();
        }
        w.sync().await.unwrap();
        let changed: HashSet<BlockId> = snapshot
            .iter()
            .filter(|b| store.block_seq(b.id) != b.block_seq)
            .map(|b| b.id)
            .collect();
        assert!(!changed.is_empty(), "no covered block was reclaimed");
        (snapshot, changed)
    });

    let (full_store, full_index, full_rec) = run(open_full(&ctl));
    let full_state = block_state(&full_store, &full_index, BLOCKS);
    let full_stats: StoreStats = full_store.stats();
    drop(full_store);

    let mut set = CoveredSet::new();
    set.add_table(&snapshot);
    let mut delivered_blocks = HashSet::new();
    let mut skipped = HashSet::new();
    let mut covered = |id: BlockId, h: &skerry_store::format::BlockHeader| {
        let r = set.covers(id, h);
        if r.is_some() {
            skipped.insert(id);
        }
        r
    };
    let (ck_store, ck_rec) = run(Store::open_with_checkpoint(
        vec![ctl.device().into()],
        &opts(),
        &mut covered,
        |item| {
            if let Recovered::Record(r) = item {
                delivered_blocks.insert(r.location.block_id());
            }
        },
    ))
    .unwrap();
    // Exactly the unchanged covered blocks are skipped; reclaimed or reused ones are not.
    let expect: HashSet<BlockId> = snapshot
        .iter()
        .map(|b| b.id)
        .filter(|id| !changed.contains(id))
        .collect();
    assert_eq!(skipped, expect);
    assert!(skipped.is_disjoint(&delivered_blocks));
    assert_eq!(ck_rec.covered_blocks, expect.len() as u64);
    assert_eq!(
        ck_rec.covered_blocks + ck_rec.data_blocks_scanned,
        full_rec.data_blocks_scanned
    );
    assert!(ck_rec.records < full_rec.records);
    assert_eq!(ck_rec.max_mutation_seq, full_rec.max_mutation_seq);
    assert_eq!(ck_rec.max_block_seq, full_rec.max_block_seq);
    assert_eq!(ck_rec.open_blocks, full_rec.open_blocks);
    assert_eq!(ck_rec.tombstone_blocks, full_rec.tombstone_blocks);
    // With the same index (the caller's job), the same live bytes and tombstone flags.
    let ck_state = block_state(&ck_store, &full_index, BLOCKS);
    assert_eq!(ck_state, full_state);
    assert_eq!(ck_store.stats(), full_stats);
}

#[test]
fn recovered_open_blocks_are_not_sealed_blocks() {
    let dev = ram(8);
    let ctl = dev.control();
    run(async {
        let (store, _, _) = open_full(&ctl).await;
        let w = Writer::open(store.clone(), 0, Durability::Always, 0)
            .await
            .unwrap();
        w.append(value(w.next_seq()), &key(1), b"v").unwrap();
        w.sync().await.unwrap();
        assert!(
            store.sealed_blocks().is_empty(),
            "an open block is not sealed"
        );
        drop(w);
        // Recovered: the open block stays out until a writer adopts and seals it.
        let (store, _, rec) = open_full(&ctl).await;
        assert_eq!(rec.open_blocks.len(), 1);
        assert!(store.sealed_blocks().is_empty());
    });
}
