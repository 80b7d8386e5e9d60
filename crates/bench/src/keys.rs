//! Key patterns: which key (an integer in `1..=key_max`, sent as its decimal digits) each
//! request uses.
//!
//! - [`Pattern::Sequential`]: the fill pattern. The keys are split into disjoint contiguous
//!   streams, one per connection (over all threads), so that a run of exactly `key_max`
//!   requests writes every key exactly once.
//! - [`Pattern::Uniform`]: uniform random keys.
//! - [`Pattern::Zipf`]: Zipf-distributed keys with exponent `s` (key 1 is the most popular),
//!   drawn by rejection-inversion in O(1) time and memory, whatever `key_max`.
//!
//! Every connection has its own generator with its own seed ([`conn_seed`]).

/// A key pattern, as chosen on the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pattern {
    /// Disjoint contiguous streams, one per connection (fill).
    Sequential,
    /// Uniform random keys in `1..=key_max`.
    Uniform,
    /// Zipf-distributed random keys with this exponent (`> 0`, e.g. 0.99).
    Zipf(f64),
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pattern::Sequential => write!(f, "sequential"),
            Pattern::Uniform => write!(f, "uniform"),
            Pattern::Zipf(s) => write!(f, "zipf({s})"),
        }
    }
}

/// SplitMix64: a small, fast, statistically good 64-bit generator (one add, two multiplies
/// per draw), ample for choosing benchmark keys.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (`n > 0`), by Lemire's multiply-shift (the bias is below
    /// `n / 2^64`, far below anything a benchmark can see).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// A uniform float in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// The seed of connection `conn` (global index over all threads) for the run seed `seed`:
/// distinct for every connection, and well mixed even for consecutive indexes.
pub fn conn_seed(seed: u64, conn: u64) -> u64 {
    let mut g = SplitMix64::new(seed ^ conn.wrapping_mul(0xD1B5_4A32_D192_ED03));
    g.next_u64()
}

/// Part `i` of `total` items split into `parts` contiguous parts as evenly as possible (the
/// first `total % parts` parts get one more): returns `(start, len)` with `start` 0-based.
pub fn split(total: u64, parts: u64, i: u64) -> (u64, u64) {
    assert!(parts > 0 && i < parts, "split: part {i} of {parts}");
    let base = total / parts;
    let extra = total % parts;
    let start = i * base + i.min(extra);
    let len = base + u64::from(i < extra);
    (start, len)
}

/// Zipf distribution over `1..=n` with exponent `s > 0`, sampled by rejection-inversion
/// (W. Hörmann, G. Derflinger, "Rejection-inversion to generate variates from monotone
/// discrete distributions", 1996), as in Apache Commons RNG: no table, O(1) per draw.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: f64,
    exponent: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
}

impl Zipf {
    /// The distribution over `1..=n` with exponent `exponent` (`n >= 1`, `exponent > 0`).
    pub fn new(n: u64, exponent: f64) -> Self {
        assert!(n >= 1, "zipf: empty range");
        assert!(
            exponent > 0.0 && exponent.is_finite(),
            "zipf: exponent must be > 0"
        );
        let mut z = Zipf {
            n: n as f64,
            exponent,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(z.n + 0.5);
        z.s = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// Draws one value in `1..=n`.
    #[inline]
    pub fn sample(&self, rng: &mut SplitMix64) -> u64 {
        loop {
            let u = self.h_integral_n + rng.next_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.s || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    /// `h(x) = x^-s`.
    fn h(&self, x: f64) -> f64 {
        (-self.exponent * x.ln()).exp()
    }

    /// `H(x) = (x^(1-s) - 1) / (1 - s)` (and `ln x` at `s = 1`), computed stably.
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.exponent) * log_x) * log_x
    }

    /// The inverse of [`Zipf::h_integral`].
    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.exponent)).max(-1.0);
        (helper1(t) * x).exp()
    }
}

/// `ln(1 + x) / x`, stable near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// `(e^x - 1) / x`, stable near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
    }
}

/// One connection's key generator.
#[derive(Debug, Clone)]
pub enum KeyGen {
    /// Sequential: key `lo + (next mod len) + 1`, `next` advancing by one per request.
    Sequential {
        /// Position in the stream.
        next: u64,
        /// First key of the range, minus one.
        lo: u64,
        /// Number of keys in the range.
        len: u64,
    },
    /// Uniform over `1..=n`.
    Uniform {
        /// This connection's generator.
        rng: SplitMix64,
        /// Number of keys.
        n: u64,
    },
    /// Zipf over `1..=n`.
    Zipf {
        /// This connection's generator.
        rng: SplitMix64,
        /// The distribution.
        zipf: Zipf,
    },
}

