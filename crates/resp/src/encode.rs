//! Reply encoders (server side) and the command encoder (client side).

use crate::float::format_double;

/// Protocol version negotiated by the client (`HELLO 2` / `HELLO 3`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Proto {
    /// RESP2, the default.
    #[default]
    Resp2,
    /// RESP3.
    Resp3,
}

const CRLF: &[u8] = b"\r\n";

#[inline]
fn header(out: &mut Vec<u8>, prefix: u8, n: u64) {
    let mut b = itoa::Buffer::new();
    out.push(prefix);
    out.extend_from_slice(b.format(n).as_bytes());
    out.extend_from_slice(CRLF);
}

/// Appends a simple string `+s\r\n`. `s` must not contain `\r` or `\n`.
#[inline]
pub fn simple(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'+');
    out.extend_from_slice(s);
    out.extend_from_slice(CRLF);
}

/// Appends an error reply `-s\r\n`. The caller passes the code and message
/// (`"ERR ..."`, `"WRONGTYPE ..."`); a leading `-` in `s` is not doubled. Any
/// `\r` or `\n` in `s` is replaced by a space, as Redis does.
pub fn error(out: &mut Vec<u8>, s: &[u8]) {
    let s = s.strip_prefix(b"-").unwrap_or(s);
    out.push(b'-');
    let start = out.len();
    out.extend_from_slice(s);
    for c in &mut out[start..] {
        if *c == b'\r' || *c == b'\n' {
            *c = b' ';
        }
    }
    out.extend_from_slice(CRLF);
}

/// Appends an integer reply `:n\r\n`.
#[inline]
pub fn integer(out: &mut Vec<u8>, n: i64) {
    let mut b = itoa::Buffer::new();
    out.push(b':');
    out.extend_from_slice(b.format(n).as_bytes());
    out.extend_from_slice(CRLF);
}

/// Appends a bulk string `$len\r\n<b>\r\n`.
#[inline]
pub fn bulk(out: &mut Vec<u8>, b: &[u8]) {
    bulk_header(out, b.len());
    out.extend_from_slice(b);
    out.extend_from_slice(CRLF);
}

/// Appends only the header `$len\r\n` of a bulk string; the caller then
/// writes exactly `len` bytes followed by `\r\n` (for values streamed from
/// storage).
#[inline]
pub fn bulk_header(out: &mut Vec<u8>, len: usize) {
    header(out, b'$', len as u64);
}

/// Appends an integer as a bulk string (`$2\r\n42\r\n`), without allocating.
pub fn bulk_int(out: &mut Vec<u8>, n: i64) {
    let mut b = itoa::Buffer::new();
    bulk(out, b.format(n).as_bytes());
}

/// Appends a null: RESP2 `$-1\r\n` (null bulk), RESP3 `_\r\n`.
#[inline]
pub fn null(out: &mut Vec<u8>, p: Proto) {
    out.extend_from_slice(match p {
        Proto::Resp2 => b"$-1\r\n",
        Proto::Resp3 => b"_\r\n",
    });
}

/// Appends a null array: RESP2 `*-1\r\n`, RESP3 `_\r\n`.
#[inline]
pub fn null_array(out: &mut Vec<u8>, p: Proto) {
    out.extend_from_slice(match p {
        Proto::Resp2 => b"*-1\r\n",
        Proto::Resp3 => b"_\r\n",
    });
}

/// Appends an array header `*n\r\n`; `n` elements must follow.
#[inline]
pub fn array_len(out: &mut Vec<u8>, n: usize) {
    header(out, b'*', n as u64);
}

/// Appends a map header of `n` key/value pairs: RESP3 `%n\r\n`, RESP2 a flat
/// array `*2n\r\n`.
#[inline]
pub fn map_len(out: &mut Vec<u8>, n: usize, p: Proto) {
    match p {
        Proto::Resp2 => header(out, b'*', 2 * n as u64),
        Proto::Resp3 => header(out, b'%', n as u64),
    }
}

/// Appends a set header: RESP3 `~n\r\n`, RESP2 `*n\r\n`.
#[inline]
pub fn set_len(out: &mut Vec<u8>, n: usize, p: Proto) {
    match p {
        Proto::Resp2 => header(out, b'*', n as u64),
        Proto::Resp3 => header(out, b'~', n as u64),
    }
}

/// Appends a push header: RESP3 `>n\r\n`, RESP2 `*n\r\n`.
#[inline]
pub fn push_len(out: &mut Vec<u8>, n: usize, p: Proto) {
    match p {
        Proto::Resp2 => header(out, b'*', n as u64),
        Proto::Resp3 => header(out, b'>', n as u64),
    }
}

