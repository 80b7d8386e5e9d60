//! SORT and SORT_RO end to end: numeric and ALPHA order, DESC, LIMIT, BY and GET patterns
//! (string keys, hash fields, `#`, constants) with the pattern keys spread over several
//! workers, STORE (a list, replacing any type and TTL; an empty result deletes the
//! destination; blocked clients woken), errors as Redis 7.0 words them, MULTI, and
//! persistence. The tests pass against Redis 7.0.15 too (`SKERRY_TEST_SERVER=redis`),
//! except the ones marked Skerry-only.

mod common;

use std::time::Duration;

use common::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";
const NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";

/// A server with four workers, so that pattern keys live on different workers.
fn start() -> (Server, Raw) {
    let s = Server::start(&["--threads", "4"]);
    let r = s.raw();
    (s, r)
}

fn cmd(r: &mut Raw, line: &str) -> Value {
    let args: Vec<&str> = line.split(' ').collect();
    r.cmd(&args)
}

fn range(r: &mut Raw, key: &str) -> Value {
    r.cmd(&["LRANGE", key, "0", "-1"])
}

#[test]
fn numeric_and_alpha_order() {
    let (_s, mut r) = start();
    cmd(&mut r, "RPUSH l 3 10 -1 2.5 1e1 .5 +4 inf -inf");
    // Numeric by default (Redis 8.0's fast_float strtod: exponents, signs, infinities, no
    // hex); equal scores (10 and 1e1) in byte order.
    assert_eq!(
        cmd(&mut r, "SORT l"),
        bulks(&["-inf", "-1", ".5", "2.5", "3", "+4", "10", "1e1", "inf"])
    );
    assert_eq!(
        cmd(&mut r, "SORT l DESC"),
        bulks(&["inf", "1e1", "10", "+4", "3", "2.5", ".5", "-1", "-inf"])
    );
    assert_eq!(
        cmd(&mut r, "SORT l ALPHA"),
        bulks(&["+4", "-1", "-inf", ".5", "10", "1e1", "2.5", "3", "inf"])
    );
    assert_eq!(
        cmd(&mut r, "sort l alpha desc asc"),
        cmd(&mut r, "SORT l ALPHA")
    );
    // The Tcl suite's integers-as-strings case.
    cmd(&mut r, "RPUSH ints 2 1 3 10");
    assert_eq!(
        cmd(&mut r, "SORT ints ALPHA"),
        bulks(&["1", "10", "2", "3"])
    );
    assert_eq!(cmd(&mut r, "SORT ints"), bulks(&["1", "2", "3", "10"]));
    // Sets sort too (members of any encoding).
    cmd(&mut r, "SADD s 5 -2 30 7");
    assert_eq!(cmd(&mut r, "SORT s"), bulks(&["-2", "5", "7", "30"]));
    cmd(&mut r, "SADD words pear apple fig");
    assert_eq!(
        cmd(&mut r, "SORT words ALPHA"),
        bulks(&["apple", "fig", "pear"])
    );
    // A missing key sorts as an empty list.
    assert_eq!(cmd(&mut r, "SORT nokey"), arr(vec![]));
    assert_eq!(cmd(&mut r, "SORT nokey BY nosort GET #"), arr(vec![]));
}

#[test]
fn values_that_are_not_numbers_fail_numeric_sorts() {
    let (_s, mut r) = start();
    // Redis 8.0 (fast_float): a leading '+' is fine, the empty string is 0, out-of-range
    // values round to infinity or zero.
    r.cmd(&["RPUSH", "ok", "+5", "", "-1", "1e400", "-1e400", "1e-400"]);
    assert_eq!(
        cmd(&mut r, "SORT ok"),
        bulks(&["-1e400", "-1", "", "1e-400", "+5", "1e400"])
    );
    // No white space, no hex, no NaN, nothing left over.
    for bad in ["abc", "1 ", " 5", "nan", "0x10", "1e", "  "] {
        r.cmd(&["DEL", "l"]);
        r.cmd(&["RPUSH", "l", "1", bad, "2"]);
        assert_eq!(cmd(&mut r, "SORT l"), err(NOT_DOUBLE), "{bad:?}");
        // ALPHA and unsorted forms do not convert.
        assert_eq!(cmd(&mut r, "SORT l ALPHA").items().len(), 3);
        assert_eq!(cmd(&mut r, "SORT l BY nosort").items().len(), 3);
    }
    // A bad BY value fails the sort and STORE writes nothing.
    cmd(&mut r, "SADD set 1 2 3 4");
    cmd(
        &mut r,
        "MSET score:1 10 score:2 20 score:3 30 score:4 not-a-double",
    );
    assert_eq!(cmd(&mut r, "SORT set BY score:*"), err(NOT_DOUBLE));
    assert_eq!(
        cmd(&mut r, "SORT set BY score:* STORE dst"),
        err(NOT_DOUBLE)
    );
    assert_eq!(cmd(&mut r, "EXISTS dst"), int(0));
}

