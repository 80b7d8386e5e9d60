//! Block summaries (see `skerry_store::format::summary`): recovery reads a sealed block's
//! summary instead of the block and delivers exactly what a scan of the block delivers; a
//! damaged summary falls back to the scan; blocks of small records keep none; a crash
//! between a sealed block's records and its sealed header leaves a block that scans cleanly,
//! and once adopted and sealed it has a summary of all its records.

mod common;

use std::collections::HashMap;

use common::run;
use common::small::{opts, ram, BLOCK_BYTES};
use rand::{Rng, SeedableRng};
use skerry_store::device::{CrashSpec, RamControl};
use skerry_store::format::{
    BlockHeader, BlockState, RecordKind, RecordMeta, RECORD_FLAG_JOIN, RESERVED_BYTES,
};
use skerry_store::{Durability, Location, Recovery, Store, Writer};

/// One delivered record: key, header fields, location.
type Delivered = (Vec<u8>, RecordMeta, Location);

async fn open(ctl: &RamControl) -> (Store, Vec<Delivered>, Recovery) {
    let mut out = Vec::new();
    let (store, rec) = Store::create_or_open(vec![ctl.device().into()], &opts(), |r| {
        out.push((r.key.to_vec(), r.meta, r.location));
    })
    .await
    .expect("open");
    store.recovery_done();
    (store, out, rec)
}

fn meta(kind: RecordKind, flags: u16, seq: u64, value_type: u8, expiry_ms: i64) -> RecordMeta {
    RecordMeta {
        kind,
        value_type,
        flags,
        mutation_seq: seq,
        expiry_ms,
    }
}

/// The sealed blocks of `image` with a summary: (device offset of the summary, its length).
fn summaries(image: &[u8]) -> Vec<(u64, usize)> {
    let blocks = (image.len() as u64 - RESERVED_BYTES) / BLOCK_BYTES;
    (0..blocks)
        .filter_map(|b| {
            let at = (RESERVED_BYTES + b * BLOCK_BYTES) as usize;
            let h = BlockHeader::decode(&image[at..]).ok().flatten()?;
            (h.state == BlockState::Sealed && h.summary_len_bytes > 0).then(|| {
                (
                    at as u64 + h.summary_offset_bytes() as u64,
                    h.summary_len_bytes as usize,
                )
            })
        })
        .collect()
}

/// Two writers, values of many sizes, types and expiries, tombstones, and multi-record
/// commands (some straddling blocks); returns each key's final value (None: deleted).
async fn workload(store: &Store, seed: u64) -> HashMap<Vec<u8>, Option<Vec<u8>>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let writers = [
        Writer::open(store.clone(), 0, Durability::EverySec, 0)
            .await
            .unwrap(),
        Writer::open(store.clone(), 1, Durability::EverySec, 0)
            .await
            .unwrap(),
    ];
    let mut model = HashMap::new();
    for op in 0..1500u32 {
        let w = &writers[(op % 2) as usize];
        // Worker w owns the keys of its parity.
        let key = |rng: &mut rand::rngs::StdRng| {
            format!("key-{}", rng.random_range(0..150u32) * 2 + op % 2).into_bytes()
        };
        let records = if rng.random_ratio(1, 10) {
            rng.random_range(2..5)
        } else {
            1
        };
        for i in 0..records {
            let k = key(&mut rng);
            let flags = if i > 0 { RECORD_FLAG_JOIN } else { 0 };
            if rng.random_ratio(1, 8) {
                let m = meta(RecordKind::Tombstone, flags, w.next_seq(), 0, 0);
                w.append(m, &k, &[]).unwrap();
                model.insert(k, None);
            } else {
                let len = rng.random_range(0..3000usize);
                let v: Vec<u8> = (0..len).map(|_| rng.random()).collect();
                let expiry = if rng.random_ratio(1, 4) {
                    rng.random_range(1..1i64 << 45)
                } else {
                    0
                };
                let m = meta(
                    RecordKind::Value,
                    flags,
                    w.next_seq(),
                    rng.random_range(0..5),
                    expiry,
                );
                w.append(m, &k, &v).unwrap();
                model.insert(k, Some(v));
            }
        }
        if records > 1 {
            let m = meta(RecordKind::CommandEnd, 0, w.next_seq(), 0, 0);
            let loc = w.append(m, &[], &[]).unwrap();
            w.release(loc);
        }
    }
    for w in &writers {
        w.sync().await.unwrap();
    }
    model
}

