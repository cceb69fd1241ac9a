//! Model configuration: the Hugging Face `config.json` of a Llama/Qwen2
//! decoder (the fields this runtime reads) plus a `zapspec` section for the
//! masked-diffusion variant. A real Qwen2/Llama `config.json` parses as is.

use serde::{Deserialize, Serialize};
use zapspec_core::{ModelError, TokenId};

/// Largest `max_position_embeddings` a configuration may declare (2^20
/// positions); the RoPE tables are allocated from it.
pub const MAX_POSITION_EMBEDDINGS: usize = 1 << 20;
/// Largest `max_position_embeddings × head_dim / 2` (entries of each RoPE
/// table: 2^26, 256 MiB of `f32`).
pub const MAX_ROPE_TABLE: usize = 1 << 26;
/// Largest `num_hidden_layers`.
pub const MAX_LAYERS: usize = 1024;
/// Largest `hidden_size`, `intermediate_size` and head dimension.
pub const MAX_DIM: usize = 1 << 17;
/// Largest `num_attention_heads` / `num_key_value_heads`.
pub const MAX_HEADS: usize = 4096;
/// Largest `vocab_size` (2^22 tokens).
pub const MAX_VOCAB_SIZE: usize = 1 << 22;

/// Which model a checkpoint holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// Decoder-only autoregressive LM (causal attention).
    #[default]
    Causal,
    /// Masked diffusion LM (LLaDA-style; bidirectional or blockwise-causal).
    Diffusion,
}

/// Attention pattern of a diffusion model over the true sequence
/// (Spiffy §4.3, Fig. 3 and Appendix A.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum DiffusionAttention {
    /// Every position attends to every position (LLaDA, Dream).
    #[default]
    Bidirectional,
    /// Aligned blocks of `block_size` positions; a block attends to itself
    /// and to earlier blocks (SDAR). Cached prefixes are exact.
    BlockCausal,
}

/// The `zapspec` section of `config.json` (absent in third-party checkpoints:
/// they are causal LMs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ZapspecExtras {
    /// Causal LM or masked diffusion LM.
    #[serde(default)]
    pub kind: ModelKind,
    /// The mask token of a diffusion model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask_token_id: Option<TokenId>,
    /// The attention pattern of a diffusion model.
    #[serde(default)]
    pub attention: DiffusionAttention,
    /// Block length of the blockwise-causal attention (and the default
    /// decoding block length).
    #[serde(default = "default_block_size")]
    pub block_size: usize,
}

fn default_block_size() -> usize {
    16
}
fn default_model_type() -> String {
    "llama".into()
}
fn default_eps() -> f64 {
    1e-6
}
fn default_theta() -> f64 {
    10_000.0
}
fn default_max_pos() -> usize {
    4096
}
fn default_act() -> String {
    "silu".into()
}

