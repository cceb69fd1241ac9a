//! Tier 2 (paper §5.4): Monte Carlo rollouts.
//!
//! `Φ̂ᵐᶜ_t(y) = (1/k) Σ_j 1[rollout_j(x<t y) ∈ L(C)]`: for every candidate
//! `y ∈ A_t` (EOS aside: `Φ_t(EOS) = 1`), `k` rollouts of at most `h` tokens
//! are drawn from the *unmasked* model `p` after `x<t y`; a rollout is valid
//! when it emits EOS at an accepting prefix, invalid when it emits a token
//! the constraint rejects. A rollout still running after `h` tokens is
//! scored by [`OnHorizon`] (with `h` at least the longest member, no rollout
//! is truncated and the estimator is unbiased).
//!
//! Cost: one forward per rollout token, `O(k·h·|A_t|)` forwards per position
//! — or, with [`MonteCarloConfig::batched`], `h` forwards per position,
//! each over every rollout still running (a rollout tree on the model's
//! KV cache, [`zapspec_core::LanguageModel::tree_logits_from`]); a
//! [`crate::CandidateCut`] ([`MonteCarloConfig::cut`]) replaces `|A_t|` by
//! the head of `A_t` under `p_t`.
//!
//! Certificate: by Hoeffding, `|Φ̂ᵐᶜ − Φ| ≤ √(ln(2/α)/(2k))` per candidate with
//! probability `1−α`; a union bound over `A_t` and Theorem 7 give
//! `TV(μ̂_t, μ*_t) ≤ ε/(Φ̄_t − ε)`, `ε = √(ln(2|A_t|/α)/(2k))`
//! ([`McCertificate`]).
//!
//! [`RolloutLaw::MaskedImportance`] is an optional lower-variance variant
//! (not in the paper): roll out under the locally masked law and score a
//! rollout by the product of the valid masses `Π Z_p` along it, an unbiased
//! estimate of Φ with values in `[0, 1]`, so the same Hoeffding bound holds.

use zapspec_core::prob::{self, seeded_rng, SeededRng};
use zapspec_core::{Constraint, DraftTree, LanguageModel, TokenId, TokenSet};

use crate::certificates::{hoeffding_half_width, theorem7_bound};
use crate::cut::{CandidateCut, CutScratch};
use crate::error::PhiError;
use crate::estimator::{
    check_query, check_vocab, ln_prob, log_mass, PhiCost, PhiEstimator, PhiQuery, PhiResult,
};

/// How a rollout draws its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RolloutLaw {
    /// The paper's estimator: sample from the unmasked model `p`; score 0/1.
    #[default]
    Unmasked,
    /// Sample from the locally masked law; score `Π_t Z_p,t`.
    MaskedImportance,
}

/// What a rollout that reaches the horizon without finishing scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnHorizon {
    /// Its prefix is still valid: count it as valid (optimistic, like OneStep).
    #[default]
    Valid,
    /// Count it as invalid (pessimistic).
    Invalid,
}

/// Configuration of [`MonteCarlo`]; `Default` is `k = 8`, `h = 64`, seed 0,
/// every candidate scored, rollouts one after another.
#[derive(Debug, Clone, Copy)]
pub struct MonteCarloConfig {
    /// Rollouts per candidate.
    pub k: usize,
    /// Maximum tokens per rollout after the candidate.
    pub horizon: usize,
    /// Seed of the rollout RNG.
    pub seed: u64,
    /// How rollouts draw their tokens.
    pub law: RolloutLaw,
    /// What a rollout reaching the horizon scores.
    pub on_horizon: OnHorizon,
    /// Confidence level `α` of the certificate.
    pub alpha: f64,
    /// When every candidate scores 0, return `Φ̂ ≡ 1` (Uniform) instead of
    /// all dead ends (which would leave the Doob kernel undefined).
    pub all_zero_fallback: bool,
    /// Which candidates get rollouts; the others get the cut's tail value
    /// (see [`CandidateCut`]). Default: every candidate.
    pub cut: CandidateCut,
    /// Run the rollouts of a position in lockstep on a rollout tree
    /// ([`LanguageModel::tree_logits_from`]: one forward per rollout step for
    /// all rollouts of all candidates, each branch reading the prefix's
    /// KV cache in place on a model that has one), each rollout with its
    /// own RNG stream ([`MonteCarlo::rollout_seed`]), so its tokens do
    /// not depend on the order the rollouts run in. `false` (default): one
    /// rollout after another from the estimator's single RNG stream.
    pub batched: bool,
}

