//! [`DiffusionLm`]: a masked diffusion LM (LLaDA-style: a transformer
//! without a causal mask, trained to predict masked tokens) behind
//! [`DiffusionModel`], decoded block by block.
//!
//! One [`denoise`](DiffusionModel::denoise) call is one forward (one NFE)
//! that scores the true block and every Spiffy draft block together under
//! the draft-block attention mask of Spiffy Fig. 3 (§4.3): the true sequence
//! attends to itself; draft block `m` attends to itself and to the true
//! sequence except the block it drafts, and its tokens reuse the position
//! ids of the positions they draft.
//!
//! Exactness (Spiffy Appendix A.2): a draft block's marginals equal those of
//! a separate forward with the draft written into the block
//! - for [`DiffusionAttention::BlockCausal`] models (earlier blocks never
//!   attend to the current block), with or without the prefix cache, when
//!   the block is an aligned block;
//! - for bidirectional models with [`DiffusionCache::Dual`] (keys and values
//!   of the prefix and suffix are frozen, Fast-dLLM's dual cache);
//! - for bidirectional models without a dual cache only approximately: the
//!   other blocks attend to the current block, so from the second layer on
//!   the draft sees the current block indirectly (exact for one layer).

use std::ops::Range;
use std::sync::Arc;

use zapspec_core::model::check_denoise_args;
use zapspec_core::{BlockMarginals, DiffusionModel, Logits, ModelError, TokenId};

use crate::config::DiffusionAttention;
use crate::mask::AttnMask;
use crate::transformer::{to_array, KvCache, LogitRows, Transformer};

/// KV caching for block-wise decoding (Spiffy §3.1 "prefix caching";
/// Fast-dLLM's dual cache).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiffusionCache {
    /// Every call runs the whole sequence.
    #[default]
    None,
    /// Keys/values of the tokens before the block are reused while the
    /// prefix is unchanged (exact for blockwise-causal models; for
    /// bidirectional ones they are those of the forward that filled the
    /// cache, the usual approximation).
    Prefix,
    /// Prefix and suffix keys/values are reused while both are unchanged;
    /// only the block (and the drafts) are recomputed.
    Dual,
}

#[derive(Debug, Clone)]
struct PrefixKv {
    tokens: Vec<TokenId>,
    kv: KvCache,
}

#[derive(Debug, Clone)]
struct DualKv {
    block: Range<usize>,
    prefix: Vec<TokenId>,
    suffix: Vec<TokenId>,
    /// prefix ++ suffix keys/values (positions already rotated).
    kv: KvCache,
}

/// A masked diffusion LM over a [`Transformer`].
#[derive(Debug, Clone)]
pub struct DiffusionLm {
    model: Arc<Transformer>,
    mask: TokenId,
    attention: DiffusionAttention,
    block_size: usize,
    cache: DiffusionCache,
    prefix: Option<PrefixKv>,
    dual: Option<DualKv>,
    nfe: usize,
    forwards: usize,
}

impl DiffusionLm {
    /// Wraps a model whose config has a `zapspec` diffusion section.
    pub fn new(model: Arc<Transformer>) -> Result<Self, ModelError> {
        let cfg = model.config();
        let z = cfg.zapspec.clone().unwrap_or_default();
        let mask = cfg.mask_token().ok_or_else(|| ModelError::Checkpoint {
            path: "<config>".into(),
            reason: "not a diffusion model: config.json has no zapspec.mask_token_id".into(),
        })?;
        Ok(DiffusionLm {
            model,
            mask,
            attention: z.attention,
            block_size: z.block_size,
            cache: DiffusionCache::None,
            prefix: None,
            dual: None,
            nfe: 0,
            forwards: 0,
        })
    }

    /// Builder: the caching scheme.
    pub fn with_cache(mut self, cache: DiffusionCache) -> Self {
        self.cache = cache;
        self.clear_cache();
        self
    }

    /// Builder: override the attention pattern (e.g. run a bidirectional
    /// model blockwise-causally).
    pub fn with_attention(mut self, attention: DiffusionAttention, block_size: usize) -> Self {
        self.attention = attention;
        self.block_size = block_size.max(1);
        self.clear_cache();
        self
    }

    /// Drops the prefix and dual KV caches (the next call recomputes them).
    pub fn clear_cache(&mut self) {
        self.prefix = None;
        self.dual = None;
    }

    /// The underlying transformer.
    pub fn model(&self) -> &Arc<Transformer> {
        &self.model
    }
    /// The attention pattern in use.
    pub fn attention(&self) -> DiffusionAttention {
        self.attention
    }
    /// Block length (tokens) of blockwise-causal attention and of decoding.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Forward passes so far, cache fills included (≥ [`nfe`](DiffusionModel::nfe)).
    pub fn forwards(&self) -> usize {
        self.forwards
    }

