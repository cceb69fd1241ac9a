//! `terminal_info` answers from the regex's syntax tree where it is exact
//! and from the DFA otherwise; either way it must equal what the DFA says
//! (the independent reference: `TerminalDfa`'s start state is accepting /
//! can continue), on regexes with look-around assertions, empty classes
//! and empty repetitions — the cases a syntax-only answer can get wrong.

use proptest::prelude::*;
use zapspec_grammar::analysis::terminal_info;
use zapspec_grammar::{Terminal, TerminalDfa};

/// The DFA's answer; `None` when the DFA is over its size limits (nested
/// counted repetitions), where there is no reference to compare with.
fn reference(re: &str) -> Option<(bool, bool)> {
    match TerminalDfa::regex(re) {
        Ok(d) => Some((d.is_accepting(d.start()), d.can_continue(d.start()))),
        Err(zapspec_grammar::GrammarError::LimitExceeded { .. }) => None,
        Err(e) => panic!("reference DFA for {re:?}: {e}"),
    }
}

/// Compares with the reference; false when there is none.
fn check(re: &str) -> bool {
    let Some(want) = reference(re) else {
        return false;
    };
    let info = terminal_info(&Terminal::Regex(re.to_string())).expect("terminal_info");
    assert_eq!(
        (info.matches_empty, info.matches_nonempty),
        want,
        "regex {re:?}"
    );
    true
}

#[test]
fn hand_picked_shapes() {
    for re in [
        "",
        "a",
        "a*",
        "a{0}",
        "[a&&b]",
        "[a&&b]*",
        "[a&&b]+",
        "[a&&b]|a",
        "a[a&&b]",
        "(?:[a&&b]){0}",
        "^",
        "$",
        "^$",
        "a$",
        "$a",
        "a^",
        "^a",
        "(?-u:\\b)",
        "(?-u:\\B)",
        "a(?-u:\\b)",
        "a(?-u:\\b)b",
        "a(?-u:\\B)b",
        "(?:a|$)b",
        "(?:$|a)*",
        "(?:a$)*",
        "(?:a$)+",
        "(?:$a)+b?",
        "(a|b)*a(?:$|b){3}",
        "(?m:^)a",
        "(?m:$)\\n",
        "a(?m:$)\\n",
        "\\n(?m:^)a",
        "(?:(?-u:\\b)|a)+",
        "x{2,}$",
        "(?:^a|b$){2}",
        "(?:^a|b$){3,}",
        "(?:$|a){1000}",
        "(?:a$|^b)+",
        "(at ::=(a|b)*a(a|B){20}|b,)*a(a||b,)*$\u{11}\0\0}",
    ] {
        assert!(check(re), "no reference DFA for {re:?}");
    }
}

/// Small regexes over atoms chosen to make look-arounds matter.
fn regex() -> impl Strategy<Value = String> {
    let atom = prop::sample::select(vec![
        "a",
        "b",
        " ",
        "\\n",
        "^",
        "$",
        "(?-u:\\b)",
        "(?-u:\\B)",
        "(?m:^)",
        "(?m:$)",
        "[a&&b]",
        "",
    ])
    .prop_map(str::to_string);
    atom.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| v.concat()),
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| format!("(?:{})", v.join("|"))),
            (inner.clone(), 0u32..4, 0u32..4).prop_map(|(r, a, b)| {
                let (lo, hi) = (a.min(b), a.max(b));
                format!("(?:{r}){{{lo},{hi}}}")
            }),
            inner.clone().prop_map(|r| format!("(?:{r})*")),
            (inner.clone(), 4u32..12).prop_map(|(r, m)| format!("(?:{r}){{{m},}}")),
            inner.prop_map(|r| format!("(?:{r})+")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn equals_the_dfa(re in regex()) {
        // nested counted repetitions can exceed the reference's limits
        prop_assume!(check(&re));
    }
}
