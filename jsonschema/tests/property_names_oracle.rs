//! `propertyNames` against an independent validator: for schemas mixing
//! `propertyNames` (with `pattern`, `not: {pattern}`, `enum`, `not: {enum}`,
//! `const`, `minLength`/`maxLength`, `format`, `type`, `false`, `$ref`,
//! `anyOf`, and two of them in an `allOf`) with `properties`, `required`,
//! `additionalProperties`, `patternProperties` and
//! `minProperties`/`maxProperties`, every object of up to three keys over a
//! pool of keys (and a few non-objects) is accepted by the compiled grammar
//! exactly when the `jsonschema` crate (draft 2020-12, formats validated)
//! says it is valid. Objects are written in the grammar's key order
//! ([`canonical_instances`]), compactly. Also the string-value side of the
//! same machinery: `not: {pattern}` and `allOf` of two different
//! `pattern`s on strings.
//!
//! Run with `--nocapture` for the counts.

mod short_strings;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Map, Value};
use short_strings::{agrees_on_short_strings, short_strings};
use zapspec_grammar::Recognizer;
use zapspec_jsonschema::{
    canonical_instances, compile_json_schema, JsonSchemaOptions, SchemaError,
};

/// Keys that hit and miss the patterns, names and lengths below.
const KEYS: &[&str] = &[
    "",
    "a",
    "b",
    "ab",
    "ba",
    "abc",
    "x",
    "xy",
    "1",
    "12",
    "a1",
    "é",
    "a\"b",
    "foo",
    "aaaa",
    "A",
    "2024-01-31",
];

/// Every object with 0..=2 distinct keys of `KEYS` and values from
/// `values`, the 3-key objects with the first value, and a few non-objects.
fn instances(values: &[Value], three: bool) -> Vec<Value> {
    let obj = |kv: &[(&str, &Value)]| {
        let mut m = Map::new();
        for (k, v) in kv {
            m.insert(k.to_string(), (*v).clone());
        }
        Value::Object(m)
    };
    let mut out = vec![json!({}), json!("a"), json!(1), json!(null), json!([])];
    for (i, a) in KEYS.iter().enumerate() {
        for v in values {
            out.push(obj(&[(a, v)]));
        }
        for b in &KEYS[i + 1..] {
            for v in values {
                for w in values {
                    out.push(obj(&[(a, v), (b, w)]));
                }
            }
            if three {
                for c in &KEYS[i + 1..] {
                    if c > b {
                        out.push(obj(&[(a, &values[0]), (b, &values[0]), (c, &values[0])]));
                    }
                }
            }
        }
    }
    out
}

fn oracle(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .unwrap_or_else(|e| panic!("oracle refuses {schema}: {e}"))
}

/// Outcome of one schema: instances checked, valid among them, mismatches
/// (as messages).
struct Outcome {
    checked: usize,
    valid: usize,
    mismatches: Vec<String>,
}

/// Compares the grammar of `schema` with the validator on `insts`.
fn check(schema: &Value, insts: &[Value]) -> Result<Outcome, SchemaError> {
    let opts = JsonSchemaOptions::default();
    let v = oracle(schema);
    let mut out = Outcome {
        checked: 0,
        valid: 0,
        mismatches: Vec::new(),
    };
    let rec = match compile_json_schema(schema, &opts) {
        Ok(g) => Some(Recognizer::new(&g).unwrap_or_else(|e| panic!("{schema}: {e}"))),
        Err(SchemaError::Unsatisfiable { .. }) => None,
        Err(e) => return Err(e),
    };
    for inst in insts {
        let want = v.is_valid(inst);
        let got = match &rec {
            None => false,
            Some(r) => canonical_instances(schema, inst, &opts)?
                .iter()
                .any(|c| r.recognizes(c.to_string().as_bytes())),
        };
        out.checked += 1;
        out.valid += usize::from(want);
        if got != want {
            out.mismatches.push(format!(
                "schema {schema}\ninstance {inst}: grammar {got}, validator {want}"
            ));
        }
    }
    Ok(out)
}

