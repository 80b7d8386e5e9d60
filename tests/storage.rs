//! The storage engine seen from a client: a full device refuses writes without losing
//! anything and recovers once space is freed; a damaged value record is reported, never
//! served. Skerry-only (Redis has no data device).

mod common;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;

const NO_SPACE: &str = "ERR no space left on the data devices";
const CORRUPTION: &str = "ERR data corruption detected";

fn is_no_space(v: &Value) -> bool {
    matches!(v, Value::Error(e) if e.starts_with(NO_SPACE))
}

// ---------------------------------------------------------------------------------------------
// Full device.

fn fill_key(i: usize) -> Vec<u8> {
    format!("fill:{i:06}").into_bytes()
}

/// A distinct 4 KiB value per key and generation.
fn fill_value(i: usize, generation: u64) -> Vec<u8> {
    let mut v = format!("g{generation}/{i}/").into_bytes();
    let fill = Rng::new((generation << 32) | i as u64).bytes(4096 - v.len());
    v.extend_from_slice(&fill);
    v
}

/// SETs 4 KiB values on keys `from..` in pipelined batches until a whole batch is refused with
/// the no-space error; records every acknowledged write in `model`. Returns the next key.
fn fill_until_full(
    r: &mut Raw,
    model: &mut BTreeMap<usize, Vec<u8>>,
    from: usize,
    gen: u64,
) -> usize {
    const BATCH: usize = 32;
    let mut i = from;
    let mut refused = 0;
    let t = Instant::now();
    loop {
        assert!(
            i - from < 64 * 1024,
            "a capped device took 256 MiB of values without filling up"
        );
        let cmds: Vec<Vec<Vec<u8>>> = (i..i + BATCH)
            .map(|k| vec![b"SET".to_vec(), fill_key(k), fill_value(k, gen)])
            .collect();
        let replies = pipeline(r, &cmds);
        let mut batch_refused = 0;
        for (k, reply) in (i..i + BATCH).zip(replies) {
            if reply == ok() {
                model.insert(k, fill_value(k, gen));
            } else if is_no_space(&reply) {
                batch_refused += 1;
            } else {
                panic!("SET {k} on a filling device: {reply:?}");
            }
        }
        i += BATCH;
        refused += batch_refused;
        if batch_refused == BATCH {
            eprintln!(
                "device full after {} keys ({} acknowledged, {refused} refused) in {:?}",
                i - from,
                model.len(),
                t.elapsed()
            );
            return i;
        }
    }
}

/// Reads every key of `model` (and checks DBSIZE) exactly.
fn check_model(r: &mut Raw, model: &BTreeMap<usize, Vec<u8>>, what: &str) {
    let t = Instant::now();
    let keys: Vec<&usize> = model.keys().collect();
    for chunk in keys.chunks(64) {
        let cmds: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|&&k| vec![b"GET".to_vec(), fill_key(k)])
            .collect();
        for (&&k, got) in chunk.iter().zip(pipeline(r, &cmds)) {
            if got != Value::Bulk(model[&k].clone()) {
                panic!("{what}: key {k} reads {got:?}");
            }
        }
    }
    assert_eq!(
        r.cmd(&["DBSIZE"]),
        int(model.len() as i64),
        "{what}: DBSIZE"
    );
    eprintln!(
        "{what}: {} keys read back in {:?}",
        model.len(),
        t.elapsed()
    );
}

/// SETs `keys` (generation `gen`) in pipelined batches, retrying the ones refused with the
/// no-space error until `deadline` (reclaim runs on a timer, and the first blocks to come back
/// may refill the tombstone reserves first). Records them in `model`; returns how long the
/// last retried one took to get in.
fn set_all_retrying(
    r: &mut Raw,
    model: &mut BTreeMap<usize, Vec<u8>>,
    keys: std::ops::Range<usize>,
    gen: u64,
    deadline: Instant,
) -> Duration {
    let started = Instant::now();
    let mut waited = Duration::ZERO;
    let all: Vec<usize> = keys.collect();
    for chunk in all.chunks(64) {
        let cmds: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|&k| vec![b"SET".to_vec(), fill_key(k), fill_value(k, gen)])
            .collect();
        for (&k, reply) in chunk.iter().zip(pipeline(r, &cmds)) {
            let mut reply = reply;
            while is_no_space(&reply) {
                assert!(
                    Instant::now() < deadline,
                    "SET {k}: no space came back in time; INFO storage:\n{}",
                    r.cmd(&["INFO", "storage"]).text()
                );
                std::thread::sleep(Duration::from_millis(50));
                reply = r.cmd_bytes(&[b"SET", &fill_key(k), &fill_value(k, gen)]);
                waited = started.elapsed();
            }
            assert_eq!(reply, ok(), "SET {k} after freeing space");
            model.insert(k, fill_value(k, gen));
        }
    }
    waited
}