#[test]
fn limit_offset_count() {
    let (_s, mut r) = start();
    cmd(&mut r, "RPUSH l 5 1 4 2 3");
    assert_eq!(cmd(&mut r, "SORT l LIMIT 0 2"), bulks(&["1", "2"]));
    assert_eq!(cmd(&mut r, "SORT l LIMIT 1 3"), bulks(&["2", "3", "4"]));
    assert_eq!(cmd(&mut r, "SORT l LIMIT 3 100"), bulks(&["4", "5"]));
    assert_eq!(cmd(&mut r, "SORT l LIMIT 1 2 DESC"), bulks(&["4", "3"]));
    // A negative offset counts from 0, a negative count means "all".
    assert_eq!(cmd(&mut r, "SORT l LIMIT -10 2"), bulks(&["1", "2"]));
    assert_eq!(cmd(&mut r, "SORT l LIMIT 2 -1"), bulks(&["3", "4", "5"]));
    assert_eq!(cmd(&mut r, "SORT l LIMIT 2 -100"), bulks(&["3", "4", "5"]));
    assert_eq!(cmd(&mut r, "SORT l LIMIT 0 0"), arr(vec![]));
    assert_eq!(cmd(&mut r, "SORT l LIMIT 5 1"), arr(vec![]));
    assert_eq!(cmd(&mut r, "SORT l LIMIT 99 1"), arr(vec![]));
    // Huge values are clamped to the collection's size.
    assert_eq!(
        cmd(&mut r, "SORT_RO l BY nosort LIMIT 2 9223372036854775807"),
        bulks(&["4", "2", "3"])
    );
    assert_eq!(
        cmd(
            &mut r,
            "SORT l LIMIT 9223372036854775807 9223372036854775807"
        ),
        arr(vec![])
    );
    // The last LIMIT wins.
    assert_eq!(cmd(&mut r, "SORT l LIMIT 0 1 LIMIT 4 1"), bulks(&["5"]));
    // Errors.
    assert_eq!(cmd(&mut r, "SORT l LIMIT 1"), err(SYNTAX));
    assert_eq!(cmd(&mut r, "SORT l LIMIT x 1"), err(NOT_INT));
    assert_eq!(cmd(&mut r, "SORT l LIMIT 1 1.5"), err(NOT_INT));
    assert_eq!(
        cmd(&mut r, "SORT l LIMIT 0 9223372036854775808"),
        err(NOT_INT)
    );
}

#[test]
fn by_pattern_reads_strings_and_hash_fields_on_every_worker() {
    let (_s, mut r) = start();
    // 200 elements, their weights in string keys and hash fields spread over the workers.
    let n = 200;
    let mut want: Vec<(i64, String)> = Vec::new();
    for i in 0..n {
        let w = (i * 7919) % 1000;
        let id = i.to_string();
        r.cmd(&["LPUSH", "ids", &id]);
        r.cmd(&["SET", &format!("weight_{i}"), &w.to_string()]);
        r.cmd(&[
            "HSET",
            &format!("obj_{i}"),
            "weight",
            &w.to_string(),
            "name",
            &format!("n{i}"),
        ]);
        want.push((w, id));
    }
    want.sort();
    let ids: Vec<&str> = want.iter().map(|(_, id)| id.as_str()).collect();
    assert_eq!(cmd(&mut r, "SORT ids BY weight_*"), bulks(&ids));
    assert_eq!(cmd(&mut r, "SORT ids BY obj_*->weight"), bulks(&ids));
    assert_eq!(
        cmd(&mut r, "SORT ids BY weight_* LIMIT 5 5"),
        bulks(&ids[5..10])
    );
    let rev: Vec<&str> = ids.iter().rev().copied().collect();
    assert_eq!(cmd(&mut r, "SORT ids BY weight_* DESC"), bulks(&rev));
    // GET values from the same keys, in the same order.
    let got = cmd(
        &mut r,
        "SORT ids BY weight_* GET # GET weight_* GET obj_*->name",
    )
    .items();
    assert_eq!(got.len(), 3 * n as usize);
    for (k, chunk) in got.chunks(3).enumerate() {
        assert_eq!(chunk[0], bulk(ids[k]));
        assert_eq!(chunk[1], bulk(&want[k].0.to_string()));
        assert_eq!(chunk[2], bulk(&format!("n{}", ids[k])));
    }
    // ALPHA by the pattern value.
    cmd(&mut r, "RPUSH fruit a b c");
    cmd(&mut r, "MSET f_a pear f_b apple f_c fig");
    assert_eq!(
        cmd(&mut r, "SORT fruit BY f_* ALPHA"),
        bulks(&["b", "c", "a"])
    );
    assert_eq!(
        cmd(&mut r, "SORT fruit BY f_* ALPHA DESC"),
        bulks(&["a", "c", "b"])
    );
}

