//! Attention masks over `[cached positions ; new positions]`.
//!
//! A mask has one row per new (query) token and one column per key: the
//! `past` cached keys first, then the new tokens. Builders cover every
//! pattern the runtime uses:
//!
//! - [`AttnMask::causal`]: parallel prefill (Copy-as-Decode §2.4: a copy span
//!   of N tokens enters the KV cache in one forward);
//! - [`AttnMask::tree`]: speculative draft trees (each node sees the prefix
//!   and its ancestors, as in SpecInfer/EAGLE);
//! - [`AttnMask::spiffy_draft_blocks`]: Spiffy's draft-block mask (§4.3,
//!   Fig. 3): the true sequence attends to itself, each draft block to itself
//!   and to the true sequence except the block it drafts;
//! - [`AttnMask::block_causal`]: blockwise-causal attention (SDAR; Spiffy
//!   Fig. 3 caption and Appendix A.2).

use std::ops::Range;

use candle_core::{DType, Device, Tensor};

/// A boolean attention mask: `rows` queries × `cols` keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttnMask {
    rows: usize,
    cols: usize,
    allowed: Vec<bool>,
}

impl AttnMask {
    /// Nothing allowed.
    pub fn blocked(rows: usize, cols: usize) -> Self {
        AttnMask {
            rows,
            cols,
            allowed: vec![false; rows * cols],
        }
    }

    /// Everything allowed (full bidirectional attention).
    pub fn full(rows: usize, cols: usize) -> Self {
        AttnMask {
            rows,
            cols,
            allowed: vec![true; rows * cols],
        }
    }

    /// Number of query rows (new tokens).
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of key columns (cached positions, then new tokens).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Lets query `row` attend to key `col`. Panics if out of bounds.
    pub fn allow(&mut self, row: usize, col: usize) {
        self.allowed[row * self.cols + col] = true;
    }
    /// Lets query `row` attend to the keys `cols`. Panics if out of bounds.
    pub fn allow_range(&mut self, row: usize, cols: Range<usize>) {
        self.allowed[row * self.cols + cols.start..row * self.cols + cols.end].fill(true);
    }
    /// Whether query `row` may attend to key `col`. Panics if out of bounds.
    pub fn is_allowed(&self, row: usize, col: usize) -> bool {
        self.allowed[row * self.cols + col]
    }
    /// Whether every entry is allowed (the forward then skips the mask).
    pub fn is_full(&self) -> bool {
        self.allowed.iter().all(|&a| a)
    }

    /// `n` new tokens after `past` cached ones: token `i` sees every cached
    /// key and new tokens `0..=i`.
    pub fn causal(past: usize, n: usize) -> Self {
        let mut m = Self::blocked(n, past + n);
        for i in 0..n {
            m.allow_range(i, 0..past + i + 1);
        }
        m
    }

    /// A draft tree of `parents.len()` nodes after `past` cached keys: node
    /// `i` sees every cached key, itself and its ancestors. Parents must
    /// precede their children (`parents[i] < i`), which the caller checks.
    pub fn tree(past: usize, parents: &[Option<usize>]) -> Self {
        let n = parents.len();
        let mut m = Self::blocked(n, past + n);
        for i in 0..n {
            m.allow_range(i, 0..past);
            let mut a = Some(i);
            while let Some(j) = a {
                m.allow(i, past + j);
                a = parents[j];
            }
        }
        m
    }

    /// Spiffy's draft-block mask (Fig. 3) for a true sequence of `n` tokens
    /// followed by `drafts` draft blocks for `block`, all new (no cache):
    /// true rows see every true column; draft `m`'s rows see the true columns
    /// outside `block` and draft `m`'s own columns.
    pub fn spiffy_draft_blocks(n: usize, block: Range<usize>, drafts: usize) -> Self {
        Self::spiffy_over(Self::full(n, n), 0, block, drafts)
    }

    /// The blockwise-causal version (Fig. 3 caption): true positions form
    /// aligned blocks of `block_size`; a true row sees its own and earlier
    /// blocks; a draft row sees the true blocks before `block` and its own
    /// draft block.
    pub fn spiffy_block_causal(
        n: usize,
        block: Range<usize>,
        drafts: usize,
        block_size: usize,
    ) -> Self {
        Self::spiffy_over(Self::block_causal(0, 0, n, block_size), 0, block, drafts)
    }

