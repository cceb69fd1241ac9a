//! Vocabulary slices: precomputed token sets that make a cold
//! context-independent cache entry cheap (after llguidance's *slicer*).
//!
//! A cold entry of the context-independent cache (`CiEntry`,
//! ZapFormat §4.3) classifies every token of the vocabulary against one
//! terminal DFA state: a walk of the whole token trie (421k nodes for
//! o200k). On JSON Schema grammars almost every such walk is for a state
//! *inside a JSON string*, where ~195k of o200k's 200k tokens are allowed.
//!
//! A **slice** is a byte language `S` given by a regex, closed under
//! prefixes in the sense that we only ask whether its DFA stays live. Per
//! vocabulary we precompute, once:
//!
//! - `T_S`, the tokens whose bytes keep `S`'s DFA live (for the JSON string
//!   body, every token made of string characters, a trailing partial UTF-8
//!   character included), as a bitset;
//! - the trie of the *other* tokens.
//!
//! For a terminal DFA `D` in state `s`, if every byte string that keeps
//! `S`'s DFA live also keeps `D` live from `s` — an inclusion checked by a
//! search of the product automaton ([`Slice::contained_in`]) — then every
//! token of `T_S` is context-independent allowed, and only the (small) trie
//! of the other tokens needs walking. The entry is the same as the full
//! walk's (tested in `tests/slices.rs` and below); only its cost changes.
//! The allowed set keeps `T_S` by reference, so the many string states of
//! many grammars share one bitset.

use std::collections::HashSet;
use std::sync::Arc;

use rustc_hash::FxBuildHasher;
use zapspec_core::{TokenId, TokenSet, Vocabulary};

use crate::error::EarleyError;
use crate::terminal::{ByteDfa, DEAD};
use crate::toktrie::TokTrie;
use crate::walk::live_tokens;

/// The slices a [`crate::VocabIndex`] builds by default, tried in this
/// order (the first contained in a state is used): the body of a JSON
/// string (any character but `"`, `\` and controls); the same without
/// U+2028 and U+2029 (what a JSON Schema pattern's `.` reads: ECMA-262
/// excludes the line terminators, and the few tokens that hold one would
/// otherwise send every state inside a `.` to a walk of the whole trie);
/// and the body with at most 32, 16 and 8 characters (for states of
/// length-bounded strings).
pub const DEFAULT_SLICES: &[&str] = &[
    r#"[^"\\\x00-\x1F]*"#,
    r#"[^"\\\x00-\x1F\x{2028}\x{2029}]*"#,
    r#"[^"\\\x00-\x1F]{0,32}"#,
    r#"[^"\\\x00-\x1F]{0,16}"#,
    r#"[^"\\\x00-\x1F]{0,8}"#,
];

/// A slice of the vocabulary (module docs).
#[derive(Debug)]
pub struct Slice {
    regex: String,
    dfa: ByteDfa,
    /// `T_S`: tokens on which the slice's DFA stays live.
    tokens: Arc<TokenSet>,
    n_tokens: usize,
    /// Trie of every other (non-special, non-empty) token.
    rest: TokTrie,
    /// A few strings of the slice, run through a candidate DFA before the
    /// full inclusion check (a cheap filter).
    probes: Vec<Vec<u8>>,
    /// Bytes of the longest token of `T_S`: the inclusion check looks no
    /// deeper.
    max_len: usize,
}

