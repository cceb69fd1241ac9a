//! # zapspec-toktrie — the vocabulary as a flat byte trie
//!
//! A byte trie over token strings, flattened in depth-first preorder with
//! subtree sizes (the layout of llguidance's `toktrie`). It knows no
//! grammar: a caller walks it against its own byte-level parser, which
//! accepts or refuses one byte at a time. A prefix shared by many tokens is
//! then parsed once, and a refused node skips its whole subtree with one
//! addition. This is how a token mask is computed without a pass over the
//! vocabulary per token: the Earley engine (`zapspec-earley`: its
//! context-independent cache entries, vocabulary slices and
//! context-dependent walks) and the Copy-as-Decode program FSM
//! (`zapspec-copy`) both walk a [`TokTrie`].
//!
//! ## Walks
//!
//! - [`TokTrie::walk`] against a [`Walker`] (a parser with `push(byte)` and
//!   `pop()`, such as an Earley chart that can undo a byte): every node
//!   whose byte the walker accepts is descended into and its tokens are
//!   emitted; [`TokTrie::walk_uncovered`] also skips subtrees whose tokens
//!   are all in a mask already.
//! - [`TokTrie::walk_states`] for a `Copy` automaton state and a step
//!   function: the state after each node is kept in an array indexed by
//!   depth, so nothing is undone.
//! - [`TokTrie::merge_subtrees`]: the trie of the remainders below a set of
//!   nodes (the suffixes of the tokens a terminal can end inside).
//!
//! ## Cost
//!
//! - **Memory**: 12 bytes a node plus 4 bytes a token. There is one node
//!   per distinct non-empty prefix of the token strings, at most
//!   `Σ |token|` and far fewer in practice (o200k: 200k tokens, 421k nodes,
//!   about 6 MiB in all; about 30 bytes a token).
//! - **Build** ([`TokTrie::from_vocab`]): sorting the token strings,
//!   `O(Σ |token| + |V| log |V|)` byte comparisons, then one linear pass.
//! - **Walk**: one step of the caller's parser per visited node; a refused
//!   node costs one step and skips its subtree in `O(1)`. A walk that
//!   accepts everything visits every node (`O(N)`); one that refuses most
//!   first bytes visits a few hundred.
//!
//! ## Limits
//!
//! A node's depth is a `u16`: a token longer than [`MAX_TOKEN_BYTES`]
//! bytes is left out of the trie (no walk ever reports it), as are token
//! ids past `u32::MAX` and, should the trie reach `u32::MAX` nodes, the
//! tokens that would take it past (no real vocabulary comes near either
//! bound).

use zapspec_core::{TokenId, TokenSet, Vocabulary};

/// The longest token (in bytes) a [`TokTrie`] holds; longer tokens are left
/// out (see the crate docs).
pub const MAX_TOKEN_BYTES: usize = u16::MAX as usize;

/// Most nodes a trie holds (node indices are `u32`, one kept for the
/// sentinel).
const MAX_NODES: usize = u32::MAX as usize - 1;

/// One trie node: the byte that leads to it, its depth (root = 0), the
/// number of nodes in its subtree (itself included), and the first of its
/// tokens in [`TokTrie::tokens`].
#[derive(Clone, Copy, Debug)]
struct Node {
    byte: u8,
    depth: u16,
    subtree: u32,
    tok_start: u32,
}

impl Node {
    /// A node with no descendants yet, its tokens starting at `tok_start`.
    fn leaf(byte: u8, depth: u16, tok_start: usize) -> Node {
        Node {
            byte,
            depth,
            subtree: 1,
            tok_start: tok_start as u32,
        }
    }
}

/// A flattened byte trie over `(bytes, token)` entries (see the crate
/// docs). Node 0 is the root; node `i`'s subtree is `i..i + subtree`.
#[derive(Clone, Debug)]
pub struct TokTrie {
    /// Preorder nodes, then a sentinel whose `tok_start` is `tokens.len()`.
    nodes: Vec<Node>,
    /// Tokens in preorder; node `i` owns `tokens[nodes[i].tok_start..nodes[i+1].tok_start]`.
    tokens: Vec<TokenId>,
    max_depth: usize,
}

