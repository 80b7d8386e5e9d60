//! Big streams stored grouped (issue 27, item 1): a stream of 200,000 entries with consumer
//! groups is a root record, one page per node and one record per consumer group, so that an
//! XADD writes the tail page and the root, not the stream. Every reply must match a local
//! model through growth, XDEL, XTRIM, reads and acknowledgements of groups, a clean restart
//! (index checkpoint) and kill -9 under `appendfsync always` (a scan), with one worker and
//! with two. Skerry-only (INFO storage fields, group records).
//!
//! `SKERRY_STREAM_GROUPED_ENTRIES` sets the stream's size (default 200,000).

mod common;

use std::time::Duration;

use common::*;

fn storage(r: &mut Raw, field: &str) -> i64 {
    let info = r.cmd(&["INFO", "storage"]).text();
    info_field(&info, &format!("storage_{field}"))
        .unwrap_or_else(|| panic!("no storage_{field} in INFO"))
        .parse()
        .unwrap()
}

/// Sends `cmds` pipelined (200 at a time) and returns the replies; none may be an error.
fn send_all(r: &mut Raw, cmds: &[Vec<String>]) -> Vec<Value> {
    let mut replies = Vec::with_capacity(cmds.len());
    for chunk in cmds.chunks(200) {
        let mut out = Vec::new();
        for c in chunk {
            out.extend_from_slice(&resp::encode(c));
        }
        r.send(&out);
        for c in chunk {
            let v = r.read_value();
            assert!(!v.is_error(), "{c:?}: {v:?}");
            replies.push(v);
        }
    }
    replies
}

/// The local model: the entries (ID, value of field `f`) in ID order.
struct Model {
    key: String,
    entries: Vec<(String, String)>,
}

impl Model {
    /// XADDs `n` entries (explicit IDs after the last one) and records them.
    fn add(&mut self, r: &mut Raw, n: usize) {
        let mut ms = self.entries.last().map_or(1, |(id, _)| ms_of(id) + 1);
        let mut cmds = Vec::with_capacity(n);
        let mut added = Vec::with_capacity(n);
        for i in 0..n {
            // Several entries per millisecond now and then.
            let seq = i % 3;
            if seq == 0 {
                ms += 1;
            }
            let id = format!("{ms}-{seq}");
            let v = format!("value-{ms}-{}", "x".repeat(i % 17));
            cmds.push(vec![
                "XADD".to_string(),
                self.key.clone(),
                id.clone(),
                "f".into(),
                v.clone(),
            ]);
            added.push((id, v));
        }
        let replies = send_all(r, &cmds);
        for (reply, (id, _)) in replies.iter().zip(&added) {
            assert_eq!(&reply.text(), id);
        }
        self.entries.extend(added);
    }

    /// XDELs the entries at positions `at` (ascending).
    fn delete(&mut self, r: &mut Raw, at: &[usize]) {
        let ids: Vec<String> = at.iter().map(|&i| self.entries[i].0.clone()).collect();
        let mut args = vec!["XDEL", &self.key];
        args.extend(ids.iter().map(|s| s.as_str()));
        assert_eq!(r.cmd(&args).int(), ids.len() as i64);
        for &i in at.iter().rev() {
            self.entries.remove(i);
        }
    }

    /// Checks the stream against the model: length, both ends, windows here and there,
    /// and (when `whole`) every entry.
    fn check(&self, r: &mut Raw, whole: bool) {
        let key = &self.key;
        assert_eq!(r.cmd(&["XLEN", key]).int(), self.entries.len() as i64);
        let n = self.entries.len();
        for start in [0, 1, n / 3, n / 2, n.saturating_sub(7)] {
            let count = 7.min(n - start.min(n));
            if count == 0 {
                continue;
            }
            let from = &self.entries[start].0;
            let got = r.cmd(&["XRANGE", key, from, "+", "COUNT", &count.to_string()]);
            assert_eq!(
                entries_of(&got),
                self.entries[start..start + count],
                "XRANGE {from} + COUNT {count}"
            );
        }
        let got = r.cmd(&["XREVRANGE", key, "+", "-", "COUNT", "5"]);
        let want: Vec<(String, String)> = self.entries.iter().rev().take(5).cloned().collect();
        assert_eq!(entries_of(&got), want, "XREVRANGE");
        if whole {
            // Every entry, 2,000 at a time (the test client parses a big reply slowly).
            let mut from = "-".to_string();
            let mut at = 0;
            loop {
                let got = entries_of(&r.cmd(&["XRANGE", key, &from, "+", "COUNT", "2000"]));
                let want = &self.entries[at..(at + 2000).min(n)];
                assert!(got == want, "XRANGE {from} + COUNT 2000 differs");
                at += got.len();
                match got.last() {
                    Some((id, _)) if got.len() == 2000 => from = format!("({id}"),
                    _ => break,
                }
            }
            assert_eq!(at, n);
        }
    }
}

