//! The counted construction (`zapspec_earley::counted`) against the
//! general one (`regex-automata`'s NFA and DFA): the two automata are
//! equivalent — checked exactly, by exploring their product over all 256
//! bytes — on random regexes `P X{m,n} S`; and states that share a
//! context-independent representative classify every token of at most the
//! horizon's length alike (a naive per-token classification).

use std::collections::{HashSet, VecDeque};

use proptest::prelude::*;
use zapspec_earley::ByteDfa;

const DEAD: u32 = ByteDfa::DEAD;
use zapspec_grammar::RegexLimits;

/// Exact equivalence: same acceptance and same dead states on every byte
/// string (both DFAs keep only live states, so DEAD = no completion).
fn equivalent(a: &ByteDfa, b: &ByteDfa) -> Result<(), String> {
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([(a.start(), b.start(), Vec::<u8>::new())]);
    while let Some((p, q, path)) = queue.pop_front() {
        if !seen.insert((p, q)) {
            continue;
        }
        if (p == DEAD) != (q == DEAD) {
            return Err(format!("dead on one side after {path:?}"));
        }
        if p == DEAD {
            continue;
        }
        if a.is_accepting(p) != b.is_accepting(q) {
            return Err(format!("acceptance differs after {path:?}"));
        }
        for byte in 0..=255u8 {
            let (p2, q2) = (a.next(p, byte), b.next(q, byte));
            if !seen.contains(&(p2, q2)) {
                let mut path2 = path.clone();
                path2.push(byte);
                queue.push_back((p2, q2, path2));
            }
        }
    }
    Ok(())
}

const JSON_CHAR: &str = r#"(?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})"#;

fn unit() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(JSON_CHAR.to_string()),
        Just("[a-c]".to_string()),
        Just("(?:ab|c)".to_string()),
        Just("(?:é|x)".to_string()),
        // not prefix-free: general construction
        Just("(?:a|ab)".to_string()),
        // matches empty: general construction
        Just("a?".to_string()),
    ]
}

fn tail() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"".to_string()),
        Just(String::new()),
        Just("(?:\"|;[0-9]*)".to_string()),
        // overlaps the unit's first bytes: general construction
        Just("a".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn counted_and_general_constructions_agree(
        prefix in prop_oneof![Just(String::new()), Just("\"".to_string()), Just("k=\"".to_string())],
        x in unit(),
        m in 0u32..24,
        extra in 0u32..24,
        s in tail(),
    ) {
        let n = (m + extra).max(16);
        let re = format!("{prefix}(?:{x}){{{m},{n}}}{s}");
        let limits = RegexLimits::default();
        let fast = ByteDfa::from_regex_with(&re, &limits).unwrap();
        let general = ByteDfa::from_regex_general(&re, &limits).unwrap();
        if let Err(e) = equivalent(&fast, &general) {
            return Err(TestCaseError::fail(format!("{re}: {e}")));
        }
    }
}

/// The shapes the counted construction is for do take it.
#[test]
fn json_strings_take_the_counted_construction() {
    let limits = RegexLimits::default();
    for re in [
        format!("\"{JSON_CHAR}{{0,255}}\""),
        format!("\"{JSON_CHAR}{{1,4096}}\""),
        format!("\"{JSON_CHAR}{{16}}\""),
    ] {
        let d = ByteDfa::from_regex_with(&re, &limits).unwrap();
        assert!(d.is_counted(), "{re}");
    }
    // too few repetitions, a unit that is not prefix-free, an overlapping
    // tail: the general construction
    for re in ["\"a{0,8}\"", "(?:a|ab){0,40}", "a{0,40}a"] {
        assert!(!ByteDfa::from_regex_with(re, &limits).unwrap().is_counted());
    }
    // states are computed, not stored: any count the state ids can number
    // builds at once, past `dfa_states` and the expansion's NFA bound
    for n in [20_000, 1_000_000] {
        let t = std::time::Instant::now();
        let d = ByteDfa::from_regex_with(&format!("\"{JSON_CHAR}{{0,{n}}}\""), &limits).unwrap();
        assert!(d.is_counted());
        assert!(t.elapsed().as_secs_f64() < 1.0);
    }
    // past the id space (2^31): the general construction, whose NFA bound
    // refuses the expansion with a typed limit error, at once
    let t = std::time::Instant::now();
    let e =
        ByteDfa::from_regex_with(&format!("\"{JSON_CHAR}{{0,200000000}}\""), &limits).unwrap_err();
    assert!(e.to_string().contains("nfa_bytes"), "{e}");
    assert!(t.elapsed().as_secs_f64() < 1.0);
}

