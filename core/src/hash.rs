//! A 64-bit mixing hash shared by the crates that seed or index by hashing
//! (the toy models of `zapspec-testkit`, the Monte Carlo seeds and the
//! product-state index of `zapspec-phi`).

/// SplitMix64: a fast, well-mixed 64-bit hash step (one round of Steele,
/// Lea and Flood's generator).
#[inline]
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}
