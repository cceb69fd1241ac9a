//! The decoder stack (Llama/Qwen2 family) and its one primitive: a forward
//! pass of `n` new tokens at arbitrary position ids over a KV cache, under an
//! arbitrary [`AttnMask`]. Parallel prefill, single-token decode, tree
//! verification and Spiffy draft blocks are all this one call with different
//! positions and masks.

use std::path::Path;

use candle_core::quantized::QMatMul;
use candle_core::{DType, Device, Module, Tensor, D};
use candle_nn::Linear;
use zapspec_core::{ModelError, TokenId};

use crate::config::ModelConfig;
use crate::mask::AttnMask;
use crate::weights::{self, Weights};

/// Keys and values of one layer, shape `(1, kv_heads, T, head_dim)`; keys
/// carry their rotary embedding already.
#[derive(Debug, Clone)]
pub struct LayerKv {
    /// Keys, `(1, kv_heads, T, head_dim)`, rotary embedding applied.
    pub k: Tensor,
    /// Values, `(1, kv_heads, T, head_dim)`.
    pub v: Tensor,
}

impl LayerKv {
    /// Positions `range` of the cache.
    pub fn narrow(&self, start: usize, len: usize) -> candle_core::Result<LayerKv> {
        Ok(LayerKv {
            k: self.k.narrow(2, start, len)?,
            v: self.v.narrow(2, start, len)?,
        })
    }
    /// Concatenation along the position axis.
    pub fn cat(parts: &[&LayerKv]) -> candle_core::Result<LayerKv> {
        let ks: Vec<&Tensor> = parts.iter().map(|p| &p.k).collect();
        let vs: Vec<&Tensor> = parts.iter().map(|p| &p.v).collect();
        Ok(LayerKv {
            k: Tensor::cat(&ks, 2)?,
            v: Tensor::cat(&vs, 2)?,
        })
    }
    /// The cache positions `idx`, in that order.
    pub fn select(&self, idx: &[usize]) -> candle_core::Result<LayerKv> {
        let dev = self.k.device();
        let ix = Tensor::from_vec(
            idx.iter().map(|&i| i as u32).collect::<Vec<_>>(),
            idx.len(),
            dev,
        )?;
        Ok(LayerKv {
            k: self.k.contiguous()?.index_select(&ix, 2)?,
            v: self.v.contiguous()?.index_select(&ix, 2)?,
        })
    }
    /// Number of cached positions `T`.
    pub fn len(&self) -> usize {
        self.k.dim(2).unwrap_or(0)
    }
    /// Whether no position is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A KV cache: one [`LayerKv`] per layer (empty: no layers stored).
/// Cloning is cheap (candle tensors are reference-counted), so a fork for
/// speculative decoding is `cache.clone()`.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    /// One entry per decoder layer, all of the same length.
    pub layers: Vec<LayerKv>,
}

impl KvCache {
    /// Number of cached positions (0 when no layer is stored).
    pub fn len(&self) -> usize {
        self.layers.first().map_or(0, LayerKv::len)
    }
    /// Whether no position is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Keeps the first `len` positions (rollback).
    pub fn truncate(&mut self, len: usize) -> candle_core::Result<()> {
        if len == 0 {
            self.layers.clear();
        } else if len < self.len() {
            for l in &mut self.layers {
                *l = l.narrow(0, len)?;
            }
        }
        Ok(())
    }
    /// Positions `start..start + len` of every layer.
    pub fn narrow(&self, start: usize, len: usize) -> candle_core::Result<KvCache> {
        if len == 0 {
            return Ok(KvCache::default());
        }
        Ok(KvCache {
            layers: self
                .layers
                .iter()
                .map(|l| l.narrow(start, len))
                .collect::<candle_core::Result<_>>()?,
        })
    }
    /// `a ++ b`, layer by layer.
    pub fn cat(a: &KvCache, b: &KvCache) -> candle_core::Result<KvCache> {
        if a.is_empty() {
            return Ok(b.clone());
        }
        if b.is_empty() {
            return Ok(a.clone());
        }
        Ok(KvCache {
            layers: a
                .layers
                .iter()
                .zip(&b.layers)
                .map(|(x, y)| LayerKv::cat(&[x, y]))
                .collect::<candle_core::Result<_>>()?,
        })
    }
    /// Positions `idx` of every layer.
    pub fn select(&self, idx: &[usize]) -> candle_core::Result<KvCache> {
        if idx.is_empty() {
            return Ok(KvCache::default());
        }
        Ok(KvCache {
            layers: self
                .layers
                .iter()
                .map(|l| l.select(idx))
                .collect::<candle_core::Result<_>>()?,
        })
    }
}

