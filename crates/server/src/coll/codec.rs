//! The byte-level pieces of a collection record: a flags byte, LEB128 counts and lengths,
//! length-prefixed byte strings, and f64 scores (8 bytes, little-endian).

/// A collection record that does not decode (damaged or from an incompatible version).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("collection record does not decode: {0}")]
pub struct DecodeError(pub String);

/// Appends `n` as LEB128.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Appends a length-prefixed byte string.
#[inline]
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Appends an f64 (its bits, little-endian).
#[inline]
pub fn put_f64(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&v.to_bits().to_le_bytes());
}

/// Reads a collection record front to back.
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader over a record value.
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    fn err(&self, what: &str) -> DecodeError {
        DecodeError(format!("{what} at byte {}", self.pos))
    }

    /// One byte.
    pub fn byte(&mut self) -> Result<u8, DecodeError> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or_else(|| self.err("truncated"))?;
        self.pos += 1;
        Ok(b)
    }

    /// A LEB128 number.
    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut n: u64 = 0;
        for i in 0..10 {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(self.err("varint too long"))
    }

    /// A count of items that each take at least `min_item_bytes`, checked against what is
    /// left (so a damaged count cannot make the decoder reserve huge amounts of memory).
    pub fn count(&mut self, min_item_bytes: usize) -> Result<usize, DecodeError> {
        let n = self.varint()?;
        let left = (self.bytes.len() - self.pos) as u64;
        if n.saturating_mul(min_item_bytes.max(1) as u64) > left {
            return Err(self.err("count larger than the record"));
        }
        Ok(n as usize)
    }

    /// A length-prefixed byte string.
    pub fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.varint()?;
        let end = (self.pos as u64)
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len() as u64)
            .ok_or_else(|| self.err("string past the end"))? as usize;
        let b = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(b)
    }

    /// An f64.
    pub fn f64(&mut self) -> Result<f64, DecodeError> {
        let end = self.pos + 8;
        let b = self
            .bytes
            .get(self.pos..end)
            .ok_or_else(|| self.err("truncated score"))?;
        self.pos = end;
        Ok(f64::from_bits(u64::from_le_bytes(
            b.try_into().expect("8 bytes"),
        )))
    }

    /// Bytes read so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Ok when every byte was read.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(self.err("trailing bytes"))
        }
    }
}

/// Reads the LEB128 number at `b[*pos..]`, advancing `pos` (None when malformed).
#[inline]
fn varint_at(b: &[u8], pos: &mut usize) -> Option<usize> {
    let mut n: u64 = 0;
    for i in 0..10 {
        let byte = *b.get(*pos)?;
        *pos += 1;
        n |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return usize::try_from(n).ok();
        }
    }
    None
}

/// In `blob`, a run of entries each made of `parts` length-prefixed byte strings (a set
/// member: 1; a hash field and its value: 2), the byte range of the entry whose first
/// string is `key`, and the range of its last string (with its length prefix).
pub fn find_entry(
    blob: &[u8],
    parts: usize,
    key: &[u8],
) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    let mut pos = 0;
    while pos < blob.len() {
        let start = pos;
        let n = varint_at(blob, &mut pos)?;
        let first = blob.get(pos..pos + n)?;
        pos += n;
        let mut last = start..pos;
        for _ in 1..parts {
            let s = pos;
            let n = varint_at(blob, &mut pos)?;
            pos += n;
            last = s..pos;
        }
        if first == key {
            return Some((start..pos, last));
        }
    }
    None
}

/// In `blob`, a run of (length-prefixed member, 8-byte score) entries, the byte range of
/// the entry of `member`.
pub fn find_scored(blob: &[u8], member: &[u8]) -> Option<std::ops::Range<usize>> {
    let mut pos = 0;
    while pos < blob.len() {
        let start = pos;
        let n = varint_at(blob, &mut pos)?;
        let m = blob.get(pos..pos + n)?;
        pos += n + 8;
        if pos > blob.len() {
            return None;
        }
        if m == member {
            return Some(start..pos);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_found_in_a_run() {
        let mut blob = Vec::new();
        for (f, v) in [
            ("a", "1"),
            ("bb", ""),
            ("", "xyz"),
            ("long", &"v".repeat(300)[..]),
        ] {
            put_bytes(&mut blob, f.as_bytes());
            put_bytes(&mut blob, v.as_bytes());
        }
        let (entry, value) = find_entry(&blob, 2, b"bb").unwrap();
        assert_eq!(&blob[entry.clone()], b"\x02bb\x00");
        assert_eq!(value, entry.end - 1..entry.end);
        let (entry, value) = find_entry(&blob, 2, b"").unwrap();
        assert_eq!(&blob[value], b"\x03xyz");
        assert_eq!(entry.start, 8);
        let (_, value) = find_entry(&blob, 2, b"long").unwrap();
        assert_eq!(value.len(), 302);
        assert!(find_entry(&blob, 2, b"1").is_none(), "values are not keys");
        assert!(find_entry(&blob, 2, b"zz").is_none());
        assert!(find_entry(&blob[..blob.len() - 1], 2, b"zz").is_none());
    }

    #[test]
    fn scored_entries_are_found() {
        let mut blob = Vec::new();
        for (m, s) in [("a", 1.0), ("", -2.5), ("ccc", 3.0)] {
            put_bytes(&mut blob, m.as_bytes());
            put_f64(&mut blob, s);
        }
        assert_eq!(find_scored(&blob, b"a"), Some(0..10));
        assert_eq!(find_scored(&blob, b""), Some(10..19));
        assert_eq!(find_scored(&blob, b"ccc"), Some(19..31));
        assert_eq!(find_scored(&blob, b"b"), None);
        assert_eq!(find_scored(&blob[..30], b"ccc"), None);
    }
}
