#!/usr/bin/env python3
"""Generates crates/server/src/commands/docs/redis.rs from Redis's src/commands/*.json.

Usage: scripts/gen-command-docs.py [REDIS_COMMANDS_DIR] [OUTPUT]
(defaults: /work/ref/redis-8.0.2/src/commands, crates/server/src/commands/docs/redis.rs)

To regenerate after a Redis upgrade: point REDIS_COMMANDS_DIR at the new release's
`src/commands`, run this script (and scripts/gen-command-keyspecs.py), then
`cargo test -p skerry-server docs` and `cargo test -p skerry --test command_docs` (the latter
compares COMMAND DOCS / COMMAND INFO with a reference redis-server named by
SKERRY_REDIS_SERVER).

For every command and subcommand Redis builds (sentinel-only and experimental ones left out,
as Redis's utils/generate-command-code.py and populateCommandStructure do) it writes what
COMMAND DOCS and COMMAND INFO print beyond the key specifications: summary, since, group,
complexity, doc_flags, deprecated_since, replaced_by, history, the argument tree, the ACL
categories (the JSON's plus the implicit ones of setImplicitACLCategories, in the order of
acl.c's ACLCommandCategories), the command tips and the command flags as COMMAND INFO names
them (with `movablekeys` as populateCommandLegacyRangeSpec derives it).

Strings go through the same transformations as Redis's generator: argument names and
display texts lower-cased, tokens and tips upper-/lower-cased, and every value pasted into a
C string literal (so MIGRATE's token `""` is the empty string, as Redis prints it). The
output is one `#[rustfmt::skip]` static, so `cargo fmt` has nothing to change.
"""

import glob
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = sys.argv[1] if len(sys.argv) > 1 else "/work/ref/redis-8.0.2/src/commands"
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    HERE, "..", "crates/server/src/commands/docs/redis.rs"
)

# The legacy range / movablekeys derivation lives in the key-spec generator.
_spec = importlib.util.spec_from_file_location(
    "gen_command_keyspecs", os.path.join(HERE, "gen-command-keyspecs.py")
)
_keyspecs = importlib.util.module_from_spec(_spec)
_argv, sys.argv = sys.argv, sys.argv[:1]
_spec.loader.exec_module(_keyspecs)
sys.argv = _argv

# COMMAND_GROUP_STR in Redis's generated commands.def.
GROUPS = {"sorted_set": "sorted-set"}

# addReplyFlagsForCommand's table, in its order (hidden flags left out).
FLAG_NAMES = [
    ("WRITE", "write"), ("READONLY", "readonly"), ("DENYOOM", "denyoom"),
    ("MODULE", "module"), ("ADMIN", "admin"), ("PUBSUB", "pubsub"),
    ("NOSCRIPT", "noscript"), ("BLOCKING", "blocking"), ("LOADING", "loading"),
    ("STALE", "stale"), ("SKIP_MONITOR", "skip_monitor"), ("SKIP_SLOWLOG", "skip_slowlog"),
    ("ASKING", "asking"), ("FAST", "fast"), ("NO_AUTH", "no_auth"),
    ("NO_MANDATORY_KEYS", "no_mandatory_keys"), ("NO_ASYNC_LOADING", "no_async_loading"),
    ("NO_MULTI", "no_multi"), ("MOVABLE_KEYS", "movablekeys"), ("ALLOW_BUSY", "allow_busy"),
]
HIDDEN_FLAGS = {"MAY_REPLICATE", "SENTINEL", "ONLY_SENTINEL", "PROTECTED",
                "TOUCHES_ARBITRARY_KEYS"}

# acl.c's ACLDefaultCommandCategories, in its order.
ACL_CATEGORIES = ["keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
                  "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
                  "blocking", "dangerous", "connection", "transaction", "scripting"]

DOC_FLAGS = [("DEPRECATED", "deprecated"), ("SYSCMD", "syscmd")]

ARG_TYPES = {
    "string": "Str", "integer": "Integer", "double": "Double", "key": "Key",
    "pattern": "Pattern", "unix-time": "UnixTime", "pure-token": "PureToken",
    "oneof": "Oneof", "block": "Block",
}


def c_literal(v):
    """The value of the C string literal `"v"`, as Redis's generator writes it: adjacent
    literals concatenate (`""""` is empty), backslash escapes are decoded."""
    text = '"' + v + '"'
    out, i, inside = [], 0, False
    escapes = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "r": "\r"}
    while i < len(text):
        ch = text[i]
        if not inside:
            if ch == '"':
                inside = True
            else:
                assert ch.isspace(), f"not a C string literal: {text!r}"
        elif ch == "\\":
            i += 1
            out.append(escapes[text[i]])
        elif ch == '"':
            inside = False
        else:
            out.append(ch)
        i += 1
    assert not inside, f"unterminated C string literal: {text!r}"
    return "".join(out)


def optional_desc(desc, field, upper=False):
    """get_optional_desc_string: None when absent or empty."""
    v = desc.get(field)
    if not v:
        return None
    if upper:
        v = v.upper()
    return c_literal(v.replace("\n", "\\n"))


def rust_str(s):
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def opt(s):
    return "None" if s is None else f"Some({rust_str(s)})"


def str_list(items):
    return "&[" + ", ".join(rust_str(x) for x in items) + "]"


