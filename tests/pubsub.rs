//! Pub/sub end to end: SUBSCRIBE/PSUBSCRIBE/SSUBSCRIBE and their UNSUBSCRIBEs, PUBLISH and
//! SPUBLISH across workers (`--threads 2`: connections alternate between workers, so
//! publishers and subscribers sit on different ones), PUBSUB introspection, the RESP2
//! subscribed-mode rules, RESP3 pushes, CLIENT REPLY OFF, and the pubsub output limit.
//!
//! Under `SKERRY_TEST_SERVER=redis` the same tests run against Redis (`--threads` dropped).

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;

fn msg(kind: &str, parts: &[&str]) -> Value {
    let mut v = vec![bulk(kind)];
    v.extend(parts.iter().map(|p| bulk(p)));
    arr(v)
}

fn note(kind: &str, name: Option<&str>, count: i64) -> Value {
    arr(vec![bulk(kind), name.map_or(Value::Null, bulk), int(count)])
}

fn push(items: Vec<Value>) -> Value {
    Value::Push(items)
}

fn sorted_bulks(v: Value) -> BTreeSet<String> {
    match v {
        Value::Array(items) | Value::Set(items) => items
            .into_iter()
            .map(|i| match i {
                Value::Bulk(b) => String::from_utf8(b).unwrap(),
                other => panic!("expected bulk, got {other:?}"),
            })
            .collect(),
        other => panic!("expected array, got {other:?}"),
    }
}

/// Subscribes `r` to `channels`, checking each notification.
fn subscribe(r: &mut Raw, channels: &[&str]) {
    let mut args = vec!["SUBSCRIBE"];
    args.extend_from_slice(channels);
    r.send(&encode(&args));
    for (i, ch) in channels.iter().enumerate() {
        assert_eq!(r.read_value(), note("subscribe", Some(ch), i as i64 + 1));
    }
}

fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

#[test]
fn publish_reaches_subscribers_on_every_worker() {
    let s = Server::start(&["--threads", "2"]);
    let mut subs: Vec<Raw> = (0..4).map(|_| s.raw()).collect();
    for r in &mut subs {
        subscribe(r, &["news", "sport"]);
    }
    let mut p = s.raw();
    assert_eq!(p.cmd(&["PUBLISH", "news", "hello"]), int(4));
    assert_eq!(p.cmd(&["PUBLISH", "sport", "goal"]), int(4));
    assert_eq!(p.cmd(&["PUBLISH", "weather", "rain"]), int(0));
    for r in &mut subs {
        assert_eq!(r.read_value(), msg("message", &["news", "hello"]));
        assert_eq!(r.read_value(), msg("message", &["sport", "goal"]));
    }
    // One publisher's messages arrive in the order they were published.
    for i in 0..200 {
        assert_eq!(p.cmd(&["PUBLISH", "news", &i.to_string()]), int(4));
    }
    for r in &mut subs {
        for i in 0..200 {
            assert_eq!(r.read_value(), msg("message", &["news", &i.to_string()]));
        }
    }
    assert_eq!(
        p.cmd(&["PUBSUB", "NUMSUB", "news", "sport", "none"]),
        arr(vec![
            bulk("news"),
            int(4),
            bulk("sport"),
            int(4),
            bulk("none"),
            int(0)
        ])
    );
    assert_eq!(
        sorted_bulks(p.cmd(&["PUBSUB", "CHANNELS"])),
        ["news", "sport"].iter().map(|s| s.to_string()).collect()
    );
    assert_eq!(
        sorted_bulks(p.cmd(&["PUBSUB", "CHANNELS", "s*"])),
        ["sport".to_string()].into_iter().collect()
    );
    let info = p.cmd_raw(&["INFO", "stats"]);
    let info = String::from_utf8_lossy(&info).to_string();
    assert_eq!(info_field(&info, "pubsub_channels").as_deref(), Some("2"));

    // Unsubscribing one channel: the count in the notification is what remains.
    subs[0].send(&encode(&["UNSUBSCRIBE", "news"]));
    assert_eq!(subs[0].read_value(), note("unsubscribe", Some("news"), 1));
    assert_eq!(p.cmd(&["PUBLISH", "news", "x"]), int(3));
    // UNSUBSCRIBE with no argument drops the rest.
    subs[0].send(&encode(&["UNSUBSCRIBE"]));
    assert_eq!(subs[0].read_value(), note("unsubscribe", Some("sport"), 0));
    assert_eq!(p.cmd(&["PUBLISH", "sport", "x"]), int(3));
    // Back in normal mode.
    assert_eq!(subs[0].cmd(&["SET", "k", "v"]), ok());
}

