//! The per-key access clock end to end (keyspace/clock.rs, decision 0029): OBJECT IDLETIME
//! grows while a key is left alone; reads, writes and TOUCH reset it, TTL / TYPE / EXISTS /
//! OBJECT do not; CLIENT NO-TOUCH (with TOUCH still touching, also from a script); the LFU
//! counter under `maxmemory-policy allkeys-lfu` (OBJECT FREQ, Redis's logarithmic counter
//! and its errors); RESTORE's IDLETIME and FREQ. With Skerry on one and two threads (keys
//! on both workers, so commands hop to their owner).
//!
//! Except where marked Skerry-only, these tests pass against Redis too
//! (`SKERRY_TEST_SERVER=redis`).

mod common;

use std::time::Duration;

use common::*;

const LFU_IDLE_ERR: &str = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
const LRU_FREQ_ERR: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";

/// Long enough for every key set before it to be idle two whole seconds (Redis's clock is
/// refreshed ten times a second).
const IDLE_SLEEP: Duration = Duration::from_millis(2300);

fn start(threads: &str) -> Server {
    if is_redis() {
        Server::start(&[])
    } else {
        Server::start(&["--threads", threads])
    }
}

fn idle(r: &mut Raw, key: &str) -> i64 {
    match r.cmd(&["OBJECT", "IDLETIME", key]) {
        Value::Integer(n) => n,
        other => panic!("OBJECT IDLETIME {key}: {other:?}"),
    }
}

fn freq(r: &mut Raw, key: &str) -> i64 {
    match r.cmd(&["OBJECT", "FREQ", key]) {
        Value::Integer(n) => n,
        other => panic!("OBJECT FREQ {key}: {other:?}"),
    }
}

/// Keys named `{prefix}...` on worker 0 and worker 1 (of two).
fn keys(prefix: &str) -> [String; 2] {
    [key_on(prefix, 0), key_on(prefix, 1)]
}

#[test]
fn idle_time_grows_and_only_accesses_reset_it() {
    for threads in ["1", "2"] {
        let s = start(threads);
        let mut r = s.raw();
        let mut c = s.raw();
        // Per worker: one key per kind of command.
        let names = [
            "quiet", "get", "set", "touch", "incr", "lrange", "hget", "mget", "append", "watch",
        ];
        let k: Vec<[String; 2]> = names.iter().map(|n| keys(&format!("{n}:"))).collect();
        for (i, pair) in k.iter().enumerate() {
            for key in pair {
                match names[i] {
                    "lrange" => assert_eq!(r.cmd(&["RPUSH", key, "a", "b"]), int(2)),
                    "hget" => assert_eq!(r.cmd(&["HSET", key, "f", "v"]), int(1)),
                    // Not a small integer: Redis shares those between keys (and their clock).
                    _ => assert_eq!(r.cmd(&["SET", key, "100000"]), ok()),
                }
                assert!(idle(&mut r, key) <= 1, "a new key is just accessed");
            }
        }
        assert_eq!(r.cmd(&["OBJECT", "IDLETIME", "nokey"]), Value::Null);
        std::thread::sleep(IDLE_SLEEP);
        for pair in &k {
            for key in pair {
                // Not accesses (Redis's LOOKUP_NOTOUCH).
                for cmd in ["TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "TYPE", "EXISTS"] {
                    r.cmd(&[cmd, key]);
                }
                r.cmd(&["OBJECT", "ENCODING", key]);
                r.cmd(&["OBJECT", "REFCOUNT", key]);
                r.cmd(&["MEMORY", "USAGE", key]);
                assert!(idle(&mut r, key) >= 2, "{key} threads {threads}");
            }
        }
        // EXISTS of keys on both workers at once (across workers with two threads).
        assert_eq!(r.cmd(&["EXISTS", &k[0][0], &k[0][1]]), int(2));
        for (i, pair) in k.iter().enumerate() {
            for key in pair {
                let reply = match names[i] {
                    "quiet" => continue,
                    "get" => r.cmd(&["GET", key]),
                    "set" => r.cmd(&["SET", key, "200000"]),
                    "touch" => r.cmd(&["TOUCH", key, "nokey"]),
                    "incr" => r.cmd(&["INCR", key]),
                    "lrange" => r.cmd(&["LRANGE", key, "0", "-1"]),
                    "hget" => r.cmd(&["HGET", key, "f"]),
                    "mget" => r.cmd(&["MGET", key, "nokey"]),
                    "append" => r.cmd(&["APPEND", key, "x"]),
                    "watch" => {
                        // Inside MULTI, from another connection.
                        assert_eq!(c.cmd(&["MULTI"]), ok());
                        c.cmd(&["STRLEN", key]);
                        c.cmd(&["EXEC"])
                    }
                    _ => unreachable!(),
                };
                assert!(!matches!(reply, Value::Error(_)), "{key}: {reply:?}");
            }
        }
        for (i, pair) in k.iter().enumerate() {
            for key in pair {
                let t = idle(&mut r, key);
                if names[i] == "quiet" {
                    assert!(t >= 2, "{key} idle {t} threads {threads}");
                } else {
                    assert!(t <= 1, "{} resets the idle time: {key} idle {t}", names[i]);
                }
            }
        }
        // TOUCH of keys on both workers at once.
        let q = &k[0];
        assert_eq!(r.cmd(&["TOUCH", &q[0], &q[1], "nokey"]), int(2));
        assert!(idle(&mut r, &q[0]) <= 1 && idle(&mut r, &q[1]) <= 1);
        // A script's reads are accesses.
        let s2 = keys("script:");
        for key in &s2 {
            assert_eq!(r.cmd(&["SET", key, "v"]), ok());
        }
        std::thread::sleep(IDLE_SLEEP);
        for key in &s2 {
            assert!(idle(&mut r, key) >= 2);
            assert_eq!(
                r.cmd(&["EVAL", "return redis.call('get', KEYS[1])", "1", key]),
                bulk("v")
            );
            assert!(idle(&mut r, key) <= 1, "EVAL GET {key}");
        }
    }
}

