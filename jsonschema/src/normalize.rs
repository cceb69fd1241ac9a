//! Schema normalisation: `$ref`, `allOf`, `anyOf`, `oneOf` and `nullable`
//! are eliminated from the top of a schema node by rewriting it into a
//! disjunction of *simple* schemas — objects holding only
//! [`SUPPORTED`](super::keywords::SUPPORTED) keywords without applicators.
//!
//! * `allOf` (and sibling keywords next to an applicator, which JSON Schema
//!   2019+ evaluates as a conjunction) is a conjunction; conjunctions are
//!   *merged* keyword by keyword ([`merge`]): `type` sets intersect, `enum`s
//!   intersect, lower bounds take the max, upper bounds the min, `required`
//!   unites, and `properties`/`additionalProperties` combine per key exactly
//!   as the conjunction demands (a key absent from one conjunct's
//!   `properties` must satisfy that conjunct's `additionalProperties`).
//! * `anyOf`/`oneOf` distribute over conjunctions (disjunctive normal form),
//!   bounded by [`JsonSchemaOptions::max_branches`](super::JsonSchemaOptions).
//! * `$ref` in such a position is inlined (bounded depth); a `$ref` that is
//!   the *whole* schema of a child is not inlined but compiled once as a
//!   shared nonterminal by the emitter, which is how recursion works.
//!
//! Subschemas below the top (property values, items) stay JSON values;
//! where a merge combines several of them it synthesises `{"allOf": [...]}`.

use serde_json::{Map, Value};

use super::error::{push_ptr, Sat, SchemaError, Unsat};
use super::keywords::{classify, is_noop, KeywordClass};
use super::{JsonSchemaOptions, OneOfMode, UnknownKeywords};
use zapspec_grammar::Limit;

/// Type bits of a type set.
pub(crate) const T_NULL: u8 = 1;
pub(crate) const T_BOOL: u8 = 2;
pub(crate) const T_OBJECT: u8 = 4;
pub(crate) const T_ARRAY: u8 = 8;
/// `number` (which includes the integers)
pub(crate) const T_NUMBER: u8 = 16;
/// `integer` only
pub(crate) const T_INTEGER: u8 = 32;
pub(crate) const T_STRING: u8 = 64;
pub(crate) const T_ALL: u8 = 127;

/// Internal keyword produced by `not: {enum: [strings]}`: a string must be
/// none of these.
pub(crate) const NOT_IN: &str = "$zapspec:notIn";

/// Internal keyword produced by `allOf` of different `pattern`s: the
/// further patterns a string must match (besides `pattern`).
pub(crate) const PATTERNS: &str = "$zapspec:patterns";

/// Internal keyword produced by `not: {pattern: p}`: patterns a string
/// must not match.
pub(crate) const NOT_PATTERNS: &str = "$zapspec:notPatterns";

/// A schema without applicators, plus the JSON pointer it came from.
#[derive(Clone, Debug)]
pub(crate) struct Simple {
    pub map: Map<String, Value>,
    pub ptr: String,
}

impl Simple {
    /// The allowed types (`T_*` bits; `T_NUMBER` implies integers too).
    pub fn types(&self) -> u8 {
        match self.map.get("type") {
            Some(v) => parse_types(v).unwrap_or(T_ALL),
            None => T_ALL,
        }
    }
}

/// Parses the value of `type` into a bit set.
pub(crate) fn parse_types(v: &Value) -> Option<u8> {
    let one = |s: &str| -> Option<u8> {
        Some(match s {
            "null" => T_NULL,
            "boolean" => T_BOOL,
            "object" => T_OBJECT,
            "array" => T_ARRAY,
            "number" => T_NUMBER,
            "integer" => T_INTEGER,
            "string" => T_STRING,
            "any" => T_ALL, // draft 3
            _ => return None,
        })
    };
    match v {
        Value::String(s) => one(s),
        Value::Array(a) => {
            let mut m = 0;
            for x in a {
                m |= one(x.as_str()?)?;
            }
            Some(m)
        }
        _ => None,
    }
}

fn types_value(mask: u8) -> Value {
    let mut v = Vec::new();
    for (bit, name) in [
        (T_NULL, "null"),
        (T_BOOL, "boolean"),
        (T_OBJECT, "object"),
        (T_ARRAY, "array"),
        (T_NUMBER, "number"),
        (T_INTEGER, "integer"),
        (T_STRING, "string"),
    ] {
        if mask & bit != 0 && !(bit == T_INTEGER && mask & T_NUMBER != 0) {
            v.push(Value::String(name.into()));
        }
    }
    Value::Array(v)
}

/// Intersection of two type sets (integers are numbers).
fn intersect_types(a: u8, b: u8) -> u8 {
    let ex = |m: u8| if m & T_NUMBER != 0 { m | T_INTEGER } else { m };
    let r = ex(a) & ex(b);
    if r & T_NUMBER != 0 {
        r
    } else {
        r & !T_NUMBER
    }
}

/// JSON equality as JSON Schema defines it (numbers by value).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                x == y
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// The conjunction of subschemas as one schema value: `true`s dropped,
/// `false` absorbing, duplicates removed, a single one returned as is.
pub(crate) fn all_of(parts: Vec<Value>) -> Value {
    let mut keep: Vec<Value> = Vec::new();
    for p in parts {
        match &p {
            Value::Bool(true) => continue,
            Value::Bool(false) => return Value::Bool(false),
            Value::Object(m) if m.is_empty() => continue,
            _ => {}
        }
        if !keep.contains(&p) {
            keep.push(p);
        }
    }
    match keep.len() {
        0 => Value::Bool(true),
        1 => keep.pop().unwrap_or(Value::Bool(true)),
        _ => {
            let mut m = Map::new();
            m.insert("allOf".into(), Value::Array(keep));
            Value::Object(m)
        }
    }
}

/// A conjunction: plain schema objects with their pointers.
type Conj = Vec<(Map<String, Value>, String)>;

/// Resolves references and normalises schema nodes of one document.
pub(crate) struct Normalizer<'a> {
    pub(crate) root: &'a Value,
    root_ids: Vec<String>,
    /// Plain-name anchors → pointers, collected on first use.
    anchors: Option<std::collections::HashMap<String, String>>,
    /// `$schema` says draft 3–7, where siblings of `$ref` are ignored.
    ref_siblings_ignored: bool,
    /// `$schema` says draft 3–6, which have no `if`/`then`/`else` (draft-07
    /// Validation §6.6 introduced them): there they are unknown keys.
    no_if: bool,
    /// `$schema` says draft 3–4, where `integer` means an integer written
    /// without fraction or exponent (`1.0` is a `number` only); drafts 6+
    /// count any number with a zero fractional part.
    pub integer_lexical: bool,
    opts: &'a JsonSchemaOptions,
    /// Unknown keys that were ignored: (pointer, key).
    pub ignored: Vec<(String, String)>,
    /// The first contradiction met (pointer, reason), for the error when
    /// the whole schema turns out unsatisfiable.
    pub first_unsat: Option<(String, String)>,
    /// The plain keywords of the schema nodes being normalised around the
    /// current one (all at the same instance location, so every one of
    /// them holds for any instance that reaches a `oneOf` inside): the
    /// context in which `oneOf` branches must be disjoint.
    context: Vec<Map<String, Value>>,
    /// When the compilation's time budget runs out (`None`: never).
    pub(crate) deadline: Option<std::time::Instant>,
}

