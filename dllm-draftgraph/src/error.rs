//! Typed errors of the crate: bad configuration, bad graphs, model failures.

use zapspec_core::ModelError;

/// Everything that can go wrong in decoding, drafting, calibration or graph
/// (de)serialisation. Bad input is reported here, never by a panic.
#[derive(Debug, thiserror::Error)]
pub enum SpiffyError {
    /// The model failed (bad tokens, context overflow, backend error).
    #[error("model: {0}")]
    Model(#[from] ModelError),
    /// A configuration value outside its domain.
    #[error("bad configuration: {field} {reason}")]
    Config {
        /// The offending field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The model returned marginals of the wrong shape.
    #[error("marginals of shape {rows}x{cols}, expected {want_rows}x{want_cols}")]
    Shape {
        /// Rows returned.
        rows: usize,
        /// Columns returned.
        cols: usize,
        /// Rows expected (block length).
        want_rows: usize,
        /// Columns expected (vocabulary size).
        want_cols: usize,
    },
    /// A marginal row with no finite logit outside the mask token.
    #[error("position {offset} of the block has no token with finite probability")]
    EmptySupport {
        /// Offset of the position inside the block.
        offset: usize,
    },
    /// A draft graph that is not well formed.
    #[error("bad draft graph: {0}")]
    Graph(String),
    /// A draft formula that is not well formed (ranks start at 1, one
    /// token per position rank).
    #[error("bad draft formula: {0}")]
    Formula(String),
    /// A graph file that cannot be parsed.
    #[error("draft graph JSON: {0}")]
    Json(#[from] serde_json::Error),
}
