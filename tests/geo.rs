//! GEO commands end to end: GEOADD, GEOPOS, GEODIST, GEOHASH, GEOSEARCH, GEOSEARCHSTORE and
//! the GEORADIUS family, replies and errors as Redis 8.0 gives them (coordinates as 8.0's
//! shortest doubles, distances with 4 decimals), STORE across workers, and a differential
//! test against the reference Redis 8.0.2 comparing every reply byte for byte.
//!
//! The tests other than the differential one also pass against Redis 8.0
//! (`SKERRY_TEST_SERVER=redis` with `SKERRY_REDIS_SERVER` pointing at 8.0: the coordinate
//! texts need Redis >= 7.2's double formatting).

mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SYNTAX: &str = "ERR syntax error";
const NOT_FLOAT: &str = "ERR value is not a valid float";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const UNIT: &str = "ERR unsupported unit provided. please use M, KM, FT, MI";

fn start() -> (Server, Raw) {
    let s = Server::start(&["--threads", "2"]);
    let r = s.raw();
    (s, r)
}

fn sicily(r: &mut Raw) {
    assert_eq!(
        r.cmd(&[
            "GEOADD",
            "Sicily",
            "13.361389",
            "38.115556",
            "Palermo",
            "15.087269",
            "37.502669",
            "Catania"
        ]),
        Value::Integer(2)
    );
}

#[test]
fn geoadd_stores_the_52_bit_score_and_geopos_decodes_it() {
    let (_s, mut r) = start();
    sicily(&mut r);
    assert_eq!(
        r.cmd(&["ZSCORE", "Sicily", "Palermo"]),
        bulk("3479099956230698")
    );
    assert_eq!(
        r.cmd(&["GEOPOS", "Sicily", "Palermo", "nobody", "Catania"]),
        Value::Array(vec![
            bulks(&["13.361389338970184", "38.1155563954963"]),
            Value::NullArray,
            bulks(&["15.087267458438873", "37.50266842333162"]),
        ])
    );
    assert_eq!(
        r.cmd(&["GEOPOS", "nokey", "a"]),
        Value::Array(vec![Value::NullArray])
    );
    assert_eq!(r.cmd(&["TYPE", "Sicily"]), Value::Simple("zset".into()));
    // The poles and the antimeridian: the limits are inclusive.
    assert_eq!(
        r.cmd(&[
            "GEOADD",
            "edge",
            "180",
            "85.05112878",
            "ne",
            "-180",
            "-85.05112878",
            "sw"
        ]),
        Value::Integer(2)
    );
    assert_eq!(
        r.cmd(&["GEOPOS", "edge", "ne", "sw"]),
        Value::Array(vec![
            // 180 overflows the 26 longitude bits: the decoded cell is clamped to the limits.
            bulks(&["180", "85.05112878"]),
            bulks(&["-179.99999731779099", "-85.05112751263943"]),
        ])
    );
}

