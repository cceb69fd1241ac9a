//! The XML parameter styles of `json_schema` (`style: "qwen_xml"`, …):
//! the arguments object written as one XML-like element per property,
//! each value inside it either raw text (string values) or JSON.
//!
//! The language is XGrammar's (its `XMLToolCallingConverter`): the root
//! object's properties are parameters, in the schema's order (or any
//! order under `any_order`), separated by whitespace (`[ \n\t]*`, bounded
//! by `max_whitespace_cnt`), required ones present, optional ones
//! skippable, additional properties (when the schema allows them) after
//! the declared ones, with keys `[a-zA-Z_][a-zA-Z0-9_]*`. A parameter's
//! value is, by its schema:
//!
//! * a string without `pattern`, `format`, `minLength` or `maxLength`:
//!   raw text that does not contain the parameter's closing string;
//! * a string with `format` (when the format has a regex), `pattern`, or
//!   length bounds: the text matched by that constraint alone, with
//!   whitespace allowed around it, the closing string not avoided;
//! * `const` / `enum`: each value's text (a string's characters unquoted,
//!   any other value as JSON);
//! * `anyOf` / `oneOf` / a list of types: the union of the branches'
//!   values, each branch with the keywords beside the combinator;
//! * no constraint (`{}`, `true`): raw text, or any JSON value but a string;
//! * anything else (numbers, booleans, `null`, arrays, objects): JSON, as
//!   the JSON Schema compiler writes it, whitespace around it allowed.
//!
//! | style | one parameter |
//! |---|---|
//! | `qwen_xml` | `<parameter=key>value</parameter>` |
//! | `minimax_xml` | `<parameter name="key">value</parameter>` |
//! | `deepseek_xml` | `<｜DSML｜parameter name="key" string="true">value</｜DSML｜parameter>` (`"false"` for JSON values) |
//! | `deepseek_v4_1_xml` | the same with `<｜DSML｜ parameter` and `</｜DSML｜ parameter>` |
//! | `glm_xml` | `<arg_key>key</arg_key>` whitespace `<arg_value>value</arg_value>` |
//! | `kimi_k3_xml` | `<\|open\|>argument key="key" type="T"<\|sep\|>value<\|close\|>argument<\|sep\|>`, key with `&` → `&amp;` and `"` → `&quot;` |
//! | `cohere_xml` | `<cofl:value name="key" type="T">value</cofl:value>` |
//!
//! Cohere's values are typed and nest (XGrammar's
//! `CohereXMLToolCallingConverter`, as the 0.2.8 wheel prints it): `raw`
//! strings (as above), `json` numbers, integers, booleans, `null` and
//! non-string literals, `dict` objects (their properties as elements,
//! recursively), `list` arrays (their items as elements without a name,
//! back to back); an unconstrained value is any of the four (a `json`
//! value then a number, boolean or `null`, a `dict` or `list` of
//! unconstrained values); a combinator or a mixed `enum` gives each branch
//! its own type. Free-form keys are `([^\0"&<>]|&amp;|&lt;|&gt;|&quot;)+`,
//! none of the declared keys that are identifiers; `excludes` is refused.
//!
//! Kimi-K3's `type` attribute is pinned by the property's own schema
//! (`string`; `number` for integers and numbers; `boolean`, `null`,
//! `array`, `object`; a `const` or an `enum` whose values share one JSON
//! type: that type); any other schema (`{}`, `$ref`, combinators, type
//! lists) allow all seven type names, as XGrammar does; free-form keys are
//! pinned by their `additionalProperties` / `patternProperties` schema.
//!
//! XGrammar's choices followed here although debatable: raw string values
//! are not checked against the enclosing tag's end (a Qwen value may
//! contain `</function>`); a string with `pattern`, `format` or length
//! bounds is not kept from containing the closing string; free-form keys
//! are not kept from spelling a declared key (which may then appear twice);
//! under `any_order` only the count of parameters is checked (required
//! ones may be missing, keys may repeat).
//!
//! Not built (refused): a root schema that is not an object, `false`
//! parameter schemas, `propertyNames` other than a `pattern`, `excludes`
//! on values written as JSON, excludes in `cohere_xml`, and the style
//! `minimax_m3_xml`.

use rustc_hash::FxHashMap;
use serde_json::{Map, Value};
use zapspec_grammar::{NtId, Symbol, Terminal};
use zapspec_jsonschema::{JsonSchemaOptions, Whitespace};

use crate::error::StructTagError;
use crate::format::{child, JsonSchemaFormat};
use crate::lower::{lit, Lowerer};

/// An XML style's strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    Qwen,
    MiniMax,
    DeepSeek,
    DeepSeekV41,
    Glm,
    KimiK3,
    Cohere,
}

impl Style {
    fn of(name: &str) -> Option<Style> {
        Some(match name {
            "qwen_xml" => Style::Qwen,
            "minimax_xml" => Style::MiniMax,
            "deepseek_xml" => Style::DeepSeek,
            "deepseek_v4_1_xml" => Style::DeepSeekV41,
            "glm_xml" => Style::Glm,
            "kimi_k3_xml" => Style::KimiK3,
            "cohere_xml" => Style::Cohere,
            _ => return None,
        })
    }

    /// Before the key.
    fn key_prefix(self) -> &'static str {
        match self {
            Style::Qwen => "<parameter=",
            Style::MiniMax => "<parameter name=\"",
            Style::DeepSeek => "<｜DSML｜parameter name=\"",
            Style::DeepSeekV41 => "<｜DSML｜ parameter name=\"",
            Style::Glm => "<arg_key>",
            Style::KimiK3 => "<|open|>argument key=\"",
            Style::Cohere => "<cofl:value name=\"",
        }
    }

    /// After the value.
    fn end(self) -> &'static str {
        match self {
            Style::Qwen | Style::MiniMax => "</parameter>",
            Style::DeepSeek => "</｜DSML｜parameter>",
            Style::DeepSeekV41 => "</｜DSML｜ parameter>",
            Style::Glm => "</arg_value>",
            Style::KimiK3 => "<|close|>argument<|sep|>",
            Style::Cohere => "</cofl:value>",
        }
    }
}

/// The seven type names of Kimi-K3's `type` attribute.
const KIMI_TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// One way to write a parameter's value.
struct Alt {
    /// The value's symbols.
    body: Vec<Symbol>,
    /// A string value (DeepSeek's `string="true"`).
    string: bool,
    /// Raw text running to the closing string: no whitespace around it.
    bare: bool,
}

