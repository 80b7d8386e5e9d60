//! DUMP and RESTORE end to end: round trips of every type in every size (small, listpack
//! sized, big and grouped), TTLs, REPLACE / ABSTTL, Redis's errors, and the exchange of
//! payloads with real Redis servers both ways (the reference Redis 8.0.2 and Debian's
//! 7.0.15, when present), with Skerry on one and two threads. Streams (groups, PELs,
//! consumers) and hashes with field TTLs round trip in Skerry and are exchanged both ways
//! with Redis 8.0 (`SKERRY_REDIS_SERVER`), compared by XINFO STREAM FULL, XRANGE, XPENDING,
//! HGETALL, HPEXPIRETIME and OBJECT ENCODING.
//!
//! Except where marked Skerry-only, these tests pass against Redis too
//! (`SKERRY_TEST_SERVER=redis`).

mod common;

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const REDIS_8: &str = "/work/ref/redis-8.0.2/src/redis-server";
const REDIS_7: &str = "/usr/bin/redis-server";

/// A Skerry server with small collection groups (so that big collections are grouped
/// cheaply), or Redis under `SKERRY_TEST_SERVER=redis`.
fn start(threads: &str) -> Server {
    if is_redis() {
        Server::start(&[])
    } else {
        Server::start(&["--threads", threads, "--collection-group-bytes", "512"])
    }
}

/// A key's type and contents, normalised (unordered types sorted), for comparisons.
fn contents(r: &mut Raw, key: &str) -> (String, Vec<Vec<u8>>) {
    let t = r.cmd(&["TYPE", key]).text();
    let bulk = |v: &Value| match v {
        Value::Bulk(b) => b.clone(),
        other => other.text().into_bytes(),
    };
    let items = |v: Value| v.items().iter().map(bulk).collect::<Vec<_>>();
    let c = match t.as_str() {
        "string" => vec![bulk(&r.cmd(&["GET", key]))],
        "list" => items(r.cmd(&["LRANGE", key, "0", "-1"])),
        "set" => {
            let mut v = items(r.cmd(&["SMEMBERS", key]));
            v.sort();
            v
        }
        "zset" => items(r.cmd(&["ZRANGE", key, "0", "-1", "WITHSCORES"])),
        "hash" => {
            let flat = items(r.cmd(&["HGETALL", key]));
            let mut pairs: Vec<Vec<u8>> = flat
                .chunks(2)
                .map(|c| [&c[0][..], b"\0", &c[1][..]].concat())
                .collect();
            pairs.sort();
            pairs
        }
        "none" => vec![],
        other => panic!("unexpected type {other}"),
    };
    (t, c)
}

fn dump(r: &mut Raw, key: &str) -> Vec<u8> {
    match r.cmd(&["DUMP", key]) {
        Value::Bulk(b) => b,
        other => panic!("DUMP {key}: {other:?}"),
    }
}

fn restore(r: &mut Raw, key: &str, ttl: &str, payload: &[u8], opts: &[&str]) -> Value {
    let mut args: Vec<&[u8]> = vec![b"RESTORE", key.as_bytes(), ttl.as_bytes(), payload];
    args.extend(opts.iter().map(|o| o.as_bytes()));
    r.cmd_bytes(&args)
}

/// Builds, through commands, one value of every type in every size under keys named
/// `<prefix>:<what>`; returns the keys.
fn build_values(r: &mut Raw, prefix: &str, big: bool) -> Vec<String> {
    let mut keys = Vec::new();
    let mut rng = Rng::new(7);
    let cmd = |r: &mut Raw, args: Vec<Vec<u8>>| {
        let refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        let v = r.cmd_bytes(&refs);
        assert!(!v.is_error(), "{v:?}");
    };
    let k = |what: &str| format!("{prefix}:{what}");
    // Strings: integer, short, binary, compressible, big.
    for (what, v) in [
        ("int", b"12345".to_vec()),
        ("negint", b"-2147483648".to_vec()),
        ("bigint", b"9223372036854775807".to_vec()),
        ("short", b"hello".to_vec()),
        ("empty", Vec::new()),
        ("binary", rng.bytes(300)),
        ("compressible", b"abcabcabc".repeat(200)),
    ] {
        cmd(r, vec![b"SET".to_vec(), k(what).into_bytes(), v]);
        keys.push(k(what));
    }
    if big {
        cmd(
            r,
            vec![
                b"SET".to_vec(),
                k("bigstring").into_bytes(),
                rng.bytes(3 << 20),
            ],
        );
        keys.push(k("bigstring"));
    }
    let sizes: &[(&str, usize, usize)] = if big {
        &[
            ("small", 3, 5),
            ("packed", 100, 10),
            ("wide", 10, 100),
            ("big", 3000, 20),
        ]
    } else {
        &[("small", 3, 5), ("packed", 100, 10), ("wide", 10, 100)]
    };
    for &(size, n, w) in sizes {
        let member = |i: usize, rng: &mut Rng| {
            let mut m = format!("m{i}-").into_bytes();
            m.extend(rng.bytes(w).iter().map(|b| b'a' + b % 26));
            m
        };
        let mut list = vec![b"RPUSH".to_vec(), k(&format!("list-{size}")).into_bytes()];
        let mut set = vec![b"SADD".to_vec(), k(&format!("set-{size}")).into_bytes()];
        let mut intset = vec![b"SADD".to_vec(), k(&format!("intset-{size}")).into_bytes()];
        let mut zset = vec![b"ZADD".to_vec(), k(&format!("zset-{size}")).into_bytes()];
        let mut hash = vec![b"HSET".to_vec(), k(&format!("hash-{size}")).into_bytes()];
        for i in 0..n {
            list.push(member(i, &mut rng));
            set.push(member(i, &mut rng));
            intset.push((i as i64 * 7919 - 1000).to_string().into_bytes());
            zset.push(format!("{}", (rng.range(0, 2000) as f64 - 1000.0) / 8.0).into_bytes());
            zset.push(member(i, &mut rng));
            hash.push(member(i, &mut rng));
            hash.push(if i % 3 == 0 {
                i.to_string().into_bytes()
            } else {
                member(i, &mut rng)
            });
        }
        for c in [list, set, intset, zset, hash] {
            keys.push(String::from_utf8(c[1].clone()).unwrap());
            for chunk in c[2..].chunks(if c[0] == b"ZADD" || c[0] == b"HSET" {
                200
            } else {
                100
            }) {
                let mut part = c[..2].to_vec();
                part.extend(chunk.iter().cloned());
                cmd(r, part);
            }
        }
    }
    keys
}

