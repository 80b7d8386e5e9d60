//! Redis's packed encodings inside RDB strings: listpack, ziplist, intset and zipmap.

use crate::rdb::canonical_i64;
use crate::DecodeError;

/// One element of a listpack or ziplist.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Elem<'a> {
    /// A string.
    Str(&'a [u8]),
    /// An integer.
    Int(i64),
}

impl Elem<'_> {
    /// The element as bytes (an integer as its decimal text).
    pub fn to_vec(self) -> Vec<u8> {
        match self {
            Elem::Str(s) => s.to_vec(),
            Elem::Int(v) => v.to_string().into_bytes(),
        }
    }

    /// The element as an integer (a string must be the canonical text of one).
    pub fn to_i64(self) -> Result<i64, DecodeError> {
        match self {
            Elem::Int(v) => Ok(v),
            Elem::Str(s) => canonical_i64(s).ok_or(DecodeError::new("expected an integer")),
        }
    }

    /// The element as a score.
    pub fn to_f64(self) -> Result<f64, DecodeError> {
        match self {
            Elem::Int(v) => Ok(v as f64),
            Elem::Str(s) => std::str::from_utf8(s)
                .ok()
                .and_then(parse_score)
                .ok_or(DecodeError::new("a score that is not a number")),
        }
    }
}

/// A score as Redis's `strtod` reads it (also `inf`, `-inf`).
fn parse_score(s: &str) -> Option<f64> {
    let v: f64 = match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        t => t.parse().ok()?,
    };
    (!v.is_nan()).then_some(v)
}

fn le(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
}

fn sign_extend(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

fn get(data: &[u8], from: usize, n: usize) -> Result<&[u8], DecodeError> {
    from.checked_add(n)
        .and_then(|end| data.get(from..end))
        .ok_or(DecodeError::new("packed encoding truncated"))
}

/// The elements of a listpack.
pub fn listpack(lp: &[u8]) -> Result<Vec<Elem<'_>>, DecodeError> {
    let bad = || DecodeError::new("damaged listpack");
    if lp.len() < 7 || le(&lp[..4]) != lp.len() as u64 || lp[lp.len() - 1] != 0xff {
        return Err(bad());
    }
    let declared = le(&lp[4..6]);
    let mut out = Vec::new();
    let mut at = 6;
    loop {
        let b = *lp.get(at).ok_or_else(bad)?;
        if b == 0xff {
            break;
        }
        let (elem, len) = if b & 0x80 == 0 {
            (Elem::Int(i64::from(b & 0x7f)), 1)
        } else if b & 0xc0 == 0x80 {
            let n = usize::from(b & 0x3f);
            (Elem::Str(get(lp, at + 1, n)?), 1 + n)
        } else if b & 0xe0 == 0xc0 {
            let v =
                (u64::from(b & 0x1f) << 8) | u64::from(*get(lp, at + 1, 1)?.first().unwrap_or(&0));
            (Elem::Int(sign_extend(v, 13)), 2)
        } else if b & 0xf0 == 0xe0 {
            let n = (usize::from(b & 0x0f) << 8) | usize::from(get(lp, at + 1, 1)?[0]);
            (Elem::Str(get(lp, at + 2, n)?), 2 + n)
        } else {
            match b {
                0xf0 => {
                    let n = le(get(lp, at + 1, 4)?) as usize;
                    (Elem::Str(get(lp, at + 5, n)?), 5 + n)
                }
                0xf1 => (Elem::Int(sign_extend(le(get(lp, at + 1, 2)?), 16)), 3),
                0xf2 => (Elem::Int(sign_extend(le(get(lp, at + 1, 3)?), 24)), 4),
                0xf3 => (Elem::Int(sign_extend(le(get(lp, at + 1, 4)?), 32)), 5),
                0xf4 => (Elem::Int(le(get(lp, at + 1, 8)?) as i64), 9),
                _ => return Err(bad()),
            }
        };
        at += len + backlen_bytes(len as u64);
        out.push(elem);
    }
    if at != lp.len() - 1 || (declared != 65535 && declared != out.len() as u64) {
        return Err(bad());
    }
    Ok(out)
}

fn backlen_bytes(l: u64) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// Builds a listpack.
#[derive(Default)]
pub struct ListpackWriter {
    buf: Vec<u8>,
    count: usize,
}

impl ListpackWriter {
    /// An empty listpack.
    pub fn new() -> Self {
        ListpackWriter {
            buf: vec![0; 6],
            count: 0,
        }
    }

