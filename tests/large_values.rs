//! Values bigger than a data block (decision 0019): a 100 MiB string goes through SET, GET,
//! APPEND, GETRANGE, SETRANGE, STRLEN and a clean restart; `kill -9` while a 100 MiB SET is
//! in flight under `appendfsync always` leaves the old or the new value, whole, never torn;
//! values over `proto-max-bulk-len` get Redis's errors; DEL, overwrite and expiry give a
//! big value's space back; RENAME, COPY and MOVE across workers, defrag and an index
//! checkpoint keep big values whole.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::*;
use redis::Commands;

const MIB: usize = 1 << 20;

/// A value of `len` bytes that differs in every 4 KiB page and between versions: a 1 MiB
/// pseudo-random pattern (seeded by `version`) with the page number and version stamped at
/// the start of every page.
fn big_value(version: u32, len: usize) -> Vec<u8> {
    let pattern = Rng::new(u64::from(version)).bytes(MIB);
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        let n = (len - v.len()).min(pattern.len());
        v.extend_from_slice(&pattern[..n]);
    }
    for (page, at) in (0..len).step_by(4096).enumerate() {
        let stamp = [version.to_le_bytes(), (page as u32).to_le_bytes()].concat();
        let n = stamp.len().min(len - at);
        v[at..at + n].copy_from_slice(&stamp[..n]);
    }
    v
}

/// Asserts `got` is `want` without printing megabytes: the first differing offset.
fn assert_same(got: &[u8], want: &[u8], what: &str) {
    if got == want {
        return;
    }
    let at = got.iter().zip(want).position(|(a, b)| a != b);
    panic!(
        "{what}: {} bytes, {} expected; first difference at {at:?}",
        got.len(),
        want.len()
    );
}

fn get(c: &mut redis::Connection, key: &str) -> Option<Vec<u8>> {
    c.get(key).expect("GET")
}

fn info_storage(c: &mut redis::Connection, field: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("storage").query(c).expect("INFO");
    info_field(&info, &format!("storage_{field}"))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("INFO storage has no storage_{field}"))
}

/// A client once the server has loaded its data (Redis answers LOADING until then).
fn loaded_client(s: &Server) -> redis::Connection {
    let mut c = s.client();
    wait_for(Duration::from_secs(30), "the data set to load", || {
        c.get::<_, Option<Vec<u8>>>("probe").is_ok()
    });
    c
}

/// Waits until `cond` holds (polling), panicking with `what` after `timeout`.
fn wait_for(timeout: Duration, what: &str, cond: impl FnMut() -> bool) {
    assert!(wait_until(timeout, cond), "timed out waiting for {what}");
}