fn round_trips(threads: &str) {
    let s = start(threads);
    let mut r = s.raw();
    let keys = build_values(&mut r, "{a}", true);
    for key in &keys {
        let p = dump(&mut r, key);
        let copy = format!("{key}:copy");
        assert_eq!(restore(&mut r, &copy, "0", &p, &[]), ok(), "{key}");
        assert_eq!(contents(&mut r, &copy), contents(&mut r, key), "{key}");
        assert_eq!(
            r.cmd(&["OBJECT", "ENCODING", &copy]),
            r.cmd(&["OBJECT", "ENCODING", key]),
            "{key}: restored values are stored like values built by commands"
        );
        assert_eq!(r.cmd(&["PTTL", &copy]), int(-1));
        // The restored copy dumps to a payload that restores the same value again.
        let again = dump(&mut r, &copy);
        assert_eq!(restore(&mut r, "{a}other", "0", &again, &["REPLACE"]), ok());
        assert_eq!(contents(&mut r, "{a}other"), contents(&mut r, key), "{key}");
    }
    if !is_redis() {
        // Big collections restored are grouped as ones built by commands are.
        r.cmd(&["FLUSHALL"]);
        let keys = build_values(&mut r, "{b}", true);
        let payloads: Vec<Vec<u8>> = keys.iter().map(|k| dump(&mut r, k)).collect();
        let groups_built = info_u64(&mut r, "storage", "storage_collection_group_records").unwrap();
        assert!(groups_built > 0);
        r.cmd(&["FLUSHALL"]);
        assert_eq!(
            info_u64(&mut r, "storage", "storage_collection_group_records"),
            Some(0)
        );
        for (k, p) in keys.iter().zip(&payloads) {
            assert_eq!(restore(&mut r, k, "0", p, &[]), ok());
        }
        let groups_restored =
            info_u64(&mut r, "storage", "storage_collection_group_records").unwrap();
        assert!(groups_restored > 0, "big collections restored are grouped");
        // Laid out as any value written whole (a COPY of it) is.
        for k in &keys {
            assert_eq!(r.cmd(&["COPY", k, &format!("{k}:copy")]), int(1));
        }
        let with_copies = info_u64(&mut r, "storage", "storage_collection_group_records").unwrap();
        assert_eq!(with_copies, 2 * groups_restored);
    }
}

#[test]
fn every_type_and_size_round_trips_threads_1() {
    round_trips("1");
}

#[test]
fn every_type_and_size_round_trips_threads_2() {
    round_trips("2");
}

#[test]
fn ttl_replace_and_absttl() {
    let s = start("2");
    let mut r = s.raw();
    r.cmd(&["SET", "k", "v"]);
    r.cmd(&["RPUSH", "l", "a", "b"]);
    let p = dump(&mut r, "k");
    let pl = dump(&mut r, "l");
    // BUSYKEY without REPLACE; REPLACE over a value of another type.
    assert_eq!(
        restore(&mut r, "l", "0", &p, &[]),
        err("BUSYKEY Target key name already exists.")
    );
    assert_eq!(restore(&mut r, "l", "0", &p, &["REPLACE"]), ok());
    assert_eq!(
        contents(&mut r, "l"),
        ("string".into(), vec![b"v".to_vec()])
    );
    assert_eq!(restore(&mut r, "k", "0", &pl, &["replace"]), ok());
    assert_eq!(contents(&mut r, "k").0, "list");
    // A relative TTL in milliseconds.
    assert_eq!(restore(&mut r, "t", "100000", &p, &[]), ok());
    let pttl = r.cmd(&["PTTL", "t"]).int();
    assert!((90_000..=100_000).contains(&pttl), "{pttl}");
    assert_eq!(restore(&mut r, "tl", "100000", &pl, &[]), ok());
    let pttl = r.cmd(&["PTTL", "tl"]).int();
    assert!((90_000..=100_000).contains(&pttl), "{pttl}");
    // ABSTTL: an absolute Unix time in milliseconds.
    let at = 4_000_000_000_000i64;
    assert_eq!(
        restore(&mut r, "a", &at.to_string(), &pl, &["ABSTTL"]),
        ok()
    );
    assert_eq!(r.cmd(&["PEXPIRETIME", "a"]), int(at));
    // An expiry in the past: OK, and no key (an old one is removed with REPLACE).
    assert_eq!(restore(&mut r, "gone", "1", &p, &["ABSTTL"]), ok());
    assert_eq!(r.cmd(&["EXISTS", "gone"]), int(0));
    assert_eq!(
        restore(&mut r, "a", "1000", &p, &["ABSTTL", "REPLACE"]),
        ok()
    );
    assert_eq!(r.cmd(&["EXISTS", "a"]), int(0));
    // A short TTL expires.
    assert_eq!(restore(&mut r, "short", "50", &pl, &[]), ok());
    assert!(wait_until(Duration::from_secs(5), || r
        .cmd(&["EXISTS", "short"])
        == int(0)));
    // IDLETIME and FREQ are accepted; IDLETIME sets the idle time (no LFU policy here, so
    // FREQ is ignored: tests/access_clock.rs has both policies).
    assert_eq!(restore(&mut r, "i", "0", &p, &["IDLETIME", "1000"]), ok());
    let idle = r.cmd(&["OBJECT", "IDLETIME", "i"]).int();
    assert!((1000..=1002).contains(&idle), "idle {idle}");
    assert_eq!(restore(&mut r, "f", "0", &p, &["FREQ", "100"]), ok());
    assert!(r.cmd(&["OBJECT", "IDLETIME", "f"]).int() <= 1);
    assert_eq!(
        restore(&mut r, "f", "0", &p, &["REPLACE", "ABSTTL", "FREQ", "0"]),
        ok()
    );
    assert_eq!(
        contents(&mut r, "f"),
        ("string".into(), vec![b"v".to_vec()])
    );
    // Keys on other workers are reached (the command hops to the owner).
    for i in 0..20 {
        let key = format!("spread{i}");
        assert_eq!(restore(&mut r, &key, "0", &pl, &[]), ok());
        assert_eq!(dump(&mut r, &key), dump(&mut r, "k"));
    }
}

