//! Tier 0 (paper §5.1): `Φ̂ ≡ 1` on `A_t`. The Doob kernel then equals the
//! locally projected kernel μ^proj_t (Def. 1), the status quo of
//! XGrammar/Outlines and of every LMS decoder (Prop. 3); FVO-Spec with it is
//! the Leviathan/LMS verifier. Zero cost (`O(|A_t|)` writes); its additive
//! error is `δ = 1 − Φ_min`.

use zapspec_core::{Constraint, LanguageModel};

use crate::estimator::{
    check_compact, check_query, PhiCost, PhiEstimator, PhiQuery, PhiResult, ValidList,
};

/// Tier 0: the constant estimator (a no-op by shift invariance). Runs no
/// model, so it works with any `M`, [`crate::NoModel`] included.
#[derive(Debug, Clone, Copy, Default)]
pub struct Uniform;

impl Uniform {
    /// The estimator.
    pub fn new() -> Self {
        Uniform
    }
}

impl<C: Constraint, M: LanguageModel> PhiEstimator<C, M> for Uniform {
    fn name(&self) -> String {
        "Uniform".into()
    }
    fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, _: &mut M, out: &mut [f64]) -> PhiResult {
        check_query(q, out)?;
        for y in q.mask.iter() {
            if let Some(o) = out.get_mut(y as usize) {
                *o = 0.0;
            }
        }
        Ok(PhiCost::default())
    }
    fn log_phi_shifted_compact(
        &mut self,
        q: &PhiQuery<'_, C>,
        _: &mut M,
        valid: ValidList<'_>,
        out: &mut [f64],
    ) -> Option<PhiResult> {
        Some(check_compact(q, valid, out).map(|()| {
            out.fill(0.0);
            PhiCost::default()
        }))
    }
}
