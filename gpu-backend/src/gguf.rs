//! Llama-architecture checkpoints in a single GGUF file (llama.cpp's
//! format), e.g. SmolLM2-135M-Instruct `Q4_1` (`scripts/fetch-smollm2.sh`).
//!
//! The model is built from the file's metadata alone (`llama.*` keys; no
//! `config.json`), every tensor is checked by name and shape first, and a
//! file that is missing, truncated, not GGUF or of another architecture is
//! a [`ModelError::Checkpoint`] naming the file, never a panic.
//!
//! Two ways to hold the weights ([`GgufWeights`]):
//! - [`GgufWeights::Quantized`] (the default) keeps every matrix in its
//!   GGUF block format and runs the native CPU forward
//!   ([`crate::native`]): activations quantised to 8 bits per block as
//!   llama.cpp does, SIMD kernels chosen at run time, a paged KV cache;
//! - [`GgufWeights::Dequantized`] expands every tensor to f32 at load
//!   (4 bytes per weight) and runs the dense candle path of the
//!   safetensors models, so the model can also run on CUDA, be saved or
//!   fine-tuned; it is the exact reference of the quantised path.
//!
//! GGUF stores the query and key projections of a Llama model permuted for
//! rotary embedding on adjacent pairs (llama.cpp's `convert_hf_to_gguf.py`
//! undoes the Hugging Face permutation), so the config gets
//! [`ModelConfig::rope_interleaved`] set instead of the rows being permuted
//! back: quantised rows could not be.
//!
//! Costs: reading the metadata is O(keys + tensors); the quantised load
//! reads each tensor's bytes once (≈ the file size in memory; the query,
//! key and value rows are stacked into one matrix, as are gate and up);
//! the dequantised load holds 4 bytes per parameter.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use candle_core::quantized::{gguf_file, QTensor};
use candle_core::{DType, Device, Tensor};
use candle_nn::Linear;
use zapspec_core::ModelError;

use crate::causal::CausalLm;
use crate::config::ModelConfig;
use crate::native::{NativeLayer, NativeModel, NativeOptions};
use crate::transformer::{Block, Parts, Proj, Transformer};
use crate::weights::Weights;
use zapspec_kernels::{QMatrix, QType, BLOCK};

/// How the GGUF weights are held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GgufWeights {
    /// Block-quantised matrices as the file stores them, run by the native
    /// CPU forward ([`crate::native`]: `zapspec-kernels`, SIMD chosen at
    /// run time, paged KV cache, a thread pool): the fast path and the
    /// default. CPU only.
    #[default]
    Quantized,
    /// Every tensor dequantised to f32 at load and run by candle's dense
    /// path (4 bytes per weight): the exact reference, the path that can
    /// run on CUDA, be fine-tuned or saved as safetensors.
    Dequantized,
}

impl std::str::FromStr for GgufWeights {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, ModelError> {
        match s {
            "quantized" | "q" => Ok(GgufWeights::Quantized),
            "dequantized" | "f32" => Ok(GgufWeights::Dequantized),
            _ => Err(ModelError::Backend(format!(
                "unknown GGUF weight mode `{s}` (quantized, dequantized)"
            ))),
        }
    }
}

/// Options of [`load_gguf`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GgufOptions {
    /// How the weights are held.
    pub weights: GgufWeights,
    /// Caps the context window (and the RoPE tables) below the file's
    /// `llama.context_length`; `None`: the file's value.
    pub max_context: Option<usize>,
    /// Threads and instruction set of the native forward
    /// ([`GgufWeights::Quantized`]).
    pub native: NativeOptions,
}

impl Default for GgufOptions {
    fn default() -> Self {
        GgufOptions {
            weights: GgufWeights::default(),
            max_context: Some(8192),
            native: NativeOptions::default(),
        }
    }
}

fn bad(path: &str, reason: impl Into<String>) -> ModelError {
    ModelError::Checkpoint {
        path: path.to_string(),
        reason: reason.into(),
    }
}

