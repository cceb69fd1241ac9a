//! Free text that avoids a set of strings, as a right-linear system.
//!
//! [`avoiding`] adds a nonterminal whose language is every string (any
//! Unicode scalar values) that contains none of the given strings as a
//! substring: the automaton of the Aho–Corasick construction (a trie of
//! the strings with failure links, Aho & Corasick 1975), minus its
//! matching states, written as one rule `S → c T` per state and character
//! class and an ε-rule per state (the text may stop anywhere). This is
//! the free text of a structural tag — text until a trigger, a reasoning
//! section until its end string — and of any region that must not
//! contain a delimiter.
//!
//! Why rules and not a regex: regular-expression syntax has no complement,
//! and the complement of `.*(s₁|…|sₖ).*` written out as a regex by state
//! elimination can be exponentially long. A right-linear system is the
//! automaton itself, one nonterminal per state; the Earley engine
//! (`zapspec-earley`'s `family` module) compiles such a system into one
//! lazily determinised terminal, so a token of free text is classified by
//! its context-independent mask cache, not parsed byte by byte.
//!
//! Costs: one nonterminal per trie node (at most the total length of the
//! strings, plus one), and per node one rule per distinct successor state
//! plus its ε-rule. Classes are over characters, so the strings are
//! matched on characters (equivalently on UTF-8 bytes).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::ir::{CharClass, Grammar, NtId, Symbol, Terminal};

/// The regex of unrestricted text: any number of any characters.
pub const ANY_TEXT_REGEX: &str = "(?s:.)*";

struct Node {
    next: BTreeMap<char, usize>,
    fail: usize,
    /// Some string ends here (directly or through a failure link).
    out: bool,
}

/// Adds a nonterminal (named from `name`) matching every string that
/// contains none of `excluded` (empty strings are ignored; with none left
/// it is unrestricted text, one regex terminal) and returns it.
pub fn avoiding<S: AsRef<str>>(g: &mut Grammar, name: &str, excluded: &[S]) -> NtId {
    let pats: BTreeSet<Vec<char>> = excluded
        .iter()
        .map(|s| s.as_ref().chars().collect::<Vec<char>>())
        .filter(|p| !p.is_empty())
        .collect();
    let start = g.add_nonterminal(name);
    if pats.is_empty() {
        g.add_rule(
            start,
            vec![Symbol::T(Terminal::Regex(ANY_TEXT_REGEX.to_string()))],
        );
        return start;
    }
    // the trie
    let mut nodes = vec![Node {
        next: BTreeMap::new(),
        fail: 0,
        out: false,
    }];
    let mut alphabet = BTreeSet::new();
    for p in &pats {
        let mut s = 0;
        for &c in p {
            alphabet.insert(c);
            s = match nodes[s].next.get(&c) {
                Some(&t) => t,
                None => {
                    nodes.push(Node {
                        next: BTreeMap::new(),
                        fail: 0,
                        out: false,
                    });
                    let t = nodes.len() - 1;
                    nodes[s].next.insert(c, t);
                    t
                }
            };
        }
        nodes[s].out = true;
    }
    // failure links, breadth first
    let mut order = Vec::with_capacity(nodes.len());
    let mut queue: VecDeque<usize> = nodes[0].next.values().copied().collect();
    while let Some(s) = queue.pop_front() {
        order.push(s);
        let edges: Vec<(char, usize)> = nodes[s].next.iter().map(|(&c, &t)| (c, t)).collect();
        for (c, t) in edges {
            let mut f = nodes[s].fail;
            let fail = loop {
                if let Some(&u) = nodes[f].next.get(&c) {
                    break u;
                }
                if f == 0 {
                    break 0;
                }
                f = nodes[f].fail;
            };
            nodes[t].fail = fail;
            nodes[t].out |= nodes[fail].out;
            queue.push_back(t);
        }
    }
    let delta = |nodes: &[Node], mut s: usize, c: char| -> usize {
        loop {
            if let Some(&t) = nodes[s].next.get(&c) {
                return t;
            }
            if s == 0 {
                return 0;
            }
            s = nodes[s].fail;
        }
    };
    // one nonterminal per live state (the root is `start`)
    let mut nt = vec![None; nodes.len()];
    nt[0] = Some(start);
    for &s in &order {
        if !nodes[s].out {
            nt[s] = Some(g.add_nonterminal(&format!("{name}-s")));
        }
    }
    for s in std::iter::once(0).chain(order.iter().copied()) {
        let Some(from) = nt[s] else { continue };
        g.add_rule(from, Vec::new());
        // the alphabet's characters grouped by successor; a character
        // outside the alphabet always returns to the root
        let mut by_target: BTreeMap<usize, Vec<char>> = BTreeMap::new();
        let mut not_to_root = Vec::new();
        for &c in &alphabet {
            let t = delta(&nodes, s, c);
            if t != 0 {
                not_to_root.push(c);
                if !nodes[t].out {
                    by_target.entry(t).or_default().push(c);
                }
            }
        }
        let root_class = CharClass::new(not_to_root.iter().map(|&c| (c, c)), true);
        if !root_class.is_empty() {
            g.add_rule(
                from,
                vec![Symbol::T(Terminal::Class(root_class)), Symbol::Nt(start)],
            );
        }
        for (t, chars) in by_target {
            let class = CharClass::new(chars.iter().map(|&c| (c, c)), false);
            let to = nt[t].expect("a live state has a nonterminal");
            g.add_rule(
                from,
                vec![Symbol::T(Terminal::Class(class)), Symbol::Nt(to)],
            );
        }
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::Recognizer;
    use proptest::prelude::*;

    fn grammar(excluded: &[&str]) -> Grammar {
        let mut g = Grammar::new();
        g.start = avoiding(&mut g, "text", excluded);
        g
    }

    fn brute(s: &str, excluded: &[&str]) -> bool {
        excluded.iter().all(|e| e.is_empty() || !s.contains(e))
    }

    #[test]
    fn avoids_the_strings_and_nothing_else() {
        let ex = ["<tool_call>", "</think>", "ab"];
        let g = grammar(&ex);
        let r = Recognizer::new(&g).unwrap();
        for s in [
            "",
            "hello",
            "<tool_call",
            "<tool_call>",
            "x</think>",
            "</thin",
            "a b",
            "xab",
            "aab",
            "é</think",
            "<<tool_call>",
        ] {
            assert_eq!(r.recognizes(s.as_bytes()), brute(s, &ex), "{s:?}");
        }
    }

    #[test]
    fn no_strings_is_any_text() {
        let g = grammar(&[]);
        let r = Recognizer::new(&g).unwrap();
        assert!(r.recognizes("any ✓ text\n".as_bytes()));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Membership equals a substring check on random strings over a
        /// small alphabet (so that overlaps and failure links are hit).
        #[test]
        fn equals_brute_force(
            ex in proptest::collection::vec("[abé]{1,4}", 1..4),
            texts in proptest::collection::vec("[abéc]{0,8}", 1..24),
        ) {
            let ex: Vec<&str> = ex.iter().map(String::as_str).collect();
            let g = grammar(&ex);
            let r = Recognizer::new(&g).unwrap();
            for t in &texts {
                prop_assert_eq!(r.recognizes(t.as_bytes()), brute(t, &ex), "{:?} {:?}", t, ex);
            }
        }
    }
}