    fn fwd(
        &mut self,
        tokens: &[TokenId],
        positions: &[usize],
        past: &KvCache,
        mask: &AttnMask,
        rows: LogitRows,
    ) -> Result<(Option<Logits>, KvCache), ModelError> {
        let out = self
            .model
            .forward(tokens, positions, past, mask, rows)
            .map_err(crate::backend)?;
        self.forwards += 1;
        let l = out.logits.as_ref().map(to_array).transpose()?;
        Ok((l, out.kv))
    }

    /// Keys/values of `prefix` under blockwise-causal attention, extending
    /// the cached prefix when it is a prefix of this one.
    fn block_causal_prefix(&mut self, prefix: &[TokenId]) -> Result<KvCache, ModelError> {
        if let Some(p) = &self.prefix {
            if p.tokens == prefix {
                return Ok(p.kv.clone());
            }
        }
        let (past_tokens, past) = match &self.prefix {
            Some(p) if prefix.starts_with(&p.tokens) && p.tokens.len() % self.block_size == 0 => {
                (p.tokens.len(), p.kv.clone())
            }
            _ => (0, KvCache::default()),
        };
        let new = &prefix[past_tokens..];
        let kv = if new.is_empty() {
            past
        } else {
            let positions: Vec<usize> = (past_tokens..prefix.len()).collect();
            let mask = AttnMask::block_causal(past_tokens, past_tokens, new.len(), self.block_size);
            self.fwd(new, &positions, &past, &mask, LogitRows::None)?.1
        };
        self.prefix = Some(PrefixKv {
            tokens: prefix.to_vec(),
            kv: kv.clone(),
        });
        Ok(kv)
    }

    /// One forward of `new` tokens (the true tokens from `new_start`, then
    /// the drafts) over `past`, under `true_mask` for the true rows and the
    /// Spiffy extension for the drafts; returns the marginals of `block`.
    #[allow(clippy::too_many_arguments)]
    fn run_spiffy(
        &mut self,
        seq: &[TokenId],
        true_range: Range<usize>,
        block: &Range<usize>,
        drafts: &[Vec<TokenId>],
        past: &KvCache,
        true_mask: AttnMask,
    ) -> Result<(BlockMarginals, KvCache), ModelError> {
        let l = block.len();
        let n = true_range.len();
        let local = block.start - true_range.start..block.end - true_range.start;
        let mut tokens: Vec<TokenId> = seq[true_range.clone()].to_vec();
        let mut positions: Vec<usize> = true_range.clone().collect();
        for d in drafts {
            tokens.extend_from_slice(d);
            positions.extend(block.clone());
        }
        let mask = AttnMask::spiffy_over(true_mask, past.len(), local.clone(), drafts.len());
        let rows: Vec<usize> = local.clone().chain(n..n + drafts.len() * l).collect();
        let (logits, kv) = self.fwd(&tokens, &positions, past, &mask, LogitRows::Rows(rows))?;
        let logits = logits.ok_or_else(|| ModelError::Backend("no logits".into()))?;
        let main = logits.slice(ndarray::s![0..l, ..]).to_owned();
        let drafts = (0..drafts.len())
            .map(|d| {
                logits
                    .slice(ndarray::s![l * (d + 1)..l * (d + 2), ..])
                    .to_owned()
            })
            .collect();
        Ok((BlockMarginals { main, drafts }, kv))
    }
}

impl DiffusionModel for DiffusionLm {
    fn vocab_size(&self) -> usize {
        self.model.vocab_size()
    }

    fn mask_token(&self) -> TokenId {
        self.mask
    }

