//! # future-validity
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
//! [`zapspec_core::LanguageModel`]:
//!
//! | tier | type | paper |
//! |---|---|---|
//! | 0 | [`Uniform`] | §5.1 |
//! | 1a | [`OneStepCheap`] | Def. 9, eq. (1) |
//! | 1b | [`OneStepTrue`] | Prop. 10 |
//! | 1c | [`LearnedPhi`] (two-layer MLP on finite-trie features, balanced structural gate) | §5.3 |
//! | 2 | [`MonteCarlo`] (k rollouts, horizon h, Hoeffding certificate) | §5.4 |
//! | 3 | [`Exact`] (prefix-tree DP: any finite-language constraint, any LM), [`ExactTrie`] (token trie), [`ExactDyckMarkov`] (Dyck × Markov LM), [`ExactRegular`] (DFA × finite-state LM), [`exact::budget`] (`L_{n,K}`) | §5.5, App. G, App. H.4 |
//! | — | [`BudgetGatedHybrid`] (OneStep → MC when dispersed, uncertain and impactful) | §5.6 |
//!
//! Certificates (Theorem 7, the relative-error corollary, the KL gap
//! identity, Hoeffding widths) are in [`certificates`]; exact terminal laws
//! μ^proj / μ* / μ^Φ̂, empirical TV with bootstrap CIs and structural
//! statistics in [`metrics`].
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
//! * [`LearnedPhi`] is the paper's feasibility prototype (§5.3): a tiny MLP
//!   trained on a handful of tries; it beats OneStep on some held-out tries
//!   and loses on others (see `tests/estimators.rs`, LOSO protocol).
//! * [`BudgetGatedHybrid`]'s thresholds are untuned defaults (§5.6 is an
//!   engineering sketch in the paper too).
//! * [`OneStepCheap`] computes the full-vocabulary normaliser with a fast
//!   f32 exponential (relative error < 5·10⁻⁷; AVX2+FMA when available),
//!   small successor masses with an f64 polynomial `exp2` and `ln`, large
//!   ones (≥ 48 tokens) gathered and summed by the same vectorised kernel;
//!   everything else is exact f64. Its per-position cost is one `|V|` pass
//!   (none in [`OneStepCheap::log_phi_into_shifted`], which the FVO-Spec
//!   decoder uses, unless EOS is a candidate beside others) plus
//!   `O(|A_t|)` look-ups and one mass per distinct successor mask (keyed by
//!   `Constraint::mask_key`, listed sparsely by `Constraint::allowed_sparse`,
//!   or walked once per node by `Constraint::for_each_successor` for
//!   tries). Measured inside the FVO-Spec loop (`fvo_overhead`, see the
//!   spec-verify README): 0.26% of a round for Dyck over r50k, 0.14% for a
//!   2,000-string schema over o200k, 0.98% for a regular language over
//!   o200k with ~25,600 candidates per position (0.96–1.13% over five runs
//!   on the shared machine: at the 1% line, not safely below), 0.77–0.85%
//!   for a 2,000-way trie root over r50k (1.29–1.77% before `TokenTrie`'s
//!   children were stored flat instead of in a `BTreeMap` per node) and 25%
//!   for the 3-token toy vocabulary, whose whole round costs ~2 µs.
//!
//! ## Calling convention
//!
//! The constraint holds the generated prefix; the model's context ends with
//! the same tokens (a prompt may precede them); `logits` are the model's
//! next-token logits there. An estimator returns `log Φ̂_t(y)` for every
//! vocabulary token (`-inf` outside the valid set), restores the model's
//! context, and counts its extra forwards in [`PhiCost`]. The FVO-Spec
//! target (Prop. 6) is then [`fvo_target`] / [`doob_kernel`]:
//!
//! ```
//! use zapspec_phi::{fvo_target, Exact, OneStepCheap, PhiEstimator};
//! use zapspec_testkit::toy::BigramLm;
//! use zapspec_core::{Constraint, LanguageModel};
//! use zapspec_testkit::{DyckConstraint, DyckSpec};
//!
//! let spec = DyckSpec { kinds: 1, max_depth: 3, max_len: 16 }; // D_{3,16}
//! let mut c = DyckConstraint::new(spec);
//! let mut lm = BigramLm::new(spec.vocab_size(), 7);
//! c.advance(spec.open(0)).unwrap();
//! lm.prefill(&[spec.open(0)]).unwrap();
//! let logits = lm.next_logits().unwrap();
//!
//! let mut exact = Exact::default();
//! let log_phi = exact.log_phi(&c, &mut lm, &logits).unwrap();
//! let mu_star_t = fvo_target(&c, &logits, &log_phi).unwrap(); // log μ*_t
//! let one = OneStepCheap::new().log_phi(&c, &mut lm, &logits).unwrap();
//! assert!(log_phi.iter().all(|v| !v.is_nan()) && one.len() == 3);
//! assert!((mu_star_t.iter().map(|l| l.exp()).sum::<f64>() - 1.0).abs() < 1e-12);
//! assert_eq!(lm.context(), &[spec.open(0)]); // context restored
//! ```

pub mod certificates;
pub mod error;
pub mod estimator;
pub mod exact;
pub mod hybrid;
pub mod learned;
pub mod metrics;
pub mod montecarlo;
pub mod onestep;
pub mod uniform;

pub use error::PhiError;
pub use estimator::{
    doob_kernel, fvo_target, log_mass, uniform_log_phi, valid_set, PhiCost, PhiEstimator,
};
pub use exact::budget::{BernoulliLm, BudgetLanguage};
pub use exact::dyck::{DyckMarkovDp, ExactDyckMarkov};
pub use exact::regular::{
    Dfa, DfaConstraint, ExactRegular, FiniteStateLm, RegularDp, RegularDpConfig,
};
pub use exact::trie::{ExactTrie, TrieTable};
pub use exact::{Exact, ExactConfig};
pub use hybrid::{BudgetGatedHybrid, HybridConfig, HybridStats};
pub use learned::{leave_one_schema_out, LearnedConfig, LearnedPhi};
pub use montecarlo::{McCertificate, MonteCarlo, MonteCarloConfig, OnHorizon, RolloutLaw};
pub use onestep::{log_normaliser, onestep_cheap_reference, OneStepCheap, OneStepTrue};
pub use uniform::Uniform;
