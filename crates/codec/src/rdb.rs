//! RDB primitives: lengths, strings (plain, integer, LZF), doubles and millisecond times,
//! read from a byte slice and appended to a `Vec<u8>`.

use crate::DecodeError;

/// Reads RDB primitives from a byte slice; every length is checked against the bytes left,
/// so a damaged payload is an error, never a panic or a large allocation.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

/// An RDB length, or the kind of a specially encoded string.
enum Len {
    Plain(u64),
    Encoded(u8),
}

impl<'a> Reader<'a> {
    /// A reader at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, at: 0 }
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.at
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.at
    }

    /// One byte.
    pub fn byte(&mut self) -> Result<u8, DecodeError> {
        let b = *self.data.get(self.at).ok_or(DecodeError::TRUNCATED)?;
        self.at += 1;
        Ok(b)
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.at.checked_add(n).ok_or(DecodeError::TRUNCATED)?;
        let s = self.data.get(self.at..end).ok_or(DecodeError::TRUNCATED)?;
        self.at = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    fn len_or_encoding(&mut self) -> Result<Len, DecodeError> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3f)),
            1 => Len::Plain((u64::from(b & 0x3f) << 8) | u64::from(self.byte()?)),
            2 if b == 0x80 => Len::Plain(u64::from(u32::from_be_bytes(self.array()?))),
            2 if b == 0x81 => Len::Plain(u64::from_be_bytes(self.array()?)),
            2 => return Err(DecodeError::new("unknown length encoding")),
            _ => Len::Encoded(b & 0x3f),
        })
    }

    /// An RDB length (`rdbLoadLen`).
    pub fn length(&mut self) -> Result<u64, DecodeError> {
        match self.len_or_encoding()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(DecodeError::new(
                "an encoded string where a length was expected",
            )),
        }
    }

    /// A count of items that take at least `min_bytes` each: checked against the bytes
    /// left, so that it can size an allocation.
    pub fn count(&mut self, min_bytes: usize) -> Result<usize, DecodeError> {
        let n = self.length()?;
        if n > (self.remaining() / min_bytes.max(1)) as u64 {
            return Err(DecodeError::new("a count larger than the payload"));
        }
        Ok(n as usize)
    }

    /// The length of the RDB string that follows once decoded (plain, integer or LZF), read
    /// from its header alone: nothing is decompressed, and the reader is left inside it.
    pub fn string_len(&mut self) -> Result<u64, DecodeError> {
        match self.len_or_encoding()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(0) => Ok((self.byte()? as i8).to_string().len() as u64),
            Len::Encoded(1) => Ok(i16::from_le_bytes(self.array()?).to_string().len() as u64),
            Len::Encoded(2) => Ok(i32::from_le_bytes(self.array()?).to_string().len() as u64),
            Len::Encoded(3) => {
                let _compressed = self.length()?;
                self.length()
            }
            Len::Encoded(_) => Err(DecodeError::new("unknown string encoding")),
        }
    }

    /// An RDB string: plain, an integer, or LZF-compressed.
    pub fn string(&mut self) -> Result<Vec<u8>, DecodeError> {
        match self.len_or_encoding()? {
            Len::Plain(n) => {
                let n = usize::try_from(n).map_err(|_| DecodeError::TRUNCATED)?;
                Ok(self.take(n)?.to_vec())
            }
            Len::Encoded(0) => Ok((self.byte()? as i8).to_string().into_bytes()),
            Len::Encoded(1) => Ok(i16::from_le_bytes(self.array()?).to_string().into_bytes()),
            Len::Encoded(2) => Ok(i32::from_le_bytes(self.array()?).to_string().into_bytes()),
            Len::Encoded(3) => {
                let clen = usize::try_from(self.length()?).map_err(|_| DecodeError::TRUNCATED)?;
                let ulen = usize::try_from(self.length()?).map_err(|_| DecodeError::TRUNCATED)?;
                let compressed = self.take(clen)?;
                crate::lzf::decompress(compressed, ulen)
                    .ok_or(DecodeError::new("LZF data does not decompress"))
            }
            Len::Encoded(_) => Err(DecodeError::new("unknown string encoding")),
        }
    }

    /// A binary double (8 bytes, little-endian), as RDB_TYPE_ZSET_2 stores scores.
    pub fn binary_double(&mut self) -> Result<f64, DecodeError> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// A double as text (old RDB_TYPE_ZSET): a length byte (253 NaN, 254 +inf, 255 -inf)
    /// then the digits.
    pub fn string_double(&mut self) -> Result<f64, DecodeError> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let s = self.take(usize::from(n))?;
                std::str::from_utf8(s)
                    .ok()
                    .and_then(|s| s.parse::<f64>().ok())
                    .ok_or(DecodeError::new("a score that is not a number"))
            }
        }
    }

    /// A time in milliseconds (8 bytes, little-endian).
    pub fn millis(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
}

