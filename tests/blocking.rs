//! Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, and the zset ones when they
//! exist) end to end: clients served by later pushes from other connections and other
//! workers, arrival-order fairness, time-outs, `blocked_clients`, disconnects, CLIENT UNBLOCK
//! and KILL, type changes while waiting, RESP3, pipelining, durability and a stress test.
//!
//! Every expectation holds for Redis 7.0.15 too (`SKERRY_TEST_SERVER=redis`), unless the test
//! says otherwise.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// Sends a command without reading its reply (the client is expected to block).
fn send(r: &mut Raw, args: &[&str]) {
    r.send(&resp::encode(args));
}

fn blocked(r: &mut Raw) -> u64 {
    info_u64(r, "clients", "blocked_clients").expect("blocked_clients in INFO clients")
}

/// Asserts that no reply arrives on `r` within `ms` milliseconds.
fn no_reply(r: &mut Raw, ms: u64, what: &str) {
    if let Some(v) = r.try_read_value(Duration::from_millis(ms)) {
        panic!("{what}: unexpected reply {v:?}");
    }
}

fn range(r: &mut Raw, key: &str) -> Value {
    r.cmd(&["LRANGE", key, "0", "-1"])
}

#[test]
fn served_by_a_later_push_from_another_connection() {
    let s = Server::start(&[]);
    let mut a = s.raw();
    let mut p = s.raw();
    send(&mut a, &["BLPOP", "k", "0"]);
    wait_blocked(&mut p, 1);
    no_reply(&mut a, 100, "BLPOP before the push");
    // The pusher sees the length after its push (the pop happens after the command).
    assert_eq!(p.cmd(&["RPUSH", "k", "x", "y"]), int(2));
    assert_eq!(a.read_value(), bulks(&["k", "x"]));
    assert_eq!(range(&mut p, "k"), bulks(&["y"]));
    wait_blocked(&mut p, 0);

    // BRPOP pops from the tail.
    send(&mut a, &["BRPOP", "k2", "0"]);
    wait_blocked(&mut p, 1);
    assert_eq!(p.cmd(&["RPUSH", "k2", "a", "b", "c"]), int(3));
    assert_eq!(a.read_value(), bulks(&["k2", "c"]));

    // BLMOVE and BRPOPLPUSH reply with the element and push it on the destination.
    send(
        &mut a,
        &["BLMOVE", "{m}src", "{m}dst", "RIGHT", "LEFT", "0"],
    );
    wait_blocked(&mut p, 1);
    p.cmd(&["RPUSH", "{m}dst", "old"]);
    no_reply(&mut a, 50, "BLMOVE after a push to its destination");
    assert_eq!(p.cmd(&["RPUSH", "{m}src", "1", "2"]), int(2));
    assert_eq!(a.read_value(), bulk("2"));
    assert_eq!(range(&mut p, "{m}src"), bulks(&["1"]));
    assert_eq!(range(&mut p, "{m}dst"), bulks(&["2", "old"]));

    send(&mut a, &["BRPOPLPUSH", "{m}e", "{m}dst", "0"]);
    wait_blocked(&mut p, 1);
    assert_eq!(p.cmd(&["LPUSH", "{m}e", "z"]), int(1));
    assert_eq!(a.read_value(), bulk("z"));
    assert_eq!(p.cmd(&["EXISTS", "{m}e"]), int(0));
    assert_eq!(range(&mut p, "{m}dst"), bulks(&["z", "2", "old"]));

    // BLMPOP with COUNT takes up to COUNT elements from the first non-empty key.
    send(
        &mut a,
        &["BLMPOP", "0", "2", "{m}x", "{m}y", "LEFT", "COUNT", "2"],
    );
    wait_blocked(&mut p, 1);
    assert_eq!(p.cmd(&["RPUSH", "{m}y", "1", "2", "3"]), int(3));
    assert_eq!(a.read_value(), arr(vec![bulk("{m}y"), bulks(&["1", "2"])]));
    assert_eq!(range(&mut p, "{m}y"), bulks(&["3"]));
    send(&mut a, &["BLMPOP", "0", "1", "{m}x", "RIGHT"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["RPUSH", "{m}x", "1", "2", "3"]);
    assert_eq!(a.read_value(), arr(vec![bulk("{m}x"), bulks(&["3"])]));
    // The connection works normally afterwards.
    assert_eq!(a.cmd(&["PING"]), simple("PONG"));
    assert_eq!(blocked(&mut p), 0);
}

#[test]
fn served_across_workers() {
    // Waiters and pushers on many connections (spread over both workers by the kernel) and
    // keys on both workers: every combination of waiter worker, pusher worker and key owner
    // is very likely covered.
    let s = Server::start(&["--threads", "2"]);
    let keys: Vec<String> = (0..3)
        .flat_map(|i| [key_on(&format!("xw{i}:"), 0), key_on(&format!("xw{i}:"), 1)])
        .collect();
    let mut admin = s.raw();
    for round in 0..2 {
        let mut waiters: Vec<Raw> = keys.iter().map(|_| s.raw()).collect();
        let mut pushers: Vec<Raw> = keys.iter().map(|_| s.raw()).collect();
        for (w, k) in waiters.iter_mut().zip(&keys) {
            if round == 0 {
                send(w, &["BLPOP", k, "0"]);
            } else {
                send(w, &["BRPOP", k, "5"]);
            }
        }
        wait_blocked(&mut admin, keys.len() as u64);
        // Push in reverse order, each from its own connection.
        for (i, k) in keys.iter().enumerate().rev() {
            let v = format!("v{round}-{i}");
            assert_eq!(pushers[i].cmd(&["LPUSH", k, &v]), int(1));
        }
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(
                waiters[i].read_value(),
                bulks(&[k, &format!("v{round}-{i}")]),
                "waiter on {k}"
            );
        }
        wait_blocked(&mut admin, 0);
        for k in &keys {
            assert_eq!(admin.cmd(&["EXISTS", k]), int(0));
        }
    }
    // BLMOVE within one worker, waited on from a connection anywhere.
    for w in 0..2usize {
        let tag = key_on("bm", w);
        let (src, dst) = (format!("{{{tag}}}s"), format!("{{{tag}}}d"));
        let mut a = s.raw();
        let mut p = s.raw();
        send(&mut a, &["BLMOVE", &src, &dst, "LEFT", "RIGHT", "0"]);
        wait_blocked(&mut admin, 1);
        p.cmd(&["RPUSH", &src, "e1", "e2"]);
        assert_eq!(a.read_value(), bulk("e1"));
        assert_eq!(range(&mut admin, &dst), bulks(&["e1"]));
        assert_eq!(range(&mut admin, &src), bulks(&["e2"]));
    }
}

#[test]
fn blocking_commands_with_keys_on_two_workers_serve_at_once() {
    // When there is something to serve, keys on different workers work as in Redis.
    let s = Server::start(&["--threads", "2"]);
    let (k0, k1) = (key_on("two", 0), key_on("two", 1));
    let mut r = s.raw();
    r.cmd(&["RPUSH", &k1, "a", "b", "c"]);
    assert_eq!(r.cmd(&["BLPOP", &k0, &k1, "0"]), bulks(&[&k1, "a"]));
    assert_eq!(r.cmd(&["BRPOP", &k0, &k1, "0"]), bulks(&[&k1, "c"]));
    assert_eq!(r.cmd(&["BLMOVE", &k1, &k0, "LEFT", "LEFT", "0"]), bulk("b"));
    assert_eq!(r.cmd(&["EXISTS", &k1]), int(0));
    assert_eq!(range(&mut r, &k0), bulks(&["b"]));
    assert_eq!(r.cmd(&["BRPOPLPUSH", &k0, &k1, "0"]), bulk("b"));
    assert_eq!(
        r.cmd(&["BLMPOP", "0", "2", &k0, &k1, "LEFT"]),
        arr(vec![bulk(&k1), bulks(&["b"])])
    );
    assert_eq!(r.cmd(&["EXISTS", &k0, &k1]), int(0));
}

