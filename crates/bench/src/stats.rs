//! Latency histograms (HDR, nanoseconds) and their percentiles (microseconds).

use hdrhistogram::Histogram;

/// Highest latency a histogram tracks: one hour, in nanoseconds (longer ones saturate).
pub const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

/// A new latency histogram: 1 ns to [`MAX_LATENCY_NS`], 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid histogram bounds")
}

/// Latency percentiles of a run, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Percentiles {
    /// Number of recorded latencies.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Smallest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// 99.99th percentile.
    pub p99_99: f64,
    /// Largest.
    pub max: f64,
}

/// The percentiles of `h` (recorded in nanoseconds), converted to microseconds. Each
/// percentile is the highest value equivalent (within the histogram's 3 significant digits)
/// to the recorded value at that rank; zero for an empty histogram.
pub fn percentiles(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    Percentiles {
        count: h.len(),
        mean: h.mean() / 1000.0,
        min: us(h.min()),
        p50: us(h.value_at_quantile(0.50)),
        p99: us(h.value_at_quantile(0.99)),
        p99_9: us(h.value_at_quantile(0.999)),
        p99_99: us(h.value_at_quantile(0.9999)),
        max: us(h.max()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= want * 0.001 + 1e-9
    }

    #[test]
    fn percentiles_of_one_to_ten_thousand_microseconds() {
        let mut h = new_histogram();
        for us in 1..=10_000u64 {
            h.record(us * 1000).unwrap();
        }
        let p = percentiles(&h);
        assert_eq!(p.count, 10_000);
        assert!(close(p.p50, 5000.0), "p50 {}", p.p50);
        assert!(close(p.p99, 9900.0), "p99 {}", p.p99);
        assert!(close(p.p99_9, 9990.0), "p99.9 {}", p.p99_9);
        assert!(close(p.p99_99, 9999.0), "p99.99 {}", p.p99_99);
        assert!(close(p.max, 10_000.0), "max {}", p.max);
        assert!(close(p.min, 1.0), "min {}", p.min);
        assert!(close(p.mean, 5000.5), "mean {}", p.mean);
    }

    #[test]
    fn percentiles_with_outliers_and_merge() {
        // Two threads' histograms merged: 9990 fast requests (100 us) and 10 slow (50 ms).
        let mut a = new_histogram();
        let mut b = new_histogram();
        for i in 0..9990u64 {
            let h = if i % 2 == 0 { &mut a } else { &mut b };
            h.record(100_000).unwrap();
        }
        for _ in 0..10 {
            b.record(50_000_000).unwrap();
        }
        a.add(&b).unwrap();
        let p = percentiles(&a);
        assert_eq!(p.count, 10_000);
        assert!(close(p.p50, 100.0));
        assert!(close(p.p99, 100.0));
        // Rank 9990 is the last fast one; 99.99% (rank 9999) is slow.
        assert!(close(p.p99_9, 100.0), "p99.9 {}", p.p99_9);
        assert!(close(p.p99_99, 50_000.0), "p99.99 {}", p.p99_99);
        assert!(close(p.max, 50_000.0));
    }

    #[test]
    fn empty_and_saturated() {
        assert_eq!(percentiles(&new_histogram()), Percentiles::default());
        let mut h = new_histogram();
        h.saturating_record(u64::MAX);
        assert!(percentiles(&h).max >= MAX_LATENCY_NS as f64 / 1000.0 * 0.999);
    }
}
