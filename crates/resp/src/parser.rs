//! Resumable request parser: multibulk and inline requests, Redis 7.0 semantics.

use crate::{Limits, ProtocolError};
use memchr::memchr;

/// Outcome of one parse attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole request was parsed; it used `consumed` bytes of the buffer. Its
    /// arguments are available via [`RequestParser::args`]. `argc()` may be 0
    /// (an empty inline line, or `*0\r\n` / `*-1\r\n`): the caller then just
    /// skips it.
    Complete {
        /// Number of bytes of the buffer (from `buf[0]`) used by the request.
        consumed: usize,
    },
    /// More bytes are needed. `hint` is the minimum total number of buffered
    /// bytes (counted from the start of this request, i.e. `buf[0]`) needed
    /// before another attempt can make progress. While a bulk value is being
    /// read it is the exact end of that value (plus its CRLF), so the caller
    /// can grow its buffer once; while a line is incomplete it is
    /// `buf.len() + 1`.
    Incomplete {
        /// Minimum buffer length (from `buf[0]`) for the next attempt.
        hint: usize,
    },
}

/// Where the argument ranges of the last complete request point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Source {
    /// Ranges index the caller's buffer (multibulk, zero copy).
    #[default]
    Buf,
    /// Ranges index `RequestParser::scratch` (inline requests, unescaped).
    Scratch,
}

/// Resumable request parser (multibulk `*N\r\n$len\r\n...` and inline commands).
///
/// Replicates Redis 7.0 `processMultibulkBuffer`, `processInlineBuffer` and
/// `sdssplitargs`. One parser belongs to one connection. The multibulk path
/// does not allocate once the internal vector of argument ranges has grown to
/// the largest argument count seen.
///
/// Length limits are applied to the length of a line (the bytes before its
/// terminator) whether or not the terminator has arrived yet, so the outcome
/// never depends on how the bytes were split into reads. Redis checks only
/// while the terminator is missing, but as it reads at most 16 KiB at a time
/// it rejects the same over-long lines in practice.
///
/// Differences from Redis, which operates on NUL-terminated C strings:
/// Redis's `strchr` stops at a NUL byte, so a NUL before the line terminator
/// makes Redis wait for more data until the length limit is hit. This parser
/// searches the terminator over all bytes; an inline line is then split only
/// up to its first NUL byte (as `sdssplitargs` does) and a header line with a
/// NUL is an invalid length.
///
/// ```
/// use skerry_resp::{Limits, Parsed, RequestParser};
///
/// let mut parser = RequestParser::new();
/// let limits = Limits::default();
/// let mut buf = b"*2\r\n$3\r\nGET\r\n$1\r".to_vec();
/// assert_eq!(parser.parse(&buf, &limits), Ok(Parsed::Incomplete { hint: 17 }));
/// buf.extend_from_slice(b"\nk\r\nPING\r\n");
/// let Ok(Parsed::Complete { consumed }) = parser.parse(&buf, &limits) else { panic!() };
/// assert_eq!(parser.args(&buf).collect::<Vec<_>>(), [&b"GET"[..], b"k"]);
/// let rest = &buf[consumed..];
/// assert_eq!(parser.parse(rest, &limits), Ok(Parsed::Complete { consumed: 6 }));
/// assert_eq!(parser.arg(rest, 0), b"PING");
/// ```
#[derive(Debug, Default)]
pub struct RequestParser {
    /// Arguments still to read in the current multibulk request; 0 when no
    /// multibulk request is in progress.
    remaining: usize,
    /// Offset (from the start of the request) of the next unread byte of the
    /// multibulk request in progress.
    pos: usize,
    /// Length of the bulk argument whose `$len` header has been read.
    bulk_len: Option<usize>,
    /// Offset up to which the line being read was searched without finding
    /// its terminator (avoids rescanning on each small read).
    scanned: usize,
    /// Argument ranges (start, end) of the last complete request.
    ranges: Vec<(usize, usize)>,
    /// Unescaped inline arguments.
    scratch: Vec<u8>,
    /// What `ranges` index.
    source: Source,
}

/// Result of looking for the terminator of a line.
enum Line {
    /// Terminator at this absolute offset.
    Found(usize),
    /// Not found yet; the line is still within the limit.
    Incomplete,
    /// The line is longer than the limit.
    TooBig,
}

/// Result of reading a header line.
enum Header {
    /// Fast path: a non-negative number and the offset of its `\r`.
    Digits(u64, usize),
    /// A complete line whose `\r` is at this offset; content not yet checked.
    Line(usize),
    /// More bytes needed; the hint.
    Incomplete(usize),
    /// Line longer than the limit.
    TooBig,
}

