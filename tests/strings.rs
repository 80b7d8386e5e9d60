//! String and keyspace commands, checked end to end against a running server.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::thread::sleep;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn start() -> (Server, Raw) {
    let s = Server::start(&[]);
    let r = s.raw();
    (s, r)
}

#[test]
fn get_set_basic() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["GET", "foo"]), Value::Null);
    assert_eq!(r.cmd_raw(&["GET", "foo"]), b"$-1\r\n");
    assert_eq!(r.cmd(&["SET", "foo", "bar"]), ok());
    assert_eq!(r.cmd_raw(&["SET", "foo", "bar"]), b"+OK\r\n");
    assert_eq!(r.cmd(&["GET", "foo"]), bulk("bar"));
    assert_eq!(r.cmd_raw(&["GET", "foo"]), b"$3\r\nbar\r\n");
    // Overwrite, empty value, binary value.
    assert_eq!(r.cmd(&["SET", "foo", ""]), ok());
    assert_eq!(r.cmd_raw(&["GET", "foo"]), b"$0\r\n\r\n");
    let bin: Vec<u8> = (0..=255u8).collect();
    assert_eq!(r.cmd_bytes(&[b"SET", b"bin\x00key", &bin]), ok());
    assert_eq!(r.cmd_bytes(&[b"GET", b"bin\x00key"]), Value::Bulk(bin));
    // Case-insensitive command names.
    assert_eq!(r.cmd(&["set", "lower", "1"]), ok());
    assert_eq!(r.cmd(&["gEt", "lower"]), bulk("1"));
    // A large value round-trips.
    let big = "x".repeat(1 << 20);
    assert_eq!(r.cmd(&["SET", "big", &big]), ok());
    assert_eq!(r.cmd(&["GET", "big"]), bulk(&big));
    assert_eq!(r.cmd(&["STRLEN", "big"]), int(1 << 20));
    // Arity.
    assert_eq!(
        r.cmd(&["GET"]),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        r.cmd(&["GET", "a", "b"]),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        r.cmd(&["SET", "a"]),
        err("ERR wrong number of arguments for 'set' command")
    );
}

#[test]
fn get_set_with_redis_crate() {
    let s = Server::start(&[]);
    let mut c = s.client();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut c).unwrap();
    let v: Option<String> = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(v.as_deref(), Some("v"));
    let v: Option<String> = redis::cmd("GET").arg("nokey").query(&mut c).unwrap();
    assert_eq!(v, None);
    let n: i64 = redis::cmd("INCRBY").arg("n").arg(5).query(&mut c).unwrap();
    assert_eq!(n, 5);
    let vals: Vec<Option<String>> = redis::cmd("MGET")
        .arg("k")
        .arg("nokey")
        .arg("n")
        .query(&mut c)
        .unwrap();
    assert_eq!(vals, vec![Some("v".into()), None, Some("5".into())]);
    let e = redis::cmd("INCR")
        .arg("k")
        .query::<i64>(&mut c)
        .unwrap_err();
    assert_eq!(e.code(), Some("ERR"));
    assert_eq!(e.detail(), Some("value is not an integer or out of range"));
}

#[test]
fn set_expire_options() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["SET", "k", "v", "EX", "100"]), ok());
    let ttl = r.cmd(&["TTL", "k"]).int();
    assert!((99..=100).contains(&ttl), "ttl {ttl}");

    assert_eq!(r.cmd(&["SET", "k", "v", "PX", "100000"]), ok());
    let pttl = r.cmd(&["PTTL", "k"]).int();
    assert!((98_000..=100_000).contains(&pttl), "pttl {pttl}");

    let at = now_ms() / 1000 + 200;
    assert_eq!(r.cmd(&["SET", "k", "v", "EXAT", &at.to_string()]), ok());
    let ttl = r.cmd(&["TTL", "k"]).int();
    assert!((198..=200).contains(&ttl), "ttl {ttl}");
    assert_eq!(r.cmd(&["EXPIRETIME", "k"]), int(at as i64));

    let at = now_ms() + 300_000;
    assert_eq!(r.cmd(&["SET", "k", "v", "PXAT", &at.to_string()]), ok());
    let pttl = r.cmd(&["PTTL", "k"]).int();
    assert!((298_000..=300_000).contains(&pttl), "pttl {pttl}");
    assert_eq!(r.cmd(&["PEXPIRETIME", "k"]), int(at as i64));

    // Options are case-insensitive.
    assert_eq!(r.cmd(&["set", "k", "v", "ex", "50"]), ok());
    let ttl = r.cmd(&["TTL", "k"]).int();
    assert!((49..=50).contains(&ttl), "ttl {ttl}");

    // A plain SET clears the TTL.
    assert_eq!(r.cmd(&["SET", "k", "v"]), ok());
    assert_eq!(r.cmd(&["TTL", "k"]), int(-1));
    assert_eq!(r.cmd(&["TTL", "missing"]), int(-2));

    // EXAT / PXAT in the past: the key is gone at once.
    assert_eq!(r.cmd(&["SET", "past", "v", "PXAT", "1000"]), ok());
    assert_eq!(r.cmd(&["GET", "past"]), Value::Null);
    assert_eq!(r.cmd(&["EXISTS", "past"]), int(0));
}

#[test]
fn set_keepttl() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["SET", "k", "v1", "EX", "100"]), ok());
    assert_eq!(r.cmd(&["SET", "k", "v2", "KEEPTTL"]), ok());
    assert_eq!(r.cmd(&["GET", "k"]), bulk("v2"));
    let ttl = r.cmd(&["TTL", "k"]).int();
    assert!((99..=100).contains(&ttl), "ttl {ttl}");
    assert_eq!(r.cmd(&["SET", "k", "v3"]), ok());
    assert_eq!(r.cmd(&["TTL", "k"]), int(-1));
    // KEEPTTL on a key without TTL or a missing key.
    assert_eq!(r.cmd(&["SET", "n", "v", "KEEPTTL"]), ok());
    assert_eq!(r.cmd(&["TTL", "n"]), int(-1));
}

