//! Every command family once over RESP3 with the `redis` crate (`?protocol=resp3`), plus raw
//! checks of RESP3 encodings that the crate hides.

mod common;

use std::collections::HashMap;

use common::*;
use redis::Value as RV;

fn q(c: &mut redis::Connection, args: &[&str]) -> RV {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query::<RV>(c)
        .unwrap_or_else(|e| panic!("{args:?} failed: {e}"))
}

fn bs(s: &str) -> RV {
    RV::BulkString(s.as_bytes().to_vec())
}

fn map_of(v: &RV) -> HashMap<String, RV> {
    match v {
        RV::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| {
                let k = match k {
                    RV::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                    RV::SimpleString(s) => s.clone(),
                    other => panic!("map key {other:?}"),
                };
                (k, v.clone())
            })
            .collect(),
        other => panic!("expected a RESP3 map, got {other:?}"),
    }
}

#[test]
fn hello_and_connection_family() {
    let s = Server::start(&[]);
    let mut c = s.client_resp3();
    let hello = map_of(&q(&mut c, &["HELLO", "3"]));
    assert_eq!(hello["proto"], RV::Int(3));
    assert_eq!(hello["mode"], bs("standalone"));
    assert_eq!(hello["role"], bs("master"));
    assert_eq!(hello["modules"], RV::Array(vec![]));
    assert!(matches!(hello["id"], RV::Int(_)));
    assert_eq!(q(&mut c, &["PING"]), RV::SimpleString("PONG".into()));
    assert_eq!(q(&mut c, &["ECHO", "x"]), bs("x"));
    assert_eq!(q(&mut c, &["CLIENT", "ID"]), hello["id"]);
    assert_eq!(q(&mut c, &["CLIENT", "SETNAME", "r3"]), RV::Okay);
    assert_eq!(q(&mut c, &["CLIENT", "GETNAME"]), bs("r3"));
    match q(&mut c, &["CLIENT", "INFO"]) {
        RV::VerbatimString { text, .. } => assert!(text.contains("name=r3"), "{text}"),
        other => panic!("CLIENT INFO in RESP3 is a verbatim string, got {other:?}"),
    }
    assert_eq!(q(&mut c, &["SELECT", "1"]), RV::Okay);
    assert_eq!(q(&mut c, &["SELECT", "0"]), RV::Okay);
}

#[test]
fn string_family() {
    let s = Server::start(&[]);
    let mut c = s.client_resp3();
    assert_eq!(q(&mut c, &["SET", "k", "v"]), RV::Okay);
    assert_eq!(q(&mut c, &["GET", "k"]), bs("v"));
    assert_eq!(q(&mut c, &["GET", "nokey"]), RV::Nil);
    assert_eq!(q(&mut c, &["SET", "k", "w", "NX"]), RV::Nil);
    assert_eq!(q(&mut c, &["SET", "k", "w", "GET"]), bs("v"));
    assert_eq!(
        q(&mut c, &["MGET", "k", "nokey"]),
        RV::Array(vec![bs("w"), RV::Nil])
    );
    assert_eq!(q(&mut c, &["INCR", "n"]), RV::Int(1));
    assert_eq!(q(&mut c, &["INCRBYFLOAT", "f", "2.5"]), bs("2.5"));
    assert_eq!(q(&mut c, &["APPEND", "k", "x"]), RV::Int(2));
    assert_eq!(q(&mut c, &["STRLEN", "k"]), RV::Int(2));
    assert_eq!(q(&mut c, &["GETRANGE", "k", "0", "0"]), bs("w"));
    assert_eq!(q(&mut c, &["GETDEL", "k"]), bs("wx"));
    assert_eq!(q(&mut c, &["MSETNX", "a", "1", "b", "2"]), RV::Int(1));
    assert_eq!(q(&mut c, &["SET", "l1", "ohmytext"]), RV::Okay);
    assert_eq!(q(&mut c, &["SET", "l2", "mynewtext"]), RV::Okay);
    let lcs = map_of(&q(&mut c, &["LCS", "l1", "l2", "IDX"]));
    assert_eq!(lcs["len"], RV::Int(6));
    assert!(matches!(lcs["matches"], RV::Array(_)));
    // Errors are ServerErrors with the Redis text.
    let e = redis::cmd("INCR")
        .arg("l1")
        .query::<RV>(&mut c)
        .unwrap_err();
    assert_eq!(e.code(), Some("ERR"));
    assert_eq!(e.detail(), Some("value is not an integer or out of range"));
}

