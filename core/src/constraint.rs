//! The [`Constraint`] trait — one matcher state over a vocabulary — and two
//! small reference implementations that prove it: a finite token trie
//! ([`TrieConstraint`]) and a bounded Dyck automaton ([`DyckConstraint`]).
//!
//! ## The EOS convention
//!
//! Every constraint masks over a vocabulary that contains an EOS token.
//! EOS is in the mask exactly when the tokens so far form a complete member
//! of the language ([`Constraint::is_accepting`]); advancing by EOS
//! *finishes* the matcher, after which the mask is empty. Rolling back counts
//! EOS as a token like any other, so speculative decoding can undo it.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::token_set::TokenSet;
use crate::vocab::{TokenId, TokenVocab};

/// A token the constraint does not allow at this position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("token {token} rejected at position {position}: {reason}")]
pub struct Rejected {
    pub token: TokenId,
    /// Number of tokens consumed before the rejected one.
    pub position: usize,
    pub reason: String,
}

/// Rolling back more tokens than were consumed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot roll back {requested} tokens: only {available} consumed")]
pub struct RollbackError {
    pub requested: usize,
    pub available: usize,
}

/// The bookkeeping every [`Constraint::rollback`] shares: refuses rolling
/// back more than `available` tokens, un-finishes a matcher whose last
/// token was EOS (which counts as one token), and returns how many
/// non-EOS tokens are left to undo.
pub fn rollback_eos(
    n: usize,
    available: usize,
    finished: &mut bool,
) -> Result<usize, RollbackError> {
    if n > available {
        return Err(RollbackError {
            requested: n,
            available,
        });
    }
    if n > 0 && *finished {
        *finished = false;
        return Ok(n - 1);
    }
    Ok(n)
}

/// One matcher state over a vocabulary: computes the allowed-token mask,
/// advances by a token, forks (`Clone`) and rolls back for speculative
/// decoding.
pub trait Constraint: Clone {
    /// Size of the vocabulary the masks range over (EOS included).
    fn vocab_size(&self) -> usize;

    /// The EOS token of that vocabulary.
    fn eos(&self) -> TokenId;

    /// Writes the set of allowed next tokens into `mask` (its universe is
    /// [`vocab_size`](Constraint::vocab_size)); EOS is allowed iff
    /// [`is_accepting`](Constraint::is_accepting). `&mut self` lets engines
    /// update caches.
    fn fill_mask(&mut self, mask: &mut TokenSet);

    /// Consumes token `t`, or refuses it and leaves the state unchanged.
    fn advance(&mut self, t: TokenId) -> Result<(), Rejected>;

    /// Undoes the last `n_tokens` advances.
    fn rollback(&mut self, n_tokens: usize) -> Result<(), RollbackError>;

    /// True when the tokens consumed so far form a complete member of the
    /// language (so EOS is allowed now).
    fn is_accepting(&self) -> bool;

    /// True once EOS has been consumed.
    fn is_finished(&self) -> bool;

    /// Number of tokens consumed (EOS included), i.e. how far `rollback` can go.
    fn num_tokens(&self) -> usize;

    /// An independent copy of the state (for one-step look-ahead and
    /// speculative branches). Engines may share immutable tables.
    fn fork(&self) -> Self {
        self.clone()
    }

    /// Sparse mask: when the constraint can list its allowed next tokens
    /// without a vocabulary-sized pass, clears `out`, pushes them (any
    /// order, each once) and returns `true`; otherwise returns `false` and
    /// leaves `out` unspecified. The listed set must equal
    /// [`fill_mask`](Constraint::fill_mask)'s. One-step look-ahead (the
    /// future-validity paper's OneStep-Cheap, Def. 9) scores every
    /// candidate's successor set, so this turns `|A_t|` mask passes of
    /// `|V|/64` words into `Σ |A_{t+1}|` work. Default: `false`.
    fn allowed_sparse(&mut self, out: &mut Vec<TokenId>) -> bool {
        let _ = out;
        false
    }

