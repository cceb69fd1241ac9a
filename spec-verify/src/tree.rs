//! Draft trees: what a drafter proposes when a round verifies a *tree* of
//! continuations instead of one block (tree speculative decoding:
//! SpecInfer, Miao et al. 2024; Medusa, Cai et al. 2024; EAGLE-2,
//! Li et al. 2024).
//!
//! A round in tree mode ([`crate::SpecConfig::tree`]) runs:
//!
//! 1. **Draft.** [`Drafter::draft_tree`](crate::Drafter::draft_tree)
//!    proposes a [`DraftTree`] of depth ≤ γ and at most
//!    [`TreeConfig::max_nodes`] nodes, with the law each node's children
//!    were drawn from ([`TreeDraft::laws`]). Every drafter has one: the
//!    default wraps its linear draft as a chain;
//!    [`TreeLookup`](crate::TreeLookup) branches over the distinct
//!    continuations of several earlier occurrences of the context's
//!    suffix; a draft model samples a tree of i.i.d. draws
//!    ([`sampled_tree_from_model`](crate::drafter::sampled_tree_from_model);
//!    its argmax chain in greedy mode).
//! 2. **Cut.** The committed matcher gives the mask at the root and at
//!    every node in one walk ([`zapspec_core::draft_tree_masks`]: forked
//!    along branches by rollback, a refused token marks its node rejected
//!    and its subtree pruned); rejected and pruned nodes are dropped
//!    before the target sees them, and so are EOS nodes' rows (nothing
//!    follows EOS).
//! 3. **Score.** One target call scores the root and every kept node
//!    ([`zapspec_core::LanguageModel::tree_logits`]).
//! 4. **Walk.** From the root: emit the next token from the verifier's
//!    law `π` at the node — the target's logits masked to the node's
//!    allowed set and renormalised (Leviathan), reweighted by Φ̂ first
//!    (FVO-Spec), cut to the nucleus when top-p < 1; its argmax in greedy
//!    mode — and commit it; if it is a child's token, descend into that
//!    child, otherwise stop. A node at depth γ ends the round with one more
//!    draw (the bonus token). How the token is emitted at a node
//!    ([`crate::SpecConfig::tree_verify`], [`TreeVerify`]):
//!    * **naive sampling** — a draw of `π` (SpecInfer, Miao et al. 2024,
//!      Alg. 2 with point-mass proposals). Used for deterministic children
//!      ([`DraftLaw::Point`]: lookup drafters, greedy chains) under both
//!      settings, and for every node under [`TreeVerify::Naive`];
//!    * **residual verification** ([`TreeVerify::Residual`], the
//!      default) — where the node's children were *drawn* i.i.d. from a
//!      draft law `q` ([`DraftLaw::Dist`] in [`TreeDraft::laws`], as a
//!      draft model's sampled tree records them), SpecInfer's multi-step
//!      speculative sampling ([`crate::verify::multi_step`]): the draws, in
//!      draw order, are accepted with probability `min(1, r(c)/q(c))`
//!      against `r = π` and then the residuals `r ← (r − q)⁺/‖(r − q)⁺‖₁`;
//!      if all are rejected the token is a draw of the last residual (and
//!      the walk still descends if that draw is a child's token).
//!
//! Every committed token is a draw from the non-speculative law `π` at its
//! prefix, whatever tree was drafted (the tree only decides how many of
//! those draws share one target call), so the output law is exactly that
//! of plain constrained sampling (`μ^proj` under Leviathan, `μ^Φ̂` under
//! FVO-Spec, `μ*` with exact Φ), and greedy output is plain constrained
//! greedy output. For naive sampling this is immediate. For the residual
//! rule it is SpecInfer's Theorem 4.2, which needs the draws at a node to
//! be i.i.d. from `q` *given everything that decided the walk reached the
//! node and how many draws it has* — true of
//! [`sampled_tree_from_model`](crate::drafter::sampled_tree_from_model),
//! which draws breadth-first, so a node's number of children depends only
//! on earlier draws, and the draws below a node are made after (and
//! conditionally independent of) its siblings' coin flips. The treatment
//! of **repeated draws** (i.i.d. sampling draws a token twice): every draw
//! is its own node and its own attempt, in draw order, against the
//! evolving residual — the induction of
//! [`multi_step`](crate::verify::multi_step) never assumes distinct
//! draws; for scoring, the decoder merges equal siblings into one node
//! (the drafter expands only the first of them, so the subtree is that
//! node's). Draws the constraint refuses stay in the attempt list
//! (rejected with certainty: `π` is 0 there, and the residual update
//! still happens), and `q` is taken on the node's valid set without
//! renormalising, so drafters that ignore the mask stay exact too. Where
//! merged siblings carry children drawn from different laws, the node is
//! verified naively.
//!
//! Which rule accepts more: for deterministic children naive sampling
//! accepts a child with the target's whole mass on the children, which no
//! rule can beat; for sampled children the residual rule accepts the first
//! draw with probability `Σ min(π, q)` (1 when `q = π`), naive sampling
//! only with `π(children)`. The equality diagnostic has no tree form: in
//! tree mode it walks like FVO-Spec.

