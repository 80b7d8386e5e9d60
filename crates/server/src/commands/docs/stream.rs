//! COMMAND DOCS entries of the stream commands (`commands/stream.rs`), from Redis 8.0.2's
//! `src/commands/x*.json`.

use super::*;

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("xadd", "5.0.0", "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.")
        .history(&[
            ("6.2.0", "Added the `NOMKSTREAM` option, `MINID` trimming strategy and the `LIMIT` option."),
            ("7.0.0", "Added support for the `<ms>-*` explicit ID form."),
        ])
        .args(&[
            key("key", 0),
            pure("nomkstream", "NOMKSTREAM").optional().since("6.2.0"),
            block("trim", &[
                oneof("strategy", &[
                    pure("maxlen", "MAXLEN"),
                    pure("minid", "MINID").since("6.2.0"),
                ]),
                oneof("operator", &[
                    pure("equal", "="),
                    pure("approximately", "~"),
                ]).optional(),
                string("threshold"),
                integer("count").token("LIMIT").optional().since("6.2.0"),
            ]).optional(),
            oneof("id-selector", &[
                pure("auto-id", "*"),
                string("id"),
            ]),
            block("data", &[
                string("field"),
                string("value"),
            ]).multiple(),
        ]),
    doc("xrange", "5.0.0", "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).")
        .history(&[
            ("6.2.0", "Added exclusive ranges."),
        ])
        .args(&[
            key("key", 0),
            string("start"),
            string("end"),
            integer("count").token("COUNT").optional(),
        ]),
    doc("xrevrange", "5.0.0", "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).")
        .history(&[
            ("6.2.0", "Added exclusive ranges."),
        ])
        .args(&[
            key("key", 0),
            string("end"),
            string("start"),
            integer("count").token("COUNT").optional(),
        ]),
    doc("xlen", "5.0.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("xdel", "5.0.0", "O(1) for each single item to delete in the stream, regardless of the stream size.")
        .args(&[
            key("key", 0),
            string("ID").multiple(),
        ]),
    doc("xtrim", "5.0.0", "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.")
        .history(&[
            ("6.2.0", "Added the `MINID` trimming strategy and the `LIMIT` option."),
        ])
        .args(&[
            key("key", 0),
            block("trim", &[
                oneof("strategy", &[
                    pure("maxlen", "MAXLEN"),
                    pure("minid", "MINID").since("6.2.0"),
                ]),
                oneof("operator", &[
                    pure("equal", "="),
                    pure("approximately", "~"),
                ]).optional(),
                string("threshold"),
                integer("count").token("LIMIT").optional().since("6.2.0"),
            ]),
        ]),
    doc("xread", "5.0.0", "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.")
        .args(&[
            integer("count").token("COUNT").optional(),
            integer("milliseconds").token("BLOCK").optional(),
            block("streams", &[
                key("key", 0).multiple(),
                string("ID").multiple(),
            ]).token("STREAMS"),
        ]),
    doc("xreadgroup", "5.0.0", "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.")
        .args(&[
            block("group-block", &[
                string("group"),
                string("consumer"),
            ]).token("GROUP"),
            integer("count").token("COUNT").optional(),
            integer("milliseconds").token("BLOCK").optional(),
            pure("noack", "NOACK").optional(),
            block("streams", &[
                key("key", 0).multiple(),
                string("ID").multiple(),
            ]).token("STREAMS"),
        ]),
    doc("xgroup|create", "5.0.0", "O(1)")
        .history(&[
            ("7.0.0", "Added the `entries_read` named argument."),
        ])
        .args(&[
            key("key", 0),
            string("group"),
            oneof("id-selector", &[
                string("id"),
                pure("new-id", "$"),
            ]),
            pure("mkstream", "MKSTREAM").optional(),
            integer("entriesread").token("ENTRIESREAD").optional(),
        ]),
    doc("xgroup|createconsumer", "6.2.0", "O(1)")
        .args(&[
            key("key", 0),
            string("group"),
            string("consumer"),
        ]),
    doc("xgroup|delconsumer", "5.0.0", "O(1)")
        .args(&[
            key("key", 0),
            string("group"),
            string("consumer"),
        ]),
    doc("xgroup|destroy", "5.0.0", "O(N) where N is the number of entries in the group's pending entries list (PEL).")
        .args(&[
            key("key", 0),
            string("group"),
        ]),
    doc("xgroup|help", "5.0.0", "O(1)"),
    doc("xgroup|setid", "5.0.0", "O(1)")
        .history(&[
            ("7.0.0", "Added the optional `entries_read` argument."),
        ])
        .args(&[
            key("key", 0),
            string("group"),
            oneof("id-selector", &[
                string("id"),
                pure("new-id", "$"),
            ]),
            integer("entriesread").token("ENTRIESREAD").optional(),
        ]),
    doc("xgroup", "5.0.0", "Depends on subcommand."),
    doc("xack", "5.0.0", "O(1) for each message ID processed.")
        .args(&[
            key("key", 0),
            string("group"),
            string("ID").multiple(),
        ]),
    doc("xpending", "5.0.0", "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.")
        .history(&[
            ("6.2.0", "Added the `IDLE` option and exclusive range intervals."),
        ])
        .args(&[
            key("key", 0),
            string("group"),
            block("filters", &[
                integer("min-idle-time").token("IDLE").optional().since("6.2.0"),
                string("start"),
                string("end"),
                integer("count"),
                string("consumer").optional(),
            ]).optional(),
        ]),
    doc("xclaim", "5.0.0", "O(log N) with N being the number of messages in the PEL of the consumer group.")
        .args(&[
            key("key", 0),
            string("group"),
            string("consumer"),
            string("min-idle-time"),
            string("ID").multiple(),
            integer("ms").token("IDLE").optional(),
            unix_time("unix-time-milliseconds").token("TIME").optional(),
            integer("count").token("RETRYCOUNT").optional(),
            pure("force", "FORCE").optional(),
            pure("justid", "JUSTID").optional(),
            string("lastid").token("LASTID").optional(),
        ]),
    doc("xautoclaim", "6.2.0", "O(1) if COUNT is small.")
        .history(&[
            ("7.0.0", "Added an element to the reply array, containing deleted entries the command cleared from the PEL"),
        ])
        .args(&[
            key("key", 0),
            string("group"),
            string("consumer"),
            string("min-idle-time"),
            string("start"),
            integer("count").token("COUNT").optional(),
            pure("justid", "JUSTID").optional(),
        ]),
    doc("xinfo|consumers", "5.0.0", "O(1)")
        .history(&[
            ("7.2.0", "Added the `inactive` field, and changed the meaning of `idle`."),
        ])
        .args(&[
            key("key", 0),
            string("group"),
        ]),
    doc("xinfo|groups", "5.0.0", "O(1)")
        .history(&[
            ("7.0.0", "Added the `entries-read` and `lag` fields"),
        ])
        .args(&[
            key("key", 0),
        ]),
    doc("xinfo|help", "5.0.0", "O(1)"),
    doc("xinfo|stream", "5.0.0", "O(1)")
        .history(&[
            ("6.0.0", "Added the `FULL` modifier."),
            ("7.0.0", "Added the `max-deleted-entry-id`, `entries-added`, `recorded-first-entry-id`, `entries-read` and `lag` fields"),
            ("7.2.0", "Added the `active-time` field, and changed the meaning of `seen-time`."),
        ])
        .args(&[
            key("key", 0),
            block("full-block", &[
                pure("full", "FULL"),
                integer("count").token("COUNT").optional(),
            ]).optional(),
        ]),
    doc("xinfo", "5.0.0", "Depends on subcommand."),
    doc("xsetid", "5.0.0", "O(1)")
        .history(&[
            ("7.0.0", "Added the `entries_added` and `max_deleted_entry_id` arguments."),
        ])
        .args(&[
            key("key", 0),
            string("last-id"),
            integer("entries-added").token("ENTRIESADDED").optional().since("7.0.0"),
            string("max-deleted-id").token("MAXDELETEDID").optional().since("7.0.0"),
        ]),
];
