//! Crash tests on the RAM device: a scripted workload of puts, overwrites and
//! deletes of random keys with flushes and syncs at random points, crashed
//! after every device write it issues (and with injected EIO/ENOSPC at every
//! write), then recovered and checked against a model of what was
//! acknowledged durable. Also: torn writes at every sector boundary, and bit
//! flips (Corrupt on read, skipped by recovery).

mod common;

use std::collections::HashMap;

use common::run;
use common::small::value as meta;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use skerry_store::device::{CrashSpec, Fault, FaultOp, RamControl, RamDevice};
use skerry_store::format::{RecordKind, RecordMeta, RESERVED_BYTES, VALUE_TYPE_STRING};
use skerry_store::Recovered;
use skerry_store::{
    Durability, Location, RecoveredIndex, Recovery, Store, StoreError, StoreOptions, Writer,
};

const BLOCK_BYTES: u64 = 64 << 10;
const BLOCKS: u64 = 12;

#[derive(Clone, Debug)]
enum Op {
    Put(u32, Vec<u8>),
    Del(u32),
    Flush,
    Sync,
}

fn workload(seed: u64, ops: usize) -> Vec<Op> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..ops)
        .map(|_| match rng.random_range(0..100) {
            0..8 => Op::Sync,
            8..16 => Op::Flush,
            16..26 => Op::Del(rng.random_range(0..24)),
            _ => {
                let len = rng.random_range(0..2500);
                let byte: u8 = rng.random();
                Op::Put(rng.random_range(0..24), vec![byte; len])
            }
        })
        .collect()
}

fn key(k: u32) -> Vec<u8> {
    format!("key-{k}").into_bytes()
}

fn opts() -> StoreOptions {
    StoreOptions {
        block_size_bytes: BLOCK_BYTES,
        ..StoreOptions::default()
    }
}

/// What one run acknowledged: every record written (by sequence) and the
/// per-key sequence as of the last sync that really made data durable.
#[derive(Default)]
struct Outcome {
    history: HashMap<u64, (Vec<u8>, Option<Vec<u8>>)>,
    durable: HashMap<Vec<u8>, u64>,
    errors: u64,
}

fn fresh_device() -> RamDevice {
    RamDevice::new(RESERVED_BYTES + BLOCKS * BLOCK_BYTES, 512)
}

async fn open(ctl: &RamControl) -> (Store, RecoveredIndex, Recovery) {
    let mut index = RecoveredIndex::default();
    let (store, rec) =
        Store::create_or_open(vec![ctl.device().into()], &opts(), |r| index.apply(r))
            .await
            .expect("open");
    (store, index, rec)
}

/// Runs `ops` on a writer of `store`.
async fn run_ops(store: Store, ctl: &RamControl, ops: &[Op]) -> Outcome {
    let w = Writer::open(store, 0, Durability::Always, 0).await.unwrap();
    let mut out = Outcome::default();
    let mut current: HashMap<Vec<u8>, u64> = HashMap::new();
    for op in ops {
        match op {
            Op::Put(..) | Op::Del(..) => {
                let seq = w.next_seq();
                let (k, kind, value) = match op {
                    Op::Put(k, v) => (k, RecordKind::Value, Some(v.clone())),
                    Op::Del(k) => (k, RecordKind::Tombstone, None),
                    _ => unreachable!(),
                };
                let meta = RecordMeta {
                    kind,
                    value_type: VALUE_TYPE_STRING,
                    flags: 0,
                    mutation_seq: seq,
                    expiry_ms: 0,
                };
                w.append(meta, &key(*k), value.as_deref().unwrap_or_default())
                    .expect("append");
                out.history.insert(seq, (key(*k), value));
                current.insert(key(*k), seq);
            }
            Op::Flush => {
                if w.flush().await.is_err() {
                    out.errors += 1;
                }
            }
            Op::Sync => match w.sync().await {
                // Only a sync that ran before the power cut made data durable.
                Ok(()) if ctl.stats().dropped_writes == 0 => out.durable = current.clone(),
                Ok(()) => {}
                Err(StoreError::Io { .. }) => out.errors += 1,
                Err(e) => panic!("unexpected error {e}"),
            },
        }
    }
    out
}