fn storage_info(r: &mut Raw, field: &str) -> u64 {
    info_u64(r, "storage", field).unwrap_or_else(|| panic!("INFO storage has no {field}"))
}

#[test]
fn full_device_refuses_writes_loses_nothing_and_recovers() {
    skip_if_redis!();
    let mut s = Server::start(&[
        "--appendonly",
        "yes",
        "--data-size",
        "96mb",
        "--threads",
        "2",
    ]);
    // The data file starts below its cap and grows to it: 11 blocks of 8 MiB after the
    // first MiB.
    let cap_len = (1 << 20) + 11 * (8 << 20);
    assert!(std::fs::metadata(s.data_file()).unwrap().len() < cap_len);
    let mut r = s.raw();
    let mut model = BTreeMap::new();
    let next = fill_until_full(&mut r, &mut model, 0, 1);
    assert_eq!(std::fs::metadata(s.data_file()).unwrap().len(), cap_len);
    assert!(
        model.len() * 4096 >= 24 << 20,
        "only {} values of 4 KiB fit on a 96 MiB device",
        model.len()
    );
    let reclaimed_when_full = storage_info(&mut r, "storage_reclaimed_blocks");

    // Overwriting an acknowledged key fails and keeps the old value.
    let first = *model.keys().next().unwrap();
    let reply = r.cmd_bytes(&[b"SET", &fill_key(first), &fill_value(first, 9)]);
    assert!(is_no_space(&reply), "overwrite on a full device: {reply:?}");
    // Other writes are refused too, with the same error.
    let reply = r.cmd(&["APPEND", &String::from_utf8(fill_key(first)).unwrap(), "x"]);
    assert!(is_no_space(&reply), "APPEND on a full device: {reply:?}");
    check_model(&mut r, &model, "full device");

    // A full device survives kill -9 (after everysec has synced) with exactly that state.
    std::thread::sleep(EVERYSEC_WAIT);
    s.kill();
    s.start_again();
    let mut r = s.raw();
    check_model(&mut r, &model, "full device after kill -9");
    let reply = r.cmd_bytes(&[b"SET", b"one-more", &fill_value(0, 9)]);
    assert!(
        is_no_space(&reply),
        "SET after restart on a full device: {reply:?}"
    );

    // DEL works on a full device (20 keys: both workers write tombstones).
    let few: Vec<usize> = model.keys().rev().take(20).copied().collect();
    for k in few {
        assert_eq!(r.cmd_bytes(&[b"DEL", &fill_key(k)]), int(1), "DEL {k}");
        assert_eq!(r.cmd_bytes(&[b"GET", &fill_key(k)]), Value::Null);
        model.remove(&k);
    }
    // Still full (no whole block was freed), and still so after another kill -9; DEL keeps
    // working after that restart too.
    let reply = r.cmd_bytes(&[b"SET", b"one-more", &fill_value(0, 9)]);
    assert!(is_no_space(&reply), "SET after a few DELs: {reply:?}");
    std::thread::sleep(EVERYSEC_WAIT);
    s.kill();
    s.start_again();
    let mut r = s.raw();
    check_model(&mut r, &model, "full device with tombstones after kill -9");
    let few: Vec<usize> = model.keys().rev().take(20).copied().collect();
    for k in few {
        assert_eq!(
            r.cmd_bytes(&[b"DEL", &fill_key(k)]),
            int(1),
            "DEL {k} after a restart on a full device"
        );
        model.remove(&k);
    }
    // Deleting the oldest three quarters of the keys makes whole blocks obsolete.
    let old: Vec<usize> = model.keys().take(model.len() * 3 / 4).copied().collect();
    for chunk in old.chunks(64) {
        let cmds: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|&k| vec![b"DEL".to_vec(), fill_key(k)])
            .collect();
        for reply in pipeline(&mut r, &cmds) {
            assert_eq!(reply, int(1));
        }
        for k in chunk {
            model.remove(k);
        }
    }
    // Enough for at least one more block of new values.
    let deadline = Instant::now() + Duration::from_secs(10);
    let waited = set_all_retrying(&mut r, &mut model, next..next + 2049, 2, deadline);
    eprintln!("space came back within {waited:?} after the deletes");
    // Blocks came back (reclaimed; they may refill the tombstone reserves first, so the
    // free count alone need not grow).
    let reclaimed_after = storage_info(&mut r, "storage_reclaimed_blocks");
    assert!(
        reclaimed_after > 0,
        "storage_reclaimed_blocks {reclaimed_when_full} when full, {reclaimed_after} after freeing"
    );
    check_model(&mut r, &model, "after freeing space");

    // Fill up again; FLUSHALL on a full device works and frees everything.
    let next = fill_until_full(&mut r, &mut model, next + 2049, 3);
    check_model(&mut r, &model, "full again");
    assert_eq!(r.cmd(&["FLUSHALL"]), ok());
    model.clear();
    assert_eq!(r.cmd(&["DBSIZE"]), int(0));
    let deadline = Instant::now() + Duration::from_secs(10);
    let waited = set_all_retrying(&mut r, &mut model, next..next + 100, 4, deadline);
    eprintln!("space came back within {waited:?} after FLUSHALL");
    // Deletes and overwrites after the flush are kept too.
    assert_eq!(r.cmd_bytes(&[b"DEL", &fill_key(next + 1)]), int(1));
    model.remove(&(next + 1));
    assert_eq!(
        r.cmd_bytes(&[b"SET", &fill_key(next + 2), &fill_value(next + 2, 5)]),
        ok()
    );
    model.insert(next + 2, fill_value(next + 2, 5));
    check_model(&mut r, &model, "after FLUSHALL");
    std::thread::sleep(EVERYSEC_WAIT);
    s.kill();
    s.start_again();
    let mut r = s.raw();
    check_model(&mut r, &model, "after FLUSHALL and kill -9");
    let used = storage_info(&mut r, "storage_used_blocks");
    let free = storage_info(&mut r, "storage_free_blocks");
    assert!(free > 0, "after FLUSHALL: used {used}, free {free} blocks");
}

