//! Adoption of recovered open blocks ([`Writer::adopt`]): appends continue in
//! the block the previous run was appending to, stale records past its torn
//! point never come back, a crash at any write of the adoption is harmless,
//! and a full device takes deletes again after a restart.

mod common;

use std::collections::HashMap;

use common::run;
use common::small::{opts, ram, tombstone, value, BLOCK_BYTES};
use skerry_store::device::{CrashSpec, RamControl, RamDevice, SECTOR_BYTES};
use skerry_store::format::{RecordKind, BLOCK_HEADER_BYTES, RESERVED_BYTES};
use skerry_store::{
    BlockId, Durability, Location, RecoveredIndex, Recovery, Store, StoreError, Writer,
};

fn val(tag: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| tag ^ (i as u8)).collect()
}

/// What one recovery delivered.
struct Opened {
    store: Store,
    index: RecoveredIndex,
    rec: Recovery,
    /// Every valid record in delivery order: (key, mutation sequence, value).
    delivered: Vec<(Vec<u8>, u64, Vec<u8>)>,
}

async fn open(ctl: &RamControl) -> Opened {
    let mut index = RecoveredIndex::default();
    let mut delivered = Vec::new();
    let (store, rec) = Store::create_or_open(vec![ctl.device().into()], &opts(), |r| {
        index.apply(r);
        delivered.push((r.key.to_vec(), r.meta.mutation_seq, r.location));
    })
    .await
    .expect("open");
    let image = ctl.visible_image();
    let delivered = delivered
        .into_iter()
        .map(|(k, seq, loc)| (k, seq, common::value_in(&image, &store, &loc)))
        .collect();
    Opened {
        store,
        index,
        rec,
        delivered,
    }
}

/// Counts every live record of `index`, then ends recovery.
fn account(store: &Store, index: &RecoveredIndex) {
    for (_, e) in index.live() {
        store.add_live(&e.location);
    }
    store.recovery_done();
}

/// Each key's delivered sequences increase (recovery's order).
fn assert_increasing_per_key(delivered: &[(Vec<u8>, u64, Vec<u8>)], what: &str) {
    let mut last: HashMap<&[u8], u64> = HashMap::new();
    for (k, seq, _) in delivered {
        if let Some(&prev) = last.get(k.as_slice()) {
            assert!(
                *seq > prev,
                "{what}: key {} delivered at seq {seq} after {prev}",
                String::from_utf8_lossy(k)
            );
        }
        last.insert(k, *seq);
    }
}

fn block_area<'a>(image: &'a [u8], store: &Store, id: BlockId) -> &'a [u8] {
    let at = store.block_offset_bytes(id) as usize;
    &image[at..at + BLOCK_BYTES as usize]
}

