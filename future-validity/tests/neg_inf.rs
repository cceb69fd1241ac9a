//! Zero-probability branches: a valid
//! token with logit −∞ makes its subtree unreachable (Φ may be 0 there, and
//! the local mass below it may be 0). That is a normal case: every law is
//! finite or −∞, never NaN, sums to 1, and the exact laws match brute force.
mod common;

use common::{members, seq_logp};
use zapspec_core::{prob, Constraint, LanguageModel, TokenId};
use zapspec_phi::metrics::TerminalLaws;
use zapspec_phi::{Exact, OneStepCheap, OneStepTrue, PhiEstimator, Uniform};
use zapspec_testkit::toy::{hashed_logits, splitmix64, ClosureLm};
use zapspec_testkit::{DyckConstraint, DyckSpec};

const SPEC: DyckSpec = DyckSpec {
    kinds: 2,
    max_depth: 3,
    max_len: 8,
};

/// A random LM over the two-kind Dyck vocabulary with −∞ logits:
/// - `(₁` after `(₀` has logit −∞ (a valid token, so a whole unreachable
///   subtree);
/// - after the bigram `(₀ (₁` (reachable only through that edge) every
///   token but the invalid `)₀` is −∞: a node with zero valid mass;
/// - with `zap` set, a further seed-chosen valid token per context is −∞
///   unless it is EOS or the only close.
fn lm(seed: u64, zap: bool) -> ClosureLm<impl Fn(&[TokenId]) -> Vec<f32> + Clone> {
    let v = SPEC.vocab_size();
    let (o0, o1, c0) = (SPEC.open(0), SPEC.open(1), SPEC.close(0));
    ClosureLm::new(v, move |ctx: &[TokenId]| {
        let mut out = hashed_logits(seed, ctx, v, 2.0);
        let h = ctx
            .iter()
            .fold(splitmix64(seed), |h, &t| splitmix64(h ^ (t as u64 + 1)));
        let n = ctx.len();
        if n >= 1 && ctx[n - 1] == o0 {
            out[o1 as usize] = f32::NEG_INFINITY;
        }
        if ctx.windows(2).any(|w| w == [o0, o1]) {
            for (y, l) in out.iter_mut().enumerate() {
                if y as TokenId != c0 {
                    *l = f32::NEG_INFINITY;
                }
            }
        }
        if zap && h.is_multiple_of(3) {
            // opening brackets only: a close or EOS may be the only valid token
            out[(h >> 8) as usize % SPEC.kinds] = f32::NEG_INFINITY;
        }
        out
    })
}

fn check(seed: u64, zap: bool) {
    let c = DyckConstraint::new(SPEC);
    let mut model = lm(seed, zap);
    let (mut u, mut cheap, mut truth, mut ex) = (
        Uniform::new(),
        OneStepCheap::new(),
        OneStepTrue::new(),
        Exact::default(),
    );
    let mut ests: Vec<&mut dyn PhiEstimator<DyckConstraint, _>> =
        vec![&mut u, &mut cheap, &mut truth, &mut ex];
    let laws = TerminalLaws::enumerate(&c, &mut model, &mut ests, 100_000)
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    let all = members(&c);
    assert_eq!(laws.members, all);
    let no_nan = |v: &[f64]| v.iter().all(|x| !x.is_nan() && *x <= 1e-12);
    assert!(no_nan(&laws.log_mu_star) && no_nan(&laws.log_mu_proj));
    for e in &laws.estimators {
        assert!(no_nan(&e.log_mu), "{}: NaN in its law", e.name);
        let s = prob::logsumexp(&e.log_mu).exp();
        assert!((s - 1.0).abs() < 1e-9, "{} sums to {s}", e.name);
    }
    for lm in [&laws.log_mu_star, &laws.log_mu_proj] {
        assert!((prob::logsumexp(lm).exp() - 1.0).abs() < 1e-9);
    }
    // μ* against brute force: p(x·EOS)/Z over the members
    let lp: Vec<f64> = all
        .iter()
        .map(|x| seq_logp(&mut model, &[], x, SPEC.eos()))
        .collect();
    let z = prob::logsumexp(&lp);
    let unreachable = lp.iter().filter(|l| **l == f64::NEG_INFINITY).count();
    assert!(unreachable > 0, "the test LM must cut some members off");
    for (i, l) in lp.iter().enumerate() {
        let got = laws.log_mu_star[i];
        if *l == f64::NEG_INFINITY {
            assert_eq!(got, f64::NEG_INFINITY);
            assert_eq!(laws.log_mu_proj[i], f64::NEG_INFINITY);
        } else {
            assert!((got - (l - z)).abs() < 1e-9, "{:?}", all[i]);
        }
    }
    // μ^proj against brute force: the product of locally masked conditionals
    for (i, x) in all.iter().enumerate() {
        let mut st = c.clone();
        let mut ctx = Vec::new();
        let mut s = 0.0;
        for &t in x.iter().chain(std::iter::once(&SPEC.eos())) {
            let lsm = prob::log_softmax(&model.logits_for(&ctx).unwrap());
            let mask = st.mask();
            let allowed: Vec<f64> = mask.iter().map(|y| lsm[y as usize]).collect();
            s += lsm[t as usize] - prob::logsumexp(&allowed);
            if s == f64::NEG_INFINITY || s.is_nan() {
                s = f64::NEG_INFINITY;
                break;
            }
            if t != SPEC.eos() {
                st.advance(t).unwrap();
                ctx.push(t);
            }
        }
        let got = laws.log_mu_proj[i];
        assert!(
            (got == s) || (got - s).abs() < 1e-9,
            "μ^proj {x:?}: {got} vs {s}"
        );
    }
    // Exact Φ is exact; every TV is finite
    assert!(laws.tv_est_star(3) < 1e-9, "Exact: {}", laws.tv_est_star(3));
    for i in 0..4 {
        assert!(laws.tv_est_star(i).is_finite());
    }
    assert!(laws.tv_proj_star().is_finite() && laws.tv_proj_star() > 0.0);
}

#[test]
fn unreachable_subtrees_and_zero_mass_nodes_are_normal() {
    for seed in 0..8 {
        check(seed, false);
        check(seed, true);
    }
}

/// A target that never allows EOS: the language has zero mass (`Z = 0`), so
/// μ* is undefined; the prefix tree and the terminal laws both refuse it
/// with the same typed error instead of a NaN law.
#[test]
fn zero_mass_language_is_empty_support() {
    use zapspec_phi::exact::tree::PrefixTree;
    use zapspec_phi::PhiError;
    let spec = DyckSpec {
        kinds: 1,
        max_depth: 1,
        max_len: 2,
    };
    let v = spec.vocab_size();
    let eos = spec.eos() as usize;
    let model = || {
        ClosureLm::new(v, move |_: &[TokenId]| {
            let mut out = vec![0.0f32; v];
            out[eos] = f32::NEG_INFINITY;
            out
        })
    };
    let c = DyckConstraint::new(spec);
    let tree = PrefixTree::enumerate(&c, &mut model(), 1_000);
    assert!(
        matches!(tree, Err(PhiError::EmptySupport { position: 0 })),
        "{:?}",
        tree.map(|t| t.log_mu_star())
    );
    let laws = TerminalLaws::enumerate(&c, &mut model(), &mut [], 1_000);
    assert!(
        matches!(laws, Err(PhiError::EmptySupport { position: 0 })),
        "{:?}",
        laws.map(|l| l.log_mu_star)
    );
}
