//! Probability helpers, stable in log space: log-sum-exp, (masked)
//! log-softmax, seeded sampling, total variation and KL divergence.
//!
//! Distributions are `f64`; logits from models are `f32` and are widened
//! on entry. A probability of 1e-300 stays representable as a log
//! probability; nothing here divides by a probability that can be zero.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::token_set::TokenSet;

/// The RNG every seeded experiment in zapspec uses.
pub type SeededRng = ChaCha8Rng;

/// A reproducible RNG from a seed.
pub fn seeded_rng(seed: u64) -> SeededRng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// `log Σ exp(x_i)`; `-inf` for an empty slice or all `-inf`.
pub fn logsumexp(xs: &[f64]) -> f64 {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    if m == f64::INFINITY {
        return f64::INFINITY;
    }
    m + xs.iter().map(|&x| (x - m).exp()).sum::<f64>().ln()
}

/// `log(e^a + e^b)`.
pub fn log_add_exp(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// Log-probabilities from logits.
pub fn log_softmax(logits: &[f32]) -> Vec<f64> {
    let x: Vec<f64> = logits.iter().map(|&v| v as f64).collect();
    let z = logsumexp(&x);
    x.iter().map(|&v| v - z).collect()
}

/// Probabilities from logits.
pub fn softmax(logits: &[f32]) -> Vec<f64> {
    log_softmax(logits).into_iter().map(f64::exp).collect()
}

/// The support of a masked distribution was empty (or had zero mass).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("masked distribution has no support")]
pub struct EmptySupport;

/// Log-probabilities renormalised on `mask`: `log p(y) − log Σ_{u∈mask} p(u)`
/// for `y ∈ mask`, `-inf` elsewhere (the locally projected law p̃ of the
/// future-validity paper, Def. 2).
pub fn masked_log_softmax(logits: &[f32], mask: &TokenSet) -> Result<Vec<f64>, EmptySupport> {
    let mut out = vec![f64::NEG_INFINITY; logits.len()];
    for t in mask.iter() {
        if let Some(&l) = logits.get(t as usize) {
            out[t as usize] = l as f64;
        }
    }
    renormalize_log(&mut out)?;
    Ok(out)
}

/// Renormalises log-weights in place so they sum to one.
pub fn renormalize_log(logw: &mut [f64]) -> Result<(), EmptySupport> {
    let z = logsumexp(logw);
    if !z.is_finite() {
        return Err(EmptySupport);
    }
    logw.iter_mut().for_each(|v| *v -= z);
    Ok(())
}

/// Draws an index from log-probabilities (need not be normalised).
pub fn sample_log<R: Rng + ?Sized>(rng: &mut R, logp: &[f64]) -> Result<usize, EmptySupport> {
    let m = logp.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return Err(EmptySupport);
    }
    let total: f64 = logp.iter().map(|&v| (v - m).exp()).sum();
    let mut u = rng.random::<f64>() * total;
    let mut last = 0;
    for (i, &v) in logp.iter().enumerate() {
        let w = (v - m).exp();
        if w > 0.0 {
            last = i;
            if u < w {
                return Ok(i);
            }
            u -= w;
        }
    }
    Ok(last)
}

/// Draws an index from probabilities (need not be normalised).
pub fn sample<R: Rng + ?Sized>(rng: &mut R, p: &[f64]) -> Result<usize, EmptySupport> {
    let total: f64 = p.iter().sum();
    if total.is_nan() || total <= 0.0 {
        return Err(EmptySupport);
    }
    let mut u = rng.random::<f64>() * total;
    let mut last = 0;
    for (i, &w) in p.iter().enumerate() {
        if w > 0.0 {
            last = i;
            if u < w {
                return Ok(i);
            }
            u -= w;
        }
    }
    Ok(last)
}

