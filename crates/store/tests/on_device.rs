//! The format on devices: superblock format / open / update on RAM and file
//! devices, including corruption of one or both copies, torn updates and
//! version mismatches; and a torn record flush cut at the last intact record.

mod common;

use common::{read, run, temp_dir};
use compio::BufResult;
use skerry_store::device::{CrashSpec, RamDevice};
use skerry_store::format::{
    format_device, read_superblock, write_superblock, BlockHeader, BlockKind, BlockState,
    FormatParams, Superblock, SuperblockCopyError, SuperblockError, BLOCK_HEADER_BYTES,
    RESERVED_BYTES, SUPERBLOCK_SLOT_BYTES,
};
use skerry_store::{AlignedBuf, Device, FileDevice};

const MIB: u64 = 1 << 20;

fn small_params() -> FormatParams {
    FormatParams {
        block_size_bytes: MIB,
        ..FormatParams::single_device()
    }
}

#[test]
fn format_then_open_on_ram() {
    let dev = RamDevice::new(RESERVED_BYTES + 5 * MIB + 4096, 512);
    run(async {
        let sb = format_device(&dev, small_params()).await.unwrap();
        assert_eq!(sb.block_count, 5);
        assert_eq!(sb.generation, 1);
        assert_eq!(sb.first_block_offset_bytes, RESERVED_BYTES);
        assert_eq!(sb.device_size_bytes, dev.size_bytes());
        // Durable: survives a crash right after formatting.
        dev.control().crash(CrashSpec::lose_unsynced());
        assert_eq!(read_superblock(&dev).await.unwrap(), sb);
        assert_eq!(&read(&dev, 0, 512).await[..8], b"SKERRYDB");
        assert_eq!(&read(&dev, 4096, 512).await[..8], b"SKERRYDB");
    });
}

#[test]
fn format_then_open_on_file() {
    let dir = temp_dir("sb-file");
    let path = dir.join("data");
    let sb = run(async {
        let dev = FileDevice::open_or_create(&path, RESERVED_BYTES + 2 * MIB)
            .await
            .unwrap();
        format_device(&dev, small_params()).await.unwrap()
    });
    let again = run(async {
        let dev = FileDevice::open(&path).await.unwrap();
        read_superblock(&dev).await.unwrap()
    });
    assert_eq!(sb, again);
    assert_eq!(again.block_count, 2);
}

#[test]
fn blank_device_is_not_a_skerry_file() {
    let dev = RamDevice::new(4 * MIB, 512);
    let err = run(read_superblock(&dev)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("not a Skerry data file (bad superblock)"),
        "{err}"
    );
    assert!(matches!(
        err,
        SuperblockError::BadSuperblock {
            a: SuperblockCopyError::BadMagic,
            b: SuperblockCopyError::BadMagic
        }
    ));
}

#[test]
fn one_corrupt_copy_falls_back_to_the_other() {
    for (corrupt_at, name) in [(100u64, "A"), (4096 + 100, "B")] {
        let dev = RamDevice::new(RESERVED_BYTES + 2 * MIB, 512);
        let ctl = dev.control();
        run(async {
            let sb = format_device(&dev, small_params()).await.unwrap();
            ctl.flip_bit(corrupt_at, 0);
            assert_eq!(
                read_superblock(&dev).await.unwrap(),
                sb,
                "copy {name} corrupt"
            );
            // Both corrupt: refused.
            ctl.flip_bit(if corrupt_at < 4096 { 4096 + 8 } else { 8 }, 1);
            let err = read_superblock(&dev).await.unwrap_err();
            assert!(
                matches!(err, SuperblockError::BadSuperblock { .. }),
                "{err}"
            );
        });
    }
}

