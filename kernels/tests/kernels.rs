//! Every SIMD path against the scalar reference on random blocks, the
//! scalar dequantisation against candle's reader of the same GGUF block
//! formats, and the block dot product against the f32 dot of the
//! dequantised values.

use candle_core::quantized::{GgmlDType, QStorage, QTensor};
use candle_core::Device;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::borrow::Cow;
use zapspec_kernels::{
    dequantize, dot_scalar, quantize_q8, Acts, BlockQ8, Isa, Kernels, QMatrix, QType, BLOCK,
};

const TYPES: [QType; 3] = [QType::Q4_0, QType::Q4_1, QType::Q8_0];

/// Random blocks of `ty`: random quant bytes, scales of either sign and a
/// wide range of magnitudes (f16), as real checkpoints have.
fn random_blocks(ty: QType, nb: usize, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut out = Vec::with_capacity(nb * ty.block_bytes());
    for _ in 0..nb {
        let scale = |rng: &mut ChaCha8Rng| {
            let v: f32 = rng.random_range(-1.0..1.0) * 10f32.powi(rng.random_range(-4..1));
            half::f16::from_f32(v).to_bits().to_le_bytes()
        };
        out.extend_from_slice(&scale(rng));
        if ty == QType::Q4_1 {
            out.extend_from_slice(&scale(rng));
        }
        let q = if ty == QType::Q8_0 { 32 } else { 16 };
        for _ in 0..q {
            out.push(rng.random());
        }
    }
    out
}

fn random_acts(n: usize, rng: &mut ChaCha8Rng) -> Vec<f32> {
    (0..n)
        .map(|_| rng.random_range(-3.0f32..3.0) * if rng.random_bool(0.05) { 20.0 } else { 1.0 })
        .collect()
}

fn candle_type(ty: QType) -> GgmlDType {
    match ty {
        QType::Q4_0 => GgmlDType::Q4_0,
        QType::Q4_1 => GgmlDType::Q4_1,
        QType::Q8_0 => GgmlDType::Q8_0,
    }
}

#[test]
fn dequantisation_equals_candles() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for ty in TYPES {
        let nb = 37;
        let w = random_blocks(ty, nb, &mut rng);
        let mut mine = vec![0f32; nb * BLOCK];
        dequantize(ty, &w, &mut mine);
        let storage =
            QStorage::from_data(Cow::Borrowed(&w), &Device::Cpu, candle_type(ty)).unwrap();
        let q = QTensor::new(storage, (nb * BLOCK,)).unwrap();
        let theirs: Vec<f32> = q.dequantize(&Device::Cpu).unwrap().to_vec1().unwrap();
        assert_eq!(mine, theirs, "{}", ty.name());
    }
}

#[test]
fn quantised_activations_are_the_same_on_every_isa() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for len in [32, 64, 576, 1536] {
        let x = random_acts(len, &mut rng);
        let mut want = vec![BlockQ8::default(); len / BLOCK];
        quantize_q8(&x, &mut want);
        for isa in Isa::all_supported() {
            let k = Kernels::with_isa(isa).unwrap();
            let mut got = vec![BlockQ8::default(); len / BLOCK];
            k.quantize(&x, &mut got);
            assert_eq!(got, want, "{isa} len {len}");
        }
        // and the blocks reconstruct the input within half a step
        for (b, xb) in want.iter().zip(x.chunks(BLOCK)) {
            for (q, v) in b.qs.iter().zip(xb) {
                assert!((b.d * *q as f32 - v).abs() <= b.d * 0.5 + 1e-6);
            }
        }
    }
}