#[test]
fn no_touch_clients_leave_the_clock_alone_except_touch() {
    for threads in ["1", "2"] {
        let s = start(threads);
        let mut r = s.raw();
        let names = [
            "get",
            "set",
            "eval",
            "multi",
            "mget",
            "touch",
            "touch2",
            "evaltouch",
            "off",
        ];
        let k: Vec<[String; 2]> = names.iter().map(|n| keys(&format!("nt{n}:"))).collect();
        for pair in &k {
            for key in pair {
                assert_eq!(r.cmd(&["SET", key, "v"]), ok());
            }
        }
        assert_eq!(r.cmd(&["CLIENT", "NO-TOUCH", "on"]), ok());
        std::thread::sleep(IDLE_SLEEP);
        for (i, pair) in k.iter().enumerate() {
            // Both keys at once (across the two workers with two threads).
            match names[i] {
                "mget" => assert_eq!(r.cmd(&["MGET", &pair[0], &pair[1]]), bulks(&["v", "v"])),
                "touch2" => assert_eq!(r.cmd(&["TOUCH", &pair[0], &pair[1]]), int(2)),
                _ => {}
            }
            for key in pair {
                match names[i] {
                    "mget" | "touch2" => {}
                    "get" => assert_eq!(r.cmd(&["GET", key]), bulk("v")),
                    // An overwrite keeps the old value's clock (Redis's dbSetValue).
                    "set" => assert_eq!(r.cmd(&["SET", key, "w"]), ok()),
                    "eval" => assert_eq!(
                        r.cmd(&["EVAL", "return redis.call('get', KEYS[1])", "1", key]),
                        bulk("v")
                    ),
                    "multi" => {
                        assert_eq!(r.cmd(&["MULTI"]), ok());
                        r.cmd(&["GET", key]);
                        r.cmd(&["EXEC"]);
                    }
                    "touch" => assert_eq!(r.cmd(&["TOUCH", key]), int(1)),
                    "evaltouch" => assert_eq!(
                        r.cmd(&["EVAL", "return redis.call('touch', KEYS[1])", "1", key]),
                        int(1)
                    ),
                    "off" => {}
                    _ => unreachable!(),
                }
            }
        }
        assert_eq!(r.cmd(&["CLIENT", "NO-TOUCH", "off"]), ok());
        for key in &k[names.len() - 1] {
            assert_eq!(r.cmd(&["GET", key]), bulk("v"));
        }
        for (i, pair) in k.iter().enumerate() {
            for key in pair {
                let t = idle(&mut r, key);
                match names[i] {
                    "touch" | "touch2" | "evaltouch" | "off" => {
                        assert!(t <= 1, "{}: {key} idle {t} threads {threads}", names[i])
                    }
                    _ => assert!(t >= 2, "{}: {key} idle {t} threads {threads}", names[i]),
                }
            }
        }
    }
}

