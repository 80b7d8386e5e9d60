//! Write-behind of hot collections (decision 0035): the commands of one turn that change
//! the same list, hash, set or stream leave its record to be written once, at the end of
//! the turn. Nothing of that may show: every other command sees the changes, WATCH and
//! blocked clients react at once, restarts (clean or `kill -9` after the everysec sync)
//! keep every change, and a pipeline answers exactly as Redis does.

mod common;

use std::time::Duration;

use common::diff::{Diff, DiffOpts};
use common::*;

/// Keys of the differential run: a few of each type, spread over the workers.
const LISTS: [&str; 3] = ["wb:l:a", "wb:l:b", "wb:l:c"];
const HASHES: [&str; 2] = ["wb:h:a", "wb:h:b"];
const SETS: [&str; 2] = ["wb:s:a", "wb:s:b"];
const STREAMS: [&str; 2] = ["wb:x:a", "wb:x:b"];

/// An element of 1 to 1,500 bytes (long ones make the lists grouped, in pages).
fn element(rng: &mut Rng) -> String {
    let len = match rng.range(0, 10) {
        0 => rng.range(200, 1500),
        _ => rng.range(1, 40),
    } as usize;
    let c = (b'a' + rng.range(0, 26) as u8) as char;
    format!("{}{}", rng.range(0, 1000), c.to_string().repeat(len))
}

/// One random command on the differential keys: mostly the writes that may leave their
/// collection behind, with the reads, expiry, renames and transactions that must see them.
fn command(rng: &mut Rng, stream_ids: &mut [u64; 2]) -> Vec<Vec<String>> {
    let s = |v: &str| v.to_string();
    let l = LISTS[rng.range(0, 3) as usize];
    let h = HASHES[rng.range(0, 2) as usize];
    let st = SETS[rng.range(0, 2) as usize];
    let xi = rng.range(0, 2) as usize;
    let x = STREAMS[xi];
    let one = match rng.range(0, 30) {
        0..=4 => {
            let n = rng.range(1, 4);
            let mut c = vec![
                s(if rng.range(0, 2) == 0 {
                    "LPUSH"
                } else {
                    "RPUSH"
                }),
                s(l),
            ];
            for _ in 0..n {
                c.push(element(rng));
            }
            c
        }
        5..=6 => vec![s("LPOP"), s(l)],
        7 => vec![s("RPOP"), s(l), rng.range(0, 4).to_string()],
        8 => vec![s("LRANGE"), s(l), s("0"), s("-1")],
        9 => vec![s("LLEN"), s(l)],
        10 => vec![s("LINDEX"), s(l), rng.range(0, 5).to_string()],
        11..=12 => vec![
            s(if rng.range(0, 4) == 0 {
                "HMSET"
            } else {
                "HSET"
            }),
            s(h),
            format!("f{}", rng.range(0, 20)),
            element(rng),
        ],
        13 => vec![s("HGET"), s(h), format!("f{}", rng.range(0, 20))],
        14 => vec![s("HLEN"), s(h)],
        15..=16 => vec![s("SADD"), s(st), format!("m{}", rng.range(0, 30))],
        17 => vec![s("SCARD"), s(st)],
        18 => vec![s("SISMEMBER"), s(st), format!("m{}", rng.range(0, 30))],
        19..=20 => {
            // Explicit IDs (the servers' clocks differ); now and then an old one (the error
            // path hands the stream back) or a trim.
            let id = if rng.range(0, 6) == 0 {
                stream_ids[xi].saturating_sub(rng.range(0, 3))
            } else {
                stream_ids[xi] += rng.range(1, 3);
                stream_ids[xi]
            };
            let mut c = vec![s("XADD"), s(x)];
            if rng.range(0, 4) == 0 {
                c.extend([s("MAXLEN"), s("20")]);
            }
            c.extend([format!("{id}-1"), s("f"), element(rng)]);
            c
        }
        21 => vec![s("XLEN"), s(x)],
        22 => vec![s("XRANGE"), s(x), s("-"), s("+"), s("COUNT"), s("3")],
        23 => vec![s("XREVRANGE"), s(x), s("+"), s("-"), s("COUNT"), s("2")],
        24 => {
            let k = [l, h, st, x][rng.range(0, 4) as usize];
            vec![s(["TYPE", "EXISTS", "DEL"][rng.range(0, 3) as usize]), s(k)]
        }
        25 => {
            let k = [l, h, st][rng.range(0, 3) as usize];
            return vec![
                vec![s("EXPIRE"), s(k), s("1000")],
                vec![s("TTL"), s(k)],
                vec![s("PERSIST"), s(k)],
            ];
        }
        26 => {
            // Both lists share a worker only by chance: a hash tag keeps the rename local.
            return vec![
                vec![s("RENAME"), s(l), s("{wb}tmp")],
                vec![s("RENAME"), s("{wb}tmp"), s(l)],
            ];
        }
        27 => {
            return vec![
                vec![s("MULTI")],
                vec![s("RPUSH"), s(l), element(rng)],
                vec![s("LLEN"), s(l)],
                vec![s("HSET"), s(h), s("fx"), element(rng)],
                vec![s("EXEC")],
            ]
        }
        28 => vec![s("LPUSHX"), s(l), element(rng)],
        _ => vec![s("WRONGTYPE-PROBE"), s(l)],
    };
    if one[0] == "WRONGTYPE-PROBE" {
        // A string command on a collection: WRONGTYPE from both.
        return vec![vec![s("GET"), s(l)], vec![s("HSET"), s(l), s("f"), s("v")]];
    }
    vec![one]
}

