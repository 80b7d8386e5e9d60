//! COMMAND DOCS and COMMAND INFO data of the commands only Skerry has, written by hand (the
//! Redis commands' are generated into [`super::redis`]).

use super::{doc, Doc};

/// The commands Redis does not have, in the shape of [`super::REDIS_DOCS`].
pub static SKERRY_DOCS: &[Doc] = &[doc(
    "defrag",
    "server",
    "0.1.0",
    "Shows and steers the defrag of the data devices (Skerry).",
)
.complexity("O(1); the rewriting itself runs in the background.")
.acl(&["@admin", "@slow", "@dangerous"])
.flags(&["admin", "noscript"])
.arity(-2)];
