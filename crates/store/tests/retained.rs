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
        w.set_retained_image_bytes(2 * BLOCK_BYTES as usize);
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
                if let Some(r) = staged {
                    assert_eq!(r.value(), v.as_slice());
                }
                assert_eq!(w.read(l).await.unwrap().value(), v.as_slice(), "block {n}");
            }
        }
        // No budget: every sealed block's records come from the device.
        w.set_retained_image_bytes(0);
        assert_eq!(w.retained_image_bytes(), 0);
        for (n, &b) in blocks.iter().enumerate().take(4) {
            for (v, l) in in_block(b) {
                assert!(w.staged(l).is_none(), "block {n}");
                assert_eq!(w.read(l).await.unwrap().value(), v.as_slice());
            }
        }
    });
}
