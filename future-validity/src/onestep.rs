//! Tier 1 (paper §5.2): one-step grammar look-ahead.
//!
//! * [`OneStepCheap`] — Def. 9, eq. (1): `Φ̂¹ˢ_t(y) = Σ_{u∈A_{t+1}(x<t y)} p_t(u)`,
//!   using the *current* logits `p_t` as a proxy for `p(· | x<t y)` (the
//!   context-independence approximation) and a forked constraint for the
//!   valid set after `y`. Zero neural forwards.
//! * [`OneStepTrue`] — the idealised estimator of Prop. 10:
//!   `Φ̂ᵗʳᵘᵉ_t(y) = Σ_{u∈A_{t+1}(x<t y)} p(u | x<t y)`, one extra forward per
//!   non-EOS candidate. It always over-estimates Φ (eq. (2), App. E).
//!
//! EOS: a candidate EOS is in `A_t` only when `x<t` is a complete member, and
//! choosing it ends the string validly, so `Φ_t(EOS) = 1` exactly (§3.1,
//! "treating EOS as a valid terminal transition"); both estimators return
//! `log Φ̂ = 0` for it. A non-EOS candidate whose look-ahead set is empty is
//! a dead end: `log Φ̂ = -inf`.

use zapspec_core::{prob, Constraint, LanguageModel, TokenSet};

use crate::error::PhiError;
use crate::estimator::{check_vocab, log_mass, valid_set, PhiCost, PhiEstimator};

/// Tier 1a: Def. 9 with the current logits (no extra forward).
#[derive(Debug, Clone, Default)]
pub struct OneStepCheap {
    cost: PhiCost,
}

impl OneStepCheap {
    pub fn new() -> Self {
        Self::default()
    }
}

/// Shared loop: for every candidate `y ∈ A_t`, fork the constraint, advance
/// by `y`, and score the next valid set with `score(y, next_mask)`.
fn for_each_candidate<C: Constraint>(
    constraint: &C,
    cost: &mut PhiCost,
    mut score: impl FnMut(zapspec_core::TokenId, &TokenSet) -> Result<f64, PhiError>,
) -> Result<Vec<f64>, PhiError> {
    let v = constraint.vocab_size();
    let eos = constraint.eos();
    let mask = valid_set(constraint);
    let mut out = vec![f64::NEG_INFINITY; v];
    let mut fork = constraint.fork();
    let mut next = TokenSet::new(v);
    for y in mask.iter() {
        if y == eos {
            out[y as usize] = 0.0;
            continue;
        }
        fork.advance(y)?;
        fork.fill_mask(&mut next);
        cost.constraint_ops += 2;
        let r = score(y, &next);
        // Rollback cannot fail: we just advanced one token.
        let _ = fork.rollback(1);
        out[y as usize] = r?;
    }
    Ok(out)
}

impl<C: Constraint, M: LanguageModel> PhiEstimator<C, M> for OneStepCheap {
    fn log_phi(
        &mut self,
        constraint: &C,
        model: &mut M,
        logits: &[f32],
    ) -> Result<Vec<f64>, PhiError> {
        check_vocab(constraint, model, logits)?;
        self.cost.calls += 1;
        // log Z of the logits once; per candidate only the members of the
        // look-ahead set are touched (no |V|-sized allocation).
        let lse = log_sum_exp_f32(logits);
        for_each_candidate(constraint, &mut self.cost, |_, next| {
            Ok(log_mass_logits(logits, lse, next))
        })
    }
    fn name(&self) -> String {
        "OneStep-Cheap".into()
    }
    fn cost(&self) -> PhiCost {
        self.cost
    }
    fn reset_cost(&mut self) {
        self.cost = PhiCost::default();
    }
}

/// `log Σ exp(l_i)` of f32 logits, in f64.
fn log_sum_exp_f32(logits: &[f32]) -> f64 {
    let m = logits.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)) as f64;
    if !m.is_finite() {
        return m;
    }
    m + logits
        .iter()
        .map(|&l| (l as f64 - m).exp())
        .sum::<f64>()
        .ln()
}

/// `log Σ_{u∈set} softmax(logits)_u` given `lse = log Σ exp(logits)`.
fn log_mass_logits(logits: &[f32], lse: f64, set: &TokenSet) -> f64 {
    let mut m = f64::NEG_INFINITY;
    for u in set.iter() {
        if let Some(&l) = logits.get(u as usize) {
            m = m.max(l as f64);
        }
    }
    if m == f64::NEG_INFINITY {
        return m;
    }
    let s: f64 = set
        .iter()
        .filter_map(|u| logits.get(u as usize))
        .map(|&l| (l as f64 - m).exp())
        .sum();
    crate::estimator::clamp_log(m + s.ln() - lse)
}

/// Tier 1b: the true one-step estimator (Prop. 10), one forward per
/// non-EOS candidate.
#[derive(Debug, Clone, Default)]
pub struct OneStepTrue {
    cost: PhiCost,
}

impl OneStepTrue {
    pub fn new() -> Self {
        Self::default()
    }
}

impl<C: Constraint, M: LanguageModel> PhiEstimator<C, M> for OneStepTrue {
    fn log_phi(
        &mut self,
        constraint: &C,
        model: &mut M,
        logits: &[f32],
    ) -> Result<Vec<f64>, PhiError> {
        check_vocab(constraint, model, logits)?;
        self.cost.calls += 1;
        let base = model.context().len();
        let mut forwards = 0u64;
        let r = for_each_candidate(constraint, &mut self.cost, |y, next| {
            forwards += 1;
            let rows = model.prefill(&[y]);
            let res = rows.map(|rows| {
                let row: Vec<f32> = rows.row(0).to_vec();
                log_mass(&prob::log_softmax(&row), next)
            });
            model.truncate(base);
            Ok(res?)
        });
        self.cost.forwards += forwards;
        r
    }
    fn name(&self) -> String {
        "OneStep-True".into()
    }
    fn cost(&self) -> PhiCost {
        self.cost
    }
    fn reset_cost(&mut self) {
        self.cost = PhiCost::default();
    }
}

impl OneStepCheap {
    /// Costs accumulated so far (same as [`PhiEstimator::cost`], callable
    /// without naming the constraint and model types).
    pub fn cost(&self) -> PhiCost {
        self.cost
    }
}

impl OneStepTrue {
    /// Costs accumulated so far (same as [`PhiEstimator::cost`], callable
    /// without naming the constraint and model types).
    pub fn cost(&self) -> PhiCost {
        self.cost
    }
}
