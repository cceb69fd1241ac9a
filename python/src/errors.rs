//! Rust errors as the package's own Python exceptions.
//!
//! The exception classes live in Python (`zapspec/errors.py`), so that they
//! can inherit from both `zapspec.ZapspecError` and the builtin they
//! refine (`ValueError`, `RuntimeError`); this module imports them on
//! first use and raises them with their structured fields (`kind`,
//! `pointer`, `position`, `limit`). A Rust panic never crosses into
//! Python: [`guard`] turns it into `zapspec.InternalError`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule};

use zapspec_earley::EarleyError;
use zapspec_grammar::GrammarError;
use zapspec_jsonschema::SchemaError;
use zapspec_structtag::StructTagError;
use zapspec_vocab::VocabError;

/// The structured fields of a raised exception (all optional but the
/// message and the class).
#[derive(Default)]
pub(crate) struct Fields {
    /// A short machine-readable category (`"unsupported `uniqueItems`"`,
    /// `"syntax"`, `"nfa_bytes"`, ...).
    pub kind: Option<String>,
    /// JSON pointer into the schema (RFC 6901, without `#`).
    pub pointer: Option<String>,
    /// `(line, column)` in a grammar text, 1-based.
    pub position: Option<(usize, usize)>,
    /// The limit's name, for `LimitExceeded`.
    pub limit: Option<String>,
}

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// An instance of `zapspec.errors.<class>` with `message` and `fields`.
pub(crate) fn raise(py: Python<'_>, class: &str, message: impl Into<String>, f: Fields) -> PyErr {
    let message = message.into();
    let build = || -> PyResult<PyErr> {
        let module =
            ERRORS.get_or_try_init(py, || py.import("zapspec.errors").map(|m| m.unbind()))?;
        let cls = module.bind(py).getattr(class)?;
        let kw = PyDict::new(py);
        kw.set_item("kind", f.kind.clone())?;
        kw.set_item("pointer", f.pointer.clone())?;
        kw.set_item("position", f.position)?;
        kw.set_item("limit", f.limit.clone())?;
        let value = cls.call((message.clone(),), Some(&kw))?;
        Ok(PyErr::from_value(value))
    };
    build().unwrap_or_else(|e| {
        PyRuntimeError::new_err(format!("{class}: {message} (and raising it failed: {e})"))
    })
}

/// A refused JSON Schema: `SchemaError`, or `LimitExceeded` for a limit.
pub(crate) fn schema_error(py: Python<'_>, e: &SchemaError) -> PyErr {
    let pointer = Some(e.pointer().to_string());
    match e {
        SchemaError::LimitExceeded { limit, .. } => raise(
            py,
            "LimitExceeded",
            e.to_string(),
            Fields {
                kind: Some(format!("limit {limit}")),
                pointer,
                limit: Some(limit.name().to_string()),
                ..Fields::default()
            },
        ),
        _ => raise(
            py,
            "SchemaError",
            e.to_string(),
            Fields {
                kind: Some(e.category()),
                pointer,
                ..Fields::default()
            },
        ),
    }
}

/// A grammar text or IR the parser or transforms refuse.
pub(crate) fn grammar_error(py: Python<'_>, e: &GrammarError) -> PyErr {
    let position = e.pos().map(|p| (p.line, p.column));
    let kind = match e {
        GrammarError::Syntax { .. } => "syntax",
        GrammarError::UndefinedNonterminal { .. } => "undefined nonterminal",
        GrammarError::TooDeep { .. } => "too deep",
        GrammarError::Regex { .. } => "regex",
        GrammarError::EmptyLanguage { .. } => "empty language",
        GrammarError::LimitExceeded { .. } => "limit",
        GrammarError::Invalid { .. } => "invalid",
    };
    if let GrammarError::LimitExceeded { limit, .. } = e {
        return raise(
            py,
            "LimitExceeded",
            e.to_string(),
            Fields {
                kind: Some(format!("limit {limit}")),
                position,
                limit: Some(limit.name().to_string()),
                ..Fields::default()
            },
        );
    }
    raise(
        py,
        "GrammarError",
        e.to_string(),
        Fields {
            kind: Some(kind.to_string()),
            position,
            ..Fields::default()
        },
    )
}

