//! Defrag end to end: on a data file only a few times the live data, continuous overwrites
//! and deletes go on without a write error because defrag rewrites sparse blocks; kill -9 in
//! the middle of it (appendfsync always) loses no acknowledged write and resurrects no
//! deleted key; tombstone blocks are reclaimed once the blocks behind them are rewritten;
//! the DEFRAG command steers it.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::*;

/// A value that names its key and version, padded to `len` bytes.
fn value(key: &str, version: u64, len: usize) -> Vec<u8> {
    let mut v = format!("{key}:{version}:").into_bytes();
    let fill = (version % 251) as u8;
    v.resize(len, fill);
    v
}

fn info_storage(r: &mut Raw, field: &str) -> u64 {
    info_u64(r, "storage", &format!("storage_{field}"))
        .unwrap_or_else(|| panic!("INFO storage has no storage_{field}"))
}

/// The version a key's value names (panics on a value that is not one of ours).
fn version_of(key: &str, v: &[u8], len: usize) -> u64 {
    let s = String::from_utf8_lossy(&v[..v.len().min(64)]).into_owned();
    let rest = s
        .strip_prefix(&format!("{key}:"))
        .unwrap_or_else(|| panic!("value of {key} names another key: {s:?}"));
    let ver = rest.split(':').next().unwrap_or("");
    let ver: u64 = ver
        .parse()
        .unwrap_or_else(|_| panic!("value of {key}: bad version {ver:?}"));
    assert_eq!(
        v,
        &value(key, ver, len)[..],
        "value of {key} v{ver} damaged"
    );
    ver
}

const VALUE_BYTES: usize = 8 * 1024;

/// One writer's acknowledged state: key -> Some(version) or None (deleted); plus the
/// operations in flight when the server died (each may or may not have landed).
struct WriterRun {
    acked: HashMap<String, Option<u64>>,
    in_flight: HashMap<String, Option<u64>>,
    ops: u64,
}

/// Pipelines of `DEPTH` SETs (9 in 10) and DELs on distinct keys of `w{t}:0..keys` until the
/// connection fails. Any error reply (a refused write included) fails the test.
fn writer(
    mut con: redis::Connection,
    t: usize,
    seed: u64,
    keys: u64,
    first_version: u64,
) -> WriterRun {
    const DEPTH: usize = 16;
    let mut rng = Rng::new(seed);
    let mut out = WriterRun {
        acked: HashMap::new(),
        in_flight: HashMap::new(),
        ops: 0,
    };
    let mut version = first_version;
    loop {
        let mut batch: Vec<(String, Option<u64>)> = Vec::with_capacity(DEPTH);
        while batch.len() < DEPTH {
            let key = format!("w{t}:{}", rng.range(0, keys));
            if batch.iter().any(|(k, _)| *k == key) {
                continue;
            }
            version += 1;
            let op = (rng.range(0, 10) != 0).then_some(version);
            batch.push((key, op));
        }
        let mut p = redis::pipe();
        for (key, op) in &batch {
            match op {
                Some(ver) => p
                    .cmd("SET")
                    .arg(key)
                    .arg(value(key, *ver, VALUE_BYTES))
                    .ignore(),
                None => p.cmd("DEL").arg(key).ignore(),
            };
        }
        match p.query::<()>(&mut con) {
            Ok(()) => {
                out.ops += DEPTH as u64;
                out.acked.extend(batch);
            }
            Err(e) if e.code().is_some() => panic!("writer {t}: error reply {e}"),
            Err(_) => {
                out.in_flight.extend(batch);
                return out;
            }
        }
    }
}

