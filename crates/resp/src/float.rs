//! Float formatting as Redis replies it: Redis 8.0's `d2string` (integers, else fpconv's
//! Grisu2 shortest digits) and the C `printf` based formats Redis still uses in places.

use std::fmt::Write as _;

/// A fixed-size stack buffer implementing `fmt::Write` (no allocation).
struct StackBuf<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackBuf<N> {
    fn new() -> Self {
        StackBuf {
            buf: [0; N],
            len: 0,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn push(&mut self, b: u8) {
        if self.len < N {
            self.buf[self.len] = b;
            self.len += 1;
        }
    }

    fn extend(&mut self, s: &[u8]) {
        for &b in s {
            self.push(b);
        }
    }
}

impl<const N: usize> std::fmt::Write for StackBuf<N> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.len + s.len() > N {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
        self.len += s.len();
        Ok(())
    }
}

fn trim_trailing_zeros(d: &[u8]) -> &[u8] {
    let mut n = d.len();
    while n > 0 && d[n - 1] == b'0' {
        n -= 1;
    }
    &d[..n]
}

/// Longest `%.17g` output: "-1.2345678901234567e-308" is 24 bytes.
pub(crate) const G17_MAX: usize = 32;

/// `%.17g` into a stack buffer; returns the buffer.
pub(crate) fn g17(d: f64) -> StackBufG17 {
    let mut out = StackBuf::<G17_MAX>::new();
    if d.is_nan() {
        out.extend(b"nan");
        return StackBufG17(out);
    }
    if d.is_infinite() {
        out.extend(if d > 0.0 { b"inf" } else { b"-inf" });
        return StackBufG17(out);
    }
    // 17 significant digits, correctly rounded (like glibc's printf):
    // "[-]d.dddddddddddddddde[-]X".
    let mut e = StackBuf::<40>::new();
    // Cannot fail: the longest output is 25 bytes.
    let _ = write!(e, "{:.16e}", d);
    let s = e.as_bytes();
    let (negative, s) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    let e_pos = s.iter().position(|&c| c == b'e').unwrap_or(s.len());
    let mut digits = [b'0'; 17];
    if let Some(&first) = s.first() {
        digits[0] = first;
    }
    let frac = s.get(2..e_pos).unwrap_or(&[]);
    let n = frac.len().min(16);
    digits[1..1 + n].copy_from_slice(&frac[..n]);
    let exp_str = s.get(e_pos + 1..).unwrap_or(&[]);
    let (exp_neg, exp_digits) = match exp_str.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, exp_str),
    };
    let mut exp: i32 = 0;
    for &c in exp_digits {
        exp = exp * 10 + i32::from(c - b'0');
    }
    if exp_neg {
        exp = -exp;
    }

    if negative {
        out.push(b'-');
    }
    // C99 %g: with P = 17 and exponent X, use %f style if P > X >= -4, else
    // %e style; without '#', trailing zeros and a trailing point are removed.
    if (-4..17).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            out.extend(&digits[..int_len]);
            let frac = trim_trailing_zeros(&digits[int_len..]);
            if !frac.is_empty() {
                out.push(b'.');
                out.extend(frac);
            }
        } else {
            out.extend(b"0.");
            for _ in 0..(-exp - 1) {
                out.push(b'0');
            }
            out.extend(trim_trailing_zeros(&digits));
        }
    } else {
        out.push(digits[0]);
        let frac = trim_trailing_zeros(&digits[1..]);
        if !frac.is_empty() {
            out.push(b'.');
            out.extend(frac);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push(b'0');
        }
        let mut b = itoa::Buffer::new();
        out.extend(b.format(a).as_bytes());
    }
    StackBufG17(out)
}

/// The result of [`g17`].
pub(crate) struct StackBufG17(StackBuf<G17_MAX>);

