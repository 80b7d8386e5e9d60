//! Property tests of the grouped form, below the keyspace: random changes to each type with
//! writes in between, each write storing what [`Coll::take_changes`] reports exactly as
//! the keyspace does (changed groups, the root when it changed, dropping groups that are
//! gone). After every write the stored root and groups must decode to the collection, and
//! the stored root must equal the root the collection would write now (so a root change
//! is never missed).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use proptest::prelude::*;

use super::hash::Hash;
use super::list::{End, List};
use super::set::Set;
use super::zset::Zset;
use super::Coll;

/// What the device holds for one collection.
#[derive(Default)]
struct Stored {
    root: Vec<u8>,
    groups: BTreeMap<u64, Vec<u8>>,
}

impl Stored {
    /// Stores `c` as `Keyspace::store_coll` does and checks the stored form decodes to it.
    fn write(&mut self, c: &mut Coll, group_bytes: usize) {
        c.plan_layout(group_bytes);
        let changes = c.take_changes();
        let ids = c.group_ids();
        if !c.is_grouped() {
            self.root.clear();
            c.encode(&mut self.root);
            self.groups.clear();
        } else {
            if changes.root || self.root.is_empty() {
                self.root.clear();
                c.encode(&mut self.root);
            }
            for g in &changes.groups {
                let mut v = Vec::new();
                c.encode_group(*g, &mut v);
                self.groups.insert(*g, v);
            }
            if changes.layout {
                self.groups.retain(|g, _| ids.binary_search(g).is_ok());
            }
            let mut now = Vec::new();
            c.encode(&mut now);
            assert_eq!(self.root, now, "a root change was not reported");
            let stored_ids: Vec<u64> = self.groups.keys().copied().collect();
            assert_eq!(stored_ids, ids, "stored groups differ from the layout");
        }
        let back = self.read(c.value_type());
        assert_eq!(
            &back, c,
            "the stored form does not decode to the collection"
        );
    }

    fn read(&self, value_type: u8) -> Coll {
        if !super::is_grouped_root(&self.root) {
            return Coll::decode(value_type, &self.root).expect("compact decodes");
        }
        let groups: Vec<(u64, &[u8])> = self.groups.iter().map(|(g, v)| (*g, &v[..])).collect();
        Coll::decode_grouped(value_type, &self.root, &groups).expect("grouped decodes")
    }
}

