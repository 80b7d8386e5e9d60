//! RESP2/RESP3 protocol support for Skerry (no I/O).
//!
//! * [`RequestParser`] parses client requests (multibulk `*N\r\n$len\r\n...` and
//!   inline commands) with the exact semantics of Redis 7.0
//!   (`processMultibulkBuffer`, `processInlineBuffer`, `sdssplitargs`). It is
//!   resumable: an incomplete request keeps its progress between calls.
//! * The reply encoders ([`simple`], [`error`], [`bulk`], [`double`], ...) append
//!   RESP2 or RESP3 replies to a `Vec<u8>`.
//! * [`decode_value`] and [`encode_command`] are the client side, used by tests
//!   and tools.
//! * [`format_double`] (Redis 8.0's `d2string`), [`format_double_shortest`]
//!   (fpconv's Grisu2), [`format_double_g17`] and [`format_long_double_human`]
//!   reproduce the number formatting Redis uses in replies.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod decode;
mod encode;
mod float;
mod grisu;
mod parser;

pub use decode::{decode_value, encode_value, DecodeError, Value};
pub use encode::{
    array_len, attribute_len, big_number, boolean, bulk, bulk_header, bulk_int, double,
    encode_command, error, integer, map_len, null, null_array, push_len, set_len, simple, verbatim,
    Proto,
};
pub use float::{
    double_to_i64_exact, format_double, format_double_g17, format_double_shortest,
    format_long_double_human,
};
pub use parser::{Parsed, RequestParser};

use std::fmt;

/// Redis's `PROTO_INLINE_MAX_SIZE`: the default maximum length of an inline
/// request line (and of a `*count` / `$len` header line).
pub const PROTO_INLINE_MAX_SIZE: usize = 64 * 1024;

/// Limits enforced while parsing requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Maximum length of one bulk argument (Redis `proto-max-bulk-len`,
    /// default 512 MiB). A longer `$len` is rejected with
    /// [`ProtocolError::InvalidBulkLength`].
    pub max_bulk_len: u64,
    /// Maximum length of a line whose terminator has not been seen yet (Redis
    /// `PROTO_INLINE_MAX_SIZE`, default 64 KiB). Applies to inline requests
    /// ([`ProtocolError::TooBigInline`]) and, as in Redis, to the `*count`
    /// ([`ProtocolError::TooBigMbulkCount`]) and `$len`
    /// ([`ProtocolError::TooBigBulkCount`]) header lines.
    pub max_inline_len: usize,
    /// Maximum number of arguments of a multibulk request (default 1024*1024).
    /// A larger count is rejected with [`ProtocolError::InvalidMultibulkLength`].
    pub max_multibulk_len: u64,
    /// The client has not authenticated while a password is required: as in Redis, a
    /// request may then hold at most 10 arguments
    /// ([`ProtocolError::UnauthenticatedMultibulkLength`]) of at most 16 KiB each
    /// ([`ProtocolError::UnauthenticatedBulkLength`]).
    pub unauthenticated: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            max_inline_len: PROTO_INLINE_MAX_SIZE,
            max_multibulk_len: 1024 * 1024,
            unauthenticated: false,
        }
    }
}

/// Protocol errors found while parsing a request.
///
/// `Display` gives Redis's exact text without the leading `"-ERR "`; use
/// [`ProtocolError::write_reply`] to append the complete error reply. After a
/// protocol error Redis replies and closes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    /// `Protocol error: invalid multibulk length`
    InvalidMultibulkLength,
    /// `Protocol error: invalid bulk length`
    InvalidBulkLength,
    /// `Protocol error: expected '$', got 'X'` where X is the offending byte.
    ExpectedDollar(u8),
    /// `Protocol error: unbalanced quotes in request`
    UnbalancedQuotes,
    /// `Protocol error: too big inline request`
    TooBigInline,
    /// `Protocol error: too big mbulk count string`
    TooBigMbulkCount,
    /// `Protocol error: too big bulk count string`
    TooBigBulkCount,
    /// `Protocol error: unauthenticated multibulk length`
    UnauthenticatedMultibulkLength,
    /// `Protocol error: unauthenticated bulk length`
    UnauthenticatedBulkLength,
}

