//! HyperLogLog commands (PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST) end to end, and
//! differential tests against the reference redis-server (`SKERRY_REDIS_SERVER`, Redis 8.0.2
//! in CI): the same seeded random operations on both, every reply and the raw bytes of every
//! HLL compared; HLLs made by one server read by the other.
//!
//! `SKERRY_HLL_DIFF_OPS` sets the number of random operations per run (default 3000).

mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const INVALID: &str = "INVALIDOBJ Corrupted HLL object detected";

fn bytes_of(v: Value) -> Vec<u8> {
    match v {
        Value::Bulk(b) => b,
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

fn int_of(v: Value) -> i64 {
    match v {
        Value::Integer(i) => i,
        other => panic!("expected an integer, got {other:?}"),
    }
}

#[test]
fn pfadd_creates_and_reports_changes() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["PFADD", "h"]), int(1));
    assert_eq!(r.cmd(&["EXISTS", "h"]), int(1));
    assert_eq!(r.cmd(&["PFADD", "h"]), int(0));
    assert_eq!(r.cmd(&["PFCOUNT", "h"]), int(0));
    assert_eq!(r.cmd(&["PFADD", "h", "a", "b", "c"]), int(1));
    assert_eq!(r.cmd(&["PFADD", "h", "a", "b", "c"]), int(0));
    assert_eq!(r.cmd(&["PFADD", "h", ""]), int(1));
    assert_eq!(r.cmd(&["PFCOUNT", "h"]), int(4));
    let v = bytes_of(r.cmd(&["GET", "h"]));
    assert_eq!(&v[..4], b"HYLL");
    assert_eq!(v[4], 1, "sparse");
    assert_eq!(r.cmd(&["PFDEBUG", "ENCODING", "h"]), simple("sparse"));
    assert_eq!(
        r.cmd(&["PFADD"]),
        err("ERR wrong number of arguments for 'pfadd' command")
    );
}

#[test]
fn pfcount_is_close_and_caches() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    for chunk in 0..10 {
        let mut args = vec!["PFADD".to_string(), "h".to_string()];
        args.extend((0..1000).map(|i| format!("e{}", chunk * 1000 + i)));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        r.cmd(&args);
    }
    let n = int_of(r.cmd(&["PFCOUNT", "h"]));
    assert!((n - 10_000).abs() < 300, "{n}");
    assert_eq!(r.cmd(&["PFDEBUG", "ENCODING", "h"]), simple("dense"));
    // The count is cached in the header (top bit of byte 15 clear) after PFCOUNT.
    let v = bytes_of(r.cmd(&["GET", "h"]));
    assert_eq!(v.len(), 12304);
    assert_eq!(v[15] & 0x80, 0);
    assert_eq!(u64::from_le_bytes(v[8..16].try_into().unwrap()), n as u64);
    // A change marks the cache stale.
    r.cmd(&["PFADD", "h", "new-1", "new-2", "new-3", "new-4"]);
    let v = bytes_of(r.cmd(&["GET", "h"]));
    assert_ne!(v[15] & 0x80, 0);
}

#[test]
fn pfmerge_and_multi_key_pfcount() {
    for threads in ["1", "2"] {
        let s = Server::start(&["--threads", threads]);
        let mut r = s.raw();
        // Keys without a hash tag: with two workers some live on each.
        r.cmd(&["PFADD", "a", "1", "2", "3"]);
        r.cmd(&["PFADD", "b", "3", "4", "5"]);
        r.cmd(&["PFADD", "c", "5", "6", "7", "8"]);
        assert_eq!(r.cmd(&["PFCOUNT", "a", "b", "c", "missing"]), int(8));
        assert_eq!(r.cmd(&["PFMERGE", "dst", "a", "b", "c"]), ok());
        assert_eq!(r.cmd(&["PFCOUNT", "dst"]), int(8));
        assert_eq!(r.cmd(&["PFMERGE", "empty", "nokey1", "nokey2"]), ok());
        assert_eq!(r.cmd(&["PFCOUNT", "empty"]), int(0));
        assert_eq!(r.cmd(&["PFMERGE", "a", "b"]), ok());
        assert_eq!(r.cmd(&["PFCOUNT", "a"]), int(5));
        r.cmd(&["SET", "str", "not an hll"]);
        assert_eq!(r.cmd(&["PFMERGE", "x", "a", "str"]), err(NOT_HLL));
        assert_eq!(r.cmd(&["PFCOUNT", "a", "str"]), err(NOT_HLL));
        assert_eq!(r.cmd(&["EXISTS", "x"]), int(0));
    }
}