#[test]
fn set_nx_xx() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["SET", "k", "v", "XX"]), Value::Null);
    assert_eq!(r.cmd_raw(&["SET", "k", "v", "XX"]), b"$-1\r\n");
    assert_eq!(r.cmd(&["EXISTS", "k"]), int(0));
    assert_eq!(r.cmd(&["SET", "k", "v1", "NX"]), ok());
    assert_eq!(r.cmd(&["SET", "k", "v2", "NX"]), Value::Null);
    assert_eq!(r.cmd(&["GET", "k"]), bulk("v1"));
    assert_eq!(r.cmd(&["SET", "k", "v3", "XX"]), ok());
    assert_eq!(r.cmd(&["GET", "k"]), bulk("v3"));
    assert_eq!(r.cmd(&["SET", "k", "v4", "XX", "EX", "100"]), ok());
    assert!(r.cmd(&["TTL", "k"]).int() > 0);
    assert_eq!(r.cmd(&["SET", "k2", "v", "PX", "100000", "NX"]), ok());
    assert!(r.cmd(&["PTTL", "k2"]).int() > 0);
}

#[test]
fn set_get_option() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["SET", "k", "v1", "GET"]), Value::Null);
    assert_eq!(r.cmd(&["GET", "k"]), bulk("v1"));
    assert_eq!(r.cmd(&["SET", "k", "v2", "GET"]), bulk("v1"));
    assert_eq!(r.cmd(&["GET", "k"]), bulk("v2"));
    // GET combined with NX / XX (allowed since Redis 7.0).
    assert_eq!(r.cmd(&["SET", "k", "v3", "NX", "GET"]), bulk("v2"));
    assert_eq!(r.cmd(&["GET", "k"]), bulk("v2"));
    assert_eq!(r.cmd(&["SET", "new", "x", "NX", "GET"]), Value::Null);
    assert_eq!(r.cmd(&["GET", "new"]), bulk("x"));
    assert_eq!(r.cmd(&["SET", "k", "v4", "XX", "GET"]), bulk("v2"));
    assert_eq!(r.cmd(&["SET", "missing", "v", "XX", "GET"]), Value::Null);
    assert_eq!(r.cmd(&["EXISTS", "missing"]), int(0));
    assert_eq!(r.cmd(&["SET", "k", "v5", "GET", "EX", "100"]), bulk("v4"));
    assert!(r.cmd(&["TTL", "k"]).int() > 0);
}

#[test]
fn set_invalid_options() {
    let (_s, mut r) = start();
    for args in [
        vec!["SET", "k", "v", "NX", "XX"],
        vec!["SET", "k", "v", "XX", "NX"],
        vec!["SET", "k", "v", "EX", "10", "PX", "100"],
        vec!["SET", "k", "v", "EX", "10", "EXAT", "100"],
        vec!["SET", "k", "v", "PX", "10", "PXAT", "100"],
        vec!["SET", "k", "v", "EX", "10", "KEEPTTL"],
        vec!["SET", "k", "v", "KEEPTTL", "PX", "10"],
        vec!["SET", "k", "v", "EX"],
        vec!["SET", "k", "v", "PX"],
        vec!["SET", "k", "v", "FOO"],
        vec!["SET", "k", "v", "10"],
    ] {
        assert_eq!(r.cmd(&args), err(SYNTAX), "{args:?}");
    }
    for args in [
        vec!["SET", "k", "v", "EX", "0"],
        vec!["SET", "k", "v", "EX", "-1"],
        vec!["SET", "k", "v", "PX", "0"],
        vec!["SET", "k", "v", "PX", "-100"],
        vec!["SET", "k", "v", "EXAT", "0"],
        vec!["SET", "k", "v", "PXAT", "-5"],
        vec!["SET", "k", "v", "EX", "9223372036854775807"],
        vec!["SET", "k", "v", "PX", "9223372036854775807"],
    ] {
        assert_eq!(
            r.cmd(&args),
            err("ERR invalid expire time in 'set' command"),
            "{args:?}"
        );
    }
    for args in [
        vec!["SET", "k", "v", "EX", "abc"],
        vec!["SET", "k", "v", "PX", "1.5"],
        vec!["SET", "k", "v", "EX", "99999999999999999999"],
    ] {
        assert_eq!(r.cmd(&args), err(NOT_INT), "{args:?}");
    }
    // None of these created the key.
    assert_eq!(r.cmd(&["EXISTS", "k"]), int(0));
}

#[test]
fn setnx_setex_psetex_getset_getdel() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["SETNX", "k", "v1"]), int(1));
    assert_eq!(r.cmd(&["SETNX", "k", "v2"]), int(0));
    assert_eq!(r.cmd(&["GET", "k"]), bulk("v1"));

    assert_eq!(r.cmd(&["SETEX", "e", "100", "v"]), ok());
    assert_eq!(r.cmd(&["GET", "e"]), bulk("v"));
    assert!((99..=100).contains(&r.cmd(&["TTL", "e"]).int()));
    assert_eq!(
        r.cmd(&["SETEX", "e", "0", "v"]),
        err("ERR invalid expire time in 'setex' command")
    );
    assert_eq!(
        r.cmd(&["SETEX", "e", "-10", "v"]),
        err("ERR invalid expire time in 'setex' command")
    );
    assert_eq!(r.cmd(&["SETEX", "e", "ten", "v"]), err(NOT_INT));
    assert_eq!(
        r.cmd(&["SETEX", "e", "10"]),
        err("ERR wrong number of arguments for 'setex' command")
    );

    assert_eq!(r.cmd(&["PSETEX", "p", "100000", "v"]), ok());
    assert!((98_000..=100_000).contains(&r.cmd(&["PTTL", "p"]).int()));
    assert_eq!(
        r.cmd(&["PSETEX", "p", "0", "v"]),
        err("ERR invalid expire time in 'psetex' command")
    );

    assert_eq!(r.cmd(&["GETSET", "gs", "a"]), Value::Null);
    assert_eq!(r.cmd(&["GETSET", "gs", "b"]), bulk("a"));
    assert_eq!(r.cmd(&["GET", "gs"]), bulk("b"));
    // GETSET drops the TTL.
    assert_eq!(r.cmd(&["GETSET", "e", "x"]), bulk("v"));
    assert_eq!(r.cmd(&["TTL", "e"]), int(-1));

    assert_eq!(r.cmd(&["GETDEL", "gs"]), bulk("b"));
    assert_eq!(r.cmd(&["GETDEL", "gs"]), Value::Null);
    assert_eq!(r.cmd(&["EXISTS", "gs"]), int(0));
}