#[test]
fn errors_are_redis_errors() {
    let s = start("1");
    let mut r = s.raw();
    r.cmd(&["SET", "k", "v"]);
    let p = dump(&mut r, "k");
    assert_eq!(r.cmd(&["DUMP", "nokey"]), Value::Null);
    let wrong = "ERR DUMP payload version or checksum are wrong";
    let mut bad_crc = p.clone();
    *bad_crc.last_mut().unwrap() ^= 0xff;
    assert_eq!(restore(&mut r, "x", "0", &bad_crc, &[]), err(wrong));
    assert_eq!(restore(&mut r, "x", "0", b"short", &[]), err(wrong));
    assert_eq!(restore(&mut r, "x", "0", b"", &[]), err(wrong));
    // A newer RDB version than the server reads (with a right checksum).
    let mut newer = p[..p.len() - 10].to_vec();
    newer.extend_from_slice(&200u16.to_le_bytes());
    let crc = crc64(&newer);
    newer.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(restore(&mut r, "x", "0", &newer, &[]), err(wrong));
    // A right footer over a value that does not decode.
    for body in [
        &[0u8, 0x45][..],
        &[2, 5, 0xc0, 1],
        &[4, 2, 0xc0, 1, 0xc0, 1],
        &[42, 0],
        &[1, 0],
    ] {
        let mut bad = body.to_vec();
        bad.extend_from_slice(&9u16.to_le_bytes());
        let crc = crc64(&bad);
        bad.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(
            restore(&mut r, "x", "0", &bad, &[]),
            err("ERR Bad data format"),
            "{body:?}"
        );
    }
    assert_eq!(r.cmd(&["EXISTS", "x"]), int(0));
    assert_eq!(
        restore(&mut r, "x", "-1", &p, &[]),
        err("ERR Invalid TTL value, must be >= 0")
    );
    assert_eq!(
        restore(&mut r, "x", "abc", &p, &[]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        restore(&mut r, "x", "0", &p, &["IDLETIME", "-1"]),
        err("ERR Invalid IDLETIME value, must be >= 0")
    );
    assert_eq!(
        restore(&mut r, "x", "0", &p, &["IDLETIME", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        restore(&mut r, "x", "0", &p, &["FREQ", "256"]),
        err("ERR Invalid FREQ value, must be >= 0 and <= 255")
    );
    assert_eq!(
        restore(&mut r, "x", "0", &p, &["FREQ", "-1"]),
        err("ERR Invalid FREQ value, must be >= 0 and <= 255")
    );
    assert_eq!(
        restore(&mut r, "x", "0", &p, &["IDLETIME", "1", "FREQ", "1"]),
        err("ERR syntax error")
    );
    assert_eq!(
        restore(&mut r, "x", "0", &p, &["FREQ", "1", "IDLETIME", "1"]),
        err("ERR syntax error")
    );
    assert_eq!(
        restore(&mut r, "x", "0", &p, &["IDLETIME"]),
        err("ERR syntax error")
    );
    assert_eq!(
        restore(&mut r, "x", "0", &p, &["NOPE"]),
        err("ERR syntax error")
    );
    // Options are checked before the key; the key before the TTL and the payload.
    assert_eq!(
        restore(&mut r, "k", "0", &p, &["NOPE"]),
        err("ERR syntax error")
    );
    assert_eq!(
        restore(&mut r, "k", "-1", b"junk", &[]),
        err("BUSYKEY Target key name already exists.")
    );
    assert_eq!(
        restore(&mut r, "x", "-1", b"junk", &[]),
        err("ERR Invalid TTL value, must be >= 0")
    );
    assert_eq!(
        r.cmd(&["RESTORE", "x", "0"]),
        err("ERR wrong number of arguments for 'restore' command")
    );
    assert_eq!(
        r.cmd(&["DUMP"]),
        err("ERR wrong number of arguments for 'dump' command")
    );
    assert_eq!(r.cmd(&["EXISTS", "x"]), int(0));
}

/// CRC64 (Jones, reflected, as Redis), bit by bit: independent of the server's.
fn crc64(data: &[u8]) -> u64 {
    let mut crc = 0u64;
    for &b in data {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x95ac_9329_ac4b_c9b5
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// A redis-server of a given binary on a free port, killed on drop.
struct Redis {
    child: Child,
    port: u16,
    _dir: TempDir,
}

impl Redis {
    /// None when the binary is not installed here.
    fn start(bin: &str) -> Option<Redis> {
        if !std::path::Path::new(bin).exists() {
            eprintln!("skipped: no {bin}");
            return None;
        }
        let dir = TempDir::new();
        let port = free_port();
        let child = Command::new(bin)
            .args([
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
                "--bind",
                "127.0.0.1",
            ])
            // RESTORE checks every payload deeply (listpack entries, duplicates, stream
            // entries), so Skerry's payloads must be valid in every detail.
            .args(["--sanitize-dump-payload", "yes"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        let t = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(t.elapsed() < Duration::from_secs(10), "{bin} did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Redis {
            child,
            port,
            _dir: dir,
        })
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Values built in Redis restore into Skerry with the same contents, and Skerry's DUMPs
/// of them restore into Redis with the same contents.
fn exchange(bin: &str, threads: &str) {
    skip_if_redis!();
    let Some(redis) = Redis::start(bin) else {
        return;
    };
    let mut rr = Raw::connect(redis.port);
    let s = start(threads);
    let mut sr = s.raw();
    let keys = build_values(&mut rr, "r", true);
    for key in &keys {
        let from_redis = dump(&mut rr, key);
        assert_eq!(
            restore(&mut sr, key, "0", &from_redis, &[]),
            ok(),
            "{key} from {bin}"
        );
        let want = contents(&mut rr, key);
        assert_eq!(contents(&mut sr, key), want, "{key} from {bin}");
        let from_skerry = dump(&mut sr, key);
        let back = format!("{key}:back");
        assert_eq!(
            restore(&mut rr, &back, "0", &from_skerry, &[]),
            ok(),
            "{key} to {bin}"
        );
        assert_eq!(contents(&mut rr, &back), want, "{key} to {bin}");
    }
    // Redis checked Skerry's payloads deeply.
    assert!(info_u64(&mut rr, "stats", "dump_payload_sanitizations").unwrap() > 10);
    // With a TTL, both ways.
    let p = dump(&mut rr, &keys[0]);
    assert_eq!(restore(&mut sr, "ttl", "60000", &p, &[]), ok());
    let p = dump(&mut sr, "ttl");
    assert_eq!(restore(&mut rr, "ttl", "60000", &p, &[]), ok());
    assert!(rr.cmd(&["PTTL", "ttl"]).int() > 50_000);
}

#[test]
fn exchange_with_redis_8_threads_1() {
    exchange(REDIS_8, "1");
}

#[test]
fn exchange_with_redis_8_threads_2() {
    exchange(REDIS_8, "2");
}

#[test]
fn exchange_with_redis_7_threads_1() {
    exchange(REDIS_7, "1");
}

#[test]
fn exchange_with_redis_7_threads_2() {
    exchange(REDIS_7, "2");
}

/// Builds through commands a stream under `key` with entries of changing field names,
/// a deletion, three consumer groups (one with pending entries of two consumers, one
/// delivery claimed, one acknowledged, a consumer that never read; one at `$`; one made
/// with ENTRIESREAD that read with and without NOACK).
fn build_stream(r: &mut Raw, key: &str, n: u32) {
    for i in 1..=n {
        let id = format!("{}-{}", 1000 + i, i % 3);
        let v = "x".repeat(i as usize % 37);
        let reply = if i % 4 == 0 {
            r.cmd(&["XADD", key, &id, "other", &i.to_string()])
        } else {
            r.cmd(&["XADD", key, &id, "a", &i.to_string(), "b", &v])
        };
        assert_eq!(reply, bulk(&id));
    }
    // A deleted entry near the end (max-deleted-entry-id).
    let mid = format!("{}-{}", 1000 + n - 1, (n - 1) % 3);
    assert_eq!(r.cmd(&["XDEL", key, &mid]), int(1));
    assert_eq!(r.cmd(&["XGROUP", "CREATE", key, "g1", "0"]), ok());
    r.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "alice",
        "COUNT",
        "5",
        "STREAMS",
        key,
        ">",
    ]);
    r.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "bob",
        "COUNT",
        "3",
        "STREAMS",
        key,
        ">",
    ]);
    let first = format!("{}-{}", 1001, 1);
    let second = format!("{}-{}", 1002, 2);
    assert_eq!(r.cmd(&["XACK", key, "g1", &first]), int(1));
    // A delivery moved to bob (delivery count 2).
    assert_eq!(
        r.cmd(&["XCLAIM", key, "g1", "bob", "0", &second])
            .items()
            .len(),
        1
    );
    assert_eq!(
        r.cmd(&["XGROUP", "CREATECONSUMER", key, "g1", "carol"]),
        int(1)
    );
    assert_eq!(r.cmd(&["XGROUP", "CREATE", key, "g2", "$"]), ok());
    assert_eq!(
        r.cmd(&["XGROUP", "CREATE", key, "g3", "0", "ENTRIESREAD", "2"]),
        ok()
    );
    r.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g3",
        "dave",
        "COUNT",
        "2",
        "STREAMS",
        key,
        ">",
    ]);
    r.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g3",
        "erin",
        "COUNT",
        "1",
        "NOACK",
        "STREAMS",
        key,
        ">",
    ]);
}

