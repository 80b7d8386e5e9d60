//! List commands, checked end to end against a running server (Redis 7.0 replies, errors,
//! RESP2 and RESP3 forms, persistence).

mod common;

use common::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";

fn start() -> (Server, Raw) {
    let s = Server::start(&[]);
    let r = s.raw();
    (s, r)
}

fn range(r: &mut Raw, key: &str) -> Value {
    r.cmd(&["LRANGE", key, "0", "-1"])
}

#[test]
fn push_and_len() {
    let (_s, mut r) = start();
    assert_eq!(r.cmd(&["LPUSH", "l", "a"]), int(1));
    assert_eq!(r.cmd(&["LPUSH", "l", "b", "c"]), int(3));
    assert_eq!(r.cmd(&["RPUSH", "l", "d", "e"]), int(5));
    assert_eq!(range(&mut r, "l"), bulks(&["c", "b", "a", "d", "e"]));
    assert_eq!(r.cmd(&["LLEN", "l"]), int(5));
    assert_eq!(r.cmd(&["LLEN", "nokey"]), int(0));
    assert_eq!(r.cmd(&["TYPE", "l"]), simple("list"));
    // Redis 7.2+: a small list is a listpack.
    assert_eq!(r.cmd(&["OBJECT", "ENCODING", "l"]), bulk("listpack"));
    // The X forms only push onto an existing list.
    assert_eq!(r.cmd(&["LPUSHX", "nokey", "a"]), int(0));
    assert_eq!(r.cmd(&["RPUSHX", "nokey", "a", "b"]), int(0));
    assert_eq!(r.cmd(&["EXISTS", "nokey"]), int(0));
    assert_eq!(r.cmd(&["LPUSHX", "l", "x", "y"]), int(7));
    assert_eq!(r.cmd(&["RPUSHX", "l", "z"]), int(8));
    assert_eq!(
        range(&mut r, "l"),
        bulks(&["y", "x", "c", "b", "a", "d", "e", "z"])
    );
    // Binary and empty elements round-trip.
    let bin: Vec<u8> = (0..=255u8).collect();
    assert_eq!(r.cmd_bytes(&[b"RPUSH", b"bin", &bin, b""]), int(2));
    assert_eq!(
        r.cmd(&["LRANGE", "bin", "0", "-1"]),
        arr(vec![Value::Bulk(bin), bulk("")])
    );
    // Wrong type and arity.
    r.cmd(&["SET", "str", "v"]);
    for cmd in ["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"] {
        assert_eq!(r.cmd(&[cmd, "str", "a"]), err(WRONGTYPE), "{cmd}");
        assert_eq!(
            r.cmd(&[cmd, "l"]),
            err(&format!(
                "ERR wrong number of arguments for '{}' command",
                cmd.to_lowercase()
            ))
        );
    }
    assert_eq!(r.cmd(&["LLEN", "str"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["GET", "l"]), err(WRONGTYPE));
}

#[test]
fn pop_with_and_without_count() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["RPUSH", "l", "a", "b", "c", "d", "e"]);
    assert_eq!(r.cmd(&["LPOP", "l"]), bulk("a"));
    assert_eq!(r.cmd(&["RPOP", "l"]), bulk("e"));
    assert_eq!(r.cmd(&["LPOP", "l", "2"]), bulks(&["b", "c"]));
    assert_eq!(r.cmd(&["LPOP", "l", "0"]), arr(vec![]));
    assert_eq!(r.cmd(&["RPOP", "l", "5"]), bulks(&["d"]));
    // The last pop deleted the key.
    assert_eq!(r.cmd(&["EXISTS", "l"]), int(0));
    r.cmd(&["RPUSH", "l", "1", "2", "3"]);
    assert_eq!(r.cmd(&["RPOP", "l", "2"]), bulks(&["3", "2"]));
    // Missing key: a null bulk without count, a null array with it (even count 0).
    assert_eq!(r.cmd_raw(&["LPOP", "nokey"]), b"$-1\r\n");
    assert_eq!(r.cmd_raw(&["RPOP", "nokey", "3"]), b"*-1\r\n");
    assert_eq!(r.cmd_raw(&["LPOP", "nokey", "0"]), b"*-1\r\n");
    // Errors.
    assert_eq!(
        r.cmd(&["LPOP", "l", "-1"]),
        err("ERR value is out of range, must be positive")
    );
    assert_eq!(
        r.cmd(&["LPOP", "l", "x"]),
        err("ERR value is out of range, must be positive")
    );
    assert_eq!(
        r.cmd(&["LPOP", "l", "1", "2"]),
        err("ERR wrong number of arguments for 'lpop' command")
    );
    assert_eq!(
        r.cmd(&["RPOP", "l", "1", "2"]),
        err("ERR wrong number of arguments for 'rpop' command")
    );
    r.cmd(&["SET", "str", "v"]);
    assert_eq!(r.cmd(&["LPOP", "str"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["RPOP", "str", "1"]), err(WRONGTYPE));
    // The count is parsed before the key is looked up.
    assert_eq!(
        r.cmd(&["LPOP", "str", "x"]),
        err("ERR value is out of range, must be positive")
    );

    // RESP3: nulls are `_` in both forms.
    let mut r3 = resp3(&s);
    assert_eq!(r3.cmd_raw(&["LPOP", "nokey"]), b"_\r\n");
    assert_eq!(r3.cmd_raw(&["LPOP", "nokey", "2"]), b"_\r\n");
    assert_eq!(r3.cmd(&["LPOP", "l", "1"]), bulks(&["1"]));
}

