//! The native CPU forward of a Llama-family decoder with block-quantised
//! weights ([`zapspec_kernels`]): what [`crate::load_gguf`] builds by
//! default ([`crate::GgufWeights::Quantized`]).
//!
//! - **Weights stay as GGUF stores them** (`Q4_0`, `Q4_1`, `Q8_0`; other
//!   types, e.g. K-quants, are re-blocked to `Q8_0` at load: 8.5 bits per
//!   weight, no kernel of their own yet). The query, key and value
//!   projections are stacked into one matrix, as are the gate and up
//!   projections, so a layer is four matrix products.
//! - **Activations are quantised to 8 bits per block** before each product
//!   (llama.cpp's arithmetic), the instruction set chosen at run time
//!   ([`zapspec_kernels::Isa::detect`]).
//! - **Threads**: the rows of each product (and the heads of attention)
//!   are split over a rayon pool of [`NativeOptions::threads`].
//! - **KV cache**: [`NativeKv`], paged and copy-on-write; rollback is a
//!   truncation, a fork a clone of the page table.
//! - **A forward of `n` tokens** at any positions under any [`AttnMask`]
//!   (prefill, a draft block, a draft tree) multiplies each weight block
//!   with up to eight tokens at once (four in GGUF's row layout), so it
//!   costs far less than `n` single-token forwards. On AVX-512 VNNI the
//!   matrices are interleaved at load ([`Kernels::prepare`]), so one
//!   512-bit product covers 16 weight rows.
//!
//! Costs per token: one pass over the weights (≈ 0.6 bytes per parameter
//! for `Q4_1`), attention O(context · hidden); the cache holds
//! `2 · layers · kv_heads · head_dim` f32 per position.

pub mod kv;

use std::sync::Arc;

use rayon::prelude::*;
use zapspec_core::{Logits, ModelError, TokenId};
use zapspec_kernels::{Acts, Isa, Kernels, QMatrix};

pub use kv::NativeKv;

use crate::config::ModelConfig;
use crate::mask::AttnMask;
use crate::transformer::LogitRows;

/// Rows of a forward that share one pass over the cached keys and values
/// in attention.
const ATT_ROWS: usize = 16;

thread_local! {
    /// Each worker thread's attention-score buffer, reused across tasks.
    static SCORES: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Softmax of `row` over the slots in `visible` (sorted, disjoint ranges);
/// every other slot gets 0.
fn softmax_visible(k: &Kernels, row: &mut [f32], visible: &[std::ops::Range<usize>]) {
    let m = visible
        .iter()
        .flat_map(|r| row[r.clone()].iter())
        .fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let mut z = 0f32;
    let mut next = 0;
    for r in visible {
        row[next..r.start].fill(0.0);
        z += k.exp_sum(&mut row[r.clone()], m);
        next = r.end;
    }
    row[next..].fill(0.0);
    if z > 0.0 {
        let inv = 1.0 / z;
        for r in visible {
            for s in &mut row[r.clone()] {
                *s *= inv;
            }
        }
    }
}

/// Options of the native forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NativeOptions {
    /// Worker threads; 0: `RAYON_NUM_THREADS` if set, else every core.
    pub threads: usize,
    /// The instruction set; `None`: the best this CPU has
    /// ([`Isa::detect`], which honours `ZAPSPEC_ISA`).
    pub isa: Option<Isa>,
}

/// One decoder layer's weights.
#[derive(Debug)]
pub struct NativeLayer {
    /// Input RMSNorm weight.
    pub ln1: Vec<f32>,
    /// Post-attention RMSNorm weight.
    pub ln2: Vec<f32>,
    /// Query, key and value projections stacked (`(hq + 2·hkv)·head_dim`
    /// rows).
    pub qkv: QMatrix,
    /// Attention output projection.
    pub o: QMatrix,
    /// Gate and up projections stacked (`2 · intermediate` rows).
    pub gate_up: QMatrix,
    /// Down projection.
    pub down: QMatrix,
}

/// A Llama-family decoder on [`zapspec_kernels`].
pub struct NativeModel {
    cfg: ModelConfig,
    kernels: Kernels,
    pool: Option<Arc<rayon::ThreadPool>>,
    embed: Arc<QMatrix>,
    head: Arc<QMatrix>,
    norm: Arc<Vec<f32>>,
    layers: Vec<Arc<NativeLayer>>,
    inv_freq: Vec<f32>,
}