/// The live states reachable from the start (ids of a counted automaton
/// have gaps: `ByteDfa::state_id_bound`).
fn reachable(d: &ByteDfa) -> HashSet<u32> {
    let mut seen = HashSet::from([d.start()]);
    let mut queue = VecDeque::from([d.start()]);
    while let Some(s) = queue.pop_front() {
        for b in 0..=255u8 {
            let t = d.next(s, b);
            if t != DEAD && seen.insert(t) {
                queue.push_back(t);
            }
        }
    }
    seen.remove(&DEAD);
    seen
}

/// Naive classification of `token` from `s`: allowed (live after all its
/// bytes) and the split points where the DFA accepts inside it.
fn classify(d: &ByteDfa, s: u32, token: &[u8]) -> (bool, Vec<usize>) {
    let mut st = s;
    let mut splits = Vec::new();
    for (i, &b) in token.iter().enumerate() {
        st = d.next(st, b);
        if st == DEAD {
            return (false, splits);
        }
        if i + 1 < token.len() && d.is_accepting(st) {
            splits.push(i + 1);
        }
    }
    (true, splits)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn shared_representatives_classify_tokens_alike(
        m in 0u32..40,
        extra in 0u32..60,
        horizon in 1usize..12,
        tokens in prop::collection::vec(
            prop::collection::vec(prop_oneof![Just(b'a'), Just(b'"'), Just(b'\\'), Just(b'u'), Just(b'0'), Just(0xC3u8), Just(0xA9u8)], 1..12),
            1..40),
    ) {
        let n = (m + extra).max(16);
        let re = format!("\"{JSON_CHAR}{{{m},{n}}}\"");
        let d = ByteDfa::from_regex_with(&re, &RegexLimits::default()).unwrap();
        prop_assert!(d.is_counted());
        let tokens: Vec<_> = tokens.into_iter().filter(|t| t.len() <= horizon).collect();
        let states = reachable(&d);
        prop_assert!(states.len() < d.num_states());
        for &s in &states {
            let r = d.ci_representative(s, horizon);
            if r == s {
                continue;
            }
            prop_assert!(r != DEAD && states.contains(&r));
            for t in &tokens {
                prop_assert_eq!(classify(&d, s, t), classify(&d, r, t), "state {} vs {} on {:?}", s, r, t);
            }
        }
    }
}

/// The cache slots of a counted automaton are compact and one-to-one on
/// representatives: every reachable state of `"X{3,5000}"` maps, through
/// its representative for tokens of at most 40 bytes, to a slot below
/// about `2·41` counts' worth of rows, and two different representatives
/// never share a slot (they would share a cache entry).
#[test]
fn counted_cache_slots_are_compact_and_one_to_one() {
    let d = ByteDfa::from_regex(&format!("\"{JSON_CHAR}{{3,5000}}\"")).unwrap();
    assert!(d.is_counted());
    let h = 40;
    let mut by_slot: std::collections::HashMap<u32, u32> = Default::default();
    let mut max_slot = 0;
    for s in reachable(&d) {
        let rep = d.ci_representative(s, h);
        let slot = d.ci_slot(rep, h);
        max_slot = max_slot.max(slot);
        if let Some(&other) = by_slot.get(&slot) {
            assert_eq!(
                other, rep,
                "slot {slot} shared by representatives {other} and {rep}"
            );
        }
        by_slot.insert(slot, rep);
    }
    assert!(by_slot.len() > 2 * h, "{}", by_slot.len());
    assert!(max_slot < 2_000, "{max_slot}");
}