#[test]
fn lindex_lset() {
    let (_s, mut r) = start();
    r.cmd(&["RPUSH", "l", "a", "b", "c"]);
    assert_eq!(r.cmd(&["LINDEX", "l", "0"]), bulk("a"));
    assert_eq!(r.cmd(&["LINDEX", "l", "-1"]), bulk("c"));
    assert_eq!(r.cmd(&["LINDEX", "l", "-3"]), bulk("a"));
    assert_eq!(r.cmd(&["LINDEX", "l", "3"]), Value::Null);
    assert_eq!(r.cmd(&["LINDEX", "l", "-4"]), Value::Null);
    assert_eq!(r.cmd(&["LINDEX", "nokey", "0"]), Value::Null);
    assert_eq!(r.cmd(&["LINDEX", "l", "x"]), err(NOT_INT));
    // As Redis: the key is looked up before the index is parsed.
    assert_eq!(r.cmd(&["LINDEX", "nokey", "x"]), Value::Null);

    assert_eq!(r.cmd(&["LSET", "l", "1", "B"]), ok());
    assert_eq!(r.cmd(&["LSET", "l", "-1", "C"]), ok());
    assert_eq!(range(&mut r, "l"), bulks(&["a", "B", "C"]));
    assert_eq!(
        r.cmd(&["LSET", "l", "3", "x"]),
        err("ERR index out of range")
    );
    assert_eq!(
        r.cmd(&["LSET", "l", "-4", "x"]),
        err("ERR index out of range")
    );
    assert_eq!(r.cmd(&["LSET", "nokey", "0", "x"]), err("ERR no such key"));
    assert_eq!(r.cmd(&["LSET", "nokey", "x", "x"]), err("ERR no such key"));
    assert_eq!(r.cmd(&["LSET", "l", "x", "x"]), err(NOT_INT));
    r.cmd(&["SET", "str", "v"]);
    assert_eq!(r.cmd(&["LINDEX", "str", "0"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["LSET", "str", "0", "x"]), err(WRONGTYPE));
}

#[test]
fn lrange_ltrim() {
    let (_s, mut r) = start();
    r.cmd(&["RPUSH", "l", "0", "1", "2", "3", "4", "5"]);
    assert_eq!(r.cmd(&["LRANGE", "l", "1", "3"]), bulks(&["1", "2", "3"]));
    assert_eq!(r.cmd(&["LRANGE", "l", "-2", "-1"]), bulks(&["4", "5"]));
    assert_eq!(r.cmd(&["LRANGE", "l", "-100", "1"]), bulks(&["0", "1"]));
    assert_eq!(r.cmd(&["LRANGE", "l", "4", "100"]), bulks(&["4", "5"]));
    assert_eq!(r.cmd(&["LRANGE", "l", "3", "2"]), arr(vec![]));
    assert_eq!(r.cmd(&["LRANGE", "l", "6", "10"]), arr(vec![]));
    assert_eq!(r.cmd(&["LRANGE", "nokey", "0", "-1"]), arr(vec![]));
    assert_eq!(r.cmd(&["LRANGE", "l", "a", "1"]), err(NOT_INT));
    assert_eq!(r.cmd(&["LRANGE", "l", "0", "b"]), err(NOT_INT));

    assert_eq!(r.cmd(&["LTRIM", "l", "1", "-2"]), ok());
    assert_eq!(range(&mut r, "l"), bulks(&["1", "2", "3", "4"]));
    assert_eq!(r.cmd(&["LTRIM", "l", "0", "100"]), ok());
    assert_eq!(range(&mut r, "l"), bulks(&["1", "2", "3", "4"]));
    assert_eq!(r.cmd(&["LTRIM", "l", "-2", "-1"]), ok());
    assert_eq!(range(&mut r, "l"), bulks(&["3", "4"]));
    // An empty range deletes the key.
    assert_eq!(r.cmd(&["LTRIM", "l", "1", "0"]), ok());
    assert_eq!(r.cmd(&["EXISTS", "l"]), int(0));
    assert_eq!(r.cmd(&["LTRIM", "nokey", "0", "1"]), ok());
    assert_eq!(r.cmd(&["LTRIM", "l", "x", "1"]), err(NOT_INT));
    r.cmd(&["SET", "str", "v"]);
    assert_eq!(r.cmd(&["LRANGE", "str", "0", "-1"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["LTRIM", "str", "0", "-1"]), err(WRONGTYPE));
    // Arguments are parsed before the type check.
    assert_eq!(r.cmd(&["LRANGE", "str", "x", "-1"]), err(NOT_INT));
}

#[test]
fn linsert_lrem() {
    let (_s, mut r) = start();
    r.cmd(&["RPUSH", "l", "a", "b", "c", "b"]);
    assert_eq!(r.cmd(&["LINSERT", "l", "BEFORE", "b", "x"]), int(5));
    assert_eq!(r.cmd(&["LINSERT", "l", "after", "b", "y"]), int(6));
    assert_eq!(range(&mut r, "l"), bulks(&["a", "x", "b", "y", "c", "b"]));
    assert_eq!(r.cmd(&["LINSERT", "l", "AFTER", "zz", "y"]), int(-1));
    assert_eq!(r.cmd(&["LINSERT", "nokey", "AFTER", "a", "y"]), int(0));
    assert_eq!(r.cmd(&["LINSERT", "l", "MIDDLE", "a", "y"]), err(SYNTAX));
    assert_eq!(r.cmd(&["EXISTS", "nokey"]), int(0));

    r.cmd(&["DEL", "l"]);
    r.cmd(&["RPUSH", "l", "x", "a", "x", "b", "x", "c", "x"]);
    assert_eq!(r.cmd(&["LREM", "l", "1", "x"]), int(1));
    assert_eq!(range(&mut r, "l"), bulks(&["a", "x", "b", "x", "c", "x"]));
    assert_eq!(r.cmd(&["LREM", "l", "-2", "x"]), int(2));
    assert_eq!(range(&mut r, "l"), bulks(&["a", "x", "b", "c"]));
    assert_eq!(r.cmd(&["LREM", "l", "0", "nothere"]), int(0));
    assert_eq!(r.cmd(&["LREM", "l", "0", "x"]), int(1));
    assert_eq!(range(&mut r, "l"), bulks(&["a", "b", "c"]));
    assert_eq!(r.cmd(&["LREM", "nokey", "0", "x"]), int(0));
    assert_eq!(r.cmd(&["LREM", "l", "x", "x"]), err(NOT_INT));
    r.cmd(&["DEL", "l"]);
    r.cmd(&["RPUSH", "l", "z", "z"]);
    assert_eq!(r.cmd(&["LREM", "l", "0", "z"]), int(2));
    assert_eq!(r.cmd(&["EXISTS", "l"]), int(0));
    r.cmd(&["SET", "str", "v"]);
    assert_eq!(
        r.cmd(&["LINSERT", "str", "BEFORE", "a", "b"]),
        err(WRONGTYPE)
    );
    assert_eq!(r.cmd(&["LREM", "str", "0", "a"]), err(WRONGTYPE));
}

#[test]
fn lpos() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["RPUSH", "l", "a", "b", "c", "1", "2", "3", "c", "c"]);
    assert_eq!(r.cmd(&["LPOS", "l", "c"]), int(2));
    assert_eq!(r.cmd(&["LPOS", "l", "c", "RANK", "2"]), int(6));
    assert_eq!(r.cmd(&["LPOS", "l", "c", "RANK", "-1"]), int(7));
    assert_eq!(r.cmd(&["LPOS", "l", "c", "RANK", "-3"]), int(2));
    assert_eq!(r.cmd(&["LPOS", "l", "c", "RANK", "4"]), Value::Null);
    assert_eq!(r.cmd(&["LPOS", "l", "x"]), Value::Null);
    assert_eq!(
        r.cmd(&["LPOS", "l", "c", "COUNT", "0"]),
        arr(vec![int(2), int(6), int(7)])
    );
    assert_eq!(
        r.cmd(&["LPOS", "l", "c", "COUNT", "2", "RANK", "-1"]),
        arr(vec![int(7), int(6)])
    );
    assert_eq!(r.cmd(&["LPOS", "l", "x", "COUNT", "2"]), arr(vec![]));
    assert_eq!(r.cmd(&["LPOS", "l", "c", "MAXLEN", "2"]), Value::Null);
    assert_eq!(r.cmd(&["LPOS", "l", "c", "MAXLEN", "3"]), int(2));
    assert_eq!(
        r.cmd(&["LPOS", "l", "c", "COUNT", "0", "MAXLEN", "7"]),
        arr(vec![int(2), int(6)])
    );
    // Redis 7.2+ takes RANK in [-LONG_MAX, LONG_MAX] (7.0 negated LONG_MIN in a C long).
    let min = "-9223372036854775808";
    assert_eq!(
        r.cmd(&["LPOS", "l", "c", "RANK", min]),
        err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    );
    assert_eq!(r.cmd(&["LPOS", "nokey", "c"]), Value::Null);
    assert_eq!(r.cmd(&["LPOS", "nokey", "c", "COUNT", "1"]), arr(vec![]));
    assert_eq!(
        r.cmd(&["LPOS", "l", "c", "RANK", "0"]),
        err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
    );
    assert_eq!(
        r.cmd(&["LPOS", "l", "c", "COUNT", "-1"]),
        err("ERR COUNT can't be negative")
    );
    assert_eq!(
        r.cmd(&["LPOS", "l", "c", "COUNT", "x"]),
        err("ERR COUNT can't be negative")
    );
    assert_eq!(
        r.cmd(&["LPOS", "l", "c", "MAXLEN", "-1"]),
        err("ERR MAXLEN can't be negative")
    );
    assert_eq!(r.cmd(&["LPOS", "l", "c", "RANK", "x"]), err(NOT_INT));
    assert_eq!(r.cmd(&["LPOS", "l", "c", "RANK"]), err(SYNTAX));
    assert_eq!(r.cmd(&["LPOS", "l", "c", "FOO", "1"]), err(SYNTAX));
    r.cmd(&["SET", "str", "v"]);
    assert_eq!(r.cmd(&["LPOS", "str", "c"]), err(WRONGTYPE));
    let mut r3 = resp3(&s);
    assert_eq!(r3.cmd_raw(&["LPOS", "l", "x"]), b"_\r\n");
    assert_eq!(r3.cmd_raw(&["LPOS", "nokey", "x", "COUNT", "1"]), b"*0\r\n");
}