#[test]
fn by_pattern_misses_and_ties() {
    let (_s, mut r) = start();
    cmd(&mut r, "SADD set c a b d e");
    // Missing keys, keys of another type, missing hash fields: score 0 (ties in byte
    // order), or first with ALPHA.
    cmd(&mut r, "SET w_c 1");
    cmd(&mut r, "RPUSH w_d 5");
    cmd(&mut r, "HSET w_e other 3");
    assert_eq!(
        cmd(&mut r, "SORT set BY w_*"),
        bulks(&["a", "b", "d", "e", "c"])
    );
    assert_eq!(
        cmd(&mut r, "SORT set BY w_* DESC"),
        bulks(&["c", "e", "d", "b", "a"])
    );
    assert_eq!(
        cmd(&mut r, "SORT set BY nokey_*"),
        bulks(&["a", "b", "c", "d", "e"])
    );
    assert_eq!(
        cmd(&mut r, "SORT set BY w_*->f"),
        bulks(&["a", "b", "c", "d", "e"])
    );
    cmd(&mut r, "HSET h_b f 2");
    cmd(&mut r, "HSET h_a f 1");
    assert_eq!(
        cmd(&mut r, "SORT set BY h_*->f"),
        bulks(&["c", "d", "e", "a", "b"])
    );
    assert_eq!(
        cmd(&mut r, "SORT set BY h_*->f ALPHA LIMIT 3 2"),
        bulks(&["a", "b"])
    );
    // Only the first '*' is replaced; "->" with no field name is part of the key name.
    cmd(&mut r, "DEL l");
    cmd(&mut r, "RPUSH l a");
    cmd(&mut r, "SET x:a-> 100");
    assert_eq!(cmd(&mut r, "SORT l BY num GET x:*->"), bulks(&["100"]));
    cmd(&mut r, "SET p_a_* star");
    assert_eq!(cmd(&mut r, "SORT l BY nosort GET p_*_*"), bulks(&["star"]));
}

#[test]
fn get_patterns() {
    let (s, mut r) = start();
    cmd(&mut r, "RPUSH l 2 1 3");
    cmd(&mut r, "MSET v_1 one v_3 three");
    cmd(&mut r, "HSET h_2 f two");
    assert_eq!(
        cmd(&mut r, "SORT l GET # GET v_* GET h_*->f"),
        arr(vec![
            bulk("1"),
            bulk("one"),
            Value::Null,
            bulk("2"),
            Value::Null,
            bulk("two"),
            bulk("3"),
            bulk("three"),
            Value::Null,
        ])
    );
    // A constant GET finds nothing; GET # alone gives the elements.
    assert_eq!(
        cmd(&mut r, "SORT l GET const"),
        arr(vec![Value::Null, Value::Null, Value::Null])
    );
    cmd(&mut r, "SET const x");
    assert_eq!(cmd(&mut r, "SORT l GET const").items()[0], Value::Null);
    assert_eq!(cmd(&mut r, "SORT l GET #"), bulks(&["1", "2", "3"]));
    assert_eq!(
        cmd(&mut r, "SORT l GET # GET #"),
        bulks(&["1", "1", "2", "2", "3", "3"])
    );
    // A wrong-type pattern key gives nothing.
    cmd(&mut r, "SADD v_2 x");
    assert_eq!(
        cmd(&mut r, "SORT l GET v_* LIMIT 1 1"),
        arr(vec![Value::Null])
    );
    assert_eq!(
        cmd(&mut r, "SORT l BY nosort GET v_* LIMIT 0 1"),
        arr(vec![Value::Null])
    );
    // RESP3 nulls.
    let mut r3 = s.raw();
    r3.cmd(&["HELLO", "3"]);
    assert_eq!(
        r3.cmd_raw(&["SORT", "l", "GET", "nope_*", "LIMIT", "0", "1"]),
        b"*1\r\n_\r\n"
    );
}

