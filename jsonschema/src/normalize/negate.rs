//! `not`: the complement of a schema as a union of typed simple schemas,
//! for the forms where that union exists. One function per keyword family:
//! a conjunction of keywords is negated keyword by keyword (De Morgan).

use serde_json::{Map, Number, Value};

use super::{one, Conj, Normalizer, MAX_INLINE_DEPTH};
use crate::error::{push_ptr, SchemaError};
use crate::keywords::{classify, KeywordClass};
use crate::schema::{Origin, Simple, Sub, TypeSet};
use zapspec_grammar::Limit;

/// Keywords that constrain independently, so that `¬(A ∧ B ∧ …)` is
/// `¬A ∨ ¬B ∨ …` one keyword at a time.
const INDEPENDENT: &[&str] = &[
    "type",
    "pattern",
    "enum",
    "const",
    "required",
    "not",
    "properties",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "exclusiveMinimum",
    "exclusiveMaximum",
];

/// The refusal of a `not` the compiler cannot express.
fn refuse(ptr: &str) -> SchemaError {
    SchemaError::unsupported(
        "not",
        ptr,
        "only `not` of true/false/{}, `type`, scalar `enum`/`const`, `required`, `not`, \
         `properties`, `pattern`, numeric bounds, length/item/property counts, or a conjunction of \
         these is implemented",
    )
}

