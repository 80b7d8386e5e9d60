//! SETBIT, GETBIT, BITCOUNT and BITPOS, end to end against a running server. The expected
//! replies are Redis 7.0's (checked by hand against Debian's redis-server).

mod common;

use common::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";
const BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BIT_VALUE: &str = "ERR bit is not an integer or out of range";

#[test]
fn setbit_and_getbit() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    // A missing key grows to the byte holding the bit; bits are MSB first.
    assert_eq!(r.cmd(&["SETBIT", "k", "7", "1"]), int(0));
    assert_eq!(r.cmd(&["GET", "k"]), Value::Bulk(vec![0x01]));
    assert_eq!(r.cmd(&["SETBIT", "k", "7", "1"]), int(1), "the old bit");
    assert_eq!(r.cmd(&["SETBIT", "k", "0", "1"]), int(0));
    assert_eq!(r.cmd(&["GET", "k"]), Value::Bulk(vec![0x81]));
    assert_eq!(r.cmd(&["SETBIT", "k", "7", "0"]), int(1));
    assert_eq!(r.cmd(&["GET", "k"]), Value::Bulk(vec![0x80]));
    // Zero padding past the end; clearing a bit still creates the key.
    assert_eq!(r.cmd(&["SETBIT", "k", "100", "1"]), int(0));
    assert_eq!(r.cmd(&["STRLEN", "k"]), int(13));
    assert_eq!(r.cmd(&["SETBIT", "z", "23", "0"]), int(0));
    assert_eq!(r.cmd(&["GET", "z"]), Value::Bulk(vec![0, 0, 0]));
    assert_eq!(r.cmd(&["GETBIT", "k", "0"]), int(1));
    assert_eq!(r.cmd(&["GETBIT", "k", "1"]), int(0));
    assert_eq!(r.cmd(&["GETBIT", "k", "100"]), int(1));
    assert_eq!(r.cmd(&["GETBIT", "k", "1000000"]), int(0), "past the end");
    assert_eq!(r.cmd(&["GETBIT", "missing", "5"]), int(0));
    assert_eq!(r.cmd(&["EXISTS", "missing"]), int(0));
    // On a string holding an integer: its characters' bits ('1' = 0x31).
    assert_eq!(r.cmd(&["SET", "n", "1"]), ok());
    assert_eq!(r.cmd(&["GETBIT", "n", "2"]), int(1));
    assert_eq!(r.cmd(&["SETBIT", "n", "6", "1"]), int(0));
    assert_eq!(r.cmd(&["GET", "n"]), bulk("3"));
    // The TTL is kept.
    assert_eq!(r.cmd(&["SET", "t", "a", "EX", "100"]), ok());
    assert_eq!(r.cmd(&["SETBIT", "t", "6", "1"]), int(0));
    assert_eq!(r.cmd(&["GET", "t"]), bulk("c"));
    assert!(r.cmd(&["TTL", "t"]).int() > 0);
    // Errors, and nothing written by a failed command.
    for bad in ["-1", "x", "4294967296", "99999999999999"] {
        assert_eq!(r.cmd(&["SETBIT", "e", bad, "1"]), err(BIT_OFFSET), "{bad}");
        assert_eq!(r.cmd(&["GETBIT", "e", bad]), err(BIT_OFFSET), "{bad}");
    }
    for bad in ["2", "-1", "x", ""] {
        assert_eq!(r.cmd(&["SETBIT", "e", "1", bad]), err(BIT_VALUE), "{bad:?}");
    }
    assert_eq!(r.cmd(&["EXISTS", "e"]), int(0));
    assert_eq!(r.cmd(&["LPUSH", "l", "a"]), int(1));
    assert_eq!(r.cmd(&["SETBIT", "l", "0", "1"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["GETBIT", "l", "0"]), err(WRONGTYPE));
    assert_eq!(
        r.cmd(&["SETBIT", "k"]),
        err("ERR wrong number of arguments for 'setbit' command")
    );
    // The largest offset Redis takes: the last bit of a 512 MB string.
    assert_eq!(r.cmd(&["GETBIT", "k", "4294967295"]), int(0));
}

