//! Multi-key collection commands whose keys live on different workers (`--threads 2`, keys
//! without a common hash tag): SMOVE, the set algebra commands, LMOVE / RPOPLPUSH, the
//! zset stores (when sorted sets exist), RENAME / COPY of collections. Results, destination
//! overwrite and deletion, TTLs, atomicity under concurrency and durability.
//!
//! Every expectation holds for Redis 7.0.15 too (`SKERRY_TEST_SERVER=redis`, where the
//! worker split does not exist).

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

fn start() -> (Server, Raw) {
    let s = Server::start(&["--threads", "2"]);
    let r = s.raw();
    (s, r)
}

/// The members of set `key`, sorted.
fn members(r: &mut Raw, key: &str) -> Vec<String> {
    let mut m = r.cmd(&["SMEMBERS", key]).strings();
    m.sort();
    m
}

fn sorted(v: Value) -> Vec<String> {
    let mut m = v.strings();
    m.sort();
    m
}

fn range(r: &mut Raw, key: &str) -> Value {
    r.cmd(&["LRANGE", key, "0", "-1"])
}

fn ttl(r: &mut Raw, key: &str) -> i64 {
    r.cmd(&["TTL", key]).int()
}

#[test]
fn smove_across_workers() {
    let (_s, mut r) = start();
    let (a, b) = (key_on("sm:a", 0), key_on("sm:b", 1));
    r.cmd(&["SADD", &a, "1", "2", "3"]);
    r.cmd(&["EXPIRE", &a, "100"]);
    assert_eq!(r.cmd(&["SMOVE", &a, &b, "2"]), int(1));
    assert_eq!(members(&mut r, &a), ["1", "3"]);
    assert_eq!(members(&mut r, &b), ["2"]);
    // The source keeps its TTL; the new destination has none.
    assert!((90..=100).contains(&ttl(&mut r, &a)));
    assert_eq!(ttl(&mut r, &b), -1);
    // An existing destination keeps its TTL.
    r.cmd(&["EXPIRE", &b, "200"]);
    assert_eq!(r.cmd(&["SMOVE", &a, &b, "1"]), int(1));
    assert!((190..=200).contains(&ttl(&mut r, &b)));
    // A member already in the destination: still 1, removed from the source only.
    r.cmd(&["SADD", &b, "3"]);
    assert_eq!(r.cmd(&["SMOVE", &a, &b, "3"]), int(1));
    // The last member moved: the source is gone.
    assert_eq!(r.cmd(&["EXISTS", &a]), int(0));
    assert_eq!(members(&mut r, &b), ["1", "2", "3"]);
    assert_eq!(r.cmd(&["SMOVE", &a, &b, "1"]), int(0));
    assert_eq!(r.cmd(&["SMOVE", &b, &a, "nope"]), int(0));
    assert_eq!(r.cmd(&["EXISTS", &a]), int(0));
    // Wrong types: nothing changes.
    r.cmd(&["SET", &a, "str"]);
    assert_eq!(r.cmd(&["SMOVE", &b, &a, "1"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["SMOVE", &a, &b, "1"]), err(WRONGTYPE));
    assert_eq!(members(&mut r, &b), ["1", "2", "3"]);
    assert_eq!(r.cmd(&["GET", &a]), bulk("str"));
    // Even a missing member with a wrong-typed destination is an error (Redis checks types
    // first).
    assert_eq!(r.cmd(&["SMOVE", &b, &a, "nope"]), err(WRONGTYPE));
    // Integer members: the destination built by SMOVE is an intset.
    r.cmd(&["DEL", &a]);
    assert_eq!(r.cmd(&["SMOVE", &b, &a, "2"]), int(1));
    assert_eq!(r.cmd(&["OBJECT", "ENCODING", &a]), bulk("intset"));
}

#[test]
fn set_algebra_across_workers() {
    let (_s, mut r) = start();
    let (x, y, z) = (key_on("al:x", 0), key_on("al:y", 1), key_on("al:z", 0));
    r.cmd(&["SADD", &x, "a", "b", "c", "d"]);
    r.cmd(&["SADD", &y, "c", "d", "e"]);
    r.cmd(&["SADD", &z, "d", "f"]);
    assert_eq!(sorted(r.cmd(&["SINTER", &x, &y])), ["c", "d"]);
    assert_eq!(sorted(r.cmd(&["SINTER", &x, &y, &z])), ["d"]);
    assert_eq!(
        sorted(r.cmd(&["SUNION", &x, &y, &z])),
        ["a", "b", "c", "d", "e", "f"]
    );
    assert_eq!(sorted(r.cmd(&["SDIFF", &x, &y])), ["a", "b"]);
    assert_eq!(sorted(r.cmd(&["SDIFF", &y, &x, &z])), ["e"]);
    assert_eq!(r.cmd(&["SINTERCARD", "2", &x, &y]), int(2));
    assert_eq!(r.cmd(&["SINTERCARD", "2", &x, &y, "LIMIT", "1"]), int(1));
    // Missing keys count as empty sets.
    let none = key_on("al:none", 1);
    assert_eq!(r.cmd(&["SINTER", &x, &none]), arr(vec![]));
    assert_eq!(sorted(r.cmd(&["SUNION", &none, &y])), ["c", "d", "e"]);
    assert_eq!(sorted(r.cmd(&["SDIFF", &x, &none])), ["a", "b", "c", "d"]);
    // Wrong type anywhere.
    let s = key_on("al:str", 1);
    r.cmd(&["SET", &s, "v"]);
    for cmd in ["SINTER", "SUNION", "SDIFF"] {
        assert_eq!(r.cmd(&[cmd, &x, &s]), err(WRONGTYPE), "{cmd}");
    }
    // Every key's type is checked, even after a missing key has made the result empty.
    assert_eq!(r.cmd(&["SINTER", &none, &s]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["SINTERCARD", "2", &none, &s]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["SUNION", &none, &s]), err(WRONGTYPE));
}

#[test]
fn set_stores_across_workers() {
    let (_s, mut r) = start();
    let (x, y) = (key_on("st:x", 0), key_on("st:y", 1));
    r.cmd(&["SADD", &x, "1", "2", "3"]);
    r.cmd(&["SADD", &y, "3", "4"]);
    for w in 0..2usize {
        // The destination of every type, on either worker, with a TTL: overwritten, no TTL.
        let d = key_on(&format!("st:d{w}:"), w);
        for (kind, setup) in [
            ("string", vec!["SET", d.as_str(), "old"]),
            ("list", vec!["RPUSH", d.as_str(), "old"]),
            ("hash", vec!["HSET", d.as_str(), "f", "old"]),
            ("set", vec!["SADD", d.as_str(), "old"]),
            ("none", vec!["DEL", d.as_str()]),
        ] {
            r.cmd(&["DEL", &d]);
            r.cmd(&setup);
            r.cmd(&["EXPIRE", &d, "100"]);
            assert_eq!(r.cmd(&["SUNIONSTORE", &d, &x, &y]), int(4), "{kind}");
            assert_eq!(members(&mut r, &d), ["1", "2", "3", "4"], "{kind}");
            assert_eq!(ttl(&mut r, &d), -1, "{kind}");
            assert_eq!(r.cmd(&["OBJECT", "ENCODING", &d]), bulk("intset"));
            r.cmd(&setup);
            r.cmd(&["EXPIRE", &d, "100"]);
            assert_eq!(r.cmd(&["SINTERSTORE", &d, &x, &y]), int(1), "{kind}");
            assert_eq!(members(&mut r, &d), ["3"]);
            assert_eq!(ttl(&mut r, &d), -1);
            assert_eq!(r.cmd(&["SDIFFSTORE", &d, &x, &y]), int(2), "{kind}");
            assert_eq!(members(&mut r, &d), ["1", "2"]);
            // Empty results delete the destination.
            r.cmd(&["DEL", &d]);
            r.cmd(&setup);
            let none = key_on("st:none", 1 - w);
            assert_eq!(r.cmd(&["SINTERSTORE", &d, &x, &none]), int(0), "{kind}");
            assert_eq!(r.cmd(&["EXISTS", &d]), int(0), "{kind}");
            r.cmd(&setup);
            assert_eq!(r.cmd(&["SDIFFSTORE", &d, &x, &x]), int(0), "{kind}");
            assert_eq!(r.cmd(&["EXISTS", &d]), int(0), "{kind}");
            r.cmd(&setup);
            assert_eq!(r.cmd(&["SUNIONSTORE", &d, &none]), int(0), "{kind}");
            assert_eq!(r.cmd(&["EXISTS", &d]), int(0), "{kind}");
        }
    }
    // The destination may be one of the sources.
    assert_eq!(r.cmd(&["SUNIONSTORE", &x, &x, &y]), int(4));
    assert_eq!(members(&mut r, &x), ["1", "2", "3", "4"]);
    assert_eq!(r.cmd(&["SDIFFSTORE", &y, &x, &y]), int(2));
    assert_eq!(members(&mut r, &y), ["1", "2"]);
    // A wrong-typed source: error, destination untouched.
    let (s, d) = (key_on("st:str", 1), key_on("st:keep", 0));
    r.cmd(&["SET", &s, "v"]);
    r.cmd(&["SADD", &d, "kept"]);
    r.cmd(&["EXPIRE", &d, "100"]);
    for cmd in ["SUNIONSTORE", "SINTERSTORE", "SDIFFSTORE"] {
        assert_eq!(r.cmd(&[cmd, &d, &x, &s]), err(WRONGTYPE), "{cmd}");
    }
    assert_eq!(members(&mut r, &d), ["kept"]);
    assert!(ttl(&mut r, &d) > 0);
    // String members: a listpack (Redis 7.2+; a hashtable past set-max-listpack-entries).
    r.cmd(&["SADD", &y, "word"]);
    assert_eq!(r.cmd(&["SUNIONSTORE", &d, &x, &y]), int(5));
    assert_eq!(r.cmd(&["OBJECT", "ENCODING", &d]), bulk("listpack"));
}

#[test]
fn lmove_and_rpoplpush_across_workers() {
    let (_s, mut r) = start();
    let (a, b) = (key_on("lm:a", 0), key_on("lm:b", 1));
    r.cmd(&["RPUSH", &a, "1", "2", "3"]);
    r.cmd(&["EXPIRE", &a, "100"]);
    assert_eq!(r.cmd(&["LMOVE", &a, &b, "LEFT", "RIGHT"]), bulk("1"));
    assert_eq!(r.cmd(&["LMOVE", &a, &b, "RIGHT", "LEFT"]), bulk("3"));
    assert_eq!(range(&mut r, &a), bulks(&["2"]));
    assert_eq!(range(&mut r, &b), bulks(&["3", "1"]));
    assert!((90..=100).contains(&ttl(&mut r, &a)));
    assert_eq!(ttl(&mut r, &b), -1);
    r.cmd(&["EXPIRE", &b, "200"]);
    assert_eq!(r.cmd(&["RPOPLPUSH", &a, &b]), bulk("2"));
    assert_eq!(r.cmd(&["EXISTS", &a]), int(0));
    assert_eq!(range(&mut r, &b), bulks(&["2", "3", "1"]));
    assert!((190..=200).contains(&ttl(&mut r, &b)));
    // Nothing to move.
    assert_eq!(r.cmd(&["RPOPLPUSH", &a, &b]), Value::Null);
    assert_eq!(r.cmd(&["LMOVE", &a, &b, "LEFT", "LEFT"]), Value::Null);
    assert_eq!(r.cmd(&["EXISTS", &a]), int(0));
    // Wrong-typed destination: error, source unchanged.
    r.cmd(&["HSET", &a, "f", "v"]);
    assert_eq!(r.cmd(&["LMOVE", &b, &a, "LEFT", "LEFT"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["RPOPLPUSH", &b, &a]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["RPOPLPUSH", &a, &b]), err(WRONGTYPE));
    assert_eq!(range(&mut r, &b), bulks(&["2", "3", "1"]));
    // All four directions.
    r.cmd(&["DEL", &a]);
    assert_eq!(r.cmd(&["LMOVE", &b, &a, "LEFT", "LEFT"]), bulk("2"));
    assert_eq!(r.cmd(&["LMOVE", &b, &a, "LEFT", "RIGHT"]), bulk("3"));
    assert_eq!(range(&mut r, &a), bulks(&["2", "3"]));
    assert_eq!(r.cmd(&["LMOVE", &b, &a, "RIGHT", "LEFT"]), bulk("1"));
    assert_eq!(r.cmd(&["EXISTS", &b]), int(0));
    assert_eq!(r.cmd(&["LMOVE", &a, &b, "RIGHT", "RIGHT"]), bulk("3"));
    assert_eq!(range(&mut r, &a), bulks(&["1", "2"]));
    assert_eq!(range(&mut r, &b), bulks(&["3"]));
}

#[test]
fn rename_and_copy_collections_across_workers() {
    let (_s, mut r) = start();
    for (kind, setup, check) in [
        ("list", vec!["RPUSH", "1", "2"], vec!["LRANGE", "0", "-1"]),
        ("hash", vec!["HSET", "f", "v"], vec!["HGETALL"]),
        ("set", vec!["SADD", "m"], vec!["SMEMBERS"]),
    ] {
        let (src, dst) = (
            key_on(&format!("rn:{kind}:s"), 0),
            key_on(&format!("rn:{kind}:d"), 1),
        );
        let mk = |r: &mut Raw, key: &str| {
            let mut c = vec![setup[0], key];
            c.extend(&setup[1..]);
            r.cmd(&c)
        };
        let get = |r: &mut Raw, key: &str| {
            let mut c = vec![check[0], key];
            c.extend(&check[1..]);
            r.cmd(&c)
        };
        mk(&mut r, &src);
        let want = get(&mut r, &src);
        r.cmd(&["EXPIRE", &src, "100"]);
        // RENAME over a string with its own TTL: the value and the source's TTL move.
        r.cmd(&["SET", &dst, "old", "EX", "500"]);
        assert_eq!(r.cmd(&["RENAME", &src, &dst]), ok(), "{kind}");
        assert_eq!(r.cmd(&["EXISTS", &src]), int(0));
        assert_eq!(get(&mut r, &dst), want, "{kind}");
        assert_eq!(r.cmd(&["TYPE", &dst]), simple(kind));
        assert!((90..=100).contains(&ttl(&mut r, &dst)), "{kind}");
        // Back without a TTL: the destination's old TTL does not survive.
        r.cmd(&["PERSIST", &dst]);
        r.cmd(&["SET", &src, "x", "EX", "500"]);
        assert_eq!(r.cmd(&["RENAME", &dst, &src]), ok());
        assert_eq!(ttl(&mut r, &src), -1, "{kind}");
        assert_eq!(r.cmd(&["RENAMENX", &src, &dst]), int(1));
        r.cmd(&["SET", &src, "blocker"]);
        assert_eq!(r.cmd(&["RENAMENX", &dst, &src]), int(0));
        assert_eq!(get(&mut r, &dst), want);
        r.cmd(&["DEL", &src]);
        // COPY: the value and its TTL; the copy is independent.
        r.cmd(&["EXPIRE", &dst, "100"]);
        assert_eq!(r.cmd(&["COPY", &dst, &src]), int(1), "{kind}");
        assert_eq!(get(&mut r, &src), want);
        assert!((90..=100).contains(&ttl(&mut r, &src)));
        assert_eq!(r.cmd(&["COPY", &dst, &src]), int(0), "{kind}");
        r.cmd(&["SET", &src, "str"]);
        assert_eq!(r.cmd(&["COPY", &dst, &src]), int(0), "{kind}");
        assert_eq!(r.cmd(&["COPY", &dst, &src, "REPLACE"]), int(1), "{kind}");
        assert_eq!(get(&mut r, &src), want);
        mk(&mut r, &dst);
        r.cmd(&["DEL", &dst]);
        assert_eq!(
            get(&mut r, &src),
            want,
            "{kind}: the copy changed with the original"
        );
        assert_eq!(
            r.cmd(&["COPY", &dst, &src]),
            int(0),
            "{kind}: missing source"
        );
        assert_eq!(
            r.cmd(&["RENAME", &dst, &src]),
            err("ERR no such key"),
            "{kind}"
        );
        r.cmd(&["DEL", &src]);
    }
}

#[test]
fn zset_stores_across_workers() {
    let (_s, mut r) = start();
    let (x, y, d) = (key_on("z:x", 0), key_on("z:y", 1), key_on("z:d", 1));
    assert_eq!(r.cmd(&["ZADD", &x, "1", "a", "2", "b"]), int(2));
    assert_eq!(r.cmd(&["ZADD", &y, "10", "b", "20", "c"]), int(2));
    assert_eq!(r.cmd(&["SET", &d, "old", "EX", "100"]), ok());
    assert_eq!(r.cmd(&["ZUNIONSTORE", &d, "2", &x, &y]), int(3));
    assert_eq!(
        r.cmd(&["ZRANGE", &d, "0", "-1", "WITHSCORES"]),
        bulks(&["a", "1", "b", "12", "c", "20"])
    );
    assert_eq!(ttl(&mut r, &d), -1);
    assert_eq!(
        r.cmd(&[
            "ZINTERSTORE",
            &d,
            "2",
            &x,
            &y,
            "WEIGHTS",
            "2",
            "1",
            "AGGREGATE",
            "MAX"
        ]),
        int(1)
    );
    assert_eq!(
        r.cmd(&["ZRANGE", &d, "0", "-1", "WITHSCORES"]),
        bulks(&["b", "10"])
    );
    assert_eq!(r.cmd(&["ZRANGESTORE", &d, &y, "0", "0"]), int(1));
    assert_eq!(r.cmd(&["ZRANGE", &d, "0", "-1"]), bulks(&["b"]));
    // Empty results delete the destination.
    assert_eq!(r.cmd(&["ZRANGESTORE", &d, &y, "5", "9"]), int(0));
    assert_eq!(r.cmd(&["EXISTS", &d]), int(0));
    r.cmd(&["SADD", &d, "m"]);
    let none = key_on("z:none", 0);
    assert_eq!(r.cmd(&["ZINTERSTORE", &d, "2", &x, &none]), int(0));
    assert_eq!(r.cmd(&["EXISTS", &d]), int(0));
    // Sets take part in ZUNIONSTORE with score 1.
    let s = key_on("z:set", 0);
    r.cmd(&["SADD", &s, "a", "q"]);
    assert_eq!(r.cmd(&["ZUNIONSTORE", &d, "2", &x, &s]), int(3));
    assert_eq!(
        r.cmd(&["ZRANGE", &d, "0", "-1", "WITHSCORES"]),
        bulks(&["q", "1", "a", "2", "b", "2"])
    );
    let str_key = key_on("z:str", 0);
    r.cmd(&["SET", &str_key, "v"]);
    assert_eq!(
        r.cmd(&["ZUNIONSTORE", &d, "2", &x, &str_key]),
        err(WRONGTYPE)
    );
}

#[test]
fn cross_worker_writes_survive_kill_9_with_appendfsync_always() {
    let mut s = Server::start(&[
        "--threads",
        "2",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]);
    let (a, b, d) = (key_on("du:a", 0), key_on("du:b", 1), key_on("du:d", 1));
    let (la, lb) = (key_on("du:la", 1), key_on("du:lb", 0));
    {
        let mut r = s.raw();
        r.cmd(&["SADD", &a, "1", "2", "3"]);
        r.cmd(&["RPUSH", &la, "x", "y"]);
        assert_eq!(r.cmd(&["SMOVE", &a, &b, "2"]), int(1));
        assert_eq!(r.cmd(&["SUNIONSTORE", &d, &a, &b]), int(3));
        assert_eq!(r.cmd(&["LMOVE", &la, &lb, "LEFT", "LEFT"]), bulk("x"));
        assert_eq!(r.cmd(&["RPOPLPUSH", &la, &lb]), bulk("y"));
        s.kill();
    }
    s.start_again();
    let mut r = s.raw();
    assert_eq!(members(&mut r, &a), ["1", "3"]);
    assert_eq!(members(&mut r, &b), ["2"]);
    assert_eq!(members(&mut r, &d), ["1", "2", "3"]);
    assert_eq!(r.cmd(&["EXISTS", &la]), int(0));
    assert_eq!(range(&mut r, &lb), bulks(&["y", "x"]));
    // Cross-worker commands over values that are back on the devices only.
    s.kill();
    s.start_again();
    let mut r = s.raw();
    assert_eq!(r.cmd(&["SMOVE", &b, &a, "2"]), int(1));
    assert_eq!(r.cmd(&["SINTERSTORE", &d, &d, &a]), int(3));
    assert_eq!(r.cmd(&["LMOVE", &lb, &la, "RIGHT", "LEFT"]), bulk("x"));
    s.kill();
    s.start_again();
    let mut r = s.raw();
    assert_eq!(members(&mut r, &a), ["1", "2", "3"]);
    assert_eq!(r.cmd(&["EXISTS", &b]), int(0));
    assert_eq!(members(&mut r, &d), ["1", "2", "3"]);
    assert_eq!(range(&mut r, &la), bulks(&["x"]));
    assert_eq!(range(&mut r, &lb), bulks(&["y"]));
}

/// Two connections move members back and forth between two sets on different workers
/// (and two more move list elements between two lists), while a third reads both sizes
/// atomically (MULTI SCARD SCARD EXEC, and SUNION / SINTER): the total never changes, no
/// member is ever in both or in neither, and at the end every member is in exactly one.
#[test]
fn moves_across_workers_are_atomic_under_concurrency() {
    let s = Server::start(&["--threads", "2"]);
    let (a, b) = (key_on("at:a", 0), key_on("at:b", 1));
    let (la, lb) = (key_on("at:la", 0), key_on("at:lb", 1));
    const N: usize = 40;
    let all: Vec<String> = (0..N).map(|i| format!("m{i}")).collect();
    let mut setup = s.raw();
    let mut sadd = vec!["SADD", a.as_str()];
    sadd.extend(all.iter().map(|m| m.as_str()));
    setup.cmd(&sadd);
    let mut rpush = vec!["RPUSH", la.as_str()];
    rpush.extend(all.iter().map(|m| m.as_str()));
    setup.cmd(&rpush);
    let stop = Arc::new(AtomicBool::new(false));
    let moves = Arc::new(AtomicU64::new(0));
    let mut movers = Vec::new();
    for (i, (from, to)) in [(&a, &b), (&b, &a)].into_iter().enumerate() {
        let mut r = s.raw();
        let (from, to) = (from.clone(), to.clone());
        let (stop, moves, all) = (stop.clone(), moves.clone(), all.clone());
        movers.push(std::thread::spawn(move || {
            let mut rng = Rng::new(i as u64 + 7);
            while !stop.load(Ordering::SeqCst) {
                // A few moves per round trip; a member may or may not be in `from`.
                let cmds: Vec<Vec<&str>> = (0..4)
                    .map(|_| {
                        let m = &all[rng.range(0, N as u64) as usize];
                        vec!["SMOVE", from.as_str(), to.as_str(), m.as_str()]
                    })
                    .collect();
                for v in pipeline(&mut r, &cmds) {
                    assert!(matches!(v, Value::Integer(0 | 1)), "SMOVE answered {v:?}");
                }
                moves.fetch_add(4, Ordering::SeqCst);
            }
        }));
    }
    for (i, (from, to)) in [(&la, &lb), (&lb, &la)].into_iter().enumerate() {
        let mut r = s.raw();
        let (from, to) = (from.clone(), to.clone());
        let (stop, moves) = (stop.clone(), moves.clone());
        movers.push(std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let cmds = vec![
                    vec!["LMOVE", from.as_str(), to.as_str(), "LEFT", "RIGHT"],
                    vec!["RPOPLPUSH", from.as_str(), to.as_str()],
                    vec![
                        "LMOVE",
                        from.as_str(),
                        to.as_str(),
                        if i == 0 { "RIGHT" } else { "LEFT" },
                        "LEFT",
                    ],
                ];
                for v in pipeline(&mut r, &cmds) {
                    assert!(
                        matches!(v, Value::Bulk(_) | Value::Null),
                        "move answered {v:?}"
                    );
                }
                moves.fetch_add(3, Ordering::SeqCst);
            }
        }));
    }
    let mut r = s.raw();
    let mut checks = 0;
    let deadline = Instant::now() + Duration::from_millis(10_000);
    while Instant::now() < deadline && (checks < 100 || moves.load(Ordering::SeqCst) < 1000) {
        let rs = pipeline(
            &mut r,
            &[
                vec!["MULTI"],
                vec!["SCARD", a.as_str()],
                vec!["SCARD", b.as_str()],
                vec!["LLEN", la.as_str()],
                vec!["LLEN", lb.as_str()],
                vec!["EXEC"],
            ],
        );
        let e = rs[5].items();
        let (ca, cb, ll, lr) = (e[0].int(), e[1].int(), e[2].int(), e[3].int());
        assert_eq!(ca + cb, N as i64, "SCARD {a} + SCARD {b} = {ca} + {cb}");
        assert_eq!(ll + lr, N as i64, "LLEN {la} + LLEN {lb} = {ll} + {lr}");
        assert_eq!(r.cmd(&["SUNION", &a, &b]).items().len(), N, "SUNION");
        assert_eq!(r.cmd(&["SINTER", &a, &b]), arr(vec![]), "SINTER");
        checks += 1;
    }
    stop.store(true, Ordering::SeqCst);
    for h in movers {
        h.join().unwrap();
    }
    let n = moves.load(Ordering::SeqCst);
    assert!(
        n > 100 && checks > 20,
        "too little work: {n} moves, {checks} checks"
    );
    let union: BTreeSet<String> = members(&mut r, &a)
        .into_iter()
        .chain(members(&mut r, &b))
        .collect();
    assert_eq!(union, all.iter().cloned().collect::<BTreeSet<_>>());
    assert_eq!(
        r.cmd(&["SCARD", &a]).int() + r.cmd(&["SCARD", &b]).int(),
        N as i64
    );
    let mut elems: Vec<String> = range(&mut r, &la)
        .strings()
        .into_iter()
        .chain(range(&mut r, &lb).strings())
        .collect();
    elems.sort();
    let mut want = all.clone();
    want.sort();
    assert_eq!(elems, want, "list elements lost or duplicated");
}

