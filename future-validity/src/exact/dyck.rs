//! Exact Φ for bounded Dyck languages `D_{d,L}` under finite-state (Markov)
//! models: backward DP over `(stack, length, model state)` (paper §5.5,
//! "Dyck D_{d,L}: backward DP over all valid prefixes up to depth d and
//! length L. Cost is linear in the enumerated prefix graph").
//!
//! For a general [`LanguageModel`] the state is the whole prefix — use
//! [`Exact`](crate::Exact), the DP over the prefix tree. When the model's
//! next-token law only depends on a finite state (a bigram LM: the last
//! token), prefixes with the same stack, length and model state share Φ, so
//! the table collapses: with one bracket kind the stack is the depth, and
//! `D_{3,16}` under a bigram LM has at most 4·17·4 states.
//!
//! The transitions are those of [`DyckConstraint`]: an opening bracket is
//! valid when `depth < d` and the string can still be closed within `L`
//! (`len + depth + 2 ≤ L`); the matching closing bracket when the stack is
//! non-empty; EOS when it is empty.

use std::collections::HashMap;
use std::hash::Hash;

use crate::lang::{DyckConstraint, DyckSpec};
use zapspec_core::{Constraint, LanguageModel, TokenId};

use super::regular::FiniteStateLm;
use crate::error::PhiError;
use crate::estimator::{
    check_query, check_vocab, clamp_log, copy_on_mask, PhiCost, PhiEstimator, PhiQuery, PhiResult,
};

type Key<S> = (Vec<u16>, usize, S);

/// Memoised `log Φ(stack, len, s)` for one Dyck spec and one model.
#[derive(Debug, Clone)]
pub struct DyckMarkovDp<S: Clone + Eq + Hash> {
    spec: DyckSpec,
    memo: HashMap<Key<S>, f64>,
}

impl<S: Clone + Eq + Hash> DyckMarkovDp<S> {
    /// An empty memo for `spec`.
    pub fn new(spec: DyckSpec) -> Self {
        DyckMarkovDp {
            spec,
            memo: HashMap::new(),
        }
    }

    /// Number of memoised states.
    pub fn num_states(&self) -> usize {
        self.memo.len()
    }

    fn can_open(&self, depth: usize, len: usize) -> bool {
        depth < self.spec.max_depth && len + depth + 2 <= self.spec.max_len
    }

    /// `log Φ` of the prefix with this stack and length, model in state `s`.
    pub fn log_phi<L: FiniteStateLm<State = S>>(
        &mut self,
        lm: &L,
        stack: &mut Vec<u16>,
        len: usize,
        s: &S,
    ) -> Result<f64, PhiError> {
        let key = (stack.clone(), len, s.clone());
        if let Some(&v) = self.memo.get(&key) {
            return Ok(v);
        }
        let lp = lm.state_log_probs(s);
        let v = self.spec.vocab_size();
        if lp.len() != v {
            return Err(PhiError::VocabMismatch {
                what: "finite-state LM",
                got: lp.len(),
                want: v,
            });
        }
        let mut terms = Vec::new();
        if stack.is_empty() {
            terms.push(lp[self.spec.eos() as usize]);
        }
        if self.can_open(stack.len(), len) {
            for k in 0..self.spec.kinds {
                let t = self.spec.open(k);
                if lp[t as usize] > f64::NEG_INFINITY {
                    stack.push(k as u16);
                    let r = self.log_phi(lm, stack, len + 1, &lm.next_state(s, t));
                    stack.pop();
                    terms.push(lp[t as usize] + r?);
                }
            }
        }
        if let Some(&k) = stack.last() {
            let t = self.spec.close(k as usize);
            if lp[t as usize] > f64::NEG_INFINITY {
                stack.pop();
                let r = self.log_phi(lm, stack, len + 1, &lm.next_state(s, t));
                stack.push(k);
                terms.push(lp[t as usize] + r?);
            }
        }
        let out = clamp_log(zapspec_core::prob::logsumexp(&terms));
        self.memo.insert(key, out);
        Ok(out)
    }
}

