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
//!
//! **Tiers.** A state in which only the slice's strings up to some length
//! stay live — near a string's `maxLength`, or inside a pattern that
//! bounds the words a string holds — does not contain the slice. The
//! search finds the least length at which a string of the slice dies
//! ([`Slice::live_depth`]); every shorter token is allowed. Each slice
//! keeps *tiers*, its tokens of at most 64, 32, 16, 8 characters (per
//! [`SliceSpec`]) with the trie of the others, and such a state takes the
//! largest tier within that length. One search of the slice's own small
//! automaton serves every tier (bounded slices given as regexes, such as
//! `[^"]{0,32}`, multiply the searched pairs by their counter).

use std::collections::HashSet;
use std::sync::Arc;

use rustc_hash::FxBuildHasher;
use zapspec_core::{TokenId, TokenSet, Vocabulary};

use crate::error::EarleyError;
use crate::terminal::{ByteDfa, DEAD};
use crate::walk::live_tokens;
use zapspec_toktrie::TokTrie;

/// The slices a [`crate::VocabIndex`] builds by default, as (regex, tiers)
/// pairs ([`SliceSpec`]): one, the body of a JSON string (any character
/// but `"`, `\` and controls) without U+2028 and U+2029, with tiers of
/// its tokens of at most 64, 32, 16 and 8 characters (for states of
/// length-bounded strings, or of patterns that bound the words a string
/// holds). Leaving out the two line terminators makes the slice what a
/// JSON Schema pattern's `.` reads (ECMA-262 excludes them; with them, one
/// token holding either would send every state inside a `.` to a walk of
/// the whole trie), and costs a plain string's states a walk of the few
/// tokens that hold them.
pub const DEFAULT_SLICES: &[(&str, &[usize])] =
    &[(r#"[^"\\\x00-\x1F\x{2028}\x{2029}]*"#, &[64, 32, 16, 8])];

/// The characters of a byte string as the slices count them: its bytes
/// that are not UTF-8 continuation bytes (a character cut short at the
/// end of a token counts).
pub fn chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| !is_continuation(b)).count()
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// What a [`crate::VocabIndex`] builds one slice from: the slice's regex,
/// and the lengths of its *tiers* — the slice's tokens of at most that
/// many characters ([`chars`]), each with the trie of every other token. A
/// state in which only the strings of the slice up to some length are
/// sure to stay live uses the largest tier within that length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceSpec {
    /// The slice's language (module docs): UTF-8 text, since the tiers
    /// and the search count characters as lead bytes.
    pub regex: String,
    /// Lengths in characters of the tiers below the whole slice (any
    /// order; a length at or past the slice's longest token adds nothing).
    pub tiers: Vec<usize>,
}

impl SliceSpec {
    /// The [`DEFAULT_SLICES`].
    pub fn defaults() -> Vec<SliceSpec> {
        DEFAULT_SLICES
            .iter()
            .map(|(re, tiers)| SliceSpec {
                regex: re.to_string(),
                tiers: tiers.to_vec(),
            })
            .collect()
    }
}

/// The tokens of a slice of at most a number of characters
/// ([`SliceSpec::tiers`]; [`chars`]), and the trie of all others.
#[derive(Debug)]
pub struct Tier {
    /// Characters of the longest token of the tier.
    max_chars: usize,
    tokens: Arc<TokenSet>,
    n_tokens: usize,
    rest: TokTrie,
}

impl Tier {
    /// The tier's tokens (shared).
    pub fn tokens(&self) -> &Arc<TokenSet> {
        &self.tokens
    }

    /// Number of the tier's tokens.
    pub fn num_tokens(&self) -> usize {
        self.n_tokens
    }

    /// Characters ([`chars`]) of the tier's longest token.
    pub fn max_chars(&self) -> usize {
        self.max_chars
    }

    /// The trie of every other token.
    pub(crate) fn rest(&self) -> &TokTrie {
        &self.rest
    }

