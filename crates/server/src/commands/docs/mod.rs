//! Command documentation as Redis 7.0 reports it through `COMMAND DOCS`: complexity, history,
//! deprecation and the argument tree of every command and subcommand in
//! [`COMMANDS`](super::COMMANDS).
//!
//! The structure follows Redis's `src/commands/*.json` (reply format of `addReplyCommandDocs`
//! and `addReplyCommandArgList` in `server.c`). Summary, group and (for top-level commands)
//! version come from the command table; this file adds the rest.

use crate::reply::Reply;

mod dump;
mod geo;
mod hash;
mod hll;
mod list;
mod migrate;
mod scripting;
mod set;
mod stream;
mod zset;

/// The type of a command argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgType {
    /// A string.
    String,
    /// An integer.
    Integer,
    /// A floating-point number.
    Double,
    /// A key name; see [`Arg::key_spec_index`].
    Key,
    /// A glob-style pattern.
    Pattern,
    /// A Unix timestamp.
    UnixTime,
    /// A token with no value (`NX`).
    PureToken,
    /// Exactly one of [`Arg::arguments`].
    Oneof,
    /// All of [`Arg::arguments`], in order.
    Block,
}

impl ArgType {
    /// The name Redis uses for the type.
    pub const fn as_str(self) -> &'static str {
        match self {
            ArgType::String => "string",
            ArgType::Integer => "integer",
            ArgType::Double => "double",
            ArgType::Key => "key",
            ArgType::Pattern => "pattern",
            ArgType::UnixTime => "unix-time",
            ArgType::PureToken => "pure-token",
            ArgType::Oneof => "oneof",
            ArgType::Block => "block",
        }
    }
}

/// Argument flag: the argument may be left out.
pub const OPTIONAL: u8 = 1;
/// Argument flag: the argument may repeat.
pub const MULTIPLE: u8 = 2;
/// Argument flag: the argument repeats together with its token.
pub const MULTIPLE_TOKEN: u8 = 4;

/// One argument of a command, as in Redis's `redisCommandArg`.
#[derive(Debug)]
pub struct Arg {
    /// Name (for documentation; not what the client types).
    pub name: &'static str,
    /// Type.
    pub type_: ArgType,
    /// Text to show instead of the name.
    pub display_text: Option<&'static str>,
    /// For keys: index of the command's key spec.
    pub key_spec_index: Option<i32>,
    /// The word that introduces the argument (`EX`), or the pure token itself.
    pub token: Option<&'static str>,
    /// Description.
    pub summary: Option<&'static str>,
    /// Version that added the argument.
    pub since: Option<&'static str>,
    /// Version that deprecated the argument.
    pub deprecated_since: Option<&'static str>,
    /// [`OPTIONAL`], [`MULTIPLE`], [`MULTIPLE_TOKEN`].
    pub flags: u8,
    /// Members of a `oneof` or `block`.
    pub arguments: &'static [Arg],
}

impl Arg {
    const fn new(name: &'static str, type_: ArgType) -> Arg {
        Arg {
            name,
            type_,
            display_text: None,
            key_spec_index: None,
            token: None,
            summary: None,
            since: None,
            deprecated_since: None,
            flags: 0,
            arguments: &[],
        }
    }
    const fn token(self, token: &'static str) -> Arg {
        Arg {
            token: Some(token),
            ..self
        }
    }
    const fn since(self, version: &'static str) -> Arg {
        Arg {
            since: Some(version),
            ..self
        }
    }
    const fn deprecated_since(self, version: &'static str) -> Arg {
        Arg {
            deprecated_since: Some(version),
            ..self
        }
    }
    const fn optional(self) -> Arg {
        Arg {
            flags: self.flags | OPTIONAL,
            ..self
        }
    }
    const fn multiple(self) -> Arg {
        Arg {
            flags: self.flags | MULTIPLE,
            ..self
        }
    }
    #[allow(dead_code)]
    const fn multiple_token(self) -> Arg {
        Arg {
            flags: self.flags | MULTIPLE_TOKEN,
            ..self
        }
    }

    /// The names of the flags that are set, in Redis's order.
    pub fn flag_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        [
            (OPTIONAL, "optional"),
            (MULTIPLE, "multiple"),
            (MULTIPLE_TOKEN, "multiple_token"),
        ]
        .into_iter()
        .filter(|(f, _)| self.flags & f != 0)
        .map(|(_, n)| n)
    }
}

const fn key(name: &'static str, key_spec_index: i32) -> Arg {
    Arg {
        key_spec_index: Some(key_spec_index),
        ..Arg::new(name, ArgType::Key)
    }
}
const fn string(name: &'static str) -> Arg {
    Arg::new(name, ArgType::String)
}
const fn integer(name: &'static str) -> Arg {
    Arg::new(name, ArgType::Integer)
}
const fn double(name: &'static str) -> Arg {
    Arg::new(name, ArgType::Double)
}
const fn pattern(name: &'static str) -> Arg {
    Arg::new(name, ArgType::Pattern)
}
const fn unix_time(name: &'static str) -> Arg {
    Arg::new(name, ArgType::UnixTime)
}
const fn pure(name: &'static str, token: &'static str) -> Arg {
    Arg::new(name, ArgType::PureToken).token(token)
}
const fn oneof(name: &'static str, arguments: &'static [Arg]) -> Arg {
    Arg {
        arguments,
        ..Arg::new(name, ArgType::Oneof)
    }
}
/// `a` with its name as its display text (Redis's default for arguments that are not
/// blocks).
const fn shown(a: Arg) -> Arg {
    Arg {
        display_text: Some(a.name),
        ..a
    }
}
const fn block(name: &'static str, arguments: &'static [Arg]) -> Arg {
    Arg {
        arguments,
        ..Arg::new(name, ArgType::Block)
    }
}

