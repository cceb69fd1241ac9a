//! A byte trie over token strings, flattened in depth-first preorder with
//! subtree sizes (the layout of llguidance's `toktrie`): walking it against
//! a parser pushes one byte per node and pops on the way back up, so a
//! prefix shared by many tokens is parsed once, and a rejected node skips
//! its whole subtree with one addition.

use zapspec_core::{TokenId, TokenSet, Vocabulary};

/// One trie node: the byte that leads to it, its depth (root = 0), the
/// number of nodes in its subtree (itself included), and the first of its
/// tokens in [`TokTrie::tokens`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub byte: u8,
    pub depth: u16,
    pub subtree: u32,
    pub tok_start: u32,
}

/// A flattened byte trie over `(bytes, token)` entries.
#[derive(Clone, Debug, Default)]
pub(crate) struct TokTrie {
    pub(crate) nodes: Vec<Node>,
    /// Tokens in preorder; node `i` owns `tokens[nodes[i].tok_start..nodes[i+1].tok_start]`.
    pub(crate) tokens: Vec<TokenId>,
    max_depth: usize,
}

impl TokTrie {
    /// The trie of every non-special token of `vocab` with non-empty bytes.
    pub fn from_vocab(vocab: &(impl Vocabulary + ?Sized)) -> Self {
        let mut ids: Vec<TokenId> = (0..vocab.len() as TokenId)
            .filter(|&t| !vocab.is_special(t) && !vocab.token_bytes(t).is_empty())
            .collect();
        ids.sort_by(|&a, &b| {
            vocab
                .token_bytes(a)
                .cmp(vocab.token_bytes(b))
                .then(a.cmp(&b))
        });
        let entries: Vec<(&[u8], TokenId)> =
            ids.iter().map(|&t| (vocab.token_bytes(t), t)).collect();
        Self::from_sorted(&entries)
    }

