//! The sorted-set type: members with scores, ordered by (score, member).

use std::collections::BTreeSet;

use super::codec::{put_bytes, put_f64, put_varint, Reader};
use super::{DecodeError, Thresholds, FLAG_BIG};
use hashbrown::HashMap;

/// A score with the total order Redis uses (scores are never NaN; -0.0 equals 0.0).
#[derive(Clone, Copy, Debug)]
pub struct Score(pub f64);

impl PartialEq for Score {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl Eq for Score {}
impl PartialOrd for Score {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Score {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.partial_cmp(&o.0).expect("scores are never NaN")
    }
}

/// A sorted set.
#[derive(Clone, Debug, Default)]
pub struct Zset {
    /// member → score.
    pub scores: HashMap<Vec<u8>, f64, foldhash::fast::RandomState>,
    /// (score, member), in order.
    pub order: BTreeSet<(Score, Vec<u8>)>,
    /// Outgrown the listpack encoding once (see [`FLAG_BIG`]).
    pub big: bool,
}

impl PartialEq for Zset {
    fn eq(&self, o: &Self) -> bool {
        self.big == o.big && self.order == o.order
    }
}

impl Zset {
    /// Number of members.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// True when there are no members.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The score of `m`.
    pub fn score(&self, m: &[u8]) -> Option<f64> {
        self.scores.get(m).copied()
    }

    /// Sets `m`'s score (never NaN); true when `m` is new.
    pub fn insert(&mut self, m: &[u8], score: f64) -> bool {
        debug_assert!(!score.is_nan());
        match self.scores.get_mut(m) {
            Some(s) => {
                if *s != score || s.to_bits() != score.to_bits() {
                    let removed = self.order.remove(&(Score(*s), m.to_vec()));
                    debug_assert!(removed);
                    *s = score;
                    self.order.insert((Score(score), m.to_vec()));
                }
                false
            }
            None => {
                self.scores.insert(m.to_vec(), score);
                self.order.insert((Score(score), m.to_vec()));
                true
            }
        }
    }

    /// Removes `m`; true when it was a member.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match self.scores.remove(m) {
            Some(s) => {
                let removed = self.order.remove(&(Score(s), m.to_vec()));
                debug_assert!(removed);
                true
            }
            None => false,
        }
    }

    /// Members and scores in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> {
        self.order.iter().map(|(s, m)| (&m[..], s.0))
    }

    /// Approximate RAM bytes.
    pub fn ram_bytes(&self) -> usize {
        64 + self
            .scores
            .keys()
            .map(|m| 2 * m.capacity() + 96)
            .sum::<usize>()
    }

    /// Appends the record value (members in order, each with its score).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(if self.big { FLAG_BIG } else { 0 });
        put_varint(out, self.order.len() as u64);
        for (s, m) in &self.order {
            put_bytes(out, m);
            put_f64(out, s.0);
        }
    }

    /// Decodes a record value.
    pub fn decode(bytes: &[u8]) -> Result<Zset, DecodeError> {
        let mut r = Reader::new(bytes);
        let big = r.byte()? & FLAG_BIG != 0;
        let n = r.count(9)?;
        let mut z = Zset {
            big,
            ..Default::default()
        };
        z.scores.reserve(n);
        for _ in 0..n {
            let m = r.bytes()?;
            let s = r.f64()?;
            if s.is_nan() || !z.insert(m, s) {
                return Err(DecodeError("bad or duplicate zset member".into()));
            }
        }
        r.finish()?;
        Ok(z)
    }

    /// Sets the sticky big flag when the zset no longer fits Redis's listpack limits.
    pub fn note_encoding(&mut self, t: &Thresholds) {
        if !self.big
            && (self.scores.len() > t.zset_max_listpack_entries
                || self
                    .scores
                    .keys()
                    .any(|m| m.len() > t.zset_max_listpack_value))
        {
            self.big = true;
        }
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding_name(&self) -> &'static str {
        if self.big {
            "skiplist"
        } else {
            "listpack"
        }
    }
}