/// A decoder of the Llama/Qwen2 family: RMSNorm, RoPE, grouped-query
/// attention, SwiGLU MLP, optional QKV bias (Qwen2), optional tied
/// embeddings. Field names are those of Hugging Face `config.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// HF model class names (e.g. `Qwen2ForCausalLM`); informational.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub architectures: Vec<String>,
    /// `llama` or `qwen2` (decides the default of [`Self::attention_bias`]).
    #[serde(default = "default_model_type")]
    pub model_type: String,
    /// Number of token ids (rows of the embedding and of the LM head).
    pub vocab_size: usize,
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// Width of the SwiGLU MLP's hidden layer.
    pub intermediate_size: usize,
    /// Number of decoder layers.
    pub num_hidden_layers: usize,
    /// Number of query heads.
    pub num_attention_heads: usize,
    /// Number of key/value heads (grouped-query attention); `None`: as many
    /// as query heads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_key_value_heads: Option<usize>,
    /// Per-head dimension; `None`: `hidden_size / num_attention_heads`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_dim: Option<usize>,
    /// Epsilon of every RMSNorm.
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    /// RoPE base frequency θ.
    #[serde(default = "default_theta")]
    pub rope_theta: f64,
    /// Longest context (tokens) the rotary tables cover.
    #[serde(default = "default_max_pos")]
    pub max_position_embeddings: usize,
    /// Whether the LM head shares the embedding matrix.
    #[serde(default)]
    pub tie_word_embeddings: bool,
    /// Llama's switch for q/k/v/o biases; Qwen2 has q/k/v biases and no
    /// field, so `None` means "Qwen2: yes, otherwise: no".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention_bias: Option<bool>,
    /// MLP activation; only `silu` (SwiGLU) is supported.
    #[serde(default = "default_act")]
    pub hidden_act: String,
    /// Rotary embedding on adjacent pairs `(x₀,x₁), (x₂,x₃), …` (GGUF /
    /// Meta layout, llama.cpp's `LLAMA_ROPE_TYPE_NORM`) instead of halves
    /// `(xᵢ, x_{i+d/2})` (Hugging Face layout). Not a Hugging Face field.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rope_interleaved: bool,
    /// HF RoPE scaling section; kept for round trips, refused by
    /// [`Self::validate`] unless absent or `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope_scaling: Option<serde_json::Value>,
    /// BOS token id as written (an integer or a list); read with [`Self::bos`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bos_token_id: Option<serde_json::Value>,
    /// EOS token id as written (an integer or a list); read with [`Self::eos`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eos_token_id: Option<serde_json::Value>,
    /// zapspec's own section (model kind, mask token, diffusion attention);
    /// `None` for third-party causal checkpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zapspec: Option<ZapspecExtras>,
}

impl Default for ModelConfig {
    /// A tiny Llama-shaped causal config (tests, smoke runs).
    fn default() -> Self {
        ModelConfig {
            architectures: vec!["LlamaForCausalLM".into()],
            model_type: "llama".into(),
            vocab_size: 64,
            hidden_size: 32,
            intermediate_size: 64,
            num_hidden_layers: 2,
            num_attention_heads: 4,
            num_key_value_heads: Some(2),
            head_dim: None,
            rms_norm_eps: 1e-6,
            rope_theta: 10_000.0,
            max_position_embeddings: 512,
            tie_word_embeddings: false,
            attention_bias: None,
            hidden_act: "silu".into(),
            rope_interleaved: false,
            rope_scaling: None,
            bos_token_id: None,
            eos_token_id: None,
            zapspec: None,
        }
    }
}

impl ModelConfig {
    /// The shape of Qwen2.5-1.5B (hidden 1536, 28 layers, 12 heads, 2 KV
    /// heads, intermediate 8960, vocab 151936, tied embeddings, QKV bias) —
    /// the model of Copy-as-Decode's kernel study (Fig. 3).
    pub fn qwen2_5_1_5b() -> Self {
        ModelConfig {
            architectures: vec!["Qwen2ForCausalLM".into()],
            model_type: "qwen2".into(),
            vocab_size: 151_936,
            hidden_size: 1536,
            intermediate_size: 8960,
            num_hidden_layers: 28,
            num_attention_heads: 12,
            num_key_value_heads: Some(2),
            head_dim: None,
            rms_norm_eps: 1e-6,
            rope_theta: 1_000_000.0,
            max_position_embeddings: 32_768,
            tie_word_embeddings: true,
            attention_bias: None,
            hidden_act: "silu".into(),
            rope_interleaved: false,
            rope_scaling: None,
            bos_token_id: Some(151_643.into()),
            eos_token_id: Some(151_643.into()),
            zapspec: None,
        }
    }

    /// A byte-level causal LM: tokens 0..=255 are bytes, 256 is EOS and
    /// document separator (the layout of `TokenVocab::bytes()`), also used as
    /// BOS.
    pub fn byte_causal(hidden: usize, layers: usize, heads: usize, context: usize) -> Self {
        ModelConfig {
            architectures: vec!["LlamaForCausalLM".into()],
            model_type: "llama".into(),
            vocab_size: 257,
            hidden_size: hidden,
            intermediate_size: hidden * 8 / 3 / 16 * 16,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            num_key_value_heads: Some(heads),
            tie_word_embeddings: true,
            max_position_embeddings: context,
            bos_token_id: Some(256.into()),
            eos_token_id: Some(256.into()),
            ..Default::default()
        }
    }