/// Appends an RDB length (`rdbSaveLen`).
pub fn write_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// Appends an RDB string: integer-encoded when `s` is the canonical text of an integer
/// that fits 32 bits (as Redis writes them), LZF-compressed when longer than 20 bytes and
/// compressible, plain otherwise.
pub fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11 {
        if let Some(v) = canonical_i64(s) {
            if let Ok(v) = i8::try_from(v) {
                out.push(0xc0);
                out.push(v as u8);
                return;
            } else if let Ok(v) = i16::try_from(v) {
                out.push(0xc1);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            } else if let Ok(v) = i32::try_from(v) {
                out.push(0xc2);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
        }
    }
    if s.len() > 20 {
        if let Some(c) = crate::lzf::compress(s) {
            out.push(0xc3);
            write_len(out, c.len() as u64);
            write_len(out, s.len() as u64);
            out.extend_from_slice(&c);
            return;
        }
    }
    write_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Appends a binary double (8 bytes, little-endian).
pub fn write_binary_double(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a time in milliseconds (8 bytes, little-endian).
pub fn write_millis(out: &mut Vec<u8>, ms: u64) {
    out.extend_from_slice(&ms.to_le_bytes());
}

/// The integer `s` is the canonical decimal text of (no sign `+`, no leading zeros, not
/// `-0`), as Redis's `string2ll` accepts.
pub(crate) fn canonical_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let v: i64 = std::str::from_utf8(s).ok()?.parse().ok()?;
    (v.to_string().as_bytes() == s).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_trip_at_every_width() {
        for n in [
            0,
            63,
            64,
            16383,
            16384,
            u64::from(u32::MAX),
            u64::from(u32::MAX) + 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            write_len(&mut out, n);
            let mut r = Reader::new(&out);
            assert_eq!(r.length().unwrap(), n);
            assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn strings_round_trip_in_every_encoding() {
        let long = b"abcdefgh".repeat(20);
        for s in [
            &b""[..],
            b"0",
            b"-1",
            b"127",
            b"-128",
            b"128",
            b"32767",
            b"-32769",
            b"2147483647",
            b"2147483648",
            b"-0",
            b"007",
            b"+5",
            b"hello",
            &long,
        ] {
            let mut out = Vec::new();
            write_string(&mut out, s);
            let mut r = Reader::new(&out);
            assert_eq!(r.string().unwrap(), s);
            assert_eq!(r.remaining(), 0);
        }
        let mut out = Vec::new();
        write_string(&mut out, b"12");
        assert_eq!(out, [0xc0, 12], "small integers are integer-encoded");
        let mut out = Vec::new();
        write_string(&mut out, &long);
        assert_eq!(out[0], 0xc3, "long repetitive strings are compressed");
    }

    #[test]
    fn a_count_larger_than_the_payload_is_an_error() {
        let mut out = Vec::new();
        write_len(&mut out, 1 << 40);
        out.extend_from_slice(&[0; 100]);
        assert!(Reader::new(&out).count(1).is_err());
    }
}
