//! Hash field expiry (Redis 7.4 / 8.0): HEXPIRE and friends, HTTL and friends, HPERSIST,
//! HGETDEL, HGETEX, HSETEX, HSCAN NOVALUES; lazy and active expiry of fields, field TTLs
//! across RENAME / COPY / MOVE, restarts and kill -9, and a differential run against the
//! reference Redis 8.0.2.
//!
//! Except where marked Skerry-only, these tests describe Redis >= 8.0 (HGETDEL, HGETEX and
//! HSETEX are 8.0 commands): they pass against `SKERRY_REDIS_SERVER=.../redis-server`
//! 8.0.2 with `SKERRY_TEST_SERVER=redis`.
//!
//! `SKERRY_HFE_DIFF_OPS` sets the number of operations of the differential test (default
//! 3000 per thread setting); `SKERRY_HFE_DIFF_SEED` adds to its seeds.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NO_FIELDS: &str = "ERR Mandatory argument FIELDS is missing or not at the right position";
const NUMFIELDS: &str = "ERR The `numfields` parameter must match the number of arguments";

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn ints(v: &[i64]) -> Value {
    arr(v.iter().map(|&i| int(i)).collect())
}

fn encoding(r: &mut Raw, key: &str) -> String {
    match r.cmd(&["OBJECT", "ENCODING", key]) {
        Value::Null => String::new(),
        v => v.text(),
    }
}

/// Waits up to `secs` for `f` to hold.
fn wait_for(secs: u64, f: impl FnMut() -> bool) -> bool {
    wait_until(Duration::from_secs(secs), f)
}

#[test]
fn expiry_commands_reply_as_redis() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let far = now_ms() + 1_000_000_000;
    let far_s = far.to_string();
    assert_eq!(r.cmd(&["HSET", "h", "a", "1", "b", "2", "c", "3"]), int(3));
    assert_eq!(encoding(&mut r, "h"), "listpack");
    // Codes: -2 no field, 1 set, 0 condition not met, 2 deleted (time not in the future).
    assert_eq!(
        r.cmd(&["HPEXPIREAT", "h", &far_s, "FIELDS", "3", "a", "b", "zz"]),
        ints(&[1, 1, -2])
    );
    assert_eq!(encoding(&mut r, "h"), "listpackex");
    let later = (far + 10).to_string();
    assert_eq!(
        r.cmd(&["HPEXPIREAT", "h", &later, "NX", "FIELDS", "2", "a", "c"]),
        ints(&[0, 1])
    );
    assert_eq!(
        r.cmd(&["HPEXPIREAT", "h", &later, "GT", "FIELDS", "2", "a", "c"]),
        ints(&[1, 0])
    );
    assert_eq!(
        r.cmd(&["HPEXPIREAT", "h", &far_s, "LT", "FIELDS", "1", "a"]),
        ints(&[1])
    );
    assert_eq!(
        r.cmd(&["HPEXPIRETIME", "h", "FIELDS", "4", "a", "b", "c", "zz"]),
        ints(&[far, far, far + 10, -2])
    );
    assert_eq!(
        r.cmd(&["HEXPIRETIME", "h", "FIELDS", "1", "c"]),
        ints(&[(far + 10 + 999) / 1000])
    );
    let ttl = r.cmd(&["HTTL", "h", "FIELDS", "1", "a"]);
    let Value::Array(t) = ttl else { panic!() };
    assert!((999_990..=1_000_000).contains(&t[0].int()), "{t:?}");
    // Listpackex order: by expiry, fields without one last.
    assert_eq!(r.cmd(&["HKEYS", "h"]), bulks(&["a", "b", "c"]));
    assert_eq!(
        r.cmd(&["HPERSIST", "h", "FIELDS", "3", "a", "a", "zz"]),
        ints(&[1, -1, -2])
    );
    assert_eq!(r.cmd(&["HKEYS", "h"]), bulks(&["b", "c", "a"]));
    assert_eq!(
        r.cmd(&["HPEXPIRE", "h", "0", "FIELDS", "1", "b"]),
        ints(&[2])
    );
    assert_eq!(r.cmd(&["HGETALL", "h"]), bulks(&["c", "3", "a", "1"]));
    // Errors, in Redis's order.
    assert_eq!(
        r.cmd(&["HEXPIRE", "h", "-1", "FIELDS", "1", "a"]),
        err("ERR invalid expire time, must be >= 0")
    );
    assert_eq!(
        r.cmd(&["HEXPIRE", "h", "70368744177664", "FIELDS", "1", "a"]),
        err("ERR invalid expire time in 'hexpire' command")
    );
    assert_eq!(
        r.cmd(&["HEXPIRE", "h", "10", "FIELDS", "0", "a"]),
        err("ERR Parameter `numFields` should be greater than 0")
    );
    assert_eq!(
        r.cmd(&["HEXPIRE", "h", "10", "FIELDS", "2", "a"]),
        err(NUMFIELDS)
    );
    assert_eq!(
        r.cmd(&["HEXPIRE", "h", "10", "XX", "1", "a"]),
        err(NO_FIELDS)
    );
    assert_eq!(
        r.cmd(&["HTTL", "h", "FIELDS", "x", "a"]),
        err("ERR Number of fields must be a positive integer")
    );
    assert_eq!(
        r.cmd(&["HEXPIRE", "nokey", "10", "FIELDS", "2", "a", "b"]),
        ints(&[-2, -2])
    );
    assert_eq!(r.cmd(&["HTTL", "nokey", "FIELDS", "1", "a"]), ints(&[-2]));
    assert_eq!(
        r.cmd(&["HPERSIST", "nokey", "FIELDS", "1", "a"]),
        ints(&[-2])
    );
    assert_eq!(r.cmd(&["SET", "s", "x"]), ok());
    for c in [
        &["HEXPIRE", "s", "10", "FIELDS", "1", "a"][..],
        &["HTTL", "s", "FIELDS", "1", "a"],
        &["HPERSIST", "s", "FIELDS", "1", "a"],
        &["HGETDEL", "s", "FIELDS", "1", "a"],
        &["HGETEX", "s", "FIELDS", "1", "a"],
        &["HSETEX", "s", "FIELDS", "1", "a", "b"],
    ] {
        assert_eq!(r.cmd(c), err(WRONGTYPE), "{c:?}");
    }
    // A plain listpack answers -1 / -2 without converting.
    assert_eq!(r.cmd(&["HSET", "p", "a", "1"]), int(1));
    assert_eq!(
        r.cmd(&["HTTL", "p", "FIELDS", "2", "a", "b"]),
        ints(&[-1, -2])
    );
    assert_eq!(
        r.cmd(&["HPERSIST", "p", "FIELDS", "2", "a", "b"]),
        ints(&[-1, -2])
    );
    assert_eq!(encoding(&mut r, "p"), "listpack");
}

