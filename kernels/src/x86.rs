//! x86-64 kernels: AVX2 (+FMA, F16C) and AVX-512 VNNI (256-bit lanes,
//! `vpdpbusd`). Each is compiled with `#[target_feature]` and called only
//! after [`crate::Isa::detect`] found the features at run time, so a
//! default build (no `target-cpu` flag) runs them where the CPU has them.
//!
//! The integer part of every block product is exact (the same sum as the
//! scalar reference); the scales are applied with f32 fused multiply-adds
//! in 8 lanes, so results differ from the scalar path only by the order of
//! f32 additions.

#![allow(unsafe_op_in_unsafe_fn)]

use std::arch::x86_64::*;

use crate::blocks::{BlockQ8, QType, BLOCK};

#[inline(always)]
unsafe fn hsum(v: __m256) -> f32 {
    let lo = _mm256_castps256_ps128(v);
    let hi = _mm256_extractf128_ps(v, 1);
    let s = _mm_add_ps(lo, hi);
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    _mm_cvtss_f32(s)
}

#[inline(always)]
unsafe fn half(p: *const u8) -> f32 {
    let bits = u16::from_le_bytes([*p, *p.add(1)]) as i32;
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits)))
}

/// The 32 weights of a 4-bit block as bytes 0..15, in activation order.
#[inline(always)]
unsafe fn nibbles(qs: *const u8) -> __m256i {
    let q = _mm_loadu_si128(qs as *const __m128i);
    let m4 = _mm_set1_epi8(0x0F);
    let lo = _mm_and_si128(q, m4);
    let hi = _mm_and_si128(_mm_srli_epi16(q, 4), m4);
    _mm256_set_m128i(hi, lo)
}

macro_rules! dot_multi_impl {
    ($name:ident, $features:literal, $udot:ident) => {
        /// `out[t] = Σ w · xs[t]` for `N` activation rows of `nb` blocks
        /// each, the weight block unpacked once for all `N`.
        ///
        /// # Safety
        /// The CPU must have the enabled features; `w` holds `nb` blocks of
        /// `ty`, `xs` holds `N · nb` blocks.
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn $name<const N: usize>(
            ty: QType,
            w: &[u8],
            xs: &[BlockQ8],
            nb: usize,
            out: &mut [f32],
        ) {
            debug_assert!(w.len() >= nb * ty.block_bytes() && xs.len() >= N * nb);
            let bb = ty.block_bytes();
            let mut acc = [_mm256_setzero_ps(); N];
            let mut off = [0f32; N];
            let wp = w.as_ptr();
            let xp = xs.as_ptr();
            match ty {
                QType::Q4_0 | QType::Q4_1 => {
                    let q0 = if ty == QType::Q4_0 { 2 } else { 4 };
                    for i in 0..nb {
                        let b = wp.add(i * bb);
                        let d = half(b);
                        let m = if ty == QType::Q4_0 {
                            -8.0 * d
                        } else {
                            half(b.add(2))
                        };
                        let wv = nibbles(b.add(q0));
                        for t in 0..N {
                            let a = &*xp.add(t * nb + i);
                            let av = _mm256_loadu_si256(a.qs.as_ptr() as *const __m256i);
                            let s = $udot(wv, av);
                            acc[t] = _mm256_fmadd_ps(
                                _mm256_set1_ps(d * a.d),
                                _mm256_cvtepi32_ps(s),
                                acc[t],
                            );
                            off[t] += m * a.s;
                        }
                    }
                }
                QType::Q8_0 => {
                    for i in 0..nb {
                        let b = wp.add(i * bb);
                        let d = half(b);
                        let wv = _mm256_loadu_si256(b.add(2) as *const __m256i);
                        let aw = _mm256_sign_epi8(wv, wv);
                        for t in 0..N {
                            let a = &*xp.add(t * nb + i);
                            let av = _mm256_loadu_si256(a.qs.as_ptr() as *const __m256i);
                            let s = $udot(aw, _mm256_sign_epi8(av, wv));
                            acc[t] = _mm256_fmadd_ps(
                                _mm256_set1_ps(d * a.d),
                                _mm256_cvtepi32_ps(s),
                                acc[t],
                            );
                        }
                    }
                }
            }
            for t in 0..N {
                out[t] = hsum(acc[t]) + off[t];
            }
        }
    };
}

