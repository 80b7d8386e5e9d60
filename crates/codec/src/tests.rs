//! Round trips, proptests over random values of every type, and damaged payloads.

use super::*;
use proptest::prelude::*;

fn rt(v: &RdbValue) -> RdbValue {
    let p = dump(v);
    restore(&p).unwrap_or_else(|e| panic!("{e}: {v:?}"))
}

fn sorted<T: Clone + PartialOrd>(mut v: Vec<T>) -> Vec<T> {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

/// Equal as collections: sets, zsets and hashes may come back in another order.
fn same(a: &RdbValue, b: &RdbValue) -> bool {
    match (a, b) {
        (RdbValue::Set(x), RdbValue::Set(y)) => sorted(x.clone()) == sorted(y.clone()),
        (RdbValue::Zset(x), RdbValue::Zset(y)) => {
            let f = |v: &Vec<(Vec<u8>, f64)>| {
                sorted(
                    v.iter()
                        .map(|(m, s)| (m.clone(), s.to_bits()))
                        .collect::<Vec<_>>(),
                )
            };
            f(x) == f(y)
        }
        (RdbValue::Hash(x), RdbValue::Hash(y)) => sorted(x.clone()) == sorted(y.clone()),
        (RdbValue::HashWithTtl(x), RdbValue::HashWithTtl(y)) => {
            let f = |v: &Vec<HashField>| {
                sorted(
                    v.iter()
                        .map(|h| (h.field.clone(), h.value.clone(), h.expire_at_ms))
                        .collect::<Vec<_>>(),
                )
            };
            f(x) == f(y)
        }
        _ => a == b,
    }
}

#[test]
fn every_type_round_trips_in_every_size() {
    let s = |n: usize, w: usize| -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("{i:0w$}x").into_bytes()).collect()
    };
    let mut values = vec![
        RdbValue::String(b"".to_vec()),
        RdbValue::String(b"12345".to_vec()),
        RdbValue::String(b"-2147483648".to_vec()),
        RdbValue::String(vec![b'a'; 100_000]),
        RdbValue::String((0..70_000u32).flat_map(|i| i.to_le_bytes()).collect()),
    ];
    for (n, w) in [(1, 1), (100, 3), (1000, 100), (5000, 5)] {
        values.push(RdbValue::List(s(n, w)));
        values.push(RdbValue::Set(s(n, w)));
        values.push(RdbValue::Set(
            (0..n as i64)
                .map(|i| (i * 1_000_003 - 7).to_string().into_bytes())
                .collect(),
        ));
        values.push(RdbValue::Zset(
            s(n, w)
                .into_iter()
                .enumerate()
                .map(|(i, m)| (m, i as f64 / 3.0 - 10.0))
                .collect(),
        ));
        values.push(RdbValue::Hash(
            s(n, w).into_iter().map(|f| (f.clone(), f)).collect(),
        ));
    }
    values.push(RdbValue::List(vec![
        vec![b'z'; 20_000],
        b"1".to_vec(),
        b"-5".to_vec(),
    ]));
    values.push(RdbValue::Zset(vec![
        (b"a".to_vec(), f64::INFINITY),
        (b"b".to_vec(), f64::NEG_INFINITY),
        (b"c".to_vec(), -0.0),
        (b"d".to_vec(), 1e300),
        (b"e".to_vec(), 5e-324),
    ]));
    values.push(RdbValue::HashWithTtl(vec![
        HashField {
            field: b"f".to_vec(),
            value: b"v".to_vec(),
            expire_at_ms: Some(1_900_000_000_000),
        },
        HashField {
            field: b"g".to_vec(),
            value: b"w".to_vec(),
            expire_at_ms: None,
        },
        HashField {
            field: b"h".to_vec(),
            value: b"x".to_vec(),
            expire_at_ms: Some(1_800_000_000_000),
        },
    ]));
    values.push(RdbValue::Stream(Box::new(sample_stream(250, true))));
    values.push(RdbValue::Stream(Box::new(sample_stream(3, false))));
    values.push(RdbValue::Stream(Box::default()));
    for v in &values {
        assert!(same(&rt(v), v), "{}", v.type_name());
    }
}

