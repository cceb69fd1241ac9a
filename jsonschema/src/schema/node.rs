//! A schema object of the document parsed once: its plain keywords (a
//! [`Simple`]) and its applicators, typed. The normaliser keeps one
//! [`Node`] per schema object it meets (by address: the document is
//! borrowed for the whole compilation) and runs the disjunctive normal
//! form, `oneOf` and `if` on nodes, not on JSON maps.

use serde_json::{Map, Value};

use super::{has, kw, Simple};
use crate::error::SchemaError;
use crate::keywords::{classify, is_noop, KeywordClass};
use crate::UnknownKeywords;

/// How the document's draft reads a schema object (from `$schema`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dialect {
    /// Drafts 3–7: the siblings of `$ref` are ignored.
    pub ref_siblings_ignored: bool,
    /// Drafts 3–6: `if` is no keyword.
    pub no_if: bool,
    /// What to do with keys that are no keyword.
    pub unknown_keywords: UnknownKeywords,
}

/// `if`/`then`/`else`.
#[derive(Clone, Debug)]
pub(crate) struct Conditional<'a> {
    /// `if`
    pub test: &'a Value,
    /// `then` (`None`: `true`)
    pub then: Option<&'a Value>,
    /// `else` (`None`: `true`)
    pub otherwise: Option<&'a Value>,
}

/// One entry `name: value` of `dependencies`, `dependentRequired` or
/// `dependentSchemas` (the keyword).
#[derive(Clone, Debug)]
pub(crate) struct Dependency<'a> {
    /// Which of the three keywords.
    pub keyword: &'static str,
    /// The property whose presence triggers it.
    pub name: &'a str,
    /// The names required, or the schema applied, when it is present.
    pub value: &'a Value,
}

/// What `unevaluatedProperties` / `unevaluatedItems` (2019-09 Core
/// §9.3.2.3, §9.3.1.3) reduce to in a schema object without in-place
/// applicators, where the only keywords that evaluate properties (items)
/// are its own.
pub(crate) enum Unevaluated<'a> {
    /// Every property (item) is already evaluated: `additionalProperties`
    /// (`items`, `additionalItems`) is present. No constraint.
    NoOp,
    /// It is `additionalProperties` (`items` after `prefixItems`).
    Is(&'a Value),
}

/// How `unevaluatedProperties` or `unevaluatedItems` (`k`) of `m` reduces
/// to a plain keyword; `None` where it needs the annotations of in-place
/// applicators (or, for items, of `contains`), which are not reduced.
pub(crate) fn unevaluated<'a>(m: &'a Map<String, Value>, k: &str) -> Option<Unevaluated<'a>> {
    let v = kw(m, k)?;
    const IN_PLACE: &[&str] = &[
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
        "allOf",
        "anyOf",
        "oneOf",
        "if",
        "dependentSchemas",
        "dependencies",
    ];
    if IN_PLACE.iter().any(|a| has(m, a)) {
        return None;
    }
    match k {
        "unevaluatedProperties" if has(m, "additionalProperties") => Some(Unevaluated::NoOp),
        "unevaluatedProperties" => Some(Unevaluated::Is(v)),
        "unevaluatedItems" if has(m, "contains") => None,
        "unevaluatedItems" if has(m, "items") || has(m, "additionalItems") => {
            // 2020-12 `items` (a schema) evaluates every item after the
            // prefix; the array form of `items` with `additionalItems`
            // (2019-09) too. The array form alone leaves items after it.
            match kw(m, "items") {
                Some(Value::Array(_)) if !has(m, "additionalItems") => None,
                _ => Some(Unevaluated::NoOp),
            }
        }
        "unevaluatedItems" => Some(Unevaluated::Is(v)),
        _ => None,
    }
}

/// A schema object: plain keywords and applicators.
#[derive(Clone, Debug)]
pub(crate) struct Node<'a> {
    /// The schema object it was parsed from (its `$ref` resolves against
    /// that object's base URI).
    pub obj: &'a Map<String, Value>,
    /// Under drafts 3–7, a `$ref` replaces the whole object (its siblings
    /// are ignored): the reference, and nothing else is read.
    pub ref_only: Option<&'a str>,
    /// Keys ignored, in order (no keyword of any draft, or `if` before
    /// draft 7), for the compile report.
    pub ignored: Vec<&'a str>,
    /// The plain keywords (pointer left empty: set where the node is used).
    pub plain: Simple<'a>,
    /// `$ref`
    pub reference: Option<&'a str>,
    /// `allOf`
    pub all_of: &'a [Value],
    /// `if`/`then`/`else`
    pub conditional: Option<Conditional<'a>>,
    /// The dependency keywords' entries, in keyword then entry order.
    pub dependencies: Vec<Dependency<'a>>,
    /// `anyOf` (non-empty)
    pub any_of: Option<&'a [Value]>,
    /// `oneOf` (non-empty)
    pub one_of: Option<&'a [Value]>,
    /// `not`
    pub not: Option<&'a Value>,
    /// OpenAPI `nullable: true`
    pub nullable: bool,
}

