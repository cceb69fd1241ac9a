//! The [`PhiEstimator`] trait — the one Φ interface — and the
//! Doob-transform kernel it feeds.
//!
//! Paper §4: the future validity of a locally valid token `y` after prefix
//! `x<t` is
//!
//! ```text
//! Φ_t(y | x<t) = Pr_{z∼p}[ x<t · y · z ∈ L(C) ]
//! ```
//!
//! (EOS is a terminal transition: after an accepting prefix, `Φ_t(EOS) = 1`).
//! The grammar-conditional kernel is the Doob h-transform with `h = Φ`:
//! `μ*_t(y) ∝ p_t(y) Φ_t(y)` on `A_t` ([`doob_kernel`]); local masking is the
//! degenerate `Φ̂ ≡ 1` (Def. 1, μ^proj). Every estimator produces the
//! *vector* `log Φ̂_t(·)` over the candidates — a scalar would be a no-op by
//! shift invariance (§5 "critical invariant", App. G).
//!
//! ## Conventions shared by every estimator
//!
//! * A call sees a [`PhiQuery`]: the generated prefix `x<t`, the constraint
//!   state after it, its valid set `A_t` and the logits `p_t` there. A
//!   model, when the estimator runs one, has a context ending with the same
//!   tokens (it may start with a prompt); estimators may move the model's
//!   context but restore it (same tokens) before returning.
//! * [`PhiEstimator::log_phi_into`] writes `log Φ̂_t(y) ∈ [-inf, 0]` into a
//!   caller's buffer for `y ∈ A_t` only, where `-inf` means "a dead end"
//!   (Φ̂ = 0), which exact estimators report for candidates with no valid
//!   completion; never NaN. [`PhiEstimator::log_phi`] is the `|V|`-vector
//!   convenience (`-inf` outside `A_t`).
//! * Each call returns the work it did ([`PhiCost`]); [`Metered`] adds it
//!   up. Errors are [`PhiError`]s.

use zapspec_core::{prob, Constraint, LanguageModel, Logits, ModelError, TokenId, TokenSet};

use crate::error::PhiError;

/// Work done by an estimator: what one call of
/// [`PhiEstimator::log_phi_into`] returns, and what [`Metered`] adds up
/// for the paper's "Cost/pos" column (Tables 2, 6, 11).
///
/// An estimator reports the work of the call itself (extra forwards,
/// rollouts, constraint operations) and leaves `calls` at 0; whoever
/// accumulates counts the calls ([`Metered`], [`PhiCost::record`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PhiCost {
    /// Calls to the estimator (decoding positions scored).
    pub calls: u64,
    /// Extra model forward passes (`prefill`/`next_logits`) spent.
    pub forwards: u64,
    /// Monte Carlo rollouts started.
    pub rollouts: u64,
    /// Tokens generated inside rollouts.
    pub rollout_tokens: u64,
    /// Constraint operations (advance / fill_mask on forks).
    pub constraint_ops: u64,
}

impl PhiCost {
    /// Extra forwards per scored position (the paper's Cost/pos).
    pub fn forwards_per_call(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.forwards as f64 / self.calls as f64
        }
    }

    /// Component-wise sum.
    pub fn add(&self, o: &PhiCost) -> PhiCost {
        PhiCost {
            calls: self.calls + o.calls,
            forwards: self.forwards + o.forwards,
            rollouts: self.rollouts + o.rollouts,
            rollout_tokens: self.rollout_tokens + o.rollout_tokens,
            constraint_ops: self.constraint_ops + o.constraint_ops,
        }
    }

    /// Adds the work of one call and counts the call.
    pub fn record(&mut self, call: &PhiCost) {
        *self = self.add(call);
        self.calls += 1;
    }
}

/// What one Φ̂ call returns: the work it did, or why it failed.
pub type PhiResult = Result<PhiCost, PhiError>;