/// Which rows of the final hidden states go through the LM head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogitRows {
    /// Every new position.
    All,
    /// Only the last new position (decoding).
    Last,
    /// The listed new positions, in that order.
    Rows(Vec<usize>),
    /// None (a prefill that only fills the cache).
    None,
}

/// What one [`Transformer::forward`] returns.
#[derive(Debug, Clone)]
pub struct ForwardOut {
    /// `(rows, vocab)` logits of the requested rows (f32), if any.
    pub logits: Option<Tensor>,
    /// Keys/values of `past ++ new` per layer.
    pub kv: KvCache,
}

/// A weight matrix applied as `x · Wᵀ (+ b)`: dense (f32/bf16, with an
/// optional bias) or block-quantised (GGUF `Q4_1`, `Q8_0`, …, through
/// candle's `QMatMul`, which multiplies without dequantising the weights).
#[derive(Debug, Clone)]
pub enum Proj {
    /// A dense matrix `(out, in)` and optional bias `(out)`.
    Dense(Linear),
    /// A quantised matrix `(out, in)`.
    Quant(QMatMul),
}

impl Proj {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Proj::Dense(l) => l.forward(x),
            Proj::Quant(q) => q.forward(x),
        }
    }
}

/// The tensors of one decoder layer.
#[derive(Debug, Clone)]
pub struct Block {
    /// Input RMSNorm weight `(hidden)`.
    pub ln1: Tensor,
    /// Post-attention RMSNorm weight `(hidden)`.
    pub ln2: Tensor,
    /// Query projection.
    pub q: Proj,
    /// Key projection.
    pub k: Proj,
    /// Value projection.
    pub v: Proj,
    /// Attention output projection.
    pub o: Proj,
    /// SwiGLU gate projection.
    pub gate: Proj,
    /// SwiGLU up projection.
    pub up: Proj,
    /// SwiGLU down projection.
    pub down: Proj,
}

/// A model's tensors once built: what [`Transformer::from_parts`] takes.
#[derive(Debug, Clone)]
pub struct Parts {
    /// Token embedding `(vocab, hidden)`, dense (looked up by row).
    pub embed: Tensor,
    /// Decoder layers.
    pub blocks: Vec<Block>,
    /// Final RMSNorm weight `(hidden)`.
    pub norm: Tensor,
    /// LM head `(vocab, hidden)`.
    pub lm_head: Proj,
}

/// A decoder-only transformer of the Llama/Qwen2 family (RMSNorm, RoPE,
/// grouped-query attention, SwiGLU, optional QKV bias, optional tied
/// embeddings). The attention pattern is whatever mask the caller gives, so
/// the same weights serve a causal LM and a masked diffusion LM.
pub struct Transformer {
    cfg: ModelConfig,
    device: Device,
    dtype: DType,
    embed: Tensor,
    blocks: Vec<Block>,
    norm: Tensor,
    lm_head: Proj,
    /// `(max_position_embeddings, head_dim / 2)` RoPE tables.
    cos: Tensor,
    sin: Tensor,
    weights: Weights,
}