// ---------------------------------------------------------------------------------------------
// Corruption.

/// Every offset of `needle` in the file (read in chunks, overlapping by the needle's length).
fn find_all(path: &Path, needle: &[u8]) -> Vec<u64> {
    let mut f = File::open(path).unwrap();
    let mut found = Vec::new();
    let mut buf = vec![0u8; 4 << 20];
    let mut carry = 0usize; // bytes kept from the previous chunk
    let mut base = 0u64; // file offset of buf[0]
    loop {
        let n = f.read(&mut buf[carry..]).unwrap();
        if n == 0 {
            break;
        }
        let len = carry + n;
        let hay = &buf[..len];
        let mut at = 0;
        while let Some(p) = hay[at..].iter().position(|&b| b == needle[0]) {
            let p = at + p;
            if p + needle.len() > len {
                break;
            }
            if &hay[p..p + needle.len()] == needle {
                found.push(base + p as u64);
            }
            at = p + 1;
        }
        let keep = (needle.len() - 1).min(len);
        buf.copy_within(len - keep..len, 0);
        base += (len - keep) as u64;
        carry = keep;
    }
    found
}

fn good_value(i: usize) -> Vec<u8> {
    format!("good value {i}; ").repeat(40).into_bytes()
}

#[test]
fn corrupt_value_is_reported_not_served() {
    skip_if_redis!();
    let mut s = Server::start(&[
        "--appendonly",
        "yes",
        "--data-size",
        "64mb",
        "--appendfsync",
        "always",
        "--threads",
        "2",
    ]);
    let marker = b"<<victim value 5c1e8a93>>";
    let mut victim = marker.to_vec();
    victim.extend_from_slice(&Rng::new(11).bytes(3000));
    let mut r = s.raw();
    for i in 0..20 {
        assert_eq!(
            r.cmd_bytes(&[b"SET", format!("good:{i}").as_bytes(), &good_value(i)]),
            ok()
        );
    }
    assert_eq!(r.cmd_bytes(&[b"SET", b"victim", &victim]), ok());
    assert_eq!(r.cmd(&["SET", "small", "tiny"]), ok());
    // Restart so that the values are read from the device, not from a write buffer.
    s.stop_clean();
    s.start_again();
    let mut r = s.raw();
    assert_eq!(r.cmd(&["DBSIZE"]), int(22));

    // Flip one byte in the middle of the victim's value, in place, while the server runs.
    let path = s.data_file();
    let hits = find_all(&path, marker);
    assert!(!hits.is_empty(), "the victim's value is not in {path:?}");
    {
        let mut f = File::options().read(true).write(true).open(&path).unwrap();
        for &at in &hits {
            let pos = at + marker.len() as u64 + 1500;
            let mut b = [0u8];
            f.seek(SeekFrom::Start(pos)).unwrap();
            f.read_exact(&mut b).unwrap();
            b[0] ^= 0x20;
            f.seek(SeekFrom::Start(pos)).unwrap();
            f.write_all(&b).unwrap();
        }
        f.sync_all().unwrap();
    }

    for attempt in 0..2 {
        match r.cmd(&["GET", "victim"]) {
            Value::Error(e) if e.starts_with(CORRUPTION) => {}
            other => panic!("GET of a corrupt value (attempt {attempt}): {other:?}"),
        }
    }
    // MGET: an error reply, or the error in the victim's place; never the damaged bytes.
    match r.cmd(&["MGET", "good:0", "victim", "small"]) {
        Value::Error(e) if e.starts_with(CORRUPTION) => {}
        Value::Array(items)
            if items.len() == 3
                && items[0] == Value::Bulk(good_value(0))
                && matches!(&items[1], Value::Error(e) if e.starts_with(CORRUPTION))
                && items[2] == bulk("tiny") => {}
        other => panic!("MGET with a corrupt value: {other:?}"),
    }
    // The server stays healthy: other keys, PING, INFO, new connections.
    assert_eq!(r.cmd(&["PING"]), simple("PONG"));
    for i in 0..20 {
        assert_eq!(
            r.cmd(&["GET", &format!("good:{i}")]),
            Value::Bulk(good_value(i)),
            "good:{i}"
        );
    }
    assert_eq!(s.raw().cmd(&["GET", "small"]), bulk("tiny"));
    assert!(r.cmd(&["INFO", "storage"]).text().contains("storage_"));
    assert!(
        wait_until(Duration::from_secs(5), || {
            s.log_contents().lines().any(|l| {
                let l = l.to_ascii_lowercase();
                l.contains("corrupt") && (l.contains("block") || l.contains("offset"))
            })
        }),
        "the log does not report where the corruption is:\n{}",
        s.log_contents()
    );
    // The key can be replaced or deleted.
    assert_eq!(r.cmd(&["SET", "victim", "replaced"]), ok());
    assert_eq!(r.cmd(&["GET", "victim"]), bulk("replaced"));
    assert_eq!(r.cmd(&["DEL", "good:0"]), int(1));
    assert_eq!(r.cmd(&["DBSIZE"]), int(21));
}