/// The documentation of one command or subcommand (`parent|sub`).
#[derive(Debug)]
pub struct Doc {
    /// Lower-case name; `parent|sub` for subcommands.
    pub name: &'static str,
    /// Version that introduced it (used for subcommands; top-level commands use the table's).
    pub since: &'static str,
    /// Time complexity.
    pub complexity: &'static str,
    /// `deprecated`, `syscmd`.
    pub doc_flags: &'static [&'static str],
    /// Version that deprecated it.
    pub deprecated_since: Option<&'static str>,
    /// What replaces it.
    pub replaced_by: Option<&'static str>,
    /// (version, change) pairs.
    pub history: &'static [(&'static str, &'static str)],
    /// Arguments (empty: none).
    pub arguments: &'static [Arg],
}

impl Doc {
    const fn doc_flags(self, doc_flags: &'static [&'static str]) -> Doc {
        Doc { doc_flags, ..self }
    }
    const fn deprecated(self, since: &'static str, replaced_by: &'static str) -> Doc {
        Doc {
            deprecated_since: Some(since),
            replaced_by: Some(replaced_by),
            ..self
        }
    }
    const fn history(self, history: &'static [(&'static str, &'static str)]) -> Doc {
        Doc { history, ..self }
    }
    const fn args(self, arguments: &'static [Arg]) -> Doc {
        Doc { arguments, ..self }
    }

    /// How many map entries [`write_fields`] adds for this command.
    pub fn field_count(&self) -> usize {
        1 + usize::from(!self.doc_flags.is_empty())
            + usize::from(self.deprecated_since.is_some())
            + usize::from(self.replaced_by.is_some())
            + usize::from(!self.history.is_empty())
            + usize::from(!self.arguments.is_empty())
    }
}

const fn doc(name: &'static str, since: &'static str, complexity: &'static str) -> Doc {
    Doc {
        name,
        since,
        complexity,
        doc_flags: &[],
        deprecated_since: None,
        replaced_by: None,
        history: &[],
        arguments: &[],
    }
}

/// The documentation of `name` (lower case; `parent|sub` for subcommands).
pub fn doc_of(name: &str) -> Option<&'static Doc> {
    all_docs().find(|d| d.name == name)
}

/// Every documentation entry: the generic, string, connection and server commands here, the
/// collection families in their own files.
pub fn all_docs() -> impl Iterator<Item = &'static Doc> {
    DOCS.iter()
        .chain(hash::DOCS)
        .chain(list::DOCS)
        .chain(set::DOCS)
        .chain(zset::DOCS)
        .chain(scripting::DOCS)
        .chain(geo::DOCS)
        .chain(hll::DOCS)
        .chain(dump::DOCS)
        .chain(stream::DOCS)
        .chain(migrate::DOCS)
}

/// The arguments of `name` (lower case; `parent|sub` for subcommands); None when it takes
/// none or is unknown.
pub fn arguments(name: &str) -> Option<&'static [Arg]> {
    doc_of(name).map(|d| d.arguments).filter(|a| !a.is_empty())
}

/// The time complexity of `name` (lower case; `parent|sub` for subcommands).
pub fn complexity(name: &str) -> Option<&'static str> {
    doc_of(name).map(|d| d.complexity)
}

/// How many map entries [`write_fields`] writes for `name`.
pub fn field_count(name: &str) -> usize {
    doc_of(name).map_or(0, Doc::field_count)
}

/// Writes the documentation entries of `name` that follow summary, since and group in a
/// `COMMAND DOCS` map: complexity, doc_flags, deprecated_since, replaced_by, history,
/// arguments. Exactly [`field_count`] key/value pairs.
pub fn write_fields(r: &mut Reply, name: &str) {
    let Some(d) = doc_of(name) else {
        return;
    };
    r.bulk_str("complexity");
    r.bulk_str(d.complexity);
    if !d.doc_flags.is_empty() {
        r.bulk_str("doc_flags");
        r.set(d.doc_flags.len());
        for f in d.doc_flags {
            r.simple(f);
        }
    }
    if let Some(v) = d.deprecated_since {
        r.bulk_str("deprecated_since");
        r.bulk_str(v);
    }
    if let Some(v) = d.replaced_by {
        r.bulk_str("replaced_by");
        r.bulk_str(v);
    }
    if !d.history.is_empty() {
        r.bulk_str("history");
        r.set(d.history.len());
        for (version, change) in d.history {
            r.array(2);
            r.bulk_str(version);
            r.bulk_str(change);
        }
    }
    if !d.arguments.is_empty() {
        r.bulk_str("arguments");
        write_args(r, d.arguments);
    }
}

