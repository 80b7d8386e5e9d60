//! A block's staging image is reused for a later block without being zeroed (decision
//! 0021): the old block's bytes stay in it past the new records. What reaches the device
//! must not show them: the bytes after the last record in its sector are zeros, the gap
//! before a sealed block's summary reads as the end of its records, and recovery finds
//! exactly the records appended, with no damage reported.

mod common;

use common::run;
use common::small::{assert_recovers_exactly, fresh_writer, ram, value, BLOCK_BYTES};
use skerry_store::device::CrashSpec;
use skerry_store::format::{BlockHeader, BLOCK_HEADER_BYTES};
use skerry_store::{BlockId, Location};

/// Fills a value with a byte that never appears in a record header of these tests, so
/// stale bytes are easy to spot.
const STALE: u8 = 0xAB;

#[test]
fn a_recycled_image_never_writes_its_old_bytes() {
    let dev = ram(16);
    let ctl = dev.control();
    let mut acked: Vec<(String, Vec<u8>, Location)> = Vec::new();
    // (block, used bytes) of the block that reused an image, while it was open.
    let mut reused: Option<BlockId> = None;
    run(async {
        let (store, w) = fresh_writer(&ctl).await;
        let append = |acked: &mut Vec<(String, Vec<u8>, Location)>, v: Vec<u8>| {
            let k = format!("k{}", acked.len());
            let l = w.append(value(w.next_seq()), k.as_bytes(), &v).unwrap();
            acked.push((k, v, l));
            l.block_id()
        };
        // Block 1 full of STALE bytes, sealed and made durable: its image becomes the
        // writer's spare.
        let first = append(&mut acked, vec![STALE; 3000]);
        while append(&mut acked, vec![STALE; 3000]) == first {}
        w.sync().await.unwrap();
        // Block 2 also full of STALE bytes; block 3 opens on block 1's old image.
        let second = acked.last().unwrap().2.block_id();
        while append(&mut acked, vec![STALE; 2900]) == second {}
        let third = acked.last().unwrap().2.block_id();
        reused = Some(third);
        // A few small records in block 3: they end well before block 1's old bytes do.
        for i in 0..5u8 {
            append(&mut acked, vec![i + 1; 37 + usize::from(i)]);
        }
        w.sync().await.unwrap();
        let last = acked.last().unwrap().2;
        assert_eq!(last.block_id(), third);
        let end = (store.block_offset_bytes(third) + u64::from(last.offset_bytes + last.len_bytes))
            as usize;
        let image = ctl.durable_image();
        let sector_end = end.next_multiple_of(512);
        assert!(
            image[end..sector_end].iter().all(|&b| b == 0),
            "the open block's last sector carries stale bytes past its records"
        );
        // Seal block 3 with small records (it gets a summary after a zero gap), then
        // open block 4.
        let mut i = 0usize;
        while append(&mut acked, vec![(i % 200) as u8 + 1; 300 + i % 50]) == third {
            i += 1;
        }
        w.sync().await.unwrap();
        let image = ctl.durable_image();
        let start = store.block_offset_bytes(third) as usize;
        let header = BlockHeader::decode(&image[start..start + BLOCK_HEADER_BYTES])
            .expect("header")
            .expect("a used block");
        assert!(header.summary_len_bytes > 0, "block 3 has a summary");
        let records_end = start + BLOCK_HEADER_BYTES + header.committed_len_bytes as usize;
        assert!(
            image[records_end..records_end + 32].iter().all(|&b| b == 0),
            "the summary gap holds stale bytes"
        );
        assert!(records_end < start + BLOCK_BYTES as usize);
    });
    assert!(reused.is_some());
    ctl.crash(CrashSpec::lose_unsynced());
    assert_recovers_exactly(&ctl, &acked);
}