/// Adopting after a clean stop: appends continue in the same block at the
/// recovered end, old and new records all recover, no block is leaked.
#[test]
fn adopt_after_a_clean_stop_continues_the_block() {
    let dev = ram(8);
    let ctl = dev.control();
    let mut locs = Vec::new();
    run(async {
        let o = open(&ctl).await;
        let w = Writer::open(o.store.clone(), 0, Durability::Always, 0)
            .await
            .unwrap();
        for i in 0..5u8 {
            let k = format!("a{i}");
            locs.push(
                w.append(value(w.next_seq()), k.as_bytes(), &val(i, 1000))
                    .unwrap(),
            );
        }
        w.sync().await.unwrap();
    });
    ctl.crash(CrashSpec::lose_unsynced()); // nothing unsynced: a clean stop
    let id = locs[0].block_id();
    let end = locs[4].offset_bytes + locs[4].len_bytes;
    run(async {
        let o = open(&ctl).await;
        assert_eq!(o.rec.open_blocks.len(), 1, "{:?}", o.rec.open_blocks);
        let b = o.rec.open_blocks[0];
        assert_eq!(b.id, id);
        assert_eq!(b.owner_worker, 0);
        assert_eq!(b.valid_end_bytes, end);
        assert_eq!((b.first_mutation_seq, b.last_mutation_seq), (1, 5));
        assert!(!b.has_tombstones);
        account(&o.store, &o.index);
        let used = o.store.stats().used_blocks;
        assert!(o.store.is_adoptable(id));
        let w = Writer::open(
            o.store.clone(),
            0,
            Durability::Always,
            o.rec.max_mutation_seq,
        )
        .await
        .unwrap();
        assert!(w.adopt(id).await.unwrap());
        assert!(!o.store.is_adoptable(id));
        assert_eq!(w.stats().adopted_blocks, 1);
        // Recovered records are still readable, from the device (not the
        // adopted image: damage at rest is reported as before).
        assert!(w.staged(&locs[2]).is_none());
        let r = w.read(&locs[2]).await.unwrap();
        assert_eq!(r.value(), val(2, 1000).as_slice());
        let first = w.append(value(w.next_seq()), b"b0", &val(10, 700)).unwrap();
        assert_eq!(first.block_id(), id);
        assert_eq!(
            first.offset_bytes, end,
            "appends continue at the recovered end"
        );
        assert!(w.staged(&first).is_some());
        for i in 1..5u8 {
            let k = format!("b{i}");
            let l = w
                .append(value(w.next_seq()), k.as_bytes(), &val(10 + i, 700))
                .unwrap();
            assert_eq!(l.block_id(), id);
        }
        // Overwrite a0, delete a1.
        w.append(value(w.next_seq()), b"a0", b"new a0").unwrap();
        w.release(locs[0]);
        w.append(tombstone(w.next_seq()), b"a1", &[]).unwrap();
        w.release(locs[1]);
        w.sync().await.unwrap();
        assert_eq!(o.store.stats().used_blocks, used, "no block leaked");
        assert!(o.store.block_has_tombstones(id));
        // Open in its writer: never reclaimed, even by another writer.
        let other = Writer::open(o.store.clone(), 1, Durability::Always, 0)
            .await
            .unwrap();
        assert_eq!(other.reclaim().await.unwrap(), 0);
        assert_ne!(o.store.block_seq(id), 0);
    });
    ctl.crash(CrashSpec::lose_unsynced());
    run(async {
        let o = open(&ctl).await;
        assert_eq!(o.rec.records, 5 + 7);
        assert_eq!(o.rec.open_blocks.len(), 1);
        assert_eq!(o.rec.open_blocks[0].id, id);
        assert!(o.rec.open_blocks[0].has_tombstones);
        assert!(o.rec.truncations.is_empty(), "{:?}", o.rec.truncations);
        assert_increasing_per_key(&o.delivered, "after adoption");
        let w = Writer::open(
            o.store.clone(),
            0,
            Durability::Always,
            o.rec.max_mutation_seq,
        )
        .await
        .unwrap();
        let get = |k: &str| o.index.get(k.as_bytes()).map(|e| e.location);
        assert_eq!(
            w.read(&get("a0").unwrap()).await.unwrap().value(),
            b"new a0"
        );
        assert!(get("a1").is_none(), "a1 was deleted");
        for i in 2..5u8 {
            let l = get(&format!("a{i}")).unwrap();
            assert_eq!(l, locs[i as usize]);
            assert_eq!(w.read(&l).await.unwrap().value(), val(i, 1000).as_slice());
        }
        for i in 0..5u8 {
            let l = get(&format!("b{i}")).unwrap();
            assert_eq!(l.block_id(), id);
            assert_eq!(
                w.read(&l).await.unwrap().value(),
                val(10 + i, 700).as_slice()
            );
        }
    });
}

/// How the record at the torn point is lost.
#[derive(Clone, Copy, Debug)]
enum Lost {
    /// Never written (zero).
    Zeroed,
    /// Garbage whose claimed length is out of bounds (the scan cannot skip it).
    BadLength,
}

