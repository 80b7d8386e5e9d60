//! RDB files end to end: SAVE, BGSAVE, LASTSAVE, DEBUG RELOAD and `--rdb-import`, with
//! every type in its small and big forms, TTLs, several databases and function libraries;
//! files exchanged with the reference Redis both ways (Skerry's SAVE loaded by Redis, and
//! Redis's SAVE imported by Skerry), compared key by key.
//!
//! Except where marked Skerry-only, these tests pass against Redis too
//! (`SKERRY_TEST_SERVER=redis`).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;

const LIB: &str =
    "#!lua name=rdblib\nredis.register_function('rdbf', function() return 'from-rdb' end)";

/// Every type in its small and big forms, keys with TTLs, a hash with a field TTL, a
/// stream with a consumer group and pending entries, a key in database 3, and a function
/// library.
fn fill(r: &mut Raw) {
    assert_eq!(r.cmd(&["SET", "s:int", "12345"]), ok());
    assert_eq!(r.cmd(&["SET", "s:short", "hello"]), ok());
    let big = "v".repeat(100_000);
    assert_eq!(r.cmd(&["SET", "s:big", &big]), ok());
    assert_eq!(r.cmd(&["SET", "s:ttl", "x", "PX", "600000"]), ok());
    r.cmd(&["RPUSH", "l:small", "a", "b", "1", "2"]);
    let many: Vec<String> = (0..2000).map(|i| format!("element-{i}")).collect();
    let mut cmd = vec!["RPUSH", "l:big"];
    cmd.extend(many.iter().map(String::as_str));
    r.cmd(&cmd);
    r.cmd(&["SADD", "set:int", "1", "2", "3"]);
    r.cmd(&["SADD", "set:small", "x", "y", "z"]);
    let mut cmd = vec!["SADD", "set:big"];
    cmd.extend(many.iter().map(String::as_str));
    r.cmd(&cmd);
    r.cmd(&["ZADD", "z:small", "1", "a", "2.5", "b", "-inf", "c"]);
    let scored: Vec<String> = (0..500)
        .flat_map(|i| [format!("{}.25", i * 3), format!("member-{i}")])
        .collect();
    let mut cmd = vec!["ZADD", "z:big"];
    cmd.extend(scored.iter().map(String::as_str));
    r.cmd(&cmd);
    r.cmd(&["HSET", "h:small", "f1", "v1", "f2", "v2"]);
    let fields: Vec<String> = (0..800)
        .flat_map(|i| [format!("field-{i}"), format!("value-{i}")])
        .collect();
    let mut cmd = vec!["HSET", "h:big"];
    cmd.extend(fields.iter().map(String::as_str));
    r.cmd(&cmd);
    r.cmd(&["EXPIRE", "h:big", "900"]);
    // Hash field expiry (Redis 7.4+).
    r.cmd(&["HSET", "h:fttl", "a", "1", "b", "2"]);
    r.cmd(&["HPEXPIRE", "h:fttl", "700000", "FIELDS", "1", "a"]);
    for i in 1..=5 {
        r.cmd(&["XADD", "x", &format!("{i}-1"), "f", &i.to_string()]);
    }
    assert_eq!(r.cmd(&["XGROUP", "CREATE", "x", "g", "0"]), ok());
    r.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c1",
        "COUNT",
        "2",
        "STREAMS",
        "x",
        ">",
    ]);
    r.cmd(&["PFADD", "hll", "a", "b", "c"]);
    assert_eq!(r.cmd(&["SELECT", "3"]), ok());
    assert_eq!(r.cmd(&["SET", "in-db3", "three"]), ok());
    assert_eq!(r.cmd(&["SELECT", "0"]), ok());
    assert_eq!(r.cmd(&["FUNCTION", "LOAD", "REPLACE", LIB]), bulk("rdblib"));
}

