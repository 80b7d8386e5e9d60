//! Fuzz `skerry-codec`, the RDB value codec of DUMP / RESTORE.
//!
//! Mode 0 (first byte even): the rest of the input is an RDB value (type byte, then the
//! value) decoded directly (no checksum in the way), and also as a whole DUMP payload.
//! Neither may panic or allocate beyond what the input can describe; a value that decodes
//! encodes to a payload that restores to a value encoding to the same bytes again.
//!
//! Mode 1 (first byte odd): the input describes a value of any type (sizes from the
//! input, so that listpack, intset, quicklist-node, LZF and stream-node boundaries are
//! crossed), which must survive encode → decode unchanged (up to member order of sets,
//! sorted sets and hashes, which the encodings may sort).
//!
//! Build and run (no cargo-fuzz on the machine it was written on; the flags are
//! cargo-fuzz's):
//!
//!     cd fuzz && RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
//!       -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
//!       -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks" \
//!       cargo +nightly build --release --bin value_codec --target x86_64-unknown-linux-gnu
//!     ./target/x86_64-unknown-linux-gnu/release/value_codec CORPUS -max_total_time=600 -malloc_limit_mb=512
//!
//! Runs (2026-12, one core shared with other builds): 600 s, 301,846 executions, cov 2365, no
//! crash; then seeded with the payloads of `crates/codec/src/tests/fixtures.rs` (mode byte 0
//! before each), `-max_len=8192`, 600 s, 578,096 executions, cov 2597, no crash, no
//! allocation over 512 MB.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skerry_codec::{
    decode_value, dump, restore, HashField, PendingEntry, RdbValue, Reader, Stream, StreamConsumer,
    StreamEntry, StreamGroup, StreamId,
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        raw(rest);
    } else {
        structured(rest);
    }
});

fn raw(data: &[u8]) {
    let _ = restore(data);
    let Some((&ty, body)) = data.split_first() else {
        return;
    };
    let mut r = Reader::new(body);
    if let Ok(v) = decode_value(ty, &mut r) {
        let p = dump(&v);
        let back = restore(&p).expect("an encoded value restores");
        assert_eq!(dump(&back), p, "encoding is stable");
    }
}

/// Reads the input as a stream of choices.
struct Src<'a>(&'a [u8]);

impl Src<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |acc, _| (acc << 8) | u64::from(self.byte()))
    }

    fn bytes(&mut self) -> Vec<u8> {
        let n = match self.byte() {
            // A long run: crosses the 64-byte, 4 KB and LZF thresholds cheaply.
            255 => usize::from(self.byte()) * 40,
            254 => return (self.u64() as i64).to_string().into_bytes(),
            n => usize::from(n % 80),
        };
        let fill = self.byte();
        let take = n.min(self.0.len());
        let mut v = self.0[..take].to_vec();
        self.0 = &self.0[take..];
        v.resize(n, fill);
        v
    }

    fn count(&mut self) -> usize {
        let n = usize::from(self.byte());
        if n > 200 {
            (n - 200) * 50
        } else {
            n
        }
    }

    fn distinct(&mut self, n: usize) -> Vec<Vec<u8>> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let mut b = self.bytes();
            if seen.contains(&b) {
                b.extend_from_slice(format!("#{i}").as_bytes());
            }
            if seen.insert(b.clone()) {
                out.push(b);
            }
        }
        out
    }
}

fn value(s: &mut Src<'_>) -> Option<RdbValue> {
    let n = s.count().max(1);
    Some(match s.byte() % 7 {
        0 => RdbValue::String(s.bytes()),
        1 => RdbValue::List((0..n).map(|_| s.bytes()).collect()),
        2 => RdbValue::Set(unique(s.distinct(n))),
        3 => {
            let members = unique(s.distinct(n));
            let scored = members
                .into_iter()
                .map(|m| {
                    let f = f64::from_bits(s.u64());
                    (m, if f.is_nan() { 0.5 } else { f })
                })
                .collect();
            RdbValue::Zset(scored)
        }
        4 => {
            let fields = unique(s.distinct(n));
            RdbValue::Hash(fields.into_iter().map(|f| (f, s.bytes())).collect())
        }
        5 => {
            let fields = unique(s.distinct(n));
            RdbValue::HashWithTtl(
                fields
                    .into_iter()
                    .map(|field| {
                        let t = s.u64() % (1 << 48);
                        HashField {
                            field,
                            value: s.bytes(),
                            expire_at_ms: (t % 3 != 0).then_some(t),
                        }
                    })
                    .collect(),
            )
        }
        _ => RdbValue::Stream(Box::new(stream(s, n))),
    })
}

