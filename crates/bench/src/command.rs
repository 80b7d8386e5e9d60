//! Request templates: a command line such as `SET __key__ __data__` compiled once into RESP
//! pieces, so that encoding a request is a few `memcpy`s and the formatting of one integer.
//!
//! `__key__` is replaced by the request's key (decimal digits, no prefix) and `__data__` by
//! the run's value (`--data-size` bytes, the same for every request). A placeholder may be
//! part of a larger argument (`user:__key__`).

/// Placeholder for the key.
pub const KEY: &str = "__key__";
/// Placeholder for the value.
pub const DATA: &str = "__data__";

/// One piece of an encoded request.
#[derive(Debug, Clone)]
enum Piece {
    /// Bytes sent as they are (complete RESP of arguments without `__key__`).
    Static(Vec<u8>),
    /// An argument that contains the key: `parts` with [`Part::Key`] replaced.
    KeyArg {
        /// Length of the argument without its keys.
        fixed_len: usize,
        /// How many times the key occurs in it.
        keys: usize,
        /// The argument's parts in order.
        parts: Vec<Part>,
    },
}

/// A part of an argument that contains the key.
#[derive(Debug, Clone)]
enum Part {
    Lit(Vec<u8>),
    Key,
}

/// A compiled command template.
#[derive(Debug, Clone)]
pub struct Template {
    text: String,
    pieces: Vec<Piece>,
    uses_key: bool,
}

impl Template {
    /// Compiles `text` (arguments separated by whitespace) with `data` as the `__data__`
    /// value. Fails on an empty command.
    pub fn new(text: &str, data: &[u8]) -> Result<Self, String> {
        let args: Vec<&str> = text.split_whitespace().collect();
        if args.is_empty() {
            return Err("empty command template".into());
        }
        let mut pieces: Vec<Piece> = Vec::new();
        let mut head = Vec::new();
        head.push(b'*');
        head.extend_from_slice(itoa::Buffer::new().format(args.len()).as_bytes());
        head.extend_from_slice(b"\r\n");
        let mut pending = head;
        let mut uses_key = false;
        for arg in args {
            // Split the argument into literal, key and data parts.
            let mut parts: Vec<Part> = Vec::new();
            let mut keys = 0;
            let mut lit: Vec<u8> = Vec::new();
            let mut rest = arg;
            loop {
                let k = rest.find(KEY);
                let d = rest.find(DATA);
                let (at, is_key) = match (k, d) {
                    (None, None) => break,
                    (Some(k), None) => (k, true),
                    (None, Some(d)) => (d, false),
                    (Some(k), Some(d)) => {
                        if k < d {
                            (k, true)
                        } else {
                            (d, false)
                        }
                    }
                };
                lit.extend_from_slice(&rest.as_bytes()[..at]);
                if is_key {
                    parts.push(Part::Lit(std::mem::take(&mut lit)));
                    parts.push(Part::Key);
                    keys += 1;
                    rest = &rest[at + KEY.len()..];
                } else {
                    lit.extend_from_slice(data);
                    rest = &rest[at + DATA.len()..];
                }
            }
            lit.extend_from_slice(rest.as_bytes());
            parts.push(Part::Lit(lit));
            parts.retain(|p| !matches!(p, Part::Lit(l) if l.is_empty()));
            if keys == 0 {
                let value = match parts.pop() {
                    Some(Part::Lit(l)) => l,
                    _ => Vec::new(),
                };
                encode_bulk(&value, &mut pending);
            } else {
                uses_key = true;
                if !pending.is_empty() {
                    pieces.push(Piece::Static(std::mem::take(&mut pending)));
                }
                let fixed_len = parts
                    .iter()
                    .map(|p| match p {
                        Part::Lit(l) => l.len(),
                        Part::Key => 0,
                    })
                    .sum();
                pieces.push(Piece::KeyArg {
                    fixed_len,
                    keys,
                    parts,
                });
            }
        }
        if !pending.is_empty() {
            pieces.push(Piece::Static(pending));
        }
        Ok(Template {
            text: text.to_string(),
            pieces,
            uses_key,
        })
    }

