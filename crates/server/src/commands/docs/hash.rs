//! COMMAND DOCS entries of the hash commands (`commands/hash.rs`).

use super::*;

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("hset", "2.0.0", "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.")
        .history(&[
            ("4.0.0", "Accepts multiple `field` and `value` arguments."),
        ])
        .args(&[
            key("key", 0),
            block("data", &[string("field"), string("value")]).multiple(),
        ]),
    doc("hmset", "2.0.0", "O(N) where N is the number of fields being set.")
        .doc_flags(&["deprecated"])
        .deprecated("4.0.0", "`HSET` with multiple field-value pairs")
        .args(&[
            key("key", 0),
            block("data", &[string("field"), string("value")]).multiple(),
        ]),
    doc("hget", "2.0.0", "O(1)")
        .args(&[
            key("key", 0),
            string("field"),
        ]),
];