#[test]
fn lmove_rpoplpush() {
    let (_s, mut r) = start();
    r.cmd(&["RPUSH", "{t}src", "a", "b", "c"]);
    assert_eq!(r.cmd(&["RPOPLPUSH", "{t}src", "{t}dst"]), bulk("c"));
    assert_eq!(range(&mut r, "{t}dst"), bulks(&["c"]));
    assert_eq!(
        r.cmd(&["LMOVE", "{t}src", "{t}dst", "LEFT", "RIGHT"]),
        bulk("a")
    );
    assert_eq!(range(&mut r, "{t}dst"), bulks(&["c", "a"]));
    assert_eq!(
        r.cmd(&["LMOVE", "{t}src", "{t}dst", "right", "left"]),
        bulk("b")
    );
    assert_eq!(range(&mut r, "{t}dst"), bulks(&["b", "c", "a"]));
    // The source was emptied, so deleted.
    assert_eq!(r.cmd(&["EXISTS", "{t}src"]), int(0));
    assert_eq!(
        r.cmd(&["LMOVE", "{t}src", "{t}dst", "LEFT", "LEFT"]),
        Value::Null
    );
    assert_eq!(r.cmd(&["RPOPLPUSH", "{t}src", "{t}dst"]), Value::Null);
    // Same list: a rotation.
    assert_eq!(
        r.cmd(&["LMOVE", "{t}dst", "{t}dst", "LEFT", "RIGHT"]),
        bulk("b")
    );
    assert_eq!(range(&mut r, "{t}dst"), bulks(&["c", "a", "b"]));
    assert_eq!(r.cmd(&["RPOPLPUSH", "{t}dst", "{t}dst"]), bulk("b"));
    assert_eq!(range(&mut r, "{t}dst"), bulks(&["b", "c", "a"]));
    r.cmd(&["RPUSH", "{t}one", "x"]);
    assert_eq!(r.cmd(&["RPOPLPUSH", "{t}one", "{t}one"]), bulk("x"));
    assert_eq!(range(&mut r, "{t}one"), bulks(&["x"]));
    // Errors: bad direction, wrong source type, wrong destination type (source unchanged).
    assert_eq!(
        r.cmd(&["LMOVE", "{t}dst", "{t}x", "UP", "LEFT"]),
        err(SYNTAX)
    );
    assert_eq!(
        r.cmd(&["LMOVE", "{t}dst", "{t}x", "LEFT", "DOWN"]),
        err(SYNTAX)
    );
    r.cmd(&["SET", "{t}str", "v"]);
    assert_eq!(
        r.cmd(&["LMOVE", "{t}str", "{t}dst", "LEFT", "LEFT"]),
        err(WRONGTYPE)
    );
    assert_eq!(r.cmd(&["RPOPLPUSH", "{t}dst", "{t}str"]), err(WRONGTYPE));
    assert_eq!(range(&mut r, "{t}dst"), bulks(&["b", "c", "a"]));
    // A missing source with a wrong-typed destination is just nil.
    assert_eq!(r.cmd(&["RPOPLPUSH", "{t}nokey", "{t}str"]), Value::Null);
}

