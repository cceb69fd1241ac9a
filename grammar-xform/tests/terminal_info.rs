//! `terminal_info` answers from the regex's syntax tree where it is exact
//! and from the DFA otherwise; either way it must equal what the DFA says
//! (the independent reference: `TerminalDfa`'s start state is accepting /
//! can continue), on regexes with look-around assertions, empty classes
//! and empty repetitions — the cases a syntax-only answer can get wrong.

use proptest::prelude::*;
use zapspec_grammar::analysis::terminal_info;
use zapspec_grammar::{Terminal, TerminalDfa};

fn reference(re: &str) -> (bool, bool) {
    let d = TerminalDfa::regex(re).expect("reference DFA");
    (d.is_accepting(d.start()), d.can_continue(d.start()))
}

fn check(re: &str) {
    let info = terminal_info(&Terminal::Regex(re.to_string())).expect("terminal_info");
    assert_eq!(
        (info.matches_empty, info.matches_nonempty),
        reference(re),
        "regex {re:?}"
    );
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
        check(re);
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
            (inner.clone(), 4u32..40).prop_map(|(r, m)| format!("(?:{r}){{{m},}}")),
            inner.prop_map(|r| format!("(?:{r})+")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn equals_the_dfa(re in regex()) {
        check(&re);
    }
}
