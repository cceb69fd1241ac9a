//! Hostile JSON Schemas: every one ends quickly in a typed error that
//! names the limit and the place, or in success — never an out-of-memory
//! kill, a stack overflow or minutes of work.
//!
//! The time bound asserted is generous ([`MAX_SECS`]; each input takes
//! well under a second in the test profile on an idle machine) because CI
//! machines are noisy. Each test prints its time and the process's peak
//! resident memory (`VmHWM`); run one alone for a per-input figure:
//! `cargo test -p zapspec-jsonschema --test hostile -- --exact NAME --nocapture`.

use serde_json::{json, Value};
use std::time::Duration;
use zapspec_grammar::{simplify, Limit, Recognizer, SimplifyConfig};
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, OneOfMode, SchemaError};
use zapspec_testkit::hostile::timed;

/// Schema → grammar → simplified grammar.
fn schema_pipeline(schema: &Value, opts: &JsonSchemaOptions) -> Result<(), String> {
    let g = compile_json_schema(schema, opts).map_err(|e| format!("schema: {e}"))?;
    let g = simplify(&g, &SimplifyConfig::default())
        .map_err(|e| format!("simplify: {e}"))?
        .grammar;
    Recognizer::new(&g).map_err(|e| format!("automata: {e}"))?;
    Ok(())
}
#[test]
fn nested_counted_repetition_pattern() {
    // groups: ECMA-262 refuses `a{1000}{1000}` (nothing to repeat)
    let s = json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "^(?:(?:a{1000}){1000}){1000}$"}}});
    let r = timed("pattern ((a{1000}){1000}){1000}", || {
        schema_pipeline(&s, &JsonSchemaOptions::default())
    });
    let e = r.unwrap_err();
    assert!(e.contains("nfa_bytes") || e.contains("limit"), "{e}");
    assert!(e.contains("rule `"), "no place in {e}");
    let s = json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "^a{1000}{1000}$"}}});
    let e = schema_pipeline(&s, &JsonSchemaOptions::default()).unwrap_err();
    assert!(
        e.contains("nothing to repeat") && e.contains("/properties/p"),
        "{e}"
    );
}

/// The limits must not refuse what real schemas contain: MaskBench's
/// `Github_trivial---o48164` (a URL string, `maxLength: 1024` beside a
/// `pattern`) is a 1,017-fold counted repetition of the JSON
/// string-character class, the largest NFA of the shared set (32 MiB of
/// compile-time heap). It compiles under the default limits, and the
/// recognizer accepts an instance at the length bound and rejects one past it.
#[test]
fn long_bounded_pattern_string_compiles_under_default_limits() {
    let s = json!({"type": "string", "maxLength": 1024, "pattern": "^https?://.+$"});
    let g = timed("maxLength 1024 + pattern", || {
        let g = compile_json_schema(&s, &JsonSchemaOptions::default()).unwrap();
        simplify(&g, &SimplifyConfig::default()).unwrap().grammar
    });
    let rec = Recognizer::new(&g).expect("default limits refuse a real schema");
    let at = |n: usize| format!("\"https://{}\"", "a".repeat(n - "https://".len()));
    assert!(rec.recognizes(at(1024).as_bytes()));
    assert!(!rec.recognizes(at(1025).as_bytes()));
    assert!(!rec.recognizes(b"\"ftp://x\""));
}

/// `{"$defs": {"d0": {..."x": {"$ref": "#/$defs/d1"}...}, ...}}`.
fn ref_chain(n: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..n {
        defs.insert(
            format!("d{i}"),
            json!({"type": "object", "properties": {"x": {"$ref": format!("#/$defs/d{}", i + 1)}}, "required": ["x"]}),
        );
    }
    defs.insert(format!("d{n}"), json!({"type": "integer"}));
    json!({"$defs": defs, "$ref": "#/$defs/d0"})
}

#[test]
fn schema_ref_chain_10000() {
    let s = ref_chain(10_000);
    let r = timed("$ref chain 10,000 through required properties", || {
        schema_pipeline(&s, &JsonSchemaOptions::default())
    });
    // Success, or a limit naming where.
    if let Err(e) = r {
        assert!(
            e.contains("limit depth") && e.contains("/properties/x/"),
            "{e}"
        );
    }
}