/// Everything an estimator sees at decoding position `t`.
///
/// `prefix` is every generated token before `t` (a prompt, if any, is not
/// included), `constraint` the matcher state after it, `mask` that state's
/// valid set `A_t`, and `logits` the model's raw next-token logits `p_t`
/// there (passed so an estimator that needs `p_t` — OneStep-Cheap, Def. 9
/// — runs no model of its own).
#[derive(Debug)]
pub struct PhiQuery<'a, C> {
    /// The generated tokens before position `t`.
    pub prefix: &'a [TokenId],
    /// The matcher state after `prefix`.
    pub constraint: &'a C,
    /// The valid set `A_t` of `constraint`.
    pub mask: &'a TokenSet,
    /// The next-token logits `p_t` after `prefix`.
    pub logits: &'a [f32],
    /// The caller uses only the argmax of the law `p_t(y)Φ̂_t(y)` over
    /// `A_t` (greedy decoding): an estimator may then return, for a
    /// candidate that provably cannot be that argmax, any value that keeps
    /// it below the argmax instead of its estimate (exact for the argmax;
    /// [`crate::OneStepCheap`] stops scoring there). Default `false`.
    pub argmax_only: bool,
}

impl<'a, C> PhiQuery<'a, C> {
    /// A query from its four parts.
    pub fn new(
        prefix: &'a [TokenId],
        constraint: &'a C,
        mask: &'a TokenSet,
        logits: &'a [f32],
    ) -> Self {
        PhiQuery {
            prefix,
            constraint,
            mask,
            logits,
            argmax_only: false,
        }
    }

    /// The same query for a caller that needs only the law's argmax
    /// ([`PhiQuery::argmax_only`]).
    pub fn with_argmax_only(mut self, argmax_only: bool) -> Self {
        self.argmax_only = argmax_only;
        self
    }
}

impl<C> Clone for PhiQuery<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for PhiQuery<'_, C> {}

/// A future-validity estimator Φ̂_t (paper §5: Tiers 0–3), the one Φ
/// interface of the workspace: the estimator tables of this crate, the
/// FVO-Spec decoder of `zapspec-verify` and the exact prefix-tree Φ all
/// use it.
///
/// `M` is the model an estimator may run extra forwards on. Estimators
/// that need none ([`crate::Uniform`], [`crate::OneStepCheap`],
/// [`crate::Frozen`] over such an estimator) implement the trait for every
/// `M`, so they also work with [`NoModel`]; the others are used where no
/// model is at hand through [`crate::WithModel`], which owns a model copy.
pub trait PhiEstimator<C: Constraint, M: LanguageModel> {
    /// A short name for tables ("Uniform", "OneStep-Cheap", "MC(k=8)", …).
    fn name(&self) -> String;

    /// Writes `log Φ̂_t(y)` into `out[y]` for every `y ∈ q.mask` and touches
    /// no other entry of `out` (which has the vocabulary's length), so a
    /// call costs `O(|A_t|)` plus the estimator's own work, never a `|V|`
    /// pass imposed by the interface. Values are in `[-inf, 0]`, `-inf`
    /// marking a candidate estimated to be a dead end; never NaN.
    ///
    /// `model`, when the estimator uses it, has a context ending with
    /// `q.prefix` (a prompt may precede it) and `q.logits` are its
    /// next-token logits; the estimator may move its context but restores
    /// it before returning. Returns the work this call did (`calls` left
    /// at 0; a failed call's work is not reported).
    fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, model: &mut M, out: &mut [f64]) -> PhiResult;

    /// `log Φ̂_t(y) + c_t` for every `y ∈ q.mask`, where `c_t` is finite and
    /// the same for every candidate of the position. The FVO-Spec law
    /// `p_t(y)Φ̂_t(y) / Σ_{u∈A_t} p_t(u)Φ̂_t(u)` (§4, Prop. 6) is invariant
    /// to `c_t`, so the decoder calls this; an estimator can then skip work
    /// that only fixes the scale (OneStep-Cheap skips the `O(|V|)`
    /// log-normaliser of `p_t`). Default: [`Self::log_phi_into`]
    /// (`c_t = 0`).
    fn log_phi_shifted(
        &mut self,
        q: &PhiQuery<'_, C>,
        model: &mut M,
        out: &mut [f64],
    ) -> PhiResult {
        self.log_phi_into(q, model, out)
    }

    /// [`Self::log_phi_shifted`] on the valid set as a list:
    /// `out[i] = log Φ̂_t(ids[i]) + c_t`, where `valid.ids` lists the
    /// members of `q.mask` in increasing order, `valid.logits` their logits
    /// (`q.logits[ids[i]]`, which the caller gathers anyway for its own
    /// law), and `out.len() == ids.len()`. Nothing
    /// vocabulary-sized is written, so a decoder keeps an `|A_t|` buffer
    /// read in order instead of a `|V|` one touched at `|A_t|` scattered
    /// places. `None` when the estimator has no such path (the default):
    /// the caller then uses [`Self::log_phi_shifted`].
    fn log_phi_shifted_compact(
        &mut self,
        q: &PhiQuery<'_, C>,
        model: &mut M,
        valid: ValidList<'_>,
        out: &mut [f64],
    ) -> Option<PhiResult> {
        let _ = (q, model, valid, out);
        None
    }

    /// `log Φ̂_t(y)` for every token `y` of the vocabulary: `-inf` outside
    /// the valid set `A_t` (the constraint's current mask), the value of
    /// [`Self::log_phi_into`] inside it. The prefix is the last
    /// `constraint.num_tokens()` tokens of `model`'s context and `logits`
    /// are the model's next-token logits there. Allocates the mask and a
    /// `|V|` vector; a convenience for tests and experiments.
    fn log_phi(
        &mut self,
        constraint: &C,
        model: &mut M,
        logits: &[f32],
    ) -> Result<Vec<f64>, PhiError> {
        let v = check_vocab(constraint, model, logits)?;
        let mask = valid_set(constraint);
        let ctx = model.context();
        let prefix = ctx[ctx.len().saturating_sub(constraint.num_tokens())..].to_vec();
        let mut out = vec![f64::NEG_INFINITY; v];
        let q = PhiQuery::new(&prefix, constraint, &mask, logits);
        self.log_phi_into(&q, model, &mut out)?;
        Ok(out)
    }
}

