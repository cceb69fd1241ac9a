//! # zapspec-backend
//!
//! Transformer runtimes implementing zapspec's
//! [`LanguageModel`](zapspec_core::LanguageModel) and
//! [`DiffusionModel`](zapspec_core::DiffusionModel): dense models on
//! [candle](https://github.com/huggingface/candle) (CPU by default; the
//! `cuda` cargo feature enables candle's CUDA backend, [`Backend::Cuda`]),
//! and [`native`], a CPU forward over `zapspec-kernels` that keeps GGUF
//! weights block-quantised (the default for GGUF files).
//! Nothing here downloads anything: checkpoints are local directories in
//! Hugging Face layout.
//!
//! ## Entry points
//!
//! * [`load_causal`] / [`load_diffusion`]: a checkpoint directory
//!   (`config.json` + safetensors) → [`CausalLm`] / [`DiffusionLm`], with
//!   every tensor checked by name and shape ([`ModelError`] otherwise).
//! * [`load_gguf`]: a Llama GGUF file (llama.cpp's format, e.g. SmolLM2
//!   `Q4_1`) → [`CausalLm`] on the native quantised forward (threads and
//!   instruction set in [`NativeOptions`]) or dequantised to f32 on candle
//!   ([`GgufOptions`]).
//! * [`Backend`]: `cpu`, `cuda`, `cuda:N` → a candle [`Device`] and dtype.
//! * [`Transformer::forward`]: the one primitive — new tokens at arbitrary
//!   positions over a [`KvCache`] under an [`AttnMask`].
//! * [`train::Trainer`]: CPU training of small byte-level models.
//!
//! | module | holds |
//! |---|---|
//! | [`config`] | [`ModelConfig`]: HF `config.json` of a Llama/Qwen2 decoder + a `zapspec` section for diffusion models |
//! | [`weights`] | tensor names/shapes, safetensors load/save with checked errors, seeded random init |
//! | [`mask`] | [`AttnMask`]: causal, tree, Spiffy draft-block (Fig. 3), blockwise-causal masks |
//! | [`gguf`] | Llama checkpoints in one GGUF file: config from metadata, quantised or dequantised weights |
//! | [`native`] | [`NativeModel`]: the CPU forward over block-quantised weights (activations quantised per block, SIMD chosen at run time, rows split over a rayon pool, attention per KV head over a block of rows) and [`NativeKv`], its paged copy-on-write KV cache |
//! | [`transformer`] | [`Transformer`]: the decoder; one forward = new tokens at any positions over a [`KvCache`] under any mask |
//! | [`causal`] | [`CausalLm`]: parallel prefill (Copy-as-Decode §2.4), truncate, fork, draft-tree scoring |
//! | [`diffusion`] | [`DiffusionLm`]: masked diffusion LM with Spiffy draft blocks (§4.3), prefix/dual caches, blockwise-causal variant |
//! | [`train`] | CPU training of the small byte-level models (AdamW, causal and masked-diffusion losses) |
//!
//! ## Costs
//!
//! A forward of `n` new tokens over `p` cached positions costs, per layer,
//! O(n·d²) for the projections and MLP and O(n·(p+n)·d) for attention
//! (`d` = hidden size), and materialises an `n × (p+n)` score matrix per
//! head. The KV cache holds `2 · layers · kv_heads · head_dim` values per
//! position; cloning a [`KvCache`] (a fork) is O(layers) since candle
//! tensors are reference-counted. [`CausalLm`] counts forward passes and
//! [`DiffusionLm`] counts function evaluations, so callers can report work
//! without timing.
//!
//! The shipped models (`models/`, trained by `examples/src/bin/train.rs`)
//! are small byte-level causal and masked-diffusion LMs; see
//! `models/README.md` (recorded training results:
//! `examples/results/history/backend.md`).
//!
//! Not done: no fused attention kernels on candle (attention is plain
//! matmul + softmax, so long contexts cost O(n²) memory); the `cuda` feature is not
//! built in CI (no CUDA toolkit there); quantised weights only from GGUF
//! files of the Llama architecture; no
//! `rope_scaling` (Llama 3.1-style) support.