impl Default for MonteCarloConfig {
    fn default() -> Self {
        MonteCarloConfig {
            k: 8,
            horizon: 64,
            seed: 0,
            law: RolloutLaw::Unmasked,
            on_horizon: OnHorizon::Valid,
            alpha: 0.05,
            all_zero_fallback: true,
            cut: CandidateCut::default(),
            batched: false,
        }
    }
}

/// The §5.4 certificate for the last scored position.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct McCertificate {
    /// Rollouts per candidate.
    pub k: usize,
    /// `|A_t|` (EOS, whose Φ is exact, excluded).
    pub candidates: usize,
    /// Confidence level `α`.
    pub alpha: f64,
    /// Per-candidate Hoeffding half-width `√(ln(2/α)/(2k))`.
    pub half_width: f64,
    /// Union-bound half-width `ε = √(ln(2|A_t|/α)/(2k))`.
    pub union_half_width: f64,
    /// `Σ_y μ^proj_t(y) Φ̂(y)`: the plug-in estimate of Φ̄_t.
    pub phi_bar_hat: f64,
    /// `ε/(Φ̄_t − ε)` with the conservative `Φ̄_t ≥ Φ̄̂_t − ε` (holds on the
    /// same `1−α` event); `None` when vacuous.
    pub tv_bound: Option<f64>,
}

/// Tier 2: Monte Carlo rollouts with a seeded RNG.
#[derive(Debug, Clone)]
pub struct MonteCarlo {
    config: MonteCarloConfig,
    rng: SeededRng,
    /// Work of the call in progress (returned and zeroed at its end).
    work: PhiCost,
    last: Option<McCertificate>,
    /// Calls so far (the batched rollouts' RNG streams depend on it).
    calls: u64,
    cut_scratch: CutScratch,
}

/// One rollout of the batched path.
struct Branch<C> {
    /// Index of its candidate.
    cand: usize,
    /// The constraint after the candidate and the rollout's tokens.
    c: C,
    /// Its last node in the rollout tree, and that node's row in the last logits.
    node: usize,
    row: usize,
    rng: SeededRng,
    weight: f64,
    score: Option<f64>,
}

/// What one rollout step did.
enum Step {
    /// The rollout ended with this score.
    Done(f64),
    /// It continues with this token (advanced in its constraint).
    Next(TokenId),
}

impl MonteCarlo {
    /// `k` rollouts of horizon `horizon` per candidate, seeded.
    pub fn new(k: usize, horizon: usize, seed: u64) -> Self {
        Self::with_config(MonteCarloConfig {
            k,
            horizon,
            seed,
            ..Default::default()
        })
    }

    /// The estimator with a full configuration (RNG seeded from it).
    pub fn with_config(config: MonteCarloConfig) -> Self {
        MonteCarlo {
            rng: seeded_rng(config.seed),
            config,
            work: PhiCost::default(),
            last: None,
            calls: 0,
            cut_scratch: CutScratch::default(),
        }
    }

    /// The seed of rollout `j` of candidate `y` at the estimator's call
    /// number `call` (counted from 0) in batched mode
    /// ([`MonteCarloConfig::batched`]): a function of the configured seed
    /// and these three only.
    pub fn rollout_seed(seed: u64, call: u64, y: TokenId, j: usize) -> u64 {
        use zapspec_core::hash::splitmix64;
        splitmix64(splitmix64(splitmix64(seed ^ 0x6d63_726f_6c6c_6f75) ^ call) ^ u64::from(y))
            ^ splitmix64(j as u64 ^ 0x5eed)
    }

    /// Its configuration.
    pub fn config(&self) -> &MonteCarloConfig {
        &self.config
    }

    /// The certificate of the last scored position.
    pub fn last_certificate(&self) -> Option<McCertificate> {
        self.last
    }