impl Slice {
    /// Builds the slice of `regex` over the tokens of `trie`.
    pub(crate) fn new(
        regex: &str,
        trie: &TokTrie,
        vocab: &(impl Vocabulary + ?Sized),
    ) -> Result<Self, EarleyError> {
        let dfa = ByteDfa::from_regex(regex)?;
        let tokens = live_tokens(&dfa, dfa.start(), trie, vocab.len(), |_| {});
        let mut rest: Vec<(&[u8], TokenId)> = trie
            .tokens
            .iter()
            .filter(|&&t| !tokens.contains(t))
            .map(|&t| (vocab.token_bytes(t), t))
            .collect();
        rest.sort_unstable();
        let rest = TokTrie::from_sorted(&rest);
        let max_len = tokens
            .iter()
            .map(|t| vocab.token_bytes(t).len())
            .max()
            .unwrap_or(0);
        // Probes: tokens of the slice, short and long, ASCII and not.
        let mut probes: Vec<Vec<u8>> = Vec::new();
        for want in [
            b"a".as_slice(),
            b" the",
            b"0",
            "é".as_bytes(),
            b"Hello World",
        ] {
            if dfa.run(dfa.start(), want) != DEAD {
                probes.push(want.to_vec());
            }
        }
        Ok(Slice {
            regex: regex.to_string(),
            dfa,
            n_tokens: tokens.count(),
            tokens: Arc::new(tokens),
            rest,
            probes,
            max_len,
        })
    }

    /// The slice's regex.
    pub fn regex(&self) -> &str {
        &self.regex
    }

    /// `T_S` (shared).
    pub fn tokens(&self) -> &Arc<TokenSet> {
        &self.tokens
    }

    /// `|T_S|`.
    pub fn num_tokens(&self) -> usize {
        self.n_tokens
    }

    /// The trie of the tokens outside `T_S`.
    pub(crate) fn rest(&self) -> &TokTrie {
        &self.rest
    }

    /// Number of tokens outside `T_S` (what a cold entry through this
    /// slice walks).
    pub fn rest_tokens(&self) -> usize {
        self.rest.num_tokens()
    }

    /// Number of nodes of the trie of the tokens outside `T_S`.
    pub fn rest_nodes(&self) -> usize {
        self.rest.num_nodes()
    }

    /// Own heap bytes: the token set, the trie of the other tokens, the DFA.
    pub fn heap_bytes(&self) -> usize {
        self.tokens.heap_bytes() + self.rest.heap_bytes() + self.dfa.heap_bytes()
    }

