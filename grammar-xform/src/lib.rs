//! # grammar-xform
//!
//! Grammars as data and the language-preserving transforms of ZapFormat §4.5.
//!
//! - [`ir`]: the grammar IR (nonterminals, rules, byte-level terminals).
pub mod ir;

pub use ir::{CharClass, Grammar, GrammarStats, NtId, Rule, Symbol, Terminal};