    /// The template as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// True if the template contains `__key__`.
    pub fn uses_key(&self) -> bool {
        self.uses_key
    }

    /// An upper bound of the encoded size of one request (for sizing buffers).
    pub fn max_len(&self) -> usize {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Static(b) => b.len(),
                Piece::KeyArg {
                    fixed_len, keys, ..
                } => fixed_len + keys * 20 + 24,
            })
            .sum()
    }

    /// Appends the request for `key` to `out`.
    #[inline]
    pub fn encode(&self, key: u64, out: &mut Vec<u8>) {
        let mut kb = itoa::Buffer::new();
        let k = kb.format(key).as_bytes();
        for piece in &self.pieces {
            match piece {
                Piece::Static(b) => out.extend_from_slice(b),
                Piece::KeyArg {
                    fixed_len,
                    keys,
                    parts,
                } => {
                    out.push(b'$');
                    out.extend_from_slice(
                        itoa::Buffer::new()
                            .format(fixed_len + keys * k.len())
                            .as_bytes(),
                    );
                    out.extend_from_slice(b"\r\n");
                    for part in parts {
                        match part {
                            Part::Lit(l) => out.extend_from_slice(l),
                            Part::Key => out.extend_from_slice(k),
                        }
                    }
                    out.extend_from_slice(b"\r\n");
                }
            }
        }
    }
}

/// Appends `value` as a RESP bulk string.
fn encode_bulk(value: &[u8], out: &mut Vec<u8>) {
    out.push(b'$');
    out.extend_from_slice(itoa::Buffer::new().format(value.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// The value sent for `__data__`: `size` printable pseudo-random bytes (deterministic).
pub fn make_data(size: usize, seed: u64) -> Vec<u8> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut rng = crate::keys::SplitMix64::new(seed ^ 0x5EED_DA7A);
    (0..size)
        .map(|_| ALPHABET[rng.below(ALPHABET.len() as u64) as usize])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(t: &Template, key: u64) -> Vec<u8> {
        let mut v = Vec::new();
        t.encode(key, &mut v);
        assert!(v.len() <= t.max_len());
        v
    }

    #[test]
    fn set_and_get() {
        let t = Template::new("SET __key__ __data__", b"hello").unwrap();
        assert_eq!(
            enc(&t, 42),
            b"*3\r\n$3\r\nSET\r\n$2\r\n42\r\n$5\r\nhello\r\n".to_vec()
        );
        assert_eq!(
            enc(&t, 1_000_000),
            b"*3\r\n$3\r\nSET\r\n$7\r\n1000000\r\n$5\r\nhello\r\n".to_vec()
        );
        let t = Template::new("GET __key__", b"").unwrap();
        assert_eq!(enc(&t, 7), b"*2\r\n$3\r\nGET\r\n$1\r\n7\r\n".to_vec());
        assert!(t.uses_key());
    }

    #[test]
    fn embedded_and_repeated_placeholders() {
        let t = Template::new("HSET user:__key__ f-__key__ v__data__!", b"xy").unwrap();
        assert_eq!(
            enc(&t, 5),
            b"*4\r\n$4\r\nHSET\r\n$6\r\nuser:5\r\n$3\r\nf-5\r\n$4\r\nvxy!\r\n".to_vec()
        );
        let t = Template::new("  PING  ", b"").unwrap();
        assert_eq!(enc(&t, 1), b"*1\r\n$4\r\nPING\r\n".to_vec());
        assert!(!t.uses_key());
        let t = Template::new("SET __key____key__ __data____data__", b"ab").unwrap();
        assert_eq!(
            enc(&t, 12),
            b"*3\r\n$3\r\nSET\r\n$4\r\n1212\r\n$4\r\nabab\r\n".to_vec()
        );
        assert!(Template::new("   ", b"").is_err());
    }

    #[test]
    fn data_is_deterministic_and_sized() {
        assert_eq!(make_data(1024, 1).len(), 1024);
        assert_eq!(make_data(100, 3), make_data(100, 3));
        assert!(make_data(100, 3).iter().all(u8::is_ascii_alphanumeric));
    }
}
