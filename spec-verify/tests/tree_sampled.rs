//! Sampled tree mode with a draft model: the draft model samples a tree
//! (`zapspec_verify::drafter::sampled_tree_from_model`) and the verifier
//! runs SpecInfer's multi-step speculative sampling at each node
//! ([`TreeVerify::Residual`], `zapspec_verify::verify::multi_step`).
//!
//! * **Law.** Pearson's χ² goodness-of-fit test (`zapspec_testkit::stats::
//!   chi_square`, χ² tail from `statrs`; cells with expected count < 5
//!   pooled) at level [`ALPHA`] = 10⁻⁴ over [`N`] = 10⁵ draws: the kernel's
//!   one-node law is the target's, and the decoder's law over whole
//!   sequences of a finite language is the exact plain constrained law
//!   (`μ^proj`, or `μ*` under FVO-Spec with exact Φ), enumerated by
//!   `PrefixTree`. The same test must reject deliberately broken variants:
//!   the kernel without the residual update, whose exact law is computed
//!   in closed form and against which the test's power is computed
//!   (noncentral χ² by Patnaik's approximation), and a drafter that
//!   reports a wrong draft law to the verifier.
//! * **Acceptance.** With the draft model equal to the target every first
//!   child is accepted (accepted length = tree depth); a close draft model
//!   is accepted further per round by the residual rule than by naive
//!   sampling.

use std::sync::Arc;

use rand::Rng;
use statrs::distribution::{ChiSquared, ContinuousCDF};
use zapspec_core::prob::{log_softmax, sample_log, seeded_rng};
use zapspec_core::{Constraint, LanguageModel, TokenId};
use zapspec_phi::{NoModel, PhiEstimator, Uniform};
use zapspec_testkit::stats::chi_square;
use zapspec_testkit::toy::BigramLm;
use zapspec_testkit::{DyckConstraint, DyckSpec, TokenTrie, TrieConstraint};
use zapspec_verify::drafter::sampled_tree_from_model;
use zapspec_verify::verify::{multi_step, MultiStep};
use zapspec_verify::{
    DecodeState, Draft, DraftContext, DraftLaw, Drafter, MemoLm, PrefixTree, RoundStats,
    SpecConfig, SpeculativeDecoder, TreeConfig, TreeDraft, TreePhi, TreeVerify, VerifierKind,
    VerifyError,
};

/// Level of every goodness-of-fit test: a law is rejected when p < ALPHA.
const ALPHA: f64 = 1e-4;
/// Draws per goodness-of-fit test.
const N: usize = 100_000;

fn exp(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| x.exp()).collect()
}

/// Power of the level-[`ALPHA`] χ² test with `dof` degrees of freedom
/// after `n` draws from `alt` when the hypothesis is `law` (no pooling):
/// the statistic is approximately noncentral χ²(dof, λ) with
/// `λ = n Σ (alt − law)²/law`, approximated (Patnaik 1949) by
/// `c·χ²(ν)`, `c = (dof + 2λ)/(dof + λ)`, `ν = (dof + λ)²/(dof + 2λ)`.
/// Returns `(λ, power)`.
fn power(law: &[f64], alt: &[f64], n: usize) -> (f64, f64) {
    let dof = (law.iter().filter(|&&p| p > 0.0).count() - 1) as f64;
    let lambda = n as f64
        * law
            .iter()
            .zip(alt)
            .filter(|(p, _)| **p > 0.0)
            .map(|(p, a)| (a - p).powi(2) / p)
            .sum::<f64>();
    let crit = ChiSquared::new(dof).unwrap().inverse_cdf(1.0 - ALPHA);
    let c = (dof + 2.0 * lambda) / (dof + lambda);
    let nu = (dof + lambda).powi(2) / (dof + 2.0 * lambda);
    (lambda, 1.0 - ChiSquared::new(nu).unwrap().cdf(crit / c))
}

