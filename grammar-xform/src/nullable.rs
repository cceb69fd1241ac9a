//! Nullable-rule elimination (ZapFormat §4.5: "a three-phase approach:
//! first identifying all null symbols, then generating alternative
//! productions, and finally selectively retaining specific null
//! productions where necessary"; the construction is Hopcroft & Ullman's
//! Theorem 4.3 of the 1979 text the paper cites).
//!
//! 1. **Identify nullable symbols**: the least set of nonterminals `A` with
//!    a rule `A → X₁…Xₙ` whose symbols are all nullable (ε-rules first).
//!    A terminal is nullable only if it matches nothing but ε (e.g. the
//!    literal `""`); a terminal that matches ε *and* other strings (a regex
//!    such as `/c*/`) is kept as an atom and not treated as nullable — the
//!    IR cannot express "the regex minus ε" — so such terminals keep their
//!    ε inside the terminal.
//! 2. **Generate alternative productions**: for every rule, add each
//!    variant that omits a subset of its nullable occurrences (symbols that
//!    derive *only* ε are always omitted); empty variants and unit
//!    self-loops `A → A` are not added.
//! 3. **Retain null productions only where necessary**: all ε-rules are
//!    dropped, except that if the start symbol `S` was nullable the empty
//!    string is kept in the language by `S → ε` — directly on `S` when `S`
//!    occurs in no right-hand side, otherwise on a fresh start symbol
//!    `S' → S | ε`. Hence the result has at most one ε-rule, for a start
//!    symbol that no rule mentions, and no other nullable symbol.
//!
//! A rule with `k` nullable occurrences has up to `2^k` variants. Rules with
//! more than [`NullableConfig::max_optional_per_rule`] are first split into
//! a right-branching chain of fresh `A-tail` nonterminals, so growth stays
//! linear.

use std::collections::HashSet;

use crate::analysis::{compact, least_fixpoint, terminal_infos, validate};
use crate::error::GrammarError;
use crate::ir::{Grammar, NtId, Rule, Symbol};

/// Options of [`eliminate_nullable_with`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NullableConfig {
    /// Most nullable occurrences one rule may have before it is split into
    /// a chain of rules with at most `max(max_optional_per_rule, 2)`
    /// nullable occurrences each (so each yields at most `2^that`
    /// variants). Values below 1 count as 1.
    pub max_optional_per_rule: usize,
}

impl Default for NullableConfig {
    fn default() -> Self {
        NullableConfig {
            max_optional_per_rule: 6,
        }
    }
}

/// [`eliminate_nullable_with`] under the default configuration.
pub fn eliminate_nullable(g: &Grammar) -> Result<Grammar, GrammarError> {
    eliminate_nullable_with(g, &NullableConfig::default())
}

/// Phase 1: the nullable nonterminals of `g` (by index).
pub fn nullable_symbols(g: &Grammar) -> Result<Vec<bool>, GrammarError> {
    validate(g)?;
    let infos = terminal_infos(g)?;
    Ok(least_fixpoint(g, |t| infos[t].only_empty()))
}

