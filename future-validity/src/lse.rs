//! The log-normaliser `log Σ exp(l)` of an f32 logits row, vectorised
//! (Def. 9's one `O(|V|)` pass, and the mass the candidate cut ranks by):
//! a fast `exp2` in f32 lanes accumulated in f64 blocks, AVX2 + FMA when
//! the CPU has them (checked at run time).

/// `log Σ exp(l_i)` of f32 logits, in f64, for the full-vocabulary
/// normaliser of Def. 9 (the one O(|V|) pass of OneStep-Cheap).
///
/// The exponentials use [`fast_exp2_f32`] (relative error < 5·10⁻⁷, in
/// vectorisable f32 arithmetic) and are accumulated in f64 blocks, so the
/// returned log-normaliser is within ~5·10⁻⁷ (absolute) of the exact one —
/// far below OneStep's own approximation error — at a fraction of the
/// cost of |V| libm `exp` calls. On x86-64 CPUs with AVX2 and FMA (checked
/// at run time) the same code is compiled for 8-lane vectors.
#[cfg(test)]
pub(crate) fn log_sum_exp_f32(logits: &[f32]) -> f64 {
    log_sum_exp_max(logits).0
}

/// The log-normaliser `log Σ_V exp(l)` of a logits row as OneStep-Cheap
/// computes it once per position (vectorised fast `exp2`, absolute error
/// ~5·10⁻⁷). Public so callers can time or share it.
pub fn log_normaliser(logits: &[f32]) -> f64 {
    log_sum_exp_max(logits).0
}

/// `(log Σ exp(l_i), max_i l_i)`; see [`log_sum_exp_f32`].
pub(crate) fn log_sum_exp_max(logits: &[f32]) -> (f64, f32) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU supports the features the function is compiled for.
            return unsafe { log_sum_exp_avx2(logits) };
        }
    }
    log_sum_exp_body::<false>(logits)
}

/// The AVX2+FMA version of [`log_sum_exp_body`] with explicit 8-lane
/// intrinsics (the same clamp, rounding trick and degree-7 polynomial as
/// [`fast_exp2_f32`]). One pass over memory: blocks of 512 logits (2 KiB,
/// L1-resident) get their max first, the running sum (f64) is rescaled
/// when the running max grows, then the block's exponentials are summed
/// relative to it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn log_sum_exp_avx2(logits: &[f32]) -> (f64, f32) {
    // SAFETY: every load and store below stays inside `logits` or a local
    // array (`ptr.add(i)` with `i + 8 ≤ full ≤ block.len()`), and the
    // caller guarantees the CPU supports AVX2 and FMA.
    unsafe {
        use std::arch::x86_64::*;
        const BLOCK: usize = 512;
        let log2e = _mm256_set1_ps(std::f32::consts::LOG2_E);
        let ln2 = _mm256_set1_ps(std::f32::consts::LN_2);
        let lo = _mm256_set1_ps(-126.0);
        let magic = _mm256_set1_ps(12_582_912.0);
        let magic_bits = _mm256_set1_epi32(12_582_912.0f32.to_bits() as i32);
        let bias = _mm256_set1_epi32(127);
        let c: [__m256; 8] = [
            _mm256_set1_ps(1.0 / 5040.0),
            _mm256_set1_ps(1.0 / 720.0),
            _mm256_set1_ps(1.0 / 120.0),
            _mm256_set1_ps(1.0 / 24.0),
            _mm256_set1_ps(1.0 / 6.0),
            _mm256_set1_ps(0.5),
            _mm256_set1_ps(1.0),
            _mm256_set1_ps(1.0),
        ];
        let mut run_m = f32::NEG_INFINITY;
        let mut total = 0.0f64; // Σ exp(l − run_m) so far
        for block in logits.chunks(BLOCK) {
            let n = block.len();
            let ptr = block.as_ptr();
            let full = n / 8 * 8;
            // block max, four chains (max_ps(x, acc) returns acc for NaN x)
            let mut vm4 = [_mm256_set1_ps(f32::NEG_INFINITY); 4];
            let mut i = 0;
            while i + 32 <= full {
                for (k, v) in vm4.iter_mut().enumerate() {
                    *v = _mm256_max_ps(_mm256_loadu_ps(ptr.add(i + 8 * k)), *v);
                }
                i += 32;
            }
            while i < full {
                vm4[0] = _mm256_max_ps(_mm256_loadu_ps(ptr.add(i)), vm4[0]);
                i += 8;
            }
            let vmax = _mm256_max_ps(_mm256_max_ps(vm4[0], vm4[1]), _mm256_max_ps(vm4[2], vm4[3]));
            let mut lanes = [0.0f32; 8];
            _mm256_storeu_ps(lanes.as_mut_ptr(), vmax);
            let mut bm = f32::NEG_INFINITY;
            for &x in lanes.iter().chain(&block[full..]) {
                if x > bm {
                    bm = x;
                }
            }
            if bm > run_m {
                if run_m.is_finite() {
                    total *= ((run_m as f64 - bm as f64) * std::f64::consts::LOG2_E).exp2();
                }
                run_m = bm;
            }
            if !run_m.is_finite() {
                continue; // nothing but -inf / NaN so far (or +inf: handled below)
            }
            let vm = _mm256_set1_ps(run_m);
            let exp8 = |i: usize| {
                let y = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(ptr.add(i)), vm), log2e);
                let keep = _mm256_cmp_ps::<_CMP_GT_OQ>(y, lo); // false for NaN and y ≤ −126
                let yc = _mm256_min_ps(_mm256_max_ps(y, lo), _mm256_setzero_ps());
                let t = _mm256_add_ps(yc, magic);
                let f = _mm256_sub_ps(yc, _mm256_sub_ps(t, magic));
                let x = _mm256_mul_ps(f, ln2);
                let mut p = c[0];
                for &ck in &c[1..] {
                    p = _mm256_fmadd_ps(p, x, ck);
                }
                let nexp = _mm256_sub_epi32(_mm256_castps_si256(t), magic_bits);
                let scale =
                    _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(nexp, bias)));
                _mm256_and_ps(_mm256_mul_ps(p, scale), keep)
            };
            // f32 partial sums over at most 64 elements per lane, then f64
            let mut i = 0;
            while i < full {
                let end = (i + 128).min(full);
                let (mut a0, mut a1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
                while i + 16 <= end {
                    a0 = _mm256_add_ps(a0, exp8(i));
                    a1 = _mm256_add_ps(a1, exp8(i + 8));
                    i += 16;
                }
                while i < end {
                    a0 = _mm256_add_ps(a0, exp8(i));
                    i += 8;
                }
                let acc = _mm256_add_ps(a0, a1);
                let s4 = _mm256_add_pd(
                    _mm256_cvtps_pd(_mm256_castps256_ps128(acc)),
                    _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(acc)),
                );
                let mut sums = [0.0f64; 4];
                _mm256_storeu_pd(sums.as_mut_ptr(), s4);
                total += sums.iter().sum::<f64>();
            }
            for &l in &block[full..] {
                total += fast_exp2_f32::<false>((l - run_m) * std::f32::consts::LOG2_E) as f64;
            }
        }
        if !run_m.is_finite() {
            return (run_m as f64, run_m);
        }
        (run_m as f64 + total.ln(), run_m)
    }
}

