//! Bit commands on strings (Redis's `bitops.c`): SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP,
//! BITFIELD and BITFIELD_RO.
//! Bits are numbered from the most significant bit of the first byte, as in Redis; a
//! missing key reads as an endless run of zero bits.

use super::{is, parse_i64, Exec};
use crate::keyspace::Expiry;
use crate::reply::errors::*;

const BIT_OFFSET_ERR: &str = "ERR bit offset is not an integer or out of range";
const BIT_VALUE_ERR: &str = "ERR bit is not an integer or out of range";

/// The bit offset argument: 0 up to (but excluding) `proto-max-bulk-len` bytes' worth of
/// bits, as Redis's `getBitOffsetFromArgument`. Replies with the error otherwise.
fn bit_offset(x: &mut Exec, arg: &[u8]) -> Option<u64> {
    match parse_i64(arg) {
        Some(o) if o >= 0 && ((o as u64) >> 3) < super::string::max_len(x) => Some(o as u64),
        _ => {
            x.reply.error(BIT_OFFSET_ERR);
            None
        }
    }
}

/// Bit `offset` of `v` (0 past its end).
fn bit_at(v: &[u8], offset: u64) -> u8 {
    let byte = (offset >> 3) as usize;
    v.get(byte).map_or(0, |b| (b >> (7 - (offset & 7))) & 1)
}

/// SETBIT key offset value
pub fn setbit(x: &mut Exec, a: &[&[u8]]) {
    let Some(offset) = bit_offset(x, a[2]) else {
        return;
    };
    let on = match parse_i64(a[3]) {
        Some(b @ (0 | 1)) => b as u8,
        _ => {
            x.reply.error(BIT_VALUE_ERR);
            return;
        }
    };
    let Ok(cur) = super::string::peek_str(x, a[1]) else {
        return;
    };
    let cur_len = cur.as_ref().map(|c| c.len());
    let mut v = cur.unwrap_or_default();
    let byte = (offset >> 3) as usize;
    if v.len() <= byte {
        v.resize(byte + 1, 0);
    }
    let old = bit_at(&v, offset);
    let shift = 7 - (offset & 7);
    v[byte] = (v[byte] & !(1 << shift)) | (on << shift);
    // Redis 8 writes (and counts a change) when the key is new, the string grew or the
    // bit changed; otherwise nothing is written.
    if cur_len != Some(v.len()) || old != on {
        x.ks.put(x.db, a[1], &v, Expiry::Keep, x.now_ms);
    }
    x.reply.int(i64::from(old));
}

/// GETBIT key offset
pub fn getbit(x: &mut Exec, a: &[&[u8]]) {
    let Some(offset) = bit_offset(x, a[2]) else {
        return;
    };
    match x.ks.with_value(x.db, a[1], x.now_ms, |v| bit_at(v, offset)) {
        Ok(Some(b)) => x.reply.int(i64::from(b)),
        Ok(None) => x.reply.int(0),
        Err(_) => x.reply.error(WRONGTYPE),
    }
}

/// A BITCOUNT / BITPOS range: inclusive bit positions, or None when it is empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BitRange {
    first: u64,
    last: u64,
}

/// Clamps `start..=end` (negative counts from the end, in bytes or in bits as `in_bits`)
/// to a string of `len_bytes`, as Redis does; converts it to bit positions.
fn clamp_range(len_bytes: usize, start: i64, end: i64, in_bits: bool) -> Option<BitRange> {
    let units = len_bytes as i64 * if in_bits { 8 } else { 1 };
    let (s, e) = super::string::clamp_index_range(units, start, end)?;
    Some(if in_bits {
        BitRange { first: s, last: e }
    } else {
        BitRange {
            first: s * 8,
            last: e * 8 + 7,
        }
    })
}

/// Set bits of `v` in `r`.
fn count_ones(v: &[u8], r: BitRange) -> u64 {
    let (fb, lb) = ((r.first >> 3) as usize, (r.last >> 3) as usize);
    // Masks of the bits of the edge bytes inside the range.
    let first_mask = 0xFFu8 >> (r.first & 7);
    let last_mask = 0xFFu8 << (7 - (r.last & 7));
    if fb == lb {
        return u64::from((v[fb] & first_mask & last_mask).count_ones());
    }
    let middle: u64 = v[fb + 1..lb]
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum();
    middle
        + u64::from((v[fb] & first_mask).count_ones())
        + u64::from((v[lb] & last_mask).count_ones())
}

