//! Useless-rule elimination (ZapFormat §4.5, "identify and eliminate
//! useless rules that cannot contribute to valid derivations"; the
//! algorithm is Hopcroft & Ullman's, Lemmas 4.1–4.2 / Theorem 4.2 of the
//! 1979 text the paper cites).
//!
//! 1. **Non-generating symbols.** A nonterminal is *generating* if it
//!    derives some terminal string; a terminal is generating if its
//!    language is non-empty. Every rule that mentions a non-generating
//!    symbol is removed.
//! 2. **Unreachable symbols.** Then every rule whose left-hand side is not
//!    reachable from the start symbol is removed.
//!
//! The order matters: removing non-generating rules can make symbols
//! unreachable, but not vice versa. If the start symbol is not generating,
//! the language is empty and [`GrammarError::EmptyLanguage`] is returned.
//! Duplicate productions are dropped and nonterminal ids are compacted.

use crate::analysis::{compact, dedupe_rules, least_fixpoint, reachable, terminal_infos, validate};
use crate::error::GrammarError;
use crate::ir::{Grammar, Rule, Symbol};

/// Removes non-generating, then unreachable symbols (see the module docs).
pub fn remove_useless(g: &Grammar) -> Result<Grammar, GrammarError> {
    validate(g)?;
    let infos = terminal_infos(g)?;
    let generating = least_fixpoint(g, |t| infos[t].generating());
    if !generating[g.start.index()] {
        return Err(GrammarError::EmptyLanguage {
            start: g.name(g.start).to_string(),
        });
    }
    let sym_gen = |s: &Symbol| match s {
        Symbol::Nt(b) => generating[b.index()],
        Symbol::T(t) => infos[t].generating(),
    };
    let kept: Vec<Rule> = g
        .rules
        .iter()
        .filter(|r| r.rhs.iter().all(sym_gen))
        .cloned()
        .collect();
    let mut g1 = Grammar::new();
    // reachability over the generating rules only (same ids as g)
    for i in 0..g.num_nonterminals() {
        g1.add_nonterminal(g.name(crate::ir::NtId(i as u32)));
    }
    g1.rules = kept;
    g1.start = g.start;
    let reach = reachable(&g1);
    let rules: Vec<Rule> = g1
        .rules
        .into_iter()
        .filter(|r| reach[r.lhs.index()])
        .collect();
    Ok(compact(g, dedupe_rules(rules), g.start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{all_strings, random_grammar};
    use crate::Recognizer;
    use proptest::prelude::*;

    #[test]
    fn hopcroft_ullman_example() {
        // S → AB | a, A → a: B is non-generating, so S → AB goes, and then
        // A is unreachable (the order of the two phases matters).
        let g = Grammar::from_gbnf("S ::= A B | \"a\"\nA ::= \"a\"\nB ::= B \"b\"").unwrap();
        assert_eq!(remove_useless(&g).unwrap().to_string(), "S ::= \"a\"\n");
    }

    #[test]
    fn empty_language_is_an_error() {
        let g = Grammar::from_gbnf("root ::= root \"a\" | x\nx ::= [a] x").unwrap();
        assert_eq!(
            remove_useless(&g),
            Err(GrammarError::EmptyLanguage {
                start: "root".into()
            })
        );
        let g = Grammar::from_gbnf("root ::= /a$b/").unwrap();
        assert!(matches!(
            remove_useless(&g),
            Err(GrammarError::EmptyLanguage { .. })
        ));
    }

    #[test]
    fn keeps_everything_useful() {
        let src = "root ::= a root | \"\"\na ::= \"x\" | /y+/\n";
        let g = Grammar::from_gbnf(src).unwrap();
        assert_eq!(remove_useless(&g).unwrap().to_string(), src);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]
        #[test]
        fn keeps_the_language_and_leaves_no_useless_symbol(g in random_grammar()) {
            let r0 = Recognizer::new(&g).unwrap();
            match remove_useless(&g) {
                Err(GrammarError::EmptyLanguage { .. }) => {
                    for w in all_strings(6) {
                        prop_assert!(!r0.recognizes(&w));
                    }
                }
                Err(e) => prop_assert!(false, "{e}"),
                Ok(h) => {
                    let r1 = Recognizer::new(&h).unwrap();
                    for w in all_strings(6) {
                        prop_assert_eq!(r0.recognizes(&w), r1.recognizes(&w), "{}\n=>\n{}\n{:?}", g, h, w);
                    }
                    // every symbol is now generating and reachable, so the
                    // pass is idempotent
                    prop_assert_eq!(remove_useless(&h).unwrap(), h.clone());
                    let reach = reachable(&h);
                    prop_assert!(reach.iter().all(|&x| x));
                    let gen = least_fixpoint(&h, |_| true);
                    prop_assert!(gen.iter().all(|&x| x));
                }
            }
        }
    }
}
