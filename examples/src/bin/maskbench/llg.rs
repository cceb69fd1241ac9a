//! llguidance (crates.io) with its own JSON Schema compiler, over a
//! `toktrie::TokTrie` built from the very same o200k token bytes (+ EOS).
//!
//! JSON options: llguidance's defaults except `whitespace_flexible: false`,
//! so that like our compiler (`Whitespace::Compact`) it allows no
//! whitespace between tokens (set through the schema's `x-guidance` key,
//! llguidance's documented override).

use std::sync::Arc;

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::SimpleVob;
use llguidance::{Matcher, ParserFactory};
use serde_json::Value;
use zapspec_core::{TokenId, Vocabulary};
use zapspec_vocab::TokenVocab;

use crate::adapter::{Adapter, CompileFailure, Compiled};

pub struct LlgAdapter {
    factory: Arc<ParserFactory>,
    eos: TokenId,
}

impl LlgAdapter {
    pub fn new(vocab: &TokenVocab) -> anyhow::Result<Self> {
        let env = examples::llg::tok_env(vocab);
        let mut factory = ParserFactory::new_simple(&env)?;
        factory.quiet();
        Ok(LlgAdapter {
            factory: Arc::new(factory),
            eos: vocab.eos(),
        })
    }
}

fn category(msg: &str) -> String {
    // The first clause of llguidance's message, without quoted parts.
    let first = msg.lines().next().unwrap_or("");
    let mut out = String::new();
    let mut in_quote = false;
    for c in first.chars() {
        if c == '"' || c == '`' || c == '\'' {
            in_quote = !in_quote;
            continue;
        }
        if !in_quote {
            out.push(c);
        }
    }
    let cut = out
        .find(':')
        .map(|i| i.max(12))
        .unwrap_or(out.len())
        .min(60);
    let s: String = out.chars().take(cut).collect();
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Adapter for LlgAdapter {
    fn compile(&mut self, schema: &Value) -> Result<Box<dyn Compiled>, CompileFailure> {
        let grammar = TopLevelGrammar::from_json_schema(examples::llg::compact_schema(schema));
        let parser = self
            .factory
            .create_parser(grammar)
            .map_err(|e| CompileFailure::new(category(&e.to_string()), e.to_string()))?;
        let base = Matcher::new(Ok(parser));
        if let Some(e) = base.get_error() {
            return Err(CompileFailure::new(category(&e), e));
        }
        Ok(Box::new(LlgCompiled {
            base,
            cur: None,
            mask: SimpleVob::new(),
            eos: self.eos,
        }))
    }
}

struct LlgCompiled {
    base: Matcher,
    cur: Option<Matcher>,
    mask: SimpleVob,
    eos: TokenId,
}

impl Compiled for LlgCompiled {
    fn start(&mut self) -> Result<(), String> {
        // A shallow clone shares the lexer caches of the compiled grammar.
        self.cur = Some(self.base.clone());
        Ok(())
    }

    fn compute_mask(&mut self) -> Result<(), String> {
        let m = self.cur.as_mut().ok_or("no matcher")?;
        self.mask = m.compute_mask_or_eos().map_err(|e| e.to_string())?;
        Ok(())
    }

    fn allowed(&self, t: TokenId) -> bool {
        (t as usize) < self.mask.len() && self.mask.is_allowed(t)
    }

    fn eos_allowed(&self) -> bool {
        self.allowed(self.eos)
    }

    fn advance(&mut self, t: TokenId) -> Result<(), String> {
        let m = self.cur.as_mut().ok_or("no matcher")?;
        m.consume_token(t).map_err(|e| e.to_string())
    }
}