impl Default for TokTrie {
    /// The empty trie (a root, no tokens).
    fn default() -> Self {
        TokTrie::from_sorted(&[])
    }
}

impl TokTrie {
    /// The trie of every non-special token of `vocab` with non-empty bytes
    /// (a token over [`MAX_TOKEN_BYTES`] is left out, crate docs).
    pub fn from_vocab(vocab: &(impl Vocabulary + ?Sized)) -> Self {
        let len = vocab.len().min(TokenId::MAX as usize + 1);
        let mut entries: Vec<(&[u8], TokenId)> = (0..len)
            .map(|t| t as TokenId)
            .filter(|&t| !vocab.is_special(t))
            .map(|t| (vocab.token_bytes(t), t))
            .filter(|(b, _)| !b.is_empty())
            .collect();
        entries.sort_unstable();
        Self::from_sorted(&entries)
    }

    /// The trie of `(bytes, token)` entries sorted by bytes (empty byte
    /// strings sit at the root; an entry over [`MAX_TOKEN_BYTES`] is left
    /// out).
    pub fn from_sorted(entries: &[(&[u8], TokenId)]) -> Self {
        let mut nodes = vec![Node::leaf(0, 0, 0)];
        let mut tokens = Vec::with_capacity(entries.len());
        let mut cur: Vec<u8> = Vec::new();
        let mut max_depth = 0;
        for &(bytes, tok) in entries {
            // Common prefix with the current path.
            let mut l = 0;
            while l < cur.len() && l < bytes.len() && cur[l] == bytes[l] {
                l += 1;
            }
            if bytes.len() > MAX_TOKEN_BYTES || nodes.len() + (bytes.len() - l) > MAX_NODES {
                continue;
            }
            cur.truncate(l);
            for &b in &bytes[l..] {
                nodes.push(Node::leaf(b, (cur.len() + 1) as u16, tokens.len()));
                cur.push(b);
            }
            max_depth = max_depth.max(bytes.len());
            tokens.push(tok);
        }
        // Nodes were created before their tokens, so `tok_start` is right.
        // Subtree sizes:
        let n = nodes.len();
        let mut stack: Vec<usize> = Vec::new();
        for i in 0..n {
            let d = nodes[i].depth as usize;
            while stack.len() > d {
                if let Some(j) = stack.pop() {
                    nodes[j].subtree = (i - j) as u32;
                }
            }
            stack.push(i);
        }
        while let Some(j) = stack.pop() {
            nodes[j].subtree = (n - j) as u32;
        }
        let mut trie = TokTrie {
            nodes,
            tokens,
            max_depth,
        };
        trie.seal();
        trie
    }

    /// Appends the sentinel node (its `tok_start` ends the last node's
    /// tokens).
    fn seal(&mut self) {
        let end = self.tokens.len();
        self.nodes.push(Node {
            subtree: 0,
            ..Node::leaf(0, 0, end)
        });
    }

    /// Number of nodes (root included).
    pub fn num_nodes(&self) -> usize {
        self.nodes.len() - 1
    }

    /// Number of (bytes, token) entries.
    pub fn num_tokens(&self) -> usize {
        self.tokens.len()
    }

    /// Longest token in bytes.
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// Every token of the trie, in preorder (by bytes).
    pub fn tokens(&self) -> &[TokenId] {
        &self.tokens
    }

    /// Tokens ending at node `i` (`i < num_nodes()`).
    #[inline]
    pub fn tokens_at(&self, i: usize) -> &[TokenId] {
        &self.tokens[self.nodes[i].tok_start as usize..self.nodes[i + 1].tok_start as usize]
    }

    /// Tokens in the subtree of node `i`, node `i` itself included.
    #[inline]
    pub fn tokens_in_subtree(&self, i: usize) -> &[TokenId] {
        let end = i + self.nodes[i].subtree as usize;
        &self.tokens[self.nodes[i].tok_start as usize..self.nodes[end].tok_start as usize]
    }

