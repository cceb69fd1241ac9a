//! A schema object of the document parsed once: its plain keywords (a
//! [`Simple`]) and its applicators, typed. The normaliser keeps one
//! [`Node`] per schema object it meets (by address: the document is
//! borrowed for the whole compilation) and runs the disjunctive normal
//! form, `oneOf` and `if` on nodes, not on JSON maps.

use serde_json::{Map, Value};

use super::Simple;
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
    match m.get(k) {
        None => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(_) => Err(SchemaError::invalid(k, ptr, "must be an array")),
    }
}

fn reference<'a>(m: &'a Map<String, Value>, ptr: &str) -> Result<Option<&'a str>, SchemaError> {
    match m.get("$ref") {
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
                    if !is_noop(k, val) {
                        return Err(SchemaError::unsupported(k, ptr, "keyword not implemented"));
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
        node.reference = reference(m, ptr)?;
        node.all_of = array(m, "allOf", ptr)?.unwrap_or(&[]);
        if !dialect.no_if {
            node.conditional = m.get("if").map(|test| Conditional {
                test,
                then: m.get("then"),
                otherwise: m.get("else"),
            });
        }
        for keyword in ["dependencies", "dependentRequired", "dependentSchemas"] {
            let Some(deps) = m.get(keyword) else { continue };
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
        node.not = m.get("not");
        node.nullable = match m.get("nullable") {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(_) => return Err(SchemaError::invalid("nullable", ptr, "must be a boolean")),
        };
        Ok(node)
    }
}
