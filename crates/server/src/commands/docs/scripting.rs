//! COMMAND DOCS entries of the scripting commands (`scripting/`).

use super::*;

const EVAL_ARGS: &[Arg] = &[
    string("script"),
    integer("numkeys"),
    key("key", 0).optional().multiple(),
    string("arg").optional().multiple(),
];
const EVALSHA_ARGS: &[Arg] = &[
    string("sha1"),
    integer("numkeys"),
    key("key", 0).optional().multiple(),
    string("arg").optional().multiple(),
];
const FCALL_ARGS: &[Arg] = &[
    string("function"),
    integer("numkeys"),
    key("key", 0).optional().multiple(),
    string("arg").optional().multiple(),
];
const FLUSH_TYPE: &[Arg] = &[pure("async", "ASYNC"), pure("sync", "SYNC")];

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("eval", "2.6.0", "Depends on the script that is executed.").args(EVAL_ARGS),
    doc("evalsha", "2.6.0", "Depends on the script that is executed.").args(EVALSHA_ARGS),
    doc("eval_ro", "7.0.0", "Depends on the script that is executed.").args(EVAL_ARGS),
    doc("evalsha_ro", "7.0.0", "Depends on the script that is executed.").args(EVALSHA_ARGS),
    doc("fcall", "7.0.0", "Depends on the function that is executed.").args(FCALL_ARGS),
    doc("fcall_ro", "7.0.0", "Depends on the function that is executed.").args(FCALL_ARGS),
    doc("script", "2.6.0", "Depends on subcommand."),
    doc("script|exists", "2.6.0", "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).")
        .args(&[string("sha1").multiple()]),
    doc("script|flush", "2.6.0", "O(N) with N being the number of scripts in cache")
        .history(&[("6.2.0", "Added the `ASYNC` and `SYNC` flushing mode modifiers.")])
        .args(&[oneof("flush-type", FLUSH_TYPE).optional()]),
    doc("script|help", "5.0.0", "O(1)"),
    doc("script|kill", "2.6.0", "O(1)"),
    doc("script|load", "2.6.0", "O(N) with N being the length in bytes of the script body.")
        .args(&[string("script")]),
    doc("function|delete", "7.0.0", "O(1)").args(&[string("library-name")]),
    doc("function|dump", "7.0.0", "O(N) where N is the number of functions"),
    doc("function|kill", "7.0.0", "O(1)"),
    doc("function|load", "7.0.0", "O(1) (considering compilation time is redundant)")
        .args(&[pure("replace", "REPLACE").optional(), string("function-code")]),
    doc("function|restore", "7.0.0", "O(N) where N is the number of functions on the payload")
        .args(&[
            string("serialized-value"),
            oneof("policy", &[
                pure("flush", "FLUSH"),
                pure("append", "APPEND"),
                pure("replace", "REPLACE"),
            ]).optional(),
        ]),
    doc("function|stats", "7.0.0", "O(1)"),
];
