//! A fixed log-bucket latency histogram: cheap to record (a few integer
//! instructions, no allocation), mergeable across workers by adding buckets,
//! and precise to 1/8 of an octave (a percentile is at most 12.5% above the
//! true value).
//!
//! Values are nanoseconds. Bucket `i` holds the values in `(lower_i,
//! upper_i]`; below 8 ns every nanosecond has its own bucket, above that each
//! power of two is split into 8 equal buckets, up to 2^40 ns (about 18
//! minutes; larger values are counted in the last bucket). Every power of two
//! from 8 ns up is a bucket bound, so cumulative counts at `le = 2^k ns` (the
//! Prometheus buckets of `/metrics`) are exact.

/// Sub-buckets per power of two (as a bit count: 8 sub-buckets).
const SUB_BITS: u32 = 3;
const SUB: usize = 1 << SUB_BITS;
/// Largest tracked value's bit length: values are clamped below 2^40 ns.
const MAX_BITS: u32 = 40;
/// Number of buckets.
pub const LATENCY_BUCKETS: usize = SUB * (MAX_BITS as usize - SUB_BITS as usize + 1);

/// Latency histogram in nanoseconds (see the module documentation).
#[derive(Clone, PartialEq, Eq)]
pub struct LatencyHistogram {
    counts: [u64; LATENCY_BUCKETS],
    count: u64,
    sum_ns: u64,
    max_ns: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self {
            counts: [0; LATENCY_BUCKETS],
            count: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }
}

impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyHistogram")
            .field("count", &self.count)
            .field("sum_ns", &self.sum_ns)
            .field("max_ns", &self.max_ns)
            .finish_non_exhaustive()
    }
}

/// The bucket of a raw value `v` counted as `[lower, upper)`.
#[inline]
fn raw_index(v: u64) -> usize {
    let v = v.min((1u64 << MAX_BITS) - 1);
    if v < SUB as u64 {
        return v as usize;
    }
    let k = 63 - v.leading_zeros(); // bit length - 1, >= SUB_BITS
    let sub = ((v >> (k - SUB_BITS)) as usize) & (SUB - 1);
    SUB * (k - SUB_BITS + 1) as usize + sub
}

/// Exclusive upper end of raw bucket `i` (= the inclusive upper bound of
/// bucket `i` of the histogram, whose values are shifted by one).
#[inline]
fn raw_upper(i: usize) -> u64 {
    if i < SUB {
        return i as u64 + 1;
    }
    let k = (i / SUB) as u32 + SUB_BITS - 1;
    let sub = (i % SUB) as u64;
    (SUB as u64 + sub + 1) << (k - SUB_BITS)
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one value of `ns` nanoseconds.
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.counts[raw_index(ns.saturating_sub(1))] += 1;
        self.count += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
        if ns > self.max_ns {
            self.max_ns = ns;
        }
    }

    /// Adds every value of `other` (merging the histograms of several workers).
    pub fn merge(&mut self, other: &LatencyHistogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += *b;
        }
        self.count += other.count;
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Values counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of the values counted, in nanoseconds.
    pub fn sum_ns(&self) -> u64 {
        self.sum_ns
    }

    /// Largest value counted, in nanoseconds (0 when empty).
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// The value at quantile `q` (0.5 = median, 0.999 = p99.9) in nanoseconds:
    /// the upper bound of the bucket holding it, but never above the largest
    /// value counted. 0 when empty.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return raw_upper(i).min(self.max_ns);
            }
        }
        self.max_ns
    }

    /// Values counted at or below `bound_ns`, exact when `bound_ns` is a
    /// bucket bound (any power of two from 8 ns up), else rounded down to the
    /// nearest bound below.
    pub fn count_le_ns(&self, bound_ns: u64) -> u64 {
        self.counts
            .iter()
            .enumerate()
            .take_while(|&(i, _)| raw_upper(i) <= bound_ns)
            .map(|(_, &c)| c)
            .sum()
    }

    /// Cumulative counts at each of `bounds_ns` (ascending), in one pass.
    pub fn cumulative_le_ns(&self, bounds_ns: &[u64]) -> Vec<u64> {
        let mut out = Vec::with_capacity(bounds_ns.len());
        let mut i = 0;
        let mut seen = 0;
        for &b in bounds_ns {
            while i < LATENCY_BUCKETS && raw_upper(i) <= b {
                seen += self.counts[i];
                i += 1;
            }
            out.push(seen);
        }
        out
    }
}