/// What one XML body's lowering shares.
struct Cx<'a> {
    style: Style,
    root: &'a Value,
    opts: &'a JsonSchemaOptions,
    /// `json_schema`'s pointer.
    ptr: String,
    ws: NtId,
    /// Raw text avoiding the closing string (and the excludes).
    text: NtId,
    excludes: &'a [String],
    /// Cohere: the typed tails of an unconstrained value, built once.
    cohere_any: std::cell::Cell<Option<NtId>>,
    /// Cohere: the tails of each `$ref` target, by pointer (recursive
    /// schemas nest elements).
    cohere_refs: std::cell::RefCell<FxHashMap<String, NtId>>,
    /// Cohere: elements open while lowering (a bound on nesting).
    cohere_depth: std::cell::Cell<usize>,
}

/// Keywords that never constrain a value.
fn annotation(k: &str) -> bool {
    matches!(
        k,
        "title"
            | "description"
            | "default"
            | "examples"
            | "$comment"
            | "$schema"
            | "$id"
            | "$defs"
            | "definitions"
            | "deprecated"
            | "readOnly"
            | "writeOnly"
    )
}

fn re(s: impl Into<String>) -> Symbol {
    Symbol::T(Terminal::Regex(s.into()))
}

/// The text of a `const` / `enum` value: a string's characters, else JSON.
fn xml_value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// The JSON type name Kimi-K3 writes a value with.
fn kimi_value_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::Null => "null",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
    }
}

