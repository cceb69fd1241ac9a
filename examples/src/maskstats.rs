//! Latency summaries for the MaskBench harness (`src/bin/maskbench/`):
//! nearest-rank percentiles of time-to-first-mask (TTFM) and
//! time-between-masks (TBM) samples, in microseconds.

use serde::{Deserialize, Serialize};

/// The percentiles MaskBench reports (JSONSchemaBench, `maskbench/README.md`).
pub const PERCENTILES: [(f64, &str); 7] = [
    (25.0, "p25"),
    (50.0, "p50"),
    (75.0, "p75"),
    (90.0, "p90"),
    (95.0, "p95"),
    (99.0, "p99"),
    (99.9, "p99.9"),
];

/// Nearest-rank percentile `p` (0 < p ≤ 100) of **sorted** samples: the
/// smallest sample such that at least `p`% of the samples are ≤ it.
/// `None` for no samples.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    // The epsilon keeps 99.9% of 1000 at rank 999 despite rounding.
    let rank = ((p / 100.0) * n as f64 - 1e-9).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

/// Summary of a latency distribution (all values in µs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: usize,
    /// 25th percentile.
    pub p25: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p999: f64,
    /// Largest sample.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
}

impl Summary {
    /// Summarises samples (any order; NaNs are dropped).
    pub fn of(samples: &[f64]) -> Summary {
        let mut s: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
        s.sort_by(|a, b| a.total_cmp(b));
        if s.is_empty() {
            return Summary::default();
        }
        let p = |q| percentile_sorted(&s, q).unwrap_or(0.0);
        Summary {
            count: s.len(),
            p25: p(25.0),
            p50: p(50.0),
            p75: p(75.0),
            p90: p(90.0),
            p95: p(95.0),
            p99: p(99.0),
            p999: p(99.9),
            max: s[s.len() - 1],
            mean: s.iter().sum::<f64>() / s.len() as f64,
        }
    }

    /// `(label, value)` rows in reporting order.
    pub fn rows(&self) -> [(&'static str, f64); 9] {
        [
            ("p25", self.p25),
            ("p50", self.p50),
            ("p75", self.p75),
            ("p90", self.p90),
            ("p95", self.p95),
            ("p99", self.p99),
            ("p99.9", self.p999),
            ("max", self.max),
            ("mean", self.mean),
        ]
    }
}

/// Formats µs compactly: `6.8 µs`, `41 µs`, `1.7 ms`, `2.3 s`.
pub fn fmt_us(us: f64) -> String {
    if us < 10.0 {
        format!("{us:.1} µs")
    } else if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 10_000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else if us < 1_000_000.0 {
        format!("{:.0} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute-force nearest rank: the smallest sample `x` with
    /// `#{y ≤ x} ≥ p/100 · n`.
    fn brute(samples: &[f64], p: f64) -> f64 {
        let n = samples.len() as f64;
        let mut c: Vec<f64> = samples.to_vec();
        c.sort_by(|a, b| a.total_cmp(b));
        *c.iter()
            .find(|&&x| samples.iter().filter(|&&y| y <= x).count() as f64 >= p / 100.0 * n - 1e-9)
            .unwrap()
    }

    #[test]
    fn nearest_rank_examples() {
        // Wikipedia's nearest-rank example: {15, 20, 35, 40, 50}.
        let s = [15.0, 20.0, 35.0, 40.0, 50.0];
        assert_eq!(percentile_sorted(&s, 5.0), Some(15.0));
        assert_eq!(percentile_sorted(&s, 30.0), Some(20.0));
        assert_eq!(percentile_sorted(&s, 40.0), Some(20.0));
        assert_eq!(percentile_sorted(&s, 50.0), Some(35.0));
        assert_eq!(percentile_sorted(&s, 100.0), Some(50.0));
        assert_eq!(percentile_sorted(&[], 50.0), None);
        let one = Summary::of(&[7.0]);
        assert_eq!(
            (one.p25, one.p999, one.max, one.mean, one.count),
            (7.0, 7.0, 7.0, 7.0, 1)
        );
    }

    #[test]
    fn summary_matches_brute_force() {
        // 1..=1000 shuffled deterministically: p50 = 500, p99.9 = 999.
        let v: Vec<f64> = (0..1000u64)
            .map(|i| ((i * 7919) % 1000 + 1) as f64)
            .collect();
        let s = Summary::of(&v);
        assert_eq!(
            (s.p25, s.p50, s.p90, s.p99, s.p999, s.max),
            (250.0, 500.0, 900.0, 990.0, 999.0, 1000.0)
        );
        assert!((s.mean - 500.5).abs() < 1e-9);
        for n in [1usize, 2, 3, 10, 37, 101] {
            let v: Vec<f64> = (0..n as u64).map(|i| ((i * 31 + 7) % 97) as f64).collect();
            let mut sorted = v.clone();
            sorted.sort_by(|a, b| a.total_cmp(b));
            for (p, _) in PERCENTILES {
                assert_eq!(
                    percentile_sorted(&sorted, p).unwrap(),
                    brute(&v, p),
                    "n={n} p={p}"
                );
            }
        }
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_us(6.83), "6.8 µs");
        assert_eq!(fmt_us(41.2), "41 µs");
        assert_eq!(fmt_us(1700.0), "1.70 ms");
        assert_eq!(fmt_us(78_000.0), "78 ms");
        assert_eq!(fmt_us(2_300_000.0), "2.30 s");
    }
}