fn sample_stream(n: u64, v3: bool) -> Stream {
    let entries: Vec<StreamEntry> = (0..n)
        .map(|i| StreamEntry {
            id: StreamId {
                ms: 1000 + i / 3,
                seq: i % 3,
            },
            fields: if i % 7 == 0 {
                vec![(b"other".to_vec(), i.to_string().into_bytes())]
            } else {
                vec![
                    (b"a".to_vec(), b"x".repeat(i as usize % 50)),
                    (b"b".to_vec(), i.to_string().into_bytes()),
                ]
            },
        })
        .collect();
    let last = entries.last().map_or(StreamId { ms: 5, seq: 0 }, |e| e.id);
    let mut groups = Vec::new();
    if n > 2 {
        groups.push(StreamGroup {
            name: b"g1".to_vec(),
            last_id: entries[2].id,
            entries_read: Some(3),
            pending: vec![
                PendingEntry {
                    id: entries[0].id,
                    delivery_time_ms: 1_700_000_000_000,
                    delivery_count: 2,
                },
                PendingEntry {
                    id: entries[1].id,
                    delivery_time_ms: 1_700_000_000_001,
                    delivery_count: 1,
                },
            ],
            consumers: vec![
                StreamConsumer {
                    name: b"alice".to_vec(),
                    seen_time_ms: 10,
                    active_time_ms: if v3 { 9 } else { 10 },
                    pending: vec![entries[0].id, entries[1].id],
                },
                StreamConsumer {
                    name: b"bob".to_vec(),
                    seen_time_ms: 11,
                    active_time_ms: 11,
                    pending: vec![],
                },
            ],
        });
        groups.push(StreamGroup {
            name: b"g2".to_vec(),
            last_id: StreamId::default(),
            entries_read: None,
            pending: vec![],
            consumers: vec![],
        });
    }
    Stream {
        first_id: entries.first().map_or_else(StreamId::default, |e| e.id),
        entries_added: n + 2,
        max_deleted_entry_id: StreamId { ms: 1, seq: 1 },
        last_id: last,
        entries,
        groups,
    }
}

#[test]
fn versions_are_the_lowest_that_express_the_value() {
    let v = |x: &RdbValue| encode_value(x).rdb_version;
    assert_eq!(v(&RdbValue::String(b"x".to_vec())), 10);
    assert_eq!(v(&RdbValue::List(vec![b"x".to_vec()])), 10);
    assert_eq!(v(&RdbValue::Stream(Box::new(sample_stream(5, false)))), 10);
    assert_eq!(v(&RdbValue::Stream(Box::new(sample_stream(5, true)))), 11);
    let h = |at| {
        RdbValue::HashWithTtl(vec![HashField {
            field: b"f".to_vec(),
            value: b"v".to_vec(),
            expire_at_ms: at,
        }])
    };
    assert_eq!(v(&h(Some(5))), 12);
    assert_eq!(v(&h(None)), 10, "no field TTL: a plain hash");
}

#[test]
fn damaged_payloads_are_refused() {
    let p = dump(&RdbValue::Hash(vec![(b"f".to_vec(), b"v".to_vec())]));
    assert_eq!(restore(&p[..9]), Err(PayloadError::VersionOrChecksum));
    for i in 0..p.len() {
        let mut bad = p.clone();
        bad[i] ^= 1;
        assert!(restore(&bad).is_err(), "flipped byte {i}");
    }
    let mut newer = p[..p.len() - 10].to_vec();
    let newer_payload = seal_payload(std::mem::take(&mut newer), RDB_VERSION + 1);
    assert_eq!(
        restore(&newer_payload),
        Err(PayloadError::VersionOrChecksum)
    );
    // A right checksum over a value that does not decode.
    for cut in 1..p.len() - 10 {
        let body = p[..cut].to_vec();
        assert!(
            matches!(
                restore(&seal_payload(body, 10)),
                Err(PayloadError::BadData(_))
            ),
            "cut {cut}"
        );
    }
    // Duplicates, NaN and empty collections.
    let mut body = vec![rdb_type::SET];
    write_len(&mut body, 2);
    write_string(&mut body, b"a");
    write_string(&mut body, b"a");
    assert!(matches!(
        restore(&seal_payload(body, 10)),
        Err(PayloadError::BadData(_))
    ));
    let mut body = vec![rdb_type::ZSET_2];
    write_len(&mut body, 1);
    write_string(&mut body, b"a");
    body.extend_from_slice(&f64::NAN.to_le_bytes());
    assert!(matches!(
        restore(&seal_payload(body, 10)),
        Err(PayloadError::BadData(_))
    ));
    let body = vec![rdb_type::LIST, 0];
    assert!(matches!(
        restore(&seal_payload(body, 10)),
        Err(PayloadError::BadData(_))
    ));
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(any::<u8>(), 0..40),
        4 => any::<i64>().prop_map(|i| i.to_string().into_bytes()),
        2 => (0u8..4).prop_map(|c| vec![b'a' + c; 70]),
        1 => proptest::collection::vec(any::<u8>(), 0..5000),
    ]
}

