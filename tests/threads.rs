//! Multi-worker behaviour (`--threads N`): keys are spread over workers by slot and
//! connections round-robin over workers, so every command here crosses workers.
//!
//! Under `SKERRY_TEST_SERVER=redis` the `--threads` flag is dropped and these tests run against
//! single-threaded Redis, which checks that the expected results are Redis' results.

mod common;

use std::collections::BTreeSet;
use std::io::Write;
use std::time::Duration;

use common::*;

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(|s| s.as_str()).collect()
}

#[test]
fn key_slot_reference_values() {
    // Known-good values from Redis 7.0.15's `CLUSTER KEYSLOT` (redis-server --cluster-enabled
    // yes, 2026-12-06); a sanity check of the helper used below.
    for (key, slot) in [
        ("foo", 12182),
        ("123456789", 12739),
        ("{user}:1", 5474),
        ("{user}:2", 5474),
        ("user", 5474),
        ("{}user", 12192),
        ("foo{{bar}}zap", 4015),
    ] {
        assert_eq!(key_slot(key.as_bytes()), slot, "{key}");
    }
}

fn check_hash_tags(threads: &str) {
    let s = Server::start(&["--threads", threads]);
    let mut r = s.raw();
    // Keys sharing a hash tag are in one slot; multi-key commands on them work.
    assert_eq!(
        r.cmd(&["MSET", "{user}:1", "a", "{user}:2", "b", "{user}:3", "c"]),
        ok()
    );
    assert_eq!(
        r.cmd(&["MGET", "{user}:1", "{user}:2", "{user}:3", "{user}:4"]),
        arr(vec![bulk("a"), bulk("b"), bulk("c"), Value::Null])
    );
    // Tagged and untagged keys mixed (several slots, several workers).
    let mut mset = vec!["MSET".to_string()];
    for i in 0..100 {
        mset.push(format!("{{tag{}}}:{i}", i % 7));
        mset.push(format!("t{i}"));
        mset.push(format!("plain{i}"));
        mset.push(format!("p{i}"));
    }
    assert_eq!(r.cmd(&strs(&mset)), ok());
    let slots: BTreeSet<u16> = (0..100)
        .map(|i| key_slot(format!("plain{i}").as_bytes()))
        .collect();
    assert!(slots.len() > 50);
    for i in 0..100 {
        assert_eq!(
            r.cmd(&["GET", &format!("{{tag{}}}:{i}", i % 7)]),
            bulk(&format!("t{i}"))
        );
        assert_eq!(
            r.cmd(&["GET", &format!("plain{i}")]),
            bulk(&format!("p{i}"))
        );
    }
    assert_eq!(r.cmd(&["DBSIZE"]), int(203));
}

#[test]
fn rename_within_and_across_slots() {
    let s = Server::start(&["--threads", "4"]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["MSET", "{user}:1", "a", "{user}:2", "b"]), ok());
    assert_eq!(r.cmd(&["RENAME", "{user}:1", "{user}:9"]), ok());
    assert_eq!(r.cmd(&["GET", "{user}:9"]), bulk("a"));
    assert_eq!(
        r.cmd(&["EXISTS", "{user}:1", "{user}:2", "{user}:9"]),
        int(2)
    );
    for i in 0..50 {
        assert_eq!(
            r.cmd(&["SET", &format!("plain{i}"), &format!("p{i}")]),
            ok()
        );
    }
    for i in 0..50 {
        assert_eq!(
            r.cmd(&["RENAME", &format!("plain{i}"), &format!("moved{i}")]),
            ok()
        );
    }
    for i in 0..50 {
        assert_eq!(
            r.cmd(&["GET", &format!("moved{i}")]),
            bulk(&format!("p{i}"))
        );
        assert_eq!(r.cmd(&["EXISTS", &format!("plain{i}")]), int(0));
    }
    assert_eq!(r.cmd(&["RENAMENX", "moved1", "moved2"]), int(0));
    assert_eq!(r.cmd(&["RENAMENX", "moved1", "{user}:new"]), int(1));
    assert_eq!(r.cmd(&["DBSIZE"]), int(52));
}

#[test]
fn hash_tags_two_threads() {
    check_hash_tags("2");
}

#[test]
fn hash_tags_four_threads() {
    check_hash_tags("4");
}