/// Depth bound for inlining `$ref`/applicators at one node.
const MAX_INLINE_DEPTH: usize = 48;

impl<'a> Normalizer<'a> {
    pub fn new(root: &'a Value, opts: &'a JsonSchemaOptions) -> Self {
        let mut root_ids = Vec::new();
        if let Some(m) = root.as_object() {
            for k in ["$id", "id"] {
                if let Some(Value::String(s)) = m.get(k) {
                    root_ids.push(s.trim_end_matches('#').to_string());
                }
            }
        }
        // Drafts 3–7: "All other properties in a "$ref" object MUST be
        // ignored" (draft-07 Core §8.3); 2019-09 and later apply them.
        let ref_siblings_ignored = root
            .get("$schema")
            .and_then(Value::as_str)
            .is_some_and(|s| {
                ["draft-03", "draft-04", "draft-05", "draft-06", "draft-07"]
                    .iter()
                    .any(|d| s.contains(d))
            });
        let no_if = root
            .get("$schema")
            .and_then(Value::as_str)
            .is_some_and(|s| {
                ["draft-03", "draft-04", "draft-05", "draft-06"]
                    .iter()
                    .any(|d| s.contains(d))
            });
        let integer_lexical = root
            .get("$schema")
            .and_then(Value::as_str)
            .is_some_and(|s| ["draft-03", "draft-04"].iter().any(|d| s.contains(d)));
        Normalizer {
            root,
            root_ids,
            ref_siblings_ignored,
            no_if,
            integer_lexical,
            anchors: None,
            opts,
            ignored: Vec::new(),
            first_unsat: None,
            context: Vec::new(),
            deadline: std::time::Instant::now().checked_add(opts.time_budget),
        }
    }

    /// [`Limit::Time`] once the budget of the compilation is spent.
    pub fn check_time(&self, ptr: &str) -> Result<(), SchemaError> {
        match self.deadline {
            Some(d) if std::time::Instant::now() >= d => Err(SchemaError::limit(
                Limit::Time,
                self.opts.time_budget.as_millis() as usize,
                ptr,
                format!(
                    "compilation took more than its budget of {:?}",
                    self.opts.time_budget
                ),
            )),
            _ => Ok(()),
        }
    }

    pub fn note_unsat(&mut self, ptr: &str, reason: impl Into<String>) {
        if self.first_unsat.is_none() {
            self.first_unsat = Some((ptr.to_string(), reason.into()));
        }
    }

    /// Resolves a `$ref` (found at `at`) to the referenced value and its
    /// pointer. Supports `#`, `#/json/pointer` (percent-decoded) and the
    /// same prefixed by the root's `$id`/`id`.
    pub fn resolve(
        &mut self,
        reference: &str,
        at: &str,
    ) -> Result<(&'a Value, String), SchemaError> {
        let bad = |reason: &str| SchemaError::BadRef {
            reference: reference.to_string(),
            pointer: at.to_string(),
            reason: reason.to_string(),
        };
        let (base, frag) = match reference.find('#') {
            Some(i) => (&reference[..i], &reference[i + 1..]),
            None => (reference, ""),
        };
        if !base.is_empty() && !self.root_ids.iter().any(|id| id == base) {
            return Err(bad("references outside the document are not supported"));
        }
        let frag = percent_decode(frag).ok_or_else(|| bad("bad percent-encoding"))?;
        if frag.is_empty() {
            return Ok((self.root, String::new()));
        }
        if !frag.starts_with('/') {
            // a plain-name fragment: `$anchor: name`, or (drafts 4–7)
            // `id`/`$id: "#name"` somewhere in the document
            let anchors = self
                .anchors
                .get_or_insert_with(|| collect_anchors(self.root));
            return match anchors.get(&frag) {
                Some(p) => match self.root.pointer(p) {
                    Some(v) => Ok((v, p.clone())),
                    None => Err(bad("anchor points nowhere")),
                },
                None => Err(bad("no subschema declares this anchor")),
            };
        }
        match self.root.pointer(&frag) {
            Some(v) => Ok((v, frag)),
            None => Err(bad("no such location in the document")),
        }
    }

    /// The simple schemas whose union is the schema `v` at `ptr`.
    /// Contradictory conjunctions are dropped (and noted).
    pub fn branches(&mut self, v: &Value, ptr: &str) -> Result<Vec<Simple>, SchemaError> {
        let dnf = self.dnf(v, ptr, 0)?;
        let mut out = Vec::new();
        for conj in dnf {
            if let Some(s) = self.merge(conj)? {
                out.push(s);
            }
        }
        Ok(out)
    }

    fn dnf(&mut self, v: &Value, ptr: &str, depth: usize) -> Result<Vec<Conj>, SchemaError> {
        if depth > MAX_INLINE_DEPTH {
            return Err(SchemaError::limit(
                Limit::Depth,
                MAX_INLINE_DEPTH,
                ptr,
                format!("more than {MAX_INLINE_DEPTH} nested $ref/allOf/anyOf levels to inline (a reference cycle that never reaches a property or item)"),
            ));
        }
        self.check_time(ptr)?;
        let obj = match v {
            Value::Bool(true) => return Ok(vec![vec![(Map::new(), ptr.to_string())]]),
            Value::Bool(false) => {
                self.note_unsat(ptr, "schema `false`");
                return Ok(vec![]);
            }
            Value::Object(m) => m,
            _ => {
                return Err(SchemaError::invalid(
                    "(schema)",
                    ptr,
                    "a schema must be an object or a boolean",
                ))
            }
        };
        if self.ref_siblings_ignored {
            if let Some(r) = obj.get("$ref") {
                let rptr = push_ptr(ptr, "$ref");
                let r = r
                    .as_str()
                    .ok_or_else(|| SchemaError::invalid("$ref", ptr, "must be a string"))?;
                let (target, tptr) = self.resolve(r, &rptr)?;
                return self.dnf(target, &tptr, depth + 1);
            }
        }
        let mut plain = Map::new();
        for (k, val) in obj {
            if self.no_if && k == "if" {
                // not a keyword of the document's draft
                self.ignored.push((ptr.to_string(), k.clone()));
                continue;
            }
            match classify(k) {
                KeywordClass::Supported => {
                    if !matches!(
                        k.as_str(),
                        "$ref"
                            | "allOf"
                            | "anyOf"
                            | "oneOf"
                            | "nullable"
                            | "$defs"
                            | "definitions"
                            | "dependencies"
                            | "dependentRequired"
                            | "dependentSchemas"
                            | "if"
                            // conjoined as its complement by `dnf_applicators`
                            | "not"
                    ) {
                        plain.insert(k.clone(), val.clone());
                    }
                }
                KeywordClass::Annotation => {}
                KeywordClass::Unsupported => {
                    if !is_noop(k, val) {
                        return Err(SchemaError::unsupported(k, ptr, "keyword not implemented"));
                    }
                }
                KeywordClass::Unknown => match self.opts.unknown_keywords {
                    UnknownKeywords::Ignore => self.ignored.push((ptr.to_string(), k.clone())),
                    UnknownKeywords::Reject => {
                        return Err(SchemaError::UnknownKeyword {
                            keyword: k.clone(),
                            pointer: ptr.to_string(),
                        })
                    }
                },
            }
        }
        normalize_plain(&mut plain, ptr)?;
        self.context.push(plain.clone());
        let r = self.dnf_applicators(obj, plain, ptr, depth);
        self.context.pop();
        r
    }

