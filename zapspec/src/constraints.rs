//! Grammar constraints in one call: GBNF or a JSON Schema compiled into
//! zapspec's Earley matcher over a vocabulary (`zapspec-grammar` /
//! `zapspec-jsonschema` → `simplify` → `zapspec-earley`). Each call builds
//! a fresh [`Engine`] (its own token trie and mask cache); to share one
//! engine across grammars, call `zapspec_earley` directly.
//!
//! Cost: the engine's token trie over the vocabulary (tens of ms for 200k
//! tokens) plus the grammar's compile (MaskBench: ~1 ms median).

use std::sync::Arc;

use zapspec_core::Vocabulary;
use zapspec_earley::{EarleyMatcher, Engine, EngineConfig};
use zapspec_grammar::{simplify, Grammar, SimplifyConfig};
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, EARLEY_MAX_REGEX_REPEAT};

use crate::Error;

/// The Earley matcher of a GBNF grammar over `vocab`.
pub fn gbnf<V: Vocabulary + Send + Sync + 'static>(
    vocab: Arc<V>,
    src: &str,
) -> Result<EarleyMatcher, Error> {
    earley(vocab, Grammar::from_gbnf(src)?)
}

/// The Earley matcher of the language of JSON documents valid under
/// `schema` (compact JSON, the compiler's default options but strings of
/// any length as one counted terminal, `EARLEY_MAX_REGEX_REPEAT`) over
/// `vocab`.
pub fn json_schema<V: Vocabulary + Send + Sync + 'static>(
    vocab: Arc<V>,
    schema: &serde_json::Value,
) -> Result<EarleyMatcher, Error> {
    let opts = JsonSchemaOptions {
        max_regex_repeat: EARLEY_MAX_REGEX_REPEAT,
        ..JsonSchemaOptions::default()
    };
    earley(vocab, compile_json_schema(schema, &opts)?)
}

/// [`json_schema`] of a schema given as JSON text (invalid JSON is
/// [`Error::Json`] with its line and column).
pub fn json_schema_str<V: Vocabulary + Send + Sync + 'static>(
    vocab: Arc<V>,
    schema: &str,
) -> Result<EarleyMatcher, Error> {
    json_schema(vocab, &crate::parse_json(schema)?)
}

/// The Earley matcher of a grammar of the IR over `vocab` (simplified
/// first, default engine configuration).
pub fn earley<V: Vocabulary + Send + Sync + 'static>(
    vocab: Arc<V>,
    grammar: Grammar,
) -> Result<EarleyMatcher, Error> {
    let g = simplify(&grammar, &SimplifyConfig::default())?.grammar;
    Ok(Engine::new(vocab)
        .compile(&g, EngineConfig::default())?
        .matcher())
}
