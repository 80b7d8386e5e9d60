//! Index checkpoints, end to end: a clean stop writes one checkpoint file per worker and the
//! restart loads them plus only the blocks they do not cover (INFO
//! `storage_recovery_source:checkpoint`), with the same keys, values, TTLs, databases and
//! live bytes as a full scan; writes made after a timer checkpoint survive kill -9 (deleted
//! keys stay deleted, reclaimed blocks are rescanned); a damaged, truncated or foreign
//! checkpoint, or one from another `--threads`, falls back to the full scan with the same
//! result; an older durable version survives when the newer one is lost in a crash.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;

const BASE: &[&str] = &["--threads", "2", "--data-size", "256mb"];

fn start(extra: &[&str]) -> Server {
    let mut a = BASE.to_vec();
    a.extend_from_slice(extra);
    Server::start(&a)
}

fn storage_info(s: &Server) -> String {
    match s.raw().cmd(&["INFO", "storage"]) {
        Value::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("INFO: {other:?}"),
    }
}

fn field(s: &Server, name: &str) -> String {
    info_field(&storage_info(s), name).unwrap_or_else(|| panic!("no INFO field {name}"))
}

fn num(s: &Server, name: &str) -> u64 {
    field(s, name).parse().unwrap()
}

/// Value `version` of key `i`: 32 KiB, so a few hundred keys fill several 8 MiB blocks.
fn value(i: u64, version: u64) -> Vec<u8> {
    let mut v = format!("{i}:{version}:").into_bytes();
    v.extend_from_slice(&Rng::new(i * 1000 + version).bytes(32 << 10));
    v
}

/// What the server must hold: (db, key) → (value, has a TTL).
#[derive(Default, Clone)]
struct Model(BTreeMap<(usize, Vec<u8>), (Vec<u8>, bool)>);

impl Model {
    fn set(&mut self, r: &mut Raw, db: usize, key: &[u8], v: Vec<u8>, ttl: bool) {
        assert_eq!(r.cmd(&["SELECT", &db.to_string()]), ok());
        if ttl {
            assert_eq!(r.cmd_bytes(&[b"SET", key, &v, b"EX", b"100000"]), ok());
        } else {
            assert_eq!(r.cmd_bytes(&[b"SET", key, &v]), ok());
        }
        self.0.insert((db, key.to_vec()), (v, ttl));
    }

    fn del(&mut self, r: &mut Raw, db: usize, key: &[u8]) {
        assert_eq!(r.cmd(&["SELECT", &db.to_string()]), ok());
        let was = self.0.remove(&(db, key.to_vec())).is_some();
        assert_eq!(r.cmd_bytes(&[b"DEL", key]), int(was as i64));
    }

