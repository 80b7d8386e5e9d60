//! The command table, as data: name, arity, flags, key positions, group, version and summary
//! for every command. Dispatch, arity errors, key routing and `COMMAND` all come from it.
//!
//! One file per command family: `string.rs`, `hash.rs`, `list.rs`, `set.rs`, `zset.rs`,
//! `keyspace.rs`, `connection.rs`, `server.rs`.

pub mod bitops;
pub mod connection;
pub mod digest;
pub mod docs;
pub mod dump;
pub mod geo;
pub mod hash;
pub mod hll;
pub mod keyspace;
pub mod keyspecs;
pub mod list;
pub mod migrate;
pub mod pubsub;
pub mod rdb;
pub mod replication;
pub mod server;
pub mod set;
pub mod sort;
pub mod storage;
pub mod stream;
pub mod string;
pub mod transaction;
pub mod zset;

use crate::coll::Thresholds;
use crate::config::Config;
use crate::conn::Conn;
use crate::keyspace::{CollError, Keyspace};
use crate::reply::Reply;

/// A command that runs on the worker owning its keys, synchronously.
pub type KeyedFn = fn(&mut Exec, &[&[u8]]);
/// A command that runs on the client's own worker with the connection's state.
pub type ConnFn = fn(&mut Conn, &[&[u8]]);

/// Commands whose work spans workers (fan-out and gather); they run as async functions on
/// the connection's worker, see [`crate::conn::Conn::run_async`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsyncCmd {
    /// MGET over several workers.
    Mget,
    /// MSET over several workers.
    Mset,
    /// MSETNX over several workers.
    Msetnx,
    /// DEL / UNLINK over several workers.
    Del,
    /// EXISTS over several workers.
    Exists,
    /// LCS with keys on two workers.
    Lcs,
    /// KEYS.
    Keys,
    /// SCAN.
    Scan,
    /// DBSIZE.
    Dbsize,
    /// FLUSHDB.
    Flushdb,
    /// FLUSHALL.
    Flushall,
    /// INFO.
    Info,
    /// CLIENT.
    Client,
    /// CONFIG.
    Config,
    /// RANDOMKEY.
    Randomkey,
    /// RENAME / RENAMENX with the two keys on different workers.
    Rename,
    /// COPY with the two keys on different workers.
    Copy,
    /// EXEC.
    Exec,
    /// WATCH.
    Watch,
    /// SORT / SORT_RO (BY and GET read keys on any worker).
    Sort,
    /// EVAL, EVALSHA, EVAL_RO, EVALSHA_RO.
    Eval,
    /// PUBLISH (to the subscribers on every worker).
    Publish,
    /// SPUBLISH.
    Spublish,
    /// PUBSUB.
    Pubsub,
    /// SWAPDB (every worker swaps two databases while all are held).
    Swapdb,
    /// SLOWLOG (the logs of every worker).
    Slowlog,
    /// MIGRATE (network I/O to another server; see `commands/migrate.rs`).
    Migrate,
    /// WAIT (no replicas yet: see `commands/replication.rs`).
    Wait,
    /// WAITAOF (every worker's log made durable).
    Waitaof,
    /// SAVE (every worker held while the RDB file is written; see `crate::rdb`).
    Save,
    /// BGSAVE.
    Bgsave,
    /// DEBUG (RELOAD holds every worker; the other subcommands run at once).
    Debug,
}

/// How a command runs.
#[derive(Clone, Copy)]
pub enum Handler {
    /// On the owner of its keys. `cross` handles the case where the keys live on different
    /// workers (None: the keys must share a worker, e.g. through a hash tag).
    Keyed {
        /// The handler.
        run: KeyedFn,
        /// Handler for keys on several workers.
        cross: Option<AsyncCmd>,
        /// The handler may leave its one key's changed collection to be written at the
        /// end of the turn (decision 0035, `keyspace::behind`): it takes the collection
        /// with `take_coll` and, on every path, hands it back with `put_coll` or
        /// `keep_coll`.
        behind: bool,
    },
    /// On the connection's worker, synchronously.
    Conn(ConnFn),
    /// On the connection's worker, asynchronously (it may wait for other workers).
    Async(AsyncCmd),
}

impl SubSpec {
    /// True when `argc` (including parent and subcommand) fits the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        if self.arity >= 0 {
            argc == self.arity as usize
        } else {
            argc >= (-self.arity) as usize
        }
    }
}

/// A subcommand: its arity is checked by dispatch; COMMAND lists it.
pub struct SubSpec {
    /// `parent|sub`.
    pub name: &'static str,
    /// Redis arity (counting the parent and the subcommand).
    pub arity: i32,
    /// Flags.
    pub flags: &'static [&'static str],
    /// Summary.
    pub summary: &'static str,
}

/// One command.
pub struct CommandSpec {
    /// Lower-case name.
    pub name: &'static str,
    /// Redis arity: positive = exact argument count (with the name); negative = at least.
    pub arity: i32,
    /// Redis command flags (`write`, `readonly`, `fast`, `admin`, ...).
    pub flags: &'static [&'static str],
    /// The flags the dispatcher tests on every call, as bits ([`flag_bit`]), computed
    /// from `flags` when the table is built.
    pub flag_bits: u32,
    /// First key argument (0 = none).
    pub first_key: i32,
    /// Last key argument (negative counts from the end).
    pub last_key: i32,
    /// Step between keys.
    pub step: i32,
    /// Command group (`string`, `generic`, `connection`, `server`).
    pub group: &'static str,
    /// Redis version that introduced it.
    pub since: &'static str,
    /// One-line description.
    pub summary: &'static str,
    /// ACL categories.
    pub acl: &'static [&'static str],
    /// How it runs.
    pub handler: Handler,
    /// Subcommands (for containers such as CLIENT and CONFIG).
    pub subcommands: &'static [SubSpec],
    /// Finds the key arguments of commands whose keys move with their arguments (a
    /// `numkeys` argument: ZUNIONSTORE, LMPOP, ...); None: first/last/step say where.
    pub key_finder: Option<KeyFinder>,
}

/// Positions of the key arguments in an argument vector (for commands with `numkeys`). A
/// `numkeys` that does not parse or does not fit gives no keys; the handler then replies
/// with Redis's error.
pub type KeyFinder = fn(&[&[u8]]) -> smallvec::SmallVec<[usize; 8]>;

/// Keys after a `numkeys` argument at `at` (e.g. ZINTER numkeys key...: `at` = 1).
fn keys_after_numkeys(argv: &[&[u8]], at: usize) -> smallvec::SmallVec<[usize; 8]> {
    let mut out = smallvec::SmallVec::new();
    let Some(n) = argv.get(at).and_then(|a| parse_i64(a)) else {
        return out;
    };
    let fits = (at as i64 + 1)
        .checked_add(n)
        .is_some_and(|end| end <= argv.len() as i64);
    if n <= 0 || !fits {
        return out;
    }
    out.extend(at + 1..at + 1 + n as usize);
    out
}

/// `CMD numkeys key... [options]` (ZINTER, ZUNION, ZDIFF, SINTERCARD, ZINTERCARD, LMPOP, ZMPOP).
pub fn keys_numkeys_at_1(argv: &[&[u8]]) -> smallvec::SmallVec<[usize; 8]> {
    keys_after_numkeys(argv, 1)
}

/// `CMD destination numkeys key... [options]` (ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE).
pub fn keys_dest_numkeys(argv: &[&[u8]]) -> smallvec::SmallVec<[usize; 8]> {
    let mut out = keys_after_numkeys(argv, 2);
    if !out.is_empty() {
        out.insert(0, 1);
    }
    out
}

/// `CMD timeout numkeys key... [options]` (BLMPOP, BZMPOP).
pub fn keys_timeout_numkeys(argv: &[&[u8]]) -> smallvec::SmallVec<[usize; 8]> {
    keys_after_numkeys(argv, 2)
}

impl CommandSpec {
    /// True when `argc` (including the name) fits the arity.
    #[inline]
    pub fn arity_ok(&self, argc: usize) -> bool {
        let a = self.arity;
        if a >= 0 {
            argc == a as usize
        } else {
            argc >= (-a) as usize
        }
    }

    /// Positions of the key arguments in `argv`.
    #[inline]
    pub fn key_positions(&self, argv: &[&[u8]]) -> smallvec::SmallVec<[usize; 8]> {
        if let Some(f) = self.key_finder {
            return f(argv);
        }
        if self.only_first_key(argv.len()) {
            return smallvec::smallvec![1];
        }
        self.key_range(argv.len())
    }

    /// [`CommandSpec::key_positions`] by first key, last key and step.
    fn key_range(&self, argc: usize) -> smallvec::SmallVec<[usize; 8]> {
        let (first, step) = (self.first_key, self.step.max(1) as usize);
        let last = if self.last_key < 0 {
            argc as i32 + self.last_key
        } else {
            self.last_key.min(argc as i32 - 1)
        };
        let range = if first <= 0 || last < first {
            0..0
        } else {
            first as usize..last as usize + 1
        };
        range.step_by(step).collect()
    }

    /// True when a call with `argc` arguments (with the name) has exactly one key, its
    /// first argument: most commands, which skip the key-range path.
    #[inline]
    pub fn only_first_key(&self, argc: usize) -> bool {
        self.first_key == 1 && argc >= 2 && self.one_key(argc)
    }

    /// True when a call with `argc` arguments (with the name) has at most one key, by
    /// first/last key (not for a command with a key finder).
    #[inline]
    pub fn one_key(&self, argc: usize) -> bool {
        self.key_finder.is_none()
            && (self.first_key == self.last_key || (self.last_key == -1 && argc <= 2))
    }

    /// The subcommand named `name` (case-insensitive), for containers such as CONFIG.
    pub fn subcommand(&self, name: &[u8]) -> Option<&'static SubSpec> {
        let subs: &'static [SubSpec] = self.subcommands;
        subs.iter().find(|s| {
            let short = &s.name[s.name.find('|').map_or(0, |i| i + 1)..];
            short.as_bytes().eq_ignore_ascii_case(name)
        })
    }

    /// True when the command has flag `f`. The flags the dispatcher tests on every call
    /// are one bit test (`f` is a literal there, so [`flag_bit`] folds away); others are
    /// looked up in `flags`.
    #[inline(always)]
    pub fn has_flag(&self, f: &str) -> bool {
        match flag_bit(f) {
            0 => self.flags.contains(&f),
            bit => self.flag_bits & bit != 0,
        }
    }
}

/// Per-command counters (INFO commandstats).
#[derive(Default, Clone, Copy, Debug)]
pub struct CommandStats {
    /// Calls.
    pub calls: u64,
    /// Microseconds spent.
    pub usec: u64,
    /// Calls rejected before running (arity, auth, ...).
    pub rejected: u64,
    /// Calls that replied with an error.
    pub failed: u64,
}

/// The execution context of a keyed command, on the worker that owns the keys.
pub struct Exec<'a> {
    /// The owner's keyspace.
    pub ks: &'a mut Keyspace,
    /// Selected database.
    pub db: usize,
    /// Time of the command (Unix ms).
    pub now_ms: i64,
    /// Where the reply goes.
    pub reply: &'a mut Reply,
    /// Configuration.
    pub config: &'a Config,
    /// Set by a blocking command (BLPOP, BZPOPMIN, ...) that found nothing to serve: the
    /// connection waits for one of the keys to be written, then runs the command again
    /// (see `crate::blocking`). The handler wrote no reply.
    pub block: Option<BlockRequest>,
}

/// What a blocking command waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockRequest {
    /// The keys whose change may let the command go on (in the command's database).
    pub keys: Vec<Vec<u8>>,
    /// How long to wait in milliseconds; 0 = for ever.
    pub timeout_ms: u64,
    /// The reply when the time runs out.
    pub on_timeout: TimeoutReply,
    /// The arguments to run the command again with, when not its own (XREAD's `$`
    /// replaced by the ID it stood for, as Redis rewrites a blocked XREAD).
    pub argv: Option<Vec<Vec<u8>>>,
}

/// A blocking command's reply when its time runs out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutReply {
    /// A null array (BLPOP, BRPOP, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP).
    NullArray,
    /// A null bulk string (BLMOVE, BRPOPLPUSH).
    NullBulk,
}

