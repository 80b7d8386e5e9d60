//! The wire protocol: RESP parsing errors (byte-exact), inline commands, pipelining, partial
//! writes, unknown commands and arity errors, RESP3 encodings.

mod common;

use std::io::Write;
use std::thread::sleep;
use std::time::Duration;

use common::*;

/// Sends `bytes`, expects exactly `reply` and then the server closing the connection; then
/// checks that the server still serves a new connection.
fn expect_protocol_error(s: &Server, bytes: &[u8], reply: &str) {
    let mut r = s.raw();
    // The server may close while we are still writing: ignore write errors.
    let _ = r.try_send(bytes);
    let got = r.expect_closed();
    assert_eq!(
        String::from_utf8_lossy(&got),
        reply,
        "reply to {:?}",
        String::from_utf8_lossy(&bytes[..bytes.len().min(60)])
    );
    let mut r2 = s.raw();
    let v = r2.cmd(&["PING"]);
    assert!(
        v == simple("PONG") || v == err("NOAUTH Authentication required."),
        "{v:?}"
    );
}

#[test]
fn protocol_errors_are_exact_and_close_the_connection() {
    let s = Server::start(&[]);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            b"*3000000000\r\n".to_vec(),
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*abc\r\n".to_vec(),
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*1\r\n$-5\r\n".to_vec(),
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1\r\n$abc\r\n".to_vec(),
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            // One byte over the default proto-max-bulk-len (512 MiB).
            b"*2\r\n$3\r\nGET\r\n$536870913\r\n".to_vec(),
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1\r\nfoo\r\n".to_vec(),
            "-ERR Protocol error: expected '$', got 'f'\r\n",
        ),
        (
            b"*2\r\n$4\r\nECHO\r\n:12\r\n".to_vec(),
            "-ERR Protocol error: expected '$', got ':'\r\n",
        ),
        (
            b"set \"foo bar\r\n".to_vec(),
            "-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (
            b"ECHO 'it''s'\r\n".to_vec(),
            "-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (
            b"ECHO \"a\"b\r\n".to_vec(),
            "-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (
            vec![b'a'; 70 * 1024],
            "-ERR Protocol error: too big inline request\r\n",
        ),
        (
            [b"*".to_vec(), vec![b'1'; 70 * 1024]].concat(),
            "-ERR Protocol error: too big mbulk count string\r\n",
        ),
        (
            [b"*1\r\n$".to_vec(), vec![b'1'; 70 * 1024]].concat(),
            "-ERR Protocol error: too big bulk count string\r\n",
        ),
    ];
    for (bytes, reply) in cases {
        expect_protocol_error(&s, &bytes, reply);
    }
}

#[test]
fn replies_before_a_protocol_error_are_delivered() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.send(b"*1\r\n$4\r\nPING\r\nPING\r\n*1\r\n$-3\r\n");
    let got = r.expect_closed();
    assert_eq!(
        String::from_utf8_lossy(&got),
        "+PONG\r\n+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"
    );
}

#[test]
fn proto_max_bulk_len() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    // Redis' minimum for this setting is 1mb.
    let e = r.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "1000"]);
    assert!(
        e.err_text().starts_with(
            "ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len')"
        ),
        "{e:?}"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "1048576"]),
        ok()
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "proto-max-bulk-len"]),
        bulks(&["proto-max-bulk-len", "1048576"])
    );
    // Exactly the limit is fine.
    let value = "v".repeat(1048576);
    assert_eq!(r.cmd(&["SET", "k", &value]), ok());
    assert_eq!(r.cmd(&["STRLEN", "k"]), int(1048576));
    // One more byte is a protocol error.
    expect_protocol_error(
        &s,
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n",
        "-ERR Protocol error: invalid bulk length\r\n",
    );
}

#[test]
fn proto_max_bulk_len_from_command_line() {
    let s = Server::start(&["--proto-max-bulk-len", "2mb"]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "proto-max-bulk-len"]),
        bulks(&["proto-max-bulk-len", "2097152"])
    );
    expect_protocol_error(
        &s,
        b"*2\r\n$4\r\nECHO\r\n$2097153\r\n",
        "-ERR Protocol error: invalid bulk length\r\n",
    );
}