/// Forwards the trait through a pointer type (`Box<E>`, `&mut E`), so a
/// boxed or borrowed estimator is an estimator.
macro_rules! forward_phi_estimator {
    ($($ptr:ty),+) => {$(
        impl<C: Constraint, M: LanguageModel, E: PhiEstimator<C, M> + ?Sized> PhiEstimator<C, M>
            for $ptr
        {
            fn name(&self) -> String {
                (**self).name()
            }
            fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, model: &mut M, out: &mut [f64]) -> PhiResult {
                (**self).log_phi_into(q, model, out)
            }
            fn log_phi_shifted(&mut self, q: &PhiQuery<'_, C>, model: &mut M, out: &mut [f64]) -> PhiResult {
                (**self).log_phi_shifted(q, model, out)
            }
            fn log_phi_shifted_compact(
                &mut self,
                q: &PhiQuery<'_, C>,
                model: &mut M,
                valid: ValidList<'_>,
                out: &mut [f64],
            ) -> Option<PhiResult> {
                (**self).log_phi_shifted_compact(q, model, valid, out)
            }
        }
    )+};
}

forward_phi_estimator!(Box<E>, &mut E);

/// Counts an estimator's work: every successful call adds the work it
/// reports to [`Metered::cost`] and counts one call. Name and values are
/// the inner estimator's.
#[derive(Debug, Clone, Default)]
pub struct Metered<E> {
    inner: E,
    cost: PhiCost,
}

impl<E> Metered<E> {
    /// Wraps `inner` with zeroed counters.
    pub fn new(inner: E) -> Self {
        Metered {
            inner,
            cost: PhiCost::default(),
        }
    }

    /// The wrapped estimator.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// The wrapped estimator, mutably.
    pub fn inner_mut(&mut self) -> &mut E {
        &mut self.inner
    }

    /// Unwraps the estimator.
    pub fn into_inner(self) -> E {
        self.inner
    }

    /// Work accumulated since construction or [`Self::reset_cost`].
    pub fn cost(&self) -> PhiCost {
        self.cost
    }

    /// Zeroes the counters.
    pub fn reset_cost(&mut self) {
        self.cost = PhiCost::default();
    }
}