impl Exec<'_> {
    /// Makes a blocking command wait on `keys` (it replies nothing now); see [`BlockRequest`].
    pub fn block_on(&mut self, keys: &[&[u8]], timeout_ms: u64, on_timeout: TimeoutReply) {
        self.block = Some(BlockRequest {
            keys: keys.iter().map(|k| k.to_vec()).collect(),
            timeout_ms,
            on_timeout,
            argv: None,
        });
    }

    /// As [`Exec::block_on`], running `argv` when a key is written instead of the
    /// command's own arguments.
    pub fn block_on_again(
        &mut self,
        keys: &[&[u8]],
        timeout_ms: u64,
        on_timeout: TimeoutReply,
        argv: Vec<Vec<u8>>,
    ) {
        self.block_on(keys, timeout_ms, on_timeout);
        if let Some(b) = &mut self.block {
            b.argv = Some(argv);
        }
    }

    /// The collection encoding thresholds (for [`Keyspace::put_coll`]).
    pub fn thresholds(&self) -> Thresholds {
        self.config.hot.coll.get()
    }
}

/// Replies for a collection that could not be handed out: WRONGTYPE, or nothing when the
/// keyspace kept a read error (the dispatcher replies with it).
pub fn coll_error(reply: &mut Reply, e: CollError) {
    if e == CollError::WrongType {
        reply.error(crate::reply::errors::WRONGTYPE);
    }
}

const W: &[&str] = &["write", "denyoom"];
const WF: &[&str] = &["write", "denyoom", "fast"];
const WDEL: &[&str] = &["write"];
const WDELF: &[&str] = &["write", "fast"];
const R: &[&str] = &["readonly"];
const RF: &[&str] = &["readonly", "fast"];
#[allow(dead_code)] // the connection commands that have these flags are written out
const CONN: &[&str] = &["noscript", "loading", "stale", "fast"];
const ADMIN: &[&str] = &["admin", "noscript", "loading", "stale"];

const A_STR_W: &[&str] = &["@write", "@string", "@slow"];
const A_STR_WF: &[&str] = &["@write", "@string", "@fast"];
const A_STR_R: &[&str] = &["@read", "@string", "@slow"];
const A_STR_RF: &[&str] = &["@read", "@string", "@fast"];
const A_BIT_W: &[&str] = &["@write", "@bitmap", "@slow"];
const A_BIT_R: &[&str] = &["@read", "@bitmap", "@slow"];
const A_BIT_RF: &[&str] = &["@read", "@bitmap", "@fast"];
#[allow(dead_code)] // until every family uses it
const A_HASH_W: &[&str] = &["@write", "@hash", "@slow"];
const A_HASH_WF: &[&str] = &["@write", "@hash", "@fast"];
const A_HASH_R: &[&str] = &["@read", "@hash", "@slow"];
const A_HASH_RF: &[&str] = &["@read", "@hash", "@fast"];
const A_LIST_W: &[&str] = &["@write", "@list", "@slow"];
const A_LIST_WF: &[&str] = &["@write", "@list", "@fast"];
const A_LIST_R: &[&str] = &["@read", "@list", "@slow"];
const A_LIST_RF: &[&str] = &["@read", "@list", "@fast"];
const A_SET_W: &[&str] = &["@write", "@set", "@slow"];
const A_SET_WF: &[&str] = &["@write", "@set", "@fast"];
const A_SET_R: &[&str] = &["@read", "@set", "@slow"];
const A_SET_RF: &[&str] = &["@read", "@set", "@fast"];
const A_ZSET_W: &[&str] = &["@write", "@sortedset", "@slow"];
const A_ZSET_WF: &[&str] = &["@write", "@sortedset", "@fast"];
const A_ZSET_R: &[&str] = &["@read", "@sortedset", "@slow"];
const A_ZSET_RF: &[&str] = &["@read", "@sortedset", "@fast"];
const A_KS_W: &[&str] = &["@keyspace", "@write", "@slow"];
const A_KS_WF: &[&str] = &["@keyspace", "@write", "@fast"];
const A_SORT_W: &[&str] = &[
    "@write",
    "@set",
    "@sortedset",
    "@list",
    "@slow",
    "@dangerous",
];
const A_SORT_R: &[&str] = &[
    "@read",
    "@set",
    "@sortedset",
    "@list",
    "@slow",
    "@dangerous",
];
const A_KS_R: &[&str] = &["@keyspace", "@read", "@slow"];
const A_KS_RF: &[&str] = &["@keyspace", "@read", "@fast"];
const A_CONN: &[&str] = &["@fast", "@connection"];
const A_ADMIN: &[&str] = &["@admin", "@slow", "@dangerous"];

/// The flags kept as bits in [`CommandSpec::flag_bits`], in bit order.
const FLAG_BITS: [&str; 10] = [
    "write",
    "denyoom",
    "blocking",
    "no_auth",
    "no_multi",
    "allow_busy",
    "noscript",
    "skip_slowlog",
    "may_replicate",
    "readonly",
];

/// `a == b`, in a const context.
#[inline(always)]
const fn const_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The bit of flag `f` in [`CommandSpec::flag_bits`]; 0 for a flag kept only by name.
#[inline(always)]
pub const fn flag_bit(f: &str) -> u32 {
    let mut i = 0;
    while i < FLAG_BITS.len() {
        if const_eq(f, FLAG_BITS[i]) {
            return 1 << i;
        }
        i += 1;
    }
    0
}

/// The bits of `flags` ([`flag_bit`]).
const fn flag_bits_of(flags: &[&str]) -> u32 {
    let mut bits = 0;
    let mut i = 0;
    while i < flags.len() {
        bits |= flag_bit(flags[i]);
        i += 1;
    }
    bits
}

#[allow(clippy::too_many_arguments)]
const fn spec(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    keys: (i32, i32, i32),
    group: &'static str,
    since: &'static str,
    summary: &'static str,
    acl: &'static [&'static str],
    handler: Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        flag_bits: flag_bits_of(flags),
        first_key: keys.0,
        last_key: keys.1,
        step: keys.2,
        group,
        since,
        summary,
        acl,
        handler,
        subcommands: &[],
        key_finder: None,
    }
}

const fn keyed(run: KeyedFn) -> Handler {
    Handler::Keyed {
        run,
        cross: None,
        behind: false,
    }
}
/// A keyed handler that may leave its collection's write behind (see `Handler::Keyed`).
const fn keyed_behind(run: KeyedFn) -> Handler {
    Handler::Keyed {
        run,
        cross: None,
        behind: true,
    }
}
const fn keyed_x(run: KeyedFn, cross: AsyncCmd) -> Handler {
    Handler::Keyed {
        run,
        cross: Some(cross),
        behind: false,
    }
}

const NOKEY: (i32, i32, i32) = (0, 0, 0);
const K1: (i32, i32, i32) = (1, 1, 1);
const KALL: (i32, i32, i32) = (1, -1, 1);

use bitops as b;
use connection as c;
use hash as h;
use keyspace as k;
use list as l;
use pubsub as ps;
use server as sv;
use set as st;
use string as s;
use zset as z;

