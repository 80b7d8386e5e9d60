//! BITFIELD and BITFIELD_RO end to end, and a differential test against the reference
//! redis-server (`SKERRY_REDIS_SERVER`): seeded random operations of every type and
//! overflow mode, every reply and the string's bytes compared.
//!
//! `SKERRY_BITFIELD_DIFF_OPS` sets the number of random operations per run (default 3000).

mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const TYPE_ERR: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
const OFFSET_ERR: &str = "ERR bit offset is not an integer or out of range";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[test]
fn set_get_incrby_basics() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd(&["BITFIELD", "k", "SET", "i8", "0", "-100", "GET", "i8", "0"]),
        arr(vec![int(0), int(-100)])
    );
    assert_eq!(r.cmd(&["GET", "k"]), Value::Bulk(vec![0x9c]));
    assert_eq!(
        r.cmd(&[
            "BITFIELD", "k", "SET", "u8", "0", "255", "INCRBY", "u8", "0", "100", "GET", "u8", "0"
        ]),
        arr(vec![int(156), int(99), int(99)])
    );
    // `#n`: the n-th field of the type's width.
    r.cmd(&["DEL", "k"]);
    r.cmd(&[
        "BITFIELD", "k", "SET", "u8", "#0", "65", "SET", "u8", "#1", "66", "SET", "u8", "#2", "67",
    ]);
    assert_eq!(r.cmd(&["GET", "k"]), bulk("ABC"));
    // Fields across byte boundaries, i64 and u63.
    assert_eq!(
        r.cmd(&["BITFIELD", "w", "SET", "i64", "3", "-2", "GET", "i64", "3", "GET", "u63", "4"]),
        arr(vec![int(0), int(-2), int(i64::MAX - 1)])
    );
    assert_eq!(r.cmd(&["STRLEN", "w"]), int(9));
    // Reads past the end are zeros; a missing key reads as zeros.
    assert_eq!(
        r.cmd(&["BITFIELD", "k", "GET", "u16", "100", "GET", "i4", "4"]),
        arr(vec![int(0), int(1)])
    );
    assert_eq!(
        r.cmd(&["BITFIELD", "missing", "GET", "u8", "0"]),
        arr(vec![int(0)])
    );
    assert_eq!(r.cmd(&["EXISTS", "missing"]), int(0));
    assert_eq!(r.cmd(&["BITFIELD", "k"]), arr(vec![]));
}

