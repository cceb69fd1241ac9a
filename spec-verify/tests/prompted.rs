//! Prompts in the loop: a token prefix both models condition on, outside
//! the constraint. A prompt changes μ* (and μ^proj); under it the Leviathan
//! loop still samples μ^proj and FVO-Spec with exact Φ still samples μ* —
//! of the prompted target — and an estimator that runs a model
//! (`WithModel::with_prompt`) sees the same prompt.

use zapspec_core::prob::{seeded_rng, tv};
use zapspec_core::{LanguageModel, TokenId};
use zapspec_phi::{Exact, Uniform, WithModel};
use zapspec_testkit::stats::{chi_square, noise_floor, tv_counts};
use zapspec_testkit::toy::{hashed_logits, ClosureLm};
use zapspec_testkit::{DyckConstraint, DyckSpec};
use zapspec_verify::{MemoLm, PrefixTree, SpecConfig, SpeculativeDecoder, TreePhi, VerifierKind};

const SPEC: DyckSpec = DyckSpec {
    kinds: 1,
    max_depth: 2,
    max_len: 8,
};

/// Logits hash the whole context, so every prompt token matters; EOS is
/// penalised (−3) so that μ* is not all on the empty string.
fn lm(seed: u64, scale: f64) -> ClosureLm<impl Fn(&[TokenId]) -> Vec<f32> + Clone> {
    let v = SPEC.vocab_size();
    ClosureLm::new(v, move |ctx: &[TokenId]| {
        let mut out = hashed_logits(seed, ctx, v, scale);
        out[v - 1] -= 3.0;
        out
    })
}

fn exp(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| x.exp()).collect()
}

fn tree_under(prompt: &[TokenId]) -> PrefixTree<DyckConstraint> {
    let mut m = lm(5, 2.0);
    m.prefill(prompt).unwrap();
    PrefixTree::enumerate(&DyckConstraint::new(SPEC), &mut m, 10_000).unwrap()
}

fn assert_law(counts: &[usize], law: &[f64], other: &[f64], what: &str) {
    let n: usize = counts.iter().sum();
    let t = tv_counts(counts, law);
    let (floor, sd) = noise_floor(&mut seeded_rng(99), law, n, 40);
    assert!(
        chi_square(counts, law).p_value > 1e-4,
        "{what}: χ² rejects its law"
    );
    assert!(t <= floor + 5.0 * sd, "{what}: TV {t} vs {floor} ± {sd}");
    assert!(
        chi_square(counts, other).p_value < 1e-6,
        "{what}: cannot tell the prompted law from the unprompted one"
    );
}

#[test]
fn prompt_changes_the_laws_and_the_loop_samples_the_prompted_ones() {
    let prompt: Vec<TokenId> = vec![2, 0, 1, 2];
    let (with, without) = (tree_under(&prompt), tree_under(&[]));
    let (star_p, star_0) = (exp(&with.log_mu_star()), exp(&without.log_mu_star()));
    let (proj_p, proj_0) = (exp(&with.log_mu_proj()), exp(&without.log_mu_proj()));
    assert!(
        tv(&star_p, &star_0) > 0.05,
        "the prompt must move μ*: {} {:?} {:?}",
        tv(&star_p, &star_0),
        &star_p[..4],
        &star_0[..4]
    );
    assert!(tv(&proj_p, &proj_0) > 0.05, "the prompt must move μ^proj");

    // an estimator running its own model: exact Φ under the prompt is μ*
    let mut e = WithModel::new(Exact::default(), lm(5, 2.0)).with_prompt(&prompt);
    let via = exp(&with.log_mu_phi(&mut e).unwrap());
    assert!(tv(&via, &star_p) < 1e-9);
    let mut e0 = WithModel::new(Exact::default(), lm(5, 2.0));
    assert!(tv(&exp(&with.log_mu_phi(&mut e0).unwrap()), &star_p) > 0.01);

    let c = DyckConstraint::new(SPEC);
    let index = with.member_index();
    let n = 20_000;
    for (verifier, law, other, what) in [
        (
            VerifierKind::Leviathan,
            &proj_p,
            &proj_0,
            "Leviathan, prompted → μ^proj",
        ),
        (
            VerifierKind::FvoSpec,
            &star_p,
            &star_0,
            "FVO-Spec, exact Φ, prompted → μ*",
        ),
    ] {
        let cfg = SpecConfig {
            gamma: 3,
            verifier,
            ..SpecConfig::default()
        };
        let (p, q) = (MemoLm::new(lm(5, 2.0)), MemoLm::new(lm(6, 1.5)));
        let mut rng = seeded_rng(11);
        let counts = if verifier == VerifierKind::FvoSpec {
            let mut d = SpeculativeDecoder::new(p, q, with.exact_phi(), cfg)
                .unwrap()
                .with_prompt(&prompt);
            d.sample_counts(&c, &index, n, &mut rng, |_| {}).unwrap().0
        } else {
            let mut d = SpeculativeDecoder::new(p, q, Uniform, cfg)
                .unwrap()
                .with_prompt(&prompt);
            let (counts, _) = d.sample_counts(&c, &index, n, &mut rng, |_| {}).unwrap();
            // the prompt is shared, never part of the output or re-decoded
            assert_eq!(&d.target.context()[..prompt.len()], &prompt[..]);
            counts
        };
        assert_law(&counts, law, other, what);
    }
}
