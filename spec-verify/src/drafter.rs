//! Drafters: what proposes the γ tokens a round verifies (§3, "draft
//! model q").
//!
//! The decoder ([`crate::SpeculativeDecoder`]) is generic over a
//! [`Drafter`]; the verifier only needs, per drafted position, the token and
//! the law it was drawn from ([`DraftLaw`]), so any proposal mechanism fits:
//!
//! | drafter | proposes | law per position | cost |
//! |---|---|---|---|
//! | any [`LanguageModel`] (a draft model) | draws from the draft model's law masked to `A_t` (`q̃`, Def. 1); in tree mode, sampled, a tree of i.i.d. draws ([`sampled_tree_from_model`]) | [`DraftLaw::Dist`] | one draft forward per token; per tree level in tree mode |
//! | [`NoDraft`] | nothing: plain constrained decoding, one target forward per token | — | none |
//! | [`PromptLookup`] | the tokens that followed the longest earlier occurrence of the context's last `n` tokens (prompt lookup / n-gram drafting) | [`DraftLaw::Point`] | a scan of the context; no model |
//! | [`TreeLookup`] | a *tree*: the continuations of several earlier occurrences of the context's suffix, merged by shared prefix (tree mode, [`crate::tree`]) | point laws | a scan of the context; no model |
//! | [`CopyDraft`] | a source document's tokens from a cursor aligned with the output (Copy-as-Decode's copies, verified in one call); prompt lookup where the output has left the source | [`DraftLaw::Point`] | a scan of the source; no model |
//!
//! Every drafter proposes only tokens the constraint allows: it advances
//! the fork of the matcher it is given and stops at the first token the
//! fork refuses (a grammar-masked draft). With a point law, Leviathan's
//! test (Leviathan et al. 2023, Alg. 1) accepts `d` with probability
//! `min(1, π(d)/1) = π(d)` and resamples from `π` without `d` — the output
//! law is the target's, whatever the drafter proposes.

use rand::Rng;
use serde::{Deserialize, Serialize};
use zapspec_core::prob::{argmax, sample_log};
use zapspec_core::{Constraint, LanguageModel, TokenId, TokenSet};

use crate::error::VerifyError;
use crate::phi::compact_log_law;
use crate::tree::{tree_of_continuations, TreeConfig, TreeDraft};
pub use crate::verify::DraftLaw;

/// One round's proposal: `tokens[i]` was drawn from `laws[i]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Draft {
    /// The drafted tokens (at most γ; an EOS ends them).
    pub tokens: Vec<TokenId>,
    /// The law of each drafted token (same length as `tokens`).
    pub laws: Vec<DraftLaw>,
    /// Draft-model forward calls spent.
    pub calls: usize,
}

/// What a round asks its drafter for: the context to continue and how
/// much to propose. Passed by value (it is `Copy`) to
/// [`Drafter::draft`] and [`Drafter::draft_tree`], beside the matcher's
/// fork and the decoder's random stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DraftContext<'a> {
    /// The prompt, then the committed tokens.
    pub tokens: &'a [TokenId],
    /// Where the committed tokens begin in `tokens` (the prompt's length).
    pub prompt_len: usize,
    /// Most tokens to propose (linear mode), or the greatest depth of a
    /// tree (tree mode).
    pub gamma: usize,
    /// A draw from the drafter's law (else its mode).
    pub sampled: bool,
}

impl<'a> DraftContext<'a> {
    /// The committed tokens (what follows the prompt); empty when
    /// `prompt_len` is past the context.
    pub fn produced(&self) -> &'a [TokenId] {
        &self.tokens[self.prompt_len.min(self.tokens.len())..]
    }

    /// The same request with `gamma` replaced.
    pub fn with_gamma(self, gamma: usize) -> Self {
        DraftContext { gamma, ..self }
    }
}