/// Writes an argument list: an array of maps, as Redis's `addReplyCommandArgList`.
pub fn write_args(r: &mut Reply, args: &[Arg]) {
    r.array(args.len());
    for a in args {
        let nested = matches!(a.type_, ArgType::Oneof | ArgType::Block);
        // Redis 7.2+ shows a display text for every argument but blocks and choices: its
        // own, else its name.
        r.map(
            2 + usize::from(!nested)
                + usize::from(a.key_spec_index.is_some())
                + usize::from(a.token.is_some())
                + usize::from(a.summary.is_some())
                + usize::from(a.since.is_some())
                + usize::from(a.deprecated_since.is_some())
                + usize::from(a.flags != 0)
                + usize::from(nested),
        );
        r.bulk_str("name");
        r.bulk_str(a.name);
        r.bulk_str("type");
        r.bulk_str(a.type_.as_str());
        if !nested {
            r.bulk_str("display_text");
            r.bulk_str(a.display_text.unwrap_or(a.name));
        }
        if let Some(i) = a.key_spec_index {
            r.bulk_str("key_spec_index");
            r.int(i64::from(i));
        }
        if let Some(t) = a.token {
            r.bulk_str("token");
            r.bulk_str(t);
        }
        if let Some(s) = a.summary {
            r.bulk_str("summary");
            r.bulk_str(s);
        }
        if let Some(v) = a.since {
            r.bulk_str("since");
            r.bulk_str(v);
        }
        if let Some(v) = a.deprecated_since {
            r.bulk_str("deprecated_since");
            r.bulk_str(v);
        }
        if a.flags != 0 {
            r.bulk_str("flags");
            r.set(a.flag_names().count());
            for f in a.flag_names() {
                r.simple(f);
            }
        }
        if nested {
            r.bulk_str("arguments");
            write_args(r, a.arguments);
        }
    }
}

