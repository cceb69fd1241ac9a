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

use crate::error::PhiError;
use crate::estimator::{check_vocab, clamp_log, valid_set, PhiCost, PhiEstimator};

/// Limits of the enumeration.
#[derive(Debug, Clone, Copy)]
pub struct ExactConfig {
    /// Most prefixes one enumeration may visit before giving up with
    /// [`PhiError::TooLarge`].
    pub max_prefixes: usize,
    /// Longest suffix explored below the starting prefix.
    pub max_depth: usize,
}

impl Default for ExactConfig {
    fn default() -> Self {
        ExactConfig {
            max_prefixes: 2_000_000,
            max_depth: 4096,
        }
    }
}

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
    cost: PhiCost,
    visited: usize,
}

impl Exact {
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
        self.cost.forwards += 1;
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
        let mut terms = Vec::with_capacity(mask.count());
        self.visited = 0;
        for y in mask.iter() {
            let val = if y == eos {
                0.0
            } else {
                self.child(&mut c, model, y, 0)?
            };
            out[y as usize] = val;
            terms.push(lp[y as usize] + val);
        }
        Ok((out, clamp_log(prob::logsumexp(&terms))))
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
        self.cost.constraint_ops += 1;
        let rows = m.prefill(&[u]);
        self.cost.forwards += 1;
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
        if logits.len() != c.vocab_size() {
            return Err(PhiError::VocabMismatch {
                what: "logits",
                got: logits.len(),
                want: c.vocab_size(),
            });
        }
        let eos = c.eos();
        let mask = c.mask();
        self.cost.constraint_ops += 1;
        let lp = prob::log_softmax(logits);
        let mut terms = Vec::with_capacity(mask.count());
        for u in mask.iter() {
            if u == eos {
                terms.push(lp[u as usize]);
            } else if lp[u as usize] > f64::NEG_INFINITY {
                let v = self.child(c, m, u, depth)?;
                terms.push(lp[u as usize] + v);
            }
        }
        Ok(clamp_log(prob::logsumexp(&terms)))
    }
}

impl<C: Constraint, M: LanguageModel> PhiEstimator<C, M> for Exact {
    fn log_phi(
        &mut self,
        constraint: &C,
        model: &mut M,
        logits: &[f32],
    ) -> Result<Vec<f64>, PhiError> {
        check_vocab(constraint, model, logits)?;
        self.cost.calls += 1;
        let (out, here) = self.candidates(constraint, model, logits)?;
        self.memo.entry(model.context().to_vec()).or_insert(here);
        Ok(out)
    }
    fn name(&self) -> String {
        "Exact".into()
    }
    fn cost(&self) -> PhiCost {
        self.cost
    }
    fn reset_cost(&mut self) {
        self.cost = PhiCost::default();
    }
}

impl Exact {
    /// Costs accumulated so far (same as [`PhiEstimator::cost`], callable
    /// without naming the constraint and model types).
    pub fn cost(&self) -> PhiCost {
        self.cost
    }
}