    /// Extends a mask over `true_rows.cols() = past + n` keys (`past` cached,
    /// then `n` true new tokens whose block is `block`, in new-token
    /// coordinates) with `drafts` draft blocks of `block.len()` tokens each.
    /// True rows keep their pattern and never see drafts; draft `m` rows see
    /// what the true rows of `block` see — the cache and the true tokens —
    /// except the true block itself, plus draft `m`.
    pub fn spiffy_over(
        true_rows: AttnMask,
        past: usize,
        block: Range<usize>,
        drafts: usize,
    ) -> Self {
        let n = true_rows.rows;
        let l = block.len();
        let cols = past + n + drafts * l;
        let mut m = Self::blocked(n + drafts * l, cols);
        for r in 0..n {
            for c in 0..past + n {
                if true_rows.is_allowed(r, c) {
                    m.allow(r, c);
                }
            }
        }
        // A draft row sees the union of what the true block's rows see,
        // minus the block: for full attention that is everything else, for
        // block-causal attention the earlier blocks.
        let mut base = vec![false; past + n];
        for r in block.clone() {
            for (c, b) in base.iter_mut().enumerate() {
                *b |= true_rows.is_allowed(r, c);
            }
        }
        for c in block.clone() {
            base[past + c] = false;
        }
        for d in 0..drafts {
            for i in 0..l {
                let r = n + d * l + i;
                for (c, &b) in base.iter().enumerate() {
                    if b {
                        m.allow(r, c);
                    }
                }
                m.allow_range(r, past + n + d * l..past + n + (d + 1) * l);
            }
        }
        m
    }

    /// Blockwise-causal attention for `n` new tokens at absolute positions
    /// `start..start + n` after `past` cached keys at positions `0..past`
    /// (`past <= start`; the cached keys are the positions `0..past`):
    /// position `p` sees position `q` iff `q / block_size <= p / block_size`.
    pub fn block_causal(past: usize, start: usize, n: usize, block_size: usize) -> Self {
        let mut m = Self::blocked(n, past + n);
        for i in 0..n {
            let bp = (start + i) / block_size;
            for q in 0..past {
                if q / block_size <= bp {
                    m.allow(i, q);
                }
            }
            for j in 0..n {
                if (start + j) / block_size <= bp {
                    m.allow(i, past + j);
                }
            }
        }
        m
    }

    /// The additive mask (0 where allowed, −∞ elsewhere), shape
    /// `(rows, cols)`.
    pub fn to_tensor(&self, dtype: DType, device: &Device) -> candle_core::Result<Tensor> {
        let v: Vec<f32> = self
            .allowed
            .iter()
            .map(|&a| if a { 0.0 } else { f32::NEG_INFINITY })
            .collect();
        Tensor::from_vec(v, (self.rows, self.cols), device)?.to_dtype(dtype)
    }

    /// The mask as rows of `✓`/`·` (human-readable; snapshot tests).
    pub fn render(&self) -> String {
        let mut s = String::new();
        for r in 0..self.rows {
            for c in 0..self.cols {
                s.push(if self.is_allowed(r, c) { '✓' } else { '·' });
            }
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spiffy_mask_matches_fig3() {
        // Fig. 3 of Spiffy with blocks of one token: true blocks X1 X2,
        // drafting X1 with five draft blocks.
        let m = AttnMask::spiffy_draft_blocks(2, 0..1, 5);
        let want = "\
✓✓·····
✓✓·····
·✓✓····
·✓·✓···
·✓··✓··
·✓···✓·
·✓····✓
";
        assert_eq!(m.render(), want);
    }

    #[test]
    fn tree_and_causal_masks() {
        // chain = causal
        assert_eq!(
            AttnMask::tree(3, &[None, Some(0), Some(1)]),
            AttnMask::causal(3, 3)
        );
        // two branches from a root
        let m = AttnMask::tree(1, &[None, Some(0), Some(0), Some(2)]);
        assert_eq!(m.render(), "✓✓···\n✓✓✓··\n✓✓·✓·\n✓✓·✓✓\n");
    }

    #[test]
    fn block_causal_masks() {
        let m = AttnMask::block_causal(0, 0, 5, 2);
        assert_eq!(m.render(), "✓✓···\n✓✓···\n✓✓✓✓·\n✓✓✓✓·\n✓✓✓✓✓\n");
        // the same rows over a cache of the first two positions
        let c = AttnMask::block_causal(2, 2, 3, 2);
        assert_eq!(c.render(), "✓✓✓✓·\n✓✓✓✓·\n✓✓✓✓✓\n");
        // draft block for block 1 (positions 2..4): sees block 0 and itself
        let s = AttnMask::spiffy_block_causal(4, 2..4, 1, 2);
        assert_eq!(
            s.render(),
            "✓✓····\n✓✓····\n✓✓✓✓··\n✓✓✓✓··\n✓✓··✓✓\n✓✓··✓✓\n"
        );
    }
}