/// One 100 MiB value through every string command that reads or changes it, then a
/// clean restart. APPEND and SETRANGE write only the chunks they change.
#[test]
fn hundred_mib_value_set_get_append_ranges_and_restart() {
    // everysec is Skerry's default; named so that Redis runs with its AOF (tests/common).
    let mut s = Server::start(&["--appendfsync", "everysec"]);
    let mut c = s.client();
    let len = 100 * MIB;
    let mut model = big_value(1, len);
    let _: () = c.set("big", &model).unwrap();
    let _: () = c.set("small", "x").unwrap();
    assert_eq!(c.strlen::<_, usize>("big").unwrap(), len);
    assert_same(&get(&mut c, "big").unwrap(), &model, "GET after SET");
    if !is_redis() {
        // The chunks take the value's bytes plus their headers, no more.
        let live = info_storage(&mut c, "live_bytes") as usize;
        assert!(
            live >= len && live < len + len / 100,
            "live bytes {live} for a {len}-byte value"
        );
        let enc: String = redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg("big")
            .query(&mut c)
            .unwrap();
        assert_eq!(enc, "raw");
    }

    let appended_before = if is_redis() {
        0
    } else {
        info_storage(&mut c, "records_appended")
    };
    let tail = b"<-- the tail, across a chunk boundary";
    let new_len: usize = c.append("big", &tail[..]).unwrap();
    model.extend_from_slice(tail);
    assert_eq!(new_len, model.len());

    // SETRANGE across the boundary of chunks 49 and 50, and one inside chunk 7.
    let at = 50 * MIB - 3;
    let n: usize = c.setrange("big", at as isize, "XYZXYZ").unwrap();
    assert_eq!(n, model.len());
    model[at..at + 6].copy_from_slice(b"XYZXYZ");
    let n: usize = c.setrange("big", (7 * MIB + 5) as isize, "inside").unwrap();
    assert_eq!(n, model.len());
    model[7 * MIB + 5..7 * MIB + 11].copy_from_slice(b"inside");
    if !is_redis() {
        // APPEND: the last chunk and a new one, root, end marker; each SETRANGE: the chunks
        // it touches (two, then one), root, end marker. Never the whole value again.
        let appended = info_storage(&mut c, "records_appended") - appended_before;
        assert!(
            appended <= 12,
            "APPEND and two SETRANGEs appended {appended} records"
        );
    }

    let range = |c: &mut redis::Connection, a: isize, b: isize| -> Vec<u8> {
        c.getrange("big", a, b).unwrap()
    };
    assert_eq!(
        range(&mut c, at as isize - 2, at as isize + 7),
        &model[at - 2..=at + 7]
    );
    assert_eq!(range(&mut c, 0, 9), &model[..10]);
    assert_eq!(range(&mut c, -20, -1), &model[model.len() - 20..]);
    assert_eq!(
        range(&mut c, 99 * MIB as isize, 99 * MIB as isize + 4095),
        &model[99 * MIB..99 * MIB + 4096]
    );
    assert_eq!(c.strlen::<_, usize>("big").unwrap(), model.len());
    assert_same(
        &get(&mut c, "big").unwrap(),
        &model,
        "GET after APPEND and SETRANGE",
    );

    s.stop_clean();
    s.start_again();
    let mut c = loaded_client(&s);
    assert_eq!(c.strlen::<_, usize>("big").unwrap(), model.len());
    assert_same(
        &get(&mut c, "big").unwrap(),
        &model,
        "GET after a clean restart",
    );
    assert_eq!(get(&mut c, "small").unwrap(), b"x");
    let dbsize: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(dbsize, 2, "chunks are not keys");
}

/// `kill -9` while a 100 MiB SET is in flight (appendfsync always): after each restart the
/// key holds one of the versions that may have landed, whole; an acknowledged SET is
/// always there.
#[test]
fn kill_9_during_a_hundred_mib_set_leaves_old_or_new_never_torn() {
    let mut s = Server::start(&["--appendfsync", "always"]);
    let len = 100 * MIB;
    let v1 = big_value(1, len);
    let mut c = s.client();
    let started = Instant::now();
    let _: () = c.set("big", &v1).unwrap();
    // Kills early in the transfer, around the write and sync, and after the reply.
    let set_ms = started.elapsed().as_millis() as u64;
    // What the key may hold: every version from the last acknowledged one on.
    let mut possible: Vec<u32> = vec![1];
    let mut outcomes = Vec::new();
    let cycles = [
        set_ms / 2,
        set_ms * 9 / 10,
        set_ms * 11 / 10,
        set_ms * 2 + 200,
    ];
    for (cycle, kill_after_ms) in (0u32..).zip(cycles) {
        let version = cycle + 2;
        let value = big_value(version, len);
        let mut w = s.client();
        let writer = thread::spawn(move || w.set::<_, _, ()>("big", value).is_ok());
        thread::sleep(Duration::from_millis(kill_after_ms));
        s.kill();
        let acked = writer.join().unwrap();
        if acked {
            possible = vec![version];
        } else {
            possible.push(version);
        }
        s.start_again();
        let mut c = loaded_client(&s);
        let got = get(&mut c, "big").expect("the key is gone");
        let found = possible
            .iter()
            .copied()
            .find(|&v| got.len() == len && got[..4] == v.to_le_bytes())
            .unwrap_or_else(|| {
                panic!(
                    "cycle {cycle}: {} bytes starting {:?}, one of versions {possible:?} expected",
                    got.len(),
                    &got[..got.len().min(8)]
                )
            });
        assert_same(&got, &big_value(found, len), "value after kill -9");
        outcomes.push((acked, found));
        possible = vec![found];
        // An acknowledged small write next to it survives too.
        let _: () = c.set(format!("ack{cycle}"), cycle).unwrap();
    }
    let mut c = s.client();
    for cycle in 0..cycles.len() as u32 {
        let v: Option<u32> = c.get(format!("ack{cycle}")).unwrap();
        assert_eq!(v, Some(cycle));
    }
    eprintln!("SET took {set_ms} ms; (acknowledged, version found) per cycle: {outcomes:?}");
}

