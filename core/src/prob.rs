//! Probability helpers, stable in log space: log-sum-exp, (masked)
//! log-softmax, seeded sampling, total variation and KL divergence.
//!
//! Every helper is generic over [`num_traits::Float`]: models hand out `f32`
//! logits, exact laws need `f64`, and one implementation serves both. The
//! logit-to-distribution entry points ([`log_softmax`], [`softmax`],
//! [`masked_log_softmax`]) take logits of any float type and widen them to
//! `f64` before accumulating, so a distribution is always `f64`. The others
//! compute in the type they are given. A probability of 1e-300 stays
//! representable as a log probability; nothing here divides by a
//! probability that can be zero. Every function is one or two passes over
//! its input: O(n) time, and O(n) memory only where it returns a vector.

use num_traits::Float;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::token_set::TokenSet;

/// The RNG every seeded experiment in zapspec uses.
pub type SeededRng = ChaCha8Rng;

/// A reproducible RNG from a seed.
pub fn seeded_rng(seed: u64) -> SeededRng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Left-to-right sum starting from `-0.0`: exactly what std's `Sum` does for
/// `f32` and `f64`, so the generic helpers give the same bits as the
/// per-type code they replace.
#[inline]
fn fsum<T: Float>(it: impl Iterator<Item = T>) -> T {
    it.fold(T::neg_zero(), |a, b| a + b)
}

/// A uniform draw in `[0, 1)`: one `f64` from `rng` (the same stream
/// whatever `T` is), converted to `T`.
#[inline]
fn unit<T: Float, R: Rng + ?Sized>(rng: &mut R) -> T {
    T::from(rng.random::<f64>()).unwrap_or_else(T::zero)
}

/// Widens a logit to `f64` (exact for `f32` and `f64`).
#[inline]
fn widen<T: Float>(v: T) -> f64 {
    v.to_f64().unwrap_or(f64::NAN)
}

/// `log Σ exp(x_i)`, computed as `m + log Σ exp(x_i − m)` with
/// `m = max x_i` so it neither overflows nor underflows; `-inf` for an
/// empty slice or all `-inf`, `+inf` when some `x_i` is `+inf`. Two passes,
/// O(n).
pub fn logsumexp<T: Float>(xs: &[T]) -> T {
    let m = xs.iter().copied().fold(T::neg_infinity(), T::max);
    if m == T::neg_infinity() {
        return T::neg_infinity();
    }
    if m == T::infinity() {
        return T::infinity();
    }
    m + fsum(xs.iter().map(|&x| (x - m).exp())).ln()
}

