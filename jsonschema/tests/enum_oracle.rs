//! Object and array `enum` / `const` members beside object and array
//! keywords, against an independent validator: for random members and
//! random sibling keywords (`properties` with `$ref`s, `required`,
//! `additionalProperties`, `minProperties` / `maxProperties`, `items`,
//! `prefixItems`, `minItems` / `maxItems`, `contains`), the compiled
//! grammar accepts a member's text exactly when the `jsonschema` crate
//! (draft 2020-12) says the member is valid, and accepts no value that is
//! not a member. And `not: {enum: [strings]}` beside string keywords.

mod short_strings;

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use short_strings::{agrees_on_short_strings, short_strings};
use zapspec_grammar::Recognizer;
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, SchemaError};

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i64..3).prop_map(Value::from),
        Just(json!("x")),
        Just(json!("yy")),
        Just(json!(true)),
        Just(json!(null)),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(vec!["a", "b", "c"]), inner), 0..4)
                .prop_map(|kv| {
                    let mut m = Map::new();
                    for (k, v) in kv {
                        m.insert(k.to_string(), v);
                    }
                    Value::Object(m)
                }),
        ]
    })
}

fn subschema() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!({"type": "integer"}),
        json!({"type": "integer", "minimum": 1}),
        json!({"type": "string", "maxLength": 1}),
        json!({"$ref": "#/$defs/small"}),
        json!({"type": ["boolean", "null"]}),
        json!({"type": "array", "maxItems": 1}),
        json!({"type": "object", "required": ["a"]}),
        json!({}),
    ])
}

/// Random object keywords, array keywords, or both.
fn siblings() -> impl Strategy<Value = Map<String, Value>> {
    let object = (
        prop::collection::vec(
            (prop::sample::select(vec!["a", "b", "c"]), subschema()),
            0..3,
        ),
        prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 0..2),
        prop::option::of(prop_oneof![
            Just(json!(false)),
            Just(json!(true)),
            subschema()
        ]),
        prop::option::of(0u64..3),
        prop::option::of(0u64..3),
    )
        .prop_map(|(props, req, addl, minp, maxp)| {
            let mut m = Map::new();
            if !props.is_empty() {
                let mut p = Map::new();
                for (k, s) in props {
                    p.insert(k.to_string(), s);
                }
                m.insert("properties".into(), Value::Object(p));
            }
            if !req.is_empty() {
                let mut r: Vec<&str> = req;
                r.dedup();
                m.insert("required".into(), json!(r));
            }
            if let Some(a) = addl {
                m.insert("additionalProperties".into(), a);
            }
            if let Some(n) = minp {
                m.insert("minProperties".into(), json!(n));
            }
            if let Some(n) = maxp {
                m.insert("maxProperties".into(), json!(n));
            }
            m
        });
    let array = (
        prop::option::of(subschema()),
        prop::collection::vec(subschema(), 0..2),
        prop::option::of(0u64..3),
        prop::option::of(0u64..4),
        prop::option::of(subschema()),
    )
        .prop_map(|(items, prefix, mini, maxi, contains)| {
            let mut m = Map::new();
            if let Some(i) = items {
                m.insert("items".into(), i);
            }
            if !prefix.is_empty() {
                m.insert("prefixItems".into(), Value::Array(prefix));
            }
            if let Some(n) = mini {
                m.insert("minItems".into(), json!(n));
            }
            if let Some(n) = maxi {
                m.insert("maxItems".into(), json!(n));
            }
            if let Some(c) = contains {
                m.insert("contains".into(), c);
            }
            m
        });
    (object, array, 0u8..3).prop_map(|(o, a, which)| match which {
        0 => o,
        1 => a,
        _ => {
            let mut m = o;
            m.extend(a);
            m
        }
    })
}

fn schema_of(members: &[Value], sib: &Map<String, Value>, as_const: bool) -> Value {
    let mut m = sib.clone();
    if as_const {
        m.insert("const".into(), members[0].clone());
    } else {
        m.insert("enum".into(), Value::Array(members.to_vec()));
    }
    m.insert(
        "$defs".into(),
        json!({"small": {"type": "integer", "maximum": 1}}),
    );
    Value::Object(m)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn container_members_match_the_validator(
        members in prop::collection::vec(value(), 1..6),
        sib in siblings(),
        as_const in any::<bool>(),
        others in prop::collection::vec(value(), 0..4),
    ) {
        let schema = schema_of(&members, &sib, as_const);
        let oracle = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .unwrap();
        let members: Vec<Value> = if as_const { members[..1].to_vec() } else { members };
        match compile_json_schema(&schema, &JsonSchemaOptions::default()) {
            Ok(g) => {
                let r = Recognizer::new(&g).unwrap();
                for m in &members {
                    prop_assert_eq!(
                        r.recognizes(m.to_string().as_bytes()),
                        oracle.is_valid(m),
                        "schema {}\nmember {}", schema, m
                    );
                }
                for o in &others {
                    if !members.contains(o) {
                        prop_assert!(!r.recognizes(o.to_string().as_bytes()), "schema {}\nnon-member {}", schema, o);
                    }
                }
            }
            // no member valid: the compiler says so, and the validator agrees
            Err(SchemaError::Unsatisfiable { .. }) => {
                for m in &members {
                    prop_assert!(!oracle.is_valid(m), "schema {}\nmember {} is valid", schema, m);
                }
            }
            Err(e) => prop_assert!(false, "schema {}: {}", schema, e),
        }
    }
}

