//! CPU training of the small models the project ships: a causal LM
//! (next-token cross-entropy) and a masked diffusion LM (LLaDA's loss: mask
//! each token with probability t ~ U(0, 1), cross-entropy on the masked
//! positions weighted by 1/t — an upper bound on the negative
//! log-likelihood), with candle-nn's AdamW.

use candle_core::{DType, Device, Tensor, Var, D};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use rand::Rng;
use zapspec_core::{ModelError, TokenId};

use crate::config::{DiffusionAttention, ModelConfig, ModelKind};
use crate::mask::AttnMask;
use crate::transformer::Transformer;
use crate::weights::{self, Weights};

/// Optimiser settings.
#[derive(Debug, Clone)]
pub struct TrainConfig {
    /// AdamW learning rate.
    pub lr: f64,
    /// AdamW decoupled weight decay.
    pub weight_decay: f64,
    /// Seed of the random initial weights.
    pub seed: u64,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            lr: 3e-3,
            weight_decay: 0.0,
            seed: 0,
        }
    }
}

/// A model under training: variables, the model built on them, AdamW.
pub struct Trainer {
    cfg: ModelConfig,
    vars: Vec<(String, Var)>,
    model: Transformer,
    opt: AdamW,
    device: Device,
}

impl Trainer {
    /// A freshly initialised model (seeded random weights, f32 on the CPU)
    /// and its AdamW optimiser; fails on an invalid `cfg`.
    pub fn new(cfg: ModelConfig, tc: &TrainConfig) -> Result<Self, ModelError> {
        cfg.validate("<train config>")?;
        let init = weights::random_weights(&cfg, tc.seed, DType::F32, &Device::Cpu)
            .map_err(crate::backend)?;
        Self::from_weights(cfg, init, tc)
    }

    /// Continues training a saved checkpoint (`dir/config.json` +
    /// `dir/model.safetensors`, f32 on the CPU) with a fresh AdamW state.
    pub fn resume(dir: &std::path::Path, tc: &TrainConfig) -> Result<Self, ModelError> {
        let cfg = weights::read_config(dir)?;
        let init = weights::read_weights(dir, &cfg, DType::F32, &Device::Cpu)?;
        Self::from_weights(cfg, init, tc)
    }

    fn from_weights(cfg: ModelConfig, init: Weights, tc: &TrainConfig) -> Result<Self, ModelError> {
        let device = Device::Cpu;
        let mut vars = Vec::new();
        let mut w = Weights::new();
        for (name, _) in weights::expected_tensors(&cfg) {
            let t = init
                .get(&name)
                .ok_or_else(|| ModelError::Backend(format!("init lacks {name}")))?;
            let v = Var::from_tensor(t).map_err(crate::backend)?;
            w.insert(name.clone(), v.as_tensor().clone());
            vars.push((name, v));
        }
        let model = Transformer::from_weights(cfg.clone(), w, &device)?;
        let opt = AdamW::new(
            vars.iter().map(|(_, v)| v.clone()).collect(),
            ParamsAdamW {
                lr: tc.lr,
                weight_decay: tc.weight_decay,
                ..Default::default()
            },
        )
        .map_err(crate::backend)?;
        Ok(Trainer {
            cfg,
            vars,
            model,
            opt,
            device,
        })
    }

    /// The configuration of the model under training.
    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// Sets the learning rate for the following steps (for schedules).
    pub fn set_lr(&mut self, lr: f64) {
        self.opt.set_learning_rate(lr);
    }

    fn attention_mask(&self, t: usize) -> candle_core::Result<Tensor> {
        let m = match self.cfg.kind() {
            ModelKind::Causal => AttnMask::causal(0, t),
            ModelKind::Diffusion => {
                let z = self.cfg.zapspec.clone().unwrap_or_default();
                match z.attention {
                    DiffusionAttention::Bidirectional => AttnMask::full(t, t),
                    DiffusionAttention::BlockCausal => {
                        AttnMask::block_causal(0, 0, t, z.block_size)
                    }
                }
            }
        };
        m.to_tensor(DType::F32, &self.device)
    }

    fn batch_tensor(&self, rows: &[Vec<TokenId>]) -> candle_core::Result<Tensor> {
        let t = rows.first().map_or(0, Vec::len);
        if rows.iter().any(|r| r.len() != t) {
            candle_core::bail!("ragged batch");
        }
        Tensor::from_vec(rows.concat(), (rows.len(), t), &self.device)
    }

    /// Mean next-token cross-entropy (nats) of windows of `T + 1` tokens.
    pub fn causal_loss(&self, windows: &[Vec<TokenId>]) -> candle_core::Result<Tensor> {
        let inputs: Vec<Vec<TokenId>> = windows.iter().map(|w| w[..w.len() - 1].to_vec()).collect();
        let targets: Vec<Vec<TokenId>> = windows.iter().map(|w| w[1..].to_vec()).collect();
        let x = self.batch_tensor(&inputs)?;
        let y = self.batch_tensor(&targets)?.flatten_all()?;
        let (_, t) = x.dims2()?;
        let logits = self.model.forward_train(&x, &self.attention_mask(t)?)?;
        let v = self.cfg.vocab_size;
        candle_nn::loss::cross_entropy(&logits.reshape(((), v))?, &y)
    }