/// Proposes the tokens of one speculative round.
pub trait Drafter {
    /// Proposes at most `ctx.gamma` tokens after `ctx.tokens` (see
    /// [`DraftContext`]). `fork` is a fork of the matcher after the
    /// committed tokens: the drafter advances it by each token it proposes
    /// and proposes only tokens it allows (stopping where it refuses one).
    /// `rng` is the decoder's stream.
    fn draft<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        ctx: DraftContext<'_>,
        fork: &mut C,
        rng: &mut R,
    ) -> Result<Draft, VerifyError>;

    /// Proposes a draft *tree* (tree mode, [`crate::SpecConfig::tree`]; see
    /// [`crate::tree`]) of depth at most `ctx.gamma` and at most
    /// `shape.max_nodes` nodes, each node at most `shape.max_width`
    /// children. `fork` is as in [`draft`](Drafter::draft); a tree drafter
    /// may ignore it — the decoder cuts the nodes the constraint refuses
    /// with the tree's masks before the target scores them. Default: the
    /// linear draft (γ capped by `max_nodes`) as a chain.
    fn draft_tree<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        ctx: DraftContext<'_>,
        shape: &TreeConfig,
        fork: &mut C,
        rng: &mut R,
    ) -> Result<TreeDraft, VerifyError> {
        let d = self.draft(ctx.with_gamma(ctx.gamma.min(shape.max_nodes)), fork, rng)?;
        // node i is the one child of slot i (the root, then node i − 1),
        // drawn from laws[i]
        Ok(TreeDraft {
            tree: zapspec_core::DraftTree::chain(d.tokens),
            laws: d.laws,
            calls: d.calls,
        })
    }

    /// The round kept `ctx` (prompt ++ committed after the round's
    /// acceptance, before the correction token): a drafter with a cache
    /// drops what lies beyond it. Default: nothing.
    fn rewind(&mut self, ctx: &[TokenId]) {
        let _ = ctx;
    }

    /// The vocabulary the drafter proposes from, when it has one (a draft
    /// model); the decoder checks it against the target's. Default: `None`.
    fn vocab_size(&self) -> Option<usize> {
        None
    }
}

/// A draft model drafts: `q̃_t` = its next-token law renormalised on `A_t`
/// (the decoder's draft model of §3), sampled or argmax.
impl<Q: LanguageModel> Drafter for Q {
    fn draft<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        ctx: DraftContext<'_>,
        fork: &mut C,
        rng: &mut R,
    ) -> Result<Draft, VerifyError> {
        draft_from_model(self, ctx, fork, rng)
    }
    /// Greedy: the argmax chain (the linear draft). Sampled: a tree of
    /// i.i.d. draws ([`sampled_tree_from_model`]).
    fn draft_tree<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        ctx: DraftContext<'_>,
        shape: &TreeConfig,
        fork: &mut C,
        rng: &mut R,
    ) -> Result<TreeDraft, VerifyError> {
        if !ctx.sampled {
            let d = draft_from_model(
                self,
                ctx.with_gamma(ctx.gamma.min(shape.max_nodes)),
                fork,
                rng,
            )?;
            return Ok(TreeDraft {
                tree: zapspec_core::DraftTree::chain(d.tokens),
                laws: d.laws,
                calls: d.calls,
            });
        }
        sampled_tree_from_model(self, ctx.tokens, fork, ctx.gamma, shape, rng)
    }
    fn rewind(&mut self, ctx: &[TokenId]) {
        rewind_model(self, ctx);
    }
    fn vocab_size(&self) -> Option<usize> {
        Some(LanguageModel::vocab_size(self))
    }
}