/// Kimi-K3's `type` attribute pinned by `schema`, if it pins one.
fn kimi_type(schema: &Value) -> Option<&'static str> {
    let o = schema.as_object()?;
    if o.contains_key("$ref")
        || o.contains_key("anyOf")
        || o.contains_key("oneOf")
        || o.contains_key("allOf")
    {
        return None;
    }
    if let Some(c) = o.get("const") {
        return Some(kimi_value_type(c));
    }
    if let Some(Value::Array(vs)) = o.get("enum") {
        let mut ts = vs.iter().map(kimi_value_type);
        let first = ts.next()?;
        return ts.all(|t| t == first).then_some(first);
    }
    match o.get("type")?.as_str()? {
        "string" => Some("string"),
        "integer" | "number" => Some("number"),
        "boolean" => Some("boolean"),
        "null" => Some("null"),
        "array" => Some("array"),
        "object" => Some("object"),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// A `json_schema` format in the XML style `style`.
    pub(crate) fn xml_schema(
        &mut self,
        j: &JsonSchemaFormat,
        style: &str,
        opts: &JsonSchemaOptions,
        ptr: &str,
    ) -> Result<NtId, StructTagError> {
        let Some(st) = Style::of(style) else {
            return Err(StructTagError::unsupported(
                &child(ptr, "style"),
                format!("json_schema style {style:?} is not built (built: \"json\", \"qwen_xml\", \"minimax_xml\", \"deepseek_xml\", \"deepseek_v4_1_xml\", \"glm_xml\", \"kimi_k3_xml\", \"cohere_xml\")"),
            ));
        };
        if st == Style::Cohere && !j.excludes.is_empty() {
            return Err(StructTagError::invalid(
                &child(ptr, "excludes"),
                "the cohere_xml style rejects a non-empty excludes list",
            ));
        }
        for (i, e) in j.excludes.iter().enumerate() {
            if e.starts_with([' ', '\n', '\t']) || e.ends_with([' ', '\n', '\t']) {
                return Err(StructTagError::invalid(
                    &child(&child(ptr, "excludes"), &i.to_string()),
                    format!(
                        "XML styles reject exclusions that start or end with whitespace: {e:?}"
                    ),
                ));
            }
        }
        if j.max_whitespace_cnt == Some(0) {
            return Err(StructTagError::invalid(
                &child(ptr, "max_whitespace_cnt"),
                "max_whitespace_cnt must be positive.",
            ));
        }
        let max_ws = match opts.whitespace {
            Whitespace::Flexible { max_ws } => max_ws,
            _ => usize::MAX,
        };
        let ws = self.g.add_nonterminal("xml_ws");
        self.g.add_rule(ws, Vec::new());
        if max_ws > 0 {
            let q = if max_ws == usize::MAX {
                "+".to_string()
            } else {
                format!("{{1,{max_ws}}}")
            };
            self.g.add_rule(ws, vec![re(format!("[ \\n\\t]{q}"))]);
        }
        let mut avoid = vec![st.end().to_string()];
        avoid.extend(j.excludes.iter().cloned());
        let text = self.free_text("xml_string", &avoid, &[]);
        let cx = Cx {
            style: st,
            root: &j.json_schema,
            opts,
            ptr: child(ptr, "json_schema"),
            ws,
            text,
            excludes: &j.excludes,
            cohere_any: std::cell::Cell::new(None),
            cohere_refs: Default::default(),
            cohere_depth: std::cell::Cell::new(0),
        };
        let root = self.xml_object(&cx, &j.json_schema, &cx.ptr.clone(), 0)?;
        self.xml_named_rules(&cx, opts, ptr)?;
        Ok(root)
    }

    /// XGrammar's named rules of an XML-style grammar, defined once per
    /// grammar beside the schema's (grammar text written against
    /// XGrammar's printed rules refers to them; nothing the schema derives
    /// does, so the engine drops them before compiling): the JSON value
    /// library (`basic_string`, `basic_array`, `basic_object`, …, in which
    /// XML styles write array and object values), `xml_any` (an
    /// unconstrained value: raw text or a JSON value) and
    /// `xml_variable_name` (a parameter name).
    fn xml_named_rules(
        &mut self,
        cx: &Cx<'_>,
        opts: &JsonSchemaOptions,
        ptr: &str,
    ) -> Result<(), StructTagError> {
        if self.g.nonterminal("xml_variable_name").is_some() {
            return Ok(());
        }
        let lib = zapspec_grammar::Grammar::from_gbnf(&zapspec_jsonschema::library::library_gbnf(
            &opts.whitespace,
        ))
        .map_err(|e| StructTagError::invalid(ptr, format!("the JSON value library: {e}")))?;
        if self.g.nonterminal("basic_escape").is_none() {
            self.g.embed(&lib, "");
        }
        // where the style's JSON values cannot be built (Kimi-K3's
        // `excludes`), `xml_any` is left undefined rather than refusing a
        // schema whose own rules compiled
        if let Ok(any) = self.xml_any(cx, ptr) {
            let nt = self.g.add_nonterminal("xml_any");
            for a in any {
                self.g.add_rule(nt, a.body);
            }
        }
        let name = self.g.add_nonterminal("xml_variable_name");
        self.g
            .add_rule(name, vec![re("[a-zA-Z_][a-zA-Z0-9_]*".to_string())]);
        Ok(())
    }

    /// `$ref` resolved against the root (a local JSON pointer).
    fn xml_resolve<'v>(
        &self,
        cx: &Cx<'v>,
        r: &str,
        ptr: &str,
    ) -> Result<&'v Value, StructTagError> {
        let Some(p) = r.strip_prefix('#') else {
            return Err(StructTagError::unsupported(
                ptr,
                format!("the $ref {r:?} is not a local reference (#/…)"),
            ));
        };
        let target = if p.is_empty() {
            Some(cx.root)
        } else {
            cx.root.pointer(p)
        };
        target.ok_or_else(|| {
            StructTagError::invalid(ptr, format!("the $ref {r:?} names nothing in the schema"))
        })
    }

    /// The root object (or any object reached from it by `$ref`,
    /// `anyOf` / `oneOf`) as parameters.
    fn xml_object(
        &mut self,
        cx: &Cx<'_>,
        schema: &Value,
        ptr: &str,
        depth: usize,
    ) -> Result<NtId, StructTagError> {
        if depth > 64 {
            return Err(StructTagError::unsupported(
                ptr,
                "$ref chain deeper than 64",
            ));
        }
        let o =
            match schema {
                Value::Bool(true) => &Map::new(),
                Value::Object(o) => o,
                _ => return Err(StructTagError::unsupported(
                    ptr,
                    "the XML styles write an object's properties: a false root schema is not built",
                )),
            };
        if let Some(r) = o.get("$ref").and_then(Value::as_str) {
            let t = self.xml_resolve(cx, r, &child(ptr, "$ref"))?;
            return self.xml_object(cx, t, ptr, depth + 1);
        }
        for comb in ["anyOf", "oneOf"] {
            if let Some(Value::Array(bs)) = o.get(comb) {
                let mut alts = Vec::new();
                for (i, b) in bs.iter().enumerate() {
                    let merged = merge(o, comb, b);
                    let n = self.xml_object(
                        cx,
                        &merged,
                        &child(&child(ptr, comb), &i.to_string()),
                        depth + 1,
                    )?;
                    alts.push(vec![Symbol::Nt(n)]);
                }
                return Ok(self.nt("xml_object_choice", alts));
            }
        }
        match o.get("type") {
            None => {}
            Some(Value::String(t)) if t == "object" => {}
            Some(t) => {
                return Err(StructTagError::unsupported(
                    &child(ptr, "type"),
                    format!("the XML styles write an object's properties: a root schema of type {t} is not built"),
                ))
            }
        }
        self.xml_properties(cx, o, ptr)
    }

    /// An object's parameters.
    fn xml_properties(
        &mut self,
        cx: &Cx<'_>,
        o: &Map<String, Value>,
        ptr: &str,
    ) -> Result<NtId, StructTagError> {
        let ws = Symbol::Nt(cx.ws);
        let empty_map = Map::new();
        let props = match o.get("properties") {
            Some(Value::Object(p)) => p,
            None => &empty_map,
            Some(_) => {
                return Err(StructTagError::invalid(
                    &child(ptr, "properties"),
                    "properties must be an object",
                ))
            }
        };
        let required: Vec<&str> = match o.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let count = |k: &str| -> Result<Option<u64>, StructTagError> {
            match o.get(k) {
                None => Ok(None),
                Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                    StructTagError::invalid(
                        &child(ptr, k),
                        format!("{k} must be a non-negative integer"),
                    )
                }),
            }
        };
        let min = count("minProperties")?.unwrap_or(0) as usize;
        let max = count("maxProperties")?.map(|m| m as usize);
        // declared properties
        let mut pats = Vec::with_capacity(props.len());
        for (k, s) in props {
            let p = child(&child(ptr, "properties"), k);
            pats.push(self.xml_param(cx, Key::Named(k), s, &p)?);
        }
        // free-form keys: patternProperties, additionalProperties
        // an absent additionalProperties closes an object that declares
        // properties (XGrammar's strict mode, as the JSON style reads it)
        let declares = o.contains_key("properties") || o.contains_key("patternProperties");
        let addl_schema = match (
            o.get("additionalProperties"),
            o.get("unevaluatedProperties"),
        ) {
            (Some(Value::Bool(false)), _) => None,
            (Some(v), _) => Some(v),
            (None, Some(Value::Bool(false))) => None,
            (None, Some(v)) => Some(v),
            (None, None) if declares || o.contains_key("propertyNames") => None,
            (None, None) => Some(&Value::Bool(true)),
        };
        let mut free = Vec::new();
        if let Some(Value::Object(pp)) = o.get("patternProperties") {
            for (pat, s) in pp {
                let p = child(&child(ptr, "patternProperties"), pat);
                let key = self.xml_key_pattern(pat, &p)?;
                free.push(self.xml_param(cx, Key::Pattern(key, kimi_type(s)), s, &p)?);
            }
        }
        if let Some(pn) = o.get("propertyNames") {
            if addl_schema.is_some() || (props.is_empty() && free.is_empty()) {
                let p = child(ptr, "propertyNames");
                let pat = pn.get("pattern").and_then(Value::as_str).ok_or_else(|| {
                    StructTagError::unsupported(
                        &p,
                        "propertyNames in the XML styles: only a pattern is built",
                    )
                })?;
                let key = self.xml_key_pattern(pat, &p)?;
                let value = addl_schema.cloned().unwrap_or(Value::Bool(true));
                free.push(self.xml_param(cx, Key::Pattern(key, None), &value, &p)?);
            }
        } else if let Some(a) = addl_schema {
            let p = child(ptr, "additionalProperties");
            let key = if cx.style == Style::Cohere {
                self.cohere_key_excluding(props.keys().map(String::as_str))
            } else {
                vec![re("[a-zA-Z_][a-zA-Z0-9_]*")]
            };
            free.push(self.xml_param(cx, Key::Pattern(key, kimi_type(a)), a, &p)?);
        }
        let addl = if free.is_empty() {
            None
        } else {
            Some(self.nt(
                "xml_free_param",
                free.into_iter().map(|n| vec![Symbol::Nt(n)]).collect(),
            ))
        };
        let could_be_empty = required.is_empty() && min == 0;
        let mut alts: Vec<Vec<Symbol>> = Vec::new();
        if max != Some(0) && (!pats.is_empty() || addl.is_some()) {
            let content = if self.c_any_order(cx) {
                // an item, repeated between max(min, #required) and max times
                let mut items: Vec<Vec<Symbol>> =
                    pats.iter().map(|&n| vec![Symbol::Nt(n)]).collect();
                if let Some(a) = addl {
                    items.push(vec![Symbol::Nt(a)]);
                }
                let item = self.nt("xml_item", items);
                let least = min.max(required.len()).max(1);
                let more = self.xml_repeat(cx, item, least - 1, max.map(|m| m.saturating_sub(1)));
                Some(vec![
                    ws.clone(),
                    Symbol::Nt(item),
                    Symbol::Nt(more),
                    ws.clone(),
                ])
            } else {
                self.xml_ordered(cx, &pats, props, &required, addl, min, max)?
                    .map(|n| vec![ws.clone(), Symbol::Nt(n), ws.clone()])
            };
            if let Some(c) = content {
                alts.push(c);
            }
        }
        if could_be_empty {
            alts.push(vec![ws]);
        }
        Ok(self.nt("xml_object", alts))
    }

    fn c_any_order(&self, cx: &Cx<'_>) -> bool {
        cx.opts.property_order == zapspec_jsonschema::PropertyOrder::Any
    }

    /// `(ws item){lo..hi}` (`hi` `None`: unbounded).
    fn xml_repeat(&mut self, cx: &Cx<'_>, item: NtId, lo: usize, hi: Option<usize>) -> NtId {
        let one = vec![Symbol::Nt(cx.ws), Symbol::Nt(item)];
        let tail = match hi {
            None => {
                let star = self.g.add_nonterminal("xml_items");
                self.g.add_rule(star, Vec::new());
                let mut r = one.clone();
                r.push(Symbol::Nt(star));
                self.g.add_rule(star, r);
                star
            }
            Some(h) => {
                let mut t = self.nt("xml_items", vec![Vec::new()]);
                for _ in lo..h {
                    let mut r = one.clone();
                    r.push(Symbol::Nt(t));
                    t = self.nt("xml_items", vec![r, Vec::new()]);
                }
                t
            }
        };
        let mut rhs = Vec::new();
        for _ in 0..lo {
            rhs.extend(one.iter().cloned());
        }
        rhs.push(Symbol::Nt(tail));
        self.nt("xml_repeat", vec![rhs])
    }

    /// Declared parameters in the schema's order, then free-form ones,
    /// their number in `min..=max`: `None` when no sequence fits.
    #[allow(clippy::too_many_arguments)]
    fn xml_ordered(
        &mut self,
        cx: &Cx<'_>,
        pats: &[NtId],
        props: &Map<String, Value>,
        required: &[&str],
        addl: Option<NtId>,
        min: usize,
        max: Option<usize>,
    ) -> Result<Option<NtId>, StructTagError> {
        let o = Ordered {
            pats,
            req: props
                .keys()
                .map(|k| required.contains(&k.as_str()))
                .collect(),
            addl,
            min,
            max,
        };
        let mut memo = FxHashMap::default();
        let mut choices = Vec::new();
        if max.is_none_or(|m| m >= 1) {
            for (j, &pat) in pats.iter().enumerate() {
                if let Some(t) = self.xml_tail(cx, &o, &mut memo, j, o.sat(1)) {
                    choices.push(vec![Symbol::Nt(pat), Symbol::Nt(t)]);
                }
                if o.req[j] {
                    break;
                }
            }
            if let (Some(a), true) = (addl, required.is_empty()) {
                let lo = min.saturating_sub(1);
                let hi = max.map(|m| m - 1);
                let rest = self.xml_repeat(cx, a, lo, hi);
                choices.push(vec![Symbol::Nt(a), Symbol::Nt(rest)]);
            }
        }
        Ok((!choices.is_empty()).then(|| self.nt("xml_params", choices)))
    }

    /// What may follow declared property `i` with `c` parameters written.
    fn xml_tail(
        &mut self,
        cx: &Cx<'_>,
        o: &Ordered<'_>,
        memo: &mut FxHashMap<(usize, usize), Option<NtId>>,
        i: usize,
        c: usize,
    ) -> Option<NtId> {
        if o.max.is_some_and(|m| c > m) {
            return None;
        }
        if let Some(&r) = memo.get(&(i, c)) {
            return r;
        }
        let r = if i + 1 == o.pats.len() {
            match o.addl {
                None => (c >= o.min).then(|| self.nt("xml_tail", vec![Vec::new()])),
                Some(a) => {
                    let lo = o.min.saturating_sub(c);
                    let hi = o.max.map(|m| m.saturating_sub(c));
                    Some(self.xml_repeat(cx, a, lo, hi))
                }
            }
        } else {
            let mut alts = Vec::new();
            if !o.req[i + 1] {
                if let Some(t) = self.xml_tail(cx, o, memo, i + 1, c) {
                    alts.push(vec![Symbol::Nt(t)]);
                }
            }
            if let Some(t) = self.xml_tail(cx, o, memo, i + 1, o.sat(c + 1)) {
                alts.push(vec![
                    Symbol::Nt(cx.ws),
                    Symbol::Nt(o.pats[i + 1]),
                    Symbol::Nt(t),
                ]);
            }
            (!alts.is_empty()).then(|| self.nt("xml_part", alts))
        };
        memo.insert((i, c), r);
        r
    }

    /// The key symbols of a `patternProperties` / `propertyNames` pattern.
    fn xml_key_pattern(&mut self, pat: &str, ptr: &str) -> Result<Vec<Symbol>, StructTagError> {
        Ok(vec![re(self.xml_regex(pat, ptr)?)])
    }

    /// An ECMAScript pattern as a full-match regex terminal's source.
    fn xml_regex(&mut self, pat: &str, ptr: &str) -> Result<String, StructTagError> {
        // the pattern is matched whole (XGrammar's reading): its outer
        // anchors say nothing more
        let pat = pat.strip_prefix('^').unwrap_or(pat);
        let dollars = pat.len() - pat.trim_end_matches('$').len();
        let before = &pat[..pat.len() - dollars.min(1)];
        let trailing_backslashes = before.len() - before.trim_end_matches('\\').len();
        let pat = if dollars > 0 && trailing_backslashes.is_multiple_of(2) {
            before
        } else {
            pat
        };
        let t = zapspec_jsonschema::ecma_regex_to_regex_syntax_in(
            pat,
            zapspec_jsonschema::RegexDialect::Strict,
        )
        .map_err(|m| StructTagError::Regex {
            pointer: ptr.to_string(),
            message: m,
        })?;
        if let Err(e) = regex_syntax::Parser::new().parse(&t) {
            return Err(StructTagError::Regex {
                pointer: ptr.to_string(),
                message: e.to_string(),
            });
        }
        Ok(t)
    }

    /// One parameter: its key (named, or a key pattern), its value.
    fn xml_param(
        &mut self,
        cx: &Cx<'_>,
        key: Key<'_>,
        schema: &Value,
        ptr: &str,
    ) -> Result<NtId, StructTagError> {
        if cx.style == Style::Cohere {
            let name = match key {
                Key::Named(k) => lit(&format!(" name=\"{k}\"")),
                Key::Pattern(syms, _) => {
                    let mut r = lit(" name=\"");
                    r.extend(syms);
                    r.extend(lit("\""));
                    r
                }
            };
            return self.cohere_element(cx, name, schema, ptr);
        }
        let values = self.xml_value(cx, schema, ptr, 0)?;
        if values.is_empty() {
            return Err(StructTagError::unsupported(
                ptr,
                "a parameter whose schema admits no value (false) is not built",
            ));
        }
        let st = cx.style;
        let (mut rhs, kimi) = match key {
            Key::Named(k) => {
                let k = if st == Style::KimiK3 {
                    k.replace('&', "&amp;").replace('"', "&quot;")
                } else {
                    k.to_string()
                };
                (lit(&format!("{}{k}", st.key_prefix())), kimi_type(schema))
            }
            Key::Pattern(syms, kimi) => {
                let mut r = lit(st.key_prefix());
                r.extend(syms);
                (r, kimi)
            }
        };
        let mut tails = Vec::with_capacity(values.len());
        for v in values {
            let mut t = match st {
                Style::Qwen => lit(">"),
                Style::MiniMax | Style::Cohere => lit("\">"),
                Style::DeepSeek | Style::DeepSeekV41 => lit(if v.string {
                    "\" string=\"true\">"
                } else {
                    "\" string=\"false\">"
                }),
                Style::Glm => vec![
                    Symbol::T(Terminal::Literal(b"</arg_key>".to_vec())),
                    Symbol::Nt(cx.ws),
                    Symbol::T(Terminal::Literal(b"<arg_value>".to_vec())),
                ],
                Style::KimiK3 => {
                    let ty = match kimi {
                        Some(t) => lit(t),
                        None => {
                            let alts = KIMI_TYPES.iter().map(|t| lit(t)).collect();
                            vec![Symbol::Nt(self.nt("kimi_type", alts))]
                        }
                    };
                    let mut t = lit("\" type=\"");
                    t.extend(ty);
                    t.extend(lit("\"<|sep|>"));
                    t
                }
            };
            if v.bare {
                t.extend(v.body);
            } else {
                t.push(Symbol::Nt(cx.ws));
                t.extend(v.body);
                t.push(Symbol::Nt(cx.ws));
            }
            t.extend(lit(st.end()));
            tails.push(t);
        }
        let tail = self.nt("xml_param_value", tails);
        rhs.push(Symbol::Nt(tail));
        Ok(self.nt("xml_param", vec![rhs]))
    }

    /// The ways to write a value of `schema` inside a parameter.
    fn xml_value(
        &mut self,
        cx: &Cx<'_>,
        schema: &Value,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Alt>, StructTagError> {
        if depth > 64 {
            return Err(StructTagError::unsupported(
                ptr,
                "$ref chain deeper than 64",
            ));
        }
        let o = match schema {
            Value::Bool(true) => return self.xml_any(cx, ptr),
            Value::Bool(false) => return Ok(Vec::new()),
            Value::Object(o) => o,
            _ => {
                return Err(StructTagError::invalid(
                    ptr,
                    "a schema must be an object or a boolean",
                ))
            }
        };
        if let Some(r) = o.get("$ref").and_then(Value::as_str) {
            let t = self.xml_resolve(cx, r, &child(ptr, "$ref"))?;
            if o.keys().all(|k| k == "$ref" || annotation(k)) {
                return self.xml_value(cx, t, ptr, depth + 1);
            }
            if let Value::Object(to) = t {
                let mut m = to.clone();
                for (k, v) in o {
                    if k != "$ref" {
                        m.insert(k.clone(), v.clone());
                    }
                }
                return self.xml_value(cx, &Value::Object(m), ptr, depth + 1);
            }
            return self.xml_value(cx, t, ptr, depth + 1);
        }
        if let Some(c) = o.get("const") {
            return Ok(vec![xml_literal(c)]);
        }
        if let Some(e) = o.get("enum") {
            let Value::Array(vs) = e else {
                return Err(StructTagError::invalid(
                    &child(ptr, "enum"),
                    "enum must be an array",
                ));
            };
            return Ok(vs
                .iter()
                .filter(|v| !excluded_literal(cx, v))
                .map(xml_literal)
                .collect());
        }
        for comb in ["anyOf", "oneOf"] {
            if let Some(Value::Array(bs)) = o.get(comb) {
                let mut alts = Vec::new();
                for (i, b) in bs.iter().enumerate() {
                    let merged = merge(o, comb, b);
                    alts.extend(self.xml_value(
                        cx,
                        &merged,
                        &child(&child(ptr, comb), &i.to_string()),
                        depth + 1,
                    )?);
                }
                return Ok(alts);
            }
        }
        if let Some(Value::Array(bs)) = o.get("allOf") {
            if bs.len() == 1 {
                let merged = merge(o, "allOf", &bs[0]);
                return self.xml_value(cx, &merged, ptr, depth + 1);
            }
        }
        match o.get("type") {
            Some(Value::Array(ts)) => {
                let mut alts = Vec::new();
                for t in ts {
                    let mut m = o.clone();
                    m.insert("type".into(), t.clone());
                    alts.extend(self.xml_value(cx, &Value::Object(m), ptr, depth + 1)?);
                }
                Ok(alts)
            }
            Some(Value::String(t)) if t == "string" => self.xml_string(cx, o, ptr),
            None if o.keys().all(|k| annotation(k)) => self.xml_any(cx, ptr),
            _ => Ok(vec![self.xml_json(cx, schema, ptr)?]),
        }
    }

    /// A value with no constraint: raw text, a JSON array or object.
    fn xml_any(&mut self, cx: &Cx<'_>, ptr: &str) -> Result<Vec<Alt>, StructTagError> {
        let json = self.xml_json(
            cx,
            &serde_json::json!({"type": ["number", "boolean", "null", "array", "object"]}),
            ptr,
        )?;
        Ok(vec![
            Alt {
                body: vec![Symbol::Nt(cx.text)],
                string: true,
                bare: true,
            },
            json,
        ])
    }

    /// A string value.
    fn xml_string(
        &mut self,
        cx: &Cx<'_>,
        o: &Map<String, Value>,
        ptr: &str,
    ) -> Result<Vec<Alt>, StructTagError> {
        let pattern = o.get("pattern").and_then(Value::as_str);
        let format = o.get("format").and_then(Value::as_str);
        let min = o.get("minLength").and_then(Value::as_u64).unwrap_or(0);
        let max = o.get("maxLength").and_then(Value::as_u64);
        if pattern.is_none() && format.is_none() && min == 0 && max.is_none() {
            return Ok(vec![Alt {
                body: vec![Symbol::Nt(cx.text)],
                string: true,
                bare: true,
            }]);
        }
        let body = if let Some(r) = format.and_then(zapspec_jsonschema::format_regex) {
            re(r)
        } else if let Some(p) = pattern {
            re(self.xml_regex(p, &child(ptr, "pattern"))?)
        } else {
            match max {
                Some(m) => re(format!("(?s:.){{{min},{m}}}")),
                None => re(format!("(?s:.){{{min},}}")),
            }
        };
        Ok(vec![Alt {
            body: vec![body],
            string: true,
            bare: false,
        }])
    }

    /// A value written as JSON.
    fn xml_json(&mut self, cx: &Cx<'_>, schema: &Value, ptr: &str) -> Result<Alt, StructTagError> {
        if !cx.excludes.is_empty() {
            return Err(StructTagError::unsupported(
                ptr,
                "excludes inside JSON values of an XML style are not built",
            ));
        }
        // the root's definitions travel with the part compiled alone
        let mut s = schema.clone();
        if let (Value::Object(m), Value::Object(root)) = (&mut s, cx.root) {
            for defs in ["$defs", "definitions"] {
                if let (Some(d), false) = (root.get(defs), m.contains_key(defs)) {
                    m.insert(defs.into(), d.clone());
                }
            }
        }
        let n = self.embed_json(&s, cx.opts, ptr)?;
        Ok(Alt {
            body: vec![Symbol::Nt(n)],
            string: false,
            bare: false,
        })
    }
}

