//! Exact terminal laws of a finite language against a Φ estimator: the
//! prefix tree itself ([`PrefixTree`]: enumeration, `μ*`, `μ^proj`, exact
//! Φ by backward DP) is `zapspec_phi::exact::tree`, re-exported here; this
//! module adds what needs the Φ interface — the terminal law of the
//! Φ̂-reweighted target ([`TreePhi::log_mu_phi`]) and exact Φ as a
//! [`PhiEstimator`] ([`TreePhi::exact_phi`], [`ExactPhi`]).
//!
//! This is the independent reference the tests and experiments compare
//! sampled laws against.

use std::collections::HashMap;

use zapspec_core::{Constraint, LanguageModel, TokenId};
pub use zapspec_phi::exact::tree::{Node, PrefixTree};
use zapspec_phi::{NoModel, PhiCost, PhiError, PhiEstimator, PhiQuery, PhiResult};

use crate::phi::target_log_law;
use crate::VerifyError;

/// The laws of a [`PrefixTree`] that need a [`PhiEstimator`] (import the trait
/// to call them as methods).
pub trait TreePhi<C: Constraint> {
    /// The terminal law of a sampler whose kernel at each prefix is the
    /// Φ̂-reweighted target `p_t·Φ̂_t/Z` (what FVO-Spec samples with `phi`).
    fn log_mu_phi<F: PhiEstimator<C, NoModel>>(&self, phi: &mut F)
        -> Result<Vec<f64>, VerifyError>;

    /// Exact per-candidate future validity `Φ_t(y)` at every prefix, as a
    /// [`PhiEstimator`] (the Tier-3 oracle of §5.5 for finite languages).
    fn exact_phi(&self) -> ExactPhi;
}

impl<C: Constraint> TreePhi<C> for PrefixTree<C> {
    fn log_mu_phi<F: PhiEstimator<C, NoModel>>(
        &self,
        phi: &mut F,
    ) -> Result<Vec<f64>, VerifyError> {
        let vocab = self.nodes()[0].logp.len();
        let mut no_model = NoModel::new(vocab);
        let mut buf = vec![f64::NAN; vocab];
        let mut kernels: Vec<Vec<f64>> = Vec::with_capacity(self.nodes().len());
        // the sampler's log mass of reaching each node (parents come first)
        let mut reach = vec![f64::NEG_INFINITY; self.nodes().len()];
        reach[0] = 0.0;
        for id in 0..self.nodes().len() {
            let n = &self.nodes()[id];
            buf.iter_mut().for_each(|v| *v = f64::NAN);
            let prefix = self.tokens(id);
            let q = PhiQuery::new(&prefix, self.state(id), &n.mask, &n.logits);
            phi.log_phi_into(&q, &mut no_model, &mut buf)
                .map_err(|source| VerifyError::Phi {
                    position: n.depth,
                    source,
                })?;
            if let Some(y) = n.mask.iter().find(|&y| buf[y as usize].is_nan()) {
                return Err(VerifyError::Phi {
                    position: n.depth,
                    source: PhiError::MissingEstimate { token: y },
                });
            }
            // zero mass on every valid token: fine where the sampler never
            // arrives (below a zero-probability token), a dead end elsewhere
            let k = match target_log_law(&n.logp, &n.mask, Some(&buf)) {
                Some(k) => k,
                None if reach[id] == f64::NEG_INFINITY => vec![f64::NEG_INFINITY; vocab],
                None => {
                    return Err(VerifyError::EmptySupport {
                        position: n.depth,
                        what: "Φ-reweighted target",
                    })
                }
            };
            for &(t, c) in &n.children {
                reach[c] = reach[id] + k[t as usize];
            }
            kernels.push(k);
        }
        self.log_law_by(|_, id| Some(kernels[id].clone()))
            .ok_or(VerifyError::EmptySupport {
                position: 0,
                what: "Φ-reweighted target",
            })
    }

    fn exact_phi(&self) -> ExactPhi {
        let mut table = HashMap::with_capacity(self.nodes().len());
        for id in 0..self.nodes().len() {
            table.insert(self.tokens(id), self.exact_candidates(id));
        }
        ExactPhi { table }
    }
}

/// Exact Φ at every prefix of a finite language (from
/// [`TreePhi::exact_phi`]). Asking about a prefix outside the language is
/// an error.
#[derive(Debug, Clone, Default)]
pub struct ExactPhi {
    table: HashMap<Vec<TokenId>, Vec<(TokenId, f64)>>,
}

/// Table look-ups (`O(|A_t|)`), no model and no work reported; a prefix
/// outside the enumerated language is [`PhiError::Unsupported`].
impl<C: Constraint, M: LanguageModel> PhiEstimator<C, M> for ExactPhi {
    fn name(&self) -> String {
        "Exact".into()
    }
    fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, _: &mut M, out: &mut [f64]) -> PhiResult {
        let cands = self.table.get(q.prefix).ok_or_else(|| {
            PhiError::Unsupported(format!(
                "prefix {:?} is not in the enumerated language",
                q.prefix
            ))
        })?;
        for &(t, l) in cands {
            if q.mask.contains(t) {
                if let Some(o) = out.get_mut(t as usize) {
                    *o = l;
                }
            }
        }
        Ok(PhiCost::default())
    }
}
