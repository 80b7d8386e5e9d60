//! Multi-record commands are whole or absent after a crash: records flagged JOIN are
//! delivered by recovery only once their command's end marker is on the device, also when
//! the command straddles two blocks, while other writers' blocks come in between, and
//! across restarts (a later run's records never complete an earlier run's command).

mod common;

use common::run;
use skerry_store::device::{CrashSpec, RamControl, RamDevice};
use skerry_store::format::{RecordKind, RecordMeta, RECORD_FLAG_JOIN, RESERVED_BYTES};
use skerry_store::{Durability, Recovery, Store, StoreOptions, Writer};

const BLOCK_BYTES: u64 = 64 << 10;

fn opts() -> StoreOptions {
    StoreOptions {
        block_size_bytes: BLOCK_BYTES,
        ..StoreOptions::default()
    }
}

fn meta(kind: RecordKind, flags: u16, seq: u64) -> RecordMeta {
    RecordMeta {
        kind,
        value_type: 0,
        flags,
        mutation_seq: seq,
        expiry_ms: 0,
    }
}

/// Opens the store on `ctl`'s device; returns it, the keys delivered in order, and the
/// recovery report.
async fn open(ctl: &RamControl) -> (Store, Vec<Vec<u8>>, Recovery) {
    let mut keys = Vec::new();
    let (store, rec) = Store::create_or_open(vec![ctl.device().into()], &opts(), |r| {
        assert_ne!(
            r.meta.kind,
            RecordKind::CommandEnd,
            "markers are not delivered"
        );
        keys.push(r.key.to_vec());
    })
    .await
    .expect("open");
    store.recovery_done();
    (store, keys, rec)
}

fn put(w: &Writer, key: &str, join: bool, value_bytes: usize) {
    let flags = if join { RECORD_FLAG_JOIN } else { 0 };
    let m = meta(RecordKind::Value, flags, w.next_seq());
    w.append(m, key.as_bytes(), &vec![b'v'; value_bytes])
        .expect("append");
}

fn end(w: &Writer) {
    let loc = w
        .append(meta(RecordKind::CommandEnd, 0, w.next_seq()), &[], &[])
        .expect("marker");
    w.release(loc);
}

fn keys(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|k| k.as_bytes().to_vec()).collect()
}

#[test]
fn a_command_straddling_blocks_is_delivered_whole() {
    run(async {
        let dev = RamDevice::new(RESERVED_BYTES + 16 * BLOCK_BYTES, 512);
        let ctl = dev.control();
        let (store, _, rec) = open(&ctl).await;
        let w0 = Writer::open(store.clone(), 0, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        let w1 = Writer::open(store.clone(), 1, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        put(&w0, "a", false, 100);
        // Three 30 KiB records: the command crosses into worker 0's next block.
        for k in ["g1", "g2", "g3"] {
            put(&w0, k, true, 30 << 10);
            put(&w1, &format!("other-{k}"), false, 20 << 10);
        }
        end(&w0);
        put(&w0, "b", false, 100);
        w0.commit().await.unwrap();
        w1.commit().await.unwrap();
        drop((w0, w1, store));
        ctl.crash(CrashSpec::lose_unsynced());
        let (_, got, rec) = open(&ctl).await;
        assert_eq!(rec.partial_commands_dropped, 0);
        let mine: Vec<Vec<u8>> = got
            .into_iter()
            .filter(|k| !k.starts_with(b"other-"))
            .collect();
        assert_eq!(mine, keys(&["a", "g1", "g2", "g3", "b"]));
    });
}

#[test]
fn a_command_without_its_marker_is_dropped_whole_across_restarts() {
    run(async {
        let dev = RamDevice::new(RESERVED_BYTES + 16 * BLOCK_BYTES, 512);
        let ctl = dev.control();
        let (store, _, rec) = open(&ctl).await;
        let w = Writer::open(store.clone(), 0, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        put(&w, "a", false, 100);
        // A two-record command whose second record crosses the block boundary, and the
        // power goes before its marker.
        put(&w, "g1", true, 40 << 10);
        put(&w, "g2", true, 40 << 10);
        w.commit().await.unwrap();
        drop((w, store));
        ctl.crash(CrashSpec::lose_unsynced());
        let (store, got, rec) = open(&ctl).await;
        assert_eq!(got, keys(&["a"]), "the cut command is not applied");
        assert_eq!(rec.partial_commands_dropped, 1);
        // The next run writes on: its records never complete the old command.
        let w = Writer::open(store.clone(), 0, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        put(&w, "c", false, 100);
        put(&w, "h1", true, 100);
        end(&w);
        w.commit().await.unwrap();
        drop((w, store));
        ctl.crash(CrashSpec::lose_unsynced());
        let (_, got, rec) = open(&ctl).await;
        assert_eq!(got, keys(&["a", "c", "h1"]));
        assert_eq!(
            rec.partial_commands_dropped, 1,
            "still only the old command"
        );
    });
}

#[test]
fn a_torn_command_in_one_block_is_dropped_whole() {
    run(async {
        let dev = RamDevice::new(RESERVED_BYTES + 16 * BLOCK_BYTES, 512);
        let ctl = dev.control();
        let (store, _, rec) = open(&ctl).await;
        let w = Writer::open(store.clone(), 0, Durability::EverySec, rec.max_mutation_seq)
            .await
            .unwrap();
        put(&w, "a", false, 100);
        w.commit().await.unwrap();
        put(&w, "g1", true, 1000);
        put(&w, "g2", true, 1000);
        end(&w);
        w.flush().await.unwrap();
        let pending = ctl.unsynced_writes();
        assert!(!pending.is_empty());
        drop((w, store));
        // Keep 3 sectors of the write: "a" again and g1 whole, g2 cut.
        ctl.crash(CrashSpec::torn_last(pending.len(), 1536));
        let (_, got, _) = open(&ctl).await;
        assert_eq!(got, keys(&["a"]));
    });
}
