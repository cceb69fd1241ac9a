//! llguidance (crates.io) over a zapspec [`TokenVocab`]: the baseline engine
//! of the MaskBench harness and of the end-to-end experiments.

use std::sync::Arc;

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::{ApproximateTokEnv, SimpleVob, TokEnv, TokRxInfo, TokTrie};
use llguidance::{JsonCompileOptions, Matcher, ParserFactory};
use zapspec_core::{
    Constraint, LookAhead, RejectReason, Rejected, RollbackError, TokenId, TokenSet, Vocabulary,
};
use zapspec_vocab::TokenVocab;

/// The toktrie environment of a vocabulary: ordinary tokens keep their
/// bytes, EOS becomes `\xFF<|endoftext|>` (llguidance's special-token
/// convention), other special tokens and holes have no bytes.
pub fn tok_env(vocab: &TokenVocab) -> TokEnv {
    let eos = vocab.eos();
    let words: Vec<Vec<u8>> = (0..vocab.len() as TokenId)
        .map(|t| {
            if t == eos {
                b"\xFF<|endoftext|>".to_vec()
            } else if vocab.is_special(t) {
                Vec::new()
            } else {
                vocab.token_bytes(t).to_vec()
            }
        })
        .collect();
    let info = TokRxInfo::new(words.len() as u32, eos);
    Arc::new(ApproximateTokEnv::new(TokTrie::from(&info, &words)))
}

/// llguidance's JSON options as the comparisons use them: its defaults
/// except `whitespace_flexible: false`, so that like zapspec's compiler
/// (`Whitespace::Compact`) it allows no whitespace between tokens (set
/// through the schema's `x-guidance` key, llguidance's documented override).
pub fn compact_schema(schema: &serde_json::Value) -> serde_json::Value {
    let mut schema = schema.clone();
    if schema.is_object() {
        let opts = JsonCompileOptions {
            whitespace_flexible: false,
            ..JsonCompileOptions::default()
        };
        opts.apply_to(&mut schema);
    }
    schema
}

/// Copies llguidance's token set into a zapspec one of the same universe
/// (bits past `out`'s universe are dropped). SimpleVob is u32 words,
/// TokenSet u64 words, both little-endian bit order: word i of the set is
/// words 2i and 2i+1 of the vob.
fn copy_vob(v: &SimpleVob, out: &mut TokenSet) {
    let src = v.as_slice();
    let n = out.universe();
    for (i, w) in out.words_mut().iter_mut().enumerate() {
        let lo = src.get(2 * i).copied().unwrap_or(0) as u64;
        let hi = src.get(2 * i + 1).copied().unwrap_or(0) as u64;
        *w = lo | (hi << 32);
    }
    if !n.is_multiple_of(64) {
        if let Some(last) = out.words_mut().last_mut() {
            *last &= (1u64 << (n % 64)) - 1;
        }
    }
}

/// An llguidance matcher used step by step like a zapspec `Constraint`.
pub struct LlgMatcher {
    m: Matcher,
    mask: SimpleVob,
}

impl LlgMatcher {
    /// Compiles a grammar (a JSON Schema through [`compact_schema`], or a
    /// Lark grammar) with `factory`.
    pub fn new(factory: &ParserFactory, grammar: TopLevelGrammar) -> anyhow::Result<Self> {
        let parser = factory.create_parser(grammar)?;
        let m = Matcher::new(Ok(parser));
        if let Some(e) = m.get_error() {
            anyhow::bail!("llguidance: {e}");
        }
        Ok(LlgMatcher {
            m,
            mask: SimpleVob::new(),
        })
    }

    /// Computes the mask (EOS when the grammar is complete) into `out`.
    pub fn fill_mask(&mut self, out: &mut TokenSet) -> anyhow::Result<()> {
        self.mask = self
            .m
            .compute_mask_or_eos()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        copy_vob(&self.mask, out);
        Ok(())
    }

    /// Consumes a token. EOS is not fed to llguidance (its matcher stops
    /// once the grammar is complete and refuses further tokens); it is
    /// checked against `Matcher::is_accepting` instead, so the protocol is
    /// that of a zapspec `Constraint`: `advance(eos)` succeeds iff the
    /// output is complete.
    pub fn advance(&mut self, t: TokenId, eos: TokenId) -> anyhow::Result<()> {
        if t == eos {
            return match self.m.is_accepting() {
                Ok(true) => Ok(()),
                Ok(false) => anyhow::bail!("llguidance: EOS before the grammar is complete"),
                Err(e) => anyhow::bail!("llguidance: {e}"),
            };
        }
        self.m.consume_token(t).map_err(|e| anyhow::anyhow!("{e}"))
    }
}

