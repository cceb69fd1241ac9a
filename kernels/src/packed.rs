//! The interleaved layout: a matrix's rows in groups of [`GROUP`], each
//! block of the group's 16 rows stored together so that one 512-bit
//! `vpdpbusd` multiplies four weights of each of the 16 rows by the same
//! four activations (llama.cpp's repacked `Q4_0_8x8` idea, for AVX-512
//! VNNI). Where the row layout spends ~20 instructions per block and
//! activation row (unpack, one 8-lane product, a horizontal scale), this
//! one spends ~20 per block, activation row **and 16 weight rows**, so an
//! extra activation row (a draft token, a prefill row) costs little next
//! to reading the weights.
//!
//! One group-block (16 rows × 32 weights) is, per type:
//!
//! | type | bytes | fields |
//! |---|---|---|
//! | `Q4_0` | 288 | `d: [f16; 16]`, `qs: [u8; 256]` |
//! | `Q4_1` | 320 | `d: [f16; 16]`, `m: [f16; 16]`, `qs: [u8; 256]` |
//! | `Q8_0` | 544 | `d: [f16; 16]`, `qs: [u8; 512]` (each `q + 128`) |
//!
//! the same bytes as GGUF's 16 blocks. `qs` is a run of 64-byte vectors
//! whose 4-byte lane `j` holds row `j`'s quad `k`: for the 4-bit types,
//! vector `p < 4` holds GGUF bytes `4p .. 4p + 4` of each row (low nibbles
//! = weights `4p ..`, high nibbles = weights `16 + 4p ..`); for `Q8_0`,
//! vector `p < 8` holds weights `4p .. 4p + 4` offset to unsigned. Each
//! block's value is then `d · d_a · Σ u · a + m · s_a` with `m = −8 d`
//! (`Q4_0`), the stored minimum (`Q4_1`) or `−128 d` (`Q8_0`), where
//! `s_a = d_a · Σ a` is the activation block's [`crate::BlockQ8::s`].

use crate::blocks::{QType, BLOCK};

/// Rows per interleaved group.
pub const GROUP: usize = 16;

/// Bytes of one group-block (16 rows × one block) of `ty`.
pub(crate) const fn group_block_bytes(ty: QType) -> usize {
    GROUP * ty.block_bytes()
}

/// Bytes of the scale fields at the start of a group-block.
const fn scale_bytes(ty: QType) -> usize {
    match ty {
        QType::Q4_1 => 4 * GROUP,
        _ => 2 * GROUP,
    }
}

/// Repacks GGUF rows (`rows` a multiple of 16, `nb` blocks a row) into
/// the interleaved layout, in place: a group's 16 rows and its packed
/// blocks occupy the same bytes, so one group's worth of scratch is all
/// the extra memory (no second copy of the matrix at load).
pub(crate) fn pack_in_place(ty: QType, rows: usize, nb: usize, data: &mut [u8]) {
    debug_assert!(rows.is_multiple_of(GROUP));
    let bb = ty.block_bytes();
    let gb = group_block_bytes(ty);
    let sb = scale_bytes(ty);
    let qb = ty_qs_bytes(ty);
    let mut src = vec![0u8; nb * gb];
    for group in data.chunks_exact_mut(nb * gb) {
        src.copy_from_slice(group);
        for i in 0..nb {
            let dst = &mut group[i * gb..][..gb];
            for j in 0..GROUP {
                let b = &src[(j * nb + i) * bb..][..bb];
                dst[2 * j..2 * j + 2].copy_from_slice(&b[..2]);
                if ty == QType::Q4_1 {
                    dst[2 * GROUP + 2 * j..][..2].copy_from_slice(&b[2..4]);
                }
                let qs = &b[bb - qb..];
                for p in 0..qb / 4 {
                    for k in 0..4 {
                        let v = qs[4 * p + k];
                        dst[sb + 64 * p + 4 * j + k] = if ty == QType::Q8_0 { v ^ 0x80 } else { v };
                    }
                }
            }
        }
    }
}

/// The GGUF bytes of row `r`'s blocks, rebuilt from the interleaved
/// layout into `out` (cleared first).
pub(crate) fn unpack_row(ty: QType, nb: usize, data: &[u8], r: usize, out: &mut Vec<u8>) {
    let gb = group_block_bytes(ty);
    let sb = scale_bytes(ty);
    let (g, j) = (r / GROUP, r % GROUP);
    out.clear();
    for i in 0..nb {
        let src = &data[(g * nb + i) * gb..][..gb];
        out.extend_from_slice(&src[2 * j..2 * j + 2]);
        if ty == QType::Q4_1 {
            out.extend_from_slice(&src[2 * GROUP + 2 * j..][..2]);
        }
        for p in 0..ty_qs_bytes(ty) / 4 {
            for b in 0..4 {
                let v = src[sb + 64 * p + 4 * j + b];
                out.push(if ty == QType::Q8_0 { v ^ 0x80 } else { v });
            }
        }
    }
}

/// Bytes of weights (not scales) in one block of `ty`.
const fn ty_qs_bytes(ty: QType) -> usize {
    match ty {
        QType::Q8_0 => BLOCK,
        _ => BLOCK / 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_then_unpack_gives_the_rows_back() {
        for ty in [QType::Q4_0, QType::Q4_1, QType::Q8_0] {
            let (rows, nb) = (32, 3);
            let data: Vec<u8> = (0..rows * nb * ty.block_bytes())
                .map(|i| (i * 7 + i / 5) as u8)
                .collect();
            let mut p = data.clone();
            pack_in_place(ty, rows, nb, &mut p);
            let mut row = Vec::new();
            for r in 0..rows {
                unpack_row(ty, nb, &p, r, &mut row);
                let rb = nb * ty.block_bytes();
                assert_eq!(row, &data[r * rb..(r + 1) * rb], "{} row {r}", ty.name());
            }
        }
    }
}
