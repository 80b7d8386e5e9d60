//! COMMAND DOCS entry of MIGRATE (`commands/migrate.rs`).

use super::*;

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("migrate", "2.6.0", "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.")
        .history(&[
            ("3.0.0", "Added the `COPY` and `REPLACE` options."),
            ("3.0.6", "Added the `KEYS` option."),
            ("4.0.7", "Added the `AUTH` option."),
            ("6.0.0", "Added the `AUTH2` option."),
        ])
        .args(&[
            string("host"),
            integer("port"),
            oneof("key-selector", &[key("key", 0), pure("empty-string", "")]),
            integer("destination-db"),
            integer("timeout"),
            pure("copy", "COPY").since("3.0.0").optional(),
            pure("replace", "REPLACE").since("3.0.0").optional(),
            oneof("authentication", &[
                Arg { display_text: Some("password"), ..string("auth").token("AUTH").since("4.0.7") },
                block("auth2", &[string("username"), string("password")]).token("AUTH2").since("6.0.0"),
            ]).optional(),
            Arg { display_text: Some("key"), ..key("keys", 1).token("KEYS").since("3.0.6").optional().multiple() },
        ]),
];