fn ms_of(id: &str) -> u64 {
    id.split('-').next().unwrap().parse().unwrap()
}

/// (ID, value of field `f`) of an XRANGE reply.
fn entries_of(v: &Value) -> Vec<(String, String)> {
    v.items()
        .into_iter()
        .map(|e| {
            let e = e.items();
            let fields = e[1].strings();
            assert_eq!(fields.len(), 2);
            assert_eq!(fields[0], "f");
            (e[0].text(), fields[1].clone())
        })
        .collect()
}

/// Replies that describe the stream's state beyond its entries (to compare across
/// restarts), with the times that pass (idle, inactive) masked.
fn state(r: &mut Raw, key: &str) -> Vec<Value> {
    let mut consumers = r.cmd(&["XINFO", "CONSUMERS", key, "g1"]);
    if let Value::Array(cs) = &mut consumers {
        for c in cs {
            if let Value::Array(kv) = c {
                for i in (0..kv.len()).step_by(2) {
                    let k = kv[i].text();
                    if k == "idle" || k == "inactive" {
                        kv[i + 1] = Value::Integer(0);
                    }
                }
            }
        }
    }
    let mut pending = |g: &str| {
        let mut v = r.cmd(&["XPENDING", key, g, "-", "+", "1000"]);
        if let Value::Array(ps) = &mut v {
            for p in ps {
                if let Value::Array(f) = p {
                    f[2] = Value::Integer(0);
                }
            }
        }
        v
    };
    let (p1, p2) = (pending("g1"), pending("g2"));
    vec![
        r.cmd(&["XINFO", "STREAM", key]),
        r.cmd(&["XINFO", "GROUPS", key]),
        consumers,
        r.cmd(&["XPENDING", key, "g1"]),
        p1,
        p2,
    ]
}

/// Asserts that two states are equal without printing them whole.
fn same_state(got: &[Value], want: &[Value], when: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g != w {
            let (g, w) = (format!("{g:?}"), format!("{w:?}"));
            let at = g
                .bytes()
                .zip(w.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            let from = at.saturating_sub(200);
            panic!(
                "{when}: state reply {i} differs at byte {at}:\n got:  ...{}\n want: ...{}",
                &g[from..(at + 200).min(g.len())],
                &w[from..(at + 200).min(w.len())]
            );
        }
    }
}

/// The most records a grouped stream's skeleton takes (the first read of `m` after a
/// restart reads it): root, ~entries/100/512 index records, the 2 consumer groups with their
/// PEL directories and pages (of 64 to 128 entries), head and tail pages.
fn skeleton_reads_max(r: &mut Raw, m: &Model) -> i64 {
    let pel_pages: i64 = ["g1", "g2"]
        .iter()
        .map(|g| r.cmd(&["XPENDING", &m.key, g]).items()[0].int() / 64 + 1)
        .sum();
    // (+ 2: PEL pages split at 128 entries hold 64 to 128.)
    1 + (m.entries.len() / 100 / 512) as i64 + 1 + 2 * 2 + pel_pages + 2 + 2
}