/// XINFO STREAM FULL with `radix-tree-nodes` left out: Skerry's figure is an estimate
/// (`commands/stream.rs`, `radix_nodes`), Redis's the node count of its radix tree.
fn xinfo_full_but_rax_nodes(r: &mut Raw, key: &str) -> Value {
    let mut v = r
        .cmd(&["XINFO", "STREAM", key, "FULL", "COUNT", "0"])
        .items();
    assert_eq!(v[4], bulk("radix-tree-nodes"));
    v.drain(4..6);
    arr(v)
}

/// XPENDING's extended form with the idle times (which move) left out.
fn pending_without_idle(r: &mut Raw, key: &str, group: &str) -> Vec<Value> {
    r.cmd(&["XPENDING", key, group, "-", "+", "1000"])
        .items()
        .into_iter()
        .map(|e| {
            let mut v = e.items();
            v.remove(2);
            arr(v)
        })
        .collect()
}

/// Everything observable of a stream: XINFO STREAM FULL (all entries; but
/// `radix-tree-nodes`), XRANGE, XPENDING of each group (summary, and extended without the
/// idle times).
fn stream_view(r: &mut Raw, key: &str) -> Vec<Value> {
    let mut v = vec![
        xinfo_full_but_rax_nodes(r, key),
        r.cmd(&["XRANGE", key, "-", "+"]),
    ];
    for g in ["g1", "g2", "g3"] {
        v.push(r.cmd(&["XPENDING", key, g]));
        v.push(arr(pending_without_idle(r, key, g)));
    }
    v
}

