//! One position of verification: the accept/reject kernels.
//!
//! All laws are log-probability vectors over the whole vocabulary (`-inf`
//! off the support). Each kernel returns [`Decision::Accept`] or the token to
//! emit instead.

use rand::Rng;
use zapspec_core::prob::{argmax, sample, sample_log};

/// What the verifier does with one drafted token. Laws are vectors over
/// any fixed list of candidates (the decoder uses the valid set `A_t`, in
/// token order); tokens are indices into that list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Keep the drafted token and go on to the next position.
    Accept,
    /// Discard it (and everything drafted after it) and emit this index.
    Reject(usize),
}

/// Leviathan et al. (2023, Thm. 1) rejection step, as in Appendix A of the
/// future-validity paper: accept draft `d ~ q` with probability
/// `min(1, π(d)/q(d))`, otherwise emit a sample of the residual
/// `(π − q)⁺ / Z⁺`. The emitted token is distributed exactly as `π`.
///
/// `target` is the verifier's target `π` (masked `p̃_t` for the LMS class,
/// `p·Φ̂` for FVO-Spec) and `draft` the law `d` was drawn from.
pub fn leviathan_step<R: Rng + ?Sized>(
    rng: &mut R,
    target: &[f64],
    draft: &[f64],
    d: usize,
) -> Decision {
    let di = d;
    let log_ratio = target[di] - draft[di];
    // accept with probability min(1, exp(log_ratio)); log_ratio is -inf when π(d) = 0
    let accept = log_ratio >= 0.0 || rng.random::<f64>() < log_ratio.exp();
    if accept {
        return Decision::Accept;
    }
    // residual (π − q)⁺, computed as π·(1 − q/π)⁺ so tiny masses keep their scale
    let residual: Vec<f64> = target
        .iter()
        .zip(draft)
        .map(|(&lt, &lq)| {
            if lt == f64::NEG_INFINITY || lq >= lt {
                0.0
            } else {
                // π − q = π (1 − e^{log q − log π}) = −π·expm1(log q − log π)
                -lt.exp() * (lq - lt).exp_m1()
            }
        })
        .collect();
    let y = match sample(rng, &residual) {
        Ok(y) => y,
        // π = q to rounding: the rejection had probability ~0; π itself is exact
        Err(_) => sample_log(rng, target).unwrap_or(di),
    };
    Decision::Reject(y)
}

/// The equality-with-independent-target-sample diagnostic (Appendix H.7):
/// draw `s ~ π` independently of the draft; accept `d` when `s = d`,
/// otherwise emit a *fresh* sample of `π`. The emitted token has marginal
/// `π_i q_i + (1 − ⟨π, q⟩) π_i = π_i (1 + q_i − ⟨π, q⟩)` when `d ~ q`.
pub fn equality_step<R: Rng + ?Sized>(rng: &mut R, target: &[f64], d: usize) -> Decision {
    let s = sample_log(rng, target).unwrap_or(d);
    if s == d {
        Decision::Accept
    } else {
        Decision::Reject(sample_log(rng, target).unwrap_or(s))
    }
}

/// Greedy verification: accept `d` iff it is the argmax of `π`; otherwise
/// emit that argmax.
pub fn greedy_step(target: &[f64], d: usize) -> Decision {
    match argmax(target) {
        Some(a) if a != d => Decision::Reject(a),
        _ => Decision::Accept,
    }
}

/// The closed-form one-step marginal of [`equality_step`]:
/// `π_i (1 + q_i − ⟨π, q⟩)` (probabilities, not logs).
pub fn equality_marginal(target: &[f64], draft: &[f64]) -> Vec<f64> {
    let p: Vec<f64> = target.iter().map(|v| v.exp()).collect();
    let q: Vec<f64> = draft.iter().map(|v| v.exp()).collect();
    let pq: f64 = p.iter().zip(&q).map(|(a, b)| a * b).sum();
    p.iter()
        .zip(&q)
        .map(|(pi, qi)| pi * (1.0 + qi - pq))
        .collect()
}
