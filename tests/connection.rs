//! Connection handling: PING/ECHO/HELLO/AUTH/SELECT/QUIT/RESET, CLIENT subcommands, limits
//! (maxclients, idle timeout, output buffer limits) and many concurrent connections.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;

const NOAUTH: &str = "NOAUTH Authentication required.";
const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

#[test]
fn ping_and_echo() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(r.cmd_raw(&["PING"]), b"+PONG\r\n");
    assert_eq!(
        r.cmd_raw(&["PING", "hello world"]),
        b"$11\r\nhello world\r\n"
    );
    assert_eq!(r.cmd_raw(&["PING", ""]), b"$0\r\n\r\n");
    assert_eq!(
        r.cmd(&["PING", "a", "b"]),
        err("ERR wrong number of arguments for 'ping' command")
    );
    assert_eq!(r.cmd_raw(&["ECHO", "x y"]), b"$3\r\nx y\r\n");
    assert_eq!(
        r.cmd_bytes(&[b"ECHO", b"\0\r\n"]),
        Value::Bulk(b"\0\r\n".to_vec())
    );
    assert_eq!(
        r.cmd(&["ECHO"]),
        err("ERR wrong number of arguments for 'echo' command")
    );
    assert_eq!(
        r.cmd(&["ECHO", "a", "b"]),
        err("ERR wrong number of arguments for 'echo' command")
    );
    // Through the redis crate.
    let mut c = s.client();
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    let echo: String = redis::cmd("ECHO").arg("hi").query(&mut c).unwrap();
    assert_eq!(echo, "hi");
}

