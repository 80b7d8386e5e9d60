//! Hash commands, checked end to end against a running server (RESP2 and RESP3, errors,
//! WRONGTYPE, OBJECT ENCODING, persistence across restarts and kill -9).
//!
//! Except where marked Skerry-only, these tests pass against Redis 7.0 too
//! (`SKERRY_TEST_SERVER=redis`).

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use common::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const NOT_FLOAT: &str = "ERR value is not a valid float";
const SYNTAX: &str = "ERR syntax error";

fn start() -> (Server, Raw) {
    let s = Server::start(&[]);
    let r = s.raw();
    (s, r)
}

fn encoding(r: &mut Raw, key: &str) -> String {
    r.cmd(&["OBJECT", "ENCODING", key]).text()
}

/// HGETALL as (field, value) text pairs, in reply order.
fn hgetall(r: &mut Raw, key: &str) -> Vec<(String, String)> {
    r.cmd(&["HGETALL", key])
        .pairs()
        .into_iter()
        .map(|(f, v)| (f.text(), v.text()))
        .collect()
}

fn arity(cmd: &str) -> Value {
    err(&format!(
        "ERR wrong number of arguments for '{cmd}' command"
    ))
}

#[test]
fn hset_hget_hsetnx_hmset() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["HSET", "h", "f1", "v1"]), int(1));
    assert_eq!(r.cmd_raw(&["HSET", "h", "f1", "v1b"]), b":0\r\n");
    // Several pairs: counts only the new fields; the last value of a repeated field wins.
    assert_eq!(
        r.cmd(&["HSET", "h", "f2", "v2", "f1", "x", "f3", "v3", "f2", "v2b"]),
        int(2)
    );
    assert_eq!(r.cmd(&["HGET", "h", "f1"]), bulk("x"));
    assert_eq!(r.cmd(&["HGET", "h", "f2"]), bulk("v2b"));
    assert_eq!(r.cmd_raw(&["HGET", "h", "nope"]), b"$-1\r\n");
    assert_eq!(r.cmd_raw(&["HGET", "nokey", "f"]), b"$-1\r\n");
    // Binary and empty fields and values.
    assert_eq!(
        r.cmd_bytes(&[b"HSET", b"h", b"bin\x00\xff", b"\x00\x01\x02", b"", b""]),
        int(2)
    );
    assert_eq!(
        r.cmd_bytes(&[b"HGET", b"h", b"bin\x00\xff"]),
        Value::Bulk(b"\x00\x01\x02".to_vec())
    );
    assert_eq!(r.cmd_raw(&["HGET", "h", ""]), b"$0\r\n\r\n");
    assert_eq!(r.cmd(&["HLEN", "h"]), int(5));
    // HMSET replies OK.
    assert_eq!(
        r.cmd_raw(&["HMSET", "h", "f4", "v4", "f1", "y"]),
        b"+OK\r\n"
    );
    assert_eq!(r.cmd(&["HGET", "h", "f1"]), bulk("y"));
    assert_eq!(r.cmd(&["HMSET", "new", "a", "1"]), ok());
    assert_eq!(r.cmd(&["TYPE", "new"]), simple("hash"));
    // HSETNX.
    assert_eq!(r.cmd(&["HSETNX", "h", "f1", "z"]), int(0));
    assert_eq!(r.cmd(&["HGET", "h", "f1"]), bulk("y"));
    assert_eq!(r.cmd(&["HSETNX", "h", "f5", "v5"]), int(1));
    assert_eq!(r.cmd(&["HGET", "h", "f5"]), bulk("v5"));
    assert_eq!(r.cmd(&["HSETNX", "nx", "f", "v"]), int(1));
    assert_eq!(r.cmd(&["HGETALL", "nx"]), bulks(&["f", "v"]));
    // Arity.
    assert_eq!(r.cmd(&["HSET", "h", "f1", "v1", "f2"]), arity("hset"));
    assert_eq!(r.cmd(&["HMSET", "h", "f1", "v1", "f2"]), arity("hmset"));
    assert_eq!(r.cmd(&["HSET", "h", "f1"]), arity("hset"));
    assert_eq!(r.cmd(&["HMSET", "h"]), arity("hmset"));
    assert_eq!(r.cmd(&["HSETNX", "h", "f"]), arity("hsetnx"));
    assert_eq!(r.cmd(&["HGET", "h"]), arity("hget"));
    assert_eq!(r.cmd(&["HGET", "h", "a", "b"]), arity("hget"));
    // The failed commands changed nothing.
    assert_eq!(r.cmd(&["HLEN", "h"]), int(7));
    // A large value.
    let big = "v".repeat(300_000);
    assert_eq!(r.cmd(&["HSET", "h", "big", &big]), int(1));
    assert_eq!(r.cmd(&["HGET", "h", "big"]), bulk(&big));
    assert_eq!(r.cmd(&["HSTRLEN", "h", "big"]), int(300_000));
}

