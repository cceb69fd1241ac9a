//! # grammar-xform
//!
//! Grammars as data and the language-preserving transforms of ZapFormat §4.5.
//!
//! - [`ir`]: the grammar IR (nonterminals, rules, byte-level terminals).
//! - [`dfa`]: terminals as byte DFAs ([`TerminalDfa`]).
//! - [`gbnf`]: the GBNF parser ([`parse_gbnf`], `Grammar::from_gbnf`).
//! - [`reference`]: a naive Earley recognizer over bytes, the test oracle
//!   ([`reference::recognizes`], [`reference::is_viable_prefix`]).
//! - [`error`]: [`GrammarError`], with line/column where applicable.
//! - [`json_schema`]: JSON Schema → grammar ([`json_schema::compile_json_schema`]).
pub mod dfa;
pub mod error;
pub mod gbnf;
pub mod ir;
pub mod reference;
#[cfg(test)]
pub(crate) mod testutil;
pub mod json_schema;

pub use dfa::TerminalDfa;
pub use error::GrammarError;
pub use gbnf::{parse_gbnf, ParsedGrammar, Warning, WarningKind};
pub use ir::{CharClass, Grammar, GrammarStats, NtId, Rule, Symbol, Terminal};
