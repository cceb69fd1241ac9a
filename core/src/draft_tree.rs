//! Trees of tokens hanging off a context — drafted trees (tree speculative
//! decoding, as in SpecInfer / Medusa / EAGLE) and the rollout trees a
//! model grows level by level — and their masks: in one call, the mask at
//! the root and after every node's root-to-node path, for the verifier to
//! apply to the target's logits at every node of the tree at once (the
//! role of XGrammar's `TraverseDraftTree`).
//!
//! A [`DraftTree`] lists its nodes with their parent (`None`: a child of
//! the root, i.e. the first drafted token) and token; parents come before
//! their children, as in the breadth-first order drafters emit. The root is
//! the matcher's current state / the model's current context (the
//! committed prefix), not a node.
//!
//! **Depth** (the one convention, for masks and model scoring alike): a
//! node's depth is the number of tokens on its root-to-node path, so a
//! child of the root has depth 1. A model scores a node at position
//! `context.len() + depth − 1` (the position of its token), and its row
//! holds the logits of the token that follows the path.
//!
//! The same type serves the model side:
//! [`LanguageModel::tree_logits`](crate::LanguageModel::tree_logits) scores
//! a whole tree, and
//! [`LanguageModel::tree_logits_from`](crate::LanguageModel::tree_logits_from)
//! scores the nodes appended to a tree whose earlier nodes it scored
//! before ([`DraftTree::extend`] appends a level), one forward per level
//! over a shared KV cache.
//!
//! [`draft_tree_masks`] walks the tree depth-first on the caller's matcher:
//! to visit a node it [rolls back](Constraint::rollback) to the node's
//! parent (which is on the current path), [advances](Constraint::advance)
//! by the node's token and fills the mask; a token the constraint refuses
//! marks the node [`NodeMask::Rejected`] and its whole subtree
//! [`NodeMask::Pruned`] (not visited) instead of failing. The matcher is
//! back at its starting state when the call returns.
//!
//! ## Cost
//!
//! With `n` nodes, of which `r` are visited (not below a rejected node)
//! and `a ≤ r` accepted: `r` advance attempts (one token each; a refused
//! one leaves the state unchanged), `1 + a` masks, and rollbacks of `a`
//! tokens in all (each accepted token is undone exactly once; a jump from
//! a leaf to the next subtree rolls back by the depth difference, so one
//! rollback call per visited node). For `zapspec_earley::EarleyMatcher`
//! a rollback pops chart snapshots (O(1) each), and sibling nodes that
//! reach equal parser states share their mask through the pruned-state
//! cache. Memory: the masks (`|V|/64` words each) plus the children
//! lists, O(n).
//!
//! The walk needs nothing but [`Constraint`]'s advance and rollback, so it
//! is the one implementation for every matcher (`zapspec_earley`
//! re-exports it). [`LanguageModel::tree_logits`](crate::LanguageModel::tree_logits)
//! scores the same trees on the model side.

use crate::constraint::{Constraint, RejectReason, Rejected, RollbackError};
use crate::token_set::TokenSet;
use crate::vocab::TokenId;

/// A tree of tokens off a context (drafted, or grown by a model): node `i`
/// has token `tokens[i]` and parent `parents[i]` (`None` for a child of the
/// root), and every parent comes before its children (`parents[i] < i`).
/// Depths follow the [module's convention](self) (a child of the root has
/// depth 1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DraftTree {
    parents: Vec<Option<usize>>,
    tokens: Vec<TokenId>,
    /// Depth of each node (derived from `parents`).
    depths: Vec<usize>,
}

/// Why a [`DraftTree`] could not be built, or [`draft_tree_masks`] not run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DraftTreeError {
    /// There is not one parent per token.
    #[error("{parents} parents but {tokens} tokens")]
    LengthMismatch {
        /// Length of the parent list.
        parents: usize,
        /// Length of the token list.
        tokens: usize,
    },
    /// A node's parent does not come before it (out of range, itself, or
    /// a later node).
    #[error("node {node} has parent {parent}, which does not come before it")]
    ParentNotBefore {
        /// The node.
        node: usize,
        /// Its parent.
        parent: usize,
    },
    /// The constraint refused to roll back a token it had consumed (a
    /// broken [`Constraint`] implementation).
    #[error("rolling back the draft tree: {0}")]
    Rollback(#[from] RollbackError),
}

impl DraftTree {
    /// A tree from parallel lists of parents and tokens (see the type
    /// docs); errors when the lengths differ or a parent does not come
    /// before its child.
    pub fn new(parents: Vec<Option<usize>>, tokens: Vec<TokenId>) -> Result<Self, DraftTreeError> {
        let mut tree = DraftTree::default();
        tree.extend(&parents, &tokens)?;
        Ok(tree)
    }