fn array<'a>(
    m: &'a Map<String, Value>,
    k: &str,
    ptr: &str,
) -> Result<Option<&'a [Value]>, SchemaError> {
    match kw(m, k) {
        None => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(_) => Err(SchemaError::invalid(k, ptr, "must be an array")),
    }
}

fn reference<'a>(m: &'a Map<String, Value>, ptr: &str) -> Result<Option<&'a str>, SchemaError> {
    match kw(m, "$ref") {
        None => Ok(None),
        Some(Value::String(r)) => Ok(Some(r)),
        Some(_) => Err(SchemaError::invalid("$ref", ptr, "must be a string")),
    }
}

impl<'a> Node<'a> {
    /// Parses the schema object `m` at `ptr`. Refuses keywords the
    /// compiler does not implement (and, with
    /// [`UnknownKeywords::Reject`], unknown keys) and malformed values.
    pub fn parse(
        m: &'a Map<String, Value>,
        ptr: &str,
        dialect: Dialect,
    ) -> Result<Node<'a>, SchemaError> {
        let mut node = Node {
            obj: m,
            ref_only: None,
            ignored: Vec::new(),
            plain: Simple::default(),
            reference: None,
            all_of: &[],
            conditional: None,
            dependencies: Vec::new(),
            any_of: None,
            one_of: None,
            not: None,
            nullable: false,
        };
        if dialect.ref_siblings_ignored {
            if let Some(r) = reference(m, ptr)? {
                node.ref_only = Some(r);
                return Ok(node);
            }
        }
        for (k, val) in m {
            if dialect.no_if && k == "if" {
                // not a keyword of the document's draft
                node.ignored.push(k);
                continue;
            }
            match classify(k) {
                KeywordClass::Supported | KeywordClass::Annotation => {}
                KeywordClass::Unsupported => {
                    if !is_noop(k, val) && unevaluated(m, k).is_none() {
                        let reason = match k.as_str() {
                            "unevaluatedProperties" | "unevaluatedItems" => {
                                "beside in-place applicators (`$ref`, `allOf`, `anyOf`, `oneOf`, `if`, `dependentSchemas`), or (items) `contains`, whose annotations it would need"
                            }
                            _ => "keyword not implemented",
                        };
                        return Err(SchemaError::unsupported(k, ptr, reason));
                    }
                }
                KeywordClass::Unknown => match dialect.unknown_keywords {
                    UnknownKeywords::Ignore => node.ignored.push(k),
                    UnknownKeywords::Reject => {
                        return Err(SchemaError::UnknownKeyword {
                            keyword: k.clone(),
                            pointer: ptr.to_string(),
                        })
                    }
                },
            }
        }
        node.plain = Simple::parse(m, ptr)?;
        node.plain.ptr.clear();
        for k in ["unevaluatedProperties", "unevaluatedItems"] {
            if let Some(Unevaluated::Is(v)) = unevaluated(m, k) {
                if !(v.is_object() || v.is_boolean()) {
                    return Err(SchemaError::invalid(k, ptr, super::parse::schema_shape(k)));
                }
                let sub = Some(super::Sub::Schema(v));
                if k == "unevaluatedProperties" {
                    node.plain.object.additional_properties = sub;
                } else {
                    node.plain.array.items = sub;
                }
            }
        }
        node.reference = reference(m, ptr)?;
        node.all_of = array(m, "allOf", ptr)?.unwrap_or(&[]);
        if !dialect.no_if {
            node.conditional = kw(m, "if").map(|test| Conditional {
                test,
                then: kw(m, "then"),
                otherwise: kw(m, "else"),
            });
        }
        for keyword in ["dependencies", "dependentRequired", "dependentSchemas"] {
            let Some(deps) = kw(m, keyword) else { continue };
            let deps = deps
                .as_object()
                .ok_or_else(|| SchemaError::invalid(keyword, ptr, "must be an object"))?;
            node.dependencies
                .extend(deps.iter().map(|(name, value)| Dependency {
                    keyword,
                    name,
                    value,
                }));
        }
        for (k, slot) in [("anyOf", &mut node.any_of), ("oneOf", &mut node.one_of)] {
            *slot = array(m, k, ptr)?;
            if slot.is_some_and(<[Value]>::is_empty) {
                return Err(SchemaError::invalid(k, ptr, "must not be empty"));
            }
        }
        node.not = kw(m, "not");
        node.nullable = match kw(m, "nullable") {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(_) => return Err(SchemaError::invalid("nullable", ptr, "must be a boolean")),
        };
        Ok(node)
    }
}
