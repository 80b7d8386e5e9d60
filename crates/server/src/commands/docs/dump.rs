//! COMMAND DOCS entries of DUMP and RESTORE (`commands/dump.rs`).

use super::*;

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("dump", "2.6.0", "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).")
        .args(&[key("key", 0)]),
    doc("restore", "2.6.0", "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).")
        .history(&[
            ("3.0.0", "Added the `REPLACE` modifier."),
            ("5.0.0", "Added the `ABSTTL` modifier."),
            ("5.0.0", "Added the `IDLETIME` and `FREQ` options."),
        ])
        .args(&[
            key("key", 0),
            integer("ttl"),
            string("serialized-value"),
            pure("replace", "REPLACE").since("3.0.0").optional(),
            pure("absttl", "ABSTTL").since("5.0.0").optional(),
            integer("seconds").token("IDLETIME").since("5.0.0").optional(),
            integer("frequency").token("FREQ").since("5.0.0").optional(),
        ]),
];
