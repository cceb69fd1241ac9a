//! Two more toy language models for experiments and tests on real-looking
//! text (the "character/byte LM" and noisy draft of the future-validity
//! paper's App. G/H experiments):
//!
//! - [`CharBigramLm`]: a byte-level bigram LM fitted (add-α smoothing) on a
//!   small corpus, with a temperature.
//! - [`NoisyLm`]: a draft model `q` made from a target by adding seeded
//!   Gaussian noise to its logits (so `q ≈ p` and acceptance is high but not
//!   1).
//!
//! Cost: `O(|V|)` per row for both.

use zapspec_core::{LanguageModel, Logits, ModelError, TokenId};

use crate::toy::splitmix64;

/// Byte vocabulary size used by [`CharBigramLm`]: bytes 0–255 and EOS = 256
/// (as `TokenVocab::bytes()`).
pub const BYTE_VOCAB: usize = 257;
/// EOS of the byte vocabulary.
pub const BYTE_EOS: TokenId = 256;

/// A byte bigram LM: `p(y | previous byte)` estimated from a corpus with
/// add-α smoothing, raised to `1/temperature` in logit space. The first
/// token is conditioned on a virtual BOS; every corpus string ends in EOS.
#[derive(Debug, Clone)]
pub struct CharBigramLm {
    /// Row 256 is BOS; each row holds `BYTE_VOCAB` logits.
    table: Vec<Vec<f32>>,
    context: Vec<TokenId>,
    forwards: usize,
}

impl CharBigramLm {
    /// Fits the bigram on `corpus` (texts, EOS appended to each).
    pub fn fit<S: AsRef<str>>(corpus: &[S], alpha: f64, temperature: f64) -> Self {
        let mut counts = vec![vec![alpha; BYTE_VOCAB]; BYTE_VOCAB];
        for text in corpus {
            let mut prev = 256usize;
            for &b in text.as_ref().as_bytes() {
                counts[prev][b as usize] += 1.0;
                prev = b as usize;
            }
            counts[prev][BYTE_EOS as usize] += 1.0;
        }
        let t = temperature.max(1e-6);
        let table = counts
            .into_iter()
            .map(|row| {
                let z: f64 = row.iter().sum();
                row.into_iter().map(|c| ((c / z).ln() / t) as f32).collect()
            })
            .collect();
        CharBigramLm {
            table,
            context: Vec::new(),
            forwards: 0,
        }
    }

    /// Forward calls made so far (`prefill` + `next_logits`).
    pub fn forwards(&self) -> usize {
        self.forwards
    }

    fn row(&self, prev: Option<TokenId>) -> &[f32] {
        // EOS as previous token behaves like BOS
        let i = prev.map_or(256, |t| (t as usize).min(256));
        &self.table[i]
    }
}

impl LanguageModel for CharBigramLm {
    fn vocab_size(&self) -> usize {
        BYTE_VOCAB
    }
    fn context(&self) -> &[TokenId] {
        &self.context
    }
    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        if let Some(&token) = tokens.iter().find(|&&t| t as usize >= BYTE_VOCAB) {
            return Err(ModelError::TokenOutOfRange {
                token,
                vocab_size: BYTE_VOCAB,
            });
        }
        self.forwards += 1;
        let mut out = Logits::zeros((tokens.len(), BYTE_VOCAB));
        for (i, &t) in tokens.iter().enumerate() {
            out.row_mut(i)
                .assign(&ndarray::ArrayView1::from(self.row(Some(t))));
        }
        self.context.extend_from_slice(tokens);
        Ok(out)
    }
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        self.forwards += 1;
        Ok(self.row(self.context.last().copied()).to_vec())
    }
    fn truncate(&mut self, len: usize) {
        self.context.truncate(len);
    }
}

/// A draft model: the inner model's logits plus `sigma · N(0,1)` noise that
/// is a deterministic function of `(seed, last context token, candidate)`.
#[derive(Debug, Clone)]
pub struct NoisyLm<M> {
    inner: M,
    sigma: f32,
    seed: u64,
}

impl<M: LanguageModel> NoisyLm<M> {
    /// Wraps `inner`; `sigma` is the noise scale in logit units, `seed`
    /// picks the (fixed) noise field.
    pub fn new(inner: M, sigma: f32, seed: u64) -> Self {
        NoisyLm { inner, sigma, seed }
    }

    fn noise(&self, ctx_last: Option<TokenId>, y: usize) -> f32 {
        let base = splitmix64(self.seed ^ splitmix64(ctx_last.map_or(u64::MAX, |t| t as u64)));
        let a = splitmix64(base ^ (y as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93));
        let b = splitmix64(a);
        let u1 = ((a >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let u2 = (b >> 11) as f64 / (1u64 << 53) as f64;
        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32 * self.sigma
    }

    fn perturb(&self, ctx_last: Option<TokenId>, row: &mut [f32]) {
        for (y, v) in row.iter_mut().enumerate() {
            if v.is_finite() {
                *v += self.noise(ctx_last, y);
            }
        }
    }
}

impl<M: LanguageModel> LanguageModel for NoisyLm<M> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn context(&self) -> &[TokenId] {
        self.inner.context()
    }
    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        let mut out = self.inner.prefill(tokens)?;
        for (i, &t) in tokens.iter().enumerate() {
            let mut row = out.row(i).to_vec();
            self.perturb(Some(t), &mut row);
            out.row_mut(i).assign(&ndarray::ArrayView1::from(&row[..]));
        }
        Ok(out)
    }
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        let last = self.inner.context().last().copied();
        let mut row = self.inner.next_logits()?;
        self.perturb(last, &mut row);
        Ok(row)
    }
    fn truncate(&mut self, len: usize) {
        self.inner.truncate(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zapspec_core::prob::softmax;

    #[test]
    fn char_bigram_is_a_fitted_distribution() {
        let mut lm = CharBigramLm::fit(&["ab", "ab", "ac"], 1e-5, 1.0);
        let p = softmax(&lm.next_logits().unwrap());
        assert!(p[b'a' as usize] > 0.99);
        lm.prefill(&[b'a' as u32]).unwrap();
        let p = softmax(&lm.next_logits().unwrap());
        assert!((p[b'b' as usize] / p[b'c' as usize] - 2.0).abs() < 0.05);
        assert!(lm.prefill(&[300]).is_err());
    }
}