#[test]
fn setbit_respects_proto_max_bulk_len() {
    let s = Server::start(&["--proto-max-bulk-len", "1048576"]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["SETBIT", "k", "8388608", "1"]), err(BIT_OFFSET));
    assert_eq!(r.cmd(&["SETBIT", "k", "8388607", "1"]), int(0));
    assert_eq!(r.cmd(&["STRLEN", "k"]), int(1 << 20));
}

#[test]
fn bitcount() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["BITCOUNT", "missing"]), int(0));
    assert_eq!(r.cmd(&["BITCOUNT", "missing", "0", "-1", "BIT"]), int(0));
    assert_eq!(r.cmd(&["SET", "k", "foobar"]), ok());
    assert_eq!(r.cmd(&["BITCOUNT", "k"]), int(26));
    assert_eq!(r.cmd(&["BITCOUNT", "k", "0", "0"]), int(4));
    assert_eq!(r.cmd(&["BITCOUNT", "k", "1", "1"]), int(6));
    assert_eq!(r.cmd(&["BITCOUNT", "k", "1", "1", "BYTE"]), int(6));
    assert_eq!(r.cmd(&["BITCOUNT", "k", "5", "30", "BIT"]), int(17));
    assert_eq!(r.cmd(&["BITCOUNT", "k", "-2", "-1"]), int(7));
    assert_eq!(r.cmd(&["BITCOUNT", "k", "-1", "-2"]), int(0));
    assert_eq!(r.cmd(&["BITCOUNT", "k", "100", "200"]), int(0));
    assert_eq!(r.cmd(&["BITCOUNT", "k", "-100", "100"]), int(26));
    assert_eq!(r.cmd(&["BITCOUNT", "k", "3", "2"]), int(0));
    // Bits inside one byte: 'f' = 0110 0110.
    assert_eq!(r.cmd(&["BITCOUNT", "k", "1", "2", "bit"]), int(2));
    assert_eq!(r.cmd(&["BITCOUNT", "k", "0", "0", "BIT"]), int(0));
    // Errors.
    assert_eq!(r.cmd(&["BITCOUNT", "k", "0"]), err(SYNTAX));
    assert_eq!(r.cmd(&["BITCOUNT", "k", "0", "1", "WORD"]), err(SYNTAX));
    assert_eq!(r.cmd(&["BITCOUNT", "k", "0", "1", "BIT", "x"]), err(SYNTAX));
    assert_eq!(r.cmd(&["BITCOUNT", "k", "a", "1"]), err(NOT_INT));
    assert_eq!(r.cmd(&["LPUSH", "l", "a"]), int(1));
    assert_eq!(r.cmd(&["BITCOUNT", "l"]), err(WRONGTYPE));
}

#[test]
fn bitpos() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    // A missing key is all zeros.
    assert_eq!(r.cmd(&["BITPOS", "missing", "0"]), int(0));
    assert_eq!(r.cmd(&["BITPOS", "missing", "1"]), int(-1));
    assert_eq!(r.cmd_bytes(&[b"SET", b"k", b"\xff\xf0\x00"]), ok());
    assert_eq!(r.cmd(&["BITPOS", "k", "0"]), int(12));
    assert_eq!(r.cmd(&["BITPOS", "k", "1"]), int(0));
    assert_eq!(r.cmd(&["BITPOS", "k", "1", "2"]), int(-1));
    assert_eq!(r.cmd(&["BITPOS", "k", "1", "-3", "-2"]), int(0));
    assert_eq!(r.cmd(&["BITPOS", "k", "0", "1", "1"]), int(12));
    assert_eq!(r.cmd(&["BITPOS", "k", "1", "7", "15", "BIT"]), int(7));
    assert_eq!(r.cmd(&["BITPOS", "k", "1", "12", "-1", "BIT"]), int(-1));
    assert_eq!(r.cmd(&["BITPOS", "k", "0", "3", "5", "BIT"]), int(-1));
    assert_eq!(
        r.cmd(&["BITPOS", "k", "1", "5", "3"]),
        int(-1),
        "an empty range"
    );
    // All ones: without an end the string continues with zero bits; with one, it does not.
    assert_eq!(r.cmd_bytes(&[b"SET", b"ones", b"\xff\xff"]), ok());
    assert_eq!(r.cmd(&["BITPOS", "ones", "0"]), int(16));
    assert_eq!(r.cmd(&["BITPOS", "ones", "0", "1"]), int(16));
    assert_eq!(
        r.cmd(&["BITPOS", "ones", "0", "3", "BIT"]),
        err(NOT_INT),
        "the end comes before the unit"
    );
    assert_eq!(r.cmd(&["BITPOS", "ones", "0", "0", "-1"]), int(-1));
    assert_eq!(r.cmd(&["BITPOS", "ones", "0", "0", "-1", "BIT"]), int(-1));
    // Errors.
    assert_eq!(
        r.cmd(&["BITPOS", "k", "2"]),
        err("ERR The bit argument must be 1 or 0.")
    );
    assert_eq!(r.cmd(&["BITPOS", "k", "x"]), err(NOT_INT));
    assert_eq!(r.cmd(&["BITPOS", "k", "1", "x"]), err(NOT_INT));
    assert_eq!(r.cmd(&["BITPOS", "k", "1", "0", "1", "WORD"]), err(SYNTAX));
    assert_eq!(
        r.cmd(&["BITPOS", "k", "1", "0", "1", "BIT", "x"]),
        err(SYNTAX)
    );
    assert_eq!(r.cmd(&["LPUSH", "l", "a"]), int(1));
    assert_eq!(r.cmd(&["BITPOS", "l", "1"]), err(WRONGTYPE));
}

