//! llguidance (crates.io) over a zapspec [`TokenVocab`]: the baseline engine
//! of the MaskBench harness and of the end-to-end experiments.

use std::sync::Arc;

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::{ApproximateTokEnv, SimpleVob, TokEnv, TokRxInfo, TokTrie};
use llguidance::{JsonCompileOptions, Matcher, ParserFactory};
use zapspec_core::{TokenId, TokenSet, Vocabulary};
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
        // SimpleVob is u32 words, TokenSet u64 words, both little-endian
        // bit order: word i of the set is words 2i and 2i+1 of the vob.
        let src = self.mask.as_slice();
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
