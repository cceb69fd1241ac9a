//! Deterministic seeded toy models, so every crate can be tested without a
//! real network:
//!
//! - [`BigramLm`]: logits depend on the previous token only, drawn from a
//!   Gaussian by hashing `(seed, previous token, candidate)`; no table, so it
//!   scales to a 200k vocabulary.
//! - [`ClosureLm`]: any function of the full context, for tests that need a
//!   context-dependent LM (random LMs over short sequences).
//! - [`ToyDiffusion`]: a masked "diffusion" model whose logits at a position
//!   depend on the nearest unmasked tokens to its left and right.
//! - [`Windowed`]: any model behind a short window (`max_context`), for
//!   tests of callers that slide a full context.
//!
//! The first three count their forward calls, so experiments can report costs.

use std::ops::Range;

use ndarray::Array2;

use zapspec_core::model::{
    check_denoise_args, BlockMarginals, DiffusionModel, LanguageModel, Logits, ModelError,
};
use zapspec_core::TokenId;
use zapspec_phi::exact::regular::FiniteStateLm;

pub use zapspec_core::hash::splitmix64;

/// A standard normal value determined by `key` (Box–Muller on two hashes).
#[inline]
fn hashed_gaussian(key: u64) -> f64 {
    let a = splitmix64(key);
    let b = splitmix64(a);
    let u1 = ((a >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let u2 = (b >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A seeded random bigram LM: `logit(y | x) = scale · N(seed, x, y)`, where
/// the first token is conditioned on a virtual BOS.
#[derive(Debug, Clone)]
pub struct BigramLm {
    vocab_size: usize,
    seed: u64,
    scale: f32,
    /// `(token, offset)` added to that token's logit in every context.
    bias: Option<(TokenId, f32)>,
    /// `(token, offset)` added to that token's logit at the first position.
    start_bias: Option<(TokenId, f32)>,
    context: Vec<TokenId>,
    forwards: usize,
}

impl BigramLm {
    /// A bigram LM over `vocab_size` tokens with logit scale 2.
    pub fn new(vocab_size: usize, seed: u64) -> Self {
        BigramLm {
            vocab_size,
            seed,
            scale: 2.0,
            bias: None,
            start_bias: None,
            context: Vec::new(),
            forwards: 0,
        }
    }

    /// Sets the logit scale (an inverse temperature: 0 is uniform).
    pub fn with_scale(mut self, scale: f32) -> Self {
        self.scale = scale;
        self
    }

    /// Adds `offset` to `token`'s logit in every context (still a bigram
    /// LM). With the EOS token and a negative offset, a length prior: every
    /// other token gains probability at every position, so longer strings
    /// gain mass relative to shorter ones.
    pub fn with_bias(mut self, token: TokenId, offset: f32) -> Self {
        self.bias = Some((token, offset));
        self
    }

    /// Adds `offset` to `token`'s logit at the first position only (after
    /// the virtual BOS; still a bigram LM). With the EOS token and a
    /// negative offset it keeps the empty string from taking the terminal
    /// law's mass.
    pub fn with_start_bias(mut self, token: TokenId, offset: f32) -> Self {
        self.start_bias = Some((token, offset));
        self
    }

    /// Number of forward passes (`prefill` or `next_logits` calls) so far.
    pub fn forwards(&self) -> usize {
        self.forwards
    }

    /// The logits after `prev` (`None`: the first token).
    pub fn logits_after(&self, prev: Option<TokenId>) -> Vec<f32> {
        let p = prev.map_or(u64::MAX, |t| t as u64);
        let base = splitmix64(self.seed ^ splitmix64(p));
        (0..self.vocab_size)
            .map(|y| {
                let l = (self.scale as f64
                    * hashed_gaussian(base ^ (y as u64).wrapping_mul(0xA24B_AED4_963E_E407)))
                    as f32;
                let l = match self.bias {
                    Some((t, b)) if t as usize == y => l + b,
                    _ => l,
                };
                match self.start_bias {
                    Some((t, b)) if prev.is_none() && t as usize == y => l + b,
                    _ => l,
                }
            })
            .collect()
    }

    fn check(&self, tokens: &[TokenId]) -> Result<(), ModelError> {
        match tokens.iter().find(|&&t| t as usize >= self.vocab_size) {
            Some(&token) => Err(ModelError::TokenOutOfRange {
                token,
                vocab_size: self.vocab_size,
            }),
            None => Ok(()),
        }
    }
}

/// A bigram model is finite-state (its state is the previous token), so the
/// exact Φ of `zapspec-phi`'s regular and Dyck DPs applies to it.
impl FiniteStateLm for BigramLm {
    type State = Option<TokenId>;
    fn state_of(&self, context: &[TokenId]) -> Self::State {
        context.last().copied()
    }
    fn next_state(&self, _s: &Self::State, t: TokenId) -> Self::State {
        Some(t)
    }
    fn state_log_probs(&self, s: &Self::State) -> Vec<f64> {
        zapspec_core::prob::log_softmax(&self.logits_after(*s))
    }
}

impl LanguageModel for BigramLm {
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }
    fn context(&self) -> &[TokenId] {
        &self.context
    }
    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        self.check(tokens)?;
        self.forwards += 1;
        let mut out = Array2::zeros((tokens.len(), self.vocab_size));
        for (i, &t) in tokens.iter().enumerate() {
            out.row_mut(i)
                .assign(&ndarray::ArrayView1::from(&self.logits_after(Some(t))));
        }
        self.context.extend_from_slice(tokens);
        Ok(out)
    }
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        self.forwards += 1;
        Ok(self.logits_after(self.context.last().copied()))
    }
    fn truncate(&mut self, len: usize) {
        self.context.truncate(len);
    }
}

/// Logits of a random context-dependent LM: `(seed, whole context,
/// candidate)` hashed to a uniform value in `[−scale, scale]` per token. No
/// table and no Markov property, so every context token (a prompt's too)
/// matters; wrap it in a [`ClosureLm`] and add whatever structure a test
/// needs (−∞ entries, an EOS penalty).
pub fn hashed_logits(seed: u64, ctx: &[TokenId], vocab_size: usize, scale: f64) -> Vec<f32> {
    let mut h = splitmix64(seed);
    for &t in ctx {
        h = splitmix64(h ^ (t as u64 + 1));
    }
    (0..vocab_size)
        .map(|y| {
            let r = splitmix64(h ^ ((y as u64 + 7) * 0x9E37_79B9));
            let u = (r >> 11) as f64 / (1u64 << 53) as f64;
            ((2.0 * u - 1.0) * scale) as f32
        })
        .collect()
}

/// An LM given by a function from the full context to logits.
#[derive(Clone)]
pub struct ClosureLm<F> {
    vocab_size: usize,
    f: F,
    context: Vec<TokenId>,
    forwards: usize,
}

impl<F: Fn(&[TokenId]) -> Vec<f32>> ClosureLm<F> {
    /// `f(context)` must return `vocab_size` logits.
    pub fn new(vocab_size: usize, f: F) -> Self {
        ClosureLm {
            vocab_size,
            f,
            context: Vec::new(),
            forwards: 0,
        }
    }
    /// Number of forward passes (`prefill` or `next_logits` calls) so far.
    pub fn forwards(&self) -> usize {
        self.forwards
    }
    fn eval(&self, ctx: &[TokenId]) -> Result<Vec<f32>, ModelError> {
        let l = (self.f)(ctx);
        if l.len() != self.vocab_size {
            return Err(ModelError::Backend(format!(
                "closure returned {} logits for a vocabulary of {}",
                l.len(),
                self.vocab_size
            )));
        }
        Ok(l)
    }
}

impl<F: Fn(&[TokenId]) -> Vec<f32>> LanguageModel for ClosureLm<F> {
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }
    fn context(&self) -> &[TokenId] {
        &self.context
    }
    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        if let Some(&token) = tokens.iter().find(|&&t| t as usize >= self.vocab_size) {
            return Err(ModelError::TokenOutOfRange {
                token,
                vocab_size: self.vocab_size,
            });
        }
        self.forwards += 1;
        let mut out = Array2::zeros((tokens.len(), self.vocab_size));
        for (i, &t) in tokens.iter().enumerate() {
            self.context.push(t);
            let l = self.eval(&self.context)?;
            out.row_mut(i).assign(&ndarray::ArrayView1::from(&l));
        }
        Ok(out)
    }
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        self.forwards += 1;
        self.eval(&self.context)
    }
    fn truncate(&mut self, len: usize) {
        self.context.truncate(len);
    }
}

