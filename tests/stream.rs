//! Streams end to end: the commands' replies and errors as Redis 8.0 gives them, blocking
//! XREAD / XREADGROUP (across workers too), persistence across restart and `kill -9`, and a
//! differential run against the reference Redis 8.0.2 (`common::Server::start_reference`).
//!
//! Several tests use commands or replies of Redis >= 7.4 (XREAD `+`): against an older
//! reference they are skipped by [`reference_is_8`].

mod common;

use std::time::{Duration, Instant};

use common::{arr, bulk, bulks, err, int, ok, Raw, Server, Value};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn entry(id: &str, fields: &[&str]) -> Value {
    arr(vec![bulk(id), bulks(fields)])
}

#[test]
fn xadd_ids_and_errors() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["XADD", "s", "1-1", "a", "1"]), bulk("1-1"));
    assert_eq!(r.cmd(&["XADD", "s", "1-*", "b", "2"]), bulk("1-2"));
    assert_eq!(r.cmd(&["XADD", "s", "5", "c", "3"]), bulk("5-0"));
    assert_eq!(
        r.cmd(&["XADD", "s", "5-0", "c", "3"]),
        err("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    );
    assert_eq!(
        r.cmd(&["XADD", "s", "0-0", "c", "3"]),
        err("ERR The ID specified in XADD must be greater than 0-0")
    );
    assert_eq!(
        r.cmd(&["XADD", "s", "1-x", "c", "3"]),
        err("ERR Invalid stream ID specified as stream command argument")
    );
    assert_eq!(
        r.cmd(&["XADD", "s", "*", "c"]),
        err("ERR wrong number of arguments for 'xadd' command")
    );
    assert_eq!(
        r.cmd(&["XADD", "nope", "NOMKSTREAM", "*", "a", "b"]),
        Value::Null
    );
    assert_eq!(r.cmd(&["EXISTS", "nope"]), int(0));
    // `*`: the time, then sequence numbers within the same millisecond.
    let Value::Bulk(id) = r.cmd(&["XADD", "t", "*", "a", "b"]) else {
        panic!("no id")
    };
    let id = String::from_utf8(id).unwrap();
    let ms: u64 = id.split('-').next().unwrap().parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(ms <= now && now - ms < 10_000, "{id}");
    assert_eq!(r.cmd(&["XLEN", "s"]), int(3));
    assert_eq!(r.cmd(&["TYPE", "s"]), simple_str("stream"));
    assert_eq!(r.cmd(&["OBJECT", "ENCODING", "s"]), bulk("stream"));
    assert_eq!(
        r.cmd(&["XADD", "s", "MAXLEN", "1", "LIMIT", "5", "9-0", "a", "b"]),
        err("ERR syntax error, LIMIT cannot be used without the special ~ option")
    );
    assert_eq!(
        r.cmd(&["XADD", "s", "MAXLEN", "1", "MINID", "5", "9-0", "a", "b"]),
        err("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
    );
    assert_eq!(
        r.cmd(&["XADD", "s", "MAXLEN", "=", "2", "9-0", "a", "b"]),
        bulk("9-0")
    );
    assert_eq!(r.cmd(&["XLEN", "s"]), int(2));
    r.cmd(&["SET", "str", "x"]);
    assert!(
        matches!(r.cmd(&["XADD", "str", "*", "a", "b"]), Value::Error(e) if e.starts_with("WRONGTYPE"))
    );
}

fn simple_str(s: &str) -> Value {
    Value::Simple(s.to_string())
}

#[test]
fn ranges_counts_and_exclusive_bounds() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    for i in 1..=5 {
        r.cmd(&["XADD", "s", &format!("{i}-0"), "n", &i.to_string()]);
    }
    assert_eq!(
        r.cmd(&["XRANGE", "s", "2", "3"]),
        arr(vec![entry("2-0", &["n", "2"]), entry("3-0", &["n", "3"])])
    );
    assert_eq!(
        r.cmd(&["XRANGE", "s", "(2-0", "(4-0"]),
        arr(vec![entry("3-0", &["n", "3"])])
    );
    assert_eq!(
        r.cmd(&["XREVRANGE", "s", "+", "-", "COUNT", "2"]),
        arr(vec![entry("5-0", &["n", "5"]), entry("4-0", &["n", "4"])])
    );
    assert_eq!(
        r.cmd(&["XRANGE", "s", "-", "+", "COUNT", "0"]),
        Value::NullArray
    );
    assert_eq!(r.cmd(&["XRANGE", "nokey", "-", "+"]), arr(vec![]));
    assert_eq!(
        r.cmd(&["XRANGE", "s", "(-", "+"]),
        err("ERR Invalid stream ID specified as stream command argument")
    );
    assert_eq!(
        r.cmd(&[
            "XRANGE",
            "s",
            "(18446744073709551615-18446744073709551615",
            "+"
        ]),
        err("ERR invalid start ID for the interval")
    );
    assert_eq!(
        r.cmd(&["XRANGE", "s", "-", "+", "FOO"]),
        err("ERR syntax error")
    );
    assert_eq!(r.cmd(&["XDEL", "s", "2-0", "9-0"]), int(1));
    assert_eq!(r.cmd(&["XTRIM", "s", "MINID", "4"]), int(2));
    assert_eq!(
        r.cmd(&["XRANGE", "s", "-", "+"]),
        arr(vec![entry("4-0", &["n", "4"]), entry("5-0", &["n", "5"])])
    );
    assert_eq!(
        r.cmd(&["XTRIM", "s", "LIMIT", "5"]),
        err("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
    );
    assert_eq!(
        r.cmd(&["XTRIM", "s", "LIMIT", "0"]),
        err("ERR syntax error, XTRIM must be called with a trimming strategy")
    );
    // An empty stream still exists.
    assert_eq!(r.cmd(&["XTRIM", "s", "MAXLEN", "0"]), int(2));
    assert_eq!(r.cmd(&["EXISTS", "s"]), int(1));
    assert_eq!(r.cmd(&["XLEN", "s"]), int(0));
}

#[test]
fn approximate_trim_removes_whole_nodes() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    for i in 1..=250 {
        r.cmd(&["XADD", "s", &format!("{i}-0"), "f", "v"]);
    }
    // 100-entry nodes: `~ 120` keeps 150 (two whole nodes go? one: 250-100 = 150 >= 120).
    assert_eq!(r.cmd(&["XTRIM", "s", "MAXLEN", "~", "120"]), int(100));
    assert_eq!(r.cmd(&["XLEN", "s"]), int(150));
    assert_eq!(
        r.cmd(&["XTRIM", "s", "MAXLEN", "~", "120", "LIMIT", "10"]),
        int(0)
    );
    assert_eq!(r.cmd(&["XTRIM", "s", "MAXLEN", "120"]), int(30));
    assert_eq!(
        r.cmd(&["XADD", "s", "MINID", "~", "250", "251-0", "f", "v"]),
        bulk("251-0")
    );
    assert_eq!(
        r.cmd(&["XLEN", "s"]),
        int(51),
        "whole nodes below the ID went"
    );
}

#[test]
fn consumer_groups_pending_claims_and_info() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    for i in 1..=4 {
        r.cmd(&["XADD", "s", &format!("{i}-0"), "n", &i.to_string()]);
    }
    assert_eq!(r.cmd(&["XGROUP", "CREATE", "s", "g", "0"]), ok());
    assert_eq!(
        r.cmd(&["XGROUP", "CREATE", "s", "g", "0"]),
        err("BUSYGROUP Consumer Group name already exists")
    );
    assert_eq!(
        r.cmd(&["XGROUP", "CREATE", "nokey", "g", "$"]),
        err("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
    );
    assert_eq!(
        r.cmd(&["XGROUP", "CREATE", "new", "g", "$", "MKSTREAM"]),
        ok()
    );
    assert_eq!(r.cmd(&["XLEN", "new"]), int(0));
    assert_eq!(
        r.cmd(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            "2",
            "STREAMS",
            "s",
            ">"
        ]),
        arr(vec![arr(vec![
            bulk("s"),
            arr(vec![entry("1-0", &["n", "1"]), entry("2-0", &["n", "2"])])
        ])])
    );
    assert_eq!(
        r.cmd(&["XREADGROUP", "GROUP", "nog", "alice", "STREAMS", "s", ">"]),
        err("NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option")
    );
    assert_eq!(
        r.cmd(&["XPENDING", "s", "g"]),
        arr(vec![
            int(2),
            bulk("1-0"),
            bulk("2-0"),
            arr(vec![bulks(&["alice", "2"])])
        ])
    );
    assert_eq!(r.cmd(&["XACK", "s", "g", "1-0", "3-0"]), int(1));
    // Claim the remaining one for bob; then the history of alice is empty.
    assert_eq!(
        r.cmd(&["XCLAIM", "s", "g", "bob", "0", "2-0", "JUSTID"]),
        bulks(&["2-0"])
    );
    assert_eq!(
        r.cmd(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"]),
        arr(vec![arr(vec![bulk("s"), arr(vec![])])])
    );
    // A deleted pending entry: history shows it as nil; XAUTOCLAIM reports it deleted.
    r.cmd(&["XDEL", "s", "2-0"]);
    assert_eq!(
        r.cmd(&["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0"]),
        arr(vec![arr(vec![
            bulk("s"),
            arr(vec![arr(vec![bulk("2-0"), Value::NullArray])])
        ])])
    );
    assert_eq!(
        r.cmd(&["XAUTOCLAIM", "s", "g", "carol", "0", "0"]),
        arr(vec![bulk("0-0"), arr(vec![]), bulks(&["2-0"])])
    );
    let Value::Array(groups) = r.cmd(&["XINFO", "GROUPS", "s"]) else {
        panic!()
    };
    assert_eq!(
        groups[0],
        arr(vec![
            bulk("name"),
            bulk("g"),
            bulk("consumers"),
            int(3),
            bulk("pending"),
            int(0),
            bulk("last-delivered-id"),
            bulk("2-0"),
            bulk("entries-read"),
            int(2),
            bulk("lag"),
            Value::Null, // a deletion after the group's position: not obtainable
        ])
    );
    assert_eq!(r.cmd(&["XGROUP", "DELCONSUMER", "s", "g", "bob"]), int(0));
    assert_eq!(
        r.cmd(&["XGROUP", "CREATECONSUMER", "s", "g", "dave"]),
        int(1)
    );
    assert_eq!(
        r.cmd(&["XGROUP", "CREATECONSUMER", "s", "g", "dave"]),
        int(0)
    );
    assert_eq!(
        r.cmd(&["XGROUP", "SETID", "s", "nog", "0"]),
        err("NOGROUP No such consumer group 'nog' for key name 's'")
    );
    assert_eq!(
        r.cmd(&["XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "0"]),
        ok()
    );
    assert_eq!(r.cmd(&["XGROUP", "DESTROY", "s", "g"]), int(1));
    assert_eq!(r.cmd(&["XGROUP", "DESTROY", "s", "g"]), int(0));
    assert_eq!(
        r.cmd(&["XSETID", "s", "1-0"]),
        err("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id")
    );
    assert_eq!(r.cmd(&["XSETID", "s", "100-0", "ENTRIESADDED", "50"]), ok());
    assert_eq!(r.cmd(&["XSETID", "nokey", "1-0"]), err("ERR no such key"));
}

/// Sends `args` without reading the reply (a blocking command answers later).
fn send(r: &mut Raw, args: &[&str]) {
    r.send(&common::resp::encode(args));
}

/// Sends `args` and reads the reply; None when the server is gone.
fn try_cmd(r: &mut Raw, args: &[&str]) -> Option<Value> {
    r.try_send(&common::resp::encode(args)).ok()?;
    r.try_read_value(Duration::from_secs(5))
}

#[test]
fn blocking_xread_is_woken_across_workers() {
    let s = Server::start(&["--threads", "2"]);
    let a = common::key_on("sa", 0);
    let b = common::key_on("sb", 1);
    let mut w = s.raw();
    w.cmd(&["XADD", &a, "1-0", "f", "old"]);
    // `$` on two keys of two workers: only what comes after the call.
    let mut blocked = s.raw();
    send(
        &mut blocked,
        &["XREAD", "BLOCK", "5000", "STREAMS", &a, &b, "$", "$"],
    );
    common::wait_blocked(&mut w, 1);
    w.cmd(&["XADD", &b, "7-0", "f", "new"]);
    assert_eq!(
        blocked.read_value(),
        arr(vec![arr(vec![
            bulk(&b),
            arr(vec![entry("7-0", &["f", "new"])])
        ])])
    );
    // One key, its owner's worker: `$` stands for the ID at the time of the call.
    send(
        &mut blocked,
        &["XREAD", "BLOCK", "5000", "STREAMS", &a, "$"],
    );
    common::wait_blocked(&mut w, 1);
    w.cmd(&["XADD", &a, "2-0", "f", "x"]);
    assert_eq!(
        blocked.read_value(),
        arr(vec![arr(vec![
            bulk(&a),
            arr(vec![entry("2-0", &["f", "x"])])
        ])])
    );
    // A waiter for a later ID does not hold up one behind it.
    let mut far = s.raw();
    send(
        &mut far,
        &["XREAD", "BLOCK", "5000", "STREAMS", &a, "100-0"],
    );
    common::wait_blocked(&mut w, 1);
    send(
        &mut blocked,
        &["XREAD", "BLOCK", "5000", "STREAMS", &a, "$"],
    );
    common::wait_blocked(&mut w, 2);
    w.cmd(&["XADD", &a, "3-0", "f", "y"]);
    assert_eq!(
        blocked.read_value(),
        arr(vec![arr(vec![
            bulk(&a),
            arr(vec![entry("3-0", &["f", "y"])])
        ])])
    );
    w.cmd(&["XADD", &a, "101-0", "f", "z"]);
    assert_eq!(
        far.read_value(),
        arr(vec![arr(vec![
            bulk(&a),
            arr(vec![entry("101-0", &["f", "z"])])
        ])])
    );
    // Time-out: a null array.
    let t = Instant::now();
    assert_eq!(
        blocked.cmd(&["XREAD", "BLOCK", "100", "STREAMS", &a, "$"]),
        Value::NullArray
    );
    assert!(t.elapsed() >= Duration::from_millis(90));
}

#[test]
fn blocking_xreadgroup_serves_and_fails_when_the_key_goes() {
    let s = Server::start(&["--threads", "2"]);
    let mut w = s.raw();
    w.cmd(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let mut c1 = s.raw();
    let mut c2 = s.raw();
    send(
        &mut c1,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "a",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    common::wait_blocked(&mut w, 1);
    send(
        &mut c2,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "b",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    common::wait_blocked(&mut w, 2);
    w.cmd(&["XADD", "s", "1-0", "f", "v"]);
    assert_eq!(
        c1.read_value(),
        arr(vec![arr(vec![
            bulk("s"),
            arr(vec![entry("1-0", &["f", "v"])])
        ])])
    );
    common::wait_blocked(&mut w, 1);
    assert_eq!(
        w.cmd(&["XPENDING", "s", "g"]),
        arr(vec![
            int(1),
            bulk("1-0"),
            bulk("1-0"),
            arr(vec![bulks(&["a", "1"])])
        ])
    );
    w.cmd(&["DEL", "s"]);
    assert_eq!(
        c2.read_value(),
        err("NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option")
    );
}

#[test]
fn streams_survive_restart() {
    skip_if_redis!();
    let mut s = Server::start(&[]);
    let mut r = s.raw();
    for i in 1..=300 {
        r.cmd(&["XADD", "s", &format!("{i}-0"), "f", &format!("v{i}")]);
    }
    r.cmd(&["XDEL", "s", "7-0"]);
    r.cmd(&["XGROUP", "CREATE", "s", "g", "0"]);
    r.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "COUNT",
        "10",
        "STREAMS",
        "s",
        ">",
    ]);
    r.cmd(&["XACK", "s", "g", "1-0"]);
    let before_info = r.cmd(&["XINFO", "STREAM", "s"]);
    let before_pending = r.cmd(&["XPENDING", "s", "g"]);
    let before_range = r.cmd(&["XRANGE", "s", "-", "+"]);
    drop(r);
    s.stop_clean();
    s.start_again();
    let mut r = s.raw();
    assert_eq!(r.cmd(&["XINFO", "STREAM", "s"]), before_info);
    assert_eq!(r.cmd(&["XPENDING", "s", "g"]), before_pending);
    assert_eq!(r.cmd(&["XRANGE", "s", "-", "+"]), before_range);
    assert_eq!(r.cmd(&["TYPE", "s"]), simple_str("stream"));
    // COPY, RENAME and EXPIRE work on streams.
    assert_eq!(r.cmd(&["COPY", "s", "s2"]), int(1));
    assert_eq!(r.cmd(&["XPENDING", "s2", "g"]), before_pending);
    assert_eq!(r.cmd(&["RENAME", "s2", "s3"]), ok());
    assert_eq!(r.cmd(&["XLEN", "s3"]), int(299));
    assert_eq!(r.cmd(&["PEXPIRE", "s3", "50"]), int(1));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(r.cmd(&["EXISTS", "s3"]), int(0));
    let Value::Array(scan) = r.cmd(&["SCAN", "0", "TYPE", "stream", "COUNT", "100"]) else {
        panic!()
    };
    assert_eq!(scan[1], bulks(&["s"]));
}

/// Under `appendfsync always`, every acknowledged XADD / XACK / XGROUP change survives
/// `kill -9`: writers run while the server is killed, and after the restart the stream
/// holds every acknowledged entry and the group exactly the acknowledged state.
#[test]
fn acknowledged_stream_changes_survive_kill_9() {
    skip_if_redis!();
    let mut s = Server::start(&["--appendfsync", "always", "--threads", "2"]);
    let mut rng = StdRng::seed_from_u64(7);
    for round in 0..3 {
        let port = s.port();
        let key = format!("k{round}");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let st = stop.clone();
        let k2 = key.clone();
        // Writer: XADD with explicit IDs, a group, reads and acks; records what was acked.
        let writer = std::thread::spawn(move || {
            let mut r = Raw::connect(port);
            let mut added: Vec<u64> = Vec::new();
            let mut acked: Vec<u64> = Vec::new();
            let mut group = false;
            let mut i = 1u64;
            while !st.load(std::sync::atomic::Ordering::Relaxed) {
                let id = format!("{i}-0");
                let v = try_cmd(&mut r, &["XADD", &k2, &id, "n", &i.to_string()]);
                match v {
                    Some(Value::Bulk(_)) => added.push(i),
                    _ => break,
                }
                if i == 5 {
                    match try_cmd(&mut r, &["XGROUP", "CREATE", &k2, "g", "0"]) {
                        Some(Value::Simple(_)) => group = true,
                        _ => break,
                    }
                }
                if group && i.is_multiple_of(3) {
                    let got = try_cmd(
                        &mut r,
                        &[
                            "XREADGROUP",
                            "GROUP",
                            "g",
                            "c",
                            "COUNT",
                            "1",
                            "STREAMS",
                            &k2,
                            ">",
                        ],
                    );
                    if got.is_none() {
                        break;
                    }
                    let ack = (i - 2).to_string() + "-0";
                    match try_cmd(&mut r, &["XACK", &k2, "g", &ack]) {
                        Some(Value::Integer(1)) => acked.push(i - 2),
                        Some(Value::Integer(_)) => {}
                        _ => break,
                    }
                }
                i += 1;
            }
            (added, acked, group)
        });
        std::thread::sleep(Duration::from_millis(rng.random_range(200..600)));
        s.kill();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (added, acked, group) = writer.join().unwrap();
        s.start_again();
        let mut r = s.raw();
        let Value::Array(entries) = r.cmd(&["XRANGE", &key, "-", "+"]) else {
            panic!("no stream after the crash")
        };
        let ids: Vec<u64> = entries
            .iter()
            .map(|e| {
                let Value::Array(p) = e else { panic!() };
                let Value::Bulk(id) = &p[0] else { panic!() };
                String::from_utf8_lossy(id)
                    .split('-')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        // Every acknowledged XADD is there (one more may be, acknowledged as the kill came).
        assert!(
            ids.len() >= added.len() && ids.len() <= added.len() + 1,
            "{} vs {}",
            ids.len(),
            added.len()
        );
        assert_eq!(&ids[..added.len()], &added[..]);
        if group {
            let Value::Array(p) = r.cmd(&["XPENDING", &key, "g", "-", "+", "1000"]) else {
                panic!("no group after the crash")
            };
            let pending: Vec<String> = p
                .iter()
                .map(|e| {
                    let Value::Array(x) = e else { panic!() };
                    let Value::Bulk(id) = &x[0] else { panic!() };
                    String::from_utf8_lossy(id).into_owned()
                })
                .collect();
            for a in &acked {
                assert!(
                    !pending.contains(&format!("{a}-0")),
                    "acked {a} pending again"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Differential test against the reference Redis 8.0.2.

/// True when the reference server is Redis 8 (XREAD `+`, 8.0's replies).
fn reference_is_8(r: &mut Raw) -> bool {
    let Value::Bulk(info) = r.cmd(&["INFO", "server"]) else {
        return false;
    };
    common::info_field(&String::from_utf8_lossy(&info), "redis_version")
        .is_some_and(|v| v.starts_with('8'))
}

/// Masks what depends on the time or on Redis's radix tree internals: idle and delivery
/// times, seen and active times, `radix-tree-nodes`.
fn mask(cmd: &str, v: Value) -> Value {
    let t = bulk("T");
    match v {
        Value::Array(items) if cmd == "XPENDING" => Value::Array(
            items
                .into_iter()
                .map(|e| match e {
                    Value::Array(mut x) if x.len() == 4 => {
                        x[2] = t.clone();
                        Value::Array(x)
                    }
                    other => other,
                })
                .collect(),
        ),
        Value::Array(items) if cmd == "XINFO" => {
            let mut out = Vec::with_capacity(items.len());
            let mut prev: Option<Vec<u8>> = None;
            for it in items {
                let masked = match (&prev, it) {
                    (Some(k), Value::Integer(n))
                        if matches!(
                            &k[..],
                            b"idle" | b"inactive" | b"seen-time" | b"active-time"
                        ) && n != -1 =>
                    {
                        t.clone()
                    }
                    (Some(k), Value::Integer(_)) if k == b"radix-tree-nodes" => t.clone(),
                    (Some(k), Value::Array(xs)) if k == b"pending" => Value::Array(
                        xs.into_iter()
                            .map(|e| match e {
                                Value::Array(mut x) if x.len() == 4 => {
                                    x[2] = t.clone();
                                    Value::Array(x)
                                }
                                Value::Array(mut x) if x.len() == 3 => {
                                    x[1] = t.clone();
                                    Value::Array(x)
                                }
                                other => other,
                            })
                            .collect(),
                    ),
                    (_, other) => mask(cmd, other),
                };
                prev = match &masked {
                    Value::Bulk(b) => Some(b.clone()),
                    _ => None,
                };
                out.push(masked);
            }
            Value::Array(out)
        }
        other => other,
    }
}

struct Gen {
    rng: StdRng,
    /// Per key, the next millisecond part to use.
    next_ms: Vec<u64>,
    keys: Vec<String>,
}

impl Gen {
    fn key(&mut self) -> usize {
        self.rng.random_range(0..self.keys.len())
    }

    fn id_near(&mut self, k: usize) -> String {
        let top = self.next_ms[k].max(1);
        match self.rng.random_range(0..10) {
            0 => "0-0".into(),
            1 => format!("{}", self.rng.random_range(0..top + 2)),
            2 => "abc".into(),
            _ => format!(
                "{}-{}",
                self.rng.random_range(0..top + 2),
                self.rng.random_range(0..3)
            ),
        }
    }

    fn bound(&mut self, k: usize) -> String {
        match self.rng.random_range(0..8) {
            0 => "-".into(),
            1 => "+".into(),
            2 => format!("({}", self.id_near(k)),
            _ => self.id_near(k),
        }
    }

    fn group(&mut self) -> String {
        format!("g{}", self.rng.random_range(0..3))
    }

    fn consumer(&mut self) -> String {
        format!("c{}", self.rng.random_range(0..3))
    }

    fn trim(&mut self, k: usize, out: &mut Vec<String>) {
        let approx = self.rng.random_range(0..3);
        if self.rng.random_bool(0.5) {
            out.push("MAXLEN".into());
            match approx {
                0 => out.push("~".into()),
                1 => out.push("=".into()),
                _ => {}
            }
            out.push(self.rng.random_range(0..150).to_string());
        } else {
            out.push("MINID".into());
            match approx {
                0 => out.push("~".into()),
                1 => out.push("=".into()),
                _ => {}
            }
            out.push(self.id_near(k));
        }
        if approx == 0 && self.rng.random_bool(0.3) {
            out.push("LIMIT".into());
            out.push(self.rng.random_range(0..300).to_string());
        }
    }

    fn op(&mut self, plus: bool) -> Vec<String> {
        let k = self.key();
        let key = self.keys[k].clone();
        let mut a: Vec<String> = Vec::new();
        let pick = self.rng.random_range(0..100);
        match pick {
            0..=34 => {
                a.push("XADD".into());
                a.push(key);
                if self.rng.random_bool(0.05) {
                    a.push("NOMKSTREAM".into());
                }
                if self.rng.random_bool(0.15) {
                    self.trim(k, &mut a);
                }
                let step = self.rng.random_range(0..3);
                self.next_ms[k] += step;
                let ms = self.next_ms[k];
                match self.rng.random_range(0..10) {
                    0 => a.push(format!("{ms}-*")),
                    1 => a.push(format!("{}", ms + 1)),
                    2 => a.push(self.id_near(k)),
                    _ => a.push(format!("{ms}-{}", self.rng.random_range(0..4))),
                }
                let n = self.rng.random_range(1..4);
                for i in 0..n {
                    let f = if self.rng.random_bool(0.8) {
                        format!("f{i}")
                    } else {
                        format!("x{}", self.rng.random_range(0..5))
                    };
                    a.push(f);
                    let v = if self.rng.random_bool(0.05) {
                        "v".repeat(self.rng.random_range(50..300))
                    } else {
                        self.rng.random_range(0..1000).to_string()
                    };
                    a.push(v);
                }
            }
            35..=39 => {
                a.push("XDEL".into());
                a.push(key);
                for _ in 0..self.rng.random_range(1..4) {
                    let id = self.id_near(k);
                    a.push(id);
                }
            }
            40..=42 => {
                a.push("XTRIM".into());
                a.push(key);
                self.trim(k, &mut a);
            }
            43..=48 => {
                let rev = self.rng.random_bool(0.4);
                a.push(if rev { "XREVRANGE" } else { "XRANGE" }.into());
                a.push(key);
                let (s, e) = (self.bound(k), self.bound(k));
                a.push(s);
                a.push(e);
                if self.rng.random_bool(0.5) {
                    a.push("COUNT".into());
                    a.push(self.rng.random_range(-1..8).to_string());
                }
            }
            49..=50 => {
                a.push("XLEN".into());
                a.push(key);
            }
            51..=55 => {
                a.push("XREAD".into());
                if self.rng.random_bool(0.5) {
                    a.push("COUNT".into());
                    a.push(self.rng.random_range(0..5).to_string());
                }
                a.push("STREAMS".into());
                let k2 = self.key();
                let two = self.rng.random_bool(0.4) && k2 != k;
                a.push(key);
                if two {
                    a.push(self.keys[k2].clone());
                }
                for kk in [k, k2].into_iter().take(if two { 2 } else { 1 }) {
                    let id = match self.rng.random_range(0..6) {
                        0 => "$".into(),
                        1 if plus => "+".into(),
                        _ => self.id_near(kk),
                    };
                    a.push(id);
                }
            }
            56..=63 => {
                a.push("XGROUP".into());
                match self.rng.random_range(0..10) {
                    0..=3 => {
                        a.push("CREATE".into());
                        a.push(key);
                        a.push(self.group());
                        a.push(if self.rng.random_bool(0.3) {
                            "$".into()
                        } else {
                            self.id_near(k)
                        });
                        if self.rng.random_bool(0.3) {
                            a.push("MKSTREAM".into());
                        }
                        if self.rng.random_bool(0.2) {
                            a.push("ENTRIESREAD".into());
                            a.push(self.rng.random_range(-1..10).to_string());
                        }
                    }
                    4..=5 => {
                        a.push("SETID".into());
                        a.push(key);
                        a.push(self.group());
                        a.push(if self.rng.random_bool(0.3) {
                            "$".into()
                        } else {
                            self.id_near(k)
                        });
                        if self.rng.random_bool(0.3) {
                            a.push("ENTRIESREAD".into());
                            a.push(self.rng.random_range(-1..10).to_string());
                        }
                    }
                    6 => {
                        a.push("DESTROY".into());
                        a.push(key);
                        a.push(self.group());
                    }
                    7..=8 => {
                        a.push("CREATECONSUMER".into());
                        a.push(key);
                        a.push(self.group());
                        a.push(self.consumer());
                    }
                    _ => {
                        a.push("DELCONSUMER".into());
                        a.push(key);
                        a.push(self.group());
                        a.push(self.consumer());
                    }
                }
            }
            64..=73 => {
                a.push("XREADGROUP".into());
                a.push("GROUP".into());
                a.push(self.group());
                a.push(self.consumer());
                if self.rng.random_bool(0.5) {
                    a.push("COUNT".into());
                    a.push(self.rng.random_range(0..4).to_string());
                }
                if self.rng.random_bool(0.1) {
                    a.push("NOACK".into());
                }
                a.push("STREAMS".into());
                a.push(key);
                a.push(if self.rng.random_bool(0.75) {
                    ">".into()
                } else {
                    self.id_near(k)
                });
            }
            74..=78 => {
                a.push("XACK".into());
                a.push(key);
                a.push(self.group());
                for _ in 0..self.rng.random_range(1..4) {
                    let id = self.id_near(k);
                    a.push(id);
                }
            }
            79..=83 => {
                a.push("XPENDING".into());
                a.push(key);
                a.push(self.group());
                if self.rng.random_bool(0.7) {
                    if self.rng.random_bool(0.2) {
                        a.push("IDLE".into());
                        a.push(
                            if self.rng.random_bool(0.5) {
                                "0"
                            } else {
                                "100000000"
                            }
                            .into(),
                        );
                    }
                    let (s, e) = (self.bound(k), self.bound(k));
                    a.push(s);
                    a.push(e);
                    a.push(self.rng.random_range(-1..6).to_string());
                    if self.rng.random_bool(0.4) {
                        a.push(self.consumer());
                    }
                }
            }
            84..=87 => {
                a.push("XCLAIM".into());
                a.push(key);
                a.push(self.group());
                a.push(self.consumer());
                a.push(
                    if self.rng.random_bool(0.8) {
                        "0"
                    } else {
                        "100000000"
                    }
                    .into(),
                );
                for _ in 0..self.rng.random_range(1..4) {
                    let id = self.id_near(k);
                    a.push(id);
                }
                if self.rng.random_bool(0.3) {
                    a.push("JUSTID".into());
                }
                if self.rng.random_bool(0.2) {
                    a.push("FORCE".into());
                }
                if self.rng.random_bool(0.2) {
                    a.push("RETRYCOUNT".into());
                    a.push(self.rng.random_range(0..5).to_string());
                }
                if self.rng.random_bool(0.1) {
                    a.push("LASTID".into());
                    a.push(self.id_near(k));
                }
            }
            88..=90 => {
                a.push("XAUTOCLAIM".into());
                a.push(key);
                a.push(self.group());
                a.push(self.consumer());
                a.push(
                    if self.rng.random_bool(0.8) {
                        "0"
                    } else {
                        "100000000"
                    }
                    .into(),
                );
                a.push(self.bound(k));
                if self.rng.random_bool(0.5) {
                    a.push("COUNT".into());
                    a.push(self.rng.random_range(0..4).to_string());
                }
                if self.rng.random_bool(0.3) {
                    a.push("JUSTID".into());
                }
            }
            91..=95 => {
                a.push("XINFO".into());
                match self.rng.random_range(0..4) {
                    0 => {
                        a.push("STREAM".into());
                        a.push(key);
                    }
                    1 => {
                        a.push("STREAM".into());
                        a.push(key);
                        a.push("FULL".into());
                        if self.rng.random_bool(0.5) {
                            a.push("COUNT".into());
                            a.push(self.rng.random_range(0..4).to_string());
                        }
                    }
                    2 => {
                        a.push("GROUPS".into());
                        a.push(key);
                    }
                    _ => {
                        a.push("CONSUMERS".into());
                        a.push(key);
                        a.push(self.group());
                    }
                }
            }
            96..=97 => {
                a.push("XSETID".into());
                a.push(key);
                let top = self.next_ms[k] + self.rng.random_range(0..3);
                a.push(format!("{top}-{}", self.rng.random_range(0..3)));
                self.next_ms[k] = top;
                if self.rng.random_bool(0.3) {
                    a.push("ENTRIESADDED".into());
                    a.push(self.rng.random_range(0..400).to_string());
                }
                if self.rng.random_bool(0.3) {
                    a.push("MAXDELETEDID".into());
                    a.push(self.id_near(k));
                }
            }
            _ => {
                if self.rng.random_bool(0.3) {
                    a.push("DEL".into());
                    self.next_ms[k] = 0;
                } else {
                    a.push("TYPE".into());
                }
                a.push(key);
            }
        }
        a
    }
}

/// Runs the seeded random operations on Redis and on Skerry (`--threads threads`, plus
/// `extra` options; `both`: options of both servers) and compares every reply.
fn differential(threads: &str, seed: u64, both: &[&str], extra: &[&str]) {
    skip_if_redis!();
    let mut skerry_args = vec!["--threads", threads];
    skerry_args.extend_from_slice(extra);
    let mut d = common::diff::Diff::start(common::diff::DiffOpts {
        name: "STREAM",
        both,
        skerry: &skerry_args,
        default_ops: 3000,
        seed,
        needs_8: false,
    })
    .expect("any reference");
    let (ops, seed) = (d.ops, d.seed);
    let (rr, sr) = (&mut d.re, &mut d.sk);
    let plus = reference_is_8(rr);
    let keys: Vec<String> = vec![
        common::key_on("st", 0),
        common::key_on("st", 1),
        "{t}one".into(),
    ];
    let mut g = Gen {
        rng: StdRng::seed_from_u64(seed),
        next_ms: vec![0; keys.len()],
        keys,
    };
    let mut differences = 0;
    // Most group records seen at once (INFO storage), sampled every 50 operations.
    let mut most_groups = 0i64;
    for n in 0..ops {
        if n % 50 == 0 {
            let info = sr.cmd(&["INFO", "storage"]).text();
            let g: i64 = common::info_field(&info, "storage_collection_group_records")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            most_groups = most_groups.max(g);
        }
        let a = g.op(plus);
        let args: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
        let want = mask(&a[0], rr.cmd(&args));
        let got = mask(&a[0], sr.cmd(&args));
        if want != got {
            differences += 1;
            eprintln!("op {n}: {args:?}\n  redis:  {want:?}\n  skerry: {got:?}");
            assert!(differences < 5, "replies differ");
        }
    }
    assert_eq!(differences, 0, "replies differ");
    if !extra.is_empty() {
        assert!(
            most_groups > 15,
            "streams never grouped ({most_groups} group records)"
        );
    }
    eprintln!("most group records at once: {most_groups}");
    // The final state, key by key.
    for k in &g.keys {
        for cmd in [
            vec!["XRANGE", k, "-", "+"],
            vec!["XINFO", "STREAM", k, "FULL", "COUNT", "0"],
        ] {
            assert_eq!(
                mask(cmd[0], sr.cmd(&cmd)),
                mask(cmd[0], rr.cmd(&cmd)),
                "{cmd:?}"
            );
        }
    }
}

#[test]
fn differential_against_redis_one_thread() {
    differential("1", 11, &[], &[]);
}

#[test]
fn differential_against_redis_two_threads() {
    differential("2", 12, &[], &[]);
}

/// Options of both servers in the grouped differential runs.
const GROUPED_BOTH: &[&str] = &["--stream-node-max-entries", "5"];
/// Skerry's options in the grouped differential runs.
const GROUPED_SKERRY: &[&str] = &["--collection-group-bytes", "64"];

/// The same with tiny group records, so that every stream past a few entries is stored
/// grouped (a root, a page per node, a record per consumer group) and every command runs
/// against that form; nodes of 5 entries (on both servers) make many pages.
#[test]
fn differential_against_redis_grouped_one_thread() {
    differential("1", 13, GROUPED_BOTH, GROUPED_SKERRY);
}

/// [`differential_against_redis_grouped_one_thread`] with two workers.
#[test]
fn differential_against_redis_grouped_two_threads() {
    differential("2", 14, GROUPED_BOTH, GROUPED_SKERRY);
}

/// The grouped runs with a decoded-collection cache of a few bytes
/// (`SKERRY_DECODED_COLL_BYTES`, read by the Skerry processes started from here on): every
/// command on another key than the last one finds its stream evicted and loads it again
/// partially (root, index, consumer groups, head and tail pages, then the pages the command
/// needs), so that every command runs on partially loaded streams.
fn differential_partial(threads: &str, seed: u64) {
    std::env::set_var("SKERRY_DECODED_COLL_BYTES", "1");
    differential(threads, seed, GROUPED_BOTH, GROUPED_SKERRY);
}

#[test]
fn differential_against_redis_partial_loads_one_thread() {
    differential_partial("1", 15);
}

#[test]
fn differential_against_redis_partial_loads_two_threads() {
    differential_partial("2", 16);
}
