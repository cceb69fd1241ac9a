//! Property tests on random small finite languages and random LMs: exact Φ
//! reweighting recovers μ* (Prop. 6), the KL gap identity (App. F),
//! Theorem 7 and the relative-error corollary are never violated, tiny Φ
//! (1e-8 and far below) stays finite, and exact Dyck DP equals brute force.
mod common;

use std::sync::Arc;

use common::{brute_dyck, members, random_lm, seq_logp};
use proptest::prelude::*;
use zapspec_core::{prob, Constraint, LanguageModel, TokenId};
use zapspec_phi::certificates::{kl_gap, StepDiagnostics};
use zapspec_phi::metrics::TerminalLaws;
use zapspec_phi::{valid_set, Exact, ExactTrie, OneStepCheap, PhiEstimator, Uniform};
use zapspec_testkit::toy::ClosureLm;
use zapspec_testkit::TokenTrie;
use zapspec_testkit::{DyckConstraint, DyckSpec, TrieConstraint};

/// Vocabulary: tokens 0..4 form the language, 4 is EOS, 5 is a junk token
/// that is never valid (it carries the model's invalid mass).
const V: usize = 6;
const EOS: TokenId = 4;

fn lang() -> impl Strategy<Value = Vec<Vec<TokenId>>> {
    prop::collection::vec(prop::collection::vec(0u32..4, 0..5), 1..8)
}