/// Opens and parses a GGUF file's header (metadata and tensor table).
pub fn read_gguf(path: &Path) -> Result<(gguf_file::Content, BufReader<File>), ModelError> {
    let p = path.display().to_string();
    let file = File::open(path).map_err(|e| bad(&p, format!("cannot open: {e}")))?;
    let len = file
        .metadata()
        .map_err(|e| bad(&p, format!("cannot stat: {e}")))?
        .len();
    let mut reader = BufReader::new(file);
    // Every count and length of the header checked against the file's
    // size before candle's reader allocates from it.
    let header = zapspec_gguf::check_gguf_header(&mut reader, len)
        .map_err(|e| bad(&p, format!("not a readable GGUF file: {e}")))?;
    if let Some((name, ..)) = header.tensors.iter().find(|t| t.1.is_none()) {
        return Err(bad(
            &p,
            format!("tensor `{name}` has more elements than fit in 64 bits"),
        ));
    }
    reader
        .seek(SeekFrom::Start(0))
        .map_err(|e| bad(&p, format!("cannot seek: {e}")))?;
    let content = gguf_file::Content::read(&mut reader)
        .map_err(|e| bad(&p, format!("not a readable GGUF file: {e}")))?;
    // Tensor data: each tensor's bytes must lie inside the file (candle
    // allocates a buffer of the declared size when a tensor is read).
    for (name, info) in &content.tensor_infos {
        let elems = info.shape.elem_count() as u64;
        let bs = info.ggml_dtype.block_size() as u64;
        let size = (elems / bs.max(1)).checked_mul(info.ggml_dtype.type_size() as u64);
        let end = size
            .and_then(|s| s.checked_add(info.offset))
            .and_then(|s| s.checked_add(content.tensor_data_offset));
        if end.is_none_or(|e| e > len) || elems % bs.max(1) != 0 {
            return Err(bad(
                &p,
                format!("tensor `{name}` ({elems} elements at offset {}) does not fit in the file of {len} bytes", info.offset),
            ));
        }
    }
    Ok((content, reader))
}

/// The decoder configuration a GGUF file's `llama.*` metadata describes.
/// Refuses other architectures and missing or out-of-range keys.
pub fn gguf_config(
    md: &HashMap<String, gguf_file::Value>,
    path: &str,
) -> Result<ModelConfig, ModelError> {
    let arch = md
        .get("general.architecture")
        .and_then(|v| v.to_string().ok())
        .ok_or_else(|| bad(path, "metadata key `general.architecture` is missing"))?;
    if arch != "llama" {
        return Err(bad(
            path,
            format!("architecture `{arch}` is not supported (only `llama`)"),
        ));
    }
    let num = |key: &str| -> Result<u64, ModelError> {
        use gguf_file::Value as V;
        let v = md
            .get(&format!("llama.{key}"))
            .ok_or_else(|| bad(path, format!("metadata key `llama.{key}` is missing")))?;
        match v {
            V::U8(x) => Ok(*x as u64),
            V::U16(x) => Ok(*x as u64),
            V::U32(x) => Ok(*x as u64),
            V::U64(x) => Ok(*x),
            V::I32(x) if *x >= 0 => Ok(*x as u64),
            V::I64(x) if *x >= 0 => Ok(*x as u64),
            _ => Err(bad(path, format!("`llama.{key}` is not a count: {v:?}"))),
        }
    };
    let float = |key: &str, default: f64| -> Result<f64, ModelError> {
        match md.get(&format!("llama.{key}")) {
            None => Ok(default),
            Some(gguf_file::Value::F32(x)) => Ok(*x as f64),
            Some(gguf_file::Value::F64(x)) => Ok(*x),
            Some(v) => Err(bad(path, format!("`llama.{key}` is not a float: {v:?}"))),
        }
    };
    let small = |key: &str, x: u64| -> Result<usize, ModelError> {
        // Far above any real model; stops absurd values from sizing buffers.
        if x == 0 || x > 1 << 24 {
            return Err(bad(path, format!("`llama.{key}` = {x} is out of range")));
        }
        Ok(x as usize)
    };
    let heads = small("attention.head_count", num("attention.head_count")?)?;
    let kv_heads = match md.get("llama.attention.head_count_kv") {
        Some(_) => small("attention.head_count_kv", num("attention.head_count_kv")?)?,
        None => heads,
    };
    let hidden = small("embedding_length", num("embedding_length")?)?;
    let vocab = match md.get("llama.vocab_size") {
        Some(_) => num("vocab_size")?,
        None => md
            .get("tokenizer.ggml.tokens")
            .and_then(|v| v.to_vec().ok())
            .map_or(0, |a| a.len() as u64),
    };
    let head_dim = match md.get("llama.rope.dimension_count") {
        Some(_) => Some(small("rope.dimension_count", num("rope.dimension_count")?)?),
        None => None,
    };
    let token = |key: &str| {
        md.get(key)
            .and_then(|v| v.to_u32().ok())
            .map(serde_json::Value::from)
    };
    let cfg = ModelConfig {
        architectures: vec!["LlamaForCausalLM".into()],
        model_type: "llama".into(),
        vocab_size: small("vocab_size", vocab)?,
        hidden_size: hidden,
        intermediate_size: small("feed_forward_length", num("feed_forward_length")?)?,
        num_hidden_layers: small("block_count", num("block_count")?)?,
        num_attention_heads: heads,
        num_key_value_heads: Some(kv_heads),
        head_dim: head_dim.filter(|&d| d != hidden / heads),
        rms_norm_eps: float("attention.layer_norm_rms_epsilon", 1e-5)?,
        rope_theta: float("rope.freq_base", 10_000.0)?,
        max_position_embeddings: small("context_length", num("context_length")?)?,
        tie_word_embeddings: false, // decided by the tensor table
        attention_bias: Some(false),
        hidden_act: "silu".into(),
        rope_interleaved: true,
        rope_scaling: None,
        bos_token_id: token("tokenizer.ggml.bos_token_id"),
        eos_token_id: token("tokenizer.ggml.eos_token_id"),
        zapspec: None,
    };
    cfg.validate(path)?;
    Ok(cfg)
}