#[test]
fn mget_mset_msetnx() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["MSET", "a", "1", "b", "2", "c", "3"]), ok());
    assert_eq!(
        r.cmd(&["MGET", "a", "b", "nokey", "c"]),
        arr(vec![bulk("1"), bulk("2"), Value::Null, bulk("3")])
    );
    // Later pairs win.
    assert_eq!(r.cmd(&["MSET", "d", "1", "d", "2"]), ok());
    assert_eq!(r.cmd(&["GET", "d"]), bulk("2"));
    assert_eq!(
        r.cmd(&["MSET", "a"]),
        err("ERR wrong number of arguments for 'mset' command")
    );
    assert_eq!(
        r.cmd(&["MSET", "a", "1", "b"]),
        err("ERR wrong number of arguments for 'mset' command")
    );
    assert_eq!(
        r.cmd(&["MGET"]),
        err("ERR wrong number of arguments for 'mget' command")
    );
    // MSETNX is all or nothing.
    assert_eq!(r.cmd(&["MSETNX", "x", "1", "y", "2"]), int(1));
    assert_eq!(r.cmd(&["MSETNX", "z", "1", "x", "9"]), int(0));
    assert_eq!(r.cmd(&["EXISTS", "z"]), int(0));
    assert_eq!(r.cmd(&["GET", "x"]), bulk("1"));
    assert_eq!(
        r.cmd(&["MSETNX", "x", "1", "y"]),
        err("ERR wrong number of arguments for 'msetnx' command")
    );
    // MSET clears TTLs.
    assert_eq!(r.cmd(&["SET", "t", "v", "EX", "100"]), ok());
    assert_eq!(r.cmd(&["MSET", "t", "w"]), ok());
    assert_eq!(r.cmd(&["TTL", "t"]), int(-1));
}

#[test]
fn del_unlink_exists() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["MSET", "a", "1", "b", "2", "c", "3"]), ok());
    assert_eq!(r.cmd(&["EXISTS", "a"]), int(1));
    assert_eq!(r.cmd(&["EXISTS", "a", "b", "nokey"]), int(2));
    assert_eq!(r.cmd(&["EXISTS", "a", "a", "a"]), int(3));
    assert_eq!(r.cmd(&["DEL", "a", "nokey"]), int(1));
    assert_eq!(r.cmd(&["DEL", "a"]), int(0));
    assert_eq!(r.cmd(&["UNLINK", "b", "c", "b"]), int(2));
    assert_eq!(r.cmd(&["EXISTS", "a", "b", "c"]), int(0));
    assert_eq!(
        r.cmd(&["DEL"]),
        err("ERR wrong number of arguments for 'del' command")
    );
    assert_eq!(
        r.cmd(&["EXISTS"]),
        err("ERR wrong number of arguments for 'exists' command")
    );
}

#[test]
fn incr_decr() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["INCR", "n"]), int(1));
    assert_eq!(r.cmd(&["INCR", "n"]), int(2));
    assert_eq!(r.cmd(&["INCRBY", "n", "10"]), int(12));
    assert_eq!(r.cmd(&["INCRBY", "n", "-20"]), int(-8));
    assert_eq!(r.cmd(&["DECR", "n"]), int(-9));
    assert_eq!(r.cmd(&["DECRBY", "n", "-9"]), int(0));
    assert_eq!(r.cmd(&["DECRBY", "m", "5"]), int(-5));
    assert_eq!(r.cmd(&["GET", "n"]), bulk("0"));
    assert_eq!(r.cmd_raw(&["INCR", "n"]), b":1\r\n");
    // Values stored as strings are parsed.
    assert_eq!(r.cmd(&["SET", "s", "41"]), ok());
    assert_eq!(r.cmd(&["INCR", "s"]), int(42));
    assert_eq!(r.cmd(&["SET", "s", "-0"]), ok());
    assert_eq!(r.cmd(&["SET", "s", "  1"]), ok());
    assert_eq!(r.cmd(&["INCR", "s"]), err(NOT_INT));
    for bad in ["abc", "1.5", "007", "1 ", "", "+1", "12345678901234567890"] {
        assert_eq!(r.cmd(&["SET", "s", bad]), ok());
        assert_eq!(r.cmd(&["INCR", "s"]), err(NOT_INT), "value {bad:?}");
        assert_eq!(r.cmd(&["GET", "s"]), bulk(bad));
    }
    assert_eq!(r.cmd(&["INCRBY", "n", "abc"]), err(NOT_INT));
    assert_eq!(r.cmd(&["INCRBY", "n", "1.0"]), err(NOT_INT));
    assert_eq!(r.cmd(&["DECRBY", "n", "x"]), err(NOT_INT));
    assert_eq!(r.cmd(&["INCRBY", "n", "9223372036854775808"]), err(NOT_INT));
    // Overflow.
    assert_eq!(r.cmd(&["SET", "max", "9223372036854775807"]), ok());
    assert_eq!(
        r.cmd(&["INCR", "max"]),
        err("ERR increment or decrement would overflow")
    );
    assert_eq!(
        r.cmd(&["INCRBY", "max", "1"]),
        err("ERR increment or decrement would overflow")
    );
    assert_eq!(r.cmd(&["GET", "max"]), bulk("9223372036854775807"));
    assert_eq!(r.cmd(&["SET", "min", "-9223372036854775808"]), ok());
    assert_eq!(
        r.cmd(&["DECR", "min"]),
        err("ERR increment or decrement would overflow")
    );
    assert_eq!(
        r.cmd(&["DECRBY", "min", "1"]),
        err("ERR increment or decrement would overflow")
    );
    assert_eq!(
        r.cmd(&["DECRBY", "x", "-9223372036854775808"]),
        err("ERR decrement would overflow")
    );
    assert_eq!(
        r.cmd(&["INCRBY", "x", "-9223372036854775808"]),
        int(i64::MIN)
    );
    // INCR keeps the TTL.
    assert_eq!(r.cmd(&["SET", "t", "1", "EX", "100"]), ok());
    assert_eq!(r.cmd(&["INCR", "t"]), int(2));
    assert!(r.cmd(&["TTL", "t"]).int() > 0);
    assert_eq!(
        r.cmd(&["INCR"]),
        err("ERR wrong number of arguments for 'incr' command")
    );
}