fn distinct(v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut seen = std::collections::HashSet::new();
    v.into_iter().filter(|x| seen.insert(x.clone())).collect()
}

fn value() -> impl Strategy<Value = RdbValue> {
    let n = 1..300usize;
    prop_oneof![
        bytes().prop_map(RdbValue::String),
        proptest::collection::vec(bytes(), n.clone()).prop_map(RdbValue::List),
        proptest::collection::vec(bytes(), n.clone()).prop_map(|v| RdbValue::Set(distinct(v))),
        proptest::collection::vec(any::<i16>(), n.clone()).prop_map(|v| RdbValue::Set(distinct(
            v.into_iter().map(|i| i.to_string().into_bytes()).collect()
        ))),
        proptest::collection::vec(
            (bytes(), any::<f64>().prop_filter("no NaN", |f| !f.is_nan())),
            n.clone()
        )
        .prop_map(|v| {
            let members = distinct(v.iter().map(|(m, _)| m.clone()).collect());
            RdbValue::Zset(
                members
                    .into_iter()
                    .zip(v.into_iter().map(|(_, s)| s))
                    .collect(),
            )
        }),
        proptest::collection::vec((bytes(), bytes()), n.clone()).prop_map(|v| {
            let fields = distinct(v.iter().map(|(f, _)| f.clone()).collect());
            RdbValue::Hash(
                fields
                    .into_iter()
                    .zip(v.into_iter().map(|(_, x)| x))
                    .collect(),
            )
        }),
        proptest::collection::vec(
            (bytes(), bytes(), proptest::option::of(1u64..(1 << 48))),
            n.clone()
        )
        .prop_map(|v| {
            let fields = distinct(v.iter().map(|(f, _, _)| f.clone()).collect());
            RdbValue::HashWithTtl(
                fields
                    .into_iter()
                    .zip(v)
                    .map(|(field, (_, value, at))| HashField {
                        field,
                        value,
                        expire_at_ms: at,
                    })
                    .collect(),
            )
        }),
        (0u64..400, any::<bool>())
            .prop_map(|(n, v3)| RdbValue::Stream(Box::new(sample_stream(n, v3)))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_values_round_trip(v in value()) {
        let back = rt(&v);
        let want = match &v {
            RdbValue::HashWithTtl(f) if f.iter().all(|h| h.expire_at_ms.is_none()) => {
                RdbValue::Hash(f.iter().map(|h| (h.field.clone(), h.value.clone())).collect())
            }
            v => v.clone(),
        };
        prop_assert!(same(&back, &want), "{:?}", v.type_name());
    }

    #[test]
    fn random_payloads_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600), ty in 0u8..30) {
        let mut body = vec![ty];
        body.extend_from_slice(&data);
        let _ = restore(&seal_payload(body, 12));
    }
}

mod fixtures;

