use super::*;
use crate::commands::{keyspecs, COMMANDS};

fn check_args(cmd: &str, args: &[Arg]) {
    for a in args {
        assert!(!a.name.is_empty(), "{cmd}: argument without a name");
        let nested = matches!(a.type_, ArgType::Oneof | ArgType::Block);
        assert_eq!(
            nested,
            !a.arguments.is_empty(),
            "{cmd}: {} has members iff it is a oneof or block",
            a.name
        );
        assert!(
            !nested || a.display_text.is_none(),
            "{cmd}: {} is nested and has a display text",
            a.name
        );
        if a.type_ == ArgType::PureToken {
            assert!(
                a.token.is_some(),
                "{cmd}: pure token {} has no token",
                a.name
            );
        }
        if a.flags & MULTIPLE_TOKEN != 0 {
            assert!(a.flags & MULTIPLE != 0, "{cmd}: {}", a.name);
        }
        check_args(cmd, a.arguments);
    }
}

#[test]
fn redis_docs_are_sorted_and_unique() {
    for w in REDIS_DOCS.windows(2) {
        assert!(w[0].name < w[1].name, "{} / {}", w[0].name, w[1].name);
    }
    for d in SKERRY_DOCS {
        assert!(redis_doc(d.name).is_none(), "{} is a Redis command", d.name);
    }
    // Every Redis command and subcommand but the sentinel-only and experimental ones.
    assert_eq!(REDIS_DOCS.len(), 382);
    for d in all_docs() {
        check_args(d.name, d.arguments);
        assert!(!d.summary.is_empty() && !d.since.is_empty(), "{}", d.name);
        assert!(!d.acl.is_empty(), "{}: no ACL category", d.name);
        assert!(d.acl.iter().all(|c| c.starts_with('@')), "{}", d.name);
    }
}

#[test]
fn every_command_is_documented() {
    for c in COMMANDS {
        let d = doc_of(c.name).unwrap_or_else(|| panic!("{} has no docs", c.name));
        assert_eq!(d.since, c.since, "{}", c.name);
        for s in c.subcommands {
            let d = doc_of(s.name).unwrap_or_else(|| panic!("{} has no docs", s.name));
            assert_eq!(
                d.group,
                doc_of(c.name).unwrap().group,
                "{}: a subcommand's group is its container's",
                s.name
            );
        }
    }
}

#[test]
fn generated_data_as_redis() {
    let set = arguments("set").unwrap();
    let names: Vec<_> = set.iter().map(|a| a.name).collect();
    assert_eq!(names, ["key", "value", "condition", "get", "expiration"]);
    assert_eq!(set[0].key_spec_index, Some(0));
    assert_eq!(set[2].type_, ArgType::Oneof);
    assert_eq!(set[2].flag_names().collect::<Vec<_>>(), ["optional"]);
    assert_eq!(set[4].arguments[2].token, Some("EXAT"));
    assert_eq!(set[4].arguments[2].type_.as_str(), "unix-time");
    // Redis 8 renamed ZADD's score/member block and rewrote its summary.
    let zadd = doc_of("zadd").unwrap();
    assert_eq!(zadd.arguments.last().unwrap().name, "data");
    assert_eq!(
        zadd.summary,
        "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist."
    );
    assert_eq!(zadd.group, "sorted-set");
    assert_eq!(zadd.acl, ["@write", "@sortedset", "@fast"]);
    // Implicit categories: admin commands are @admin @slow @dangerous.
    assert_eq!(
        doc_of("client|kill").unwrap().acl,
        ["@admin", "@slow", "@dangerous", "@connection"]
    );
    assert_eq!(
        doc_of("keys").unwrap().tips,
        ["request_policy:all_shards", "nondeterministic_output_order"]
    );
    // MIGRATE's token is the C literal `""""`: an empty string.
    let migrate = arguments("migrate").unwrap();
    let selector = migrate.iter().find(|a| a.name == "key-selector").unwrap();
    assert_eq!(selector.arguments[1].token, Some(""));
    let getset = doc_of("getset").unwrap();
    assert_eq!(getset.doc_flags, ["deprecated"]);
    assert_eq!(getset.deprecated_since, Some("6.2.0"));
    assert_eq!(getset.complexity, Some("O(1)"));
    assert!(arguments("dbsize").is_none());
    assert!(arguments("client|kill").is_some());
    assert!(doc_of("nosuch").is_none());
    assert!(doc_of("sentinel").is_none());
}