impl<C: Constraint, M: LanguageModel, E: PhiEstimator<C, M>> PhiEstimator<C, M> for Metered<E> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, model: &mut M, out: &mut [f64]) -> PhiResult {
        let c = self.inner.log_phi_into(q, model, out)?;
        self.cost.record(&c);
        Ok(c)
    }
    fn log_phi_shifted(
        &mut self,
        q: &PhiQuery<'_, C>,
        model: &mut M,
        out: &mut [f64],
    ) -> PhiResult {
        let c = self.inner.log_phi_shifted(q, model, out)?;
        self.cost.record(&c);
        Ok(c)
    }
    fn log_phi_shifted_compact(
        &mut self,
        q: &PhiQuery<'_, C>,
        model: &mut M,
        valid: ValidList<'_>,
        out: &mut [f64],
    ) -> Option<PhiResult> {
        let r = self.inner.log_phi_shifted_compact(q, model, valid, out)?;
        if let Ok(c) = &r {
            self.cost.record(c);
        }
        Some(r)
    }
}

/// A model slot with a vocabulary and nothing else: its context is empty
/// and every forward fails with [`ModelError::NoForward`]. Callers that
/// hold no model positioned at the prefix (the speculative decoder, whose
/// target is at the end of the drafted block; the prefix-tree laws) hand
/// this to estimators that need none; an estimator that does need one is
/// wrapped in [`crate::WithModel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoModel {
    vocab_size: usize,
}

impl NoModel {
    /// A slot for a vocabulary of `vocab_size` tokens.
    pub fn new(vocab_size: usize) -> Self {
        NoModel { vocab_size }
    }
}

impl LanguageModel for NoModel {
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }
    fn context(&self) -> &[TokenId] {
        &[]
    }
    fn prefill(&mut self, _: &[TokenId]) -> Result<Logits, ModelError> {
        Err(ModelError::NoForward("NoModel"))
    }
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        Err(ModelError::NoForward("NoModel"))
    }
    fn truncate(&mut self, _: usize) {}
}

/// Checks a query against an output buffer: `logits` and `out` must have
/// the constraint's vocabulary size. Returns that size.
pub fn check_query<C: Constraint>(q: &PhiQuery<'_, C>, out: &[f64]) -> Result<usize, PhiError> {
    let v = q.constraint.vocab_size();
    same_vocab("logits", q.logits.len(), v)?;
    same_vocab("output buffer", out.len(), v)?;
    Ok(v)
}

/// The valid set `A_t` as a list, for
/// [`PhiEstimator::log_phi_shifted_compact`]: its members in increasing
/// order and their logits.
#[derive(Debug, Clone, Copy)]
pub struct ValidList<'a> {
    /// The members of `A_t`, increasing.
    pub ids: &'a [TokenId],
    /// `logits[i]` is the next-token logit of `ids[i]`.
    pub logits: &'a [f32],
}

impl<'a> ValidList<'a> {
    /// The list from its two parts.
    pub fn new(ids: &'a [TokenId], logits: &'a [f32]) -> Self {
        ValidList { ids, logits }
    }
}

/// Checks a query for [`PhiEstimator::log_phi_shifted_compact`]: logits of
/// the constraint's vocabulary size, `valid.ids` as long as `q.mask` has
/// members, `valid.logits` and `out` as long as `valid.ids`.
pub fn check_compact<C: Constraint>(
    q: &PhiQuery<'_, C>,
    valid: ValidList<'_>,
    out: &[f64],
) -> Result<(), PhiError> {
    let ids = valid.ids;
    same_vocab("logits", q.logits.len(), q.constraint.vocab_size())?;
    if valid.logits.len() != ids.len() {
        return Err(PhiError::VocabMismatch {
            what: "valid-set logits",
            got: valid.logits.len(),
            want: ids.len(),
        });
    }
    if ids.len() != q.mask.count() {
        return Err(PhiError::VocabMismatch {
            what: "valid-set list",
            got: ids.len(),
            want: q.mask.count(),
        });
    }
    if out.len() != ids.len() {
        return Err(PhiError::VocabMismatch {
            what: "compact output buffer",
            got: out.len(),
            want: ids.len(),
        });
    }
    Ok(())
}

/// `Ok` when `what` has the constraint's vocabulary size `want`.
fn same_vocab(what: &'static str, got: usize, want: usize) -> Result<(), PhiError> {
    if got == want {
        Ok(())
    } else {
        Err(PhiError::VocabMismatch { what, got, want })
    }
}