#[test]
fn hgetdel_hgetex_hsetex() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let far = (now_ms() + 1_000_000_000).to_string();
    assert_eq!(r.cmd(&["HSET", "h", "x", "1", "y", "2", "z", "3"]), int(3));
    assert_eq!(
        r.cmd(&["HGETDEL", "h", "FIELDS", "2", "x", "nope"]),
        arr(vec![bulk("1"), Value::Null])
    );
    assert_eq!(r.cmd(&["HGETDEL", "h", "FIELDS", "2", "y"]), err(NUMFIELDS));
    assert_eq!(
        r.cmd(&["HGETDEL", "h", "FIELDS", "0"]),
        err("ERR wrong number of arguments for 'hgetdel' command")
    );
    assert_eq!(
        r.cmd(&["HGETDEL", "h", "FIELDS", "2", "y", "z"]),
        bulks(&["2", "3"])
    );
    assert_eq!(
        r.cmd(&["EXISTS", "h"]),
        int(0),
        "the last field takes the key"
    );

    assert_eq!(r.cmd(&["HSET", "g", "x", "1", "y", "2"]), int(2));
    assert_eq!(r.cmd(&["HGETEX", "g", "FIELDS", "1", "x"]), bulks(&["1"]));
    assert_eq!(encoding(&mut r, "g"), "listpack");
    assert_eq!(
        r.cmd(&["HGETEX", "g", "PXAT", &far, "FIELDS", "2", "x", "nope"]),
        arr(vec![bulk("1"), Value::Null])
    );
    assert_eq!(encoding(&mut r, "g"), "listpackex");
    assert_eq!(
        r.cmd(&["HPEXPIRETIME", "g", "FIELDS", "2", "x", "y"]),
        ints(&[far.parse().unwrap(), -1])
    );
    assert_eq!(
        r.cmd(&["HGETEX", "g", "PERSIST", "FIELDS", "1", "x"]),
        bulks(&["1"])
    );
    assert_eq!(r.cmd(&["HTTL", "g", "FIELDS", "1", "x"]), ints(&[-1]));
    assert_eq!(
        r.cmd(&["HGETEX", "g", "EX", "0", "FIELDS", "1", "x"]),
        bulks(&["1"])
    );
    assert_eq!(r.cmd(&["HGETALL", "g"]), bulks(&["y", "2"]));
    assert_eq!(
        r.cmd(&["HGETEX", "g", "EX", "-1", "FIELDS", "1", "y"]),
        err("ERR invalid expire time, must be >= 0")
    );
    assert_eq!(
        r.cmd(&["HGETEX", "nokey", "EX", "10", "FIELDS", "2", "a", "b"]),
        arr(vec![Value::Null, Value::Null])
    );

    assert_eq!(
        r.cmd(&["HSETEX", "e", "FIELDS", "2", "a", "1", "b", "2"]),
        int(1)
    );
    assert_eq!(encoding(&mut r, "e"), "listpack");
    assert_eq!(
        r.cmd(&["HSETEX", "e", "PXAT", &far, "FIELDS", "1", "a", "5"]),
        int(1)
    );
    assert_eq!(encoding(&mut r, "e"), "listpackex");
    assert_eq!(
        r.cmd(&["HSETEX", "e", "FNX", "FIELDS", "1", "a", "7"]),
        int(0)
    );
    assert_eq!(
        r.cmd(&["HSETEX", "e", "FNX", "FIELDS", "1", "c", "7"]),
        int(1)
    );
    assert_eq!(
        r.cmd(&["HSETEX", "e", "FXX", "FIELDS", "2", "c", "d", "1", "2"]),
        int(0)
    );
    // KEEPTTL keeps the expiry, no option clears it (as HSET).
    assert_eq!(
        r.cmd(&["HSETEX", "e", "FXX", "KEEPTTL", "FIELDS", "2", "a", "8", "b", "9"]),
        int(1)
    );
    assert_eq!(
        r.cmd(&["HPEXPIRETIME", "e", "FIELDS", "2", "a", "b"]),
        ints(&[far.parse().unwrap(), -1])
    );
    assert_eq!(r.cmd(&["HSETEX", "e", "FIELDS", "1", "a", "10"]), int(1));
    assert_eq!(r.cmd(&["HTTL", "e", "FIELDS", "1", "a"]), ints(&[-1]));
    assert_eq!(
        r.cmd(&["HSETEX", "e", "PX", "0", "FIELDS", "1", "a", "1"]),
        int(1)
    );
    assert_eq!(r.cmd(&["HEXISTS", "e", "a"]), int(0));
    assert_eq!(
        r.cmd(&["HSETEX", "e", "EX", "10", "KEEPTTL", "FIELDS", "1", "a", "1"]),
        err("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified")
    );
    assert_eq!(
        r.cmd(&["HSETEX", "e", "FNX", "FXX", "FIELDS", "1", "a", "1"]),
        err("ERR Only one of FXX or FNX arguments can be specified")
    );
    assert_eq!(
        r.cmd(&["HSETEX", "e", "FIELDS", "0", "a", "1"]),
        err("ERR invalid number of fields")
    );
    assert_eq!(
        r.cmd(&["HSETEX", "e", "EX", "10", "FOO", "FIELDS", "1", "a", "1"]),
        err("ERR unknown argument: FOO")
    );
    assert_eq!(
        r.cmd(&["HSETEX", "e", "FIELDS", "2", "a", "1"]),
        err("ERR wrong number of arguments for 'hsetex' command")
    );
    assert_eq!(
        r.cmd(&["HSETEX", "nokey", "FXX", "FIELDS", "1", "a", "1"]),
        int(0)
    );
    assert_eq!(r.cmd(&["EXISTS", "nokey"]), int(0));
    assert_eq!(
        r.cmd(&["HSETEX", "past", "PXAT", "1", "FIELDS", "1", "a", "1"]),
        int(1)
    );
    assert_eq!(r.cmd(&["EXISTS", "past"]), int(0));
    // HSCAN NOVALUES.
    assert_eq!(
        r.cmd(&["HSCAN", "e", "0", "NOVALUES"]),
        arr(vec![bulk("0"), bulks(&["b", "c"])])
    );
}