    /// LLaDA's masked-diffusion loss on `windows`: per sequence a masking
    /// rate `t` (given, or drawn from U(0, 1) when `rates` is `None`), each
    /// token masked with probability `t`; the sum over masked positions of
    /// `−log p(x | x_t) / t`, averaged over all positions. Its expectation
    /// bounds the per-token negative log-likelihood from above.
    pub fn diffusion_loss<R: Rng>(
        &self,
        windows: &[Vec<TokenId>],
        rates: Option<&[f64]>,
        rng: &mut R,
    ) -> candle_core::Result<Tensor> {
        let mask_tok = self.mask_token()?;
        let mut noisy = Vec::with_capacity(windows.len());
        let mut weights = Vec::new();
        for (i, w) in windows.iter().enumerate() {
            let t = rates.map_or_else(|| rng.random_range(1e-3..1.0), |r| r[i]);
            let mut row = w.clone();
            mask_span(&mut row, t, mask_tok, &mut weights, rng);
            noisy.push(row);
        }
        self.weighted_nll(&noisy, windows, weights)
    }

    fn mask_token(&self) -> candle_core::Result<TokenId> {
        self.cfg
            .mask_token()
            .ok_or_else(|| candle_core::Error::Msg("not a diffusion config".into()))
    }

    /// `Σ weights · −log p(clean | noisy)` over all positions of the batch,
    /// divided by the number of positions (the weights are 0 at unmasked
    /// positions).
    fn weighted_nll(
        &self,
        noisy: &[Vec<TokenId>],
        windows: &[Vec<TokenId>],
        weights: Vec<f32>,
    ) -> candle_core::Result<Tensor> {
        let x = self.batch_tensor(noisy)?;
        let y = self.batch_tensor(windows)?.flatten_all()?;
        let (b, t) = x.dims2()?;
        let logits = self.model.forward_train(&x, &self.attention_mask(t)?)?;
        let logp =
            candle_nn::ops::log_softmax(&logits.reshape(((), self.cfg.vocab_size))?, D::Minus1)?;
        let nll = logp.gather(&y.unsqueeze(1)?, 1)?.squeeze(1)?.neg()?;
        let w = Tensor::from_vec(weights, b * t, &self.device)?;
        (nll * w)?.sum_all()? / (b * t) as f64
    }

    /// A blockwise (SDAR-style) variant of [`Trainer::diffusion_loss`] for
    /// blockwise-causal models, closer to how they decode (clean earlier
    /// blocks, a partly masked current block): per window a cut block `c`
    /// drawn uniformly, blocks before it left clean (no loss), every later
    /// block masked at its own rate `t_b ~ U(0, 1)` with weight `1 / t_b`;
    /// the weighted sum over masked positions averaged over all positions.
    pub fn blockwise_diffusion_loss<R: Rng>(
        &self,
        windows: &[Vec<TokenId>],
        rng: &mut R,
    ) -> candle_core::Result<Tensor> {
        let mask_tok = self.mask_token()?;
        let bs = self.cfg.zapspec.as_ref().map_or(1, |z| z.block_size).max(1);
        let mut noisy = Vec::with_capacity(windows.len());
        let mut weights = Vec::new();
        for w in windows {
            let blocks = w.len().div_ceil(bs);
            let cut = rng.random_range(0..blocks);
            let mut row = w.clone();
            for (b, chunk) in row.chunks_mut(bs).enumerate() {
                let t = if b < cut {
                    0.0
                } else {
                    rng.random_range(1e-3..1.0)
                };
                mask_span(chunk, t, mask_tok, &mut weights, rng);
            }
            noisy.push(row);
        }
        self.weighted_nll(&noisy, windows, weights)
    }

    /// One AdamW step on `loss`.
    pub fn step(&mut self, loss: &Tensor) -> Result<(), ModelError> {
        self.opt.backward_step(loss).map_err(crate::backend)
    }

    /// A detached copy of the current weights as an inference model.
    pub fn snapshot(&self) -> Result<Transformer, ModelError> {
        let mut w = Weights::new();
        for (name, v) in &self.vars {
            w.insert(
                name.clone(),
                v.as_tensor().detach().copy().map_err(crate::backend)?,
            );
        }
        Transformer::from_weights(self.cfg.clone(), w, &self.device)
    }
}