/// Removes ε-rules while keeping the language (see the module docs).
pub fn eliminate_nullable_with(g: &Grammar, cfg: &NullableConfig) -> Result<Grammar, GrammarError> {
    validate(g)?;
    let max_opt = cfg.max_optional_per_rule.max(1);
    let infos = terminal_infos(g)?;

    // Split rules with too many nullable occurrences (nullability of the
    // fresh tails is recomputed below, so one pass of splitting suffices).
    let nullable0 = least_fixpoint(g, |t| infos[t].only_empty());
    let is_nullable0 = |s: &Symbol| match s {
        Symbol::Nt(b) => nullable0[b.index()],
        Symbol::T(t) => infos[t].only_empty(),
    };
    let mut work = g.clone();
    work.rules = Vec::with_capacity(g.rules.len());
    for r in &g.rules {
        let opt = r.rhs.iter().filter(|s| is_nullable0(s)).count();
        if opt <= max_opt {
            work.rules.push(r.clone());
            continue;
        }
        // A → X₁…Xₙ  ⇒  A → P₁ T₁, T₁ → P₂ T₂, …, each Pᵢ holding at most
        // max_opt - 1 nullable occurrences (the tail Tᵢ may be one more).
        let mut lhs = r.lhs;
        let mut piece: Vec<Symbol> = Vec::new();
        let mut count = 0;
        let name = g.name(r.lhs).to_string();
        let mut rest = r.rhs.iter().peekable();
        while let Some(s) = rest.next() {
            let n = is_nullable0(s) as usize;
            if count + n > max_opt - 1 && !piece.is_empty() && rest.peek().is_some() {
                let tail = work.add_nonterminal(&format!("{name}-tail"));
                piece.push(Symbol::Nt(tail));
                work.add_rule(lhs, std::mem::take(&mut piece));
                lhs = tail;
                count = 0;
            }
            count += n;
            piece.push(s.clone());
        }
        work.add_rule(lhs, piece);
    }

    // Phase 1: nullable symbols; and which of them derive only ε.
    let nullable = least_fixpoint(&work, |t| infos[t].only_empty());
    let generating = least_fixpoint(&work, |t| infos[t].generating());
    let nonempty = derives_nonempty(&work, &generating, &infos);
    let only_empty = |s: &Symbol| match s {
        Symbol::Nt(b) => nullable[b.index()] && !nonempty[b.index()],
        Symbol::T(t) => infos[t].only_empty(),
    };
    let optional = |s: &Symbol| match s {
        Symbol::Nt(b) => nullable[b.index()] && nonempty[b.index()],
        Symbol::T(_) => false,
    };

    // Phase 2: alternative productions.
    let mut rules: Vec<Rule> = Vec::new();
    let mut seen: HashSet<Rule> = HashSet::new();
    let mut push = |rule: Rule, rules: &mut Vec<Rule>| {
        let self_loop = rule.rhs.len() == 1 && rule.rhs[0] == Symbol::Nt(rule.lhs);
        if !rule.rhs.is_empty() && !self_loop && seen.insert(rule.clone()) {
            rules.push(rule);
        }
    };
    for r in &work.rules {
        let kept: Vec<&Symbol> = r.rhs.iter().filter(|s| !only_empty(s)).collect();
        let opt_pos: Vec<usize> = (0..kept.len()).filter(|&i| optional(kept[i])).collect();
        for mask in 0u64..(1u64 << opt_pos.len()) {
            // bit i set = omit the i-th optional occurrence
            let mut omit = vec![false; kept.len()];
            for (bit, &p) in opt_pos.iter().enumerate() {
                omit[p] = mask >> bit & 1 == 1;
            }
            let rhs: Vec<Symbol> = kept
                .iter()
                .zip(&omit)
                .filter(|(_, &o)| !o)
                .map(|(s, _)| (*s).clone())
                .collect();
            push(Rule { lhs: r.lhs, rhs }, &mut rules);
        }
    }

    // Phase 3: keep ε only where necessary — for the start symbol.
    let mut start = work.start;
    if nullable[start.index()] {
        let mentioned = rules.iter().any(|r| r.rhs.contains(&Symbol::Nt(start)));
        if mentioned {
            let name = format!("{}-or-empty", work.name(start));
            let s2 = work.add_nonterminal(&name);
            rules.push(Rule {
                lhs: s2,
                rhs: vec![Symbol::Nt(start)],
            });
            start = s2;
        }
        rules.push(Rule {
            lhs: start,
            rhs: vec![],
        });
    }
    Ok(compact(&work, rules, start))
}

