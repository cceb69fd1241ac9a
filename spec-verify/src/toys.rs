//! Toy language models and finite languages for the experiments of
//! Appendix G / H ("Dyck oracle experiments use a toy LM and run on CPU";
//! "finite-JSON character-LM sweep at bigram temperatures").
//!
//! - [`CharBigramLm`]: a byte-level bigram LM fitted (add-α smoothing) on a
//!   small corpus, with a temperature: the "character/byte LM" of E3.
//! - [`NoisyLm`]: a draft model `q` made from a target by adding seeded
//!   Gaussian noise to its logits (so `q ≈ p` and acceptance is high but not 1).
//! - [`json_schemas`]: the four finite canonical-JSON languages of Table 7
//!   (3, 4, 18 and 24 strings) and the 2,000-string flag-code schema E of
//!   Tables 14–16.

use zapspec_core::{LanguageModel, Logits, ModelError, TokenId};
use zapspec_testkit::toy::splitmix64;

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

/// One finite canonical-JSON language.
#[derive(Debug, Clone)]
pub struct FiniteSchema {
    /// Short label ("status (A)", …).
    pub name: &'static str,
    /// The canonical (compact) JSON strings, in a fixed order.
    pub strings: Vec<String>,
}

/// The finite JSON languages of Table 7 (A–D: 3, 4, 18, 24 strings) and,
/// with `with_flag_code`, schema E of Tables 14–16 (2,000 strings).
pub fn json_schemas(with_flag_code: bool) -> Vec<FiniteSchema> {
    let mut out = vec![
        FiniteSchema {
            name: "status (A)",
            strings: ["ok", "error", "pending"]
                .iter()
                .map(|s| format!("{{\"status\":\"{s}\"}}"))
                .collect(),
        },
        FiniteSchema {
            name: "type-value (B)",
            strings: ["a", "b"]
                .iter()
                .flat_map(|t| {
                    ["x", "y"]
                        .iter()
                        .map(move |v| format!("{{\"type\":\"{t}\",\"value\":\"{v}\"}}"))
                })
                .collect(),
        },
        FiniteSchema {
            name: "action-target (C)",
            strings: ["create", "read", "update", "delete", "list", "sync"]
                .iter()
                .flat_map(|a| {
                    ["user", "file", "task"]
                        .iter()
                        .map(move |t| format!("{{\"action\":\"{a}\",\"target\":\"{t}\"}}"))
                })
                .collect(),
        },
        FiniteSchema {
            name: "method-path (D)",
            strings: ["GET", "POST", "PUT", "DELETE"]
                .iter()
                .flat_map(|m| {
                    [
                        "/api/v1",
                        "/api/v2",
                        "/metrics/v1",
                        "/health",
                        "/users",
                        "/orders",
                    ]
                    .iter()
                    .map(move |p| format!("{{\"method\":\"{m}\",\"path\":\"{p}\"}}"))
                })
                .collect(),
        },
    ];
    if with_flag_code {
        out.push(FiniteSchema {
            name: "flag-code (E)",
            strings: ["true", "false"]
                .iter()
                .flat_map(|f| {
                    (0..1000).map(move |c| format!("{{\"flag\":{f},\"code\":\"{c:03}\"}}"))
                })
                .collect(),
        });
    }
    out
}

/// The corpus the JSON byte LM is fitted on: every schema string of A–E once
/// plus a few generic JSON lines, so the bigram is JSON-shaped but does not
/// know any schema's structure beyond one character of context.
pub fn json_corpus() -> Vec<String> {
    let mut c: Vec<String> = json_schemas(true)
        .into_iter()
        .flat_map(|s| s.strings.into_iter().step_by(7))
        .collect();
    c.extend(
        [
            r#"{"id":1,"name":"alice","tags":["a","b"]}"#,
            r#"{"error":{"code":404,"message":"not found"}}"#,
            r#"{"ok":true,"data":[1,2,3],"next":null}"#,
            r#"{"user":"bob","role":"admin","active":false}"#,
            r#"{"path":"/api/v1/items","method":"POST","status":201}"#,
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use zapspec_core::prob::softmax;

    #[test]
    fn schema_sizes_match_the_paper() {
        let sizes: Vec<usize> = json_schemas(true).iter().map(|s| s.strings.len()).collect();
        assert_eq!(sizes, vec![3, 4, 18, 24, 2000]);
        for s in json_schemas(true) {
            let mut u = s.strings.clone();
            u.sort();
            u.dedup();
            assert_eq!(u.len(), s.strings.len(), "{} has duplicates", s.name);
        }
    }

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

    #[test]
    fn noisy_lm_is_deterministic_and_close() {
        let base = CharBigramLm::fit(&json_corpus(), 0.1, 1.0);
        let mut a = NoisyLm::new(base.clone(), 0.3, 7);
        let mut b = NoisyLm::new(base.clone(), 0.3, 7);
        let la = a.logits_for(&[b'{' as u32]).unwrap();
        assert_eq!(la, b.logits_for(&[b'{' as u32]).unwrap());
        let mut c = base;
        let lc = c.logits_for(&[b'{' as u32]).unwrap();
        let tv = zapspec_core::prob::tv(&softmax(&la), &softmax(&lc));
        assert!(tv > 0.0 && tv < 0.3, "tv {tv}");
    }
}
