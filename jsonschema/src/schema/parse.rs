//! JSON → [`Simple`]: the plain keywords of a schema object, older
//! spellings rewritten, every value checked once, with the pointer of the
//! schema in its error. Subschemas are borrowed from the document.

use serde_json::{Map, Number, Value};

use super::{has, json_eq, kw, ArrayKw, NumberKw, ObjectKw, Simple, StringKw, Sub, TypeSet};
use crate::error::SchemaError;

/// The value of a count keyword (`minLength` …): a non-negative integer
/// (also written `3.0`).
fn count(v: Option<&Value>, k: &str, ptr: &str) -> Result<Option<u64>, SchemaError> {
    match v {
        None => Ok(None),
        Some(v) => {
            if let Some(u) = v.as_u64() {
                Ok(Some(u))
            } else if let Some(f) = v
                .as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1e18)
            {
                Ok(Some(f as u64))
            } else {
                Err(SchemaError::bad_count(k, ptr, v))
            }
        }
    }
}

fn number(v: Option<&Value>, k: &str, ptr: &str) -> Result<Option<Number>, SchemaError> {
    match v {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(Some(n.clone())),
        Some(v) => Err(SchemaError::not_a_number(k, ptr, v)),
    }
}

fn string(m: &Map<String, Value>, k: &str, ptr: &str) -> Result<Option<String>, SchemaError> {
    match kw(m, k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(SchemaError::invalid(k, ptr, "must be a string")),
    }
}

/// A subschema keyword whose value must be a schema (object or boolean).
fn schema<'a>(v: Option<&'a Value>, k: &str, ptr: &str) -> Result<Option<Sub<'a>>, SchemaError> {
    match v {
        None => Ok(None),
        Some(v) if v.is_object() || v.is_boolean() => Ok(Some(Sub::Schema(v))),
        Some(_) => Err(SchemaError::invalid(k, ptr, schema_shape(k))),
    }
}

/// What a subschema keyword's value must be, in XGrammar's words for each
/// keyword (its tests match them).
pub(crate) fn schema_shape(k: &str) -> &'static str {
    match k {
        "propertyNames" => "must be an object or a boolean (a schema)",
        _ => "must be a boolean or an object (a schema)",
    }
}

/// A keyword mapping names to schemas (`properties`), in order.
fn schemas_by_name<'a>(
    m: &'a Map<String, Value>,
    k: &str,
    ptr: &str,
) -> Result<Option<Vec<(String, Sub<'a>)>>, SchemaError> {
    match kw(m, k) {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(
            o.iter().map(|(n, v)| (n.clone(), Sub::Schema(v))).collect(),
        )),
        Some(_) => Err(SchemaError::invalid(k, ptr, "must be an object")),
    }
}

/// A bound with its draft-4 boolean exclusive form rewritten: `(bound,
/// exclusive bound)` values, e.g. `minimum: 3, exclusiveMinimum: true`
/// as `(None, Some(3))`.
fn bound<'a>(
    m: &'a Map<String, Value>,
    ex: &str,
    bound: &str,
    ptr: &str,
) -> Result<(Option<&'a Value>, Option<&'a Value>), SchemaError> {
    match kw(m, ex) {
        Some(Value::Bool(true)) => {
            let b = kw(m, bound).ok_or_else(|| {
                SchemaError::invalid(ex, ptr, format!("`{ex}: true` (draft 4) needs `{bound}`"))
            })?;
            Ok((None, Some(b)))
        }
        Some(Value::Bool(false)) | None => Ok((kw(m, bound), None)),
        Some(x @ Value::Number(_)) => Ok((kw(m, bound), Some(x))),
        Some(_) => Err(SchemaError::invalid(
            ex,
            ptr,
            "must be a number (or a boolean in draft 4)",
        )),
    }
}

fn string_kw(m: &Map<String, Value>, ptr: &str) -> Result<StringKw, SchemaError> {
    Ok(StringKw {
        min_length: count(kw(m, "minLength"), "minLength", ptr)?,
        max_length: count(kw(m, "maxLength"), "maxLength", ptr)?,
        patterns: string(m, "pattern", ptr)?.into_iter().collect(),
        format: string(m, "format", ptr)?,
        not_in: Vec::new(),
        not_patterns: Vec::new(),
    })
}

fn array_kw<'a>(
    m: &'a Map<String, Value>,
    prefix: Option<&'a Value>,
    items: Option<&'a Value>,
    ptr: &str,
) -> Result<ArrayKw<'a>, SchemaError> {
    let prefix_items = match prefix {
        None => None,
        Some(Value::Array(a)) => {
            if let Some(i) = a.iter().position(|x| !(x.is_object() || x.is_boolean())) {
                return Err(SchemaError::invalid(
                    "prefixItems",
                    &crate::error::push_ptr(
                        &crate::error::push_ptr(ptr, "prefixItems"),
                        &i.to_string(),
                    ),
                    "must be an array of objects or booleans (schemas)",
                ));
            }
            Some(a.iter().map(Sub::Schema).collect())
        }
        Some(_) => return Err(SchemaError::invalid("prefixItems", ptr, "must be an array")),
    };
    Ok(ArrayKw {
        prefix_items,
        items: schema(items, "items", ptr)?,
        min_items: count(kw(m, "minItems"), "minItems", ptr)?,
        max_items: count(kw(m, "maxItems"), "maxItems", ptr)?,
        contains: kw(m, "contains").map(Sub::Schema),
        min_contains: count(kw(m, "minContains"), "minContains", ptr)?,
        max_contains: count(kw(m, "maxContains"), "maxContains", ptr)?,
        unique_items: match kw(m, "uniqueItems") {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(_) => {
                return Err(SchemaError::invalid(
                    "uniqueItems",
                    ptr,
                    "must be a boolean",
                ))
            }
        },
    })
}