/// kill -9 while 16 clients overwrite and delete 8 KiB values with appendfsync always on a
/// 128 MiB data file holding ~30 MiB of live data: across the cycles the clients write more
/// than twice the data file, so blocks are rewritten by defrag and reused while the server
/// is killed. After every restart each key holds exactly its last acknowledged value (or
/// one in flight), deleted keys stay deleted, DBSIZE is exact, and no write was refused.
#[test]
fn defrag_under_writes_with_kill_9_loses_nothing() {
    if is_redis() {
        return;
    }
    const WRITERS: usize = 16;
    const KEYS: u64 = 230;
    let mut s = Server::start(&[
        "--appendfsync",
        "always",
        "--threads",
        "2",
        "--data-size",
        "128mb",
        "--checkpoint-interval-seconds",
        "1",
    ]);
    let mut model: HashMap<String, Option<u64>> = HashMap::new();
    let (mut total_ops, mut rewritten) = (0u64, 0u64);
    let started = Instant::now();
    let mut cycle = 0u64;
    // At least 3 cycles; more (up to 12) until defrag has rewritten a block and the writes
    // add up to twice the data file, so a slow machine gets more cycles, not a failure.
    const WANT_BYTES: u64 = 2 * (128 << 20);
    while cycle < 3
        || ((rewritten == 0 || total_ops * VALUE_BYTES as u64 <= WANT_BYTES) && cycle < 12)
    {
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let con = s.client();
                let first = (cycle + 1) * 10_000_000;
                std::thread::spawn(move || writer(con, t, cycle * 100 + t as u64, KEYS, first))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(3500));
        let mut r = s.raw();
        rewritten += info_storage(&mut r, "defrag_blocks_rewritten");
        drop(r);
        s.kill();
        let mut in_flight = HashMap::new();
        for th in writers {
            let w = th.join().unwrap();
            total_ops += w.ops;
            model.extend(w.acked);
            in_flight.extend(w.in_flight);
        }
        s.start_again();
        let mut con = s.client();
        let mut keys: Vec<String> = model.keys().cloned().collect();
        keys.extend(
            in_flight
                .keys()
                .filter(|k| !model.contains_key(*k))
                .cloned(),
        );
        for chunk in keys.chunks(200) {
            let mut p = redis::pipe();
            for k in chunk {
                p.cmd("GET").arg(k);
            }
            let got: Vec<Option<Vec<u8>>> = p.query(&mut con).unwrap();
            for (k, got) in chunk.iter().zip(got) {
                let got = got.map(|v| version_of(k, &v, VALUE_BYTES));
                let want = model.entry(k.clone()).or_insert(None);
                if got == *want {
                    continue;
                }
                assert_eq!(
                    in_flight.get(k),
                    Some(&got),
                    "cycle {cycle}: {k} is {got:?}, last acknowledged {want:?}"
                );
                *want = got;
            }
        }
        let live = model.values().filter(|v| v.is_some()).count() as i64;
        let dbsize: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
        assert_eq!(dbsize, live, "cycle {cycle}: DBSIZE");
        cycle += 1;
    }
    let written_bytes = total_ops * VALUE_BYTES as u64;
    eprintln!(
        "{cycle} cycles in {:.1} s: {total_ops} writes ({} MiB), {rewritten} blocks rewritten by defrag",
        started.elapsed().as_secs_f64(),
        written_bytes >> 20
    );
    assert!(rewritten > 0, "defrag rewrote no block");
    assert!(
        written_bytes > WANT_BYTES,
        "only {} MiB written: the data file was not reused",
        written_bytes >> 20
    );
}

/// Keys deleted early leave tombstones; heavy overwrites of the other keys then make defrag
/// rewrite the blocks behind the tombstones (the log tail) so the tombstone blocks can be
/// reclaimed too. Neither a clean restart nor kill -9 brings a deleted key back, and the
/// tombstone blocks do not pile up.
#[test]
fn deleted_keys_never_come_back_after_defrag_and_restarts() {
    if is_redis() {
        return;
    }
    let mut s = Server::start(&["--threads", "1", "--data-size", "96mb"]);
    let mut r = s.raw();
    let val = |i: u64, round: u64| value(&format!("k{i}"), round, 4000);
    // 4000 keys x 4 KB = 16 MB; then every even key is deleted.
    let cmds: Vec<Vec<Vec<u8>>> = (0..4000)
        .map(|i| vec![b"SET".to_vec(), format!("k{i}").into_bytes(), val(i, 0)])
        .collect();
    for chunk in cmds.chunks(500) {
        assert!(pipeline(&mut r, chunk).iter().all(|v| *v == ok()));
    }
    let dels: Vec<Vec<String>> = (0..4000)
        .step_by(2)
        .map(|i| vec!["DEL".to_string(), format!("k{i}")])
        .collect();
    for chunk in dels.chunks(500) {
        assert!(pipeline(&mut r, chunk).iter().all(|v| *v == int(1)));
    }
    // Overwrite the odd keys 40 times (~330 MB through a 96 MB file).
    for round in 1..=40u64 {
        let cmds: Vec<Vec<Vec<u8>>> = (1..4000)
            .step_by(2)
            .map(|i| vec![b"SET".to_vec(), format!("k{i}").into_bytes(), val(i, round)])
            .collect();
        for chunk in cmds.chunks(500) {
            let replies = pipeline(&mut r, chunk);
            assert!(
                replies.iter().all(|v| *v == ok()),
                "round {round}: {:?}",
                replies.iter().find(|v| **v != ok())
            );
        }
    }
    let check = |r: &mut Raw, when: &str| {
        assert_eq!(r.cmd(&["DBSIZE"]), int(2000), "{when}: DBSIZE");
        for i in 0..4000u64 {
            let got = r.cmd(&["GET", &format!("k{i}")]);
            if i % 2 == 0 {
                assert_eq!(got, Value::Null, "{when}: deleted key k{i} is back");
            } else {
                assert_eq!(got, Value::Bulk(val(i, 40)), "{when}: k{i}");
            }
        }
    };
    check(&mut r, "before any restart");
    // The blocks behind the tombstones are rewritten or reclaimed, then the tombstone blocks
    // themselves go.
    assert!(
        wait_until(Duration::from_secs(20), || info_storage(
            &mut r,
            "tombstone_blocks"
        ) == 0),
        "tombstone blocks still waiting: {} (defrag tail rewrites {})",
        info_storage(&mut r, "tombstone_blocks"),
        info_storage(&mut r, "defrag_tail_blocks_rewritten")
    );
    drop(r);
    s.signal(libc::SIGTERM);
    s.wait_exit(Duration::from_secs(30)).expect("clean exit");
    s.start_again();
    let mut r = s.raw();
    check(&mut r, "after a clean restart");
    // Through the full scan too: no checkpoint, kill -9.
    drop(r);
    s.kill();
    for f in std::fs::read_dir(s.dir()).unwrap() {
        let p = f.unwrap().path();
        if p.extension().is_some_and(|e| e == "ckpt") {
            std::fs::remove_file(p).unwrap();
        }
    }
    s.start_again();
    let mut r = s.raw();
    check(&mut r, "after kill -9 and a full scan");
}