    /// A byte-level masked diffusion LM: bytes, 256 = EOS/separator,
    /// 257 = mask.
    pub fn byte_diffusion(
        hidden: usize,
        layers: usize,
        heads: usize,
        context: usize,
        attention: DiffusionAttention,
        block_size: usize,
    ) -> Self {
        ModelConfig {
            architectures: vec!["ZapspecMaskedDiffusionLM".into()],
            vocab_size: 258,
            zapspec: Some(ZapspecExtras {
                kind: ModelKind::Diffusion,
                mask_token_id: Some(257),
                attention,
                block_size,
            }),
            bos_token_id: None,
            ..Self::byte_causal(hidden, layers, heads, context)
        }
    }

    /// A tiny diffusion config for tests.
    pub fn tiny_diffusion(attention: DiffusionAttention, block_size: usize) -> Self {
        ModelConfig {
            vocab_size: 40,
            zapspec: Some(ZapspecExtras {
                kind: ModelKind::Diffusion,
                mask_token_id: Some(39),
                attention,
                block_size,
            }),
            ..Default::default()
        }
    }

    /// The model kind: [`ModelKind::Causal`] unless the `zapspec` section
    /// says otherwise.
    pub fn kind(&self) -> ModelKind {
        self.zapspec.as_ref().map_or(ModelKind::Causal, |z| z.kind)
    }
    /// Number of key/value heads (defaults to the number of query heads).
    pub fn kv_heads(&self) -> usize {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }
    /// Per-head dimension (defaults to `hidden_size / num_attention_heads`).
    pub fn head_dim(&self) -> usize {
        self.head_dim
            .unwrap_or(self.hidden_size / self.num_attention_heads.max(1))
    }
    /// Whether q/k/v projections carry a bias.
    pub fn qkv_bias(&self) -> bool {
        self.attention_bias.unwrap_or(self.model_type == "qwen2")
    }
    /// Whether o_proj carries a bias (Llama's `attention_bias`, never Qwen2).
    pub fn o_bias(&self) -> bool {
        self.attention_bias.unwrap_or(false)
    }
    /// The BOS token id (the first one if a list).
    pub fn bos(&self) -> Option<TokenId> {
        token_field(self.bos_token_id.as_ref())
    }
    /// The EOS token id (the first one if a list).
    pub fn eos(&self) -> Option<TokenId> {
        token_field(self.eos_token_id.as_ref())
    }
    /// The mask token of a diffusion model (`zapspec.mask_token_id`).
    pub fn mask_token(&self) -> Option<TokenId> {
        self.zapspec.as_ref().and_then(|z| z.mask_token_id)
    }

    /// Number of parameters (tied head counted once).
    pub fn num_params(&self) -> usize {
        expected_tensors(self)
            .iter()
            .map(|(_, s)| s.iter().product::<usize>())
            .sum()
    }

