//! Data files that grow as data arrives: the file and its superblock grow by whole
//! blocks, everything written comes back after a reopen, a cap and the file system's
//! reserve stop the growth with the no-space error, and length left past the geometry by a
//! crash is used.

mod common;

use common::{reopen_file, run, small, temp_dir};
use skerry_store::format::{read_superblock, RESERVED_BYTES};
use skerry_store::{
    AnyDevice, Durability, FileDevice, GrowthOptions, Location, Store, StoreError, StoreOptions,
    Writer,
};

const BLOCK_BYTES: u64 = 64 << 10;

fn growing(max_device_bytes: u64, fs_reserve_bytes: u64) -> StoreOptions {
    StoreOptions {
        block_size_bytes: BLOCK_BYTES,
        growth: Some(GrowthOptions {
            max_device_bytes,
            fs_reserve_bytes,
            max_blocks_per_device: 1 << 20,
        }),
    }
}

fn value(i: u32) -> Vec<u8> {
    format!("{i:08}-").repeat(100).into_bytes()
}

/// Opens the store on `dev` (formatting it if fresh) and worker 0's writer.
async fn open_writer(dev: FileDevice, opts: &StoreOptions) -> (Store, Writer) {
    let (store, rec) = Store::create_or_open(vec![AnyDevice::File(dev)], opts, |_| {})
        .await
        .unwrap();
    let w = Writer::open(store.clone(), 0, Durability::EverySec, rec.max_mutation_seq)
        .await
        .unwrap();
    (store, w)
}

/// Appends values `0..n` (syncing now and then) until `n` or the first error; returns the
/// locations of the appended ones, all durable, and the error if one stopped it.
async fn fill(w: &Writer, n: u32) -> (Vec<Location>, Option<StoreError>) {
    let mut locs = Vec::new();
    let mut err = None;
    for i in 0..n {
        match w.append(
            small::value(w.next_seq()),
            format!("k{i}").as_bytes(),
            &value(i),
        ) {
            Ok(loc) => locs.push(loc),
            Err(e) => {
                err = Some(e);
                break;
            }
        }
        if i % 64 == 63 {
            w.tick().await.unwrap();
        }
    }
    w.sync().await.unwrap();
    (locs, err)
}