#[test]
fn every_simd_dot_equals_the_scalar_dot() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let isas = Isa::all_supported();
    eprintln!("instruction sets on this CPU: {isas:?}");
    for ty in TYPES {
        for nb in [1, 2, 3, 18, 48] {
            for n in 1..=9 {
                let w = random_blocks(ty, nb, &mut rng);
                let x = random_acts(n * nb * BLOCK, &mut rng);
                let mut xs = vec![BlockQ8::default(); n * nb];
                quantize_q8(&x, &mut xs);
                let want: Vec<f32> = (0..n)
                    .map(|t| dot_scalar(ty, &w, &xs[t * nb..(t + 1) * nb]))
                    .collect();
                // the scale of the sum, for a relative bound on f32 rounding
                let mut dq = vec![0f32; nb * BLOCK];
                dequantize(ty, &w, &mut dq);
                for isa in &isas {
                    let k = Kernels::with_isa(*isa).unwrap();
                    let mut got = vec![0f32; n];
                    k.dot_multi(ty, &w, &xs, nb, &mut got);
                    for t in 0..n {
                        let mag: f32 = dq
                            .iter()
                            .zip(&x[t * nb * BLOCK..])
                            .map(|(a, b)| (a * b).abs())
                            .sum();
                        let tol = 1e-5 * (mag + 1.0);
                        assert!(
                            (got[t] - want[t]).abs() <= tol,
                            "{isa} {} nb {nb} n {n} row {t}: {} vs {} (tol {tol})",
                            ty.name(),
                            got[t],
                            want[t]
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn the_block_dot_is_the_dot_of_the_dequantised_values() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for ty in TYPES {
        let nb = 18;
        let w = random_blocks(ty, nb, &mut rng);
        let x = random_acts(nb * BLOCK, &mut rng);
        let mut xs = vec![BlockQ8::default(); nb];
        quantize_q8(&x, &mut xs);
        let mut dw = vec![0f32; nb * BLOCK];
        dequantize(ty, &w, &mut dw);
        // exact: against the dequantised weights and the dequantised
        // activations (the block product loses nothing but f32 rounding)
        let dx: Vec<f32> = xs
            .iter()
            .flat_map(|b| b.qs.iter().map(move |&q| b.d * q as f32))
            .collect();
        let exact: f64 = dw.iter().zip(&dx).map(|(a, b)| *a as f64 * *b as f64).sum();
        let mag: f64 = dw
            .iter()
            .zip(&dx)
            .map(|(a, b)| (*a as f64 * *b as f64).abs())
            .sum();
        let got = dot_scalar(ty, &w, &xs) as f64;
        assert!(
            (got - exact).abs() <= 1e-5 * (mag + 1.0),
            "{}: {got} vs {exact}",
            ty.name()
        );
    }
}

#[test]
fn f32_kernels_equal_the_scalar_ones() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for len in [0, 1, 7, 8, 31, 64, 100] {
        let a = random_acts(len, &mut rng);
        let b = random_acts(len, &mut rng);
        let s = Kernels::with_isa(Isa::Scalar).unwrap();
        for isa in Isa::all_supported() {
            let k = Kernels::with_isa(isa).unwrap();
            let mag: f32 = a.iter().zip(&b).map(|(x, y)| (x * y).abs()).sum();
            assert!((k.dot_f32(&a, &b) - s.dot_f32(&a, &b)).abs() <= 1e-5 * (mag + 1.0));
            let (mut y1, mut y2) = (b.clone(), b.clone());
            k.axpy(&mut y1, 0.37, &a);
            s.axpy(&mut y2, 0.37, &a);
            for (u, v) in y1.iter().zip(&y2) {
                assert!((u - v).abs() <= 1e-5 * (u.abs() + 1.0));
            }
        }
    }
}

/// The attention kernels against a plain triple loop, for every group size
/// (1–7 queries: the SIMD paths take 4 or 3 at a time), head widths with
/// and without the 32-column fast path and the scalar fallback (d % 8 ≠
/// 0), and strided score rows.
#[test]
fn attention_kernels_equal_the_definition() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for &d in &[8usize, 24, 64, 12, 128] {
        for g in 1..=7 {
            for m in [1usize, 5, 17, 33, 64] {
                let stride = m + 3;
                let q = random_acts(g * d, &mut rng);
                let keys = random_acts(m * d, &mut rng);
                let p = random_acts((g - 1) * stride + m, &mut rng);
                let init = random_acts(g * d, &mut rng);
                for isa in Isa::all_supported() {
                    let k = Kernels::with_isa(isa).unwrap();
                    let mut s = vec![f32::NAN; (g - 1) * stride + m];
                    k.attn_scores(&q, g, &keys, d, &mut s, stride);
                    // the same keys dimension-major, rows `ld` apart (the
                    // slack after each row holds NaN: it must not be read)
                    let ld = m + 5;
                    let mut keys_t = vec![f32::NAN; (d - 1) * ld + m];
                    for j in 0..m {
                        for c in 0..d {
                            keys_t[c * ld + j] = keys[j * d + c];
                        }
                    }
                    let mut st = vec![f32::NAN; (g - 1) * stride + m];
                    k.attn_scores_t(&q, g, &keys_t, ld, d, m, &mut st, stride);
                    let mut o = init.clone();
                    k.attn_weighted_sum(&p, stride, g, &keys, d, &mut o);
                    for i in 0..g {
                        for j in 0..m {
                            let want: f32 = (0..d).map(|c| q[i * d + c] * keys[j * d + c]).sum();
                            let mag: f32 =
                                (0..d).map(|c| (q[i * d + c] * keys[j * d + c]).abs()).sum();
                            for (got, how) in [
                                (s[i * stride + j], "rows"),
                                (st[i * stride + j], "transposed"),
                            ] {
                                assert!(
                                    (got - want).abs() <= 1e-5 * (mag + 1.0),
                                    "{isa:?} {how} d {d} g {g} m {m}: score ({i},{j}) {got} vs {want}"
                                );
                            }
                        }
                        for c in 0..d {
                            let want = init[i * d + c]
                                + (0..m)
                                    .map(|j| p[i * stride + j] * keys[j * d + c])
                                    .sum::<f32>();
                            let mag = init[i * d + c].abs()
                                + (0..m)
                                    .map(|j| (p[i * stride + j] * keys[j * d + c]).abs())
                                    .sum::<f32>();
                            let got = o[i * d + c];
                            assert!(
                                (got - want).abs() <= 1e-5 * (mag + 1.0),
                                "{isa:?} d {d} g {g} m {m}: sum ({i},{c}) {got} vs {want}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// The softmax exponential against `f32::exp` over its whole useful range
/// (and −∞, a masked score), for lengths with and without a SIMD tail.
#[test]
fn exp_sum_equals_the_scalar_exp() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    for len in [0usize, 1, 7, 8, 9, 15, 16, 17, 33, 64, 1000] {
        let mut x: Vec<f32> = (0..len).map(|_| rng.random_range(-90.0f32..0.0)).collect();
        if len > 2 {
            x[1] = f32::NEG_INFINITY;
            x[2] = 0.0;
        }
        let shift = 0.25f32;
        for isa in Isa::all_supported() {
            let k = Kernels::with_isa(isa).unwrap();
            let mut got = x.clone();
            let s = k.exp_sum(&mut got, shift);
            let mut want_sum = 0f32;
            for (g, &v) in got.iter().zip(&x) {
                let want = (v - shift).exp();
                want_sum += want;
                let ok =
                    (g - want).abs() <= 4.0 * f32::EPSILON * want || (want < 1e-37 && *g < 2e-38);
                assert!(ok, "{isa:?}: exp({}) = {g}, want {want}", v - shift);
            }
            assert!(
                (s - want_sum).abs() <= 1e-5 * want_sum.max(1e-30),
                "{isa:?}: sum {s} vs {want_sum}"
            );
        }
    }
}

#[test]
fn matmul_on_a_pool_equals_row_by_row_dots() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    for ty in TYPES {
        let (rows, cols) = (203, 96);
        let w = QMatrix::new(
            ty,
            rows,
            cols,
            random_blocks(ty, rows * cols / BLOCK, &mut rng),
        )
        .unwrap();
        for n in [1, 2, 5] {
            let x = random_acts(n * cols, &mut rng);
            for isa in Isa::all_supported() {
                let k = Kernels::with_isa(isa).unwrap();
                let mut acts = Acts::new();
                acts.quantize(&k, &x, cols);
                let (mut a, mut b, mut scratch) =
                    (vec![0f32; n * rows], vec![0f32; n * rows], Vec::new());
                k.matmul(Some(&pool), &w, &acts, &mut a, &mut scratch);
                k.matmul(None, &w, &acts, &mut b, &mut scratch);
                assert_eq!(a, b, "{isa} pool vs caller thread");
                for t in 0..n {
                    for r in 0..rows {
                        let want = dot_scalar(
                            ty,
                            w.row(r).unwrap(),
                            &acts.blocks()[t * cols / BLOCK..(t + 1) * cols / BLOCK],
                        );
                        assert!((a[t * rows + r] - want).abs() <= 1e-3 * (want.abs() + 1.0));
                    }
                }
            }
        }
    }
}

/// The interleaved layout (what [`Kernels::prepare`] makes on AVX-512
/// VNNI) against the row layout and the scalar dot: every type, 1–19
/// activation rows (the 8-row tiles and their remainders), on a pool and
/// on the calling thread, and on every instruction set (the others take
/// the rebuild-each-row fallback).
#[test]
fn interleaved_matmul_equals_the_row_layout() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let vnni = Kernels::with_isa(Isa::Avx512Vnni);
    eprintln!("AVX-512 VNNI here: {}", vnni.is_some());
    for ty in TYPES {
        let (rows, cols) = (80, 160);
        let rowwise = QMatrix::new(
            ty,
            rows,
            cols,
            random_blocks(ty, rows * cols / BLOCK, &mut rng),
        )
        .unwrap();
        // packed by the VNNI kernels where the CPU has them; otherwise
        // nothing to compare (prepare keeps the row layout)
        let Some(kv) = vnni else { continue };
        let packed = kv.prepare(rowwise.clone());
        assert!(packed.is_packed() && packed.row(0).is_none());
        assert_eq!(packed.bytes(), rowwise.bytes());
        let mut a = vec![0f32; cols];
        let mut b = vec![0f32; cols];
        for r in 0..rows {
            rowwise.dequantize_row(r, &mut a);
            packed.dequantize_row(r, &mut b);
            assert_eq!(a, b, "{} dequantised row {r}", ty.name());
        }
        for n in [1, 2, 3, 7, 8, 9, 16, 19] {
            let x = random_acts(n * cols, &mut rng);
            for isa in Isa::all_supported() {
                let k = Kernels::with_isa(isa).unwrap();
                let mut acts = Acts::new();
                acts.quantize(&k, &x, cols);
                let mut scratch = Vec::new();
                let (mut p1, mut p2) = (vec![0f32; n * rows], vec![0f32; n * rows]);
                k.matmul(Some(&pool), &packed, &acts, &mut p1, &mut scratch);
                k.matmul(None, &packed, &acts, &mut p2, &mut scratch);
                assert_eq!(p1, p2, "{isa} {} n {n}: pool vs caller thread", ty.name());
                // one row alone gives the same bits as inside a batch
                if n > 1 {
                    let mut one = Acts::new();
                    one.quantize(&k, &x[(n - 1) * cols..], cols);
                    let mut last = vec![0f32; rows];
                    k.matmul(None, &packed, &one, &mut last, &mut scratch);
                    assert_eq!(
                        last,
                        p1[(n - 1) * rows..],
                        "{isa} {} n {n}: batch",
                        ty.name()
                    );
                }
                for t in 0..n {
                    let xb = &acts.blocks()[t * cols / BLOCK..(t + 1) * cols / BLOCK];
                    for r in 0..rows {
                        let want = dot_scalar(ty, rowwise.row(r).unwrap(), xb);
                        rowwise.dequantize_row(r, &mut a);
                        let mag: f32 = a
                            .iter()
                            .zip(&x[t * cols..])
                            .map(|(w, v)| (w * v).abs())
                            .sum();
                        let got = p1[t * rows + r];
                        assert!(
                            (got - want).abs() <= 1e-5 * (mag + 1.0),
                            "{isa} {} n {n} row {t}/{r}: {got} vs {want}",
                            ty.name()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn malformed_matrices_are_errors() {
    assert!(QMatrix::new(QType::Q4_1, 2, 33, vec![0; 40]).is_err());
    assert!(QMatrix::new(QType::Q4_1, 2, 32, vec![0; 39]).is_err());
    assert!(QMatrix::new(QType::Q4_1, 2, 32, vec![0; 40]).is_ok());
    assert!(QMatrix::new(QType::Q8_0, usize::MAX, 64, vec![]).is_err());
    assert!("avx9".parse::<Isa>().is_err());
}
