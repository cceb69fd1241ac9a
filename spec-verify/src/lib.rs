//! # zapspec-verify
//!
//! Speculative decoding under a grammar constraint, with three verifiers on
//! one speculate–verify–rollback loop (future-validity paper, §3–4):
//!
//! | verifier | target it rejects against | output law |
//! |---|---|---|
//! | [`VerifierKind::Leviathan`] | masked `p̃_t` (the LMS class, axioms B1–B3) | `μ^proj` (Proposition 3) |
//! | [`VerifierKind::FvoSpec`] | `p_t·Φ̂_t`, renormalised on `A_t` | `μ*` when Φ̂ = Φ (Proposition 6); within `Σ_t δ_t/(Φ̄_t−δ_t)` otherwise (Theorem 7) |
//! | [`VerifierKind::Equality`] | accept iff draft = independent target sample | biased: one-step marginal `p_i(1+q_i−⟨p,q⟩)` (App. H.7) |
//!
//! Modules, named after the paper's concepts:
//!
//! | module | holds |
//! |---|---|
//! | [`config`] | [`SpecConfig`] (γ, sampled/greedy, verifier, length cap, [`ForcedTokens`]) |
//! | [`forced`] | grammar-forced tokens: [`forced::advance_forced`] commits the tokens a singleton mask leaves no choice over, scored in the round's one target forward with the draft (jump-forward inside speculation); why the output law is unchanged |
//! | [`phi`] | the target law at one position: masked `p̃_t`, or Doob-transformed by per-candidate `log Φ̂_t(y)` |
//! | [`verify`] | the one-position kernels: Leviathan rejection, SpecInfer's multi-step speculative sampling over several i.i.d. drafts, equality diagnostic, greedy; [`DraftLaw`] |
//! | [`drafter`] | the [`Drafter`] trait and its drafters: a draft model (any `LanguageModel`), prompt lookup ([`PromptLookup`]), multi-match prompt lookup as a draft tree ([`TreeLookup`]); each proposes only tokens the constraint allows |
//! | [`tree`] | tree mode: [`TreeConfig`], [`TreeDraft`], [`TreeVerify`], continuations merged into a tree, and the lossless tree walk the decoder runs (masks at every node in one call, one target call over the tree) |
//! | [`decoder`] | [`SpeculativeDecoder`]: drafting on a forked matcher, verification, rollback via `Constraint::rollback`, `LanguageModel::truncate` and `Drafter::rewind` |
//! | [`law`] | exact terminal laws of finite languages: [`PrefixTree`] (from `zapspec_phi::exact::tree`: `μ*`, `μ^proj`, exact Φ by backward DP) and [`TreePhi`] (`μ^Φ̂` of a Φ estimator, exact Φ as a `zapspec_phi::PhiEstimator`) — the reference for tests |
//! | [`memo`] | [`MemoLm`], memoised logits for deterministic toy models |
//!
//! Readings where the papers leave a choice, each a field of [`SpecConfig`]
//! with the default first:
//!
//! * **Tree verification of sampled children** ([`SpecConfig::tree_verify`]):
//!   [`TreeVerify::Residual`] — SpecInfer's multi-step speculative sampling
//!   (Miao et al. 2024, Alg. 2) against the verifier's law, repeated draws
//!   kept as separate attempts against the evolving residual — or
//!   [`TreeVerify::Naive`], a draw of the verifier's law that ignores the
//!   draft law (SpecInfer's naive sampling). Both are exact (see
//!   [`tree`]); deterministic children are verified naively under both.
//! * **Nucleus truncation** ([`SpecConfig::top_p`]) applies to the
//!   verifier's law after the mask and Φ̂, never to the drafts' laws.
//!
//! Empirical-vs-exact statistics (TV of counts, bootstrap interval, noise
//! floor, χ² and G tests) are in `zapspec_testkit::stats`; the budget language
//! of Table 8 in `zapspec_phi::exact::budget`; toy models in
//! `zapspec_testkit`; experiment plumbing (CLI, reports, the JSON schemas of
//! Table 7) in the `examples` crate.
//!
//! The decoder's Φ̂ is any `zapspec_phi::PhiEstimator<C, zapspec_phi::NoModel>`
//! (the decoder holds no model positioned at the verified prefix, so it
//! hands estimators a model-free slot): `zapspec_phi::Uniform` (FVO-Spec is
//! then the Leviathan verifier), `zapspec_phi::OneStepCheap` (Def. 9 on the
//! verifier's own logits), [`ExactPhi`] (exact Φ of an enumerated finite
//! language), and any estimator that runs a model inside
//! `zapspec_phi::WithModel` (its own model copy), optionally behind
//! `zapspec_phi::Frozen` (one estimator draw per prefix).

//!
//! ```
//! use zapspec_verify::{PrefixTree, SpecConfig, SpeculativeDecoder, TreePhi, VerifierKind};
//! use zapspec_core::{prob::seeded_rng};
//! use zapspec_testkit::{toy::BigramLm, DyckConstraint, DyckSpec};
//!
//! let dyck = DyckConstraint::new(DyckSpec { kinds: 1, max_depth: 3, max_len: 12 });
//! // exact Φ of this finite language under the target (backward DP)
//! let tree = PrefixTree::enumerate(&dyck, &mut BigramLm::new(3, 1), 100_000).unwrap();
//! let cfg = SpecConfig { gamma: 4, verifier: VerifierKind::FvoSpec, ..SpecConfig::default() };
//! let mut dec = SpeculativeDecoder::new(BigramLm::new(3, 1), BigramLm::new(3, 2), tree.exact_phi(), cfg).unwrap();
//! let g = dec.generate(&dyck, &mut seeded_rng(0)).unwrap(); // one draw from μ*
//! assert!(g.tokens.len() <= 12);
//! println!("{:?}, acceptance {:.2}", g.tokens, g.stats.acceptance_rate());
//! ```
//!
//! Everything random takes a caller-supplied RNG (seed it with
//! [`zapspec_core::prob::seeded_rng`]); laws are handled in log space.

pub mod config;
pub mod decoder;
pub mod drafter;
pub mod error;
pub mod forced;
pub mod law;
pub mod memo;
pub mod phi;
pub mod tree;
pub mod verify;

pub use config::{ForcedTokens, Mode, SpecConfig, VerifierKind};
pub use decoder::{
    DecodeState, Generation, RoundReport, RoundStats, SpeculativeDecoder, StopReason,
};
pub use drafter::{CopyDraft, Draft, DraftContext, Drafter, NoDraft, PromptLookup, TreeLookup};
pub use error::VerifyError;
pub use law::{ExactPhi, PrefixTree, TreePhi};
pub use memo::{LogitTable, MemoLm};
pub use phi::{compact_log_law, compact_log_law_aligned, nucleus_log, target_log_law};
pub use tree::{tree_of_continuations, DraftTree, TreeConfig, TreeDraft, TreeVerify};
pub use verify::DraftLaw;
