//! `patternProperties`: compiled grammars against a direct validator.
//!
//! The validator below is written from the JSON Schema text (2020-12 Core
//! §10.3.2): every key is checked against `properties`, every matching
//! pattern (searched with `regex-automata`'s own regex engine, not with our
//! translation) and, when neither applies, `additionalProperties`. Random
//! objects — keys from a pool that hits and misses the patterns and names,
//! declared keys first in schema order as the grammar writes them — must be
//! accepted by the grammar (judged by the reference recognizer) exactly
//! when the validator says they are valid.

use super::*;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use zapspec_grammar::reference::Recognizer;

/// ASCII patterns that mean the same in ECMA-262 and in `regex-automata`.
const PATTERNS: &[&str] = &[
    "^a",
    "b$",
    "^[ab]+$",
    "c",
    "^[0-9]{1,2}$",
    ".*",
    "^$",
    "^a.b$",
    "^x|y$",
    "^(ab)+$",
    "^[a-c]{2,6}$",
];
const NAMES: &[&str] = &["a", "ab", "b", "c1", "12", "zz"];
const KEYS: &[&str] = &[
    "", "a", "ab", "b", "abc", "c", "1", "12", "123", "xb", "a\nb", "é", "\"a", "zz", "x", "ya",
    "aab", "c1",
];

/// Value schemas, with a direct check of each.
fn value_schema(i: usize) -> Value {
    [
        json!(true),
        json!(false),
        json!({"type": "integer"}),
        json!({"type": "string"}),
        json!({"type": "null"}),
    ][i]
        .clone()
}

fn value_ok(schema: &Value, v: &Value) -> bool {
    match schema {
        Value::Bool(b) => *b,
        s => match s["type"].as_str() {
            Some("integer") => v.is_i64(),
            Some("string") => v.is_string(),
            Some("null") => v.is_null(),
            _ => unreachable!("test schemas only"),
        },
    }
}

#[derive(Debug)]
struct Case {
    props: Vec<(String, Value)>,
    required: Vec<String>,
    patterns: Vec<(String, Value)>,
    additional: Option<Value>,
}

impl Case {
    fn schema(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), json!("object"));
        if !self.props.is_empty() {
            let p: Map<String, Value> = self.props.iter().cloned().collect();
            m.insert("properties".into(), Value::Object(p));
        }
        if !self.required.is_empty() {
            m.insert("required".into(), json!(self.required));
        }
        let pp: Map<String, Value> = self.patterns.iter().cloned().collect();
        m.insert("patternProperties".into(), Value::Object(pp));
        if let Some(a) = &self.additional {
            m.insert("additionalProperties".into(), a.clone());
        }
        Value::Object(m)
    }

    /// The direct validator.
    fn valid(&self, members: &[(String, Value)]) -> bool {
        if self
            .required
            .iter()
            .any(|r| !members.iter().any(|(k, _)| k == r))
        {
            return false;
        }
        members.iter().all(|(k, v)| {
            let mut applied = false;
            let mut ok = true;
            if let Some((_, s)) = self.props.iter().find(|(n, _)| n == k) {
                applied = true;
                ok &= value_ok(s, v);
            }
            for (p, s) in &self.patterns {
                let re = regex_automata::meta::Regex::new(p).expect("test pattern");
                if re.is_match(k.as_str()) {
                    applied = true;
                    ok &= value_ok(s, v);
                }
            }
            if !applied {
                ok &= value_ok(self.additional.as_ref().unwrap_or(&json!(true)), v);
            }
            ok
        })
    }

    /// The object's text with declared keys first, in schema order.
    fn text(&self, members: &[(String, Value)]) -> String {
        let rank = |k: &str| {
            let p = self.props.iter().position(|(n, _)| n == k);
            let r = self.required.iter().position(|n| n == k);
            match (p, r) {
                (Some(i), _) => i,
                (None, Some(j)) => self.props.len() + j,
                _ => usize::MAX,
            }
        };
        let mut ms: Vec<&(String, Value)> = members.iter().collect();
        ms.sort_by_key(|(k, _)| rank(k));
        let body: Vec<String> = ms
            .iter()
            .map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), v))
            .collect();
        format!("{{{}}}", body.join(","))
    }
}

