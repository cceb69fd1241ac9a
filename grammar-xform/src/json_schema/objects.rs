//! Objects and arrays as BNF.
//!
//! **Objects.** The declared members (`properties` in order, then required
//! names `properties` lacks) are visited left to right by states `S(i, c)`
//! — at declared member `i` with `c` members written so far — each either
//! writing member `i` (preceded by `,` when `c > 0`) or, if optional,
//! skipping it. After the last declared member, `S(n, c)` may end (when
//! `c ≥ minProperties`) or write an additional member (key: any canonical
//! string but a declared name; value: the `additionalProperties` schema).
//! `c` is counted exactly up to the largest of `minProperties`,
//! `maxProperties` and 1, and saturates when there is no maximum, so the
//! grammar has `O(n · cap)` nonterminals and commas are exact.
//!
//! **Arrays.** States `T(j)` after `j` items: end with `]` if
//! `j ≥ minItems`, or write item `j` (schema `prefixItems[j]`, or `items`
//! past the prefix) if `j < maxItems`. Past the prefix and `minItems`,
//! with no `maxItems`, the state loops.

use std::collections::HashMap;

use serde_json::Value;

use super::emit::{get_u64, lit, re, Emitter};
use super::error::{push_ptr, SchemaError};
use super::normalize::Simple;
use super::strings::{encode_str, key_regex_excluding};
use crate::ir::{NtId, Symbol, Terminal};

/// One declared member: name, value schema, required.
struct Member {
    name: String,
    schema: Value,
    required: bool,
}

/// The members of an object schema as the grammar lays them out.
pub(crate) struct Layout {
    /// Declared members in grammar order: (name, schema, required).
    pub members: Vec<(String, Value, bool)>,
    /// Names that additional keys must differ from.
    pub names: Vec<String>,
    /// The `additionalProperties` schema (`true` when absent).
    pub additional: Value,
}

/// The layout of an object schema; `Ok(Err(reason))` when a required
/// member is impossible.
pub(crate) fn object_layout(s: &Simple) -> Result<Result<Layout, String>, SchemaError> {
    let ptr = &s.ptr;
    let props = match s.map.get("properties") {
        None => serde_json::Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(SchemaError::invalid("properties", ptr, "must be an object")),
    };
    let mut required: Vec<String> = Vec::new();
    match s.map.get("required") {
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
        // draft 3 `required: true` inside a property schema: an annotation for the parent.
        Some(Value::Bool(_)) => {}
        Some(_) => {
            return Err(SchemaError::invalid(
                "required",
                ptr,
                "must be an array of strings",
            ))
        }
    }
    let additional = s
        .map
        .get("additionalProperties")
        .cloned()
        .unwrap_or(Value::Bool(true));
    if !additional.is_object() && !additional.is_boolean() {
        return Err(SchemaError::invalid(
            "additionalProperties",
            ptr,
            "must be a schema",
        ));
    }
    let mut members = Vec::new();
    let mut names = Vec::new();
    for (k, v) in &props {
        names.push(k.clone());
        let req = required.contains(k);
        if v == &Value::Bool(false) {
            if req {
                return Ok(Err(format!("required property `{k}` has schema false")));
            }
            continue;
        }
        members.push((k.clone(), v.clone(), req));
    }
    for r in &required {
        if !props.contains_key(r) {
            if additional == Value::Bool(false) {
                return Ok(Err(format!(
                    "required property `{r}` is not allowed by additionalProperties: false"
                )));
            }
            names.push(r.clone());
            members.push((r.clone(), additional.clone(), true));
        }
    }
    Ok(Ok(Layout {
        members,
        names,
        additional,
    }))
}

