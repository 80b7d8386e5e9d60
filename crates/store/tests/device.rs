//! Device tests: the O_DIRECT file device on a temp file, and the RAM device's
//! fault injection.

mod common;

use std::rc::Rc;

use common::{filled, read, run, temp_dir, write};
use compio::BufResult;
use skerry_store::device::{CrashSpec, Fault, FaultOp, RamDevice};
use skerry_store::{AlignedBuf, AnyDevice, Device, FileDevice};

const MIB: u64 = 1 << 20;

// ---------------------------------------------------------------- file device

#[test]
fn file_device_round_trip_and_reopen() {
    let dir = temp_dir("file-rt");
    let path = dir.join("data");
    run(async {
        let dev = FileDevice::open_or_create(&path, 4 * MIB).await.unwrap();
        assert_eq!(dev.size_bytes(), 4 * MIB);
        assert!(!dev.is_block_device());
        let align = dev.align_bytes();
        assert!(align.is_power_of_two() && align >= 512, "alignment {align}");
        // The preallocated file reads as zeros.
        assert!(read(&dev, 0, 8192).await.iter().all(|&b| b == 0));

        // Distinct patterns at a few aligned places, including the last sector.
        let places = [0, align as u64, 3 * MIB, 4 * MIB - align as u64];
        for (i, &at) in places.iter().enumerate() {
            let mut buf = AlignedBuf::zeroed(align, align);
            for (j, b) in buf.iter_mut().enumerate() {
                *b = (i * 31 + j) as u8;
            }
            let BufResult(res, buf) = dev.write_at(buf, at).await;
            assert_eq!(res.unwrap(), align);
            assert_eq!(buf.len_bytes(), align, "buffer comes back intact");
        }
        dev.sync().await.unwrap();
        for (i, &at) in places.iter().enumerate() {
            let got = read(&dev, at, align).await;
            assert!(got
                .iter()
                .enumerate()
                .all(|(j, &b)| b == (i * 31 + j) as u8));
        }

        // A large multi-sector write and read.
        write(&dev, MIB, MIB as usize, 0x5A).await;
        dev.sync().await.unwrap();
        assert!(read(&dev, MIB, MIB as usize)
            .await
            .iter()
            .all(|&b| b == 0x5A));
        drop(dev);

        // Reopen: same size, data still there.
        let dev = FileDevice::open(&path).await.unwrap();
        assert_eq!(dev.size_bytes(), 4 * MIB);
        assert!(read(&dev, MIB, 4096).await.iter().all(|&b| b == 0x5A));
        assert_eq!(dev.path(), path.as_path());
    });
}