/// Cohere's key characters: any but NUL, `"`, `&`, `<`, `>`, or one of
/// the entities `&amp;`, `&lt;`, `&gt;`, `&quot;`.
const COHERE_KEY: &str = r#"(?:[^\x00"&<>]|&amp;|&lt;|&gt;|&quot;)+"#;

/// The Cohere type attribute of a literal value.
fn cohere_literal_type(v: &Value) -> &'static str {
    if v.is_string() {
        "raw"
    } else {
        "json"
    }
}

/// Whether a key is an XML identifier (`[a-zA-Z_][a-zA-Z0-9_]*`).
fn identifier(k: &str) -> bool {
    let mut cs = k.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Lowerer<'_> {
    /// `<cofl:value` `name` then each typed way to write a value of
    /// `schema` (one element: `name` empty for a list's item).
    fn cohere_element(
        &mut self,
        cx: &Cx<'_>,
        name: Vec<Symbol>,
        schema: &Value,
        ptr: &str,
    ) -> Result<NtId, StructTagError> {
        if cx.cohere_depth.get() >= 128 {
            return Err(StructTagError::unsupported(
                ptr,
                "cohere_xml values nested deeper than 128 elements",
            ));
        }
        cx.cohere_depth.set(cx.cohere_depth.get() + 1);
        let tails = self.cohere_tails(cx, schema, ptr, 0);
        cx.cohere_depth.set(cx.cohere_depth.get() - 1);
        let tails = tails?;
        if tails.is_empty() {
            return Err(StructTagError::unsupported(
                ptr,
                "a parameter whose schema admits no value (false) is not built",
            ));
        }
        let tail = self.nt("cohere_value", tails);
        let mut rhs = lit("<cofl:value");
        rhs.extend(name);
        rhs.push(Symbol::Nt(tail));
        Ok(self.nt("cohere_param", vec![rhs]))
    }

    /// ` type="ty">` the value `</cofl:value>`, whitespace around a value
    /// that is not raw text.
    fn cohere_tail(&self, cx: &Cx<'_>, ty: &str, body: Vec<Symbol>, bare: bool) -> Vec<Symbol> {
        let mut t = lit(&format!(" type=\"{ty}\">"));
        if bare {
            t.extend(body);
        } else {
            t.push(Symbol::Nt(cx.ws));
            t.extend(body);
            t.push(Symbol::Nt(cx.ws));
        }
        t.extend(lit("</cofl:value>"));
        t
    }

    /// The typed ways to write a value of `schema`, each from ` type=` to
    /// the closing string: `raw` strings, `json` scalars and literals,
    /// `dict` objects (their properties as elements), `list` arrays (their
    /// items as nameless elements, back to back).
    fn cohere_tails(
        &mut self,
        cx: &Cx<'_>,
        schema: &Value,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Vec<Symbol>>, StructTagError> {
        if depth > 64 {
            return Err(StructTagError::unsupported(
                ptr,
                "$ref chain deeper than 64",
            ));
        }
        let o = match schema {
            Value::Bool(true) => return Ok(vec![vec![Symbol::Nt(self.cohere_any(cx, ptr)?)]]),
            Value::Bool(false) => return Ok(Vec::new()),
            Value::Object(o) => o,
            _ => {
                return Err(StructTagError::invalid(
                    ptr,
                    "a schema must be an object or a boolean",
                ))
            }
        };
        if let Some(r) = o.get("$ref").and_then(Value::as_str) {
            if o.keys().all(|k| k == "$ref" || annotation(k)) {
                return self.cohere_ref(cx, r, ptr);
            }
            let t = self.xml_resolve(cx, r, &child(ptr, "$ref"))?;
            let merged = match t {
                Value::Object(to) if !o.keys().all(|k| k == "$ref" || annotation(k)) => {
                    let mut m = to.clone();
                    for (k, v) in o {
                        if k != "$ref" {
                            m.insert(k.clone(), v.clone());
                        }
                    }
                    Value::Object(m)
                }
                t => t.clone(),
            };
            return self.cohere_tails(cx, &merged, ptr, depth + 1);
        }
        if let Some(c) = o.get("const") {
            let ty = cohere_literal_type(c);
            return Ok(vec![self.cohere_tail(
                cx,
                ty,
                lit(&xml_value_text(c)),
                false,
            )]);
        }
        if let Some(e) = o.get("enum") {
            let Value::Array(vs) = e else {
                return Err(StructTagError::invalid(
                    &child(ptr, "enum"),
                    "enum must be an array",
                ));
            };
            return Ok(vs
                .iter()
                .map(|v| {
                    self.cohere_tail(cx, cohere_literal_type(v), lit(&xml_value_text(v)), false)
                })
                .collect());
        }
        for comb in ["anyOf", "oneOf"] {
            if let Some(Value::Array(bs)) = o.get(comb) {
                let mut alts = Vec::new();
                for (i, b) in bs.iter().enumerate() {
                    let merged = merge(o, comb, b);
                    let p = child(&child(ptr, comb), &i.to_string());
                    alts.extend(self.cohere_tails(cx, &merged, &p, depth + 1)?);
                }
                return Ok(alts);
            }
        }
        if let Some(Value::Array(bs)) = o.get("allOf") {
            if bs.len() == 1 {
                let merged = merge(o, "allOf", &bs[0]);
                return self.cohere_tails(cx, &merged, ptr, depth + 1);
            }
        }
        let ty = match o.get("type") {
            Some(Value::Array(ts)) => {
                let mut alts = Vec::new();
                for t in ts {
                    let mut m = o.clone();
                    m.insert("type".into(), t.clone());
                    alts.extend(self.cohere_tails(cx, &Value::Object(m), ptr, depth + 1)?);
                }
                return Ok(alts);
            }
            Some(Value::String(t)) => t.as_str(),
            None if o.keys().all(|k| annotation(k)) => {
                return Ok(vec![vec![Symbol::Nt(self.cohere_any(cx, ptr)?)]])
            }
            None if [
                "properties",
                "additionalProperties",
                "patternProperties",
                "required",
            ]
            .iter()
            .any(|k| o.contains_key(*k)) =>
            {
                "object"
            }
            None if o.contains_key("items") || o.contains_key("prefixItems") => "array",
            _ => "",
        };
        Ok(match ty {
            "string" => self
                .xml_string(cx, o, ptr)?
                .into_iter()
                .map(|a| self.cohere_tail(cx, "raw", a.body, a.bare))
                .collect(),
            "object" => {
                let n = self.xml_properties(cx, o, ptr)?;
                vec![self.cohere_tail(cx, "dict", vec![Symbol::Nt(n)], false)]
            }
            "array" => {
                let n = self.cohere_list(cx, o, ptr)?;
                vec![self.cohere_tail(cx, "list", vec![Symbol::Nt(n)], false)]
            }
            _ => {
                let a = self.xml_json(cx, schema, ptr)?;
                vec![self.cohere_tail(cx, "json", a.body, false)]
            }
        })
    }

    /// The tails of a value of the schema `$ref` `r` names (pure
    /// references followed to the schema they end at), one nonterminal per
    /// target, made before its body so that a recursive schema refers to
    /// it.
    fn cohere_ref(
        &mut self,
        cx: &Cx<'_>,
        r: &str,
        ptr: &str,
    ) -> Result<Vec<Vec<Symbol>>, StructTagError> {
        let mut r = r.to_string();
        let mut target = self.xml_resolve(cx, &r, &child(ptr, "$ref"))?;
        for _ in 0..64 {
            match target.as_object() {
                Some(o) if o.keys().all(|k| k == "$ref" || annotation(k)) => {
                    let Some(next) = o.get("$ref").and_then(Value::as_str) else {
                        break;
                    };
                    r = next.to_string();
                    target = self.xml_resolve(cx, &r, &child(ptr, "$ref"))?;
                }
                _ => break,
            }
        }
        if let Some(n) = cx.cohere_refs.borrow().get(&r) {
            return Ok(vec![vec![Symbol::Nt(*n)]]);
        }
        if target.get("$ref").is_some()
            && target
                .as_object()
                .is_some_and(|o| o.keys().all(|k| k == "$ref" || annotation(k)))
        {
            return Err(StructTagError::unsupported(
                ptr,
                "$ref chain deeper than 64",
            ));
        }
        let n = self.g.add_nonterminal("cohere_ref");
        cx.cohere_refs.borrow_mut().insert(r, n);
        for rhs in self.cohere_tails(cx, target, ptr, 0)? {
            self.g.add_rule(n, rhs);
        }
        Ok(vec![vec![Symbol::Nt(n)]])
    }

    /// A `list` value: the prefix items, then the other items, as nameless
    /// elements with nothing between them.
    fn cohere_list(
        &mut self,
        cx: &Cx<'_>,
        o: &Map<String, Value>,
        ptr: &str,
    ) -> Result<NtId, StructTagError> {
        let count = |k: &str| o.get(k).and_then(Value::as_u64).map(|n| n as usize);
        let (prefix, rest): (&[Value], Option<&Value>) =
            match (o.get("prefixItems"), o.get("items")) {
                (Some(Value::Array(p)), items) => (p, items.or(Some(&Value::Bool(true)))),
                (None, Some(Value::Array(p))) => {
                    (p, o.get("additionalItems").or(Some(&Value::Bool(true))))
                }
                (None, items) => (&[], items.or(Some(&Value::Bool(true)))),
                (Some(_), _) => {
                    return Err(StructTagError::invalid(
                        &child(ptr, "prefixItems"),
                        "prefixItems must be an array",
                    ))
                }
            };
        let mut rhs = Vec::new();
        for (i, item) in prefix.iter().enumerate() {
            let p = child(&child(ptr, "prefixItems"), &i.to_string());
            rhs.push(Symbol::Nt(self.cohere_element(cx, Vec::new(), item, &p)?));
        }
        let rest = rest.filter(|r| **r != Value::Bool(false));
        if let Some(r) = rest {
            let lo = count("minItems").unwrap_or(0).saturating_sub(prefix.len());
            let hi = count("maxItems").map(|m| m.saturating_sub(prefix.len()));
            if hi != Some(0) {
                let item = self.cohere_element(cx, Vec::new(), r, &child(ptr, "items"))?;
                for _ in 0..lo {
                    rhs.push(Symbol::Nt(item));
                }
                let tail = match hi {
                    None => {
                        let star = self.g.add_nonterminal("cohere_items");
                        self.g.add_rule(star, Vec::new());
                        self.g
                            .add_rule(star, vec![Symbol::Nt(item), Symbol::Nt(star)]);
                        star
                    }
                    Some(h) => {
                        let mut t = self.nt("cohere_items", vec![Vec::new()]);
                        for _ in lo..h {
                            t = self.nt(
                                "cohere_items",
                                vec![vec![Symbol::Nt(item), Symbol::Nt(t)], Vec::new()],
                            );
                        }
                        t
                    }
                };
                rhs.push(Symbol::Nt(tail));
            }
        }
        Ok(self.nt("cohere_list", vec![rhs]))
    }

    /// The tails of an unconstrained value: raw text, a JSON number,
    /// boolean or null, a `dict` of any keys and values, a `list` of any
    /// items (recursive, built once per body).
    fn cohere_any(&mut self, cx: &Cx<'_>, ptr: &str) -> Result<NtId, StructTagError> {
        if let Some(n) = cx.cohere_any.get() {
            return Ok(n);
        }
        let tails = self.g.add_nonterminal("cohere_any");
        cx.cohere_any.set(Some(tails));
        let scalar = self.xml_json(
            cx,
            &serde_json::json!({"type": ["number", "boolean", "null"]}),
            ptr,
        )?;
        // <cofl:value name="key" …> and <cofl:value …>
        let mut named = lit("<cofl:value name=\"");
        named.push(re(COHERE_KEY));
        named.extend(lit("\""));
        named.push(Symbol::Nt(tails));
        let named = self.nt("cohere_any_param", vec![named]);
        let mut item = lit("<cofl:value");
        item.push(Symbol::Nt(tails));
        let item = self.nt("cohere_any_item", vec![item]);
        // a dict: whitespace, then elements separated by whitespace
        let more = self.g.add_nonterminal("cohere_any_params");
        self.g.add_rule(more, Vec::new());
        self.g.add_rule(
            more,
            vec![Symbol::Nt(cx.ws), Symbol::Nt(named), Symbol::Nt(more)],
        );
        let dict = self.nt(
            "cohere_any_dict",
            vec![
                vec![
                    Symbol::Nt(cx.ws),
                    Symbol::Nt(named),
                    Symbol::Nt(more),
                    Symbol::Nt(cx.ws),
                ],
                vec![Symbol::Nt(cx.ws)],
            ],
        );
        let list = self.g.add_nonterminal("cohere_any_list");
        self.g.add_rule(list, Vec::new());
        self.g
            .add_rule(list, vec![Symbol::Nt(item), Symbol::Nt(list)]);
        for rhs in [
            self.cohere_tail(cx, "raw", vec![Symbol::Nt(cx.text)], true),
            self.cohere_tail(cx, "json", scalar.body, false),
            self.cohere_tail(cx, "dict", vec![Symbol::Nt(dict)], false),
            self.cohere_tail(cx, "list", vec![Symbol::Nt(list)], false),
        ] {
            self.g.add_rule(tails, rhs);
        }
        Ok(tails)
    }

    /// A Cohere key that is none of `declared` (those that are XML
    /// identifiers; XGrammar's exclusion trie), as symbols.
    fn cohere_key_excluding<'k>(&mut self, declared: impl Iterator<Item = &'k str>) -> Vec<Symbol> {
        let names: Vec<&str> = declared.filter(|k| identifier(k)).collect();
        if names.is_empty() {
            return vec![re(COHERE_KEY)];
        }
        vec![Symbol::Nt(self.cohere_trie(&names, ""))]
    }

    /// Keys starting with `prefix` that are none of `names` (which all
    /// start with it).
    fn cohere_trie(&mut self, names: &[&str], prefix: &str) -> NtId {
        let mut alts = Vec::new();
        if !prefix.is_empty() && !names.contains(&prefix) {
            alts.push(Vec::new());
        }
        let mut next: Vec<char> = names
            .iter()
            .filter_map(|n| n[prefix.len()..].chars().next())
            .collect();
        next.sort_unstable();
        next.dedup();
        let class: String = next.iter().collect();
        alts.push(vec![re(format!(
            r#"(?:[^\x00"&<>{class}]|&amp;|&lt;|&gt;|&quot;)(?:[^\x00"&<>]|&amp;|&lt;|&gt;|&quot;)*"#
        ))]);
        for c in next {
            let p = format!("{prefix}{c}");
            let sub: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| n.starts_with(&p))
                .collect();
            let n = self.cohere_trie(&sub, &p);
            let mut rhs = lit(&c.to_string());
            rhs.push(Symbol::Nt(n));
            alts.push(rhs);
        }
        self.nt("cohere_key", alts)
    }
}