#[test]
fn wrongtype_for_every_hash_command() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["SET", "str", "x"]), ok());
    let cmds: &[&[&str]] = &[
        &["HSET", "str", "f", "v"],
        &["HMSET", "str", "f", "v"],
        &["HSETNX", "str", "f", "v"],
        &["HGET", "str", "f"],
        &["HMGET", "str", "f", "g"],
        &["HDEL", "str", "f"],
        &["HLEN", "str"],
        &["HSTRLEN", "str", "f"],
        &["HEXISTS", "str", "f"],
        &["HGETALL", "str"],
        &["HKEYS", "str"],
        &["HVALS", "str"],
        &["HINCRBY", "str", "f", "1"],
        &["HINCRBYFLOAT", "str", "f", "1.5"],
        &["HRANDFIELD", "str"],
        &["HRANDFIELD", "str", "0"],
        &["HRANDFIELD", "str", "3", "WITHVALUES"],
        &["HSCAN", "str", "0"],
        &["HSCAN", "str", "0", "COUNT", "5"],
    ];
    for c in cmds {
        assert_eq!(r.cmd(c), err(WRONGTYPE), "{c:?}");
    }
    assert_eq!(r.cmd(&["GET", "str"]), bulk("x"));
    // And the other way round: string commands on a hash.
    assert_eq!(r.cmd(&["HSET", "h", "f", "v"]), int(1));
    assert_eq!(r.cmd(&["GET", "h"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["APPEND", "h", "x"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["TYPE", "h"]), simple("hash"));
    // SET replaces a hash with a string.
    assert_eq!(r.cmd(&["SET", "h", "now a string"]), ok());
    assert_eq!(r.cmd(&["HGET", "h", "f"]), err(WRONGTYPE));
}

#[test]
fn hmget_hlen_hstrlen_hexists() {
    let (_s, mut r) = start();
    assert_eq!(
        r.cmd(&["HSET", "h", "a", "1", "b", "", "c", "-123"]),
        int(3)
    );
    assert_eq!(
        r.cmd(&["HMGET", "h", "a", "x", "b", "c", "a"]),
        arr(vec![
            bulk("1"),
            Value::Null,
            bulk(""),
            bulk("-123"),
            bulk("1")
        ])
    );
    assert_eq!(
        r.cmd_raw(&["HMGET", "nokey", "a", "b"]),
        b"*2\r\n$-1\r\n$-1\r\n"
    );
    assert_eq!(r.cmd(&["HMGET", "h"]), arity("hmget"));
    assert_eq!(r.cmd(&["HLEN", "h"]), int(3));
    assert_eq!(r.cmd(&["HLEN", "nokey"]), int(0));
    assert_eq!(r.cmd(&["HSTRLEN", "h", "a"]), int(1));
    assert_eq!(r.cmd(&["HSTRLEN", "h", "b"]), int(0));
    assert_eq!(r.cmd(&["HSTRLEN", "h", "c"]), int(4));
    assert_eq!(r.cmd(&["HSTRLEN", "h", "x"]), int(0));
    assert_eq!(r.cmd(&["HSTRLEN", "nokey", "x"]), int(0));
    for v in [
        "-9223372036854775808",
        "9223372036854775808",
        "0",
        "x",
        "007",
    ] {
        assert_eq!(
            r.cmd(&["HSET", "h", "n", v]),
            int(i64::from(v == "-9223372036854775808"))
        );
        assert_eq!(r.cmd(&["HSTRLEN", "h", "n"]), int(v.len() as i64));
        assert_eq!(r.cmd(&["HGET", "h", "n"]), bulk(v));
    }
    assert_eq!(r.cmd(&["HEXISTS", "h", "a"]), int(1));
    assert_eq!(r.cmd(&["HEXISTS", "h", "b"]), int(1));
    assert_eq!(r.cmd(&["HEXISTS", "h", "zz"]), int(0));
    assert_eq!(r.cmd(&["HEXISTS", "nokey", "a"]), int(0));
    assert_eq!(r.cmd(&["HLEN"]), arity("hlen"));
    assert_eq!(r.cmd(&["HEXISTS", "h"]), arity("hexists"));
}

#[test]
fn hgetall_hkeys_hvals_in_insertion_order_for_small_hashes() {
    let (s, mut r) = start();
    assert_eq!(r.cmd(&["HSET", "h", "z", "1", "a", "2", "m", "3"]), int(3));
    assert_eq!(r.cmd(&["HSET", "h", "b", "4", "a", "5"]), int(1));
    assert_eq!(
        r.cmd(&["HGETALL", "h"]),
        bulks(&["z", "1", "a", "5", "m", "3", "b", "4"])
    );
    assert_eq!(r.cmd(&["HKEYS", "h"]), bulks(&["z", "a", "m", "b"]));
    assert_eq!(r.cmd(&["HVALS", "h"]), bulks(&["1", "5", "3", "4"]));
    // A removal closes the gap; a re-added field goes to the end.
    assert_eq!(r.cmd(&["HDEL", "h", "a"]), int(1));
    assert_eq!(r.cmd(&["HSET", "h", "a", "6"]), int(1));
    assert_eq!(r.cmd(&["HKEYS", "h"]), bulks(&["z", "m", "b", "a"]));
    // Missing keys.
    assert_eq!(r.cmd_raw(&["HGETALL", "nokey"]), b"*0\r\n");
    assert_eq!(r.cmd_raw(&["HKEYS", "nokey"]), b"*0\r\n");
    assert_eq!(r.cmd_raw(&["HVALS", "nokey"]), b"*0\r\n");
    assert_eq!(r.cmd(&["HGETALL", "h", "x"]), arity("hgetall"));
    // RESP3: HGETALL is a map (an empty one for a missing key); HKEYS/HVALS stay arrays.
    let mut r3 = resp3(&s);
    assert_eq!(
        r3.cmd(&["HGETALL", "h"]),
        Value::Map(vec![
            (bulk("z"), bulk("1")),
            (bulk("m"), bulk("3")),
            (bulk("b"), bulk("4")),
            (bulk("a"), bulk("6")),
        ])
    );
    assert_eq!(r3.cmd_raw(&["HGETALL", "nokey"]), b"%0\r\n");
    assert_eq!(r3.cmd_raw(&["HKEYS", "nokey"]), b"*0\r\n");
    assert_eq!(r3.cmd(&["HKEYS", "h"]), bulks(&["z", "m", "b", "a"]));
    assert_eq!(r3.cmd(&["HVALS", "h"]), bulks(&["1", "3", "4", "6"]));
    assert_eq!(r3.cmd_raw(&["HGET", "h", "nope"]), b"_\r\n");
    assert_eq!(
        r3.cmd_raw(&["HMGET", "h", "nope", "z"]),
        b"*2\r\n_\r\n$1\r\n1\r\n"
    );
}

#[test]
fn big_hash_replies_hold_every_field() {
    let (_s, mut r) = start();
    let mut expect = BTreeMap::new();
    for chunk in 0..10 {
        let mut args: Vec<String> = vec!["HSET".into(), "big".into()];
        for i in chunk * 100..(chunk + 1) * 100 {
            args.push(format!("field:{i}"));
            args.push(format!("value:{}", i * 7));
            expect.insert(format!("field:{i}"), format!("value:{}", i * 7));
        }
        let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        assert_eq!(r.cmd(&refs), int(100));
    }
    assert_eq!(r.cmd(&["HLEN", "big"]), int(1000));
    assert_eq!(encoding(&mut r, "big"), "hashtable");
    let got: BTreeMap<String, String> = hgetall(&mut r, "big").into_iter().collect();
    assert_eq!(got, expect);
    let keys: BTreeSet<String> = r.cmd(&["HKEYS", "big"]).strings().into_iter().collect();
    assert_eq!(keys, expect.keys().cloned().collect());
    let mut vals = r.cmd(&["HVALS", "big"]).strings();
    vals.sort();
    let mut want: Vec<String> = expect.values().cloned().collect();
    want.sort();
    assert_eq!(vals, want);
    assert_eq!(r.cmd(&["HGET", "big", "field:777"]), bulk("value:5439"));
}

#[test]
fn hdel_counts_and_removes_the_key_when_empty() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["HSET", "h", "a", "1", "b", "2", "c", "3"]), int(3));
    assert_eq!(r.cmd(&["HDEL", "h", "x", "y"]), int(0));
    assert_eq!(r.cmd(&["HDEL", "h", "a", "a", "x"]), int(1));
    assert_eq!(r.cmd(&["HDEL", "nokey", "a"]), int(0));
    assert_eq!(r.cmd(&["HLEN", "h"]), int(2));
    assert_eq!(r.cmd(&["HGET", "h", "a"]), Value::Null);
    // TTL survives an HDEL that keeps the hash.
    assert_eq!(r.cmd(&["EXPIRE", "h", "1000"]), int(1));
    assert_eq!(r.cmd(&["HDEL", "h", "b"]), int(1));
    assert!(r.cmd(&["TTL", "h"]).int() > 900);
    // Removing the last field removes the key (and its TTL).
    assert_eq!(r.cmd(&["HDEL", "h", "c", "zz"]), int(1));
    assert_eq!(r.cmd(&["EXISTS", "h"]), int(0));
    assert_eq!(r.cmd(&["TYPE", "h"]), simple("none"));
    assert_eq!(r.cmd(&["HSET", "h", "n", "1"]), int(1));
    assert_eq!(r.cmd(&["TTL", "h"]), int(-1));
    assert_eq!(r.cmd(&["HDEL", "h"]), arity("hdel"));
    // HSET keeps a TTL too.
    assert_eq!(r.cmd(&["EXPIRE", "h", "1000"]), int(1));
    assert_eq!(r.cmd(&["HSET", "h", "m", "2"]), int(1));
    assert!(r.cmd(&["TTL", "h"]).int() > 900);
    // An expired hash is gone for every hash command.
    assert_eq!(r.cmd(&["PEXPIRE", "h", "1"]), int(1));
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(r.cmd(&["HLEN", "h"]), int(0));
    assert_eq!(r.cmd(&["HGET", "h", "m"]), Value::Null);
    assert_eq!(r.cmd(&["HSETNX", "h", "m", "new"]), int(1));
    assert_eq!(r.cmd(&["HGETALL", "h"]), bulks(&["m", "new"]));
}

