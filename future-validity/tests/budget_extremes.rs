//! `TV(μ^proj, μ*)` and `TV(μ^Φ, μ*)` on the budget language `L_{n,K}` at
//! settings far outside Table 8 — `p₁` within 10⁻¹² of 1, `n` in the
//! thousands — against a closed-form, log-space reference that does not use
//! the forward recursion of [`budget::grouped_tv`].
//!
//! Reference (App. H.4's grouping): strings with `c < K` ones have
//! probability `p^c q^(n−c)` under μ^proj and the same over `Z` under μ*;
//! strings whose K-th one sits at position `τ` have `p^K q^(τ−K)` under
//! μ^proj (zeros forced after τ) and `p^K q^(n−K) / Z` under μ*; there are
//! `C(n, c)` and `C(τ−1, K−1)` of them.

use proptest::prelude::*;
use zapspec_core::prob;
use zapspec_phi::exact::budget::{self, log_binom};
use zapspec_phi::BudgetLanguage;

fn reference_tv_proj(n: usize, k: usize, p: f64) -> f64 {
    if k == 0 {
        return 0.0;
    }
    let (lp, lq) = (p.ln(), (-p).ln_1p());
    let mut proj = Vec::new();
    let mut star = Vec::new();
    for c in 0..k {
        let l = log_binom(n, c) + c as f64 * lp + (n - c) as f64 * lq;
        proj.push(l);
        star.push(l);
    }
    for tau in k..=n {
        let b = log_binom(tau - 1, k - 1) + k as f64 * lp;
        proj.push(b + (tau - k) as f64 * lq);
        star.push(b + (n - k) as f64 * lq);
    }
    let lz = prob::logsumexp(&star);
    0.5 * proj
        .iter()
        .zip(&star)
        .map(|(a, b)| (a.exp() - (b - lz).exp()).abs())
        .sum::<f64>()
}

#[test]
fn underflowing_projection_mass_still_counts_its_star_mass() {
    // (60, 2, 1 − 1e-12): μ^proj puts almost all mass on "11000…0"-like
    // groups; the old linear-space recursion lost groups whose μ^proj mass
    // underflowed and printed 0.614.
    let lang = BudgetLanguage::new(60, 2).unwrap();
    let got = budget::tv_proj_star(lang, 1.0 - 1e-12).unwrap();
    let want = reference_tv_proj(60, 2, 1.0 - 1e-12);
    assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    assert!((got - 0.999435).abs() < 1e-6, "{got}");
    // (1000, 100, 0.9): TV → 1 (the old recursion printed 0.506).
    let lang = BudgetLanguage::new(1000, 100).unwrap();
    let got = budget::tv_proj_star(lang, 0.9).unwrap();
    assert!(got > 1.0 - 1e-9 && got <= 1.0, "{got}");
}

#[test]
fn exact_phi_stays_exact_at_the_edges() {
    for (n, k, p) in [(60, 2, 1.0 - 1e-12), (400, 40, 0.9), (300, 150, 0.5)] {
        let lang = BudgetLanguage::new(n, k).unwrap();
        let (_, dp) = budget::solve(lang, p).unwrap();
        let tv = budget::tv_phi_star(lang, p, &dp).unwrap();
        assert!(tv.is_finite() && tv < 1e-9, "L_{{{n},{k}}} p={p}: {tv}");
    }
}

fn edge_p() -> impl Strategy<Value = f64> {
    prop_oneof![
        0.001f64..0.999,
        (1u32..13).prop_map(|e| 10f64.powi(-(e as i32))),
        (1u32..13).prop_map(|e| 1.0 - 10f64.powi(-(e as i32))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random `(n, K, p₁)` with `n` up to 4,000 and `p₁` within 10⁻¹² of
    /// 0 or 1: the recursion equals the closed-form reference, finite, in
    /// `[0, 1]`.
    #[test]
    fn grouped_tv_equals_log_space_reference(
        n in 1usize..4000,
        kf in 0.0f64..1.0,
        p in edge_p(),
    ) {
        let k = ((n as f64) * kf) as usize;
        let lang = BudgetLanguage::new(n, k).unwrap();
        let got = budget::tv_proj_star(lang, p).unwrap();
        let want = reference_tv_proj(n, k, p);
        prop_assert!(got.is_finite() && (0.0..=1.0).contains(&got), "{}", got);
        prop_assert!((got - want).abs() < 1e-8, "L_{{{},{}}} p={}: {} vs {}", n, k, p, got, want);
    }
}

#[test]
fn large_n_stays_finite_and_counts_are_never_wrapped() {
    // (1030, 515) and (2000, 1000): the member count overflows f64 and u128;
    // it is refused as an integer and given as a finite log count.
    for (n, k) in [(1030usize, 515usize), (2000, 1000)] {
        let lang = BudgetLanguage::new(n, k).unwrap();
        assert_eq!(lang.num_members(), None);
        let ln = lang.ln_num_members();
        // Σ_{c≤n/2} C(n,c) = 2^(n−1) + C(n, n/2)/2 for even n
        let want = prob::log_add_exp((n - 1) as f64 * 2f64.ln(), log_binom(n, n / 2) - 2f64.ln());
        assert!((ln - want).abs() < 1e-9 * want, "{ln} vs {want}");
        let r = budget::summarize(lang, 0.7).unwrap();
        assert!(r.tv_proj_star.is_finite() && r.tv_phi_star.is_finite());
        assert!((r.tv_proj_star - reference_tv_proj(n, k, 0.7)).abs() < 1e-9);
        assert!(r.tv_phi_star < 1e-9, "{}", r.tv_phi_star);
    }
    // n = 10,000: the closed-form-free recursion against the reference
    let lang = BudgetLanguage::new(10_000, 5_000).unwrap();
    let got = budget::tv_proj_star(lang, 0.7).unwrap();
    let want = reference_tv_proj(10_000, 5_000, 0.7);
    assert!(
        got.is_finite() && (got - want).abs() < 1e-8,
        "{got} vs {want}"
    );
}

#[test]
fn p1_outside_the_open_interval_is_refused_like_the_model() {
    // p₁ = 1 with K < n: no member has any mass (Z = 0); p₁ = 0 and NaN are
    // outside the model's domain too. The TVs refuse what
    // `BernoulliLm::new` refuses, with the same typed error.
    let lang = BudgetLanguage::new(4, 2).unwrap();
    for p in [1.0, 0.0, f64::NAN, 1.5] {
        assert!(budget::BernoulliLm::new(p, 4).is_err());
        let got = budget::tv_proj_star(lang, p);
        assert!(
            matches!(got, Err(zapspec_phi::PhiError::Config { field: "p1", .. })),
            "p1 = {p}: {got:?}"
        );
    }
    assert!(budget::tv_proj_star(lang, 0.5).is_ok());
}