/// Every command Skerry knows.
pub static COMMANDS: &[CommandSpec] = &[
    // string
    spec("get", 2, RF, K1, "string", "1.0.0", "Returns the string value of a key.", A_STR_RF, keyed(s::get)),
    spec("set", -3, W, K1, "string", "1.0.0", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", A_STR_W, keyed(s::set)),
    spec("setnx", 3, WF, K1, "string", "1.0.0", "Set the string value of a key only when the key doesn't exist.", A_STR_WF, keyed(s::setnx)),
    spec("setex", 4, W, K1, "string", "2.0.0", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", A_STR_W, keyed(s::setex)),
    spec("psetex", 4, W, K1, "string", "2.6.0", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", A_STR_W, keyed(s::psetex)),
    spec("getset", 3, WF, K1, "string", "1.0.0", "Returns the previous string value of a key after setting it to a new value.", A_STR_WF, keyed(s::getset)),
    spec("getdel", 2, WDELF, K1, "string", "6.2.0", "Returns the string value of a key after deleting the key.", A_STR_WF, keyed(s::getdel)),
    spec("getex", -2, WDELF, K1, "string", "6.2.0", "Returns the string value of a key after setting its expiration time.", A_STR_WF, keyed(s::getex)),
    spec("mget", -2, RF, KALL, "string", "1.0.0", "Atomically returns the string values of one or more keys.", A_STR_RF, keyed_x(s::mget, AsyncCmd::Mget)),
    spec("mset", -3, W, (1, -1, 2), "string", "1.0.1", "Atomically creates or modifies the string values of one or more keys.", A_STR_W, keyed_x(s::mset, AsyncCmd::Mset)),
    spec("msetnx", -3, W, (1, -1, 2), "string", "1.0.1", "Atomically modifies the string values of one or more keys only when all keys don't exist.", A_STR_W, keyed_x(s::msetnx, AsyncCmd::Msetnx)),
    spec("incr", 2, WF, K1, "string", "1.0.0", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", A_STR_WF, keyed(s::incr)),
    spec("incrby", 3, WF, K1, "string", "1.0.0", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", A_STR_WF, keyed(s::incrby)),
    spec("incrbyfloat", 3, WF, K1, "string", "2.6.0", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", A_STR_WF, keyed(s::incrbyfloat)),
    spec("decr", 2, WF, K1, "string", "1.0.0", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", A_STR_WF, keyed(s::decr)),
    spec("decrby", 3, WF, K1, "string", "1.0.0", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", A_STR_WF, keyed(s::decrby)),
    spec("append", 3, WF, K1, "string", "2.0.0", "Appends a string to the value of a key. Creates the key if it doesn't exist.", A_STR_WF, keyed(s::append)),
    spec("strlen", 2, RF, K1, "string", "2.2.0", "Returns the length of a string value.", A_STR_RF, keyed(s::strlen)),
    spec("getrange", 4, R, K1, "string", "2.4.0", "Returns a substring of the string stored at a key.", A_STR_R, keyed(s::getrange)),
    spec("substr", 4, R, K1, "string", "1.0.0", "Returns a substring from a string value.", A_STR_R, keyed(s::getrange)),
    spec("setrange", 4, W, K1, "string", "2.2.0", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", A_STR_W, keyed(s::setrange)),
    spec("lcs", -3, R, (1, 2, 1), "string", "7.0.0", "Finds the longest common substring.", A_STR_R, keyed_x(s::lcs, AsyncCmd::Lcs)),
    // bitmap (commands/bitops.rs)
    spec("setbit", 4, W, K1, "bitmap", "2.2.0", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", A_BIT_W, keyed(b::setbit)),
    spec("getbit", 3, RF, K1, "bitmap", "2.2.0", "Returns a bit value by offset.", A_BIT_RF, keyed(b::getbit)),
    spec("bitcount", -2, R, K1, "bitmap", "2.6.0", "Counts the number of set bits (population counting) in a string.", A_BIT_R, keyed(b::bitcount)),
    spec("bitop", -4, W, (2, -1, 1), "bitmap", "2.6.0", "Performs bitwise operations on multiple strings, and stores the result.", A_BIT_W, keyed(b::bitop)),
    spec("bitpos", -3, R, K1, "bitmap", "2.8.7", "Finds the first set (1) or clear (0) bit in a string.", A_BIT_R, keyed(b::bitpos)),
    // hash (commands/hash.rs)
    spec("hset", -4, WF, K1, "hash", "2.0.0", "Creates or modifies the value of a field in a hash.", A_HASH_WF, keyed_behind(h::hset)),
    spec("hsetnx", 4, WF, K1, "hash", "2.0.0", "Sets the value of a field in a hash only when the field doesn't exist.", A_HASH_WF, keyed(h::hsetnx)),
    spec("hmset", -4, WF, K1, "hash", "2.0.0", "Sets the values of multiple fields.", A_HASH_WF, keyed_behind(h::hset)),
    spec("hget", 3, RF, K1, "hash", "2.0.0", "Returns the value of a field in a hash.", A_HASH_RF, keyed(h::hget)),
    spec("hmget", -3, RF, K1, "hash", "2.0.0", "Returns the values of all fields in a hash.", A_HASH_RF, keyed(h::hmget)),
    spec("hdel", -3, WDELF, K1, "hash", "2.0.0", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", A_HASH_WF, keyed(h::hdel)),
    spec("hlen", 2, RF, K1, "hash", "2.0.0", "Returns the number of fields in a hash.", A_HASH_RF, keyed(h::hlen)),
    spec("hstrlen", 3, RF, K1, "hash", "3.2.0", "Returns the length of the value of a field.", A_HASH_RF, keyed(h::hstrlen)),
    spec("hexists", 3, RF, K1, "hash", "2.0.0", "Determines whether a field exists in a hash.", A_HASH_RF, keyed(h::hexists)),
    spec("hgetall", 2, R, K1, "hash", "2.0.0", "Returns all fields and values in a hash.", A_HASH_R, keyed(h::hgetall)),
    spec("hkeys", 2, R, K1, "hash", "2.0.0", "Returns all fields in a hash.", A_HASH_R, keyed(h::hkeys)),
    spec("hvals", 2, R, K1, "hash", "2.0.0", "Returns all values in a hash.", A_HASH_R, keyed(h::hvals)),
    spec("hincrby", 4, WF, K1, "hash", "2.0.0", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", A_HASH_WF, keyed(h::hincrby)),
    spec("hincrbyfloat", 4, WF, K1, "hash", "2.6.0", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", A_HASH_WF, keyed(h::hincrbyfloat)),
    spec("hrandfield", -2, R, K1, "hash", "6.2.0", "Returns one or more random fields from a hash.", A_HASH_R, keyed(h::hrandfield)),
    spec("hscan", -3, R, K1, "hash", "2.8.0", "Iterates over fields and values of a hash.", A_HASH_R, keyed(h::hscan)),
    // hash field expiry (Redis 7.4 / 8.0; commands/hash.rs)
    spec("hexpire", -6, WDELF, K1, "hash", "7.4.0", "Set expiry for hash field using relative time to expire (seconds)", A_HASH_WF, keyed(h::hexpire)),
    spec("hpexpire", -6, WDELF, K1, "hash", "7.4.0", "Set expiry for hash field using relative time to expire (milliseconds)", A_HASH_WF, keyed(h::hexpire)),
    spec("hexpireat", -6, WDELF, K1, "hash", "7.4.0", "Set expiry for hash field using an absolute Unix timestamp (seconds)", A_HASH_WF, keyed(h::hexpire)),
    spec("hpexpireat", -6, WDELF, K1, "hash", "7.4.0", "Set expiry for hash field using an absolute Unix timestamp (milliseconds)", A_HASH_WF, keyed(h::hexpire)),
    spec("httl", -5, RF, K1, "hash", "7.4.0", "Returns the TTL in seconds of a hash field.", A_HASH_RF, keyed(h::httl)),
    spec("hpttl", -5, RF, K1, "hash", "7.4.0", "Returns the TTL in milliseconds of a hash field.", A_HASH_RF, keyed(h::httl)),
    spec("hexpiretime", -5, RF, K1, "hash", "7.4.0", "Returns the expiration time of a hash field as a Unix timestamp, in seconds.", A_HASH_RF, keyed(h::httl)),
    spec("hpexpiretime", -5, RF, K1, "hash", "7.4.0", "Returns the expiration time of a hash field as a Unix timestamp, in msec.", A_HASH_RF, keyed(h::httl)),
    spec("hpersist", -5, WDELF, K1, "hash", "7.4.0", "Removes the expiration time for each specified field", A_HASH_WF, keyed(h::hpersist)),
    spec("hgetdel", -5, WDELF, K1, "hash", "8.0.0", "Returns the value of a field and deletes it from the hash.", A_HASH_WF, keyed(h::hgetdel)),
    spec("hgetex", -5, WDELF, K1, "hash", "8.0.0", "Get the value of one or more fields of a given hash key, and optionally set their expiration.", A_HASH_WF, keyed(h::hgetex)),
    spec("hsetex", -6, WF, K1, "hash", "8.0.0", "Set the value of one or more fields of a given hash key, and optionally set their expiration.", A_HASH_WF, keyed(h::hsetex)),
    //
    // list (commands/list.rs)
    spec("lpush", -3, WF, K1, "list", "1.0.0", "Prepends one or more elements to a list. Creates the key if it doesn't exist.", A_LIST_WF, keyed_behind(l::lpush)),
    spec("rpush", -3, WF, K1, "list", "1.0.0", "Appends one or more elements to a list. Creates the key if it doesn't exist.", A_LIST_WF, keyed_behind(l::rpush)),
    spec("lpushx", -3, WF, K1, "list", "2.2.0", "Prepends one or more elements to a list only when the list exists.", A_LIST_WF, keyed(l::lpushx)),
    spec("rpushx", -3, WF, K1, "list", "2.2.0", "Appends an element to a list only when the list exists.", A_LIST_WF, keyed(l::rpushx)),
    spec("lpop", -2, WDELF, K1, "list", "1.0.0", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", A_LIST_WF, keyed_behind(l::lpop)),
    spec("rpop", -2, WDELF, K1, "list", "1.0.0", "Returns and removes the last elements of the list. Deletes the list if the last element was popped.", A_LIST_WF, keyed_behind(l::rpop)),
    spec("llen", 2, RF, K1, "list", "1.0.0", "Returns the length of a list.", A_LIST_RF, keyed(l::llen)),
    spec("lindex", 3, R, K1, "list", "1.0.0", "Returns an element from a list by its index.", A_LIST_R, keyed(l::lindex)),
    spec("lrange", 4, R, K1, "list", "1.0.0", "Returns a range of elements from a list.", A_LIST_R, keyed(l::lrange)),
    spec("lset", 4, W, K1, "list", "1.0.0", "Sets the value of an element in a list by its index.", A_LIST_W, keyed(l::lset)),
    spec("linsert", 5, W, K1, "list", "2.2.0", "Inserts an element before or after another element in a list.", A_LIST_W, keyed(l::linsert)),
    spec("lrem", 4, WDEL, K1, "list", "1.0.0", "Removes elements from a list. Deletes the list if the last element was removed.", A_LIST_W, keyed(l::lrem)),
    spec("ltrim", 4, WDEL, K1, "list", "1.0.0", "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", A_LIST_W, keyed(l::ltrim)),
    spec("lpos", -3, R, K1, "list", "6.0.6", "Returns the index of matching elements in a list.", A_LIST_R, keyed(l::lpos)),
    spec("lmove", 5, W, (1, 2, 1), "list", "6.2.0", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", A_LIST_W, keyed(l::lmove)),
    spec("rpoplpush", 3, W, (1, 2, 1), "list", "1.2.0", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", A_LIST_W, keyed(l::rpoplpush)),
    CommandSpec {
        key_finder: Some(keys_numkeys_at_1),
        ..spec("lmpop", -4, &["write", "movablekeys"], (2, 2, 1), "list", "7.0.0", "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", A_LIST_W, keyed(l::lmpop))
    },
    spec("blpop", -3, &["write", "blocking"], (1, -2, 1), "list", "2.0.0", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", l::A_LIST_BLOCKING, keyed(l::blpop)),
    spec("brpop", -3, &["write", "blocking"], (1, -2, 1), "list", "2.0.0", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", l::A_LIST_BLOCKING, keyed(l::brpop)),
    spec("blmove", 6, &["write", "denyoom", "blocking"], (1, 2, 1), "list", "6.2.0", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", l::A_LIST_BLOCKING, keyed(l::blmove)),
    spec("brpoplpush", 4, &["write", "denyoom", "blocking"], (1, 2, 1), "list", "2.2.0", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", l::A_LIST_BLOCKING, keyed(l::brpoplpush)),
    CommandSpec {
        key_finder: Some(keys_timeout_numkeys),
        ..spec("blmpop", -5, &["write", "blocking", "movablekeys"], (3, 3, 1), "list", "7.0.0", "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", l::A_LIST_BLOCKING, keyed(l::blmpop))
    },
    //
    // set (commands/set.rs)
    spec("sadd", -3, WF, K1, "set", "1.0.0", "Adds one or more members to a set. Creates the key if it doesn't exist.", A_SET_WF, keyed_behind(st::sadd)),
    spec("srem", -3, WDELF, K1, "set", "1.0.0", "Removes one or more members from a set. Deletes the set if the last member was removed.", A_SET_WF, keyed(st::srem)),
    spec("scard", 2, RF, K1, "set", "1.0.0", "Returns the number of members in a set.", A_SET_RF, keyed(st::scard)),
    spec("sismember", 3, RF, K1, "set", "1.0.0", "Determines whether a member belongs to a set.", A_SET_RF, keyed(st::sismember)),
    spec("smismember", -3, RF, K1, "set", "6.2.0", "Determines whether multiple members belong to a set.", A_SET_RF, keyed(st::smismember)),
    spec("smembers", 2, R, K1, "set", "1.0.0", "Returns all members of a set.", A_SET_R, keyed(st::smembers)),
    spec("srandmember", -2, R, K1, "set", "1.0.0", "Get one or multiple random members from a set", A_SET_R, keyed(st::srandmember)),
    spec("spop", -2, WDELF, K1, "set", "1.0.0", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", A_SET_WF, keyed(st::spop)),
    spec("smove", 4, WDELF, (1, 2, 1), "set", "1.0.0", "Moves a member from one set to another.", A_SET_WF, keyed(st::smove)),
    spec("sinter", -2, R, KALL, "set", "1.0.0", "Returns the intersect of multiple sets.", A_SET_R, keyed(st::sinter)),
    CommandSpec {
        key_finder: Some(keys_numkeys_at_1),
        ..spec("sintercard", -3, &["readonly", "movablekeys"], (2, 2, 1), "set", "7.0.0", "Returns the number of members of the intersect of multiple sets.", A_SET_R, keyed(st::sintercard))
    },
    spec("sinterstore", -3, W, KALL, "set", "1.0.0", "Stores the intersect of multiple sets in a key.", A_SET_W, keyed(st::sinterstore)),
    spec("sunion", -2, R, KALL, "set", "1.0.0", "Returns the union of multiple sets.", A_SET_R, keyed(st::sunion)),
    spec("sunionstore", -3, W, KALL, "set", "1.0.0", "Stores the union of multiple sets in a key.", A_SET_W, keyed(st::sunionstore)),
    spec("sdiff", -2, R, KALL, "set", "1.0.0", "Returns the difference of multiple sets.", A_SET_R, keyed(st::sdiff)),
    spec("sdiffstore", -3, W, KALL, "set", "1.0.0", "Stores the difference of multiple sets in a key.", A_SET_W, keyed(st::sdiffstore)),
    spec("sscan", -3, R, K1, "set", "2.8.0", "Iterates over members of a set.", A_SET_R, keyed(st::sscan)),
    //
    // sorted set (commands/zset.rs)
    spec("zadd", -4, WF, K1, "sorted-set", "1.2.0", "Add one or more members to a sorted set, or update its score if it already exists", A_ZSET_WF, keyed(z::zadd)),
    spec("zincrby", 4, WF, K1, "sorted-set", "1.2.0", "Increment the score of a member in a sorted set", A_ZSET_WF, keyed(z::zincrby)),
    spec("zrem", -3, WDELF, K1, "sorted-set", "1.2.0", "Remove one or more members from a sorted set", A_ZSET_WF, keyed(z::zrem)),
    spec("zcard", 2, RF, K1, "sorted-set", "1.2.0", "Get the number of members in a sorted set", A_ZSET_RF, keyed(z::zcard)),
    spec("zcount", 4, RF, K1, "sorted-set", "2.0.0", "Count the members in a sorted set with scores within the given values", A_ZSET_RF, keyed(z::zcount)),
    spec("zlexcount", 4, RF, K1, "sorted-set", "2.8.9", "Count the number of members in a sorted set between a given lexicographical range", A_ZSET_RF, keyed(z::zlexcount)),
    spec("zscore", 3, RF, K1, "sorted-set", "1.2.0", "Get the score associated with the given member in a sorted set", A_ZSET_RF, keyed(z::zscore)),
    spec("zmscore", -3, RF, K1, "sorted-set", "6.2.0", "Get the score associated with the given members in a sorted set", A_ZSET_RF, keyed(z::zmscore)),
    spec("zrank", -3, RF, K1, "sorted-set", "2.0.0", "Returns the index of a member in a sorted set ordered by ascending scores.", A_ZSET_RF, keyed(z::zrank)),
    spec("zrevrank", -3, RF, K1, "sorted-set", "2.0.0", "Returns the index of a member in a sorted set ordered by descending scores.", A_ZSET_RF, keyed(z::zrevrank)),
    spec("zrange", -4, R, K1, "sorted-set", "1.2.0", "Return a range of members in a sorted set", A_ZSET_R, keyed(z::zrange)),
    spec("zrangestore", -5, W, (1, 2, 1), "sorted-set", "6.2.0", "Store a range of members from sorted set into another key", A_ZSET_W, keyed(z::zrangestore)),
    spec("zrangebyscore", -4, R, K1, "sorted-set", "1.0.5", "Return a range of members in a sorted set, by score", A_ZSET_R, keyed(z::zrangebyscore)),
    spec("zrevrangebyscore", -4, R, K1, "sorted-set", "2.2.0", "Return a range of members in a sorted set, by score, with scores ordered from high to low", A_ZSET_R, keyed(z::zrevrangebyscore)),
    spec("zrangebylex", -4, R, K1, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range", A_ZSET_R, keyed(z::zrangebylex)),
    spec("zrevrangebylex", -4, R, K1, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.", A_ZSET_R, keyed(z::zrevrangebylex)),
    spec("zrevrange", -4, R, K1, "sorted-set", "1.2.0", "Return a range of members in a sorted set, by index, with scores ordered from high to low", A_ZSET_R, keyed(z::zrevrange)),
    spec("zremrangebyrank", 4, WDEL, K1, "sorted-set", "2.0.0", "Remove all members in a sorted set within the given indexes", A_ZSET_W, keyed(z::zremrangebyrank)),
    spec("zremrangebyscore", 4, WDEL, K1, "sorted-set", "1.2.0", "Remove all members in a sorted set within the given scores", A_ZSET_W, keyed(z::zremrangebyscore)),
    spec("zremrangebylex", 4, WDEL, K1, "sorted-set", "2.8.9", "Remove all members in a sorted set between the given lexicographical range", A_ZSET_W, keyed(z::zremrangebylex)),
    spec("zpopmin", -2, WDELF, K1, "sorted-set", "5.0.0", "Remove and return members with the lowest scores in a sorted set", A_ZSET_WF, keyed(z::zpopmin)),
    spec("zpopmax", -2, WDELF, K1, "sorted-set", "5.0.0", "Remove and return members with the highest scores in a sorted set", A_ZSET_WF, keyed(z::zpopmax)),
    CommandSpec {
        key_finder: Some(z::keys_zmpop),
        ..spec("zmpop", -4, &["write", "movablekeys"], K1, "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set", A_ZSET_W, keyed(z::zmpop))
    },
    spec("bzpopmin", -3, &["write", "blocking", "fast"], (1, -2, 1), "sorted-set", "5.0.0", "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available", &["@write", "@sortedset", "@fast", "@blocking"], keyed(z::bzpopmin)),
    spec("bzpopmax", -3, &["write", "blocking", "fast"], (1, -2, 1), "sorted-set", "5.0.0", "Remove and return the member with the highest score from one or more sorted sets, or block until one is available", &["@write", "@sortedset", "@fast", "@blocking"], keyed(z::bzpopmax)),
    CommandSpec {
        key_finder: Some(z::keys_bzmpop),
        ..spec("bzmpop", -5, &["write", "blocking", "movablekeys"], K1, "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set or block until one is available", &["@write", "@sortedset", "@slow", "@blocking"], keyed(z::bzmpop))
    },
    spec("zrandmember", -2, R, K1, "sorted-set", "6.2.0", "Get one or multiple random elements from a sorted set", A_ZSET_R, keyed(z::zrandmember)),
    CommandSpec {
        key_finder: Some(z::keys_numkeys),
        ..spec("zunion", -3, &["readonly", "movablekeys"], K1, "sorted-set", "6.2.0", "Add multiple sorted sets", A_ZSET_R, keyed(z::zunion))
    },
    CommandSpec {
        key_finder: Some(z::keys_store_numkeys),
        ..spec("zunionstore", -4, &["write", "denyoom", "movablekeys"], K1, "sorted-set", "2.0.0", "Add multiple sorted sets and store the resulting sorted set in a new key", A_ZSET_W, keyed(z::zunionstore))
    },
    CommandSpec {
        key_finder: Some(z::keys_numkeys),
        ..spec("zinter", -3, &["readonly", "movablekeys"], K1, "sorted-set", "6.2.0", "Intersect multiple sorted sets", A_ZSET_R, keyed(z::zinter))
    },
    CommandSpec {
        key_finder: Some(z::keys_store_numkeys),
        ..spec("zinterstore", -4, &["write", "denyoom", "movablekeys"], K1, "sorted-set", "2.0.0", "Intersect multiple sorted sets and store the resulting sorted set in a new key", A_ZSET_W, keyed(z::zinterstore))
    },
    CommandSpec {
        key_finder: Some(z::keys_numkeys),
        ..spec("zintercard", -3, &["readonly", "movablekeys"], K1, "sorted-set", "7.0.0", "Intersect multiple sorted sets and return the cardinality of the result", A_ZSET_R, keyed(z::zintercard))
    },
    CommandSpec {
        key_finder: Some(z::keys_numkeys),
        ..spec("zdiff", -3, &["readonly", "movablekeys"], K1, "sorted-set", "6.2.0", "Subtract multiple sorted sets", A_ZSET_R, keyed(z::zdiff))
    },
    CommandSpec {
        key_finder: Some(z::keys_store_numkeys),
        ..spec("zdiffstore", -4, &["write", "denyoom", "movablekeys"], K1, "sorted-set", "6.2.0", "Subtract multiple sorted sets and store the resulting sorted set in a new key", A_ZSET_W, keyed(z::zdiffstore))
    },
    spec("zscan", -3, R, K1, "sorted-set", "2.8.0", "Incrementally iterate sorted sets elements and associated scores", A_ZSET_R, keyed(z::zscan)),
    //
    // generic (keyspace)
    spec("del", -2, WDEL, KALL, "generic", "1.0.0", "Deletes one or more keys.", A_KS_W, keyed_x(k::del, AsyncCmd::Del)),
    spec("unlink", -2, WDELF, KALL, "generic", "4.0.0", "Asynchronously deletes one or more keys.", A_KS_WF, keyed_x(k::del, AsyncCmd::Del)),
    spec("exists", -2, RF, KALL, "generic", "1.0.0", "Determines whether one or more keys exist.", A_KS_RF, keyed_x(k::exists, AsyncCmd::Exists)),
    spec("touch", -2, RF, KALL, "generic", "3.2.1", "Returns the number of existing keys out of those specified after updating the time they were last accessed.", A_KS_RF, keyed_x(k::exists, AsyncCmd::Exists)),
    spec("type", 2, RF, K1, "generic", "1.0.0", "Determines the type of value stored at a key.", A_KS_RF, keyed(k::type_)),
    spec("keys", 2, &["readonly"], NOKEY, "generic", "1.0.0", "Returns all key names that match a pattern.", &["@keyspace", "@read", "@slow", "@dangerous"], Handler::Async(AsyncCmd::Keys)),
    spec("scan", -2, &["readonly"], NOKEY, "generic", "2.8.0", "Iterates over the key names in the database.", &["@keyspace", "@read", "@slow"], Handler::Async(AsyncCmd::Scan)),
    spec("rename", 3, WDEL, (1, 2, 1), "generic", "1.0.0", "Renames a key and overwrites the destination.", A_KS_W, keyed_x(k::rename, AsyncCmd::Rename)),
    spec("renamenx", 3, WDELF, (1, 2, 1), "generic", "1.0.0", "Renames a key only when the target key name doesn't exist.", A_KS_WF, keyed_x(k::renamenx, AsyncCmd::Rename)),
    spec("copy", -3, W, (1, 2, 1), "generic", "6.2.0", "Copies the value of a key to a new key.", A_KS_W, keyed_x(k::copy, AsyncCmd::Copy)),
    spec("move", 3, WDELF, K1, "generic", "1.0.0", "Moves a key to another database.", A_KS_WF, keyed(k::move_)),
    spec("randomkey", 1, &["readonly"], NOKEY, "generic", "1.0.0", "Returns a random key name from the database.", &["@keyspace", "@read", "@slow"], Handler::Async(AsyncCmd::Randomkey)),
    spec("ttl", 2, RF, K1, "generic", "1.0.0", "Returns the expiration time in seconds of a key.", A_KS_RF, keyed(k::ttl)),
    spec("pttl", 2, RF, K1, "generic", "2.6.0", "Returns the expiration time in milliseconds of a key.", A_KS_RF, keyed(k::pttl)),
    spec("expiretime", 2, RF, K1, "generic", "7.0.0", "Returns the expiration time of a key as a Unix timestamp.", A_KS_RF, keyed(k::expiretime)),
    spec("pexpiretime", 2, RF, K1, "generic", "7.0.0", "Returns the expiration time of a key as a Unix milliseconds timestamp.", A_KS_RF, keyed(k::pexpiretime)),
    spec("expire", -3, WDELF, K1, "generic", "1.0.0", "Sets the expiration time of a key in seconds.", A_KS_WF, keyed(k::expire)),
    spec("pexpire", -3, WDELF, K1, "generic", "2.6.0", "Sets the expiration time of a key in milliseconds.", A_KS_WF, keyed(k::pexpire)),
    spec("expireat", -3, WDELF, K1, "generic", "1.2.0", "Sets the expiration time of a key to a Unix timestamp.", A_KS_WF, keyed(k::expireat)),
    spec("pexpireat", -3, WDELF, K1, "generic", "2.6.0", "Sets the expiration time of a key to a Unix milliseconds timestamp.", A_KS_WF, keyed(k::pexpireat)),
    spec("persist", 2, WDELF, K1, "generic", "2.2.0", "Removes the expiration time of a key.", A_KS_WF, keyed(k::persist)),
    CommandSpec {
        key_finder: Some(sort::sort_keys),
        ..spec("sort", -2, &["write", "denyoom", "movablekeys"], K1, "generic", "1.0.0", "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.", A_SORT_W, Handler::Async(AsyncCmd::Sort))
    },
    CommandSpec {
        key_finder: Some(sort::sort_ro_keys),
        ..spec("sort_ro", -2, &["readonly", "movablekeys"], K1, "generic", "7.0.0", "Returns the sorted elements of a list, a set, or a sorted set.", A_SORT_R, Handler::Async(AsyncCmd::Sort))
    },
    CommandSpec {
        subcommands: OBJECT_SUBS,
        ..spec("object", -2, &[], (2, 2, 1), "generic", "2.2.3", "A container for object introspection commands.", &["@slow"], keyed(k::object))
    },
    CommandSpec {
        subcommands: MEMORY_SUBS,
        ..spec("memory", -2, &[], (2, 2, 1), "server", "4.0.0", "A container for memory diagnostics commands.", &["@slow"], keyed(k::memory))
    },
    spec("dbsize", 1, &["readonly", "fast"], NOKEY, "server", "1.0.0", "Returns the number of keys in the database.", &["@keyspace", "@read", "@fast"], Handler::Async(AsyncCmd::Dbsize)),
    spec("flushdb", -1, &["write"], NOKEY, "server", "1.0.0", "Remove all keys from the current database.", &["@keyspace", "@write", "@slow", "@dangerous"], Handler::Async(AsyncCmd::Flushdb)),
    spec("flushall", -1, &["write"], NOKEY, "server", "1.0.0", "Removes all keys from all databases.", &["@keyspace", "@write", "@slow", "@dangerous"], Handler::Async(AsyncCmd::Flushall)),
    // transactions (commands/transaction.rs)
    spec("multi", 1, &["noscript", "loading", "stale", "fast", "allow_busy"], NOKEY, "transactions", "1.2.0", "Starts a transaction.", &["@fast", "@transaction"], Handler::Conn(transaction::multi)),
    spec("exec", 1, &["noscript", "loading", "stale", "skip_slowlog"], NOKEY, "transactions", "1.2.0", "Executes all commands in a transaction.", &["@slow", "@transaction"], Handler::Async(AsyncCmd::Exec)),
    spec("discard", 1, &["noscript", "loading", "stale", "fast", "allow_busy"], NOKEY, "transactions", "2.0.0", "Discards a transaction.", &["@fast", "@transaction"], Handler::Conn(transaction::discard)),
    spec("watch", -2, &["noscript", "loading", "stale", "fast", "allow_busy"], KALL, "transactions", "2.2.0", "Monitors changes to keys to determine the execution of a transaction.", &["@fast", "@transaction"], Handler::Async(AsyncCmd::Watch)),
    spec("unwatch", 1, &["noscript", "loading", "stale", "fast", "allow_busy"], NOKEY, "transactions", "2.2.0", "Forgets about watched keys of a transaction.", &["@fast", "@transaction"], Handler::Conn(transaction::unwatch)),
    // connection
    spec("ping", -1, &["fast"], NOKEY, "connection", "1.0.0", "Returns the server's liveliness response.", A_CONN, Handler::Conn(c::ping)),
    spec("echo", 2, &["loading", "stale", "fast"], NOKEY, "connection", "1.0.0", "Returns the given string.", A_CONN, Handler::Conn(c::echo)),
    spec("hello", -1, &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], NOKEY, "connection", "6.0.0", "Handshakes with the Redis server.", A_CONN, Handler::Conn(c::hello)),
    spec("auth", -2, &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], NOKEY, "connection", "1.0.0", "Authenticates the connection.", A_CONN, Handler::Conn(c::auth)),
    spec("select", 2, &["loading", "stale", "fast"], NOKEY, "connection", "1.0.0", "Changes the selected database.", A_CONN, Handler::Conn(c::select)),
    spec("quit", -1, &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], NOKEY, "connection", "1.0.0", "Closes the connection.", A_CONN, Handler::Conn(c::quit)),
    spec("reset", 1, &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], NOKEY, "connection", "6.2.0", "Resets the connection.", A_CONN, Handler::Conn(c::reset)),
    CommandSpec {
        subcommands: CLIENT_SUBS,
        ..spec("client", -2, &[], NOKEY, "connection", "2.4.0", "A container for client connection commands.", &["@slow"], Handler::Async(AsyncCmd::Client))
    },
    // pub/sub (commands/pubsub.rs)
    spec("subscribe", -2, PS_SUB, NOKEY, "pubsub", "2.0.0", "Listens for messages published to channels.", A_PS_SLOW, Handler::Conn(ps::subscribe)),
    spec("unsubscribe", -1, PS_SUB, NOKEY, "pubsub", "2.0.0", "Stops listening to messages posted to channels.", A_PS_SLOW, Handler::Conn(ps::unsubscribe)),
    spec("psubscribe", -2, PS_SUB, NOKEY, "pubsub", "2.0.0", "Listens for messages published to channels that match one or more patterns.", A_PS_SLOW, Handler::Conn(ps::psubscribe)),
    spec("punsubscribe", -1, PS_SUB, NOKEY, "pubsub", "2.0.0", "Stops listening to messages published to channels that match one or more patterns.", A_PS_SLOW, Handler::Conn(ps::punsubscribe)),
    spec("ssubscribe", -2, PS_SUB, KALL, "pubsub", "7.0.0", "Listens for messages published to shard channels.", A_PS_SLOW, Handler::Conn(ps::ssubscribe)),
    spec("sunsubscribe", -1, PS_SUB, KALL, "pubsub", "7.0.0", "Stops listening to messages posted to shard channels.", A_PS_SLOW, Handler::Conn(ps::sunsubscribe)),
    spec("publish", 3, PS_PUB, NOKEY, "pubsub", "2.0.0", "Posts a message to a channel.", A_PS_FAST, Handler::Async(AsyncCmd::Publish)),
    spec("spublish", 3, PS_PUB, K1, "pubsub", "7.0.0", "Post a message to a shard channel", A_PS_FAST, Handler::Async(AsyncCmd::Spublish)),
    CommandSpec {
        subcommands: MODULE_SUBS,
        ..spec("module", -2, &[], NOKEY, "server", "4.0.0", "A container for module commands.", &["@slow"], Handler::Conn(sv::module))
    },
    CommandSpec {
        subcommands: SLOWLOG_SUBS,
        ..spec("slowlog", -2, &[], NOKEY, "server", "2.2.12", "A container for slow log commands.", &["@slow"], Handler::Async(AsyncCmd::Slowlog))
    },
    CommandSpec {
        subcommands: PUBSUB_SUBS,
        ..spec("pubsub", -2, &[], NOKEY, "pubsub", "2.8.0", "A container for Pub/Sub commands.", &["@slow"], Handler::Async(AsyncCmd::Pubsub))
    },
    // server
    CommandSpec {
        subcommands: COMMAND_SUBS,
        ..spec("command", -1, &["loading", "stale"], NOKEY, "server", "2.8.13", "Returns detailed information about all commands.", &["@slow", "@connection"], Handler::Conn(sv::command))
    },
    CommandSpec {
        subcommands: CONFIG_SUBS,
        ..spec("config", -2, &[], NOKEY, "server", "2.0.0", "A container for server configuration commands.", &["@slow"], Handler::Async(AsyncCmd::Config))
    },
    // scripting
    CommandSpec {
        key_finder: Some(keys_timeout_numkeys),
        ..spec("eval", -3, EVAL_FLAGS, K1, "scripting", "2.6.0", "Executes a server-side Lua script.", A_SCRIPT, Handler::Async(AsyncCmd::Eval))
    },
    CommandSpec {
        key_finder: Some(keys_timeout_numkeys),
        ..spec("evalsha", -3, EVAL_FLAGS, K1, "scripting", "2.6.0", "Executes a server-side Lua script by SHA1 digest.", A_SCRIPT, Handler::Async(AsyncCmd::Eval))
    },
    CommandSpec {
        key_finder: Some(keys_timeout_numkeys),
        ..spec("eval_ro", -3, EVAL_RO_FLAGS, K1, "scripting", "7.0.0", "Executes a read-only server-side Lua script.", A_SCRIPT, Handler::Async(AsyncCmd::Eval))
    },
    CommandSpec {
        key_finder: Some(keys_timeout_numkeys),
        ..spec("evalsha_ro", -3, EVAL_RO_FLAGS, K1, "scripting", "7.0.0", "Executes a read-only server-side Lua script by SHA1 digest.", A_SCRIPT, Handler::Async(AsyncCmd::Eval))
    },
    CommandSpec {
        key_finder: Some(keys_timeout_numkeys),
        ..spec("fcall", -3, EVAL_FLAGS, K1, "scripting", "7.0.0", "Invokes a function.", A_SCRIPT, Handler::Async(AsyncCmd::Eval))
    },
    CommandSpec {
        key_finder: Some(keys_timeout_numkeys),
        ..spec("fcall_ro", -3, EVAL_RO_FLAGS, K1, "scripting", "7.0.0", "Invokes a read-only function.", A_SCRIPT, Handler::Async(AsyncCmd::Eval))
    },
    CommandSpec {
        subcommands: SCRIPT_SUBS,
        ..spec("script", -2, &[], NOKEY, "scripting", "2.6.0", "A container for Lua scripts management commands.", &["@slow"], Handler::Conn(crate::scripting::script))
    },
    CommandSpec {
        subcommands: FUNCTION_SUBS,
        ..spec("function", -2, &[], NOKEY, "scripting", "7.0.0", "A container for function commands.", &["@slow"], Handler::Conn(crate::scripting::functions::function))
    },
    spec("info", -1, &["loading", "stale"], NOKEY, "server", "1.0.0", "Returns information and statistics about the server.", &["@slow", "@dangerous"], Handler::Async(AsyncCmd::Info)),
    spec("time", 1, &["loading", "stale", "fast"], NOKEY, "server", "2.6.0", "Returns the server time.", &["@fast"], Handler::Conn(sv::time)),
    spec("defrag", -2, &["admin", "noscript"], NOKEY, "server", "0.1.0", "Shows and steers the defrag of the data devices (Skerry).", &["@admin", "@slow", "@dangerous"], Handler::Conn(crate::commands::storage::defrag)),
    spec("lastsave", 1, &["loading", "stale", "fast"], NOKEY, "server", "1.0.0", "Returns the Unix timestamp of the last successful save to disk.", &["@admin", "@fast", "@dangerous"], Handler::Conn(sv::lastsave)),
    spec("shutdown", -1, &["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"], NOKEY, "server", "1.0.0", "Synchronously saves the database(s) to disk and shuts down the Redis server.", A_ADMIN, Handler::Conn(sv::shutdown)),
    spec("debug", -2, ADMIN, NOKEY, "server", "1.0.0", "A container for debugging commands.", A_ADMIN, Handler::Async(AsyncCmd::Debug)),
    spec("replicaof", 3, &["admin", "noscript", "stale", "no_async_loading"], NOKEY, "server", "5.0.0", "Configures a server as replica of another, or promotes it to a master.", A_ADMIN, Handler::Conn(crate::commands::replication::replicaof)),
    spec("slaveof", 3, &["admin", "noscript", "stale", "no_async_loading"], NOKEY, "server", "1.0.0", "Sets a Redis server as a replica of another, or promotes it to being a master.", A_ADMIN, Handler::Conn(crate::commands::replication::replicaof)),
    spec("role", 1, &["noscript", "loading", "stale", "fast"], NOKEY, "server", "2.8.12", "Returns the replication role.", &["@admin", "@fast", "@dangerous"], Handler::Conn(crate::commands::replication::role)),
    spec("save", 1, &["admin", "noscript", "no_async_loading", "no_multi"], NOKEY, "server", "1.0.0", "Synchronously saves the database(s) to disk.", A_ADMIN, Handler::Async(AsyncCmd::Save)),
    spec("bgsave", -1, &["admin", "noscript", "no_async_loading"], NOKEY, "server", "1.0.0", "Asynchronously saves the database(s) to disk.", A_ADMIN, Handler::Async(AsyncCmd::Bgsave)),
    // geo (commands/geo.rs)
    spec("geoadd", -5, W, K1, "geo", "3.2.0", "Adds one or more members to a geospatial index. The key is created if it doesn't exist.", &["@write", "@geo", "@slow"], keyed(geo::geoadd)),
    spec("geodist", -4, R, K1, "geo", "3.2.0", "Returns the distance between two members of a geospatial index.", &["@read", "@geo", "@slow"], keyed(geo::geodist)),
    spec("geohash", -2, R, K1, "geo", "3.2.0", "Returns members from a geospatial index as geohash strings.", &["@read", "@geo", "@slow"], keyed(geo::geohash)),
    spec("geopos", -2, R, K1, "geo", "3.2.0", "Returns the longitude and latitude of members from a geospatial index.", &["@read", "@geo", "@slow"], keyed(geo::geopos)),
    CommandSpec {
        key_finder: Some(geo::keys_georadius),
        ..spec("georadius", -6, &["write", "denyoom", "movablekeys"], K1, "geo", "3.2.0", "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.", &["@write", "@geo", "@slow"], keyed(geo::georadius))
    },
    spec("georadius_ro", -6, R, K1, "geo", "3.2.10", "Returns members from a geospatial index that are within a distance from a coordinate.", &["@read", "@geo", "@slow"], keyed(geo::georadius_ro)),
    CommandSpec {
        key_finder: Some(geo::keys_georadius),
        ..spec("georadiusbymember", -5, &["write", "denyoom", "movablekeys"], K1, "geo", "3.2.0", "Queries a geospatial index for members within a distance from a member, optionally stores the result.", &["@write", "@geo", "@slow"], keyed(geo::georadiusbymember))
    },
    spec("georadiusbymember_ro", -5, R, K1, "geo", "3.2.10", "Returns members from a geospatial index that are within a distance from a member.", &["@read", "@geo", "@slow"], keyed(geo::georadiusbymember_ro)),
    spec("geosearch", -7, R, K1, "geo", "6.2.0", "Queries a geospatial index for members inside an area of a box or a circle.", &["@read", "@geo", "@slow"], keyed(geo::geosearch)),
    spec("geosearchstore", -8, W, (1, 2, 1), "geo", "6.2.0", "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.", &["@write", "@geo", "@slow"], keyed(geo::geosearchstore)),
    // hyperloglog (commands/hll.rs) and BITFIELD (commands/bitops.rs)
    spec("pfadd", -2, WF, K1, "hyperloglog", "2.8.9", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.", &["@write", "@hyperloglog", "@fast"], keyed(hll::pfadd)),
    spec("pfcount", -2, R, KALL, "hyperloglog", "2.8.9", "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).", &["@read", "@hyperloglog", "@slow"], keyed(hll::pfcount)),
    spec("pfmerge", -2, W, KALL, "hyperloglog", "2.8.9", "Merges one or more HyperLogLog values into a single key.", &["@write", "@hyperloglog", "@slow"], keyed(hll::pfmerge)),
    spec("pfdebug", 3, &["write", "denyoom", "admin"], (2, 2, 1), "hyperloglog", "2.8.9", "Internal commands for debugging HyperLogLog values.", &["@write", "@hyperloglog", "@admin", "@slow", "@dangerous"], keyed(hll::pfdebug)),
    spec("pfselftest", 1, &["admin"], NOKEY, "hyperloglog", "2.8.9", "An internal command for testing HyperLogLog values.", &["@hyperloglog", "@admin", "@slow", "@dangerous"], Handler::Conn(hll::pfselftest)),
    spec("bitfield", -2, W, K1, "bitmap", "3.2.0", "Performs arbitrary bitfield integer operations on strings.", A_BIT_W, keyed(b::bitfield)),
    spec("bitfield_ro", -2, RF, K1, "bitmap", "6.0.0", "Performs arbitrary read-only bitfield integer operations on strings.", A_BIT_RF, keyed(b::bitfield_ro)),
    // redis 7.2 core (commands/keyspace.rs, commands/server.rs)
    spec("swapdb", 3, &["write", "fast"], NOKEY, "server", "4.0.0", "Swaps two Redis databases.", &["@keyspace", "@write", "@fast", "@dangerous"], Handler::Async(AsyncCmd::Swapdb)),
    // replication (commands/replication.rs)
    spec("wait", 3, &["blocking"], NOKEY, "generic", "3.0.0", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", &["@slow", "@blocking", "@connection"], Handler::Async(AsyncCmd::Wait)),
    spec("waitaof", 4, &["blocking"], NOKEY, "generic", "7.2.0", "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas.", &["@slow", "@blocking", "@connection"], Handler::Async(AsyncCmd::Waitaof)),
    // dump (commands/dump.rs)
    spec("dump", 2, &["readonly"], K1, "generic", "2.6.0", "Returns a serialized representation of the value stored at a key.", A_KS_R, keyed(dump::dump)),
    spec("restore", -4, W, K1, "generic", "2.6.0", "Creates a key from the serialized representation of a value.", &["@keyspace", "@write", "@slow", "@dangerous"], keyed(dump::restore)),
    // stream (commands/stream.rs)
    spec("xadd", -5, WF, K1, "stream", "5.0.0", "Appends a new message to a stream. Creates the key if it doesn't exist.", &["@write", "@stream", "@fast"], keyed_behind(stream::xadd)),
    spec("xrange", -4, R, K1, "stream", "5.0.0", "Returns the messages from a stream within a range of IDs.", &["@read", "@stream", "@slow"], keyed(stream::xrange)),
    spec("xrevrange", -4, R, K1, "stream", "5.0.0", "Returns the messages from a stream within a range of IDs in reverse order.", &["@read", "@stream", "@slow"], keyed(stream::xrevrange)),
    spec("xlen", 2, RF, K1, "stream", "5.0.0", "Return the number of messages in a stream.", &["@read", "@stream", "@fast"], keyed(stream::xlen)),
    spec("xdel", -3, WDELF, K1, "stream", "5.0.0", "Returns the number of messages after removing them from a stream.", &["@write", "@stream", "@fast"], keyed(stream::xdel)),
    spec("xtrim", -4, WDEL, K1, "stream", "5.0.0", "Deletes messages from the beginning of a stream.", &["@write", "@stream", "@slow"], keyed(stream::xtrim)),
    CommandSpec {
        key_finder: Some(stream::keys_xread),
        ..spec("xread", -4, &["readonly", "blocking", "movablekeys"], K1, "stream", "5.0.0", "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.", &["@read", "@stream", "@slow", "@blocking"], keyed(stream::xread))
    },
    CommandSpec {
        key_finder: Some(stream::keys_xread),
        ..spec("xreadgroup", -7, &["write", "blocking", "movablekeys"], K1, "stream", "5.0.0", "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.", &["@write", "@stream", "@slow", "@blocking"], keyed(stream::xreadgroup))
    },
    CommandSpec {
        subcommands: XGROUP_SUBS,
        ..spec("xgroup", -2, &[], (2, 2, 1), "stream", "5.0.0", "A container for consumer groups commands.", &["@slow"], keyed(stream::xgroup))
    },
    spec("xack", -4, WDELF, K1, "stream", "5.0.0", "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.", &["@write", "@stream", "@fast"], keyed(stream::xack)),
    spec("xpending", -3, R, K1, "stream", "5.0.0", "Returns the information and entries from a stream consumer group's pending entries list.", &["@read", "@stream", "@slow"], keyed(stream::xpending)),
    spec("xclaim", -6, WDELF, K1, "stream", "5.0.0", "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.", &["@write", "@stream", "@fast"], keyed(stream::xclaim)),
    spec("xautoclaim", -6, WDELF, K1, "stream", "6.2.0", "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.", &["@write", "@stream", "@fast"], keyed(stream::xautoclaim)),
    CommandSpec {
        subcommands: XINFO_SUBS,
        ..spec("xinfo", -2, &[], (2, 2, 1), "stream", "5.0.0", "A container for stream introspection commands.", &["@slow"], keyed(stream::xinfo))
    },
    spec("xsetid", -3, WF, K1, "stream", "5.0.0", "An internal command for replicating stream values.", &["@write", "@stream", "@fast"], keyed(stream::xsetid)),
    // migrate (commands/migrate.rs)
    CommandSpec {
        key_finder: Some(migrate::keys_migrate),
        ..spec("migrate", -6, &["write", "movablekeys"], (3, 3, 1), "generic", "2.6.0", "Atomically transfers a key from one Redis instance to another.", &["@keyspace", "@write", "@slow", "@dangerous"], Handler::Async(AsyncCmd::Migrate))
    },
];

const PS_SUB: &[&str] = &["pubsub", "noscript", "loading", "stale"];
const PS_PUB: &[&str] = &["pubsub", "loading", "stale", "fast", "may_replicate"];
const PS_INFO: &[&str] = &["pubsub", "loading", "stale"];
const A_PS_SLOW: &[&str] = &["@pubsub", "@slow"];
const A_PS_FAST: &[&str] = &["@pubsub", "@fast"];

/// PUBSUB's subcommands.
pub static PUBSUB_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "pubsub|channels",
        arity: -2,
        flags: PS_INFO,
        summary: "Returns the active channels.",
    },
    SubSpec {
        name: "pubsub|numsub",
        arity: -2,
        flags: PS_INFO,
        summary: "Returns a count of subscribers to channels.",
    },
    SubSpec {
        name: "pubsub|numpat",
        arity: 2,
        flags: PS_INFO,
        summary: "Returns a count of unique pattern subscriptions.",
    },
    SubSpec {
        name: "pubsub|shardchannels",
        arity: -2,
        flags: PS_INFO,
        summary: "Returns the active shard channels.",
    },
    SubSpec {
        name: "pubsub|shardnumsub",
        arity: -2,
        flags: PS_INFO,
        summary: "Returns the count of subscribers of shard channels.",
    },
    SubSpec {
        name: "pubsub|help",
        arity: 2,
        flags: &["loading", "stale"],
        summary: "Returns helpful text about the different subcommands.",
    },
];

/// Flags of CLIENT's connection subcommands (ID, SETNAME, ...): unlike most connection
/// commands they are not `fast` in Redis.
const CLIENT_CONN: &[&str] = &["noscript", "loading", "stale"];

/// CLIENT's subcommands.
pub static CLIENT_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "client|id",
        arity: 2,
        flags: CLIENT_CONN,
        summary: "Returns the unique client ID of the connection.",
    },
    SubSpec {
        name: "client|setname",
        arity: 3,
        flags: CLIENT_CONN,
        summary: "Sets the connection name.",
    },
    SubSpec {
        name: "client|getname",
        arity: 2,
        flags: CLIENT_CONN,
        summary: "Returns the name of the connection.",
    },
    SubSpec {
        name: "client|list",
        arity: -2,
        flags: ADMIN,
        summary: "Lists open connections.",
    },
    SubSpec {
        name: "client|info",
        arity: 2,
        flags: CLIENT_CONN,
        summary: "Returns information about the connection.",
    },
    SubSpec {
        name: "client|kill",
        arity: -3,
        flags: ADMIN,
        summary: "Terminates open connections.",
    },
    SubSpec {
        name: "client|unblock",
        arity: -3,
        flags: ADMIN,
        summary: "Unblocks a client blocked by a blocking command from a different connection.",
    },
    SubSpec {
        name: "client|setinfo",
        arity: 4,
        flags: CLIENT_CONN,
        summary: "Sets information specific to the client or connection.",
    },
    SubSpec {
        name: "client|no-evict",
        arity: 3,
        flags: ADMIN,
        summary: "Sets the client eviction mode of the connection.",
    },
    SubSpec {
        name: "client|no-touch",
        arity: 3,
        flags: CLIENT_CONN,
        summary:
            "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
    },
    SubSpec {
        name: "client|reply",
        arity: 3,
        flags: CLIENT_CONN,
        summary: "Instructs the server whether to reply to commands.",
    },
    SubSpec {
        name: "client|help",
        arity: 2,
        flags: &["loading", "stale"],
        summary: "Returns helpful text about the different subcommands.",
    },
];

/// XGROUP's subcommands.
pub static XGROUP_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "xgroup|create",
        arity: -5,
        flags: &["write", "denyoom"],
        summary: "Creates a consumer group.",
    },
    SubSpec {
        name: "xgroup|createconsumer",
        arity: 5,
        flags: &["write", "denyoom"],
        summary: "Creates a consumer in a consumer group.",
    },
    SubSpec {
        name: "xgroup|delconsumer",
        arity: 5,
        flags: &["write"],
        summary: "Deletes a consumer from a consumer group.",
    },
    SubSpec {
        name: "xgroup|destroy",
        arity: 4,
        flags: &["write"],
        summary: "Destroys a consumer group.",
    },
    SubSpec {
        name: "xgroup|help",
        arity: 2,
        flags: &["loading", "stale"],
        summary: "Returns helpful text about the different subcommands.",
    },
    SubSpec {
        name: "xgroup|setid",
        arity: -5,
        flags: &["write"],
        summary: "Sets the last-delivered ID of a consumer group.",
    },
];

/// XINFO's subcommands.
pub static XINFO_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "xinfo|consumers",
        arity: 4,
        flags: &["readonly"],
        summary: "Returns a list of the consumers in a consumer group.",
    },
    SubSpec {
        name: "xinfo|groups",
        arity: 3,
        flags: &["readonly"],
        summary: "Returns a list of the consumer groups of a stream.",
    },
    SubSpec {
        name: "xinfo|help",
        arity: 2,
        flags: &["loading", "stale"],
        summary: "Returns helpful text about the different subcommands.",
    },
    SubSpec {
        name: "xinfo|stream",
        arity: -3,
        flags: &["readonly"],
        summary: "Returns information about a stream.",
    },
];

/// OBJECT's subcommands.
pub static OBJECT_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "object|encoding",
        arity: 3,
        flags: &["readonly"],
        summary: "Returns the internal encoding of a Redis object.",
    },
    SubSpec {
        name: "object|refcount",
        arity: 3,
        flags: &["readonly"],
        summary: "Returns the reference count of a value of a key.",
    },
    SubSpec {
        name: "object|idletime",
        arity: 3,
        flags: &["readonly"],
        summary: "Returns the time since the last access to a Redis object.",
    },
    SubSpec {
        name: "object|freq",
        arity: 3,
        flags: &["readonly"],
        summary: "Returns the logarithmic access frequency counter of a Redis object.",
    },
    SubSpec {
        name: "object|help",
        arity: 2,
        flags: &["loading", "stale"],
        summary: "Returns helpful text about the different subcommands.",
    },
];

/// MEMORY's subcommands (USAGE and HELP only).
pub static MEMORY_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "memory|usage",
        arity: -3,
        flags: &["readonly"],
        summary: "Estimates the memory usage of a key.",
    },
    SubSpec {
        name: "memory|help",
        arity: 2,
        flags: &["loading", "stale"],
        summary: "Returns helpful text about the different subcommands.",
    },
];

/// MODULE's subcommands.
pub static MODULE_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "module|list",
        arity: 2,
        flags: &["admin", "noscript"],
        summary: "Returns all loaded modules.",
    },
    SubSpec {
        name: "module|load",
        arity: -3,
        flags: &["admin", "noscript", "no_async_loading", "protected"],
        summary: "Loads a module.",
    },
    SubSpec {
        name: "module|loadex",
        arity: -3,
        flags: &["admin", "noscript", "no_async_loading", "protected"],
        summary: "Loads a module using extended parameters.",
    },
    SubSpec {
        name: "module|unload",
        arity: 3,
        flags: &["admin", "noscript", "no_async_loading", "protected"],
        summary: "Unloads a module.",
    },
    SubSpec {
        name: "module|help",
        arity: 2,
        flags: &["loading", "stale"],
        summary: "Returns helpful text about the different subcommands.",
    },
];

/// SLOWLOG's subcommands.
pub static SLOWLOG_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "slowlog|get",
        arity: -2,
        flags: &["admin", "loading", "stale"],
        summary: "Returns the slow log's entries.",
    },
    SubSpec {
        name: "slowlog|len",
        arity: 2,
        flags: &["admin", "loading", "stale"],
        summary: "Returns the number of entries in the slow log.",
    },
    SubSpec {
        name: "slowlog|reset",
        arity: 2,
        flags: &["admin", "loading", "stale"],
        summary: "Clears all entries from the slow log.",
    },
    SubSpec {
        name: "slowlog|help",
        arity: 2,
        flags: &["loading", "stale"],
        summary: "Show helpful text about the different subcommands",
    },
];

/// COMMAND's subcommands.
pub static COMMAND_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "command|count",
        arity: 2,
        flags: &["loading", "stale"],
        summary: "Returns a count of commands.",
    },
    SubSpec {
        name: "command|info",
        arity: -2,
        flags: &["loading", "stale"],
        summary: "Returns information about one, multiple or all commands.",
    },
    SubSpec {
        name: "command|docs",
        arity: -2,
        flags: &["loading", "stale"],
        summary: "Returns documentary information about one, multiple or all commands.",
    },
    SubSpec {
        name: "command|list",
        arity: -2,
        flags: &["loading", "stale"],
        summary: "Returns a list of command names.",
    },
    SubSpec {
        name: "command|getkeys",
        arity: -3,
        flags: &["loading", "stale"],
        summary: "Extracts the key names from an arbitrary command.",
    },
    SubSpec {
        name: "command|getkeysandflags",
        arity: -3,
        flags: &["loading", "stale"],
        summary: "Extracts the key names and access flags for an arbitrary command.",
    },
    SubSpec {
        name: "command|help",
        arity: 2,
        flags: &["loading", "stale"],
        summary: "Returns helpful text about the different subcommands.",
    },
];

const EVAL_FLAGS: &[&str] = &[
    "noscript",
    "stale",
    "skip_monitor",
    "may_replicate",
    "no_mandatory_keys",
    "movablekeys",
];
const EVAL_RO_FLAGS: &[&str] = &[
    "readonly",
    "noscript",
    "stale",
    "skip_monitor",
    "no_mandatory_keys",
    "movablekeys",
];
const A_SCRIPT: &[&str] = &["@slow", "@scripting"];

/// SCRIPT's subcommands.
pub static SCRIPT_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "script|exists",
        arity: -3,
        flags: &["noscript"],
        summary: "Determines whether server-side Lua scripts exist in the script cache.",
    },
    SubSpec {
        name: "script|flush",
        arity: -2,
        flags: &["noscript"],
        summary: "Removes all server-side Lua scripts from the script cache.",
    },
    SubSpec {
        name: "script|help",
        arity: 2,
        flags: &["loading", "stale"],
        summary: "Returns helpful text about the different subcommands.",
    },
    SubSpec {
        name: "script|kill",
        arity: 2,
        flags: &["noscript", "allow_busy"],
        summary: "Terminates a server-side Lua script during execution.",
    },
    SubSpec {
        name: "script|load",
        arity: 3,
        flags: &["noscript", "stale"],
        summary: "Loads a server-side Lua script to the script cache.",
    },
];

/// FUNCTION's subcommands.
pub static FUNCTION_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "function|delete",
        arity: 3,
        flags: &["write", "noscript"],
        summary: "Deletes a library and its functions.",
    },
    SubSpec {
        name: "function|dump",
        arity: 2,
        flags: &["noscript"],
        summary: "Dumps all libraries into a serialized binary payload.",
    },
    SubSpec {
        name: "function|flush",
        arity: -2,
        flags: &["write", "noscript"],
        summary: "Deletes all libraries and functions.",
    },
    SubSpec {
        name: "function|help",
        arity: 2,
        flags: &["loading", "stale"],
        summary: "Returns helpful text about the different subcommands.",
    },
    SubSpec {
        name: "function|kill",
        arity: 2,
        flags: &["noscript", "allow_busy"],
        summary: "Terminates a function during execution.",
    },
    SubSpec {
        name: "function|list",
        arity: -2,
        flags: &["noscript"],
        summary: "Returns information about all libraries.",
    },
    SubSpec {
        name: "function|load",
        arity: -3,
        flags: &["write", "denyoom", "noscript"],
        summary: "Creates a library.",
    },
    SubSpec {
        name: "function|restore",
        arity: -3,
        flags: &["write", "denyoom", "noscript"],
        summary: "Restores all libraries from a payload.",
    },
    SubSpec {
        name: "function|stats",
        arity: 2,
        flags: &["noscript", "allow_busy"],
        summary: "Returns information about a function during execution.",
    },
];

