//! The one error type of the crate.

use zapspec_grammar::GrammarError;
use zapspec_jsonschema::SchemaError;

/// Why a structural tag was refused. Every variant names the place: a
/// JSON pointer (RFC 6901, without `#`) into the structural tag as given.
#[derive(Debug, thiserror::Error)]
pub enum StructTagError {
    /// Not a structural tag: a missing or ill-typed field, an unknown
    /// format type, a tag no trigger dispatches to, a trigger that is a
    /// prefix of another, … (XGrammar's `InvalidStructuralTagError`).
    #[error("{message} (at `{pointer}`)")]
    Invalid {
        /// Where, in the structural tag.
        pointer: String,
        /// What is wrong.
        message: String,
    },
    /// A valid format that this compiler does not build (token-level
    /// formats, token budgets, non-JSON parameter styles).
    #[error("unsupported: {message} (at `{pointer}`)")]
    Unsupported {
        /// Where, in the structural tag.
        pointer: String,
        /// What is not supported, and why.
        message: String,
    },
    /// A `json_schema` body the JSON Schema compiler refused.
    #[error("json_schema at `{pointer}`: {source}")]
    Schema {
        /// The `json_schema` format, in the structural tag.
        pointer: String,
        /// The compiler's error (its own pointer is into the schema).
        #[source]
        source: SchemaError,
    },
    /// A `grammar` body that does not parse.
    #[error("grammar at `{pointer}`: {source}")]
    Grammar {
        /// The `grammar` or `regex` format, in the structural tag.
        pointer: String,
        /// The parser's error (line and column in the grammar text).
        #[source]
        source: GrammarError,
    },
    /// A `regex` body that is not a regex (ECMAScript syntax).
    #[error("regex at `{pointer}`: {message}")]
    Regex {
        /// The `regex` format, in the structural tag.
        pointer: String,
        /// Why the pattern is refused.
        message: String,
    },
}

impl StructTagError {
    /// The JSON pointer of the refused part of the structural tag.
    pub fn pointer(&self) -> &str {
        match self {
            Self::Invalid { pointer, .. }
            | Self::Unsupported { pointer, .. }
            | Self::Schema { pointer, .. }
            | Self::Grammar { pointer, .. }
            | Self::Regex { pointer, .. } => pointer,
        }
    }

    pub(crate) fn invalid(pointer: &str, message: impl Into<String>) -> Self {
        Self::Invalid {
            pointer: pointer.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn unsupported(pointer: &str, message: impl Into<String>) -> Self {
        Self::Unsupported {
            pointer: pointer.to_string(),
            message: message.into(),
        }
    }
}