fn fixed_schemas() -> Vec<Value> {
    vec![
        // pattern, not-pattern
        json!({"propertyNames": {"pattern": "^a"}}),
        json!({"propertyNames": {"pattern": "^[a-z]+$"}}),
        json!({"propertyNames": {"not": {"pattern": "b"}}}),
        json!({"propertyNames": {"pattern": "^a", "not": {"pattern": "1$"}}}),
        // enum, not-enum, const
        json!({"propertyNames": {"enum": ["a", "ab", "x", 1, null]}}),
        json!({"propertyNames": {"enum": [1, 2]}}),
        json!({"propertyNames": {"not": {"enum": ["a", "b", "é"]}}}),
        json!({"propertyNames": {"not": {"const": "ab"}}}),
        json!({"propertyNames": {"const": "foo"}}),
        json!({"propertyNames": {"enum": ["a", "ab", "abc"], "maxLength": 2}}),
        // lengths
        json!({"propertyNames": {"minLength": 2}}),
        json!({"propertyNames": {"maxLength": 1}}),
        json!({"propertyNames": {"minLength": 1, "maxLength": 2}}),
        json!({"propertyNames": {"minLength": 3, "maxLength": 2}}),
        // false, types
        json!({"propertyNames": false}),
        json!({"propertyNames": true}),
        json!({"propertyNames": {}}),
        json!({"propertyNames": {"type": "integer"}}),
        json!({"propertyNames": {"type": ["string", "null"], "maxLength": 1}}),
        json!({"type": "object", "propertyNames": {"type": "string", "minimum": 3, "items": false, "required": ["q"]}}),
        // allOf of two propertyNames, and P itself an allOf / anyOf / $ref / not
        json!({"allOf": [{"propertyNames": {"pattern": "^a"}}, {"propertyNames": {"maxLength": 2}}]}),
        json!({"allOf": [{"propertyNames": {"pattern": "^a"}}, {"propertyNames": {"pattern": "b$"}}]}),
        json!({"allOf": [{"propertyNames": {"enum": ["a", "b", "x"]}}, {"propertyNames": {"not": {"const": "b"}}}]}),
        json!({"propertyNames": {"allOf": [{"pattern": "a"}, {"pattern": "b"}, {"not": {"pattern": "^b"}}]}}),
        json!({"propertyNames": {"anyOf": [{"const": "x"}, {"pattern": "^a", "maxLength": 2}]}}),
        json!({"$defs": {"k": {"pattern": "^[ab]+$"}}, "propertyNames": {"$ref": "#/$defs/k"}}),
        json!({"propertyNames": {"not": {"minLength": 2}}}),
        json!({"propertyNames": {"format": "date"}}),
        json!({"propertyNames": {"anyOf": [{"format": "date"}, {"const": "x"}]}}),
        // with properties / required / additionalProperties / patternProperties
        json!({"properties": {"ab": {"type": "integer"}, "x": {"type": "string"}}, "propertyNames": {"pattern": "^a"}}),
        json!({"properties": {"x": {}}, "required": ["x"], "propertyNames": {"pattern": "^a"}}),
        json!({"properties": {"a": {}}, "required": ["ab"], "propertyNames": {"maxLength": 2}}),
        json!({"required": ["xy"], "propertyNames": {"minLength": 2}}),
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}, "additionalProperties": false, "propertyNames": {"not": {"const": "b"}}}),
        json!({"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}, "propertyNames": {"maxLength": 1}}),
        json!({"patternProperties": {"^a": {"type": "integer"}, "b$": {"type": "string"}}, "propertyNames": {"not": {"const": "ab"}}}),
        json!({"patternProperties": {"^a": {"type": "integer"}}, "additionalProperties": false, "propertyNames": {"minLength": 2}}),
        json!({"properties": {"ab": {"type": "string"}}, "patternProperties": {"1": false}, "propertyNames": {"pattern": "^[a-z0-9]*$"}}),
        json!({"propertyNames": {"enum": ["a", "b", "x"]}, "minProperties": 2}),
        json!({"propertyNames": {"pattern": "^a"}, "maxProperties": 1, "additionalProperties": {"type": "integer"}}),
        json!({"allOf": [
            {"properties": {"a": {"type": "integer"}}, "propertyNames": {"maxLength": 2}},
            {"required": ["a"], "additionalProperties": false, "properties": {"a": {}, "ab": {}, "abc": {}}}
        ]}),
        // nested: the constraint holds for inner objects only
        json!({"properties": {"x": {"propertyNames": {"pattern": "^a"}}}}),
        json!({"additionalProperties": {"propertyNames": {"const": "c"}}}),
    ]
}

