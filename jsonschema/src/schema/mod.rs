//! The typed schema IR: what the normaliser produces and the emitter
//! reads.
//!
//! A [`Simple`] schema is one conjunct of the disjunctive normal form of a
//! schema node (module `normalize`): a set of allowed JSON types
//! ([`TypeSet`]), the `enum` values, and per JSON type the keywords that
//! constrain values of that type ([`NumberKw`], [`StringKw`], [`ArrayKw`],
//! [`ObjectKw`]), parsed and checked once from the schema's JSON, with the
//! JSON pointer of the schema they came from. Constraints that have no
//! keyword of their own — the complements that `not` produces (strings
//! outside a list, strings matching no pattern) and the further patterns of
//! an `allOf` — are typed fields too, never keywords written into a schema.
//!
//! Subschemas that a simple schema refers to (property values, items,
//! `contains`, `propertyNames` …) are [`Sub`] handles: a schema of the
//! document, the complement of one, a typed simple schema, or a
//! conjunction of such handles. The emitter compiles a handle to one
//! nonterminal, memoised by its key ([`SchemaKeys`]).
//!
//! A schema object of the document is read once into a [`Node`]: its
//! plain keywords (a [`Simple`]) and its applicators (`$ref`, `allOf`,
//! `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, the dependency keywords,
//! `nullable`), typed; the normaliser (module `normalize`) keeps one node
//! per object and computes the normal form from nodes. `not` reads the
//! keyword list of its operand itself (`normalize::negate`): its
//! complements are per keyword, in the operand's keyword order, and its
//! refusals name the combination of keywords.
//!
//! Costs: subschemas are borrowed from the document, never copied; parsing
//! clones only keyword values (numbers, names, patterns, `enum` members),
//! and merging two simple schemas ([`merge()`]) is linear in their keywords,
//! except `properties`, which are matched by name in `O(n·m)` (declared
//! names are few).

mod merge;
mod node;
mod parse;

use serde_json::{Map, Number, Value};

pub(crate) use merge::{merge, pattern_properties};
pub(crate) use node::{Conditional, Dependency, Dialect, Node};

/// Schema objects of at most this many entries are searched by a scan
/// ([`kw`]).
const SCAN_KEYWORDS: usize = 8;

/// `m.get(k)`, by a scan of the entries when the object is small: most
/// schema objects hold a handful of keywords, and a compile looks up some
/// thirty per object, where a scan beats hashing the key (serde_json's
/// ordered map hashes with SipHash).
#[inline]
pub(crate) fn kw<'v>(m: &'v Map<String, Value>, k: &str) -> Option<&'v Value> {
    if m.len() <= SCAN_KEYWORDS {
        m.iter().find(|(x, _)| x.as_str() == k).map(|(_, v)| v)
    } else {
        m.get(k)
    }
}

/// `m.contains_key(k)`, as [`kw`].
#[inline]
pub(crate) fn has(m: &Map<String, Value>, k: &str) -> bool {
    kw(m, k).is_some()
}

bitflags::bitflags! {
    /// A set of JSON types, as the `type` keyword lists them. `NUMBER`
    /// includes the integers; `INTEGER` alone means integers only.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub(crate) struct TypeSet: u8 {
        /// `null`
        const NULL = 1;
        /// `boolean`
        const BOOLEAN = 2;
        /// `object`
        const OBJECT = 4;
        /// `array`
        const ARRAY = 8;
        /// `number` (which includes the integers)
        const NUMBER = 16;
        /// `integer` only
        const INTEGER = 32;
        /// `string`
        const STRING = 64;
    }
}

impl TypeSet {
    /// The type set of a `type` value (a name or an array of names; draft
    /// 3's `any` is every type); `None` when it is malformed.
    pub fn parse(v: &Value) -> Option<TypeSet> {
        let one = |s: &str| -> Option<TypeSet> {
            Some(match s {
                "null" => TypeSet::NULL,
                "boolean" => TypeSet::BOOLEAN,
                "object" => TypeSet::OBJECT,
                "array" => TypeSet::ARRAY,
                "number" => TypeSet::NUMBER,
                "integer" => TypeSet::INTEGER,
                "string" => TypeSet::STRING,
                "any" => TypeSet::all(),
                _ => return None,
            })
        };
        match v {
            Value::String(s) => one(s),
            Value::Array(a) => {
                let mut m = TypeSet::empty();
                for x in a {
                    m |= one(x.as_str()?)?;
                }
                Some(m)
            }
            _ => None,
        }
    }