/// Each key's last delivered record, checked against the model (value read from `image`).
fn check_against(
    image: &[u8],
    store: &Store,
    delivered: &[Delivered],
    model: &HashMap<Vec<u8>, Option<Vec<u8>>>,
) {
    let mut last: HashMap<&[u8], &Delivered> = HashMap::new();
    for d in delivered {
        last.insert(&d.0, d);
    }
    assert_eq!(last.len(), model.len());
    for (k, want) in model {
        let (_, m, loc) = last[&k[..]];
        match want {
            None => assert_eq!(m.kind, RecordKind::Tombstone),
            Some(v) => {
                assert_eq!(m.kind, RecordKind::Value);
                assert_eq!(&common::value_in(image, store, loc), v);
            }
        }
    }
}

#[test]
fn summaries_recover_what_a_scan_of_the_blocks_recovers() {
    let dev = ram(160);
    let ctl = dev.control();
    let model = run(async {
        let (store, _, _) = open(&ctl).await;
        workload(&store, 7).await
    });
    // Recovered from the summaries.
    let (by_summary, rec) = run(async {
        let (store, delivered, rec) = open(&ctl).await;
        check_against(&ctl.visible_image(), &store, &delivered, &model);
        (delivered, rec)
    });
    let sums = summaries(&ctl.visible_image());
    assert!(sums.len() >= 20, "{} blocks with a summary", sums.len());
    assert_eq!(rec.summarised_blocks, sums.len() as u64, "{rec:?}");
    assert_eq!(rec.bad_summaries, 0);
    assert!(rec.truncations.is_empty(), "{:?}", rec.truncations);
    let sealed_bytes = sums.len() as u64 * BLOCK_BYTES;
    assert!(
        rec.bytes_read < sealed_bytes / 2,
        "read {} bytes for {} sealed blocks",
        rec.bytes_read,
        sums.len()
    );
    // Every summary damaged: each is detected, its block scanned, and the same records
    // come out in the same order.
    for (i, &(at, len)) in sums.iter().enumerate() {
        ctl.flip_bit(at + (i * 7919 % len) as u64, (i % 8) as u8);
    }
    let (by_scan, rec2) = run(async {
        let (store, delivered, rec) = open(&ctl).await;
        check_against(&ctl.visible_image(), &store, &delivered, &model);
        (delivered, rec)
    });
    assert_eq!(rec2.bad_summaries, sums.len() as u64, "{rec2:?}");
    assert_eq!(rec2.summarised_blocks, 0);
    assert!(rec2.bytes_read > sealed_bytes);
    assert_eq!(by_scan.len(), by_summary.len());
    assert!(by_scan == by_summary, "the scan delivered other records");
    assert_eq!(rec2.records, rec.records);
    assert_eq!(rec2.partial_commands_dropped, rec.partial_commands_dropped);
    assert_eq!(rec2.tombstone_blocks, rec.tombstone_blocks);
    assert_eq!(rec2.max_mutation_seq, rec.max_mutation_seq);
}

#[test]
fn blocks_of_small_records_keep_no_summary() {
    let dev = ram(40);
    let ctl = dev.control();
    run(async {
        let (store, _, _) = open(&ctl).await;
        let w = Writer::open(store.clone(), 0, Durability::EverySec, 0)
            .await
            .unwrap();
        for i in 0..6000u32 {
            let m = meta(RecordKind::Value, 0, w.next_seq(), 0, 0);
            w.append(m, format!("k{i}").as_bytes(), &i.to_le_bytes())
                .unwrap();
        }
        w.sync().await.unwrap();
    });
    let image = ctl.visible_image();
    assert!(summaries(&image).is_empty());
    run(async {
        let (_, delivered, rec) = open(&ctl).await;
        assert_eq!(delivered.len(), 6000);
        assert_eq!(rec.summarised_blocks, 0);
        assert!(rec.data_blocks_scanned >= 4, "{rec:?}");
    });
}

