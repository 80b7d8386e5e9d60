//! Hops (decision 0017): a pipeline whose commands belong to several workers gets its
//! replies in order, and under `appendfsync always` its writes share one group commit per
//! worker per turn, whichever worker owns them (not one fdatasync per forwarded run).

mod common;

use common::*;

/// The worker owning `key` among `workers` (CRC16 slot mod workers, no hash tags here).
fn owner(key: &str, workers: u16) -> u16 {
    key_slot(key.as_bytes()) % workers
}

/// Two workers, every write acknowledged only once durable (`appendfsync always`).
fn group_commit_server() -> Server {
    Server::start(&[
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--threads",
        "2",
        "--data-size",
        "256mb",
    ])
}

#[test]
fn pipelined_sets_over_two_workers_share_group_commits() {
    skip_if_redis!();
    let s = group_commit_server();
    let mut r = s.raw();
    const N: usize = 4000;
    let keys: Vec<String> = (0..N).map(|i| format!("gc:{i}")).collect();
    let on_1 = keys.iter().filter(|k| owner(k, 2) == 1).count();
    assert!(
        on_1 > N / 3 && on_1 < 2 * N / 3,
        "keys spread over both workers ({on_1} of {N} on worker 1)"
    );
    let before = info_u64(&mut r, "storage", "storage_fdatasyncs").expect("fdatasyncs");
    let cmds: Vec<Vec<String>> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| vec!["SET".into(), k.clone(), format!("v{i}")])
        .collect();
    let replies = pipeline(&mut r, &cmds);
    assert!(replies.iter().all(|v| *v == Value::Simple("OK".into())));
    let syncs = info_u64(&mut r, "storage", "storage_fdatasyncs").expect("fdatasyncs") - before;
    // One per worker per read of the pipeline (a few dozen reads at most); before decision
    // 0016 every run of consecutive commands for the other worker cost one (about N / 2).
    assert!(
        syncs <= (N / 40) as u64,
        "{syncs} fdatasyncs for {N} pipelined SETs over two workers"
    );
    // Every write is there, and durable: kill -9 loses none.
    let mut s = s;
    s.kill();
    s.start_again();
    let mut r = s.raw();
    for chunk in keys.chunks(500) {
        let mut cmd = vec!["MGET".to_string()];
        cmd.extend(chunk.iter().cloned());
        let args: Vec<&str> = cmd.iter().map(|a| a.as_str()).collect();
        let got = r.cmd(&args);
        let Value::Array(vals) = got else {
            panic!("MGET: {got:?}")
        };
        for (k, v) in chunk.iter().zip(vals) {
            let i: usize = k[3..].parse().unwrap();
            assert_eq!(v, bulk(&format!("v{i}")), "{k} after kill -9");
        }
    }
}

#[test]
fn replies_of_a_pipeline_over_several_workers_keep_their_order() {
    for threads in ["2", "4"] {
        let s = Server::start(&["--threads", threads]);
        let mut r = s.raw();
        let mut cmds: Vec<Vec<String>> = Vec::new();
        let mut want: Vec<Value> = Vec::new();
        for i in 0..600 {
            let k = format!("ord:{}", i % 97);
            match i % 5 {
                0 => {
                    cmds.push(vec!["SET".into(), k.clone(), "x".repeat(i % 13)]);
                    want.push(Value::Simple("OK".into()));
                }
                1 => {
                    cmds.push(vec!["APPEND".into(), k.clone(), format!("{i}")]);
                    want.push(Value::Null); // filled below from a model
                }
                2 => {
                    cmds.push(vec!["GET".into(), k.clone()]);
                    want.push(Value::Null);
                }
                3 if i % 50 == 3 => {
                    // Now and then a command that is not keyed (a barrier).
                    cmds.push(vec!["ECHO".into(), format!("e{i}")]);
                    want.push(bulk(&format!("e{i}")));
                }
                3 => {
                    cmds.push(vec!["GET".into(), format!("ord:{}", (i * 7) % 97)]);
                    want.push(Value::Null);
                }
                _ => {
                    cmds.push(vec!["STRLEN".into(), k.clone()]);
                    want.push(Value::Null);
                }
            }
        }
        // A model of the string values, applied in command order (commands on one key go
        // to one worker, in order).
        let mut model: std::collections::HashMap<String, String> = Default::default();
        for (c, w) in cmds.iter().zip(want.iter_mut()) {
            match c[0].as_str() {
                "SET" => {
                    model.insert(c[1].clone(), c[2].clone());
                }
                "APPEND" => {
                    let v = model.entry(c[1].clone()).or_default();
                    v.push_str(&c[2]);
                    *w = Value::Integer(v.len() as i64);
                }
                "GET" => {
                    *w = model.get(&c[1]).map_or(Value::Null, |v| bulk(v));
                }
                "STRLEN" => {
                    *w = Value::Integer(model.get(&c[1]).map_or(0, |v| v.len() as i64));
                }
                _ => {}
            }
        }
        let got = pipeline(&mut r, &cmds);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "threads {threads}, reply {i} ({:?})", cmds[i]);
        }
    }
}

