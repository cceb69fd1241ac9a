//! Regular families (`zapspec_earley::family`): right-linear systems with
//! cycles through several nonterminals, compiled into one terminal. Masks
//! with families equal brute force (the independent naive recognizer of
//! `zapspec_grammar::reference`) and the masks without them, on random
//! automata written as right-linear grammars (what JSON Schema key regions
//! become), placed alone or inside a larger rule.

use std::sync::Arc;

use proptest::prelude::*;
use zapspec_core::{Constraint, TokenId, TokenSet, Vocabulary};
use zapspec_earley::fuse::fuse_with;
use zapspec_earley::{EarleyMatcher, Engine, EngineConfig};
use zapspec_grammar::reference::Recognizer;
use zapspec_grammar::{CharClass, Grammar, NtId, Symbol, Terminal};
use zapspec_vocab::TokenVocab;

fn vocab() -> Arc<TokenVocab> {
    let toks = [
        "a", "b", "c", "ab", "ba", "abc", "cc", "bca", "aa", "cab", "", "bb", "abab", "x", "y",
        "xa", "by", "cy", "aab", "é",
    ];
    let v: Vec<Vec<u8>> = toks.iter().map(|s| s.as_bytes().to_vec()).collect();
    Arc::new(TokenVocab::from_tokens("family", v, &[], 10).unwrap())
}