/// Writes records `a`, `b`, then `stale-0..` as the block's tail, syncs, then
/// destroys the third record (`stale-0`) on the durable image, so recovery's
/// valid prefix ends after `b` while `stale-1..` are still durable with valid
/// CRCs. Returns the device, the block, the valid end and the lost record's
/// length.
fn device_with_a_stale_tail(lost_how: Lost) -> (RamDevice, BlockId, u32, u32) {
    let dev = ram(6);
    let ctl = dev.control();
    let locs = run(async {
        let o = open(&ctl).await;
        let w = Writer::open(o.store.clone(), 0, Durability::Always, 0)
            .await
            .unwrap();
        let mut locs = Vec::new();
        locs.push(w.append(value(w.next_seq()), b"a", &val(1, 1500)).unwrap());
        locs.push(w.append(value(w.next_seq()), b"b", &val(2, 1500)).unwrap());
        for i in 0..4u8 {
            let k = format!("stale-{i}");
            locs.push(
                w.append(value(w.next_seq()), k.as_bytes(), &val(20 + i, 1497))
                    .unwrap(),
            );
        }
        w.sync().await.unwrap();
        locs
    });
    let id = locs[0].block_id();
    let lost = locs[2];
    // The next record starts on a sector boundary: appends ending there do
    // not rewrite any of its bytes.
    assert_eq!(
        (lost.offset_bytes + lost.len_bytes) % SECTOR_BYTES as u32,
        0,
        "{locs:?}"
    );
    let at = (RESERVED_BYTES + u64::from(id.block) * BLOCK_BYTES + u64::from(lost.offset_bytes))
        as usize;
    let mut image = ctl.durable_image();
    match lost_how {
        Lost::Zeroed => image[at..at + lost.len_bytes as usize].fill(0),
        // key_len (record bytes 24..28) over its limit; the CRC fails too.
        Lost::BadLength => image[at + 24..at + 28].copy_from_slice(&u32::MAX.to_le_bytes()),
    }
    (
        RamDevice::from_image(image, 512),
        id,
        lost.offset_bytes,
        lost.len_bytes,
    )
}

/// Records beyond the torn point of an adopted block (durable out of order,
/// valid CRCs) never come back, even when new records end exactly where they
/// start.
#[test]
fn stale_records_past_the_torn_point_never_come_back() {
    for lost in [Lost::Zeroed, Lost::BadLength] {
        stale_records_stay_gone(lost);
    }
}

fn stale_records_stay_gone(lost: Lost) {
    let (dev, id, valid_end, lost_len) = device_with_a_stale_tail(lost);
    let ctl = dev.control();
    run(async {
        let o = open(&ctl).await;
        assert_eq!(o.rec.records, 2, "recovery stops at the lost record");
        assert!(o.index.get(b"stale-1").is_none());
        assert_eq!(o.rec.open_blocks[0].valid_end_bytes, valid_end);
        account(&o.store, &o.index);
        let w = Writer::open(
            o.store.clone(),
            0,
            Durability::Always,
            o.rec.max_mutation_seq,
        )
        .await
        .unwrap();
        assert!(w.adopt(id).await.unwrap());
        // The whole tail is durably zero before anything is appended.
        let image = ctl.durable_image();
        let area = block_area(&image, &o.store, id);
        assert!(area[valid_end as usize..].iter().all(|&b| b == 0));
        // New records exactly as long as the lost one: the next record header
        // would be stale-1's if the tail had not been zeroed.
        let half = lost_len as usize / 2;
        let v1 = val(7, half - 32 - 1);
        let l1 = w.append(value(w.next_seq()), b"n", &v1).unwrap();
        let rest = lost_len as usize - l1.len_bytes as usize;
        let v2 = val(8, rest - 32 - 2);
        let l2 = w.append(value(w.next_seq()), b"n2", &v2).unwrap();
        assert_eq!(l1.offset_bytes, valid_end);
        assert_eq!(
            l2.offset_bytes + l2.len_bytes,
            valid_end + lost_len,
            "the new records end where stale-1 started"
        );
        w.sync().await.unwrap();
    });
    ctl.crash(CrashSpec::lose_unsynced());
    run(async {
        let o = open(&ctl).await;
        assert_eq!(
            o.rec.records,
            4,
            "{:?}",
            o.delivered.iter().map(|d| &d.0).collect::<Vec<_>>()
        );
        for (k, _, _) in &o.delivered {
            assert!(!k.starts_with(b"stale"), "stale record came back");
        }
        assert!(o.index.get(b"n").is_some() && o.index.get(b"n2").is_some());
    });
}