#[inline(always)]
pub(crate) fn log_sum_exp_body<const FMA: bool>(logits: &[f32]) -> (f64, f32) {
    // max in 8 lanes (a branch-free select, so it vectorises; NaN is skipped)
    let mut mx = [f32::NEG_INFINITY; 8];
    let mut lanes = logits.chunks_exact(8);
    for c8 in &mut lanes {
        for i in 0..8 {
            mx[i] = if c8[i] > mx[i] { c8[i] } else { mx[i] };
        }
    }
    for &l in lanes.remainder() {
        mx[0] = if l > mx[0] { l } else { mx[0] };
    }
    let m = mx
        .iter()
        .fold(f32::NEG_INFINITY, |a, &b| if b > a { b } else { a });
    if !m.is_finite() {
        return (m as f64, m);
    }
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    let mut total = 0.0f64;
    for chunk in logits.chunks(64) {
        let mut acc = [0.0f32; 8];
        let mut lanes = chunk.chunks_exact(8);
        for c8 in &mut lanes {
            for i in 0..8 {
                acc[i] += fast_exp2_f32::<FMA>((c8[i] - m) * LOG2E);
            }
        }
        for &l in lanes.remainder() {
            acc[0] += fast_exp2_f32::<FMA>((l - m) * LOG2E);
        }
        total += acc.iter().map(|&x| x as f64).sum::<f64>();
    }
    (m as f64 + total.ln(), m)
}

/// `2^y` for `y ≤ 0` in f32 (0 below −126, `NaN`/`-inf` inputs give 0,
/// positive inputs are clamped to 0): split `y = n + f` with `n` the
/// nearest integer, `f ∈ [−½, ½]`, a
/// degree-7 polynomial for `2^f` (relative error < 5·10⁻⁷), and the exponent bits
/// for `2^n`. Branch-free so LLVM vectorises the loops above; `FMA` uses
/// fused multiply-adds (only inside a function compiled with the `fma`
/// target feature — elsewhere `mul_add` is a slow library call).
#[inline(always)]
pub(crate) fn fast_exp2_f32<const FMA: bool>(y: f32) -> f32 {
    // clamp (maps NaN and -inf to -126 too), then round to the nearest
    // integer with the 1.5·2²³ trick: pure float/bit arithmetic, so the
    // loop vectorises (an `as i32` cast saturates and does not).
    const MAGIC: f32 = 12_582_912.0; // 1.5 · 2^23
    let yc = if y > -126.0 { y } else { -126.0 };
    let yc = if yc < 0.0 { yc } else { 0.0 };
    let t = yc + MAGIC;
    let nf = t - MAGIC; // round(yc) ∈ [-126, 0]
    let f = yc - nf; // [-0.5, 0.5]
    let n = t.to_bits().wrapping_sub(MAGIC.to_bits()) as i32; // round(yc) as i32
                                                              // 2^f = e^(f ln 2), Taylor to degree 7 on |f ln 2| ≤ 0.35: truncation
                                                              // error < 3e-9, f32 rounding a few ulp.
    let x = f * std::f32::consts::LN_2;
    let ma = |a: f32, b: f32, c: f32| if FMA { a.mul_add(b, c) } else { a * b + c };
    let mut p = 1.0 / 5040.0;
    p = ma(p, x, 1.0 / 720.0);
    p = ma(p, x, 1.0 / 120.0);
    p = ma(p, x, 1.0 / 24.0);
    p = ma(p, x, 1.0 / 6.0);
    p = ma(p, x, 0.5);
    p = ma(p, x, 1.0);
    p = ma(p, x, 1.0);
    let scale = f32::from_bits(((n + 127) as u32) << 23);
    let r = p * scale;
    if y > -126.0 {
        r
    } else {
        0.0
    }
}
