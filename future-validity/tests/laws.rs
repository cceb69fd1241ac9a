//! Terminal laws of the estimators on a small Dyck language.

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

/// `TerminalLaws` against a straightforward independent computation on
/// D_{2,3,8} under a context-dependent model, at the empty prefix and below
/// the prefix "(": members by brute force over all bracket strings, `log p`
/// by the chain rule, `log Z` by summation, μ* by Def. 2, μ^proj by the
/// chain rule of locally renormalised steps over the brute-force masks, and
/// exact Φ's law equal to μ* (Prop. 6), all to 1e-12.
#[test]
fn terminal_laws_match_brute_force_chain_rule() {
    use std::collections::{HashMap, HashSet};
    use zapspec_core::prob::{log_softmax, logsumexp};
    use zapspec_core::{Constraint, TokenId};
    use zapspec_testkit::toy::ClosureLm;

    let spec = DyckSpec {
        kinds: 2,
        max_depth: 3,
        max_len: 8,
    };
    let eos = spec.eos();
    let all = common::brute_dyck(2, 3, 8);
    for prompt in [vec![], vec![0 as TokenId]] {
        // members below the prompt, and every prefix of one
        let ms: Vec<Vec<TokenId>> = all
            .iter()
            .filter(|x| x.starts_with(&prompt))
            .map(|x| x[prompt.len()..].to_vec())
            .collect();
        let prefixes: HashSet<Vec<TokenId>> = ms
            .iter()
            .flat_map(|x| (0..=x.len()).map(move |i| x[..i].to_vec()))
            .collect();
        let member_set: HashSet<&Vec<TokenId>> = ms.iter().collect();
        let allowed = |x: &[TokenId]| -> Vec<TokenId> {
            (0..spec.vocab_size() as TokenId)
                .filter(|&y| {
                    if y == eos {
                        member_set.contains(&x.to_vec())
                    } else {
                        let mut z = x.to_vec();
                        z.push(y);
                        prefixes.contains(&z)
                    }
                })
                .collect()
        };
        let mut lm2 = common::random_lm(spec.vocab_size(), 4, 2.0);
        let mut log_p = HashMap::new();
        let mut log_proj = HashMap::new();
        for x in &ms {
            let (mut lp, mut lq) = (0.0, 0.0);
            let mut pre: Vec<TokenId> = Vec::new();
            for &t in x.iter().chain(std::iter::once(&eos)) {
                let mut ctx = prompt.clone();
                ctx.extend(&pre);
                let l = log_softmax(&lm2.logits_for(&ctx).unwrap());
                let a: Vec<f64> = allowed(&pre).iter().map(|&y| l[y as usize]).collect();
                lp += l[t as usize];
                lq += l[t as usize] - logsumexp(&a);
                pre.push(t);
            }
            log_p.insert(x.clone(), lp);
            log_proj.insert(x.clone(), lq);
        }
        let lps: Vec<f64> = ms.iter().map(|x| log_p[x]).collect();
        let log_z = logsumexp(&lps);

        let mut c = DyckConstraint::new(spec);
        let mut lm: ClosureLm<_> = common::random_lm(spec.vocab_size(), 4, 2.0);
        for &t in &prompt {
            c.advance(t).unwrap();
        }
        lm.prefill(&prompt).unwrap();
        let (mut ex, mut u) = (Exact::default(), Uniform::new());
        let mut ests: Vec<&mut dyn PhiEstimator<DyckConstraint, _>> = vec![&mut ex, &mut u];
        let laws = TerminalLaws::enumerate(&c, &mut lm, &mut ests, 10_000).unwrap();
        assert_eq!(lm.context(), &prompt[..]);
        assert_eq!(laws.members.len(), ms.len());
        assert_eq!(laws.members, common::members(&c));
        assert!((laws.log_z - log_z).abs() < 1e-12);
        for (i, x) in laws.members.iter().enumerate() {
            assert!((laws.log_p[i] - log_p[x]).abs() < 1e-12);
            assert!((laws.log_mu_star[i] - (log_p[x] - log_z)).abs() < 1e-12);
            assert!((laws.log_mu_proj[i] - log_proj[x]).abs() < 1e-12);
            // μ^Φ with exact Φ is μ* (Prop. 6); with Φ̂ ≡ 1 it is μ^proj
            assert!((laws.estimators[0].log_mu[i] - laws.log_mu_star[i]).abs() < 1e-12);
            assert!((laws.estimators[1].log_mu[i] - log_proj[x]).abs() < 1e-12);
        }
        // Φ̄ at the root: Z*/Z_p
        let l = log_softmax(&lm2.logits_for(&prompt).unwrap());
        let a: Vec<f64> = allowed(&[]).iter().map(|&y| l[y as usize]).collect();
        assert!((laws.root_phi_bar - (log_z - logsumexp(&a)).exp()).abs() < 1e-12);
        assert_eq!(laws.estimators[0].max_delta, 0.0);
    }
}