#[test]
fn bits_survive_a_restart() {
    // Acknowledged under appendfsync always, then kill -9.
    let mut s = Server::start(&["--appendfsync", "always"]);
    let mut r = s.raw();
    for off in [0u32, 9, 1000, 65535] {
        assert_eq!(r.cmd(&["SETBIT", "b", &off.to_string(), "1"]), int(0));
    }
    drop(r);
    s.restart();
    let mut r = s.raw();
    assert_eq!(r.cmd(&["BITCOUNT", "b"]), int(4));
    assert_eq!(r.cmd(&["GETBIT", "b", "65535"]), int(1));
    assert_eq!(r.cmd(&["BITPOS", "b", "1", "1"]), int(9));
    assert_eq!(r.cmd(&["STRLEN", "b"]), int(8192));
}

#[test]
fn bitop_across_workers() {
    // Two workers: the keys below are spread over both, so BITOP runs as a multi-worker
    // command; the results are the same as on one worker.
    let s = Server::start(&["--threads", "2"]);
    let mut r = s.raw();
    assert_eq!(r.cmd_bytes(&[b"SET", b"a", b"\xf0\xff"]), ok());
    assert_eq!(r.cmd_bytes(&[b"SET", b"b", b"\x3c"]), ok());
    assert_eq!(r.cmd(&["SET", "c", "x", "EX", "100"]), ok());
    let get = |r: &mut Raw, k: &str| r.cmd(&["GET", k]);
    assert_eq!(r.cmd(&["BITOP", "AND", "dand", "a", "b"]), int(2));
    assert_eq!(get(&mut r, "dand"), Value::Bulk(vec![0x30, 0x00]));
    assert_eq!(r.cmd(&["BITOP", "or", "dor", "a", "b", "missing"]), int(2));
    assert_eq!(get(&mut r, "dor"), Value::Bulk(vec![0xfc, 0xff]));
    assert_eq!(r.cmd(&["BITOP", "XOR", "dxor", "a", "b"]), int(2));
    assert_eq!(get(&mut r, "dxor"), Value::Bulk(vec![0xcc, 0xff]));
    assert_eq!(r.cmd(&["BITOP", "NOT", "dnot", "b"]), int(1));
    assert_eq!(get(&mut r, "dnot"), Value::Bulk(vec![0xc3]));
    // A missing source is all zeros: AND with it gives zeros of the longest length.
    assert_eq!(r.cmd(&["BITOP", "AND", "dz", "a", "missing"]), int(2));
    assert_eq!(get(&mut r, "dz"), Value::Bulk(vec![0, 0]));
    // The destination may be a source; its TTL goes.
    assert_eq!(r.cmd(&["BITOP", "NOT", "c", "c"]), int(1));
    assert_eq!(get(&mut r, "c"), Value::Bulk(vec![!b'x']));
    assert_eq!(r.cmd(&["TTL", "c"]), int(-1));
    // Only empty sources: the destination is deleted.
    assert_eq!(
        r.cmd(&["BITOP", "OR", "dand", "missing", "missing2"]),
        int(0)
    );
    assert_eq!(r.cmd(&["EXISTS", "dand"]), int(0));
    // Errors leave the destination alone.
    assert_eq!(r.cmd(&["LPUSH", "l", "x"]), int(1));
    assert_eq!(r.cmd(&["BITOP", "AND", "dor", "a", "l"]), err(WRONGTYPE));
    assert_eq!(get(&mut r, "dor"), Value::Bulk(vec![0xfc, 0xff]));
    assert_eq!(r.cmd(&["BITOP", "NAND", "dor", "a"]), err(SYNTAX));
    assert_eq!(
        r.cmd(&["BITOP", "NOT", "dor", "a", "b"]),
        err("ERR BITOP NOT must be called with a single source key.")
    );
    assert_eq!(
        r.cmd(&["BITOP", "AND", "dor"]),
        err("ERR wrong number of arguments for 'bitop' command")
    );
    assert_eq!(get(&mut r, "dor"), Value::Bulk(vec![0xfc, 0xff]));
}