#[test]
fn schema_ref_chain_of_bare_refs() {
    // `d0 → d1 → … → d10000`, each nothing but a `$ref`.
    let mut defs = serde_json::Map::new();
    for i in 0..10_000 {
        defs.insert(
            format!("d{i}"),
            json!({"$ref": format!("#/$defs/d{}", i + 1)}),
        );
    }
    defs.insert("d10000".into(), json!({"type": "integer"}));
    let s = json!({"$defs": defs, "type": "array", "items": {"$ref": "#/$defs/d0"}});
    let r = timed("$ref chain 10,000 of bare refs", || {
        compile_json_schema(&s, &JsonSchemaOptions::default())
    });
    if let Err(e) = r {
        assert!(
            e.pointer().contains("$defs") || e.pointer().contains("items"),
            "{e}"
        );
    }
}

/// An object schema nested `n` levels deep through `properties`.
fn nested(n: usize) -> Value {
    // Built by moving maps (`json!` would re-serialise `v` at each level).
    let mut v = json!({"type": "integer"});
    for _ in 0..n {
        let mut props = serde_json::Map::new();
        props.insert("a".into(), v);
        let mut m = serde_json::Map::new();
        m.insert("type".into(), json!("object"));
        m.insert("properties".into(), Value::Object(props));
        m.insert("required".into(), json!(["a"]));
        v = Value::Object(m);
    }
    v
}

#[test]
fn schema_nested_2000() {
    let s = nested(2000);
    let r = timed("schema nested 2,000 levels", || {
        compile_json_schema(&s, &JsonSchemaOptions::default())
    });
    match r {
        Ok(_) => {}
        Err(SchemaError::LimitExceeded { limit, pointer, .. }) => {
            assert_eq!(limit, Limit::Depth);
            assert!(
                pointer.starts_with("/properties/a/properties/a"),
                "{pointer}"
            );
        }
        Err(e) => panic!("{e:?}"),
    }
    // Deep, but within the default depths: compiles.
    let s = nested(500);
    timed("schema nested 500 levels", || {
        schema_pipeline(&s, &JsonSchemaOptions::default()).unwrap()
    });
    // Just under the JSON depth limit (2048): no stack overflow.
    let mut v = json!({"type": "integer"});
    for _ in 0..1020 {
        let mut m = serde_json::Map::new();
        m.insert("items".into(), v);
        v = Value::Object(m);
    }
    let opts = JsonSchemaOptions {
        max_depth: 1100,
        ..Default::default()
    };
    timed("items nested 1,020 levels", || {
        compile_json_schema(&v, &opts).unwrap()
    });
}

