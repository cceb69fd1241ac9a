//! Behaviour of every estimator tier: the §5 critical invariant, cost
//! accounting, Prop. 10's sign, Monte Carlo's Hoeffding interval, the
//! hybrid's routing, and error handling (the learned estimator is study
//! code in the `examples` crate, tested there).
mod common;

use common::random_lm;
use zapspec_core::{Constraint, LanguageModel};
use zapspec_phi::certificates::hoeffding_half_width;
use zapspec_phi::metrics::TerminalLaws;
use zapspec_phi::montecarlo::RolloutLaw;
use zapspec_phi::{
    BudgetGatedHybrid, Exact, ExactDyckMarkov, HybridConfig, Metered, MonteCarlo, MonteCarloConfig,
    OneStepCheap, OneStepTrue, PhiError, PhiEstimator, Uniform,
};
use zapspec_testkit::toy::BigramLm;
use zapspec_testkit::{DyckConstraint, DyckSpec};

fn finite_values(v: &[f64]) -> Vec<f64> {
    v.iter().copied().filter(|x| x.is_finite()).collect()
}

fn is_constant(v: &[f64]) -> bool {
    let f = finite_values(v);
    f.windows(2).all(|w| (w[0] - w[1]).abs() < 1e-12)
        && f.len() == v.iter().filter(|x| **x > f64::NEG_INFINITY).count()
}

/// Dyck D_{3,6} after "(": Φ("((") ≠ Φ("()"), so every non-trivial
/// estimator must return a non-constant vector (§5 "critical invariant").
#[test]
fn critical_invariant_every_nontrivial_estimator_varies() {
    let spec = DyckSpec {
        kinds: 1,
        max_depth: 3,
        max_len: 6,
    };
    let mut c = DyckConstraint::new(spec);
    c.advance(spec.open(0)).unwrap();
    let mut lm = BigramLm::new(spec.vocab_size(), 4).with_scale(0.5);
    lm.prefill(&[spec.open(0)]).unwrap();
    let logits = lm.next_logits().unwrap();
    let exact = Exact::default().log_phi(&c, &mut lm, &logits).unwrap();
    assert!(
        !is_constant(&exact),
        "test case must have varying Φ: {exact:?}"
    );
    let mut ests: Vec<Box<dyn PhiEstimator<DyckConstraint, BigramLm>>> = vec![
        Box::new(OneStepCheap::new()),
        Box::new(OneStepTrue::new()),
        Box::new(MonteCarlo::new(64, 16, 3)),
        Box::new(MonteCarlo::with_config(MonteCarloConfig {
            k: 64,
            law: RolloutLaw::MaskedImportance,
            ..Default::default()
        })),
        Box::new(ExactDyckMarkov::new()),
        Box::new(BudgetGatedHybrid::new(HybridConfig {
            tau_dispersion: 0.0,
            tau_entropy: 0.0,
            mc: MonteCarloConfig {
                k: 64,
                ..Default::default()
            },
            ..Default::default()
        })),
    ];
    for e in ests.iter_mut() {
        let v = e.log_phi(&c, &mut lm, &logits).unwrap();
        assert_eq!(
            lm.context(),
            &[spec.open(0)],
            "{} must restore the context",
            e.name()
        );
        assert!(v.iter().all(|x| !x.is_nan()));
        assert!(
            !is_constant(&v),
            "{} returned a constant vector {v:?}",
            e.name()
        );
        for (y, &x) in v.iter().enumerate() {
            // -inf outside A_t (inside it, an estimate may be 0).
            assert!(exact[y] > f64::NEG_INFINITY || x == f64::NEG_INFINITY);
        }
    }
    // Tier 0 is the documented no-op: constant on A_t.
    assert!(is_constant(
        &Uniform::new().log_phi(&c, &mut lm, &logits).unwrap()
    ));
}

#[test]
fn costs_are_counted() {
    let spec = DyckSpec {
        kinds: 2,
        max_depth: 2,
        max_len: 8,
    };
    let c = DyckConstraint::new(spec);
    let mut lm = random_lm(spec.vocab_size(), 1, 2.0);
    let logits = lm.next_logits().unwrap();
    let n_cand = c.clone().mask().iter().filter(|&t| t != spec.eos()).count() as u64;
    let mut cheap = Metered::new(OneStepCheap::new());
    cheap.log_phi(&c, &mut lm, &logits).unwrap();
    assert_eq!(cheap.cost().forwards, 0);
    let mut tr = Metered::new(OneStepTrue::new());
    tr.log_phi(&c, &mut lm, &logits).unwrap();
    assert_eq!(tr.cost().forwards, n_cand);
    let mut mc = Metered::new(MonteCarlo::new(5, 3, 0));
    mc.log_phi(&c, &mut lm, &logits).unwrap();
    let k = mc.cost();
    assert_eq!(k.rollouts, 5 * n_cand);
    assert!(k.forwards >= k.rollouts && k.forwards <= k.rollouts * 4);
}

/// Prop. 10: the true one-step estimator never under-estimates Φ.
#[test]
fn onestep_true_overestimates_exact() {
    for seed in 0..20 {
        let spec = DyckSpec {
            kinds: 1 + (seed as usize % 2),
            max_depth: 2,
            max_len: 6,
        };
        let mut lm = random_lm(spec.vocab_size(), seed, 3.0);
        let c = DyckConstraint::new(spec);
        let logits = lm.next_logits().unwrap();
        let ex = Exact::default().log_phi(&c, &mut lm, &logits).unwrap();
        let tr = OneStepTrue::new().log_phi(&c, &mut lm, &logits).unwrap();
        for (a, b) in tr.iter().zip(&ex) {
            assert!(
                *a >= *b - 1e-12,
                "seed {seed}: OneStep-True {a} < exact {b}"
            );
        }
    }
}