/// DEFRAG STATUS, PAUSE, RESUME, SET and HELP, and the CONFIG names behind them.
#[test]
fn defrag_command() {
    if is_redis() {
        return;
    }
    let s = Server::start(&["--threads", "1", "--data-size", "64mb"]);
    let mut r = s.raw();
    let status = |r: &mut Raw| -> HashMap<String, String> {
        match r.cmd(&["DEFRAG", "STATUS"]) {
            Value::Array(items) => items
                .chunks(2)
                .map(|kv| (kv[0].text(), kv[1].text()))
                .collect(),
            other => panic!("DEFRAG STATUS: {other:?}"),
        }
    };
    let st = status(&mut r);
    for f in [
        "state",
        "live_ratio_pct",
        "free_target_pct",
        "max_mb_per_sec",
        "free_blocks",
        "total_blocks",
        "sparse_blocks",
        "tombstone_backlog_blocks",
        "blocks_rewritten",
        "records_moved",
        "failures",
    ] {
        assert!(st.contains_key(f), "DEFRAG STATUS has no {f}: {st:?}");
    }
    assert_eq!(st["state"], "idle");
    assert_eq!(st["live_ratio_pct"], "50");
    assert_eq!(
        st["total_blocks"],
        info_storage(&mut r, "total_blocks").to_string()
    );
    assert_eq!(r.cmd(&["DEFRAG", "PAUSE"]), ok());
    assert_eq!(status(&mut r)["state"], "paused");
    assert_eq!(
        info_field(&r.cmd(&["INFO", "storage"]).text(), "storage_defrag_state").as_deref(),
        Some("paused")
    );
    assert_eq!(r.cmd(&["DEFRAG", "RESUME"]), ok());
    assert_eq!(status(&mut r)["state"], "idle");
    assert_eq!(
        r.cmd(&["DEFRAG", "SET", "live-ratio", "30", "max-mb-per-sec", "64"]),
        ok()
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "storage-defrag-live-ratio"]),
        bulks(&["storage-defrag-live-ratio", "30"])
    );
    assert_eq!(status(&mut r)["max_mb_per_sec"], "64");
    // A bad pair changes nothing.
    assert!(r
        .cmd(&["DEFRAG", "SET", "live-ratio", "40", "free-target", "200"])
        .is_error());
    assert_eq!(status(&mut r)["live_ratio_pct"], "30");
    assert!(r.cmd(&["DEFRAG", "SET", "nosuch", "1"]).is_error());
    assert!(r
        .cmd(&["CONFIG", "SET", "storage-defrag-live-ratio", "0"])
        .is_error());
    assert_eq!(
        r.cmd(&["DEFRAG", "NOSUCH"]),
        err("ERR unknown subcommand or wrong number of arguments for 'NOSUCH'. Try DEFRAG HELP.")
    );
    assert!(matches!(r.cmd(&["DEFRAG", "HELP"]), Value::Array(v) if v.len() > 5));
    assert_eq!(r.cmd(&["CONFIG", "SET", "storage-defrag", "no"]), ok());
    assert_eq!(status(&mut r)["state"], "disabled");
}