impl<'a> Normalizer<'a> {
    /// The complement of a schema, for the forms whose complement is a
    /// union of simple schemas: `true`/`false`/`{}`, `type`, `enum`/`const`
    /// of null/boolean/string members, `required`, `pattern` (strings
    /// matching none of [`crate::schema::StringKw::not_patterns`]),
    /// `properties`, bounds and counts, `not`, a `$ref` to such a form,
    /// and conjunctions of these.
    pub(super) fn negate(
        &mut self,
        v: &'a Value,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Conj<'a>>, SchemaError> {
        if depth > MAX_INLINE_DEPTH {
            return Err(SchemaError::limit(
                Limit::Depth,
                MAX_INLINE_DEPTH,
                ptr,
                format!("more than {MAX_INLINE_DEPTH} nested not/$ref levels to negate"),
            ));
        }
        let obj = match v {
            Value::Bool(true) => return Ok(vec![]),
            Value::Bool(false) => return Ok(vec![one(Simple::any(ptr))]),
            Value::Object(m) => m,
            _ => return Err(SchemaError::invalid("not", ptr, "must be a schema")),
        };
        let keys: Vec<&String> = obj
            .keys()
            .filter(|k| {
                matches!(
                    classify(k),
                    KeywordClass::Supported | KeywordClass::Unsupported
                ) && !matches!(k.as_str(), "$defs" | "definitions")
            })
            .collect();
        // `not` of a reference: of its target (drafts 3–7 ignore the
        // siblings of `$ref`)
        if let Some(r) = obj.get("$ref") {
            if self.ref_siblings_ignored || keys.len() == 1 {
                let r = r
                    .as_str()
                    .ok_or_else(|| SchemaError::invalid("$ref", ptr, "must be a string"))?;
                let (target, tptr) = self.resolve(r, obj, &push_ptr(ptr, "$ref"))?;
                return self.negate(target, &tptr, depth + 1);
            }
        }
        match keys.as_slice() {
            [] => {
                self.note_unsat(ptr, "`not` of a schema that accepts everything");
                Ok(vec![])
            }
            [k] => self.negate_keyword(k, &obj[k.as_str()], ptr, depth),
            _ => self.negate_conjunction(obj, &keys, ptr, depth),
        }
    }

    /// `¬(A ∧ B ∧ …) = ¬A ∨ ¬B ∨ …` for keywords that act independently.
    fn negate_conjunction(
        &mut self,
        obj: &'a Map<String, Value>,
        keys: &[&String],
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Conj<'a>>, SchemaError> {
        let draft4_exclusive = ["exclusiveMinimum", "exclusiveMaximum"]
            .iter()
            .any(|k| obj.get(*k).is_some_and(Value::is_boolean));
        if draft4_exclusive || keys.iter().any(|k| !INDEPENDENT.contains(&k.as_str())) {
            return Err(refuse(ptr));
        }
        let mut out = Vec::new();
        for k in keys {
            // as `negate` of `{k: …}` one level deeper
            if depth + 1 > MAX_INLINE_DEPTH {
                return Err(SchemaError::limit(
                    Limit::Depth,
                    MAX_INLINE_DEPTH,
                    ptr,
                    format!("more than {MAX_INLINE_DEPTH} nested not/$ref levels to negate"),
                ));
            }
            out.extend(self.negate_keyword(k, &obj[k.as_str()], ptr, depth + 1)?);
            if out.len() > self.opts.max_branches {
                return Err(self.too_many_branches(ptr, "not", out.len()));
            }
        }
        Ok(out)
    }

    /// The complement of one keyword `k` whose value is `val`.
    fn negate_keyword(
        &mut self,
        k: &str,
        val: &'a Value,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Conj<'a>>, SchemaError> {
        match k {
            "minimum" | "exclusiveMinimum" | "maximum" | "exclusiveMaximum" => {
                negate_bound(k, val, ptr)
            }
            "minItems" | "minLength" | "minProperties" | "maxItems" | "maxLength"
            | "maxProperties" => negate_count(k, val, ptr),
            "pattern" => {
                // ¬(a string matches p) = a string not matching p
                let p = val
                    .as_str()
                    .ok_or_else(|| SchemaError::invalid("pattern", ptr, "must be a string"))?;
                let mut s = Simple::of_type(TypeSet::STRING, ptr);
                s.string.not_patterns.push(p.to_string());
                Ok(vec![one(s)])
            }
            "properties" => self.negate_properties(val, ptr, depth),
            "not" => self.dnf(val, &push_ptr(ptr, "not"), depth + 1),
            "type" => negate_type(val, ptr),
            "enum" | "const" => negate_values(k, val, ptr),
            "required" => negate_required(val, ptr),
            _ => Err(refuse(ptr)),
        }
    }

    /// ¬(every present xᵢ satisfies Sᵢ) = an object with some xᵢ present
    /// and violating Sᵢ.
    fn negate_properties(
        &mut self,
        val: &'a Value,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Conj<'a>>, SchemaError> {
        let props = val
            .as_object()
            .ok_or_else(|| SchemaError::invalid("properties", ptr, "must be an object"))?;
        let mut out = Vec::new();
        for (x, sx) in props {
            if sx == &Value::Bool(true) || sx.as_object().is_some_and(|m| m.is_empty()) {
                continue;
            }
            // fail here, not when the property is emitted, if ¬Sᵢ cannot
            // be expressed
            self.negate(sx, &push_ptr(&push_ptr(ptr, "properties"), x), depth + 1)?;
            let mut s = Simple::of_type(TypeSet::OBJECT, ptr);
            s.object.required.push(x.clone());
            s.object.properties = Some(vec![(x.clone(), Sub::Not(sx))]);
            out.push(one(s));
        }
        Ok(out)
    }
}

/// ¬(a numeric bound): numbers beyond it (values of other types satisfy
/// the bound vacuously). A draft-4 boolean exclusive bound is refused.
fn negate_bound<'a>(k: &str, val: &Value, ptr: &str) -> Result<Vec<Conj<'a>>, SchemaError> {
    let n: Number = match val {
        Value::Number(n) => n.clone(),
        Value::Bool(_) if k.starts_with("exclusive") => return Err(refuse(ptr)),
        v => return Err(SchemaError::not_a_number(k, ptr, v)),
    };
    let mut s = Simple::of_type(TypeSet::NUMBER, ptr);
    let num = &mut s.number;
    let how = Some(format!("the complement of {k} {n}"));
    let keyword = match k {
        "minimum" => "exclusiveMaximum",
        "exclusiveMinimum" => "maximum",
        "maximum" => "exclusiveMinimum",
        _ => "minimum",
    };
    match keyword {
        "exclusiveMaximum" => num.exclusive_maximum = Some(n),
        "maximum" => num.maximum = Some(n),
        "exclusiveMinimum" => num.exclusive_minimum = Some(n),
        _ => num.minimum = Some(n),
    }
    num.set_origin(Origin {
        keyword,
        pointer: ptr.to_string(),
        how,
    });
    Ok(vec![one(s)])
}

/// ¬(a count bound on one type): values of that type beyond it.
fn negate_count<'a>(k: &str, val: &Value, ptr: &str) -> Result<Vec<Conj<'a>>, SchemaError> {
    let n = val
        .as_u64()
        .or_else(|| {
            val.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                .map(|f| f as u64)
        })
        .ok_or_else(|| SchemaError::bad_count(k, ptr, val))?;
    let (t, lower) = match k {
        "minItems" => (TypeSet::ARRAY, true),
        "minLength" => (TypeSet::STRING, true),
        "minProperties" => (TypeSet::OBJECT, true),
        "maxItems" => (TypeSet::ARRAY, false),
        "maxLength" => (TypeSet::STRING, false),
        _ => (TypeSet::OBJECT, false),
    };
    if lower && n == 0 {
        return Ok(vec![]);
    }
    // below a lower bound, or above an upper one
    let bound = Some(if lower { n - 1 } else { n.saturating_add(1) });
    let mut s = Simple::of_type(t, ptr);
    match (k, lower) {
        ("minItems", _) => s.array.max_items = bound,
        ("maxItems", _) => s.array.min_items = bound,
        ("minLength", _) => s.string.max_length = bound,
        ("maxLength", _) => s.string.min_length = bound,
        (_, true) => s.object.max_properties = bound,
        (_, false) => s.object.min_properties = bound,
    }
    Ok(vec![one(s)])
}

/// ¬type: the other types (`not: {type: integer}` would need the
/// non-integral numbers and is refused).
fn negate_type<'a>(val: &Value, ptr: &str) -> Result<Vec<Conj<'a>>, SchemaError> {
    let t = TypeSet::parse(val).ok_or_else(|| SchemaError::invalid("type", ptr, "bad type"))?;
    // integers are numbers: not(number) excludes both
    let t = if t.contains(TypeSet::NUMBER) {
        t | TypeSet::INTEGER
    } else {
        t
    };
    if t.contains(TypeSet::INTEGER) && !t.contains(TypeSet::NUMBER) {
        return Err(SchemaError::unsupported(
            "not",
            ptr,
            "`not: {type: integer}` (non-integral numbers)",
        ));
    }
    let c = TypeSet::all() - t - TypeSet::INTEGER;
    if c.is_empty() {
        return Ok(vec![]);
    }
    Ok(vec![one(Simple::of_type(c, ptr))])
}

/// ¬enum / ¬const of null, boolean and string members: the other booleans,
/// the strings outside the list, and every other type.
fn negate_values<'a>(k: &str, val: &Value, ptr: &str) -> Result<Vec<Conj<'a>>, SchemaError> {
    let vals: &[Value] = match (k, val) {
        ("const", c) => std::slice::from_ref(c),
        (_, Value::Array(a)) => a,
        _ => return Err(SchemaError::invalid("enum", ptr, "must be an array")),
    };
    let mut types = TypeSet::all() - TypeSet::INTEGER;
    let mut out = Vec::new();
    let (mut t, mut f) = (false, false);
    let mut strs = Vec::new();
    for x in vals {
        match x {
            Value::Null => types -= TypeSet::NULL,
            Value::Bool(true) => t = true,
            Value::Bool(false) => f = true,
            Value::String(s) => strs.push(s.clone()),
            _ => return Err(refuse(ptr)),
        }
    }
    if t || f {
        types -= TypeSet::BOOLEAN;
        if !(t && f) {
            let mut s = Simple::any(ptr);
            s.enum_values = Some(vec![Value::Bool(!t)]);
            out.push(one(s));
        }
    }
    if !strs.is_empty() {
        types -= TypeSet::STRING;
        let mut s = Simple::of_type(TypeSet::STRING, ptr);
        s.string.not_in = strs;
        out.push(one(s));
    }
    out.push(one(Simple::of_type(types, ptr)));
    Ok(out)
}

/// ¬required: an object lacking one of the names (non-objects satisfy
/// `required`).
fn negate_required<'a>(val: &Value, ptr: &str) -> Result<Vec<Conj<'a>>, SchemaError> {
    let r = val
        .as_array()
        .ok_or_else(|| SchemaError::invalid("required", ptr, "must be an array"))?;
    let mut out = Vec::new();
    for name in r {
        let name = name
            .as_str()
            .ok_or_else(|| SchemaError::invalid("required", ptr, "must hold strings"))?;
        let mut s = Simple::of_type(TypeSet::OBJECT, ptr);
        s.object.properties = Some(vec![(name.to_string(), Sub::FALSE)]);
        out.push(one(s));
    }
    Ok(out)
}