/// The same commands on a stream after RESTORE as on the original: XADDs, an approximate
/// and an exact trim, a read of a group; replies and the views after them must agree.
fn stream_after(r: &mut Raw, key: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for i in 0..150u32 {
        out.push(r.cmd(&["XADD", key, "*", "a", &i.to_string(), "b", "yy"]));
        // Generated IDs differ between the two keys (time): the count is what matters.
        out.pop();
    }
    // Length and radix-tree-keys (the node model).
    out.push(arr(r.cmd(&["XINFO", "STREAM", key]).items()[..4].to_vec()));
    out.push(r.cmd(&["XTRIM", key, "MAXLEN", "~", "120"]));
    out.push(r.cmd(&["XLEN", key]));
    out.push(r.cmd(&["XTRIM", key, "MINID", "1100-0"]));
    out.push(r.cmd(&["XLEN", key]));
    out
}

/// Within one server: a stream with groups, PELs and consumers DUMPed and RESTOREd (also
/// to a key of the other worker with two threads) is the same stream in every view, and
/// behaves the same under more XADDs and trims. Needs Redis >= 7.0 under
/// `SKERRY_TEST_SERVER=redis`.
fn stream_round_trips(threads: &str) {
    let s = start(threads);
    let mut r = s.raw();
    for (n, copies) in [
        (5u32, ["s5:copy", "other5"]),
        (450, ["s450:copy", "other450"]),
    ] {
        let key = format!("s{n}");
        build_stream(&mut r, &key, n);
        let p = dump(&mut r, &key);
        let want = stream_view(&mut r, &key);
        for copy in copies {
            assert_eq!(restore(&mut r, copy, "0", &p, &[]), ok(), "{copy}");
            assert_eq!(r.cmd(&["TYPE", copy]), simple("stream"));
            assert_same(&stream_view(&mut r, copy), &want, copy);
            // The copy dumps to the same payload.
            assert_eq!(dump(&mut r, copy), p, "{copy}");
        }
        let a = stream_after(&mut r, &key);
        let b = stream_after(&mut r, copies[1]);
        assert_eq!(a, b, "{key}: the restored stream trims as the original");
    }
    // An empty stream with a group and a consumer keeps its metadata.
    r.cmd(&["XADD", "e", "5-5", "f", "v"]);
    r.cmd(&["XGROUP", "CREATE", "e", "g", "0"]);
    r.cmd(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", "e", ">"]);
    r.cmd(&["XDEL", "e", "5-5"]);
    let p = dump(&mut r, "e");
    assert_eq!(restore(&mut r, "e2", "0", &p, &[]), ok());
    assert_eq!(
        r.cmd(&["XINFO", "STREAM", "e2", "FULL"]),
        r.cmd(&["XINFO", "STREAM", "e", "FULL"])
    );
}

#[test]
fn streams_round_trip_threads_1() {
    stream_round_trips("1");
}

#[test]
fn streams_round_trip_threads_2() {
    stream_round_trips("2");
}

/// A hash's fields in reply order with their expiries (HPEXPIRETIME), its HLEN and OBJECT
/// ENCODING; a `hashtable` hash (whose order is arbitrary) sorted.
fn hash_view(r: &mut Raw, key: &str) -> (Value, Vec<(Value, Value, Value)>) {
    let enc = r.cmd(&["OBJECT", "ENCODING", key]);
    let flat = r.cmd(&["HGETALL", key]).items();
    let mut fields: Vec<(Value, Value, Value)> = flat
        .chunks(2)
        .map(|c| {
            let f = c[0].text();
            let t = r.cmd(&["HPEXPIRETIME", key, "FIELDS", "1", &f]).items()[0].clone();
            (c[0].clone(), c[1].clone(), t)
        })
        .collect();
    if enc == bulk("hashtable") {
        fields.sort_by_key(|(f, _, _)| f.text());
    }
    (enc, fields)
}

/// Builds hashes with field TTLs: a small one (`listpackex`, fields in expiry order), one
/// with field expiry on and no TTL left, and a big one (`hashtable`). Expiry times are
/// absolute and far, so two servers agree.
fn build_ttl_hashes(r: &mut Raw) -> Vec<&'static str> {
    let far: i64 = 4_000_000_000_000;
    for i in 0..8 {
        r.cmd(&["HSET", "hs", &format!("f{i}"), &format!("{}", i * 1000)]);
    }
    for (f, t) in [
        ("f3", far + 30),
        ("f1", far + 10),
        ("f6", far + 10),
        ("f0", far + 50),
    ] {
        assert_eq!(
            r.cmd(&["HPEXPIREAT", "hs", &t.to_string(), "FIELDS", "1", f]),
            arr(vec![int(1)])
        );
    }
    r.cmd(&["HSET", "hp", "a", "1", "b", "2"]);
    r.cmd(&["HPEXPIREAT", "hp", &far.to_string(), "FIELDS", "1", "a"]);
    r.cmd(&["HPERSIST", "hp", "FIELDS", "1", "a"]);
    for i in 0..300 {
        r.cmd(&["HSET", "hb", &format!("field:{i}"), &"v".repeat(i % 20)]);
        if i % 3 == 0 {
            let t = (far + i as i64).to_string();
            r.cmd(&["HPEXPIREAT", "hb", &t, "FIELDS", "1", &format!("field:{i}")]);
        }
    }
    r.cmd(&["HSET", "hl", "short", "1", "long", &"L".repeat(100)]);
    r.cmd(&["HPEXPIREAT", "hl", &far.to_string(), "FIELDS", "1", "short"]);
    vec!["hs", "hp", "hb", "hl"]
}