#[test]
fn incrbyfloat() {
    let (_s, mut r) = start();
    // The examples from the Redis documentation.
    assert_eq!(r.cmd(&["SET", "mykey", "10.50"]), ok());
    assert_eq!(r.cmd(&["INCRBYFLOAT", "mykey", "0.1"]), bulk("10.6"));
    assert_eq!(r.cmd(&["INCRBYFLOAT", "mykey", "-5"]), bulk("5.6"));
    assert_eq!(r.cmd(&["SET", "mykey", "5.0e3"]), ok());
    assert_eq!(r.cmd(&["INCRBYFLOAT", "mykey", "2.0e2"]), bulk("5200"));
    assert_eq!(r.cmd(&["GET", "mykey"]), bulk("5200"));
    // Missing key starts at 0; integral results print without a dot.
    assert_eq!(r.cmd(&["INCRBYFLOAT", "f", "1.5"]), bulk("1.5"));
    assert_eq!(r.cmd(&["INCRBYFLOAT", "f", "1.5"]), bulk("3"));
    assert_eq!(r.cmd(&["INCRBYFLOAT", "f", "-3"]), bulk("0"));
    assert_eq!(r.cmd(&["INCRBYFLOAT", "f", "1e3"]), bulk("1000"));
    assert_eq!(r.cmd(&["SET", "i", "17"]), ok());
    assert_eq!(r.cmd(&["INCRBYFLOAT", "i", "0.25"]), bulk("17.25"));
    // Errors.
    assert_eq!(
        r.cmd(&["INCRBYFLOAT", "f", "abc"]),
        err("ERR value is not a valid float")
    );
    assert_eq!(
        r.cmd(&["INCRBYFLOAT", "f", "nan"]),
        err("ERR value is not a valid float")
    );
    assert_eq!(r.cmd(&["SET", "s", "hello"]), ok());
    assert_eq!(
        r.cmd(&["INCRBYFLOAT", "s", "1"]),
        err("ERR value is not a valid float")
    );
    assert_eq!(
        r.cmd(&["INCRBYFLOAT", "f", "inf"]),
        err("ERR increment would produce NaN or Infinity")
    );
    assert_eq!(
        r.cmd(&["INCRBYFLOAT", "f", "-inf"]),
        err("ERR increment would produce NaN or Infinity")
    );
    assert_eq!(r.cmd(&["GET", "f"]), bulk("1000"));
    // INCRBYFLOAT keeps the TTL.
    assert_eq!(r.cmd(&["SET", "t", "1", "EX", "100"]), ok());
    assert_eq!(r.cmd(&["INCRBYFLOAT", "t", "0.5"]), bulk("1.5"));
    assert!(r.cmd(&["TTL", "t"]).int() > 0);
}

/// Redis computes INCRBYFLOAT in long double and prints with 17 significant digits, so
/// 0.1 + 0.2 is "0.3" (not 0.30000000000000004).
#[test]
fn incrbyfloat_precision() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["INCRBYFLOAT", "f", "0.1"]), bulk("0.1"));
    assert_eq!(r.cmd(&["INCRBYFLOAT", "f", "0.2"]), bulk("0.3"));
    assert_eq!(r.cmd(&["INCRBYFLOAT", "f", "0.1"]), bulk("0.4"));
}

#[test]
fn append_strlen() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["STRLEN", "k"]), int(0));
    assert_eq!(r.cmd(&["APPEND", "k", "Hello"]), int(5));
    assert_eq!(r.cmd(&["APPEND", "k", " World"]), int(11));
    assert_eq!(r.cmd(&["GET", "k"]), bulk("Hello World"));
    assert_eq!(r.cmd(&["STRLEN", "k"]), int(11));
    assert_eq!(r.cmd(&["APPEND", "k", ""]), int(11));
    assert_eq!(r.cmd(&["APPEND", "e", ""]), int(0));
    assert_eq!(r.cmd(&["EXISTS", "e"]), int(1));
    // Integers are strings too.
    assert_eq!(r.cmd(&["INCRBY", "n", "123"]), int(123));
    assert_eq!(r.cmd(&["APPEND", "n", "4"]), int(4));
    assert_eq!(r.cmd(&["INCR", "n"]), int(1235));
    assert_eq!(r.cmd(&["STRLEN", "n"]), int(4));
    // APPEND keeps the TTL.
    assert_eq!(r.cmd(&["SET", "t", "a", "EX", "100"]), ok());
    assert_eq!(r.cmd(&["APPEND", "t", "b"]), int(2));
    assert!(r.cmd(&["TTL", "t"]).int() > 0);
}