#[test]
fn hset_clears_a_field_ttl_and_hincrby_keeps_it() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let far = now_ms() + 1_000_000_000;
    let far_s = far.to_string();
    assert_eq!(r.cmd(&["HSET", "h", "n", "1", "m", "x"]), int(2));
    r.cmd(&["HPEXPIREAT", "h", &far_s, "FIELDS", "2", "n", "m"]);
    assert_eq!(r.cmd(&["HINCRBY", "h", "n", "5"]), int(6));
    assert_eq!(r.cmd(&["HINCRBYFLOAT", "h", "n", "0.5"]), bulk("6.5"));
    assert_eq!(
        r.cmd(&["HPEXPIRETIME", "h", "FIELDS", "1", "n"]),
        ints(&[far])
    );
    assert_eq!(r.cmd(&["HSET", "h", "m", "y"]), int(0));
    assert_eq!(
        r.cmd(&["HPEXPIRETIME", "h", "FIELDS", "1", "m"]),
        ints(&[-1])
    );
    assert_eq!(r.cmd(&["HSETNX", "h", "n", "z"]), int(0));
    assert_eq!(
        r.cmd(&["HPEXPIRETIME", "h", "FIELDS", "1", "n"]),
        ints(&[far])
    );
}

#[test]
fn expired_fields_are_never_served_and_go_lazily() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), ok());
    assert_eq!(r.cmd(&["HSET", "h", "a", "1", "b", "2", "c", "3"]), int(3));
    assert_eq!(
        r.cmd(&["HPEXPIRE", "h", "50", "FIELDS", "2", "a", "b"]),
        ints(&[1, 1])
    );
    std::thread::sleep(Duration::from_millis(150));
    // Not deleted yet (no active expiry): HLEN counts them, as Redis's does.
    assert_eq!(r.cmd(&["HLEN", "h"]), int(3));
    assert_eq!(r.cmd(&["HGETALL", "h"]), bulks(&["c", "3"]));
    assert_eq!(r.cmd(&["HKEYS", "h"]), bulks(&["c"]));
    assert_eq!(r.cmd(&["HVALS", "h"]), bulks(&["3"]));
    assert_eq!(
        r.cmd(&["HSCAN", "h", "0"]),
        arr(vec![bulk("0"), bulks(&["c", "3"])])
    );
    assert_eq!(
        r.cmd(&["HTTL", "h", "FIELDS", "2", "a", "c"]),
        ints(&[-2, -1])
    );
    assert_eq!(r.cmd(&["HPERSIST", "h", "FIELDS", "1", "a"]), ints(&[-2]));
    // HGET deletes the field it finds expired.
    assert_eq!(r.cmd(&["HGET", "h", "a"]), Value::Null);
    assert_eq!(r.cmd(&["HLEN", "h"]), int(2));
    assert_eq!(r.cmd(&["HEXISTS", "h", "b"]), int(0));
    assert_eq!(r.cmd(&["HLEN", "h"]), int(1));
    // The last field going takes the key.
    assert_eq!(
        r.cmd(&["HPEXPIRE", "h", "30", "FIELDS", "1", "c"]),
        ints(&[1])
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(r.cmd(&["EXISTS", "h"]), int(1));
    assert_eq!(
        r.cmd(&["HMGET", "h", "c", "d"]),
        arr(vec![Value::Null, Value::Null])
    );
    assert_eq!(r.cmd(&["EXISTS", "h"]), int(0));
    // HRANDFIELD deletes every expired field first.
    assert_eq!(r.cmd(&["HSET", "r", "a", "1", "b", "2"]), int(2));
    assert_eq!(
        r.cmd(&["HPEXPIRE", "r", "30", "FIELDS", "1", "a"]),
        ints(&[1])
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(r.cmd(&["HRANDFIELD", "r"]), bulk("b"));
    assert_eq!(r.cmd(&["HLEN", "r"]), int(1));
    // HINCRBY on an expired field starts from 0.
    assert_eq!(r.cmd(&["HSET", "i", "n", "10", "o", "1"]), int(2));
    assert_eq!(
        r.cmd(&["HPEXPIRE", "i", "30", "FIELDS", "1", "n"]),
        ints(&[1])
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(r.cmd(&["HINCRBY", "i", "n", "1"]), int(1));
    assert_eq!(r.cmd(&["HTTL", "i", "FIELDS", "1", "n"]), ints(&[-1]));
    assert_eq!(r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]), ok());
}

