//! Commands about the storage engine itself: DEFRAG.

use std::sync::atomic::Ordering;

use crate::conn::Conn;
use crate::defrag::{self, COUNTERS, PAUSED};

fn is(a: &[u8], s: &str) -> bool {
    a.eq_ignore_ascii_case(s.as_bytes())
}

/// The DEFRAG settings `DEFRAG SET` accepts: short name → CONFIG name.
const SETTINGS: &[(&str, &str)] = &[
    ("enabled", "storage-defrag"),
    ("live-ratio", "storage-defrag-live-ratio"),
    ("free-target", "storage-defrag-free-target"),
    ("max-mb-per-sec", "storage-defrag-max-mb-per-sec"),
    ("tombstone-blocks", "storage-defrag-tombstone-blocks"),
    ("interval-ms", "storage-defrag-interval-ms"),
];

const HELP: &[&str] = &[
    "DEFRAG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "STATUS",
    "    Return defrag's state, settings and progress as field/value pairs.",
    "PAUSE",
    "    Stop rewriting blocks (the block being rewritten is finished).",
    "RESUME",
    "    Start rewriting blocks again.",
    "SET <setting> <value> [<setting> <value> ...]",
    "    Change settings: enabled (yes|no), live-ratio (percent), free-target (percent),",
    "    max-mb-per-sec, tombstone-blocks, interval-ms (the storage-defrag-* CONFIG names).",
    "HELP",
    "    Print this help.",
];

/// DEFRAG STATUS | PAUSE | RESUME | SET setting value ... | HELP
pub fn defrag(c: &mut Conn, a: &[&[u8]]) {
    let sub = a[1];
    if is(sub, "help") && a.len() == 2 {
        c.reply.array(HELP.len());
        for line in HELP {
            c.reply.simple(line);
        }
    } else if is(sub, "pause") && a.len() == 2 {
        PAUSED.store(true, Ordering::SeqCst);
        c.reply.ok();
    } else if is(sub, "resume") && a.len() == 2 {
        PAUSED.store(false, Ordering::SeqCst);
        c.reply.ok();
    } else if is(sub, "status") && a.len() == 2 {
        status(c);
    } else if is(sub, "set") && a.len() >= 4 && a.len().is_multiple_of(2) {
        // Check every pair before changing anything (as CONFIG SET does).
        let mut changes = Vec::new();
        for pair in a[2..].chunks(2) {
            let name = String::from_utf8_lossy(pair[0]).to_ascii_lowercase();
            let Some((_, config_name)) = SETTINGS.iter().find(|(n, _)| *n == name) else {
                c.reply
                    .error(&format!("ERR Unknown DEFRAG setting '{name}'"));
                return;
            };
            let value = String::from_utf8_lossy(pair[1]).into_owned();
            let Some((_, param)) = crate::config::param(config_name) else {
                c.reply
                    .error("ERR internal: unknown configuration parameter");
                return;
            };
            if let Err(e) = crate::config::normalise(param, &value) {
                c.reply.error(&format!(
                    "ERR Invalid argument '{value}' for DEFRAG setting '{name}': {e}"
                ));
                return;
            }
            changes.push((*config_name, value));
        }
        for (name, value) in changes {
            if let Err(e) = c.shared.config.set(name, &value, true) {
                c.reply.error(&format!("ERR {e}"));
                return;
            }
        }
        c.reply.ok();
    } else {
        crate::commands::subcommand_syntax_error(&mut c.reply, "DEFRAG", sub);
    }
}

fn status(c: &mut Conn) {
    let store = crate::worker::local_shard()
        .borrow()
        .keyspace
        .log()
        .store()
        .clone();
    let policy = defrag::policy(&c.shared);
    let outlook = store.defrag_outlook(&policy);
    let stats = store.stats();
    let n = |v: u64| v.to_string();
    let fields: Vec<(&str, String)> = vec![
        ("state", defrag::state(&c.shared).to_string()),
        ("live_ratio_pct", n(u64::from(policy.max_live_ratio_pct))),
        ("free_target_pct", n(u64::from(policy.free_target_pct))),
        (
            "max_mb_per_sec",
            c.shared.config.get("storage-defrag-max-mb-per-sec"),
        ),
        (
            "tombstone_blocks",
            n(u64::from(policy.tombstone_backlog_blocks)),
        ),
        (
            "interval_ms",
            c.shared.config.get("storage-defrag-interval-ms"),
        ),
        ("free_blocks", n(stats.free_blocks)),
        ("total_blocks", n(stats.total_blocks)),
        ("sparse_blocks", n(outlook.sparse_blocks)),
        (
            "tombstone_backlog_blocks",
            n(outlook.tombstone_backlog_blocks),
        ),
        (
            "blocks_rewritten",
            n(COUNTERS.blocks.load(Ordering::Relaxed)),
        ),
        (
            "tail_blocks_rewritten",
            n(COUNTERS.tail_blocks.load(Ordering::Relaxed)),
        ),
        ("records_moved", n(COUNTERS.records.load(Ordering::Relaxed))),
        ("bytes_moved", n(COUNTERS.bytes.load(Ordering::Relaxed))),
        ("bytes_read", n(COUNTERS.read_bytes.load(Ordering::Relaxed))),
        ("failures", n(COUNTERS.failures.load(Ordering::Relaxed))),
        ("reclaimed_blocks", n(stats.reclaimed_blocks)),
    ];
    c.reply.array(fields.len() * 2);
    for (k, v) in fields {
        c.reply.bulk_str(k);
        c.reply.bulk_str(&v);
    }
}
