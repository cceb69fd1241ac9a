//! # zapspec-core
//!
//! The shared vocabulary every zapspec crate speaks (see `ARCHITECTURE.md`):
//!
//! | module | holds |
//! |---|---|
//! | [`vocab`] | [`TokenId`], the [`Vocabulary`] trait, [`TokenVocab`] with loaders for the tiktoken BPEs (o200k, cl100k, r50k) and HF `tokenizer.json` files |
//! | [`token_set`] | [`TokenSet`], a bitset over the vocabulary |
//! | [`constraint`] | the [`Constraint`] matcher trait and two reference implementations: a finite token trie ([`TrieConstraint`]) and a bounded Dyck automaton ([`DyckConstraint`]) |
//! | [`model`] | the [`LanguageModel`] and [`DiffusionModel`] traits |
//! | [`toy`] | deterministic seeded toy models ([`toy::BigramLm`], [`toy::ToyDiffusion`]) so every crate can be tested without a real network |
//! | [`prob`] | log-space probability helpers: log-softmax, masked renormalisation, seeded sampling, TV, KL |
//!
//! Crates meet only through these traits: an Earley matcher, a Dyck automaton,
//! a finite trie and the Copy-as-Decode FSM are interchangeable behind
//! [`Constraint`]; a toy LM, a trained CPU model and a CUDA model behind
//! [`LanguageModel`].

pub mod constraint;
pub mod model;
pub mod prob;
pub mod token_set;
pub mod toy;
pub mod vocab;

pub use constraint::{
    rollback_eos, Constraint, DyckConstraint, DyckSpec, Rejected, RollbackError, TrieConstraint,
};
pub use model::{BlockMarginals, DiffusionModel, LanguageModel, Logits, ModelError};
pub use token_set::TokenSet;
pub use vocab::{TokenId, TokenVocab, Vocabulary, VocabError};