#[test]
fn getrange_substr() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["SET", "k", "This is a string"]), ok());
    assert_eq!(r.cmd(&["GETRANGE", "k", "0", "3"]), bulk("This"));
    assert_eq!(r.cmd(&["GETRANGE", "k", "-3", "-1"]), bulk("ing"));
    assert_eq!(
        r.cmd(&["GETRANGE", "k", "0", "-1"]),
        bulk("This is a string")
    );
    assert_eq!(r.cmd(&["GETRANGE", "k", "10", "100"]), bulk("string"));
    assert_eq!(r.cmd(&["GETRANGE", "k", "5", "3"]), bulk(""));
    assert_eq!(r.cmd(&["GETRANGE", "k", "100", "200"]), bulk(""));
    assert_eq!(r.cmd(&["GETRANGE", "k", "-100", "3"]), bulk("This"));
    assert_eq!(r.cmd(&["GETRANGE", "k", "0", "-100"]), bulk("T"));
    assert_eq!(r.cmd(&["GETRANGE", "nokey", "0", "-1"]), bulk(""));
    assert_eq!(r.cmd(&["GETRANGE", "k", "a", "1"]), err(NOT_INT));
    assert_eq!(r.cmd(&["SUBSTR", "k", "0", "3"]), bulk("This"));
    assert_eq!(r.cmd(&["SUBSTR", "k", "-6", "-1"]), bulk("string"));
    assert_eq!(r.cmd(&["SET", "n", "12345"]), ok());
    assert_eq!(r.cmd(&["GETRANGE", "n", "1", "2"]), bulk("23"));
    assert_eq!(
        r.cmd(&["GETRANGE", "k", "0"]),
        err("ERR wrong number of arguments for 'getrange' command")
    );
}

#[test]
fn setrange() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["SET", "k", "Hello World"]), ok());
    assert_eq!(r.cmd(&["SETRANGE", "k", "6", "Redis"]), int(11));
    assert_eq!(r.cmd(&["GET", "k"]), bulk("Hello Redis"));
    assert_eq!(r.cmd(&["SETRANGE", "k", "11", "!!"]), int(13));
    assert_eq!(r.cmd(&["GET", "k"]), bulk("Hello Redis!!"));
    // Zero padding on a missing key.
    assert_eq!(r.cmd(&["SETRANGE", "p", "6", "Redis"]), int(11));
    assert_eq!(
        r.cmd(&["GET", "p"]),
        Value::Bulk(b"\0\0\0\0\0\0Redis".to_vec())
    );
    // An empty value does not create the key.
    assert_eq!(r.cmd(&["SETRANGE", "empty", "5", ""]), int(0));
    assert_eq!(r.cmd(&["EXISTS", "empty"]), int(0));
    assert_eq!(r.cmd(&["SETRANGE", "k", "100", ""]), int(13));
    assert_eq!(r.cmd(&["STRLEN", "k"]), int(13));
    // Errors.
    assert_eq!(
        r.cmd(&["SETRANGE", "k", "-1", "x"]),
        err("ERR offset is out of range")
    );
    assert_eq!(r.cmd(&["SETRANGE", "k", "x", "x"]), err(NOT_INT));
    assert_eq!(
        r.cmd(&["SETRANGE", "k", "536870911", "ab"]),
        err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
    assert_eq!(
        r.cmd(&["SETRANGE", "big", "536870912", "a"]),
        err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
    assert_eq!(r.cmd(&["EXISTS", "big"]), int(0));
    // The key keeps its TTL.
    assert_eq!(r.cmd(&["SET", "t", "abc", "EX", "100"]), ok());
    assert_eq!(r.cmd(&["SETRANGE", "t", "1", "X"]), int(3));
    assert_eq!(r.cmd(&["GET", "t"]), bulk("aXc"));
    assert!(r.cmd(&["TTL", "t"]).int() > 0);
}

#[test]
fn setrange_and_append_respect_proto_max_bulk_len() {
    let s = Server::start(&["--proto-max-bulk-len", "1048576"]);
    let mut r = s.raw();
    let limit_err = err("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    assert_eq!(r.cmd(&["SETRANGE", "k", "1048576", "x"]), limit_err);
    assert_eq!(r.cmd(&["SETRANGE", "k", "1048575", "x"]), int(1048576));
    assert_eq!(r.cmd(&["APPEND", "k", "y"]), limit_err);
    assert_eq!(r.cmd(&["STRLEN", "k"]), int(1048576));
}

#[test]
fn lcs() {
    let (_s, mut r) = start();
    assert_eq!(
        r.cmd(&["MSET", "key1", "ohmytext", "key2", "mynewtext"]),
        ok()
    );
    assert_eq!(r.cmd(&["LCS", "key1", "key2"]), bulk("mytext"));
    assert_eq!(r.cmd(&["LCS", "key1", "key2", "LEN"]), int(6));
    let range = |a: i64, b: i64| arr(vec![int(a), int(b)]);
    assert_eq!(
        r.cmd(&["LCS", "key1", "key2", "IDX"]),
        arr(vec![
            bulk("matches"),
            arr(vec![
                arr(vec![range(4, 7), range(5, 8)]),
                arr(vec![range(2, 3), range(0, 1)]),
            ]),
            bulk("len"),
            int(6),
        ])
    );
    assert_eq!(
        r.cmd(&["LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4"]),
        arr(vec![
            bulk("matches"),
            arr(vec![arr(vec![range(4, 7), range(5, 8)])]),
            bulk("len"),
            int(6),
        ])
    );
    assert_eq!(
        r.cmd(&[
            "LCS",
            "key1",
            "key2",
            "IDX",
            "MINMATCHLEN",
            "4",
            "WITHMATCHLEN"
        ]),
        arr(vec![
            bulk("matches"),
            arr(vec![arr(vec![range(4, 7), range(5, 8), int(4)])]),
            bulk("len"),
            int(6),
        ])
    );
    assert_eq!(
        r.cmd(&["LCS", "key1", "key2", "IDX", "WITHMATCHLEN"]),
        arr(vec![
            bulk("matches"),
            arr(vec![
                arr(vec![range(4, 7), range(5, 8), int(4)]),
                arr(vec![range(2, 3), range(0, 1), int(2)]),
            ]),
            bulk("len"),
            int(6),
        ])
    );
    // Missing keys are empty strings.
    assert_eq!(r.cmd(&["LCS", "key1", "nokey"]), bulk(""));
    assert_eq!(r.cmd(&["LCS", "key1", "nokey", "LEN"]), int(0));
    assert_eq!(
        r.cmd(&["LCS", "key1", "key2", "LEN", "IDX"]),
        err("ERR If you want both the length and indexes, please just use IDX.")
    );
    assert_eq!(r.cmd(&["LCS", "key1", "key2", "FOO"]), err(SYNTAX));
    assert_eq!(
        r.cmd(&["LCS", "key1", "key2", "IDX", "MINMATCHLEN", "x"]),
        err(NOT_INT)
    );
}

#[test]
fn type_command() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["TYPE", "nokey"]), simple("none"));
    assert_eq!(r.cmd(&["SET", "s", "v"]), ok());
    assert_eq!(r.cmd(&["TYPE", "s"]), simple("string"));
    assert_eq!(r.cmd_raw(&["TYPE", "s"]), b"+string\r\n");
    assert_eq!(r.cmd(&["INCR", "n"]), int(1));
    assert_eq!(r.cmd(&["TYPE", "n"]), simple("string"));
}

