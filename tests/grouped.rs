//! The grouped form of big collections (decision 0009), end to end: a server with small
//! groups (`collection-group-bytes 512`) holds hashes, lists, sets and sorted sets of a few
//! thousand members as a root plus group records; every reply must match a local model
//! through growth, in-place changes, shrinking back to one record, restarts (clean, which
//! loads the index checkpoint, and kill -9, which scans), DEL, EXPIRE, overwrites, RENAME
//! and FLUSHDB, and the group records must come and go with their collections
//! (`storage_collection_group_records` in INFO storage). Skerry-only.

mod common;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use common::*;

const GROUP_BYTES: &str = "512";

/// A server with small groups; `appendfsync always`, so that every acknowledged write
/// survives the kill -9 restarts.
fn start(extra: &[&str]) -> Server {
    let mut args = vec![
        "--collection-group-bytes",
        GROUP_BYTES,
        "--appendfsync",
        "always",
    ];
    args.extend_from_slice(extra);
    Server::start(&args)
}

fn storage(r: &mut Raw, field: &str) -> i64 {
    let info = r.cmd(&["INFO", "storage"]).text();
    info_field(&info, &format!("storage_{field}"))
        .unwrap_or_else(|| panic!("no storage_{field} in INFO"))
        .parse()
        .unwrap()
}

fn groups(r: &mut Raw) -> i64 {
    storage(r, "collection_group_records")
}

/// Sends `cmds` pipelined and checks that none got an error.
fn send_all(r: &mut Raw, cmds: &[Vec<String>]) {
    for chunk in cmds.chunks(200) {
        let mut out = Vec::new();
        for c in chunk {
            out.extend_from_slice(&resp::encode(c));
        }
        r.send(&out);
        for c in chunk {
            let v = r.read_value();
            assert!(!v.is_error(), "{c:?}: {v:?}");
        }
    }
}