/// Unsigned × signed bytes, summed in fours into 8 i32 lanes (AVX2:
/// `vpmaddubsw` then `vpmaddwd`; exact for the ranges used here, as the
/// pair sums stay below 2 · 128 · 127).
#[inline(always)]
unsafe fn udot_avx2(u: __m256i, s: __m256i) -> __m256i {
    _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1))
}

/// The same with one `vpdpbusd` (AVX-512 VNNI on 256-bit lanes).
#[inline(always)]
unsafe fn udot_vnni(u: __m256i, s: __m256i) -> __m256i {
    _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s)
}

dot_multi_impl!(dot_multi_avx2, "avx2,fma,f16c", udot_avx2);
dot_multi_impl!(
    dot_multi_vnni,
    "avx2,fma,f16c,avx512f,avx512vl,avx512vnni",
    udot_vnni
);

/// `Σ a_i b_i` with 4 × 8-lane FMA accumulators.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn dot_f32_avx2(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    while i + 32 <= n {
        for (k, a_k) in acc.iter_mut().enumerate() {
            *a_k = _mm256_fmadd_ps(
                _mm256_loadu_ps(pa.add(i + 8 * k)),
                _mm256_loadu_ps(pb.add(i + 8 * k)),
                *a_k,
            );
        }
        i += 32;
    }
    while i + 8 <= n {
        acc[0] = _mm256_fmadd_ps(
            _mm256_loadu_ps(pa.add(i)),
            _mm256_loadu_ps(pb.add(i)),
            acc[0],
        );
        i += 8;
    }
    let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let mut r = hsum(s);
    while i < n {
        r += *pa.add(i) * *pb.add(i);
        i += 1;
    }
    r
}

/// `y += a · x`.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn axpy_avx2(y: &mut [f32], a: f32, x: &[f32]) {
    let n = y.len().min(x.len());
    let (py, px) = (y.as_mut_ptr(), x.as_ptr());
    let av = _mm256_set1_ps(a);
    let mut i = 0;
    while i + 8 <= n {
        let v = _mm256_fmadd_ps(av, _mm256_loadu_ps(px.add(i)), _mm256_loadu_ps(py.add(i)));
        _mm256_storeu_ps(py.add(i), v);
        i += 8;
    }
    while i < n {
        *py.add(i) += a * *px.add(i);
        i += 1;
    }
}

/// Quantises `x` to [`BlockQ8`] blocks (the same values as
/// [`crate::quantize_q8`]: round half away from zero, clamp to ±127).
///
/// # Safety
/// The CPU must have AVX2; `x.len() == out.len() · 32`.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn quantize_q8_avx2(x: &[f32], out: &mut [BlockQ8]) {
    let sign = _mm256_set1_ps(-0.0);
    for (bi, o) in out.iter_mut().enumerate() {
        let p = x.as_ptr().add(bi * BLOCK);
        let v = [
            _mm256_loadu_ps(p),
            _mm256_loadu_ps(p.add(8)),
            _mm256_loadu_ps(p.add(16)),
            _mm256_loadu_ps(p.add(24)),
        ];
        let mut m = _mm256_andnot_ps(sign, v[0]);
        for vk in &v[1..] {
            m = _mm256_max_ps(m, _mm256_andnot_ps(sign, *vk));
        }
        let m128 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        let m128 = _mm_max_ps(m128, _mm_movehl_ps(m128, m128));
        let m128 = _mm_max_ss(m128, _mm_shuffle_ps(m128, m128, 1));
        let amax = _mm_cvtss_f32(m128);
        let d = amax / 127.0;
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        let idv = _mm256_set1_ps(id);
        let mut ri = [_mm256_setzero_si256(); 4];
        for (r_k, vk) in ri.iter_mut().zip(&v) {
            // round half away from zero: trunc(x + copysign(0.5, x))
            let s = _mm256_mul_ps(*vk, idv);
            let half_s = _mm256_or_ps(_mm256_and_ps(s, sign), _mm256_set1_ps(0.5));
            let r = _mm256_round_ps(
                _mm256_add_ps(s, half_s),
                _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC,
            );
            let r = _mm256_min_ps(
                _mm256_max_ps(r, _mm256_set1_ps(-127.0)),
                _mm256_set1_ps(127.0),
            );
            *r_k = _mm256_cvtps_epi32(r);
        }
        // the sum of the 32 values, then the values narrowed to bytes
        // (within ±127, so the saturating packs are exact; the packs work
        // per 128-bit lane, the permutation restores the order)
        let t = _mm256_add_epi32(
            _mm256_add_epi32(ri[0], ri[1]),
            _mm256_add_epi32(ri[2], ri[3]),
        );
        let t = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
        let t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0b01_00_11_10));
        let t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0b10_11_00_01));
        let sum = _mm_cvtsi128_si32(t);
        let p = _mm256_packs_epi16(
            _mm256_packs_epi32(ri[0], ri[1]),
            _mm256_packs_epi32(ri[2], ri[3]),
        );
        let p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(o.qs.as_mut_ptr() as *mut __m256i, p);
        o.d = d;
        o.s = d * sum as f32;
    }
}

