//! DEBUG DIGEST and DEBUG DIGEST-VALUE (Redis's `debug.c`): a SHA1-based digest of the
//! whole dataset, or of single values, computed as Redis computes it, so that a digest
//! taken here equals Redis's for the same data (the tests compare digests before and
//! after DEBUG RELOAD, a COPY with its source, a replica with its primary).
//!
//! Order does not matter where the type has none: the digest of a set, a hash or a
//! database is the XOR of the digests of its elements; a list, a string or a stream mixes
//! its items in order (each step hashes the digest so far with the item).

use sha1_smol::Sha1;
use skerry_codec::RdbValue;

use super::dump;
use crate::conn::Conn;
use crate::rdb;

/// A digest: 20 bytes.
type Digest = [u8; 20];

/// XORs `b` into `a`.
fn xor_into(a: &mut Digest, b: &Digest) {
    for (x, y) in a.iter_mut().zip(b) {
        *x ^= y;
    }
}

/// Redis's `xorDigest`: XORs the SHA1 of `data` into `d`.
fn xor(d: &mut Digest, data: &[u8]) {
    xor_into(d, &Sha1::from(data).digest().bytes());
}

/// Redis's `mixDigest`: XORs the SHA1 of `data` into `d`, then replaces `d` with its own
/// SHA1 (so the order of mixed items counts).
fn mix(d: &mut Digest, data: &[u8]) {
    xor(d, data);
    *d = Sha1::from(&d[..]).digest().bytes();
}

/// Redis's object type numbers (`OBJ_STRING` ...), mixed in first.
fn type_number(v: &RdbValue) -> u32 {
    match v {
        RdbValue::String(_) => 0,
        RdbValue::List(_) => 1,
        RdbValue::Set(_) => 2,
        RdbValue::Zset(_) => 3,
        RdbValue::Hash(_) | RdbValue::HashWithTtl(_) => 4,
        RdbValue::Stream(_) => 6,
    }
}

/// Redis's `xorObjectDigest`: mixes value `v` (and the mark of an expiry) into `d`.
fn value_into(d: &mut Digest, v: &RdbValue, expires: bool) {
    mix(d, &type_number(v).to_be_bytes());
    let pair = |d: &mut Digest, a: &[u8], b: &[u8], field_ttl: bool| {
        let mut e = [0u8; 20];
        mix(&mut e, a);
        mix(&mut e, b);
        if field_ttl {
            xor(&mut e, b"!!hexpire!!");
        }
        xor(d, &e);
    };
    match v {
        RdbValue::String(s) => mix(d, s),
        RdbValue::List(items) => items.iter().for_each(|i| mix(d, i)),
        RdbValue::Set(members) => members.iter().for_each(|m| xor(d, m)),
        RdbValue::Zset(members) => {
            let mut score = Vec::with_capacity(32);
            for (m, s) in members {
                score.clear();
                skerry_resp::format_double_shortest(*s, &mut score);
                pair(d, m, &score, false);
            }
        }
        RdbValue::Hash(fields) => fields.iter().for_each(|(f, v)| pair(d, f, v, false)),
        RdbValue::HashWithTtl(fields) => fields
            .iter()
            .for_each(|f| pair(d, &f.field, &f.value, f.expire_at_ms.is_some())),
        RdbValue::Stream(s) => {
            for e in &s.entries {
                mix(d, format!("{}.{}", e.id.ms, e.id.seq).as_bytes());
                for (f, v) in &e.fields {
                    mix(d, f);
                    mix(d, v);
                }
            }
        }
    }
    if expires {
        xor(d, b"!!expire!!");
    }
}

