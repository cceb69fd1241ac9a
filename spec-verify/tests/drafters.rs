//! Drafters swapped under one loop: a draft model and prompt lookup
//! (point laws, cut where the grammar refuses) leave the output unchanged —
//! token for token under greedy decoding (against plain step-by-step
//! constrained decoding), and in law under sampling (Leviathan samples
//! μ^proj, FVO-Spec with exact Φ samples μ*, both of the prompted target,
//! computed exactly by enumeration).

use proptest::prelude::*;
use zapspec_core::prob::{argmax, seeded_rng};
use zapspec_core::{Constraint, LanguageModel, TokenId, TokenSet};
use zapspec_phi::{NoModel, PhiEstimator, PhiQuery, Uniform};
use zapspec_testkit::stats::{chi_square, noise_floor, tv_counts};
use zapspec_testkit::toy::{hashed_logits, ClosureLm};
use zapspec_testkit::{DyckConstraint, DyckSpec};
use zapspec_verify::{
    compact_log_law, DraftContext, Drafter, MemoLm, Mode, PrefixTree, PromptLookup, SpecConfig,
    SpeculativeDecoder, TreePhi, VerifierKind,
};

const SPEC: DyckSpec = DyckSpec {
    kinds: 1,
    max_depth: 3,
    max_len: 10,
};

/// Logits hash the whole context; EOS is penalised so μ* is not all on
/// the empty string.
fn lm(seed: u64) -> ClosureLm<impl Fn(&[TokenId]) -> Vec<f32> + Clone> {
    let v = SPEC.vocab_size();
    ClosureLm::new(v, move |ctx: &[TokenId]| {
        let mut out = hashed_logits(seed, ctx, v, 2.0);
        out[v - 1] -= 2.0;
        out
    })
}

/// A prompt that repeats bracket patterns, so prompt lookup proposes often.
const PROMPT: [TokenId; 12] = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1];

/// Plain constrained decoding, one target call per token: the argmax of
/// `log p_t(y) + log Φ̂(y)` over `A_t` (Φ̂ ≡ 1 without `phi`).
fn step_by_step<F: PhiEstimator<DyckConstraint, NoModel>>(
    seed: u64,
    prompt: &[TokenId],
    mut phi: Option<F>,
) -> Vec<TokenId> {
    let mut c = DyckConstraint::new(SPEC);
    let v = c.vocab_size();
    let mut m = lm(seed);
    let mut out = Vec::new();
    let mut mask = TokenSet::new(v);
    while !c.is_finished() {
        let mut ctx = prompt.to_vec();
        ctx.extend_from_slice(&out);
        let logits = m.logits_for(&ctx).unwrap();
        c.fill_mask(&mut mask);
        let ids: Vec<TokenId> = mask.iter().collect();
        let mut lphi = vec![0.0; v];
        if let Some(p) = phi.as_mut() {
            let q = PhiQuery::new(&out, &c, &mask, &logits);
            p.log_phi_into(&q, &mut NoModel::new(v), &mut lphi).unwrap();
        }
        let law = compact_log_law(&logits, &ids, Some(&lphi)).unwrap();
        let y = ids[argmax(&law).unwrap()];
        c.advance(y).unwrap();
        out.push(y);
    }
    if out.last() == Some(&c.eos()) {
        out.pop();
    }
    out
}

fn tree_under(seed: u64, prompt: &[TokenId]) -> PrefixTree<DyckConstraint> {
    let mut m = lm(seed);
    m.prefill(prompt).unwrap();
    PrefixTree::enumerate(&DyckConstraint::new(SPEC), &mut m, 100_000).unwrap()
}

fn decode<D: Drafter, F: PhiEstimator<DyckConstraint, NoModel>>(
    seed: u64,
    drafter: D,
    phi: F,
    verifier: VerifierKind,
    mode: Mode,
    gamma: usize,
    n: usize,
) -> Vec<Vec<TokenId>> {
    let cfg = SpecConfig {
        gamma,
        verifier,
        mode,
        ..SpecConfig::default()
    };
    let mut dec = SpeculativeDecoder::new(MemoLm::new(lm(seed)), drafter, phi, cfg)
        .unwrap()
        .with_prompt(&PROMPT);
    let mut rng = seeded_rng(seed ^ 77);
    let c = DyckConstraint::new(SPEC);
    (0..n)
        .map(|_| dec.generate(&c, &mut rng).unwrap().tokens)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Greedy: every drafter × verifier gives plain constrained greedy
    /// decoding's output (FVO-Spec's own target `p·Φ`, with exact Φ).
    #[test]
    fn greedy_output_does_not_depend_on_the_drafter(seed in 0u64..1_000_000, gamma in 1usize..6) {
        let plain = step_by_step::<Uniform>(seed, &PROMPT, None);
        let tree = tree_under(seed, &PROMPT);
        let star = step_by_step(seed, &PROMPT, Some(tree.exact_phi()));
        let lookups = [PromptLookup::default(), PromptLookup { max_ngram: 4, min_ngram: 2 }];
        for drafter in lookups {
            let got = decode(seed, drafter, Uniform, VerifierKind::Leviathan, Mode::Greedy, gamma, 1);
            prop_assert_eq!(&got[0], &plain, "prompt lookup {:?}, Leviathan", drafter);
            let got = decode(seed, drafter, tree.exact_phi(), VerifierKind::FvoSpec, Mode::Greedy, gamma, 1);
            prop_assert_eq!(&got[0], &star, "prompt lookup {:?}, FVO-Spec", drafter);
        }
        let got = decode(seed, MemoLm::new(lm(seed + 1)), Uniform, VerifierKind::Leviathan, Mode::Greedy, gamma, 1);
        prop_assert_eq!(&got[0], &plain, "draft model, Leviathan");
        let got = decode(seed, MemoLm::new(lm(seed + 1)), tree.exact_phi(), VerifierKind::FvoSpec, Mode::Greedy, gamma, 1);
        prop_assert_eq!(&got[0], &star, "draft model, FVO-Spec");
    }
}

