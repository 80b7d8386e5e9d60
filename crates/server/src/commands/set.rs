//! SET commands (Redis's `t_set.c`). Each runs on the worker that owns its keys, on the
//! decoded collection the keyspace hands out (see `crate::coll`).

use super::{coll_error, Exec};
use crate::coll::VALUE_TYPE_SET;

/// SCARD key
pub fn scard(x: &mut Exec, a: &[&[u8]]) {
    match x.ks.coll(x.db, a[1], VALUE_TYPE_SET, x.now_ms) {
        Ok(c) => x.reply.int(c.map_or(0, |c| c.len() as i64)),
        Err(e) => coll_error(x.reply, e),
    }
}
