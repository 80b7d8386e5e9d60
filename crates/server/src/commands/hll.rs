//! HyperLogLog commands (Redis's `hyperloglog.c`): PFADD, PFCOUNT, PFMERGE, PFDEBUG,
//! PFSELFTEST. An HLL is a string value in Redis's own format ([`crate::hll`]); these
//! handlers read it through the keyspace's string API, edit the bytes and write them back.
//! PFCOUNT and PFMERGE over keys of several workers run through the generic cross-worker
//! path (`Conn::cross_keyed`: the keys are lent to one worker), as SUNIONSTORE does.

use super::Exec;
use crate::conn::Conn;
use crate::hll;
use crate::keyspace::{Expiry, Value};
use crate::reply::errors::WRONGTYPE;
use std::sync::atomic::{AtomicBool, Ordering};

/// A string that is not an HLL.
pub const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
/// A sparse HLL whose opcodes do not add up.
pub const INVALID_HLL: &str = "INVALIDOBJ Corrupted HLL object detected";

/// PFDEBUG SIMD's switch. Skerry has no separate vector path; the switch is kept so that
/// PFDEBUG SIMD answers as Redis on an AVX2 machine does.
static SIMD: AtomicBool = AtomicBool::new(true);

fn max_bytes(x: &Exec) -> usize {
    x.config.hot.hll_sparse_max_bytes.load(Ordering::Relaxed) as usize
}

/// The HLL under `key`: Ok(None) when missing; Err(()) after replying WRONGTYPE (not a
/// string) or the HLL WRONGTYPE (a string that is not an HLL). `count` counts the
/// keyspace hit or miss (reads) or not (writes).
fn read_hll(x: &mut Exec, key: &[u8], count: bool) -> Result<Option<Vec<u8>>, ()> {
    let found = if count {
        x.ks.get(x.db, key, x.now_ms)
    } else {
        x.ks.peek(x.db, key, x.now_ms)
    };
    match found.map(|g| g.value) {
        None => Ok(None),
        Some(Value::Str(s)) if hll::is_valid(&s) => Ok(Some(s)),
        Some(Value::Str(_)) => {
            x.reply.error(NOT_HLL);
            Err(())
        }
        Some(_) => {
            x.reply.error(WRONGTYPE);
            Err(())
        }
    }
}

fn store(x: &mut Exec, key: &[u8], v: &[u8]) {
    // An HLL is edited in place in Redis: its TTL stays.
    x.ks.put(x.db, key, v, Expiry::Keep, x.now_ms);
}

/// True when `v` is a valid dense HLL that none of `elements` would change: PFADD then
/// answers 0 without copying or writing the value (the common case once an HLL is big).
fn dense_unchanged(v: &[u8], elements: &[&[u8]]) -> bool {
    hll::is_valid(v)
        && !hll::is_sparse(v)
        && elements.iter().all(|e| {
            let (index, count) = hll::pat_len(e);
            count <= hll::dense_get(&v[hll::HDR..], index)
        })
}

/// PFADD key [element ...]
pub fn pfadd(x: &mut Exec, a: &[&[u8]]) {
    // Read in place first (PFADD is a write: it counts no keyspace hit or miss).
    let stats = (x.ks.stats.hits, x.ks.stats.misses);
    let unchanged =
        x.ks.with_value(x.db, a[1], x.now_ms, |v| dense_unchanged(v, &a[2..]));
    (x.ks.stats.hits, x.ks.stats.misses) = stats;
    let found = match unchanged {
        Ok(Some(true)) => {
            x.reply.int(0);
            return;
        }
        Ok(None) => {
            // Missing, or its value could not be read: then say why (as the dispatcher
            // does) and write nothing.
            if let Some(e) = x.ks.take_error() {
                x.reply.error(&format!("ERR {e}"));
                return;
            }
            None
        }
        _ => {
            let Ok(found) = read_hll(x, a[1], false) else {
                return;
            };
            found
        }
    };
    let mut updated = 0;
    let mut v = found.unwrap_or_else(|| {
        updated += 1;
        hll::new_sparse()
    });
    let max = max_bytes(x);
    for ele in &a[2..] {
        match hll::add(&mut v, ele, max) {
            Ok(true) => updated += 1,
            Ok(false) => {}
            Err(hll::Corrupt) => {
                // Redis edits the value in place: what the elements before changed stays.
                if updated > 0 {
                    store(x, a[1], &v);
                }
                x.reply.error(INVALID_HLL);
                return;
            }
        }
    }
    if updated > 0 {
        hll::invalidate_cache(&mut v);
        store(x, a[1], &v);
    }
    x.reply.int(i64::from(updated > 0));
}