impl KeyGen {
    /// The generator of connection `conn` out of `conns` (global indexes over all threads).
    ///
    /// For [`Pattern::Sequential`] with a total request count (`total_requests`), the global
    /// sequence `0..total_requests` is split into contiguous per-connection parts and request
    /// `i` uses key `(i mod key_max) + 1`: with `total_requests == key_max` every key is used
    /// exactly once. Without a request count (a timed run), each connection cycles over its
    /// own contiguous share of `1..=key_max`.
    pub fn new(
        pattern: Pattern,
        key_max: u64,
        conn: u64,
        conns: u64,
        total_requests: Option<u64>,
        seed: u64,
    ) -> Self {
        assert!(key_max >= 1, "key range is empty");
        let rng = SplitMix64::new(conn_seed(seed, conn));
        match pattern {
            Pattern::Sequential => match total_requests {
                Some(total) => KeyGen::Sequential {
                    next: split(total, conns, conn).0,
                    lo: 0,
                    len: key_max,
                },
                None => {
                    let (start, len) = split(key_max, conns, conn);
                    if len == 0 {
                        // More connections than keys: this one cycles over all of them.
                        KeyGen::Sequential {
                            next: conn,
                            lo: 0,
                            len: key_max,
                        }
                    } else {
                        KeyGen::Sequential {
                            next: 0,
                            lo: start,
                            len,
                        }
                    }
                }
            },
            Pattern::Uniform => KeyGen::Uniform { rng, n: key_max },
            Pattern::Zipf(s) => KeyGen::Zipf {
                rng,
                zipf: Zipf::new(key_max, s),
            },
        }
    }

