//! Walking a terminal's DFA over the token trie: which tokens keep it
//! live from a state. The one primitive both the context-independent cache
//! ([`crate::ci_cache`]) and the vocabulary slices ([`crate::slicer`])
//! classify tokens with.
//!
//! Cost: one preorder pass over the trie, `O(trie nodes)` DFA steps at
//! worst, subtrees skipped where the DFA dies.

use zapspec_core::{TokenId, TokenSet};

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
    on_end: impl FnMut(u32),
) -> TokenSet {
    let mut allowed = TokenSet::new(vocab_len);
    let mut touched = Vec::new();
    live_tokens_into(dfa, s, trie, allowed.words_mut(), &mut touched, on_end);
    allowed
}

/// [`live_tokens`] into the words of a set that the caller owns and
/// clears (a reused scratch set): sets the live tokens' bits in `words`
/// and appends to `touched` the index of every word it made non-zero, in
/// no particular order. A caller that keeps only a few words reads and
/// clears just those, instead of allocating, zeroing and scanning a set
/// of the whole vocabulary per call.
pub(crate) fn live_tokens_into(
    dfa: &ByteDfa,
    s: u32,
    trie: &TokTrie,
    words: &mut [u64],
    touched: &mut Vec<u32>,
    mut on_end: impl FnMut(u32),
) {
    if s == DEAD {
        return;
    }
    trie.walk_states(
        s,
        |q, b| Some(dfa.next(q, b)).filter(|&t| t != DEAD),
        |i, st, toks| {
            for &t in toks {
                let w = &mut words[(t >> 6) as usize];
                if *w == 0 {
                    touched.push(t >> 6);
                }
                *w |= 1u64 << (t & 63);
            }
            if trie.has_children(i) && dfa.is_accepting(st) {
                on_end(i as u32);
            }
        },
    );
}

/// The tokens that keep a terminal's DFA live from one state, grouped by
/// the state their last byte reaches ([`end_classes`]): what a one-step
/// look-ahead needs to know which candidates lead to equal parser states.
#[derive(Debug)]
pub(crate) struct EndClasses {
    /// Every token that keeps the DFA live from the state.
    pub live: TokenSet,
    /// A member of the largest class (its members are the live tokens not
    /// listed below), if there is one.
    pub main: Option<TokenId>,
    /// The other classes of equal end state, stored end to end.
    pub others: Vec<TokenId>,
    /// `others_ends[i]`: one past class `i`'s last token in `others`.
    pub others_ends: Vec<u32>,
    /// Live tokens along whose bytes the DFA accepts before the last one
    /// (the terminal can end inside them, so the parser state after them
    /// depends on more than the end state): each a class of its own.
    pub irregular: Vec<TokenId>,
}

impl EndClasses {
    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.live.heap_bytes()
            + 4 * (self.others.capacity() + self.others_ends.capacity() + self.irregular.capacity())
    }

    /// The listed classes of equal end state (the largest one excluded).
    pub(crate) fn others(&self) -> impl Iterator<Item = &[TokenId]> + '_ {
        let mut a = 0usize;
        self.others_ends.iter().map(move |&e| {
            let c = &self.others[a..e as usize];
            a = e as usize;
            c
        })
    }
}

/// Groups the tokens that keep `dfa` live from state `s` by the state they
/// end in (module docs): one preorder walk of the trie carrying, beside the
/// DFA state, whether the DFA accepted at an inner byte boundary. `O(trie
/// nodes)` DFA steps at worst, like [`live_tokens`].
pub(crate) fn end_classes(dfa: &ByteDfa, s: u32, trie: &TokTrie, vocab_len: usize) -> EndClasses {
    let mut out = EndClasses {
        live: TokenSet::new(vocab_len),
        main: None,
        others: Vec::new(),
        others_ends: Vec::new(),
        irregular: Vec::new(),
    };
    if s == DEAD {
        return out;
    }
    let mut ends: Vec<(u32, TokenId)> = Vec::new();
    let words = out.live.words_mut();
    // (state, accepted at an inner boundary, at least one byte read)
    trie.walk_states(
        (s, false, false),
        |(q, passed, started), b| {
            let t = dfa.next(q, b);
            (t != DEAD).then(|| (t, passed || (started && dfa.is_accepting(q)), true))
        },
        |_, (st, passed, _), toks| {
            for &t in toks {
                words[(t >> 6) as usize] |= 1u64 << (t & 63);
                if passed {
                    out.irregular.push(t);
                } else {
                    ends.push((st, t));
                }
            }
        },
    );
    ends.sort_unstable();
    // the largest run of one end state stays implicit
    let mut best: Option<(usize, usize)> = None;
    let mut a = 0usize;
    while a < ends.len() {
        let mut b = a + 1;
        while b < ends.len() && ends[b].0 == ends[a].0 {
            b += 1;
        }
        if best.is_none_or(|(x, y)| b - a > y - x) {
            best = Some((a, b));
        }
        a = b;
    }
    let mut a = 0usize;
    while a < ends.len() {
        let mut b = a + 1;
        while b < ends.len() && ends[b].0 == ends[a].0 {
            b += 1;
        }
        if Some((a, b)) == best {
            out.main = Some(ends[a].1);
        } else {
            out.others.extend(ends[a..b].iter().map(|e| e.1));
            out.others_ends.push(out.others.len() as u32);
        }
        a = b;
    }
    out
}
