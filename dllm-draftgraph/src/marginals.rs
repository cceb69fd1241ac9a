//! Per-position marginals of one denoising call, in log space, and the two
//! rankings Spiffy's draft formulas are written in: the **token position
//! rank** `i` (Eqs. 8, 10) and the **vocabulary rank** `j` (Eqs. 9, 11).
//!
//! Ranks are 1-based as in the paper (`c_11` is the most probable token at
//! the most confident position). Ties are broken deterministically: equal
//! confidences by lower block offset, equal probabilities by lower token
//! id. Only positions that are masked in the block the marginals were
//! computed on are ranked.
//!
//! The vocabulary rank sorts the whole vocabulary (Eq. 11's `ArgSort` over
//! `p_n(1), …, p_n(V)`), so a token of probability zero — a `-inf` logit, a
//! constrained-out token — has a rank too, after every token of positive
//! probability: a later step's marginals may unmask it, and calibration
//! must be able to write that step as a formula. The mask token is the one
//! id that is never ranked (it is never a candidate).

use zapspec_core::{Logits, TokenId};

use crate::error::SpiffyError;

/// Log-probabilities `log p_n(v)` (the model's marginals at temperature 1,
/// the mask token excluded) for every masked position `n` of a block.
#[derive(Debug, Clone)]
pub struct Marginals {
    vocab: usize,
    /// The mask token, never ranked.
    mask: TokenId,
    /// `rows[n]` is `Some(log p_n)` for a masked offset, `None` otherwise.
    rows: Vec<Option<Vec<f64>>>,
    /// `(argmax token, its log-probability)` per masked offset.
    top1: Vec<Option<(TokenId, f64)>>,
}

impl Marginals {
    /// Marginals of `block` (the block's current tokens) from the model's
    /// `logits` (shape `block.len() × vocab`). Rows of positions already
    /// unmasked are dropped. `O(L·V)`.
    pub fn new(logits: &Logits, block: &[TokenId], mask: TokenId) -> Result<Self, SpiffyError> {
        let (rows_n, vocab) = logits.dim();
        if rows_n != block.len() {
            return Err(SpiffyError::Shape {
                rows: rows_n,
                cols: vocab,
                want_rows: block.len(),
                want_cols: vocab,
            });
        }
        let mut rows = Vec::with_capacity(block.len());
        let mut top1 = Vec::with_capacity(block.len());
        for (n, &tok) in block.iter().enumerate() {
            if tok != mask {
                rows.push(None);
                top1.push(None);
                continue;
            }
            let mut l: Vec<f64> = logits
                .row(n)
                .iter()
                .map(|&x| {
                    if x.is_nan() {
                        f64::NEG_INFINITY
                    } else {
                        x as f64
                    }
                })
                .collect();
            if let Some(m) = l.get_mut(mask as usize) {
                *m = f64::NEG_INFINITY;
            }
            let max = l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if !max.is_finite() {
                return Err(SpiffyError::EmptySupport { offset: n });
            }
            let lse = max + l.iter().map(|&x| (x - max).exp()).sum::<f64>().ln();
            let mut best = (0 as TokenId, f64::NEG_INFINITY);
            for (v, x) in l.iter_mut().enumerate() {
                *x -= lse;
                if *x > best.1 {
                    best = (v as TokenId, *x);
                }
            }
            rows.push(Some(l));
            top1.push(Some(best));
        }
        Ok(Marginals {
            vocab,
            mask,
            rows,
            top1,
        })
    }

    /// Vocabulary size (columns of the logits).
    pub fn vocab(&self) -> usize {
        self.vocab
    }

    /// Block length.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the block is empty.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// `log p_n`, or `None` when offset `n` was not masked.
    pub fn row(&self, n: usize) -> Option<&[f64]> {
        self.rows.get(n).and_then(|r| r.as_deref())
    }

    /// `log p_n(v)`; `-inf` for an unmasked offset or an id past the vocabulary.
    pub fn log_prob(&self, n: usize, v: TokenId) -> f64 {
        self.row(n)
            .and_then(|r| r.get(v as usize).copied())
            .unwrap_or(f64::NEG_INFINITY)
    }

    /// The most probable token at offset `n` and its log-probability
    /// (`max p_n` of Eq. 8); `None` for an unmasked offset.
    pub fn top1(&self, n: usize) -> Option<(TokenId, f64)> {
        self.top1.get(n).copied().flatten()
    }

    /// Masked offsets sorted by descending confidence `max_v p_n(v)`
    /// (Eq. 8): element `i − 1` is the position of token position rank `i`.
    pub fn position_order(&self) -> Vec<usize> {
        let mut order: Vec<(usize, f64)> = self
            .top1
            .iter()
            .enumerate()
            .filter_map(|(n, t)| t.map(|(_, lp)| (n, lp)))
            .collect();
        order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        order.into_iter().map(|(n, _)| n).collect()
    }

    /// Vocabulary rank `j` (Eq. 11, 1-based) of token `v` at offset `n`:
    /// one plus the number of tokens (the mask excluded) strictly more
    /// probable, or equally probable with a lower id. A token of probability
    /// zero ranks after every token of positive probability. `None` for an
    /// unmasked offset, the mask token or an id past the vocabulary. `O(V)`.
    pub fn vocab_rank(&self, n: usize, v: TokenId) -> Option<u32> {
        let row = self.row(n)?;
        if v == self.mask {
            return None;
        }
        let lp = *row.get(v as usize)?;
        let above = row
            .iter()
            .enumerate()
            .filter(|&(u, &x)| {
                let u = u as TokenId;
                u != self.mask && (x > lp || (x == lp && u < v))
            })
            .count();
        Some(above as u32 + 1)
    }

    /// The token of vocabulary rank `j` (1-based) at offset `n` (`c_ij` of
    /// Eq. 9 once `n = n_i`), the inverse of [`Marginals::vocab_rank`];
    /// `None` for an unmasked offset or `j` past the vocabulary (the mask
    /// excluded). `O(V)` for `j = 1`, `O(V + j log j)` otherwise.
    pub fn token_at_rank(&self, n: usize, j: u32) -> Option<TokenId> {
        if j == 0 {
            return None;
        }
        if j == 1 {
            return self.top1(n).map(|(t, _)| t);
        }
        let row = self.row(n)?;
        let mut cand: Vec<(f64, TokenId)> = row
            .iter()
            .enumerate()
            .map(|(v, &x)| (x, v as TokenId))
            .filter(|&(_, v)| v != self.mask)
            .collect();
        let k = j as usize;
        if k > cand.len() {
            return None;
        }
        let cmp = |a: &(f64, TokenId), b: &(f64, TokenId)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        cand.select_nth_unstable_by(k - 1, cmp);
        Some(cand[k - 1].1)
    }
}
