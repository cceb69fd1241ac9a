//! # grammar-xform
//!
//! Grammars as data, and the language-preserving grammar transformations
//! of ZapFormat §4.5 (useless-rule and nullable-rule elimination, after
//! Hopcroft & Ullman), plus the pieces every other crate needs around
//! them: a GBNF parser, terminals compiled to byte DFAs, and a naive
//! reference recognizer that serves as the test oracle.
//!
//! | module | what | paper |
//! |---|---|---|
//! | [`ir`] | the grammar IR: nonterminals, rules, byte-level terminals (literal, char class, regex); `Display` prints GBNF | §3.1 |
//! | [`error`] | [`GrammarError`] (line/column + reason where it applies) | |
//! | [`dfa`] | [`TerminalDfa`]: each terminal as a dense byte DFA (dead state 0, exact `can_continue`, byte classes) | §4.1 "terminals … as FSMs" |
//! | [`gbnf`] | [`parse_gbnf`] / `Grammar::from_gbnf`: llama.cpp GBNF + `/regex/`, desugaring `* + ? {m,n}` and groups; warnings for unused rules | |
//! | [`analysis`] | shared analyses: generating / nullable fixpoints, reachability, compaction | |
//! | [`useless`] | [`remove_useless`]: non-generating, then unreachable symbols; `EmptyLanguage` error | §4.5 ¶1 |
//! | [`nullable`] | [`eliminate_nullable`]: the three phases (find nullable, add variants, keep ε only for the start) | §4.5 ¶2 |
//! | [`inline`] | [`eliminate_units`], [`inline_nonterminals`], [`dedupe`]: size-reducing rewrites | §4.5 (size) |
//! | [`simplify`](mod@simplify) | [`simplify()`]: the pipeline, each pass switchable, [`GrammarStats`] before/after each pass | §4.5 |
//! | [`reference`](mod@reference) | [`Recognizer`]: textbook Earley over bytes (Aycock–Horspool ε), membership and viable prefixes | §3.2 |
//!
//! Every transform is checked by property tests on random grammars (ε-rules,
//! left recursion, cycles, useless symbols): membership of all strings of
//! length ≤ 6 over {a,b,c} is unchanged, judged by the reference recognizer,
//! which is itself checked against bottom-up enumeration of derivations.
//!
//! ## Measured: do the transforms reduce parsing work?
//!
//! `cargo run -p examples --bin grammar -- json.gbnf --quiet --measure doc.json`
//! counts Earley items of the reference recognizer before and after. On
//! llama.cpp's JSON grammar (74 rules) and a 13.9 KB JSON document the
//! input grammar needs 155,579 items; useless + units + inline (single-rule
//! nonterminals) + dedupe, i.e. `nullable: false`, need 120,518 (−23 %),
//! while the full default pipeline with ε-elimination needs 252,327
//! (+62 %): ε-elimination multiplies rules around the many nullable `ws`
//! occurrences, and the Aycock–Horspool recognizer handles ε cheaply
//! anyway. On JSON-Schema grammars the picture differs:
//! `cargo run -p examples --bin grammar_ablation -- --stride 20` (292
//! MaskBench schemas, 368 valid instances) gives 75,352 items unsimplified,
//! 73,854 (−2.0 %) after useless + nullable, 49,164 (−34.8 %) for all
//! passes but nullable and 50,100 (−33.5 %) for the full default pipeline,
//! with identical membership throughout. The default keeps the paper's
//! pipeline; set
//! `SimplifyConfig { nullable: false, .. }` where parse work matters more
//! than ε-freedom, and measure on your own grammar.
//!
//! ## Limits
//!
//! * Terminals that match ε *and* non-empty strings (e.g. `/c*/`) are atoms
//!   for ε-elimination (the IR cannot express "regex minus ε").
//! * `Display` prints a regex containing the two characters `\/` as `\\/`,
//!   which the parser reads back differently; printing a grammar in which a
//!   mentioned nonterminal has no rules, or a non-start nonterminal is
//!   named `root`, does not round-trip either.
//! * In GBNF *strings* `\xHH` is a raw byte (llama.cpp: code point U+00HH);
//!   the two agree on ASCII.
pub mod analysis;
pub mod dfa;
pub mod error;
pub mod gbnf;
pub mod inline;
pub mod ir;
pub mod json_schema;
pub mod nullable;
pub mod reference;
pub mod simplify;
#[cfg(test)]
pub(crate) mod testutil;
pub mod useless;

pub use dfa::TerminalDfa;
pub use error::GrammarError;
pub use gbnf::{parse_gbnf, ParsedGrammar, Warning, WarningKind};
pub use inline::{dedupe, eliminate_units, inline_nonterminals, InlineConfig};
pub use ir::{CharClass, Grammar, GrammarStats, NtId, Rule, Symbol, Terminal};
pub use nullable::{eliminate_nullable, eliminate_nullable_with, NullableConfig};
pub use reference::Recognizer;
pub use simplify::{simplify, PassReport, Simplified, SimplifyConfig};
pub use useless::remove_useless;