/// Masks each token of `span` with probability `t` (none when `t = 0`),
/// pushing one loss weight per token: `1 / t` where masked, else 0.
fn mask_span<R: Rng>(
    span: &mut [TokenId],
    t: f64,
    mask_tok: TokenId,
    weights: &mut Vec<f32>,
    rng: &mut R,
) {
    for tok in span.iter_mut() {
        if t > 0.0 && rng.random::<f64>() < t {
            *tok = mask_tok;
            weights.push((1.0 / t) as f32);
        } else {
            weights.push(0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelConfig;

    /// A few AdamW steps on a fixed repeating pattern drive the loss down.
    #[test]
    fn training_reduces_loss() {
        let cfg = ModelConfig {
            vocab_size: 12,
            max_position_embeddings: 32,
            ..ModelConfig::default()
        };
        let mut tr = Trainer::new(
            cfg,
            &TrainConfig {
                lr: 1e-2,
                ..Default::default()
            },
        )
        .unwrap();
        let windows: Vec<Vec<TokenId>> = (0..4)
            .map(|o| (0..17).map(|i| ((i + o) % 5) as TokenId).collect())
            .collect();
        let first = tr
            .causal_loss(&windows)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        for _ in 0..30 {
            let l = tr.causal_loss(&windows).unwrap();
            tr.step(&l).unwrap();
        }
        let last = tr
            .causal_loss(&windows)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!(
            (first - (12f32).ln()).abs() < 0.3,
            "initial loss {first} ≈ ln 12"
        );
        assert!(last < 0.5 * first, "{first} -> {last}");
        // the snapshot computes the same loss through the inference path
        let snap = tr.snapshot().unwrap();
        let mut lm = crate::CausalLm::new(std::sync::Arc::new(snap)).with_bos(None);
        let rows = zapspec_core::LanguageModel::prefill(&mut lm, &windows[0][..16]).unwrap();
        let lp: f64 = (0..16)
            .map(|i| {
                -zapspec_core::prob::log_softmax(&rows.row(i).to_vec())[windows[0][i + 1] as usize]
            })
            .sum::<f64>()
            / 16.0;
        let one = tr
            .causal_loss(&windows[..1])
            .unwrap()
            .to_scalar::<f32>()
            .unwrap() as f64;
        assert!((lp - one).abs() < 1e-3, "{lp} vs {one}");
    }

    /// A tiny diffusion model's trainer (lr 1e-2, context 32) and four
    /// periodic 16-token windows to fit.
    fn tiny_diffusion_setup(attention: DiffusionAttention) -> (Trainer, Vec<Vec<TokenId>>) {
        let cfg = ModelConfig {
            max_position_embeddings: 32,
            ..ModelConfig::tiny_diffusion(attention, 4)
        };
        let tr = Trainer::new(
            cfg,
            &TrainConfig {
                lr: 1e-2,
                ..Default::default()
            },
        )
        .unwrap();
        let windows: Vec<Vec<TokenId>> = (0..4)
            .map(|o| (0..16).map(|i| ((i + o) % 6) as TokenId).collect())
            .collect();
        (tr, windows)
    }

    #[test]
    fn blockwise_diffusion_loss_trains_and_leaves_a_prefix_clean() {
        let (mut tr, windows) = tiny_diffusion_setup(DiffusionAttention::BlockCausal);
        let mut rng = zapspec_core::prob::seeded_rng(5);
        let eval = |tr: &Trainer| {
            let mut r = zapspec_core::prob::seeded_rng(9);
            (0..8)
                .map(|_| {
                    tr.blockwise_diffusion_loss(&windows, &mut r)
                        .unwrap()
                        .to_scalar::<f32>()
                        .unwrap()
                })
                .sum::<f32>()
        };
        let first = eval(&tr);
        for _ in 0..30 {
            let l = tr.blockwise_diffusion_loss(&windows, &mut rng).unwrap();
            tr.step(&l).unwrap();
        }
        let last = eval(&tr);
        assert!(last < 0.6 * first, "{first} -> {last}");
        // The masking: blocks before the cut are clean, weights 1/t or 0.
        let mut row: Vec<TokenId> = vec![1; 8];
        let mut w = Vec::new();
        mask_span(&mut row[..4], 0.0, 39, &mut w, &mut rng);
        mask_span(&mut row[4..], 0.5, 39, &mut w, &mut rng);
        assert!(row[..4].iter().all(|&t| t == 1) && w[..4].iter().all(|&x| x == 0.0));
        for (t, x) in row[4..].iter().zip(&w[4..]) {
            assert_eq!(*t == 39, *x == 2.0);
        }
    }

    #[test]
    fn diffusion_loss_trains() {
        let (mut tr, windows) = tiny_diffusion_setup(DiffusionAttention::Bidirectional);
        let mut rng = zapspec_core::prob::seeded_rng(3);
        let rates = [0.5; 4];
        let eval = |tr: &Trainer| {
            let mut r = zapspec_core::prob::seeded_rng(9);
            tr.diffusion_loss(&windows, Some(&rates), &mut r)
                .unwrap()
                .to_scalar::<f32>()
                .unwrap()
        };
        let first = eval(&tr);
        for _ in 0..30 {
            let l = tr.diffusion_loss(&windows, None, &mut rng).unwrap();
            tr.step(&l).unwrap();
        }
        let last = eval(&tr);
        assert!(last < 0.6 * first, "{first} -> {last}");
    }
}