#[test]
fn unauthenticated_clients_have_small_limits() {
    let s = Server::start(&["--requirepass", "secret"]);
    expect_protocol_error(
        &s,
        b"*11\r\n",
        "-ERR Protocol error: unauthenticated multibulk length\r\n",
    );
    expect_protocol_error(
        &s,
        b"*2\r\n$4\r\nECHO\r\n$16385\r\n",
        "-ERR Protocol error: unauthenticated bulk length\r\n",
    );
    // At the limits the command is parsed and refused normally.
    let mut r = s.raw();
    let mut big = b"*2\r\n$4\r\nECHO\r\n$16384\r\n".to_vec();
    big.extend(vec![b'a'; 16384]);
    big.extend(b"\r\n");
    r.send(&big);
    assert_eq!(r.read_value(), err("NOAUTH Authentication required."));
    // After AUTH the limits are gone.
    assert_eq!(r.cmd(&["AUTH", "secret"]), ok());
    let mut args = vec!["MSET"];
    args.extend(["k"; 20]);
    assert_eq!(r.cmd(&args), ok());
    let v = "x".repeat(100_000);
    assert_eq!(r.cmd(&["ECHO", &v]), bulk(&v));
}

/// The limits change inside one pipeline: commands after an AUTH are parsed without the
/// unauthenticated limits, and after a CONFIG SET proto-max-bulk-len with the new one,
/// although the server parsed the pipeline's commands ahead (to prefetch their keys) under
/// the limits of the moment. Mixed-case names and a blocking command that has its data go
/// through the same look-ahead.
#[test]
fn limits_that_change_inside_a_pipeline_apply_to_the_commands_after() {
    let s = Server::start(&["--requirepass", "secret"]);
    let mut r = s.raw();
    let mut batch = Vec::new();
    batch.extend(resp::encode(&["GET", "k"]));
    batch.extend(resp::encode(&["AUTH", "secret"]));
    let mut mset = vec!["MSET"];
    for _ in 0..10 {
        mset.extend(["k", "v"]);
    }
    batch.extend(resp::encode(&mset));
    batch.extend(resp::encode(&["rPuSh", "l", "a", "b"]));
    batch.extend(resp::encode(&["BLPOP", "l", "0"]));
    batch.extend(resp::encode(&["get", "k"]));
    batch.extend(resp::encode(&[
        "CONFIG",
        "SET",
        "proto-max-bulk-len",
        "1mb",
    ]));
    batch.extend(resp::encode(&["Echo", "fits"]));
    r.send(&batch);
    assert_eq!(r.read_value(), err("NOAUTH Authentication required."));
    assert_eq!(r.read_value(), ok());
    assert_eq!(r.read_value(), ok(), "an MSET of 21 arguments after AUTH");
    assert_eq!(r.read_value(), int(2));
    assert_eq!(r.read_value(), bulks(&["l", "a"]));
    assert_eq!(r.read_value(), bulk("v"));
    assert_eq!(r.read_value(), ok());
    assert_eq!(r.read_value(), bulk("fits"));
    // The new limit holds for the next command of a pipeline that was read in one piece.
    let mut batch = resp::encode(&["PING"]);
    batch.extend(b"*2\r\n$4\r\nECHO\r\n$1048577\r\n");
    let _ = r.try_send(&batch);
    let got = r.expect_closed();
    assert_eq!(
        String::from_utf8_lossy(&got),
        "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"
    );
    // RESET signs the client out: the command after it in the same read has the
    // unauthenticated limits again.
    let mut r = s.raw();
    let mut batch = resp::encode(&["AUTH", "secret"]);
    batch.extend(resp::encode(&["RESET"]));
    let mut eleven = vec!["DEL"];
    eleven.extend(["k"; 10]);
    batch.extend(resp::encode(&eleven));
    let _ = r.try_send(&batch);
    let got = r.expect_closed();
    assert_eq!(
        String::from_utf8_lossy(&got),
        "+OK\r\n+RESET\r\n-ERR Protocol error: unauthenticated multibulk length\r\n"
    );
}