/// The first commands after a restart on the big stream `m`: each reads a few records (the
/// root, the index records, the consumer groups, the head and tail pages, then the pages of
/// the entries asked for), not the stream; the replies match the model.
fn partial_reads(r: &mut Raw, m: &Model) {
    let key = &m.key;
    let n = m.entries.len();
    let reads = |r: &mut Raw| storage(r, "device_reads");
    let r0 = reads(r);
    let from = &m.entries[n / 2].0;
    let got = r.cmd(&["XRANGE", key, from, "+", "COUNT", "5"]);
    assert_eq!(entries_of(&got), m.entries[n / 2..n / 2 + 5]);
    let first = reads(r) - r0;
    // The skeleton: root, ~n/100/512 index records, the 2 consumer groups with their PEL
    // directories and pages (of 64 to 128 entries), head and tail pages; then at most two
    // pages for five entries.
    let skeleton_max = skeleton_reads_max(r, m);
    assert!(
        first <= skeleton_max + 2,
        "XRANGE of 5 entries after a restart read {first} records"
    );
    // Other windows: only their pages now.
    for at in [n / 5, n / 3, 3 * n / 4] {
        let r1 = reads(r);
        let from = &m.entries[at].0;
        let to = &m.entries[at + 3].0;
        let got = r.cmd(&["XRANGE", key, from, to]);
        assert_eq!(entries_of(&got), m.entries[at..at + 4]);
        let got = r.cmd(&["XREVRANGE", key, to, from, "COUNT", "2"]);
        let want: Vec<(String, String)> = m.entries[at + 2..at + 4].iter().rev().cloned().collect();
        assert_eq!(entries_of(&got), want);
        let d = reads(r) - r1;
        assert!(d <= 2, "XRANGE of 4 entries read {d} records");
    }
    let r1 = reads(r);
    assert_eq!(r.cmd(&["XLEN", key]).int(), n as i64);
    let info = r.cmd(&["XINFO", "STREAM", key]);
    let v = info.items();
    let at = |name: &str| {
        let i = (0..v.len())
            .step_by(2)
            .find(|&i| v[i].text() == name)
            .unwrap();
        v[i + 1].clone()
    };
    assert_eq!(at("length").int(), n as i64);
    assert_eq!(at("first-entry").items()[0].text(), m.entries[0].0);
    assert_eq!(at("last-entry").items()[0].text(), m.entries[n - 1].0);
    assert_eq!(reads(r) - r1, 0, "XLEN and XINFO STREAM read nothing more");
    eprintln!(
        "partial reads: {first} records for the first XRANGE (skeleton at most {skeleton_max})"
    );
}