fn object_kw<'a>(m: &'a Map<String, Value>, ptr: &str) -> Result<ObjectKw<'a>, SchemaError> {
    let mut required: Vec<String> = Vec::new();
    match kw(m, "required") {
        None => {}
        Some(Value::Array(a)) => {
            for x in a {
                let x = x.as_str().ok_or_else(|| {
                    SchemaError::invalid("required", ptr, "must be an array of strings")
                })?;
                if !required.iter().any(|r| r == x) {
                    required.push(x.to_string());
                }
            }
        }
        // draft 3 `required: true` inside a property schema: an
        // annotation for the parent.
        Some(Value::Bool(_)) => {}
        Some(_) => {
            return Err(SchemaError::invalid(
                "required",
                ptr,
                "must be an array of strings",
            ))
        }
    }
    let pattern_properties = schemas_by_name(m, "patternProperties", ptr)?;
    for (p, v) in pattern_properties.iter().flatten() {
        if let Sub::Schema(v) = v {
            if !v.is_object() && !v.is_boolean() {
                return Err(SchemaError::invalid(
                    "patternProperties",
                    ptr,
                    format!("the value of pattern {p:?} must be a schema"),
                ));
            }
        }
    }
    Ok(ObjectKw {
        properties: schemas_by_name(m, "properties", ptr)?,
        required,
        additional_properties: schema(kw(m, "additionalProperties"), "additionalProperties", ptr)?,
        pattern_properties,
        property_names: schema(kw(m, "propertyNames"), "propertyNames", ptr)?,
        min_properties: count(kw(m, "minProperties"), "minProperties", ptr)?,
        max_properties: count(kw(m, "maxProperties"), "maxProperties", ptr)?,
    })
}

/// [`Simple::parse`].
pub(super) fn simple<'a>(m: &'a Map<String, Value>, ptr: &str) -> Result<Simple<'a>, SchemaError> {
    // the older spellings first (in this order: their errors come first)
    let (minimum, exclusive_minimum) = bound(m, "exclusiveMinimum", "minimum", ptr)?;
    let (maximum, exclusive_maximum) = bound(m, "exclusiveMaximum", "maximum", ptr)?;
    let (prefix, items) = match kw(m, "items") {
        Some(a @ Value::Array(_)) => {
            if has(m, "prefixItems") {
                return Err(SchemaError::invalid(
                    "items",
                    ptr,
                    "array-form `items` together with `prefixItems`",
                ));
            }
            // `additionalItems` applies after array-form `items` only
            (Some(a), kw(m, "additionalItems"))
        }
        items => (kw(m, "prefixItems"), items),
    };
    let enum_values = match (kw(m, "const"), kw(m, "enum")) {
        (Some(c), Some(Value::Array(e))) => Some(Value::Array(
            e.iter().filter(|x| json_eq(x, c)).cloned().collect(),
        )),
        (Some(_), Some(_)) => return Err(SchemaError::invalid("enum", ptr, "must be an array")),
        (Some(c), None) => Some(Value::Array(vec![c.clone()])),
        (None, e) => e.cloned(),
    };
    let types = match kw(m, "type") {
        None => None,
        Some(t) => Some(
            TypeSet::parse(t)
                .ok_or_else(|| {
                    SchemaError::invalid(
                        "type",
                        ptr,
                        "must be a type name or an array of type names",
                    )
                })?
                .canonical(),
        ),
    };
    let enum_values = match enum_values {
        None => None,
        Some(Value::Array(a)) => Some(a),
        Some(_) => return Err(SchemaError::invalid("enum", ptr, "must be an array")),
    };
    let number = NumberKw {
        minimum: number(minimum, "minimum", ptr)?,
        exclusive_minimum: number(exclusive_minimum, "exclusiveMinimum", ptr)?,
        maximum: number(maximum, "maximum", ptr)?,
        exclusive_maximum: number(exclusive_maximum, "exclusiveMaximum", ptr)?,
        multiple_of: number(kw(m, "multipleOf"), "multipleOf", ptr)?,
        from: Vec::new(),
    };
    Ok(Simple {
        ptr: ptr.to_string(),
        types,
        enum_values,
        number,
        string: string_kw(m, ptr)?,
        array: array_kw(m, prefix, items, ptr)?,
        object: object_kw(m, ptr)?,
    })
}
