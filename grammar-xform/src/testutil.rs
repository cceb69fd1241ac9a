//! Test helpers: random small grammars and an independent brute-force
//! language enumerator (bottom-up derivation of all words up to a length).

use std::collections::BTreeSet;

use proptest::prelude::*;
use regex_automata::meta::Regex;

use crate::ir::{CharClass, Grammar, NtId, Symbol, Terminal};

/// All strings over {a,b,c} of length ≤ `max_len`.
pub fn all_strings(max_len: usize) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new()];
    let mut layer = vec![Vec::new()];
    for _ in 0..max_len {
        let mut next = Vec::new();
        for w in &layer {
            for &c in b"abc" {
                let mut v: Vec<u8> = w.clone();
                v.push(c);
                next.push(v);
            }
        }
        out.extend(next.iter().cloned());
        layer = next;
    }
    out
}

/// The words of length ≤ `max_len` that a terminal matches, found by
/// testing every string over {a,b,c} (regexes through `regex-automata`'s
/// meta engine, independent of our DFAs).
fn terminal_words(t: &Terminal, max_len: usize) -> BTreeSet<Vec<u8>> {
    match t {
        Terminal::Literal(b) => {
            if b.len() <= max_len {
                [b.clone()].into()
            } else {
                BTreeSet::new()
            }
        }
        Terminal::Class(c) => b"abc"
            .iter()
            .filter(|&&x| c.contains(x as char))
            .map(|&x| vec![x])
            .collect(),
        Terminal::Regex(r) => {
            let re = Regex::new(&format!("^(?:{r})$")).expect("test regex");
            all_strings(max_len)
                .into_iter()
                .filter(|w| re.is_match(w))
                .collect()
        }
        Terminal::And(a, b) => {
            let (a, b) = (
                terminal_words(&Terminal::Regex(a.clone()), max_len),
                terminal_words(&Terminal::Regex(b.clone()), max_len),
            );
            a.intersection(&b).cloned().collect()
        }
        Terminal::Except(r, names) => {
            let mut w = terminal_words(&Terminal::Regex(r.clone()), max_len);
            for n in names.iter() {
                w.remove(n);
            }
            w
        }
        Terminal::Avoid(r, strings) => terminal_words(&Terminal::Regex(r.clone()), max_len)
            .into_iter()
            .filter(|w| {
                !strings
                    .iter()
                    .any(|s| w.windows(s.len()).any(|x| x == s.as_slice()))
            })
            .collect(),
    }
}

/// The words of length ≤ `max_len` that the grammar derives, as the least
/// fixpoint of `L(A) ⊇ L(X₁)·…·L(Xₙ)` for every rule `A → X₁…Xₙ`,
/// truncated to `max_len`.
pub fn brute_force_language(g: &Grammar, max_len: usize) -> BTreeSet<Vec<u8>> {
    let n = g.num_nonterminals();
    let mut lang: Vec<BTreeSet<Vec<u8>>> = vec![BTreeSet::new(); n];
    let terms: Vec<Vec<Option<BTreeSet<Vec<u8>>>>> = g
        .rules
        .iter()
        .map(|r| {
            r.rhs
                .iter()
                .map(|s| match s {
                    Symbol::T(t) => Some(terminal_words(t, max_len)),
                    Symbol::Nt(_) => None,
                })
                .collect()
        })
        .collect();
    loop {
        let mut changed = false;
        for (ri, r) in g.rules.iter().enumerate() {
            let mut acc: BTreeSet<Vec<u8>> = [Vec::new()].into();
            for (si, s) in r.rhs.iter().enumerate() {
                let set = match s {
                    Symbol::Nt(b) => &lang[b.index()],
                    Symbol::T(_) => terms[ri][si].as_ref().expect("terminal words"),
                };
                let mut next = BTreeSet::new();
                for x in &acc {
                    for y in set {
                        if x.len() + y.len() <= max_len {
                            let mut w = x.clone();
                            w.extend_from_slice(y);
                            next.insert(w);
                        }
                    }
                }
                acc = next;
                if acc.is_empty() {
                    break;
                }
            }
            for w in acc {
                if lang[r.lhs.index()].insert(w) {
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    std::mem::take(&mut lang[g.start.index()])
}

/// Random grammars with 3–5 nonterminals over {a,b,c}: 1–3 rules each,
/// right-hand sides of 0–3 symbols (so ε-rules, left recursion, cycles,
/// non-generating and unreachable symbols all occur), terminals among
/// literals, a class and ε-matching regexes. Start symbol: nonterminal 0.
pub fn random_grammar() -> impl Strategy<Value = Grammar> {
    (3usize..=5).prop_flat_map(|n| {
        let sym = prop_oneof![
            3 => (0..n as u32).prop_map(|i| Symbol::Nt(NtId(i))),
            1 => Just(Symbol::T(Terminal::Literal(b"a".to_vec()))),
            1 => Just(Symbol::T(Terminal::Literal(b"b".to_vec()))),
            1 => Just(Symbol::T(Terminal::Literal(b"c".to_vec()))),
            1 => Just(Symbol::T(Terminal::Literal(b"ab".to_vec()))),
            1 => Just(Symbol::T(Terminal::Class(CharClass::new([('a', 'b')], false)))),
            1 => Just(Symbol::T(Terminal::Regex("c*".into()))),
            1 => Just(Symbol::T(Terminal::except(
                "[ab]*".into(),
                [b"a".to_vec(), b"ab".to_vec(), Vec::new()]
            ))),
            1 => Just(Symbol::T(Terminal::Regex("b|ca".into()))),
        ];
        let rule = prop::collection::vec(sym, 0..=3);
        prop::collection::vec(prop::collection::vec(rule, 1..=3), n).prop_map(move |rules| {
            let mut g = Grammar::new();
            let ids: Vec<NtId> = (0..n)
                .map(|i| g.add_nonterminal(&format!("n{i}")))
                .collect();
            for (i, alts) in rules.into_iter().enumerate() {
                for rhs in alts {
                    g.add_rule(ids[i], rhs);
                }
            }
            g.start = ids[0];
            g
        })
    })
}

#[test]
fn brute_force_sanity() {
    let g = Grammar::from_gbnf("root ::= \"a\" root \"b\" | \"\"").unwrap();
    let l = brute_force_language(&g, 6);
    let want: BTreeSet<Vec<u8>> = ["", "ab", "aabb", "aaabbb"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    assert_eq!(l, want);
    assert_eq!(all_strings(2).len(), 1 + 3 + 9);
}