/// `out[g · stride + j] = Σ_c q[g · d + c] · keys[j · d + c]` for `G`
/// queries and `m = keys.len() / d` keys: each key row is loaded once for
/// the `G` queries (grouped-query attention's heads of one KV head).
///
/// # Safety
/// The CPU must have AVX2 and FMA; `d % 8 == 0`, `q.len() >= G · d`,
/// `keys.len() >= m · d`, `out.len() >= (G − 1) · stride + m`.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn attn_scores_avx2<const G: usize>(
    q: &[f32],
    keys: &[f32],
    d: usize,
    m: usize,
    out: &mut [f32],
    stride: usize,
) {
    let (qp, kp, op) = (q.as_ptr(), keys.as_ptr(), out.as_mut_ptr());
    for j in 0..m {
        let kr = kp.add(j * d);
        let mut acc = [_mm256_setzero_ps(); G];
        let mut c = 0;
        while c < d {
            let kv = _mm256_loadu_ps(kr.add(c));
            for (g, a) in acc.iter_mut().enumerate() {
                *a = _mm256_fmadd_ps(_mm256_loadu_ps(qp.add(g * d + c)), kv, *a);
            }
            c += 8;
        }
        for (g, a) in acc.iter().enumerate() {
            *op.add(g * stride + j) = hsum(*a);
        }
    }
}

macro_rules! attn_weighted_sum_impl {
    ($name:ident, $features:literal, $lanes:literal, $zero:ident, $set1:ident, $fmadd:ident,
     $load:ident, $store:ident) => {
        /// `out[g · d + c] += Σ_j p[g · stride + j] · values[j · d + c]`
        /// for `G` weight rows and `m` value rows, `lanes · W` columns at
        /// a time held in registers; each value row is loaded once for the
        /// `G` weight rows.
        ///
        /// # Safety
        /// The CPU must have the enabled features; `d % (lanes · W) == 0`,
        /// `p.len() >= (G − 1) · stride + m`, `values.len() >= m · d`,
        /// `out.len() >= G · d`.
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn $name<const G: usize, const W: usize>(
            p: &[f32],
            stride: usize,
            values: &[f32],
            d: usize,
            m: usize,
            out: &mut [f32],
        ) {
            let (pp, vp, op) = (p.as_ptr(), values.as_ptr(), out.as_mut_ptr());
            let mut c = 0;
            while c < d {
                let mut acc = [[$zero(); W]; G];
                for (g, row) in acc.iter_mut().enumerate() {
                    for (u, a) in row.iter_mut().enumerate() {
                        *a = $load(op.add(g * d + c + $lanes * u));
                    }
                }
                for j in 0..m {
                    let vr = vp.add(j * d + c);
                    let mut vv = [$zero(); W];
                    for (u, v) in vv.iter_mut().enumerate() {
                        *v = $load(vr.add($lanes * u));
                    }
                    for (g, row) in acc.iter_mut().enumerate() {
                        let w = $set1(*pp.add(g * stride + j));
                        for (a, v) in row.iter_mut().zip(&vv) {
                            *a = $fmadd(w, *v, *a);
                        }
                    }
                }
                for (g, row) in acc.iter().enumerate() {
                    for (u, a) in row.iter().enumerate() {
                        $store(op.add(g * d + c + $lanes * u), *a);
                    }
                }
                c += $lanes * W;
            }
        }
    };
}