def acl_categories(desc):
    flags = set(desc.get("command_flags", []))
    cats = {c.lower() for c in desc.get("acl_categories", [])}
    if "WRITE" in flags:
        cats.add("write")
    if "READONLY" in flags and "scripting" not in cats:
        cats.add("read")
    if "ADMIN" in flags:
        cats |= {"admin", "dangerous"}
    if "PUBSUB" in flags:
        cats.add("pubsub")
    if "FAST" in flags:
        cats.add("fast")
    if "BLOCKING" in flags:
        cats.add("blocking")
    if "fast" not in cats:
        cats.add("slow")
    unknown = cats - set(ACL_CATEGORIES)
    assert not unknown, unknown
    return ["@" + c for c in ACL_CATEGORIES if c in cats]


def command_flags(desc):
    flags = set(desc.get("command_flags", []))
    known = {f for f, _ in FLAG_NAMES} | HIDDEN_FLAGS
    assert flags <= known, flags - known
    if _keyspecs.legacy_range(desc.get("key_specs", []))[3]:
        flags.add("MOVABLE_KEYS")
    return [n for f, n in FLAG_NAMES if f in flags]


def arg_rust(a, indent):
    """One argument as a builder chain; nested arguments on their own lines."""
    name = c_literal(a["name"].lower())
    t = a["type"]
    s = f"arg({rust_str(name)}, {ARG_TYPES[t]})"
    nested = t in ("oneof", "block")
    if not nested and "display" in a:
        s += f".display({rust_str(c_literal(a['display'].lower()))})"
    if "key_spec_index" in a:
        s += f".ks({int(a['key_spec_index'])})"
    token = optional_desc(a, "token", upper=True)
    if token is not None:
        s += f".token({rust_str(token)})"
    for field in ("summary", "since", "deprecated_since"):
        v = optional_desc(a, field)
        if v is not None:
            s += f".{field}({rust_str(v)})"
    if a.get("optional"):
        s += ".optional()"
    if a.get("multiple"):
        s += ".multiple()"
    if a.get("multiple_token"):
        assert a.get("multiple")
        s += ".multiple_token()"
    if nested:
        pad = " " * indent
        inner = "".join(
            f"{pad}    {arg_rust(sub, indent + 4)},\n" for sub in a["arguments"]
        )
        s += f".args(&[\n{inner}{pad}])"
    return s


def doc_rust(e):
    d, name, group = e["desc"], e["name"], e["group"]
    summary = optional_desc(d, "summary")
    since = optional_desc(d, "since")
    assert summary and since, name
    lines = [f"    doc({rust_str(name)}, {rust_str(group)}, {rust_str(since)}, {rust_str(summary)})"]
    w = lines.append
    complexity = optional_desc(d, "complexity")
    if complexity is not None:
        w(f"        .complexity({rust_str(complexity)})")
    doc_flags = [n for f, n in DOC_FLAGS if f in d.get("doc_flags", [])]
    assert len(doc_flags) == len(d.get("doc_flags", [])), name
    if doc_flags:
        w(f"        .doc_flags({str_list(doc_flags)})")
    for field in ("deprecated_since", "replaced_by"):
        v = optional_desc(d, field)
        if v is not None:
            w(f"        .{field}({rust_str(v)})")
    if d.get("history"):
        w("        .history(&[")
        for since_v, change in d["history"]:
            w(f"            ({rust_str(c_literal(since_v))}, {rust_str(c_literal(change))}),")
        w("        ])")
    tips = [c_literal(t.lower()) for t in d.get("command_tips", [])]
    if tips:
        w(f"        .tips({str_list(tips)})")
    w(f"        .acl({str_list(acl_categories(d))})")
    w(f"        .flags({str_list(command_flags(d))})")
    w(f"        .arity({d['arity']})")
    if d.get("arguments"):
        w("        .args(&[")
        for a in d["arguments"]:
            w(f"            {arg_rust(a, 12)},")
        w("        ])")
    return "\n".join(lines) + ","


def main():
    descs = {}
    for path in sorted(glob.glob(os.path.join(SRC, "*.json"))):
        with open(path) as fh:
            for name, desc in json.load(fh).items():
                flags = desc.get("command_flags", [])
                if "EXPERIMENTAL" in flags or "ONLY_SENTINEL" in flags:
                    continue
                descs[(desc.get("container", "").lower(), name.lower())] = desc
    entries = []
    for (container, name), desc in descs.items():
        if container:
            parent = descs[("", container)]
            full, group = f"{container}|{name}", parent["group"]
        else:
            full, group = name, desc["group"]
        entries.append({"name": full, "group": GROUPS.get(group, group), "desc": desc})
    entries.sort(key=lambda e: e["name"])

    out = []
    w = out.append
    w("//! COMMAND DOCS and COMMAND INFO data of every Redis 8.0.2 command and subcommand,")
    w("//! generated by `scripts/gen-command-docs.py` from Redis's `src/commands/*.json`: do not")
    w("//! edit, regenerate (`scripts/gen-command-docs.py [REDIS_SRC/commands] [OUTPUT]`; see")
    w("//! the script's header). Summary, since, group, complexity, doc flags, deprecation,")
    w("//! history, arguments, command tips, ACL categories (with the implicit ones) and the")
    w("//! command flags as COMMAND INFO names them. Sorted by name.")
    w("")
    w("use super::ArgType::{")
    w("    Block, Double, Integer, Key, Oneof, Pattern, PureToken, String as Str, UnixTime,")
    w("};")
    w("use super::{arg, doc, Doc};")
    w("")
    w("/// Every command and subcommand of Redis 8.0.2 (`parent|sub`), sorted by name.")
    w("#[rustfmt::skip]")
    w("pub static REDIS_DOCS: &[Doc] = &[")
    for e in entries:
        w(doc_rust(e))
    w("];")
    with open(OUT, "w") as fh:
        fh.write("\n".join(out) + "\n")
    print(f"{len(entries)} commands written to {OUT}")


if __name__ == "__main__":
    main()
