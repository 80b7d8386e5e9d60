//! The list type: elements in order, cheap at both ends.

use std::collections::VecDeque;

use super::codec::{put_bytes, put_varint, Reader};
use super::DecodeError;

/// A list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct List {
    /// The elements, head first.
    pub items: VecDeque<Vec<u8>>,
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

    /// Approximate RAM bytes.
    pub fn ram_bytes(&self) -> usize {
        64 + self.items.iter().map(|v| v.capacity() + 24).sum::<usize>()
    }

    /// Appends the record value.
    pub fn encode(&self, out: &mut Vec<u8>) {
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
