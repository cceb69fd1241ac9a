mod common;

use common::{members, random_lm, seq_logp};
use zapspec_core::LanguageModel;
use zapspec_phi::metrics::TerminalLaws;
use zapspec_phi::{Exact, MonteCarlo, OneStepCheap, OneStepTrue, PhiEstimator, Uniform};
use zapspec_testkit::toy::BigramLm;
use zapspec_testkit::{DyckConstraint, DyckSpec};

#[test]
fn dyck_laws_exact_phi_recovers_mu_star() {
    let spec = DyckSpec {
        kinds: 1,
        max_depth: 3,
        max_len: 12,
    };
    let c = DyckConstraint::new(spec);
    let mut lm = BigramLm::new(spec.vocab_size(), 5);
    let (mut u, mut o, mut t, mut e, mut mc) = (
        Uniform::new(),
        OneStepCheap::new(),
        OneStepTrue::new(),
        Exact::default(),
        MonteCarlo::new(4, 16, 1),
    );
    let mut ests: Vec<&mut dyn PhiEstimator<DyckConstraint, BigramLm>> =
        vec![&mut u, &mut o, &mut t, &mut e, &mut mc];
    let laws = TerminalLaws::enumerate(&c, &mut lm, &mut ests, 10_000).unwrap();
    assert_eq!(laws.members.len(), 145);
    assert_eq!(lm.context().len(), 0);
    let s: f64 = laws.log_mu_proj.iter().map(|l| l.exp()).sum();
    assert!((s - 1.0).abs() < 1e-12);
    assert!((laws.tv_est_star(0) - laws.tv_proj_star()).abs() < 1e-12);
    assert!(
        laws.tv_est_star(3) < 1e-12,
        "exact TV {}",
        laws.tv_est_star(3)
    );
    assert_eq!(laws.estimators[3].max_delta, 0.0);
    // brute-force log p(x EOS)
    let mut lm2 = BigramLm::new(spec.vocab_size(), 5);
    let ms = members(&c);
    assert_eq!(ms, laws.members);
    for (x, &lp) in ms.iter().zip(&laws.log_p).take(20) {
        assert!((seq_logp(&mut lm2, &[], x, spec.eos()) - lp).abs() < 1e-9);
    }
    eprintln!(
        "D3,12 bigram seed 5: TV proj {:.4} onestep {:.4} true {:.4} mc4 {:.4}",
        laws.tv_proj_star(),
        laws.tv_est_star(1),
        laws.tv_est_star(2),
        laws.tv_est_star(4)
    );
    let _ = random_lm(3, 0, 1.0);
}
