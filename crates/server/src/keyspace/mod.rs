//! The per-worker keyspace: the interface every keyed command uses (get, put with expiry
//! options, delete, exists, TTL metadata, scan cursor). One `Keyspace` per worker holds the
//! worker's keys for every database; nothing else touches it.
//!
//! Today values are held in RAM; the storage engine replaces the value storage behind this
//! same interface (see `docs/decisions/0001-keyspace-interface.md`).

pub mod table;

use table::{hash_key, Keyed, SegTable};

/// The value of a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A string.
    Str(Vec<u8>),
}

impl Value {
    /// The name TYPE prints.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
        }
    }
}

/// What a write does to the key's expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// No expiry (clears an existing one).
    Persist,
    /// Keep the existing expiry, if any.
    Keep,
    /// Expire at this absolute Unix time in milliseconds.
    At(i64),
}

/// Keys up to this many bytes live inside the entry (no pointer to follow on lookup).
const INLINE_KEY_BYTES: usize = 16;

impl Expiry {
    /// The expiry an entry's `expire_at_ms` stands for (0: none), to carry a TTL to a copy.
    pub fn of_entry_ms(expire_at_ms: i64) -> Expiry {
        if expire_at_ms == 0 {
            Expiry::Persist
        } else {
            Expiry::At(expire_at_ms)
        }
    }
}

/// One key.
#[derive(Debug)]
pub struct Entry {
    hash: u64,
    key: smallvec::SmallVec<[u8; INLINE_KEY_BYTES]>,
    /// The value.
    pub value: Value,
    /// Absolute expiry in Unix milliseconds; 0 = none.
    pub expire_at_ms: i64,
}

impl Entry {
    /// The key.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    fn expired(&self, now_ms: i64) -> bool {
        self.expire_at_ms != 0 && self.expire_at_ms <= now_ms
    }
}

impl Keyed for Entry {
    fn key(&self) -> &[u8] {
        &self.key
    }
    fn hash(&self) -> u64 {
        self.hash
    }
}

#[derive(Default)]
struct Db {
    table: SegTable<Entry>,
    /// Keys with an expiry.
    volatile: usize,
    /// Where active expiry continues (a scan position).
    expire_cursor: u64,
}

/// Counters kept by the keyspace.
#[derive(Default, Debug, Clone, Copy)]
pub struct KeyspaceStats {
    /// Lookups that found a key.
    pub hits: u64,
    /// Lookups that found nothing.
    pub misses: u64,
    /// Keys removed because their time ran out.
    pub expired: u64,
}

/// The keys one worker owns, in every database.
pub struct Keyspace {
    dbs: Vec<Db>,
    /// Hit, miss and expiry counters.
    pub stats: KeyspaceStats,
    /// The worker's log on the data devices (`appendonly yes`): every change is appended
    /// before it is applied.
    log: Option<std::rc::Rc<skerry_store::Writer>>,
    /// Set when an append failed (the change was not applied); the dispatcher turns it into
    /// the command's error reply.
    write_error: Option<String>,
    /// Something was appended since the last [`Keyspace::take_wrote`].
    wrote: bool,
}

impl Keyspace {
    /// An empty keyspace with `databases` databases.
    pub fn new(databases: usize) -> Self {
        Keyspace {
            dbs: (0..databases).map(|_| Db::default()).collect(),
            stats: KeyspaceStats::default(),
            log: None,
            write_error: None,
            wrote: false,
        }
    }

    /// Appends every later change to `log` (see [`crate::persist`]).
    pub fn attach_log(&mut self, log: std::rc::Rc<skerry_store::Writer>) {
        self.log = Some(log);
    }

    /// The worker's log, if persistence is on.
    pub fn log(&self) -> Option<&std::rc::Rc<skerry_store::Writer>> {
        self.log.as_ref()
    }

    /// The error of a failed append since the last call (the change was not applied).
    pub fn take_write_error(&mut self) -> Option<String> {
        self.write_error.take()
    }

    /// True when something was appended since the last call.
    pub fn take_wrote(&mut self) -> bool {
        std::mem::take(&mut self.wrote)
    }