/// Mixes `key`'s value (resident) and its expiry mark into `d`; false when there is no
/// key; Err with the read error's message.
fn key_into(
    d: &mut Digest,
    ks: &mut crate::keyspace::Keyspace,
    db: usize,
    key: &[u8],
    now_ms: i64,
) -> Result<bool, String> {
    match dump::key_value(ks, db, key, now_ms) {
        Ok(Some((v, expire_at_ms))) => {
            value_into(d, &v, expire_at_ms != 0);
            Ok(true)
        }
        Ok(None) => Ok(false),
        Err(dump::Unreadable) => Err(ks.take_error().unwrap_or_default()),
    }
}

/// The XOR of the digests of `keys` of `db` (resident), each its name mixed with its value
/// as DEBUG DIGEST takes them (a `Walk` step on the keys' worker).
fn keys_digest(
    s: &mut crate::worker::Shard,
    db: usize,
    keys: &[Vec<u8>],
    now_ms: i64,
) -> Result<Digest, String> {
    let mut acc = [0u8; 20];
    for k in keys {
        let mut d = [0u8; 20];
        mix(&mut d, k);
        if key_into(&mut d, &mut s.keyspace, db, k, now_ms)? {
            xor(&mut acc, &d);
        }
    }
    Ok(acc)
}

fn hex(d: &Digest) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// DEBUG DIGEST-VALUE key [key ...]: one digest per key (zeros for a missing key).
pub async fn digest_value(c: &mut Conn, a: &[&[u8]]) {
    let (db, now_ms) = (c.db, c.now_ms);
    let mut out = Vec::with_capacity(a.len() - 2);
    for key in &a[2..] {
        let w = crate::slot::owner(key, c.shared.workers);
        let k = key.to_vec();
        let txn = rdb::hold_workers(&c.shared, c.worker, c.ambient_txn, vec![w]).await;
        let got = txn
            .run_resident(w, db, vec![k.clone()], now_ms, move |s| {
                let mut d = [0u8; 20];
                key_into(&mut d, &mut s.keyspace, db, &k, now_ms).map(|_| d)
            })
            .await;
        match got {
            Ok(Ok(d)) => out.push(hex(&d)),
            Ok(Err(e)) | Err(e) => {
                c.reply.error(&format!("ERR {e}"));
                return;
            }
        }
    }
    c.reply.array(out.len());
    for d in out {
        c.reply.simple(&d);
    }
}

/// DEBUG DIGEST: the digest of every database, every worker held meanwhile (zeros for an
/// empty dataset).
pub async fn digest(c: &mut Conn) {
    let shared = c.shared.clone();
    let now_ms = c.now_ms;
    let databases = shared.config.get_i64("databases") as usize;
    let txn = rdb::hold_all(&shared, c.worker, c.ambient_txn).await;
    let mut final_digest = [0u8; 20];
    for db in 0..databases {
        // Per database: whether it holds keys, and the XOR of its key digests.
        let mut any = false;
        let mut acc = [0u8; 20];
        let mut walk = rdb::Walk::new(db, shared.workers, now_ms);
        loop {
            match walk.next(&txn, keys_digest).await {
                Ok(Some(d)) => {
                    any = true;
                    xor_into(&mut acc, &d);
                }
                Ok(None) => break,
                Err(e) => {
                    c.reply.error(&format!("ERR {e}"));
                    return;
                }
            }
        }
        if any {
            mix(&mut final_digest, &(db as u32).to_be_bytes());
            xor_into(&mut final_digest, &acc);
        }
    }
    drop(txn);
    c.reply.simple(&hex(&final_digest));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_depends_on_order_and_xor_does_not() {
        let (mut a, mut b) = ([0u8; 20], [0u8; 20]);
        mix(&mut a, b"x");
        mix(&mut a, b"y");
        mix(&mut b, b"y");
        mix(&mut b, b"x");
        assert_ne!(a, b);
        let (mut a, mut b) = ([0u8; 20], [0u8; 20]);
        xor(&mut a, b"x");
        xor(&mut a, b"y");
        xor(&mut b, b"y");
        xor(&mut b, b"x");
        assert_eq!(a, b);
    }
}