    /// The same set written canonically: `INTEGER` dropped beside
    /// `NUMBER`, which includes it.
    pub fn canonical(self) -> TypeSet {
        if self.contains(TypeSet::NUMBER) {
            self - TypeSet::INTEGER
        } else {
            self
        }
    }

    /// The set as a `type` value (for messages).
    pub fn to_value(self) -> Value {
        let t = self.canonical();
        let mut v = Vec::new();
        for (bit, name) in [
            (TypeSet::NULL, "null"),
            (TypeSet::BOOLEAN, "boolean"),
            (TypeSet::OBJECT, "object"),
            (TypeSet::ARRAY, "array"),
            (TypeSet::NUMBER, "number"),
            (TypeSet::INTEGER, "integer"),
            (TypeSet::STRING, "string"),
        ] {
            if t.contains(bit) {
                v.push(Value::String(name.into()));
            }
        }
        Value::Array(v)
    }

    /// Intersection (integers are numbers), canonical.
    pub fn intersect(self, other: TypeSet) -> TypeSet {
        let ex = |m: TypeSet| {
            if m.contains(TypeSet::NUMBER) {
                m | TypeSet::INTEGER
            } else {
                m
            }
        };
        let r = ex(self) & ex(other);
        if r.contains(TypeSet::NUMBER) {
            r.canonical()
        } else {
            r - TypeSet::NUMBER
        }
    }

    /// `INTEGER` folded into `NUMBER`, so that intersections of bounds
    /// stay conservative.
    pub fn fold_integer(self) -> TypeSet {
        if self.contains(TypeSet::INTEGER) {
            (self - TypeSet::INTEGER) | TypeSet::NUMBER
        } else {
            self
        }
    }

    /// The type of a JSON value (numbers as `NUMBER`).
    pub fn of_value(v: &Value) -> TypeSet {
        match v {
            Value::Null => TypeSet::NULL,
            Value::Bool(_) => TypeSet::BOOLEAN,
            Value::Number(_) => TypeSet::NUMBER,
            Value::String(_) => TypeSet::STRING,
            Value::Array(_) => TypeSet::ARRAY,
            Value::Object(_) => TypeSet::OBJECT,
        }
    }

    /// Whether a value has one of the types (an integral number is an
    /// `INTEGER`).
    pub fn admits(self, v: &Value) -> bool {
        match v {
            Value::Number(n) => {
                self.contains(TypeSet::NUMBER)
                    || (self.contains(TypeSet::INTEGER)
                        && (n.is_i64()
                            || n.is_u64()
                            || n.as_f64().is_some_and(|f| f.fract() == 0.0)))
            }
            v => self.intersects(TypeSet::of_value(v)),
        }
    }
}

