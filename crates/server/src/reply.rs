//! The reply buffer of a connection: RESP encoding in the client's protocol version.

use skerry_resp::{self as resp, Proto};

/// Replies accumulate here and leave in one write per batch.
pub struct Reply {
    /// Encoded bytes.
    pub buf: Vec<u8>,
    /// The client's protocol.
    pub proto: Proto,
}

/// Redis's standard error texts.
pub mod errors {
    /// Wrong type.
    pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    /// Bad integer.
    pub const NOT_INT: &str = "ERR value is not an integer or out of range";
    /// Bad float.
    pub const NOT_FLOAT: &str = "ERR value is not a valid float";
    /// Syntax.
    pub const SYNTAX: &str = "ERR syntax error";
    /// Overflow.
    pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
    /// String too long.
    pub const TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
    /// Authentication needed.
    pub const NOAUTH: &str = "NOAUTH Authentication required.";
}

impl Reply {
    /// An empty buffer for `proto`.
    pub fn new(proto: Proto) -> Self {
        Reply {
            buf: Vec::with_capacity(16 * 1024),
            proto,
        }
    }

    /// An empty buffer for `proto` that allocates only when written to (one command's
    /// reply inside a transaction or a script).
    pub fn lazy(proto: Proto) -> Self {
        Reply {
            buf: Vec::new(),
            proto,
        }
    }

    /// `+OK`.
    #[inline]
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }
    /// A simple string.
    #[inline]
    pub fn simple(&mut self, s: &str) {
        resp::simple(&mut self.buf, s.as_bytes());
    }
    /// An error; `msg` starts with its code (`ERR ...`, `WRONGTYPE ...`).
    #[inline]
    pub fn error(&mut self, msg: &str) {
        resp::error(&mut self.buf, msg.as_bytes());
    }
    /// An array of simple strings (HELP texts).
    pub fn simple_lines(&mut self, lines: &[&str]) {
        self.array(lines.len());
        for l in lines {
            self.simple(l);
        }
    }

    /// An integer.
    pub fn int(&mut self, n: i64) {
        resp::integer(&mut self.buf, n);
    }
    /// A bulk string.
    #[inline]
    pub fn bulk(&mut self, b: &[u8]) {
        resp::bulk(&mut self.buf, b);
    }
    /// A null bulk string (`$-1` / `_`).
    #[inline]
    pub fn null(&mut self) {
        resp::null(&mut self.buf, self.proto);
    }
    /// A null array (`*-1` / `_`).
    #[inline]
    pub fn null_array(&mut self) {
        resp::null_array(&mut self.buf, self.proto);
    }
    /// An array header.
    #[inline]
    pub fn array(&mut self, n: usize) {
        resp::array_len(&mut self.buf, n);
    }
    /// A map header (flattened to an array in RESP2).
    #[inline]
    pub fn map(&mut self, n: usize) {
        resp::map_len(&mut self.buf, n, self.proto);
    }
    /// A set header (an array in RESP2).
    #[inline]
    pub fn set(&mut self, n: usize) {
        resp::set_len(&mut self.buf, n, self.proto);
    }
    /// A double (a bulk string in RESP2).
    #[inline]
    pub fn double(&mut self, d: f64) {
        resp::double(&mut self.buf, d, self.proto);
    }
    /// A boolean (0/1 in RESP2).
    #[inline]
    pub fn boolean(&mut self, b: bool) {
        resp::boolean(&mut self.buf, b, self.proto);
    }
    /// A verbatim string (a bulk string in RESP2).
    #[inline]
    pub fn verbatim(&mut self, text: &[u8]) {
        resp::verbatim(&mut self.buf, b"txt", text, self.proto);
    }
    /// An integer as a bulk string.
    #[inline]
    pub fn bulk_int(&mut self, n: i64) {
        resp::bulk_int(&mut self.buf, n);
    }
    /// A bulk string from text.
    #[inline]
    pub fn bulk_str(&mut self, s: &str) {
        resp::bulk(&mut self.buf, s.as_bytes());
    }
}
