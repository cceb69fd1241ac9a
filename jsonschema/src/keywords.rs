//! Which JSON Schema keywords the compiler implements, which it accepts as
//! annotations, and which it refuses.
//!
//! JSON Schema (2020-12 Core §4.3.1, and every earlier draft) says a
//! validator *ignores* keywords it does not know. We follow the same
//! three-way split as llguidance's JSON compiler:
//!
//! * [`SUPPORTED`]: keywords with validation semantics that the compiler
//!   implements exactly (or, for `oneOf`, as documented in the module docs).
//! * [`ANNOTATIONS`]: keywords of some draft (or OpenAPI) that never affect
//!   validity; accepted silently.
//! * [`UNSUPPORTED`]: keywords of some draft that *do* affect validity but
//!   are not implemented; they are a [`SchemaError::Unsupported`] unless their
//!   value is a no-op (see [`is_noop`]).
//! * anything else is not a JSON Schema keyword at all (vendor extensions
//!   such as `x-foo`, `javaType`, typos such as `minLenght`); validators
//!   ignore those, so by default the compiler does too but lists each one
//!   in the [`super::CompileReport`]. [`super::UnknownKeywords::Reject`]
//!   turns them into errors.
//!
//! [`SchemaError::Unsupported`]: super::SchemaError::Unsupported

use serde_json::Value;

/// Keywords with validation semantics that the compiler implements.
pub const SUPPORTED: &[&str] = &[
    "type",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "items",
    "prefixItems",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "nullable",
    "not",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "if",
    // containers of subschemas reached only through `$ref`
    "$defs",
    "definitions",
];

/// Keywords of JSON Schema drafts 3–2020-12 and OpenAPI 3.0 that only
/// annotate.
pub const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "id",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$vocabulary",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "example",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
    "discriminator",
    "xml",
    "externalDocs",
    // `then`/`else` without `if` have no effect (2020-12 Core §10.2.2);
    // with `if` present, the normaliser reads them.
    "then",
    "else",
];

/// Keywords of some draft that affect validity but are not implemented.
pub const UNSUPPORTED: &[&str] = &[
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef",
    "contentSchema",
    // draft 3
    "extends",
    "disallow",
    "divisibleBy",
];

/// The class of a keyword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeywordClass {
    /// Affects validity and is compiled.
    Supported,
    /// Only annotates ([`ANNOTATIONS`]); ignored.
    Annotation,
    /// Affects validity but is not implemented ([`UNSUPPORTED`]); refused.
    Unsupported,
    /// No keyword of any draft; see [`UnknownKeywords`](super::UnknownKeywords).
    Unknown,
}

/// Classifies a key of a schema object.
///
/// ```
/// use zapspec_jsonschema::keywords::{classify, KeywordClass};
///
/// assert_eq!(classify("minLength"), KeywordClass::Supported);
/// assert_eq!(classify("title"), KeywordClass::Annotation);
/// assert_eq!(classify("unevaluatedItems"), KeywordClass::Unsupported);
/// assert_eq!(classify("x-foo"), KeywordClass::Unknown);
/// ```
pub fn classify(key: &str) -> KeywordClass {
    if SUPPORTED.contains(&key) {
        KeywordClass::Supported
    } else if ANNOTATIONS.contains(&key) {
        KeywordClass::Annotation
    } else if UNSUPPORTED.contains(&key) {
        KeywordClass::Unsupported
    } else {
        KeywordClass::Unknown
    }
}

/// Whether an unsupported keyword's value has no effect on validity, so it
/// can be dropped exactly (`uniqueItems: false`, `patternProperties: {}`,
/// `multipleOf: 1` on integers is handled by the number compiler, ...).
///
/// ```
/// use serde_json::json;
/// use zapspec_jsonschema::keywords::is_noop;
///
/// assert!(is_noop("uniqueItems", &json!(false)));
/// assert!(!is_noop("uniqueItems", &json!(true)));
/// ```
pub fn is_noop(key: &str, value: &Value) -> bool {
    match key {
        "uniqueItems" => value == &Value::Bool(false),
        "patternProperties" | "dependencies" | "dependentRequired" | "dependentSchemas" => {
            value.as_object().is_some_and(|m| m.is_empty())
        }
        "unevaluatedProperties" | "unevaluatedItems" | "contentSchema" => {
            value == &Value::Bool(true) || value.as_object().is_some_and(|m| m.is_empty())
        }
        _ => false,
    }
}