    /// Checks the configuration; `path` names it in errors.
    pub fn validate(&self, path: &str) -> Result<(), ModelError> {
        let bad = |reason: String| {
            Err(ModelError::Checkpoint {
                path: path.to_string(),
                reason,
            })
        };
        for (name, v) in [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("num_key_value_heads", self.kv_heads()),
            ("max_position_embeddings", self.max_position_embeddings),
        ] {
            if v == 0 {
                return bad(format!("config.json: `{name}` must be positive"));
            }
        }
        // Documented maxima: tables and vectors are allocated from these
        // before any weight is read.
        for (name, v, max) in [
            ("vocab_size", self.vocab_size, MAX_VOCAB_SIZE),
            ("hidden_size", self.hidden_size, MAX_DIM),
            ("intermediate_size", self.intermediate_size, MAX_DIM),
            ("head_dim", self.head_dim.unwrap_or(0), MAX_DIM),
            ("num_hidden_layers", self.num_hidden_layers, MAX_LAYERS),
            ("num_attention_heads", self.num_attention_heads, MAX_HEADS),
            ("num_key_value_heads", self.kv_heads(), MAX_HEADS),
            (
                "max_position_embeddings",
                self.max_position_embeddings,
                MAX_POSITION_EMBEDDINGS,
            ),
        ] {
            if v > max {
                return bad(format!(
                    "config.json: `{name}` {v} is above the supported maximum {max}"
                ));
            }
        }
        if self.head_dim.is_none() && self.hidden_size % self.num_attention_heads != 0 {
            return bad(format!(
                "config.json: hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if self.head_dim() == 0 || self.head_dim() % 2 != 0 {
            return bad(format!(
                "config.json: head dimension {} must be even and positive (RoPE)",
                self.head_dim()
            ));
        }
        let rope = self.max_position_embeddings * (self.head_dim() / 2);
        if rope > MAX_ROPE_TABLE {
            return bad(format!(
                "config.json: max_position_embeddings × head_dim / 2 = {rope} is above the supported maximum {MAX_ROPE_TABLE} (RoPE tables)"
            ));
        }
        if self.num_attention_heads % self.kv_heads() != 0 {
            return bad(format!(
                "config.json: num_attention_heads {} is not a multiple of num_key_value_heads {}",
                self.num_attention_heads,
                self.kv_heads()
            ));
        }
        if self.hidden_act != "silu" {
            return bad(format!(
                "config.json: hidden_act `{}` is not supported (only silu / SwiGLU)",
                self.hidden_act
            ));
        }
        if self.rope_scaling.as_ref().is_some_and(|v| !v.is_null()) {
            return bad("config.json: `rope_scaling` is not supported".into());
        }
        if !(self.rms_norm_eps > 0.0 && self.rope_theta > 0.0) {
            return bad("config.json: rms_norm_eps and rope_theta must be positive".into());
        }
        for (name, t) in [
            ("bos_token_id", self.bos()),
            ("mask_token_id", self.mask_token()),
        ] {
            if let Some(t) = t {
                if t as usize >= self.vocab_size {
                    return bad(format!(
                        "config.json: {name} {t} is outside the vocabulary of {}",
                        self.vocab_size
                    ));
                }
            }
        }
        if let Some(z) = &self.zapspec {
            if z.kind == ModelKind::Diffusion && z.mask_token_id.is_none() {
                return bad("config.json: a diffusion model needs zapspec.mask_token_id".into());
            }
            if z.block_size == 0 {
                return bad("config.json: zapspec.block_size must be positive".into());
            }
        }
        Ok(())
    }

    /// Parses `config.json` text; `path` names it in errors.
    pub fn from_json(text: &str, path: &str) -> Result<Self, ModelError> {
        let cfg: ModelConfig = serde_json::from_str(text).map_err(|e| ModelError::Checkpoint {
            path: path.to_string(),
            reason: format!("config.json is not a valid model config: {e}"),
        })?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    /// Pretty-printed `config.json` text (parses back with
    /// [`Self::from_json`]).
    pub fn to_json(&self) -> String {
        // Infallible: the struct holds only JSON-representable values.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// `bos_token_id` / `eos_token_id` may be an integer, a list (first taken) or
/// null.
fn token_field(v: Option<&serde_json::Value>) -> Option<TokenId> {
    match v? {
        serde_json::Value::Number(n) => n.as_u64().and_then(|x| TokenId::try_from(x).ok()),
        serde_json::Value::Array(a) => token_field(a.first()),
        _ => None,
    }
}

/// Names and shapes of every tensor a config needs, in a fixed order.
pub fn expected_tensors(cfg: &ModelConfig) -> Vec<(String, Vec<usize>)> {
    let (d, i, v) = (cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size);
    let (hq, hkv) = (
        cfg.num_attention_heads * cfg.head_dim(),
        cfg.kv_heads() * cfg.head_dim(),
    );
    let mut out = vec![("model.embed_tokens.weight".to_string(), vec![v, d])];
    for l in 0..cfg.num_hidden_layers {
        let p = format!("model.layers.{l}");
        out.push((format!("{p}.input_layernorm.weight"), vec![d]));
        out.push((format!("{p}.self_attn.q_proj.weight"), vec![hq, d]));
        out.push((format!("{p}.self_attn.k_proj.weight"), vec![hkv, d]));
        out.push((format!("{p}.self_attn.v_proj.weight"), vec![hkv, d]));
        if cfg.qkv_bias() {
            out.push((format!("{p}.self_attn.q_proj.bias"), vec![hq]));
            out.push((format!("{p}.self_attn.k_proj.bias"), vec![hkv]));
            out.push((format!("{p}.self_attn.v_proj.bias"), vec![hkv]));
        }
        out.push((format!("{p}.self_attn.o_proj.weight"), vec![d, hq]));
        if cfg.o_bias() {
            out.push((format!("{p}.self_attn.o_proj.bias"), vec![d]));
        }
        out.push((format!("{p}.post_attention_layernorm.weight"), vec![d]));
        out.push((format!("{p}.mlp.gate_proj.weight"), vec![i, d]));
        out.push((format!("{p}.mlp.up_proj.weight"), vec![i, d]));
        out.push((format!("{p}.mlp.down_proj.weight"), vec![d, i]));
    }
    out.push(("model.norm.weight".to_string(), vec![d]));
    if !cfg.tie_word_embeddings {
        out.push(("lm_head.weight".to_string(), vec![v, d]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_real_qwen2_config() {
        // The config.json of Qwen2.5-1.5B as published on the Hub.
        let text = r#"{
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu",
  "hidden_size": 1536, "initializer_range": 0.02, "intermediate_size": 8960,
  "max_position_embeddings": 131072, "max_window_layers": 28, "model_type": "qwen2",
  "num_attention_heads": 12, "num_hidden_layers": 28, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.40.1",
  "use_cache": true, "use_mrope": false, "use_sliding_window": false, "vocab_size": 151936
}"#;
        let c = ModelConfig::from_json(text, "qwen").unwrap();
        assert!(c.qkv_bias() && !c.o_bias());
        assert_eq!(c.head_dim(), 128);
        assert_eq!(c.kv_heads(), 2);
        assert_eq!(c.bos(), Some(151_643));
        let q = ModelConfig::qwen2_5_1_5b();
        assert_eq!(
            (q.hidden_size, q.num_hidden_layers, q.vocab_size),
            (c.hidden_size, 28, c.vocab_size)
        );
        // ≈1.54 B parameters with the tied head.
        let p = q.num_params() as f64 / 1e9;
        assert!((1.50..1.60).contains(&p), "{p}");
    }

    #[test]
    fn bad_configs_are_reported() {
        let c = ModelConfig {
            num_key_value_heads: Some(3),
            ..ModelConfig::default()
        };
        assert!(matches!(
            c.validate("x"),
            Err(ModelError::Checkpoint { .. })
        ));
        let e = ModelConfig::from_json("{\"vocab_size\": 3}", "dir")
            .unwrap_err()
            .to_string();
        assert!(e.contains("dir") && e.contains("hidden_size"), "{e}");
        let e = ModelConfig::from_json("not json", "dir")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a valid model config"), "{e}");
        let mut d = ModelConfig::tiny_diffusion(DiffusionAttention::Bidirectional, 4);
        d.zapspec.as_mut().unwrap().mask_token_id = Some(40);
        assert!(d
            .validate("x")
            .unwrap_err()
            .to_string()
            .contains("mask_token_id"));
        let round = ModelConfig::from_json(
            &ModelConfig::byte_diffusion(64, 2, 4, 128, DiffusionAttention::BlockCausal, 8)
                .to_json(),
            "r",
        )
        .unwrap();
        assert_eq!(round.kind(), ModelKind::Diffusion);
        assert_eq!(
            round.zapspec.unwrap().attention,
            DiffusionAttention::BlockCausal
        );
    }
}
