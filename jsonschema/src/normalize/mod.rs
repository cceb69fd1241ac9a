//! Schema normalisation: `$ref`, `allOf`, `anyOf`, `oneOf`, `not`,
//! `if`/`then`/`else`, the dependency keywords and `nullable` are
//! eliminated from the top of a schema node by rewriting it into a
//! disjunction of typed *simple* schemas ([`Simple`], module `schema`):
//! keywords without applicators.
//!
//! * `allOf` (and sibling keywords next to an applicator, which JSON Schema
//!   2019+ evaluates as a conjunction) is a conjunction; conjunctions are
//!   *merged* keyword by keyword, one JSON type at a time
//!   ([`crate::schema::merge`]): `type` sets intersect, `enum`s intersect,
//!   lower bounds take the max, upper bounds the min, `multipleOf`s their
//!   least common multiple (exact), `required` unites,
//!   and `properties`/`additionalProperties` combine per key exactly as the
//!   conjunction demands (a key absent from one conjunct's `properties`
//!   must satisfy that conjunct's `additionalProperties`).
//! * `anyOf`/`oneOf` distribute over conjunctions (disjunctive normal form),
//!   bounded by [`JsonSchemaOptions::max_branches`](super::JsonSchemaOptions);
//!   `oneOf` needs its branches disjoint (`disjoint`) or negatable.
//! * `not` (`negate`) becomes a union of simple schemas, typed like the
//!   others (complements without a keyword of their own, such as "a string
//!   none of these" or "matching no pattern", are typed fields).
//! * `$ref` in such a position is inlined (bounded depth); a `$ref` that is
//!   the *whole* schema of a child is not inlined but compiled once as a
//!   shared nonterminal by the emitter, which is how recursion works.
//!
//! Subschemas below the top (property values, items) are [`Sub`] handles:
//! document schemas, their complements, or conjunctions of them.

mod disjoint;
mod negate;

use serde_json::{Map, Value};

use super::error::{push_ptr, Sat, SchemaError};
use super::resolve::{Bases, Unresolved};
use super::schema::{merge, Conditional, Dependency, Dialect, Node, Simple, Sub, TypeSet};
use super::{JsonSchemaOptions, OneOfMode};
use disjoint::check_one_of_disjoint;
use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;
use zapspec_grammar::Limit;

/// A conjunction of typed simple schemas, each with its pointer. The
/// members are shared: a product of unions (`allOf` of `anyOf`s) repeats
/// each member in many conjunctions, and only [`Normalizer::merge`] needs
/// one of its own.
type Conj<'a> = Vec<Rc<Simple<'a>>>;

/// One conjunction of one simple schema.
pub(super) fn one(s: Simple<'_>) -> Conj<'_> {
    vec![Rc::new(s)]
}

/// Resolves references and normalises schema nodes of one document.
pub(crate) struct Normalizer<'a> {
    pub(crate) root: &'a Value,
    /// The document's resources and anchors (module `resolve`), collected
    /// on the first `$ref`.
    bases: Option<Bases>,
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
    /// Relaxations (pointer, message): a `oneOf` whose branches are not
    /// provably disjoint, compiled as `anyOf` under [`OneOfMode::AsAnyOf`].
    pub relaxed: Vec<(String, String)>,
    /// The plain keywords of the schema nodes being normalised around the
    /// current one (all at the same instance location, so every one of
    /// them holds for any instance that reaches a `oneOf` inside): the
    /// context in which `oneOf` branches must be disjoint.
    context: Vec<Simple<'a>>,
    /// The schema objects parsed so far, by address (the document is
    /// borrowed for the normaliser's life, so an address is one object).
    nodes: HashMap<*const Map<String, Value>, Rc<Node<'a>>>,
    /// When the compilation's time budget runs out (`None`: never).
    pub(crate) deadline: Option<std::time::Instant>,
}

/// Depth bound for inlining `$ref`/applicators at one node.
const MAX_INLINE_DEPTH: usize = 48;

