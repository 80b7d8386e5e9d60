//! COMMAND DOCS entries of the list commands (`commands/list.rs`).

use super::*;

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("llen", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
];
