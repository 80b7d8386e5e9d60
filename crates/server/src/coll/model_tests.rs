//! Model-based tests of the collection commands: random command sequences run through the
//! real handlers on a keyspace over the fault-injecting RAM device, next to a simple
//! in-memory model of what Redis 7.0 would do. Every reply must match the model's, and after
//! a power cut ([`Cut`]: after a random number of device writes, or while the last
//! commands' writes are unsynced, the last surviving one torn at a sector boundary) and a
//! recovery scan, the keyspace must hold exactly the model's state after some prefix of the
//! commands that includes every command whose records were synced.
//!
//! One model ([`Db`]) holds every type, so that commands on one key name see each other
//! (WRONGTYPE, SET over a collection, stores over keys of other types, sets as ZUNIONSTORE
//! sources). Each test draws its commands from one family plus a few cross-type ones (SET,
//! GET, DEL, TYPE, EXISTS) on three key names; one test mixes every family.
//!
//! Order: small hashes keep insertion order in Skerry as in Redis's listpack (a changed
//! field keeps its place, a deleted one closes the gap), so the model keeps the order and
//! HGETALL/HKEYS/HVALS are compared exactly, as is the key's recovered state; the generated
//! hashes never leave listpack limits (128 fields, 64-byte values). Lists and sorted sets
//! have a defined order. Set replies (SMEMBERS, SINTER, SUNION, SDIFF) are compared as sorted
//! multisets ([`canon`]), as Redis's order depends on the encoding and the hash table.
//! Scores are integers and halves (exact in binary, printed alike by Rust and Redis's
//! `d2string`), the infinities and a negative zero.
//!
//! Environment: `MODEL_CASES` (cases per random test, default 128); `MODEL_REDIS_PORT`
//! runs the random tests against a scratch `redis-server` on that port instead of Skerry
//! (no crashes), which is how the model itself was checked against Redis 7.0.15, e.g.
//! `redis-server --port 16399 --save '' & MODEL_REDIS_PORT=16399 MODEL_CASES=3000 cargo
//! test -p skerry-server --lib model_tests`; `MODEL_TRACE` prints every command, its
//! expected reply and each crash (with `--nocapture`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;

use proptest::prelude::*;
use skerry_resp::Proto;
use skerry_store::device::{CrashSpec, RamControl, RamDevice};
use skerry_store::format::{RecordKind, VALUE_TYPE_STRING};
use skerry_store::{Durability, Store, StoreOptions, Writer};

use super::Coll;
use crate::commands::{lookup, Exec, Handler, COMMANDS};
use crate::config::Config;
use crate::keyspace::{split_record_key, Keyspace, RecoveredIndex, Value};
use crate::reply::Reply;

const DEVICE_BYTES: u64 = 8 << 20;
const SECTOR: usize = 512;
const NOW_MS: i64 = 1_000_000;

fn opts() -> StoreOptions {
    StoreOptions {
        block_size_bytes: 1 << 20,
        ..StoreOptions::default()
    }
}

/// Opens a keyspace over `dev` (recovering what it holds).
async fn open(dev: RamDevice) -> (Keyspace, Rc<Writer>) {
    let mut index = RecoveredIndex::new(1);
    let (store, rec) = Store::create_or_open(vec![dev.into()], &opts(), |r| {
        let (db, key) = split_record_key(r.key).expect("record key");
        match r.meta.kind {
            RecordKind::Value => {
                index.value(db, key, &r.location, r.meta.value_type, r.meta.expiry_ms)
            }
            _ => index.tombstone(db, key),
        }
    })
    .await
    .expect("store opens");
    index.finish(NOW_MS, 0, |l| store.add_live(l));
    store.recovery_done();
    let log = Rc::new(
        Writer::open(store, 0, Durability::Always, rec.max_mutation_seq)
            .await
            .expect("writer"),
    );
    (Keyspace::new(index, log.clone()), log)
}

/// Makes the values of `keys` resident, as the dispatcher does.
async fn resident(ks: &mut Keyspace, keys: &[&[u8]]) {
    let mark = ks.read_mark();
    loop {
        let missing = ks.missing(0, keys, NOW_MS, mark);
        if missing.is_empty() {
            return;
        }
        let got = crate::keyspace::fetch(ks.log().clone(), missing).await;
        ks.fill(got, mark).expect("reads succeed");
    }
}

/// Runs one command through its real handler; returns the RESP2 reply.
async fn run(ks: &mut Keyspace, config: &Config, argv: &[Vec<u8>]) -> Vec<u8> {
    let argv: Vec<&[u8]> = argv.iter().map(|a| &a[..]).collect();
    let idx = lookup(argv[0]).expect("known command");
    let spec = &COMMANDS[idx];
    assert!(spec.arity_ok(argv.len()), "arity of {argv:?}");
    let keys: Vec<&[u8]> = spec
        .key_positions(&argv)
        .into_iter()
        .map(|p| argv[p])
        .collect();
    resident(ks, &keys).await;
    let Handler::Keyed { run, .. } = spec.handler else {
        panic!("not keyed")
    };
    let mut reply = Reply::new(Proto::Resp2);
    let mut x = Exec {
        ks,
        db: 0,
        now_ms: NOW_MS,
        reply: &mut reply,
        config,
        block: None,
    };
    // As `conn::exec_keyed` does: a command's records are one unit for recovery.
    x.ks.begin_command(crate::conn::may_write_several(idx, &argv));
    run(&mut x, &argv);
    x.ks.end_command();
    assert!(x.block.is_none(), "non-blocking command asked to wait");
    if let Some(e) = ks.take_error() {
        panic!("{argv:?} failed: {e}");
    }
    reply.buf
}

/// A key's contents in a form both the keyspace and the model produce.
#[derive(Clone, PartialEq, Eq)]
pub enum Norm {
    /// A string.
    Str(Vec<u8>),
    /// (field, value) in the hash's order.
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    /// Elements in order.
    List(Vec<Vec<u8>>),
    /// Members.
    Set(BTreeSet<Vec<u8>>),
    /// (member, score bits) in score order.
    Zset(Vec<(Vec<u8>, u64)>),
}

/// Readable bytes.
struct Show<'a>(&'a [u8]);
impl std::fmt::Debug for Show<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.0))
    }
}

impl std::fmt::Debug for Norm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Norm::Str(s) => write!(f, "Str({:?})", Show(s)),
            Norm::Hash(h) => f
                .debug_map()
                .entries(h.iter().map(|(k, v)| (Show(k), Show(v))))
                .finish(),
            Norm::List(l) => f.debug_list().entries(l.iter().map(|e| Show(e))).finish(),
            Norm::Set(s) => f.debug_set().entries(s.iter().map(|e| Show(e))).finish(),
            Norm::Zset(z) => f
                .debug_list()
                .entries(z.iter().map(|(m, s)| (Show(m), f64::from_bits(*s))))
                .finish(),
        }
    }
}

