//! Errors of the speculate–verify–rollback loop.

use zapspec_core::{ModelError, Rejected, RollbackError};

/// Everything that can go wrong while decoding. Bad input (a constraint with
/// a dead end, a model with the wrong vocabulary, a configuration with
/// `gamma = 0`) is reported here, never by a panic.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("model: {0}")]
    Model(#[from] ModelError),
    #[error("constraint refused a token the loop produced: {0}")]
    Rejected(#[from] Rejected),
    #[error("constraint rollback: {0}")]
    Rollback(#[from] RollbackError),
    #[error(
        "position {position}: the constraint allows no token (a dead end) but is not finished"
    )]
    DeadEnd { position: usize },
    #[error("position {position}: the {what} law has no mass on the allowed tokens")]
    EmptySupport { position: usize, what: &'static str },
    #[error("vocabulary mismatch: {what} has {got} tokens, the constraint {want}")]
    VocabMismatch {
        what: &'static str,
        got: usize,
        want: usize,
    },
    #[error("no sequence finished within {max_tokens} tokens")]
    TooLong { max_tokens: usize },
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("future-validity estimate at position {position}: {reason}")]
    Phi { position: usize, reason: String },
    #[error("sampled {tokens:?}, which is not a member of the enumerated language")]
    OutsideLanguage { tokens: Vec<zapspec_core::TokenId> },
    #[error("language too large to enumerate: more than {limit} prefixes")]
    TooLarge { limit: usize },
}