#[test]
fn type_of_collections() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["RPUSH", "l", "a"]), int(1));
    assert_eq!(r.cmd(&["SADD", "st", "a"]), int(1));
    assert_eq!(r.cmd(&["ZADD", "z", "1", "a"]), int(1));
    assert_eq!(r.cmd(&["HSET", "h", "f", "v"]), int(1));
    assert_eq!(r.cmd(&["TYPE", "l"]), simple("list"));
    assert_eq!(r.cmd(&["TYPE", "st"]), simple("set"));
    assert_eq!(r.cmd(&["TYPE", "z"]), simple("zset"));
    assert_eq!(r.cmd(&["TYPE", "h"]), simple("hash"));
}

fn sorted(v: &Value) -> Vec<String> {
    let mut s = v.strings();
    s.sort();
    s
}

#[test]
fn keys_glob_patterns() {
    let (_s, mut r) = start();
    for k in [
        "hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "h?llo", "h[a]llo", "foo", "Hello",
    ] {
        assert_eq!(r.cmd(&["SET", k, "1"]), ok());
    }
    assert_eq!(sorted(&r.cmd(&["KEYS", "*"])).len(), 10);
    assert_eq!(
        sorted(&r.cmd(&["KEYS", "h?llo"])),
        ["h*llo", "h?llo", "hallo", "hello", "hxllo"]
    );
    assert_eq!(
        sorted(&r.cmd(&["KEYS", "h*llo"])),
        ["h*llo", "h?llo", "h[a]llo", "hallo", "heeeello", "hello", "hllo", "hxllo"]
    );
    assert_eq!(sorted(&r.cmd(&["KEYS", "h[ae]llo"])), ["hallo", "hello"]);
    assert_eq!(
        sorted(&r.cmd(&["KEYS", "h[^e]llo"])),
        ["h*llo", "h?llo", "hallo", "hxllo"]
    );
    assert_eq!(sorted(&r.cmd(&["KEYS", "h[a-e]llo"])), ["hallo", "hello"]);
    assert_eq!(sorted(&r.cmd(&["KEYS", "h\\*llo"])), ["h*llo"]);
    assert_eq!(sorted(&r.cmd(&["KEYS", "h\\?llo"])), ["h?llo"]);
    assert_eq!(sorted(&r.cmd(&["KEYS", "h\\[a\\]llo"])), ["h[a]llo"]);
    assert_eq!(sorted(&r.cmd(&["KEYS", "foo"])), ["foo"]);
    assert_eq!(sorted(&r.cmd(&["KEYS", "nomatch*"])), Vec::<String>::new());
    assert_eq!(r.cmd_raw(&["KEYS", "nomatch*"]), b"*0\r\n");
    // Matching is case-sensitive.
    assert_eq!(sorted(&r.cmd(&["KEYS", "H*"])), ["Hello"]);
    assert_eq!(sorted(&r.cmd(&["KEYS", "*o"])).len(), 10);
    assert_eq!(sorted(&r.cmd(&["KEYS", "f*"])), ["foo"]);
    assert_eq!(
        r.cmd(&["KEYS"]),
        err("ERR wrong number of arguments for 'keys' command")
    );
}

/// Runs a full SCAN with extra arguments; returns every key returned (with duplicates).
fn scan_all(r: &mut Raw, extra: &[&str]) -> Vec<String> {
    let mut cursor = "0".to_string();
    let mut out = Vec::new();
    let mut calls = 0;
    loop {
        let mut args = vec!["SCAN", cursor.as_str()];
        args.extend_from_slice(extra);
        let reply = r.cmd(&args).items();
        assert_eq!(reply.len(), 2, "SCAN reply {reply:?}");
        let next = reply[0].text();
        out.extend(reply[1].strings());
        cursor = next;
        calls += 1;
        assert!(calls < 100_000, "SCAN does not terminate");
        if cursor == "0" {
            return out;
        }
    }
}

#[test]
fn scan_returns_every_key_once() {
    let (_s, mut r) = start();
    let mut expected = BTreeSet::new();
    let mut cmd: Vec<String> = vec!["MSET".into()];
    for i in 0..1000 {
        let k = format!("key:{i}");
        cmd.push(k.clone());
        cmd.push(i.to_string());
        expected.insert(k);
    }
    let args: Vec<&str> = cmd.iter().map(|s| s.as_str()).collect();
    assert_eq!(r.cmd(&args), ok());
    assert_eq!(r.cmd(&["DBSIZE"]), int(1000));
    for count in [None, Some("7"), Some("100"), Some("5000")] {
        let extra: Vec<&str> = match count {
            Some(c) => vec!["COUNT", c],
            None => vec![],
        };
        let got = scan_all(&mut r, &extra);
        let mut seen = HashMap::new();
        for k in &got {
            *seen.entry(k.clone()).or_insert(0) += 1;
        }
        let dups: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
        assert!(dups.is_empty(), "duplicates with COUNT {count:?}: {dups:?}");
        let got: BTreeSet<String> = got.into_iter().collect();
        assert_eq!(got, expected, "COUNT {count:?}");
    }
}

