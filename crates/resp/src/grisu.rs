//! A port of fpconv's Grisu2 (`deps/fpconv/fpconv_dtoa.c` in Redis 8.0), which prints the
//! shortest-or-nearly-shortest digits of a double that read back as the same double.

/// Up to 18 decimal digits (ASCII) produced by [`grisu2`].
pub(crate) struct Digits {
    buf: [u8; 18],
    len: usize,
}

impl Digits {
    fn new() -> Self {
        Digits {
            buf: [0; 18],
            len: 0,
        }
    }

    fn push(&mut self, b: u8) {
        // Grisu2 never produces more than 17 digits for a double.
        if self.len < self.buf.len() {
            self.buf[self.len] = b;
            self.len += 1;
        }
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }

    /// The digits.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Cached powers of ten for Grisu: (significand, binary exponent) of 10^(-348 + 8i).
#[rustfmt::skip]
const POWERS_TEN: [(u64, i32); 87] = [
    (18054884314459144840, -1220), (13451937075301367670, -1193),
    (10022474136428063862, -1166), (14934650266808366570, -1140),
    (11127181549972568877, -1113), (16580792590934885855, -1087),
    (12353653155963782858, -1060), (18408377700990114895, -1034),
    (13715310171984221708, -1007), (10218702384817765436, -980),
    (15227053142812498563, -954),  (11345038669416679861, -927),
    (16905424996341287883, -901),  (12595523146049147757, -874),
    (9384396036005875287,  -847),  (13983839803942852151, -821),
    (10418772551374772303, -794),  (15525180923007089351, -768),
    (11567161174868858868, -741),  (17236413322193710309, -715),
    (12842128665889583758, -688),  (9568131466127621947,  -661),
    (14257626930069360058, -635),  (10622759856335341974, -608),
    (15829145694278690180, -582),  (11793632577567316726, -555),
    (17573882009934360870, -529),  (13093562431584567480, -502),
    (9755464219737475723,  -475),  (14536774485912137811, -449),
    (10830740992659433045, -422),  (16139061738043178685, -396),
    (12024538023802026127, -369),  (17917957937422433684, -343),
    (13349918974505688015, -316),  (9946464728195732843,  -289),
    (14821387422376473014, -263),  (11042794154864902060, -236),
    (16455045573212060422, -210),  (12259964326927110867, -183),
    (18268770466636286478, -157),  (13611294676837538539, -130),
    (10141204801825835212, -103),  (15111572745182864684, -77),
    (11258999068426240000, -50),   (16777216000000000000, -24),
    (12500000000000000000,   3),   (9313225746154785156,   30),
    (13877787807814456755,  56),   (10339757656912845936,  83),
    (15407439555097886824, 109),   (11479437019748901445, 136),
    (17105694144590052135, 162),   (12744735289059618216, 189),
    (9495567745759798747,  216),   (14149498560666738074, 242),
    (10542197943230523224, 269),   (15709099088952724970, 295),
    (11704190886730495818, 322),   (17440603504673385349, 348),
    (12994262207056124023, 375),   (9681479787123295682,  402),
    (14426529090290212157, 428),   (10748601772107342003, 455),
    (16016664761464807395, 481),   (11933345169920330789, 508),
    (17782069995880619868, 534),   (13248674568444952270, 561),
    (9871031767461413346,  588),   (14708983551653345445, 614),
    (10959046745042015199, 641),   (16330252207878254650, 667),
    (12166986024289022870, 694),   (18130221999122236476, 720),
    (13508068024458167312, 747),   (10064294952495520794, 774),
    (14996968138956309548, 800),   (11173611982879273257, 827),
    (16649979327439178909, 853),   (12405201291620119593, 880),
    (9242595204427927429,  907),   (13772540099066387757, 933),
    (10261342003245940623, 960),   (15290591125556738113, 986),
    (11392378155556871081, 1013),  (16975966327722178521, 1039),
    (12648080533535911531, 1066),
];

#[derive(Clone, Copy)]
struct Fp {
    frac: u64,
    exp: i32,
}

const HIDDEN: u64 = 1 << 52;

fn fp_mul(a: Fp, b: Fp) -> Fp {
    // The high 64 bits of the 128-bit product, rounded on bit 63 of the low half (as
    // fpconv computes it from 32-bit halves).
    let lo = 0xFFFF_FFFFu64;
    let ah_bl = (a.frac >> 32) * (b.frac & lo);
    let al_bh = (a.frac & lo) * (b.frac >> 32);
    let al_bl = (a.frac & lo) * (b.frac & lo);
    let ah_bh = (a.frac >> 32) * (b.frac >> 32);
    let mut tmp = (ah_bl & lo) + (al_bh & lo) + (al_bl >> 32);
    tmp += 1 << 31;
    Fp {
        frac: ah_bh + (ah_bl >> 32) + (al_bh >> 32) + (tmp >> 32),
        exp: a.exp + b.exp + 64,
    }
}

/// Grisu2 digits of finite, non-zero `d` (sign ignored) and the decimal exponent K: the
/// value is digits × 10^K.
pub(crate) fn grisu2(d: f64) -> (Digits, i32) {
    let bits = d.to_bits();
    let (mut w, lower, upper) = {
        let f = bits & (HIDDEN - 1);
        let e = ((bits >> 52) & 0x7FF) as i32;
        let w = if e != 0 {
            Fp {
                frac: f + HIDDEN,
                exp: e - 1075,
            }
        } else {
            Fp {
                frac: f,
                exp: -1074,
            }
        };
        let mut upper = Fp {
            frac: (w.frac << 1) + 1,
            exp: w.exp - 1,
        };
        while upper.frac & (HIDDEN << 1) == 0 {
            upper.frac <<= 1;
            upper.exp -= 1;
        }
        upper.frac <<= 10;
        upper.exp -= 10;
        let l_shift = if w.frac == HIDDEN { 2 } else { 1 };
        let mut lower = Fp {
            frac: (w.frac << l_shift) - 1,
            exp: w.exp - l_shift,
        };
        lower.frac <<= (lower.exp - upper.exp) as u32;
        lower.exp = upper.exp;
        (w, lower, upper)
    };
    while w.frac & HIDDEN == 0 {
        w.frac <<= 1;
        w.exp -= 1;
    }
    w.frac <<= 11;
    w.exp -= 11;
    // The cached power bringing upper's exponent into [-60, -32].
    let approx = (-(upper.exp + 87) as f64 * 0.30102999566398114) as i32;
    let mut idx = ((approx + 348) / 8) as usize;
    loop {
        let cur = upper.exp + POWERS_TEN[idx].1 + 64;
        if cur < -60 {
            idx += 1;
        } else if cur > -32 {
            idx -= 1;
        } else {
            break;
        }
    }
    let k = -348 + idx as i32 * 8;
    let cp = Fp {
        frac: POWERS_TEN[idx].0,
        exp: POWERS_TEN[idx].1,
    };
    let w = fp_mul(w, cp);
    let mut upper = fp_mul(upper, cp);
    let mut lower = fp_mul(lower, cp);
    lower.frac += 1;
    upper.frac -= 1;
    let mut kk = -k;
    let digits = generate_digits(w, upper, lower, &mut kk);
    (digits, kk)
}

fn round_digit(digits: &mut [u8], delta: u64, mut rem: u64, kappa: u64, frac: u64) {
    let n = digits.len();
    while rem < frac
        && delta - rem >= kappa
        && (rem + kappa < frac || frac - rem > rem + kappa - frac)
    {
        digits[n - 1] -= 1;
        rem += kappa;
    }
}

fn generate_digits(w: Fp, upper: Fp, lower: Fp, k: &mut i32) -> Digits {
    const TENS: [u64; 20] = {
        let mut t = [1u64; 20];
        let mut i = 19;
        while i > 0 {
            t[i - 1] = t[i] * 10;
            i -= 1;
        }
        t
    };
    let wfrac = upper.frac - w.frac;
    let mut delta = upper.frac - lower.frac;
    let shift = (-upper.exp) as u32;
    let one = 1u64 << shift;
    let mut part1 = upper.frac >> shift;
    let mut part2 = upper.frac & (one - 1);
    let mut digits = Digits::new();
    let mut kappa = 10;
    let mut di = 10;
    while kappa > 0 {
        let div = TENS[di];
        let digit = part1 / div;
        if digit != 0 || !digits.is_empty() {
            digits.push(b'0' + digit as u8);
        }
        part1 -= digit * div;
        kappa -= 1;
        let tmp = (part1 << shift) + part2;
        if tmp <= delta {
            *k += kappa;
            round_digit(digits.as_mut(), delta, tmp, div << shift, wfrac);
            return digits;
        }
        di += 1;
    }
    let mut unit = 18;
    loop {
        part2 = part2.wrapping_mul(10);
        delta = delta.wrapping_mul(10);
        kappa -= 1;
        let digit = part2 >> shift;
        if digit != 0 || !digits.is_empty() {
            digits.push(b'0' + digit as u8);
        }
        part2 &= one - 1;
        if part2 < delta {
            *k += kappa;
            round_digit(
                digits.as_mut(),
                delta,
                part2,
                one,
                wfrac.wrapping_mul(TENS[unit]),
            );
            return digits;
        }
        unit -= 1;
    }
}

/// fpconv's `emit_digits`: `digits` × 10^`k` in plain, decimal or exponent notation
/// (`neg` only shortens the longest exponent form, as fpconv does).
pub(crate) fn emit_digits(digits: &[u8], k: i32, neg: bool, out: &mut Vec<u8>) {
    let nd = digits.len() as i32;
    let exp = (k + nd - 1).abs();
    if k >= 0 && exp < nd + 7 {
        out.extend_from_slice(digits);
        out.extend(std::iter::repeat_n(b'0', k as usize));
        return;
    }
    if k < 0 && (k > -7 || exp < 4) {
        let offset = nd - k.abs();
        if offset <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-offset) as usize));
            out.extend_from_slice(digits);
        } else {
            out.extend_from_slice(&digits[..offset as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[offset as usize..]);
        }
        return;
    }
    let nd = nd.min(18 - neg as i32) as usize;
    out.push(digits[0]);
    if nd > 1 {
        out.push(b'.');
        out.extend_from_slice(&digits[1..nd]);
    }
    out.push(b'e');
    out.push(if k + nd as i32 - 1 < 0 { b'-' } else { b'+' });
    let mut exp = exp;
    let mut cent = 0;
    if exp > 99 {
        cent = exp / 100;
        out.push(b'0' + cent as u8);
        exp -= cent * 100;
    }
    if exp > 9 {
        let dec = exp / 10;
        out.push(b'0' + dec as u8);
        exp -= dec * 10;
    } else if cent != 0 {
        out.push(b'0');
    }
    out.push(b'0' + (exp % 10) as u8);
}
