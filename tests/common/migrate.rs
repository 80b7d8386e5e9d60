//! Helpers for the MIGRATE tests: the reference Redis 8.0 as a target, and a key's contents
//! in a form two servers can be compared by.

use super::{Raw, Server, Value};

/// The reference redis-server (`SKERRY_REDIS_SERVER`) when it is set and a Redis 8; None
/// (the caller skips, said on stderr) otherwise.
pub fn reference_8() -> Option<Server> {
    if std::env::var("SKERRY_REDIS_SERVER").map_or(true, |v| v.is_empty()) {
        eprintln!("skipped: SKERRY_REDIS_SERVER is not set (the reference Redis 8.0)");
        return None;
    }
    let s = Server::start_reference(&[]);
    let info = s.raw().cmd(&["INFO", "server"]).text();
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("0")
        .trim()
        .to_string();
    if !version.starts_with("8.") {
        eprintln!("skipped: the reference Redis is {version}, not 8.0");
        return None;
    }
    Some(s)
}

/// A key's type and contents, normalised (unordered types sorted; a stream's entries and
/// its groups with their pending counts and consumers), for comparisons between servers.
pub fn contents(r: &mut Raw, key: &str) -> (String, Vec<Vec<u8>>) {
    let t = r.cmd(&["TYPE", key]).text();
    fn flat(v: &Value, out: &mut Vec<Vec<u8>>) {
        match v {
            Value::Array(items) | Value::Set(items) => {
                for i in items {
                    flat(i, out);
                }
            }
            Value::Map(pairs) => {
                for (k, v) in pairs {
                    flat(k, out);
                    flat(v, out);
                }
            }
            Value::Bulk(b) => out.push(b.clone()),
            Value::Integer(i) => out.push(i.to_string().into_bytes()),
            Value::Error(e) => out.push(format!("(error) {e}").into_bytes()),
            other => out.push(format!("{other:?}").into_bytes()),
        }
    }
    let all = |r: &mut Raw, args: &[&str]| {
        let mut out = Vec::new();
        flat(&r.cmd(args), &mut out);
        out
    };
    let c = match t.as_str() {
        "string" => all(r, &["GET", key]),
        "list" => all(r, &["LRANGE", key, "0", "-1"]),
        "set" => {
            let mut v = all(r, &["SMEMBERS", key]);
            v.sort();
            v
        }
        "zset" => all(r, &["ZRANGE", key, "0", "-1", "WITHSCORES"]),
        "hash" => {
            let fv = all(r, &["HGETALL", key]);
            let mut pairs: Vec<Vec<u8>> = fv
                .chunks(2)
                .map(|c| [&c[0][..], b"\0", &c[1][..]].concat())
                .collect();
            pairs.sort();
            // Field TTLs (absolute ms), in field order.
            let fields: Vec<Vec<u8>> = pairs
                .iter()
                .map(|p| p[..p.iter().position(|&b| b == 0).unwrap()].to_vec())
                .collect();
            if !fields.is_empty() {
                let n = fields.len().to_string();
                let mut args: Vec<&[u8]> =
                    vec![b"HPEXPIRETIME", key.as_bytes(), b"FIELDS", n.as_bytes()];
                args.extend(fields.iter().map(|f| &f[..]));
                flat(&r.cmd_bytes(&args), &mut pairs);
            }
            pairs
        }
        "stream" => {
            let mut v = all(r, &["XRANGE", key, "-", "+"]);
            v.extend(all(r, &["XINFO", "GROUPS", key]));
            v.extend(
                all(r, &["XPENDING", key, "g", "-", "+", "100"])
                    .into_iter()
                    .step_by(4),
            );
            v
        }
        "none" => vec![],
        other => panic!("unexpected type {other}"),
    };
    (t, c)
}
