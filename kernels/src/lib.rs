//! # zapspec-kernels
//!
//! CPU kernels for block-quantised weight matrices as GGUF stores them
//! (`Q4_0`, `Q4_1`, `Q8_0`), multiplied by activations quantised to 8
//! bits per block of 32, with the instruction set chosen **at run time**: a
//! default `cargo build --release` (no `target-cpu` flag) runs AVX2 or
//! AVX-512 VNNI code where the CPU has it and a portable scalar path
//! elsewhere. This crate knows no model: a model runtime
//! (`zapspec-backend`'s native CPU forward) is built on it.
//!
//! | item | what | cost |
//! |---|---|---|
//! | [`blocks`] | block layouts, scalar quantise / dequantise / dot: the reference | — |
//! | [`Isa`] | `Scalar`, `Avx2`, `Avx512Vnni`; [`Isa::detect`] picks the best the CPU has | one CPUID query |
//! | [`Kernels`] | the dispatcher: quantise a row, dot products of one weight row with 1–4 activation rows, f32 `dot` / `axpy`, attention over a run of cached keys and values for the query heads of one KV head ([`Kernels::attn_scores`] on row-major keys, [`Kernels::attn_scores_t`] on dimension-major keys, [`Kernels::attn_weighted_sum`]) | a `match` per call |
//! | [`QMatrix`] | a `(rows, cols)` matrix of blocks, rows contiguous (GGUF's layout) or interleaved in groups of 16 ([`packed`]) | `rows · cols / 32` blocks either way |
//! | [`Kernels::prepare`] | a matrix in the layout the kernels multiply fastest (interleaved on AVX-512 VNNI) | one pass over the bytes, at load |
//! | [`Kernels::matmul`] | `n` quantised activation rows × a [`QMatrix`], rows split over a rayon pool | row layout: each weight block unpacked once per 4 activation rows; interleaved: once per 8 activation rows, and each product covers 16 weight rows |
//!
//! Why 8-bit activations: the 4-bit × 8-bit block product is an integer
//! dot product (`vpmaddubsw`/`vpdpbusd`), exact per block; only the two
//! scales are floats. This is llama.cpp's arithmetic, so the logits differ
//! from an f32 forward over the dequantised weights by the same amount.
//!
//! Multi-row products are what make a forward of `n` tokens cheaper than
//! `n` forwards of one: [`Kernels::dot_multi`] unpacks each weight block
//! once and multiplies it with up to four activation rows; the
//! interleaved layout goes further, one 512-bit product covering four
//! weights of 16 rows, so an activation row costs about a fifth of the
//! instructions it costs in the row layout.
//!
//! Beside the forward's products, two kernels of the future-validity
//! estimators, behind the same dispatch: [`lse`] (the log-normaliser of a
//! logit row, libm-free `exp2` / `ln`) and [`gather`] (a bit set's members'
//! logits, packed).
//!
//! Tests (`tests/kernels.rs`): every SIMD path equals the scalar path on
//! random blocks, and dequantisation equals candle's (an independent
//! reader of the same formats).

pub mod blocks;
pub mod gather;
pub mod lse;
pub mod packed;
#[cfg(target_arch = "x86_64")]
mod x86;

use std::fmt;

pub use blocks::{dequantize, dot_scalar, quantize_q8, quantize_q8_0, BlockQ8, QType, BLOCK};
use rayon::prelude::*;

/// An instruction set the kernels can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Portable Rust, no SIMD intrinsics (the reference).
    Scalar,
    /// AVX2 + FMA + F16C.
    Avx2,
    /// AVX2 plus AVX-512 F, VL, BW and VNNI (`vpdpbusd`): 256-bit row
    /// kernels and the 512-bit kernels of the interleaved layout
    /// ([`packed`]).
    Avx512Vnni,
}

