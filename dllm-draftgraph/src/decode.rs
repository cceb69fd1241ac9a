//! Block-wise decoding of a masked diffusion LM (Spiffy §3.1), the baseline
//! Spiffy accelerates: the generation of `W` tokens is split into blocks of
//! `L`, unmasked left to right; each denoising step unmasks the top-`S_t`
//! masked positions of the block by confidence, with `S_t = S` (static
//! unmasking) or every position whose confidence exceeds `τ`, at least one
//! (Fast-dLLM's threshold-based dynamic unmasking).
//!
//! [`next_state`] is the paper's `Next(X, p)` (Appendix A: steps 1–4 of
//! Algorithm 1), shared by vanilla decoding and Spiffy so the two make the
//! same decision from the same marginals.
//!
//! **Randomness.** Sampled decoding draws one uniform per block offset from
//! a stream keyed by `(seed, block index, step index in the block)`
//! ([`step_uniforms`]): every offset gets a draw whether or not it is
//! masked. A step's randomness therefore depends only on *which* step of
//! which block it is, never on how many model calls were made before, and
//! Spiffy — which reaches the same steps with fewer calls — consumes
//! exactly the randomness vanilla decoding does. This is what makes the
//! lossless property testable token for token with sampling.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use zapspec_core::{DiffusionModel, TokenId};

use crate::error::SpiffyError;
use crate::marginals::Marginals;

/// How many masked positions a denoising step unmasks (`S_t`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Unmasking {
    /// `S_t = per_step` for every step (LLaDA's default is 1).
    Static {
        /// Tokens unmasked per step (≥ 1).
        per_step: usize,
    },
    /// Every masked position whose confidence exceeds `tau`, and at least
    /// the most confident one (Wu et al., 2025).
    Threshold {
        /// Confidence threshold in `[0, 1)`.
        tau: f64,
    },
}

impl Default for Unmasking {
    fn default() -> Self {
        Unmasking::Static { per_step: 1 }
    }
}

/// Configuration of block-wise decoding.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DecodeConfig {
    /// Generation length `W` (tokens after the prompt).
    pub gen_len: usize,
    /// Block length `L`; blocks start at the end of the prompt (the last
    /// one may be shorter).
    pub block_len: usize,
    /// The unmasking rule.
    pub unmasking: Unmasking,
    /// Sampling temperature; `0` is greedy (argmax).
    pub temperature: f64,
    /// Seed of the sampling streams (unused when greedy).
    pub seed: u64,
}

impl Default for DecodeConfig {
    /// The paper's setting for LLaDA/Dream: `W = 256`, `L = 32`, one token
    /// per step, greedy.
    fn default() -> Self {
        DecodeConfig {
            gen_len: 256,
            block_len: 32,
            unmasking: Unmasking::default(),
            temperature: 0.0,
            seed: 0,
        }
    }
}

impl DecodeConfig {
    /// Checks every field's domain.
    pub fn validate(&self) -> Result<(), SpiffyError> {
        let bad = |field, reason: &str| {
            Err(SpiffyError::Config {
                field,
                reason: reason.to_string(),
            })
        };
        if self.block_len == 0 {
            return bad("block_len", "must be at least 1");
        }
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return bad("temperature", "must be finite and non-negative");
        }
        match self.unmasking {
            Unmasking::Static { per_step: 0 } => bad("unmasking.per_step", "must be at least 1"),
            Unmasking::Threshold { tau } if !(0.0..1.0).contains(&tau) => {
                bad("unmasking.tau", "must lie in [0, 1)")
            }
            _ => Ok(()),
        }
    }

    /// The blocks as ranges of absolute positions for a prompt of
    /// `prompt_len` tokens.
    pub fn blocks(&self, prompt_len: usize) -> Vec<std::ops::Range<usize>> {
        let l = self.block_len.max(1);
        let end = prompt_len + self.gen_len;
        (prompt_len..end)
            .step_by(l)
            .map(|s| s..(s + l).min(end))
            .collect()
    }
}

/// Identifies one denoising step: the `step`-th state transition (0-based)
/// of block `block` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StepKey {
    /// Block index in the generation.
    pub block: usize,
    /// Step index inside the block.
    pub step: usize,
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The uniforms of one step: `len` draws in `[0, 1)`, one per block offset,
/// from a ChaCha8 stream seeded by `(seed, key.block, key.step)`.
pub fn step_uniforms(seed: u64, key: StepKey, len: usize) -> Vec<f64> {
    let s = mix(mix(mix(seed) ^ key.block as u64) ^ (key.step as u64).rotate_left(32));
    let mut rng = ChaCha8Rng::seed_from_u64(s);
    (0..len).map(|_| rng.random::<f64>()).collect()
}

/// A token chosen for a masked offset: the token and its model
/// log-probability (the confidence used for ranking, as in LLaDA and
/// Fast-dLLM: the untempered probability of the chosen token).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choice {
    /// Offset inside the block.
    pub offset: usize,
    /// The chosen token.
    pub token: TokenId,
    /// `log p_offset(token)`.
    pub log_conf: f64,
}

