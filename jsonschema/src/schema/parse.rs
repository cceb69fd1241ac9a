//! JSON → [`Simple`]: every keyword's value checked once, with the
//! pointer of the schema in its error.

use serde_json::{Map, Number, Value};

use super::{ArrayKw, NumberKw, ObjectKw, Simple, StringKw, Sub, TypeSet};
use crate::error::SchemaError;

/// The value of a count keyword (`minLength` …): a non-negative integer
/// (also written `3.0`).
fn get_u64(m: &Map<String, Value>, k: &str, ptr: &str) -> Result<Option<u64>, SchemaError> {
    match m.get(k) {
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
                Err(SchemaError::invalid(
                    k,
                    ptr,
                    "must be a non-negative integer",
                ))
            }
        }
    }
}

fn number(m: &Map<String, Value>, k: &str, ptr: &str) -> Result<Option<Number>, SchemaError> {
    match m.get(k) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(Some(n.clone())),
        Some(_) => Err(SchemaError::invalid(k, ptr, "must be a number")),
    }
}

fn string(m: &Map<String, Value>, k: &str, ptr: &str) -> Result<Option<String>, SchemaError> {
    match m.get(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(SchemaError::invalid(k, ptr, "must be a string")),
    }
}

/// A subschema keyword whose value must be a schema (object or boolean).
fn schema(m: &Map<String, Value>, k: &str, ptr: &str) -> Result<Option<Sub>, SchemaError> {
    match m.get(k) {
        None => Ok(None),
        Some(v) if v.is_object() || v.is_boolean() => Ok(Some(Sub::Schema(v.clone()))),
        Some(_) => Err(SchemaError::invalid(k, ptr, "must be a schema")),
    }
}

/// A keyword mapping names to schemas (`properties`), in order.
fn schemas_by_name(
    m: &Map<String, Value>,
    k: &str,
    ptr: &str,
) -> Result<Option<Vec<(String, Sub)>>, SchemaError> {
    match m.get(k) {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(
            o.iter()
                .map(|(n, v)| (n.clone(), Sub::Schema(v.clone())))
                .collect(),
        )),
        Some(_) => Err(SchemaError::invalid(k, ptr, "must be an object")),
    }
}

fn number_kw(m: &Map<String, Value>, ptr: &str) -> Result<NumberKw, SchemaError> {
    Ok(NumberKw {
        minimum: number(m, "minimum", ptr)?,
        exclusive_minimum: number(m, "exclusiveMinimum", ptr)?,
        maximum: number(m, "maximum", ptr)?,
        exclusive_maximum: number(m, "exclusiveMaximum", ptr)?,
        multiple_of: number(m, "multipleOf", ptr)?,
    })
}

fn string_kw(m: &Map<String, Value>, ptr: &str) -> Result<StringKw, SchemaError> {
    Ok(StringKw {
        min_length: get_u64(m, "minLength", ptr)?,
        max_length: get_u64(m, "maxLength", ptr)?,
        patterns: string(m, "pattern", ptr)?.into_iter().collect(),
        format: string(m, "format", ptr)?,
        not_in: Vec::new(),
        not_patterns: Vec::new(),
    })
}

fn array_kw(m: &Map<String, Value>, ptr: &str) -> Result<ArrayKw, SchemaError> {
    let prefix_items = match m.get("prefixItems") {
        None => None,
        Some(Value::Array(a)) => Some(a.iter().map(|v| Sub::Schema(v.clone())).collect()),
        Some(_) => return Err(SchemaError::invalid("prefixItems", ptr, "must be an array")),
    };
    Ok(ArrayKw {
        prefix_items,
        items: schema(m, "items", ptr)?,
        min_items: get_u64(m, "minItems", ptr)?,
        max_items: get_u64(m, "maxItems", ptr)?,
        contains: m.get("contains").map(|v| Sub::Schema(v.clone())),
        min_contains: get_u64(m, "minContains", ptr)?,
        max_contains: get_u64(m, "maxContains", ptr)?,
    })
}

fn object_kw(m: &Map<String, Value>, ptr: &str) -> Result<ObjectKw, SchemaError> {
    let mut required: Vec<String> = Vec::new();
    match m.get("required") {
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
        additional_properties: schema(m, "additionalProperties", ptr)?,
        pattern_properties,
        property_names: schema(m, "propertyNames", ptr)?,
        min_properties: get_u64(m, "minProperties", ptr)?,
        max_properties: get_u64(m, "maxProperties", ptr)?,
    })
}

/// [`Simple::parse`].
pub(super) fn simple(m: &Map<String, Value>, ptr: &str) -> Result<Simple, SchemaError> {
    let types = match m.get("type") {
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
    let enum_values = match m.get("enum") {
        None => None,
        Some(Value::Array(a)) => Some(a.clone()),
        Some(_) => return Err(SchemaError::invalid("enum", ptr, "must be an array")),
    };
    Ok(Simple {
        ptr: ptr.to_string(),
        types,
        enum_values,
        number: number_kw(m, ptr)?,
        string: string_kw(m, ptr)?,
        array: array_kw(m, ptr)?,
        object: object_kw(m, ptr)?,
    })
}
