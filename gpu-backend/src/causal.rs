//! [`CausalLm`]: an autoregressive [`LanguageModel`] over a [`Transformer`]
//! with a KV cache: parallel prefill (Copy-as-Decode §2.4 — a copied span of
//! N tokens enters the cache in one forward), rollback by truncation, cheap
//! forks (`Clone`), and verification of a whole draft tree in one forward
//! under a tree attention mask ([`CausalLm::score_tree`]).

use std::sync::Arc;

use zapspec_core::{DraftTree, LanguageModel, Logits, ModelError, TokenId};

use crate::mask::AttnMask;
use crate::transformer::{to_array, KvCache, LogitRows, Transformer};

/// A causal LM with its context and KV cache. If the config names a BOS
/// token it is prepended internally (the context seen through the trait
/// never contains it).
#[derive(Debug, Clone)]
pub struct CausalLm {
    model: Arc<Transformer>,
    bos: Option<TokenId>,
    context: Vec<TokenId>,
    /// KV of `bos? ++ context`.
    cache: KvCache,
    /// Logits after `bos? ++ context`, when known.
    last: Option<Vec<f32>>,
    forwards: usize,
    tree: Option<PendingTree>,
    /// Cache entries past `bos? ++ context` holding the nodes of a tree
    /// grown level by level ([`LanguageModel::tree_logits_from`]); dropped
    /// by the next call that is not that method's.
    grown_nodes: usize,
}

/// The result of the last [`CausalLm::score_tree`], kept so an accepted path
/// can be committed without another forward.
#[derive(Debug, Clone)]
struct PendingTree {
    base: usize,
    parents: Vec<Option<usize>>,
    tokens: Vec<TokenId>,
    kv: KvCache,
    logits: Logits,
}

impl CausalLm {
    /// An empty context over `model`; the config's BOS (if any) is fed
    /// before the first token.
    pub fn new(model: Arc<Transformer>) -> Self {
        let bos = model.config().bos();
        CausalLm {
            model,
            bos,
            context: Vec::new(),
            cache: KvCache::default(),
            last: None,
            forwards: 0,
            tree: None,
            grown_nodes: 0,
        }
    }

    /// Builder: override the internal BOS (`None`: no BOS).
    pub fn with_bos(mut self, bos: Option<TokenId>) -> Self {
        self.bos = bos;
        self.cache = KvCache::default();
        self.context.clear();
        self.last = None;
        self
    }

    /// The underlying transformer.
    pub fn model(&self) -> &Arc<Transformer> {
        &self.model
    }

    /// Forward passes so far (each prefill, decode or tree score is one).
    pub fn forwards(&self) -> usize {
        self.forwards
    }

    /// Tokens held by the KV cache (context plus BOS if any).
    pub fn cache_len(&self) -> usize {
        self.cache.len()
    }

    fn offset(&self) -> usize {
        usize::from(self.bos.is_some())
    }

    /// Drops a grown tree's cache entries (the cache then covers
    /// `bos? ++ context` again).
    fn drop_grown(&mut self) {
        if self.grown_nodes == 0 {
            return;
        }
        let keep = self.cache.len().saturating_sub(self.grown_nodes);
        self.grown_nodes = 0;
        if self.cache.truncate(keep).is_err() || self.cache.len() != keep {
            // rebuilt lazily, as `truncate` does
            self.cache = KvCache::default();
            self.last = None;
            let ctx = std::mem::take(&mut self.context);
            if !ctx.is_empty() {
                let _ = self.prefill(&ctx);
            }
        }
    }

    /// Makes sure the BOS (if any) is in the cache; returns its logits row
    /// if a forward was needed.
    fn ensure_bos(&mut self) -> Result<(), ModelError> {
        if let (Some(b), true) = (self.bos, self.cache.is_empty()) {
            self.run(&[b], LogitRows::Last).map(|_| ())?;
        }
        Ok(())
    }

    /// Runs `tokens` through the model after the cache, appends them to the
    /// cache and returns the requested logits.
    fn run(&mut self, tokens: &[TokenId], rows: LogitRows) -> Result<Option<Logits>, ModelError> {
        self.drop_grown();
        let past = self.cache.len();
        self.model
            .check_input(tokens, past + tokens.len().saturating_sub(1))?;
        let positions: Vec<usize> = (past..past + tokens.len()).collect();
        let mask = AttnMask::causal(past, tokens.len());
        let out = self
            .model
            .forward(tokens, &positions, &self.cache, &mask, rows)
            .map_err(crate::backend)?;
        self.forwards += 1;
        self.cache = out.kv;
        self.tree = None;
        let logits = out.logits.as_ref().map(to_array).transpose()?;
        self.last = logits.as_ref().map(|l| l.row(l.nrows() - 1).to_vec());
        Ok(logits)
    }