fn entries_target() -> usize {
    std::env::var("SKERRY_STREAM_GROUPED_ENTRIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000)
}

fn big_stream(threads: &str, worker: usize) {
    skip_if_redis!(); // grouped streams and INFO storage fields are Skerry's
    let mut s = Server::start(&["--appendfsync", "always", "--threads", threads]);
    let mut r = s.raw();
    let mut m = Model {
        key: key_on("stream", worker),
        entries: Vec::new(),
    };
    let key = m.key.clone();
    let target = entries_target();
    let t0 = std::time::Instant::now();
    let phase = |what: &str| eprintln!("threads {threads}: {what} at {:?}", t0.elapsed());
    m.add(&mut r, target);
    phase("filled");
    m.check(&mut r, true);
    phase("checked");
    let groups0 = storage(&mut r, "collection_group_records");
    // One page per node of 100 entries.
    assert!(
        groups0 as usize >= target / 100,
        "{groups0} group records for {target} entries"
    );

    // Consumer groups: g1 reads 500 entries and acknowledges 100 of them; g2 starts at
    // the end.
    assert_eq!(r.cmd(&["XGROUP", "CREATE", &key, "g1", "0"]).text(), "OK");
    assert_eq!(r.cmd(&["XGROUP", "CREATE", &key, "g2", "$"]).text(), "OK");
    let got = r.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "alice",
        "COUNT",
        "500",
        "STREAMS",
        &key,
        ">",
    ]);
    let read = entries_of(&got.items()[0].items()[1]);
    assert_eq!(read, m.entries[..500]);
    let mut ack = vec!["XACK", &key, "g1"];
    ack.extend(read[..100].iter().map(|(id, _)| id.as_str()));
    assert_eq!(r.cmd(&ack).int(), 100);

    // 1,000 XADDs into the big stream: each writes a small record, not the stream.
    let bytes0 = storage(&mut r, "device_written_bytes");
    let appended0 = storage(&mut r, "records_appended");
    m.add(&mut r, 1000);
    let bytes = storage(&mut r, "device_written_bytes") - bytes0;
    let appended = storage(&mut r, "records_appended") - appended0;
    eprintln!(
        "threads {threads}: {} entries, {groups0} group records; 1,000 XADDs wrote {bytes} \
         device bytes ({} per XADD) in {appended} records",
        m.entries.len(),
        bytes / 1000
    );
    // The stream is several MB; an XADD rewrites the tail page (at most a node of about
    // 4 KB) and the root. Device bytes include partial sectors written again.
    assert!(
        bytes / 1000 <= 8192,
        "{} device bytes per XADD",
        bytes / 1000
    );
    assert!(appended <= 4 * 1000, "{appended} records for 1,000 XADDs");

    // XDEL in the middle, an exact trim at the front, g2 reads the new entries.
    let n = m.entries.len();
    m.delete(&mut r, &[n / 4, n / 4 + 1, n / 2, n - 3]);
    let min_id = m.entries[1000].0.clone();
    assert_eq!(r.cmd(&["XTRIM", &key, "MINID", &min_id]).int(), 1000);
    m.entries.drain(..1000);
    let got = r.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g2",
        "bob",
        "COUNT",
        "10",
        "STREAMS",
        &key,
        ">",
    ]);
    let read2 = entries_of(&got.items()[0].items()[1]);
    assert_eq!(read2.len(), 10);
    m.check(&mut r, true);
    let before = state(&mut r, &key);
    phase("changed");

    // A clean restart (index checkpoint), then kill -9 (scan): nothing acknowledged lost.
    r.send(&resp::encode(&["SHUTDOWN"]));
    s.wait_exit(Duration::from_secs(60)).expect("shutdown");
    s.start_again();
    phase("restarted");
    let mut r = s.raw();
    partial_reads(&mut r, &m);
    m.check(&mut r, true);
    phase("checked after restart");
    same_state(&state(&mut r, &key), &before, "after a clean restart");
    let g = storage(&mut r, "collection_group_records");
    assert!(g as usize >= m.entries.len() / 100, "{g} group records");

    // More changes, each acknowledged under appendfsync always, then kill -9.
    m.add(&mut r, 250);
    let mut ack = vec!["XACK", &key, "g1"];
    ack.extend(read[100..150].iter().map(|(id, _)| id.as_str()));
    assert_eq!(r.cmd(&ack).int(), 50);
    assert_eq!(
        r.cmd(&["XGROUP", "CREATECONSUMER", &key, "g1", "carol"])
            .int(),
        1
    );
    let n = m.entries.len();
    m.delete(&mut r, &[n / 3, n - 1]);
    let before = state(&mut r, &key);
    s.restart();
    phase("killed and restarted");
    let mut r = s.raw();
    m.check(&mut r, true);
    phase("checked after kill -9");
    same_state(&state(&mut r, &key), &before, "after kill -9");

    // An XADD as the first command after a restart reads the root, index and consumer
    // groups and the tail page, not the stream.
    let skeleton = skeleton_reads_max(&mut r, &m);
    s.restart();
    let mut r = s.raw();
    let reads0 = storage(&mut r, "device_reads");
    m.add(&mut r, 1);
    let reads = storage(&mut r, "device_reads") - reads0;
    eprintln!(
        "threads {threads}: XADD after a restart: {reads} device reads (skeleton at most \
         {skeleton})"
    );
    assert!(
        reads <= skeleton,
        "{reads} device reads for an XADD after a restart"
    );
    m.check(&mut r, true);

    // The stream still takes changes after recovery; COPY and RENAME (which move it as
    // one value) regroup it where it lands.
    m.add(&mut r, 10);
    m.check(&mut r, false);
    let copy = format!("{key}:copy");
    assert_eq!(r.cmd(&["COPY", &key, &copy]).int(), 1);
    let g = storage(&mut r, "collection_group_records");
    let mut c = Model {
        key: copy.clone(),
        entries: m.entries.clone(),
    };
    c.check(&mut r, true);
    let moved = format!("{key}:moved");
    assert_eq!(r.cmd(&["RENAME", &copy, &moved]).text(), "OK");
    c.key = moved.clone();
    c.check(&mut r, false);
    assert_eq!(
        r.cmd(&["XINFO", "STREAM", &moved]),
        r.cmd(&["XINFO", "STREAM", &key])
    );
    assert_eq!(r.cmd(&["DEL", &moved]).int(), 1);
    // As many group records, but for the index records: the copy's page ids start again
    // at 1, so its pages may span one index record fewer.
    let left = storage(&mut r, "collection_group_records");
    assert!(
        (g - 2 * left).abs() <= 2,
        "the copy had {} group records, the stream {left}",
        g - left
    );

    // DEL removes every group record.
    assert_eq!(r.cmd(&["DEL", &key]).int(), 1);
    assert_eq!(storage(&mut r, "collection_group_records"), 0);
}

