//! Retained block images (decision 0033): a writer given a budget keeps the images of its
//! durable blocks, newest first, and serves their records from RAM; past the budget, and
//! once the budget is taken away, the records are read from the device again.

mod common;

use common::run;
use common::small::{fresh_writer, ram, val, value, BLOCK_BYTES};
use skerry_store::Location;

#[test]
fn the_blocks_written_last_are_served_from_ram_within_the_budget() {
    let dev = ram(16);
    let ctl = dev.control();
    run(async {
        let (_store, w) = fresh_writer(&ctl).await;
        w.set_retained_image_budget(2 * BLOCK_BYTES as usize, 2 * BLOCK_BYTES as usize);
        // Four blocks sealed, a fifth open.
        let mut acked: Vec<(Vec<u8>, Location)> = Vec::new();
        let mut blocks = Vec::new();
        let mut i = 0u16;
        while blocks.len() < 5 {
            let v = val(i as u8, 3000);
            let l = w
                .append(value(w.next_seq()), format!("k{i}").as_bytes(), &v)
                .unwrap();
            if blocks.last() != Some(&l.block_id()) {
                blocks.push(l.block_id());
            }
            acked.push((v, l));
            i += 1;
        }
        w.sync().await.unwrap();
        assert_eq!(w.retained_image_bytes(), 2 * BLOCK_BYTES as usize);
        let in_block = |b| acked.iter().filter(move |(_, l)| l.block_id() == b);
        for (n, &b) in blocks.iter().enumerate() {
            // Blocks 0 and 1: given up; 2 and 3: retained; 4: open.
            for (v, l) in in_block(b) {
                let staged = w.staged(l);
                assert_eq!(staged.is_some(), n >= 2, "block {n}");
                assert_eq!(w.staged_value(l).is_some(), n >= 2, "block {n}");
                if let Some(sv) = w.staged_value(l) {
                    assert_eq!(&sv, v);
                }
                if let Some(r) = staged {
                    assert_eq!(r.value(), v.as_slice());
                }
                assert_eq!(w.read(l).await.unwrap().value(), v.as_slice(), "block {n}");
            }
        }
        // No budget: every sealed block's records come from the device.
        w.set_retained_image_budget(0, 0);
        assert_eq!(w.retained_image_bytes(), 0);
        for (n, &b) in blocks.iter().enumerate().take(4) {
            for (v, l) in in_block(b) {
                assert!(w.staged(l).is_none(), "block {n}");
                assert_eq!(w.read(l).await.unwrap().value(), v.as_slice());
            }
        }
    });
}

/// Past the floor, images are kept only while they hold one live byte in four; over the
/// maximum, the least live go first (decision 0034).
#[test]
fn images_past_the_floor_give_way_to_liveness_and_the_maximum() {
    let dev = ram(16);
    let ctl = dev.control();
    run(async {
        let (_store, w) = fresh_writer(&ctl).await;
        let block = BLOCK_BYTES as usize;
        w.set_retained_image_budget(block, 8 * block);
        let mut blocks: Vec<Vec<Location>> = Vec::new();
        let mut i = 0u32;
        // Appends until `n` blocks are sealed (and one more is open).
        let fill = |blocks: &mut Vec<Vec<Location>>, i: &mut u32, n: usize| {
            while blocks.len() < n + 1 {
                let v = val(*i as u8, 3000);
                let l = w
                    .append(value(w.next_seq()), format!("k{i}").as_bytes(), &v)
                    .unwrap();
                if blocks.last().and_then(|b| b.last()).map(|l| l.block_id()) != Some(l.block_id())
                {
                    blocks.push(Vec::new());
                }
                blocks.last_mut().unwrap().push(l);
                *i += 1;
            }
        };
        fill(&mut blocks, &mut i, 4);
        w.sync().await.unwrap();
        // Four live blocks: all kept (the maximum is eight).
        assert_eq!(w.retained_image_bytes(), 4 * block);
        // Every record of blocks 0 to 3 overwritten or deleted.
        for b in &blocks[..4] {
            for &l in b {
                w.release(l);
            }
        }
        w.sync().await.unwrap();
        // Block 4 is sealed: five images, one of them live (its records take a little less
        // than the block). One block came, so one dead image goes: the oldest.
        fill(&mut blocks, &mut i, 5);
        w.sync().await.unwrap();
        assert_eq!(w.retained_image_bytes(), 4 * block);
        for (n, b) in blocks.iter().enumerate().take(5) {
            assert_eq!(w.staged(&b[0]).is_some(), n >= 1, "block {n}");
        }
        // The budget's periodic call gives up more, until at most four bytes per live byte
        // remain: three images.
        w.set_retained_image_budget(block, 8 * block);
        assert_eq!(w.retained_image_bytes(), 3 * block);
        for (n, b) in blocks.iter().enumerate().take(5) {
            assert_eq!(w.staged(&b[0]).is_some(), n >= 2, "block {n}");
        }
        // A maximum of two blocks: the dead go before the live one.
        w.set_retained_image_budget(block, 2 * block);
        assert_eq!(w.retained_image_bytes(), 2 * block);
        assert!(w.staged(&blocks[4][0]).is_some(), "the live image stays");
        assert!(
            w.staged(&blocks[2][0]).is_none(),
            "the older dead image goes"
        );
        assert!(w.staged(&blocks[3][0]).is_some());
        for b in &blocks[4..] {
            for l in b {
                assert!(w.read(l).await.is_ok());
            }
        }
    });
}