    /// The applicators of a schema object (`$ref`, `allOf`, `anyOf`,
    /// `oneOf`, `not`, `nullable`) conjoined with its plain keywords.
    fn dnf_applicators(
        &mut self,
        obj: &Map<String, Value>,
        plain: Map<String, Value>,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Conj>, SchemaError> {
        let mut acc: Vec<Conj> = vec![vec![(plain, ptr.to_string())]];
        if let Some(r) = obj.get("$ref") {
            let rptr = push_ptr(ptr, "$ref");
            let r = r
                .as_str()
                .ok_or_else(|| SchemaError::invalid("$ref", ptr, "must be a string"))?;
            let (target, tptr) = self.resolve(r, &rptr)?;
            let sub = self.dnf(target, &tptr, depth + 1)?;
            acc = self.product(acc, sub, ptr, "$ref")?;
        }
        if let Some(a) = obj.get("allOf") {
            let a = a
                .as_array()
                .ok_or_else(|| SchemaError::invalid("allOf", ptr, "must be an array"))?;
            let aptr = push_ptr(ptr, "allOf");
            for (i, m) in a.iter().enumerate() {
                let sub = self.dnf(m, &push_ptr(&aptr, &i.to_string()), depth + 1)?;
                acc = self.product(acc, sub, ptr, "allOf")?;
            }
        }
        if let Some(i) = obj.get("if").filter(|_| !self.no_if) {
            // if I then T else E  =  (I ∧ T) ∨ (¬I ∧ E)  (2020-12 Core §10.2.2);
            // exact where `not` of I is (see `negate`)
            let iptr = push_ptr(ptr, "if");
            let yes = self.dnf(i, &iptr, depth + 1)?;
            let then = match obj.get("then") {
                Some(t) => self.dnf(t, &push_ptr(ptr, "then"), depth + 1)?,
                None => vec![vec![(Map::new(), ptr.to_string())]],
            };
            let mut union = self.product(yes, then, ptr, "then")?;
            let no = self.negate(i, &iptr, depth + 1).map_err(|e| match e {
                SchemaError::Unsupported {
                    pointer, reason, ..
                } => SchemaError::Unsupported {
                    keyword: "if".into(),
                    pointer,
                    reason: format!("its negation: {reason}"),
                },
                e => e,
            })?;
            let els = match obj.get("else") {
                Some(e) => self.dnf(e, &push_ptr(ptr, "else"), depth + 1)?,
                None => vec![vec![(Map::new(), ptr.to_string())]],
            };
            union.extend(self.product(no, els, ptr, "else")?);
            acc = self.product(acc, union, ptr, "if")?;
        }
        for kw in ["dependencies", "dependentRequired", "dependentSchemas"] {
            let Some(deps) = obj.get(kw) else { continue };
            let deps = deps
                .as_object()
                .ok_or_else(|| SchemaError::invalid(kw, ptr, "must be an object"))?;
            let dptr = push_ptr(ptr, kw);
            for (k, d) in deps {
                let union = self.dependency(k, d, kw, &push_ptr(&dptr, k), depth)?;
                acc = self.product(acc, union, ptr, kw)?;
            }
        }
        for kw in ["anyOf", "oneOf"] {
            if let Some(a) = obj.get(kw) {
                let a = a
                    .as_array()
                    .ok_or_else(|| SchemaError::invalid(kw, ptr, "must be an array"))?;
                if a.is_empty() {
                    return Err(SchemaError::invalid(kw, ptr, "must not be empty"));
                }
                let aptr = push_ptr(ptr, kw);
                let mut union = Vec::new();
                let mut starts = Vec::with_capacity(a.len());
                for (i, m) in a.iter().enumerate() {
                    starts.push(union.len());
                    union.extend(self.dnf(m, &push_ptr(&aptr, &i.to_string()), depth + 1)?);
                    if union.len() > self.opts.max_branches {
                        return Err(self.too_many_branches(ptr, kw, union.len()));
                    }
                }
                if kw == "oneOf" && self.opts.one_of == OneOfMode::RequireDisjoint {
                    let ctx: Conj = self
                        .context
                        .iter()
                        .map(|m| (m.clone(), ptr.to_string()))
                        .collect();
                    if let Err(e) = check_one_of_disjoint(&union, &starts, &ctx, &aptr) {
                        // not provably disjoint: exact where every branch
                        // can be negated
                        union = self.one_of_exact(a, &aptr, depth).map_err(|_| e)?;
                    }
                }
                acc = self.product(acc, union, ptr, kw)?;
            }
        }
        if let Some(n) = obj.get("not") {
            let neg = self.negate(n, &push_ptr(ptr, "not"), depth + 1)?;
            acc = self.product(acc, neg, ptr, "not")?;
        }
        match obj.get("nullable") {
            None | Some(Value::Bool(false)) => {}
            // JSON Schema has no `nullable`: validators ignore it.
            Some(Value::Bool(true)) if !self.opts.openapi_nullable => {}
            Some(Value::Bool(true)) => {
                let mut m = Map::new();
                m.insert("type".into(), Value::String("null".into()));
                acc.push(vec![(m, ptr.to_string())]);
            }
            Some(_) => return Err(SchemaError::invalid("nullable", ptr, "must be a boolean")),
        }
        Ok(acc)
    }

    /// `oneOf: [B₁, …, Bₙ]` exactly, as `⋃ᵢ (Bᵢ ∧ ⋀_{j≠i} ¬Bⱼ)` ("exactly
    /// one holds"); an error where some `Bⱼ` cannot be negated
    /// ([`Self::negate`]) or the branches exceed the limit.
    fn one_of_exact(
        &mut self,
        a: &[Value],
        aptr: &str,
        depth: usize,
    ) -> Result<Vec<Conj>, SchemaError> {
        let mut negs = Vec::with_capacity(a.len());
        for (j, b) in a.iter().enumerate() {
            negs.push(self.negate(b, &push_ptr(aptr, &j.to_string()), depth + 1)?);
        }
        let mut out = Vec::new();
        for (i, b) in a.iter().enumerate() {
            let mut part = self.dnf(b, &push_ptr(aptr, &i.to_string()), depth + 1)?;
            for (j, n) in negs.iter().enumerate() {
                if j != i {
                    part = self.product(part, n.clone(), aptr, "oneOf")?;
                }
            }
            out.extend(part);
            if out.len() > self.opts.max_branches {
                return Err(self.too_many_branches(aptr, "oneOf", out.len()));
            }
        }
        Ok(out)
    }

    /// One entry `k: d` of `dependencies` (draft 4–7, and draft 3's
    /// string form), `dependentRequired` or `dependentSchemas` (2019-09
    /// Core §10.2.2.4, Validation §6.5.4) as the exact union "`k` absent, or
    /// `k` present and `d` holds": `{properties: {k: false}}` ∪
    /// `{required: [k, …names]}` (or `{required: [k]} ∧ d` for a schema).
    /// Both members say nothing about non-objects, which satisfy the union.
    fn dependency(
        &mut self,
        k: &str,
        d: &Value,
        kw: &str,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Conj>, SchemaError> {
        let mut absent = Map::new();
        let mut p = Map::new();
        p.insert(k.to_string(), Value::Bool(false));
        absent.insert("properties".into(), Value::Object(p));
        let names = |a: &[Value]| -> Result<Vec<Value>, SchemaError> {
            let mut r = vec![Value::String(k.to_string())];
            for x in a {
                let x = x
                    .as_str()
                    .ok_or_else(|| SchemaError::invalid(kw, ptr, "must list property names"))?;
                r.push(Value::String(x.to_string()));
            }
            Ok(r)
        };
        let present: Vec<Conj> = match d {
            Value::Array(a) if kw != "dependentSchemas" => {
                let mut m = Map::new();
                m.insert("required".into(), Value::Array(names(a)?));
                vec![vec![(m, ptr.to_string())]]
            }
            Value::String(s) if kw == "dependencies" => {
                let mut m = Map::new();
                m.insert(
                    "required".into(),
                    Value::Array(names(&[Value::String(s.clone())])?),
                );
                vec![vec![(m, ptr.to_string())]]
            }
            Value::Object(_) | Value::Bool(_) if kw != "dependentRequired" => {
                let mut m = Map::new();
                m.insert("required".into(), Value::Array(names(&[])?));
                let sub = self.dnf(d, ptr, depth + 1)?;
                self.product(vec![vec![(m, ptr.to_string())]], sub, ptr, kw)?
            }
            _ => {
                return Err(SchemaError::invalid(
                    kw,
                    ptr,
                    "each value must be an array of names or a schema",
                ))
            }
        };
        let mut out = vec![vec![(absent, ptr.to_string())]];
        out.extend(present);
        Ok(out)
    }

    /// The complement of a schema, for the forms whose complement is a
    /// union of simple schemas: `true`/`false`/`{}`, `type`, `enum`/`const`
    /// of null/boolean/string members, `required`, `pattern` (strings
    /// matching none of [`NOT_PATTERNS`]), and `not`.
    fn negate(&mut self, v: &Value, ptr: &str, depth: usize) -> Result<Vec<Conj>, SchemaError> {
        if depth > MAX_INLINE_DEPTH {
            return Err(SchemaError::limit(
                Limit::Depth,
                MAX_INLINE_DEPTH,
                ptr,
                format!("more than {MAX_INLINE_DEPTH} nested not/$ref levels to negate"),
            ));
        }
        let any = || vec![vec![(Map::new(), ptr.to_string())]];
        let one = |m: Map<String, Value>| vec![(m, ptr.to_string())];
        let obj = match v {
            Value::Bool(true) => return Ok(vec![]),
            Value::Bool(false) => return Ok(any()),
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
                if depth > MAX_INLINE_DEPTH {
                    return Err(SchemaError::unsupported(
                        "not",
                        ptr,
                        "reference cycle under `not`",
                    ));
                }
                let (target, tptr) = self.resolve(r, &push_ptr(ptr, "$ref"))?;
                return self.negate(target, &tptr, depth + 1);
            }
        }
        let refuse = || {
            SchemaError::unsupported(
                "not",
                ptr,
                "only `not` of true/false/{}, `type`, scalar `enum`/`const`, `required`, `not`, \
                 `properties`, `pattern`, numeric bounds, length/item/property counts, or a conjunction of \
                 these is implemented",
            )
        };
        // ¬(A ∧ B ∧ …) = ¬A ∨ ¬B ∨ … for keywords that act independently
        if keys.len() > 1 {
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
            let draft4_exclusive = ["exclusiveMinimum", "exclusiveMaximum"]
                .iter()
                .any(|k| obj.get(*k).is_some_and(Value::is_boolean));
            if draft4_exclusive || keys.iter().any(|k| !INDEPENDENT.contains(&k.as_str())) {
                return Err(refuse());
            }
            let mut out = Vec::new();
            for k in keys {
                let mut m = Map::new();
                m.insert(k.clone(), obj[k.as_str()].clone());
                out.extend(self.negate(&Value::Object(m), ptr, depth + 1)?);
                if out.len() > self.opts.max_branches {
                    return Err(self.too_many_branches(ptr, "not", out.len()));
                }
            }
            return Ok(out);
        }
        // ¬(a bound on one type): values of that type beyond the bound
        // (values of other types satisfy the bound vacuously)
        let typed = |t: &str, k: &str, v: Value| -> Vec<Conj> {
            let mut m = Map::new();
            m.insert("type".into(), Value::String(t.into()));
            m.insert(k.into(), v);
            vec![one(m)]
        };
        let count = |k: &str| -> Result<u64, SchemaError> {
            obj[k]
                .as_u64()
                .or_else(|| {
                    obj[k]
                        .as_f64()
                        .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                        .map(|f| f as u64)
                })
                .ok_or_else(|| SchemaError::invalid(k, ptr, "must be a non-negative integer"))
        };
        if let [k] = keys.as_slice() {
            let k = k.as_str();
            let num = || obj[k].clone();
            match k {
                "minimum" => return Ok(typed("number", "exclusiveMaximum", num())),
                "exclusiveMinimum" if obj[k].is_number() => {
                    return Ok(typed("number", "maximum", num()))
                }
                "maximum" => return Ok(typed("number", "exclusiveMinimum", num())),
                "exclusiveMaximum" if obj[k].is_number() => {
                    return Ok(typed("number", "minimum", num()))
                }
                "minItems" | "minLength" | "minProperties" => {
                    let n = count(k)?;
                    if n == 0 {
                        return Ok(vec![]);
                    }
                    let (t, other) = match k {
                        "minItems" => ("array", "maxItems"),
                        "minLength" => ("string", "maxLength"),
                        _ => ("object", "maxProperties"),
                    };
                    return Ok(typed(t, other, Value::from(n - 1)));
                }
                "maxItems" | "maxLength" | "maxProperties" => {
                    let n = count(k)?;
                    let (t, other) = match k {
                        "maxItems" => ("array", "minItems"),
                        "maxLength" => ("string", "minLength"),
                        _ => ("object", "minProperties"),
                    };
                    return Ok(typed(t, other, Value::from(n + 1)));
                }
                "pattern" => {
                    // ¬(a string matches p) = a string not matching p
                    let p = obj[k]
                        .as_str()
                        .ok_or_else(|| SchemaError::invalid("pattern", ptr, "must be a string"))?;
                    return Ok(typed(
                        "string",
                        NOT_PATTERNS,
                        Value::Array(vec![Value::String(p.into())]),
                    ));
                }
                "properties" => {
                    // ¬(every present xᵢ satisfies Sᵢ) = an object with some xᵢ
                    // present and violating Sᵢ
                    let props = obj[k].as_object().ok_or_else(|| {
                        SchemaError::invalid("properties", ptr, "must be an object")
                    })?;
                    let mut out = Vec::new();
                    for (x, sx) in props {
                        if sx == &Value::Bool(true) || sx.as_object().is_some_and(|m| m.is_empty())
                        {
                            continue;
                        }
                        // fail here, not when the property is emitted, if
                        // ¬Sᵢ cannot be expressed
                        self.negate(sx, &push_ptr(&push_ptr(ptr, "properties"), x), depth + 1)?;
                        let mut p = Map::new();
                        let mut n = Map::new();
                        n.insert("not".into(), sx.clone());
                        p.insert(x.clone(), Value::Object(n));
                        let mut m = Map::new();
                        m.insert("type".into(), Value::String("object".into()));
                        m.insert(
                            "required".into(),
                            Value::Array(vec![Value::String(x.clone())]),
                        );
                        m.insert("properties".into(), Value::Object(p));
                        out.push(one(m));
                    }
                    return Ok(out);
                }
                _ => {}
            }
        }
        match keys.as_slice() {
            [] => {
                self.note_unsat(ptr, "`not` of a schema that accepts everything");
                Ok(vec![])
            }
            [k] if k.as_str() == "not" => self.dnf(&obj["not"], &push_ptr(ptr, "not"), depth + 1),
            [k] if k.as_str() == "type" => {
                let t = parse_types(&obj["type"])
                    .ok_or_else(|| SchemaError::invalid("type", ptr, "bad type"))?;
                // integers are numbers: not(number) excludes both
                let t = if t & T_NUMBER != 0 { t | T_INTEGER } else { t };
                let mut c = T_ALL & !t;
                if t & T_INTEGER != 0 && t & T_NUMBER == 0 {
                    // not(integer): non-integral numbers cannot be expressed
                    return Err(SchemaError::unsupported(
                        "not",
                        ptr,
                        "`not: {type: integer}` (non-integral numbers)",
                    ));
                }
                c &= !T_INTEGER;
                if c == 0 {
                    return Ok(vec![]);
                }
                let mut m = Map::new();
                m.insert("type".into(), types_value(c));
                Ok(vec![one(m)])
            }
            [k] if k.as_str() == "enum" || k.as_str() == "const" => {
                let vals: Vec<Value> = match (&obj.get("enum"), &obj.get("const")) {
                    (Some(Value::Array(a)), _) => a.clone(),
                    (None, Some(c)) => vec![(*c).clone()],
                    _ => return Err(SchemaError::invalid("enum", ptr, "must be an array")),
                };
                let mut types = T_ALL & !T_INTEGER;
                let mut out = Vec::new();
                let (mut t, mut f) = (false, false);
                let mut strs = Vec::new();
                for x in &vals {
                    match x {
                        Value::Null => types &= !T_NULL,
                        Value::Bool(true) => t = true,
                        Value::Bool(false) => f = true,
                        Value::String(s) => strs.push(Value::String(s.clone())),
                        _ => return Err(refuse()),
                    }
                }
                if t || f {
                    types &= !T_BOOL;
                    if !(t && f) {
                        let mut m = Map::new();
                        m.insert("enum".into(), Value::Array(vec![Value::Bool(!t)]));
                        out.push(one(m));
                    }
                }
                if !strs.is_empty() {
                    types &= !T_STRING;
                    let mut m = Map::new();
                    m.insert("type".into(), Value::String("string".into()));
                    m.insert(NOT_IN.into(), Value::Array(strs));
                    out.push(one(m));
                }
                let mut m = Map::new();
                m.insert("type".into(), types_value(types));
                out.push(one(m));
                Ok(out)
            }
            [k] if k.as_str() == "required" => {
                let r = obj["required"]
                    .as_array()
                    .ok_or_else(|| SchemaError::invalid("required", ptr, "must be an array"))?;
                let mut out = Vec::new();
                for name in r {
                    let name = name.as_str().ok_or_else(|| {
                        SchemaError::invalid("required", ptr, "must hold strings")
                    })?;
                    let mut props = Map::new();
                    props.insert(name.to_string(), Value::Bool(false));
                    // an object without the name (non-objects satisfy `required`)
                    let mut m = Map::new();
                    m.insert("type".into(), Value::String("object".into()));
                    m.insert("properties".into(), Value::Object(props));
                    out.push(one(m));
                }
                Ok(out)
            }
            _ => Err(refuse()),
        }
    }

    /// [`Limit::Branches`] exceeded at `ptr` by the union of keyword `what`.
    fn too_many_branches(&self, ptr: &str, what: &str, n: usize) -> SchemaError {
        SchemaError::limit(
            Limit::Branches,
            self.opts.max_branches,
            ptr,
            format!(
                "`{what}` expands the schema to {n} branches, more than max_branches {}",
                self.opts.max_branches
            ),
        )
    }

    /// The conjunction of two unions (`a × b`); `what` names the keyword
    /// whose union `b` is, for the error when the product exceeds
    /// `max_branches`.
    fn product(
        &mut self,
        a: Vec<Conj>,
        b: Vec<Conj>,
        ptr: &str,
        what: &str,
    ) -> Result<Vec<Conj>, SchemaError> {
        let n = a.len().saturating_mul(b.len());
        if n > self.opts.max_branches {
            return Err(self.too_many_branches(ptr, what, n));
        }
        if b.is_empty() || a.is_empty() {
            return Ok(vec![]);
        }
        let mut out = Vec::with_capacity(a.len() * b.len());
        for x in &a {
            for y in &b {
                let mut c = x.clone();
                c.extend(y.iter().cloned());
                out.push(c);
            }
        }
        Ok(out)
    }

    /// Merges a conjunction of plain schemas into one; `None` when it is
    /// found contradictory.
    fn merge(&mut self, conj: Conj) -> Result<Option<Simple>, SchemaError> {
        let mut it = conj.into_iter();
        let Some((mut acc, ptr)) = it.next() else {
            return Ok(Some(Simple {
                map: Map::new(),
                ptr: String::new(),
            }));
        };
        for (m, p) in it {
            match merge2(acc, m, &p)? {
                Sat::Yes(x) => acc = x,
                Sat::No(reason) => {
                    self.note_unsat(&p, reason.to_string());
                    return Ok(None);
                }
            }
        }
        if let Some(Value::Array(e)) = acc.get("enum") {
            if e.is_empty() {
                self.note_unsat(&ptr, "empty enum");
                return Ok(None);
            }
        }
        Ok(Some(Simple { map: acc, ptr }))
    }
}

/// Plain-name anchors of a document: `$anchor` values and `#name` ids,
/// mapped to JSON pointers (walked with an explicit stack).
fn collect_anchors(root: &Value) -> std::collections::HashMap<String, String> {
    let mut out = std::collections::HashMap::new();
    let mut stack: Vec<(&Value, String)> = vec![(root, String::new())];
    while let Some((v, p)) = stack.pop() {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(a)) = m.get("$anchor") {
                    out.entry(a.clone()).or_insert_with(|| p.clone());
                }
                for k in ["$id", "id"] {
                    if let Some(Value::String(id)) = m.get(k) {
                        if let Some(name) = id.strip_prefix('#') {
                            out.entry(name.to_string()).or_insert_with(|| p.clone());
                        }
                    }
                }
                for (k, x) in m {
                    stack.push((x, push_ptr(&p, k)));
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    stack.push((x, push_ptr(&p, &i.to_string())));
                }
            }
            _ => {}
        }
    }
    out
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Rewrites older spellings into one form: draft-4 boolean
/// `exclusiveMinimum`/`exclusiveMaximum`, array-form `items` with
/// `additionalItems`, `const` as a one-element `enum`.
fn normalize_plain(m: &mut Map<String, Value>, ptr: &str) -> Result<(), SchemaError> {
    for (ex, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match m.get(ex) {
            Some(Value::Bool(true)) => {
                let b = m.remove(bound).ok_or_else(|| {
                    SchemaError::invalid(ex, ptr, format!("`{ex}: true` (draft 4) needs `{bound}`"))
                })?;
                m.insert(ex.into(), b);
            }
            Some(Value::Bool(false)) => {
                m.remove(ex);
            }
            Some(Value::Number(_)) | None => {}
            Some(_) => {
                return Err(SchemaError::invalid(
                    ex,
                    ptr,
                    "must be a number (or a boolean in draft 4)",
                ))
            }
        }
    }
    if let Some(Value::Array(items)) = m.get("items").cloned() {
        if m.contains_key("prefixItems") {
            return Err(SchemaError::invalid(
                "items",
                ptr,
                "array-form `items` together with `prefixItems`",
            ));
        }
        m.insert("prefixItems".into(), Value::Array(items));
        match m.remove("additionalItems") {
            Some(a) => m.insert("items".into(), a),
            None => m.remove("items"),
        };
    } else {
        // `additionalItems` without array-form `items` has no effect.
        m.remove("additionalItems");
    }
    if let Some(c) = m.remove("const") {
        let e = match m.remove("enum") {
            Some(Value::Array(e)) => e.into_iter().filter(|x| json_eq(x, &c)).collect(),
            Some(_) => return Err(SchemaError::invalid("enum", ptr, "must be an array")),
            None => vec![c],
        };
        m.insert("enum".into(), Value::Array(e));
    }
    if let Some(t) = m.get("type") {
        let mask = parse_types(t).ok_or_else(|| {
            SchemaError::invalid("type", ptr, "must be a type name or an array of type names")
        })?;
        m.insert("type".into(), types_value(mask));
    }
    if let Some(e) = m.get("enum") {
        if !e.is_array() {
            return Err(SchemaError::invalid("enum", ptr, "must be an array"));
        }
    }
    Ok(())
}