#[test]
fn a_big_grouped_stream_one_thread() {
    big_stream("1", 0);
}

#[test]
fn a_big_grouped_stream_two_threads() {
    big_stream("2", 1);
}

/// A consumer group with a big PEL (`SKERRY_STREAM_GROUPED_PENDING`, default 50,000
/// pending entries): its PEL is stored in pages, so an XACK or an XREADGROUP writes a
/// page, not the PEL; the PEL survives a clean restart and kill -9.
fn big_pel(threads: &str) {
    skip_if_redis!(); // INFO storage fields are Skerry's
    let pending: usize = std::env::var("SKERRY_STREAM_GROUPED_PENDING")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let mut s = Server::start(&["--appendfsync", "always", "--threads", threads]);
    let mut r = s.raw();
    let mut m = Model {
        key: key_on("pel", 0),
        entries: Vec::new(),
    };
    let key = m.key.clone();
    m.add(&mut r, pending + 5000);
    assert_eq!(r.cmd(&["XGROUP", "CREATE", &key, "g", "0"]).text(), "OK");
    let mut read = 0;
    while read < pending {
        let n = 5000.min(pending - read).to_string();
        let got = r.cmd(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            &n,
            "STREAMS",
            &key,
            ">",
        ]);
        let e = entries_of(&got.items()[0].items()[1]);
        assert_eq!(e, m.entries[read..read + e.len()]);
        read += e.len();
    }
    let summary = |r: &mut Raw| r.cmd(&["XPENDING", &key, "g"]).items()[0].int();
    assert_eq!(summary(&mut r), pending as i64);
    // XACKs spread over the PEL: each writes one small record.
    let bytes0 = storage(&mut r, "device_written_bytes");
    let records0 = storage(&mut r, "records_appended");
    let mut acked = Vec::new();
    for k in 0..200 {
        let id = m.entries[k * (pending / 200)].0.clone();
        assert_eq!(r.cmd(&["XACK", &key, "g", &id]).int(), 1);
        acked.push(id);
    }
    let bytes = storage(&mut r, "device_written_bytes") - bytes0;
    let records = storage(&mut r, "records_appended") - records0;
    eprintln!(
        "threads {threads}: PEL of {pending}: 200 XACKs wrote {bytes} device bytes ({} per \
         XACK) in {records} records",
        bytes / 200
    );
    assert!(bytes / 200 <= 8192, "{} device bytes per XACK", bytes / 200);
    assert!(records <= 3 * 200, "{records} records for 200 XACKs");
    // XREADGROUP COUNT 1 + XACK pairs at the end of the big PEL.
    let bytes0 = storage(&mut r, "device_written_bytes");
    for k in 0..100 {
        let got = r.cmd(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "COUNT",
            "1",
            "STREAMS",
            &key,
            ">",
        ]);
        let e = entries_of(&got.items()[0].items()[1]);
        assert_eq!(e, m.entries[pending + k..pending + k + 1]);
        assert_eq!(r.cmd(&["XACK", &key, "g", &e[0].0]).int(), 1);
    }
    let bytes = storage(&mut r, "device_written_bytes") - bytes0;
    eprintln!(
        "threads {threads}: 100 XREADGROUP+XACK pairs wrote {} device bytes per pair",
        bytes / 100
    );
    assert!(
        bytes / 100 <= 16384,
        "{} device bytes per pair",
        bytes / 100
    );
    let want = pending as i64 - 200;
    let pel_window = |r: &mut Raw| {
        let mut v = r.cmd(&["XPENDING", &key, "g", "-", "+", "300"]);
        if let Value::Array(ps) = &mut v {
            for p in ps {
                if let Value::Array(f) = p {
                    f[2] = Value::Integer(0);
                }
            }
        }
        v
    };
    let before = pel_window(&mut r);
    assert_eq!(summary(&mut r), want);
    for id in &acked[..5] {
        assert_eq!(r.cmd(&["XACK", &key, "g", id]).int(), 0, "acked before");
    }
    r.send(&resp::encode(&["SHUTDOWN"]));
    s.wait_exit(Duration::from_secs(60)).expect("shutdown");
    s.start_again();
    let mut r = s.raw();
    assert_eq!(summary(&mut r), want, "after a clean restart");
    assert_eq!(pel_window(&mut r), before, "after a clean restart");
    let id = m.entries[pending - 1].0.clone();
    assert_eq!(r.cmd(&["XACK", &key, "g", &id]).int(), 1);
    s.restart();
    let mut r = s.raw();
    assert_eq!(summary(&mut r), want - 1, "after kill -9");
    assert_eq!(pel_window(&mut r), before, "after kill -9");
    assert_eq!(
        r.cmd(&["XACK", &key, "g", &id]).int(),
        0,
        "acked before kill -9"
    );
    by_pending_ids_reads_only_their_pages(&mut r, &m, pending);
}

