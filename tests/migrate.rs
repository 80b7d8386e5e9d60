//! MIGRATE end to end: keys of every type (with TTLs, big and grouped values, a value of
//! several MB, values read back from the device) moved or copied to a reference Redis 8.0
//! (`SKERRY_REDIS_SERVER`; those parts are skipped when it is not set) and to a second
//! Skerry, with COPY, REPLACE, KEYS, AUTH / AUTH2, NOKEY, the target's errors, time-outs and
//! connection errors, cached connections (INFO `migrate_cached_sockets`, the retry on a
//! connection the target closed), keys spread over two workers, a write between the DUMP and
//! the delete, COMMAND INFO / DOCS / GETKEYS against Redis 8.0, and differential runs
//! (seeded operations and MIGRATEs with Skerry and with Redis 8.0 as the source, every reply
//! and every key compared).
//!
//! Except where marked Skerry-only, these tests pass with Redis as the source too
//! (`SKERRY_TEST_SERVER=redis`); the "second Skerry" target is then a Redis as well.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::migrate::{contents, reference_8};
use common::*;

/// The source server: Skerry on `threads` workers (Redis under `SKERRY_TEST_SERVER=redis`),
/// with small collection groups so that big collections are grouped cheaply.
fn source(threads: &str) -> Server {
    if is_redis() {
        return Server::start(&[]);
    }
    Server::start(&["--threads", threads, "--collection-group-bytes", "512"])
}

/// A Skerry target (Redis under `SKERRY_TEST_SERVER=redis`).
fn skerry_target(args: &[&str]) -> Server {
    if is_redis() {
        return Server::start(args);
    }
    let mut a = vec!["--threads", "2"];
    a.extend_from_slice(args);
    Server::start(&a)
}

/// The targets: a second Skerry and, when set, the reference Redis 8.0.
fn targets() -> Vec<(&'static str, Server)> {
    let mut t = vec![("skerry", skerry_target(&[]))];
    if let Some(r) = reference_8() {
        t.push(("redis", r));
    }
    t
}

fn port(s: &Server) -> String {
    s.port().to_string()
}

fn migrate(r: &mut Raw, to: &Server, key: &str, db: &str, extra: &[&str]) -> Value {
    let p = port(to);
    let mut args = vec!["MIGRATE", "127.0.0.1", p.as_str(), key, db, "5000"];
    args.extend_from_slice(extra);
    r.cmd(&args)
}

fn keys_arg(keys: &[String]) -> Vec<&str> {
    let mut v = vec!["KEYS"];
    v.extend(keys.iter().map(|k| k.as_str()));
    v
}