fn member(k: u16) -> Vec<u8> {
    format!("member:{k}").into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn grouped_hashes_store_exactly_what_they_hold(
        ops in prop::collection::vec((0u8..4, 0u16..300, 0usize..80), 1..600),
        group_bytes in 64usize..700,
        every in 1usize..20,
    ) {
        let mut c = Coll::Hash(Hash::default());
        c.as_hash_mut().big = true;
        let mut model = BTreeMap::new();
        let mut stored = Stored::default();
        for (i, (op, k, n)) in ops.into_iter().enumerate() {
            let h = c.as_hash_mut();
            let f = member(k);
            if op < 3 {
                let v = vec![b'v'; n];
                prop_assert_eq!(h.insert(&f, &v), model.insert(f, v).is_none());
            } else {
                prop_assert_eq!(h.remove(&f), model.remove(&f).is_some());
            }
            if i % every == 0 && !c.is_empty() {
                stored.write(&mut c, group_bytes);
            }
            prop_assert_eq!(c.len(), model.len());
        }
        let h = c.as_hash();
        for (f, v) in &model {
            prop_assert_eq!(h.get(f), Some(&v[..]));
        }
    }

    #[test]
    fn grouped_sets_store_exactly_what_they_hold(
        ops in prop::collection::vec((0u8..5, 0u16..400), 1..600),
        group_bytes in 64usize..700,
        every in 1usize..20,
    ) {
        let mut c = Coll::Set(Set::default());
        c.as_set_mut().big = true;
        let mut model = BTreeSet::new();
        let mut stored = Stored::default();
        let mut rng = rand::rng();
        for (i, (op, k)) in ops.into_iter().enumerate() {
            let s = c.as_set_mut();
            let m = member(k);
            match op {
                0 | 1 => prop_assert_eq!(s.insert(&m), model.insert(m)),
                2 => prop_assert_eq!(s.remove(&m), model.remove(&m)),
                3 => {
                    if let Some(p) = s.pop_random(&mut rng) {
                        prop_assert!(model.remove(&p));
                    }
                }
                _ => {
                    s.retain(|m| m.len() % 3 != k as usize % 3);
                    model.retain(|m| m.len() % 3 != k as usize % 3);
                }
            }
            if i % every == 0 && !c.is_empty() {
                stored.write(&mut c, group_bytes);
            }
            let got: BTreeSet<Vec<u8>> = c.as_set().iter().map(|m| m.to_vec()).collect();
            prop_assert_eq!(&got, &model);
        }
    }

    #[test]
    fn grouped_zsets_store_exactly_what_they_hold(
        ops in prop::collection::vec((0u8..4, 0u16..300, -50i32..50), 1..600),
        group_bytes in 64usize..700,
        every in 1usize..20,
    ) {
        let mut c = Coll::Zset(Zset::default());
        c.as_zset_mut().big = true;
        let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
        let mut stored = Stored::default();
        for (i, (op, k, score)) in ops.into_iter().enumerate() {
            let z = c.as_zset_mut();
            let m = member(k);
            match op {
                0 | 1 => prop_assert_eq!(z.insert(&m, f64::from(score)), model.insert(m, f64::from(score)).is_none()),
                2 => prop_assert_eq!(z.remove(&m), model.remove(&m).is_some()),
                _ => {
                    if let Some((m, s)) = z.pop(score > 0) {
                        prop_assert_eq!(model.remove(&m), Some(s));
                    }
                }
            }
            if i % every == 0 && !c.is_empty() {
                stored.write(&mut c, group_bytes);
            }
            prop_assert_eq!(c.len(), model.len());
        }
    }

    #[test]
    fn paged_lists_store_exactly_what_they_hold(
        ops in prop::collection::vec((0u8..9, 0u16..50, 0usize..60), 1..600),
        group_bytes in 64usize..700,
        every in 1usize..20,
    ) {
        let mut c = Coll::List(List::default());
        let mut model: VecDeque<Vec<u8>> = VecDeque::new();
        let mut stored = Stored::default();
        for (i, (op, k, n)) in ops.into_iter().enumerate() {
            let l = c.as_list_mut();
            let v = {
                let mut v = member(k);
                v.extend(std::iter::repeat_n(b'x', n));
                v
            };
            match op {
                0 | 1 => {
                    l.push(End::Head, v.clone());
                    model.push_front(v);
                }
                2 | 3 => {
                    l.push(End::Tail, v.clone());
                    model.push_back(v);
                }
                4 => {
                    let end = if k % 2 == 0 { End::Head } else { End::Tail };
                    let got = l.pop_many(end, n % 7);
                    let want: Vec<Vec<u8>> = (0..(n % 7).min(model.len()))
                        .map(|_| match end {
                            End::Head => model.pop_front().unwrap(),
                            End::Tail => model.pop_back().unwrap(),
                        })
                        .collect();
                    prop_assert_eq!(got, want);
                }
                5 if !model.is_empty() => {
                    let at = n % model.len();
                    l.set(at, v.clone());
                    model[at] = v;
                }
                6 if !model.is_empty() => {
                    let pivot = model[n % model.len()].clone();
                    prop_assert!(l.insert_at_pivot(&pivot, k % 2 == 0, v.clone()));
                    let at = model.iter().position(|e| *e == pivot).unwrap();
                    model.insert(at + usize::from(k % 2 == 0), v);
                }
                7 => {
                    let count = i64::from(k % 5) - 2;
                    let target = member(k % 10);
                    let got = l.remove(&target, count);
                    // The model: the same rule by hand.
                    let mut removed = 0;
                    let limit = if count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
                    let idx: Vec<usize> = if count >= 0 {
                        (0..model.len()).collect()
                    } else {
                        (0..model.len()).rev().collect()
                    };
                    let mut gone = vec![false; model.len()];
                    for j in idx {
                        if removed < limit && model[j] == target {
                            gone[j] = true;
                            removed += 1;
                        }
                    }
                    let mut j = 0;
                    model.retain(|_| {
                        j += 1;
                        !gone[j - 1]
                    });
                    prop_assert_eq!(got, removed);
                }
                _ => {
                    let (a, b) = (i64::from(k % 7) - 2, n as i64 - 30);
                    let len = model.len() as i64;
                    // Redis's LTRIM: a negative index counts from the end; the start is
                    // clamped at 0, the end at the last element.
                    let s = if a < 0 { (a + len).max(0) } else { a };
                    let e = if b < 0 { b + len } else { b }.min(len - 1);
                    l.trim(a, b);
                    if s > e || s >= len {
                        model.clear();
                    } else {
                        model = model.into_iter().skip(s as usize).take((e - s + 1) as usize).collect();
                    }
                }
            }
            prop_assert_eq!(c.as_list().items(), &model);
            if i % every == 0 && !c.is_empty() {
                stored.write(&mut c, group_bytes);
            }
        }
    }
}