    /// Only the KV update of a parallel prefill: the logits of the last
    /// position (Copy-as-Decode's copy primitive needs no per-position
    /// logits). Returns the next-token logits.
    pub fn prefill_last(&mut self, tokens: &[TokenId]) -> Result<Vec<f32>, ModelError> {
        if tokens.is_empty() {
            return self.next_logits();
        }
        self.ensure_bos()?;
        self.run(tokens, LogitRows::Last)?;
        self.context.extend_from_slice(tokens);
        self.last
            .clone()
            .ok_or_else(|| ModelError::Backend("no logits".into()))
    }

    /// One forward of `tokens` at `positions` over the cache under `mask`,
    /// every row's logits returned with the keys and values (the cache's
    /// and the new tokens'); counted in the forward total.
    fn forward_rows(
        &mut self,
        tokens: &[TokenId],
        positions: &[usize],
        mask: &AttnMask,
    ) -> Result<(Logits, KvCache), ModelError> {
        let out = self
            .model
            .forward(tokens, positions, &self.cache, mask, LogitRows::All)
            .map_err(crate::backend)?;
        self.forwards += 1;
        let logits = to_array(
            out.logits
                .as_ref()
                .ok_or_else(|| ModelError::Backend("no logits".into()))?,
        )?;
        Ok((logits, out.kv))
    }

    /// Scores a draft tree in one forward without changing the context:
    /// node `i` holds `tokens[i]`, its parent is `parents[i]` (`None`: a
    /// child of the current context; parents precede children). Row `i` of
    /// the result holds the logits of the token that follows
    /// `context ++ path(root → i)` — what a separate prefill of that branch
    /// would give. Nodes sit at position `context + depth − 1` (a child of
    /// the context has depth 1, as in [`DraftTree`]).
    pub fn score_tree(
        &mut self,
        parents: &[Option<usize>],
        tokens: &[TokenId],
    ) -> Result<Logits, ModelError> {
        let shape = DraftTree::new(parents.to_vec(), tokens.to_vec())
            .map_err(|e| ModelError::Backend(format!("score_tree: {e}")))?;
        self.drop_grown();
        self.ensure_bos()?;
        let base = self.cache.len();
        let positions: Vec<usize> = shape.depths().iter().map(|d| base + d - 1).collect();
        self.model
            .check_input(tokens, positions.iter().copied().max().unwrap_or(base))?;
        if tokens.is_empty() {
            return Ok(Logits::zeros((0, self.vocab_size())));
        }
        let mask = AttnMask::tree(base, parents);
        let (logits, kv) = self.forward_rows(tokens, &positions, &mask)?;
        let kv = kv.narrow(base, tokens.len()).map_err(crate::backend)?;
        self.tree = Some(PendingTree {
            base,
            parents: parents.to_vec(),
            tokens: tokens.to_vec(),
            kv,
            logits: logits.clone(),
        });
        Ok(logits)
    }

    /// Scores a linear draft block (a chain tree) without changing the
    /// context.
    pub fn score_block(&mut self, draft: &[TokenId]) -> Result<Logits, ModelError> {
        let parents: Vec<Option<usize>> = (0..draft.len()).map(|i| i.checked_sub(1)).collect();
        self.score_tree(&parents, draft)
    }

    /// Appends an accepted root-to-node path of the last scored tree to the
    /// context, reusing its keys and values (no forward).
    pub fn commit_tree_path(&mut self, path: &[usize]) -> Result<(), ModelError> {
        let t = self.tree.as_ref().ok_or_else(|| {
            ModelError::Backend("commit_tree_path: no tree scored since the last change".into())
        })?;
        if t.base != self.cache.len() {
            return Err(ModelError::Backend(
                "commit_tree_path: the cache changed since score_tree".into(),
            ));
        }
        for (j, &i) in path.iter().enumerate() {
            let want = if j == 0 { None } else { Some(path[j - 1]) };
            if i >= t.parents.len() || t.parents[i] != want {
                return Err(ModelError::Backend(format!(
                    "commit_tree_path: {path:?} is not a root-to-node path"
                )));
            }
        }
        if path.is_empty() {
            return Ok(());
        }
        let kv = t.kv.select(path).map_err(crate::backend)?;
        let toks: Vec<TokenId> = path.iter().map(|&i| t.tokens[i]).collect();
        let last = t.logits.row(*path.last().unwrap_or(&0)).to_vec();
        self.cache = KvCache::cat(&self.cache, &kv).map_err(crate::backend)?;
        self.context.extend_from_slice(&toks);
        self.last = Some(last);
        self.tree = None;
        Ok(())
    }
}

