//! MULTI / EXEC / DISCARD / WATCH / UNWATCH end to end: queueing, EXEC replies, errors,
//! aborts, optimistic locking, isolation from blocked clients, atomicity across workers and
//! durability. Every expectation holds for Redis 7.0.15 too (`SKERRY_TEST_SERVER=redis`).

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

fn send(r: &mut Raw, args: &[&str]) {
    r.send(&resp::encode(args));
}

#[test]
fn queueing_and_exec_reply() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    assert_eq!(r.cmd_raw(&["MULTI"]), b"+OK\r\n");
    assert_eq!(r.cmd_raw(&["SET", "a", "1"]), b"+QUEUED\r\n");
    assert_eq!(r.cmd_raw(&["INCR", "a"]), b"+QUEUED\r\n");
    assert_eq!(r.cmd_raw(&["GET", "a"]), b"+QUEUED\r\n");
    assert_eq!(r.cmd_raw(&["RPUSH", "l", "x", "y"]), b"+QUEUED\r\n");
    assert_eq!(r.cmd_raw(&["LRANGE", "l", "0", "-1"]), b"+QUEUED\r\n");
    assert_eq!(r.cmd_raw(&["GET", "nokey"]), b"+QUEUED\r\n");
    assert_eq!(r.cmd_raw(&["PING"]), b"+QUEUED\r\n");
    // Nothing ran yet.
    let mut other = s.raw();
    assert_eq!(other.cmd(&["EXISTS", "a", "l"]), int(0));
    assert_eq!(
        r.cmd_raw(&["EXEC"]),
        b"*7\r\n+OK\r\n:2\r\n$1\r\n2\r\n:2\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n$-1\r\n+PONG\r\n"
    );
    assert_eq!(other.cmd(&["GET", "a"]), bulk("2"));
    // An empty transaction.
    assert_eq!(r.cmd(&["MULTI"]), ok());
    assert_eq!(r.cmd_raw(&["EXEC"]), b"*0\r\n");
    // Out of MULTI again.
    assert_eq!(r.cmd(&["EXEC"]), err("ERR EXEC without MULTI"));
    // Pipelined as one write.
    let replies = pipeline(
        &mut r,
        &[
            vec!["MULTI"],
            vec!["INCR", "c"],
            vec!["INCR", "c"],
            vec!["EXEC"],
            vec!["GET", "c"],
        ],
    );
    assert_eq!(
        replies,
        vec![
            ok(),
            simple("QUEUED"),
            simple("QUEUED"),
            arr(vec![int(1), int(2)]),
            bulk("2")
        ]
    );
}

#[test]
fn exec_reply_under_resp3() {
    let s = Server::start(&[]);
    let mut r = resp3(&s);
    r.cmd(&["HSET", "h", "f", "v"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["HGETALL", "h"]);
    r.cmd(&["GET", "nokey"]);
    r.cmd(&["BLPOP", "nolist", "0"]);
    assert_eq!(
        r.cmd_raw(&["EXEC"]),
        b"*3\r\n%1\r\n$1\r\nf\r\n$1\r\nv\r\n_\r\n_\r\n"
    );
}

#[test]
fn errors_inside_exec_do_not_stop_the_others() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    r.cmd(&["SET", "str", "v"]);
    r.cmd(&["MULTI"]);
    assert_eq!(r.cmd(&["SET", "a", "1"]), simple("QUEUED"));
    assert_eq!(r.cmd(&["LPUSH", "str", "x"]), simple("QUEUED"));
    assert_eq!(r.cmd(&["INCR", "str"]), simple("QUEUED"));
    // A syntax error found only when the command runs.
    assert_eq!(r.cmd(&["SET", "b", "1", "NX", "XX"]), simple("QUEUED"));
    assert_eq!(r.cmd(&["INCR", "a"]), simple("QUEUED"));
    assert_eq!(
        r.cmd(&["EXEC"]),
        arr(vec![
            ok(),
            err(WRONGTYPE),
            err("ERR value is not an integer or out of range"),
            err("ERR syntax error"),
            int(2),
        ])
    );
    assert_eq!(r.cmd(&["GET", "a"]), bulk("2"));
    assert_eq!(r.cmd(&["GET", "str"]), bulk("v"));
    assert_eq!(r.cmd(&["EXISTS", "b"]), int(0));
}