#[test]
fn members_in_a_different_key_order_are_recognised() {
    // the grammar of the siblings writes `b` before `a`; the member's own
    // order is `a`, `b`, and it is a member either way
    let schema = json!({
        "properties": {"b": {"type": "integer"}, "a": {"type": "string"}},
        "required": ["a", "b"],
        "enum": [{"a": "x", "b": 1}, {"a": 1, "b": 1}]
    });
    let g = compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
    let r = Recognizer::new(&g).unwrap();
    assert!(r.recognizes(br#"{"a":"x","b":1}"#));
    assert!(!r.recognizes(br#"{"a":1,"b":1}"#));
}

#[test]
fn a_recursive_enum_check_is_refused_not_looped() {
    // the siblings of the enum reach the same enum through `$ref`
    let schema = json!({
        "$defs": {"node": {
            "enum": [{"next": {"next": null}}, {"next": null}],
            "properties": {"next": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/node"}]}}
        }},
        "$ref": "#/$defs/node"
    });
    match compile_json_schema(&schema, &JsonSchemaOptions::default()) {
        Ok(g) => {
            // nesting within the bound: the members are exactly the valid ones
            let r = Recognizer::new(&g).unwrap();
            let oracle = jsonschema::validator_for(&schema).unwrap();
            for m in [json!({"next": {"next": null}}), json!({"next": null})] {
                assert_eq!(
                    r.recognizes(m.to_string().as_bytes()),
                    oracle.is_valid(&m),
                    "{m}"
                );
            }
        }
        Err(e) => assert!(
            matches!(&e, SchemaError::Unsupported { keyword, .. } if keyword == "enum"),
            "{e}"
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// `not: {enum: [strings]}` beside `pattern` / `minLength` /
    /// `maxLength`: the product of the pattern, the length counter and the
    /// excluded strings' trie, against the validator on every short string.
    #[test]
    fn excluded_strings_beside_string_keywords_match_the_validator(
        names in prop::collection::vec(prop::sample::select(short_strings()), 1..5),
        pattern in prop::option::of(prop::sample::select(vec!["^a", "b$", "^[ab]*$", "1", "^(a|1b)+$"])),
        min in prop::option::of(0u64..3),
        max in prop::option::of(0u64..4),
    ) {
        let mut m = Map::new();
        m.insert("type".into(), json!("string"));
        m.insert("not".into(), json!({"enum": names}));
        if let Some(p) = pattern {
            m.insert("pattern".into(), json!(p));
        }
        if let Some(n) = min {
            m.insert("minLength".into(), json!(n));
        }
        if let Some(n) = max {
            m.insert("maxLength".into(), json!(n));
        }
        let schema = Value::Object(m);
        let oracle = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .unwrap();
        if let Err(e) = agrees_on_short_strings(&schema, &oracle) {
            return Err(TestCaseError::fail(e));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A long string `enum` (grouped into regex terminals of sorted member
    /// runs) beside numbers and string keywords, against the validator: on
    /// every member, on every short string and on random other strings
    /// (quotes, backslashes, controls and non-ASCII characters included).
    #[test]
    fn a_long_string_enum_matches_the_validator(
        members in prop::collection::vec("[ab\"\\\\\u{e9}\n\u{1F600}1]{0,5}", 60..400),
        numbers in prop::collection::vec(0i64..5, 0..3),
        probes in prop::collection::vec("[ab\"\\\\\u{e9}\n\u{1F600}1]{0,6}", 0..80),
        min in prop::option::of(0u64..3),
    ) {
        let mut all: Vec<Value> = members.iter().map(|m| json!(m)).collect();
        all.extend(numbers.iter().map(|&n| json!(n)));
        let mut m = Map::new();
        m.insert("enum".into(), Value::Array(all));
        if let Some(n) = min {
            m.insert("minLength".into(), json!(n));
        }
        let schema = Value::Object(m);
        let oracle = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .unwrap();
        let g = compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
        let r = Recognizer::new(&g).unwrap();
        let strings = members.iter().chain(&probes).cloned().chain(short_strings());
        for s in strings {
            let v = Value::String(s);
            prop_assert_eq!(r.recognizes(v.to_string().as_bytes()), oracle.is_valid(&v), "{}", v);
        }
        for &n in &numbers {
            prop_assert!(r.recognizes(n.to_string().as_bytes()));
        }
    }
}
