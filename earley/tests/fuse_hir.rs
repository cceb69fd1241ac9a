//! Fused terminals compile from a HIR that fusion builds out of its parts'
//! HIRs (module `fuse`), not from a parse of the regex text it prints. The
//! two must denote the same language: checked here against the parse of
//! the text, by a walk of the product of the two automata (every reachable
//! state pair dead in both or neither, accepting in both or neither), on
//! random grammars and on the grammars of MaskBench's JSON Schemas.

use std::path::PathBuf;

use proptest::prelude::*;
use zapspec_earley::fuse::{fuse_with, MAX_FUSED_WEIGHT};
use zapspec_earley::ByteDfa;
use zapspec_grammar::{CharClass, Grammar, NtId, RegexLimits, Symbol, Terminal};

mod common;
use common::{equivalent, equivalent_within};

#[derive(Clone, Debug)]
enum S {
    Nt(u32),
    Lit(&'static str),
    Class,
    Re(&'static str),
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
                S::Class => Symbol::T(Terminal::Class(CharClass::new(
                    [('a', 'b'), ('é', 'ü'), ('α', 'ω')],
                    false,
                ))),
                S::Re(r) => Symbol::T(Terminal::Regex(r.to_string())),
            })
            .collect();
        g.add_rule(NtId(*lhs % nts as u32), rhs);
    }
    g.start = NtId(0);
    g
}

fn sym() -> impl Strategy<Value = S> {
    prop_oneof![
        3 => (0u32..5).prop_map(S::Nt),
        3 => prop::sample::select(vec!["a", "b", "\"", "ab", "\u{e9}x", "\\"]).prop_map(S::Lit),
        1 => Just(S::Class),
        1 => prop::sample::select(vec!["a*", "b+c?", "(ab)+", "[^a]", "x{2,4}", "."]).prop_map(S::Re),
    ]
}

/// Random grammars; runs of one symbol (`X X X`, fused as `(?:X){3}`),
/// self references first or last (left- and right-linear rules) and
/// common last symbols all occur.
fn grammar() -> impl Strategy<Value = Grammar> {
    (
        1usize..5,
        prop::collection::vec(
            (
                0u32..5,
                prop::collection::vec(sym(), 0..4),
                prop::option::of((sym(), 2usize..4)),
            ),
            1..10,
        ),
    )
        .prop_map(|(n, rules)| {
            let rules: Vec<(u32, Vec<S>)> = rules
                .into_iter()
                .map(|(lhs, mut rhs, run)| {
                    if let Some((s, k)) = run {
                        rhs.extend(std::iter::repeat_n(s, k));
                    }
                    (lhs, rhs)
                })
                .collect();
            build(n, &rules)
        })
}

/// The automaton of a fused terminal's HIR and of the parse of its text.
fn both(text: &str, hir: &regex_syntax::hir::Hir) -> (ByteDfa, ByteDfa) {
    let limits = RegexLimits::default();
    let from_hir = ByteDfa::from_parsed(hir, text, &limits, true).expect("HIR compiles");
    let from_text = ByteDfa::from_regex_with(text, &limits).expect("text compiles");
    (from_hir, from_text)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn fused_hir_denotes_the_printed_regex(g in grammar()) {
        let f = fuse_with(&g, usize::MAX, &[], false);
        // every fused regex has its HIR, of the printed language
        for text in f.terminal.iter().flatten() {
            let hir = f.hir(&g, text);
            prop_assert!(hir.is_some(), "{} has no HIR", text);
            let (a, b) = both(text, &hir.unwrap());
            if let Err(e) = equivalent(&a, &b) {
                return Err(TestCaseError::fail(format!("{text}: {e}\n{g}")));
            }
        }
        prop_assert!(f.hir(&g, "not fused").is_none());
    }
}

/// Each construction of `fuse` (alternation, a run, right- and
/// left-linear recursion, a common suffix, a literal set) fuses, with a
/// HIR of the printed language.
#[test]
fn each_fusion_shape_has_its_hir() {
    use S::*;
    let g = build(
        6,
        &[
            (0, vec![Nt(1), Nt(2), Nt(3), Nt(4), Nt(5)]),
            // right-linear: n1 → "a" n1 | "b"
            (1, vec![Lit("a"), Nt(1)]),
            (1, vec![Lit("b")]),
            // left-linear: n2 → n2 "a" | Class
            (2, vec![Nt(2), Lit("a")]),
            (2, vec![Class]),
            // a run and a common suffix: n3 → "x" "x" "x" ";" | Re ";"
            (3, vec![Lit("x"), Lit("x"), Lit("x"), Lit(";")]),
            (3, vec![Re("b+c?"), Lit(";")]),
            // a literal set
            (4, vec![Lit("red")]),
            (4, vec![Lit("green")]),
            (4, vec![Lit("blue")]),
            // a regex terminal the grammar holds no HIR for, and a fail
            (5, vec![Re("[a&&b]")]),
            (5, vec![Re("x{2,4}")]),
        ],
    );
    let f = fuse_with(&g, usize::MAX, &[], false);
    // the start is fused whole; its parts are fused too
    assert!(f.terminal.iter().all(|t| t.is_some()), "{:?}", f.terminal);
    for text in f.terminal.iter().flatten() {
        let hir = f.hir(&g, text).expect("a HIR");
        let (a, b) = both(text, &hir);
        equivalent(&a, &b).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
}

fn maskbench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/maskbench")
}

/// Every fused terminal of every 10th MaskBench schema's grammar: its HIR
/// and its text's parse agree on the first 20,000 state pairs of the
/// product walk (most terminals are walked to the end). Skips with a
/// message when the data is absent.
#[test]
fn maskbench_fused_hirs_denote_their_text() {
    let dir = maskbench_dir();
    if !dir.is_dir() {
        println!(
            "maskbench_fused_hirs_denote_their_text: SKIPPED, data directory {} is absent",
            dir.display()
        );
        return;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read data dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let opts = zapspec_jsonschema::JsonSchemaOptions::default();
    let (mut grammars, mut terminals, mut complete) = (0, 0, 0);
    for path in files.iter().step_by(10) {
        let Some(file) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        else {
            continue;
        };
        let Ok(g) = zapspec_jsonschema::compile_json_schema(&file["schema"], &opts) else {
            continue;
        };
        grammars += 1;
        let f = fuse_with(&g, MAX_FUSED_WEIGHT, &[], true);
        for text in f.terminal.iter().flatten() {
            if f.families.contains_key(text) {
                continue;
            }
            let hir = f.hir(&g, text).expect("a HIR");
            let limits = RegexLimits::default();
            let (Ok(a), Ok(b)) = (
                ByteDfa::from_parsed(&hir, text, &limits, true),
                ByteDfa::from_regex_with(text, &limits),
            ) else {
                // over a limit both ways: the engine refuses it and un-fuses
                continue;
            };
            terminals += 1;
            match equivalent_within(&a, &b, 20_000) {
                Ok(Some(_)) => complete += 1,
                Ok(None) => {}
                Err(e) => panic!("{}: {text}: {e}", path.display()),
            }
        }
    }
    println!("{grammars} grammars, {terminals} fused terminals, {complete} walked to the end");
    assert!(
        grammars > 500 && terminals > grammars,
        "{grammars} {terminals}"
    );
}