/// Draws a token from `log p / T` by inverse CDF with uniform `u`.
fn sample_tempered(row: &[f64], temperature: f64, u: f64) -> Option<TokenId> {
    let scaled: Vec<f64> = row.iter().map(|&x| x / temperature).collect();
    let m = scaled.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return None;
    }
    let z: f64 = scaled.iter().map(|&x| (x - m).exp()).sum();
    let target = u * z;
    let mut acc = 0.0;
    let mut last = None;
    for (v, &x) in scaled.iter().enumerate() {
        let w = (x - m).exp();
        if w > 0.0 {
            acc += w;
            last = Some(v as TokenId);
            if acc > target {
                return last;
            }
        }
    }
    last
}

/// `Next(X, p)` (Appendix A; Algorithm 1 steps 1–4): chooses a token for
/// every masked offset (argmax, or a tempered sample with the step's
/// uniforms), ranks them by confidence and unmasks the top `S_t` in
/// `block`. Returns the unmasked choices, most confident first. A block
/// without masked positions is left as is. `O(L·V)`.
pub fn next_state(
    block: &mut [TokenId],
    marg: &Marginals,
    cfg: &DecodeConfig,
    key: StepKey,
) -> Result<Vec<Choice>, SpiffyError> {
    let uniforms = if cfg.temperature > 0.0 {
        step_uniforms(cfg.seed, key, block.len())
    } else {
        Vec::new()
    };
    let mut cands = Vec::new();
    for n in 0..block.len() {
        let Some(row) = marg.row(n) else { continue };
        let token = if cfg.temperature > 0.0 {
            sample_tempered(
                row,
                cfg.temperature,
                uniforms.get(n).copied().unwrap_or(0.0),
            )
        } else {
            marg.top1(n).map(|(t, _)| t)
        }
        .ok_or(SpiffyError::EmptySupport { offset: n })?;
        cands.push(Choice {
            offset: n,
            token,
            log_conf: row[token as usize],
        });
    }
    if cands.is_empty() {
        return Ok(cands);
    }
    cands.sort_by(|a, b| {
        b.log_conf
            .total_cmp(&a.log_conf)
            .then(a.offset.cmp(&b.offset))
    });
    let take = match cfg.unmasking {
        Unmasking::Static { per_step } => per_step.max(1),
        Unmasking::Threshold { tau } => {
            let ln_tau = tau.ln();
            cands.iter().filter(|c| c.log_conf > ln_tau).count().max(1)
        }
    };
    cands.truncate(take);
    for c in &cands {
        block[c.offset] = c.token;
    }
    Ok(cands)
}

/// The result of a decoding run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecodeOutput {
    /// The generated tokens (prompt excluded), `W` of them.
    pub tokens: Vec<TokenId>,
    /// Model calls made ([`DiffusionModel::nfe`] difference).
    pub nfe: usize,
    /// Denoising steps (state transitions) taken; equals `nfe` for vanilla
    /// decoding, exceeds it by the accepted drafts for Spiffy.
    pub steps: usize,
}

/// Writes the prompt followed by `W` mask tokens.
pub(crate) fn initial_sequence(prompt: &[TokenId], gen_len: usize, mask: TokenId) -> Vec<TokenId> {
    let mut seq = Vec::with_capacity(prompt.len() + gen_len);
    seq.extend_from_slice(prompt);
    seq.extend(std::iter::repeat_n(mask, gen_len));
    seq
}

/// Vanilla block-wise decoding: one model call per denoising step.
/// Costs `steps` NFEs of the model plus `O(L·V)` per step.
pub fn generate<M: DiffusionModel + ?Sized>(
    model: &mut M,
    prompt: &[TokenId],
    cfg: &DecodeConfig,
) -> Result<DecodeOutput, SpiffyError> {
    generate_with(model, prompt, cfg, |_, _, _, _| {})
}

/// [`generate`] with an observer called after every step with the block
/// index, the block's state before the step, the marginals of that state
/// and the choices unmasked (calibration records trajectories with it).
pub fn generate_with<M, F>(
    model: &mut M,
    prompt: &[TokenId],
    cfg: &DecodeConfig,
    mut observe: F,
) -> Result<DecodeOutput, SpiffyError>
where
    M: DiffusionModel + ?Sized,
    F: FnMut(usize, &[TokenId], &Marginals, &[Choice]),
{
    cfg.validate()?;
    let mask = model.mask_token();
    let mut seq = initial_sequence(prompt, cfg.gen_len, mask);
    let nfe0 = model.nfe();
    let mut steps = 0;
    for (b, range) in cfg.blocks(prompt.len()).into_iter().enumerate() {
        let mut step = 0;
        while seq[range.clone()].contains(&mask) {
            let out = model.denoise(&seq, range.clone(), &[])?;
            let before = seq[range.clone()].to_vec();
            let marg = Marginals::new(&out.main, &before, mask)?;
            let key = StepKey { block: b, step };
            let chosen = next_state(&mut seq[range.clone()], &marg, cfg, key)?;
            observe(b, &before, &marg, &chosen);
            step += 1;
            steps += 1;
        }
    }
    Ok(DecodeOutput {
        tokens: seq[prompt.len()..].to_vec(),
        nfe: model.nfe() - nfe0,
        steps,
    })
}
