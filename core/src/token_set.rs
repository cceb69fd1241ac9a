//! [`TokenSet`]: a fixed-size bitset over a vocabulary, the representation of
//! every allowed-token mask in zapspec.
//!
//! Word-level union/intersection/difference and a `trailing_zeros` iterator
//! make the operations the mask caches need (ZapFormat §4.3: OR-ing
//! precomputed context-independent sets, then adding context-dependent
//! tokens) cost one pass over `len / 64` words.

use crate::vocab::TokenId;

/// A set of token ids in `0..len`, stored as 64-bit words.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TokenSet {
    words: Vec<u64>,
    len: usize,
}

impl TokenSet {
    /// An empty set over a vocabulary of `len` tokens.
    pub fn new(len: usize) -> Self {
        TokenSet {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// The set of all `len` tokens.
    pub fn full(len: usize) -> Self {
        let mut s = Self::new(len);
        s.fill();
        s
    }

    /// Builds a set from token ids; ids `>= len` are ignored.
    pub fn from_ids<I: IntoIterator<Item = TokenId>>(len: usize, ids: I) -> Self {
        let mut s = Self::new(len);
        for t in ids {
            if (t as usize) < len {
                s.insert(t);
            }
        }
        s
    }

    /// Size of the universe (the vocabulary), not the number of members.
    pub fn universe(&self) -> usize {
        self.len
    }

    /// The raw words (bit `t % 64` of word `t / 64` is token `t`).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Mutable raw words; bits at or past `universe()` must stay clear.
    pub fn words_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }

    /// Whether `t` is a member; `false` for ids outside the universe. O(1).
    #[inline]
    pub fn contains(&self, t: TokenId) -> bool {
        let t = t as usize;
        t < self.len && (self.words[t >> 6] >> (t & 63)) & 1 == 1
    }

    /// Inserts `t`. Panics if `t` is outside the universe (a programming error,
    /// not user input: token ids come from the vocabulary).
    #[inline]
    pub fn insert(&mut self, t: TokenId) {
        let t = t as usize;
        assert!(t < self.len, "token {t} outside a TokenSet of {}", self.len);
        self.words[t >> 6] |= 1u64 << (t & 63);
    }

    /// Removes `t`; a no-op for ids outside the universe. O(1).
    #[inline]
    pub fn remove(&mut self, t: TokenId) {
        let t = t as usize;
        if t < self.len {
            self.words[t >> 6] &= !(1u64 << (t & 63));
        }
    }

    /// Removes every member.
    pub fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }

    /// Makes the set the whole universe.
    pub fn fill(&mut self) {
        self.words.iter_mut().for_each(|w| *w = u64::MAX);
        self.trim();
    }

    fn trim(&mut self) {
        let rem = self.len & 63;
        if rem != 0 {
            if let Some(last) = self.words.last_mut() {
                *last &= (1u64 << rem) - 1;
            }
        }
    }

    /// Number of members.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// True when no token is a member.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// `self ∪= other`. Both sets must share a universe.
    pub fn union_with(&mut self, other: &TokenSet) {
        debug_assert_eq!(self.len, other.len);
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= *b;
        }
    }

    /// `self ∩= other`.
    pub fn intersect_with(&mut self, other: &TokenSet) {
        debug_assert_eq!(self.len, other.len);
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= *b;
        }
    }

    /// `self \= other`.
    pub fn difference_with(&mut self, other: &TokenSet) {
        debug_assert_eq!(self.len, other.len);
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= !*b;
        }
    }

    /// True when every member of `self` is in `other`.
    pub fn is_subset(&self, other: &TokenSet) -> bool {
        self.words
            .iter()
            .zip(&other.words)
            .all(|(a, b)| a & !b == 0)
    }

    /// Members in increasing order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            words: &self.words,
            idx: 0,
            cur: self.words.first().copied().unwrap_or(0),
        }
    }

    /// The single member, if the set has exactly one.
    pub fn single(&self) -> Option<TokenId> {
        let mut it = self.iter();
        match (it.next(), it.next()) {
            (Some(t), None) => Some(t),
            _ => None,
        }
    }

    /// Approximate heap bytes used.
    pub fn heap_bytes(&self) -> usize {
        self.words.capacity() * 8
    }
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.count();
        write!(f, "TokenSet({n}/{}: ", self.len)?;
        let mut l = f.debug_list();
        for t in self.iter().take(32) {
            l.entry(&t);
        }
        l.finish()?;
        if n > 32 {
            write!(f, "…")?;
        }
        write!(f, ")")
    }
}

/// Iterator over the members of a [`TokenSet`].
pub struct Iter<'a> {
    words: &'a [u64],
    idx: usize,
    cur: u64,
}

impl Iterator for Iter<'_> {
    type Item = TokenId;
    #[inline]
    fn next(&mut self) -> Option<TokenId> {
        loop {
            if self.cur != 0 {
                let tz = self.cur.trailing_zeros() as usize;
                self.cur &= self.cur - 1;
                return Some((self.idx * 64 + tz) as TokenId);
            }
            self.idx += 1;
            if self.idx >= self.words.len() {
                return None;
            }
            self.cur = self.words[self.idx];
        }
    }
}

impl<'a> IntoIterator for &'a TokenSet {
    type Item = TokenId;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        #[test]
        fn matches_btreeset(len in 1usize..300, a in prop::collection::vec(0u32..300, 0..80), b in prop::collection::vec(0u32..300, 0..80)) {
            let sa = TokenSet::from_ids(len, a.iter().copied());
            let sb = TokenSet::from_ids(len, b.iter().copied());
            let ra: BTreeSet<u32> = a.iter().copied().filter(|&t| (t as usize) < len).collect();
            let rb: BTreeSet<u32> = b.iter().copied().filter(|&t| (t as usize) < len).collect();
            prop_assert_eq!(sa.iter().collect::<Vec<_>>(), ra.iter().copied().collect::<Vec<_>>());
            prop_assert_eq!(sa.count(), ra.len());
            let mut u = sa.clone(); u.union_with(&sb);
            prop_assert_eq!(u.iter().collect::<BTreeSet<_>>(), ra.union(&rb).copied().collect());
            let mut i = sa.clone(); i.intersect_with(&sb);
            prop_assert_eq!(i.iter().collect::<BTreeSet<_>>(), ra.intersection(&rb).copied().collect());
            let mut d = sa.clone(); d.difference_with(&sb);
            prop_assert_eq!(d.iter().collect::<BTreeSet<_>>(), ra.difference(&rb).copied().collect());
            prop_assert_eq!(sa.is_subset(&u), true);
            prop_assert_eq!(TokenSet::full(len).count(), len);
        }
    }

    #[test]
    fn single_and_empty() {
        let mut s = TokenSet::new(130);
        assert!(s.is_empty());
        assert_eq!(s.single(), None);
        s.insert(129);
        assert_eq!(s.single(), Some(129));
        s.insert(3);
        assert_eq!(s.single(), None);
        assert!(!s.contains(500));
    }
}