#[test]
fn hincrby() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["HINCRBY", "h", "n", "5"]), int(5));
    assert_eq!(r.cmd(&["HINCRBY", "h", "n", "-7"]), int(-2));
    assert_eq!(r.cmd(&["HGET", "h", "n"]), bulk("-2"));
    assert_eq!(
        r.cmd(&["HINCRBY", "h", "m", "17179869184"]),
        int(17179869184)
    );
    assert_eq!(r.cmd(&["HSET", "h", "s", "100"]), int(1));
    assert_eq!(r.cmd(&["HINCRBY", "h", "s", "1"]), int(101));
    // Bad stored values.
    for v in [
        " 11",
        "11 ",
        "1.5",
        "abc",
        "",
        "+1",
        "01",
        "-0",
        "99999999999999999999",
    ] {
        assert_eq!(r.cmd(&["HSET", "h", "bad", v]), int(i64::from(v == " 11")));
        assert_eq!(
            r.cmd(&["HINCRBY", "h", "bad", "1"]),
            err("ERR hash value is not an integer"),
            "{v:?}"
        );
        assert_eq!(r.cmd(&["HGET", "h", "bad"]), bulk(v));
    }
    // Bad increments, checked before the key (even on a wrong type).
    assert_eq!(r.cmd(&["SET", "str", "1"]), ok());
    for incr in ["x", "1.0", " 1", "9223372036854775808", ""] {
        assert_eq!(
            r.cmd(&["HINCRBY", "h", "n", incr]),
            err(NOT_INT),
            "{incr:?}"
        );
        assert_eq!(r.cmd(&["HINCRBY", "str", "n", incr]), err(NOT_INT));
    }
    // Overflow, both ways; the value stays.
    assert_eq!(r.cmd(&["HSET", "h", "big", "9223372036854775800"]), int(1));
    assert_eq!(r.cmd(&["HINCRBY", "h", "big", "7"]), int(i64::MAX));
    assert_eq!(
        r.cmd(&["HINCRBY", "h", "big", "1"]),
        err("ERR increment or decrement would overflow")
    );
    assert_eq!(
        r.cmd(&["HSET", "h", "small", "-9223372036854775484"]),
        int(1)
    );
    assert_eq!(
        r.cmd(&["HINCRBY", "h", "small", "-1"]),
        int(-9223372036854775485)
    );
    assert_eq!(
        r.cmd(&["HINCRBY", "h", "small", "-10000"]),
        err("ERR increment or decrement would overflow")
    );
    assert_eq!(r.cmd(&["HGET", "h", "small"]), bulk("-9223372036854775485"));
    assert_eq!(
        r.cmd(&["HINCRBY", "h", "small", "-9223372036854775808"]),
        err("ERR increment or decrement would overflow")
    );
    assert_eq!(
        r.cmd(&["HINCRBY", "h", "zero", "-9223372036854775808"]),
        int(i64::MIN)
    );
    // A failed increment on a missing key creates nothing.
    assert_eq!(r.cmd(&["HINCRBY", "fresh", "f", "x"]), err(NOT_INT));
    assert_eq!(r.cmd(&["EXISTS", "fresh"]), int(0));
    assert_eq!(r.cmd(&["HINCRBY", "h", "n"]), arity("hincrby"));
}

