//! Tree mode of the loop ([`zapspec_verify::tree`]): greedy output equals
//! plain step-by-step constrained greedy decoding whatever tree is drafted
//! (multi-match prompt lookup, a draft model's chain — another model or the
//! target itself, under both [`TreeVerify`] rules —, hand-made trees with
//! refused tokens, EOS nodes and repeated siblings); refused nodes are cut
//! before the target scores them; a round is one target call; bad trees
//! and shapes are errors. The sampled law is tested in
//! `zapspec/tests/compose.rs` and, for sampled draft-model trees, in
//! `tree_sampled.rs`.

use proptest::prelude::*;
use rand::Rng;
use zapspec_core::prob::seeded_rng;
use zapspec_core::{Constraint, DraftTree, LanguageModel, TokenId, TokenSet};
use zapspec_phi::Uniform;
use zapspec_testkit::toy::{hashed_logits, ClosureLm};
use zapspec_testkit::{DyckConstraint, DyckSpec};
use zapspec_verify::{
    Draft, DraftContext, Drafter, Mode, SpecConfig, SpeculativeDecoder, TreeConfig, TreeDraft,
    TreeLookup, TreeVerify, VerifierKind, VerifyError,
};

const SPEC: DyckSpec = DyckSpec {
    kinds: 2,
    max_depth: 3,
    max_len: 12,
};

fn lm(seed: u64) -> ClosureLm<impl Fn(&[TokenId]) -> Vec<f32> + Clone> {
    let v = SPEC.vocab_size();
    ClosureLm::new(v, move |ctx: &[TokenId]| {
        let mut out = hashed_logits(seed, ctx, v, 2.0);
        out[v - 1] -= 2.0;
        out
    })
}

const PROMPT: [TokenId; 12] = [0, 2, 3, 1, 0, 1, 2, 0, 1, 3, 0, 1];

/// Plain constrained greedy decoding, one target call per token.
fn step_by_step(seed: u64, prompt: &[TokenId]) -> Vec<TokenId> {
    let mut c = DyckConstraint::new(SPEC);
    let mut m = lm(seed);
    let mut out = Vec::new();
    let mut mask = TokenSet::new(c.vocab_size());
    while !c.is_finished() {
        let mut ctx = prompt.to_vec();
        ctx.extend_from_slice(&out);
        let logits = m.logits_for(&ctx).unwrap();
        c.fill_mask(&mut mask);
        let mut best: Option<TokenId> = None;
        for t in mask.iter() {
            if best.is_none_or(|b| logits[t as usize] > logits[b as usize]) {
                best = Some(t);
            }
        }
        let t = best.unwrap();
        c.advance(t).unwrap();
        out.push(t);
    }
    out.pop();
    out
}

/// Random trees over the whole vocabulary (EOS and refused tokens
/// included, siblings may repeat), ignoring the constraint.
struct RandomTrees(u64);

impl Drafter for RandomTrees {
    fn draft<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        _ctx: DraftContext<'_>,
        _fork: &mut C,
        _rng: &mut R,
    ) -> Result<Draft, VerifyError> {
        Ok(Draft::default())
    }
    fn draft_tree<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        ctx: DraftContext<'_>,
        shape: &TreeConfig,
        _fork: &mut C,
        _rng: &mut R,
    ) -> Result<TreeDraft, VerifyError> {
        let gamma = ctx.gamma;
        // its own stream, so the decoder's is untouched
        let mut rng = seeded_rng(self.0);
        self.0 += 1;
        let v = SPEC.vocab_size() as TokenId;
        let mut tree = DraftTree::default();
        let mut depth: Vec<usize> = Vec::new();
        let n = rng.random_range(0..=shape.max_nodes);
        for _ in 0..n {
            let parent = if tree.is_empty() || rng.random_bool(0.3) {
                None
            } else {
                Some(rng.random_range(0..tree.len()))
            };
            let d = parent.map_or(1, |p| depth[p] + 1);
            if d > gamma {
                continue;
            }
            tree.push(parent, rng.random_range(0..v)).unwrap();
            depth.push(d);
        }
        Ok(TreeDraft::point(tree, 0))
    }
}

fn decoder<D: Drafter>(
    seed: u64,
    drafter: D,
    gamma: usize,
    width: usize,
    verifier: VerifierKind,
) -> SpeculativeDecoder<impl LanguageModel, D, Uniform> {
    decoder_with(seed, drafter, gamma, width, verifier, TreeVerify::default())
}