/// Tier 3 oracle for [`DyckConstraint`] under a finite-state model: the
/// stack is recovered by replaying the constraint's tokens (the tail of the
/// model's context), then each candidate is one memoised DP query.
#[derive(Debug, Clone)]
pub struct ExactDyckMarkov<S: Clone + Eq + Hash> {
    dp: Option<DyckMarkovDp<S>>,
}

impl<S: Clone + Eq + Hash> Default for ExactDyckMarkov<S> {
    fn default() -> Self {
        ExactDyckMarkov { dp: None }
    }
}

impl<S: Clone + Eq + Hash> ExactDyckMarkov<S> {
    /// An estimator whose DP is set up on first use.
    pub fn new() -> Self {
        Self::default()
    }
    /// The memoised DP, once set up.
    pub fn dp(&self) -> Option<&DyckMarkovDp<S>> {
        self.dp.as_ref()
    }
}

/// Replays Dyck tokens into a stack.
fn replay(spec: DyckSpec, toks: &[TokenId]) -> Result<Vec<u16>, PhiError> {
    let mut st = Vec::new();
    for &t in toks {
        let ti = t as usize;
        if ti < spec.kinds {
            st.push(ti as u16);
        } else if ti < 2 * spec.kinds {
            if st.pop() != Some((ti - spec.kinds) as u16) {
                return Err(PhiError::Unsupported(
                    "model context does not replay to the constraint's stack".into(),
                ));
            }
        } else {
            return Err(PhiError::Unsupported(
                "EOS inside the constraint's prefix".into(),
            ));
        }
    }
    Ok(st)
}

/// Uses the model only through [`FiniteStateLm`] (no forwards); reports no
/// work.
impl<S, M> PhiEstimator<DyckConstraint, M> for ExactDyckMarkov<S>
where
    S: Clone + Eq + Hash,
    M: LanguageModel + FiniteStateLm<State = S>,
{
    fn name(&self) -> String {
        "Exact-DyckDP".into()
    }
    fn log_phi_into(
        &mut self,
        q: &PhiQuery<'_, DyckConstraint>,
        model: &mut M,
        out: &mut [f64],
    ) -> PhiResult {
        check_query(q, out)?;
        let full = self.full(q.constraint, model, q.logits)?;
        copy_on_mask(&full, q.mask, out);
        Ok(PhiCost::default())
    }
}

impl<S: Clone + Eq + Hash> ExactDyckMarkov<S> {
    /// `log Φ` of every candidate as a `|V|` vector (`-inf` elsewhere).
    fn full<M: LanguageModel + FiniteStateLm<State = S>>(
        &mut self,
        constraint: &DyckConstraint,
        model: &mut M,
        logits: &[f32],
    ) -> Result<Vec<f64>, PhiError> {
        let v = check_vocab(constraint, model, logits)?;
        let spec = constraint.spec();
        let mut out = vec![f64::NEG_INFINITY; v];
        if constraint.is_finished() {
            return Ok(out);
        }
        if self.dp.as_ref().is_none_or(|d| d.spec != spec) {
            self.dp = Some(DyckMarkovDp::new(spec));
        }
        let ctx = model.context().to_vec();
        let n = constraint.num_tokens();
        if n > ctx.len() {
            return Err(PhiError::Unsupported(
                "model context shorter than the constraint's prefix".into(),
            ));
        }
        let mut stack = replay(spec, &ctx[ctx.len() - n..])?;
        if stack.len() != constraint.depth() {
            return Err(PhiError::Unsupported(
                "model context does not replay to the constraint's depth".into(),
            ));
        }
        let len = constraint.len();
        let s = model.state_of(&ctx);
        let Some(dp) = self.dp.as_mut() else {
            return Err(PhiError::Unsupported("no DP".into()));
        };
        let mut f = constraint.fork();
        for y in f.mask().iter() {
            let ti = y as usize;
            out[ti] = if y == spec.eos() {
                0.0
            } else if ti < spec.kinds {
                stack.push(ti as u16);
                let r = dp.log_phi(&*model, &mut stack, len + 1, &model.next_state(&s, y));
                stack.pop();
                r?
            } else {
                let k = stack.pop().unwrap_or(0);
                let r = dp.log_phi(&*model, &mut stack, len + 1, &model.next_state(&s, y));
                stack.push(k);
                r?
            };
        }
        Ok(out)
    }
}
