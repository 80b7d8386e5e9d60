//! Sorted-set commands end to end: replies and errors as Redis 7.0.15 gives them (RESP2 and
//! RESP3), score parsing and formatting, OBJECT ENCODING, the *STORE commands, pops and
//! blocking pops, ZSCAN, and persistence across restarts and kill -9.
//!
//! Multi-key commands use keys with one hash tag (`{t}`) so that they share a worker. Every
//! test also passes against Redis 7.0.15 (`SKERRY_TEST_SERVER=redis`), except those marked
//! Skerry-only (persistence).

mod common;

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use common::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const NOT_FLOAT: &str = "ERR value is not a valid float";
const SYNTAX: &str = "ERR syntax error";
const RANGE_NOT_FLOAT: &str = "ERR min or max is not a float";
const RANGE_NOT_LEX: &str = "ERR min or max not valid string range item";

fn start() -> (Server, Raw) {
    let s = Server::start(&[]);
    let r = s.raw();
    (s, r)
}

fn dbl(s: &str) -> Value {
    Value::Double(s.to_string())
}

fn encoding(r: &mut Raw, key: &str) -> String {
    r.cmd(&["OBJECT", "ENCODING", key]).text()
}

fn wrong_arity(cmd: &str) -> Value {
    err(&format!(
        "ERR wrong number of arguments for '{cmd}' command"
    ))
}

/// `ZRANGE key 0 -1 WITHSCORES` as (member, score) strings.
fn all(r: &mut Raw, key: &str) -> Vec<(String, String)> {
    r.cmd(&["ZRANGE", key, "0", "-1", "WITHSCORES"])
        .strings()
        .chunks(2)
        .map(|c| (c[0].clone(), c[1].clone()))
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(m, s)| (m.to_string(), s.to_string()))
        .collect()
}

/// A WRONGTYPE key `str`.
fn string_key(r: &mut Raw, key: &str) {
    assert_eq!(r.cmd(&["SET", key, "v"]), ok());
}

#[test]
fn zadd_basics_and_options() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]), int(3));
    assert_eq!(r.cmd(&["ZADD", "z", "10", "a", "4", "d"]), int(1));
    assert_eq!(
        all(&mut r, "z"),
        pairs(&[("b", "2"), ("c", "3"), ("d", "4"), ("a", "10")])
    );
    // Same score: ordered by member bytes.
    assert_eq!(r.cmd(&["ZADD", "z", "3", "bb"]), int(1));
    assert_eq!(
        r.cmd(&["ZRANGE", "z", "0", "-1"]),
        bulks(&["b", "bb", "c", "d", "a"])
    );
    // NX only adds, XX only updates, CH counts changes.
    assert_eq!(r.cmd(&["ZADD", "z", "NX", "100", "a", "5", "e"]), int(1));
    assert_eq!(r.cmd(&["ZSCORE", "z", "a"]), bulk("10"));
    assert_eq!(r.cmd(&["ZADD", "z", "XX", "11", "a", "6", "f"]), int(0));
    assert_eq!(r.cmd(&["ZSCORE", "z", "a"]), bulk("11"));
    assert_eq!(r.cmd(&["ZSCORE", "z", "f"]), Value::Null);
    assert_eq!(
        r.cmd(&["ZADD", "z", "XX", "CH", "12", "a", "2", "b", "7", "g"]),
        int(1)
    );
    assert_eq!(r.cmd(&["ZADD", "z", "CH", "12", "a", "8", "h"]), int(1));
    // GT / LT update only upwards / downwards, and still add new members.
    assert_eq!(
        r.cmd(&["ZADD", "z", "GT", "CH", "1", "a", "20", "b", "1", "i"]),
        int(2)
    );
    assert_eq!(r.cmd(&["ZSCORE", "z", "a"]), bulk("12"));
    assert_eq!(r.cmd(&["ZSCORE", "z", "b"]), bulk("20"));
    assert_eq!(
        r.cmd(&["ZADD", "z", "LT", "CH", "1", "a", "30", "b"]),
        int(1)
    );
    assert_eq!(r.cmd(&["ZSCORE", "z", "a"]), bulk("1"));
    assert_eq!(r.cmd(&["ZSCORE", "z", "b"]), bulk("20"));
    assert_eq!(
        r.cmd(&["ZADD", "z", "XX", "GT", "50", "b", "1", "new"]),
        int(0)
    );
    assert_eq!(r.cmd(&["ZSCORE", "z", "b"]), bulk("50"));
    assert_eq!(r.cmd(&["ZSCORE", "z", "new"]), Value::Null);
    // XX on a missing key creates nothing.
    assert_eq!(r.cmd(&["ZADD", "none", "XX", "1", "a"]), int(0));
    assert_eq!(r.cmd(&["EXISTS", "none"]), int(0));
    assert_eq!(
        r.cmd(&["ZADD", "none", "XX", "INCR", "1", "a"]),
        Value::Null
    );
    assert_eq!(r.cmd(&["EXISTS", "none"]), int(0));
    // Options are case-insensitive and may repeat.
    assert_eq!(r.cmd(&["ZADD", "z", "nx", "Nx", "ch", "1", "j"]), int(1));
}

#[test]
fn zadd_incr_and_zincrby() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["ZADD", "z", "INCR", "1.5", "a"]), bulk("1.5"));
    assert_eq!(r.cmd(&["ZADD", "z", "INCR", "2", "a"]), bulk("3.5"));
    assert_eq!(r.cmd(&["ZINCRBY", "z", "-0.5", "a"]), bulk("3"));
    assert_eq!(r.cmd(&["ZINCRBY", "z", "5", "b"]), bulk("5"));
    assert_eq!(r.cmd(&["ZADD", "z", "NX", "INCR", "1", "a"]), Value::Null);
    assert_eq!(r.cmd(&["ZADD", "z", "XX", "INCR", "1", "c"]), Value::Null);
    assert_eq!(r.cmd(&["ZADD", "z", "GT", "INCR", "-1", "a"]), Value::Null);
    assert_eq!(r.cmd(&["ZADD", "z", "LT", "INCR", "-1", "a"]), bulk("2"));
    // inf + -inf is NaN: refused, nothing changes.
    assert_eq!(r.cmd(&["ZADD", "z", "+inf", "i"]), int(1));
    assert_eq!(
        r.cmd(&["ZINCRBY", "z", "-inf", "i"]),
        err("ERR resulting score is not a number (NaN)")
    );
    assert_eq!(
        r.cmd(&["ZADD", "z", "INCR", "-inf", "i"]),
        err("ERR resulting score is not a number (NaN)")
    );
    assert_eq!(r.cmd(&["ZSCORE", "z", "i"]), bulk("inf"));
    assert_eq!(r.cmd(&["ZINCRBY", "z", "1", "i"]), bulk("inf"));
    // ZINCRBY reads its options position like ZADD does.
    assert_eq!(r.cmd(&["ZINCRBY", "z", "nx", "a"]), err(SYNTAX));
    assert_eq!(r.cmd(&["ZINCRBY", "z", "x", "a"]), err(NOT_FLOAT));
    assert_eq!(r.cmd(&["ZINCRBY", "z", "1"]), wrong_arity("zincrby"));
    let mut r3 = resp3(&_s);
    assert_eq!(r3.cmd(&["ZINCRBY", "z", "1", "b"]), dbl("6"));
    assert_eq!(r3.cmd(&["ZADD", "z", "NX", "INCR", "1", "b"]), Value::Null);
}

#[test]
fn zadd_errors() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["ZADD", "z", "1"]), wrong_arity("zadd"));
    assert_eq!(r.cmd(&["ZADD", "z", "1", "a", "2"]), err(SYNTAX));
    assert_eq!(r.cmd(&["ZADD", "z", "NX", "1"]), err(SYNTAX));
    assert_eq!(r.cmd(&["ZADD", "z", "NX", "XX"]), err(SYNTAX));
    assert_eq!(
        r.cmd(&["ZADD", "z", "NX", "XX", "1", "a"]),
        err("ERR XX and NX options at the same time are not compatible")
    );
    for opts in [["GT", "LT"], ["NX", "GT"], ["NX", "LT"]] {
        assert_eq!(
            r.cmd(&["ZADD", "z", opts[0], opts[1], "1", "a"]),
            err("ERR GT, LT, and/or NX options at the same time are not compatible")
        );
    }
    assert_eq!(
        r.cmd(&["ZADD", "z", "INCR", "1", "a", "2", "b"]),
        err("ERR INCR option supports a single increment-element pair")
    );
    for bad in ["nan", "abc", "", " 1", "1 ", "1e400", "--1", "1.2.3"] {
        assert_eq!(r.cmd(&["ZADD", "z", bad, "a"]), err(NOT_FLOAT), "{bad:?}");
    }
    // A bad score anywhere refuses the whole command.
    assert_eq!(r.cmd(&["ZADD", "z", "1", "a", "x", "b"]), err(NOT_FLOAT));
    assert_eq!(r.cmd(&["EXISTS", "z"]), int(0));
    string_key(&mut r, "s");
    assert_eq!(r.cmd(&["ZADD", "s", "1", "a"]), err(WRONGTYPE));
    // Argument errors come before the type check.
    assert_eq!(r.cmd(&["ZADD", "s", "x", "a"]), err(NOT_FLOAT));
}