/// Every documented command and subcommand, in table order, subcommands after their parent.
/// From Redis 7.0.15; `client|setinfo` and `client|no-touch` (7.2) from Redis 7.2, and
/// `command|getkeys` carries the arguments Redis 7.2 documents for it (7.0 lists none).
pub static DOCS: &[Doc] = &[
    doc("get", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("set", "1.0.0", "O(1)")
        .history(&[
            ("2.6.12", "Added the `EX`, `PX`, `NX` and `XX` options."),
            ("6.0.0", "Added the `KEEPTTL` option."),
            ("6.2.0", "Added the `GET`, `EXAT` and `PXAT` option."),
            ("7.0.0", "Allowed the `NX` and `GET` options to be used together."),
        ])
        .args(&[
            key("key", 0),
            string("value"),
            oneof("condition", &[
                pure("nx", "NX"),
                pure("xx", "XX"),
            ]).since("2.6.12").optional(),
            pure("get", "GET").since("6.2.0").optional(),
            oneof("expiration", &[
                integer("seconds").token("EX").since("2.6.12"),
                integer("milliseconds").token("PX").since("2.6.12"),
                unix_time("unix-time-seconds").token("EXAT").since("6.2.0"),
                unix_time("unix-time-milliseconds").token("PXAT").since("6.2.0"),
                pure("keepttl", "KEEPTTL").since("6.0.0"),
            ]).optional(),
        ]),
    doc("setnx", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
            string("value"),
        ]),
    doc("setex", "2.0.0", "O(1)")
        .args(&[
            key("key", 0),
            integer("seconds"),
            string("value"),
        ]),
    doc("psetex", "2.6.0", "O(1)")
        .args(&[
            key("key", 0),
            integer("milliseconds"),
            string("value"),
        ]),
    doc("getset", "1.0.0", "O(1)")
        .doc_flags(&["deprecated"])
        .deprecated("6.2.0", "`SET` with the `!GET` argument")
        .args(&[
            key("key", 0),
            string("value"),
        ]),
    doc("getdel", "6.2.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("getex", "6.2.0", "O(1)")
        .args(&[
            key("key", 0),
            oneof("expiration", &[
                integer("seconds").token("EX"),
                integer("milliseconds").token("PX"),
                unix_time("unix-time-seconds").token("EXAT"),
                unix_time("unix-time-milliseconds").token("PXAT"),
                pure("persist", "PERSIST"),
            ]).optional(),
        ]),
    doc("mget", "1.0.0", "O(N) where N is the number of keys to retrieve.")
        .args(&[
            key("key", 0).multiple(),
        ]),
    doc("mset", "1.0.1", "O(N) where N is the number of keys to set.")
        .args(&[
            block("key_value", &[
                key("key", 0),
                string("value"),
            ]).multiple(),
        ]),
    doc("msetnx", "1.0.1", "O(N) where N is the number of keys to set.")
        .args(&[
            block("key_value", &[
                key("key", 0),
                string("value"),
            ]).multiple(),
        ]),
    doc("incr", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("incrby", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
            integer("increment"),
        ]),
    doc("incrbyfloat", "2.6.0", "O(1)")
        .args(&[
            key("key", 0),
            double("increment"),
        ]),
    doc("decr", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("decrby", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
            integer("decrement"),
        ]),
    doc("append", "2.0.0", "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.")
        .args(&[
            key("key", 0),
            string("value"),
        ]),
    doc("strlen", "2.2.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("getrange", "2.4.0", "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.")
        .args(&[
            key("key", 0),
            integer("start"),
            integer("end"),
        ]),
    doc("substr", "1.0.0", "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.")
        .doc_flags(&["deprecated"])
        .deprecated("2.0.0", "`GETRANGE`")
        .args(&[
            key("key", 0),
            integer("start"),
            integer("end"),
        ]),
    doc("setrange", "2.2.0", "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.")
        .args(&[
            key("key", 0),
            integer("offset"),
            string("value"),
        ]),
    doc("setbit", "2.2.0", "O(1)")
        .args(&[
            key("key", 0),
            integer("offset"),
            integer("value"),
        ]),
    doc("getbit", "2.2.0", "O(1)")
        .args(&[
            key("key", 0),
            integer("offset"),
        ]),
    doc("bitcount", "2.6.0", "O(N)")
        .history(&[("7.0.0", "Added the `BYTE|BIT` option.")])
        .args(&[
            key("key", 0),
            block("range", &[
                integer("start"),
                integer("end"),
                oneof("unit", &[
                    pure("byte", "BYTE"),
                    pure("bit", "BIT"),
                ]).since("7.0.0").optional(),
            ]).optional(),
        ]),
    doc("bitop", "2.6.0", "O(N)")
        .args(&[
            string("operation"),
            key("destkey", 0),
            key("key", 1).multiple(),
        ]),
    doc("bitpos", "2.8.7", "O(N)")
        .history(&[("7.0.0", "Added the `BYTE|BIT` option.")])
        .args(&[
            key("key", 0),
            integer("bit"),
            block("range", &[
                integer("start"),
                block("end-unit-block", &[
                    integer("end"),
                    oneof("unit", &[
                        pure("byte", "BYTE"),
                        pure("bit", "BIT"),
                    ]).since("7.0.0").optional(),
                ]).optional(),
            ]).optional(),
        ]),
    doc("lcs", "7.0.0", "O(N*M) where N and M are the lengths of s1 and s2, respectively")
        .args(&[
            key("key1", 0),
            key("key2", 0),
            pure("len", "LEN").optional(),
            pure("idx", "IDX").optional(),
            integer("len").token("MINMATCHLEN").optional(),
            pure("withmatchlen", "WITHMATCHLEN").optional(),
        ]),
    doc("del", "1.0.0", "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).")
        .args(&[
            key("key", 0).multiple(),
        ]),
    doc("unlink", "4.0.0", "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.")
        .args(&[
            key("key", 0).multiple(),
        ]),
    doc("exists", "1.0.0", "O(N) where N is the number of keys to check.")
        .history(&[
            ("3.0.3", "Accepts multiple `key` arguments."),
        ])
        .args(&[
            key("key", 0).multiple(),
        ]),
    doc("touch", "3.2.1", "O(N) where N is the number of keys that will be touched.")
        .args(&[
            key("key", 0).multiple(),
        ]),
    doc("type", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("keys", "1.0.0", "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.")
        .args(&[
            pattern("pattern"),
        ]),
    doc("scan", "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.")
        .history(&[
            ("6.0.0", "Added the `TYPE` subcommand."),
        ])
        .args(&[
            integer("cursor"),
            pattern("pattern").token("MATCH").optional(),
            integer("count").token("COUNT").optional(),
            string("type").token("TYPE").since("6.0.0").optional(),
        ]),
    doc("copy", "6.2.0", "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.")
        .args(&[
            key("source", 0),
            key("destination", 1),
            integer("destination-db").token("DB").optional(),
            pure("replace", "REPLACE").optional(),
        ]),
    doc("move", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
            integer("db"),
        ]),
    doc("rename", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
            key("newkey", 1),
        ]),
    doc("renamenx", "1.0.0", "O(1)")
        .history(&[
            ("3.2.0", "The command no longer returns an error when source and destination names are the same."),
        ])
        .args(&[
            key("key", 0),
            key("newkey", 1),
        ]),
    doc("randomkey", "1.0.0", "O(1)"),
    doc("ttl", "1.0.0", "O(1)")
        .history(&[
            ("2.8.0", "Added the -2 reply."),
        ])
        .args(&[
            key("key", 0),
        ]),
    doc("pttl", "2.6.0", "O(1)")
        .history(&[
            ("2.8.0", "Added the -2 reply."),
        ])
        .args(&[
            key("key", 0),
        ]),
    doc("expiretime", "7.0.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("pexpiretime", "7.0.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("expire", "1.0.0", "O(1)")
        .history(&[
            ("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."),
        ])
        .args(&[
            key("key", 0),
            integer("seconds"),
            oneof("condition", &[
                pure("nx", "NX"),
                pure("xx", "XX"),
                pure("gt", "GT"),
                pure("lt", "LT"),
            ]).since("7.0.0").optional(),
        ]),
    doc("pexpire", "2.6.0", "O(1)")
        .history(&[
            ("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."),
        ])
        .args(&[
            key("key", 0),
            integer("milliseconds"),
            oneof("condition", &[
                pure("nx", "NX"),
                pure("xx", "XX"),
                pure("gt", "GT"),
                pure("lt", "LT"),
            ]).since("7.0.0").optional(),
        ]),
    doc("expireat", "1.2.0", "O(1)")
        .history(&[
            ("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."),
        ])
        .args(&[
            key("key", 0),
            unix_time("unix-time-seconds"),
            oneof("condition", &[
                pure("nx", "NX"),
                pure("xx", "XX"),
                pure("gt", "GT"),
                pure("lt", "LT"),
            ]).since("7.0.0").optional(),
        ]),
    doc("pexpireat", "2.6.0", "O(1)")
        .history(&[
            ("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."),
        ])
        .args(&[
            key("key", 0),
            unix_time("unix-time-milliseconds"),
            oneof("condition", &[
                pure("nx", "NX"),
                pure("xx", "XX"),
                pure("gt", "GT"),
                pure("lt", "LT"),
            ]).since("7.0.0").optional(),
        ]),
    doc("persist", "2.2.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("sort", "1.0.0", "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).")
        .args(&[
            key("key", 0),
            Arg { key_spec_index: Some(1), ..pattern("pattern") }.token("BY").optional(),
            block("offset_count", &[
                integer("offset"),
                integer("count"),
            ]).token("LIMIT").optional(),
            Arg { key_spec_index: Some(1), ..pattern("pattern") }.token("GET").optional().multiple().multiple_token(),
            oneof("order", &[
                pure("asc", "ASC"),
                pure("desc", "DESC"),
            ]).optional(),
            pure("sorting", "ALPHA").optional(),
            key("destination", 2).token("STORE").optional(),
        ]),
    doc("sort_ro", "7.0.0", "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).")
        .args(&[
            key("key", 0),
            Arg { key_spec_index: Some(1), ..pattern("pattern") }.token("BY").optional(),
            block("offset_count", &[
                integer("offset"),
                integer("count"),
            ]).token("LIMIT").optional(),
            Arg { key_spec_index: Some(1), ..pattern("pattern") }.token("GET").optional().multiple().multiple_token(),
            oneof("order", &[
                pure("asc", "ASC"),
                pure("desc", "DESC"),
            ]).optional(),
            pure("sorting", "ALPHA").optional(),
        ]),
    doc("multi", "1.2.0", "O(1)"),
    doc("exec", "1.2.0", "Depends on commands in the transaction"),
    doc("discard", "2.0.0", "O(N), when N is the number of queued commands"),
    doc("watch", "2.2.0", "O(1) for every key.")
        .args(&[
            key("key", 0).multiple(),
        ]),
    doc("unwatch", "2.2.0", "O(1)"),
    doc("object", "2.2.3", "Depends on subcommand."),
    doc("object|encoding", "2.2.3", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("object|refcount", "2.2.3", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("object|idletime", "2.2.3", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("object|freq", "4.0.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("object|help", "6.2.0", "O(1)"),
    doc("module", "4.0.0", "Depends on subcommand."),
    doc("module|list", "4.0.0", "O(N) where N is the number of loaded modules."),
    doc("module|load", "4.0.0", "O(1)")
        .args(&[shown(string("path")), shown(string("arg").optional().multiple())]),
    doc("module|loadex", "7.0.0", "O(1)")
        .args(&[
            shown(string("path")),
            block("configs", &[shown(string("name")), shown(string("value"))]).token("CONFIG").multiple().multiple_token().optional(),
            shown(string("args").token("ARGS").multiple().optional()),
        ]),
    doc("module|unload", "4.0.0", "O(1)")
        .args(&[shown(string("name"))]),
    doc("module|help", "5.0.0", "O(1)"),
    doc("slowlog", "2.2.12", "Depends on subcommand."),
    doc("slowlog|get", "2.2.12", "O(N) where N is the number of entries returned")
        .history(&[("4.0.0", "Added client IP address, port and name to the reply.")])
        .args(&[shown(integer("count").optional())]),
    doc("slowlog|len", "2.2.12", "O(1)"),
    doc("slowlog|reset", "2.2.12", "O(N) where N is the number of entries in the slowlog"),
    doc("slowlog|help", "6.2.0", "O(1)"),
    doc("memory", "4.0.0", "Depends on subcommand."),
    doc("memory|usage", "4.0.0", "O(N) where N is the number of samples.")
        .args(&[
            key("key", 0),
            integer("count").token("SAMPLES").optional(),
        ]),
    doc("memory|help", "4.0.0", "O(1)"),
    doc("dbsize", "1.0.0", "O(1)"),
    doc("flushdb", "1.0.0", "O(N) where N is the number of keys in the selected database")
        .history(&[
            ("4.0.0", "Added the `ASYNC` flushing mode modifier."),
            ("6.2.0", "Added the `SYNC` flushing mode modifier."),
        ])
        .args(&[
            oneof("async", &[
                pure("async", "ASYNC").since("4.0.0"),
                pure("sync", "SYNC").since("6.2.0"),
            ]).optional(),
        ]),
    doc("swapdb", "4.0.0", "O(N) where N is the count of clients watching or blocking on keys from both databases.")
        .args(&[
            integer("index1"),
            integer("index2"),
        ]),
    doc("flushall", "1.0.0", "O(N) where N is the total number of keys in all databases")
        .history(&[
            ("4.0.0", "Added the `ASYNC` flushing mode modifier."),
            ("6.2.0", "Added the `SYNC` flushing mode modifier."),
        ])
        .args(&[
            oneof("async", &[
                pure("async", "ASYNC").since("4.0.0"),
                pure("sync", "SYNC").since("6.2.0"),
            ]).optional(),
        ]),
    doc("ping", "1.0.0", "O(1)")
        .args(&[
            string("message").optional(),
        ]),
    doc("echo", "1.0.0", "O(1)")
        .args(&[
            string("message"),
        ]),
    doc("hello", "6.0.0", "O(1)")
        .history(&[
            ("6.2.0", "`protover` made optional; when called without arguments the command reports the current connection's context."),
        ])
        .args(&[
            block("arguments", &[
                integer("protover"),
                block("username_password", &[
                    string("username"),
                    string("password"),
                ]).token("AUTH").optional(),
                string("clientname").token("SETNAME").optional(),
            ]).optional(),
        ]),
    doc("auth", "1.0.0", "O(N) where N is the number of passwords defined for the user")
        .history(&[
            ("6.0.0", "Added ACL style (username and password)."),
        ])
        .args(&[
            string("username").since("6.0.0").optional(),
            string("password"),
        ]),
    doc("select", "1.0.0", "O(1)")
        .args(&[
            integer("index"),
        ]),
    doc("quit", "1.0.0", "O(1)"),
    doc("reset", "6.2.0", "O(1)"),
    doc("subscribe", "2.0.0", "O(N) where N is the number of channels to subscribe to.")
        .args(&[
            string("channel").multiple(),
        ]),
    doc("unsubscribe", "2.0.0", "O(N) where N is the number of clients already subscribed to a channel.")
        .args(&[
            string("channel").optional().multiple(),
        ]),
    doc("psubscribe", "2.0.0", "O(N) where N is the number of patterns the client is already subscribed to.")
        .args(&[
            block("pattern", &[
                pattern("pattern"),
            ]).multiple(),
        ]),
    doc("punsubscribe", "2.0.0", "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).")
        .args(&[
            pattern("pattern").optional().multiple(),
        ]),
    doc("ssubscribe", "7.0.0", "O(N) where N is the number of shard channels to subscribe to.")
        .args(&[
            string("shardchannel").multiple(),
        ]),
    doc("sunsubscribe", "7.0.0", "O(N) where N is the number of clients already subscribed to a shard channel.")
        .args(&[
            string("shardchannel").optional().multiple(),
        ]),
    doc("publish", "2.0.0", "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).")
        .args(&[
            string("channel"),
            string("message"),
        ]),
    doc("spublish", "7.0.0", "O(N) where N is the number of clients subscribed to the receiving shard channel.")
        .args(&[
            string("shardchannel"),
            string("message"),
        ]),
    doc("pubsub", "2.8.0", "Depends on subcommand."),
    doc("pubsub|channels", "2.8.0", "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)")
        .args(&[
            pattern("pattern").optional(),
        ]),
    doc("pubsub|numsub", "2.8.0", "O(N) for the NUMSUB subcommand, where N is the number of requested channels")
        .args(&[
            string("channel").optional().multiple(),
        ]),
    doc("pubsub|numpat", "2.8.0", "O(1)"),
    doc("pubsub|shardchannels", "7.0.0", "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).")
        .args(&[
            pattern("pattern").optional(),
        ]),
    doc("pubsub|shardnumsub", "7.0.0", "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels")
        .args(&[
            string("shardchannel").optional().multiple(),
        ]),
    doc("pubsub|help", "6.2.0", "O(1)"),
    doc("client", "2.4.0", "Depends on subcommand."),
    doc("client|id", "5.0.0", "O(1)"),
    doc("client|setname", "2.6.9", "O(1)")
        .args(&[
            string("connection-name"),
        ]),
    doc("client|getname", "2.6.9", "O(1)"),
    doc("client|list", "2.4.0", "O(N) where N is the number of client connections")
        .history(&[
            ("2.8.12", "Added unique client `id` field."),
            ("5.0.0", "Added optional `TYPE` filter."),
            ("6.0.0", "Added `user` field."),
            ("6.2.0", "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter."),
            ("7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."),
            ("7.0.3", "Added `ssub` field."),
        ])
        .args(&[
            oneof("normal_master_replica_pubsub", &[
                pure("normal", "NORMAL"),
                pure("master", "MASTER"),
                pure("replica", "REPLICA"),
                pure("pubsub", "PUBSUB"),
            ]).token("TYPE").since("5.0.0").optional(),
            block("id", &[
                integer("client-id").multiple(),
            ]).token("ID").since("6.2.0").optional(),
        ]),
    doc("client|info", "6.2.0", "O(1)"),
    doc("client|unblock", "5.0.0", "O(log N) where N is the number of client connections")
        .args(&[
            integer("client-id"),
            oneof("unblock-type", &[
                pure("timeout", "TIMEOUT"),
                pure("error", "ERROR"),
            ]).optional(),
        ]),
    doc("client|kill", "2.4.0", "O(N) where N is the number of client connections")
        .history(&[
            ("2.8.12", "Added new filter format."),
            ("2.8.12", "`ID` option."),
            ("3.2.0", "Added `master` type in for `TYPE` option."),
            ("5.0.0", "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility."),
            ("6.2.0", "`LADDR` option."),
            ("7.4.0", "`MAXAGE` option."),
        ])
        .args(&[
            oneof("filter", &[
                string("ip:port").deprecated_since("2.8.12"),
                oneof("new-format", &[
                    integer("client-id").token("ID").since("2.8.12").optional(),
                    oneof("normal_master_slave_pubsub", &[
                        pure("normal", "NORMAL"),
                        pure("master", "MASTER").since("3.2.0"),
                        pure("slave", "SLAVE"),
                        pure("replica", "REPLICA").since("5.0.0"),
                        pure("pubsub", "PUBSUB"),
                    ]).token("TYPE").since("2.8.12").optional(),
                    string("username").token("USER").optional(),
                    string("ip:port").token("ADDR").optional(),
                    string("ip:port").token("LADDR").since("6.2.0").optional(),
                    string("yes/no").token("SKIPME").optional(),
                    integer("maxage").token("MAXAGE").since("7.4.0").optional(),
                ]).multiple(),
            ]),
        ]),
    doc("client|setinfo", "7.2.0", "O(1)")
        .args(&[
            oneof("attr", &[
                string("libname").token("lib-name"),
                string("libver").token("lib-ver"),
                string("libinstancename").token("lib-instance-name"),
            ]),
        ]),
    doc("client|no-evict", "7.0.0", "O(1)")
        .args(&[
            oneof("enabled", &[
                pure("on", "ON"),
                pure("off", "OFF"),
            ]),
        ]),
    doc("client|no-touch", "7.2.0", "O(1)")
        .args(&[
            oneof("enabled", &[
                pure("on", "ON"),
                pure("off", "OFF"),
            ]),
        ]),
    doc("client|reply", "3.2.0", "O(1)")
        .args(&[
            oneof("on_off_skip", &[
                pure("on", "ON"),
                pure("off", "OFF"),
                pure("skip", "SKIP"),
            ]),
        ]),
    doc("client|help", "5.0.0", "O(1)"),
    doc("command", "2.8.13", "O(N) where N is the total number of Redis commands"),
    doc("command|count", "2.8.13", "O(1)"),
    doc("command|info", "2.8.13", "O(N) where N is the number of commands to look up")
        .history(&[
            ("7.0.0", "Allowed to be called with no argument to get info on all commands."),
        ])
        .args(&[
            string("command-name").optional().multiple(),
        ]),
    doc("command|docs", "7.0.0", "O(N) where N is the number of commands to look up")
        .args(&[
            string("command-name").optional().multiple(),
        ]),
    doc("command|list", "7.0.0", "O(N) where N is the total number of Redis commands")
        .args(&[
            oneof("filterby", &[
                string("module-name").token("MODULE"),
                string("category").token("ACLCAT"),
                pattern("pattern").token("PATTERN"),
            ]).token("FILTERBY").optional(),
        ]),
    doc("command|getkeys", "2.8.13", "O(N) where N is the number of arguments to the command")
        .args(&[
            string("command"),
            string("arg").optional().multiple(),
        ]),
    doc("command|getkeysandflags", "7.0.0", "O(N) where N is the number of arguments to the command")
        .args(&[
            string("command"),
            string("arg").optional().multiple(),
        ]),
    doc("command|help", "5.0.0", "O(1)"),
    doc("function", "7.0.0", "Depends on subcommand."),
    doc("function|flush", "7.0.0", "O(N) where N is the number of functions deleted")
        .args(&[
            oneof("flush-type", &[
                pure("async", "ASYNC"),
                pure("sync", "SYNC"),
            ]).optional(),
        ]),
    doc("function|list", "7.0.0", "O(N) where N is the number of functions")
        .args(&[
            pattern("library-name-pattern").token("LIBRARYNAME").optional(),
            pure("withcode", "WITHCODE").optional(),
        ]),
    doc("function|help", "7.0.0", "O(1)"),
    doc("config", "2.0.0", "Depends on subcommand."),
    doc("config|get", "2.0.0", "O(N) when N is the number of configuration parameters provided")
        .history(&[
            ("7.0.0", "Added the ability to pass multiple pattern parameters in one call"),
        ])
        .args(&[
            block("parameter", &[
                string("parameter"),
            ]).multiple(),
        ]),
    doc("config|set", "2.0.0", "O(N) when N is the number of configuration parameters provided")
        .history(&[
            ("7.0.0", "Added the ability to set multiple parameters in one call."),
        ])
        .args(&[
            block("parameter_value", &[
                string("parameter"),
                string("value"),
            ]).multiple(),
        ]),
    doc("config|resetstat", "2.0.0", "O(1)"),
    doc("config|rewrite", "2.8.0", "O(1)"),
    doc("config|help", "5.0.0", "O(1)"),
    doc("info", "1.0.0", "O(1)")
        .history(&[
            ("7.0.0", "Added support for taking multiple section arguments."),
        ])
        .args(&[
            string("section").optional().multiple(),
        ]),
    doc("time", "2.6.0", "O(1)"),
    doc("defrag", "0.1.0", "O(1); the rewriting itself runs in the background."),
    doc("lastsave", "1.0.0", "O(1)"),
    doc("shutdown", "1.0.0", "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)")
        .history(&[
            ("7.0.0", "Added the `NOW`, `FORCE` and `ABORT` modifiers."),
        ])
        .args(&[
            oneof("nosave_save", &[
                pure("nosave", "NOSAVE"),
                pure("save", "SAVE"),
            ]).optional(),
            pure("now", "NOW").since("7.0.0").optional(),
            pure("force", "FORCE").since("7.0.0").optional(),
            pure("abort", "ABORT").since("7.0.0").optional(),
        ]),
    doc("debug", "1.0.0", "Depends on subcommand.")
        .doc_flags(&["syscmd"]),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::COMMANDS;

    /// Commands whose arity allows arguments but that Redis documents without any: containers
    /// (documented through their subcommands; DEFRAG parses its own) and QUIT (it ignores its arguments).
    const NO_ARGUMENTS: &[&str] = &[
        "client", "object", "memory", "config", "command", "debug", "defrag", "function", "quit",
        "pubsub", "script", "xgroup", "xinfo", "module", "slowlog",
    ];

    fn check_args(cmd: &str, args: &[Arg]) {
        for a in args {
            assert!(!a.name.is_empty(), "{cmd}: argument without a name");
            // A key has a key spec; so may a pattern that names keys (SORT's BY and GET).
            assert_eq!(
                a.type_ == ArgType::Key,
                a.key_spec_index.is_some() && a.type_ != ArgType::Pattern,
                "{cmd}: {} has a key_spec_index iff it is a key (or a pattern of keys)",
                a.name
            );
            let nested = matches!(a.type_, ArgType::Oneof | ArgType::Block);
            assert_eq!(
                nested,
                !a.arguments.is_empty(),
                "{cmd}: {} has members iff it is a oneof or block",
                a.name
            );
            if a.type_ == ArgType::PureToken {
                assert!(
                    a.token.is_some(),
                    "{cmd}: pure token {} has no token",
                    a.name
                );
            }
            check_args(cmd, a.arguments);
        }
    }

    #[test]
    fn every_command_is_documented() {
        for c in COMMANDS {
            let d = doc_of(c.name).unwrap_or_else(|| panic!("{} has no docs", c.name));
            assert!(!d.complexity.is_empty());
            assert_eq!(d.since, c.since, "{}", c.name);
            if c.arity != 1 && !NO_ARGUMENTS.contains(&c.name) {
                assert!(arguments(c.name).is_some(), "{} has no arguments", c.name);
            }
            if c.arity == 1 {
                assert!(arguments(c.name).is_none(), "{} takes no arguments", c.name);
            }
            check_args(c.name, d.arguments);
            for s in c.subcommands {
                let d = doc_of(s.name).unwrap_or_else(|| panic!("{} has no docs", s.name));
                assert!(complexity(s.name).is_some());
                if s.arity != 2 {
                    assert!(arguments(s.name).is_some(), "{} has no arguments", s.name);
                } else {
                    assert!(arguments(s.name).is_none(), "{} takes no arguments", s.name);
                }
                check_args(s.name, d.arguments);
            }
        }
    }

    #[test]
    fn no_duplicate_or_stray_subcommand_docs() {
        let mut seen = std::collections::HashSet::new();
        for d in all_docs() {
            assert!(seen.insert(d.name), "{} documented twice", d.name);
            if let Some((parent, sub)) = d.name.split_once('|') {
                let c = COMMANDS.iter().find(|c| c.name == parent);
                assert!(
                    c.is_some_and(|c| c.subcommand(sub.as_bytes()).is_some()),
                    "{} is not in the command table",
                    d.name
                );
            }
        }
    }

    #[test]
    fn set_arguments_as_redis() {
        let set = arguments("set").unwrap();
        let names: Vec<_> = set.iter().map(|a| a.name).collect();
        assert_eq!(names, ["key", "value", "condition", "get", "expiration"]);
        assert_eq!(set[0].key_spec_index, Some(0));
        assert_eq!(set[2].type_, ArgType::Oneof);
        assert_eq!(set[2].flag_names().collect::<Vec<_>>(), ["optional"]);
        assert_eq!(set[4].arguments[2].token, Some("EXAT"));
        assert_eq!(set[4].arguments[2].type_.as_str(), "unix-time");
        assert_eq!(complexity("set"), Some("O(1)"));
        assert!(arguments("dbsize").is_none());
        assert!(arguments("client|kill").is_some());
        assert!(arguments("nosuch").is_none());
    }

    #[test]
    fn replies_are_well_formed() {
        use skerry_resp::{decode_value, Proto, Value};
        for proto in [Proto::Resp2, Proto::Resp3] {
            for d in all_docs() {
                let mut r = Reply::new(proto);
                r.map(field_count(d.name));
                write_fields(&mut r, d.name);
                let (v, used) = decode_value(&r.buf).unwrap().unwrap();
                assert_eq!(used, r.buf.len(), "{}: trailing bytes", d.name);
                let n = match v {
                    Value::Map(m) => m.len(),
                    Value::Array(a) => a.len() / 2,
                    other => panic!("{}: {other:?}", d.name),
                };
                assert_eq!(n, d.field_count(), "{}", d.name);
            }
        }
    }
}