/// The writes that seal a block: its last records and the summary, then its sealed header.
/// A crash that keeps the first and loses the second leaves an open block on the device,
/// whose records end at the gap before the summary: a clean end, not a torn tail.
#[test]
fn a_sealed_block_whose_header_was_lost_scans_cleanly() {
    let dev = ram(16);
    let ctl = dev.control();
    let (first, keys) = run(async {
        let (store, _, _) = open(&ctl).await;
        let w = Writer::open(store.clone(), 0, Durability::EverySec, 0)
            .await
            .unwrap();
        let mut keys = Vec::new();
        let mut put = |i: u32| {
            let k = format!("key-{i}");
            let m = meta(RecordKind::Value, 0, w.next_seq(), 0, 0);
            let loc = w.append(m, k.as_bytes(), &[i as u8; 2000]).unwrap();
            keys.push(k.into_bytes());
            loc
        };
        let first = put(0).block_id();
        for i in 1..10 {
            put(i);
        }
        w.sync().await.unwrap();
        // Fill the block until the next record opens another one.
        let mut i = 10;
        while put(i).block_id() == first {
            i += 1;
        }
        w.flush().await.unwrap();
        let header_at = store.block_offset_bytes(first);
        let writes = ctl.unsynced_writes();
        assert!(writes.len() >= 2, "{writes:?}");
        assert!(
            writes[0].0 > header_at && writes[0].0 < header_at + BLOCK_BYTES,
            "{writes:?}"
        );
        assert_eq!(writes[1].0, header_at, "{writes:?}");
        (first, keys)
    });
    ctl.crash(CrashSpec {
        keep_writes: 1,
        torn_bytes: 0,
    });
    let image = ctl.visible_image();
    assert!(summaries(&image).is_empty(), "the sealed header was lost");
    let mut keys = keys;
    keys.pop(); // the next block's record was never written
    run(async {
        let (store, delivered, rec) = open(&ctl).await;
        assert!(rec.truncations.is_empty(), "{:?}", rec.truncations);
        assert!(rec.open_blocks.iter().any(|b| b.id == first), "{rec:?}");
        let got: Vec<Vec<u8>> = delivered.into_iter().map(|d| d.0).collect();
        assert_eq!(got, keys, "every record of the first block");
        // Adopted (its tail, the stale summary, zeroed) and appended to until sealed: the
        // sealed block's summary lists the records from before the crash too.
        let w = Writer::open(store.clone(), 0, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        assert!(w.adopt(first).await.unwrap());
        let mut i = keys.len() as u32;
        loop {
            let k = format!("key-{i}");
            let m = meta(RecordKind::Value, 0, w.next_seq(), 0, 0);
            let loc = w.append(m, k.as_bytes(), &[1u8; 100]).unwrap();
            if loc.block_id() != first {
                break;
            }
            keys.push(k.into_bytes());
            i += 1;
        }
        w.sync().await.unwrap();
    });
    let image = ctl.visible_image();
    let first_at = RESERVED_BYTES + u64::from(first.block) * BLOCK_BYTES;
    assert!(
        summaries(&image)
            .iter()
            .any(|&(at, _)| at > first_at && at < first_at + BLOCK_BYTES),
        "the adopted block was sealed with a summary"
    );
    run(async {
        let (_, delivered, rec) = open(&ctl).await;
        assert!(rec.summarised_blocks >= 1, "{rec:?}");
        assert_eq!(rec.bad_summaries, 0);
        let got: Vec<Vec<u8>> = delivered.into_iter().map(|d| d.0).collect();
        assert_eq!(&got[..keys.len()], &keys[..]);
    });
}

/// Defrag's image of a sealed block lists its records from the summary without reading
/// their values, and checks a value's CRC only when it is asked for: a damaged value is
/// refused (the other records of the block are not), and a damaged summary makes the
/// image scan the block instead, which finds the same records but the damaged one.
#[test]
fn defrag_images_list_records_from_the_summary_and_check_values_when_asked() {
    let dev = ram(16);
    let ctl = dev.control();
    run(async {
        let (store, _, _) = open(&ctl).await;
        let w = Writer::open(store.clone(), 0, Durability::EverySec, 0)
            .await
            .unwrap();
        let mut written: Vec<(Location, Vec<u8>, Vec<u8>)> = Vec::new();
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for i in 0..200u32 {
            let key = format!("key-{i}").into_bytes();
            let value: Vec<u8> = (0..rng.random_range(500..1500))
                .map(|_| rng.random())
                .collect();
            let m = meta(RecordKind::Value, 0, w.next_seq(), 0, 0);
            let loc = w.append(m, &key, &value).unwrap();
            written.push((loc, key, value));
            if i % 50 == 0 {
                // Tombstones are not listed (they are never live).
                let m = meta(RecordKind::Tombstone, 0, w.next_seq(), 0, 0);
                w.append(m, b"gone", &[]).unwrap();
            }
        }
        w.sync().await.unwrap();
        let sums = summaries(&ctl.visible_image());
        assert!(!sums.is_empty());
        let (summary_at, summary_len) = sums[0];
        let block = ((summary_at - RESERVED_BYTES) / BLOCK_BYTES) as u32;
        let block_start = RESERVED_BYTES + u64::from(block) * BLOCK_BYTES;
        let id = skerry_store::BlockId { device: 0, block };
        let seq = store.block_seq(id);
        let in_block: Vec<&(Location, Vec<u8>, Vec<u8>)> = written
            .iter()
            .filter(|(l, _, _)| l.block == block)
            .collect();
        assert!(
            in_block.len() >= 20,
            "{} records in the block",
            in_block.len()
        );

        let image = w.read_block(id, seq, None).await.unwrap().expect("image");
        assert!(image.scanned(), "listed from the summary at once");
        assert_eq!(image.len(), in_block.len());
        for (i, (loc, key, value)) in in_block.iter().enumerate() {
            let (l, m, k) = image.record(i);
            assert_eq!((l, m.kind, k), (*loc, RecordKind::Value, &key[..]));
            assert_eq!(image.value(i), Some(&value[..]));
        }

        // One value damaged on the device.
        let bad = in_block.len() / 2;
        let (loc, key, _) = in_block[bad];
        let value_at = block_start
            + u64::from(loc.offset_bytes)
            + skerry_store::format::RECORD_HEADER_BYTES as u64
            + key.len() as u64
            + 7;
        ctl.flip_bit(value_at, 3);
        let image = w.read_block(id, seq, None).await.unwrap().expect("image");
        assert!(image.scanned());
        assert_eq!(image.len(), in_block.len());
        for (i, (_, _, value)) in in_block.iter().enumerate() {
            let want = (i != bad).then_some(&value[..]);
            assert_eq!(image.value(i), want, "record {i}");
        }

        // The summary damaged too: the block is scanned, and the scan skips the damaged
        // record.
        ctl.flip_bit(summary_at + summary_len as u64 / 2, 5);
        let mut image = w.read_block(id, seq, None).await.unwrap().expect("image");
        assert!(!image.scanned(), "a damaged summary is not used");
        while !image.scan(4096) {}
        assert!(image.scanned());
        let good: Vec<_> = in_block
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != bad)
            .map(|(_, r)| r)
            .collect();
        assert_eq!(image.len(), good.len());
        for (i, (loc, key, value)) in good.iter().enumerate() {
            let (l, _, k) = image.record(i);
            assert_eq!((l, k), (*loc, &key[..]));
            assert_eq!(image.value(i), Some(&value[..]));
        }
    });
}

