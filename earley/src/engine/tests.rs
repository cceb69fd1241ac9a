//! Unit tests of the index, its cache and compiled grammars.

use super::*;
use crate::config::EngineConfig;
use crate::terminal::ByteDfa;
use zapspec_core::TokenSet;
use zapspec_core::{Constraint, TokenId};
use zapspec_grammar::Grammar;

/// A vocabulary that is not `zapspec_vocab::TokenVocab`: `a`, `b`,
/// `ab`, `ba`, then EOS.
struct Tiny;

const TINY: [&[u8]; 5] = [b"a", b"b", b"ab", b"ba", b""];

impl Vocabulary for Tiny {
    fn len(&self) -> usize {
        TINY.len()
    }
    fn token_bytes(&self, t: TokenId) -> &[u8] {
        TINY[t as usize]
    }
    fn eos(&self) -> TokenId {
        4
    }
    fn is_special(&self, t: TokenId) -> bool {
        t == 4
    }
}

/// A vocabulary of `words` and an empty EOS token after them.
fn words(words: &[&str]) -> Arc<zapspec_vocab::TokenVocab> {
    let mut toks: Vec<Vec<u8>> = words.iter().map(|s| s.as_bytes().to_vec()).collect();
    toks.push(Vec::new());
    let eos = toks.len() as u32 - 1;
    Arc::new(
        zapspec_vocab::TokenVocab::from_tokens("random", toks, &[eos], eos)
            .expect("valid vocabulary"),
    )
}

