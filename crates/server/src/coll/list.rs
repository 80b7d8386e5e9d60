//! The list type: elements in order, cheap at both ends.
//!
//! Record value (the collection record of a `VALUE_TYPE_LIST` key):
//!
//! ```text
//! flags: u8            FLAG_ENCODING_KEPT, with FLAG_BIG while Redis would keep the
//!                      list as a quicklist (see Encoding below)
//! count: varint        number of elements (a stored list is never empty)
//! count × element:     varint length, then the bytes, head first
//! ```
//!
//! A grouped list's root is `FLAG_GROUPED`, with the two bits above; its pages are
//! compact records with flags 0.
//!
//! **Encoding** (OBJECT ENCODING), as Redis 7.2+ keeps it: a list is a `listpack` until a
//! change would take it past one quicklist node (`list-max-listpack-size`, Redis's `fill`:
//! bytes of the listpack when negative, elements when positive), then a `quicklist` until a
//! removal takes it to half of that (Redis's hysteresis, `listTypeTryConversionRaw`), and
//! a change of `fill` re-encodes nothing until the next change of the list. The state is
//! kept in `FLAG_BIG` under `FLAG_ENCODING_KEPT`; the listpack size is counted as Redis
//! encodes it ([`listpack_entry_bytes`]). Records written before the state was kept (flags
//! 0), and lists built whole (RESTORE, SORT STORE: Redis's `LIST_CONV_AUTO`), read as what
//! their contents say until their first change.

use std::collections::VecDeque;

use super::codec::{put_bytes, put_varint, Reader};
use super::groups::Changes;
use super::{DecodeError, FLAG_BIG, FLAG_GROUPED};

/// Id of the first page of a newly paged list; pages pushed at the head count down from
/// it, at the tail up, [`PAGE_ID_GAP`] apart, so the order of ids is the order of pages.
const FIRST_PAGE_ID: u64 = 1 << 62;
/// Distance between the ids of pages made at the ends (a split takes the middle id).
const PAGE_ID_GAP: u64 = 1 << 24;

/// Encoded bytes of one element (an estimate: a one-byte length prefix).
#[inline]
fn item_bytes(v: &[u8]) -> usize {
    v.len() + 1
}

/// Flag bit of a list record: `FLAG_BIG` holds the list's encoding (see the module doc).
const FLAG_ENCODING_KEPT: u8 = 4;

/// Bytes of a listpack's header and end byte.
const LISTPACK_OVERHEAD_BYTES: usize = 7;
/// Largest listpack of a quicklist node per negative `fill` (Redis's `optimization_level`).
const FILL_LEVEL_BYTES: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
/// A node under a count limit never holds more bytes (Redis's `SIZE_SAFETY_LIMIT`).
const SIZE_SAFETY_LIMIT_BYTES: usize = 8192;

/// Bytes of one listpack entry holding `v` (Redis's `lpEncodeGetType` and back-length).
pub fn listpack_entry_bytes(v: &[u8]) -> usize {
    let int = if v.len() <= 20 && v.first().is_some_and(|c| c.is_ascii_digit() || *c == b'-') {
        crate::commands::parse_i64(v)
    } else {
        None
    };
    let enc = match int {
        Some(n) if (0..=127).contains(&n) => 1,
        Some(n) if (-4096..4096).contains(&n) => 2,
        Some(n) if (-32768..32768).contains(&n) => 3,
        Some(n) if (-8_388_608..8_388_608).contains(&n) => 4,
        Some(n) if (i64::from(i32::MIN)..=i64::from(i32::MAX)).contains(&n) => 5,
        Some(_) => 9,
        None if v.len() <= 63 => 1 + v.len(),
        None if v.len() <= 4095 => 2 + v.len(),
        None => 5 + v.len(),
    };
    let back = match enc {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    };
    enc + back
}

/// The encoding a record's flags keep, if any.
fn kept_encoding(flags: u8) -> Option<bool> {
    (flags & FLAG_ENCODING_KEPT != 0).then_some(flags & FLAG_BIG != 0)
}