#[test]
fn property_names_match_the_validator() {
    let insts = instances(&[json!(0), json!("s"), json!({"b": 1})], true);
    let (mut checked, mut valid, mut mismatches) = (0, 0, Vec::new());
    let schemas = fixed_schemas();
    for s in &schemas {
        let o = check(s, &insts).unwrap_or_else(|e| panic!("{s}: {e}"));
        // every schema keeps some instances and (but for `true`) drops others
        let trivial = [json!(true), json!({})].contains(&s["propertyNames"]);
        assert!(
            o.valid > 0 && (trivial || o.valid < o.checked),
            "{s}: {} of {} valid",
            o.valid,
            o.checked
        );
        checked += o.checked;
        valid += o.valid;
        mismatches.extend(o.mismatches);
    }
    println!(
        "propertyNames oracle (fixed): {} schemas x {} instances = {checked} checked ({valid} valid), {} mismatches",
        schemas.len(),
        insts.len(),
        mismatches.len()
    );
    for m in mismatches.iter().take(20) {
        println!("MISMATCH {m}");
    }
    assert!(mismatches.is_empty(), "{} mismatches", mismatches.len());
}

/// Forms of `propertyNames` schemas.
fn key_schema() -> impl Strategy<Value = Value> {
    let leaf = prop::sample::select(vec![
        json!({"pattern": "^a"}),
        json!({"pattern": "b$"}),
        json!({"pattern": "^[a-z]*$"}),
        json!({"not": {"pattern": "1"}}),
        json!({"enum": ["a", "ab", "x", "12", 3]}),
        json!({"not": {"enum": ["a", "ba"]}}),
        json!({"const": "ab"}),
        json!({"not": {"const": "x"}}),
        json!({"minLength": 2}),
        json!({"maxLength": 1}),
        json!({"minLength": 1, "maxLength": 3}),
        json!({"type": "integer"}),
        json!({"type": "string"}),
        json!({"format": "date"}),
        json!(false),
        json!(true),
    ]);
    leaf.prop_recursive(1, 4, 2, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..3).prop_map(|v| json!({"allOf": v})),
            prop::collection::vec(inner, 2..3).prop_map(|v| json!({"anyOf": v})),
        ]
    })
}

fn value_schema() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!({}),
        json!({"type": "integer"}),
        json!({"type": "string"}),
        json!(false),
    ])
}

/// `propertyNames` (sometimes two, in an `allOf`) with random object
/// keywords.
fn schema() -> impl Strategy<Value = Value> {
    let names = prop::sample::select(vec!["a", "ab", "x", "12", "é", "foo"]);
    (
        key_schema(),
        prop::option::of(key_schema()),
        prop::collection::vec((names.clone(), value_schema()), 0..3),
        prop::collection::vec(names, 0..2),
        prop::option::of(prop_oneof![Just(json!(false)), value_schema()]),
        prop::option::of(prop::sample::select(vec![
            json!({"^a": {"type": "integer"}}),
            json!({"b$": false}),
            json!({"1": {"type": "string"}, "^x": {}}),
        ])),
        prop::option::of(0u64..3),
        prop::option::of(0u64..3),
    )
        .prop_map(|(p, p2, props, req, addl, pp, minp, maxp)| {
            let mut m = Map::new();
            m.insert("propertyNames".into(), p);
            if !props.is_empty() {
                let mut o = Map::new();
                for (k, s) in props {
                    o.insert(k.to_string(), s);
                }
                m.insert("properties".into(), Value::Object(o));
            }
            if !req.is_empty() {
                let mut r = req;
                r.dedup();
                m.insert("required".into(), json!(r));
            }
            if let Some(a) = addl {
                m.insert("additionalProperties".into(), a);
            }
            if let Some(pp) = pp {
                m.insert("patternProperties".into(), pp);
            }
            if let Some(n) = minp {
                m.insert("minProperties".into(), json!(n));
            }
            if let Some(n) = maxp {
                m.insert("maxProperties".into(), json!(n));
            }
            match p2 {
                None => Value::Object(m),
                Some(p2) => json!({"allOf": [Value::Object(m), {"propertyNames": p2}]}),
            }
        })
}