#[test]
fn hincrbyfloat() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["HINCRBYFLOAT", "h", "f", "2.5"]), bulk("2.5"));
    assert_eq!(r.cmd(&["HINCRBYFLOAT", "h", "f", "3.5"]), bulk("6"));
    assert_eq!(r.cmd(&["HGET", "h", "f"]), bulk("6"));
    // Long double arithmetic and Redis's formatting.
    assert_eq!(r.cmd(&["HINCRBYFLOAT", "h", "g", "1.23"]), bulk("1.23"));
    assert_eq!(r.cmd(&["HINCRBYFLOAT", "h", "g", "0.77"]), bulk("2"));
    assert_eq!(r.cmd(&["HINCRBYFLOAT", "h", "g", "-0.1"]), bulk("1.9"));
    assert_eq!(r.cmd(&["HSET", "h", "e", "5.0e3"]), int(1));
    assert_eq!(r.cmd(&["HINCRBYFLOAT", "h", "e", "2.0e2"]), bulk("5200"));
    assert_eq!(r.cmd(&["HSET", "h", "i", "17179869184"]), int(1));
    assert_eq!(
        r.cmd(&["HINCRBYFLOAT", "h", "i", "17179869184"]),
        bulk("34359738368")
    );
    assert_eq!(
        r.cmd(&["HINCRBYFLOAT", "h", "z", "0.0000005"]),
        bulk("0.0000005")
    );
    assert_eq!(r.cmd(&["HINCRBYFLOAT", "h", "neg", "-3"]), bulk("-3"));
    assert_eq!(r.cmd(&["HINCRBYFLOAT", "h", "neg", "3"]), bulk("0"));
    // Bad stored values (spaces, NUL inside, not a number).
    for v in [" 11", "11 ", "1\x002", "abc", "nan"] {
        assert_eq!(r.cmd(&["HSET", "h", "bad", v]), int(i64::from(v == " 11")));
        assert_eq!(
            r.cmd(&["HINCRBYFLOAT", "h", "bad", "1"]),
            err("ERR hash value is not a float"),
            "{v:?}"
        );
    }
    // Bad increments come first, even on a wrong type or a missing key.
    assert_eq!(r.cmd(&["SET", "str", "1"]), ok());
    for incr in ["x", " 1", "1 ", "nan", ""] {
        assert_eq!(
            r.cmd(&["HINCRBYFLOAT", "h", "f", incr]),
            err(NOT_FLOAT),
            "{incr:?}"
        );
        assert_eq!(r.cmd(&["HINCRBYFLOAT", "str", "f", incr]), err(NOT_FLOAT));
    }
    for incr in ["inf", "+inf", "-inf", "infinity"] {
        assert_eq!(
            r.cmd(&["HINCRBYFLOAT", "hfoo", "f", incr]),
            err("ERR value is NaN or Infinity"),
            "{incr:?}"
        );
        assert_eq!(
            r.cmd(&["HINCRBYFLOAT", "str", "f", incr]),
            err("ERR value is NaN or Infinity")
        );
    }
    assert_eq!(r.cmd(&["EXISTS", "hfoo"]), int(0));
    // A result that is not finite.
    assert_eq!(r.cmd(&["HSET", "h", "huge", "1e4932"]), int(1));
    assert_eq!(
        r.cmd(&["HINCRBYFLOAT", "h", "huge", "1e4932"]),
        err("ERR increment would produce NaN or Infinity")
    );
    assert_eq!(r.cmd(&["HGET", "h", "huge"]), bulk("1e4932"));
    assert_eq!(r.cmd(&["HINCRBYFLOAT", "h", "f"]), arity("hincrbyfloat"));
}

#[test]
fn hincrbyfloat_reply_is_a_bulk_string_in_resp3() {
    let s = Server::start(&[]);
    let mut r = resp3(&s);
    assert_eq!(
        r.cmd_raw(&["HINCRBYFLOAT", "h", "f", "1.5"]),
        b"$3\r\n1.5\r\n"
    );
    assert_eq!(r.cmd_raw(&["HINCRBY", "h", "n", "2"]), b":2\r\n");
}

fn hrandfield_fixture(r: &mut Raw) -> HashMap<String, String> {
    let mut m = HashMap::new();
    for i in 0..10 {
        let (f, v) = (format!("f{i}"), format!("v{i}"));
        assert_eq!(r.cmd(&["HSET", "h", &f, &v]), int(1));
        m.insert(f, v);
    }
    m
}

#[test]
fn hrandfield_without_count_and_errors() {
    let (s, mut r) = start();
    let m = hrandfield_fixture(&mut r);
    let mut seen = BTreeSet::new();
    for _ in 0..300 {
        let f = r.cmd(&["HRANDFIELD", "h"]).text();
        assert!(m.contains_key(&f));
        seen.insert(f);
    }
    assert_eq!(seen.len(), 10, "every field comes up eventually");
    assert_eq!(r.cmd_raw(&["HRANDFIELD", "nokey"]), b"$-1\r\n");
    // Count 0 and missing keys: an empty array.
    assert_eq!(r.cmd_raw(&["HRANDFIELD", "h", "0"]), b"*0\r\n");
    assert_eq!(
        r.cmd_raw(&["HRANDFIELD", "h", "0", "WITHVALUES"]),
        b"*0\r\n"
    );
    assert_eq!(r.cmd_raw(&["HRANDFIELD", "nokey", "100"]), b"*0\r\n");
    assert_eq!(
        r.cmd_raw(&["HRANDFIELD", "nokey", "-5", "withvalues"]),
        b"*0\r\n"
    );
    // Errors, in Redis's order: count, then syntax, then the WITHVALUES range.
    assert_eq!(r.cmd(&["HRANDFIELD", "h", "x"]), err(NOT_INT));
    assert_eq!(r.cmd(&["HRANDFIELD", "h", "1.5"]), err(NOT_INT));
    assert_eq!(r.cmd(&["HRANDFIELD", "nokey", "x", "bogus"]), err(NOT_INT));
    assert_eq!(
        r.cmd(&["HRANDFIELD", "h", "-9223372036854775808"]),
        err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    );
    assert_eq!(r.cmd(&["HRANDFIELD", "h", "1", "bogus"]), err(SYNTAX));
    assert_eq!(
        r.cmd(&["HRANDFIELD", "h", "1", "WITHVALUES", "x"]),
        err(SYNTAX)
    );
    assert_eq!(r.cmd(&["HRANDFIELD", "nokey", "1", "bogus"]), err(SYNTAX));
    for c in [
        "-9223372036854770000",
        "9223372036854770000",
        "-4611686018427387904",
    ] {
        assert_eq!(
            r.cmd(&["HRANDFIELD", "h", c, "WITHVALUES"]),
            err("ERR value is out of range"),
            "{c}"
        );
    }
    // RESP3: a missing key without count is a null.
    let mut r3 = resp3(&s);
    assert_eq!(r3.cmd_raw(&["HRANDFIELD", "nokey"]), b"_\r\n");
    assert_eq!(r3.cmd_raw(&["HRANDFIELD", "nokey", "3"]), b"*0\r\n");
}