impl Emitter<'_> {
    pub(crate) fn object(&mut self, nt: NtId, s: &Simple) -> Result<(), SchemaError> {
        let ptr = s.ptr.clone();
        let Layout {
            members,
            names,
            additional,
        } = match object_layout(s)? {
            Ok(x) => x,
            Err(reason) => {
                self.norm.note_unsat(&ptr, reason);
                return Ok(());
            }
        };
        let members: Vec<Member> = members
            .into_iter()
            .map(|(name, schema, required)| Member {
                name,
                schema,
                required,
            })
            .collect();
        let n_req = members.iter().filter(|m| m.required).count() as u64;
        let min_p = get_u64(&s.map, "minProperties", &ptr)?.unwrap_or(0);
        let max_p = get_u64(&s.map, "maxProperties", &ptr)?;
        let allow_extra = additional != Value::Bool(false);
        if max_p.is_some_and(|m| m < n_req || m < min_p) {
            self.norm.note_unsat(
                &ptr,
                "maxProperties below the required properties or minProperties",
            );
            return Ok(());
        }
        let possible = members.len() as u64;
        if !allow_extra && min_p > possible {
            self.norm
                .note_unsat(&ptr, "minProperties exceeds the properties allowed");
            return Ok(());
        }
        let min_eff = if min_p <= n_req { 0 } else { min_p };
        // maxProperties at least the number of possible members is no constraint
        let max_eff = max_p.filter(|&m| allow_extra || m < possible);
        let cap = 1.max(min_eff).max(max_eff.unwrap_or(0));
        if cap > self.opts.max_counted_items {
            return Err(SchemaError::TooLarge {
                pointer: ptr,
                reason: format!(
                    "minProperties/maxProperties above {}",
                    self.opts.max_counted_items
                ),
            });
        }
        // member symbol strings
        let mut member_syms: Vec<Vec<Symbol>> = Vec::new();
        for m in &members {
            let child = self.child(&m.schema, &ptr, "properties", &m.name)?;
            let key = format!("\"{}\"", encode_str(&m.name));
            member_syms.push(self.member(Symbol::T(Terminal::Literal(key.into_bytes())), child));
        }
        let extra_syms = if allow_extra {
            let child = self.node(&additional, &push_ptr(&ptr, "additionalProperties"))?;
            let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
            Some(self.member(re(key_regex_excluding(&name_refs)), child))
        } else {
            None
        };
        let base = self.g.name(nt).to_string();
        let n = members.len();
        let next = |c: u64| {
            if max_eff.is_some() {
                c + 1
            } else {
                (c + 1).min(cap)
            }
        };
        let mut states: HashMap<(usize, u64), NtId> = HashMap::new();
        let mut work: Vec<(usize, u64)> = vec![(0, 0)];
        let s0 = self.fresh(&format!("{base}-kv"), &ptr)?;
        states.insert((0, 0), s0);
        let ws = self.ws();
        let mut open = vec![lit("{")];
        open.extend(ws.clone());
        open.push(Symbol::Nt(s0));
        self.g.add_rule(nt, open);
        while let Some((i, c)) = work.pop() {
            let me = states[&(i, c)];
            let mut get = |this: &mut Self, key: (usize, u64)| -> Result<NtId, SchemaError> {
                if let Some(&x) = states.get(&key) {
                    return Ok(x);
                }
                let x = this.fresh(&format!("{base}-kv"), &ptr)?;
                states.insert(key, x);
                work.push(key);
                Ok(x)
            };
            let sep = |this: &mut Self, c: u64| -> Vec<Symbol> {
                if c == 0 {
                    vec![]
                } else {
                    let mut v = vec![lit(",")];
                    v.extend(this.ws());
                    v
                }
            };
            let can_add = max_eff.is_none_or(|m| c < m);
            if i < n {
                if can_add {
                    let to = get(self, (i + 1, next(c)))?;
                    let mut rhs = sep(self, c);
                    rhs.extend(member_syms[i].iter().cloned());
                    rhs.push(Symbol::Nt(to));
                    self.g.add_rule(me, rhs);
                }
                if !members[i].required {
                    let to = get(self, (i + 1, c))?;
                    self.g.add_rule(me, vec![Symbol::Nt(to)]);
                }
            } else {
                if c >= min_eff {
                    self.g.add_rule(me, vec![lit("}")]);
                }
                if let (Some(extra), true) = (&extra_syms, can_add) {
                    let to = get(self, (n, next(c)))?;
                    let mut rhs = sep(self, c);
                    rhs.extend(extra.iter().cloned());
                    rhs.push(Symbol::Nt(to));
                    self.g.add_rule(me, rhs);
                }
            }
        }
        Ok(())
    }

    /// `key ws ":" ws value ws` (compact: `key ":" value`).
    fn member(&mut self, key: Symbol, value: NtId) -> Vec<Symbol> {
        let ws = self.ws();
        match (key, &ws) {
            (Symbol::T(Terminal::Literal(mut k)), None) => {
                k.push(b':');
                vec![Symbol::T(Terminal::Literal(k)), Symbol::Nt(value)]
            }
            (key, _) => {
                let mut v = vec![key];
                v.extend(ws.clone());
                v.push(lit(":"));
                v.extend(ws.clone());
                v.push(Symbol::Nt(value));
                v.extend(ws);
                v
            }
        }
    }

    pub(crate) fn array(&mut self, nt: NtId, s: &Simple) -> Result<(), SchemaError> {
        let ptr = s.ptr.clone();
        let prefix = match s.map.get("prefixItems") {
            None => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(_) => {
                return Err(SchemaError::invalid(
                    "prefixItems",
                    &ptr,
                    "must be an array",
                ))
            }
        };
        let items = s.map.get("items").cloned().unwrap_or(Value::Bool(true));
        if !items.is_object() && !items.is_boolean() {
            return Err(SchemaError::invalid("items", &ptr, "must be a schema"));
        }
        let min = get_u64(&s.map, "minItems", &ptr)?.unwrap_or(0);
        let mut max = get_u64(&s.map, "maxItems", &ptr)?;
        if items == Value::Bool(false) {
            let p = prefix.len() as u64;
            max = Some(max.map_or(p, |m| m.min(p)));
        }
        if let Some(i) = prefix.iter().position(|p| p == &Value::Bool(false)) {
            max = Some(max.map_or(i as u64, |m| m.min(i as u64)));
        }
        if max.is_some_and(|m| m < min) {
            self.norm
                .note_unsat(&ptr, "maxItems < minItems (or items forbidden)");
            return Ok(());
        }
        let k = (prefix.len() as u64).max(min);
        let states_needed = max.unwrap_or(k);
        if states_needed > self.opts.max_counted_items {
            return Err(SchemaError::TooLarge {
                pointer: ptr,
                reason: format!(
                    "minItems/maxItems/prefixItems above {}",
                    self.opts.max_counted_items
                ),
            });
        }
        let mut elem: Vec<NtId> = Vec::new();
        for (j, p) in prefix.iter().enumerate() {
            if (j as u64) < states_needed.max(1) {
                elem.push(self.child(p, &ptr, "prefixItems", &j.to_string())?);
            }
        }
        let item_nt = if items != Value::Bool(false) {
            Some(self.node(&items, &push_ptr(&ptr, "items"))?)
        } else {
            None
        };
        let base = self.g.name(nt).to_string();
        let ws = self.ws();
        // with no maxItems the last state loops; it must come after the
        // first item so that the loop writes commas
        let last = match max {
            Some(m) => m,
            None => k.max(1),
        };
        let states: Vec<NtId> = (0..=last)
            .map(|_| self.fresh(&format!("{base}-items"), &ptr))
            .collect::<Result<_, _>>()?;
        let mut open = vec![lit("[")];
        open.extend(ws.clone());
        open.push(Symbol::Nt(states[0]));
        self.g.add_rule(nt, open);
        for j in 0..=last {
            let me = states[j as usize];
            if j >= min {
                self.g.add_rule(me, vec![lit("]")]);
            }
            let can_add = max.is_none_or(|m| j < m);
            if !can_add {
                continue;
            }
            let e = if (j as usize) < prefix.len() {
                Some(elem[j as usize])
            } else {
                item_nt
            };
            let Some(e) = e else { continue };
            let to = if max.is_none() && j == last {
                me
            } else {
                states[j as usize + 1]
            };
            let mut rhs = Vec::new();
            if j > 0 {
                rhs.push(lit(","));
                rhs.extend(ws.clone());
            }
            rhs.push(Symbol::Nt(e));
            rhs.extend(ws.clone());
            rhs.push(Symbol::Nt(to));
            self.g.add_rule(me, rhs);
        }
        Ok(())
    }
}