#[test]
fn random_property_names_match_the_validator() {
    let insts = instances(&[json!(0), json!("s")], false);
    let mut runner = TestRunner::new(Config {
        cases: 160,
        failure_persistence: None,
        ..Config::default()
    });
    let counts = std::cell::RefCell::new((0usize, 0usize, 0usize, 0usize));
    let r = runner.run(&schema(), |s| {
        let o = check(&s, &insts).map_err(|e| TestCaseError::fail(format!("{s}: {e}")))?;
        let mut c = counts.borrow_mut();
        c.0 += 1;
        c.1 += o.checked;
        c.2 += o.valid;
        c.3 += o.mismatches.len();
        prop_assert!(o.mismatches.is_empty(), "{}", o.mismatches[0]);
        Ok(())
    });
    let (schemas, checked, valid, mismatches) = *counts.borrow();
    println!(
        "propertyNames oracle (random): {schemas} schemas x {} instances = {checked} checked ({valid} valid), {mismatches} mismatches",
        insts.len()
    );
    if let Err(e) = r {
        panic!("{e}");
    }
}

#[test]
fn refusals_name_property_names_and_the_pointer() {
    let opts = JsonSchemaOptions::default();
    for (s, ptr) in [
        (
            json!({"properties": {"x": {"propertyNames": {"pattern": "(?=a)"}}}}),
            "/properties/x/propertyNames",
        ),
        (
            json!({"propertyNames": {"not": {"format": "date"}}}),
            "/propertyNames",
        ),
        (
            json!({"propertyNames": {"format": "idn-email"}}),
            "/propertyNames",
        ),
    ] {
        match compile_json_schema(&s, &opts) {
            Err(SchemaError::Unsupported {
                keyword, pointer, ..
            }) => {
                assert_eq!(keyword, "propertyNames", "{s}");
                assert_eq!(pointer, ptr, "{s}");
            }
            other => panic!("{s}: {other:?}"),
        }
    }
    // `not: {propertyNames}` has no union-of-simple-schemas complement
    let e =
        compile_json_schema(&json!({"not": {"propertyNames": {"const": "a"}}}), &opts).unwrap_err();
    assert!(matches!(e, SchemaError::Unsupported { .. }), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// String values: `not: {pattern}` and an `allOf` of two `pattern`s
    /// (the same product automaton as keys), with lengths, excluded
    /// strings and `enum`, on every short string.
    #[test]
    fn negated_and_conjoined_patterns_on_strings_match_the_validator(
        p1 in prop::option::of(prop::sample::select(vec!["^a", "b$", "^[ab]*$", "1", "^(a|1b)+$"])),
        p2 in prop::option::of(prop::sample::select(vec!["a", "^b", "^[a1]+$", "^.{2}$"])),
        n1 in prop::option::of(prop::sample::select(vec!["^a", "1", "^[ab]{2}$", "^$"])),
        excluded in prop::option::of(prop::collection::vec(prop::sample::select(short_strings()), 1..3)),
        members in prop::option::of(prop::collection::vec(prop::sample::select(short_strings()), 1..5)),
        max in prop::option::of(0u64..4),
    ) {
        let mut parts = vec![json!({"type": "string"})];
        if let Some(p) = p1 {
            parts.push(json!({"pattern": p}));
        }
        if let Some(p) = p2 {
            parts.push(json!({"pattern": p}));
        }
        if let Some(n) = n1 {
            parts.push(json!({"not": {"pattern": n}}));
        }
        if let Some(x) = excluded {
            parts.push(json!({"not": {"enum": x}}));
        }
        if let Some(e) = members {
            parts.push(json!({"enum": e}));
        }
        if let Some(n) = max {
            parts.push(json!({"maxLength": n}));
        }
        let schema = json!({"allOf": parts});
        if let Err(e) = agrees_on_short_strings(&schema, &oracle(&schema)) {
            return Err(TestCaseError::fail(e));
        }
    }
}
