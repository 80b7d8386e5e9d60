//! COMMAND DOCS entries of the set commands (`commands/set.rs`).

use super::*;

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("scard", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
];
