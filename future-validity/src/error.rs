//! Errors of Φ estimation. Bad input (a model whose vocabulary does not match
//! the constraint, a language too large to enumerate, a state with no valid
//! continuation) is reported here, never by a panic.

use zapspec_core::{ModelError, Rejected, TokenId};

/// Why a Φ estimate (or a certificate) could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum PhiError {
    /// The model failed (bad token, context overflow, backend error).
    #[error("model: {0}")]
    Model(#[from] ModelError),
    /// The constraint refused a token it had put in its own mask.
    #[error("constraint: {0}")]
    Constraint(#[from] Rejected),
    /// Vocabulary sizes of model, constraint and logits disagree (or, for
    /// [`crate::PhiEstimator::log_phi_shifted_compact`], a valid-set list
    /// or its output buffer has the wrong length).
    #[error("vocabulary mismatch: {what} has {got} entries, expected {want}")]
    VocabMismatch {
        /// Which input has the wrong size ("model", "logits", …).
        what: &'static str,
        /// Its size.
        got: usize,
        /// The size expected: the constraint's vocabulary size, or the
        /// valid set's.
        want: usize,
    },
    /// The valid set `A_t` is empty (the paper's non-degeneracy assumption,
    /// §3.1, is violated), or every candidate has Φ̂ = 0 / zero model mass.
    #[error("no valid continuation with positive mass at prefix position {position}")]
    EmptySupport {
        /// Length of the prefix.
        position: usize,
    },
    /// Exact enumeration would visit more prefixes than allowed (the
    /// language below this prefix is too large or infinite; Prop. 8: exact Φ
    /// is #P-hard in general).
    #[error("exact enumeration exceeded {limit} prefixes (prefix length {depth}); the language is too large or infinite")]
    TooLarge {
        /// The prefix budget.
        limit: usize,
        /// Length of the prefix where it ran out.
        depth: usize,
    },
    /// Exact enumeration went deeper than allowed below the starting prefix
    /// (the language has members longer than `limit`, or is infinite).
    #[error("exact enumeration exceeded depth {limit} below the prefix")]
    TooDeep {
        /// The depth budget.
        limit: usize,
    },
    /// A token id outside the vocabulary.
    #[error("token {token} outside a vocabulary of {vocab_size}")]
    BadToken {
        /// The id.
        token: TokenId,
        /// The vocabulary size.
        vocab_size: usize,
    },
    /// A configuration value is out of range.
    #[error("invalid configuration `{field}`: {reason}")]
    Config {
        /// The configuration field.
        field: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// The estimator is used on a state it does not cover (e.g. a learned
    /// estimator on a trie it was not built for, a DFA state outside the DP).
    #[error("unsupported state: {0}")]
    Unsupported(String),
    /// An estimator left a candidate's entry of the output buffer unwritten
    /// (the caller pre-filled it with NaN).
    #[error("no estimate for candidate token {token}")]
    MissingEstimate {
        /// The candidate without an estimate.
        token: TokenId,
    },
}

impl PhiError {
    #[allow(dead_code)]
    pub(crate) fn config(field: &'static str, reason: impl Into<String>) -> Self {
        PhiError::Config {
            field,
            reason: reason.into(),
        }
    }
}