/// A sampled draft tree from a draft model (the i.i.d.-sampled token trees
/// of SpecInfer, Miao et al. 2024, §3, verified by its multi-step
/// speculative sampling, [`crate::verify::multi_step`]), built breadth
/// first: at each node, in breadth-first order, `min(shape.max_width,
/// nodes left)` tokens are drawn i.i.d. from the draft model's law masked
/// to the node's valid set (`q̃`, Def. 1) and appended as children in
/// draw order. A repeated draw is kept as its own node (an attempt for
/// the verifier) but not expanded: it is a leaf, the first node with that
/// token carries the subtree (the decoder merges equal siblings). EOS
/// draws and nodes at depth `gamma` are leaves; so is a node where the
/// draft has no mass on the valid set or the constraint allows nothing.
///
/// How many children a node gets depends only on the draws made before
/// it (breadth-first), never on its own children's tokens, which is what
/// the verifier's exactness argument needs (they are i.i.d. given
/// everything that decided their number).
///
/// Cost: one draft call for the root ([`LanguageModel::logits_for`]) and
/// one [`LanguageModel::tree_logits_from`] call per further level (one
/// forward over the level's expanded nodes on a model with a KV cache, on
/// a tree of the expanded nodes only); masks by a
/// clone of the fork per expanded node. The model's context is cut back
/// to `ctx` afterwards.
pub fn sampled_tree_from_model<Q, C, R>(
    model: &mut Q,
    ctx: &[TokenId],
    fork: &C,
    gamma: usize,
    shape: &TreeConfig,
    rng: &mut R,
) -> Result<TreeDraft, VerifyError>
where
    Q: LanguageModel + ?Sized,
    C: Constraint,
    R: Rng + ?Sized,
{
    let vocab = fork.vocab_size();
    let eos = fork.eos();
    let mut out = TreeDraft::default();
    if gamma == 0 || fork.is_finished() {
        return Ok(out);
    }
    let root = model.logits_for(ctx)?;
    out.calls += 1;
    // the law of the root's children, then of each node's (slot i + 1)
    out.laws.push(DraftLaw::Point);
    // nodes to expand at the current level: (node or None for the root,
    // its matcher state, its logits)
    let mut level: Vec<(Option<usize>, C, Vec<f32>)> = vec![(None, fork.clone(), root)];
    // the tree the model scores: the expanded nodes only (a repeated draw,
    // an EOS or a node past the budget is never fed)
    let mut grown = zapspec_core::DraftTree::default();
    // each drafted node's index in `grown`
    let mut in_grown: Vec<Option<usize>> = Vec::new();
    let mut depth = 0usize;
    let mut mask = TokenSet::new(vocab);
    let result = (|| -> Result<(), VerifyError> {
        while !level.is_empty() && depth < gamma {
            depth += 1;
            // (tree node, its state) of this level's new nodes to expand next
            let mut next: Vec<(usize, C)> = Vec::new();
            for (node, mut state, logits) in level.drain(..) {
                let left = shape.max_nodes.saturating_sub(out.tree.len());
                if left == 0 {
                    break;
                }
                if logits.len() != vocab {
                    return Err(VerifyError::VocabMismatch {
                        what: "draft logits",
                        got: logits.len(),
                        want: vocab,
                    });
                }
                state.fill_mask(&mut mask);
                let ids: Vec<TokenId> = mask.iter().collect();
                let Some(lq) = compact_log_law(&logits, &ids, None) else {
                    continue; // no draft mass (or nothing allowed): a leaf
                };
                let mut seen: Vec<TokenId> = Vec::new();
                for _ in 0..shape.max_width.min(left) {
                    let j = sample_log(rng, &lq).map_err(|_| VerifyError::EmptySupport {
                        position: ctx.len() + depth - 1,
                        what: "draft",
                    })?;
                    let t = ids[j];
                    let c = out.tree.push(node, t)?;
                    out.laws.push(DraftLaw::Point);
                    if t != eos && depth < gamma && !seen.contains(&t) {
                        let mut s = state.clone();
                        s.advance(t)?;
                        next.push((c, s));
                    }
                    seen.push(t);
                }
                out.laws[node.map_or(0, |n| n + 1)] = DraftLaw::Dist { ids, log_q: lq };
            }
            // the next level's logits, in one call (nodes past the budget
            // are not fed)
            let budget = shape.max_nodes.saturating_sub(out.tree.len());
            let take = next.len().min(budget.div_ceil(shape.max_width.max(1)));
            next.truncate(take);
            if next.is_empty() || depth >= gamma {
                break;
            }
            in_grown.resize(out.tree.len(), None);
            let parents: Vec<Option<usize>> = next
                .iter()
                .map(|&(c, _)| out.tree.parents()[c].and_then(|p| in_grown[p]))
                .collect();
            let tokens: Vec<TokenId> = next.iter().map(|&(c, _)| out.tree.tokens()[c]).collect();
            let first = grown.extend(&parents, &tokens)?;
            let rows = model.tree_logits_from(&grown, first)?;
            out.calls += 1;
            for (k, (c, s)) in next.into_iter().enumerate() {
                in_grown[c] = Some(first + k);
                level.push((Some(c), s, rows.row(k).to_vec()));
            }
        }
        Ok(())
    })();
    model.truncate(ctx.len());
    result?;
    Ok(out)
}