#[test]
fn type_errors() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["SET", "s", "bar"]);
    r.cmd(&["LPUSH", "l", "x"]);
    assert_eq!(r.cmd(&["PFADD", "s", "x"]), err(NOT_HLL));
    assert_eq!(r.cmd(&["PFCOUNT", "s"]), err(NOT_HLL));
    assert_eq!(r.cmd(&["PFADD", "l", "x"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["PFCOUNT", "l"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["PFMERGE", "l"]), err(WRONGTYPE));
    // A dense HLL must have exactly its size.
    r.cmd(&["PFADD", "d", "a"]);
    r.cmd(&["PFDEBUG", "TODENSE", "d"]);
    r.cmd(&["APPEND", "d", "x"]);
    assert_eq!(r.cmd(&["PFCOUNT", "d"]), err(NOT_HLL));
    // Broken magic, unknown encoding.
    r.cmd(&["PFADD", "m", "a"]);
    r.cmd(&["SETRANGE", "m", "0", "0"]);
    assert_eq!(r.cmd(&["PFADD", "m", "b"]), err(NOT_HLL));
    r.cmd(&["PFADD", "e", "a"]);
    r.cmd(&["SETRANGE", "e", "4", "x"]);
    assert_eq!(r.cmd(&["PFCOUNT", "e"]), err(NOT_HLL));
}

#[test]
fn corrupted_sparse_hll_is_detected() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["PFADD", "h", "a", "b", "c"]);
    // One extra ZERO opcode at the tail: more registers than exist.
    r.cmd(&["APPEND", "h", "hello"]);
    assert_eq!(r.cmd(&["PFCOUNT", "h"]), err(INVALID));
    assert_eq!(r.cmd(&["PFCOUNT", "h", "h"]), err(INVALID));
    assert_eq!(r.cmd(&["PFMERGE", "d", "h"]), err(INVALID));
    assert_eq!(r.cmd(&["PFDEBUG", "GETREG", "h"]), err(INVALID));
}

#[test]
fn pfdebug_subcommands() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd(&["PFDEBUG", "GETREG", "nokey"]),
        err("ERR The specified key does not exist")
    );
    r.cmd(&["PFADD", "h", "a"]);
    let decoded = match r.cmd(&["PFDEBUG", "DECODE", "h"]) {
        Value::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    assert!(
        decoded.starts_with('Z') && decoded.contains("v:"),
        "{decoded}"
    );
    assert_eq!(
        r.cmd(&["PFDEBUG", "NOPE", "h"]),
        err("ERR Unknown PFDEBUG subcommand 'NOPE'")
    );
    match r.cmd(&["PFDEBUG", "GETREG", "h"]) {
        Value::Array(regs) => {
            assert_eq!(regs.len(), 16384);
            assert_eq!(regs.iter().filter(|v| **v != int(0)).count(), 1);
        }
        other => panic!("{other:?}"),
    }
    // GETREG leaves the HLL dense, as in Redis.
    assert_eq!(r.cmd(&["PFDEBUG", "ENCODING", "h"]), simple("dense"));
    assert_eq!(
        r.cmd(&["PFDEBUG", "DECODE", "h"]),
        err("ERR HLL encoding is not sparse")
    );
    assert_eq!(r.cmd(&["PFDEBUG", "TODENSE", "h"]), int(0));
    r.cmd(&["PFADD", "h2", "a"]);
    assert_eq!(r.cmd(&["PFDEBUG", "TODENSE", "h2"]), int(1));
    assert_eq!(r.cmd(&["PFCOUNT", "h2"]), int(1));
}

