//! Sample statistics of the future-validity experiments (App. G "TV
//! estimation", App. H.6), for tests and study binaries that compare a
//! sampler's output with an exact law (`zapspec_phi::metrics::TerminalLaws`
//! gives the exact laws): TV of counts ([`tv_counts`], [`empirical_tv`] for
//! keyed samples), the one bootstrap interval of that TV
//! ([`bootstrap_tv_ci`]), the noise floor of an exact sampler at the same N
//! ([`noise_floor`]), Pearson's χ² and the G test ([`chi_square`],
//! [`g_test`]), and structural statistics of Dyck-like samples
//! ([`StructuralStats`]).

use std::collections::HashMap;
use std::hash::Hash;

use rand::Rng;
use statrs::distribution::{ChiSquared, ContinuousCDF};
use zapspec_core::prob::{self, seeded_rng};
use zapspec_core::TokenId;

/// An empirical TV estimate with its bootstrap 95% interval (App. G).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TvEstimate {
    /// `½ Σ_x |f̂(x) − μ(x)|` over the union of supports.
    pub tv: f64,
    /// Lower end of the 95% interval ([`bootstrap_tv_ci`]).
    pub ci_low: f64,
    /// Upper end of the 95% interval ([`bootstrap_tv_ci`]).
    pub ci_high: f64,
    /// Number of samples.
    pub n: usize,
    /// Number of bootstrap resamples.
    pub resamples: usize,
}

/// The paper's bootstrap size (App. G: "Bootstrap 95% CI from 500 resamples").
pub const DEFAULT_RESAMPLES: usize = 500;

/// Empirical TV between keyed samples and a reference law, with the
/// bootstrap 95% interval of [`bootstrap_tv_ci`] (`resamples` resamples,
/// RNG seeded with `seed`). Reference atoms never sampled count fully;
/// sampled atoms missing from the reference count with reference mass 0.
/// Cost: `O(N + |reference| + resamples·(N log |atoms|))`.
pub fn empirical_tv<K: Hash + Eq + Clone>(
    samples: &[K],
    reference: &HashMap<K, f64>,
    resamples: usize,
    seed: u64,
) -> TvEstimate {
    let n = samples.len();
    // Atoms in order of first appearance, then one cell holding the mass of
    // every reference atom never sampled (its count is 0 in every resample).
    let mut index: HashMap<&K, usize> = HashMap::new();
    let mut law: Vec<f64> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    for s in samples {
        let next = index.len();
        let id = *index.entry(s).or_insert_with(|| {
            law.push(reference.get(s).copied().unwrap_or(0.0));
            counts.push(0);
            next
        });
        counts[id] += 1;
    }
    let unseen: f64 = reference
        .iter()
        .filter(|(k, _)| !index.contains_key(k))
        .map(|(_, &p)| p)
        .sum();
    law.push(unseen);
    counts.push(0);
    if n == 0 {
        let tv = 0.5 * law.iter().sum::<f64>();
        return TvEstimate {
            tv,
            ci_low: tv,
            ci_high: tv,
            n,
            resamples,
        };
    }
    let tv = tv_counts(&counts, &law);
    let (ci_low, ci_high) = if resamples == 0 {
        (tv, tv)
    } else {
        bootstrap_tv_ci(&mut seeded_rng(seed), &counts, &law, resamples)
    };
    TvEstimate {
        tv,
        ci_low,
        ci_high,
        n,
        resamples,
    }
}

/// `½ Σ_x |count_x/N − law_x|` (probabilities, not logs); 1 when there are
/// no counts. Cost `O(|law|)`.
pub fn tv_counts(counts: &[usize], law: &[f64]) -> f64 {
    let n: usize = counts.iter().sum();
    if n == 0 {
        return 1.0;
    }
    0.5 * counts
        .iter()
        .zip(law)
        .map(|(&c, &p)| (c as f64 / n as f64 - p).abs())
        .sum::<f64>()
}

/// Draws `n` iid members from `law` (unnormalised weights) into counts by
/// inverse-CDF sampling. Cost `O(|law| + n log |law|)`.
pub fn sample_counts<R: Rng + ?Sized>(rng: &mut R, law: &[f64], n: usize) -> Vec<usize> {
    let mut cdf = Vec::with_capacity(law.len());
    let mut acc = 0.0;
    for &p in law {
        acc += p.max(0.0);
        cdf.push(acc);
    }
    let mut counts = vec![0usize; law.len()];
    if acc <= 0.0 {
        return counts;
    }
    for _ in 0..n {
        let u = rng.random::<f64>() * acc;
        let i = cdf.partition_point(|&c| c <= u).min(law.len() - 1);
        counts[i] += 1;
    }
    counts
}