fn decoder_with<D: Drafter>(
    seed: u64,
    drafter: D,
    gamma: usize,
    width: usize,
    verifier: VerifierKind,
    tree_verify: TreeVerify,
) -> SpeculativeDecoder<impl LanguageModel, D, Uniform> {
    let cfg = SpecConfig {
        tree_verify,
        gamma,
        mode: Mode::Greedy,
        verifier,
        tree: Some(TreeConfig {
            max_width: width,
            max_nodes: 24,
        }),
        ..SpecConfig::default()
    };
    SpeculativeDecoder::new(lm(seed), drafter, Uniform, cfg)
        .unwrap()
        .with_prompt(&PROMPT)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn tree_greedy_is_plain_greedy(seed in 0u64..5_000, gamma in 1usize..7, width in 1usize..5) {
        let want = step_by_step(seed, &PROMPT);
        let c = DyckConstraint::new(SPEC);
        let mut rng = seeded_rng(seed);
        for verifier in [VerifierKind::Leviathan, VerifierKind::FvoSpec] {
            let mut d = decoder(seed, TreeLookup::default(), gamma, width, verifier);
            let g = d.generate(&c, &mut rng).unwrap();
            prop_assert_eq!(&g.tokens, &want);
            // one target call per round (the prompt is not empty)
            prop_assert_eq!(g.stats.target_calls, g.stats.rounds);
            prop_assert!(g.stats.nodes_scored <= g.stats.nodes_drafted);
            let mut d = decoder(seed, RandomTrees(seed), gamma, width, verifier);
            let g = d.generate(&c, &mut rng).unwrap();
            prop_assert_eq!(&g.tokens, &want);
            prop_assert!(g.stats.nodes_scored <= g.stats.drafted);
            prop_assert!(g.stats.drafted <= g.stats.nodes_drafted);
            prop_assert_eq!(g.stats.emitted, want.len() + 1);
            // a draft model's greedy chain, under both tree rules: another
            // model, and the target itself (every draft accepted)
            for how in [TreeVerify::Residual, TreeVerify::Naive] {
                let mut d = decoder_with(seed, lm(seed + 1), gamma, width, verifier, how);
                let g = d.generate(&c, &mut rng).unwrap();
                prop_assert_eq!(&g.tokens, &want);
                let mut d = decoder_with(seed, lm(seed), gamma, width, verifier, how);
                let g = d.generate(&c, &mut rng).unwrap();
                prop_assert_eq!(&g.tokens, &want);
                prop_assert_eq!(g.stats.accepted, g.stats.drafted);
            }
        }
    }
}

#[test]
fn refused_nodes_are_cut_before_scoring() {
    let c = DyckConstraint::new(SPEC);
    let mut d = decoder(3, RandomTrees(7), 4, 3, VerifierKind::Leviathan);
    let mut rng = seeded_rng(0);
    let mut total = zapspec_verify::RoundStats::default();
    for _ in 0..20 {
        total.merge(&d.generate(&c, &mut rng).unwrap().stats);
    }
    // random trees over 5 tokens: many refused
    assert!(total.nodes_scored < total.drafted && total.drafted < total.nodes_drafted);
    assert!(total.accepted > 0);
}

/// A drafter that returns a fixed tree.
struct Fixed(DraftTree);

impl Drafter for Fixed {
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
        _: DraftContext<'_>,
        _: &TreeConfig,
        _: &mut C,
        _: &mut R,
    ) -> Result<TreeDraft, VerifyError> {
        Ok(TreeDraft::point(self.0.clone(), 0))
    }
}

#[test]
fn trees_past_the_bounds_and_bad_shapes_are_errors() {
    let c = DyckConstraint::new(SPEC);
    let mut rng = seeded_rng(0);
    let deep = DraftTree::chain(vec![0, 0, 1, 1]);
    let mut d = decoder(1, Fixed(deep), 3, 2, VerifierKind::Leviathan);
    assert!(matches!(
        d.generate(&c, &mut rng),
        Err(VerifyError::BadTree { depth: 4, .. })
    ));
    let wide = DraftTree::new(vec![None; 30], vec![0; 30]).unwrap();
    let mut d = decoder(1, Fixed(wide), 3, 2, VerifierKind::Leviathan);
    assert!(matches!(
        d.generate(&c, &mut rng),
        Err(VerifyError::BadTree { nodes: 30, .. })
    ));
    let cfg = SpecConfig {
        tree: Some(TreeConfig {
            max_width: 0,
            max_nodes: 4,
        }),
        ..SpecConfig::default()
    };
    assert!(SpeculativeDecoder::new(lm(0), TreeLookup::default(), Uniform, cfg).is_err());
}