#[test]
fn execabort_after_a_queueing_error() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    // Unknown command.
    r.cmd(&["MULTI"]);
    assert_eq!(r.cmd(&["SET", "a", "1"]), simple("QUEUED"));
    assert_eq!(
        r.cmd(&["NOSUCHCMD", "x", "y"]),
        err("ERR unknown command 'NOSUCHCMD', with args beginning with: 'x' 'y' ")
    );
    assert_eq!(r.cmd(&["SET", "b", "1"]), simple("QUEUED"));
    assert_eq!(r.cmd(&["EXEC"]), err(EXECABORT));
    assert_eq!(r.cmd(&["EXISTS", "a", "b"]), int(0));
    // The transaction is over.
    assert_eq!(r.cmd(&["EXEC"]), err("ERR EXEC without MULTI"));
    // Arity error.
    r.cmd(&["MULTI"]);
    assert_eq!(r.cmd(&["SET", "a", "1"]), simple("QUEUED"));
    assert_eq!(
        r.cmd(&["GET"]),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(r.cmd(&["EXEC"]), err(EXECABORT));
    assert_eq!(r.cmd(&["EXISTS", "a"]), int(0));
    // Arity error of a subcommand-less command with too many arguments.
    r.cmd(&["MULTI"]);
    assert_eq!(
        r.cmd(&["GET", "a", "b"]),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(r.cmd(&["DISCARD"]), ok());
    assert_eq!(r.cmd(&["EXEC"]), err("ERR EXEC without MULTI"));
}

#[test]
fn nested_multi_watch_inside_multi_and_stray_exec_discard() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["EXEC"]), err("ERR EXEC without MULTI"));
    assert_eq!(r.cmd(&["DISCARD"]), err("ERR DISCARD without MULTI"));
    r.cmd(&["MULTI"]);
    r.cmd(&["SET", "a", "1"]);
    assert_eq!(r.cmd(&["MULTI"]), err("ERR MULTI calls can not be nested"));
    assert_eq!(
        r.cmd(&["WATCH", "a"]),
        err("ERR WATCH inside MULTI is not allowed")
    );
    // Neither error aborts the transaction.
    r.cmd(&["INCR", "a"]);
    assert_eq!(r.cmd(&["EXEC"]), arr(vec![ok(), int(2)]));
    // DISCARD drops the queue.
    r.cmd(&["MULTI"]);
    r.cmd(&["SET", "a", "dropped"]);
    assert_eq!(r.cmd(&["DISCARD"]), ok());
    assert_eq!(r.cmd(&["GET", "a"]), bulk("2"));
    assert_eq!(r.cmd(&["DISCARD"]), err("ERR DISCARD without MULTI"));
    // UNWATCH outside MULTI answers at once; inside, it is queued like any command.
    assert_eq!(r.cmd(&["UNWATCH"]), ok());
    r.cmd(&["MULTI"]);
    assert_eq!(r.cmd(&["UNWATCH"]), simple("QUEUED"));
    assert_eq!(r.cmd(&["EXEC"]), arr(vec![ok()]));
}

