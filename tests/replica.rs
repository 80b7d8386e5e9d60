//! REPLICAOF end to end: the server under test follows the reference Redis as a replica
//! (full sync from Redis's RDB file, then the command stream: every type, TTLs, MULTI/EXEC,
//! scripts, several databases), answers WAIT's acknowledgements, refuses writes while
//! read-only, resumes with a partial resync after the primary drops the link, and is
//! promoted by REPLICAOF NO ONE. The two datasets are compared by Redis's DEBUG DIGEST.
//!
//! These tests pass against Redis too (`SKERRY_TEST_SERVER=redis`: a Redis replica).

mod common;

use std::time::Duration;

use common::*;

/// Writes of every kind, on the primary.
fn writes(p: &mut Raw, round: usize) {
    let k = |name: &str| format!("{name}:{round}");
    assert_eq!(p.cmd(&["SET", &k("s"), "hello"]), ok());
    p.cmd(&["INCRBY", "counter", "5"]);
    p.cmd(&["RPUSH", &k("l"), "a", "b", "c"]);
    p.cmd(&["LPOP", &k("l")]);
    p.cmd(&["SADD", &k("set"), "x", "y", "1"]);
    p.cmd(&["ZADD", &k("z"), "1.5", "a", "-2", "b"]);
    p.cmd(&["HSET", &k("h"), "f", "v", "g", "w"]);
    p.cmd(&["XADD", &k("x"), "*", "f", "v"]);
    p.cmd(&["SET", &k("ttl"), "v", "EX", "1000"]);
    p.cmd(&["SET", &k("gone"), "v"]);
    p.cmd(&["DEL", &k("gone")]);
    assert_eq!(p.cmd(&["MULTI"]), ok());
    p.cmd(&["SET", &k("m1"), "1"]);
    p.cmd(&["INCR", &k("m1")]);
    p.cmd(&["EXEC"]);
    p.cmd(&[
        "EVAL",
        "redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', KEYS[2])",
        "2",
        &k("e1{t}"),
        &k("e2{t}"),
        "v",
    ]);
    p.cmd(&["SELECT", "3"]);
    p.cmd(&["SET", &k("db3"), "three"]);
    p.cmd(&["SELECT", "0"]);
}

/// Waits until the replica's offset reaches the primary's, then compares the datasets.
fn caught_up(p: &mut Raw, r: &mut Raw) {
    // WAIT for the replica's acknowledgement: it answers REPLCONF GETACK.
    let acked = p.cmd(&["WAIT", "1", "5000"]).int();
    assert_eq!(acked, 1, "the replica did not acknowledge");
    let target = info_text(p, "replication", "master_repl_offset");
    assert!(
        wait_until(Duration::from_secs(10), || info_text(
            r,
            "replication",
            "slave_repl_offset"
        ) == target),
        "the replica's offset {} never reached {target}",
        info_text(r, "replication", "slave_repl_offset")
    );
    // The stream is applied in order by one client: a command sent now runs after it.
    assert!(wait_until(Duration::from_secs(10), || {
        r.cmd(&["DEBUG", "DIGEST"]) == p.cmd(&["DEBUG", "DIGEST"])
    }));
}

#[test]
fn follows_a_redis_primary_resumes_and_is_promoted() {
    let primary = Server::start_reference(&[]);
    let mut p = primary.raw();
    // Before the replica: what the full sync carries.
    writes(&mut p, 0);
    let big: Vec<String> = (0..3000).map(|i| format!("member-{i}")).collect();
    let mut cmd = vec!["SADD", "bigset"];
    cmd.extend(big.iter().map(String::as_str));
    p.cmd(&cmd);
    p.cmd(&["SET", "bigvalue", &"v".repeat(200_000)]);
    assert_eq!(
        p.cmd(&["FUNCTION", "LOAD", "#!lua name=repl\nredis.register_function{function_name='rf', callback=function() return 'rf' end, flags={'no-writes'}}\nredis.register_function('wf', function() return redis.call('set', 'wf', 1) end)"]),
        bulk("repl")
    );

    let replica = Server::start(&["--threads", "2"]);
    let mut r = replica.raw();
    r.cmd(&["SET", "replaced-by-sync", "1"]);
    let port = primary.port().to_string();
    assert_eq!(r.cmd(&["REPLICAOF", "127.0.0.1", &port]), ok());
    assert_eq!(
        r.cmd(&["REPLICAOF", "127.0.0.1", &port]),
        simple("OK Already connected to specified master")
    );
    assert!(
        wait_until(Duration::from_secs(30), || {
            info_text(&mut r, "replication", "master_link_status") == "up"
        }),
        "the link never came up; log:\n{}",
        replica.log_contents()
    );
    assert_eq!(info_text(&mut r, "replication", "role"), "slave");
    caught_up(&mut p, &mut r);
    assert_eq!(r.cmd(&["EXISTS", "replaced-by-sync"]).int(), 0);
    // A function that may write is refused on a read-only replica; a no-writes one runs.
    assert_eq!(r.cmd(&["FCALL_RO", "rf", "0"]), bulk("rf"));
    assert_eq!(
        r.cmd(&["FCALL", "wf", "0"]),
        Value::Error("READONLY You can't write against a read only replica.".into())
    );
    let e = r.cmd(&["EVAL", "return redis.call('set', 'k', 1)", "0"]);
    assert!(
        matches!(&e, Value::Error(m) if m.starts_with("READONLY You can't write against a read only replica.")),
        "{e:?}"
    );
    assert_eq!(r.cmd(&["SCARD", "bigset"]).int(), 3000);

    // The stream after the sync.
    writes(&mut p, 1);
    caught_up(&mut p, &mut r);
    assert_eq!(r.cmd(&["GET", "counter"]), bulk("10"));
    assert!(r.cmd(&["TTL", "ttl:1"]).int() > 900);

    // Read-only: clients cannot write, inside MULTI neither.
    let e = r.cmd(&["SET", "x", "1"]);
    assert_eq!(
        e,
        Value::Error("READONLY You can't write against a read only replica.".into())
    );
    let role = r.cmd(&["ROLE"]).items();
    assert_eq!(role[0].text(), "slave");
    assert_eq!(role[2].int(), primary.port() as i64);
    assert_eq!(role[3].text(), "connected");

    // The primary drops the link: the replica comes back with a partial resync.
    let full = info_field(&p.cmd(&["INFO", "stats"]).text(), "sync_full");
    p.cmd(&["CLIENT", "KILL", "TYPE", "replica"]);
    writes(&mut p, 2);
    assert!(wait_until(Duration::from_secs(30), || {
        info_text(&mut p, "replication", "connected_slaves") == "1"
    }));
    caught_up(&mut p, &mut r);
    let stats = p.cmd(&["INFO", "stats"]).text();
    assert_eq!(info_field(&stats, "sync_full"), full, "{stats}");
    assert_eq!(info_field(&stats, "sync_partial_ok").as_deref(), Some("1"));

    // Promoted: writes are accepted, and the primary's later writes no longer arrive.
    assert_eq!(r.cmd(&["REPLICAOF", "NO", "ONE"]), ok());
    assert_eq!(r.cmd(&["ROLE"]).items()[0].text(), "master");
    assert_eq!(r.cmd(&["SET", "x", "1"]), ok());
    p.cmd(&["SET", "after-promotion", "1"]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(r.cmd(&["EXISTS", "after-promotion"]).int(), 0);
}