#[test]
fn scan_match_count_type() {
    let (_s, mut r) = start();
    for i in 0..100 {
        assert_eq!(r.cmd(&["SET", &format!("user:{i}"), "x"]), ok());
        assert_eq!(r.cmd(&["SET", &format!("other:{i}"), "x"]), ok());
    }

    let got: BTreeSet<String> = scan_all(&mut r, &["MATCH", "user:*"]).into_iter().collect();
    assert_eq!(got.len(), 100);
    assert!(got.iter().all(|k| k.starts_with("user:")));

    let got: BTreeSet<String> = scan_all(&mut r, &["MATCH", "user:1?", "COUNT", "10"])
        .into_iter()
        .collect();
    let want: BTreeSet<String> = (10..20).map(|i| format!("user:{i}")).collect();
    assert_eq!(got, want);

    let got = scan_all(&mut r, &["TYPE", "string", "COUNT", "50"]);
    assert_eq!(got.len(), 200);
    let got = scan_all(&mut r, &["TYPE", "hash"]);
    assert!(got.is_empty());

    // The reply shape: a bulk cursor and an array.
    let reply = r.cmd(&["SCAN", "0", "COUNT", "1000"]);
    let items = reply.items();
    assert!(matches!(items[0], Value::Bulk(_)), "{reply:?}");
    assert!(matches!(items[1], Value::Array(_)), "{reply:?}");

    // Errors. Redis 8.0 reads the cursor with string2ull: a strict integer, else strtoull
    // (leading spaces and a sign are fine, a negative strict integer is not).
    for bad in ["abc", "", "-1", "1 ", "0x1", "18446744073709551616"] {
        assert_eq!(r.cmd(&["SCAN", bad]), err("ERR invalid cursor"), "{bad:?}");
    }
    for ok in [" 0", "+0", "00", "-0", " -1", "18446744073709551615"] {
        assert_eq!(r.cmd(&["SCAN", ok]).items().len(), 2, "{ok:?}");
    }
    assert_eq!(r.cmd(&["SCAN", "0", "COUNT", "0"]), err(SYNTAX));
    assert_eq!(r.cmd(&["SCAN", "0", "COUNT", "abc"]), err(NOT_INT));
    assert_eq!(r.cmd(&["SCAN", "0", "FOO"]), err(SYNTAX));
    assert_eq!(r.cmd(&["SCAN", "0", "MATCH"]), err(SYNTAX));
    // An empty database.
    assert_eq!(r.cmd(&["FLUSHDB"]), ok());
    assert_eq!(r.cmd(&["SCAN", "0"]), arr(vec![bulk("0"), arr(vec![])]));
}

#[test]
fn scan_type_filter_with_collections() {
    let (_s, mut r) = start();
    for i in 0..50 {
        assert_eq!(r.cmd(&["SET", &format!("user:{i}"), "x"]), ok());
    }
    assert_eq!(r.cmd(&["RPUSH", "user:list", "a"]), int(1));
    assert_eq!(r.cmd(&["SADD", "user:set", "a"]), int(1));
    assert_eq!(r.cmd(&["HSET", "other:hash", "f", "v"]), int(1));
    let got: BTreeSet<String> = scan_all(&mut r, &["TYPE", "list"]).into_iter().collect();
    assert_eq!(got, BTreeSet::from(["user:list".to_string()]));
    let got: BTreeSet<String> = scan_all(&mut r, &["MATCH", "user:*", "TYPE", "set"])
        .into_iter()
        .collect();
    assert_eq!(got, BTreeSet::from(["user:set".to_string()]));
    let got: BTreeSet<String> = scan_all(&mut r, &["MATCH", "user:*", "TYPE", "hash"])
        .into_iter()
        .collect();
    assert!(got.is_empty());
    assert_eq!(scan_all(&mut r, &["TYPE", "string"]).len(), 50);
    assert_eq!(scan_all(&mut r, &["MATCH", "user:*"]).len(), 52);
}

/// String commands on keys of other types.
#[test]
fn wrongtype_errors_on_string_commands() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["RPUSH", "list", "a"]), int(1));
    assert_eq!(r.cmd(&["SET", "str", "1"]), ok());
    for args in [
        vec!["GET", "list"],
        vec!["SET", "list", "v", "GET"],
        vec!["GETSET", "list", "x"],
        vec!["GETDEL", "list"],
        vec!["INCR", "list"],
        vec!["DECRBY", "list", "2"],
        vec!["INCRBYFLOAT", "list", "1"],
        vec!["APPEND", "list", "a"],
        vec!["STRLEN", "list"],
        vec!["GETRANGE", "list", "0", "1"],
        vec!["SETRANGE", "list", "0", "x"],
    ] {
        assert_eq!(r.cmd(&args), err(WRONGTYPE), "{args:?}");
    }
    assert_eq!(
        r.cmd(&["LCS", "list", "str"]),
        err("ERR The specified keys must contain string values")
    );
    // The key is left alone.
    assert_eq!(r.cmd(&["TYPE", "list"]), simple("list"));
    assert_eq!(r.cmd(&["EXISTS", "list"]), int(1));
    // MGET returns nil for keys of other types.
    assert_eq!(
        r.cmd(&["MGET", "list", "str"]),
        arr(vec![Value::Null, bulk("1")])
    );
    // SET (without GET) and MSET overwrite a key of any type.
    assert_eq!(r.cmd(&["SET", "list", "v"]), ok());
    assert_eq!(r.cmd(&["TYPE", "list"]), simple("string"));
    assert_eq!(r.cmd(&["SADD", "set", "x"]), int(1));
    assert_eq!(r.cmd(&["MSET", "set", "v"]), ok());
    assert_eq!(r.cmd(&["GET", "set"]), bulk("v"));
    // DEL works on any type.
    assert_eq!(r.cmd(&["RPUSH", "l", "x"]), int(1));
    assert_eq!(r.cmd(&["SADD", "s", "x"]), int(1));
    assert_eq!(r.cmd(&["DEL", "l", "s"]), int(2));
}