#[test]
fn lmpop() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["RPUSH", "{t}b", "1", "2", "3"]);
    r.cmd(&["RPUSH", "{t}c", "x"]);
    assert_eq!(
        r.cmd(&["LMPOP", "3", "{t}a", "{t}b", "{t}c", "LEFT"]),
        arr(vec![bulk("{t}b"), bulks(&["1"])])
    );
    assert_eq!(
        r.cmd(&["LMPOP", "2", "{t}b", "{t}c", "RIGHT", "COUNT", "10"]),
        arr(vec![bulk("{t}b"), bulks(&["3", "2"])])
    );
    assert_eq!(r.cmd(&["EXISTS", "{t}b"]), int(0));
    assert_eq!(
        r.cmd(&["lmpop", "2", "{t}b", "{t}c", "left", "count", "1"]),
        arr(vec![bulk("{t}c"), bulks(&["x"])])
    );
    assert_eq!(
        r.cmd_raw(&["LMPOP", "2", "{t}b", "{t}c", "LEFT"]),
        b"*-1\r\n"
    );
    // Errors, in Redis's order.
    for n in ["0", "-1", "x"] {
        assert_eq!(
            r.cmd(&["LMPOP", n, "{t}a", "LEFT"]),
            err("ERR numkeys should be greater than 0")
        );
    }
    // numkeys covers the direction (a hash-tagged key, so the keys share a worker).
    assert_eq!(r.cmd(&["LMPOP", "2", "{t}a", "{t}LEFT"]), err(SYNTAX));
    assert_eq!(r.cmd(&["LMPOP", "9", "{t}a", "LEFT"]), err(SYNTAX));
    assert_eq!(r.cmd(&["LMPOP", "1", "{t}a", "UP"]), err(SYNTAX));
    assert_eq!(
        r.cmd(&["LMPOP", "1", "{t}a", "LEFT", "COUNT", "0"]),
        err("ERR count should be greater than 0")
    );
    assert_eq!(
        r.cmd(&["LMPOP", "1", "{t}a", "LEFT", "COUNT", "x"]),
        err("ERR count should be greater than 0")
    );
    assert_eq!(
        r.cmd(&["LMPOP", "1", "{t}a", "LEFT", "COUNT", "1", "COUNT", "1"]),
        err(SYNTAX)
    );
    assert_eq!(r.cmd(&["LMPOP", "1", "{t}a", "LEFT", "COUNT"]), err(SYNTAX));
    r.cmd(&["SET", "{t}str", "v"]);
    r.cmd(&["RPUSH", "{t}l", "v"]);
    assert_eq!(
        r.cmd(&["LMPOP", "2", "{t}str", "{t}l", "LEFT"]),
        err(WRONGTYPE)
    );
    // A list before the wrong-typed key is served.
    assert_eq!(
        r.cmd(&["LMPOP", "2", "{t}l", "{t}str", "LEFT"]),
        arr(vec![bulk("{t}l"), bulks(&["v"])])
    );
    let mut r3 = resp3(&s);
    assert_eq!(r3.cmd_raw(&["LMPOP", "1", "{t}none", "LEFT"]), b"_\r\n");
}