attn_weighted_sum_impl!(
    attn_weighted_sum_avx2,
    "avx2,fma",
    8,
    _mm256_setzero_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps
);
attn_weighted_sum_impl!(
    attn_weighted_sum_avx512,
    "avx2,fma,avx512f",
    16,
    _mm512_setzero_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps
);

/// `x[i] = exp(x[i] − shift)`, returning `Σ x[i]`: the exponential of a
/// softmax, 8 lanes at a time (Cephes' single-precision `expf`: a range
/// reduction by ln 2 in two parts and a degree-6 polynomial, within 2 ulp
/// of the correctly rounded value on `[−87, 0]`; arguments below −87 give
/// ≈ 1e−38 instead of a subnormal, a zero weight next to the largest
/// term's 1).
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn exp_sum_avx2(x: &mut [f32], shift: f32) -> f32 {
    let n = x.len();
    let p = x.as_mut_ptr();
    let sh = _mm256_set1_ps(shift);
    let mut sum = _mm256_setzero_ps();
    let mut i = 0;
    while i + 8 <= n {
        let v = _mm256_sub_ps(_mm256_loadu_ps(p.add(i)), sh);
        let e = exp8(v);
        _mm256_storeu_ps(p.add(i), e);
        sum = _mm256_add_ps(sum, e);
        i += 8;
    }
    let mut s = hsum(sum);
    if i < n {
        let mut tail = [f32::NEG_INFINITY; 8];
        tail[..n - i].copy_from_slice(&x[i..]);
        let v = _mm256_sub_ps(_mm256_loadu_ps(tail.as_ptr()), sh);
        _mm256_storeu_ps(tail.as_mut_ptr(), exp8(v));
        for (k, t) in tail[..n - i].iter().enumerate() {
            x[i + k] = *t;
            s += *t;
        }
    }
    s
}

/// ln 2 in two parts for the range reduction of [`exp8`] / [`exp16`]
/// (Cephes' `expf`): the high part exact in few bits, the low part the rest.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// Cephes' `expf` polynomial in `r`, highest degree first (the terms `r`
/// and 1 are added after).
const EXP_POLY: [f32; 6] = [
    1.987_569_1e-4,
    1.398_199_9e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    0.166_666_65,
    0.5,
];

#[inline(always)]
unsafe fn exp8(x: __m256) -> __m256 {
    let x = _mm256_min_ps(
        _mm256_max_ps(x, _mm256_set1_ps(-87.0)),
        _mm256_set1_ps(88.0),
    );
    // n = round(x / ln 2); r = x − n · ln 2 (ln 2 in two parts)
    let fx = _mm256_round_ps(
        _mm256_mul_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E)),
        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC,
    );
    let r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(LN2_HI), x);
    let r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(LN2_LO), r);
    let mut y = _mm256_set1_ps(EXP_POLY[0]);
    for c in &EXP_POLY[1..] {
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(*c));
    }
    let r2 = _mm256_mul_ps(r, r);
    let y = _mm256_add_ps(_mm256_fmadd_ps(y, r2, r), _mm256_set1_ps(1.0));
    // 2^n through the exponent bits (n ∈ [−126, 127] after the clamp)
    let pow2n = _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)),
        23,
    ));
    _mm256_mul_ps(y, pow2n)
}