/// A key's contents, normalised (unordered types sorted): type and items.
fn contents(r: &mut Raw, key: &str) -> (String, Vec<String>) {
    let t = r.cmd(&["TYPE", key]).text();
    let mut items = match t.as_str() {
        "string" => vec![r.cmd(&["GET", key]).text()],
        "list" => r.cmd(&["LRANGE", key, "0", "-1"]).strings(),
        "set" => r.cmd(&["SMEMBERS", key]).strings(),
        "zset" => r.cmd(&["ZRANGE", key, "0", "-1", "WITHSCORES"]).strings(),
        "hash" => r.cmd(&["HGETALL", key]).strings(),
        "stream" => {
            let mut v: Vec<String> = r
                .cmd(&["XRANGE", key, "-", "+"])
                .items()
                .iter()
                .flat_map(|e| {
                    let e = e.items();
                    let mut out = vec![e[0].text()];
                    out.extend(e[1].strings());
                    out
                })
                .collect();
            for g in r.cmd(&["XINFO", "GROUPS", key]).items() {
                let g = g.items();
                v.extend(g.iter().map(|x| match x {
                    Value::Integer(i) => i.to_string(),
                    other => other.text(),
                }));
            }
            let pending = r.cmd(&["XPENDING", key, "g", "-", "+", "10"]).items();
            v.extend(pending.iter().map(|p| p.items()[0].text()));
            v
        }
        _ => Vec::new(),
    };
    if t == "set" || t == "hash" {
        if t == "hash" {
            let mut pairs: Vec<String> = items.chunks(2).map(|c| c.join("=")).collect();
            pairs.sort();
            items = pairs;
        } else {
            items.sort();
        }
    }
    (t, items)
}

/// Every key of databases 0 and 3 ((db, key)): contents, and whether it has a TTL.
type Snapshot = BTreeMap<(u8, String), ((String, Vec<String>), bool)>;

fn snapshot(r: &mut Raw) -> Snapshot {
    let mut out = BTreeMap::new();
    for db in [0u8, 3] {
        r.cmd(&["SELECT", &db.to_string()]);
        for key in r.cmd(&["KEYS", "*"]).strings() {
            let c = contents(r, &key);
            let ttl = r.cmd(&["PTTL", &key]).int() > 0;
            out.insert((db, key), (c, ttl));
        }
    }
    r.cmd(&["SELECT", "0"]);
    out
}

#[test]
fn save_and_debug_reload_keep_every_key() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    fill(&mut r);
    let before = snapshot(&mut r);
    assert!(before.len() >= 17, "{before:?}");
    let digest = r.cmd(&["DEBUG", "DIGEST"]).text();
    assert_eq!(digest.len(), 40);
    assert_ne!(digest, "0".repeat(40));
    let last_before = r.cmd(&["LASTSAVE"]).int();
    assert_eq!(r.cmd(&["SAVE"]), ok());
    assert!(r.cmd(&["LASTSAVE"]).int() >= last_before);
    assert_eq!(
        info_text(&mut r, "persistence", "rdb_changes_since_last_save"),
        "0"
    );
    assert_eq!(
        info_text(&mut r, "persistence", "rdb_last_bgsave_status"),
        "ok"
    );
    assert!(s.dir().join("dump.rdb").exists());
    // A change after the save, then DEBUG RELOAD: it saves again and loads what it saved.
    r.cmd(&["SET", "after-save", "1"]);
    assert_ne!(
        info_text(&mut r, "persistence", "rdb_changes_since_last_save"),
        "0"
    );
    r.cmd(&["DEL", "after-save"]);
    assert_eq!(r.cmd(&["DEBUG", "RELOAD"]), ok());
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]).text(), digest);
    r.cmd(&["SET", "after-save", "1"]);
    assert_eq!(r.cmd(&["DEBUG", "RELOAD"]), ok());
    assert_ne!(r.cmd(&["DEBUG", "DIGEST"]).text(), digest);
    let mut expected = before.clone();
    expected.insert(
        (0, "after-save".into()),
        (("string".into(), vec!["1".into()]), false),
    );
    assert_eq!(snapshot(&mut r), expected);
    assert_eq!(r.cmd(&["FCALL", "rdbf", "0"]), bulk("from-rdb"));
    let field_ttl = r.cmd(&["HPTTL", "h:fttl", "FIELDS", "2", "a", "b"]).items();
    assert!(field_ttl[0].int() > 600_000, "{field_ttl:?}");
    assert_eq!(field_ttl[1].int(), -1);
    // NOSAVE loads the file as it is: the key set since is gone again.
    r.cmd(&["SET", "not-saved", "1"]);
    assert_eq!(r.cmd(&["DEBUG", "RELOAD", "NOSAVE"]), ok());
    assert_eq!(r.cmd(&["EXISTS", "not-saved"]).int(), 0);
    assert_eq!(snapshot(&mut r), expected);
    // NOFLUSH NOSAVE merges the file into what is there.
    r.cmd(&["SET", "kept", "1"]);
    r.cmd(&["SET", "s:short", "changed"]);
    assert_eq!(
        r.cmd(&["DEBUG", "RELOAD", "MERGE", "NOFLUSH", "NOSAVE"]),
        ok()
    );
    assert_eq!(r.cmd(&["GET", "kept"]), bulk("1"));
    assert_eq!(r.cmd(&["GET", "s:short"]), bulk("hello"));
    // Without MERGE the file's function library is a duplicate: the load fails.
    let e = r.cmd(&["DEBUG", "RELOAD", "NOFLUSH", "NOSAVE"]);
    assert_eq!(
        e,
        Value::Error("ERR Error trying to load the RDB dump, check server logs.".into())
    );
    let e = r.cmd(&["DEBUG", "RELOAD", "BOGUS"]);
    assert!(matches!(e, Value::Error(_)), "{e:?}");
}

