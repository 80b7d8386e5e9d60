//! Write-behind of one hot collection for a few milliseconds (decision 0035).
//!
//! A command that changes a collection (LPUSH, XADD, HSET, ...) used to append the changed
//! part at once: a pipeline of 16 LPUSHes to one list rewrote its head page (up to 8 KiB)
//! 16 times, and 50 clients adding to one stream re-encoded and checksummed its tail page
//! for every entry. Now the changed collection may stay in RAM, *behind* its record, while
//! more commands change the same key; it is written once, a few milliseconds later or as
//! soon as anything else looks at the keyspace.
//!
//! The rules that keep this invisible:
//! - **Only the command path knows.** A worker reaches its keyspace through [`Guarded`],
//!   whose every mutable access writes the collection left behind first. Only
//!   `conn::exec_keyed` takes the keyspace unguarded, for a command marked
//!   `Handler::Keyed { behind: true }` on the key left behind (or with none left behind).
//!   Every other command, job, timer, checkpoint, defrag step, transaction and script sees
//!   a keyspace whose index and records are exactly as if the write had happened.
//! - **Only audited handlers leave a write behind.** They take their one key's collection
//!   with `take_coll` and always hand it back with `put_coll` or `keep_coll`: a handler
//!   that dropped it would lose the changes left behind ([`Keyspace::behind_dropped`] reports
//!   that as a bug).
//! - **Only when nothing can refuse the write later**: not under `appendfsync always`
//!   (whose replies wait for the record anyway), not while the data devices are short of
//!   room, not for a new key (it needs its index entry now), a key with a time to live
//!   (it could expire while its change waits), a lent key, or a hash with field expiry;
//!   not inside MULTI, scripts or a multi-worker step (they run through other paths and
//!   write at once).
//! - **Not for long**: the worker writes it at most 10 ms after the first change left
//!   behind (`worker::WRITE_BEHIND_DELAY`), earlier when anything else needs the keyspace.
//! - **What a write does at once still happens at once**: WATCH invalidation, waking
//!   blocked clients, the dirty counter. The record follows with the time of the command
//!   that left it behind, so its expiry check is the command's.

use std::ops::{Deref, DerefMut};

use super::{CollError, Expiry, Keyspace};
use crate::coll::Coll;

/// The collection left behind: its key and its latest version.
pub(super) struct Behind {
    db: usize,
    key: Vec<u8>,
    /// None while a command handler holds it (taken, not yet handed back).
    coll: Option<Coll>,
    /// Time of the last command that changed it (Unix ms).
    now_ms: i64,
}

/// Write-behind is on unless `SKERRY_WRITE_BEHIND=off` (for A/B measurements and for
/// checking that the tests notice its absence).
fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("SKERRY_WRITE_BEHIND").map_or(true, |v| v != "off"))
}

thread_local! {
    /// The worker task that writes the collection left behind (see
    /// `crate::worker`): set while it waits.
    static FLUSHER: std::cell::Cell<Option<std::task::Waker>> = const { std::cell::Cell::new(None) };
}

/// Parks the calling task (the worker's flusher) until a collection is left behind.
pub fn park_flusher(waker: std::task::Waker) {
    FLUSHER.with(|f| f.set(Some(waker)));
}

fn wake_flusher() {
    if let Some(w) = FLUSHER.with(|f| f.take()) {
        w.wake();
    }
}

impl Keyspace {
    /// Lets (or stops letting) the running command leave its collection behind: set by
    /// `conn::exec_keyed` around a `behind` handler only.
    pub fn allow_behind(&mut self, on: bool) {
        self.behind_allowed = on && enabled();
    }

    /// A collection is left behind.
    #[inline]
    pub fn has_behind(&self) -> bool {
        self.behind.is_some()
    }

    /// The collection left behind is `key`'s (in `db`).
    #[inline]
    pub fn holds_behind(&self, db: usize, key: &[u8]) -> bool {
        self.behind
            .as_ref()
            .is_some_and(|b| b.db == db && b.key == key)
    }

    /// The collection left behind under `key`, if it is that key's and no handler holds it.
    pub(super) fn behind_ref(&self, db: usize, key: &[u8]) -> Option<&Coll> {
        self.behind
            .as_ref()
            .filter(|b| b.db == db && b.key == key)
            .and_then(|b| b.coll.as_ref())
    }

    /// Whether `key`'s collection is the one left behind (and no handler holds it): then
    /// checks that it is a `value_type` collection and counts the access (its clock), as
    /// the lookup of a key whose collection is in the cache does.
    pub(super) fn check_behind(
        &mut self,
        db: usize,
        key: &[u8],
        value_type: u8,
        now_ms: i64,
    ) -> Result<bool, CollError> {
        let Some(t) = self.behind_ref(db, key).map(Coll::value_type) else {
            return Ok(false);
        };
        if t != value_type {
            return Err(CollError::WrongType);
        }
        let hash = super::table::hash_key(key);
        let live = self.live_loc_typed(db, hash, key, now_ms).is_some();
        debug_assert!(live, "a key left behind has no time to live");
        Ok(true)
    }

    /// Takes the collection left behind under `key` for a handler to change; it must come
    /// back through [`Keyspace::put_coll`] or [`Keyspace::keep_coll`].
    pub(super) fn take_behind(&mut self, db: usize, key: &[u8]) -> Option<Coll> {
        self.behind
            .as_mut()
            .filter(|b| b.db == db && b.key == key)
            .and_then(|b| b.coll.take())
    }