/// Mean and standard deviation of the TV between `reps` exact iid samples of
/// size `n` and `law` itself: the TV an exact sampler shows from sampling
/// noise alone (the baseline every empirical TV is read against).
pub fn noise_floor<R: Rng + ?Sized>(rng: &mut R, law: &[f64], n: usize, reps: usize) -> (f64, f64) {
    let tvs: Vec<f64> = (0..reps)
        .map(|_| tv_counts(&sample_counts(rng, law, n), law))
        .collect();
    mean_sd(&tvs)
}

/// Bootstrap 95% interval of the TV between the sampled law (`counts`) and
/// `law`, resampling the observed samples `reps` times (App. G uses 500).
///
/// The empirical TV is biased upwards by sampling noise and a resampled TV
/// more so, so the plain percentile interval can lie entirely above the
/// point estimate. This is the *basic* (reverse-percentile) interval
/// `[2·TV − q₉₇.₅, 2·TV − q₂.₅]`, which corrects that shift, clipped at 0.
/// `(NaN, NaN)` when `reps = 0`.
pub fn bootstrap_tv_ci<R: Rng + ?Sized>(
    rng: &mut R,
    counts: &[usize],
    law: &[f64],
    reps: usize,
) -> (f64, f64) {
    let n: usize = counts.iter().sum();
    let emp: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
    let mut tvs: Vec<f64> = (0..reps)
        .map(|_| tv_counts(&sample_counts(rng, &emp, n), law))
        .collect();
    tvs.sort_by(|a, b| a.total_cmp(b));
    if tvs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let q = |f: f64| tvs[((tvs.len() - 1) as f64 * f).round() as usize];
    let t = tv_counts(counts, law);
    ((2.0 * t - q(0.975)).max(0.0), (2.0 * t - q(0.025)).max(0.0))
}

/// Sample mean and (n − 1) standard deviation; `(NaN, NaN)` when empty.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let m = xs.iter().sum::<f64>() / xs.len() as f64;
    let v = if xs.len() > 1 {
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64
    } else {
        0.0
    };
    (m, v.sqrt())
}

/// Result of a goodness-of-fit test ([`chi_square`], [`g_test`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChiSquare {
    /// The test statistic.
    pub statistic: f64,
    /// Degrees of freedom: pooled cells − 1.
    pub dof: usize,
    /// Upper-tail p-value under χ²(dof).
    pub p_value: f64,
}

/// Pearson's chi-square test of `counts` against `law`. Cells with expected
/// count below 5 are pooled (in order) so the asymptotic law applies; a
/// count on a cell of probability zero gives `p = 0`.
pub fn chi_square(counts: &[usize], law: &[f64]) -> ChiSquare {
    goodness_of_fit(
        counts,
        law,
        |o, e| if e > 0.0 { (o - e).powi(2) / e } else { 0.0 },
    )
}

/// The likelihood-ratio (G) test of `counts` against `law`:
/// `G = 2 Σ O ln(O/E)` over the same pooled cells as [`chi_square`],
/// referred to χ² with `cells − 1` degrees of freedom. Less sensitive than
/// Pearson's statistic to a few rare cells with small expected counts.
pub fn g_test(counts: &[usize], law: &[f64]) -> ChiSquare {
    goodness_of_fit(counts, law, |o, e| {
        if o > 0.0 && e > 0.0 {
            2.0 * o * (o / e).ln()
        } else {
            0.0
        }
    })
}

/// Pools cells in order until each has expected count ≥ 5, sums
/// `term(observed, expected)` and refers it to χ²(cells − 1).
fn goodness_of_fit(counts: &[usize], law: &[f64], term: impl Fn(f64, f64) -> f64) -> ChiSquare {
    let n: usize = counts.iter().sum();
    let nf = n as f64;
    let mut cells: Vec<(f64, f64)> = Vec::new(); // (observed, expected)
    let (mut po, mut pe) = (0.0, 0.0);
    let mut impossible = false;
    for (&c, &p) in counts.iter().zip(law) {
        if p <= 0.0 && c > 0 {
            impossible = true;
        }
        po += c as f64;
        pe += p * nf;
        if pe >= 5.0 {
            cells.push((po, pe));
            po = 0.0;
            pe = 0.0;
        }
    }
    if pe > 0.0 || po > 0.0 {
        match cells.last_mut() {
            Some(last) => {
                last.0 += po;
                last.1 += pe;
            }
            None => cells.push((po, pe)),
        }
    }
    let statistic: f64 = cells.iter().map(|&(o, e)| term(o, e)).sum::<f64>().max(0.0);
    let dof = cells.len().saturating_sub(1);
    let p_value = if impossible {
        0.0
    } else if dof == 0 {
        1.0
    } else {
        ChiSquared::new(dof as f64)
            .map(|d| 1.0 - d.cdf(statistic))
            .unwrap_or(f64::NAN)
    };
    ChiSquare {
        statistic,
        dof,
        p_value,
    }
}