fn num(v: &Value, k: &str, ptr: &str) -> Result<f64, SchemaError> {
    v.as_f64()
        .ok_or_else(|| SchemaError::invalid(k, ptr, "must be a number"))
}

/// Merges two plain schemas (`a` ∧ `b`). [`Sat::No`] when they
/// contradict each other.
fn merge2(
    mut a: Map<String, Value>,
    mut b: Map<String, Value>,
    ptr: &str,
) -> Result<Sat<Map<String, Value>>, SchemaError> {
    // `minContains`/`maxContains` do nothing beside no `contains`: drop them
    // so that they do not attach to the other side's `contains`
    for m in [&mut a, &mut b] {
        if !m.contains_key("contains") {
            m.remove("minContains");
            m.remove("maxContains");
        }
    }
    // objects: properties/additionalProperties per key
    let (a_pp, b_pp) = (
        a.contains_key("patternProperties"),
        b.contains_key("patternProperties"),
    );
    if b_pp && !a_pp {
        // the conjunction is symmetric: keep the patterns on the left
        std::mem::swap(&mut a, &mut b);
    }
    let a_obj = a.contains_key("properties") || a.contains_key("additionalProperties");
    let b_obj = b.contains_key("properties") || b.contains_key("additionalProperties");
    if a_pp || b_pp {
        if a_pp && b_pp {
            return Err(SchemaError::unsupported(
                "patternProperties",
                ptr,
                "allOf of two schemas with patternProperties",
            ));
        }
        if b_obj {
            merge_into_patterns(&mut a, &mut b, ptr)?;
        }
    } else if a_obj && b_obj {
        let pa = take_map(&mut a, "properties", ptr)?;
        let pb = take_map(&mut b, "properties", ptr)?;
        let aa = a
            .remove("additionalProperties")
            .unwrap_or(Value::Bool(true));
        let ab = b
            .remove("additionalProperties")
            .unwrap_or(Value::Bool(true));
        let mut props = Map::new();
        for (k, v) in &pa {
            let other = pb.get(k).cloned().unwrap_or_else(|| ab.clone());
            props.insert(k.clone(), all_of(vec![v.clone(), other]));
        }
        for (k, v) in &pb {
            if !pa.contains_key(k) {
                props.insert(k.clone(), all_of(vec![aa.clone(), v.clone()]));
            }
        }
        a.insert("properties".into(), Value::Object(props));
        let add = all_of(vec![aa, ab]);
        if add != Value::Bool(true) {
            a.insert("additionalProperties".into(), add);
        }
    } else if b_obj {
        for k in ["properties", "additionalProperties"] {
            if let Some(v) = b.remove(k) {
                a.insert(k.into(), v);
            }
        }
    }
    // arrays: prefixItems/items per position
    let a_arr = a.contains_key("prefixItems") || a.contains_key("items");
    let b_arr = b.contains_key("prefixItems") || b.contains_key("items");
    if a_arr && b_arr {
        let pa = take_arr(&mut a, "prefixItems", ptr)?;
        let pb = take_arr(&mut b, "prefixItems", ptr)?;
        let ia = a.remove("items").unwrap_or(Value::Bool(true));
        let ib = b.remove("items").unwrap_or(Value::Bool(true));
        let n = pa.len().max(pb.len());
        let prefix: Vec<Value> = (0..n)
            .map(|j| {
                all_of(vec![
                    pa.get(j).cloned().unwrap_or_else(|| ia.clone()),
                    pb.get(j).cloned().unwrap_or_else(|| ib.clone()),
                ])
            })
            .collect();
        if !prefix.is_empty() {
            a.insert("prefixItems".into(), Value::Array(prefix));
        }
        let items = all_of(vec![ia, ib]);
        if items != Value::Bool(true) {
            a.insert("items".into(), items);
        }
    } else if b_arr {
        for k in ["prefixItems", "items"] {
            if let Some(v) = b.remove(k) {
                a.insert(k.into(), v);
            }
        }
    }
    for (k, v) in b {
        let Some(old) = a.get(&k).cloned() else {
            a.insert(k, v);
            continue;
        };
        let merged = match k.as_str() {
            "type" => {
                let t = intersect_types(
                    parse_types(&old).unwrap_or(T_ALL),
                    parse_types(&v).unwrap_or(T_ALL),
                );
                if t == 0 {
                    return Ok(Sat::No(Unsat::DisjointTypes(old, v)));
                }
                types_value(t)
            }
            "enum" => {
                let (Value::Array(x), Value::Array(y)) = (&old, &v) else {
                    return Err(SchemaError::invalid("enum", ptr, "must be an array"));
                };
                Value::Array(
                    x.iter()
                        .filter(|e| y.iter().any(|f| json_eq(e, f)))
                        .cloned()
                        .collect(),
                )
            }
            "required" | NOT_IN | PATTERNS | NOT_PATTERNS => {
                let (Value::Array(x), Value::Array(y)) = (&old, &v) else {
                    return Err(SchemaError::invalid("required", ptr, "must be an array"));
                };
                let mut r = x.clone();
                for e in y {
                    if !r.contains(e) {
                        r.push(e.clone());
                    }
                }
                Value::Array(r)
            }
            "minLength" | "minItems" | "minProperties" | "minimum" | "exclusiveMinimum" => {
                if num(&v, &k, ptr)? > num(&old, &k, ptr)? {
                    v
                } else {
                    old
                }
            }
            "maxLength" | "maxItems" | "maxProperties" | "maximum" | "exclusiveMaximum" => {
                if num(&v, &k, ptr)? < num(&old, &k, ptr)? {
                    v
                } else {
                    old
                }
            }
            "pattern" => {
                // both must match: the second is kept under PATTERNS
                if old != v {
                    let more = a
                        .entry(PATTERNS)
                        .or_insert_with(|| Value::Array(Vec::new()));
                    match more {
                        Value::Array(x) if !x.contains(&v) => x.push(v),
                        Value::Array(_) => {}
                        _ => return Err(SchemaError::invalid("pattern", ptr, "must be a string")),
                    }
                }
                old
            }
            // every key must satisfy both
            "propertyNames" => all_of(vec![old, v]),
            "format" => {
                if old != v {
                    return Err(SchemaError::unsupported(
                        &k,
                        ptr,
                        format!("conjunction of two different `{k}` values"),
                    ));
                }
                old
            }
            _ => {
                if old != v {
                    return Err(SchemaError::unsupported(
                        &k,
                        ptr,
                        "cannot merge this keyword in allOf",
                    ));
                }
                old
            }
        };
        a.insert(k, merged);
    }
    Ok(Sat::Yes(a))
}

