//! The `future-validity` crate's estimators as [`PhiSource`]s.
//!
//! [`EstimatorPhi`] owns a copy of the target model (the estimator's
//! `PhiEstimator::log_phi` wants the model positioned at the prefix and may
//! run extra forwards on it — OneStep-True, Monte Carlo), so the decoder's
//! own target cache is never disturbed. [`FrozenPhi`] memoises one estimate
//! per prefix: a randomized estimator (Monte Carlo) then defines one fixed
//! kernel, whose terminal law [`crate::PrefixTree::log_mu_phi`] computes
//! exactly and the loop samples (the paper's "one randomized estimator
//! draw", App. H.3).

use std::collections::HashMap;

use zapspec_core::{Constraint, LanguageModel, TokenId, TokenSet};
use zapspec_phi::{OneStepCheap, PhiCost, PhiEstimator};

use crate::phi::PhiSource;

/// A `zapspec_phi::PhiEstimator` plus the model it queries.
pub struct EstimatorPhi<E, M> {
    pub estimator: E,
    pub model: M,
}

impl<E, M> EstimatorPhi<E, M> {
    pub fn new(estimator: E, model: M) -> Self {
        EstimatorPhi { estimator, model }
    }
}

impl<C, M, E> PhiSource<C> for EstimatorPhi<E, M>
where
    C: Constraint,
    M: LanguageModel,
    E: PhiEstimator<C, M>,
{
    fn name(&self) -> String {
        self.estimator.name()
    }
    fn log_phi(
        &mut self,
        prefix: &[TokenId],
        constraint: &C,
        mask: &TokenSet,
        _logits: &[f32],
        out: &mut [f64],
    ) -> Result<(), String> {
        let logits = self.model.logits_for(prefix).map_err(|e| e.to_string())?;
        let v = self
            .estimator
            .log_phi(constraint, &mut self.model, &logits)
            .map_err(|e| e.to_string())?;
        for y in mask.iter() {
            out[y as usize] = v.get(y as usize).copied().unwrap_or(f64::NEG_INFINITY);
        }
        Ok(())
    }
}

impl<E, M> EstimatorPhi<E, M> {
    /// The estimator's accumulated cost.
    pub fn cost<C: Constraint>(&self) -> PhiCost
    where
        M: LanguageModel,
        E: PhiEstimator<C, M>,
    {
        self.estimator.cost()
    }
}

/// OneStep-Cheap (Def. 9) on the verifier's own logits: the decoder's
/// target row `p_t` is exactly the `p_t` that eq. (1) sums, so no model
/// copy, no extra forward and no `|V|`-sized result — the values are
/// computed on `A_t` ([`OneStepCheap::log_phi_sparse`]) and written into
/// the mask's entries of the decoder's buffer. [`EstimatorPhi`] with a
/// [`OneStepCheap`] gives the same numbers but re-runs its model to get
/// `p_t` (one forward per scored position).
#[derive(Debug, Clone, Default)]
pub struct OneStepCheapPhi {
    pub estimator: OneStepCheap,
    ids: Vec<TokenId>,
    vals: Vec<f64>,
}

impl OneStepCheapPhi {
    pub fn new() -> Self {
        Self::default()
    }
    /// The estimator's accumulated cost (calls, constraint operations).
    pub fn cost(&self) -> PhiCost {
        self.estimator.cost()
    }
}

impl<C: Constraint> PhiSource<C> for OneStepCheapPhi {
    fn name(&self) -> String {
        "OneStep-Cheap".into()
    }
    fn log_phi(
        &mut self,
        _prefix: &[TokenId],
        constraint: &C,
        mask: &TokenSet,
        logits: &[f32],
        out: &mut [f64],
    ) -> Result<(), String> {
        self.ids.clear();
        self.ids.extend(mask.iter());
        self.estimator
            .log_phi_sparse(constraint, &self.ids, logits, &mut self.vals)
            .map_err(|e| e.to_string())?;
        for (&y, &l) in self.ids.iter().zip(&self.vals) {
            if let Some(o) = out.get_mut(y as usize) {
                *o = l;
            }
        }
        Ok(())
    }
    /// Skips the `O(|V|)` log-normaliser of `p_t` (unless EOS is a
    /// candidate beside others): [`OneStepCheap::log_phi_into_shifted`].
    fn log_phi_shifted(
        &mut self,
        _prefix: &[TokenId],
        constraint: &C,
        mask: &TokenSet,
        logits: &[f32],
        out: &mut [f64],
    ) -> Result<(), String> {
        self.estimator
            .log_phi_into_shifted(constraint, mask, logits, out)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// Memoises `log Φ̂` per prefix: the first query of a prefix is answered by
/// the inner source, later ones from the table.
pub struct FrozenPhi<F> {
    inner: F,
    table: HashMap<Vec<TokenId>, Vec<(TokenId, f64)>>,
}

impl<F> FrozenPhi<F> {
    pub fn new(inner: F) -> Self {
        FrozenPhi {
            inner,
            table: HashMap::new(),
        }
    }
    pub fn inner(&self) -> &F {
        &self.inner
    }
    /// Number of prefixes estimated so far.
    pub fn len(&self) -> usize {
        self.table.len()
    }
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
    /// The frozen estimates of one prefix.
    pub fn get(&self, prefix: &[TokenId]) -> Option<&[(TokenId, f64)]> {
        self.table.get(prefix).map(|v| v.as_slice())
    }
}

impl<C: Constraint, F: PhiSource<C>> PhiSource<C> for FrozenPhi<F> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn log_phi(
        &mut self,
        prefix: &[TokenId],
        constraint: &C,
        mask: &TokenSet,
        logits: &[f32],
        out: &mut [f64],
    ) -> Result<(), String> {
        if let Some(v) = self.table.get(prefix) {
            for &(t, l) in v {
                out[t as usize] = l;
            }
            return Ok(());
        }
        self.inner.log_phi(prefix, constraint, mask, logits, out)?;
        let v: Vec<(TokenId, f64)> = mask.iter().map(|y| (y, out[y as usize])).collect();
        self.table.insert(prefix.to_vec(), v);
        Ok(())
    }
}