/// A subschema a simple schema refers to (a property value, the items, …),
/// borrowed from the document.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Sub<'a> {
    /// A schema of the document (or `true`/`false`).
    Schema(&'a Value),
    /// The complement of a schema of the document (`not`, from negating
    /// `properties`).
    Not(&'a Value),
    /// A typed simple schema (a negation's branch, or the sibling keywords
    /// of an `enum`).
    Simple(Box<Simple<'a>>),
    /// The conjunction of at least two handles (from `allOf` merges, and
    /// a key matched by several `patternProperties`).
    All(Vec<Sub<'a>>),
}

/// The schema `true`, as a value to borrow.
const TRUE_SCHEMA: &Value = &Value::Bool(true);
/// The schema `false`, as a value to borrow.
const FALSE_SCHEMA: &Value = &Value::Bool(false);

impl<'a> Sub<'a> {
    /// The schema `true`.
    pub const TRUE: Sub<'static> = Sub::Schema(TRUE_SCHEMA);
    /// The schema `false`.
    pub const FALSE: Sub<'static> = Sub::Schema(FALSE_SCHEMA);

    /// Whether this is the schema `false`.
    pub fn is_false(&self) -> bool {
        matches!(self, Sub::Schema(Value::Bool(false)))
    }

    /// Whether this is the schema `true` (or `{}`).
    pub fn is_true(&self) -> bool {
        match self {
            Sub::Schema(Value::Bool(true)) => true,
            Sub::Schema(Value::Object(m)) => m.is_empty(),
            _ => false,
        }
    }

    /// The conjunction of handles: `true`s dropped, `false` absorbing,
    /// duplicates removed, a single one returned as is.
    pub fn all(parts: Vec<Sub<'a>>) -> Sub<'a> {
        let mut keep: Vec<Sub<'a>> = Vec::new();
        for p in parts {
            if p.is_true() {
                continue;
            }
            if p.is_false() {
                return Sub::FALSE;
            }
            if !keep.contains(&p) {
                keep.push(p);
            }
        }
        match keep.len() {
            0 => Sub::TRUE,
            1 => keep.pop().unwrap_or(Sub::TRUE),
            _ => Sub::All(keep),
        }
    }
}

/// The annotations ([`crate::keywords::ANNOTATIONS`]) that stay in memo
/// keys: identifiers, anchors and `$schema` change how a subschema's
/// references resolve, and `if` reads `then`/`else`. Every other
/// annotation is left out of the key.
const KEY_KEPT_ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "id",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$vocabulary",
    "then",
    "else",
];

/// Whether a schema object's key stays out of its memo key.
fn key_ignored(k: &str) -> bool {
    crate::keywords::classify(k) == crate::keywords::KeywordClass::Annotation
        && !KEY_KEPT_ANNOTATIONS.contains(&k)
}

/// The memo keys of handles ([`Sub`]), interned.
///
/// A handle's key stands for the JSON text of the schema it is (a
/// conjunction and a complement: of the `{"allOf": […]}`/`{"not": …}`
/// schema they are equivalent to, so a handle and the same schema written
/// in the document share a nonterminal), without the annotations
/// [`key_ignored`] names at schema positions (a property *named*
/// `description` stays): subschemas that differ only in their
/// documentation share a nonterminal — the same language, compiled once.
/// Data (`enum`, `const`, `required`, unknown keywords) is written as is.
///
/// Each document schema's text is written once, with its subschemas as
/// the ids of their own texts (`#7`), and interned: two schemas get the
/// same id exactly when their texts are equal (by induction on depth), and
/// the cost is linear in the document, where writing every subschema's
/// whole text was quadratic in its depth. Ids are kept by address too:
/// handles borrow the document for as long as the keys are used.
#[derive(Debug, Default)]
pub(crate) struct SchemaKeys {
    /// Document schema (by address) → id.
    by_addr: rustc_hash::FxHashMap<usize, u32>,
    /// Written text (subschemas as ids) → id.
    ids: rustc_hash::FxHashMap<String, u32>,
}

impl SchemaKeys {
    /// The memo key of `sub`.
    pub fn key(&mut self, sub: &Sub<'_>) -> String {
        match sub {
            Sub::Simple(s) => format!("{s:?}"),
            _ => format!("#{}", self.id(sub)),
        }
    }

    /// The id of `sub`'s text.
    fn id(&mut self, sub: &Sub<'_>) -> u32 {
        let text = match sub {
            Sub::Schema(v) => return self.schema(v),
            Sub::Not(v) => format!("{{\"not\":#{}}}", self.schema(v)),
            Sub::Simple(s) => format!("{s:?}"),
            Sub::All(ps) => {
                let mut out = String::from("{\"allOf\":[");
                for (i, p) in ps.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    match p {
                        Sub::Simple(s) => out.push_str(&format!("{s:?}")),
                        p => out.push_str(&format!("#{}", self.id(p))),
                    }
                }
                out.push_str("]}");
                out
            }
        };
        self.intern(text)
    }

    fn intern(&mut self, text: String) -> u32 {
        let n = self.ids.len() as u32;
        *self.ids.entry(text).or_insert(n)
    }

    /// The id of document schema `v`'s text.
    fn schema(&mut self, v: &Value) -> u32 {
        let addr = std::ptr::from_ref(v) as usize;
        if let Some(&id) = self.by_addr.get(&addr) {
            return id;
        }
        let mut out = String::new();
        self.write_schema(v, &mut out);
        let id = self.intern(out);
        self.by_addr.insert(addr, id);
        id
    }

    /// Writes `v`'s text with its subschemas as ids.
    fn write_schema(&mut self, v: &Value, out: &mut String) {
        use std::fmt::Write as _;
        let Value::Object(m) = v else {
            out.push_str(&v.to_string());
            return;
        };
        let sub = |keys: &mut Self, x: &Value, out: &mut String| {
            let _ = write!(out, "#{}", keys.schema(x));
        };
        out.push('{');
        let mut first = true;
        for (k, x) in m {
            if key_ignored(k) {
                continue;
            }
            if !first {
                out.push(',');
            }
            first = false;
            write_json_string(k, out);
            out.push(':');
            match (k.as_str(), x) {
                (
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas" | "dependencies",
                    Value::Object(map),
                ) => {
                    out.push('{');
                    for (i, (name, x)) in map.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        write_json_string(name, out);
                        out.push(':');
                        sub(self, x, out);
                    }
                    out.push('}');
                }
                ("items" | "prefixItems" | "allOf" | "anyOf" | "oneOf", Value::Array(xs)) => {
                    out.push('[');
                    for (i, x) in xs.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        sub(self, x, out);
                    }
                    out.push(']');
                }
                (
                    "items"
                    | "additionalProperties"
                    | "additionalItems"
                    | "not"
                    | "if"
                    | "then"
                    | "else"
                    | "contains"
                    | "propertyNames"
                    | "unevaluatedProperties"
                    | "unevaluatedItems",
                    _,
                ) => sub(self, x, out),
                _ => out.push_str(&x.to_string()),
            }
        }
        out.push('}');
    }
}