    /// One rollout after `y`; the model's context is restored. Returns the
    /// score in `[0, 1]`.
    fn rollout<C: Constraint, M: LanguageModel>(
        &mut self,
        c: &mut C,
        m: &mut M,
        y: TokenId,
    ) -> Result<f64, PhiError> {
        let base = m.context().len();
        let consumed = c.num_tokens();
        let r = self.rollout_inner(c, m, y);
        m.truncate(base);
        let extra = c.num_tokens() - consumed;
        let _ = c.rollback(extra);
        r
    }

    fn rollout_inner<C: Constraint, M: LanguageModel>(
        &mut self,
        c: &mut C,
        m: &mut M,
        y: TokenId,
    ) -> Result<f64, PhiError> {
        self.work.rollouts += 1;
        c.advance(y)?;
        let eos = c.eos();
        let mut logits = m.prefill(&[y])?.row(0).to_vec();
        self.work.forwards += 1;
        let mut weight = 1.0f64;
        let mut mask = TokenSet::new(c.vocab_size());
        for _ in 0..self.config.horizon {
            let lp = prob::log_softmax(&logits);
            let u = match self.config.law {
                RolloutLaw::Unmasked => {
                    let u = prob::sample_log(&mut self.rng, &lp).map_err(|_| {
                        PhiError::EmptySupport {
                            position: c.num_tokens(),
                        }
                    })? as TokenId;
                    self.work.rollout_tokens += 1;
                    if u == eos {
                        return Ok(if c.is_accepting() { 1.0 } else { 0.0 });
                    }
                    self.work.constraint_ops += 1;
                    if c.advance(u).is_err() {
                        return Ok(0.0);
                    }
                    u
                }
                RolloutLaw::MaskedImportance => {
                    c.fill_mask(&mut mask);
                    self.work.constraint_ops += 1;
                    let z = log_mass(&lp, &mask).exp();
                    weight *= z;
                    if weight <= 0.0 {
                        return Ok(0.0);
                    }
                    let mut masked = vec![f64::NEG_INFINITY; lp.len()];
                    for t in mask.iter() {
                        masked[t as usize] = lp[t as usize];
                    }
                    let u = match prob::sample_log(&mut self.rng, &masked) {
                        Ok(u) => u as TokenId,
                        Err(_) => return Ok(0.0),
                    };
                    self.work.rollout_tokens += 1;
                    if u == eos {
                        return Ok(weight);
                    }
                    c.advance(u)?;
                    u
                }
            };
            logits = m.prefill(&[u])?.row(0).to_vec();
            self.work.forwards += 1;
        }
        Ok(match self.config.on_horizon {
            OnHorizon::Valid => weight,
            OnHorizon::Invalid => 0.0,
        })
    }
}

/// Reports its forwards, rollouts, rollout tokens and constraint
/// operations; [`MonteCarlo::last_certificate`] holds the certificate of
/// the call.
impl<C: Constraint, M: LanguageModel> PhiEstimator<C, M> for MonteCarlo {
    fn name(&self) -> String {
        format!("MC(k={}){}", self.config.k, self.config.cut.label())
    }
    fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, model: &mut M, out: &mut [f64]) -> PhiResult {
        self.work = PhiCost::default();
        let r = self.score(q, model, out);
        let work = std::mem::take(&mut self.work);
        r.map(|()| work)
    }
}

/// A rollout tree that refused a level: its parents are earlier nodes by
/// construction, so this is never reached; typed all the same.
fn tree_error(e: zapspec_core::DraftTreeError) -> PhiError {
    PhiError::Model(zapspec_core::ModelError::Backend(format!(
        "rollout tree: {e}"
    )))
}

impl MonteCarlo {
    /// The batched rollouts of one position ([`MonteCarloConfig::batched`]):
    /// `k` rollouts per candidate of `cands`, grown in lockstep on one
    /// rollout tree — the candidates as its roots (one forward), then one
    /// level per step for every rollout still running (one forward each).
    /// Returns the mean score per candidate; the model's context is
    /// restored.
    fn batched_scores<C: Constraint, M: LanguageModel>(
        &mut self,
        constraint: &C,
        model: &mut M,
        cands: &[TokenId],
        call: u64,
    ) -> Result<Vec<f64>, PhiError> {
        let base = model.context().len();
        let r = self.batched_inner(constraint, model, cands, call);
        model.truncate(base);
        r
    }

