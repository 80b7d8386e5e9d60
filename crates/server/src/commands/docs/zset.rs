//! COMMAND DOCS entries of the zset commands (`commands/zset.rs`).

use super::*;

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("zcard", "1.2.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
];
