//! Reply decoding (client side, for tests and tools).

use crate::encode::{array_len, bulk_header, integer};
use crate::float::format_double;
use memchr::memchr;

/// Maximum nesting depth accepted by [`decode_value`].
const MAX_DEPTH: usize = 128;

/// A decoded RESP2/RESP3 value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Simple string `+...`.
    Simple(Vec<u8>),
    /// Error `-...` (or RESP3 blob error `!len`).
    Error(Vec<u8>),
    /// Integer `:n`.
    Integer(i64),
    /// Bulk string `$len`.
    Bulk(Vec<u8>),
    /// Null bulk `$-1` (RESP2) or RESP3 null `_`.
    Null,
    /// Null array `*-1` (RESP2).
    NullArray,
    /// Array `*n`.
    Array(Vec<Value>),
    /// RESP3 map `%n`.
    Map(Vec<(Value, Value)>),
    /// RESP3 set `~n`.
    Set(Vec<Value>),
    /// RESP3 double `,repr`.
    Double(f64),
    /// RESP3 boolean `#t` / `#f`.
    Boolean(bool),
    /// RESP3 big number `(digits`.
    BigNumber(Vec<u8>),
    /// RESP3 verbatim string `=len\r\nfmt:text`: the format and the text.
    Verbatim([u8; 3], Vec<u8>),
    /// RESP3 push `>n`.
    Push(Vec<Value>),
    /// RESP3 attribute `|n`: the attribute pairs and the value they annotate.
    Attribute(Vec<(Value, Value)>, Box<Value>),
}

/// Errors of [`decode_value`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The first byte of a value is not a RESP type byte.
    #[error("invalid RESP type byte 0x{0:02x}")]
    InvalidType(u8),
    /// An integer (value or length) could not be parsed.
    #[error("invalid integer")]
    InvalidInteger,
    /// A length is negative (other than -1 where allowed) or too large.
    #[error("invalid length")]
    InvalidLength,
    /// A line or a bulk payload is not terminated by CRLF.
    #[error("missing CRLF")]
    MissingCrlf,
    /// A double could not be parsed.
    #[error("invalid double")]
    InvalidDouble,
    /// A boolean is neither `t` nor `f`.
    #[error("invalid boolean")]
    InvalidBoolean,
    /// A verbatim string does not start with `xxx:`.
    #[error("invalid verbatim string")]
    InvalidVerbatim,
    /// A null `_` has a non-empty line.
    #[error("invalid null")]
    InvalidNull,
    /// Aggregates are nested too deeply.
    #[error("nesting too deep")]
    TooDeep,
}

type Step<T> = Result<Option<(T, usize)>, DecodeError>;

/// Decodes one value from the start of `buf`.
///
/// Returns `Ok(None)` if `buf` does not hold a whole value yet, and
/// `Ok(Some((value, consumed)))` otherwise. Lines and payloads must end with
/// CRLF. Streamed RESP3 aggregates (`*?`, `$?`) are not supported.
pub fn decode_value(buf: &[u8]) -> Result<Option<(Value, usize)>, DecodeError> {
    decode_at(buf, 0, 0)
}

/// Reads the line starting at `pos`; returns it and the offset after CRLF.
fn line(buf: &[u8], pos: usize) -> Step<&[u8]> {
    let rest = &buf[pos..];
    match memchr(b'\r', rest) {
        None => Ok(None),
        Some(i) if i + 1 >= rest.len() => Ok(None),
        Some(i) if rest[i + 1] != b'\n' => Err(DecodeError::MissingCrlf),
        Some(i) => Ok(Some((&rest[..i], pos + i + 2))),
    }
}

fn parse_i64(s: &[u8]) -> Result<i64, DecodeError> {
    std::str::from_utf8(s)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or(DecodeError::InvalidInteger)
}

/// Parses an aggregate or blob length; `Ok(None)` for -1.
fn parse_len(s: &[u8]) -> Result<Option<usize>, DecodeError> {
    match parse_i64(s)? {
        -1 => Ok(None),
        n if n < 0 => Err(DecodeError::InvalidLength),
        n => usize::try_from(n)
            .map(Some)
            .map_err(|_| DecodeError::InvalidLength),
    }
}