/// What the commands of `fixtures`'s generator built under `key` (`v8`: Redis 8.0).
fn expected(key: &str) -> RdbValue {
    let strs = |v: Vec<String>| v.into_iter().map(String::into_bytes).collect::<Vec<_>>();
    let fields = |n: usize, f: &dyn Fn(usize) -> (String, String)| {
        (0..n)
            .map(|i| {
                let (a, b) = f(i);
                (a.into_bytes(), b.into_bytes())
            })
            .collect::<Vec<_>>()
    };
    match key {
        "string_int" => RdbValue::String(b"12345".to_vec()),
        "string_plain" => RdbValue::String(b"hello world".to_vec()),
        "string_lzf" => RdbValue::String(b"abc".repeat(100)),
        "list_small" => RdbValue::List(strs(["a", "b", "c", "1", "-2"].map(String::from).to_vec())),
        "list_big" => RdbValue::List(strs((0..2000).map(|i| format!("item-{i}")).collect())),
        "list_plain" => {
            let mut v: Vec<String> = (0..5).map(|i| format!("{}{i}", "x".repeat(20))).collect();
            v.extend(["s", "t", "u"].map(String::from));
            RdbValue::List(strs(v))
        }
        "set_int" => RdbValue::Set(strs((0..50).map(|i| (i * 3 - 100).to_string()).collect())),
        "set_small" => RdbValue::Set(strs((0..20).map(|i| format!("m{i}")).collect())),
        "set_ht" => RdbValue::Set(strs((0..1000).map(|i| format!("member-{i}")).collect())),
        "zset_lp" => RdbValue::Zset(
            (0..20)
                .map(|i| (format!("z{i}").into_bytes(), i as f64 * 1.5 - 3.0))
                .collect(),
        ),
        "zset_sl" => RdbValue::Zset(
            (0..300)
                .map(|i| (format!("z{i}").into_bytes(), i as f64 / 7.0))
                .collect(),
        ),
        "hash_lp" => {
            let mut h = fields(20, &|i| (format!("f{i}"), format!("v{i}")));
            h.push((b"n".to_vec(), b"123".to_vec()));
            RdbValue::Hash(h)
        }
        "hash_ht" => RdbValue::Hash(fields(600, &|i| (format!("field-{i}"), "x".repeat(i % 20)))),
        "hash_ttl_lp" => RdbValue::HashWithTtl(
            fields(20, &|i| (format!("f{i}"), format!("v{i}")))
                .into_iter()
                .enumerate()
                .map(|(i, (field, value))| HashField {
                    field,
                    value,
                    expire_at_ms: (i < 5).then_some(4_000_000_000_000 + i as u64),
                })
                .collect(),
        ),
        "hash_ttl_ht" => RdbValue::HashWithTtl(
            fields(600, &|i| (format!("field-{i}"), "x".repeat(i % 20)))
                .into_iter()
                .enumerate()
                .map(|(i, (field, value))| HashField {
                    field,
                    value,
                    expire_at_ms: (i < 10).then_some(4_000_000_000_000 + i as u64),
                })
                .collect(),
        ),
        other => panic!("no expected value for {other}"),
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn id(ms: u64) -> StreamId {
    StreamId { ms, seq: 0 }
}

/// The stream the generator built: entries 1-0..10-0 but 5-0 (deleted), groups g1 (read
/// three, acknowledged 1-0) and g2 (at the end, consumer bob).
fn check_stream(s: &Stream, v8: bool) {
    let ids: Vec<u64> = s.entries.iter().map(|e| e.id.ms).collect();
    assert_eq!(ids, [1, 2, 3, 4, 6, 7, 8, 9, 10]);
    for e in &s.entries {
        let i = e.id.ms;
        let want: Vec<(Vec<u8>, Vec<u8>)> = if i % 3 == 0 {
            vec![(b"c".to_vec(), i.to_string().into_bytes())]
        } else {
            vec![
                (b"a".to_vec(), i.to_string().into_bytes()),
                (b"b".to_vec(), b"v".repeat(i as usize)),
            ]
        };
        assert_eq!(e.fields, want, "entry {i}");
    }
    assert_eq!(
        (
            s.first_id,
            s.last_id,
            s.max_deleted_entry_id,
            s.entries_added
        ),
        (id(1), id(10), id(5), 10)
    );
    assert_eq!(s.groups.len(), 2);
    let g1 = &s.groups[0];
    assert_eq!(
        (&g1.name[..], g1.last_id, g1.entries_read),
        (&b"g1"[..], id(3), None)
    );
    assert_eq!(
        g1.pending
            .iter()
            .map(|p| (p.id, p.delivery_count))
            .collect::<Vec<_>>(),
        [(id(2), 1), (id(3), 1)]
    );
    assert_eq!(g1.consumers.len(), 1);
    assert_eq!(
        (&g1.consumers[0].name[..], &g1.consumers[0].pending[..]),
        (&b"alice"[..], &[id(2), id(3)][..])
    );
    assert!(g1.pending[0].delivery_time_ms > 1_600_000_000_000);
    let g2 = &s.groups[1];
    assert_eq!(
        (&g2.name[..], g2.last_id, g2.entries_read),
        (&b"g2"[..], id(10), None)
    );
    assert_eq!(
        g2.consumers.iter().map(|c| &c.name[..]).collect::<Vec<_>>(),
        [&b"bob"[..]]
    );
    let bob = &g2.consumers[0];
    assert!(bob.seen_time_ms > 1_600_000_000_000 && bob.pending.is_empty());
    if !v8 {
        assert_eq!(
            bob.active_time_ms, bob.seen_time_ms,
            "RDB type 19 has no active time"
        );
    }
}

fn check_fixtures(fixtures: &[(&str, &str)], v8: bool) {
    for (key, hex) in fixtures {
        let payload = unhex(hex);
        let v = restore(&payload).unwrap_or_else(|e| panic!("{key}: {e}"));
        if *key == "stream" {
            let RdbValue::Stream(s) = &v else {
                panic!("{key}: {v:?}")
            };
            check_stream(s, v8);
        } else {
            assert!(same(&v, &expected(key)), "{key}: {v:?}");
        }
        // What Skerry writes for it reads back the same.
        assert!(same(&rt(&v), &v), "{key}");
        // Damage anywhere is refused.
        let mut bad = payload.clone();
        bad[payload.len() / 2] ^= 0x10;
        assert!(restore(&bad).is_err(), "{key}");
    }
}

#[test]
fn payloads_of_redis_8_0_decode() {
    check_fixtures(fixtures::REDIS_8_0_2, true);
}

#[test]
fn payloads_of_redis_7_0_decode() {
    check_fixtures(fixtures::REDIS_7_0_15, false);
}

/// The keys and values of an RDB file (test only: skips the opcodes old files have).
fn rdb_file_values(data: &[u8]) -> Vec<(u8, Vec<u8>, RdbValue)> {
    assert_eq!(&data[..5], b"REDIS");
    let mut r = Reader::new(&data[9..]);
    let mut out = Vec::new();
    loop {
        match r.byte().unwrap() {
            0xff => return out,
            0xfa => {
                r.string().unwrap();
                r.string().unwrap();
            }
            0xfb => {
                r.length().unwrap();
                r.length().unwrap();
            }
            0xfe => {
                r.length().unwrap();
            }
            0xfd => {
                r.take(4).unwrap();
            }
            0xfc => {
                r.take(8).unwrap();
            }
            ty => {
                let key = r.string().unwrap();
                let v = decode_value(ty, &mut r)
                    .unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(&key)));
                out.push((ty, key, v));
            }
        }
    }
}