#[test]
fn patterns_count_once_per_match() {
    let s = Server::start(&["--threads", "2"]);
    let mut a = s.raw();
    let mut b = s.raw();
    a.send(&encode(&["SUBSCRIBE", "foo.bar"]));
    assert_eq!(a.read_value(), note("subscribe", Some("foo.bar"), 1));
    a.send(&encode(&["PSUBSCRIBE", "foo.*", "f?o.b[a]r", "foo.*"]));
    assert_eq!(a.read_value(), note("psubscribe", Some("foo.*"), 2));
    assert_eq!(a.read_value(), note("psubscribe", Some("f?o.b[a]r"), 3));
    assert_eq!(a.read_value(), note("psubscribe", Some("foo.*"), 3));
    b.send(&encode(&["PSUBSCRIBE", "foo.*", "bar*"]));
    assert_eq!(b.read_value(), note("psubscribe", Some("foo.*"), 1));
    assert_eq!(b.read_value(), note("psubscribe", Some("bar*"), 2));

    let mut p = s.raw();
    // a: the channel and both patterns; b: one pattern.
    assert_eq!(p.cmd(&["PUBLISH", "foo.bar", "m"]), int(4));
    assert_eq!(p.cmd(&["PUBSUB", "NUMPAT"]), int(3));
    let info = String::from_utf8_lossy(&p.cmd_raw(&["INFO", "stats"])).to_string();
    assert_eq!(info_field(&info, "pubsub_patterns").as_deref(), Some("3"));
    assert_eq!(info_field(&info, "pubsub_channels").as_deref(), Some("1"));
    // NUMSUB counts channel subscribers only.
    assert_eq!(
        p.cmd(&["PUBSUB", "NUMSUB", "foo.bar"]),
        arr(vec![bulk("foo.bar"), int(1)])
    );
    let mut got_a = vec![a.read_value(), a.read_value(), a.read_value()];
    got_a.sort_by_key(|v| format!("{v:?}"));
    let mut want_a = vec![
        msg("message", &["foo.bar", "m"]),
        msg("pmessage", &["foo.*", "foo.bar", "m"]),
        msg("pmessage", &["f?o.b[a]r", "foo.bar", "m"]),
    ];
    want_a.sort_by_key(|v| format!("{v:?}"));
    assert_eq!(got_a, want_a);
    assert_eq!(b.read_value(), msg("pmessage", &["foo.*", "foo.bar", "m"]));
    assert_eq!(p.cmd(&["PUBLISH", "barn", "x"]), int(1));
    assert_eq!(b.read_value(), msg("pmessage", &["bar*", "barn", "x"]));

    // PUNSUBSCRIBE without arguments drops every pattern. Redis walks the client's pattern
    // dict (hash order, seeded at random), so the patterns come in any order; the counts
    // left after each are 2 then 1 whatever the order.
    a.send(&encode(&["PUNSUBSCRIBE"]));
    let (first, second) = (a.read_value(), a.read_value());
    let pattern_of = |v: &Value, count: i64| match v {
        Value::Array(items) if items.len() == 3 => {
            assert_eq!(items[0], bulk("punsubscribe"), "{v:?}");
            assert_eq!(items[2], int(count), "{v:?}");
            items[1].text()
        }
        other => panic!("expected a punsubscribe note, got {other:?}"),
    };
    let got: BTreeSet<String> = [pattern_of(&first, 2), pattern_of(&second, 1)].into();
    assert_eq!(
        got,
        BTreeSet::from(["foo.*".to_string(), "f?o.b[a]r".to_string()])
    );
    assert_eq!(p.cmd(&["PUBSUB", "NUMPAT"]), int(2));
    assert_eq!(p.cmd(&["PUBLISH", "foo.bar", "n"]), int(2));
    // Nothing to unsubscribe from still answers.
    assert_eq!(p.cmd(&["PUNSUBSCRIBE"]), note("punsubscribe", None, 0));
    assert_eq!(p.cmd(&["UNSUBSCRIBE"]), note("unsubscribe", None, 0));
    assert_eq!(
        p.cmd(&["UNSUBSCRIBE", "never"]),
        note("unsubscribe", Some("never"), 0)
    );
}

