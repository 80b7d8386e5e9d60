//! An idle writer's open block image: once every record in it is durable, [`Writer::tick`]
//! hands its pages back (the records are then read from the device), and the block goes on
//! taking appends, is sealed and recovers exactly as if nothing had been released.

mod common;

use common::run;
use common::small::{assert_recovers_exactly, fresh_writer, ram, val, value};
use skerry_store::device::CrashSpec;
use skerry_store::Location;

#[test]
fn idle_writer_reads_durable_records_from_the_device_and_keeps_appending() {
    let dev = ram(8);
    let ctl = dev.control();
    // (key, value, location) of every append, in order.
    let mut acked: Vec<(String, Vec<u8>, Location)> = Vec::new();
    run(async {
        let (_store, w) = fresh_writer(&ctl).await;
        for i in 0..6u8 {
            let k = format!("a{i}");
            let v = val(i, 1500 + usize::from(i) * 7);
            let l = w.append(value(w.next_seq()), k.as_bytes(), &v).unwrap();
            acked.push((k, v, l));
        }
        // The first tick makes them durable; the writer was not idle yet.
        w.tick().await.unwrap();
        assert!(
            acked.iter().all(|(_, _, l)| w.staged(l).is_some()),
            "a busy writer serves its open block from RAM"
        );
        // The second tick sees no append since the first: the image is released.
        w.tick().await.unwrap();
        for (k, v, l) in &acked {
            assert!(w.staged(l).is_none(), "{k} still served from the image");
            assert_eq!(w.read(l).await.unwrap().value(), v.as_slice(), "{k}");
        }
        // Appends continue right after the released records, in the same block, and the
        // partial last sector they share with the released records was kept.
        let block = acked[0].2.block_id();
        let end = acked[5].2.offset_bytes + acked[5].2.len_bytes;
        let mut first_new = true;
        let mut i = 0u8;
        // Fill past this block so it is sealed (header and summary written after the
        // release) and a second block opens.
        while acked.last().unwrap().2.block_id() == block {
            let k = format!("b{i}");
            let v = val(100 + i, 900 + usize::from(i % 13) * 11);
            let l = w.append(value(w.next_seq()), k.as_bytes(), &v).unwrap();
            if first_new {
                assert_eq!((l.block_id(), l.offset_bytes), (block, end));
                first_new = false;
            }
            acked.push((k, v, l));
            i += 1;
        }
        w.sync().await.unwrap();
        for (k, v, l) in &acked {
            assert_eq!(w.read(l).await.unwrap().value(), v.as_slice(), "{k}");
        }
        // Idle again with the second block open: released too, still readable.
        w.tick().await.unwrap();
        w.tick().await.unwrap();
        for (k, v, l) in &acked {
            assert!(w.staged(l).is_none(), "{k}");
            assert_eq!(w.read(l).await.unwrap().value(), v.as_slice(), "{k}");
        }
    });
    ctl.crash(CrashSpec::lose_unsynced());
    assert_recovers_exactly(&ctl, &acked);
}