    /// The next key, in `1..=key_max`.
    #[inline]
    pub fn next_key(&mut self) -> u64 {
        match self {
            KeyGen::Sequential { next, lo, len } => {
                let k = *lo + (*next % *len) + 1;
                *next += 1;
                k
            }
            KeyGen::Uniform { rng, n } => rng.below(*n) + 1,
            KeyGen::Zipf { rng, zipf } => zipf.sample(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_covers_everything_contiguously() {
        for total in [0u64, 1, 7, 100, 1001, 20_000] {
            for parts in [1u64, 2, 3, 7, 50, 128, 2000] {
                let mut next = 0;
                let mut max_len = 0;
                let mut min_len = u64::MAX;
                for i in 0..parts {
                    let (start, len) = split(total, parts, i);
                    assert_eq!(start, next, "total {total} parts {parts} part {i}");
                    next = start + len;
                    max_len = max_len.max(len);
                    min_len = min_len.min(len);
                }
                assert_eq!(next, total);
                assert!(max_len - min_len <= 1);
            }
        }
    }

    /// Runs `conns` sequential generators, each for its share of `requests` (or of `key_max`
    /// when `requests` is `None`), and returns how often each key was used.
    fn sequential_counts(key_max: u64, conns: u64, requests: Option<u64>) -> Vec<u32> {
        let mut seen = vec![0u32; key_max as usize + 1];
        let total = requests.unwrap_or(key_max);
        for c in 0..conns {
            let mut g = KeyGen::new(Pattern::Sequential, key_max, c, conns, requests, 7);
            let mut prev = None;
            for _ in 0..split(total, conns, c).1 {
                let k = g.next_key();
                assert!((1..=key_max).contains(&k), "key {k} out of 1..={key_max}");
                if let Some(p) = prev {
                    if requests.is_none() || total <= key_max {
                        assert_eq!(k, p + 1, "stream of connection {c} is not contiguous");
                    }
                }
                prev = Some(k);
                seen[k as usize] += 1;
            }
        }
        seen
    }

    #[test]
    fn sequential_streams_cover_every_key_exactly_once() {
        for key_max in [1u64, 2, 10, 999, 10_000, 20_001] {
            for conns in [1u64, 2, 3, 50, 128] {
                if conns > key_max {
                    continue;
                }
                for requests in [Some(key_max), None] {
                    let seen = sequential_counts(key_max, conns, requests);
                    assert_eq!(seen[0], 0);
                    for (k, &n) in seen.iter().enumerate().skip(1) {
                        assert_eq!(
                            n, 1,
                            "key {k} used {n} times (N {key_max}, {conns} connections, {requests:?})"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn sequential_streams_are_disjoint() {
        // Each connection's keys form one contiguous interval and intervals do not overlap.
        let (key_max, conns) = (10_007u64, 16u64);
        let mut intervals = Vec::new();
        for c in 0..conns {
            let mut g = KeyGen::new(Pattern::Sequential, key_max, c, conns, Some(key_max), 1);
            let n = split(key_max, conns, c).1;
            let first = g.next_key();
            let mut last = first;
            for _ in 1..n {
                last = g.next_key();
            }
            intervals.push((first, last));
        }
        for w in intervals.windows(2) {
            assert_eq!(w[0].1 + 1, w[1].0);
        }
        assert_eq!(intervals[0].0, 1);
        assert_eq!(intervals.last().unwrap().1, key_max);
    }

    #[test]
    fn sequential_more_requests_than_keys_wraps() {
        let seen = sequential_counts(100, 3, Some(250));
        let total: u32 = seen.iter().sum();
        assert_eq!(total, 250);
        assert!(seen[1..].iter().all(|&n| n == 2 || n == 3));
    }

    #[test]
    fn sequential_more_connections_than_keys_stays_in_range() {
        for c in 0..10 {
            let mut g = KeyGen::new(Pattern::Sequential, 3, c, 10, None, 1);
            for _ in 0..10 {
                assert!((1..=3).contains(&g.next_key()));
            }
        }
    }

    #[test]
    fn uniform_stays_in_range_and_is_flat() {
        let n = 1000u64;
        let mut counts = vec![0u32; n as usize + 1];
        let mut g = KeyGen::new(Pattern::Uniform, n, 0, 1, None, 42);
        let draws = 1_000_000;
        for _ in 0..draws {
            let k = g.next_key();
            assert!((1..=n).contains(&k));
            counts[k as usize] += 1;
        }
        assert_eq!(counts[0], 0);
        let expect = draws as f64 / n as f64;
        for &c in &counts[1..] {
            assert!(
                (c as f64 - expect).abs() < expect * 0.2,
                "count {c} vs {expect}"
            );
        }
        // The extremes are reachable.
        let mut g = KeyGen::new(Pattern::Uniform, 2, 0, 1, None, 1);
        let mut seen = [false; 3];
        for _ in 0..100 {
            seen[g.next_key() as usize] = true;
        }
        assert_eq!(seen, [false, true, true]);
    }

    #[test]
    fn connections_get_distinct_seeds() {
        let mut firsts = std::collections::HashSet::new();
        for c in 0..1000 {
            let mut g = KeyGen::new(Pattern::Uniform, u64::MAX, c, 1000, None, 5);
            assert!(
                firsts.insert(g.next_key()),
                "connection {c} repeats a stream"
            );
        }
        // Same seed and connection: same stream (runs are reproducible).
        let mut a = KeyGen::new(Pattern::Zipf(0.99), 1000, 3, 8, None, 9);
        let mut b = KeyGen::new(Pattern::Zipf(0.99), 1000, 3, 8, None, 9);
        for _ in 0..100 {
            assert_eq!(a.next_key(), b.next_key());
        }
    }

    #[test]
    fn zipf_stays_in_range() {
        for (n, s) in [
            (1u64, 0.99),
            (2, 0.5),
            (10, 1.0),
            (1000, 0.99),
            (10_000_000, 1.2),
        ] {
            let mut g = KeyGen::new(Pattern::Zipf(s), n, 0, 1, None, 3);
            for _ in 0..100_000 {
                let k = g.next_key();
                assert!((1..=n).contains(&k), "zipf({s}) over 1..={n} gave {k}");
            }
        }
    }

    #[test]
    fn zipf_is_skewed() {
        let n = 100_000u64;
        let draws = 1_000_000u64;
        let mut g = KeyGen::new(Pattern::Zipf(0.99), n, 0, 1, None, 11);
        let mut counts = vec![0u64; n as usize + 1];
        for _ in 0..draws {
            counts[g.next_key() as usize] += 1;
        }
        // The top 1% of keys (1..=1000) get about H(1000)/H(100000) ~ 60% of the draws.
        let top: u64 = counts[1..=(n as usize / 100)].iter().sum();
        let share = top as f64 / draws as f64;
        assert!(
            share > 0.4,
            "top 1% of keys got only {:.1}% of draws",
            share * 100.0
        );
        // Frequencies follow k^-s: key 1 is drawn about 2^0.99 times as often as key 2.
        let r = counts[1] as f64 / counts[2] as f64;
        assert!((r - 2f64.powf(0.99)).abs() < 0.15, "p(1)/p(2) = {r}");
        let r = counts[1] as f64 / counts[10] as f64;
        assert!((r - 10f64.powf(0.99)).abs() < 1.5, "p(1)/p(10) = {r}");
        // The tail is reached too.
        assert!(counts[n as usize / 2..].iter().sum::<u64>() > 0);
    }
}