/// CONFIG's subcommands.
pub static CONFIG_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "config|get",
        arity: -3,
        flags: ADMIN,
        summary: "Returns the effective values of configuration parameters.",
    },
    SubSpec {
        name: "config|set",
        arity: -4,
        flags: ADMIN,
        summary: "Sets configuration parameters in-flight.",
    },
    SubSpec {
        name: "config|resetstat",
        arity: 2,
        flags: ADMIN,
        summary: "Resets the server's statistics.",
    },
    SubSpec {
        name: "config|rewrite",
        arity: 2,
        flags: ADMIN,
        summary: "Persists the effective configuration to file.",
    },
    SubSpec {
        name: "config|help",
        arity: 2,
        flags: &["loading", "stale"],
        summary: "Returns helpful text about the different subcommands.",
    },
];

/// Keyed commands that never read a value (only the index: existence, expiry, type), so the
/// dispatcher does not make their values resident first. Every other keyed command reads the
/// values of its keys.
const NO_VALUE_READ: &[&str] = &[
    "set",
    "setnx",
    "setex",
    "psetex",
    "mset",
    "msetnx",
    "del",
    "unlink",
    "exists",
    "touch",
    "type",
    "ttl",
    "pttl",
    "expiretime",
    "pexpiretime",
];

/// True when keyed command `idx` with arguments `argv` reads the values of its keys (SET
/// reads only with its GET option).
#[inline]
pub fn reads_values(idx: usize, argv: &[&[u8]]) -> bool {
    if reads_values_always(idx) {
        return true;
    }
    COMMANDS[idx].name == "set" && argv.len() > 3 && argv[3..].iter().any(|a| is(a, "get"))
}

