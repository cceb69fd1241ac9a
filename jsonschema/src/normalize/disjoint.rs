//! `oneOf` under [`OneOfMode::RequireDisjoint`](crate::OneOfMode): a sound,
//! incomplete proof that the branches of a `oneOf` are pairwise disjoint,
//! so that compiling it as `anyOf` is exact.
//!
//! The top-level conjunctions are typed simple schemas; the subschemas
//! reached through a required property are looked into as raw JSON
//! (their own `anyOf`/`oneOf` of listed values included). Both speak
//! through [`Facts`].

use serde_json::{Map, Value};

use super::Conj;
use crate::error::SchemaError;
use crate::schema::{has, kw, Simple, Sub, TypeSet};

/// What the disjointness test reads of one conjunct.
trait Facts {
    /// An upper bound of the types it allows.
    fn types(&self) -> TypeSet;
    /// The values it lists (`enum`/`const`), if it lists them.
    fn listed(&self) -> Option<Vec<&Value>>;
    /// Its `required` names.
    fn required(&self) -> Vec<&str>;
    /// The schema it imposes on the value of property `p` when present:
    /// `properties[p]`, or else `additionalProperties` of a schema without
    /// `patternProperties`.
    fn key_schema(&self, p: &str) -> Option<&Value>;
}

/// The schema `{}`, which a handle that is no document schema (a
/// conjunction, a complement) is read as: nothing to prove with.
fn empty_schema() -> &'static Value {
    static EMPTY: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Value::Object(Map::new()))
}

fn raw<'s>(s: &'s Sub<'_>) -> &'s Value {
    match s {
        Sub::Schema(v) => v,
        _ => empty_schema(),
    }
}

impl Facts for Simple<'_> {
    fn types(&self) -> TypeSet {
        let mut t = TypeSet::all();
        if let Some(ty) = self.types {
            t &= ty.fold_integer();
        }
        if let Some(vals) = self.listed() {
            t &= vals
                .iter()
                .fold(TypeSet::empty(), |acc, v| acc | TypeSet::of_value(v));
        }
        t
    }

    fn listed(&self) -> Option<Vec<&Value>> {
        self.enum_values.as_ref().map(|e| e.iter().collect())
    }

    fn required(&self) -> Vec<&str> {
        self.object.required.iter().map(String::as_str).collect()
    }

    fn key_schema(&self, p: &str) -> Option<&Value> {
        match self.object.property(p) {
            Some(v) => Some(raw(v)),
            None if self.object.pattern_properties.is_none() => {
                self.object.additional_properties.as_ref().map(raw)
            }
            None => None,
        }
    }
}

/// A raw schema object of the document.
struct Raw<'m>(&'m Map<String, Value>);

impl Facts for Raw<'_> {
    fn types(&self) -> TypeSet {
        let m = self.0;
        let mut t = TypeSet::all();
        if let Some(ty) = kw(m, "type").and_then(TypeSet::parse) {
            t &= ty.fold_integer();
        }
        if let Some(vals) = self.listed() {
            t &= vals
                .iter()
                .fold(TypeSet::empty(), |acc, v| acc | TypeSet::of_value(v));
        }
        for app in ["anyOf", "oneOf"] {
            if let Some(bs) = kw(m, app).and_then(Value::as_array) {
                let mut u = TypeSet::empty();
                for b in bs {
                    u |= match b {
                        Value::Object(bm) if raw_ok(bm) => Raw(bm).types(),
                        Value::Bool(false) => TypeSet::empty(),
                        _ => TypeSet::all(),
                    };
                }
                t &= u;
            }
        }
        t
    }

    fn listed(&self) -> Option<Vec<&Value>> {
        raw_listed(self.0)
    }

    fn required(&self) -> Vec<&str> {
        self.0
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    }

    fn key_schema(&self, p: &str) -> Option<&Value> {
        let m = self.0;
        match kw(m, "properties").and_then(|ps| ps.get(p)) {
            Some(v) => Some(v),
            None if !has(m, "patternProperties") => kw(m, "additionalProperties"),
            None => None,
        }
    }
}

/// The `const`/`enum` values of a raw schema object; one whose
/// `anyOf`/`oneOf` branches all list values allows at most their union.
fn raw_listed(m: &Map<String, Value>) -> Option<Vec<&Value>> {
    if let Some(c) = kw(m, "const") {
        return Some(vec![c]);
    }
    if let Some(e) = kw(m, "enum").and_then(Value::as_array) {
        return Some(e.iter().collect());
    }
    for app in ["anyOf", "oneOf"] {
        if let Some(bs) = kw(m, app).and_then(Value::as_array) {
            let mut out = Vec::new();
            for b in bs {
                match b {
                    Value::Object(bm) if raw_ok(bm) => out.extend(raw_listed(bm)?),
                    Value::Bool(false) => {}
                    _ => return None,
                }
            }
            return Some(out);
        }
    }
    None
}

