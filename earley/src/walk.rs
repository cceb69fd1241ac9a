//! Walking a terminal's DFA over the token trie: which tokens keep it
//! live from a state. The one primitive both the context-independent cache
//! ([`crate::ci_cache`]) and the vocabulary slices ([`crate::slicer`])
//! classify tokens with.
//!
//! Cost: one preorder pass over the trie, `O(trie nodes)` DFA steps at
//! worst, subtrees skipped where the DFA dies.

use zapspec_core::TokenSet;

use crate::terminal::{ByteDfa, DEAD};
use zapspec_toktrie::TokTrie;

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
    let words = allowed.words_mut();
    trie.walk_states(
        s,
        |q, b| Some(dfa.next(q, b)).filter(|&t| t != DEAD),
        |i, st, toks| {
            for &t in toks {
                words[(t >> 6) as usize] |= 1u64 << (t & 63);
            }
            if trie.has_children(i) && dfa.is_accepting(st) {
                on_end(i as u32);
            }
        },
    );
    allowed
}