/// Pipelines of random commands against Skerry and Redis: every reply byte for byte equal.
fn differential(threads: &str, seed: u64) {
    let Some(mut d) = Diff::start(DiffOpts {
        name: "WRITE_BEHIND",
        both: &[],
        skerry: &["--threads", threads],
        default_ops: 4000,
        seed,
        needs_8: false,
    }) else {
        return;
    };
    let mut rng = Rng::new(d.seed);
    let mut stream_ids = [0u64; 2];
    let mut done = 0;
    let mut round = 0;
    while done < d.ops {
        round += 1;
        let len = rng.range(1, 60) as usize;
        let mut cmds: Vec<Vec<String>> = Vec::new();
        while cmds.len() < len {
            cmds.extend(command(&mut rng, &mut stream_ids));
        }
        done += cmds.len();
        let mut msg = Vec::new();
        for c in &cmds {
            msg.extend_from_slice(&resp::encode(c));
        }
        d.re.send(&msg);
        d.sk.send(&msg);
        for (i, c) in cmds.iter().enumerate() {
            let (a, b) = (d.re.read_raw(), d.sk.read_raw());
            assert_eq!(
                String::from_utf8_lossy(&a),
                String::from_utf8_lossy(&b),
                "seed {} round {round} command {i} of the pipeline: {:?}",
                d.seed,
                &c[..c.len().min(4)]
            );
        }
    }
    // And once the turn is over, from another connection.
    let mut re = d.reference.raw();
    let mut sk = d.skerry.raw();
    for l in LISTS {
        let c = ["LRANGE", l, "0", "-1"];
        assert_eq!(re.cmd_raw(&c), sk.cmd_raw(&c), "final {l}");
    }
    for x in STREAMS {
        let c = ["XRANGE", x, "-", "+"];
        assert_eq!(re.cmd_raw(&c), sk.cmd_raw(&c), "final {x}");
    }
}

#[test]
fn pipelines_on_hot_collections_answer_as_redis_threads_1() {
    differential("1", 0x3535_0001);
}

#[test]
fn pipelines_on_hot_collections_answer_as_redis_threads_2() {
    differential("2", 0x3535_0002);
}

/// The point of it: a pipeline of pushes to one list writes the list about once per turn,
/// not once per push (each push of a 1 KiB element rewrote the list's head page).
#[test]
fn pushes_of_one_turn_write_the_list_once() {
    skip_if_redis!();
    let s = Server::start(&["--threads", "1"]);
    let mut r = s.raw();
    let value = "v".repeat(1024);
    const PUSHES: usize = 2000;
    let before = info_u64(&mut r, "storage", "storage_records_appended").expect("records");
    for chunk in 0..PUSHES / 100 {
        let cmds: Vec<Vec<String>> = (0..100)
            .map(|i| {
                vec![
                    "RPUSH".to_string(),
                    "wb:hot".to_string(),
                    format!("{}:{value}", chunk * 100 + i),
                ]
            })
            .collect();
        let replies = pipeline(&mut r, &cmds);
        assert_eq!(replies[99], Value::Integer((chunk as i64 + 1) * 100));
    }
    // The last turn's write happens when the turn ends: a command on the list forces it.
    assert_eq!(r.cmd(&["LLEN", "wb:hot"]), Value::Integer(PUSHES as i64));
    let appended =
        info_u64(&mut r, "storage", "storage_records_appended").expect("records") - before;
    // 20 pipelines of 100: a few reads (turns) each, a page and a root per turn, and a
    // new page every 8 pushes. One record per push or more means no write-behind.
    assert!(
        appended < (PUSHES / 3) as u64,
        "{appended} records appended for {PUSHES} pipelined pushes to one list"
    );
    let got = r.cmd(&["LRANGE", "wb:hot", "0", "-1"]);
    let Value::Array(items) = got else {
        panic!("LRANGE: {got:?}")
    };
    assert_eq!(items.len(), PUSHES);
    for (i, v) in items.iter().enumerate() {
        assert_eq!(*v, bulk(&format!("{i}:{value}")), "element {i}");
    }
}

