//! Hostile inputs to the GBNF parser and the terminal
//! automata (the JSON Schema ones are in `zapspec-jsonschema`'s
//! `tests/hostile.rs`): every one ends quickly in a typed error that
//! names the limit and the place, or in success — never an out-of-memory
//! kill, a stack overflow or minutes of work.
//!
//! The time bound asserted is generous ([`MAX_SECS`]; each input takes
//! well under a second in the test profile on an idle machine) because CI
//! machines are noisy. Each test prints its time and the process's peak
//! resident memory (`VmHWM`); run one alone for a per-input figure:
//! `cargo test -p zapspec-grammar --test hostile -- --exact NAME --nocapture`.

use zapspec_grammar::{
    parse_gbnf, simplify, Grammar, GrammarError, Limit, Recognizer, SimplifyConfig, Terminal,
    TerminalDfa,
};
use zapspec_testkit::hostile::timed;

/// GBNF text → simplified grammar → terminal automata (the reference
/// recognizer compiles every terminal, as a parser does).
fn gbnf_pipeline(src: &str) -> Result<Grammar, GrammarError> {
    let g = parse_gbnf(src)?.grammar;
    let g = simplify(&g, &SimplifyConfig::default())?.grammar;
    Recognizer::new(&g)?;
    Ok(g)
}

fn assert_limit(e: &GrammarError, want: &[Limit], place_has: &str) {
    match e {
        GrammarError::LimitExceeded { limit, place, .. } => {
            assert!(want.contains(limit), "limit {limit} not in {want:?}: {e}");
            assert!(
                place.contains(place_has),
                "place {place:?} lacks {place_has:?}"
            );
            assert!(!e.to_string().contains(" 0:0"), "{e}");
        }
        other => panic!("expected a limit error, got {other:?}"),
    }
}

#[test]
fn nested_counted_repetition_terminal() {
    let e = timed("a{1000}{1000}{1000} as a terminal", || {
        TerminalDfa::regex("a{1000}{1000}{1000}").unwrap_err()
    });
    assert_limit(&e, &[Limit::NfaBytes], "a{1000}");
    let e = timed("a{1000}{1000}{1000} in GBNF", || {
        gbnf_pipeline("root ::= \"x\" word\nword ::= /a{1000}{1000}{1000}/\n").unwrap_err()
    });
    // (simplification may inline `word` into `root`)
    assert_limit(&e, &[Limit::NfaBytes], "rule `");
}

#[test]
fn repetition_operator_chains() {
    // `.` (every UTF-8 scalar value) under long chains of repetition and
    // alternation operators.
    let mut inputs = vec![
        format!(".{}", "+".repeat(300)),
        format!(".{}", "*".repeat(300)),
        format!("(?:.{}.)", "|".repeat(400)),
        format!("{}.", "|".repeat(400)),
        format!("(?:.+)+{}", "|.".repeat(150)),
        format!(".{}", "{2}".repeat(60)),
    ];
    inputs.push(format!("(?:(?:.|){})", "*".repeat(100)));
    for re in &inputs {
        let r = timed(&format!("/{}…/", &re[..re.len().min(12)]), || {
            TerminalDfa::regex(re)
        });
        match r {
            Ok(_) | Err(GrammarError::Regex { .. }) | Err(GrammarError::LimitExceeded { .. }) => {}
            Err(e) => panic!("{e:?}"),
        }
    }
}

#[test]
fn exponential_dfa_terminal() {
    // The classic exponential DFA: 2^26 states.
    let r = timed("(a|b)*a(a|b){25}", || {
        TerminalDfa::compile(&Terminal::Regex("(a|b)*a(a|b){25}".into()))
    });
    let e = r.unwrap_err();
    assert_limit(&e, &[Limit::DfaBytes, Limit::DfaStates], "(a|b)*a(a|b){25}");
    let e = timed("(a|b)*a(a|b){25} in GBNF", || {
        gbnf_pipeline("root ::= item+\nitem ::= /(a|b)*a(a|b){25}/ \";\"\n").unwrap_err()
    });
    assert_limit(&e, &[Limit::DfaBytes, Limit::DfaStates], "rule `");
}

#[test]
fn gbnf_deep_groups() {
    let src = format!("root ::= {}\"a\"{}\n", "(".repeat(5000), ")".repeat(5000));
    let e = timed("5,000 nested groups", || gbnf_pipeline(&src).unwrap_err());
    assert!(matches!(e, GrammarError::TooDeep { line: 1, .. }), "{e:?}");
}

#[test]
fn gbnf_counts() {
    for (src, ok) in [
        ("root ::= \"a\"{-1}", false),
        ("root ::= \"a\"{1.5}", false),
        ("root ::= \"a\"{99999999999999999999}", false),
        ("root ::= \"a\"{3,1}", false),
        ("root ::= (\"a\"{10000}){10000}", true),
        ("root ::= \"a\"{2,5}", true),
    ] {
        let r = timed(src, || gbnf_pipeline(src));
        assert_eq!(r.is_ok(), ok, "{src}: {r:?}");
    }
}

#[test]
fn gbnf_bytes_that_are_not_utf8() {
    // The parser reads text; the bytes of a file that is not UTF-8 are
    // refused by the caller's decoding, never by a panic.
    let bytes: Vec<u8> = [&b"root ::= \""[..], &[0xff], b"\""].concat();
    assert!(std::str::from_utf8(&bytes).is_err());
    // Escapes can still denote any byte.
    let g = gbnf_pipeline("root ::= \"\\xff\\xfe\" [^a]\n").unwrap();
    assert!(g.num_nonterminals() >= 1);
}

/// The `gbnf` fuzz target's timeout in CI (30 s under the sanitizer): a
/// look-around made `simplify` build the terminal's DFA to learn whether
/// it matches the empty string, and `(a|b)*a(a|B){2050}` determinises into
/// large NFA-state sets until the scratch bound stops it (1.1 s in
/// release, six builds before the answer was remembered per regex). The
/// text anchors are now decided on the syntax tree (`terminal_info`): `$`
/// followed by a byte never matches, so the language is empty, which
/// `simplify` reports at once without building the DFA.
#[test]
fn fuzz_gbnf_timeout_lookaround_counted_exponential() {
    let src = "root ::= /(at ::=(a|b)*a(a|B){2050}|b,)*a(a||b,)*$\u{11}\0\0}/\n";
    let g = Grammar::from_gbnf(src).unwrap();
    let t = std::time::Instant::now();
    let first = timed("simplify (first)", || {
        simplify(&g, &SimplifyConfig::default())
    });
    let once = t.elapsed();
    let again = timed("simplify (again, none)", || {
        simplify(&g, &SimplifyConfig::none())
    });
    let twice = t.elapsed() - once;
    assert!(
        matches!(first, Err(GrammarError::EmptyLanguage { .. })),
        "{first:?}"
    );
    assert!(once < std::time::Duration::from_millis(100), "{once:?}");
    let _ = again;
    assert!(
        twice < once / 2 + std::time::Duration::from_millis(50),
        "the second simplification rebuilt the DFA: {once:?} then {twice:?}"
    );
}