/// The first bit equal to `bit` in `r` of `v`.
fn first_bit(v: &[u8], r: BitRange, bit: u8) -> Option<u64> {
    let skip = if bit == 1 { 0x00 } else { 0xFF };
    let mut pos = r.first;
    while pos <= r.last {
        let byte = v[(pos >> 3) as usize];
        if pos & 7 == 0 && pos + 7 <= r.last && byte == skip {
            pos += 8;
            continue;
        }
        if (byte >> (7 - (pos & 7))) & 1 == bit {
            return Some(pos);
        }
        pos += 1;
    }
    None
}

/// The optional trailing BYTE | BIT unit (BYTE when absent): whether the range counts
/// bits. Replies with a syntax error for anything else.
fn range_in_bits(x: &mut Exec, arg: Option<&&[u8]>) -> Option<bool> {
    match arg {
        None => Some(false),
        Some(u) if is(u, "bit") => Some(true),
        Some(u) if is(u, "byte") => Some(false),
        Some(_) => {
            x.reply.error(SYNTAX);
            None
        }
    }
}

/// BITCOUNT key [start end [BYTE | BIT]]
pub fn bitcount(x: &mut Exec, a: &[&[u8]]) {
    // The arguments are checked before the key is looked at (Redis 8: a missing key no
    // longer hides a syntax error).
    let bounds = match a.len() {
        2 => None,
        4 | 5 => {
            let (Some(start), Some(end)) = (parse_i64(a[2]), parse_i64(a[3])) else {
                x.reply.error(NOT_INT);
                return;
            };
            let Some(in_bits) = range_in_bits(x, a.get(4)) else {
                return;
            };
            Some((start, end, in_bits))
        }
        _ => {
            x.reply.error(SYNTAX);
            return;
        }
    };
    let Ok(v) = super::string::read_str(x, a[1]) else {
        return;
    };
    let Some(v) = v else {
        x.reply.int(0);
        return;
    };
    let range = match bounds {
        None => clamp_range(v.len(), 0, -1, false),
        Some((start, end, _)) if start < 0 && end < 0 && start > end => None,
        Some((start, end, in_bits)) => clamp_range(v.len(), start, end, in_bits),
    };
    x.reply.int(range.map_or(0, |r| count_ones(&v, r)) as i64);
}

/// BITPOS key bit [start [end [BYTE | BIT]]]
pub fn bitpos(x: &mut Exec, a: &[&[u8]]) {
    let bit = match parse_i64(a[2]) {
        Some(b @ (0 | 1)) => b as u8,
        Some(_) => {
            x.reply.error("ERR The bit argument must be 1 or 0.");
            return;
        }
        None => {
            x.reply.error(NOT_INT);
            return;
        }
    };
    if a.len() > 6 {
        x.reply.error(SYNTAX);
        return;
    }
    // The arguments are checked before the key is looked at, as Redis 8 does.
    let mut bounds = None;
    if a.len() > 3 {
        let Some(start) = parse_i64(a[3]) else {
            x.reply.error(NOT_INT);
            return;
        };
        let Some(in_bits) = range_in_bits(x, a.get(5)) else {
            return;
        };
        let end = if a.len() >= 5 {
            let Some(e) = parse_i64(a[4]) else {
                x.reply.error(NOT_INT);
                return;
            };
            Some(e)
        } else {
            None
        };
        bounds = Some((start, end, in_bits));
    }
    let Ok(v) = super::string::read_str(x, a[1]) else {
        return;
    };
    // A missing key is all zero bits: the first clear bit is 0, there is no set bit.
    let Some(v) = v else {
        x.reply.int(if bit == 1 { -1 } else { 0 });
        return;
    };
    let end_given = bounds.is_some_and(|(_, e, _)| e.is_some());
    let range = match bounds {
        None => clamp_range(v.len(), 0, -1, false),
        Some((start, end, in_bits)) => clamp_range(v.len(), start, end.unwrap_or(-1), in_bits),
    };
    // An empty range holds neither a 0 nor a 1.
    let Some(r) = range else {
        x.reply.int(-1);
        return;
    };
    let pos = match first_bit(&v, r, bit) {
        Some(p) => p as i64,
        // No clear bit: without an explicit end the string continues with zeros, so
        // the answer is the first bit after the range's last byte (Redis's behaviour).
        None if bit == 0 && !end_given => (((r.last >> 3) + 1) * 8) as i64,
        None => -1,
    };
    x.reply.int(pos);
}