/// The broken kernel: SpecInfer's attempts *without* the residual update
/// (every attempt is tested against `π` itself, and a rejection of all of
/// them draws from `π`).
fn no_residual<R: Rng>(
    rng: &mut R,
    target: &[f64],
    draft: &[f64],
    tries: &[Option<usize>],
) -> usize {
    for &c in tries.iter().flatten() {
        if rng.random::<f64>() < (target[c] - draft[c]).exp() {
            return c;
        }
    }
    sample_log(rng, target).unwrap()
}

/// The exact law of [`no_residual`] with `k` i.i.d. attempts from `q`
/// (probabilities; `q` may have mass past `p`'s candidates): each attempt
/// emits `y` with probability `min(p, q)(y)` and goes on with probability
/// `1 − β`, `β = Σ min(p, q)`; `Σ_{i<k} (1 − β)^i min(p, q) + (1 − β)^k p`.
fn no_residual_law(p: &[f64], q: &[f64], k: i32) -> Vec<f64> {
    let m: Vec<f64> = p.iter().zip(q).map(|(a, b)| a.min(*b)).collect();
    let beta: f64 = m.iter().sum();
    let geo: f64 = (0..k).map(|i| (1.0 - beta).powi(i)).sum();
    p.iter()
        .zip(&m)
        .map(|(pi, mi)| mi * geo + (1.0 - beta).powi(k) * pi)
        .collect()
}

#[test]
fn multi_step_emits_the_target_law_and_the_broken_kernel_is_rejected() {
    // target on 6 candidates; draft on 8 (mass on 6 and 7 lies outside
    // the target's list: those draws are attempts rejected for sure)
    let lp = log_softmax(&[1.0f64, 0.2, -0.5, 0.7, -1.0, 0.0]);
    let lq_full = log_softmax(&[0.0f64, 1.0, 0.5, -0.3, 0.2, -1.5, 0.4, -0.2]);
    let lq: Vec<f64> = lq_full[..6].to_vec(); // not renormalised
    let p = exp(&lp);
    for (k, seed) in [(1usize, 1u64), (3, 2), (4, 3)] {
        let mut rng = seeded_rng(seed);
        let mut good = vec![0usize; 6];
        let mut bad = vec![0usize; 6];
        let mut accepted = 0usize;
        for _ in 0..N {
            // i.i.d. draws in draw order (repeats happen often)
            let tries: Vec<Option<usize>> = (0..k)
                .map(|_| Some(sample_log(&mut rng, &lq_full).unwrap()).filter(|&c| c < 6))
                .collect();
            let out = multi_step(&mut rng, &lp, &lq, &tries).unwrap();
            if matches!(out, MultiStep::Accepted { .. }) {
                accepted += 1;
            }
            good[out.index()] += 1;
            bad[no_residual(&mut rng, &lp, &lq, &tries)] += 1;
        }
        let fit = chi_square(&good, &p);
        let broken = chi_square(&bad, &p);
        let alt = no_residual_law(&p, &exp(&lq), k as i32);
        let (lambda, pow) = power(&p, &alt, N);
        println!(
            "k = {k}: residual χ² p = {:.3} (dof {}); no-residual χ² p = {:.2e}; \
             power against the no-residual law: λ = {lambda:.0}, {pow:.6}; accepted {:.3}",
            fit.p_value,
            fit.dof,
            broken.p_value,
            accepted as f64 / N as f64
        );
        assert!(
            fit.p_value > ALPHA,
            "k = {k}: χ² rejects π (p = {})",
            fit.p_value
        );
        assert!(pow > 0.999, "k = {k}: power {pow}");
        assert!(
            broken.p_value < ALPHA,
            "k = {k}: broken kernel passes (p = {})",
            broken.p_value
        );
    }
    // q = π: the first attempt is always accepted
    let mut rng = seeded_rng(9);
    for _ in 0..1000 {
        let tries: Vec<Option<usize>> = (0..3).map(|_| sample_log(&mut rng, &lp).ok()).collect();
        let out = multi_step(&mut rng, &lp, &lp, &tries).unwrap();
        assert_eq!(
            out,
            MultiStep::Accepted {
                attempt: 0,
                index: tries[0].unwrap()
            }
        );
    }
    // no mass: None
    assert_eq!(
        multi_step(&mut rng, &[f64::NEG_INFINITY; 3], &lp[..3], &[Some(0)]),
        None
    );
}