#[test]
fn hello_switches_protocol_and_sets_name() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let v = r.cmd(&["HELLO", "3", "SETNAME", "myname"]);
    assert_eq!(v.get("proto"), Some(int(3)));
    assert_eq!(r.cmd(&["CLIENT", "GETNAME"]), bulk("myname"));
    assert_eq!(r.cmd_raw(&["GET", "nokey"]), b"_\r\n");
    let v = r.cmd(&["HELLO", "2"]);
    assert_eq!(v.get("proto"), Some(int(2)));
    assert_eq!(r.cmd_raw(&["GET", "nokey"]), b"$-1\r\n");
    assert_eq!(
        r.cmd(&["HELLO", "3", "SETNAME", "bad name"]),
        err("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(r.cmd(&["CLIENT", "GETNAME"]), bulk("myname"));
    assert_eq!(
        r.cmd(&["HELLO", "4"]),
        err("NOPROTO unsupported protocol version")
    );
    // HELLO AUTH with no password configured: the default user accepts any password.
    let v = r.cmd(&["HELLO", "3", "AUTH", "default", "whatever"]);
    assert_eq!(v.get("proto"), Some(int(3)));
}

#[test]
fn auth_with_requirepass() {
    let s = Server::start(&["--requirepass", "s3cret"]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["GET", "a"]), err(NOAUTH));
    assert_eq!(r.cmd(&["SET", "a", "b"]), err(NOAUTH));
    assert_eq!(r.cmd(&["PING"]), err(NOAUTH));
    assert_eq!(
        r.cmd_raw(&["GET", "a"]),
        b"-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(r.cmd(&["AUTH", "wrong"]), err(WRONGPASS));
    assert_eq!(r.cmd(&["AUTH", "default", "wrong"]), err(WRONGPASS));
    assert_eq!(r.cmd(&["AUTH", "nouser", "s3cret"]), err(WRONGPASS));
    assert_eq!(
        r.cmd(&["AUTH"]),
        err("ERR wrong number of arguments for 'auth' command")
    );
    assert_eq!(r.cmd(&["AUTH", "a", "b", "c"]), err("ERR syntax error"));
    assert_eq!(r.cmd(&["GET", "a"]), err(NOAUTH));
    assert_eq!(
        r.cmd(&["HELLO", "3"]),
        err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
    );
    assert_eq!(r.cmd(&["AUTH", "s3cret"]), ok());
    assert_eq!(r.cmd(&["SET", "a", "b"]), ok());
    assert_eq!(r.cmd(&["GET", "a"]), bulk("b"));
    // A failed AUTH after a successful one keeps the connection authenticated.
    assert_eq!(r.cmd(&["AUTH", "wrong"]), err(WRONGPASS));
    assert_eq!(r.cmd(&["GET", "a"]), bulk("b"));

    // AUTH with the default user name.
    let mut r2 = s.raw();
    assert_eq!(r2.cmd(&["AUTH", "default", "s3cret"]), ok());
    assert_eq!(r2.cmd(&["GET", "a"]), bulk("b"));

    // HELLO AUTH.
    let mut r3 = s.raw();
    assert_eq!(
        r3.cmd(&["HELLO", "3", "AUTH", "default", "nope"]),
        err(WRONGPASS)
    );
    assert_eq!(r3.cmd(&["GET", "a"]), err(NOAUTH));
    let v = r3.cmd(&["HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "n3"]);
    assert_eq!(v.get("proto"), Some(int(3)));
    assert_eq!(r3.cmd(&["GET", "a"]), bulk("b"));
    assert_eq!(r3.cmd(&["CLIENT", "GETNAME"]), bulk("n3"));

    // The redis crate with a password in the URL.
    let mut c = s.client_url(&format!("redis://:s3cret@127.0.0.1:{}/", s.port()));
    let v: String = redis::cmd("GET").arg("a").query(&mut c).unwrap();
    assert_eq!(v, "b");
    let bad = redis::Client::open(format!("redis://:wrong@127.0.0.1:{}/", s.port()))
        .unwrap()
        .get_connection();
    assert!(bad.is_err());

    // Changing requirepass at run time affects new connections only.
    assert_eq!(r.cmd(&["CONFIG", "SET", "requirepass", "other"]), ok());
    assert_eq!(r.cmd(&["GET", "a"]), bulk("b"));
    let mut r4 = s.raw();
    assert_eq!(r4.cmd(&["AUTH", "s3cret"]), err(WRONGPASS));
    assert_eq!(r4.cmd(&["AUTH", "other"]), ok());
    assert_eq!(r4.cmd(&["CONFIG", "SET", "requirepass", ""]), ok());
    let mut r5 = s.raw();
    assert_eq!(r5.cmd(&["GET", "a"]), bulk("b"));
}

#[test]
fn auth_without_password_configured() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd_raw(&["AUTH", "foo"]),
        b"-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n".to_vec()
    );
    // The default user has no password: any password works with the user name.
    assert_eq!(r.cmd(&["AUTH", "default", "foo"]), ok());
    assert_eq!(r.cmd(&["AUTH", "nouser", "foo"]), err(WRONGPASS));
    assert_eq!(r.cmd(&["PING"]), simple("PONG"));
}

#[test]
fn requirepass_from_config_file() {
    let s = Server::start_with_config("requirepass \"pass word\"\n", false, &[]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["GET", "a"]), err(NOAUTH));
    assert_eq!(r.cmd(&["AUTH", "pass word"]), ok());
    assert_eq!(r.cmd(&["PING"]), simple("PONG"));
}

