//! The key order the compiled grammar writes.
//!
//! A compiled grammar fixes the order of object keys (module docs of
//! [`super`]): declared members first in schema order, additional members
//! after. A valid instance that lists its keys differently is the *same
//! JSON value* (objects are unordered, RFC 8259 §4), and the grammar
//! accepts exactly one reordering of it. [`canonical_instances`] computes
//! that reordering by walking the instance and the schema together with the
//! compiler's own normalisation, so tests can compare a grammar with valid
//! instances "modulo key order". Because the schema may have several
//! branches (`anyOf`), each of which orders keys its own way, the result is
//! a short list of candidates (one per distinct ordering), first the one of
//! the first branch whose types match.

use serde_json::{Map, Value};

use super::emit::FormatNotes;
use super::error::{push_ptr, Sat, SchemaError};
use super::normalize::Normalizer;
use super::objects::object_layout;
use super::schema::{json_eq, Simple, Sub, TypeSet};
use super::JsonSchemaOptions;

/// At most this many candidates per value.
const MAX_CANDIDATES: usize = 8;
/// Work budget (schema nodes visited) per call.
const BUDGET: usize = 200_000;

/// The reorderings of `instance` (keys in the grammar's order) under
/// `schema`, at most a few; `[instance]` itself when nothing is reordered.
///
/// ```
/// use serde_json::json;
/// use zapspec_jsonschema::{canonical_instances, JsonSchemaOptions};
///
/// let schema = json!({"type": "object", "properties": {"a": {}, "b": {}}});
/// let inst = json!({"b": "x", "a": 1});
/// let c = canonical_instances(&schema, &inst, &JsonSchemaOptions::default()).unwrap();
/// assert_eq!(c[0].to_string(), r#"{"a":1,"b":"x"}"#);
/// ```
pub fn canonical_instances(
    schema: &Value,
    instance: &Value,
    opts: &JsonSchemaOptions,
) -> Result<Vec<Value>, SchemaError> {
    canonical_at(schema, &Sub::Schema(schema), "", instance, opts)
}

/// [`canonical_instances`] of `instance` under `sub`, the subschema at
/// `ptr` of `root` (references resolve against `root`).
pub(crate) fn canonical_at<'a>(
    root: &'a Value,
    sub: &Sub<'a>,
    ptr: &str,
    instance: &Value,
    opts: &JsonSchemaOptions,
) -> Result<Vec<Value>, SchemaError> {
    let mut c = Canon {
        norm: Normalizer::new(root, opts),
        notes: FormatNotes {
            lenient: opts.lenient_formats,
            unknown: opts.unknown_formats,
            ..FormatNotes::default()
        },
        budget: BUDGET,
    };
    let mut out = c.canon(sub, ptr, instance)?;
    if out.is_empty() {
        out.push(instance.clone());
    }
    Ok(out)
}

struct Canon<'a> {
    norm: Normalizer<'a>,
    /// What `format`s inside `propertyNames` recorded (not reported).
    notes: FormatNotes,
    budget: usize,
}

/// Adds a candidate unless one with the same *serialisation* is there
/// (`Value`'s `==` ignores key order, which is the point here).
fn push_unique(out: &mut Vec<Value>, v: Value) {
    let s = v.to_string();
    if out.len() < MAX_CANDIDATES && !out.iter().any(|o| same_text(o, &s)) {
        out.push(v);
    }
}