/// A state, readable.
fn show(s: &BTreeMap<Vec<u8>, Norm>) -> String {
    s.iter()
        .map(|(k, v)| format!("{}: {v:?}", String::from_utf8_lossy(k)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn norm(c: &Coll) -> Norm {
    match c {
        Coll::Hash(h) => Norm::Hash(h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()),
        Coll::List(l) => Norm::List(l.items().iter().cloned().collect()),
        Coll::Set(s) => Norm::Set(s.iter().map(|m| m.to_vec()).collect()),
        Coll::Zset(z) => Norm::Zset(z.iter().map(|(m, s)| (m.to_vec(), s.to_bits())).collect()),
        Coll::Stream(_) => unreachable!("streams are not in this model"),
    }
}

/// Every key of the keyspace and its contents.
async fn state(ks: &mut Keyspace, keys: &[Vec<u8>]) -> BTreeMap<Vec<u8>, Norm> {
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    resident(ks, &refs).await;
    let mut out = BTreeMap::new();
    for k in keys {
        let Some(m) = ks.meta(0, k, NOW_MS) else {
            continue;
        };
        if m.value_type == VALUE_TYPE_STRING {
            let got = ks.peek(0, k, NOW_MS).expect("string readable");
            let Value::Str(v) = got.value else {
                panic!("string key {k:?} holds a collection")
            };
            out.insert(k.clone(), Norm::Str(v));
            continue;
        }
        let c = ks
            .coll(0, k, m.value_type, NOW_MS)
            .expect("collection decodes")
            .expect("live");
        out.insert(k.clone(), norm(c));
    }
    out
}

/// What Redis would answer and hold.
pub trait Model: Default + Clone {
    /// Applies `argv`, returning the expected RESP2 reply.
    fn apply(&mut self, argv: &[Vec<u8>]) -> Vec<u8>;
    /// The state, normalised.
    fn state(&self) -> BTreeMap<Vec<u8>, Norm>;
}

/// Commands whose array reply has no defined order (compared sorted).
const UNORDERED: &[&str] = &["smembers", "sinter", "sunion", "sdiff"];

/// `reply` to `argv` in the form compared: the elements of an unordered array reply sorted.
fn canon(argv: &[Vec<u8>], reply: Vec<u8>) -> Vec<u8> {
    let cmd = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
    if !UNORDERED.contains(&cmd.as_str()) || reply.first() != Some(&b'*') {
        return reply;
    }
    let mut pos = 0;
    let Some(n) = resp_line(&reply, &mut pos).and_then(|l| l[1..].parse::<usize>().ok()) else {
        return reply;
    };
    let mut items = Vec::with_capacity(n);
    for _ in 0..n {
        let start = pos;
        let Some(l) = resp_line(&reply, &mut pos) else {
            return reply;
        };
        if let Some(len) = l.strip_prefix('$').and_then(|s| s.parse::<usize>().ok()) {
            pos += len + 2;
        }
        items.push(reply[start..pos.min(reply.len())].to_vec());
    }
    items.sort();
    let mut out = format!("*{n}\r\n").into_bytes();
    for i in items {
        out.extend_from_slice(&i);
    }
    out.extend_from_slice(&reply[pos.min(reply.len())..]);
    out
}

/// The RESP line at `*pos` (without CRLF), moving `*pos` past it.
fn resp_line(buf: &[u8], pos: &mut usize) -> Option<String> {
    let rest = buf.get(*pos..)?;
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    let line = String::from_utf8_lossy(&rest[..end]).into_owned();
    *pos += end + 2;
    Some(line)
}

/// True for the commands that write more than one record: LMOVE, RPOPLPUSH and SMOVE
/// between two keys, DEL of several keys (see `two_record_commands_survive_torn_writes`).
fn writes_several_records(argv: &[Vec<u8>]) -> bool {
    let cmd = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
    match cmd.as_str() {
        "lmove" | "rpoplpush" | "smove" => argv[1] != argv[2],
        "del" => argv[1..].iter().any(|k| *k != argv[1]),
        _ => false,
    }
}

/// Where the power goes in a [`check`] run.
#[derive(Clone, Copy, Debug)]
pub enum Cut {
    /// Nowhere: after a restart the state must be the final one.
    None,
    /// After this many more device writes: every later write is dropped and no later
    /// sync makes anything durable.
    AfterWrites(u64),
    /// From command `from` on, the commands' records are written but never synced (as
    /// when the power goes while the writes are in flight). Of those writes the first
    /// `keep` survive, and the next one keeps only its first `sectors` 512-byte sectors.
    Unsynced {
        from: usize,
        keep: usize,
        sectors: usize,
    },
}

/// `collection-group-bytes` of the model tests: lists and sets past 128 bytes are grouped.
const GROUP_BYTES: &str = "64";

/// True when `MODEL_TRACE` asks for a trace of the commands and crashes.
fn tracing() -> bool {
    std::env::var_os("MODEL_TRACE").is_some()
}

/// Runs `cmds` on a fresh device, checking every reply against `M`, cuts the power as
/// `cut` says, recovers, and checks that the keyspace holds the model's state after some
/// prefix of the commands that includes every command whose records were synced.
fn check<M: Model>(cmds: &[Vec<Vec<u8>>], cut: Cut) {
    let keys: Vec<Vec<u8>> = KEYS.iter().map(|k| k.as_bytes().to_vec()).collect();
    compio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async move {
            let config = Config::defaults();
            // Tiny groups, so that collections of a few members already take the grouped
            // form and convert both ways (the bigger compact ones too).
            config
                .set("collection-group-bytes", GROUP_BYTES, true)
                .expect("config");
            let dev = RamDevice::new(DEVICE_BYTES, SECTOR);
            let control: RamControl = dev.control();
            let (mut ks, log) = open(dev).await;
            let mut model = M::default();
            // states[i]: the model after i commands.
            let mut states = vec![model.state()];
            let mut durable_upto = 0;
            if let Cut::AfterWrites(w) = cut {
                control.set_crash_point(w);
            }
            for (i, argv) in cmds.iter().enumerate() {
                let want = canon(argv, model.apply(argv));
                let got = canon(argv, run(&mut ks, &config, argv).await);
                if tracing() {
                    eprintln!(
                        "TRACE {} => {}",
                        String::from_utf8_lossy(&argv.join(&b' ')),
                        String::from_utf8_lossy(&want).replace("\r\n", " ")
                    );
                }
                assert_eq!(
                    String::from_utf8_lossy(&got),
                    String::from_utf8_lossy(&want),
                    "reply to {:?} (command {i})",
                    argv.iter().map(|a| String::from_utf8_lossy(a)).collect::<Vec<_>>()
                );
                match cut {
                    Cut::Unsynced { from, .. } if i >= from => log.flush().await.expect("flush"),
                    _ => log.commit().await.expect("commit"),
                }
                states.push(model.state());
                let synced = match cut {
                    Cut::None => true,
                    Cut::AfterWrites(_) => control.stats().dropped_writes == 0,
                    Cut::Unsynced { from, .. } => i < from,
                };
                if synced {
                    durable_upto = i + 1;
                }
            }
            let live = state(&mut ks, &keys).await;
            assert!(
                live == model.state(),
                "live state {} differs from the model's {}",
                show(&live),
                show(&model.state())
            );
            drop(ks);
            drop(log);
            let pending = control.unsynced_writes();
            let spec = match cut {
                Cut::Unsynced { keep, sectors, .. } => {
                    let keep = keep.min(pending.len());
                    let torn = match pending.get(keep) {
                        Some(&(_, len)) if sectors * SECTOR < len => sectors * SECTOR,
                        _ => 0,
                    };
                    CrashSpec {
                        keep_writes: keep,
                        torn_bytes: torn,
                    }
                }
                _ => CrashSpec::lose_unsynced(),
            };
            control.crash(spec);
            let image = control.durable_image();
            let (mut ks, _log) = open(RamDevice::from_image(image, SECTOR)).await;
            let recovered = state(&mut ks, &keys).await;
            let at = states[durable_upto..].iter().position(|s| *s == recovered);
            if tracing() {
                eprintln!(
                    "CRASH {cut:?} {spec:?} pending={pending:?} durable={durable_upto} n={} recovered_at={:?}",
                    cmds.len(),
                    at.map(|a| a + durable_upto)
                );
            }
            assert!(
                at.is_some(),
                "recovered state {} is no model state from command {durable_upto} on (of {})",
                show(&recovered),
                cmds.len()
            );
        });
}

// ----- RESP2 encoders for the models -----

fn int(n: i64) -> Vec<u8> {
    format!(":{n}\r\n").into_bytes()
}
fn bulk(b: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", b.len()).into_bytes();
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
    out
}
fn null() -> Vec<u8> {
    b"$-1\r\n".to_vec()
}
fn null_array() -> Vec<u8> {
    b"*-1\r\n".to_vec()
}
fn ok() -> Vec<u8> {
    b"+OK\r\n".to_vec()
}
fn simple(s: &str) -> Vec<u8> {
    format!("+{s}\r\n").into_bytes()
}
fn err(msg: &str) -> Vec<u8> {
    format!("-{msg}\r\n").into_bytes()
}
fn array(items: impl IntoIterator<Item = Vec<u8>>) -> Vec<u8> {
    let items: Vec<Vec<u8>> = items.into_iter().collect();
    let mut out = format!("*{}\r\n", items.len()).into_bytes();
    for i in items {
        out.extend_from_slice(&i);
    }
    out
}
fn bulks<'a>(items: impl IntoIterator<Item = &'a Vec<u8>>) -> Vec<u8> {
    array(items.into_iter().map(|b| bulk(b)))
}
fn wrongtype() -> Vec<u8> {
    err("WRONGTYPE Operation against a key holding the wrong kind of value")
}
const NOT_INT: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";

/// Parses an integer argument as Redis's `string2ll` does (no '+', no leading zeros, no
/// spaces).
fn strict_i64(b: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(b).ok()?;
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty()
        || !digits.bytes().all(|c| c.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
        || s == "-0"
    {
        return None;
    }
    s.parse().ok()
}

fn eq(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

// ----- the model -----

/// A value in the model.
#[derive(Clone, Debug)]
enum Val {
    Str(Vec<u8>),
    /// (field, value) in insertion order, as a listpack keeps them.
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    List(VecDeque<Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    /// (member, score) sorted by (score, member).
    Zset(Vec<(Vec<u8>, f64)>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ty {
    Str,
    Hash,
    List,
    Set,
    Zset,
}

impl Val {
    fn ty(&self) -> Ty {
        match self {
            Val::Str(_) => Ty::Str,
            Val::Hash(_) => Ty::Hash,
            Val::List(_) => Ty::List,
            Val::Set(_) => Ty::Set,
            Val::Zset(_) => Ty::Zset,
        }
    }
    fn is_empty(&self) -> bool {
        match self {
            Val::Str(_) => false,
            Val::Hash(h) => h.is_empty(),
            Val::List(l) => l.is_empty(),
            Val::Set(s) => s.is_empty(),
            Val::Zset(z) => z.is_empty(),
        }
    }
}

/// The model database: every key and its value.
#[derive(Default, Clone)]
pub struct Db(BTreeMap<Vec<u8>, Val>);

macro_rules! accessors {
    ($get:ident, $get_mut:ident, $variant:ident, $t:ty) => {
        /// The key's value of this type, empty when missing (the caller checked the type).
        fn $get(&self, k: &[u8]) -> $t {
            match self.0.get(k) {
                Some(Val::$variant(v)) => v.clone(),
                None => Default::default(),
                Some(_) => unreachable!("type checked"),
            }
        }
        /// The key's value of this type, created empty when missing (the caller checked the
        /// type; [`Db::tidy`] removes it again if it stays empty).
        fn $get_mut(&mut self, k: &[u8]) -> &mut $t {
            match self
                .0
                .entry(k.to_vec())
                .or_insert_with(|| Val::$variant(Default::default()))
            {
                Val::$variant(v) => v,
                _ => unreachable!("type checked"),
            }
        }
    };
}

impl Db {
    accessors!(hash, hash_mut, Hash, Vec<(Vec<u8>, Vec<u8>)>);
    accessors!(list, list_mut, List, VecDeque<Vec<u8>>);
    accessors!(set, set_mut, Set, BTreeSet<Vec<u8>>);
    accessors!(zset, zset_mut, Zset, Vec<(Vec<u8>, f64)>);

    /// True when `k` exists with a type other than `t`.
    fn wrong(&self, k: &[u8], t: Ty) -> bool {
        self.0.get(k).is_some_and(|v| v.ty() != t)
    }

    /// Removes the keys whose collections are empty (Redis never keeps an empty one).
    fn tidy(&mut self) {
        self.0.retain(|_, v| !v.is_empty());
    }

    fn exists(&self, k: &[u8]) -> bool {
        self.0.contains_key(k)
    }
}

impl Model for Db {
    fn apply(&mut self, argv: &[Vec<u8>]) -> Vec<u8> {
        let cmd = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        let out = match cmd.as_bytes()[0] {
            _ if GENERIC.contains(&cmd.as_str()) => self.generic(&cmd, argv),
            b'h' => self.hash_cmd(&cmd, argv),
            b'l' | b'r' => self.list_cmd(&cmd, argv),
            b's' => self.set_cmd(&cmd, argv),
            b'z' => self.zset_cmd(&cmd, argv),
            _ => panic!("model: {cmd}"),
        };
        self.tidy();
        out
    }

    fn state(&self) -> BTreeMap<Vec<u8>, Norm> {
        self.0
            .iter()
            .map(|(k, v)| {
                let n = match v {
                    Val::Str(s) => Norm::Str(s.clone()),
                    Val::Hash(h) => Norm::Hash(h.clone()),
                    Val::List(l) => Norm::List(l.iter().cloned().collect()),
                    Val::Set(s) => Norm::Set(s.clone()),
                    Val::Zset(z) => {
                        Norm::Zset(z.iter().map(|(m, s)| (m.clone(), s.to_bits())).collect())
                    }
                };
                (k.clone(), n)
            })
            .collect()
    }
}

/// Commands the model handles in [`Db::generic`].
const GENERIC: &[&str] = &["set", "get", "del", "exists", "type"];

impl Db {
    fn generic(&mut self, cmd: &str, argv: &[Vec<u8>]) -> Vec<u8> {
        let key = &argv[1];
        match cmd {
            "set" => {
                self.0.insert(key.clone(), Val::Str(argv[2].clone()));
                ok()
            }
            "get" => match self.0.get(key) {
                None => null(),
                Some(Val::Str(s)) => bulk(s),
                Some(_) => wrongtype(),
            },
            "del" => int(argv[1..]
                .iter()
                .filter(|k| self.0.remove(*k).is_some())
                .count() as i64),
            "exists" => int(argv[1..].iter().filter(|k| self.exists(k)).count() as i64),
            "type" => simple(match self.0.get(key).map(Val::ty) {
                None => "none",
                Some(Ty::Str) => "string",
                Some(Ty::Hash) => "hash",
                Some(Ty::List) => "list",
                Some(Ty::Set) => "set",
                Some(Ty::Zset) => "zset",
            }),
            other => panic!("model: {other}"),
        }
    }

    // ----- hash -----

    fn hash_cmd(&mut self, cmd: &str, argv: &[Vec<u8>]) -> Vec<u8> {
        let key = &argv[1];
        if cmd == "hincrby" {
            // The increment is parsed before the key is looked up.
            let Some(incr) = strict_i64(&argv[3]) else {
                return err(NOT_INT);
            };
            if self.wrong(key, Ty::Hash) {
                return wrongtype();
            }
            let h = self.hash_mut(key);
            let pos = h.iter().position(|(f, _)| *f == argv[2]);
            let old = match pos {
                None => 0,
                Some(i) => match strict_i64(&h[i].1) {
                    Some(v) => v,
                    None => return err("ERR hash value is not an integer"),
                },
            };
            let Some(new) = old.checked_add(incr) else {
                return err("ERR increment or decrement would overflow");
            };
            let v = new.to_string().into_bytes();
            match pos {
                Some(i) => h[i].1 = v,
                None => h.push((argv[2].clone(), v)),
            }
            return int(new);
        }
        if self.wrong(key, Ty::Hash) {
            return wrongtype();
        }
        let find = |h: &[(Vec<u8>, Vec<u8>)], f: &[u8]| h.iter().position(|(g, _)| g == f);
        match cmd {
            "hset" | "hsetnx" => {
                let nx = cmd == "hsetnx";
                let h = self.hash_mut(key);
                let mut added = 0;
                for p in argv[2..].chunks(2) {
                    match find(h, &p[0]) {
                        Some(_) if nx => {}
                        Some(i) => h[i].1 = p[1].clone(),
                        None => {
                            h.push((p[0].clone(), p[1].clone()));
                            added += 1;
                        }
                    }
                }
                int(added)
            }
            "hdel" => {
                let h = self.hash_mut(key);
                let mut n = 0;
                for f in &argv[2..] {
                    if let Some(i) = find(h, f) {
                        h.remove(i);
                        n += 1;
                    }
                }
                int(n)
            }
            "hget" => {
                let h = self.hash(key);
                find(&h, &argv[2]).map_or_else(null, |i| bulk(&h[i].1))
            }
            "hmget" => {
                let h = self.hash(key);
                array(
                    argv[2..]
                        .iter()
                        .map(|f| find(&h, f).map_or_else(null, |i| bulk(&h[i].1))),
                )
            }
            "hexists" => int(find(&self.hash(key), &argv[2]).is_some() as i64),
            "hstrlen" => {
                let h = self.hash(key);
                int(find(&h, &argv[2]).map_or(0, |i| h[i].1.len() as i64))
            }
            "hlen" => int(self.hash(key).len() as i64),
            "hgetall" => array(self.hash(key).iter().flat_map(|(f, v)| [bulk(f), bulk(v)])),
            "hkeys" => bulks(self.hash(key).iter().map(|(f, _)| f)),
            "hvals" => bulks(self.hash(key).iter().map(|(_, v)| v)),
            other => panic!("hash model: {other}"),
        }
    }

    // ----- list -----

    fn list_cmd(&mut self, cmd: &str, argv: &[Vec<u8>]) -> Vec<u8> {
        let key = &argv[1];
        // Errors Redis finds in the arguments before it looks at the key.
        match cmd {
            "lpop" | "rpop" if argv.len() == 3 => match strict_i64(&argv[2]) {
                None => return err(NOT_INT),
                Some(n) if n < 0 => return err("ERR value is out of range, must be positive"),
                _ => {}
            },
            "lrange" | "ltrim"
                if strict_i64(&argv[2]).is_none() || strict_i64(&argv[3]).is_none() =>
            {
                return err(NOT_INT)
            }
            "lrem" if strict_i64(&argv[2]).is_none() => return err(NOT_INT),
            "linsert" if !eq(&argv[2], "before") && !eq(&argv[2], "after") => return err(SYNTAX),
            "lpos" => {
                if let Err(e) = lpos_options(&argv[3..]) {
                    return e;
                }
            }
            _ => {}
        }
        if cmd == "lmpop" {
            return self.mpop(argv, Ty::List);
        }
        if cmd == "lmove" || cmd == "rpoplpush" {
            return self.lmove(argv);
        }
        if self.wrong(key, Ty::List) {
            return wrongtype();
        }
        let exists = self.exists(key);
        match cmd {
            "lpush" | "rpush" | "lpushx" | "rpushx" => {
                if cmd.ends_with('x') && !exists {
                    return int(0);
                }
                let l = self.list_mut(key);
                for e in &argv[2..] {
                    if cmd.starts_with('l') {
                        l.push_front(e.clone());
                    } else {
                        l.push_back(e.clone());
                    }
                }
                int(l.len() as i64)
            }
            "lpop" | "rpop" => {
                let left = cmd == "lpop";
                let l = self.list_mut(key);
                let pop =
                    |l: &mut VecDeque<Vec<u8>>| if left { l.pop_front() } else { l.pop_back() };
                if argv.len() == 2 {
                    return pop(l).map_or_else(null, |e| bulk(&e));
                }
                if !exists {
                    return null_array();
                }
                let n = strict_i64(&argv[2]).unwrap();
                let got: Vec<Vec<u8>> = (0..n).map_while(|_| pop(l)).collect();
                bulks(&got)
            }
            "llen" => int(self.list(key).len() as i64),
            "lindex" => {
                if !exists {
                    return null();
                }
                let Some(i) = strict_i64(&argv[2]) else {
                    return err(NOT_INT);
                };
                let l = self.list(key);
                index_of(l.len(), i).map_or_else(null, |i| bulk(&l[i]))
            }
            "lrange" => {
                let l = self.list(key);
                let (s, e) = (strict_i64(&argv[2]).unwrap(), strict_i64(&argv[3]).unwrap());
                match range(l.len(), s, e) {
                    None => array([]),
                    Some((s, e)) => bulks(l.range(s..=e)),
                }
            }
            "lset" => {
                if !exists {
                    return err("ERR no such key");
                }
                let Some(i) = strict_i64(&argv[2]) else {
                    return err(NOT_INT);
                };
                let l = self.list_mut(key);
                match index_of(l.len(), i) {
                    None => err("ERR index out of range"),
                    Some(i) => {
                        l[i] = argv[3].clone();
                        ok()
                    }
                }
            }
            "linsert" => {
                if !exists {
                    return int(0);
                }
                let after = eq(&argv[2], "after");
                let l = self.list_mut(key);
                match l.iter().position(|e| *e == argv[3]) {
                    None => int(-1),
                    Some(i) => {
                        l.insert(i + after as usize, argv[4].clone());
                        int(l.len() as i64)
                    }
                }
            }
            "lrem" => {
                let count = strict_i64(&argv[2]).unwrap();
                let l = self.list_mut(key);
                let limit = if count == 0 {
                    usize::MAX
                } else {
                    count.unsigned_abs() as usize
                };
                let mut idx: Vec<usize> = (0..l.len()).filter(|&i| l[i] == argv[3]).collect();
                if count < 0 {
                    idx.reverse();
                }
                idx.truncate(limit);
                idx.sort_unstable();
                for &i in idx.iter().rev() {
                    l.remove(i);
                }
                int(idx.len() as i64)
            }
            "ltrim" => {
                let (s, e) = (strict_i64(&argv[2]).unwrap(), strict_i64(&argv[3]).unwrap());
                let l = self.list_mut(key);
                match range(l.len(), s, e) {
                    None => l.clear(),
                    Some((s, e)) => {
                        l.truncate(e + 1);
                        l.drain(..s);
                    }
                }
                ok()
            }
            "lpos" => {
                let (rank, count, maxlen) = lpos_options(&argv[3..]).unwrap();
                if !exists {
                    return if count.is_some() { array([]) } else { null() };
                }
                let l = self.list(key);
                let n = l.len();
                let order: Vec<usize> = if rank > 0 {
                    (0..n).collect()
                } else {
                    (0..n).rev().collect()
                };
                let scanned = if maxlen == 0 { n } else { maxlen.min(n) };
                let found: Vec<usize> = order[..scanned]
                    .iter()
                    .copied()
                    .filter(|&i| l[i] == argv[2])
                    .skip(rank.unsigned_abs() as usize - 1)
                    .collect();
                match count {
                    None => found.first().map_or_else(null, |&i| int(i as i64)),
                    Some(c) => {
                        let c = if c == 0 { usize::MAX } else { c };
                        array(found.iter().take(c).map(|&i| int(i as i64)))
                    }
                }
            }
            other => panic!("list model: {other}"),
        }
    }

    /// LMPOP / ZMPOP numkeys key ... LEFT|RIGHT / MIN|MAX [COUNT n]: pops from the first
    /// non-empty key.
    fn mpop(&mut self, argv: &[Vec<u8>], t: Ty) -> Vec<u8> {
        let numkeys = match strict_i64(&argv[1]) {
            Some(n) if n >= 1 => n as usize,
            _ => return err("ERR numkeys should be greater than 0"),
        };
        let at = 2 + numkeys;
        if at >= argv.len() {
            return err(SYNTAX);
        }
        let (front, back) = if t == Ty::List {
            ("left", "right")
        } else {
            ("min", "max")
        };
        let from_front = if eq(&argv[at], front) {
            true
        } else if eq(&argv[at], back) {
            false
        } else {
            return err(SYNTAX);
        };
        let mut count = None;
        let mut j = at + 1;
        while j < argv.len() {
            if count.is_none() && eq(&argv[j], "count") && j + 1 < argv.len() {
                match strict_i64(&argv[j + 1]) {
                    Some(n) if n >= 1 => count = Some(n as usize),
                    _ => return err("ERR count should be greater than 0"),
                }
                j += 2;
            } else {
                return err(SYNTAX);
            }
        }
        let count = count.unwrap_or(1);
        for k in &argv[2..at] {
            if !self.exists(k) {
                continue;
            }
            if self.wrong(k, t) {
                return wrongtype();
            }
            let popped = if t == Ty::List {
                let l = self.list_mut(k);
                let n = count.min(l.len());
                let got: Vec<Vec<u8>> = (0..n)
                    .map(|_| {
                        if from_front {
                            l.pop_front()
                        } else {
                            l.pop_back()
                        }
                        .unwrap()
                    })
                    .collect();
                bulks(&got)
            } else {
                let z = self.zset_mut(k);
                let n = count.min(z.len());
                array((0..n).map(|_| {
                    let (m, s) = if from_front {
                        z.remove(0)
                    } else {
                        z.pop().unwrap()
                    };
                    array([bulk(&m), score_bulk(s)])
                }))
            };
            return array([bulk(k), popped]);
        }
        null_array()
    }

    /// LMOVE src dst LEFT|RIGHT LEFT|RIGHT and RPOPLPUSH src dst.
    fn lmove(&mut self, argv: &[Vec<u8>]) -> Vec<u8> {
        let (src, dst) = (&argv[1], &argv[2]);
        let (from_left, to_left) = if argv.len() == 3 {
            (false, true)
        } else {
            let side = |a: &[u8]| {
                if eq(a, "left") {
                    Some(true)
                } else if eq(a, "right") {
                    Some(false)
                } else {
                    None
                }
            };
            match (side(&argv[3]), side(&argv[4])) {
                (Some(f), Some(t)) => (f, t),
                _ => return err(SYNTAX),
            }
        };
        if !self.exists(src) {
            return null();
        }
        if self.wrong(src, Ty::List) || self.wrong(dst, Ty::List) {
            return wrongtype();
        }
        let s = self.list_mut(src);
        let e = if from_left {
            s.pop_front()
        } else {
            s.pop_back()
        }
        .expect("a live list is not empty");
        let d = self.list_mut(dst);
        if to_left {
            d.push_front(e.clone());
        } else {
            d.push_back(e.clone());
        }
        bulk(&e)
    }

    // ----- set -----

    fn set_cmd(&mut self, cmd: &str, argv: &[Vec<u8>]) -> Vec<u8> {
        let key = &argv[1];
        match cmd {
            "smove" => {
                let (src, dst, m) = (&argv[1], &argv[2], &argv[3]);
                if !self.exists(src) {
                    return int(0);
                }
                if self.wrong(src, Ty::Set) || self.wrong(dst, Ty::Set) {
                    return wrongtype();
                }
                if src == dst {
                    return int(self.set(src).contains(m) as i64);
                }
                if !self.set_mut(src).remove(m) {
                    return int(0);
                }
                self.set_mut(dst).insert(m.clone());
                return int(1);
            }
            "sintercard" => {
                let n = match strict_i64(&argv[1]) {
                    Some(n) if n >= 1 => n as usize,
                    _ => return err("ERR numkeys should be greater than 0"),
                };
                if n > argv.len() - 2 {
                    return err("ERR Number of keys can't be greater than number of args");
                }
                let mut limit = 0;
                let mut j = 2 + n;
                while j < argv.len() {
                    if eq(&argv[j], "limit") && j + 1 < argv.len() {
                        match strict_i64(&argv[j + 1]) {
                            None => return err(NOT_INT),
                            Some(l) if l < 0 => return err("ERR LIMIT can't be negative"),
                            Some(l) => limit = l as usize,
                        }
                        j += 2;
                    } else {
                        return err(SYNTAX);
                    }
                }
                let srcs = &argv[2..2 + n];
                if srcs.iter().any(|k| self.wrong(k, Ty::Set)) {
                    return wrongtype();
                }
                let mut r = self.set(&srcs[0]);
                for k in &srcs[1..] {
                    let s = self.set(k);
                    r.retain(|m| s.contains(m));
                }
                return int(if limit == 0 {
                    r.len()
                } else {
                    r.len().min(limit)
                } as i64);
            }
            "sinter" | "sunion" | "sdiff" | "sinterstore" | "sunionstore" | "sdiffstore" => {
                let store = cmd.ends_with("store");
                let srcs = if store { &argv[2..] } else { &argv[1..] };
                if srcs.iter().any(|k| self.wrong(k, Ty::Set)) {
                    return wrongtype();
                }
                let sets: Vec<BTreeSet<Vec<u8>>> = srcs.iter().map(|k| self.set(k)).collect();
                let mut r = sets[0].clone();
                for s in &sets[1..] {
                    if cmd.starts_with("sinter") {
                        r.retain(|m| s.contains(m));
                    } else if cmd.starts_with("sunion") {
                        r.extend(s.iter().cloned());
                    } else {
                        r.retain(|m| !s.contains(m));
                    }
                }
                if !store {
                    return bulks(&r);
                }
                let n = r.len() as i64;
                self.0.insert(key.clone(), Val::Set(r));
                return int(n);
            }
            _ => {}
        }
        if self.wrong(key, Ty::Set) {
            return wrongtype();
        }
        match cmd {
            "sadd" => {
                let s = self.set_mut(key);
                int(argv[2..].iter().filter(|m| s.insert((*m).clone())).count() as i64)
            }
            "srem" => {
                let s = self.set_mut(key);
                int(argv[2..].iter().filter(|m| s.remove(*m)).count() as i64)
            }
            "scard" => int(self.set(key).len() as i64),
            "sismember" => int(self.set(key).contains(&argv[2]) as i64),
            "smismember" => {
                let s = self.set(key);
                array(argv[2..].iter().map(|m| int(s.contains(m) as i64)))
            }
            "smembers" => bulks(&self.set(key)),
            other => panic!("set model: {other}"),
        }
    }

    // ----- sorted set -----

    fn zset_cmd(&mut self, cmd: &str, argv: &[Vec<u8>]) -> Vec<u8> {
        let key = &argv[1];
        match cmd {
            "zadd" => return self.zadd(key, &argv[2..], false),
            "zincrby" => return self.zadd(key, &argv[2..], true),
            "zmpop" => return self.mpop(argv, Ty::Zset),
            "zunionstore" | "zinterstore" | "zdiffstore" | "zunion" | "zinter" | "zdiff"
            | "zintercard" => return self.zcombine(cmd, argv),
            "zrangestore" => {
                return match zrange_options(argv, 2, None) {
                    Ok(o) => self.zrangestore(&argv[1], &argv[2], o),
                    Err(e) => e,
                }
            }
            _ => {}
        }
        // Errors Redis finds in the arguments before it looks at the key.
        let mut ranged = None;
        match cmd {
            "zremrangebyrank" => match (strict_i64(&argv[2]), strict_i64(&argv[3])) {
                (Some(s), Some(e)) => ranged = Some(Range::Rank(s, e)),
                _ => return err(NOT_INT),
            },
            "zremrangebyscore" => match score_range(&argv[2], &argv[3]) {
                Some(r) => ranged = Some(r),
                None => return err(NOT_FLOAT_RANGE),
            },
            "zrange" | "zrevrange" | "zrangebyscore" | "zrevrangebyscore" => {
                let fixed = match cmd {
                    "zrange" => None,
                    "zrevrange" => Some((false, true)),
                    "zrangebyscore" => Some((true, false)),
                    _ => Some((true, true)),
                };
                return match zrange_options(argv, 1, fixed) {
                    Ok(o) => self.zrange(key, o),
                    Err(e) => e,
                };
            }
            "zcount" => match score_range(&argv[2], &argv[3]) {
                Some(r) => ranged = Some(r),
                None => return err(NOT_FLOAT_RANGE),
            },
            "zpopmin" | "zpopmax" if argv.len() == 3 => match strict_i64(&argv[2]) {
                None => return err(NOT_INT),
                Some(n) if n < 0 => return err("ERR value is out of range, must be positive"),
                _ => {}
            },
            _ => {}
        }
        if self.wrong(key, Ty::Zset) {
            return wrongtype();
        }
        let exists = self.exists(key);
        match cmd {
            "zrem" => {
                let z = self.zset_mut(key);
                let mut n = 0;
                for m in &argv[2..] {
                    if let Some(i) = z.iter().position(|(x, _)| x == m) {
                        z.remove(i);
                        n += 1;
                    }
                }
                int(n)
            }
            "zcard" => int(self.zset(key).len() as i64),
            "zcount" => {
                let r = ranged.unwrap();
                int(self
                    .zset(key)
                    .iter()
                    .filter(|(_, s)| r.contains(*s))
                    .count() as i64)
            }
            "zmscore" => {
                let z = self.zset(key);
                array(argv[2..].iter().map(|m| {
                    z.iter()
                        .find(|(x, _)| x == m)
                        .map_or_else(null, |(_, s)| score_bulk(*s))
                }))
            }
            "zscore" => self
                .zset(key)
                .iter()
                .find(|(m, _)| *m == argv[2])
                .map_or_else(null, |(_, s)| score_bulk(*s)),
            "zrank" | "zrevrank" => {
                let z = self.zset(key);
                match z.iter().position(|(m, _)| *m == argv[2]) {
                    None => null(),
                    Some(i) if cmd == "zrank" => int(i as i64),
                    Some(i) => int((z.len() - 1 - i) as i64),
                }
            }
            "zremrangebyrank" | "zremrangebyscore" => {
                if !exists {
                    return int(0);
                }
                let z = self.zset_mut(key);
                let before = z.len();
                match ranged.unwrap() {
                    Range::Rank(s, e) => {
                        if let Some((s, e)) = range(z.len(), s, e) {
                            z.drain(s..=e);
                        }
                    }
                    r => z.retain(|(_, s)| !r.contains(*s)),
                }
                int((before - z.len()) as i64)
            }
            "zpopmin" | "zpopmax" => {
                let n = if argv.len() == 3 {
                    strict_i64(&argv[2]).unwrap() as usize
                } else {
                    1
                };
                let z = self.zset_mut(key);
                let mut out = Vec::new();
                for _ in 0..n.min(z.len()) {
                    let (m, s) = if cmd == "zpopmin" {
                        z.remove(0)
                    } else {
                        z.pop().unwrap()
                    };
                    out.push(bulk(&m));
                    out.push(score_bulk(s));
                }
                array(out)
            }
            other => panic!("zset model: {other}"),
        }
    }

    /// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member ... (`incr_cmd`: ZINCRBY key
    /// increment member), as Redis's zaddGenericCommand.
    fn zadd(&mut self, key: &[u8], args: &[Vec<u8>], incr_cmd: bool) -> Vec<u8> {
        let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
            (false, false, false, false, false, incr_cmd);
        let mut i = 0;
        while !incr_cmd && i < args.len() {
            let o = &args[i];
            if eq(o, "nx") {
                nx = true;
            } else if eq(o, "xx") {
                xx = true;
            } else if eq(o, "gt") {
                gt = true;
            } else if eq(o, "lt") {
                lt = true;
            } else if eq(o, "ch") {
                ch = true;
            } else if eq(o, "incr") {
                incr = true;
            } else {
                break;
            }
            i += 1;
        }
        let pairs = &args[i..];
        if pairs.is_empty() || pairs.len() % 2 == 1 {
            return err(SYNTAX);
        }
        if nx && xx {
            return err("ERR XX and NX options at the same time are not compatible");
        }
        if ((gt || lt) && nx) || (gt && lt) {
            return err("ERR GT, LT, and/or NX options at the same time are not compatible");
        }
        if incr && pairs.len() > 2 {
            return err("ERR INCR option supports a single increment-element pair");
        }
        let mut scores = Vec::new();
        for p in pairs.chunks(2) {
            match parse_score(&p[0]) {
                Some(s) => scores.push(s),
                None => return err("ERR value is not a valid float"),
            }
        }
        if self.wrong(key, Ty::Zset) {
            return wrongtype();
        }
        let z = self.zset_mut(key);
        let (mut added, mut updated, mut processed, mut last) = (0, 0, 0, 0.0);
        for (p, &score) in pairs.chunks(2).zip(&scores) {
            let m = &p[1];
            match z.iter().position(|(x, _)| x == m) {
                Some(at) => {
                    if nx {
                        continue;
                    }
                    let cur = z[at].1;
                    let new = if incr { score + cur } else { score };
                    if new.is_nan() {
                        return err("ERR resulting score is not a number (NaN)");
                    }
                    if (lt && new >= cur) || (gt && new <= cur) {
                        continue;
                    }
                    processed += 1;
                    last = new;
                    if new != cur {
                        z.remove(at);
                        zinsert(z, m.clone(), new);
                        updated += 1;
                    }
                }
                None if !xx => {
                    zinsert(z, m.clone(), score);
                    added += 1;
                    processed += 1;
                    last = score;
                }
                None => {}
            }
        }
        if incr {
            if processed > 0 {
                score_bulk(last)
            } else {
                null()
            }
        } else {
            int(if ch { added + updated } else { added })
        }
    }

    /// The members and scores of a ZUNIONSTORE/ZINTERSTORE source: a zset, a set (every
    /// score 1) or nothing; None for another type.
    fn zsource(&self, k: &[u8]) -> Option<Vec<(Vec<u8>, f64)>> {
        match self.0.get(k) {
            None => Some(Vec::new()),
            Some(Val::Zset(z)) => Some(z.clone()),
            Some(Val::Set(s)) => Some(s.iter().map(|m| (m.clone(), 1.0)).collect()),
            Some(_) => None,
        }
    }

    /// Z{UNION,INTER,DIFF}[STORE] [dst] numkeys key ... [WEIGHTS w ...]
    /// [AGGREGATE SUM|MIN|MAX] [WITHSCORES] and ZINTERCARD numkeys key ... [LIMIT n], as
    /// Redis's zunionInterDiffGenericCommand.
    fn zcombine(&mut self, cmd: &str, argv: &[Vec<u8>]) -> Vec<u8> {
        let store = cmd.ends_with("store");
        let card = cmd == "zintercard";
        let inter = cmd.starts_with("zinter");
        let diff = cmd.starts_with("zdiff");
        let nk = if store { 2 } else { 1 };
        let Some(n) = strict_i64(&argv[nk]) else {
            return err(NOT_INT);
        };
        let n = n as usize;
        if n < 1 || n > argv.len() - nk - 1 {
            return err(SYNTAX);
        }
        let mut srcs = Vec::new();
        for k in &argv[nk + 1..nk + 1 + n] {
            match self.zsource(k) {
                Some(s) => srcs.push(s),
                None => return wrongtype(),
            }
        }
        let mut weights = vec![1.0; n];
        let mut agg = "sum";
        let (mut withscores, mut limit) = (false, 0);
        let rest = &argv[nk + 1 + n..];
        let mut j = 0;
        while j < rest.len() {
            let left = rest.len() - j;
            if !diff && !card && left > n && eq(&rest[j], "weights") {
                for (w, a) in weights.iter_mut().zip(&rest[j + 1..j + 1 + n]) {
                    match parse_score(a) {
                        Some(x) => *w = x,
                        None => return err("ERR weight value is not a float"),
                    }
                }
                j += 1 + n;
            } else if card && left >= 2 && eq(&rest[j], "limit") {
                match strict_i64(&rest[j + 1]) {
                    None => return err(NOT_INT),
                    Some(l) if l < 0 => return err("ERR LIMIT can't be negative"),
                    Some(l) => limit = l as usize,
                }
                j += 2;
            } else if !store && !card && eq(&rest[j], "withscores") {
                withscores = true;
                j += 1;
            } else if !diff && !card && left >= 2 && eq(&rest[j], "aggregate") {
                agg = match &rest[j + 1].to_ascii_lowercase()[..] {
                    b"sum" => "sum",
                    b"min" => "min",
                    b"max" => "max",
                    _ => return err(SYNTAX),
                };
                j += 2;
            } else {
                return err(SYNTAX);
            }
        }
        let aggregate = |t: &mut f64, v: f64| match agg {
            "sum" => {
                *t += v;
                if t.is_nan() {
                    *t = 0.0;
                }
            }
            "min" => *t = if v < *t { v } else { *t },
            _ => *t = if v > *t { v } else { *t },
        };
        let mut acc: Vec<(Vec<u8>, f64)> = Vec::new();
        // Redis goes through the sources by increasing size (a stable sort), which
        // matters when +inf and -inf meet (their sum counts as 0).
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| srcs[i].len());
        if diff {
            // The first source's members (and scores) that no other source has.
            for (m, s) in &srcs[0] {
                if !srcs[1..].iter().any(|o| o.iter().any(|(x, _)| x == m)) {
                    acc.push((m.clone(), *s));
                }
            }
        } else if inter {
            // Every member of the smallest source, looked up in the others.
            let first = order[0];
            'members: for (m, s) in &srcs[first] {
                let mut score = weights[first] * s;
                if score.is_nan() {
                    score = 0.0;
                }
                for &i in &order[1..] {
                    match srcs[i].iter().find(|(x, _)| x == m) {
                        Some((_, v)) => aggregate(&mut score, v * weights[i]),
                        None => continue 'members,
                    }
                }
                acc.push((m.clone(), score));
            }
        } else {
            for &i in &order {
                for (m, s) in &srcs[i] {
                    let mut score = weights[i] * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.iter_mut().find(|(x, _)| x == m) {
                        Some((_, t)) => aggregate(t, score),
                        None => acc.push((m.clone(), score)),
                    }
                }
            }
        }
        if card {
            let n = acc.len();
            return int(if limit == 0 { n } else { n.min(limit) } as i64);
        }
        let mut z = Vec::new();
        for (m, s) in acc {
            if store {
                zinsert(&mut z, m, s);
            } else {
                zinsert_raw(&mut z, m, s);
            }
        }
        if store {
            let len = z.len() as i64;
            self.0.insert(argv[1].clone(), Val::Zset(z));
            return int(len);
        }
        zreply(&z.iter().collect::<Vec<_>>(), withscores)
    }

    fn zrange(&self, key: &[u8], o: ZrangeOpts) -> Vec<u8> {
        if self.wrong(key, Ty::Zset) {
            return wrongtype();
        }
        let z = self.zset(key);
        zreply(&zpick(&z, &o), o.withscores)
    }

    /// ZRANGESTORE dst src ...: the picked members replace dst (deleted when none).
    fn zrangestore(&mut self, dst: &[u8], src: &[u8], o: ZrangeOpts) -> Vec<u8> {
        if self.wrong(src, Ty::Zset) {
            return wrongtype();
        }
        let z = self.zset(src);
        let picked: Vec<(Vec<u8>, f64)> = zpick(&z, &o).into_iter().cloned().collect();
        let n = picked.len() as i64;
        let mut out = Vec::new();
        for (m, s) in picked {
            zinsert(&mut out, m, s);
        }
        self.0.insert(dst.to_vec(), Val::Zset(out));
        int(n)
    }
}

/// A zset's members in a ZRANGE's range, in reply order.
fn zpick<'a>(z: &'a [(Vec<u8>, f64)], o: &ZrangeOpts) -> Vec<&'a (Vec<u8>, f64)> {
    {
        let mut picked: Vec<&(Vec<u8>, f64)> = match o.range {
            Range::Rank(s, e) => match range(z.len(), s, e) {
                None => Vec::new(),
                Some((s, e)) => {
                    if o.rev {
                        z.iter().rev().skip(s).take(e - s + 1).collect()
                    } else {
                        z[s..=e].iter().collect()
                    }
                }
            },
            r => {
                let mut v: Vec<_> = z.iter().filter(|(_, s)| r.contains(*s)).collect();
                if o.rev {
                    v.reverse();
                }
                v
            }
        };
        if let Some((off, count)) = o.limit {
            if off < 0 {
                picked.clear();
            } else {
                picked.drain(..(off as usize).min(picked.len()));
            }
            if count >= 0 {
                picked.truncate(count as usize);
            }
        }
        picked
    }
}

/// Members (and their scores) as an array reply.
fn zreply(picked: &[&(Vec<u8>, f64)], withscores: bool) -> Vec<u8> {
    array(picked.iter().flat_map(|(m, s)| {
        let mut v = vec![bulk(m)];
        if withscores {
            v.push(score_bulk(*s));
        }
        v
    }))
}

/// The position of list index `i` (negative from the end) in a list of `len`.
fn index_of(len: usize, i: i64) -> Option<usize> {
    let i = if i < 0 { i + len as i64 } else { i };
    (0..len as i64).contains(&i).then_some(i as usize)
}

/// LRANGE / LTRIM's inclusive range [start, stop] of a list of `len`; None when empty.
fn range(len: usize, start: i64, stop: i64) -> Option<(usize, usize)> {
    let len = len as i64;
    let s = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let e = if stop < 0 { stop + len } else { stop };
    if s > e || s >= len {
        return None;
    }
    Some((s as usize, e.min(len - 1) as usize))
}

/// LPOS's options: (rank, count, maxlen), or the error reply.
fn lpos_options(opts: &[Vec<u8>]) -> Result<(i64, Option<usize>, usize), Vec<u8>> {
    let (mut rank, mut count, mut maxlen) = (1, None, 0);
    let mut i = 0;
    while i < opts.len() {
        let more = i + 1 < opts.len();
        let n = opts.get(i + 1).and_then(|v| strict_i64(v));
        if eq(&opts[i], "rank") && more {
            rank = n.filter(|&r| r != i64::MIN).ok_or_else(|| err(NOT_INT))?;
            if rank == 0 {
                return Err(err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"));
            }
        } else if eq(&opts[i], "count") && more {
            let c = n.ok_or_else(|| err(NOT_INT))?;
            if c < 0 {
                return Err(err("ERR COUNT can't be negative"));
            }
            count = Some(c as usize);
        } else if eq(&opts[i], "maxlen") && more {
            let m = n.ok_or_else(|| err(NOT_INT))?;
            if m < 0 {
                return Err(err("ERR MAXLEN can't be negative"));
            }
            maxlen = m as usize;
        } else {
            return Err(err(SYNTAX));
        }
        i += 2;
    }
    Ok((rank, count, maxlen))
}

const NOT_FLOAT_RANGE: &str = "ERR min or max is not a float";

/// Inserts `m` into the (score, member)-ordered `z` that is stored. A listpack stores a
/// score as text that it reads back as an integer when it can, so a negative zero is kept
/// as 0 (a skiplist would keep it; the generated zsets stay listpack-sized).
fn zinsert(z: &mut Vec<(Vec<u8>, f64)>, m: Vec<u8>, score: f64) {
    zinsert_raw(z, m, if score == 0.0 { 0.0 } else { score })
}

/// Inserts `m` into the (score, member)-ordered `z`, keeping a negative zero (a result
/// only replied, never stored, as ZUNION's).
fn zinsert_raw(z: &mut Vec<(Vec<u8>, f64)>, m: Vec<u8>, score: f64) {
    let at = z.partition_point(|(x, s)| {
        s.partial_cmp(&score).expect("no NaN") == std::cmp::Ordering::Less
            || (*s == score && *x < m)
    });
    z.insert(at, (m, score));
}

/// A score argument (the generators only use plain decimals and infinities, which Rust
/// and Redis's strtod read alike).
fn parse_score(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    let v: f64 = s.parse().ok()?;
    (!v.is_nan()).then_some(v)
}

/// A score as Redis 8.0 replies it in RESP2 (`d2string`; the generated scores are small
/// multiples of 0.5, which Rust prints the same way).
fn score_bulk(s: f64) -> Vec<u8> {
    if s.is_infinite() {
        return bulk(if s > 0.0 { b"inf" } else { b"-inf" });
    }
    assert!(s.abs() < 1e15, "score {s} outside what the model formats");
    bulk(format!("{s}").as_bytes())
}

/// A rank range, or a score range (min, min exclusive, max, max exclusive).
#[derive(Clone, Copy, Debug)]
enum Range {
    Rank(i64, i64),
    Score(f64, bool, f64, bool),
}

impl Range {
    fn contains(&self, s: f64) -> bool {
        match *self {
            Range::Score(min, minex, max, maxex) => {
                (if minex { s > min } else { s >= min }) && (if maxex { s < max } else { s <= max })
            }
            Range::Rank(..) => unreachable!("rank range"),
        }
    }
}

/// A score range's bounds, "(" marking an exclusive one.
fn score_range(min: &[u8], max: &[u8]) -> Option<Range> {
    let bound = |b: &[u8]| match b.strip_prefix(b"(") {
        Some(rest) => parse_score(rest).map(|v| (v, true)),
        None => parse_score(b).map(|v| (v, false)),
    };
    let ((a, ax), (b, bx)) = (bound(min)?, bound(max)?);
    Some(Range::Score(a, ax, b, bx))
}

struct ZrangeOpts {
    range: Range,
    rev: bool,
    limit: Option<(i64, i64)>,
    withscores: bool,
}

/// ZRANGE key start stop [BYSCORE] [REV] [LIMIT offset count] [WITHSCORES] with the key at
/// `key_at` (ZRANGESTORE: 2), checked in Redis's order. `fixed`: (by score, reversed) of
/// ZREVRANGE, ZRANGEBYSCORE and ZREVRANGEBYSCORE, which take neither BYSCORE nor REV.
fn zrange_options(
    argv: &[Vec<u8>],
    key_at: usize,
    fixed: Option<(bool, bool)>,
) -> Result<ZrangeOpts, Vec<u8>> {
    let (mut byscore, mut rev) = fixed.unwrap_or((false, false));
    let (mut limit, mut withscores) = (None, false);
    let mut j = key_at + 3;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let o = &argv[j];
        if eq(o, "withscores") {
            withscores = true;
        } else if eq(o, "limit") && left >= 2 {
            match (strict_i64(&argv[j + 1]), strict_i64(&argv[j + 2])) {
                (Some(off), Some(n)) => limit = Some((off, n)),
                _ => return Err(err(NOT_INT)),
            }
            j += 2;
        } else if fixed.is_none() && !rev && eq(o, "rev") {
            rev = true;
        } else if fixed.is_none() && !byscore && eq(o, "byscore") {
            byscore = true;
        } else {
            return Err(err(SYNTAX));
        }
        j += 1;
    }
    if limit.is_some() && !byscore {
        return Err(err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    let (a1, a2) = (&argv[key_at + 1], &argv[key_at + 2]);
    let range = if byscore {
        // REV takes the range as max min.
        let (min, max) = if rev { (a2, a1) } else { (a1, a2) };
        score_range(min, max).ok_or_else(|| err(NOT_FLOAT_RANGE))?
    } else {
        match (strict_i64(a1), strict_i64(a2)) {
            (Some(s), Some(e)) => Range::Rank(s, e),
            _ => return Err(err(NOT_INT)),
        }
    };
    Ok(ZrangeOpts {
        range,
        rev,
        limit,
        withscores,
    })
}

// ----- generators -----

const KEYS: [&str; 3] = ["k0", "k1", "k2"];

fn a(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}
fn pick(items: &[&'static str]) -> impl Strategy<Value = &'static str> {
    prop::sample::select(items.to_vec())
}
fn key() -> impl Strategy<Value = &'static str> {
    pick(&KEYS)
}
fn keys(n: std::ops::Range<usize>) -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(key(), n)
}
/// `head` followed by `rest`.
fn cmd(head: &[&str], rest: impl IntoIterator<Item = &'static str>) -> Vec<Vec<u8>> {
    let mut v = a(head);
    v.extend(rest.into_iter().map(|s| s.as_bytes().to_vec()));
    v
}

/// Hash fields and values (values shorter than listpack's 64-byte limit; some integers).
fn word() -> impl Strategy<Value = &'static str> {
    pick(&[
        "a",
        "b",
        "c",
        "d",
        "",
        "1",
        "-2",
        "long-value-xxxxxxxxxxxxxxxx",
    ])
}
fn field() -> impl Strategy<Value = &'static str> {
    pick(&["a", "b", "c", "d", "", "n"])
}
fn incr() -> impl Strategy<Value = &'static str> {
    pick(&[
        "1",
        "-3",
        "100",
        "0",
        "9223372036854775807",
        "-9223372036854775808",
        "x",
        "1.5",
    ])
}

/// Commands of every family touching the key names with other types: SET, GET, DEL, TYPE,
/// EXISTS.
fn cross_cmd() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop_oneof![
        1 => (key(), pick(&["s", "1"])).prop_map(|(k, v)| a(&["SET", k, v])),
        1 => key().prop_map(|k| a(&["GET", k])),
        2 => keys(1..3).prop_map(|ks| cmd(&["DEL"], ks)),
        1 => key().prop_map(|k| a(&["TYPE", k])),
        1 => keys(1..3).prop_map(|ks| cmd(&["EXISTS"], ks)),
    ]
}

