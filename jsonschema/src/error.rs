//! Errors of the JSON Schema compiler. Every variant of [`SchemaError`]
//! carries the JSON pointer (RFC 6901, as a URI fragment without the `#`)
//! of the schema location it is about. The crate-internal builders of
//! regexes and automata fail with the typed reasons below
//! ([`PatternError`], [`NumberError`], [`KeyError`], [`Unsat`]), which the
//! compiler turns into a [`SchemaError`] whose `reason` is their message.

use serde_json::{Number, Value};
use thiserror::Error;

use zapspec_grammar::GrammarError;
use zapspec_grammar::Limit;

/// Why a schema did not compile.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SchemaError {
    /// A keyword (or a use of a keyword) the compiler does not implement.
    /// Never silently ignored: a grammar that skipped it could accept
    /// invalid instances.
    #[error("unsupported keyword `{keyword}` at `{pointer}`: {reason}")]
    Unsupported {
        /// The keyword refused.
        keyword: String,
        /// JSON pointer of the schema that uses it.
        pointer: String,
        /// Why (which use of the keyword is not implemented).
        reason: String,
    },

    /// A key that is no JSON Schema keyword, refused because the options
    /// say [`super::UnknownKeywords::Reject`].
    #[error("unknown keyword `{keyword}` at `{pointer}`")]
    UnknownKeyword {
        /// The unknown key.
        keyword: String,
        /// JSON pointer of the schema that has it.
        pointer: String,
    },

    /// A `$ref` that cannot be resolved inside the document.
    #[error("bad $ref `{reference}` at `{pointer}`: {reason}")]
    BadRef {
        /// The `$ref` value.
        reference: String,
        /// JSON pointer of the schema holding the `$ref`.
        pointer: String,
        /// Why it does not resolve.
        reason: String,
    },

    /// A keyword whose value has the wrong shape (e.g. `minLength: -1`).
    #[error("{keyword} {reason} (invalid value at `{pointer}`)")]
    Invalid {
        /// The keyword whose value is malformed.
        keyword: String,
        /// JSON pointer of the schema that has it.
        pointer: String,
        /// What shape the value must have.
        reason: String,
    },

    /// No JSON value satisfies the schema (e.g. `minimum` > `maximum`, a
    /// required property whose schema is `false`). `pointer` is the first
    /// contradiction found.
    #[error("unsatisfiable schema at `{pointer}`: {reason}")]
    Unsatisfiable {
        /// JSON pointer of the first contradiction.
        pointer: String,
        /// The contradiction.
        reason: String,
    },

    /// A resource limit of [`super::JsonSchemaOptions`] (or of a terminal's
    /// automaton, [`zapspec_grammar::RegexLimits`]) was exceeded: the schema is
    /// refused instead of exhausting memory, stack or time.
    #[error("limit {limit} ({max}) exceeded at `{pointer}`: {detail}")]
    LimitExceeded {
        /// Which limit.
        limit: Limit,
        /// Its configured value.
        max: usize,
        /// JSON pointer of the schema where it was hit.
        pointer: String,
        /// What exceeded it.
        detail: String,
    },

    /// The grammar would exceed a size limit of [`super::JsonSchemaOptions`].
    #[error("schema too large at `{pointer}`: {reason}")]
    TooLarge {
        /// JSON pointer of the schema that exceeds the limit.
        pointer: String,
        /// Which limit, and by how much.
        reason: String,
    },
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
            | SchemaError::TooLarge { pointer, .. }
            | SchemaError::LimitExceeded { pointer, .. } => pointer,
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
            SchemaError::LimitExceeded { limit, .. } => format!("limit {limit}"),
        }
    }

    pub(crate) fn unsupported(keyword: &str, pointer: &str, reason: impl Into<String>) -> Self {
        SchemaError::Unsupported {
            keyword: keyword.into(),
            pointer: pointer.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn limit(
        limit: Limit,
        max: usize,
        pointer: &str,
        detail: impl Into<String>,
    ) -> Self {
        SchemaError::LimitExceeded {
            limit,
            max,
            pointer: pointer.into(),
            detail: detail.into(),
        }
    }

    pub(crate) fn invalid(keyword: &str, pointer: &str, reason: impl Into<String>) -> Self {
        SchemaError::Invalid {
            keyword: keyword.into(),
            pointer: pointer.into(),
            reason: reason.into(),
        }
    }

    /// The value `v` of a count keyword (`minItems` …) is no non-negative
    /// integer. The wording is XGrammar's (its tests match it): "must be
    /// an integer", or "must be a non-negative integer" for a negative
    /// one.
    pub(crate) fn bad_count(keyword: &str, pointer: &str, v: &Value) -> Self {
        let integral = v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0);
        let negative = v.as_f64().is_some_and(|f| f < 0.0);
        let reason = match (integral, negative) {
            (true, true) => "must be a non-negative integer",
            (true, false) => "must be a non-negative integer below 10^18",
            _ => "must be an integer",
        };
        SchemaError::invalid(keyword, pointer, reason)
    }

    /// The value `v` of a numeric keyword is no number (with XGrammar's
    /// phrase, "Value must be a number", which its tests match).
    pub(crate) fn not_a_number(keyword: &str, pointer: &str, v: &Value) -> Self {
        let what = match v {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
            Value::Number(_) => "a number",
        };
        SchemaError::invalid(
            keyword,
            pointer,
            format!("must be a number (Value must be a number, not {what})"),
        )
    }
}

