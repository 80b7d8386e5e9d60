//! COMMAND DOCS entries of the hash commands (`commands/hash.rs`), as Redis 7.0.15's
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
        ]),
];
