//! A finite language of token sequences: [`TokenTrie`] and its matcher
//! [`TrieConstraint`] (the finite JSON schemas of the future-validity
//! paper's Table 7 are such tries).

use std::collections::BTreeMap;
use std::sync::Arc;

use zapspec_core::{LookAhead, RejectReason};
use zapspec_core::{TokenId, TokenSet, Vocabulary};

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

    /// Number of nodes (the root included).
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

/// A [`Constraint`](zapspec_core::Constraint) for a finite language of
/// token sequences (a [`Matcher`](zapspec_core::Matcher) over the trie, with
/// every [`LookAhead`] hook: sparse lists, the node as mask key, one walk of
/// a node's children for all successors).
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

    /// Convenience: the finite language of already tokenized `sequences`
    /// over `vocab` (its size and EOS).
    pub fn from_sequences<V: Vocabulary + ?Sized, I, S>(vocab: &V, sequences: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[TokenId]>,
    {
        Self::new(
            Arc::new(TokenTrie::new(sequences)),
            vocab.len(),
            vocab.eos(),
        )
    }

    /// The shared trie.
    pub fn trie(&self) -> &Arc<TokenTrie> {
        &self.trie
    }

    /// The trie node of the current prefix.
    pub fn node(&self) -> usize {
        *self.path.last().unwrap_or(&0)
    }
}

impl zapspec_core::Matcher for TrieConstraint {
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }
    fn eos(&self) -> TokenId {
        self.eos
    }
    /// The current node's children inside the vocabulary: `O(children)`
    /// plus a clear of `|V|/64` words.
    fn fill_next(&mut self, mask: &mut TokenSet) {
        mask.clear();
        for (t, _) in self.trie.children(self.node()) {
            if (t as usize) < self.vocab_size {
                mask.insert(t);
            }
        }
    }
    fn step(&mut self, t: TokenId) -> Result<(), RejectReason> {
        let c = self
            .trie
            .child(self.node(), t)
            .ok_or(RejectReason::NotAllowed)?;
        self.path.push(c);
        Ok(())
    }
    fn unstep(&mut self, n: usize) {
        self.path.truncate(self.path.len() - n);
    }
    fn num_steps(&self) -> usize {
        self.path.len() - 1
    }
    fn is_complete(&self) -> bool {
        self.trie.is_terminal(self.node())
    }
    fn finished(&self) -> bool {
        self.finished
    }
    fn set_finished(&mut self, finished: bool) {
        self.finished = finished;
    }
}

impl TrieConstraint {
    /// Pushes the tokens allowed at trie node `n` (its children inside the
    /// vocabulary, then EOS when `n` ends a member): the sparse mask of
    /// that node, shared by both look-ahead hooks.
    fn push_allowed(&self, n: usize, out: &mut Vec<TokenId>) {
        out.extend(
            self.trie
                .children(n)
                .map(|(t, _)| t)
                .filter(|&t| (t as usize) < self.vocab_size),
        );
        if self.trie.is_terminal(n) {
            out.push(self.eos);
        }
    }
}

impl LookAhead for TrieConstraint {
    fn allowed_sparse(&mut self, out: &mut Vec<TokenId>) -> bool {
        out.clear();
        if self.finished {
            return true;
        }
        self.push_allowed(self.node(), out);
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
            self.push_allowed(c, &mut next);
            f(t, &next);
        }
        true
    }
}