#[test]
fn blocking_commands_serve_at_once_when_they_can() {
    let (_s, mut r) = start();
    r.cmd(&["RPUSH", "{t}b", "1", "2", "3"]);
    assert_eq!(
        r.cmd(&["BLPOP", "{t}a", "{t}b", "0"]),
        bulks(&["{t}b", "1"])
    );
    assert_eq!(
        r.cmd(&["BRPOP", "{t}a", "{t}b", "1"]),
        bulks(&["{t}b", "3"])
    );
    assert_eq!(
        r.cmd(&["BLMOVE", "{t}b", "{t}d", "LEFT", "LEFT", "0"]),
        bulk("2")
    );
    assert_eq!(r.cmd(&["EXISTS", "{t}b"]), int(0));
    assert_eq!(r.cmd(&["BRPOPLPUSH", "{t}d", "{t}b", "0.5"]), bulk("2"));
    assert_eq!(
        r.cmd(&["BLMPOP", "0", "2", "{t}a", "{t}b", "RIGHT", "COUNT", "5"]),
        arr(vec![bulk("{t}b"), bulks(&["2"])])
    );
    // Argument errors come before anything else.
    for t in ["-1", "x", "1e"] {
        let want = if t == "-1" {
            "ERR timeout is negative"
        } else {
            "ERR timeout is not a float or out of range"
        };
        assert_eq!(r.cmd(&["BLPOP", "{t}a", t]), err(want), "{t}");
        assert_eq!(r.cmd(&["BRPOPLPUSH", "{t}a", "{t}b", t]), err(want));
        assert_eq!(
            r.cmd(&["BLMOVE", "{t}a", "{t}b", "LEFT", "LEFT", t]),
            err(want)
        );
        assert_eq!(r.cmd(&["BLMPOP", t, "1", "{t}a", "LEFT"]), err(want));
    }
    assert_eq!(
        r.cmd(&["BLMOVE", "{t}a", "{t}b", "X", "LEFT", "0"]),
        err(SYNTAX)
    );
    assert_eq!(
        r.cmd(&["BLMPOP", "x", "0", "{t}a", "LEFT"]),
        err("ERR numkeys should be greater than 0")
    );
    assert_eq!(
        r.cmd(&["BLMPOP", "0", "1", "{t}a", "LEFT", "COUNT", "0"]),
        err("ERR count should be greater than 0")
    );
    r.cmd(&["SET", "{t}str", "v"]);
    assert_eq!(r.cmd(&["BLPOP", "{t}str", "0"]), err(WRONGTYPE));
    assert_eq!(
        r.cmd(&["BLMOVE", "{t}str", "{t}b", "LEFT", "LEFT", "0"]),
        err(WRONGTYPE)
    );
    r.cmd(&["RPUSH", "{t}l", "v"]);
    assert_eq!(
        r.cmd(&["BRPOPLPUSH", "{t}l", "{t}str", "0"]),
        err(WRONGTYPE)
    );
    assert_eq!(range(&mut r, "{t}l"), bulks(&["v"]));
}