/// True when command `idx` reads its keys' values whatever its arguments (SET reads only
/// with GET: [`reads_values`]).
pub fn reads_values_always(idx: usize) -> bool {
    static READS: std::sync::LazyLock<Vec<bool>> = std::sync::LazyLock::new(|| {
        COMMANDS
            .iter()
            .map(|c| !NO_VALUE_READ.contains(&c.name))
            .collect()
    });
    READS[idx]
}

/// Looks a command up by name, case-insensitively. Returns its table index.
///
/// A name is read as three little-endian words straight from its bytes (for a name of 17
/// to 24 bytes, its bytes 0-7, 8-15 and last 8, which overlap; shorter names in the same
/// way; see [`name_words`]). Each slot of a small open-addressing table holds a
/// command's lowercase words and a mask with 0x20 in every byte that is a letter, so the
/// check is `(word | mask) == lowercase word` on each word: it folds the case of letters
/// only, exactly as a case-insensitive compare does. The hash mixes the words with every
/// byte ORed with 0x20. Nothing is copied on the way: lowercasing into a buffer that a hash
/// then read back as words stalled on store forwarding (5% of a pipelined PFADD's CPU).
#[inline]
pub fn lookup(name: &[u8]) -> Option<usize> {
    if name.is_empty() || name.len() > LOOKUP_NAME_MAX {
        return None;
    }
    let (w0, w1, w2) = name_words(name);
    let t = lookup_table();
    let mut slot = word_hash(w0, w1, w2, name.len()) & (LOOKUP_SLOTS - 1);
    loop {
        let s = &t[slot];
        if s.idx == u16::MAX {
            return None;
        }
        if usize::from(s.len) == name.len()
            && (w0 | s.m0) == s.w0
            && (w1 | s.m1) == s.w1
            && (w2 | s.m2) == s.w2
        {
            return Some(usize::from(s.idx));
        }
        slot = (slot + 1) & (LOOKUP_SLOTS - 1);
    }
}

