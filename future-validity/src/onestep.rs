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

/// `log Σ exp(l_i)` of f32 logits, in f64, for the full-vocabulary
/// normaliser of Def. 9 (the one O(|V|) pass of OneStep-Cheap).
///
/// The exponentials use [`fast_exp2_f32`] (relative error < 5·10⁻⁷, in
/// vectorisable f32 arithmetic) and are accumulated in f64 blocks, so the
/// returned log-normaliser is within ~5·10⁻⁷ (absolute) of the exact one —
/// far below OneStep's own approximation error — at a fraction of the
/// cost of |V| libm `exp` calls.
fn log_sum_exp_f32(logits: &[f32]) -> f64 {
    let m = logits.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    if !m.is_finite() {
        return m as f64;
    }
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    let mut total = 0.0f64;
    for chunk in logits.chunks(64) {
        let mut acc = [0.0f32; 8];
        let mut lanes = chunk.chunks_exact(8);
        for c8 in &mut lanes {
            for i in 0..8 {
                acc[i] += fast_exp2_f32((c8[i] - m) * LOG2E);
            }
        }
        for &l in lanes.remainder() {
            acc[0] += fast_exp2_f32((l - m) * LOG2E);
        }
        total += acc.iter().map(|&x| x as f64).sum::<f64>();
    }
    m as f64 + total.ln()
}

/// `2^y` for `y ≤ 0` in f32 (0 below −126, `NaN`/`-inf` inputs give 0):
/// split `y = n + f` with `n` the nearest integer, `f ∈ (−½, ½]`, a
/// degree-7 polynomial for `2^f` (relative error < 5·10⁻⁷), and the exponent bits
/// for `2^n`. Branch-free so LLVM vectorises the loop above.
#[inline(always)]
pub(crate) fn fast_exp2_f32(y: f32) -> f32 {
    let y = if y > -126.0 { y } else { -126.0 }; // also maps NaN/-inf to -126
    let n = (y - 0.5) as i32; // round-half-down for y ≤ 0: n ∈ [-126, 0]
    let f = y - n as f32; // (-0.5, 0.5]
                          // 2^f = e^(f ln 2), Taylor to degree 7 on |f ln 2| ≤ 0.35: truncation
                          // error < 3e-9, f32 rounding a few ulp.
    let x = f * std::f32::consts::LN_2;
    let p = 1.0
        + x * (1.0
            + x * (0.5
                + x * (1.0 / 6.0
                    + x * (1.0 / 24.0
                        + x * (1.0 / 120.0 + x * (1.0 / 720.0 + x * (1.0 / 5040.0)))))));
    let scale = f32::from_bits(((n + 127) as u32) << 23);
    let r = p * scale;
    if y <= -126.0 {
        0.0
    } else {
        r
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_exp2_is_accurate() {
        let mut worst = 0.0f64;
        for i in 0..=200_000 {
            let y = -(i as f32) * 125.0 / 200_000.0;
            let got = fast_exp2_f32(y) as f64;
            let want = (y as f64).exp2();
            worst = worst.max((got / want - 1.0).abs());
        }
        assert!(worst < 5e-7, "worst relative error {worst}");
        assert_eq!(fast_exp2_f32(-200.0), 0.0);
        assert_eq!(fast_exp2_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(fast_exp2_f32(0.0), 1.0);
    }

    #[test]
    fn log_sum_exp_matches_f64_reference() {
        for seed in 0..20u64 {
            let v: Vec<f32> = (0..5000u64)
                .map(|i| {
                    ((zapspec_core::toy::splitmix64(seed * 7919 + i) >> 11) as f64
                        / (1u64 << 53) as f64
                        * 60.0
                        - 40.0) as f32
                })
                .collect();
            let want = prob::logsumexp(&v.iter().map(|&x| x as f64).collect::<Vec<_>>());
            assert!((log_sum_exp_f32(&v) - want).abs() < 1e-6);
        }
        assert_eq!(log_sum_exp_f32(&[f32::NEG_INFINITY; 3]), f64::NEG_INFINITY);
        assert!((log_sum_exp_f32(&[0.0, f32::NEG_INFINITY]) - 0.0).abs() < 1e-7);
    }
}
