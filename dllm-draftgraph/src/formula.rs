//! Draft formulas (§4.4.2–4.4.3): a draft block is the anchor block with
//! extra tokens `c_ij` unmasked, and a **draft formula** is the set of
//! `(i, j)` = (token position rank, vocabulary rank) pairs naming them
//! (Eqs. 8–11). A formula is filled into a concrete draft block from the
//! marginals of the anchor state ([`Anchor::fill`]); conversely the tokens
//! a trajectory unmasked are written as a formula ([`Anchor::formula_of`]).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use zapspec_core::TokenId;

use crate::error::SpiffyError;
use crate::marginals::Marginals;

/// A set of `(i, j)` pairs, 1-based, at most one per position rank `i`.
/// Serialised as a list of `[i, j]` pairs in increasing order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(try_from = "Vec<(u32, u32)>", into = "Vec<(u32, u32)>")]
pub struct DraftFormula(BTreeSet<(u32, u32)>);

impl TryFrom<Vec<(u32, u32)>> for DraftFormula {
    type Error = SpiffyError;
    fn try_from(pairs: Vec<(u32, u32)>) -> Result<Self, SpiffyError> {
        DraftFormula::new(pairs)
    }
}

impl From<DraftFormula> for Vec<(u32, u32)> {
    fn from(f: DraftFormula) -> Self {
        f.0.into_iter().collect()
    }
}

impl DraftFormula {
    /// A formula from `(i, j)` pairs; ranks start at 1 and each position
    /// rank appears once.
    pub fn new(pairs: impl IntoIterator<Item = (u32, u32)>) -> Result<Self, SpiffyError> {
        let set: BTreeSet<(u32, u32)> = pairs.into_iter().collect();
        if let Some(&(i, j)) = set.iter().find(|&&(i, j)| i == 0 || j == 0) {
            return Err(SpiffyError::Formula(format!(
                "({i}, {j}): ranks are 1-based"
            )));
        }
        let positions: BTreeSet<u32> = set.iter().map(|&(i, _)| i).collect();
        if positions.len() != set.len() {
            return Err(SpiffyError::Formula(
                "two tokens for one position rank".to_string(),
            ));
        }
        Ok(DraftFormula(set))
    }

    /// The `(i, j)` pairs in increasing order.
    pub fn pairs(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.0.iter().copied()
    }

    /// Number of tokens the formula unmasks.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it unmasks nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `self ⊆ other`.
    pub fn is_subset(&self, other: &DraftFormula) -> bool {
        self.0.is_subset(&other.0)
    }

    /// `self ⊂ other` (Eq. 6).
    pub fn is_strict_subset(&self, other: &DraftFormula) -> bool {
        self.0.len() < other.0.len() && self.0.is_subset(&other.0)
    }

    /// Whether the pair is in the formula.
    pub fn contains(&self, pair: (u32, u32)) -> bool {
        self.0.contains(&pair)
    }

    /// The union (the caller guarantees one token per position rank).
    pub(crate) fn union_unchecked(&self, other: &DraftFormula) -> DraftFormula {
        DraftFormula(self.0.union(&other.0).copied().collect())
    }

    pub(crate) fn insert_unchecked(&mut self, pair: (u32, u32)) {
        self.0.insert(pair);
    }
}

impl std::fmt::Display for DraftFormula {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{{")?;
        for (k, (i, j)) in self.0.iter().enumerate() {
            if k > 0 {
                write!(f, ",")?;
            }
            write!(f, "({i},{j})")?;
        }
        write!(f, "}}")
    }
}

/// The state drafts are written against: a block and the marginals the
/// model gave for it. Position ranks are over the block's masked offsets.
#[derive(Debug, Clone)]
pub struct Anchor {
    block: Vec<TokenId>,
    marg: Marginals,
    /// Offsets by position rank (`order[i - 1] = n_i`).
    order: Vec<usize>,
    /// Position rank of each offset (0 when unmasked).
    rank_of: Vec<u32>,
}

impl Anchor {
    /// The anchor of `block` with its marginals `marg`. `O(L log L)`.
    pub fn new(block: Vec<TokenId>, marg: Marginals) -> Self {
        let order = marg.position_order();
        let mut rank_of = vec![0u32; block.len()];
        for (r, &n) in order.iter().enumerate() {
            rank_of[n] = r as u32 + 1;
        }
        Anchor {
            block,
            marg,
            order,
            rank_of,
        }
    }

    /// The anchor block's tokens.
    pub fn block(&self) -> &[TokenId] {
        &self.block
    }

    /// The marginals of the anchor block.
    pub fn marginals(&self) -> &Marginals {
        &self.marg
    }

    /// Block offset of position rank `i` (`n_i`, Eq. 8).
    pub fn offset_of_rank(&self, i: u32) -> Option<usize> {
        (i as usize)
            .checked_sub(1)
            .and_then(|k| self.order.get(k).copied())
    }

    /// The draft block of a formula: the anchor block with `c_ij` written at
    /// offset `n_i` for every `(i, j)`; `None` when a rank lies past the
    /// masked positions or the vocabulary. `O(|f|·V)`.
    pub fn fill(&self, f: &DraftFormula) -> Option<Vec<TokenId>> {
        let mut out = self.block.clone();
        for (i, j) in f.pairs() {
            let n = self.offset_of_rank(i)?;
            out[n] = self.marg.token_at_rank(n, j)?;
        }
        Some(out)
    }

    /// `Σ log p_{n_i}(c_ij)` over the formula and its size, or `None` when
    /// it cannot be filled (the log of Eq. 12's product). `O(|f|·V)`.
    pub fn log_prob(&self, f: &DraftFormula) -> Option<f64> {
        let mut s = 0.0;
        for (i, j) in f.pairs() {
            let n = self.offset_of_rank(i)?;
            let t = self.marg.token_at_rank(n, j)?;
            s += self.marg.log_prob(n, t);
        }
        Some(s)
    }

    /// The formula of a later state: the `(i, j)` of every token `state`
    /// has at an offset masked in the anchor. `None` when `state` differs
    /// from the anchor at an unmasked offset, has another length, or holds
    /// the mask token or an id past the vocabulary at a changed offset (a
    /// token of probability zero has a rank, see [`Marginals::vocab_rank`]).
    /// `O(k·V)` for `k` new tokens.
    pub fn formula_of(&self, state: &[TokenId]) -> Option<DraftFormula> {
        if state.len() != self.block.len() {
            return None;
        }
        let mut f = DraftFormula::default();
        for (n, (&a, &s)) in self.block.iter().zip(state).enumerate() {
            if a == s {
                continue;
            }
            let i = self.rank_of[n];
            if i == 0 {
                return None;
            }
            let j = self.marg.vocab_rank(n, s)?;
            f.insert_unchecked((i, j));
        }
        Some(f)
    }
}
