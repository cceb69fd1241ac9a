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

use super::error::{push_ptr, SchemaError};
use super::normalize::{Normalizer, T_ARRAY, T_OBJECT};
use super::objects::{object_layout, Layout};
use super::JsonSchemaOptions;

/// At most this many candidates per value.
const MAX_CANDIDATES: usize = 8;
/// Work budget (schema nodes visited) per call.
const BUDGET: usize = 200_000;

/// The reorderings of `instance` (keys in the grammar's order) under
/// `schema`, at most a few; `[instance]` itself when nothing is reordered.
pub fn canonical_instances(
    schema: &Value,
    instance: &Value,
    opts: &JsonSchemaOptions,
) -> Result<Vec<Value>, SchemaError> {
    let mut c = Canon {
        norm: Normalizer::new(schema, opts),
        budget: BUDGET,
    };
    let mut out = c.canon(schema, "", instance)?;
    if out.is_empty() {
        out.push(instance.clone());
    }
    Ok(out)
}

struct Canon<'a> {
    norm: Normalizer<'a>,
    budget: usize,
}

fn push_unique(out: &mut Vec<Value>, v: Value) {
    if out.len() < MAX_CANDIDATES && !out.contains(&v) {
        out.push(v);
    }
}

impl Canon<'_> {
    fn canon(
        &mut self,
        schema: &Value,
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
        let branches = self.norm.branches(schema, ptr)?;
        let mut out = Vec::new();
        for s in branches {
            let types = s.types();
            if s.map.contains_key("enum") {
                push_unique(&mut out, inst.clone());
                continue;
            }
            match inst {
                Value::Object(m) if types & T_OBJECT != 0 => {
                    let Ok(Layout {
                        members,
                        additional,
                        ..
                    }) = object_layout(&s)?
                    else {
                        continue;
                    };
                    // children candidates, key order: declared first, then the rest
                    let mut order: Vec<(String, Value)> = Vec::new();
                    for (name, sch, _) in &members {
                        if let Some(v) = m.get(name) {
                            order.push((name.clone(), sch.clone()));
                            let _ = v;
                        }
                    }
                    for k in m.keys() {
                        if !members.iter().any(|(n, _, _)| n == k) {
                            order.push((k.clone(), additional.clone()));
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
                Value::Array(a) if types & T_ARRAY != 0 => {
                    let prefix = s
                        .map
                        .get("prefixItems")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    let items = s.map.get("items").cloned().unwrap_or(Value::Bool(true));
                    let mut partial: Vec<Vec<Value>> = vec![Vec::new()];
                    for (j, x) in a.iter().enumerate() {
                        let sch = prefix.get(j).unwrap_or(&items).clone();
                        let cands = self.canon(&sch, &push_ptr(ptr, &j.to_string()), x)?;
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