    /// Number of tokens outside the tier (what a cold entry through it
    /// walks).
    pub fn rest_tokens(&self) -> usize {
        self.rest.num_tokens()
    }

    /// Number of nodes of the trie of the tokens outside the tier.
    pub fn rest_nodes(&self) -> usize {
        self.rest.num_nodes()
    }

    fn heap_bytes(&self) -> usize {
        self.tokens.heap_bytes() + self.rest.heap_bytes()
    }
}

/// A slice of the vocabulary (module docs).
#[derive(Debug)]
pub struct Slice {
    regex: String,
    dfa: ByteDfa,
    /// `T_S` (tokens on which the slice's DFA stays live) first, then its
    /// tiers by decreasing length, each with the trie of every other
    /// (non-special, non-empty) token.
    tiers: Vec<Tier>,
    /// A few strings of the slice, run through a candidate DFA before the
    /// full inclusion check (a cheap filter).
    probes: Vec<Vec<u8>>,
    /// Characters of the longest token of `T_S`: the inclusion check
    /// looks no deeper.
    max_len: usize,
}

impl Slice {
    /// Builds the slice of `regex`, with tiers of its tokens of at most
    /// `tiers` characters, over the tokens of `trie`.
    pub(crate) fn new(
        regex: &str,
        tiers: &[usize],
        trie: &TokTrie,
        vocab: &(impl Vocabulary + ?Sized),
    ) -> Result<Self, EarleyError> {
        let dfa = ByteDfa::from_regex(regex)?;
        let tokens = live_tokens(&dfa, dfa.start(), trie, vocab.len(), |_| {});
        // each token's length in characters, counted once for every tier
        let lens: Vec<(TokenId, usize)> = tokens
            .iter()
            .map(|t| (t, chars(vocab.token_bytes(t))))
            .collect();
        let max_len = lens.iter().map(|&(_, n)| n).max().unwrap_or(0);
        let mut bounds: Vec<usize> = tiers.iter().copied().filter(|&b| b < max_len).collect();
        bounds.sort_unstable_by(|a, b| b.cmp(a));
        bounds.dedup();
        let tier = |inside: TokenSet, max_chars: usize| {
            let mut rest: Vec<(&[u8], TokenId)> = trie
                .tokens()
                .iter()
                .filter(|&&t| !inside.contains(t))
                .map(|&t| (vocab.token_bytes(t), t))
                .collect();
            rest.sort_unstable();
            Tier {
                max_chars,
                n_tokens: inside.count(),
                tokens: Arc::new(inside),
                rest: TokTrie::from_sorted(&rest),
            }
        };
        let mut built = Vec::with_capacity(bounds.len() + 1);
        for &b in &bounds {
            let mut inside = TokenSet::new(vocab.len());
            for &(t, _) in lens.iter().filter(|&&(_, n)| n <= b) {
                inside.insert(t);
            }
            built.push(tier(inside, b));
        }
        built.insert(0, tier(tokens, max_len));
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
            tiers: built,
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
        &self.tiers[0].tokens
    }

    /// `|T_S|`.
    pub fn num_tokens(&self) -> usize {
        self.tiers[0].n_tokens
    }

    /// The whole slice (`T_S`, first) and its tiers, by decreasing length.
    pub fn tiers(&self) -> &[Tier] {
        &self.tiers
    }

    /// The trie of the tokens outside `T_S`.
    #[cfg(test)]
    pub(crate) fn rest(&self) -> &TokTrie {
        &self.tiers[0].rest
    }

    /// Number of tokens outside `T_S` (what a cold entry through this
    /// slice walks).
    pub fn rest_tokens(&self) -> usize {
        self.tiers[0].rest_tokens()
    }

    /// Number of nodes of the trie of the tokens outside `T_S`.
    pub fn rest_nodes(&self) -> usize {
        self.tiers[0].rest_nodes()
    }

    /// Own heap bytes: the tiers' token sets and tries, the DFA.
    pub fn heap_bytes(&self) -> usize {
        self.tiers.iter().map(Tier::heap_bytes).sum::<usize>() + self.dfa.heap_bytes()
    }

