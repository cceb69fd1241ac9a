//! # zapspec-phi
//!
//! Future-validity (Φ) estimators and certificates, after *"Future Validity
//! is the Missing Statistic: From Impossibility to Φ-Estimation for
//! Grammar-Faithful Speculative Decoding"* (Nie et al., 2026; `papers/001_*`).
//!
//! For a prefix `x<t` and a locally valid token `y ∈ A_t`, the future
//! validity `Φ_t(y) = Pr_{z∼p}[x<t y z ∈ L(C)]` is the probability that the
//! model, continuing after `y`, ends in the language (EOS a terminal
//! transition). The grammar-conditional law μ* is the Doob h-transform of
//! the model with `h = Φ` (§4); local masking is `Φ̂ ≡ 1` and samples μ^proj
//! (Prop. 3). This crate provides the estimator hierarchy of §5 behind one
//! trait, [`PhiEstimator`], generic over any [`zapspec_core::Constraint`] and
//! [`zapspec_core::LanguageModel`] — the one Φ interface of the workspace,
//! which the FVO-Spec decoder of `zapspec-verify` calls too:
//!
//! | tier | type | paper |
//! |---|---|---|
//! | 0 | [`Uniform`] | §5.1 |
//! | 1a | [`OneStepCheap`] | Def. 9, eq. (1) |
//! | 1b | [`OneStepTrue`] | Prop. 10 |
//! | 1c | `LearnedPhi` (two-layer MLP on finite-trie features, balanced structural gate): a study estimator with its trainer, in the `examples` crate (`examples::fvo_study::learned`) | §5.3 |
//! | 2 | [`MonteCarlo`] (k rollouts, horizon h, Hoeffding certificate) | §5.4 |
//! | 3 | [`Exact`] (prefix-tree DP: any finite-language constraint, any LM), [`ExactTrie`] (token trie), [`ExactDyckMarkov`] (Dyck × Markov LM), [`ExactRegular`] (DFA × finite-state LM), [`exact::budget`] (`L_{n,K}`) | §5.5, App. G, App. H.4 |
//! | — | [`BudgetGatedHybrid`] (OneStep → MC when dispersed, uncertain and impactful) | §5.6 |
//!
//! Under a grammar over a real vocabulary `A_t` can hold most of the
//! vocabulary while `p_t` sits on a few tokens: a [`CandidateCut`] (a
//! config field of [`OneStepCheap::with_cut`] and [`MonteCarloConfig`])
//! spends the estimator's per-candidate work on the head of `A_t` under
//! `p_t` only and gives the tail one stated value ([`TailValue`]); its
//! default scores every candidate. [`MonteCarloConfig::batched`] grows a
//! position's rollouts in lockstep on a rollout tree
//! ([`zapspec_core::LanguageModel::tree_logits_from`]: one forward per step over
//! the prefix's KV cache on a model that has one).
//!
//! Around them: [`Metered`] adds up the work each call reports
//! ([`PhiCost`]: forwards, rollouts, constraint operations — the paper's
//! Cost/pos); [`WithModel`] gives an estimator its own model copy,
//! positioned at each query's prefix; [`Frozen`] memoises one estimate per
//! prefix (one draw of a randomized estimator); [`NoModel`] is the model
//! slot of callers that hold none (estimators that run no model — Uniform,
//! OneStep-Cheap, exact tables — accept any model type).
//!
//! The languages of the paper's experiments — bounded Dyck ([`DyckSpec`],
//! [`DyckConstraint`]) and finite token tries ([`TokenTrie`],
//! [`TrieConstraint`]) — are in [`lang`]; the exact tier is written against
//! them (`zapspec-testkit` re-exports them; the crate needs the testkit only
//! for its tests).
//!
//! Certificates (Theorem 7, the relative-error corollary, the KL gap
//! identity, Hoeffding widths) are in [`certificates`]; exact terminal laws
//! μ^proj / μ* / μ^Φ̂ in [`metrics`] (the sample statistics that compare a
//! sampler with them — empirical TV, bootstrap CIs, χ² / G tests,
//! structural statistics — are study code in `zapspec_testkit::stats`).
//!
//! All values are natural logs of probabilities: Φ of 1e-300 is
//! representable, and nothing here returns NaN.
//!
//! ## Scope and known limits
//!
//! * Exact Φ is provided only where the paper says it is tractable: finite
//!   languages below the prefix ([`Exact`], [`ExactTrie`]), and regular /
//!   bounded-Dyck languages under finite-state models ([`ExactRegular`],
//!   [`ExactDyckMarkov`]). Anything else returns [`PhiError::TooLarge`] or
//!   [`PhiError::TooDeep`] rather than running away (Prop. 8).
//! * [`exact::budget::grouped_tv`] is exact for laws that are uniform within
//!   its groups (μ*, μ^proj, exact μ^Φ); for other kernels it is a lower
//!   bound on the TV.
//! * The learned tier (§5.3) is the paper's feasibility prototype: a tiny
//!   MLP trained on a handful of tries; it beats OneStep on some held-out
//!   tries and loses on others. It is study code with its trainer, in the
//!   `examples` crate (`examples/src/fvo_study/learned.rs`, LOSO protocol
//!   in `examples/tests/learned.rs`).
//! * [`BudgetGatedHybrid`]'s thresholds are untuned defaults (§5.6 is an
//!   engineering sketch in the paper too).
//! * [`OneStepCheap`] computes the full-vocabulary normaliser with a fast
//!   f32 exponential (relative error < 5·10⁻⁷; AVX2+FMA when available),
//!   small successor masses with an f64 polynomial `exp2` and `ln`, large
//!   ones (≥ 48 tokens) gathered and summed by the same vectorised kernel;
//!   everything else is exact f64. Its per-position cost is one `|V|` pass
//!   (none in its [`PhiEstimator::log_phi_shifted`], which the FVO-Spec
//!   decoder uses, unless EOS is a candidate beside others) plus
//!   `O(|A_t|)` look-ups and one mass per distinct successor mask (keyed by
//!   `LookAhead::mask_key`, listed sparsely by `LookAhead::allowed_sparse`,
//!   or walked once per node by `LookAhead::for_each_successor` for
//!   tries). Recorded shares of a FVO-Spec round (`fvo_overhead`) are in
//!   `examples/results/history/fvo.md`.
//!
//! ## Calling convention
//!
//! A call sees a [`PhiQuery`] — the generated prefix, the constraint state
//! after it, its valid set `A_t` and the next-token logits `p_t` there —
//! and a model whose context ends with the prefix (a prompt may precede
//! it). [`PhiEstimator::log_phi_into`] writes `log Φ̂_t(y)` into a caller's
//! buffer for `y ∈ A_t` only, restores the model's context, and returns the
//! work it did; [`PhiEstimator::log_phi_shifted`] may add one constant per
//! position (the FVO-Spec law cancels it; OneStep-Cheap then skips its
//! `|V|` normaliser). [`PhiEstimator::log_phi`] is the `|V|`-vector
//! convenience (`-inf` outside `A_t`). The FVO-Spec target (Prop. 6) is
//! then [`fvo_target`] / [`doob_kernel`]:
//!
//! ```
//! use zapspec_phi::{fvo_target, valid_set, Exact, Metered, NoModel, OneStepCheap};
//! use zapspec_phi::{PhiEstimator, PhiQuery};
//! use zapspec_testkit::toy::BigramLm;
//! use zapspec_core::{Constraint, LanguageModel};
//! use zapspec_phi::{DyckConstraint, DyckSpec};
//!
//! let spec = DyckSpec { kinds: 1, max_depth: 3, max_len: 16 }; // D_{3,16}
//! let mut c = DyckConstraint::new(spec);
//! let mut lm = BigramLm::new(spec.vocab_size(), 7);
//! c.advance(spec.open(0)).unwrap();
//! lm.prefill(&[spec.open(0)]).unwrap();
//! let logits = lm.next_logits().unwrap();
//!
//! let mut exact = Metered::new(Exact::default()); // counts forwards
//! let log_phi = exact.log_phi(&c, &mut lm, &logits).unwrap();
//! let mu_star_t = fvo_target(&c, &logits, &log_phi).unwrap(); // log μ*_t
//! assert!(exact.cost().forwards > 0 && exact.cost().calls == 1);
//! assert_eq!(lm.context(), &[spec.open(0)]); // context restored
//! assert!((mu_star_t.iter().map(|l| l.exp()).sum::<f64>() - 1.0).abs() < 1e-12);
//!
//! // OneStep-Cheap runs no model: the buffer form with a model-free slot,
//! // writing only the candidates' entries
//! let mask = valid_set(&c);
//! let mut out = vec![f64::NAN; 3];
//! let q = PhiQuery::new(lm.context(), &c, &mask, &logits); // prefix: the context
//! OneStepCheap::new().log_phi_into(&q, &mut NoModel::new(3), &mut out).unwrap();
//! assert!(mask.iter().all(|y| !out[y as usize].is_nan()));
//! assert!(log_phi.iter().all(|v| !v.is_nan()));
//! ```