fn unique(v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut seen = std::collections::HashSet::new();
    v.into_iter().filter(|x| seen.insert(x.clone())).collect()
}

fn stream(s: &mut Src<'_>, n: usize) -> Stream {
    let mut id = StreamId {
        ms: s.u64() >> 20,
        seq: 0,
    };
    let mut entries = Vec::new();
    for _ in 0..n {
        id = if s.byte() & 1 == 0 {
            StreamId {
                ms: id.ms,
                seq: id.seq + 1 + u64::from(s.byte()),
            }
        } else {
            StreamId {
                ms: id.ms + 1 + u64::from(s.byte()),
                seq: u64::from(s.byte()),
            }
        };
        let nf = usize::from(s.byte() % 4);
        entries.push(StreamEntry {
            id,
            fields: (0..nf).map(|_| (s.bytes(), s.bytes())).collect(),
        });
    }
    let mut groups = Vec::new();
    for g in 0..s.byte() % 3 {
        let mut pending = Vec::new();
        for e in &entries {
            if s.byte() % 3 == 0 {
                pending.push(PendingEntry {
                    id: e.id,
                    delivery_time_ms: s.u64(),
                    delivery_count: s.u64(),
                });
            }
        }
        let mut consumers: Vec<StreamConsumer> = (0..s.byte() % 3)
            .map(|c| StreamConsumer {
                name: format!("c{c}").into_bytes(),
                seen_time_ms: s.u64(),
                active_time_ms: s.u64(),
                pending: vec![],
            })
            .collect();
        if !consumers.is_empty() {
            let k = consumers.len();
            for (i, p) in pending.iter().enumerate() {
                consumers[i % k].pending.push(p.id);
            }
        }
        groups.push(StreamGroup {
            name: format!("g{g}").into_bytes(),
            last_id: StreamId {
                ms: s.u64(),
                seq: s.u64(),
            },
            entries_read: if s.byte() & 1 == 0 {
                None
            } else {
                Some(s.u64() >> 1)
            },
            pending: if consumers.is_empty() {
                vec![]
            } else {
                pending
            },
            consumers,
        });
    }
    Stream {
        first_id: entries.first().map_or(StreamId::default(), |e| e.id),
        last_id: id,
        max_deleted_entry_id: StreamId {
            ms: s.u64(),
            seq: s.u64(),
        },
        entries_added: s.u64(),
        entries,
        groups,
    }
}

/// `v` with unordered contents sorted, so that values differing only in member order
/// compare equal.
fn canonical(v: RdbValue) -> RdbValue {
    match v {
        RdbValue::Set(mut m) => {
            m.sort();
            RdbValue::Set(m)
        }
        RdbValue::Zset(mut m) => {
            m.sort_by(|a, b| a.0.cmp(&b.0));
            RdbValue::Zset(
                m.into_iter()
                    .map(|(k, s)| (k, f64::from_bits(s.to_bits())))
                    .collect(),
            )
        }
        RdbValue::Hash(mut m) => {
            m.sort();
            RdbValue::Hash(m)
        }
        RdbValue::HashWithTtl(mut m) => {
            m.sort_by(|a, b| a.field.cmp(&b.field));
            if m.iter().all(|f| f.expire_at_ms.is_none()) {
                RdbValue::Hash(m.into_iter().map(|f| (f.field, f.value)).collect())
            } else {
                RdbValue::HashWithTtl(m)
            }
        }
        v => v,
    }
}

fn structured(data: &[u8]) {
    let mut s = Src(data);
    let Some(v) = value(&mut s) else {
        return;
    };
    let empty = match &v {
        RdbValue::List(x) | RdbValue::Set(x) => x.is_empty(),
        RdbValue::Zset(x) => x.is_empty(),
        RdbValue::Hash(x) => x.is_empty(),
        RdbValue::HashWithTtl(x) => x.is_empty(),
        _ => false,
    };
    let p = dump(&v);
    match restore(&p) {
        Ok(back) => {
            let (a, b) = (canonical(back), canonical(v));
            // Compare scores by bits (-0.0 and 0.0 differ; no NaN is generated).
            let bits = |v: &RdbValue| match v {
                RdbValue::Zset(m) => Some(
                    m.iter()
                        .map(|(k, s)| (k.clone(), s.to_bits()))
                        .collect::<Vec<_>>(),
                ),
                _ => None,
            };
            if bits(&a).is_some() {
                assert_eq!(bits(&a), bits(&b));
            } else {
                assert_eq!(a, b);
            }
        }
        Err(e) => assert!(empty, "a non-empty value must restore: {e}"),
    }
}
