//! What `COMMAND DOCS` and `COMMAND INFO` say about a command beyond its dispatch data:
//! summary, version, group, complexity, history, deprecation, the argument tree, ACL
//! categories and command tips.
//!
//! The data of every Redis command is generated from Redis 8.0.2's `src/commands/*.json`
//! into [`redis`] by `scripts/gen-command-docs.py` (regenerate it, do not edit it); the
//! commands only Skerry has are written by hand in [`skerry`]. The reply format follows
//! `addReplyCommandDocs` and `addReplyCommandArgList` in Redis's `server.c`.

use crate::reply::Reply;

mod redis;
mod skerry;

pub use redis::REDIS_DOCS;
pub use skerry::SKERRY_DOCS;

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
    /// Text to show instead of the name (Redis shows the name when there is none).
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

/// An argument named `name` of type `type_`, to be refined with the builder methods.
const fn arg(name: &'static str, type_: ArgType) -> Arg {
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

impl Arg {
    const fn display(self, text: &'static str) -> Arg {
        Arg {
            display_text: Some(text),
            ..self
        }
    }
    const fn ks(self, index: i32) -> Arg {
        Arg {
            key_spec_index: Some(index),
            ..self
        }
    }
    const fn token(self, token: &'static str) -> Arg {
        Arg {
            token: Some(token),
            ..self
        }
    }
    #[allow(dead_code)] // no Redis 8.0.2 argument has a summary; the generator supports it
    const fn summary(self, summary: &'static str) -> Arg {
        Arg {
            summary: Some(summary),
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
    const fn multiple_token(self) -> Arg {
        Arg {
            flags: self.flags | MULTIPLE_TOKEN,
            ..self
        }
    }
    const fn args(self, arguments: &'static [Arg]) -> Arg {
        Arg { arguments, ..self }
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

/// The documentation of one command or subcommand (`parent|sub`).
#[derive(Debug)]
pub struct Doc {
    /// Lower-case name; `parent|sub` for subcommands.
    pub name: &'static str,
    /// Command group as COMMAND DOCS names it (`sorted-set`, `server`, ...); a
    /// subcommand's is its container's.
    pub group: &'static str,
    /// Version that introduced it.
    pub since: &'static str,
    /// One-line description.
    pub summary: &'static str,
    /// Time complexity (a few commands have none).
    pub complexity: Option<&'static str>,
    /// `deprecated`, `syscmd`.
    pub doc_flags: &'static [&'static str],
    /// Version that deprecated it.
    pub deprecated_since: Option<&'static str>,
    /// What replaces it.
    pub replaced_by: Option<&'static str>,
    /// (version, change) pairs.
    pub history: &'static [(&'static str, &'static str)],
    /// Command tips (`nondeterministic_output`, `request_policy:all_shards`, ...), lower case.
    pub tips: &'static [&'static str],
    /// ACL categories as COMMAND INFO prints them (`@write`, ...), the implicit ones
    /// included, in Redis's order.
    pub acl: &'static [&'static str],
    /// Command flags as COMMAND INFO prints them (`movablekeys` included), in Redis's order.
    /// COMMAND INFO prints the command table's; these are Redis's, to check the table.
    pub flags: &'static [&'static str],
    /// Redis's arity (COMMAND INFO prints the command table's; this checks it).
    pub arity: i32,
    /// Arguments (empty: none).
    pub arguments: &'static [Arg],
}

/// A command's documentation with its name, group, version and summary, to be refined with
/// the builder methods.
const fn doc(
    name: &'static str,
    group: &'static str,
    since: &'static str,
    summary: &'static str,
) -> Doc {
    Doc {
        name,
        group,
        since,
        summary,
        complexity: None,
        doc_flags: &[],
        deprecated_since: None,
        replaced_by: None,
        history: &[],
        tips: &[],
        acl: &[],
        flags: &[],
        arity: 0,
        arguments: &[],
    }
}

impl Doc {
    const fn complexity(self, complexity: &'static str) -> Doc {
        Doc {
            complexity: Some(complexity),
            ..self
        }
    }
    const fn doc_flags(self, doc_flags: &'static [&'static str]) -> Doc {
        Doc { doc_flags, ..self }
    }
    const fn deprecated_since(self, version: &'static str) -> Doc {
        Doc {
            deprecated_since: Some(version),
            ..self
        }
    }
    const fn replaced_by(self, replacement: &'static str) -> Doc {
        Doc {
            replaced_by: Some(replacement),
            ..self
        }
    }
    const fn history(self, history: &'static [(&'static str, &'static str)]) -> Doc {
        Doc { history, ..self }
    }
    const fn tips(self, tips: &'static [&'static str]) -> Doc {
        Doc { tips, ..self }
    }
    const fn acl(self, acl: &'static [&'static str]) -> Doc {
        Doc { acl, ..self }
    }
    const fn flags(self, flags: &'static [&'static str]) -> Doc {
        Doc { flags, ..self }
    }
    const fn arity(self, arity: i32) -> Doc {
        Doc { arity, ..self }
    }
    const fn args(self, arguments: &'static [Arg]) -> Doc {
        Doc { arguments, ..self }
    }

    /// The entries of this command's COMMAND DOCS map (a container's `subcommands`
    /// included when `container`).
    pub fn field_count(&self, container: bool) -> usize {
        3 + usize::from(self.complexity.is_some())
            + usize::from(!self.doc_flags.is_empty())
            + usize::from(self.deprecated_since.is_some())
            + usize::from(self.replaced_by.is_some())
            + usize::from(!self.history.is_empty())
            + usize::from(!self.arguments.is_empty())
            + usize::from(container)
    }
}