#[test]
fn updates_alternate_copies_and_survive_torn_writes() {
    let dev = RamDevice::new(RESERVED_BYTES + 2 * MIB, 512);
    let ctl = dev.control();
    run(async {
        let sb1 = format_device(&dev, small_params()).await.unwrap();
        let sb2 = Superblock {
            generation: 2,
            ..sb1
        };
        write_superblock(&dev, &sb2).await.unwrap();
        assert_eq!(read_superblock(&dev).await.unwrap(), sb2);
        let sb3 = Superblock {
            generation: 3,
            ..sb2
        };
        // Power cut before the update to copy B lands: the old copy wins.
        ctl.set_crash_point(0);
        let _ = write_superblock(&dev, &sb3).await;
        ctl.crash(CrashSpec::lose_unsynced());
        assert_eq!(read_superblock(&dev).await.unwrap(), sb2);

        // A half-written copy (garbage in its first sector) loses to the other.
        let mut garbage = AlignedBuf::zeroed(512, 512);
        garbage.fill(0xFF);
        let BufResult(res, _) = dev.write_at(garbage, sb3.slot_offset_bytes()).await;
        res.unwrap();
        dev.sync().await.unwrap();
        assert_eq!(read_superblock(&dev).await.unwrap(), sb2);
        write_superblock(&dev, &sb3).await.unwrap();
        assert_eq!(read_superblock(&dev).await.unwrap(), sb3);
    });
}

#[test]
fn unsupported_version_is_refused_and_not_overwritten() {
    let dev = RamDevice::new(RESERVED_BYTES + 2 * MIB, 512);
    let ctl = dev.control();
    run(async {
        format_device(&dev, small_params()).await.unwrap();
        // Rewrite copy A as "version 9" with a correct CRC.
        let mut slot = read(&dev, 0, SUPERBLOCK_SLOT_BYTES).await;
        slot[8..12].copy_from_slice(&9u32.to_le_bytes());
        let crc = crc32c::crc32c(&slot[..124]);
        slot[124..128].copy_from_slice(&crc.to_le_bytes());
        let mut buf = AlignedBuf::zeroed(SUPERBLOCK_SLOT_BYTES, 512);
        buf.copy_from_slice(&slot);
        let BufResult(res, _) = dev.write_at(buf, 0).await;
        res.unwrap();
        dev.sync().await.unwrap();
        let before = ctl.durable_image();
        let err = read_superblock(&dev).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "data file format version 9 is not supported by this build (supports 2)"
        );
        assert_eq!(ctl.durable_image(), before, "open must not write");
    });
}

#[test]
fn device_smaller_than_formatted_is_refused() {
    let dev = RamDevice::new(RESERVED_BYTES + 2 * MIB, 512);
    let ctl = dev.control();
    run(format_device(&dev, small_params())).unwrap();
    let mut image = ctl.durable_image();
    image.truncate((RESERVED_BYTES + MIB) as usize);
    let shrunk = RamDevice::from_image(image, 512);
    let err = run(read_superblock(&shrunk)).unwrap_err();
    assert!(
        matches!(err, SuperblockError::DeviceTooSmall { .. }),
        "{err}"
    );
}

#[test]
fn format_rejects_bad_requests() {
    let tiny = RamDevice::new(RESERVED_BYTES + 512 * 1024, 512);
    let err = run(format_device(&tiny, small_params())).unwrap_err();
    assert!(
        matches!(err, SuperblockError::DeviceTooSmall { .. }),
        "{err}"
    );
    let dev = RamDevice::new(RESERVED_BYTES + 2 * MIB, 512);
    let bad = FormatParams {
        block_size_bytes: 3 * MIB,
        ..small_params()
    };
    assert!(matches!(
        run(format_device(&dev, bad)).unwrap_err(),
        SuperblockError::InvalidParams(_)
    ));
    let wide = RamDevice::new(RESERVED_BYTES + 2 * MIB, 8192);
    assert!(matches!(
        run(format_device(&wide, small_params())).unwrap_err(),
        SuperblockError::UnsupportedAlignment(8192)
    ));
}