/// Over `proto-max-bulk-len`: a longer bulk is a protocol error (the connection closes, as
/// in Redis); APPEND and SETRANGE that would grow a value past it get Redis's error and
/// change nothing. A value of exactly the limit is stored.
#[test]
fn values_over_proto_max_bulk_len_are_refused_with_redis_errors() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "2mb"]), ok());
    let limit = 2 * MIB;
    let at_limit = big_value(7, limit);
    assert_eq!(r.cmd_bytes(&[b"SET", b"k", &at_limit]), ok());
    assert_eq!(r.cmd(&["STRLEN", "k"]), int(limit as i64));
    assert_eq!(
        r.cmd(&["APPEND", "k", "x"]),
        err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
    assert_eq!(
        r.cmd(&["SETRANGE", "k", &(limit - 1).to_string(), "xy"]),
        err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
    assert_eq!(
        r.cmd(&["SETRANGE", "fresh", &limit.to_string(), "x"]),
        err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
    assert_eq!(r.cmd(&["EXISTS", "fresh"]), int(0));
    match r.cmd_bytes(&[b"GET", b"k"]) {
        Value::Bulk(v) => assert_same(&v, &at_limit, "value after refused growth"),
        other => panic!("GET: {other:?}"),
    }
    // One byte over the limit in a request: Redis's protocol error, then the connection
    // closes (the bulk itself is never sent).
    let mut p = s.raw();
    p.send(format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${}\r\n", limit + 1).as_bytes());
    assert_eq!(
        String::from_utf8_lossy(&p.expect_closed()),
        "-ERR Protocol error: invalid bulk length\r\n"
    );
    assert_eq!(r.cmd(&["STRLEN", "k"]), int(limit as i64));
}

/// SETRANGE, SETBIT and BITFIELD with a big offset make a value of hundreds of MiB from a one-byte
/// argument: on a fresh server with no flags (a data file that starts small and grows) they
/// wait for the file to grow instead of failing with "no space", on one worker and on two,
/// and the values are whole after a restart.
#[test]
fn setrange_and_setbit_grow_big_values_in_a_growing_data_file() {
    skip_if_redis!();
    for threads in ["1", "2"] {
        let mut s = Server::start(&["--threads", threads]);
        let mut r = s.raw();
        // First, on the fresh data file.
        assert_eq!(
            r.cmd(&[
                "BITFIELD",
                "bf",
                "GET",
                "u8",
                "0",
                "SET",
                "u8",
                "#100000000",
                "255"
            ]),
            Value::Array(vec![int(0), int(0)])
        );
        assert_eq!(
            r.cmd(&["SETRANGE", "sr", "200000000", "x"]),
            int(200_000_001)
        );
        assert_eq!(r.cmd(&["SETBIT", "sb", "400000000", "1"]), int(0));
        assert_eq!(
            r.cmd(&["SETRANGE", "sr2", "150000000", "yz"]),
            int(150_000_002)
        );
        for _ in 0..2 {
            assert_eq!(r.cmd(&["STRLEN", "sr"]), int(200_000_001));
            assert_eq!(
                r.cmd(&["GETRANGE", "sr", "199999998", "-1"]),
                Value::Bulk(b"\0\0x".to_vec())
            );
            assert_eq!(r.cmd(&["STRLEN", "sb"]), int(50_000_001));
            assert_eq!(r.cmd(&["GETBIT", "sb", "400000000"]), int(1));
            assert_eq!(r.cmd(&["BITCOUNT", "sb"]), int(1));
            assert_eq!(
                r.cmd(&["GETRANGE", "sr2", "149999999", "-1"]),
                Value::Bulk(b"\0yz".to_vec())
            );
            assert_eq!(r.cmd(&["STRLEN", "bf"]), int(100_000_001));
            assert_eq!(
                r.cmd(&["BITFIELD_RO", "bf", "GET", "u8", "#100000000"]),
                Value::Array(vec![int(255)])
            );
            s.stop_clean();
            s.start_again();
            r = s.raw();
        }
    }
}

/// DEL, overwrite and expiry of a big value give its chunks' space back.
#[test]
fn del_overwrite_and_expiry_free_a_big_values_chunks() {
    skip_if_redis!(); // INFO storage
    let s = Server::start(&["--appendfsync", "always"]);
    let mut c = s.client();
    let len = 20 * MIB;
    let base = info_storage(&mut c, "live_bytes");
    let live = |c: &mut redis::Connection| info_storage(c, "live_bytes").saturating_sub(base);
    let check_freed = |c: &mut redis::Connection, what: &str| {
        wait_for(Duration::from_secs(5), what, || live(c) < 64 * 1024);
    };

    let _: () = c.set("a", big_value(1, len)).unwrap();
    assert!(live(&mut c) >= len as u64);
    let _: usize = c.del("a").unwrap();
    check_freed(&mut c, "DEL to free the chunks");

    let _: () = c.set("a", big_value(2, len)).unwrap();
    let _: () = c.set("a", "small now").unwrap();
    check_freed(&mut c, "an overwrite to free the chunks");
    assert_eq!(get(&mut c, "a").unwrap(), b"small now");

    // A big value over a big value: the old chunks go.
    let _: () = c.set("a", big_value(3, len)).unwrap();
    let _: () = c.set("a", big_value(4, len / 2)).unwrap();
    let l = live(&mut c);
    wait_for(Duration::from_secs(5), "the old chunks to be freed", || {
        live(&mut c) < (len / 2 + len / 50) as u64
    });
    assert!(l >= (len / 2) as u64);
    assert_same(&get(&mut c, "a").unwrap(), &big_value(4, len / 2), "GET");

    let _: bool = c.pexpire("a", 200).unwrap();
    assert_same(
        &get(&mut c, "a").unwrap(),
        &big_value(4, len / 2),
        "GET with a TTL",
    );
    wait_for(
        Duration::from_secs(5),
        "the expired value to be freed",
        || live(&mut c) < 64 * 1024,
    );
    assert_eq!(get(&mut c, "a"), None);
}

/// Which of `workers` owns `key` (CRC16 slot modulo the workers, as the server).
fn owner(key: &str, workers: u16) -> u16 {
    key_slot(key.as_bytes()) % workers
}

/// A key named `prefix<n>` owned by `worker` of 2.
fn key_on(prefix: &str, worker: u16) -> String {
    (0..)
        .map(|n| format!("{prefix}{n}"))
        .find(|k| owner(k, 2) == worker)
        .unwrap()
}

/// RENAME, COPY and MOVE of big values between keys of different workers, then a restart.
#[test]
fn rename_copy_and_move_of_big_values_across_workers() {
    let mut s = Server::start(&["--threads", "2", "--appendfsync", "always"]);
    let mut c = s.client();
    let len = 20 * MIB;
    let (a, b, d) = (key_on("a", 0), key_on("b", 1), key_on("d", 0));
    let v = big_value(5, len);
    let _: () = c.set(&a, &v).unwrap();
    let _: bool = c.expire(&a, 1000).unwrap();
    let _: () = redis::cmd("RENAME").arg(&a).arg(&b).query(&mut c).unwrap();
    assert_eq!(get(&mut c, &a), None);
    assert_same(&get(&mut c, &b).unwrap(), &v, "RENAME across workers");
    let ttl: i64 = c.ttl(&b).unwrap();
    assert!(ttl > 900, "TTL {ttl} after RENAME");

    let copied: bool = redis::cmd("COPY").arg(&b).arg(&d).query(&mut c).unwrap();
    assert!(copied);
    assert_same(&get(&mut c, &d).unwrap(), &v, "COPY across workers");
    // The copy is its own value: changing it leaves the source alone.
    let _: usize = c.setrange(&d, 3 * MIB as isize, "copy").unwrap();
    assert_same(
        &get(&mut c, &b).unwrap(),
        &v,
        "source after changing the copy",
    );

    let moved: bool = redis::cmd("MOVE").arg(&b).arg(1).query(&mut c).unwrap();
    assert!(moved);
    assert_eq!(get(&mut c, &b), None);
    let mut c1 = s.client();
    let _: () = redis::cmd("SELECT").arg(1).query(&mut c1).unwrap();
    assert_same(&get(&mut c1, &b).unwrap(), &v, "MOVE to db 1");

    let mut copy = v.clone();
    copy[3 * MIB..3 * MIB + 4].copy_from_slice(b"copy");
    s.kill();
    s.start_again();
    let mut c = loaded_client(&s);
    assert_eq!(get(&mut c, &a), None);
    assert_eq!(get(&mut c, &b), None);
    assert_same(&get(&mut c, &d).unwrap(), &copy, "copy after kill -9");
    let _: () = redis::cmd("SELECT").arg(1).query(&mut c).unwrap();
    assert_same(&get(&mut c, &b).unwrap(), &v, "moved value after kill -9");
}

/// Defrag moves the live chunks of a big value out of sparse blocks and the value stays
/// whole, in RAM and after a clean restart from the index checkpoint.
#[test]
fn big_values_survive_defrag_and_a_checkpoint_restart() {
    skip_if_redis!(); // DEFRAG, INFO storage, checkpoints
    let mut s = Server::start(&["--threads", "1"]);
    let mut c = s.client();
    let len = 20 * MIB;
    let mut model = big_value(9, len);
    let _: () = c.set("big", &model).unwrap();
    // Rewrite every other chunk: the blocks holding the first version become half dead.
    for i in (0..len / MIB).step_by(2) {
        let at = i * MIB + 100;
        let _: usize = c.setrange("big", at as isize, "rewritten").unwrap();
        model[at..at + 9].copy_from_slice(b"rewritten");
    }
    let _: () = redis::cmd("DEFRAG")
        .arg("SET")
        .arg("live-ratio")
        .arg(90)
        .arg("free-target")
        .arg(100)
        .query(&mut c)
        .unwrap();
    wait_for(Duration::from_secs(20), "defrag to rewrite a block", || {
        info_storage(&mut c, "defrag_blocks_rewritten") > 0
            && info_storage(&mut c, "defrag_records_moved") > 0
    });
    let _: () = redis::cmd("DEFRAG").arg("PAUSE").query(&mut c).unwrap();
    assert_same(&get(&mut c, "big").unwrap(), &model, "GET after defrag");
    s.stop_clean();
    s.start_again();
    let mut c = loaded_client(&s);
    let info: String = redis::cmd("INFO").arg("storage").query(&mut c).unwrap();
    assert_eq!(
        info_field(&info, "storage_recovery_source").as_deref(),
        Some("checkpoint")
    );
    assert_same(
        &get(&mut c, "big").unwrap(),
        &model,
        "GET after a checkpoint restart",
    );
}
