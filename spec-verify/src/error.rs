//! Errors of the speculate–verify–rollback loop.

use zapspec_core::{ModelError, Rejected, RollbackError};

/// Everything that can go wrong while decoding. Bad input (a constraint with
/// a dead end, a model with the wrong vocabulary, a configuration with
/// `gamma = 0`) is reported here, never by a panic.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// A model call failed.
    #[error("model: {0}")]
    Model(#[from] ModelError),
    /// A drafter returned more tokens than γ, or not one law per token.
    #[error("drafter returned {tokens} tokens with {laws} laws (γ = {gamma})")]
    BadDraft {
        /// Tokens proposed.
        tokens: usize,
        /// Laws returned.
        laws: usize,
        /// The round's γ.
        gamma: usize,
    },
    /// A drafter's tree exceeds the round's bounds (depth γ,
    /// [`crate::TreeConfig::max_nodes`]).
    #[error("drafter returned a tree of {nodes} nodes and depth {depth} (at most {max_nodes} nodes, depth γ = {gamma})")]
    BadTree {
        /// Nodes proposed.
        nodes: usize,
        /// Its depth.
        depth: usize,
        /// The node bound.
        max_nodes: usize,
        /// The round's γ.
        gamma: usize,
    },
    /// Building or walking a draft tree failed (a broken rollback).
    #[error("draft tree: {0}")]
    DraftTree(#[from] zapspec_core::DraftTreeError),
    /// The committed matcher refused a token the loop produced (a bug in a
    /// `Constraint` whose mask and `advance` disagree).
    #[error("constraint refused a token the loop produced: {0}")]
    Rejected(#[from] Rejected),
    /// Rolling the matcher back failed.
    #[error("constraint rollback: {0}")]
    Rollback(#[from] RollbackError),
    #[error(
        "position {position}: the constraint allows no token (a dead end) but is not finished"
    )]
    /// The matcher allows no token and is not finished.
    DeadEnd {
        /// Number of committed tokens.
        position: usize,
    },
    #[error("position {position}: the {what} law has no mass on the allowed tokens")]
    /// A target or draft law puts no mass on the allowed tokens.
    EmptySupport {
        /// Number of committed tokens.
        position: usize,
        /// Which law (`"target"`, `"draft"`, …).
        what: &'static str,
    },
    #[error("vocabulary mismatch: {what} has {got} tokens, the constraint {want}")]
    /// A model and the constraint disagree on the vocabulary size.
    VocabMismatch {
        /// Which model.
        what: &'static str,
        /// Its vocabulary size.
        got: usize,
        /// The constraint's.
        want: usize,
    },
    #[error("no sequence finished within {max_tokens} tokens")]
    /// The length cap of [`crate::SpecConfig`] was reached where a complete
    /// member is needed ([`crate::SpeculativeDecoder::sample_counts`]);
    /// `generate` returns the tokens with [`crate::StopReason::MaxTokens`].
    TooLong {
        /// The cap.
        max_tokens: usize,
    },
    /// A [`crate::SpecConfig`] the loop cannot run (e.g. `gamma = 0`).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The Φ estimator failed at a verified position.
    #[error("future-validity estimate at position {position}: {source}")]
    Phi {
        /// The position (number of committed tokens before it).
        position: usize,
        /// The estimator's error.
        source: zapspec_phi::PhiError,
    },
    #[error("sampled {tokens:?}, which is not a member of the enumerated language")]
    /// A sampled sequence is not a member of the enumerated language.
    OutsideLanguage {
        /// The sequence.
        tokens: Vec<zapspec_core::TokenId>,
    },
    #[error("language too large to enumerate: more than {limit} prefixes")]
    /// Enumerating the language exceeded the prefix limit.
    TooLarge {
        /// The limit.
        limit: usize,
    },
}