/// `out[t · ostride + j] = Σ w_j · xs[t]` for the 16 rows `j` of one group of
/// an interleaved matrix ([`crate::packed`]) and `N` activation rows:
/// per block, each of the 8 weight quads is one 512-bit vector (4 weights
/// of each of the 16 rows), multiplied by the activation row's matching
/// 4 bytes broadcast; the scales are applied to 16 rows at once.
///
/// `Q` is the type: 0 = `Q4_0`, 1 = `Q4_1`, 2 = `Q8_0`.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VNNI and F16C; `g` points at `nb`
/// group-blocks of type `Q`; `xs` at `N · nb` blocks (row `t` from
/// `t · nb`); `out + t · ostride` at 16 writable floats for each `t < N`.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vnni")]
pub(crate) unsafe fn gemm_group_vnni<const Q: u8, const N: usize>(
    g: *const u8,
    nb: usize,
    xs: *const BlockQ8,
    out: *mut f32,
    ostride: usize,
) {
    let (sb, gb) = match Q {
        0 => (32, 288),
        1 => (64, 320),
        _ => (32, 544),
    };
    let m4 = _mm512_set1_epi8(0x0F);
    let mut acc = [_mm512_setzero_ps(); N];
    for i in 0..nb {
        let b = g.add(i * gb);
        let d = _mm512_cvtph_ps(_mm256_loadu_si256(b as *const __m256i));
        let m = match Q {
            0 => _mm512_mul_ps(d, _mm512_set1_ps(-8.0)),
            1 => _mm512_cvtph_ps(_mm256_loadu_si256(b.add(32) as *const __m256i)),
            _ => _mm512_mul_ps(d, _mm512_set1_ps(-128.0)),
        };
        let qs = b.add(sb);
        let mut wq = [_mm512_setzero_si512(); 8];
        if Q == 2 {
            for (k, w) in wq.iter_mut().enumerate() {
                *w = _mm512_loadu_si512(qs.add(64 * k) as *const _);
            }
        } else {
            for p in 0..4 {
                let v = _mm512_loadu_si512(qs.add(64 * p) as *const _);
                wq[p] = _mm512_and_si512(v, m4);
                wq[p + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            }
        }
        for (t, a_t) in acc.iter_mut().enumerate() {
            let a = &*xs.add(t * nb + i);
            let ap = a.qs.as_ptr() as *const i32;
            // two chains of four products (the integer sum is exact in
            // any order)
            let mut s0 = _mm512_setzero_si512();
            let mut s1 = _mm512_setzero_si512();
            for k in 0..4 {
                s0 = _mm512_dpbusd_epi32(
                    s0,
                    wq[2 * k],
                    _mm512_set1_epi32(ap.add(2 * k).read_unaligned()),
                );
                s1 = _mm512_dpbusd_epi32(
                    s1,
                    wq[2 * k + 1],
                    _mm512_set1_epi32(ap.add(2 * k + 1).read_unaligned()),
                );
            }
            let s = _mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1));
            *a_t = _mm512_fmadd_ps(s, _mm512_mul_ps(d, _mm512_set1_ps(a.d)), *a_t);
            *a_t = _mm512_fmadd_ps(m, _mm512_set1_ps(a.s), *a_t);
        }
    }
    for (t, a_t) in acc.iter().enumerate() {
        _mm512_storeu_ps(out.add(ostride * t), *a_t);
    }
}

macro_rules! attn_scores_t_impl {
    ($name:ident, $features:literal, $v:ty, $lanes:literal, $zero:ident, $set1:ident, $fmadd:ident,
     $load:expr, $store:expr) => {
        /// `out[g · stride + j] = Σ_c q[g · d + c] · keys_t[c · ld + j]`
        /// for `G` queries and `j < m`: keys stored dimension-major (a
        /// cache page's keys transposed), so `W` vectors of slots
        /// accumulate in lanes with no horizontal sum; each key vector is
        /// loaded once for the `G` queries.
        ///
        /// # Safety
        /// The CPU must have the enabled features; `q.len() >= G · d`,
        /// `keys_t.len() >= (d − 1) · ld + m`, `out.len() >= (G − 1) ·
        /// stride + m`, `m <= ld`.
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn $name<const G: usize, const W: usize>(
            q: &[f32],
            keys_t: &[f32],
            ld: usize,
            d: usize,
            m: usize,
            out: &mut [f32],
            stride: usize,
        ) {
            let (qp, kp, op) = (q.as_ptr(), keys_t.as_ptr(), out.as_mut_ptr());
            let mut j0 = 0;
            while j0 < m {
                let mut acc = [[$zero(); W]; G];
                for c in 0..d {
                    let kr = kp.add(c * ld + j0);
                    let mut kv = [$zero(); W];
                    for (u, v) in kv.iter_mut().enumerate() {
                        *v = $load(kr.add(u * $lanes), m.saturating_sub(j0 + u * $lanes));
                    }
                    for (g, row) in acc.iter_mut().enumerate() {
                        let qv = $set1(*qp.add(g * d + c));
                        for (a, v) in row.iter_mut().zip(&kv) {
                            *a = $fmadd(qv, *v, *a);
                        }
                    }
                }
                for (g, row) in acc.iter().enumerate() {
                    for (u, a) in row.iter().enumerate() {
                        let left = m.saturating_sub(j0 + u * $lanes);
                        $store(op.add(g * stride + j0 + u * $lanes), *a, left);
                    }
                }
                j0 += W * $lanes;
            }
        }
    };
}