#[test]
fn file_device_read_only_up_to_len_and_concurrent_io() {
    let dir = temp_dir("file-conc");
    let path = dir.join("data");
    run(async {
        let dev = Rc::new(AnyDevice::from(
            FileDevice::open_or_create(&path, 2 * MIB).await.unwrap(),
        ));
        let align = dev.align_bytes();
        // Many writes in flight at once on the ring.
        let mut tasks = Vec::new();
        for i in 0..32u64 {
            let dev = dev.clone();
            tasks.push(compio::runtime::spawn(async move {
                write(&*dev, i * 4096, 4096, i as u8 + 1).await;
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        dev.sync().await.unwrap();
        // A read asks for `len_bytes`, not the whole capacity: the bytes past
        // the length are left alone.
        let mut buf = AlignedBuf::zeroed(4 * align, align);
        buf.fill(0xEE);
        buf.set_len_bytes(align);
        let BufResult(res, buf) = dev.read_at(buf, 4096).await;
        assert_eq!(res.unwrap(), align);
        assert_eq!(buf.len_bytes(), align);
        assert!(buf.iter().all(|&b| b == 2));
        assert!(buf.full()[align..].iter().all(|&b| b == 0xEE));
        for i in 0..32u64 {
            assert!(read(&*dev, i * 4096, 4096)
                .await
                .iter()
                .all(|&b| b == i as u8 + 1));
        }
    });
}

#[test]
fn file_device_existing_file_is_not_shrunk_and_small_file_is_extended() {
    let dir = temp_dir("file-size");
    let path = dir.join("data");
    std::fs::write(&path, vec![7u8; 8192]).unwrap();
    run(async {
        let dev = FileDevice::open_or_create(&path, MIB).await.unwrap();
        assert_eq!(dev.size_bytes(), MIB);
        assert!(read(&dev, 0, 4096).await.iter().all(|&b| b == 7));
        drop(dev);
        let dev = FileDevice::open_or_create(&path, 64 << 10).await.unwrap();
        assert_eq!(dev.size_bytes(), MIB);
    });
    // Preallocated, not sparse.
    let meta = std::fs::metadata(&path).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert!(meta.blocks() * 512 >= MIB);
}

#[test]
fn file_device_open_missing_file_fails() {
    let dir = temp_dir("file-missing");
    let err = run(FileDevice::open(dir.join("nope"))).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    assert!(err.to_string().contains("nope"), "{err}");
}

#[test]
fn file_device_size_is_rounded_down_to_alignment() {
    let dir = temp_dir("file-round");
    let path = dir.join("data");
    std::fs::write(&path, vec![0u8; 8192 + 100]).unwrap();
    let dev = run(FileDevice::open(&path)).unwrap();
    assert_eq!(dev.size_bytes() % dev.align_bytes() as u64, 0);
    assert!(dev.size_bytes() >= 8192 && dev.size_bytes() <= 8192 + 100);
}

fn misaligned(op: &'static str) {
    let dir = temp_dir("file-misaligned");
    let path = dir.join("data");
    run(async move {
        let dev = FileDevice::open_or_create(&path, MIB).await.unwrap();
        let align = dev.align_bytes();
        let (buf, offset) = match op {
            "offset" => (filled(&dev, align, 1), 100),
            "length" => {
                let mut buf = filled(&dev, 2 * align, 1);
                buf.set_len_bytes(align + 8);
                (buf, 0)
            }
            "end" => (filled(&dev, align, 1), MIB),
            _ => unreachable!(),
        };
        let _ = dev.write_at(buf, offset).await;
    });
}

#[test]
#[should_panic(expected = "offset 100 is not a multiple")]
fn file_device_misaligned_offset_panics() {
    misaligned("offset");
}

#[test]
#[should_panic(expected = "is not a non-zero multiple")]
fn file_device_misaligned_length_panics() {
    misaligned("length");
}

#[test]
#[should_panic(expected = "buffer memory alignment 512 is below the device alignment 4096")]
fn underaligned_buffer_memory_panics() {
    let dev = RamDevice::new(MIB, 4096);
    run(async {
        let _ = dev.write_at(AlignedBuf::zeroed(4096, 512), 0).await;
    });
}

#[test]
#[should_panic(expected = "past the device end")]
fn file_device_io_past_end_panics() {
    misaligned("end");
}

#[test]
fn file_device_alignment_matches_statx() {
    let dir = temp_dir("file-statx");
    let path = dir.join("data");
    let dev = run(FileDevice::open_or_create(&path, MIB)).unwrap();
    // SAFETY (test): plain statx on a valid path into a zeroed struct.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            0,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    assert_eq!(rc, 0);
    if stx.stx_mask & libc::STATX_DIOALIGN != 0 && stx.stx_dio_offset_align != 0 {
        let expected = (stx.stx_dio_offset_align.max(stx.stx_dio_mem_align) as usize).max(512);
        assert_eq!(dev.align_bytes(), expected);
    } else {
        assert_eq!(dev.align_bytes(), 4096);
    }
}

// ----------------------------------------------------------------- RAM device

#[test]
fn ram_crash_discards_unsynced_writes() {
    let dev = RamDevice::new(MIB, 512);
    let ctl = dev.control();
    run(async {
        write(&dev, 0, 4096, 1).await;
        dev.sync().await.unwrap();
        write(&dev, 0, 512, 2).await;
        write(&dev, 8192, 1024, 3).await;
        // Visible before the crash.
        assert_eq!(read(&dev, 0, 512).await, vec![2; 512]);
        assert_eq!(ctl.unsynced_writes(), vec![(0, 512), (8192, 1024)]);
        ctl.crash(CrashSpec::lose_unsynced());
        let dev = ctl.device();
        assert_eq!(read(&dev, 0, 4096).await, vec![1; 4096]);
        assert_eq!(read(&dev, 8192, 1024).await, vec![0; 1024]);
        assert!(ctl.unsynced_writes().is_empty());
    });
    assert_eq!(ctl.stats().crashes, 1);
}

#[test]
fn ram_crash_keeps_selected_writes_and_a_torn_prefix() {
    let dev = RamDevice::new(MIB, 512);
    let ctl = dev.control();
    run(async {
        write(&dev, 0, 1024, 1).await;
        write(&dev, 4096, 4096, 2).await;
        write(&dev, 16384, 1024, 3).await;
        let pending = ctl.unsynced_writes().len();
        assert_eq!(pending, 3);
        // First two survive; the last is torn after one sector.
        ctl.crash(CrashSpec::torn_last(pending, 512));
        assert_eq!(read(&dev, 0, 1024).await, vec![1; 1024]);
        assert_eq!(read(&dev, 4096, 4096).await, vec![2; 4096]);
        let mut expect = vec![3; 512];
        expect.extend_from_slice(&[0; 512]);
        assert_eq!(read(&dev, 16384, 1024).await, expect);

        // Tear a middle write: the writes after it are lost.
        write(&dev, 0, 2048, 9).await;
        write(&dev, 4096, 512, 9).await;
        ctl.crash(CrashSpec {
            keep_writes: 0,
            torn_bytes: 1536,
        });
        // 1024..1536 was never durable before; 1536..2048 was never written.
        let mut expect = vec![9; 1536];
        expect.extend_from_slice(&[0; 512]);
        assert_eq!(read(&dev, 0, 2048).await, expect);
        assert_eq!(read(&dev, 4096, 512).await, vec![2; 512]);
    });
}

#[test]
#[should_panic(expected = "sector boundary")]
fn ram_torn_write_must_cut_at_sector_boundary() {
    let dev = RamDevice::new(MIB, 512);
    run(write(&dev, 0, 1024, 1));
    dev.control().crash(CrashSpec {
        keep_writes: 0,
        torn_bytes: 100,
    });
}

#[test]
fn ram_crash_point_drops_later_writes() {
    let dev = RamDevice::new(MIB, 512);
    let ctl = dev.control();
    ctl.set_crash_point(2);
    run(async {
        write(&dev, 0, 512, 1).await;
        write(&dev, 512, 512, 2).await;
        // Acknowledged, but the power is gone.
        write(&dev, 1024, 512, 3).await;
        dev.sync().await.unwrap();
        assert_eq!(read(&dev, 1024, 512).await, vec![0; 512]);
        // The sync after the power cut made nothing durable.
        assert_eq!(ctl.durable_image()[..1024], [0; 1024]);
        ctl.crash(CrashSpec {
            keep_writes: 1,
            torn_bytes: 0,
        });
        assert_eq!(
            read(&dev, 0, 1536).await,
            [vec![1; 512], vec![0; 1024]].concat()
        );
        // Power is back: writes apply again.
        write(&dev, 1024, 512, 4).await;
        dev.sync().await.unwrap();
        assert_eq!(ctl.durable_image()[1024..1536], [4; 512]);
    });
    let stats = ctl.stats();
    assert_eq!(stats.dropped_writes, 1);
    assert_eq!(stats.writes, 4);
}

#[test]
fn ram_bit_flip_is_visible_on_read_and_survives_sync() {
    let dev = RamDevice::new(MIB, 512);
    let ctl = dev.control();
    run(async {
        write(&dev, 0, 512, 0).await;
        ctl.flip_bit(10, 3);
        assert_eq!(read(&dev, 0, 512).await[10], 8);
        dev.sync().await.unwrap();
        assert_eq!(ctl.durable_image()[10], 8);
        ctl.flip_bit(4096, 7);
        ctl.crash(CrashSpec::lose_unsynced());
        assert_eq!(read(&dev, 4096, 512).await[0], 0x80);
    });
}

#[test]
fn ram_injected_errors_surface_and_leave_no_trace() {
    let dev = RamDevice::new(MIB, 512);
    let ctl = dev.control();
    run(async {
        ctl.inject(Fault::enospc(FaultOp::Write));
        let BufResult(res, buf) = dev.write_at(filled(&dev, 512, 1), 0).await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::ENOSPC));
        assert_eq!(buf.len_bytes(), 512, "buffer handed back on error");
        assert_eq!(
            read(&dev, 0, 512).await,
            vec![0; 512],
            "failed write not applied"
        );
        // Once only.
        write(&dev, 0, 512, 1).await;

        // EIO on the third read from now, once.
        ctl.inject(Fault::eio(FaultOp::Read).after(2));
        read(&dev, 0, 512).await;
        read(&dev, 0, 512).await;
        let BufResult(res, _) = dev.read_at(AlignedBuf::zeroed(512, 512), 0).await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EIO));
        read(&dev, 0, 512).await;

        // Persistent sync failure from the second sync on: nothing durable.
        ctl.inject(Fault::eio(FaultOp::Sync).after(1).persistent());
        dev.sync().await.unwrap();
        write(&dev, 512, 512, 2).await;
        for _ in 0..3 {
            assert_eq!(
                dev.sync().await.unwrap_err().raw_os_error(),
                Some(libc::EIO)
            );
        }
        assert_eq!(ctl.durable_image()[512], 0);
        ctl.clear_faults();
        dev.sync().await.unwrap();
        assert_eq!(ctl.durable_image()[512], 2);
    });
    assert_eq!(ctl.stats().injected_errors, 5);
}