/// Length of the longest common prefix of `a` and `b` (how much of a
/// model's KV cache a new context keeps).
pub(crate) fn common_prefix(a: &[TokenId], b: &[TokenId]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn rewind_model<Q: LanguageModel + ?Sized>(m: &mut Q, ctx: &[TokenId]) {
    let keep = common_prefix(m.context(), ctx);
    if m.context().len() > keep {
        m.truncate(keep);
    }
}

/// Draws up to `gamma` tokens from `q̃` on the fork (laws on `A_t`, token
/// order, so a step costs `O(|A_t|)` beyond the forward).
fn draft_from_model<Q: LanguageModel + ?Sized, C: Constraint, R: Rng + ?Sized>(
    model: &mut Q,
    request: DraftContext<'_>,
    fork: &mut C,
    rng: &mut R,
) -> Result<Draft, VerifyError> {
    let DraftContext {
        prompt_len,
        gamma,
        sampled,
        ..
    } = request;
    let vocab = fork.vocab_size();
    let eos = fork.eos();
    let mut ctx = request.tokens.to_vec();
    let mut out = Draft::default();
    let mut mask = TokenSet::new(vocab);
    while out.tokens.len() < gamma && !fork.is_finished() {
        fork.fill_mask(&mut mask);
        if mask.is_empty() {
            break; // a dead end; the verifier reports it at its position
        }
        let logits = model.logits_for(&ctx)?;
        out.calls += 1;
        if logits.len() != vocab {
            return Err(VerifyError::VocabMismatch {
                what: "draft logits",
                got: logits.len(),
                want: vocab,
            });
        }
        let ids: Vec<TokenId> = mask.iter().collect();
        // A draft with no mass on A_t cannot propose; the verifier then
        // samples this position from π directly.
        let Some(lq) = compact_log_law(&logits, &ids, None) else {
            break;
        };
        let j = if sampled {
            sample_log(rng, &lq).ok()
        } else {
            argmax(&lq)
        }
        .ok_or(VerifyError::EmptySupport {
            position: ctx.len() - prompt_len,
            what: "draft",
        })?;
        let d = ids[j];
        fork.advance(d)?;
        out.tokens.push(d);
        out.laws.push(DraftLaw::Dist { ids, log_q: lq });
        ctx.push(d);
        if d == eos {
            break;
        }
    }
    Ok(out)
}

/// No drafter: every round proposes nothing, so the target's one forward
/// per round is plain constrained decoding (sample or argmax of the masked
/// — and, under FVO-Spec, Φ̂-reweighted — law) through the same loop: the
/// baseline every drafter is measured against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoDraft;

impl Drafter for NoDraft {
    fn draft<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        _ctx: DraftContext<'_>,
        _fork: &mut C,
        _rng: &mut R,
    ) -> Result<Draft, VerifyError> {
        Ok(Draft::default())
    }
}