/// Loads the first `min(n, 8)` floats at `p` (the rest 0; nothing past
/// them is read).
#[inline(always)]
unsafe fn load8_upto(p: *const f32, n: usize) -> __m256 {
    if n >= 8 {
        _mm256_loadu_ps(p)
    } else {
        let mut t = [0f32; 8];
        std::ptr::copy_nonoverlapping(p, t.as_mut_ptr(), n);
        _mm256_loadu_ps(t.as_ptr())
    }
}

#[inline(always)]
unsafe fn store8_upto(p: *mut f32, v: __m256, n: usize) {
    if n >= 8 {
        _mm256_storeu_ps(p, v)
    } else if n > 0 {
        let mut t = [0f32; 8];
        _mm256_storeu_ps(t.as_mut_ptr(), v);
        std::ptr::copy_nonoverlapping(t.as_ptr(), p, n);
    }
}

#[inline(always)]
unsafe fn load16_upto(p: *const f32, n: usize) -> __m512 {
    if n >= 16 {
        _mm512_loadu_ps(p)
    } else {
        _mm512_maskz_loadu_ps(((1u32 << n) - 1) as __mmask16, p)
    }
}

#[inline(always)]
unsafe fn store16_upto(p: *mut f32, v: __m512, n: usize) {
    if n >= 16 {
        _mm512_storeu_ps(p, v)
    } else {
        _mm512_mask_storeu_ps(p, ((1u32 << n) - 1) as __mmask16, v)
    }
}

attn_scores_t_impl!(
    attn_scores_t_avx2,
    "avx2,fma",
    __m256,
    8,
    _mm256_setzero_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    load8_upto,
    store8_upto
);
attn_scores_t_impl!(
    attn_scores_t_avx512,
    "avx2,fma,avx512f",
    __m512,
    16,
    _mm512_setzero_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    load16_upto,
    store16_upto
);

/// [`exp_sum_avx2`] with 16 lanes (the same polynomial, so the same
/// values lane for lane up to the order of the final sum).
///
/// # Safety
/// The CPU must have AVX-512 F.
#[target_feature(enable = "avx2,fma,avx512f")]
pub(crate) unsafe fn exp_sum_avx512(x: &mut [f32], shift: f32) -> f32 {
    let n = x.len();
    let p = x.as_mut_ptr();
    let sh = _mm512_set1_ps(shift);
    let mut sum = _mm512_setzero_ps();
    let mut i = 0;
    while i + 16 <= n {
        let e = exp16(_mm512_sub_ps(_mm512_loadu_ps(p.add(i)), sh));
        _mm512_storeu_ps(p.add(i), e);
        sum = _mm512_add_ps(sum, e);
        i += 16;
    }
    if i < n {
        let mask = ((1u32 << (n - i)) - 1) as __mmask16;
        let v = _mm512_mask_loadu_ps(_mm512_set1_ps(f32::NEG_INFINITY), mask, p.add(i));
        let e = exp16(_mm512_sub_ps(v, sh));
        _mm512_mask_storeu_ps(p.add(i), mask, e);
        sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(mask, e));
    }
    _mm512_reduce_add_ps(sum)
}

#[inline(always)]
unsafe fn exp16(x: __m512) -> __m512 {
    let x = _mm512_min_ps(
        _mm512_max_ps(x, _mm512_set1_ps(-87.0)),
        _mm512_set1_ps(88.0),
    );
    let fx = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
        _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E)),
    );
    let r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(LN2_HI), x);
    let r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(LN2_LO), r);
    let mut y = _mm512_set1_ps(EXP_POLY[0]);
    for c in &EXP_POLY[1..] {
        y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(*c));
    }
    let r2 = _mm512_mul_ps(r, r);
    let y = _mm512_add_ps(_mm512_fmadd_ps(y, r2, r), _mm512_set1_ps(1.0));
    let pow2n = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(
        _mm512_cvtps_epi32(fx),
        _mm512_set1_epi32(127),
    )));
    _mm512_mul_ps(y, pow2n)
}
