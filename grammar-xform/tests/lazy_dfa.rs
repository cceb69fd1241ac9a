//! [`TerminalDfa::lazy_regex`] (states built on first use, module
//! `zapspec_grammar::lazy`) against the eager determinisation of the same
//! regex, the independent reference here: on random regexes and random
//! byte strings, both agree on every prefix — dead or not, accepting or
//! not, able to continue or not. Also: a lazy automaton over its state
//! bound says so.

use proptest::prelude::*;
use zapspec_grammar::{RegexLimits, TerminalDfa};

/// Random regexes over `a`, `b`, a multi-byte character and classes
/// (including negated ones, which span all of Unicode).
fn regex() -> impl Strategy<Value = String> {
    let atom = prop::sample::select(vec![
        "a", "b", "é", "[ab]", "[^a]", ".", "[a-c]", "\\d", "[a&&b]", "",
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
            inner.prop_map(|r| format!("(?:{r})+")),
        ]
    })
}

/// Random inputs: bytes of the regexes' alphabet, other ASCII, UTF-8 lead
/// and continuation bytes.
fn input() -> impl Strategy<Value = Vec<u8>> {
    let bytes = "abé0z".as_bytes().to_vec();
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(bytes),
            Just(0xC3u8),
            Just(0xA9u8),
            any::<u8>()
        ],
        0..10,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]
    #[test]
    fn lazy_equals_eager(re in regex(), inputs in prop::collection::vec(input(), 1..6)) {
        let limits = RegexLimits::default();
        let eager = match TerminalDfa::regex_with(&re, &limits) {
            Ok(d) => d,
            Err(zapspec_grammar::GrammarError::LimitExceeded { .. }) => return Ok(()),
            Err(e) => panic!("{re:?}: {e}"),
        };
        let lazy = TerminalDfa::lazy_regex(&re, &limits).expect("the eager one compiled");
        prop_assert!(lazy.is_lazy());
        for bytes in &inputs {
            let (mut e, mut l) = (eager.start(), lazy.start());
            for i in 0..=bytes.len() {
                prop_assert_eq!(e == TerminalDfa::DEAD, l == TerminalDfa::DEAD, "{:?} on {:?}[..{}]", re, bytes, i);
                prop_assert_eq!(eager.is_accepting(e), lazy.is_accepting(l), "{:?} on {:?}[..{}]", re, bytes, i);
                prop_assert_eq!(eager.can_continue(e), lazy.can_continue(l), "{:?} on {:?}[..{}]", re, bytes, i);
                if let Some(&b) = bytes.get(i) {
                    e = eager.next(e, b);
                    l = lazy.next(l, b);
                }
            }
            prop_assert_eq!(eager.matches(bytes), lazy.matches(bytes));
        }
        prop_assert!(!lazy.overflowed());
    }
}

#[test]
fn over_the_state_bound_is_reported() {
    // (a|b)*a(a|b){6}: 2^7 states once determinised
    let limits = RegexLimits {
        dfa_states: 20,
        ..RegexLimits::default()
    };
    let d = TerminalDfa::lazy_regex("(?:a|b)*a(?:a|b){6}", &limits).unwrap();
    assert!(!d.overflowed(), "nothing built past the start yet");
    let mut hit = false;
    for k in 0..256u32 {
        let s: Vec<u8> = (0..8)
            .map(|i| if k >> i & 1 == 1 { b'a' } else { b'b' })
            .collect();
        hit |= d.matches(&s);
    }
    assert!(
        d.overflowed(),
        "walking every string of length 8 needs more than 20 states"
    );
    assert!(d.num_states() <= 21);
    // the eager construction refuses it at once
    assert!(TerminalDfa::regex_with("(?:a|b)*a(?:a|b){6}", &limits).is_err());
    let _ = hit;
}

#[test]
fn look_around_is_built_eagerly() {
    let d = TerminalDfa::lazy_regex("a$", &RegexLimits::default()).unwrap();
    assert!(!d.is_lazy());
    assert!(d.matches(b"a"));
}