use serde::{Deserialize, Serialize};
use zapspec_core::TokenId;

pub use zapspec_core::DraftTree;

use crate::verify::DraftLaw;
use crate::VerifyError;

/// How tree mode verifies a node whose children were sampled from a draft
/// law ([`DraftLaw::Dist`] in [`TreeDraft::laws`]); see the module docs.
/// Deterministic children ([`DraftLaw::Point`]) are verified naively
/// under both: for distinct point proposals the residual rule has the
/// same output law and acceptance (rejecting a point draw removes its
/// token from the target and renormalises, which is naive sampling), so
/// nothing changes for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum TreeVerify {
    /// Naive sampling (SpecInfer, Miao et al. 2024, Alg. 2 with point-mass
    /// proposals): draw from the verifier's law `π` at the node, descend
    /// if the draw is a child's token. Ignores the draft law.
    Naive,
    /// SpecInfer's multi-step speculative sampling (Miao et al. 2024,
    /// Alg. 2, `VerifyStochastic`; [`crate::verify::multi_step`]): the
    /// children's draws, in draw order, are tried one after the other
    /// against `π` and then against the residuals `(π − q)⁺`; the emitted
    /// token is a draw of `π`, and the first draw alone is accepted with
    /// probability `Σ min(π, q)` (1 when `q = π`), where naive sampling
    /// hits a child with probability `π(children)`.
    #[default]
    Residual,
}

/// The shape bound of a draft tree (its depth is the round's γ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TreeConfig {
    /// Most children of one node (the root included), ≥ 1; 1 makes every
    /// tree a chain.
    pub max_width: usize,
    /// Most nodes of a tree (the root not counted), ≥ 1.
    pub max_nodes: usize,
}

impl Default for TreeConfig {
    /// Width 4, at most 32 nodes.
    fn default() -> Self {
        TreeConfig {
            max_width: 4,
            max_nodes: 32,
        }
    }
}

impl TreeConfig {
    /// Checks the fields (both at least 1).
    pub fn validate(&self) -> Result<(), VerifyError> {
        if self.max_width == 0 || self.max_nodes == 0 {
            return Err(VerifyError::Config(format!(
                "tree max_width and max_nodes must be at least 1, got {} and {}",
                self.max_width, self.max_nodes
            )));
        }
        Ok(())
    }
}