fn dyck() -> DyckConstraint {
    DyckConstraint::new(DyckSpec {
        kinds: 1,
        max_depth: 2,
        max_len: 8,
    })
}

/// A finite language over 5 letters (+ EOS = 5) with shared prefixes and
/// members that are prefixes of other members.
fn trie() -> TrieConstraint {
    let seqs: Vec<Vec<TokenId>> = vec![
        vec![0],
        vec![0, 1],
        vec![0, 1, 2, 3],
        vec![0, 2],
        vec![1, 1, 1],
        vec![1, 3],
        vec![2],
        vec![2, 4, 4, 4, 4],
        vec![3, 0, 1],
    ];
    TrieConstraint::new(Arc::new(TokenTrie::new(seqs)), 6, 5)
}

const SHAPE: TreeConfig = TreeConfig {
    max_width: 3,
    max_nodes: 12,
};

fn target(v: usize) -> BigramLm {
    BigramLm::new(v, 11)
}

fn draft(v: usize) -> BigramLm {
    BigramLm::new(v, 12).with_scale(1.5)
}

/// Counts of `N` sequences of the tree-mode loop over the members of `c`.
fn tree_counts<C, D, F>(
    c: &C,
    drafter: D,
    phi: F,
    verifier: VerifierKind,
    how: TreeVerify,
    seed: u64,
) -> (Vec<usize>, RoundStats)
where
    C: Constraint,
    D: Drafter,
    F: PhiEstimator<C, NoModel>,
{
    let v = c.vocab_size();
    let tree = PrefixTree::enumerate(c, &mut target(v), 10_000).unwrap();
    let cfg = SpecConfig {
        gamma: 3,
        verifier,
        tree: Some(SHAPE),
        tree_verify: how,
        ..SpecConfig::default()
    };
    let mut dec = SpeculativeDecoder::new(MemoLm::new(target(v)), drafter, phi, cfg).unwrap();
    dec.sample_counts(c, &tree.member_index(), N, &mut seeded_rng(seed), |_| {})
        .unwrap()
}

/// Asserts the fit to `law` at level ALPHA and prints the power against
/// `alt`, a wrong law.
fn fits(counts: &[usize], law: &[f64], alt: &[f64], what: &str) {
    let fit = chi_square(counts, law);
    let (lambda, pow) = power(law, alt, N);
    println!(
        "{what}: χ² p = {:.3} (dof {}); power against the alternative: λ = {lambda:.0}, {pow:.6}",
        fit.p_value, fit.dof
    );
    assert!(
        fit.p_value > ALPHA,
        "{what}: χ² rejects the law (p = {})",
        fit.p_value
    );
    assert!(pow > 0.999, "{what}: power {pow}");
}

