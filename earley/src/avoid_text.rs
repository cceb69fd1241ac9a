//! Free-text masks from the tokens the avoided strings forbid.
//!
//! The free text of a structural tag is `Terminal::Avoid` over any text:
//! every string of Unicode scalar values that contains none of a few
//! strings (the triggers, the excluded strings, the enclosing tag's end).
//! Its context-independent entry ([`crate::ci_cache`]) allows almost the
//! whole vocabulary, so a cold entry computed by a walk of the token trie
//! visits every node to reject a handful of tokens (≈ 10 ms on a 128k
//! vocabulary, paid again for each state after a partial trigger).
//!
//! Knowing the strings, the entry is instead built from what it forbids.
//! In a state reached by the text `x` (a complete UTF-8 string), a token
//! `t` that is itself a valid UTF-8 prefix is rejected only if `x·t`
//! contains one of the strings where `x` does not, that is, only if
//!
//! 1. `t` contains a string (the same tokens for every state: found once
//!    per string set and vocabulary by an Aho–Corasick scan of all token
//!    bytes, `aho-corasick`'s overlapping search), or
//! 2. `t` starts with `s[k..]` for a string `s` whose first `k ≥ 1` bytes
//!    end `x` (the tokens below one trie node per such split).
//!
//! Every other such token stays live. The entry starts from the set of
//! valid UTF-8 prefixes (once per vocabulary, [`AnyText`]); the tokens of
//! 1 and 2 and the tokens that are not valid UTF-8 prefixes are run
//! through the terminal's automaton one by one, which decides each
//! exactly and gives the remainders of the context-dependent ones. The
//! entry equals the walk's (`tests` below, on random strings and
//! vocabularies); its cost follows the tokens it looks at, not the trie.
//!
//! States reached only mid-character (after a token that ends inside a
//! UTF-8 sequence) keep the walk: there the valid prefixes are not the
//! baseline. [`crate::IndexConfig::avoid_masks`] switches the whole path
//! off (the ablation).

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use aho_corasick::{AhoCorasick, MatchKind};
use rustc_hash::FxHashMap as HashMap;
use zapspec_core::{TokenId, TokenSet, Vocabulary};
use zapspec_toktrie::TokTrie;

use crate::terminal::{ByteDfa, DEAD};

/// Per vocabulary: the tokens of the trie that are valid UTF-8 prefixes
/// (what any-text keeps live from a character boundary), the others, and
/// the trie's token bytes end to end, in the trie's token order, for the
/// containment scan.
#[derive(Debug)]
pub(crate) struct AnyText {
    valid: TokenSet,
    invalid: Vec<TokenId>,
    /// The bytes of the trie's `i`-th token ([`TokTrie::tokens`]) are
    /// `blob[starts[i]..starts[i + 1]]`.
    blob: Vec<u8>,
    starts: Vec<u32>,
}

impl AnyText {
    /// One pass over the trie's tokens.
    pub(crate) fn new(trie: &TokTrie, vocab: &(impl Vocabulary + ?Sized)) -> AnyText {
        let mut valid = TokenSet::new(vocab.len());
        let mut invalid = Vec::new();
        let ids = trie.tokens();
        let total: usize = ids.iter().map(|&t| vocab.token_bytes(t).len()).sum();
        let mut blob = Vec::with_capacity(total);
        let mut starts = Vec::with_capacity(ids.len() + 1);
        for &t in ids {
            let b = vocab.token_bytes(t);
            starts.push(blob.len() as u32);
            blob.extend_from_slice(b);
            if is_utf8_prefix(b) {
                valid.insert(t);
            } else {
                invalid.push(t);
            }
        }
        starts.push(blob.len() as u32);
        AnyText {
            valid,
            invalid,
            blob,
            starts,
        }
    }

    /// The tokens of `trie` (the one this was built from) that contain
    /// one of the strings `ac` searches for.
    fn containing(&self, ac: &AhoCorasick, trie: &TokTrie) -> Vec<TokenId> {
        let ids = trie.tokens();
        let mut out = Vec::new();
        let mut last = usize::MAX;
        for m in ac.find_overlapping_iter(&self.blob) {
            // the token the match starts in; kept when it ends there too
            let i = self.starts.partition_point(|&x| x as usize <= m.start()) - 1;
            if i != last && m.end() <= self.starts[i + 1] as usize {
                out.push(ids[i]);
                last = i;
            }
        }
        out
    }
}