fn hash_cmd() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop_oneof![
        6 => (key(), prop::collection::vec((field(), word()), 1..4)).prop_map(|(k, pairs)| {
            cmd(&["HSET", k], pairs.into_iter().flat_map(|(f, v)| [f, v]))
        }),
        2 => (key(), field(), word()).prop_map(|(k, f, v)| a(&["HSETNX", k, f, v])),
        2 => (key(), prop::collection::vec(field(), 1..3)).prop_map(|(k, fs)| cmd(&["HDEL", k], fs)),
        2 => (key(), field()).prop_map(|(k, f)| a(&["HGET", k, f])),
        1 => (key(), prop::collection::vec(field(), 1..4)).prop_map(|(k, fs)| cmd(&["HMGET", k], fs)),
        1 => (key(), field()).prop_map(|(k, f)| a(&["HEXISTS", k, f])),
        1 => (key(), field()).prop_map(|(k, f)| a(&["HSTRLEN", k, f])),
        1 => key().prop_map(|k| a(&["HLEN", k])),
        // Few fields, so that big increments overflow.
        3 => (key(), pick(&["n", "a"]), incr()).prop_map(|(k, f, n)| a(&["HINCRBY", k, f, n])),
        2 => (key(), pick(&["HGETALL", "HKEYS", "HVALS"])).prop_map(|(k, c)| a(&[c, k])),
        2 => cross_cmd(),
    ]
}