#[test]
fn replies_are_well_formed() {
    use skerry_resp::{decode_value, Proto, Value};
    for proto in [Proto::Resp2, Proto::Resp3] {
        for d in all_docs() {
            let mut r = Reply::new(proto);
            write_doc(&mut r, d, Some(&[d]));
            let (v, used) = decode_value(&r.buf).unwrap().unwrap();
            assert_eq!(used, r.buf.len(), "{}: trailing bytes", d.name);
            let n = match v {
                Value::Map(m) => m.len(),
                Value::Array(a) => a.len() / 2,
                other => panic!("{}: {other:?}", d.name),
            };
            assert_eq!(n, d.field_count(true), "{}", d.name);
        }
    }
}

/// Where the command table differs from Redis 8.0.2 on purpose (`name: what`), with the
/// reason. COMMAND INFO prints the table's arity and flags, Redis's ACL categories.
const ACCEPTED: &[(&str, &str)] = &[];

/// The command table's arity, flags, key range and ACL categories against Redis's.
#[test]
fn table_agrees_with_redis() {
    fn sorted<'a>(v: impl IntoIterator<Item = &'a &'a str>) -> Vec<&'a str> {
        let mut v: Vec<&str> = v.into_iter().copied().collect();
        v.sort_unstable();
        v
    }
    let mut diffs = Vec::new();
    let mut check =
        |name: &'static str, arity: i32, flags: &[&'static str], acl: Option<&[&'static str]>| {
            let Some(d) = redis_doc(name) else { return };
            if arity != d.arity {
                diffs.push(format!("{name}: arity {arity}, Redis {}", d.arity));
            }
            // Flags Redis keeps to itself (`may_replicate`, `protected`) do not show.
            const HIDDEN: &[&str] = &["may_replicate", "protected", "sentinel", "only_sentinel"];
            let mut ours: Vec<&str> = flags
                .iter()
                .copied()
                .filter(|f| !HIDDEN.contains(f))
                .collect();
            if keyspecs::find(name).is_some_and(|k| k.movable) && !ours.contains(&"movablekeys") {
                ours.push("movablekeys");
            }
            let (ours, theirs) = (sorted(&ours), sorted(d.flags));
            if ours != theirs {
                diffs.push(format!("{name}: flags {ours:?}, Redis {theirs:?}"));
            }
            if let Some(acl) = acl {
                let (ours, theirs) = (sorted(acl), sorted(d.acl));
                if ours != theirs {
                    diffs.push(format!("{name}: acl {ours:?}, Redis {theirs:?}"));
                }
            }
        };
    for c in COMMANDS {
        check(c.name, c.arity, c.flags, Some(c.acl));
        for s in c.subcommands {
            check(s.name, s.arity, s.flags, None);
        }
    }
    let accepted: Vec<String> = ACCEPTED.iter().map(|(d, _)| d.to_string()).collect();
    let unexpected: Vec<&String> = diffs.iter().filter(|d| !accepted.contains(d)).collect();
    let stale: Vec<&String> = accepted.iter().filter(|d| !diffs.contains(d)).collect();
    assert!(
        unexpected.is_empty() && stale.is_empty(),
        "the command table differs from Redis 8.0.2:\n{}\naccepted differences no longer seen:\n{}",
        unexpected
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        stale
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    );
}