#[test]
fn ram_device_shared_across_threads_and_images() {
    let dev = RamDevice::new(MIB, 4096);
    let ctl = dev.control();
    run(async {
        write(&dev, 0, 4096, 7).await;
        dev.sync().await.unwrap();
    });
    let other = ctl.device();
    std::thread::spawn(move || {
        run(async move {
            assert_eq!(read(&other, 0, 4096).await, vec![7; 4096]);
            write(&other, 4096, 4096, 8).await;
        })
    })
    .join()
    .unwrap();
    assert_eq!(ctl.visible_image()[4096], 8);
    assert_eq!(ctl.durable_image()[4096], 0);
    // Snapshot and restore.
    let image = ctl.durable_image();
    let copy = RamDevice::from_image(image, 4096);
    assert_eq!(copy.size_bytes(), MIB);
    assert_eq!(copy.align_bytes(), 4096);
    run(async {
        assert_eq!(read(&copy, 0, 4096).await, vec![7; 4096]);
        assert_eq!(read(&copy, 4096, 4096).await, vec![0; 4096]);
    });
}

#[test]
#[should_panic(expected = "not a multiple of the alignment 4096")]
fn ram_device_asserts_alignment() {
    let dev = RamDevice::new(MIB, 4096);
    run(async {
        let _ = dev.read_at(AlignedBuf::zeroed(4096, 4096), 512).await;
    });
}
