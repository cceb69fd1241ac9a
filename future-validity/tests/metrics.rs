//! Empirical TV with bootstrap CIs and structural statistics.
use std::collections::HashMap;

use zapspec_core::prob::{sample_log, seeded_rng};
use zapspec_phi::metrics::TerminalLaws;
use zapspec_phi::{Exact, OneStepCheap, PhiEstimator};
use zapspec_testkit::stats::{empirical_tv, hist_kl, max_depth, StructuralStats};
use zapspec_testkit::toy::BigramLm;
use zapspec_testkit::{DyckConstraint, DyckSpec};

#[test]
fn empirical_tv_tracks_exact_tv_with_bootstrap_ci() {
    let spec = DyckSpec {
        kinds: 1,
        max_depth: 3,
        max_len: 12,
    };
    let c = DyckConstraint::new(spec);
    let mut lm = BigramLm::new(spec.vocab_size(), 8).with_scale(1.0);
    let mut ex = Exact::default();
    let mut ests: Vec<&mut dyn PhiEstimator<DyckConstraint, BigramLm>> = vec![&mut ex];
    let laws = TerminalLaws::enumerate(&c, &mut lm, &mut ests, 1000).unwrap();
    let star = laws.star_map();
    let mut rng = seeded_rng(1);
    let n = 20_000;
    // Samples from μ^proj: the empirical TV to μ* estimates TV(μ^proj, μ*).
    let samples: Vec<Vec<u32>> = (0..n)
        .map(|_| laws.members[sample_log(&mut rng, &laws.log_mu_proj).unwrap()].clone())
        .collect();
    let est = empirical_tv(&samples, &star, 200, 7);
    let exact = laws.tv_proj_star();
    assert!(est.ci_low <= est.tv && est.tv <= est.ci_high);
    assert!(
        (est.tv - exact).abs() < 0.03,
        "empirical {} vs exact {exact}",
        est.tv
    );
    assert_eq!(est, empirical_tv(&samples, &star, 200, 7), "seeded");
    // Samples from μ* itself: only the finite-sample floor remains.
    let own: Vec<Vec<u32>> = (0..n)
        .map(|_| laws.members[sample_log(&mut rng, &laws.log_mu_star).unwrap()].clone())
        .collect();
    let floor = empirical_tv(&own, &star, 200, 7);
    assert!(floor.tv < 0.06 && floor.tv < exact, "floor {}", floor.tv);
    // An unknown atom counts with reference mass 0; unseen reference atoms count fully.
    let r: HashMap<u8, f64> = [(0u8, 0.5), (1u8, 0.5)].into_iter().collect();
    let e = empirical_tv(&[2u8, 2, 0, 0], &r, 0, 0);
    assert!((e.tv - 0.5 * (0.5 + 0.0 + 0.5)).abs() < 1e-12, "{}", e.tv);
}

#[test]
fn structural_statistics() {
    let xs = vec![vec![], vec![0, 1], vec![0, 0, 1, 1]];
    let s = StructuralStats::of_samples(&xs, 1);
    assert_eq!(s.mean_depth, 1.0);
    assert_eq!(s.mean_len, 2.0);
    assert_eq!(s.depth_hist, vec![1.0 / 3.0; 3]);
    assert_eq!(max_depth(&[0, 1, 3, 2], 2), 2);
    assert_eq!(max_depth(&[0, 2, 1, 3], 2), 1);
    assert_eq!(hist_kl(&s.depth_hist, &s.depth_hist), 0.0);
    assert!(hist_kl(&[0.5, 0.5], &[1.0]).is_infinite());
    // Exact expectations under the laws: local projection over-produces
    // depth on D_{3,16} for this LM, exact Φ recovers μ* (App. H.6).
    let spec = DyckSpec {
        kinds: 1,
        max_depth: 3,
        max_len: 16,
    };
    let c = DyckConstraint::new(spec);
    let mut lm = BigramLm::new(spec.vocab_size(), 3).with_scale(1.0);
    let (mut one, mut ex) = (OneStepCheap::new(), Exact::default());
    let mut ests: Vec<&mut dyn PhiEstimator<DyckConstraint, BigramLm>> = vec![&mut one, &mut ex];
    let laws = TerminalLaws::enumerate(&c, &mut lm, &mut ests, 2000).unwrap();
    let star = StructuralStats::of_law(&laws.members, &laws.log_mu_star, 1);
    let proj = StructuralStats::of_law(&laws.members, &laws.log_mu_proj, 1);
    let phi = StructuralStats::of_law(&laws.members, &laws.estimators[1].log_mu, 1);
    assert!((phi.mean_depth - star.mean_depth).abs() < 1e-9);
    assert!(hist_kl(&star.len_hist, &phi.len_hist) < 1e-9);
    assert!(
        (proj.mean_len - star.mean_len).abs() > 1e-3,
        "proj {} star {}",
        proj.mean_len,
        star.mean_len
    );
}
