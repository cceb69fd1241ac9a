//! Exact DPs against independent references: brute-force enumeration of
//! bounded Dyck languages, the binomial closed form of the budget language,
//! and the paper's Table 8 numbers.
mod common;

use std::sync::Arc;

use common::{brute_dyck, random_lm, seq_logp};
use zapspec_core::{prob, Constraint, LanguageModel, TokenId};
use zapspec_phi::exact::budget::{self, closed_form_log_phi, BUDGET_EOS};
use zapspec_phi::metrics::TerminalLaws;
use zapspec_phi::{
    BernoulliLm, BudgetLanguage, DfaConstraint, Exact, ExactDyckMarkov, ExactRegular, PhiEstimator,
    Uniform,
};
use zapspec_testkit::toy::BigramLm;
use zapspec_testkit::{DyckConstraint, DyckSpec};

/// Φ_t(y) by brute force: mass of members extending `prefix·y`, divided by
/// the probability of `prefix·y`.
fn brute_phi<M: LanguageModel>(
    lm: &mut M,
    members: &[Vec<TokenId>],
    prefix: &[TokenId],
    y: TokenId,
    eos: TokenId,
) -> f64 {
    let mut py = prefix.to_vec();
    py.push(y);
    let mut lp_prefix = 0.0;
    for i in 0..py.len() {
        let l = lm.logits_for(&py[..i]).unwrap();
        lp_prefix += prob::log_softmax(&l)[py[i] as usize];
    }
    let terms: Vec<f64> = members
        .iter()
        .filter(|x| x.starts_with(&py))
        .map(|x| seq_logp(lm, &[], x, eos))
        .collect();
    prob::logsumexp(&terms) - lp_prefix
}

#[test]
fn exact_dyck_matches_brute_force_enumeration() {
    for (kinds, d, l, seed) in [(1usize, 3usize, 8usize, 1u64), (2, 2, 6, 2), (1, 2, 10, 3)] {
        let spec = DyckSpec {
            kinds,
            max_depth: d,
            max_len: l,
        };
        let members = brute_dyck(kinds, d, l);
        let mut lm = random_lm(spec.vocab_size(), seed, 3.0);
        let mut ex = Exact::default();
        // root and a one-token prefix
        for prefix in [vec![], vec![spec.open(0)]] {
            let mut c = DyckConstraint::new(spec);
            for &t in &prefix {
                c.advance(t).unwrap();
            }
            let logits = lm.logits_for(&prefix).unwrap();
            let got = ex.log_phi(&c, &mut lm, &logits).unwrap();
            assert_eq!(lm.context(), prefix.as_slice());
            for y in c.clone().mask().iter() {
                let want = if y == spec.eos() {
                    0.0
                } else {
                    brute_phi(&mut lm, &members, &prefix, y, spec.eos())
                };
                lm.logits_for(&prefix).unwrap();
                assert!(
                    (got[y as usize] - want).abs() < 1e-9,
                    "{spec:?} prefix {prefix:?} y {y}: {} vs {want}",
                    got[y as usize]
                );
            }
        }
    }
    assert_eq!(brute_dyck(1, 3, 16).len(), 988);
    assert_eq!(brute_dyck(1, 3, 12).len(), 145);
}

#[test]
fn dyck_markov_dp_equals_prefix_tree_dp() {
    let spec = DyckSpec {
        kinds: 1,
        max_depth: 3,
        max_len: 16,
    };
    let c = DyckConstraint::new(spec);
    let mut lm = BigramLm::new(spec.vocab_size(), 11);
    let mut dp = ExactDyckMarkov::new();
    let mut ests: Vec<&mut dyn PhiEstimator<DyckConstraint, BigramLm>> = vec![&mut dp];
    let laws = TerminalLaws::enumerate(&c, &mut lm, &mut ests, 10_000).unwrap();
    assert_eq!(laws.members.len(), 988);
    // StepDiagnostics compares against the prefix-tree DP at every prefix.
    assert!(
        laws.estimators[0].max_delta < 1e-12,
        "δ {}",
        laws.estimators[0].max_delta
    );
    assert!(laws.tv_est_star(0) < 1e-12);
    assert!(dp.dp().unwrap().num_states() <= 4 * 17 * 4);
}

#[test]
fn budget_dp_matches_binomial_closed_form() {
    for (n, k, p) in [
        (30usize, 15usize, 0.70),
        (12, 4, 0.3),
        (5, 5, 0.5),
        (7, 0, 0.4),
    ] {
        let lang = BudgetLanguage::new(n, k).unwrap();
        let (_dfa, dp) = budget::solve(lang, p).unwrap();
        assert!(dp.acyclic);
        assert!(dp.residual < 1e-14, "residual {}", dp.residual);
        for t in 0..=n {
            for c in 0..=k.min(t) {
                let got = dp.get(lang.state(t, c), &t).unwrap();
                let want = closed_form_log_phi(lang, p, t, c);
                assert!(
                    (got - want).abs() < 1e-10 * want.abs().max(1.0),
                    "({t},{c}) {got} vs {want}"
                );
            }
        }
    }
    assert_eq!(BudgetLanguage::new(30, 15).unwrap().dfa().num_states, 496);
    assert!(BudgetLanguage::new(3, 4).is_err());
}

