//! # zapspec-grammar
//!
//! Grammars as data for constrained decoding: the grammar IR, a GBNF
//! parser, terminals compiled to byte DFAs, the
//! language-preserving grammar transformations of ZapFormat §4.5
//! (useless-rule and nullable-rule elimination, after Hopcroft & Ullman),
//! and a naive reference recognizer that serves as the test oracle.
//!
//! ## Entry points
//!
//! * [`parse_gbnf`] / [`Grammar::from_gbnf`]: GBNF text → [`Grammar`]
//!   (with warnings), or a [`GrammarError`] with line and column.
//! * JSON Schema → [`Grammar`] is the separate crate `zapspec-jsonschema`,
//!   which builds on this IR.
//! * [`simplify()`]: the §4.5 pipeline on a [`Grammar`], each pass
//!   switchable ([`SimplifyConfig`]), with sizes per pass.
//! * [`TerminalDfa::compile`]: one terminal as a byte DFA, the FSM every
//!   parser steps.
//! * [`Recognizer`]: membership and viable prefixes, for tests.
//!
//! | module | what | paper |
//! |---|---|---|
//! | [`ir`] | the grammar IR: nonterminals, rules, byte-level terminals (literal, char class, regex); `Display` prints GBNF | §3.1 |
//! | [`limits`] | [`Limit`], [`RegexLimits`]: every resource bound of compilation, with defaults | |
//! | [`error`] | [`GrammarError`] (line/column + reason where it applies) | |
//! | [`dfa`] | [`TerminalDfa`]: each terminal as a dense byte DFA (dead state 0, exact `can_continue`, byte classes), or built lazily ([`TerminalDfa::lazy_regex`]) | §4.1 "terminals … as FSMs" |
//! | [`dense`] | the workspace's one eager regex → DFA builder ([`dense::determinize`]: `regex-automata` under [`RegexLimits`], limits mapped to typed errors), the dense table layout ([`dense::DenseTables`]: dead state 0, only states that reach acceptance, rows per byte class), products ([`dense::product`]); the Earley engine's eager automata are built here too | §4.1 |
//! | [`lazy`] | `LazyTables`: DFA states built on first use by the subset construction over a Thompson NFA, stable ids, exact liveness, lock-free reads (the Earley engine's terminals use it too) | |
//! | [`segmented`] | `Segmented`: append-only arrays read without a lock (the lazy tables' rows, the Earley engine's per-state slots) | |
//! | [`gbnf`] | [`parse_gbnf`] / `Grammar::from_gbnf`: llama.cpp GBNF + `/regex/`, desugaring `* + ? {m,n}` and groups; warnings for unused rules | |
//! | [`lark`] | [`from_lark`]: Lark grammars (llguidance's and XGrammar's dialect: rules, terminals, `%import common`, `%ignore`, `%json` through the caller's schema compiler) | |
//! | [`avoid`] | [`avoid::avoiding`]: text containing none of a set of strings (free text until a trigger or an end string), one `Terminal::Avoid` (the product of UTF-8 text with the strings' Aho–Corasick automaton) | |
//! | [`analysis`] | shared analyses: generating / nullable fixpoints, reachability, compaction | |
//! | [`useless`] | [`remove_useless`]: non-generating, then unreachable symbols; `EmptyLanguage` error | §4.5 ¶1 |
//! | [`nullable`] | [`eliminate_nullable`]: the three phases (find nullable, add variants, keep ε only for the start) | §4.5 ¶2 |
//! | [`inline`] | [`eliminate_units`], [`inline_nonterminals`], [`dedupe`]: size-reducing rewrites | §4.5 (size) |
//! | [`simplify`](mod@simplify) | [`simplify()`]: the pipeline, each pass switchable, [`GrammarStats`] before/after each pass | §4.5 |
//! | [`reference`](mod@reference) | [`Recognizer`]: textbook Earley over bytes (Aycock–Horspool ε), membership and viable prefixes | §3.2 |
//!
//! ## Costs
//!
//! * GBNF parsing is linear in the text.
//! * A literal or class terminal's DFA is linear in its size; a regex
//!   terminal is determinised by `regex-automata`, which is exponential in
//!   the regex in the worst case (counted repetitions such as `x{0,1000}`
//!   are the usual culprit), so every terminal is compiled under
//!   [`RegexLimits`] (NFA bytes, DFA bytes, DFA states) and one over a
//!   bound is [`GrammarError::LimitExceeded`] naming the rule and the
//!   terminal. Stepping a DFA costs two array loads per byte.
//! * Generating/nullable analyses and useless-rule elimination are linear
//!   in the grammar size. Nullable elimination adds up to `2^k` variants of
//!   a rule with `k` nullable occurrences; rules with more than
//!   [`NullableConfig::max_optional_per_rule`] are split first, so growth
//!   stays linear. Unit elimination and inlining are bounded by
//!   [`InlineConfig`].
//! * The reference recognizer is unoptimised Earley: O(n³) time on
//!   ambiguous grammars, O(n²) on unambiguous ones; for tests only.
//!
//! Every transform is checked by property tests on random grammars (ε-rules,
//! left recursion, cycles, useless symbols): membership of all strings of
//! length ≤ 6 over {a,b,c} is unchanged, judged by the reference recognizer,
//! which is itself checked against bottom-up enumeration of derivations.
//! Whether the transforms reduce parsing work depends on the grammar: the
//! default keeps the paper's pipeline; set `SimplifyConfig { nullable:
//! false, .. }` where parse work matters more than ε-freedom (recorded
//! measurements: `examples/results/history/grammar.md`).
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
pub mod avoid;
pub mod dense;
pub mod dfa;
pub mod error;
pub mod gbnf;
pub mod inline;
pub mod ir;
pub mod lark;
pub mod lazy;
pub mod limits;
pub mod nullable;
pub mod reference;
pub mod segmented;
pub mod simplify;
#[cfg(test)]
pub(crate) mod testutil;
pub mod useless;

pub use dfa::TerminalDfa;

/// The generic JSON grammar (RFC 8259: any JSON value, any whitespace
/// around every token) in GBNF: `grammars/json.gbnf`.
pub const JSON_GBNF: &str = include_str!("../grammars/json.gbnf");

/// A JSON object or array, whitespace inside it but none around it, in
/// GBNF (`grammars/json_container.gbnf`): what XGrammar's builtin JSON
/// grammar admits (`"x"`, `1`, `" {}"` and `"{} "` are refused), and what
/// the Python package's `builtin_json_grammar` compiles.
pub const JSON_CONTAINER_GBNF: &str = include_str!("../grammars/json_container.gbnf");
pub use error::GrammarError;
pub use gbnf::{
    parse_gbnf, parse_gbnf_with, regex_syntax_reader, ParsedGrammar, RegexMacro, RegexReader,
    Warning, WarningKind,
};
pub use inline::{dedupe, eliminate_units, inline_nonterminals, InlineConfig};
pub use ir::{CharClass, Grammar, GrammarStats, NtId, Rule, Symbol, Terminal};
pub use lark::{from_lark, Embed as LarkEmbed};
pub use limits::{nfa_bytes_lower_bound, Limit, RegexLimits};
pub use nullable::{eliminate_nullable, eliminate_nullable_with, NullableConfig};
pub use reference::Recognizer;
pub use simplify::{simplify, PassReport, Simplified, SimplifyConfig};
pub use useless::remove_useless;
