//! Grammar constraints in one call: GBNF, a JSON Schema, a structural tag
//! or a model family's tool calls compiled into zapspec's Earley matcher
//! over a vocabulary.
//!
//! ## One path
//!
//! A JSON Schema takes exactly two steps, both here:
//! [`zapspec_jsonschema::compile_json_schema`] (schema → grammar IR) and
//! [`Engine::compile`] (IR → [`CompiledGrammar`]). [`compile_json_schema`]
//! is that path; [`json_schema`] and [`crate::Model::json_schema`] call
//! it, and so does MaskBench's zapspec adapter
//! (`examples/src/bin/maskbench/zapspec.rs`), so the benchmark times the
//! call a user makes (the Python package, which does not depend on the
//! facade, takes the same two steps). No other pass runs between the two steps: the
//! engine takes the IR as it is (useless, nullable and unit rules
//! included), and `zapspec_grammar::simplify` stays a separate tool for
//! grammar inspection. Masks with and without `simplify` are compared on
//! every MaskBench schema by `examples --bin simplify_masks`.
//!
//! Cost: the [`Engine`] (its vocabulary index: token trie, vocabulary
//! slices; tens of ms for 200k tokens) is built once per vocabulary and
//! shared — [`crate::Model`] keeps one, and [`compile_json_schema`] /
//! [`compile_gbnf`] take one; the free functions [`json_schema`],
//! [`gbnf`] and [`earley`] build a fresh one per call, for one-off use.
//! A schema's compile is then ~0.3 ms at the median of MaskBench's small
//! splits (see `examples/results/maskbench/`).

use std::sync::Arc;

use zapspec_core::Vocabulary;
use zapspec_earley::{CompiledGrammar, EarleyMatcher, Engine, EngineConfig};
use zapspec_grammar::Grammar;
use zapspec_jsonschema::{JsonSchemaOptions, EARLEY_MAX_REGEX_REPEAT};

use crate::Error;

/// The JSON Schema compiler options of the facade: the compiler's
/// defaults (compact JSON, `oneOf` only where provably exact, specification
/// formats enforced or refused, unknown formats as annotations), with
/// strings of any length as one counted terminal
/// ([`EARLEY_MAX_REGEX_REPEAT`], what the Earley engine's counted
/// automata take).
pub fn json_schema_options() -> JsonSchemaOptions {
    JsonSchemaOptions {
        max_regex_repeat: EARLEY_MAX_REGEX_REPEAT,
        ..JsonSchemaOptions::default()
    }
}

/// The facade's one JSON Schema path: `schema` → grammar IR under `opts`
/// ([`zapspec_jsonschema::compile_json_schema`]) → compiled for `engine`'s
/// vocabulary under `config`. Refusals are [`Error::Schema`] (a JSON
/// pointer and the keyword), engine limits [`Error::Earley`].
pub fn compile_json_schema(
    engine: &Engine,
    schema: &serde_json::Value,
    opts: &JsonSchemaOptions,
    config: EngineConfig,
) -> Result<Arc<CompiledGrammar>, Error> {
    let g = zapspec_jsonschema::compile_json_schema(schema, opts)?;
    Ok(engine.compile(&g, config)?)
}

/// A GBNF grammar compiled for `engine`'s vocabulary under `config`
/// (parse errors with their position are [`Error::Grammar`]).
pub fn compile_gbnf(
    engine: &Engine,
    src: &str,
    config: EngineConfig,
) -> Result<Arc<CompiledGrammar>, Error> {
    Ok(engine.compile(&Grammar::from_gbnf(src)?, config)?)
}

/// A structural tag (XGrammar's format, `{"type": "structural_tag",
/// "format": …}`; crate `zapspec-structtag`) compiled for `engine`'s
/// vocabulary: tool calls, reasoning blocks, free text with triggers.
/// Refusals are [`Error::StructTag`] at the tag's JSON pointer.
pub fn compile_structural_tag(
    engine: &Engine,
    tag: &serde_json::Value,
    opts: &zapspec_structtag::StructTagOptions,
    config: EngineConfig,
) -> Result<Arc<CompiledGrammar>, Error> {
    let g = zapspec_structtag::compile_structural_tag(tag, opts)?;
    Ok(engine.compile(&g, config)?)
}

/// `family`'s tool-call format (`zapspec_structtag::builtin`: `qwen_3`
/// for Hermes-style `<tool_call>` JSON, `llama`, `deepseek_v3_1`, `kimi`,
/// `exaone`) for `tools` under `opts` (tool choice, reasoning, parallel
/// calls), compiled for `engine`'s vocabulary.
pub fn compile_tool_calls(
    engine: &Engine,
    family: &str,
    tools: &[zapspec_structtag::Tool],
    opts: &zapspec_structtag::ToolCallOptions,
    config: EngineConfig,
) -> Result<Arc<CompiledGrammar>, Error> {
    let tag = zapspec_structtag::tool_calling_format(family, tools, opts)?;
    compile_structural_tag(
        engine,
        &tag,
        &zapspec_structtag::StructTagOptions::default(),
        config,
    )
}

/// The Earley matcher of a GBNF grammar over `vocab` (a fresh [`Engine`];
/// see [`compile_gbnf`] to share one).
pub fn gbnf<V: Vocabulary + Send + Sync + 'static>(
    vocab: Arc<V>,
    src: &str,
) -> Result<EarleyMatcher, Error> {
    Ok(compile_gbnf(&Engine::new(vocab), src, EngineConfig::default())?.matcher())
}

/// The Earley matcher of the language of JSON documents valid under
/// `schema` over `vocab`: [`compile_json_schema`] with
/// [`json_schema_options`] and the default engine configuration, on a
/// fresh [`Engine`].
pub fn json_schema<V: Vocabulary + Send + Sync + 'static>(
    vocab: Arc<V>,
    schema: &serde_json::Value,
) -> Result<EarleyMatcher, Error> {
    let engine = Engine::new(vocab);
    Ok(compile_json_schema(
        &engine,
        schema,
        &json_schema_options(),
        EngineConfig::default(),
    )?
    .matcher())
}

/// [`json_schema`] of a schema given as JSON text (invalid JSON is
/// [`Error::Json`] with its line and column).
pub fn json_schema_str<V: Vocabulary + Send + Sync + 'static>(
    vocab: Arc<V>,
    schema: &str,
) -> Result<EarleyMatcher, Error> {
    json_schema(vocab, &crate::parse_json(schema)?)
}

/// The Earley matcher of a grammar of the IR over `vocab` (as it is, the
/// default engine configuration, a fresh [`Engine`]).
pub fn earley<V: Vocabulary + Send + Sync + 'static>(
    vocab: Arc<V>,
    grammar: Grammar,
) -> Result<EarleyMatcher, Error> {
    Ok(Engine::new(vocab)
        .compile(&grammar, EngineConfig::default())?
        .matcher())
}