/// BITOP's operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// `op` over `srcs`, each zero-padded to the longest (NOT: the one source inverted).
fn bitop_result(op: BitOp, srcs: &[Vec<u8>]) -> Vec<u8> {
    let len = srcs.iter().map(Vec::len).max().unwrap_or(0);
    let byte = |s: &Vec<u8>, i: usize| s.get(i).copied().unwrap_or(0);
    (0..len)
        .map(|i| match op {
            BitOp::Not => !byte(&srcs[0], i),
            BitOp::And => srcs.iter().fold(0xFF, |acc, s| acc & byte(s, i)),
            BitOp::Or => srcs.iter().fold(0, |acc, s| acc | byte(s, i)),
            BitOp::Xor => srcs.iter().fold(0, |acc, s| acc ^ byte(s, i)),
        })
        .collect()
}

/// BITOP AND | OR | XOR | NOT destkey key [key ...]
pub fn bitop(x: &mut Exec, a: &[&[u8]]) {
    let op = if is(a[1], "and") {
        BitOp::And
    } else if is(a[1], "or") {
        BitOp::Or
    } else if is(a[1], "xor") {
        BitOp::Xor
    } else if is(a[1], "not") {
        BitOp::Not
    } else {
        x.reply.error(SYNTAX);
        return;
    };
    if op == BitOp::Not && a.len() != 4 {
        x.reply
            .error("ERR BITOP NOT must be called with a single source key.");
        return;
    }
    // Every source is read (and type-checked) before the destination is written.
    let mut srcs = Vec::with_capacity(a.len() - 3);
    for key in &a[3..] {
        let Ok(v) = super::string::read_str(x, key) else {
            return;
        };
        srcs.push(v.unwrap_or_default());
    }
    let result = bitop_result(op, &srcs);
    if result.is_empty() {
        // All sources empty or missing: the destination is deleted, as in Redis.
        x.ks.delete(x.db, a[2], x.now_ms);
    } else {
        x.ks.put(x.db, a[2], &result, Expiry::Persist, x.now_ms);
    }
    x.reply.int(result.len() as i64);
}

/// BITFIELD's overflow behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// One BITFIELD operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FieldOp {
    Get,
    Set(i64),
    Incrby(i64),
}

/// A parsed BITFIELD operation with its type, offset and overflow mode.
#[derive(Clone, Copy, Debug)]
struct Field {
    op: FieldOp,
    offset: u64,
    bits: u32,
    signed: bool,
    overflow: Overflow,
}

const BITFIELD_TYPE_ERR: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// `i1`..`i64` or `u1`..`u63`: (signed, bits).
fn field_type(arg: &[u8]) -> Option<(bool, u32)> {
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return None,
    };
    // Redis reads the width as a C string: it stops at a NUL byte.
    let digits = &arg[1..];
    let digits = &digits[..digits.iter().position(|&b| b == 0).unwrap_or(digits.len())];
    match parse_i64(digits) {
        Some(b) if b >= 1 && b <= if signed { 64 } else { 63 } => Some((signed, b as u32)),
        _ => None,
    }
}

/// A BITFIELD offset: a bit number, or `#n` for the n-th field of `bits` bits, inside a
/// string of at most `max_len` bytes.
fn field_offset(arg: &[u8], bits: u32, max_len: u64) -> Option<u64> {
    let (hash, digits) = match arg.first() {
        Some(b'#') => (true, &arg[1..]),
        _ => (false, arg),
    };
    let mut o = parse_i64(digits)?;
    if hash {
        o = o.wrapping_mul(i64::from(bits));
    }
    (o >= 0 && ((o as u64) >> 3) < max_len).then_some(o as u64)
}