pub mod adapters;
pub mod certificates;
pub mod cut;
pub mod error;
pub mod estimator;
pub mod exact;
pub mod hybrid;
pub mod lang;
pub mod metrics;
pub mod montecarlo;
pub mod onestep;
pub mod uniform;

pub use adapters::{Frozen, WithModel};
pub use cut::{CandidateCut, CutStats, RankedCut, TailValue};
pub use error::PhiError;
pub use estimator::{
    check_compact, check_query, doob_kernel, fvo_target, log_mass, uniform_log_phi, valid_set,
    Metered, NoModel, PhiCost, PhiEstimator, PhiQuery, PhiResult, ValidList,
};
pub use exact::budget::{BernoulliLm, BudgetLanguage};
pub use exact::dyck::{DyckMarkovDp, ExactDyckMarkov};
pub use exact::regular::{
    Dfa, DfaConstraint, ExactRegular, FiniteStateLm, RegularDp, RegularDpConfig,
};
pub use exact::trie::{ExactTrie, TrieTable};
pub use exact::{Exact, ExactConfig};
pub use hybrid::{BudgetGatedHybrid, HybridConfig, HybridStats};
pub use lang::{DyckConstraint, DyckSpec, TokenTrie, TrieConstraint};
pub use montecarlo::{McCertificate, MonteCarlo, MonteCarloConfig, OnHorizon, RolloutLaw};
pub use onestep::{log_normaliser, onestep_cheap_reference, OneStepCheap, OneStepTrue};
pub use uniform::Uniform;