#[test]
fn bgsave_writes_the_file_and_save_is_refused_in_multi() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["SET", "k", "v"]);
    assert!(!s.dir().join("dump.rdb").exists());
    assert_eq!(r.cmd(&["BGSAVE"]), simple("Background saving started"));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while info_text(&mut r, "persistence", "rdb_bgsave_in_progress") != "0"
        || !s.dir().join("dump.rdb").exists()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "BGSAVE never finished"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        info_text(&mut r, "persistence", "rdb_last_bgsave_status"),
        "ok"
    );
    assert!(s.dir().join("dump.rdb").exists());
    assert_eq!(r.cmd(&["MULTI"]), ok());
    let e = r.cmd(&["SAVE"]);
    assert_eq!(
        e,
        Value::Error("ERR Command not allowed inside a transaction".into())
    );
    r.cmd(&["DISCARD"]);
    let e = r.cmd(&["BGSAVE", "NOW"]);
    assert!(
        matches!(e, Value::Error(ref m) if m.starts_with("ERR syntax error")),
        "{e:?}"
    );
}

/// Skerry's SAVE loaded by the reference Redis (through its own DEBUG RELOAD), and the
/// reference Redis's SAVE imported by Skerry (`--rdb-import`): the same keys, contents,
/// TTLs and functions on both sides. Skerry-only.
#[test]
fn files_exchanged_with_redis_both_ways() {
    skip_if_redis!();
    let Some(redis) = Server::start_reference_8(&[]) else {
        return;
    };
    let skerry = Server::start(&["--threads", "2"]);
    let mut sk = skerry.raw();
    fill(&mut sk);
    let expected = snapshot(&mut sk);
    assert_eq!(sk.cmd(&["SAVE"]), ok());
    // Skerry's file into Redis.
    std::fs::copy(skerry.dir().join("dump.rdb"), redis.dir().join("dump.rdb")).unwrap();
    let mut rd = redis.raw();
    assert_eq!(rd.cmd(&["DEBUG", "RELOAD", "NOSAVE"]), ok());
    assert_eq!(snapshot(&mut rd), expected);
    // Redis's digest of what it loaded is Skerry's digest of what it saved (every type,
    // TTLs, field TTLs, the stream's entries): same data, same algorithm.
    let digest = sk.cmd(&["DEBUG", "DIGEST"]).text();
    assert_eq!(rd.cmd(&["DEBUG", "DIGEST"]).text(), digest);
    let keys = [
        "s:big", "l:big", "set:big", "z:small", "h:fttl", "x", "missing",
    ];
    let mut args = vec!["DEBUG", "DIGEST-VALUE"];
    args.extend(keys);
    let per_key = sk.cmd(&args);
    assert_eq!(rd.cmd(&args), per_key);
    assert_eq!(per_key.items()[6].text(), "0".repeat(40));
    assert_eq!(rd.cmd(&["FCALL", "rdbf", "0"]), bulk("from-rdb"));
    // Redis's file (its own encodings: listpacks, intsets, quicklists) into a new Skerry.
    rd.cmd(&["SET", "from-redis", "yes"]);
    assert_eq!(rd.cmd(&["SAVE"]), ok());
    let mut expected = snapshot(&mut rd);
    let file = redis.dir().join("dump.rdb");
    let imported = Server::start(&["--threads", "2", "--rdb-import", file.to_str().unwrap()]);
    let mut im = imported.raw();
    assert_eq!(snapshot(&mut im), expected);
    assert_eq!(
        im.cmd(&["DEBUG", "DIGEST"]).text(),
        rd.cmd(&["DEBUG", "DIGEST"]).text()
    );
    assert_eq!(im.cmd(&["FCALL", "rdbf", "0"]), bulk("from-rdb"));
    assert!(imported.log_contents().contains("Imported"));
    assert_eq!(
        info_text(&mut im, "persistence", "rdb_last_load_keys_loaded"),
        expected.len().to_string()
    );
    // And the imported data is in Skerry's own store: it survives a restart (kill -9
    // after a durable write) without the file.
    std::fs::remove_file(&file).unwrap();
    im.cmd(&["SET", "sync", "1"]);
    expected.insert(
        (0, "sync".into()),
        (("string".into(), vec!["1".into()]), false),
    );
    assert_eq!(im.cmd(&["WAITAOF", "1", "0", "0"]).items()[0].int(), 1);
    drop(im);
    let mut imported = imported;
    let (status, log) = imported.restart_expect_exit(Duration::from_secs(20));
    // The same flags again: the file is gone, and the store is no longer empty anyway.
    assert!(!status.success(), "{log}");
    let again = Server::start_opts(Opts {
        args: vec![
            "--threads".into(),
            "2".into(),
            "--dir".into(),
            imported.dir().to_string_lossy().into_owned(),
        ],
        ..Opts::default()
    });
    assert_eq!(snapshot(&mut again.raw()), expected);
}