#[test]
fn residual_tree_mode_samples_plain_constrained_laws() {
    for (name, seed) in [("Dyck", 1u64), ("trie", 2)] {
        let (counts, stats, law, alt) = if name == "Dyck" {
            let c = dyck();
            let v = c.vocab_size();
            let t = PrefixTree::enumerate(&c, &mut target(v), 10_000).unwrap();
            let q = PrefixTree::enumerate(&c, &mut draft(v), 10_000).unwrap();
            let (counts, stats) = tree_counts(
                &c,
                MemoLm::new(draft(v)),
                Uniform,
                VerifierKind::Leviathan,
                TreeVerify::Residual,
                seed,
            );
            (counts, stats, exp(&t.log_mu_proj()), exp(&q.log_mu_proj()))
        } else {
            let c = trie();
            let v = c.vocab_size();
            let t = PrefixTree::enumerate(&c, &mut target(v), 10_000).unwrap();
            let q = PrefixTree::enumerate(&c, &mut draft(v), 10_000).unwrap();
            let (counts, stats) = tree_counts(
                &c,
                MemoLm::new(draft(v)),
                Uniform,
                VerifierKind::Leviathan,
                TreeVerify::Residual,
                seed,
            );
            (counts, stats, exp(&t.log_mu_proj()), exp(&q.log_mu_proj()))
        };
        // the alternative: the draft model's own plain constrained law
        fits(&counts, &law, &alt, &format!("residual, Leviathan, {name}"));
        assert!(stats.accepted > 0 && stats.nodes_drafted > stats.rounds);
        println!(
            "  {name}: {:.3} accepted per round, {:.3} tokens per round",
            stats.accepted_per_round(),
            stats.tokens_per_round()
        );
    }
    // FVO-Spec with exact Φ: μ* (μ^proj is the alternative)
    let c = trie();
    let v = c.vocab_size();
    let t = PrefixTree::enumerate(&c, &mut target(v), 10_000).unwrap();
    let (counts, _) = tree_counts(
        &c,
        MemoLm::new(draft(v)),
        t.exact_phi(),
        VerifierKind::FvoSpec,
        TreeVerify::Residual,
        3,
    );
    fits(
        &counts,
        &exp(&t.log_mu_star()),
        &exp(&t.log_mu_proj()),
        "residual, FVO-Spec exact Φ, trie",
    );
    // naive sampling of the same trees: exact too
    let c = dyck();
    let v = c.vocab_size();
    let t = PrefixTree::enumerate(&c, &mut target(v), 10_000).unwrap();
    let q = PrefixTree::enumerate(&c, &mut draft(v), 10_000).unwrap();
    let (counts, _) = tree_counts(
        &c,
        MemoLm::new(draft(v)),
        Uniform,
        VerifierKind::Leviathan,
        TreeVerify::Naive,
        4,
    );
    fits(
        &counts,
        &exp(&t.log_mu_proj()),
        &exp(&q.log_mu_proj()),
        "naive, Leviathan, Dyck",
    );
}

/// A draft model's sampled trees whose recorded laws are replaced by the
/// uniform law on each node's valid set: the verifier then trusts a law
/// the children were not drawn from (the bug of recording the wrong
/// temperature or the unmasked law). Its output law is biased.
struct WrongLaw<M>(M);

impl<M: LanguageModel> Drafter for WrongLaw<M> {
    fn draft<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        ctx: DraftContext<'_>,
        fork: &mut C,
        rng: &mut R,
    ) -> Result<Draft, VerifyError> {
        self.0.draft(ctx, fork, rng)
    }
    fn draft_tree<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        ctx: DraftContext<'_>,
        shape: &TreeConfig,
        fork: &mut C,
        rng: &mut R,
    ) -> Result<TreeDraft, VerifyError> {
        let mut t = sampled_tree_from_model(&mut self.0, ctx.tokens, fork, ctx.gamma, shape, rng)?;
        for law in &mut t.laws {
            if let DraftLaw::Dist { ids, log_q } = law {
                let u = -(ids.len() as f64).ln();
                log_q.iter_mut().for_each(|l| *l = u);
            }
        }
        Ok(t)
    }
    fn rewind(&mut self, ctx: &[TokenId]) {
        Drafter::rewind(&mut self.0, ctx);
    }
}

#[test]
fn a_verifier_told_the_wrong_draft_law_is_rejected() {
    let c = dyck();
    let v = c.vocab_size();
    let t = PrefixTree::enumerate(&c, &mut target(v), 10_000).unwrap();
    let (counts, _) = tree_counts(
        &c,
        WrongLaw(MemoLm::new(draft(v))),
        Uniform,
        VerifierKind::Leviathan,
        TreeVerify::Residual,
        5,
    );
    let fit = chi_square(&counts, &exp(&t.log_mu_proj()));
    println!(
        "wrong draft law: χ² p = {:.2e} (dof {})",
        fit.p_value, fit.dof
    );
    assert!(
        fit.p_value < ALPHA,
        "the broken variant passes (p = {})",
        fit.p_value
    );
}

