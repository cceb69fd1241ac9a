//! The speculative loop on a target with −∞ logits on valid tokens:
//! drafts the target gives probability 0 are rejected, prefixes below
//! them (where every valid token may have zero target mass) are never
//! entered, and the sampled laws are still μ^proj
//! (Leviathan) and μ* (FVO-Spec with exact Φ). No `EmptySupport`.

use zapspec_core::prob::seeded_rng;
use zapspec_core::TokenId;
use zapspec_phi::Uniform;
use zapspec_testkit::stats::{chi_square, noise_floor, tv_counts};
use zapspec_testkit::toy::{hashed_logits, BigramLm, ClosureLm};
use zapspec_testkit::{DyckConstraint, DyckSpec};
use zapspec_verify::{MemoLm, PrefixTree, SpecConfig, SpeculativeDecoder, TreePhi, VerifierKind};

const SPEC: DyckSpec = DyckSpec {
    kinds: 2,
    max_depth: 2,
    max_len: 6,
};

/// Random logits; `(₁` after `(₀` is −∞, and after `(₀ (₁` every token but
/// the invalid `)₀` is −∞ (a zero-mass prefix reachable only through the
/// −∞ edge).
fn target() -> ClosureLm<impl Fn(&[TokenId]) -> Vec<f32> + Clone> {
    let v = SPEC.vocab_size();
    let (o0, o1, c0) = (SPEC.open(0), SPEC.open(1), SPEC.close(0));
    ClosureLm::new(v, move |ctx: &[TokenId]| {
        let mut out = hashed_logits(7, ctx, v, 1.5);
        if ctx.last() == Some(&o0) {
            out[o1 as usize] = f32::NEG_INFINITY;
        }
        if ctx.windows(2).any(|w| w == [o0, o1]) {
            for (y, l) in out.iter_mut().enumerate() {
                if y as TokenId != c0 {
                    *l = f32::NEG_INFINITY;
                }
            }
        }
        out
    })
}

/// Counts per member; the members the target cannot produce get none.
fn check(samples: &[Vec<TokenId>], tree: &PrefixTree<DyckConstraint>, log_law: &[f64], what: &str) {
    let idx = tree.member_index();
    let mut counts = vec![0usize; tree.num_members()];
    for s in samples {
        counts[*idx.get(s).expect("sample outside the language")] += 1;
    }
    let law: Vec<f64> = log_law.iter().map(|l| l.exp()).collect();
    let zero = law.iter().filter(|&&p| p == 0.0).count();
    assert!(zero > 0, "{what}: the target must cut some members off");
    for (c, p) in counts.iter().zip(&law) {
        assert!(
            *p > 0.0 || *c == 0,
            "{what}: a zero-probability member was sampled"
        );
    }
    let n = samples.len();
    let tv = tv_counts(&counts, &law);
    let (floor, sd) = noise_floor(&mut seeded_rng(99), &law, n, 40);
    let chi = chi_square(&counts, &law);
    assert!(chi.p_value > 1e-4, "{what}: chi-square p = {}", chi.p_value);
    assert!(tv <= floor + 5.0 * sd, "{what}: TV {tv} vs {floor} ± {sd}");
}

#[test]
fn loop_rejects_zero_probability_drafts_and_keeps_its_laws() {
    let c = DyckConstraint::new(SPEC);
    let v = SPEC.vocab_size();
    let tree = PrefixTree::enumerate(&c, &mut target(), 10_000).unwrap();
    let star = tree.log_mu_star();
    let proj = tree.log_mu_proj();
    assert!(star.iter().chain(&proj).all(|x| !x.is_nan()));
    // TreePhi::log_mu_phi with exact Φ is μ* again, no EmptySupport
    let via_phi = tree.log_mu_phi(&mut tree.exact_phi()).unwrap();
    for (a, b) in via_phi.iter().zip(&star) {
        assert!(a == b || (a - b).abs() < 1e-9, "{a} vs {b}");
    }
    let n = 20_000;
    for (verifier, exact, law, what) in [
        (VerifierKind::Leviathan, false, &proj, "Leviathan → μ^proj"),
        (VerifierKind::FvoSpec, true, &star, "FVO-Spec, exact Φ → μ*"),
    ] {
        let cfg = SpecConfig {
            gamma: 4,
            verifier,
            ..SpecConfig::default()
        };
        // the draft has no −∞: it proposes what the target rules out
        let p = MemoLm::new(target());
        let q = MemoLm::new(BigramLm::new(v, 12));
        let mut rng = seeded_rng(3);
        let samples: Vec<Vec<TokenId>> = if exact {
            let mut d = SpeculativeDecoder::new(p, q, tree.exact_phi(), cfg).unwrap();
            (0..n)
                .map(|_| d.generate(&c, &mut rng).unwrap().tokens)
                .collect()
        } else {
            let mut d = SpeculativeDecoder::new(p, q, Uniform, cfg).unwrap();
            (0..n)
                .map(|_| d.generate(&c, &mut rng).unwrap().tokens)
                .collect()
        };
        check(&samples, &tree, law, what);
    }
}