#[test]
fn by_nosort_keeps_the_native_order() {
    let (_s, mut r) = start();
    cmd(&mut r, "LPUSH l 2 1 4 3 5");
    assert_eq!(
        cmd(&mut r, "SORT l BY nosort"),
        bulks(&["5", "3", "4", "1", "2"])
    );
    assert_eq!(
        cmd(&mut r, "SORT l BY nosort DESC"),
        bulks(&["2", "1", "4", "3", "5"])
    );
    assert_eq!(
        cmd(&mut r, "SORT l BY nosort LIMIT 1 2"),
        bulks(&["3", "4"])
    );
    assert_eq!(
        cmd(&mut r, "SORT l BY nosort DESC LIMIT 1 2"),
        bulks(&["1", "4"])
    );
    assert_eq!(cmd(&mut r, "SORT l BY nosort LIMIT 4 10"), bulks(&["2"]));
    assert_eq!(cmd(&mut r, "SORT l BY nosort LIMIT 5 10"), arr(vec![]));
    // Any BY without '*' is a constant; a later BY with '*' does not undo it.
    assert_eq!(
        cmd(&mut r, "SORT l BY w_*_x BY const"),
        bulks(&["5", "3", "4", "1", "2"])
    );
    assert_eq!(
        cmd(&mut r, "SORT l BY const BY w_*"),
        bulks(&["5", "3", "4", "1", "2"])
    );
    // With GET.
    cmd(&mut r, "MSET g_5 five g_1 one");
    assert_eq!(
        cmd(&mut r, "SORT l BY nosort GET g_* LIMIT 0 4"),
        arr(vec![bulk("five"), Value::Null, Value::Null, bulk("one")])
    );
    // STORE keeps the list's order; a set stored unsorted is sorted ALPHA instead.
    assert_eq!(cmd(&mut r, "SORT l BY nosort STORE d"), int(5));
    assert_eq!(range(&mut r, "d"), bulks(&["5", "3", "4", "1", "2"]));
    assert_eq!(cmd(&mut r, "SORT l BY nosort LIMIT 0 3 STORE d"), int(3));
    assert_eq!(range(&mut r, "d"), bulks(&["5", "3", "4"]));
    cmd(&mut r, "SADD s b aa c a 10 9");
    assert_eq!(cmd(&mut r, "SORT s BY _ STORE d"), int(6));
    assert_eq!(range(&mut r, "d"), bulks(&["10", "9", "a", "aa", "b", "c"]));
    assert_eq!(cmd(&mut r, "SORT s BY _ DESC LIMIT 0 2 STORE d"), int(2));
    assert_eq!(range(&mut r, "d"), bulks(&["c", "b"]));
}