/// `a ∧ b` for the object keywords where `a` has `patternProperties` and
/// `b` has `properties`/`additionalProperties` but no patterns. Exact when
/// `b` allows every undeclared key (`additionalProperties` absent or
/// `true`): a key `b` declares but `a` does not must also satisfy what `a`
/// demands of it — the schemas of `a`'s patterns it matches (which the
/// emitter applies to every declared key) or else `a`'s
/// `additionalProperties`. Other cases are refused.
fn merge_into_patterns(
    a: &mut Map<String, Value>,
    b: &mut Map<String, Value>,
    ptr: &str,
) -> Result<(), SchemaError> {
    let ab = b
        .remove("additionalProperties")
        .unwrap_or(Value::Bool(true));
    if ab != Value::Bool(true) && ab.as_object().is_none_or(|m| !m.is_empty()) {
        return Err(SchemaError::unsupported(
            "patternProperties",
            ptr,
            "allOf of patternProperties with another schema's additionalProperties",
        ));
    }
    let aa = a
        .get("additionalProperties")
        .cloned()
        .unwrap_or(Value::Bool(true));
    let pats = super::objects::pattern_properties(a, ptr)?;
    let mut pa = take_map(a, "properties", ptr)?;
    let pb = take_map(b, "properties", ptr)?;
    for (k, v) in pb {
        let merged = match pa.get(&k) {
            Some(x) => all_of(vec![x.clone(), v]),
            None if pats.iter().any(|(p, _)| p.matches(&k)) => v,
            None => all_of(vec![aa.clone(), v]),
        };
        pa.insert(k, merged);
    }
    if !pa.is_empty() {
        a.insert("properties".into(), Value::Object(pa));
    }
    Ok(())
}