/// The scenario of the crash test: adopt the block with a stale tail, then
/// appends and syncs. Returns what was acknowledged durable: key → (seq,
/// value), plus every record written by sequence.
struct Acked {
    durable: HashMap<Vec<u8>, (u64, Option<Vec<u8>>)>,
    written: HashMap<u64, (Vec<u8>, Option<Vec<u8>>)>,
}

async fn adopt_and_append(ctl: &RamControl, o: &Opened, id: BlockId, round: u8) -> Acked {
    let mut acked = Acked {
        durable: HashMap::new(),
        written: HashMap::new(),
    };
    let w = Writer::open(
        o.store.clone(),
        0,
        Durability::Always,
        o.rec.max_mutation_seq,
    )
    .await
    .unwrap();
    // The block is adoptable whatever was lost before: its header survives.
    assert!(w.adopt(id).await.unwrap(), "round {round}: adopt");
    let mut current: HashMap<Vec<u8>, (u64, Option<Vec<u8>>)> = HashMap::new();
    let mut live: HashMap<Vec<u8>, Location> = o
        .index
        .live()
        .map(|(k, e)| (k.to_vec(), e.location))
        .collect();
    for i in 0..8u32 {
        let k = format!("k{}", i % 4).into_bytes();
        let seq = w.next_seq();
        // The first record is as long as the lost one: it ends where the
        // stale records start.
        let len = if i == 0 { 1502 } else { 900 + 200 * i as usize };
        let v = (i % 3 != 2).then(|| val(round.wrapping_mul(16) ^ i as u8, len));
        match &v {
            Some(v) => {
                let l = w.append(value(seq), &k, v).unwrap();
                if let Some(old) = live.insert(k.clone(), l) {
                    w.release(old);
                }
            }
            None => {
                w.append(tombstone(seq), &k, &[]).unwrap();
                if let Some(old) = live.remove(&k) {
                    w.release(old);
                }
            }
        }
        acked.written.insert(seq, (k.clone(), v.clone()));
        current.insert(k, (seq, v));
        if i % 2 == 0 {
            w.sync().await.unwrap();
            if ctl.stats().dropped_writes == 0 {
                acked.durable = current.clone();
            }
        }
    }
    acked
}

/// Checks a recovery after a crash during [`adopt_and_append`].
fn check_recovered(o: &Opened, acked: &Acked, base: &HashMap<Vec<u8>, Vec<u8>>, what: &str) {
    assert_increasing_per_key(&o.delivered, what);
    for (k, seq, v) in &o.delivered {
        assert!(!k.starts_with(b"stale"), "{what}: stale record came back");
        if let Some((wk, wv)) = acked.written.get(seq) {
            assert_eq!(wk, k, "{what}: seq {seq}");
            assert_eq!(wv.as_deref().unwrap_or_default(), v.as_slice(), "{what}");
        } else {
            assert_eq!(base.get(k), Some(v), "{what}: unknown record seq {seq}");
        }
    }
    for (k, (seq, _)) in &acked.durable {
        let e = o
            .index
            .entries
            .get(k)
            .unwrap_or_else(|| panic!("{what}: acknowledged key {k:?} lost"));
        assert!(
            e.meta.mutation_seq >= *seq,
            "{what}: key {k:?} older than acknowledged"
        );
    }
    for k in base.keys() {
        assert!(
            o.index.entries.contains_key(k),
            "{what}: old key {k:?} lost"
        );
    }
}

