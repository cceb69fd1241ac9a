//! # zapspec — constrained speculative decoding built from parts
//!
//! The workspace's crates each implement one paper's piece behind a shared
//! trait; this crate puts them into one decoding loop. A [`Pipeline`] is
//! four parts and a few settings, each part a type parameter swapped
//! through its trait — nothing is special-cased by type:
//!
//! | part | trait | in the workspace |
//! |---|---|---|
//! | target model | [`LanguageModel`] | [`Model::load`] (a GGUF file or a safetensors checkpoint with its tokenizer; `zapspec-backend`), toy LMs (`zapspec-testkit`), wrapped in [`Tempered`] by the builder |
//! | constraint | [`Constraint`] | Earley matcher of a GBNF grammar or JSON Schema ([`gbnf`], [`json_schema`]), Dyck and token tries (`zapspec-testkit`), Copy-as-Decode's FSM (`zapspec-copy`), [`Unconstrained`] |
//! | drafter | [`Drafter`] | [`NoDraft`] (plain constrained decoding), [`PromptLookup`] (n-gram), [`CopyDraft`] (Copy-as-Decode copies of a source document), any [`LanguageModel`] as a draft model (self-speculative: the target cut after its first layers) |
//! | verifier | [`VerifierKind`] + [`PhiEstimator`] | Leviathan (samples `μ^proj`, like plain constrained sampling), FVO-Spec with any Φ estimator ([`Uniform`], [`OneStepCheap`], `zapspec_phi::MonteCarlo`, exact Φ for finite languages) |
//!
//! Settings: greedy or sampled, temperature ([`Tempered`]), top-p
//! ([`zapspec_verify::SpecConfig::top_p`]), seed, draft length γ, a length
//! limit, stop strings, a [`Tokenizer`] (text and chat prompts, text out,
//! streaming), and tree mode ([`Builder::tree`] with a [`TreeConfig`]: draft trees,
//! e.g. from [`TreeLookup`], cut by the constraint's masks at every node,
//! scored in one target call, walked losslessly), and grammar-forced
//! tokens ([`Builder::forced_tokens`], on by default: tokens the constraint
//! leaves no choice over are committed without sampling and scored with
//! the next draft).
//!
//! On a real model — SmolLM2-135M-Instruct, fetched by
//! `scripts/fetch-smollm2.sh` — a [`Model`] is loaded by path with its
//! tokenizer and chat template, a pipeline is built once and called per
//! prompt:
//!
//! ```no_run
//! use zapspec::{Message, PromptLookup, StopReason};
//!
//! let model = zapspec::Model::load("models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")?;
//! let schema = serde_json::json!({"type": "object", "properties": {"title": {"type": "string"}},
//!                                 "required": ["title"]});
//! let mut pipe = model.builder(model.json_schema(&schema)?)  // constrained by the schema
//!     .drafter(PromptLookup::default())                      // or NoDraft, CopyDraft, a draft model
//!     .greedy().max_tokens(200)
//!     .build()?;
//! let out = pipe.generate_chat(&[Message::user("Name a meeting. Answer in JSON.")])?;
//! println!("{} ({:?}, {} target calls)", out.text, out.stop, out.stats.target_calls);
//! assert!(matches!(out.stop, StopReason::Eos | StopReason::ConstraintFinished | StopReason::MaxTokens));
//! pipe.generate_stream("Another one: ", |piece| print!("{piece}"))?;  // text as it is decided
//! # Ok::<(), zapspec::Error>(())
//! ```
//!
//! The same loop on a toy model (any [`LanguageModel`]; here a character
//! bigram over the byte vocabulary), with a tokenizer for text output:
//!
//! ```
//! use std::sync::Arc;
//! use zapspec::{Builder, Prompt, PromptLookup, StopReason, TokenVocab, Tokenizer};
//! use zapspec_testkit::bytelm::CharBigramLm;
//!
//! let model = CharBigramLm::fit(&[r#"{"id":12,"tags":["a","b"]}"#], 0.1, 1.0);
//! let schema = serde_json::json!({"type": "object", "properties": {"id": {"type": "integer"}},
//!                                 "required": ["id"], "additionalProperties": false});
//! let vocab = Arc::new(TokenVocab::bytes());
//! let json = zapspec::json_schema(vocab.clone(), &schema)?;
//! let mut pipe = Builder::new(model, json).drafter(PromptLookup::default())
//!     .tokenizer(Tokenizer::new(vocab))
//!     .temperature(0.8).top_p(0.95).seed(7)
//!     .build()?;
//! let out = pipe.generate(Prompt::default())?;
//! assert!(out.text.starts_with(r#"{"id":"#), "{}", out.text);
//! assert!(out.stop.is_complete() || out.stop == StopReason::MaxTokens);
//! # Ok::<(), zapspec::Error>(())
//! ```
//!
//! Swapping a part is one call: `.fvo_spec(zapspec::OneStepCheap::new())`
//! verifies against the Φ̂-reweighted target, `.drafter(draft_model)`
//! drafts with a model, `.greedy()` decodes greedily. With
//! `.drafter(NoDraft)` the Φ̂-reweighted target is sampled token by token:
//! plain decoding with the future-validity correction (the paper's Doob
//! transform with h = Φ̂), `OneStepCheap::bounded(ε)` bounding the TV error
//! its cut adds per position (reported in `RoundStats`). The Python
//! package's counterpart is `GrammarMatcher.apply_phi_bias_inplace`.
//!
//! A [`Generation`] carries the tokens, their text, the [`StopReason`]
//! (`Eos`, `ConstraintFinished`, `MaxTokens`, `StopString`) and the
//! round counters; a length limit is a stop reason, never an error.
//! `cargo run --release -p examples --bin compose` runs every drafter and
//! verifier on SmolLM2 (README).

