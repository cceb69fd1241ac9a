//! Walking a terminal's DFA over the token trie: which tokens keep it
//! live from a state. The one primitive both the context-independent cache
//! ([`crate::ci_cache`]) and the vocabulary slices ([`crate::slicer`])
//! classify tokens with.
//!
//! Cost: one preorder pass over the trie, `O(trie nodes)` DFA steps at
//! worst, subtrees skipped where the DFA dies.

use zapspec_core::TokenSet;

use crate::terminal::{ByteDfa, DEAD};
use crate::toktrie::TokTrie;

/// The tokens of `trie` whose bytes keep `dfa` live from state `s` (over a
/// vocabulary of `vocab_len` ids): one preorder walk that skips a subtree
/// as soon as the DFA dies. `on_end(i)` is called for every node `i` with
/// descendants at which the DFA accepts (where a terminal can end inside a
/// longer token).
pub(crate) fn live_tokens(
    dfa: &ByteDfa,
    s: u32,
    trie: &TokTrie,
    vocab_len: usize,
    mut on_end: impl FnMut(u32),
) -> TokenSet {
    let mut allowed = TokenSet::new(vocab_len);
    if s == DEAD {
        return allowed;
    }
    let nodes = &trie.nodes;
    let n = nodes.len() - 1;
    let mut states = vec![s; trie.max_depth() + 1];
    let words = allowed.words_mut();
    let mut i = 1;
    while i < n {
        let nd = nodes[i];
        let d = nd.depth as usize;
        let st = dfa.next(states[d - 1], nd.byte);
        if st == DEAD {
            i += nd.subtree as usize;
            continue;
        }
        states[d] = st;
        for &t in trie.tokens_at(i) {
            words[(t >> 6) as usize] |= 1u64 << (t & 63);
        }
        if nd.subtree > 1 && dfa.is_accepting(st) {
            on_end(i as u32);
        }
        i += 1;
    }
    allowed
}