    /// The well-formedness check of a parent list, for nodes numbered
    /// from `first` (0 for a whole tree; the current length when nodes are
    /// appended to a tree): one parent per token (`tokens` of them), and
    /// node `first + i`'s parent, if any, comes before it. The one check
    /// behind [`DraftTree::new`], [`DraftTree::push`] and
    /// [`DraftTree::extend`].
    pub fn check_parents(
        parents: &[Option<usize>],
        tokens: usize,
        first: usize,
    ) -> Result<(), DraftTreeError> {
        if parents.len() != tokens {
            return Err(DraftTreeError::LengthMismatch {
                parents: parents.len(),
                tokens,
            });
        }
        for (i, p) in parents.iter().enumerate() {
            let node = first + i;
            if let Some(parent) = *p {
                if parent >= node {
                    return Err(DraftTreeError::ParentNotBefore { node, parent });
                }
            }
        }
        Ok(())
    }

    /// A chain (one drafted sequence, as in plain speculative decoding):
    /// node `i` is the `i`-th token and the child of node `i − 1`.
    pub fn chain(tokens: Vec<TokenId>) -> Self {
        let parents = (0..tokens.len()).map(|i| i.checked_sub(1)).collect();
        let depths = (1..=tokens.len()).collect();
        DraftTree {
            parents,
            tokens,
            depths,
        }
    }

    /// Appends a node under `parent` (`None`: under the root) and returns
    /// its index; errors when `parent` is not an existing node.
    pub fn push(&mut self, parent: Option<usize>, token: TokenId) -> Result<usize, DraftTreeError> {
        self.extend(&[parent], &[token])
    }

    /// Appends nodes (`parents[i]`, `tokens[i]`), e.g. one level of a tree
    /// a model grows ([`LanguageModel::tree_logits_from`](crate::LanguageModel::tree_logits_from));
    /// a parent must be an earlier node, of the tree or of this call.
    /// Returns the index of the first new node. Errors (tree unchanged):
    /// lengths that differ, a parent that does not come before its child.
    pub fn extend(
        &mut self,
        parents: &[Option<usize>],
        tokens: &[TokenId],
    ) -> Result<usize, DraftTreeError> {
        let first = self.tokens.len();
        Self::check_parents(parents, tokens.len(), first)?;
        for &p in parents {
            let d = p.map_or(1, |p| self.depths[p] + 1);
            self.depths.push(d);
        }
        self.parents.extend_from_slice(parents);
        self.tokens.extend_from_slice(tokens);
        Ok(first)
    }

    /// Number of nodes (the root not counted).
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True when the tree has no node (only the root).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The parent of every node.
    pub fn parents(&self) -> &[Option<usize>] {
        &self.parents
    }

    /// The token of every node.
    pub fn tokens(&self) -> &[TokenId] {
        &self.tokens
    }

    /// The tokens from the root to `node` (inclusive), in order; `None`
    /// when `node` is not a node of the tree.
    pub fn path(&self, node: usize) -> Option<Vec<TokenId>> {
        if node >= self.len() {
            return None;
        }
        let mut out = Vec::new();
        let mut at = Some(node);
        while let Some(i) = at {
            out.push(self.tokens[i]);
            at = self.parents[i];
        }
        out.reverse();
        Some(out)
    }

    /// The depth of every node (a child of the root has depth 1: the
    /// length of its root-to-node path).
    pub fn depths(&self) -> &[usize] {
        &self.depths
    }

    /// The greatest depth of a node (0 for an empty tree).
    pub fn depth(&self) -> usize {
        self.depths.iter().copied().max().unwrap_or(0)
    }

    /// The children of every node (by index, increasing), and those of the
    /// root last.
    pub fn children(&self) -> (Vec<Vec<usize>>, Vec<usize>) {
        let mut kids = vec![Vec::new(); self.len()];
        let mut roots = Vec::new();
        for (i, p) in self.parents.iter().enumerate() {
            match *p {
                Some(p) => kids[p].push(i),
                None => roots.push(i),
            }
        }
        (kids, roots)
    }
}

/// The outcome of one node of a [`DraftTree`] in [`draft_tree_masks`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeMask {
    /// The node's path is accepted; the mask of the tokens allowed after it.
    Valid(TokenSet),
    /// The path to the parent is accepted but the node's token is not.
    Rejected(RejectReason),
    /// An ancestor (given) was rejected; the node was not visited.
    Pruned {
        /// The rejected ancestor.
        ancestor: usize,
    },
}