fn cmd(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn hgetall(r: &mut Raw, key: &str) -> BTreeMap<String, String> {
    let got: BTreeMap<String, String> = r
        .cmd(&["HGETALL", key])
        .pairs()
        .into_iter()
        .map(|(f, v)| (f.text(), v.text()))
        .collect();
    got
}

fn check_hash(r: &mut Raw, key: &str, model: &BTreeMap<String, String>) {
    assert_eq!(r.cmd(&["HLEN", key]).int(), model.len() as i64);
    assert_eq!(&hgetall(r, key), model);
    for (f, v) in model.iter().step_by(97) {
        assert_eq!(r.cmd(&["HGET", key, f]).text(), *v);
    }
    assert_eq!(r.cmd(&["HGET", key, "no-such-field"]), Value::Null);
}

#[test]
fn a_big_hash_is_grouped_changed_in_place_and_shrinks_back() {
    skip_if_redis!(); // grouped collections and their INFO storage fields are Skerry's
    let mut s = start(&[]);
    let mut r = s.raw();
    let mut model = BTreeMap::new();
    let mut cmds = Vec::new();
    for i in 0..3000 {
        let (f, v) = (
            format!("field:{i}"),
            format!("value-{i}-{}", "x".repeat(i % 40)),
        );
        cmds.push(cmd(&["HSET", "h", &f, &v]));
        model.insert(f, v);
    }
    send_all(&mut r, &cmds);
    check_hash(&mut r, "h", &model);
    assert_eq!(r.cmd(&["OBJECT", "ENCODING", "h"]).text(), "hashtable");
    let g = groups(&mut r);
    // About 140 KB of fields in groups of about 512 bytes.
    assert!(g >= 128, "{g} group records");

    // One change writes about one group, not the whole hash.
    let before = storage(&mut r, "live_bytes");
    let appended0 = storage(&mut r, "records_appended");
    for i in (0..3000).step_by(30) {
        let f = format!("field:{i}");
        assert_eq!(r.cmd(&["HSET", "h", &f, "changed"]).int(), 0);
        model.insert(f, "changed".into());
    }
    let appended = storage(&mut r, "records_appended") - appended0;
    assert_eq!(appended, 100, "one record per single-field HSET");
    let after = storage(&mut r, "live_bytes");
    assert!(
        (after - before).abs() < 64 * 1024,
        "live bytes moved by {} (the hash is about 140 KB)",
        after - before
    );
    assert_eq!(groups(&mut r), g, "overwrites keep the layout");
    check_hash(&mut r, "h", &model);
    assert_eq!(
        r.cmd(&["HINCRBY", "h", "counter", "5"]).int(),
        5,
        "a new field in a grouped hash"
    );
    model.insert("counter".into(), "5".into());

    // A restart after a clean shutdown (index checkpoint) and after kill -9 (scan).
    r.send(&resp::encode(&["SHUTDOWN"]));
    s.wait_exit(Duration::from_secs(20)).expect("shutdown");
    s.start_again();
    let mut r = s.raw();
    check_hash(&mut r, "h", &model);
    assert_eq!(groups(&mut r), g);
    s.restart();
    let mut r = s.raw();
    check_hash(&mut r, "h", &model);
    assert_eq!(groups(&mut r), g);

    // Removing most fields converts back to one record; the groups are gone.
    let mut cmds = Vec::new();
    for i in 0..2999 {
        let f = format!("field:{i}");
        cmds.push(cmd(&["HDEL", "h", &f]));
        model.remove(&f);
    }
    send_all(&mut r, &cmds);
    check_hash(&mut r, "h", &model);
    assert_eq!(groups(&mut r), 0, "compact again");
    s.restart();
    let mut r = s.raw();
    check_hash(&mut r, "h", &model);
    assert_eq!(groups(&mut r), 0);
    assert_eq!(
        r.cmd(&["OBJECT", "ENCODING", "h"]).text(),
        "hashtable",
        "sticky"
    );
}

fn lrange(r: &mut Raw, key: &str) -> VecDeque<String> {
    r.cmd(&["LRANGE", key, "0", "-1"]).strings().into()
}

fn check_list(r: &mut Raw, key: &str, model: &VecDeque<String>) {
    assert_eq!(r.cmd(&["LLEN", key]).int(), model.len() as i64);
    assert_eq!(&lrange(r, key), model);
    for i in (0..model.len()).step_by(211) {
        assert_eq!(r.cmd(&["LINDEX", key, &i.to_string()]).text(), model[i]);
    }
}

#[test]
fn a_big_list_is_paged_and_every_list_command_keeps_it_whole() {
    skip_if_redis!(); // grouped collections and their INFO storage fields are Skerry's
    let mut s = start(&[]);
    let mut r = s.raw();
    let mut model: VecDeque<String> = VecDeque::new();
    let mut cmds = Vec::new();
    for i in 0..2000 {
        let v = format!("element-{i}-{}", "y".repeat(i % 30));
        if i % 3 == 0 {
            cmds.push(cmd(&["LPUSH", "l", &v]));
            model.push_front(v);
        } else {
            cmds.push(cmd(&["RPUSH", "l", &v]));
            model.push_back(v);
        }
    }
    send_all(&mut r, &cmds);
    check_list(&mut r, "l", &model);
    let g = groups(&mut r);
    assert!(g >= 64, "{g} pages");

    // Pushes and pops at the ends write one page each.
    let appended0 = storage(&mut r, "records_appended");
    for i in 0..50 {
        let v = format!("head-{i}");
        assert!(r.cmd(&["LPUSH", "l", &v]).int() > 0);
        model.push_front(v);
        assert_eq!(r.cmd(&["RPOP", "l"]).text(), model.pop_back().unwrap());
    }
    let appended = storage(&mut r, "records_appended") - appended0;
    assert!(appended <= 110, "{appended} records for 100 end operations");
    check_list(&mut r, "l", &model);

    // The middle: LSET, LINSERT (pages split), LREM, LTRIM, LPOS, LMOVE within the list.
    let mid = model.len() / 2;
    r.cmd(&["LSET", "l", &mid.to_string(), "set-in-the-middle"]);
    model[mid] = "set-in-the-middle".into();
    for i in 0..300 {
        let v = format!("inserted-{i}-{}", "z".repeat(50));
        assert!(
            r.cmd(&["LINSERT", "l", "AFTER", "set-in-the-middle", &v])
                .int()
                > 0
        );
        model.insert(mid + 1, v);
    }
    check_list(&mut r, "l", &model);
    let victim = model[mid + 7].clone();
    assert_eq!(r.cmd(&["LREM", "l", "0", &victim]).int(), 1);
    model.retain(|v| *v != victim);
    assert_eq!(r.cmd(&["LPOS", "l", "set-in-the-middle"]).int(), mid as i64);
    r.cmd(&["LTRIM", "l", "100", "-50"]);
    let n = model.len();
    // LTRIM 100 -50 keeps positions 100 ..= n - 50.
    model = model.into_iter().skip(100).take(n - 149).collect();
    let moved = r.cmd(&["LMOVE", "l", "l", "LEFT", "RIGHT"]).text();
    assert_eq!(moved, model.pop_front().unwrap());
    model.push_back(moved);
    check_list(&mut r, "l", &model);

    s.restart();
    let mut r = s.raw();
    check_list(&mut r, "l", &model);

    // Popping almost everything: one record again.
    let popped = r
        .cmd(&["LPOP", "l", &(model.len() - 3).to_string()])
        .strings();
    let want: Vec<String> = model.drain(..model.len() - 3).collect();
    assert_eq!(popped, want);
    check_list(&mut r, "l", &model);
    assert_eq!(groups(&mut r), 0);
    s.restart();
    let mut r = s.raw();
    check_list(&mut r, "l", &model);
}

#[test]
fn big_sets_and_sorted_sets_are_grouped_and_survive_restarts() {
    skip_if_redis!(); // grouped collections and their INFO storage fields are Skerry's
    let mut s = start(&[]);
    let mut r = s.raw();
    let mut set = BTreeSet::new();
    let mut zset: BTreeMap<String, i64> = BTreeMap::new();
    let mut cmds = Vec::new();
    for i in 0..3000 {
        let m = format!("member:{i}");
        cmds.push(cmd(&["SADD", "s", &m]));
        set.insert(m.clone());
        cmds.push(cmd(&["ZADD", "z", &(i % 500).to_string(), &m]));
        zset.insert(m, (i % 500) as i64);
    }
    send_all(&mut r, &cmds);
    let check = |r: &mut Raw, set: &BTreeSet<String>, zset: &BTreeMap<String, i64>| {
        let got: BTreeSet<String> = r.cmd(&["SMEMBERS", "s"]).strings().into_iter().collect();
        assert_eq!(&got, set);
        assert_eq!(r.cmd(&["SCARD", "s"]).int(), set.len() as i64);
        for m in set.iter().step_by(101) {
            assert_eq!(r.cmd(&["SISMEMBER", "s", m]).int(), 1);
        }
        let mut want: Vec<(i64, &String)> = zset.iter().map(|(m, s)| (*s, m)).collect();
        want.sort();
        let got = r.cmd(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]).strings();
        let got: Vec<(i64, String)> = got
            .chunks(2)
            .map(|p| (p[1].parse().unwrap(), p[0].clone()))
            .collect();
        let want: Vec<(i64, String)> = want.into_iter().map(|(s, m)| (s, m.clone())).collect();
        assert_eq!(got, want);
        for (i, (sc, m)) in got.iter().enumerate().step_by(173) {
            assert_eq!(r.cmd(&["ZRANK", "z", m]).int(), i as i64);
            assert_eq!(r.cmd(&["ZSCORE", "z", m]).text(), sc.to_string());
        }
    };
    check(&mut r, &set, &zset);
    assert!(groups(&mut r) >= 128);

    // Changes, kill -9 (every change was acknowledged under appendfsync always), restart.
    for i in (0..3000).step_by(7) {
        let m = format!("member:{i}");
        assert_eq!(r.cmd(&["SREM", "s", &m]).int(), 1);
        set.remove(&m);
        let score = r.cmd(&["ZINCRBY", "z", "1000", &m]).text();
        assert_eq!(score, (zset[&m] + 1000).to_string());
        *zset.get_mut(&m).unwrap() += 1000;
    }
    let popped = r.cmd(&["SPOP", "s", "100"]).strings();
    for m in &popped {
        assert!(set.remove(m), "{m} popped twice or never there");
    }
    for (m, _) in r
        .cmd(&["ZPOPMIN", "z", "10"])
        .strings()
        .chunks(2)
        .map(|p| (p[0].clone(), ()))
    {
        zset.remove(&m);
    }
    s.restart();
    let mut r = s.raw();
    check(&mut r, &set, &zset);

    // Store commands write grouped results too.
    assert_eq!(r.cmd(&["SUNIONSTORE", "s2", "s"]).int(), set.len() as i64);
    assert_eq!(
        r.cmd(&["ZUNIONSTORE", "z2", "1", "z"]).int(),
        zset.len() as i64
    );
    let g = groups(&mut r);
    assert!(g >= 256, "{g}");
    r.cmd(&["DEL", "s2", "z2"]);
    assert!(groups(&mut r) < g);
    check(&mut r, &set, &zset);
}

