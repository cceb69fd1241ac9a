//! The model traits: [`LanguageModel`] (autoregressive target or draft) and
//! [`DiffusionModel`] (masked diffusion LM, block-wise). A seeded toy model,
//! a trained model on CPU and a CUDA model are interchangeable behind them.

use std::ops::Range;

use crate::draft_tree::DraftTree;
use crate::vocab::TokenId;

/// Logits, one row per position, one column per token.
pub type Logits = ndarray::Array2<f32>;

/// Errors from running a model. Bad input (ids outside the vocabulary, a
/// context past the model's window, a broken checkpoint) is reported here,
/// never by a panic.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A token id at or past the model's vocabulary size.
    #[error("token {token} is outside the model's vocabulary of {vocab_size}")]
    TokenOutOfRange {
        /// The offending id.
        token: TokenId,
        /// The model's vocabulary size.
        vocab_size: usize,
    },
    /// The context would grow past the model's maximum sequence length.
    #[error("context of {len} tokens exceeds the model's window of {max}")]
    ContextOverflow {
        /// Context length (tokens) the call would reach.
        len: usize,
        /// The model's window (tokens).
        max: usize,
    },
    /// A block range that does not lie inside the sequence.
    #[error("block {start}..{end} is outside a sequence of {len} tokens")]
    BadBlock {
        /// First position of the block.
        start: usize,
        /// One past the last position of the block.
        end: usize,
        /// Length of the sequence (tokens).
        len: usize,
    },
    /// A draft whose length differs from the block it fills.
    #[error("draft {index} has {got} tokens, the block has {want}")]
    DraftLength {
        /// Index of the draft in the batch.
        index: usize,
        /// Its length (tokens).
        got: usize,
        /// The block length (tokens).
        want: usize,
    },
    /// A checkpoint that cannot be read or does not fit the model.
    #[error("checkpoint {path}: {reason}")]
    Checkpoint {
        /// The checkpoint's file path.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A failure inside the compute backend (device, kernel, tensor shape).
    #[error("backend: {0}")]
    Backend(String),
    /// The model is a placeholder that runs no forward passes (e.g.
    /// `zapspec_phi::NoModel`, which only states a vocabulary size).
    #[error("{0} runs no forward passes")]
    NoForward(&'static str),
}

/// An autoregressive language model with a KV cache over its context.
///
/// The context starts empty (models that need a BOS token add it
/// internally); [`prefill`](LanguageModel::prefill) appends tokens in one
/// forward pass; [`truncate`](LanguageModel::truncate) drops cache entries
/// after a rejected speculative draft.
pub trait LanguageModel {
    /// Number of tokens the model scores.
    fn vocab_size(&self) -> usize;

    /// The tokens currently in the context, oldest first.
    fn context(&self) -> &[TokenId];

    /// Appends `tokens` to the context in one forward pass. Row `i` of the
    /// result holds the logits of the token that follows
    /// `context ++ tokens[..=i]`; an empty `tokens` gives zero rows.
    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError>;

    /// Logits of the next token after the current context (for an empty
    /// context: the first token's).
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError>;

    /// Keeps the first `len` context tokens and drops the rest.
    fn truncate(&mut self, len: usize);

    /// The longest context the model accepts.
    fn max_context(&self) -> usize {
        usize::MAX
    }

    /// Sets the context to `ctx`, reusing the longest common prefix with the
    /// current one, and returns the next-token logits.
    fn logits_for(&mut self, ctx: &[TokenId]) -> Result<Vec<f32>, ModelError> {
        let cur = self.context();
        let common = cur.iter().zip(ctx).take_while(|(a, b)| a == b).count();
        if common == ctx.len() && common == cur.len() {
            return self.next_logits();
        }
        self.truncate(common);
        let rows = self.prefill(&ctx[common..])?;
        match rows.nrows() {
            0 => self.next_logits(),
            n => Ok(rows.row(n - 1).to_vec()),
        }
    }

    /// Scores the nodes `first..` of `tree` (hanging off the current
    /// context) whose earlier nodes `..first` it scored before: row `i` is
    /// the next-token logits after `context ++ tree.path(first + i)`. This
    /// grows a tree level by level (Monte Carlo rollouts, future-validity
    /// §5.4: one branch per rollout, one level per step; a draft model's
    /// sampled trees): append a level with [`DraftTree::extend`], score it
    /// here with `first` the level's first node. Nodes `..first` must have
    /// been scored by this method on this model for this tree (the same
    /// nodes), with no other call on the model in between; `first == 0`
    /// starts a tree. The context is the same afterwards (and on error); a
    /// model with a KV cache keeps the tree's keys and values past it until
    /// the next call that is not this method's. Errors: `first` past the
    /// tree, a tree out of step with the model (where the model can tell),
    /// and the forward's own errors.
    ///
    /// The default is correct for every model: each new node's path is
    /// set as the context ([`logits_for`](LanguageModel::logits_for), which
    /// reuses the longest common prefix, so siblings share their parent's
    /// prefix), one forward per node, and the context is truncated back. A
    /// model with a KV cache overrides it with one forward over all new
    /// nodes, each at position `context.len() + depth − 1` attending to the
    /// context and its own ancestors only, over the cached earlier nodes.
    fn tree_logits_from(&mut self, tree: &DraftTree, first: usize) -> Result<Logits, ModelError> {
        let Some(n) = tree.len().checked_sub(first) else {
            return Err(ModelError::Backend(format!(
                "tree_logits_from: node {first} of a tree of {} nodes",
                tree.len()
            )));
        };
        let base = self.context().len();
        let vocab = self.vocab_size();
        let mut out = Logits::zeros((n, vocab));
        let mut ctx: Vec<TokenId> = self.context().to_vec();
        let mut result = Ok(());
        for i in 0..n {
            ctx.truncate(base);
            ctx.extend(tree.path(first + i).unwrap_or_default());
            match self.logits_for(&ctx) {
                Ok(row) if row.len() == vocab => {
                    out.row_mut(i).assign(&ndarray::ArrayView1::from(&row[..]));
                }
                Ok(row) => {
                    result = Err(ModelError::Backend(format!(
                        "logits_for returned {} logits (vocabulary {vocab})",
                        row.len()
                    )));
                    break;
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.truncate(base);
        result.map(|()| out)
    }

    /// Scores a draft tree appended to the current context: row `i` of the
    /// result holds the logits of the token that follows
    /// `context ++ tree.path(i)` (one row per node, in the tree's order; an
    /// empty tree gives zero rows). This is the target call of tree
    /// speculative decoding (SpecInfer, Miao et al. 2024; Medusa, Cai et
    /// al. 2024): an implementation with a KV cache runs it as **one**
    /// forward over all nodes, each attending to the context and to its
    /// own ancestors only (a tree attention mask), at position
    /// `context.len() + depth − 1`.
    ///
    /// Afterwards the context is the old one followed by the path to some
    /// node of the tree, or the old one alone (which is up to the
    /// implementation); callers [`truncate`](LanguageModel::truncate) to
    /// what they keep. On error the context is the old one.
    ///
    /// The default is correct for every model and needs only
    /// [`prefill`](LanguageModel::prefill) and
    /// [`truncate`](LanguageModel::truncate): it visits the leaves in
    /// depth-first order and, for each, truncates the context to what it
    /// shares with the leaf's path and prefills the rest of that path, so
    /// every node is fed once (`n` tokens in all) in one `prefill` per
    /// leaf. A chain is therefore one `prefill`, as in linear speculative
    /// decoding.
    fn tree_logits(&mut self, tree: &DraftTree) -> Result<Logits, ModelError> {
        let base = self.context().len();
        let vocab = self.vocab_size();
        let n = tree.len();
        let mut out = Logits::zeros((n, vocab));
        if n == 0 {
            return Ok(out);
        }
        let (kids, roots) = tree.children();
        let mut done = vec![false; n];
        // depth-first over the nodes: each leaf ends one root-to-leaf path
        let mut stack: Vec<usize> = roots.iter().rev().copied().collect();
        let mut path_nodes: Vec<usize> = Vec::new();
        let depths = tree.depths();
        while let Some(v) = stack.pop() {
            path_nodes.truncate(depths[v] - 1);
            path_nodes.push(v);
            if !kids[v].is_empty() {
                stack.extend(kids[v].iter().rev());
                continue;
            }
            let tokens: Vec<TokenId> = path_nodes.iter().map(|&u| tree.tokens()[u]).collect();
            let shared = {
                let cur = &self.context()[base.min(self.context().len())..];
                cur.iter().zip(&tokens).take_while(|(a, b)| a == b).count()
            };
            // the first node on the path not scored yet (all are, for a
            // leaf that repeats an earlier path: rescore its last token)
            let first_new = path_nodes
                .iter()
                .position(|&u| !done[u])
                .unwrap_or(tokens.len() - 1);
            let start = shared.min(first_new);
            self.truncate(base + start);
            let rows = match self.prefill(&tokens[start..]) {
                Ok(r) => r,
                Err(e) => {
                    self.truncate(base);
                    return Err(e);
                }
            };
            if rows.nrows() != tokens.len() - start || rows.ncols() != vocab {
                self.truncate(base);
                return Err(ModelError::Backend(format!(
                    "prefill of {} tokens returned {}x{} logits (vocabulary {vocab})",
                    tokens.len() - start,
                    rows.nrows(),
                    rows.ncols()
                )));
            }
            for (r, &u) in rows.rows().into_iter().zip(&path_nodes[start..]) {
                out.row_mut(u).assign(&r);
                done[u] = true;
            }
        }
        Ok(out)
    }
}

/// What one denoising call returns: logits for every position of the block,
/// for the true sequence and for each draft block.
#[derive(Debug, Clone)]
pub struct BlockMarginals {
    /// Shape `(block.len(), vocab)`: the block as it stands in `seq`.
    pub main: Logits,
    /// One per draft, same shape: the block with that draft written into it.
    pub drafts: Vec<Logits>,
}

/// A masked diffusion language model decoded block by block.
pub trait DiffusionModel {
    /// Number of tokens the model scores (the mask token included).
    fn vocab_size(&self) -> usize;

    /// The token that marks a position still to be denoised.
    fn mask_token(&self) -> TokenId;

    /// One function evaluation (NFE): logits for every position of `block`
    /// in `seq`, and — in the same call, as Spiffy's draft-block attention
    /// mask allows — for the block with each of `drafts` written into it
    /// (each draft has `block.len()` tokens, mask tokens allowed).
    fn denoise(
        &mut self,
        seq: &[TokenId],
        block: Range<usize>,
        drafts: &[Vec<TokenId>],
    ) -> Result<BlockMarginals, ModelError>;

    /// Number of [`denoise`](DiffusionModel::denoise) calls so far.
    fn nfe(&self) -> usize;
}

/// Checks the arguments of [`DiffusionModel::denoise`]; implementations call
/// it first.
pub fn check_denoise_args(
    seq: &[TokenId],
    block: &Range<usize>,
    drafts: &[Vec<TokenId>],
    vocab_size: usize,
) -> Result<(), ModelError> {
    if block.start > block.end || block.end > seq.len() {
        return Err(ModelError::BadBlock {
            start: block.start,
            end: block.end,
            len: seq.len(),
        });
    }
    for (index, d) in drafts.iter().enumerate() {
        if d.len() != block.len() {
            return Err(ModelError::DraftLength {
                index,
                got: d.len(),
                want: block.len(),
            });
        }
    }
    for &token in seq.iter().chain(drafts.iter().flatten()) {
        if token as usize >= vocab_size {
            return Err(ModelError::TokenOutOfRange { token, vocab_size });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A cache-free model whose logits hash the whole context; counts the
    /// tokens it is fed.
    struct HashLm {
        ctx: Vec<TokenId>,
        fed: usize,
        prefills: usize,
    }

    fn row(ctx: &[TokenId]) -> Vec<f32> {
        (0..5u32)
            .map(|t| {
                let mut h = 1469598103934665603u64 ^ u64::from(t);
                for &c in ctx {
                    h = (h ^ u64::from(c)).wrapping_mul(1099511628211);
                }
                (h % 1000) as f32 / 100.0
            })
            .collect()
    }

    impl LanguageModel for HashLm {
        fn vocab_size(&self) -> usize {
            5
        }
        fn context(&self) -> &[TokenId] {
            &self.ctx
        }
        fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
            self.prefills += 1;
            let mut out = Logits::zeros((tokens.len(), 5));
            for (i, &t) in tokens.iter().enumerate() {
                if t >= 5 {
                    return Err(ModelError::TokenOutOfRange {
                        token: t,
                        vocab_size: 5,
                    });
                }
                self.ctx.push(t);
                self.fed += 1;
                out.row_mut(i)
                    .assign(&ndarray::Array1::from(row(&self.ctx)));
            }
            Ok(out)
        }
        fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
            Ok(row(&self.ctx))
        }
        fn truncate(&mut self, len: usize) {
            self.ctx.truncate(len);
        }
    }

    proptest! {
        /// The default `tree_logits` equals scoring every root-to-node path
        /// separately, feeds each node once, runs one prefill per leaf and
        /// leaves the context extended by one of the tree's paths.
        #[test]
        fn default_tree_logits_is_path_by_path(
            ctx in prop::collection::vec(0u32..5, 0..4),
            nodes in prop::collection::vec((0usize..8, 0u32..5, any::<bool>()), 0..12),
        ) {
            let mut tree = DraftTree::default();
            for (i, &(p, t, root)) in nodes.iter().enumerate() {
                let parent = if root || i == 0 { None } else { Some(p % i) };
                tree.push(parent, t).unwrap();
            }
            let mut m = HashLm { ctx: ctx.clone(), fed: 0, prefills: 0 };
            let rows = m.tree_logits(&tree).unwrap();
            prop_assert_eq!(rows.nrows(), tree.len());
            for i in 0..tree.len() {
                let mut full = ctx.clone();
                full.extend(tree.path(i).unwrap());
                prop_assert_eq!(rows.row(i).to_vec(), row(&full));
            }
            prop_assert_eq!(m.fed, tree.len());
            let (kids, _) = tree.children();
            prop_assert_eq!(m.prefills, kids.iter().filter(|k| k.is_empty()).count());
            prop_assert_eq!(&m.ctx[..ctx.len()], &ctx[..]);
            let rest = m.ctx[ctx.len()..].to_vec();
            prop_assert!(rest.is_empty() || (0..tree.len()).any(|i| tree.path(i).unwrap() == rest));
            // a chain is one prefill
            let mut m = HashLm { ctx: ctx.clone(), fed: 0, prefills: 0 };
            let chain = DraftTree::chain(tree.tokens().to_vec());
            m.tree_logits(&chain).unwrap();
            prop_assert_eq!(m.prefills, usize::from(!chain.is_empty()));
        }
    }

    proptest! {
        /// Growing a tree level by level with `tree_logits_from` gives the
        /// rows of `tree_logits` on the whole tree (path by path), and
        /// leaves the context as it was.
        #[test]
        fn tree_logits_from_equals_tree_logits(
            ctx in prop::collection::vec(0u32..5, 0..4),
            levels in prop::collection::vec(prop::collection::vec((0usize..8, 0u32..5), 1..4), 0..4),
        ) {
            let mut m = HashLm { ctx: ctx.clone(), fed: 0, prefills: 0 };
            let mut tree = DraftTree::default();
            let mut rows: Vec<Vec<f32>> = Vec::new();
            let mut prev = 0..0;
            for level in &levels {
                let parents: Vec<Option<usize>> = level
                    .iter()
                    .map(|&(p, _)| (!prev.is_empty()).then(|| prev.start + p % prev.len()))
                    .collect();
                let tokens: Vec<TokenId> = level.iter().map(|&(_, t)| t).collect();
                let first = tree.extend(&parents, &tokens).unwrap();
                let got = m.tree_logits_from(&tree, first).unwrap();
                prop_assert_eq!(got.nrows(), tokens.len());
                rows.extend(got.rows().into_iter().map(|r| r.to_vec()));
                prop_assert_eq!(&m.ctx, &ctx);
                prev = first..tree.len();
            }
            let whole = m.tree_logits(&tree).unwrap();
            for (i, r) in rows.iter().enumerate() {
                prop_assert_eq!(&whole.row(i).to_vec(), r);
            }
            m.truncate(ctx.len());
            prop_assert!(m.tree_logits_from(&tree, tree.len() + 1).is_err());
            prop_assert_eq!(m.tree_logits_from(&tree, tree.len()).unwrap().nrows(), 0);
        }
    }

    #[test]
    fn tree_logits_errors_leave_the_context() {
        let mut m = HashLm {
            ctx: vec![1, 2],
            fed: 0,
            prefills: 0,
        };
        let tree = DraftTree::new(vec![None, Some(0), None], vec![3, 4, 7]).unwrap();
        assert!(matches!(
            m.tree_logits(&tree),
            Err(ModelError::TokenOutOfRange { token: 7, .. })
        ));
        assert_eq!(m.ctx, vec![1, 2]);
        assert!(matches!(
            m.tree_logits_from(&tree, 1),
            Err(ModelError::TokenOutOfRange { token: 7, .. })
        ));
        assert_eq!(m.ctx, vec![1, 2]);
    }
}
