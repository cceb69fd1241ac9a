//! Log-sum-exp and the scalar exponentials and logarithm behind it, for
//! logit rows: the log-normaliser `log Σ exp(l)` of an f32 row (the one
//! `O(|V|)` pass of the future-validity estimators, and the mass their
//! candidate cuts rank by) as a fast `exp2` in f32 lanes accumulated in f64
//! blocks, AVX2 + FMA when [`Isa::detect`](crate::Isa::detect) allows it
//! (`ZAPSPEC_ISA=scalar` forces the portable loop, as for the forward's
//! kernels); [`exp2_f64`] and [`ln_f64`], libm-free `2^y` and `ln x` in
//! f64 for the sparse paths.
//!
//! When to use which: [`log_sum_exp_max`] for a whole row (about `|V|/8`
//! vector steps); [`exp2_f64`] / [`ln_f64`] per element where a libm call
//! would be a visible share (their errors are stated on each).

use std::sync::OnceLock;

use crate::Isa;

/// Whether the AVX2 + FMA loop may run: the CPU has it and `ZAPSPEC_ISA`
/// does not lower the instruction set to `scalar` (decided once).
fn use_avx2() -> bool {
    static AVX2: OnceLock<bool> = OnceLock::new();
    *AVX2.get_or_init(|| Isa::detect() != Isa::Scalar)
}

/// `log Σ exp(l_i)` of f32 logits, in f64, for the full-vocabulary
/// normaliser of Def. 9 (the one O(|V|) pass of OneStep-Cheap).
///
/// The exponentials use [`fast_exp2_f32`] (relative error < 5·10⁻⁷, in
/// vectorisable f32 arithmetic) and are accumulated in f64 blocks, so the
/// returned log-normaliser is within ~5·10⁻⁷ (absolute) of the exact one —
/// far below OneStep's own approximation error — at a fraction of the
/// cost of |V| libm `exp` calls. On x86-64 CPUs with AVX2 and FMA (checked
/// at run time) the same code is compiled for 8-lane vectors.
pub fn log_sum_exp_f32(logits: &[f32]) -> f64 {
    log_sum_exp_max(logits).0
}

/// The log-normaliser `log Σ_V exp(l)` of a logits row as OneStep-Cheap
/// computes it once per position (vectorised fast `exp2`, absolute error
/// ~5·10⁻⁷). Public so callers can time or share it.
pub fn log_normaliser(logits: &[f32]) -> f64 {
    log_sum_exp_max(logits).0
}