impl ProtocolError {
    /// The message as bytes, exactly as Redis sends it after `-ERR ` (the byte
    /// of [`ProtocolError::ExpectedDollar`] is copied raw, like C's `%c`, but
    /// `\r` and `\n` are replaced by a space as Redis's `addReplyErrorFormat`
    /// does).
    pub fn message_bytes(&self, out: &mut Vec<u8>) {
        match *self {
            ProtocolError::ExpectedDollar(b) => {
                out.extend_from_slice(b"Protocol error: expected '$', got '");
                out.push(if b == b'\r' || b == b'\n' { b' ' } else { b });
                out.push(b'\'');
            }
            _ => out.extend_from_slice(self.static_text().as_bytes()),
        }
    }

    /// Appends the complete error reply `-ERR <message>\r\n` to `out`.
    pub fn write_reply(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"-ERR ");
        self.message_bytes(out);
        out.extend_from_slice(b"\r\n");
    }

    fn static_text(&self) -> &'static str {
        match self {
            ProtocolError::InvalidMultibulkLength => "Protocol error: invalid multibulk length",
            ProtocolError::InvalidBulkLength => "Protocol error: invalid bulk length",
            ProtocolError::ExpectedDollar(_) => "Protocol error: expected '$', got '?'",
            ProtocolError::UnbalancedQuotes => "Protocol error: unbalanced quotes in request",
            ProtocolError::TooBigInline => "Protocol error: too big inline request",
            ProtocolError::TooBigMbulkCount => "Protocol error: too big mbulk count string",
            ProtocolError::TooBigBulkCount => "Protocol error: too big bulk count string",
            ProtocolError::UnauthenticatedMultibulkLength => {
                "Protocol error: unauthenticated multibulk length"
            }
            ProtocolError::UnauthenticatedBulkLength => {
                "Protocol error: unauthenticated bulk length"
            }
        }
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ProtocolError::ExpectedDollar(b) => {
                write!(f, "Protocol error: expected '$', got '{}'", b as char)
            }
            _ => f.write_str(self.static_text()),
        }
    }
}

impl std::error::Error for ProtocolError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_error_texts() {
        let cases = [
            (
                ProtocolError::InvalidMultibulkLength,
                "Protocol error: invalid multibulk length",
            ),
            (
                ProtocolError::InvalidBulkLength,
                "Protocol error: invalid bulk length",
            ),
            (
                ProtocolError::ExpectedDollar(b'x'),
                "Protocol error: expected '$', got 'x'",
            ),
            (
                ProtocolError::UnbalancedQuotes,
                "Protocol error: unbalanced quotes in request",
            ),
            (
                ProtocolError::TooBigInline,
                "Protocol error: too big inline request",
            ),
            (
                ProtocolError::TooBigMbulkCount,
                "Protocol error: too big mbulk count string",
            ),
            (
                ProtocolError::TooBigBulkCount,
                "Protocol error: too big bulk count string",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
            let mut out = Vec::new();
            e.message_bytes(&mut out);
            assert_eq!(out, text.as_bytes());
            let mut reply = Vec::new();
            e.write_reply(&mut reply);
            assert_eq!(reply, format!("-ERR {text}\r\n").into_bytes());
        }
    }

    #[test]
    fn expected_dollar_sanitizes_crlf() {
        let mut out = Vec::new();
        ProtocolError::ExpectedDollar(b'\r').write_reply(&mut out);
        assert_eq!(out, b"-ERR Protocol error: expected '$', got ' '\r\n");
        let mut out = Vec::new();
        ProtocolError::ExpectedDollar(0xff).message_bytes(&mut out);
        assert_eq!(out, b"Protocol error: expected '$', got '\xff'");
    }

    #[test]
    fn default_limits() {
        let l = Limits::default();
        assert_eq!(l.max_bulk_len, 536_870_912);
        assert_eq!(l.max_inline_len, 65_536);
        assert_eq!(l.max_multibulk_len, 1_048_576);
    }
}