/// Any model behind a short window: `max_context` is `window` and a
/// `prefill` that would pass it is a [`ModelError::ContextOverflow`];
/// everything else is the inner model's. Over a [`BigramLm`] (logits of
/// the last token only) a caller that slides its window sees the same
/// logits as without a window.
#[derive(Debug, Clone)]
pub struct Windowed<M> {
    /// The model behind the window.
    pub inner: M,
    /// Most positions in the context.
    pub window: usize,
}

impl<M: LanguageModel> LanguageModel for Windowed<M> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn context(&self) -> &[TokenId] {
        self.inner.context()
    }
    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        let len = self.inner.context().len() + tokens.len();
        if len > self.window {
            return Err(ModelError::ContextOverflow {
                len,
                max: self.window,
            });
        }
        self.inner.prefill(tokens)
    }
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        self.inner.next_logits()
    }
    fn truncate(&mut self, len: usize) {
        self.inner.truncate(len)
    }
    fn max_context(&self) -> usize {
        self.window
    }
}

/// A toy masked diffusion model: the logits at position `p` hash
/// `(seed, p, nearest unmasked token to the left, to the right)`; the mask
/// token itself always gets logit `-inf`. Drafts change the neighbours, so
/// they change the marginals, as in a real model.
#[derive(Debug, Clone)]
pub struct ToyDiffusion {
    vocab_size: usize,
    mask: TokenId,
    seed: u64,
    scale: f32,
    nfe: usize,
}

