//! Exact laws of a finite token language on a real model, with the model's
//! rows batched: the tree of token sequences a constraint allows is walked
//! by its masks alone ([`TokenTrie::walk`], no model), every prefix's
//! next-token logits are scored a subtree at a time with
//! [`LanguageModel::tree_logits`] ([`trie_logits`]), and `zapspec_verify::MemoLm::with_table` serves
//! them to anything that drives a model through the usual
//! `prefill`/`truncate` interface (the prefix-tree enumeration of
//! `zapspec_phi::exact::tree::PrefixTree`, the `zapspec` loop). Used by the
//! `compose_law_schema` experiment.

use std::collections::HashMap;
use std::sync::Arc;

use zapspec_core::{Constraint, DraftTree, LanguageModel, ModelError, TokenId};

/// Why the token tree could not be built or scored.
#[derive(Debug, thiserror::Error)]
pub enum TrieError {
    /// More prefixes than the bound.
    #[error("the language has more than {limit} token prefixes")]
    TooLarge {
        /// The bound.
        limit: usize,
    },
    /// A prefix with an empty mask (not a finite language the walk can end).
    #[error("dead end after {tokens:?}: empty mask")]
    DeadEnd {
        /// The prefix.
        tokens: Vec<TokenId>,
    },
    /// The constraint refused a token of its own mask.
    #[error("the constraint refused token {token} of its own mask")]
    Refused {
        /// The token.
        token: TokenId,
    },
    /// The model failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A scored row of the wrong shape.
    #[error("tree_logits returned {rows} rows of {cols} for a tree of {want} nodes (vocabulary {vocab})")]
    Shape {
        /// Rows returned.
        rows: usize,
        /// Columns returned.
        cols: usize,
        /// Nodes scored.
        want: usize,
        /// Vocabulary size.
        vocab: usize,
    },
}

/// The tree of token sequences a finite constraint allows, in depth-first
/// pre-order (parents before children, children in token order). Node 0 is
/// the empty prefix.
#[derive(Debug, Clone, Default)]
pub struct TokenTrie {
    /// Parent of each node (`None` for the root).
    pub parent: Vec<Option<usize>>,
    /// Token leading to each node from its parent (the root's is unused: 0).
    pub token: Vec<TokenId>,
    /// Prefix length of each node.
    pub depth: Vec<usize>,
    /// Whether EOS is allowed after the node's prefix (it is a member).
    pub accepting: Vec<bool>,
}

impl TokenTrie {
    /// Walks `constraint`'s masks from its current state, forking per
    /// allowed non-EOS token, until every branch ends; fails past `limit`
    /// prefixes or on a dead end. `O(prefixes)` mask computations, no model.
    pub fn walk<C: Constraint>(constraint: &C, limit: usize) -> Result<Self, TrieError> {
        let eos = constraint.eos();
        let mut t = TokenTrie::default();
        // (parent, token, state)
        let mut stack: Vec<(Option<usize>, TokenId, C)> = vec![(None, 0, constraint.clone())];
        while let Some((parent, token, mut state)) = stack.pop() {
            if t.parent.len() >= limit {
                return Err(TrieError::TooLarge { limit });
            }
            let id = t.parent.len();
            t.parent.push(parent);
            t.token.push(token);
            t.depth.push(parent.map_or(0, |p| t.depth[p] + 1));
            let mask = state.mask();
            if mask.is_empty() {
                return Err(TrieError::DeadEnd {
                    tokens: t.tokens(id),
                });
            }
            t.accepting.push(mask.contains(eos));
            let kids: Vec<TokenId> = mask.iter().filter(|&y| y != eos).collect();
            for &y in kids.iter().rev() {
                let mut s = state.fork();
                s.advance(y).map_err(|_| TrieError::Refused { token: y })?;
                stack.push((Some(id), y, s));
            }
        }
        Ok(t)
    }

    /// Number of prefixes (nodes).
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// Whether the tree has no node (never after a successful walk).
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// Number of members (token sequences of the language).
    pub fn num_members(&self) -> usize {
        self.accepting.iter().filter(|&&a| a).count()
    }

    /// The tokens of node `id`'s prefix.
    pub fn tokens(&self, id: usize) -> Vec<TokenId> {
        let mut out = Vec::with_capacity(self.depth[id]);
        let mut n = id;
        while let Some(p) = self.parent[n] {
            out.push(self.token[n]);
            n = p;
        }
        out.reverse();
        out
    }

    /// Every member's tokens, in pre-order.
    pub fn members(&self) -> Vec<Vec<TokenId>> {
        (0..self.len())
            .filter(|&i| self.accepting[i])
            .map(|i| self.tokens(i))
            .collect()
    }
}

/// Next-token logits after every prefix of `trie`, appended to `lm`'s
/// current context: row `i` is node `i`'s. The root's row is one
/// [`LanguageModel::logits_for`]; the other nodes are scored in chunks of
/// about `chunk` consecutive pre-order nodes, each one
/// [`LanguageModel::tree_logits`] call over the chunk and its ancestors
/// (re-scored, at most the tree's depth per chunk). `lm` is left at its
/// starting context. `on_chunk(nodes done)` reports progress.
pub fn trie_logits<M: LanguageModel>(
    lm: &mut M,
    trie: &TokenTrie,
    chunk: usize,
    mut on_chunk: impl FnMut(usize),
) -> Result<Vec<Arc<[f32]>>, TrieError> {
    let base: Vec<TokenId> = lm.context().to_vec();
    let vocab = lm.vocab_size();
    let mut rows: Vec<Option<Arc<[f32]>>> = vec![None; trie.len()];
    let r = (|| {
        rows[0] = Some(lm.logits_for(&base)?.into());
        let chunk = chunk.max(1);
        let mut s = 1;
        while s < trie.len() {
            let e = (s + chunk).min(trie.len());
            // the chunk and the ancestors of its first node (every
            // out-of-chunk ancestor of a chunk node is one of those)
            let mut need: Vec<usize> = (s..e).collect();
            let mut a = trie.parent[s];
            while let Some(p) = a.filter(|&p| p != 0) {
                need.push(p);
                a = trie.parent[p];
            }
            need.sort_unstable();
            let pos: HashMap<usize, usize> =
                need.iter().enumerate().map(|(i, &n)| (n, i)).collect();
            let mut parents = Vec::with_capacity(need.len());
            let mut tokens = Vec::with_capacity(need.len());
            for &n in &need {
                parents.push(trie.parent[n].and_then(|p| pos.get(&p).copied()));
                tokens.push(trie.token[n]);
            }
            let tree = DraftTree::new(parents, tokens)
                .map_err(|e| ModelError::Backend(format!("draft tree: {e}")))?;
            let out = lm.tree_logits(&tree);
            lm.truncate(base.len());
            let out = out?;
            if out.nrows() != need.len() || out.ncols() != vocab {
                return Err(TrieError::Shape {
                    rows: out.nrows(),
                    cols: out.ncols(),
                    want: need.len(),
                    vocab,
                });
            }
            for (i, &n) in need.iter().enumerate() {
                if rows[n].is_none() {
                    rows[n] = Some(out.row(i).iter().copied().collect::<Vec<f32>>().into());
                }
            }
            on_chunk(e);
            s = e;
        }
        Ok(())
    })();
    lm.truncate(base.len());
    r?;
    // every node is in some chunk
    Ok(rows
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Arc::from(Vec::new())))
        .collect())
}