    /// A key of the current mask: two states of the same matcher (same
    /// shared tables) with equal `Some` keys have equal masks, so callers
    /// may cache per-mask work by key (e.g. a DFA's state, a Dyck
    /// automaton's stack top). Default: `None` (no such key).
    fn mask_key(&self) -> Option<u64> {
        None
    }

    /// One-step look-ahead without advancing: `Some(k)` when `t` (not EOS)
    /// is allowed now and the state after `t` would report
    /// [`mask_key`](Constraint::mask_key) `Some(k)`; `None` when `t` is not
    /// allowed or the constraint cannot tell cheaply (callers then fork and
    /// advance). Lets a look-ahead over a large `A_t` group candidates by
    /// successor mask in O(1) each (a DFA: one table lookup). Default: `None`.
    fn successor_mask_key(&self, t: TokenId) -> Option<u64> {
        let _ = t;
        None
    }

    /// One-step look-ahead over the whole valid set without advancing:
    /// calls `f(t, next)` for every allowed non-EOS token `t`, in
    /// increasing token order, where `next` lists (sparsely, each once) the
    /// tokens allowed after `t`; returns `true`. Constraints that cannot do
    /// this cheaply return `false` without calling `f` (the default). A
    /// trie walks a node's children once instead of searching for each.
    fn for_each_successor(&self, f: &mut dyn FnMut(TokenId, &[TokenId])) -> bool {
        let _ = f;
        false
    }

    /// A fresh mask, filled.
    fn mask(&mut self) -> TokenSet {
        let mut m = TokenSet::new(self.vocab_size());
        self.fill_mask(&mut m);
        m
    }

    /// Whether `t` would be accepted now (by default: try it on a fork).
    fn allows(&mut self, t: TokenId) -> bool {
        let mut f = self.fork();
        f.advance(t).is_ok()
    }