#[test]
fn budget_member_counts_are_exact_or_refused_never_wrapped() {
    // Σ_{c≤K} C(n, c) against a Pascal-triangle reference in u128.
    let pascal = |n: usize, k: usize| -> u128 {
        let mut row = vec![1u128];
        for _ in 0..n {
            let mut next = vec![1u128; row.len() + 1];
            for i in 1..row.len() {
                next[i] = row[i - 1] + row[i];
            }
            row = next;
        }
        row[..=k].iter().sum()
    };
    for (n, k) in [(20usize, 10usize), (30, 15), (100, 3), (120, 60), (5, 5)] {
        let lang = BudgetLanguage::new(n, k).unwrap();
        assert_eq!(lang.num_members(), Some(pascal(n, k)), "({n},{k})");
    }
    // C(200, 100) ≈ 9.1e58 > u128::MAX: refused, not wrapped.
    let big = BudgetLanguage::new(200, 100).unwrap();
    assert_eq!(big.num_members(), None);
    assert!(big.num_strings().is_finite() && big.num_strings() > 1e59);
}

#[test]
fn budget_grouped_tv_reproduces_table_8_and_brute_force() {
    // Table 8 of the paper (TV(μ^proj, μ*)), to the printed precision.
    for (n, k, p, want, strings) in [
        (20, 10, 0.62, 0.670, 616_666.0),
        (24, 8, 0.70, 0.961, 1_271_626.0),
        (30, 15, 0.70, 0.909, 614_429_672.0),
    ] {
        let lang = BudgetLanguage::new(n, k).unwrap();
        assert_eq!(lang.num_strings(), strings);
        let got = budget::tv_proj_star(lang, p).unwrap();
        assert!(
            (got - want).abs() < 5e-4,
            "L_{{{n},{k}}} p={p}: {got} vs {want}"
        );
        let (_, dp) = budget::solve(lang, p).unwrap();
        assert!(budget::tv_phi_star(lang, p, &dp).unwrap() < 1e-12);
    }
    // brute force over all 2^10 strings with the generic enumeration
    let lang = BudgetLanguage::new(10, 4).unwrap();
    let p = 0.65;
    let c = DfaConstraint::new(Arc::new(lang.dfa()));
    let mut lm = BernoulliLm::new(p, 10).unwrap();
    let (mut u, mut ex) = (Uniform::new(), ExactRegular::default());
    let mut ests: Vec<&mut dyn PhiEstimator<DfaConstraint, BernoulliLm>> = vec![&mut u, &mut ex];
    let laws = TerminalLaws::enumerate(&c, &mut lm, &mut ests, 100_000).unwrap();
    assert_eq!(laws.members.len() as f64, lang.num_strings());
    // The LanguageModel interface carries f32 logits (ln p rounded to ~6e-8
    // relative), the finite-state interface f64 probabilities: the two
    // computations agree to that rounding, not to 1e-12.
    assert!((laws.tv_proj_star() - budget::tv_proj_star(lang, p).unwrap()).abs() < 1e-6);
    assert!(laws.tv_est_star(1) < 1e-6);
    assert!(laws.estimators[1].max_delta < 1e-6);
    assert_eq!(c.eos(), BUDGET_EOS);
}

/// A cyclic regular language, `0⁺1⁺`, under a bigram LM: value iteration
/// against an independent forward computation of `Σ_n Pr[x ∈ L, |x| = n]`.
#[test]
fn cyclic_dfa_value_iteration_matches_forward_sum() {
    use zapspec_phi::exact::regular::DEAD;
    use zapspec_phi::{Dfa, FiniteStateLm, RegularDp, RegularDpConfig};
    let trans = vec![1, DEAD, DEAD, 1, 2, DEAD, DEAD, 2, DEAD];
    let dfa = Dfa::new(3, 3, 2, 0, vec![false, false, true], trans).unwrap();
    let lm = BigramLm::new(3, 6).with_scale(1.0);
    let dp = RegularDp::solve(&dfa, &lm, &[], RegularDpConfig::default()).unwrap();
    assert!(!dp.acyclic && dp.iterations > 1);
    assert!(dp.residual < 1e-13);
    // Forward: mass over (dfa state, last token) of prefixes of length n.
    let mut mass: std::collections::HashMap<(u32, Option<TokenId>), f64> =
        [((0u32, None), 1.0)].into_iter().collect();
    let mut total = 0.0;
    for _ in 0..2000 {
        let mut next = std::collections::HashMap::new();
        for (&(q, s), &m) in &mass {
            let lp = lm.state_log_probs(&s);
            if dfa.accepting[q as usize] {
                total += m * lp[2].exp();
            }
            for t in 0..2u32 {
                if let Some(r) = dfa.step(q, t) {
                    *next.entry((r, Some(t))).or_insert(0.0) += m * lp[t as usize].exp();
                }
            }
        }
        mass = next;
    }
    let got = dp.get(0, &None).unwrap().exp();
    assert!((got - total).abs() < 1e-10, "{got} vs {total}");
    // The constraint side: masks, EOS, rollback.
    let mut c = DfaConstraint::new(Arc::new(dfa.clone()));
    assert_eq!(c.clone().mask().iter().collect::<Vec<_>>(), vec![0]);
    c.advance(0).unwrap();
    assert!(c.advance(2).is_err());
    c.advance(1).unwrap();
    assert!(c.is_accepting());
    c.advance(2).unwrap();
    assert!(c.is_finished() && c.clone().mask().is_empty());
    c.rollback(2).unwrap();
    assert_eq!(c.state(), 1);
    assert!(Dfa::new(2, 3, 2, 0, vec![true], vec![DEAD; 6]).is_err());
    assert!(
        Dfa::new(1, 3, 2, 0, vec![true], vec![DEAD, DEAD, 0]).is_err(),
        "EOS transition"
    );
}