#[test]
fn fields_expire_without_access() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    for k in 0..20 {
        let key = format!("h{k}");
        assert_eq!(r.cmd(&["HSET", &key, "a", "1", "b", "2"]), int(2));
        assert_eq!(
            r.cmd(&["HPEXPIRE", &key, "100", "FIELDS", "1", "a"]),
            ints(&[1])
        );
        let key = format!("gone{k}");
        assert_eq!(r.cmd(&["HSET", &key, "a", "1", "b", "2"]), int(2));
        assert_eq!(
            r.cmd(&["HPEXPIRE", &key, "100", "FIELDS", "2", "a", "b"]),
            ints(&[1, 1])
        );
    }
    // HLEN counts fields not deleted yet: it drops only once the active expiry ran.
    assert!(
        wait_for(5, || (0..20)
            .all(|k| r.cmd(&["HLEN", &format!("h{k}")]) == int(1))),
        "fields were not deleted by the active expiry"
    );
    assert!(
        wait_for(5, || r.cmd(&["DBSIZE"]) == int(20)),
        "hashes whose last field expired were not deleted"
    );
    let stats = r.cmd(&["INFO", "stats"]).text();
    assert_eq!(info_field(&stats, "expired_subkeys").as_deref(), Some("60"));
    let ks = r.cmd(&["INFO", "keyspace"]).text();
    let db0 = info_field(&ks, "db0").expect("db0");
    assert!(db0.ends_with(",subexpiry=0"), "{db0}");
    assert_eq!(
        r.cmd(&["HPEXPIRE", "h0", "100000", "FIELDS", "1", "b"]),
        ints(&[1])
    );
    let ks = r.cmd(&["INFO", "keyspace"]).text();
    let db0 = info_field(&ks, "db0").expect("db0");
    assert!(db0.ends_with(",subexpiry=1"), "{db0}");
}

#[test]
fn rename_copy_and_move_keep_field_ttls() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let far = now_ms() + 1_000_000_000;
    let far_s = far.to_string();
    assert_eq!(r.cmd(&["HSET", "{t}a", "f", "1", "g", "2"]), int(2));
    r.cmd(&["HPEXPIREAT", "{t}a", &far_s, "FIELDS", "1", "f"]);
    assert_eq!(r.cmd(&["RENAME", "{t}a", "{t}b"]), ok());
    assert_eq!(
        r.cmd(&["HPEXPIRETIME", "{t}b", "FIELDS", "2", "f", "g"]),
        ints(&[far, -1])
    );
    assert_eq!(encoding(&mut r, "{t}b"), "listpackex");
    assert_eq!(r.cmd(&["COPY", "{t}b", "{t}c"]), int(1));
    assert_eq!(
        r.cmd(&["HPEXPIRETIME", "{t}c", "FIELDS", "1", "f"]),
        ints(&[far])
    );
    assert_eq!(r.cmd(&["MOVE", "{t}c", "1"]), int(1));
    assert_eq!(r.cmd(&["SELECT", "1"]), ok());
    assert_eq!(
        r.cmd(&["HPEXPIRETIME", "{t}c", "FIELDS", "1", "f"]),
        ints(&[far])
    );
    // A renamed hash still expires its fields actively.
    assert_eq!(
        r.cmd(&["HPEXPIRE", "{t}c", "50", "FIELDS", "2", "f", "g"]),
        ints(&[1, 1])
    );
    assert_eq!(r.cmd(&["RENAME", "{t}c", "{t}d"]), ok());
    assert!(wait_for(5, || r.cmd(&["EXISTS", "{t}d"]) == int(0)));
}