/// Nonterminals that derive some non-empty string: the least set with a
/// rule whose symbols are all generating and one of which is a terminal
/// matching a non-empty string or a nonterminal in the set.
fn derives_nonempty(
    g: &Grammar,
    generating: &[bool],
    infos: &std::collections::HashMap<crate::ir::Terminal, crate::analysis::TerminalInfo>,
) -> Vec<bool> {
    let mut ne = vec![false; g.num_nonterminals()];
    loop {
        let mut changed = false;
        for r in &g.rules {
            if ne[r.lhs.index()] {
                continue;
            }
            let all_gen = r.rhs.iter().all(|s| match s {
                Symbol::Nt(b) => generating[b.index()],
                Symbol::T(t) => infos[t].generating(),
            });
            let some_ne = r.rhs.iter().any(|s| match s {
                Symbol::Nt(b) => ne[b.index()],
                Symbol::T(t) => infos[t].matches_nonempty,
            });
            if all_gen && some_ne {
                ne[r.lhs.index()] = true;
                changed = true;
            }
        }
        if !changed {
            return ne;
        }
    }
}

/// Whether `nt` occurs on some right-hand side of `g`.
pub fn is_mentioned(g: &Grammar, nt: NtId) -> bool {
    g.rules.iter().any(|r| r.rhs.contains(&Symbol::Nt(nt)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{all_strings, random_grammar};
    use crate::Recognizer;
    use proptest::prelude::*;

    fn elim(src: &str) -> String {
        eliminate_nullable(&Grammar::from_gbnf(src).unwrap())
            .unwrap()
            .to_string()
    }

    #[test]
    fn textbook_example() {
        // Hopcroft & Ullman: S → aSb | ε
        assert_eq!(
            elim("S ::= \"a\" S \"b\" | \"\""),
            "S-or-empty ::= S | \"\"\nS ::= \"a\" S \"b\" | \"a\" \"b\"\n"
        );
        // A nullable start that no rule mentions keeps its own ε-rule.
        assert_eq!(
            elim("S ::= A A\nA ::= \"a\" | \"\""),
            "S ::= A A | A | \"\"\nA ::= \"a\"\n"
        );
        // Symbols that derive only ε disappear.
        assert_eq!(
            elim("S ::= \"x\" E E \"y\"\nE ::= \"\" | E E"),
            "S ::= \"x\" \"y\"\n"
        );
    }

    #[test]
    fn epsilon_matching_regex_is_an_atom() {
        assert_eq!(elim("S ::= /c*/ \"x\""), "S ::= /c*/ \"x\"\n");
    }

    #[test]
    fn long_optional_rules_are_split() {
        let src = format!("S ::= {}\nO ::= \"o\" | \"\"", "O ".repeat(20));
        let g = Grammar::from_gbnf(&src).unwrap();
        let h = eliminate_nullable(&g).unwrap();
        // without splitting this would be 2^20 - 1 rules
        assert!(h.rules.len() < 600, "{}", h.rules.len());
        let (r0, r1) = (Recognizer::new(&g).unwrap(), Recognizer::new(&h).unwrap());
        for k in 0..23 {
            let w = "o".repeat(k);
            assert_eq!(
                r0.recognizes(w.as_bytes()),
                r1.recognizes(w.as_bytes()),
                "{k}"
            );
        }
        assert_eq!(h.stats().epsilon_rules, 1);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]
        #[test]
        fn keeps_the_language_and_removes_nullables(g in random_grammar(), max_opt in 1usize..4) {
            let h = eliminate_nullable_with(&g, &NullableConfig { max_optional_per_rule: max_opt }).unwrap();
            let r0 = Recognizer::new(&g).unwrap();
            let r1 = Recognizer::new(&h).unwrap();
            for w in all_strings(6) {
                prop_assert_eq!(r0.recognizes(&w), r1.recognizes(&w), "{}\n=>\n{}\n{:?}", g, h, w);
            }
            // ε-rules only for a start symbol that nothing mentions
            for r in &h.rules {
                if r.rhs.is_empty() {
                    prop_assert_eq!(r.lhs, h.start);
                    prop_assert!(!is_mentioned(&h, h.start));
                }
            }
            let nullable = nullable_symbols(&h).unwrap();
            for (i, &n) in nullable.iter().enumerate() {
                prop_assert!(!n || NtId(i as u32) == h.start);
            }
        }
    }
}