impl LanguageModel for CausalLm {
    fn vocab_size(&self) -> usize {
        self.model.vocab_size()
    }

    fn context(&self) -> &[TokenId] {
        &self.context
    }

    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        if tokens.is_empty() {
            return Ok(Logits::zeros((0, self.vocab_size())));
        }
        self.model.check_input(tokens, 0)?;
        let rows = if let (Some(b), true) = (self.bos, self.cache.is_empty()) {
            // BOS and the tokens in the same forward; drop the BOS row.
            let mut feed = vec![b];
            feed.extend_from_slice(tokens);
            let l = self.run(&feed, LogitRows::Rows((1..feed.len()).collect()))?;
            l.ok_or_else(|| ModelError::Backend("no logits".into()))?
        } else {
            self.run(tokens, LogitRows::All)?
                .ok_or_else(|| ModelError::Backend("no logits".into()))?
        };
        self.context.extend_from_slice(tokens);
        Ok(rows)
    }

    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        if let Some(l) = &self.last {
            return Ok(l.clone());
        }
        if self.cache.is_empty() {
            return match self.bos {
                Some(_) => {
                    self.ensure_bos()?;
                    self.last
                        .clone()
                        .ok_or_else(|| ModelError::Backend("no logits".into()))
                }
                None => Err(ModelError::Backend(
                    "next_logits on an empty context: this model has no BOS token to condition on"
                        .into(),
                )),
            };
        }
        // Re-run the last cached token to recover its logits.
        let n = self.cache.len();
        let last_tok = if n == self.offset() {
            self.bos
        } else {
            self.context.get(n - self.offset() - 1).copied()
        };
        let t = last_tok.ok_or_else(|| ModelError::Backend("cache and context disagree".into()))?;
        self.cache.truncate(n - 1).map_err(crate::backend)?;
        self.run(&[t], LogitRows::Last)?;
        self.last
            .clone()
            .ok_or_else(|| ModelError::Backend("no logits".into()))
    }

    fn truncate(&mut self, len: usize) {
        self.drop_grown();
        if len >= self.context.len() {
            return;
        }
        self.context.truncate(len);
        let keep = if self.cache.is_empty() {
            0
        } else {
            len + self.offset()
        };
        // Narrowing a tensor to a shorter length cannot fail; if it did the
        // cache is dropped and rebuilt lazily on the next call.
        if self.cache.truncate(keep).is_err() {
            self.cache = KvCache::default();
        }
        self.last = None;
        self.tree = None;
        if self.cache.len() != keep {
            // Rebuild lazily: the cache must cover bos ++ context.
            self.cache = KvCache::default();
            let ctx = std::mem::take(&mut self.context);
            if !ctx.is_empty() {
                let _ = self.prefill(&ctx);
            }
        }
    }

    fn max_context(&self) -> usize {
        self.model.config().max_position_embeddings - self.offset()
    }

    /// One forward over the new nodes `first..`, appended to the KV cache
    /// after the context and the tree's earlier nodes, each at position
    /// `context + depth − 1` and attending to the context and its own
    /// ancestors only (the tree attention of [`CausalLm::score_tree`] over
    /// a cache that keeps the grown tree): every branch reads the
    /// context's keys and values in place, none is copied or re-fed. The
    /// context (and [`LanguageModel::next_logits`]) is unchanged; the
    /// tree's cache entries are dropped by the next call that is not this
    /// method's. Errors: `first` other than the number of nodes this model
    /// holds for the tree (a tree not grown on this model since its
    /// context last changed), tokens outside the vocabulary, a position
    /// past the window.
    fn tree_logits_from(&mut self, tree: &DraftTree, first: usize) -> Result<Logits, ModelError> {
        if first == 0 {
            self.drop_grown();
        }
        if first > tree.len() || self.grown_nodes != first {
            return Err(ModelError::Backend(format!(
                "tree_logits_from: node {first} of a tree of {} nodes, the model holds {} grown nodes",
                tree.len(),
                self.grown_nodes,
            )));
        }
        let tokens = &tree.tokens()[first..];
        if tokens.is_empty() {
            return Ok(Logits::zeros((0, self.vocab_size())));
        }
        if first == 0 {
            self.ensure_bos()?;
        }
        let ctx_len = self.cache.len() - self.grown_nodes;
        let positions: Vec<usize> = tree.depths()[first..]
            .iter()
            .map(|d| ctx_len + d - 1)
            .collect();
        self.model
            .check_input(tokens, positions.iter().copied().max().unwrap_or(ctx_len))?;
        let past = self.cache.len();
        let n = tokens.len();
        let mut mask = AttnMask::blocked(n, past + n);
        for i in 0..n {
            mask.allow_range(i, 0..ctx_len);
            let mut a = Some(first + i);
            while let Some(j) = a {
                mask.allow(i, ctx_len + j);
                a = tree.parents()[j];
            }
        }
        let (logits, kv) = self.forward_rows(tokens, &positions, &mask)?;
        self.cache = kv;
        self.grown_nodes += n;
        self.tree = None;
        Ok(logits)
    }

    /// One forward over every node under a tree attention mask, each node
    /// at position `context + depth − 1` ([`CausalLm::score_tree`]), instead
    /// of the trait's path-by-path default. Afterwards the context is
    /// extended by the tree's *trunk* — its nodes down to the first one
    /// with other than one child, which lie on every root-to-leaf path —
    /// committed from the forward's keys and values without another
    /// forward ([`CausalLm::commit_tree_path`]): a chain is kept whole, as
    /// a linear block's prefill would, so a speculative loop that truncates
    /// to what it accepts never re-feeds it.
    fn tree_logits(&mut self, tree: &DraftTree) -> Result<Logits, ModelError> {
        let rows = self.score_tree(tree.parents(), tree.tokens())?;
        let (kids, roots) = tree.children();
        let mut trunk = Vec::new();
        let mut next = (roots.len() == 1).then(|| roots[0]);
        while let Some(v) = next {
            trunk.push(v);
            next = (kids[v].len() == 1).then(|| kids[v][0]);
        }
        self.commit_tree_path(&trunk)?;
        Ok(rows)
    }
}