#[test]
fn watch_aborts_on_a_change_by_another_connection() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    let mut o = s.raw();
    let (k0, k1) = (key_on("w", 0), key_on("w", 1));
    r.cmd(&["SET", &k0, "1"]);
    // A change on either worker aborts.
    for changed in [&k0, &k1] {
        assert_eq!(r.cmd(&["WATCH", &k0, &k1]), ok());
        o.cmd(&["SET", changed, "changed"]);
        r.cmd(&["MULTI"]);
        r.cmd(&["SET", "result", "ran"]);
        assert_eq!(r.cmd_raw(&["EXEC"]), b"*-1\r\n", "change of {changed}");
        assert_eq!(r.cmd(&["EXISTS", "result"]), int(0));
    }
    // The same value written again still counts as a change; so do other writes.
    for change in [
        vec!["SET", k0.as_str(), "changed"],
        vec!["EXPIRE", k0.as_str(), "100"],
        vec!["DEL", k0.as_str()],
        vec!["RPUSH", k1.as_str(), "x"],
        vec!["RENAME", k1.as_str(), k0.as_str()],
        vec!["FLUSHALL"],
    ] {
        o.cmd(&["DEL", &k0, &k1]);
        o.cmd(&["SET", &k0, "changed"]);
        if change[0] == "RENAME" {
            o.cmd(&["RPUSH", &k1, "x"]);
        }
        r.cmd(&["WATCH", &k0, &k1]);
        o.cmd(&change);
        r.cmd(&["MULTI"]);
        r.cmd(&["SET", "result", "ran"]);
        assert_eq!(r.cmd(&["EXEC"]), Value::NullArray, "{change:?}");
    }
    assert_eq!(r.cmd(&["EXISTS", "result"]), int(0));
    // Writes that change nothing do not abort.
    o.cmd(&["DEL", &k0, &k1]);
    o.cmd(&["SET", &k0, "v"]);
    r.cmd(&["WATCH", &k0, &k1]);
    o.cmd(&["DEL", &k1]); // k1 does not exist
    o.cmd(&["LPOP", &k1]);
    o.cmd(&["GET", &k0]);
    o.cmd(&["SET", "unrelated", "1"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["SET", "result", "ran"]);
    assert_eq!(r.cmd(&["EXEC"]), arr(vec![ok()]));
    // RESP3 form of the abort.
    let mut r3 = resp3(&s);
    r3.cmd(&["WATCH", &k1]);
    o.cmd(&["SET", &k1, "z"]);
    r3.cmd(&["MULTI"]);
    r3.cmd(&["PING"]);
    assert_eq!(r3.cmd_raw(&["EXEC"]), b"_\r\n");
}

#[test]
fn watch_aborts_on_a_change_by_the_same_connection() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["SET", "k", "1"]);
    r.cmd(&["WATCH", "k"]);
    r.cmd(&["INCR", "k"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["INCR", "k"]);
    assert_eq!(r.cmd(&["EXEC"]), Value::NullArray);
    assert_eq!(r.cmd(&["GET", "k"]), bulk("2"));
    // EXEC (even aborted) forgets the watches: the next transaction runs.
    r.cmd(&["MULTI"]);
    r.cmd(&["INCR", "k"]);
    assert_eq!(r.cmd(&["EXEC"]), arr(vec![int(3)]));
}