// ---------------------------------------------------------------------------------------------
// Several data files.

#[test]
fn two_data_files_hold_more_than_one_and_come_back() {
    skip_if_redis!();
    let both = [
        "--appendonly",
        "yes",
        "--data-file",
        "a.data",
        "--data-file",
        "b.data",
        "--data-size",
        "32mb",
        "--threads",
        "2",
    ];
    let mut s = Server::start(&both);
    let mut r = s.raw();
    // 20 MiB of values: more than one 32 MiB file holds (3 blocks after the superblock, less
    // the space each worker and the tombstone reserve keep).
    let mut model = BTreeMap::new();
    let keys: Vec<usize> = (0..5000).collect();
    for chunk in keys.chunks(64) {
        let cmds: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|&k| vec![b"SET".to_vec(), fill_key(k), fill_value(k, 1)])
            .collect();
        for (&k, reply) in chunk.iter().zip(pipeline(&mut r, &cmds)) {
            assert_eq!(reply, ok(), "SET {k}");
            model.insert(k, fill_value(k, 1));
        }
    }
    for name in ["a.data", "b.data"] {
        let len = std::fs::metadata(s.dir().join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .len();
        assert_eq!(len, 32 << 20, "{name} is created with --data-size");
    }
    assert!(
        !s.data_file().exists(),
        "no default data file with --data-file"
    );
    check_model(&mut r, &model, "two files");
    std::thread::sleep(EVERYSEC_WAIT);
    s.kill();
    s.start_again();
    let mut r = s.raw();
    check_model(&mut r, &model, "two files after kill -9");
    drop(r);
    s.stop_clean();

    // One of the two files missing: refuse to start rather than serve half the data set.
    s.set_args(&[
        "--data-file",
        "a.data",
        "--data-size",
        "32mb",
        "--threads",
        "2",
    ]);
    match s.try_start_again() {
        Err(_) => {}
        Ok(()) => panic!("started with one of its two data files missing"),
    }
    s.kill();
    // And nothing was damaged by the attempt.
    s.set_args(&both);
    s.start_again();
    check_model(&mut s.raw(), &model, "two files after a refused start");
}

