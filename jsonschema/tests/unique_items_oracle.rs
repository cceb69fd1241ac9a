//! `uniqueItems: true` against an independent validator: for schemas whose
//! items range over a small finite set of scalars (booleans, `null`,
//! `enum`/`const`, bounded integers; through `anyOf`/`allOf`), every array
//! of up to four elements over a pool of values (the domains, values
//! outside them, and `1.0` beside `1`, which JSON equality makes equal) is
//! accepted by the compiled grammar exactly when the `jsonschema` crate
//! (draft 2020-12) says it is valid. Arrays are written compactly, the
//! grammar's canonical form; where the items are `type: integer`, `1.0`
//! is no canonical spelling (the compiler writes integers without
//! fraction), so arrays holding it are only checked for soundness there.
//! Items of an infinite domain, tuple forms and `contains` are refused.

use serde_json::{json, Value};
use zapspec_grammar::Recognizer;
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, SchemaError};

fn pool() -> Vec<Value> {
    vec![
        json!(1),
        json!(1.0),
        json!(2),
        json!(3),
        json!(0),
        json!("a"),
        json!(true),
        json!(false),
        json!(null),
    ]
}

/// Every array of length 0..=4 over the pool.
fn arrays() -> Vec<Value> {
    let p = pool();
    let mut out: Vec<Vec<Value>> = vec![vec![]];
    let mut all = vec![Value::Array(vec![])];
    for _ in 0..4 {
        let mut next = Vec::new();
        for a in &out {
            for v in &p {
                let mut b = a.clone();
                b.push(v.clone());
                all.push(Value::Array(b.clone()));
                next.push(b);
            }
        }
        out = next;
    }
    all
}

/// Whether the array holds an integral number written with a fraction.
fn has_float_integer(a: &Value) -> bool {
    a.as_array().is_some_and(|xs| {
        xs.iter()
            .any(|x| x.is_f64() && x.as_f64().is_some_and(|f| f.fract() == 0.0))
    })
}

/// Checks the grammar of `schema` against the validator on every array of
/// the pool; `float_canonical`: whether `1.0` is a spelling the grammar
/// must accept (false for `type: integer` items).
fn check(schema: Value, float_canonical: bool) -> (usize, usize) {
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
        if got {
            assert!(want, "unsound: schema {schema}\ninstance {a}");
        } else if want && (float_canonical || !has_float_integer(&a)) {
            panic!("incomplete: schema {schema}\ninstance {a}");
        }
        valid += usize::from(want);
        n += 1;
    }
    assert!(valid > 0 && valid < n, "{schema}: {valid} of {n} valid");
    (valid, n)
}

#[test]
fn unique_items_is_exact_against_the_validator() {
    let cases = [
        (
            json!({"type": "array", "uniqueItems": true, "items": {"type": "boolean"}}),
            true,
        ),
        (
            json!({"type": "array", "uniqueItems": true, "items": {"enum": [1, 2, "a", null]}}),
            true,
        ),
        (
            json!({"type": "array", "uniqueItems": true, "items": {"enum": [1, 1.0, 2]}}),
            true,
        ),
        (
            json!({"type": "array", "uniqueItems": true, "items": {"const": 1.0}}),
            true,
        ),
        (
            json!({"type": "array", "uniqueItems": true, "minItems": 2,
                "items": {"type": "integer", "minimum": 0, "maximum": 3}}),
            false,
        ),
        (
            json!({"type": "array", "uniqueItems": true, "maxItems": 2, "items": {"enum": [1, 2, 3]}}),
            true,
        ),
        (
            json!({"type": "array", "uniqueItems": true,
                "items": {"anyOf": [{"type": "null"}, {"const": 1}, {"type": "boolean"}]}}),
            true,
        ),
        (
            json!({"type": "array", "uniqueItems": true,
                "items": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 3.5}}),
            false,
        ),
        (
            json!({"type": "array", "uniqueItems": true, "minItems": 1, "maxItems": 3,
                "items": {"type": ["integer", "boolean"], "minimum": 1, "maximum": 2}}),
            false,
        ),
        (
            json!({"allOf": [{"type": "array", "uniqueItems": true},
                          {"items": {"enum": [true, false, null, 3]}}]}),
            true,
        ),
        (
            json!({"type": "array", "uniqueItems": true,
                "items": {"enum": [0, 1, 2, 3, "a"], "maximum": 2, "not": {"const": "a"}}}),
            true,
        ),
        // at most one item: always unique, any items
        (
            json!({"type": "array", "uniqueItems": true, "maxItems": 1}),
            true,
        ),
        (
            json!({"type": "array", "uniqueItems": false, "items": {"type": "boolean"}}),
            true,
        ),
        // not an array: uniqueItems does not apply
        (
            json!({"type": ["array", "integer"], "uniqueItems": true, "items": {"type": "boolean"},
                "maximum": 2}),
            true,
        ),
    ];
    let mut total = 0;
    for (s, f) in cases {
        total += check(s, f).1;
    }
    eprintln!("{total} arrays checked");
}