fn elem() -> impl Strategy<Value = &'static str> {
    pick(&["a", "b", "c", ""])
}
fn elems() -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(elem(), 1..6)
}
fn index() -> impl Strategy<Value = &'static str> {
    pick(&["0", "1", "2", "5", "-1", "-2", "-6"])
}
fn side() -> impl Strategy<Value = &'static str> {
    pick(&["LEFT", "RIGHT"])
}

fn list_cmd() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let lpos = (
        key(),
        elem(),
        prop::option::of(pick(&["1", "2", "-1", "-2", "0"])),
        prop::option::of(pick(&["0", "1", "2"])),
        prop::option::of(pick(&["0", "2"])),
    )
        .prop_map(|(k, e, rank, count, maxlen)| {
            let mut v = a(&["LPOS", k, e]);
            for (name, o) in [("RANK", rank), ("COUNT", count), ("MAXLEN", maxlen)] {
                if let Some(o) = o {
                    v.extend(a(&[name, o]));
                }
            }
            v
        });
    prop_oneof![
        10 => (pick(&["LPUSH", "RPUSH"]), key(), elems()).prop_map(|(c, k, es)| cmd(&[c, k], es)),
        2 => (pick(&["LPUSHX", "RPUSHX"]), key(), elems()).prop_map(|(c, k, es)| cmd(&[c, k], es)),
        2 => (pick(&["LPOP", "RPOP"]), key()).prop_map(|(c, k)| a(&[c, k])),
        2 => (pick(&["LPOP", "RPOP"]), key(), pick(&["0", "1", "2", "5", "-1"]))
            .prop_map(|(c, k, n)| a(&[c, k, n])),
        1 => key().prop_map(|k| a(&["LLEN", k])),
        1 => (key(), pick(&["0", "-1", "2", "9", "x"])).prop_map(|(k, i)| a(&["LINDEX", k, i])),
        2 => (key(), index(), index()).prop_map(|(k, s, e)| a(&["LRANGE", k, s, e])),
        2 => (key(), index(), elem()).prop_map(|(k, i, e)| a(&["LSET", k, i, e])),
        2 => (key(), pick(&["BEFORE", "AFTER"]), elem(), elem())
            .prop_map(|(k, w, p, e)| a(&["LINSERT", k, w, p, e])),
        2 => (key(), pick(&["0", "1", "2", "-1", "-2"]), elem())
            .prop_map(|(k, n, e)| a(&["LREM", k, n, e])),
        1 => (key(), index(), index()).prop_map(|(k, s, e)| a(&["LTRIM", k, s, e])),
        2 => lpos,
        2 => (key(), key(), side(), side()).prop_map(|(s, d, f, t)| a(&["LMOVE", s, d, f, t])),
        1 => (key(), key()).prop_map(|(s, d)| a(&["RPOPLPUSH", s, d])),
        2 => (keys(1..4), side(), prop::option::of(pick(&["1", "2", "5", "0"]))).prop_map(|(ks, w, n)| {
            let mut v = a(&["LMPOP", &ks.len().to_string()]);
            v.extend(a(&ks));
            v.extend(a(&[w]));
            if let Some(n) = n {
                v.extend(a(&["COUNT", n]));
            }
            v
        }),
        2 => cross_cmd(),
    ]
}

