//! COMMAND DOCS, COMMAND INFO and COMMAND LIST FILTERBY ACLCAT against the reference Redis
//! 8.0 (`SKERRY_REDIS_SERVER`): for every command and subcommand Skerry has and Redis knows,
//! the replies are compared in RESP2 and RESP3, byte for byte where Redis's order is fixed.
//!
//! Redis lists a container's subcommands in hash order: those entries are compared sorted
//! by name, and the subcommands Skerry does not implement are left out of Redis's list.

mod common;

use std::collections::BTreeSet;

use common::*;

/// Replies where Skerry differs from Redis on purpose: (`COMMAND <sub> <name>`, reason).
/// Empty: every command Skerry has answers exactly as Redis 8.0.2.
const ACCEPTED: &[(&str, &str)] = &[];

/// A raw connection speaking `proto` (2 or 3).
fn connect(s: &Server, proto: u8) -> Raw {
    let mut r = s.raw();
    if proto == 3 {
        let hello = r.cmd(&["HELLO", "3"]);
        assert!(!hello.is_error(), "HELLO 3: {hello:?}");
    }
    r
}

/// The pairs of a map (RESP3) or flat key/value array (RESP2), rebuilt in the same shape.
fn rebuild_pairs(shape: &Value, pairs: Vec<(Value, Value)>) -> Value {
    match shape {
        Value::Map(_) => Value::Map(pairs),
        _ => Value::Array(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect()),
    }
}

/// A COMMAND DOCS reply with each container's `subcommands` sorted by name and limited to
/// the names in `known`.
fn normalize_docs(v: &Value, known: &BTreeSet<String>) -> Value {
    let entries = v
        .pairs()
        .into_iter()
        .map(|(name, doc)| {
            let fields = doc
                .pairs()
                .into_iter()
                .map(|(k, field)| {
                    if k.text() != "subcommands" {
                        return (k, field);
                    }
                    let mut subs: Vec<(Value, Value)> = field
                        .pairs()
                        .into_iter()
                        .filter(|(n, _)| known.contains(&n.text()))
                        .collect();
                    subs.sort_by_key(|(n, _)| n.text());
                    (k, rebuild_pairs(&field, subs))
                })
                .collect();
            (name, rebuild_pairs(&doc, fields))
        })
        .collect();
    rebuild_pairs(v, entries)
}

/// A COMMAND INFO reply with each command's subcommand entries sorted by name and limited
/// to the names in `known`.
fn normalize_info(v: &Value, known: &BTreeSet<String>) -> Value {
    let entries = v
        .items()
        .into_iter()
        .map(|info| {
            if info == Value::Null || info == Value::NullArray {
                return info;
            }
            let mut fields = info.items();
            let mut subs: Vec<Value> = fields[9]
                .items()
                .into_iter()
                .filter(|s| known.contains(&s.items()[0].text()))
                .collect();
            subs.sort_by_key(|s| s.items()[0].text());
            fields[9] = match &fields[9] {
                Value::Set(_) => Value::Set(subs),
                _ => Value::Array(subs),
            };
            Value::Array(fields)
        })
        .collect();
    Value::Array(entries)
}

/// Sends `args` to both servers and returns the difference, if any, after `normalize`.
fn compare(
    sk: &mut Raw,
    re: &mut Raw,
    args: &[&str],
    normalize: impl Fn(&Value) -> Value,
) -> Option<String> {
    let a = sk.cmd_raw(args);
    let b = re.cmd_raw(args);
    if a == b {
        return None;
    }
    let va = normalize(&resp::decode(&a).unwrap().0);
    let vb = normalize(&resp::decode(&b).unwrap().0);
    if va == vb {
        return None;
    }
    Some(format!(
        "{}:\n  skerry {va:?}\n  redis  {vb:?}",
        args.join(" ")
    ))
}