/// Reads a blob payload of `len` bytes at `pos` followed by CRLF.
fn blob(buf: &[u8], pos: usize, len: usize) -> Step<&[u8]> {
    let end = pos.checked_add(len).ok_or(DecodeError::InvalidLength)?;
    let need = end.checked_add(2).ok_or(DecodeError::InvalidLength)?;
    if buf.len() < need {
        return Ok(None);
    }
    if &buf[end..need] != b"\r\n" {
        return Err(DecodeError::MissingCrlf);
    }
    Ok(Some((&buf[pos..end], need)))
}

fn decode_many(buf: &[u8], mut pos: usize, n: usize, depth: usize) -> Step<Vec<Value>> {
    let mut items = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        match decode_at(buf, pos, depth + 1)? {
            None => return Ok(None),
            Some((v, next)) => {
                items.push(v);
                pos = next;
            }
        }
    }
    Ok(Some((items, pos)))
}

fn decode_pairs(buf: &[u8], mut pos: usize, n: usize, depth: usize) -> Step<Vec<(Value, Value)>> {
    let mut items = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        let Some((k, next)) = decode_at(buf, pos, depth + 1)? else {
            return Ok(None);
        };
        let Some((v, next)) = decode_at(buf, next, depth + 1)? else {
            return Ok(None);
        };
        items.push((k, v));
        pos = next;
    }
    Ok(Some((items, pos)))
}

fn decode_at(buf: &[u8], pos: usize, depth: usize) -> Step<Value> {
    if depth > MAX_DEPTH {
        return Err(DecodeError::TooDeep);
    }
    let Some(&ty) = buf.get(pos) else {
        return Ok(None);
    };
    if !b"+-:$*%~,#(=>|_!".contains(&ty) {
        return Err(DecodeError::InvalidType(ty));
    }
    let Some((l, next)) = line(buf, pos + 1)? else {
        return Ok(None);
    };
    let v = match ty {
        b'+' => (Value::Simple(l.to_vec()), next),
        b'-' => (Value::Error(l.to_vec()), next),
        b':' => (Value::Integer(parse_i64(l)?), next),
        b'_' => {
            if !l.is_empty() {
                return Err(DecodeError::InvalidNull);
            }
            (Value::Null, next)
        }
        b'#' => match l {
            b"t" => (Value::Boolean(true), next),
            b"f" => (Value::Boolean(false), next),
            _ => return Err(DecodeError::InvalidBoolean),
        },
        b',' => {
            let d = std::str::from_utf8(l)
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
                .ok_or(DecodeError::InvalidDouble)?;
            (Value::Double(d), next)
        }
        b'(' => (Value::BigNumber(l.to_vec()), next),
        b'$' | b'!' | b'=' => {
            let Some(len) = parse_len(l)? else {
                return if ty == b'$' {
                    Ok(Some((Value::Null, next)))
                } else {
                    Err(DecodeError::InvalidLength)
                };
            };
            let Some((payload, end)) = blob(buf, next, len)? else {
                return Ok(None);
            };
            match ty {
                b'$' => (Value::Bulk(payload.to_vec()), end),
                b'!' => (Value::Error(payload.to_vec()), end),
                _ => {
                    if payload.len() < 4 || payload[3] != b':' {
                        return Err(DecodeError::InvalidVerbatim);
                    }
                    let fmt = [payload[0], payload[1], payload[2]];
                    (Value::Verbatim(fmt, payload[4..].to_vec()), end)
                }
            }
        }
        b'*' | b'~' | b'>' => {
            let Some(n) = parse_len(l)? else {
                return if ty == b'*' {
                    Ok(Some((Value::NullArray, next)))
                } else {
                    Err(DecodeError::InvalidLength)
                };
            };
            let Some((items, end)) = decode_many(buf, next, n, depth)? else {
                return Ok(None);
            };
            let v = match ty {
                b'*' => Value::Array(items),
                b'~' => Value::Set(items),
                _ => Value::Push(items),
            };
            (v, end)
        }
        // '%' and '|'
        _ => {
            let n = parse_len(l)?.ok_or(DecodeError::InvalidLength)?;
            let Some((pairs, end)) = decode_pairs(buf, next, n, depth)? else {
                return Ok(None);
            };
            if ty == b'%' {
                (Value::Map(pairs), end)
            } else {
                let Some((v, end)) = decode_at(buf, end, depth + 1)? else {
                    return Ok(None);
                };
                (Value::Attribute(pairs, Box::new(v)), end)
            }
        }
    };
    Ok(Some(v))
}