#[test]
fn resp2_subscribed_mode_allows_only_pubsub_commands() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    subscribe(&mut r, &["c"]);
    assert_eq!(
        r.cmd(&["GET", "k"]),
        err("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "maxclients"]),
        err("ERR Can't execute 'config|get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
    );
    assert_eq!(r.cmd(&["PING"]), arr(vec![bulk("pong"), bulk("")]));
    assert_eq!(r.cmd(&["PING", "hi"]), arr(vec![bulk("pong"), bulk("hi")]));
    // RESET leaves subscribed mode silently.
    assert_eq!(r.cmd(&["RESET"]), simple("RESET"));
    assert_eq!(r.cmd(&["PING"]), simple("PONG"));
    let mut p = s.raw();
    assert_eq!(p.cmd(&["PUBLISH", "c", "x"]), int(0));
    // SUBSCRIBE is allowed inside MULTI (Redis keeps it for old clients); SSUBSCRIBE is not.
    assert_eq!(r.cmd(&["MULTI"]), ok());
    assert_eq!(r.cmd(&["SUBSCRIBE", "t"]), simple("QUEUED"));
    assert_eq!(r.cmd(&["SSUBSCRIBE", "t"]), simple("QUEUED"));
    assert_eq!(
        r.cmd(&["EXEC"]),
        arr(vec![
            note("subscribe", Some("t"), 1),
            err("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client"),
        ])
    );
    assert_eq!(p.cmd(&["PUBLISH", "t", "y"]), int(1));
    assert_eq!(r.read_value(), msg("message", &["t", "y"]));
}

#[test]
fn resp3_pushes_and_ordinary_commands_while_subscribed() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = resp3(&s);
    r.send(&encode(&["SUBSCRIBE", "c"]));
    assert_eq!(
        r.read_value(),
        push(vec![bulk("subscribe"), bulk("c"), int(1)])
    );
    // RESP3 can tell replies from pushes: every command works while subscribed.
    assert_eq!(r.cmd(&["SET", "k", "v"]), ok());
    assert_eq!(r.cmd(&["GET", "k"]), bulk("v"));
    // Publishing to itself: the message follows PUBLISH's own reply (Redis 7.2+ holds it in
    // pending_push_messages until after the command).
    r.send(&encode(&["PUBLISH", "c", "self"]));
    assert_eq!(r.read_value(), int(1));
    assert_eq!(
        r.read_value(),
        push(vec![bulk("message"), bulk("c"), bulk("self")])
    );
    // In a transaction, after the whole EXEC reply.
    assert_eq!(r.cmd(&["MULTI"]), ok());
    assert_eq!(
        r.cmd(&["PUBLISH", "c", "t1"]),
        Value::Simple("QUEUED".into())
    );
    assert_eq!(
        r.cmd(&["PUBLISH", "c", "t2"]),
        Value::Simple("QUEUED".into())
    );
    r.send(&encode(&["EXEC"]));
    assert_eq!(r.read_value(), arr(vec![int(1), int(1)]));
    for m in ["t1", "t2"] {
        assert_eq!(
            r.read_value(),
            push(vec![bulk("message"), bulk("c"), bulk(m)])
        );
    }
    // While a blocking command waits, messages from others still arrive.
    r.send(&encode(&["BLPOP", "bl", "0"]));
    let mut q = s.raw();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let info = String::from_utf8_lossy(&q.cmd_raw(&["INFO", "clients"])).to_string();
        if info_field(&info, "blocked_clients").as_deref() == Some("1") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "BLPOP never blocked");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(q.cmd(&["PUBLISH", "c", "during"]), int(1));
    assert_eq!(
        r.read_value(),
        push(vec![bulk("message"), bulk("c"), bulk("during")])
    );
    assert_eq!(q.cmd(&["RPUSH", "bl", "x"]), int(1));
    assert_eq!(r.read_value(), bulks(&["bl", "x"]));
    // From a script, after the script's reply.
    r.send(&encode(&[
        "EVAL",
        "return redis.call('PUBLISH', 'c', 'lua')",
        "0",
    ]));
    assert_eq!(r.read_value(), int(1));
    assert_eq!(
        r.read_value(),
        push(vec![bulk("message"), bulk("c"), bulk("lua")])
    );
    // Messages from another connection interleave with replies but never split one.
    let mut p = s.raw();
    for i in 0..50 {
        assert_eq!(p.cmd(&["PUBLISH", "c", &i.to_string()]), int(1));
        r.send(&encode(&["GET", "k"]));
    }
    let mut messages = Vec::new();
    let mut replies = 0;
    while replies < 50 || messages.len() < 50 {
        match r.read_value() {
            Value::Push(items) => messages.push(items),
            v => {
                assert_eq!(v, bulk("v"));
                replies += 1;
            }
        }
    }
    let want: Vec<Vec<Value>> = (0..50)
        .map(|i| vec![bulk("message"), bulk("c"), bulk(&i.to_string())])
        .collect();
    assert_eq!(messages, want);
    // PING is a plain PONG in RESP3.
    assert_eq!(r.cmd(&["PING"]), simple("PONG"));
}

