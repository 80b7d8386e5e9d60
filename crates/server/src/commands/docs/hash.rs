//! COMMAND DOCS entries of the hash commands (`commands/hash.rs`), as Redis 8.0's
//! `src/commands/h*.json` describe them.

use super::*;

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("hset", "2.0.0", "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.")
        .history(&[
            ("4.0.0", "Accepts multiple `field` and `value` arguments."),
        ])
        .args(&[
            key("key", 0),
            block("field_value", &[string("field"), string("value")]).multiple(),
        ]),
    doc("hsetnx", "2.0.0", "O(1)")
        .args(&[
            key("key", 0),
            string("field"),
            string("value"),
        ]),
    doc("hmset", "2.0.0", "O(N) where N is the number of fields being set.")
        .doc_flags(&["deprecated"])
        .deprecated("4.0.0", "`HSET` with multiple field-value pairs")
        .args(&[
            key("key", 0),
            block("field_value", &[string("field"), string("value")]).multiple(),
        ]),
    doc("hget", "2.0.0", "O(1)")
        .args(&[
            key("key", 0),
            string("field"),
        ]),
    doc("hmget", "2.0.0", "O(N) where N is the number of fields being requested.")
        .args(&[
            key("key", 0),
            string("field").multiple(),
        ]),
    doc("hdel", "2.0.0", "O(N) where N is the number of fields to be removed.")
        .history(&[
            ("2.4.0", "Accepts multiple `field` arguments."),
        ])
        .args(&[
            key("key", 0),
            string("field").multiple(),
        ]),
    doc("hlen", "2.0.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("hstrlen", "3.2.0", "O(1)")
        .args(&[
            key("key", 0),
            string("field"),
        ]),
    doc("hexists", "2.0.0", "O(1)")
        .args(&[
            key("key", 0),
            string("field"),
        ]),
    doc("hgetall", "2.0.0", "O(N) where N is the size of the hash.")
        .args(&[
            key("key", 0),
        ]),
    doc("hkeys", "2.0.0", "O(N) where N is the size of the hash.")
        .args(&[
            key("key", 0),
        ]),
    doc("hvals", "2.0.0", "O(N) where N is the size of the hash.")
        .args(&[
            key("key", 0),
        ]),
    doc("hincrby", "2.0.0", "O(1)")
        .args(&[
            key("key", 0),
            string("field"),
            integer("increment"),
        ]),
    doc("hincrbyfloat", "2.6.0", "O(1)")
        .args(&[
            key("key", 0),
            string("field"),
            double("increment"),
        ]),
    doc("hrandfield", "6.2.0", "O(N) where N is the number of fields returned")
        .args(&[
            key("key", 0),
            block("options", &[
                integer("count"),
                pure("withvalues", "WITHVALUES").optional(),
            ]).optional(),
        ]),
    doc("hscan", "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..")
        .args(&[
            key("key", 0),
            integer("cursor"),
            pattern("pattern").token("MATCH").optional(),
            integer("count").token("COUNT").optional(),
            pure("novalues", "NOVALUES").optional(),
        ]),
    doc("hexpire", "7.4.0", "O(N) where N is the number of specified fields")
        .args(&[
            key("key", 0),
            integer("seconds"),
            oneof("condition", &[
                pure("nx", "NX"),
                pure("xx", "XX"),
                pure("gt", "GT"),
                pure("lt", "LT"),
            ]).optional(),
            block("fields", &[
                integer("numfields"),
                string("field").multiple(),
            ]).token("FIELDS"),
        ]),
    doc("hpexpire", "7.4.0", "O(N) where N is the number of specified fields")
        .args(&[
            key("key", 0),
            integer("milliseconds"),
            oneof("condition", &[
                pure("nx", "NX"),
                pure("xx", "XX"),
                pure("gt", "GT"),
                pure("lt", "LT"),
            ]).optional(),
            block("fields", &[
                integer("numfields"),
                string("field").multiple(),
            ]).token("FIELDS"),
        ]),
    doc("hexpireat", "7.4.0", "O(N) where N is the number of specified fields")
        .args(&[
            key("key", 0),
            unix_time("unix-time-seconds"),
            oneof("condition", &[
                pure("nx", "NX"),
                pure("xx", "XX"),
                pure("gt", "GT"),
                pure("lt", "LT"),
            ]).optional(),
            block("fields", &[
                integer("numfields"),
                string("field").multiple(),
            ]).token("FIELDS"),
        ]),
    doc("hpexpireat", "7.4.0", "O(N) where N is the number of specified fields")
        .args(&[
            key("key", 0),
            unix_time("unix-time-milliseconds"),
            oneof("condition", &[
                pure("nx", "NX"),
                pure("xx", "XX"),
                pure("gt", "GT"),
                pure("lt", "LT"),
            ]).optional(),
            block("fields", &[
                integer("numfields"),
                string("field").multiple(),
            ]).token("FIELDS"),
        ]),
    doc("httl", "7.4.0", "O(N) where N is the number of specified fields")
        .args(&[
            key("key", 0),
            block("fields", &[
                integer("numfields"),
                string("field").multiple(),
            ]).token("FIELDS"),
        ]),
    doc("hpttl", "7.4.0", "O(N) where N is the number of specified fields")
        .args(&[
            key("key", 0),
            block("fields", &[
                integer("numfields"),
                string("field").multiple(),
            ]).token("FIELDS"),
        ]),
    doc("hexpiretime", "7.4.0", "O(N) where N is the number of specified fields")
        .args(&[
            key("key", 0),
            block("fields", &[
                integer("numfields"),
                string("field").multiple(),
            ]).token("FIELDS"),
        ]),
    doc("hpexpiretime", "7.4.0", "O(N) where N is the number of specified fields")
        .args(&[
            key("key", 0),
            block("fields", &[
                integer("numfields"),
                string("field").multiple(),
            ]).token("FIELDS"),
        ]),
    doc("hpersist", "7.4.0", "O(N) where N is the number of specified fields")
        .args(&[
            key("key", 0),
            block("fields", &[
                integer("numfields"),
                string("field").multiple(),
            ]).token("FIELDS"),
        ]),
    doc("hgetdel", "8.0.0", "O(N) where N is the number of specified fields")
        .args(&[
            key("key", 0),
            block("fields", &[
                integer("numfields"),
                string("field").multiple(),
            ]).token("FIELDS"),
        ]),
    doc("hgetex", "8.0.0", "O(N) where N is the number of specified fields")
        .args(&[
            key("key", 0),
            oneof("expiration", &[
                integer("seconds").token("EX"),
                integer("milliseconds").token("PX"),
                unix_time("unix-time-seconds").token("EXAT"),
                unix_time("unix-time-milliseconds").token("PXAT"),
                pure("persist", "PERSIST"),
            ]).optional(),
            block("fields", &[
                integer("numfields"),
                string("field").multiple(),
            ]).token("FIELDS"),
        ]),
    doc("hsetex", "8.0.0", "O(N) where N is the number of fields being set.")
        .args(&[
            key("key", 0),
            oneof("condition", &[
                pure("fnx", "FNX"),
                pure("fxx", "FXX"),
            ]).optional(),
            oneof("expiration", &[
                integer("seconds").token("EX"),
                integer("milliseconds").token("PX"),
                unix_time("unix-time-seconds").token("EXAT"),
                unix_time("unix-time-milliseconds").token("PXAT"),
                pure("keepttl", "KEEPTTL"),
            ]).optional(),
            block("fields", &[
                integer("numfields"),
                block("data", &[
                    string("field"),
                    string("value"),
                ]).multiple(),
            ]).token("FIELDS"),
        ]),
];
