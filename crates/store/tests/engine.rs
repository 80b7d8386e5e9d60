//! The engine on RAM and file devices: open/format, append, staged and device
//! reads, flush/sync, group commit, recovery, no-space and I/O errors.

mod common;

use std::rc::Rc;

use common::small::value as meta;
use common::{reopen_file, run, temp_dir};
use skerry_store::device::{CrashSpec, Fault, FaultOp, RamDevice};
use skerry_store::format::RESERVED_BYTES;
use skerry_store::{
    AnyDevice, Durability, FileDevice, RecoveredIndex, Store, StoreError, StoreOptions, Writer,
};

const KIB: u64 = 1 << 10;

fn opts() -> StoreOptions {
    StoreOptions {
        block_size_bytes: 64 * KIB,
        ..StoreOptions::default()
    }
}

async fn open(dev: &RamDevice) -> (Store, RecoveredIndex, skerry_store::Recovery) {
    let mut index = RecoveredIndex::default();
    let (store, rec) = Store::create_or_open(vec![dev.control().device().into()], &opts(), |r| {
        index.apply(r)
    })
    .await
    .expect("open");
    (store, index, rec)
}

fn ram(blocks: u64) -> RamDevice {
    RamDevice::new(RESERVED_BYTES + blocks * 64 * KIB, 512)
}

#[test]
fn append_read_sync_recover() {
    let dev = ram(4);
    run(async {
        let (store, index, rec) = open(&dev).await;
        assert!(index.entries.is_empty());
        assert_eq!(rec.records, 0);
        assert_eq!(store.free_blocks(), 4);
        let w = Writer::open(store, 0, Durability::Always, rec.max_mutation_seq)
            .await
            .unwrap();
        let mut locs = Vec::new();
        for i in 0..300u32 {
            let seq = w.next_seq();
            let value = vec![i as u8; (i as usize * 7) % 700];
            let loc = w
                .append(meta(seq), format!("key{i}").as_bytes(), &value)
                .unwrap();
            locs.push((loc, value));
        }
        // Staged reads.
        for (i, (loc, value)) in locs.iter().enumerate() {
            let r = w.read(loc).await.unwrap();
            assert_eq!(r.key(), format!("key{i}").as_bytes());
            assert_eq!(r.value(), value.as_slice());
        }
        w.sync().await.unwrap();
        assert_eq!(w.durable(), 300);
        // Device reads (sealed blocks are dropped once durable).
        for (i, (loc, value)) in locs.iter().enumerate() {
            let r = w.read(loc).await.unwrap();
            assert_eq!(r.key(), format!("key{i}").as_bytes());
            assert_eq!(r.value(), value.as_slice());
        }
        drop(w);
        dev.control().crash(CrashSpec::lose_unsynced());
        let (store, index, rec) = open(&dev).await;
        assert_eq!(rec.records, 300);
        assert_eq!(rec.max_mutation_seq, 300);
        assert!(rec.truncations.is_empty(), "{:?}", rec.truncations);
        assert_eq!(store.free_blocks(), 4 - rec.used_blocks);
        let w = Writer::open(store, 1, Durability::Always, rec.max_mutation_seq)
            .await
            .unwrap();
        assert_eq!(w.next_seq(), 301);
        for (i, (loc, value)) in locs.iter().enumerate() {
            let e = index.get(format!("key{i}").as_bytes()).unwrap();
            assert_eq!(e.location, *loc);
            assert_eq!(w.read(loc).await.unwrap().value(), value.as_slice());
        }
    });
}

#[test]
fn unsynced_appends_are_lost_synced_kept() {
    let dev = ram(4);
    run(async {
        let (store, _, _) = open(&dev).await;
        let w = Writer::open(store, 0, Durability::Always, 0).await.unwrap();
        w.append(meta(w.next_seq()), b"a", b"1").unwrap();
        w.commit().await.unwrap();
        w.append(meta(w.next_seq()), b"a", b"2").unwrap();
        w.append(meta(w.next_seq()), b"b", b"3").unwrap();
        w.flush().await.unwrap(); // written, not synced
        drop(w);
        dev.control().crash(CrashSpec::lose_unsynced());
        let (_, index, rec) = open(&dev).await;
        assert_eq!(rec.records, 1);
        assert!(index.get(b"b").is_none());
        assert_eq!(index.get(b"a").unwrap().meta.mutation_seq, 1);
    });
}