#[test]
fn select_isolates_databases() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    for db in 0..16 {
        assert_eq!(r.cmd(&["SELECT", &db.to_string()]), ok(), "db {db}");
        assert_eq!(r.cmd(&["SET", "k", &format!("v{db}")]), ok());
        assert_eq!(r.cmd(&["SET", &format!("only{db}"), "1"]), ok());
    }
    for db in 0..16 {
        assert_eq!(r.cmd(&["SELECT", &db.to_string()]), ok());
        assert_eq!(r.cmd(&["GET", "k"]), bulk(&format!("v{db}")));
        assert_eq!(r.cmd(&["DBSIZE"]), int(2));
        let mut keys = r.cmd(&["KEYS", "*"]).strings();
        keys.sort();
        assert_eq!(keys, vec!["k".to_string(), format!("only{db}")]);
        assert_eq!(
            r.cmd(&["EXISTS", &format!("only{}", (db + 1) % 16)]),
            int(0)
        );
    }
    assert_eq!(
        r.cmd(&["SELECT", "16"]),
        err("ERR DB index is out of range")
    );
    assert_eq!(
        r.cmd(&["SELECT", "-1"]),
        err("ERR DB index is out of range")
    );
    assert_eq!(
        r.cmd(&["SELECT", "abc"]),
        err("ERR value is not an integer or out of range")
    );
    // A failed SELECT keeps the current database.
    assert_eq!(r.cmd(&["GET", "k"]), bulk("v15"));
    // Each connection starts in db 0.
    let mut r2 = s.raw();
    assert_eq!(r2.cmd(&["GET", "k"]), bulk("v0"));
    // The redis crate selects the db from the URL.
    let mut c = s.client_url(&format!("redis://127.0.0.1:{}/7", s.port()));
    let v: String = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(v, "v7");
    // Deleting in one db leaves the others alone.
    assert_eq!(r.cmd(&["DEL", "k"]), int(1));
    assert_eq!(r2.cmd(&["GET", "k"]), bulk("v0"));
}

#[test]
fn quit_closes_the_connection() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["SET", "a", "1"]), ok());
    r.send(&resp::encode(&["QUIT"]));
    let got = r.expect_closed();
    assert_eq!(got, b"+OK\r\n");
    assert_eq!(s.raw().cmd(&["GET", "a"]), bulk("1"));
}

#[test]
fn reset_restores_connection_defaults() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["SET", "k", "db0"]), ok());
    assert_eq!(r.cmd(&["SELECT", "5"]), ok());
    assert_eq!(r.cmd(&["SET", "k", "db5"]), ok());
    assert_eq!(r.cmd(&["CLIENT", "SETNAME", "before"]), ok());
    r.cmd(&["HELLO", "3"]);
    assert_eq!(r.cmd_raw(&["RESET"]), b"+RESET\r\n");
    assert_eq!(r.cmd(&["CLIENT", "GETNAME"]), Value::Null);
    assert_eq!(r.cmd_raw(&["GET", "nokey"]), b"$-1\r\n");
    assert_eq!(r.cmd(&["GET", "k"]), bulk("db0"));
    // RESET turns replies back on.
    r.send(&resp::encode(&["CLIENT", "REPLY", "OFF"]));
    assert_eq!(r.cmd(&["RESET"]), simple("RESET"));
    assert_eq!(r.cmd(&["PING"]), simple("PONG"));
}

#[test]
fn reset_deauthenticates() {
    let s = Server::start(&["--requirepass", "pw"]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["RESET"]), simple("RESET"));
    assert_eq!(r.cmd(&["AUTH", "pw"]), ok());
    assert_eq!(r.cmd(&["SET", "a", "1"]), ok());
    assert_eq!(r.cmd(&["RESET"]), simple("RESET"));
    assert_eq!(r.cmd(&["GET", "a"]), err(NOAUTH));
}

fn client_id(r: &mut Raw) -> i64 {
    r.cmd(&["CLIENT", "ID"]).int()
}