impl ToyDiffusion {
    /// A model over `vocab_size` ids, one of which (`mask`) is the mask token.
    pub fn new(vocab_size: usize, mask: TokenId, seed: u64) -> Self {
        ToyDiffusion {
            vocab_size,
            mask,
            seed,
            scale: 2.0,
            nfe: 0,
        }
    }

    /// Sets the logit scale (an inverse temperature: 0 is uniform).
    pub fn with_scale(mut self, scale: f32) -> Self {
        self.scale = scale;
        self
    }

    fn block_logits(&self, seq: &[TokenId], block: &Range<usize>) -> Logits {
        let mut out = Array2::zeros((block.len(), self.vocab_size));
        for (row, p) in block.clone().enumerate() {
            let left = seq[..p]
                .iter()
                .rev()
                .find(|&&t| t != self.mask)
                .map_or(u64::MAX, |&t| t as u64);
            let right = seq[p + 1..]
                .iter()
                .find(|&&t| t != self.mask)
                .map_or(u64::MAX - 1, |&t| t as u64);
            let key =
                splitmix64(self.seed ^ splitmix64(p as u64 ^ splitmix64(left ^ splitmix64(right))));
            for y in 0..self.vocab_size {
                out[[row, y]] = if y as TokenId == self.mask {
                    f32::NEG_INFINITY
                } else {
                    (self.scale as f64
                        * hashed_gaussian(key ^ (y as u64).wrapping_mul(0x9FB2_1C65_1E98_DF25)))
                        as f32
                };
            }
        }
        out
    }
}