/// `log(e^a + e^b)`, stable (the two-term [`logsumexp`]).
pub fn log_add_exp<T: Float>(a: T, b: T) -> T {
    let m = a.max(b);
    if m == T::neg_infinity() {
        return m;
    }
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// Log-probabilities `x_i − logsumexp(x)` from logits of any float type,
/// widened to `f64` first (the result is the same as widening the logits
/// by hand and normalising in `f64`). O(n).
pub fn log_softmax<T: Float>(logits: &[T]) -> Vec<f64> {
    let x: Vec<f64> = logits.iter().map(|&v| widen(v)).collect();
    let z = logsumexp(&x);
    x.iter().map(|&v| v - z).collect()
}

/// Probabilities `exp(log_softmax(logits))`, in `f64`. O(n).
pub fn softmax<T: Float>(logits: &[T]) -> Vec<f64> {
    log_softmax(logits).into_iter().map(f64::exp).collect()
}

/// The support of a masked distribution was empty (or had zero mass).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("masked distribution has no support")]
pub struct EmptySupport;

/// Log-probabilities renormalised on `mask`: `log p(y) − log Σ_{u∈mask} p(u)`
/// for `y ∈ mask`, `-inf` elsewhere (the locally projected law p̃ of the
/// future-validity paper, Def. 2). Logits are widened to `f64`. O(|V|).
pub fn masked_log_softmax<T: Float>(
    logits: &[T],
    mask: &TokenSet,
) -> Result<Vec<f64>, EmptySupport> {
    let mut out = vec![f64::NEG_INFINITY; logits.len()];
    for t in mask.iter() {
        if let Some(&l) = logits.get(t as usize) {
            out[t as usize] = widen(l);
        }
    }
    renormalize_log(&mut out)?;
    Ok(out)
}

/// Renormalises log-weights in place so they sum to one (subtracts their
/// [`logsumexp`]); an error when they have no finite mass. O(n).
pub fn renormalize_log<T: Float>(logw: &mut [T]) -> Result<(), EmptySupport> {
    let z = logsumexp(logw);
    if !z.is_finite() {
        return Err(EmptySupport);
    }
    logw.iter_mut().for_each(|v| *v = *v - z);
    Ok(())
}

/// Draws an index from log-probabilities (need not be normalised) by
/// inversion: one uniform `f64` from `rng`, then a scan of the weights
/// `exp(logp_i − max)`. O(n).
pub fn sample_log<R: Rng + ?Sized, T: Float>(
    rng: &mut R,
    logp: &[T],
) -> Result<usize, EmptySupport> {
    let m = logp.iter().copied().fold(T::neg_infinity(), T::max);
    if !m.is_finite() {
        return Err(EmptySupport);
    }
    let total = fsum(logp.iter().map(|&v| (v - m).exp()));
    let mut u = unit::<T, R>(rng) * total;
    let mut last = 0;
    for (i, &v) in logp.iter().enumerate() {
        let w = (v - m).exp();
        if w > T::zero() {
            last = i;
            if u < w {
                return Ok(i);
            }
            u = u - w;
        }
    }
    Ok(last)
}

/// Draws an index from probabilities (need not be normalised) by
/// inversion: one uniform `f64` from `rng`, then a scan. O(n).
pub fn sample<R: Rng + ?Sized, T: Float>(rng: &mut R, p: &[T]) -> Result<usize, EmptySupport> {
    let total = fsum(p.iter().copied());
    if total.is_nan() || total <= T::zero() {
        return Err(EmptySupport);
    }
    let mut u = unit::<T, R>(rng) * total;
    let mut last = 0;
    for (i, &w) in p.iter().enumerate() {
        if w > T::zero() {
            last = i;
            if u < w {
                return Ok(i);
            }
            u = u - w;
        }
    }
    Ok(last)
}

/// Index of the largest value (ties: the first); `None` when empty or all NaN.
pub fn argmax<T: Float>(xs: &[T]) -> Option<usize> {
    let mut best: Option<(usize, T)> = None;
    for (i, &v) in xs.iter().enumerate() {
        if !v.is_nan() && best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

/// Total variation `½ Σ |p_i − q_i|` between probability vectors (panics
/// when their lengths differ). O(n).
pub fn tv<T: Float>(p: &[T], q: &[T]) -> T {
    assert_eq!(p.len(), q.len(), "tv of vectors of different lengths");
    half::<T>() * fsum(p.iter().zip(q).map(|(&a, &b)| (a - b).abs()))
}

/// Total variation `½ Σ |e^{lp_i} − e^{lq_i}|` between log-probability
/// vectors (panics when their lengths differ). O(n).
pub fn tv_log<T: Float>(lp: &[T], lq: &[T]) -> T {
    assert_eq!(lp.len(), lq.len(), "tv of vectors of different lengths");
    half::<T>() * fsum(lp.iter().zip(lq).map(|(&a, &b)| (a.exp() - b.exp()).abs()))
}

/// `½` in `T`.
#[inline]
fn half<T: Float>() -> T {
    T::from(0.5).unwrap_or_else(|| T::one() / (T::one() + T::one()))
}

/// `KL(p ‖ q) = Σ p_i log(p_i / q_i)` in nats, from log-probabilities
/// (panics when their lengths differ). Terms with `p_i = 0` are zero;
/// `p_i > 0 = q_i` gives `+inf`; rounding below zero is clamped to zero.
/// O(n).
pub fn kl_log<T: Float>(lp: &[T], lq: &[T]) -> T {
    assert_eq!(lp.len(), lq.len(), "kl of vectors of different lengths");
    let mut s = T::zero();
    for (&a, &b) in lp.iter().zip(lq) {
        if a == T::neg_infinity() {
            continue;
        }
        if b == T::neg_infinity() {
            return T::infinity();
        }
        s = s + a.exp() * (a - b);
    }
    s.max(T::zero())
}

/// `KL(p ‖ q)` from probabilities (their logarithms, then [`kl_log`]). O(n).
pub fn kl<T: Float>(p: &[T], q: &[T]) -> T {
    let lp: Vec<T> = p.iter().map(|v| v.ln()).collect();
    let lq: Vec<T> = q.iter().map(|v| v.ln()).collect();
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
        assert_eq!(logsumexp::<f64>(&[]), f64::NEG_INFINITY);
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

    /// `ln Σ exp(x_i)` the naive way, in `f64` (the reference).
    fn naive_lse(xs: &[f64]) -> f64 {
        xs.iter().map(|x| x.exp()).sum::<f64>().ln()
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

        /// Both instantiations of `logsumexp` and `log_add_exp` agree with
        /// the naive formula on moderate inputs.
        #[test]
        fn logsumexp_matches_naive(xs in prop::collection::vec(-30f64..30.0, 1..40)) {
            let r = naive_lse(&xs);
            prop_assert!((logsumexp(&xs) - r).abs() <= 1e-12 * r.abs().max(1.0));
            let x32: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
            let r32 = naive_lse(&x32.iter().map(|&v| f64::from(v)).collect::<Vec<_>>());
            prop_assert!((f64::from(logsumexp(&x32)) - r32).abs() <= 1e-5 * r32.abs().max(1.0));
            let (a, b) = (xs[0], xs[xs.len() / 2]);
            let r2 = naive_lse(&[a, b]);
            prop_assert!((log_add_exp(a, b) - r2).abs() <= 1e-12 * r2.abs().max(1.0));
            prop_assert!(
                (f64::from(log_add_exp(a as f32, b as f32)) - naive_lse(&[f64::from(a as f32), f64::from(b as f32)])).abs()
                    <= 1e-5 * r2.abs().max(1.0)
            );
        }

        /// Shifting every input by ±800 (where the naive formula overflows
        /// or underflows in both types) shifts the result by the same
        /// amount and keeps it finite.
        #[test]
        fn logsumexp_is_shift_equivariant(
            xs in prop::collection::vec(-30f64..30.0, 1..40),
            c in prop::sample::select(vec![-800.0f64, 800.0]),
        ) {
            let shifted: Vec<f64> = xs.iter().map(|&v| v + c).collect();
            let l = logsumexp(&shifted);
            prop_assert!(l.is_finite());
            prop_assert!((l - (logsumexp(&xs) + c)).abs() <= 1e-12 * l.abs());
            let s32: Vec<f32> = shifted.iter().map(|&v| v as f32).collect();
            let l32 = logsumexp(&s32);
            prop_assert!(l32.is_finite());
            prop_assert!((f64::from(l32) - l).abs() <= 1e-5 * l.abs());
            prop_assert!(log_add_exp(shifted[0], shifted[shifted.len() - 1]).is_finite());
            prop_assert!(log_add_exp(s32[0], s32[s32.len() - 1]).is_finite());
        }

        /// `f32` logits give exactly the log-probabilities of their `f64`
        /// widening, and `f32` distances agree with the `f64` ones.
        #[test]
        fn f32_and_f64_agree(a in prop::collection::vec(-5f32..5.0, 2..20), b in prop::collection::vec(-5f32..5.0, 2..20)) {
            let n = a.len().min(b.len());
            let (a, b) = (&a[..n], &b[..n]);
            let wide: Vec<f64> = a.iter().map(|&v| f64::from(v)).collect();
            prop_assert_eq!(log_softmax(a), log_softmax(&wide));
            let (p, q) = (softmax(a), softmax(b));
            let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
            let q32: Vec<f32> = q.iter().map(|&v| v as f32).collect();
            prop_assert!((f64::from(tv(&p32, &q32)) - tv(&p, &q)).abs() < 1e-5);
            prop_assert!((f64::from(kl(&p32, &q32)) - kl(&p, &q)).abs() < 1e-4);
            prop_assert_eq!(argmax(&p32), argmax(&p));
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