#[test]
fn schema_ref_cycles_without_base_case() {
    for s in [
        json!({"$ref": "#"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}),
        json!({"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]}),
        json!({"type": "array", "items": {"$ref": "#"}, "minItems": 1}),
        json!({"anyOf": [{"$ref": "#"}, {"$ref": "#"}]}),
    ] {
        let r = timed(&format!("$ref cycle {s}"), || {
            schema_pipeline(&s, &JsonSchemaOptions::default())
        });
        // Refused (typed) or an empty-language error; never a hang.
        if let Err(e) = r {
            assert!(!e.is_empty());
        }
    }
}

#[test]
fn schema_all_of_50_objects() {
    let members: Vec<Value> = (0..50)
        .map(|i| {
            let props: serde_json::Map<String, Value> = (0..20)
                .map(|j| {
                    (
                        format!("p{i}_{j}"),
                        json!({"type": "string", "maxLength": 8}),
                    )
                })
                .collect();
            json!({"type": "object", "properties": props})
        })
        .collect();
    let s = json!({"allOf": members});
    timed("allOf of 50 objects × 20 properties", || {
        schema_pipeline(&s, &JsonSchemaOptions::default()).unwrap()
    });
}

#[test]
fn schema_any_of_1000() {
    let branches: Vec<Value> = (0..1000)
        .map(|i| json!({"type": "object", "properties": {"k": {"const": i}}, "required": ["k"]}))
        .collect();
    let s = json!({"anyOf": branches});
    let r = timed("anyOf of 1,000 branches", || {
        compile_json_schema(&s, &JsonSchemaOptions::default())
    });
    match r {
        Ok(_) => {}
        Err(e @ SchemaError::LimitExceeded { .. }) => {
            let m = e.to_string();
            assert!(m.contains("anyOf") && !m.contains("allOf"), "{m}");
        }
        Err(e) => panic!("{e:?}"),
    }
}

#[test]
fn schema_enum_50000() {
    let values: Vec<Value> = (0..50_000).map(|i| json!(format!("value-{i}"))).collect();
    let s = json!({"enum": values});
    let r = timed("enum of 50,000 strings", || {
        schema_pipeline(&s, &JsonSchemaOptions::default())
    });
    if let Err(e) = r {
        assert!(e.contains("limit"), "{e}");
    }
}

#[test]
fn schema_nested_one_of_8() {
    let mut v = json!({"type": "integer"});
    for i in 0..8 {
        v = json!({"oneOf": [v, {"type": "object", "properties": {format!("k{i}"): {"type": "string"}}, "required": [format!("k{i}")], "additionalProperties": false}]});
    }
    for opts in [
        JsonSchemaOptions::default(),
        JsonSchemaOptions {
            one_of: OneOfMode::RequireDisjoint,
            ..Default::default()
        },
    ] {
        let r = timed("nested oneOf 8 deep", || schema_pipeline(&v, &opts));
        if let Err(e) = r {
            assert!(!e.is_empty());
        }
    }
}

#[test]
fn schema_max_length_100000() {
    let s = json!({"type": "string", "maxLength": 100_000});
    timed("maxLength: 100000", || {
        schema_pipeline(&s, &JsonSchemaOptions::default()).unwrap()
    });
    let s = json!({"type": "string", "minLength": 100_000, "maxLength": 100_000});
    timed("minLength = maxLength = 100000", || {
        schema_pipeline(&s, &JsonSchemaOptions::default()).unwrap()
    });
}

#[test]
fn schema_pattern_exponential_under_length() {
    let s = json!({"type": "string", "pattern": "^(a|b)*a(a|b){20}$", "maxLength": 40});
    let r = timed("exponential pattern with maxLength", || {
        compile_json_schema(&s, &JsonSchemaOptions::default())
    });
    if let Err(e) = r {
        assert_eq!(e.pointer(), "");
        assert!(!e.to_string().contains(" 0:0"), "{e}");
    }
    let s = json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "^(a|b)*a(a|b){25}$"}}});
    let r = timed("exponential pattern", || {
        schema_pipeline(&s, &JsonSchemaOptions::default())
    });
    let e = r.unwrap_err();
    assert!(e.contains("dfa_") && e.contains("x"), "{e}");
}

#[test]
fn schema_invalid_regex_and_counts() {
    for (s, kw) in [
        (json!({"type": "string", "pattern": "(unclosed"}), "pattern"),
        (json!({"type": "string", "pattern": "[z-a]"}), "pattern"),
        (json!({"type": "string", "minLength": -1}), "minLength"),
        (json!({"type": "string", "maxLength": 1.5}), "maxLength"),
        (json!({"type": "array", "maxItems": -3}), "maxItems"),
        (json!({"type": "array", "minItems": 2.5}), "minItems"),
        (
            json!({"type": "object", "minProperties": "3"}),
            "minProperties",
        ),
        (json!({"type": "array", "maxItems": 1e300}), "maxItems"),
    ] {
        let r = timed(&format!("{s}"), || {
            compile_json_schema(&s, &JsonSchemaOptions::default())
        });
        let e = r.expect_err(&s.to_string());
        assert!(e.to_string().contains(kw), "{s}: {e}");
    }
}

#[test]
fn schema_huge_counts_succeed_or_refuse() {
    // A logarithmic-size grammar: succeeds.
    let s = json!({"type": "string", "maxLength": 18446744073709551615u64});
    timed("maxLength u64::MAX", || {
        schema_pipeline(&s, &JsonSchemaOptions::default()).unwrap()
    });
    let s = json!({"type": "array", "minItems": 1_000_000_000u64});
    let e = timed("minItems 1e9", || {
        compile_json_schema(&s, &JsonSchemaOptions::default()).unwrap_err()
    });
    assert!(e.to_string().contains("minItems"), "{e}");
}

#[test]
fn schema_json_that_is_not_utf8() {
    let r = serde_json::from_slice::<Value>(b"{\"type\": \"\xff\"}");
    assert!(r.is_err());
}

#[test]
fn schema_time_budget() {
    // A tiny budget refuses a schema that needs some work.
    let opts = JsonSchemaOptions {
        time_budget: Duration::ZERO,
        ..Default::default()
    };
    let s = ref_chain(200);
    match compile_json_schema(&s, &opts) {
        Err(SchemaError::LimitExceeded { limit, .. }) => assert_eq!(limit, Limit::Time),
        other => panic!("{other:?}"),
    }
}