impl Isa {
    /// Whether this CPU can run `self`.
    pub fn supported(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                is_x86_feature_detected!("avx2")
                    && is_x86_feature_detected!("fma")
                    && is_x86_feature_detected!("f16c")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Vnni => {
                Isa::Avx2.supported()
                    && is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512vl")
                    && is_x86_feature_detected!("avx512bw")
                    && is_x86_feature_detected!("avx512vnni")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The best instruction set this CPU has; the environment variable
    /// `ZAPSPEC_ISA` (`scalar`, `avx2`, `avx512vnni`) can lower it for an
    /// ablation (a value the CPU cannot run is ignored).
    pub fn detect() -> Isa {
        if let Some(isa) = std::env::var("ZAPSPEC_ISA")
            .ok()
            .and_then(|v| v.parse::<Isa>().ok())
            .filter(|i| i.supported())
        {
            return isa;
        }
        [Isa::Avx512Vnni, Isa::Avx2]
            .into_iter()
            .find(|i| i.supported())
            .unwrap_or(Isa::Scalar)
    }

    /// Every instruction set this CPU can run, the reference first.
    pub fn all_supported() -> Vec<Isa> {
        [Isa::Scalar, Isa::Avx2, Isa::Avx512Vnni]
            .into_iter()
            .filter(|i| i.supported())
            .collect()
    }
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512Vnni => "avx512vnni",
        })
    }
}

impl std::str::FromStr for Isa {
    type Err = KernelError;
    fn from_str(s: &str) -> Result<Self, KernelError> {
        match s {
            "scalar" => Ok(Isa::Scalar),
            "avx2" => Ok(Isa::Avx2),
            "avx512vnni" | "vnni" => Ok(Isa::Avx512Vnni),
            _ => Err(KernelError(format!(
                "unknown instruction set `{s}` (scalar, avx2, avx512vnni)"
            ))),
        }
    }
}

/// A malformed matrix or an unknown name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelError(pub String);

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KernelError {}

/// The kernels of one instruction set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernels {
    isa: Isa,
}

impl Default for Kernels {
    fn default() -> Self {
        Kernels::detect()
    }
}

impl Kernels {
    /// The best kernels for this CPU ([`Isa::detect`]).
    pub fn detect() -> Kernels {
        Kernels { isa: Isa::detect() }
    }

    /// The kernels of `isa`, if this CPU can run them.
    pub fn with_isa(isa: Isa) -> Option<Kernels> {
        isa.supported().then_some(Kernels { isa })
    }