/// States of different terminals with the same residual automaton
/// share one entry (one `Arc`); different residual languages do not.
/// The entries' contents: `tests/slices.rs`.
#[test]
fn equal_residuals_share_one_arc() {
    let vocab = words(&["a", "ab", "\"", "a\"", "\",", "b\"}", "é", "\\n"]);
    let index = VocabIndex::new(vocab);
    let open = |re: &str, pre: &[u8]| {
        let e = index
            .terminal_regex(re.to_string())
            .expect("regex compiles");
        let s = e.dfa().run(e.dfa().start(), pre);
        assert_ne!(s, ByteDfa::DEAD);
        e.ci(s, &index)
    };
    let a = open(r#""[^"\\\x00-\x1F]*""#, b"\"");
    let b = open(r#""(?:x|yz)[^"\\\x00-\x1F]*""#, b"\"yz");
    let c = open(r#""[^"\\\x00-\x1F]{0,5}""#, b"\"");
    assert!(Arc::ptr_eq(&a, &b), "same residual language, same entry");
    assert!(!Arc::ptr_eq(&a, &c), "bounded string is another language");
}

/// The cache's bytes recounted from what it holds: the terminals in
/// the map (charges brought up to date), the distinct entries of their
/// slots and of the residual map. Equal to the account once no grammar
/// or matcher outside the map holds anything.
fn recount(index: &VocabIndex) -> usize {
    let map = index.lock();
    let mut seen = rustc_hash::FxHashSet::default();
    let mut n = ring::map_bytes(&map);
    for t in map.values() {
        t.recharge();
        n += t.cache_bytes();
        for e in t.entries() {
            if seen.insert(Arc::as_ptr(&e)) {
                n += e.cache_bytes();
            }
        }
    }
    let residuals = index.residuals.lock().unwrap();
    n += ring::map_bytes(&residuals);
    for e in residuals.values() {
        if seen.insert(Arc::as_ptr(e)) {
            n += e.cache_bytes();
        }
    }
    n + index.ring.lock().unwrap().heap_bytes() + index.ghosts.lock().unwrap().heap_bytes()
}

/// The `k`th grammar of the cache tests (strings of bounded length,
/// counted letters, a starred tail), masked along a fixed token walk;
/// the masks.
fn masks_along(engine: &Engine, k: usize) -> Vec<TokenSet> {
    let g = Grammar::from_gbnf(&format!(
        r#"root ::= "\"" [ab1é]{{0,{}}} "\"" [x1]{{{}}} | "12" [ab]*"#,
        k % 9 + 1,
        k % 4
    ))
    .unwrap();
    let c = engine.compile(&g, EngineConfig::default()).unwrap();
    let mut m = c.matcher();
    let mut out = Vec::new();
    for t in [3u32, 0, 2, 9, 3, 8] {
        out.push(m.mask());
        if m.advance(t).is_err() {
            break;
        }
    }
    out
}

/// A terminal only one grammar looked up leaves the cache with that
/// grammar; one a second grammar looked up (alive at the same time, or
/// compiled again after the first was dropped) stays.
#[test]
fn single_use_terminals_leave_with_their_grammar() {
    let index = VocabIndex::new(words(&["a", "ab", "b", "1", "12", "x"]));
    let engine = Engine::with_index(index.clone());
    let compile = |src: &str| {
        engine
            .compile(&Grammar::from_gbnf(src).unwrap(), EngineConfig::default())
            .unwrap()
    };
    let cached = |re: &str| index.lock().contains_key(re);
    // one grammar: its terminals go with it
    let g = compile(r#"root ::= [ab]{2,3} "x""#);
    let mut m = g.matcher();
    let _ = m.mask();
    let terms = index.cache_stats().terminals;
    assert!(terms > 0);
    drop((m, g));
    assert_eq!(index.cache_stats().terminals, 0);
    assert_eq!(index.cache_stats().released, terms);
    // compiled again: remembered, kept past the second grammar
    drop(compile(r#"root ::= [ab]{2,3} "x""#));
    assert_eq!(index.cache_stats().terminals, terms);
    // two grammars alive over a shared terminal: it stays with the second
    let a = compile(r#"root ::= [1x]{4,5}"#);
    let shared: Vec<String> = a.rules.terms.iter().map(|t| t.regex.to_string()).collect();
    assert!(!shared.is_empty());
    let b = compile(r#"root ::= [1x]{4,5}"#);
    drop(a);
    for re in &shared {
        assert!(cached(re), "{re} left with the first of two grammars");
    }
    drop(b);
}

/// Four threads masking grammars over one index whose bound forces
/// sweeps while other threads read and fill slots: every mask equals
/// an unbounded index's, and afterwards the account equals a recount.
#[test]
fn concurrent_sweeps_keep_masks_and_account() {
    let vocab = words(&["a", "ab", "b", "\"", "a\"", "\",", "1", "12", "x", "é"]);
    let bounded = Engine::with_index(
        VocabIndex::with_config(
            vocab.clone(),
            IndexConfig {
                max_cache_bytes: 4 << 10,
                ..IndexConfig::default()
            },
        )
        .expect("index"),
    );
    let free = Engine::with_index(
        VocabIndex::with_config(
            vocab,
            IndexConfig {
                max_cache_bytes: usize::MAX,
                ..IndexConfig::default()
            },
        )
        .expect("index"),
    );
    let want: Vec<Vec<TokenSet>> = (0..36).map(|k| masks_along(&free, k)).collect();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (bounded, want) = (&bounded, &want);
            s.spawn(move || {
                for round in 0..3 {
                    for k in (t..36).step_by(4) {
                        let k = (k + 9 * round) % 36;
                        assert_eq!(masks_along(bounded, k), want[k], "grammar {k}");
                    }
                }
            });
        }
    });
    let index = bounded.index();
    let s = index.cache_stats();
    assert!(s.evictions > 0, "{s:?}");
    assert_eq!(index.account().get(), recount(index));
}

/// The account equals a recount of what the cache holds (terminals in
/// the map, distinct entries of their slots and of the residual map)
/// after every grammar, with sharing on and a bound small enough that
/// sweeps evict entries, residual keys and terminals; and once no
/// grammar is alive, sweeps bring the cache under its bound.
#[test]
fn account_is_exact_and_sweeps_keep_the_bound() {
    let vocab = words(&["a", "ab", "b", "\"", "a\"", "\",", "1", "12", "x", "é"]);
    let max = 6 << 10;
    let index = VocabIndex::with_config(
        vocab,
        IndexConfig {
            max_cache_bytes: max,
            ..IndexConfig::default()
        },
    )
    .expect("index");
    let engine = Engine::with_index(index.clone());
    for k in 0..40 {
        masks_along(&engine, k);
        let n = recount(&index);
        assert_eq!(index.account().get(), n, "after grammar {k}");
    }
    let s = index.cache_stats();
    assert!(s.evictions > 0 && s.evicted > 0, "{s:?}");
    for _ in 0..3 {
        index.enforce_bound();
    }
    let n = recount(&index);
    assert!(n <= max, "{:?}", index.cache_stats());
    assert_eq!(index.account().get(), n);
}

/// One live grammar whose own terminals outgrow the bound (5,000
/// alternatives, each a terminal, like a large `enum`): nothing can be
/// evicted while it lives, so sweeps are spaced by the account's growth
/// instead of running at each of its cold entries (which made a
/// 35,000-string enum's first mask take ten times longer).
#[test]
fn a_grammar_larger_than_the_bound_is_not_swept_at_every_entry() {
    let vocab = words(&[
        "k", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "k1", "00",
    ]);
    let index = VocabIndex::with_config(
        vocab,
        IndexConfig {
            max_cache_bytes: 4 << 10,
            ..IndexConfig::default()
        },
    )
    .expect("index");
    let engine = Engine::with_index(index.clone());
    let alts: Vec<String> = (0..35_000u64)
        .map(|i| format!("\"k{i:05}-{:05}\"", (i * 7919) % 100_003))
        .collect();
    let g = Grammar::from_gbnf(&format!("root ::= {}", alts.join(" | "))).unwrap();
    let mut m = engine
        .compile(&g, EngineConfig::default())
        .unwrap()
        .matcher();
    let _ = m.mask();
    let s = index.cache_stats();
    assert!(s.cache_bytes > 4 << 10, "{s:?}");
    assert!(s.sweeps <= 64, "{} sweeps for one grammar: {s:?}", s.sweeps);
}

#[test]
fn any_vocabulary_concrete_or_shared() {
    let g = Grammar::from_gbnf(r#"root ::= "a" "b"*"#).unwrap();
    let concrete = Engine::new(Arc::new(Tiny));
    let shared: SharedVocab = Arc::new(Tiny);
    let shared =
        Engine::with_index(VocabIndex::with_shared_vocab(shared, IndexConfig::default()).unwrap());
    for e in [concrete, shared] {
        let mut m = e.compile(&g, EngineConfig::default()).unwrap().matcher();
        assert_eq!(m.mask(), TokenSet::from_ids(5, [0, 2]));
        m.advance(2).unwrap();
        assert_eq!(m.mask(), TokenSet::from_ids(5, [1, 4]));
        assert!(m.advance(3).is_err());
        m.advance(4).unwrap();
        assert!(m.is_finished());
    }
}
