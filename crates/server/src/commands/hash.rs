//! HASH commands (Redis's `t_hash.c`). Each runs on the worker that owns its keys, on the
//! decoded collection the keyspace hands out (see `crate::coll`).

use super::{coll_error, Exec};
use crate::coll::{Coll, VALUE_TYPE_HASH};

/// HSET key field value [field value ...] / HMSET (which replies +OK)
pub fn hset(x: &mut Exec, a: &[&[u8]]) {
    if !a.len().is_multiple_of(2) {
        let name = if super::is(a[0], "hmset") {
            "hmset"
        } else {
            "hset"
        };
        x.reply.error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
        return;
    }
    let mut h = match x.ks.take_coll(x.db, a[1], VALUE_TYPE_HASH, x.now_ms) {
        Ok(Some(c)) => c.into_hash(),
        Ok(None) => Default::default(),
        Err(e) => return coll_error(x.reply, e),
    };
    let mut added = 0;
    for pair in a[2..].chunks(2) {
        added += h.insert(pair[0], pair[1]) as i64;
    }
    let t = x.thresholds();
    if x.ks.put_coll(x.db, a[1], Coll::Hash(h), &t, x.now_ms) {
        if super::is(a[0], "hmset") {
            x.reply.ok();
        } else {
            x.reply.int(added);
        }
    }
}

/// HGET key field
pub fn hget(x: &mut Exec, a: &[&[u8]]) {
    match x.ks.coll(x.db, a[1], VALUE_TYPE_HASH, x.now_ms) {
        Ok(Some(c)) => match c.as_hash().get(a[2]) {
            Some(v) => x.reply.bulk(v),
            None => x.reply.null(),
        },
        Ok(None) => x.reply.null(),
        Err(e) => coll_error(x.reply, e),
    }
}