/// A crash after every device write of an adoption and the appends that
/// follow (unsynced writes lost, or all kept but the last, torn): every
/// acknowledged record is there, no stale record ever, each key's versions in
/// order; the block is adopted again after the crash and takes more records.
#[test]
fn crash_at_every_write_during_adopt_and_appends() {
    let (dev, id, _, _) = device_with_a_stale_tail(Lost::BadLength);
    let base_image = dev.control().durable_image();
    let base: HashMap<Vec<u8>, Vec<u8>> =
        [(b"a".to_vec(), val(1, 1500)), (b"b".to_vec(), val(2, 1500))]
            .into_iter()
            .collect();
    // How many writes the scenario issues without a crash.
    let total = {
        let ctl = RamDevice::from_image(base_image.clone(), 512).control();
        run(async {
            let o = open(&ctl).await;
            account(&o.store, &o.index);
            let before = ctl.stats().writes;
            adopt_and_append(&ctl, &o, id, 1).await;
            ctl.stats().writes - before
        })
    };
    // Two zeroing writes (the slot at the torn point, then the rest), then
    // one write per sync.
    assert!(total >= 6, "the scenario issues {total} writes");

    let mut cases = 0;
    for k in 0..=total {
        for torn in [None, Some(0usize), Some(SECTOR_BYTES)] {
            let ctl = RamDevice::from_image(base_image.clone(), 512).control();
            let what = format!("crash after write {k}, torn {torn:?}");
            let acked = run(async {
                let o = open(&ctl).await;
                account(&o.store, &o.index);
                ctl.set_crash_point(k);
                adopt_and_append(&ctl, &o, id, 1).await
            });
            let pending = ctl.unsynced_writes();
            let spec = match torn {
                None => CrashSpec::lose_unsynced(),
                Some(t) => match pending.last() {
                    Some(&(_, len)) if t < len => CrashSpec::torn_last(pending.len(), t),
                    _ => continue,
                },
            };
            ctl.crash(spec);
            cases += 1;
            run(async {
                let o = open(&ctl).await;
                check_recovered(&o, &acked, &base, &what);
                // Adopt again, write more, recover once more.
                account(&o.store, &o.index);
                let acked2 = adopt_and_append(&ctl, &o, id, 2).await;
                drop(o);
                ctl.crash(CrashSpec::lose_unsynced());
                let o = open(&ctl).await;
                let what2 = format!("{what}, then a second adoption");
                assert_increasing_per_key(&o.delivered, &what2);
                for (k, (seq, v)) in &acked2.durable {
                    let e = o.index.entries.get(k).expect("acknowledged key");
                    assert_eq!(e.meta.mutation_seq, *seq, "{what2}");
                    assert_eq!(e.meta.kind == RecordKind::Value, v.is_some(), "{what2}");
                }
                for (k, _, _) in &o.delivered {
                    assert!(!k.starts_with(b"stale"), "{what2}: stale record came back");
                }
            });
        }
    }
    assert!(cases > total as usize, "{cases} crash cases");
}

