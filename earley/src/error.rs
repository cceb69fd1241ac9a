//! Errors of grammar compilation for the Earley engine.

use thiserror::Error;

/// Why a grammar could not be compiled for the engine.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EarleyError {
    /// A terminal whose regular expression does not compile to a DFA.
    #[error("terminal /{regex}/ does not compile: {reason}")]
    Terminal {
        /// The regex text of the terminal.
        regex: String,
        /// The regex compiler's message.
        reason: String,
    },
    /// The start symbol derives no string (after removing unproductive rules).
    #[error("the grammar's language is empty: start symbol `{start}` derives no string")]
    EmptyLanguage {
        /// The start symbol's name.
        start: String,
    },
    /// A rule mentions a nonterminal id the grammar does not have, or the
    /// grammar exceeds the engine's index sizes.
    #[error("invalid grammar: {reason}")]
    Invalid {
        /// What is wrong.
        reason: String,
    },
}