#[test]
fn expired_keys_are_never_returned() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["SET", "gone", "v", "PX", "50"]), ok());
    assert_eq!(r.cmd(&["SET", "gone2", "v", "PX", "50"]), ok());
    assert_eq!(r.cmd(&["SET", "gone3", "5", "PX", "50"]), ok());
    assert_eq!(r.cmd(&["SET", "stay", "v", "EX", "100"]), ok());
    sleep(Duration::from_millis(120));
    assert_eq!(r.cmd(&["GET", "gone"]), Value::Null);
    assert_eq!(r.cmd(&["EXISTS", "gone", "gone2", "gone3"]), int(0));
    assert_eq!(r.cmd(&["KEYS", "*"]), bulks(&["stay"]));
    assert_eq!(scan_all(&mut r, &[]), vec!["stay".to_string()]);
    assert_eq!(r.cmd(&["TTL", "gone2"]), int(-2));
    assert_eq!(r.cmd(&["PTTL", "gone2"]), int(-2));
    assert_eq!(r.cmd(&["TYPE", "gone2"]), simple("none"));
    assert_eq!(r.cmd(&["STRLEN", "gone2"]), int(0));
    assert_eq!(
        r.cmd(&["MGET", "gone", "stay", "gone2"]),
        arr(vec![Value::Null, bulk("v"), Value::Null])
    );
    // Writes treat the key as missing.
    assert_eq!(r.cmd(&["INCR", "gone3"]), int(1));
    assert_eq!(r.cmd(&["TTL", "gone3"]), int(-1));
    assert_eq!(r.cmd(&["SET", "gone2", "x", "NX"]), ok());
    assert_eq!(r.cmd(&["APPEND", "gone", "ab"]), int(2));
    assert_eq!(r.cmd(&["DEL", "gone", "gone2", "gone3", "stay"]), int(4));
}

#[test]
fn expired_key_is_removed_eventually() {
    let (_s, mut r) = start();
    for i in 0..20 {
        assert_eq!(r.cmd(&["SET", &format!("k{i}"), "v", "PX", "30"]), ok());
    }
    assert_eq!(r.cmd(&["SET", "keep", "v"]), ok());
    // Active expiry removes keys nobody touches: DBSIZE drops to 1.
    assert!(
        wait_until(Duration::from_secs(5), || r.cmd(&["DBSIZE"]) == int(1)),
        "expired keys still counted: {:?}",
        r.cmd(&["DBSIZE"])
    );
}

fn mset_args(prefix: &str, n: usize) -> Vec<String> {
    let mut v = vec!["MSET".to_string()];
    for i in 0..n {
        v.push(format!("{prefix}{i}"));
        v.push(format!("val{i}"));
    }
    v
}

fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(|s| s.as_str()).collect()
}

/// Keys spread over slots (and, in Skerry, over worker threads).
#[test]
fn multi_key_commands_across_slots() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    let n = 300;
    assert_eq!(r.cmd(&as_strs(&mset_args("k", n))), ok());
    assert_eq!(r.cmd(&["DBSIZE"]), int(n as i64));

    let mut mget = vec!["MGET".to_string()];
    for i in 0..n {
        mget.push(format!("k{i}"));
        mget.push(format!("missing{i}"));
    }
    let reply = r.cmd(&as_strs(&mget)).items();
    assert_eq!(reply.len(), 2 * n);
    for i in 0..n {
        assert_eq!(reply[2 * i], bulk(&format!("val{i}")));
        assert_eq!(reply[2 * i + 1], Value::Null);
    }

    let mut exists = vec!["EXISTS".to_string()];
    exists.extend((0..n).map(|i| format!("k{i}")));
    exists.extend((0..50).map(|i| format!("missing{i}")));
    exists.push("k0".into());
    assert_eq!(r.cmd(&as_strs(&exists)), int(n as i64 + 1));

    // MSETNX across slots: one existing key blocks all.
    let mut msetnx = vec!["MSETNX".to_string()];
    for i in 0..100 {
        msetnx.push(format!("new{i}"));
        msetnx.push("x".into());
    }
    msetnx.push("k150".into());
    msetnx.push("x".into());
    assert_eq!(r.cmd(&as_strs(&msetnx)), int(0));
    assert_eq!(r.cmd(&["KEYS", "new*"]), arr(vec![]));
    msetnx.truncate(msetnx.len() - 2);
    assert_eq!(r.cmd(&as_strs(&msetnx)), int(1));
    assert_eq!(r.cmd(&["KEYS", "new*"]).items().len(), 100);

    // KEYS and SCAN see every worker.
    let keys: BTreeSet<String> = r.cmd(&["KEYS", "k*"]).strings().into_iter().collect();
    assert_eq!(keys.len(), n);
    let scanned = scan_all(&mut r, &["MATCH", "k*", "COUNT", "20"]);
    assert_eq!(scanned.len(), n);
    let scanned: BTreeSet<String> = scanned.into_iter().collect();
    assert_eq!(scanned, keys);

    let mut del = vec!["DEL".to_string()];
    del.extend((0..n).step_by(2).map(|i| format!("k{i}")));
    del.push("missing".into());
    assert_eq!(r.cmd(&as_strs(&del)), int((n / 2) as i64));
    let mut unlink = vec!["UNLINK".to_string()];
    unlink.extend((1..n).step_by(2).map(|i| format!("k{i}")));
    assert_eq!(r.cmd(&as_strs(&unlink)), int((n / 2) as i64));
    assert_eq!(r.cmd(&["DBSIZE"]), int(100));
    assert_eq!(r.cmd(&["FLUSHALL"]), ok());
    assert_eq!(r.cmd(&["DBSIZE"]), int(0));
    assert_eq!(r.cmd(&["KEYS", "*"]), arr(vec![]));
}