/// Within one server: hashes with field TTLs DUMPed and RESTOREd keep their fields, order,
/// expiries and encoding; a field expired before DUMP is not in Skerry's payload. Needs
/// Redis >= 7.4 under `SKERRY_TEST_SERVER=redis`.
fn ttl_hashes_round_trip(threads: &str) {
    let s = start(threads);
    let mut r = s.raw();
    for key in build_ttl_hashes(&mut r) {
        let want = hash_view(&mut r, key);
        let p = dump(&mut r, key);
        for copy in [format!("{key}:copy"), format!("{key}-elsewhere")] {
            assert_eq!(restore(&mut r, &copy, "0", &p, &[]), ok(), "{copy}");
            assert_eq!(hash_view(&mut r, &copy), want, "{copy}");
        }
    }
    // A field that expired before DUMP is left out of the payload. Skerry-only: Redis
    // 8.0 dumps a listpackex as it is, expired fields included, and HLEN counts them.
    if is_redis() {
        return;
    }
    r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    r.cmd(&["HSET", "hx", "gone", "1", "kept", "2"]);
    r.cmd(&["HPEXPIRE", "hx", "20", "FIELDS", "1", "gone"]);
    std::thread::sleep(Duration::from_millis(60));
    let p = dump(&mut r, "hx");
    assert_eq!(restore(&mut r, "hx2", "0", &p, &[]), ok());
    assert_eq!(r.cmd(&["HLEN", "hx2"]), int(1));
    assert_eq!(
        r.cmd(&["HGETALL", "hx2"]),
        arr(vec![bulk("kept"), bulk("2")])
    );
    r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
}

#[test]
fn hashes_with_field_ttls_round_trip_threads_1() {
    ttl_hashes_round_trip("1");
}

#[test]
fn hashes_with_field_ttls_round_trip_threads_2() {
    ttl_hashes_round_trip("2");
}

/// The reference Redis 8.0 (`SKERRY_REDIS_SERVER`) checking every payload deeply; None (the
/// test is skipped, said on stderr) when it is older.
fn reference_8() -> Option<Server> {
    Server::start_reference_8(&["--sanitize-dump-payload", "yes"])
}

/// Streams and hashes with field TTLs built in Redis 8.0 restore into Skerry the same in
/// every view, and Skerry's DUMPs of them restore into Redis the same. Skerry-only.
fn streams_and_ttl_hashes_exchange(threads: &str) {
    skip_if_redis!();
    let Some(redis) = reference_8() else {
        return;
    };
    let mut rr = redis.raw();
    let s = start(threads);
    let mut sr = s.raw();
    // Redis -> Skerry -> Redis.
    for n in [5u32, 450] {
        let key = format!("s{n}");
        build_stream(&mut rr, &key, n);
        let want = stream_view(&mut rr, &key);
        let p = dump(&mut rr, &key);
        assert_eq!(restore(&mut sr, &key, "0", &p, &[]), ok());
        assert_same(
            &stream_view(&mut sr, &key),
            &want,
            &format!("{key} from Redis"),
        );
        let back = dump(&mut sr, &key);
        let back_key = format!("{key}:back");
        assert_eq!(restore(&mut rr, &back_key, "0", &back, &[]), ok());
        assert_same(
            &stream_view(&mut rr, &back_key),
            &want,
            &format!("{key} back in Redis"),
        );
        assert_eq!(
            stream_after(&mut rr, &key),
            stream_after(&mut sr, &key),
            "{key}: trims the same after RESTORE"
        );
    }
    // Skerry -> Redis.
    for n in [7u32, 333] {
        let key = format!("k{n}");
        build_stream(&mut sr, &key, n);
        let want = stream_view(&mut sr, &key);
        let p = dump(&mut sr, &key);
        assert_eq!(restore(&mut rr, &key, "0", &p, &[]), ok());
        assert_same(
            &stream_view(&mut rr, &key),
            &want,
            &format!("{key} from Skerry"),
        );
    }
    // Hashes with field TTLs, both ways.
    let keys = build_ttl_hashes(&mut rr);
    build_ttl_hashes(&mut sr);
    for key in keys {
        let want = hash_view(&mut rr, key);
        assert_eq!(hash_view(&mut sr, key), want, "{key} built alike");
        let p = dump(&mut rr, key);
        let copy = format!("{key}:from-redis");
        assert_eq!(restore(&mut sr, &copy, "0", &p, &[]), ok());
        assert_eq!(hash_view(&mut sr, &copy), want, "{key} from Redis");
        let p = dump(&mut sr, key);
        let copy = format!("{key}:from-skerry");
        assert_eq!(restore(&mut rr, &copy, "0", &p, &[]), ok());
        assert_eq!(hash_view(&mut rr, &copy), want, "{key} from Skerry");
    }
    // A hashtable with field TTLs shrunk to a few fields: its payload
    // (RDB_TYPE_HASH_METADATA) restores as a listpackex, fields placed one by one in
    // expiry order (ties: the later field first), in Skerry as in Redis.
    for (r, name) in [(&mut rr, "hh"), (&mut sr, "hh")] {
        // Past hash-max-listpack-entries (512).
        for i in 0..600 {
            r.cmd(&["HSET", name, &format!("f{i}"), &i.to_string()]);
        }
        for i in 10..600 {
            r.cmd(&["HDEL", name, &format!("f{i}")]);
        }
        let far = 4_000_000_000_000i64;
        for (i, t) in [
            (3, far + 5),
            (7, far + 5),
            (1, far + 2),
            (9, far + 5),
            (0, far + 9),
        ] {
            r.cmd(&[
                "HPEXPIREAT",
                name,
                &t.to_string(),
                "FIELDS",
                "1",
                &format!("f{i}"),
            ]);
        }
        assert_eq!(r.cmd(&["OBJECT", "ENCODING", name]), bulk("hashtable"));
    }
    let p = dump(&mut rr, "hh");
    assert_eq!(p[0], 24, "RDB_TYPE_HASH_METADATA");
    assert_eq!(restore(&mut rr, "hh:r", "0", &p, &[]), ok());
    assert_eq!(restore(&mut sr, "hh:r", "0", &p, &[]), ok());
    let want = hash_view(&mut rr, "hh:r");
    assert_eq!(want.0, bulk("listpackex"));
    assert_eq!(
        hash_view(&mut sr, "hh:r"),
        want,
        "hashtable payload from Redis"
    );
    let p = dump(&mut sr, "hh");
    assert_eq!(restore(&mut rr, "hh:s", "0", &p, &[]), ok());
    assert_eq!(restore(&mut sr, "hh:s", "0", &p, &[]), ok());
    let want = hash_view(&mut rr, "hh:s");
    assert_eq!(want.0, bulk("listpackex"));
    assert_eq!(
        hash_view(&mut sr, "hh:s"),
        want,
        "hashtable payload from Skerry"
    );
    assert!(info_u64(&mut rr, "stats", "dump_payload_sanitizations").unwrap() >= 6);
}