/// `buf[start]` is `ty` (`*` or `$`), followed by 1..=18 digits without a leading
/// zero (or a lone `0`), then `\r` and at least one more byte. Returns the
/// number and the offset of the `\r`.
#[inline]
fn fast_digits(buf: &[u8], start: usize, ty: u8) -> Option<(u64, usize)> {
    let line = buf.get(start..)?;
    if line.len() < 4 || line[0] != ty {
        return None;
    }
    let first = line[1];
    if !first.is_ascii_digit() {
        return None;
    }
    let mut v = u64::from(first - b'0');
    let mut i = 2;
    while i < line.len() && line[i].is_ascii_digit() {
        v = v * 10 + u64::from(line[i] - b'0');
        i += 1;
        if i > 19 {
            return None;
        }
    }
    // need '\r' plus one more byte; no leading zero unless the number is "0"
    if i + 1 >= line.len() || line[i] != b'\r' || (first == b'0' && i != 2) {
        return None;
    }
    Some((v, start + i))
}

impl RequestParser {
    /// Creates a parser in its initial state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses one request starting at `buf[0]`.
    ///
    /// On [`Parsed::Incomplete`] the parser keeps its progress (the multibulk
    /// argument it reached and its offsets); the next call must pass a buffer
    /// that starts with the same bytes (the caller only appends). After
    /// [`Parsed::Complete`] the next call starts a fresh request at the new
    /// `buf[0]` (the caller has advanced past `consumed`). After an error the
    /// parser is reset; Redis closes the connection after replying with the
    /// error. Never panics.
    pub fn parse(&mut self, buf: &[u8], limits: &Limits) -> Result<Parsed, ProtocolError> {
        let r = if self.remaining > 0 {
            self.parse_bulks(buf, limits)
        } else {
            match buf.first() {
                None => Ok(Parsed::Incomplete { hint: 1 }),
                Some(b'*') => self.parse_multibulk(buf, limits),
                Some(_) => self.parse_inline(buf, limits),
            }
        };
        if r.is_err() {
            self.reset();
        }
        r
    }

    /// Number of arguments of the last complete request.
    pub fn argc(&self) -> usize {
        self.ranges.len()
    }

    /// The `i`-th argument of the last complete request.
    ///
    /// `buf` must be the buffer passed to the [`RequestParser::parse`] call that
    /// returned [`Parsed::Complete`]. Multibulk arguments borrow `buf` (zero
    /// copy); inline arguments live in a scratch buffer of the parser. Valid
    /// until the next call of `parse`.
    ///
    /// # Panics
    ///
    /// If `i >= self.argc()` or `buf` is not the buffer that was parsed.
    pub fn arg<'a>(&'a self, buf: &'a [u8], i: usize) -> &'a [u8] {
        let (s, e) = self.ranges[i];
        match self.source {
            Source::Buf => &buf[s..e],
            Source::Scratch => &self.scratch[s..e],
        }
    }