#[test]
fn unwatch_and_discard_forget_the_watches() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    let mut o = s.raw();
    r.cmd(&["WATCH", "k", "j"]);
    assert_eq!(r.cmd(&["UNWATCH"]), ok());
    o.cmd(&["SET", "k", "changed"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["GET", "k"]);
    assert_eq!(r.cmd(&["EXEC"]), arr(vec![bulk("changed")]));
    r.cmd(&["WATCH", "k"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["DISCARD"]);
    o.cmd(&["SET", "k", "again"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["GET", "k"]);
    assert_eq!(r.cmd(&["EXEC"]), arr(vec![bulk("again")]));
    // A watch with no change since: runs.
    r.cmd(&["WATCH", "k"]);
    o.cmd(&["GET", "k"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["SET", "k", "mine"]);
    assert_eq!(r.cmd(&["EXEC"]), arr(vec![ok()]));
    assert_eq!(o.cmd(&["GET", "k"]), bulk("mine"));
}

#[test]
fn watched_key_that_expires_aborts() {
    // Redis 7.0 (isWatchedKeyExpired): a key that existed at WATCH and has expired by EXEC
    // counts as changed.
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["SET", "k", "v", "PX", "100"]);
    r.cmd(&["WATCH", "k"]);
    std::thread::sleep(Duration::from_millis(200));
    r.cmd(&["MULTI"]);
    r.cmd(&["SET", "result", "ran"]);
    assert_eq!(r.cmd(&["EXEC"]), Value::NullArray);
    assert_eq!(r.cmd(&["EXISTS", "result"]), int(0));
}

#[test]
fn commands_on_both_workers_inside_one_transaction() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    let (a, b) = (key_on("t", 0), key_on("t", 1));
    let (sa, sb) = (key_on("tset", 0), key_on("tset", 1));
    r.cmd(&["MULTI"]);
    for c in [
        vec!["SET", a.as_str(), "1"],
        vec!["SET", b.as_str(), "2"],
        vec!["MGET", a.as_str(), b.as_str()],
        vec!["SADD", sa.as_str(), "m1", "m2"],
        vec!["SMOVE", sa.as_str(), sb.as_str(), "m1"],
        vec!["SMEMBERS", sb.as_str()],
        vec!["DEL", a.as_str(), b.as_str()],
        vec!["EXISTS", a.as_str(), b.as_str(), sa.as_str()],
    ] {
        assert_eq!(r.cmd(&c), simple("QUEUED"), "{c:?}");
    }
    assert_eq!(
        r.cmd(&["EXEC"]),
        arr(vec![
            ok(),
            ok(),
            bulks(&["1", "2"]),
            int(2),
            int(1),
            bulks(&["m1"]),
            int(2),
            int(1),
        ])
    );
    assert_eq!(r.cmd(&["SMEMBERS", &sa]), bulks(&["m2"]));
}

#[test]
fn a_blocked_client_sees_only_the_state_after_exec() {
    let s = Server::start(&["--threads", "2"]);
    let mut p = s.raw();
    let mut a = s.raw();
    send(&mut a, &["BLPOP", "q", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["MULTI"]);
    p.cmd(&["LPUSH", "q", "a"]);
    p.cmd(&["LPUSH", "q", "b"]);
    assert_eq!(p.cmd(&["EXEC"]), arr(vec![int(1), int(2)]));
    // Served once, after the whole transaction: the head is then b.
    assert_eq!(a.read_value(), bulks(&["q", "b"]));
    assert_eq!(p.cmd(&["LRANGE", "q", "0", "-1"]), bulks(&["a"]));
    p.cmd(&["DEL", "q"]);
    // A list that exists only in the middle of a transaction serves nobody.
    send(&mut a, &["BLPOP", "q", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["MULTI"]);
    p.cmd(&["RPUSH", "q", "x", "y"]);
    p.cmd(&["LPOP", "q", "2"]);
    assert_eq!(p.cmd(&["EXEC"]), arr(vec![int(2), bulks(&["x", "y"])]));
    assert!(a.try_read_value(Duration::from_millis(150)).is_none());
    // Popped and pushed in one transaction: the waiter gets the final head.
    p.cmd(&["MULTI"]);
    p.cmd(&["RPUSH", "q", "1", "2", "3"]);
    p.cmd(&["LPOP", "q"]);
    p.cmd(&["RPUSH", "q", "4"]);
    p.cmd(&["EXEC"]);
    assert_eq!(a.read_value(), bulks(&["q", "2"]));
    assert_eq!(p.cmd(&["LRANGE", "q", "0", "-1"]), bulks(&["3", "4"]));
    // Inside MULTI a blocking command does not wait: it answers its time-out reply.
    p.cmd(&["MULTI"]);
    p.cmd(&["BLPOP", "empty", "0"]);
    p.cmd(&["BRPOP", "q", "0"]);
    assert_eq!(
        p.cmd_raw(&["EXEC"]),
        b"*2\r\n*-1\r\n*2\r\n$1\r\nq\r\n$1\r\n4\r\n"
    );
}

/// Transactions incrementing two keys on different workers while readers read both
/// atomically (MGET, and MULTI GET GET EXEC): a reader must never see one incremented
/// without the other. The writer puts a slow command between the two increments to widen
/// the window a non-atomic EXEC would leave.
#[test]
fn exec_is_atomic_across_workers() {
    let s = Server::start(&["--threads", "2"]);
    let (x, y) = (key_on("atom:x", 0), key_on("atom:y", 1));
    let big = key_on("atom:big", 0);
    let mut setup = s.raw();
    let members: Vec<String> = (0..300).map(|i| format!("m{i}")).collect();
    let mut sadd = vec!["SADD", big.as_str()];
    sadd.extend(members.iter().map(|m| m.as_str()));
    setup.cmd(&sadd);
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let writer = {
        let mut w = s.raw();
        let (x, y, big) = (x.clone(), y.clone(), big.clone());
        let (stop, writes) = (stop.clone(), writes.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let dst = format!("{{{big}}}copy");
                let replies = pipeline(
                    &mut w,
                    &[
                        vec!["MULTI"],
                        vec!["INCR", x.as_str()],
                        vec!["SUNIONSTORE", dst.as_str(), big.as_str()],
                        vec!["SMEMBERS", big.as_str()],
                        vec!["INCR", y.as_str()],
                        vec!["EXEC"],
                    ],
                );
                let exec = replies[5].items();
                assert_eq!(exec[0], exec[3], "one transaction's increments differ");
                writes.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let mut readers = Vec::new();
    for kind in 0..2 {
        let mut r = s.raw();
        let (x, y) = (x.clone(), y.clone());
        let stop = stop.clone();
        readers.push(std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let v = if kind == 0 {
                    r.cmd(&["MGET", &x, &y]).items()
                } else {
                    let rs = pipeline(
                        &mut r,
                        &[
                            vec!["MULTI"],
                            vec!["GET", &x],
                            vec!["GET", &y],
                            vec!["EXEC"],
                        ],
                    );
                    rs[3].items()
                };
                assert_eq!(v[0], v[1], "torn transaction seen by reader {kind}: {v:?}");
                n += 1;
            }
            n
        }));
    }
    let deadline = Instant::now() + Duration::from_millis(2500);
    while Instant::now() < deadline && writes.load(Ordering::SeqCst) < 300 {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    let reads: Vec<u64> = readers.into_iter().map(|h| h.join().unwrap()).collect();
    let w = writes.load(Ordering::SeqCst);
    assert!(
        w >= 20 && reads.iter().all(|&n| n >= 20),
        "too little work to check: {w} transactions, {reads:?} reads"
    );
    assert_eq!(
        setup.cmd(&["MGET", &x, &y]),
        bulks(&[&w.to_string(), &w.to_string()])
    );
}

/// Two clients run a read-modify-write of one counter with WATCH: every successful EXEC is
/// one increment, none lost.
#[test]
fn watch_gives_optimistic_locking_under_contention() {
    let s = Server::start(&["--threads", "2"]);
    let key = key_on("cas", 1);
    let mut handles = Vec::new();
    for _ in 0..3 {
        let mut r = s.raw();
        let key = key.clone();
        handles.push(std::thread::spawn(move || {
            let mut won = 0u64;
            let mut lost = 0u64;
            while won < 40 {
                r.cmd(&["WATCH", &key]);
                let cur = match r.cmd(&["GET", &key]) {
                    Value::Null => 0,
                    v => v.text().parse::<u64>().unwrap(),
                };
                let next = (cur + 1).to_string();
                let rs = pipeline(
                    &mut r,
                    &[vec!["MULTI"], vec!["SET", &key, &next], vec!["EXEC"]],
                );
                match &rs[2] {
                    Value::NullArray => lost += 1,
                    Value::Array(a) if a == &vec![ok()] => won += 1,
                    other => panic!("EXEC answered {other:?}"),
                }
            }
            (won, lost)
        }));
    }
    let results: Vec<(u64, u64)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let won: u64 = results.iter().map(|r| r.0).sum();
    let mut r = s.raw();
    assert_eq!(r.cmd(&["GET", &key]), bulk(&won.to_string()), "{results:?}");
}

#[test]
fn exec_writes_survive_kill_9_with_appendfsync_always() {
    let mut s = Server::start(&[
        "--threads",
        "2",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]);
    let (a, b) = (key_on("dur", 0), key_on("dur", 1));
    let (la, sb) = (key_on("durl", 0), key_on("durs", 1));
    {
        let mut r = s.raw();
        r.cmd(&["SET", &b, "old"]);
        r.cmd(&["MULTI"]);
        r.cmd(&["SET", &a, "va"]);
        r.cmd(&["SET", &b, "vb"]);
        r.cmd(&["RPUSH", &la, "1", "2"]);
        r.cmd(&["SADD", &sb, "m"]);
        r.cmd(&["INCR", &a]);
        r.cmd(&["HSET", &b, "f", "v"]);
        assert_eq!(
            r.cmd(&["EXEC"]),
            arr(vec![
                ok(),
                ok(),
                int(2),
                int(1),
                err("ERR value is not an integer or out of range"),
                err(WRONGTYPE),
            ])
        );
        s.kill();
    }
    s.start_again();
    let mut r = s.raw();
    assert_eq!(r.cmd(&["GET", &a]), bulk("va"));
    assert_eq!(r.cmd(&["GET", &b]), bulk("vb"));
    assert_eq!(r.cmd(&["LRANGE", &la, "0", "-1"]), bulks(&["1", "2"]));
    assert_eq!(r.cmd(&["SMEMBERS", &sb]), bulks(&["m"]));
    // A transaction over values that are back on the devices only.
    s.kill();
    s.start_again();
    let mut r = s.raw();
    r.cmd(&["MULTI"]);
    r.cmd(&["GET", &a]);
    r.cmd(&["LPOP", &la]);
    r.cmd(&["SMOVE", &sb, &a, "m"]);
    r.cmd(&["SMOVE", &sb, &la, "m"]);
    r.cmd(&["APPEND", &b, "+"]);
    assert_eq!(
        r.cmd(&["EXEC"]),
        arr(vec![
            bulk("va"),
            bulk("1"),
            err(WRONGTYPE),
            err(WRONGTYPE),
            int(3)
        ])
    );
    assert_eq!(r.cmd(&["GET", &b]), bulk("vb+"));
}

#[test]
fn flush_aborts_only_watches_of_existing_keys() {
    // Redis 7.0 (touchAllWatchedKeysInDb): a flush touches only watched keys that existed.
    let s = Server::start(&[]);
    let mut r = s.raw();
    let mut o = s.raw();
    r.cmd(&["WATCH", "nokey"]);
    o.cmd(&["SET", "other", "1"]);
    o.cmd(&["FLUSHALL"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["PING"]);
    assert_eq!(r.cmd(&["EXEC"]), arr(vec![simple("PONG")]));
    r.cmd(&["SET", "k", "v"]);
    r.cmd(&["WATCH", "k", "nokey"]);
    o.cmd(&["FLUSHDB"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["PING"]);
    assert_eq!(r.cmd(&["EXEC"]), Value::NullArray);
}

#[test]
fn client_list_shows_a_client_in_multi() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["MULTI"]);
    r.cmd(&["SET", "a", "1"]);
    r.cmd(&["SET", "b", "1"]);
    let mut o = s.raw();
    let me = r.stream.local_addr().unwrap().to_string();
    let list = o.cmd(&["CLIENT", "LIST"]).text();
    let line = list
        .lines()
        .find(|l| l.contains(&format!("addr={me} ")))
        .unwrap();
    assert!(line.contains(" flags=x "), "{line}");
    assert!(line.contains(" multi=2 "), "{line}");
}

#[test]
fn blocking_commands_across_workers_inside_multi_do_not_wait() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    let (k0, k1) = (key_on("bm", 0), key_on("bm", 1));
    r.cmd(&["MULTI"]);
    r.cmd(&["BLPOP", &k0, &k1, "0"]);
    r.cmd(&["BLMOVE", &k0, &k1, "LEFT", "LEFT", "0"]);
    r.cmd(&["BRPOPLPUSH", &k1, &k0, "0"]);
    r.cmd(&["BLMPOP", "0", "2", &k0, &k1, "LEFT"]);
    r.cmd(&["RPUSH", &k1, "x"]);
    r.cmd(&["BLMOVE", &k1, &k0, "LEFT", "LEFT", "0"]);
    // Redis 7.0 (CLIENT_DENY_BLOCKING): a null array for the pops, a null bulk for the
    // moves (unlike their time-out reply, a null array).
    assert_eq!(
        r.cmd(&["EXEC"]),
        arr(vec![
            Value::NullArray,
            Value::Null,
            Value::Null,
            Value::NullArray,
            int(1),
            bulk("x"),
        ])
    );
    assert_eq!(r.cmd(&["LRANGE", &k0, "0", "-1"]), bulks(&["x"]));
    // Keys on one worker: the same replies.
    r.cmd(&["MULTI"]);
    r.cmd(&["BLMOVE", "{t}a", "{t}b", "LEFT", "LEFT", "0"]);
    r.cmd(&["BRPOPLPUSH", "{t}a", "{t}b", "0"]);
    r.cmd(&["BLMPOP", "0", "1", "{t}a", "LEFT"]);
    r.cmd(&["BRPOP", "{t}a", "{t}b", "0"]);
    assert_eq!(r.cmd_raw(&["EXEC"]), b"*4\r\n$-1\r\n$-1\r\n*-1\r\n*-1\r\n");
}

#[test]
fn select_rename_and_copy_inside_multi() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    let (a, b, c) = (key_on("rc:a", 0), key_on("rc:b", 1), key_on("rc:c", 0));
    r.cmd(&["SELECT", "1"]);
    r.cmd(&["SET", &a, "db1"]);
    r.cmd(&["SELECT", "0"]);
    r.cmd(&["SET", &a, "str"]);
    r.cmd(&["SADD", &c, "m"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["RENAME", &a, &b]);
    r.cmd(&["COPY", &c, &a]);
    r.cmd(&["RENAME", &c, &b]);
    r.cmd(&["SELECT", "1"]);
    r.cmd(&["GET", &a]);
    r.cmd(&["SET", &b, "in-db1"]);
    assert_eq!(
        r.cmd(&["EXEC"]),
        arr(vec![ok(), int(1), ok(), ok(), bulk("db1"), ok()])
    );
    // The SELECT inside the transaction stays in force.
    assert_eq!(r.cmd(&["GET", &b]), bulk("in-db1"));
    r.cmd(&["SELECT", "0"]);
    assert_eq!(r.cmd(&["SMEMBERS", &b]), bulks(&["m"]));
    assert_eq!(r.cmd(&["SMEMBERS", &a]), bulks(&["m"]));
    assert_eq!(r.cmd(&["EXISTS", &c]), int(0));
}

#[test]
fn a_served_blocked_pop_touches_watches() {
    let s = Server::start(&["--threads", "2"]);
    let mut p = s.raw();
    let mut a = s.raw();
    let mut w = s.raw();
    p.cmd(&["RPUSH", "src", "1"]);
    send(
        &mut a,
        &["BLMOVE", "{d}empty", "{d}dst", "LEFT", "LEFT", "0"],
    );
    wait_blocked(&mut p, 1);
    w.cmd(&["WATCH", "{d}dst"]);
    p.cmd(&["RPUSH", "{d}empty", "x"]);
    assert_eq!(a.read_value(), bulk("x"));
    w.cmd(&["MULTI"]);
    w.cmd(&["PING"]);
    assert_eq!(w.cmd(&["EXEC"]), Value::NullArray);
}

#[test]
#[ignore = "Skerry gap: server-wide commands (DBSIZE, FLUSHALL, KEYS, INFO, CONFIG, CLIENT, ...) are refused inside MULTI"]
fn server_wide_commands_inside_multi() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    r.cmd(&["SET", "a", "1"]);
    r.cmd(&["SET", "b", "1"]);
    r.cmd(&["MULTI"]);
    assert_eq!(r.cmd(&["DBSIZE"]), simple("QUEUED"));
    assert_eq!(r.cmd(&["KEYS", "a*"]), simple("QUEUED"));
    assert_eq!(r.cmd(&["FLUSHALL"]), simple("QUEUED"));
    assert_eq!(r.cmd(&["DBSIZE"]), simple("QUEUED"));
    assert_eq!(r.cmd(&["CONFIG", "GET", "maxclients"]), simple("QUEUED"));
    assert_eq!(
        r.cmd(&["EXEC"]),
        arr(vec![
            int(2),
            bulks(&["a"]),
            ok(),
            int(0),
            bulks(&["maxclients", "10000"])
        ])
    );
}

/// CONFIG may be queued; a failing CONFIG SET fails alone, with Redis's error, and the
/// transaction's other commands run.
#[test]
fn config_inside_multi() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["MULTI"]), ok());
    assert_eq!(r.cmd(&["SET", "foo", "bar"]), simple("QUEUED"));
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "maxmemory", "bla"]),
        simple("QUEUED")
    );
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "list-max-listpack-size", "64"]),
        simple("QUEUED")
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "list-max-listpack-size"]),
        simple("QUEUED")
    );
    let Value::Array(items) = r.cmd(&["EXEC"]) else {
        panic!("EXEC replies with an array")
    };
    assert_eq!(items.len(), 4);
    assert_eq!(items[0], ok());
    match &items[1] {
        Value::Error(e) => assert!(e.starts_with("ERR CONFIG SET failed"), "{e}"),
        other => panic!("expected an error, got {other:?}"),
    }
    assert_eq!(items[2], ok());
    assert_eq!(items[3], bulks(&["list-max-listpack-size", "64"]));
    assert_eq!(r.cmd(&["GET", "foo"]), bulk("bar"));
    // The connection left MULTI: WATCH works again.
    assert_eq!(r.cmd(&["WATCH", "foo"]), ok());
}