    /// Every key, value and TTL, and DBSIZE of every database used.
    fn check(&self, s: &Server, what: &str) {
        let mut r = s.raw();
        let mut per_db: BTreeMap<usize, i64> = BTreeMap::new();
        for db in 0..16 {
            per_db.insert(db, 0);
        }
        for ((db, key), (v, ttl)) in &self.0 {
            *per_db.get_mut(db).unwrap() += 1;
            assert_eq!(r.cmd(&["SELECT", &db.to_string()]), ok());
            match r.cmd_bytes(&[b"GET", key]) {
                Value::Bulk(got) => assert!(
                    &got == v,
                    "{what}: db {db} key {} has the wrong value ({} bytes, starts {:?})",
                    String::from_utf8_lossy(key),
                    got.len(),
                    String::from_utf8_lossy(&got[..got.len().min(12)])
                ),
                other => panic!(
                    "{what}: db {db} key {} lost: {other:?}",
                    String::from_utf8_lossy(key)
                ),
            }
            let t = match r.cmd_bytes(&[b"TTL", key]) {
                Value::Integer(t) => t,
                other => panic!("TTL: {other:?}"),
            };
            if *ttl {
                assert!(t > 90_000, "{what}: TTL of {:?} is {t}", key);
            } else {
                assert_eq!(t, -1, "{what}: {:?} got a TTL", key);
            }
        }
        for (db, n) in per_db {
            assert_eq!(r.cmd(&["SELECT", &db.to_string()]), ok());
            assert_eq!(r.cmd(&["DBSIZE"]), int(n), "{what}: DBSIZE of db {db}");
        }
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key:{i}").into_bytes()
}

/// Keys spread over several blocks, databases, TTLs, a binary key, deletes and overwrites.
fn fill(s: &Server, m: &mut Model, n: u64) {
    let mut r = s.raw();
    for i in 0..n {
        m.set(&mut r, 0, &key(i), value(i, 1), i % 10 == 3);
    }
    for i in 0..20 {
        m.set(&mut r, 3, &key(i), value(i + 5000, 1), false);
    }
    m.set(&mut r, 15, b"bin\r\n\0key", b"\0\r\nbin\xff".to_vec(), true);
    for i in (0..n).step_by(7) {
        m.del(&mut r, 0, &key(i));
    }
    for i in (1..n).step_by(5) {
        m.set(&mut r, 0, &key(i), value(i, 2), false);
    }
}

fn checkpoint_files(s: &Server) -> Vec<std::path::PathBuf> {
    (0..2)
        .map(|w| s.dir().join(format!("skerry-index-{w}.ckpt")))
        .collect()
}

#[test]
fn clean_restart_loads_the_checkpoint_and_matches_the_full_scan() {
    skip_if_redis!(); // index checkpoint files and INFO storage_recovery_* are Skerry's
    let mut s = start(&[]);
    let mut m = Model::default();
    fill(&s, &mut m, 700);
    s.stop_clean();
    for f in checkpoint_files(&s) {
        assert!(f.exists(), "{} not written at shutdown", f.display());
    }
    s.start_again();
    assert_eq!(field(&s, "storage_recovery_source"), "checkpoint");
    let covered = num(&s, "storage_recovery_covered_blocks");
    let scanned = num(&s, "storage_recovery_scanned_blocks");
    // ~23 MB over two workers: sealed blocks are covered, only the open ones (one per worker,
    // plus one a seal may have left) are scanned.
    assert!(covered >= 2, "covered {covered}");
    assert!(scanned <= 4, "scanned {scanned}");
    assert!(s
        .log_contents()
        .contains("index checkpoint + scan of newer blocks"));
    // Each worker continues the block it was appending to (the covered blocks, not read,
    // still take part in the adoption check through their routes).
    for w in 0..2 {
        let line = format!("worker {w}: continuing data device 0 block");
        assert!(
            s.wait_for_log(&line, Duration::from_secs(10)),
            "{line} missing:\n{}",
            s.log_contents()
        );
    }
    m.check(&s, "after the checkpoint load");
    let live = num(&s, "storage_live_bytes");
    let tombstone_blocks = num(&s, "storage_tombstone_blocks");

    // The same data through the full scan: the same keys and the same live bytes per store.
    s.kill();
    for f in checkpoint_files(&s) {
        std::fs::remove_file(f).unwrap();
    }
    s.start_again();
    assert_eq!(field(&s, "storage_recovery_source"), "scan");
    // The sealed blocks are read as their summaries (records' keys, not their values); the
    // values then read back through their own checks.
    let summarised = num(&s, "storage_recovery_summarised_blocks");
    assert!(
        summarised >= covered,
        "{summarised} blocks from summaries, {covered} sealed"
    );
    m.check(&s, "after the full scan");
    assert_eq!(num(&s, "storage_live_bytes"), live);
    assert_eq!(num(&s, "storage_tombstone_blocks"), tombstone_blocks);

    // Writes after the restart, a second clean stop, a second checkpoint load.
    let mut r = s.raw();
    for i in 700..760 {
        m.set(&mut r, 1, &key(i), value(i, 3), false);
    }
    m.del(&mut r, 0, &key(1));
    s.stop_clean();
    s.start_again();
    assert_eq!(field(&s, "storage_recovery_source"), "checkpoint");
    m.check(&s, "after the second checkpoint load");
}

#[test]
fn writes_after_a_timer_checkpoint_survive_kill_9() {
    skip_if_redis!(); // index checkpoint files and INFO storage_recovery_* are Skerry's
    let mut s = start(&[
        "--appendfsync",
        "always",
        "--checkpoint-interval-seconds",
        "1",
    ]);
    let mut m = Model::default();
    fill(&s, &mut m, 500);
    // Two checkpoints per worker after the fill: at least one started after it.
    let before = num(&s, "storage_checkpoints_written");
    assert!(
        wait_until(Duration::from_secs(30), || num(
            &s,
            "storage_checkpoints_written"
        ) >= before + 4),
        "no timer checkpoint"
    );
    let mut r = s.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "checkpoint-interval-seconds", "0"]),
        ok()
    );
    assert!(wait_until(Duration::from_secs(30), || num(
        &s,
        "storage_checkpoint_in_progress"
    ) == 0));
    let reclaimed_before = num(&s, "storage_reclaimed_blocks");
    // After the checkpoint: overwrite every key twice (the blocks the checkpoint covers are
    // reclaimed and reused), delete some, add new ones, in several databases.
    for version in [4, 5] {
        for i in 0..500 {
            if i % 7 != 0 {
                m.set(&mut r, 0, &key(i), value(i, version), i % 10 == 3);
            }
        }
    }
    for i in (0..500).step_by(3) {
        m.del(&mut r, 0, &key(i));
    }
    for i in 0..10 {
        m.del(&mut r, 3, &key(i));
        m.set(&mut r, 4, &key(i), value(i, 6), true);
    }
    assert!(
        wait_until(Duration::from_secs(10), || num(
            &s,
            "storage_reclaimed_blocks"
        ) > reclaimed_before),
        "no block was reclaimed after the checkpoint"
    );
    s.kill();
    s.start_again();
    assert_eq!(field(&s, "storage_recovery_source"), "checkpoint");
    m.check(&s, "kill -9 after a timer checkpoint");
}