fn member() -> impl Strategy<Value = &'static str> {
    // Integers keep small sets intset-encoded in Redis (and Skerry); the others do not.
    pick(&["1", "2", "-3", "10", "a", "b", ""])
}
fn members() -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(member(), 1..4)
}

fn set_cmd() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop_oneof![
        6 => (key(), members()).prop_map(|(k, ms)| cmd(&["SADD", k], ms)),
        2 => (key(), members()).prop_map(|(k, ms)| cmd(&["SREM", k], ms)),
        1 => key().prop_map(|k| a(&["SCARD", k])),
        1 => (key(), member()).prop_map(|(k, m)| a(&["SISMEMBER", k, m])),
        1 => (key(), members()).prop_map(|(k, ms)| cmd(&["SMISMEMBER", k], ms)),
        2 => key().prop_map(|k| a(&["SMEMBERS", k])),
        2 => (key(), key(), member()).prop_map(|(s, d, m)| a(&["SMOVE", s, d, m])),
        2 => (pick(&["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]), key(), keys(1..4))
            .prop_map(|(c, d, ks)| cmd(&[c, d], ks)),
        1 => (pick(&["SINTER", "SUNION", "SDIFF"]), keys(1..4)).prop_map(|(c, ks)| cmd(&[c], ks)),
        1 => (keys(1..4), prop::option::of(pick(&["0", "1", "2", "-1"]))).prop_map(|(ks, l)| {
            let mut v = a(&["SINTERCARD", &ks.len().to_string()]);
            v.extend(a(&ks));
            if let Some(l) = l {
                v.extend(a(&["LIMIT", l]));
            }
            v
        }),
        2 => cross_cmd(),
    ]
}

fn zmember() -> impl Strategy<Value = &'static str> {
    pick(&["a", "b", "c", "d", "1", ""])
}
/// Scores: integers and halves (exact in binary and printed alike by Rust and `d2string`),
/// the infinities, a negative zero, and a non-number.
fn score() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        12 => pick(&["0", "1", "-1", "2", "3", "0.5", "-1.5", "2.5", "10"]),
        1 => pick(&["inf", "-inf", "+inf", "-0"]),
        1 => Just("x"),
    ]
}
fn bound() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        12 => pick(&["-inf", "+inf", "0", "1", "(1", "2.5", "(2.5", "-1", "(-1", "(0", "3"]),
        1 => Just("x"),
    ]
}
fn zrank_index() -> impl Strategy<Value = &'static str> {
    pick(&["0", "1", "2", "-1", "-2", "5", "-9"])
}