impl std::fmt::Debug for NativeModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeModel")
            .field("layers", &self.layers.len())
            .field("hidden", &self.cfg.hidden_size)
            .field("vocab", &self.cfg.vocab_size)
            .field("isa", &self.kernels.isa())
            .field("threads", &self.threads())
            .finish()
    }
}

fn err(e: impl std::fmt::Display) -> ModelError {
    ModelError::Backend(e.to_string())
}

impl NativeModel {
    /// A model from its weights: the token embedding (`vocab × hidden`,
    /// looked up by row), the LM head (the same matrix when tied), the
    /// final norm and the layers. Checks every shape against `cfg`.
    pub fn new(
        cfg: ModelConfig,
        embed: Arc<QMatrix>,
        head: Arc<QMatrix>,
        norm: Vec<f32>,
        layers: Vec<NativeLayer>,
        opts: NativeOptions,
    ) -> Result<NativeModel, ModelError> {
        let (d, hd) = (cfg.hidden_size, cfg.head_dim());
        let (hq, hkv) = (cfg.num_attention_heads, cfg.kv_heads());
        let inter = cfg.intermediate_size;
        let shape = |m: &QMatrix, r: usize, c: usize, what: &str| {
            if m.rows() != r || m.cols() != c {
                Err(err(format!(
                    "{what}: {}×{}, the config implies {r}×{c}",
                    m.rows(),
                    m.cols()
                )))
            } else {
                Ok(())
            }
        };
        shape(&embed, cfg.vocab_size, d, "token embedding")?;
        shape(&head, cfg.vocab_size, d, "LM head")?;
        if norm.len() != d || layers.len() != cfg.num_hidden_layers {
            return Err(err("final norm or layer count disagrees with the config"));
        }
        for (l, x) in layers.iter().enumerate() {
            shape(&x.qkv, (hq + 2 * hkv) * hd, d, &format!("layer {l} qkv"))?;
            shape(&x.o, d, hq * hd, &format!("layer {l} o"))?;
            shape(&x.gate_up, 2 * inter, d, &format!("layer {l} gate/up"))?;
            shape(&x.down, d, inter, &format!("layer {l} down"))?;
            if x.ln1.len() != d || x.ln2.len() != d {
                return Err(err(format!("layer {l}: norm width")));
            }
        }
        if hd % 2 != 0 || hq % hkv != 0 {
            return Err(err(
                "head_dim must be even and heads a multiple of kv heads",
            ));
        }
        let kernels = match opts.isa {
            Some(isa) => Kernels::with_isa(isa)
                .ok_or_else(|| err(format!("this CPU cannot run the {isa} kernels")))?,
            None => Kernels::detect(),
        };
        let threads = match opts.threads {
            0 => std::env::var("RAYON_NUM_THREADS")
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|&n: &usize| n > 0)
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
            n => n,
        };
        let pool = if threads > 1 {
            Some(Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("zapspec-cpu-{i}"))
                    .build()
                    .map_err(err)?,
            ))
        } else {
            None
        };
        // Each product's matrix in the layout the kernels multiply
        // fastest (interleaved on AVX-512 VNNI); a tied embedding is the
        // LM head, looked up through `dequantize_row` in either layout.
        let prep = |m: Arc<QMatrix>| Arc::new(kernels.prepare(Arc::unwrap_or_clone(m)));
        let (embed, head) = if Arc::ptr_eq(&embed, &head) {
            drop(embed);
            let h = prep(head);
            (h.clone(), h)
        } else {
            (embed, prep(head))
        };
        let layers: Vec<NativeLayer> = layers
            .into_iter()
            .map(|l| NativeLayer {
                qkv: kernels.prepare(l.qkv),
                o: kernels.prepare(l.o),
                gate_up: kernels.prepare(l.gate_up),
                down: kernels.prepare(l.down),
                ..l
            })
            .collect();
        let inv_freq = (0..hd / 2)
            .map(|i| (1.0 / cfg.rope_theta.powf(2.0 * i as f64 / hd as f64)) as f32)
            .collect();
        Ok(NativeModel {
            cfg,
            kernels,
            pool,
            embed,
            head,
            norm: Arc::new(norm),
            layers: layers.into_iter().map(Arc::new).collect(),
            inv_freq,
        })
    }

    /// The model's configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// The kernels' instruction set.
    pub fn isa(&self) -> Isa {
        self.kernels.isa()
    }

    /// Worker threads.
    pub fn threads(&self) -> usize {
        self.pool.as_ref().map_or(1, |p| p.current_num_threads())
    }

    /// Heap bytes of the weights (the embedding once when tied).
    pub fn weight_bytes(&self) -> usize {
        let layers: usize = self
            .layers
            .iter()
            .map(|l| l.qkv.bytes() + l.o.bytes() + l.gate_up.bytes() + l.down.bytes())
            .sum();
        let head = if Arc::ptr_eq(&self.embed, &self.head) {
            0
        } else {
            self.head.bytes()
        };
        layers + self.embed.bytes() + head
    }

    /// An empty KV cache for this model.
    pub fn new_cache(&self) -> NativeKv {
        NativeKv::new(
            self.cfg.num_hidden_layers,
            self.cfg.kv_heads(),
            self.cfg.head_dim(),
        )
    }

    /// The same model with only its first `layers` decoder layers (then
    /// the final norm and the LM head), sharing every weight: an
    /// early-exit self-speculative drafter. Clamped to `1..=layers`.
    pub fn first_layers(&self, layers: usize) -> NativeModel {
        let k = layers.clamp(1, self.layers.len().max(1));
        let mut cfg = self.cfg.clone();
        cfg.num_hidden_layers = k;
        NativeModel {
            cfg,
            kernels: self.kernels,
            pool: self.pool.clone(),
            embed: self.embed.clone(),
            head: self.head.clone(),
            norm: self.norm.clone(),
            layers: self.layers[..k.min(self.layers.len())].to_vec(),
            inv_freq: self.inv_freq.clone(),
        }
    }

    fn matmul(&self, w: &QMatrix, x: &Acts, out: &mut Vec<f32>, scratch: &mut Vec<f32>) {
        // every element is written by the product: no need to zero
        out.resize(x.rows() * w.rows(), 0.0);
        self.kernels
            .matmul(self.pool.as_deref(), w, x, out, scratch);
    }

    fn rms_norm(&self, x: &[f32], w: &[f32], out: &mut Vec<f32>) {
        let d = w.len();
        out.clear();
        out.resize(x.len(), 0.0);
        let eps = self.cfg.rms_norm_eps as f32;
        for (xr, or) in x.chunks_exact(d).zip(out.chunks_exact_mut(d)) {
            let ms = self.kernels.dot_f32(xr, xr) / d as f32;
            let s = 1.0 / (ms + eps).sqrt();
            for ((o, &v), &g) in or.iter_mut().zip(xr).zip(w) {
                *o = v * s * g;
            }
        }
    }

    /// Rotates every head of `x` by `angles`, one `(sin, cos)` per
    /// frequency.
    fn rope(&self, x: &mut [f32], angles: &[(f32, f32)]) {
        let hd = self.cfg.head_dim();
        let half = hd / 2;
        for head in x.chunks_exact_mut(hd) {
            for (i, &(s, c)) in angles.iter().enumerate() {
                let (a, b) = if self.cfg.rope_interleaved {
                    (2 * i, 2 * i + 1)
                } else {
                    (i, i + half)
                };
                let (x0, x1) = (head[a], head[b]);
                head[a] = x0 * c - x1 * s;
                head[b] = x0 * s + x1 * c;
            }
        }
    }

    /// One forward of `tokens` at `positions`, appended to `kv` (at slots
    /// `kv.len()..`), row `i` attending to the slots `mask` allows in its
    /// row (`mask` is `tokens.len() × (kv.len() + tokens.len())`);
    /// returns the logits of `rows` (`None` for [`LogitRows::None`]).
    pub fn forward(
        &self,
        tokens: &[TokenId],
        positions: &[usize],
        kv: &mut NativeKv,
        mask: &AttnMask,
        rows: LogitRows,
    ) -> Result<Option<Logits>, ModelError> {
        // The whole forward runs on a worker of the pool: each parallel
        // product inside it then splits its rows by work stealing, without
        // a round trip to a waiting caller thread per product.
        match &self.pool {
            Some(pool) => pool.install(|| self.forward_in_pool(tokens, positions, kv, mask, rows)),
            None => self.forward_in_pool(tokens, positions, kv, mask, rows),
        }
    }

    fn forward_in_pool(
        &self,
        tokens: &[TokenId],
        positions: &[usize],
        kv: &mut NativeKv,
        mask: &AttnMask,
        rows: LogitRows,
    ) -> Result<Option<Logits>, ModelError> {
        let n = tokens.len();
        let past = kv.len();
        if positions.len() != n || mask.rows() != n || mask.cols() != past + n {
            return Err(err(format!(
                "forward: {n} tokens, {} positions, mask {}×{}, cache {past}",
                positions.len(),
                mask.rows(),
                mask.cols()
            )));
        }
        if let Some(&t) = tokens.iter().find(|&&t| t as usize >= self.cfg.vocab_size) {
            return Err(ModelError::TokenOutOfRange {
                token: t,
                vocab_size: self.cfg.vocab_size,
            });
        }
        if n == 0 {
            return Ok(match rows {
                LogitRows::None => None,
                _ => Some(Logits::zeros((0, self.cfg.vocab_size))),
            });
        }
        let cfg = &self.cfg;
        let (d, hd) = (cfg.hidden_size, cfg.head_dim());
        let (hq, hkv) = (cfg.num_attention_heads, cfg.kv_heads());
        let inter = cfg.intermediate_size;
        let group = hq / hkv;
        let qkv_w = (hq + 2 * hkv) * hd;
        let scale = 1.0 / (hd as f32).sqrt();
        let k = &self.kernels;

        let mut x = vec![0f32; n * d];
        for (t, row) in tokens.iter().zip(x.chunks_exact_mut(d)) {
            self.embed.dequantize_row(*t as usize, row);
        }
        // Each row's visible slots, as ranges (a causal row is one range).
        let visible: Vec<Vec<std::ops::Range<usize>>> = (0..n)
            .map(|i| {
                let mut out: Vec<std::ops::Range<usize>> = Vec::new();
                for j in 0..past + n {
                    if mask.is_allowed(i, j) {
                        match out.last_mut() {
                            Some(r) if r.end == j => r.end = j + 1,
                            _ => out.push(j..j + 1),
                        }
                    }
                }
                out
            })
            .collect();
        kv.grow(past + n);

        let (mut h, mut acts, mut scratch) = (Vec::new(), Acts::new(), Vec::new());
        let (mut qkv, mut proj, mut gu) = (Vec::new(), Vec::new(), Vec::new());
        let mut att = vec![0f32; n * hq * hd];
        let mut act = vec![0f32; n * inter];
        // each row's rotation, computed once for all its heads and layers
        let angles: Vec<(f32, f32)> = positions
            .iter()
            .flat_map(|&pos| {
                self.inv_freq
                    .iter()
                    .map(move |&f| (pos as f32 * f).sin_cos())
            })
            .collect();
        for (l, layer) in self.layers.iter().enumerate() {
            self.rms_norm(&x, &layer.ln1, &mut h);
            acts.quantize(k, &h, d);
            self.matmul(&layer.qkv, &acts, &mut qkv, &mut scratch);
            for (i, row) in qkv.chunks_exact_mut(qkv_w).enumerate() {
                let (q, kvv) = row.split_at_mut(hq * hd);
                let (kk, vv) = kvv.split_at_mut(hkv * hd);
                let angles = &angles[i * hd / 2..(i + 1) * hd / 2];
                self.rope(q, angles);
                self.rope(kk, angles);
                for v in q.iter_mut() {
                    *v *= scale;
                }
                for g in 0..hkv {
                    kv.set(l, 0, g, past + i, &kk[g * hd..(g + 1) * hd]);
                    kv.set(l, 1, g, past + i, &vv[g * hd..(g + 1) * hd]);
                }
            }
            // attention: one task per (KV head, block of up to ATT_ROWS
            // rows): the queries of those rows' heads that share the KV
            // head against every page run of the slots any of them sees,
            // so each cached key and value is read once per task, not once
            // per row; a slot a row does not see gets weight 0 (scores and
            // sums per row are the same operations in the same order as
            // for that row alone)
            let kv_ref = &*kv;
            let qkv_ref = &qkv;
            let visible = &visible;
            let blocks = n.div_ceil(ATT_ROWS);
            let task = |idx: usize| -> Vec<f32> {
                let (g, c) = (idx % hkv, idx / hkv);
                let rows = c * ATT_ROWS..((c + 1) * ATT_ROWS).min(n);
                let span = rows
                    .clone()
                    .filter_map(|i| visible[i].last().map(|r| r.end))
                    .max()
                    .unwrap_or(0);
                let nq = rows.len() * group;
                let mut q = Vec::with_capacity(nq * hd);
                for i in rows.clone() {
                    let at = i * qkv_w + g * group * hd;
                    q.extend_from_slice(&qkv_ref[at..at + group * hd]);
                }
                // the scores, in this thread's buffer (every element in
                // 0..span of each row is written before it is read, so it
                // is neither zeroed nor allocated per task)
                let mut buf = SCORES.with(|c| c.take());
                if buf.len() < nq * span {
                    buf.resize(nq * span, 0.0);
                }
                let p = &mut buf[..nq * span];
                for (a, b) in NativeKv::page_runs(0..span) {
                    let keys = kv_ref.keys_t(l, g, a, b);
                    k.attn_scores_t(&q, nq, keys, kv::PAGE, hd, b - a, &mut p[a..], span);
                }
                for (ri, i) in rows.clone().enumerate() {
                    for h in 0..group {
                        let row = &mut p[(ri * group + h) * span..(ri * group + h + 1) * span];
                        softmax_visible(k, row, &visible[i]);
                    }
                }
                let mut o = vec![0f32; nq * hd];
                for (a, b) in NativeKv::page_runs(0..span) {
                    k.attn_weighted_sum(&p[a..], span, nq, kv_ref.values(l, g, a, b), hd, &mut o);
                }
                SCORES.with(|c| c.set(buf));
                o
            };
            let work = n * hq * (past + n);
            let outs: Vec<Vec<f32>> = match &self.pool {
                Some(pool) if work >= 4096 => {
                    pool.install(|| (0..blocks * hkv).into_par_iter().map(task).collect())
                }
                _ => (0..blocks * hkv).map(task).collect(),
            };
            for (idx, o) in outs.iter().enumerate() {
                let (g, c) = (idx % hkv, idx / hkv);
                for (ri, i) in (c * ATT_ROWS..((c + 1) * ATT_ROWS).min(n)).enumerate() {
                    let at = i * hq * hd + g * group * hd;
                    att[at..at + group * hd]
                        .copy_from_slice(&o[ri * group * hd..(ri + 1) * group * hd]);
                }
            }
            acts.quantize(k, &att, hq * hd);
            self.matmul(&layer.o, &acts, &mut proj, &mut scratch);
            for (a, b) in x.iter_mut().zip(&proj) {
                *a += b;
            }
            self.rms_norm(&x, &layer.ln2, &mut h);
            acts.quantize(k, &h, d);
            self.matmul(&layer.gate_up, &acts, &mut gu, &mut scratch);
            // SiLU(gate) · up, the exponentials by the SIMD kernel
            for (row, a) in gu.chunks_exact(2 * inter).zip(act.chunks_exact_mut(inter)) {
                let (g, u) = row.split_at(inter);
                for (o, &gv) in a.iter_mut().zip(g) {
                    *o = -gv;
                }
                k.exp_sum(a, 0.0);
                for ((o, &gv), &uv) in a.iter_mut().zip(g).zip(u) {
                    *o = gv / (1.0 + *o) * uv;
                }
            }
            acts.quantize(k, &act, inter);
            self.matmul(&layer.down, &acts, &mut proj, &mut scratch);
            for (a, b) in x.iter_mut().zip(&proj) {
                *a += b;
            }
        }
        let pick: Vec<usize> = match rows {
            LogitRows::None => return Ok(None),
            LogitRows::All => (0..n).collect(),
            LogitRows::Last => vec![n - 1],
            LogitRows::Rows(r) => r,
        };
        if let Some(&bad) = pick.iter().find(|&&r| r >= n) {
            return Err(err(format!("logit row {bad} of a forward of {n} tokens")));
        }
        let sel: Vec<f32> = pick
            .iter()
            .flat_map(|&r| x[r * d..(r + 1) * d].iter().copied())
            .collect();
        self.rms_norm(&sel, &self.norm, &mut h);
        acts.quantize(k, &h, d);
        let mut logits = Vec::new();
        self.matmul(&self.head, &acts, &mut logits, &mut scratch);
        Logits::from_shape_vec((pick.len(), cfg.vocab_size), logits)
            .map(Some)
            .map_err(err)
    }
}
