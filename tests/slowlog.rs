//! SLOWLOG and its configuration (`slowlog-log-slower-than`, `slowlog-max-len`), with
//! commands run on every worker (the log is merged from the workers' logs), and MODULE,
//! which loads nothing.

mod common;

use common::*;

fn entries(r: &mut Raw, count: &str) -> Vec<Vec<Value>> {
    match r.cmd(&["SLOWLOG", "GET", count]) {
        Value::Array(v) => v
            .into_iter()
            .map(|e| match e {
                Value::Array(f) => f,
                other => panic!("an entry is an array: {other:?}"),
            })
            .collect(),
        other => panic!("SLOWLOG GET replies with an array: {other:?}"),
    }
}

fn args_of(e: &[Value]) -> Vec<String> {
    match &e[3] {
        Value::Array(a) => a.iter().map(|v| v.text()).collect(),
        other => panic!("arguments are an array: {other:?}"),
    }
}

fn int_of(v: &Value) -> i64 {
    match v {
        Value::Integer(i) => *i,
        other => panic!("expected an integer, got {other:?}"),
    }
}

fn start() -> (Server, Raw) {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["SLOWLOG", "RESET"]), ok());
    (s, r)
}

#[test]
fn logs_every_workers_commands_newest_first_up_to_max_len() {
    let (s, mut r) = start();
    assert_eq!(r.cmd(&["CONFIG", "SET", "slowlog-max-len", "0"]), ok());
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
        ok()
    );
    for _ in 0..20 {
        r.cmd(&["PING"]);
    }
    assert_eq!(r.cmd(&["SLOWLOG", "LEN"]), int(0), "max-len 0 logs nothing");
    assert_eq!(r.cmd(&["CONFIG", "SET", "slowlog-max-len", "10"]), ok());
    // Keys owned by both workers: each worker logs what it runs.
    for i in 0..50 {
        let k = key_on("slow", i % 2);
        r.cmd(&["SET", &k, "v"]);
    }
    assert_eq!(r.cmd(&["SLOWLOG", "LEN"]), int(10));
    assert_eq!(entries(&mut r, "5").len(), 5);
    assert_eq!(entries(&mut r, "-1").len(), 10);
    let all = entries(&mut r, "20");
    assert_eq!(all.len(), 10);
    // Newest first, ids strictly decreasing; the newest are the last SETs (and the
    // SLOWLOG calls made since).
    let ids: Vec<i64> = all.iter().map(|e| int_of(&e[0])).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
    let sets = all.iter().filter(|e| args_of(e)[0] == "SET").count();
    assert!(sets >= 6, "the last SETs are kept: {all:?}");
    let last_set = all.iter().find(|e| args_of(e)[0] == "SET").unwrap();
    assert_eq!(args_of(last_set), ["SET", &key_on("slow", 49 % 2), "v"]);
    assert_eq!(entries(&mut r, "0").len(), 0);
    assert_eq!(
        r.cmd(&["SLOWLOG", "GET", "-2"]),
        err("ERR count should be greater than or equal to -1")
    );
    drop(s);
}

#[test]
fn entries_carry_duration_client_address_and_name() {
    let (s, mut r) = start();
    let local = r.stream.local_addr().unwrap().to_string();
    assert_eq!(r.cmd(&["CLIENT", "SETNAME", "slowpoke"]), ok());
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
        ok()
    );
    // On the other worker than most connections' own: a forwarded command is logged with
    // its client too.
    for w in 0..2 {
        let k = key_on("who", w);
        assert_eq!(r.cmd(&["SET", &k, "1"]), ok());
        let e = entries(&mut r, "2")
            .into_iter()
            .find(|e| args_of(e)[0] == "SET")
            .expect("the SET is logged");
        assert_eq!(e.len(), 6);
        assert_eq!(args_of(&e), ["SET", &k, "1"]);
        let now_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        assert!((int_of(&e[1]) - now_s).abs() <= 5, "timestamp {:?}", e[1]);
        assert!(int_of(&e[2]) >= 0);
        assert_eq!(e[4].text(), local, "client address");
        assert_eq!(e[5].text(), "slowpoke", "client name");
    }
    drop(s);
}

