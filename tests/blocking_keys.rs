//! INFO clients' `total_blocking_keys` and `total_blocking_keys_on_nokey` (Redis 7.2+): keys
//! with blocked clients, and of them keys where a client (XREADGROUP) is also woken by the
//! key's deletion; after Redis's Tcl `unit/type/stream-cgroups` ("Blocking XREADGROUP for
//! stream key that has clients blocked on list"), with one and two threads, and across
//! workers. Passes against Redis >= 7.2 too (`SKERRY_TEST_SERVER=redis`).

mod common;

use std::time::{Duration, Instant};

use common::*;

fn info(r: &mut Raw, field: &str) -> u64 {
    info_u64(r, "clients", field).unwrap_or_else(|| panic!("{field} in INFO clients"))
}

fn wait_blocked(r: &mut Raw, n: u64) {
    let t = Instant::now();
    while info(r, "blocked_clients") != n {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "blocked_clients != {n}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn counts(r: &mut Raw) -> (u64, u64) {
    (
        info(r, "total_blocking_keys"),
        info(r, "total_blocking_keys_on_nokey"),
    )
}

fn blocking_keys(threads: &str) {
    let s = Server::start(&["--threads", threads]);
    let mut r = s.raw();
    assert_eq!(counts(&mut r), (0, 0));
    // A list waiter on a key that does not exist.
    let mut list_waiter = s.raw();
    list_waiter.send(&resp::encode(&["BLPOP", "mystream", "0"]));
    wait_blocked(&mut r, 1);
    assert_eq!(counts(&mut r), (1, 0));
    // The key becomes a stream; an XREADGROUP waits on it too: the same key, now also
    // woken on deletion.
    r.cmd(&["XADD", "mystream", "666", "key", "value"]);
    r.cmd(&["XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM"]);
    let mut group_waiter = s.raw();
    group_waiter.send(&resp::encode(&[
        "XREADGROUP",
        "GROUP",
        "mygroup",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "mystream",
        ">",
    ]));
    wait_blocked(&mut r, 2);
    assert_eq!(counts(&mut r), (1, 1));
    // Two more keys, one on each worker with two threads (a BLPOP on several keys).
    let mut many = s.raw();
    many.send(&resp::encode(&["BLPOP", "k1", "k2", "k3", "0"]));
    wait_blocked(&mut r, 3);
    assert_eq!(counts(&mut r), (4, 1));
    assert_eq!(r.cmd(&["LPUSH", "k2", "x"]), int(1));
    assert_eq!(many.read_value(), arr(vec![bulk("k2"), bulk("x")]));
    wait_blocked(&mut r, 2);
    assert_eq!(counts(&mut r), (1, 1));
    // Deleting the stream answers the XREADGROUP (NOGROUP); the list waiter stays.
    r.cmd(&["DEL", "mystream"]);
    assert!(matches!(group_waiter.read_value(), Value::Error(e) if e.starts_with("NOGROUP")));
    wait_blocked(&mut r, 1);
    assert_eq!(counts(&mut r), (1, 0));
    // A waiter that disconnects leaves no blocking key.
    drop(list_waiter);
    wait_blocked(&mut r, 0);
    assert_eq!(counts(&mut r), (0, 0));
}

#[test]
fn blocking_keys_threads_1() {
    blocking_keys("1");
}

#[test]
fn blocking_keys_threads_2() {
    blocking_keys("2");
}