/// GGUF tensor names of the Llama layout with their shapes `(rows, cols)`
/// as candle reads them.
fn expected(cfg: &ModelConfig) -> Vec<(String, Vec<usize>)> {
    let (d, i, v) = (cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size);
    let hq = cfg.num_attention_heads * cfg.head_dim();
    let hkv = cfg.kv_heads() * cfg.head_dim();
    let mut out = vec![
        ("token_embd.weight".to_string(), vec![v, d]),
        ("output_norm.weight".to_string(), vec![d]),
    ];
    for l in 0..cfg.num_hidden_layers {
        for (n, s) in [
            ("attn_norm", vec![d]),
            ("ffn_norm", vec![d]),
            ("attn_q", vec![hq, d]),
            ("attn_k", vec![hkv, d]),
            ("attn_v", vec![hkv, d]),
            ("attn_output", vec![d, hq]),
            ("ffn_gate", vec![i, d]),
            ("ffn_up", vec![i, d]),
            ("ffn_down", vec![d, i]),
        ] {
            out.push((format!("blk.{l}.{n}.weight"), s));
        }
    }
    out
}

/// Loads a Llama GGUF file as a [`CausalLm`]: config from the metadata,
/// tensors checked by name and shape, weights held as `opts.weights` says.
/// The file's BOS is not prepended (chat prompts carry their own control
/// tokens); use [`CausalLm::with_bos`] to change that.
pub fn load_gguf(path: &Path, device: &Device, opts: &GgufOptions) -> Result<CausalLm, ModelError> {
    let p = path.display().to_string();
    let (content, mut reader) = read_gguf(path)?;
    let mut cfg = gguf_config(&content.metadata, &p)?;
    if let Some(m) = opts.max_context {
        cfg.max_position_embeddings = cfg.max_position_embeddings.min(m.max(1));
    }
    cfg.tie_word_embeddings = !content.tensor_infos.contains_key("output.weight");
    let mut want = expected(&cfg);
    if !cfg.tie_word_embeddings {
        want.push((
            "output.weight".to_string(),
            vec![cfg.vocab_size, cfg.hidden_size],
        ));
    }
    for (name, shape) in &want {
        let info = content
            .tensor_infos
            .get(name)
            .ok_or_else(|| bad(&p, format!("tensor `{name}` is missing")))?;
        if info.shape.dims() != shape.as_slice() {
            return Err(bad(
                &p,
                format!(
                    "tensor `{name}` has shape {:?}, the metadata implies {shape:?}",
                    info.shape.dims()
                ),
            ));
        }
    }
    let file_len = reader
        .get_ref()
        .metadata()
        .map_err(|e| bad(&p, e.to_string()))?
        .len();
    for (name, _) in &want {
        let info = &content.tensor_infos[name];
        let elems = info.shape.elem_count();
        let bytes = elems / info.ggml_dtype.block_size() * info.ggml_dtype.type_size();
        let end = content.tensor_data_offset + info.offset + bytes as u64;
        if end > file_len {
            return Err(bad(
                &p,
                format!("tensor `{name}` ends at byte {end}, past the end of the file ({file_len} bytes): truncated?"),
            ));
        }
    }
    if opts.weights == GgufWeights::Quantized {
        if !device.is_cpu() {
            return Err(bad(
                &p,
                "the quantised GGUF path runs on the CPU; load with GgufWeights::Dequantized for a GPU",
            ));
        }
        let model = load_native(&content, &mut reader, cfg, &p, opts.native)?;
        return Ok(CausalLm::native(Arc::new(model)).with_bos(None));
    }
    let mut load = |name: &str| {
        content
            .tensor(&mut reader, name, device)
            .map_err(|e| bad(&p, format!("tensor `{name}`: {e}")))
    };
    let mut weights = Weights::new();
    let mut blocks = Vec::with_capacity(cfg.num_hidden_layers);
    for l in 0..cfg.num_hidden_layers {
        let g = |n: &str| format!("blk.{l}.{n}.weight");
        let h = |n: &str| format!("model.layers.{l}.{n}.weight");
        let mut proj = |gguf: &str, hf: &str| to_proj(load(&g(gguf))?, h(hf), &mut weights);
        let (q, k, v) = (
            proj("attn_q", "self_attn.q_proj")?,
            proj("attn_k", "self_attn.k_proj")?,
            proj("attn_v", "self_attn.v_proj")?,
        );
        let (o, gate, up, down) = (
            proj("attn_output", "self_attn.o_proj")?,
            proj("ffn_gate", "mlp.gate_proj")?,
            proj("ffn_up", "mlp.up_proj")?,
            proj("ffn_down", "mlp.down_proj")?,
        );
        let ln1 = keep_dense(&load(&g("attn_norm"))?, h("input_layernorm"), &mut weights)?;
        let ln2 = keep_dense(
            &load(&g("ffn_norm"))?,
            h("post_attention_layernorm"),
            &mut weights,
        )?;
        blocks.push(Block {
            ln1,
            ln2,
            q,
            k,
            v,
            o,
            gate,
            up,
            down,
        });
    }
    let embed_q = load("token_embd.weight")?;
    let embed = keep_dense(&embed_q, "model.embed_tokens.weight".into(), &mut weights)?;
    let norm = keep_dense(
        &load("output_norm.weight")?,
        "model.norm.weight".into(),
        &mut weights,
    )?;
    let lm_head = if !cfg.tie_word_embeddings {
        to_proj(
            load("output.weight")?,
            "lm_head.weight".into(),
            &mut weights,
        )?
    } else {
        Proj::Dense(Linear::new(embed.clone(), None))
    };
    let parts = Parts {
        embed,
        blocks,
        norm,
        lm_head,
    };
    let model = Transformer::from_parts(cfg, parts, weights, device)?;
    Ok(CausalLm::new(Arc::new(model)).with_bos(None))
}