/// Writes `s` as a JSON string (plain text in quotes without allocating;
/// serde_json's escaping where a character needs it).
fn write_json_string(s: &str, out: &mut String) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&Value::String(s.to_string()).to_string());
    }
}

/// The numeric keywords (draft-4 boolean exclusive bounds already
/// rewritten into numbers).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NumberKw {
    /// `minimum`
    pub minimum: Option<Number>,
    /// `exclusiveMinimum`
    pub exclusive_minimum: Option<Number>,
    /// `maximum`
    pub maximum: Option<Number>,
    /// `exclusiveMaximum`
    pub exclusive_maximum: Option<Number>,
    /// `multipleOf`
    pub multiple_of: Option<Number>,
    /// Where the values above that are not the simple schema's own keywords
    /// came from (an `allOf` member, a negation), for messages.
    pub from: Vec<Origin>,
}

/// Where a numeric keyword's value in a merged simple schema came from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Origin {
    /// The keyword, as the simple schema holds it.
    pub keyword: &'static str,
    /// The schema object it came from.
    pub pointer: String,
    /// How it arose, when not written there as this keyword (`"the
    /// complement of maximum 5"`, `"the least common multiple of …"`).
    pub how: Option<String>,
}

impl NumberKw {
    /// The origin of `keyword`'s value in a simple schema at `own`.
    pub fn origin(&self, keyword: &'static str, own: &str) -> Origin {
        self.from
            .iter()
            .find(|o| o.keyword == keyword)
            .cloned()
            .unwrap_or_else(|| Origin {
                keyword,
                pointer: own.to_string(),
                how: None,
            })
    }

    /// Records where `keyword`'s value came from.
    pub fn set_origin(&mut self, o: Origin) {
        self.from.retain(|x| x.keyword != o.keyword);
        self.from.push(o);
    }

    /// `keyword`'s value and where it came from, for messages: "maximum 5
    /// at `/allOf/1`", "exclusiveMinimum 5 (the complement of maximum 5 at
    /// `/if`)"; `None` when the keyword is absent.
    pub fn describe(&self, keyword: &'static str, own: &str) -> Option<String> {
        let v = match keyword {
            "minimum" => &self.minimum,
            "exclusiveMinimum" => &self.exclusive_minimum,
            "maximum" => &self.maximum,
            "exclusiveMaximum" => &self.exclusive_maximum,
            _ => &self.multiple_of,
        };
        let v = v.as_ref()?;
        let o = self.origin(keyword, own);
        Some(match o.how {
            None => format!("{keyword} {v} {}", merge::at(&o.pointer)),
            Some(how) => format!("{keyword} {v} ({how} {})", merge::at(&o.pointer)),
        })
    }
}

