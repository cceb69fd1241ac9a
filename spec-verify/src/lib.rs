//! # spec-verify
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
//! | [`config`] | [`SpecConfig`] (γ, sampled/greedy, verifier, length cap) |
//! | [`phi`] | [`PhiSource`] — per-candidate `log Φ̂_t(y)` — and the Doob-transformed target law |
//! | [`verify`] | the one-position kernels: Leviathan rejection, equality diagnostic, greedy |
//! | [`decoder`] | [`SpeculativeDecoder`]: drafting from `q̃` on a forked matcher, verification, rollback via `Constraint::rollback` and `LanguageModel::truncate` |
//! | [`law`] | exact terminal laws of finite languages (`μ*`, `μ^proj`, `μ^Φ̂`) and exact Φ by backward DP over the prefix tree — the reference for tests |
//! | [`stats`] | empirical-vs-exact comparisons: TV, bootstrap CI, noise floor, chi-square |
//! | [`memo`] | [`MemoLm`], memoised logits for deterministic toy models |
//! | [`adapters`] | any `zapspec_phi::PhiEstimator` as a [`PhiSource`]; [`adapters::OneStepCheapPhi`] (Def. 9 on the verifier's own logits, no model copy); [`adapters::FrozenPhi`] (one estimator draw per prefix) |
//! | [`budget`] | Table 8: exact TV on the budget language `L_{n,K}` by grouping |
//! | [`toys`] | toy LMs (byte bigram, noisy draft) and the finite JSON schemas of Table 7 |
//! | [`report`] | Markdown/JSON output of the experiment binaries |

//!
//! ```
//! use zapspec_verify::{PrefixTree, SpecConfig, SpeculativeDecoder, VerifierKind};
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

pub mod adapters;
pub mod budget;
pub mod config;
pub mod decoder;
pub mod error;
pub mod law;
pub mod memo;
pub mod phi;
pub mod report;
pub mod stats;
pub mod toys;
pub mod verify;

pub use config::{Mode, SpecConfig, VerifierKind};
pub use decoder::{DecodeState, Generation, RoundReport, RoundStats, SpeculativeDecoder};
pub use error::VerifyError;
pub use law::{ExactPhi, PrefixTree};
pub use memo::MemoLm;
pub use phi::{compact_log_law, target_log_law, PhiSource, UniformPhi};