/// A full device: tombstones went into the reserve block; after a restart no
/// block is free, so only adopting the recovered open block lets deletes (and
/// then values, once space is reclaimed) in again.
#[test]
fn full_device_takes_deletes_after_a_restart_through_adoption() {
    let dev = ram(6);
    let ctl = dev.control();
    let mut live: Vec<(Vec<u8>, Location)> = Vec::new();
    run(async {
        let o = open(&ctl).await;
        let w = Writer::open(o.store.clone(), 0, Durability::Always, 0)
            .await
            .unwrap();
        for i in 0.. {
            let k = format!("key-{i}").into_bytes();
            match w.append(value(w.next_seq()), &k, &val(i as u8, 3000)) {
                Ok(l) => live.push((k, l)),
                Err(StoreError::NoSpace) => break,
                Err(e) => panic!("{e}"),
            }
        }
        // Deletes until one went to the reserve block.
        while w.stats().reserve_uses == 0 {
            let (k, old) = live.remove(0);
            w.append(tombstone(w.next_seq()), &k, &[]).unwrap();
            w.release(old);
        }
        w.sync().await.unwrap();
        assert_eq!(o.store.stats().free_blocks, 0);
    });
    ctl.crash(CrashSpec::lose_unsynced());
    let mut live2 = Vec::new();
    run(async {
        let o = open(&ctl).await;
        assert_eq!(o.index.live().count(), live.len());
        account(&o.store, &o.index);
        assert_eq!(
            o.store.stats().free_blocks,
            0,
            "still full after the restart"
        );
        assert_eq!(o.rec.open_blocks.len(), 1, "{:?}", o.rec.open_blocks);
        let open_block = o.rec.open_blocks[0];
        assert!(open_block.has_tombstones);
        let w = Writer::open(
            o.store.clone(),
            0,
            Durability::Always,
            o.rec.max_mutation_seq,
        )
        .await
        .unwrap();
        // Without adoption no delete fits anywhere.
        let (k, old) = live.remove(0);
        assert!(matches!(
            w.append(tombstone(w.next_seq()), &k, &[]),
            Err(StoreError::NoSpace)
        ));
        assert!(w.adopt(open_block.id).await.unwrap());
        let l = w.append(tombstone(w.next_seq()), &k, &[]).unwrap();
        assert_eq!(l.block_id(), open_block.id);
        assert_eq!(l.offset_bytes, open_block.valid_end_bytes);
        w.release(old);
        // A value does not take the room kept for deletes (no reserve).
        assert!(matches!(
            w.append(value(w.next_seq()), b"v", b"x"),
            Err(StoreError::NoSpace)
        ));
        // Delete every key: whole blocks die and are reclaimed; then values
        // are taken again.
        for (k, old) in live.drain(..) {
            w.append(tombstone(w.next_seq()), &k, &[]).unwrap();
            w.release(old);
        }
        w.sync().await.unwrap();
        assert!(w.reclaim().await.unwrap() > 0);
        for i in 0..8u8 {
            let k = format!("new-{i}").into_bytes();
            live2.push((
                k.clone(),
                w.append(value(w.next_seq()), &k, &val(i, 3000)).unwrap(),
            ));
        }
        w.sync().await.unwrap();
    });
    ctl.crash(CrashSpec::lose_unsynced());
    run(async {
        let o = open(&ctl).await;
        assert_increasing_per_key(&o.delivered, "after the deletes");
        let keys: Vec<_> = o.index.live().map(|(k, _)| k.to_vec()).collect();
        assert_eq!(keys.len(), live2.len(), "only the new keys: {keys:?}");
        for (k, l) in &live2 {
            assert_eq!(o.index.get(k).unwrap().location, *l);
        }
    });
}

/// Two writers each leave an open block.
fn two_open_blocks() -> (RamDevice, [Location; 2]) {
    let dev = ram(8);
    let ctl = dev.control();
    let locs = run(async {
        let o = open(&ctl).await;
        let w0 = Writer::open(o.store.clone(), 0, Durability::Always, 0)
            .await
            .unwrap();
        let w1 = Writer::open(o.store.clone(), 1, Durability::Always, 0)
            .await
            .unwrap();
        let l0 = w0.append(value(w0.next_seq()), b"w0", b"zero").unwrap();
        let l1 = w1.append(value(w1.next_seq()), b"w1", b"one").unwrap();
        w0.sync().await.unwrap();
        w1.sync().await.unwrap();
        [l0, l1]
    });
    (dev, locs)
}

/// Adoption is refused for blocks that are not recovered open blocks, twice,
/// and by a writer that already has an open block (the block then stays
/// adoptable).
#[test]
fn adopt_refuses_unknown_twice_and_when_a_block_is_open() {
    let (dev, [l0, l1]) = two_open_blocks();
    let ctl = dev.control();
    run(async {
        let o = open(&ctl).await;
        assert_eq!(o.rec.open_blocks.len(), 2);
        account(&o.store, &o.index);
        let (b0, b1) = (l0.block_id(), l1.block_id());
        let w0 = Writer::open(
            o.store.clone(),
            0,
            Durability::Always,
            o.rec.max_mutation_seq,
        )
        .await
        .unwrap();
        let free = (0..8u32)
            .map(|block| BlockId { device: 0, block })
            .find(|&b| o.store.block_seq(b) == 0)
            .unwrap();
        assert!(!w0.adopt(free).await.unwrap(), "a free block");
        assert!(!w0
            .adopt(BlockId {
                device: 0,
                block: 1000
            })
            .await
            .unwrap());
        assert!(!w0
            .adopt(BlockId {
                device: 3,
                block: 0
            })
            .await
            .unwrap());
        assert!(w0.adopt(b0).await.unwrap());
        assert!(!w0.adopt(b0).await.unwrap(), "twice");
        assert!(!w0.adopt(b1).await.unwrap(), "w0 already has an open block");
        assert!(
            o.store.is_adoptable(b1),
            "a refused adoption changes nothing"
        );
        let w1 = Writer::open(
            o.store.clone(),
            1,
            Durability::Always,
            o.rec.max_mutation_seq,
        )
        .await
        .unwrap();
        assert!(!w1.adopt(b0).await.unwrap(), "adopted by another writer");
        // A writer that appended first has an open block.
        let w2 = Writer::open(
            o.store.clone(),
            2,
            Durability::Always,
            o.rec.max_mutation_seq,
        )
        .await
        .unwrap();
        w2.append(value(w2.next_seq()), b"w2", b"two").unwrap();
        assert!(!w2.adopt(b1).await.unwrap());
        assert!(w1.adopt(b1).await.unwrap());
        assert_eq!(w0.stats().adopted_blocks, 1);
    });
}

