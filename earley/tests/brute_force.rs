//! Masks against brute force: a token is allowed after prefix `p` iff
//! `p + bytes(token)` is a viable prefix of the language, checked with the
//! independent naive recognizer of `zapspec_grammar::reference`. Every engine
//! configuration (pruning, caches, fusion on/off) must give the same masks.

use std::sync::Arc;

use proptest::prelude::*;
use zapspec_core::{Constraint, TokenId, TokenSet, Vocabulary};
use zapspec_earley::{Engine, EngineConfig};
use zapspec_grammar::reference::Recognizer;
use zapspec_grammar::{CharClass, Grammar, NtId, Symbol, Terminal};
use zapspec_vocab::TokenVocab;

fn small_vocab() -> Arc<TokenVocab> {
    let toks = [
        "a", "b", "c", "ab", "ba", "abc", "cc", "bca", "aa", "cab", "", "bb", "abab", "xa",
    ];
    let v: Vec<Vec<u8>> = toks.iter().map(|s| s.as_bytes().to_vec()).collect();
    Arc::new(TokenVocab::from_tokens("small", v, &[], 10).unwrap())
}

#[derive(Clone, Debug)]
enum S {
    Nt(u32),
    Lit(&'static str),
    Class,
    Re(&'static str),
    /// An intersection: the bounded product when the second regex is a
    /// counted repetition of a prefix-free unit, else the eager product.
    And(&'static str, &'static str),
    /// A regex without some strings: deferred when the regex's language
    /// is surely infinite, else built at once.
    Except(&'static str, &'static [&'static str]),
}

fn build(nts: usize, rules: &[(u32, Vec<S>)]) -> Grammar {
    let mut g = Grammar::new();
    for i in 0..nts {
        g.add_nonterminal(&format!("n{i}"));
    }
    for (lhs, rhs) in rules {
        let rhs = rhs
            .iter()
            .map(|s| match s {
                S::Nt(n) => Symbol::Nt(NtId(*n % nts as u32)),
                S::Lit(l) => Symbol::T(Terminal::Literal(l.as_bytes().to_vec())),
                S::Class => Symbol::T(Terminal::Class(CharClass::new([('a', 'b')], false))),
                S::Re(r) => Symbol::T(Terminal::Regex(r.to_string())),
                S::And(a, b) => Symbol::T(Terminal::And(a.to_string(), b.to_string())),
                S::Except(r, names) => Symbol::T(Terminal::except(
                    r.to_string(),
                    names.iter().map(|n| n.as_bytes().to_vec()),
                )),
            })
            .collect();
        g.add_rule(NtId(*lhs % nts as u32), rhs);
    }
    g.start = NtId(0);
    g
}

fn sym() -> impl Strategy<Value = S> {
    prop_oneof![
        3 => (0u32..4).prop_map(S::Nt),
        2 => prop::sample::select(vec!["a", "b", "c", "ab", "ca"]).prop_map(S::Lit),
        1 => Just(S::Class),
        1 => prop::sample::select(vec!["a*", "b+c?", "(ab)+"]).prop_map(S::Re),
        1 => prop::sample::select(vec![
            ("(?:ab)+c*", "[abc]{1,16}"),
            ("a[abc]*|b+", "[abc]{3,17}"),
            ("a[abc]*|b+", "(?:a|bc|b){0,16}"),
            // no counted side: the product of the two regexes' own entries
            ("(?:ab)+c*", "a[abc]*|b+"),
            ("[abc]*c", "(?:a|bc|b)*"),
            ("a[abc]*|b+", "[ab]*"),
        ])
        .prop_map(|(a, b)| S::And(a, b)),
        1 => prop::sample::select(vec![
            ("[abc]*", &["", "a", "ab", "abc", "ca"][..]),
            ("(?:ab|c)+", &["ab", "abab", "c"][..]),
            ("a|b|ab", &["a", "b", "ab"][..]),
            ("a{0,2}b?", &["aa", "b"][..]),
        ])
        .prop_map(|(r, n)| S::Except(r, n)),
    ]
}

fn grammar() -> impl Strategy<Value = Grammar> {
    (
        1usize..4,
        prop::collection::vec((0u32..4, prop::collection::vec(sym(), 0..4)), 1..8),
    )
        .prop_map(|(n, rules)| build(n, &rules))
}

fn brute_mask(rec: &Recognizer, vocab: &TokenVocab, prefix: &[u8]) -> TokenSet {
    let mut m = TokenSet::new(vocab.len());
    for t in 0..vocab.len() as TokenId {
        if vocab.is_special(t) {
            continue;
        }
        let mut p = prefix.to_vec();
        p.extend_from_slice(vocab.token_bytes(t));
        if rec.is_viable_prefix(&p) {
            m.insert(t);
        }
    }
    if rec.recognizes(prefix) {
        m.insert(vocab.eos());
    }
    m
}

fn configs() -> Vec<EngineConfig> {
    let d = EngineConfig::default();
    vec![
        d,
        EngineConfig::baseline(),
        EngineConfig {
            pruning: false,
            ..d
        },
        EngineConfig {
            ci_cache: false,
            ..d
        },
        EngineConfig {
            state_cache: false,
            ..d
        },
        EngineConfig {
            fuse_terminals: false,
            ..d
        },
        EngineConfig {
            rejected_prefixes: false,
            pruning: false,
            ..d
        },
    ]
}

/// The bytes the reference recognizer forces after `prefix`: while exactly
/// one byte keeps a viable prefix and the prefix is not a sentence.
/// Advances every matcher of `ms` by the `pick`-th of `allowed` (each
/// must accept it) and appends its bytes to `prefix`; false when nothing
/// is allowed.
fn step_all(
    ms: &mut [zapspec_earley::EarleyMatcher],
    allowed: &[TokenId],
    pick: usize,
    vocab: &TokenVocab,
    prefix: &mut Vec<u8>,
) -> Result<bool, TestCaseError> {
    if allowed.is_empty() {
        return Ok(false);
    }
    let t = allowed[pick % allowed.len()];
    for m in ms.iter_mut() {
        prop_assert!(m.advance(t).is_ok());
    }
    prefix.extend_from_slice(vocab.token_bytes(t));
    Ok(true)
}

fn brute_forced(rec: &Recognizer, prefix: &[u8], limit: usize) -> Vec<u8> {
    let mut p = prefix.to_vec();
    let mut out = Vec::new();
    while out.len() < limit && !rec.recognizes(&p) {
        let viable: Vec<u8> = (0..=255u8)
            .filter(|&b| {
                p.push(b);
                let ok = rec.is_viable_prefix(&p);
                p.pop();
                ok
            })
            .collect();
        let [b] = viable[..] else { break };
        p.push(b);
        out.push(b);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// `EarleyMatcher::forced_bytes` (jump-forward) against the reference.
    #[test]
    fn forced_bytes_match_brute_force(g in grammar(), picks in prop::collection::vec(0usize..64, 0..4)) {
        let vocab = small_vocab();
        let rec = Recognizer::new(&g).unwrap();
        prop_assume!(rec.is_viable_prefix(b""));
        let mut m = Engine::new(vocab.clone()).compile(&g, EngineConfig::default()).unwrap().matcher();
        let mut prefix = Vec::new();
        for pick in picks {
            prop_assert_eq!(m.forced_bytes(6), brute_forced(&rec, &prefix, 6), "after {:?}\n{}", String::from_utf8_lossy(&prefix), g);
            let allowed: Vec<TokenId> = m.mask().iter().filter(|&t| t != vocab.eos()).collect();
            if allowed.is_empty() {
                break;
            }
            let t = allowed[pick % allowed.len()];
            prefix.extend_from_slice(vocab.token_bytes(t));
            m.advance(t).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn masks_match_brute_force(g in grammar(), picks in prop::collection::vec(0usize..64, 0..7)) {
        let vocab = small_vocab();
        let rec = Recognizer::new(&g).unwrap();
        if !rec.is_viable_prefix(b"") {
            // Empty language: compile must say so.
            let e = Engine::new(vocab.clone()).compile(&g, EngineConfig::default());
            prop_assert!(e.is_err());
            return Ok(());
        }
        let engine = Engine::new(vocab.clone());
        let mut ms: Vec<_> = configs().into_iter().map(|c| engine.compile(&g, c).unwrap().matcher()).collect();
        let mut prefix = Vec::new();
        for pick in picks {
            let want = brute_mask(&rec, &vocab, &prefix);
            for (i, m) in ms.iter_mut().enumerate() {
                let got = m.mask();
                prop_assert_eq!(&got, &want, "config {} after {:?}\n{}", i, String::from_utf8_lossy(&prefix), g);
                prop_assert_eq!(m.is_accepting(), want.contains(vocab.eos()));
            }
            let allowed: Vec<TokenId> = want.iter().filter(|&t| t != vocab.eos()).collect();
            // Also try one rejected token: it must be refused without changing state.
            if let Some(bad) = (0..vocab.len() as TokenId).find(|&t| !want.contains(t) && !vocab.is_special(t)) {
                for m in ms.iter_mut() {
                    let n = m.num_tokens();
                    prop_assert!(m.advance(bad).is_err());
                    prop_assert_eq!(m.num_tokens(), n);
                }
            }
            if !step_all(&mut ms, &allowed, pick, &vocab, &mut prefix)? {
                break;
            }
        }
        // Rollback everything and compare with a fresh matcher.
        let fresh = engine.compile(&g, EngineConfig::default()).unwrap().matcher().mask();
        for m in ms.iter_mut() {
            let n = m.num_tokens();
            m.rollback(n).unwrap();
            prop_assert_eq!(m.mask(), fresh.clone());
        }
    }
}

/// The seed example of §1: `A → A B | B; B → a` on `aa` keeps fewer live
/// items with pruning than without.
#[test]
fn seed_example_prunes() {
    let mut g = Grammar::new();
    let a = g.add_nonterminal("A");
    let b = g.add_nonterminal("B");
    g.add_rule(a, vec![Symbol::Nt(a), Symbol::Nt(b)]);
    g.add_rule(a, vec![Symbol::Nt(b)]);
    g.add_rule(b, vec![Symbol::T(Terminal::Literal(b"a".to_vec()))]);
    g.start = a;
    let vocab = Arc::new(TokenVocab::bytes());
    let engine = Engine::new(vocab);
    let cfg = EngineConfig {
        fuse_terminals: false,
        ..EngineConfig::default()
    };
    let mut pruned = engine.compile(&g, cfg).unwrap().matcher();
    let mut full = engine
        .compile(
            &g,
            EngineConfig {
                pruning: false,
                ..cfg
            },
        )
        .unwrap()
        .matcher();
    for m in [&mut pruned, &mut full] {
        m.advance(b'a' as TokenId).unwrap();
        m.advance(b'a' as TokenId).unwrap();
        assert!(m.is_accepting());
    }
    let (ps, pi) = pruned.chart_size();
    let (fs, fi) = full.chart_size();
    eprintln!(
        "pruned: {ps} sets / {pi} items; unpruned: {fs} sets / {fi} items\n{}\n{}",
        pruned.dump_chart(),
        full.dump_chart()
    );
    assert!(pi < fi, "pruned {pi} items vs unpruned {fi}");
    assert!(ps < fs);
    assert_eq!(fs, 3);
    assert!(pruned.memory().peak_items < full.memory().peak_items);
    assert_eq!(pruned.mask(), full.mask());
}

/// Guards against a vacuous property test: most sampled grammars have a
/// non-empty language with a non-trivial first mask.
#[test]
fn generator_is_not_vacuous() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let vocab = small_vocab();
    let engine = Engine::new(vocab.clone());
    let (mut nonempty, mut rich) = (0, 0);
    for _ in 0..200 {
        let g = grammar().new_tree(&mut runner).unwrap().current();
        let rec = Recognizer::new(&g).unwrap();
        if rec.is_viable_prefix(b"") {
            nonempty += 1;
            let m = engine
                .compile(&g, EngineConfig::default())
                .unwrap()
                .matcher()
                .mask();
            if m.count() >= 2 {
                rich += 1;
            }
        }
    }
    eprintln!("{nonempty}/200 non-empty, {rich} with ≥ 2 allowed tokens");
    assert!(nonempty >= 80 && rich >= 60, "{nonempty} {rich}");
}

/// Terminal fusion of a bounded-length string written as JSON-Schema
/// compilers do (`P_k` = exactly 2^k units, `Q_k` = fewer than 2^k):
/// the fused grammar (one DFA terminal) has the same masks as the rules,
/// and both agree with brute force.
#[test]
fn fused_counted_string_matches_rules() {
    let mut g = Grammar::new();
    let root = g.add_nonterminal("root");
    let unit = g.add_nonterminal("unit");
    g.add_rule(
        unit,
        vec![Symbol::T(Terminal::Class(CharClass::new(
            [('a', 'b')],
            false,
        )))],
    );
    g.add_rule(unit, vec![Symbol::T(Terminal::Literal(b"cc".to_vec()))]);
    // P_0 = unit, P_1 = P_0 P_0, P_2 = P_1 P_1; Q_1 = ε | P_0, Q_2 = Q_1 | P_1 Q_1 (suffix Q_1), Q_3 = Q_2 | P_2 Q_2.
    let p1 = g.add_nonterminal("p1");
    g.add_rule(p1, vec![Symbol::Nt(unit), Symbol::Nt(unit)]);
    let p2 = g.add_nonterminal("p2");
    g.add_rule(p2, vec![Symbol::Nt(p1), Symbol::Nt(p1)]);
    let q1 = g.add_nonterminal("q1");
    g.add_rule(q1, vec![]);
    g.add_rule(q1, vec![Symbol::Nt(unit)]);
    let q2 = g.add_nonterminal("q2");
    g.add_rule(q2, vec![Symbol::Nt(q1)]);
    g.add_rule(q2, vec![Symbol::Nt(p1), Symbol::Nt(q1)]);
    let q3 = g.add_nonterminal("q3");
    g.add_rule(q3, vec![Symbol::Nt(q2)]);
    g.add_rule(q3, vec![Symbol::Nt(p2), Symbol::Nt(q2)]);
    // root = "x" q3 "x" | "b" root   (recursive, so root itself stays rules)
    g.add_rule(
        root,
        vec![
            Symbol::T(Terminal::Literal(b"x".to_vec())),
            Symbol::Nt(q3),
            Symbol::T(Terminal::Literal(b"x".to_vec())),
        ],
    );
    g.add_rule(
        root,
        vec![
            Symbol::T(Terminal::Literal(b"b".to_vec())),
            Symbol::Nt(root),
        ],
    );
    g.start = root;
    let fused = zapspec_earley::fuse::fuse(&g);
    // q3 became one regex terminal inside root's rule.
    assert!(fused.rules.iter().all(|r| r.lhs == root), "{fused}");
    let toks = [
        "a", "b", "c", "x", "ab", "cc", "xa", "ax", "bcc", "ccx", "x", "xab", "",
    ];
    let v: Vec<Vec<u8>> = toks.iter().map(|s| s.as_bytes().to_vec()).collect();
    let vocab = Arc::new(TokenVocab::from_tokens("t", v, &[], 12).unwrap());
    let engine = Engine::new(vocab.clone());
    let rec = Recognizer::new(&g).unwrap();
    let d = EngineConfig::default();
    let mut on = engine.compile(&g, d).unwrap().matcher();
    let mut off = engine
        .compile(
            &g,
            EngineConfig {
                fuse_terminals: false,
                ..d
            },
        )
        .unwrap()
        .matcher();
    // Walk every token sequence up to depth 5 (DFS with rollback).
    fn dfs(
        on: &mut zapspec_earley::EarleyMatcher,
        off: &mut zapspec_earley::EarleyMatcher,
        rec: &Recognizer,
        vocab: &TokenVocab,
        prefix: &mut Vec<u8>,
        depth: usize,
    ) {
        let want = brute_mask(rec, vocab, prefix);
        assert_eq!(
            on.mask(),
            want,
            "fused, after {:?}",
            String::from_utf8_lossy(prefix)
        );
        assert_eq!(
            off.mask(),
            want,
            "rules, after {:?}",
            String::from_utf8_lossy(prefix)
        );
        if depth == 0 {
            return;
        }
        for t in want.iter().filter(|&t| t != vocab.eos()) {
            on.advance(t).unwrap();
            off.advance(t).unwrap();
            let n = prefix.len();
            prefix.extend_from_slice(vocab.token_bytes(t));
            dfs(on, off, rec, vocab, prefix, depth - 1);
            prefix.truncate(n);
            on.rollback(1).unwrap();
            off.rollback(1).unwrap();
        }
    }
    dfs(&mut on, &mut off, &rec, &vocab, &mut Vec::new(), 4);
}

/// A chain of 300 right-linear rules (`N_i → [ab] N_{i+1} | 'c'`, a
/// bounded repetition written out rule by rule, as the JSON Schema
/// compiler's product automata are) nests one regex group per rule: fusion
/// must not produce a terminal the regex compiler refuses; the engine
/// compiles and agrees with brute force.
#[test]
fn deep_right_linear_chain_compiles_and_matches_brute_force() {
    let mut g = Grammar::new();
    let root = g.add_nonterminal("root");
    let n = 300;
    let chain: Vec<NtId> = (0..n)
        .map(|i| g.add_nonterminal(&format!("n{i}")))
        .collect();
    g.add_rule(
        root,
        vec![
            Symbol::T(Terminal::Literal(b"c".to_vec())),
            Symbol::Nt(chain[0]),
        ],
    );
    for i in 0..n {
        g.add_rule(chain[i], vec![Symbol::T(Terminal::Literal(b"c".to_vec()))]);
        if i + 1 < n {
            g.add_rule(
                chain[i],
                vec![
                    Symbol::T(Terminal::Class(CharClass::new([('a', 'b')], false))),
                    Symbol::Nt(chain[i + 1]),
                ],
            );
        }
    }
    g.start = root;
    let vocab = small_vocab();
    let rec = Recognizer::new(&g).unwrap();
    for cfg in [
        EngineConfig::default(),
        EngineConfig {
            fuse_terminals: false,
            ..EngineConfig::default()
        },
    ] {
        let cg = Engine::new(vocab.clone())
            .compile(&g, cfg)
            .expect("the chain compiles");
        let mut m = cg.matcher();
        let mut prefix = Vec::new();
        for step in 0..6 {
            assert_eq!(m.mask(), brute_mask(&rec, &vocab, &prefix), "step {step}");
            let t = m
                .mask()
                .iter()
                .find(|&t| t != vocab.eos())
                .expect("a continuation");
            prefix.extend_from_slice(vocab.token_bytes(t));
            m.advance(t).expect("allowed");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// `LookAhead::mask_key`: states (from several walks, every engine
    /// configuration) with equal keys have equal masks — the contract a
    /// one-step look-ahead caches successor masses by.
    #[test]
    fn equal_mask_keys_mean_equal_masks(
        g in grammar(),
        walks in prop::collection::vec(prop::collection::vec(0usize..64, 0..6), 1..5),
    ) {
        use zapspec_core::LookAhead;
        let vocab = small_vocab();
        let rec = Recognizer::new(&g).unwrap();
        prop_assume!(rec.is_viable_prefix(b""));
        let engine = Engine::new(vocab.clone());
        for cfg in configs() {
            let start = engine.compile(&g, cfg).unwrap().matcher();
            let mut seen: std::collections::HashMap<u64, (TokenSet, Vec<u8>)> = Default::default();
            for picks in &walks {
                let mut m = start.clone();
                let mut prefix = Vec::new();
                for &pick in picks {
                    let mask = m.mask();
                    let key = m.mask_key().expect("the Earley matcher has mask keys");
                    if let Some((other, at)) = seen.get(&key) {
                        prop_assert_eq!(other, &mask, "key {} at {:?} and {:?}\n{}", key,
                            String::from_utf8_lossy(at), String::from_utf8_lossy(&prefix), g);
                    }
                    seen.insert(key, (mask.clone(), prefix.clone()));
                    let allowed: Vec<TokenId> = mask.iter().filter(|&t| t != vocab.eos()).collect();
                    if allowed.is_empty() {
                        break;
                    }
                    let t = allowed[pick % allowed.len()];
                    m.advance(t).unwrap();
                    prefix.extend_from_slice(vocab.token_bytes(t));
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Intersection terminals walked up to and past their bounds (the
    /// random grammars above rarely get there): `root → And(A, B) "x"`,
    /// every configuration's mask equal to brute force along a random path
    /// of up to 24 tokens.
    #[test]
    fn intersections_match_brute_force_to_their_bounds(
        which in 0usize..6,
        m in 0u32..4,
        n in 16u32..20,
        picks in prop::collection::vec(0usize..64, 0..24),
    ) {
        let (a, unit) = [
            ("(?:ab)*", "[abc]"),
            ("a[abc]*|b+c?", "[abc]"),
            ("(?:a|bc)+c*", "[abc]"),
            ("[abc]*(?:cab)+", "[abc]"),
            ("(?:ab|c)*", "(?:a|bc|b)"),
            ("(?:abc)*(?:ab)?", "[abc]"),
        ][which];
        let mut g = Grammar::new();
        let root = g.add_nonterminal("root");
        g.add_rule(root, vec![
            Symbol::T(Terminal::And(a.into(), format!("{unit}{{{m},{n}}}"))),
            Symbol::T(Terminal::Literal(b"x".to_vec())),
        ]);
        g.start = root;
        let vocab = small_vocab();
        let rec = Recognizer::new(&g).unwrap();
        let engine = Engine::new(vocab.clone());
        let mut ms: Vec<_> = match configs()
            .into_iter()
            .map(|c| engine.compile(&g, c).map(|c| c.matcher()))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(ms) => ms,
            Err(_) => {
                prop_assert!(!rec.is_viable_prefix(b""));
                return Ok(());
            }
        };
        let mut prefix = Vec::new();
        for pick in picks {
            let want = brute_mask(&rec, &vocab, &prefix);
            for (i, m) in ms.iter_mut().enumerate() {
                prop_assert_eq!(&m.mask(), &want, "config {} after {:?}", i, String::from_utf8_lossy(&prefix));
            }
            // the closing `x` rarely, so that the count reaches the bounds
            let allowed: Vec<TokenId> = want
                .iter()
                .filter(|&t| t != vocab.eos() && (pick % 11 == 0 || !vocab.token_bytes(t).contains(&b'x')))
                .collect();
            if !step_all(&mut ms, &allowed, pick, &vocab, &mut prefix)? {
                break;
            }
        }
    }
}