    /// Elements so far.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Bytes so far.
    pub fn bytes(&self) -> usize {
        self.buf.len() + 1
    }

    /// Appends a string, integer-encoded when it is the canonical text of an integer (as
    /// Redis's `lpAppend` does).
    pub fn push(&mut self, s: &[u8]) {
        if let Some(v) = canonical_i64(s) {
            return self.push_int(v);
        }
        let start = self.buf.len();
        let n = s.len();
        if n < 64 {
            self.buf.push(0x80 | n as u8);
        } else if n < 4096 {
            self.buf.push(0xe0 | (n >> 8) as u8);
            self.buf.push(n as u8);
        } else {
            self.buf.push(0xf0);
            self.buf.extend_from_slice(&(n as u32).to_le_bytes());
        }
        self.buf.extend_from_slice(s);
        self.backlen(start);
    }

    /// Appends an integer.
    pub fn push_int(&mut self, v: i64) {
        let start = self.buf.len();
        if (0..=127).contains(&v) {
            self.buf.push(v as u8);
        } else if (-4096..=4095).contains(&v) {
            let u = (v as u64) & 0x1fff;
            self.buf.push(0xc0 | (u >> 8) as u8);
            self.buf.push(u as u8);
        } else if let Ok(x) = i16::try_from(v) {
            self.buf.push(0xf1);
            self.buf.extend_from_slice(&x.to_le_bytes());
        } else if (-(1 << 23)..(1 << 23)).contains(&v) {
            self.buf.push(0xf2);
            self.buf.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
        } else if let Ok(x) = i32::try_from(v) {
            self.buf.push(0xf3);
            self.buf.extend_from_slice(&x.to_le_bytes());
        } else {
            self.buf.push(0xf4);
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
        self.backlen(start);
    }

    fn backlen(&mut self, start: usize) {
        let l = (self.buf.len() - start) as u64;
        let n = backlen_bytes(l);
        for i in (0..n).rev() {
            let b = ((l >> (7 * i)) & 127) as u8;
            // The first byte written has no continuation bit (see lpEncodeBacklen).
            self.buf.push(if i == n - 1 { b } else { b | 128 });
        }
        self.count += 1;
    }

    /// The finished listpack.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(0xff);
        let total = self.buf.len() as u32;
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        let n = self.count.min(65535) as u16;
        self.buf[4..6].copy_from_slice(&n.to_le_bytes());
        self.buf
    }
}

/// The elements of a ziplist.
pub fn ziplist(zl: &[u8]) -> Result<Vec<Elem<'_>>, DecodeError> {
    let bad = || DecodeError::new("damaged ziplist");
    if zl.len() < 11 || le(&zl[..4]) != zl.len() as u64 || zl[zl.len() - 1] != 0xff {
        return Err(bad());
    }
    let declared = le(&zl[8..10]);
    let mut out = Vec::new();
    let mut at = 10;
    loop {
        let b = *zl.get(at).ok_or_else(bad)?;
        if b == 0xff {
            break;
        }
        at += match b {
            0..=253 => 1,
            254 => 5,
            255 => unreachable!(),
        };
        let e = *zl.get(at).ok_or_else(bad)?;
        let (elem, len) = match e >> 6 {
            0 => {
                let n = usize::from(e & 0x3f);
                (Elem::Str(get(zl, at + 1, n)?), 1 + n)
            }
            1 => {
                let n = (usize::from(e & 0x3f) << 8) | usize::from(get(zl, at + 1, 1)?[0]);
                (Elem::Str(get(zl, at + 2, n)?), 2 + n)
            }
            2 => {
                let b = get(zl, at + 1, 4)?;
                let n = u32::from_be_bytes(b.try_into().expect("4")) as usize;
                (Elem::Str(get(zl, at + 5, n)?), 5 + n)
            }
            _ => match e {
                0xc0 => (Elem::Int(sign_extend(le(get(zl, at + 1, 2)?), 16)), 3),
                0xd0 => (Elem::Int(sign_extend(le(get(zl, at + 1, 4)?), 32)), 5),
                0xe0 => (Elem::Int(le(get(zl, at + 1, 8)?) as i64), 9),
                0xf0 => (Elem::Int(sign_extend(le(get(zl, at + 1, 3)?), 24)), 4),
                0xfe => (Elem::Int(i64::from(get(zl, at + 1, 1)?[0] as i8)), 2),
                0xf1..=0xfd => (Elem::Int(i64::from(e & 0x0f) - 1), 1),
                _ => return Err(bad()),
            },
        };
        at += len;
        out.push(elem);
    }
    if at != zl.len() - 1 || (declared != 65535 && declared != out.len() as u64) {
        return Err(bad());
    }
    Ok(out)
}