#[test]
fn empty_and_negative_multibulk_are_ignored() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.send(b"*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n\r\n\r\n*0\r\nPING\r\n");
    assert_eq!(r.read_raw(), b"+PONG\r\n");
    assert_eq!(r.read_raw(), b"+PONG\r\n");
    assert_eq!(r.cmd(&["ECHO", "x"]), bulk("x"));
}

#[test]
fn inline_commands() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.send(b"PING\r\n");
    assert_eq!(r.read_raw(), b"+PONG\r\n");
    r.send(b"ping hello\r\n");
    assert_eq!(r.read_raw(), b"$5\r\nhello\r\n");
    r.send(b"SET a b\r\n");
    assert_eq!(r.read_raw(), b"+OK\r\n");
    r.send(b"GET a\r\n");
    assert_eq!(r.read_raw(), b"$1\r\nb\r\n");
    // Extra spaces, quoted arguments and escapes.
    r.send(b"   SET   x    y   \r\n");
    assert_eq!(r.read_raw(), b"+OK\r\n");
    assert_eq!(r.cmd(&["GET", "x"]), bulk("y"));
    r.send(b"SET \"key with space\" \"va\\x41l\\n\\tue\"\r\n");
    assert_eq!(r.read_raw(), b"+OK\r\n");
    assert_eq!(r.cmd(&["GET", "key with space"]), bulk("vaAl\n\tue"));
    r.send(b"ECHO 'single \"quoted\"'\r\n");
    assert_eq!(r.read_value(), bulk("single \"quoted\""));
    r.send(b"ECHO \"\"\r\n");
    assert_eq!(r.read_raw(), b"$0\r\n\r\n");
    // LF-only line endings.
    r.send(b"PING\nECHO hi\n");
    assert_eq!(r.read_raw(), b"+PONG\r\n");
    assert_eq!(r.read_raw(), b"$2\r\nhi\r\n");
    // Empty lines are skipped.
    r.send(b"\r\n\r\n\nPING\r\n");
    assert_eq!(r.read_raw(), b"+PONG\r\n");
    // Inline and multibulk mixed in one write.
    r.send(b"SET m 1\r\n*2\r\n$4\r\nINCR\r\n$1\r\nm\r\nINCR m\r\n");
    assert_eq!(r.read_value(), ok());
    assert_eq!(r.read_value(), int(2));
    assert_eq!(r.read_value(), int(3));
    // Errors on inline commands use the same text.
    r.send(b"foo a b\r\n");
    assert_eq!(
        r.read_value(),
        err("ERR unknown command 'foo', with args beginning with: 'a' 'b' ")
    );
    r.send(b"GET\r\n");
    assert_eq!(
        r.read_value(),
        err("ERR wrong number of arguments for 'get' command")
    );
}

#[test]
fn unknown_command_and_arity_errors() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd_raw(&["foo", "a", "b"]),
        b"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n"
    );
    assert_eq!(
        r.cmd_raw(&["foo"]),
        b"-ERR unknown command 'foo', with args beginning with: \r\n"
    );
    assert_eq!(
        r.cmd(&["NoSuchCmd", "x"]),
        err("ERR unknown command 'NoSuchCmd', with args beginning with: 'x' ")
    );
    // Arguments are cut after 128 characters in total.
    let long = "x".repeat(200);
    assert_eq!(
        r.cmd(&["foo", &long, "more"]),
        err(&format!(
            "ERR unknown command 'foo', with args beginning with: '{}' ",
            "x".repeat(128)
        ))
    );
    assert_eq!(
        r.cmd_raw(&["GET"]),
        b"-ERR wrong number of arguments for 'get' command\r\n"
    );
    assert_eq!(
        r.cmd(&["set", "a"]),
        err("ERR wrong number of arguments for 'set' command")
    );
    assert_eq!(
        r.cmd(&["StrLen"]),
        err("ERR wrong number of arguments for 'strlen' command")
    );
    // Unknown subcommands of container commands.
    assert_eq!(
        r.cmd(&["CONFIG", "foo"]),
        err("ERR unknown subcommand 'foo'. Try CONFIG HELP.")
    );
    assert_eq!(
        r.cmd(&["CLIENT", "foo", "bar"]),
        err("ERR unknown subcommand 'foo'. Try CLIENT HELP.")
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET"]),
        err("ERR wrong number of arguments for 'config|get' command")
    );
    // The connection is still usable.
    assert_eq!(r.cmd(&["PING"]), simple("PONG"));
}