/// Slots of the lookup table (a power of two, at least twice the commands).
const LOOKUP_SLOTS: usize = 512;
/// Longest command name the table holds.
const LOOKUP_NAME_MAX: usize = 24;

/// A slot of the lookup table: a command's lowercase name as [`name_words`], the case
/// masks of those words (0x20 in each byte that is a letter), its length and its index.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct LookupEntry {
    w0: u64,
    w1: u64,
    w2: u64,
    m0: u64,
    m1: u64,
    m2: u64,
    len: u8,
    /// Index in [`COMMANDS`]; `u16::MAX` for an empty slot.
    idx: u16,
}

/// `name` (1 to 24 bytes) as three words that hold every byte: 17-24 bytes: bytes 0-7,
/// 8-15 and the last 8; 9-16: the first 8 and the last 8; 4-8: the first 4 and the last 4
/// in one word; 1-3: the first, middle and last byte; the words not needed are 0. Names of
/// the same length are equal exactly when their words are.
#[inline]
fn name_words(name: &[u8]) -> (u64, u64, u64) {
    let n = name.len();
    debug_assert!((1..=LOOKUP_NAME_MAX).contains(&n));
    let word = |at: usize| u64::from_le_bytes(name[at..at + 8].try_into().expect("8 bytes"));
    let half = |at: usize| {
        u64::from(u32::from_le_bytes(
            name[at..at + 4].try_into().expect("4 bytes"),
        ))
    };
    if n > 16 {
        (word(0), word(8), word(n - 8))
    } else if n > 8 {
        (word(0), word(n - 8), 0)
    } else if n == 8 {
        (word(0), 0, 0)
    } else if n >= 4 {
        (half(0) | half(n - 4) << 32, 0, 0)
    } else {
        let w = u64::from(name[0]) | u64::from(name[n / 2]) << 8 | u64::from(name[n - 1]) << 16;
        (w, 0, 0)
    }
}