#[test]
fn big_and_grouped_hashes_keep_field_ttls() {
    skip_if_redis!(); // restarts
    let mut s = Server::start(&[]);
    let mut r = s.raw();
    let far = now_ms() + 1_000_000_000;
    let far_s = far.to_string();
    // Big enough to be a hashtable and grouped on the devices.
    let mut args: Vec<String> = vec!["HSET".into(), "big".into()];
    for i in 0..3000 {
        args.push(format!("field:{i}"));
        args.push(format!("value:{i}:{}", "x".repeat(20)));
    }
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(r.cmd(&refs), int(3000));
    assert_eq!(encoding(&mut r, "big"), "hashtable");
    let mut exp = vec![
        "HPEXPIREAT".to_string(),
        "big".into(),
        far_s.clone(),
        "FIELDS".into(),
    ];
    exp.push("1000".into());
    for i in 0..1000 {
        exp.push(format!("field:{i}"));
    }
    let refs: Vec<&str> = exp.iter().map(|s| s.as_str()).collect();
    let Value::Array(codes) = r.cmd(&refs) else {
        panic!()
    };
    assert!(codes.iter().all(|c| *c == int(1)));
    // 500 fields that expire soon.
    let mut soon = vec![
        "HPEXPIRE".to_string(),
        "big".into(),
        "300".into(),
        "FIELDS".into(),
    ];
    soon.push("500".into());
    for i in 2000..2500 {
        soon.push(format!("field:{i}"));
    }
    let refs: Vec<&str> = soon.iter().map(|s| s.as_str()).collect();
    r.cmd(&refs);
    drop(r);
    s.stop_clean();
    s.start_again();
    let mut r = s.raw();
    assert_eq!(encoding(&mut r, "big"), "hashtable");
    assert_eq!(
        r.cmd(&[
            "HPEXPIRETIME",
            "big",
            "FIELDS",
            "3",
            "field:0",
            "field:999",
            "field:1000"
        ]),
        ints(&[far, far, -1])
    );
    // The soon ones go by the active expiry after the restart.
    assert!(
        wait_for(10, || r.cmd(&["HLEN", "big"]) == int(2500)),
        "HLEN {:?}",
        r.cmd(&["HLEN", "big"])
    );
    assert_eq!(r.cmd(&["HGET", "big", "field:2000"]), Value::Null);
    assert_eq!(
        r.cmd(&["HGET", "big", "field:2500"]),
        bulk(&format!("value:2500:{}", "x".repeat(20)))
    );
}

#[test]
fn field_ttls_survive_restarts_and_expire_after_them() {
    skip_if_redis!();
    let mut s = Server::start(&[]);
    let mut r = s.raw();
    let far = now_ms() + 1_000_000_000;
    let far_s = far.to_string();
    assert_eq!(
        r.cmd(&["HSET", "keep", "a", "1", "b", "2", "c", "3"]),
        int(3)
    );
    r.cmd(&["HPEXPIREAT", "keep", &far_s, "FIELDS", "1", "b"]);
    assert_eq!(r.cmd(&["HSET", "soon", "a", "1", "b", "2"]), int(2));
    r.cmd(&["HPEXPIRE", "soon", "200", "FIELDS", "2", "a", "b"]);
    assert_eq!(r.cmd(&["HSET", "half", "a", "1", "b", "2"]), int(2));
    r.cmd(&["HPEXPIRE", "half", "1", "FIELDS", "1", "a"]);
    assert_eq!(r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), ok());
    std::thread::sleep(Duration::from_millis(20));
    let keys_before = r.cmd(&["HKEYS", "keep"]);
    drop(r);
    s.stop_clean();
    s.start_again();
    let mut r = s.raw();
    assert_eq!(r.cmd(&["HKEYS", "keep"]), keys_before);
    assert_eq!(encoding(&mut r, "keep"), "listpackex");
    assert_eq!(
        r.cmd(&["HPEXPIRETIME", "keep", "FIELDS", "3", "a", "b", "c"]),
        ints(&[-1, far, -1])
    );
    // The field that expired before the restart stays expired.
    assert_eq!(r.cmd(&["HGETALL", "half"]), bulks(&["b", "2"]));
    // The restarted server finds the hashes with field TTLs and expires them unasked.
    assert!(wait_for(5, || r.cmd(&["EXISTS", "soon"]) == int(0)));
    assert!(wait_for(5, || r.cmd(&["HLEN", "half"]) == int(1)));
    drop(r);
    s.restart(); // kill -9
    let mut r = s.raw();
    // The deletion may not have been synced before the kill: the fields are still
    // expired, never served, and go again.
    assert_eq!(r.cmd(&["HGETALL", "soon"]), arr(vec![]));
    assert!(wait_for(5, || r.cmd(&["EXISTS", "soon"]) == int(0)));
    assert_eq!(
        r.cmd(&["HPEXPIRETIME", "keep", "FIELDS", "1", "b"]),
        ints(&[far])
    );
}

