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
pub mod analysis;
pub mod dfa;
pub mod error;
pub mod gbnf;
pub mod inline;
pub mod ir;
pub mod nullable;
pub mod reference;
pub mod simplify;
#[cfg(test)]
pub(crate) mod testutil;
pub mod useless;
pub mod json_schema;

pub use dfa::TerminalDfa;
pub use error::GrammarError;
pub use gbnf::{parse_gbnf, ParsedGrammar, Warning, WarningKind};
pub use inline::{dedupe, eliminate_units, inline_nonterminals, InlineConfig};
pub use nullable::{eliminate_nullable, eliminate_nullable_with, NullableConfig};
pub use reference::Recognizer;
pub use simplify::{simplify, PassReport, SimplifyConfig, Simplified};
pub use useless::remove_useless;
pub use ir::{CharClass, Grammar, GrammarStats, NtId, Rule, Symbol, Terminal};