/// Prompt lookup (n-gram drafting; Saxena 2023, the "prompt-lookup
/// decoding" of Hugging Face `transformers`): find the most recent earlier
/// occurrence of the context's last `n` tokens (`n` from
/// [`PromptLookup::max_ngram`] down to [`PromptLookup::min_ngram`]) and
/// propose the tokens that followed it, cut at the first token the
/// constraint refuses. No model; point laws. Pays where the output copies
/// its input (edits, extraction, JSON re-serialisation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptLookup {
    /// Longest n-gram tried first.
    pub max_ngram: usize,
    /// Shortest n-gram tried (at least 1).
    pub min_ngram: usize,
}

impl Default for PromptLookup {
    /// n from 3 down to 1 (the `transformers` default is 3 / 1-gram
    /// fallback too).
    fn default() -> Self {
        PromptLookup {
            max_ngram: 3,
            min_ngram: 1,
        }
    }
}

impl PromptLookup {
    /// The continuation of the most recent earlier occurrence of the last
    /// `n` tokens of `ctx`, for the largest `n` that has one; empty if none.
    pub fn lookup<'c>(&self, ctx: &'c [TokenId], max_len: usize) -> &'c [TokenId] {
        let lo = self.min_ngram.max(1);
        for n in (lo..=self.max_ngram.max(lo)).rev() {
            if ctx.len() <= n {
                continue;
            }
            let key = &ctx[ctx.len() - n..];
            // most recent match that is not the suffix itself
            for start in (0..ctx.len() - n).rev() {
                if &ctx[start..start + n] == key {
                    let from = start + n;
                    let to = (from + max_len).min(ctx.len());
                    if to > from {
                        return &ctx[from..to];
                    }
                }
            }
        }
        &[]
    }
}

/// `tokens` as a draft of point laws, advanced through `fork` and cut at
/// the first token it refuses (or after EOS).
pub(crate) fn point_draft<C: Constraint>(tokens: &[TokenId], fork: &mut C) -> Draft {
    let eos = fork.eos();
    let mut out = Draft::default();
    for &t in tokens {
        if fork.is_finished() || fork.advance(t).is_err() {
            break; // cut where the grammar stops accepting the copy
        }
        out.tokens.push(t);
        out.laws.push(DraftLaw::Point);
        if t == eos {
            break;
        }
    }
    out
}

impl Drafter for PromptLookup {
    fn draft<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        ctx: DraftContext<'_>,
        fork: &mut C,
        _rng: &mut R,
    ) -> Result<Draft, VerifyError> {
        Ok(point_draft(self.lookup(ctx.tokens, ctx.gamma), fork))
    }
}

/// Copy-as-Decode's copies as drafts: the tokens of a source document
/// (the text being edited) from a cursor that follows the output.
///
/// In Copy-as-Decode (`002_*`, §3) an edit is a program of
/// `<copy lines="i-j"/>` and `<gen>…</gen>` spans and a copy is run as one
/// parallel prefill. Here the same two ideas serve a speculative loop under
/// any constraint: the *copy* is a draft of up to γ source tokens, scored
/// in the one target call that verifies the round (the parallel prefill),
/// and the *alignment* says where in the source the output stands, so no
/// copy program has to be written by the model. Reading chosen, as the
/// paper leaves spans to the model: the cursor is re-derived each round as
/// the end of the longest suffix of the output (at most
/// [`CopyDraft::max_ngram`] tokens) that occurs in the source; among
/// occurrences of that length, the first ending at or after the previous
/// cursor wins (the output moves forward through the source), else the
/// last before it. That is what separates it from [`PromptLookup`], which
/// takes the most recent occurrence anywhere in the context: in a JSON
/// document short n-grams (`", "`, `": "`) repeat on every line, and the
/// most recent one is usually the wrong line.
///
/// Generated spans (the edit itself) break the match; the first tokens
/// after them that occur in the source at or past the cursor put the copy
/// back on track. Where the output's longest suffix in the source is short
/// ([`CopyDraft::fallback`], default under 3 tokens), the output is not
/// copying the source, and the round drafts by prompt lookup over the
/// whole context instead (which also copies the output's own repeats). Drafts are cut where the constraint refuses a token,
/// like every drafter's; point laws, so the output law is the target's.
/// Cost: a scan of the source per round, `O(|source| · max_ngram)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyDraft {
    /// The source document's tokens (as they appear in the prompt).
    pub source: Vec<TokenId>,
    /// Longest output suffix matched (the first try).
    pub max_ngram: usize,
    /// Shortest output suffix matched (at least 1).
    pub min_ngram: usize,
    /// Where the output has left the source — its longest suffix found in
    /// the source is shorter than this (and shorter than the output) —
    /// draft by prompt lookup over the whole context instead (`None`:
    /// never). Outputs that run on by repeating themselves are copies of
    /// the output, not of the source; a one- or two-token match into the
    /// source is mostly a wrong line.
    pub fallback: Option<(usize, PromptLookup)>,
    /// Where the previous round's copy ended (the next source token).
    cursor: usize,
}

