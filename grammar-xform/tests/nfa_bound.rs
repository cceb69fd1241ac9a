//! `nfa_bytes_lower_bound` is a lower bound on what `regex-automata`'s
//! Thompson compiler counts against `nfa_size_limit`: building any regex
//! under a limit just below the bound fails. So refusing a regex whose
//! bound exceeds `RegexLimits::nfa_bytes`, before building it, never
//! refuses a regex the builder would have accepted.

use proptest::prelude::*;
use regex_automata::nfa::thompson;
use zapspec_grammar::nfa_bytes_lower_bound;

fn regex() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        "[a-c]{1,3}",
        Just(".".to_string()),
        Just("[^\"\\\\]".to_string()),
        Just("\\d".to_string()),
        Just("é".to_string()),
        Just("(?:)".to_string()),
        Just("\\b".to_string()),
        Just("^".to_string()),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| v.concat()),
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| format!("(?:{})", v.join("|"))),
            (inner.clone(), 0u32..40, 0u32..40, 0u8..4).prop_map(|(r, a, b, k)| {
                let (m, n) = (a.min(b), a.max(b));
                match k {
                    0 => format!("(?:{r}){{{m},{n}}}"),
                    1 => format!("(?:{r}){{{m}}}"),
                    2 => format!("(?:{r}){{{m},}}"),
                    _ => format!("(?:{r})*"),
                }
            }),
            inner.prop_map(|r| format!("({r})?")),
        ]
    })
}

/// The finished NFA's memory, or whether the build failed for its size.
fn build(re: &str, limit: usize, utf8: bool) -> Result<usize, bool> {
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(utf8)
        .build()
        .parse(re)
        .expect("generated regexes parse");
    thompson::Compiler::new()
        .configure(
            thompson::Config::new()
                .utf8(utf8)
                .which_captures(thompson::WhichCaptures::None)
                .nfa_size_limit(Some(limit)),
        )
        .build_from_hir(&hir)
        .map(|n| n.memory_usage())
        .map_err(|e| e.size_limit().is_some())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn the_bound_is_below_the_builders_count(re in regex(), utf8 in any::<bool>()) {
        let hir = regex_syntax::ParserBuilder::new().utf8(utf8).build().parse(&re).unwrap();
        let lb = nfa_bytes_lower_bound(&hir);
        prop_assume!(lb > 0);
        let below = usize::try_from(lb - 1).unwrap_or(usize::MAX);
        let r = build(&re, below, utf8);
        prop_assert!(
            r == Err(true),
            "{re}: bound {lb} bytes, but it builds under a limit of {below}: {r:?}"
        );
    }
}

/// Exponential expansions are refused without building: the bound is
/// astronomically above any limit.
#[test]
fn exponential_repetitions_are_bounded_at_once() {
    let re = format!(".{}", "{2}".repeat(60));
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(&re)
        .unwrap();
    assert!(nfa_bytes_lower_bound(&hir) >= 8u128 << 60);
    let t = std::time::Instant::now();
    let err = zapspec_grammar::TerminalDfa::regex(&re).unwrap_err();
    assert!(err.to_string().contains("nfa_bytes"), "{err}");
    assert!(t.elapsed().as_secs_f64() < 0.5, "{:?}", t.elapsed());
}