/// Writes of many clients to the same keys in the same turns.
fn hammer(s: &Server, round: usize) {
    let clients = 16;
    let mut conns: Vec<Raw> = (0..clients).map(|_| s.raw()).collect();
    for (c, r) in conns.iter_mut().enumerate() {
        let mut msg = Vec::new();
        for i in 0..50 {
            let v = format!("r{round}c{c}i{i}");
            msg.extend_from_slice(&resp::encode(&["RPUSH", "wb:q", &v]));
            msg.extend_from_slice(&resp::encode(&["HSET", "wb:h", &v, &v]));
            msg.extend_from_slice(&resp::encode(&["SADD", "wb:s", &v]));
            msg.extend_from_slice(&resp::encode(&["XADD", "wb:x", "*", "v", &v]));
        }
        r.send(&msg);
    }
    for r in conns.iter_mut() {
        for _ in 0..200 {
            let v = r.read_value();
            assert!(!matches!(v, Value::Error(_)), "{v:?}");
        }
    }
}

/// Every value written by `hammer` for rounds `0..rounds` is there.
fn check(r: &mut Raw, rounds: usize, when: &str) {
    let n = (rounds * 16 * 50) as i64;
    assert_eq!(r.cmd(&["LLEN", "wb:q"]), Value::Integer(n), "{when}: LLEN");
    assert_eq!(r.cmd(&["HLEN", "wb:h"]), Value::Integer(n), "{when}: HLEN");
    assert_eq!(
        r.cmd(&["SCARD", "wb:s"]),
        Value::Integer(n),
        "{when}: SCARD"
    );
    assert_eq!(r.cmd(&["XLEN", "wb:x"]), Value::Integer(n), "{when}: XLEN");
    let Value::Array(items) = r.cmd(&["LRANGE", "wb:q", "0", "-1"]) else {
        panic!("{when}: LRANGE")
    };
    let mut got: Vec<String> = items
        .into_iter()
        .map(|v| match v {
            Value::Bulk(b) => String::from_utf8(b).expect("utf-8"),
            v => panic!("{when}: {v:?}"),
        })
        .collect();
    got.sort();
    let mut want: Vec<String> = (0..rounds)
        .flat_map(|round| {
            (0..16).flat_map(move |c| (0..50).map(move |i| format!("r{round}c{c}i{i}")))
        })
        .collect();
    want.sort();
    assert_eq!(got, want, "{when}: the list's elements");
    // Per client, the list keeps the order its pushes were sent in.
    let hv = r.cmd(&["HGET", "wb:h", "r0c3i49"]);
    assert_eq!(hv, bulk("r0c3i49"), "{when}: HGET");
}

#[test]
fn many_clients_on_hot_keys_lose_nothing_across_restarts() {
    skip_if_redis!();
    let mut s = Server::start(&["--threads", "2"]);
    hammer(&s, 0);
    let mut r = s.raw();
    check(&mut r, 1, "after the writes");
    // A clean shutdown in the same pipeline as the writes: what they left behind is
    // written before the last sync.
    hammer(&s, 1);
    let mut msg = Vec::new();
    for i in 0..5 {
        msg.extend_from_slice(&resp::encode(&["RPUSH", "wb:last", &format!("{i}")]));
    }
    msg.extend_from_slice(&resp::encode(&["SHUTDOWN"]));
    r.send(&msg);
    s.wait_exit(Duration::from_secs(30))
        .expect("SHUTDOWN did not stop the server");
    s.start_again();
    let mut r = s.raw();
    check(&mut r, 2, "after a clean restart");
    assert_eq!(
        r.cmd(&["LLEN", "wb:last"]),
        Value::Integer(5),
        "pushes before SHUTDOWN"
    );
    drop(r);
    // Under everysec a write is durable within about a second of its turn: kill -9 after
    // that loses nothing.
    hammer(&s, 2);
    std::thread::sleep(Duration::from_millis(2500));
    s.kill();
    s.start_again();
    let mut r = s.raw();
    check(&mut r, 3, "after kill -9");
}

