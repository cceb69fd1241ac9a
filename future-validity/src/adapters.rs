//! Estimators built from other estimators.
//!
//! * [`WithModel`] owns a model copy and positions it at the query's prefix
//!   before calling the estimator inside, so an estimator that runs extra
//!   forwards (OneStep-True, Monte Carlo, exact enumeration) can be used
//!   where the caller has no model at the prefix — the speculative decoder,
//!   whose target sits at the end of the drafted block, and the prefix-tree
//!   laws, which pass a [`crate::NoModel`].
//! * [`Frozen`] memoises one estimate per prefix: a randomized estimator
//!   (Monte Carlo) then defines one fixed kernel, whose terminal law can be
//!   computed exactly and sampled by the decoder (the paper's "one
//!   randomized estimator draw", App. H.3).
//!
//! [`Metered`](crate::Metered), which counts an estimator's work, is in
//! [`crate::estimator`].

use std::collections::HashMap;

use zapspec_core::{Constraint, LanguageModel, TokenId};

use crate::estimator::{PhiCost, PhiEstimator, PhiQuery, PhiResult};

/// An estimator plus the model it queries: implements [`PhiEstimator`] for
/// any outer model type (the outer model is not touched).
///
/// A call moves `model` to the prompt ([`WithModel::with_prompt`], empty
/// by default) followed by the query's prefix with
/// [`LanguageModel::logits_for`] (reusing the longest common prefix of its
/// cache), then calls `estimator` with those logits in place of the
/// query's. The work reported is the estimator's plus that one forward.
/// [`PhiEstimator::log_phi_shifted`] keeps the default (`c_t = 0`), so the
/// values are exactly the inner estimator's [`PhiEstimator::log_phi_into`].
#[derive(Debug, Clone)]
pub struct WithModel<E, M> {
    /// The estimator called at each position.
    pub estimator: E,
    /// The model it runs on (positioned at the prompt and each query's prefix).
    pub model: M,
    /// Tokens the model conditions on before the generated prefix.
    prompt: Vec<TokenId>,
    /// `prompt ++ prefix` of the last query (reused buffer).
    ctx: Vec<TokenId>,
}

impl<E, M> WithModel<E, M> {
    /// Pairs `estimator` with its own `model`.
    pub fn new(estimator: E, model: M) -> Self {
        WithModel {
            estimator,
            model,
            prompt: Vec::new(),
            ctx: Vec::new(),
        }
    }

    /// Conditions the model on `prompt` before every query's prefix (the
    /// prompt a speculative decoder was given with its own `with_prompt`).
    pub fn with_prompt(mut self, prompt: &[TokenId]) -> Self {
        self.prompt = prompt.to_vec();
        self
    }
}

impl<C, M, N, E> PhiEstimator<C, N> for WithModel<E, M>
where
    C: Constraint,
    M: LanguageModel,
    N: LanguageModel,
    E: PhiEstimator<C, M>,
{
    fn name(&self) -> String {
        self.estimator.name()
    }
    fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, _: &mut N, out: &mut [f64]) -> PhiResult {
        self.ctx.clear();
        self.ctx.extend_from_slice(&self.prompt);
        self.ctx.extend_from_slice(q.prefix);
        let logits = self.model.logits_for(&self.ctx)?;
        // its own logits: an argmax under the caller's law is not one
        // under these, so no argmax shortcut
        let inner = PhiQuery {
            logits: &logits,
            argmax_only: false,
            ..*q
        };
        let mut cost = self.estimator.log_phi_into(&inner, &mut self.model, out)?;
        cost.forwards += 1;
        Ok(cost)
    }
}

/// Memoises `log Φ̂` per prefix: the first query of a prefix is answered by
/// the inner estimator, later ones from the table (`O(|A_t|)`, no work
/// reported). Runs no model of its own, so it is generic over whatever
/// model the inner estimator accepts.
#[derive(Debug, Clone)]
pub struct Frozen<E> {
    inner: E,
    table: HashMap<Vec<TokenId>, Vec<(TokenId, f64)>>,
}

impl<E> Frozen<E> {
    /// Wraps `inner` with an empty table.
    pub fn new(inner: E) -> Self {
        Frozen {
            inner,
            table: HashMap::new(),
        }
    }

    /// The estimator behind the table.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// Number of prefixes estimated so far.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// No prefix estimated yet.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The frozen estimates of one prefix, `(candidate, log Φ̂)`.
    pub fn get(&self, prefix: &[TokenId]) -> Option<&[(TokenId, f64)]> {
        self.table.get(prefix).map(|v| v.as_slice())
    }
}

impl<C, M, E> PhiEstimator<C, M> for Frozen<E>
where
    C: Constraint,
    M: LanguageModel,
    E: PhiEstimator<C, M>,
{
    fn name(&self) -> String {
        self.inner.name()
    }
    fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, model: &mut M, out: &mut [f64]) -> PhiResult {
        if let Some(v) = self.table.get(q.prefix) {
            for &(t, l) in v {
                if let Some(o) = out.get_mut(t as usize) {
                    *o = l;
                }
            }
            return Ok(PhiCost::default());
        }
        // memoised for any later caller: full estimates, no argmax shortcut
        let q = &q.with_argmax_only(false);
        let cost = self.inner.log_phi_into(q, model, out)?;
        let v: Vec<(TokenId, f64)> = q
            .mask
            .iter()
            .map(|y| (y, out.get(y as usize).copied().unwrap_or(f64::NAN)))
            .collect();
        self.table.insert(q.prefix.to_vec(), v);
        Ok(cost)
    }
}