/// A handler's own "unknown subcommand or wrong number of arguments" error quotes the
/// argument as the client sent it (its bytes, not a UTF-8 rendering; its case; at most 128
/// bytes), as Redis's addReplySubcommandSyntaxError does, whichever command gives it.
#[test]
fn subcommand_syntax_errors_quote_the_argument_as_sent() {
    skip_if_redis!();
    use std::io::{Read, Write};
    let s = Server::start(&[]);
    s.raw().cmd(&["XADD", "k", "*", "f", "v"]);
    let mut c = std::net::TcpStream::connect(("127.0.0.1", s.port())).expect("connect");
    c.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    // One reply line, bytes as they come (the test decoder wants UTF-8).
    let mut line = |args: &[&[u8]]| {
        c.write_all(&resp::encode(args)).expect("send");
        let mut got = Vec::new();
        while !got.ends_with(b"\r\n") {
            let mut b = [0u8; 1];
            c.read_exact(&mut b).expect("reply");
            got.push(b[0]);
        }
        got
    };
    let mut odd = b"\xff\xfeBad".to_vec();
    odd.extend(std::iter::repeat_n(b'y', 200));
    let want = |quoted: &[u8], container: &str| {
        let mut w = b"-ERR unknown subcommand or wrong number of arguments for '".to_vec();
        w.extend_from_slice(quoted);
        w.extend_from_slice(format!("'. Try {container} HELP.\r\n").as_bytes());
        w
    };
    assert_eq!(line(&[b"DEBUG", &odd]), want(&odd[..128], "DEBUG"));
    assert_eq!(
        line(&[b"FUNCTION", b"FlUsH", b"ASYNC", b"extra"]),
        want(b"FlUsH", "FUNCTION")
    );
    assert_eq!(
        line(&[b"FUNCTION", b"Restore", b"x", b"REPLACE", b"extra"]),
        want(b"Restore", "FUNCTION")
    );
    // An option XINFO STREAM does not know: Redis quotes the subcommand, as sent.
    assert_eq!(
        line(&[b"XINFO", b"stReam", b"k", &odd]),
        want(b"stReam", "XINFO")
    );
    assert_eq!(line(&[b"PING"]), b"+PONG\r\n");
}

#[test]
fn binary_safe_arguments() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let key = b"k\r\n\0\xff";
    let val = b"\r\n$3\r\n*1\r\n\0";
    assert_eq!(r.cmd_bytes(&[b"SET", key, val]), ok());
    assert_eq!(r.cmd_bytes(&[b"GET", key]), Value::Bulk(val.to_vec()));
    assert_eq!(r.cmd_bytes(&[b"STRLEN", key]), int(val.len() as i64));
}

#[test]
fn pipelining_ten_thousand_commands_in_one_write() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let n = 10_000;
    let mut sets = Vec::new();
    let mut gets = Vec::new();
    for i in 0..n {
        sets.extend(resp::encode(&[
            "SET".to_string(),
            format!("key:{i}"),
            format!("value:{i}"),
        ]));
        gets.extend(resp::encode(&["GET".to_string(), format!("key:{i}")]));
    }
    // Write from another thread (one write_all each) while this one reads, as a client would.
    let mut w = r.stream.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        w.write_all(&sets).unwrap();
        w.write_all(&gets).unwrap();
    });
    for i in 0..n {
        assert_eq!(r.read_raw(), b"+OK\r\n", "reply {i}");
    }
    for i in 0..n {
        assert_eq!(r.read_value(), bulk(&format!("value:{i}")), "reply {i}");
    }
    writer.join().unwrap();
    assert_eq!(r.cmd(&["DBSIZE"]), int(n as i64));
}

