//! The grammar-transformation pipeline of ZapFormat §4.5, with each pass
//! switchable (for ablations) and the grammar's size recorded before and
//! after every pass.
//!
//! Order: useless-rule elimination → nullable-rule elimination → unit-rule
//! elimination → inlining → de-duplication → useless-rule elimination
//! again (inlining and merging can leave unreachable nonterminals). Every
//! pass keeps the language; left recursion is kept.

use std::fmt::Write as _;

use crate::error::GrammarError;
use crate::inline::{dedupe, eliminate_units, inline_nonterminals, InlineConfig};
use crate::ir::{Grammar, GrammarStats};
use crate::nullable::{eliminate_nullable_with, NullableConfig};
use crate::useless::remove_useless;

/// Which passes [`simplify`] runs, and their limits. `Default` runs all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimplifyConfig {
    /// Remove non-generating and unreachable symbols (first and last pass).
    pub useless: bool,
    /// Eliminate ε-rules (three phases, §4.5).
    pub nullable: bool,
    /// Eliminate unit rules `A → B`.
    pub units: bool,
    /// Inline small and singly-used nonterminals.
    pub inline: bool,
    /// Drop duplicate rules and merge identical nonterminals.
    pub dedupe: bool,
    /// Options of the nullable pass.
    pub nullable_config: NullableConfig,
    /// Options of the unit and inlining passes.
    pub inline_config: InlineConfig,
}

impl Default for SimplifyConfig {
    fn default() -> Self {
        SimplifyConfig {
            useless: true,
            nullable: true,
            units: true,
            inline: true,
            dedupe: true,
            nullable_config: NullableConfig::default(),
            inline_config: InlineConfig::default(),
        }
    }
}

impl SimplifyConfig {
    /// A configuration that runs no pass.
    pub fn none() -> Self {
        SimplifyConfig {
            useless: false,
            nullable: false,
            units: false,
            inline: false,
            dedupe: false,
            ..Self::default()
        }
    }
}

/// One pass of the pipeline: its name, the grammar's size before and after,
/// and the grammar it produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassReport {
    /// The pass's name (`useless`, `nullable`, `units`, `inline`, `dedupe`,
    /// `useless (final)`).
    pub pass: &'static str,
    /// Size of the grammar the pass received.
    pub before: GrammarStats,
    /// Size of the grammar it produced.
    pub after: GrammarStats,
    /// The grammar it produced.
    pub grammar: Grammar,
}

/// The result of [`simplify`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Simplified {
    /// The simplified grammar (same language as the input).
    pub grammar: Grammar,
    /// Size of the input grammar.
    pub initial: GrammarStats,
    /// One report per pass that ran, in order.
    pub passes: Vec<PassReport>,
}

impl Simplified {
    /// A Markdown table of the sizes after each pass.
    pub fn stats_table(&self) -> String {
        let mut s = String::from(
            "| pass | nonterminals | rules | symbols | terminals | ε-rules |\n|---|---:|---:|---:|---:|---:|\n",
        );
        let mut row = |name: &str, st: &GrammarStats| {
            let _ = writeln!(
                s,
                "| {name} | {} | {} | {} | {} | {} |",
                st.nonterminals, st.rules, st.symbols, st.terminals, st.epsilon_rules
            );
        };
        row("input", &self.initial);
        for p in &self.passes {
            row(p.pass, &p.after);
        }
        s
    }
}