/// Sampled trees drawn from the draft model's *unmasked* law (the
/// constraint is not consulted): refused draws are attempts the verifier
/// rejects for sure, and the recorded law keeps its mass off the valid
/// set. Exact all the same.
struct Unmasked<M>(M);

impl<M: LanguageModel> Drafter for Unmasked<M> {
    fn draft<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        _: DraftContext<'_>,
        _: &mut C,
        _: &mut R,
    ) -> Result<Draft, VerifyError> {
        Ok(Draft::default())
    }
    fn draft_tree<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        req: DraftContext<'_>,
        shape: &TreeConfig,
        _fork: &mut C,
        rng: &mut R,
    ) -> Result<TreeDraft, VerifyError> {
        let (ctx, gamma) = (req.tokens, req.gamma);
        let mut out = TreeDraft::default();
        let all: Vec<TokenId> = (0..self.0.vocab_size() as TokenId).collect();
        // breadth first: (node, its path)
        let mut level: Vec<(Option<usize>, Vec<TokenId>)> = vec![(None, ctx.to_vec())];
        out.laws.push(DraftLaw::Point);
        for _ in 0..gamma {
            let mut next = Vec::new();
            for (node, path) in level {
                let lq = log_softmax(&self.0.logits_for(&path)?);
                out.calls += 1;
                let mut seen = Vec::new();
                for _ in 0..shape.max_width {
                    if out.tree.len() >= shape.max_nodes {
                        break;
                    }
                    let t = sample_log(rng, &lq).unwrap() as TokenId;
                    let c = out.tree.push(node, t)?;
                    out.laws.push(DraftLaw::Point);
                    if !seen.contains(&t) {
                        seen.push(t);
                        let mut p = path.clone();
                        p.push(t);
                        next.push((Some(c), p));
                    }
                }
                out.laws[node.map_or(0, |n| n + 1)] = DraftLaw::Dist {
                    ids: all.clone(),
                    log_q: lq,
                };
            }
            level = next;
        }
        Ok(out)
    }
}

#[test]
fn refused_draws_are_rejected_attempts() {
    let c = trie();
    let v = c.vocab_size();
    let t = PrefixTree::enumerate(&c, &mut target(v), 10_000).unwrap();
    let q = PrefixTree::enumerate(&c, &mut draft(v), 10_000).unwrap();
    let (counts, stats) = tree_counts(
        &c,
        Unmasked(MemoLm::new(draft(v))),
        Uniform,
        VerifierKind::Leviathan,
        TreeVerify::Residual,
        6,
    );
    fits(
        &counts,
        &exp(&t.log_mu_proj()),
        &exp(&q.log_mu_proj()),
        "residual, unmasked draft trees, trie",
    );
    // many nodes were refused by the constraint
    assert!(stats.drafted < stats.nodes_drafted);
}

const DYCK2: DyckSpec = DyckSpec {
    kinds: 2,
    max_depth: 4,
    max_len: 24,
};

/// The acceptance tests' target: EOS (the last token) made rarer, so
/// sequences run long and rounds are rarely ended by EOS.
fn long_target(scale: f32) -> MemoLm<BigramLm> {
    let v = DYCK2.vocab_size();
    MemoLm::new(
        BigramLm::new(v, 11)
            .with_scale(scale)
            .with_bias(v as TokenId - 1, -3.0),
    )
}

fn decoder<D: Drafter>(
    drafter: D,
    how: TreeVerify,
    shape: TreeConfig,
) -> SpeculativeDecoder<MemoLm<BigramLm>, D, Uniform> {
    let cfg = SpecConfig {
        gamma: 3,
        tree: Some(shape),
        tree_verify: how,
        ..SpecConfig::default()
    };
    SpeculativeDecoder::new(long_target(2.0), drafter, Uniform, cfg).unwrap()
}