#[test]
fn hrandfield_with_count() {
    let (s, mut r) = start();
    let m = hrandfield_fixture(&mut r);
    for enc in ["listpack", "hashtable"] {
        if enc == "hashtable" {
            assert_eq!(r.cmd(&["HSET", "h", "f0", &"x".repeat(100)]), int(0));
            assert_eq!(r.cmd(&["HSET", "h", "f0", "v0"]), int(0));
        }
        assert_eq!(encoding(&mut r, "h"), enc);
        // Negative: repeats allowed, exactly |count| fields.
        let res = r.cmd(&["HRANDFIELD", "h", "-1001"]).strings();
        assert_eq!(res.len(), 1001);
        let mut counts: HashMap<String, usize> = HashMap::new();
        for f in &res {
            assert!(m.contains_key(f));
            *counts.entry(f.clone()).or_default() += 1;
        }
        assert_eq!(counts.len(), 10);
        // Roughly uniform: each of 10 fields about 100 times in 1001.
        assert!(counts.values().all(|&c| c > 40), "{counts:?}");
        let res = r.cmd(&["HRANDFIELD", "h", "-20", "WITHVALUES"]).pairs();
        assert_eq!(res.len(), 20);
        for (f, v) in &res {
            assert_eq!(m[&f.text()], v.text());
        }
        // Positive, at least the size: every field once (with values: every pair).
        for c in ["10", "11", "1000"] {
            let got: BTreeSet<String> = r
                .cmd(&["HRANDFIELD", "h", c])
                .strings()
                .into_iter()
                .collect();
            assert_eq!(got, m.keys().cloned().collect::<BTreeSet<_>>());
            let got: HashMap<String, String> = r
                .cmd(&["HRANDFIELD", "h", c, "withvalues"])
                .pairs()
                .into_iter()
                .map(|(f, v)| (f.text(), v.text()))
                .collect();
            assert_eq!(got, m);
        }
        // Positive, fewer than the size: distinct fields, and all of them come up.
        for size in [1usize, 2, 8, 9] {
            let mut seen = BTreeSet::new();
            for i in 0..200 {
                let c = size.to_string();
                let fields: Vec<String> = if i % 2 == 0 {
                    r.cmd(&["HRANDFIELD", "h", &c]).strings()
                } else {
                    let p = r.cmd(&["HRANDFIELD", "h", &c, "WITHVALUES"]).pairs();
                    p.iter()
                        .map(|(f, v)| {
                            assert_eq!(m[&f.text()], v.text());
                            f.text()
                        })
                        .collect()
                };
                assert_eq!(fields.len(), size);
                let distinct: BTreeSet<&String> = fields.iter().collect();
                assert_eq!(distinct.len(), size, "{fields:?}");
                seen.extend(fields);
            }
            assert_eq!(seen.len(), 10);
        }
    }
    // RESP3: WITHVALUES gives [field, value] pairs; without, a flat array.
    let mut r3 = resp3(&s);
    for c in ["3", "-3", "20"] {
        let res = r3.cmd(&["HRANDFIELD", "h", c, "WITHVALUES"]).items();
        assert_eq!(res.len(), if c == "20" { 10 } else { 3 });
        for pair in res {
            let p = pair.strings();
            assert_eq!(p.len(), 2);
            assert_eq!(m[&p[0]], p[1]);
        }
        let res = r3.cmd(&["HRANDFIELD", "h", c]).items();
        assert!(res.iter().all(|v| matches!(v, Value::Bulk(_))));
    }
    assert_eq!(
        r3.cmd(&["HRANDFIELD", "h", "1", "WITHVALUES"])
            .items()
            .len(),
        1
    );
}

/// Runs a whole HSCAN iteration; returns (field, value) pairs in reply order and the number
/// of calls.
fn hscan_all(r: &mut Raw, key: &str, extra: &[&str]) -> (Vec<(String, String)>, usize) {
    let mut cursor = "0".to_string();
    let mut out = Vec::new();
    let mut calls = 0;
    loop {
        let mut args = vec!["HSCAN", key, cursor.as_str()];
        args.extend_from_slice(extra);
        let reply = r.cmd(&args).items();
        assert_eq!(reply.len(), 2);
        let next = reply[0].text();
        for (f, v) in reply[1].pairs() {
            out.push((f.text(), v.text()));
        }
        calls += 1;
        assert!(calls < 10_000);
        if next == "0" {
            return (out, calls);
        }
        cursor = next;
    }
}