/// Appends an attribute header `|n\r\n` (RESP3 only; `n` key/value pairs
/// follow, then the value they annotate).
#[inline]
pub fn attribute_len(out: &mut Vec<u8>, n: usize) {
    header(out, b'|', n as u64);
}

/// Appends a double like Redis 8.0 `addReplyDouble`: RESP3 `,<repr>\r\n`,
/// RESP2 a bulk string of `<repr>`, where `<repr>` is Redis's `d2string` (see
/// [`crate::format_double`]: `0.1` → `0.1`, `3.0` → `3`, `1e20` → `1e+20`);
/// infinities are `inf` / `-inf`, NaN is `nan`.
pub fn double(out: &mut Vec<u8>, d: f64, p: Proto) {
    match p {
        Proto::Resp2 => {
            // The text is at most 25 bytes: format it in place, then put the
            // `$len\r\n` header in front of it.
            let start = out.len();
            format_double(d, out);
            let n = out.len() - start;
            let mut h = [b'$', b'0', b'0', b'\r', b'\n'];
            let header: &[u8] = if n < 10 {
                h[1] = b'0' + n as u8;
                h[2] = b'\r';
                h[3] = b'\n';
                &h[..4]
            } else {
                h[1] = b'0' + (n / 10) as u8;
                h[2] = b'0' + (n % 10) as u8;
                &h[..]
            };
            out.splice(start..start, header.iter().copied());
            out.extend_from_slice(CRLF);
        }
        Proto::Resp3 => {
            out.push(b',');
            format_double(d, out);
            out.extend_from_slice(CRLF);
        }
    }
}

/// Appends a boolean: RESP3 `#t\r\n` / `#f\r\n`, RESP2 `:1\r\n` / `:0\r\n`.
#[inline]
pub fn boolean(out: &mut Vec<u8>, b: bool, p: Proto) {
    out.extend_from_slice(match (p, b) {
        (Proto::Resp2, true) => b":1\r\n",
        (Proto::Resp2, false) => b":0\r\n",
        (Proto::Resp3, true) => b"#t\r\n",
        (Proto::Resp3, false) => b"#f\r\n",
    });
}

/// Appends a big number: RESP3 `(<digits>\r\n`, RESP2 a bulk string.
pub fn big_number(out: &mut Vec<u8>, digits: &[u8], p: Proto) {
    match p {
        Proto::Resp2 => bulk(out, digits),
        Proto::Resp3 => {
            out.push(b'(');
            out.extend_from_slice(digits);
            out.extend_from_slice(CRLF);
        }
    }
}

/// Appends a verbatim string: RESP3 `=<len>\r\n<fmt>:<text>\r\n` (len counts
/// the 4 bytes of `fmt:`), RESP2 a bulk string of `text`.
pub fn verbatim(out: &mut Vec<u8>, format: &[u8; 3], text: &[u8], p: Proto) {
    match p {
        Proto::Resp2 => bulk(out, text),
        Proto::Resp3 => {
            header(out, b'=', text.len() as u64 + 4);
            out.extend_from_slice(format);
            out.push(b':');
            out.extend_from_slice(text);
            out.extend_from_slice(CRLF);
        }
    }
}