/// After a restart, the commands that read entries by their pending IDs (XREADGROUP of
/// history, XCLAIM, XAUTOCLAIM) and XINFO STREAM FULL read only the pages of those entries,
/// not the stream (`m.entries.len() / 100` pages), and answer as the model says. alice's
/// pending list holds the first `pending` entries but every 250th.
fn by_pending_ids_reads_only_their_pages(r: &mut Raw, m: &Model, pending: usize) {
    let key = &m.key;
    let pages = m.entries.len() / 100;
    let read = |r: &mut Raw, what: &str, most: i64, cmd: &[&str]| -> Value {
        let r0 = storage(r, "device_reads");
        let v = r.cmd(cmd);
        let d = storage(r, "device_reads") - r0;
        eprintln!("{what}: {d} records read (the stream has {pages} pages)");
        assert!(
            d <= most,
            "{what} read {d} records; the stream has {pages} pages"
        );
        v
    };
    let e = |i: usize| m.entries[i].0.as_str();
    assert!(pending > 40_010);
    let got = read(
        r,
        "XREADGROUP of history",
        4,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            "3",
            "STREAMS",
            key,
            e(10_000),
        ],
    );
    assert_eq!(
        entries_of(&got.items()[0].items()[1]),
        m.entries[10_001..10_004]
    );
    // Each ID's page, and the pages around it.
    let got = read(
        r,
        "XCLAIM of 3",
        9,
        &[
            "XCLAIM",
            key,
            "g",
            "carol",
            "0",
            e(20_001),
            e(30_001),
            e(40_001),
        ],
    );
    let want: Vec<_> = [20_001, 30_001, 40_001]
        .iter()
        .map(|&i| m.entries[i].clone())
        .collect();
    assert_eq!(entries_of(&got), want);
    let got = read(
        r,
        "XAUTOCLAIM COUNT 3",
        4,
        &["XAUTOCLAIM", key, "g", "dave", "0", e(25_001), "COUNT", "3"],
    );
    let v = got.items();
    assert_eq!(v[0].text(), e(25_004));
    assert_eq!(entries_of(&v[1]), m.entries[25_001..25_004]);
    assert_eq!(v[2], Value::Array(vec![]));
    let got = read(
        r,
        "XINFO STREAM FULL COUNT 3",
        2,
        &["XINFO", "STREAM", key, "FULL", "COUNT", "3"],
    );
    let v = got.items();
    let at = (0..v.len())
        .step_by(2)
        .find(|&i| v[i].text() == "entries")
        .unwrap();
    assert_eq!(entries_of(&v[at + 1]), m.entries[..3]);
    assert_eq!(
        r.cmd(&["XPENDING", key, "g", "-", "+", "1", "carol"])
            .items()[0]
            .items()[0]
            .text(),
        e(20_001)
    );
}

#[test]
fn a_big_pending_list_one_thread() {
    big_pel("1");
}

#[test]
fn a_big_pending_list_two_threads() {
    big_pel("2");
}