#[test]
fn acknowledged_field_ttl_changes_survive_kill_9_with_appendfsync_always() {
    skip_if_redis!();
    let mut s = Server::start(&["--appendfsync", "always"]);
    // key -> field -> (value, expiry ms or 0)
    let mut model: BTreeMap<String, BTreeMap<String, (String, i64)>> = BTreeMap::new();
    let mut rng = Rng::new(7);
    let base = now_ms() + 1_000_000_000;
    let mut tmp = 0;
    for round in 0..3 {
        let mut r = s.raw();
        for _ in 0..300 {
            let key = format!("h{}", rng.range(0, 6));
            let field = format!("f{}", rng.range(0, 20));
            let h = model.entry(key.clone()).or_default();
            match rng.range(0, 6) {
                0 | 1 => {
                    let v = format!("v{}", rng.range(0, 1000));
                    let new = h.insert(field.clone(), (v.clone(), 0)).is_none();
                    assert_eq!(r.cmd(&["HSET", &key, &field, &v]), int(i64::from(new)));
                }
                2 => {
                    let t = base + rng.range(0, 1000) as i64;
                    let want = match h.get_mut(&field) {
                        Some(e) => {
                            e.1 = t;
                            1
                        }
                        None => -2,
                    };
                    assert_eq!(
                        r.cmd(&["HPEXPIREAT", &key, &t.to_string(), "FIELDS", "1", &field]),
                        ints(&[want])
                    );
                }
                3 => {
                    let want = match h.get_mut(&field) {
                        Some(e) if e.1 != 0 => {
                            e.1 = 0;
                            1
                        }
                        Some(_) => -1,
                        None => -2,
                    };
                    assert_eq!(
                        r.cmd(&["HPERSIST", &key, "FIELDS", "1", &field]),
                        ints(&[want])
                    );
                }
                4 => {
                    // A field of its own with a short TTL: never served after the restart.
                    tmp += 1;
                    let f = format!("tmp{tmp}");
                    assert_eq!(
                        r.cmd(&["HSETEX", &key, "PX", "1", "FIELDS", "1", &f, "t"]),
                        int(1)
                    );
                }
                _ => {
                    let t = base + rng.range(0, 1000) as i64;
                    let v = format!("x{}", rng.range(0, 1000));
                    h.insert(field.clone(), (v.clone(), t));
                    assert_eq!(
                        r.cmd(&[
                            "HSETEX",
                            &key,
                            "PXAT",
                            &t.to_string(),
                            "FIELDS",
                            "1",
                            &field,
                            &v
                        ]),
                        int(1)
                    );
                }
            }
            if model[&key].is_empty() {
                model.remove(&key);
            }
        }
        drop(r);
        std::thread::sleep(Duration::from_millis(5));
        s.restart(); // SIGKILL, then start on the same directory
        let mut r = s.raw();
        for i in 0..6 {
            let key = format!("h{i}");
            let want = model.get(&key).cloned().unwrap_or_default();
            let got: BTreeMap<String, String> = r
                .cmd(&["HGETALL", &key])
                .pairs()
                .into_iter()
                .map(|(f, v)| (f.text(), v.text()))
                .collect();
            let want_vals: BTreeMap<String, String> = want
                .iter()
                .map(|(f, (v, _))| (f.clone(), v.clone()))
                .collect();
            assert_eq!(got, want_vals, "round {round}, {key}");
            for (f, (_, t)) in &want {
                let exp = if *t == 0 { -1 } else { *t };
                assert_eq!(
                    r.cmd(&["HPEXPIRETIME", &key, "FIELDS", "1", f]),
                    ints(&[exp]),
                    "round {round}, {key} {f}"
                );
            }
        }
    }
}

// ----- differential test against the reference Redis 8.0.2 -----

/// Picks one of `items`.
fn pick<'a>(rng: &mut Rng, items: &[&'a str]) -> &'a str {
    items[rng.range(0, items.len() as u64) as usize]
}

/// The random operation generator of the differential test. Absolute times are in
/// [`Gen::base`, base + 10^6) ms, far in the future; relative ones are far from them and
/// never compared against each other (no GT / LT with a relative time), so that replies do
/// not depend on when each server ran the command.
struct Gen {
    rng: Rng,
    base: i64,
}

impl Gen {
    fn key(&mut self) -> String {
        format!("h{}", self.rng.range(0, 6))
    }
    fn field(&mut self) -> String {
        format!("f{}", self.rng.range(0, 24))
    }
    fn fields(&mut self) -> Vec<String> {
        let n = self.rng.range(1, 4);
        (0..n).map(|_| self.field()).collect()
    }
    fn abs_ms(&mut self) -> String {
        (self.base + self.rng.range(0, 1_000_000) as i64).to_string()
    }
    fn abs_s(&mut self) -> String {
        ((self.base + self.rng.range(0, 1_000_000) as i64) / 1000).to_string()
    }