/// Parses one CLIENT LIST / CLIENT INFO line into `field=value` pairs.
fn client_fields(line: &str) -> Vec<(String, String)> {
    line.trim_end()
        .split(' ')
        .filter_map(|f| f.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn field(line: &str, name: &str) -> Option<String> {
    client_fields(line)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

#[test]
fn client_id_name_info_list() {
    let s = Server::start(&[]);
    // IDs grow with the order in which the server accepted the connections.
    let mut a = s.raw();
    let ida = client_id(&mut a);
    let mut b = s.raw();
    let idb = client_id(&mut b);
    assert!(ida > 0 && idb > ida, "ids {ida} {idb}");
    assert_eq!(client_id(&mut a), ida);

    assert_eq!(a.cmd(&["CLIENT", "GETNAME"]), Value::Null);
    assert_eq!(a.cmd(&["CLIENT", "SETNAME", "conn-a"]), ok());
    assert_eq!(a.cmd(&["CLIENT", "GETNAME"]), bulk("conn-a"));
    assert_eq!(
        a.cmd(&["CLIENT", "SETNAME", "has space"]),
        err("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(
        a.cmd(&["CLIENT", "SETNAME", "new\nline"]),
        err("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(a.cmd(&["CLIENT", "GETNAME"]), bulk("conn-a"));
    assert_eq!(b.cmd(&["CLIENT", "SETNAME", "conn-b"]), ok());
    assert_eq!(b.cmd(&["CLIENT", "SETNAME", ""]), ok());
    assert_eq!(b.cmd(&["CLIENT", "GETNAME"]), Value::Null);

    // CLIENT INFO describes the calling connection.
    assert_eq!(a.cmd(&["SELECT", "3"]), ok());
    let info = a.cmd(&["CLIENT", "INFO"]).text();
    assert!(info.ends_with('\n'), "{info:?}");
    assert_eq!(info.lines().count(), 1);
    assert_eq!(field(&info, "id"), Some(ida.to_string()));
    assert_eq!(field(&info, "name"), Some("conn-a".into()));
    assert_eq!(field(&info, "db"), Some("3".into()));
    assert_eq!(field(&info, "cmd"), Some("client|info".into()));
    assert_eq!(field(&info, "resp"), Some("2".into()));
    let local = a.stream.local_addr().unwrap().to_string();
    assert_eq!(field(&info, "addr"), Some(local.clone()));
    assert_eq!(field(&info, "laddr"), Some(s.addr()));

    // CLIENT LIST has one line per connection.
    let list = b.cmd(&["CLIENT", "LIST"]).text();
    let lines: Vec<&str> = list.lines().collect();
    let ids: Vec<i64> = lines
        .iter()
        .map(|l| field(l, "id").unwrap().parse().unwrap())
        .collect();
    assert!(ids.contains(&ida) && ids.contains(&idb), "{list}");
    let la = lines
        .iter()
        .find(|l| field(l, "id") == Some(ida.to_string()))
        .unwrap();
    assert_eq!(field(la, "name"), Some("conn-a".into()));
    assert_eq!(field(la, "addr"), Some(local));
    let lb = lines
        .iter()
        .find(|l| field(l, "id") == Some(idb.to_string()))
        .unwrap();
    assert_eq!(field(lb, "cmd"), Some("client|list".into()));
    assert_eq!(field(lb, "name"), Some("".into()));

    // Filters.
    let only = b
        .cmd(&["CLIENT", "LIST", "ID", &ida.to_string(), "999999"])
        .text();
    assert_eq!(only.lines().count(), 1);
    assert_eq!(
        field(only.lines().next().unwrap(), "id"),
        Some(ida.to_string())
    );
    let normal = b.cmd(&["CLIENT", "LIST", "TYPE", "normal"]).text();
    assert!(normal.lines().count() >= 2);
    assert_eq!(
        b.cmd(&["CLIENT", "LIST", "TYPE", "foo"]),
        err("ERR Unknown client type 'foo'")
    );
    assert_eq!(
        b.cmd(&["CLIENT", "LIST", "ID", "abc"]),
        err("ERR Invalid client ID")
    );
}

#[test]
fn client_kill_by_id_and_addr() {
    let s = Server::start(&[]);
    let mut killer = s.raw();
    let mut a = s.raw();
    let mut b = s.raw();
    let mut c = s.raw();
    let ida = client_id(&mut a);
    client_id(&mut b);
    client_id(&mut c);

    assert_eq!(
        killer.cmd(&["CLIENT", "KILL", "ID", &ida.to_string()]),
        int(1)
    );
    a.expect_closed();
    assert_eq!(
        killer.cmd(&["CLIENT", "KILL", "ID", &ida.to_string()]),
        int(0)
    );
    assert_eq!(killer.cmd(&["CLIENT", "KILL", "ID", "999999"]), int(0));
    assert_eq!(
        killer.cmd(&["CLIENT", "KILL", "ID", "abc"]),
        err("ERR client-id should be greater than 0")
    );

    let addr_b = b.stream.local_addr().unwrap().to_string();
    assert_eq!(killer.cmd(&["CLIENT", "KILL", "ADDR", &addr_b]), int(1));
    b.expect_closed();
    assert_eq!(killer.cmd(&["CLIENT", "KILL", "ADDR", &addr_b]), int(0));

    // The old form: CLIENT KILL ip:port.
    let addr_c = c.stream.local_addr().unwrap().to_string();
    assert_eq!(killer.cmd(&["CLIENT", "KILL", &addr_c]), ok());
    c.expect_closed();
    assert_eq!(
        killer.cmd(&["CLIENT", "KILL", &addr_c]),
        err("ERR No such client")
    );

    // The caller is skipped unless SKIPME no; then the reply is sent and the connection closes.
    let me = client_id(&mut killer).to_string();
    assert_eq!(killer.cmd(&["CLIENT", "KILL", "ID", &me]), int(0));
    assert_eq!(
        killer.cmd(&["CLIENT", "KILL", "ID", &me, "SKIPME", "yes"]),
        int(0)
    );
    killer.send(&resp::encode(&[
        "CLIENT", "KILL", "ID", &me, "SKIPME", "no",
    ]));
    assert_eq!(killer.expect_closed(), b":1\r\n");
    // The server goes on.
    assert_eq!(s.raw().cmd(&["PING"]), simple("PONG"));
}

#[test]
fn client_no_evict() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["CLIENT", "NO-EVICT", "on"]), ok());
    let info = r.cmd(&["CLIENT", "INFO"]).text();
    assert!(field(&info, "flags").unwrap().contains('e'), "{info}");
    assert_eq!(r.cmd(&["CLIENT", "NO-EVICT", "OFF"]), ok());
    let info = r.cmd(&["CLIENT", "INFO"]).text();
    assert!(!field(&info, "flags").unwrap().contains('e'), "{info}");
    assert_eq!(
        r.cmd(&["CLIENT", "NO-EVICT", "maybe"]),
        err("ERR syntax error")
    );
}

/// CLIENT SETINFO and CLIENT NO-TOUCH appeared in Redis 7.2 (the reference redis-server is 7.0).
#[test]
fn client_setinfo_and_no_touch() {
    skip_if_redis!();
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["CLIENT", "SETINFO", "lib-name", "mylib"]), ok());
    assert_eq!(r.cmd(&["CLIENT", "SETINFO", "LIB-VER", "1.2.3"]), ok());
    let info = r.cmd(&["CLIENT", "INFO"]).text();
    assert_eq!(field(&info, "lib-name"), Some("mylib".into()), "{info}");
    assert_eq!(field(&info, "lib-ver"), Some("1.2.3".into()), "{info}");
    let e = r
        .cmd(&["CLIENT", "SETINFO", "lib-name", "my lib"])
        .err_text();
    assert!(
        e.starts_with("ERR ")
            && e.to_lowercase()
                .ends_with("lib-name cannot contain spaces, newlines or special characters."),
        "{e}"
    );
    assert!(r.cmd(&["CLIENT", "SETINFO", "foo", "x"]).is_error());
    assert_eq!(
        r.cmd(&["CLIENT", "SETINFO", "lib-name"]),
        err("ERR wrong number of arguments for 'client|setinfo' command")
    );
    assert_eq!(r.cmd(&["CLIENT", "NO-TOUCH", "on"]), ok());
    let info = r.cmd(&["CLIENT", "INFO"]).text();
    assert!(field(&info, "flags").unwrap().contains('T'), "{info}");
    assert_eq!(r.cmd(&["CLIENT", "NO-TOUCH", "off"]), ok());
    assert_eq!(
        r.cmd(&["CLIENT", "NO-TOUCH", "maybe"]),
        err("ERR syntax error")
    );
}

#[test]
fn client_reply_on_off_skip() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let mut batch = Vec::new();
    for args in [
        vec!["CLIENT", "REPLY", "OFF"],
        vec!["SET", "a", "1"],
        vec!["INCR", "a"],
        vec!["NOSUCHCOMMAND"],
        vec!["CLIENT", "REPLY", "SKIP"],
        vec!["CLIENT", "REPLY", "ON"],
        vec!["CLIENT", "REPLY", "SKIP"],
        vec!["GET", "a"],
        vec!["ECHO", "after-skip"],
    ] {
        batch.extend(resp::encode(&args));
    }
    r.send(&batch);
    assert_eq!(r.read_value(), ok()); // CLIENT REPLY ON
    assert_eq!(r.read_value(), bulk("after-skip"));
    assert_eq!(r.cmd(&["GET", "a"]), bulk("2"));
    assert_eq!(
        r.cmd(&["CLIENT", "REPLY", "maybe"]),
        err("ERR syntax error")
    );
}