/// A cross-worker command that writes a list a client waits on serves it, and one that
/// writes a WATCHed key aborts the watcher's EXEC.
#[test]
fn cross_worker_writes_wake_waiters_and_touch_watches() {
    let s = Server::start(&["--threads", "2"]);
    let mut p = s.raw();
    let mut a = s.raw();
    let (src, dst) = (key_on("wk:src", 0), key_on("wk:dst", 1));
    for (i, cmd) in [
        vec!["LMOVE", src.as_str(), dst.as_str(), "LEFT", "RIGHT"],
        vec!["RPOPLPUSH", src.as_str(), dst.as_str()],
        vec!["RENAME", src.as_str(), dst.as_str()],
        vec!["COPY", src.as_str(), dst.as_str()],
    ]
    .into_iter()
    .enumerate()
    {
        // From several connections, so that some run on the worker owning the destination
        // and some on the other one.
        for j in 0..4 {
            let mut c = s.raw();
            let v = format!("v{i}-{j}");
            p.cmd(&["DEL", &src, &dst]);
            p.cmd(&["RPUSH", &src, &v]);
            a.send(&resp::encode(&["BLPOP", dst.as_str(), "5"]));
            wait_blocked(&mut p, 1);
            assert!(!c.cmd(&cmd).is_error(), "{cmd:?}");
            assert_eq!(a.read_value(), bulks(&[&dst, &v]), "{cmd:?}");
            assert_eq!(p.cmd(&["EXISTS", &dst]), int(0), "{cmd:?}");
            wait_blocked(&mut p, 0);
        }
    }
    // Inside a transaction too.
    p.cmd(&["DEL", &src, &dst]);
    a.send(&resp::encode(&["BLPOP", dst.as_str(), "5"]));
    wait_blocked(&mut p, 1);
    p.cmd(&["MULTI"]);
    p.cmd(&["RPUSH", &src, "t1", "t2"]);
    p.cmd(&["LMOVE", &src, &dst, "RIGHT", "LEFT"]);
    p.cmd(&["LMOVE", &src, &dst, "RIGHT", "LEFT"]);
    assert_eq!(p.cmd(&["EXEC"]), arr(vec![int(2), bulk("t2"), bulk("t1")]));
    assert_eq!(a.read_value(), bulks(&[&dst, "t1"]));
    assert_eq!(range(&mut p, &dst), bulks(&["t2"]));
    // WATCH.
    let (sa, sb) = (key_on("wk:sa", 0), key_on("wk:sb", 1));
    for cmd in [
        vec!["SMOVE", sa.as_str(), sb.as_str(), "m"],
        vec!["SUNIONSTORE", sb.as_str(), sa.as_str()],
        vec!["LMOVE", src.as_str(), sb.as_str(), "LEFT", "LEFT"],
    ] {
        p.cmd(&["DEL", &sa, &sb, &src]);
        p.cmd(&["SADD", &sa, "m"]);
        p.cmd(&["RPUSH", &src, "e"]);
        a.cmd(&["WATCH", &sb]);
        assert!(!p.cmd(&cmd).is_error(), "{cmd:?}");
        a.cmd(&["MULTI"]);
        a.cmd(&["PING"]);
        assert_eq!(a.cmd(&["EXEC"]), Value::NullArray, "{cmd:?}");
    }
}