/// Latencies of one writer's device I/O (reads, writes, fdatasyncs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoLatency {
    /// Device reads of values ([`Writer::read`](crate::Writer::read) when the
    /// record is not staged): one per O_DIRECT read.
    pub read: LatencyHistogram,
    /// Bytes read by those reads (aligned lengths).
    pub read_bytes: u64,
    /// Device writes of staged records (one per `write_at`).
    pub write: LatencyHistogram,
    /// fdatasync calls of a flush + sync round (one per device synced).
    pub fdatasync: LatencyHistogram,
}

impl IoLatency {
    /// Adds `other` (another worker's figures).
    pub fn merge(&mut self, other: &IoLatency) {
        self.read.merge(&other.read);
        self.read_bytes += other.read_bytes;
        self.write.merge(&other.write);
        self.fdatasync.merge(&other.fdatasync);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_ascending() {
        // Bucket i covers (raw_upper(i-1), raw_upper(i)].
        let mut prev = 0;
        for i in 0..LATENCY_BUCKETS {
            let up = raw_upper(i);
            assert!(up > prev, "bucket {i}: {up} <= {prev}");
            // The values just inside each end land in bucket i.
            assert_eq!(raw_index(prev), i, "lower end of bucket {i}");
            assert_eq!(raw_index(up - 1), i, "upper end of bucket {i}");
            prev = up;
        }
        assert_eq!(prev, 1u64 << MAX_BITS);
    }

    #[test]
    fn powers_of_two_are_bounds() {
        for k in 3..=MAX_BITS {
            let b = 1u64 << k;
            assert!(
                (0..LATENCY_BUCKETS).any(|i| raw_upper(i) == b),
                "2^{k} is not a bucket bound"
            );
        }
    }

    #[test]
    fn records_counts_and_bounds() {
        let mut h = LatencyHistogram::new();
        for ns in [1u64, 1024, 1025, 2048, 5_000_000] {
            h.record_ns(ns);
        }
        assert_eq!(h.count(), 5);
        assert_eq!(h.sum_ns(), 1 + 1024 + 1025 + 2048 + 5_000_000);
        assert_eq!(h.max_ns(), 5_000_000);
        // le is inclusive: 1024 counts at le=1024, 1025 does not.
        assert_eq!(h.count_le_ns(1024), 2);
        assert_eq!(h.count_le_ns(2048), 4);
        assert_eq!(h.count_le_ns(1 << 22), 4);
        assert_eq!(h.count_le_ns(1 << 23), 5);
        assert_eq!(
            h.cumulative_le_ns(&[1024, 2048, 1 << 22, 1 << 23]),
            vec![2, 4, 4, 5]
        );
    }

    #[test]
    fn quantiles_within_an_eighth_of_an_octave() {
        let mut h = LatencyHistogram::new();
        for ns in 1..=100_000u64 {
            h.record_ns(ns);
        }
        for (q, want) in [(0.5, 50_000u64), (0.99, 99_000), (0.999, 99_900)] {
            let got = h.quantile_ns(q);
            assert!(got >= want, "q{q}: {got} < {want}");
            assert!(got as f64 <= want as f64 * 1.125, "q{q}: {got} vs {want}");
        }
        assert_eq!(h.quantile_ns(1.0), 100_000);
        assert_eq!(LatencyHistogram::new().quantile_ns(0.5), 0);
    }

    #[test]
    fn merge_adds() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        a.record_ns(10);
        b.record_ns(10);
        b.record_ns(1 << 30);
        a.merge(&b);
        assert_eq!(a.count(), 3);
        assert_eq!(a.max_ns(), 1 << 30);
        assert_eq!(a.count_le_ns(16), 2);
        // Huge values land in the last bucket, never out of range.
        a.record_ns(u64::MAX);
        assert_eq!(a.count(), 4);
        assert_eq!(a.count_le_ns(1 << MAX_BITS), 4);
    }
}