    /// The node whose path spells `prefix` (the root for the empty
    /// string), if some token starts with it: its subtree's tokens
    /// ([`TokTrie::tokens_in_subtree`]) are the tokens with that prefix.
    /// Cost: the children scanned along the path.
    pub fn find(&self, prefix: &[u8]) -> Option<usize> {
        let mut i = 0usize;
        for &b in prefix {
            let end = i + self.nodes[i].subtree as usize;
            let mut c = i + 1;
            loop {
                if c >= end {
                    return None;
                }
                if self.nodes[c].byte == b {
                    break;
                }
                c += self.nodes[c].subtree as usize;
            }
            i = c;
        }
        Some(i)
    }

    /// True when node `i` has descendants (some token extends its bytes).
    #[inline]
    pub fn has_children(&self, i: usize) -> bool {
        self.nodes[i].subtree > 1
    }

    /// The trie of the *remainders* below the given nodes: the union, as
    /// one trie, of the subtrees rooted at `roots` (each root's own tokens
    /// excluded, their descendants' bytes taken relative to the root),
    /// keeping only the tokens for which `keep` holds. Equal remainders
    /// under different roots share a path. Built by merging the roots'
    /// children byte by byte, in time linear in the subtrees' sizes (no
    /// sorting of remainder strings).
    ///
    /// When the subtrees together outsize the vocabulary (free text can
    /// end after any byte, so its roots are nearly every node: merged
    /// whole, their remainders are every suffix of every token), the kept
    /// tokens are first counted per position of the token list, in one
    /// pass, and only subtrees that hold one are merged: the cost then
    /// follows the paths to the kept tokens, not the subtrees' sizes. The
    /// result is the same trie.
    pub fn merge_subtrees(&self, roots: &[u32], keep: impl Fn(TokenId) -> bool) -> TokTrie {
        let mut out = TokTrie {
            nodes: vec![Node::leaf(0, 0, 0)],
            tokens: Vec::new(),
            max_depth: 0,
        };
        let mut scratch: Vec<(u8, u32)> = Vec::new();
        let mut group: Vec<u32> = roots.to_vec();
        group.sort_unstable();
        group.dedup();
        let work: usize = group
            .iter()
            .map(|&g| self.nodes[g as usize].subtree as usize)
            .sum();
        // kept_before[p]: how many kept tokens sit before position p
        let kept_before: Option<Vec<u32>> = (work > self.tokens.len()).then(|| {
            let mut c = Vec::with_capacity(self.tokens.len() + 1);
            let mut n = 0u32;
            c.push(0);
            for &t in &self.tokens {
                n += u32::from(keep(t));
                c.push(n);
            }
            c
        });
        let prune = Prune {
            kept_before: kept_before.as_deref(),
        };
        if let Some(k) = prune.kept_before {
            // a root's own tokens are not remainders: only its descendants count
            group.retain(|&g| {
                let g = g as usize;
                let lo = self.nodes[g + 1].tok_start as usize;
                let hi = self.nodes[g + self.nodes[g].subtree as usize].tok_start as usize;
                k[hi] > k[lo]
            });
        }
        self.merge_rec(&group, 0, &mut out, &mut scratch, &keep, prune);
        out.nodes[0].subtree = out.nodes.len() as u32;
        out.seal();
        out
    }

