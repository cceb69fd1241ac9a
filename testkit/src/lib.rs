//! # zapspec-testkit
//!
//! Small, deterministic stand-ins for the real pieces, so every crate can be
//! tested (and every experiment run) without a network or a trained model:
//!
//! | module | holds |
//! |---|---|
//! | [`toy`] | seeded toy models: [`toy::BigramLm`] (a `LanguageModel` whose logits hash the previous token), [`toy::ClosureLm`] (logits from a closure), [`toy::ToyDiffusion`] (a `DiffusionModel`), [`toy::splitmix64`] |
//! | [`trie`] | [`TokenTrie`] and [`TrieConstraint`]: a finite language of token sequences as a `Constraint` |
//! | [`bytelm`] | [`bytelm::CharBigramLm`] (a byte bigram fitted on a corpus, with a temperature) and [`bytelm::NoisyLm`] (a seeded noisy draft of any model) |
//! | [`dyck`] | [`DyckSpec`] and [`DyckConstraint`]: the bounded Dyck language `D_{d,L}` as a `Constraint` |
//!
//! The matchers double as the reference implementations of
//! [`zapspec_core::Constraint`] (they implement its look-ahead extension
//! too). Costs: every toy model call is `O(|V|)` per row; the matchers are
//! `O(1)` per advance and `O(|A_t|)` per sparse mask.

#![warn(missing_docs)]

pub mod bytelm;
pub mod dyck;
pub mod hostile;
pub mod toy;
pub mod trie;

pub use dyck::{DyckConstraint, DyckRefusal, DyckSpec};
pub use trie::{TokenTrie, TrieConstraint};

#[cfg(test)]
mod tests;
