//! A minimal incremental RESP reply parser: it only tells where each top-level reply ends and
//! whether it was a value, a nil or an error. Bulk payloads are skipped without being looked
//! at or copied, also when they are split over several reads, so the cost per reply is a
//! scan of its short header line.
//!
//! Understands RESP2 and RESP3 types: `+ - : $ *` and `_ , ( # ! = ~ > %`.

/// Marks a stack frame that is a RESP3 attribute (`|`), not an element of its parent.
const ATTRIBUTE: u64 = 1 << 63;

/// What a complete top-level reply was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply<'a> {
    /// Any non-nil, non-error reply (simple string, integer, bulk string, array, ...).
    Value,
    /// A nil: `$-1`, `*-1` or RESP3 `_` (a GET miss).
    Nil,
    /// An error reply; the message without the leading `-` (empty for RESP3 blob errors).
    Error(&'a [u8]),
}

/// The server sent something that is not RESP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "protocol error: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

/// Incremental parser state, kept between reads of one connection.
#[derive(Debug, Default)]
pub struct ReplyParser {
    /// Bytes of the current bulk payload (including its CRLF) not yet seen.
    bulk_left: usize,
    /// The current bulk payload is a RESP3 blob error.
    bulk_error: bool,
    /// Elements still expected by each open aggregate, innermost last.
    stack: Vec<u64>,
}

impl ReplyParser {
    /// A parser at a reply boundary.
    pub fn new() -> Self {
        ReplyParser {
            bulk_left: 0,
            bulk_error: false,
            stack: Vec::with_capacity(4),
        }
    }

    /// True when no reply is partially parsed.
    pub fn at_boundary(&self) -> bool {
        self.bulk_left == 0 && self.stack.is_empty()
    }

    /// Parses as much of `buf` as possible, calling `on_reply` for every complete top-level
    /// reply, and returns how many bytes were consumed. Unconsumed bytes (at most one
    /// incomplete header line) must be passed again, followed by more data, on the next call.
    #[inline]
    pub fn parse<F: FnMut(Reply<'_>)>(
        &mut self,
        buf: &[u8],
        mut on_reply: F,
    ) -> Result<usize, ProtocolError> {
        let mut pos = 0;
        loop {
            if self.bulk_left > 0 {
                let take = self.bulk_left.min(buf.len() - pos);
                pos += take;
                self.bulk_left -= take;
                if self.bulk_left > 0 {
                    return Ok(pos);
                }
                let kind = if std::mem::take(&mut self.bulk_error) {
                    Reply::Error(b"")
                } else {
                    Reply::Value
                };
                self.element_done(kind, &mut on_reply);
                continue;
            }
            let rest = &buf[pos..];
            let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                if rest.len() > 64 * 1024 {
                    return Err(ProtocolError("header line longer than 64 KiB".into()));
                }
                return Ok(pos);
            };
            if nl < 2 || rest[nl - 1] != b'\r' {
                return Err(ProtocolError(format!(
                    "bad line {:?}",
                    String::from_utf8_lossy(&rest[..nl.min(64)])
                )));
            }
            let kind = rest[0];
            let line = &rest[1..nl - 1];
            pos += nl + 1;
            match kind {
                b'+' | b':' | b',' | b'(' | b'#' => self.element_done(Reply::Value, &mut on_reply),
                b'-' => self.element_done(Reply::Error(line), &mut on_reply),
                b'_' => self.element_done(Reply::Nil, &mut on_reply),
                b'$' | b'=' | b'!' => {
                    let n = parse_len(line)?;
                    if n < 0 {
                        self.element_done(Reply::Nil, &mut on_reply);
                    } else {
                        self.bulk_left = n as usize + 2;
                        self.bulk_error = kind == b'!';
                    }
                }
                b'*' | b'~' | b'>' | b'%' => {
                    let n = parse_len(line)?;
                    if n < 0 {
                        self.element_done(Reply::Nil, &mut on_reply);
                    } else if n == 0 {
                        self.element_done(Reply::Value, &mut on_reply);
                    } else {
                        let n = n as u64 * if kind == b'%' { 2 } else { 1 };
                        self.stack.push(n);
                    }
                }
                b'|' => {
                    // RESP3 attribute: a map that precedes the reply it describes.
                    // Its 2n elements are parsed as a frame that, once complete, does
                    // not count as an element of anything.
                    let n = parse_len(line)?;
                    if n > 0 {
                        self.stack.push((n as u64 * 2) | ATTRIBUTE);
                    }
                }
                other => {
                    return Err(ProtocolError(format!(
                        "unexpected reply type byte {:?}",
                        other as char
                    )))
                }
            }
        }
    }

    /// One element (of the current aggregate, or a top-level reply) is complete.
    #[inline]
    fn element_done<F: FnMut(Reply<'_>)>(&mut self, kind: Reply<'_>, on_reply: &mut F) {
        loop {
            match self.stack.last_mut() {
                None => {
                    on_reply(kind);
                    return;
                }
                Some(left) => {
                    *left -= 1;
                    if *left & !ATTRIBUTE > 0 {
                        return;
                    }
                    let attribute = *left & ATTRIBUTE != 0;
                    self.stack.pop();
                    if attribute {
                        return;
                    }
                    if self.stack.is_empty() {
                        on_reply(Reply::Value);
                        return;
                    }
                    // The finished aggregate is one element of its parent: go on up.
                }
            }
        }
    }
}