/// Recovers and checks the outcome: every durable key at its durable sequence
/// or a later one, every recovered record equal to what was written.
async fn check(ctl: &RamControl, out: &Outcome, what: &str) -> Recovery {
    let (store, index, rec) = open(ctl).await;
    for (k, &seq) in &out.durable {
        let e = index
            .entries
            .get(k)
            .unwrap_or_else(|| panic!("{what}: durable key {k:?} lost"));
        assert!(
            e.meta.mutation_seq >= seq,
            "{what}: key {k:?} recovered at seq {} below durable {seq}",
            e.meta.mutation_seq
        );
    }
    let w = Writer::open(store, 0, Durability::Always, rec.max_mutation_seq)
        .await
        .unwrap();
    for (k, e) in &index.entries {
        let (hk, hv) = out
            .history
            .get(&e.meta.mutation_seq)
            .unwrap_or_else(|| panic!("{what}: unknown seq {}", e.meta.mutation_seq));
        assert_eq!(hk, k, "{what}: wrong key for seq");
        assert_eq!(hv.is_none(), e.meta.kind == RecordKind::Tombstone, "{what}");
        let r = w.read(&e.location).await.expect("read recovered record");
        assert_eq!(r.key(), k.as_slice(), "{what}");
        assert_eq!(r.value(), hv.as_deref().unwrap_or_default(), "{what}");
    }
    rec
}

/// Device writes a clean run of `ops` issues after open.
fn count_writes(ops: &[Op]) -> u64 {
    let dev = fresh_device();
    let ctl = dev.control();
    run(async {
        let (store, _, _) = open(&ctl).await;
        let before = ctl.stats().writes;
        run_ops(store, &ctl, ops).await;
        ctl.stats().writes - before
    })
}

#[test]
fn crash_after_every_write() {
    for seed in 1..=3u64 {
        let ops = workload(seed, 160);
        let writes = count_writes(&ops);
        assert!(writes > 20, "workload too small: {writes} writes");
        for crash_at in 0..=writes {
            for keep_all in [false, true] {
                let dev = fresh_device();
                let ctl = dev.control();
                run(async {
                    let (store, _, _) = open(&ctl).await;
                    ctl.set_crash_point(crash_at);
                    let out = run_ops(store, &ctl, &ops).await;
                    let pending = ctl.unsynced_writes();
                    let spec = match (keep_all, pending.last()) {
                        // Keep the unsynced writes but tear the last one in half.
                        (true, Some(&(_, len))) if len > 512 => {
                            CrashSpec::torn_last(pending.len(), (len / 2) / 512 * 512)
                        }
                        (true, _) => CrashSpec {
                            keep_writes: pending.len(),
                            torn_bytes: 0,
                        },
                        (false, _) => CrashSpec::lose_unsynced(),
                    };
                    ctl.crash(spec);
                    let what = format!("seed {seed} crash after write {crash_at} ({spec:?})");
                    check(&ctl, &out, &what).await;
                });
            }
        }
    }
}

#[test]
fn io_error_at_every_write_loses_nothing_synced() {
    let ops = workload(7, 160);
    let writes = count_writes(&ops);
    for at in 0..writes {
        for (errno, op) in [
            (libc::EIO, FaultOp::Write),
            (libc::ENOSPC, FaultOp::Write),
            (libc::EIO, FaultOp::Sync),
        ] {
            let dev = fresh_device();
            let ctl = dev.control();
            run(async {
                let (store, _, _) = open(&ctl).await;
                ctl.inject(Fault {
                    op,
                    errno,
                    skip_ops: if op == FaultOp::Sync { at / 4 } else { at },
                    persistent: false,
                });
                let out = run_ops(store, &ctl, &ops).await;
                if op == FaultOp::Write {
                    assert_eq!(out.errors, 1, "the injected write error is reported");
                }
                ctl.crash(CrashSpec::lose_unsynced());
                check(&ctl, &out, &format!("{op:?} errno {errno} at {at}")).await;
            });
        }
    }
}