    fn merge_rec(
        &self,
        group: &[u32],
        depth: u16,
        out: &mut TokTrie,
        scratch: &mut Vec<(u8, u32)>,
        keep: &impl Fn(TokenId) -> bool,
        prune: Prune<'_>,
    ) {
        let s0 = scratch.len();
        for &g in group {
            let end = g + self.nodes[g as usize].subtree;
            let mut c = g + 1;
            while c < end {
                let size = self.nodes[c as usize].subtree;
                if prune.holds(self, c as usize) {
                    scratch.push((self.nodes[c as usize].byte, c));
                }
                c += size;
            }
        }
        let s1 = scratch.len();
        scratch[s0..s1].sort_unstable();
        let mut r0 = s0;
        let mut kids: Vec<u32> = Vec::new();
        while r0 < s1 {
            let byte = scratch[r0].0;
            let mut r1 = r0;
            while r1 < s1 && scratch[r1].0 == byte {
                r1 += 1;
            }
            let idx = out.nodes.len();
            let tok_start = out.tokens.len();
            out.nodes.push(Node::leaf(byte, depth + 1, tok_start));
            if r1 - r0 == 1 {
                // One node: nothing to merge below it, copy its subtree.
                let c = scratch[r0].1 as usize;
                let (base, c_depth) = (depth as usize + 1, self.nodes[c].depth as usize);
                out.tokens
                    .extend(self.tokens_at(c).iter().copied().filter(|&t| keep(t)));
                for j in c + 1..c + self.nodes[c].subtree as usize {
                    let nd = self.nodes[j];
                    let d = nd.depth as usize + base - c_depth;
                    out.nodes.push(Node {
                        subtree: nd.subtree,
                        ..Node::leaf(nd.byte, d as u16, out.tokens.len())
                    });
                    out.tokens
                        .extend(self.tokens_at(j).iter().copied().filter(|&t| keep(t)));
                    out.max_depth = out.max_depth.max(d);
                }
            } else {
                kids.clear();
                for &(_, c) in &scratch[r0..r1] {
                    out.tokens.extend(
                        self.tokens_at(c as usize)
                            .iter()
                            .copied()
                            .filter(|&t| keep(t)),
                    );
                    kids.push(c);
                }
                let kids_now = std::mem::take(&mut kids);
                self.merge_rec(&kids_now, depth + 1, out, scratch, keep, prune);
                kids = kids_now;
            }
            if out.tokens.len() == tok_start {
                // Nothing kept below: drop the path.
                out.nodes.truncate(idx);
            } else {
                out.nodes[idx].subtree = (out.nodes.len() - idx) as u32;
                out.max_depth = out.max_depth.max(depth as usize + 1);
            }
            r0 = r1;
        }
        scratch.truncate(s0);
    }

    /// Every `(bytes, token)` entry, in byte order.
    pub fn entries(&self) -> Vec<(Vec<u8>, TokenId)> {
        let mut out: Vec<(Vec<u8>, TokenId)> =
            self.tokens_at(0).iter().map(|&t| (Vec::new(), t)).collect();
        let mut path: Vec<u8> = Vec::new();
        for i in 1..self.nodes.len() - 1 {
            path.truncate(self.nodes[i].depth as usize - 1);
            path.push(self.nodes[i].byte);
            out.extend(self.tokens_at(i).iter().map(|&t| (path.clone(), t)));
        }
        out
    }