#[test]
fn keyspace_family() {
    let s = Server::start(&[]);
    let mut c = s.client_resp3();
    assert_eq!(q(&mut c, &["MSET", "a", "1", "b", "2"]), RV::Okay);
    assert_eq!(q(&mut c, &["EXISTS", "a", "b", "x"]), RV::Int(2));
    assert_eq!(q(&mut c, &["TYPE", "a"]), RV::SimpleString("string".into()));
    assert_eq!(q(&mut c, &["EXPIRE", "a", "100"]), RV::Int(1));
    assert!(matches!(q(&mut c, &["TTL", "a"]), RV::Int(t) if t > 0));
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    keys.sort();
    assert_eq!(keys, ["a", "b"]);
    match q(&mut c, &["SCAN", "0", "COUNT", "100"]) {
        RV::Array(items) => {
            assert_eq!(items.len(), 2);
            assert_eq!(items[0], bs("0"));
            assert!(matches!(&items[1], RV::Array(k) if k.len() == 2));
        }
        other => panic!("SCAN reply {other:?}"),
    }
    assert_eq!(q(&mut c, &["DEL", "b"]), RV::Int(1));
    assert_eq!(q(&mut c, &["DBSIZE"]), RV::Int(1));
    assert_eq!(q(&mut c, &["PERSIST", "a"]), RV::Int(1));
    assert_eq!(q(&mut c, &["TTL", "a"]), RV::Int(-1));
    assert_eq!(q(&mut c, &["RENAME", "a", "c"]), RV::Okay);
    assert_eq!(q(&mut c, &["GET", "c"]), bs("1"));
}

#[test]
fn server_family() {
    let s = Server::start(&[]);
    let mut c = s.client_resp3();
    let cfg = map_of(&q(&mut c, &["CONFIG", "GET", "maxclients", "timeout"]));
    assert_eq!(cfg.len(), 2);
    assert_eq!(cfg["timeout"], bs("0"));
    let typed: HashMap<String, String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("port")
        .query(&mut c)
        .unwrap();
    assert_eq!(typed["port"], s.port().to_string());
    match q(&mut c, &["INFO", "server"]) {
        RV::VerbatimString { text, .. } => assert!(text.starts_with("# Server")),
        other => panic!("INFO in RESP3 is a verbatim string, got {other:?}"),
    }
    let info: redis::InfoDict = redis::cmd("INFO").query(&mut c).unwrap();
    assert_eq!(info.get::<u16>("tcp_port"), Some(s.port()));
    assert!(matches!(q(&mut c, &["COMMAND", "COUNT"]), RV::Int(n) if n > 0));
    let docs = map_of(&q(&mut c, &["COMMAND", "DOCS", "get"]));
    let get = map_of(&docs["get"]);
    assert_eq!(get["group"], bs("string"));
    match q(&mut c, &["TIME"]) {
        RV::Array(t) => assert_eq!(t.len(), 2),
        other => panic!("TIME {other:?}"),
    }
    assert_eq!(q(&mut c, &["FLUSHALL"]), RV::Okay);
}

#[test]
fn hash_family() {
    let s = Server::start(&[]);
    let mut c = s.client_resp3();
    assert_eq!(
        q(&mut c, &["HSET", "h", "f1", "v1", "f2", "v2"]),
        RV::Int(2)
    );
    assert_eq!(q(&mut c, &["HGET", "h", "f1"]), bs("v1"));
    assert_eq!(q(&mut c, &["HGET", "h", "nofield"]), RV::Nil);
    let all = map_of(&q(&mut c, &["HGETALL", "h"]));
    assert_eq!(all.len(), 2);
    assert_eq!(all["f2"], bs("v2"));
    let typed: HashMap<String, String> = redis::cmd("HGETALL").arg("h").query(&mut c).unwrap();
    assert_eq!(typed["f1"], "v1");
    assert_eq!(q(&mut c, &["HLEN", "h"]), RV::Int(2));
}