fn header(out: &mut Vec<u8>, prefix: u8, n: usize) {
    let mut b = itoa::Buffer::new();
    out.push(prefix);
    out.extend_from_slice(b.format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Encodes a [`Value`] in RESP3 syntax (RESP2 types keep their RESP2 form:
/// `Null` is `_`, `NullArray` is `*-1`), so that [`decode_value`] returns an
/// equal value. An `Error` containing CR or LF is written as a blob error
/// `!len`; CR and LF in a `Simple` string are replaced by spaces (lossy).
pub fn encode_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Simple(s) => {
            out.push(b'+');
            out.extend(
                s.iter()
                    .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
            );
            out.extend_from_slice(b"\r\n");
        }
        Value::Error(s) => {
            if s.contains(&b'\r') || s.contains(&b'\n') {
                header(out, b'!', s.len());
            } else {
                out.push(b'-');
            }
            out.extend_from_slice(s);
            out.extend_from_slice(b"\r\n");
        }
        Value::Integer(n) => integer(out, *n),
        Value::Bulk(b) => {
            bulk_header(out, b.len());
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
        }
        Value::Null => out.extend_from_slice(b"_\r\n"),
        Value::NullArray => out.extend_from_slice(b"*-1\r\n"),
        Value::Array(items) | Value::Set(items) | Value::Push(items) => {
            let prefix = match v {
                Value::Array(_) => b'*',
                Value::Set(_) => b'~',
                _ => b'>',
            };
            if prefix == b'*' {
                array_len(out, items.len());
            } else {
                header(out, prefix, items.len());
            }
            for item in items {
                encode_value(out, item);
            }
        }
        Value::Map(pairs) => {
            header(out, b'%', pairs.len());
            for (k, v) in pairs {
                encode_value(out, k);
                encode_value(out, v);
            }
        }
        Value::Attribute(pairs, v) => {
            header(out, b'|', pairs.len());
            for (k, v) in pairs {
                encode_value(out, k);
                encode_value(out, v);
            }
            encode_value(out, v);
        }
        Value::Double(d) => {
            out.push(b',');
            format_double(*d, out);
            out.extend_from_slice(b"\r\n");
        }
        Value::Boolean(b) => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Value::BigNumber(d) => {
            out.push(b'(');
            out.extend_from_slice(d);
            out.extend_from_slice(b"\r\n");
        }
        Value::Verbatim(fmt, text) => {
            header(out, b'=', text.len() + 4);
            out.extend_from_slice(fmt);
            out.push(b':');
            out.extend_from_slice(text);
            out.extend_from_slice(b"\r\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &[u8]) -> Value {
        let (v, n) = decode_value(s).unwrap().unwrap();
        assert_eq!(n, s.len());
        // every strict prefix is incomplete
        for i in 0..s.len() {
            assert_eq!(decode_value(&s[..i]), Ok(None), "prefix {i} of {s:?}");
        }
        v
    }

    #[test]
    fn resp2_values() {
        assert_eq!(dec(b"+OK\r\n"), Value::Simple(b"OK".to_vec()));
        assert_eq!(dec(b"-ERR x\r\n"), Value::Error(b"ERR x".to_vec()));
        assert_eq!(dec(b":-5\r\n"), Value::Integer(-5));
        assert_eq!(dec(b"$3\r\na\r\n\r\n"), Value::Bulk(b"a\r\n".to_vec()));
        assert_eq!(dec(b"$0\r\n\r\n"), Value::Bulk(vec![]));
        assert_eq!(dec(b"$-1\r\n"), Value::Null);
        assert_eq!(dec(b"*-1\r\n"), Value::NullArray);
        assert_eq!(dec(b"*0\r\n"), Value::Array(vec![]));
        assert_eq!(
            dec(b"*2\r\n:1\r\n*1\r\n$1\r\nx\r\n"),
            Value::Array(vec![
                Value::Integer(1),
                Value::Array(vec![Value::Bulk(b"x".to_vec())])
            ])
        );
    }

    #[test]
    fn resp3_values() {
        assert_eq!(dec(b"_\r\n"), Value::Null);
        assert_eq!(dec(b"#t\r\n"), Value::Boolean(true));
        assert_eq!(dec(b",1.5\r\n"), Value::Double(1.5));
        assert_eq!(dec(b",inf\r\n"), Value::Double(f64::INFINITY));
        assert_eq!(dec(b",-inf\r\n"), Value::Double(f64::NEG_INFINITY));
        assert!(matches!(dec(b",nan\r\n"), Value::Double(d) if d.is_nan()));
        assert_eq!(dec(b"(123\r\n"), Value::BigNumber(b"123".to_vec()));
        assert_eq!(
            dec(b"=6\r\ntxt:hi\r\n"),
            Value::Verbatim(*b"txt", b"hi".to_vec())
        );
        assert_eq!(dec(b"!3\r\nE\nX\r\n"), Value::Error(b"E\nX".to_vec()));
        assert_eq!(
            dec(b"%1\r\n+a\r\n:1\r\n"),
            Value::Map(vec![(Value::Simple(b"a".to_vec()), Value::Integer(1))])
        );
        assert_eq!(dec(b"~1\r\n:1\r\n"), Value::Set(vec![Value::Integer(1)]));
        assert_eq!(
            dec(b">2\r\n+message\r\n:1\r\n"),
            Value::Push(vec![Value::Simple(b"message".to_vec()), Value::Integer(1)])
        );
        assert_eq!(
            dec(b"|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n"),
            Value::Attribute(
                vec![(Value::Simple(b"ttl".to_vec()), Value::Integer(3))],
                Box::new(Value::Bulk(b"v".to_vec()))
            )
        );
    }

    #[test]
    fn errors() {
        assert_eq!(decode_value(b"?x\r\n"), Err(DecodeError::InvalidType(b'?')));
        assert_eq!(decode_value(b":x\r\n"), Err(DecodeError::InvalidInteger));
        assert_eq!(decode_value(b"$-2\r\n"), Err(DecodeError::InvalidLength));
        assert_eq!(decode_value(b"$1\r\nab\r\n"), Err(DecodeError::MissingCrlf));
        assert_eq!(decode_value(b"+a\rb\r\n"), Err(DecodeError::MissingCrlf));
        assert_eq!(decode_value(b",x\r\n"), Err(DecodeError::InvalidDouble));
        assert_eq!(decode_value(b"#x\r\n"), Err(DecodeError::InvalidBoolean));
        assert_eq!(
            decode_value(b"=2\r\nab\r\n"),
            Err(DecodeError::InvalidVerbatim)
        );
        assert_eq!(decode_value(b"_x\r\n"), Err(DecodeError::InvalidNull));
        assert_eq!(decode_value(b"%-1\r\n"), Err(DecodeError::InvalidLength));
        let deep = b"*1\r\n".repeat(MAX_DEPTH + 2);
        assert_eq!(decode_value(&deep), Err(DecodeError::TooDeep));
        assert_eq!(decode_value(b"$9223372036854775807\r\n"), Ok(None));
        assert_eq!(decode_value(b"*4611686018427387904\r\n"), Ok(None));
    }

    #[test]
    fn encode_roundtrip_examples() {
        let v = Value::Array(vec![
            Value::Null,
            Value::NullArray,
            Value::Error(b"ERR a\r\nb".to_vec()),
            Value::Double(0.1),
            Value::Double(-0.0),
            Value::Attribute(vec![], Box::new(Value::Boolean(false))),
        ]);
        let mut out = Vec::new();
        encode_value(&mut out, &v);
        assert_eq!(dec(&out), v);
        if let Value::Array(items) = dec(&out) {
            assert!(matches!(items[4], Value::Double(d) if d.is_sign_negative()));
        }
    }
}