    fn batched_inner<C: Constraint, M: LanguageModel>(
        &mut self,
        constraint: &C,
        model: &mut M,
        cands: &[TokenId],
        call: u64,
    ) -> Result<Vec<f64>, PhiError> {
        let k = self.config.k;
        let mut sums = vec![0.0f64; cands.len()];
        if cands.is_empty() {
            return Ok(sums);
        }
        let mut rollouts = DraftTree::default();
        let roots = vec![None; cands.len()];
        rollouts.extend(&roots, cands).map_err(tree_error)?;
        let mut rows = model.tree_logits_from(&rollouts, 0)?;
        self.work.forwards += 1;
        let mut branches: Vec<Branch<C>> = Vec::with_capacity(k * cands.len());
        for (i, &y) in cands.iter().enumerate() {
            let mut c = constraint.fork();
            c.advance(y)?;
            self.work.constraint_ops += 1;
            for j in 0..k {
                self.work.rollouts += 1;
                branches.push(Branch {
                    cand: i,
                    c: c.clone(),
                    node: i,
                    row: i,
                    rng: seeded_rng(Self::rollout_seed(self.config.seed, call, y, j)),
                    weight: 1.0,
                    score: None,
                });
            }
        }
        let mut mask = TokenSet::new(constraint.vocab_size());
        let (mut parents, mut tokens, mut who) = (Vec::new(), Vec::new(), Vec::new());
        for step in 0..self.config.horizon {
            parents.clear();
            tokens.clear();
            who.clear();
            for (bi, b) in branches.iter_mut().enumerate() {
                if b.score.is_some() {
                    continue;
                }
                let row = rows.row(b.row);
                let logits: Vec<f32> = row.iter().copied().collect();
                match Self::step(
                    self.config.law,
                    &mut b.rng,
                    &mut b.c,
                    &logits,
                    &mut b.weight,
                    &mut mask,
                    &mut self.work,
                )? {
                    Step::Done(s) => b.score = Some(s),
                    Step::Next(u) => {
                        parents.push(Some(b.node));
                        tokens.push(u);
                        who.push(bi);
                    }
                }
            }
            if tokens.is_empty() || step + 1 == self.config.horizon {
                break;
            }
            let first = rollouts.extend(&parents, &tokens).map_err(tree_error)?;
            rows = model.tree_logits_from(&rollouts, first)?;
            self.work.forwards += 1;
            for (n, &bi) in who.iter().enumerate() {
                branches[bi].node = first + n;
                branches[bi].row = n;
            }
        }
        for b in &branches {
            let s = b.score.unwrap_or(match self.config.on_horizon {
                OnHorizon::Valid => b.weight,
                OnHorizon::Invalid => 0.0,
            });
            sums[b.cand] += s;
        }
        Ok(sums.into_iter().map(|s| s / k as f64).collect())
    }

    /// One step of a rollout from its next-token `logits`: the same draw
    /// and scoring as [`Self::rollout`]'s loop body.
    fn step<C: Constraint>(
        law: RolloutLaw,
        rng: &mut SeededRng,
        c: &mut C,
        logits: &[f32],
        weight: &mut f64,
        mask: &mut TokenSet,
        work: &mut PhiCost,
    ) -> Result<Step, PhiError> {
        let eos = c.eos();
        let lp = prob::log_softmax(logits);
        match law {
            RolloutLaw::Unmasked => {
                let u = prob::sample_log(rng, &lp).map_err(|_| PhiError::EmptySupport {
                    position: c.num_tokens(),
                })? as TokenId;
                work.rollout_tokens += 1;
                if u == eos {
                    return Ok(Step::Done(if c.is_accepting() { 1.0 } else { 0.0 }));
                }
                work.constraint_ops += 1;
                if c.advance(u).is_err() {
                    return Ok(Step::Done(0.0));
                }
                Ok(Step::Next(u))
            }
            RolloutLaw::MaskedImportance => {
                c.fill_mask(mask);
                work.constraint_ops += 1;
                let z = log_mass(&lp, mask).exp();
                *weight *= z;
                if *weight <= 0.0 {
                    return Ok(Step::Done(0.0));
                }
                let mut masked = vec![f64::NEG_INFINITY; lp.len()];
                for t in mask.iter() {
                    masked[t as usize] = lp[t as usize];
                }
                let u = match prob::sample_log(rng, &masked) {
                    Ok(u) => u as TokenId,
                    Err(_) => return Ok(Step::Done(0.0)),
                };
                work.rollout_tokens += 1;
                if u == eos {
                    return Ok(Step::Done(*weight));
                }
                c.advance(u)?;
                Ok(Step::Next(u))
            }
        }
    }

