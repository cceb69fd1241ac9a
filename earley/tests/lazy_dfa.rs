//! The lazy terminal automaton (states built on first use, liveness from
//! the NFA) against the eager one (`regex-automata`'s dense DFA, pruned to
//! live states): on random regexes without look-around, the two accept the
//! same bytes and die on the same prefixes. Checked exactly, by a
//! breadth-first walk of the product automaton over all 256 bytes: in
//! every reachable pair both states are dead or neither, and they agree on
//! accepting and on "some byte continues".

use proptest::prelude::*;
use zapspec_earley::ByteDfa;

const DEAD: u32 = ByteDfa::DEAD;
use zapspec_grammar::RegexLimits;

mod common;
use common::equivalent;

/// Random regexes over a few bytes and classes (multi-byte UTF-8 among
/// them), with alternation, repetition and counted repetition.
fn regex() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("ab".to_string()),
        Just("[a-c]".to_string()),
        Just("[^a]".to_string()),
        Just("é".to_string()),
        Just("[α-ω]".to_string()),
        Just(".".to_string()),
        Just(r"\\".to_string()),
        Just("(?:)".to_string()),
        Just("[a&&b]".to_string()),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(x, y)| format!("(?:{x}{y})")),
            (inner.clone(), inner.clone()).prop_map(|(x, y)| format!("(?:{x}|{y})")),
            inner.clone().prop_map(|x| format!("(?:{x})*")),
            inner.clone().prop_map(|x| format!("(?:{x})+")),
            inner.clone().prop_map(|x| format!("(?:{x})?")),
            (inner, 0u32..4, 0u32..6).prop_map(|(x, m, k)| format!("(?:{x}){{{m},{}}}", m + k)),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn lazy_equals_eager(re in regex()) {
        let limits = RegexLimits::default();
        let lazy = ByteDfa::from_regex_with(&re, &limits).unwrap();
        let eager = ByteDfa::from_regex_general(&re, &limits).unwrap();
        prop_assert!(!eager.is_lazy());
        if let Err(e) = equivalent(&lazy, &eager) {
            return Err(TestCaseError::fail(format!("{re}: {e}")));
        }
        // built on demand: the walk above built every reachable state
        prop_assert!(!lazy.overflowed());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// What compilation reads off a deferred terminal's HIR (its start
    /// state, whether it is nullable) is what the automaton built later
    /// has.
    #[test]
    fn deferred_facts_are_the_built_automatons(re in regex()) {
        let limits = RegexLimits::default();
        let hir = regex_syntax::ParserBuilder::new().utf8(false).build().parse(&re).unwrap();
        let built = ByteDfa::from_regex_general(&re, &limits).unwrap();
        if let Some(f) = ByteDfa::deferrable(&hir, &limits, true) {
            prop_assert_eq!(f.start == DEAD, built.start() == DEAD, "{}", re);
            prop_assert_eq!(f.nullable, built.is_nullable(), "{}", re);
            let lazy = ByteDfa::from_regex_with(&re, &limits).unwrap();
            prop_assert_eq!(f.start, lazy.start(), "{}", re);
        }
    }
}

#[test]
fn lazy_is_picked_without_look_around_and_not_with_it() {
    let limits = RegexLimits::default();
    let lazy = ByteDfa::from_regex_with("(?:https?|ftp)://[^ ]+", &limits).unwrap();
    assert!(lazy.is_lazy());
    // only the start state and DEAD exist before anything is read
    assert!(lazy.num_states() <= 2, "{}", lazy.num_states());
    let s = lazy.run(lazy.start(), b"http://x");
    assert!(s != DEAD && lazy.is_accepting(s));
    assert!(lazy.num_states() > 2);
    let look = ByteDfa::from_regex_with(r"(?-u:a\b)", &limits).unwrap();
    assert!(!look.is_lazy());
}

#[test]
fn a_state_past_the_bound_is_refused_and_flagged() {
    let limits = RegexLimits {
        dfa_states: 50,
        ..RegexLimits::default()
    };
    let d = ByteDfa::from_regex_with("(?:a|b)*a(?:a|b){12}", &limits).unwrap();
    assert!(d.is_lazy());
    let mut s = d.start();
    let mut x = 12345u32;
    for _ in 0..200 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        s = d.next(s, if x >> 16 & 1 == 0 { b'a' } else { b'b' });
        if s == DEAD {
            break;
        }
    }
    assert!(d.overflowed());
    assert!(d.num_states() <= 51);
    // a language the bound never touches stays exact
    let small = ByteDfa::from_regex_with("[a-z]{3}", &limits).unwrap();
    assert_eq!(
        equivalent(
            &small,
            &ByteDfa::from_regex_general("[a-z]{3}", &limits).unwrap()
        )
        .map(|_| ()),
        Ok(())
    );
    assert!(!small.overflowed());
}