/// `(log Σ exp(l_i), max_i l_i)`; see [`log_sum_exp_f32`].
pub fn log_sum_exp_max(logits: &[f32]) -> (f64, f32) {
    #[cfg(target_arch = "x86_64")]
    {
        if use_avx2() {
            // SAFETY: `Isa::detect` returned AVX2 or better only after
            // checking that the CPU has AVX2 and FMA.
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

/// The portable body of [`log_sum_exp_max`] (`FMA`: fused multiply-adds,
/// only inside a function compiled with the `fma` target feature): the max
/// in 8 lanes, then [`fast_exp2_f32`] in f32 lanes summed in f64 blocks.
#[inline(always)]
pub fn log_sum_exp_body<const FMA: bool>(logits: &[f32]) -> (f64, f32) {
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
pub fn fast_exp2_f32<const FMA: bool>(y: f32) -> f32 {
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

/// `ln x` without a libm call for finite normal `x > 0` (`x = m·2^e`,
/// `m ∈ [√½, √2)`, `ln m = 2 atanh((m−1)/(m+1))` to degree 13: absolute
/// error < 10⁻¹²); other inputs go to `f64::ln`. One per candidate in the
/// sparse paths, where libm's `ln` was a visible share of the call.
#[inline(always)]
pub fn ln_f64(x: f64) -> f64 {
    if !(f64::MIN_POSITIVE..f64::INFINITY).contains(&x) {
        return x.ln();
    }
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let z = s * s;
    let mut p = 1.0 / 13.0;
    p = p * z + 1.0 / 11.0;
    p = p * z + 1.0 / 9.0;
    p = p * z + 1.0 / 7.0;
    p = p * z + 1.0 / 5.0;
    p = p * z + 1.0 / 3.0;
    p = p * z + 1.0;
    e as f64 * std::f64::consts::LN_2 + 2.0 * s * p
}

/// `2^y` for `y ≤ 0` in f64 without a libm call: `y = n + f` by the
/// 1.5·2⁵² rounding trick, a degree-8 Taylor polynomial for `2^f`
/// (`|f| ≤ ½`, truncation error < 10⁻⁹), the exponent bits for `2^n`.
/// 0 below −1022 and for NaN; `+inf` from 1023 up (positive arguments
/// occur when the shift is not the set's maximum).
#[inline(always)]
pub fn exp2_f64(y: f64) -> f64 {
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 · 2^52
    if y.is_nan() || y <= -1022.0 {
        return 0.0;
    }
    if y >= 1023.0 {
        return f64::INFINITY;
    }
    let t = y + MAGIC;
    let nf = t - MAGIC;
    let x = (y - nf) * std::f64::consts::LN_2; // |x| ≤ 0.347
    let n = t.to_bits().wrapping_sub(MAGIC.to_bits()) as i64; // round(y)
    let mut p = 1.0 / 40320.0;
    p = p * x + 1.0 / 5040.0;
    p = p * x + 1.0 / 720.0;
    p = p * x + 1.0 / 120.0;
    p = p * x + 1.0 / 24.0;
    p = p * x + 1.0 / 6.0;
    p = p * x + 0.5;
    p = p * x + 1.0;
    p = p * x + 1.0;
    p * f64::from_bits(((n + 1023) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zapspec_core::hash::splitmix64;
    use zapspec_core::prob;

    #[test]
    fn fast_exp2_is_accurate() {
        let mut worst = 0.0f64;
        for i in 0..=200_000 {
            let y = -(i as f32) * 125.0 / 200_000.0;
            let got = fast_exp2_f32::<false>(y) as f64;
            let want = (y as f64).exp2();
            worst = worst.max((got / want - 1.0).abs());
        }
        assert!(worst < 5e-7, "worst relative error {worst}");
        assert_eq!(fast_exp2_f32::<false>(-200.0), 0.0);
        assert_eq!(fast_exp2_f32::<false>(f32::NEG_INFINITY), 0.0);
        assert_eq!(fast_exp2_f32::<false>(0.0), 1.0);
    }

    #[test]
    fn exp2_f64_is_accurate() {
        let mut worst = 0.0f64;
        for i in 0..=400_000 {
            let y = -(i as f64) * 1021.0 / 400_000.0;
            worst = worst.max((exp2_f64(y) / y.exp2() - 1.0).abs());
        }
        assert!(worst < 1e-8, "worst relative error {worst}");
        assert_eq!(exp2_f64(-1100.0), 0.0);
        assert_eq!(exp2_f64(f64::NAN), 0.0);
        assert_eq!(exp2_f64(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp2_f64(0.0), 1.0);
        for i in 0..=100_000 {
            let y = i as f64 * 1022.0 / 100_000.0;
            assert!((exp2_f64(y) / y.exp2() - 1.0).abs() < 1e-8, "{y}");
        }
        assert_eq!(exp2_f64(1023.0), f64::INFINITY);
    }

    #[test]
    fn ln_f64_is_accurate() {
        let mut worst = 0.0f64;
        for i in 0..=200_000u64 {
            // log-uniform over [1e-300, 1e300] plus values near 1 and √2
            let x = 10f64.powf(-300.0 + 600.0 * i as f64 / 200_000.0);
            worst = worst.max((ln_f64(x) - x.ln()).abs());
            let y = 0.5 + i as f64 / 100_000.0;
            worst = worst.max((ln_f64(y) - y.ln()).abs());
        }
        assert!(worst < 1e-12, "worst absolute error {worst}");
        for x in [0.0, -1.0, f64::INFINITY, f64::NAN, 1e-310, 1.0] {
            let (a, b) = (ln_f64(x), x.ln());
            assert!(a == b || (a.is_nan() && b.is_nan()), "{x}: {a} vs {b}");
        }
    }

    #[test]
    fn fused_exp2_is_accurate() {
        for i in 0..=20_000 {
            let y = -(i as f32) * 125.0 / 20_000.0;
            let (a, b) = (
                fast_exp2_f32::<true>(y) as f64,
                fast_exp2_f32::<false>(y) as f64,
            );
            let want = (y as f64).exp2();
            assert!(
                (a / want - 1.0).abs() < 5e-7 && (b / want - 1.0).abs() < 5e-7,
                "{y}"
            );
        }
    }

    #[test]
    fn generic_and_dispatched_normalisers_agree() {
        let v: Vec<f32> = (0..10_007u64)
            .map(|i| ((splitmix64(i) >> 40) as f32 / (1u32 << 24) as f32) * 30.0 - 20.0)
            .collect();
        let want = prob::logsumexp(&v.iter().map(|&x| x as f64).collect::<Vec<_>>());
        assert!((log_sum_exp_body::<false>(&v).0 - want).abs() < 1e-6);
        assert!((log_sum_exp_f32(&v) - want).abs() < 1e-6);
        let mut w = v.clone();
        w[17] = f32::NAN; // skipped by the max, exp2 maps it to 0
        assert!(log_sum_exp_f32(&w).is_finite());
        // a rising ramp: the running max grows in every block (rescaling)
        let ramp: Vec<f32> = (0..5_003).map(|i| i as f32 * 0.01 - 20.0).collect();
        let want = prob::logsumexp(&ramp.iter().map(|&x| x as f64).collect::<Vec<_>>());
        assert!((log_sum_exp_f32(&ramp) - want).abs() < 1e-6);
        assert_eq!(log_sum_exp_max(&ramp).1, ramp[5_002]);
        assert_eq!(
            log_sum_exp_f32(&[f32::NEG_INFINITY; 1000]),
            f64::NEG_INFINITY
        );
        let mut inf = vec![0.0f32; 1000];
        inf[700] = f32::INFINITY;
        assert_eq!(log_sum_exp_f32(&inf), f64::INFINITY);
    }

    #[test]
    fn log_sum_exp_matches_f64_reference() {
        for seed in 0..20u64 {
            let v: Vec<f32> = (0..5000u64)
                .map(|i| {
                    ((splitmix64(seed * 7919 + i) >> 11) as f64 / (1u64 << 53) as f64 * 60.0 - 40.0)
                        as f32
                })
                .collect();
            let want = prob::logsumexp(&v.iter().map(|&x| x as f64).collect::<Vec<_>>());
            assert!((log_sum_exp_f32(&v) - want).abs() < 1e-6);
        }
        assert_eq!(log_sum_exp_f32(&[f32::NEG_INFINITY; 3]), f64::NEG_INFINITY);
        assert!((log_sum_exp_f32(&[0.0, f32::NEG_INFINITY]) - 0.0).abs() < 1e-7);
    }
}
