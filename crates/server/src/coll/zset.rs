//! The sorted-set type: members with scores, ordered by (score, member bytes), as Redis
//! orders them.
//!
//! In memory a [`Zset`] is a member → score map plus the ordered set of (score, member),
//! so member lookups are O(1) and ordered walks and score ranges O(log n + k); ranks are
//! counted by walking (O(rank)).
//!
//! Record value (one compact record, see `docs/storage-format.md`, "Collection values"):
//!
//! ```text
//! flags: u8            bit 0 (FLAG_BIG): outgrew the listpack encoding once (OBJECT ENCODING
//!                      answers "skiplist" from then on)
//! count: LEB128        number of members
//! count times, in ascending (score, member) order:
//!   member: LEB128 length, then the bytes
//!   score:  f64, 8 bytes little-endian (never NaN; -0 kept as is)
//! ```
//!
//! Decoding refuses a NaN score, a repeated member, a count larger than the record and
//! trailing bytes.

use std::collections::BTreeSet;

use super::codec::{find_scored, put_bytes, put_f64, put_varint, Reader};
use super::groups::{part_of_bits, Changes, Grouping, Shadows};
use super::{DecodeError, Thresholds, FLAG_BIG};
use hashbrown::HashMap;

type Scores = HashMap<Vec<u8>, f64, foldhash::fast::RandomState>;

/// Encoded bytes of one member and its score.
#[inline]
fn member_bytes(m: &[u8]) -> isize {
    (m.len() + 9) as isize
}

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

/// A score interval (ZRANGEBYSCORE's `min max`; `(` makes an end exclusive).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreRange {
    /// Lower end.
    pub min: f64,
    /// Upper end.
    pub max: f64,
    /// The lower end is excluded.
    pub minex: bool,
    /// The upper end is excluded.
    pub maxex: bool,
}

impl ScoreRange {
    /// True when no score can be in the range.
    pub fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.minex || self.maxex))
    }

    /// `s` is at or above the lower end.
    pub fn gte_min(&self, s: f64) -> bool {
        if self.minex {
            s > self.min
        } else {
            s >= self.min
        }
    }

    /// `s` is at or below the upper end.
    pub fn lte_max(&self, s: f64) -> bool {
        if self.maxex {
            s < self.max
        } else {
            s <= self.max
        }
    }

    /// `s` is in the range.
    pub fn contains(&self, s: f64) -> bool {
        self.gte_min(s) && self.lte_max(s)
    }
}

/// One end of a lex range: `-` (below everything), `+` (above everything) or a string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LexItem {
    /// `-`.
    Min,
    /// `+`.
    Max,
    /// `[x` or `(x`.
    Str(Vec<u8>),
}

impl LexItem {
    /// Redis's `sdscmplex`: byte order, with `-` below and `+` above every string.
    pub fn cmp_member(&self, m: &[u8]) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        match self {
            LexItem::Min => Less,
            LexItem::Max => Greater,
            LexItem::Str(s) => s[..].cmp(m),
        }
    }
}

/// A lex interval (ZRANGEBYLEX's `min max`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexRange {
    /// Lower end.
    pub min: LexItem,
    /// Upper end.
    pub max: LexItem,
    /// The lower end is excluded.
    pub minex: bool,
    /// The upper end is excluded.
    pub maxex: bool,
}

impl LexRange {
    /// True when no member can be in the range (Redis's `zslIsInLexRange` first test).
    pub fn is_empty(&self) -> bool {
        use std::cmp::Ordering::*;
        let c = match (&self.min, &self.max) {
            (LexItem::Min, LexItem::Min) | (LexItem::Max, LexItem::Max) => Equal,
            (LexItem::Min, _) | (_, LexItem::Max) => Less,
            (LexItem::Max, _) | (_, LexItem::Min) => Greater,
            (LexItem::Str(a), LexItem::Str(b)) => a.cmp(b),
        };
        c == Greater || (c == Equal && (self.minex || self.maxex))
    }

    /// `m` is at or above the lower end.
    pub fn gte_min(&self, m: &[u8]) -> bool {
        let c = self.min.cmp_member(m);
        if self.minex {
            c.is_lt()
        } else {
            c.is_le()
        }
    }