fn take_map(
    m: &mut Map<String, Value>,
    k: &str,
    ptr: &str,
) -> Result<Map<String, Value>, SchemaError> {
    match m.remove(k) {
        None => Ok(Map::new()),
        Some(Value::Object(o)) => Ok(o),
        Some(_) => Err(SchemaError::invalid(k, ptr, "must be an object")),
    }
}

fn take_arr(m: &mut Map<String, Value>, k: &str, ptr: &str) -> Result<Vec<Value>, SchemaError> {
    match m.remove(k) {
        None => Ok(Vec::new()),
        Some(Value::Array(o)) => Ok(o),
        Some(_) => Err(SchemaError::invalid(k, ptr, "must be an array")),
    }
}

/// `OneOfMode::RequireDisjoint`: refuses a `oneOf` unless every two of its
/// branches (each a union of conjunctions, starting at `starts[i]` in
/// `union`) are provably disjoint, so that compiling it as `anyOf` is exact.
fn check_one_of_disjoint(
    union: &[Conj],
    starts: &[usize],
    ctx: &Conj,
    ptr: &str,
) -> Result<(), SchemaError> {
    let branch_of = |k: usize| starts.iter().rposition(|&s| s <= k).unwrap_or(0);
    let with_ctx = |c: &Conj| -> Conj { ctx.iter().chain(c.iter()).cloned().collect() };
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

/// Type bits with `integer` folded into `number`, so intersections stay
/// conservative.
fn fold_integer(t: u8) -> u8 {
    if t & T_INTEGER != 0 {
        (t & !T_INTEGER) | T_NUMBER
    } else {
        t
    }
}

fn value_type(v: &Value) -> u8 {
    match v {
        Value::Null => T_NULL,
        Value::Bool(_) => T_BOOL,
        Value::Number(_) => T_NUMBER,
        Value::String(_) => T_STRING,
        Value::Array(_) => T_ARRAY,
        Value::Object(_) => T_OBJECT,
    }
}

/// The `const`/`enum` values a schema map allows, if it lists them; a map
/// whose `anyOf`/`oneOf` branches all list values allows at most their
/// union.
fn listed_values(m: &Map<String, Value>) -> Option<Vec<&Value>> {
    if let Some(c) = m.get("const") {
        return Some(vec![c]);
    }
    if let Some(e) = m.get("enum").and_then(Value::as_array) {
        return Some(e.iter().collect());
    }
    for kw in ["anyOf", "oneOf"] {
        if let Some(bs) = m.get(kw).and_then(Value::as_array) {
            let mut out = Vec::new();
            for b in bs {
                match b {
                    Value::Object(bm) if raw_ok(bm) => out.extend(listed_values(bm)?),
                    Value::Bool(false) => {}
                    _ => return None,
                }
            }
            return Some(out);
        }
    }
    None
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

/// An upper bound of the types one schema map allows (its `type`, its
/// listed values, and the union over its `anyOf`/`oneOf` branches).
fn map_types(m: &Map<String, Value>) -> u8 {
    let mut t = T_ALL;
    if let Some(ty) = m.get("type").and_then(parse_types) {
        t &= fold_integer(ty);
    }
    if let Some(vals) = listed_values(m) {
        t &= vals.iter().fold(0, |acc, v| acc | value_type(v));
    }
    for kw in ["anyOf", "oneOf"] {
        if let Some(bs) = m.get(kw).and_then(Value::as_array) {
            let mut u = 0;
            for b in bs {
                u |= match b {
                    Value::Object(bm) if raw_ok(bm) => map_types(bm),
                    Value::Bool(false) => 0,
                    _ => T_ALL,
                };
            }
            t &= u;
        }
    }
    t
}

/// An upper bound of the types a conjunction allows.
fn conj_types(c: &Conj) -> u8 {
    fold_integer(c.iter().fold(T_ALL, |t, (m, _)| t & map_types(m)))
}

/// The schemas a conjunction imposes on the value of property `p` when
/// present: `properties[p]`, or else `additionalProperties` of a map
/// without `patternProperties`.
fn key_schemas<'c>(c: &'c Conj, p: &str) -> Vec<&'c Value> {
    c.iter()
        .filter_map(
            |(m, _)| match m.get("properties").and_then(|ps| ps.get(p)) {
                Some(v) => Some(v),
                None if !m.contains_key("patternProperties") => m.get("additionalProperties"),
                None => None,
            },
        )
        .collect()
}

