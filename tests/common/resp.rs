//! A small, independent RESP2/RESP3 reply decoder used by the end-to-end tests.
//!
//! It is deliberately separate from `skerry-resp` so that the tests do not use the server's own
//! codec as the oracle for the server's output.

use std::fmt;

/// One decoded reply.
#[derive(Clone, PartialEq)]
pub enum Value {
    /// `+...`
    Simple(String),
    /// `-...` or RESP3 blob error `!...`
    Error(String),
    /// `:...`
    Integer(i64),
    /// `$n ...`
    Bulk(Vec<u8>),
    /// `$-1` (RESP2 null bulk) or `_` (RESP3 null)
    Null,
    /// `*-1` (RESP2 null array)
    NullArray,
    /// `*n`
    Array(Vec<Value>),
    /// `%n`
    Map(Vec<(Value, Value)>),
    /// `~n`
    Set(Vec<Value>),
    /// `,...` (kept as the exact text the server sent)
    Double(String),
    /// `#t` / `#f`
    Boolean(bool),
    /// `(...`
    BigNumber(String),
    /// `=n fmt:text`
    Verbatim(String, Vec<u8>),
    /// `>n`
    Push(Vec<Value>),
    /// `|n`
    Attribute(Vec<(Value, Value)>),
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Simple(s) => write!(f, "Simple({s:?})"),
            Value::Error(s) => write!(f, "Error({s:?})"),
            Value::Integer(i) => write!(f, "Integer({i})"),
            Value::Bulk(b) => {
                if b.len() > 200 {
                    write!(
                        f,
                        "Bulk({:?}... {} bytes)",
                        String::from_utf8_lossy(&b[..200]),
                        b.len()
                    )
                } else {
                    write!(f, "Bulk({:?})", String::from_utf8_lossy(b))
                }
            }
            Value::Null => write!(f, "Null"),
            Value::NullArray => write!(f, "NullArray"),
            Value::Array(a) => f.debug_tuple("Array").field(a).finish(),
            Value::Map(m) => f.debug_tuple("Map").field(m).finish(),
            Value::Set(s) => f.debug_tuple("Set").field(s).finish(),
            Value::Double(d) => write!(f, "Double({d})"),
            Value::Boolean(b) => write!(f, "Boolean({b})"),
            Value::BigNumber(b) => write!(f, "BigNumber({b})"),
            Value::Verbatim(fmt_, t) => {
                write!(f, "Verbatim({fmt_}, {:?})", String::from_utf8_lossy(t))
            }
            Value::Push(p) => f.debug_tuple("Push").field(p).finish(),
            Value::Attribute(a) => f.debug_tuple("Attribute").field(a).finish(),
        }
    }
}

#[allow(dead_code)]
impl Value {
    /// The payload of a bulk, simple or verbatim string as UTF-8 (lossy).
    pub fn text(&self) -> String {
        match self {
            Value::Simple(s) => s.clone(),
            Value::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            Value::Verbatim(_, t) => String::from_utf8_lossy(t).into_owned(),
            Value::Double(d) => d.clone(),
            Value::BigNumber(d) => d.clone(),
            other => panic!("expected a string reply, got {other:?}"),
        }
    }

    pub fn int(&self) -> i64 {
        match self {
            Value::Integer(i) => *i,
            other => panic!("expected an integer reply, got {other:?}"),
        }
    }

    /// Elements of an array, set or push reply.
    pub fn items(&self) -> Vec<Value> {
        match self {
            Value::Array(a) | Value::Set(a) | Value::Push(a) => a.clone(),
            other => panic!("expected an aggregate reply, got {other:?}"),
        }
    }

    /// Elements of an array of strings, as strings.
    pub fn strings(&self) -> Vec<String> {
        self.items().iter().map(|v| v.text()).collect()
    }

    /// Pairs of a map reply (or of a flat array with even length).
    pub fn pairs(&self) -> Vec<(Value, Value)> {
        match self {
            Value::Map(m) => m.clone(),
            Value::Array(a) => {
                assert!(a.len() % 2 == 0, "odd-length array as map: {self:?}");
                a.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect()
            }
            other => panic!("expected a map reply, got {other:?}"),
        }
    }

    /// Looks up a key (compared as text) in a map reply or flat key/value array.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.pairs()
            .into_iter()
            .find(|(k, _)| k.text().eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Value::Error(_))
    }

    pub fn err_text(&self) -> String {
        match self {
            Value::Error(e) => e.clone(),
            other => panic!("expected an error reply, got {other:?}"),
        }
    }
}