impl NodeMask {
    /// The mask, for a valid node.
    pub fn mask(&self) -> Option<&TokenSet> {
        match self {
            NodeMask::Valid(m) => Some(m),
            _ => None,
        }
    }

    /// True for a node whose whole path the constraint accepts.
    pub fn is_valid(&self) -> bool {
        matches!(self, NodeMask::Valid(_))
    }
}

/// The masks of a draft tree: at the root (the state before any drafted
/// token) and at every node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DraftTreeMasks {
    /// The mask of the matcher's state before the tree.
    pub root: TokenSet,
    /// Per node (same indices as the tree): its mask, or why it has none.
    pub nodes: Vec<NodeMask>,
}

/// Computes the mask at the root and after every node of `tree` (see the
/// [module docs](self) for the walk and its cost) on `matcher`, which is
/// left in the state it started in. A refused token marks its node
/// [`NodeMask::Rejected`] and its descendants [`NodeMask::Pruned`]; the
/// call itself fails only if the constraint cannot roll back what it
/// consumed ([`DraftTreeError::Rollback`], a broken implementation).
pub fn draft_tree_masks<C: Constraint>(
    matcher: &mut C,
    tree: &DraftTree,
) -> Result<DraftTreeMasks, DraftTreeError> {
    let root = matcher.mask();
    let (kids, roots) = tree.children();
    let mut nodes: Vec<Option<NodeMask>> = vec![None; tree.len()];
    // Depth-first, children in index order: (node, depth of its parent).
    let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&r| (r, 0)).collect();
    let mut depth = 0usize; // tokens advanced on `matcher` by this walk
    let mut result = Ok(());
    while let Some((v, parent_depth)) = stack.pop() {
        // The parent is on the current path (depth-first order).
        if let Err(e) = matcher.rollback(depth - parent_depth) {
            result = Err(e);
            break;
        }
        depth = parent_depth;
        match matcher.advance(tree.tokens[v]) {
            Ok(()) => {
                depth += 1;
                nodes[v] = Some(NodeMask::Valid(matcher.mask()));
                stack.extend(kids[v].iter().rev().map(|&c| (c, depth)));
            }
            Err(Rejected { reason, .. }) => {
                nodes[v] = Some(NodeMask::Rejected(reason));
                // Mark the subtree pruned (children come after parents).
                let mut below = vec![v];
                while let Some(u) = below.pop() {
                    for &c in &kids[u] {
                        nodes[c] = Some(NodeMask::Pruned { ancestor: v });
                        below.push(c);
                    }
                }
            }
        }
    }
    let back = matcher.rollback(depth);
    result?;
    back?;
    // Every node is reached from a root of the walk unless an ancestor was
    // rejected (which marks it), so after a completed walk each is `Some`;
    // the fallback is never taken.
    let nodes = nodes
        .into_iter()
        .map(|n| {
            n.unwrap_or(NodeMask::Pruned {
                ancestor: usize::MAX,
            })
        })
        .collect();
    Ok(DraftTreeMasks { root, nodes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_are_validated() {
        assert_eq!(
            DraftTree::new(vec![None], vec![]),
            Err(DraftTreeError::LengthMismatch {
                parents: 1,
                tokens: 0
            })
        );
        assert_eq!(
            DraftTree::new(vec![None, Some(1)], vec![0, 0]),
            Err(DraftTreeError::ParentNotBefore { node: 1, parent: 1 })
        );
        assert_eq!(
            DraftTree::new(vec![Some(5)], vec![0]),
            Err(DraftTreeError::ParentNotBefore { node: 0, parent: 5 })
        );
        let mut t = DraftTree::chain(vec![7, 8]);
        assert_eq!(t.parents(), &[None, Some(0)]);
        assert_eq!(t.push(Some(0), 9), Ok(2));
        assert!(t.push(Some(3), 9).is_err());
        assert_eq!(t.path(2), Some(vec![7, 9]));
        assert_eq!(t.path(3), None);
        assert_eq!(t.len(), 3);
        assert_eq!(t.depths(), &[1, 2, 2]);
        // extending by a level: all or nothing
        assert!(t.extend(&[Some(2), Some(4)], &[1, 1]).is_err());
        assert!(t.extend(&[Some(2)], &[1, 1]).is_err());
        assert_eq!(t.len(), 3);
        assert_eq!(t.extend(&[Some(2), None, Some(3)], &[1, 2, 3]), Ok(3));
        assert_eq!(t.depths(), &[1, 2, 2, 3, 1, 4]);
        assert_eq!(t.depth(), 4);
        assert_eq!(
            DraftTree::new(t.parents().to_vec(), t.tokens().to_vec()),
            Ok(t)
        );
    }
}