/// Structural statistics of Dyck-like samples (App. H.6): maximum nesting
/// depth and length.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StructuralStats {
    /// Number of samples (or members of the law).
    pub n: usize,
    /// Mean maximum nesting depth.
    pub mean_depth: f64,
    /// Mean length.
    pub mean_len: f64,
    /// `depth_hist[d]` = fraction of samples with max depth `d`.
    pub depth_hist: Vec<f64>,
    /// `len_hist[l]` = fraction of samples of length `l`.
    pub len_hist: Vec<f64>,
}

/// Maximum nesting depth of a bracket string whose tokens `< kinds` open
/// and `kinds..2·kinds` close.
pub fn max_depth(x: &[TokenId], kinds: usize) -> usize {
    let (mut d, mut m) = (0usize, 0usize);
    for &t in x {
        if (t as usize) < kinds {
            d += 1;
            m = m.max(d);
        } else if (t as usize) < 2 * kinds {
            d = d.saturating_sub(1);
        }
    }
    m
}

impl StructuralStats {
    /// From samples (each with weight 1).
    pub fn of_samples(samples: &[Vec<TokenId>], kinds: usize) -> Self {
        let w = vec![1.0; samples.len()];
        Self::weighted(samples, &w, kinds)
    }

    /// From a law: members with log-probabilities (exact expectations).
    pub fn of_law(members: &[Vec<TokenId>], log_mu: &[f64], kinds: usize) -> Self {
        let w: Vec<f64> = log_mu.iter().map(|l| l.exp()).collect();
        Self::weighted(members, &w, kinds)
    }

    fn weighted(xs: &[Vec<TokenId>], w: &[f64], kinds: usize) -> Self {
        let total: f64 = w.iter().sum();
        let mut dh = Vec::new();
        let mut lh = Vec::new();
        let (mut md, mut ml) = (0.0, 0.0);
        for (x, &wi) in xs.iter().zip(w) {
            let d = max_depth(x, kinds);
            let wi = if total > 0.0 { wi / total } else { 0.0 };
            if dh.len() <= d {
                dh.resize(d + 1, 0.0);
            }
            if lh.len() <= x.len() {
                lh.resize(x.len() + 1, 0.0);
            }
            dh[d] += wi;
            lh[x.len()] += wi;
            md += wi * d as f64;
            ml += wi * x.len() as f64;
        }
        StructuralStats {
            n: xs.len(),
            mean_depth: md,
            mean_len: ml,
            depth_hist: dh,
            len_hist: lh,
        }
    }
}

/// `KL(p ‖ q)` between two histograms of possibly different lengths.
pub fn hist_kl(p: &[f64], q: &[f64]) -> f64 {
    let n = p.len().max(q.len());
    let lp: Vec<f64> = (0..n)
        .map(|i| p.get(i).copied().unwrap_or(0.0).ln())
        .collect();
    let lq: Vec<f64> = (0..n)
        .map(|i| q.get(i).copied().unwrap_or(0.0).ln())
        .collect();
    prob::kl_log(&lp, &lq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zapspec_core::prob::seeded_rng;

    #[test]
    fn exact_samples_pass_and_biased_fail() {
        let law = [0.5, 0.3, 0.15, 0.05];
        let mut rng = seeded_rng(1);
        let c = sample_counts(&mut rng, &law, 20_000);
        assert!(tv_counts(&c, &law) < 0.02);
        assert!(chi_square(&c, &law).p_value > 1e-3);
        let biased = [0.45, 0.35, 0.15, 0.05];
        assert!(chi_square(&c, &biased).p_value < 1e-6);
        let (m, sd) = noise_floor(&mut rng, &law, 20_000, 50);
        assert!(m > 0.0 && m < 0.01 && sd < m);
        let (lo, hi) = bootstrap_tv_ci(&mut rng, &c, &law, 200);
        assert!(lo <= tv_counts(&c, &law) && tv_counts(&c, &law) <= hi);
        // a count on an impossible cell is an outright failure
        assert_eq!(chi_square(&[1, 10], &[0.0, 1.0]).p_value, 0.0);
        // the G test agrees: exact samples pass, the biased law fails
        assert!(g_test(&c, &law).p_value > 1e-3);
        assert!(g_test(&c, &biased).p_value < 1e-6);
        assert_eq!(g_test(&[1, 10], &[0.0, 1.0]).p_value, 0.0);
    }

    #[test]
    fn g_statistic_matches_a_hand_computation() {
        // two cells, expected 50/50, observed 60/40: G = 2(60 ln 1.2 + 40 ln 0.8)
        let g = g_test(&[60, 40], &[0.5, 0.5]);
        let want = 2.0 * (60.0 * 1.2f64.ln() + 40.0 * 0.8f64.ln());
        assert!((g.statistic - want).abs() < 1e-12 && g.dof == 1);
        let x = chi_square(&[60, 40], &[0.5, 0.5]);
        assert!((x.statistic - 4.0).abs() < 1e-12);
        // p of χ²(1) at 4.0 is 0.0455
        assert!((x.p_value - 0.0455).abs() < 1e-3);
    }
}