    /// One command, and whether its reply holds times relative to now.
    fn op(&mut self) -> Vec<String> {
        let key = self.key();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let with_fields = |mut head: Vec<String>, fields: Vec<String>| {
            head.push("FIELDS".into());
            head.push(fields.len().to_string());
            head.extend(fields);
            head
        };
        match self.rng.range(0, 22) {
            0..=2 => {
                let mut c = s(&["HSET", &key]);
                for _ in 0..self.rng.range(1, 4) {
                    c.push(self.field());
                    c.push(format!("v{}", self.rng.range(0, 100)));
                }
                c
            }
            3 | 4 => {
                let mut c = s(&["HSETEX", &key]);
                match self.rng.range(0, 4) {
                    0 => c.push("FNX".into()),
                    1 => c.push("FXX".into()),
                    _ => {}
                }
                match self.rng.range(0, 7) {
                    0 => c.extend(s(&["PX", "500000000"])),
                    1 => c.extend(s(&["EX", "2000000"])),
                    2 => {
                        let t = self.abs_s();
                        c.extend(["EXAT".to_string(), t]);
                    }
                    3 | 4 => {
                        let t = self.abs_ms();
                        c.extend(["PXAT".to_string(), t]);
                    }
                    5 => c.push("KEEPTTL".into()),
                    _ => {}
                }
                let n = self.rng.range(1, 3);
                c.push("FIELDS".into());
                c.push(n.to_string());
                for _ in 0..n {
                    c.push(self.field());
                    c.push(format!("x{}", self.rng.range(0, 100)));
                }
                c
            }
            5 => {
                let mut c = s(&["HGETEX", &key]);
                match self.rng.range(0, 6) {
                    0 => c.extend(s(&["PX", "500000000"])),
                    1 => {
                        let t = self.abs_ms();
                        c.extend(["PXAT".to_string(), t]);
                    }
                    2 => {
                        let t = self.abs_s();
                        c.extend(["EXAT".to_string(), t]);
                    }
                    3 => c.push("PERSIST".into()),
                    _ => {}
                }
                let f = self.fields();
                with_fields(c, f)
            }
            6 => {
                let f = self.fields();
                with_fields(s(&["HGETDEL", &key]), f)
            }
            7..=9 => {
                let (name, t, rel) = match self.rng.range(0, 6) {
                    0 => ("HPEXPIRE", "600000000".to_string(), true),
                    1 => ("HEXPIRE", "3000000".to_string(), true),
                    2 => ("HEXPIREAT", self.abs_s(), false),
                    3 => ("HPEXPIREAT", "1000".to_string(), false),
                    _ => ("HPEXPIREAT", self.abs_ms(), false),
                };
                let mut c = s(&[name, &key, &t]);
                let conds: &[&str] = if rel {
                    &["", "", "NX", "XX"]
                } else {
                    &["", "", "NX", "XX", "GT", "LT"]
                };
                let cond = pick(&mut self.rng, conds);
                if !cond.is_empty() {
                    c.push(cond.to_string());
                }
                let f = self.fields();
                with_fields(c, f)
            }
            10 => {
                let f = self.fields();
                with_fields(s(&["HPERSIST", &key]), f)
            }
            11 => {
                let name = pick(
                    &mut self.rng,
                    &["HTTL", "HPTTL", "HEXPIRETIME", "HPEXPIRETIME"],
                );
                let f = self.fields();
                with_fields(s(&[name, &key]), f)
            }
            12 => {
                let f = self.field();
                s(&["HGET", &key, &f])
            }
            13 => {
                let mut c = s(&["HMGET", &key]);
                c.extend(self.fields());
                c
            }
            14 => s(&[pick(&mut self.rng, &["HGETALL", "HKEYS", "HVALS"]), &key]),
            15 => s(&["HLEN", &key]),
            16 => {
                let mut c = s(&["HDEL", &key]);
                c.extend(self.fields());
                c
            }
            17 => {
                let f = self.field();
                s(&["HINCRBY", &key, &f, "3"])
            }
            18 => {
                let f = self.field();
                s(&[pick(&mut self.rng, &["HEXISTS", "HSTRLEN"]), &key, &f])
            }
            19 => {
                let f = self.field();
                s(&["HSETNX", &key, &f, "nx"])
            }
            20 => match self.rng.range(0, 8) {
                0 => s(&["DEL", &key]),
                1 => s(&["HEXPIRE", &key, "10", "FIELDS", "2", "a"]),
                2 => s(&[
                    "HSETEX", &key, "EX", "10", "KEEPTTL", "FIELDS", "1", "a", "b",
                ]),
                3 => s(&["HGETEX", &key, "EX", "-5", "FIELDS", "1", "a"]),
                4 => s(&["HPERSIST", &key, "FIELDS", "0", "a"]),
                5 => s(&["HTTL", &key, "FIELD", "1", "a"]),
                6 => s(&["HSCAN", &key, "0", "NOVALUES", "COUNT", "1000"]),
                _ => s(&["HRANDFIELD", &key, "0"]),
            },
            _ => s(&["OBJECT", "ENCODING", &key]),
        }
    }
}

/// A reply made comparable: times relative to now become a marker, hashtable orders are
/// sorted.
fn normalize(cmd: &[String], v: Value, base: i64, hashtable: bool) -> Value {
    let name = cmd[0].to_ascii_uppercase();
    let rel = |v: Value, f: &dyn Fn(i64) -> bool| match v {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|i| match i {
                    Value::Integer(t) if t > 0 && !f(t) => Value::Integer(-100),
                    o => o,
                })
                .collect(),
        ),
        o => o,
    };
    match name.as_str() {
        "HTTL" | "HPTTL" => rel(v, &|_| false),
        "HPEXPIRETIME" => rel(v, &|t| (base..base + 1_000_000).contains(&t)),
        "HEXPIRETIME" => rel(v, &|t| {
            (base / 1000..=(base + 1_000_000) / 1000 + 1).contains(&t)
        }),
        "HGETALL" if hashtable => {
            let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = match v {
                Value::Array(items) => items
                    .chunks(2)
                    .map(|c| (c[0].bytes_of(), c[1].bytes_of()))
                    .collect(),
                o => return o,
            };
            pairs.sort();
            Value::Array(
                pairs
                    .into_iter()
                    .flat_map(|(f, v)| [Value::Bulk(f), Value::Bulk(v)])
                    .collect(),
            )
        }
        "HKEYS" | "HVALS" if hashtable => match v {
            Value::Array(mut items) => {
                items.sort_by_key(|i| i.bytes_of());
                Value::Array(items)
            }
            o => o,
        },
        "HSCAN" => match v {
            Value::Array(mut items) if hashtable => {
                if let Some(Value::Array(f)) = items.get_mut(1) {
                    f.sort_by_key(|i| i.bytes_of());
                }
                Value::Array(items)
            }
            o => o,
        },
        _ => v,
    }
}

trait BytesOf {
    fn bytes_of(&self) -> Vec<u8>;
}

impl BytesOf for Value {
    fn bytes_of(&self) -> Vec<u8> {
        match self {
            Value::Bulk(b) => b.clone(),
            Value::Simple(s) => s.clone().into_bytes(),
            o => format!("{o:?}").into_bytes(),
        }
    }
}