/// The members of an intset.
pub fn intset(is: &[u8]) -> Result<Vec<i64>, DecodeError> {
    let bad = || DecodeError::new("damaged intset");
    if is.len() < 8 {
        return Err(bad());
    }
    let width = le(&is[..4]) as usize;
    let n = le(&is[4..8]) as usize;
    if !matches!(width, 2 | 4 | 8)
        || n.checked_mul(width).and_then(|b| b.checked_add(8)) != Some(is.len())
    {
        return Err(bad());
    }
    Ok(is[8..]
        .chunks_exact(width)
        .map(|c| sign_extend(le(c), 8 * width as u32))
        .collect())
}

/// An intset of `members` (all integers).
pub fn write_intset(members: &[i64]) -> Vec<u8> {
    let width: usize = if members.iter().all(|v| i16::try_from(*v).is_ok()) {
        2
    } else if members.iter().all(|v| i32::try_from(*v).is_ok()) {
        4
    } else {
        8
    };
    let mut sorted = members.to_vec();
    sorted.sort_unstable();
    let mut out = Vec::with_capacity(8 + width * sorted.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(sorted.len() as u32).to_le_bytes());
    for v in sorted {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

/// Field-value pairs.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// The field-value pairs of a zipmap (hashes of Redis before 2.6).
pub fn zipmap(zm: &[u8]) -> Result<Pairs, DecodeError> {
    let bad = || DecodeError::new("damaged zipmap");
    let mut at = 1;
    let mut out = Vec::new();
    let len = |at: &mut usize| -> Result<Option<usize>, DecodeError> {
        let b = *zm.get(*at).ok_or_else(bad)?;
        *at += 1;
        Ok(match b {
            255 => None,
            254 => {
                let n = le(get(zm, *at, 4)?) as usize;
                *at += 4;
                Some(n)
            }
            n => Some(usize::from(n)),
        })
    };
    while let Some(klen) = len(&mut at)? {
        let k = get(zm, at, klen)?.to_vec();
        at += klen;
        let vlen = len(&mut at)?.ok_or_else(bad)?;
        let free = usize::from(*zm.get(at).ok_or_else(bad)?);
        at += 1;
        let v = get(zm, at, vlen)?.to_vec();
        at += vlen + free;
        out.push((k, v));
    }
    if at != zm.len() {
        return Err(bad());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_round_trips_every_element_encoding() {
        let big = vec![b'x'; 5000];
        let mid = vec![b'y'; 300];
        let ints = [
            0i64,
            127,
            128,
            -1,
            4095,
            -4096,
            4096,
            32767,
            -32768,
            32768,
            8388607,
            -8388608,
            8388608,
            i32::MAX as i64,
            i32::MIN as i64,
            i64::MAX,
            i64::MIN,
        ];
        let mut w = ListpackWriter::new();
        for v in ints {
            w.push_int(v);
        }
        w.push(b"");
        w.push(b"abc");
        w.push(&mid);
        w.push(&big);
        w.push(b"-0");
        w.push(b"12");
        let lp = w.finish();
        let got = listpack(&lp).unwrap();
        let mut want: Vec<Vec<u8>> = ints.iter().map(|v| v.to_string().into_bytes()).collect();
        want.extend([
            b"".to_vec(),
            b"abc".to_vec(),
            mid,
            big,
            b"-0".to_vec(),
            b"12".to_vec(),
        ]);
        assert_eq!(got.iter().map(|e| e.to_vec()).collect::<Vec<_>>(), want);
        for cut in 0..lp.len() {
            assert!(listpack(&lp[..cut]).is_err());
        }
    }

    #[test]
    fn intset_round_trips() {
        for set in [vec![1i64, -5, 3], vec![70000, -2], vec![i64::MAX, 0]] {
            let is = write_intset(&set);
            let mut want = set.clone();
            want.sort_unstable();
            assert_eq!(intset(&is).unwrap(), want);
        }
        assert!(intset(&[2, 0, 0, 0, 5, 0, 0, 0, 1]).is_err());
    }
}