/// The string keywords.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct StringKw {
    /// `minLength`
    pub min_length: Option<u64>,
    /// `maxLength`
    pub max_length: Option<u64>,
    /// Patterns a string must match: `pattern`, then those of other
    /// `allOf` members (distinct).
    pub patterns: Vec<String>,
    /// `format`
    pub format: Option<String>,
    /// Strings excluded (from `not: {enum|const}`).
    pub not_in: Vec<String>,
    /// Patterns a string must not match (from `not: {pattern}`).
    pub not_patterns: Vec<String>,
}

/// The array keywords (draft-4 array-form `items` already rewritten into
/// `prefixItems` and `items`).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ArrayKw<'a> {
    /// `prefixItems`
    pub prefix_items: Option<Vec<Sub<'a>>>,
    /// `items` (the items after the prefix)
    pub items: Option<Sub<'a>>,
    /// `minItems`
    pub min_items: Option<u64>,
    /// `maxItems`
    pub max_items: Option<u64>,
    /// `contains`
    pub contains: Option<Sub<'a>>,
    /// `minContains`
    pub min_contains: Option<u64>,
    /// `maxContains`
    pub max_contains: Option<u64>,
    /// `uniqueItems: true` (`false` is no constraint)
    pub unique_items: bool,
}

/// The object keywords.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ObjectKw<'a> {
    /// `properties`, in schema order.
    pub properties: Option<Vec<(String, Sub<'a>)>>,
    /// `required` (distinct names; draft 3's boolean form is an
    /// annotation and left out).
    pub required: Vec<String>,
    /// `additionalProperties`
    pub additional_properties: Option<Sub<'a>>,
    /// `patternProperties`: pattern source and schema, in schema order.
    pub pattern_properties: Option<Vec<(String, Sub<'a>)>>,
    /// `propertyNames`
    pub property_names: Option<Sub<'a>>,
    /// `minProperties`
    pub min_properties: Option<u64>,
    /// `maxProperties`
    pub max_properties: Option<u64>,
}

impl<'a> ObjectKw<'a> {
    /// The schema of declared property `k`, if declared.
    pub fn property(&self, k: &str) -> Option<&Sub<'a>> {
        self.properties
            .as_ref()?
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, s)| s)
    }
}

/// A schema without applicators: one conjunct of a node's normal form.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Simple<'a> {
    /// JSON pointer of the schema it came from (the first conjunct's).
    pub ptr: String,
    /// `type` (`None`: every type).
    pub types: Option<TypeSet>,
    /// `enum`, with `const` folded in.
    pub enum_values: Option<Vec<Value>>,
    /// Keywords on numbers.
    pub number: NumberKw,
    /// Keywords on strings.
    pub string: StringKw,
    /// Keywords on arrays.
    pub array: ArrayKw<'a>,
    /// Keywords on objects.
    pub object: ObjectKw<'a>,
}

impl<'a> Simple<'a> {
    /// The schema `{}` at `ptr`.
    pub fn any(ptr: &str) -> Simple<'a> {
        Simple {
            ptr: ptr.to_string(),
            ..Simple::default()
        }
    }

    /// The allowed types (`NUMBER` implies integers too).
    pub fn types(&self) -> TypeSet {
        self.types.unwrap_or(TypeSet::all())
    }

    /// The schema of one of the types (`{type: t}`) at `ptr`.
    pub fn of_type(t: TypeSet, ptr: &str) -> Simple<'a> {
        Simple {
            types: Some(t.canonical()),
            ..Simple::any(ptr)
        }
    }

    /// The plain (non-applicator) keywords of a schema object, with the
    /// older spellings rewritten: draft-4 boolean
    /// `exclusiveMinimum`/`exclusiveMaximum`, array-form `items` with
    /// `additionalItems`, `const` as a one-element `enum`.
    pub fn parse(m: &'a Map<String, Value>, ptr: &str) -> Result<Simple<'a>, super::SchemaError> {
        parse::simple(m, ptr)
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