pub mod causal;
pub mod config;
pub mod diffusion;
pub mod gguf;
pub mod mask;
pub mod native;
pub mod train;
pub mod transformer;
pub mod weights;

use std::path::Path;
use std::sync::Arc;

pub use candle_core::{DType, Device};
pub use causal::CausalLm;
pub use config::{DiffusionAttention, ModelConfig, ModelKind};
pub use diffusion::{DiffusionCache, DiffusionLm};
pub use gguf::{load_gguf, GgufOptions, GgufWeights};
pub use mask::AttnMask;
pub use native::{NativeKv, NativeModel, NativeOptions};
pub use transformer::{KvCache, LogitRows, Transformer};
use zapspec_core::ModelError;
pub use zapspec_kernels::Isa;

/// Maps a candle error to [`ModelError::Backend`].
pub fn backend(e: candle_core::Error) -> ModelError {
    ModelError::Backend(e.to_string())
}

/// Where a model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// The CPU (f32).
    #[default]
    Cpu,
    /// CUDA device `n` (needs the `cuda` feature).
    Cuda(usize),
}

impl std::str::FromStr for Backend {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, ModelError> {
        match s {
            "cpu" => Ok(Backend::Cpu),
            "cuda" => Ok(Backend::Cuda(0)),
            _ => match s.strip_prefix("cuda:").and_then(|n| n.parse().ok()) {
                Some(n) => Ok(Backend::Cuda(n)),
                None => Err(ModelError::Backend(format!(
                    "unknown device `{s}` (cpu, cuda, cuda:N)"
                ))),
            },
        }
    }
}

impl Backend {
    /// The candle device; `Cuda` fails cleanly when the crate was built
    /// without the `cuda` feature.
    pub fn device(self) -> Result<Device, ModelError> {
        match self {
            Backend::Cpu => Ok(Device::Cpu),
            #[cfg(feature = "cuda")]
            Backend::Cuda(n) => Device::new_cuda(n).map_err(backend),
            #[cfg(not(feature = "cuda"))]
            Backend::Cuda(_) => Err(ModelError::Backend(
                "this build has no GPU support: rebuild with `--features gpu-backend/cuda`".into(),
            )),
        }
    }

    /// The best device this build has: CUDA 0 with the `cuda` feature, else
    /// the CPU.
    pub fn best() -> Backend {
        if cfg!(feature = "cuda") {
            Backend::Cuda(0)
        } else {
            Backend::Cpu
        }
    }

    /// The compute type: f32 on the CPU, bf16 on CUDA (as the paper's
    /// kernel study).
    pub fn dtype(self) -> DType {
        match self {
            Backend::Cpu => DType::F32,
            Backend::Cuda(_) => DType::BF16,
        }
    }
}

/// Loads a causal LM from a checkpoint directory (f32 on the CPU).
pub fn load_causal(dir: &Path, device: &Device) -> Result<CausalLm, ModelError> {
    let dtype = if device.is_cpu() {
        DType::F32
    } else {
        DType::BF16
    };
    let m = Transformer::load(dir, dtype, device)?;
    if m.config().kind() != ModelKind::Causal {
        return Err(ModelError::Checkpoint {
            path: dir.display().to_string(),
            reason: "config.json describes a diffusion model, not a causal LM".into(),
        });
    }
    Ok(CausalLm::new(Arc::new(m)))
}

/// Loads a masked diffusion LM from a checkpoint directory.
pub fn load_diffusion(dir: &Path, device: &Device) -> Result<DiffusionLm, ModelError> {
    let dtype = if device.is_cpu() {
        DType::F32
    } else {
        DType::BF16
    };
    let m = Transformer::load(dir, dtype, device)?;
    if m.config().kind() != ModelKind::Diffusion {
        return Err(ModelError::Checkpoint {
            path: dir.display().to_string(),
            reason: "config.json describes a causal LM, not a diffusion model".into(),
        });
    }
    DiffusionLm::new(Arc::new(m))
}

/// The `models/` directory shipped at the repository root.
pub fn shipped_models_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("models")
}
