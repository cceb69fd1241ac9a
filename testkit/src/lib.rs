//! # zapspec-testkit
//!
//! Small, deterministic stand-ins for the real pieces, so every crate can be
//! tested (and every experiment run) without a network or a trained model:
//!
//! | module | holds |
//! |---|---|
//! | [`toy`] | seeded toy models: [`toy::BigramLm`] (a `LanguageModel` whose logits hash the previous token), [`toy::ClosureLm`] (logits from a closure), [`toy::ToyDiffusion`] (a `DiffusionModel`), [`toy::Windowed`] (any model behind a short window), [`toy::splitmix64`] (core's hash, re-exported) |
//! | [`trie`] | [`TokenTrie`] and [`TrieConstraint`]: a finite language of token sequences as a `Constraint` (defined in `zapspec-phi`'s `lang`, re-exported) |
//! | [`bytelm`] | [`bytelm::CharBigramLm`] (a byte bigram fitted on a corpus, with a temperature) and [`bytelm::NoisyLm`] (a seeded noisy draft of any model) |
//! | [`stats`] | sample statistics against an exact law: TV of counts, bootstrap intervals, noise floors, χ² and G tests, structural statistics of Dyck samples (the future-validity experiments' study code) |
//! | [`dyck`] | [`DyckSpec`] and [`DyckConstraint`]: the bounded Dyck language `D_{d,L}` as a `Constraint` (defined in `zapspec-phi`'s `lang`, re-exported) |
//! | [`hostile`] | the hostile-input tests' timing helpers: [`hostile::timed`] / [`hostile::timed_within`] (wall time of a closure against a generous bound, the crate's one clock read) and [`hostile::peak_rss_kib`] |
//!
//! The matchers double as the reference implementations of
//! [`zapspec_core::Constraint`] (they implement its look-ahead extension
//! too). Costs: every toy model call is `O(|V|)` per row; the matchers are
//! `O(1)` per advance and `O(|A_t|)` per sparse mask.

#![warn(missing_docs)]

pub mod bytelm;
pub mod hostile;
pub mod stats;
pub mod toy;

pub use zapspec_phi::lang::{dyck, trie};
pub use zapspec_phi::lang::{DyckConstraint, DyckRefusal, DyckSpec, TokenTrie, TrieConstraint};

#[cfg(test)]
mod tests;
