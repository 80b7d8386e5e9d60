//! Persistence with `appendonly yes`: every write goes to the data file, a restart replays it
//! (keys, values, TTLs, databases), and with `appendfsync always` every acknowledged write
//! survives `kill -9`.
//!
//! Under `SKERRY_TEST_SERVER=redis` the same tests run against Redis with its AOF.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;

const PERSIST: &[&str] = &["--appendonly", "yes", "--data-size", "256mb"];

#[test]
fn restart_keeps_keys_values_ttls_and_databases() {
    let mut s = Server::start(PERSIST);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["SET", "plain", "v1"]), ok());
    assert_eq!(r.cmd(&["SET", "ttl", "v2", "EX", "1000"]), ok());
    assert_eq!(r.cmd(&["MSET", "a", "1", "b", "2", "c", "3"]), ok());
    assert_eq!(r.cmd(&["DEL", "b"]), int(1));
    assert_eq!(r.cmd(&["INCR", "a"]), int(2));
    assert_eq!(r.cmd(&["APPEND", "plain", "+more"]), int(7));
    assert_eq!(r.cmd(&["EXPIRE", "c", "500"]), int(1));
    assert_eq!(r.cmd(&["SET", "gone", "x", "PX", "1"]), ok());
    assert_eq!(r.cmd(&["SELECT", "5"]), ok());
    assert_eq!(r.cmd(&["SET", "plain", "db5"]), ok());
    assert_eq!(r.cmd(&["SELECT", "6"]), ok());
    assert_eq!(r.cmd(&["SET", "flushed", "x"]), ok());
    assert_eq!(r.cmd(&["FLUSHDB"]), ok());
    drop(r);
    std::thread::sleep(Duration::from_millis(20));
    // A clean stop (SIGTERM) syncs the data file.
    s.signal(libc::SIGTERM);
    assert!(s
        .wait_exit(Duration::from_secs(10))
        .is_some_and(|st| st.success()));
    s.start_again();
    let mut r = s.raw();
    assert_eq!(
        r.cmd(&["MGET", "plain", "ttl", "a", "b", "c", "gone"]),
        arr(vec![
            bulk("v1+more"),
            bulk("v2"),
            bulk("2"),
            Value::Null,
            bulk("3"),
            Value::Null
        ])
    );
    let ttl = match r.cmd(&["TTL", "ttl"]) {
        Value::Integer(n) => n,
        other => panic!("TTL: {other:?}"),
    };
    assert!(
        (990..=1000).contains(&ttl),
        "TTL survives as an absolute time: {ttl}"
    );
    let ttl_c = match r.cmd(&["TTL", "c"]) {
        Value::Integer(n) => n,
        other => panic!("TTL: {other:?}"),
    };
    assert!((490..=500).contains(&ttl_c), "{ttl_c}");
    assert_eq!(r.cmd(&["TTL", "plain"]), int(-1));
    assert_eq!(r.cmd(&["DBSIZE"]), int(4));
    assert_eq!(r.cmd(&["SELECT", "5"]), ok());
    assert_eq!(r.cmd(&["GET", "plain"]), bulk("db5"));
    assert_eq!(r.cmd(&["SELECT", "6"]), ok());
    assert_eq!(r.cmd(&["DBSIZE"]), int(0), "FLUSHDB is durable");
}

#[test]
fn acknowledged_writes_survive_kill_9_with_appendfsync_always() {
    let mut args = PERSIST.to_vec();
    args.extend(["--appendfsync", "always"]);
    let mut s = Server::start(&args);
    // key -> last acknowledged value, across all cycles.
    let mut acked: std::collections::HashMap<String, String> = Default::default();
    for cycle in 0..5 {
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let mut con = s.client();
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    let mut in_flight = None;
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let key = format!("k{t}:{}", i % 50);
                        let value = format!("c{cycle}-t{t}-i{i}");
                        let r: redis::RedisResult<()> =
                            redis::cmd("SET").arg(&key).arg(&value).query(&mut con);
                        match r {
                            Ok(()) => mine.push((key, value)),
                            Err(_) => {
                                // Killed mid-request: this write may or may not have landed.
                                in_flight = Some((key, value));
                                break;
                            }
                        }
                        i += 1;
                    }
                    (mine, in_flight)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        s.kill(); // SIGKILL while the writers are still writing
        stop.store(true, Ordering::Relaxed);
        let mut writes = 0;
        let mut unacknowledged: std::collections::HashMap<String, String> = Default::default();
        for w in writers {
            let (mine, in_flight) = w.join().unwrap();
            for (k, v) in mine {
                acked.insert(k, v);
                writes += 1;
            }
            if let Some((k, v)) = in_flight {
                unacknowledged.insert(k, v);
            }
        }
        assert!(writes > 0, "cycle {cycle}: no write was acknowledged");
        s.start_again();
        let mut con = s.client();
        // Redis answers -LOADING while it replays its AOF; wait until the data set is loaded.
        assert!(wait_until(Duration::from_secs(10), || {
            redis::cmd("GET")
                .arg("probe")
                .query::<Option<String>>(&mut con)
                .is_ok()
        }));
        for (k, v) in acked.iter_mut() {
            let got: Option<String> = redis::cmd("GET").arg(k.as_str()).query(&mut con).unwrap();
            let got = got.unwrap_or_else(|| panic!("cycle {cycle}: acknowledged key {k} lost"));
            if got != *v {
                // Only the write in flight when the server died may be newer than the last
                // acknowledged one.
                assert_eq!(
                    unacknowledged.get(k.as_str()),
                    Some(&got),
                    "cycle {cycle}: {k} holds {got}, last acknowledged {v}"
                );
                *v = got;
            }
        }
    }
}
