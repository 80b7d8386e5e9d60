//! WAIT and WAITAOF end to end. With no replicas (issue 28) WAIT counts none and waits
//! until its time-out; WAITAOF's local part makes every worker's writes durable: under
//! `appendfsync no`, writes acknowledged before a WAITAOF survive `kill -9`.
//!
//! Every expectation holds for Redis 8.0 too (`SKERRY_TEST_SERVER=redis` with an 8.0
//! `redis-server`), unless the test says it is Skerry-only.

mod common;

use std::time::{Duration, Instant};

use common::*;

fn send(r: &mut Raw, args: &[&str]) {
    r.send(&resp::encode(args));
}

/// A server whose append-only file is on (Redis's default is off; Skerry's log always is).
fn start(args: &[&str]) -> Server {
    let s = Server::start(args);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["CONFIG", "SET", "appendonly", "yes"]), ok());
    // Redis turns its append-only file on once the rewrite that starts it has finished.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = r.cmd(&["INFO", "persistence"]).text();
        let busy = ["aof_rewrite_in_progress", "aof_rewrite_scheduled"]
            .iter()
            .any(|f| info_field(&info, f).as_deref() != Some("0"));
        if !busy && info_field(&info, "aof_enabled").as_deref() == Some("1") {
            break;
        }
        assert!(Instant::now() < deadline, "{info}");
        std::thread::sleep(Duration::from_millis(10));
    }
    s
}

#[test]
fn arguments_get_redis_errors() {
    let s = start(&[]);
    let mut r = s.raw();
    let cases: [(&[&str], &str); 9] = [
        (
            &["WAIT", "x", "0"],
            "ERR value is not an integer or out of range",
        ),
        (&["WAIT", "0", "-1"], "ERR timeout is negative"),
        (
            &["WAIT", "0", "0.5"],
            "ERR timeout is not an integer or out of range",
        ),
        (
            &["WAITAOF", "2", "0", "0"],
            "ERR value is out of range, value must between 0 and 1",
        ),
        (
            &["WAITAOF", "-1", "0", "0"],
            "ERR value is out of range, value must between 0 and 1",
        ),
        (
            &["WAITAOF", "1", "-1", "0"],
            "ERR value is out of range, must be positive",
        ),
        (&["WAITAOF", "1", "0", "-1"], "ERR timeout is negative"),
        (
            &["WAIT", "0"],
            "ERR wrong number of arguments for 'wait' command",
        ),
        (
            &["WAITAOF", "1", "0"],
            "ERR wrong number of arguments for 'waitaof' command",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(r.cmd(args), err(want), "{args:?}");
    }
    assert_eq!(r.cmd(&["CONFIG", "SET", "appendonly", "no"]), ok());
    let off = "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.";
    assert_eq!(r.cmd(&["WAITAOF", "1", "0", "0"]), err(off));
    assert_eq!(
        r.cmd(&["WAITAOF", "0", "0", "0"]),
        arr(vec![int(0), int(0)])
    );
    assert_eq!(r.cmd(&["MULTI"]), ok());
    assert_eq!(r.cmd(&["WAITAOF", "1", "0", "0"]), simple("QUEUED"));
    assert_eq!(r.cmd(&["EXEC"]), arr(vec![err(off)]));
    assert_eq!(r.cmd(&["PING"]), simple("PONG"));
}

#[test]
fn wait_without_replicas_answers_none_after_its_timeout() {
    let s = start(&["--threads", "2"]);
    let mut r = s.raw();
    r.cmd(&["SET", "a", "1"]);
    assert_eq!(r.cmd(&["WAIT", "0", "0"]), int(0));
    let t = Instant::now();
    assert_eq!(r.cmd(&["WAIT", "1", "150"]), int(0));
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(140) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    // WAITAOF waits for the replicas it asks for as long, after its local part. Skerry
    // syncs at once; Redis waits for its everysec fsync, which may come after 150 ms.
    let t = Instant::now();
    let got = r.cmd(&["WAITAOF", "1", "1", "150"]);
    assert!(
        t.elapsed() >= Duration::from_millis(140),
        "{:?}",
        t.elapsed()
    );
    if is_redis() {
        assert_eq!(got.items()[1], int(0));
    } else {
        assert_eq!(got, arr(vec![int(1), int(0)]));
    }
    // The local part is reported whatever numlocal asks (Redis: as its fsync stands).
    let got = r.cmd(&["WAITAOF", "0", "0", "0"]);
    if !is_redis() {
        assert_eq!(got, arr(vec![int(1), int(0)]));
    }
}

#[test]
fn a_waiting_client_is_blocked_and_ends_by_unblock_or_kill() {
    let s = start(&["--threads", "2"]);
    let mut p = s.raw();
    let mut a = s.raw();
    let id = a.cmd(&["CLIENT", "ID"]).int().to_string();
    // Replies of the commands before it are not held back by the wait.
    send(&mut a, &["SET", "k", "v"]);
    send(&mut a, &["WAIT", "1", "0"]);
    assert_eq!(a.read_value(), ok());
    wait_blocked(&mut p, 1);
    let list = p.cmd(&["CLIENT", "LIST", "ID", &id]).text();
    assert!(list.contains("flags=b"), "{list}");
    assert!(a.try_read_value(Duration::from_millis(200)).is_none());
    assert_eq!(p.cmd(&["CLIENT", "UNBLOCK", &id]), int(1));
    assert_eq!(a.read_value(), int(0));
    wait_blocked(&mut p, 0);

    send(&mut a, &["WAITAOF", "0", "1", "0"]);
    wait_blocked(&mut p, 1);
    assert_eq!(p.cmd(&["CLIENT", "UNBLOCK", &id, "ERROR"]), int(1));
    assert_eq!(
        a.read_value(),
        err("UNBLOCKED client unblocked via CLIENT UNBLOCK")
    );
    wait_blocked(&mut p, 0);
    assert_eq!(a.cmd(&["PING"]), simple("PONG"));

    // A client that goes while it waits stops counting as blocked.
    send(&mut a, &["WAIT", "3", "0"]);
    wait_blocked(&mut p, 1);
    assert_eq!(p.cmd(&["CLIENT", "KILL", "ID", &id]), int(1));
    wait_blocked(&mut p, 0);
    let mut b = s.raw();
    send(&mut b, &["WAIT", "1", "0"]);
    wait_blocked(&mut p, 1);
    drop(b);
    wait_blocked(&mut p, 0);
}

#[test]
fn inside_multi_and_scripts_they_do_not_block() {
    // Under `always` the transaction's writes are durable before EXEC answers, so both
    // servers report the local part as done.
    let s = start(&["--threads", "2", "--appendfsync", "always"]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["MULTI"]), ok());
    for c in [
        &["SET", "a", "1"][..],
        &["WAIT", "5", "0"],
        &["WAITAOF", "0", "5", "0"],
    ] {
        assert_eq!(r.cmd(c), simple("QUEUED"));
    }
    let t = Instant::now();
    let got = r.cmd(&["EXEC"]);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(got, arr(vec![ok(), int(0), arr(vec![int(1), int(0)])]));
    // Redis's own suite: "Scripts do not block on wait / waitaof".
    assert_eq!(
        r.cmd(&["EVAL", "return redis.pcall('wait','1','0')", "0"]),
        int(0)
    );
    assert_eq!(
        r.cmd(&["EVAL", "return redis.pcall('waitaof','0','1','0')", "0"]),
        arr(vec![int(1), int(0)])
    );
    assert_eq!(r.cmd(&["CONFIG", "SET", "appendonly", "no"]), ok());
    assert_eq!(
        r.cmd(&["EVAL", "return redis.pcall('waitaof','0','1','0')", "0"]),
        arr(vec![int(0), int(0)])
    );
}