#[test]
fn lfu_policy_counts_accesses_logarithmically() {
    for threads in ["1", "2"] {
        let s = start(threads);
        let mut r = s.raw();
        let [a, b] = keys("lfu:");
        assert_eq!(r.cmd(&["SET", &a, "v"]), ok());
        assert_eq!(r.cmd(&["OBJECT", "FREQ", &a]), err(LRU_FREQ_ERR));
        assert_eq!(r.cmd(&["OBJECT", "FREQ", "nokey"]), Value::Null);
        assert_eq!(
            r.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]),
            ok()
        );
        assert_eq!(r.cmd(&["OBJECT", "IDLETIME", &a]), err(LFU_IDLE_ERR));
        assert_eq!(r.cmd(&["OBJECT", "IDLETIME", "nokey"]), Value::Null);
        // No decay for exact counts.
        assert_eq!(r.cmd(&["CONFIG", "SET", "lfu-decay-time", "0"]), ok());
        assert_eq!(
            r.cmd(&["CONFIG", "GET", "lfu-decay-time"]),
            bulks(&["lfu-decay-time", "0"])
        );
        for key in [&a, &b] {
            assert_eq!(r.cmd(&["SET", key, "new"]), ok());
            assert_eq!(r.cmd(&["DEL", key]), int(1));
            // A new key starts at LFU_INIT_VAL (5).
            assert_eq!(r.cmd(&["SET", key, "v"]), ok());
            assert_eq!(freq(&mut r, key), 5, "{key}");
            // Not accesses.
            for cmd in ["TYPE", "EXISTS", "TTL", "PTTL"] {
                r.cmd(&[cmd, key]);
            }
            assert_eq!(freq(&mut r, key), 5, "{key}");
            // The first access always counts (probability 1 / (0 * factor + 1)).
            assert_eq!(r.cmd(&["GET", key]), bulk("v"));
            assert_eq!(freq(&mut r, key), 6, "{key}");
            // Then rarely: 1,000 reads reach about 18 with factor 10.
            for _ in 0..1000 {
                r.cmd(&["GET", key]);
            }
            let f = freq(&mut r, key);
            assert!((10..=30).contains(&f), "{key}: 1,000 hits gave {f}");
        }
        // With lfu-log-factor 0 every access counts.
        assert_eq!(r.cmd(&["CONFIG", "SET", "lfu-log-factor", "0"]), ok());
        let before = freq(&mut r, &a);
        for _ in 0..50 {
            r.cmd(&["GET", &a]);
        }
        r.cmd(&["TOUCH", &a]);
        assert_eq!(freq(&mut r, &a), before + 51);
        // A command that reads then writes a key counts one access, as in Redis.
        for key in keys("rmw:") {
            let list = format!("{key}:l");
            assert_eq!(r.cmd(&["SET", &key, "100000"]), ok());
            assert_eq!(r.cmd(&["RPUSH", &list, "a"]), int(1));
            let (f0, l0) = (freq(&mut r, &key), freq(&mut r, &list));
            for _ in 0..10 {
                r.cmd(&["INCR", &key]);
                r.cmd(&["LPUSH", &list, "x"]);
            }
            for _ in 0..5 {
                r.cmd(&["APPEND", &key, "9"]);
                r.cmd(&["LPOP", &list]);
            }
            assert_eq!(freq(&mut r, &key), f0 + 15, "INCR and APPEND of {key}");
            assert_eq!(freq(&mut r, &list), l0 + 15, "LPUSH and LPOP of {list}");
        }
        // Up to 255.
        for _ in 0..300 {
            r.cmd(&["GET", &a]);
        }
        assert_eq!(freq(&mut r, &a), 255);
        // Decay: one per lfu-decay-time minutes; with 1 minute the value holds within a
        // minute (give or take one at a minute boundary).
        assert_eq!(r.cmd(&["CONFIG", "SET", "lfu-decay-time", "1"]), ok());
        let f = freq(&mut r, &a);
        assert!((254..=255).contains(&f), "{f}");
        // Back to LRU: the clock reads as an idle time again.
        assert_eq!(
            r.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]),
            ok()
        );
        assert!(matches!(
            r.cmd(&["OBJECT", "IDLETIME", &a]),
            Value::Integer(_)
        ));
        assert_eq!(r.cmd(&["OBJECT", "FREQ", &a]), err(LRU_FREQ_ERR));
    }
}