#[test]
fn streams_and_ttl_hashes_exchange_with_redis_8_threads_1() {
    streams_and_ttl_hashes_exchange("1");
}

#[test]
fn streams_and_ttl_hashes_exchange_with_redis_8_threads_2() {
    streams_and_ttl_hashes_exchange("2");
}

/// RESTORE into Skerry of a payload whose fields expire: fields already expired are
/// dropped, the rest expire actively (the hash is in the active-expiry index), and a hash
/// whose fields all expired is not created. Skerry-only (Redis keeps expired fields until
/// its expiry deletes them).
#[test]
fn restored_field_ttls_expire() {
    skip_if_redis!();
    let s = start("2");
    let mut r = s.raw();
    r.cmd(&["HSET", "h", "soon", "1", "later", "2", "never", "3"]);
    r.cmd(&["HPEXPIRE", "h", "300", "FIELDS", "1", "soon"]);
    r.cmd(&["HPEXPIRE", "h", "600", "FIELDS", "1", "later"]);
    let p = dump(&mut r, "h");
    r.cmd(&["HSET", "all", "a", "1"]);
    r.cmd(&["HPEXPIRE", "all", "300", "FIELDS", "1", "a"]);
    let all = dump(&mut r, "all");
    std::thread::sleep(Duration::from_millis(400));
    // "soon" expired between DUMP and RESTORE: not restored (HLEN counts it otherwise).
    assert_eq!(restore(&mut r, "h2", "0", &p, &[]), ok());
    assert_eq!(r.cmd(&["HLEN", "h2"]), int(2));
    assert_eq!(restore(&mut r, "all2", "0", &all, &[]), ok());
    assert_eq!(r.cmd(&["EXISTS", "all2"]), int(0));
    // "later" goes by active expiry, without any command reading the hash (HLEN counts
    // an expired field until it is deleted).
    let t = Instant::now();
    while r.cmd(&["HLEN", "h2"]) != int(1) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "field of a restored hash not expired"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        r.cmd(&["HGETALL", "h2"]),
        arr(vec![bulk("never"), bulk("3")])
    );
}

/// The codec's encoders of the types Skerry does not serve yet (streams with groups, PELs
/// and consumers; hashes with field TTLs) write payloads real Redis restores to the same
/// value: a Redis DUMP decoded and encoded again by `skerry-codec` restores in the same
/// Redis to a key whose XINFO STREAM FULL (or fields and field expiries) equal the original's.
#[test]
fn codec_streams_and_field_ttls_restore_into_redis() {
    for bin in [REDIS_8, REDIS_7] {
        let Some(redis) = Redis::start(bin) else {
            continue;
        };
        let v8 = bin == REDIS_8;
        let mut r = Raw::connect(redis.port);
        for i in 1..=300u32 {
            let id = format!("{i}-{}", i % 4);
            let v = "v".repeat(i as usize % 40);
            if i % 3 == 0 {
                r.cmd(&["XADD", "s", &id, "c", &i.to_string()]);
            } else {
                r.cmd(&["XADD", "s", &id, "a", &i.to_string(), "b", &v]);
            }
        }
        r.cmd(&["XDEL", "s", "5-1", "100-0"]);
        r.cmd(&["XGROUP", "CREATE", "s", "g1", "0"]);
        r.cmd(&[
            "XREADGROUP",
            "GROUP",
            "g1",
            "alice",
            "COUNT",
            "30",
            "STREAMS",
            "s",
            ">",
        ]);
        r.cmd(&[
            "XREADGROUP",
            "GROUP",
            "g1",
            "bob",
            "COUNT",
            "5",
            "STREAMS",
            "s",
            ">",
        ]);
        r.cmd(&["XACK", "s", "g1", "1-1", "7-3"]);
        r.cmd(&["XGROUP", "CREATE", "s", "g2", "$"]);
        r.cmd(&["XGROUP", "CREATECONSUMER", "s", "g2", "carol"]);
        r.cmd(&["XADD", "empty", "1-1", "f", "v"]);
        r.cmd(&["XDEL", "empty", "1-1"]);
        let mut keys = vec!["s", "empty"];
        if v8 {
            let mut args = vec!["HSET".to_string(), "h".into()];
            for i in 0..700 {
                args.push(format!("f{i}"));
                args.push(format!("v{i}"));
            }
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            r.cmd(&refs);
            r.cmd(&["HSET", "hs", "a", "1", "b", "2", "c", "3"]);
            for (key, n) in [("h", 20), ("hs", 2)] {
                for i in 0..n {
                    let f = if key == "h" {
                        format!("f{i}")
                    } else {
                        ["a", "b"][i].to_string()
                    };
                    r.cmd(&[
                        "HPEXPIREAT",
                        key,
                        &(4_000_000_000_000u64 + i as u64 * 7).to_string(),
                        "FIELDS",
                        "1",
                        &f,
                    ]);
                }
            }
            keys.extend(["h", "hs"]);
        }
        for key in keys {
            let original = dump(&mut r, key);
            let value = skerry_codec::restore(&original).unwrap_or_else(|e| panic!("{key}: {e}"));
            let again = skerry_codec::dump(&value);
            let copy = format!("{key}:copy");
            assert_eq!(
                restore(&mut r, &copy, "0", &again, &[]),
                ok(),
                "{key} in {bin}"
            );
            if key == "h" || key == "hs" {
                assert_eq!(
                    contents(&mut r, &copy),
                    contents(&mut r, key),
                    "{key} in {bin}"
                );
                let fields: Vec<String> = r.cmd(&["HKEYS", key]).strings();
                let mut args = vec![
                    "HPEXPIRETIME".to_string(),
                    String::new(),
                    "FIELDS".into(),
                    fields.len().to_string(),
                ];
                args.extend(fields);
                let mut at = |k: &str| {
                    args[1] = k.to_string();
                    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
                    r.cmd(&refs)
                };
                assert_eq!(at(&copy), at(key), "{key} in {bin}");
            } else {
                assert_eq!(
                    r.cmd(&["XINFO", "STREAM", &copy, "FULL"]),
                    r.cmd(&["XINFO", "STREAM", key, "FULL"]),
                    "{key} in {bin}"
                );
            }
        }
    }
}