    /// True when every byte string of at most the longest slice token's
    /// length that keeps this slice's DFA live keeps `d` live from state
    /// `s` (so every token of `T_S` is allowed from `s`).
    pub fn contained_in(&self, d: &ByteDfa, s: u32) -> bool {
        self.live_depth(d, s) >= self.max_len
    }

    /// The largest tier whose tokens all keep `d` live from `s` (the whole
    /// slice first), if any: the tier within [`Self::live_depth`].
    pub(crate) fn tier_for(&self, d: &ByteDfa, s: u32) -> Option<&Tier> {
        let depth = self.live_depth(d, s);
        self.tiers.iter().find(|t| t.max_chars <= depth)
    }

    /// The greatest `n` (at most the longest slice token's length) such
    /// that every byte string of at most `n` characters ([`chars`]) that
    /// keeps this slice's DFA live keeps `d` live from state `s`: a
    /// breadth-first search of the product automaton, one level per
    /// character (a continuation byte stays on its level), for a pair
    /// (slice live, `d` dead), whose first hit bounds `n`. The bytes are
    /// explored one representative per joint byte class. The depth bound
    /// matters for counted repetitions ([`crate::counted`]), whose product
    /// with an unbounded slice would otherwise be explored through every
    /// count.
    pub fn live_depth(&self, d: &ByteDfa, s: u32) -> usize {
        if s == DEAD {
            return 0;
        }
        if self.dfa.start() == DEAD {
            return self.max_len;
        }
        // The probes, byte by byte: a cheap bound before the search (a
        // string of `k` characters, the last maybe cut short, died).
        let mut limit = self.max_len;
        for p in &self.probes {
            let mut q = s;
            for (i, &b) in p.iter().enumerate() {
                q = d.next(q, b);
                if q == DEAD {
                    limit = limit.min(chars(&p[..=i]).saturating_sub(1));
                    break;
                }
            }
        }
        let smallest = self.tiers.last().map_or(0, |t| t.max_chars);
        if limit < smallest {
            return limit;
        }
        // Joint byte classes: one representative per distinct pair (and
        // kind of byte: a continuation byte or not).
        let mut conts: Vec<u8> = Vec::new();
        let mut leads: Vec<u8> = Vec::new();
        let mut seen = [0u64; 2 * 256 * 256 / 64];
        for b in 0..=255u8 {
            let c = is_continuation(b);
            let k = (usize::from(c) * 256 + self.dfa.class(b) as usize) * 256 + d.class(b) as usize;
            if seen[k / 64] >> (k % 64) & 1 == 0 {
                seen[k / 64] |= 1 << (k % 64);
                if c {
                    conts.push(b)
                } else {
                    leads.push(b)
                }
            }
        }
        // Far from a bounded product's bounds, its count cannot kill a
        // walk of this depth: step its pairs only. Nearer, a search of the
        // pairs alone as deep as the count allows, when a tier fits there,
        // costs less than one through every count.
        let reach = d.free_reach(s);
        let (free, limit) = if reach >= limit {
            (true, limit)
        } else if reach >= smallest {
            (true, reach)
        } else {
            (false, limit)
        };
        let step = |p: u32, b: u8| {
            if free {
                d.next_count_free(p, b)
            } else {
                d.next(p, b)
            }
        };
        // Level by level, a pair first met at its least depth. On level
        // `k` (strings of `k` characters), the continuation bytes first: a
        // dead one is a string of `k` characters dying (`k − 1` hold);
        // then the other bytes: a dead one is a string of `k + 1`.
        let start = (self.dfa.start(), s);
        let mut visited: HashSet<(u32, u32), FxBuildHasher> = HashSet::default();
        visited.insert(start);
        // The pairs `bytes` lead to from `(q, p)` not met before, into
        // `out`; false when one of them kills `d`.
        let mut expand = |(q, p): (u32, u32), bytes: &[u8], out: &mut Vec<(u32, u32)>| {
            for &b in bytes {
                let q2 = self.dfa.next(q, b);
                if q2 == DEAD {
                    continue;
                }
                let p2 = step(p, b);
                if p2 == DEAD {
                    return false;
                }
                if visited.insert((q2, p2)) {
                    out.push((q2, p2));
                }
            }
            true
        };
        let mut level = vec![start];
        let mut depth: usize = 0;
        loop {
            let mut i = 0;
            while i < level.len() {
                let pair = level[i];
                i += 1;
                if !expand(pair, &conts, &mut level) {
                    return depth.saturating_sub(1);
                }
            }
            if depth == limit {
                return limit;
            }
            let mut next = Vec::new();
            for &pair in &level {
                if !expand(pair, &leads, &mut next) {
                    return depth;
                }
            }
            if next.is_empty() {
                return limit;
            }
            level = next;
            depth += 1;
        }
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
        let s = Slice::new(DEFAULT_SLICES[0].0, &[], &trie, &v).unwrap();
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

    /// The tier a bounded string's state takes: the largest whose tokens
    /// all stay live (checked token by token), none below the smallest.
    #[test]
    fn tiers_follow_the_live_depth() {
        let v = vocab();
        let trie = TokTrie::from_vocab(&v);
        let s = Slice::new(DEFAULT_SLICES[0].0, &[4, 2, 9], &trie, &v).unwrap();
        // 9 is past the longest token (6 bytes): whole slice, 4, 2
        let bounds: Vec<usize> = s.tiers().iter().map(Tier::max_chars).collect();
        assert_eq!(bounds, vec![6, 4, 2]);
        for k in 0..8usize {
            let d = ByteDfa::from_regex(&format!(r#""[^"\\\x00-\x1F]{{0,{k}}}""#)).unwrap();
            let st = d.run(d.start(), b"\"");
            // strings of the slice die at k + 1 ASCII bytes
            assert_eq!(s.live_depth(&d, st), k.min(6), "k = {k}");
            let want = match k {
                0 | 1 => None,
                2 | 3 => Some(2),
                4 | 5 => Some(4),
                _ => Some(6),
            };
            let got = s.tier_for(&d, st);
            assert_eq!(got.map(Tier::max_chars), want, "k = {k}");
            if let Some(t) = got {
                for tok in t.tokens().iter() {
                    assert_ne!(d.run(st, v.token_bytes(tok)), DEAD, "k = {k}, token {tok}");
                }
                assert_eq!(t.num_tokens() + t.rest_tokens(), trie.num_tokens());
            }
        }
        // Tiers count characters: a string of one character takes `é`
        // (two bytes) and the lone lead byte C3, not `ab`.
        let s = Slice::new(DEFAULT_SLICES[0].0, &[1], &trie, &v).unwrap();
        let d = ByteDfa::from_regex(r#""[^"\\\x00-\x1F]?""#).unwrap();
        let st = d.run(d.start(), b"\"");
        assert_eq!(s.live_depth(&d, st), 1);
        let t = s.tier_for(&d, st).expect("the one-character tier");
        let names: Vec<&[u8]> = t.tokens().iter().map(|t| v.token_bytes(t)).collect();
        assert_eq!(names, vec![b"a".as_slice(), "é".as_bytes(), &[0xC3]]);
        // a continuation byte that kills: `é` but not `è` after the quote
        let d = ByteDfa::from_regex(r#""(?:[ -~]|\x{E9})*""#).unwrap();
        let st = d.run(d.start(), b"\"");
        assert_eq!(chars("è".as_bytes()), 1);
        assert!(d.run(st, "è".as_bytes()) == DEAD && d.run(st, "é".as_bytes()) != DEAD);
        assert_eq!(s.live_depth(&d, st), 0);
    }

    #[test]
    fn inclusion_matches_brute_force_on_short_strings() {
        let v = vocab();
        let trie = TokTrie::from_vocab(&v);
        let s = Slice::new(r#"[^"\\\x00-\x1F]{0,3}"#, &[], &trie, &v).unwrap();
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