/// Why a `pattern` (or a `format`'s regex) has no exact translation into a
/// regex terminal over canonical JSON string encodings (module `strings`).
/// The compiler reports it as [`SchemaError::Unsupported`] with this
/// message as the reason.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub(crate) enum PatternError {
    /// A literal of the parsed regex that is not UTF-8.
    #[error("non-UTF-8 literal")]
    NonUtf8Literal,
    /// A byte class (`(?-u:…)`), which has no meaning over characters.
    #[error("byte classes are not supported")]
    ByteClass,
    /// A look-around left inside the HIR after anchors were resolved.
    #[error("a look-around assertion inside the pattern")]
    LookInside,
    /// The pattern ends in an unfinished escape.
    #[error("pattern ends with a backslash")]
    TrailingBackslash,
    /// `\D`, `\W` or `\S` inside `[…]` (the escape is the field).
    #[error("negated class escape \\{0} inside a character class")]
    NegatedClassEscapeInClass(char),
    /// `\b` or `\B` outside a class.
    #[error("word boundaries (\\b, \\B) are not supported")]
    WordBoundary,
    /// `\1`…`\9` or `\k<name>`.
    #[error("backreferences are not supported")]
    Backreference,
    /// `\c` not followed by an ASCII letter.
    #[error("bad \\c escape")]
    BadControlEscape,
    /// An escape of a letter or digit that ECMA-262 does not define.
    #[error("unknown escape \\{0}")]
    UnknownEscape(char),
    /// `(?=…)`, `(?!…)`, `(?<=…)` or `(?<!…)`.
    #[error("look-around groups are not supported")]
    LookAroundGroup,
    /// `(?` followed by neither `:`, `<name>` nor a look-around: an
    /// inline flag setting such as `(?i)`, which ECMA-262 does not have
    /// (its modifier groups `(?i:…)` are read); XGrammar's dialect only.
    #[error("unsupported group modifier `(?` (only `(?:`, `(?<name>` and `(?ims-ims:` groups)")]
    GroupModifier,
    /// A `[` without its `]`.
    #[error("unterminated character class")]
    UnterminatedClass,
    /// A `)` that closes no group (the offset is in characters).
    #[error("Unmatched ')' at offset {offset}")]
    UnmatchedParen {
        /// Where the `)` is.
        offset: usize,
    },
    /// A `(` without its `)`.
    #[error("The parenthesis is not closed.")]
    UnclosedGroup,
    /// `[]` under [`super::RegexDialect::Strict`] (ECMA-262 reads a class
    /// that matches nothing).
    #[error("Empty character class is not allowed in regex.")]
    EmptyClass,
    /// A `{` that starts no quantifier (`a{,3}`, `a{`) under
    /// [`super::RegexDialect::Strict`] (Annex B reads it as literal text).
    #[error(
        "Invalid repetition at offset {offset}: `{{` starts no quantifier {{n}}, {{n,}} or {{n,m}}"
    )]
    InvalidRepetition {
        /// Where the `{` is (in characters).
        offset: usize,
    },
    /// A quantifier after a quantifier (`a++`, `a*{2}`, `a+??`): ECMA-262's
    /// "nothing to repeat" (only one `?` may follow, for laziness).
    #[error("Two consecutive repetition modifiers are not allowed. (a quantifier with nothing to repeat)")]
    NothingToRepeat,
    /// `--` inside a character class after a range or a class escape (not
    /// at its start, nor as a range ending in `-` such as `+--`).
    #[error("`--` inside a character class")]
    HyphenRunInClass,
    /// `regex-syntax` rejected the rewritten pattern; the field is the last
    /// line of its message.
    #[error("{0}")]
    Parse(String),
    /// Distributing alternations around `^`/`$` would give more than 256
    /// top-level alternatives.
    #[error("too many alternatives around anchors")]
    TooManyAnchorAlternatives,
    /// An anchor or look-around inside a repetition.
    #[error("anchors or look-arounds inside a repetition are not supported")]
    AnchorInRepetition,
    /// An anchor or look-around that is neither leading `^` nor trailing `$`
    /// of a top-level alternative.
    #[error("anchors or look-arounds in the middle of the pattern are not supported")]
    AnchorInMiddle,
    /// Length bounds that the pattern neither implies nor contradicts, on a
    /// pattern that is no repetition of one class (needs the key automaton).
    #[error("a pattern/format combined with minLength/maxLength that it does not imply")]
    LengthNotImplied,
    /// A length bound above `u32::MAX` (the limit of a HIR repetition).
    #[error("length bound too large")]
    LengthTooLarge,
}