fn exp(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| x.exp()).collect()
}

fn assert_law(
    samples: &[Vec<TokenId>],
    tree: &PrefixTree<DyckConstraint>,
    law: &[f64],
    other: &[f64],
    what: &str,
) {
    let idx = tree.member_index();
    let mut counts = vec![0usize; tree.num_members()];
    for s in samples {
        counts[*idx.get(s).expect("sample outside the language")] += 1;
    }
    let n = samples.len();
    let t = tv_counts(&counts, law);
    let (floor, sd) = noise_floor(&mut seeded_rng(99), law, n, 40);
    let chi = chi_square(&counts, law);
    assert!(
        chi.p_value > 1e-4,
        "{what}: χ² p = {} (stat {}, dof {})",
        chi.p_value,
        chi.statistic,
        chi.dof
    );
    assert!(
        t <= floor + 5.0 * sd,
        "{what}: TV {t} vs noise floor {floor} ± {sd}"
    );
    // the test has power: the other law is rejected by the same counts
    assert!(
        chi_square(&counts, other).p_value < 1e-6,
        "{what}: cannot tell the law from the other"
    );
}

/// Sampling with prompt-lookup drafts (point laws): Leviathan's loop
/// samples μ^proj and FVO-Spec with exact Φ samples μ*, of the prompted
/// target; 20,000 draws each, χ² and TV against the exact laws, and the
/// competing law rejected (power).
#[test]
fn prompt_lookup_keeps_the_output_law() {
    let seed = 3;
    let tree = tree_under(seed, &PROMPT);
    let (proj, star) = (exp(&tree.log_mu_proj()), exp(&tree.log_mu_star()));
    let s = decode(
        seed,
        PromptLookup::default(),
        Uniform,
        VerifierKind::Leviathan,
        Mode::Sampled,
        4,
        20_000,
    );
    assert_law(&s, &tree, &proj, &star, "prompt lookup, Leviathan");
    let s = decode(
        seed,
        PromptLookup::default(),
        tree.exact_phi(),
        VerifierKind::FvoSpec,
        Mode::Sampled,
        4,
        20_000,
    );
    assert_law(&s, &tree, &star, &proj, "prompt lookup, FVO-Spec");
}

/// Prompt lookup proposes only what the grammar allows: a proposal is cut
/// at the first refused token, so it never reaches the verifier as a
/// rejected draft, and it does fire on this prompt.
#[test]
fn prompt_lookup_drafts_are_cut_by_the_grammar() {
    let cfg = SpecConfig {
        gamma: 6,
        mode: Mode::Greedy,
        ..SpecConfig::default()
    };
    let mut dec =
        SpeculativeDecoder::new(MemoLm::new(lm(5)), PromptLookup::default(), Uniform, cfg)
            .unwrap()
            .with_prompt(&PROMPT);
    let c = DyckConstraint::new(SPEC);
    let g = dec.generate(&c, &mut seeded_rng(0)).unwrap();
    assert!(g.stats.drafted > 0, "prompt lookup never proposed");
    assert_eq!(g.stats.draft_calls, 0, "prompt lookup runs no model");
    // every proposal was valid where it was drafted: replay the rounds
    let mut d = PromptLookup::default();
    let mut fork = DyckConstraint::new(SPEC);
    let mut ctx = PROMPT.to_vec();
    let mut rng = seeded_rng(0);
    for &t in &g.tokens {
        let req = DraftContext {
            tokens: &ctx,
            prompt_len: PROMPT.len(),
            gamma: 6,
            sampled: false,
        };
        let p = d.draft(req, &mut fork.fork(), &mut rng).unwrap();
        let mut probe = fork.fork();
        for &x in &p.tokens {
            probe
                .advance(x)
                .expect("a drafted token the grammar refuses");
        }
        fork.advance(t).unwrap();
        ctx.push(t);
    }
}