#[test]
fn scores_parse_and_format_as_redis() {
    let (s, mut r) = start();
    let mut r3 = resp3(&s);
    let cases = [
        ("1", "1", "1"),
        // A listpack keeps an integral score as an integer: -0 comes back as 0.
        ("-0", "0", "0"),
        // Redis 8.0 prints doubles with the shortest digits that read back (fpconv's
        // Grisu2), integers as integers; Redis 7.0 printed them with `%.17g`.
        ("0.1", "0.1", "0.1"),
        ("1e20", "1e+20", "1e+20"),
        ("1.5e-7", "1.5e-7", "1.5e-7"),
        ("0.00001", "0.00001", "0.00001"),
        ("+inf", "inf", "inf"),
        ("-INF", "-inf", "-inf"),
        ("Infinity", "inf", "inf"),
        ("0x10", "16", "16"),
        (
            "123456789012345678",
            "123456789012345680",
            "123456789012345680",
        ),
        (
            "9223372036854775807",
            "9223372036854776000",
            "9223372036854776000",
        ),
        ("3.0", "3", "3"),
    ];
    for (i, (input, resp2, resp3)) in cases.iter().enumerate() {
        let m = format!("m{i}");
        assert!(!r.cmd(&["DEL", "z"]).is_error());
        assert_eq!(r.cmd(&["ZADD", "z", input, &m]), int(1), "{input}");
        assert_eq!(r.cmd(&["ZSCORE", "z", &m]), bulk(resp2), "{input}");
        assert_eq!(r3.cmd(&["ZSCORE", "z", &m]), dbl(resp3), "{input}");
    }
    let dblmax = "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368.00000000000000000";
    assert_eq!(r.cmd(&["ZADD", "zz", dblmax, "max"]), int(1));
    assert_eq!(
        r.cmd(&["ZSCORE", "zz", "max"]),
        bulk("1.7976931348623157e+308")
    );
    // A subnormal score is kept (strtod's ERANGE only refuses overflow and underflow to 0).
    assert_eq!(
        r.cmd(&["ZADD", "zz", "9.8813129168249309e-323", "tiny"]),
        int(1)
    );
    assert_eq!(r.cmd(&["ZSCORE", "zz", "tiny"]), bulk("1e-322"));
    // -0 and 0 are the same score: no update, no reorder.
    assert_eq!(r.cmd(&["ZADD", "zero", "0", "a"]), int(1));
    assert_eq!(r.cmd(&["ZADD", "zero", "CH", "-0", "a"]), int(0));
    assert_eq!(r.cmd(&["ZSCORE", "zero", "a"]), bulk("0"));
    // A skiplist keeps -0.
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "zset-max-listpack-entries", "0"]),
        ok()
    );
    assert_eq!(r.cmd(&["ZADD", "{z}negzero", "-0", "a"]), int(1));
    assert_eq!(encoding(&mut r, "{z}negzero"), "skiplist");
    assert_eq!(r.cmd(&["ZSCORE", "{z}negzero", "a"]), bulk("-0"));
    assert_eq!(r3.cmd(&["ZSCORE", "{z}negzero", "a"]), dbl("-0"));
    // Members added while the zset is still a listpack lose the sign; those added after it
    // turned into a skiplist keep it.
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "zset-max-listpack-entries", "2"]),
        ok()
    );
    assert_eq!(r.cmd(&["ZADD", "mixed", "-0", "a"]), int(1));
    assert_eq!(r.cmd(&["ZADD", "mixed", "1", "b", "-0", "c"]), int(2));
    assert_eq!(encoding(&mut r, "mixed"), "skiplist");
    assert_eq!(
        r.cmd(&["ZMSCORE", "mixed", "a", "c"]),
        arr(vec![bulk("0"), bulk("-0")])
    );
    // Redis 8.0 (7.2+) sizes a new zset from the ZADD: more pairs than the listpack limit
    // make a skiplist from the start, so every -0 keeps its sign.
    assert_eq!(
        r.cmd(&["ZADD", "mixed2", "-0", "a", "1", "b", "-0", "c"]),
        int(3)
    );
    assert_eq!(encoding(&mut r, "mixed2"), "skiplist");
    assert_eq!(
        r.cmd(&["ZMSCORE", "mixed2", "a", "c"]),
        arr(vec![bulk("-0"), bulk("-0")])
    );
    // An existing listpack converts when a ZADD brings more pairs than the limit, even if
    // none of them is new.
    assert_eq!(r.cmd(&["ZADD", "lp", "1", "a"]), int(1));
    assert_eq!(encoding(&mut r, "lp"), "listpack");
    assert_eq!(r.cmd(&["ZADD", "lp", "1", "a", "1", "a", "1", "a"]), int(0));
    assert_eq!(encoding(&mut r, "lp"), "skiplist");
    // A stored union small enough for a listpack loses it too.
    assert_eq!(r.cmd(&["ZUNIONSTORE", "{z}u", "1", "{z}negzero"]), int(1));
    assert_eq!(r.cmd(&["ZSCORE", "{z}u", "a"]), bulk("0"));
    assert_eq!(
        r.cmd(&["ZUNION", "1", "{z}negzero", "WITHSCORES"]),
        bulks(&["a", "-0"])
    );
}