impl StackBufG17 {
    /// The formatted bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// Redis's `double2ll`: `Some(n)` when `d` is an integer within ±2^62 (the range Redis
/// checks, `LLONG_MAX/2` converted to a double) and so prints exactly as one. `-0.0`
/// gives `Some(0)`; NaN and infinities give `None`.
pub fn double_to_i64_exact(d: f64) -> Option<i64> {
    const LIMIT: f64 = (1u64 << 62) as f64;
    if !(-LIMIT..=LIMIT).contains(&d) {
        return None;
    }
    let n = d as i64;
    (n as f64 == d).then_some(n)
}

/// Appends `d` as fpconv's `fpconv_dtoa` (Grisu2) writes it, as Redis 8.0 does for Lua
/// numbers passed to `redis.call` that are not integers: a `-` when the sign bit is set,
/// then `0`, `inf`, `nan`, or the Grisu2 digits (shortest, or nearly, that read back as
/// `d`) in plain notation when the decimal exponent is small, else `d.ddde±X`.
///
/// Examples: `0.1` → `0.1`, `1e8` → `1e+8`, `1234567.0` → `1234567`, `1e-7` → `1e-7`,
/// `0.000001` → `0.000001`, `-0.0` → `-0`, `1.0 / 3.0` → `0.3333333333333333`.
pub fn format_double_shortest(d: f64, out: &mut Vec<u8>) {
    if d.is_sign_negative() {
        out.push(b'-');
    }
    if d == 0.0 {
        out.push(b'0');
    } else if d.is_nan() {
        out.extend_from_slice(b"nan");
    } else if d.is_infinite() {
        out.extend_from_slice(b"inf");
    } else {
        let (digits, k) = crate::grisu::grisu2(d);
        crate::grisu::emit_digits(digits.as_bytes(), k, d.is_sign_negative(), out);
    }
}

/// Appends `d` as Redis 8.0's `d2string` writes it, the text of every double reply
/// (`addReplyDouble`: ZSCORE, ZRANGE ... WITHSCORES, ...): `nan`, `inf` / `-inf`, `0` /
/// `-0`, the integer when [`double_to_i64_exact`] says `d` is one, else
/// [`format_double_shortest`].
///
/// Examples: `0.1` → `0.1`, `3.0` → `3`, `1e17` → `100000000000000000`, `1e20` →
/// `1e+20`, `-0.0` → `-0`, `1e-5` → `0.00001`.
pub fn format_double(d: f64, out: &mut Vec<u8>) {
    if d.is_nan() {
        out.extend_from_slice(b"nan");
    } else if d.is_infinite() {
        out.extend_from_slice(if d < 0.0 { b"-inf" } else { b"inf" });
    } else if d == 0.0 {
        out.extend_from_slice(if d.is_sign_negative() { b"-0" } else { b"0" });
    } else if let Some(n) = double_to_i64_exact(d) {
        out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    } else {
        format_double_shortest(d, out);
    }
}

/// Appends `d` formatted like C `printf("%.17g", d)` (glibc), as Redis 7.0's
/// `addReplyDouble` did and Redis 8.0 still does for the scores ZSCAN returns from a
/// skiplist-encoded zset (`ld2string(.., LD_STR_AUTO)`, `%.17Lg` of a double): 17 significant digits, fixed notation when the
/// decimal exponent is in -4..17 and exponent notation otherwise, trailing
/// zeros (and a trailing point) removed, exponent with at least two digits.
/// Infinities are `inf` / `-inf` and NaN is `nan` (never `-nan`).
///
/// Examples: `1e20` → `1e+20`, `0.1` → `0.10000000000000001`, `3.0` → `3`,
/// `-0.0` → `-0`, `1e-5` → `1.0000000000000001e-05`.
pub fn format_double_g17(d: f64, out: &mut Vec<u8>) {
    out.extend_from_slice(g17(d).as_bytes());
}

/// Appends `d` formatted like Redis's `ld2string(..., LD_STR_HUMAN)` as used
/// by `INCRBYFLOAT` and `HINCRBYFLOAT`: `"%.17Lf"`, then trailing zeros after
/// the point and a trailing point are removed, and `-0` becomes `0`. Returns
/// `false` (and appends nothing) if `d` is infinite or NaN.
///
/// Redis computes and formats these values as C `long double` (80-bit x87 on
/// x86-64); this crate only has `f64`, so results can differ in the last
/// digits: Redis prints 1.1 + 2.2 as `3.3` (the long double sum rounds to
/// 3.30000000000000000 at 17 decimals) while the f64 sum prints as
/// `3.30000000000000027`. Values exactly representable in f64 (integers up to
/// 2^53, halves, ...) print identically, e.g. `10.5` → `10.5`, `3e3` → `3000`.
pub fn format_long_double_human(d: f64, out: &mut Vec<u8>) -> bool {
    if !d.is_finite() {
        return false;
    }
    let start = out.len();
    {
        use std::io::Write as _;
        // Writing to a Vec cannot fail.
        let _ = write!(out, "{:.17}", d);
    }
    // There is always a '.' with 17 decimals: strip trailing zeros and point.
    if out[start..].contains(&b'.') {
        while out.len() > start && out[out.len() - 1] == b'0' {
            out.pop();
        }
        if out.len() > start && out[out.len() - 1] == b'.' {
            out.pop();
        }
    }
    if &out[start..] == b"-0" {
        out.truncate(start);
        out.push(b'0');
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(d: f64) -> String {
        let mut v = Vec::new();
        format_double_g17(d, &mut v);
        String::from_utf8(v).unwrap()
    }

    fn h(d: f64) -> Option<String> {
        let mut v = b"x".to_vec();
        if format_long_double_human(d, &mut v) {
            Some(String::from_utf8(v[1..].to_vec()).unwrap())
        } else {
            assert_eq!(v, b"x");
            None
        }
    }

    #[test]
    fn g17_examples() {
        // Expected values produced by glibc printf("%.17g").
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (3.0, "3"),
            (-3.0, "-3"),
            (0.1, "0.10000000000000001"),
            (0.5, "0.5"),
            (1.5, "1.5"),
            (10.5, "10.5"),
            (1e20, "1e+20"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (12345678901234567.0, "12345678901234568"),
            (1e-4, "0.0001"),
            (1e-5, "1.0000000000000001e-05"),
            (0.00012345, "0.00012344999999999999"),
            (1e100, "1e+100"),
            (1e300, "1.0000000000000001e+300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (5e-324, "4.9406564584124654e-324"),
            (1.23456, "1.2345600000000001"),
            (1.1 + 2.2, "3.3000000000000003"),
            (100.0, "100"),
            (-1.25e-7, "-1.2499999999999999e-07"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (-f64::NAN, "nan"),
        ];
        for &(d, want) in cases {
            assert_eq!(g(d), want, "{d:e}");
        }
    }

    fn d2s(d: f64) -> String {
        let mut v = b"x".to_vec();
        format_double(d, &mut v);
        String::from_utf8(v[1..].to_vec()).unwrap()
    }

    fn dtoa(d: f64) -> String {
        let mut v = b"x".to_vec();
        format_double_shortest(d, &mut v);
        String::from_utf8(v[1..].to_vec()).unwrap()
    }

    #[test]
    fn d2string_examples() {
        // Expected values from Redis 8.0.2 (ZADD k <score> m, then ZSCORE k m).
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (-3.0, "-3"),
            (0.1, "0.1"),
            (1.5, "1.5"),
            (1.1 + 2.2, "3.3000000000000003"),
            (1.0 / 3.0, "0.3333333333333333"),
            (2.0 / 3.0, "0.6666666666666666"),
            (1e-4, "0.0001"),
            (1e-5, "0.00001"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (123.456, "123.456"),
            (1e17, "100000000000000000"),
            (9007199254740993.0, "9007199254740992"),
            (4611686018427387904.0, "4611686018427387904"),
            (-4611686018427387904.0, "-4611686018427387904"),
            (4611686018427388928.0, "4611686018427389000"),
            (9223372036854775808.0, "9223372036854776000"),
            (1e20, "1e+20"),
            (1e21, "1e+21"),
            (1e22, "1e+22"),
            (1e100, "1e+100"),
            (1e300, "1e+300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (5e-324, "5e-324"),
            (-1.25e-7, "-1.25e-7"),
            (13.361389338970184, "13.361389338970184"),
            (-122.27652043104172, "-122.27652043104172"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (-f64::NAN, "nan"),
        ];
        for &(d, want) in cases {
            assert_eq!(d2s(d), want, "{d:e}");
        }
    }

    #[test]
    fn fpconv_examples() {
        // fpconv_dtoa prints integers too, in exponent form once they are long enough.
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (3.0, "3"),
            (1234567.0, "1234567"),
            (1e7, "10000000"),
            (1e8, "1e+8"),
            (123456789.0, "123456789"),
            (0.1, "0.1"),
            (-0.5, "-0.5"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (-f64::NAN, "-nan"),
        ];
        for &(d, want) in cases {
            assert_eq!(dtoa(d), want, "{d:e}");
        }
    }

    #[test]
    fn double2ll_bounds() {
        let limit = (1u64 << 62) as f64;
        assert_eq!(double_to_i64_exact(limit), Some(1 << 62));
        assert_eq!(double_to_i64_exact(-limit), Some(-(1 << 62)));
        assert_eq!(double_to_i64_exact(limit * 1.0000000000000002), None);
        assert_eq!(double_to_i64_exact(-0.0), Some(0));
        assert_eq!(double_to_i64_exact(0.5), None);
        assert_eq!(double_to_i64_exact(f64::NAN), None);
        assert_eq!(double_to_i64_exact(f64::INFINITY), None);
    }

    #[test]
    fn shortest_roundtrips() {
        let mut x = 0.123456789f64;
        for _ in 0..20000 {
            x = (x * 7.77 + 0.31).fract() * 360.0 - 180.0;
            for d in [x, x * 1e-300, x * 1e300, x * 1e-310, x * 1e15] {
                assert_eq!(dtoa(d).parse::<f64>().unwrap().to_bits(), d.to_bits());
                assert_eq!(d2s(d).parse::<f64>().unwrap().to_bits(), d.to_bits());
            }
        }
    }

    #[test]
    fn human_examples() {
        // Expected values produced by glibc printf("%.17f") on the same f64.
        let cases: &[(f64, &str)] = &[
            (10.5, "10.5"),
            (3.0e3, "3000"),
            (1.1 + 2.2, "3.30000000000000027"),
            (0.0, "0"),
            (-0.0, "0"),
            (-1e-18, "0"),
            (-1.5, "-1.5"),
            (0.1, "0.10000000000000001"),
            (5.0e-18, "0.00000000000000001"),
            (1e20, "100000000000000000000"),
            (123.0, "123"),
        ];
        for &(d, want) in cases {
            assert_eq!(h(d).as_deref(), Some(want), "{d:e}");
        }
        assert_eq!(h(f64::INFINITY), None);
        assert_eq!(h(f64::NEG_INFINITY), None);
        assert_eq!(h(f64::NAN), None);
        let mut v = Vec::new();
        assert!(format_long_double_human(f64::MAX, &mut v));
        assert_eq!(v.len(), 309);
    }
}

#[cfg(test)]
mod redis8_tests {
    use super::format_double;

    fn f(d: f64) -> String {
        let mut out = Vec::new();
        format_double(d, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn formats_as_redis_8() {
        // Checked against Redis 8.0.2's ZSCORE (-0 against d2string).
        for (d, want) in [
            (0.1, "0.1"),
            (1.5, "1.5"),
            (3.0, "3"),
            (-2.0, "-2"),
            (1e20, "1e+20"),
            (1.5e-7, "1.5e-7"),
            (123456789012345678.0, "123456789012345680"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::from_bits(20), "1e-322"), // 9.8813129168249309e-323, a subnormal
            (0.000001, "0.000001"),
            (1.25e-5, "1.25e-5"),
            (-0.0, "-0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (1e300, "1e+300"),
            (123.456, "123.456"),
            (1e-7, "1e-7"),
            (12345678.9, "12345678.9"),
            (1e16, "10000000000000000"),
            (1e17, "100000000000000000"),
            (4611686018427387904.0, "4611686018427387904"),
            (0.3, "0.3"),
            (2.5e-5, "0.000025"),
            (1e21, "1e+21"),
        ] {
            assert_eq!(f(d), want, "{d:e}");
        }
    }
}
