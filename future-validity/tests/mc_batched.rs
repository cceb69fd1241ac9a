//! Monte Carlo with batched rollouts on a rollout tree
//! (`MonteCarloConfig::batched`) against an independent reference: every
//! rollout re-run alone from its own seed (`MonteCarlo::rollout_seed`),
//! re-feeding the whole context at each step on a fresh model — the same
//! tokens, so the same Φ̂ bit for bit; with a candidate cut, the rollouts
//! are spent on the head only.

use proptest::prelude::*;
use zapspec_core::prob::{self, seeded_rng};
use zapspec_core::{Constraint, LanguageModel, TokenId};
use zapspec_phi::montecarlo::RolloutLaw;
use zapspec_phi::{
    valid_set, CandidateCut, Metered, MonteCarlo, MonteCarloConfig, OnHorizon, PhiEstimator,
    PhiQuery,
};
use zapspec_testkit::toy::{splitmix64, ClosureLm};
use zapspec_testkit::{DyckConstraint, DyckSpec};

/// Logits as a hash of the whole context (so a rollout that re-feeds a
/// wrong context gets different logits).
fn row(v: usize, seed: u64, ctx: &[TokenId]) -> Vec<f32> {
    let mut h = seed;
    for &c in ctx {
        h = splitmix64(h ^ u64::from(c));
    }
    (0..v)
        .map(|t| ((splitmix64(h ^ t as u64) >> 40) as f32 / (1u64 << 24) as f32) * 4.0)
        .collect()
}

/// One rollout alone: the context re-fed from scratch at every step.
fn reference_rollout(
    c0: &DyckConstraint,
    ctx0: &[TokenId],
    y: TokenId,
    seed: u64,
    j: usize,
    cfg: &MonteCarloConfig,
    lm_seed: u64,
) -> f64 {
    let v = c0.vocab_size();
    let mut rng = seeded_rng(MonteCarlo::rollout_seed(cfg.seed, 0, y, j));
    let _ = seed;
    let mut c = c0.clone();
    c.advance(y).unwrap();
    let mut ctx = ctx0.to_vec();
    ctx.push(y);
    for _ in 0..cfg.horizon {
        let mut fresh = ClosureLm::new(v, move |x: &[TokenId]| row(v, lm_seed, x));
        let logits = fresh.logits_for(&ctx).unwrap();
        let lp = prob::log_softmax(&logits);
        let u = prob::sample_log(&mut rng, &lp).unwrap() as TokenId;
        if u == c.eos() {
            return if c.is_accepting() { 1.0 } else { 0.0 };
        }
        if c.advance(u).is_err() {
            return 0.0;
        }
        ctx.push(u);
    }
    match cfg.on_horizon {
        OnHorizon::Valid => 1.0,
        OnHorizon::Invalid => 0.0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn batched_rollouts_equal_separate_reprefilled_ones(
        kinds in 1usize..3, walk in prop::collection::vec(0u32..6, 0..5),
        prompt in prop::collection::vec(0u32..6, 0..3),
        lm_seed in any::<u64>(), seed in any::<u64>(), k in 1usize..4, horizon in 0usize..6,
        pessimistic in any::<bool>(), cut in any::<bool>(),
    ) {
        let spec = DyckSpec { kinds, max_depth: 3, max_len: 8 };
        let v = spec.vocab_size();
        let mut c = DyckConstraint::new(spec);
        let mut prefix = Vec::new();
        for &t in &walk {
            let t = t % v as u32;
            if c.advance(t).is_ok() {
                prefix.push(t);
            }
        }
        if c.is_finished() {
            return Ok(());
        }
        let prompt: Vec<TokenId> = prompt.iter().map(|&t| t % v as u32).collect();
        let mut ctx = prompt.clone();
        ctx.extend(&prefix);
        let cfg = MonteCarloConfig {
            k,
            horizon,
            seed,
            on_horizon: if pessimistic { OnHorizon::Invalid } else { OnHorizon::Valid },
            all_zero_fallback: false,
            cut: if cut { CandidateCut::new(1.0, 1) } else { CandidateCut::default() },
            batched: true,
            ..Default::default()
        };
        let mut model = ClosureLm::new(v, move |x: &[TokenId]| row(v, lm_seed, x));
        let logits = model.logits_for(&ctx).unwrap();
        let mask = valid_set(&c);
        let q = PhiQuery::new(&prefix, &c, &mask, &logits);
        let mut out = vec![f64::NAN; v];
        let mut mc = Metered::new(MonteCarlo::with_config(cfg));
        mc.log_phi_into(&q, &mut model, &mut out).unwrap();
        // the model's context is restored
        prop_assert_eq!(model.context(), &ctx[..]);
        let eos = c.eos();
        let cands: Vec<TokenId> = mask.iter().filter(|&y| y != eos).collect();
        let head: Vec<TokenId> = if cut {
            // the most probable candidate (ties: the smaller id)
            cands.iter().copied().max_by(|&a, &b| {
                logits[a as usize].total_cmp(&logits[b as usize]).then(b.cmp(&a))
            }).into_iter().collect()
        } else {
            cands.clone()
        };
        prop_assert_eq!(mc.cost().rollouts, (k * head.len()) as u64);
        for &y in &head {
            let s: f64 = (0..k).map(|j| reference_rollout(&c, &ctx, y, seed, j, &cfg, lm_seed)).sum();
            let phi = s / k as f64;
            let want = if phi <= 0.0 { f64::NEG_INFINITY } else if phi >= 1.0 { 0.0 } else { phi.ln() };
            prop_assert_eq!(out[y as usize].to_bits(), want.to_bits(), "candidate {}", y);
        }
        if mask.contains(eos) {
            prop_assert_eq!(out[eos as usize], 0.0);
        }
        // the unscored candidates share one value (the head's mean)
        let tail: Vec<f64> = cands.iter().filter(|y| !head.contains(y)).map(|&y| out[y as usize]).collect();
        prop_assert!(tail.windows(2).all(|w| w[0].to_bits() == w[1].to_bits()));
        // one forward for the roots and at most one per further step
        if !head.is_empty() {
            prop_assert!(mc.cost().forwards >= 1 && mc.cost().forwards <= horizon.max(1) as u64);
        }
    }
}

/// With the default configuration (no cut, rollouts one after another)
/// the estimator is what it was: a config that only spells the defaults
/// out gives the same values bit for bit.
#[test]
fn defaults_are_unchanged() {
    let spec = DyckSpec {
        kinds: 2,
        max_depth: 3,
        max_len: 6,
    };
    let v = spec.vocab_size();
    let c = DyckConstraint::new(spec);
    let mut model = ClosureLm::new(v, move |x: &[TokenId]| row(v, 9, x));
    let logits = model.logits_for(&[]).unwrap_or_else(|_| row(v, 9, &[]));
    let mask = valid_set(&c);
    let q = PhiQuery::new(&[], &c, &mask, &logits);
    let (mut a, mut b) = (vec![f64::NAN; v], vec![f64::NAN; v]);
    MonteCarlo::new(6, 5, 3)
        .log_phi_into(&q, &mut model, &mut a)
        .unwrap();
    let cfg = MonteCarloConfig {
        k: 6,
        horizon: 5,
        seed: 3,
        law: RolloutLaw::Unmasked,
        cut: CandidateCut::default(),
        batched: false,
        ..Default::default()
    };
    MonteCarlo::with_config(cfg)
        .log_phi_into(&q, &mut model, &mut b)
        .unwrap();
    for y in 0..v {
        assert_eq!(a[y].to_bits(), b[y].to_bits());
    }
}