#[test]
fn zrem_zcard_zscore_zmscore() {
    let (s, mut r) = start();
    r.cmd(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    assert_eq!(r.cmd(&["ZCARD", "z"]), int(3));
    assert_eq!(r.cmd(&["ZCARD", "none"]), int(0));
    assert_eq!(r.cmd(&["ZSCORE", "z", "b"]), bulk("2"));
    assert_eq!(r.cmd(&["ZSCORE", "z", "x"]), Value::Null);
    assert_eq!(r.cmd(&["ZSCORE", "none", "x"]), Value::Null);
    assert_eq!(
        r.cmd(&["ZMSCORE", "z", "a", "x", "c"]),
        arr(vec![bulk("1"), Value::Null, bulk("3")])
    );
    assert_eq!(
        r.cmd(&["ZMSCORE", "none", "a", "b"]),
        arr(vec![Value::Null, Value::Null])
    );
    assert_eq!(r.cmd(&["ZMSCORE", "z"]), wrong_arity("zmscore"));
    let mut r3 = resp3(&s);
    assert_eq!(
        r3.cmd(&["ZMSCORE", "z", "a", "x"]),
        arr(vec![dbl("1"), Value::Null])
    );
    assert_eq!(r3.cmd(&["ZSCORE", "z", "c"]), dbl("3"));
    assert_eq!(r.cmd(&["ZREM", "z", "a", "x", "a"]), int(1));
    assert_eq!(r.cmd(&["ZREM", "none", "a"]), int(0));
    assert_eq!(r.cmd(&["ZREM", "z", "b", "c", "d"]), int(2));
    assert_eq!(r.cmd(&["EXISTS", "z"]), int(0));
    assert_eq!(r.cmd(&["ZREM", "z"]), wrong_arity("zrem"));
    string_key(&mut r, "s");
    for cmd in [
        vec!["ZCARD", "s"],
        vec!["ZSCORE", "s", "a"],
        vec!["ZMSCORE", "s", "a"],
        vec!["ZREM", "s", "a"],
        vec!["ZINCRBY", "s", "1", "a"],
        vec!["ZRANK", "s", "a"],
        vec!["ZREVRANK", "s", "a"],
    ] {
        assert_eq!(r.cmd(&cmd), err(WRONGTYPE), "{cmd:?}");
    }
}

#[test]
fn zrank_and_zrevrank() {
    let (_s, mut r) = start();
    r.cmd(&["ZADD", "z", "10", "x", "20", "y", "30", "z", "20", "a"]);
    assert_eq!(r.cmd(&["ZRANK", "z", "x"]), int(0));
    assert_eq!(r.cmd(&["ZRANK", "z", "a"]), int(1));
    assert_eq!(r.cmd(&["ZRANK", "z", "z"]), int(3));
    assert_eq!(r.cmd(&["ZREVRANK", "z", "z"]), int(0));
    assert_eq!(r.cmd(&["ZREVRANK", "z", "x"]), int(3));
    assert_eq!(r.cmd(&["ZRANK", "z", "nope"]), Value::Null);
    assert_eq!(r.cmd(&["ZREVRANK", "none", "x"]), Value::Null);
    // WITHSCORE (Redis 7.2+; more in tests/redis8_core.rs).
    assert_eq!(
        r.cmd(&["ZRANK", "z", "x", "WITHSCORE"]),
        arr(vec![int(0), bulk("10")])
    );
    assert_eq!(
        r.cmd(&["ZREVRANK", "z", "x", "WITHSCORE"]),
        arr(vec![int(3), bulk("10")])
    );
}

fn fill_abc(r: &mut Raw, key: &str) {
    r.cmd(&["DEL", key]);
    assert_eq!(
        r.cmd(&["ZADD", key, "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"]),
        int(5)
    );
}

#[test]
fn zrange_by_rank() {
    let (s, mut r) = start();
    fill_abc(&mut r, "z");
    assert_eq!(
        r.cmd(&["ZRANGE", "z", "0", "-1"]),
        bulks(&["a", "b", "c", "d", "e"])
    );
    assert_eq!(r.cmd(&["ZRANGE", "z", "1", "2"]), bulks(&["b", "c"]));
    assert_eq!(r.cmd(&["ZRANGE", "z", "-2", "100"]), bulks(&["d", "e"]));
    assert_eq!(r.cmd(&["ZRANGE", "z", "-100", "0"]), bulks(&["a"]));
    assert_eq!(r.cmd(&["ZRANGE", "z", "3", "1"]), arr(vec![]));
    assert_eq!(r.cmd(&["ZRANGE", "z", "5", "10"]), arr(vec![]));
    assert_eq!(r.cmd(&["ZRANGE", "none", "0", "-1"]), arr(vec![]));
    assert_eq!(
        r.cmd(&["ZRANGE", "z", "0", "1", "WITHSCORES"]),
        bulks(&["a", "1", "b", "2"])
    );
    assert_eq!(r.cmd(&["ZRANGE", "z", "0", "1", "REV"]), bulks(&["e", "d"]));
    assert_eq!(
        r.cmd(&["ZREVRANGE", "z", "0", "1", "WITHSCORES"]),
        bulks(&["e", "5", "d", "4"])
    );
    assert_eq!(r.cmd(&["ZREVRANGE", "z", "-1", "-1"]), bulks(&["a"]));
    let mut r3 = resp3(&s);
    assert_eq!(
        r3.cmd(&["ZRANGE", "z", "0", "1", "WITHSCORES"]),
        arr(vec![
            arr(vec![bulk("a"), dbl("1")]),
            arr(vec![bulk("b"), dbl("2")])
        ])
    );
    assert_eq!(r3.cmd(&["ZRANGE", "z", "0", "0"]), bulks(&["a"]));
    // Errors.
    assert_eq!(r.cmd(&["ZRANGE", "z", "a", "1"]), err(NOT_INT));
    assert_eq!(r.cmd(&["ZRANGE", "z", "0", "1", "FOO"]), err(SYNTAX));
    assert_eq!(
        r.cmd(&["ZRANGE", "z", "0", "1", "LIMIT", "0", "1"]),
        err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
        )
    );
    assert_eq!(r.cmd(&["ZRANGE", "z", "0", "1", "LIMIT", "0"]), err(SYNTAX));
    assert_eq!(r.cmd(&["ZRANGE", "z", "0", "1", "REV", "REV"]), err(SYNTAX));
    assert_eq!(r.cmd(&["ZREVRANGE", "z", "0", "1", "REV"]), err(SYNTAX));
    assert_eq!(
        r.cmd(&["ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"]),
        err(SYNTAX)
    );
    assert_eq!(r.cmd(&["ZRANGE", "z", "0"]), wrong_arity("zrange"));
    string_key(&mut r, "s");
    assert_eq!(r.cmd(&["ZRANGE", "s", "0", "1"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["ZRANGE", "s", "x", "1"]), err(NOT_INT));
}

#[test]
fn zrange_by_score() {
    let (_s, mut r) = start();
    fill_abc(&mut r, "z");
    r.cmd(&["ZADD", "z", "-inf", "ninf", "+inf", "pinf"]);
    let q = |r: &mut Raw, args: &[&str]| {
        let mut v = vec!["ZRANGE", "z"];
        v.extend_from_slice(args);
        r.cmd(&v)
    };
    assert_eq!(q(&mut r, &["2", "4", "BYSCORE"]), bulks(&["b", "c", "d"]));
    assert_eq!(q(&mut r, &["(2", "(4", "BYSCORE"]), bulks(&["c"]));
    assert_eq!(q(&mut r, &["-inf", "(2", "BYSCORE"]), bulks(&["ninf", "a"]));
    assert_eq!(
        q(&mut r, &["(-inf", "(+inf", "BYSCORE"]),
        bulks(&["a", "b", "c", "d", "e"])
    );
    assert_eq!(q(&mut r, &["+inf", "+inf", "BYSCORE"]), bulks(&["pinf"]));
    assert_eq!(q(&mut r, &["(+inf", "+inf", "BYSCORE"]), arr(vec![]));
    assert_eq!(q(&mut r, &["4", "2", "BYSCORE"]), arr(vec![]));
    assert_eq!(q(&mut r, &["(3", "3", "BYSCORE"]), arr(vec![]));
    assert_eq!(
        q(&mut r, &["4", "2", "BYSCORE", "REV", "WITHSCORES"]),
        bulks(&["d", "4", "c", "3", "b", "2"])
    );
    assert_eq!(
        q(&mut r, &["1", "5", "BYSCORE", "LIMIT", "1", "2"]),
        bulks(&["b", "c"])
    );
    assert_eq!(
        q(&mut r, &["1", "5", "BYSCORE", "LIMIT", "3", "-1"]),
        bulks(&["d", "e"])
    );
    assert_eq!(
        q(&mut r, &["1", "5", "BYSCORE", "LIMIT", "-1", "2"]),
        arr(vec![])
    );
    assert_eq!(
        q(&mut r, &["1", "5", "BYSCORE", "LIMIT", "100", "2"]),
        arr(vec![])
    );
    assert_eq!(
        q(&mut r, &["5", "1", "BYSCORE", "REV", "LIMIT", "1", "2"]),
        bulks(&["d", "c"])
    );
    // The legacy commands.
    assert_eq!(
        r.cmd(&["ZRANGEBYSCORE", "z", "(1", "3", "WITHSCORES"]),
        bulks(&["b", "2", "c", "3"])
    );
    assert_eq!(
        r.cmd(&["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "0", "2"]),
        bulks(&["ninf", "a"])
    );
    assert_eq!(
        r.cmd(&["ZREVRANGEBYSCORE", "z", "3", "(1"]),
        bulks(&["c", "b"])
    );
    assert_eq!(
        r.cmd(&["ZREVRANGEBYSCORE", "z", "+inf", "-inf", "LIMIT", "1", "1"]),
        bulks(&["e"])
    );
    // Errors.
    for (min, max) in [
        ("a", "1"),
        ("1", "(x"),
        ("nan", "1"),
        ("(nan", "1"),
        ("1", "2 "),
    ] {
        assert_eq!(
            q(&mut r, &[min, max, "BYSCORE"]),
            err(RANGE_NOT_FLOAT),
            "{min} {max}"
        );
        assert_eq!(
            r.cmd(&["ZRANGEBYSCORE", "z", min, max]),
            err(RANGE_NOT_FLOAT)
        );
    }
    assert_eq!(r.cmd(&["ZRANGEBYSCORE", "z", "1", "2", "REV"]), err(SYNTAX));
    assert_eq!(
        r.cmd(&["ZRANGEBYSCORE", "z", "1", "2", "BYSCORE"]),
        err(SYNTAX)
    );
    assert_eq!(
        r.cmd(&["ZRANGEBYSCORE", "z", "1", "2", "LIMIT", "x", "1"]),
        err(NOT_INT)
    );
    // Option errors come before range errors, which come before the type check.
    assert_eq!(r.cmd(&["ZRANGEBYSCORE", "z", "x", "2", "FOO"]), err(SYNTAX));
    string_key(&mut r, "s");
    assert_eq!(
        r.cmd(&["ZRANGEBYSCORE", "s", "x", "1"]),
        err(RANGE_NOT_FLOAT)
    );
    assert_eq!(r.cmd(&["ZRANGEBYSCORE", "s", "0", "1"]), err(WRONGTYPE));
}

#[test]
fn zrange_by_lex() {
    let (_s, mut r) = start();
    r.cmd(&[
        "ZADD", "z", "0", "alpha", "0", "bar", "0", "cool", "0", "down", "0", "elephant", "0",
        "foo",
    ]);
    let q = |r: &mut Raw, args: &[&str]| {
        let mut v = vec!["ZRANGE", "z"];
        v.extend_from_slice(args);
        r.cmd(&v)
    };
    assert_eq!(
        q(&mut r, &["-", "+", "BYLEX"]),
        bulks(&["alpha", "bar", "cool", "down", "elephant", "foo"])
    );
    assert_eq!(
        q(&mut r, &["[bar", "(down", "BYLEX"]),
        bulks(&["bar", "cool"])
    );
    assert_eq!(
        q(&mut r, &["(bar", "[down", "BYLEX"]),
        bulks(&["cool", "down"])
    );
    assert_eq!(q(&mut r, &["[cool", "[cool", "BYLEX"]), bulks(&["cool"]));
    assert_eq!(q(&mut r, &["(cool", "[cool", "BYLEX"]), arr(vec![]));
    assert_eq!(q(&mut r, &["+", "-", "BYLEX"]), arr(vec![]));
    assert_eq!(q(&mut r, &["[z", "+", "BYLEX"]), arr(vec![]));
    assert_eq!(q(&mut r, &["-", "[a", "BYLEX"]), arr(vec![]));
    assert_eq!(
        q(&mut r, &["[d", "-", "BYLEX", "REV"]),
        bulks(&["cool", "bar", "alpha"])
    );
    assert_eq!(
        q(&mut r, &["-", "+", "BYLEX", "LIMIT", "2", "3"]),
        bulks(&["cool", "down", "elephant"])
    );
    assert_eq!(
        q(&mut r, &["+", "-", "BYLEX", "REV", "LIMIT", "0", "2"]),
        bulks(&["foo", "elephant"])
    );
    assert_eq!(
        r.cmd(&["ZRANGEBYLEX", "z", "[b", "(d"]),
        bulks(&["bar", "cool"])
    );
    assert_eq!(
        r.cmd(&["ZREVRANGEBYLEX", "z", "(d", "[b"]),
        bulks(&["cool", "bar"])
    );
    assert_eq!(
        r.cmd(&["ZRANGEBYLEX", "z", "-", "+", "LIMIT", "1", "1"]),
        bulks(&["bar"])
    );
    // Errors.
    for (min, max) in [("a", "+"), ("-", "z"), ("+x", "+"), ("", "+"), ("-", "-x")] {
        assert_eq!(
            r.cmd(&["ZRANGEBYLEX", "z", min, max]),
            err(RANGE_NOT_LEX),
            "{min} {max}"
        );
    }
    assert_eq!(
        q(&mut r, &["-", "+", "BYLEX", "WITHSCORES"]),
        err("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
    );
    assert_eq!(
        r.cmd(&["ZRANGEBYLEX", "z", "-", "+", "WITHSCORES"]),
        err("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
    );
}

#[test]
fn zcount_and_zlexcount() {
    let (_s, mut r) = start();
    fill_abc(&mut r, "z");
    assert_eq!(r.cmd(&["ZCOUNT", "z", "2", "4"]), int(3));
    assert_eq!(r.cmd(&["ZCOUNT", "z", "(2", "(4"]), int(1));
    assert_eq!(r.cmd(&["ZCOUNT", "z", "-inf", "+inf"]), int(5));
    assert_eq!(r.cmd(&["ZCOUNT", "z", "4", "2"]), int(0));
    assert_eq!(r.cmd(&["ZCOUNT", "none", "0", "1"]), int(0));
    assert_eq!(r.cmd(&["ZCOUNT", "z", "x", "1"]), err(RANGE_NOT_FLOAT));
    r.cmd(&["ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d"]);
    assert_eq!(r.cmd(&["ZLEXCOUNT", "l", "-", "+"]), int(4));
    assert_eq!(r.cmd(&["ZLEXCOUNT", "l", "[b", "(d"]), int(2));
    assert_eq!(r.cmd(&["ZLEXCOUNT", "l", "(a", "[a"]), int(0));
    assert_eq!(r.cmd(&["ZLEXCOUNT", "none", "-", "+"]), int(0));
    assert_eq!(r.cmd(&["ZLEXCOUNT", "l", "a", "+"]), err(RANGE_NOT_LEX));
    string_key(&mut r, "s");
    assert_eq!(r.cmd(&["ZCOUNT", "s", "0", "1"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["ZLEXCOUNT", "s", "-", "+"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["ZCOUNT", "s", "x", "1"]), err(RANGE_NOT_FLOAT));
}

#[test]
fn zremrangeby_rank_score_lex() {
    let (_s, mut r) = start();
    fill_abc(&mut r, "z");
    assert_eq!(r.cmd(&["ZREMRANGEBYRANK", "z", "1", "2"]), int(2));
    assert_eq!(r.cmd(&["ZRANGE", "z", "0", "-1"]), bulks(&["a", "d", "e"]));
    assert_eq!(r.cmd(&["ZREMRANGEBYRANK", "z", "-1", "-1"]), int(1));
    assert_eq!(r.cmd(&["ZREMRANGEBYRANK", "z", "5", "10"]), int(0));
    assert_eq!(r.cmd(&["ZREMRANGEBYRANK", "z", "0", "-1"]), int(2));
    assert_eq!(r.cmd(&["EXISTS", "z"]), int(0));
    fill_abc(&mut r, "z");
    assert_eq!(r.cmd(&["ZREMRANGEBYSCORE", "z", "(1", "3"]), int(2));
    assert_eq!(r.cmd(&["ZREMRANGEBYSCORE", "z", "10", "20"]), int(0));
    assert_eq!(r.cmd(&["ZRANGE", "z", "0", "-1"]), bulks(&["a", "d", "e"]));
    assert_eq!(r.cmd(&["ZREMRANGEBYSCORE", "z", "-inf", "+inf"]), int(3));
    assert_eq!(r.cmd(&["EXISTS", "z"]), int(0));
    r.cmd(&["ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d"]);
    assert_eq!(r.cmd(&["ZREMRANGEBYLEX", "l", "(a", "[c"]), int(2));
    assert_eq!(r.cmd(&["ZRANGE", "l", "0", "-1"]), bulks(&["a", "d"]));
    assert_eq!(r.cmd(&["ZREMRANGEBYLEX", "l", "-", "+"]), int(2));
    assert_eq!(r.cmd(&["EXISTS", "l"]), int(0));
    // Missing keys, errors.
    assert_eq!(r.cmd(&["ZREMRANGEBYRANK", "none", "0", "1"]), int(0));
    assert_eq!(r.cmd(&["ZREMRANGEBYSCORE", "none", "0", "1"]), int(0));
    assert_eq!(r.cmd(&["ZREMRANGEBYLEX", "none", "-", "+"]), int(0));
    assert_eq!(r.cmd(&["ZREMRANGEBYRANK", "z", "x", "1"]), err(NOT_INT));
    assert_eq!(
        r.cmd(&["ZREMRANGEBYSCORE", "z", "x", "1"]),
        err(RANGE_NOT_FLOAT)
    );
    assert_eq!(
        r.cmd(&["ZREMRANGEBYLEX", "z", "x", "+"]),
        err(RANGE_NOT_LEX)
    );
    string_key(&mut r, "s");
    assert_eq!(r.cmd(&["ZREMRANGEBYRANK", "s", "0", "1"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["ZREMRANGEBYSCORE", "s", "0", "1"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["ZREMRANGEBYLEX", "s", "-", "+"]), err(WRONGTYPE));
}

#[test]
fn zpopmin_zpopmax() {
    let (s, mut r) = start();
    fill_abc(&mut r, "z");
    assert_eq!(r.cmd(&["ZPOPMIN", "z"]), bulks(&["a", "1"]));
    assert_eq!(r.cmd(&["ZPOPMAX", "z"]), bulks(&["e", "5"]));
    assert_eq!(r.cmd(&["ZPOPMIN", "z", "2"]), bulks(&["b", "2", "c", "3"]));
    assert_eq!(r.cmd(&["ZPOPMIN", "z", "0"]), arr(vec![]));
    assert_eq!(r.cmd(&["ZPOPMAX", "z", "10"]), bulks(&["d", "4"]));
    assert_eq!(r.cmd(&["EXISTS", "z"]), int(0));
    assert_eq!(r.cmd(&["ZPOPMIN", "z"]), arr(vec![]));
    assert_eq!(r.cmd(&["ZPOPMIN", "z", "3"]), arr(vec![]));
    // RESP3: nested pairs with COUNT, flat without.
    fill_abc(&mut r, "z");
    let mut r3 = resp3(&s);
    assert_eq!(r3.cmd(&["ZPOPMIN", "z"]), arr(vec![bulk("a"), dbl("1")]));
    assert_eq!(
        r3.cmd(&["ZPOPMAX", "z", "2"]),
        arr(vec![
            arr(vec![bulk("e"), dbl("5")]),
            arr(vec![bulk("d"), dbl("4")])
        ])
    );
    assert_eq!(
        r3.cmd(&["ZPOPMAX", "z", "1"]),
        arr(vec![arr(vec![bulk("c"), dbl("3")])])
    );
    // Errors.
    for bad in ["-1", "x"] {
        assert_eq!(
            r.cmd(&["ZPOPMIN", "z", bad]),
            err("ERR value is out of range, must be positive")
        );
    }
    assert_eq!(r.cmd(&["ZPOPMIN", "z", "1", "2"]), err(SYNTAX));
    string_key(&mut r, "s");
    assert_eq!(r.cmd(&["ZPOPMIN", "s"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["ZPOPMAX", "s", "0"]), err(WRONGTYPE));
}

#[test]
fn zmpop() {
    let (s, mut r) = start();
    fill_abc(&mut r, "{t}b");
    assert_eq!(
        r.cmd(&["ZMPOP", "2", "{t}a", "{t}b", "MIN"]),
        arr(vec![bulk("{t}b"), arr(vec![bulks(&["a", "1"])])])
    );
    assert_eq!(
        r.cmd(&["ZMPOP", "2", "{t}a", "{t}b", "max", "COUNT", "2"]),
        arr(vec![
            bulk("{t}b"),
            arr(vec![bulks(&["e", "5"]), bulks(&["d", "4"])])
        ])
    );
    assert_eq!(
        r.cmd(&["ZMPOP", "1", "{t}b", "MIN", "COUNT", "10"]),
        arr(vec![
            bulk("{t}b"),
            arr(vec![bulks(&["b", "2"]), bulks(&["c", "3"])])
        ])
    );
    assert_eq!(
        r.cmd(&["ZMPOP", "2", "{t}a", "{t}b", "MIN"]),
        Value::NullArray
    );
    let mut r3 = resp3(&s);
    fill_abc(&mut r3, "{t}b");
    assert_eq!(
        r3.cmd(&["ZMPOP", "1", "{t}b", "MIN"]),
        arr(vec![
            bulk("{t}b"),
            arr(vec![arr(vec![bulk("a"), dbl("1")])])
        ])
    );
    assert_eq!(r3.cmd(&["ZMPOP", "1", "{t}none", "MIN"]), Value::Null);
    // Errors.
    for bad in ["0", "-1", "x"] {
        assert_eq!(
            r.cmd(&["ZMPOP", bad, "{t}b", "MIN"]),
            err("ERR numkeys should be greater than 0")
        );
    }
    assert_eq!(r.cmd(&["ZMPOP", "2", "{t}b", "MIN"]), err(SYNTAX));
    assert_eq!(r.cmd(&["ZMPOP", "1", "{t}b", "MID"]), err(SYNTAX));
    assert_eq!(r.cmd(&["ZMPOP", "1", "{t}b", "MIN", "COUNT"]), err(SYNTAX));
    assert_eq!(
        r.cmd(&["ZMPOP", "1", "{t}b", "MIN", "COUNT", "0"]),
        err("ERR count should be greater than 0")
    );
    assert_eq!(
        r.cmd(&["ZMPOP", "1", "{t}b", "MIN", "COUNT", "1", "COUNT", "1"]),
        err(SYNTAX)
    );
    assert_eq!(r.cmd(&["ZMPOP", "1", "{t}b"]), wrong_arity("zmpop"));
    string_key(&mut r, "{t}s");
    assert_eq!(
        r.cmd(&["ZMPOP", "2", "{t}s", "{t}b", "MIN"]),
        err(WRONGTYPE)
    );
}

#[test]
fn blocking_pops_serve_at_once_when_they_can() {
    let (s, mut r) = start();
    r.cmd(&["ZADD", "{t}b", "1", "a", "2", "b", "3", "c"]);
    assert_eq!(
        r.cmd(&["BZPOPMIN", "{t}a", "{t}b", "0"]),
        bulks(&["{t}b", "a", "1"])
    );
    assert_eq!(
        r.cmd(&["BZPOPMAX", "{t}a", "{t}b", "1"]),
        bulks(&["{t}b", "c", "3"])
    );
    assert_eq!(
        r.cmd(&["BZMPOP", "0", "2", "{t}a", "{t}b", "MIN", "COUNT", "5"]),
        arr(vec![bulk("{t}b"), arr(vec![bulks(&["b", "2"])])])
    );
    assert_eq!(r.cmd(&["EXISTS", "{t}b"]), int(0));
    let mut r3 = resp3(&s);
    r3.cmd(&["ZADD", "{t}b", "1.5", "a"]);
    assert_eq!(
        r3.cmd(&["BZPOPMIN", "{t}b", "0"]),
        arr(vec![bulk("{t}b"), bulk("a"), dbl("1.5")])
    );
    // Nothing to pop: the timeout reply (a null array) once the time is up.
    let t = Instant::now();
    assert_eq!(r.cmd(&["BZPOPMIN", "{t}a", "0.1"]), Value::NullArray);
    assert_eq!(
        r.cmd(&["BZMPOP", "0.1", "1", "{t}a", "MAX"]),
        Value::NullArray
    );
    assert_eq!(r3.cmd(&["BZPOPMAX", "{t}a", "0.1"]), Value::Null);
    assert!(t.elapsed() < Duration::from_secs(5));
    // Errors.
    assert_eq!(
        r.cmd(&["BZPOPMIN", "{t}a", "x"]),
        err("ERR timeout is not a float or out of range")
    );
    assert_eq!(
        r.cmd(&["BZPOPMIN", "{t}a", "-1"]),
        err("ERR timeout is negative")
    );
    assert_eq!(
        r.cmd(&["BZMPOP", "x", "1", "{t}a", "MIN"]),
        err("ERR timeout is not a float or out of range")
    );
    // BZMPOP checks numkeys and the rest before the timeout.
    assert_eq!(
        r.cmd(&["BZMPOP", "x", "0", "{t}a", "MIN"]),
        err("ERR numkeys should be greater than 0")
    );
    assert_eq!(r.cmd(&["BZMPOP", "x", "1", "{t}a", "MID"]), err(SYNTAX));
    assert_eq!(r.cmd(&["BZPOPMIN", "{t}a"]), wrong_arity("bzpopmin"));
    string_key(&mut r, "{t}s");
    assert_eq!(r.cmd(&["BZPOPMIN", "{t}a", "{t}s", "0"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["BZMPOP", "0", "1", "{t}s", "MIN"]), err(WRONGTYPE));
}

/// A client waiting in BZPOPMIN / BZMPOP is served by a later ZADD.
#[test]
fn blocked_bzpopmin_is_served_by_zadd() {
    let (s, mut r) = start();
    let mut waiter = s.raw();
    waiter.send(&common::resp::encode(&["BZPOPMIN", "{t}q", "5"]));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(r.cmd(&["ZADD", "{t}q", "7", "m"]), int(1));
    assert_eq!(waiter.read_value(), bulks(&["{t}q", "m", "7"]));
    assert_eq!(r.cmd(&["EXISTS", "{t}q"]), int(0));
    waiter.send(&common::resp::encode(&[
        "BZMPOP", "5", "1", "{t}q", "MAX", "COUNT", "2",
    ]));
    std::thread::sleep(Duration::from_millis(200));
    r.cmd(&["ZADD", "{t}q", "1", "a", "2", "b", "3", "c"]);
    assert_eq!(
        waiter.read_value(),
        arr(vec![
            bulk("{t}q"),
            arr(vec![bulks(&["c", "3"]), bulks(&["b", "2"])])
        ])
    );
}

#[test]
fn zrandmember() {
    let (s, mut r) = start();
    r.cmd(&[
        "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e",
    ]);
    let scores: HashMap<String, String> = all(&mut r, "z").into_iter().collect();
    let mut seen = BTreeSet::new();
    for _ in 0..200 {
        let m = r.cmd(&["ZRANDMEMBER", "z"]).text();
        assert!(scores.contains_key(&m));
        seen.insert(m);
    }
    assert_eq!(seen.len(), 5);
    assert_eq!(r.cmd(&["ZRANDMEMBER", "none"]), Value::Null);
    assert_eq!(r.cmd(&["ZRANDMEMBER", "none", "5"]), arr(vec![]));
    assert_eq!(r.cmd(&["ZRANDMEMBER", "z", "0"]), arr(vec![]));
    // Positive count: distinct members, at most all of them.
    for n in [1usize, 3, 5, 10] {
        let got = r.cmd(&["ZRANDMEMBER", "z", &n.to_string()]).strings();
        assert_eq!(got.len(), n.min(5));
        let distinct: BTreeSet<_> = got.iter().collect();
        assert_eq!(distinct.len(), got.len());
        let ws = r
            .cmd(&["ZRANDMEMBER", "z", &n.to_string(), "WITHSCORES"])
            .strings();
        assert_eq!(ws.len(), 2 * n.min(5));
        for c in ws.chunks(2) {
            assert_eq!(scores[&c[0]], c[1]);
        }
    }
    // Negative count: that many, repeats allowed.
    let got = r.cmd(&["ZRANDMEMBER", "z", "-50"]).strings();
    assert_eq!(got.len(), 50);
    assert!(got.iter().all(|m| scores.contains_key(m)));
    let got = r.cmd(&["ZRANDMEMBER", "z", "-7", "WITHSCORES"]).strings();
    assert_eq!(got.len(), 14);
    let mut r3 = resp3(&s);
    let v = r3.cmd(&["ZRANDMEMBER", "z", "2", "WITHSCORES"]).items();
    assert_eq!(v.len(), 2);
    for p in v {
        let p = p.items();
        assert_eq!(p.len(), 2);
        assert!(matches!(p[1], Value::Double(_)));
    }
    // Errors.
    assert_eq!(r.cmd(&["ZRANDMEMBER", "z", "x"]), err(NOT_INT));
    assert_eq!(r.cmd(&["ZRANDMEMBER", "z", "1", "FOO"]), err(SYNTAX));
    assert_eq!(
        r.cmd(&["ZRANDMEMBER", "z", "1", "WITHSCORES", "x"]),
        err(SYNTAX)
    );
    assert_eq!(
        r.cmd(&["ZRANDMEMBER", "z", "-9223372036854775808"]),
        err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    );
    assert_eq!(
        r.cmd(&["ZRANDMEMBER", "z", "-9223372036854770000", "WITHSCORES"]),
        err("ERR value is out of range")
    );
    if !is_redis() {
        // Skerry caps a negative count (Redis would build the reply until memory runs out).
        assert_eq!(
            r.cmd(&["ZRANDMEMBER", "z", "-9223372036854775807"]),
            err("ERR value is out of range")
        );
        assert_eq!(
            r.cmd(&["ZRANDMEMBER", "z", "-16777217"]),
            err("ERR value is out of range")
        );
    }
    string_key(&mut r, "s");
    assert_eq!(r.cmd(&["ZRANDMEMBER", "s"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["ZRANDMEMBER", "s", "1"]), err(WRONGTYPE));
}

fn fill_ops(r: &mut Raw) {
    r.cmd(&["DEL", "{t}a", "{t}b", "{t}c"]);
    r.cmd(&["ZADD", "{t}a", "1", "x", "2", "y", "3", "z"]);
    r.cmd(&["ZADD", "{t}b", "10", "y", "20", "z", "30", "w"]);
}

#[test]
fn zunion_zinter_zdiff() {
    let (s, mut r) = start();
    fill_ops(&mut r);
    assert_eq!(
        r.cmd(&["ZUNION", "2", "{t}a", "{t}b", "WITHSCORES"]),
        bulks(&["x", "1", "y", "12", "z", "23", "w", "30"])
    );
    assert_eq!(
        r.cmd(&["ZUNION", "3", "{t}a", "{t}b", "{t}c"]),
        bulks(&["x", "y", "z", "w"])
    );
    assert_eq!(
        r.cmd(&[
            "ZUNION",
            "2",
            "{t}a",
            "{t}b",
            "WEIGHTS",
            "2",
            "0.5",
            "AGGREGATE",
            "MAX",
            "WITHSCORES"
        ]),
        bulks(&["x", "2", "y", "5", "z", "10", "w", "15"])
    );
    assert_eq!(
        r.cmd(&[
            "ZUNION",
            "2",
            "{t}a",
            "{t}b",
            "AGGREGATE",
            "min",
            "WITHSCORES"
        ]),
        bulks(&["x", "1", "y", "2", "z", "3", "w", "30"])
    );
    assert_eq!(
        r.cmd(&["ZINTER", "2", "{t}a", "{t}b", "WITHSCORES"]),
        bulks(&["y", "12", "z", "23"])
    );
    assert_eq!(
        r.cmd(&[
            "ZINTER",
            "2",
            "{t}a",
            "{t}b",
            "WEIGHTS",
            "1",
            "-1",
            "WITHSCORES"
        ]),
        bulks(&["z", "-17", "y", "-8"])
    );
    assert_eq!(r.cmd(&["ZINTER", "2", "{t}a", "{t}c"]), arr(vec![]));
    assert_eq!(
        r.cmd(&["ZINTER", "2", "{t}a", "{t}a", "WITHSCORES"]),
        bulks(&["x", "2", "y", "4", "z", "6"])
    );
    assert_eq!(
        r.cmd(&["ZDIFF", "2", "{t}a", "{t}b", "WITHSCORES"]),
        bulks(&["x", "1"])
    );
    assert_eq!(
        r.cmd(&["ZDIFF", "2", "{t}b", "{t}c"]),
        bulks(&["y", "z", "w"])
    );
    assert_eq!(r.cmd(&["ZDIFF", "2", "{t}a", "{t}a"]), arr(vec![]));
    assert_eq!(r.cmd(&["ZDIFF", "1", "{t}c"]), arr(vec![]));
    assert_eq!(r.cmd(&["ZINTERCARD", "2", "{t}a", "{t}b"]), int(2));
    assert_eq!(
        r.cmd(&["ZINTERCARD", "2", "{t}a", "{t}b", "LIMIT", "1"]),
        int(1)
    );
    assert_eq!(
        r.cmd(&["ZINTERCARD", "2", "{t}a", "{t}b", "LIMIT", "0"]),
        int(2)
    );
    // inf + -inf sums to 0; weights times inf stay inf, 0 * inf is 0.
    r.cmd(&["ZADD", "{t}i", "+inf", "m"]);
    r.cmd(&["ZADD", "{t}j", "-inf", "m"]);
    assert_eq!(
        r.cmd(&["ZUNION", "2", "{t}i", "{t}j", "WITHSCORES"]),
        bulks(&["m", "0"])
    );
    assert_eq!(
        r.cmd(&["ZUNION", "1", "{t}i", "WEIGHTS", "0", "WITHSCORES"]),
        bulks(&["m", "0"])
    );
    let mut r3 = resp3(&s);
    assert_eq!(
        r3.cmd(&["ZINTER", "2", "{t}a", "{t}b", "WITHSCORES"]),
        arr(vec![
            arr(vec![bulk("y"), dbl("12")]),
            arr(vec![bulk("z"), dbl("23")])
        ])
    );
    // Errors.
    for (cmd, name) in [
        ("ZUNION", "zunion"),
        ("ZINTER", "zinter"),
        ("ZDIFF", "zdiff"),
    ] {
        assert_eq!(
            r.cmd(&[cmd, "0", "{t}a"]),
            err(&format!(
                "ERR at least 1 input key is needed for '{name}' command"
            ))
        );
        assert_eq!(r.cmd(&[cmd, "3", "{t}a", "{t}b"]), err(SYNTAX));
        assert_eq!(r.cmd(&[cmd, "x", "{t}a"]), err(NOT_INT));
        assert_eq!(r.cmd(&[cmd, "1", "{t}a", "FOO"]), err(SYNTAX));
    }
    assert_eq!(
        r.cmd(&["ZINTERCARD", "0", "{t}a"]),
        err("ERR at least 1 input key is needed for 'zintercard' command")
    );
    assert_eq!(
        r.cmd(&["ZUNION", "2", "{t}a", "{t}b", "WEIGHTS", "1", "x"]),
        err("ERR weight value is not a float")
    );
    assert_eq!(
        r.cmd(&["ZUNION", "2", "{t}a", "{t}b", "WEIGHTS", "1"]),
        err(SYNTAX)
    );
    assert_eq!(
        r.cmd(&["ZUNION", "2", "{t}a", "{t}b", "AGGREGATE", "AVG"]),
        err(SYNTAX)
    );
    assert_eq!(
        r.cmd(&["ZDIFF", "2", "{t}a", "{t}b", "WEIGHTS", "1", "2"]),
        err(SYNTAX)
    );
    assert_eq!(
        r.cmd(&["ZINTERCARD", "1", "{t}a", "WITHSCORES"]),
        err(SYNTAX)
    );
    for bad in ["-1", "x"] {
        assert_eq!(
            r.cmd(&["ZINTERCARD", "1", "{t}a", "LIMIT", bad]),
            err("ERR LIMIT can't be negative")
        );
    }
    string_key(&mut r, "{t}s");
    assert_eq!(r.cmd(&["ZUNION", "2", "{t}a", "{t}s"]), err(WRONGTYPE));
    // The type check comes before the options.
    assert_eq!(
        r.cmd(&["ZINTER", "2", "{t}a", "{t}s", "FOO"]),
        err(WRONGTYPE)
    );
    assert_eq!(r.cmd(&["ZDIFF", "2", "{t}s", "{t}a"]), err(WRONGTYPE));
}

#[test]
fn zunionstore_zinterstore_zdiffstore() {
    let (_s, mut r) = start();
    fill_ops(&mut r);
    assert_eq!(r.cmd(&["ZUNIONSTORE", "{t}d", "2", "{t}a", "{t}b"]), int(4));
    assert_eq!(
        all(&mut r, "{t}d"),
        pairs(&[("x", "1"), ("y", "12"), ("z", "23"), ("w", "30")])
    );
    assert_eq!(
        r.cmd(&[
            "ZINTERSTORE",
            "{t}d",
            "2",
            "{t}a",
            "{t}b",
            "WEIGHTS",
            "3",
            "1",
            "AGGREGATE",
            "SUM"
        ]),
        int(2)
    );
    assert_eq!(all(&mut r, "{t}d"), pairs(&[("y", "16"), ("z", "29")]));
    assert_eq!(r.cmd(&["ZDIFFSTORE", "{t}d", "2", "{t}b", "{t}a"]), int(1));
    assert_eq!(all(&mut r, "{t}d"), pairs(&[("w", "30")]));
    // The destination may be a source.
    assert_eq!(r.cmd(&["ZUNIONSTORE", "{t}a", "2", "{t}a", "{t}a"]), int(3));
    assert_eq!(
        all(&mut r, "{t}a"),
        pairs(&[("x", "2"), ("y", "4"), ("z", "6")])
    );
    // An empty result deletes the destination.
    assert_eq!(r.cmd(&["ZINTERSTORE", "{t}d", "2", "{t}d", "{t}c"]), int(0));
    assert_eq!(r.cmd(&["EXISTS", "{t}d"]), int(0));
    // The destination is replaced whatever it held, and loses its TTL.
    string_key(&mut r, "{t}d");
    assert_eq!(r.cmd(&["EXPIRE", "{t}d", "100"]), int(1));
    assert_eq!(r.cmd(&["ZUNIONSTORE", "{t}d", "1", "{t}b"]), int(3));
    assert_eq!(r.cmd(&["TYPE", "{t}d"]), simple("zset"));
    assert_eq!(r.cmd(&["TTL", "{t}d"]), int(-1));
    string_key(&mut r, "{t}d");
    assert_eq!(r.cmd(&["ZDIFFSTORE", "{t}d", "1", "{t}c"]), int(0));
    assert_eq!(r.cmd(&["EXISTS", "{t}d"]), int(0));
    // Errors.
    assert_eq!(
        r.cmd(&["ZUNIONSTORE", "{t}d", "0", "{t}a"]),
        err("ERR at least 1 input key is needed for 'zunionstore' command")
    );
    assert_eq!(
        r.cmd(&["ZUNIONSTORE", "{t}d", "1", "{t}a", "WITHSCORES"]),
        err(SYNTAX)
    );
    assert_eq!(
        r.cmd(&["ZDIFFSTORE", "{t}d", "1", "{t}a", "AGGREGATE", "MIN"]),
        err(SYNTAX)
    );
    string_key(&mut r, "{t}s");
    assert_eq!(
        r.cmd(&["ZINTERSTORE", "{t}d", "2", "{t}a", "{t}s"]),
        err(WRONGTYPE)
    );
    assert_eq!(r.cmd(&["ZUNIONSTORE", "{t}d"]), wrong_arity("zunionstore"));
}

#[test]
fn set_operations_take_plain_sets_with_score_1() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["SADD", "{t}set", "x", "y", "q"]), int(3));
    assert_eq!(
        r.cmd(&["ZADD", "{t}z", "5", "x", "7", "y", "9", "p"]),
        int(3)
    );
    assert_eq!(
        r.cmd(&[
            "ZUNION",
            "2",
            "{t}z",
            "{t}set",
            "WEIGHTS",
            "1",
            "10",
            "WITHSCORES"
        ]),
        bulks(&["p", "9", "q", "10", "x", "15", "y", "17"])
    );
    assert_eq!(
        r.cmd(&[
            "ZINTER",
            "2",
            "{t}set",
            "{t}z",
            "AGGREGATE",
            "MIN",
            "WITHSCORES"
        ]),
        bulks(&["x", "1", "y", "1"])
    );
    assert_eq!(
        r.cmd(&["ZDIFF", "2", "{t}set", "{t}z", "WITHSCORES"]),
        bulks(&["q", "1"])
    );
    assert_eq!(r.cmd(&["ZINTERCARD", "2", "{t}set", "{t}z"]), int(2));
    assert_eq!(r.cmd(&["ZUNIONSTORE", "{t}d", "1", "{t}set"]), int(3));
    assert_eq!(
        all(&mut r, "{t}d"),
        pairs(&[("q", "1"), ("x", "1"), ("y", "1")])
    );
    // Other commands still refuse a set.
    assert_eq!(r.cmd(&["ZCARD", "{t}set"]), err(WRONGTYPE));
}

#[test]
fn zrangestore() {
    let (_s, mut r) = start();
    fill_abc(&mut r, "{t}z");
    assert_eq!(r.cmd(&["ZRANGESTORE", "{t}d", "{t}z", "1", "2"]), int(2));
    assert_eq!(all(&mut r, "{t}d"), pairs(&[("b", "2"), ("c", "3")]));
    assert_eq!(
        r.cmd(&[
            "ZRANGESTORE",
            "{t}d",
            "{t}z",
            "4",
            "1",
            "BYSCORE",
            "REV",
            "LIMIT",
            "0",
            "2"
        ]),
        int(2)
    );
    assert_eq!(all(&mut r, "{t}d"), pairs(&[("c", "3"), ("d", "4")]));
    assert_eq!(
        r.cmd(&["ZRANGESTORE", "{t}d", "{t}z", "[b", "[c", "BYLEX"]),
        int(2)
    );
    assert_eq!(all(&mut r, "{t}d"), pairs(&[("b", "2"), ("c", "3")]));
    assert_eq!(
        r.cmd(&["ZRANGESTORE", "{t}d", "{t}z", "(e", "+", "BYLEX"]),
        int(0)
    );
    assert_eq!(r.cmd(&["EXISTS", "{t}d"]), int(0));
    assert_eq!(r.cmd(&["ZRANGESTORE", "{t}d", "{t}z", "0", "-1"]), int(5));
    assert_eq!(
        r.cmd(&["ZRANGESTORE", "{t}d", "{t}none", "0", "-1"]),
        int(0)
    );
    assert_eq!(r.cmd(&["EXISTS", "{t}d"]), int(0));
    assert_eq!(r.cmd(&["ZRANGESTORE", "{t}z", "{t}z", "0", "0"]), int(1));
    assert_eq!(all(&mut r, "{t}z"), pairs(&[("a", "1")]));
    assert_eq!(
        r.cmd(&["ZRANGESTORE", "{t}d", "{t}z", "0", "-1", "WITHSCORES"]),
        err(SYNTAX)
    );
    assert_eq!(
        r.cmd(&["ZRANGESTORE", "{t}d", "{t}z", "0"]),
        wrong_arity("zrangestore")
    );
    string_key(&mut r, "{t}s");
    assert_eq!(
        r.cmd(&["ZRANGESTORE", "{t}d", "{t}s", "0", "-1"]),
        err(WRONGTYPE)
    );
    // A string destination is replaced.
    assert_eq!(r.cmd(&["ZRANGESTORE", "{t}s", "{t}z", "0", "-1"]), int(1));
    assert_eq!(r.cmd(&["TYPE", "{t}s"]), simple("zset"));
}

#[test]
fn zscan() {
    let (_s, mut r) = start();
    r.cmd(&[
        "ZADD", "small", "1", "foo", "2", "fab", "3", "fiz", "10.5", "foobar",
    ]);
    // A listpack zset comes back whole.
    let v = r.cmd(&["ZSCAN", "small", "0", "COUNT", "1"]).items();
    assert_eq!(v[0], bulk("0"));
    assert_eq!(
        v[1].strings(),
        vec!["foo", "1", "fab", "2", "fiz", "3", "foobar", "10.5"]
    );
    let v = r.cmd(&["ZSCAN", "small", "0", "MATCH", "foo*"]).items();
    assert_eq!(v[1].strings(), vec!["foo", "1", "foobar", "10.5"]);
    assert_eq!(
        r.cmd(&["ZSCAN", "none", "0"]),
        arr(vec![bulk("0"), arr(vec![])])
    );
    // A skiplist zset is walked with a cursor; every member comes back.
    let mut args: Vec<String> = vec!["ZADD".into(), "big".into()];
    for i in 0..1000 {
        args.push(i.to_string());
        args.push(format!("m:{i}"));
    }
    let argv: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(r.cmd(&argv), int(1000));
    assert_eq!(encoding(&mut r, "big"), "skiplist");
    let mut cursor = "0".to_string();
    let mut seen = HashMap::new();
    let mut calls = 0;
    loop {
        let v = r.cmd(&["ZSCAN", "big", &cursor, "COUNT", "50"]).items();
        cursor = v[0].text();
        for c in v[1].strings().chunks(2) {
            seen.insert(c[0].clone(), c[1].clone());
        }
        calls += 1;
        if cursor == "0" {
            break;
        }
    }
    assert!(calls > 5, "{calls} calls");
    assert_eq!(seen.len(), 1000);
    assert!(seen.iter().all(|(m, s)| m == &format!("m:{s}")));
    // Errors.
    assert_eq!(r.cmd(&["ZSCAN", "small", "x"]), err("ERR invalid cursor"));
    assert_eq!(r.cmd(&["ZSCAN", "small", "0", "COUNT", "0"]), err(SYNTAX));
    assert_eq!(r.cmd(&["ZSCAN", "small", "0", "COUNT", "x"]), err(NOT_INT));
    assert_eq!(r.cmd(&["ZSCAN", "small", "0", "MATCH"]), err(SYNTAX));
    assert_eq!(r.cmd(&["ZSCAN", "small", "0", "TYPE", "zset"]), err(SYNTAX));
    string_key(&mut r, "s");
    assert_eq!(r.cmd(&["ZSCAN", "s", "0"]), err(WRONGTYPE));
}

#[test]
fn object_encoding_follows_the_thresholds_and_sticks() {
    let (_s, mut r) = start();
    r.cmd(&["ZADD", "z", "1", "a"]);
    assert_eq!(encoding(&mut r, "z"), "listpack");
    let long = "x".repeat(65);
    r.cmd(&["ZADD", "z", "2", &long]);
    assert_eq!(encoding(&mut r, "z"), "skiplist");
    // Redis never converts back.
    r.cmd(&["ZREM", "z", &long]);
    assert_eq!(encoding(&mut r, "z"), "skiplist");
    for i in 0..128 {
        r.cmd(&["ZADD", "n", &i.to_string(), &format!("m{i}")]);
    }
    assert_eq!(encoding(&mut r, "n"), "listpack");
    r.cmd(&["ZADD", "n", "200", "one-more"]);
    assert_eq!(encoding(&mut r, "n"), "skiplist");
    // The thresholds are configurable (and their ziplist aliases).
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "zset-max-ziplist-entries", "2"]),
        ok()
    );
    r.cmd(&["ZADD", "{t}c", "1", "a", "2", "b"]);
    assert_eq!(encoding(&mut r, "{t}c"), "listpack");
    r.cmd(&["ZADD", "{t}c", "3", "c"]);
    assert_eq!(encoding(&mut r, "{t}c"), "skiplist");
    // A stored result small enough is a listpack again.
    assert_eq!(r.cmd(&["ZRANGESTORE", "{t}d", "{t}c", "0", "0"]), int(1));
    assert_eq!(encoding(&mut r, "{t}d"), "listpack");
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "zset-max-listpack-entries", "0"]),
        ok()
    );
    r.cmd(&["ZADD", "e", "1", "a"]);
    assert_eq!(encoding(&mut r, "e"), "skiplist");
}

#[test]
fn zadd_keeps_the_ttl() {
    let (_s, mut r) = start();
    r.cmd(&["ZADD", "z", "1", "a"]);
    assert_eq!(r.cmd(&["EXPIRE", "z", "100"]), int(1));
    r.cmd(&["ZADD", "z", "2", "b"]);
    r.cmd(&["ZINCRBY", "z", "2", "b"]);
    r.cmd(&["ZREM", "z", "a"]);
    let ttl = r.cmd(&["TTL", "z"]).int();
    assert!((90..=100).contains(&ttl), "ttl {ttl}");
}

#[test]
fn command_docs_and_info_cover_the_zset_commands() {
    let (_s, mut r) = start();
    for name in [
        "zadd",
        "zincrby",
        "zrem",
        "zcard",
        "zcount",
        "zlexcount",
        "zscore",
        "zmscore",
        "zrank",
        "zrevrank",
        "zrange",
        "zrangestore",
        "zrangebyscore",
        "zrevrangebyscore",
        "zrangebylex",
        "zrevrangebylex",
        "zrevrange",
        "zremrangebyrank",
        "zremrangebyscore",
        "zremrangebylex",
        "zpopmin",
        "zpopmax",
        "zmpop",
        "bzpopmin",
        "bzpopmax",
        "bzmpop",
        "zrandmember",
        "zunion",
        "zunionstore",
        "zinter",
        "zinterstore",
        "zintercard",
        "zdiff",
        "zdiffstore",
        "zscan",
    ] {
        let info = r.cmd(&["COMMAND", "INFO", name]).items();
        assert_eq!(info.len(), 1, "{name}");
        assert_eq!(info[0].items()[0], bulk(name), "{name}");
        let docs = r.cmd(&["COMMAND", "DOCS", name]);
        let d = docs
            .get(name)
            .unwrap_or_else(|| panic!("no docs for {name}"));
        assert_eq!(d.get("group"), Some(bulk("sorted-set")), "{name}");
        assert!(d.get("complexity").is_some(), "{name}");
    }
    let info = r.cmd(&["COMMAND", "INFO", "bzpopmin"]).items()[0].items();
    assert_eq!(info[1], int(-3));
    assert_eq!(info[3], int(1));
    assert_eq!(info[4], int(-2));
    let keys = r.cmd(&[
        "COMMAND",
        "GETKEYS",
        "ZUNIONSTORE",
        "d",
        "2",
        "a",
        "b",
        "WEIGHTS",
        "1",
        "2",
    ]);
    assert_eq!(keys, bulks(&["d", "a", "b"]));
}

fn fill_persisted(r: &mut Raw) {
    r.cmd(&["ZADD", "{t}small", "1.5", "a", "-inf", "b", "0.1", "c"]);
    let mut args: Vec<String> = vec!["ZADD".into(), "{t}large".into()];
    for i in 0..3000 {
        args.push(i.to_string());
        args.push(format!("member-{i}"));
    }
    let argv: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(r.cmd(&argv), int(3000));
    r.cmd(&["ZADD", "{t}ttl", "1", "a"]);
    r.cmd(&["EXPIRE", "{t}ttl", "1000"]);
    r.cmd(&["ZADD", "{t}gone", "1", "a"]);
    r.cmd(&["ZPOPMIN", "{t}gone"]);
    r.cmd(&["ZUNIONSTORE", "{t}u", "2", "{t}small", "{t}large"]);
}

fn check_persisted(r: &mut Raw) {
    assert_eq!(
        all(r, "{t}small"),
        pairs(&[("b", "-inf"), ("c", "0.1"), ("a", "1.5")])
    );
    assert_eq!(r.cmd(&["ZCARD", "{t}large"]), int(3000));
    assert_eq!(r.cmd(&["ZSCORE", "{t}large", "member-2999"]), bulk("2999"));
    assert_eq!(r.cmd(&["ZRANK", "{t}large", "member-1500"]), int(1500));
    assert_eq!(encoding(r, "{t}large"), "skiplist");
    assert_eq!(encoding(r, "{t}small"), "listpack");
    let ttl = r.cmd(&["TTL", "{t}ttl"]).int();
    assert!((900..=1000).contains(&ttl), "ttl {ttl}");
    assert_eq!(r.cmd(&["EXISTS", "{t}gone"]), int(0));
    assert_eq!(r.cmd(&["ZCARD", "{t}u"]), int(3003));
    assert_eq!(r.cmd(&["ZSCORE", "{t}u", "b"]), bulk("-inf"));
}

#[test]
fn zsets_survive_a_clean_restart() {
    skip_if_redis!();
    let mut s = Server::start(&["--appendonly", "yes"]);
    let mut r = s.raw();
    fill_persisted(&mut r);
    drop(r);
    s.stop_clean();
    s.start_again();
    let mut r = s.raw();
    check_persisted(&mut r);
    // Still writable, and the sticky encoding flag came back too.
    assert_eq!(
        r.cmd(&["ZREMRANGEBYRANK", "{t}large", "3", "-1"]),
        int(2997)
    );
    assert_eq!(encoding(&mut r, "{t}large"), "skiplist");
    assert_eq!(r.cmd(&["ZADD", "{t}small", "2", "d"]), int(1));
}

#[test]
fn acknowledged_zset_writes_survive_kill_9_with_appendfsync_always() {
    skip_if_redis!();
    let mut s = Server::start(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut r = s.raw();
    fill_persisted(&mut r);
    drop(r);
    s.restart();
    let mut r = s.raw();
    check_persisted(&mut r);
    // Changes after the first crash survive a second one.
    assert_eq!(r.cmd(&["ZREM", "{t}large", "member-0"]), int(1));
    assert_eq!(r.cmd(&["ZINCRBY", "{t}small", "10", "a"]), bulk("11.5"));
    assert_eq!(
        r.cmd(&["ZINTERSTORE", "{t}u", "2", "{t}u", "{t}small"]),
        int(3)
    );
    drop(r);
    s.restart();
    let mut r = s.raw();
    assert_eq!(r.cmd(&["ZCARD", "{t}large"]), int(2999));
    assert_eq!(r.cmd(&["ZSCORE", "{t}large", "member-0"]), Value::Null);
    assert_eq!(
        all(&mut r, "{t}u"),
        pairs(&[("b", "-inf"), ("c", "0.2"), ("a", "13")])
    );
    assert_eq!(r.cmd(&["ZSCORE", "{t}small", "a"]), bulk("11.5"));
}

#[test]
fn huge_numkeys_are_syntax_errors_not_crashes() {
    let (_s, mut r) = start();
    let max = "9223372036854775807";
    for cmd in [
        vec!["ZUNION", max, "a"],
        vec!["ZINTER", max, "a"],
        vec!["ZDIFF", max, "a"],
        vec!["ZINTERCARD", max, "a"],
        vec!["ZUNIONSTORE", "d", max, "a"],
        vec!["ZINTERSTORE", "d", max, "a"],
        vec!["ZDIFFSTORE", "d", max, "a"],
        vec!["ZMPOP", max, "a", "MIN"],
        vec!["BZMPOP", "0", max, "a", "MIN"],
    ] {
        assert_eq!(r.cmd(&cmd), err(SYNTAX), "{cmd:?}");
    }
    assert_eq!(r.cmd(&["ZADD", "z", "1", "a"]), int(1));
    assert_eq!(r.cmd(&["ZCARD", "z"]), int(1));
}

/// Keys on different workers (no hash tag): the multi-key commands see every key.
#[test]
fn multi_key_commands_across_workers() {
    let s = if is_redis() {
        Server::start(&[])
    } else {
        Server::start(&["--threads", "4"])
    };
    let mut r = s.raw();
    for k in ["a", "b", "c", "d", "e", "f"] {
        let m = format!("{k}-m");
        assert_eq!(r.cmd(&["ZADD", k, "1", &m, "2", "common"]), int(2));
    }
    assert_eq!(r.cmd(&["ZUNIONSTORE", "dst", "3", "a", "b", "c"]), int(4));
    assert_eq!(
        all(&mut r, "dst"),
        pairs(&[("a-m", "1"), ("b-m", "1"), ("c-m", "1"), ("common", "6")])
    );
    assert_eq!(
        r.cmd(&["ZINTER", "3", "a", "b", "c", "WITHSCORES"]),
        bulks(&["common", "6"])
    );
    assert_eq!(
        r.cmd(&["ZDIFF", "2", "a", "b", "WITHSCORES"]),
        bulks(&["a-m", "1"])
    );
    assert_eq!(r.cmd(&["ZINTERCARD", "3", "d", "e", "f"]), int(1));
    assert_eq!(r.cmd(&["ZRANGESTORE", "x", "b", "0", "-1"]), int(2));
    assert_eq!(all(&mut r, "x"), pairs(&[("b-m", "1"), ("common", "2")]));
    assert_eq!(
        r.cmd(&["ZMPOP", "3", "nokey", "b", "c", "MAX", "COUNT", "5"]),
        arr(vec![
            bulk("b"),
            arr(vec![bulks(&["common", "2"]), bulks(&["b-m", "1"])])
        ])
    );
    assert_eq!(r.cmd(&["EXISTS", "b"]), int(0));
    assert_eq!(
        r.cmd(&["BZPOPMIN", "nokey", "c", "0"]),
        bulks(&["c", "c-m", "1"])
    );
    string_key(&mut r, "s");
    assert_eq!(r.cmd(&["ZUNION", "2", "a", "s"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["ZDIFFSTORE", "e", "2", "f", "s"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["ZDIFFSTORE", "e", "2", "f", "a"]), int(1));
    assert_eq!(r.cmd(&["ZRANGE", "e", "0", "-1"]), bulks(&["f-m"]));
    // The server is still healthy.
    assert_eq!(r.cmd(&["ZCARD", "a"]), int(2));
}