/// A recovered open block that is dead is either adopted or reclaimed, never
/// both, when a writer adopts it while another reclaims on another thread.
#[test]
fn adopt_and_reclaim_race_for_a_dead_block() {
    let (dev, [l0, _]) = two_open_blocks();
    let image = dev.control().durable_image();
    let (mut adopted, mut reclaimed) = (0, 0);
    for _ in 0..40 {
        let ctl = RamDevice::from_image(image.clone(), 512).control();
        let o = run(open(&ctl));
        // Only w1's record is kept: w0's block (the older one) is dead.
        let e = o.index.get(b"w1").unwrap();
        o.store.add_live(&e.location);
        o.store.recovery_done();
        let b0 = l0.block_id();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let (s1, s2) = (o.store.clone(), o.store.clone());
        let (bar1, bar2) = (barrier.clone(), barrier);
        let max = o.rec.max_mutation_seq;
        let t1 = std::thread::spawn(move || {
            run(async move {
                let w = Writer::open(s1, 0, Durability::Always, max).await.unwrap();
                bar1.wait();
                let ok = w.adopt(b0).await.unwrap();
                if ok {
                    w.append(value(w.next_seq()), b"w0", b"again").unwrap();
                    w.sync().await.unwrap();
                }
                ok
            })
        });
        let t2 = std::thread::spawn(move || {
            run(async move {
                let w = Writer::open(s2, 1, Durability::Always, max).await.unwrap();
                bar2.wait();
                w.reclaim().await.unwrap()
            })
        });
        let ok = t1.join().unwrap();
        let n = t2.join().unwrap();
        if ok {
            adopted += 1;
            assert_eq!(n, 0, "an adopted block was reclaimed");
            assert_ne!(o.store.block_seq(b0), 0);
        } else {
            reclaimed += 1;
            assert_eq!(n, 1);
        }
        drop(o);
        ctl.crash(CrashSpec::lose_unsynced());
        let o = run(open(&ctl));
        match ok {
            true => assert!(o.index.get(b"w0").is_some()),
            false => assert!(o.index.get(b"w0").is_none()),
        }
        assert!(o.index.get(b"w1").is_some());
    }
    eprintln!("adopted {adopted}, reclaimed {reclaimed} of 40");
}

/// An empty recovered open block (its header durable, its records lost) is
/// adoptable too and takes records from its start.
#[test]
fn an_empty_open_block_is_adopted_from_its_start() {
    let dev = ram(6);
    let ctl = dev.control();
    let id = run(async {
        let o = open(&ctl).await;
        let w = Writer::open(o.store.clone(), 0, Durability::Always, 0)
            .await
            .unwrap();
        let l = w.append(value(w.next_seq()), b"x", &val(3, 600)).unwrap();
        w.sync().await.unwrap();
        l.block_id()
    });
    let mut image = ctl.durable_image();
    let at = (RESERVED_BYTES + u64::from(id.block) * BLOCK_BYTES) as usize + BLOCK_HEADER_BYTES;
    image[at..at + 1024].fill(0);
    let ctl = RamDevice::from_image(image, 512).control();
    run(async {
        let o = open(&ctl).await;
        assert_eq!(o.rec.records, 0);
        let b = o.rec.open_blocks[0];
        assert_eq!((b.id, b.valid_end_bytes), (id, BLOCK_HEADER_BYTES as u32));
        assert_eq!((b.first_mutation_seq, b.last_mutation_seq), (0, 0));
        account(&o.store, &o.index);
        let w = Writer::open(
            o.store.clone(),
            0,
            Durability::Always,
            o.rec.max_mutation_seq,
        )
        .await
        .unwrap();
        assert!(w.adopt(id).await.unwrap());
        let l = w.append(value(w.next_seq()), b"y", b"why").unwrap();
        assert_eq!(
            (l.block_id(), l.offset_bytes),
            (id, BLOCK_HEADER_BYTES as u32)
        );
        w.sync().await.unwrap();
    });
    ctl.crash(CrashSpec::lose_unsynced());
    run(async {
        let o = open(&ctl).await;
        assert_eq!(o.rec.records, 1);
        assert!(o.index.get(b"y").is_some());
    });
}