    /// The trie of `(bytes, token)` entries sorted by bytes (empty byte
    /// strings sit at the root).
    pub(crate) fn from_sorted(entries: &[(&[u8], TokenId)]) -> Self {
        let mut nodes = vec![Node {
            byte: 0,
            depth: 0,
            subtree: 1,
            tok_start: 0,
        }];
        let mut tokens = Vec::with_capacity(entries.len());
        let mut cur: Vec<u8> = Vec::new();
        let mut max_depth = 0;
        for &(bytes, tok) in entries {
            // Common prefix with the current path.
            let mut l = 0;
            while l < cur.len() && l < bytes.len() && cur[l] == bytes[l] {
                l += 1;
            }
            cur.truncate(l);
            for &b in &bytes[l..] {
                nodes.push(Node {
                    byte: b,
                    depth: (cur.len() + 1) as u16,
                    subtree: 1,
                    tok_start: tokens.len() as u32,
                });
                cur.push(b);
            }
            max_depth = max_depth.max(bytes.len());
            tokens.push(tok);
        }
        // tok_start of nodes without tokens: tokens pushed after creation
        // belong to the deepest node created last; nodes were created before
        // their tokens, so tok_start is right. Subtree sizes:
        let n = nodes.len();
        let mut stack: Vec<usize> = Vec::new();
        for i in 0..n {
            let d = nodes[i].depth as usize;
            while stack.len() > d {
                let j = stack.pop().unwrap_or(0);
                nodes[j].subtree = (i - j) as u32;
            }
            stack.push(i);
        }
        while let Some(j) = stack.pop() {
            nodes[j].subtree = (n - j) as u32;
        }
        nodes.push(Node {
            byte: 0,
            depth: 0,
            subtree: 0,
            tok_start: tokens.len() as u32,
        }); // sentinel
        TokTrie {
            nodes,
            tokens,
            max_depth,
        }
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

    /// Tokens ending at node `i`.
    #[inline]
    pub(crate) fn tokens_at(&self, i: usize) -> &[TokenId] {
        &self.tokens[self.nodes[i].tok_start as usize..self.nodes[i + 1].tok_start as usize]
    }

    /// Tokens in the subtree of node `i`, node `i` itself included.
    #[inline]
    #[cfg(test)]
    pub(crate) fn tokens_in_subtree(&self, i: usize) -> &[TokenId] {
        let end = i + self.nodes[i].subtree as usize;
        &self.tokens[self.nodes[i].tok_start as usize..self.nodes[end].tok_start as usize]
    }

    /// The trie of the *remainders* below the given nodes: the union, as
    /// one trie, of the subtrees rooted at `roots` (each root's own tokens
    /// excluded, their descendants' bytes taken relative to the root),
    /// keeping only the tokens for which `keep` holds. Equal remainders
    /// under different roots share a path. Built by merging the roots'
    /// children byte by byte, in time linear in the subtrees' sizes (no
    /// sorting of remainder strings).
    pub(crate) fn merge_subtrees(&self, roots: &[u32], keep: impl Fn(TokenId) -> bool) -> TokTrie {
        let mut out = TokTrie {
            nodes: vec![Node {
                byte: 0,
                depth: 0,
                subtree: 1,
                tok_start: 0,
            }],
            tokens: Vec::new(),
            max_depth: 0,
        };
        let mut scratch: Vec<(u8, u32)> = Vec::new();
        let mut group: Vec<u32> = roots.to_vec();
        group.sort_unstable();
        group.dedup();
        self.merge_rec(&group, 0, &mut out, &mut scratch, &keep);
        out.nodes[0].subtree = out.nodes.len() as u32;
        out.nodes.push(Node {
            byte: 0,
            depth: 0,
            subtree: 0,
            tok_start: out.tokens.len() as u32,
        });
        out
    }

    fn merge_rec(
        &self,
        group: &[u32],
        depth: u16,
        out: &mut TokTrie,
        scratch: &mut Vec<(u8, u32)>,
        keep: &impl Fn(TokenId) -> bool,
    ) {
        let s0 = scratch.len();
        for &g in group {
            let end = g + self.nodes[g as usize].subtree;
            let mut c = g + 1;
            while c < end {
                scratch.push((self.nodes[c as usize].byte, c));
                c += self.nodes[c as usize].subtree;
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
            out.nodes.push(Node {
                byte,
                depth: depth + 1,
                subtree: 1,
                tok_start: tok_start as u32,
            });
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
                        byte: nd.byte,
                        depth: d as u16,
                        subtree: nd.subtree,
                        tok_start: out.tokens.len() as u32,
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
                self.merge_rec(&kids_now, depth + 1, out, scratch, keep);
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
    pub(crate) fn walk<W: Walker + ?Sized>(&self, w: &mut W, mut emit: impl FnMut(&[TokenId])) {
        self.walk_with(w, &mut (), |_, _| false, |_, toks| emit(toks));
    }

    /// Like [`TokTrie::walk`], inserting the tokens into `mask`, but a node
    /// whose whole subtree's tokens are already in `mask` is skipped without
    /// asking the walker: the union cannot change. This is what makes the
    /// context-dependent walk cheap when the context-independent sets of
    /// the same mask already cover most remainders (a one-character
    /// terminal beside a long string terminal: the remainders of ~190k
    /// tokens, nearly all already allowed by the string's entry).
    pub(crate) fn walk_uncovered<W: Walker + ?Sized>(&self, w: &mut W, mask: &mut TokenSet) {
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
}

/// A parser that can be advanced by one byte and undone (the trie walk's
/// view of a parser state).
pub(crate) trait Walker {
    /// Advances by `b`; false (and no change) when `b` is not viable.
    fn push(&mut self, b: u8) -> bool;
    /// Undoes the last successful push.
    fn pop(&mut self);
}

#[cfg(test)]
mod tests {
    use super::*;
    use zapspec_vocab::TokenVocab;

    #[test]
    fn walk_visits_prefix_closed_tokens() {
        let toks: Vec<Vec<u8>> = ["a", "ab", "abc", "b", "ba", "", "abd"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let v = TokenVocab::from_tokens("t", toks, &[], 5).unwrap();
        let t = TokTrie::from_vocab(&v);
        assert_eq!(t.num_tokens(), 6);
        assert_eq!(t.num_nodes(), 7); // root a ab abc abd b ba
                                      // Accept only paths that are prefixes of "abc" or "b".
        struct Pref(Vec<u8>);
        impl Walker for Pref {
            fn push(&mut self, b: u8) -> bool {
                self.0.push(b);
                let ok = [b"abc".as_slice(), b"b".as_slice()]
                    .iter()
                    .any(|a| a.starts_with(&self.0));
                if !ok {
                    self.0.pop();
                }
                ok
            }
            fn pop(&mut self) {
                self.0.pop();
            }
        }
        let mut got = Vec::new();
        let mut w = Pref(Vec::new());
        t.walk(&mut w, |ts| got.extend_from_slice(ts));
        assert!(w.0.is_empty());
        got.sort();
        assert_eq!(got, vec![0, 1, 2, 3]);
        assert_eq!(t.tokens_in_subtree(1).len(), 4);
    }
}