/// Runs the enabled passes in order (see the module docs).
pub fn simplify(g: &Grammar, cfg: &SimplifyConfig) -> Result<Simplified, GrammarError> {
    type Pass<'a> = (
        &'static str,
        bool,
        Box<dyn Fn(&Grammar) -> Result<Grammar, GrammarError> + 'a>,
    );
    let passes: Vec<Pass> = vec![
        ("useless", cfg.useless, Box::new(remove_useless)),
        (
            "nullable",
            cfg.nullable,
            Box::new(|g: &Grammar| eliminate_nullable_with(g, &cfg.nullable_config)),
        ),
        (
            "units",
            cfg.units,
            Box::new(|g: &Grammar| eliminate_units(g, &cfg.inline_config)),
        ),
        (
            "inline",
            cfg.inline,
            Box::new(|g: &Grammar| inline_nonterminals(g, &cfg.inline_config)),
        ),
        ("dedupe", cfg.dedupe, Box::new(dedupe)),
        ("useless (final)", cfg.useless, Box::new(remove_useless)),
    ];
    let initial = g.stats();
    let mut cur = g.clone();
    let mut reports = Vec::new();
    for (name, on, f) in passes {
        if !on {
            continue;
        }
        let before = cur.stats();
        cur = f(&cur)?;
        reports.push(PassReport {
            pass: name,
            before,
            after: cur.stats(),
            grammar: cur.clone(),
        });
    }
    Ok(Simplified {
        grammar: cur,
        initial,
        passes: reports,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{all_strings, random_grammar};
    use crate::Recognizer;
    use proptest::prelude::*;

    #[test]
    fn table_and_switches() {
        let g =
            Grammar::from_gbnf("root ::= a | b\na ::= \"x\" c\nb ::= b \"y\"\nc ::= \"\" | \"z\"")
                .unwrap();
        let s = simplify(&g, &SimplifyConfig::default()).unwrap();
        assert_eq!(s.grammar.to_string(), "root ::= \"x\" \"z\" | \"x\"\n");
        assert_eq!(s.passes.len(), 6);
        assert_eq!(
            s.stats_table().lines().nth(2).unwrap(),
            "| input | 4 | 6 | 7 | 3 | 1 |",
            "{}",
            s.stats_table()
        );
        let none = simplify(&g, &SimplifyConfig::none()).unwrap();
        assert_eq!(none.grammar, g);
        assert!(none.passes.is_empty());
        let only_useless = simplify(
            &g,
            &SimplifyConfig {
                useless: true,
                ..SimplifyConfig::none()
            },
        )
        .unwrap();
        assert_eq!(only_useless.passes.len(), 2);
        assert_eq!(
            only_useless.grammar.to_string(),
            "root ::= a\na ::= \"x\" c\nc ::= \"\" | \"z\"\n"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn simplify_keeps_the_language(g in random_grammar(), mask in 0u8..32) {
            let cfg = SimplifyConfig {
                useless: mask & 1 != 0,
                nullable: mask & 2 != 0,
                units: mask & 4 != 0,
                inline: mask & 8 != 0,
                dedupe: mask & 16 != 0,
                ..SimplifyConfig::default()
            };
            let r0 = Recognizer::new(&g).unwrap();
            match simplify(&g, &cfg) {
                Err(GrammarError::EmptyLanguage { .. }) => {
                    prop_assert!(cfg.useless);
                    for w in all_strings(6) {
                        prop_assert!(!r0.recognizes(&w));
                    }
                }
                Err(e) => prop_assert!(false, "{e}"),
                Ok(s) => {
                    let r1 = Recognizer::new(&s.grammar).unwrap();
                    for w in all_strings(6) {
                        prop_assert_eq!(r0.recognizes(&w), r1.recognizes(&w), "{}\n=>\n{}\n{:?}", g, s.grammar, w);
                    }
                    // the round trip through GBNF text keeps the language too
                    // (after the useless pass every nonterminal has rules, so
                    // the printed grammar defines everything it mentions)
                    if !cfg.useless {
                        return Ok(());
                    }
                    let back = Grammar::from_gbnf(&s.grammar.to_string()).unwrap();
                    let r2 = Recognizer::new(&back).unwrap();
                    for w in all_strings(5) {
                        prop_assert_eq!(r1.recognizes(&w), r2.recognizes(&w));
                    }
                }
            }
        }
    }
}