#[test]
fn damaged_or_truncated_checkpoint_falls_back_to_the_full_scan() {
    skip_if_redis!(); // index checkpoint files and INFO storage_recovery_* are Skerry's
    let mut s = start(&[]);
    let mut m = Model::default();
    fill(&s, &mut m, 400);
    s.stop_clean();
    // A flipped byte in the middle of worker 0's entries.
    let files = checkpoint_files(&s);
    let mut bytes = std::fs::read(&files[0]).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&files[0], &bytes).unwrap();
    s.start_again();
    assert_eq!(field(&s, "storage_recovery_source"), "scan");
    assert!(
        s.log_contents().contains("Index checkpoint not used (")
            && s.log_contents().contains("checksum mismatch"),
        "no fallback line:\n{}",
        s.log_contents()
    );
    m.check(&s, "after a damaged checkpoint");
    // The next clean stop writes good ones again; then worker 1's is cut short.
    s.stop_clean();
    let len = std::fs::metadata(&files[1]).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&files[1])
        .unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);
    s.start_again();
    assert_eq!(field(&s, "storage_recovery_source"), "scan");
    m.check(&s, "after a truncated checkpoint");
    // A checkpoint of other data files (the data file replaced by a fresh one).
    s.stop_clean();
    let saved: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    std::fs::remove_file(s.data_file()).unwrap();
    s.start_again();
    assert_eq!(s.raw().cmd(&["DBSIZE"]), int(0));
    s.kill();
    for (f, b) in files.iter().zip(&saved) {
        std::fs::write(f, b).unwrap();
    }
    s.start_again();
    assert_eq!(field(&s, "storage_recovery_source"), "scan");
    assert!(s.log_contents().contains("belongs to other data files"));
    assert_eq!(s.raw().cmd(&["DBSIZE"]), int(0));
}