    /// `m` is at or below the upper end.
    pub fn lte_max(&self, m: &[u8]) -> bool {
        let c = self.max.cmp_member(m);
        if self.maxex {
            c.is_gt()
        } else {
            c.is_ge()
        }
    }
}

/// A sorted set.
#[derive(Clone, Debug, Default)]
pub struct Zset {
    /// member → score, by part (one while compact, 2^bits by member hash once grouped).
    parts: Vec<Scores>,
    /// (score, member), in order.
    order: BTreeSet<(Score, Vec<u8>)>,
    /// Outgrown the listpack encoding once (see [`FLAG_BIG`]).
    pub big: bool,
    grouping: Grouping,
    /// While grouped: each part's members and scores as its group record holds them.
    shadow: Shadows,
}

impl PartialEq for Zset {
    fn eq(&self, o: &Self) -> bool {
        self.big == o.big && self.order == o.order
    }
}

impl Zset {
    /// Number of members.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True when there are no members.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The score of `m`.
    pub fn score(&self, m: &[u8]) -> Option<f64> {
        self.parts
            .get(self.grouping.part_of(m))
            .and_then(|p| p.get(m))
            .copied()
    }

    /// Sets `m`'s score (never NaN); true when `m` is new.
    pub fn insert(&mut self, m: &[u8], score: f64) -> bool {
        debug_assert!(!score.is_nan());
        if self.parts.is_empty() {
            self.parts.push(Scores::default());
        }
        let p = self.grouping.part_of(m);
        match self.parts[p].get_mut(m) {
            Some(s) => {
                if *s != score || s.to_bits() != score.to_bits() {
                    let removed = self.order.remove(&(Score(*s), m.to_vec()));
                    debug_assert!(removed);
                    *s = score;
                    self.order.insert((Score(score), m.to_vec()));
                    self.grouping.changed(p, 0);
                    self.shadow.edit(p, |b| match find_scored(b, m) {
                        Some(e) => {
                            b[e.end - 8..e.end].copy_from_slice(&score.to_bits().to_le_bytes());
                            true
                        }
                        None => false,
                    });
                }
                false
            }
            None => {
                self.parts[p].insert(m.to_vec(), score);
                self.order.insert((Score(score), m.to_vec()));
                self.grouping.changed(p, member_bytes(m));
                self.shadow.edit(p, |b| {
                    put_bytes(b, m);
                    put_f64(b, score);
                    true
                });
                true
            }
        }
    }