    /// The instruction set in use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Quantises `x` (a multiple of 32 long) into `out` (`x.len() / 32`
    /// blocks); the same blocks on every instruction set.
    ///
    /// # Panics
    /// If the lengths disagree.
    pub fn quantize(&self, x: &[f32], out: &mut [BlockQ8]) {
        assert_eq!(x.len(), out.len() * BLOCK, "quantize: lengths");
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Kernels` holds a non-scalar `isa` only when
            // `Isa::supported` found AVX2 and FMA; lengths checked above.
            Isa::Avx2 | Isa::Avx512Vnni => unsafe { x86::quantize_q8_avx2(x, out) },
            _ => quantize_q8(x, out),
        }
    }

    /// `out[t] = Σ w · xs[t·nb .. (t+1)·nb]` for `t < out.len()`: one
    /// weight row of `nb` blocks of `ty` against `out.len()` activation
    /// rows, the weight unpacked once per four rows.
    ///
    /// # Panics
    /// If `w` or `xs` are shorter than the shapes say.
    pub fn dot_multi(&self, ty: QType, w: &[u8], xs: &[BlockQ8], nb: usize, out: &mut [f32]) {
        let n = out.len();
        assert!(
            w.len() >= nb * ty.block_bytes() && xs.len() >= n * nb,
            "dot_multi: shapes"
        );
        match self.isa {
            Isa::Scalar => {
                for (t, o) in out.iter_mut().enumerate() {
                    *o = dot_scalar(ty, &w[..nb * ty.block_bytes()], &xs[t * nb..(t + 1) * nb]);
                }
            }
            #[cfg(target_arch = "x86_64")]
            isa => {
                let mut t = 0;
                while t < n {
                    let xs_t = &xs[t * nb..];
                    let o = &mut out[t..];
                    let k = (n - t).min(4);
                    let vnni = isa == Isa::Avx512Vnni;
                    // SAFETY: the features of `isa` were detected at run
                    // time (`Kernels` is built only for a supported `isa`);
                    // `w` holds `nb` blocks and `xs_t` at least `k · nb`
                    // blocks for the `k` rows handed over (checked above).
                    unsafe {
                        match (k, vnni) {
                            (1, true) => x86::dot_multi_vnni::<1>(ty, w, xs_t, nb, o),
                            (1, false) => x86::dot_multi_avx2::<1>(ty, w, xs_t, nb, o),
                            (2, true) => x86::dot_multi_vnni::<2>(ty, w, xs_t, nb, o),
                            (2, false) => x86::dot_multi_avx2::<2>(ty, w, xs_t, nb, o),
                            (3, true) => x86::dot_multi_vnni::<3>(ty, w, xs_t, nb, o),
                            (3, false) => x86::dot_multi_avx2::<3>(ty, w, xs_t, nb, o),
                            (_, true) => x86::dot_multi_vnni::<4>(ty, w, xs_t, nb, o),
                            (_, false) => x86::dot_multi_avx2::<4>(ty, w, xs_t, nb, o),
                        }
                    }
                    t += k;
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!("only the scalar path exists on this architecture"),
        }
    }

    /// `Σ a_i b_i` over the common length.
    pub fn dot_f32(&self, a: &[f32], b: &[f32]) -> f32 {
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX2 and FMA were detected (every non-scalar `isa`
            // includes them).
            Isa::Avx2 | Isa::Avx512Vnni => unsafe { x86::dot_f32_avx2(a, b) },
            _ => a.iter().zip(b).map(|(x, y)| x * y).sum(),
        }
    }

    /// Attention scores of `g` queries against a run of keys:
    /// `out[i · stride + j] = q[i · d ..][..d] · keys[j · d ..][..d]` for
    /// `i < g`, `j < keys.len() / d`. Each key is read once for all `g`
    /// queries (the query heads that share one KV head).
    ///
    /// # Panics
    /// If `q` is shorter than `g · d`, `keys.len()` not a multiple of `d`,
    /// or `out` shorter than `(g − 1) · stride + keys.len() / d`.
    pub fn attn_scores(
        &self,
        q: &[f32],
        g: usize,
        keys: &[f32],
        d: usize,
        out: &mut [f32],
        stride: usize,
    ) {
        assert!(
            d > 0 && keys.len().is_multiple_of(d),
            "attn_scores: key shape"
        );
        let m = keys.len() / d;
        if g == 0 || m == 0 {
            return;
        }
        assert!(
            q.len() >= g * d && stride >= m && out.len() >= (g - 1) * stride + m,
            "attn_scores: shapes"
        );
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 | Isa::Avx512Vnni if d.is_multiple_of(8) => {
                let mut i = 0;
                while i < g {
                    let k = (g - i).min(4);
                    let (qi, oi) = (&q[i * d..], &mut out[i * stride..]);
                    // SAFETY: AVX2 and FMA were detected; d % 8 == 0 and
                    // the lengths were checked above for all g queries.
                    unsafe {
                        match k {
                            1 => x86::attn_scores_avx2::<1>(qi, keys, d, m, oi, stride),
                            2 => x86::attn_scores_avx2::<2>(qi, keys, d, m, oi, stride),
                            3 => x86::attn_scores_avx2::<3>(qi, keys, d, m, oi, stride),
                            _ => x86::attn_scores_avx2::<4>(qi, keys, d, m, oi, stride),
                        }
                    }
                    i += k;
                }
            }
            _ => {
                for i in 0..g {
                    let qi = &q[i * d..(i + 1) * d];
                    for (j, kr) in keys.chunks_exact(d).enumerate() {
                        out[i * stride + j] = qi.iter().zip(kr).map(|(a, b)| a * b).sum();
                    }
                }
            }
        }
    }

    /// Attention scores of `g` queries against keys stored
    /// dimension-major (a page of cached keys, transposed):
    /// `out[i · stride + j] = Σ_c q[i · d + c] · keys_t[c · ld + j]` for
    /// `i < g`, `j < m`. The SIMD paths hold a vector of slots per
    /// accumulator, so no horizontal sum is needed (4 fused multiply-adds
    /// per score at `d = 64` on AVX-512, against ≈ 12 operations for
    /// [`Kernels::attn_scores`] on row-major keys).
    ///
    /// # Panics
    /// If `m > ld`, `keys_t` is shorter than `(d − 1) · ld + m`, `q`
    /// shorter than `g · d`, or `out` shorter than `(g − 1) · stride + m`.
    #[allow(clippy::too_many_arguments)]
    pub fn attn_scores_t(
        &self,
        q: &[f32],
        g: usize,
        keys_t: &[f32],
        ld: usize,
        d: usize,
        m: usize,
        out: &mut [f32],
        stride: usize,
    ) {
        if g == 0 || m == 0 || d == 0 {
            return;
        }
        assert!(
            m <= ld
                && keys_t.len() >= (d - 1) * ld + m
                && q.len() >= g * d
                && stride >= m
                && out.len() >= (g - 1) * stride + m,
            "attn_scores_t: shapes"
        );
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 | Isa::Avx512Vnni => {
                let wide = self.isa == Isa::Avx512Vnni;
                let mut i = 0;
                while i < g {
                    let k = (g - i).min(6);
                    let (qi, oi) = (&q[i * d..], &mut out[i * stride..]);
                    macro_rules! go {
                        ($f:ident, $k:literal) => {
                            x86::$f::<$k, 2>(qi, keys_t, ld, d, m, oi, stride)
                        };
                    }
                    // SAFETY: AVX2 and FMA (and AVX-512 F for `wide`) were
                    // detected; the lengths were checked above.
                    unsafe {
                        match (k, wide) {
                            (1, true) => go!(attn_scores_t_avx512, 1),
                            (2, true) => go!(attn_scores_t_avx512, 2),
                            (3, true) => go!(attn_scores_t_avx512, 3),
                            (4, true) => go!(attn_scores_t_avx512, 4),
                            (5, true) => go!(attn_scores_t_avx512, 5),
                            (_, true) => go!(attn_scores_t_avx512, 6),
                            (1, false) => go!(attn_scores_t_avx2, 1),
                            (2, false) => go!(attn_scores_t_avx2, 2),
                            (3, false) => go!(attn_scores_t_avx2, 3),
                            (4, false) => go!(attn_scores_t_avx2, 4),
                            (5, false) => go!(attn_scores_t_avx2, 5),
                            (_, false) => go!(attn_scores_t_avx2, 6),
                        }
                    }
                    i += k;
                }
            }
            _ => {
                for i in 0..g {
                    for j in 0..m {
                        out[i * stride + j] =
                            (0..d).map(|c| q[i * d + c] * keys_t[c * ld + j]).sum();
                    }
                }
            }
        }
    }

    /// The attention-weighted sum of a run of values:
    /// `out[i · d + c] += Σ_j p[i · stride + j] · values[j · d + c]` for
    /// `i < g`. Each value row is read once for all `g` weight rows.
    ///
    /// # Panics
    /// If `values.len()` is not a multiple of `d`, `p` shorter than
    /// `(g − 1) · stride + values.len() / d`, or `out` shorter than `g · d`.
    pub fn attn_weighted_sum(
        &self,
        p: &[f32],
        stride: usize,
        g: usize,
        values: &[f32],
        d: usize,
        out: &mut [f32],
    ) {
        assert!(
            d > 0 && values.len().is_multiple_of(d),
            "attn_weighted_sum: value shape"
        );
        let m = values.len() / d;
        if g == 0 || m == 0 {
            return;
        }
        assert!(
            stride >= m && p.len() >= (g - 1) * stride + m && out.len() >= g * d,
            "attn_weighted_sum: shapes"
        );
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Vnni if d.is_multiple_of(64) => {
                let mut i = 0;
                while i < g {
                    let k = (g - i).min(4);
                    let (pi, oi) = (&p[i * stride..], &mut out[i * d..]);
                    // SAFETY: AVX-512 F was detected (part of
                    // `Isa::Avx512Vnni`); d % 64 == 0 and the lengths were
                    // checked above.
                    unsafe {
                        match k {
                            1 => {
                                x86::attn_weighted_sum_avx512::<1, 4>(pi, stride, values, d, m, oi)
                            }
                            2 => {
                                x86::attn_weighted_sum_avx512::<2, 4>(pi, stride, values, d, m, oi)
                            }
                            3 => {
                                x86::attn_weighted_sum_avx512::<3, 4>(pi, stride, values, d, m, oi)
                            }
                            _ => {
                                x86::attn_weighted_sum_avx512::<4, 4>(pi, stride, values, d, m, oi)
                            }
                        }
                    }
                    i += k;
                }
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 | Isa::Avx512Vnni if d.is_multiple_of(8) => {
                let wide = d.is_multiple_of(32);
                let mut i = 0;
                while i < g {
                    let k = (g - i).min(3);
                    let (pi, oi) = (&p[i * stride..], &mut out[i * d..]);
                    // SAFETY: AVX2 and FMA were detected; d % 8 == 0 (d %
                    // 32 == 0 for W = 4) and the lengths were checked above.
                    unsafe {
                        match (k, wide) {
                            (1, true) => {
                                x86::attn_weighted_sum_avx2::<1, 4>(pi, stride, values, d, m, oi)
                            }
                            (2, true) => {
                                x86::attn_weighted_sum_avx2::<2, 4>(pi, stride, values, d, m, oi)
                            }
                            (_, true) => {
                                x86::attn_weighted_sum_avx2::<3, 4>(pi, stride, values, d, m, oi)
                            }
                            (1, false) => {
                                x86::attn_weighted_sum_avx2::<1, 1>(pi, stride, values, d, m, oi)
                            }
                            (2, false) => {
                                x86::attn_weighted_sum_avx2::<2, 1>(pi, stride, values, d, m, oi)
                            }
                            (_, false) => {
                                x86::attn_weighted_sum_avx2::<3, 1>(pi, stride, values, d, m, oi)
                            }
                        }
                    }
                    i += k;
                }
            }
            _ => {
                for i in 0..g {
                    let o = &mut out[i * d..(i + 1) * d];
                    for (j, vr) in values.chunks_exact(d).enumerate() {
                        let w = p[i * stride + j];
                        for (oc, &v) in o.iter_mut().zip(vr) {
                            *oc += w * v;
                        }
                    }
                }
            }
        }
    }

    /// `x[i] = exp(x[i] − shift)`, returning `Σ x[i]`: the exponentials
    /// of a softmax. The SIMD paths use a polynomial `exp` within 2 ulp of
    /// the scalar path's (`f32::exp`) on `[−87, 0]`; below −87 they give
    /// ≈ 1e−38 (a weight of 0 in any softmax whose largest term is 1).
    pub fn exp_sum(&self, x: &mut [f32], shift: f32) -> f32 {
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX-512 F was detected (part of `Isa::Avx512Vnni`).
            Isa::Avx512Vnni => unsafe { x86::exp_sum_avx512(x, shift) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX2 and FMA were detected.
            Isa::Avx2 => unsafe { x86::exp_sum_avx2(x, shift) },
            _ => {
                let mut s = 0f32;
                for v in x.iter_mut() {
                    *v = (*v - shift).exp();
                    s += *v;
                }
                s
            }
        }
    }

    /// `y += a · x` over the common length.
    pub fn axpy(&self, y: &mut [f32], a: f32, x: &[f32]) {
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX2 and FMA were detected.
            Isa::Avx2 | Isa::Avx512Vnni => unsafe { x86::axpy_avx2(y, a, x) },
            _ => {
                for (yi, xi) in y.iter_mut().zip(x) {
                    *yi += a * xi;
                }
            }
        }
    }

    /// `out[t · rows + r] = Σ_c w[r, c] · x[t, c]` for the `x.rows()`
    /// activation rows and the weight rows `w.rows()`; the weight rows are
    /// split over `pool` (or run on the calling thread when `None`).
    /// `scratch` is reused between calls (for a matrix in the row layout
    /// it holds the row-major result before the transpose when
    /// `x.rows() > 1`; the interleaved layout writes `out` directly).
    ///
    /// # Panics
    /// If `x.cols() != w.cols()` or `out` is not `x.rows() · w.rows()`.
    pub fn matmul(
        &self,
        pool: Option<&rayon::ThreadPool>,
        w: &QMatrix,
        x: &Acts,
        out: &mut [f32],
        scratch: &mut Vec<f32>,
    ) {
        let (n, rows, nb) = (x.rows(), w.rows(), w.cols() / BLOCK);
        assert_eq!(x.cols(), w.cols(), "matmul: inner dimensions");
        assert_eq!(out.len(), n * rows, "matmul: output length");
        if n == 0 || rows == 0 {
            return;
        }
        let threads = pool.map_or(1, |p| p.current_num_threads()).max(1);
        if w.packed {
            self.matmul_packed(pool, threads, w, x, out);
            return;
        }
        let rb = w.row_bytes();
        // Rows per task: a few tasks per thread so that uneven cores
        // balance, at least 16 rows so that a task outweighs its dispatch.
        let chunk = (rows / (threads * 4)).max(16).min(rows);
        let ty = w.ty();
        let run_rows = |r0: usize, dst: &mut [f32]| {
            // dst is row-major [row][token]
            for (i, d) in dst.chunks_exact_mut(n).enumerate() {
                let r = r0 + i;
                self.dot_multi(ty, &w.data[r * rb..(r + 1) * rb], &x.blocks, nb, d);
            }
        };
        // every element of the target is written: resized, not zeroed
        let target: &mut [f32] = if n == 1 {
            out
        } else {
            scratch.resize(n * rows, 0.0);
            scratch
        };
        match pool {
            Some(p) if threads > 1 && rows > chunk => p.install(|| {
                target
                    .par_chunks_mut(chunk * n)
                    .enumerate()
                    .for_each(|(c, dst)| run_rows(c * chunk, dst));
            }),
            _ => run_rows(0, target),
        }
        if n > 1 {
            for r in 0..rows {
                for t in 0..n {
                    out[t * rows + r] = scratch[r * n + t];
                }
            }
        }
    }
}

impl Kernels {
    /// `w` in the layout these kernels multiply fastest: the interleaved
    /// layout ([`packed`]) on AVX-512 VNNI when the rows are a multiple of
    /// 16, the GGUF row layout otherwise (returned as it is). Either
    /// layout works with every instruction set; a packed matrix on kernels
    /// without AVX-512 VNNI is multiplied row by row after rebuilding each
    /// row (slow: a fallback, not a path to choose).
    pub fn prepare(&self, w: QMatrix) -> QMatrix {
        if self.isa == Isa::Avx512Vnni && !w.packed && w.rows.is_multiple_of(packed::GROUP) {
            let mut w = w;
            packed::pack_in_place(w.ty, w.rows, w.cols / BLOCK, &mut w.data);
            w.packed = true;
            w
        } else {
            w
        }
    }

    fn matmul_packed(
        &self,
        pool: Option<&rayon::ThreadPool>,
        threads: usize,
        w: &QMatrix,
        x: &Acts,
        out: &mut [f32],
    ) {
        use packed::GROUP;
        let (n, rows, nb) = (x.rows(), w.rows(), w.cols() / BLOCK);
        let groups = rows / GROUP;
        let gbytes = nb * packed::group_block_bytes(w.ty);
        debug_assert_eq!(out.len(), n * rows);
        // Each task writes the 16 columns of its groups in every token's
        // row of `out` (strided, so not a slice of its own).
        let dst = OutPtr(out.as_mut_ptr());
        let run = |gs: std::ops::Range<usize>, row: &mut Vec<u8>| {
            for g in gs {
                let wg = &w.data[g * gbytes..(g + 1) * gbytes];
                if self.isa != Isa::Avx512Vnni {
                    let mut o = vec![0f32; n];
                    for j in 0..GROUP {
                        packed::unpack_row(w.ty, nb, &w.data, g * GROUP + j, row);
                        self.dot_multi(w.ty, row, &x.blocks, nb, &mut o);
                        for (t, &v) in o.iter().enumerate() {
                            // SAFETY: t < n and g · 16 + j < rows, an
                            // element of `out` only this group's task writes.
                            unsafe { *dst.at(t * rows + g * GROUP + j) = v };
                        }
                    }
                    continue;
                }
                #[cfg(target_arch = "x86_64")]
                {
                    let mut t = 0;
                    while t < n {
                        let k = (n - t).min(8);
                        let xs = x.blocks[t * nb..(t + k) * nb].as_ptr();
                        // SAFETY: AVX-512 F/BW/VNNI and F16C were detected
                        // (`Isa::Avx512Vnni`); `wg` is the group's `nb`
                        // group-blocks, `xs` the `k · nb` blocks of rows
                        // t..t+k; the kernel writes 16 floats at each of
                        // `dst + (t + i) · rows + 16 g`, i < k: inside `out`
                        // (n · rows long) and written by this task only.
                        unsafe {
                            gemm_group(
                                w.ty,
                                k,
                                wg.as_ptr(),
                                nb,
                                xs,
                                dst.at(t * rows + g * GROUP),
                                rows,
                            )
                        };
                        t += k;
                    }
                }
            }
        };
        let chunk = (groups / (threads * 4)).max(1);
        match pool {
            Some(p) if threads > 1 && groups > chunk => p.install(|| {
                (0..groups.div_ceil(chunk))
                    .into_par_iter()
                    .for_each_init(Vec::new, |row, c| {
                        run(c * chunk..((c + 1) * chunk).min(groups), row)
                    });
            }),
            _ => run(0..groups, &mut Vec::new()),
        }
    }
}

/// `out`'s pointer, shared by the tasks of [`Kernels::matmul`] that write
/// disjoint elements of it.
struct OutPtr(*mut f32);

// SAFETY: only used to write disjoint elements from the tasks of one
// product, which all end before the product returns.
unsafe impl Send for OutPtr {}
// SAFETY: as for `Send`: no element is written by two tasks, none is read.
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// The element at `i` (taken through a method so that closures
    /// capture the whole `Sync` wrapper, not its raw field).
    ///
    /// # Safety
    /// `i` must lie inside the slice the pointer was taken from.
    unsafe fn at(&self, i: usize) -> *mut f32 {
        // SAFETY: `i` lies inside the pointer's slice (the caller's
        // contract), so the offset stays in the same allocation.
        unsafe { self.0.add(i) }
    }
}

/// One group of an interleaved matrix times `k ≤ 8` activation rows.
///
/// # Safety
/// As [`x86::gemm_group_vnni`].
#[cfg(target_arch = "x86_64")]
unsafe fn gemm_group(
    ty: QType,
    k: usize,
    g: *const u8,
    nb: usize,
    xs: *const BlockQ8,
    o: *mut f32,
    ostride: usize,
) {
    macro_rules! by_rows {
        ($q:literal) => {
            // SAFETY: forwarded from the caller's contract.
            unsafe {
                match k {
                    1 => x86::gemm_group_vnni::<$q, 1>(g, nb, xs, o, ostride),
                    2 => x86::gemm_group_vnni::<$q, 2>(g, nb, xs, o, ostride),
                    3 => x86::gemm_group_vnni::<$q, 3>(g, nb, xs, o, ostride),
                    4 => x86::gemm_group_vnni::<$q, 4>(g, nb, xs, o, ostride),
                    5 => x86::gemm_group_vnni::<$q, 5>(g, nb, xs, o, ostride),
                    6 => x86::gemm_group_vnni::<$q, 6>(g, nb, xs, o, ostride),
                    7 => x86::gemm_group_vnni::<$q, 7>(g, nb, xs, o, ostride),
                    _ => x86::gemm_group_vnni::<$q, 8>(g, nb, xs, o, ostride),
                }
            }
        };
    }
    match ty {
        QType::Q4_0 => by_rows!(0),
        QType::Q4_1 => by_rows!(1),
        QType::Q8_0 => by_rows!(2),
    }
}

/// Activation rows quantised for [`Kernels::matmul`]: `rows` rows of
/// `cols / 32` [`BlockQ8`] blocks each.
#[derive(Debug, Clone, Default)]
pub struct Acts {
    blocks: Vec<BlockQ8>,
    rows: usize,
    cols: usize,
}

impl Acts {
    /// Empty, reusable storage.
    pub fn new() -> Acts {
        Acts::default()
    }

    /// Quantises `x` (`rows × cols`, row-major; `cols` a multiple of 32)
    /// into `self`, reusing its storage.
    ///
    /// # Panics
    /// If `cols` is not a multiple of 32 or `x.len()` not a multiple of
    /// `cols`.
    pub fn quantize(&mut self, k: &Kernels, x: &[f32], cols: usize) {
        assert!(
            cols.is_multiple_of(BLOCK) && cols > 0 && x.len().is_multiple_of(cols),
            "Acts::quantize: shapes"
        );
        self.rows = x.len() / cols;
        self.cols = cols;
        self.blocks.clear();
        self.blocks.resize(x.len() / BLOCK, BlockQ8::default());
        k.quantize(x, &mut self.blocks);
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Values per row.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The blocks, row after row.
    pub fn blocks(&self) -> &[BlockQ8] {
        &self.blocks
    }
}

/// A `(rows, cols)` weight matrix of [`QType`] blocks, each row `cols / 32`
/// contiguous blocks (GGUF's layout of a 2-D tensor).
#[derive(Clone, PartialEq, Eq)]
pub struct QMatrix {
    ty: QType,
    rows: usize,
    cols: usize,
    data: Vec<u8>,
    /// Interleaved ([`packed`]) rather than GGUF's row layout.
    packed: bool,
}

impl fmt::Debug for QMatrix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let layout = if self.packed { ", interleaved" } else { "" };
        write!(
            f,
            "QMatrix({} {}×{}{layout})",
            self.ty.name(),
            self.rows,
            self.cols
        )
    }
}

impl QMatrix {
    /// A matrix over `data` (GGUF bytes); errors when `cols` is not a
    /// multiple of 32 or `data` is not exactly `rows · cols / 32` blocks.
    pub fn new(ty: QType, rows: usize, cols: usize, data: Vec<u8>) -> Result<QMatrix, KernelError> {
        if !cols.is_multiple_of(BLOCK) {
            return Err(KernelError(format!(
                "{} matrix with {cols} columns: not a multiple of {BLOCK}",
                ty.name()
            )));
        }
        let want = rows
            .checked_mul(cols / BLOCK)
            .and_then(|b| b.checked_mul(ty.block_bytes()));
        if want != Some(data.len()) {
            return Err(KernelError(format!(
                "{} matrix {rows}×{cols} needs {want:?} bytes, got {}",
                ty.name(),
                data.len()
            )));
        }
        Ok(QMatrix {
            ty,
            rows,
            cols,
            data,
            packed: false,
        })
    }

    /// Quantises a dense row-major `rows × cols` matrix to `Q8_0`.
    pub fn from_f32_q8_0(rows: usize, cols: usize, x: &[f32]) -> Result<QMatrix, KernelError> {
        if x.len() != rows * cols || !cols.is_multiple_of(BLOCK) {
            return Err(KernelError(format!(
                "from_f32_q8_0: {} values for {rows}×{cols}",
                x.len()
            )));
        }
        QMatrix::new(QType::Q8_0, rows, cols, quantize_q8_0(x))
    }

    /// The rows of `parts` stacked (same type and width, GGUF's row
    /// layout), e.g. the query, key and value projections as one matrix;
    /// `None` otherwise.
    pub fn stack(parts: &[&QMatrix]) -> Option<QMatrix> {
        let first = parts.first()?;
        if parts
            .iter()
            .any(|p| p.ty != first.ty || p.cols != first.cols || p.packed)
        {
            return None;
        }
        let mut data = Vec::with_capacity(parts.iter().map(|p| p.data.len()).sum());
        for p in parts {
            data.extend_from_slice(&p.data);
        }
        Some(QMatrix {
            ty: first.ty,
            rows: parts.iter().map(|p| p.rows).sum(),
            cols: first.cols,
            data,
            packed: false,
        })
    }

    /// The block type.
    pub fn ty(&self) -> QType {
        self.ty
    }
    /// Number of rows (outputs).
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of columns (inputs).
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.cols / BLOCK * self.ty.block_bytes()
    }
    /// Whether the matrix is in the interleaved layout ([`packed`],
    /// made by [`Kernels::prepare`]).
    pub fn is_packed(&self) -> bool {
        self.packed
    }
    /// The GGUF bytes of row `r`, when the matrix is in GGUF's row layout
    /// (`None` when interleaved: [`QMatrix::dequantize_row`] serves both).
    ///
    /// # Panics
    /// If `r >= rows`.
    pub fn row(&self, r: usize) -> Option<&[u8]> {
        assert!(r < self.rows, "QMatrix::row: row {r} of {}", self.rows);
        let rb = self.row_bytes();
        (!self.packed).then(|| &self.data[r * rb..(r + 1) * rb])
    }
    /// Row `r` dequantised into `out` (`cols` values), in either layout.
    ///
    /// # Panics
    /// If `r >= rows` or `out.len() != cols`.
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) {
        match self.row(r) {
            Some(b) => dequantize(self.ty, b, out),
            None => {
                let mut b = Vec::with_capacity(self.row_bytes());
                packed::unpack_row(self.ty, self.cols / BLOCK, &self.data, r, &mut b);
                dequantize(self.ty, &b, out);
            }
        }
    }
    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.data.len()
    }
}