fn zset_cmd() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let flags = prop::collection::vec(
        prop_oneof![6 => Just(None), 1 => pick(&["NX", "XX", "GT", "LT", "CH", "INCR"]).prop_map(Some)],
        0..3,
    );
    let zadd = (
        key(),
        flags,
        prop::collection::vec((score(), zmember()), 1..4),
    )
        .prop_map(|(k, fl, pairs)| {
            cmd(
                &["ZADD", k],
                fl.into_iter()
                    .flatten()
                    .chain(pairs.into_iter().flat_map(|(s, m)| [s, m])),
            )
        });
    // ZRANGE by rank or score, ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZRANGESTORE.
    let zrange = (
        pick(&[
            "ZRANGE",
            "ZRANGE",
            "ZRANGE",
            "ZREVRANGE",
            "ZRANGEBYSCORE",
            "ZREVRANGEBYSCORE",
            "ZRANGESTORE",
        ]),
        (key(), key()),
        prop::bool::ANY,
        (zrank_index(), zrank_index()),
        (bound(), bound()),
        prop::bool::weighted(0.3),
        prop::option::weighted(
            0.3,
            (pick(&["0", "1", "2", "-1"]), pick(&["-1", "0", "1", "2"])),
        ),
        prop::bool::ANY,
    )
        .prop_map(
            |(c, (k, dst), byscore, (s, e), (min, max), rev, limit, withscores)| {
                let byscore = c.contains("BYSCORE") || (c != "ZREVRANGE" && byscore);
                let (lo, hi) = if byscore { (min, max) } else { (s, e) };
                let mut v = if c == "ZRANGESTORE" {
                    a(&[c, dst, k, lo, hi])
                } else {
                    a(&[c, k, lo, hi])
                };
                let general = c == "ZRANGE" || c == "ZRANGESTORE";
                if general && byscore {
                    v.extend(a(&["BYSCORE"]));
                }
                if general && rev {
                    v.extend(a(&["REV"]));
                }
                if let (Some((off, n)), true) = (limit, byscore) {
                    v.extend(a(&["LIMIT", off, n]));
                }
                if withscores && c != "ZRANGESTORE" {
                    v.extend(a(&["WITHSCORES"]));
                }
                v
            },
        );
    // Z{UNION,INTER,DIFF}[STORE] and ZINTERCARD.
    let zcombine = (
        pick(&[
            "ZUNIONSTORE",
            "ZINTERSTORE",
            "ZDIFFSTORE",
            "ZUNION",
            "ZINTER",
            "ZDIFF",
            "ZINTERCARD",
        ]),
        key(),
        keys(1..4),
        prop::option::weighted(
            0.4,
            prop::collection::vec(pick(&["1", "2", "-1", "0", "0.5"]), 3),
        ),
        prop::option::weighted(0.4, pick(&["SUM", "MIN", "MAX"])),
        prop::bool::ANY,
        prop::option::of(pick(&["0", "1", "2"])),
    )
        .prop_map(|(c, d, ks, weights, agg, withscores, limit)| {
            let n = ks.len().to_string();
            let store = c.ends_with("STORE");
            let mut v = if store { a(&[c, d, &n]) } else { a(&[c, &n]) };
            v.extend(a(&ks));
            let weighted = !c.starts_with("ZDIFF") && c != "ZINTERCARD";
            if let (Some(w), true) = (weights, weighted) {
                v.extend(cmd(&["WEIGHTS"], w[..ks.len()].iter().copied()));
            }
            if let (Some(agg), true) = (agg, weighted) {
                v.extend(a(&["AGGREGATE", agg]));
            }
            if withscores && !store && c != "ZINTERCARD" {
                v.extend(a(&["WITHSCORES"]));
            }
            if let (Some(l), "ZINTERCARD") = (limit, c) {
                v.extend(a(&["LIMIT", l]));
            }
            v
        });
    prop_oneof![
        10 => zadd,
        3 => (key(), score(), zmember()).prop_map(|(k, s, m)| a(&["ZINCRBY", k, s, m])),
        2 => (key(), prop::collection::vec(zmember(), 1..3)).prop_map(|(k, ms)| cmd(&["ZREM", k], ms)),
        1 => key().prop_map(|k| a(&["ZCARD", k])),
        2 => (key(), zmember()).prop_map(|(k, m)| a(&["ZSCORE", k, m])),
        1 => (key(), prop::collection::vec(zmember(), 1..4)).prop_map(|(k, ms)| cmd(&["ZMSCORE", k], ms)),
        1 => (key(), bound(), bound()).prop_map(|(k, s, e)| a(&["ZCOUNT", k, s, e])),
        2 => (pick(&["ZRANK", "ZREVRANK"]), key(), zmember()).prop_map(|(c, k, m)| a(&[c, k, m])),
        6 => zrange,
        1 => (key(), zrank_index(), zrank_index()).prop_map(|(k, s, e)| a(&["ZREMRANGEBYRANK", k, s, e])),
        1 => (key(), bound(), bound()).prop_map(|(k, s, e)| a(&["ZREMRANGEBYSCORE", k, s, e])),
        2 => (pick(&["ZPOPMIN", "ZPOPMAX"]), key(), prop::option::of(pick(&["0", "1", "2", "5", "-1"])))
            .prop_map(|(c, k, n)| cmd(&[c, k], n)),
        4 => zcombine,
        1 => (keys(1..4), pick(&["MIN", "MAX"]), prop::option::of(pick(&["1", "2", "5", "0"]))).prop_map(|(ks, w, n)| {
            let mut v = a(&["ZMPOP", &ks.len().to_string()]);
            v.extend(a(&ks));
            v.extend(a(&[w]));
            if let Some(n) = n {
                v.extend(a(&["COUNT", n]));
            }
            v
        }),
        // Sets are ZUNIONSTORE / ZINTERSTORE / ZDIFF... sources too (every score 1).
        1 => (key(), prop::collection::vec(zmember(), 1..3)).prop_map(|(k, ms)| cmd(&["SADD", k], ms)),
        2 => cross_cmd(),
    ]
}