fn check_multi_key(threads: &str) {
    let s = Server::start(&["--threads", threads]);
    let mut r = s.raw();
    let n = 200;
    let keys: Vec<String> = (0..n).map(|i| format!("key:{i}")).collect();
    let mut mset = vec!["MSET".to_string()];
    for (i, k) in keys.iter().enumerate() {
        mset.push(k.clone());
        mset.push(format!("v{i}"));
    }
    assert_eq!(r.cmd(&strs(&mset)), ok());

    let mut mget = vec!["MGET".to_string()];
    mget.extend(keys.iter().cloned());
    mget.push("nokey".into());
    mget.extend(keys.iter().rev().cloned());
    let got = r.cmd(&strs(&mget)).items();
    assert_eq!(got.len(), 2 * n + 1);
    for i in 0..n {
        assert_eq!(got[i], bulk(&format!("v{i}")));
        assert_eq!(got[2 * n - i], bulk(&format!("v{i}")));
    }
    assert_eq!(got[n], Value::Null);

    let mut exists = vec!["EXISTS".to_string()];
    exists.extend(keys.iter().cloned());
    exists.extend(keys.iter().take(10).cloned());
    exists.push("nokey".into());
    assert_eq!(r.cmd(&strs(&exists)), int(n as i64 + 10));

    let mut msetnx = vec!["MSETNX".to_string()];
    for i in 0..n {
        msetnx.push(format!("fresh:{i}"));
        msetnx.push("x".into());
    }
    assert_eq!(r.cmd(&strs(&msetnx)), int(1));
    assert_eq!(r.cmd(&strs(&msetnx)), int(0));
    assert_eq!(r.cmd(&["DBSIZE"]), int(2 * n as i64));

    let mut del = vec!["DEL".to_string()];
    del.extend(keys.iter().step_by(2).cloned());
    del.extend(keys.iter().step_by(2).cloned());
    del.push("nokey".into());
    assert_eq!(r.cmd(&strs(&del)), int((n / 2) as i64));
    let got = r.cmd(&strs(&mget)).items();
    for (i, v) in got.iter().take(n).enumerate() {
        let want = if i % 2 == 0 {
            Value::Null
        } else {
            bulk(&format!("v{i}"))
        };
        assert_eq!(*v, want);
    }
    let listed: BTreeSet<String> = r.cmd(&["KEYS", "key:*"]).strings().into_iter().collect();
    let want: BTreeSet<String> = keys.iter().skip(1).step_by(2).cloned().collect();
    assert_eq!(listed, want);
    // SCAN visits every worker, each key once.
    let mut cursor = "0".to_string();
    let mut scanned = Vec::new();
    loop {
        let reply = r.cmd(&["SCAN", &cursor, "COUNT", "13"]).items();
        cursor = reply[0].text();
        scanned.extend(reply[1].strings());
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(scanned.len(), n / 2 + n);
    let scanned: BTreeSet<String> = scanned.into_iter().collect();
    assert_eq!(scanned.len(), n / 2 + n);
    assert_eq!(r.cmd(&["FLUSHDB"]), ok());
    assert_eq!(r.cmd(&["DBSIZE"]), int(0));
}

#[test]
fn multi_key_commands_two_threads() {
    check_multi_key("2");
}

#[test]
fn multi_key_commands_four_threads() {
    check_multi_key("4");
}

#[test]
fn pipelined_cross_worker_commands_keep_order() {
    let s = Server::start(&["--threads", "4"]);
    let mut r = s.raw();
    let n = 3000;
    let mut batch = Vec::new();
    for i in 0..n {
        batch.extend(resp::encode(&["SET", &format!("k{i}"), &i.to_string()]));
        batch.extend(resp::encode(&["GET", &format!("k{i}")]));
        batch.extend(resp::encode(&["INCR", &format!("counter{}", i % 7)]));
        batch.extend(resp::encode(&["ECHO", &format!("e{i}")]));
        batch.extend(resp::encode(&["GET", &format!("missing{i}")]));
        batch.extend(resp::encode(&[
            "MGET",
            &format!("k{i}"),
            &format!("k{}", i / 2),
        ]));
    }
    let mut w = r.stream.try_clone().unwrap();
    let writer = std::thread::spawn(move || w.write_all(&batch).unwrap());
    for i in 0..n {
        assert_eq!(r.read_value(), ok(), "SET {i}");
        assert_eq!(r.read_value(), bulk(&i.to_string()), "GET {i}");
        assert_eq!(r.read_value(), int((i / 7 + 1) as i64), "INCR {i}");
        assert_eq!(r.read_value(), bulk(&format!("e{i}")), "ECHO {i}");
        assert_eq!(r.read_value(), Value::Null, "GET missing {i}");
        assert_eq!(
            r.read_value(),
            arr(vec![bulk(&i.to_string()), bulk(&(i / 2).to_string())]),
            "MGET {i}"
        );
    }
    writer.join().unwrap();
}

#[test]
fn concurrent_clients_on_all_workers() {
    let s = Server::start(&["--threads", "4"]);
    let port = s.port();
    let clients = 8;
    let per = 500;
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            std::thread::spawn(move || {
                let mut r = Raw::connect(port);
                let mut batch = Vec::new();
                for i in 0..per {
                    batch.extend(resp::encode(&["INCR", &format!("shared{}", i % 10)]));
                    batch.extend(resp::encode(&["SET", &format!("c{c}:{i}"), &i.to_string()]));
                }
                r.send(&batch);
                for _ in 0..per {
                    assert!(matches!(r.read_value(), Value::Integer(_)));
                    assert_eq!(r.read_value(), ok());
                }
                for i in (0..per).step_by(50) {
                    assert_eq!(r.cmd(&["GET", &format!("c{c}:{i}")]), bulk(&i.to_string()));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let mut r = s.raw();
    for k in 0..10 {
        assert_eq!(
            r.cmd(&["GET", &format!("shared{k}")]),
            bulk(&(clients * per / 10).to_string())
        );
    }
    assert_eq!(r.cmd(&["DBSIZE"]), int((clients * per + 10) as i64));
}

#[test]
fn connections_on_all_workers_are_visible() {
    let s = Server::start(&["--threads", "4"]);
    let mut conns: Vec<Raw> = (0..8).map(|_| s.raw()).collect();
    let mut ids = Vec::new();
    for (i, c) in conns.iter_mut().enumerate() {
        assert_eq!(c.cmd(&["CLIENT", "SETNAME", &format!("w{i}")]), ok());
        ids.push(c.cmd(&["CLIENT", "ID"]).int());
    }
    let unique: BTreeSet<i64> = ids.iter().copied().collect();
    assert_eq!(
        unique.len(),
        ids.len(),
        "client ids must be unique: {ids:?}"
    );
    let list = conns[0].cmd(&["CLIENT", "LIST"]).text();
    for i in 0..8 {
        assert!(
            list.contains(&format!(" name=w{i} ")),
            "CLIENT LIST lacks w{i}:\n{list}"
        );
    }
    let info = conns[0].cmd(&["INFO", "clients"]).text();
    let n: i64 = info_field(&info, "connected_clients")
        .unwrap()
        .parse()
        .unwrap();
    assert!(n >= 8, "connected_clients {n}");
    // Kill connections (on other workers) from connection 0.
    for (i, id) in ids.iter().enumerate().skip(1).step_by(2) {
        assert_eq!(
            conns[0].cmd(&["CLIENT", "KILL", "ID", &id.to_string()]),
            int(1),
            "kill w{i}"
        );
    }
    for (i, c) in conns.iter_mut().enumerate().skip(1) {
        if i % 2 == 1 {
            c.expect_closed();
        } else {
            assert_eq!(c.cmd(&["PING"]), simple("PONG"));
        }
    }
}

#[test]
fn config_and_stats_are_server_wide() {
    let s = Server::start(&["--threads", "4"]);
    let mut conns: Vec<Raw> = (0..4).map(|_| s.raw()).collect();
    assert_eq!(conns[0].cmd(&["CONFIG", "RESETSTAT"]), ok());
    for c in conns.iter_mut() {
        for i in 0..5 {
            assert_eq!(c.cmd(&["SET", &format!("x{i}"), "1"]), ok());
        }
        assert!(c.cmd(&["NOSUCHCMD"]).is_error());
    }
    for c in conns.iter_mut() {
        let stats = c.cmd(&["INFO", "commandstats"]).text();
        let set = info_field(&stats, "cmdstat_set").unwrap();
        assert!(set.starts_with("calls=20,"), "{set}");
        let errs = c.cmd(&["INFO", "errorstats"]).text();
        assert_eq!(
            info_field(&errs, "errorstat_ERR").as_deref(),
            Some("count=4")
        );
    }
    // CONFIG SET on one connection is seen by all workers.
    assert_eq!(conns[1].cmd(&["CONFIG", "SET", "maxclients", "321"]), ok());
    for c in conns.iter_mut() {
        assert_eq!(
            c.cmd(&["CONFIG", "GET", "maxclients"]),
            bulks(&["maxclients", "321"])
        );
    }
    assert_eq!(conns[2].cmd(&["CONFIG", "SET", "requirepass", "pw"]), ok());
    for _ in 0..4 {
        let mut fresh = s.raw();
        assert_eq!(
            fresh.cmd(&["GET", "x1"]),
            err("NOAUTH Authentication required.")
        );
    }
}

#[test]
fn databases_and_expiry_across_workers() {
    let s = Server::start(&["--threads", "4"]);
    let mut r = s.raw();
    for db in [0, 3] {
        assert_eq!(r.cmd(&["SELECT", &db.to_string()]), ok());
        let mut mset = vec!["MSET".to_string()];
        for i in 0..50 {
            mset.push(format!("k{i}"));
            mset.push(format!("db{db}"));
        }
        assert_eq!(r.cmd(&strs(&mset)), ok());
    }
    // Long enough that none is gone before INFO on a loaded machine.
    for i in 0..50 {
        assert_eq!(r.cmd(&["PEXPIRE", &format!("k{i}"), "400"]), int(1));
    }
    let ks = r.cmd(&["INFO", "keyspace"]).text();
    assert!(info_field(&ks, "db0")
        .unwrap()
        .starts_with("keys=50,expires=0,"));
    assert!(info_field(&ks, "db3")
        .unwrap()
        .starts_with("keys=50,expires=50,"));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(r.cmd(&["KEYS", "*"]), arr(vec![]));
    assert_eq!(r.cmd(&["EXISTS", "k1", "k2", "k3"]), int(0));
    assert_eq!(r.cmd(&["SELECT", "0"]), ok());
    assert_eq!(r.cmd(&["DBSIZE"]), int(50));
    assert_eq!(r.cmd(&["GET", "k7"]), bulk("db0"));
    assert_eq!(r.cmd(&["FLUSHALL"]), ok());
    for db in 0..16 {
        assert_eq!(r.cmd(&["SELECT", &db.to_string()]), ok());
        assert_eq!(r.cmd(&["DBSIZE"]), int(0));
    }
}

/// Ten keys on both workers of a `--threads 2` server (some slot mod 2 == 0, some == 1).
fn spread_keys(prefix: &str) -> Vec<String> {
    let keys: Vec<String> = (0..10).map(|i| format!("{prefix}{i}")).collect();
    let owners: BTreeSet<u16> = keys.iter().map(|k| key_slot(k.as_bytes()) % 2).collect();
    assert_eq!(owners.len(), 2, "test keys must span both workers");
    keys
}

#[test]
fn mset_is_atomic_across_workers() {
    // A reader must never see some keys of one MSET and some of another, even though the
    // keys live on different workers.
    let s = Server::start(&["--threads", "2"]);
    let keys = spread_keys("atomic:");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let mut con = s.client();
        let keys = keys.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let pairs: Vec<(&str, u64)> = keys.iter().map(|k| (k.as_str(), i)).collect();
                let () = redis::cmd("MSET").arg(pairs).query(&mut con).unwrap();
                i += 1;
            }
            i
        })
    };
    let mut reader = s.client();
    let mut checks = 0;
    let deadline = std::time::Instant::now() + Duration::from_millis(1500);
    while std::time::Instant::now() < deadline {
        let vals: Vec<Option<u64>> = redis::cmd("MGET").arg(&keys).query(&mut reader).unwrap();
        let first = vals[0];
        assert!(
            vals.iter().all(|v| *v == first),
            "torn MSET seen by MGET: {vals:?}"
        );
        checks += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = writer.join().unwrap();
    assert!(
        checks > 10 && writes > 10,
        "too little work to check: {checks} reads, {writes} writes"
    );
}

#[test]
fn msetnx_has_one_winner_across_workers() {
    // Two clients race MSETNX over the same keys (on both workers): exactly one wins each
    // round, and the keys hold only the winner's values.
    let s = Server::start(&["--threads", "2"]);
    let keys = spread_keys("nx:");
    let mut admin = s.client();
    for round in 0..100 {
        let () = redis::cmd("DEL").arg(&keys).query(&mut admin).unwrap();
        let racers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|who| {
                let mut con = s.client();
                let keys = keys.clone();
                std::thread::spawn(move || {
                    let pairs: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), who)).collect();
                    let won: i64 = redis::cmd("MSETNX").arg(pairs).query(&mut con).unwrap();
                    (who, won)
                })
            })
            .collect();
        let results: Vec<(&str, i64)> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        let winners: Vec<&str> = results.iter().filter(|r| r.1 == 1).map(|r| r.0).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        let vals: Vec<String> = redis::cmd("MGET").arg(&keys).query(&mut admin).unwrap();
        assert!(
            vals.iter().all(|v| v == winners[0]),
            "round {round}: {vals:?}"
        );
    }
}
