//! COMMAND DOCS entries of the HyperLogLog commands (`commands/hll.rs`) and of BITFIELD /
//! BITFIELD_RO (`commands/bitops.rs`), from Redis 8.0's `src/commands/pf*.json` and
//! `bitfield*.json`.

use super::*;

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("pfadd", "2.8.9", "O(1) to add every element.")
        .args(&[
            key("key", 0),
            string("element").optional().multiple(),
        ]),
    doc("pfcount", "2.8.9", "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.")
        .args(&[
            key("key", 0).multiple(),
        ]),
    doc("pfmerge", "2.8.9", "O(N) to merge N HyperLogLogs, but with high constant times.")
        .args(&[
            key("destkey", 0),
            key("sourcekey", 1).optional().multiple(),
        ]),
    doc("pfdebug", "2.8.9", "N/A")
        .doc_flags(&["syscmd"])
        .args(&[
            string("subcommand"),
            key("key", 0),
        ]),
    doc("pfselftest", "2.8.9", "N/A")
        .doc_flags(&["syscmd"]),
    doc("bitfield", "3.2.0", "O(1) for each subcommand specified")
        .args(&[
            key("key", 0),
            oneof("operation", &[
                block("get-block", &[
                    string("encoding"),
                    integer("offset"),
                ]).token("GET"),
                block("write", &[
                    oneof("overflow-block", &[
                        pure("wrap", "WRAP"),
                        pure("sat", "SAT"),
                        pure("fail", "FAIL"),
                    ]).token("OVERFLOW").optional(),
                    oneof("write-operation", &[
                        block("set-block", &[
                            string("encoding"),
                            integer("offset"),
                            integer("value"),
                        ]).token("SET"),
                        block("incrby-block", &[
                            string("encoding"),
                            integer("offset"),
                            integer("increment"),
                        ]).token("INCRBY"),
                    ]),
                ]),
            ]).optional().multiple(),
        ]),
    doc("bitfield_ro", "6.0.0", "O(1) for each subcommand specified")
        .args(&[
            key("key", 0),
            block("get-block", &[
                string("encoding"),
                integer("offset"),
            ]).token("GET").optional().multiple().multiple_token(),
        ]),
];