#[test]
fn overflow_modes() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["BITFIELD", "k", "SET", "u8", "0", "100"]);
    assert_eq!(
        r.cmd(&["BITFIELD", "k", "OVERFLOW", "WRAP", "INCRBY", "u8", "0", "257"]),
        arr(vec![int(101)])
    );
    assert_eq!(
        r.cmd(&[
            "BITFIELD", "k", "OVERFLOW", "SAT", "INCRBY", "u8", "0", "257", "INCRBY", "u8", "0",
            "-300"
        ]),
        arr(vec![int(255), int(0)])
    );
    assert_eq!(
        r.cmd(&["BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "256", "GET", "u8", "0"]),
        arr(vec![Value::Null, int(0)])
    );
    r.cmd(&["BITFIELD", "s", "SET", "i8", "0", "100"]);
    assert_eq!(
        r.cmd(&["BITFIELD", "s", "INCRBY", "i8", "0", "100"]),
        arr(vec![int(-56)])
    );
    assert_eq!(
        r.cmd(&[
            "BITFIELD", "s", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "-200", "INCRBY", "i8", "0",
            "1000"
        ]),
        arr(vec![int(-128), int(127)])
    );
    // i64 at its limits.
    assert_eq!(
        r.cmd(&[
            "BITFIELD",
            "b",
            "SET",
            "i64",
            "0",
            &i64::MAX.to_string(),
            "INCRBY",
            "i64",
            "0",
            "1"
        ]),
        arr(vec![int(0), int(i64::MIN)])
    );
    assert_eq!(
        r.cmd(&["BITFIELD", "b", "OVERFLOW", "FAIL", "INCRBY", "i64", "0", "-1"]),
        arr(vec![Value::Null])
    );
    // A failed write on a missing key still creates it, padded with zeros (as Redis).
    assert_eq!(
        r.cmd(&["BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "10", "7"]),
        arr(vec![Value::Null])
    );
    assert_eq!(r.cmd(&["GET", "f"]), Value::Bulk(vec![0, 0]));
}

#[test]
fn errors() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    for t in ["u64", "i65", "i0", "x8", "u", "i08", "I8"] {
        assert_eq!(
            r.cmd(&["BITFIELD", "k", "GET", t, "0"]),
            err(TYPE_ERR),
            "{t}"
        );
    }
    for o in ["-1", "x", "#-1", "4294967296", "#536870912"] {
        assert_eq!(
            r.cmd(&["BITFIELD", "k", "GET", "u8", o]),
            err(OFFSET_ERR),
            "{o}"
        );
    }
    assert_eq!(
        r.cmd(&["BITFIELD", "k", "SET", "u8", "0", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        r.cmd(&["BITFIELD", "k", "OVERFLOW", "NOPE", "GET", "u8", "0"]),
        err("ERR Invalid OVERFLOW type specified")
    );
    assert_eq!(
        r.cmd(&["BITFIELD", "k", "GET", "u8"]),
        err("ERR syntax error")
    );
    assert_eq!(r.cmd(&["BITFIELD", "k", "FOO"]), err("ERR syntax error"));
    assert_eq!(
        r.cmd(&["BITFIELD_RO", "k", "SET", "u8", "0", "1"]),
        err("ERR BITFIELD_RO only supports the GET subcommand")
    );
    assert_eq!(
        r.cmd(&["BITFIELD_RO", "k", "INCRBY", "u8", "0", "1"]),
        err("ERR BITFIELD_RO only supports the GET subcommand")
    );
    assert_eq!(r.cmd(&["EXISTS", "k"]), int(0));
    r.cmd(&["LPUSH", "l", "x"]);
    assert_eq!(r.cmd(&["BITFIELD", "l", "GET", "u8", "0"]), err(WRONGTYPE));
    assert_eq!(
        r.cmd(&["BITFIELD", "l", "SET", "u8", "0", "1"]),
        err(WRONGTYPE)
    );
    assert_eq!(
        r.cmd(&["BITFIELD_RO", "l", "GET", "u8", "0"]),
        err(WRONGTYPE)
    );
    r.cmd(&["SET", "k", "A"]);
    assert_eq!(
        r.cmd(&["BITFIELD_RO", "k", "GET", "u8", "0", "GET", "u4", "#1"]),
        arr(vec![int(65), int(1)])
    );
}

#[test]
fn keeps_the_ttl() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.cmd(&["SET", "k", "x", "EX", "1000"]);
    r.cmd(&["BITFIELD", "k", "SET", "u8", "16", "7"]);
    let ttl = match r.cmd(&["TTL", "k"]) {
        Value::Integer(t) => t,
        other => panic!("{other:?}"),
    };
    assert!(ttl > 990, "{ttl}");
}

// ----- differential test against the reference Redis -----

/// A random value near the interesting limits of a `bits`-bit field.
fn value(rng: &mut StdRng, bits: u32, signed: bool) -> i64 {
    let max: i128 = if signed {
        (1i128 << (bits - 1)) - 1
    } else {
        (1i128 << bits) - 1
    };
    let v: i128 = match rng.random_range(0..6) {
        0 => max + rng.random_range(-3..=3),
        1 => -max + rng.random_range(-3..=3),
        2 => rng.random_range(-20..=20),
        3 => i128::from(rng.random::<i64>()),
        4 => {
            let shift = rng.random_range(0..bits.min(63));
            (1i128 << shift) * if rng.random_bool(0.5) { 1 } else { -1 }
        }
        _ => rng.random_range(-max..=max.max(1)),
    };
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

fn differential(threads: &str) {
    if is_redis() {
        return;
    }
    let mut d =
        diff::Diff::on_threads("BITFIELD", threads, 0xb17f_1e1d, false).expect("any reference");
    let (n, seed) = (d.ops, d.seed);
    let mut rng = StdRng::seed_from_u64(seed);
    let keys = ["bf:a", "bf:b", "bf:c"];
    let mut both = |args: &[String], step: usize| {
        d.both(args, format_args!("step {step}"));
    };
    for step in 0..n {
        let key = keys[rng.random_range(0..keys.len())];
        let ro = rng.random_bool(0.1);
        let mut c = vec![
            if ro { "BITFIELD_RO" } else { "BITFIELD" }.to_string(),
            key.to_string(),
        ];
        for _ in 0..rng.random_range(1..5) {
            if rng.random_bool(0.2) {
                c.push("OVERFLOW".into());
                c.push(["WRAP", "SAT", "FAIL", "wrap", "sat"][rng.random_range(0..5)].into());
            }
            let signed = rng.random_bool(0.5);
            let bits = if signed {
                rng.random_range(1..=64)
            } else {
                rng.random_range(1..=63)
            };
            let ty = format!("{}{bits}", if signed { "i" } else { "u" });
            let offset = if rng.random_bool(0.3) {
                format!("#{}", rng.random_range(0..8))
            } else {
                rng.random_range(0..100).to_string()
            };
            match rng.random_range(0..10) {
                0..=3 => c.extend(["GET".into(), ty, offset]),
                4..=6 => {
                    let v = value(&mut rng, bits, signed);
                    c.extend(["SET".into(), ty, offset, v.to_string()]);
                }
                _ => {
                    let v = value(&mut rng, bits, signed);
                    c.extend(["INCRBY".into(), ty, offset, v.to_string()]);
                }
            }
        }
        // Now and then an error case.
        if rng.random_bool(0.02) {
            c.extend([
                "GET".into(),
                ["u64", "i0", "x"][rng.random_range(0..3)].into(),
                "0".into(),
            ]);
        }
        both(&c, step);
        if rng.random_bool(0.02) {
            both(&["DEL".into(), key.into()], step);
        }
        if step % 25 == 0 || step + 1 == n {
            for k in keys {
                both(&["GET".into(), k.into()], step);
            }
        }
    }
    eprintln!("threads {threads}: {n} BITFIELD ops, seed {seed}");
}

#[test]
fn differential_random_ops_one_worker() {
    differential("1");
}

#[test]
fn differential_random_ops_two_workers() {
    differential("2");
}