/// Reopens the file without growth and checks that every value in `locs` is there.
fn check_reopened(path: &std::path::Path, locs: &[Location]) -> u64 {
    let mut blocks = 0;
    run(async {
        let (store, index, rec) = reopen_file(path).await;
        assert_eq!(rec.records, locs.len() as u64, "every record comes back");
        blocks = store.block_count(0);
        let w = Writer::open(store, 0, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        for (i, loc) in locs.iter().enumerate() {
            let key = format!("k{i}");
            assert_eq!(index.get(key.as_bytes()).unwrap().location, *loc, "{key}");
            let r = w.read(loc).await.unwrap();
            assert_eq!(r.value(), &value(i as u32)[..], "{key}");
        }
    });
    blocks
}

#[test]
fn a_data_file_grows_as_data_arrives_and_comes_back() {
    let dir = temp_dir("grow-basic");
    let path = dir.join("data");
    let start_bytes = RESERVED_BYTES + 4 * BLOCK_BYTES;
    let mut locs = Vec::new();
    let mut grown_blocks = 0;
    run(async {
        let dev = FileDevice::open_or_create(&path, start_bytes)
            .await
            .unwrap();
        let (store, w) = open_writer(dev, &growing(0, 0)).await;
        assert_eq!(store.block_count(0), 4);

        // About 2 MiB of records: 30 blocks of 64 KiB.
        let (l, err) = fill(&w, 2000).await;
        assert!(err.is_none(), "no error while the file can grow: {err:?}");
        locs = l;
        grown_blocks = store.block_count(0);
        assert!(grown_blocks >= 30, "{grown_blocks} blocks");
        let stats = store.growth_stats();
        assert!(stats.enabled && stats.grows >= 1, "{stats:?}");
        assert_eq!(
            store.device_size_bytes(0),
            RESERVED_BYTES + grown_blocks * BLOCK_BYTES
        );
        // The superblock on the device says so (a newer generation).
        let dev = FileDevice::open(&path).await.unwrap();
        let sb = read_superblock(&dev).await.unwrap();
        assert_eq!(sb.block_count, grown_blocks);
        assert!(sb.generation > 1, "{sb:?}");
    });
    let len = std::fs::metadata(&path).unwrap().len();
    assert_eq!(len, RESERVED_BYTES + grown_blocks * BLOCK_BYTES);
    assert_eq!(check_reopened(&path, &locs), grown_blocks);
}

#[test]
fn a_capped_data_file_answers_no_space_at_its_cap() {
    let dir = temp_dir("grow-cap");
    let path = dir.join("data");
    let cap = RESERVED_BYTES + 10 * BLOCK_BYTES;
    let mut locs = Vec::new();
    run(async {
        let dev = FileDevice::open_or_create(&path, RESERVED_BYTES + 2 * BLOCK_BYTES)
            .await
            .unwrap();
        let (store, w) = open_writer(dev, &growing(cap, 0)).await;

        let (l, err) = fill(&w, 5000).await;
        assert!(matches!(err, Some(StoreError::NoSpace)), "{err:?}");
        assert_eq!(store.block_count(0), 10, "grown to the cap, not past it");
        assert!(l.len() > 500, "{} values before the cap", l.len());
        let stats = store.growth_stats();
        assert!(stats.refused >= 1, "{stats:?}");
        assert!(stats.last_refusal.contains("size limit"), "{stats:?}");
        locs = l;
    });
    assert_eq!(std::fs::metadata(&path).unwrap().len(), cap);
    assert_eq!(check_reopened(&path, &locs), 10);
}

#[test]
fn the_file_system_reserve_stops_growth() {
    let dir = temp_dir("grow-reserve");
    let path = dir.join("data");
    run(async {
        let dev = FileDevice::open_or_create(&path, RESERVED_BYTES + 3 * BLOCK_BYTES)
            .await
            .unwrap();
        // A reserve larger than any file system: the file never grows.
        let opts = growing(0, u64::MAX / 2);
        let (store, w) = open_writer(dev, &opts).await;

        let (_, err) = fill(&w, 5000).await;
        assert!(matches!(err, Some(StoreError::NoSpace)), "{err:?}");
        assert_eq!(store.block_count(0), 3);
        let stats = store.growth_stats();
        assert_eq!(stats.grows, 0);
        assert!(
            stats.last_refusal.contains("data-disk-reserve"),
            "{stats:?}"
        );
    });
}

/// A crash after the file was extended but before the superblock said so leaves length
/// past the geometry: the store opens, and its next growth uses that length.
#[test]
fn length_past_the_geometry_is_used_by_the_next_growth() {
    let dir = temp_dir("grow-spare");
    let path = dir.join("data");
    run(async {
        let dev = FileDevice::open_or_create(&path, RESERVED_BYTES + 4 * BLOCK_BYTES)
            .await
            .unwrap();
        let (store, _) = Store::create_or_open(vec![AnyDevice::File(dev)], &growing(0, 0), |_| {})
            .await
            .unwrap();
        assert_eq!(store.block_count(0), 4);
    });
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(RESERVED_BYTES + 40 * BLOCK_BYTES).unwrap();
    drop(f);
    let mut locs = Vec::new();
    run(async {
        let dev = FileDevice::open(&path).await.unwrap();
        // The cap is the length already there: the growth needs no new space.
        let cap = RESERVED_BYTES + 40 * BLOCK_BYTES;
        let (store, w) = open_writer(dev, &growing(cap, 0)).await;
        assert_eq!(
            store.block_count(0),
            4,
            "the superblock's geometry, not the length"
        );

        let (l, err) = fill(&w, 1500).await;
        assert!(err.is_none(), "{err:?}");
        assert!(store.block_count(0) > 4 && store.block_count(0) <= 40);
        locs = l;
    });
    check_reopened(&path, &locs);
}

/// A write of many blocks at once (a big value) that finds too few free blocks when it
/// appends gets them from growth steps taken there and then, not a refusal: the growth
/// the check before it asked for may not have happened yet. A cap still refuses.
#[test]
fn room_for_many_blocks_is_made_at_once() {
    let dir = temp_dir("grow-room");
    let path = dir.join("data");
    run(async {
        let dev = FileDevice::open_or_create(&path, RESERVED_BYTES + 4 * BLOCK_BYTES)
            .await
            .unwrap();
        let (store, _w) = open_writer(dev, &growing(0, 0)).await;
        assert_eq!(store.block_count(0), 4);
        // 40 blocks: ten times what the file has, more than one step adds.
        assert!(store.make_room_for_blocks(40));
        assert!(
            store.block_count(0) >= 44,
            "{} blocks",
            store.block_count(0)
        );
        assert!(store.has_room_for_blocks(40));
    });
    let dir = temp_dir("grow-room-cap");
    let path = dir.join("data");
    run(async {
        let cap = RESERVED_BYTES + 10 * BLOCK_BYTES;
        let dev = FileDevice::open_or_create(&path, RESERVED_BYTES + 4 * BLOCK_BYTES)
            .await
            .unwrap();
        let (store, _w) = open_writer(dev, &growing(cap, 0)).await;
        assert!(!store.make_room_for_blocks(40), "past the cap");
        assert_eq!(store.block_count(0), 10, "grown to the cap");
        assert!(store.make_room_for_blocks(3));
    });
}