/// Redis 8 checks BITCOUNT's and BITPOS's arguments before it looks at the key: a missing
/// key no longer hides a syntax error or a bad integer.
#[test]
fn bitcount_and_bitpos_check_arguments_before_the_key() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    for key_exists in [false, true] {
        if key_exists {
            assert_eq!(r.cmd(&["SET", "s", "1"]), ok());
        }
        assert_eq!(r.cmd(&["BITCOUNT", "s", "0"]), err("ERR syntax error"));
        assert_eq!(
            r.cmd(&["BITCOUNT", "s", "0", "1", "hello"]),
            err("ERR syntax error")
        );
        assert_eq!(
            r.cmd(&["BITCOUNT", "s", "a", "b"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(
            r.cmd(&["BITPOS", "s", "0", "1", "hello", "hello2"]),
            err("ERR syntax error")
        );
        assert_eq!(
            r.cmd(&["BITPOS", "s", "0", "0", "1", "hello"]),
            err("ERR syntax error")
        );
        assert_eq!(
            r.cmd(&["BITPOS", "s", "0", "a"]),
            err("ERR value is not an integer or out of range")
        );
    }
    r.cmd(&["DEL", "s"]);
    assert_eq!(r.cmd(&["BITCOUNT", "s", "0", "-1"]), int(0));
    assert_eq!(r.cmd(&["BITPOS", "s", "1", "0", "-1", "BIT"]), int(-1));
}

/// SETBIT and BITFIELD write (and count a change in `rdb_changes_since_last_save`) only when
/// the key is new, the string grows or a bit changes, as Redis 8.
#[test]
fn setbit_and_bitfield_count_only_real_changes() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    let dirty = |r: &mut Raw| info_u64(r, "persistence", "rdb_changes_since_last_save").unwrap();
    let d0 = dirty(&mut r);
    r.cmd(&["SETBIT", "foo", "0", "0"]);
    r.cmd(&["BITFIELD", "foo2", "SET", "i5", "0", "0"]);
    let d1 = dirty(&mut r);
    assert_eq!(d1, d0 + 2, "new keys always count");
    r.cmd(&["SETBIT", "foo", "0", "0"]);
    r.cmd(&["BITFIELD", "foo2", "SET", "i5", "0", "0"]);
    assert_eq!(dirty(&mut r), d1, "no change");
    for v in ["1", "1", "0", "0"] {
        r.cmd(&["SETBIT", "foo", "0", v]);
        r.cmd(&["BITFIELD", "foo2", "SET", "i5", "0", v]);
    }
    let d2 = dirty(&mut r);
    assert_eq!(d2, d1 + 4, "a change and a no change, twice each");
    r.cmd(&["SETBIT", "foo", "90", "0"]);
    r.cmd(&["BITFIELD", "foo2", "SET", "i5", "90", "0"]);
    assert_eq!(dirty(&mut r), d2 + 2, "a longer string counts");
    assert_eq!(r.cmd(&["GETBIT", "foo", "0"]), int(0));
    assert_eq!(r.cmd(&["STRLEN", "foo"]), int(12));
}