#[test]
fn blocking_commands_time_out_with_their_null() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(r.cmd_raw(&["BLPOP", "{t}a", "{t}b", "0.01"]), b"*-1\r\n");
    assert_eq!(r.cmd_raw(&["BRPOP", "{t}a", "0.01"]), b"*-1\r\n");
    assert_eq!(
        r.cmd_raw(&["BLMPOP", "0.01", "1", "{t}a", "LEFT"]),
        b"*-1\r\n"
    );
    // As Redis 7.0 (replyToBlockedClientTimedOut): a null array for the moves too.
    assert_eq!(
        r.cmd_raw(&["BLMOVE", "{t}a", "{t}b", "LEFT", "LEFT", "0.01"]),
        b"*-1\r\n"
    );
    assert_eq!(
        r.cmd_raw(&["BRPOPLPUSH", "{t}a", "{t}b", "0.01"]),
        b"*-1\r\n"
    );
    let mut r3 = resp3(&s);
    assert_eq!(r3.cmd_raw(&["BLPOP", "{t}a", "0.01"]), b"_\r\n");
    assert_eq!(
        r3.cmd_raw(&["BRPOPLPUSH", "{t}a", "{t}b", "0.01"]),
        b"_\r\n"
    );
    // Nothing was created.
    assert_eq!(r.cmd(&["EXISTS", "{t}a", "{t}b"]), int(0));
}