    /// One call of the estimator: every candidate on `q.mask` (the head
    /// of the cut) gets `k` rollouts; the certificate is updated.
    fn score<C: Constraint, M: LanguageModel>(
        &mut self,
        q: &PhiQuery<'_, C>,
        model: &mut M,
        out: &mut [f64],
    ) -> Result<(), PhiError> {
        let (constraint, logits, mask) = (q.constraint, q.logits, q.mask);
        check_vocab(constraint, model, logits)?;
        check_query(q, out)?;
        if self.config.k == 0 {
            return Err(PhiError::config("k", "need at least one rollout"));
        }
        if !(self.config.alpha > 0.0 && self.config.alpha < 1.0) {
            return Err(PhiError::config("alpha", "must lie in (0, 1)"));
        }
        self.config.cut.validate()?;
        let eos = constraint.eos();
        let call = self.calls;
        self.calls += 1;
        // the candidates that get rollouts (all but EOS unless cut)
        let all: Vec<TokenId> = mask.iter().collect();
        let head: Vec<TokenId> = if self.config.cut.is_off() {
            all.clone()
        } else {
            let al: Vec<f32> = all
                .iter()
                .map(|&y| logits.get(y as usize).copied().unwrap_or(f32::NEG_INFINITY))
                .collect();
            match self.config.cut.head(&all, &al, eos, &mut self.cut_scratch) {
                Some(h) => h.iter().map(|&i| all[i]).collect(),
                None => all.clone(),
            }
        };
        let cands: Vec<TokenId> = head.iter().copied().filter(|&y| y != eos).collect();
        let n_cand = cands.len();
        let scores = if self.config.batched {
            self.batched_scores(constraint, model, &cands, call)?
        } else {
            let mut fork = constraint.fork();
            let mut v = Vec::with_capacity(n_cand);
            for &y in &cands {
                let mut s = 0.0;
                for _ in 0..self.config.k {
                    s += self.rollout(&mut fork, model, y)?;
                }
                v.push(s / self.config.k as f64);
            }
            v
        };
        let mut any_positive = false;
        let mut head_vals = Vec::with_capacity(head.len());
        let mut next = scores.iter();
        for &y in &head {
            let v = if y == eos {
                0.0
            } else {
                ln_prob(next.next().copied().unwrap_or(0.0))
            };
            any_positive |= v > f64::NEG_INFINITY;
            head_vals.push(v);
        }
        if head.len() < all.len() {
            let hl: Vec<f32> = head
                .iter()
                .map(|&y| logits.get(y as usize).copied().unwrap_or(f32::NEG_INFINITY))
                .collect();
            let tail = self.config.cut.tail_value(&hl, &head_vals);
            for &y in &all {
                out[y as usize] = tail;
            }
        }
        for (&y, &v) in head.iter().zip(&head_vals) {
            out[y as usize] = v;
        }
        if !any_positive && self.config.all_zero_fallback {
            for y in mask.iter() {
                out[y as usize] = 0.0;
            }
        }
        // Certificate (§5.4).
        let lp = prob::log_softmax(logits);
        let lz = log_mass(&lp, mask);
        let phi_bar_hat: f64 = mask
            .iter()
            .map(|y| (lp[y as usize] - lz + out[y as usize]).exp())
            .sum();
        let n = n_cand.max(1);
        let eps_u = hoeffding_half_width(self.config.k, self.config.alpha / n as f64);
        self.last = Some(McCertificate {
            k: self.config.k,
            candidates: n_cand,
            alpha: self.config.alpha,
            half_width: hoeffding_half_width(self.config.k, self.config.alpha),
            union_half_width: eps_u,
            phi_bar_hat,
            tv_bound: theorem7_bound(eps_u, phi_bar_hat - eps_u),
        });
        Ok(())
    }
}
