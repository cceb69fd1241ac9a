//! Errors of the JSON Schema compiler. Every variant carries the JSON
//! pointer (RFC 6901, as a URI fragment without the `#`) of the schema
//! location it is about.

use thiserror::Error;

/// Why a schema did not compile.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SchemaError {
    /// A keyword (or a use of a keyword) the compiler does not implement.
    /// Never silently ignored: a grammar that skipped it could accept
    /// invalid instances.
    #[error("unsupported keyword `{keyword}` at `{pointer}`: {reason}")]
    Unsupported {
        keyword: String,
        pointer: String,
        reason: String,
    },

    /// A key that is no JSON Schema keyword, refused because the options
    /// say [`super::UnknownKeywords::Reject`].
    #[error("unknown keyword `{keyword}` at `{pointer}`")]
    UnknownKeyword { keyword: String, pointer: String },

    /// A `$ref` that cannot be resolved inside the document.
    #[error("bad $ref `{reference}` at `{pointer}`: {reason}")]
    BadRef {
        reference: String,
        pointer: String,
        reason: String,
    },

    /// A keyword whose value has the wrong shape (e.g. `minLength: -1`).
    #[error("invalid value of `{keyword}` at `{pointer}`: {reason}")]
    Invalid {
        keyword: String,
        pointer: String,
        reason: String,
    },

    /// No JSON value satisfies the schema (e.g. `minimum` > `maximum`, a
    /// required property whose schema is `false`). `pointer` is the first
    /// contradiction found.
    #[error("unsatisfiable schema at `{pointer}`: {reason}")]
    Unsatisfiable { pointer: String, reason: String },

    /// The grammar would exceed a size limit of [`super::JsonSchemaOptions`].
    #[error("schema too large at `{pointer}`: {reason}")]
    TooLarge { pointer: String, reason: String },
}

impl SchemaError {
    /// The JSON pointer of the schema location.
    pub fn pointer(&self) -> &str {
        match self {
            SchemaError::Unsupported { pointer, .. }
            | SchemaError::UnknownKeyword { pointer, .. }
            | SchemaError::BadRef { pointer, .. }
            | SchemaError::Invalid { pointer, .. }
            | SchemaError::Unsatisfiable { pointer, .. }
            | SchemaError::TooLarge { pointer, .. } => pointer,
        }
    }

    /// A short name of the variant (for census tables): the keyword for
    /// `Unsupported`, else the variant.
    pub fn category(&self) -> String {
        match self {
            SchemaError::Unsupported { keyword, .. } => format!("unsupported `{keyword}`"),
            SchemaError::UnknownKeyword { .. } => "unknown keyword".into(),
            SchemaError::BadRef { .. } => "bad $ref".into(),
            SchemaError::Invalid { keyword, .. } => format!("invalid `{keyword}`"),
            SchemaError::Unsatisfiable { .. } => "unsatisfiable".into(),
            SchemaError::TooLarge { .. } => "too large".into(),
        }
    }

    pub(crate) fn unsupported(keyword: &str, pointer: &str, reason: impl Into<String>) -> Self {
        SchemaError::Unsupported {
            keyword: keyword.into(),
            pointer: pointer.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn invalid(keyword: &str, pointer: &str, reason: impl Into<String>) -> Self {
        SchemaError::Invalid {
            keyword: keyword.into(),
            pointer: pointer.into(),
            reason: reason.into(),
        }
    }
}

/// Appends one reference token to a JSON pointer, escaping `~` and `/`.
pub(crate) fn push_ptr(ptr: &str, token: &str) -> String {
    let mut s = String::with_capacity(ptr.len() + token.len() + 1);
    s.push_str(ptr);
    s.push('/');
    for c in token.chars() {
        match c {
            '~' => s.push_str("~0"),
            '/' => s.push_str("~1"),
            c => s.push(c),
        }
    }
    s
}