/// A GGUF tensor dequantised to f32.
fn dequantize(q: &QTensor) -> Result<Tensor, ModelError> {
    q.dequantize(&q.device())
        .and_then(|t| t.to_dtype(DType::F32))
        .map_err(crate::backend)
}

/// Dequantises `q` and records it in `weights` under its Hugging Face name.
fn keep_dense(q: &QTensor, hf: String, weights: &mut Weights) -> Result<Tensor, ModelError> {
    let w = dequantize(q)?;
    weights.insert(hf, w.clone());
    Ok(w)
}

/// A weight matrix dequantised (and recorded in `weights` under its
/// Hugging Face name).
fn to_proj(q: QTensor, hf: String, weights: &mut Weights) -> Result<Proj, ModelError> {
    Ok(Proj::Dense(Linear::new(keep_dense(&q, hf, weights)?, None)))
}

/// A tensor as a block matrix: its own bytes when the kernels have its
/// type, else dequantised by candle and re-blocked to `Q8_0`.
fn read_qmatrix(
    content: &gguf_file::Content,
    reader: &mut BufReader<File>,
    name: &str,
    path: &str,
) -> Result<QMatrix, ModelError> {
    use candle_core::quantized::GgmlDType as G;
    let info = &content.tensor_infos[name];
    let dims = info.shape.dims();
    let (rows, cols) = match dims {
        [r, c] => (*r, *c),
        _ => {
            return Err(bad(
                path,
                format!("tensor `{name}` is not a matrix: {dims:?}"),
            ))
        }
    };
    let ty = match info.ggml_dtype {
        G::Q4_0 => Some(QType::Q4_0),
        G::Q4_1 => Some(QType::Q4_1),
        G::Q8_0 => Some(QType::Q8_0),
        _ => None,
    };
    match ty {
        Some(ty) if cols % BLOCK == 0 => {
            let bytes = rows * cols / BLOCK * ty.block_bytes();
            let mut data = vec![0u8; bytes];
            reader
                .seek(SeekFrom::Start(content.tensor_data_offset + info.offset))
                .and_then(|_| reader.read_exact(&mut data))
                .map_err(|e| bad(path, format!("tensor `{name}`: {e}")))?;
            QMatrix::new(ty, rows, cols, data)
                .map_err(|e| bad(path, format!("tensor `{name}`: {e}")))
        }
        _ => {
            let q = content
                .tensor(reader, name, &Device::Cpu)
                .map_err(|e| bad(path, format!("tensor `{name}`: {e}")))?;
            let x: Vec<f32> = dequantize(&q)?
                .flatten_all()
                .and_then(|t| t.to_vec1())
                .map_err(crate::backend)?;
            QMatrix::from_f32_q8_0(rows, cols, &x)
                .map_err(|e| bad(path, format!("tensor `{name}`: {e}")))
        }
    }
}