impl std::fmt::Debug for Transformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transformer")
            .field("layers", &self.cfg.num_hidden_layers)
            .field("hidden", &self.cfg.hidden_size)
            .field("vocab", &self.cfg.vocab_size)
            .field("device", &self.device)
            .finish()
    }
}

impl Transformer {
    /// Builds a model from named weights (checked against `cfg` first).
    pub fn from_weights(
        cfg: ModelConfig,
        weights: Weights,
        device: &Device,
    ) -> Result<Self, ModelError> {
        cfg.validate("<in-memory config>")?;
        weights::check_weights(&cfg, &weights, "<in-memory weights>")?;
        Self::build(cfg, weights, device).map_err(crate::backend)
    }

    /// A model with random weights (timings do not depend on weight values).
    pub fn random(
        cfg: ModelConfig,
        seed: u64,
        dtype: DType,
        device: &Device,
    ) -> Result<Self, ModelError> {
        cfg.validate("<in-memory config>")?;
        let w = weights::random_weights(&cfg, seed, dtype, device).map_err(crate::backend)?;
        Self::build(cfg, w, device).map_err(crate::backend)
    }

    /// Loads `dir/config.json` + `dir/model.safetensors` (HF layout).
    pub fn load(dir: &Path, dtype: DType, device: &Device) -> Result<Self, ModelError> {
        let cfg = weights::read_config(dir)?;
        let w = weights::read_weights(dir, &cfg, dtype, device)?;
        Self::build(cfg, w, device).map_err(crate::backend)
    }

    /// Writes `dir/config.json` + `dir/model.safetensors` (dense models
    /// only).
    pub fn save(&self, dir: &Path) -> Result<(), ModelError> {
        if self.is_quantized() {
            return Err(ModelError::Checkpoint {
                path: dir.display().to_string(),
                reason: "a quantised model cannot be saved as safetensors".into(),
            });
        }
        weights::check_weights(&self.cfg, &self.weights, "<weights to save>")?;
        weights::write_checkpoint(dir, &self.cfg, &self.weights)
    }

    fn build(cfg: ModelConfig, w: Weights, device: &Device) -> candle_core::Result<Self> {
        let get = |n: &str| -> candle_core::Result<Tensor> {
            w.get(n)
                .cloned()
                .ok_or_else(|| candle_core::Error::Msg(format!("missing tensor {n}")))
        };
        let lin = |p: &str, bias: bool| -> candle_core::Result<Proj> {
            let b = if bias {
                Some(get(&format!("{p}.bias"))?)
            } else {
                None
            };
            Ok(Proj::Dense(Linear::new(get(&format!("{p}.weight"))?, b)))
        };
        let embed = get("model.embed_tokens.weight")?;
        let mut blocks = Vec::with_capacity(cfg.num_hidden_layers);
        for l in 0..cfg.num_hidden_layers {
            let p = format!("model.layers.{l}");
            blocks.push(Block {
                ln1: get(&format!("{p}.input_layernorm.weight"))?,
                ln2: get(&format!("{p}.post_attention_layernorm.weight"))?,
                q: lin(&format!("{p}.self_attn.q_proj"), cfg.qkv_bias())?,
                k: lin(&format!("{p}.self_attn.k_proj"), cfg.qkv_bias())?,
                v: lin(&format!("{p}.self_attn.v_proj"), cfg.qkv_bias())?,
                o: lin(&format!("{p}.self_attn.o_proj"), cfg.o_bias())?,
                gate: lin(&format!("{p}.mlp.gate_proj"), false)?,
                up: lin(&format!("{p}.mlp.up_proj"), false)?,
                down: lin(&format!("{p}.mlp.down_proj"), false)?,
            });
        }
        let lm_head = if cfg.tie_word_embeddings {
            embed.clone()
        } else {
            get("lm_head.weight")?
        };
        let norm = get("model.norm.weight")?;
        let parts = Parts {
            embed,
            blocks,
            norm,
            lm_head: Proj::Dense(Linear::new(lm_head, None)),
        };
        Self::assemble(cfg, parts, w, device)
    }