#[test]
fn list_family() {
    let s = Server::start(&[]);
    let mut c = s.client_resp3();
    assert_eq!(q(&mut c, &["RPUSH", "l", "a", "b", "c"]), RV::Int(3));
    assert_eq!(
        q(&mut c, &["LRANGE", "l", "0", "-1"]),
        RV::Array(vec![bs("a"), bs("b"), bs("c")])
    );
    assert_eq!(q(&mut c, &["LPOP", "l"]), bs("a"));
    assert_eq!(q(&mut c, &["LPOP", "nolist"]), RV::Nil);
    assert_eq!(q(&mut c, &["LLEN", "l"]), RV::Int(2));
}

#[test]
fn set_family() {
    let s = Server::start(&[]);
    let mut c = s.client_resp3();
    assert_eq!(q(&mut c, &["SADD", "s", "a", "b", "a"]), RV::Int(2));
    match q(&mut c, &["SMEMBERS", "s"]) {
        RV::Set(items) => {
            let mut v: Vec<RV> = items;
            v.sort_by_key(|x| format!("{x:?}"));
            assert_eq!(v, vec![bs("a"), bs("b")]);
        }
        other => panic!("SMEMBERS in RESP3 is a set, got {other:?}"),
    }
    assert_eq!(q(&mut c, &["SISMEMBER", "s", "a"]), RV::Int(1));
    assert_eq!(q(&mut c, &["SCARD", "s"]), RV::Int(2));
}

#[test]
fn sorted_set_family() {
    let s = Server::start(&[]);
    let mut c = s.client_resp3();
    assert_eq!(q(&mut c, &["ZADD", "z", "1.5", "a", "2", "b"]), RV::Int(2));
    assert_eq!(q(&mut c, &["ZSCORE", "z", "a"]), RV::Double(1.5));
    assert_eq!(q(&mut c, &["ZSCORE", "z", "nomember"]), RV::Nil);
    assert_eq!(q(&mut c, &["ZINCRBY", "z", "1", "a"]), RV::Double(2.5));
    assert_eq!(
        q(&mut c, &["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        RV::Array(vec![
            RV::Array(vec![bs("b"), RV::Double(2.0)]),
            RV::Array(vec![bs("a"), RV::Double(2.5)]),
        ])
    );
    assert_eq!(q(&mut c, &["ZCARD", "z"]), RV::Int(2));
}

#[test]
fn raw_resp3_null_array_and_blocking_timeout() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    // RESP2: a timed-out BLPOP is a null array.
    assert_eq!(r.cmd_raw(&["BLPOP", "nolist", "0.01"]), b"*-1\r\n");
    r.cmd(&["HELLO", "3"]);
    // RESP3: the same is the RESP3 null.
    assert_eq!(r.cmd_raw(&["BLPOP", "nolist", "0.01"]), b"_\r\n");
}

#[test]
fn raw_resp3_hello_bytes() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let raw = r.cmd_raw(&["HELLO", "3"]);
    assert!(
        raw.starts_with(b"%7\r\n$6\r\nserver\r\n"),
        "{:?}",
        String::from_utf8_lossy(&raw)
    );
    assert!(raw.ends_with(b"$7\r\nmodules\r\n*0\r\n"));
    let raw = r.cmd_raw(&["CONFIG", "GET", "timeout"]);
    assert_eq!(raw, b"%1\r\n$7\r\ntimeout\r\n$1\r\n0\r\n");
    let raw = r.cmd_raw(&["CONFIG", "GET", "nosuch"]);
    assert_eq!(raw, b"%0\r\n");
}