impl CopyDraft {
    /// Copies from `source`, matching output suffixes of 8 down to 1
    /// tokens, with prompt lookup where the match is shorter than 3.
    pub fn new(source: Vec<TokenId>) -> Self {
        CopyDraft {
            source,
            max_ngram: 8,
            min_ngram: 1,
            fallback: Some((3, PromptLookup::default())),
            cursor: 0,
        }
    }

    /// The source position the output continues at, if any: the end of the
    /// longest suffix of `out` found in the source (see the type's docs for
    /// ties). An empty output continues at the source's start.
    pub fn align(&self, out: &[TokenId]) -> Option<usize> {
        self.align_len(out).map(|(end, _)| end)
    }

    /// [`CopyDraft::align`] with the length of the matched suffix.
    fn align_len(&self, out: &[TokenId]) -> Option<(usize, usize)> {
        if out.is_empty() {
            return Some((0, 0));
        }
        let lo = self.min_ngram.max(1);
        for n in (lo..=self.max_ngram.max(lo)).rev() {
            if out.len() < n || self.source.len() < n {
                continue;
            }
            let key = &out[out.len() - n..];
            let mut before = None;
            for start in 0..=self.source.len() - n {
                if &self.source[start..start + n] == key {
                    let end = start + n;
                    if end >= self.cursor {
                        return Some((end, n));
                    }
                    before = Some((end, n));
                }
            }
            if before.is_some() {
                return before;
            }
        }
        None
    }
}

impl Drafter for CopyDraft {
    fn draft<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        ctx: DraftContext<'_>,
        fork: &mut C,
        _rng: &mut R,
    ) -> Result<Draft, VerifyError> {
        let gamma = ctx.gamma;
        let produced = ctx.produced();
        // a copy, unless the match is too short for the fallback's bound
        let copy_at = self.align_len(produced).filter(|&(_, n)| {
            self.fallback
                .is_none_or(|(min, _)| n >= min.min(produced.len()))
        });
        let tokens: &[TokenId] = match (copy_at, self.fallback) {
            (Some((at, _)), _) => {
                self.cursor = at;
                &self.source[at..(at + gamma).min(self.source.len())]
            }
            (None, Some((_, lookup))) => lookup.lookup(ctx.tokens, gamma),
            (None, None) => &[],
        };
        Ok(point_draft(tokens, fork))
    }
}

/// Prompt lookup over several matches (tree n-gram drafting, as in
/// SpecInfer's multi-draft trees with an n-gram drafter, or REST's
/// retrieved continuations): the continuations of up to
/// [`TreeLookup::max_matches`] earlier occurrences of the context's last
/// `n` tokens — longest `n` first, most recent first, one per start
/// position — merged into a tree by shared prefix
/// ([`tree_of_continuations`]), bounded by [`TreeConfig`]. No model;
/// deterministic. As a linear drafter it is [`PromptLookup`] (the first
/// continuation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeLookup {
    /// Longest n-gram tried first.
    pub max_ngram: usize,
    /// Shortest n-gram tried (at least 1).
    pub min_ngram: usize,
    /// Most matches (continuations) merged into one tree.
    pub max_matches: usize,
}