/// A sealed block goes to the device straight from its image, without a copy into a write
/// buffer, and what lands there is what a copy would have written: recovery finds every
/// record, from the summaries, and every value reads back.
#[test]
fn sealed_blocks_are_written_from_their_images_and_recover_whole() {
    let dev = ram(16);
    let ctl = dev.control();
    let written = run(async {
        let (store, _, _) = open(&ctl).await;
        let w = Writer::open(store.clone(), 0, Durability::EverySec, 0)
            .await
            .unwrap();
        let mut written = Vec::new();
        for i in 0..300u32 {
            let key = format!("key-{i}").into_bytes();
            let value = vec![(i % 251) as u8; 700 + (i as usize * 37) % 600];
            let m = meta(RecordKind::Value, 0, w.next_seq(), 0, 0);
            let loc = w.append(m, &key, &value).unwrap();
            written.push((key, value, loc));
        }
        w.sync().await.unwrap();
        let stats = w.stats();
        let sealed = summaries(&ctl.visible_image()).len() as u64;
        assert!(sealed >= 3, "{sealed} sealed blocks");
        assert!(
            stats.written_uncopied_bytes >= (sealed - 1) * BLOCK_BYTES,
            "{} bytes of {sealed} sealed blocks written without a copy",
            stats.written_uncopied_bytes
        );
        assert!(stats.written_uncopied_bytes < stats.written_bytes);
        written
    });
    run(async {
        let (store, delivered, rec) = open(&ctl).await;
        assert!(rec.truncations.is_empty(), "{:?}", rec.truncations);
        assert!(rec.summarised_blocks >= 3, "{rec:?}");
        assert_eq!(delivered.len(), written.len());
        let image = ctl.visible_image();
        for ((key, value, loc), (k, _, l)) in written.iter().zip(&delivered) {
            assert_eq!((key, loc), (k, l));
            let at = (RESERVED_BYTES + u64::from(loc.block) * BLOCK_BYTES) as usize
                + loc.offset_bytes as usize;
            let r = skerry_store::format::decode_record(
                &image[at..at + loc.len_bytes as usize],
                store.block_seq(loc.block_id()),
            )
            .unwrap()
            .unwrap();
            assert_eq!((r.key, r.value), (&key[..], &value[..]));
        }
    });
}