/// The unsigned `bits`-bit field at bit `offset` of `v` (zero past its end).
fn get_unsigned(v: &[u8], offset: u64, bits: u32) -> u64 {
    (0..u64::from(bits)).fold(0u64, |acc, j| (acc << 1) | u64::from(bit_at(v, offset + j)))
}

/// The signed `bits`-bit field at bit `offset` of `v`.
fn get_signed(v: &[u8], offset: u64, bits: u32) -> i64 {
    let u = get_unsigned(v, offset, bits);
    if bits < 64 && u & (1 << (bits - 1)) != 0 {
        (u | (u64::MAX << bits)) as i64
    } else {
        u as i64
    }
}

/// Writes the low `bits` bits of `value` at bit `offset` of `v` (long enough).
fn set_field(v: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..u64::from(bits) {
        let bit = ((value >> (u64::from(bits) - 1 - j)) & 1) as u8;
        let pos = offset + j;
        let byte = (pos >> 3) as usize;
        let shift = 7 - (pos & 7);
        v[byte] = (v[byte] & !(1 << shift)) | (bit << shift);
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: 0, 1 (overflow) or -1 (underflow), and the
/// value to store instead (wrapped or saturated) when not 0.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, mode: Overflow) -> (i32, u64) {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = (value as i64).wrapping_neg();
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX << bits);
    if value > max || (incr > 0 && incr > maxincr) {
        match mode {
            Overflow::Wrap => (1, wrap()),
            Overflow::Sat => (1, max),
            Overflow::Fail => (1, 0),
        }
    } else if incr < 0 && incr < minincr {
        match mode {
            Overflow::Wrap => (-1, wrap()),
            Overflow::Sat => (-1, 0),
            Overflow::Fail => (-1, 0),
        }
    } else {
        (0, 0)
    }
}

/// Redis's `checkSignedBitfieldOverflow` (see [`unsigned_overflow`]).
fn signed_overflow(value: i64, incr: i64, bits: u32, mode: Overflow) -> (i32, i64) {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1 << (bits - 1)) != 0 {
                (c | mask) as i64
            } else {
                (c & !mask) as i64
            }
        } else {
            c as i64
        }
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        match mode {
            Overflow::Wrap => (1, wrap()),
            Overflow::Sat => (1, max),
            Overflow::Fail => (1, 0),
        }
    } else if value < min
        || (bits != 64 && incr < minincr)
        || (value < 0 && incr < 0 && incr < minincr)
    {
        match mode {
            Overflow::Wrap => (-1, wrap()),
            Overflow::Sat => (-1, min),
            Overflow::Fail => (-1, 0),
        }
    } else {
        (0, 0)
    }
}

/// Parses BITFIELD's operations (`a`: the whole command), for a string of at most
/// `max_len` bytes; Err with Redis's error when one is bad.
fn parse_fields(a: &[&[u8]], max_len: u64) -> Result<Vec<Field>, &'static str> {
    let mut fields = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < a.len() {
        let rem = a.len() - j - 1;
        let sub = a[j];
        let op = if is(sub, "get") && rem >= 2 {
            FieldOp::Get
        } else if is(sub, "set") && rem >= 3 {
            FieldOp::Set(0)
        } else if is(sub, "incrby") && rem >= 3 {
            FieldOp::Incrby(0)
        } else if is(sub, "overflow") && rem >= 1 {
            let t = a[j + 1];
            overflow = if is(t, "wrap") {
                Overflow::Wrap
            } else if is(t, "sat") {
                Overflow::Sat
            } else if is(t, "fail") {
                Overflow::Fail
            } else {
                return Err("ERR Invalid OVERFLOW type specified");
            };
            j += 2;
            continue;
        } else {
            return Err(SYNTAX);
        };
        let (signed, bits) = field_type(a[j + 1]).ok_or(BITFIELD_TYPE_ERR)?;
        let offset = field_offset(a[j + 2], bits, max_len).ok_or(BIT_OFFSET_ERR)?;
        let op = match op {
            FieldOp::Get => FieldOp::Get,
            FieldOp::Set(_) | FieldOp::Incrby(_) => {
                let n = parse_i64(a[j + 3]).ok_or(NOT_INT)?;
                if matches!(op, FieldOp::Set(_)) {
                    FieldOp::Set(n)
                } else {
                    FieldOp::Incrby(n)
                }
            }
        };
        fields.push(Field {
            op,
            offset,
            bits,
            signed,
            overflow,
        });
        j += if op == FieldOp::Get { 3 } else { 4 };
    }
    Ok(fields)
}

