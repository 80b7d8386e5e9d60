//! Keys lent to a command whose keys live on several workers (SMOVE, LMOVE, SINTERSTORE,
//! ZUNIONSTORE, ... across workers).
//!
//! The connection holds every owner (a [`crate::worker::Txn`]), takes each key's value from
//! its owner, lends them all to one keyspace for the handler, and gives every changed key
//! back to its owner afterwards (see `conn::cross_keyed`). While keys are lent, the
//! keyspace answers the collection API (`coll`, `take_coll`, `put_coll`, `delete`, `exists`,
//! `meta`, `peek`) for them from here and records changes here instead of in its log; the
//! handler cannot tell the difference. Lending and taking back happen in one synchronous
//! section, so no other command ever sees lent keys.

use hashbrown::HashMap;

use super::{Expiry, Got, Value};
use crate::coll::Coll;

/// A lent key's value.
#[derive(Clone, Debug)]
pub enum LentData {
    /// A string.
    Str(Vec<u8>),
    /// A decoded collection.
    Coll(Coll),
}

/// A lent key's value and expiry.
#[derive(Clone, Debug)]
pub struct LentValue {
    /// The value.
    pub data: LentData,
    /// Absolute expiry in Unix ms; 0 = none.
    pub expire_at_ms: i64,
}

impl LentValue {
    /// The value type byte.
    pub fn value_type(&self) -> u8 {
        match &self.data {
            LentData::Str(_) => skerry_store::format::VALUE_TYPE_STRING,
            LentData::Coll(c) => c.value_type(),
        }
    }

    /// The value as the keyspace hands values around.
    pub fn to_got(&self) -> Got {
        let value = match &self.data {
            LentData::Str(v) => Value::Str(v.clone()),
            LentData::Coll(c) => {
                let mut encoded = Vec::new();
                c.encode_compact(&mut encoded);
                Value::Coll {
                    value_type: c.value_type(),
                    encoded,
                }
            }
        };
        Got {
            value,
            expire_at_ms: self.expire_at_ms,
        }
    }
}

struct Slot {
    value: Option<LentValue>,
    dirty: bool,
}

/// The keys lent to the running command.
#[derive(Default)]
pub struct Lent {
    slots: HashMap<(usize, Vec<u8>), Slot>,
}

impl Lent {
    /// Lends `items` (key and value as its owner had it; None: no such key) of `db`.
    pub fn new(db: usize, items: Vec<(Vec<u8>, Option<Got>)>) -> Result<Lent, String> {
        let mut slots = HashMap::new();
        for (key, got) in items {
            let value = match got {
                None => None,
                Some(Got {
                    value,
                    expire_at_ms,
                }) => {
                    let data = match value {
                        Value::Str(v) => LentData::Str(v),
                        Value::Coll {
                            value_type,
                            encoded,
                        } => LentData::Coll(
                            Coll::decode(value_type, &encoded).map_err(|e| e.to_string())?,
                        ),
                    };
                    Some(LentValue { data, expire_at_ms })
                }
            };
            slots.insert(
                (db, key),
                Slot {
                    value,
                    dirty: false,
                },
            );
        }
        Ok(Lent { slots })
    }

    /// True when `key` of `db` is lent.
    pub fn has(&self, db: usize, key: &[u8]) -> bool {
        self.slots.contains_key(&(db, key.to_vec()))
    }

    /// The lent value of `key` (None: lent as missing).
    pub fn get(&self, db: usize, key: &[u8], now_ms: i64) -> Option<&LentValue> {
        self.slots
            .get(&(db, key.to_vec()))
            .and_then(|s| s.value.as_ref())
            .filter(|v| v.expire_at_ms == 0 || v.expire_at_ms > now_ms)
    }

    /// Sets the value of lent `key` (None: deleted) with `expiry`.
    pub fn set(&mut self, db: usize, key: &[u8], data: Option<LentData>, expiry: Expiry) {
        let slot = self
            .slots
            .get_mut(&(db, key.to_vec()))
            .expect("only lent keys are set");
        let expire_at_ms = match (&slot.value, expiry) {
            (Some(v), Expiry::Keep) => v.expire_at_ms,
            (_, Expiry::At(t)) => t,
            _ => 0,
        };
        slot.value = data.map(|data| LentValue { data, expire_at_ms });
        slot.dirty = true;
    }

    /// The changed keys, with their new values (None: delete).
    pub fn into_changes(self) -> Vec<(Vec<u8>, Option<Got>)> {
        self.slots
            .into_iter()
            .filter(|(_, s)| s.dirty)
            .map(|((_, k), s)| (k, s.value.map(|v| v.to_got())))
            .collect()
    }
}