#[test]
fn restore_sets_idle_time_or_frequency() {
    for threads in ["1", "2"] {
        let s = start(threads);
        let mut r = s.raw();
        let [a, b] = keys("restore:");
        assert_eq!(r.cmd(&["RPUSH", &a, "x", "y"]), int(2));
        let Value::Bulk(payload) = r.cmd(&["DUMP", &a]) else {
            panic!("DUMP");
        };
        let p = &payload[..];
        let restore = |r: &mut Raw, key: &str, opts: &[&str]| {
            let mut args: Vec<&[u8]> = vec![b"RESTORE", key.as_bytes(), b"0", p, b"REPLACE"];
            args.extend(opts.iter().map(|o| o.as_bytes()));
            r.cmd_bytes(&args)
        };
        for key in [&a, &b] {
            // LRU: IDLETIME sets the idle time; FREQ is ignored.
            assert_eq!(restore(&mut r, key, &["IDLETIME", "1000"]), ok());
            let t = idle(&mut r, key);
            assert!((1000..=1002).contains(&t), "{key} idle {t}");
            assert_eq!(restore(&mut r, key, &["IDLETIME", "50000"]), ok());
            let t = idle(&mut r, key);
            assert!((50_000..=50_002).contains(&t), "{key} idle {t}");
            assert_eq!(restore(&mut r, key, &["FREQ", "100"]), ok());
            assert!(idle(&mut r, key) <= 1);
            assert_eq!(r.cmd(&["LRANGE", key, "0", "-1"]), bulks(&["x", "y"]));
        }
        assert_eq!(
            r.cmd(&["CONFIG", "SET", "maxmemory-policy", "volatile-lfu"]),
            ok()
        );
        for key in [&a, &b] {
            assert_eq!(restore(&mut r, key, &["FREQ", "100"]), ok());
            let f = freq(&mut r, key);
            assert!((99..=100).contains(&f), "{key} freq {f}");
            // IDLETIME is ignored under LFU: a new key.
            assert_eq!(restore(&mut r, key, &["IDLETIME", "1000"]), ok());
            let f = freq(&mut r, key);
            assert!((4..=5).contains(&f), "{key} freq {f}");
            assert_eq!(restore(&mut r, key, &["FREQ", "0"]), ok());
            assert_eq!(freq(&mut r, key), 0);
        }
    }
}

/// Skerry-only: access clocks are not persisted; after a restart every key reads as
/// accessed at the load.
#[test]
fn clocks_restart_at_the_load() {
    skip_if_redis!();
    let mut s = Server::start(&["--threads", "2"]);
    let k = keys("restart:");
    {
        let mut r = s.raw();
        for key in &k {
            assert_eq!(r.cmd(&["SET", key, "v"]), ok());
        }
        std::thread::sleep(IDLE_SLEEP);
        for key in &k {
            assert!(idle(&mut r, key) >= 2);
        }
    }
    s.stop_clean();
    s.start_again();
    let mut r = s.raw();
    for key in &k {
        assert!(idle(&mut r, key) <= 1, "{key}");
        assert_eq!(r.cmd(&["GET", key]), bulk("v"));
    }
}