#[test]
fn pipelined_mixed_replies_keep_order() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let mut batch = Vec::new();
    for i in 0..500 {
        batch.extend(resp::encode(&["INCR", "counter"]));
        batch.extend(resp::encode(&["GET", &format!("missing{i}")]));
        batch.extend(resp::encode(&["NOSUCH"]));
        batch.extend(resp::encode(&["ECHO", &i.to_string()]));
    }
    r.send(&batch);
    for i in 0..500 {
        assert_eq!(r.read_value(), int(i + 1));
        assert_eq!(r.read_value(), Value::Null);
        assert!(r.read_value().is_error());
        assert_eq!(r.read_value(), bulk(&i.to_string()));
    }
}

/// A pipeline whose commands read what the ones just before wrote, switch databases and mix
/// inline commands in: every reply is the one a command-at-a-time client would get (the
/// server looks ahead at a pipeline's keys to prefetch them; it must never serve what it saw
/// ahead of a write).
#[test]
fn pipelined_reads_see_the_writes_just_before_them() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let mut batch = Vec::new();
    let mut want = Vec::new();
    let mut model: std::collections::HashMap<(u8, String), String> = Default::default();
    let mut db = 0u8;
    for i in 0..2000 {
        let key = format!("k{}", i % 13);
        match i % 9 {
            0 | 3 | 6 => {
                let v = format!("v{i}");
                batch.extend(resp::encode(&["SET", &key, &v]));
                model.insert((db, key), v);
                want.push(ok());
            }
            1 | 4 | 7 => {
                batch.extend(resp::encode(&["GET", &key]));
                want.push(model.get(&(db, key)).map_or(Value::Null, |v| bulk(v)));
            }
            2 => {
                batch.extend(resp::encode(&["DEL", &key]));
                want.push(int(i64::from(model.remove(&(db, key)).is_some())));
            }
            5 => {
                // Inline, as a telnet user would type it.
                batch.extend(format!("GET {key}\r\n").into_bytes());
                want.push(model.get(&(db, key)).map_or(Value::Null, |v| bulk(v)));
            }
            _ => {
                db = 1 - db;
                batch.extend(resp::encode(&["SELECT", &db.to_string()]));
                want.push(ok());
            }
        }
    }
    r.send(&batch);
    for (i, w) in want.iter().enumerate() {
        assert_eq!(&r.read_value(), w, "reply {i}");
    }
}

#[test]
fn partial_writes_byte_by_byte() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let cmd = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n*2\r\n$3\r\nGET\r\n$3\r\nkey\r\nECHO inline\r\n";
    for b in cmd.iter() {
        r.send(&[*b]);
        sleep(Duration::from_millis(1));
    }
    assert_eq!(r.read_raw(), b"+OK\r\n");
    assert_eq!(r.read_raw(), b"$5\r\nvalue\r\n");
    assert_eq!(r.read_raw(), b"$6\r\ninline\r\n");
    // A large bulk split at awkward places, including inside the CRLFs.
    let value = "0123456789".repeat(30_000);
    let full = resp::encode(&["SET", "big", &value]);
    let cuts = [
        1,
        3,
        9,
        10,
        11,
        16,
        5000,
        100_000,
        full.len() - 2,
        full.len() - 1,
    ];
    let mut prev = 0;
    for &c in &cuts {
        r.send(&full[prev..c]);
        sleep(Duration::from_millis(5));
        prev = c;
    }
    r.send(&full[prev..]);
    assert_eq!(r.read_raw(), b"+OK\r\n");
    assert_eq!(r.cmd(&["GET", "big"]), bulk(&value));
}

#[test]
fn large_replies_are_delivered_whole() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    // 7 MiB: a big string (chunks of 1 MiB), replied three times in one pipeline.
    let value: String = (0..(7 << 20))
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    assert_eq!(r.cmd(&["SET", "big", &value]), ok());
    for _ in 0..3 {
        r.send(&resp::encode(&["GET", "big"]));
    }
    for _ in 0..3 {
        assert_eq!(r.read_value(), bulk(&value));
    }
}

#[test]
fn quit_after_pipelined_commands() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.send(b"SET a 1\r\nINCR a\r\nQUIT\r\nINCR a\r\n");
    let got = r.expect_closed();
    assert_eq!(String::from_utf8_lossy(&got), "+OK\r\n:2\r\n+OK\r\n");
    let mut r = s.raw();
    assert_eq!(r.cmd(&["GET", "a"]), bulk("2"));
}

