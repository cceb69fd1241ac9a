//! Tier 0 (paper §5.1): `Φ̂ ≡ 1` on `A_t`. The Doob kernel then equals the
//! locally projected kernel μ^proj_t (Def. 1), the status quo of
//! XGrammar/Outlines and of every LMS decoder (Prop. 3). Zero cost; its
//! additive error is `δ = 1 − Φ_min`.

use zapspec_core::{Constraint, LanguageModel};

use crate::error::PhiError;
use crate::estimator::{check_vocab, uniform_log_phi, valid_set, PhiCost, PhiEstimator};

/// Tier 0: the constant estimator (a no-op by shift invariance).
#[derive(Debug, Clone, Default)]
pub struct Uniform {
    cost: PhiCost,
}

impl Uniform {
    pub fn new() -> Self {
        Self::default()
    }
}

impl<C: Constraint, M: LanguageModel> PhiEstimator<C, M> for Uniform {
    fn log_phi(
        &mut self,
        constraint: &C,
        model: &mut M,
        logits: &[f32],
    ) -> Result<Vec<f64>, PhiError> {
        let v = check_vocab(constraint, model, logits)?;
        self.cost.calls += 1;
        Ok(uniform_log_phi(&valid_set(constraint), v))
    }
    fn name(&self) -> String {
        "Uniform".into()
    }
    fn cost(&self) -> PhiCost {
        self.cost
    }
    fn reset_cost(&mut self) {
        self.cost = PhiCost::default();
    }
}

impl Uniform {
    /// Costs accumulated so far (same as [`PhiEstimator::cost`], callable
    /// without naming the constraint and model types).
    pub fn cost(&self) -> PhiCost {
        self.cost
    }
}