#[test]
fn checkpoint_from_another_thread_count_falls_back() {
    skip_if_redis!(); // index checkpoint files and INFO storage_recovery_* are Skerry's
    let mut s = start(&[]);
    let mut m = Model::default();
    fill(&s, &mut m, 300);
    s.stop_clean();
    s.set_args(&["--threads", "3", "--data-size", "256mb"]);
    s.start_again();
    assert_eq!(field(&s, "storage_recovery_source"), "scan");
    assert!(s
        .log_contents()
        .contains("was written with 2 threads, now 3"));
    m.check(&s, "3 threads after a 2-thread checkpoint");
    // Changes under 3 threads, then back to 2: workers 0 and 1 have 3-thread checkpoints.
    let mut r = s.raw();
    for i in 0..30 {
        m.set(&mut r, 2, &key(i), value(i, 7), false);
    }
    m.del(&mut r, 0, &key(2));
    s.stop_clean();
    s.set_args(BASE);
    s.start_again();
    assert_eq!(field(&s, "storage_recovery_source"), "scan");
    m.check(&s, "2 threads after a 3-thread checkpoint");
    s.stop_clean();
    s.start_again();
    assert_eq!(field(&s, "storage_recovery_source"), "checkpoint");
    m.check(&s, "2 threads after a 2-thread checkpoint");
}

#[test]
fn an_older_durable_version_survives_when_the_newer_is_lost() {
    skip_if_redis!(); // index checkpoint files and INFO storage_recovery_* are Skerry's
                      // `appendfsync no`: records reach the device within about 100 ms; a kill right after the
                      // overwrites loses most of them. The checkpoint (whose commit made every version 1
                      // durable) must never make a key vanish: each key is version 1 or version 2.
    let mut s = start(&["--appendfsync", "no", "--checkpoint-interval-seconds", "1"]);
    let n = 300u64;
    let mut r = s.raw();
    for i in 0..n {
        assert_eq!(r.cmd_bytes(&[b"SET", &key(i), &value(i, 1)]), ok());
    }
    let before = num(&s, "storage_checkpoints_written");
    assert!(wait_until(Duration::from_secs(30), || num(
        &s,
        "storage_checkpoints_written"
    ) >= before + 4));
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "checkpoint-interval-seconds", "0"]),
        ok()
    );
    assert!(wait_until(Duration::from_secs(30), || num(
        &s,
        "storage_checkpoint_in_progress"
    ) == 0));
    // Pipelined overwrites, then kill at once.
    let mut batch = Vec::new();
    for i in 0..n {
        let v = value(i, 2);
        let k = key(i);
        batch.extend_from_slice(format!("*3\r\n$3\r\nSET\r\n${}\r\n", k.len()).as_bytes());
        batch.extend_from_slice(&k);
        batch.extend_from_slice(format!("\r\n${}\r\n", v.len()).as_bytes());
        batch.extend_from_slice(&v);
        batch.extend_from_slice(b"\r\n");
    }
    r.send(&batch);
    for _ in 0..n {
        assert_eq!(r.read_value(), ok());
    }
    s.kill();
    s.start_again();
    assert_eq!(field(&s, "storage_recovery_source"), "checkpoint");
    let mut r = s.raw();
    let mut old = 0;
    for i in 0..n {
        match r.cmd_bytes(&[b"GET", &key(i)]) {
            Value::Bulk(v) if v == value(i, 2) => {}
            Value::Bulk(v) if v == value(i, 1) => old += 1,
            other => panic!("key {i}: neither version survived: {other:?}"),
        }
    }
    assert_eq!(r.cmd(&["DBSIZE"]), int(n as i64));
    eprintln!("{old} of {n} keys kept their older version (the newer was lost in the crash)");
}