#[test]
fn empty_list_deletes_key_and_ttl_is_kept() {
    let (_s, mut r) = start();
    r.cmd(&["RPUSH", "l", "a", "b"]);
    assert_eq!(r.cmd(&["EXPIRE", "l", "100"]), int(1));
    r.cmd(&["RPUSH", "l", "c"]);
    r.cmd(&["LSET", "l", "0", "A"]);
    r.cmd(&["LPOP", "l"]);
    assert!(matches!(r.cmd(&["TTL", "l"]), Value::Integer(t) if t > 90 && t <= 100));
    r.cmd(&["RPOP", "l", "2"]);
    assert_eq!(r.cmd(&["EXISTS", "l"]), int(0));
    // A new list under the same name has no TTL.
    r.cmd(&["RPUSH", "l", "x"]);
    assert_eq!(r.cmd(&["TTL", "l"]), int(-1));
}

#[test]
fn big_lists() {
    let (_s, mut r) = start();
    let n = 2000;
    let mut args: Vec<String> = vec!["RPUSH".into(), "big".into()];
    args.extend((0..n).map(|i| format!("v{i}")));
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(r.cmd(&refs), int(n));
    assert_eq!(r.cmd(&["LINDEX", "big", "1234"]), bulk("v1234"));
    assert_eq!(r.cmd(&["LPOS", "big", "v1999"]), int(1999));
    assert_eq!(
        r.cmd(&["LRANGE", "big", "-2", "-1"]),
        bulks(&["v1998", "v1999"])
    );
    let big = "x".repeat(100_000);
    assert_eq!(r.cmd(&["LPUSH", "big", &big]), int(n + 1));
    assert_eq!(r.cmd(&["LPOP", "big"]), bulk(&big));
}

