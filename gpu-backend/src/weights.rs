//! Checkpoints in Hugging Face layout: a directory with `config.json` and
//! `model.safetensors` (or several `*.safetensors` shards), tensor names
//! `model.embed_tokens.weight`, `model.layers.{i}.self_attn.q_proj.weight`,
//! …, `model.norm.weight`, `lm_head.weight` (absent when tied).
//!
//! Every tensor is checked by name and shape before a model is built, so a
//! broken checkpoint gives a [`ModelError::Checkpoint`] naming the file and
//! the tensor, never a panic.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use zapspec_core::ModelError;

use crate::config::ModelConfig;

/// Named tensors of one model.
pub type Weights = HashMap<String, Tensor>;

pub use crate::config::expected_tensors;

/// How a weight is initialised by [`random_weights`].
fn init_kind(name: &str) -> Init {
    if name.ends_with("norm.weight") {
        Init::Ones
    } else if name.ends_with(".bias") {
        Init::Zeros
    } else {
        Init::Normal
    }
}

enum Init {
    Ones,
    Zeros,
    Normal,
}

/// Random weights: N(0, 0.02²) matrices (the Llama/Qwen initialiser), unit
/// norms, zero biases; deterministic in `seed`.
pub fn random_weights(
    cfg: &ModelConfig,
    seed: u64,
    dtype: DType,
    device: &Device,
) -> candle_core::Result<Weights> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let normal = Normal::new(0.0f32, 0.02).map_err(|e| candle_core::Error::Msg(e.to_string()))?;
    let mut out = Weights::new();
    for (name, shape) in expected_tensors(cfg) {
        let n: usize = shape.iter().product();
        let data: Vec<f32> = match init_kind(&name) {
            Init::Ones => vec![1.0; n],
            Init::Zeros => vec![0.0; n],
            Init::Normal => (0..n).map(|_| normal.sample(&mut rng)).collect(),
        };
        let t = Tensor::from_vec(data, shape, device)?.to_dtype(dtype)?;
        out.insert(name, t);
    }
    Ok(out)
}

/// Checks that `weights` holds every tensor `cfg` needs with the right shape.
pub fn check_weights(cfg: &ModelConfig, weights: &Weights, path: &str) -> Result<(), ModelError> {
    for (name, shape) in expected_tensors(cfg) {
        match weights.get(&name) {
            None => {
                return Err(ModelError::Checkpoint {
                    path: path.to_string(),
                    reason: format!("tensor `{name}` is missing (expected shape {shape:?})"),
                })
            }
            Some(t) if t.dims() != shape.as_slice() => {
                return Err(ModelError::Checkpoint {
                    path: path.to_string(),
                    reason: format!(
                        "tensor `{name}` has shape {:?}, config.json implies {shape:?}",
                        t.dims()
                    ),
                })
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Reads `dir/config.json`.
pub fn read_config(dir: &Path) -> Result<ModelConfig, ModelError> {
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| ModelError::Checkpoint {
        path: path.display().to_string(),
        reason: format!("cannot read config.json: {e}"),
    })?;
    ModelConfig::from_json(&text, &path.display().to_string())
}

/// Reads the safetensors of `dir` (`model.safetensors`, or every
/// `*.safetensors` shard) onto `device` as `dtype`, keeping only the tensors
/// `cfg` needs (a tied checkpoint's stray `lm_head.weight` is ignored).
pub fn read_weights(
    dir: &Path,
    cfg: &ModelConfig,
    dtype: DType,
    device: &Device,
) -> Result<Weights, ModelError> {
    let single = dir.join("model.safetensors");
    let files: Vec<_> = if single.exists() {
        vec![single]
    } else {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| ModelError::Checkpoint {
                path: dir.display().to_string(),
                reason: format!("cannot list: {e}"),
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
            .collect();
        v.sort();
        v
    };
    if files.is_empty() {
        return Err(ModelError::Checkpoint {
            path: dir.display().to_string(),
            reason: "no model.safetensors (or *.safetensors shard) in the directory".into(),
        });
    }
    let wanted: HashMap<String, Vec<usize>> = expected_tensors(cfg).into_iter().collect();
    let mut out = Weights::new();
    for f in &files {
        let fname = f.display().to_string();
        let ck = |reason: String| ModelError::Checkpoint {
            path: fname.clone(),
            reason,
        };
        let bytes = std::fs::read(f).map_err(|e| ck(format!("cannot read: {e}")))?;
        let st = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| ck(format!("not a valid safetensors file: {e}")))?;
        for (name, view) in st.tensors() {
            if !wanted.contains_key(&name) {
                continue;
            }
            let t = tensor_from_view(&view, device)
                .and_then(|t| t.to_dtype(dtype))
                .map_err(|e| ck(format!("tensor `{name}`: {e}")))?;
            out.insert(name, t);
        }
    }
    check_weights(cfg, &out, &dir.display().to_string())?;
    Ok(out)
}

fn tensor_from_view(
    view: &safetensors::tensor::TensorView<'_>,
    device: &Device,
) -> candle_core::Result<Tensor> {
    use safetensors::Dtype as S;
    let shape = view.shape().to_vec();
    let data = view.data();
    let dtype = match view.dtype() {
        S::F32 => DType::F32,
        S::F16 => DType::F16,
        S::BF16 => DType::BF16,
        S::F64 => DType::F64,
        other => candle_core::bail!("unsupported dtype {other:?} (expected a float type)"),
    };
    Tensor::from_raw_buffer(data, dtype, &shape, device)
}

/// Writes `dir/config.json` and `dir/model.safetensors`.
pub fn write_checkpoint(
    dir: &Path,
    cfg: &ModelConfig,
    weights: &Weights,
) -> Result<(), ModelError> {
    let io = |e: std::io::Error| ModelError::Checkpoint {
        path: dir.display().to_string(),
        reason: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    std::fs::write(dir.join("config.json"), cfg.to_json()).map_err(io)?;
    let mut cpu = HashMap::new();
    for (name, _) in expected_tensors(cfg) {
        let t = weights.get(&name).ok_or_else(|| ModelError::Checkpoint {
            path: dir.display().to_string(),
            reason: format!("cannot save: tensor `{name}` is missing"),
        })?;
        let t = t.to_device(&Device::Cpu).map_err(crate::backend)?;
        cpu.insert(name, t);
    }
    candle_core::safetensors::save(&cpu, dir.join("model.safetensors")).map_err(|e| {
        ModelError::Checkpoint {
            path: dir.join("model.safetensors").display().to_string(),
            reason: e.to_string(),
        }
    })
}
