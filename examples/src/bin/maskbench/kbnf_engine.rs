//! kbnf (crates.io) on the grammar our JSON Schema compiler produces,
//! converted to KBNF text by [`examples::kbnf_ir`]; or (`kbnf-json`) on one
//! generic, schema-agnostic JSON grammar.
//!
//! The EOS token gets the bytes of the converter's end sentinel, so "EOS in
//! the mask" means "the JSON value is complete" (kbnf itself finishes
//! eagerly; see the converter's docs). kbnf runs with its default
//! configuration, or with its cache off (`EngineConfig::cache_enabled`).

use kbnf::{EngineLike, Token};
use serde_json::Value;
use zapspec_core::{TokenId, Vocabulary};
use zapspec_vocab::TokenVocab;

use crate::adapter::{Adapter, CompileFailure, Compiled};
use crate::zapspec::schema_grammar_with;
use examples::kbnf_ir::{generic_json_grammar, to_kbnf, END_SENTINEL};

pub struct KbnfAdapter {
    vocab: kbnf::Vocabulary,
    next_vocab: Option<kbnf::Vocabulary>,
    config: kbnf::Config,
    eos: TokenId,
    /// `Some(text)`: one fixed grammar for every schema.
    generic: Option<String>,
}

/// kbnf's vocabulary for ours: every token with bytes, EOS as the sentinel.
pub fn kbnf_vocab(vocab: &TokenVocab) -> anyhow::Result<kbnf::Vocabulary> {
    let mut toks = ahash::AHashMap::default();
    let mut strs = ahash::AHashMap::default();
    for t in 0..vocab.len() as TokenId {
        let bytes: Vec<u8> = if t == vocab.eos() {
            END_SENTINEL.to_string().into_bytes()
        } else {
            vocab.token_bytes(t).to_vec()
        };
        if bytes.is_empty() {
            continue;
        }
        strs.insert(t, String::from_utf8_lossy(&bytes).into_owned());
        toks.insert(t, Token(bytes.into_boxed_slice()));
    }
    kbnf::Vocabulary::new(toks, strs).map_err(|e| anyhow::anyhow!("kbnf vocabulary: {e:?}"))
}

impl KbnfAdapter {
    pub fn new(vocab: &TokenVocab, cache: bool, generic: bool) -> anyhow::Result<Self> {
        let mut config = kbnf::Config::default();
        config.engine_config.cache_enabled = cache;
        let generic = if generic {
            Some(to_kbnf(&generic_json_grammar(), true)?)
        } else {
            None
        };
        Ok(KbnfAdapter {
            vocab: kbnf_vocab(vocab)?,
            next_vocab: None,
            config,
            eos: vocab.eos(),
            generic,
        })
    }
}

impl Adapter for KbnfAdapter {
    fn prepare(&mut self) {
        // `Engine::with_config` takes the vocabulary by value: clone it
        // before the TTFM clock starts.
        self.next_vocab = Some(self.vocab.clone());
    }

    fn compile(&mut self, schema: &Value) -> Result<Box<dyn Compiled>, CompileFailure> {
        let text = match &self.generic {
            Some(t) => t.clone(),
            None => {
                // KBNF has no intersections
                let g = schema_grammar_with(schema, false)?;
                to_kbnf(&g, true)
                    .map_err(|e| CompileFailure::new("kbnf conversion", e.to_string()))?
            }
        };
        let vocab = self.next_vocab.take().unwrap_or_else(|| self.vocab.clone());
        let engine = kbnf::Engine::with_config(&text, vocab, self.config.clone()).map_err(|e| {
            let msg = e.to_string();
            let cat = format!(
                "kbnf: {}",
                msg.lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(50)
                    .collect::<String>()
            );
            CompileFailure::new(cat, msg)
        })?;
        Ok(Box::new(KbnfCompiled {
            engine,
            eos: self.eos,
        }))
    }
}

struct KbnfCompiled {
    engine: kbnf::Engine,
    eos: TokenId,
}

impl Compiled for KbnfCompiled {
    fn start(&mut self) -> Result<(), String> {
        // `reset` keeps kbnf's caches (they are per engine = per schema).
        self.engine.reset();
        Ok(())
    }

    fn compute_mask(&mut self) -> Result<(), String> {
        self.engine.compute_allowed_token_ids();
        Ok(())
    }

    fn allowed(&self, t: TokenId) -> bool {
        self.engine
            .allowed_token_ids_from_last_computation()
            .contains(t as usize)
    }

    fn eos_allowed(&self) -> bool {
        self.allowed(self.eos)
    }

    fn advance(&mut self, t: TokenId) -> Result<(), String> {
        match self.engine.try_accept_new_token(t) {
            Ok(kbnf::AcceptTokenResult::Ongoing) => Ok(()),
            Ok(kbnf::AcceptTokenResult::Finished) => Err("kbnf finished early".into()),
            Err(e) => Err(format!("{e:?}")),
        }
    }
}