/// Whether `b` is valid UTF-8 up to a character cut short at its end
/// (what `(?s:.)*` keeps live from a character boundary).
fn is_utf8_prefix(b: &[u8]) -> bool {
    match std::str::from_utf8(b) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

/// What a free-text terminal knows beyond its automaton: its strings, and
/// (computed on first use) their searcher, the tokens containing one, and
/// a shortest text reaching each automaton state.
#[derive(Debug)]
pub(crate) struct AvoidText {
    strings: Arc<[Vec<u8>]>,
    ac: OnceLock<Option<AhoCorasick>>,
    containing: OnceLock<Vec<TokenId>>,
    access: OnceLock<HashMap<u32, Vec<u8>>>,
}

impl AvoidText {
    pub(crate) fn new(strings: Arc<[Vec<u8>]>) -> AvoidText {
        AvoidText {
            strings,
            ac: OnceLock::new(),
            containing: OnceLock::new(),
            access: OnceLock::new(),
        }
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.strings
            .iter()
            .map(|s| s.capacity() + 24)
            .sum::<usize>()
            + self.containing.get().map_or(0, |c| 4 * c.capacity())
            + self
                .access
                .get()
                .map_or(0, |a| a.values().map(|v| v.capacity() + 40).sum::<usize>())
            + self
                .ac
                .get()
                .and_then(|a| a.as_ref())
                .map_or(0, |a| a.memory_usage())
    }

    /// A shortest byte string from the start to every state of `dfa`
    /// (breadth first over one byte per class).
    fn access(&self, dfa: &ByteDfa) -> &HashMap<u32, Vec<u8>> {
        self.access.get_or_init(|| {
            let mut reps: Vec<u8> = Vec::new();
            let mut seen_cls = [false; 256];
            for b in 0..=255u8 {
                let c = dfa.class(b) as usize;
                if !seen_cls[c] {
                    seen_cls[c] = true;
                    reps.push(b);
                }
            }
            let mut out: HashMap<u32, Vec<u8>> = HashMap::default();
            let start = dfa.start();
            if start == DEAD {
                return out;
            }
            out.insert(start, Vec::new());
            let mut queue = VecDeque::from([start]);
            while let Some(q) = queue.pop_front() {
                for &b in &reps {
                    let t = dfa.next(q, b);
                    if t != DEAD && !out.contains_key(&t) {
                        let mut w = out[&q].clone();
                        w.push(b);
                        out.insert(t, w);
                        queue.push_back(t);
                    }
                }
            }
            out
        })
    }

    /// The context-independent entry of state `s` of the terminal's
    /// automaton `dfa` (module docs), or `None` where this path does not
    /// apply (a state reached mid-character; the strings' searcher could
    /// not be built): the caller walks the trie then.
    pub(crate) fn entry(
        &self,
        dfa: &ByteDfa,
        s: u32,
        trie: &TokTrie,
        any: &AnyText,
        vocab: &(impl Vocabulary + ?Sized),
    ) -> Option<(TokenSet, TokTrie)> {
        let x = self.access(dfa).get(&s)?;
        if std::str::from_utf8(x).is_err() {
            return None;
        }
        let ac = self
            .ac
            .get_or_init(|| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .build(self.strings.iter())
                    .ok()
            })
            .as_ref()?;
        let containing = self.containing.get_or_init(|| any.containing(ac, trie));
        let mut cands: Vec<TokenId> = containing.clone();
        cands.extend_from_slice(&any.invalid);
        for p in self.strings.iter() {
            for k in 1..p.len() {
                if x.ends_with(&p[..k]) {
                    if let Some(i) = trie.find(&p[k..]) {
                        cands.extend_from_slice(trie.tokens_in_subtree(i));
                    }
                }
            }
        }
        cands.sort_unstable();
        cands.dedup();
        let mut allowed = any.valid.clone();
        let mut rest: Vec<(&[u8], TokenId)> = Vec::new();
        for &t in &cands {
            let b = vocab.token_bytes(t);
            let mut q = s;
            let mut ends: Vec<usize> = Vec::new();
            let mut died = false;
            for (k, &byte) in b.iter().enumerate() {
                if k > 0 && dfa.is_accepting(q) {
                    ends.push(k);
                }
                q = dfa.next(q, byte);
                if q == DEAD {
                    died = true;
                    break;
                }
            }
            if died {
                allowed.remove(t);
                rest.extend(ends.into_iter().map(|k| (&b[k..], t)));
            } else {
                allowed.insert(t);
            }
        }
        rest.sort_unstable();
        Some((allowed, TokTrie::from_sorted(&rest)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use zapspec_grammar::{avoid::ANY_TEXT_REGEX, Terminal};

    /// Random tokens (bytes), then an empty EOS.
    struct Toks(Vec<Vec<u8>>);

    impl Vocabulary for Toks {
        fn len(&self) -> usize {
            self.0.len() + 1
        }
        fn token_bytes(&self, t: TokenId) -> &[u8] {
            self.0.get(t as usize).map_or(&[], Vec::as_slice)
        }
        fn eos(&self) -> TokenId {
            self.0.len() as TokenId
        }
        fn is_special(&self, t: TokenId) -> bool {
            t as usize == self.0.len()
        }
    }

    /// Every state's entry equals the trie walk's: the allowed tokens and
    /// the remainders of the context-dependent ones.
    fn check(strings: &[Vec<u8>], toks: Vec<Vec<u8>>) -> Result<(), TestCaseError> {
        let t = Terminal::avoid(ANY_TEXT_REGEX.to_string(), strings.iter().cloned());
        let Terminal::Avoid(_, ss) = &t else {
            return Ok(());
        };
        let dfa = ByteDfa::compile(&t).unwrap();
        let vocab = Toks(toks);
        let trie = TokTrie::from_vocab(&vocab);
        let any = AnyText::new(&trie, &vocab);
        let av = AvoidText::new(ss.clone());
        let states: Vec<u32> = av.access(&dfa).keys().copied().collect();
        let mut fast = 0;
        for s in states {
            let walk = crate::ci_cache::compute(&dfa, s, &trie, &[], vocab.len());
            let Some((allowed, rest)) = av.entry(&dfa, s, &trie, &any, &vocab) else {
                continue;
            };
            fast += 1;
            let e = crate::ci_cache::from_parts(allowed, rest);
            prop_assert_eq!(
                e.allowed_tokens(vocab.len()).iter().collect::<Vec<_>>(),
                walk.allowed_tokens(vocab.len()).iter().collect::<Vec<_>>(),
                "state {} {:?}",
                s,
                ss
            );
            let (mut a, mut b) = (e.dependent(), walk.dependent());
            a.sort();
            b.sort();
            prop_assert_eq!(a, b, "state {} {:?}", s, ss);
        }
        // the start is a character boundary: the fast path always applies
        prop_assert!(fast > 0);
        Ok(())
    }

    #[test]
    fn tool_call_trigger_over_words() {
        let strings = vec![b"<tool_call>".to_vec(), b"</think>".to_vec()];
        let toks: Vec<Vec<u8>> = [
            "<",
            "<tool",
            "_call",
            ">",
            "<tool_call>",
            "a<tool_call>b",
            "</",
            "think",
            ">\n",
            "é",
            "\u{e9}<",
            "call>",
            "x",
            "tool_call>",
            "ool_call>",
            "\u{1F600}",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .chain([
            vec![0xC3],
            vec![0xA9],
            vec![0x80, b'<'],
            vec![0xFF],
            vec![b'a', 0xE2, 0x82],
        ])
        .collect();
        check(&strings, toks).unwrap();
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        /// Random strings and tokens over a small alphabet that includes a
        /// two-byte character and stray UTF-8 bytes, so that overlaps,
        /// failure links and mid-character states are all hit.
        #[test]
        fn entries_equal_the_walk(
            strings in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'<'), Just(0xC3u8), Just(0xA9u8)], 1..5),
                1..4,
            ),
            toks in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'<'), Just(b'c'), Just(0xC3u8), Just(0xA9u8), Just(0x80u8)], 1..6),
                1..40,
            ),
        ) {
            // strings are text: keep the valid UTF-8 ones
            let strings: Vec<Vec<u8>> =
                strings.into_iter().filter(|s| std::str::from_utf8(s).is_ok()).collect();
            check(&strings, toks)?;
        }
    }
}