/// Up to 80 commands and where the power goes: nowhere in a fifth of the cases, after a
/// random number of device writes (a command writes at most about one record and syncs,
/// many write nothing) in two fifths, and in the others during the unsynced writes of the
/// last commands, with the last surviving write torn.
fn workload(
    cmd: impl Strategy<Value = Vec<Vec<u8>>>,
) -> impl Strategy<Value = (Vec<Vec<Vec<u8>>>, Cut)> {
    prop::collection::vec(cmd, 1..80).prop_flat_map(|cmds| {
        let n = cmds.len();
        let several: Vec<bool> = cmds.iter().map(|c| writes_several_records(c)).collect();
        let cut = prop_oneof![
            1 => Just(Cut::None),
            2 => (0..n as u64).prop_map(Cut::AfterWrites),
            2 => (n.saturating_sub(6)..n, 0usize..6, 0usize..4).prop_map(move |(from, keep, sectors)| {
                // Tears land anywhere, also inside the writes of commands that write
                // several records (`two_record_commands_survive_torn_writes`); `several`
                // only makes such cuts a little more frequent.
                let sectors = if several[from..].contains(&true) { sectors.max(1) } else { sectors };
                Cut::Unsynced { from, keep, sectors }
            }),
        ];
        (Just(cmds), cut)
    })
}

