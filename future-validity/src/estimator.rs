//! The [`PhiEstimator`] trait and the Doob-transform kernel it feeds.
//!
//! Paper §4: the future validity of a locally valid token `y` after prefix
//! `x<t` is
//!
//! ```text
//! Φ_t(y | x<t) = Pr_{z∼p}[ x<t · y · z ∈ L(C) ]
//! ```
//!
//! (EOS is a terminal transition: after an accepting prefix, `Φ_t(EOS) = 1`).
//! The grammar-conditional kernel is the Doob h-transform with `h = Φ`:
//! `μ*_t(y) ∝ p_t(y) Φ_t(y)` on `A_t` ([`doob_kernel`]); local masking is the
//! degenerate `Φ̂ ≡ 1` (Def. 1, μ^proj). Every estimator returns the *vector*
//! `log Φ̂_t(·)` over the vocabulary — a scalar would be a no-op by shift
//! invariance (§5 "critical invariant", App. G).
//!
//! ## Conventions shared by every estimator
//!
//! * The constraint holds the generated prefix `x<t`; the model's context
//!   ends with the same tokens (it may start with a prompt). Estimators may
//!   move the model's context but restore it (same tokens) before returning.
//! * `logits` are the model's next-token logits `p_t` at that context.
//! * The result has one entry per vocabulary token: `-inf` outside `A_t`;
//!   for `y ∈ A_t` it is `log Φ̂_t(y) ∈ [-inf, 0]`, where `-inf` means "a dead
//!   end" (Φ̂ = 0), which exact estimators report for candidates with no
//!   valid completion. Never NaN.

use zapspec_core::{prob, Constraint, LanguageModel, TokenSet};

use crate::error::PhiError;

/// Costs accumulated by an estimator since construction (or [`reset`]),
/// for the paper's "Cost/pos" column (Tables 2, 6, 11).
///
/// [`reset`]: PhiEstimator::reset_cost
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PhiCost {
    /// Calls to [`PhiEstimator::log_phi`] (decoding positions scored).
    pub calls: u64,
    /// Extra model forward passes (`prefill`/`next_logits`) spent.
    pub forwards: u64,
    /// Monte Carlo rollouts started.
    pub rollouts: u64,
    /// Tokens generated inside rollouts.
    pub rollout_tokens: u64,
    /// Constraint operations (advance / fill_mask on forks).
    pub constraint_ops: u64,
}

impl PhiCost {
    /// Extra forwards per scored position (the paper's Cost/pos).
    pub fn forwards_per_call(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.forwards as f64 / self.calls as f64
        }
    }

    /// Component-wise sum.
    pub fn add(&self, o: &PhiCost) -> PhiCost {
        PhiCost {
            calls: self.calls + o.calls,
            forwards: self.forwards + o.forwards,
            rollouts: self.rollouts + o.rollouts,
            rollout_tokens: self.rollout_tokens + o.rollout_tokens,
            constraint_ops: self.constraint_ops + o.constraint_ops,
        }
    }
}

/// A future-validity estimator Φ̂_t (paper §5: Tiers 0–3).
pub trait PhiEstimator<C: Constraint, M: LanguageModel> {
    /// `log Φ̂_t(y)` for every token `y` of the vocabulary, given the prefix
    /// (already consumed by `constraint` and at the end of `model`'s
    /// context) and the current logits `p_t`. `-inf` outside the valid set
    /// `A_t` (the current mask of `constraint`) and for candidates estimated
    /// as dead ends; finite or `-inf`, never NaN, inside it.
    fn log_phi(
        &mut self,
        constraint: &C,
        model: &mut M,
        logits: &[f32],
    ) -> Result<Vec<f64>, PhiError>;

    /// A short name for tables ("Uniform", "OneStep-Cheap", "MC(k=8)", …).
    fn name(&self) -> String;

    /// Costs accumulated so far.
    fn cost(&self) -> PhiCost;

    /// Zeroes the cost counters.
    fn reset_cost(&mut self);
}

impl<C: Constraint, M: LanguageModel, E: PhiEstimator<C, M> + ?Sized> PhiEstimator<C, M>
    for Box<E>
{
    fn log_phi(
        &mut self,
        constraint: &C,
        model: &mut M,
        logits: &[f32],
    ) -> Result<Vec<f64>, PhiError> {
        (**self).log_phi(constraint, model, logits)
    }
    fn name(&self) -> String {
        (**self).name()
    }
    fn cost(&self) -> PhiCost {
        (**self).cost()
    }
    fn reset_cost(&mut self) {
        (**self).reset_cost()
    }
}