    /// Tokens that are forced: while the mask has exactly one member and it
    /// is not EOS, that token is the only continuation (fast-forwarding,
    /// ZapFormat §5 / "jump-forward"). Returns them without consuming them;
    /// stops after `limit` tokens.
    fn forced_tokens(&mut self, limit: usize) -> Vec<TokenId> {
        let mut f = self.fork();
        let mut out = Vec::new();
        let mut m = TokenSet::new(self.vocab_size());
        while out.len() < limit {
            f.fill_mask(&mut m);
            match m.single() {
                Some(t) if t != f.eos() => {
                    if f.advance(t).is_err() {
                        break;
                    }
                    out.push(t);
                }
                _ => break,
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Finite token trie
// ---------------------------------------------------------------------------

/// A trie over token sequences: the finite language it represents is the set
/// of root-to-terminal paths. Shared (immutable) between matcher states.
///
/// Stored flat (compressed sparse rows): the children of node `n` are
/// `child_tok[child_start[n]..child_start[n + 1]]` (sorted by token) with
/// their nodes in `child_node`, so walking a wide node's children reads two
/// contiguous arrays instead of a tree of heap nodes.
#[derive(Debug, Clone)]
pub struct TokenTrie {
    child_start: Vec<u32>,
    child_tok: Vec<TokenId>,
    child_node: Vec<u32>,
    terminal: Vec<bool>,
}

impl Default for TokenTrie {
    fn default() -> Self {
        TokenTrie::new(std::iter::empty::<Vec<TokenId>>())
    }
}

impl TokenTrie {
    /// Builds the trie of a finite language of token sequences.
    pub fn new<I, S>(sequences: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[TokenId]>,
    {
        let mut kids: Vec<BTreeMap<TokenId, u32>> = vec![BTreeMap::new()];
        let mut terminal = vec![false];
        for s in sequences {
            let mut n = 0usize;
            for &tok in s.as_ref() {
                let next = kids.len() as u32;
                let child = *kids[n].entry(tok).or_insert(next);
                if child == next {
                    kids.push(BTreeMap::new());
                    terminal.push(false);
                }
                n = child as usize;
            }
            terminal[n] = true;
        }
        let mut child_start = Vec::with_capacity(kids.len() + 1);
        let mut child_tok = Vec::new();
        let mut child_node = Vec::new();
        for k in &kids {
            child_start.push(child_tok.len() as u32);
            for (&t, &c) in k {
                child_tok.push(t);
                child_node.push(c);
            }
        }
        child_start.push(child_tok.len() as u32);
        TokenTrie {
            child_start,
            child_tok,
            child_node,
            terminal,
        }
    }

    /// The root node (the empty prefix).
    pub fn root(&self) -> usize {
        0
    }

    pub fn num_nodes(&self) -> usize {
        self.terminal.len()
    }

    #[inline]
    fn range(&self, node: usize) -> std::ops::Range<usize> {
        self.child_start[node] as usize..self.child_start[node + 1] as usize
    }

    /// Children of `node` as (token, child node), in token order.
    pub fn children(&self, node: usize) -> impl Iterator<Item = (TokenId, usize)> + '_ {
        let r = self.range(node);
        self.child_tok[r.clone()]
            .iter()
            .zip(&self.child_node[r])
            .map(|(&t, &c)| (t, c as usize))
    }

    /// The child reached from `node` by `t`.
    pub fn child(&self, node: usize, t: TokenId) -> Option<usize> {
        let r = self.range(node);
        let toks = &self.child_tok[r.clone()];
        toks.binary_search(&t)
            .ok()
            .map(|i| self.child_node[r.start + i] as usize)
    }

    /// True when the path to `node` is a member of the language.
    pub fn is_terminal(&self, node: usize) -> bool {
        self.terminal[node]
    }

    /// Every member, in lexicographic token order.
    pub fn sequences(&self) -> Vec<Vec<TokenId>> {
        let mut out = Vec::new();
        let mut path = Vec::new();
        self.collect(0, &mut path, &mut out);
        out
    }

    fn collect(&self, n: usize, path: &mut Vec<TokenId>, out: &mut Vec<Vec<TokenId>>) {
        if self.terminal[n] {
            out.push(path.clone());
        }
        for (t, c) in self.children(n) {
            path.push(t);
            self.collect(c, path, out);
            path.pop();
        }
    }
}

/// A [`Constraint`] for a finite language of token sequences.
#[derive(Debug, Clone)]
pub struct TrieConstraint {
    trie: Arc<TokenTrie>,
    vocab_size: usize,
    eos: TokenId,
    /// Nodes visited, root first; `path.len() - 1` tokens consumed (EOS aside).
    path: Vec<usize>,
    finished: bool,
}

impl TrieConstraint {
    /// A matcher for `trie` over a vocabulary of `vocab_size` tokens whose EOS
    /// is `eos`. Sequences must not contain EOS.
    pub fn new(trie: Arc<TokenTrie>, vocab_size: usize, eos: TokenId) -> Self {
        TrieConstraint {
            trie,
            vocab_size,
            eos,
            path: vec![0],
            finished: false,
        }
    }

    /// Convenience: a finite language of texts, tokenized with `vocab`.
    pub fn from_texts(vocab: &TokenVocab, texts: &[&str]) -> Result<Self, crate::VocabError> {
        use crate::Vocabulary;
        let seqs = texts
            .iter()
            .map(|t| vocab.encode(t))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::new(
            Arc::new(TokenTrie::new(seqs)),
            vocab.len(),
            vocab.eos(),
        ))
    }

    pub fn trie(&self) -> &Arc<TokenTrie> {
        &self.trie
    }

    /// The trie node of the current prefix.
    pub fn node(&self) -> usize {
        *self.path.last().unwrap_or(&0)
    }
}

impl Constraint for TrieConstraint {
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }
    fn eos(&self) -> TokenId {
        self.eos
    }
    fn fill_mask(&mut self, mask: &mut TokenSet) {
        mask.clear();
        if self.finished {
            return;
        }
        let n = self.node();
        for (t, _) in self.trie.children(n) {
            if (t as usize) < self.vocab_size {
                mask.insert(t);
            }
        }
        if self.trie.is_terminal(n) {
            mask.insert(self.eos);
        }
    }
    fn allowed_sparse(&mut self, out: &mut Vec<TokenId>) -> bool {
        out.clear();
        if self.finished {
            return true;
        }
        let n = self.node();
        out.extend(
            self.trie
                .children(n)
                .map(|(t, _)| t)
                .filter(|&t| (t as usize) < self.vocab_size),
        );
        if self.trie.is_terminal(n) {
            out.push(self.eos);
        }
        true
    }
    fn mask_key(&self) -> Option<u64> {
        // the mask is a function of the trie node (and of being finished)
        Some(if self.finished {
            u64::MAX
        } else {
            self.node() as u64
        })
    }
    fn for_each_successor(&self, f: &mut dyn FnMut(TokenId, &[TokenId])) -> bool {
        if self.finished {
            return true;
        }
        let mut next = Vec::new();
        for (t, c) in self.trie.children(self.node()) {
            if (t as usize) >= self.vocab_size {
                continue;
            }
            next.clear();
            next.extend(
                self.trie
                    .children(c)
                    .map(|(u, _)| u)
                    .filter(|&u| (u as usize) < self.vocab_size),
            );
            if self.trie.is_terminal(c) {
                next.push(self.eos);
            }
            f(t, &next);
        }
        true
    }
    fn advance(&mut self, t: TokenId) -> Result<(), Rejected> {
        let position = self.num_tokens();
        let reject = |reason: &str| Rejected {
            token: t,
            position,
            reason: reason.into(),
        };
        if self.finished {
            return Err(reject("already finished"));
        }
        if t == self.eos {
            if self.is_accepting() {
                self.finished = true;
                return Ok(());
            }
            return Err(reject("EOS before a complete member"));
        }
        match self.trie.child(self.node(), t) {
            Some(c) => {
                self.path.push(c);
                Ok(())
            }
            None => Err(reject("no member continues with this token")),
        }
    }
    fn rollback(&mut self, n: usize) -> Result<(), RollbackError> {
        let n = rollback_eos(n, self.num_tokens(), &mut self.finished)?;
        self.path.truncate(self.path.len() - n);
        Ok(())
    }
    fn is_accepting(&self) -> bool {
        !self.finished && self.trie.is_terminal(self.node())
    }
    fn is_finished(&self) -> bool {
        self.finished
    }
    fn num_tokens(&self) -> usize {
        self.path.len() - 1 + usize::from(self.finished)
    }
}

// ---------------------------------------------------------------------------
// Bounded Dyck automaton
// ---------------------------------------------------------------------------

/// The bounded Dyck language D: balanced strings over `kinds` bracket types
/// with nesting depth at most `max_depth` and length at most `max_len` (the
/// empty string included). With one kind, `D_{3,16}` (`max_depth` 3,
/// `max_len` 16) has 988 members and `D_{3,12}` has 145 — the languages of
/// the future-validity paper's experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DyckSpec {
    pub kinds: usize,
    pub max_depth: usize,
    pub max_len: usize,
}

impl DyckSpec {
    /// Token `i < kinds` opens bracket kind `i`, token `kinds + i` closes it,
    /// token `2·kinds` is EOS.
    pub fn vocab(&self) -> TokenVocab {
        const PAIRS: [(u8, u8); 4] = [(b'(', b')'), (b'[', b']'), (b'{', b'}'), (b'<', b'>')];
        let pair = |i: usize| -> (Vec<u8>, Vec<u8>) {
            match PAIRS.get(i) {
                Some(&(o, c)) => (vec![o], vec![c]),
                None => (format!("(#{i}").into_bytes(), format!("#{i})").into_bytes()),
            }
        };
        let mut toks: Vec<Vec<u8>> = (0..self.kinds).map(|i| pair(i).0).collect();
        toks.extend((0..self.kinds).map(|i| pair(i).1));
        toks.push(Vec::new());
        let eos = (2 * self.kinds) as TokenId;
        // Infallible: eos is the last id.
        TokenVocab::from_tokens(format!("dyck{}", self.kinds), toks, &[], eos).expect("dyck vocab")
    }