/// Why numeric bounds or a `multipleOf` have no exact regex (module
/// `numbers`). Reported as [`SchemaError::Unsupported`] with this message.
#[derive(Clone, Debug, PartialEq, Error)]
pub(crate) enum NumberError {
    /// A float bound of an `integer` that is not finite or has magnitude
    /// `1e30` or more.
    #[error("bound out of range")]
    IntegerBoundOutOfRange,
    /// A finite float bound whose integer part exceeds `u128`.
    #[error("bound {0} out of range")]
    BoundOutOfRange(f64),
    /// A NaN or infinite bound.
    #[error("bound {0} is not finite")]
    BoundNotFinite(f64),
    /// `multipleOf` zero or negative.
    #[error("multipleOf must be greater than 0")]
    MultipleNotPositive,
    /// An integer `multipleOf` above `max` (the grammar has one state per
    /// residue).
    #[error("multipleOf above {max}")]
    MultipleTooLarge {
        /// The largest supported integer `multipleOf`.
        max: u64,
    },
    /// A `multipleOf` that is neither `10^-d` nor an integer.
    #[error("multipleOf {0} is neither a power of ten at most 1 nor an integer")]
    MultipleUnsupported(Number),
}

/// Why a key pattern or the product automaton of key patterns (module
/// `keys`) could not be built. Reported as [`SchemaError::Unsupported`].
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub(crate) enum KeyError {
    /// The pattern has no exact translation.
    #[error(transparent)]
    Pattern(#[from] PatternError),
    /// The translated regex did not compile to a byte DFA.
    #[error(transparent)]
    Dfa(#[from] GrammarError),
    /// More patterns than the 64 bits of a region mask.
    #[error("more than 64 patterns")]
    TooManyPatterns,
    /// The product automaton would exceed `limit` states.
    #[error("the key automaton of patternProperties exceeds {limit} states")]
    TooManyStates {
        /// The state limit ([`super::keys::MAX_KEY_STATES`]).
        limit: usize,
    },
    /// One pattern's (lazily built) automaton would exceed `limit` states.
    #[error("the automaton of pattern `{pattern}` exceeds {limit} states")]
    PatternStates {
        /// The pattern as written in the schema.
        pattern: String,
        /// The state limit (`RegexLimits::dfa_states`).
        limit: usize,
    },
}

impl KeyError {
    /// The schema error for this failure at `ptr` on keyword `kw`: a
    /// limit exceeded (an automaton's size or states) stays a typed
    /// [`SchemaError::LimitExceeded`] at `ptr`; the rest are
    /// [`SchemaError::Unsupported`] with `context` before the reason.
    pub(crate) fn into_schema(self, kw: &str, ptr: &str, context: &str) -> SchemaError {
        match self {
            KeyError::Dfa(GrammarError::LimitExceeded {
                limit,
                max,
                place,
                detail,
            }) => SchemaError::limit(limit, max, ptr, format!("{kw}: {place}: {detail}")),
            KeyError::TooManyStates { limit } => SchemaError::limit(
                Limit::DfaStates,
                limit,
                ptr,
                format!("{kw}: {}", KeyError::TooManyStates { limit }),
            ),
            KeyError::PatternStates { pattern, limit } => SchemaError::limit(
                Limit::DfaStates,
                limit,
                ptr,
                format!("{kw}: {}", KeyError::PatternStates { pattern, limit }),
            ),
            other => SchemaError::unsupported(kw, ptr, format!("{context}{other}")),
        }
    }
}

/// What a step that may find a contradiction produced: a value, or the
/// [`Unsat`] reason no instance satisfies the schema (a contradiction is
/// not an error: the branch is dropped). Errors proper are the
/// [`SchemaError`] around it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Sat<T> {
    /// Satisfiable (as far as the step knows).
    Yes(T),
    /// Contradictory, with the reason.
    No(Unsat),
}

/// Why a conjunction of schemas admits no value. Not a refusal: the branch
/// is dropped and the reason recorded, and only when every branch is
/// dropped does it become [`SchemaError::Unsatisfiable`] with this message.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub(crate) enum Unsat {
    /// A required property whose (combined) schema is `false`.
    #[error("required property `{0}` has schema false")]
    RequiredFalse(String),
    /// A required, undeclared property that the pattern/additional
    /// property schemas forbid.
    #[error("required property `{0}` is not allowed by patternProperties/additionalProperties")]
    RequiredNotAllowed(String),
    /// A required property whose name `propertyNames` rejects.
    #[error("required property `{0}` is not allowed by propertyNames")]
    NameRejected(String),
    /// `allOf` members whose `type`s do not intersect.
    #[error("allOf of disjoint types {0} and {1}")]
    DisjointTypes(Value, Value),
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