/// Appends records, then flushes them as one write and tears it at every
/// sector boundary: exactly the records inside the torn prefix survive.
#[test]
fn torn_flush_at_every_sector_boundary() {
    let mut rng = StdRng::seed_from_u64(11);
    let values: Vec<Vec<u8>> = (0..40)
        .map(|_| vec![rng.random(); rng.random_range(0..700)])
        .collect();
    let write_len = {
        let dev = fresh_device();
        let ctl = dev.control();
        run(async {
            let (store, _, _) = open(&ctl).await;
            let w = Writer::open(store, 0, Durability::Always, 0).await.unwrap();
            for (i, v) in values.iter().enumerate() {
                w.append(meta(i as u64 + 1), &key(i as u32), v).unwrap();
            }
            w.flush().await.unwrap();
            let pending = ctl.unsynced_writes();
            assert_eq!(pending.len(), 1, "one flush write");
            pending[0].1
        })
    };
    for torn in (512..write_len).step_by(512) {
        let dev = fresh_device();
        let ctl = dev.control();
        let locs: Vec<Location> = run(async {
            let (store, _, _) = open(&ctl).await;
            let w = Writer::open(store, 0, Durability::Always, 0).await.unwrap();
            let locs = values
                .iter()
                .enumerate()
                .map(|(i, v)| w.append(meta(i as u64 + 1), &key(i as u32), v).unwrap())
                .collect();
            w.flush().await.unwrap();
            locs
        });
        ctl.crash(CrashSpec::torn_last(1, torn));
        run(async {
            let (_, index, rec) = open(&ctl).await;
            let survivors: Vec<usize> = (0..values.len())
                .filter(|&i| (locs[i].offset_bytes + locs[i].len_bytes) as usize <= torn)
                .collect();
            assert_eq!(rec.records as usize, survivors.len(), "torn at {torn}");
            for &i in &survivors {
                assert_eq!(index.get(&key(i as u32)).unwrap().location, locs[i]);
            }
            if let Some(&last) = survivors.last() {
                if last + 1 < values.len() && !rec.truncations.is_empty() {
                    assert_eq!(
                        rec.truncations[0].offset_bytes,
                        locs[last].offset_bytes + locs[last].len_bytes
                    );
                }
            }
        });
    }
}

/// Appends records `key(i)` = 300 bytes of `i` for `i` in `0..n` with
/// sequences `i + 1` through a new writer and syncs them.
async fn write_synced(store: &Store, n: u32) -> (Writer, Vec<Location>) {
    let w = Writer::open(store.clone(), 0, Durability::Always, 0)
        .await
        .unwrap();
    let locs = (0..n)
        .map(|i| {
            w.append(meta(u64::from(i) + 1), &key(i), &[i as u8; 300])
                .unwrap()
        })
        .collect();
    w.sync().await.unwrap();
    (w, locs)
}

/// Flips bit `bit` of the byte 100 bytes into the record at `loc` (inside its
/// value), on the device.
fn flip_in_value(ctl: &RamControl, store: &Store, loc: Location, bit: u8) {
    let at = store.block_offset_bytes(loc.block_id()) + u64::from(loc.offset_bytes) + 100;
    ctl.flip_bit(at, bit);
}