#[test]
fn maxclients() {
    let s = Server::start(&["--maxclients", "10"]);
    let mut first = s.raw();
    // Wait until the harness' readiness probe is gone.
    assert!(wait_until(Duration::from_secs(5), || {
        let info = first.cmd(&["INFO", "clients"]).text();
        info_field(&info, "connected_clients").as_deref() == Some("1")
    }));
    let mut conns = vec![first];
    for _ in 1..10 {
        let mut r = s.raw();
        assert_eq!(r.cmd(&["PING"]), simple("PONG"));
        conns.push(r);
    }
    let mut extra = s.raw();
    let got = extra.expect_closed();
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-ERR max number of clients reached\r\n"
    );
    // The others are unaffected.
    for r in conns.iter_mut() {
        assert_eq!(r.cmd(&["PING"]), simple("PONG"));
    }
    let info = conns[0].cmd(&["INFO", "stats"]).text();
    assert_eq!(
        info_field(&info, "rejected_connections").as_deref(),
        Some("1")
    );
    // After one leaves, a new one gets in.
    drop(conns.pop());
    assert!(wait_until(Duration::from_secs(5), || {
        let mut r = s.raw();
        r.send(&resp::encode(&["PING"]));
        r.try_read_value(Duration::from_secs(2)) == Some(simple("PONG"))
    }));
}