#[test]
fn command_info_and_docs() {
    let (_s, mut r) = start();
    let Value::Array(info) = r.cmd(&["COMMAND", "INFO", "lpush", "blpop", "lmove"]) else {
        panic!("COMMAND INFO is an array");
    };
    assert_eq!(info.len(), 3);
    let Value::Array(lpush) = &info[0] else {
        panic!()
    };
    assert_eq!(lpush[0], bulk("lpush"));
    assert_eq!(lpush[1], int(-3));
    let Value::Array(blpop) = &info[1] else {
        panic!()
    };
    assert_eq!(blpop[1], int(-3));
    assert_eq!(
        (&blpop[3], &blpop[4], &blpop[5]),
        (&int(1), &int(-2), &int(1))
    );
    let Value::Array(lmove) = &info[2] else {
        panic!()
    };
    assert_eq!((&lmove[3], &lmove[4]), (&int(1), &int(2)));
    let Value::Array(docs) = r.cmd(&["COMMAND", "DOCS", "rpoplpush"]) else {
        panic!("COMMAND DOCS is an array in RESP2");
    };
    assert_eq!(docs[0], bulk("rpoplpush"));
    let Value::Array(fields) = &docs[1] else {
        panic!()
    };
    let pos = fields
        .iter()
        .position(|f| *f == bulk("replaced_by"))
        .expect("rpoplpush is deprecated");
    assert_eq!(
        fields[pos + 1],
        bulk("`LMOVE` with the `RIGHT` and `LEFT` arguments")
    );
}

fn fill(r: &mut Raw) {
    r.cmd(&["RPUSH", "p", "a", "b", "c", "d", "e"]);
    r.cmd(&["LPUSH", "p", "z"]);
    r.cmd(&["LSET", "p", "1", "A"]);
    r.cmd(&["LINSERT", "p", "AFTER", "A", "ins"]);
    r.cmd(&["LREM", "p", "1", "c"]);
    r.cmd(&["RPOP", "p"]);
    r.cmd(&["RPUSH", "{t}gone", "x"]);
    r.cmd(&["RPOPLPUSH", "{t}gone", "{t}moved"]);
    r.cmd(&["RPUSH", "trimmed", "1", "2", "3", "4"]);
    r.cmd(&["LTRIM", "trimmed", "1", "2"]);
}

fn check(r: &mut Raw) {
    assert_eq!(range(r, "p"), bulks(&["z", "A", "ins", "b", "d"]));
    assert_eq!(r.cmd(&["EXISTS", "{t}gone"]), int(0));
    assert_eq!(range(r, "{t}moved"), bulks(&["x"]));
    assert_eq!(range(r, "trimmed"), bulks(&["2", "3"]));
    assert_eq!(r.cmd(&["TYPE", "p"]), simple("list"));
}

#[test]
fn lists_survive_a_clean_restart() {
    skip_if_redis!();
    let mut s = Server::start(&[]);
    let mut r = s.raw();
    fill(&mut r);
    drop(r);
    s.stop_clean();
    s.start_again();
    let mut r = s.raw();
    check(&mut r);
    // And keep working after it.
    assert_eq!(r.cmd(&["RPUSH", "p", "new"]), int(6));
    assert_eq!(r.cmd(&["LINDEX", "p", "-1"]), bulk("new"));
}

#[test]
fn lists_survive_kill_9_with_appendfsync_always() {
    skip_if_redis!();
    let mut s = Server::start(&["--appendfsync", "always"]);
    let mut r = s.raw();
    fill(&mut r);
    drop(r);
    s.kill();
    s.start_again();
    let mut r = s.raw();
    check(&mut r);
}
