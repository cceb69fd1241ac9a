//! Gathering the logits of a bit set's members (a token mask's words)
//! into a dense buffer, in id order: AVX2 left-packing permutations for
//! dense sets when [`Isa::detect`](crate::Isa::detect) allows it
//! (`ZAPSPEC_ISA=scalar` forces the scalar walk), a walk over the set bits
//! otherwise. Use it before a vectorised sum over a set's members
//! ([`crate::lse`]); cost `|V|/8` vector steps for a dense set, one step
//! per member for a sparse one.

use std::sync::OnceLock;

use crate::Isa;

/// Whether the AVX2 loop may run (decided once; see [`crate::lse`]).
fn use_avx2() -> bool {
    static AVX2: OnceLock<bool> = OnceLock::new();
    *AVX2.get_or_init(|| Isa::detect() != Isa::Scalar)
}

/// Replaces `buf` with `logits[i]` for every set bit `i` of `words` (a
/// bit set over `universe` ids holding `count` members), in order.
/// With AVX2 (checked at run time) eight tokens at a time: each byte of a
/// mask word selects a left-packing permutation of eight logits
/// (`PACK`), stored in one unaligned write, so a dense set costs
/// `|V|/8` vector steps (zero words skipped) instead of one scalar step per
/// member; sparse sets (under one member in four) and other CPUs take a
/// scalar walk over the set bits.
pub fn gather_bits(
    logits: &[f32],
    words: &[u64],
    count: usize,
    universe: usize,
    buf: &mut Vec<f32>,
) {
    buf.clear();
    #[cfg(target_arch = "x86_64")]
    {
        // dense sets only: at one member in eight the scalar walk is
        // faster (`gather_timing`), at two it is twice as slow
        if use_avx2() && count * 4 >= universe {
            let full = (logits.len() / 64).min(words.len());
            // SAFETY: `Isa::detect` returned AVX2 or better only after checking
            // that the CPU has AVX2.
            unsafe { gather_words_avx2(logits, &words[..full], buf) };
            gather_words_scalar(logits, &words[full..], full * 64, buf);
            return;
        }
    }
    gather_words_scalar(logits, words, 0, buf);
}

/// Appends `logits[base + 64 i + b]` for every set bit `b` of `words[i]`
/// (entries past the end of `logits` are skipped).
fn gather_words_scalar(logits: &[f32], words: &[u64], base: usize, buf: &mut Vec<f32>) {
    for (wi, &word) in words.iter().enumerate() {
        let b0 = base + wi * 64;
        let mut w = word;
        while w != 0 {
            if let Some(&l) = logits.get(b0 + w.trailing_zeros() as usize) {
                buf.push(l);
            }
            w &= w - 1;
        }
    }
}

/// `PACK[b]`: lane indices that move the lanes selected by the bits of
/// `b` to the front, in order (the rest repeat lane 0; they are written
/// past the kept length and overwritten or ignored).
static PACK: [[u32; 8]; 256] = {
    let mut t = [[0u32; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        let mut lane = 0;
        while lane < 8 {
            if b & (1 << lane) != 0 {
                t[b][k] = lane as u32;
                k += 1;
            }
            lane += 1;
        }
        b += 1;
    }
    t
};

/// The AVX2 body of [`gather_bits`] for whole words: `words.len() * 64 ≤
/// logits.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gather_words_avx2(logits: &[f32], words: &[u64], buf: &mut Vec<f32>) {
    use std::arch::x86_64::*;
    let members: usize = words.iter().map(|w| w.count_ones() as usize).sum();
    // eight lanes of slack: the last store writes a whole vector
    buf.reserve(members + 8);
    let mut len = buf.len();
    let dst = buf.as_mut_ptr();
    for (wi, &w) in words.iter().enumerate() {
        if w == 0 {
            continue;
        }
        for k in 0..8 {
            // no branch on `b == 0`: on sparse random sets it mispredicts
            let b = ((w >> (8 * k)) & 0xff) as usize;
            // SAFETY: `wi * 64 + 8 k + 8 ≤ words.len() * 64 ≤
            // logits.len()` (the caller's contract), so the load stays in
            // `logits`; `PACK[b]` is 8 u32s; the store writes
            // `dst[len..len + 8]` with `len ≤ members − popcount(b)` (each
            // member is counted once), inside the reserved `members + 8`.
            unsafe {
                let v = _mm256_loadu_ps(logits.as_ptr().add(wi * 64 + 8 * k));
                let idx = _mm256_loadu_si256(PACK[b].as_ptr() as *const __m256i);
                _mm256_storeu_ps(dst.add(len), _mm256_permutevar8x32_ps(v, idx));
            }
            len += b.count_ones() as usize;
        }
    }
    // SAFETY: `len ≤ members ≤ capacity` and every element below `len` was
    // written above (or was there before).
    unsafe { buf.set_len(len) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The vectorised gather equals the members' logits in token order
        /// (sets of every density, universes not a multiple of 64).
        #[test]
        fn gather_set_lists_members_in_order(
            v in 1usize..700, seed in any::<u64>(), density in 0u64..=8,
        ) {
                        let logits: Vec<f32> = (0..v).map(|i| i as f32 * 0.5 - 3.0).collect();
            let ids: Vec<zapspec_core::TokenId> = (0..v as u32)
                .filter(|&i| zapspec_core::hash::splitmix64(seed ^ i as u64) % 8 < density)
                .collect();
            let set = zapspec_core::TokenSet::from_ids(v, ids.iter().copied());
            let mut buf = vec![9.0f32; 3];
            gather_bits(&logits, set.words(), set.count(), set.universe(), &mut buf);
            let want: Vec<f32> = ids.iter().map(|&i| logits[i as usize]).collect();
            prop_assert_eq!(buf, want);
        }
    }
}
