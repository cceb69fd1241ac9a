//! `contains` / `minContains` against an independent validator: for
//! schemas mixing `contains` with `items`, `prefixItems`, `minItems` /
//! `maxItems`, `allOf` and `anyOf`, every array of up to four elements over
//! a small pool of values is accepted by the compiled grammar exactly when
//! the `jsonschema` crate (draft 2020-12) says it is valid. Arrays are
//! written compactly, which is the grammar's canonical form; no objects are
//! in the pool, so key order does not enter. `maxContains` is refused.

use serde_json::{json, Value};
use zapspec_grammar::Recognizer;
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, SchemaError};

fn pool() -> Vec<Value> {
    vec![
        json!(0),
        json!(1),
        json!(7),
        json!(-2),
        json!("a"),
        json!("bb"),
        json!(true),
        json!(null),
    ]
}

/// Every array of length 0..=4 over the pool.
fn arrays() -> Vec<Value> {
    let p = pool();
    let mut out = vec![vec![]];
    let mut all = vec![Value::Array(vec![])];
    for _ in 0..4 {
        let mut next = Vec::new();
        for a in &out {
            for v in &p {
                let mut b: Vec<Value> = a.clone();
                b.push(v.clone());
                all.push(Value::Array(b.clone()));
                next.push(b);
            }
        }
        out = next;
    }
    all
}

fn check(schema: Value) {
    let g = compile_json_schema(&schema, &JsonSchemaOptions::default())
        .unwrap_or_else(|e| panic!("{schema}: {e}"));
    let r = Recognizer::new(&g).unwrap();
    let oracle = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .unwrap();
    let (mut valid, mut n) = (0, 0);
    for a in arrays() {
        let want = oracle.is_valid(&a);
        let got = r.recognizes(a.to_string().as_bytes());
        assert_eq!(got, want, "schema {schema}\ninstance {a}");
        valid += usize::from(want);
        n += 1;
    }
    // the schemas below must be neither empty nor everything on the pool
    assert!(valid > 0 && valid < n, "{schema}: {valid} of {n} valid");
}

#[test]
fn contains_is_exact_against_the_validator() {
    for s in [
        json!({"type": "array", "contains": {"type": "integer"}}),
        json!({"type": "array", "contains": {"type": "integer", "minimum": 5}}),
        json!({"type": "array", "contains": {"const": "a"}, "maxItems": 3}),
        json!({"type": "array", "contains": {"type": "string"}, "minContains": 2}),
        json!({"type": "array", "contains": {"type": "integer"}, "minContains": 0, "maxItems": 2}),
        json!({"type": "array", "items": {"type": ["integer", "string"]}, "contains": {"type": "string"}}),
        json!({"type": "array", "prefixItems": [{"type": "boolean"}], "contains": {"type": "integer"}, "minItems": 1}),
        json!({"type": "array", "prefixItems": [{"type": "integer"}], "items": false, "contains": {"type": "integer", "maximum": 0}}),
        json!({"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 1}, "minContains": 2, "maxItems": 3}),
        json!({"allOf": [{"type": "array", "contains": {"type": "null"}}, {"items": {"type": ["null", "boolean"]}}]}),
        json!({"allOf": [{"type": "array", "contains": {"type": "null"}}, {"minContains": 3}]}),
        json!({"anyOf": [{"type": "array", "contains": {"const": true}}, {"type": "array", "maxItems": 0}]}),
        json!({"contains": {"type": "string"}}),
    ] {
        check(s);
    }
}

#[test]
fn max_contains_is_refused_and_unsatisfiable_counts_are_empty() {
    let e = compile_json_schema(
        &json!({"type": "array", "contains": {"type": "integer"}, "maxContains": 1}),
        &JsonSchemaOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, SchemaError::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("maxContains"), "{e}");
    // at least 3 integers in at most 2 items: no array; the schema allows
    // the other types still
    let g = compile_json_schema(
        &json!({"contains": {"type": "integer"}, "minContains": 3, "maxItems": 2}),
        &JsonSchemaOptions::default(),
    )
    .unwrap();
    let r = Recognizer::new(&g).unwrap();
    assert!(!r.recognizes(b"[1,2]") && !r.recognizes(b"[]"));
    assert!(r.recognizes(b"\"x\"") && r.recognizes(b"3"));
}