#[test]
fn group_commit_shares_one_sync() {
    let dev = ram(4);
    run(async {
        let (store, _, _) = open(&dev).await;
        let w = Rc::new(Writer::open(store, 0, Durability::Always, 0).await.unwrap());
        let syncs_before = dev.control().stats().syncs;
        let mut tasks = Vec::new();
        for i in 0..16u32 {
            let w = w.clone();
            tasks.push(compio::runtime::spawn(async move {
                w.append(meta(w.next_seq()), &i.to_le_bytes(), b"v")
                    .unwrap();
                // Let every task append before any commits (RAM I/O never
                // suspends, so the committers meet only this way).
                skerry_store::yield_now().await;
                w.ack().await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let syncs = dev.control().stats().syncs - syncs_before;
        assert!((1..=2).contains(&syncs), "{syncs} syncs for 16 committers");
        assert_eq!(w.durable(), 16);
    });
}

#[test]
fn no_space_then_space_again() {
    let dev = ram(2);
    run(async {
        let (store, _, _) = open(&dev).await;
        let w = Writer::open(store.clone(), 0, Durability::Always, 0)
            .await
            .unwrap();
        let value = vec![7u8; 1000];
        let mut n = 0u64;
        let err = loop {
            match w.append(meta(w.next_seq()), &n.to_le_bytes(), &value) {
                Ok(_) => n += 1,
                Err(e) => break e,
            }
        };
        assert!(matches!(err, StoreError::NoSpace), "{err}");
        assert_eq!(err.to_string(), "no space left on the data devices");
        w.sync().await.unwrap();
        // Too large for any block.
        let big = vec![0u8; 64 * 1024];
        assert!(matches!(
            w.append(meta(w.next_seq()), b"big", &big),
            Err(StoreError::TooLarge { .. })
        ));
        drop(w);
        dev.control().crash(CrashSpec::lose_unsynced());
        let (store, index, rec) = open(&dev).await;
        assert_eq!(rec.records, n);
        assert_eq!(index.entries.len() as u64, n);
        // One block holds the records; the other was the writer's tombstone
        // reserve (returned when the writer was dropped).
        assert_eq!(rec.used_blocks, 1);
        assert_eq!(store.free_blocks(), 1);
        // Freeing a block makes appends succeed again (the new writer takes
        // the other free block as its reserve).
        let first = index.get(&0u64.to_le_bytes()).unwrap().location.block_id();
        store.free_block(first);
        let w = Writer::open(store, 0, Durability::Always, rec.max_mutation_seq)
            .await
            .unwrap();
        w.append(meta(w.next_seq()), b"again", b"ok").unwrap();
        w.sync().await.unwrap();
    });
}

/// The buffers a writer keeps for its next writes go back when it idles: after a write
/// burst they are kept (`kept_buffer_bytes` > 0), and ticks without an append free the
/// write buffers and the spare block images; a read's pooled buffer stays (small).
#[test]
fn an_idle_writer_frees_its_kept_write_buffers() {
    let dev = ram(4);
    run(async {
        let (store, _, rec) = open(&dev).await;
        let w = Writer::open(store, 0, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        let mut locs = Vec::new();
        for i in 0..100u32 {
            locs.push(
                w.append(meta(w.next_seq()), format!("k{i}").as_bytes(), &[9u8; 1000])
                    .unwrap(),
            );
            if i % 10 == 9 {
                w.sync().await.unwrap();
            }
        }
        assert!(w.kept_buffer_bytes() >= 64 * 1024, "a write buffer is kept");
        w.tick().await.unwrap(); // appends since the last tick: busy
        assert!(
            w.kept_buffer_bytes() >= 64 * 1024,
            "a busy writer keeps its buffers"
        );
        // A device read (the first block is sealed and durable) leaves a pooled buffer.
        let r = w.read(&locs[0]).await.unwrap();
        assert_eq!(r.value(), &[9u8; 1000]);
        w.recycle(r);
        // No appends since: idle. Each idle tick frees one spare block image (the write
        // buffers at once); a few ticks leave only the pooled read buffer.
        let mut ticks = 0;
        while w.kept_buffer_bytes() > 4096 {
            w.tick().await.unwrap();
            ticks += 1;
            assert!(
                ticks <= 5,
                "idle: only the pooled read buffer stays, got {}",
                w.kept_buffer_bytes()
            );
        }
        w.append(meta(w.next_seq()), b"after", b"idle").unwrap();
        w.sync().await.unwrap();
        assert_eq!(w.read(&locs[99]).await.unwrap().value(), &[9u8; 1000]);
    });
}

#[test]
fn durability_changes_at_runtime() {
    let dev = ram(4);
    run(async {
        let (store, _, _) = open(&dev).await;
        let w = Writer::open(store, 0, Durability::EverySec, 0)
            .await
            .unwrap();
        w.append(meta(w.next_seq()), b"a", b"1").unwrap();
        w.ack().await.unwrap();
        assert_eq!(w.durable(), 0, "everysec: ack does not sync");
        w.set_durability(Durability::Always);
        assert_eq!(w.durability(), Durability::Always);
        w.append(meta(w.next_seq()), b"b", b"2").unwrap();
        w.ack().await.unwrap();
        assert_eq!(w.durable(), 2, "always: ack commits");
        w.set_durability(Durability::No);
        w.append(meta(w.next_seq()), b"c", b"3").unwrap();
        w.ack().await.unwrap();
        w.tick().await.unwrap();
        assert_eq!(w.durable(), 2, "no: tick flushes only");
        assert_eq!(w.stats().syncs, 1);
    });
}

#[test]
fn io_errors_lose_nothing_acknowledged() {
    let dev = ram(4);
    let ctl = dev.control();
    run(async {
        let (store, _, _) = open(&dev).await;
        let w = Writer::open(store, 0, Durability::Always, 0).await.unwrap();
        w.append(meta(w.next_seq()), b"k1", b"v1").unwrap();
        w.sync().await.unwrap();
        for (op, errno) in [
            (FaultOp::Write, libc::EIO),
            (FaultOp::Write, libc::ENOSPC),
            (FaultOp::Sync, libc::EIO),
        ] {
            ctl.inject(Fault {
                op,
                errno,
                skip_ops: 0,
                persistent: false,
            });
            w.append(meta(w.next_seq()), b"k2", b"v2").unwrap();
            let err = w.sync().await.unwrap_err();
            match &err {
                StoreError::Io { source, .. } => assert_eq!(source.raw_os_error(), Some(errno)),
                other => panic!("unexpected {other}"),
            }
        }
        // Retry succeeds and everything is durable.
        w.sync().await.unwrap();
        drop(w);
        ctl.crash(CrashSpec::lose_unsynced());
        let (_, index, _) = open(&dev).await;
        assert_eq!(index.entries.len(), 2);
        assert_eq!(index.get(b"k2").unwrap().meta.mutation_seq, 4);
    });
}

#[test]
fn version_and_garbage_are_refused_without_writing() {
    let dev = ram(2);
    let ctl = dev.control();
    run(async {
        open(&dev).await;
        // Damage both superblock copies: refused, not reformatted.
        ctl.flip_bit(20, 0);
        ctl.flip_bit(4096 + 20, 0);
        let writes = ctl.stats().writes;
        let err = Store::create_or_open(vec![ctl.device().into()], &opts(), |_| {})
            .await
            .unwrap_err();
        assert!(err.to_string().contains("bad superblock"), "{err}");
        assert_eq!(ctl.stats().writes, writes);
    });
}

#[test]
fn file_device_round_trip_10k() {
    let dir = temp_dir("engine-file");
    let path = dir.join("data");
    let size = RESERVED_BYTES + 16 * (1 << 20);
    let mut expected = Vec::new();
    run(async {
        let dev = FileDevice::open_or_create(&path, size).await.unwrap();
        let options = StoreOptions {
            block_size_bytes: 1 << 20,
            ..StoreOptions::default()
        };
        let (store, rec) = Store::create_or_open(vec![AnyDevice::File(dev)], &options, |_| {})
            .await
            .unwrap();
        let w = Writer::open(store, 0, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        for i in 0..10_000u32 {
            let value = format!("value-{i}-").repeat(1 + (i as usize % 20));
            let loc = w
                .append(
                    meta(w.next_seq()),
                    format!("k{i}").as_bytes(),
                    value.as_bytes(),
                )
                .unwrap();
            expected.push((loc, value));
            if i % 1000 == 999 {
                w.tick().await.unwrap();
            }
        }
        w.sync().await.unwrap();
    });
    run(async {
        let (store, index, rec) = reopen_file(&path).await;
        assert_eq!(rec.records, 10_000);
        let w = Writer::open(store, 0, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        for (i, (loc, value)) in expected.iter().enumerate() {
            assert_eq!(
                index.get(format!("k{i}").as_bytes()).unwrap().location,
                *loc
            );
            let r = w.read(loc).await.unwrap();
            assert_eq!(r.value(), value.as_bytes());
        }
    });
}

#[test]
fn group_commit_on_file_device_waiters_share_syncs() {
    let dir = temp_dir("engine-group");
    let path = dir.join("data");
    run(async {
        let dev = FileDevice::open_or_create(&path, RESERVED_BYTES + 4 * (1 << 20))
            .await
            .unwrap();
        let options = StoreOptions {
            block_size_bytes: 1 << 20,
            ..StoreOptions::default()
        };
        let (store, _) = Store::create_or_open(vec![AnyDevice::File(dev)], &options, |_| {})
            .await
            .unwrap();
        let w = Rc::new(Writer::open(store, 0, Durability::Always, 0).await.unwrap());
        let tasks: Vec<_> = (0..32u32)
            .map(|i| {
                let w = w.clone();
                compio::runtime::spawn(async move {
                    w.append(meta(w.next_seq()), &i.to_le_bytes(), b"value")
                        .unwrap();
                    w.ack().await.unwrap();
                    w.durable()
                })
            })
            .collect();
        for t in tasks {
            assert!(t.await.unwrap() >= 1);
        }
        let stats = w.stats();
        assert_eq!(stats.durable_appends, 32);
        assert!(
            (1..=2).contains(&stats.syncs),
            "{} syncs for 32 committers",
            stats.syncs
        );
    });
}

#[test]
fn two_devices_two_worker_threads() {
    let devs = [ram(6), ram(6)];
    let ctls: Vec<_> = devs.iter().map(|d| d.control()).collect();
    let store = run(async {
        let (store, rec) = Store::create_or_open(
            devs.iter().map(|d| d.control().device().into()).collect(),
            &opts(),
            |_| {},
        )
        .await
        .unwrap();
        assert_eq!(rec.records, 0);
        store
    });
    assert_eq!(store.free_blocks(), 12);
    let handles: Vec<_> = (0..2u16)
        .map(|worker| {
            let store = store.clone();
            std::thread::spawn(move || {
                run(async move {
                    let w = Writer::open(store, worker, Durability::Always, 0)
                        .await
                        .unwrap();
                    for i in 0..200u32 {
                        // Sequences interleave between workers; keys do not.
                        let seq = u64::from(i) * 2 + u64::from(worker) + 1;
                        let key = format!("w{worker}-{i}");
                        w.append(meta(seq), key.as_bytes(), &[worker as u8; 500])
                            .unwrap();
                        if i % 50 == 49 {
                            w.sync().await.unwrap();
                        }
                    }
                    w.stats().blocks_opened
                })
            })
        })
        .collect();
    let opened: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(store.free_blocks(), 12 - opened);
    drop(store);
    for c in &ctls {
        c.crash(CrashSpec::lose_unsynced());
    }
    run(async {
        // Devices given in the other order are put back in index order.
        let mut index = RecoveredIndex::default();
        let (store, rec) = Store::create_or_open(
            vec![ctls[1].device().into(), ctls[0].device().into()],
            &opts(),
            |r| index.apply(r),
        )
        .await
        .unwrap();
        assert_eq!(rec.records, 400);
        assert_eq!(rec.used_blocks, opened);
        let w = Writer::open(store, 0, Durability::Always, rec.max_mutation_seq)
            .await
            .unwrap();
        for worker in 0..2u8 {
            for i in 0..200 {
                let e = index.get(format!("w{worker}-{i}").as_bytes()).unwrap();
                assert_eq!(w.read(&e.location).await.unwrap().value(), &[worker; 500]);
            }
        }
        // A device of another store is refused.
        let other = ram(2);
        let err = Store::create_or_open(
            vec![ctls[0].device().into(), other.control().device().into()],
            &opts(),
            |_| {},
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("not formatted"), "{err}");
    });
}

#[test]
fn other_format_version_is_refused_and_not_overwritten() {
    let dev = ram(2);
    run(async {
        open(&dev).await;
    });
    // Rewrite both superblock copies as version 2 (intact CRC).
    let mut image = dev.control().durable_image();
    for slot in [0usize, 4096] {
        image[slot + 8..slot + 12].copy_from_slice(&3u32.to_le_bytes());
        let crc = crc32c_of(&image[slot..slot + 124]);
        image[slot + 124..slot + 128].copy_from_slice(&crc.to_le_bytes());
    }
    let dev = RamDevice::from_image(image.clone(), 512);
    run(async {
        let err = Store::create_or_open(vec![dev.control().device().into()], &opts(), |_| {})
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("data file format version 3 is not supported by this build"),
            "{err}"
        );
    });
    assert_eq!(dev.control().stats().writes, 0);
    assert_eq!(dev.control().durable_image(), image);
}

/// CRC32C (Castagnoli), bitwise: the tests need no extra dependency.
fn crc32c_of(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn io_latency_counts_every_device_read_write_and_fdatasync() {
    let dev = ram(4);
    run(async {
        let (store, _index, rec) = open(&dev).await;
        let w = Writer::open(store, 0, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        let mut locs = Vec::new();
        // About 2.5 blocks of records (their summaries included): two sealed blocks and
        // an open one.
        for i in 0..340u32 {
            let seq = w.next_seq();
            let loc = w
                .append(meta(seq), format!("key{i}").as_bytes(), &[7u8; 400])
                .unwrap();
            locs.push(loc);
        }
        // Staged reads touch no device.
        for loc in &locs {
            w.read(loc).await.unwrap();
        }
        let io = w.io_latency();
        assert_eq!(io.read.count(), 0);
        assert_eq!(io.write.count(), 0);
        assert_eq!(io.fdatasync.count(), 0);
        w.sync().await.unwrap();
        w.sync().await.unwrap(); // nothing new: no write, no fdatasync
        let st = w.stats();
        let io = w.io_latency();
        assert!(st.writes >= 3, "writes {}", st.writes);
        assert_eq!(io.write.count(), st.writes);
        assert_eq!(io.fdatasync.count(), 1, "one device, one sync round");
        assert_eq!(st.syncs, 1);
        // The sealed, durable blocks are read from the device now; the open block's
        // records still come from its image.
        let open_block = locs.last().unwrap().block_id();
        let on_device = locs.iter().filter(|l| l.block_id() != open_block).count() as u64;
        assert!(on_device > 0);
        for loc in &locs {
            w.read(loc).await.unwrap();
        }
        let io = w.io_latency();
        assert_eq!(io.read.count(), on_device);
        assert!(io.read_bytes >= on_device * 512);
        assert!(io.read.max_ns() >= io.read.quantile_ns(0.5));
        // Merging two writers' figures adds them.
        let mut both = io.clone();
        both.merge(&io);
        assert_eq!(both.read.count(), 2 * on_device);
        assert_eq!(both.read_bytes, 2 * io.read_bytes);
    });
}