#[test]
fn notifications_ignore_client_reply_off() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = resp3(&s);
    r.send(&encode(&["CLIENT", "REPLY", "OFF"]));
    r.send(&encode(&["SUBSCRIBE", "ch"]));
    assert_eq!(
        r.read_value(),
        push(vec![bulk("subscribe"), bulk("ch"), int(1)])
    );
    r.send(&encode(&["SET", "k", "v"])); // no reply
    let mut p = s.raw();
    assert_eq!(p.cmd(&["PUBLISH", "ch", "hi"]), int(1));
    assert_eq!(
        r.read_value(),
        push(vec![bulk("message"), bulk("ch"), bulk("hi")])
    );
    r.send(&encode(&["CLIENT", "REPLY", "ON"]));
    assert_eq!(r.read_value(), ok());
    assert_eq!(r.cmd(&["GET", "k"]), bulk("v"));
}

#[test]
fn closing_a_connection_drops_its_subscriptions() {
    let s = Server::start(&["--threads", "2"]);
    let mut p = s.raw();
    {
        let mut subs: Vec<Raw> = (0..3).map(|_| s.raw()).collect();
        for r in &mut subs {
            subscribe(r, &["gone"]);
            r.send(&encode(&["PSUBSCRIBE", "go*"]));
            assert_eq!(r.read_value(), note("psubscribe", Some("go*"), 2));
        }
        let list = p.cmd_raw(&["CLIENT", "LIST"]);
        let list = String::from_utf8_lossy(&list).to_string();
        assert_eq!(
            list.lines()
                .filter(|l| l.contains("sub=1 psub=1 ssub=0") && l.contains("flags=P"))
                .count(),
            3,
            "{list}"
        );
        assert_eq!(p.cmd(&["PUBLISH", "gone", "x"]), int(6));
    }
    assert!(
        wait_until(Duration::from_secs(5), || p.cmd(&["PUBLISH", "gone", "y"])
            == int(0)),
        "subscriptions outlived their connections"
    );
    assert_eq!(p.cmd(&["PUBSUB", "NUMPAT"]), int(0));
    assert_eq!(p.cmd(&["PUBSUB", "CHANNELS"]), arr(vec![]));
}