/// The valid set `A_t` of a constraint state (its mask), computed on a fork
/// so `constraint` stays untouched.
pub fn valid_set<C: Constraint>(constraint: &C) -> TokenSet {
    let mut f = constraint.fork();
    f.mask()
}

/// Checks that `logits`, the constraint and the model share one vocabulary.
pub fn check_vocab<C: Constraint, M: LanguageModel>(
    c: &C,
    m: &M,
    logits: &[f32],
) -> Result<usize, PhiError> {
    let v = c.vocab_size();
    if m.vocab_size() != v {
        return Err(PhiError::VocabMismatch {
            what: "model",
            got: m.vocab_size(),
            want: v,
        });
    }
    if logits.len() != v {
        return Err(PhiError::VocabMismatch {
            what: "logits",
            got: logits.len(),
            want: v,
        });
    }
    Ok(v)
}

/// The Doob-transform kernel (paper §4, the display after the definition
/// of Φ): `log μ̂_t(y) = log p_t(y) + log Φ̂_t(y) − log Σ_{y'∈A_t} p_t(y')Φ̂_t(y')`
/// for `y ∈ A_t`, `-inf` elsewhere. With Φ̂ = Φ this is μ*_t; with Φ̂ ≡ 1 it
/// is μ^proj_t (Def. 1). Computed in log space, so Φ̂ of 1e-300 is fine.
///
/// Errors with [`PhiError::EmptySupport`] when `Σ p_t Φ̂_t = 0` on `A_t`.
pub fn doob_kernel(logits: &[f32], mask: &TokenSet, log_phi: &[f64]) -> Result<Vec<f64>, PhiError> {
    if log_phi.len() != logits.len() {
        return Err(PhiError::VocabMismatch {
            what: "log_phi",
            got: log_phi.len(),
            want: logits.len(),
        });
    }
    let lp = prob::log_softmax(logits);
    let mut out = vec![f64::NEG_INFINITY; logits.len()];
    for y in mask.iter() {
        let i = y as usize;
        if i < out.len() {
            let v = lp[i] + log_phi[i];
            out[i] = if v.is_nan() { f64::NEG_INFINITY } else { v };
        }
    }
    prob::renormalize_log(&mut out).map_err(|_| PhiError::EmptySupport { position: 0 })?;
    Ok(out)
}

/// The FVO-Spec target (Prop. 6): the Doob kernel for the constraint's
/// current mask. Convenience for verifiers.
pub fn fvo_target<C: Constraint>(
    constraint: &C,
    logits: &[f32],
    log_phi: &[f64],
) -> Result<Vec<f64>, PhiError> {
    let mask = valid_set(constraint);
    doob_kernel(logits, &mask, log_phi).map_err(|e| match e {
        PhiError::EmptySupport { .. } => PhiError::EmptySupport {
            position: constraint.num_tokens(),
        },
        e => e,
    })
}

/// `log Φ̂ = 0` on `mask`, `-inf` elsewhere (Tier 0's vector).
pub fn uniform_log_phi(mask: &TokenSet, vocab: usize) -> Vec<f64> {
    let mut out = vec![f64::NEG_INFINITY; vocab];
    for y in mask.iter() {
        if (y as usize) < vocab {
            out[y as usize] = 0.0;
        }
    }
    out
}

/// `ln(x)` clamped into `[-inf, 0]`, NaN mapped to `-inf` (estimates are
/// probabilities; rounding can push sums a hair above 1).
#[inline]
pub(crate) fn ln_prob(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        f64::NEG_INFINITY
    } else if x >= 1.0 {
        0.0
    } else {
        x.ln()
    }
}

/// Clamps a log-probability into `[-inf, 0]`, NaN to `-inf`.
#[inline]
pub(crate) fn clamp_log(x: f64) -> f64 {
    if x.is_nan() {
        f64::NEG_INFINITY
    } else {
        x.min(0.0)
    }
}

/// `log Σ_{u∈set} p(u)` from log-probabilities.
pub fn log_mass(logp: &[f64], set: &TokenSet) -> f64 {
    let xs: Vec<f64> = set
        .iter()
        .filter_map(|u| logp.get(u as usize).copied())
        .collect();
    clamp_log(prob::logsumexp(&xs))
}