/// The documentation of `name` (lower case; `parent|sub` for subcommands): Redis's, else
/// Skerry's own.
pub fn doc_of(name: &str) -> Option<&'static Doc> {
    redis_doc(name).or_else(|| SKERRY_DOCS.iter().find(|d| d.name == name))
}

/// Redis 8.0.2's documentation of `name` (lower case; `parent|sub` for subcommands).
pub fn redis_doc(name: &str) -> Option<&'static Doc> {
    REDIS_DOCS
        .binary_search_by(|d| d.name.cmp(name))
        .ok()
        .map(|i| &REDIS_DOCS[i])
}

/// Every documentation entry, Redis's then Skerry's.
pub fn all_docs() -> impl Iterator<Item = &'static Doc> {
    REDIS_DOCS.iter().chain(SKERRY_DOCS)
}

/// The arguments of `name` (lower case; `parent|sub` for subcommands); None when it takes
/// none or is unknown.
pub fn arguments(name: &str) -> Option<&'static [Arg]> {
    doc_of(name).map(|d| d.arguments).filter(|a| !a.is_empty())
}

/// Writes the COMMAND DOCS map of `d`, as Redis's `addReplyCommandDocs`: summary, since,
/// group, complexity, doc_flags, deprecated_since, replaced_by, history, arguments, and
/// for a container (`subcommands` is Some) the map of its subcommands' documentation.
pub fn write_doc(r: &mut Reply, d: &Doc, subcommands: Option<&[&Doc]>) {
    r.map(d.field_count(subcommands.is_some()));
    r.bulk_str("summary");
    r.bulk_str(d.summary);
    r.bulk_str("since");
    r.bulk_str(d.since);
    r.bulk_str("group");
    r.bulk_str(d.group);
    if let Some(c) = d.complexity {
        r.bulk_str("complexity");
        r.bulk_str(c);
    }
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
    if let Some(subs) = subcommands {
        r.bulk_str("subcommands");
        r.map(subs.len());
        for s in subs {
            r.bulk_str(s.name);
            write_doc(r, s, None);
        }
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

/// Writes a set of strings as COMMAND INFO writes command tips (bulk strings).
pub fn write_tips(r: &mut Reply, tips: &[&str]) {
    r.set(tips.len());
    for t in tips {
        r.bulk_str(t);
    }
}

#[cfg(test)]
mod tests;