/// `--rdb-import` refuses a store that already holds keys, and a damaged file (wrong
/// checksum), and exits. Skerry-only.
#[test]
fn import_refuses_a_non_empty_store_and_a_damaged_file() {
    skip_if_redis!();
    let mut s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["SET", "a", "1"]);
    r.cmd(&["RPUSH", "l", "x", "y"]);
    assert_eq!(r.cmd(&["SAVE"]), ok());
    // Durable in the data files before the kill below (SAVE writes only the RDB file).
    assert_eq!(r.cmd(&["WAITAOF", "1", "0", "0"]).items()[0].int(), 1);
    let file = s.dir().join("dump.rdb");
    let copy = s.dir().join("copy.rdb");
    std::fs::copy(&file, &copy).unwrap();
    // The same data directory (which holds "a" and "l"), now with --rdb-import.
    drop(r);
    s.kill();
    let (status, log) = Server::run_expect_exit(
        Opts {
            args: vec![
                "--dir".into(),
                s.dir().to_string_lossy().into_owned(),
                "--rdb-import".into(),
                copy.to_string_lossy().into_owned(),
            ],
            ..Opts::default()
        },
        Duration::from_secs(20),
    );
    assert!(!status.success());
    assert!(log.contains("already hold 2 keys"), "{log}");
    // A flipped byte in the middle of the file: the checksum catches it.
    let mut bytes = std::fs::read(&copy).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&copy, &bytes).unwrap();
    let (status, log) = Server::run_expect_exit(
        Opts {
            args: vec!["--rdb-import".into(), copy.to_string_lossy().into_owned()],
            ..Opts::default()
        },
        Duration::from_secs(20),
    );
    assert!(!status.success());
    assert!(
        log.contains("Wrong RDB checksum") || log.contains("Bad data format"),
        "{log}"
    );
}
