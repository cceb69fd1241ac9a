//! Tier 3 (paper §5.5): exact Φ by dynamic programming, for the tractable
//! subclasses — bounded Dyck, finite languages, regular languages.
//!
//! | module | language | model | DP over |
//! |---|---|---|---|
//! | [`enumerate`] | any constraint whose language below the prefix is finite (bounded Dyck `D_{d,L}`, a finite token trie, …) | any [`LanguageModel`](zapspec_core::LanguageModel) | the tree of valid prefixes (one forward per prefix, memoised) |
//! | [`tree`] | any finite-language constraint, enumerated from any prefix | any | the same tree, stored ([`PrefixTree`]; same per-prefix expansion and backward step as [`enumerate`]): exact `μ*`, `μ^proj`, any kernel's terminal law, Φ at every prefix |
//! | [`trie`] | a finite token trie ([`TrieConstraint`](crate::lang::TrieConstraint)) | any | trie nodes (backward DP, one forward per node) |
//! | [`dyck`] | bounded Dyck ([`DyckConstraint`](crate::lang::DyckConstraint)) | finite-state (Markov) LMs | (stack, length, LM state) |
//! | [`regular`] | a DFA | finite-state LMs | (DFA state, LM state) |
//! | [`budget`] | `L_{n,K} = {x ∈ {0,1}ⁿ : Σx ≤ K}` (App. H.4) | iid Bernoulli(p₁) | (t, c) — 496 states for `L_{30,15}` |
//!
//! Exact Φ is #P-hard for general CFGs (Prop. 8); these estimators return
//! [`PhiError::TooLarge`](crate::PhiError::TooLarge) instead of running away.

pub mod budget;
pub mod dyck;
pub mod enumerate;
pub mod regular;

pub mod tree;
pub mod trie;

pub use enumerate::{Exact, ExactConfig};
pub use tree::PrefixTree;