/// A value damaged while the server is stopped costs that key only: recovery goes on past
/// the damaged record, every other key of the block (before and after it) comes back, and the
/// victim is reported or gone, never back at its older version.
#[test]
fn corrupt_value_at_rest_costs_only_that_key() {
    skip_if_redis!();
    let mut s = Server::start(&[
        "--appendonly",
        "yes",
        "--data-size",
        "64mb",
        "--appendfsync",
        "always",
        "--threads",
        "1",
    ]);
    let marker = b"<<victim at rest 0d2f6b71>>";
    let mut victim = marker.to_vec();
    victim.extend_from_slice(&Rng::new(12).bytes(3000));
    let mut r = s.raw();
    let mut model = BTreeMap::new();
    // 50 keys, the victim, 200 keys in the same block, then 10 MiB more so that the block is
    // sealed.
    let write =
        |r: &mut Raw, model: &mut BTreeMap<usize, Vec<u8>>, keys: std::ops::Range<usize>| {
            let all: Vec<usize> = keys.collect();
            for chunk in all.chunks(64) {
                let cmds: Vec<Vec<Vec<u8>>> = chunk
                    .iter()
                    .map(|&k| vec![b"SET".to_vec(), fill_key(k), fill_value(k, 1)])
                    .collect();
                for (&k, reply) in chunk.iter().zip(pipeline(r, &cmds)) {
                    assert_eq!(reply, ok(), "SET {k}");
                    model.insert(k, fill_value(k, 1));
                }
            }
        };
    // An older version of the victim, which must not come back in its place.
    assert_eq!(r.cmd(&["SET", "victim", "superseded version"]), ok());
    write(&mut r, &mut model, 0..50);
    assert_eq!(r.cmd_bytes(&[b"SET", b"victim", &victim]), ok());
    write(&mut r, &mut model, 50..250);
    write(&mut r, &mut model, 250..2750);
    s.stop_clean();

    let path = s.data_file();
    let hits = find_all(&path, marker);
    assert_eq!(hits.len(), 1, "the victim's value is in the data file once");
    {
        let mut f = File::options().read(true).write(true).open(&path).unwrap();
        let pos = hits[0] + marker.len() as u64 + 1000;
        let mut b = [0u8];
        f.seek(SeekFrom::Start(pos)).unwrap();
        f.read_exact(&mut b).unwrap();
        b[0] ^= 0x01;
        f.seek(SeekFrom::Start(pos)).unwrap();
        f.write_all(&b).unwrap();
        f.sync_all().unwrap();
    }
    s.start_again();
    let mut r = s.raw();
    let victim_kept = match r.cmd(&["GET", "victim"]) {
        Value::Error(e) if e.starts_with(CORRUPTION) => true,
        Value::Null => false,
        other => panic!("GET of a value damaged at rest: {other:?}"),
    };
    eprintln!(
        "damaged at rest: the victim is {}",
        if victim_kept { "reported" } else { "dropped" }
    );
    for chunk in model.keys().copied().collect::<Vec<_>>().chunks(64) {
        let cmds: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|&k| vec![b"GET".to_vec(), fill_key(k)])
            .collect();
        for (&k, got) in chunk.iter().zip(pipeline(&mut r, &cmds)) {
            assert!(
                got == Value::Bulk(model[&k].clone()),
                "key {k} (written {} the damaged record) after restart: {got:?}",
                if k < 50 { "before" } else { "after" }
            );
        }
    }
    assert_eq!(
        r.cmd(&["DBSIZE"]),
        int(model.len() as i64 + victim_kept as i64)
    );
    assert!(
        s.log_contents().to_ascii_lowercase().contains("corrupt"),
        "the damage is logged"
    );
}

// ---------------------------------------------------------------------------------------------
// INFO storage.