/// Redis's node limits for `fill`: (bytes, elements).
fn node_limits(fill: i64) -> (usize, usize) {
    if fill >= 0 {
        (usize::MAX, fill.max(1) as usize)
    } else {
        let level = ((-fill - 1) as usize).min(FILL_LEVEL_BYTES.len() - 1);
        (FILL_LEVEL_BYTES[level], usize::MAX)
    }
}

/// Redis's `quicklistNodeExceedsLimit`: a listpack of `bytes` and `count` elements is past
/// one node.
fn exceeds_node(fill: i64, bytes: usize, count: usize) -> bool {
    let (size_limit, count_limit) = node_limits(fill);
    if size_limit != usize::MAX {
        bytes > size_limit
    } else {
        bytes > SIZE_SAFETY_LIMIT_BYTES || count > count_limit
    }
}

/// One page of a grouped list: `len` consecutive elements stored as one group record.
#[derive(Clone, Debug, PartialEq)]
struct Page {
    id: u64,
    len: usize,
    bytes: usize,
    dirty: bool,
}

/// The pages of a grouped list, head first (their ids ascending).
#[derive(Clone, Debug, PartialEq)]
struct Pages {
    pages: VecDeque<Page>,
    /// Target bytes of a page (`collection-group-bytes`).
    page_bytes: usize,
    /// Ids of the pages that became dirty since the last [`List::take_changes`] (a page
    /// removed since may be among them), so that a push to a list of 100,000 pages does
    /// not look at every page.
    dirty_ids: Vec<u64>,
    /// Ids of the pages removed since the last [`List::take_gone`].
    gone: Vec<u64>,
    /// The pages were cut again since: which stored ids are gone is not known here.
    gone_unknown: bool,
}

impl Pages {
    /// The page holding position `i` and the position of its first element.
    fn locate(&self, mut i: usize) -> (usize, usize) {
        let mut start = 0;
        let last = self.pages.len() - 1;
        for (p, page) in self.pages.iter().enumerate() {
            if i < page.len || p == last {
                return (p, start);
            }
            i -= page.len;
            start += page.len;
        }
        unreachable!("a grouped list has a page")
    }

    fn touch(&mut self, p: usize, add: usize, sub: usize) {
        let page = &mut self.pages[p];
        page.bytes = (page.bytes + add).saturating_sub(sub);
        self.mark(p);
    }

    /// Marks page `p` to be written.
    fn mark(&mut self, p: usize) {
        let page = &mut self.pages[p];
        if !page.dirty {
            page.dirty = true;
            self.dirty_ids.push(page.id);
        }
    }

    /// A new page, to be written.
    fn new_page(&mut self, id: u64, len: usize, bytes: usize) -> Page {
        self.dirty_ids.push(id);
        Page {
            id,
            len,
            bytes,
            dirty: true,
        }
    }

    /// Removes page `p`.
    fn remove(&mut self, p: usize) {
        if let Some(page) = self.pages.remove(p) {
            self.gone.push(page.id);
        }
    }

    /// Where page `id` is.
    fn find(&self, id: u64) -> Option<usize> {
        self.pages.binary_search_by_key(&id, |p| p.id).ok()
    }

    /// The position of the first element of page `p`, counted from the nearer end.
    fn start_of(&self, p: usize, total_len: usize) -> usize {
        if p <= self.pages.len() / 2 {
            self.pages.iter().take(p).map(|p| p.len).sum()
        } else {
            total_len - self.pages.iter().skip(p).map(|p| p.len).sum::<usize>()
        }
    }
}

/// A list.
#[derive(Clone, Debug, Default)]
pub struct List {
    /// The elements, head first.
    items: VecDeque<Vec<u8>>,
    /// Estimated encoded bytes of all elements.
    bytes: usize,
    /// Listpack entry bytes of all elements ([`listpack_entry_bytes`]).
    lp_bytes: usize,
    /// Redis would keep it as a quicklist (see the module doc); None: as its contents
    /// say.
    quicklist: Option<bool>,
    /// Set once the list is stored as pages (grouped).
    pages: Option<Pages>,
    /// The root must be written again (new list, new layout).
    root_dirty: bool,
    /// The layout must be planned again (a page id ran out of room).
    repage: bool,
    /// Pages were added or removed since the last [`List::take_changes`].
    layout: bool,
}