    /// Heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>() + self.tokens.capacity() * 4
    }

    /// Walks the trie against a [`Walker`]: every node whose byte the
    /// walker accepts is descended into and its tokens are passed to
    /// `emit`; a refused node skips its whole subtree. The root's own tokens
    /// are not emitted. The walker is left as it was found.
    #[inline]
    pub fn walk<W: Walker + ?Sized>(&self, w: &mut W, mut emit: impl FnMut(&[TokenId])) {
        self.walk_with(w, &mut (), |_, _| false, |_, toks| emit(toks));
    }

    /// Like [`TokTrie::walk`], inserting the tokens into `mask`, but a node
    /// whose whole subtree's tokens are already in `mask` is skipped without
    /// asking the walker: the union cannot change. This is what makes a
    /// context-dependent walk cheap when the sets already in the mask cover
    /// most remainders (a one-character terminal beside a long string
    /// terminal: the remainders of ~190k tokens, nearly all already
    /// allowed by the string's entry).
    pub fn walk_uncovered<W: Walker + ?Sized>(&self, w: &mut W, mask: &mut TokenSet) {
        self.walk_with(
            w,
            mask,
            |m, sub| sub.iter().all(|&t| m.contains(t)),
            |m, toks| {
                for &t in toks {
                    m.insert(t);
                }
            },
        );
    }

    /// The walk behind [`TokTrie::walk`] and [`TokTrie::walk_uncovered`]:
    /// before a node is pushed, `skip(state, tokens of its subtree)` may
    /// prune it; the tokens of each accepted node go to `emit`.
    #[inline]
    fn walk_with<W: Walker + ?Sized, S: ?Sized>(
        &self,
        w: &mut W,
        state: &mut S,
        skip: impl Fn(&S, &[TokenId]) -> bool,
        mut emit: impl FnMut(&mut S, &[TokenId]),
    ) {
        let n = self.nodes.len() - 1;
        let mut depth = 0usize;
        let mut i = 1;
        while i < n {
            let nd = self.nodes[i];
            let d = nd.depth as usize;
            while depth >= d {
                w.pop();
                depth -= 1;
            }
            let end = i + nd.subtree as usize;
            let (a, e) = (nd.tok_start as usize, self.nodes[end].tok_start as usize);
            if skip(state, &self.tokens[a..e]) {
                i = end;
                continue;
            }
            if w.push(nd.byte) {
                depth += 1;
                let toks = self.tokens_at(i);
                if !toks.is_empty() {
                    emit(state, toks);
                }
                i += 1;
            } else {
                i = end;
            }
        }
        while depth > 0 {
            w.pop();
            depth -= 1;
        }
    }

    /// Walks the trie with a copyable automaton state: from `start`,
    /// `step(state, byte)` gives the state after a node's byte, `None`
    /// when the automaton dies (the node's subtree is skipped). For every
    /// node reached (the root excepted), `visit(node, state, tokens)` gets
    /// its index, the state after its bytes and the tokens ending there
    /// (possibly none). Nothing is undone: the state after each depth is
    /// kept in an array of [`TokTrie::max_depth`] + 1 states.
    #[inline]
    pub fn walk_states<S: Copy>(
        &self,
        start: S,
        mut step: impl FnMut(S, u8) -> Option<S>,
        mut visit: impl FnMut(usize, S, &[TokenId]),
    ) {
        let nodes = &self.nodes;
        let n = nodes.len() - 1;
        let mut states = vec![start; self.max_depth + 1];
        let mut i = 1;
        while i < n {
            let nd = nodes[i];
            let d = nd.depth as usize;
            match step(states[d - 1], nd.byte) {
                None => i += nd.subtree as usize,
                Some(st) => {
                    states[d] = st;
                    visit(i, st, self.tokens_at(i));
                    i += 1;
                }
            }
        }
    }
}

/// A parser that can be advanced by one byte and undone (the trie walk's
/// view of a parser state).
pub trait Walker {
    /// Advances by `b`; false (and no change) when `b` is not viable.
    fn push(&mut self, b: u8) -> bool;
    /// Undoes the last successful push.
    fn pop(&mut self);
}

/// [`TokTrie::merge_subtrees`]'s pruning: how many kept tokens sit
/// before each position of the trie's token list, when counted.
#[derive(Clone, Copy)]
struct Prune<'a> {
    kept_before: Option<&'a [u32]>,
}