impl Default for TreeLookup {
    /// n from 3 down to 1, up to 8 matches.
    fn default() -> Self {
        TreeLookup {
            max_ngram: 3,
            min_ngram: 1,
            max_matches: 8,
        }
    }
}

impl TreeLookup {
    /// The continuations (each at most `max_len` tokens, non-empty) of the
    /// earlier occurrences of the context's suffix, in priority order:
    /// longer n-grams first, then more recent occurrences; an occurrence
    /// whose continuation starts where a higher-priority one's does is
    /// skipped. At most [`TreeLookup::max_matches`]; `O(|ctx| · n)` per n.
    pub fn continuations<'c>(&self, ctx: &'c [TokenId], max_len: usize) -> Vec<&'c [TokenId]> {
        let lo = self.min_ngram.max(1);
        let mut out: Vec<&[TokenId]> = Vec::new();
        let mut starts: Vec<usize> = Vec::new();
        if max_len == 0 {
            return out;
        }
        for n in (lo..=self.max_ngram.max(lo)).rev() {
            if ctx.len() <= n {
                continue;
            }
            let key = &ctx[ctx.len() - n..];
            for start in (0..ctx.len() - n).rev() {
                if out.len() >= self.max_matches {
                    return out;
                }
                let from = start + n;
                if &ctx[start..from] == key && !starts.contains(&from) {
                    let to = (from + max_len).min(ctx.len());
                    if to > from {
                        starts.push(from);
                        out.push(&ctx[from..to]);
                    }
                }
            }
        }
        out
    }

    fn as_lookup(&self) -> PromptLookup {
        PromptLookup {
            max_ngram: self.max_ngram,
            min_ngram: self.min_ngram,
        }
    }
}