/// Old encodings (zipmap, ziplists, linked lists, quicklists of ziplists, text scores)
/// from the RDB files of Redis's own test suite, when its sources are at hand.
#[test]
fn old_encodings_from_redis_test_assets_decode() {
    let dir = std::path::Path::new("/work/ref/redis-8.0.2/tests/assets");
    if !dir.exists() {
        eprintln!("skipped: no Redis test assets");
        return;
    }
    let read = |f: &str| rdb_file_values(&std::fs::read(dir.join(f)).unwrap());
    let s = |v: &[&str]| v.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
    let pairs = |v: &[&str]| {
        v.chunks(2)
            .map(|c| (c[0].as_bytes().to_vec(), c[1].as_bytes().to_vec()))
            .collect::<Vec<_>>()
    };
    let zs = |v: &[&str]| {
        v.chunks(2)
            .map(|c| (c[0].as_bytes().to_vec(), c[1].parse::<f64>().unwrap()))
            .collect::<Vec<_>>()
    };
    let rep = |v: &[&str], n: usize| s(&v.repeat(n));
    let want: Vec<(&str, RdbValue)> = vec![
        ("compressible", RdbValue::String(vec![b'a'; 137])),
        (
            "hash",
            RdbValue::Hash(pairs(&[
                "a",
                "1",
                "aa",
                "10",
                "aaa",
                "100",
                "b",
                "2",
                "bb",
                "20",
                "bbb",
                "200",
                "c",
                "3",
                "cc",
                "30",
                "ccc",
                "300",
                "ddd",
                "400",
                "eee",
                "5000000000",
            ])),
        ),
        (
            "hash_zipped",
            RdbValue::Hash(pairs(&["a", "1", "b", "2", "c", "3"])),
        ),
        (
            "list",
            RdbValue::List(rep(
                &["1", "2", "3", "a", "b", "c", "100000", "6000000000"],
                3,
            )),
        ),
        (
            "list_zipped",
            RdbValue::List(s(&["1", "2", "3", "a", "b", "c", "100000", "6000000000"])),
        ),
        ("number", RdbValue::String(b"10".to_vec())),
        (
            "set",
            RdbValue::Set(s(&["1", "100000", "2", "3", "6000000000", "a", "b", "c"])),
        ),
        ("set_zipped_1", RdbValue::Set(s(&["1", "2", "3", "4"]))),
        (
            "set_zipped_2",
            RdbValue::Set(s(&["100000", "200000", "300000", "400000"])),
        ),
        (
            "set_zipped_3",
            RdbValue::Set(s(&[
                "1000000000",
                "2000000000",
                "3000000000",
                "4000000000",
                "5000000000",
                "6000000000",
            ])),
        ),
        ("string", RdbValue::String(b"Hello World".to_vec())),
        (
            "zset",
            RdbValue::Zset(zs(&[
                "a",
                "1",
                "b",
                "2",
                "c",
                "3",
                "aa",
                "10",
                "bb",
                "20",
                "cc",
                "30",
                "aaa",
                "100",
                "bbb",
                "200",
                "ccc",
                "300",
                "aaaa",
                "1000",
                "cccc",
                "123456789",
                "bbbb",
                "5000000000",
            ])),
        ),
        (
            "zset_zipped",
            RdbValue::Zset(zs(&["a", "1", "b", "2", "c", "3"])),
        ),
    ];
    let got = read("encodings.rdb");
    let types: std::collections::BTreeSet<u8> = got.iter().map(|(t, _, _)| *t).collect();
    eprintln!("encodings.rdb value types: {types:?}");
    assert_eq!(got.len(), want.len());
    for (k, v) in &want {
        let (_, _, g) = got
            .iter()
            .find(|(_, key, _)| key == k.as_bytes())
            .unwrap_or_else(|| panic!("no {k}"));
        assert!(same(g, v), "{k}: {g:?}");
        assert!(same(&rt(g), v), "{k}");
    }
    let f1f2 = RdbValue::Hash(pairs(&["f1", "v1", "f2", "v2"]));
    for f in ["hash-zipmap.rdb", "hash-ziplist.rdb"] {
        let got = read(f);
        assert!(same(&got[0].2, &f1f2), "{f}: {:?}", got[0].2);
    }
    let got = read("zset-ziplist.rdb");
    assert!(same(
        &got[0].2,
        &RdbValue::Zset(zs(&["one", "1", "two", "2"]))
    ));
    let got = read("list-quicklist.rdb");
    let (_, _, list) = got.iter().find(|(_, k, _)| k == b"list").unwrap();
    let RdbValue::List(items) = list else {
        panic!()
    };
    assert_eq!(items[0], b"7");
}