/// The length the string must have for the SET and INCRBY operations of `fields`: past
/// the last bit they write; None when they write nothing.
fn written_len(fields: &[Field]) -> Option<u64> {
    fields
        .iter()
        .filter(|f| f.op != FieldOp::Get)
        .map(|f| ((f.offset + u64::from(f.bits) - 1) >> 3) + 1)
        .max()
}

/// The length BITFIELD command `a` may grow its string to (for the dispatcher to make room
/// first, `crate::space`); None when it writes nothing or does not parse (the handler
/// then answers the error).
pub fn grown_len(a: &[&[u8]]) -> Option<u64> {
    written_len(&parse_fields(a, u64::MAX).ok()?)
}

/// Runs one SET or INCRBY on `v`: the reply value (None: FAIL overflow, nothing written).
fn write_field(v: &mut [u8], f: &Field) -> Option<i64> {
    let (set, n) = match f.op {
        FieldOp::Set(n) => (true, n),
        FieldOp::Incrby(n) => (false, n),
        FieldOp::Get => unreachable!("GET is not a write"),
    };
    if f.signed {
        let old = get_signed(v, f.offset, f.bits);
        let (ovf, limit, newval, ret) = if set {
            let (o, l) = signed_overflow(n, 0, f.bits, f.overflow);
            (o, l, if o != 0 { l } else { n }, old)
        } else {
            let (o, l) = signed_overflow(old, n, f.bits, f.overflow);
            let nv = if o != 0 { l } else { old.wrapping_add(n) };
            (o, l, nv, nv)
        };
        let _ = limit;
        if ovf != 0 && f.overflow == Overflow::Fail {
            return None;
        }
        set_field(v, f.offset, f.bits, newval as u64);
        Some(ret)
    } else {
        let old = get_unsigned(v, f.offset, f.bits);
        let (ovf, newval, ret) = if set {
            let (o, l) = unsigned_overflow(n as u64, 0, f.bits, f.overflow);
            (o, if o != 0 { l } else { n as u64 }, old)
        } else {
            let (o, l) = unsigned_overflow(old, n, f.bits, f.overflow);
            let nv = if o != 0 {
                l
            } else {
                old.wrapping_add(n as u64)
            };
            (o, nv, nv)
        };
        if ovf != 0 && f.overflow == Overflow::Fail {
            return None;
        }
        set_field(v, f.offset, f.bits, newval);
        Some(ret as i64)
    }
}

/// BITFIELD and BITFIELD_RO.
fn bitfield_generic(x: &mut Exec, a: &[&[u8]], read_only_cmd: bool) {
    let fields = match parse_fields(a, super::string::max_len(x)) {
        Ok(f) => f,
        Err(e) => {
            x.reply.error(e);
            return;
        }
    };
    let Some(need) = written_len(&fields) else {
        let Ok(v) = super::string::read_str(x, a[1]) else {
            return;
        };
        let v = v.unwrap_or_default();
        x.reply.array(fields.len());
        for f in &fields {
            get_reply(x, &v, f);
        }
        return;
    };
    if read_only_cmd {
        x.reply
            .error("ERR BITFIELD_RO only supports the GET subcommand");
        return;
    }
    let Ok(cur) = super::string::peek_str(x, a[1]) else {
        return;
    };
    let existed = cur.is_some();
    let mut v = cur.unwrap_or_default();
    let old_len = v.len();
    if v.len() < need as usize {
        v.resize(need as usize, 0);
    }
    let grew = v.len() != old_len;
    // Redis's count of changes: every write that changed its field, or any write when
    // the string grew.
    let mut changes = 0u64;
    x.reply.array(fields.len());
    for f in &fields {
        if f.op == FieldOp::Get {
            get_reply(x, &v, f);
            continue;
        }
        let before = get_unsigned(&v, f.offset, f.bits);
        match write_field(&mut v, f) {
            Some(r) => {
                x.reply.int(r);
                changes += u64::from(grew || get_unsigned(&v, f.offset, f.bits) != before);
            }
            None => x.reply.null(),
        }
    }
    // Redis creates or pads the string before running the operations, even when they
    // all fail.
    if grew || changes > 0 || !existed {
        let dirty_before = x.ks.stats.dirty;
        x.ks.put(x.db, a[1], &v, Expiry::Keep, x.now_ms);
        x.ks.count_changes_as(dirty_before, changes);
    }
}