fn required_names(c: &Conj) -> Vec<&str> {
    c.iter()
        .filter_map(|(m, _)| m.get("required").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Whether the keywords of a raw (not normalised) schema map bound it as
/// [`map_types`]/[`listed_values`] read them: no `$ref` (whose siblings a
/// draft may ignore) and no OpenAPI `nullable: true` (which adds `null`).
fn raw_ok(m: &Map<String, Value>) -> bool {
    !m.contains_key("$ref") && m.get("nullable") != Some(&Value::Bool(true))
}

/// True when no value satisfies both schemas (sound, incomplete); raw maps
/// that fail [`raw_ok`] are not looked into.
fn schema_disjoint(x: &Value, y: &Value, depth: usize) -> bool {
    match (x, y) {
        (Value::Bool(false), _) | (_, Value::Bool(false)) => true,
        (Value::Object(a), Value::Object(b)) if raw_ok(a) && raw_ok(b) => conj_disjoint(
            &vec![(a.clone(), String::new())],
            &vec![(b.clone(), String::new())],
            depth + 1,
        ),
        _ => false,
    }
}

/// True when no JSON value satisfies both conjunctions (a sound, incomplete
/// test: `false` means "could not prove it"): disjoint types, disjoint
/// listed values, or — for the objects both allow, when neither allows a
/// non-object in common — a property required by one of them on whose
/// value they impose disjoint schemas (a discriminator, or a key the other
/// side forbids).
fn conj_disjoint(a: &Conj, b: &Conj, depth: usize) -> bool {
    let common = conj_types(a) & conj_types(b);
    if common == 0 {
        return true;
    }
    let la: Vec<&Value> = a
        .iter()
        .filter_map(|(m, _)| listed_values(m))
        .flatten()
        .collect();
    let lb: Vec<&Value> = b
        .iter()
        .filter_map(|(m, _)| listed_values(m))
        .flatten()
        .collect();
    // Every listed set bounds the conjunction's values, so their union does.
    if !la.is_empty() && !lb.is_empty() && values_disjoint(&la, &lb) {
        return true;
    }
    if common != T_OBJECT || depth > 4 {
        return false;
    }
    let mut req = required_names(a);
    req.extend(required_names(b));
    req.into_iter().any(|p| {
        let (sa, sb) = (key_schemas(a, p), key_schemas(b, p));
        sa.iter().chain(&sb).any(|s| **s == Value::Bool(false))
            || sa
                .iter()
                .any(|x| sb.iter().any(|y| schema_disjoint(x, y, depth)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn branches(s: Value) -> Vec<Value> {
        let opts = JsonSchemaOptions {
            openapi_nullable: true,
            ..JsonSchemaOptions::default()
        };
        let mut n = Normalizer::new(&s, &opts);
        n.branches(&s, "")
            .unwrap()
            .into_iter()
            .map(|b| Value::Object(b.map))
            .collect()
    }

    #[test]
    fn allof_merges_properties_per_key() {
        let s = json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false, "required": ["a"]},
            {"properties": {"a": {"maxLength": 3}, "b": {"type": "integer"}}, "required": ["b"]}
        ]});
        let b = branches(s);
        assert_eq!(
            b,
            vec![json!({"type": ["object"], "properties": {
                "a": {"allOf": [{"type": "string"}, {"maxLength": 3}]},
                "b": false
            }, "additionalProperties": false, "required": ["a", "b"]})]
        );
    }

    #[test]
    fn anyof_distributes_siblings_and_types_intersect() {
        let s = json!({"type": ["number", "string"], "anyOf": [{"type": "integer"}, {"type": "null"}, {"minimum": 1}]});
        let b = branches(s);
        assert_eq!(b.len(), 2, "{b:?}"); // null branch contradicts
        assert_eq!(b[0]["type"], json!(["integer"]));
        assert_eq!(b[1]["minimum"], json!(1));
    }

    #[test]
    fn refs_and_draft4_forms() {
        let s = json!({
            "definitions": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": true}},
            "$ref": "#/definitions/n",
            "nullable": true
        });
        let b = branches(s);
        assert_eq!(
            b,
            vec![
                json!({"type": ["number"], "exclusiveMinimum": 0}),
                json!({"type": "null"})
            ]
        );
        let bad = json!({"$ref": "#/definitions/missing"});
        let opts = JsonSchemaOptions::default();
        let mut n = Normalizer::new(&bad, &opts);
        assert!(matches!(
            n.branches(&bad, ""),
            Err(SchemaError::BadRef { .. })
        ));
        let cyc = json!({"$ref": "#"});
        let mut n = Normalizer::new(&cyc, &opts);
        assert!(matches!(
            n.branches(&cyc, ""),
            Err(SchemaError::LimitExceeded {
                limit: Limit::Depth,
                ..
            })
        ));
    }
}