#[test]
fn info_storage_tracks_live_bytes_and_blocks() {
    skip_if_redis!();
    let mut s = Server::start(&[
        "--appendonly",
        "yes",
        "--data-size",
        "64mb",
        "--threads",
        "2",
    ]);
    let mut r = s.raw();
    assert_eq!(storage_info(&mut r, "storage_used_blocks"), 0);
    assert_eq!(storage_info(&mut r, "storage_live_bytes"), 0);
    let free_at_start = storage_info(&mut r, "storage_free_blocks");
    assert!(free_at_start > 0);
    let key = |i: usize| format!("live:{i:04}");
    let set_all = |r: &mut Raw, keys: std::ops::Range<usize>, len: usize| {
        let cmds: Vec<Vec<Vec<u8>>> = keys
            .map(|i| vec![b"SET".to_vec(), key(i).into_bytes(), vec![b'v'; len]])
            .collect();
        for reply in pipeline(r, &cmds) {
            assert_eq!(reply, ok());
        }
    };
    set_all(&mut r, 0..1000, 1024);
    // Each record: 32-byte header, key, value, padding to 8 bytes.
    let record = |len: usize| (32 + 9 + len).div_ceil(8) * 8;
    let want = 1000 * record(1024) as u64;
    let live = storage_info(&mut r, "storage_live_bytes");
    assert!(
        (1000 * 1024..=want).contains(&live),
        "live bytes {live} after 1000 values of 1 KiB (records: {want})"
    );
    assert!(storage_info(&mut r, "storage_used_blocks") >= 1);
    assert!(storage_info(&mut r, "storage_free_blocks") < free_at_start);

    // Deletes and overwrites: the old records stop counting once their successors are
    // durable (everysec: within about a second).
    let dels: Vec<Vec<String>> = (0..500).map(|i| vec!["DEL".into(), key(i)]).collect();
    for reply in pipeline(&mut r, &dels) {
        assert_eq!(reply, int(1));
    }
    set_all(&mut r, 500..750, 2048);
    let want = (250 * record(2048) + 250 * record(1024)) as u64;
    let mut live = 0;
    assert!(
        wait_until(Duration::from_secs(5), || {
            live = storage_info(&mut r, "storage_live_bytes");
            live == want
        }),
        "live bytes {live}, expected {want}"
    );
    // A restart counts exactly the same live records.
    drop(r);
    s.stop_clean();
    s.start_again();
    let mut r = s.raw();
    assert_eq!(storage_info(&mut r, "storage_live_bytes"), want);
    assert_eq!(r.cmd(&["DBSIZE"]), int(500));
    assert_eq!(r.cmd(&["GET", &key(600)]), Value::Bulk(vec![b'v'; 2048]));
    assert_eq!(r.cmd(&["GET", &key(900)]), Value::Bulk(vec![b'v'; 1024]));
    assert_eq!(storage_info(&mut r, "storage_blocking_reads"), 0);
}

/// Writes faster than the devices take them: past `storage-write-backlog-max-mb` of a
/// worker's full blocks waiting for the devices, writes wait for a sync, and nothing is
/// refused or lost on the way.
#[test]
fn write_backlog_bound_makes_writes_wait_and_loses_nothing() {
    skip_if_redis!();
    let mut s = Server::start(&[
        "--appendonly",
        "yes",
        "--data-size",
        "512mb",
        "--threads",
        "1",
        "--storage-write-backlog-max-mb",
        "1",
    ]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "storage-write-backlog-max-mb"]),
        Value::Array(vec![
            Value::Bulk(b"storage-write-backlog-max-mb".to_vec()),
            Value::Bulk(b"1".to_vec())
        ])
    );
    match r.cmd(&["CONFIG", "SET", "storage-write-backlog-max-mb", "0"]) {
        Value::Error(e) => assert!(e.contains("storage-write-backlog-max-mb"), "{e}"),
        other => panic!("a bound of 0 was accepted: {other:?}"),
    }
    assert_eq!(storage_info(&mut r, "storage_write_backlog_waits"), 0);
    // About 160 MB in pipelines of 2,000 SETs (8 MB): each pipeline seals a block or more
    // while the previous ones are still going to the device.
    let mut model = BTreeMap::new();
    for round in 0..20 {
        let keys = round * 2000..(round + 1) * 2000;
        let cmds: Vec<Vec<Vec<u8>>> = keys
            .clone()
            .map(|k| vec![b"SET".to_vec(), fill_key(k), fill_value(k, 7)])
            .collect();
        for (k, reply) in keys.zip(pipeline(&mut r, &cmds)) {
            assert_eq!(reply, ok(), "SET of key {k}");
            model.insert(k, fill_value(k, 7));
        }
    }
    let waits = storage_info(&mut r, "storage_write_backlog_waits");
    assert!(waits > 0, "no write waited with a 1 MB backlog bound");
    check_model(&mut r, &model, "after the burst");
    // The bound changes at run time like any CONFIG name.
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "storage-write-backlog-max-mb", "4096"]),
        ok()
    );
    // Under `appendfsync everysec` a write is durable within a second.
    std::thread::sleep(Duration::from_millis(1500));
    drop(r);
    s.kill();
    s.start_again();
    let mut r = s.raw();
    check_model(&mut r, &model, "after kill -9");
}