impl<'a> Normalizer<'a> {
    pub fn new(root: &'a Value, opts: &'a JsonSchemaOptions) -> Self {
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
            ref_siblings_ignored,
            no_if,
            integer_lexical,
            bases: None,
            opts,
            ignored: Vec::new(),
            first_unsat: None,
            relaxed: Vec::new(),
            context: Vec::new(),
            nodes: HashMap::default(),
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

    /// Resolves a `$ref` of schema object `obj` (found at `at`, named in
    /// errors) to the referenced value and its pointer, against the base
    /// URI of the resource `obj` belongs to
    /// (module `resolve`): `#`, `#/json/pointer` (percent-decoded),
    /// plain-name anchors, and URIs of the document's resources (`$id`s,
    /// relative ones resolved against their enclosing resource).
    pub fn resolve(
        &mut self,
        reference: &str,
        obj: &'a Map<String, Value>,
        at: &str,
    ) -> Result<(&'a Value, String), SchemaError> {
        let bad = |reason: &str| SchemaError::BadRef {
            reference: reference.to_string(),
            pointer: at.to_string(),
            reason: reason.to_string(),
        };
        let root = self.root;
        let bases = self.bases();
        let resolved = bases.target(reference, obj).map_err(|e| match e {
            Unresolved::BadUri(_) => bad("not a URI reference"),
            Unresolved::Outside(_) => bad("references outside the document are not supported"),
            Unresolved::NoAnchor => bad("no subschema declares this anchor"),
        });
        let in_resource = resolved.and_then(|(doc, frag)| {
            let frag = percent_decode(&frag).ok_or_else(|| bad("bad percent-encoding"))?;
            Ok(if frag.is_empty() {
                doc
            } else if frag.starts_with('/') {
                format!("{doc}{frag}")
            } else {
                // a plain-name fragment: `$anchor: name`, or (drafts 4–7)
                // `id`/`$id: "#name"`, in the target resource
                bases
                    .anchor_of(&doc, &frag)
                    .map_err(|_| bad("no subschema declares this anchor"))?
            })
        });
        match in_resource {
            Ok(p) => {
                if let Some(v) = root.pointer(&p) {
                    return Ok((v, p));
                }
                if !reference.starts_with('#') {
                    return Err(bad("no such location in the document"));
                }
            }
            Err(e) if !reference.starts_with('#') => return Err(e),
            Err(_) => {}
        }
        // A fragment-only reference that is not a location of its resource
        // (hyper-schemas write document-root pointers under a relative
        // `id`): read against the document root, as validators that ignore
        // such ids do.
        let frag = percent_decode(&reference[1..]).ok_or_else(|| bad("bad percent-encoding"))?;
        if frag.is_empty() || frag.starts_with('/') {
            return match root.pointer(&frag) {
                Some(v) => Ok((v, frag)),
                None => Err(bad("no such location in the document")),
            };
        }
        Err(bad("no subschema declares this anchor"))
    }

    /// The document's resources and anchors, collected on first use.
    fn bases(&mut self) -> &Bases {
        let root = self.root;
        let ids_beside_ref = !self.ref_siblings_ignored;
        self.bases
            .get_or_insert_with(|| Bases::new(root, ids_beside_ref))
    }

    /// Where the part `s` of a conjunction or complement stands in the
    /// document: its own pointer when it is a schema object of the
    /// document, else `fallback` (a pointer relative to the handle's, as
    /// if it were written `{"allOf": […]}`/`{"not": …}` there).
    fn part_ptr(&mut self, s: &Sub<'a>, fallback: String) -> String {
        let obj = match s {
            Sub::Schema(Value::Object(m)) | Sub::Not(Value::Object(m)) => m,
            _ => return fallback,
        };
        self.bases()
            .pointer_of(obj)
            .map_or(fallback, str::to_string)
    }

    /// The simple schemas whose union is the subschema `s` at `ptr`.
    /// Contradictory conjunctions are dropped (and noted).
    pub fn branches(&mut self, s: &Sub<'a>, ptr: &str) -> Result<Vec<Simple<'a>>, SchemaError> {
        let dnf = self.dnf_sub(s, ptr, 0)?;
        let mut out = Vec::new();
        for conj in dnf {
            if let Some(s) = self.merge(conj)? {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// The normal form of a handle: a document schema's, or that of the
    /// conjunction or complement it stands for (at the pointers of the
    /// `{"allOf": […]}`/`{"not": …}` schema it is equivalent to).
    fn dnf_sub(
        &mut self,
        s: &Sub<'a>,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Conj<'a>>, SchemaError> {
        match s {
            Sub::Schema(v) => self.dnf(v, ptr, depth),
            Sub::Simple(s) => Ok(vec![one((**s).clone())]),
            Sub::All(parts) => {
                self.check_depth(ptr, depth)?;
                self.check_time(ptr)?;
                let aptr = push_ptr(ptr, "allOf");
                let mut acc: Vec<Conj<'a>> = vec![one(Simple::any(ptr))];
                for (i, p) in parts.iter().enumerate() {
                    // the part where it stands in the document, so that
                    // messages point at the user's schema
                    let pp = self.part_ptr(p, push_ptr(&aptr, &i.to_string()));
                    let sub = self.dnf_sub(p, &pp, depth + 1)?;
                    acc = self.product(acc, sub, ptr, "allOf")?;
                }
                Ok(acc)
            }
            Sub::Not(v) => {
                self.check_depth(ptr, depth)?;
                self.check_time(ptr)?;
                let np = self.part_ptr(s, push_ptr(ptr, "not"));
                let neg = self.negate(v, &np, depth + 1)?;
                self.product(vec![one(Simple::any(ptr))], neg, ptr, "not")
            }
        }
    }

    /// [`Limit::Depth`] past [`MAX_INLINE_DEPTH`] levels of inlining.
    fn check_depth(&self, ptr: &str, depth: usize) -> Result<(), SchemaError> {
        if depth > MAX_INLINE_DEPTH {
            return Err(SchemaError::limit(
                Limit::Depth,
                MAX_INLINE_DEPTH,
                ptr,
                format!("more than {MAX_INLINE_DEPTH} nested $ref/allOf/anyOf levels to inline (a reference cycle that never reaches a property or item)"),
            ));
        }
        Ok(())
    }

    fn dnf(&mut self, v: &'a Value, ptr: &str, depth: usize) -> Result<Vec<Conj<'a>>, SchemaError> {
        self.check_depth(ptr, depth)?;
        self.check_time(ptr)?;
        let obj = match v {
            Value::Bool(true) => return Ok(vec![one(Simple::any(ptr))]),
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
        let node = self.node(obj, ptr)?;
        if let Some(r) = node.ref_only {
            let (target, tptr) = self.resolve(r, obj, &push_ptr(ptr, "$ref"))?;
            return self.dnf(target, &tptr, depth + 1);
        }
        for k in &node.ignored {
            self.ignored.push((ptr.to_string(), k.to_string()));
        }
        let mut plain = node.plain.clone();
        plain.ptr = ptr.to_string();
        self.context.push(plain.clone());
        let r = self.dnf_applicators(&node, plain, ptr, depth);
        self.context.pop();
        r
    }

    /// The parsed node of the schema object `obj` met at `ptr` (parsed on
    /// first use; a node that fails to parse is parsed again, so that its
    /// error names the pointer of each use).
    fn node(
        &mut self,
        obj: &'a Map<String, Value>,
        ptr: &str,
    ) -> Result<Rc<Node<'a>>, SchemaError> {
        let key: *const Map<String, Value> = obj;
        if let Some(n) = self.nodes.get(&key) {
            return Ok(n.clone());
        }
        let n = Rc::new(Node::parse(obj, ptr, self.dialect())?);
        self.nodes.insert(key, n.clone());
        Ok(n)
    }

    /// How the document's draft reads schema objects.
    fn dialect(&self) -> Dialect {
        Dialect {
            ref_siblings_ignored: self.ref_siblings_ignored,
            no_if: self.no_if,
            unknown_keywords: self.opts.unknown_keywords,
        }
    }

    /// The applicators of a schema object (`$ref`, `allOf`, `anyOf`,
    /// `oneOf`, `not`, `nullable`) conjoined with its plain keywords.
    fn dnf_applicators(
        &mut self,
        node: &Node<'a>,
        plain: Simple<'a>,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Conj<'a>>, SchemaError> {
        let mut acc: Vec<Conj<'a>> = vec![one(plain)];
        if let Some(r) = node.reference {
            let (target, tptr) = self.resolve(r, node.obj, &push_ptr(ptr, "$ref"))?;
            let sub = self.dnf(target, &tptr, depth + 1)?;
            acc = self.product(acc, sub, ptr, "$ref")?;
        }
        let aptr = push_ptr(ptr, "allOf");
        for (i, m) in node.all_of.iter().enumerate() {
            let sub = self.dnf(m, &push_ptr(&aptr, &i.to_string()), depth + 1)?;
            acc = self.product(acc, sub, ptr, "allOf")?;
        }
        if let Some(c) = &node.conditional {
            let union = self.conditional(c, ptr, depth)?;
            acc = self.product(acc, union, ptr, "if")?;
        }
        for d in &node.dependencies {
            let dptr = push_ptr(&push_ptr(ptr, d.keyword), d.name);
            let union = self.dependency(d, &dptr, depth)?;
            acc = self.product(acc, union, ptr, d.keyword)?;
        }
        for (kw, branches) in [("anyOf", node.any_of), ("oneOf", node.one_of)] {
            if let Some(a) = branches {
                let union = self.union(kw, a, ptr, depth)?;
                acc = self.product(acc, union, ptr, kw)?;
            }
        }
        if let Some(n) = node.not {
            let neg = self.negate(n, &push_ptr(ptr, "not"), depth + 1)?;
            acc = self.product(acc, neg, ptr, "not")?;
        }
        // JSON Schema has no `nullable`: validators ignore it.
        if node.nullable && self.opts.openapi_nullable {
            acc.push(one(Simple::of_type(TypeSet::NULL, ptr)));
        }
        Ok(acc)
    }

    /// `if I then T else E`  =  `(I ∧ T) ∨ (¬I ∧ E)` (2020-12 Core
    /// §10.2.2); exact where `not` of `I` is (see `negate`).
    fn conditional(
        &mut self,
        c: &Conditional<'a>,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Conj<'a>>, SchemaError> {
        let iptr = push_ptr(ptr, "if");
        let yes = self.dnf(c.test, &iptr, depth + 1)?;
        let then = match c.then {
            Some(t) => self.dnf(t, &push_ptr(ptr, "then"), depth + 1)?,
            None => vec![one(Simple::any(ptr))],
        };
        let mut union = self.product(yes, then, ptr, "then")?;
        let no = self.negate(c.test, &iptr, depth + 1).map_err(|e| match e {
            SchemaError::Unsupported {
                pointer, reason, ..
            } => SchemaError::Unsupported {
                keyword: "if".into(),
                pointer,
                reason: format!("its negation: {reason}"),
            },
            e => e,
        })?;
        let els = match c.otherwise {
            Some(e) => self.dnf(e, &push_ptr(ptr, "else"), depth + 1)?,
            None => vec![one(Simple::any(ptr))],
        };
        union.extend(self.product(no, els, ptr, "else")?);
        Ok(union)
    }

    /// The union of the branches of `anyOf` or `oneOf` (`kw`); a `oneOf`
    /// under [`OneOfMode::RequireDisjoint`] must have provably disjoint
    /// branches, or branches that can all be negated.
    fn union(
        &mut self,
        kw: &str,
        a: &'a [Value],
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Conj<'a>>, SchemaError> {
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
        if kw == "oneOf"
            && self.opts.one_of == OneOfMode::AsAnyOf
            && check_one_of_disjoint(&union, &starts, &self.context, &aptr).is_err()
            && !self.relaxed.iter().any(|(p, _)| p == &aptr)
        {
            self.relaxed.push((
                aptr.clone(),
                "oneOf branches that may overlap: falling back to anyOf semantics \
                 (an instance matching several branches is accepted)"
                    .into(),
            ));
        }
        if kw == "oneOf" && self.opts.one_of == OneOfMode::RequireDisjoint {
            let ctx: &[Simple] = &self.context;
            if let Err(e) = check_one_of_disjoint(&union, &starts, ctx, &aptr) {
                // not provably disjoint: exact where every branch can be
                // negated
                union = self.one_of_exact(a, &aptr, depth).map_err(|_| e)?;
            }
        }
        Ok(union)
    }

    /// `oneOf: [B₁, …, Bₙ]` exactly, as `⋃ᵢ (Bᵢ ∧ ⋀_{j≠i} ¬Bⱼ)` ("exactly
    /// one holds"); an error where some `Bⱼ` cannot be negated
    /// ([`Self::negate`]) or the branches exceed the limit.
    fn one_of_exact(
        &mut self,
        a: &'a [Value],
        aptr: &str,
        depth: usize,
    ) -> Result<Vec<Conj<'a>>, SchemaError> {
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
        dep: &Dependency<'a>,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Conj<'a>>, SchemaError> {
        let (k, d, kw) = (dep.name, dep.value, dep.keyword);
        let mut absent = Simple::any(ptr);
        absent.object.properties = Some(vec![(k.to_string(), Sub::FALSE)]);
        // `{required: [k, …names]}`
        let required = |a: &[Value]| -> Result<Simple<'a>, SchemaError> {
            let mut s = Simple::any(ptr);
            s.object.required.push(k.to_string());
            for x in a {
                let x = x
                    .as_str()
                    .ok_or_else(|| SchemaError::invalid(kw, ptr, "must list property names"))?;
                if !s.object.required.iter().any(|r| r == x) {
                    s.object.required.push(x.to_string());
                }
            }
            Ok(s)
        };
        let present: Vec<Conj<'a>> = match d {
            Value::Array(a) if kw != "dependentSchemas" => vec![one(required(a)?)],
            Value::String(s) if kw == "dependencies" => {
                vec![one(required(&[Value::String(s.clone())])?)]
            }
            Value::Object(_) | Value::Bool(_) if kw != "dependentRequired" => {
                let sub = self.dnf(d, ptr, depth + 1)?;
                self.product(vec![one(required(&[])?)], sub, ptr, kw)?
            }
            _ => {
                return Err(SchemaError::invalid(
                    kw,
                    ptr,
                    "each value must be an array of names or a schema",
                ))
            }
        };
        let mut out = vec![one(absent)];
        out.extend(present);
        Ok(out)
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
        a: Vec<Conj<'a>>,
        b: Vec<Conj<'a>>,
        ptr: &str,
        what: &str,
    ) -> Result<Vec<Conj<'a>>, SchemaError> {
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
    fn merge(&mut self, conj: Conj<'a>) -> Result<Option<Simple<'a>>, SchemaError> {
        let mut it = conj.into_iter().map(Rc::unwrap_or_clone);
        let Some(mut acc) = it.next() else {
            return Ok(Some(Simple::any("")));
        };
        for m in it {
            let p = m.ptr.clone();
            match merge(acc, m, &p)? {
                Sat::Yes(x) => acc = x,
                Sat::No(reason) => {
                    self.note_unsat(&p, reason.to_string());
                    return Ok(None);
                }
            }
        }
        if acc.enum_values.as_ref().is_some_and(Vec::is_empty) {
            let ptr = acc.ptr.clone();
            self.note_unsat(&ptr, "empty enum");
            return Ok(None);
        }
        Ok(Some(acc))
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn branches(s: &Value) -> Vec<Simple<'_>> {
        let opts = JsonSchemaOptions {
            openapi_nullable: true,
            ..JsonSchemaOptions::default()
        };
        // the branches borrow from the options too (one lifetime)
        let opts: &'static JsonSchemaOptions = Box::leak(Box::new(opts));
        let mut n = Normalizer::new(s, opts);
        n.branches(&Sub::Schema(s), "").unwrap()
    }

    #[test]
    fn allof_merges_properties_per_key() {
        let s = json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false, "required": ["a"]},
            {"properties": {"a": {"maxLength": 3}, "b": {"type": "integer"}}, "required": ["b"]}
        ]});
        let b = branches(&s);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].types, Some(TypeSet::OBJECT));
        assert_eq!(
            b[0].object.properties,
            Some(vec![
                (
                    "a".to_string(),
                    Sub::All(vec![
                        Sub::Schema(&json!({"type": "string"})),
                        Sub::Schema(&json!({"maxLength": 3}))
                    ])
                ),
                ("b".to_string(), Sub::FALSE)
            ])
        );
        assert_eq!(b[0].object.additional_properties, Some(Sub::FALSE));
        assert_eq!(b[0].object.required, vec!["a", "b"]);
    }

    #[test]
    fn anyof_distributes_siblings_and_types_intersect() {
        let s = json!({"type": ["number", "string"], "anyOf": [{"type": "integer"}, {"type": "null"}, {"minimum": 1}]});
        let b = branches(&s);
        assert_eq!(b.len(), 2, "{b:?}"); // null branch contradicts
        assert_eq!(b[0].types, Some(TypeSet::INTEGER));
        assert_eq!(b[1].number.minimum, Some(1.into()));
    }

    #[test]
    fn not_and_allof_patterns_are_typed_fields() {
        let s = json!({"type": "string", "pattern": "a",
            "allOf": [{"pattern": "b"}, {"not": {"enum": ["x"]}}],
            "not": {"pattern": "c"}});
        let b = branches(&s);
        assert_eq!(b.len(), 1, "{b:?}");
        assert_eq!(b[0].string.patterns, vec!["a", "b"]);
        assert_eq!(b[0].string.not_patterns, vec!["c"]);
        assert_eq!(b[0].string.not_in, vec!["x"]);
    }

    #[test]
    fn refs_and_draft4_forms() {
        let s = json!({
            "definitions": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": true}},
            "$ref": "#/definitions/n",
            "nullable": true
        });
        let b = branches(&s);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].types, Some(TypeSet::NUMBER));
        assert_eq!(b[0].number.exclusive_minimum, Some(0.into()));
        assert_eq!(b[0].number.minimum, None);
        assert_eq!(b[1].types, Some(TypeSet::NULL));
        let bad = json!({"$ref": "#/definitions/missing"});
        let opts = JsonSchemaOptions::default();
        let mut n = Normalizer::new(&bad, &opts);
        assert!(matches!(
            n.branches(&Sub::Schema(&bad), ""),
            Err(SchemaError::BadRef { .. })
        ));
        let cyc = json!({"$ref": "#"});
        let mut n = Normalizer::new(&cyc, &opts);
        assert!(matches!(
            n.branches(&Sub::Schema(&cyc), ""),
            Err(SchemaError::LimitExceeded {
                limit: Limit::Depth,
                ..
            })
        ));
    }
}