/// The slot hash of a name's words ([`name_words`]) and length, case-insensitive.
#[inline]
fn word_hash(w0: u64, w1: u64, w2: u64, len: usize) -> usize {
    const FOLD: u64 = 0x2020_2020_2020_2020;
    let h = ((w0 | FOLD).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (w1 | FOLD).rotate_left(29)
        ^ (w2 | FOLD)
        ^ len as u64)
        .wrapping_mul(0xff51_afd7_ed55_8ccd);
    (h >> 40) as usize
}

/// The lookup table, built once.
fn lookup_table() -> &'static [LookupEntry; LOOKUP_SLOTS] {
    static TABLE: std::sync::OnceLock<Box<[LookupEntry; LOOKUP_SLOTS]>> =
        std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        assert!(COMMANDS.len() * 2 <= LOOKUP_SLOTS);
        let empty = LookupEntry {
            w0: 0,
            w1: 0,
            w2: 0,
            m0: 0,
            m1: 0,
            m2: 0,
            len: 0,
            idx: u16::MAX,
        };
        let mut t = Box::new([empty; LOOKUP_SLOTS]);
        for (i, c) in COMMANDS.iter().enumerate() {
            let n = c.name.as_bytes();
            assert!(
                !n.is_empty() && n.len() <= LOOKUP_NAME_MAX,
                "command name too long: {}",
                c.name
            );
            assert!(!n.iter().any(u8::is_ascii_uppercase), "{}", c.name);
            let letters: Vec<u8> = n
                .iter()
                .map(|b| if b.is_ascii_lowercase() { 0x20 } else { 0 })
                .collect();
            let (w0, w1, w2) = name_words(n);
            let (m0, m1, m2) = name_words(&letters);
            let mut slot = word_hash(w0, w1, w2, n.len()) & (LOOKUP_SLOTS - 1);
            while t[slot].idx != u16::MAX {
                slot = (slot + 1) & (LOOKUP_SLOTS - 1);
            }
            t[slot] = LookupEntry {
                w0,
                w1,
                w2,
                m0,
                m1,
                m2,
                len: n.len() as u8,
                idx: i as u16,
            };
        }
        t
    })
}

/// Replies with Redis's `addReplySubcommandSyntaxError`: `sub` (its first 128 bytes, as
/// sent) is not a subcommand of `container` or has the wrong number of arguments.
pub fn subcommand_syntax_error(reply: &mut Reply, container: &str, sub: &[u8]) {
    let mut msg = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    msg.extend_from_slice(&sub[..sub.len().min(128)]);
    msg.extend_from_slice(format!("'. Try {container} HELP.").as_bytes());
    skerry_resp::error(&mut reply.buf, &msg);
}