#[test]
fn sharded_channels_are_their_own_namespace() {
    let s = Server::start(&["--threads", "2"]);
    let mut a = s.raw();
    let mut b = s.raw();
    a.send(&encode(&["SSUBSCRIBE", "orders", "users"]));
    assert_eq!(a.read_value(), note("ssubscribe", Some("orders"), 1));
    assert_eq!(a.read_value(), note("ssubscribe", Some("users"), 2));
    subscribe(&mut b, &["orders"]);
    b.send(&encode(&["PSUBSCRIBE", "*"]));
    assert_eq!(b.read_value(), note("psubscribe", Some("*"), 2));

    let mut p = s.raw();
    // SPUBLISH reaches shard subscribers only; patterns never match shard channels.
    assert_eq!(p.cmd(&["SPUBLISH", "orders", "o1"]), int(1));
    assert_eq!(a.read_value(), msg("smessage", &["orders", "o1"]));
    assert_eq!(p.cmd(&["PUBLISH", "orders", "o2"]), int(2));
    let got: BTreeSet<String> = [b.read_value(), b.read_value()]
        .iter()
        .map(|v| format!("{v:?}"))
        .collect();
    let want: BTreeSet<String> = [
        msg("message", &["orders", "o2"]),
        msg("pmessage", &["*", "orders", "o2"]),
    ]
    .iter()
    .map(|v| format!("{v:?}"))
    .collect();
    assert_eq!(got, want);
    assert_eq!(
        sorted_bulks(p.cmd(&["PUBSUB", "SHARDCHANNELS"])),
        ["orders", "users"].iter().map(|s| s.to_string()).collect()
    );
    assert_eq!(
        p.cmd(&["PUBSUB", "SHARDNUMSUB", "orders", "x"]),
        arr(vec![bulk("orders"), int(1), bulk("x"), int(0)])
    );
    // The global namespace does not see shard channels.
    assert_eq!(
        p.cmd(&["PUBSUB", "NUMSUB", "users"]),
        arr(vec![bulk("users"), int(0)])
    );
    a.send(&encode(&["SUNSUBSCRIBE"]));
    let mut names = BTreeSet::new();
    let mut counts = Vec::new();
    for _ in 0..2 {
        match a.read_value() {
            Value::Array(v) => {
                assert_eq!(v[0], bulk("sunsubscribe"));
                names.insert(format!("{:?}", v[1]));
                counts.push(v[2].clone());
            }
            other => panic!("expected a notification, got {other:?}"),
        }
    }
    assert_eq!(
        names,
        [bulk("orders"), bulk("users")]
            .iter()
            .map(|v| format!("{v:?}"))
            .collect()
    );
    assert_eq!(counts, vec![int(1), int(0)]);
    assert_eq!(p.cmd(&["SPUBLISH", "orders", "o3"]), int(0));
}

