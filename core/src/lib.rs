//! # zapspec-core
//!
//! The shared vocabulary every zapspec crate speaks (see `ARCHITECTURE.md`):
//!
//! | module | holds |
//! |---|---|
//! | [`vocab`] | [`TokenId`] and the [`Vocabulary`] trait (loaders of real tokenizers: `zapspec-vocab`) |
//! | [`token_set`] | [`TokenSet`], a bitset over the vocabulary |
//! | [`constraint`] | the [`Constraint`] matcher trait, [`Matcher`] (a language's own transitions; the EOS / finished / rollback bookkeeping is derived once), the [`LookAhead`] extension of one-step look-ahead, typed refusals ([`Rejected`], [`RejectReason`]); reference matchers — a finite token trie, a bounded Dyck automaton — live in `zapspec-testkit` |
//! | [`draft_tree`] | [`DraftTree`] (a tree of tokens off a context, drafted or grown by a model; a child of the root has depth 1) and [`draft_tree_masks`] (the constraint's mask at every node in one walk, rolled back on rejection) |
//! | [`model`] | the [`LanguageModel`] and [`DiffusionModel`] traits ([`LanguageModel::tree_logits`] scores a draft tree, [`LanguageModel::tree_logits_from`] the nodes appended to one, level by level over a cache) |
//! | [`hash`] | [`hash::splitmix64`], the one mixing hash of the toy models' seeds and hashed indices |
//! | [`prob`] | log-space probability helpers generic over `num_traits::Float` (f32 logits in, f64 laws out): log-softmax, masked renormalisation, seeded sampling, TV, KL |
//!
//! Crates meet only through these traits: an Earley matcher, a Dyck automaton,
//! a finite trie and the Copy-as-Decode FSM are interchangeable behind
//! [`Constraint`]; a toy LM, a trained CPU model and a CUDA model behind
//! [`LanguageModel`].
//!
//! Entry points: implement [`Matcher`] (or [`Constraint`] by hand) for a
//! language, [`LanguageModel`] / [`DiffusionModel`] for a model,
//! [`Vocabulary`] for a tokenizer. Costs: a [`TokenSet`] is `|V|/64` words
//! and its set operations are word-parallel; nothing in the traits
//! allocates except the provided conveniences ([`Constraint::mask`],
//! [`Constraint::forced_tokens`], [`LanguageModel::logits_for`]). Depends on
//! no tokenizer or model crate (`thiserror`, `ndarray`, `num-traits`,
//! `rand`, `rand_chacha` only).

pub mod constraint;
pub mod draft_tree;
pub mod hash;
pub mod model;
pub mod prob;
pub mod token_set;
pub mod vocab;

pub use constraint::{
    AllowedRef, Constraint, LookAhead, Matcher, RejectReason, Rejected, RollbackError,
    SuccessorClasses,
};
pub use draft_tree::{draft_tree_masks, DraftTree, DraftTreeError, DraftTreeMasks, NodeMask};
pub use model::{BlockMarginals, DiffusionModel, LanguageModel, Logits, ModelError};
pub use token_set::TokenSet;
pub use vocab::{TokenId, Vocabulary};