fn get_reply(x: &mut Exec, v: &[u8], f: &Field) {
    if f.signed {
        x.reply.int(get_signed(v, f.offset, f.bits));
    } else {
        x.reply.int(get_unsigned(v, f.offset, f.bits) as i64);
    }
}

/// BITFIELD key [GET type offset | [OVERFLOW WRAP|SAT|FAIL] SET type offset value |
/// INCRBY type offset increment ...]
pub fn bitfield(x: &mut Exec, a: &[&[u8]]) {
    bitfield_generic(x, a, false);
}

/// BITFIELD_RO key [GET type offset ...]
pub fn bitfield_ro(x: &mut Exec, a: &[&[u8]]) {
    bitfield_generic(x, a, true);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the dispatcher waits for: past the last bit a SET or INCRBY writes; nothing
    /// for reads alone or for a command the handler refuses.
    #[test]
    fn grown_len_is_past_the_last_bit_written() {
        let len = |s: &str| {
            let words: Vec<&[u8]> = s.split(' ').map(str::as_bytes).collect();
            grown_len(&words)
        };
        assert_eq!(len("BITFIELD k SET u8 0 1"), Some(1));
        assert_eq!(len("BITFIELD k SET u8 1 1"), Some(2));
        assert_eq!(len("BITFIELD k set i16 #10 5"), Some(22));
        assert_eq!(
            len("BITFIELD k GET u8 #1000 OVERFLOW SAT INCRBY u4 100 1"),
            Some(13)
        );
        assert_eq!(len("BITFIELD k GET u64 #100000"), None, "u64 is refused");
        assert_eq!(
            len("BITFIELD k GET i64 #100000"),
            None,
            "reads grow nothing"
        );
        assert_eq!(len("BITFIELD k SET u8 #x 1"), None);
        assert_eq!(len("BITFIELD k SET u8"), None);
        assert_eq!(len("BITFIELD k SET u8 #100000000 255"), Some(100_000_001));
    }

    #[test]
    fn ranges_clamp_as_redis() {
        let r = |s, e, b| clamp_range(4, s, e, b);
        assert_eq!(r(0, -1, false), Some(BitRange { first: 0, last: 31 }));
        assert_eq!(r(1, 1, false), Some(BitRange { first: 8, last: 15 }));
        assert_eq!(
            r(-2, 100, false),
            Some(BitRange {
                first: 16,
                last: 31
            })
        );
        assert_eq!(r(5, 10, true), Some(BitRange { first: 5, last: 10 }));
        assert_eq!(
            r(-3, -1, true),
            Some(BitRange {
                first: 29,
                last: 31
            })
        );
        assert_eq!(r(3, 2, false), None);
        assert_eq!(r(10, 20, false), None);
        assert_eq!(clamp_range(0, 0, -1, false), None);
    }

    #[test]
    fn counts_and_positions_inside_partial_bytes() {
        let v = [0b1010_1100u8, 0xFF, 0b0000_0001];
        let all = BitRange { first: 0, last: 23 };
        assert_eq!(count_ones(&v, all), 4 + 8 + 1);
        assert_eq!(count_ones(&v, BitRange { first: 2, last: 5 }), 3);
        assert_eq!(count_ones(&v, BitRange { first: 6, last: 17 }), 8);
        assert_eq!(
            count_ones(
                &v,
                BitRange {
                    first: 23,
                    last: 23
                }
            ),
            1
        );
        assert_eq!(first_bit(&v, all, 1), Some(0));
        assert_eq!(first_bit(&v, all, 0), Some(1));
        assert_eq!(first_bit(&v, BitRange { first: 8, last: 15 }, 0), None);
        assert_eq!(first_bit(&v, BitRange { first: 8, last: 23 }, 0), Some(16));
        assert_eq!(
            first_bit(
                &v,
                BitRange {
                    first: 16,
                    last: 22
                },
                1
            ),
            None
        );
        assert_eq!(
            first_bit(&[0, 0, 0, 0x10], BitRange { first: 0, last: 31 }, 1),
            Some(27)
        );
    }

    #[test]
    fn bitop_pads_shorter_sources_with_zeros() {
        let srcs = vec![vec![0xF0, 0xFF], vec![0x3C]];
        assert_eq!(bitop_result(BitOp::And, &srcs), vec![0x30, 0x00]);
        assert_eq!(bitop_result(BitOp::Or, &srcs), vec![0xFC, 0xFF]);
        assert_eq!(bitop_result(BitOp::Xor, &srcs), vec![0xCC, 0xFF]);
        assert_eq!(bitop_result(BitOp::Not, &srcs[1..]), vec![0xC3]);
        assert_eq!(bitop_result(BitOp::Or, &[vec![], vec![]]), Vec::<u8>::new());
    }

    #[test]
    fn bitfield_types_and_fields() {
        assert_eq!(field_type(b"i64"), Some((true, 64)));
        assert_eq!(field_type(b"u63"), Some((false, 63)));
        assert_eq!(field_type(b"u1"), Some((false, 1)));
        for bad in [&b"u64"[..], b"i65", b"i0", b"i", b"x8", b"i08", b"I8", b""] {
            assert_eq!(field_type(bad), None, "{bad:?}");
        }
        let mut v = vec![0u8; 10];
        set_field(&mut v, 3, 8, 0xAB);
        assert_eq!(&v[..2], &[0x15, 0x60]);
        assert_eq!(get_unsigned(&v, 3, 8), 0xAB);
        assert_eq!(get_signed(&v, 3, 8), 0xABu8 as i8 as i64);
        set_field(&mut v, 5, 64, (-2i64) as u64);
        assert_eq!(get_signed(&v, 5, 64), -2);
        assert_eq!(get_unsigned(&v, 5, 63), u64::MAX >> 1);
        // Reads past the end are zeros.
        assert_eq!(get_unsigned(&[0xFF], 4, 8), 0xF0);
    }

    #[test]
    fn bitfield_overflow_as_redis() {
        use Overflow::*;
        assert_eq!(unsigned_overflow(100, 257, 8, Wrap), (1, 101));
        assert_eq!(unsigned_overflow(100, 257, 8, Sat), (1, 255));
        assert_eq!(unsigned_overflow(100, -255, 8, Sat), (-1, 0));
        assert_eq!(unsigned_overflow(100, -101, 8, Wrap), (-1, 255));
        assert_eq!(unsigned_overflow(100, 155, 8, Fail), (0, 0));
        // A negative SET on an unsigned field saturates to the top, as in Redis.
        assert_eq!(unsigned_overflow((-1i64) as u64, 0, 8, Sat), (1, 255));
        assert_eq!(signed_overflow(100, 100, 8, Wrap), (1, -56));
        assert_eq!(signed_overflow(-100, -200, 8, Sat), (-1, -128));
        assert_eq!(signed_overflow(127, 0, 8, Fail), (0, 0));
        assert_eq!(signed_overflow(i64::MAX, 1, 64, Wrap), (1, i64::MIN));
        assert_eq!(signed_overflow(i64::MIN, -1, 64, Sat), (-1, i64::MIN));
        assert_eq!(signed_overflow(-1, i64::MIN, 64, Fail), (-1, 0));
        assert_eq!(signed_overflow(300, 0, 8, Wrap), (1, 44));
    }

    #[test]
    fn bits_read_msb_first() {
        assert_eq!(bit_at(&[0x80], 0), 1);
        assert_eq!(bit_at(&[0x80], 1), 0);
        assert_eq!(bit_at(&[0x01], 7), 1);
        assert_eq!(bit_at(&[0x01], 8), 0);
    }
}