    pub fn open(&self, kind: usize) -> TokenId {
        kind as TokenId
    }
    pub fn close(&self, kind: usize) -> TokenId {
        (self.kinds + kind) as TokenId
    }
    pub fn eos(&self) -> TokenId {
        (2 * self.kinds) as TokenId
    }
    pub fn vocab_size(&self) -> usize {
        2 * self.kinds + 1
    }
}

/// A [`Constraint`] for a [`DyckSpec`] language. It allows an opening
/// bracket only when the string can still be closed within `max_len`, so
/// every prefix it allows extends to a member (no dead ends).
#[derive(Debug, Clone)]
pub struct DyckConstraint {
    spec: DyckSpec,
    stack: Vec<u16>,
    history: Vec<TokenId>,
    finished: bool,
}

impl DyckConstraint {
    pub fn new(spec: DyckSpec) -> Self {
        DyckConstraint {
            spec,
            stack: Vec::new(),
            history: Vec::new(),
            finished: false,
        }
    }
    pub fn spec(&self) -> DyckSpec {
        self.spec
    }
    /// Current nesting depth.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }
    /// Brackets consumed (EOS excluded).
    pub fn len(&self) -> usize {
        self.history.len() - usize::from(self.finished)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn can_open(&self) -> bool {
        let d = self.stack.len();
        d < self.spec.max_depth && self.len() + d + 2 <= self.spec.max_len
    }
}

impl Constraint for DyckConstraint {
    fn vocab_size(&self) -> usize {
        self.spec.vocab_size()
    }
    fn eos(&self) -> TokenId {
        self.spec.eos()
    }
    fn fill_mask(&mut self, mask: &mut TokenSet) {
        mask.clear();
        if self.finished {
            return;
        }
        if self.can_open() {
            for k in 0..self.spec.kinds {
                mask.insert(self.spec.open(k));
            }
        }
        match self.stack.last() {
            Some(&k) => mask.insert(self.spec.close(k as usize)),
            None => mask.insert(self.spec.eos()),
        }
    }
    fn allowed_sparse(&mut self, out: &mut Vec<TokenId>) -> bool {
        out.clear();
        if self.finished {
            return true;
        }
        if self.can_open() {
            out.extend((0..self.spec.kinds).map(|k| self.spec.open(k)));
        }
        out.push(match self.stack.last() {
            Some(&k) => self.spec.close(k as usize),
            None => self.spec.eos(),
        });
        true
    }
    fn mask_key(&self) -> Option<u64> {
        // the mask depends only on: finished, whether an opening fits, the stack top
        if self.finished {
            return Some(u64::MAX);
        }
        let top = self.stack.last().map_or(0, |&k| k as u64 + 1);
        Some((top << 1) | u64::from(self.can_open()))
    }
    fn advance(&mut self, t: TokenId) -> Result<(), Rejected> {
        let position = self.num_tokens();
        let reject = |reason: &str| Rejected {
            token: t,
            position,
            reason: reason.into(),
        };
        let k = self.spec.kinds;
        let ti = t as usize;
        if self.finished {
            return Err(reject("already finished"));
        }
        if ti < k {
            if !self.can_open() {
                return Err(reject("opening would exceed the depth or length bound"));
            }
            self.stack.push(ti as u16);
        } else if ti < 2 * k {
            if self.stack.last() != Some(&((ti - k) as u16)) {
                return Err(reject("closing bracket does not match the open one"));
            }
            self.stack.pop();
        } else if t == self.spec.eos() {
            if !self.stack.is_empty() {
                return Err(reject("EOS with unclosed brackets"));
            }
            self.finished = true;
        } else {
            return Err(reject("not a Dyck token"));
        }
        self.history.push(t);
        Ok(())
    }
    fn rollback(&mut self, n: usize) -> Result<(), RollbackError> {
        let available = self.history.len();
        if n > available {
            return Err(RollbackError {
                requested: n,
                available,
            });
        }
        let k = self.spec.kinds;
        for _ in 0..n {
            // Non-empty: n <= history.len().
            let t = self.history.pop().unwrap_or(0) as usize;
            if t < k {
                self.stack.pop();
            } else if t < 2 * k {
                self.stack.push((t - k) as u16);
            } else {
                self.finished = false;
            }
        }
        Ok(())
    }
    fn is_accepting(&self) -> bool {
        !self.finished && self.stack.is_empty()
    }
    fn is_finished(&self) -> bool {
        self.finished
    }
    fn num_tokens(&self) -> usize {
        self.history.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// Enumerates the language of a constraint by walking its masks.
    fn enumerate<C: Constraint>(c: &mut C, prefix: &mut Vec<TokenId>, out: &mut Vec<Vec<TokenId>>) {
        let m = c.mask();
        for t in m.iter() {
            if t == c.eos() {
                out.push(prefix.clone());
                continue;
            }
            c.advance(t).unwrap();
            prefix.push(t);
            enumerate(c, prefix, out);
            prefix.pop();
            c.rollback(1).unwrap();
        }
    }

    /// Independent membership test for bounded Dyck strings.
    fn is_dyck(s: &[TokenId], spec: DyckSpec) -> bool {
        let mut st = Vec::new();
        if s.len() > spec.max_len {
            return false;
        }
        for &t in s {
            let t = t as usize;
            if t < spec.kinds {
                st.push(t);
                if st.len() > spec.max_depth {
                    return false;
                }
            } else if st.pop() != Some(t - spec.kinds) {
                return false;
            }
        }
        st.is_empty()
    }

    #[test]
    fn dyck_counts_match_the_paper() {
        for (d, l, n) in [(3, 16, 988), (3, 12, 145)] {
            let spec = DyckSpec {
                kinds: 1,
                max_depth: d,
                max_len: l,
            };
            let mut out = Vec::new();
            enumerate(&mut DyckConstraint::new(spec), &mut Vec::new(), &mut out);
            assert_eq!(out.len(), n, "D_{{{d},{l}}}");
        }
    }

    #[test]
    fn dyck_matches_brute_force() {
        let spec = DyckSpec {
            kinds: 2,
            max_depth: 2,
            max_len: 8,
        };
        let mut out = Vec::new();
        enumerate(&mut DyckConstraint::new(spec), &mut Vec::new(), &mut out);
        let got: BTreeSet<_> = out.into_iter().collect();
        // brute force: every string over the 4 brackets up to length 8
        let mut want = BTreeSet::new();
        let mut cur: Vec<Vec<TokenId>> = vec![vec![]];
        for _ in 0..=spec.max_len {
            let mut next = Vec::new();
            for s in &cur {
                if is_dyck(s, spec) {
                    want.insert(s.clone());
                }
                if s.len() < spec.max_len {
                    for t in 0..4 {
                        let mut s2 = s.clone();
                        s2.push(t);
                        next.push(s2);
                    }
                }
            }
            cur = next;
        }
        assert_eq!(got, want);
    }

    proptest! {
        #[test]
        fn trie_language_is_its_sequences(seqs in prop::collection::vec(prop::collection::vec(0u32..5, 0..5), 1..8)) {
            let trie = Arc::new(TokenTrie::new(&seqs));
            let mut c = TrieConstraint::new(trie.clone(), 6, 5);
            let mut out = Vec::new();
            enumerate(&mut c, &mut Vec::new(), &mut out);
            let got: BTreeSet<_> = out.into_iter().collect();
            let want: BTreeSet<_> = seqs.iter().cloned().collect();
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(trie.sequences().into_iter().collect::<BTreeSet<_>>(), want);
        }

        #[test]
        fn advance_rollback_restores_masks(ops in prop::collection::vec(0u32..5, 0..30), back in 0usize..10) {
            let spec = DyckSpec { kinds: 2, max_depth: 3, max_len: 10 };
            let mut c = DyckConstraint::new(spec);
            let mut masks = vec![c.mask()];
            for t in ops {
                if c.advance(t).is_ok() {
                    masks.push(c.mask());
                }
            }
            let n = back.min(c.num_tokens());
            c.rollback(n).unwrap();
            prop_assert_eq!(c.mask(), masks[masks.len() - 1 - n].clone());
            prop_assert!(c.rollback(c.num_tokens() + 1).is_err());
        }
    }

    /// `allowed_sparse` lists `fill_mask`'s set, and equal `mask_key`s mean
    /// equal masks, on every state reached by a walk.
    fn check_sparse_and_keys<C: Constraint>(c: &mut C, ops: &[TokenId]) {
        let mut by_key: std::collections::HashMap<u64, TokenSet> = Default::default();
        let mut list = Vec::new();
        for &t in ops.iter().chain(std::iter::once(&c.eos())) {
            let m = c.mask();
            // for_each_successor, if supported, agrees with advancing a fork
            let mut seen = Vec::new();
            let c2 = c.clone();
            if c2.for_each_successor(&mut |y, next| seen.push((y, next.to_vec()))) {
                let want: Vec<TokenId> = m.iter().filter(|&y| y != c.eos()).collect();
                assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), want);
                for (y, next) in &seen {
                    let mut f = c.fork();
                    f.advance(*y).unwrap();
                    assert_eq!(
                        TokenSet::from_ids(c.vocab_size(), next.iter().copied()),
                        f.mask()
                    );
                    assert_eq!(next.len(), f.mask().count());
                }
            }
            assert!(c.allowed_sparse(&mut list));
            assert_eq!(TokenSet::from_ids(c.vocab_size(), list.iter().copied()), m);
            assert_eq!(list.len(), m.count(), "duplicates in the sparse list");
            let k = c.mask_key().expect("key");
            assert_eq!(
                by_key.entry(k).or_insert_with(|| m.clone()),
                &m,
                "key {k} with two masks"
            );
            let _ = c.advance(t);
        }
    }