//! ## Costs
//!
//! A round costs one target forward over the grammar-forced tokens and
//! the drafted block (plus the
//! drafter's own work: nothing for [`NoDraft`], a context scan for
//! [`PromptLookup`], one draft forward per token for a draft model), one
//! mask per verified position, and, under FVO-Spec, one Φ̂ call per
//! position. [`Tempered`] adds one multiply per logit when `T ≠ 1`; top-p
//! sorts the valid set at each position.
//!
//! ## Correctness
//!
//! `tests/compose.rs`: greedy output of every drafter × verifier equals
//! plain constrained greedy decoding (an independent loop); sampled
//! Leviathan output has the law of plain constrained sampling, and
//! FVO-Spec with exact Φ has `μ*` (χ² goodness of fit against the exact
//! laws of `zapspec_verify::PrefixTree`), with and without temperature and
//! top-p — in linear and in tree mode.

mod builder;
mod constraints;
#[cfg(feature = "models")]
mod model;
mod tempered;
mod text;
mod unconstrained;

pub use builder::{Builder, Generation, Pipeline};
pub use constraints::{
    compile_gbnf, compile_json_schema, compile_structural_tag, compile_tool_calls, earley, gbnf,
    json_schema, json_schema_options, json_schema_str,
};
#[cfg(feature = "models")]
pub use model::{LoadOptions, Model};
pub use tempered::Tempered;
pub use text::{Prompt, Tokenizer};
pub use unconstrained::Unconstrained;
pub use zapspec_vocab::{ChatMl, Message, Role, TokenVocab};

pub use zapspec_core::{Constraint, LanguageModel, TokenId};
pub use zapspec_earley::{CompiledGrammar, EarleyMatcher, Engine, EngineConfig};
pub use zapspec_jsonschema::JsonSchemaOptions;
pub use zapspec_phi::{
    CandidateCut, MonteCarlo, MonteCarloConfig, OneStepCheap, PhiEstimator, TailValue, Uniform,
    WithModel,
};
pub use zapspec_structtag::{Reasoning, StructTagOptions, Tool, ToolCallOptions, ToolChoice};
pub use zapspec_verify::{
    CopyDraft, Drafter, NoDraft, PromptLookup, RoundReport, RoundStats, SpecConfig, StopReason,
    TreeConfig, TreeLookup, TreeVerify, VerifierKind,
};

/// What building or running a pipeline can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting out of range (the message names it).
    #[error("configuration: {0}")]
    Config(String),
    /// The model and the constraint range over different vocabularies.
    #[error("the model scores {model} tokens, the constraint ranges over {constraint}")]
    VocabMismatch {
        /// The model's vocabulary size.
        model: usize,
        /// The constraint's.
        constraint: usize,
    },
    /// The loop (configuration, model, constraint or estimator errors).
    #[error(transparent)]
    Verify(#[from] zapspec_verify::VerifyError),
    /// A grammar that does not parse.
    #[error(transparent)]
    Grammar(#[from] zapspec_grammar::GrammarError),
    /// A JSON Schema the compiler refuses.
    #[error(transparent)]
    Schema(#[from] zapspec_jsonschema::SchemaError),
    /// A structural tag (or a tool-call format) the compiler refuses, at
    /// its JSON pointer.
    #[error(transparent)]
    StructTag(#[from] zapspec_structtag::StructTagError),
    /// The Earley engine's compile (limits included).
    #[error(transparent)]
    Earley(#[from] zapspec_earley::EarleyError),
    /// Loading or running a model (a missing file, a bad checkpoint, a
    /// backend failure).
    #[error(transparent)]
    Model(#[from] zapspec_core::ModelError),
    /// A tokenizer that does not load, or text it cannot encode.
    #[error(transparent)]
    Vocab(#[from] zapspec_vocab::VocabError),
    /// JSON text (a schema) that does not parse.
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser says.
        message: String,
    },
}

/// Parses JSON text into a value, errors with their position.
fn parse_json(text: &str) -> Result<serde_json::Value, Error> {
    serde_json::from_str(text).map_err(|e| Error::Json {
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}