fn case() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec((0..NAMES.len(), 0..5usize), 0..3),
        proptest::collection::vec(0..NAMES.len(), 0..2),
        proptest::collection::vec((0..PATTERNS.len(), 0..5usize), 1..4),
        proptest::option::of(0..5usize),
    )
        .prop_map(|(props, req, pats, add)| {
            let mut c = Case {
                props: Vec::new(),
                required: Vec::new(),
                patterns: Vec::new(),
                additional: add.map(value_schema),
            };
            for (n, s) in props {
                if !c.props.iter().any(|(x, _)| x == NAMES[n]) {
                    c.props.push((NAMES[n].to_string(), value_schema(s)));
                }
            }
            for n in req {
                if !c.required.iter().any(|x| x == NAMES[n]) {
                    c.required.push(NAMES[n].to_string());
                }
            }
            for (p, s) in pats {
                if !c.patterns.iter().any(|(x, _)| x == PATTERNS[p]) {
                    c.patterns.push((PATTERNS[p].to_string(), value_schema(s)));
                }
            }
            c
        })
}

fn members() -> impl Strategy<Value = Vec<(String, Value)>> {
    proptest::collection::vec((0..KEYS.len(), 0..3usize), 0..4).prop_map(|v| {
        let mut out: Vec<(String, Value)> = Vec::new();
        for (k, val) in v {
            if !out.iter().any(|(x, _)| x == KEYS[k]) {
                out.push((
                    KEYS[k].to_string(),
                    [json!(1), json!("s"), json!(null)][val].clone(),
                ));
            }
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Grammar membership equals validity for random objects.
    #[test]
    fn pattern_properties_match_the_validator(c in case(), objs in proptest::collection::vec(members(), 8)) {
        let schema = c.schema();
        let g = match compile_json_schema(&schema, &JsonSchemaOptions::default()) {
            Ok(g) => Some(g),
            Err(SchemaError::Unsatisfiable { .. }) => None,
            Err(e) => panic!("{e}\n{schema}"),
        };
        let rec = g.as_ref().map(|g| Recognizer::new(g).unwrap());
        for m in objs {
            let text = c.text(&m);
            let want = c.valid(&m);
            let got = rec.as_ref().is_some_and(|r| r.recognizes(text.as_bytes()));
            prop_assert_eq!(got, want, "{}\nschema {}", text, schema);
        }
    }
}

#[test]
fn pattern_properties_examples() {
    let s = json!({
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "patternProperties": {"^[a-z]+$": {"type": "string"}},
        "additionalProperties": {"type": "null"}
    });
    let g = compile_json_schema(&s, &JsonSchemaOptions::default()).unwrap();
    let r = Recognizer::new(&g).unwrap();
    for (text, ok) in [
        (r#"{"id":1}"#, false), // `id` matches the pattern too: must be a string and an integer
        (r#"{"x":"a"}"#, true),
        (r#"{"x":1}"#, false),
        (r#"{"X":null}"#, true),
        (r#"{"X":"a"}"#, false),
        (r#"{"":null,"ab":"c"}"#, true),
    ] {
        assert_eq!(r.recognizes(text.as_bytes()), ok, "{text}");
    }
    // a required key that only a pattern allows
    let s = json!({"required": ["k"], "patternProperties": {"^k$": {"type": "integer"}}, "additionalProperties": false});
    let g = compile_json_schema(&s, &JsonSchemaOptions::default()).unwrap();
    let r = Recognizer::new(&g).unwrap();
    assert!(
        r.recognizes(br#"{"k":1}"#) && !r.recognizes(br#"{}"#) && !r.recognizes(br#"{"k":"1"}"#)
    );
    // allOf: a declared key of the other conjunct meets the patterns
    let s = json!({"allOf": [
        {"patternProperties": {"^n": {"type": "integer"}}, "additionalProperties": false},
        {"properties": {"name": {"type": ["integer", "string"]}}, "required": ["name"]}
    ]});
    let g = compile_json_schema(&s, &JsonSchemaOptions::default()).unwrap();
    let r = Recognizer::new(&g).unwrap();
    assert!(r.recognizes(br#"{"name":1}"#) && !r.recognizes(br#"{"name":"x"}"#));
    assert!(r.recognizes(br#"{"name":1,"nn":2}"#) && !r.recognizes(br#"{"name":1,"m":2}"#));
    // refused: a conjunct whose additionalProperties would constrain pattern keys
    let s = json!({"allOf": [
        {"patternProperties": {"^n": {"type": "integer"}}},
        {"properties": {"a": true}, "additionalProperties": false}
    ]});
    assert!(matches!(
        compile_json_schema(&s, &JsonSchemaOptions::default()),
        Err(SchemaError::Unsupported { keyword, .. }) if keyword == "patternProperties"
    ));
}

#[test]
fn pattern_properties_snapshot() {
    let s = json!({
        "type": "object",
        "properties": {"ab": {"type": "integer"}},
        "patternProperties": {"^a": {"type": "string"}},
        "additionalProperties": false
    });
    insta::assert_snapshot!(
        "pattern_properties",
        compile_json_schema(&s, &JsonSchemaOptions::default())
            .unwrap()
            .to_string()
    );
}

#[test]
fn multiple_of_in_grammars() {
    let rec = |s: Value| {
        Recognizer::new(&compile_json_schema(&s, &JsonSchemaOptions::default()).unwrap()).unwrap()
    };
    let r = rec(json!({"type": "integer", "multipleOf": 3}));
    for n in -400i64..400 {
        assert_eq!(r.recognizes(n.to_string().as_bytes()), n % 3 == 0, "{n}");
    }
    assert!(!r.recognizes(b"03") && !r.recognizes(b"3.5") && !r.recognizes(b"-"));
    // by value (drafts 6+): a zero fraction, and `-0`
    assert!(r.recognizes(b"-0") && r.recognizes(b"3.0") && r.recognizes(b"-6.00"));
    assert!(!r.recognizes(b"4.0") && !r.recognizes(b"-1.0"));
    let r = rec(json!({"type": "number", "multipleOf": 7}));
    for (t, ok) in [
        ("14", true),
        ("14.0", true),
        ("-21.00", true),
        ("0", true),
        ("0.0", true),
        ("14.5", false),
        ("15", false),
    ] {
        assert_eq!(r.recognizes(t.as_bytes()), ok, "{t}");
    }
    let r = rec(json!({"type": "number", "multipleOf": 0.01, "minimum": 0}));
    for (t, ok) in [
        ("12.34", true),
        ("12.340", true),
        ("12.345", false),
        ("-1", false),
        ("1000.0", true),
        ("0", true),
    ] {
        assert_eq!(r.recognizes(t.as_bytes()), ok, "{t}");
    }
    let r = rec(json!({"type": "number", "minimum": -459.67}));
    for (t, ok) in [
        ("-459.67", true),
        ("-459.671", false),
        ("-460.0", false),
        ("68.5", true),
        ("-459.6", true),
    ] {
        assert_eq!(r.recognizes(t.as_bytes()), ok, "{t}");
    }
    // enum members are checked too
    let r = rec(json!({"enum": [2, 3, 4.5, 6], "multipleOf": 2}));
    assert!(
        r.recognizes(b"2") && r.recognizes(b"6") && !r.recognizes(b"3") && !r.recognizes(b"4.5")
    );
    // what cannot be exact is refused
    for s in [
        json!({"type": "number", "multipleOf": 0.5}),
        json!({"type": "integer", "multipleOf": 3, "minimum": 1}),
    ] {
        assert!(
            matches!(
                compile_json_schema(&s, &JsonSchemaOptions::default()),
                Err(SchemaError::Unsupported { keyword, .. }) if keyword == "multipleOf"
            ),
            "{s}"
        );
    }
}

/// Patterns for strings, meaning the same in ECMA-262 and `regex-automata`.
const STRING_PATTERNS: &[&str] = &[
    "^a+(-a+)*$",
    "[0-9]+",
    "^[ab]*c",
    "b$",
    "^(ab|c)*$",
    ".",
    "^$|^a(-|b)$",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// `pattern` with `minLength`/`maxLength`, and with `format: email`
    /// from another `allOf` member:
    /// grammar membership equals the direct check (regex search of every
    /// pattern and the length in characters).
    #[test]
    fn patterns_with_length_match_the_validator(
        pat in 0..STRING_PATTERNS.len(),
        with_email in any::<bool>(),
        min in 0u64..5,
        span in proptest::option::of(0u64..6),
        words in proptest::collection::vec("[ab0c\\-é\"]{0,9}", 24),
    ) {
        let max = span.map(|s| min + s);
        let mut base = json!({"type": "string", "minLength": min});
        if let Some(m) = max {
            base["maxLength"] = json!(m);
        }
        base["pattern"] = json!(STRING_PATTERNS[pat]);
        let schema = if with_email {
            json!({"allOf": [base, {"format": "email"}]})
        } else {
            base
        };
        let email = regex_automata::meta::Regex::new(&format!("^(?:{})$", match formats::lookup("email") {
            formats::FormatKind::Regex(r) => r,
            k => panic!("{k:?}"),
        })).unwrap();
        let g = match compile_json_schema(&schema, &JsonSchemaOptions::default()) {
            Ok(g) => Some(g),
            Err(SchemaError::Unsatisfiable { .. }) => None,
            Err(e) => panic!("{e}\n{schema}"),
        };
        let rec = g.as_ref().map(|g| Recognizer::new(g).unwrap());
        for w in words.iter().map(String::as_str).chain(["a-a", "aa-a-a", "x@y.z", "ab@c", "12"]) {
            let n = w.chars().count() as u64;
            let want = n >= min && max.is_none_or(|m| n <= m)
                && regex_automata::meta::Regex::new(STRING_PATTERNS[pat]).unwrap().is_match(w)
                && (schema.get("allOf").is_none() || email.is_match(w));
            let text = serde_json::to_string(w).unwrap();
            let got = rec.as_ref().is_some_and(|r| r.recognizes(text.as_bytes()));
            prop_assert_eq!(got, want, "{} schema {}", text, schema);
        }
    }
}

/// One `oneOf` branch of the soundness test: an object schema over keys
/// `a`, `b`, `c` (each property `const`, a type, or absent), `required`,
/// `additionalProperties: false` or not, `type: object` or not.
#[derive(Clone, Debug)]
struct Branch {
    typed: bool,
    props: Vec<(&'static str, Value)>,
    required: Vec<&'static str>,
    closed: bool,
}

impl Branch {
    fn schema(&self) -> Value {
        let mut m = Map::new();
        if self.typed {
            m.insert("type".into(), json!("object"));
        }
        let p: Map<String, Value> = self
            .props
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        m.insert("properties".into(), Value::Object(p));
        if !self.required.is_empty() {
            m.insert("required".into(), json!(self.required));
        }
        if self.closed {
            m.insert("additionalProperties".into(), json!(false));
        }
        Value::Object(m)
    }

    /// The direct validator.
    fn valid(&self, v: &Value) -> bool {
        let Value::Object(o) = v else {
            return !self.typed;
        };
        self.required.iter().all(|r| o.contains_key(*r))
            && o.iter()
                .all(|(k, x)| match self.props.iter().find(|(n, _)| n == k) {
                    Some((_, s)) => prop_ok(s, x),
                    None => !self.closed,
                })
    }
}

/// The direct check of one property schema of [`branch`].
fn prop_ok(s: &Value, x: &Value) -> bool {
    if let Some(c) = s.get("const") {
        return c == x;
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        return e.contains(x);
    }
    if let Some(a) = s.get("anyOf").and_then(Value::as_array) {
        return a.iter().any(|b| prop_ok(b, x));
    }
    match s.get("type").and_then(Value::as_str) {
        Some("string") => x.is_string(),
        Some("integer") => x.is_i64(),
        _ => unreachable!("test schemas only"),
    }
}

fn branch() -> impl Strategy<Value = Branch> {
    let prop = prop_oneof![
        Just(json!({"const": 1})),
        Just(json!({"const": 2})),
        Just(json!({"const": "x"})),
        Just(json!({"type": "string"})),
        Just(json!({"type": "integer"})),
        Just(json!({"enum": [1, "x"]})),
        Just(json!({"anyOf": [{"const": 2}, {"const": "y"}]})),
    ];
    (
        any::<bool>(),
        proptest::collection::vec((0..3usize, prop), 0..3),
        proptest::collection::vec(0..3usize, 0..3),
        any::<bool>(),
    )
        .prop_map(|(typed, props, req, closed)| {
            const K: [&str; 3] = ["a", "b", "c"];
            let mut b = Branch {
                typed,
                props: vec![],
                required: vec![],
                closed,
            };
            for (k, s) in props {
                if !b.props.iter().any(|(n, _)| *n == K[k]) {
                    b.props.push((K[k], s));
                }
            }
            for k in req {
                if !b.required.contains(&K[k]) {
                    b.required.push(K[k]);
                }
            }
            b
        })
}

/// Instances over the same keys and values.
fn instance() -> impl Strategy<Value = Value> {
    let val = prop_oneof![
        Just(json!(1)),
        Just(json!(2)),
        Just(json!("x")),
        Just(json!("y")),
        Just(json!(null))
    ];
    prop_oneof![
        1 => Just(json!(5)),
        6 => proptest::collection::vec((0..4usize, val), 0..4).prop_map(|kv| {
            let mut m = Map::new();
            for (k, v) in kv {
                m.insert(["a", "b", "c", "d"][k].to_string(), v);
            }
            Value::Object(m)
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// `OneOfMode::RequireDisjoint` is sound: when a `oneOf` of random
    /// object branches compiles, every accepted instance is valid for
    /// exactly one branch (and the context `type: object` when set).
    #[test]
    fn one_of_require_disjoint_is_sound(
        branches in proptest::collection::vec(branch(), 2..4),
        ctx_typed in any::<bool>(),
        insts in proptest::collection::vec(instance(), 16),
    ) {
        let mut schema = json!({"oneOf": branches.iter().map(Branch::schema).collect::<Vec<_>>()});
        if ctx_typed {
            schema["type"] = json!("object");
        }
        let strict = JsonSchemaOptions { one_of: OneOfMode::RequireDisjoint, ..Default::default() };
        let g = match compile_json_schema(&schema, &strict) {
            Ok(g) => g,
            // Refused (`oneOf` not provably disjoint, or a `not` the exact
            // Bᵢ ∧ ¬Bⱼ construction cannot merge): sound, nothing to check.
            Err(SchemaError::Unsupported { .. }) => return Ok(()),
            Err(SchemaError::Unsatisfiable { .. }) => return Ok(()),
            Err(e) => panic!("{e}\n{schema}"),
        };
        let rec = Recognizer::new(&g).unwrap();
        for v in insts {
            let hits = branches.iter().filter(|b| b.valid(&v)).count();
            let valid = hits == 1 && (!ctx_typed || v.is_object());
            // the grammar writes keys in schema order: try every ordering
            // the recogniser could accept by checking each candidate
            let cands = canonical_instances(&schema, &v, &strict).unwrap();
            let accepted = cands.iter().any(|c| rec.recognizes(c.to_string().as_bytes()));
            prop_assert!(!accepted || valid, "accepted invalid {} (hits {}) for {}", v, hits, schema);
            prop_assert!(accepted || !valid, "rejected valid {} for {}", v, schema);
        }
    }
}

/// A direct check of one dependency on an object.
type ObjCheck = Box<dyn Fn(&Map<String, Value>) -> bool>;

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// `dependencies`/`dependentRequired`/`dependentSchemas`: grammar
    /// membership equals the direct check ("if `k` is present, the listed
    /// names are present / the instance satisfies the schema").
    #[test]
    fn dependencies_match_the_validator(
        deps in proptest::collection::vec((0..4usize, proptest::option::of(proptest::collection::vec(0..4usize, 0..3)), 0..3usize), 0..3),
        closed in any::<bool>(),
        insts in proptest::collection::vec(proptest::collection::vec((0..4usize, 0..2usize), 0..4), 16),
    ) {
        const K: [&str; 4] = ["a", "b", "c", "d"];
        let mut props = Map::new();
        for k in &K[..3] {
            props.insert(k.to_string(), json!({"type": "integer"}));
        }
        // (k, names) → array form; (k, None) → a schema: required d, or d an integer, or false
        let mut dep = Map::new();
        let mut checks: Vec<(usize, ObjCheck)> = vec![];
        for (k, names, form) in deps {
            if dep.contains_key(K[k]) {
                continue;
            }
            match names {
                Some(ns) => {
                    dep.insert(K[k].into(), json!(ns.iter().map(|&n| K[n]).collect::<Vec<_>>()));
                    checks.push((k, Box::new(move |o: &Map<String, Value>| ns.iter().all(|&n| o.contains_key(K[n])))));
                }
                None => {
                    let (s, f): (Value, ObjCheck) = match form {
                        0 => (json!({"required": ["d"]}), Box::new(|o: &Map<String, Value>| o.contains_key("d"))),
                        1 => (json!({"properties": {"d": {"type": "string"}}}), Box::new(|o: &Map<String, Value>| o.get("d").is_none_or(Value::is_string))),
                        _ => (json!(false), Box::new(|_: &Map<String, Value>| false)),
                    };
                    dep.insert(K[k].into(), s);
                    checks.push((k, f));
                }
            }
        }
        let mut schema = json!({"type": "object", "properties": props, "dependencies": dep});
        if closed {
            schema["additionalProperties"] = json!(false);
        }
        let g = match compile_json_schema(&schema, &JsonSchemaOptions::default()) {
            Ok(g) => Some(g),
            Err(SchemaError::Unsatisfiable { .. }) => None,
            Err(e) => panic!("{e}\n{schema}"),
        };
        let rec = g.as_ref().map(|g| Recognizer::new(g).unwrap());
        for kv in insts {
            let mut o = Map::new();
            for (k, v) in kv {
                o.insert(K[k].to_string(), [json!(1), json!("s")][v].clone());
            }
            let valid = o.iter().all(|(k, v)| if k == "d" { !closed } else { v.is_i64() })
                && checks.iter().all(|(k, f)| !o.contains_key(K[*k]) || f(&o));
            let v = Value::Object(o);
            let accepted = rec.as_ref().is_some_and(|r| {
                canonical_instances(&schema, &v, &JsonSchemaOptions::default())
                    .unwrap()
                    .iter()
                    .any(|c| r.recognizes(c.to_string().as_bytes()))
            });
            prop_assert_eq!(accepted, valid, "{} for {}", v, schema);
        }
    }
}

/// A conjunction of independent keywords (for `not` and `if`), with a
/// direct check.
fn simple_kw() -> impl Strategy<Value = Value> {
    let kw = prop_oneof![
        Just(("type", json!("string"))),
        Just(("type", json!(["number", "null"]))),
        (-3i64..4).prop_map(|v| ("minimum", json!(v))),
        (-3i64..4).prop_map(|v| ("maximum", json!(v as f64 + 0.5))),
        (-3i64..4).prop_map(|v| ("exclusiveMinimum", json!(v))),
        (0u64..3).prop_map(|v| ("minLength", json!(v))),
        (0u64..3).prop_map(|v| ("maxItems", json!(v))),
        (0u64..3).prop_map(|v| ("minProperties", json!(v))),
        Just(("required", json!(["x"]))),
        Just(("properties", json!({"x": {"const": "a"}}))),
        Just(("properties", json!({"x": {"type": "string"}, "y": false}))),
        Just(("enum", json!(["a", null, true]))),
    ];
    proptest::collection::vec(kw, 0..3).prop_map(|kws| {
        let mut m = Map::new();
        for (k, v) in kws {
            m.insert(k.to_string(), v);
        }
        Value::Object(m)
    })
}

/// The direct validator of [`simple_kw`] schemas.
fn kw_ok(s: &Value, v: &Value) -> bool {
    let Value::Object(m) = s else {
        return s == &json!(true);
    };
    let num = v.as_f64();
    m.iter().all(|(k, x)| match k.as_str() {
        "type" => {
            let ts: Vec<&str> = match x {
                Value::String(t) => vec![t.as_str()],
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                _ => unreachable!(),
            };
            ts.iter().any(|t| match *t {
                "string" => v.is_string(),
                "number" => v.is_number(),
                "integer" => v.is_i64(),
                "null" => v.is_null(),
                _ => unreachable!(),
            })
        }
        "minimum" => num.is_none_or(|n| n >= x.as_f64().unwrap()),
        "maximum" => num.is_none_or(|n| n <= x.as_f64().unwrap()),
        "exclusiveMinimum" => num.is_none_or(|n| n > x.as_f64().unwrap()),
        "minLength" => v
            .as_str()
            .is_none_or(|t| t.chars().count() as u64 >= x.as_u64().unwrap()),
        "maxItems" => v
            .as_array()
            .is_none_or(|a| a.len() as u64 <= x.as_u64().unwrap()),
        "minProperties" => v
            .as_object()
            .is_none_or(|o| o.len() as u64 >= x.as_u64().unwrap()),
        "required" => v.as_object().is_none_or(|o| o.contains_key("x")),
        "properties" => v.as_object().is_none_or(|o| {
            o.iter().all(|(pk, pv)| match x.get(pk) {
                None => true,
                Some(Value::Bool(b)) => *b,
                Some(ps) => match (ps.get("const"), ps.get("type")) {
                    (Some(c), _) => c == pv,
                    (_, Some(_)) => pv.is_string(),
                    _ => unreachable!(),
                },
            })
        }),
        "enum" => x.as_array().unwrap().contains(v),
        _ => unreachable!(),
    })
}

fn mixed_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(null)),
        Just(json!(true)),
        (-40i64..40).prop_map(|n| json!(n as f64 / 8.0)),
        (-5i64..6).prop_map(|n| json!(n)),
        "[a-c]{0,3}".prop_map(Value::String),
        proptest::collection::vec(Just(json!(1)), 0..4).prop_map(Value::Array),
        proptest::collection::vec((0..3usize, 0..3usize), 0..3).prop_map(|kv| {
            let mut o = Map::new();
            for (k, v) in kv {
                o.insert(
                    ["x", "y", "z"][k].into(),
                    [json!("a"), json!(1), json!("b")][v].clone(),
                );
            }
            Value::Object(o)
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// `not` of a conjunction of independent keywords, and `if`/`then`/
    /// `else`: grammar membership equals the direct check.
    #[test]
    fn not_and_if_match_the_validator(
        i in simple_kw(),
        t in proptest::option::of(simple_kw()),
        e in proptest::option::of(simple_kw()),
        use_if in any::<bool>(),
        vals in proptest::collection::vec(mixed_value(), 24),
    ) {
        let schema = if use_if {
            let mut m = json!({"if": i});
            if let Some(t) = &t { m["then"] = t.clone(); }
            if let Some(e) = &e { m["else"] = e.clone(); }
            m
        } else {
            json!({"not": i})
        };
        let g = match compile_json_schema(&schema, &JsonSchemaOptions::default()) {
            Ok(g) => Some(g),
            Err(SchemaError::Unsatisfiable { .. }) => None,
            // A combination the compiler refuses (e.g. `not: {enum}` beside
            // length bounds, from `else` under an `if` with `enum`) is a
            // sound answer, not a mismatch: nothing to compare.
            Err(SchemaError::Unsupported { .. }) => return Ok(()),
            Err(err) => panic!("{err}\n{schema}"),
        };
        let rec = g.as_ref().map(|g| Recognizer::new(g).unwrap());
        for v in vals {
            let valid = if use_if {
                if kw_ok(&i, &v) {
                    t.as_ref().is_none_or(|t| kw_ok(t, &v))
                } else {
                    e.as_ref().is_none_or(|e| kw_ok(e, &v))
                }
            } else {
                !kw_ok(&i, &v)
            };
            let accepted = rec.as_ref().is_some_and(|r| {
                canonical_instances(&schema, &v, &JsonSchemaOptions::default())
                    .unwrap()
                    .iter()
                    .any(|c| r.recognizes(c.to_string().as_bytes()))
            });
            prop_assert_eq!(accepted, valid, "{} for {}", v, schema);
        }
    }
}

#[test]
fn if_follows_the_draft() {
    let s = |schema: Option<&str>| {
        let mut v =
            json!({"if": {"properties": {"t": {"const": "a"}}}, "then": {"required": ["x"]}});
        if let Some(d) = schema {
            v["$schema"] = json!(d);
        }
        let g = compile_json_schema(&v, &JsonSchemaOptions::default()).unwrap();
        Recognizer::new(&g).unwrap().recognizes(br#"{"t":"a"}"#)
    };
    assert!(!s(None), "2020-12: then applies");
    assert!(!s(Some("http://json-schema.org/draft-07/schema#")));
    assert!(
        s(Some("http://json-schema.org/draft-04/schema#")),
        "draft 4 has no if"
    );
}