#[test]
fn blocking_commands_with_keys_on_two_workers_wait() {
    let s = Server::start(&["--threads", "2"]);
    let (k0, k1) = (key_on("two", 0), key_on("two", 1));
    let mut a = s.raw();
    let mut p = s.raw();
    send(&mut a, &["BLMOVE", &k0, &k1, "LEFT", "LEFT", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["RPUSH", &k0, "x"]);
    assert_eq!(a.read_value(), bulk("x"));
    assert_eq!(p.cmd(&["RPOP", &k1]), bulk("x"));
    wait_blocked(&mut p, 0);
    send(&mut a, &["BLPOP", &k0, &k1, "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["RPUSH", &k1, "y"]);
    assert_eq!(a.read_value(), bulks(&[&k1, "y"]));
    // A zset on either worker.
    send(&mut a, &["BZPOPMIN", &k1, &k0, "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["ZADD", &k0, "5", "m"]);
    assert_eq!(a.read_value(), bulks(&[&k0, "m", "5"]));
    // Woken, but another client took the element first: it keeps waiting.
    send(&mut a, &["BLPOP", &k0, &k1, "0"]);
    wait_blocked(&mut p, 1);
    let mut t = s.raw();
    let pushed = p.cmd_raw(&["MULTI"]);
    assert_eq!(pushed, b"+OK\r\n");
    p.cmd(&["RPUSH", &k0, "gone"]);
    p.cmd(&["LPOP", &k0]);
    p.cmd(&["EXEC"]);
    no_reply(&mut a, 200, "nothing left after the transaction");
    t.cmd(&["RPUSH", &k1, "z"]);
    assert_eq!(a.read_value(), bulks(&[&k1, "z"]));
    // Time-out and CLIENT UNBLOCK.
    assert_eq!(a.cmd(&["BLPOP", &k0, &k1, "0.2"]), Value::NullArray);
    let id = a.cmd(&["CLIENT", "ID"]).int().to_string();
    send(&mut a, &["BRPOP", &k0, &k1, "0"]);
    wait_blocked(&mut p, 1);
    assert_eq!(p.cmd(&["CLIENT", "UNBLOCK", &id, "ERROR"]), int(1));
    assert_eq!(
        a.read_value(),
        err("UNBLOCKED client unblocked via CLIENT UNBLOCK")
    );
    wait_blocked(&mut p, 0);
    // No wake-up is left behind: a later push stays in the list.
    p.cmd(&["RPUSH", &k1, "stays"]);
    assert_eq!(p.cmd(&["LLEN", &k1]), int(1));
    assert_eq!(a.cmd(&["PING"]), simple("PONG"));
}

#[test]
fn waiters_are_served_in_arrival_order() {
    let s = Server::start(&[]);
    let mut p = s.raw();
    let mut ws: Vec<Raw> = (0..4).map(|_| s.raw()).collect();
    for (i, w) in ws.iter_mut().enumerate() {
        // Mixed commands on one key; they must still be served first come, first served.
        if i % 2 == 0 {
            send(w, &["BLPOP", "{f}q", "0"]);
        } else {
            send(w, &["BLMPOP", "0", "1", "{f}q", "LEFT"]);
        }
        wait_blocked(&mut p, i as u64 + 1);
    }
    // One element: only the first waiter gets it.
    p.cmd(&["RPUSH", "{f}q", "e0"]);
    assert_eq!(ws[0].read_value(), bulks(&["{f}q", "e0"]));
    for w in ws.iter_mut().skip(1) {
        no_reply(w, 50, "later waiter");
    }
    wait_blocked(&mut p, 3);
    // Three at once: one each, in order.
    p.cmd(&["RPUSH", "{f}q", "e1", "e2", "e3"]);
    assert_eq!(ws[1].read_value(), arr(vec![bulk("{f}q"), bulks(&["e1"])]));
    assert_eq!(ws[2].read_value(), bulks(&["{f}q", "e2"]));
    assert_eq!(ws[3].read_value(), arr(vec![bulk("{f}q"), bulks(&["e3"])]));
    assert_eq!(p.cmd(&["EXISTS", "{f}q"]), int(0));
    // More elements than waiters: the rest stay.
    let mut ws: Vec<Raw> = (0..2).map(|_| s.raw()).collect();
    for (i, w) in ws.iter_mut().enumerate() {
        send(w, &["BRPOP", "{f}q", "0"]);
        wait_blocked(&mut p, i as u64 + 1);
    }
    p.cmd(&["RPUSH", "{f}q", "a", "b", "c", "d"]);
    assert_eq!(ws[0].read_value(), bulks(&["{f}q", "d"]));
    assert_eq!(ws[1].read_value(), bulks(&["{f}q", "c"]));
    assert_eq!(range(&mut p, "{f}q"), bulks(&["a", "b"]));
    wait_blocked(&mut p, 0);
}

#[test]
fn waiter_on_several_keys_is_served_by_the_first_pushed() {
    let s = Server::start(&[]);
    let mut p = s.raw();
    let mut a = s.raw();
    send(&mut a, &["BLPOP", "{s}k1", "{s}k2", "{s}k3", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["RPUSH", "{s}k3", "three"]);
    assert_eq!(a.read_value(), bulks(&["{s}k3", "three"]));
    p.cmd(&["RPUSH", "{s}k2", "two"]);
    no_reply(&mut a, 50, "served waiter");
    assert_eq!(range(&mut p, "{s}k2"), bulks(&["two"]));
    p.cmd(&["DEL", "{s}k2"]);

    // Two waiters on overlapping keys: a push on the shared key goes to the first; a push on
    // the other key goes to the waiter that watches it.
    let mut b = s.raw();
    send(&mut a, &["BRPOP", "{s}k1", "{s}k2", "0"]);
    wait_blocked(&mut p, 1);
    send(&mut b, &["BRPOP", "{s}k2", "{s}k3", "0"]);
    wait_blocked(&mut p, 2);
    p.cmd(&["RPUSH", "{s}k3", "for-b"]);
    assert_eq!(b.read_value(), bulks(&["{s}k3", "for-b"]));
    p.cmd(&["RPUSH", "{s}k2", "for-a"]);
    assert_eq!(a.read_value(), bulks(&["{s}k2", "for-a"]));
    wait_blocked(&mut p, 0);

    // Keys made ready by one transaction: Redis 8.0 runs the blocked command again as sent,
    // so the waiter is served from the first of ITS keys that holds something, whichever
    // key was written first (7.0 served it from the key written first).
    send(&mut a, &["BLPOP", "{s}k1", "{s}k2", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["MULTI"]);
    p.cmd(&["RPUSH", "{s}k2", "x2"]);
    p.cmd(&["RPUSH", "{s}k1", "x1"]);
    assert_eq!(p.cmd(&["EXEC"]), arr(vec![int(1), int(1)]));
    assert_eq!(a.read_value(), bulks(&["{s}k1", "x1"]));
    assert_eq!(range(&mut p, "{s}k2"), bulks(&["x2"]));
    p.cmd(&["DEL", "{s}k2"]);
    send(
        &mut a,
        &[
            "BLMPOP", "0", "3", "{s}k1", "{s}k2", "{s}k3", "RIGHT", "COUNT", "5",
        ],
    );
    wait_blocked(&mut p, 1);
    p.cmd(&["MULTI"]);
    p.cmd(&["RPUSH", "{s}k3", "c1", "c2"]);
    p.cmd(&["RPUSH", "{s}k1", "a1"]);
    p.cmd(&["EXEC"]);
    assert_eq!(a.read_value(), arr(vec![bulk("{s}k1"), bulks(&["a1"])]));
    assert_eq!(range(&mut p, "{s}k3"), bulks(&["c1", "c2"]));
    assert_eq!(p.cmd(&["EXISTS", "{s}k1"]), int(0));
}

#[test]
fn timeouts_fractional_and_forever() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let mut p = s.raw();
    for cmd in [
        vec!["BLPOP", "{t}a", "{t}b", "0.3"],
        vec!["BRPOP", "{t}a", "0.3"],
        vec!["BLMOVE", "{t}a", "{t}b", "LEFT", "RIGHT", "0.3"],
        vec!["BRPOPLPUSH", "{t}a", "{t}b", "0.3"],
        vec!["BLMPOP", "0.3", "1", "{t}a", "LEFT"],
    ] {
        let t = Instant::now();
        assert_eq!(r.cmd_raw(&cmd), b"*-1\r\n", "{cmd:?}");
        let el = t.elapsed();
        assert!(
            el >= Duration::from_millis(280) && el < Duration::from_millis(2000),
            "{cmd:?} timed out after {el:?}"
        );
    }
    // A short time-out ends well before a long one.
    let t = Instant::now();
    assert_eq!(r.cmd(&["BLPOP", "{t}a", "0.05"]), Value::NullArray);
    assert!(t.elapsed() < Duration::from_millis(1000));
    assert_eq!(blocked(&mut p), 0);
    // 0 waits for ever (well, longer than a second here), then is served.
    send(&mut r, &["BLPOP", "{t}a", "0"]);
    wait_blocked(&mut p, 1);
    no_reply(&mut r, 1200, "BLPOP with time-out 0");
    assert_eq!(blocked(&mut p), 1);
    p.cmd(&["RPUSH", "{t}a", "late"]);
    assert_eq!(r.read_value(), bulks(&["{t}a", "late"]));
    // A time-out that has not run out is just a deadline: served before it.
    send(&mut r, &["BRPOP", "{t}a", "10.5"]);
    wait_blocked(&mut p, 1);
    let t = Instant::now();
    p.cmd(&["RPUSH", "{t}a", "soon"]);
    assert_eq!(r.read_value(), bulks(&["{t}a", "soon"]));
    assert!(t.elapsed() < Duration::from_secs(2));
    // Nothing was created by the time-outs.
    assert_eq!(p.cmd(&["EXISTS", "{t}a", "{t}b"]), int(0));
}

#[test]
fn blocked_clients_counts_up_and_back_to_zero() {
    let s = Server::start(&["--threads", "2"]);
    let mut p = s.raw();
    assert_eq!(blocked(&mut p), 0);
    let mut ws: Vec<Raw> = (0..5).map(|_| s.raw()).collect();
    send(&mut ws[0], &["BLPOP", "{c}a", "0"]);
    send(&mut ws[1], &["BLPOP", "{c}a", "0.5"]);
    send(&mut ws[2], &["BRPOP", "{c}b", "0"]);
    send(&mut ws[3], &["BLMOVE", "{c}b", "{c}c", "LEFT", "LEFT", "0"]);
    send(&mut ws[4], &["BLMPOP", "0", "1", "{c}d", "LEFT"]);
    wait_blocked(&mut p, 5);
    // A time-out.
    assert_eq!(ws[1].read_value(), Value::NullArray);
    wait_blocked(&mut p, 4);
    // A serve.
    p.cmd(&["RPUSH", "{c}a", "x"]);
    assert_eq!(ws[0].read_value(), bulks(&["{c}a", "x"]));
    wait_blocked(&mut p, 3);
    // Two serves by one push.
    p.cmd(&["RPUSH", "{c}b", "1", "2"]);
    assert_eq!(ws[2].read_value(), bulks(&["{c}b", "2"]));
    assert_eq!(ws[3].read_value(), bulk("1"));
    wait_blocked(&mut p, 1);
    // A disconnect.
    let w4 = ws.pop().unwrap();
    drop(w4);
    wait_blocked(&mut p, 0);
    // Unknown keys never count: a non-blocking pop of a missing key does not block.
    assert_eq!(p.cmd(&["LPOP", "{c}zz"]), Value::Null);
    assert_eq!(blocked(&mut p), 0);
}

#[test]
fn a_disconnected_waiter_never_consumes() {
    let s = Server::start(&["--threads", "2"]);
    let mut p = s.raw();
    // Keys on both workers, waiters on connections anywhere.
    for w in 0..2usize {
        let tag = key_on("dc", w);
        let (k, dst) = (format!("{{{tag}}}k"), format!("{{{tag}}}dst"));
        for (i, cmd) in [
            vec!["BLPOP", k.as_str(), "0"],
            vec!["BLMOVE", k.as_str(), dst.as_str(), "LEFT", "LEFT", "0"],
            vec!["BLMPOP", "0", "1", k.as_str(), "LEFT"],
            vec!["BRPOPLPUSH", k.as_str(), dst.as_str(), "0"],
        ]
        .into_iter()
        .enumerate()
        {
            let mut a = s.raw();
            send(&mut a, &cmd);
            wait_blocked(&mut p, 1);
            drop(a);
            // Shortly after the close, before the server may have noticed it on its own.
            std::thread::sleep(Duration::from_millis(30));
            let v = format!("e{i}");
            p.cmd(&["RPUSH", &k, &v]);
            assert_eq!(range(&mut p, &k), bulks(&[&v]), "{cmd:?}");
            assert_eq!(p.cmd(&["EXISTS", &dst]), int(0), "{cmd:?}");
            p.cmd(&["DEL", &k]);
            wait_blocked(&mut p, 0);
        }
    }
    // A gone waiter ahead of a live one: the live one gets the element.
    let mut gone = s.raw();
    let mut live = s.raw();
    send(&mut gone, &["BLPOP", "{d}k", "0"]);
    wait_blocked(&mut p, 1);
    send(&mut live, &["BLPOP", "{d}k", "0"]);
    wait_blocked(&mut p, 2);
    gone.shutdown_write();
    drop(gone);
    std::thread::sleep(Duration::from_millis(30));
    p.cmd(&["RPUSH", "{d}k", "only"]);
    assert_eq!(live.read_value(), bulks(&["{d}k", "only"]));
    assert_eq!(p.cmd(&["EXISTS", "{d}k"]), int(0));
    wait_blocked(&mut p, 0);
}

#[test]
fn client_unblock() {
    let s = Server::start(&["--threads", "2"]);
    let mut p = s.raw();
    let mut a = s.raw();
    let id = a.cmd(&["CLIENT", "ID"]).int().to_string();
    // Not blocked: 0.
    assert_eq!(p.cmd(&["CLIENT", "UNBLOCK", &id]), int(0));
    assert_eq!(p.cmd(&["CLIENT", "UNBLOCK", "999999"]), int(0));
    assert_eq!(
        p.cmd(&["CLIENT", "UNBLOCK", &id, "SOMETIMES"]),
        err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    );
    assert_eq!(
        p.cmd(&["CLIENT", "UNBLOCK", "x"]),
        err("ERR value is not an integer or out of range")
    );
    for (how, cmd) in [
        (None, vec!["BLPOP", "{u}k", "0"]),
        (
            Some("TIMEOUT"),
            vec!["BLMOVE", "{u}k", "{u}d", "LEFT", "LEFT", "0"],
        ),
        (Some("timeout"), vec!["BLMPOP", "0", "1", "{u}k", "LEFT"]),
        (Some("ERROR"), vec!["BRPOP", "{u}k", "100"]),
        (Some("error"), vec!["BRPOPLPUSH", "{u}k", "{u}d", "0"]),
    ] {
        send(&mut a, &cmd);
        wait_blocked(&mut p, 1);
        let mut args = vec!["CLIENT", "UNBLOCK", &id];
        args.extend(how);
        assert_eq!(p.cmd(&args), int(1), "{how:?}");
        let want = if how.is_some_and(|h| h.eq_ignore_ascii_case("error")) {
            err("UNBLOCKED client unblocked via CLIENT UNBLOCK")
        } else {
            Value::NullArray
        };
        assert_eq!(a.read_value(), want, "{cmd:?} {how:?}");
        wait_blocked(&mut p, 0);
        // It no longer waits: a push stays in the list.
        p.cmd(&["RPUSH", "{u}k", "kept"]);
        assert_eq!(range(&mut p, "{u}k"), bulks(&["kept"]));
        assert_eq!(p.cmd(&["EXISTS", "{u}d"]), int(0));
        p.cmd(&["DEL", "{u}k"]);
        assert_eq!(a.cmd(&["PING"]), simple("PONG"));
    }
    // RESP3: the time-out form is a null.
    let mut a3 = resp3(&s);
    let id3 = a3.cmd(&["CLIENT", "ID"]).int().to_string();
    send(&mut a3, &["BLPOP", "{u}k", "0"]);
    wait_blocked(&mut p, 1);
    assert_eq!(p.cmd(&["CLIENT", "UNBLOCK", &id3]), int(1));
    assert_eq!(a3.read_raw(), b"_\r\n");
}

#[test]
fn client_kill_of_a_blocked_client() {
    let s = Server::start(&["--threads", "2"]);
    let mut p = s.raw();
    let mut a = s.raw();
    let id = a.cmd(&["CLIENT", "ID"]).int().to_string();
    send(&mut a, &["BLMOVE", "{k}s", "{k}d", "LEFT", "LEFT", "0"]);
    wait_blocked(&mut p, 1);
    assert_eq!(p.cmd(&["CLIENT", "KILL", "ID", &id]), int(1));
    let rest = a.expect_closed();
    assert!(rest.is_empty(), "killed client got {rest:?}");
    wait_blocked(&mut p, 0);
    p.cmd(&["RPUSH", "{k}s", "x"]);
    assert_eq!(range(&mut p, "{k}s"), bulks(&["x"]));
    assert_eq!(p.cmd(&["EXISTS", "{k}d"]), int(0));
    // KILL by address too.
    p.cmd(&["DEL", "{k}s"]);
    let mut b = s.raw();
    let addr = b.stream.local_addr().unwrap().to_string();
    send(&mut b, &["BLPOP", "{k}s", "0"]);
    wait_blocked(&mut p, 1);
    assert_eq!(p.cmd(&["CLIENT", "KILL", &addr]), ok());
    b.expect_closed();
    wait_blocked(&mut p, 0);
}

#[test]
fn type_change_or_delete_while_waiting_keeps_waiting() {
    let s = Server::start(&[]);
    let mut p = s.raw();
    let mut a = s.raw();
    let mut b = s.raw();
    send(&mut a, &["BLPOP", "{y}k", "0"]);
    wait_blocked(&mut p, 1);
    send(&mut b, &["BLMOVE", "{y}k", "{y}d", "LEFT", "LEFT", "0"]);
    wait_blocked(&mut p, 2);
    // Another type under the key: nobody is served, nobody errors.
    assert_eq!(p.cmd(&["SET", "{y}k", "str"]), ok());
    no_reply(&mut a, 100, "BLPOP after SET");
    no_reply(&mut b, 10, "BLMOVE after SET");
    assert_eq!(p.cmd(&["DEL", "{y}k"]), int(1));
    assert_eq!(p.cmd(&["SADD", "{y}k", "m"]), int(1));
    assert_eq!(p.cmd(&["HSET", "{y}k2", "f", "v"]), int(1));
    assert_eq!(p.cmd(&["RENAME", "{y}k2", "{y}k"]), ok());
    no_reply(&mut a, 100, "BLPOP after a hash renamed over the key");
    // A list pushed and removed within one transaction: nothing to serve either.
    p.cmd(&["DEL", "{y}k"]);
    p.cmd(&["MULTI"]);
    p.cmd(&["RPUSH", "{y}k", "gone"]);
    p.cmd(&["DEL", "{y}k"]);
    assert_eq!(p.cmd(&["EXEC"]), arr(vec![int(1), int(1)]));
    no_reply(&mut a, 100, "BLPOP after a list came and went");
    assert_eq!(blocked(&mut p), 2);
    // A list again: served in order.
    p.cmd(&["RPUSH", "{y}k", "1", "2"]);
    assert_eq!(a.read_value(), bulks(&["{y}k", "1"]));
    assert_eq!(b.read_value(), bulk("2"));
    assert_eq!(range(&mut p, "{y}d"), bulks(&["2"]));
    // A list renamed onto the watched key serves too.
    send(&mut a, &["BRPOP", "{y}k", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["RPUSH", "{y}other", "r1", "r2"]);
    assert_eq!(p.cmd(&["RENAME", "{y}other", "{y}k"]), ok());
    assert_eq!(a.read_value(), bulks(&["{y}k", "r2"]));
    assert_eq!(range(&mut p, "{y}k"), bulks(&["r1"]));
}

#[test]
fn blmove_to_a_destination_of_the_wrong_type() {
    let s = Server::start(&[]);
    let mut p = s.raw();
    let mut a = s.raw();
    // The destination is a string from the start: the command still waits (Redis only
    // looks at the source before blocking) ...
    p.cmd(&["SET", "{w}dst", "str"]);
    send(
        &mut a,
        &["BLMOVE", "{w}src", "{w}dst", "LEFT", "RIGHT", "0"],
    );
    wait_blocked(&mut p, 1);
    // ... and when served it answers WRONGTYPE and leaves the element in the source.
    p.cmd(&["RPUSH", "{w}src", "e"]);
    assert_eq!(a.read_value(), err(WRONGTYPE));
    wait_blocked(&mut p, 0);
    assert_eq!(range(&mut p, "{w}src"), bulks(&["e"]));
    assert_eq!(p.cmd(&["GET", "{w}dst"]), bulk("str"));
    // The destination changes type while it waits.
    p.cmd(&["DEL", "{w}src", "{w}dst"]);
    send(&mut a, &["BRPOPLPUSH", "{w}src", "{w}dst", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["SADD", "{w}dst", "m"]);
    let mut b = s.raw();
    send(&mut b, &["BLPOP", "{w}src", "0"]);
    wait_blocked(&mut p, 2);
    p.cmd(&["RPUSH", "{w}src", "e2"]);
    assert_eq!(a.read_value(), err(WRONGTYPE));
    // The element is still there for the next waiter.
    assert_eq!(b.read_value(), bulks(&["{w}src", "e2"]));
    assert_eq!(p.cmd(&["EXISTS", "{w}src"]), int(0));
    assert_eq!(p.cmd(&["SCARD", "{w}dst"]), int(1));
}

#[test]
fn resp3_replies() {
    let s = Server::start(&[]);
    let mut p = s.raw();
    let mut a = resp3(&s);
    // Time-outs: RESP3 null.
    assert_eq!(a.cmd_raw(&["BLPOP", "{r}a", "0.01"]), b"_\r\n");
    assert_eq!(a.cmd_raw(&["BRPOP", "{r}a", "0.01"]), b"_\r\n");
    assert_eq!(
        a.cmd_raw(&["BLMOVE", "{r}a", "{r}b", "LEFT", "LEFT", "0.01"]),
        b"_\r\n"
    );
    assert_eq!(
        a.cmd_raw(&["BLMPOP", "0.01", "2", "{r}a", "{r}b", "RIGHT"]),
        b"_\r\n"
    );
    // Served after waiting.
    send(&mut a, &["BLPOP", "{r}a", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["RPUSH", "{r}a", "x"]);
    assert_eq!(a.read_raw(), b"*2\r\n$4\r\n{r}a\r\n$1\r\nx\r\n");
    send(&mut a, &["BLMPOP", "0", "1", "{r}a", "LEFT", "COUNT", "3"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["RPUSH", "{r}a", "1", "2"]);
    assert_eq!(
        a.read_raw(),
        b"*2\r\n$4\r\n{r}a\r\n*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
    );
    send(&mut a, &["BLMOVE", "{r}a", "{r}b", "LEFT", "LEFT", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["RPUSH", "{r}a", "m"]);
    assert_eq!(a.read_raw(), b"$1\r\nm\r\n");
    // A RESP2 waiter next to a RESP3 one: each gets its own protocol's time-out reply.
    let mut b = s.raw();
    send(&mut a, &["BLPOP", "{r}z", "0.2"]);
    send(&mut b, &["BLPOP", "{r}z", "0.2"]);
    assert_eq!(a.read_raw(), b"_\r\n");
    assert_eq!(b.read_raw(), b"*-1\r\n");
}

#[test]
fn pipelined_replies_before_a_blocking_command_arrive_first() {
    let s = Server::start(&["--threads", "2"]);
    let mut p = s.raw();
    let mut a = s.raw();
    let mut batch = Vec::new();
    for c in [
        vec!["SET", "{p}x", "1"],
        vec!["INCR", "{p}x"],
        vec!["RPUSH", "{p}other", "o"],
        vec!["BLPOP", "{p}k", "0"],
        vec!["PING", "after"],
        vec!["GET", "{p}x"],
    ] {
        batch.extend(resp::encode(&c));
    }
    a.send(&batch);
    // The three replies before the BLPOP come at once, while it still waits.
    assert_eq!(a.read_value(), ok());
    assert_eq!(a.read_value(), int(2));
    assert_eq!(a.read_value(), int(1));
    wait_blocked(&mut p, 1);
    no_reply(&mut a, 150, "commands after the blocked one");
    p.cmd(&["RPUSH", "{p}k", "v"]);
    assert_eq!(a.read_value(), bulks(&["{p}k", "v"]));
    assert_eq!(a.read_value(), bulk("after"));
    assert_eq!(a.read_value(), bulk("2"));
    // Same with a time-out: the rest of the pipeline runs after it.
    let mut batch = Vec::new();
    for c in [
        vec!["PING"],
        vec!["BRPOP", "{p}k", "0.1"],
        vec!["RPUSH", "{p}k", "mine"],
        vec!["BRPOP", "{p}k", "0"],
    ] {
        batch.extend(resp::encode(&c));
    }
    a.send(&batch);
    assert_eq!(a.read_value(), simple("PONG"));
    assert_eq!(a.read_value(), Value::NullArray);
    assert_eq!(a.read_value(), int(1));
    assert_eq!(a.read_value(), bulks(&["{p}k", "mine"]));
}

#[test]
fn served_pops_survive_kill_9_with_appendfsync_always() {
    let mut s = Server::start(&[
        "--threads",
        "2",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]);
    let tags = [key_on("dur", 0), key_on("dur", 1)];
    {
        let mut p = s.raw();
        let mut ws = Vec::new();
        for t in &tags {
            let mut a = s.raw();
            send(
                &mut a,
                &[
                    "BLMOVE",
                    &format!("{{{t}}}s"),
                    &format!("{{{t}}}d"),
                    "LEFT",
                    "RIGHT",
                    "0",
                ],
            );
            ws.push(a);
            let mut b = s.raw();
            send(&mut b, &["BLPOP", &format!("{{{t}}}q"), "0"]);
            ws.push(b);
        }
        wait_blocked(&mut p, 4);
        for t in &tags {
            p.cmd(&["RPUSH", &format!("{{{t}}}s"), "m1", "m2"]);
            p.cmd(&["RPUSH", &format!("{{{t}}}q"), "q1", "q2"]);
        }
        assert_eq!(ws[0].read_value(), bulk("m1"));
        assert_eq!(
            ws[1].read_value(),
            bulks(&[&format!("{{{}}}q", tags[0]), "q1"])
        );
        assert_eq!(ws[2].read_value(), bulk("m1"));
        assert_eq!(
            ws[3].read_value(),
            bulks(&[&format!("{{{}}}q", tags[1]), "q1"])
        );
        // The serves were acknowledged: a crash now must not undo them.
        s.kill();
    }
    s.start_again();
    let mut r = s.raw();
    for t in &tags {
        assert_eq!(range(&mut r, &format!("{{{t}}}s")), bulks(&["m2"]), "{t}");
        assert_eq!(range(&mut r, &format!("{{{t}}}d")), bulks(&["m1"]), "{t}");
        assert_eq!(range(&mut r, &format!("{{{t}}}q")), bulks(&["q2"]), "{t}");
    }
}

#[test]
fn zset_blocking_commands() {
    let s = Server::start(&[]);
    let mut p = s.raw();
    let mut a = s.raw();
    assert_eq!(a.cmd_raw(&["BZPOPMIN", "{z}a", "0.01"]), b"*-1\r\n");
    assert_eq!(a.cmd_raw(&["BZPOPMAX", "{z}a", "{z}b", "0.01"]), b"*-1\r\n");
    assert_eq!(
        a.cmd_raw(&["BZMPOP", "0.01", "1", "{z}a", "MIN"]),
        b"*-1\r\n"
    );
    send(&mut a, &["BZPOPMIN", "{z}a", "{z}b", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["ZADD", "{z}b", "2", "two", "1", "one"]);
    assert_eq!(a.read_value(), bulks(&["{z}b", "one", "1"]));
    send(&mut a, &["BZPOPMAX", "{z}a", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["ZADD", "{z}a", "1.5", "x", "3", "y"]);
    assert_eq!(a.read_value(), bulks(&["{z}a", "y", "3"]));
    send(&mut a, &["BZMPOP", "0", "1", "{z}c", "MAX", "COUNT", "2"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["ZADD", "{z}c", "1", "a", "2", "b", "3", "c"]);
    assert_eq!(
        a.read_value(),
        arr(vec![
            bulk("{z}c"),
            arr(vec![bulks(&["c", "3"]), bulks(&["b", "2"])])
        ])
    );
    // A list under the key does not serve a zset waiter (and vice versa).
    p.cmd(&["DEL", "{z}a"]);
    send(&mut a, &["BZPOPMIN", "{z}a", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["RPUSH", "{z}a", "l"]);
    no_reply(&mut a, 100, "BZPOPMIN after RPUSH");
    p.cmd(&["DEL", "{z}a"]);
    p.cmd(&["ZADD", "{z}a", "5", "z"]);
    assert_eq!(a.read_value(), bulks(&["{z}a", "z", "5"]));
    // RESP3 time-out and served replies.
    let mut a3 = resp3(&s);
    assert_eq!(a3.cmd_raw(&["BZPOPMIN", "{z}q", "0.01"]), b"_\r\n");
    assert_eq!(
        a3.cmd_raw(&["BZMPOP", "0.01", "1", "{z}q", "MIN"]),
        b"_\r\n"
    );
    send(&mut a3, &["BZPOPMIN", "{z}q", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["ZADD", "{z}q", "2.5", "m"]);
    assert_eq!(
        a3.read_value(),
        arr(vec![bulk("{z}q"), bulk("m"), Value::Double("2.5".into())])
    );
}

/// Many producers and consumers over a few keys on both workers, with BLMOVE stages in the
/// middle: every element produced is consumed exactly once.
#[test]
fn stress_every_element_consumed_exactly_once() {
    let s = Server::start(&["--threads", "2"]);
    const PRODUCERS: usize = 4;
    const PER_PRODUCER: usize = 1000;
    const TOTAL: usize = PRODUCERS * PER_PRODUCER;
    let tags = [key_on("st", 0), key_on("st", 1)];
    let inputs: Vec<String> = tags
        .iter()
        .flat_map(|t| [format!("{{{t}}}in1"), format!("{{{t}}}in2")])
        .collect();
    let consumed = Arc::new(Mutex::new(Vec::<String>::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(25);
    let mut handles = Vec::new();
    let mut ids = Vec::new();
    // Consumers: per group, three pop from both inputs and from the middle list; one moves
    // from in1 to the middle list (BLMOVE), one from in2 (BRPOPLPUSH). Another client
    // keeps CLIENT UNBLOCK-ing all of them, racing the serves.
    for t in &tags {
        let (in1, in2, mid) = (
            format!("{{{t}}}in1"),
            format!("{{{t}}}in2"),
            format!("{{{t}}}mid"),
        );
        for c in 0..3 {
            let mut r = s.raw();
            ids.push(r.cmd(&["CLIENT", "ID"]).int().to_string());
            let (in1, in2, mid) = (in1.clone(), in2.clone(), mid.clone());
            let (consumed, count, stop) = (consumed.clone(), count.clone(), stop.clone());
            handles.push(std::thread::spawn(move || {
                let mut mine = Vec::new();
                while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                    let v = match c {
                        0 => r.cmd(&["BLPOP", &mid, &in1, &in2, "0.1"]),
                        // Very short time-outs race the pushes.
                        1 => r.cmd(&["BRPOP", &in1, &in2, &mid, "0.01"]),
                        _ => r.cmd(&[
                            "BLMPOP", "0.1", "3", &in2, &mid, &in1, "RIGHT", "COUNT", "3",
                        ]),
                    };
                    let got: Vec<String> = match v {
                        Value::NullArray => continue,
                        Value::Array(ref a) if c < 2 => vec![a[1].text()],
                        Value::Array(ref a) => a[1].strings(),
                        other => panic!("consumer got {other:?}"),
                    };
                    count.fetch_add(got.len(), Ordering::SeqCst);
                    mine.extend(got);
                }
                consumed.lock().unwrap().extend(mine);
            }));
        }
        for (src, how) in [(in1.clone(), 0), (in2.clone(), 1)] {
            let mut r = s.raw();
            ids.push(r.cmd(&["CLIENT", "ID"]).int().to_string());
            let mid = mid.clone();
            let stop = stop.clone();
            handles.push(std::thread::spawn(move || {
                let mut moved = 0usize;
                while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                    let v = if how == 0 {
                        r.cmd(&["BLMOVE", &src, &mid, "RIGHT", "LEFT", "0.1"])
                    } else {
                        r.cmd(&["BRPOPLPUSH", &src, &mid, "0.1"])
                    };
                    match v {
                        Value::NullArray => {}
                        Value::Bulk(_) => moved += 1,
                        other => panic!("mover got {other:?}"),
                    }
                }
                let _ = moved;
            }));
        }
    }
    let unblocker = {
        let mut r = s.raw();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut unblocked = 0;
            while !stop.load(Ordering::SeqCst) {
                for id in &ids {
                    unblocked += r.cmd(&["CLIENT", "UNBLOCK", id, "TIMEOUT"]).int();
                }
                std::thread::sleep(Duration::from_millis(3));
            }
            unblocked
        })
    };
    let mut producers = Vec::new();
    for pi in 0..PRODUCERS {
        let mut r = s.raw();
        let inputs = inputs.clone();
        producers.push(std::thread::spawn(move || {
            let mut rng = Rng::new(pi as u64 + 1);
            let mut n = 0;
            while n < PER_PRODUCER {
                // Batches of 1..4 elements onto one input key, pipelined in pairs.
                let k = &inputs[rng.range(0, inputs.len() as u64) as usize];
                let b = (rng.range(1, 5) as usize).min(PER_PRODUCER - n);
                let mut args = vec![
                    if rng.range(0, 2) == 0 {
                        "RPUSH"
                    } else {
                        "LPUSH"
                    }
                    .to_string(),
                    k.clone(),
                ];
                for j in 0..b {
                    args.push(format!("p{pi}:{}", n + j));
                }
                n += b;
                let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
                assert!(matches!(r.cmd(&args), Value::Integer(_)));
                // Pauses now and then, so that consumers run dry and block.
                if rng.range(0, 4) == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }));
    }
    for h in producers {
        h.join().unwrap();
    }
    let all_in = wait_until(deadline.saturating_duration_since(Instant::now()), || {
        count.load(Ordering::SeqCst) >= TOTAL
    });
    stop.store(true, Ordering::SeqCst);
    for h in handles {
        h.join().unwrap();
    }
    let unblocked = unblocker.join().unwrap();
    assert!(unblocked > 0, "CLIENT UNBLOCK never hit a waiter");
    let mut got = consumed.lock().unwrap().clone();
    got.sort();
    let mut want: Vec<String> = (0..PRODUCERS)
        .flat_map(|p| (0..PER_PRODUCER).map(move |n| format!("p{p}:{n}")))
        .collect();
    want.sort();
    if got != want {
        let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
        for g in &got {
            *counts.entry(g).or_default() += 1;
        }
        for w in &want {
            *counts.entry(w).or_default() -= 1;
        }
        let bad: Vec<_> = counts.iter().filter(|(_, &c)| c != 0).take(20).collect();
        panic!(
            "consumed {} of {TOTAL} (all in: {all_in}); first differences (extra>0, missing<0): {bad:?}",
            got.len()
        );
    }
    let mut r = s.raw();
    for t in &tags {
        for k in ["in1", "in2", "mid"] {
            assert_eq!(r.cmd(&["EXISTS", &format!("{{{t}}}{k}")]), int(0));
        }
    }
    wait_blocked(&mut r, 0);
}

#[test]
fn client_list_flags_a_blocked_client() {
    let s = Server::start(&[]);
    let mut p = s.raw();
    let mut a = s.raw();
    a.cmd(&["CLIENT", "SETNAME", "waiter"]);
    send(&mut a, &["BLPOP", "fl", "0"]);
    wait_blocked(&mut p, 1);
    let list = p.cmd(&["CLIENT", "LIST"]).text();
    let line = list.lines().find(|l| l.contains("name=waiter")).unwrap();
    assert!(line.contains(" flags=b "), "{line}");
    assert!(line.contains(" cmd=blpop "), "{line}");
}

#[test]
fn databases_repeated_keys_and_flushes() {
    let s = Server::start(&["--threads", "2"]);
    let mut p = s.raw();
    let mut a = s.raw();
    // A waiter in db 1 ignores the same key name in db 0.
    assert_eq!(a.cmd(&["SELECT", "1"]), ok());
    send(&mut a, &["BLPOP", "dbk", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["RPUSH", "dbk", "in-db0"]);
    no_reply(&mut a, 100, "waiter in db 1 after a push in db 0");
    p.cmd(&["SELECT", "1"]);
    p.cmd(&["RPUSH", "dbk", "in-db1"]);
    assert_eq!(a.read_value(), bulks(&["dbk", "in-db1"]));
    p.cmd(&["SELECT", "0"]);
    assert_eq!(range(&mut p, "dbk"), bulks(&["in-db0"]));
    // The same key twice: served once.
    send(&mut a, &["BLPOP", "rep", "rep", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["SELECT", "1"]);
    p.cmd(&["RPUSH", "rep", "1", "2"]);
    assert_eq!(a.read_value(), bulks(&["rep", "1"]));
    wait_blocked(&mut p, 0);
    assert_eq!(range(&mut p, "rep"), bulks(&["2"]));
    // FLUSHALL while it waits: it keeps waiting.
    send(&mut a, &["BRPOP", "fl", "0"]);
    wait_blocked(&mut p, 1);
    assert_eq!(p.cmd(&["FLUSHALL"]), ok());
    no_reply(&mut a, 100, "waiter after FLUSHALL");
    p.cmd(&["RPUSH", "fl", "after"]);
    assert_eq!(a.read_value(), bulks(&["fl", "after"]));
}

#[test]
fn idle_timeout_spares_blocked_clients() {
    let s = Server::start(&[]);
    let mut p = s.raw();
    assert_eq!(p.cmd(&["CONFIG", "SET", "timeout", "1"]), ok());
    let mut a = s.raw();
    let t = Instant::now();
    assert_eq!(a.cmd(&["BLPOP", "idle", "2.5"]), Value::NullArray);
    assert!(t.elapsed() >= Duration::from_millis(2400));
    assert_eq!(a.cmd(&["PING"]), simple("PONG"));
    // The idle client next to it was closed meanwhile (the time-out is in force).
    assert!(p.is_closed_within(Duration::from_secs(3)));
}

#[test]
fn chained_moves_and_a_move_onto_its_own_source() {
    let s = Server::start(&[]);
    let mut p = s.raw();
    let mut a = s.raw();
    let mut b = s.raw();
    let mut c = s.raw();
    // a moves s -> d, b moves d -> e, c pops e: one push travels the whole chain.
    send(&mut a, &["BLMOVE", "{c}s", "{c}d", "LEFT", "RIGHT", "0"]);
    wait_blocked(&mut p, 1);
    send(&mut b, &["BRPOPLPUSH", "{c}d", "{c}e", "0"]);
    wait_blocked(&mut p, 2);
    send(&mut c, &["BLPOP", "{c}e", "0"]);
    wait_blocked(&mut p, 3);
    assert_eq!(p.cmd(&["RPUSH", "{c}s", "x"]), int(1));
    assert_eq!(a.read_value(), bulk("x"));
    assert_eq!(b.read_value(), bulk("x"));
    assert_eq!(c.read_value(), bulks(&["{c}e", "x"]));
    assert_eq!(p.cmd(&["EXISTS", "{c}s", "{c}d", "{c}e"]), int(0));
    // A move from a key onto itself rotates it.
    send(&mut a, &["BLMOVE", "{c}r", "{c}r", "LEFT", "RIGHT", "0"]);
    wait_blocked(&mut p, 1);
    p.cmd(&["RPUSH", "{c}r", "1", "2", "3"]);
    assert_eq!(a.read_value(), bulk("1"));
    assert_eq!(range(&mut p, "{c}r"), bulks(&["2", "3", "1"]));
    wait_blocked(&mut p, 0);
}

/// After a restart the destination of a BLMOVE is on the data device only: serving the
/// waiter reads it first (Skerry-only: Redis keeps everything in RAM).
#[test]
fn served_move_whose_destination_must_be_read_from_the_device() {
    skip_if_redis!();
    let mut s = Server::start(&["--threads", "2", "--value-cache-mb", "0"]);
    {
        let mut r = s.raw();
        let big = "x".repeat(3000);
        for i in 0..20 {
            r.cmd(&["RPUSH", &format!("{{dv}}dst{i}"), "old", &big]);
        }
        // More values on the same worker than its read buffer holds (4096).
        for chunk in (0..5000).collect::<Vec<_>>().chunks(500) {
            let cmds: Vec<Vec<String>> = chunk
                .iter()
                .map(|i| vec!["SET".into(), format!("{{dv}}f{i}"), format!("v{i}")])
                .collect();
            pipeline(&mut r, &cmds);
        }
    }
    s.stop_clean();
    s.start_again();
    let mut p = s.raw();
    let mut ws: Vec<Raw> = (0..20).map(|_| s.raw()).collect();
    for (i, w) in ws.iter_mut().enumerate() {
        send(
            w,
            &[
                "BLMOVE",
                "{dv}src",
                &format!("{{dv}}dst{i}"),
                "LEFT",
                "LEFT",
                "0",
            ],
        );
        wait_blocked(&mut p, i as u64 + 1);
    }
    // The waiters read their destinations when they ran first; reading the other values
    // now pushes them out of the read buffer.
    for chunk in (0..5000).collect::<Vec<_>>().chunks(500) {
        let cmds: Vec<Vec<String>> = chunk
            .iter()
            .map(|i| vec!["GET".into(), format!("{{dv}}f{i}")])
            .collect();
        for (i, v) in chunk.iter().zip(pipeline(&mut p, &cmds)) {
            assert_eq!(v, bulk(&format!("v{i}")));
        }
    }
    let reads0 = info_u64(&mut p, "storage", "storage_value_reads").unwrap();
    let elems: Vec<String> = (0..20).map(|i| format!("e{i}")).collect();
    let mut push = vec!["RPUSH", "{dv}src"];
    push.extend(elems.iter().map(|e| e.as_str()));
    assert_eq!(p.cmd(&push), int(20));
    for (i, w) in ws.iter_mut().enumerate() {
        assert_eq!(w.read_value(), bulk(&format!("e{i}")), "waiter {i}");
        assert_eq!(
            p.cmd(&["LRANGE", &format!("{{dv}}dst{i}"), "0", "1"]),
            bulks(&[&format!("e{i}"), "old"])
        );
    }
    assert_eq!(p.cmd(&["EXISTS", "{dv}src"]), int(0));
    wait_blocked(&mut p, 0);
    let reads = info_u64(&mut p, "storage", "storage_value_reads").unwrap() - reads0;
    assert!(
        reads >= 20,
        "the destinations were not read from the device ({reads} reads)"
    );
}

/// Milliseconds until INFO's `blocked_clients` on `p` reads `n` (polled every millisecond,
/// at most 5 s).
fn ms_until_blocked(p: &mut Raw, n: u64) -> f64 {
    let started = Instant::now();
    while blocked(p) != n {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "blocked_clients never reached {n}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    started.elapsed().as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The server's user plus system CPU time in seconds (Linux `/proc`).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc stat");
    // The fields after the command name, which is in parentheses: utime and stime are the
    // 12th and 13th of them.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    // SAFETY: sysconf reads a constant of the running system.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// A blocked client's close, CLIENT UNBLOCK and CLIENT KILL take effect as they happen, as in
/// Redis, not on a periodic check: Redis's own tests close a blocked client and at once wait
/// for another one to block (the count must not still include the closed one). Each is
/// measured 15 times; the median must be far under the 100 ms a periodic check would take
/// on average half of.
#[test]
fn closes_unblocks_and_kills_take_effect_at_once() {
    let s = Server::start(&["--threads", "2"]);
    let mut p = s.raw();
    let (mut closes, mut unblocks, mut kills) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..15 {
        // Waiters on a key of each worker, connections on either.
        let key = format!("{{{}}}k", key_on("now", i % 2));
        let mut a = s.raw();
        send(&mut a, &["BLPOP", &key, "0"]);
        wait_blocked(&mut p, 1);
        drop(a);
        closes.push(ms_until_blocked(&mut p, 0));

        let mut b = s.raw();
        let id = b.cmd(&["CLIENT", "ID"]).int().to_string();
        send(&mut b, &["BRPOP", &key, "0"]);
        wait_blocked(&mut p, 1);
        let started = Instant::now();
        assert_eq!(p.cmd(&["CLIENT", "UNBLOCK", &id]), int(1));
        assert_eq!(b.read_value(), Value::NullArray);
        unblocks.push(started.elapsed().as_secs_f64() * 1e3);

        send(&mut b, &["BLMOVE", &key, "{x}d", "LEFT", "LEFT", "0"]);
        wait_blocked(&mut p, 1);
        assert_eq!(p.cmd(&["CLIENT", "KILL", "ID", &id]), int(1));
        kills.push(ms_until_blocked(&mut p, 0));
        b.expect_closed();
    }
    let (c, u, k) = (median(closes), median(unblocks), median(kills));
    assert!(c < 25.0, "a close took {c:.1} ms (median) to uncount");
    assert!(u < 25.0, "CLIENT UNBLOCK took {u:.1} ms (median) to answer");
    assert!(k < 25.0, "CLIENT KILL took {k:.1} ms (median) to uncount");
}

/// Commands pipelined behind a blocking command wait in the socket: they are neither taken
/// for a close nor spun on, and run in order once it is served; a close behind them is still
/// noticed.
#[test]
fn commands_pipelined_behind_a_blocked_one_wait_without_spinning() {
    let s = Server::start(&[]);
    let mut p = s.raw();
    let mut a = s.raw();
    a.send(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n*1\r\n$4\r\nPING\r\n");
    wait_blocked(&mut p, 1);
    let cpu0 = cpu_seconds(s.pid());
    std::thread::sleep(Duration::from_secs(1));
    let busy = cpu_seconds(s.pid()) - cpu0;
    assert!(
        busy < 0.3,
        "the server used {busy:.2} CPU-s in 1 s with one blocked client"
    );
    assert_eq!(blocked(&mut p), 1, "pipelined data is not a close");
    p.cmd(&["RPUSH", "q", "v"]);
    assert_eq!(a.read_value(), bulks(&["q", "v"]));
    assert_eq!(a.read_value(), simple("PONG"));

    let mut b = s.raw();
    b.send(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n*1\r\n$4\r\nPING\r\n");
    wait_blocked(&mut p, 1);
    drop(b);
    wait_blocked(&mut p, 0);
    p.cmd(&["RPUSH", "q", "kept"]);
    assert_eq!(range(&mut p, "q"), bulks(&["kept"]));
}

/// BLMOVE and BRPOPLPUSH wait on their source only, also when the destination lives on
/// another worker: a destination that holds a list neither wakes them (over and over,
/// spinning both workers) nor serves them, and a client that leaves is uncounted at once.
/// (The Tcl suite's "Regression for bug 593" left such a waiter spinning.)
#[test]
fn a_move_across_workers_waits_on_its_source_only() {
    let s = Server::start(&["--threads", "2"]);
    let mut p = s.raw();
    let (src, dst) = (key_on("src", 0), key_on("dst", 1));
    p.cmd(&["RPUSH", &dst, "d1"]);
    for cmd in [
        vec!["BRPOPLPUSH", src.as_str(), dst.as_str(), "0"],
        vec!["BLMOVE", src.as_str(), dst.as_str(), "LEFT", "RIGHT", "0"],
    ] {
        let mut a = s.raw();
        send(&mut a, &cmd);
        wait_blocked(&mut p, 1);
        let cpu0 = cpu_seconds(s.pid());
        std::thread::sleep(Duration::from_millis(500));
        let busy = cpu_seconds(s.pid()) - cpu0;
        assert!(
            busy < 0.2,
            "{cmd:?}: {busy:.2} CPU-s in 0.5 s while blocked"
        );
        no_reply(&mut a, 10, "a move whose source is empty");
        // A push to the destination does not serve it either.
        p.cmd(&["RPUSH", &dst, "d2"]);
        no_reply(&mut a, 100, "a move after a push to its destination");
        p.cmd(&["RPUSH", &src, "s"]);
        assert_eq!(a.read_value(), bulk("s"), "{cmd:?}");
        let want = if cmd[0] == "BLMOVE" {
            ["d1", "d2", "s"]
        } else {
            ["s", "d1", "d2"]
        };
        assert_eq!(range(&mut p, &dst), bulks(&want), "{cmd:?}");
        p.cmd(&["DEL", &dst]);
        p.cmd(&["RPUSH", &dst, "d1"]);
        // Blocked again, then gone.
        send(&mut a, &cmd);
        wait_blocked(&mut p, 1);
        drop(a);
        wait_blocked(&mut p, 0);
        p.cmd(&["RPUSH", &src, "kept"]);
        assert_eq!(range(&mut p, &src), bulks(&["kept"]), "{cmd:?}");
        p.cmd(&["DEL", &src]);
    }
}

/// A blocking command that times out, or that CLIENT UNBLOCK ends, counts as one call in
/// INFO commandstats (a failed one when unblocked with an error), as in Redis.
#[test]
fn a_timed_out_or_unblocked_command_counts_one_call() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    let stat = |r: &mut Raw| -> String {
        let info = r.cmd(&["INFO", "commandstats"]).text();
        info_field(&info, "cmdstat_blpop").unwrap_or_default()
    };
    assert_eq!(r.cmd(&["CONFIG", "RESETSTAT"]), ok());
    let mut waiter = s.raw();
    assert_eq!(
        waiter.cmd(&["BLPOP", "nolist", "0.05"]),
        Value::NullArray,
        "times out"
    );
    let st = stat(&mut r);
    assert!(st.starts_with("calls=1,"), "{st}");
    assert!(st.ends_with("rejected_calls=0,failed_calls=0"), "{st}");
    let Value::Integer(id) = waiter.cmd(&["CLIENT", "ID"]) else {
        panic!("CLIENT ID")
    };
    waiter.send(&resp::encode(&["BLPOP", "nolist", "0"]));
    wait_blocked(&mut r, 1);
    assert_eq!(
        r.cmd(&["CLIENT", "UNBLOCK", &id.to_string(), "ERROR"]),
        int(1)
    );
    assert!(waiter.read_value().is_error());
    let st = stat(&mut r);
    assert!(st.starts_with("calls=2,"), "{st}");
    assert!(st.ends_with("rejected_calls=0,failed_calls=1"), "{st}");
}