/// Parses an argument as a signed 64-bit integer with Redis's strictness (no spaces, no '+',
/// no leading zeros except "0").
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    let (neg, digits) = match b[0] {
        b'-' => (true, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || (digits[0] == b'0' && (digits.len() > 1 || neg)) {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        let x = (d - b'0') as i64;
        v = if neg {
            v.checked_mul(10)?.checked_sub(x)?
        } else {
            v.checked_mul(10)?.checked_add(x)?
        };
    }
    Some(v)
}

/// Parses a SCAN/HSCAN/SSCAN/ZSCAN cursor as Redis 8.0's `parseScanCursorOrReply` does
/// (`string2ull`): the argument is read as a C string (up to its first NUL); a strict integer
/// is taken as is (a negative one is refused); otherwise `strtoull` rules apply: leading
/// whitespace, an optional sign (a '-' negates modulo 2^64), at least one digit, nothing after,
/// no overflow. `None` means `ERR invalid cursor`.
pub fn parse_scan_cursor(b: &[u8]) -> Option<u64> {
    let b = &b[..memchr::memchr(0, b).unwrap_or(b.len())];
    if let Some(v) = parse_i64(b) {
        return u64::try_from(v).ok();
    }
    let start = b
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))?;
    let b = &b[start..];
    let (neg, digits) = match b[0] {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Parses a float argument as Redis's `string2ld`/`strtold` would accept it (no spaces,
/// no NaN).
pub fn parse_f64(b: &[u8]) -> Option<f64> {
    if b.is_empty() || b.len() > 5000 {
        return None;
    }
    if b[0].is_ascii_whitespace() || b[b.len() - 1].is_ascii_whitespace() {
        return None;
    }
    let s = std::str::from_utf8(b).ok()?;
    let lower = s.to_ascii_lowercase();
    let v: f64 = match lower.trim_start_matches(['+', '-']) {
        "inf" | "infinity" => {
            if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        _ => {
            // strtold accepts hex floats too; Rust does not; Redis tests don't rely on them.
            if lower.contains("nan") {
                return None;
            }
            s.parse().ok()?
        }
    };
    if v.is_nan() {
        return None;
    }
    Some(v)
}

/// Parses a blocking command's timeout (seconds, decimals allowed) into milliseconds (0 =
/// for ever), replying with Redis's error when it is not valid.
pub fn parse_block_timeout(reply: &mut Reply, arg: &[u8]) -> Option<u64> {
    // Redis parses with strtold, which also takes hexadecimal ("0x7FFFFFFFFFFFFF").
    let hex = || {
        let (neg, rest) = match arg.first() {
            Some(b'-') => (true, &arg[1..]),
            Some(b'+') => (false, &arg[1..]),
            _ => (false, arg),
        };
        let digits = rest
            .strip_prefix(b"0x")
            .or_else(|| rest.strip_prefix(b"0X"))?;
        let v = u128::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()? as f64;
        Some(if neg { -v } else { v })
    };
    let Some(secs) = parse_f64(arg).or_else(hex).filter(|v| v.is_finite()) else {
        reply.error("ERR timeout is not a float or out of range");
        return None;
    };
    if secs < 0.0 {
        reply.error("ERR timeout is negative");
        return None;
    }
    let ms = (secs * 1000.0).ceil();
    if ms > (i64::MAX / 2) as f64 {
        reply.error("ERR timeout is out of range");
        return None;
    }
    Some(ms as u64)
}

/// Case-insensitive comparison of an argument with a lower-case word.
#[inline]
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`lookup`] must answer: the command whose name equals `name` ignoring ASCII case.
    fn naive_lookup(name: &[u8]) -> Option<usize> {
        COMMANDS
            .iter()
            .position(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
    }

    #[test]
    fn lookup_agrees_with_a_case_insensitive_compare() {
        // Every name, with each byte in turn flipped in bit 0x20 (a case change for a
        // letter, another character for anything else), and with random case.
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for c in COMMANDS {
            let n = c.name.as_bytes();
            for i in 0..n.len() {
                for flip in [0x20u8, 0x01, 0x40, 0x80] {
                    let mut odd = n.to_vec();
                    odd[i] ^= flip;
                    assert_eq!(lookup(&odd), naive_lookup(&odd), "{:?}", odd);
                }
            }
            for _ in 0..8 {
                let mixed: Vec<u8> = n
                    .iter()
                    .map(|&b| {
                        if next() & 1 == 1 {
                            b.to_ascii_uppercase()
                        } else {
                            b
                        }
                    })
                    .collect();
                assert_eq!(lookup(&mixed), naive_lookup(&mixed));
            }
            assert_eq!(lookup(&n[..n.len() - 1]), naive_lookup(&n[..n.len() - 1]));
        }
        // Random short strings over the letters of command names and a few others.
        let alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-|\x7f\x00 ";
        for _ in 0..200_000 {
            let len = (next() % 25) as usize;
            let name: Vec<u8> = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            assert_eq!(lookup(&name), naive_lookup(&name), "{:?}", name);
        }
    }

    #[test]
    fn lookup_is_case_insensitive_and_exact() {
        for (i, c) in COMMANDS.iter().enumerate() {
            assert_eq!(lookup(c.name.as_bytes()), Some(i));
            assert_eq!(lookup(c.name.to_ascii_uppercase().as_bytes()), Some(i));
            // A character that folds like one of the name's but is not it.
            if let Some(p) = c.name.find('_') {
                let mut odd = c.name.as_bytes().to_vec();
                odd[p] = 0x7F;
                assert_eq!(lookup(&odd), None, "{}", c.name);
            }
            let mut longer = c.name.as_bytes().to_vec();
            longer.push(b'x');
            assert_ne!(lookup(&longer), Some(i));
        }
        assert_eq!(lookup(b"GeT"), lookup(b"get"));
        assert_eq!(lookup(b"bitfield_RO"), lookup(b"bitfield_ro"));
        assert!(lookup(b"bitfield_ro").is_some());
        assert_eq!(lookup(b""), None);
        assert_eq!(lookup(b"g"), None);
        assert_eq!(lookup(&[b'a'; 40]), None);
        // A byte that folds to a name's character without being it: 0x7F | 0x20 is 0x7F,
        // the fold of '_'.
        assert_eq!(lookup(b"bitfield\x7fro"), None);
    }

    #[test]
    fn flag_bits_agree_with_flag_names() {
        for c in COMMANDS {
            for f in FLAG_BITS {
                assert_eq!(c.has_flag(f), c.flags.contains(&f), "{} {f}", c.name);
            }
            assert_eq!(c.has_flag("fast"), c.flags.contains(&"fast"), "{}", c.name);
        }
    }

    #[test]
    fn table_is_consistent() {
        let mut names = std::collections::HashSet::new();
        for c in COMMANDS {
            assert!(names.insert(c.name), "duplicate {}", c.name);
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(c.arity != 0);
            if let Handler::Keyed { .. } = c.handler {
                assert!(c.first_key > 0, "{} is keyed but has no keys", c.name);
            }
            assert_eq!(
                lookup(c.name.to_ascii_uppercase().as_bytes()),
                Some(names.len() - 1)
            );
        }
    }

    #[test]
    fn one_key_shortcut_agrees_with_the_key_range() {
        let args: Vec<&[u8]> = vec![b"x"; 7];
        for c in COMMANDS.iter().filter(|c| c.key_finder.is_none()) {
            for argc in 1..=args.len() {
                let argv = &args[..argc];
                assert_eq!(
                    c.key_positions(argv),
                    c.key_range(argc),
                    "{} {argc}",
                    c.name
                );
                if c.one_key(argc) {
                    assert!(c.key_range(argc).len() <= 1, "{} {argc}", c.name);
                }
            }
        }
    }

    #[test]
    fn key_positions() {
        let mset = &COMMANDS[lookup(b"mset").unwrap()];
        let argv: Vec<&[u8]> = vec![b"mset", b"a", b"1", b"b", b"2"];
        assert_eq!(mset.key_positions(&argv).to_vec(), vec![1, 3]);
        let get = &COMMANDS[lookup(b"get").unwrap()];
        assert_eq!(get.key_positions(&argv[..2]).to_vec(), vec![1]);
        let del = &COMMANDS[lookup(b"del").unwrap()];
        assert_eq!(del.key_positions(&argv[..4]).to_vec(), vec![1, 2, 3]);
        let z: Vec<&[u8]> = vec![
            b"zunionstore",
            b"d",
            b"2",
            b"a",
            b"b",
            b"weights",
            b"1",
            b"2",
        ];
        assert_eq!(keys_dest_numkeys(&z).to_vec(), vec![1, 3, 4]);
        let huge: Vec<&[u8]> = vec![b"lmpop", b"9223372036854775807", b"a", b"left"];
        assert!(keys_numkeys_at_1(&huge).is_empty(), "no overflow");
        let bad: Vec<&[u8]> = vec![b"zunionstore", b"d", b"5", b"a"];
        assert!(keys_dest_numkeys(&bad).is_empty());
        let m: Vec<&[u8]> = vec![b"blmpop", b"0", b"2", b"a", b"b", b"left"];
        assert_eq!(keys_timeout_numkeys(&m).to_vec(), vec![3, 4]);
        let l: Vec<&[u8]> = vec![b"lmpop", b"1", b"a", b"left"];
        assert_eq!(keys_numkeys_at_1(&l).to_vec(), vec![2]);
    }

    #[test]
    fn integers_as_redis_parses_them() {
        assert_eq!(parse_i64(b"123"), Some(123));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"+1"), None);
        assert_eq!(parse_i64(b" 1"), None);
        assert_eq!(parse_i64(b"01"), None);
        assert_eq!(parse_i64(b"-0"), None);
        assert_eq!(parse_i64(b""), None);
    }
}

#[cfg(test)]
mod keyspec_tests {
    use super::keyspecs;
    use super::COMMANDS;

    /// Every command Skerry has that Redis 8.0 has: the table's first/last/step (dispatch
    /// routes by them) and `movablekeys` agree with the legacy range Redis derives from its
    /// key specs; subcommands too.
    #[test]
    fn command_table_key_positions_agree_with_redis_json() {
        let mut bad = Vec::new();
        let mut checked = 0;
        for c in COMMANDS {
            if let Some(k) = keyspecs::find(c.name) {
                checked += 1;
                let ours = (c.first_key, c.last_key, c.step);
                // Commands whose keys a key finder locates (numkeys) or whose subcommands
                // hold the keys (OBJECT, MEMORY) keep a first key for routing; COMMAND
                // INFO prints Redis's (0, 0, 0) for them.
                let routed = c.key_finder.is_some() || !c.subcommands.is_empty();
                if routed && ![(0, 0, 0), ours].contains(&(k.first, k.last, k.step)) {
                    bad.push(format!(
                        "{}: Redis has a fixed range {:?}",
                        c.name,
                        (k.first, k.last, k.step)
                    ));
                }
                if !routed && ours != (k.first, k.last, k.step) {
                    bad.push(format!(
                        "{}: {ours:?} vs Redis {:?}",
                        c.name,
                        (k.first, k.last, k.step)
                    ));
                }
                if c.flags.contains(&"movablekeys") != k.movable {
                    bad.push(format!(
                        "{}: movablekeys {} vs Redis {}",
                        c.name, !k.movable, k.movable
                    ));
                }
                if c.arity != k.arity {
                    bad.push(format!(
                        "{}: arity {} vs Redis {}",
                        c.name, c.arity, k.arity
                    ));
                }
            }
            for s in c.subcommands {
                if let Some(k) = keyspecs::find(s.name) {
                    if s.arity != k.arity {
                        bad.push(format!(
                            "{}: arity {} vs Redis {}",
                            s.name, s.arity, k.arity
                        ));
                    }
                }
            }
        }
        assert!(
            checked > 150,
            "only {checked} commands found in the key spec table"
        );
        assert!(
            bad.is_empty(),
            "{} disagreements:\n{}",
            bad.len(),
            bad.join("\n")
        );
    }

    #[test]
    fn table_is_sorted_and_complete() {
        assert!(keyspecs::COMMAND_KEYS
            .windows(2)
            .all(|w| w[0].name < w[1].name));
        // Commands other helpers are adding are already there.
        for name in [
            "xadd",
            "xreadgroup",
            "geoadd",
            "pfmerge",
            "hgetex",
            "hexpire",
            "bitfield",
        ] {
            assert!(keyspecs::find(name).is_some(), "{name}");
        }
        assert!(keyspecs::find("object|encoding").is_some());
    }
}