/// Builds one value of every type under `<prefix>:<what>` (big ones too when `big`); some
/// with a TTL. Returns the keys.
fn build_values(r: &mut Raw, prefix: &str, big: bool) -> Vec<String> {
    let k = |w: &str| format!("{prefix}:{w}");
    let mut keys = Vec::new();
    let mut add = |r: &mut Raw, key: String, cmds: Vec<Vec<String>>| {
        for c in cmds {
            let args: Vec<&str> = c.iter().map(|s| s.as_str()).collect();
            let v = r.cmd(&args);
            assert!(!matches!(v, Value::Error(_)), "{args:?}: {v:?}");
        }
        keys.push(key);
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    add(r, k("str"), vec![s(&["SET", &k("str"), "Some Value"])]);
    add(r, k("int"), vec![s(&["SET", &k("int"), "12345"])]);
    add(r, k("ttl"), vec![s(&["SET", &k("ttl"), "x", "EX", "100"])]);
    add(
        r,
        k("list"),
        vec![s(&["RPUSH", &k("list"), "a", "b", "c", "d"])],
    );
    add(
        r,
        k("set"),
        vec![s(&["SADD", &k("set"), "a", "b", "1", "2"])],
    );
    add(
        r,
        k("zset"),
        vec![s(&["ZADD", &k("zset"), "1", "a", "2.5", "b", "-3", "c"])],
    );
    add(
        r,
        k("hash"),
        vec![
            s(&["HSET", &k("hash"), "f1", "item 1", "f2", "item 2"]),
            s(&["PEXPIRE", &k("hash"), "50000"]),
        ],
    );
    add(
        r,
        k("hfe"),
        vec![
            s(&["HSET", &k("hfe"), "a", "1", "b", "2"]),
            s(&["HPEXPIREAT", &k("hfe"), "9999999999000", "FIELDS", "1", "a"]),
        ],
    );
    add(
        r,
        k("stream"),
        vec![
            s(&["XADD", &k("stream"), "1-1", "f", "v"]),
            s(&["XADD", &k("stream"), "2-1", "f", "w"]),
            s(&["XGROUP", "CREATE", &k("stream"), "g", "0"]),
            s(&[
                "XREADGROUP",
                "GROUP",
                "g",
                "c1",
                "COUNT",
                "1",
                "STREAMS",
                &k("stream"),
                ">",
            ]),
        ],
    );
    if big {
        let mut cmds = Vec::new();
        let mut list = vec!["RPUSH".to_string(), k("biglist")];
        let mut hash = vec!["HSET".to_string(), k("bighash")];
        let mut zset = vec!["ZADD".to_string(), k("bigzset")];
        let mut set = vec!["SADD".to_string(), k("bigset")];
        for i in 0..3000 {
            list.push(format!("item {i}"));
            hash.extend([format!("field{i}"), format!("value {i}")]);
            zset.extend([format!("{}", i as f64 / 4.0), format!("m{i}")]);
            set.push(format!("member{i}"));
        }
        cmds.push(list);
        add(r, k("biglist"), cmds);
        add(r, k("bighash"), vec![hash]);
        add(r, k("bigzset"), vec![zset]);
        add(r, k("bigset"), vec![set]);
    }
    keys
}

/// Every type, small and big, with and without TTL, moved one key at a time and then with
/// KEYS, to a second Skerry and to Redis 8.0: the target holds what the source held, with
/// the TTL, and the source no longer has the keys.
fn every_type(threads: &str) {
    let src = source(threads);
    let mut r = src.raw();
    for (name, to) in targets() {
        let mut t = to.raw();
        t.cmd(&["SELECT", "9"]);
        // One at a time.
        let keys = build_values(&mut r, &format!("{name}one"), true);
        let before: Vec<_> = keys.iter().map(|k| contents(&mut r, k)).collect();
        for k in &keys {
            assert_eq!(migrate(&mut r, &to, k, "9", &[]), ok(), "{name} {k}");
        }
        for (k, c) in keys.iter().zip(&before) {
            assert_eq!(&contents(&mut t, k), c, "{name} {k}");
            assert_eq!(r.cmd(&["EXISTS", k]), int(0), "{name} {k}");
        }
        // All at once.
        let keys = build_values(&mut r, &format!("{name}all"), true);
        let before: Vec<_> = keys.iter().map(|k| contents(&mut r, k)).collect();
        assert_eq!(
            migrate(&mut r, &to, "", "9", &keys_arg(&keys)),
            ok(),
            "{name}"
        );
        for (k, c) in keys.iter().zip(&before) {
            assert_eq!(&contents(&mut t, k), c, "{name} {k}");
            assert_eq!(r.cmd(&["EXISTS", k]), int(0), "{name} {k}");
        }
        for prefix in ["one", "all"] {
            let ttl = t.cmd(&["TTL", &format!("{name}{prefix}:ttl")]).int();
            // 100 s at the source; the transfer may take a few seconds on a loaded machine.
            assert!((80..=100).contains(&ttl), "{name}: ttl {ttl}");
            let pttl = t.cmd(&["PTTL", &format!("{name}{prefix}:hash")]).int();
            assert!((30_000..=50_000).contains(&pttl), "{name}: pttl {pttl}");
            assert_eq!(t.cmd(&["TTL", &format!("{name}{prefix}:str")]), int(-1));
        }
        assert_eq!(r.cmd(&["DBSIZE"]), int(0));
    }
}

#[test]
fn every_type_moves_with_its_ttl_threads_1() {
    every_type("1");
}

#[test]
fn every_type_moves_with_its_ttl_threads_2() {
    every_type("2");
}

/// COPY keeps the source key; without REPLACE the target's BUSYKEY comes back as Redis
/// words it, and the key stays; with REPLACE it is overwritten.
#[test]
fn copy_replace_and_busykey() {
    let src = source("2");
    let mut r = src.raw();
    for (name, to) in targets() {
        let mut t = to.raw();
        r.cmd(&["DEL", "list"]);
        r.cmd(&["LPUSH", "list", "a", "b", "c", "d"]);
        assert_eq!(migrate(&mut r, &to, "list", "0", &["COPY"]), ok(), "{name}");
        assert_eq!(r.cmd(&["EXISTS", "list"]), int(1));
        assert_eq!(
            t.cmd(&["LRANGE", "list", "0", "-1"]),
            bulks(&["d", "c", "b", "a"])
        );
        t.cmd(&["SET", "list", "somevalue"]);
        assert_eq!(
            migrate(&mut r, &to, "list", "0", &["COPY"]),
            err("ERR Target instance replied with error: BUSYKEY Target key name already exists."),
            "{name}"
        );
        assert_eq!(
            migrate(&mut r, &to, "list", "0", &[]),
            err("ERR Target instance replied with error: BUSYKEY Target key name already exists."),
            "{name}"
        );
        assert_eq!(
            r.cmd(&["EXISTS", "list"]),
            int(1),
            "{name}: not acknowledged, kept"
        );
        assert_eq!(
            migrate(&mut r, &to, "list", "0", &["COPY", "REPLACE"]),
            ok()
        );
        assert_eq!(r.cmd(&["EXISTS", "list"]), int(1));
        assert_eq!(
            t.cmd(&["LRANGE", "list", "0", "-1"]),
            bulks(&["d", "c", "b", "a"])
        );
        t.cmd(&["SET", "list", "again"]);
        assert_eq!(migrate(&mut r, &to, "list", "0", &["REPLACE"]), ok());
        assert_eq!(r.cmd(&["EXISTS", "list"]), int(0));
        assert_eq!(t.cmd(&["LLEN", "list"]), int(4));
    }
}

/// NOKEY, keys that do not exist left out, the argument errors, and (Redis's "delete just
/// ack keys") only the keys the target acknowledged are deleted.
#[test]
fn keys_option_nokey_and_partial_failure() {
    let src = source("2");
    let mut r = src.raw();
    let to = skerry_target(&[]);
    let mut t = to.raw();
    let p = port(&to);
    let pp = p.as_str();
    assert_eq!(
        r.cmd(&[
            "MIGRATE",
            "127.0.0.1",
            pp,
            "",
            "9",
            "5000",
            "KEYS",
            "nokey-1",
            "nokey-2",
            "nokey-2"
        ]),
        simple("NOKEY")
    );
    assert_eq!(
        r.cmd(&["MIGRATE", "127.0.0.1", pp, "nokey", "0", "5000"]),
        simple("NOKEY")
    );
    assert_eq!(
        r.cmd(&[
            "MIGRATE",
            "127.0.0.1",
            pp,
            "NotEmpty",
            "9",
            "5000",
            "keys",
            "a",
            "b",
            "c"
        ]),
        err("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
    );
    assert_eq!(
        r.cmd(&["MIGRATE", "127.0.0.1", pp, "k", "0", "5000", "COPY", "NOPE"]),
        err("ERR syntax error")
    );
    assert_eq!(
        r.cmd(&["MIGRATE", "127.0.0.1", pp, "k", "0", "5000", "AUTH"]),
        err("ERR syntax error")
    );
    assert_eq!(
        r.cmd(&["MIGRATE", "127.0.0.1", pp, "k", "0", "5000", "AUTH2", "u"]),
        err("ERR syntax error")
    );
    assert_eq!(
        r.cmd(&["MIGRATE", "127.0.0.1", pp, "k", "x", "5000"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        r.cmd(&["MIGRATE", "127.0.0.1", pp, "k", "0", "5s"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        r.cmd(&["MIGRATE", "127.0.0.1", pp, "k", "0"]),
        err("ERR wrong number of arguments for 'migrate' command")
    );
    r.cmd(&["MSET", "key1", "v1", "key2", "v2", "key3", "v3"]);
    assert_eq!(
        r.cmd(&[
            "MIGRATE",
            "127.0.0.1",
            pp,
            "",
            "9",
            "5000",
            "KEYS",
            "nokey-1",
            "key1",
            "nokey-2",
            "key2",
            "nokey-3",
            "key3"
        ]),
        ok()
    );
    assert_eq!(r.cmd(&["EXISTS", "key1", "key2", "key3"]), int(0));
    t.cmd(&["SELECT", "9"]);
    assert_eq!(
        t.cmd(&["MGET", "key1", "key2", "key3"]),
        bulks(&["v1", "v2", "v3"])
    );
    // Delete just the acknowledged keys.
    r.cmd(&["FLUSHDB"]);
    t.cmd(&["FLUSHDB"]);
    let names = [
        "a", "b", "c", "d", "e", "f", "g", "h", "i", "l", "m", "n", "o", "p", "q",
    ];
    for (i, k) in names.iter().enumerate() {
        r.cmd(&["SET", k, &i.to_string()]);
    }
    t.cmd(&["MSET", "c", "_", "d", "_"]);
    let mut args = vec!["MIGRATE", "127.0.0.1", pp, "", "9", "5000", "KEYS"];
    args.extend(names);
    assert_eq!(
        r.cmd(&args),
        err("ERR Target instance replied with error: BUSYKEY Target key name already exists.")
    );
    assert_eq!(r.cmd(&["DBSIZE"]), int(2));
    assert_eq!(r.cmd(&["EXISTS", "c", "d"]), int(2));
    assert_eq!(t.cmd(&["DBSIZE"]), int(15));
    // The target's SELECT error.
    r.cmd(&["SET", "k", "v"]);
    assert_eq!(
        r.cmd(&["MIGRATE", "127.0.0.1", pp, "k", "99", "5000"]),
        err("ERR Target instance replied with error: ERR DB index is out of range")
    );
    assert_eq!(r.cmd(&["EXISTS", "k"]), int(1));
    // SELECT is sent again after an error, and when the database changes.
    for db in ["1", "2", "1"] {
        r.cmd(&["SET", "k", db]);
        assert_eq!(
            r.cmd(&["MIGRATE", "127.0.0.1", pp, "k", db, "5000", "REPLACE"]),
            ok()
        );
        t.cmd(&["SELECT", db]);
        assert_eq!(t.cmd(&["GET", "k"]), bulk(db));
    }
    t.cmd(&["SELECT", "2"]);
    assert_eq!(t.cmd(&["DBSIZE"]), int(1));
}

/// AUTH and AUTH2 against a password-protected target; a wrong password is the target's
/// WRONGPASS.
#[test]
fn auth_and_auth2() {
    let src = source("2");
    let mut r = src.raw();
    let mut tos = vec![("skerry", skerry_target(&["--requirepass", "foobar"]))];
    if let Some(x) = reference_8() {
        let mut c = x.raw();
        assert_eq!(c.cmd(&["CONFIG", "SET", "requirepass", "foobar"]), ok());
        tos.push(("redis", x));
    }
    for (name, to) in tos {
        let mut t = to.raw();
        assert_eq!(t.cmd(&["AUTH", "foobar"]), ok());
        r.cmd(&["DEL", "list"]);
        r.cmd(&["LPUSH", "list", "a", "b", "c", "d"]);
        assert_eq!(
            migrate(&mut r, &to, "list", "0", &[]),
            err("ERR Target instance replied with error: NOAUTH Authentication required."),
            "{name}"
        );
        assert_eq!(
            migrate(&mut r, &to, "list", "9", &["AUTH", "foobar"]),
            ok(),
            "{name}"
        );
        t.cmd(&["SELECT", "9"]);
        assert_eq!(
            t.cmd(&["LRANGE", "list", "0", "-1"]),
            bulks(&["d", "c", "b", "a"])
        );
        r.cmd(&["LPUSH", "list", "a", "b", "c", "d"]);
        assert_eq!(
            migrate(
                &mut r,
                &to,
                "list",
                "9",
                &["AUTH2", "default", "foobar", "REPLACE"]
            ),
            ok(),
            "{name}"
        );
        r.cmd(&["LPUSH", "list", "a", "b", "c", "d"]);
        assert_eq!(
            migrate(&mut r, &to, "list", "9", &["AUTH", "wrong", "REPLACE"]),
            err("ERR Target instance replied with error: WRONGPASS invalid username-password pair or user is disabled."),
            "{name}"
        );
        assert_eq!(r.cmd(&["EXISTS", "list"]), int(1), "{name}");
    }
}

/// A listener that accepts connections and never answers (holds them open).
fn silent_listener() -> (u16, std::sync::mpsc::Sender<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while stopped.try_recv().is_err() {
            match l.accept() {
                Ok((s, _)) => held.push(s),
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    (port, stop)
}

/// A target that accepts but never answers: IOERR after the time-out, the key stays; the
/// connection errors as Redis words them.
#[test]
fn timeouts_and_connection_errors() {
    let src = source("2");
    let mut r = src.raw();
    r.cmd(&["SET", "key", "Some Value"]);
    let (p, _stop) = silent_listener();
    let p = p.to_string();
    let t0 = Instant::now();
    assert_eq!(
        r.cmd(&["MIGRATE", "127.0.0.1", &p, "key", "9", "500"]),
        err("IOERR error or timeout reading to target instance")
    );
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(450) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_eq!(r.cmd(&["GET", "key"]), bulk("Some Value"));
    // A port nobody listens on: Redis's blocking connect waits only for the socket to be
    // writable, so the refusal shows as a failed write (tried twice).
    let closed = free_port().to_string();
    assert_eq!(
        r.cmd(&["MIGRATE", "127.0.0.1", &closed, "key", "9", "500"]),
        err("IOERR error or timeout writing to target instance")
    );
    // The port is taken as atoi takes it: "notaport" is port 0.
    assert_eq!(
        r.cmd(&["MIGRATE", "127.0.0.1", "notaport", "key", "9", "500"]),
        err("IOERR error or timeout writing to target instance")
    );
    // No such host: the connection cannot even start.
    assert_eq!(
        r.cmd(&["MIGRATE", "no-such-host.invalid", "6379", "key", "9", "500"]),
        err("IOERR error or timeout connecting to the client")
    );
    assert_eq!(r.cmd(&["EXISTS", "key"]), int(1));
}

/// Skerry-only: a MIGRATE waiting for its target does not stop the workers: other clients
/// (of either worker) are served meanwhile.
#[test]
fn other_clients_are_served_while_migrate_waits() {
    skip_if_redis!();
    let src = source("2");
    let (p, _stop) = silent_listener();
    let mut r = src.raw();
    r.cmd(&["SET", "key", "v"]);
    let p = p.to_string();
    let waiting = std::thread::spawn({
        let mut r = src.raw();
        move || r.cmd(&["MIGRATE", "127.0.0.1", &p, "key", "0", "8000"])
    });
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    for i in 0..50 {
        let k = key_on("other", i % 2);
        assert_eq!(r.cmd(&["SET", &k, "x"]), ok());
        let mut other = src.raw();
        assert_eq!(other.cmd(&["GET", &k]), bulk("x"));
    }
    // 100 commands served well before the MIGRATE's 8 s timeout (slack for a loaded CI
    // machine): the MIGRATE holds no worker while it waits.
    assert!(t0.elapsed() < Duration::from_secs(6), "{:?}", t0.elapsed());
    assert!(!waiting.is_finished(), "the MIGRATE should still wait");
    assert_eq!(
        waiting.join().unwrap(),
        err("IOERR error or timeout reading to target instance")
    );
}

/// Keys of both workers in one MIGRATE (and with COPY): all of them move.
#[test]
fn keys_spread_over_workers() {
    let src = source("2");
    let mut r = src.raw();
    for (name, to) in targets() {
        let mut t = to.raw();
        let keys: Vec<String> = (0..20)
            .map(|i| key_on(&format!("{name}spread{i}-"), i % 2))
            .collect();
        for (i, k) in keys.iter().enumerate() {
            r.cmd(&["SET", k, &i.to_string()]);
        }
        let mut a = keys_arg(&keys);
        a.insert(0, "COPY");
        assert_eq!(migrate(&mut r, &to, "", "0", &a), ok(), "{name}");
        assert_eq!(r.cmd(&["DBSIZE"]), int(20));
        assert_eq!(
            migrate(&mut r, &to, "", "0", &{
                let mut a = keys_arg(&keys);
                a.insert(0, "REPLACE");
                a
            }),
            ok(),
            "{name}"
        );
        assert_eq!(r.cmd(&["DBSIZE"]), int(0));
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(t.cmd(&["GET", k]), bulk(&i.to_string()), "{name} {k}");
        }
    }
}

/// MIGRATE queued in MULTI and called from a script, keys on both workers: it runs inside
/// the transaction (nothing else runs meanwhile, as in Redis), the moved keys are gone
/// from the source when EXEC answers, and the commands after it see that.
#[test]
fn inside_multi_and_scripts() {
    let src = source("2");
    let mut r = src.raw();
    for (name, to) in targets() {
        let mut t = to.raw();
        let keys: Vec<String> = (0..6)
            .map(|i| key_on(&format!("{name}tx{i}-"), i % 2))
            .collect();
        for (i, k) in keys.iter().enumerate() {
            r.cmd(&["SET", k, &format!("v{i}")]);
        }
        let p = port(&to);
        assert_eq!(r.cmd(&["MULTI"]), ok());
        let mut m = vec!["MIGRATE", "127.0.0.1", p.as_str(), "", "0", "5000", "KEYS"];
        m.extend(keys[..3].iter().map(String::as_str));
        assert_eq!(r.cmd(&m), simple("QUEUED"), "{name}");
        assert_eq!(
            r.cmd(&["EXISTS", &keys[0], &keys[1], &keys[3]]),
            simple("QUEUED")
        );
        assert_eq!(
            r.cmd(&["EXEC"]),
            arr(vec![ok(), int(1)]),
            "{name}: the moved keys are gone inside the transaction"
        );
        for (i, k) in keys[..3].iter().enumerate() {
            assert_eq!(t.cmd(&["GET", k]), bulk(&format!("v{i}")), "{name} {k}");
        }
        // From a script: COPY keeps the source; without it the key goes.
        let script = format!(
            "local a = redis.call('MIGRATE', '127.0.0.1', '{p}', KEYS[1], 0, 5000, 'COPY') \
             local b = redis.call('MIGRATE', '127.0.0.1', '{p}', KEYS[2], 0, 5000) \
             return {{a, b, redis.call('EXISTS', KEYS[1], KEYS[2])}}"
        );
        assert_eq!(
            r.cmd(&["EVAL", &script, "2", &keys[3], &keys[4]]),
            arr(vec![simple("OK"), simple("OK"), int(1)]),
            "{name}"
        );
        assert_eq!(t.cmd(&["GET", &keys[3]]), bulk("v3"), "{name}");
        assert_eq!(t.cmd(&["GET", &keys[4]]), bulk("v4"), "{name}");
        assert_eq!(r.cmd(&["DBSIZE"]), int(2), "{name}");
        // A failed MIGRATE inside EXEC is that command's error; the rest runs.
        assert_eq!(r.cmd(&["MULTI"]), ok());
        let m = [
            "MIGRATE",
            "127.0.0.1",
            p.as_str(),
            keys[5].as_str(),
            "0",
            "5000",
        ];
        assert_eq!(r.cmd(&m), simple("QUEUED"));
        assert_eq!(r.cmd(&m), simple("QUEUED"));
        assert_eq!(r.cmd(&["GET", &keys[5]]), simple("QUEUED"));
        assert_eq!(
            r.cmd(&["EXEC"]),
            arr(vec![ok(), simple("NOKEY"), Value::Null]),
            "{name}"
        );
        r.cmd(&["FLUSHALL"]);
        t.cmd(&["FLUSHALL"]);
    }
}

/// A string of several MB and a big grouped list travel whole (Redis's "MIGRATE can
/// correctly transfer large values").
#[test]
fn big_values() {
    let src = source("2");
    let mut r = src.raw();
    let big: Vec<u8> = (0..6 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    for (name, to) in targets() {
        let mut t = to.raw();
        r.cmd_bytes(&[b"SET", b"bigstr", &big]);
        r.cmd(&["DEL", "biglist"]);
        for j in 0..400 {
            let items: Vec<String> = (0..50).map(|i| format!("item {j} {i}")).collect();
            let mut a = vec!["RPUSH", "biglist"];
            a.extend(items.iter().map(|s| s.as_str()));
            r.cmd(&a);
        }
        assert!(match r.cmd(&["DUMP", "biglist"]) {
            Value::Bulk(b) => b.len() > 64 * 1024,
            _ => false,
        });
        assert_eq!(
            migrate(&mut r, &to, "", "0", &["KEYS", "bigstr", "biglist"]),
            ok(),
            "{name}"
        );
        assert_eq!(r.cmd(&["EXISTS", "bigstr", "biglist"]), int(0));
        assert_eq!(
            t.cmd(&["GET", "bigstr"]),
            Value::Bulk(big.clone()),
            "{name}"
        );
        assert_eq!(t.cmd(&["LLEN", "biglist"]), int(20_000));
        assert_eq!(t.cmd(&["LINDEX", "biglist", "12345"]), bulk("item 246 45"));
        assert_eq!(t.cmd(&["TTL", "biglist"]), int(-1));
    }
}

fn cached(r: &mut Raw) -> u64 {
    let info = r.cmd(&["INFO", "stats"]).text();
    info_field(&info, "migrate_cached_sockets")
        .expect("migrate_cached_sockets")
        .parse()
        .unwrap()
}

/// One cached connection per target, whichever client (worker) migrates; a cached
/// connection the target closed is replaced without an error; all are released after
/// about 10 s unused.
#[test]
fn cached_connections() {
    let src = source("2");
    let a = skerry_target(&[]);
    let b = skerry_target(&[]);
    let mut r = src.raw();
    assert_eq!(cached(&mut r), 0);
    for i in 0..6 {
        // New connections: spread over the workers.
        let mut c = src.raw();
        let k = format!("k{i}");
        c.cmd(&["SET", &k, "v"]);
        assert_eq!(migrate(&mut c, &a, &k, "0", &[]), ok());
    }
    assert_eq!(cached(&mut r), 1);
    r.cmd(&["SET", "x", "v"]);
    assert_eq!(migrate(&mut r, &b, "x", "0", &[]), ok());
    assert_eq!(cached(&mut r), 2);
    // The target closes the cached connection: the next MIGRATE connects again.
    let mut t = a.raw();
    let killed = t.cmd(&["CLIENT", "KILL", "TYPE", "normal"]).int();
    assert!(killed >= 1, "{killed}");
    std::thread::sleep(Duration::from_millis(100));
    r.cmd(&["SET", "y", "v"]);
    assert_eq!(migrate(&mut r, &a, "y", "0", &[]), ok());
    assert_eq!(t.cmd(&["GET", "y"]), bulk("v"));
    assert_eq!(cached(&mut r), 2);
    let t0 = Instant::now();
    assert!(
        wait_until(Duration::from_secs(15), || cached(&mut r) == 0),
        "still {} cached",
        cached(&mut r)
    );
    assert!(t0.elapsed() >= Duration::from_secs(9), "{:?}", t0.elapsed());
}

/// How many whole RESP commands (arrays of bulk strings) `buf` starts with.
fn complete_commands(buf: &[u8]) -> usize {
    fn line(buf: &[u8], at: usize) -> Option<(i64, usize)> {
        let end = at + buf.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        let n = std::str::from_utf8(&buf[at + 1..end]).ok()?.parse().ok()?;
        Some((n, end + 2))
    }
    let (mut at, mut n) = (0, 0);
    while let Some((args, mut next)) = line(buf, at) {
        for _ in 0..args {
            let Some((len, data)) = line(buf, next) else {
                return n;
            };
            next = data + len as usize + 2;
        }
        if next > buf.len() {
            return n;
        }
        at = next;
        n += 1;
    }
    n
}

/// A write to a key between its DUMP and its delete is not lost: the target holds the
/// DUMPed value and the source keeps the newer one. (Redis runs MIGRATE alone, so there the
/// write runs after the delete and gives the same result for SET.)
#[test]
fn write_during_migrate_is_kept() {
    let src = source("2");
    let mut r = src.raw();
    r.cmd(&["SET", "k", "old"]);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = l.local_addr().unwrap().port().to_string();
    let (got_tx, got_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let target = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut req = Vec::new();
        let mut buf = [0u8; 4096];
        // SELECT and one RESTORE.
        while complete_commands(&req) < 2 {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0);
            req.extend_from_slice(&buf[..n]);
        }
        got_tx.send(req).unwrap();
        std::thread::sleep(Duration::from_millis(700));
        s.write_all(b"+OK\r\n+OK\r\n").unwrap();
        // Keep the connection until the source is done with it.
        std::thread::sleep(Duration::from_millis(500));
    });
    let waiting = std::thread::spawn({
        let mut r = src.raw();
        move || r.cmd(&["MIGRATE", "127.0.0.1", &p, "k", "0", "5000"])
    });
    let req = got_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let text = String::from_utf8_lossy(&req);
    assert!(
        text.contains("SELECT") && text.contains("RESTORE") && text.contains("old"),
        "{text}"
    );
    let mut w = src.raw();
    w.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nnew\r\n");
    assert_eq!(w.read_value(), ok());
    assert_eq!(waiting.join().unwrap(), ok());
    target.join().unwrap();
    assert_eq!(r.cmd(&["GET", "k"]), bulk("new"));
}

/// `v` without the `display_text` entries that repeat the argument's name.
fn without_default_display_text(v: Value) -> Value {
    match v {
        Value::Array(items) => {
            let name = match (items.first(), items.get(1)) {
                (Some(Value::Bulk(k)), Some(n)) if k == b"name" => Some(n.clone()),
                _ => None,
            };
            let mut out = Vec::new();
            let mut i = 0;
            while i < items.len() {
                if name.is_some()
                    && items[i] == bulk("display_text")
                    && items.get(i + 1) == name.as_ref()
                {
                    i += 2;
                    continue;
                }
                out.push(without_default_display_text(items[i].clone()));
                i += 1;
            }
            Value::Array(out)
        }
        other => other,
    }
}

/// COMMAND INFO MIGRATE (but its tips, which Skerry does not list for any command),
/// COMMAND DOCS MIGRATE and COMMAND GETKEYS / GETKEYSANDFLAGS are Redis 8.0's.
#[test]
fn command_info_docs_and_getkeys_match_redis8() {
    let Some(redis) = reference_8() else { return };
    let skerry = Server::start(&[]);
    let (mut a, mut b) = (skerry.raw(), redis.raw());
    let (x, y) = (
        a.cmd(&["COMMAND", "INFO", "MIGRATE"]),
        b.cmd(&["COMMAND", "INFO", "MIGRATE"]),
    );
    let (x, y) = (x.items()[0].items(), y.items()[0].items());
    for i in [0, 1, 2, 3, 4, 5, 6, 8, 9] {
        assert_eq!(x[i], y[i], "COMMAND INFO MIGRATE [{i}]");
    }
    assert!(x[2].strings().contains(&"movablekeys".to_string()));
    // Redis 8 also gives every plain argument its name as `display_text`; Skerry's COMMAND
    // DOCS (all commands) lists only the display texts that differ from the name.
    assert_eq!(
        without_default_display_text(a.cmd(&["COMMAND", "DOCS", "MIGRATE"])),
        without_default_display_text(b.cmd(&["COMMAND", "DOCS", "MIGRATE"]))
    );
    let cases: &[&[&str]] = &[
        &["MIGRATE", "h", "1", "k", "0", "0"],
        &["MIGRATE", "h", "1", "", "0", "0", "KEYS", "a", "b"],
        &[
            "MIGRATE", "h", "1", "", "0", "0", "COPY", "AUTH", "keys", "KEYS", "a",
        ],
        &[
            "MIGRATE", "h", "1", "", "0", "0", "AUTH2", "keys", "keys", "KEYS", "a",
        ],
        &["MIGRATE", "h", "1", "k", "0", "0", "KEYS", "a"],
        &["MIGRATE", "h", "1", "", "0", "0"],
        &["MIGRATE", "h", "1", "k", "0"],
    ];
    for case in cases {
        for sub in ["GETKEYS", "GETKEYSANDFLAGS"] {
            let mut argv = vec!["COMMAND", sub];
            argv.extend_from_slice(case);
            assert_eq!(a.cmd(&argv), b.cmd(&argv), "{argv:?}");
        }
    }
}

/// Skerry-only: values that are only on the device after a restart (a chunked string, a
/// grouped list, small keys of both workers) are read for the DUMP and migrate whole.
#[test]
fn values_read_from_the_device() {
    skip_if_redis!();
    let mut src = Server::start(&[
        "--threads",
        "2",
        "--collection-group-bytes",
        "512",
        "--appendfsync",
        "always",
    ]);
    let to = skerry_target(&[]);
    let big: Vec<u8> = (0..3 * 1024 * 1024u32).map(|i| (i % 241) as u8).collect();
    let small: Vec<String> = (0..10)
        .map(|i| key_on(&format!("small{i}-"), i % 2))
        .collect();
    {
        let mut r = src.raw();
        r.cmd_bytes(&[b"SET", b"bigstr", &big]);
        for j in 0..100 {
            let items: Vec<String> = (0..50).map(|i| format!("item {j} {i}")).collect();
            let mut a = vec!["RPUSH", "biglist"];
            a.extend(items.iter().map(|s| s.as_str()));
            r.cmd(&a);
        }
        for k in &small {
            r.cmd(&["SET", k, k, "EX", "1000"]);
        }
    }
    src.restart();
    let mut r = src.raw();
    let mut keys = vec!["bigstr".to_string(), "biglist".to_string()];
    keys.extend(small.iter().cloned());
    assert_eq!(migrate(&mut r, &to, "", "0", &keys_arg(&keys)), ok());
    assert_eq!(r.cmd(&["DBSIZE"]), int(0));
    let mut t = to.raw();
    assert_eq!(t.cmd(&["GET", "bigstr"]), Value::Bulk(big));
    assert_eq!(t.cmd(&["LLEN", "biglist"]), int(5000));
    assert_eq!(t.cmd(&["LINDEX", "biglist", "4999"]), bulk("item 99 49"));
    for k in &small {
        assert_eq!(t.cmd(&["GET", k]), bulk(k));
        let ttl = t.cmd(&["TTL", k]).int();
        assert!((990..=1000).contains(&ttl), "{k}: {ttl}");
    }
}

/// One seeded random operation of the differential test, as arguments; `on_target` says
/// where it runs.
fn random_op(rng: &mut Rng, n: u64) -> (bool, Vec<String>) {
    let key = |rng: &mut Rng| format!("k{}", rng.range(0, 16));
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    let k = key(rng);
    let v = format!("v{}", rng.range(0, 1000));
    match rng.range(0, 14) {
        0 => (false, s(&["SET", &k, &v])),
        1 => (
            false,
            s(&["SET", &k, &v, "PX", &rng.range(20_000, 90_000).to_string()]),
        ),
        2 => (false, s(&["RPUSH", &k, &v, "x", "y"])),
        3 => (false, s(&["SADD", &k, &v, "m"])),
        4 => (false, s(&["ZADD", &k, &rng.range(0, 50).to_string(), &v])),
        5 => (false, s(&["HSET", &k, "f", &v, "g", "1"])),
        6 => (false, s(&["XADD", &k, &format!("{}-1", n + 1), "f", &v])),
        7 => (false, s(&["DEL", &k])),
        8 => (true, s(&["SET", &k, "busy"])),
        9 => (true, s(&["DEL", &k])),
        _ => {
            let mut a = s(&["MIGRATE", "127.0.0.1", "PORT"]);
            let many = rng.range(0, 2) == 0;
            a.push(if many { String::new() } else { k.clone() });
            a.push(rng.range(0, 3).to_string());
            a.push("5000".to_string());
            if rng.range(0, 3) == 0 {
                a.push("COPY".to_string());
            }
            if rng.range(0, 2) == 0 {
                a.push("REPLACE".to_string());
            }
            if many {
                a.push("KEYS".to_string());
                for _ in 0..rng.range(1, 6) {
                    a.push(key(rng));
                }
            }
            (false, a)
        }
    }
}

/// Everything about keys `k0..k15` in databases 0..3 of a server: type, contents and whether
/// it has a TTL.
/// (database, key, type, contents, has a TTL).
type KeyState = (usize, String, String, Vec<Vec<u8>>, bool);

fn state(r: &mut Raw) -> Vec<KeyState> {
    let mut out = Vec::new();
    for db in 0..3 {
        r.cmd(&["SELECT", &db.to_string()]);
        for i in 0..16 {
            let k = format!("k{i}");
            let (t, c) = contents(r, &k);
            let ttl = r.cmd(&["PTTL", &k]).int() >= 0;
            out.push((db, k, t, c, ttl));
        }
    }
    r.cmd(&["SELECT", "0"]);
    out
}

/// Differential: the same seeded operations (writes on the source, a few on the target,
/// and MIGRATE with every option, missing, duplicate and busy keys, three databases) run
/// with Skerry as the source and with the reference Redis 8.0 as the source, each towards a
/// target of its own (Redis 8.0, or with `skerry_target` a Skerry for Skerry's source):
/// every reply is the same, and so is every key on both sides.
/// `SKERRY_MIGRATE_DIFF_OPS` sets the number of operations (default 2,000),
/// `SKERRY_MIGRATE_DIFF_SEED` is added to the seed.
fn differential(threads: &str, seed: u64, skerry_to_skerry: bool) {
    let Some(ref_src) = reference_8() else { return };
    let Some(ref_dst) = reference_8() else { return };
    let sk_dst = if skerry_to_skerry {
        skerry_target(&[])
    } else {
        match reference_8() {
            Some(s) => s,
            None => return,
        }
    };
    let ops: u64 = std::env::var("SKERRY_MIGRATE_DIFF_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let seed = seed
        + std::env::var("SKERRY_MIGRATE_DIFF_SEED")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    let sk_src = source(threads);
    let (mut a, mut b) = (sk_src.raw(), ref_src.raw());
    let (mut ta, mut tb) = (sk_dst.raw(), ref_dst.raw());
    let mut rng = Rng::new(seed);
    let mut migrates = 0;
    for n in 0..ops {
        let (on_target, mut args) = random_op(&mut rng, n);
        let (x, y) = if on_target {
            let argv: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
            (ta.cmd(&argv), tb.cmd(&argv))
        } else if args[0] == "MIGRATE" {
            migrates += 1;
            args[2] = sk_dst.port().to_string();
            let x = a.cmd(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
            args[2] = ref_dst.port().to_string();
            let y = b.cmd(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
            (x, y)
        } else {
            let argv: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
            (a.cmd(&argv), b.cmd(&argv))
        };
        assert_eq!(x, y, "op {n}: {args:?} (seed {seed})");
        if n % 200 == 199 || n + 1 == ops {
            assert_eq!(
                state(&mut a),
                state(&mut b),
                "source after op {n} (seed {seed})"
            );
            assert_eq!(
                state(&mut ta),
                state(&mut tb),
                "target after op {n} (seed {seed})"
            );
        }
    }
    assert!(migrates > ops / 4, "{migrates} MIGRATEs");
    eprintln!(
        "{ops} operations, {migrates} MIGRATEs (seed {seed}, threads {threads}, skerry target {skerry_to_skerry})"
    );
}

#[test]
fn differential_with_redis_threads_1() {
    differential("1", 27, false);
}

#[test]
fn differential_with_redis_threads_2() {
    differential("2", 28, false);
}

#[test]
fn differential_skerry_to_skerry_threads_2() {
    differential("2", 29, true);
}
