//! The list type: elements in order, cheap at both ends.
//!
//! Record value (the collection record of a `VALUE_TYPE_LIST` key):
//!
//! ```text
//! flags: u8            always 0 (Redis 7.0 names every list "quicklist", so no FLAG_BIG)
//! count: varint        number of elements (a stored list is never empty)
//! count × element:     varint length, then the bytes, head first
//! ```

use std::collections::VecDeque;

use super::codec::{put_bytes, put_varint, Reader};
use super::DecodeError;

/// A list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct List {
    /// The elements, head first.
    pub items: VecDeque<Vec<u8>>,
}

/// Which end of a list (Redis's `LIST_HEAD` / `LIST_TAIL`, `LEFT` / `RIGHT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The head (LEFT).
    Head,
    /// The tail (RIGHT).
    Tail,
}

impl List {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds an element at the head.
    pub fn push_front(&mut self, v: Vec<u8>) {
        self.items.push_front(v);
    }

    /// Adds an element at the tail.
    pub fn push_back(&mut self, v: Vec<u8>) {
        self.items.push_back(v);
    }

    /// Adds an element at `end`.
    pub fn push(&mut self, end: End, v: Vec<u8>) {
        match end {
            End::Head => self.items.push_front(v),
            End::Tail => self.items.push_back(v),
        }
    }