#[test]
fn ending_a_grouped_collection_removes_its_groups() {
    skip_if_redis!(); // grouped collections and their INFO storage fields are Skerry's
    let mut s = start(&[]);
    let mut r = s.raw();
    let fill = |r: &mut Raw, key: &str| {
        let mut cmds = Vec::new();
        for i in 0..1000 {
            cmds.push(cmd(&[
                "HSET",
                key,
                &format!("f{i}"),
                &format!("value number {i}"),
            ]));
        }
        send_all(r, &cmds);
    };
    fill(&mut r, "a");
    let one = groups(&mut r);
    assert!(one > 16);
    // DEL, overwrite by SET, FLUSHDB.
    assert_eq!(r.cmd(&["DEL", "a"]).int(), 1);
    assert_eq!(groups(&mut r), 0);
    fill(&mut r, "a");
    assert_eq!(r.cmd(&["SET", "a", "now a string"]).text(), "OK");
    assert_eq!(groups(&mut r), 0);
    assert_eq!(r.cmd(&["GET", "a"]).text(), "now a string");
    fill(&mut r, "b");
    r.cmd(&["FLUSHDB"]);
    assert_eq!(groups(&mut r), 0);
    assert_eq!(r.cmd(&["DBSIZE"]).int(), 0);

    // RENAME moves the collection (groups and all), EXPIRE ends it.
    fill(&mut r, "c");
    assert_eq!(r.cmd(&["RENAME", "c", "d"]).text(), "OK");
    // Regrouped where it lands (the count of groups may differ from the grown one's).
    let renamed = groups(&mut r);
    assert!(renamed > 16, "{renamed}");
    assert_eq!(r.cmd(&["HLEN", "d"]).int(), 1000);
    assert_eq!(r.cmd(&["HGET", "d", "f999"]).text(), "value number 999");
    assert_eq!(r.cmd(&["EXISTS", "c"]).int(), 0);
    assert_eq!(r.cmd(&["PEXPIRE", "d", "300"]).int(), 1);
    assert!(r.cmd(&["PTTL", "d"]).int() > 0);
    assert_eq!(groups(&mut r), renamed, "the expiry is in the root only");
    let deadline = Instant::now() + Duration::from_secs(10);
    while groups(&mut r) != 0 {
        assert!(Instant::now() < deadline, "expired groups stay");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(r.cmd(&["EXISTS", "d"]).int(), 0);

    // A grouped collection left with a TTL that runs out while the server is down.
    fill(&mut r, "e");
    r.cmd(&["PEXPIRE", "e", "500"]);
    s.kill();
    std::thread::sleep(Duration::from_millis(700));
    s.start_again();
    let mut r = s.raw();
    assert_eq!(r.cmd(&["EXISTS", "e"]).int(), 0);
    assert_eq!(groups(&mut r), 0);
    s.restart();
    let mut r = s.raw();
    assert_eq!(groups(&mut r), 0, "no group comes back");
    assert_eq!(r.cmd(&["DBSIZE"]).int(), 0);
}