/// An adopted block fills up, is sealed (its header gets the sequence range of
/// old and new records) and is reclaimed like any other once dead.
#[test]
fn an_adopted_block_is_sealed_and_reclaimed_once_dead() {
    let dev = ram(8);
    let ctl = dev.control();
    let old = run(async {
        let o = open(&ctl).await;
        let w = Writer::open(o.store.clone(), 0, Durability::Always, 0)
            .await
            .unwrap();
        let l = w
            .append(value(w.next_seq()), b"k", &val(1, 20_000))
            .unwrap();
        w.sync().await.unwrap();
        l
    });
    let id = old.block_id();
    run(async {
        let o = open(&ctl).await;
        account(&o.store, &o.index);
        let w = Writer::open(
            o.store.clone(),
            0,
            Durability::Always,
            o.rec.max_mutation_seq,
        )
        .await
        .unwrap();
        assert!(w.adopt(id).await.unwrap());
        let mut prev = old;
        // Overwrites of k: the third one does not fit and seals the block.
        for i in 2..6u8 {
            let l = w
                .append(value(w.next_seq()), b"k", &val(i, 20_000))
                .unwrap();
            w.release(prev);
            prev = l;
        }
        assert_ne!(prev.block_id(), id);
        w.sync().await.unwrap();
        assert_eq!(o.store.block_live_bytes(id), 0);
        // Filler so that the adopted block is not the newest durable header.
        w.append(value(w.next_seq()), b"f", &val(9, 50_000))
            .unwrap();
        w.sync().await.unwrap();
        assert!(w.reclaim().await.unwrap() >= 1);
        assert_eq!(
            o.store.block_seq(id),
            0,
            "the dead adopted block was reclaimed"
        );
    });
    ctl.crash(CrashSpec::lose_unsynced());
    run(async {
        let o = open(&ctl).await;
        assert_increasing_per_key(&o.delivered, "after reclaim");
        assert_eq!(o.index.get(b"k").map(|e| e.meta.mutation_seq), Some(5));
        assert!(o.rec.open_blocks.iter().all(|b| b.id != id));
    });
}

/// Damaged records are reported, not adopted over: recovery's view and the
/// adopted image agree (a block that changed since recovery is refused).
#[test]
fn a_block_changed_since_recovery_is_not_adopted() {
    let dev = ram(6);
    let ctl = dev.control();
    let l = run(async {
        let o = open(&ctl).await;
        let w = Writer::open(o.store.clone(), 0, Durability::Always, 0)
            .await
            .unwrap();
        let l = w.append(value(w.next_seq()), b"x", &val(3, 600)).unwrap();
        w.sync().await.unwrap();
        l
    });
    run(async {
        let o = open(&ctl).await;
        account(&o.store, &o.index);
        // The record is damaged after recovery read it.
        let at = RESERVED_BYTES + u64::from(l.block) * BLOCK_BYTES + u64::from(l.offset_bytes) + 40;
        ctl.flip_bit(at, 1);
        let w = Writer::open(
            o.store.clone(),
            0,
            Durability::Always,
            o.rec.max_mutation_seq,
        )
        .await
        .unwrap();
        assert!(!w.adopt(l.block_id()).await.unwrap());
        assert!(o.store.is_adoptable(l.block_id()), "given back");
    });
}