    /// Removes the element at `end`.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        match end {
            End::Head => self.items.pop_front(),
            End::Tail => self.items.pop_back(),
        }
    }

    /// Removes up to `count` elements from `end`, in the order they were popped (so from
    /// the tail the last element comes first, as Redis replies).
    pub fn pop_many(&mut self, end: End, count: usize) -> Vec<Vec<u8>> {
        let n = count.min(self.items.len());
        match end {
            End::Head => self.items.drain(..n).collect(),
            End::Tail => {
                let at = self.items.len() - n;
                let mut v: Vec<Vec<u8>> = self.items.drain(at..).collect();
                v.reverse();
                v
            }
        }
    }

    /// The position a Redis index (negative counts from the tail) stands for, if in range.
    pub fn position(&self, index: i64) -> Option<usize> {
        let len = self.items.len() as i64;
        let i = if index < 0 {
            len.checked_add(index)?
        } else {
            index
        };
        (0..len).contains(&i).then_some(i as usize)
    }

    /// The element at Redis index `index`.
    pub fn get(&self, index: i64) -> Option<&[u8]> {
        self.position(index).map(|i| &self.items[i][..])
    }

    /// The inclusive position range `start..=stop` (Redis indexes, negative from the tail)
    /// covers, clamped to the list, as LRANGE and LTRIM read it; None when empty.
    pub fn range(&self, start: i64, stop: i64) -> Option<(usize, usize)> {
        let len = self.items.len() as i64;
        let mut start = if start < 0 {
            start.saturating_add(len)
        } else {
            start
        };
        let mut stop = if stop < 0 {
            stop.saturating_add(len)
        } else {
            stop
        };
        if start < 0 {
            start = 0;
        }
        if start > stop || start >= len {
            return None;
        }
        if stop >= len {
            stop = len - 1;
        }
        Some((start as usize, stop as usize))
    }

    /// Keeps only the elements in `start..=stop` (see [`List::range`]); returns how many
    /// were removed.
    pub fn trim(&mut self, start: i64, stop: i64) -> usize {
        let before = self.items.len();
        match self.range(start, stop) {
            None => self.items.clear(),
            Some((s, e)) => {
                self.items.truncate(e + 1);
                self.items.drain(..s);
            }
        }
        before - self.items.len()
    }

    /// Inserts `v` before (`after` false) or after the first element equal to `pivot`;
    /// false when there is no such element.
    pub fn insert_at_pivot(&mut self, pivot: &[u8], after: bool, v: Vec<u8>) -> bool {
        match self.items.iter().position(|e| e[..] == *pivot) {
            Some(i) => {
                self.items.insert(i + usize::from(after), v);
                true
            }
            None => false,
        }
    }

    /// Removes elements equal to `v`: the first `count` from the head (count > 0), the
    /// last `-count` from the tail (count < 0), or all (0). Returns how many.
    pub fn remove(&mut self, v: &[u8], count: i64) -> usize {
        let limit = if count == 0 {
            usize::MAX
        } else {
            count.unsigned_abs().min(usize::MAX as u64) as usize
        };
        let mut removed = 0;
        if count >= 0 {
            let mut kept = VecDeque::with_capacity(self.items.len());
            for e in self.items.drain(..) {
                if removed < limit && e[..] == *v {
                    removed += 1;
                } else {
                    kept.push_back(e);
                }
            }
            self.items = kept;
        } else {
            let mut kept = VecDeque::with_capacity(self.items.len());
            for e in self.items.drain(..).rev() {
                if removed < limit && e[..] == *v {
                    removed += 1;
                } else {
                    kept.push_front(e);
                }
            }
            self.items = kept;
        }
        removed
    }

    /// LPOS: the positions of the elements equal to `v`, starting with the `rank`th match
    /// (negative: counting from the tail, searching towards the head), at most `count` of
    /// them (0 = all), looking at no more than `maxlen` elements (0 = all).
    pub fn positions(&self, v: &[u8], rank: i64, count: usize, maxlen: usize) -> Vec<usize> {
        let len = self.items.len();
        let skip = rank.unsigned_abs().saturating_sub(1);
        let scan = if maxlen == 0 { len } else { maxlen.min(len) };
        let mut out = Vec::new();
        let mut matches: u64 = 0;
        for step in 0..scan {
            let i = if rank < 0 { len - 1 - step } else { step };
            if self.items[i][..] == *v {
                matches += 1;
                if matches > skip {
                    out.push(i);
                    if count != 0 && out.len() >= count {
                        break;
                    }
                }
            }
        }
        out
    }

    /// Approximate RAM bytes.
    pub fn ram_bytes(&self) -> usize {
        64 + self.items.iter().map(|v| v.capacity() + 24).sum::<usize>()
    }

    /// Appends the record value.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.reserve(1 + 10 + self.items.iter().map(|v| v.len() + 5).sum::<usize>());
        out.push(0);
        put_varint(out, self.items.len() as u64);
        for v in &self.items {
            put_bytes(out, v);
        }
    }

    /// Decodes a record value.
    pub fn decode(bytes: &[u8]) -> Result<List, DecodeError> {
        let mut r = Reader::new(bytes);
        r.byte()?;
        let n = r.count(1)?;
        let mut items = VecDeque::with_capacity(n);
        for _ in 0..n {
            items.push_back(r.bytes()?.to_vec());
        }
        r.finish()?;
        Ok(List { items })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> List {
        List {
            items: items.iter().map(|s| s.as_bytes().to_vec()).collect(),
        }
    }

    fn strs(l: &List) -> Vec<String> {
        l.items
            .iter()
            .map(|v| String::from_utf8(v.clone()).unwrap())
            .collect()
    }

    #[test]
    fn round_trip_and_damage() {
        let mut l = list(&["a", "", "ccc"]);
        l.push_back(vec![0, 255, 10]);
        let mut out = Vec::new();
        l.encode(&mut out);
        assert_eq!(List::decode(&out).unwrap(), l);
        for cut in 0..out.len() {
            assert!(List::decode(&out[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = out.clone();
        longer.push(1);
        assert!(List::decode(&longer).is_err());
        // A count larger than the bytes can hold is refused before allocating.
        assert!(List::decode(&[0, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
    }

    #[test]
    fn indexes_and_ranges_as_redis() {
        let l = list(&["a", "b", "c", "d"]);
        assert_eq!(l.get(0), Some(&b"a"[..]));
        assert_eq!(l.get(-1), Some(&b"d"[..]));
        assert_eq!(l.get(-4), Some(&b"a"[..]));
        assert_eq!(l.get(-5), None);
        assert_eq!(l.get(4), None);
        assert_eq!(l.get(i64::MIN), None);
        assert_eq!(l.get(i64::MAX), None);
        assert_eq!(l.range(0, -1), Some((0, 3)));
        assert_eq!(l.range(-100, 100), Some((0, 3)));
        assert_eq!(l.range(1, 2), Some((1, 2)));
        assert_eq!(l.range(2, 1), None);
        assert_eq!(l.range(4, 10), None);
        assert_eq!(l.range(0, -5), None);
        assert_eq!(l.range(i64::MIN, i64::MAX), Some((0, 3)));
        assert_eq!(l.range(i64::MAX, i64::MIN), None);
    }

    #[test]
    fn trim_insert_remove() {
        let mut l = list(&["a", "b", "c", "d", "e"]);
        assert_eq!(l.trim(1, -2), 2);
        assert_eq!(strs(&l), ["b", "c", "d"]);
        assert_eq!(l.trim(5, 10), 3);
        assert!(l.is_empty());

        let mut l = list(&["a", "b", "a"]);
        assert!(l.insert_at_pivot(b"a", true, b"x".to_vec()));
        assert!(l.insert_at_pivot(b"b", false, b"y".to_vec()));
        assert!(!l.insert_at_pivot(b"zz", false, b"y".to_vec()));
        assert_eq!(strs(&l), ["a", "x", "y", "b", "a"]);

        let mut l = list(&["x", "a", "x", "b", "x", "x"]);
        assert_eq!(l.remove(b"x", -2), 2);
        assert_eq!(strs(&l), ["x", "a", "x", "b"]);
        assert_eq!(l.remove(b"x", 1), 1);
        assert_eq!(strs(&l), ["a", "x", "b"]);
        assert_eq!(l.remove(b"x", 0), 1);
        assert_eq!(l.remove(b"nope", 0), 0);
        assert_eq!(strs(&l), ["a", "b"]);
    }

    #[test]
    fn pops_and_positions() {
        let mut l = list(&["a", "b", "c", "d", "e"]);
        assert_eq!(l.pop_many(End::Tail, 2), vec![b"e".to_vec(), b"d".to_vec()]);
        assert_eq!(l.pop_many(End::Head, 2), vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(l.pop_many(End::Head, 10), vec![b"c".to_vec()]);
        assert!(l.pop(End::Tail).is_none());

        let l = list(&["a", "b", "c", "1", "2", "3", "c", "c"]);
        assert_eq!(l.positions(b"c", 1, 1, 0), vec![2]);
        assert_eq!(l.positions(b"c", 2, 1, 0), vec![6]);
        assert_eq!(l.positions(b"c", -1, 1, 0), vec![7]);
        assert_eq!(l.positions(b"c", -1, 0, 0), vec![7, 6, 2]);
        assert_eq!(l.positions(b"c", 1, 0, 3), vec![2]);
        assert_eq!(l.positions(b"c", 1, 0, 2), Vec::<usize>::new());
        assert_eq!(l.positions(b"c", i64::MIN, 0, 0), Vec::<usize>::new());
        assert_eq!(l.positions(b"c", 2, 2, 0), vec![6, 7]);
    }
}