/// Needs Redis >= 8.0 (PFDEBUG SIMD is new there), on a CPU with AVX2.
#[test]
fn pfdebug_simd() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["PFDEBUG", "SIMD", "OFF"]), simple("disabled"));
    assert_eq!(r.cmd(&["PFDEBUG", "SIMD", "ON"]), simple("enabled"));
    assert_eq!(
        r.cmd(&["PFDEBUG", "SIMD", "MAYBE"]),
        err("ERR Argument must be ON or OFF")
    );
}

#[test]
fn sparse_max_bytes_config_promotes() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "hll-sparse-max-bytes"]),
        bulks(&["hll-sparse-max-bytes", "3000"])
    );
    r.cmd(&["PFADD", "h", "a", "b", "c", "d", "e", "f", "g"]);
    assert_eq!(r.cmd(&["PFDEBUG", "ENCODING", "h"]), simple("sparse"));
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", "30"]),
        ok()
    );
    r.cmd(&["PFADD", "h", "new_element", "another", "more"]);
    assert_eq!(r.cmd(&["PFDEBUG", "ENCODING", "h"]), simple("dense"));
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]),
        ok()
    );
}

#[test]
fn pfadd_keeps_the_ttl() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["PFADD", "h", "a"]);
    r.cmd(&["EXPIRE", "h", "1000"]);
    r.cmd(&["PFADD", "h", "b", "c"]);
    r.cmd(&["PFCOUNT", "h"]);
    r.cmd(&["PFMERGE", "h", "h"]);
    let ttl = int_of(r.cmd(&["TTL", "h"]));
    assert!(ttl > 990, "{ttl}");
}

#[test]
fn pfselftest_passes() {
    skip_if_redis!();
    let s = Server::start(&[]);
    let mut r = s.raw();
    // 10 million elements: seconds in a debug build.
    r.stream
        .set_read_timeout(Some(std::time::Duration::from_secs(120)))
        .unwrap();
    assert_eq!(r.cmd(&["PFSELFTEST"]), ok());
}

// ----- differential tests against the reference Redis -----

fn args(words: &[&str]) -> Vec<Vec<u8>> {
    words.iter().map(|w| w.as_bytes().to_vec()).collect()
}

fn differential(threads: &str) {
    if is_redis() {
        return;
    }
    let mut p = diff::Diff::on_threads("HLL", threads, 0x5eed_4411, false).expect("any reference");
    let keys = ["hll:a", "hll:b", "hll:c", "hll:d", "hll:e"];
    let (n, seed) = (p.ops, p.seed);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut stats = [0usize; 3];
    for step in 0..n {
        let key = keys[rng.random_range(0..keys.len())];
        let roll = rng.random_range(0..100);
        let cmd: Vec<Vec<u8>> = if roll < 55 {
            // Elements from pools of different sizes: small HLLs stay sparse, big ones
            // turn dense; some repeat.
            let pool = [50u32, 2000, 1_000_000][rng.random_range(0..3)];
            let count = if rng.random_bool(0.1) {
                rng.random_range(50..400)
            } else {
                rng.random_range(0..6)
            };
            let mut c = args(&["PFADD", key]);
            for _ in 0..count {
                let e = rng.random_range(0..pool);
                c.push(if rng.random_bool(0.1) {
                    e.to_le_bytes().to_vec()
                } else {
                    format!("el:{e}").into_bytes()
                });
            }
            stats[0] += 1;
            c
        } else if roll < 75 {
            let mut c = args(&["PFCOUNT"]);
            for _ in 0..rng.random_range(1..4) {
                c.push(keys[rng.random_range(0..keys.len())].as_bytes().to_vec());
            }
            stats[1] += 1;
            c
        } else if roll < 90 {
            let mut c = args(&["PFMERGE", key]);
            for _ in 0..rng.random_range(0..4) {
                c.push(keys[rng.random_range(0..keys.len())].as_bytes().to_vec());
            }
            stats[2] += 1;
            c
        } else if roll < 93 {
            args(&["DEL", key])
        } else if roll < 95 {
            let limit = ["100", "300", "3000"][rng.random_range(0..3)];
            args(&["CONFIG", "SET", "hll-sparse-max-bytes", limit])
        } else if roll < 97 {
            args(&["PFDEBUG", "ENCODING", key])
        } else if roll < 98 {
            args(&["PFDEBUG", "DECODE", key])
        } else if roll < 99 {
            args(&["PFDEBUG", "TODENSE", key])
        } else {
            // A few non-HLL values in the mix for the type errors.
            if rng.random_bool(0.5) {
                args(&["SET", key, "not an hll"])
            } else {
                args(&["SADD", key, "member"])
            }
        };
        p.both(&cmd, format_args!("step {step}"));
        if step % 50 == 0 || step + 1 == n {
            for k in keys {
                p.both(&["GET", k], format_args!("step {step}"));
            }
        }
    }
    eprintln!(
        "threads {threads}: {n} ops ({} PFADD, {} PFCOUNT, {} PFMERGE), seed {seed}",
        stats[0], stats[1], stats[2]
    );
}