/// One round's tree proposal.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TreeDraft {
    /// The drafted tree (parents before children).
    pub tree: DraftTree,
    /// The law the children of each node were drawn from, i.i.d. and in
    /// the order of their indices (duplicates included, as separate
    /// nodes): `laws[0]` for the root's children, `laws[i + 1]` for node
    /// `i`'s. Missing entries (e.g. an empty list) are
    /// [`DraftLaw::Point`]: deterministic children.
    pub laws: Vec<DraftLaw>,
    /// Draft-model forward calls spent.
    pub calls: usize,
}

impl TreeDraft {
    /// A tree of deterministic proposals (point laws everywhere).
    pub fn point(tree: DraftTree, calls: usize) -> Self {
        TreeDraft {
            tree,
            laws: Vec::new(),
            calls,
        }
    }
}

/// Builds a tree from continuations in priority order: each is inserted
/// as a path from the root, sharing the prefix it has with earlier ones;
/// a new branch is opened only where its node has fewer than `max_width`
/// children, and no node past `max_nodes` or depth `depth` is added (a
/// continuation that does not fit is cut there).
pub fn tree_of_continuations<'a>(
    conts: impl IntoIterator<Item = &'a [TokenId]>,
    depth: usize,
    shape: &TreeConfig,
) -> DraftTree {
    let mut tree = DraftTree::default();
    // children of the root (slot 0) and of node i (slot i + 1)
    let mut kids: Vec<Vec<(TokenId, usize)>> = vec![Vec::new()];
    for cont in conts {
        let mut slot = 0usize;
        for &t in cont.iter().take(depth) {
            if let Some(&(_, c)) = kids[slot].iter().find(|(u, _)| *u == t) {
                slot = c + 1;
                continue;
            }
            if kids[slot].len() >= shape.max_width || tree.len() >= shape.max_nodes {
                break;
            }
            let parent = slot.checked_sub(1);
            // parents are existing nodes, so `push` cannot fail
            let Ok(c) = tree.push(parent, t) else { break };
            kids[slot].push((t, c));
            kids.push(Vec::new());
            slot = c + 1;
        }
    }
    tree
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TreeLookup;

    #[test]
    fn continuations_by_priority_and_merged_by_prefix() {
        let t = TreeLookup::default();
        // suffix "2 3": occurrences end at 3 (-> 4 5 ...), 8 (-> 7 8 ...);
        // 1-gram "3" adds nothing new; max_len 2
        let ctx = [1, 2, 3, 4, 5, 9, 2, 3, 7, 8, 6, 2, 3];
        let c = t.continuations(&ctx, 2);
        assert_eq!(c, vec![&[7, 8][..], &[4, 5][..]]);
        // 1-gram fallback adds continuations of other "3"s: none here
        let ctx = [5, 1, 5, 2, 5, 1, 6, 5];
        let c = t.continuations(&ctx, 2);
        assert_eq!(c, vec![&[1, 6][..], &[2, 5][..], &[1, 5][..]]);
        let tree = tree_of_continuations(c.clone(), 2, &TreeConfig::default());
        // 1 -> {6, 5}, 2 -> 5
        assert_eq!(tree.tokens(), &[1, 6, 2, 5, 5]);
        assert_eq!(tree.parents(), &[None, Some(0), None, Some(2), Some(0)]);
        // width 1: a chain (the first continuation); 2 nodes at most
        let chain = tree_of_continuations(
            c.clone(),
            2,
            &TreeConfig {
                max_width: 1,
                max_nodes: 32,
            },
        );
        assert_eq!(chain, DraftTree::chain(vec![1, 6]));
        let small = tree_of_continuations(
            c,
            1,
            &TreeConfig {
                max_width: 4,
                max_nodes: 1,
            },
        );
        assert_eq!(small, DraftTree::chain(vec![1]));
        assert!(t.continuations(&[1, 2], 3).is_empty());
        assert!(t.continuations(&ctx, 0).is_empty());
        let few = TreeLookup {
            max_matches: 1,
            ..TreeLookup::default()
        };
        assert_eq!(few.continuations(&ctx, 2).len(), 1);
    }
}
