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
//! Cost: one forward per rollout token, `O(k·h·|A_t|)` forwards per position.
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
use zapspec_core::{Constraint, LanguageModel, TokenId, TokenSet};

use crate::certificates::{hoeffding_half_width, theorem7_bound};
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

/// Configuration of [`MonteCarlo`]; `Default` is `k = 8`, `h = 64`, seed 0.
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
        }
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
        format!("MC(k={})", self.config.k)
    }
    fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, model: &mut M, out: &mut [f64]) -> PhiResult {
        self.work = PhiCost::default();
        let r = self.score(q, model, out);
        let work = std::mem::take(&mut self.work);
        r.map(|()| work)
    }
}

impl MonteCarlo {
    /// One call of the estimator: every candidate on `q.mask` gets `k`
    /// rollouts; the certificate is updated.
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
        let eos = constraint.eos();
        let mut fork = constraint.fork();
        let mut n_cand = 0usize;
        let mut any_positive = false;
        for y in mask.iter() {
            if y == eos {
                out[y as usize] = 0.0;
                any_positive = true;
                continue;
            }
            n_cand += 1;
            let mut s = 0.0;
            for _ in 0..self.config.k {
                s += self.rollout(&mut fork, model, y)?;
            }
            let phi = s / self.config.k as f64;
            any_positive |= phi > 0.0;
            out[y as usize] = ln_prob(phi);
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