#[test]
fn store_writes_a_list() {
    let (_s, mut r) = start();
    cmd(&mut r, "RPUSH src 3 1 2");
    assert_eq!(cmd(&mut r, "SORT src STORE dst"), int(3));
    assert_eq!(range(&mut r, "dst"), bulks(&["1", "2", "3"]));
    assert_eq!(cmd(&mut r, "TYPE dst"), simple("list"));
    // Redis 7.2+: a small list is a listpack.
    assert_eq!(cmd(&mut r, "OBJECT ENCODING dst"), bulk("listpack"));
    // The destination's type and TTL are replaced.
    cmd(&mut r, "SET other v EX 100");
    assert_eq!(cmd(&mut r, "SORT src DESC STORE other"), int(3));
    assert_eq!(range(&mut r, "other"), bulks(&["3", "2", "1"]));
    assert_eq!(cmd(&mut r, "TTL other"), int(-1));
    cmd(&mut r, "HSET hdst f v");
    assert_eq!(cmd(&mut r, "SORT src LIMIT 0 1 STORE hdst"), int(1));
    assert_eq!(range(&mut r, "hdst"), bulks(&["1"]));
    // GET values; a missing one is stored as an empty string; the count is of values.
    cmd(&mut r, "MSET v_1 one v_3 three");
    assert_eq!(cmd(&mut r, "SORT src GET # GET v_* STORE dst"), int(6));
    assert_eq!(
        range(&mut r, "dst"),
        bulks(&["1", "one", "2", "", "3", "three"])
    );
    // The last STORE wins; the source may be the destination.
    assert_eq!(cmd(&mut r, "SORT src STORE a STORE b"), int(3));
    assert_eq!(cmd(&mut r, "EXISTS a"), int(0));
    assert_eq!(cmd(&mut r, "SORT src DESC STORE src"), int(3));
    assert_eq!(range(&mut r, "src"), bulks(&["3", "2", "1"]));
    // An empty result deletes the destination (and creates none).
    assert_eq!(cmd(&mut r, "SORT nokey STORE dst"), int(0));
    assert_eq!(cmd(&mut r, "EXISTS dst"), int(0));
    assert_eq!(cmd(&mut r, "SORT src LIMIT 10 10 STORE zap"), int(0));
    assert_eq!(cmd(&mut r, "EXISTS zap"), int(0));
    cmd(&mut r, "SET str v");
    assert_eq!(cmd(&mut r, "SORT src LIMIT 0 0 STORE str"), int(0));
    assert_eq!(cmd(&mut r, "EXISTS str"), int(0));
    // Binary elements round-trip.
    let bin: Vec<u8> = (0..=255u8).collect();
    r.cmd_bytes(&[b"RPUSH", b"bin", &bin, b"", b"\x00"]);
    assert_eq!(r.cmd(&["SORT", "bin", "ALPHA", "STORE", "bdst"]), int(3));
    assert_eq!(
        range(&mut r, "bdst"),
        arr(vec![
            bulk(""),
            Value::Bulk(b"\x00".to_vec()),
            Value::Bulk(bin)
        ])
    );
}

#[test]
fn errors_and_sort_ro() {
    let (_s, mut r) = start();
    cmd(&mut r, "SET str v");
    cmd(&mut r, "HSET h f v");
    cmd(&mut r, "RPUSH l b a");
    assert_eq!(cmd(&mut r, "SORT str"), err(WRONGTYPE));
    assert_eq!(cmd(&mut r, "SORT h"), err(WRONGTYPE));
    assert_eq!(cmd(&mut r, "SORT_RO str"), err(WRONGTYPE));
    // Option errors come before the type check.
    assert_eq!(cmd(&mut r, "SORT str bogus"), err(SYNTAX));
    assert_eq!(cmd(&mut r, "SORT l STORE"), err(SYNTAX));
    assert_eq!(cmd(&mut r, "SORT l BY"), err(SYNTAX));
    assert_eq!(cmd(&mut r, "SORT l GET"), err(SYNTAX));
    assert_eq!(
        cmd(&mut r, "SORT"),
        err("ERR wrong number of arguments for 'sort' command")
    );
    // SORT_RO has no STORE.
    assert_eq!(cmd(&mut r, "SORT_RO l STORE d"), err(SYNTAX));
    assert_eq!(cmd(&mut r, "SORT_RO foolist STORE bar"), err(SYNTAX));
    assert_eq!(cmd(&mut r, "EXISTS d"), int(0));
    assert_eq!(cmd(&mut r, "SORT_RO l ALPHA"), bulks(&["a", "b"]));
    cmd(&mut r, "SET x:a 100");
    assert_eq!(
        cmd(&mut r, "SORT_RO l BY nosort GET x:*"),
        arr(vec![Value::Null, bulk("100")])
    );
    // The sorted key is read, not changed.
    assert_eq!(range(&mut r, "l"), bulks(&["b", "a"]));
}