/// Reads into recycled buffers ([`Writer::recycle`]) serve exactly the record read:
/// a long record's bytes left in a pooled buffer never show in a shorter one read next,
/// records larger than the pooled size still read, and a flipped bit is still reported.
#[test]
fn recycled_read_buffers_serve_only_the_record_read() {
    let dev = fresh_device();
    let ctl = dev.control();
    run(async {
        let (store, _, _) = open(&ctl).await;
        let w = Writer::open(store.clone(), 0, Durability::Always, 0)
            .await
            .unwrap();
        // Sizes around the pooled buffer (4 KiB) and the 512-byte alignment.
        let sizes = [3000usize, 10, 4000, 0, 5000, 700, 4096, 1];
        let locs: Vec<Location> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                w.append(meta(i as u64 + 1), &key(i as u32), &vec![i as u8 + 1; n])
                    .unwrap()
            })
            .collect();
        w.sync().await.unwrap();
        // A new writer reads from the device (its staging images are empty).
        let r = Writer::open(store.clone(), 1, Durability::Always, 0)
            .await
            .unwrap();
        for round in 0..3 {
            for (i, loc) in locs.iter().enumerate() {
                let rec = r.read(loc).await.unwrap();
                assert_eq!(rec.key(), key(i as u32).as_slice(), "round {round}");
                assert_eq!(
                    rec.value(),
                    vec![i as u8 + 1; sizes[i]].as_slice(),
                    "round {round}"
                );
                r.recycle(rec);
            }
        }
        // A flipped bit in a small record read into a recycled buffer: still an error.
        flip_in_value(&ctl, &store, locs[5], 2);
        let r2 = Writer::open(store.clone(), 2, Durability::Always, 0)
            .await
            .unwrap();
        let rec = r2.read(&locs[0]).await.unwrap();
        r2.recycle(rec);
        assert!(matches!(
            r2.read(&locs[5]).await,
            Err(StoreError::Corrupt { .. })
        ));
        assert_eq!(r2.read(&locs[1]).await.unwrap().value(), &[2u8; 10]);
        drop((w, r, r2));
    });
}

#[test]
fn bit_flip_is_corrupt_on_read_and_skipped_by_recovery() {
    let dev = fresh_device();
    let ctl = dev.control();
    run(async {
        let (store, _, _) = open(&ctl).await;
        let (w, locs) = write_synced(&store, 10).await;
        // Flip one bit in the value of record 4 (on the device; the writer
        // still holds the open block's image, so read through a new writer).
        let victim = locs[4];
        flip_in_value(&ctl, &store, victim, 3);
        let r = Writer::open(store.clone(), 1, Durability::Always, 0)
            .await
            .unwrap();
        match r.read(&victim).await {
            Err(StoreError::Corrupt {
                device,
                block,
                offset_bytes,
            }) => {
                assert_eq!(
                    (device, block, offset_bytes),
                    (0, victim.block, victim.offset_bytes)
                );
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
        assert_eq!(r.read(&locs[5]).await.unwrap().value(), &[5u8; 300]);
        drop((w, r));
        let (_, index, rec) = open(&ctl).await;
        assert_eq!(rec.records, 9);
        assert_eq!(rec.corrupt_records, 1);
        assert!(index.get(&key(4)).is_none(), "corrupt record not served");
        for i in (0..10).filter(|&i| i != 4) {
            assert_eq!(index.get(&key(i)).unwrap().location, locs[i as usize]);
        }
    });
}

/// `create_or_open_reporting` hands over a damaged record (followed by valid
/// ones) in its place, with the key its header claims; a damaged last record
/// (a torn tail) is not reported.
#[test]
fn damaged_records_are_reported_in_place_torn_tails_are_not() {
    let dev = fresh_device();
    let ctl = dev.control();
    run(async {
        let (store, _, _) = open(&ctl).await;
        let (w, locs) = write_synced(&store, 6).await;
        drop(w);
        // Damage the values of record 2 (middle) and record 5 (the last one).
        for victim in [locs[2], locs[5]] {
            flip_in_value(&ctl, &store, victim, 1);
        }
        let mut seen: Vec<(String, Vec<u8>, Location)> = Vec::new();
        Store::create_or_open_reporting(vec![ctl.device().into()], &opts(), |item| match item {
            Recovered::Record(r) => seen.push(("record".into(), r.key.to_vec(), r.location)),
            Recovered::Damaged(d) => seen.push((
                "damaged".into(),
                d.key.expect("key intact").to_vec(),
                d.location,
            )),
        })
        .await
        .unwrap();
        let expected: Vec<(String, Vec<u8>, Location)> = (0..5u32)
            .map(|i| {
                let kind = if i == 2 { "damaged" } else { "record" };
                (kind.to_string(), key(i), locs[i as usize])
            })
            .collect();
        assert_eq!(seen, expected);
    });
}