fn diff_run(threads: &str, seed: u64) {
    // The commands compared are Redis 8.0's.
    let Some(mut d) = diff::Diff::on_threads("HFE", threads, seed, true) else {
        return;
    };
    let (ops, seed) = (d.ops, d.seed);
    let (a, b) = (&mut d.sk, &mut d.re);
    for r in [&mut *a, &mut *b] {
        assert_eq!(
            r.cmd(&["CONFIG", "SET", "hash-max-listpack-entries", "16"]),
            ok()
        );
        assert_eq!(
            r.cmd(&["CONFIG", "SET", "hash-max-listpack-value", "64"]),
            ok()
        );
    }
    let base = now_ms() + 1_000_000_000;
    let mut g = Gen {
        rng: Rng::new(seed),
        base,
    };
    let mut history: Vec<String> = Vec::new();
    let both = |a: &mut Raw, b: &mut Raw, c: &[String]| {
        let refs: Vec<&str> = c.iter().map(|s| s.as_str()).collect();
        (a.cmd(&refs), b.cmd(&refs))
    };
    for i in 0..ops {
        if i % 1000 == 999 {
            short_ttl_phase(a, b, &mut g, &mut history);
        }
        let c = g.op();
        let (ra, rb) = both(a, b, &c);
        // Orders of a hashtable differ between servers: sort when it is one.
        let key = &c[1.min(c.len() - 1)];
        let hashtable = matches!(
            c[0].to_ascii_uppercase().as_str(),
            "HGETALL" | "HKEYS" | "HVALS" | "HSCAN"
        ) && encoding(b, key) == "hashtable";
        let (na, nb) = (
            normalize(&c, ra.clone(), base, hashtable),
            normalize(&c, rb.clone(), base, hashtable),
        );
        history.push(c.join(" "));
        if na != nb {
            let tail = history.len().saturating_sub(30);
            panic!(
                "threads {threads}, op {i}: {}\n skerry: {ra:?}\n redis:  {rb:?}\nlast ops:\n{}",
                c.join(" "),
                history[tail..].join("\n")
            );
        }
    }
    // The final states agree.
    for k in 0..6 {
        let key = format!("h{k}");
        for c in [
            vec!["HGETALL".to_string(), key.clone()],
            vec!["OBJECT".into(), "ENCODING".into(), key.clone()],
            vec!["HLEN".into(), key.clone()],
        ] {
            let (ra, rb) = both(a, b, &c);
            let ht = encoding(b, &key) == "hashtable";
            assert_eq!(
                normalize(&c, ra, base, ht),
                normalize(&c, rb, base, ht),
                "{c:?}"
            );
        }
    }
}

/// Sets short TTLs on some fields on both servers, waits past them (and past both active
/// expiries), then compares every hash.
fn short_ttl_phase(a: &mut Raw, b: &mut Raw, g: &mut Gen, history: &mut Vec<String>) {
    let mut cmds = Vec::new();
    for k in 0..6 {
        let key = format!("h{k}");
        let mut c = vec!["HPEXPIRE".to_string(), key, "60".into(), "FIELDS".into()];
        let f = g.fields();
        c.push(f.len().to_string());
        c.extend(f);
        cmds.push(c);
    }
    for c in &cmds {
        let refs: Vec<&str> = c.iter().map(|s| s.as_str()).collect();
        let (ra, rb) = (a.cmd(&refs), b.cmd(&refs));
        history.push(c.join(" "));
        assert_eq!(ra, rb, "{c:?}");
    }
    std::thread::sleep(Duration::from_millis(600));
    for k in 0..6 {
        let key = format!("h{k}");
        // Whatever the active expiries did not reach yet goes now (HRANDFIELD deletes
        // every expired field), so that HLEN agrees.
        for c in [
            vec!["HRANDFIELD".to_string(), key.clone(), "0".into()],
            vec!["HLEN".into(), key.clone()],
            vec!["EXISTS".into(), key.clone()],
            vec!["HGETALL".into(), key.clone()],
        ] {
            let refs: Vec<&str> = c.iter().map(|s| s.as_str()).collect();
            let (ra, rb) = (a.cmd(&refs), b.cmd(&refs));
            let ht = encoding(b, &key) == "hashtable";
            history.push(c.join(" "));
            assert_eq!(
                normalize(&c, ra, g.base, ht),
                normalize(&c, rb, g.base, ht),
                "after the short TTLs: {c:?}"
            );
        }
    }
}

#[test]
fn differential_against_redis_8_one_thread() {
    diff_run("1", 0x4fe1);
}

#[test]
fn differential_against_redis_8_two_threads() {
    diff_run("2", 0x4fe2);
}

/// Field expiries follow their hash through SWAPDB: the active expiry deletes the fields in
/// the database the hash is in after the swap, on every worker.
#[test]
fn field_expiry_follows_swapdb() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    for k in 0..20 {
        let key = format!("h{k}");
        assert_eq!(r.cmd(&["HSET", &key, "a", "1", "b", "2"]), int(2));
        assert_eq!(
            r.cmd(&["HPEXPIRE", &key, "300", "FIELDS", "1", "a"]),
            ints(&[1])
        );
    }
    assert_eq!(r.cmd(&["SWAPDB", "0", "1"]), ok());
    assert_eq!(r.cmd(&["DBSIZE"]), int(0));
    assert_eq!(r.cmd(&["SELECT", "1"]), ok());
    assert_eq!(r.cmd(&["DBSIZE"]), int(20));
    // Nothing touches the hashes now (a read would note them again): only the active
    // expiry, which must look for them in database 1, can delete the fields.
    assert!(
        wait_for(5, || {
            let stats = r.cmd(&["INFO", "stats"]).text();
            info_field(&stats, "expired_subkeys").as_deref() == Some("20")
        }),
        "fields of swapped hashes were not deleted by the active expiry"
    );
    for k in 0..20 {
        assert_eq!(r.cmd(&["HLEN", &format!("h{k}")]), int(1));
    }
    let ks = r.cmd(&["INFO", "keyspace"]).text();
    let db1 = info_field(&ks, "db1").expect("db1");
    assert!(db1.starts_with("keys=20,"), "{db1}");
    assert!(db1.ends_with(",subexpiry=0"), "{db1}");
}
