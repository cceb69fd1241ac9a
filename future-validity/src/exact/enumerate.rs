//! Exact Φ for any constraint whose language below the current prefix is
//! finite, under any [`LanguageModel`]: backward DP over the tree of valid
//! prefixes (paper §5.5 and App. G, "The DP oracle enumerates all valid
//! prefixes in decreasing length order, computing Φ_t(y) as the
//! probability-weighted sum over valid extensions").
//!
//! The recursion is the identity of App. E:
//!
//! ```text
//! Φ(x) = Σ_{u ∈ A(x), u ≠ EOS} p(u | x) · Φ(x u)  +  p(EOS | x) · 1[x ∈ L]
//! ```
//!
//! and the per-candidate value is `Φ_t(y) = Φ(x<t y)` (`Φ_t(EOS) = 1`).
//! Everything is in log space. Results are memoised by model context, so a
//! decoding run pays one forward per valid prefix once ("precomputes Φ
//! offline", §6.5) and table look-ups afterwards.

use std::collections::HashMap;

use zapspec_core::{prob, Constraint, LanguageModel, TokenId};

pub use super::tree::ExactConfig;
use super::tree::{expand, log_phi_of};
use crate::error::PhiError;
use crate::estimator::{
    check_query, check_vocab, copy_on_mask, valid_set, PhiCost, PhiEstimator, PhiQuery, PhiResult,
};

/// Tier 3 oracle over the prefix tree (works for `DyckConstraint`,
/// `TrieConstraint`, or any finite-language [`Constraint`]).
///
/// The memo is keyed by the model's context only: use one instance per
/// (language, model) pair, or call [`Exact::clear`] when either changes.
#[derive(Debug, Clone, Default)]
pub struct Exact {
    config: ExactConfig,
    /// `log Φ(context)`, keyed by the model's full context.
    memo: HashMap<Vec<TokenId>, f64>,
    /// Work of the call in progress (returned and zeroed at its end).
    work: PhiCost,
    visited: usize,
}

impl Exact {
    /// An estimator with an empty memo.
    pub fn new(config: ExactConfig) -> Self {
        Exact {
            config,
            ..Default::default()
        }
    }

    /// Forgets memoised values (call when the model or prompt changes).
    pub fn clear(&mut self) {
        self.memo.clear();
    }

    /// Number of memoised prefixes.
    pub fn memo_len(&self) -> usize {
        self.memo.len()
    }

    /// `log Φ(x)` of the current prefix itself: the log-probability that
    /// the model, continuing from here, ends in the language. At the empty
    /// prefix this is `log Z_C` (Def. 2).
    pub fn log_phi_prefix<C: Constraint, M: LanguageModel>(
        &mut self,
        constraint: &C,
        model: &mut M,
    ) -> Result<f64, PhiError> {
        if let Some(&v) = self.memo.get(model.context()) {
            return Ok(v);
        }
        let logits = model.next_logits()?;
        self.work.forwards += 1;
        let mut c = constraint.fork();
        self.visited = 0;
        let v = self.node(&mut c, model, &logits, 0)?;
        self.memo.insert(model.context().to_vec(), v);
        Ok(v)
    }

    /// Per-candidate values at the current prefix, given its logits.
    fn candidates<C: Constraint, M: LanguageModel>(
        &mut self,
        constraint: &C,
        model: &mut M,
        logits: &[f32],
    ) -> Result<(Vec<f64>, f64), PhiError> {
        let v = constraint.vocab_size();
        let eos = constraint.eos();
        let mask = valid_set(constraint);
        let lp = prob::log_softmax(logits);
        let mut out = vec![f64::NEG_INFINITY; v];
        let mut c = constraint.fork();
        self.visited = 0;
        for y in mask.iter() {
            out[y as usize] = if y == eos {
                0.0
            } else {
                self.child(&mut c, model, y, 0)?
            };
        }
        let here = log_phi_of(&lp, &mask, eos, |u| Ok(out[u as usize]))?;
        Ok((out, here))
    }

    /// `log Φ(x·u)`: advance, look up or compute, restore.
    fn child<C: Constraint, M: LanguageModel>(
        &mut self,
        c: &mut C,
        m: &mut M,
        u: TokenId,
        depth: usize,
    ) -> Result<f64, PhiError> {
        let base = m.context().len();
        let mut key = Vec::with_capacity(base + 1);
        key.extend_from_slice(m.context());
        key.push(u);
        if let Some(&v) = self.memo.get(&key) {
            return Ok(v);
        }
        if depth >= self.config.max_depth {
            return Err(PhiError::TooDeep {
                limit: self.config.max_depth,
            });
        }
        c.advance(u)?;
        self.work.constraint_ops += 1;
        let rows = m.prefill(&[u]);
        self.work.forwards += 1;
        let r = match rows {
            Ok(rows) => {
                let row: Vec<f32> = rows.row(0).to_vec();
                self.node(c, m, &row, depth + 1)
            }
            Err(e) => Err(e.into()),
        };
        m.truncate(base);
        let _ = c.rollback(1);
        let v = r?;
        self.memo.insert(key, v);
        Ok(v)
    }

    /// `log Φ(x)` for the prefix the constraint and model are at, given its
    /// next-token logits.
    fn node<C: Constraint, M: LanguageModel>(
        &mut self,
        c: &mut C,
        m: &mut M,
        logits: &[f32],
        depth: usize,
    ) -> Result<f64, PhiError> {
        self.visited += 1;
        if self.visited > self.config.max_prefixes {
            return Err(PhiError::TooLarge {
                limit: self.config.max_prefixes,
                depth,
            });
        }
        let eos = c.eos();
        let (mask, lp) = expand(c, logits, "logits")?;
        self.work.constraint_ops += 1;
        log_phi_of(&lp, &mask, eos, |u| self.child(c, m, u, depth))
    }
}

/// Reports the forwards and constraint operations of the enumeration
/// below the prefix (memoised prefixes cost nothing).
impl<C: Constraint, M: LanguageModel> PhiEstimator<C, M> for Exact {
    fn name(&self) -> String {
        "Exact".into()
    }
    fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, model: &mut M, out: &mut [f64]) -> PhiResult {
        check_vocab(q.constraint, model, q.logits)?;
        check_query(q, out)?;
        self.work = PhiCost::default();
        let r = self.candidates(q.constraint, model, q.logits);
        let work = std::mem::take(&mut self.work);
        let (full, here) = r?;
        self.memo.entry(model.context().to_vec()).or_insert(here);
        copy_on_mask(&full, q.mask, out);
        Ok(work)
    }
}