/// Cases per test: `MODEL_CASES` or 128 (about 1 s per test in a debug build).
fn cases() -> u32 {
    std::env::var("MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128)
}

/// Runs `cmds` on Skerry (see [`check`]), or, when `MODEL_REDIS_PORT` names the port of a
/// scratch `redis-server`, on that server in database `db` (flushed first): the way to
/// check the model itself against real Redis, e.g.
/// `redis-server --port 16399 --save '' & MODEL_REDIS_PORT=16399 cargo test ... model_tests`.
fn check_or_redis(db: u32, cmds: &[Vec<Vec<u8>>], cut: Cut) {
    match std::env::var("MODEL_REDIS_PORT") {
        Ok(port) => check_redis::<Db>(&port, db, cmds),
        Err(_) => check::<Db>(cmds, cut),
    }
}

/// Checks every reply of a real Redis server to `cmds` against `M`.
fn check_redis<M: Model>(port: &str, db: u32, cmds: &[Vec<Vec<u8>>]) {
    use std::io::{BufRead, BufReader, Write};
    let stream = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).expect("redis");
    let mut w = stream.try_clone().expect("clone");
    let mut r = BufReader::new(stream);
    fn reply(r: &mut impl BufRead, out: &mut Vec<u8>) {
        let mut line = Vec::new();
        r.read_until(b'\n', &mut line).expect("read");
        out.extend_from_slice(&line);
        let n: i64 = String::from_utf8_lossy(&line[1..line.len() - 2])
            .parse()
            .unwrap_or(0);
        match line[0] {
            b'$' if n >= 0 => {
                let mut b = vec![0; n as usize + 2];
                r.read_exact(&mut b).expect("read");
                out.extend_from_slice(&b);
            }
            b'*' => (0..n).for_each(|_| reply(r, out)),
            _ => {}
        }
    }
    let mut send = |argv: &[Vec<u8>]| {
        let mut m = format!("*{}\r\n", argv.len()).into_bytes();
        for x in argv {
            m.extend_from_slice(&bulk(x));
        }
        w.write_all(&m).expect("write");
        let mut out = Vec::new();
        reply(&mut r, &mut out);
        out
    };
    assert_eq!(send(&a(&["SELECT", &db.to_string()])), ok());
    assert_eq!(send(&a(&["FLUSHDB"])), ok());
    let mut model = M::default();
    for (i, argv) in cmds.iter().enumerate() {
        let want = canon(argv, model.apply(argv));
        let got = canon(argv, send(argv));
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "Redis's reply to {:?} (command {i})",
            argv.iter()
                .map(|a| String::from_utf8_lossy(a))
                .collect::<Vec<_>>()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn hash_commands_match_the_model_across_crashes(
        (cmds, cut) in workload(hash_cmd()),
    ) {
        check_or_redis(0, &cmds, cut);
    }

    #[test]
    fn list_commands_match_the_model_across_crashes(
        (cmds, cut) in workload(list_cmd()),
    ) {
        check_or_redis(1, &cmds, cut);
    }

    #[test]
    fn set_commands_match_the_model_across_crashes(
        (cmds, cut) in workload(set_cmd()),
    ) {
        check_or_redis(2, &cmds, cut);
    }

    #[test]
    fn mixed_commands_match_the_model_across_crashes(
        (cmds, cut) in workload(prop_oneof![hash_cmd(), list_cmd(), set_cmd(), zset_cmd()]),
    ) {
        check_or_redis(4, &cmds, cut);
    }

    #[test]
    fn zset_commands_match_the_model_across_crashes(
        (cmds, cut) in workload(zset_cmd()),
    ) {
        check_or_redis(3, &cmds, cut);
    }
}

/// `head` followed by `n` long (61-byte) elements and `last`, so that records span sectors.
fn long_cmd(head: &[&str], n: usize, last: &str) -> Vec<Vec<u8>> {
    let mut v = a(head);
    v.extend((0..n).map(|i| format!("{i}{}", "x".repeat(60)).into_bytes()));
    v.push(last.as_bytes().to_vec());
    v
}

/// Multi-key commands that write one record (the destination), cut at every point of
/// their write: the recovered state is the one before or after the command.
#[test]
fn one_record_multi_key_commands_survive_torn_writes() {
    let setup = vec![
        long_cmd(&["RPUSH", "k0"], 8, "a"),
        long_cmd(&["SADD", "k1"], 8, "b"),
        long_cmd(&["SADD", "k2"], 8, "m"),
    ];
    for last in [
        a(&["SUNIONSTORE", "k0", "k1", "k2"]),
        a(&["SINTERSTORE", "k2", "k1", "k2"]),
        a(&["ZUNIONSTORE", "k0", "2", "k1", "k2", "WEIGHTS", "2", "0.5"]),
        a(&["LMOVE", "k0", "k0", "RIGHT", "LEFT"]),
        a(&["SMOVE", "k1", "k1", "b"]),
    ] {
        let mut cmds = setup.clone();
        cmds.push(last);
        check::<Db>(&cmds, Cut::AfterWrites(3));
        for keep in 0..2 {
            for sectors in 0..6 {
                check::<Db>(
                    &cmds,
                    Cut::Unsynced {
                        from: 3,
                        keep,
                        sectors,
                    },
                );
            }
        }
    }
}

/// Commands that write two records (LMOVE/RPOPLPUSH/SMOVE between two keys, DEL of two
/// keys) must be atomic across a crash: both records go out in one device write, and when
/// the power cuts that write at a sector boundary between them, recovery must drop the
/// record before the tear too (the command's end marker is missing), as Redis replays a
/// command whole or not at all. This found the bug the end markers fix.
#[test]
fn two_record_commands_survive_torn_writes() {
    // LMOVE: the destination's record comes first; after the tear the element is in both
    // lists.
    let cmds = vec![
        long_cmd(&["RPUSH", "k0"], 8, "a"),
        long_cmd(&["RPUSH", "k1"], 8, "b"),
        a(&["LMOVE", "k0", "k1", "RIGHT", "LEFT"]),
    ];
    for sectors in 1..4 {
        check::<Db>(
            &cmds,
            Cut::Unsynced {
                from: 2,
                keep: 0,
                sectors,
            },
        );
    }
}

#[test]
fn two_record_smove_survives_torn_writes() {
    // SMOVE: the member ends up in both sets.
    let cmds = vec![
        long_cmd(&["SADD", "k1"], 8, "n"),
        long_cmd(&["SADD", "k2"], 8, "m"),
        a(&["SMOVE", "k2", "k1", "m"]),
    ];
    for sectors in 1..4 {
        check::<Db>(
            &cmds,
            Cut::Unsynced {
                from: 2,
                keep: 0,
                sectors,
            },
        );
    }
}

#[test]
fn two_record_del_survives_torn_writes() {
    // DEL k0 k1, padded so that the two tombstones fall on either side of a sector
    // boundary (at a padding of 320 to 352 bytes with today's format): k0 is gone, k1 is
    // back.
    for pad in (0..520).step_by(8) {
        let cmds = vec![
            a(&["SET", "k0", "v"]),
            a(&["SET", "k1", "w"]),
            a(&["SET", "k2", &"p".repeat(pad)]),
            a(&["DEL", "k0", "k1"]),
        ];
        check::<Db>(
            &cmds,
            Cut::Unsynced {
                from: 3,
                keep: 0,
                sectors: 1,
            },
        );
    }
}