impl PartialEq for List {
    fn eq(&self, o: &List) -> bool {
        self.items == o.items
    }
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
    /// A new (never stored) list of `items`.
    pub fn from_items(items: VecDeque<Vec<u8>>) -> List {
        List {
            bytes: items.iter().map(|v| item_bytes(v)).sum(),
            lp_bytes: items.iter().map(|v| listpack_entry_bytes(v)).sum(),
            quicklist: None,
            items,
            pages: None,
            root_dirty: true,
            repage: false,
            layout: true,
        }
    }

    /// The elements, head first.
    pub fn items(&self) -> &VecDeque<Vec<u8>> {
        &self.items
    }

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
        self.push(End::Head, v);
    }

    /// Adds an element at the tail.
    pub fn push_back(&mut self, v: Vec<u8>) {
        self.push(End::Tail, v);
    }

    /// Adds an element at `end`.
    pub fn push(&mut self, end: End, v: Vec<u8>) {
        let b = item_bytes(&v);
        self.bytes += b;
        self.lp_bytes += listpack_entry_bytes(&v);
        if let Some(pg) = &mut self.pages {
            let p = match end {
                End::Head => 0,
                End::Tail => pg.pages.len() - 1,
            };
            let page = &pg.pages[p];
            if page.len > 0 && page.bytes + b > pg.page_bytes {
                // A new page at this end.
                let id = match end {
                    End::Head => page.id.checked_sub(PAGE_ID_GAP),
                    End::Tail => page.id.checked_add(PAGE_ID_GAP),
                };
                let id = id.unwrap_or_else(|| {
                    self.repage = true;
                    page.id
                });
                let new = pg.new_page(id, 1, b);
                match end {
                    End::Head => pg.pages.push_front(new),
                    End::Tail => pg.pages.push_back(new),
                }
                self.layout = true;
                if self.repage {
                    // Ids collide until the re-paging at the write: keep one page.
                    let total: usize = pg.pages.iter().map(|p| p.len).sum();
                    pg.pages.truncate(1);
                    pg.pages[0].len = total;
                    pg.pages[0].bytes = self.bytes;
                    pg.gone_unknown = true;
                }
            } else {
                pg.pages[p].len += 1;
                pg.touch(p, b, 0);
            }
        }
        match end {
            End::Head => self.items.push_front(v),
            End::Tail => self.items.push_back(v),
        }
    }

    /// Removes the element at `end`.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let v = match end {
            End::Head => self.items.pop_front(),
            End::Tail => self.items.pop_back(),
        }?;
        let b = item_bytes(&v);
        self.bytes -= b;
        self.lp_bytes -= listpack_entry_bytes(&v);
        if let Some(pg) = &mut self.pages {
            let p = match end {
                End::Head => pg.pages.iter().position(|p| p.len > 0),
                End::Tail => pg.pages.iter().rposition(|p| p.len > 0),
            }
            .expect("a page holds the element");
            pg.pages[p].len -= 1;
            pg.touch(p, 0, b);
            if pg.pages[p].len == 0 && pg.pages.len() > 1 {
                pg.remove(p);
                self.layout = true;
            }
        }
        Some(v)
    }

    /// Removes up to `count` elements from `end`, in the order they were popped (so from
    /// the tail the last element comes first, as Redis replies).
    pub fn pop_many(&mut self, end: End, count: usize) -> Vec<Vec<u8>> {
        let n = count.min(self.items.len());
        (0..n).map_while(|_| self.pop(end)).collect()
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

    /// Replaces the element at position `i` (0 ≤ i < len).
    pub fn set(&mut self, i: usize, v: Vec<u8>) {
        let (add, sub) = (item_bytes(&v), item_bytes(&self.items[i]));
        self.bytes = self.bytes + add - sub;
        self.lp_bytes =
            self.lp_bytes + listpack_entry_bytes(&v) - listpack_entry_bytes(&self.items[i]);
        if let Some(pg) = &mut self.pages {
            let (p, _) = pg.locate(i);
            pg.touch(p, add, sub);
        }
        self.items[i] = v;
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
            None => {
                self.pop_many(End::Head, before);
            }
            Some((s, e)) => {
                self.pop_many(End::Tail, before - 1 - e);
                self.pop_many(End::Head, s);
            }
        }
        before - self.items.len()
    }

    /// Inserts `v` before (`after` false) or after the first element equal to `pivot`;
    /// false when there is no such element.
    pub fn insert_at_pivot(&mut self, pivot: &[u8], after: bool, v: Vec<u8>) -> bool {
        let Some(i) = self.items.iter().position(|e| e[..] == *pivot) else {
            return false;
        };
        let at = i + usize::from(after);
        let b = item_bytes(&v);
        self.bytes += b;
        self.lp_bytes += listpack_entry_bytes(&v);
        if let Some(pg) = &mut self.pages {
            // The element joins the page of its left neighbour (or the first page).
            let (p, _) = pg.locate(at.saturating_sub(1));
            pg.pages[p].len += 1;
            pg.touch(p, b, 0);
            if pg.pages[p].bytes > 2 * pg.page_bytes && pg.pages[p].len > 1 {
                self.split_page(p, at);
            }
        }
        self.items.insert(at, v);
        true
    }

    /// Splits page `p` in two halves by element count (an element was just counted into
    /// it at position `at`, not yet inserted into `items`).
    fn split_page(&mut self, p: usize, at: usize) {
        let pg = self.pages.as_mut().expect("paged");
        let id = pg.pages[p].id;
        let next = match pg.pages.get(p + 1) {
            Some(n) => n.id,
            None => id.saturating_add(2 * PAGE_ID_GAP),
        };
        if next - id < 2 {
            self.repage = true;
            return;
        }
        let start: usize = pg.pages.iter().take(p).map(|p| p.len).sum();
        let len = pg.pages[p].len;
        let first = len / 2;
        // Bytes of the first half, from the elements as they will be after the insert.
        let elem = |j: usize| -> usize {
            if j < at {
                item_bytes(&self.items[j])
            } else if j == at {
                0
            } else {
                item_bytes(&self.items[j - 1])
            }
        };
        let first_bytes: usize = (start..start + first).map(elem).sum();
        let second = pg.new_page(
            id + (next - id) / 2,
            len - first,
            pg.pages[p].bytes.saturating_sub(first_bytes),
        );
        let page = &mut pg.pages[p];
        page.len = first;
        page.bytes = first_bytes;
        pg.pages.insert(p + 1, second);
        self.layout = true;
    }

    /// Removes elements equal to `v`: the first `count` from the head (count > 0), the
    /// last `-count` from the tail (count < 0), or all (0). Returns how many.
    pub fn remove(&mut self, v: &[u8], count: i64) -> usize {
        let limit = if count == 0 {
            usize::MAX
        } else {
            count.unsigned_abs().min(usize::MAX as u64) as usize
        };
        let len = self.items.len();
        let mut gone = vec![false; len];
        let mut removed = 0;
        for step in 0..len {
            if removed >= limit {
                break;
            }
            let i = if count < 0 { len - 1 - step } else { step };
            if self.items[i][..] == *v {
                gone[i] = true;
                removed += 1;
            }
        }
        if removed == 0 {
            return 0;
        }
        let freed = removed * item_bytes(v);
        self.bytes -= freed;
        self.lp_bytes -= removed * listpack_entry_bytes(v);
        if let Some(pg) = &mut self.pages {
            let mut start = 0;
            for p in 0..pg.pages.len() {
                let len = pg.pages[p].len;
                let n = gone[start..start + len].iter().filter(|g| **g).count();
                if n > 0 {
                    let page = &mut pg.pages[p];
                    page.len -= n;
                    page.bytes = page.bytes.saturating_sub(n * item_bytes(v));
                    pg.mark(p);
                }
                start += len;
            }
            if pg.pages.iter().any(|p| p.len > 0) && pg.pages.iter().any(|p| p.len == 0) {
                let removed = pg.pages.iter().filter(|p| p.len == 0).map(|p| p.id);
                let removed: Vec<u64> = removed.collect();
                pg.gone.extend(removed);
                pg.pages.retain(|p| p.len > 0);
                self.layout = true;
            }
        }
        let mut i = 0;
        self.items.retain(|_| {
            i += 1;
            !gone[i - 1]
        });
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

    /// Bytes of the list as one listpack.
    fn listpack_bytes(&self) -> usize {
        LISTPACK_OVERHEAD_BYTES + self.lp_bytes
    }

    /// True while Redis would keep the list as a quicklist under `fill`.
    fn is_quicklist(&self, fill: i64) -> bool {
        self.quicklist
            .unwrap_or_else(|| exceeds_node(fill, self.listpack_bytes(), self.len()))
    }

    fn keep_encoding(&mut self, quicklist: bool) {
        if self.quicklist != Some(quicklist) {
            self.quicklist = Some(quicklist);
            self.root_dirty |= self.pages.is_some();
        }
    }

    /// Fixes the encoding a list made from a DUMP payload or an RDB file starts with, as
    /// Redis's `rdbLoadObject` leaves it: a quicklist unless it fits one listpack node
    /// (from then on it converts as any list does).
    pub fn settle_encoding(&mut self, fill: i64) {
        let quicklist = exceeds_node(fill, self.listpack_bytes(), self.len());
        self.keep_encoding(quicklist);
    }

    /// OBJECT ENCODING under `list-max-listpack-size` `fill`.
    pub fn encoding(&self, fill: i64) -> &'static str {
        if self.is_quicklist(fill) {
            "quicklist"
        } else {
            "listpack"
        }
    }

    /// Before adding `add_count` elements of `add_bytes` bytes (their lengths, as Redis
    /// counts them; LSET counts its new element too): a listpack that would pass one node
    /// becomes a quicklist (Redis's `LIST_CONV_GROWING`).
    pub fn before_growth(&mut self, fill: i64, add_bytes: usize, add_count: usize) {
        let now = self.is_quicklist(fill)
            || exceeds_node(
                fill,
                self.listpack_bytes() + add_bytes,
                self.len() + add_count,
            );
        self.keep_encoding(now);
    }

    /// After removing elements: a quicklist that fits in half a node becomes a listpack
    /// again (Redis's `LIST_CONV_SHRINKING`; Redis also needs its one node, which a list
    /// this small has unless its removals left two half-empty nodes).
    pub fn after_shrink(&mut self, fill: i64) {
        let mut quicklist = self.is_quicklist(fill);
        if quicklist {
            let (size_limit, count_limit) = node_limits(fill);
            let bytes = self.listpack_bytes();
            let one_node = !exceeds_node(fill, bytes, self.len());
            quicklist = !(one_node && bytes <= size_limit / 2 && self.len() <= count_limit / 2);
        }
        self.keep_encoding(quicklist);
    }

    /// Approximate RAM bytes.
    pub fn ram_bytes(&self) -> usize {
        // O(1): from the encoded-size estimate (the cache asks at every write).
        64 + self.bytes + self.items.len() * 24
    }

    fn encode_items<'a>(
        out: &mut Vec<u8>,
        flags: u8,
        n: usize,
        items: impl Iterator<Item = &'a Vec<u8>>,
    ) {
        out.push(flags);
        put_varint(out, n as u64);
        for v in items {
            put_bytes(out, v);
        }
    }

    /// Appends the record value: the whole list while compact, the root once grouped.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let big = match self.quicklist {
            None => 0,
            Some(false) => FLAG_ENCODING_KEPT,
            Some(true) => FLAG_ENCODING_KEPT | FLAG_BIG,
        };
        if self.pages.is_some() {
            out.push(FLAG_GROUPED | big);
            return;
        }
        out.reserve(1 + 10 + self.bytes + self.items.len() * 4);
        Self::encode_items(out, big, self.items.len(), self.items.iter());
    }

    /// Appends the record value of page `id` (grouped only).
    pub fn encode_group(&self, id: u64, out: &mut Vec<u8>) {
        let pg = self.pages.as_ref().expect("paged");
        let p = pg.find(id).unwrap_or_else(|| panic!("no page {id}"));
        let start = pg.start_of(p, self.items.len());
        let len = pg.pages[p].len;
        Self::encode_items(out, 0, len, self.items.range(start..start + len));
    }

    /// Decodes a compact record (flags: `allowed` bits only) into `into`: (its flags, its
    /// element count, [`item_bytes`] and [`listpack_entry_bytes`] of its elements).
    fn decode_items(
        bytes: &[u8],
        allowed: u8,
        into: &mut VecDeque<Vec<u8>>,
    ) -> Result<(u8, usize, usize, usize), DecodeError> {
        let mut r = Reader::new(bytes);
        let flags = r.byte()?;
        if flags & !allowed != 0 {
            return Err(DecodeError("unknown list flags".into()));
        }
        let n = r.count(1)?;
        let (mut b, mut lp) = (0, 0);
        for _ in 0..n {
            let v = r.bytes()?;
            b += item_bytes(v);
            lp += listpack_entry_bytes(v);
            into.push_back(v.to_vec());
        }
        r.finish()?;
        Ok((flags, n, b, lp))
    }

    /// Decodes a compact record value.
    pub fn decode(bytes: &[u8]) -> Result<List, DecodeError> {
        let mut items = VecDeque::new();
        let (flags, _, b, lp) =
            Self::decode_items(bytes, FLAG_ENCODING_KEPT | FLAG_BIG, &mut items)?;
        Ok(List {
            items,
            bytes: b,
            lp_bytes: lp,
            quicklist: kept_encoding(flags),
            pages: None,
            root_dirty: false,
            repage: false,
            layout: false,
        })
    }

    /// Decodes a grouped list: its root record value and its pages (id, value) in id order.
    pub fn decode_grouped(root: &[u8], groups: &[(u64, &[u8])]) -> Result<List, DecodeError> {
        if root.len() != 1 || root[0] & !(FLAG_ENCODING_KEPT | FLAG_BIG) != FLAG_GROUPED {
            return Err(DecodeError("unknown grouped list root".into()));
        }
        if groups.is_empty() {
            return Err(DecodeError("grouped list without pages".into()));
        }
        let mut items = VecDeque::new();
        let mut pages = VecDeque::with_capacity(groups.len());
        let (mut total, mut total_lp) = (0, 0);
        for (id, v) in groups {
            let (_, len, bytes, lp) = Self::decode_items(v, 0, &mut items)?;
            total += bytes;
            total_lp += lp;
            pages.push_back(Page {
                id: *id,
                len,
                bytes,
                dirty: false,
            });
        }
        Ok(List {
            items,
            bytes: total,
            lp_bytes: total_lp,
            quicklist: kept_encoding(root[0]),
            pages: Some(Pages {
                pages,
                page_bytes: super::groups::DEFAULT_GROUP_BYTES,
                dirty_ids: Vec::new(),
                gone: Vec::new(),
                gone_unknown: false,
            }),
            root_dirty: false,
            repage: false,
            layout: false,
        })
    }

    /// Re-plans the layout for pages of about `group_bytes`: compact up to twice that,
    /// pages beyond (and back to compact under half of it).
    pub fn plan_layout(&mut self, group_bytes: usize) {
        let g = group_bytes.max(64);
        let repage = std::mem::take(&mut self.repage);
        match &mut self.pages {
            None if self.bytes > 2 * g => self.paginate(g),
            None => {}
            Some(_) if self.bytes < g / 2 => {
                self.pages = None;
                self.root_dirty = true;
                self.layout = true;
            }
            Some(pg) => {
                pg.page_bytes = g;
                let n = pg.pages.len();
                if repage || (n > 4 && self.bytes / n < g / 4) {
                    self.paginate(g);
                }
            }
        }
    }

    /// Cuts the list into pages of about `g` bytes, all dirty, with fresh ids.
    fn paginate(&mut self, g: usize) {
        let mut pages = VecDeque::new();
        let mut cur = Page {
            id: FIRST_PAGE_ID,
            len: 0,
            bytes: 0,
            dirty: true,
        };
        for v in &self.items {
            let b = item_bytes(v);
            if cur.len > 0 && cur.bytes + b > g {
                let id = cur.id + PAGE_ID_GAP;
                pages.push_back(std::mem::replace(
                    &mut cur,
                    Page {
                        id,
                        len: 0,
                        bytes: 0,
                        dirty: true,
                    },
                ));
            }
            cur.len += 1;
            cur.bytes += b;
        }
        pages.push_back(cur);
        let dirty_ids = pages.iter().map(|p| p.id).collect();
        self.pages = Some(Pages {
            pages,
            page_bytes: g,
            dirty_ids,
            gone: Vec::new(),
            gone_unknown: true,
        });
        self.root_dirty = true;
        self.layout = true;
    }

    /// The ids of the pages removed since the last call that are not pages now, or None
    /// when the pages were cut again since (then only a comparison with the stored ids
    /// tells). Compact: nothing.
    pub fn take_gone(&mut self) -> Option<Vec<u64>> {
        let pg = self.pages.as_mut()?;
        let mut gone = std::mem::take(&mut pg.gone);
        if std::mem::take(&mut pg.gone_unknown) {
            return None;
        }
        gone.retain(|&id| pg.find(id).is_none());
        gone.sort_unstable();
        gone.dedup();
        Some(gone)
    }

    /// True when stored as pages.
    pub fn is_grouped(&self) -> bool {
        self.pages.is_some()
    }

    /// The page ids, in order (empty when compact).
    pub fn group_ids(&self) -> Vec<u64> {
        self.pages
            .as_ref()
            .map_or_else(Vec::new, |pg| pg.pages.iter().map(|p| p.id).collect())
    }

    /// What to write since the last call: the pages dirtied since (ascending ids), found
    /// from their ids without looking at the other pages.
    pub fn take_changes(&mut self) -> Changes {
        let mut groups = Vec::new();
        if let Some(pg) = &mut self.pages {
            for id in std::mem::take(&mut pg.dirty_ids) {
                if let Some(p) = pg.find(id) {
                    if std::mem::take(&mut pg.pages[p].dirty) {
                        groups.push(id);
                    }
                }
            }
            groups.sort_unstable();
        }
        Changes {
            root: std::mem::take(&mut self.root_dirty),
            groups,
            layout: std::mem::take(&mut self.layout),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_has_redis_hysteresis_and_is_kept_in_the_record() {
        let fill = 3;
        let mut l = List::default();
        l.before_growth(fill, 4, 4);
        for v in ["a", "b", "c", "d"] {
            l.push_back(v.into());
        }
        assert_eq!(l.encoding(fill), "quicklist");
        l.pop(End::Tail);
        l.after_shrink(fill);
        assert_eq!(l.encoding(fill), "quicklist", "3 elements: above half of 3");
        let mut out = Vec::new();
        l.encode(&mut out);
        assert_eq!(out[0], FLAG_ENCODING_KEPT | FLAG_BIG);
        let mut back = List::decode(&out).unwrap();
        assert_eq!(back.encoding(fill), "quicklist");
        back.pop(End::Head);
        back.pop(End::Head);
        back.after_shrink(fill);
        assert_eq!(back.encoding(fill), "listpack");
        let mut out = Vec::new();
        back.encode(&mut out);
        assert_eq!(out[0], FLAG_ENCODING_KEPT);
        // A change of fill re-encodes nothing.
        assert_eq!(List::decode(&out).unwrap().encoding(1), "listpack");
        // A record from before the state was kept reads as its contents say.
        let legacy = [0, 4, 1, b'a', 1, b'b', 1, b'c', 1, b'd'];
        assert_eq!(List::decode(&legacy).unwrap().encoding(fill), "quicklist");
        assert_eq!(List::decode(&legacy).unwrap().encoding(-2), "listpack");
        assert!(List::decode(&[8, 1, 1, b'a']).is_err());
    }

    #[test]
    fn listpack_bytes_follow_every_change() {
        let mut l = list(&["1", "hello", "-70000", "x"]);
        l.push_front(b"12345678901".to_vec());
        l.set(2, b"world!".to_vec());
        l.insert_at_pivot(b"x", false, b"42".to_vec());
        l.remove(b"1", 0);
        l.pop(End::Tail);
        let want: usize = l.items().iter().map(|v| listpack_entry_bytes(v)).sum();
        assert_eq!(l.lp_bytes, want);
        l.trim(1, 1);
        let want: usize = l.items().iter().map(|v| listpack_entry_bytes(v)).sum();
        assert_eq!(l.lp_bytes, want);
        // Redis's entry sizes: small ints in 2 bytes, 13-bit in 3, short strings len + 2.
        assert_eq!(listpack_entry_bytes(b"100"), 2);
        assert_eq!(listpack_entry_bytes(b"-4000"), 3);
        assert_eq!(listpack_entry_bytes(b"abc"), 5);
        assert_eq!(listpack_entry_bytes(b"007"), 5);
    }

    fn list(items: &[&str]) -> List {
        List::from_items(items.iter().map(|s| s.as_bytes().to_vec()).collect())
    }

    fn strs(l: &List) -> Vec<String> {
        l.items
            .iter()
            .map(|v| String::from_utf8(v.clone()).unwrap())
            .collect()
    }

    /// A grouped list reports the pages dirtied and removed since the last write, from its
    /// own bookkeeping: a new head page is written and nothing is gone; a page emptied by
    /// pops is gone; a page whose id comes back in the same write is not gone.
    #[test]
    fn changes_and_gone_pages_are_tracked_at_the_ends() {
        let item = |i: usize| format!("element-{i:03}").into_bytes();
        let mut l = List::from_items((0..40).map(item).collect());
        l.plan_layout(64);
        let pages = l.group_ids();
        assert!(pages.len() >= 8, "{pages:?}");
        let first = l.take_changes();
        assert_eq!(first.groups, pages, "a new layout writes every page");
        assert_eq!(
            l.take_gone(),
            None,
            "a new layout: compare with what is stored"
        );
        assert_eq!(l.take_changes().groups, Vec::<u64>::new());
        assert_eq!(l.take_gone(), Some(vec![]));

        // Pushes at the head fill the head page, then start a new one before it.
        let head = pages[0];
        let mut new_head = None;
        for i in 100..110 {
            l.push_front(item(i));
            let ids = l.group_ids();
            if ids[0] != head {
                new_head = Some(ids[0]);
                break;
            }
        }
        let new_head = new_head.expect("a new head page");
        assert!(new_head < head, "ids ascend from the head");
        let c = l.take_changes();
        assert!(c.groups.contains(&new_head) && c.layout, "{c:?}");
        assert!(c.groups.len() <= 2, "only the head pages: {c:?}");
        assert_eq!(l.take_gone(), Some(vec![]));
        l.push_front(item(150));
        assert_eq!(l.take_changes().groups, vec![new_head]);

        // Pops at the tail empty the last page: it is gone, the one before is written.
        let ids = l.group_ids();
        let (last, before) = (ids[ids.len() - 1], ids[ids.len() - 2]);
        while l.group_ids().last() == Some(&last) {
            l.pop(End::Tail);
        }
        assert_eq!(l.take_gone(), Some(vec![last]));
        assert!(!l.take_changes().groups.contains(&last));
        l.pop(End::Tail);
        assert_eq!(l.take_changes().groups, vec![before]);

        // Emptying the new head page and pushing a page back with the same id in one
        // write: written, not gone.
        while l.group_ids()[0] == new_head {
            l.pop(End::Head);
        }
        for i in 200..220 {
            l.push_front(item(i));
            if l.group_ids()[0] == new_head {
                break;
            }
        }
        assert_eq!(l.group_ids()[0], new_head, "the head page's id comes back");
        assert!(l.take_changes().groups.contains(&new_head));
        assert_eq!(l.take_gone(), Some(vec![]));
        // The pages encode exactly the list.
        let mut all = Vec::new();
        for id in l.group_ids() {
            let mut b = Vec::new();
            l.encode_group(id, &mut b);
            all.push((id, b));
        }
        let groups: Vec<(u64, &[u8])> = all.iter().map(|(id, b)| (*id, &b[..])).collect();
        let mut root = Vec::new();
        l.encode(&mut root);
        assert_eq!(List::decode_grouped(&root, &groups).unwrap(), l);
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