/// Options of [`generate`].
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// Most tokens to generate.
    pub max_new_tokens: usize,
    /// 0: greedy.
    pub temperature: f32,
    /// Seed of the sampler.
    pub seed: u64,
    /// Stop after emitting this token.
    pub stop: Option<TokenId>,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            max_new_tokens: 64,
            temperature: 0.0,
            seed: 0,
            stop: None,
        }
    }
}

/// Plain autoregressive generation after `prompt` (one decode step per
/// token); returns the new tokens.
pub fn generate(
    lm: &mut CausalLm,
    prompt: &[TokenId],
    opts: &GenerateOptions,
) -> Result<Vec<TokenId>, ModelError> {
    let mut rng = zapspec_core::prob::seeded_rng(opts.seed);
    let mut logits = match prompt.len() {
        0 => lm.next_logits()?,
        _ => lm.prefill_last(prompt)?,
    };
    let mut out = Vec::new();
    while out.len() < opts.max_new_tokens && lm.context().len() < lm.max_context() {
        let t = sample_token(&logits, opts.temperature, &mut rng)?;
        out.push(t);
        if Some(t) == opts.stop {
            break;
        }
        logits = lm.prefill_last(&[t])?;
    }
    Ok(out)
}

/// Greedy (temperature 0) or tempered sampling from logits.
pub fn sample_token<R: rand::Rng + ?Sized>(
    logits: &[f32],
    temperature: f32,
    rng: &mut R,
) -> Result<TokenId, ModelError> {
    let pick = if temperature <= 0.0 {
        logits
            .iter()
            .enumerate()
            .fold(
                (0, f32::NEG_INFINITY),
                |b, (i, &v)| if v > b.1 { (i, v) } else { b },
            )
            .0
    } else {
        let scaled: Vec<f32> = logits.iter().map(|&v| v / temperature).collect();
        zapspec_core::prob::sample_log(rng, &zapspec_core::prob::log_softmax(&scaled))
            .map_err(|e| ModelError::Backend(format!("sampling: {e}")))?
    };
    Ok(pick as TokenId)
}