#[test]
fn unique_items_refusals_name_the_keyword() {
    let opts = JsonSchemaOptions::default();
    for (s, ptr) in [
        (json!({"type": "array", "uniqueItems": true}), ""),
        (
            json!({"properties": {"t": {"uniqueItems": true, "items": {"type": "string"}}}}),
            "/properties/t",
        ),
        (
            json!({"uniqueItems": true, "items": {"type": "number", "minimum": 0, "maximum": 1}}),
            "",
        ),
        (
            json!({"uniqueItems": true, "items": {"type": "integer", "minimum": 0}}),
            "",
        ),
        (
            json!({"uniqueItems": true, "items": {"enum": [[1], [2]]}}),
            "",
        ),
        (
            json!({"uniqueItems": true, "prefixItems": [{"type": "boolean"}], "items": {"type": "boolean"}}),
            "",
        ),
        (
            json!({"uniqueItems": true, "items": {"type": "boolean"}, "contains": {"const": true}}),
            "",
        ),
    ] {
        match compile_json_schema(&s, &opts) {
            Err(SchemaError::Unsupported {
                keyword, pointer, ..
            }) => {
                assert_eq!(keyword, "uniqueItems", "{s}");
                assert_eq!(pointer, ptr, "{s}");
            }
            other => panic!("{s}: {other:?}"),
        }
    }
    // too many values, too many sets of values
    for s in [
        json!({"uniqueItems": true, "items": {"type": "integer", "minimum": 0, "maximum": 100}}),
        json!({"uniqueItems": true, "items": {"enum": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]}}),
    ] {
        match compile_json_schema(&s, &opts) {
            Err(e @ SchemaError::TooLarge { .. }) => {
                assert!(e.to_string().contains("uniqueItems"), "{e}")
            }
            other => panic!("{s}: {other:?}"),
        }
    }
    // ... which a smaller maxItems or a larger bound makes compilable
    let s = json!({"uniqueItems": true, "maxItems": 2,
                   "items": {"enum": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]}});
    assert!(compile_json_schema(&s, &opts).is_ok());
    let s = json!({"uniqueItems": true, "items": {"type": "integer", "minimum": 0, "maximum": 20}, "maxItems": 2});
    let wide = JsonSchemaOptions {
        max_unique_values: 21,
        ..JsonSchemaOptions::default()
    };
    assert!(compile_json_schema(&s, &opts).is_err());
    assert!(compile_json_schema(&s, &wide).is_ok());
    // more distinct items required than values exist
    let s =
        json!({"type": "array", "uniqueItems": true, "minItems": 3, "items": {"type": "boolean"}});
    let r = compile_json_schema(&s, &opts);
    assert!(matches!(r, Err(SchemaError::Unsatisfiable { .. })), "{r:?}");
    // a malformed value
    let s = json!({"uniqueItems": "yes"});
    assert!(matches!(
        compile_json_schema(&s, &opts),
        Err(SchemaError::Invalid { .. })
    ));
    // not of uniqueItems stays refused
    let s = json!({"not": {"uniqueItems": true}});
    assert!(compile_json_schema(&s, &opts).is_err());
}

#[test]
fn unique_items_in_flexible_whitespace() {
    let opts = JsonSchemaOptions {
        whitespace: zapspec_jsonschema::Whitespace::Flexible { max_ws: 2 },
        ..JsonSchemaOptions::default()
    };
    let s = json!({"type": "array", "uniqueItems": true, "items": {"enum": ["x", 1]}});
    let r = Recognizer::new(&compile_json_schema(&s, &opts).unwrap()).unwrap();
    for ok in [&b"[ \"x\" , 1 ]"[..], b"[1,\"x\"]", b"[]", b"[ ]", b"[1.0]"] {
        assert!(r.recognizes(ok), "{}", String::from_utf8_lossy(ok));
    }
    for bad in [&b"[1, 1]"[..], b"[1, 1.0]", b"[\"x\",\"x\"]", b"[2]"] {
        assert!(!r.recognizes(bad), "{}", String::from_utf8_lossy(bad));
    }
}