/// A 1-D f32 tensor (a norm weight).
fn read_vector(
    content: &gguf_file::Content,
    reader: &mut BufReader<File>,
    name: &str,
    path: &str,
) -> Result<Vec<f32>, ModelError> {
    let q = content
        .tensor(reader, name, &Device::Cpu)
        .map_err(|e| bad(path, format!("tensor `{name}`: {e}")))?;
    dequantize(&q)?
        .flatten_all()
        .and_then(|t| t.to_vec1())
        .map_err(crate::backend)
}

/// Matrices stacked by rows; re-blocked to `Q8_0` when their types differ.
fn stack(parts: &[QMatrix]) -> Result<QMatrix, ModelError> {
    let refs: Vec<&QMatrix> = parts.iter().collect();
    if let Some(m) = QMatrix::stack(&refs) {
        return Ok(m);
    }
    let cols = parts[0].cols();
    let rows: usize = parts.iter().map(QMatrix::rows).sum();
    let mut x = vec![0f32; rows * cols];
    let mut r0 = 0;
    for m in parts {
        for r in 0..m.rows() {
            m.dequantize_row(r, &mut x[(r0 + r) * cols..(r0 + r + 1) * cols]);
        }
        r0 += m.rows();
    }
    QMatrix::from_f32_q8_0(rows, cols, &x).map_err(|e| ModelError::Backend(e.to_string()))
}

/// The native model of a checked GGUF file.
fn load_native(
    content: &gguf_file::Content,
    reader: &mut BufReader<File>,
    cfg: ModelConfig,
    path: &str,
    opts: NativeOptions,
) -> Result<NativeModel, ModelError> {
    if cfg.hidden_size % BLOCK != 0 || cfg.intermediate_size % BLOCK != 0 {
        return Err(bad(
            path,
            format!(
                "hidden ({}) and feed-forward ({}) widths must be multiples of {BLOCK} for the quantised path",
                cfg.hidden_size, cfg.intermediate_size
            ),
        ));
    }
    let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
    for l in 0..cfg.num_hidden_layers {
        let g = |n: &str| format!("blk.{l}.{n}.weight");
        let mut m = |n: &str| read_qmatrix(content, reader, &g(n), path);
        let (q, k, v) = (m("attn_q")?, m("attn_k")?, m("attn_v")?);
        let o = m("attn_output")?;
        let (gate, up, down) = (m("ffn_gate")?, m("ffn_up")?, m("ffn_down")?);
        layers.push(NativeLayer {
            ln1: read_vector(content, reader, &g("attn_norm"), path)?,
            ln2: read_vector(content, reader, &g("ffn_norm"), path)?,
            qkv: stack(&[q, k, v])?,
            o,
            gate_up: stack(&[gate, up])?,
            down,
        });
    }
    let embed = Arc::new(read_qmatrix(content, reader, "token_embd.weight", path)?);
    let head = if cfg.tie_word_embeddings {
        embed.clone()
    } else {
        Arc::new(read_qmatrix(content, reader, "output.weight", path)?)
    };
    let norm = read_vector(content, reader, "output_norm.weight", path)?;
    NativeModel::new(cfg, embed, head, norm, layers, opts)
}