/// Incomplete input.
#[derive(Debug)]
pub struct Incomplete;

/// Decodes one reply from the start of `buf`. `Ok(None)` means more bytes are needed.
/// Panics on malformed input (a test failure: the server sent bad RESP).
pub fn decode(buf: &[u8]) -> Option<(Value, usize)> {
    let mut pos = 0;
    match parse(buf, &mut pos) {
        Ok(v) => Some((v, pos)),
        Err(Incomplete) => None,
    }
}

fn line<'a>(buf: &'a [u8], pos: &mut usize) -> Result<&'a str, Incomplete> {
    let start = *pos;
    let rest = &buf[start..];
    let idx = rest
        .windows(2)
        .position(|w| w == b"\r\n")
        .ok_or(Incomplete)?;
    *pos = start + idx + 2;
    Ok(std::str::from_utf8(&rest[..idx])
        .unwrap_or_else(|_| panic!("non UTF-8 line in reply: {:?}", &rest[..idx])))
}

fn int_line(buf: &[u8], pos: &mut usize) -> Result<i64, Incomplete> {
    let l = line(buf, pos)?;
    Ok(l.parse::<i64>()
        .unwrap_or_else(|_| panic!("bad integer in reply header: {l:?}")))
}

fn blob(buf: &[u8], pos: &mut usize, n: usize) -> Result<Vec<u8>, Incomplete> {
    if buf.len() < *pos + n + 2 {
        return Err(Incomplete);
    }
    let data = buf[*pos..*pos + n].to_vec();
    assert_eq!(
        &buf[*pos + n..*pos + n + 2],
        b"\r\n",
        "blob not followed by CRLF"
    );
    *pos += n + 2;
    Ok(data)
}

fn parse(buf: &[u8], pos: &mut usize) -> Result<Value, Incomplete> {
    if *pos >= buf.len() {
        return Err(Incomplete);
    }
    let t = buf[*pos];
    *pos += 1;
    Ok(match t {
        b'+' => Value::Simple(line(buf, pos)?.to_string()),
        b'-' => Value::Error(line(buf, pos)?.to_string()),
        b':' => Value::Integer(int_line(buf, pos)?),
        b'$' => {
            let n = int_line(buf, pos)?;
            if n < 0 {
                Value::Null
            } else {
                Value::Bulk(blob(buf, pos, n as usize)?)
            }
        }
        b'!' => {
            let n = int_line(buf, pos)?;
            Value::Error(String::from_utf8_lossy(&blob(buf, pos, n as usize)?).into_owned())
        }
        b'=' => {
            let n = int_line(buf, pos)?;
            let b = blob(buf, pos, n as usize)?;
            assert!(b.len() >= 4 && b[3] == b':', "bad verbatim string");
            Value::Verbatim(
                String::from_utf8_lossy(&b[..3]).into_owned(),
                b[4..].to_vec(),
            )
        }
        b'_' => {
            let l = line(buf, pos)?;
            assert!(l.is_empty(), "bad null");
            Value::Null
        }
        b',' => Value::Double(line(buf, pos)?.to_string()),
        b'#' => match line(buf, pos)? {
            "t" => Value::Boolean(true),
            "f" => Value::Boolean(false),
            other => panic!("bad boolean {other:?}"),
        },
        b'(' => Value::BigNumber(line(buf, pos)?.to_string()),
        b'*' | b'~' | b'>' => {
            let n = int_line(buf, pos)?;
            if n < 0 {
                assert_eq!(t, b'*');
                Value::NullArray
            } else {
                let mut items = Vec::with_capacity(n.min(1 << 16) as usize);
                for _ in 0..n {
                    items.push(parse(buf, pos)?);
                }
                match t {
                    b'*' => Value::Array(items),
                    b'~' => Value::Set(items),
                    _ => Value::Push(items),
                }
            }
        }
        b'%' | b'|' => {
            let n = int_line(buf, pos)?;
            let mut items = Vec::with_capacity(n.min(1 << 16) as usize);
            for _ in 0..n {
                let k = parse(buf, pos)?;
                let v = parse(buf, pos)?;
                items.push((k, v));
            }
            if t == b'%' {
                Value::Map(items)
            } else {
                Value::Attribute(items)
            }
        }
        other => panic!(
            "unexpected RESP type byte {:?} in {:?}",
            other as char,
            String::from_utf8_lossy(&buf[..buf.len().min(200)])
        ),
    })
}

/// Encodes a command as a RESP array of bulk strings.
pub fn encode<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        let a = a.as_ref();
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}
