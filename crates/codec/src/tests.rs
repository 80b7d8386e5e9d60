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
        proptest::collection::vec(any::<u8>(), 0..40),
        any::<i64>().prop_map(|i| i.to_string().into_bytes()),
        (0u8..4).prop_map(|c| vec![b'a' + c; 70]),
        proptest::collection::vec(any::<u8>(), 0..5000),
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
