//! COMMAND DOCS entries of the set commands (`commands/set.rs`), from Redis 7.0.15's
//! `src/commands/s*.json`.

use super::*;

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("sadd", "1.0.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("2.4.0", "Accepts multiple `member` arguments."),
        ])
        .args(&[
            key("key", 0),
            string("member").multiple(),
        ]),
    doc("srem", "1.0.0", "O(N) where N is the number of members to be removed.")
        .history(&[
            ("2.4.0", "Accepts multiple `member` arguments."),
        ])
        .args(&[
            key("key", 0),
            string("member").multiple(),
        ]),
    doc("scard", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("sismember", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
            string("member"),
        ]),
    doc("smismember", "6.2.0", "O(N) where N is the number of elements being checked for membership")
        .args(&[
            key("key", 0),
            string("member").multiple(),
        ]),
    doc("smembers", "1.0.0", "O(N) where N is the set cardinality.")
        .args(&[
            key("key", 0),
        ]),
    doc("srandmember", "1.0.0", "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.")
        .history(&[
            ("2.6.0", "Added the optional `count` argument."),
        ])
        .args(&[
            key("key", 0),
            integer("count").optional().since("2.6.0"),
        ]),
    doc("spop", "1.0.0", "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.")
        .history(&[
            ("3.2.0", "Added the `count` argument."),
        ])
        .args(&[
            key("key", 0),
            integer("count").optional().since("3.2.0"),
        ]),
    doc("smove", "1.0.0", "O(1)")
        .args(&[
            key("source", 0),
            key("destination", 1),
            string("member"),
        ]),
    doc("sinter", "1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.")
        .args(&[
            key("key", 0).multiple(),
        ]),
    doc("sintercard", "7.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.")
        .args(&[
            integer("numkeys"),
            key("key", 0).multiple(),
            integer("limit").token("LIMIT").optional(),
        ]),
    doc("sinterstore", "1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.")
        .args(&[
            key("destination", 0),
            key("key", 1).multiple(),
        ]),
    doc("sunion", "1.0.0", "O(N) where N is the total number of elements in all given sets.")
        .args(&[
            key("key", 0).multiple(),
        ]),
    doc("sunionstore", "1.0.0", "O(N) where N is the total number of elements in all given sets.")
        .args(&[
            key("destination", 0),
            key("key", 1).multiple(),
        ]),
    doc("sdiff", "1.0.0", "O(N) where N is the total number of elements in all given sets.")
        .args(&[
            key("key", 0).multiple(),
        ]),
    doc("sdiffstore", "1.0.0", "O(N) where N is the total number of elements in all given sets.")
        .args(&[
            key("destination", 0),
            key("key", 1).multiple(),
        ]),
    doc("sscan", "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..")
        .args(&[
            key("key", 0),
            integer("cursor"),
            pattern("pattern").token("MATCH").optional(),
            integer("count").token("COUNT").optional(),
        ]),
];