#[test]
fn hello3_reply_map() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let v = r.cmd(&["HELLO", "3"]);
    let Value::Map(pairs) = &v else {
        panic!("HELLO 3 must reply with a RESP3 map, got {v:?}")
    };
    let keys: Vec<String> = pairs.iter().map(|(k, _)| k.text()).collect();
    assert_eq!(
        keys,
        ["server", "version", "proto", "id", "mode", "role", "modules"]
    );
    assert!(matches!(v.get("server"), Some(Value::Bulk(_))));
    assert!(matches!(v.get("version"), Some(Value::Bulk(_))));
    assert_eq!(v.get("proto"), Some(int(3)));
    assert!(v.get("id").unwrap().int() > 0);
    assert_eq!(v.get("mode"), Some(bulk("standalone")));
    assert_eq!(v.get("role"), Some(bulk("master")));
    assert_eq!(v.get("modules"), Some(arr(vec![])));
    // The id is the CLIENT ID of the connection.
    assert_eq!(r.cmd(&["CLIENT", "ID"]), v.get("id").unwrap());
    // HELLO 2 returns the same fields as a flat array.
    let v2 = r.cmd(&["HELLO", "2"]);
    let Value::Array(items) = &v2 else {
        panic!("HELLO 2 must reply with an array, got {v2:?}")
    };
    assert_eq!(items.len(), 14);
    assert_eq!(v2.get("proto"), Some(int(2)));
}

#[test]
fn resp3_encodings() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["HELLO", "3"]);
    // Null.
    assert_eq!(r.cmd_raw(&["GET", "nokey"]), b"_\r\n");
    assert_eq!(r.cmd_raw(&["SET", "k", "v", "XX"]), b"_\r\n");
    assert_eq!(r.cmd_raw(&["MGET", "k", "nokey"]), b"*2\r\n_\r\n_\r\n");
    assert_eq!(r.cmd_raw(&["SET", "k", "v"]), b"+OK\r\n");
    assert_eq!(
        r.cmd_raw(&["MGET", "k", "nokey"]),
        b"*2\r\n$1\r\nv\r\n_\r\n"
    );
    assert_eq!(r.cmd_raw(&["GETDEL", "nokey"]), b"_\r\n");
    assert_eq!(r.cmd_raw(&["CLIENT", "GETNAME"]), b"_\r\n");
    // INCRBYFLOAT stays a bulk string in RESP3.
    assert_eq!(r.cmd_raw(&["INCRBYFLOAT", "f", "1.5"]), b"$3\r\n1.5\r\n");
    assert_eq!(r.cmd_raw(&["INCR", "n"]), b":1\r\n");
    // Maps.
    assert_eq!(
        r.cmd_raw(&["CONFIG", "GET", "maxclients"]),
        b"%1\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n"
    );
    let v = r.cmd(&["CONFIG", "GET", "maxclients", "timeout"]);
    assert!(matches!(v, Value::Map(_)), "{v:?}");
    assert_eq!(v.get("timeout"), Some(bulk("0")));
    assert_eq!(v.get("maxclients"), Some(bulk("10000")));
    assert_eq!(r.cmd_raw(&["CONFIG", "GET", "nosuch"]), b"%0\r\n");
    // Verbatim strings.
    let info = r.cmd(&["INFO", "server"]);
    match &info {
        Value::Verbatim(f, text) => {
            assert_eq!(f, "txt");
            assert!(String::from_utf8_lossy(text).starts_with("# Server\r\n"));
        }
        other => panic!("INFO in RESP3 is a verbatim string, got {other:?}"),
    }
    assert!(matches!(r.cmd(&["CLIENT", "INFO"]), Value::Verbatim(..)));
    assert!(matches!(r.cmd(&["CLIENT", "LIST"]), Value::Verbatim(..)));
    // Errors and plain types are unchanged.
    assert_eq!(r.cmd_raw(&["EXISTS", "k"]), b":1\r\n");
    assert_eq!(
        r.cmd_raw(&["GET"]),
        b"-ERR wrong number of arguments for 'get' command\r\n"
    );
    assert_eq!(r.cmd_raw(&["KEYS", "nomatch"]), b"*0\r\n");
    // Back to RESP2.
    r.cmd(&["HELLO", "2"]);
    assert_eq!(r.cmd_raw(&["GET", "nokey"]), b"$-1\r\n");
    assert!(matches!(
        r.cmd(&["CONFIG", "GET", "maxclients", "timeout"]),
        Value::Array(_)
    ));
    assert!(matches!(r.cmd(&["INFO", "server"]), Value::Bulk(_)));
}