#[test]
fn hscan_small_and_big_hashes() {
    let (s, mut r) = start();
    // A listpack: everything in one step, in order, whatever the cursor and COUNT.
    assert_eq!(
        r.cmd(&["HSET", "small", "b", "1", "a", "2", "c", "3"]),
        int(3)
    );
    assert_eq!(
        r.cmd(&["HSCAN", "small", "0"]),
        arr(vec![bulk("0"), bulks(&["b", "1", "a", "2", "c", "3"])])
    );
    assert_eq!(
        r.cmd(&["HSCAN", "small", "0", "COUNT", "1"]),
        arr(vec![bulk("0"), bulks(&["b", "1", "a", "2", "c", "3"])])
    );
    assert_eq!(
        r.cmd(&["HSCAN", "small", "12345", "COUNT", "1"]),
        arr(vec![bulk("0"), bulks(&["b", "1", "a", "2", "c", "3"])])
    );
    // A hashtable: several steps, every field exactly once over the iteration.
    let mut args: Vec<String> = vec!["HSET".into(), "big".into()];
    for i in 0..1000 {
        args.push(format!("key:{i}"));
        args.push(i.to_string());
    }
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(r.cmd(&refs), int(1000));
    assert_eq!(encoding(&mut r, "big"), "hashtable");
    let (items, calls) = hscan_all(&mut r, "big", &[]);
    assert!(calls > 20, "{calls} calls for 1000 fields at COUNT 10");
    let fields: BTreeSet<&String> = items.iter().map(|(f, _)| f).collect();
    assert_eq!(fields.len(), 1000);
    assert_eq!(
        items.len(),
        1000,
        "no field twice without changes meanwhile"
    );
    for (f, v) in &items {
        assert_eq!(f, &format!("key:{v}"));
    }
    let (items, calls) = hscan_all(&mut r, "big", &["COUNT", "100"]);
    assert_eq!(items.len(), 1000);
    assert!(calls < 50, "{calls}");
    // MATCH filters on the field (value dropped along), COUNT still bounds the step.
    let (items, _) = hscan_all(&mut r, "big", &["MATCH", "key:1?", "COUNT", "50"]);
    let got: BTreeSet<String> = items.into_iter().map(|(f, _)| f).collect();
    let want: BTreeSet<String> = (10..20).map(|i| format!("key:{i}")).collect();
    assert_eq!(got, want);
    assert_eq!(
        r.cmd(&[
            "HMSET", "mykey", "foo", "1", "fab", "2", "fiz", "3", "foobar", "10", "1", "a", "2",
            "b"
        ]),
        ok()
    );
    assert_eq!(
        r.cmd(&["HSCAN", "mykey", "0", "MATCH", "foo*", "COUNT", "10000"]),
        arr(vec![bulk("0"), bulks(&["foo", "1", "foobar", "10"])])
    );
    assert_eq!(
        r.cmd(&["hscan", "mykey", "0", "match", "*"]).items()[1]
            .items()
            .len(),
        12
    );
    // Fields added and removed during an iteration: those there all along come back.
    let mut cursor = "0".to_string();
    let mut seen = BTreeSet::new();
    let mut step = 0;
    loop {
        let reply = r.cmd(&["HSCAN", "big", &cursor]).items();
        for (f, _) in reply[1].pairs() {
            seen.insert(f.text());
        }
        step += 1;
        assert_eq!(r.cmd(&["HSET", "big", &format!("new:{step}"), "x"]), int(1));
        if step % 3 == 0 {
            assert_eq!(
                r.cmd(&["HDEL", "big", &format!("new:{}", step - 1)]),
                int(1)
            );
        }
        cursor = reply[0].text();
        if cursor == "0" {
            break;
        }
    }
    assert!((0..1000).all(|i| seen.contains(&format!("key:{i}"))));
    // Missing key: an empty step, and its options are not even parsed (as Redis).
    assert_eq!(
        r.cmd_raw(&["HSCAN", "nokey", "0"]),
        b"*2\r\n$1\r\n0\r\n*0\r\n"
    );
    assert_eq!(
        r.cmd(&["HSCAN", "nokey", "0", "COUNT", "0", "BOGUS"]),
        arr(vec![bulk("0"), arr(vec![])])
    );
    // Errors.
    // Redis 8.0 parses the cursor with string2ull: strict integers, else strtoull (leading
    // spaces and a sign are accepted, trailing bytes are not).
    for c in [" 1", "+1", "01", "\t2"] {
        let reply = r.cmd(&["HSCAN", "small", c]).items();
        assert_eq!(reply[1].items().len(), 6, "{c:?}");
        assert_eq!(
            r.cmd(&["HSCAN", "nokey", c]),
            arr(vec![bulk("0"), arr(vec![])])
        );
    }
    for c in [
        "x",
        "1.5",
        "1 ",
        "",
        "-1",
        "18446744073709551616",
        "+",
        "-",
        "0x1",
    ] {
        assert_eq!(
            r.cmd(&["HSCAN", "small", c]),
            err("ERR invalid cursor"),
            "{c:?}"
        );
        assert_eq!(r.cmd(&["HSCAN", "nokey", c]), err("ERR invalid cursor"));
    }
    assert_eq!(r.cmd(&["HSCAN", "small", "0", "COUNT", "0"]), err(SYNTAX));
    assert_eq!(r.cmd(&["HSCAN", "small", "0", "COUNT", "-1"]), err(SYNTAX));
    assert_eq!(r.cmd(&["HSCAN", "small", "0", "COUNT", "x"]), err(NOT_INT));
    assert_eq!(r.cmd(&["HSCAN", "small", "0", "COUNT"]), err(SYNTAX));
    assert_eq!(r.cmd(&["HSCAN", "small", "0", "MATCH"]), err(SYNTAX));
    assert_eq!(r.cmd(&["HSCAN", "small", "0", "TYPE", "hash"]), err(SYNTAX));
    assert_eq!(r.cmd(&["HSCAN", "small", "0", "NOPE", "1"]), err(SYNTAX));
    assert_eq!(r.cmd(&["HSCAN", "small"]), arity("hscan"));
    // RESP3: the same arrays.
    let mut r3 = resp3(&s);
    assert_eq!(
        r3.cmd(&["HSCAN", "small", "0"]),
        arr(vec![bulk("0"), bulks(&["b", "1", "a", "2", "c", "3"])])
    );
}

#[test]
fn object_encoding_follows_redis_thresholds() {
    let (_s, mut r) = start();
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "hash-max-listpack-entries"]),
        bulks(&["hash-max-listpack-entries", "512"])
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "hash-max-ziplist-value"]),
        bulks(&["hash-max-ziplist-value", "64"])
    );
    assert_eq!(r.cmd(&["HSET", "h", "f", "v"]), int(1));
    assert_eq!(encoding(&mut r, "h"), "listpack");
    // 512 fields (Redis 7.0's default limit) stay a listpack; the 513th converts.
    for i in 0..511 {
        assert_eq!(r.cmd(&["HSET", "h", &format!("f{i}"), "v"]), int(1));
    }
    assert_eq!(r.cmd(&["HLEN", "h"]), int(512));
    assert_eq!(encoding(&mut r, "h"), "listpack");
    assert_eq!(r.cmd(&["HSET", "h", "one-more", "v"]), int(1));
    assert_eq!(encoding(&mut r, "h"), "hashtable");
    // Sticky: removing fields does not convert back.
    for i in 0..511 {
        assert_eq!(r.cmd(&["HDEL", "h", &format!("f{i}")]), int(1));
    }
    assert_eq!(r.cmd(&["HLEN", "h"]), int(2));
    assert_eq!(encoding(&mut r, "h"), "hashtable");
    // A value or field longer than 64 bytes converts.
    assert_eq!(r.cmd(&["HSET", "v", "f", &"x".repeat(64)]), int(1));
    assert_eq!(encoding(&mut r, "v"), "listpack");
    assert_eq!(r.cmd(&["HSET", "v", "f", &"x".repeat(65)]), int(0));
    assert_eq!(encoding(&mut r, "v"), "hashtable");
    assert_eq!(r.cmd(&["HSETNX", "k", &"k".repeat(65), "1"]), int(1));
    assert_eq!(encoding(&mut r, "k"), "hashtable");
    // An HSETNX that writes nothing converts nothing.
    assert_eq!(r.cmd(&["HSET", "nx", "f", "1"]), int(1));
    assert_eq!(r.cmd(&["HSETNX", "nx", "f", &"x".repeat(100)]), int(0));
    assert_eq!(encoding(&mut r, "nx"), "listpack");
    // The thresholds are configurable (and the old names are aliases).
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "hash-max-listpack-value", "8"]),
        ok()
    );
    assert_eq!(r.cmd(&["HSET", "smallhash", "tmp", "0"]), int(1));
    assert_eq!(r.cmd(&["HSET", "bighash", "tmp", "0"]), int(1));
    assert_eq!(
        r.cmd(&["HINCRBYFLOAT", "smallhash", "tmp", "0.000005"]),
        bulk("0.000005")
    );
    assert_eq!(
        r.cmd(&["HINCRBYFLOAT", "bighash", "tmp", "0.0000005"]),
        bulk("0.0000005")
    );
    assert_eq!(encoding(&mut r, "smallhash"), "listpack");
    assert_eq!(encoding(&mut r, "bighash"), "hashtable");
    assert_eq!(r.cmd(&["HINCRBYFLOAT", "s2", "abcdefgh", "1"]), bulk("1"));
    assert_eq!(r.cmd(&["HINCRBY", "b2", "abcdefghi", "1"]), int(1));
    assert_eq!(encoding(&mut r, "s2"), "listpack");
    assert_eq!(encoding(&mut r, "b2"), "hashtable");
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "hash-max-ziplist-value", "64"]),
        ok()
    );
    // Lowering the entry limit: Redis converts at the next write of a field, not at a
    // removal, nor at a write that does not happen.
    let mut args: Vec<String> = vec!["HSET".into(), "lower".into()];
    for i in 0..10 {
        args.push(format!("f{i}"));
        args.push("v".into());
    }
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(r.cmd(&refs), int(10));
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "hash-max-ziplist-entries", "4"]),
        ok()
    );
    assert_eq!(encoding(&mut r, "lower"), "listpack");
    assert_eq!(r.cmd(&["HDEL", "lower", "f0"]), int(1));
    assert_eq!(r.cmd(&["HSETNX", "lower", "f1", "v"]), int(0));
    assert_eq!(encoding(&mut r, "lower"), "listpack");
    assert_eq!(r.cmd(&["HSET", "lower", "f1", "update"]), int(0));
    assert_eq!(encoding(&mut r, "lower"), "hashtable");
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "hash-max-listpack-entries", "128"]),
        ok()
    );
    // 64 fields with the entry limit at 32.
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "hash-max-ziplist-entries", "32"]),
        ok()
    );
    for i in 0..64 {
        r.cmd(&["HSET", "stress", &format!("field{i}"), "x"]);
    }
    assert_eq!(encoding(&mut r, "stress"), "hashtable");
}