#[derive(Clone, Debug)]
enum B {
    Lit(&'static str),
    Class,
    Re(&'static str),
}

/// A right-linear system: per member, rules `body [tail]` (`tail` a member
/// index); `wrapped`: the start is `s ::= "x" m0 "y"` instead of `m0`.
#[derive(Clone, Debug)]
struct System {
    rules: Vec<(u32, Vec<B>, Option<u32>)>,
    members: u32,
    wrapped: bool,
}

impl System {
    fn grammar(&self) -> Grammar {
        let mut g = Grammar::new();
        let s = g.add_nonterminal("s");
        let ms: Vec<NtId> = (0..self.members)
            .map(|i| g.add_nonterminal(&format!("m{i}")))
            .collect();
        for (lhs, body, tail) in &self.rules {
            let mut rhs: Vec<Symbol> = body
                .iter()
                .map(|b| {
                    Symbol::T(match b {
                        B::Lit(l) => Terminal::Literal(l.as_bytes().to_vec()),
                        B::Class => {
                            Terminal::Class(CharClass::new([('a', 'b'), ('é', 'é')], false))
                        }
                        B::Re(r) => Terminal::Regex(r.to_string()),
                    })
                })
                .collect();
            if let Some(t) = tail {
                rhs.push(Symbol::Nt(ms[(*t % self.members) as usize]));
            }
            g.add_rule(ms[(*lhs % self.members) as usize], rhs);
        }
        let x = |b: &str| Symbol::T(Terminal::Literal(b.as_bytes().to_vec()));
        if self.wrapped {
            g.add_rule(s, vec![x("x"), Symbol::Nt(ms[0]), x("y")]);
        } else {
            g.add_rule(s, vec![Symbol::Nt(ms[0])]);
        }
        g.start = s;
        g
    }
}

fn body() -> impl Strategy<Value = Vec<B>> {
    prop::collection::vec(
        prop_oneof![
            3 => prop::sample::select(vec!["a", "b", "c", "ab"]).prop_map(B::Lit),
            1 => Just(B::Class),
            1 => prop::sample::select(vec!["a*", "(?:bc)+", "c?"]).prop_map(B::Re),
        ],
        0..3,
    )
}

fn system() -> impl Strategy<Value = System> {
    (
        2u32..6,
        prop::collection::vec(
            (0u32..6, body(), prop::option::weighted(0.8, 0u32..6)),
            3..14,
        ),
        any::<bool>(),
    )
        .prop_map(|(members, rules, wrapped)| System {
            rules,
            members,
            wrapped,
        })
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

/// Walks the matchers `ms` (one grammar under several configurations)
/// along tokens chosen by `pick(step, brute-force mask)` for at most
/// `steps` steps: at every step each matcher's mask must equal brute force
/// over `rec`, and each must accept the chosen token. The bytes read, or
/// what differed.
fn walk_against_brute_force(
    ms: &mut [EarleyMatcher],
    rec: &Recognizer,
    vocab: &TokenVocab,
    g: &Grammar,
    steps: usize,
    mut pick: impl FnMut(usize, &TokenSet) -> Option<TokenId>,
) -> Result<Vec<u8>, String> {
    let mut prefix = Vec::new();
    for step in 0..steps {
        let want = brute_mask(rec, vocab, &prefix);
        for (i, m) in ms.iter_mut().enumerate() {
            if m.mask() != want {
                return Err(format!(
                    "config {i} after {:?}\n{g}",
                    String::from_utf8_lossy(&prefix)
                ));
            }
        }
        let Some(t) = pick(step, &want) else {
            break;
        };
        for (i, m) in ms.iter_mut().enumerate() {
            if m.advance(t).is_err() {
                return Err(format!("config {i} refused token {t}"));
            }
        }
        prefix.extend_from_slice(vocab.token_bytes(t));
    }
    Ok(prefix)
}

/// A random walk's choice: the `picks[step]`-th allowed token (EOS aside),
/// none when only EOS is allowed.
fn random_pick<'a>(
    vocab: &'a TokenVocab,
    picks: &'a [usize],
) -> impl FnMut(usize, &TokenSet) -> Option<TokenId> + 'a {
    move |step, want| {
        let allowed: Vec<TokenId> = want.iter().filter(|&t| t != vocab.eos()).collect();
        (!allowed.is_empty()).then(|| allowed[picks[step] % allowed.len()])
    }
}

/// A fixed path's choice: the token spelled `path[step]`.
fn spelled<'a>(
    vocab: &'a TokenVocab,
    path: &'a [&'a str],
) -> impl FnMut(usize, &TokenSet) -> Option<TokenId> + 'a {
    move |step, _| {
        Some(
            (0..vocab.len() as TokenId)
                .find(|&i| vocab.token_bytes(i) == path[step].as_bytes())
                .unwrap(),
        )
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn family_masks_match_brute_force(sys in system(), picks in prop::collection::vec(0usize..64, 0..8)) {
        let g = sys.grammar();
        let vocab = vocab();
        let rec = Recognizer::new(&g).unwrap();
        if !rec.is_viable_prefix(b"") {
            return Ok(());
        }
        let engine = Engine::new(vocab.clone());
        let d = EngineConfig::default();
        let mut ms: Vec<_> = [d, EngineConfig { fuse_families: false, ..d }, EngineConfig { pruning: false, ..d }]
            .into_iter()
            .map(|c| engine.compile(&g, c).unwrap().matcher())
            .collect();
        let r = walk_against_brute_force(&mut ms, &rec, &vocab, &g, picks.len(), random_pick(&vocab, &picks));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// The generator makes families most of the time (otherwise the property
/// above would test the rules only).
#[test]
fn generator_makes_families() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut with = 0;
    for _ in 0..200 {
        let g = system().new_tree(&mut runner).unwrap().current().grammar();
        if !fuse_with(&g, usize::MAX, &[], true).families.is_empty() {
            with += 1;
        }
    }
    eprintln!("{with}/200 grammars have a family");
    assert!(with >= 80, "{with}");
}

/// A key region of "contains `ab` or `ca`" written state by state, as
/// `zapspec-jsonschema` writes regions whose automaton has cycles: one
/// family terminal, the rules dropped, and the language unchanged.
#[test]
fn contains_automaton_is_one_terminal() {
    let text = r#"
        root ::= "\"" q0
        q0 ::= "a" q1 | "c" q2 | [b] q0
        q1 ::= "b" q3 | "a" q1 | "c" q2
        q2 ::= "a" q3 | "b" q0 | "c" q2
        q3 ::= [a-c] q3 | "\""
    "#;
    let g = Grammar::from_gbnf(text).unwrap();
    let f = fuse_with(&g, usize::MAX, &[], true);
    assert_eq!(f.families.len(), 1, "{}", f.grammar);
    assert!(f
        .families
        .keys()
        .all(|k| k.starts_with(zapspec_earley::family::FAMILY_PREFIX)));
    assert_eq!(f.grammar.rules.len(), 1, "{}", f.grammar);
    let rec = Recognizer::new(&g).unwrap();
    let vocab = vocab();
    let engine = Engine::new(vocab.clone());
    let cg = engine.compile(&g, EngineConfig::default()).unwrap();
    for s in [
        &b"\"ab\""[..],
        b"\"cca\"",
        b"\"bbb\"",
        b"\"ac\"",
        b"\"abc",
        b"\"caab\"",
    ] {
        let mut m = cg.matcher();
        let ok = s.iter().all(|&b| m.advance_bytes(&[b])) && m.is_accepting();
        assert_eq!(ok, rec.recognizes(s), "{}", String::from_utf8_lossy(s));
    }
}

/// Unit rules in a cycle (`m0 → m1`, `m1 → m0`) are epsilon edges between
/// members: the NFA builder must not loop on them.
#[test]
fn unit_rule_cycle_compiles() {
    let text = r#"
        root ::= "x" m0 "y"
        m0 ::= m1 | "a" m1 | "b"
        m1 ::= m0 | "c" m0 | "a"
    "#;
    let g = Grammar::from_gbnf(text).unwrap();
    let f = fuse_with(&g, usize::MAX, &[], true);
    assert_eq!(f.families.len(), 1, "{}", f.grammar);
    let rec = Recognizer::new(&g).unwrap();
    let vocab = vocab();
    let engine = Engine::new(vocab.clone());
    let cg = engine.compile(&g, EngineConfig::default()).unwrap();
    for s in [&b"xby"[..], b"xacay", b"xcby", b"xy", b"xaaby", b"xcacby"] {
        let mut m = cg.matcher();
        let ok = s.iter().all(|&b| m.advance_bytes(&[b])) && m.is_accepting();
        assert_eq!(ok, rec.recognizes(s), "{}", String::from_utf8_lossy(s));
    }
}

/// Above `MAX_NONDETERMINISTIC_MEMBERS` members a family that is not
/// deterministic is determinised in full when compiled, and left as rules
/// past `MAX_EXPLORED_STATES`: "an `a` 20 bytes before the end" written
/// state by state (2^20 subsets) compiles as rules, with masks equal to
/// the rules' own; the same number of members written deterministically
/// (a counter of `a`s modulo 20) becomes one terminal.
#[test]
fn large_nondeterministic_systems_stay_rules() {
    let n = 20;
    let mut nondet = String::from("root ::= \"x\" q0\nq0 ::= [ab] q0 | \"a\" q1\n");
    for i in 1..n {
        nondet.push_str(&format!("q{i} ::= [ab] q{}\n", i + 1));
    }
    // a cycle through all members, so only determinism decides
    nondet.push_str(&format!("q{n} ::= \"y\" | \"c\" q0\n"));
    let g = Grammar::from_gbnf(&nondet).unwrap();
    assert_eq!(fuse_with(&g, usize::MAX, &[], true).families.len(), 1);
    let vocab = vocab();
    let engine = Engine::new(vocab.clone());
    let cg = engine.compile(&g, EngineConfig::default()).unwrap();
    let fused = cg.fused_grammar().expect("fusion on");
    assert!(
        !fused
            .to_string()
            .contains(zapspec_earley::family::FAMILY_PREFIX),
        "{fused}"
    );
    let plain = engine
        .compile(
            &g,
            EngineConfig {
                fuse_families: false,
                ..EngineConfig::default()
            },
        )
        .unwrap();
    assert_eq!(cg.matcher().mask(), plain.matcher().mask());
    let mut det = String::from("root ::= \"x\" q0\n");
    for i in 0..n {
        det.push_str(&format!(
            "q{i} ::= \"a\" q{} | \"b\" q{i} | \"y\"\n",
            (i + 1) % n
        ));
    }
    let g = Grammar::from_gbnf(&det).unwrap();
    assert_eq!(fuse_with(&g, usize::MAX, &[], true).families.len(), 1);
    let cg = engine.compile(&g, EngineConfig::default()).unwrap();
    assert!(cg
        .fused_grammar()
        .unwrap()
        .to_string()
        .contains(zapspec_earley::family::FAMILY_PREFIX));
}

/// A vocabulary with escape-like tokens: `\` starts two different letters
/// (`\a`, `\b`) of the acyclic automata below, as JSON escapes do.
fn letter_vocab() -> Arc<TokenVocab> {
    let toks = [
        "a", "b", "c", "ab", "ba", "abc", "cc", "\\", "\\a", "\\b", "a\\", "\\a\\b", "\"", "a\"",
        "\"y", "ab\"", "é", "aé", "",
    ];
    let v: Vec<Vec<u8>> = toks.iter().map(|s| s.as_bytes().to_vec()).collect();
    Arc::new(TokenVocab::from_tokens("letters", v, &[], 18).unwrap())
}

/// An acyclic automaton over letters written state by state (a string's
/// pattern times its length bounds, or a trie of excluded keys, as
/// `zapspec-jsonschema` writes them): member `i`'s rules read one letter
/// and go to a later member, or read the closing `"`.
#[derive(Clone, Debug)]
struct Dag {
    /// Per member: (letter index, step ahead ≥ 1), and whether it may end.
    members: Vec<(Vec<(usize, usize)>, bool)>,
}

/// The letters: single bytes, a class, two escapes sharing their first
/// byte (prefix-disjoint, so still deterministic), and a class
/// overlapping `a` (nondeterministic).
const LETTERS: [&str; 6] = ["\"a\"", "\"c\"", "[bé]", "\"\\\\a\"", "\"\\\\b\"", "[ab]"];

impl Dag {
    fn grammar(&self) -> Grammar {
        let n = self.members.len();
        let mut text = String::from("root ::= \"\\\"\" q0 \"y\"\n");
        for (i, (edges, ends)) in self.members.iter().enumerate() {
            let mut alts: Vec<String> = edges
                .iter()
                .filter(|&&(_, step)| i + step < n)
                .map(|&(l, step)| format!("{} q{}", LETTERS[l], i + step))
                .collect();
            if *ends || alts.is_empty() {
                alts.push("\"\\\"\"".to_string());
            }
            text.push_str(&format!("q{i} ::= {}\n", alts.join(" | ")));
        }
        Grammar::from_gbnf(&text).unwrap()
    }
}

fn dag() -> impl Strategy<Value = Dag> {
    (16usize..40, any::<bool>())
        .prop_flat_map(|(n, overlapping)| {
            let letters: usize = if overlapping { 6 } else { 5 };
            prop::collection::vec(
                (
                    prop::collection::vec((0..letters, 1usize..4), 1..3),
                    prop::bool::weighted(0.3),
                ),
                n,
            )
        })
        .prop_map(|members| {
            // two rules of a member never read the same letter
            let members = members
                .into_iter()
                .map(|(mut edges, ends)| {
                    edges.sort();
                    edges.dedup_by_key(|e| e.0);
                    (edges, ends)
                })
                .collect();
            Dag { members }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Acyclic letter automata of 16 or more members become one family
    /// terminal (its fused letter states read back as members), and the
    /// masks equal brute force and the masks with families off.
    #[test]
    fn acyclic_letter_automata_match_brute_force(d in dag(), picks in prop::collection::vec(0usize..64, 0..12)) {
        let g = d.grammar();
        let vocab = letter_vocab();
        let rec = Recognizer::new(&g).unwrap();
        let engine = Engine::new(vocab.clone());
        let dflt = EngineConfig::default();
        let cg = engine.compile(&g, dflt).unwrap();
        let plain = engine.compile(&g, EngineConfig { fuse_families: false, ..dflt }).unwrap();
        let mut ms = [cg.matcher(), plain.matcher()];
        let r = walk_against_brute_force(&mut ms, &rec, &vocab, &g, picks.len(), random_pick(&vocab, &picks));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// The generator's automata do become families often (otherwise the
/// property above would test the rules only); the others reach fewer than
/// `MIN_ACYCLIC_MEMBERS` members from their entry (steps skip members).
#[test]
fn acyclic_letter_automata_are_families() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut with, mut total) = (0, 0);
    for _ in 0..100 {
        let g = dag().new_tree(&mut runner).unwrap().current().grammar();
        total += 1;
        let f = fuse_with(&g, zapspec_earley::fuse::MAX_FUSED_WEIGHT, &[], true);
        if !f.families.is_empty() {
            with += 1;
        }
    }
    eprintln!("{with}/{total} acyclic automata are families");
    assert!(with >= 40, "{with}/{total}");
}

/// A string of 3 to 40 characters containing a letter, written state by
/// state (the product of the pattern's automaton and the length counter,
/// as the JSON Schema compiler writes `pattern` with `minLength` /
/// `maxLength`): one family terminal although its two letter classes share
/// the escape byte, and masks equal to brute force and to the rules'.
#[test]
fn pattern_times_length_is_one_lazy_terminal() {
    let n = 40;
    // state (k, seen): k characters read, a letter seen or not
    let other = r#"( [c"] | "\\" [b] )"#; // `c`, or the escape `\b`
    let letter = r#"( [a] | "\\" [a] )"#; // `a`, or the escape `\a`
    let mut text = String::from("root ::= \"\\\"\" u0\n");
    for k in 0..n {
        let end = if k >= 3 { "\"\\\"\" | " } else { "" };
        text.push_str(&format!(
            "u{k} ::= {other} u{} | {letter} s{}\n",
            k + 1,
            k + 1
        ));
        text.push_str(&format!(
            "s{k} ::= {end}{other} s{} | {letter} s{}\n",
            k + 1,
            k + 1
        ));
    }
    text.push_str(&format!("u{n} ::= \"x\"\ns{n} ::= \"\\\"\"\n"));
    let g = Grammar::from_gbnf(&text).unwrap();
    let vocab = letter_vocab();
    let engine = Engine::new(vocab.clone());
    let cg = engine.compile(&g, EngineConfig::default()).unwrap();
    let fused = cg.fused_grammar().expect("fusion on").to_string();
    assert!(
        fused.contains(zapspec_earley::family::FAMILY_PREFIX),
        "{fused}"
    );
    assert!(fused.lines().count() <= 2, "{fused}");
    let plain = engine
        .compile(
            &g,
            EngineConfig {
                fuse_families: false,
                ..EngineConfig::default()
            },
        )
        .unwrap();
    let rec = Recognizer::new(&g).unwrap();
    let mut ms = [cg.matcher(), plain.matcher()];
    let path = ["\"", "c", "\\b", "a", "\\a", "c", "a\""];
    let prefix = walk_against_brute_force(
        &mut ms,
        &rec,
        &vocab,
        &g,
        path.len(),
        spelled(&vocab, &path),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let m = &ms[0];
    assert!(m.is_accepting() == rec.recognizes(&prefix));
}

/// A large `enum` (a nonterminal whose rules are single literals) is fused
/// into one terminal however long its text (`fuse::MAX_LITERAL_SET_REGEX`):
/// left as rules, its 2,000 literals were 2,000 items of one Earley set,
/// each stepped on every byte of every token a mask tries. Masks equal
/// brute force along a path, and the unfused rules' masks.
#[test]
fn large_literal_sets_are_one_terminal() {
    let mut text = String::from("root ::= \"\\\"\" e \"y\"\ne ::= ");
    let lits: Vec<String> = (0..2000)
        .map(|i| {
            format!(
                "\"{}\\\"\"",
                format!("{i:04}").replace('0', "a").replace('1', "b")
            )
        })
        .collect();
    text.push_str(&lits.join(" | "));
    text.push('\n');
    let g = Grammar::from_gbnf(&text).unwrap();
    let f = zapspec_earley::fuse::fuse(&g);
    assert!(
        f.rules.len() < 10,
        "the enum stayed {} rules",
        f.rules.len()
    );
    let toks = [
        "a", "b", "2", "3", "ab", "ba", "aa", "bb", "a2", "\"", "a\"", "\"y", "y", "22", "",
    ];
    let v: Vec<Vec<u8>> = toks.iter().map(|s| s.as_bytes().to_vec()).collect();
    let vocab = Arc::new(TokenVocab::from_tokens("enum", v, &[], 14).unwrap());
    let engine = Engine::new(vocab.clone());
    let cg = engine.compile(&g, EngineConfig::default()).unwrap();
    let plain = engine
        .compile(
            &g,
            EngineConfig {
                fuse_terminals: false,
                ..EngineConfig::default()
            },
        )
        .unwrap();
    let rec = Recognizer::new(&g).unwrap();
    let mut ms = [cg.matcher(), plain.matcher()];
    let path = ["\"", "a2", "b", "3", "\"", "y"];
    let prefix = walk_against_brute_force(
        &mut ms,
        &rec,
        &vocab,
        &g,
        path.len(),
        spelled(&vocab, &path),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let m = &ms[0];
    assert!(m.is_accepting() && rec.recognizes(&prefix));
}