    /// Removes `m`; true when it was a member.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        let p = self.grouping.part_of(m);
        match self.parts.get_mut(p).and_then(|s| s.remove(m)) {
            Some(s) => {
                let removed = self.order.remove(&(Score(s), m.to_vec()));
                debug_assert!(removed);
                self.grouping.changed(p, -member_bytes(m));
                self.shadow_remove(p, m);
                true
            }
            None => false,
        }
    }

    /// Members and scores in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + Clone {
        self.order.iter().map(|(s, m)| (&m[..], s.0))
    }

    /// The 0-based rank of `m` in ascending order (O(rank)).
    pub fn rank(&self, m: &[u8]) -> Option<usize> {
        let s = self.score(m)?;
        Some(self.order.range(..(Score(s), m.to_vec())).count())
    }

    /// The members whose scores are in `r`, in ascending order (reverse it for descending).
    pub fn score_range(
        &self,
        r: &ScoreRange,
    ) -> Box<dyn DoubleEndedIterator<Item = (&[u8], f64)> + '_> {
        use std::ops::Bound;
        if r.is_empty() || (r.minex && r.min == f64::INFINITY) {
            return Box::new(std::iter::empty());
        }
        if r.maxex && r.max == f64::NEG_INFINITY {
            return Box::new(std::iter::empty());
        }
        // (score, empty member) sorts before every member of that score.
        let lo = if r.minex { r.min.next_up() } else { r.min };
        let start = Bound::Included((Score(lo), Vec::new()));
        let end = if r.maxex {
            Bound::Excluded((Score(r.max), Vec::new()))
        } else if r.max == f64::INFINITY {
            Bound::Unbounded
        } else {
            Bound::Excluded((Score(r.max.next_up()), Vec::new()))
        };
        if let (Bound::Included((a, _)), Bound::Excluded((b, _))) = (&start, &end) {
            if a > b {
                return Box::new(std::iter::empty());
            }
        }
        Box::new(self.order.range((start, end)).map(|(s, m)| (&m[..], s.0)))
    }

    /// The first rank at or after which the members are in `r`, and how many are (walking
    /// the order as Redis's skiplist does: from the first member not below the minimum, while
    /// not above the maximum; meaningful when all scores are equal).
    pub fn lex_span(&self, r: &LexRange) -> (usize, usize) {
        if r.is_empty() {
            return (0, 0);
        }
        match (self.order.first(), self.order.last()) {
            (Some(first), Some(last)) if r.gte_min(&last.1) && r.lte_max(&first.1) => {}
            _ => return (0, 0),
        }
        let mut start = None;
        let mut n = 0;
        for (i, (_, m)) in self.order.iter().enumerate() {
            match start {
                None => {
                    if r.gte_min(m) {
                        if !r.lte_max(m) {
                            return (i, 0);
                        }
                        start = Some(i);
                        n = 1;
                    }
                }
                Some(_) => {
                    if !r.lte_max(m) {
                        break;
                    }
                    n += 1;
                }
            }
        }
        (start.unwrap_or(0), n)
    }

    /// Like [`Zset::lex_span`] but walking down from the last member not above the maximum
    /// (ZREVRANGEBYLEX): the rank of the highest member in the span and the count.
    pub fn lex_span_rev(&self, r: &LexRange) -> (usize, usize) {
        if r.is_empty() {
            return (0, 0);
        }
        match (self.order.first(), self.order.last()) {
            (Some(first), Some(last)) if r.gte_min(&last.1) && r.lte_max(&first.1) => {}
            _ => return (0, 0),
        }
        let len = self.order.len();
        let mut start = None;
        let mut n = 0;
        for (i, (_, m)) in self.order.iter().rev().enumerate() {
            let rank = len - 1 - i;
            match start {
                None => {
                    if r.lte_max(m) {
                        if !r.gte_min(m) {
                            return (rank, 0);
                        }
                        start = Some(rank);
                        n = 1;
                    }
                }
                Some(_) => {
                    if !r.gte_min(m) {
                        break;
                    }
                    n += 1;
                }
            }
        }
        (start.unwrap_or(0), n)
    }

    /// Turns the scores -0 into 0, as a listpack stores them (an integral score is kept as
    /// an integer there, so its sign is lost); a skiplist keeps -0.
    pub fn unsign_zeros(&mut self) {
        let negative: Vec<Vec<u8>> = self
            .order
            .range((Score(0.0), Vec::new())..)
            .take_while(|(s, _)| s.0 == 0.0)
            .filter(|(s, _)| s.0.is_sign_negative())
            .map(|(_, m)| m.clone())
            .collect();
        for m in negative {
            self.insert(&m, 0.0);
        }
    }

    /// Removes and returns the member with the lowest (`max` false) or highest score.
    pub fn pop(&mut self, max: bool) -> Option<(Vec<u8>, f64)> {
        let (s, m) = if max {
            self.order.pop_last()?
        } else {
            self.order.pop_first()?
        };
        let p = self.grouping.part_of(&m);
        self.parts[p].remove(&m);
        self.grouping.changed(p, -member_bytes(&m));
        self.shadow_remove(p, &m);
        Some((m, s.0))
    }

    fn shadow_remove(&mut self, p: usize, m: &[u8]) {
        self.shadow
            .edit(p, |b| find_scored(b, m).map(|e| b.drain(e)).is_some());
    }

    /// Approximate RAM bytes.
    pub fn ram_bytes(&self) -> usize {
        // O(1): from the encoded-size estimate (the cache asks at every write), plus the
        // shadow of a grouped zset.
        let shadow = if self.grouping.is_grouped() {
            self.grouping.total_bytes()
        } else {
            0
        };
        64 + self.parts.len() * 64
            + 2 * self.grouping.total_bytes()
            + shadow
            + self.order.len() * 96
    }

    /// Appends the record value: the whole zset (members in order, each with its score)
    /// while compact, the root once grouped.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let big = if self.big { FLAG_BIG } else { 0 };
        if self.grouping.is_grouped() {
            out.push(big | super::FLAG_GROUPED);
            out.push(self.grouping.bits());
            return;
        }
        out.push(big);
        put_varint(out, self.order.len() as u64);
        for (s, m) in &self.order {
            put_bytes(out, m);
            put_f64(out, s.0);
        }
    }

    /// Appends the record value of group `g` (grouped only): its members, each with its
    /// score, in no particular order.
    pub fn encode_group(&self, g: u64, out: &mut Vec<u8>) {
        let p = &self.parts[g as usize];
        if let Some(_b) = self.shadow.get(g as usize) {
            self.shadow.write_group(g as usize, p.len(), out);
            #[cfg(debug_assertions)]
            {
                let mut r = Reader::new(_b);
                let mut n = 0;
                while r.pos() < _b.len() {
                    let m = r.bytes().expect("shadow member");
                    let s = r.f64().expect("shadow score");
                    assert_eq!(
                        p.get(m).map(|x| x.to_bits()),
                        Some(s.to_bits()),
                        "shadow of {g}"
                    );
                    n += 1;
                }
                assert_eq!(n, p.len(), "shadow of part {g}");
            }
            return;
        }
        out.push(0);
        put_varint(out, p.len() as u64);
        for (m, s) in p {
            put_bytes(out, m);
            put_f64(out, *s);
        }
    }

    fn decode_part(
        &mut self,
        r: &mut Reader<'_>,
        part: Option<usize>,
    ) -> Result<usize, DecodeError> {
        let n = r.count(9)?;
        let mut bytes = 0;
        for _ in 0..n {
            let m = r.bytes()?;
            let s = r.f64()?;
            if part.is_some_and(|want| want != self.grouping.part_of(m)) {
                return Err(DecodeError("zset member in the wrong group".into()));
            }
            if s.is_nan() || !self.insert(m, s) {
                return Err(DecodeError("bad or duplicate zset member".into()));
            }
            bytes += member_bytes(m) as usize;
        }
        r.finish()?;
        Ok(bytes)
    }

    /// Decodes a compact record value.
    pub fn decode(bytes: &[u8]) -> Result<Zset, DecodeError> {
        let mut r = Reader::new(bytes);
        let big = r.byte()? & FLAG_BIG != 0;
        let mut z = Zset {
            big,
            parts: vec![Scores::default()],
            ..Default::default()
        };
        let b = z.decode_part(&mut r, None)?;
        z.grouping = Grouping::stored(false, 0, vec![b]);
        Ok(z)
    }

    /// Decodes a grouped zset: its root record value and its groups (id, value) in id
    /// order.
    pub fn decode_grouped(root: &[u8], groups: &[(u64, &[u8])]) -> Result<Zset, DecodeError> {
        let mut r = Reader::new(root);
        let flags = r.byte()?;
        if flags != FLAG_BIG | super::FLAG_GROUPED {
            return Err(DecodeError(format!(
                "unknown grouped zset flags {flags:#x}"
            )));
        }
        let bits = r.byte()?;
        r.finish()?;
        let ids: Vec<u64> = groups.iter().map(|(g, _)| *g).collect();
        super::groups::check_hashed_groups(bits, &ids)?;
        let mut z = Zset {
            big: true,
            parts: vec![Scores::default(); 1 << bits],
            grouping: Grouping::stored(true, bits, vec![0; 1 << bits]),
            ..Default::default()
        };
        let mut sizes = Vec::with_capacity(z.parts.len());
        let mut shadow = Shadows::with_capacity(z.parts.len());
        for (g, v) in groups {
            let mut r = Reader::new(v);
            if r.byte()? != 0 {
                return Err(DecodeError("unknown zset group flags".into()));
            }
            shadow.push_stored(v)?;
            sizes.push(z.decode_part(&mut r, Some(*g as usize))?);
        }
        z.grouping = Grouping::stored(true, bits, sizes);
        z.shadow = shadow;
        Ok(z)
    }

    /// Re-plans the layout for groups of about `group_bytes`.
    pub fn plan_layout(&mut self, group_bytes: usize) {
        let (grouped, bits) = match self.grouping.plan(group_bytes, self.big) {
            None => (false, 0),
            Some(b) => (true, b),
        };
        if grouped == self.grouping.is_grouped() && bits == self.grouping.bits() {
            return;
        }
        let mut parts = vec![Scores::default(); 1 << bits];
        let mut sizes = vec![0usize; parts.len()];
        for p in std::mem::take(&mut self.parts) {
            for (m, s) in p {
                let i = part_of_bits(bits, &m);
                sizes[i] += member_bytes(&m) as usize;
                parts[i].insert(m, s);
            }
        }
        self.shadow = Shadows::for_layout(grouped, parts.len());
        self.parts = parts;
        self.grouping.relayout(grouped, bits, sizes);
    }

    /// The layout's state.
    pub fn grouping(&self) -> &Grouping {
        &self.grouping
    }

    /// What to write since the last call (building the shadows of the groups to write).
    pub fn take_changes(&mut self) -> Changes {
        let c = self.grouping.take_changes();
        let (grouping, parts) = (&self.grouping, &self.parts);
        self.shadow.fill(
            &c.groups,
            |g| grouping.part_bytes(g),
            |g, b| {
                for (m, s) in &parts[g] {
                    put_bytes(b, m);
                    put_f64(b, *s);
                }
            },
        );
        c
    }

    /// Sets the sticky big flag when the zset no longer fits Redis's listpack limits.
    pub fn note_encoding(&mut self, t: &Thresholds) {
        if !self.big
            && (self.order.len() > t.zset_max_listpack_entries
                || self
                    .order
                    .iter()
                    .any(|(_, m)| m.len() > t.zset_max_listpack_value))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn zset(items: &[(&str, f64)]) -> Zset {
        let mut z = Zset::default();
        for (m, s) in items {
            z.insert(m.as_bytes(), *s);
        }
        z
    }

    fn members<'a>(it: impl Iterator<Item = (&'a [u8], f64)>) -> Vec<String> {
        it.map(|(m, _)| String::from_utf8(m.to_vec()).unwrap())
            .collect()
    }

    fn range(min: f64, minex: bool, max: f64, maxex: bool) -> ScoreRange {
        ScoreRange {
            min,
            max,
            minex,
            maxex,
        }
    }

    #[test]
    fn order_rank_and_updates() {
        let mut z = zset(&[("b", 2.0), ("a", 2.0), ("c", 1.0), ("d", f64::INFINITY)]);
        assert_eq!(members(z.iter()), ["c", "a", "b", "d"]);
        assert_eq!(z.rank(b"c"), Some(0));
        assert_eq!(z.rank(b"b"), Some(2));
        assert_eq!(z.rank(b"x"), None);
        assert!(!z.insert(b"c", 3.0));
        assert_eq!(members(z.iter()), ["a", "b", "c", "d"]);
        assert_eq!(z.len(), 4);
        assert!(z.remove(b"a"));
        assert!(!z.remove(b"a"));
        assert_eq!(z.pop(false), Some((b"b".to_vec(), 2.0)));
        assert_eq!(z.pop(true), Some((b"d".to_vec(), f64::INFINITY)));
        assert_eq!(z.len(), 1);
        assert_eq!(
            z.parts.iter().map(|p| p.len()).sum::<usize>(),
            z.order.len()
        );
    }

    #[test]
    fn score_ranges() {
        let z = zset(&[
            ("ninf", f64::NEG_INFINITY),
            ("a", 1.0),
            ("b", 2.0),
            ("b2", 2.0),
            ("c", 3.0),
            ("pinf", f64::INFINITY),
        ]);
        let q = |r: ScoreRange| members(z.score_range(&r));
        assert_eq!(q(range(1.0, false, 2.0, false)), ["a", "b", "b2"]);
        assert_eq!(q(range(1.0, true, 3.0, true)), ["b", "b2"]);
        assert_eq!(q(range(2.0, false, 2.0, false)), ["b", "b2"]);
        assert!(q(range(2.0, true, 2.0, false)).is_empty());
        assert!(q(range(3.0, false, 2.0, false)).is_empty());
        assert_eq!(
            q(range(f64::NEG_INFINITY, false, 1.0, false)),
            ["ninf", "a"]
        );
        assert_eq!(q(range(f64::NEG_INFINITY, true, 1.0, false)), ["a"]);
        assert_eq!(
            q(range(f64::INFINITY, false, f64::INFINITY, false)),
            ["pinf"]
        );
        assert!(q(range(f64::INFINITY, true, f64::INFINITY, false)).is_empty());
        assert!(q(range(f64::NEG_INFINITY, false, f64::NEG_INFINITY, true)).is_empty());
        assert_eq!(
            members(z.score_range(&range(1.0, false, 3.0, true)).rev()),
            ["b2", "b", "a"]
        );
        // -0 and 0 are one score.
        let z0 = zset(&[("n", -0.0), ("p", 1.0)]);
        assert_eq!(
            members(z0.score_range(&range(0.0, false, 0.0, false))),
            ["n"]
        );
        assert_eq!(
            members(z0.score_range(&range(-0.0, true, 1.0, false))),
            ["p"]
        );
    }

    #[test]
    fn lex_spans() {
        let z = zset(&[("a", 0.0), ("b", 0.0), ("c", 0.0), ("d", 0.0)]);
        let lex = |min: LexItem, minex: bool, max: LexItem, maxex: bool| LexRange {
            min,
            max,
            minex,
            maxex,
        };
        let s = |v: &str| LexItem::Str(v.as_bytes().to_vec());
        assert_eq!(
            z.lex_span(&lex(LexItem::Min, true, LexItem::Max, true)),
            (0, 4)
        );
        assert_eq!(z.lex_span(&lex(s("b"), false, s("c"), false)), (1, 2));
        assert_eq!(z.lex_span(&lex(s("b"), true, s("d"), true)), (2, 1));
        assert_eq!(z.lex_span(&lex(s("x"), false, LexItem::Max, true)).1, 0);
        assert_eq!(
            z.lex_span(&lex(LexItem::Max, true, LexItem::Min, true)).1,
            0
        );
        assert_eq!(z.lex_span(&lex(s("c"), true, s("c"), false)).1, 0);
        assert_eq!(z.lex_span_rev(&lex(s("b"), false, s("c"), false)), (2, 2));
        assert_eq!(
            z.lex_span_rev(&lex(LexItem::Min, true, s("a"), false)),
            (0, 1)
        );
    }

    #[test]
    fn negative_zeros_become_zeros() {
        let mut z = zset(&[("a", -0.0), ("b", -0.0), ("c", 0.0), ("d", -1.0)]);
        z.unsign_zeros();
        assert!(z.iter().all(|(_, s)| !(s == 0.0 && s.is_sign_negative())));
        assert_eq!(members(z.iter()), ["d", "a", "b", "c"]);
        assert_eq!(z.score(b"a").map(f64::to_bits), Some(0.0f64.to_bits()));
    }

    #[test]
    fn codec_round_trips_and_refuses_damage() {
        let mut z = zset(&[("m", 1.5), ("", -0.0), ("x", f64::NEG_INFINITY)]);
        z.big = true;
        let mut out = Vec::new();
        z.encode(&mut out);
        let back = Zset::decode(&out).unwrap();
        assert_eq!(back, z);
        assert!(back.big);
        assert_eq!(back.score(b"").map(f64::to_bits), Some((-0.0f64).to_bits()));
        for cut in 0..out.len() {
            assert!(Zset::decode(&out[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = out.clone();
        longer.push(0);
        assert!(Zset::decode(&longer).is_err());
        // A NaN score and a repeated member are refused.
        let mut nan = Vec::new();
        zset(&[("a", 1.0)]).encode(&mut nan);
        let n = nan.len();
        nan[n - 8..].copy_from_slice(&f64::NAN.to_bits().to_le_bytes());
        assert!(Zset::decode(&nan).is_err());
        let dup = [
            0u8, 2, 1, b'a', 0, 0, 0, 0, 0, 0, 0, 0, 1, b'a', 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        assert!(Zset::decode(&dup).is_err());
    }

    #[test]
    fn encoding_flag_follows_the_thresholds_and_sticks() {
        let t = Thresholds {
            zset_max_listpack_entries: 2,
            zset_max_listpack_value: 3,
            ..Thresholds::default()
        };
        let mut z = zset(&[("a", 1.0), ("b", 2.0)]);
        z.note_encoding(&t);
        assert_eq!(z.encoding_name(), "listpack");
        z.insert(b"c", 3.0);
        z.note_encoding(&t);
        assert_eq!(z.encoding_name(), "skiplist");
        z.remove(b"c");
        z.note_encoding(&t);
        assert_eq!(z.encoding_name(), "skiplist");
        let mut long = zset(&[("abcd", 1.0)]);
        long.note_encoding(&t);
        assert!(long.big);
    }
}