#[test]
fn command_info_and_docs() {
    let (_s, mut r) = start();
    for (name, arity, first) in [
        ("hset", -4, 1),
        ("hsetnx", 4, 1),
        ("hmset", -4, 1),
        ("hget", 3, 1),
        ("hmget", -3, 1),
        ("hdel", -3, 1),
        ("hlen", 2, 1),
        ("hstrlen", 3, 1),
        ("hexists", 3, 1),
        ("hgetall", 2, 1),
        ("hkeys", 2, 1),
        ("hvals", 2, 1),
        ("hincrby", 4, 1),
        ("hincrbyfloat", 4, 1),
        ("hrandfield", -2, 1),
        ("hscan", -3, 1),
    ] {
        let info = r.cmd(&["COMMAND", "INFO", name]).items();
        let entry = info[0].items();
        assert_eq!(entry[0].text(), name);
        assert_eq!(entry[1], int(arity), "{name}");
        assert_eq!(entry[3], int(first), "{name}");
        let docs = r.cmd(&["COMMAND", "DOCS", name]);
        let doc = docs
            .get(name)
            .unwrap_or_else(|| panic!("no docs for {name}"));
        assert_eq!(doc.get("group").unwrap().text(), "hash");
    }
    let info = r.cmd(&["COMMAND", "INFO", "hgetall"]).items()[0].items();
    let flags = info[2].strings();
    assert!(flags.contains(&"readonly".to_string()));
    assert!(!flags.contains(&"fast".to_string()));
    let info = r.cmd(&["COMMAND", "INFO", "hdel"]).items()[0].items();
    let flags = info[2].strings();
    assert!(flags.contains(&"write".to_string()) && flags.contains(&"fast".to_string()));
    assert!(!flags.contains(&"denyoom".to_string()));
}

#[test]
fn hashes_survive_a_clean_restart() {
    skip_if_redis!();
    let mut s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd(&["HSET", "small", "z", "1", "a", "2", "m", "3"]),
        int(3)
    );
    assert_eq!(r.cmd(&["HDEL", "small", "a"]), int(1));
    assert_eq!(r.cmd(&["HINCRBY", "small", "z", "41"]), int(42));
    assert_eq!(r.cmd(&["HINCRBYFLOAT", "small", "f", "1.5"]), bulk("1.5"));
    assert_eq!(
        r.cmd_bytes(&[b"HSET", b"small", b"bin\x00", b"\xff\x00"]),
        int(1)
    );
    let mut args: Vec<String> = vec!["HSET".into(), "big".into()];
    for i in 0..600 {
        args.push(format!("f{i}"));
        args.push(format!("v{i}"));
    }
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(r.cmd(&refs), int(600));
    // Big once, then shrunk: still a hashtable after the restart.
    for i in 0..590 {
        assert_eq!(r.cmd(&["HDEL", "big", &format!("f{i}")]), int(1));
    }
    assert_eq!(r.cmd(&["EXPIRE", "big", "1000"]), int(1));
    assert_eq!(r.cmd(&["HSET", "gone", "f", "v"]), int(1));
    assert_eq!(r.cmd(&["HDEL", "gone", "f"]), int(1));
    let small_before = hgetall(&mut r, "small");
    let big_before = hgetall(&mut r, "big");
    drop(r);
    s.stop_clean();
    s.start_again();
    let mut r = s.raw();
    assert_eq!(hgetall(&mut r, "small"), small_before);
    assert_eq!(
        r.cmd(&["HKEYS", "small"]),
        bulks(&["z", "m", "f", "bin\x00"])
    );
    assert_eq!(
        r.cmd_bytes(&[b"HGET", b"small", b"bin\x00"]),
        Value::Bulk(b"\xff\x00".to_vec())
    );
    assert_eq!(encoding(&mut r, "small"), "listpack");
    assert_eq!(hgetall(&mut r, "big"), big_before);
    assert_eq!(r.cmd(&["HLEN", "big"]), int(10));
    assert_eq!(encoding(&mut r, "big"), "hashtable");
    assert!(r.cmd(&["TTL", "big"]).int() > 900);
    assert_eq!(r.cmd(&["EXISTS", "gone"]), int(0));
    // Still writable after the restart.
    assert_eq!(r.cmd(&["HINCRBY", "small", "z", "1"]), int(43));
    assert_eq!(r.cmd(&["HSETNX", "small", "z", "x"]), int(0));
}

