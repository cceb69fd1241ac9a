//! # zapspec — constrained speculative decoding built from parts
//!
//! The workspace's crates each implement one paper's piece behind a shared
//! trait; this crate puts them into one decoding loop. A [`Pipeline`] is
//! four parts and a few settings, each part a type parameter swapped
//! through its trait — nothing is special-cased by type:
//!
//! | part | trait | in the workspace |
//! |---|---|---|
//! | target model | [`LanguageModel`] | toy LMs (`zapspec-testkit`), the shipped byte models and SmolLM2 (`zapspec-backend`), wrapped in [`Tempered`] by the builder |
//! | constraint | [`Constraint`] | Earley matcher of a GBNF grammar or JSON Schema ([`gbnf`], [`json_schema`]), Dyck and token tries (`zapspec-testkit`), Copy-as-Decode's FSM (`zapspec-copy`), [`Unconstrained`] |
//! | drafter | [`Drafter`] | [`NoDraft`] (plain constrained decoding), [`PromptLookup`] (n-gram), [`CopyDraft`] (Copy-as-Decode copies of a source document), any [`LanguageModel`] as a draft model (self-speculative: the target cut after its first layers) |
//! | verifier | [`VerifierKind`] + [`PhiEstimator`] | Leviathan (samples `μ^proj`, like plain constrained sampling), FVO-Spec with any Φ estimator ([`Uniform`], [`OneStepCheap`], `zapspec_phi::MonteCarlo`, exact Φ for finite languages) |
//!
//! Settings: greedy or sampled, temperature ([`Tempered`]), top-p
//! ([`zapspec_verify::SpecConfig::top_p`]), seed, draft length γ, a prompt,
//! and tree mode ([`Builder::tree`] with a [`TreeConfig`]: draft trees,
//! e.g. from [`TreeLookup`], cut by the constraint's masks at every node,
//! scored in one target call, walked losslessly).
//!
//! ```
//! use std::sync::Arc;
//! use zapspec::{Builder, PromptLookup};
//! use zapspec_testkit::bytelm::CharBigramLm;
//! use zapspec_vocab::TokenVocab;
//!
//! let model = CharBigramLm::fit(&[r#"{"id":12,"tags":["a","b"]}"#], 0.1, 1.0);
//! let schema = serde_json::json!({"type": "object", "properties": {"id": {"type": "integer"}},
//!                                 "required": ["id"], "additionalProperties": false});
//! let json = zapspec::json_schema(Arc::new(TokenVocab::bytes()), &schema)?;
//! let out = Builder::new(model, json).drafter(PromptLookup::default())
//!     .temperature(0.8).top_p(0.95).seed(7)
//!     .build()?.generate()?;
//! let text = String::from_utf8(out.tokens.iter().map(|&t| t as u8).collect()).unwrap();
//! assert!(text.starts_with(r#"{"id":"#), "{text}");
//! # Ok::<(), zapspec::Error>(())
//! ```
//!
//! Swapping a part is one call: `.fvo_spec(zapspec::OneStepCheap::new())`
//! verifies against the Φ̂-reweighted target, `.drafter(draft_model)`
//! drafts with a model, `.greedy()` decodes greedily.
//!
//! On a real model the same five lines run SmolLM2-135M under a JSON
//! Schema: `cargo run --release -p examples --bin compose` (README).
//!
//! ## Costs
//!
//! A round costs one target forward over the drafted block (plus the
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
mod tempered;
mod unconstrained;

pub use builder::{Builder, Pipeline};
pub use constraints::{earley, gbnf, json_schema};
pub use tempered::Tempered;
pub use unconstrained::Unconstrained;

pub use zapspec_core::{Constraint, LanguageModel, TokenId};
pub use zapspec_phi::{
    CandidateCut, MonteCarlo, MonteCarloConfig, OneStepCheap, PhiEstimator, TailValue, Uniform,
    WithModel,
};
pub use zapspec_verify::{
    CopyDraft, Drafter, Generation, NoDraft, PromptLookup, RoundStats, SpecConfig, TreeConfig,
    TreeLookup, TreeVerify, VerifierKind,
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
    /// A grammar that does not parse or simplify.
    #[error(transparent)]
    Grammar(#[from] zapspec_grammar::GrammarError),
    /// A JSON Schema the compiler refuses.
    #[error(transparent)]
    Schema(#[from] zapspec_jsonschema::SchemaError),
    /// The Earley engine's compile (limits included).
    #[error(transparent)]
    Earley(#[from] zapspec_earley::EarleyError),
}