impl Drafter for TreeLookup {
    fn draft<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        ctx: DraftContext<'_>,
        fork: &mut C,
        _rng: &mut R,
    ) -> Result<Draft, VerifyError> {
        Ok(point_draft(
            self.as_lookup().lookup(ctx.tokens, ctx.gamma),
            fork,
        ))
    }

    /// The merged continuations; the constraint is not consulted here (the
    /// decoder cuts refused nodes with the tree's masks).
    fn draft_tree<C: Constraint, R: Rng + ?Sized>(
        &mut self,
        ctx: DraftContext<'_>,
        shape: &TreeConfig,
        _fork: &mut C,
        _rng: &mut R,
    ) -> Result<TreeDraft, VerifyError> {
        let conts = self.continuations(ctx.tokens, ctx.gamma);
        Ok(TreeDraft::point(
            tree_of_continuations(conts, ctx.gamma, shape),
            0,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_takes_the_longest_most_recent_match() {
        let p = PromptLookup::default();
        // ... 1 2 3 [4 5] ... 9 2 3 [7 8] ... 2 3 -> the most recent 3-gram
        // "x 2 3" fails, the 2-gram "2 3" matches at its latest occurrence
        let ctx = [1, 2, 3, 4, 5, 9, 2, 3, 7, 8, 6, 2, 3];
        assert_eq!(p.lookup(&ctx, 2), &[7, 8]);
        assert_eq!(p.lookup(&ctx, 10), &[7, 8, 6, 2, 3]);
        // a 3-gram match wins over a later 1-gram one
        let ctx = [5, 6, 7, 1, 7, 0, 5, 6, 7];
        assert_eq!(p.lookup(&ctx, 2), &[1, 7]);
        assert!(p.lookup(&[1, 2, 3], 4).is_empty());
        assert!(p.lookup(&[], 4).is_empty());
    }

    #[test]
    fn copy_alignment_moves_forward_through_the_source() {
        // two lines that share the 2-gram [7, 8]: after the first line the
        // copy continues into the second, not back to the first
        let mut c = CopyDraft::new(vec![1, 7, 8, 2, 3, 7, 8, 4, 5]);
        assert_eq!(c.align(&[]), Some(0));
        assert_eq!(c.align(&[1, 7, 8]), Some(3));
        c.cursor = 3;
        // the 1-gram [8] occurs at ends 3 and 7; the longest suffix [2, 3,
        // 7, 8] is unique and ends at 7
        assert_eq!(c.align(&[1, 7, 8, 2, 3, 7, 8]), Some(7));
        // an edit (9 9) breaks the match; [7, 8] after it resumes at the
        // occurrence at or after the cursor
        c.cursor = 5;
        assert_eq!(c.align(&[1, 7, 8, 9, 9, 7, 8]), Some(7));
        // only an earlier occurrence: the last one before the cursor
        c.cursor = 8;
        assert_eq!(c.align(&[9, 2]), Some(4));
        // nothing in common
        assert_eq!(c.align(&[42]), None);
    }

    #[test]
    fn a_weak_match_falls_back_to_prompt_lookup() {
        use std::sync::Arc;
        use zapspec_testkit::{TokenTrie, TrieConstraint};
        let mut rng = zapspec_core::prob::seeded_rng(0);
        let trie =
            TrieConstraint::new(Arc::new(TokenTrie::new([vec![9, 5, 9, 5, 9, 5, 9]])), 10, 0);
        let mut after = trie.clone();
        for t in [9, 5, 9, 5, 9] {
            after.advance(t).unwrap();
        }
        // the output 9 5 9 5 9 repeats itself and is nowhere in the source:
        // prompt lookup over the context copies the repeat
        let ctx = [4, 4, 9, 5, 9, 5, 9];
        let mut c = CopyDraft::new(vec![1, 7, 8, 2, 3]);
        assert_eq!(c.align(&ctx[2..]), None);
        let req = DraftContext {
            tokens: &ctx,
            prompt_len: 2,
            gamma: 3,
            sampled: false,
        };
        let d = c.draft(req, &mut after.clone(), &mut rng).unwrap();
        assert_eq!(d.tokens, vec![5, 9]);
        // without the fallback, nothing to draft
        c.fallback = None;
        let d = c.draft(req, &mut after.clone(), &mut rng).unwrap();
        assert!(d.tokens.is_empty());
        // a match of 3 tokens into the source is a copy, a shorter one not
        let c = CopyDraft::new(vec![1, 7, 8, 2, 3]);
        assert_eq!(c.align_len(&[4, 7, 8, 2]), Some((4, 3)));
        assert_eq!(c.align_len(&[4, 8, 2]), Some((4, 2)));
    }

    #[test]
    fn copy_drafts_are_cut_by_the_constraint_and_gamma() {
        use std::sync::Arc;
        use zapspec_testkit::{TokenTrie, TrieConstraint};
        // the trie allows 1 7 8 2 then only 5: the copy of 1 7 8 2 3 stops
        // before 3
        let trie = TrieConstraint::new(Arc::new(TokenTrie::new([vec![1, 7, 8, 2, 5]])), 10, 0);
        let mut c = CopyDraft::new(vec![1, 7, 8, 2, 3, 7, 8]);
        let mut rng = zapspec_core::prob::seeded_rng(0);
        let mut f = trie.clone();
        let req = DraftContext {
            tokens: &[4, 4],
            prompt_len: 2,
            gamma: 16,
            sampled: false,
        };
        let d = c.draft(req, &mut f, &mut rng).unwrap();
        assert_eq!(d.tokens, vec![1, 7, 8, 2]);
        assert!(d.laws.iter().all(|l| *l == DraftLaw::Point));
        let mut f = trie.clone();
        let d = c.draft(req.with_gamma(2), &mut f, &mut rng).unwrap();
        assert_eq!(d.tokens, vec![1, 7]);
    }
}