#[test]
fn command_introspection() {
    let (_s, mut r) = start();
    assert_eq!(
        cmd(&mut r, "COMMAND GETKEYS SORT abc STORE def"),
        bulks(&["abc", "def"])
    );
    assert_eq!(
        cmd(
            &mut r,
            "COMMAND GETKEYS SORT abc store invalid store stillbad store def"
        ),
        bulks(&["abc", "def"])
    );
    assert_eq!(
        cmd(&mut r, "COMMAND GETKEYS SORT abc BY store"),
        bulks(&["abc"])
    );
    assert_eq!(cmd(&mut r, "COMMAND GETKEYS SORT_RO abc"), bulks(&["abc"]));
    for (name, arity, flags) in [
        ("sort", -2, vec!["write", "denyoom", "movablekeys"]),
        ("sort_ro", -2, vec!["readonly", "movablekeys"]),
    ] {
        let info = r.cmd(&["COMMAND", "INFO", name]).items();
        let info = info[0].items();
        assert_eq!(info[0], bulk(name));
        assert_eq!(info[1], int(arity));
        let got: Vec<Value> = flags.iter().map(|f| simple(f)).collect();
        assert_eq!(info[2], arr(got), "{name}");
        assert_eq!(info[3..6].to_vec(), vec![int(1), int(1), int(1)], "{name}");
        let docs = r.cmd(&["COMMAND", "DOCS", name]).items();
        assert_eq!(docs.len(), 2, "{name}");
    }
}

#[test]
fn sort_inside_multi_and_watch() {
    let (s, mut r) = start();
    cmd(&mut r, "RPUSH l 3 1 2");
    cmd(&mut r, "MSET w_1 c w_2 b w_3 a");
    assert_eq!(cmd(&mut r, "MULTI"), ok());
    assert_eq!(cmd(&mut r, "SORT l"), simple("QUEUED"));
    assert_eq!(cmd(&mut r, "SORT l BY w_* ALPHA GET w_*"), simple("QUEUED"));
    assert_eq!(
        cmd(&mut r, "SORT l BY nosort DESC STORE dst"),
        simple("QUEUED")
    );
    assert_eq!(cmd(&mut r, "SORT_RO l LIMIT x 1"), simple("QUEUED"));
    assert_eq!(
        cmd(&mut r, "EXEC"),
        arr(vec![
            bulks(&["1", "2", "3"]),
            bulks(&["a", "b", "c"]),
            int(3),
            err(NOT_INT),
        ])
    );
    assert_eq!(range(&mut r, "dst"), bulks(&["2", "1", "3"]));
    // A SORT ... STORE touches a WATCHed destination.
    let mut other = s.raw();
    assert_eq!(cmd(&mut r, "WATCH dst"), ok());
    assert_eq!(cmd(&mut other, "SORT l STORE dst"), int(3));
    cmd(&mut r, "MULTI");
    cmd(&mut r, "GET x");
    assert_eq!(cmd(&mut r, "EXEC"), Value::NullArray);
}

#[test]
fn store_wakes_clients_blocked_on_the_destination() {
    let (s, mut r) = start();
    cmd(&mut r, "RPUSH src c a b");
    // Several destinations, so that some live on another worker than the source.
    for dst in ["d1", "d2", "d3", "d4", "{src}d"] {
        let mut blocked = s.raw();
        blocked.send(
            format!(
                "*3\r\n$5\r\nBLPOP\r\n${}\r\n{dst}\r\n$1\r\n5\r\n",
                dst.len()
            )
            .as_bytes(),
        );
        // Wait until it is blocked.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let info = cmd(&mut r, "INFO clients");
            let text = match info {
                Value::Bulk(b) => String::from_utf8(b).unwrap(),
                v => panic!("{v:?}"),
            };
            if text.contains("blocked_clients:1\r") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "never blocked");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(r.cmd(&["SORT", "src", "ALPHA", "STORE", dst]), int(3));
        assert_eq!(blocked.read_value(), bulks(&[dst, "a"]), "{dst}");
        assert_eq!(range(&mut r, dst), bulks(&["b", "c"]));
    }
    // BLMPOP too.
    let mut blocked = s.raw();
    blocked.send(b"*5\r\n$6\r\nBLMPOP\r\n$1\r\n5\r\n$1\r\n1\r\n$2\r\nd9\r\n$4\r\nLEFT\r\n");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(cmd(&mut r, "SORT src ALPHA STORE d9"), int(3));
    assert_eq!(blocked.read_value(), arr(vec![bulk("d9"), bulks(&["a"])]));
}