/// WATCH and a blocked client react to a change left behind at once, as to any write.
#[test]
fn watch_and_blocked_clients_see_a_change_left_behind() {
    let s = Server::start(&["--threads", "1"]);
    let mut a = s.raw();
    let mut b = s.raw();
    let mut c = s.raw();
    assert_eq!(b.cmd(&["RPUSH", "wb:w", "x"]), Value::Integer(1));
    assert_eq!(a.cmd(&["WATCH", "wb:w"]), simple("OK"));
    let replies = pipeline(
        &mut b,
        &[vec!["RPUSH", "wb:w", "y"], vec!["RPUSH", "wb:w", "z"]],
    );
    assert_eq!(replies, vec![Value::Integer(2), Value::Integer(3)]);
    assert_eq!(a.cmd(&["MULTI"]), simple("OK"));
    assert_eq!(a.cmd(&["LLEN", "wb:w"]), simple("QUEUED"));
    assert_eq!(
        a.cmd(&["EXEC"]),
        Value::NullArray,
        "EXEC after a watched key changed"
    );
    // A client blocked on a list is served by the first push of a pipeline.
    assert_eq!(b.cmd(&["RPUSH", "wb:b", "first"]), Value::Integer(1));
    assert_eq!(b.cmd(&["LPOP", "wb:b"]), bulk("first"));
    c.send(&resp::encode(&["BLPOP", "wb:b", "5"]));
    std::thread::sleep(Duration::from_millis(200));
    let replies = pipeline(
        &mut b,
        &[
            vec!["RPUSH", "wb:b", "a"],
            vec!["RPUSH", "wb:b", "b"],
            vec!["LRANGE", "wb:b", "0", "-1"],
        ],
    );
    assert_eq!(c.read_value(), bulks(&["wb:b", "a"]));
    assert_eq!(
        replies,
        vec![Value::Integer(1), Value::Integer(1), bulks(&["b"])],
        "the blocked client took the first element before the second push"
    );
}

/// XADD's errors after it found the stream (an ID not above the top one) hand the stream
/// back: the entries added before them in the same pipeline stay.
#[test]
fn xadd_errors_in_a_pipeline_keep_the_entries_before_them() {
    let s = Server::start(&["--threads", "1"]);
    let mut r = s.raw();
    let replies = pipeline(
        &mut r,
        &[
            vec!["XADD", "wb:e", "1-1", "a", "1"],
            vec!["XADD", "wb:e", "2-1", "b", "2"],
            vec!["XADD", "wb:e", "2-1", "c", "3"],
            vec!["XADD", "wb:e", "3-1", "d", "4"],
            vec!["XADD", "wb:e", "0-0", "e", "5"],
            vec!["XLEN", "wb:e"],
        ],
    );
    assert_eq!(replies[0], bulk("1-1"));
    assert_eq!(replies[1], bulk("2-1"));
    assert!(
        matches!(&replies[2], Value::Error(e) if e.contains("equal or smaller")),
        "{:?}",
        replies[2]
    );
    assert_eq!(replies[3], bulk("3-1"));
    assert!(matches!(&replies[4], Value::Error(_)), "{:?}", replies[4]);
    assert_eq!(replies[5], Value::Integer(3));
    let Value::Array(all) = r.cmd(&["XRANGE", "wb:e", "-", "+"]) else {
        panic!("XRANGE")
    };
    let ids: Vec<Value> = all
        .into_iter()
        .map(|e| match e {
            Value::Array(mut v) => v.remove(0),
            e => panic!("{e:?}"),
        })
        .collect();
    assert_eq!(ids, vec![bulk("1-1"), bulk("2-1"), bulk("3-1")]);
}

/// Every command on a key left behind counts one access of it (LFU), as in Redis.
#[test]
fn commands_on_a_change_left_behind_count_their_accesses() {
    let s = Server::start(&["--threads", "1"]);
    let mut r = s.raw();
    for (k, v) in [("maxmemory-policy", "allkeys-lfu"), ("lfu-log-factor", "0")] {
        assert_eq!(r.cmd(&["CONFIG", "SET", k, v]), simple("OK"));
    }
    assert_eq!(r.cmd(&["RPUSH", "wb:f", "a"]), Value::Integer(1));
    let freq = |r: &mut Raw| match r.cmd(&["OBJECT", "FREQ", "wb:f"]) {
        Value::Integer(n) => n,
        v => panic!("OBJECT FREQ: {v:?}"),
    };
    let f0 = freq(&mut r);
    let mut cmds: Vec<Vec<&str>> = Vec::new();
    for _ in 0..10 {
        cmds.push(vec!["RPUSH", "wb:f", "x"]);
        cmds.push(vec!["LPOP", "wb:f"]);
    }
    pipeline(&mut r, &cmds);
    assert_eq!(freq(&mut r), f0 + 20, "20 pipelined pushes and pops");
}
