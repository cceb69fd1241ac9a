//! [`CausalLm`]: an autoregressive [`LanguageModel`] over a [`Transformer`]
//! (candle, dense) or a [`NativeModel`] (block-quantised, the native CPU
//! forward) with a KV cache: parallel prefill (Copy-as-Decode §2.4 — a
//! copied span of N tokens enters the cache in one forward), rollback by
//! truncation, cheap forks (`Clone`), and verification of a whole draft
//! tree in one forward under a tree attention mask
//! ([`CausalLm::score_tree`]).

use std::sync::Arc;

use zapspec_core::{DraftTree, LanguageModel, Logits, ModelError, TokenId};

use crate::config::ModelConfig;
use crate::mask::AttnMask;
use crate::native::{NativeKv, NativeModel};
use crate::transformer::{to_array, KvCache, LogitRows, Transformer};

/// The network under a [`CausalLm`] and its KV cache.
#[derive(Debug, Clone)]
enum Net {
    /// candle's dense transformer; the cache is rebuilt per forward.
    Candle {
        model: Arc<Transformer>,
        cache: KvCache,
    },
    /// The native quantised forward; the cache is paged and appended in
    /// place.
    Native {
        model: Arc<NativeModel>,
        cache: NativeKv,
    },
}

impl Net {
    fn config(&self) -> &ModelConfig {
        match self {
            Net::Candle { model, .. } => model.config(),
            Net::Native { model, .. } => model.config(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Net::Candle { cache, .. } => cache.len(),
            Net::Native { cache, .. } => cache.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps the first `len` cached positions (never fails: a candle cache
    /// that cannot be narrowed is dropped, to be rebuilt by the caller).
    fn truncate(&mut self, len: usize) {
        match self {
            Net::Candle { cache, .. } => {
                if cache.truncate(len).is_err() || cache.len() != len.min(cache.len()) {
                    *cache = KvCache::default();
                }
            }
            Net::Native { cache, .. } => cache.truncate(len),
        }
    }

    fn check_input(&self, tokens: &[TokenId], max_position: usize) -> Result<(), ModelError> {
        let cfg = self.config();
        if let Some(&token) = tokens.iter().find(|&&t| t as usize >= cfg.vocab_size) {
            return Err(ModelError::TokenOutOfRange {
                token,
                vocab_size: cfg.vocab_size,
            });
        }
        if max_position >= cfg.max_position_embeddings {
            return Err(ModelError::ContextOverflow {
                len: max_position + 1,
                max: cfg.max_position_embeddings,
            });
        }
        Ok(())
    }

    /// One forward of `tokens` at `positions` after the cache, appended to
    /// it; the logits of `rows`.
    fn forward(
        &mut self,
        tokens: &[TokenId],
        positions: &[usize],
        mask: &AttnMask,
        rows: LogitRows,
    ) -> Result<Option<Logits>, ModelError> {
        match self {
            Net::Candle { model, cache } => {
                let out = model
                    .forward(tokens, positions, cache, mask, rows)
                    .map_err(crate::backend)?;
                *cache = out.kv;
                out.logits.as_ref().map(to_array).transpose()
            }
            Net::Native { model, cache } => model.forward(tokens, positions, cache, mask, rows),
        }
    }

    /// Keeps the cached positions `base + keep[i]` at `base + i` and drops
    /// the rest after `base` (`keep` increasing).
    fn compact(&mut self, base: usize, keep: &[usize]) -> Result<(), ModelError> {
        match self {
            Net::Candle { cache, .. } => {
                let idx: Vec<usize> = (0..base).chain(keep.iter().map(|k| base + k)).collect();
                *cache = cache.select(&idx).map_err(crate::backend)?;
            }
            Net::Native { cache, .. } => cache.compact(base, keep),
        }
        Ok(())
    }

    fn clear(&mut self) {
        match self {
            Net::Candle { cache, .. } => *cache = KvCache::default(),
            Net::Native { cache, .. } => cache.truncate(0),
        }
    }
}

/// A causal LM with its context and KV cache. If the config names a BOS
/// token it is prepended internally (the context seen through the trait
/// never contains it).
#[derive(Debug, Clone)]
pub struct CausalLm {
    net: Net,
    bos: Option<TokenId>,
    context: Vec<TokenId>,
    /// Logits after `bos? ++ context`, when known.
    last: Option<Vec<f32>>,
    forwards: usize,
    /// The last [`CausalLm::score_tree`]'s nodes, held in the cache after
    /// `bos? ++ context` until committed or dropped.
    tree: Option<PendingTree>,
    /// Cache entries past `bos? ++ context` holding the nodes of a tree
    /// grown level by level ([`LanguageModel::tree_logits_from`]); dropped
    /// by the next call that is not that method's.
    grown_nodes: usize,
}

/// The result of the last [`CausalLm::score_tree`], kept so an accepted path
/// can be committed without another forward (its keys and values sit in
/// the cache after position `base`).
#[derive(Debug, Clone)]
struct PendingTree {
    base: usize,
    parents: Vec<Option<usize>>,
    tokens: Vec<TokenId>,
    logits: Logits,
}

impl CausalLm {
    /// An empty context over a dense (candle) `model`; the config's BOS (if
    /// any) is fed before the first token.
    pub fn new(model: Arc<Transformer>) -> Self {
        let bos = model.config().bos();
        CausalLm::over(
            Net::Candle {
                model,
                cache: KvCache::default(),
            },
            bos,
        )
    }

    /// An empty context over a native quantised `model`
    /// ([`crate::native`]).
    pub fn native(model: Arc<NativeModel>) -> Self {
        let bos = model.config().bos();
        let cache = model.new_cache();
        CausalLm::over(Net::Native { model, cache }, bos)
    }

    fn over(net: Net, bos: Option<TokenId>) -> Self {
        CausalLm {
            net,
            bos,
            context: Vec::new(),
            last: None,
            forwards: 0,
            tree: None,
            grown_nodes: 0,
        }
    }

    /// Builder: override the internal BOS (`None`: no BOS).
    pub fn with_bos(mut self, bos: Option<TokenId>) -> Self {
        self.bos = bos;
        self.net.clear();
        self.context.clear();
        self.last = None;
        self.tree = None;
        self.grown_nodes = 0;
        self
    }

    /// The dense transformer, when this model runs on candle (`None` for
    /// the native quantised forward).
    pub fn transformer(&self) -> Option<&Arc<Transformer>> {
        match &self.net {
            Net::Candle { model, .. } => Some(model),
            Net::Native { .. } => None,
        }
    }

    /// The native quantised model, when this model runs on it.
    pub fn native_model(&self) -> Option<&Arc<NativeModel>> {
        match &self.net {
            Net::Native { model, .. } => Some(model),
            Net::Candle { .. } => None,
        }
    }

    /// The model's configuration.
    pub fn config(&self) -> &ModelConfig {
        self.net.config()
    }

    /// A fresh model (empty context, same BOS) with only the first
    /// `layers` decoder layers, sharing every weight with `self`: an
    /// early-exit self-speculative drafter (LayerSkip / Draft & Verify).
    pub fn first_layers(&self, layers: usize) -> CausalLm {
        let net = match &self.net {
            Net::Candle { model, .. } => Net::Candle {
                model: Arc::new(model.first_layers(layers)),
                cache: KvCache::default(),
            },
            Net::Native { model, .. } => {
                let m = model.first_layers(layers);
                let cache = m.new_cache();
                Net::Native {
                    model: Arc::new(m),
                    cache,
                }
            }
        };
        CausalLm::over(net, self.bos)
    }

    /// Forward passes so far (each prefill, decode or tree score is one).
    pub fn forwards(&self) -> usize {
        self.forwards
    }

    /// Tokens held by the KV cache (context plus BOS if any).
    pub fn cache_len(&self) -> usize {
        self.net.len() - self.extra()
    }

    /// Cache entries past `bos? ++ context` (a scored or grown tree).
    fn extra(&self) -> usize {
        self.grown_nodes + self.tree.as_ref().map_or(0, |t| t.tokens.len())
    }

    fn offset(&self) -> usize {
        usize::from(self.bos.is_some())
    }

    /// Drops a scored or grown tree's cache entries (the cache then covers
    /// `bos? ++ context` again).
    fn drop_grown(&mut self) {
        let extra = self.extra();
        self.tree = None;
        self.grown_nodes = 0;
        if extra == 0 {
            return;
        }
        let keep = self.net.len().saturating_sub(extra);
        self.net.truncate(keep);
        if self.net.len() != keep {
            // rebuilt lazily, as `truncate` does
            self.net.clear();
            self.last = None;
            let ctx = std::mem::take(&mut self.context);
            if !ctx.is_empty() {
                let _ = self.prefill(&ctx);
            }
        }
    }

    /// Makes sure the BOS (if any) is in the cache.
    fn ensure_bos(&mut self) -> Result<(), ModelError> {
        if let (Some(b), true) = (self.bos, self.net.is_empty()) {
            self.run(&[b], LogitRows::Last).map(|_| ())?;
        }
        Ok(())
    }

    /// Runs `tokens` through the model after the cache, appends them to the
    /// cache and returns the requested logits.
    fn run(&mut self, tokens: &[TokenId], rows: LogitRows) -> Result<Option<Logits>, ModelError> {
        self.drop_grown();
        let past = self.net.len();
        self.net
            .check_input(tokens, past + tokens.len().saturating_sub(1))?;
        let positions: Vec<usize> = (past..past + tokens.len()).collect();
        let mask = AttnMask::causal(past, tokens.len());
        let logits = self.net.forward(tokens, &positions, &mask, rows)?;
        self.forwards += 1;
        self.last = logits
            .as_ref()
            .filter(|l| l.nrows() > 0)
            .map(|l| l.row(l.nrows() - 1).to_vec());
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
    /// appended to the cache; every row's logits. Counted in the forward
    /// total.
    fn forward_rows(
        &mut self,
        tokens: &[TokenId],
        positions: &[usize],
        mask: &AttnMask,
    ) -> Result<Logits, ModelError> {
        let out = self.net.forward(tokens, positions, mask, LogitRows::All)?;
        self.forwards += 1;
        out.ok_or_else(|| ModelError::Backend("no logits".into()))
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
        let base = self.net.len();
        let positions: Vec<usize> = shape.depths().iter().map(|d| base + d - 1).collect();
        self.net
            .check_input(tokens, positions.iter().copied().max().unwrap_or(base))?;
        if tokens.is_empty() {
            return Ok(Logits::zeros((0, self.vocab_size())));
        }
        let mask = AttnMask::tree(base, parents);
        let logits = match self.forward_rows(tokens, &positions, &mask) {
            Ok(l) => l,
            Err(e) => {
                // whatever the failed forward appended goes
                self.net.truncate(base);
                return Err(e);
            }
        };
        self.tree = Some(PendingTree {
            base,
            parents: parents.to_vec(),
            tokens: tokens.to_vec(),
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
        if path.is_empty() {
            // nothing to append (also after scoring an empty tree)
            return Ok(());
        }
        let t = self.tree.as_ref().ok_or_else(|| {
            ModelError::Backend("commit_tree_path: no tree scored since the last change".into())
        })?;
        if t.base + t.tokens.len() != self.net.len() {
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
        let toks: Vec<TokenId> = path.iter().map(|&i| t.tokens[i]).collect();
        let last = t.logits.row(*path.last().unwrap_or(&0)).to_vec();
        let base = t.base;
        self.tree = None;
        if let Err(e) = self.net.compact(base, path) {
            self.net.truncate(base);
            return Err(e);
        }
        self.context.extend_from_slice(&toks);
        self.last = Some(last);
        Ok(())
    }
}

impl LanguageModel for CausalLm {
    fn vocab_size(&self) -> usize {
        self.net.config().vocab_size
    }

    fn context(&self) -> &[TokenId] {
        &self.context
    }

    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        if tokens.is_empty() {
            return Ok(Logits::zeros((0, self.vocab_size())));
        }
        self.net.check_input(tokens, 0)?;
        self.drop_grown();
        let rows = if let (Some(b), true) = (self.bos, self.net.is_empty()) {
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
        self.drop_grown();
        if self.net.is_empty() {
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
        let n = self.net.len();
        let last_tok = if n == self.offset() {
            self.bos
        } else {
            self.context.get(n - self.offset() - 1).copied()
        };
        let t = last_tok.ok_or_else(|| ModelError::Backend("cache and context disagree".into()))?;
        self.net.truncate(n - 1);
        if self.net.len() != n - 1 {
            // a cache that could not be narrowed: rebuild from the context
            let ctx = std::mem::take(&mut self.context);
            self.net.clear();
            return self.prefill(&ctx).and_then(|_| self.next_logits());
        }
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
        let keep = if self.net.is_empty() {
            0
        } else {
            len + self.offset()
        };
        self.net.truncate(keep);
        self.last = None;
        if self.net.len() != keep {
            // Rebuild lazily: the cache must cover bos ++ context.
            self.net.clear();
            let ctx = std::mem::take(&mut self.context);
            if !ctx.is_empty() {
                let _ = self.prefill(&ctx);
            }
        }
    }

    fn max_context(&self) -> usize {
        self.net.config().max_position_embeddings - self.offset()
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
        let ctx_len = self.net.len() - self.grown_nodes;
        let positions: Vec<usize> = tree.depths()[first..]
            .iter()
            .map(|d| ctx_len + d - 1)
            .collect();
        self.net
            .check_input(tokens, positions.iter().copied().max().unwrap_or(ctx_len))?;
        let past = self.net.len();
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
        let logits = match self.forward_rows(tokens, &positions, &mask) {
            Ok(l) => l,
            Err(e) => {
                self.net.truncate(past);
                return Err(e);
            }
        };
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