    /// A model from tensors already built (e.g. quantised GGUF weights, see
    /// [`crate::gguf`]); `weights` holds whatever named dense tensors
    /// [`weights`](Self::weights) should report (may be empty). The caller
    /// has checked shapes against `cfg`.
    pub fn from_parts(
        cfg: ModelConfig,
        parts: Parts,
        weights: Weights,
        device: &Device,
    ) -> Result<Self, ModelError> {
        cfg.validate("<in-memory config>")?;
        Self::assemble(cfg, parts, weights, device).map_err(crate::backend)
    }

    fn assemble(
        cfg: ModelConfig,
        parts: Parts,
        weights: Weights,
        device: &Device,
    ) -> candle_core::Result<Self> {
        let dtype = parts.embed.dtype();
        let (cos, sin) = rope_tables(&cfg, dtype, device)?;
        Ok(Transformer {
            device: device.clone(),
            dtype,
            embed: parts.embed,
            blocks: parts.blocks,
            norm: parts.norm,
            lm_head: parts.lm_head,
            cos,
            sin,
            weights,
            cfg,
        })
    }

    /// The same model with only its first `layers` decoder layers, then the
    /// final norm and the LM head: a self-speculative drafter (early exit,
    /// as LayerSkip / Draft & Verify use) that shares every tensor with
    /// `self` (no copy) and its tokenizer. `layers` is clamped to
    /// `1..=num_hidden_layers`.
    pub fn first_layers(&self, layers: usize) -> Transformer {
        let k = layers.clamp(1, self.blocks.len().max(1));
        let mut cfg = self.cfg.clone();
        cfg.num_hidden_layers = k;
        Transformer {
            cfg,
            device: self.device.clone(),
            dtype: self.dtype,
            embed: self.embed.clone(),
            blocks: self.blocks[..k.min(self.blocks.len())].to_vec(),
            norm: self.norm.clone(),
            lm_head: self.lm_head.clone(),
            cos: self.cos.clone(),
            sin: self.sin.clone(),
            weights: Weights::new(),
        }
    }

    /// Whether any weight matrix is block-quantised (such a model cannot
    /// be trained or saved as safetensors).
    pub fn is_quantized(&self) -> bool {
        matches!(self.lm_head, Proj::Quant(_))
            || self.blocks.iter().any(|b| matches!(b.q, Proj::Quant(_)))
    }

    /// The model's configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }
    /// The device the weights live on.
    pub fn device(&self) -> &Device {
        &self.device
    }
    /// The compute type of the weights and activations.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The model's tensors by Hugging Face name.
    pub fn weights(&self) -> &Weights {
        &self.weights
    }
    /// Number of token ids the model scores.
    pub fn vocab_size(&self) -> usize {
        self.cfg.vocab_size
    }

    /// Checks token ids against the vocabulary and positions against the
    /// RoPE window.
    pub fn check_input(&self, tokens: &[TokenId], max_position: usize) -> Result<(), ModelError> {
        if let Some(&token) = tokens.iter().find(|&&t| t as usize >= self.cfg.vocab_size) {
            return Err(ModelError::TokenOutOfRange {
                token,
                vocab_size: self.cfg.vocab_size,
            });
        }
        if max_position >= self.cfg.max_position_embeddings {
            return Err(ModelError::ContextOverflow {
                len: max_position + 1,
                max: self.cfg.max_position_embeddings,
            });
        }
        Ok(())
    }