/// An EBNF text `Grammar.from_ebnf` refuses, in XGrammar's wording where
/// the parser's error is one XGrammar also reports (`EBNF parser error at
/// line 1, column 21: …`, `Rule "x" is not defined`); kind and position as
/// [`grammar_error`]'s.
pub(crate) fn ebnf_error(py: Python<'_>, e: &GrammarError) -> PyErr {
    let message = match e {
        GrammarError::Syntax {
            line,
            column,
            reason,
        } => format!("EBNF parser error at line {line}, column {column}: {reason}"),
        GrammarError::UndefinedNonterminal { name, line, column } => {
            format!(
                "EBNF parser error at line {line}, column {column}: Rule \"{name}\" is not defined"
            )
        }
        _ => return grammar_error(py, e),
    };
    let kind = match e {
        GrammarError::Syntax { .. } => "syntax",
        _ => "undefined nonterminal",
    };
    raise(
        py,
        "GrammarError",
        message,
        Fields {
            kind: Some(kind.to_string()),
            position: e.pos().map(|p| (p.line, p.column)),
            ..Fields::default()
        },
    )
}

/// The engine refusing a grammar (or a checked matcher operation).
pub(crate) fn earley_error(py: Python<'_>, e: &EarleyError) -> PyErr {
    match e {
        EarleyError::LimitExceeded { limit, place, .. } => raise(
            py,
            "LimitExceeded",
            e.to_string(),
            Fields {
                kind: Some(format!("limit {limit}")),
                pointer: Some(place.clone()),
                limit: Some(limit.name().to_string()),
                ..Fields::default()
            },
        ),
        EarleyError::Terminal { .. } => raise(py, "GrammarError", e.to_string(), kind("terminal")),
        EarleyError::EmptyLanguage { .. } => {
            raise(py, "GrammarError", e.to_string(), kind("empty language"))
        }
        EarleyError::Invalid { .. } => raise(py, "GrammarError", e.to_string(), kind("invalid")),
        EarleyError::Rejected(_) => raise(py, "GrammarError", e.to_string(), kind("rejected")),
    }
}

/// A tokenizer that cannot be loaded.
pub(crate) fn vocab_error(py: Python<'_>, e: &VocabError) -> PyErr {
    let k = match e {
        VocabError::Io { .. } => "io",
        VocabError::Format { .. } => "format",
        VocabError::Tiktoken(_) => "tiktoken",
        VocabError::NoEos { .. } => "no eos",
        VocabError::UnknownToken { .. } => "unknown token",
        VocabError::Encode(_) => "encode",
    };
    raise(py, "TokenizerError", e.to_string(), kind(k))
}

/// A refused structural tag: `InvalidStructuralTagError` (with XGrammar's
/// message prefix, which its tests match) at the tag's JSON pointer; a
/// refused JSON Schema body is the schema compiler's error, its pointer
/// the body's followed by the one inside the schema.
pub(crate) fn structural_tag_error(py: Python<'_>, e: &StructTagError) -> PyErr {
    let pointer = Some(e.pointer().to_string());
    match e {
        StructTagError::Schema { pointer, source } => {
            let err = schema_error(py, source);
            let full = format!("{pointer}{}", source.pointer());
            let _ = err.value(py).setattr("pointer", full);
            err
        }
        StructTagError::Grammar { source, .. } => grammar_error(py, source),
        StructTagError::Unsupported { .. } => raise(
            py,
            "InvalidStructuralTagError",
            format!("Invalid structural tag error: {e}"),
            Fields {
                kind: Some("unsupported".into()),
                pointer,
                ..Fields::default()
            },
        ),
        StructTagError::Invalid { .. } | StructTagError::Regex { .. } => raise(
            py,
            "InvalidStructuralTagError",
            format!("Invalid structural tag error: {e}"),
            Fields {
                kind: Some("invalid".into()),
                pointer,
                ..Fields::default()
            },
        ),
    }
}

/// Text that is not JSON (`what`: "the schema", "the metadata", …):
/// `InvalidJSONError` with the parser's line and column.
pub(crate) fn invalid_json(py: Python<'_>, what: &str, e: &serde_json::Error) -> PyErr {
    raise(
        py,
        "InvalidJSONError",
        format!("{what} is not valid JSON: {e}"),
        Fields {
            kind: Some("invalid json".into()),
            position: Some((e.line(), e.column())),
            ..Fields::default()
        },
    )
}

/// Fields with only a kind.
pub(crate) fn kind(k: &str) -> Fields {
    Fields {
        kind: Some(k.to_string()),
        ..Fields::default()
    }
}

/// Runs `f`, turning a panic into `zapspec.InternalError` (a panic is a
/// bug of this package; the message asks for a report).
pub(crate) fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string());
            Err(Python::attach(|py| {
                raise(
                    py,
                    "InternalError",
                    format!("internal error in zapspec (please report it): {what}"),
                    kind("panic"),
                )
            }))
        }
    }
}