/// Encodes a command as a multibulk request `*N\r\n$len\r\narg\r\n...`.
pub fn encode_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    array_len(out, args.len());
    for a in args {
        bulk(out, a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Proto::*;

    fn enc(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut v = Vec::new();
        f(&mut v);
        v
    }

    #[test]
    fn scalars() {
        assert_eq!(enc(|o| simple(o, b"OK")), b"+OK\r\n");
        assert_eq!(enc(|o| error(o, b"ERR bad")), b"-ERR bad\r\n");
        assert_eq!(enc(|o| error(o, b"-ERR bad")), b"-ERR bad\r\n");
        assert_eq!(enc(|o| error(o, b"ERR a\r\nb\nc")), b"-ERR a  b c\r\n");
        assert_eq!(enc(|o| integer(o, 0)), b":0\r\n");
        assert_eq!(enc(|o| integer(o, -42)), b":-42\r\n");
        assert_eq!(enc(|o| integer(o, i64::MIN)), b":-9223372036854775808\r\n");
        assert_eq!(enc(|o| bulk(o, b"hello")), b"$5\r\nhello\r\n");
        assert_eq!(enc(|o| bulk(o, b"")), b"$0\r\n\r\n");
        assert_eq!(enc(|o| bulk_header(o, 1000)), b"$1000\r\n");
        assert_eq!(enc(|o| bulk_int(o, -123)), b"$4\r\n-123\r\n");
        assert_eq!(enc(|o| null(o, Resp2)), b"$-1\r\n");
        assert_eq!(enc(|o| null(o, Resp3)), b"_\r\n");
        assert_eq!(enc(|o| null_array(o, Resp2)), b"*-1\r\n");
        assert_eq!(enc(|o| null_array(o, Resp3)), b"_\r\n");
        assert_eq!(enc(|o| boolean(o, true, Resp2)), b":1\r\n");
        assert_eq!(enc(|o| boolean(o, false, Resp2)), b":0\r\n");
        assert_eq!(enc(|o| boolean(o, true, Resp3)), b"#t\r\n");
        assert_eq!(enc(|o| boolean(o, false, Resp3)), b"#f\r\n");
        assert_eq!(enc(|o| big_number(o, b"123", Resp3)), b"(123\r\n");
        assert_eq!(enc(|o| big_number(o, b"123", Resp2)), b"$3\r\n123\r\n");
        assert_eq!(
            enc(|o| verbatim(o, b"txt", b"hi", Resp3)),
            b"=6\r\ntxt:hi\r\n"
        );
        assert_eq!(enc(|o| verbatim(o, b"txt", b"hi", Resp2)), b"$2\r\nhi\r\n");
    }

    #[test]
    fn aggregates() {
        assert_eq!(enc(|o| array_len(o, 3)), b"*3\r\n");
        assert_eq!(enc(|o| map_len(o, 2, Resp3)), b"%2\r\n");
        assert_eq!(enc(|o| map_len(o, 2, Resp2)), b"*4\r\n");
        assert_eq!(enc(|o| set_len(o, 2, Resp3)), b"~2\r\n");
        assert_eq!(enc(|o| set_len(o, 2, Resp2)), b"*2\r\n");
        assert_eq!(enc(|o| push_len(o, 3, Resp3)), b">3\r\n");
        assert_eq!(enc(|o| push_len(o, 3, Resp2)), b"*3\r\n");
        assert_eq!(enc(|o| attribute_len(o, 1)), b"|1\r\n");
    }

    #[test]
    fn doubles() {
        assert_eq!(enc(|o| double(o, 1.5, Resp3)), b",1.5\r\n");
        assert_eq!(enc(|o| double(o, 1.5, Resp2)), b"$3\r\n1.5\r\n");
        assert_eq!(enc(|o| double(o, 0.1, Resp3)), b",0.1\r\n");
        assert_eq!(enc(|o| double(o, 0.1, Resp2)), b"$3\r\n0.1\r\n");
        assert_eq!(enc(|o| double(o, -0.0, Resp2)), b"$2\r\n-0\r\n");
        assert_eq!(enc(|o| double(o, 1e17, Resp3)), b",100000000000000000\r\n");
        assert_eq!(
            enc(|o| double(o, 1.0 / 3.0, Resp2)),
            b"$18\r\n0.3333333333333333\r\n"
        );
        assert_eq!(
            enc(|o| double(o, -1.2345678901234567e-300, Resp2)),
            b"$24\r\n-1.2345678901234568e-300\r\n"
        );
        assert_eq!(enc(|o| double(o, f64::INFINITY, Resp3)), b",inf\r\n");
        assert_eq!(enc(|o| double(o, f64::NEG_INFINITY, Resp3)), b",-inf\r\n");
        assert_eq!(enc(|o| double(o, f64::INFINITY, Resp2)), b"$3\r\ninf\r\n");
        assert_eq!(
            enc(|o| double(o, f64::NEG_INFINITY, Resp2)),
            b"$4\r\n-inf\r\n"
        );
        assert_eq!(enc(|o| double(o, f64::NAN, Resp3)), b",nan\r\n");
        assert_eq!(enc(|o| double(o, 1e20, Resp2)), b"$5\r\n1e+20\r\n");
        assert_eq!(
            enc(|o| double(o, -f64::MIN_POSITIVE, Resp3)),
            b",-2.2250738585072014e-308\r\n"
        );
    }

    #[test]
    fn command() {
        assert_eq!(
            enc(|o| encode_command(o, &[b"SET", b"k", b""])),
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"
        );
        assert_eq!(enc(|o| encode_command(o, &[])), b"*0\r\n");
    }
}
