//! One position of verification: the accept/reject kernels.
//!
//! All laws are log-probability vectors over the whole vocabulary (`-inf`
//! off the support). Each kernel returns [`Decision::Accept`] or the token to
//! emit instead.

use rand::Rng;
use zapspec_core::prob::{argmax, renormalize_log, sample, sample_log};
use zapspec_core::TokenId;

/// The drafter's law at one drafted position.
#[derive(Debug, Clone, PartialEq)]
pub enum DraftLaw {
    /// A law on the valid set: `log_q[i]` is `log q(ids[i])`, `ids` in
    /// increasing token order.
    Dist {
        /// The candidates (the valid set `A_t` at that position).
        ids: Vec<TokenId>,
        /// Their log probabilities under the drafter.
        log_q: Vec<f64>,
    },
    /// A deterministic proposal: all mass on the drafted token.
    Point,
}

impl DraftLaw {
    /// The law's log probabilities on another candidate list `ids` (the
    /// verifier's valid set, token order): `log q(ids[i])`, `-inf` where
    /// the law has no entry. Not renormalised — mass the drafter put
    /// outside `ids` stays missing, as the rejection rules need (a draw
    /// outside `ids` is one the verifier rejects with certainty). `None`
    /// for [`DraftLaw::Point`].
    pub fn log_q_on(&self, ids: &[TokenId]) -> Option<Vec<f64>> {
        let DraftLaw::Dist { ids: dids, log_q } = self else {
            return None;
        };
        if dids.as_slice() == ids {
            return Some(log_q.clone());
        }
        // both lists are in increasing token order: one merge
        let mut out = vec![f64::NEG_INFINITY; ids.len()];
        let mut j = 0usize;
        for (o, &y) in out.iter_mut().zip(ids) {
            while j < dids.len() && dids[j] < y {
                j += 1;
            }
            if j < dids.len() && dids[j] == y {
                *o = log_q[j];
            }
        }
        Some(out)
    }
}

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

/// The outcome of [`multi_step`]: an index into the candidate list, and
/// which attempt (if any) was accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MultiStep {
    /// Attempt `attempt` (an index into the attempts) was accepted; its
    /// candidate is `index`.
    Accepted {
        /// Which attempt.
        attempt: usize,
        /// Its candidate.
        index: usize,
    },
    /// Every attempt was rejected; `index` was drawn from the final
    /// residual.
    Residual(usize),
}

impl MultiStep {
    /// The emitted candidate.
    pub fn index(self) -> usize {
        match self {
            MultiStep::Accepted { index, .. } | MultiStep::Residual(index) => index,
        }
    }
}

/// SpecInfer's multi-step speculative sampling (Miao et al. 2024, Alg. 2,
/// `VerifyStochastic`; the i.i.d.-proposal case of SpecTr's optimal
/// transport, Sun et al. 2023): `attempts` are `k` draws made
/// independently from `draft` (`q`, log probabilities over the candidate
/// list, not necessarily summing to 1 on it — mass outside the list is a
/// draw the target refuses); `None` is a draw outside the list. With
/// `r = target` (`π`): for `i = 1..k`, accept attempt `i` with probability
/// `min(1, r(cᵢ)/q(cᵢ))`; on rejection set `r ← (r − q)⁺ / ‖(r − q)⁺‖₁` (the
/// residual) and go on; if every attempt is rejected, emit a draw of the
/// final `r`.
///
/// **Exactness.** The emitted candidate is distributed as `π` whenever
/// the attempts are i.i.d. from `q` given everything that chose `π` and
/// `k`. By induction on `k`: with `k = 0` the draw is from `r = π`; one
/// step against target `r` emits `c₁` with probability
/// `Σ_c q(c)·min(1, r(c)/q(c))·1[c = y] = min(q(y), r(y))`, and rejects
/// with probability `1 − Σ min(q, r) = ‖(r − q)⁺‖₁`, after which the
/// remaining `k − 1` attempts (still i.i.d. `q`, independent of the coins
/// so far) emit the residual law by induction; in all
/// `min(q, r) + (r − q)⁺ = r`. A repeated draw (`cᵢ = cⱼ`, which i.i.d.
/// sampling produces) is simply another attempt against the evolving
/// residual: the argument never assumes distinct attempts. The attempts'
/// order must not depend on their values (draw order, not sorted).
///
/// In log space: the residual is `r·(1 − e^{log q − log r})⁺`, computed
/// with `expm1`, then renormalised, so masses far below `f64`'s normal
/// range keep their ratios. If the residual has no mass (`r = q` to
/// rounding: the rejection had probability 0) the last `r` is kept.
/// `None` when `target` has no mass.
pub fn multi_step<R: Rng + ?Sized>(
    rng: &mut R,
    target: &[f64],
    draft: &[f64],
    attempts: &[Option<usize>],
) -> Option<MultiStep> {
    let mut r = target.to_vec();
    for (i, &c) in attempts.iter().enumerate() {
        if let Some(c) = c.filter(|&c| c < r.len()) {
            let log_ratio = r[c] - draft.get(c).copied().unwrap_or(f64::NEG_INFINITY);
            // accept with probability min(1, r/q); -inf when r(c) = 0,
            // +inf when q(c) = 0 < r(c) (a draw q could not make: accept)
            if log_ratio >= 0.0 || rng.random::<f64>() < log_ratio.exp() {
                return Some(MultiStep::Accepted {
                    attempt: i,
                    index: c,
                });
            }
        }
        // a draw outside the list, or rejected: r ← norm((r − q)⁺)
        let mut next: Vec<f64> = r
            .iter()
            .zip(draft.iter().chain(std::iter::repeat(&f64::NEG_INFINITY)))
            .map(|(&lr, &lq)| {
                if lr == f64::NEG_INFINITY || lq >= lr {
                    f64::NEG_INFINITY
                } else {
                    // log(r − q) = log r + log(1 − e^{log q − log r})
                    lr + (-(lq - lr).exp_m1()).ln()
                }
            })
            .collect();
        if renormalize_log(&mut next).is_ok() {
            r = next;
        }
    }
    // every attempt rejected (or none): a draw from the residual
    sample_log(rng, &r).ok().map(MultiStep::Residual)
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