#[test]
fn sorted_sets() {
    let (_s, mut r) = start();
    assert_eq!(cmd(&mut r, "ZADD z 1 a"), int(1));
    assert_eq!(cmd(&mut r, "ZADD z 5 b 2 c 10 d 3 e"), int(4));
    assert_eq!(
        cmd(&mut r, "SORT z ALPHA DESC"),
        bulks(&["e", "d", "c", "b", "a"])
    );
    assert_eq!(
        cmd(&mut r, "SORT z BY nosort"),
        bulks(&["a", "c", "e", "b", "d"])
    );
    assert_eq!(
        cmd(&mut r, "SORT z BY nosort DESC"),
        bulks(&["d", "b", "e", "c", "a"])
    );
    assert_eq!(
        cmd(&mut r, "SORT z BY nosort LIMIT 0 2"),
        bulks(&["a", "c"])
    );
    assert_eq!(
        cmd(&mut r, "SORT z BY nosort DESC LIMIT 1 2"),
        bulks(&["b", "e"])
    );
    assert_eq!(cmd(&mut r, "SORT z BY nosort LIMIT 5 10"), arr(vec![]));
    assert_eq!(
        cmd(&mut r, "SORT z BY nosort LIMIT -10 100"),
        bulks(&["a", "c", "e", "b", "d"])
    );
    assert_eq!(cmd(&mut r, "SORT z BY nosort DESC STORE d"), int(5));
    assert_eq!(range(&mut r, "d"), bulks(&["d", "b", "e", "c", "a"]));
    cmd(&mut r, "MSET w_a 5 w_b 4 w_c 3 w_d 2 w_e 1");
    assert_eq!(
        cmd(&mut r, "SORT z BY w_*"),
        bulks(&["e", "d", "c", "b", "a"])
    );
    assert_eq!(cmd(&mut r, "SORT z"), err(NOT_DOUBLE));
}

#[test]
fn stored_results_survive_a_restart() {
    skip_if_redis!();
    let mut s = Server::start(&[
        "--threads",
        "4",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]);
    let mut r = s.raw();
    cmd(&mut r, "RPUSH src 3 1 2");
    cmd(&mut r, "MSET v_1 one v_2 two v_3 three");
    assert_eq!(cmd(&mut r, "SORT src GET v_* STORE dst"), int(3));
    assert_eq!(cmd(&mut r, "SORT src STORE gone"), int(3));
    assert_eq!(cmd(&mut r, "SORT nokey STORE gone"), int(0));
    drop(r);
    s.restart();
    let mut r = s.raw();
    assert_eq!(range(&mut r, "dst"), bulks(&["one", "two", "three"]));
    assert_eq!(cmd(&mut r, "EXISTS gone"), int(0));
    assert_eq!(
        cmd(&mut r, "SORT src BY v_* ALPHA"),
        bulks(&["1", "3", "2"])
    );
}

/// keyspace_hits and keyspace_misses from INFO stats.
fn hits_misses(r: &mut Raw) -> (i64, i64) {
    let text = match cmd(r, "INFO stats") {
        Value::Bulk(b) => String::from_utf8(b).unwrap(),
        v => panic!("{v:?}"),
    };
    let field = |name: &str| -> i64 {
        info_fields(&text)
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.parse().unwrap())
            .unwrap()
    };
    (field("keyspace_hits"), field("keyspace_misses"))
}

#[test]
fn lookups_count_keyspace_hits_and_misses() {
    let (_s, mut r) = start();
    cmd(&mut r, "RPUSH l 1 2 3");
    cmd(&mut r, "MSET w_1 3 w_2 2");
    cmd(&mut r, "HSET h_3 f x");
    let before = hits_misses(&mut r);
    // The source (hit), BY w_1 w_2 (hits) w_3 (miss, scores 0), GET h_3 (hit) h_2 h_1
    // (misses).
    assert_eq!(
        cmd(&mut r, "SORT l BY w_* GET h_*->f"),
        arr(vec![bulk("x"), Value::Null, Value::Null])
    );
    let after = hits_misses(&mut r);
    assert_eq!((after.0 - before.0, after.1 - before.1), (4, 3));
    // A missing source is a miss; a wrong-type one a hit.
    cmd(&mut r, "SET s v");
    let before = hits_misses(&mut r);
    assert_eq!(cmd(&mut r, "SORT nokey"), arr(vec![]));
    assert_eq!(cmd(&mut r, "SORT s"), err(WRONGTYPE));
    let after = hits_misses(&mut r);
    assert_eq!((after.0 - before.0, after.1 - before.1), (1, 1));
}
