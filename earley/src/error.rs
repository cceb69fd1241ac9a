//! Errors of grammar compilation for the Earley engine.

use thiserror::Error;
use zapspec_grammar::{GrammarError, Limit};

/// Why a grammar could not be compiled for the engine, or why a matcher's
/// checked operation ([`crate::EarleyMatcher::try_advance`],
/// [`crate::EarleyMatcher::try_mask`]) failed.
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
    /// A resource limit of [`crate::EngineConfig`] was exceeded (see
    /// `zapspec_grammar::limits`): the grammar is refused instead of
    /// exhausting memory or time.
    #[error("limit {limit} ({max}) exceeded at {place}: {detail}")]
    LimitExceeded {
        /// Which limit.
        limit: Limit,
        /// Its configured value.
        max: usize,
        /// Where: the rule and the terminal, or the Earley set.
        place: String,
        /// The full regex of the terminal, when the limit is one of a
        /// terminal's automaton.
        terminal: Option<String>,
        /// What exceeded it.
        detail: String,
    },
    /// The start symbol derives no string (after removing unproductive rules).
    #[error("the grammar's language is empty: start symbol `{start}` derives no string")]
    EmptyLanguage {
        /// The start symbol's name.
        start: String,
    },
    /// [`crate::EarleyMatcher::try_advance`]: the token is not a viable
    /// continuation (or EOS before a complete member, or after the end).
    #[error(transparent)]
    Rejected(#[from] zapspec_core::Rejected),
    /// A rule mentions a nonterminal id the grammar does not have, or the
    /// grammar exceeds the engine's index sizes.
    #[error("invalid grammar: {reason}")]
    Invalid {
        /// What is wrong.
        reason: String,
    },
}

impl EarleyError {
    /// The error of terminal `pattern`'s automaton, built by
    /// `zapspec-grammar` (its eager builder, `zapspec_grammar::dense`):
    /// a regex error is [`EarleyError::Terminal`], a limit
    /// [`EarleyError::LimitExceeded`] naming the terminal.
    pub(crate) fn of_terminal(e: GrammarError, pattern: &str) -> Self {
        match e {
            GrammarError::LimitExceeded {
                limit,
                max,
                place,
                detail,
            } => EarleyError::LimitExceeded {
                limit,
                max,
                place,
                terminal: Some(pattern.to_string()),
                detail,
            },
            GrammarError::Regex { regex, reason, .. } => EarleyError::Terminal { regex, reason },
            other => EarleyError::Terminal {
                regex: pattern.to_string(),
                reason: other.to_string(),
            },
        }
    }

    /// The same error, located in rule `rule` (terminal errors are raised
    /// where the rule is not known).
    pub fn in_rule(self, rule: &str) -> Self {
        match self {
            EarleyError::LimitExceeded {
                limit,
                max,
                place,
                terminal,
                detail,
            } if !place.starts_with("rule ") => EarleyError::LimitExceeded {
                limit,
                max,
                place: format!("rule `{rule}`, {place}"),
                terminal,
                detail,
            },
            e => e,
        }
    }
}