    /// All arguments of the last complete request, with the borrowing rules of
    /// [`RequestParser::arg`].
    pub fn args<'a>(&'a self, buf: &'a [u8]) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        (0..self.ranges.len()).map(move |i| self.arg(buf, i))
    }

    /// The argument ranges (start, end; offsets from the request's first byte) of the
    /// last complete request, when its arguments lie in the parsed buffer (a multibulk
    /// request); None for an inline request, whose arguments were unescaped.
    pub fn arg_ranges(&self) -> Option<&[(usize, usize)]> {
        match self.source {
            Source::Buf => Some(&self.ranges),
            Source::Scratch => None,
        }
    }

    /// Makes the multibulk request whose argument ranges are `ranges` the last complete
    /// request, as if [`RequestParser::parse`] had just returned [`Parsed::Complete`] for
    /// it: for a caller that parsed the same bytes ahead with another parser (and the same
    /// limits) and kept [`RequestParser::arg_ranges`]. Only between requests (no request
    /// in progress).
    pub fn set_complete(&mut self, ranges: impl Iterator<Item = (usize, usize)>) {
        debug_assert_eq!(self.remaining, 0, "a request is in progress");
        self.reset();
        self.ranges.extend(ranges);
    }

    /// Resets the resume state (after an error, or when the connection is
    /// reset). The arguments of the last request are forgotten.
    pub fn reset(&mut self) {
        self.remaining = 0;
        self.pos = 0;
        self.bulk_len = None;
        self.scanned = 0;
        self.ranges.clear();
        self.scratch.clear();
        self.source = Source::Buf;
    }

    /// Looks for `needle` terminating the line that starts at `start`. The line
    /// (bytes before the terminator) may be at most `max` bytes long.
    fn find_line_end(&mut self, buf: &[u8], start: usize, needle: u8, max: usize) -> Line {
        let from = self.scanned.max(start);
        let window_end = buf.len().min(start.saturating_add(max).saturating_add(1));
        if from < window_end {
            if let Some(i) = memchr(needle, &buf[from..window_end]) {
                return Line::Found(from + i);
            }
        }
        if buf.len() - start > max {
            Line::TooBig
        } else {
            self.scanned = buf.len();
            Line::Incomplete
        }
    }

    /// Reads the `*count` / `$len` header line starting at `start` (whose
    /// first byte should be the type byte `ty`). Fast path: the type byte is `ty`
    /// and is followed by plain digits (no leading zero, fits in i64) and
    /// `\r` plus one more byte; this is exactly what Redis's "first `\r`, then
    /// `string2ll`" accepts for non-negative numbers. Anything else goes
    /// through the general path, which checks the line length limit and
    /// completeness and leaves the interpretation to the caller.
    #[inline]
    fn header_line(&mut self, buf: &[u8], start: usize, ty: u8, max: usize) -> Header {
        if let Some((n, cr)) = fast_digits(buf, start, ty) {
            if cr - start <= max {
                self.scanned = 0;
                return Header::Digits(n, cr);
            }
        }
        let cr = match self.find_line_end(buf, start, b'\r', max) {
            Line::Found(i) => i,
            Line::Incomplete => return Header::Incomplete(buf.len() + 1),
            Line::TooBig => return Header::TooBig,
        };
        // Redis only requires one more byte after '\r' (it does not check it is '\n').
        if cr + 2 > buf.len() {
            return Header::Incomplete(cr + 2);
        }
        self.scanned = 0;
        Header::Line(cr)
    }

    fn parse_multibulk(&mut self, buf: &[u8], limits: &Limits) -> Result<Parsed, ProtocolError> {
        self.ranges.clear();
        self.source = Source::Buf;
        let (count, cr) = match self.header_line(buf, 0, b'*', limits.max_inline_len) {
            Header::Digits(n, cr) => (n as i64, cr),
            Header::Line(cr) => (
                string2ll(&buf[1..cr]).ok_or(ProtocolError::InvalidMultibulkLength)?,
                cr,
            ),
            Header::Incomplete(hint) => return Ok(Parsed::Incomplete { hint }),
            Header::TooBig => return Err(ProtocolError::TooBigMbulkCount),
        };
        if count > 0 && count as u64 > limits.max_multibulk_len {
            return Err(ProtocolError::InvalidMultibulkLength);
        }
        if limits.unauthenticated && count > 10 {
            return Err(ProtocolError::UnauthenticatedMultibulkLength);
        }
        if count <= 0 {
            return Ok(Parsed::Complete { consumed: cr + 2 });
        }
        let count = usize::try_from(count).map_err(|_| ProtocolError::InvalidMultibulkLength)?;
        self.ranges.reserve(count.min(1024));
        self.remaining = count;
        self.pos = cr + 2;
        self.bulk_len = None;
        self.parse_bulks(buf, limits)
    }

    fn parse_bulks(&mut self, buf: &[u8], limits: &Limits) -> Result<Parsed, ProtocolError> {
        if self.pos > buf.len() {
            // Contract violation (the buffer shrank); never panic.
            return Ok(Parsed::Incomplete { hint: self.pos });
        }
        while self.remaining > 0 {
            let len = match self.bulk_len {
                Some(len) => len,
                None => {
                    let start = self.pos;
                    let (n, cr) = match self.header_line(buf, start, b'$', limits.max_inline_len) {
                        Header::Digits(n, cr) => (n as i64, cr),
                        Header::Line(cr) => {
                            if buf[start] != b'$' {
                                return Err(ProtocolError::ExpectedDollar(buf[start]));
                            }
                            (
                                string2ll(&buf[start + 1..cr])
                                    .ok_or(ProtocolError::InvalidBulkLength)?,
                                cr,
                            )
                        }
                        Header::Incomplete(hint) => return Ok(Parsed::Incomplete { hint }),
                        Header::TooBig => return Err(ProtocolError::TooBigBulkCount),
                    };
                    if n < 0 || n as u64 > limits.max_bulk_len {
                        return Err(ProtocolError::InvalidBulkLength);
                    }
                    if limits.unauthenticated && n > 16384 {
                        return Err(ProtocolError::UnauthenticatedBulkLength);
                    }
                    let len = usize::try_from(n).map_err(|_| ProtocolError::InvalidBulkLength)?;
                    self.pos = cr + 2;
                    self.bulk_len = Some(len);
                    len
                }
            };
            let end = self.pos.saturating_add(len);
            let need = end.saturating_add(2);
            if buf.len() < need {
                return Ok(Parsed::Incomplete { hint: need });
            }
            // Like Redis, the two bytes after the value are skipped unchecked.
            self.ranges.push((self.pos, end));
            self.pos = need;
            self.bulk_len = None;
            self.remaining -= 1;
        }
        let consumed = self.pos;
        self.pos = 0;
        Ok(Parsed::Complete { consumed })
    }

    fn parse_inline(&mut self, buf: &[u8], limits: &Limits) -> Result<Parsed, ProtocolError> {
        self.ranges.clear();
        self.source = Source::Scratch;
        let nl = match self.find_line_end(buf, 0, b'\n', limits.max_inline_len) {
            Line::Found(i) => i,
            Line::Incomplete => {
                return Ok(Parsed::Incomplete {
                    hint: buf.len() + 1,
                })
            }
            Line::TooBig => return Err(ProtocolError::TooBigInline),
        };
        self.scanned = 0;
        let mut line = &buf[..nl];
        if let Some(stripped) = line.strip_suffix(b"\r") {
            line = stripped;
        }
        // sdssplitargs works on a C string: it ends at the first NUL.
        if let Some(z) = memchr(0, line) {
            line = &line[..z];
        }
        split_args(line, &mut self.scratch, &mut self.ranges)?;
        Ok(Parsed::Complete { consumed: nl + 1 })
    }
}