/// Skerry-only: `appendonly` is on by default, and with `appendfsync no` only WAITAOF
/// makes the writes durable, on every worker, before it answers.
#[test]
fn waitaof_makes_every_workers_writes_survive_kill_9() {
    skip_if_redis!();
    let mut s = Server::start(&["--threads", "2", "--appendfsync", "no"]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "appendonly"]),
        bulks(&["appendonly", "yes"])
    );
    let syncs = |r: &mut Raw| -> i64 {
        let info = r.cmd(&["INFO", "storage"]).text();
        info_field(&info, "storage_fdatasyncs")
            .unwrap()
            .parse()
            .unwrap()
    };
    let before = syncs(&mut r);
    let mut batch = Vec::new();
    for i in 0..500 {
        batch.extend(resp::encode(&[
            "SET",
            &format!("key:{i}"),
            &format!("value {i}"),
        ]));
    }
    r.send(&batch);
    for _ in 0..500 {
        assert_eq!(r.read_value(), ok());
    }
    assert_eq!(
        r.cmd(&["WAITAOF", "1", "0", "0"]),
        arr(vec![int(1), int(0)])
    );
    // The 500 keys live on both workers: each synced its log.
    assert!(syncs(&mut r) >= before + 2, "{before} -> {}", syncs(&mut r));
    s.kill();
    s.start_again();
    let mut r = s.raw();
    assert_eq!(r.cmd(&["DBSIZE"]), int(500));
    for i in [0, 1, 250, 499] {
        assert_eq!(
            r.cmd(&["GET", &format!("key:{i}")]),
            bulk(&format!("value {i}"))
        );
    }
}

#[test]
fn the_reported_version_is_redis_8() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let info = r.cmd(&["INFO", "server"]).text();
    let version = info_field(&info, "redis_version").unwrap();
    let major: u32 = version.split('.').next().unwrap().parse().unwrap();
    assert!(major >= 8, "{version}");
    let hello = r.cmd(&["HELLO", "2"]);
    assert_eq!(hello.get("version"), Some(bulk(&version)));
}