#[test]
fn maxclients_config_get_set() {
    let s = Server::start(&["--maxclients", "10"]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "maxclients"]),
        bulks(&["maxclients", "10"])
    );
    assert_eq!(r.cmd(&["CONFIG", "SET", "maxclients", "2"]), ok());
    assert!(wait_until(Duration::from_secs(5), || {
        let info = r.cmd(&["INFO", "clients"]).text();
        info_field(&info, "connected_clients").as_deref() == Some("1")
    }));
    let mut second = s.raw();
    assert_eq!(second.cmd(&["PING"]), simple("PONG"));
    let mut third = s.raw();
    assert_eq!(
        String::from_utf8_lossy(&third.expect_closed()),
        "-ERR max number of clients reached\r\n"
    );
}

#[test]
fn idle_timeout_disconnects_idle_clients_only() {
    let s = Server::start(&["--timeout", "1"]);
    let mut idle = s.raw();
    let mut active = s.raw();
    assert_eq!(idle.cmd(&["PING"]), simple("PONG"));
    assert_eq!(
        active.cmd(&["CONFIG", "GET", "timeout"]),
        bulks(&["timeout", "1"])
    );
    let start = Instant::now();
    let mut closed_at = None;
    while start.elapsed() < Duration::from_secs(6) {
        assert_eq!(active.cmd(&["PING"]), simple("PONG"));
        if closed_at.is_none() && idle.is_closed_within(Duration::from_millis(200)) {
            closed_at = Some(start.elapsed());
            break;
        }
    }
    let closed_at = closed_at.expect("idle client was not disconnected within 6 s");
    assert!(
        closed_at >= Duration::from_millis(900),
        "idle client closed too early: {closed_at:?}"
    );
    assert_eq!(active.cmd(&["PING"]), simple("PONG"));
}