    fn denoise(
        &mut self,
        seq: &[TokenId],
        block: Range<usize>,
        drafts: &[Vec<TokenId>],
    ) -> Result<BlockMarginals, ModelError> {
        check_denoise_args(seq, &block, drafts, self.vocab_size())?;
        let v = self.vocab_size();
        if block.is_empty() {
            return Ok(BlockMarginals {
                main: Logits::zeros((0, v)),
                drafts: vec![Logits::zeros((0, v)); drafts.len()],
            });
        }
        self.model.check_input(&[], seq.len() - 1)?;
        self.nfe += 1;
        let (start, end, n) = (block.start, block.end, seq.len());
        match self.attention {
            DiffusionAttention::BlockCausal => {
                let bs = self.block_size;
                if start / bs != (end - 1) / bs {
                    return Err(ModelError::Backend(format!(
                        "block {start}..{end}: a blockwise-causal model denoises within one aligned block of {bs} positions"
                    )));
                }
                // Later blocks are invisible to this one: drop them.
                let aligned = if self.cache == DiffusionCache::None {
                    0
                } else {
                    start / bs * bs
                };
                let past = if aligned == 0 {
                    KvCache::default()
                } else {
                    self.block_causal_prefix(&seq[..aligned])?
                };
                let true_mask = AttnMask::block_causal(aligned, aligned, end - aligned, bs);
                Ok(self
                    .run_spiffy(seq, aligned..end, &block, drafts, &past, true_mask)?
                    .0)
            }
            DiffusionAttention::Bidirectional => {
                let full = |s: &mut Self| {
                    s.run_spiffy(
                        seq,
                        0..n,
                        &block,
                        drafts,
                        &KvCache::default(),
                        AttnMask::full(n, n),
                    )
                };
                match self.cache {
                    DiffusionCache::None => Ok(full(self)?.0),
                    DiffusionCache::Prefix => {
                        if let Some(p) = self.prefix.clone().filter(|p| p.tokens == seq[..start]) {
                            let mask = AttnMask::full(n - start, n);
                            Ok(self
                                .run_spiffy(seq, start..n, &block, drafts, &p.kv, mask)?
                                .0)
                        } else {
                            let (m, kv) = full(self)?;
                            let kv = kv.narrow(0, start).map_err(crate::backend)?;
                            self.prefix = Some(PrefixKv {
                                tokens: seq[..start].to_vec(),
                                kv,
                            });
                            Ok(m)
                        }
                    }
                    DiffusionCache::Dual => {
                        let hit = self.dual.clone().filter(|d| {
                            d.block == block && d.prefix == seq[..start] && d.suffix == seq[end..]
                        });
                        if let Some(d) = hit {
                            let mask = AttnMask::full(block.len(), d.kv.len() + block.len());
                            Ok(self
                                .run_spiffy(seq, block.clone(), &block, drafts, &d.kv, mask)?
                                .0)
                        } else {
                            // The filling forward: its prefix/suffix keys and
                            // values are exactly those the cached calls use,
                            // so this call agrees with a cached one.
                            let (m, kv) = full(self)?;
                            let pre = kv.narrow(0, start).map_err(crate::backend)?;
                            let suf = kv.narrow(end, n - end).map_err(crate::backend)?;
                            let kv = KvCache::cat(&pre, &suf).map_err(crate::backend)?;
                            self.dual = Some(DualKv {
                                block: block.clone(),
                                prefix: seq[..start].to_vec(),
                                suffix: seq[end..].to_vec(),
                                kv,
                            });
                            Ok(m)
                        }
                    }
                }
            }
        }
    }

    fn nfe(&self) -> usize {
        self.nfe
    }
}

/// Options of [`generate_blockwise`].
#[derive(Debug, Clone)]
pub struct DiffusionGenerateOptions {
    /// Tokens to generate after the prompt.
    pub gen_len: usize,
    /// Decoding block length (blocks are aligned to multiples of it).
    pub block_len: usize,
    /// Tokens unmasked per denoising step (Spiffy's S; 1 = LLaDA default).
    pub tokens_per_step: usize,
}

impl Default for DiffusionGenerateOptions {
    fn default() -> Self {
        DiffusionGenerateOptions {
            gen_len: 32,
            block_len: 16,
            tokens_per_step: 1,
        }
    }
}

/// Semi-autoregressive block-wise decoding (Spiffy §3.1): blocks are
/// unmasked left to right; within a block each step unmasks the
/// `tokens_per_step` masked positions whose greedy token is most probable.
/// Returns the generated tokens (prompt excluded) and the number of NFEs.
pub fn generate_blockwise<M: DiffusionModel>(
    model: &mut M,
    prompt: &[TokenId],
    opts: &DiffusionGenerateOptions,
) -> Result<(Vec<TokenId>, usize), ModelError> {
    let mask = model.mask_token();
    let mut seq: Vec<TokenId> = prompt.to_vec();
    seq.extend(std::iter::repeat_n(mask, opts.gen_len));
    let bl = opts.block_len.max(1);
    let s = opts.tokens_per_step.max(1);
    let nfe0 = model.nfe();
    let mut start = prompt.len();
    while start < seq.len() {
        let end = ((start / bl + 1) * bl).min(seq.len());
        while seq[start..end].contains(&mask) {
            let m = model.denoise(&seq, start..end, &[])?;
            let mut cands: Vec<(f64, usize, TokenId)> = Vec::new();
            for (row, p) in (start..end).enumerate() {
                if seq[p] != mask {
                    continue;
                }
                let mut l = m.main.row(row).to_vec();
                l[mask as usize] = f32::NEG_INFINITY;
                let probs = zapspec_core::prob::softmax(&l);
                let (best, pb) =
                    probs
                        .iter()
                        .enumerate()
                        .fold((0, -1.0), |b, (i, &q)| if q > b.1 { (i, q) } else { b });
                cands.push((pb, p, best as TokenId));
            }
            cands.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            for &(_, p, t) in cands.iter().take(s) {
                seq[p] = t;
            }
        }
        start = end;
    }
    Ok((seq[prompt.len()..].to_vec(), model.nfe() - nfe0))
}