#[test]
fn command_docs_and_info_as_redis_8() {
    let Some(reference) = Server::start_reference_8(&[]) else {
        return;
    };
    let skerry = Server::start(&[]);
    // Every name Skerry lists (commands and `parent|sub` subcommands) that Redis knows.
    let ours: BTreeSet<String> = skerry
        .raw()
        .cmd(&["COMMAND", "LIST"])
        .strings()
        .into_iter()
        .collect();
    let theirs: BTreeSet<String> = reference
        .raw()
        .cmd(&["COMMAND", "LIST"])
        .strings()
        .into_iter()
        .collect();
    let names: Vec<&String> = ours.intersection(&theirs).collect();
    assert!(names.len() > 300, "only {} commands in common", names.len());
    let only_ours: Vec<&String> = ours.difference(&theirs).collect();
    eprintln!(
        "compared {} commands; Skerry only: {only_ours:?}",
        names.len()
    );

    let mut diffs = Vec::new();
    for proto in [2, 3] {
        let (mut sk, mut re) = (connect(&skerry, proto), connect(&reference, proto));
        for name in &names {
            for sub in ["DOCS", "INFO"] {
                let args = ["COMMAND", sub, name.as_str()];
                let d = if sub == "DOCS" {
                    compare(&mut sk, &mut re, &args, |v| normalize_docs(v, &ours))
                } else {
                    compare(&mut sk, &mut re, &args, |v| normalize_info(v, &ours))
                };
                if let Some(d) = d {
                    diffs.push((args.join(" "), format!("RESP{proto} {d}")));
                }
            }
        }
        // Several names at once, unknown ones, case, subcommands of a non-container.
        for args in [
            &[
                "COMMAND",
                "DOCS",
                "nosuch",
                "GET",
                "client|ID",
                "get|x",
                "client|nosuch",
            ][..],
            &[
                "COMMAND",
                "INFO",
                "nosuch",
                "GET",
                "client|ID",
                "get|x",
                "client|nosuch",
            ][..],
            &["COMMAND", "DOCS", "client|id|x", "client|", "|id", ""][..],
        ] {
            let docs = args[1] == "DOCS";
            let d = compare(&mut sk, &mut re, args, |v| {
                if docs {
                    normalize_docs(v, &ours)
                } else {
                    normalize_info(v, &ours)
                }
            });
            if let Some(d) = d {
                diffs.push((args.join(" "), format!("RESP{proto} {d}")));
            }
        }
    }
    let unexpected: Vec<&String> = diffs
        .iter()
        .filter(|(cmd, _)| !ACCEPTED.iter().any(|(a, _)| a == cmd))
        .map(|(_, d)| d)
        .collect();
    assert!(
        unexpected.is_empty(),
        "{} replies differ from Redis 8.0:\n{}",
        unexpected.len(),
        unexpected
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn command_list_filterby_aclcat_as_redis_8() {
    let Some(reference) = Server::start_reference_8(&[]) else {
        return;
    };
    let skerry = Server::start(&[]);
    let (mut sk, mut re) = (skerry.raw(), reference.raw());
    // The names both servers have (Skerry-only commands such as DEFRAG left out).
    let theirs: BTreeSet<String> = re.cmd(&["COMMAND", "LIST"]).strings().into_iter().collect();
    let ours: BTreeSet<String> = sk
        .cmd(&["COMMAND", "LIST"])
        .strings()
        .into_iter()
        .filter(|n| theirs.contains(n))
        .collect();
    let mut categories = re.cmd(&["ACL", "CAT"]).strings();
    assert!(categories.len() >= 21, "{categories:?}");
    // Case-insensitive; with `@` or unknown: no command.
    categories.extend(["READ", "Write", "@read", "nosuch", ""].map(String::from));
    let mut diffs = Vec::new();
    for cat in &categories {
        let list = |r: &mut Raw| -> BTreeSet<String> {
            r.cmd(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", cat])
                .strings()
                .into_iter()
                .filter(|n| ours.contains(n))
                .collect()
        };
        let (a, b) = (list(&mut sk), list(&mut re));
        if a != b {
            diffs.push(format!(
                "ACLCAT {cat}: Skerry only {:?}, Redis only {:?}",
                a.difference(&b).collect::<Vec<_>>(),
                b.difference(&a).collect::<Vec<_>>()
            ));
        }
    }
    // The filtered lists are made of whole names: a category's commands in Skerry's list
    // are exactly those COMMAND INFO puts in it.
    let write: BTreeSet<String> = sk
        .cmd(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "write"])
        .strings()
        .into_iter()
        .collect();
    assert!(write.contains("set") && !write.contains("client|kill"));
    assert!(write.contains("xgroup|create"), "{write:?}");
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