/// PFCOUNT key [key ...]
pub fn pfcount(x: &mut Exec, a: &[&[u8]]) {
    if a.len() > 2 {
        // The union: the registers' maxima, counted; no cache involved.
        let mut max = Box::new([0u8; hll::REGISTERS]);
        for key in &a[1..] {
            let Ok(found) = read_hll(x, key, true) else {
                return;
            };
            if let Some(v) = found {
                if hll::merge_into(&mut max, &v).is_err() {
                    x.reply.error(INVALID_HLL);
                    return;
                }
            }
        }
        x.reply.int(hll::estimate(&hll::raw_histogram(&max)) as i64);
        return;
    }
    // A valid cache is read in place, without copying the value.
    let cached = x.ks.with_value(x.db, a[1], x.now_ms, |v| {
        if hll::is_valid(v) {
            hll::cached_card(v)
        } else {
            None
        }
    });
    match cached {
        Ok(Some(Some(card))) => {
            x.reply.int(card as i64);
            return;
        }
        Ok(None) => {
            x.reply.int(0);
            return;
        }
        _ => {}
    }
    let Ok(found) = read_hll(x, a[1], false) else {
        return;
    };
    let Some(mut v) = found else {
        x.reply.int(0);
        return;
    };
    let card = match hll::cached_card(&v) {
        Some(c) => c,
        None => {
            let Ok(c) = hll::count(&v) else {
                x.reply.error(INVALID_HLL);
                return;
            };
            // The cache is part of the value: Redis writes it back (and propagates it).
            hll::set_cached_card(&mut v, c);
            store(x, a[1], &v);
            c
        }
    };
    x.reply.int(card as i64);
}

/// PFMERGE destkey [sourcekey ...]
pub fn pfmerge(x: &mut Exec, a: &[&[u8]]) {
    let mut max = Box::new([0u8; hll::REGISTERS]);
    let mut use_dense = false;
    let mut dest = None;
    // The destination is merged too (it is the first of the keys read).
    for (i, key) in a[1..].iter().enumerate() {
        let Ok(found) = read_hll(x, key, true) else {
            return;
        };
        let Some(v) = found else {
            continue;
        };
        use_dense |= !hll::is_sparse(&v);
        if hll::merge_into(&mut max, &v).is_err() {
            x.reply.error(INVALID_HLL);
            return;
        }
        if i == 0 {
            dest = Some(v);
        }
    }
    let mut v = dest.unwrap_or_else(hll::new_sparse);
    if use_dense {
        match hll::to_dense(&v) {
            Ok(d) => v = d,
            Err(_) => {
                x.reply.error(INVALID_HLL);
                return;
            }
        }
        hll::dense_fill(&mut v, &max);
    } else {
        let limit = max_bytes(x);
        for (j, m) in max.iter().enumerate() {
            if *m == 0 {
                continue;
            }
            if hll::is_sparse(&v) {
                // Valid: it was merged above. Redis ignores the result here too.
                let _ = hll::sparse_set(&mut v, j, *m, limit);
            } else {
                hll::dense_set(&mut v[hll::HDR..], j, *m);
            }
        }
    }
    hll::invalidate_cache(&mut v);
    store(x, a[1], &v);
    x.reply.ok();
}

/// PFDEBUG subcommand key (GETREG, DECODE, ENCODING, TODENSE) | PFDEBUG SIMD ON|OFF
pub fn pfdebug(x: &mut Exec, a: &[&[u8]]) {
    let cmd = a[1];
    if cmd.eq_ignore_ascii_case(b"simd") {
        if a[2].eq_ignore_ascii_case(b"on") {
            SIMD.store(true, Ordering::Relaxed);
        } else if a[2].eq_ignore_ascii_case(b"off") {
            SIMD.store(false, Ordering::Relaxed);
        } else {
            x.reply.error("ERR Argument must be ON or OFF");
            return;
        }
        let on = SIMD.load(Ordering::Relaxed);
        x.reply.simple(if on { "enabled" } else { "disabled" });
        return;
    }
    let Ok(found) = read_hll_or_missing(x, a[2]) else {
        return;
    };
    let mut v = found;
    if cmd.eq_ignore_ascii_case(b"getreg") || cmd.eq_ignore_ascii_case(b"todense") {
        let sparse = hll::is_sparse(&v);
        if sparse {
            match hll::to_dense(&v) {
                Ok(d) => v = d,
                Err(_) => {
                    x.reply.error(INVALID_HLL);
                    return;
                }
            }
            // The new encoding is kept, as in Redis.
            store(x, a[2], &v);
        }
        if cmd.eq_ignore_ascii_case(b"todense") {
            x.reply.int(i64::from(sparse));
            return;
        }
        x.reply.array(hll::REGISTERS);
        let regs = &v[hll::HDR..];
        for i in 0..hll::REGISTERS {
            x.reply.int(i64::from(hll::dense_get(regs, i)));
        }
    } else if cmd.eq_ignore_ascii_case(b"decode") {
        if !hll::is_sparse(&v) {
            x.reply.error("ERR HLL encoding is not sparse");
            return;
        }
        x.reply.bulk(hll::decode(&v).as_bytes());
    } else if cmd.eq_ignore_ascii_case(b"encoding") {
        x.reply.simple(if hll::is_sparse(&v) {
            "sparse"
        } else {
            "dense"
        });
    } else {
        x.reply.error(&format!(
            "ERR Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(cmd)
        ));
    }
}

/// [`read_hll`] for PFDEBUG: a missing key is an error too.
fn read_hll_or_missing(x: &mut Exec, key: &[u8]) -> Result<Vec<u8>, ()> {
    match read_hll(x, key, false)? {
        Some(v) => Ok(v),
        None => {
            x.reply.error("ERR The specified key does not exist");
            Err(())
        }
    }
}

/// PFSELFTEST
pub fn pfselftest(c: &mut Conn, _a: &[&[u8]]) {
    let max = c
        .shared
        .config
        .hot
        .hll_sparse_max_bytes
        .load(Ordering::Relaxed) as usize;
    match hll::self_test(max, &mut rand::rng(), 1000, 10_000_000) {
        Ok(()) => c.reply.ok(),
        Err(e) => c.reply.error(&e),
    }
}