impl<'a> Canon<'a> {
    fn canon(
        &mut self,
        schema: &Sub<'a>,
        ptr: &str,
        inst: &Value,
    ) -> Result<Vec<Value>, SchemaError> {
        if !inst.is_object() && !inst.is_array() {
            return Ok(vec![inst.clone()]);
        }
        if self.budget == 0 {
            return Ok(vec![inst.clone()]);
        }
        self.budget -= 1;
        let all = self.norm.branches(schema, ptr)?;
        // Branches the instance plausibly belongs to (a shallow check:
        // types, required keys, closed objects, enum/const members) come
        // first; the others only if none is plausible. This keeps the
        // candidate product small for arrays of `oneOf` objects.
        let mut branches = Vec::new();
        for s in &all {
            if self.plausible(s, inst)? {
                branches.push(s.clone());
            }
        }
        if branches.is_empty() {
            branches = all;
        }
        let mut out = Vec::new();
        for s in branches {
            let types = s.types();
            if s.enum_values.is_some() {
                push_unique(&mut out, inst.clone());
                continue;
            }
            match inst {
                Value::Object(m) if types.contains(TypeSet::OBJECT) => {
                    let Sat::Yes(layout) =
                        object_layout(&s, &mut self.norm, &mut self.notes, false)?
                    else {
                        continue;
                    };
                    let members = &layout.members;
                    // children candidates, key order: declared first, then the rest
                    let mut order: Vec<(String, Sub<'a>)> = Vec::new();
                    for (name, sch, _) in members {
                        if let Some(v) = m.get(name) {
                            order.push((name.clone(), sch.clone()));
                            let _ = v;
                        }
                    }
                    for k in m.keys() {
                        if !members.iter().any(|(n, _, _)| n == k) {
                            order.push((k.clone(), layout.extra_schema(k)));
                        }
                    }
                    let mut partial: Vec<Map<String, Value>> = vec![Map::new()];
                    for (k, sch) in order {
                        let child = &m[&k];
                        let cands = self.canon(&sch, &push_ptr(ptr, &k), child)?;
                        let mut next = Vec::new();
                        for p in &partial {
                            for c in &cands {
                                if next.len() < MAX_CANDIDATES {
                                    let mut q = p.clone();
                                    q.insert(k.clone(), c.clone());
                                    next.push(q);
                                }
                            }
                        }
                        partial = next;
                    }
                    for p in partial {
                        push_unique(&mut out, Value::Object(p));
                    }
                }
                Value::Array(a) if types.contains(TypeSet::ARRAY) => {
                    let no_prefix = Vec::new();
                    let prefix = s.array.prefix_items.as_ref().unwrap_or(&no_prefix);
                    let items = s.array.items.clone().unwrap_or(Sub::TRUE);
                    let mut partial: Vec<Vec<Value>> = vec![Vec::new()];
                    for (j, x) in a.iter().enumerate() {
                        let sch = prefix.get(j).unwrap_or(&items).clone();
                        let iptr = push_ptr(ptr, &j.to_string());
                        let mut cands = self.canon(&sch, &iptr, x)?;
                        // the grammar also writes an item as `item ∧ contains`
                        // (module `objects`), whose key order may differ
                        if let (Some(c), false) =
                            (&s.array.contains, s.array.min_contains == Some(0))
                        {
                            let both = Sub::all(vec![sch.clone(), c.clone()]);
                            for y in self.canon(&both, &iptr, x)? {
                                push_unique(&mut cands, y);
                            }
                        }
                        let mut next = Vec::new();
                        for p in &partial {
                            for c in &cands {
                                if next.len() < MAX_CANDIDATES {
                                    let mut q = p.clone();
                                    q.push(c.clone());
                                    next.push(q);
                                }
                            }
                        }
                        partial = next;
                    }
                    for p in partial {
                        push_unique(&mut out, Value::Array(p));
                    }
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

impl<'a> Canon<'a> {
    fn plausible(&mut self, s: &Simple<'a>, inst: &Value) -> Result<bool, SchemaError> {
        if !s.types().admits(inst) || !enum_ok(s, inst) {
            return Ok(false);
        }
        let Value::Object(m) = inst else {
            return Ok(true);
        };
        let Sat::Yes(layout) = object_layout(s, &mut self.norm, &mut self.notes, false)? else {
            return Ok(false);
        };
        for (name, sch, req) in &layout.members {
            match m.get(name) {
                None if *req => return Ok(false),
                None => {}
                Some(v) => {
                    let sub = self.norm.branches(sch, &s.ptr)?;
                    if !sub.iter().any(|b| b.types().admits(v) && enum_ok(b, v)) {
                        return Ok(false);
                    }
                }
            }
        }
        if m.keys().any(|k| {
            layout.filter.as_ref().is_some_and(|f| !f.accepts(k))
                || (!layout.members.iter().any(|(n, _, _)| n == k)
                    && layout.extra_schema(k).is_false())
        }) {
            return Ok(false);
        }
        Ok(true)
    }
}

fn enum_ok(s: &Simple<'_>, v: &Value) -> bool {
    match &s.enum_values {
        None => true,
        Some(a) => a.iter().any(|x| json_eq(x, v)),
    }
}

/// Whether a value serialises to `text` (not `Value == String`, which
/// compares with a JSON string value).
pub(crate) fn same_text(v: &Value, text: &str) -> bool {
    let t = v.to_string();
    t == text
}