    /// Appends a value (`Some`) or tombstone (`None`) record; false (and the error kept for
    /// the reply) when the append failed. Without a log, always true.
    fn append(&mut self, db: usize, key: &[u8], value: Option<(&[u8], i64)>) -> bool {
        let Some(log) = &self.log else { return true };
        if self.write_error.is_some() {
            return false;
        }
        use skerry_store::format::RecordKind;
        let rk = crate::persist::record_key(db, key);
        let seq = log.next_seq();
        let result = match value {
            Some((v, expire_at_ms)) => log.append(
                crate::persist::meta(RecordKind::Value, seq, expire_at_ms),
                &rk,
                v,
            ),
            None => log.append(
                crate::persist::meta(RecordKind::Tombstone, seq, 0),
                &rk,
                &[],
            ),
        };
        match result {
            Ok(_) => {
                self.wrote = true;
                true
            }
            Err(e) => {
                tracing::warn!("write refused: {e}");
                self.write_error = Some(e.to_string());
                false
            }
        }
    }

    /// Inserts a key read back from the data file (not logged again).
    pub fn load(&mut self, db: usize, key: &[u8], value: Value, expire_at_ms: i64) {
        let d = &mut self.dbs[db];
        if expire_at_ms != 0 {
            d.volatile += 1;
        }
        let replaced = d.table.insert(Entry {
            hash: hash_key(key),
            key: smallvec::SmallVec::from_slice(key),
            value,
            expire_at_ms,
        });
        debug_assert!(replaced.is_none(), "recovery yields each key once");
    }

    /// Number of databases.
    pub fn databases(&self) -> usize {
        self.dbs.len()
    }

    /// Removes `key` if its time has run out; true when it was removed.
    fn expire_if_due(&mut self, db: usize, hash: u64, key: &[u8], now_ms: i64) -> bool {
        let d = &mut self.dbs[db];
        let due = d.table.get(hash, key).is_some_and(|e| e.expired(now_ms));
        if due {
            d.table.remove(hash, key);
            d.volatile -= 1;
            self.stats.expired += 1;
        }
        due
    }