#[test]
fn client_reply_off_and_skip_with_commands_on_both_workers() {
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    // Keys owned by each worker (the connection's own is one of them).
    let k0: Vec<String> = (0..)
        .map(|i| format!("cr:{i}"))
        .filter(|k| owner(k, 2) == 0)
        .take(3)
        .collect();
    let k1: Vec<String> = (0..)
        .map(|i| format!("cr:{i}"))
        .filter(|k| owner(k, 2) == 1)
        .take(3)
        .collect();
    let c = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let cmds = vec![
        c(&["SET", &k0[0], "a"]),
        c(&["CLIENT", "REPLY", "OFF"]),
        c(&["SET", &k1[0], "b"]),
        c(&["SET", &k0[1], "c"]),
        c(&["GET", &k1[0]]),
        c(&["CLIENT", "REPLY", "ON"]),
        c(&["GET", &k1[0]]),
        c(&["CLIENT", "REPLY", "SKIP"]),
        c(&["SET", &k1[1], "d"]),
        c(&["GET", &k1[1]]),
        c(&["CLIENT", "REPLY", "SKIP"]),
        c(&["GET", &k0[1]]),
        c(&["GET", &k0[0]]),
    ];
    let mut out = Vec::new();
    for cmd in &cmds {
        out.extend_from_slice(&common::resp::encode(cmd));
    }
    r.send(&out);
    let want = [
        Value::Simple("OK".into()),
        Value::Simple("OK".into()),
        bulk("b"),
        bulk("d"),
        bulk("a"),
    ];
    for (i, w) in want.iter().enumerate() {
        assert_eq!(&r.read_value(), w, "reply {i}");
    }
    assert_eq!(r.cmd(&["PING"]), Value::Simple("PONG".into()));
}

/// A client streaming a pipeline of big writes (8 MB here, 500 ring buffers of 16 KiB) has
/// it run in turns of up to 256 KiB: the buffers its connection's receive already holds run
/// in the turn of the one before them (decision 0031), so under `appendfsync always` the
/// group commits number a few per 256 KiB per worker, not one per ring buffer.
#[test]
fn a_streamed_pipeline_is_group_committed_in_large_turns() {
    skip_if_redis!();
    let s = group_commit_server();
    let mut r = s.raw();
    const N: usize = 2000;
    const VALUE_BYTES: usize = 4096;
    let value = |i: usize| format!("{i:08}").repeat(VALUE_BYTES / 8);
    let before = info_u64(&mut r, "storage", "storage_fdatasyncs").expect("fdatasyncs");
    let cmds: Vec<Vec<String>> = (0..N)
        .map(|i| vec!["SET".into(), format!("stream:{i}"), value(i)])
        .collect();
    let replies = pipeline(&mut r, &cmds);
    assert!(replies.iter().all(|v| *v == Value::Simple("OK".into())));
    let syncs = info_u64(&mut r, "storage", "storage_fdatasyncs").expect("fdatasyncs") - before;
    // At 256 KiB a turn, about 32 turns for each of the two workers' logs; one turn per
    // ring buffer would be about 500 each.
    assert!(
        syncs <= 200,
        "{syncs} fdatasyncs for {N} pipelined SETs of {VALUE_BYTES} bytes"
    );
    let mut s = s;
    s.kill();
    s.start_again();
    let mut r = s.raw();
    for i in (0..N).step_by(37) {
        assert_eq!(
            r.cmd(&["GET", &format!("stream:{i}")]),
            bulk(&value(i)),
            "stream:{i} after kill -9"
        );
    }
}