/// §5.4: with k rollouts the estimate lies within the Hoeffding
/// half-width (α = 1e-4 per candidate; fixed seeds, so not flaky).
#[test]
fn monte_carlo_within_hoeffding_interval() {
    let spec = DyckSpec {
        kinds: 1,
        max_depth: 3,
        max_len: 8,
    };
    let c = DyckConstraint::new(spec);
    let mut lm = random_lm(spec.vocab_size(), 7, 1.5);
    let logits = lm.next_logits().unwrap();
    let ex = Exact::default().log_phi(&c, &mut lm, &logits).unwrap();
    for law in [RolloutLaw::Unmasked, RolloutLaw::MaskedImportance] {
        let k = 4000;
        let mut mc = MonteCarlo::with_config(MonteCarloConfig {
            k,
            horizon: 8,
            seed: 11,
            law,
            ..Default::default()
        });
        let est = mc.log_phi(&c, &mut lm, &logits).unwrap();
        let w = hoeffding_half_width(k, 1e-4);
        for y in c.clone().mask().iter() {
            let (a, b) = (est[y as usize].exp(), ex[y as usize].exp());
            assert!((a - b).abs() <= w, "{law:?} y={y}: {a} vs {b} (w {w})");
        }
        let cert = mc.last_certificate().unwrap();
        assert_eq!(cert.k, k);
        assert!(cert.union_half_width >= cert.half_width);
        assert!(cert.tv_bound.is_some());
    }
    // A horizon shorter than the language: `OnHorizon::Valid` over-estimates.
    let mut short = MonteCarlo::new(2000, 1, 5);
    let est = short.log_phi(&c, &mut lm, &logits).unwrap();
    assert!(est[spec.open(0) as usize] >= ex[spec.open(0) as usize]);
    // Configuration errors are reported, not panics.
    let mut bad = MonteCarlo::new(0, 4, 0);
    assert!(matches!(
        bad.log_phi(&c, &mut lm, &logits),
        Err(PhiError::Config { field: "k", .. })
    ));
}

#[test]
fn hybrid_routes_between_onestep_and_mc() {
    let spec = DyckSpec {
        kinds: 1,
        max_depth: 3,
        max_len: 12,
    };
    let c = DyckConstraint::new(spec);
    let mut lm = BigramLm::new(spec.vocab_size(), 2);
    // Never escalate: identical to OneStep-Cheap along the whole language.
    let mut h = Metered::new(BudgetGatedHybrid::new(HybridConfig {
        tau_dispersion: f64::INFINITY,
        ..Default::default()
    }));
    let mut one = OneStepCheap::new();
    let mut ests: Vec<&mut dyn PhiEstimator<DyckConstraint, BigramLm>> = vec![&mut h, &mut one];
    let laws = TerminalLaws::enumerate(&c, &mut lm, &mut ests, 1000).unwrap();
    assert_eq!(laws.estimators[0].log_mu, laws.estimators[1].log_mu);
    assert_eq!(h.inner().stats().escalated, 0);
    assert_eq!(h.cost().forwards, 0);
    // Always escalate and keep MC: identical to MC with the same seed.
    let cfg = HybridConfig {
        tau_dispersion: -1.0,
        tau_entropy: -1.0,
        tau_tv: -1.0,
        ..Default::default()
    };
    let mut h = BudgetGatedHybrid::new(cfg);
    let mut mc = MonteCarlo::with_config(cfg.mc);
    let mut ests: Vec<&mut dyn PhiEstimator<DyckConstraint, BigramLm>> = vec![&mut h];
    let a = TerminalLaws::enumerate(&c, &mut lm, &mut ests, 1000).unwrap();
    let mut ests: Vec<&mut dyn PhiEstimator<DyckConstraint, BigramLm>> = vec![&mut mc];
    let b = TerminalLaws::enumerate(&c, &mut lm, &mut ests, 1000).unwrap();
    assert_eq!(a.estimators[0].log_mu, b.estimators[0].log_mu);
    assert_eq!(h.stats().used_mc, h.stats().positions);
}

#[test]
fn mismatched_vocabularies_are_errors() {
    let spec = DyckSpec {
        kinds: 1,
        max_depth: 2,
        max_len: 4,
    };
    let c = DyckConstraint::new(spec);
    let mut lm = BigramLm::new(5, 0);
    let logits = lm.next_logits().unwrap();
    assert!(matches!(
        OneStepCheap::new().log_phi(&c, &mut lm, &logits),
        Err(PhiError::VocabMismatch { .. })
    ));
    let mut lm3 = BigramLm::new(3, 0);
    assert!(matches!(
        Exact::default().log_phi(&c, &mut lm3, &logits),
        Err(PhiError::VocabMismatch { .. })
    ));
}

#[test]
fn exact_refuses_unbounded_enumeration() {
    let spec = DyckSpec {
        kinds: 2,
        max_depth: 6,
        max_len: 40,
    };
    let c = DyckConstraint::new(spec);
    let mut lm = BigramLm::new(spec.vocab_size(), 0);
    let logits = lm.next_logits().unwrap();
    let mut ex = Exact::new(zapspec_phi::ExactConfig {
        max_prefixes: 10_000,
        max_depth: 100,
    });
    assert!(matches!(
        ex.log_phi(&c, &mut lm, &logits),
        Err(PhiError::TooLarge { .. })
    ));
    assert_eq!(lm.context().len(), 0);
}