#[test]
fn geoadd_options_and_errors() {
    let (_s, mut r) = start();
    sicily(&mut r);
    // NX adds only new members; XX only updates; CH counts changes.
    assert_eq!(
        r.cmd(&["GEOADD", "Sicily", "NX", "1", "1", "Palermo", "2", "2", "Rome"]),
        Value::Integer(1)
    );
    assert_eq!(
        r.cmd(&["GEOADD", "Sicily", "XX", "CH", "1", "1", "Palermo", "3", "3", "Milan"]),
        Value::Integer(1)
    );
    assert_eq!(r.cmd(&["ZCARD", "Sicily"]), Value::Integer(3));
    assert_eq!(
        r.cmd(&["GEOADD", "Sicily", "CH", "1", "1", "Palermo"]),
        Value::Integer(0)
    );
    assert_eq!(
        r.cmd(&["GEOADD", "Sicily", "NX", "XX", "1", "1", "a"]),
        err(SYNTAX)
    );
    assert_eq!(
        r.cmd(&["GEOADD", "Sicily", "1", "1", "a", "2"]),
        err(SYNTAX)
    );
    // GT is no GEOADD option: it is read as a longitude.
    assert_eq!(r.cmd(&["GEOADD", "Sicily", "GT", "1", "1"]), err(NOT_FLOAT));
    assert_eq!(
        r.cmd(&["GEOADD", "Sicily", "200", "0", "a"]),
        err("ERR invalid longitude,latitude pair 200.000000,0.000000")
    );
    assert_eq!(
        r.cmd(&["GEOADD", "Sicily", "0", "85.06", "a"]),
        err("ERR invalid longitude,latitude pair 0.000000,85.060000")
    );
    assert_eq!(
        r.cmd(&["GEOADD", "Sicily", "-inf", "0", "a"]),
        err("ERR invalid longitude,latitude pair -inf,0.000000")
    );
    assert_eq!(r.cmd(&["GEOADD", "Sicily", "x", "0", "a"]), err(NOT_FLOAT));
    // A bad pair anywhere refuses the whole command.
    assert_eq!(
        r.cmd(&["GEOADD", "new", "1", "1", "a", "1", "100", "b"]),
        err("ERR invalid longitude,latitude pair 1.000000,100.000000")
    );
    assert_eq!(r.cmd(&["EXISTS", "new"]), Value::Integer(0));
    r.cmd(&["SET", "str", "x"]);
    assert_eq!(r.cmd(&["GEOADD", "str", "1", "1", "a"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["GEOPOS", "str", "a"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["GEODIST", "str", "a", "b"]), err(WRONGTYPE));
    assert_eq!(r.cmd(&["GEOHASH", "str", "a"]), err(WRONGTYPE));
    assert_eq!(
        r.cmd(&[
            "GEOSEARCH",
            "str",
            "FROMLONLAT",
            "0",
            "0",
            "BYRADIUS",
            "1",
            "m"
        ]),
        err(WRONGTYPE)
    );
    assert_eq!(
        r.cmd(&["GEOADD", "k", "1", "1"]),
        err("ERR wrong number of arguments for 'geoadd' command")
    );
}

#[test]
fn geodist_and_geohash() {
    let (_s, mut r) = start();
    sicily(&mut r);
    let d = |r: &mut Raw, unit: Option<&str>| {
        let mut a = vec!["GEODIST", "Sicily", "Palermo", "Catania"];
        a.extend(unit);
        r.cmd(&a)
    };
    assert_eq!(d(&mut r, None), bulk("166274.1516"));
    assert_eq!(d(&mut r, Some("km")), bulk("166.2742"));
    assert_eq!(d(&mut r, Some("MI")), bulk("103.3182"));
    assert_eq!(d(&mut r, Some("ft")), bulk("545518.8700"));
    assert_eq!(d(&mut r, Some("m")), bulk("166274.1516"));
    assert_eq!(d(&mut r, Some("yd")), err(UNIT));
    assert_eq!(
        r.cmd(&["GEODIST", "Sicily", "Palermo", "Palermo"]),
        bulk("0.0000")
    );
    assert_eq!(
        r.cmd(&["GEODIST", "Sicily", "Palermo", "nobody"]),
        Value::Null
    );
    assert_eq!(r.cmd(&["GEODIST", "nokey", "a", "b"]), Value::Null);
    assert_eq!(
        r.cmd(&["GEODIST", "Sicily", "Palermo", "Catania", "km", "x"]),
        err(SYNTAX)
    );
    assert_eq!(
        r.cmd(&["GEOHASH", "Sicily", "Palermo", "Catania", "x"]),
        Value::Array(vec![bulk("sqc8b49rny0"), bulk("sqdtr74hyu0"), Value::Null])
    );
    assert_eq!(
        r.cmd(&["GEOHASH", "nokey", "a", "b"]),
        Value::Array(vec![Value::Null, Value::Null])
    );
}

#[test]
fn geosearch_shapes_orders_and_options() {
    let (_s, mut r) = start();
    sicily(&mut r);
    r.cmd(&[
        "GEOADD",
        "Sicily",
        "12.758489",
        "38.788135",
        "edge1",
        "17.241510",
        "38.788135",
        "edge2",
    ]);
    let s = |r: &mut Raw, a: &[&str]| {
        let mut v = vec!["GEOSEARCH", "Sicily"];
        v.extend_from_slice(a);
        r.cmd(&v)
    };
    assert_eq!(
        s(
            &mut r,
            &["FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC"]
        ),
        bulks(&["Catania", "Palermo"])
    );
    assert_eq!(
        s(
            &mut r,
            &["FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "ASC"]
        ),
        bulks(&["Catania", "Palermo", "edge2", "edge1"])
    );
    assert_eq!(
        s(
            &mut r,
            &[
                "FROMLONLAT",
                "15",
                "37",
                "BYRADIUS",
                "200",
                "km",
                "DESC",
                "COUNT",
                "1"
            ]
        ),
        bulks(&["Palermo"])
    );
    assert_eq!(
        s(
            &mut r,
            &[
                "FROMMEMBER",
                "Palermo",
                "BYRADIUS",
                "200",
                "km",
                "WITHDIST",
                "WITHHASH",
                "WITHCOORD",
                "ASC"
            ]
        ),
        Value::Array(vec![
            Value::Array(vec![
                bulk("Palermo"),
                bulk("0.0000"),
                Value::Integer(3479099956230698),
                bulks(&["13.361389338970184", "38.1155563954963"]),
            ]),
            Value::Array(vec![
                bulk("edge1"),
                bulk("91.4007"),
                Value::Integer(3479273021651468),
                bulks(&["12.75848776102066", "38.78813451624225"]),
            ]),
            Value::Array(vec![
                bulk("Catania"),
                bulk("166.2742"),
                Value::Integer(3479447370796909),
                bulks(&["15.087267458438873", "37.50266842333162"]),
            ]),
        ])
    );
    // Nothing found, a missing key: empty arrays.
    assert_eq!(
        s(&mut r, &["FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"]),
        Value::Array(vec![])
    );
    assert_eq!(
        r.cmd(&[
            "GEOSEARCH",
            "nokey",
            "FROMMEMBER",
            "x",
            "BYRADIUS",
            "1",
            "m"
        ]),
        Value::Array(vec![])
    );
    // COUNT ANY stops at the first COUNT points found (unsorted unless asked).
    match s(
        &mut r,
        &[
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "500",
            "km",
            "COUNT",
            "2",
            "ANY",
        ],
    ) {
        Value::Array(v) => assert_eq!(v.len(), 2),
        v => panic!("{v:?}"),
    }
    // Errors, in Redis's order.
    let e = |r: &mut Raw, a: &[&str], m: &str| assert_eq!(s(r, a), err(m));
    e(
        &mut r,
        &["FROMLONLAT", "15", "37", "BYRADIUS", "-1", "km"],
        "ERR radius cannot be negative",
    );
    e(
        &mut r,
        &["FROMLONLAT", "15", "37", "BYRADIUS", "x", "km"],
        "ERR need numeric radius",
    );
    e(
        &mut r,
        &["FROMLONLAT", "15", "37", "BYBOX", "x", "1", "km"],
        "ERR need numeric width",
    );
    e(
        &mut r,
        &["FROMLONLAT", "15", "37", "BYBOX", "1", "x", "km"],
        "ERR need numeric height",
    );
    e(
        &mut r,
        &["FROMLONLAT", "15", "37", "BYBOX", "1", "-1", "km"],
        "ERR height or width cannot be negative",
    );
    e(
        &mut r,
        &["FROMLONLAT", "15", "37", "BYRADIUS", "1", "yd"],
        UNIT,
    );
    e(
        &mut r,
        &["FROMLONLAT", "15", "95", "BYRADIUS", "1", "km"],
        "ERR invalid longitude,latitude pair 15.000000,95.000000",
    );
    e(
        &mut r,
        &["FROMMEMBER", "nobody", "BYRADIUS", "1", "km"],
        "ERR could not decode requested zset member",
    );
    e(
        &mut r,
        &["BYRADIUS", "1", "km", "ASC", "WITHDIST"],
        "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH",
    );
    e(
        &mut r,
        &[
            "FROMMEMBER",
            "Palermo",
            "FROMLONLAT",
            "1",
            "1",
            "BYRADIUS",
            "1",
            "km",
        ],
        SYNTAX,
    );
    e(
        &mut r,
        &["FROMMEMBER", "Palermo", "WITHDIST", "ASC", "WITHHASH"],
        "ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH",
    );
    e(
        &mut r,
        &[
            "FROMMEMBER",
            "Palermo",
            "BYRADIUS",
            "1",
            "km",
            "BYBOX",
            "1",
            "1",
            "km",
        ],
        SYNTAX,
    );
    e(
        &mut r,
        &["FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "ANY"],
        "ERR the ANY argument requires COUNT argument",
    );
    e(
        &mut r,
        &["FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "COUNT", "0"],
        "ERR COUNT must be > 0",
    );
    e(
        &mut r,
        &["FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "COUNT", "x"],
        "ERR value is not an integer or out of range",
    );
    e(
        &mut r,
        &["FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "STORE", "x"],
        SYNTAX,
    );
    assert_eq!(
        r.cmd(&[
            "geosearch",
            "Sicily",
            "BYRADIUS",
            "1",
            "km",
            "DESC",
            "WITHCOORD"
        ]),
        err("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geosearch")
    );
}

#[test]
fn georadius_family_and_store() {
    let (_s, mut r) = start();
    sicily(&mut r);
    assert_eq!(
        r.cmd(&[
            "GEORADIUS",
            "Sicily",
            "15",
            "37",
            "200",
            "km",
            "WITHDIST",
            "ASC"
        ]),
        Value::Array(vec![
            Value::Array(vec![bulk("Catania"), bulk("56.4413")]),
            Value::Array(vec![bulk("Palermo"), bulk("190.4424")]),
        ])
    );
    assert_eq!(
        r.cmd(&["GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "DESC"]),
        bulks(&["Palermo", "Catania"])
    );
    assert_eq!(
        r.cmd(&["GEORADIUSBYMEMBER", "Sicily", "Palermo", "100", "km"]),
        bulks(&["Palermo"])
    );
    assert_eq!(
        r.cmd(&[
            "GEORADIUSBYMEMBER_RO",
            "Sicily",
            "Palermo",
            "200",
            "km",
            "ASC"
        ]),
        bulks(&["Palermo", "Catania"])
    );
    assert_eq!(
        r.cmd(&["GEORADIUSBYMEMBER", "Sicily", "nobody", "200", "km"]),
        err("ERR could not decode requested zset member")
    );
    // A missing key: the radius and unit of BYMEMBER are not even read.
    assert_eq!(
        r.cmd(&["GEORADIUSBYMEMBER", "nokey", "a", "x", "yd"]),
        Value::Array(vec![])
    );
    assert_eq!(
        r.cmd(&["GEORADIUS", "nokey", "1", "1", "x", "km"]),
        err("ERR need numeric radius")
    );
    assert_eq!(
        r.cmd(&[
            "GEORADIUS_RO",
            "Sicily",
            "15",
            "37",
            "200",
            "km",
            "STORE",
            "d"
        ]),
        err(SYNTAX)
    );
    assert_eq!(
        r.cmd(&["GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHCOORD", "STORE", "d"]),
        err("ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
    );
    // STORE and STOREDIST, to destinations on either worker.
    for dst in ["d1", "d2", "d3", "d4", "d5", "d6"] {
        assert_eq!(
            r.cmd(&["GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", dst]),
            Value::Integer(2)
        );
        assert_eq!(
            r.cmd(&["ZRANGE", dst, "0", "-1", "WITHSCORES"]),
            bulks(&["Palermo", "3479099956230698", "Catania", "3479447370796909"])
        );
        assert_eq!(
            r.cmd(&[
                "GEORADIUSBYMEMBER",
                "Sicily",
                "Palermo",
                "200",
                "km",
                "STOREDIST",
                dst,
                "COUNT",
                "1"
            ]),
            Value::Integer(1)
        );
        assert_eq!(r.cmd(&["ZRANGE", dst, "0", "-1"]), bulks(&["Palermo"]));
        assert_eq!(r.cmd(&["ZSCORE", dst, "Palermo"]), bulk("0"));
        assert_eq!(
            r.cmd(&[
                "GEOSEARCHSTORE",
                dst,
                "Sicily",
                "FROMLONLAT",
                "15",
                "37",
                "BYBOX",
                "400",
                "400",
                "km",
                "STOREDIST",
                "DESC"
            ]),
            Value::Integer(2)
        );
        assert_eq!(
            r.cmd(&["ZRANGE", dst, "0", "-1"]),
            bulks(&["Catania", "Palermo"])
        );
        assert_eq!(
            r.cmd(&["GEODIST", dst, "Catania", "Palermo"]),
            // Distances as scores decode to points near (-180, -85).
            bulk("0.7298")
        );
        // An empty result deletes the destination, whatever it held.
        r.cmd(&["SET", dst, "x"]);
        assert_eq!(
            r.cmd(&[
                "GEOSEARCHSTORE",
                dst,
                "Sicily",
                "FROMLONLAT",
                "0",
                "0",
                "BYRADIUS",
                "1",
                "m"
            ]),
            Value::Integer(0)
        );
        assert_eq!(r.cmd(&["EXISTS", dst]), Value::Integer(0));
        r.cmd(&["SET", dst, "x"]);
        assert_eq!(
            r.cmd(&["GEORADIUS", "nokey", "15", "37", "200", "km", "STORE", dst]),
            Value::Integer(0)
        );
        assert_eq!(r.cmd(&["EXISTS", dst]), Value::Integer(0));
    }
    assert_eq!(
        r.cmd(&[
            "GEOSEARCHSTORE",
            "d",
            "Sicily",
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "200",
            "km",
            "WITHDIST"
        ]),
        err("ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
    );
    // STORE keeps no TTL of the old destination.
    r.cmd(&["SET", "ttl", "x", "EX", "100"]);
    r.cmd(&[
        "GEOSEARCHSTORE",
        "ttl",
        "Sicily",
        "FROMLONLAT",
        "15",
        "37",
        "BYRADIUS",
        "200",
        "km",
    ]);
    assert_eq!(r.cmd(&["TTL", "ttl"]), Value::Integer(-1));
}

#[test]
fn resp3_coordinates_are_doubles() {
    let (_s, mut r) = start();
    sicily(&mut r);
    r.cmd(&["HELLO", "3"]);
    assert_eq!(
        r.cmd_raw(&["GEOPOS", "Sicily", "Palermo", "x"]),
        b"*2\r\n*2\r\n,13.361389338970184\r\n,38.1155563954963\r\n_\r\n".to_vec()
    );
    assert_eq!(
        r.cmd_raw(&["GEODIST", "Sicily", "Palermo", "Catania", "km"]),
        b"$8\r\n166.2742\r\n".to_vec()
    );
}

// ----- differential test against the reference Redis 8.0.2 -----

const SRC_KEYS: &[&str] = &["geo:a", "geo:b", "geo:c", "geo:d", "str", "missing"];
const DST_KEYS: &[&str] = &["dst:1", "dst:2", "dst:3", "geo:b"];
const CENTRES: &[(f64, f64)] = &[
    (13.36, 38.11),
    (-179.9, 0.5),
    (179.95, -10.0),
    (0.0, 85.0),
    (100.0, -84.9),
    (0.0, 0.0),
];

fn num(rng: &mut StdRng, v: f64) -> String {
    match rng.random_range(0..4) {
        0 => format!("{v}"),
        1 => format!("{v:.3}"),
        _ => format!("{v:.6}"),
    }
}

fn coord(rng: &mut StdRng) -> (String, String) {
    let p = rng.random_range(0..100);
    let (lon, lat) = if p < 10 {
        // A few exact points shared by many members: equal distances, ties to order.
        let (x, y) = [
            ("13.361389", "38.115556"),
            ("13.4", "38.2"),
            ("-179.95", "0.4"),
            ("0.05", "84.99"),
        ][rng.random_range(0..4)];
        return (x.into(), y.into());
    } else if p < 50 {
        let (cx, cy) = CENTRES[rng.random_range(0..CENTRES.len())];
        let d = if rng.random_bool(0.5) { 0.3 } else { 0.02 };
        let lon = (cx + rng.random_range(-d..d)).clamp(-180.0, 180.0);
        let lat = (cy + rng.random_range(-d..d)).clamp(-85.05112878, 85.05112878);
        (lon, lat)
    } else if p < 57 {
        let lon = [-180.0, 180.0, 179.999999, -179.999999, 0.0][rng.random_range(0..5)];
        let lat = [85.05112878, -85.05112878, 85.05, -85.05, 0.0][rng.random_range(0..5)];
        (lon, lat)
    } else if p < 64 {
        let lat =
            rng.random_range(84.0..85.05112878) * if rng.random_bool(0.5) { 1.0 } else { -1.0 };
        (rng.random_range(-180.0..180.0), lat)
    } else if p < 71 {
        let lon = rng.random_range(179.0..180.0) * if rng.random_bool(0.5) { 1.0 } else { -1.0 };
        (lon, rng.random_range(-85.0..85.0))
    } else if p < 97 {
        (
            rng.random_range(-180.0..180.0),
            rng.random_range(-85.05112878..85.05112878),
        )
    } else {
        // Out of the limits, or not a number at all.
        return match rng.random_range(0..5) {
            0 => ("180.0001".into(), "0".into()),
            1 => ("0".into(), "85.0512".into()),
            2 => ("abc".into(), "1".into()),
            3 => ("1".into(), "-inf".into()),
            _ => ("-180.5".into(), "-90".into()),
        };
    };
    (num(rng, lon), num(rng, lat))
}

fn member(rng: &mut StdRng, key: &str) -> String {
    let pool = if key == "geo:a" { 160 } else { 60 };
    format!("m{}", rng.random_range(0..pool))
}

fn unit(rng: &mut StdRng) -> (&'static str, f64) {
    [
        ("m", 1.0),
        ("km", 1000.0),
        ("KM", 1000.0),
        ("ft", 0.3048),
        ("mi", 1609.34),
        ("Mi", 1609.34),
    ][rng.random_range(0..6)]
}

fn distance(rng: &mut StdRng, conv: f64) -> String {
    let p = rng.random_range(0..100);
    if p < 3 {
        return "0".into();
    }
    if p < 5 {
        return "-1".into();
    }
    if p < 7 {
        return ["inf", "1e308", "nan", "2e7", "4e7"][rng.random_range(0..5)].into();
    }
    let meters = 10f64.powf(rng.random_range(2.0..7.0));
    num(rng, meters / conv)
}

/// The options after a search's centre and shape: WITH*, ASC/DESC, COUNT [ANY], shuffled.
fn options(rng: &mut StdRng, with: bool) -> Vec<String> {
    let mut o: Vec<Vec<String>> = Vec::new();
    if with {
        for w in ["WITHCOORD", "WITHDIST", "WITHHASH"] {
            if rng.random_bool(0.4) {
                o.push(vec![w.into()]);
            }
        }
    }
    match rng.random_range(0..3) {
        0 => o.push(vec!["ASC".into()]),
        1 => o.push(vec!["DESC".into()]),
        _ => {}
    }
    if rng.random_bool(0.5) {
        let n = if rng.random_bool(0.05) {
            [0, -1, i64::MAX][rng.random_range(0..3)]
        } else {
            rng.random_range(1..25)
        };
        o.push(vec!["COUNT".into(), n.to_string()]);
        if rng.random_bool(0.3) {
            o.push(vec!["ANY".into()]);
        }
    } else if rng.random_bool(0.03) {
        o.push(vec!["ANY".into()]);
    }
    let n = o.len();
    for i in (1..n).rev() {
        o.swap(i, rng.random_range(0..=i));
    }
    o.concat()
}

fn centre(rng: &mut StdRng, key: &str) -> Vec<String> {
    if rng.random_bool(0.5) {
        vec!["FROMMEMBER".into(), member(rng, key)]
    } else {
        let (x, y) = coord(rng);
        vec!["FROMLONLAT".into(), x, y]
    }
}

fn shape(rng: &mut StdRng) -> Vec<String> {
    let (u, c) = unit(rng);
    if rng.random_bool(0.5) {
        vec!["BYRADIUS".into(), distance(rng, c), u.into()]
    } else {
        vec!["BYBOX".into(), distance(rng, c), distance(rng, c), u.into()]
    }
}

/// One random command, and the destination key it writes (checked after it).
fn random_op(rng: &mut StdRng) -> (Vec<String>, Option<String>) {
    let key = if rng.random_bool(0.9) {
        SRC_KEYS[rng.random_range(0..4)]
    } else {
        SRC_KEYS[rng.random_range(4..SRC_KEYS.len())]
    }
    .to_string();
    let p = rng.random_range(0..100);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    if p < 30 {
        let mut c = s(&["GEOADD", &key]);
        for o in ["NX", "XX", "CH"] {
            if rng.random_bool(0.08) {
                c.push(o.into());
            }
        }
        for _ in 0..rng.random_range(1..5) {
            let (x, y) = coord(rng);
            c.push(x);
            c.push(y);
            c.push(member(rng, &key));
        }
        return (c, None);
    }
    if p < 37 {
        let mut c = s(&["GEOPOS", &key]);
        for _ in 0..rng.random_range(1..5) {
            c.push(member(rng, &key));
        }
        return (c, None);
    }
    if p < 44 {
        let mut c = s(&["GEODIST", &key]);
        c.push(member(rng, &key));
        c.push(member(rng, &key));
        if rng.random_bool(0.6) {
            c.push(
                if rng.random_bool(0.05) {
                    "yd"
                } else {
                    unit(rng).0
                }
                .into(),
            );
        }
        return (c, None);
    }
    if p < 49 {
        let mut c = s(&["GEOHASH", &key]);
        for _ in 0..rng.random_range(1..4) {
            c.push(member(rng, &key));
        }
        return (c, None);
    }
    if p < 68 {
        let mut c = s(&["GEOSEARCH", &key]);
        c.extend(centre(rng, &key));
        c.extend(shape(rng));
        c.extend(options(rng, true));
        return (c, None);
    }
    if p < 76 {
        let dst = DST_KEYS[rng.random_range(0..DST_KEYS.len())].to_string();
        let mut c = s(&["GEOSEARCHSTORE", &dst, &key]);
        c.extend(centre(rng, &key));
        c.extend(shape(rng));
        let with = rng.random_bool(0.05);
        c.extend(options(rng, with));
        if rng.random_bool(0.5) {
            c.push("STOREDIST".into());
        }
        return (c, Some(dst));
    }
    if p < 97 {
        let by_member = rng.random_bool(0.5);
        let ro = rng.random_bool(0.3);
        let name = match (by_member, ro) {
            (false, false) => "GEORADIUS",
            (false, true) => "GEORADIUS_RO",
            (true, false) => "GEORADIUSBYMEMBER",
            (true, true) => "GEORADIUSBYMEMBER_RO",
        };
        let mut c = s(&[name, &key]);
        if by_member {
            c.push(member(rng, &key));
        } else {
            let (x, y) = coord(rng);
            c.push(x);
            c.push(y);
        }
        let (u, conv) = unit(rng);
        c.push(distance(rng, conv));
        c.push(u.into());
        let store = !ro && rng.random_bool(0.35);
        let with = !store || rng.random_bool(0.05);
        c.extend(options(rng, with));
        let mut dst = None;
        if store {
            let d = DST_KEYS[rng.random_range(0..DST_KEYS.len())].to_string();
            c.push(
                if rng.random_bool(0.5) {
                    "STORE"
                } else {
                    "STOREDIST"
                }
                .into(),
            );
            c.push(d.clone());
            dst = Some(d);
        }
        return (c, dst);
    }
    if rng.random_bool(0.3) {
        // A score GEOADD never writes: positions decode from any double, as in Redis.
        let score = [
            "-1",
            "1e20",
            "inf",
            "-inf",
            "4503599627370496",
            "1.5",
            "-1e19",
            "-3.7",
        ][rng.random_range(0..8)];
        let m = member(rng, &key);
        return (s(&["ZADD", &key, score, &m]), None);
    }
    if rng.random_bool(0.6) {
        let m = member(rng, &key);
        (s(&["ZREM", &key, &m]), None)
    } else {
        (s(&["DEL", &key]), None)
    }
}

/// A ZRANGE WITHSCORES reply (RESP2) with its scores read as doubles (the exact text of
/// double replies is tested in tests/doubles.rs).
fn members_and_scores(v: Value) -> Vec<(Vec<u8>, u64)> {
    let Value::Array(items) = v else {
        panic!("not an array: {v:?}")
    };
    items
        .chunks(2)
        .map(|p| match (&p[0], &p[1]) {
            (Value::Bulk(m), Value::Bulk(s)) => (
                m.clone(),
                std::str::from_utf8(s)
                    .unwrap()
                    .parse::<f64>()
                    .unwrap()
                    .to_bits(),
            ),
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

fn differential(threads: &str, seed: u64) {
    // SKERRY_GEO_DIFF_OPS raises the number of operations (3000 by default);
    // SKERRY_GEO_DIFF_SEED adds to the seeds (other runs than CI's).
    let Some(d) = diff::Diff::on_threads("GEO", threads, seed, true) else {
        return;
    };
    let mut d = d.with_resp3();
    let (ops, seed) = (d.ops, d.seed);
    d.both(&["SET", "str", "x"], "setup");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut compared = 0usize;
    let (mut errors, mut searches, mut multi) = (0usize, 0usize, 0usize);
    for i in 0..ops {
        let (cmd, dst) = random_op(&mut rng);
        let args: Vec<&str> = cmd.iter().map(|s| s.as_str()).collect();
        let resp3 = rng.random_bool(0.25);
        let a = d.both_in(&args, resp3, format_args!("op {i}"));
        compared += 1;
        if a.first() == Some(&b'-') {
            errors += 1;
        } else if cmd[0].starts_with("GEOSEARCH") || cmd[0].starts_with("GEORADIUS") {
            searches += 1;
            // `*N` with N >= 2: an order was compared.
            if a[0] == b'*' && a[1] != b'-' && !a.starts_with(b"*0") && !a.starts_with(b"*1\r") {
                multi += 1;
            }
        }
        if let Some(dst) = dst {
            let q = ["ZRANGE", dst.as_str(), "0", "-1", "WITHSCORES"];
            let x = d.both(&["TYPE", &dst], format_args!("op {i}: TYPE after {cmd:?}"));
            if x == b"+zset\r\n" {
                let (x, y) = (d.sk.cmd(&q), d.re.cmd(&q));
                assert_eq!(
                    members_and_scores(x),
                    members_and_scores(y),
                    "seed {seed} op {i}: {dst} after {cmd:?}"
                );
                d.both(
                    &["OBJECT", "ENCODING", &dst],
                    format_args!("op {i}: encoding after {cmd:?}"),
                );
                compared += 2;
            }
        }
    }
    // The final sets, member by member.
    for k in [
        "geo:a", "geo:b", "geo:c", "geo:d", "dst:1", "dst:2", "dst:3",
    ] {
        let q = ["ZRANGE", k, "0", "-1", "WITHSCORES"];
        assert_eq!(
            members_and_scores(d.sk.cmd(&q)),
            members_and_scores(d.re.cmd(&q)),
            "final {k}"
        );
    }
    eprintln!(
        "geo differential (threads {threads}, seed {seed}): {ops} ops, {compared} replies \
         compared; {errors} errors, {searches} searches, {multi} replying 2+ points"
    );
    // The mix exercises what it should.
    assert!(errors * 50 > ops && searches * 5 > ops && multi * 40 > ops);
}

#[test]
fn differential_against_redis_threads_1() {
    skip_if_redis!();
    differential("1", 0x6e0_0001);
}

#[test]
fn differential_against_redis_threads_2() {
    skip_if_redis!();
    differential("2", 0x6e0_0002);
}

#[test]
fn store_inside_multi_and_from_a_script() {
    let (_s, mut r) = start();
    sicily(&mut r);
    r.cmd(&["MULTI"]);
    for dst in ["m1", "m2", "m3", "m4"] {
        r.cmd(&[
            "GEOSEARCHSTORE",
            dst,
            "Sicily",
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "200",
            "km",
        ]);
    }
    assert_eq!(r.cmd(&["EXEC"]), Value::Array(vec![Value::Integer(2); 4]));
    for dst in ["m1", "m2", "m3", "m4"] {
        assert_eq!(r.cmd(&["ZCARD", dst]), Value::Integer(2));
    }
    assert_eq!(
        r.cmd(&[
            "EVAL",
            "redis.call('GEOADD', KEYS[1], 13.361389, 38.115556, 'p'); return redis.call('GEOHASH', KEYS[1], 'p')",
            "1",
            "{s}x"
        ]),
        Value::Array(vec![bulk("sqc8b49rny0")])
    );
}
