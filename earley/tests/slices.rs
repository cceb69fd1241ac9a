//! Context-independent cache entries against a naive per-token reference,
//! with and without vocabulary slices (`zapspec_earley::slicer`): the slices and
//! the merged remainder trie change the cost of an entry, never its
//! content.
//!
//! Reference: for each token, run the terminal's DFA over its bytes from
//! the state; the token is context-independent allowed when the DFA is
//! still live at the end, and each split `k` (1 ≤ k < len) after which the
//! DFA accepts gives a context-dependent entry `(bytes[k..], token)` unless
//! the token is allowed.

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;
use zapspec_core::{TokenId, Vocabulary};
use zapspec_earley::{ByteDfa, IndexConfig, VocabIndex};
use zapspec_vocab::TiktokenBpe;
use zapspec_vocab::TokenVocab;

type Entry = (BTreeSet<TokenId>, BTreeSet<(Vec<u8>, TokenId)>);

const DEAD: u32 = ByteDfa::DEAD;

fn naive(dfa: &ByteDfa, s: u32, vocab: &TokenVocab) -> Entry {
    let mut allowed = BTreeSet::new();
    let mut dep = BTreeSet::new();
    for t in 0..vocab.len() as TokenId {
        let bytes = vocab.token_bytes(t);
        if vocab.is_special(t) || bytes.is_empty() {
            continue;
        }
        let mut st = s;
        let mut splits = Vec::new();
        for (i, &b) in bytes.iter().enumerate() {
            st = if st == DEAD { DEAD } else { dfa.next(st, b) };
            if st == DEAD {
                break;
            }
            if i + 1 < bytes.len() && dfa.is_accepting(st) {
                splits.push(i + 1);
            }
        }
        if st != DEAD {
            allowed.insert(t);
        } else {
            for k in splits {
                dep.insert((bytes[k..].to_vec(), t));
            }
        }
    }
    (allowed, dep)
}

/// The index's entry for the state `path` leads to.
fn entry(index: &VocabIndex, re: &str, path: &[u8]) -> (Entry, bool) {
    let c = index
        .terminal_tokens(re, path)
        .expect("regex compiles")
        .expect("a live state");
    let allowed = c.allowed.iter().collect();
    let dep = c.dependent.into_iter().collect();
    ((allowed, dep), c.sliced)
}

/// Paths (byte strings from the start) to the first `cap` live states of
/// `dfa`, in breadth-first order (a lazy DFA builds them on the way; the
/// same path reaches the same state in every DFA of the regex, whatever
/// its numbering).
fn reachable(dfa: &ByteDfa, cap: usize) -> Vec<Vec<u8>> {
    let mut out: Vec<(u32, Vec<u8>)> = Vec::new();
    if dfa.start() == DEAD {
        return Vec::new();
    }
    out.push((dfa.start(), Vec::new()));
    let mut i = 0;
    while i < out.len() && out.len() < cap {
        let (s, p) = out[i].clone();
        i += 1;
        for b in 0..=255u8 {
            let t = dfa.next(s, b);
            if t != DEAD && !out.iter().any(|o| o.0 == t) && out.len() < cap {
                let mut q = p.clone();
                q.push(b);
                out.push((t, q));
            }
        }
    }
    out.into_iter().map(|o| o.1).collect()
}

/// Every state of each terminal (up to `cap`), sliced = unsliced = naive.
fn check_all_states(vocab: Arc<TokenVocab>, regexes: &[&str], cap: usize) -> usize {
    let sliced = VocabIndex::new(vocab.clone());
    let plain = VocabIndex::with_config(vocab.clone(), IndexConfig::plain()).expect("no slices");
    let mut n_sliced = 0;
    for re in regexes {
        let dfa = ByteDfa::from_regex(re).expect("regex compiles");
        for path in reachable(&dfa, cap) {
            let s = dfa.run(dfa.start(), &path);
            let reference = naive(&dfa, s, &vocab);
            let (a, used) = entry(&sliced, re, &path);
            let (b, _) = entry(&plain, re, &path);
            assert_eq!(a.0, reference.0, "allowed, sliced, {re} after {path:?}");
            assert_eq!(a.1, reference.1, "dependent, sliced, {re} after {path:?}");
            assert_eq!(b, reference, "unsliced, {re} after {path:?}");
            n_sliced += used as usize;
        }
    }
    n_sliced
}