/// A `listpackex` payload (`dump_hash_listpack_ex`) reads back to the same fields, in the
/// same order, with type byte `HASH_LISTPACK_EX` and RDB version 12; without any TTL it
/// reads back as a plain hash.
#[test]
fn listpack_ex_payloads_round_trip_in_order() {
    let f = |field: &str, value: &str, t: Option<u64>| HashField {
        field: field.into(),
        value: value.into(),
        expire_at_ms: t,
    };
    let fields = vec![
        f("b", "12", Some(1_700_000_000_000)),
        f("a", "x", Some(1_700_000_000_000)),
        f("c", "", Some(1_800_000_000_000)),
        f("z", "-5", None),
    ];
    let p = dump_hash_listpack_ex(&fields);
    assert_eq!(p[0], rdb_type::HASH_LISTPACK_EX);
    assert_eq!(u16::from_le_bytes([p[p.len() - 10], p[p.len() - 9]]), 12);
    assert_eq!(restore(&p).unwrap(), RdbValue::HashWithTtl(fields));
    let plain = vec![f("k", "v", None)];
    let p = dump_hash_listpack_ex(&plain);
    assert_eq!(p[0], rdb_type::HASH_LISTPACK_EX);
    assert_eq!(
        restore(&p).unwrap(),
        RdbValue::Hash(vec![(b"k".to_vec(), b"v".to_vec())])
    );
}

/// `string_payload_len` reads a string payload's restored length from its header, for every
/// string encoding DUMP makes (integer, plain, LZF-compressed), and says nothing for other
/// types or a cut payload.
#[test]
fn string_payload_len_reads_the_restored_length_from_the_header() {
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 241) as u8).collect();
    let mut compressed = 0;
    for v in [
        b"12345".to_vec(),
        b"-7".to_vec(),
        b"plain text".to_vec(),
        vec![b'z'; 100_000],
        big,
    ] {
        let payload = crate::dump(&RdbValue::String(v.clone()));
        assert_eq!(
            crate::string_payload_len(&payload),
            Some(v.len() as u64),
            "value of {} bytes, payload of {}",
            v.len(),
            payload.len()
        );
        compressed += usize::from(payload.len() < v.len() / 2);
    }
    assert!(compressed >= 2, "the long values were LZF-compressed");
    let list = crate::dump(&RdbValue::List(vec![b"a".to_vec()]));
    assert_eq!(crate::string_payload_len(&list), None);
    assert_eq!(crate::string_payload_len(&[0, 1]), None);
}