fn raise_fd_limit(want: u64) {
    // SAFETY: getrlimit/setrlimit on our own process with a valid struct.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < want {
            lim.rlim_cur = want.min(lim.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

#[test]
fn thousand_concurrent_connections() {
    raise_fd_limit(8192);
    let s = Server::start(&[]);
    let n = 1000;
    let mut conns: Vec<Raw> = (0..n).map(|_| s.raw()).collect();
    for (i, c) in conns.iter_mut().enumerate() {
        c.send(&resp::encode(&[
            "SET",
            &format!("conn:{i}"),
            &format!("value {i}"),
        ]));
    }
    for c in conns.iter_mut() {
        assert_eq!(c.read_value(), ok());
    }
    for (i, c) in conns.iter_mut().enumerate() {
        c.send(&resp::encode(&["GET", &format!("conn:{i}")]));
    }
    for (i, c) in conns.iter_mut().enumerate() {
        assert_eq!(c.read_value(), bulk(&format!("value {i}")));
    }
    let info = conns[0].cmd(&["INFO", "clients"]).text();
    let connected: i64 = info_field(&info, "connected_clients")
        .unwrap()
        .parse()
        .unwrap();
    assert!(connected >= n as i64, "connected_clients {connected}");
    assert_eq!(conns[0].cmd(&["DBSIZE"]), int(n as i64));
}

/// Starts a client that pipelines `count` GETs of a large value and never reads.
fn start_non_reader(s: &Server, count: usize) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", s.port())).unwrap();
    let one = resp::encode(&["GET", "big"]);
    let mut batch = Vec::with_capacity(one.len() * count);
    for _ in 0..count {
        batch.extend_from_slice(&one);
    }
    stream.write_all(&batch).unwrap();
    stream
}

#[test]
fn a_client_that_never_reads_does_not_block_others() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let big = "b".repeat(100 * 1024);
    assert_eq!(r.cmd(&["SET", "big", &big]), ok());
    // ~100 MB of replies that nobody reads.
    let slow = start_non_reader(&s, 1000);
    let start = Instant::now();
    for i in 0..200 {
        assert_eq!(r.cmd(&["SET", &format!("k{i}"), "v"]), ok());
        assert_eq!(r.cmd(&["GET", &format!("k{i}")]), bulk("v"));
    }
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "other clients were slowed down: {:?}",
        start.elapsed()
    );
    let mut other = s.raw();
    assert_eq!(other.cmd(&["PING"]), simple("PONG"));
    drop(slow);
    assert_eq!(r.cmd(&["PING"]), simple("PONG"));
}

#[test]
fn output_buffer_limit_disconnects_a_client_that_never_reads() {
    let s = Server::start(&["--client-output-buffer-limit", "normal 1mb 1mb 0"]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "client-output-buffer-limit"]),
        bulks(&[
            "client-output-buffer-limit",
            "normal 1048576 1048576 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        ])
    );
    let big = "b".repeat(100 * 1024);
    assert_eq!(r.cmd(&["SET", "big", &big]), ok());
    let slow = start_non_reader(&s, 1000);
    // The server closes it: reading now drains what was in flight, then EOF (or reset).
    let mut slow_raw = Raw::from_stream(slow);
    let got = slow_raw.expect_closed();
    assert!(
        got.len() < 100 * 1000 * 1024,
        "all replies were delivered ({} bytes): the limit was not applied",
        got.len()
    );
    assert!(
        wait_until(Duration::from_secs(5), || s
            .log_contents()
            .to_lowercase()
            .contains("output buffer limit")),
        "no log line about the output buffer limit; log:\n{}",
        s.log_contents()
    );
    // Others are fine.
    assert_eq!(r.cmd(&["PING"]), simple("PONG"));
    assert_eq!(s.raw().cmd(&["GET", "big"]), bulk(&big));
}