#[test]
fn o200k_json_terminals_match_the_naive_reference() {
    let vocab =
        Arc::new(TokenVocab::tiktoken(TiktokenBpe::O200k).expect("o200k ships with tiktoken-rs"));
    let n = check_all_states(
        vocab,
        &[
            r#""(?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*""#,
            r#""(?:[^"\\\x00-\x1F]){2,12}""#,
            // near a bound only the shorter tokens stay live: the tiers
            r#""(?:[^"\\\x00-\x1F]){0,40}""#,
            r#""(?:[^"\\\x00-\x20]+ ){0,7}[^"\\\x00-\x20]+""#,
            // a pattern's `.`: the slice without U+2028 and U+2029
            r#""(?:[^"\\\x00-\x1F\x{2028}\x{2029}]|\\n)*""#,
            // A key that is not one of the listed property names.
            r#""(?:[^"\\\x00-\x1Fnb]|n(?:[^"\\\x00-\x1Fa]|a[^"\\\x00-\x1Fm])|b[^"\\\x00-\x1F])[^"\\\x00-\x1F]*""#,
            r#""[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}""#,
            r#"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"#,
            r#"[ \t\n\r]*"#,
            r#"true|false|null"#,
        ],
        40,
    );
    assert!(n >= 6, "the slices were used for {n} string states only");
}