/// Parses a RESP length (`-1` or a non-negative decimal).
#[inline]
fn parse_len(line: &[u8]) -> Result<i64, ProtocolError> {
    match line {
        b"-1" => Ok(-1),
        [] => Err(ProtocolError("empty length".into())),
        digits if digits.len() <= 18 && digits.iter().all(u8::is_ascii_digit) => Ok(digits
            .iter()
            .fold(0i64, |n, &d| n * 10 + i64::from(d - b'0'))),
        other => Err(ProtocolError(format!(
            "bad length {:?}",
            String::from_utf8_lossy(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Clone)]
    enum Owned {
        Value,
        Nil,
        Error(Vec<u8>),
    }

    fn own(r: Reply<'_>) -> Owned {
        match r {
            Reply::Value => Owned::Value,
            Reply::Nil => Owned::Nil,
            Reply::Error(e) => Owned::Error(e.to_vec()),
        }
    }

    /// Parses `input` fed in the given chunk sizes (cycled), keeping the unconsumed tail as a
    /// connection's read buffer would, and returns the replies.
    fn parse_chunked(input: &[u8], chunks: &[usize]) -> Vec<Owned> {
        let mut p = ReplyParser::new();
        let mut out = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        let mut fed = 0;
        let mut i = 0;
        while fed < input.len() {
            let n = chunks[i % chunks.len()].max(1).min(input.len() - fed);
            i += 1;
            buf.extend_from_slice(&input[fed..fed + n]);
            fed += n;
            let used = p.parse(&buf, |r| out.push(own(r))).unwrap();
            buf.drain(..used);
        }
        assert!(
            buf.is_empty(),
            "left over: {:?}",
            String::from_utf8_lossy(&buf)
        );
        assert!(p.at_boundary());
        out
    }

    fn sample() -> (Vec<u8>, Vec<Owned>) {
        let mut input = Vec::new();
        let mut want = Vec::new();
        let value = vec![b'x'; 1024];
        input.extend_from_slice(b"+OK\r\n");
        want.push(Owned::Value);
        input.extend_from_slice(b"$1024\r\n");
        input.extend_from_slice(&value);
        input.extend_from_slice(b"\r\n");
        want.push(Owned::Value);
        input.extend_from_slice(b"$-1\r\n");
        want.push(Owned::Nil);
        input.extend_from_slice(b"-ERR unknown command 'FOO'\r\n");
        want.push(Owned::Error(b"ERR unknown command 'FOO'".to_vec()));
        input.extend_from_slice(b":12345\r\n");
        want.push(Owned::Value);
        input.extend_from_slice(b"$0\r\n\r\n");
        want.push(Owned::Value);
        // A bulk payload that contains CRLF and looks like replies.
        input.extend_from_slice(b"$10\r\n+OK\r\n$-1\r\n\r\n");
        want.push(Owned::Value);
        input.extend_from_slice(b"*3\r\n$1\r\na\r\n$-1\r\n*2\r\n:1\r\n+x\r\n");
        want.push(Owned::Value);
        input.extend_from_slice(b"*0\r\n");
        want.push(Owned::Value);
        input.extend_from_slice(b"*-1\r\n");
        want.push(Owned::Nil);
        input.extend_from_slice(b"_\r\n");
        want.push(Owned::Nil);
        input.extend_from_slice(b"%2\r\n+a\r\n:1\r\n+b\r\n*1\r\n,1.5\r\n");
        want.push(Owned::Value);
        input.extend_from_slice(b"!5\r\nERR x\r\n");
        want.push(Owned::Error(Vec::new()));
        input.extend_from_slice(b"|1\r\n+ttl\r\n:3\r\n+OK\r\n");
        want.push(Owned::Value);
        input.extend_from_slice(b"+PONG\r\n");
        want.push(Owned::Value);
        (input, want)
    }

    #[test]
    fn parses_each_reply_type_in_one_read() {
        let (input, want) = sample();
        assert_eq!(parse_chunked(&input, &[input.len()]), want);
    }

    #[test]
    fn parses_replies_split_at_every_byte() {
        let (input, want) = sample();
        // Two reads split at every possible position.
        for cut in 1..input.len() {
            assert_eq!(
                parse_chunked(&input, &[cut, input.len()]),
                want,
                "split at {cut}"
            );
        }
        // Byte by byte, and assorted chunk sizes.
        for chunks in [
            &[1usize][..],
            &[2],
            &[3, 7],
            &[5, 1, 1000],
            &[13],
            &[1023, 1],
        ] {
            assert_eq!(parse_chunked(&input, chunks), want, "chunks {chunks:?}");
        }
    }

    #[test]
    fn incomplete_header_is_not_consumed() {
        let mut p = ReplyParser::new();
        let mut n = 0;
        assert_eq!(p.parse(b"$10", |_| n += 1).unwrap(), 0);
        assert_eq!(p.parse(b"+OK\r", |_| n += 1).unwrap(), 0);
        assert_eq!(p.parse(b"+OK\r\n+O", |_| n += 1).unwrap(), 5);
        assert_eq!(n, 1);
        // A bulk payload is consumed as it arrives.
        assert_eq!(p.parse(b"$1024\r\nabc", |_| n += 1).unwrap(), 10);
        assert!(!p.at_boundary());
        assert_eq!(n, 1);
    }

    #[test]
    fn many_pipelined_gets() {
        let mut input = Vec::new();
        for i in 0..1000 {
            if i % 3 == 0 {
                input.extend_from_slice(b"$-1\r\n");
            } else {
                input.extend_from_slice(b"$4\r\nabcd\r\n");
            }
        }
        let got = parse_chunked(&input, &[4096]);
        assert_eq!(got.len(), 1000);
        assert_eq!(got.iter().filter(|r| **r == Owned::Nil).count(), 334);
    }

    #[test]
    fn rejects_garbage() {
        let mut p = ReplyParser::new();
        assert!(p.parse(b"hello\r\n", |_| {}).is_err());
        let mut p = ReplyParser::new();
        assert!(p.parse(b"+OK\n", |_| {}).is_err());
        let mut p = ReplyParser::new();
        assert!(p.parse(b"$abc\r\n", |_| {}).is_err());
        let mut p = ReplyParser::new();
        assert!(p.parse(b"*-2\r\n", |_| {}).is_err());
    }
}