#[test]
fn resp3_collection_encodings() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["HELLO", "3"]);
    assert_eq!(r.cmd_raw(&["LPOP", "nolist"]), b"_\r\n");
    // Doubles.
    assert_eq!(r.cmd(&["ZADD", "z", "1.5", "m"]), int(1));
    assert_eq!(r.cmd_raw(&["ZSCORE", "z", "m"]), b",1.5\r\n");
    assert_eq!(r.cmd_raw(&["ZSCORE", "z", "nope"]), b"_\r\n");
    assert_eq!(r.cmd_raw(&["ZINCRBY", "z", "1", "m"]), b",2.5\r\n");
    assert_eq!(
        r.cmd(&["ZADD", "z", "3", "t", "0.1", "p", "inf", "i", "-inf", "ni"]),
        int(4)
    );
    assert_eq!(r.cmd_raw(&["ZSCORE", "z", "t"]), b",3\r\n");
    assert_eq!(r.cmd_raw(&["ZSCORE", "z", "p"]), b",0.1\r\n");
    assert_eq!(r.cmd_raw(&["ZSCORE", "z", "i"]), b",inf\r\n");
    assert_eq!(r.cmd_raw(&["ZSCORE", "z", "ni"]), b",-inf\r\n");
    assert_eq!(
        r.cmd_raw(&["ZRANGE", "z", "1", "1", "WITHSCORES"]),
        b"*1\r\n*2\r\n$1\r\np\r\n,0.1\r\n"
    );
    // Maps.
    assert_eq!(r.cmd(&["HSET", "h", "f", "v"]), int(1));
    assert_eq!(
        r.cmd_raw(&["HGETALL", "h"]),
        b"%1\r\n$1\r\nf\r\n$1\r\nv\r\n"
    );
    // Sets.
    assert_eq!(r.cmd(&["SADD", "s", "a"]), int(1));
    assert_eq!(r.cmd_raw(&["SMEMBERS", "s"]), b"~1\r\n$1\r\na\r\n");
    // Back to RESP2.
    r.cmd(&["HELLO", "2"]);
    assert_eq!(r.cmd_raw(&["ZSCORE", "z", "m"]), b"$3\r\n2.5\r\n");
    assert_eq!(
        r.cmd_raw(&["HGETALL", "h"]),
        b"*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
    );
    assert_eq!(r.cmd_raw(&["SMEMBERS", "s"]), b"*1\r\n$1\r\na\r\n");
}

#[test]
fn hello_errors() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd_raw(&["HELLO", "4"]),
        b"-NOPROTO unsupported protocol version\r\n"
    );
    assert_eq!(
        r.cmd_raw(&["HELLO", "1"]),
        b"-NOPROTO unsupported protocol version\r\n"
    );
    assert_eq!(
        r.cmd(&["HELLO", "abc"]),
        err("ERR Protocol version is not an integer or out of range")
    );
    assert_eq!(
        r.cmd(&["HELLO", "3", "FOO"]),
        err("ERR Syntax error in HELLO option 'FOO'")
    );
    assert_eq!(
        r.cmd(&["HELLO", "3", "AUTH", "user"]),
        err("ERR Syntax error in HELLO option 'AUTH'")
    );
    // The failed HELLOs did not switch the protocol.
    assert_eq!(r.cmd_raw(&["GET", "nokey"]), b"$-1\r\n");
    // HELLO with no arguments keeps the protocol and returns the map/array.
    let v = r.cmd(&["HELLO"]);
    assert_eq!(v.get("proto"), Some(int(2)));
}