#[test]
fn long_commands_are_trimmed_and_passwords_redacted() {
    let (s, mut r) = start();
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
        ok()
    );
    let mut sadd: Vec<String> = vec!["SADD".into(), "set".into()];
    sadd.extend((3..=33).map(|i| i.to_string()));
    let a: Vec<&str> = sadd.iter().map(|s| s.as_str()).collect();
    r.cmd(&a);
    let e = &entries(&mut r, "1")[0];
    let mut want: Vec<String> = sadd[..31].to_vec();
    want.push("... (2 more arguments)".into());
    assert_eq!(args_of(e), want);
    let long = "A".repeat(129);
    r.cmd(&["SADD", "set", "foo", &long]);
    let e = &entries(&mut r, "1")[0];
    assert_eq!(
        args_of(e),
        [
            "SADD",
            "set",
            "foo",
            &format!("{}... (1 more bytes)", "A".repeat(128))
        ]
    );
    // AUTH fails here (no password), and is logged without its arguments.
    let _ = r.cmd(&["AUTH", "someone", "secret"]);
    let e = &entries(&mut r, "1")[0];
    assert_eq!(args_of(e), ["AUTH", "(redacted)", "(redacted)"]);
    drop(s);
}

#[test]
fn exec_is_not_logged_but_its_commands_are_and_reset_is() {
    let (s, mut r) = start();
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
        ok()
    );
    assert_eq!(r.cmd(&["SLOWLOG", "RESET"]), ok());
    // RESET empties the log, then is logged itself.
    let e = entries(&mut r, "-1");
    assert_eq!(e.len(), 1);
    assert_eq!(args_of(&e[0]), ["SLOWLOG", "RESET"]);
    r.cmd(&["SLOWLOG", "RESET"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["SET", "a{t}", "1"]);
    r.cmd(&["INCR", "n{t}"]);
    r.cmd(&["EXEC"]);
    let names: Vec<String> = entries(&mut r, "-1")
        .iter()
        .map(|e| args_of(e)[0].to_ascii_uppercase())
        .collect();
    assert!(!names.contains(&"EXEC".to_string()), "{names:?}");
    assert!(names.contains(&"SET".to_string()), "{names:?}");
    assert!(names.contains(&"INCR".to_string()), "{names:?}");
    // Off.
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]),
        ok()
    );
    r.cmd(&["SLOWLOG", "RESET"]);
    r.cmd(&["SET", "x", "1"]);
    assert_eq!(r.cmd(&["SLOWLOG", "LEN"]), int(0));
    // A threshold of a second logs nothing here.
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "1000000"]),
        ok()
    );
    r.cmd(&["SET", "x", "1"]);
    assert_eq!(r.cmd(&["SLOWLOG", "LEN"]), int(0));
    drop(s);
}

#[test]
fn a_blocked_command_is_logged_once_served() {
    let (s, mut r) = start();
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
        ok()
    );
    assert_eq!(r.cmd(&["CONFIG", "SET", "slowlog-max-len", "100"]), ok());
    r.cmd(&["SLOWLOG", "RESET"]);
    let mut waiter = s.raw();
    waiter.send(&resp::encode(&["BLPOP", "mylist", "0"]));
    wait_blocked(&mut r, 1);
    let blpops = |r: &mut Raw| {
        entries(r, "-1")
            .iter()
            .filter(|e| args_of(e)[0] == "BLPOP")
            .count()
    };
    assert_eq!(blpops(&mut r), 0, "not logged while it waits");
    assert_eq!(r.cmd(&["LPUSH", "mylist", "1"]), int(1));
    assert_eq!(waiter.read_value(), bulks(&["mylist", "1"]));
    assert!(wait_until(std::time::Duration::from_secs(5), || blpops(
        &mut r
    ) == 1));
    drop(s);
}

#[test]
fn help_replies_as_redis() {
    let (s, mut r) = start();
    let Value::Array(lines) = r.cmd(&["SLOWLOG", "HELP"]) else {
        panic!("HELP is an array")
    };
    assert!(lines[0].text().starts_with("SLOWLOG <subcommand>"));
    assert_eq!(lines.last().unwrap().text(), "    Print this help.");
    assert_eq!(
        r.cmd(&["SLOWLOG", "NOPE"]),
        err("ERR unknown subcommand 'NOPE'. Try SLOWLOG HELP.")
    );
    let Value::Array(lines) = r.cmd(&["MODULE", "HELP"]) else {
        panic!("HELP is an array")
    };
    assert!(lines[0].text().starts_with("MODULE <subcommand>"));
    drop(s);
}

/// Skerry loads no modules: MODULE LIST is empty and LOAD fails with Redis's error.
#[test]
fn module_loads_nothing() {
    skip_if_redis!();
    let (s, mut r) = start();
    assert_eq!(r.cmd(&["MODULE", "LIST"]), Value::Array(vec![]));
    assert_eq!(
        r.cmd(&["MODULE", "LOAD", "/tmp/nothing.so"]),
        err("ERR Error loading the extension. Please check the server logs.")
    );
    assert_eq!(
        r.cmd(&["MODULE", "UNLOAD", "vectorset"]),
        err("ERR Error unloading module: no such module with that name")
    );
    assert_eq!(r.cmd(&["PING"]), simple("PONG"));
    drop(s);
}