    /// True when every byte string of at most the longest slice token's
    /// length that keeps this slice's DFA live keeps `d` live from state
    /// `s` (so every token of `T_S` is allowed from `s`): a breadth-first
    /// search of the product automaton, to that depth, for a pair (slice
    /// live, `d` dead). The bytes are explored one representative per
    /// joint byte class. The depth bound matters for counted repetitions
    /// ([`crate::counted`]), whose product with an unbounded slice would
    /// otherwise be explored through every count.
    pub fn contained_in(&self, d: &ByteDfa, s: u32) -> bool {
        if s == DEAD || self.dfa.start() == DEAD {
            return s != DEAD;
        }
        if self.probes.iter().any(|p| d.run(s, p) == DEAD) {
            return false;
        }
        // Joint byte classes: one representative per distinct pair.
        let mut reps: Vec<u8> = Vec::new();
        let mut seen = [false; 256 * 256];
        for b in 0..=255u8 {
            let k = self.dfa.class(b) as usize * 256 + d.class(b) as usize;
            if !seen[k] {
                seen[k] = true;
                reps.push(b);
            }
        }
        // Far from a bounded product's bounds, its count cannot kill a
        // walk of this slice's depth: step its pairs only.
        let free = d.count_free(s, self.max_len);
        let step = |p: u32, b: u8| {
            if free {
                d.next_count_free(p, b)
            } else {
                d.next(p, b)
            }
        };
        // Breadth-first, so a pair is first met at its least depth.
        let mut visited: HashSet<(u32, u32), FxBuildHasher> = HashSet::default();
        let mut level = vec![(self.dfa.start(), s)];
        visited.insert((self.dfa.start(), s));
        for _ in 0..self.max_len {
            let mut next = Vec::new();
            for (q, p) in level {
                for &b in &reps {
                    let q2 = self.dfa.next(q, b);
                    if q2 == DEAD {
                        continue;
                    }
                    let p2 = step(p, b);
                    if p2 == DEAD {
                        return false;
                    }
                    if visited.insert((q2, p2)) {
                        next.push((q2, p2));
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zapspec_vocab::TokenVocab;

    fn vocab() -> TokenVocab {
        let toks: Vec<Vec<u8>> = ["a", "ab", "\"", "a\"", "é", "\\n", " x", "\u{1}", "abcdef"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .chain([vec![0xC3], vec![0xA9], vec![b'a', 0xC3], Vec::new()])
            .collect();
        let eos = toks.len() as u32 - 1;
        TokenVocab::from_tokens("t", toks, &[eos], eos).unwrap()
    }

    #[test]
    fn slice_tokens_and_rest_partition_the_vocabulary() {
        let v = vocab();
        let trie = TokTrie::from_vocab(&v);
        let s = Slice::new(DEFAULT_SLICES[0], &trie, &v).unwrap();
        let inside: Vec<TokenId> = s.tokens().iter().collect();
        // a, ab, é, " x", abcdef, the partial C3 and "a"+C3; not the quote,
        // backslash, control or the lone continuation byte A9.
        let names: Vec<&[u8]> = inside.iter().map(|&t| v.token_bytes(t)).collect();
        assert_eq!(
            names,
            vec![
                b"a".as_slice(),
                b"ab",
                "é".as_bytes(),
                b" x",
                b"abcdef",
                &[0xC3],
                &[b'a', 0xC3]
            ]
        );
        assert_eq!(s.num_tokens() + s.rest().num_tokens(), trie.num_tokens());
    }

    #[test]
    fn inclusion_matches_brute_force_on_short_strings() {
        let v = vocab();
        let trie = TokTrie::from_vocab(&v);
        let s = Slice::new(r#"[^"\\\x00-\x1F]{0,3}"#, &trie, &v).unwrap();
        for re in [
            r#""[^"\\\x00-\x1F]*""#,
            r#""[^"\\\x00-\x1F]{0,2}""#,
            r#""[^"\\\x00-\x1F]{0,5}""#,
            r#""[a-z]*""#,
            r#""(?:[^"\\\x00-\x1F]|\\n)*""#,
        ] {
            let d = ByteDfa::from_regex(re).unwrap();
            for st in 1..d.num_states() as u32 {
                // Brute force over strings of at most the longest slice
                // token's length (what inclusion is about: the tokens of
                // the slice), drawn from an alphabet that covers the
                // classes involved.
                let alpha: &[u8] = b"a\"\\\x01 z\xC3\xA9\x80";
                let mut ok = true;
                let mut frontier = vec![Vec::new()];
                for _ in 0..s.max_len {
                    let mut next = Vec::new();
                    for w in &frontier {
                        for &b in alpha {
                            let mut w2: Vec<u8> = w.clone();
                            w2.push(b);
                            if s.dfa.run(s.dfa.start(), &w2) != DEAD {
                                if d.run(st, &w2) == DEAD {
                                    ok = false;
                                }
                                next.push(w2);
                            }
                        }
                    }
                    frontier = next;
                }
                // The brute force is a necessary condition on short strings;
                // the product search must agree whenever it finds a witness.
                if !ok {
                    assert!(!s.contained_in(&d, st), "{re} state {st}");
                }
            }
        }
        // The slice's tokens (at most 2 bytes here) are included in the
        // unbounded string's interior and in the 2-character bounded one,
        // but not in the 1-character one.
        let open = |re: &str| {
            let d = ByteDfa::from_regex(re).unwrap();
            let st = d.run(d.start(), b"\"");
            (d, st)
        };
        let (d, st) = open(r#""[^"\\\x00-\x1F]*""#);
        assert!(s.contained_in(&d, st));
        assert_eq!(s.max_len, 2);
        let (d, st) = open(r#""[^"\\\x00-\x1F]{0,2}""#);
        assert!(s.contained_in(&d, st));
        let (d, st) = open(r#""[^"\\\x00-\x1F]{0,1}""#);
        assert!(!s.contained_in(&d, st));
        let (d, st) = open(r#""[^"\\\x00-\x1F]{0,5}""#);
        assert!(s.contained_in(&d, st));
        let (d, st) = open(r#""[a-z]*""#);
        assert!(!s.contained_in(&d, st));
    }
}