/// A `const` / `enum` value dropped by `excludes`.
fn excluded_literal(cx: &Cx<'_>, v: &Value) -> bool {
    let t = xml_value_text(v);
    cx.excludes
        .iter()
        .any(|e| !e.is_empty() && t.contains(e.as_str()))
}

/// A `const` / `enum` value, whitespace around it allowed.
fn xml_literal(v: &Value) -> Alt {
    Alt {
        body: lit(&xml_value_text(v)),
        string: v.is_string(),
        bare: false,
    }
}

/// The parts of an ordered object.
struct Ordered<'a> {
    pats: &'a [NtId],
    req: Vec<bool>,
    addl: Option<NtId>,
    min: usize,
    max: Option<usize>,
}

impl Ordered<'_> {
    /// Counts saturate at `min` when there is no upper bound.
    fn sat(&self, c: usize) -> usize {
        if self.max.is_none() {
            c.min(self.min)
        } else {
            c
        }
    }
}

/// A parameter's key.
enum Key<'a> {
    /// A declared property's name.
    Named(&'a str),
    /// A key pattern's symbols, and Kimi-K3's pinned type.
    Pattern(Vec<Symbol>, Option<&'static str>),
}

/// `branch` with the keywords of `parent` beside its combinator `comb`.
fn merge(parent: &Map<String, Value>, comb: &str, branch: &Value) -> Value {
    let mut m: Map<String, Value> = parent
        .iter()
        .filter(|(k, _)| k.as_str() != comb && !annotation(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    match branch {
        Value::Object(b) => {
            for (k, v) in b {
                m.insert(k.clone(), v.clone());
            }
            Value::Object(m)
        }
        Value::Bool(true) => Value::Object(m),
        b => b.clone(),
    }
}