/// A random LM whose junk token gets `junk` extra logit (40: Φ ≈ e^-40 per
/// step, far below 1e-8).
fn lm_with_junk(
    seed: u64,
    scale: f32,
    junk: f32,
) -> ClosureLm<impl Fn(&[TokenId]) -> Vec<f32> + Clone> {
    let base = random_lm(V, seed, scale);
    ClosureLm::new(V, move |ctx: &[TokenId]| {
        let mut b = base.clone();
        let mut l = b.logits_for(ctx).unwrap_or_else(|_| vec![0.0; V]);
        l[5] += junk;
        l
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

    #[test]
    fn exact_reweighting_recovers_mu_star(seqs in lang(), seed in 0u64..1000, scale in 0.5f32..6.0, junk in 0f32..5.0) {
        let c = TrieConstraint::new(Arc::new(TokenTrie::new(&seqs)), V, EOS);
        let mut lm = lm_with_junk(seed, scale, junk);
        let (mut u, mut ex, mut et, mut one) = (Uniform::new(), Exact::default(), ExactTrie::new(), OneStepCheap::new());
        let mut ests: Vec<&mut dyn PhiEstimator<TrieConstraint, _>> = vec![&mut u, &mut ex, &mut et, &mut one];
        let laws = TerminalLaws::enumerate(&c, &mut lm, &mut ests, 1000).unwrap();
        let star: f64 = laws.log_mu_star.iter().map(|l| l.exp()).sum();
        let proj: f64 = laws.log_mu_proj.iter().map(|l| l.exp()).sum();
        prop_assert!((star - 1.0).abs() < 1e-12 && (proj - 1.0).abs() < 1e-12);
        prop_assert!(laws.tv_est_star(1) < 1e-12, "Exact TV {}", laws.tv_est_star(1));
        prop_assert!(laws.tv_est_star(2) < 1e-12, "ExactTrie TV {}", laws.tv_est_star(2));
        prop_assert!((laws.tv_est_star(0) - laws.tv_proj_star()).abs() < 1e-12);
        // Sequence-level Theorem 7 (App. B) for OneStep, whenever finite.
        let tv1 = laws.tv_est_star(3);
        prop_assert!(tv1 <= laws.estimators[3].seq_bound + 1e-12);
        // log Z equals brute force over the members.
        let mut lm2 = lm_with_junk(seed, scale, junk);
        let lz: Vec<f64> = members(&c).iter().map(|x| seq_logp(&mut lm2, &[], x, EOS)).collect();
        prop_assert!((prob::logsumexp(&lz) - laws.log_z).abs() < 1e-9);
    }

    #[test]
    fn kl_identity_holds_at_every_prefix(seqs in lang(), seed in 0u64..1000, scale in 0.5f32..6.0) {
        let c0 = TrieConstraint::new(Arc::new(TokenTrie::new(&seqs)), V, EOS);
        let mut lm = lm_with_junk(seed, scale, 0.0);
        let mut ex = Exact::default();
        for x in members(&c0) {
            let mut c = c0.clone();
            for i in 0..=x.len() {
                let logits = lm.logits_for(&x[..i]).unwrap();
                let phi = ex.log_phi(&c, &mut lm, &logits).unwrap();
                let g = kl_gap(&logits, &valid_set(&c), &phi).unwrap();
                prop_assert!((g.direct - g.identity).abs() < 1e-9, "{} vs {}", g.direct, g.identity);
                prop_assert!(g.direct >= 0.0 && g.phi_bar > 0.0 && g.phi_bar <= 1.0 + 1e-12);
                if i < x.len() {
                    c.advance(x[i]).unwrap();
                }
            }
        }
    }

    #[test]
    fn theorem7_and_relative_bound_never_violated(
        seqs in lang(), seed in 0u64..1000, scale in 0.5f32..6.0,
        noise in prop::collection::vec(-1f64..1.0, V), size in 0f64..0.5, mult in prop::bool::ANY,
    ) {
        let c = TrieConstraint::new(Arc::new(TokenTrie::new(&seqs)), V, EOS);
        let mut lm = lm_with_junk(seed, scale, 0.0);
        let logits = lm.next_logits().unwrap();
        let phi = Exact::default().log_phi(&c, &mut lm, &logits).unwrap();
        let mask = valid_set(&c);
        // Additive or multiplicative perturbation of exact Φ.
        let hat: Vec<f64> = phi.iter().zip(&noise).map(|(&l, &n)| {
            if l == f64::NEG_INFINITY { return l; }
            let p = l.exp();
            let q = if mult { p * (1.0 + size * n) } else { (p + size * n).clamp(1e-300, 1.0) };
            q.ln()
        }).collect();
        let d = StepDiagnostics::compute(&logits, &mask, &phi, &hat).unwrap();
        if let Some(b) = d.bound {
            prop_assert!(d.delta < d.phi_bar);
            prop_assert!(d.tv <= b + 1e-12, "TV {} > bound {}", d.tv, b);
        }
        prop_assert!(d.tv <= d.rel_bound + 1e-12, "TV {} > relative bound {} (ε {})", d.tv, d.rel_bound, d.eps_rel);
        prop_assert!(!d.tv.is_nan() && !d.delta.is_nan());
    }

    #[test]
    fn tiny_phi_stays_finite(seqs in lang(), seed in 0u64..1000, junk in 30f32..60.0) {
        let c = TrieConstraint::new(Arc::new(TokenTrie::new(&seqs)), V, EOS);
        let mut lm = lm_with_junk(seed, 1.0, junk);
        let (mut ex, mut one) = (Exact::default(), OneStepCheap::new());
        let mut ests: Vec<&mut dyn PhiEstimator<TrieConstraint, _>> = vec![&mut ex, &mut one];
        let laws = TerminalLaws::enumerate(&c, &mut lm, &mut ests, 1000).unwrap();
        prop_assert!(laws.log_z.is_finite() && laws.log_z < (1e-8f64).ln(), "log Z {}", laws.log_z);
        for e in &laws.estimators {
            prop_assert!(e.log_mu.iter().all(|l| !l.is_nan()));
        }
        prop_assert!(laws.log_mu_star.iter().all(|l| l.is_finite()));
        prop_assert!(laws.tv_est_star(0) < 1e-9, "TV {}", laws.tv_est_star(0));
        let logits = lm.logits_for(&[]).unwrap();
        let v = ExactTrie::new().log_phi(&c, &mut lm, &logits).unwrap();
        prop_assert!(v.iter().all(|x| !x.is_nan()));
    }

    /// OneStep-Cheap equals a naive evaluation of Def. 9, eq. (1).
    #[test]
    fn onestep_cheap_matches_definition_9(seqs in lang(), seed in 0u64..1000, scale in 0.5f32..8.0) {
        let c = TrieConstraint::new(Arc::new(TokenTrie::new(&seqs)), V, EOS);
        let mut lm = lm_with_junk(seed, scale, 0.0);
        let logits = lm.next_logits().unwrap();
        let got = OneStepCheap::new().log_phi(&c, &mut lm, &logits).unwrap();
        let p = prob::softmax(&logits);
        for y in valid_set(&c).iter() {
            let want = if y == EOS {
                1.0
            } else {
                let mut f = c.clone();
                f.advance(y).unwrap();
                f.mask().iter().map(|u| p[u as usize]).sum::<f64>()
            };
            // The |V| normaliser uses a fast f32 exp (relative error < 3e-7).
            prop_assert!((got[y as usize].exp() - want).abs() <= 1e-6 * want);
        }
    }

    #[test]
    fn exact_dyck_dp_equals_brute_force(kinds in 1usize..3, d in 1usize..4, l in 0usize..9, seed in 0u64..1000) {
        let spec = DyckSpec { kinds, max_depth: d, max_len: l };
        let c = DyckConstraint::new(spec);
        let brute = brute_dyck(kinds, d, l);
        prop_assert_eq!(members(&c).len(), brute.len());
        let mut lm = random_lm(spec.vocab_size(), seed, 2.5);
        let want: Vec<f64> = brute.iter().map(|x| seq_logp(&mut lm, &[], x, spec.eos())).collect();
        lm.truncate(0);
        let got = Exact::default().log_phi_prefix(&c, &mut lm).unwrap();
        prop_assert!((got - prob::logsumexp(&want)).abs() < 1e-9);
    }
}