/// llguidance behind zapspec's [`Constraint`], so the speculative loop can
/// run with llguidance's masks in place of the Earley matcher's (the
/// baseline row of `compose`).
///
/// The protocol is the trait's: `advance` refuses a token without changing
/// the state (checked with `Matcher::validate_tokens` first, since an
/// invalid `consume_token` puts llguidance's matcher into its error
/// state), EOS is consumed here and never fed to llguidance (allowed iff
/// `Matcher::is_accepting`), `rollback` undoes EOS here and the rest in
/// llguidance, and `fork` is llguidance's `Clone`.
#[derive(Clone)]
pub struct LlgConstraint {
    m: Matcher,
    vocab_size: usize,
    eos: TokenId,
    /// Tokens consumed, EOS included.
    n: usize,
    finished: bool,
    /// `Matcher::is_accepting` after the last change (it needs `&mut`).
    accepting: bool,
}

impl LlgConstraint {
    /// Compiles `grammar` with `factory`, over `vocab`'s size and EOS.
    pub fn new(
        factory: &ParserFactory,
        grammar: TopLevelGrammar,
        vocab: &TokenVocab,
    ) -> anyhow::Result<Self> {
        let parser = factory.create_parser(grammar)?;
        let mut m = Matcher::new(Ok(parser));
        if let Some(e) = m.get_error() {
            anyhow::bail!("llguidance: {e}");
        }
        let accepting = m.is_accepting().unwrap_or(false);
        Ok(LlgConstraint {
            m,
            vocab_size: vocab.len(),
            eos: vocab.eos(),
            n: 0,
            finished: false,
            accepting,
        })
    }

    fn refresh(&mut self) {
        self.accepting = !self.finished && self.m.is_accepting().unwrap_or(false);
    }
}

impl Constraint for LlgConstraint {
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    fn eos(&self) -> TokenId {
        self.eos
    }

    fn fill_mask(&mut self, mask: &mut TokenSet) {
        mask.clear();
        if self.finished {
            return;
        }
        // `compute_mask` on a matcher stopped at the grammar's end would
        // put it into its error state; this one returns just EOS there. An
        // llguidance error leaves the mask empty (no token allowed).
        if let Ok(v) = self.m.compute_mask_or_eos() {
            copy_vob(&v, mask);
        }
        mask.remove(self.eos);
        if self.accepting {
            mask.insert(self.eos);
        }
    }

    fn advance(&mut self, t: TokenId) -> Result<(), Rejected> {
        let reject = |reason| Rejected {
            token: t,
            position: self.n,
            reason,
        };
        if self.finished {
            return Err(reject(RejectReason::Finished));
        }
        if t as usize >= self.vocab_size {
            return Err(reject(RejectReason::OutOfVocabulary));
        }
        if t == self.eos {
            if !self.accepting {
                return Err(reject(RejectReason::NotAllowed));
            }
            self.finished = true;
        } else {
            if self.m.validate_tokens(&[t]).unwrap_or(0) != 1 {
                return Err(reject(RejectReason::NotAllowed));
            }
            if self.m.consume_token(t).is_err() {
                return Err(reject(RejectReason::NotAllowed));
            }
        }
        self.n += 1;
        self.refresh();
        Ok(())
    }

    fn rollback(&mut self, n_tokens: usize) -> Result<(), RollbackError> {
        if n_tokens > self.n {
            return Err(RollbackError {
                requested: n_tokens,
                available: self.n,
            });
        }
        let mut k = n_tokens;
        if k > 0 && self.finished {
            self.finished = false;
            k -= 1;
        }
        if k > 0 {
            self.m.rollback(k).map_err(|_| RollbackError {
                requested: n_tokens,
                available: self.n,
            })?;
        }
        self.n -= n_tokens;
        self.refresh();
        Ok(())
    }

    fn is_accepting(&self) -> bool {
        self.accepting
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    fn num_tokens(&self) -> usize {
        self.n
    }
}

/// No look-ahead hooks: one-step look-ahead forks and fills masks.
impl LookAhead for LlgConstraint {}