    /// Hands back, unchanged, a collection taken with [`Keyspace::take_behind`]; gives it
    /// back when `key` is not the one left behind.
    pub(super) fn keep_behind(&mut self, db: usize, key: &[u8], coll: Coll) -> Option<Coll> {
        match self.behind.as_mut() {
            Some(b) if b.db == db && b.key == key && b.coll.is_none() => {
                b.coll = Some(coll);
                None
            }
            _ => Some(coll),
        }
    }

    /// Forgets the collection left behind under `key` (held by a handler that writes or
    /// deletes the key itself now).
    pub(super) fn forget_behind(&mut self, db: usize, key: &[u8]) {
        if self.holds_behind(db, key) {
            self.behind = None;
        }
    }

    /// Leaves `coll`, the new version of `key`, behind when the rules allow (see the
    /// module documentation); gives it back otherwise, for the caller to write at once.
    pub(super) fn leave_behind(
        &mut self,
        db: usize,
        key: &[u8],
        coll: Coll,
        now_ms: i64,
    ) -> Option<Coll> {
        let held = self.holds_behind(db, key);
        if !self.behind_allowed
            || self.cmd_depth != 1
            || self.cmd_records != 0
            || self.error.is_some()
            || self.lent.is_some()
            || (self.behind.is_some() && !held)
            || self.log.durability() == skerry_store::Durability::Always
            || self.log.store().space_low()
            || matches!(&coll, Coll::Hash(h) if h.ttl_enabled())
        {
            return Some(coll);
        }
        if !held {
            // An existing live key of the same type and with no time to live (so that it
            // cannot expire while its change waits), with no write of its own pending: its
            // index entry and groups stay as they are until the write. (While it is behind,
            // nothing but the commands that may leave it behind can give it a time to live.)
            // (A quiet lookup: the command's own lookup counted its access.)
            let hash = super::table::hash_key(key);
            match self.dbs[db].table.get(hash, key) {
                Some(e) if e.expire_at_ms() == 0 && e.value_type() == coll.value_type() => {}
                _ => return Some(coll),
            }
        }
        if !self.watched.is_empty() {
            self.mark_ready(db, key);
        }
        self.touch(db, key);
        match self.behind.as_mut() {
            Some(b) => {
                b.coll = Some(coll);
                b.now_ms = now_ms;
            }
            None => {
                self.behind = Some(Behind {
                    db,
                    key: key.to_vec(),
                    coll: Some(coll),
                    now_ms,
                });
                wake_flusher();
            }
        }
        None
    }

    /// True when a handler took the collection left behind and did not hand it back (a
    /// bug: its changes, and those left behind before it, are lost). Forgets it then, so that
    /// the key answers from its last record.
    pub fn behind_dropped(&mut self) -> bool {
        if self.behind.as_ref().is_some_and(|b| b.coll.is_none()) {
            let b = self.behind.take().expect("checked");
            tracing::error!(
                db = b.db,
                "a command dropped the collection left behind for it; the key keeps its last written version"
            );
            return true;
        }
        false
    }

    /// Writes the collection left behind, if any (as `put_coll` would have when its last
    /// command ran).
    pub fn write_behind(&mut self) {
        let Some(b) = self.behind.take() else {
            return;
        };
        debug_assert_eq!(self.cmd_depth, 0, "write-behind inside a command");
        let Some(coll) = b.coll else {
            debug_assert!(false, "the collection left behind is held by no command");
            tracing::error!("the collection left behind was lost");
            return;
        };
        // The commands counted their changes and their accesses (dirty counter, access
        // clock) when they ran: the write counts neither again.
        let dirty = self.stats.dirty;
        let touch = std::mem::replace(&mut self.touch, false);
        let kept_error = self.error.take();
        let ok = self.store_coll(b.db, &b.key, coll, Expiry::Keep, b.now_ms);
        self.stats.dirty = dirty;
        self.touch = touch;
        if !ok {
            let e = self.error.take().unwrap_or_default();
            tracing::error!(
                db = b.db,
                "the write of a collection left behind failed: {e}"
            );
        }
        self.error = kept_error;
    }
}

/// A worker's keyspace as the worker reaches it: a mutable access first writes the
/// collection its commands left behind ([`Keyspace::write_behind`]), so that nothing but
/// the command path that knows ([`Guarded::unguarded`]) sees a write outstanding. A shared
/// access does not: the `&self` methods read counters and handles, not keys.
pub struct Guarded(Keyspace);

impl Guarded {
    /// Wraps a keyspace.
    pub fn new(ks: Keyspace) -> Self {
        Guarded(ks)
    }

    /// The keyspace without writing what was left behind: for `conn::exec_keyed` only.
    #[inline]
    pub fn unguarded(&mut self) -> &mut Keyspace {
        &mut self.0
    }
}

impl Deref for Guarded {
    type Target = Keyspace;

    #[inline]
    fn deref(&self) -> &Keyspace {
        &self.0
    }
}

impl DerefMut for Guarded {
    #[inline]
    fn deref_mut(&mut self) -> &mut Keyspace {
        if self.0.behind.is_some() {
            self.0.write_behind();
        }
        &mut self.0
    }
}