impl DiffusionModel for ToyDiffusion {
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }
    fn mask_token(&self) -> TokenId {
        self.mask
    }
    fn denoise(
        &mut self,
        seq: &[TokenId],
        block: Range<usize>,
        drafts: &[Vec<TokenId>],
    ) -> Result<BlockMarginals, ModelError> {
        check_denoise_args(seq, &block, drafts, self.vocab_size)?;
        self.nfe += 1;
        let main = self.block_logits(seq, &block);
        let mut scratch = seq.to_vec();
        let drafts = drafts
            .iter()
            .map(|d| {
                scratch[block.clone()].copy_from_slice(d);
                self.block_logits(&scratch, &block)
            })
            .collect();
        Ok(BlockMarginals { main, drafts })
    }
    fn nfe(&self) -> usize {
        self.nfe
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zapspec_core::prob::softmax;

    #[test]
    fn bigram_prefill_equals_sequential() {
        let mut a = BigramLm::new(50, 3);
        let mut b = BigramLm::new(50, 3);
        let toks = [4u32, 9, 9, 0, 49];
        let rows = a.prefill(&toks).unwrap();
        for (i, &t) in toks.iter().enumerate() {
            b.prefill(&[t]).unwrap();
            assert_eq!(rows.row(i).to_vec(), b.next_logits().unwrap());
        }
        // truncate then re-feed gives the same logits
        a.truncate(2);
        assert_eq!(a.context(), &[4, 9]);
        assert_eq!(a.next_logits().unwrap(), rows.row(1).to_vec());
        assert!(a.prefill(&[50]).is_err());
        // logits_for reuses the cache and agrees with a fresh model
        let l = a.logits_for(&[4, 9, 9, 1]).unwrap();
        assert_eq!(l, BigramLm::new(50, 3).logits_for(&[4, 9, 9, 1]).unwrap());
    }

    #[test]
    fn bigram_is_seeded_and_nondegenerate() {
        let a = BigramLm::new(1000, 1).logits_after(Some(5));
        let b = BigramLm::new(1000, 2).logits_after(Some(5));
        assert_ne!(a, b);
        let p = softmax(&a);
        let m = p.iter().cloned().fold(0.0, f64::max);
        assert!(m > 0.005 && m < 0.5, "max prob {m}");
        let mean: f64 = a.iter().map(|&v| v as f64).sum::<f64>() / 1000.0;
        assert!(mean.abs() < 0.3, "mean {mean}");
    }

    #[test]
    fn closure_lm_checks_its_output() {
        let mut lm = ClosureLm::new(3, |ctx: &[TokenId]| vec![ctx.len() as f32, 0.0, 0.0]);
        assert_eq!(lm.next_logits().unwrap(), vec![0.0, 0.0, 0.0]);
        assert_eq!(
            lm.prefill(&[1, 2]).unwrap().row(1).to_vec(),
            vec![2.0, 0.0, 0.0]
        );
        let mut bad = ClosureLm::new(3, |_: &[TokenId]| vec![0.0]);
        assert!(bad.next_logits().is_err());
    }

    #[test]
    fn diffusion_drafts_equal_separate_calls() {
        let mut m = ToyDiffusion::new(20, 19, 11);
        let seq = vec![1, 2, 19, 19, 19, 5];
        let draft = vec![3, 19, 7];
        let both = m.denoise(&seq, 2..5, std::slice::from_ref(&draft)).unwrap();
        let mut seq2 = seq.clone();
        seq2[2..5].copy_from_slice(&draft);
        let alone = m.denoise(&seq2, 2..5, &[]).unwrap();
        assert_eq!(both.drafts[0], alone.main);
        assert_ne!(both.main, alone.main);
        assert_eq!(m.nfe(), 2);
        assert!(both
            .main
            .iter()
            .enumerate()
            .all(|(i, &v)| i % 20 != 19 || v == f32::NEG_INFINITY));
        assert!(m.denoise(&seq, 4..9, &[]).is_err());
        assert!(m.denoise(&seq, 2..5, &[vec![1]]).is_err());
    }
}
