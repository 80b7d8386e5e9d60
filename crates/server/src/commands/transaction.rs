//! Transactions (Redis's `multi.c`): MULTI queues commands, EXEC runs them atomically
//! (`Conn::exec_multi`), DISCARD drops them, WATCH makes EXEC fail when a key changed first.

use crate::conn::{Conn, Multi};

/// MULTI
pub fn multi(c: &mut Conn, _a: &[&[u8]]) {
    if c.multi.is_some() {
        c.reply.error("ERR MULTI calls can not be nested");
        return;
    }
    c.multi = Some(Multi::default());
    c.info.multi.set(0);
    c.reply.ok();
}

/// DISCARD
pub fn discard(c: &mut Conn, _a: &[&[u8]]) {
    if c.multi.take().is_none() {
        c.reply.error("ERR DISCARD without MULTI");
        return;
    }
    c.info.multi.set(-1);
    c.unwatch_all();
    c.reply.ok();
}

/// UNWATCH
pub fn unwatch(c: &mut Conn, _a: &[&[u8]]) {
    c.unwatch_all();
    c.reply.ok();
}