    /// One forward pass of `tokens` at `positions` over `past`, under `mask`
    /// (`tokens.len()` rows × `past.len() + tokens.len()` columns). Callers
    /// validate ids and positions with [`check_input`](Self::check_input).
    pub fn forward(
        &self,
        tokens: &[TokenId],
        positions: &[usize],
        past: &KvCache,
        mask: &AttnMask,
        rows: LogitRows,
    ) -> candle_core::Result<ForwardOut> {
        let n = tokens.len();
        if positions.len() != n || mask.rows() != n || mask.cols() != past.len() + n {
            candle_core::bail!(
                "forward: {n} tokens, {} positions, mask {}x{}, past {}",
                positions.len(),
                mask.rows(),
                mask.cols(),
                past.len()
            );
        }
        let ids = Tensor::from_vec(tokens.to_vec(), (1, n), &self.device)?;
        let pos = Tensor::from_vec(
            positions.iter().map(|&p| p as u32).collect::<Vec<_>>(),
            n,
            &self.device,
        )?;
        let cos = self.cos.index_select(&pos, 0)?;
        let sin = self.sin.index_select(&pos, 0)?;
        let mask_t = if mask.is_full() {
            None
        } else {
            Some(mask.to_tensor(self.dtype, &self.device)?)
        };
        let mut x = self.embed.embedding(&ids.flatten_all()?)?.unsqueeze(0)?;
        let mut kv = KvCache {
            layers: Vec::with_capacity(self.blocks.len()),
        };
        for (l, b) in self.blocks.iter().enumerate() {
            let (y, lkv) = self.block(
                b,
                &x,
                &cos,
                &sin,
                past.layers.get(l),
                mask_t.as_ref(),
                false,
            )?;
            x = y;
            kv.layers.push(lkv);
        }
        let idx: Option<Vec<usize>> = match rows {
            LogitRows::None => return Ok(ForwardOut { logits: None, kv }),
            LogitRows::All => None,
            LogitRows::Last => Some(vec![n.saturating_sub(1)]),
            LogitRows::Rows(r) => Some(r),
        };
        let h = x.squeeze(0)?;
        let h = match idx {
            None => h,
            Some(r) => {
                let ix = Tensor::from_vec(
                    r.iter().map(|&i| i as u32).collect::<Vec<_>>(),
                    r.len(),
                    &self.device,
                )?;
                h.index_select(&ix, 0)?
            }
        };
        let h =
            candle_nn::ops::rms_norm(&h.contiguous()?, &self.norm, self.cfg.rms_norm_eps as f32)?;
        let logits = self.lm_head.forward(&h)?.to_dtype(DType::F32)?;
        Ok(ForwardOut {
            logits: Some(logits),
            kv,
        })
    }