/// `OneOfMode::RequireDisjoint`: refuses a `oneOf` unless every two of its
/// branches (each a union of conjunctions, starting at `starts[i]` in
/// `union`) are provably disjoint in the context `ctx` (the plain keywords
/// around the `oneOf`), so that compiling it as `anyOf` is exact.
pub(super) fn check_one_of_disjoint(
    union: &[Conj<'_>],
    starts: &[usize],
    ctx: &[Simple<'_>],
    ptr: &str,
) -> Result<(), SchemaError> {
    let branch_of = |k: usize| starts.iter().rposition(|&s| s <= k).unwrap_or(0);
    let with_ctx = |c| with_context(ctx, c);
    for i in 0..union.len() {
        for j in i + 1..union.len() {
            let (bi, bj) = (branch_of(i), branch_of(j));
            if bi != bj && !conj_disjoint(&with_ctx(&union[i]), &with_ctx(&union[j]), 0) {
                return Err(SchemaError::unsupported(
                    "oneOf",
                    ptr,
                    format!(
                        "branches {bi} and {bj} may overlap, and a grammar cannot express \"exactly one\" \
                         (OneOfMode::AsAnyOf approximates it as anyOf)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The conjunction `c` with the context's keywords before it.
fn with_context<'s, 'a>(ctx: &'s [Simple<'a>], c: &'s Conj<'a>) -> Vec<&'s Simple<'a>> {
    ctx.iter().chain(c.iter().map(|s| &**s)).collect()
}

/// The values a conjunction lists (every listed set bounds it).
fn listed<'s, F: Facts>(c: &[&'s F]) -> Vec<&'s Value> {
    c.iter().filter_map(|m| m.listed()).flatten().collect()
}

/// True when no value of `a` equals a value of `b` as JSON (numbers by
/// value, so `1` and `1.0` meet; arrays and objects are conservatively
/// assumed to meet anything of their type).
fn values_disjoint(a: &[&Value], b: &[&Value]) -> bool {
    let meet = |x: &Value, y: &Value| match (x, y) {
        (Value::Number(m), Value::Number(n)) => m.as_f64() == n.as_f64(),
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => true,
        _ => x == y,
    };
    a.iter().all(|x| b.iter().all(|y| !meet(x, y)))
}

/// Whether the keywords of a raw schema object bound it as [`Raw`] reads
/// them: no `$ref` (whose siblings a draft may ignore) and no OpenAPI
/// `nullable: true` (which adds `null`).
fn raw_ok(m: &Map<String, Value>) -> bool {
    !has(m, "$ref") && kw(m, "nullable") != Some(&Value::Bool(true))
}

/// True when no value satisfies both schemas (sound, incomplete); raw
/// objects that fail [`raw_ok`] are not looked into.
fn schema_disjoint(x: &Value, y: &Value, depth: usize) -> bool {
    match (x, y) {
        (Value::Bool(false), _) | (_, Value::Bool(false)) => true,
        (Value::Object(a), Value::Object(b)) if raw_ok(a) && raw_ok(b) => {
            conj_disjoint(&[&Raw(a)], &[&Raw(b)], depth + 1)
        }
        _ => false,
    }
}

/// True when no JSON value satisfies both conjunctions (a sound, incomplete
/// test: `false` means "could not prove it"): disjoint types, disjoint
/// listed values, or — for the objects both allow, when neither allows a
/// non-object in common — a property required by one of them on whose
/// value they impose disjoint schemas (a discriminator, or a key the other
/// side forbids).
fn conj_disjoint<F: Facts>(a: &[&F], b: &[&F], depth: usize) -> bool {
    let types = |c: &[&F]| {
        c.iter()
            .fold(TypeSet::all(), |t, m| t & m.types())
            .fold_integer()
    };
    let common = types(a) & types(b);
    if common.is_empty() {
        return true;
    }
    let (la, lb) = (listed(a), listed(b));
    // Every listed set bounds the conjunction's values, so their union does.
    if !la.is_empty() && !lb.is_empty() && values_disjoint(&la, &lb) {
        return true;
    }
    if common != TypeSet::OBJECT || depth > 4 {
        return false;
    }
    let mut req: Vec<&str> = a.iter().flat_map(|m| m.required()).collect();
    req.extend(b.iter().flat_map(|m| m.required()));
    req.into_iter().any(|p| {
        let sa: Vec<&Value> = a.iter().filter_map(|m| m.key_schema(p)).collect();
        let sb: Vec<&Value> = b.iter().filter_map(|m| m.key_schema(p)).collect();
        sa.iter().chain(&sb).any(|s| **s == Value::Bool(false))
            || sa
                .iter()
                .any(|x| sb.iter().any(|y| schema_disjoint(x, y, depth)))
    })
}