#[test]
fn block_headers_from_an_earlier_format_are_foreign() {
    let dev = RamDevice::new(RESERVED_BYTES + 2 * MIB, 512);
    run(async {
        let old = format_device(&dev, small_params()).await.unwrap();
        let header = BlockHeader {
            kind: BlockKind::Data,
            state: BlockState::Open,
            owner_worker: 0,
            block_index: 1,
            committed_len_bytes: 0,
            block_seq: 1,
            first_mutation_seq: 0,
            last_mutation_seq: 0,
            device_id: old.device_id,
            summary_len_bytes: 0,
            summary_crc: 0,
        };
        let mut buf = AlignedBuf::zeroed(BLOCK_HEADER_BYTES, 512);
        header.encode(&mut buf);
        let at = old.block_offset_bytes(1);
        let BufResult(res, _) = dev.write_at(buf, at).await;
        res.unwrap();
        let new = format_device(&dev, small_params()).await.unwrap();
        let bytes = read(&dev, at, BLOCK_HEADER_BYTES).await;
        let decoded = BlockHeader::decode(&bytes).unwrap().unwrap();
        assert_eq!(decoded.check_placement(&old, 1), Ok(()));
        assert!(decoded.check_placement(&new, 1).is_err());
    });
}

#[test]
fn torn_record_flush_is_cut_at_the_last_intact_record() {
    use skerry_store::format::{
        encode_record, encoded_record_len, RecordIter, RecordKind, RecordMeta, RecordStop,
    };
    let dev = RamDevice::new(RESERVED_BYTES + 2 * MIB, 512);
    let ctl = dev.control();
    run(async {
        let sb = format_device(&dev, small_params()).await.unwrap();
        let block_seq = 1;
        let records_at = sb.block_offset_bytes(0) + BLOCK_HEADER_BYTES as u64;
        // Flush 1 (synced): 10 records of 100-byte values.
        // Flush 2 (unsynced): 20 more records, torn after its first sector.
        let mut staged = Vec::new();
        let mut ends = Vec::new();
        for i in 0..30u64 {
            let meta = RecordMeta {
                kind: RecordKind::Value,
                value_type: 0,
                flags: 0,
                mutation_seq: i + 1,
                expiry_ms: 0,
            };
            let key = format!("key:{i}");
            let at = staged.len();
            staged.resize(at + encoded_record_len(key.len(), 100), 0);
            encode_record(
                &mut staged[at..],
                block_seq,
                &meta,
                key.as_bytes(),
                &[i as u8; 100],
            );
            ends.push(staged.len());
        }
        let flush1 = ends[9].next_multiple_of(512);
        let mut buf = AlignedBuf::zeroed(flush1, 512);
        buf[..ends[9]].copy_from_slice(&staged[..ends[9]]);
        let BufResult(res, _) = dev.write_at(buf, records_at).await;
        res.unwrap();
        dev.sync().await.unwrap();
        // Flush 2 rewrites the partial last sector and continues.
        let start = (ends[9] / 512) * 512;
        let len = (staged.len() - start).next_multiple_of(512);
        let mut buf = AlignedBuf::zeroed(len, 512);
        buf[..staged.len() - start].copy_from_slice(&staged[start..]);
        let BufResult(res, _) = dev.write_at(buf, records_at + start as u64).await;
        res.unwrap();
        ctl.crash(CrashSpec::torn_last(1, 1024));

        let area = read(&dev, records_at, 8192).await;
        let mut it = RecordIter::new(&area, block_seq);
        let got: Vec<u64> = it.by_ref().map(|(_, r)| r.meta.mutation_seq).collect();
        let durable_end = start + 1024;
        let intact = ends.iter().take_while(|&&e| e <= durable_end).count();
        assert!(intact > 10, "the torn prefix holds some new records");
        assert_eq!(got, (1..=intact as u64).collect::<Vec<_>>());
        assert_eq!(it.offset_bytes(), ends[intact - 1]);
        assert!(matches!(it.stop(), Some(RecordStop::Error(_))));
    });
}