#[test]
fn checkpoints_taken_under_writes_then_kill_9_keep_every_acknowledged_write() {
    skip_if_redis!(); // index checkpoint files and INFO storage_recovery_* are Skerry's
                      // A writer overwrites and deletes keys all the time while timer checkpoints run (each
                      // serializes the index while it changes); kill -9 at a random moment, three times. Under
                      // `appendfsync always` every acknowledged write survives, whichever checkpoint is loaded.
    let mut s = start(&[
        "--appendfsync",
        "always",
        "--checkpoint-interval-seconds",
        "1",
    ]);
    let keys = 150u64;
    // Per key: the last acknowledged value (None: deleted) and the one in flight.
    let mut acked: BTreeMap<u64, Option<Vec<u8>>> = BTreeMap::new();
    let mut rng = Rng::new(7);
    let mut version = 10u64;
    for cycle in 0..3 {
        let mut r = s.raw();
        let before = num(&s, "storage_checkpoints_written");
        let deadline = std::time::Instant::now() + Duration::from_millis(2500 + 500 * cycle);
        while std::time::Instant::now() < deadline {
            let k = rng.next_u64() % keys;
            version += 1;
            if rng.next_u64().is_multiple_of(5) {
                let _ = r.cmd_bytes(&[b"DEL", &key(k)]);
                acked.insert(k, None);
            } else {
                let mut v = value(k, version);
                v.truncate(4096 + (rng.next_u64() % 8192) as usize);
                assert_eq!(r.cmd_bytes(&[b"SET", &key(k), &v]), ok());
                acked.insert(k, Some(v));
            }
        }
        assert!(
            num(&s, "storage_checkpoints_written") >= before + 2,
            "no checkpoint during the writes"
        );
        // One more write in flight at the kill: it may or may not survive.
        let k = rng.next_u64() % keys;
        let mut v = value(k, version + 1);
        v.truncate(5000);
        let in_flight = (k, Some(v.clone()));
        r.send(
            &[
                format!("*3\r\n$3\r\nSET\r\n${}\r\n", key(k).len()).into_bytes(),
                key(k),
                format!("\r\n${}\r\n", v.len()).into_bytes(),
                v.clone(),
                b"\r\n".to_vec(),
            ]
            .concat(),
        );
        s.kill();
        s.start_again();
        assert_eq!(field(&s, "storage_recovery_source"), "checkpoint");
        let mut r = s.raw();
        let mut survived_in_flight = None;
        for (&k, want) in &acked {
            let got = match r.cmd_bytes(&[b"GET", &key(k)]) {
                Value::Bulk(v) => Some(v),
                Value::Null => None,
                other => panic!("GET: {other:?}"),
            };
            if &got == want {
                continue;
            }
            let (fk, fv) = &in_flight;
            assert!(
                *fk == k && &got == fv,
                "cycle {cycle}: key {k} is {:?} bytes, acknowledged {:?} bytes",
                got.as_ref().map(|v| v.len()),
                want.as_ref().map(|v| v.len())
            );
            survived_in_flight = Some((k, got));
        }
        if let Some((k, v)) = survived_in_flight {
            acked.insert(k, v);
        } else if let std::collections::btree_map::Entry::Vacant(slot) = acked.entry(in_flight.0) {
            // Never written before: absent, or the in-flight value.
            match r.cmd_bytes(&[b"GET", &key(in_flight.0)]) {
                Value::Null => {}
                Value::Bulk(v) if Some(&v) == in_flight.1.as_ref() => {
                    slot.insert(Some(v));
                }
                other => panic!("cycle {cycle}: in-flight key: {other:?}"),
            }
        }
        let live = acked.values().filter(|v| v.is_some()).count() as i64;
        assert_eq!(r.cmd(&["DBSIZE"]), int(live), "cycle {cycle}");
    }
}