/// Copies the entries of a full `log Φ̂` vector on `mask` into `out` (for
/// estimators that compute a `|V|` vector anyway).
pub fn copy_on_mask(full: &[f64], mask: &TokenSet, out: &mut [f64]) {
    for y in mask.iter() {
        let y = y as usize;
        if let Some(o) = out.get_mut(y) {
            *o = full.get(y).copied().unwrap_or(f64::NEG_INFINITY);
        }
    }
}

/// The valid set `A_t` of a constraint state (its mask), computed on a fork
/// so `constraint` stays untouched.
pub fn valid_set<C: Constraint>(constraint: &C) -> TokenSet {
    let mut f = constraint.fork();
    f.mask()
}

/// Checks that `logits`, the constraint and the model share one vocabulary.
pub fn check_vocab<C: Constraint, M: LanguageModel>(
    c: &C,
    m: &M,
    logits: &[f32],
) -> Result<usize, PhiError> {
    let v = c.vocab_size();
    same_vocab("model", m.vocab_size(), v)?;
    same_vocab("logits", logits.len(), v)?;
    Ok(v)
}

/// The Doob-transform kernel (paper §4, the display after the definition
/// of Φ): `log μ̂_t(y) = log p_t(y) + log Φ̂_t(y) − log Σ_{y'∈A_t} p_t(y')Φ̂_t(y')`
/// for `y ∈ A_t`, `-inf` elsewhere. With Φ̂ = Φ this is μ*_t; with Φ̂ ≡ 1 it
/// is μ^proj_t (Def. 1). Computed in log space, so Φ̂ of 1e-300 is fine.
///
/// Errors with [`PhiError::EmptySupport`] when `Σ p_t Φ̂_t = 0` on `A_t`.
pub fn doob_kernel(logits: &[f32], mask: &TokenSet, log_phi: &[f64]) -> Result<Vec<f64>, PhiError> {
    if log_phi.len() != logits.len() {
        return Err(PhiError::VocabMismatch {
            what: "log_phi",
            got: log_phi.len(),
            want: logits.len(),
        });
    }
    let lp = prob::log_softmax(logits);
    let mut out = vec![f64::NEG_INFINITY; logits.len()];
    for y in mask.iter() {
        let i = y as usize;
        if i < out.len() {
            let v = lp[i] + log_phi[i];
            out[i] = if v.is_nan() { f64::NEG_INFINITY } else { v };
        }
    }
    prob::renormalize_log(&mut out).map_err(|_| PhiError::EmptySupport { position: 0 })?;
    Ok(out)
}

/// The FVO-Spec target (Prop. 6): the Doob kernel for the constraint's
/// current mask. Convenience for verifiers.
pub fn fvo_target<C: Constraint>(
    constraint: &C,
    logits: &[f32],
    log_phi: &[f64],
) -> Result<Vec<f64>, PhiError> {
    let mask = valid_set(constraint);
    doob_kernel(logits, &mask, log_phi).map_err(|e| match e {
        PhiError::EmptySupport { .. } => PhiError::EmptySupport {
            position: constraint.num_tokens(),
        },
        e => e,
    })
}

/// `log Φ̂ = 0` on `mask`, `-inf` elsewhere (Tier 0's vector).
pub fn uniform_log_phi(mask: &TokenSet, vocab: usize) -> Vec<f64> {
    let mut out = vec![f64::NEG_INFINITY; vocab];
    for y in mask.iter() {
        if (y as usize) < vocab {
            out[y as usize] = 0.0;
        }
    }
    out
}

/// `ln(x)` clamped into `[-inf, 0]`, NaN mapped to `-inf` (estimates are
/// probabilities; rounding can push sums a hair above 1).
#[inline]
pub(crate) fn ln_prob(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        f64::NEG_INFINITY
    } else if x >= 1.0 {
        0.0
    } else {
        x.ln()
    }
}

/// Clamps a log-probability into `[-inf, 0]`, NaN to `-inf`.
#[inline]
pub fn clamp_log(x: f64) -> f64 {
    if x.is_nan() {
        f64::NEG_INFINITY
    } else {
        x.min(0.0)
    }
}

/// `log Σ_{u∈set} p(u)` from log-probabilities.
pub fn log_mass(logp: &[f64], set: &TokenSet) -> f64 {
    let xs: Vec<f64> = set
        .iter()
        .filter_map(|u| logp.get(u as usize).copied())
        .collect();
    clamp_log(prob::logsumexp(&xs))
}