#[test]
fn data_size_change_keeps_the_existing_store() {
    skip_if_redis!();
    let opts = |size: &'static str| ["--data-size", size, "--threads", "2", "--appendonly", "yes"];
    let mut s = Server::start(&opts("64mb"));
    let mut r = s.raw();
    let mut model = BTreeMap::new();
    let cmds: Vec<Vec<Vec<u8>>> = (0..500)
        .map(|k| vec![b"SET".to_vec(), fill_key(k), fill_value(k, 1)])
        .collect();
    for (k, reply) in pipeline(&mut r, &cmds).into_iter().enumerate() {
        assert_eq!(reply, ok());
        model.insert(k, fill_value(k, 1));
    }
    let total = storage_info(&mut r, "storage_total_blocks");
    drop(r);
    s.stop_clean();
    for size in ["32mb", "128mb", "64mb"] {
        s.set_args(&opts(size));
        s.start_again();
        let mut r = s.raw();
        check_model(
            &mut r,
            &model,
            &format!("restarted with --data-size {size}"),
        );
        assert_eq!(
            storage_info(&mut r, "storage_total_blocks"),
            total,
            "an existing store keeps its geometry"
        );
        drop(r);
        s.stop_clean();
    }
}

// ---------------------------------------------------------------------------------------------
// A data file that grows.

/// A distinct 1 MiB value per key: a shared random body with the key stamped every 64 KiB.
fn big_value(base: &[u8], i: usize) -> Vec<u8> {
    let mut v = base.to_vec();
    let stamp = format!("<{i:08}>");
    for at in (0..v.len()).step_by(64 << 10) {
        v[at..at + stamp.len()].copy_from_slice(stamp.as_bytes());
    }
    v
}

/// Checks that keys `0..n` are all there with their length, and the values of every
/// `stride`-th one byte for byte.
fn check_big_values(r: &mut Raw, base: &[u8], n: usize, stride: usize, what: &str) {
    assert_eq!(r.cmd(&["DBSIZE"]), int(n as i64), "{what}: DBSIZE");
    // STRLEN reads each 1 MiB value from the device after a restart, and the replies of
    // one read's commands go out together: pipelines of 256 keep each wait for a reply
    // (256 MiB of reads) well inside the client's time-out on a slow disk.
    for chunk in (0..n).collect::<Vec<_>>().chunks(256) {
        let cmds: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|&i| vec![b"STRLEN".to_vec(), format!("big:{i}").into_bytes()])
            .collect();
        for (&i, reply) in chunk.iter().zip(pipeline(r, &cmds)) {
            assert_eq!(reply, int(base.len() as i64), "{what}: STRLEN big:{i}");
        }
    }
    for chunk in (0..n).step_by(stride).collect::<Vec<_>>().chunks(8) {
        let cmds: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|&i| vec![b"GET".to_vec(), format!("big:{i}").into_bytes()])
            .collect();
        for (&i, reply) in chunk.iter().zip(pipeline(r, &cmds)) {
            match reply {
                Value::Bulk(v) => assert!(v == big_value(base, i), "{what}: big:{i} differs"),
                other => panic!("{what}: GET big:{i}: {other:?}"),
            }
        }
    }
}

/// A server started with no data flags creates a small data file and grows it as values
/// arrive: it takes 3 GiB, more than the 1 GiB the data file used to be fixed at, with no
/// error, and has them all after a clean restart and after `kill -9`.
#[test]
fn a_server_with_no_flags_takes_3_gib_and_keeps_it() {
    skip_if_redis!();
    const N: usize = 3072; // × 1 MiB
    let mut s = Server::start(&[]);
    let start_len = std::fs::metadata(s.data_file()).unwrap().len();
    assert!(
        start_len < 256 << 20,
        "a new data file starts small: {start_len}"
    );
    let base = Rng::new(7).bytes(1 << 20);
    let mut r = s.raw();
    for chunk in (0..N).collect::<Vec<_>>().chunks(16) {
        let cmds: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|&i| {
                vec![
                    b"SET".to_vec(),
                    format!("big:{i}").into_bytes(),
                    big_value(&base, i),
                ]
            })
            .collect();
        for (&i, reply) in chunk.iter().zip(pipeline(&mut r, &cmds)) {
            assert_eq!(reply, ok(), "SET big:{i}");
        }
    }
    let len = std::fs::metadata(s.data_file()).unwrap().len();
    assert!(len >= 3 << 30, "the data file grew to {len} bytes");
    assert!(
        storage_info(&mut r, "storage_data_file_grows") >= 1,
        "INFO counts the growth steps"
    );
    drop(r);
    s.stop_clean();
    s.start_again();
    let mut r = s.raw();
    check_big_values(&mut r, &base, N, 4, "after a clean restart");
    drop(r);
    s.kill();
    s.start_again();
    let mut r = s.raw();
    check_big_values(&mut r, &base, N, 1, "after kill -9");
}

