//! SAVE, BGSAVE and DEBUG RELOAD (Redis's `rdb.c` and `debug.c`): RDB files of the whole
//! dataset, written and read by `crate::rdb`.

use super::is;
use crate::conn::Conn;
use crate::rdb;

/// SAVE: the dataset to `dir`/`dbfilename`, every worker held meanwhile.
pub async fn save(c: &mut Conn, _a: &[&[u8]]) {
    if !rdb::try_begin(&c.shared) {
        c.reply.error("ERR Background save already in progress");
        return;
    }
    let shared = c.shared.clone();
    let txn = rdb::hold_all(&shared, c.worker, c.ambient_txn).await;
    match rdb::save_and_record(&txn, &shared).await {
        Ok(_) => c.reply.ok(),
        // Redis's SAVE answers a bare ERR (the reason is in the log).
        Err(_) => c.reply.error("ERR"),
    }
}

/// BGSAVE [SCHEDULE]: SAVE's work in a task of its own; the reply does not wait for it.
///
/// The task holds every worker while it writes, as SAVE does: commands wait meanwhile.
/// Writing a point-in-time file while commands go on is issue 28's next step.
pub async fn bgsave(c: &mut Conn, a: &[&[u8]]) {
    let schedule = match a {
        [_] => false,
        [_, opt] if is(opt, "schedule") => true,
        _ => {
            c.reply.error(crate::reply::errors::SYNTAX);
            return;
        }
    };
    if !rdb::try_begin(&c.shared) {
        if schedule {
            // The save running now covers the request.
            c.reply.simple("Background saving scheduled");
        } else {
            c.reply.error("ERR Background save already in progress");
        }
        return;
    }
    let shared = c.shared.clone();
    let me = c.worker;
    compio::runtime::spawn(async move {
        let txn = rdb::hold_all(&shared, me, 0).await;
        let _ = rdb::save_and_record(&txn, &shared).await;
    })
    .detach();
    c.reply.simple("Background saving started");
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: saves (unless NOSAVE), empties the dataset and
/// the function libraries (unless NOFLUSH), and loads the file back, every worker held
/// throughout. With MERGE, keys and libraries in the file replace those of the same name;
/// without, such a duplicate fails the load (Redis stops on a duplicated key; Skerry keeps
/// what it loaded until then and answers the error).
pub async fn debug_reload(c: &mut Conn, a: &[&[u8]]) {
    let (mut flush, mut save, mut merge) = (true, true, false);
    for opt in &a[2..] {
        if is(opt, "merge") {
            merge = true;
        } else if is(opt, "noflush") {
            flush = false;
        } else if is(opt, "nosave") {
            save = false;
        } else {
            c.reply
                .error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.");
            return;
        }
    }
    let shared = c.shared.clone();
    if save && !rdb::try_begin(&shared) {
        c.reply.error("ERR Background save already in progress");
        return;
    }
    let txn = rdb::hold_all(&shared, c.worker, c.ambient_txn).await;
    if save && rdb::save_and_record(&txn, &shared).await.is_err() {
        c.reply.error("ERR");
        return;
    }
    if flush {
        rdb::empty_dataset(&txn, &shared).await;
    }
    let path = rdb::path(&shared);
    match rdb::load(&txn, &shared, &path, merge, false).await {
        Ok(loaded) => {
            tracing::info!(
                "DB reloaded by DEBUG RELOAD: {} keys ({} expired left out)",
                loaded.keys,
                loaded.expired
            );
            c.reply.ok();
        }
        Err(e) => {
            tracing::error!("DEBUG RELOAD: {e}");
            c.reply
                .error("ERR Error trying to load the RDB dump, check server logs.");
        }
    }
}