#[test]
fn acknowledged_hash_writes_survive_kill_9_with_appendfsync_always() {
    skip_if_redis!();
    let mut s = Server::start(&["--appendfsync", "always"]);
    let mut model: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut rng = Rng::new(42);
    for round in 0..3 {
        let mut r = s.raw();
        for _ in 0..400 {
            let key = format!("h{}", rng.range(0, 8));
            let field = format!("f{}", rng.range(0, 40));
            let h = model.entry(key.clone()).or_default();
            match rng.range(0, 5) {
                0 | 1 => {
                    let v = format!("v{}", rng.next_u64());
                    let new = h.insert(field.clone(), v.clone()).is_none();
                    assert_eq!(r.cmd(&["HSET", &key, &field, &v]), int(i64::from(new)));
                }
                2 => {
                    let had = h.remove(&field).is_some();
                    assert_eq!(r.cmd(&["HDEL", &key, &field]), int(i64::from(had)));
                }
                3 => {
                    let cur: i64 = match h.get(&field) {
                        Some(v) => match v.parse() {
                            Ok(n) => n,
                            Err(_) => continue,
                        },
                        None => 0,
                    };
                    h.insert(field.clone(), (cur + 3).to_string());
                    assert_eq!(r.cmd(&["HINCRBY", &key, &field, "3"]), int(cur + 3));
                }
                _ => {
                    let new = !h.contains_key(&field);
                    if new {
                        h.insert(field.clone(), "nx".into());
                    }
                    assert_eq!(r.cmd(&["HSETNX", &key, &field, "nx"]), int(i64::from(new)));
                }
            }
            if model[&key].is_empty() {
                model.remove(&key);
            }
        }
        drop(r);
        s.restart(); // SIGKILL, then start on the same directory
        let mut r = s.raw();
        for i in 0..8 {
            let key = format!("h{i}");
            let got: BTreeMap<String, String> = hgetall(&mut r, &key).into_iter().collect();
            let want = model.get(&key).cloned().unwrap_or_default();
            assert_eq!(got, want, "round {round}, {key}");
            assert_eq!(r.cmd(&["EXISTS", &key]), int(i64::from(!want.is_empty())));
        }
    }
}

#[test]
fn memory_usage_of_a_hash() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["HSET", "h", "f", &"v".repeat(1000)]), int(1));
    assert!(r.cmd(&["MEMORY", "USAGE", "h"]).int() > 1000);
    assert!(r.cmd(&["MEMORY", "USAGE", "h", "SAMPLES", "0"]).int() > 1000);
    assert_eq!(r.cmd_raw(&["MEMORY", "USAGE", "nokey"]), b"$-1\r\n");
    assert_eq!(
        r.cmd(&["MEMORY", "USAGE", "h", "SAMPLES", "-1"]),
        err(SYNTAX)
    );
    assert_eq!(
        r.cmd(&["MEMORY", "USAGE", "h", "SAMPLES", "x"]),
        err(NOT_INT)
    );
    assert_eq!(r.cmd(&["MEMORY", "USAGE", "h", "SAMPLES"]), err(SYNTAX));
    assert_eq!(r.cmd(&["MEMORY", "USAGE", "h", "BOGUS", "1"]), err(SYNTAX));
    assert_eq!(
        r.cmd(&["MEMORY", "USAGE"]),
        err("ERR wrong number of arguments for 'memory|usage' command")
    );
    assert!(r.cmd(&["MEMORY", "HELP"]).strings()[0].starts_with("MEMORY <subcommand>"));
}

#[test]
fn keyspace_hits_count_reads_only() {
    let (_s, mut r) = start();
    let stats = |r: &mut Raw| {
        (
            info_u64(r, "stats", "keyspace_hits").unwrap(),
            info_u64(r, "stats", "keyspace_misses").unwrap(),
        )
    };
    let (h0, m0) = stats(&mut r);
    assert_eq!(r.cmd(&["HSET", "h", "f", "1", "g", "x"]), int(2));
    assert_eq!(r.cmd(&["HSETNX", "h", "f", "2"]), int(0));
    assert_eq!(r.cmd(&["HSETNX", "h", "n", "2"]), int(1));
    assert_eq!(r.cmd(&["HDEL", "h", "absent"]), int(0));
    assert_eq!(r.cmd(&["HDEL", "nokey", "absent"]), int(0));
    assert_eq!(r.cmd(&["HDEL", "h", "n"]), int(1));
    assert_eq!(r.cmd(&["HINCRBY", "h", "f", "1"]), int(2));
    assert_eq!(
        r.cmd(&["HINCRBY", "h", "g", "1"]),
        err("ERR hash value is not an integer")
    );
    assert_eq!(r.cmd(&["HINCRBYFLOAT", "h", "f", "0.5"]), bulk("2.5"));
    assert_eq!(stats(&mut r), (h0, m0), "writes count no hits or misses");
    assert_eq!(r.cmd(&["HGET", "h", "f"]), bulk("2.5"));
    assert_eq!(r.cmd(&["HGET", "h", "absent"]), Value::Null);
    assert_eq!(r.cmd(&["HMGET", "nokey", "f"]), arr(vec![Value::Null]));
    assert_eq!(r.cmd(&["HLEN", "nokey"]), int(0));
    assert_eq!(stats(&mut r), (h0 + 2, m0 + 2));
    // The no-op writes changed nothing.
    assert_eq!(r.cmd(&["HGETALL", "h"]), bulks(&["f", "2.5", "g", "x"]));
}

#[test]
fn hrandfield_refuses_a_runaway_negative_count() {
    // Skerry-only: Redis would try to build a reply of 2^63 elements.
    skip_if_redis!();
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["HSET", "h", "f", "v"]), int(1));
    assert_eq!(
        r.cmd(&["HRANDFIELD", "h", "-9223372036854775807"]),
        err("ERR value is out of range")
    );
    assert_eq!(
        r.cmd(&["HRANDFIELD", "h", "-16777217"]),
        err("ERR value is out of range")
    );
    assert_eq!(
        r.cmd(&["HRANDFIELD", "h", "-100000"]).items().len(),
        100_000
    );
    // A large positive count is fine: it is capped by the hash's size.
    assert_eq!(
        r.cmd(&["HRANDFIELD", "h", "9223372036854775807"]),
        bulks(&["f"])
    );
}