/// DUMP and RESTORE inside MULTI / EXEC and scripts, with keys on both workers.
#[test]
fn in_transactions_and_scripts_across_workers() {
    let s = start("2");
    let mut r = s.raw();
    let (k0, k1) = (key_on("k", 0), key_on("k", 1));
    let (l0, l1) = (key_on("l", 0), key_on("l", 1));
    r.cmd(&["SET", &k0, "string zero"]);
    r.cmd(&["RPUSH", &l0, "a", "b", "c"]);
    let ps = dump(&mut r, &k0);
    let pl = dump(&mut r, &l0);
    assert_eq!(r.cmd(&["MULTI"]), ok());
    r.cmd(&["DUMP", &k0]);
    r.cmd(&["DUMP", &l0]);
    r.cmd_bytes(&[b"RESTORE", k1.as_bytes(), b"0", &ps]);
    r.cmd_bytes(&[b"RESTORE", l1.as_bytes(), b"0", &pl]);
    r.cmd(&["DUMP", &k1]);
    r.cmd(&["DUMP", &l1]);
    let got = r.cmd(&["EXEC"]).items();
    assert_eq!(
        got,
        vec![
            Value::Bulk(ps.clone()),
            Value::Bulk(pl.clone()),
            ok(),
            ok(),
            Value::Bulk(ps.clone()),
            Value::Bulk(pl.clone())
        ]
    );
    assert_eq!(contents(&mut r, &l1), contents(&mut r, &l0));
    // A script that copies a key through DUMP and RESTORE (both keys declared).
    let script = "local p = redis.call('DUMP', KEYS[1]); redis.call('RESTORE', KEYS[2], 0, p, 'REPLACE'); return redis.call('DUMP', KEYS[2])";
    for (src, dst) in [(&l0, &l1), (&l1, &k0), (&k1, &l0)] {
        let v = r.cmd(&["EVAL", script, "2", src, dst]);
        assert_eq!(v, Value::Bulk(dump(&mut r, src)), "{src} -> {dst}");
        assert_eq!(contents(&mut r, dst), contents(&mut r, src));
    }
}

/// RESTORE REPLACE between every kind of stored value (short string, big chunked string,
/// compact collection, grouped collection), then a kill -9 and restart: every key holds
/// exactly its last restored value, with its TTL. Skerry-only (the restart).
#[test]
fn replace_between_layouts_survives_kill_9() {
    skip_if_redis!();
    let mut s = Server::start(&[
        "--threads",
        "2",
        "--collection-group-bytes",
        "512",
        "--appendfsync",
        "always",
    ]);
    let mut r = s.raw();
    let mut rng = Rng::new(11);
    r.cmd_bytes(&[b"SET", b"src:short", b"short"]);
    r.cmd_bytes(&[b"SET", b"src:big", &rng.bytes(3 << 20)]);
    r.cmd(&["HSET", "src:hash", "f", "v"]);
    let mut args = vec!["SADD".to_string(), "src:grouped".into()];
    args.extend((0..3000).map(|i| format!("member-{i}")));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    r.cmd(&refs);
    let kinds = ["src:short", "src:big", "src:hash", "src:grouped"];
    let payloads: Vec<Vec<u8>> = kinds.iter().map(|k| dump(&mut r, k)).collect();
    let mut want = Vec::new();
    for (i, _) in kinds.iter().enumerate() {
        for (j, _) in kinds.iter().enumerate() {
            let key = format!("k{i}{j}");
            assert_eq!(restore(&mut r, &key, "0", &payloads[i], &[]), ok());
            assert_eq!(
                restore(&mut r, &key, "1000000", &payloads[j], &["REPLACE"]),
                ok(),
                "{key}"
            );
            let c = contents(&mut r, kinds[j]);
            assert_eq!(contents(&mut r, &key), c, "{key}");
            want.push((key, c));
        }
    }
    s.restart();
    let mut r = s.raw();
    for (key, c) in &want {
        assert_eq!(&contents(&mut r, key), c, "{key} after restart");
        let pttl = r.cmd(&["PTTL", key]).int();
        assert!(pttl > 900_000, "{key}: {pttl}");
    }
}

/// The first difference between two replies, as a path and the two sides (short enough to
/// read when streams of hundreds of entries differ).
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    if a == b {
        return None;
    }
    if let (Value::Array(x), Value::Array(y)) = (a, b) {
        for (i, (p, q)) in x.iter().zip(y).enumerate() {
            if let Some(d) = first_difference(p, q, &format!("{path}[{i}]")) {
                return Some(d);
            }
        }
        return Some(format!("{path}: lengths {} and {}", x.len(), y.len()));
    }
    Some(format!("{path}: {a:?} and {b:?}"))
}

/// Asserts `got == want`, showing only the first difference.
fn assert_same(got: &[Value], want: &[Value], what: &str) {
    if let Some(d) = first_difference(&arr(got.to_vec()), &arr(want.to_vec()), "") {
        panic!("{what}: {d}");
    }
}