#[test]
fn differential_random_ops_one_worker() {
    differential("1");
}

#[test]
fn differential_random_ops_two_workers() {
    differential("2");
}

/// HLLs made by Redis are counted, merged and extended identically by Skerry, and the
/// other way round (GET from one, SET into the other).
#[test]
fn differential_hlls_exchanged_both_ways() {
    if is_redis() {
        return;
    }
    let redis = Server::start_reference(&[]);
    let skerry = Server::start(&["--threads", "2"]);
    let (mut rr, mut sr) = (redis.raw(), skerry.raw());
    let mut rng = StdRng::seed_from_u64(77);
    for (i, size) in [0usize, 1, 10, 100, 1000, 5000, 20000]
        .into_iter()
        .enumerate()
    {
        // Made in Redis, read in Skerry; made in Skerry, read in Redis.
        for (from_redis, src_name) in [(true, "redis"), (false, "skerry")] {
            let key = format!("x:{src_name}:{i}");
            let (src, dst) = if from_redis {
                (&mut rr, &mut sr)
            } else {
                (&mut sr, &mut rr)
            };
            let mut left = size;
            src.cmd(&["PFADD", &key]);
            while left > 0 {
                let batch = left.min(500);
                let mut c = vec!["PFADD".to_string(), key.clone()];
                c.extend((0..batch).map(|_| format!("{}", rng.random::<u64>())));
                let c: Vec<&str> = c.iter().map(String::as_str).collect();
                src.cmd(&c);
                left -= batch;
            }
            let bytes = bytes_of(src.cmd(&["GET", &key]));
            assert_eq!(dst.cmd_bytes(&[b"SET", key.as_bytes(), &bytes]), ok());
            let (a, b) = (src.cmd(&["PFCOUNT", &key]), dst.cmd(&["PFCOUNT", &key]));
            assert_eq!(a, b, "{key}: PFCOUNT");
            assert_eq!(
                src.cmd(&["GET", &key]),
                dst.cmd(&["GET", &key]),
                "{key}: bytes after PFCOUNT"
            );
            // Both go on from the same bytes: same replies, same bytes.
            for j in 0..20 {
                let e = format!("more:{i}:{j}");
                assert_eq!(
                    src.cmd(&["PFADD", &key, &e]),
                    dst.cmd(&["PFADD", &key, &e]),
                    "{key}: PFADD"
                );
            }
            assert_eq!(src.cmd(&["GET", &key]), dst.cmd(&["GET", &key]), "{key}");
            let merged = format!("m:{key}");
            src.cmd(&["PFMERGE", &merged, &key, "x:redis:3"]);
            dst.cmd(&["PFMERGE", &merged, &key, "x:redis:3"]);
            assert_eq!(
                src.cmd(&["GET", &merged]),
                dst.cmd(&["GET", &merged]),
                "{merged}"
            );
        }
    }
}