/// Index of the largest value (ties: the first); `None` when empty or all NaN.
pub fn argmax(xs: &[f64]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, &v) in xs.iter().enumerate() {
        if !v.is_nan() && best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

/// Total variation `½ Σ |p_i − q_i|` between probability vectors.
pub fn tv(p: &[f64], q: &[f64]) -> f64 {
    assert_eq!(p.len(), q.len(), "tv of vectors of different lengths");
    0.5 * p.iter().zip(q).map(|(a, b)| (a - b).abs()).sum::<f64>()
}

/// Total variation between log-probability vectors.
pub fn tv_log(lp: &[f64], lq: &[f64]) -> f64 {
    assert_eq!(lp.len(), lq.len(), "tv of vectors of different lengths");
    0.5 * lp
        .iter()
        .zip(lq)
        .map(|(a, b)| (a.exp() - b.exp()).abs())
        .sum::<f64>()
}

/// `KL(p ‖ q) = Σ p_i log(p_i / q_i)` in nats, from log-probabilities.
/// Terms with `p_i = 0` are zero; `p_i > 0 = q_i` gives `+inf`.
pub fn kl_log(lp: &[f64], lq: &[f64]) -> f64 {
    assert_eq!(lp.len(), lq.len(), "kl of vectors of different lengths");
    let mut s = 0.0;
    for (&a, &b) in lp.iter().zip(lq) {
        if a == f64::NEG_INFINITY {
            continue;
        }
        if b == f64::NEG_INFINITY {
            return f64::INFINITY;
        }
        s += a.exp() * (a - b);
    }
    s.max(0.0)
}

/// `KL(p ‖ q)` from probabilities.
pub fn kl(p: &[f64], q: &[f64]) -> f64 {
    let lp: Vec<f64> = p.iter().map(|v| v.ln()).collect();
    let lq: Vec<f64> = q.iter().map(|v| v.ln()).collect();
    kl_log(&lp, &lq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;
    use proptest::prelude::*;

    #[test]
    fn logsumexp_is_stable() {
        assert_relative_eq!(logsumexp(&[1000.0, 1000.0]), 1000.0 + 2f64.ln());
        assert_relative_eq!(logsumexp(&[-1000.0, -1000.0]), -1000.0 + 2f64.ln());
        assert_eq!(logsumexp(&[]), f64::NEG_INFINITY);
        assert_eq!(logsumexp(&[f64::NEG_INFINITY; 3]), f64::NEG_INFINITY);
        assert_relative_eq!(log_add_exp(-800.0, -800.0), -800.0 + 2f64.ln());
    }

    #[test]
    fn tiny_masses_stay_finite() {
        // a mask whose only members have probability ~1e-300
        let mut logits = vec![0.0f32; 4];
        logits[3] = -690.0;
        let mask = TokenSet::from_ids(4, [3]);
        let lp = masked_log_softmax(&logits, &mask).unwrap();
        assert_eq!(lp[3], 0.0);
        assert!(lp[0] == f64::NEG_INFINITY);
        assert!(masked_log_softmax(&logits, &TokenSet::new(4)).is_err());
        assert!(!kl_log(&lp, &lp).is_nan());
    }

    proptest! {
        #[test]
        fn distances(a in prop::collection::vec(-5f32..5.0, 1..20), b in prop::collection::vec(-5f32..5.0, 1..20)) {
            let n = a.len().min(b.len());
            let p = softmax(&a[..n]);
            let q = softmax(&b[..n]);
            prop_assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            let t = tv(&p, &q);
            prop_assert!((0.0..=1.0).contains(&t));
            prop_assert!((t - tv_log(&log_softmax(&a[..n]), &log_softmax(&b[..n]))).abs() < 1e-12);
            let k = kl(&p, &q);
            prop_assert!(k >= 0.0);
            // Pinsker: TV ≤ sqrt(KL / 2)
            prop_assert!(t <= (k / 2.0).sqrt() + 1e-12);
            prop_assert!(kl(&p, &p).abs() < 1e-12);
        }
    }

    #[test]
    fn sampling_matches_probabilities() {
        let p = [0.1, 0.0, 0.6, 0.3];
        let lp: Vec<f64> = p.iter().map(|v: &f64| v.ln()).collect();
        let mut rng = seeded_rng(7);
        let n = 200_000;
        let mut c1 = [0usize; 4];
        let mut c2 = [0usize; 4];
        for _ in 0..n {
            c1[sample(&mut rng, &p).unwrap()] += 1;
            c2[sample_log(&mut rng, &lp).unwrap()] += 1;
        }
        for i in 0..4 {
            assert!((c1[i] as f64 / n as f64 - p[i]).abs() < 0.005);
            assert!((c2[i] as f64 / n as f64 - p[i]).abs() < 0.005);
        }
        assert_eq!(c1[1], 0);
        assert_eq!(argmax(&p), Some(2));
    }
}