    /// Training forward: `tokens` `(B, T)` u32 at positions `0..T` under an
    /// additive mask `(T, T)`, with differentiable ops throughout. Returns
    /// logits `(B, T, vocab)`.
    pub fn forward_train(&self, tokens: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (b, t) = tokens.dims2()?;
        let cos = self.cos.narrow(0, 0, t)?;
        let sin = self.sin.narrow(0, 0, t)?;
        let mut x =
            self.embed
                .embedding(&tokens.flatten_all()?)?
                .reshape((b, t, self.cfg.hidden_size))?;
        for blk in &self.blocks {
            x = self.block(blk, &x, &cos, &sin, None, Some(mask), true)?.0;
        }
        let h = candle_nn::ops::rms_norm_slow(&x, &self.norm, self.cfg.rms_norm_eps as f32)?;
        match &self.lm_head {
            Proj::Dense(l) => h.broadcast_matmul(&l.weight().t()?),
            Proj::Quant(_) => candle_core::bail!("a quantised model cannot be trained"),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn block(
        &self,
        b: &Block,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        past: Option<&LayerKv>,
        mask: Option<&Tensor>,
        train: bool,
    ) -> candle_core::Result<(Tensor, LayerKv)> {
        let eps = self.cfg.rms_norm_eps as f32;
        let norm = |x: &Tensor, w: &Tensor| {
            if train {
                candle_nn::ops::rms_norm_slow(x, w, eps)
            } else {
                candle_nn::ops::rms_norm(&x.contiguous()?, w, eps)
            }
        };
        let (bsz, n, _) = x.dims3()?;
        let (hq, hkv, hd) = (
            self.cfg.num_attention_heads,
            self.cfg.kv_heads(),
            self.cfg.head_dim(),
        );
        let rep = hq / hkv;
        let h = norm(x, &b.ln1)?;
        let interleaved = self.cfg.rope_interleaved;
        let rope = |t: Tensor| match (train, interleaved) {
            (true, false) => candle_nn::rotary_emb::rope_slow(&t, cos, sin),
            (false, false) => candle_nn::rotary_emb::rope(&t, cos, sin),
            (true, true) => candle_nn::rotary_emb::rope_i_slow(&t, cos, sin),
            (false, true) => candle_nn::rotary_emb::rope_i(&t, cos, sin),
        };
        let q =
            b.q.forward(&h)?
                .reshape((bsz, n, hq, hd))?
                .transpose(1, 2)?
                .contiguous()?;
        let q = (rope(q)? * (1.0 / (hd as f64).sqrt()))?;
        let k =
            b.k.forward(&h)?
                .reshape((bsz, n, hkv, hd))?
                .transpose(1, 2)?
                .contiguous()?;
        let k = rope(k)?;
        let v =
            b.v.forward(&h)?
                .reshape((bsz, n, hkv, hd))?
                .transpose(1, 2)?
                .contiguous()?;
        let all = match past {
            Some(p) if !p.is_empty() => LayerKv::cat(&[p, &LayerKv { k, v }])?,
            _ => LayerKv { k, v },
        };
        let tk = all.k.dim(2)?;
        // Grouped-query attention without copying K/V: query heads sharing a
        // KV head are stacked along the row axis.
        let q = q.reshape((bsz, hkv, rep * n, hd))?;
        let scores = q.matmul(&all.k.t()?)?;
        let scores = match mask {
            Some(m) => scores
                .reshape((bsz, hkv, rep, n, tk))?
                .broadcast_add(m)?
                .reshape((bsz, hkv, rep * n, tk))?,
            None => scores,
        };
        let probs = if train {
            candle_nn::ops::softmax(&scores, D::Minus1)?
        } else {
            candle_nn::ops::softmax_last_dim(&scores)?
        };
        let att = probs
            .matmul(&all.v)?
            .reshape((bsz, hq, n, hd))?
            .transpose(1, 2)?
            .reshape((bsz, n, hq * hd))?;
        let x = (x + b.o.forward(&att)?)?;
        let h = norm(&x, &b.ln2)?;
        let mlp = b
            .down
            .forward(&(candle_nn::ops::silu(&b.gate.forward(&h)?)? * b.up.forward(&h)?)?)?;
        Ok(((x + mlp)?, all))
    }
}

fn rope_tables(
    cfg: &ModelConfig,
    dtype: DType,
    device: &Device,
) -> candle_core::Result<(Tensor, Tensor)> {
    let hd = cfg.head_dim();
    let inv: Vec<f32> = (0..hd / 2)
        .map(|i| (1.0 / cfg.rope_theta.powf(2.0 * i as f64 / hd as f64)) as f32)
        .collect();
    let inv = Tensor::from_vec(inv, (1, hd / 2), device)?;
    let t = Tensor::arange(0u32, cfg.max_position_embeddings as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((cfg.max_position_embeddings, 1))?;
    let f = t.broadcast_mul(&inv)?;
    Ok((f.cos()?.to_dtype(dtype)?, f.sin()?.to_dtype(dtype)?))
}

/// Logits tensor `(rows, vocab)` → ndarray.
pub fn to_array(t: &Tensor) -> Result<ndarray::Array2<f32>, ModelError> {
    let (r, v) = t.dims2().map_err(crate::backend)?;
    let data = t
        .to_dtype(DType::F32)
        .and_then(|t| t.flatten_all()?.to_vec1::<f32>())
        .map_err(crate::backend)?;
    ndarray::Array2::from_shape_vec((r, v), data).map_err(|e| ModelError::Backend(e.to_string()))
}