#[test]
fn a_draft_equal_to_the_target_has_every_first_child_accepted() {
    let c = DyckConstraint::new(DYCK2);
    // width 2, depth 3: room for the whole tree (2 + 4 + 8 nodes)
    let shape = TreeConfig {
        max_width: 2,
        max_nodes: 14,
    };
    let mut rng = seeded_rng(7);
    let mut dec = decoder(long_target(2.0), TreeVerify::Residual, shape);
    let mut rounds = 0;
    for _ in 0..200 {
        let mut state = DecodeState::new(c.clone());
        while !state.is_finished() {
            let r = dec.round(&mut state, &mut rng).unwrap();
            rounds += 1;
            // the whole first-child path: γ tokens and a bonus, or up to
            // a drafted EOS
            let eos_ended = r.extra.is_none() && state.is_finished();
            assert!(
                r.accepted == 3 && r.extra.is_some() || eos_ended,
                "round {rounds}: {r:?}"
            );
        }
    }
    let residual = dec.stats();
    // naive sampling of the same trees accepts less
    let mut dec = decoder(long_target(2.0), TreeVerify::Naive, shape);
    for _ in 0..200 {
        dec.generate(&c, &mut rng).unwrap();
    }
    let naive = dec.stats();
    println!(
        "draft = target: accepted per round {:.3} (residual) vs {:.3} (naive)",
        residual.accepted_per_round(),
        naive.accepted_per_round()
    );
    assert!(naive.accepted_per_round() < residual.accepted_per_round() - 0.2);
}

#[test]
fn a_close_draft_is_accepted_further_by_the_residual_rule() {
    let c = DyckConstraint::new(DYCK2);
    // the target's bigram logits at a lower scale: close, not equal
    let close = || long_target(1.6);
    let mut per_round = Vec::new();
    for how in [TreeVerify::Residual, TreeVerify::Naive] {
        let mut dec = decoder(close(), how, SHAPE);
        let mut rng = seeded_rng(8);
        for _ in 0..2000 {
            dec.generate(&c, &mut rng).unwrap();
        }
        let s = dec.stats();
        println!(
            "{how:?}: {:.3} accepted per round, {:.3} tokens per round, {} target calls",
            s.accepted_per_round(),
            s.tokens_per_round(),
            s.target_calls
        );
        per_round.push(s.accepted_per_round());
    }
    assert!(per_round[0] > per_round[1] + 0.1, "{per_round:?}");
}

#[test]
fn sampled_trees_are_bounded_and_carry_their_laws() {
    let c = DyckConstraint::new(DYCK2);
    let v = DYCK2.vocab_size();
    let mut m = MemoLm::new(draft(v));
    let mut rng = seeded_rng(3);
    let ctx = [0, 2, 1];
    for (gamma, width, nodes) in [(3, 2, 14), (4, 3, 10), (1, 4, 4), (5, 1, 32)] {
        let shape = TreeConfig {
            max_width: width,
            max_nodes: nodes,
        };
        m.truncate(0);
        m.prefill(&ctx).unwrap();
        let t = sampled_tree_from_model(&mut m, &ctx, &c, gamma, &shape, &mut rng).unwrap();
        assert_eq!(m.context(), &ctx, "the context is restored");
        assert!(t.tree.len() <= nodes && t.tree.depth() <= gamma);
        assert_eq!(t.laws.len(), t.tree.len() + 1);
        let (kids, roots) = t.tree.children();
        assert!(roots.len() <= width && kids.iter().all(|k| k.len() <= width));
        // a repeated sibling is a leaf; every node with children has a
        // law over the constraint's valid set at it
        let depths = t.tree.depths();
        for (i, k) in kids.iter().enumerate() {
            let sibs: Vec<usize> = match t.tree.parents()[i] {
                Some(p) => kids[p].clone(),
                None => roots.clone(),
            };
            let first = sibs
                .iter()
                .find(|&&s| t.tree.tokens()[s] == t.tree.tokens()[i]);
            if first != Some(&i) {
                assert!(k.is_empty());
            }
            assert_eq!(k.is_empty(), matches!(t.laws[i + 1], DraftLaw::Point));
            if !k.is_empty() {
                assert!(depths[i] < gamma);
            }
        }
        // the root's call, then one per further level
        assert!(t.calls >= 1 && t.calls <= t.tree.depth() + 1);
    }
}