/// Redis `string2ll`: optional '-', then digits without leading zeros (a lone
/// "0" is allowed), no '+', no spaces, at most 20 bytes, must fit in i64.
pub(crate) fn string2ll(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() >= 21 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    let (&first, rest) = digits.split_first()?;
    if !(b'1'..=b'9').contains(&first) {
        return None;
    }
    let mut v = u64::from(first - b'0');
    for &c in rest {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if negative {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

/// C `isspace` in the "C" locale.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Redis `sdssplitargs` on a line without NUL bytes (the end of the slice
/// plays the role of the terminating NUL). Arguments are appended to
/// `scratch`, their ranges to `ranges`.
fn split_args(
    line: &[u8],
    scratch: &mut Vec<u8>,
    ranges: &mut Vec<(usize, usize)>,
) -> Result<(), ProtocolError> {
    scratch.clear();
    ranges.clear();
    let at = |i: usize| -> u8 { line.get(i).copied().unwrap_or(0) };
    let mut p = 0;
    loop {
        while p < line.len() && is_space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Ok(());
        }
        let start = scratch.len();
        let mut inq = false;
        let mut insq = false;
        let mut done = false;
        while !done {
            let c = at(p);
            if inq {
                if let (b'\\', b'x', Some(h), Some(l)) =
                    (c, at(p + 1), hex_val(at(p + 2)), hex_val(at(p + 3)))
                {
                    scratch.push(h * 16 + l);
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    scratch.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    // The closing quote must be followed by a space or nothing.
                    let next = at(p + 1);
                    if next != 0 && !is_space(next) {
                        return Err(ProtocolError::UnbalancedQuotes);
                    }
                    done = true;
                } else if c == 0 {
                    return Err(ProtocolError::UnbalancedQuotes);
                } else {
                    scratch.push(c);
                }
            } else if insq {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    scratch.push(b'\'');
                } else if c == b'\'' {
                    let next = at(p + 1);
                    if next != 0 && !is_space(next) {
                        return Err(ProtocolError::UnbalancedQuotes);
                    }
                    done = true;
                } else if c == 0 {
                    return Err(ProtocolError::UnbalancedQuotes);
                } else {
                    scratch.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    _ => scratch.push(c),
                }
            }
            if at(p) != 0 {
                p += 1;
            }
        }
        ranges.push((start, scratch.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_kept_by_one_parser_complete_another() {
        let buf = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n*1\r\n$4\r\nPING\r\n";
        let limits = Limits::default();
        let mut ahead = RequestParser::new();
        let Ok(Parsed::Complete { consumed }) = ahead.parse(buf, &limits) else {
            panic!()
        };
        let kept = ahead.arg_ranges().expect("multibulk").to_vec();
        let mut p = RequestParser::new();
        p.set_complete(kept.into_iter());
        assert_eq!(p.args(&buf[..]).collect::<Vec<_>>(), [&b"GET"[..], b"key"]);
        // The next request parses from where the kept one ended.
        assert_eq!(
            p.parse(&buf[consumed..], &limits),
            Ok(Parsed::Complete { consumed: 14 })
        );
        assert_eq!(p.arg(&buf[consumed..], 0), b"PING");
        // An inline request's arguments are not in the buffer: nothing to keep.
        assert!(matches!(
            ahead.parse(b"PING\r\n", &limits),
            Ok(Parsed::Complete { .. })
        ));
        assert!(ahead.arg_ranges().is_none());
    }

    type Outcome = (Vec<Vec<Vec<u8>>>, Option<ProtocolError>);

    /// Parses `input` delivered in the given chunk sizes like a server would
    /// (append, parse until Incomplete, drop consumed bytes). Checks the hint
    /// contract along the way.
    fn run_chunked(input: &[u8], chunks: &[usize], limits: &Limits) -> Outcome {
        let mut p = RequestParser::new();
        let mut acc: Vec<u8> = Vec::new();
        let mut start = 0;
        let mut reqs: Vec<Vec<Vec<u8>>> = Vec::new();
        let mut fed = 0;
        let mut ci = 0;
        let mut last_hint = 0;
        loop {
            // feed a chunk
            if fed < input.len() {
                let n = chunks
                    .get(ci)
                    .copied()
                    .unwrap_or(input.len())
                    .max(1)
                    .min(input.len() - fed);
                ci += 1;
                acc.extend_from_slice(&input[fed..fed + n]);
                fed += n;
            }
            loop {
                let avail = acc.len() - start;
                match p.parse(&acc[start..], limits) {
                    Ok(Parsed::Complete { consumed }) => {
                        assert!(avail >= last_hint, "completed below hint");
                        assert!(consumed <= avail && consumed > 0);
                        reqs.push(p.args(&acc[start..]).map(|a| a.to_vec()).collect());
                        assert_eq!(p.argc(), reqs.last().unwrap().len());
                        start += consumed;
                        last_hint = 0;
                    }
                    Ok(Parsed::Incomplete { hint }) => {
                        assert!(hint > avail, "hint {hint} <= avail {avail}");
                        if last_hint > 0 {
                            assert!(hint >= last_hint || avail >= last_hint);
                        }
                        last_hint = hint;
                        break;
                    }
                    Err(e) => {
                        assert!(avail >= last_hint, "error below hint");
                        return (reqs, Some(e));
                    }
                }
            }
            if fed == input.len() {
                return (reqs, None);
            }
        }
    }

    fn run_whole(input: &[u8], limits: &Limits) -> Outcome {
        run_chunked(input, &[input.len()], limits)
    }

    fn parse_all(input: &[u8]) -> Outcome {
        let limits = Limits::default();
        let whole = run_whole(input, &limits);
        let ones = vec![1; input.len()];
        assert_eq!(run_chunked(input, &ones, &limits), whole, "byte by byte");
        for split in [2, 3, 5, 7, 16] {
            let chunks = vec![split; input.len()];
            assert_eq!(run_chunked(input, &chunks, &limits), whole);
        }
        whole
    }

    fn args(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    fn one(input: &[u8]) -> Result<Vec<Vec<u8>>, ProtocolError> {
        let (mut reqs, err) = parse_all(input);
        match err {
            Some(e) => Err(e),
            None => {
                assert_eq!(reqs.len(), 1, "expected one request in {input:?}");
                Ok(reqs.pop().unwrap())
            }
        }
    }

    #[test]
    fn string2ll_semantics() {
        assert_eq!(string2ll(b"0"), Some(0));
        assert_eq!(string2ll(b"12"), Some(12));
        assert_eq!(string2ll(b"-1"), Some(-1));
        assert_eq!(string2ll(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"00",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"1a",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"123456789012345678901",
            b"18446744073709551616",
        ] {
            assert_eq!(string2ll(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn multibulk_basic() {
        assert_eq!(
            one(b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n"),
            Ok(args(&["SET", "key", "value"]))
        );
        assert_eq!(one(b"*1\r\n$0\r\n\r\n"), Ok(args(&[""])));
        // binary data including CR LF and NUL inside a bulk
        assert_eq!(
            one(b"*2\r\n$3\r\nGET\r\n$4\r\na\r\n\0\r\n"),
            Ok(vec![b"GET".to_vec(), b"a\r\n\0".to_vec()])
        );
    }

    #[test]
    fn multibulk_zero_and_negative_count() {
        for input in [&b"*0\r\n"[..], b"*-1\r\n", b"*-5\r\n"] {
            let mut p = RequestParser::new();
            assert_eq!(
                p.parse(input, &Limits::default()),
                Ok(Parsed::Complete {
                    consumed: input.len()
                })
            );
            assert_eq!(p.argc(), 0);
        }
    }

    #[test]
    fn multibulk_trailing_crlf_not_checked() {
        assert_eq!(one(b"*1\r\n$3\r\nfooXY"), Ok(args(&["foo"])));
        // the byte after '\r' in a header is not checked either
        assert_eq!(one(b"*1\rX$3\rYfooXY"), Ok(args(&["foo"])));
    }

    #[test]
    fn multibulk_errors() {
        use ProtocolError::*;
        assert_eq!(one(b"*x\r\n"), Err(InvalidMultibulkLength));
        assert_eq!(one(b"*\r\n"), Err(InvalidMultibulkLength));
        assert_eq!(one(b"*+1\r\n"), Err(InvalidMultibulkLength));
        assert_eq!(one(b"*01\r\n"), Err(InvalidMultibulkLength));
        assert_eq!(one(b"* 1\r\n"), Err(InvalidMultibulkLength));
        assert_eq!(one(b"*1048577\r\n"), Err(InvalidMultibulkLength));
        assert_eq!(
            one(b"*99999999999999999999\r\n"),
            Err(InvalidMultibulkLength)
        );
        assert_eq!(one(b"*1\r\n$x\r\n"), Err(InvalidBulkLength));
        assert_eq!(one(b"*1\r\n$-1\r\n"), Err(InvalidBulkLength));
        assert_eq!(one(b"*1\r\n$536870913\r\n"), Err(InvalidBulkLength));
        assert_eq!(one(b"*1\r\nfoo\r\n"), Err(ExpectedDollar(b'f')));
        assert_eq!(one(b"*2\r\n$1\r\na\r\n:1\r\n"), Err(ExpectedDollar(b':')));
        assert_eq!(one(b"*1\r\n\r\n"), Err(ExpectedDollar(b'\r')));
    }

    #[test]
    fn header_fast_path_edges() {
        use ProtocolError::*;
        assert_eq!(one(b"*1\r\n*3\r\nfoo\r\n"), Err(ExpectedDollar(b'*')));
        assert_eq!(one(b"*1\r\n$03\r\nfoo\r\n"), Err(InvalidBulkLength));
        assert_eq!(one(b"*1\r\n$-0\r\n"), Err(InvalidBulkLength));
        assert_eq!(one(b"*1\r\n$3 \r\nfoo\r\n"), Err(InvalidBulkLength));
        assert_eq!(
            one(b"*1\r\n$1000000000000000000\r\n"),
            Err(InvalidBulkLength)
        );
        assert_eq!(
            one(b"*1\r\n$9223372036854775808\r\n"),
            Err(InvalidBulkLength)
        );
        assert_eq!(one(b"*00\r\n"), Err(InvalidMultibulkLength));
        let unauth = Limits {
            unauthenticated: true,
            ..Limits::default()
        };
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(b"*11\r\n", &unauth),
            Err(UnauthenticatedMultibulkLength)
        );
        assert_eq!(
            p.parse(b"*1\r\n$16385\r\n", &unauth),
            Err(UnauthenticatedBulkLength)
        );
        assert!(p.parse(b"*10\r\n$16384\r\n", &unauth).is_ok());
        assert_eq!(one(b"*0\r\n"), Ok(vec![]));
        assert_eq!(
            one(b"*2\r\n$0\r\n\r\n$10\r\n0123456789\r\n"),
            Ok(args(&["", "0123456789"]))
        );
        // header lines longer than a tiny limit are too big even when complete
        let tiny = Limits {
            max_inline_len: 2,
            ..Limits::default()
        };
        let mut p = RequestParser::new();
        assert_eq!(p.parse(b"*10\r\n", &tiny), Err(TooBigMbulkCount));
        let mut p = RequestParser::new();
        assert_eq!(p.parse(b"*1\r\n$100\r\n", &tiny), Err(TooBigBulkCount));
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(b"*1\r\n$1\r\n", &tiny),
            Ok(Parsed::Incomplete { hint: 11 })
        );
    }

    #[test]
    fn count_limit_is_inclusive() {
        // exactly 1048576 arguments is accepted as a count (we just don't send them)
        let mut p = RequestParser::new();
        let r = p.parse(b"*1048576\r\n", &Limits::default());
        assert!(matches!(r, Ok(Parsed::Incomplete { .. })));
        let r = p.parse(b"*1048577\r\n", &Limits::default());
        assert!(r.is_ok(), "still resuming the previous request");
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(b"*1048577\r\n", &Limits::default()),
            Err(ProtocolError::InvalidMultibulkLength)
        );
    }

    #[test]
    fn bulk_limit() {
        let limits = Limits {
            max_bulk_len: 10,
            ..Limits::default()
        };
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(b"*1\r\n$10\r\n", &limits),
            Ok(Parsed::Incomplete { hint: 21 })
        );
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(b"*1\r\n$11\r\n", &limits),
            Err(ProtocolError::InvalidBulkLength)
        );
        // the default: 512 MiB accepted, one more rejected
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(b"*1\r\n$536870912\r\n", &Limits::default()),
            Ok(Parsed::Incomplete {
                hint: 16 + 536_870_912 + 2
            })
        );
    }

    #[test]
    fn too_big_count_strings() {
        let mut input = b"*".to_vec();
        input.extend(std::iter::repeat_n(b'1', 70 * 1024));
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(&input, &Limits::default()),
            Err(ProtocolError::TooBigMbulkCount)
        );
        // exactly at the limit: still waiting
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(&input[..65536], &Limits::default()),
            Ok(Parsed::Incomplete { hint: 65537 })
        );
        assert_eq!(
            p.parse(&input[..65537], &Limits::default()),
            Err(ProtocolError::TooBigMbulkCount)
        );

        let mut input = b"*1\r\n$".to_vec();
        input.extend(std::iter::repeat_n(b'1', 70 * 1024));
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(&input, &Limits::default()),
            Err(ProtocolError::TooBigBulkCount)
        );
        // also when the terminator is there but too far away
        input.extend_from_slice(b"\r\n");
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(&input, &Limits::default()),
            Err(ProtocolError::TooBigBulkCount)
        );
        // a non-'$' header line that is too long is "too big" first, like Redis
        let mut input = b"*1\r\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 70 * 1024));
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(&input, &Limits::default()),
            Err(ProtocolError::TooBigBulkCount)
        );
    }

    #[test]
    fn too_big_inline() {
        let input = vec![b'a'; 70 * 1024];
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(&input, &Limits::default()),
            Err(ProtocolError::TooBigInline)
        );
        let (reqs, err) = parse_all(&input);
        assert!(reqs.is_empty());
        assert_eq!(err, Some(ProtocolError::TooBigInline));
        // a 64 KiB line is fine
        let mut input = vec![b'a'; 65536];
        input.push(b'\n');
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(&input, &Limits::default()),
            Ok(Parsed::Complete { consumed: 65537 })
        );
        assert_eq!(p.argc(), 1);
        assert_eq!(p.arg(&input, 0).len(), 65536);
        // with CR LF, the CR counts towards the line (Redis searches '\n')
        let mut input = vec![b'a'; 65536];
        input.extend_from_slice(b"\r\n");
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(&input, &Limits::default()),
            Err(ProtocolError::TooBigInline)
        );
    }

    #[test]
    fn inline_basic() {
        assert_eq!(one(b"PING\r\n"), Ok(args(&["PING"])));
        assert_eq!(one(b"PING\n"), Ok(args(&["PING"])));
        assert_eq!(one(b"  set   a\tb  \r\n"), Ok(args(&["set", "a", "b"])));
        assert_eq!(one(b"\r\n"), Ok(vec![]));
        assert_eq!(one(b"\n"), Ok(vec![]));
        assert_eq!(one(b"   \n"), Ok(vec![]));
        // a lone CR in the middle separates
        assert_eq!(one(b"a\rb\n"), Ok(args(&["a", "b"])));
        // \v is skipped as leading blank but does not end an unquoted token
        assert_eq!(one(b"\x0ba\x0bb c\n"), Ok(args(&["a\x0bb", "c"])));
        // NUL ends the C string
        assert_eq!(one(b"set a\0b c\n"), Ok(args(&["set", "a"])));
    }

    #[test]
    fn inline_quoting() {
        use ProtocolError::UnbalancedQuotes;
        assert_eq!(
            one(b"set \"foo\\x41\" 'bar'\r\n"),
            Ok(args(&["set", "fooA", "bar"]))
        );
        assert_eq!(
            one(b"\"\\n\\r\\t\\b\\a\\\\\\\"\\q\"\n"),
            Ok(vec![b"\n\r\t\x08\x07\\\"q".to_vec()])
        );
        assert_eq!(
            one(b"\"\\xff\\x0A\\xg1\\x4\"\n"),
            Ok(vec![b"\xff\nxg1x4".to_vec()])
        );
        assert_eq!(one(b"'it\\'s' 'a\\nb'\n"), Ok(args(&["it's", "a\\nb"])));
        assert_eq!(one(b"a\"b c\" d\n"), Ok(args(&["ab c", "d"])));
        assert_eq!(one(b"\"\" ''\n"), Ok(args(&["", ""])));
        assert_eq!(one(b"\"a\"\x0bb\n"), Ok(args(&["a", "b"])));
        assert_eq!(one(b"\"a\"b\n"), Err(UnbalancedQuotes));
        assert_eq!(one(b"'a'b\n"), Err(UnbalancedQuotes));
        assert_eq!(one(b"\"abc\n"), Err(UnbalancedQuotes));
        assert_eq!(one(b"'abc\n"), Err(UnbalancedQuotes));
        assert_eq!(one(b"\"abc\\\"\n"), Err(UnbalancedQuotes));
        assert_eq!(one(b"\"abc\\\n"), Err(UnbalancedQuotes));
        // a quote closed right before CR LF
        assert_eq!(one(b"get \"k\"\r\n"), Ok(args(&["get", "k"])));
        // NUL inside quotes is an unterminated quote
        assert_eq!(one(b"\"ab\0c\"\n"), Err(UnbalancedQuotes));
    }

    #[test]
    fn inline_args_use_scratch() {
        let mut p = RequestParser::new();
        let buf = b"set \"k\\x41\" v\r\n";
        assert_eq!(
            p.parse(buf, &Limits::default()),
            Ok(Parsed::Complete {
                consumed: buf.len()
            })
        );
        assert_eq!(p.arg(buf, 1), b"kA");
        assert_eq!(p.args(buf).len(), 3);
    }

    #[test]
    fn pipelined() {
        let mut input = Vec::new();
        let mut expected = Vec::new();
        for i in 0..200 {
            if i % 3 == 0 {
                input.extend_from_slice(format!("INCR counter{i}\r\n").as_bytes());
                expected.push(args(&["INCR", &format!("counter{i}")]));
            } else if i % 7 == 0 {
                input.extend_from_slice(b"*0\r\n");
                expected.push(vec![]);
            } else {
                let v = "x".repeat(i);
                input.extend_from_slice(
                    format!(
                        "*3\r\n$3\r\nSET\r\n${}\r\nk{i}\r\n${}\r\n{v}\r\n",
                        format!("k{i}").len(),
                        v.len()
                    )
                    .as_bytes(),
                );
                expected.push(args(&["SET", &format!("k{i}"), &v]));
            }
        }
        let (reqs, err) = parse_all(&input);
        assert_eq!(err, None);
        assert_eq!(reqs, expected);
    }

    #[test]
    fn incomplete_hints() {
        let l = Limits::default();
        let mut p = RequestParser::new();
        assert_eq!(p.parse(b"", &l), Ok(Parsed::Incomplete { hint: 1 }));
        assert_eq!(p.parse(b"*2", &l), Ok(Parsed::Incomplete { hint: 3 }));
        assert_eq!(p.parse(b"*2\r", &l), Ok(Parsed::Incomplete { hint: 4 }));
        assert_eq!(p.parse(b"*2\r\n$", &l), Ok(Parsed::Incomplete { hint: 6 }));
        assert_eq!(
            p.parse(b"*2\r\n$100\r\n", &l),
            Ok(Parsed::Incomplete { hint: 10 + 102 })
        );
        let mut buf = b"*2\r\n$100\r\n".to_vec();
        buf.extend(std::iter::repeat_n(b'v', 100));
        buf.extend_from_slice(b"\r\n");
        assert_eq!(
            p.parse(&buf, &l),
            Ok(Parsed::Incomplete {
                hint: buf.len() + 1
            })
        );
        buf.extend_from_slice(b"$1\r\nz\r\n");
        assert_eq!(
            p.parse(&buf, &l),
            Ok(Parsed::Complete {
                consumed: buf.len()
            })
        );
        assert_eq!(p.arg(&buf, 0).len(), 100);
        assert_eq!(p.arg(&buf, 1), b"z");
        let mut p = RequestParser::new();
        assert_eq!(p.parse(b"GET k", &l), Ok(Parsed::Incomplete { hint: 6 }));
    }

    #[test]
    fn reset_and_error_recovery() {
        let l = Limits::default();
        let mut p = RequestParser::new();
        assert!(matches!(
            p.parse(b"*2\r\n$3\r\nfoo\r\n", &l),
            Ok(Parsed::Incomplete { .. })
        ));
        p.reset();
        assert_eq!(
            p.parse(b"PING\r\n", &l),
            Ok(Parsed::Complete { consumed: 6 })
        );
        assert_eq!(
            p.parse(b"*1\r\n!", &l).ok(),
            Some(Parsed::Incomplete { hint: 6 })
        );
        assert_eq!(
            p.parse(b"*1\r\n!\r\n", &l),
            Err(ProtocolError::ExpectedDollar(b'!'))
        );
        // state was reset by the error
        assert_eq!(
            p.parse(b"PING\r\n", &l),
            Ok(Parsed::Complete { consumed: 6 })
        );
        // a shrunk buffer (contract violation) must not panic
        let mut p = RequestParser::new();
        assert!(p.parse(b"*2\r\n$3\r\nfoo\r\n", &l).is_ok());
        assert!(p.parse(b"*", &l).is_ok());
    }
}