impl Prune<'_> {
    /// Whether node `i`'s subtree (its own tokens included) may hold a
    /// kept token.
    fn holds(self, t: &TokTrie, i: usize) -> bool {
        self.kept_before.is_none_or(|k| {
            let end = i + t.nodes[i].subtree as usize;
            k[t.nodes[end].tok_start as usize] > k[t.nodes[i].tok_start as usize]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A vocabulary of byte strings (ids in order; `special` ids special).
    struct Toks(Vec<Vec<u8>>, Vec<TokenId>);

    impl Vocabulary for Toks {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn token_bytes(&self, t: TokenId) -> &[u8] {
            &self.0[t as usize]
        }
        fn eos(&self) -> TokenId {
            0
        }
        fn is_special(&self, t: TokenId) -> bool {
            self.1.contains(&t)
        }
    }

    /// Accepts the paths that are prefixes of one of `allowed`.
    struct Pref<'a>(Vec<u8>, &'a [&'a [u8]]);

    impl Walker for Pref<'_> {
        fn push(&mut self, b: u8) -> bool {
            self.0.push(b);
            let ok = self.1.iter().any(|a| a.starts_with(&self.0));
            if !ok {
                self.0.pop();
            }
            ok
        }
        fn pop(&mut self) {
            self.0.pop();
        }
    }

    #[test]
    fn walk_visits_prefix_closed_tokens() {
        let toks: Vec<Vec<u8>> = ["a", "ab", "abc", "b", "ba", "", "abd"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let t = TokTrie::from_vocab(&Toks(toks, vec![5]));
        assert_eq!(t.num_tokens(), 6);
        assert_eq!(t.num_nodes(), 7); // root a ab abc abd b ba
        let allowed: &[&[u8]] = &[b"abc", b"b"];
        let mut got = Vec::new();
        let mut w = Pref(Vec::new(), allowed);
        t.walk(&mut w, |ts| got.extend_from_slice(ts));
        assert!(w.0.is_empty());
        got.sort();
        assert_eq!(got, vec![0, 1, 2, 3]);
        assert_eq!(t.tokens_in_subtree(1).len(), 4);
        assert!(t.has_children(1) && !t.has_children(3));
    }

    #[test]
    fn find_gives_the_tokens_with_a_prefix() {
        let toks: Vec<&[u8]> = vec![b"ab", b"abc", b"b", b"abd", b"a"];
        let mut e: Vec<(&[u8], TokenId)> = toks
            .iter()
            .enumerate()
            .map(|(i, b)| (*b, i as TokenId))
            .collect();
        e.sort_unstable();
        let t = TokTrie::from_sorted(&e);
        for p in [&b""[..], b"a", b"ab", b"abc", b"abx", b"b", b"c"] {
            let mut got: Vec<TokenId> = t
                .find(p)
                .map(|i| t.tokens_in_subtree(i).to_vec())
                .unwrap_or_default();
            got.sort_unstable();
            let want: Vec<TokenId> = (0..toks.len() as TokenId)
                .filter(|&i| toks[i as usize].starts_with(p))
                .collect();
            assert_eq!(got, want, "{p:?}");
        }
    }

    #[test]
    fn special_empty_and_overlong_tokens_are_left_out() {
        let long = vec![b'x'; MAX_TOKEN_BYTES + 1];
        let toks = vec![b"a".to_vec(), Vec::new(), b"b".to_vec(), long];
        let t = TokTrie::from_vocab(&Toks(toks, vec![2]));
        assert_eq!(t.tokens(), &[0]);
        assert_eq!(t.max_depth(), 1);
        assert_eq!(TokTrie::default().num_nodes(), 1);
        assert_eq!(TokTrie::default().num_tokens(), 0);
    }

    /// Whether every non-empty prefix of `bytes` satisfies `ok`: what a
    /// walk with a walker accepting exactly the paths of `ok` reaches.
    fn reached(bytes: &[u8], ok: &impl Fn(&[u8]) -> bool) -> bool {
        (1..=bytes.len()).all(|k| ok(&bytes[..k]))
    }

    /// A walker accepting the paths `ok` holds for.
    struct Pred<F>(Vec<u8>, F);

    impl<F: Fn(&[u8]) -> bool> Walker for Pred<F> {
        fn push(&mut self, b: u8) -> bool {
            self.0.push(b);
            let ok = (self.1)(&self.0);
            if !ok {
                self.0.pop();
            }
            ok
        }
        fn pop(&mut self) {
            self.0.pop();
        }
    }

    fn small_vocab() -> impl Strategy<Value = Vec<Vec<u8>>> {
        prop::collection::vec(prop::collection::vec(0u8..4, 0..6), 0..40)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Every walk visits exactly the tokens whose bytes match, against
        /// brute force over the vocabulary.
        #[test]
        fn walks_visit_exactly_the_matching_tokens(
            toks in small_vocab(),
            // a path is accepted when its hash lands under the threshold
            // (an arbitrary, not prefix-closed language)
            seed in any::<u64>(),
            keep_pct in 0u64..=100,
            covered in prop::collection::vec(any::<bool>(), 40),
        ) {
            let mix = move |h: u64, b: u8| (h ^ b as u64).wrapping_mul(0x100_0000_01b3).rotate_left(17);
            let hit = move |h: u64| h % 100 < keep_pct;
            let ok = move |p: &[u8]| hit(p.iter().fold(seed, |h, &b| mix(h, b)));
            let n = toks.len();
            let vocab = Toks(toks, Vec::new());
            let trie = TokTrie::from_vocab(&vocab);
            let expect: Vec<TokenId> = (0..n as TokenId)
                .filter(|&t| {
                    let b = vocab.token_bytes(t);
                    !b.is_empty() && reached(b, &ok)
                })
                .collect();

            let mut got = Vec::new();
            let mut w = Pred(Vec::new(), ok);
            trie.walk(&mut w, |ts| got.extend_from_slice(ts));
            prop_assert!(w.0.is_empty());
            got.sort_unstable();
            prop_assert_eq!(&got, &expect);

            // the same walk with states: a state is the path's hash
            let mut got = Vec::new();
            trie.walk_states(
                seed,
                |h, b| Some(mix(h, b)).filter(|&h| hit(h)),
                |_, _, ts| got.extend_from_slice(ts),
            );
            got.sort_unstable();
            prop_assert_eq!(&got, &expect);

            // with some tokens already in the mask: the mask ends up the
            // union, whatever was skipped
            let mut mask = TokenSet::new(n);
            for t in (0..n as TokenId).filter(|&t| covered[t as usize]) {
                mask.insert(t);
            }
            let mut want = mask.clone();
            for &t in &expect {
                want.insert(t);
            }
            trie.walk_uncovered(&mut Pred(Vec::new(), ok), &mut mask);
            prop_assert_eq!(mask, want);

            // entries: every token once, in byte order
            let mut entries: Vec<(Vec<u8>, TokenId)> = (0..n as TokenId)
                .map(|t| (vocab.token_bytes(t).to_vec(), t))
                .filter(|(b, _)| !b.is_empty())
                .collect();
            entries.sort();
            prop_assert_eq!(trie.entries(), entries);
        }

        /// `merge_subtrees` holds the remainders below its roots, filtered.
        #[test]
        fn merged_subtrees_hold_the_remainders(
            toks in small_vocab(),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 0..24),
            keep_every in 1u32..8,
        ) {
            // many roots and few kept tokens take the pruned path
            let vocab = Toks(toks, Vec::new());
            let trie = TokTrie::from_vocab(&vocab);
            let roots: Vec<u32> = picks.iter().map(|i| i.index(trie.num_nodes()) as u32).collect();
            let keep = |t: TokenId| t.is_multiple_of(keep_every);
            let merged = trie.merge_subtrees(&roots, keep);
            // brute force: the path of each root, and the tokens extending it
            let all = trie.entries();
            let path_of = |r: u32| -> Vec<u8> {
                let mut path = Vec::new();
                for i in 1..=r as usize {
                    path.truncate(trie.nodes[i].depth as usize - 1);
                    path.push(trie.nodes[i].byte);
                }
                if r == 0 { Vec::new() } else { path }
            };
            let mut want: Vec<(Vec<u8>, TokenId)> = Vec::new();
            for r in roots.iter().copied().collect::<std::collections::BTreeSet<_>>() {
                let p = path_of(r);
                for (b, t) in &all {
                    if b.len() > p.len() && b.starts_with(&p) && keep(*t) {
                        want.push((b[p.len()..].to_vec(), *t));
                    }
                }
            }
            want.sort();
            let mut got = merged.entries();
            got.sort();
            prop_assert_eq!(got, want);
        }
    }
}