    proptest! {
        #[test]
        fn sparse_masks_and_keys_agree(ops in prop::collection::vec(0u32..6, 0..24), seqs in prop::collection::vec(prop::collection::vec(0u32..5, 0..5), 1..8)) {
            let spec = DyckSpec { kinds: 2, max_depth: 3, max_len: 10 };
            check_sparse_and_keys(&mut DyckConstraint::new(spec), &ops);
            let trie = Arc::new(TokenTrie::new(&seqs));
            check_sparse_and_keys(&mut TrieConstraint::new(trie, 6, 5), &ops);
        }
    }

    #[test]
    fn eos_finishes_and_rolls_back() {
        let trie = Arc::new(TokenTrie::new([vec![0u32], vec![0, 1]]));
        let mut c = TrieConstraint::new(trie, 3, 2);
        assert!(c.advance(2).is_err());
        c.advance(0).unwrap();
        assert!(c.is_accepting());
        assert_eq!(c.forced_tokens(5), Vec::<TokenId>::new()); // 1 or EOS: not forced
        c.advance(2).unwrap();
        assert!(c.is_finished());
        assert!(c.mask().is_empty());
        assert!(c.advance(1).is_err());
        c.rollback(1).unwrap();
        assert!(!c.is_finished());
        c.advance(1).unwrap();
        assert_eq!(c.num_tokens(), 2);
    }

    #[test]
    fn forced_tokens_follow_single_paths() {
        let trie = Arc::new(TokenTrie::new([vec![0u32, 1, 2], vec![0, 1, 3]]));
        let mut c = TrieConstraint::new(trie, 5, 4);
        assert_eq!(c.forced_tokens(10), vec![0, 1]);
        assert_eq!(c.num_tokens(), 0, "forced_tokens must not consume");
    }
}