fn small_vocab(tokens: Vec<Vec<u8>>) -> Arc<TokenVocab> {
    let mut toks = tokens;
    toks.push(Vec::new());
    let eos = toks.len() as u32 - 1;
    Arc::new(TokenVocab::from_tokens("random", toks, &[eos], eos).expect("valid vocabulary"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random vocabularies over bytes that matter to JSON strings (quote,
    /// backslash, a control, UTF-8 lead and continuation bytes, letters),
    /// random string-like terminals.
    #[test]
    fn random_vocabularies_match_the_naive_reference(
        tokens in prop::collection::vec(
            prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'"', b'\\', 0x01, 0xC3, 0xA9, b' ', b'n']), 1..7),
            1..60),
        lo in 0usize..4,
        extra in 0usize..40,
        which in 0usize..4,
    ) {
        let hi = lo + extra;
        let re = match which {
            0 => r#""[^"\\\x00-\x1F]*""#.to_string(),
            1 => format!(r#""[^"\\\x00-\x1F]{{{lo},{hi}}}""#),
            2 => format!(r#""(?:[^"\\\x00-\x1F]|\\n){{{lo},{hi}}}" ?"#),
            _ => r#"(?:"[ab]*"|[^"\\\x00-\x1F]+)"#.to_string(),
        };
        check_all_states(small_vocab(tokens), &[re.as_str()], 200);
    }
}

/// States of different terminals with the same residual automaton share
/// one entry; different residual languages do not. (That the shared
/// entry is one `Arc` is checked by the unit test
/// `engine::tests::equal_residuals_share_one_arc`.)
#[test]
fn equal_residuals_share_one_entry() {
    let vocab = small_vocab(
        ["a", "ab", "\"", "a\"", "\",", "b\"}", "é", "\\n"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect(),
    );
    let index = VocabIndex::new(vocab.clone());
    let open = |re: &str, pre: &[u8]| {
        index
            .terminal_tokens(re, pre)
            .expect("regex compiles")
            .expect("a live state")
    };
    let a = open(r#""[^"\\\x00-\x1F]*""#, b"\"");
    let b = open(r#""(?:x|yz)[^"\\\x00-\x1F]*""#, b"\"yz");
    // a bounded string is another language: an entry of its own
    open(r#""[^"\\\x00-\x1F]{0,5}""#, b"\"");
    assert_eq!(a, b, "same residual language, same entry");
    let stats = index.cache_stats();
    assert_eq!(stats.shared_entries, 2);
    assert_eq!(stats.ci_entries, 3);
    // Sharing off: separate, equal entries.
    let plain = VocabIndex::with_config(
        vocab.clone(),
        IndexConfig {
            share_residuals: false,
            ..IndexConfig::default()
        },
    )
    .expect("index");
    let d = plain
        .terminal_tokens(r#""(?:x|yz)[^"\\\x00-\x1F]*""#, b"\"yz")
        .expect("regex compiles")
        .expect("a live state");
    assert_eq!(d.allowed, a.allowed);
    assert_eq!(d.dependent, a.dependent);
    assert_eq!(plain.cache_stats().shared_entries, 0);
}

/// The shared cache is bounded: above `max_cache_bytes` entries not used
/// lately are evicted (during masks, not only at compile time), masks stay
/// equal to those of an unbounded index, and the cache stays near its bound
/// however many grammars are alive.
#[test]
fn cache_bound_evicts_and_masks_stay_correct() {
    use zapspec_core::{Constraint, TokenSet};
    use zapspec_earley::{Engine, EngineConfig};
    use zapspec_grammar::{Grammar, Symbol, Terminal};
    let vocab = small_vocab(
        [
            "a", "ab", "b", "\"", "a\"", "\",", "b\"}", "é", "\\n", "1", "12", "x",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect(),
    );
    let index = |max_cache_bytes| {
        VocabIndex::with_config(
            vocab.clone(),
            IndexConfig {
                max_cache_bytes,
                // No sharing, so every terminal state has its own entry.
                share_residuals: false,
                ..IndexConfig::default()
            },
        )
        .expect("index")
    };
    let (bounded, free) = (index(4096), index(usize::MAX));
    let grammar = |re: &str| {
        let mut g = Grammar::new();
        let root = g.add_nonterminal("root");
        g.add_rule(root, vec![Symbol::T(Terminal::Regex(re.to_string()))]);
        g.start = root;
        g
    };
    let res: Vec<String> = (1..=24)
        .map(|n| format!(r#""(?:a|b|1|é|\\n){{0,{n}}}"x{{{}}}"#, n % 3))
        .collect();
    // Masks along the text `"` + `ab`* of every grammar, both indexes; all
    // grammars stay alive.
    let masks = |idx: &Arc<VocabIndex>| -> (Vec<TokenSet>, Vec<_>) {
        let engine = Engine::with_index(idx.clone());
        let mut keep = Vec::new();
        let mut out = Vec::new();
        for re in &res {
            let c = engine
                .compile(&grammar(re), EngineConfig::default())
                .expect("compiles");
            let mut m = c.matcher();
            for t in [3u32, 1, 1, 2, 0, 1] {
                out.push(m.mask());
                if m.advance(t).is_err() {
                    break;
                }
            }
            keep.push(c);
        }
        (out, keep)
    };
    let (a, _keep_a) = masks(&bounded);
    let (b, _keep_b) = masks(&free);
    assert_eq!(a, b, "eviction changed a mask");
    let (sb, sf) = (bounded.cache_stats(), free.cache_stats());
    assert_eq!(sf.evictions, 0);
    println!("bounded {sb:?}\nunbounded {sf:?}");
    assert!(sb.evictions > 0 && sb.evicted > 0, "{sb:?}");
    assert!(
        sb.ci_entries < sf.ci_entries,
        "bounded {sb:?} vs unbounded {sf:?}"
    );
    // Evicted entries come back on use: masking everything again agrees.
    let (again, _keep) = masks(&bounded);
    assert_eq!(again, b);
}