/// A data file made with a fixed size (as every data file was before they grew, and as
/// `--data-size` caps one) grows once the cap is lifted, and keeps what it held.
#[test]
fn a_capped_data_file_grows_once_the_cap_is_lifted() {
    skip_if_redis!();
    let mut s = Server::start(&["--data-size", "32mb", "--threads", "1"]);
    let mut r = s.raw();
    let mut model = BTreeMap::new();
    let next = fill_until_full(&mut r, &mut model, 0, 1);
    assert_eq!(std::fs::metadata(s.data_file()).unwrap().len(), 32 << 20);
    drop(r);
    s.stop_clean();
    s.set_args(&["--threads", "1"]);
    s.start_again();
    let mut r = s.raw();
    check_model(&mut r, &model, "after the cap was lifted");
    let cmds: Vec<Vec<Vec<u8>>> = (next..next + 8192)
        .map(|k| vec![b"SET".to_vec(), fill_key(k), fill_value(k, 1)])
        .collect();
    for (k, reply) in (next..).zip(pipeline(&mut r, &cmds)) {
        assert_eq!(reply, ok(), "SET {k} once the file may grow");
        model.insert(k, fill_value(k, 1));
    }
    assert!(std::fs::metadata(s.data_file()).unwrap().len() > 64 << 20);
    check_model(&mut r, &model, "grown");
}

/// A second server on a data file already in use refuses to start (an exclusive lock), and
/// the first one keeps serving its data.
#[test]
fn a_data_file_in_use_is_refused() {
    skip_if_redis!();
    let s = Server::start(&["--data-size", "64mb"]);
    let mut r = s.raw();
    assert_eq!(r.cmd(&["SET", "k", "v"]), ok());
    let path = s.data_file().to_string_lossy().into_owned();
    let (status, log) = Server::run_expect_exit(
        Opts {
            args: vec![
                "--data-file".into(),
                path,
                "--data-size".into(),
                "64mb".into(),
            ],
            ..Opts::default()
        },
        Duration::from_secs(10),
    );
    assert!(
        !status.success(),
        "second server on the same data file started"
    );
    assert!(
        log.contains("is in use by another process"),
        "log of the refused start:\n{log}"
    );
    assert_eq!(r.cmd(&["GET", "k"]), bulk("v"));
}

/// A command whose values together exceed the worker's read buffer (8 MiB) still gets all of
/// them, on the connection's own worker and through a forwarded batch (values read back
/// from the device after a restart).
#[test]
fn values_larger_than_the_read_buffer_are_all_served() {
    skip_if_redis!();
    let mut s = Server::start(&["--data-size", "256mb", "--threads", "2"]);
    let keys: Vec<String> = (0..12).map(|i| format!("{{big}}:{i}")).collect();
    let value = |i: usize| vec![b'a' + i as u8; 1 << 20];
    let mut con = s.client();
    for (i, k) in keys.iter().enumerate() {
        let _: () = redis::cmd("SET")
            .arg(k)
            .arg(value(i))
            .query(&mut con)
            .unwrap();
    }
    drop(con);
    s.stop_clean();
    s.start_again();
    // Connections are spread round-robin over the two workers: one of these two runs MGET
    // locally, the other forwards it to the keys' worker.
    for _ in 0..2 {
        let mut con = s.client();
        con.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let got: Vec<Vec<u8>> = redis::cmd("MGET").arg(&keys).query(&mut con).unwrap();
        assert_eq!(got.len(), 12);
        for (i, v) in got.iter().enumerate() {
            assert!(*v == value(i), "value {i} differs");
        }
        let n: usize = redis::cmd("STRLEN").arg(&keys[11]).query(&mut con).unwrap();
        assert_eq!(n, 1 << 20);
    }
}