#[test]
fn pubsub_help_and_errors() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    match r.cmd(&["PUBSUB", "HELP"]) {
        Value::Array(lines) => {
            assert!(lines.len() > 10);
            assert_eq!(
                lines[0],
                simple("PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
            );
        }
        other => panic!("PUBSUB HELP gave {other:?}"),
    }
    assert_eq!(
        r.cmd(&["PUBSUB", "NOPE"]),
        err("ERR unknown subcommand 'NOPE'. Try PUBSUB HELP.")
    );
    assert_eq!(
        r.cmd(&["PUBSUB", "NUMPAT", "x"]),
        err("ERR wrong number of arguments for 'pubsub|numpat' command")
    );
    assert_eq!(
        r.cmd(&["PUBLISH", "c"]),
        err("ERR wrong number of arguments for 'publish' command")
    );
    assert_eq!(
        r.cmd(&["SUBSCRIBE"]),
        err("ERR wrong number of arguments for 'subscribe' command")
    );
    // The connection is still healthy.
    assert_eq!(r.cmd(&["PING"]), simple("PONG"));
}

#[test]
fn slow_subscriber_is_closed_at_the_pubsub_output_limit() {
    let s = Server::start(&["--threads", "2"]);
    let mut admin = s.raw();
    assert_eq!(
        admin.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "pubsub 1mb 0 0"
        ]),
        ok()
    );
    let mut slow = s.raw();
    subscribe(&mut slow, &["firehose"]);
    let mut fast = s.raw();
    subscribe(&mut fast, &["other"]);
    let big = "x".repeat(64 * 1024);
    // The slow subscriber never reads: once the socket buffers are full its output grows
    // past 1 MB and it is closed; publishing goes on for everyone else.
    let mut receivers = Vec::new();
    for _ in 0..600 {
        match admin.cmd(&["PUBLISH", "firehose", &big]) {
            Value::Integer(n) => receivers.push(n),
            other => panic!("PUBLISH gave {other:?}"),
        }
        if receivers.last() == Some(&0) {
            break;
        }
    }
    assert_eq!(
        receivers.last(),
        Some(&0),
        "the slow subscriber was never closed"
    );
    if !is_redis() {
        // (Redis 7.0 has no such counter; 7.2 added it.)
        let info = admin.cmd_raw(&["INFO", "stats"]);
        let info = String::from_utf8_lossy(&info).to_string();
        let kills: u64 = info_field(&info, "client_output_buffer_limit_disconnections")
            .unwrap()
            .parse()
            .unwrap();
        assert!(kills >= 1, "{info}");
    }
    slow.expect_closed();
    // Others are untouched.
    assert_eq!(admin.cmd(&["PUBLISH", "other", "still here"]), int(1));
    assert_eq!(fast.read_value(), msg("message", &["other", "still here"]));
}

#[test]
fn redis_crate_pubsub_client() {
    let s = Server::start(&["--threads", "2"]);
    let mut con = s.client();
    let mut publisher = s.client();
    let mut ps = con.as_pubsub();
    ps.subscribe("alerts").unwrap();
    ps.psubscribe("metrics.*").unwrap();
    ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let n: i64 = redis::cmd("PUBLISH")
        .arg("alerts")
        .arg("disk full")
        .query(&mut publisher)
        .unwrap();
    assert_eq!(n, 1);
    let m = ps.get_message().unwrap();
    assert_eq!(m.get_channel_name(), "alerts");
    assert_eq!(m.get_payload::<String>().unwrap(), "disk full");
    let n: i64 = redis::cmd("PUBLISH")
        .arg("metrics.cpu")
        .arg("93")
        .query(&mut publisher)
        .unwrap();
    assert_eq!(n, 1);
    let m = ps.get_message().unwrap();
    assert_eq!(m.get_channel_name(), "metrics.cpu");
    assert_eq!(m.get_pattern::<String>().unwrap(), "metrics.*");
    assert_eq!(m.get_payload::<i64>().unwrap(), 93);
}

#[test]
fn keyspace_notifications_are_refused_not_silently_accepted() {
    if is_redis() {
        return; // Redis implements them.
    }
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]),
        err("ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - keyspace notifications are not supported by Skerry yet")
    );
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "notify-keyspace-events", ""]),
        ok()
    );
}
