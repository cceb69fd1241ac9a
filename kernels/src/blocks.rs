//! Block formats, as GGUF (ggml) stores them, and the 8-bit activation
//! blocks the dot products take. Everything here is scalar and is the
//! reference the SIMD kernels are tested against.
//!
//! | type | bytes per 32 weights | layout | value |
//! |---|---|---|---|
//! | [`QType::Q4_0`] | 18 | `d: f16, qs: [u8; 16]` | `d · (q − 8)` |
//! | [`QType::Q4_1`] | 20 | `d: f16, m: f16, qs: [u8; 16]` | `d · q + m` |
//! | [`QType::Q8_0`] | 34 | `d: f16, qs: [i8; 32]` | `d · q` |
//!
//! In the 4-bit types, byte `j` of `qs` holds weight `j` in its low nibble
//! and weight `j + 16` in its high nibble.
//!
//! Activations are quantised per block of 32 to [`BlockQ8`]: a scale
//! `d = max|x| / 127`, 32 signed bytes `round(x / d)`, and `s = d · Σ q`,
//! which folds the offsets of `Q4_0` (−8) and `Q4_1` (`m`) into one
//! multiply per block (llama.cpp's `Q8_1`, with f32 instead of f16
//! fields).

use half::f16;

/// Weights per block, in every type here.
pub const BLOCK: usize = 32;

/// A block-quantised (or dense) weight type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum QType {
    /// 4-bit, one f16 scale per block, offset −8.
    Q4_0,
    /// 4-bit, f16 scale and f16 minimum per block.
    Q4_1,
    /// 8-bit, one f16 scale per block.
    Q8_0,
}

impl QType {
    /// Bytes of one block of [`BLOCK`] weights.
    pub const fn block_bytes(self) -> usize {
        match self {
            QType::Q4_0 => 18,
            QType::Q4_1 => 20,
            QType::Q8_0 => 34,
        }
    }

    /// The name GGUF uses.
    pub const fn name(self) -> &'static str {
        match self {
            QType::Q4_0 => "Q4_0",
            QType::Q4_1 => "Q4_1",
            QType::Q8_0 => "Q8_0",
        }
    }

    /// The type of a ggml type id (`GGML_TYPE_Q4_0` = 2, `Q4_1` = 3,
    /// `Q8_0` = 8), if it is one of these.
    pub const fn from_ggml(id: u32) -> Option<QType> {
        match id {
            2 => Some(QType::Q4_0),
            3 => Some(QType::Q4_1),
            8 => Some(QType::Q8_0),
            _ => None,
        }
    }
}

/// 32 activations quantised to 8 bits: `x ≈ d · qs[i]`, with `s = d · Σ qs`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C)]
pub struct BlockQ8 {
    /// Scale.
    pub d: f32,
    /// `d` times the sum of `qs`.
    pub s: f32,
    /// The quantised values.
    pub qs: [i8; BLOCK],
}

impl Default for BlockQ8 {
    fn default() -> Self {
        BlockQ8 {
            d: 0.0,
            s: 0.0,
            qs: [0; BLOCK],
        }
    }
}

/// Round half away from zero as `trunc(x + copysign(0.5, x))` (what the
/// SIMD quantiser computes, so both give the same blocks).
#[inline]
fn round_half_away(x: f32) -> f32 {
    (x + 0.5f32.copysign(x)).trunc()
}

#[inline]
pub(crate) fn f16_at(b: &[u8], i: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[i], b[i + 1]])).to_f32()
}

/// Quantises `x` (a multiple of [`BLOCK`] long) into `out`
/// (`x.len() / BLOCK` blocks).
///
/// # Panics
/// If the lengths disagree (a caller's bug, not input data).
pub fn quantize_q8(x: &[f32], out: &mut [BlockQ8]) {
    assert_eq!(x.len(), out.len() * BLOCK, "quantize_q8: lengths");
    for (xb, o) in x.chunks_exact(BLOCK).zip(out.iter_mut()) {
        let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        let mut sum = 0i32;
        for (q, &v) in o.qs.iter_mut().zip(xb) {
            let r = round_half_away(v * id) as i32;
            *q = r.clamp(-127, 127) as i8;
            sum += *q as i32;
        }
        o.d = d;
        o.s = d * sum as f32;
    }
}

/// Dequantises `nb` blocks of type `ty` from `w` into `out` (`nb · 32`
/// values).
///
/// # Panics
/// If the lengths disagree.
pub fn dequantize(ty: QType, w: &[u8], out: &mut [f32]) {
    let bb = ty.block_bytes();
    assert_eq!(w.len() / bb * BLOCK, out.len(), "dequantize: lengths");
    for (b, o) in w.chunks_exact(bb).zip(out.chunks_exact_mut(BLOCK)) {
        match ty {
            QType::Q4_0 => {
                let d = f16_at(b, 0);
                for j in 0..16 {
                    o[j] = d * ((b[2 + j] & 0x0F) as i32 - 8) as f32;
                    o[j + 16] = d * ((b[2 + j] >> 4) as i32 - 8) as f32;
                }
            }
            QType::Q4_1 => {
                let (d, m) = (f16_at(b, 0), f16_at(b, 2));
                for j in 0..16 {
                    o[j] = d * (b[4 + j] & 0x0F) as f32 + m;
                    o[j + 16] = d * (b[4 + j] >> 4) as f32 + m;
                }
            }
            QType::Q8_0 => {
                let d = f16_at(b, 0);
                for j in 0..BLOCK {
                    o[j] = d * (b[2 + j] as i8) as f32;
                }
            }
        }
    }
}

/// Quantises `x` (a multiple of [`BLOCK`] long) to `Q8_0` blocks, as
/// ggml's reference quantiser does (used to re-block weights of types
/// without a kernel here).
pub fn quantize_q8_0(x: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(x.len() / BLOCK * 34);
    for xb in x.chunks_exact(BLOCK) {
        let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        out.extend_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
        for &v in xb {
            out.push(((v * id).round() as i32).clamp(-127, 127) as i8 as u8);
        }
    }
    out
}

/// `Σ_i w_i · x_i` over `x.len()` blocks, scalar: the reference of every
/// SIMD kernel. Per block the integer sum is exact; the scales are applied
/// in f32.
pub fn dot_scalar(ty: QType, w: &[u8], x: &[BlockQ8]) -> f32 {
    let bb = ty.block_bytes();
    let mut acc = 0f32;
    for (b, a) in w.chunks_exact(bb).zip(x) {
        match ty {
            QType::Q4_0 | QType::Q4_1 => {
                let off = if ty == QType::Q4_0 { 2 } else { 4 };
                let mut s = 0i32;
                for j in 0..16 {
                    s += (b[off + j] & 0x0F) as i32 * a.qs[j] as i32;
                    s += (b[off + j] >> 4) as i32 * a.qs[j + 16] as i32;
                }
                let d = f16_at(b, 0);
                let m = if ty == QType::Q4_0 {
                    -8.0 * d
                } else {
                    f16_at(b, 2)
                };
                acc += d * a.d * s as f32 + m * a.s;
            }
            QType::Q8_0 => {
                let mut s = 0i32;
                for j in 0..BLOCK {
                    s += (b[2 + j] as i8) as i32 * a.qs[j] as i32;
                }
                acc += f16_at(b, 0) * a.d * s as f32;
            }
        }
    }
    acc
}