    /// The live entry for `key`, counting a hit or a miss.
    pub fn get(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<&Entry> {
        let hash = hash_key(key);
        self.expire_if_due(db, hash, key, now_ms);
        let found = self.dbs[db].table.get(hash, key);
        if found.is_some() {
            self.stats.hits += 1;
        } else {
            self.stats.misses += 1;
        }
        found
    }

    /// The live entry for `key`, without touching hit/miss counters (for writes that read).
    pub fn peek(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<&Entry> {
        let hash = hash_key(key);
        self.expire_if_due(db, hash, key, now_ms);
        self.dbs[db].table.get(hash, key)
    }

    /// True when `key` exists and has not expired.
    pub fn exists(&mut self, db: usize, key: &[u8], now_ms: i64) -> bool {
        self.peek(db, key, now_ms).is_some()
    }

    /// Stores `value` under `key`, with `expiry` deciding the key's TTL. Returns the previous
    /// live value, if any.
    pub fn put(
        &mut self,
        db: usize,
        key: &[u8],
        value: Value,
        expiry: Expiry,
        now_ms: i64,
    ) -> Option<Value> {
        let hash = hash_key(key);
        self.expire_if_due(db, hash, key, now_ms);
        if self.log.is_some() {
            let kept = self.dbs[db]
                .table
                .get(hash, key)
                .map_or(0, |e| e.expire_at_ms);
            let at = match expiry {
                Expiry::Persist => 0,
                Expiry::Keep => kept,
                Expiry::At(t) => t,
            };
            let Value::Str(bytes) = &value;
            if !self.append(db, key, Some((bytes, at))) {
                return None;
            }
        }
        let d = &mut self.dbs[db];
        if let Some(e) = d.table.get_mut(hash, key) {
            let was_volatile = e.expire_at_ms != 0;
            match expiry {
                Expiry::Persist => e.expire_at_ms = 0,
                Expiry::At(t) => e.expire_at_ms = t,
                Expiry::Keep => {}
            }
            let now_volatile = e.expire_at_ms != 0;
            let old = std::mem::replace(&mut e.value, value);
            match (was_volatile, now_volatile) {
                (false, true) => d.volatile += 1,
                (true, false) => d.volatile -= 1,
                _ => {}
            }
            return Some(old);
        }
        let expire_at_ms = match expiry {
            Expiry::At(t) => t,
            _ => 0,
        };
        if expire_at_ms != 0 {
            d.volatile += 1;
        }
        d.table.insert(Entry {
            hash,
            key: smallvec::SmallVec::from_slice(key),
            value,
            expire_at_ms,
        });
        None
    }

    /// Removes `key`; true when a live key was removed.
    pub fn delete(&mut self, db: usize, key: &[u8], now_ms: i64) -> bool {
        let hash = hash_key(key);
        if self.expire_if_due(db, hash, key, now_ms) {
            return false;
        }
        if self.log.is_some()
            && self.dbs[db].table.get(hash, key).is_some()
            && !self.append(db, key, None)
        {
            return false;
        }
        let d = &mut self.dbs[db];
        match d.table.remove(hash, key) {
            Some(e) => {
                if e.expire_at_ms != 0 {
                    d.volatile -= 1;
                }
                true
            }
            None => false,
        }
    }

    /// Sets or clears the expiry of an existing key; false when the key does not exist.
    pub fn set_expiry(&mut self, db: usize, key: &[u8], expire_at_ms: i64, now_ms: i64) -> bool {
        let hash = hash_key(key);
        self.expire_if_due(db, hash, key, now_ms);
        if self.log.is_some() {
            let Some(Value::Str(v)) = self.dbs[db].table.get(hash, key).map(|e| e.value.clone())
            else {
                return false;
            };
            if !self.append(db, key, Some((&v, expire_at_ms))) {
                return false;
            }
        }
        let d = &mut self.dbs[db];
        match d.table.get_mut(hash, key) {
            Some(e) => {
                match (e.expire_at_ms != 0, expire_at_ms != 0) {
                    (false, true) => d.volatile += 1,
                    (true, false) => d.volatile -= 1,
                    _ => {}
                }
                e.expire_at_ms = expire_at_ms;
                true
            }
            None => false,
        }
    }

    /// Number of keys in `db` (including keys whose time ran out but were not yet removed,
    /// as Redis's DBSIZE does).
    pub fn len(&self, db: usize) -> usize {
        self.dbs[db].table.len()
    }

    /// True when `db` holds no keys.
    pub fn is_empty(&self, db: usize) -> bool {
        self.dbs[db].table.is_empty()
    }

    /// Number of keys with an expiry in `db`.
    pub fn volatile_len(&self, db: usize) -> usize {
        self.dbs[db].volatile
    }

    /// Sum of remaining TTLs over volatile keys of `db` (for INFO's avg_ttl).
    pub fn avg_ttl_ms(&self, db: usize, now_ms: i64) -> i64 {
        let mut sum: i64 = 0;
        let mut n: i64 = 0;
        self.dbs[db].table.for_each(|e| {
            if e.expire_at_ms != 0 {
                sum += (e.expire_at_ms - now_ms).max(0);
                n += 1;
            }
        });
        if n == 0 {
            0
        } else {
            sum / n
        }
    }

    /// Removes every key of `db`; returns how many there were.
    pub fn flush(&mut self, db: usize) -> usize {
        if self.log.is_some() {
            // One tombstone per key; a key whose tombstone could not be written stays.
            let mut keys: Vec<Vec<u8>> = Vec::with_capacity(self.dbs[db].table.len());
            self.dbs[db].table.for_each(|e| keys.push(e.key.to_vec()));
            let n = keys.len();
            for k in keys {
                if !self.append(db, &k, None) {
                    return n - self.dbs[db].table.len();
                }
                let d = &mut self.dbs[db];
                if let Some(e) = d.table.remove(hash_key(&k), &k) {
                    if e.expire_at_ms != 0 {
                        d.volatile -= 1;
                    }
                }
            }
            self.dbs[db].expire_cursor = 0;
            return n;
        }
        let d = &mut self.dbs[db];
        let n = d.table.len();
        d.table.clear();
        d.volatile = 0;
        d.expire_cursor = 0;
        n
    }

    /// One step of active expiry: in every database holding keys with a TTL, examines about
    /// `chunk` keys from where the previous step stopped and removes those whose time ran
    /// out. Returns (keys examined, keys removed, true when every such database finished a
    /// full pass over its keys in this step).
    pub fn active_expire_step(&mut self, now_ms: i64, chunk: usize) -> (usize, usize, bool) {
        let (mut examined, mut removed, mut all_wrapped) = (0, 0, true);
        for d in &mut self.dbs {
            if d.volatile == 0 {
                d.expire_cursor = 0;
                continue;
            }
            let mut due: Vec<(u64, Vec<u8>)> = Vec::new();
            let next = d.table.scan(d.expire_cursor, chunk, |e| {
                examined += 1;
                if e.expired(now_ms) {
                    due.push((e.hash, e.key.to_vec()));
                }
            });
            match next {
                Some(p) => {
                    d.expire_cursor = p;
                    all_wrapped = false;
                }
                None => d.expire_cursor = 0,
            }
            for (hash, key) in due {
                if d.table.remove(hash, &key).is_some() {
                    d.volatile -= 1;
                    removed += 1;
                }
            }
        }
        self.stats.expired += removed as u64;
        (examined, removed, all_wrapped)
    }

    /// Live keys of `db` (expired ones are removed on the way).
    pub fn keys(&mut self, db: usize, now_ms: i64, mut f: impl FnMut(&Entry)) {
        let d = &mut self.dbs[db];
        let mut expired = 0;
        d.table.retain(|e| {
            if e.expired(now_ms) {
                expired += 1;
                false
            } else {
                true
            }
        });
        d.volatile -= expired as usize;
        self.stats.expired += expired;
        d.table.for_each(|e| f(e));
    }

    /// One SCAN step over `db` from `position` (see [`SegTable::scan`]); expired keys are
    /// skipped. Returns the next position, `None` when done.
    pub fn scan(
        &mut self,
        db: usize,
        position: u64,
        count: usize,
        now_ms: i64,
        mut f: impl FnMut(&Entry),
    ) -> Option<u64> {
        self.dbs[db].table.scan(position, count, |e| {
            if !e.expired(now_ms) {
                f(e)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_fits_a_cache_line() {
        assert!(std::mem::size_of::<Entry>() <= 64);
    }

    fn s(v: &str) -> Value {
        Value::Str(v.as_bytes().to_vec())
    }

    #[test]
    fn put_get_delete_and_expiry() {
        let mut ks = Keyspace::new(16);
        assert!(ks.put(0, b"a", s("1"), Expiry::Persist, 1000).is_none());
        assert_eq!(ks.get(0, b"a", 1000).unwrap().value, s("1"));
        assert!(ks.get(1, b"a", 1000).is_none(), "databases are separate");
        ks.put(0, b"t", s("x"), Expiry::At(2000), 1000);
        assert_eq!(ks.volatile_len(0), 1);
        assert!(ks.exists(0, b"t", 1999));
        assert!(!ks.exists(0, b"t", 2000), "expired key is never returned");
        assert_eq!(ks.volatile_len(0), 0);
        ks.put(0, b"a", s("2"), Expiry::At(5000), 1000);
        ks.put(0, b"a", s("3"), Expiry::Keep, 1000);
        assert_eq!(ks.get(0, b"a", 1000).unwrap().expire_at_ms, 5000);
        ks.put(0, b"a", s("4"), Expiry::Persist, 1000);
        assert_eq!(ks.get(0, b"a", 1000).unwrap().expire_at_ms, 0);
        assert!(ks.delete(0, b"a", 1000));
        assert!(!ks.delete(0, b"a", 1000));
        assert_eq!(ks.len(0), 0);
    }

    #[test]
    fn active_expiry_removes_only_due_keys() {
        let mut ks = Keyspace::new(2);
        for i in 0..20_000 {
            let expiry = if i % 2 == 0 {
                Expiry::At(1500)
            } else {
                Expiry::Persist
            };
            ks.put(i % 2, format!("k{i}").as_bytes(), s("v"), expiry, 1000);
        }
        ks.put(0, b"later", s("v"), Expiry::At(9000), 1000);
        let mut removed = 0;
        loop {
            let (_, r, done) = ks.active_expire_step(2000, 1000);
            removed += r;
            if done {
                break;
            }
        }
        assert_eq!(removed, 10_000);
        assert_eq!(ks.len(0), 1);
        assert_eq!(ks.len(1), 10_000);
        assert_eq!(ks.volatile_len(0), 1);
        assert!(ks.exists(0, b"later", 2000));
    }
}
