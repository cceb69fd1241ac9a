//! The user options of [`JsonSchemaOptions`] against an independent
//! validator (the `jsonschema` crate, draft 2020-12), by enumeration of
//! small objects: `closed_objects`.

use serde_json::{json, Map, Value};
use zapspec_grammar::Recognizer;
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions};

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .unwrap()
}

/// Every object whose keys are a subsequence of `keys` (in that order),
/// each with a value of `values`.
fn objects(keys: &[&str], values: &[Value]) -> Vec<Value> {
    let mut out: Vec<Map<String, Value>> = vec![Map::new()];
    for k in keys {
        let mut next = Vec::new();
        for o in &out {
            next.push(o.clone());
            for v in values {
                let mut p = o.clone();
                p.insert(k.to_string(), v.clone());
                next.push(p);
            }
        }
        out = next;
    }
    out.into_iter().map(Value::Object).collect()
}

#[test]
fn closed_objects_is_the_schema_with_additional_properties_false_where_members_are_declared() {
    let closed = JsonSchemaOptions {
        closed_objects: true,
        ..JsonSchemaOptions::default()
    };
    let values = [json!(1), json!("s"), json!({}), json!({"q": 1})];
    // (schema, the same schema with `additionalProperties: false` written
    // wherever it is absent on an object that declares `properties` or
    // `patternProperties`; `{}` and `{"type": "object"}` declare no member
    // and stay open)
    let cases = [
        (
            json!({"type": "object", "properties": {"a": {}, "b": {"type": "integer"}}}),
            json!({"type": "object", "properties": {"a": {}, "b": {"type": "integer"}},
                   "additionalProperties": false}),
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "object"}}, "required": ["a"]}),
            json!({"type": "object", "properties": {"a": {"type": "object"}},
                   "required": ["a"], "additionalProperties": false}),
        ),
        (
            json!({"type": "object", "properties": {"a": {"properties": {"p": {}}}}, "additionalProperties": {"type": "integer"}}),
            json!({"type": "object", "properties": {"a": {"properties": {"p": {}}, "additionalProperties": false}},
                   "additionalProperties": {"type": "integer"}}),
        ),
        (
            json!({"type": "object", "properties": {"a": {}}, "patternProperties": {"^z": {"type": "integer"}}}),
            json!({"type": "object", "properties": {"a": {}}, "patternProperties": {"^z": {"type": "integer"}},
                   "additionalProperties": false}),
        ),
        (
            json!({"anyOf": [{"type": "object", "properties": {"b": {}}, "required": ["b"]},
                             {"type": "object", "properties": {"z": {"type": "string"}}}]}),
            json!({"anyOf": [{"type": "object", "properties": {"b": {}}, "required": ["b"],
                              "additionalProperties": false},
                             {"type": "object", "properties": {"z": {"type": "string"}},
                              "additionalProperties": false}]}),
        ),
    ];
    let mut checked = 0;
    for (schema, equivalent) in cases {
        let g = compile_json_schema(&schema, &closed).unwrap();
        let r = Recognizer::new(&g).unwrap();
        let open =
            Recognizer::new(&compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap())
                .unwrap();
        let (spec, eq) = (validator(&schema), validator(&equivalent));
        let (mut narrowed, mut valid) = (0, 0);
        for o in objects(&["a", "b", "z"], &values) {
            let text = o.to_string();
            let got = r.recognizes(text.as_bytes());
            assert_eq!(got, eq.is_valid(&o), "schema {schema}\ninstance {o}");
            // sound: a subset of the valid instances, and of the open grammar
            assert!(!got || spec.is_valid(&o), "schema {schema}\ninstance {o}");
            assert!(!got || open.recognizes(text.as_bytes()));
            narrowed += usize::from(!got && open.recognizes(text.as_bytes()));
            valid += usize::from(got);
            checked += 1;
        }
        assert!(valid > 0, "{schema}");
        assert!(narrowed > 0, "{schema}");
    }
    eprintln!("{checked} objects checked");
    // the default is the specification's: extra keys allowed
    let s = json!({"type": "object"});
    let r =
        Recognizer::new(&compile_json_schema(&s, &JsonSchemaOptions::default()).unwrap()).unwrap();
    assert!(r.recognizes(br#"{"x":1}"#));
    // an object that declares no member stays open when closed (vLLM's
    // `json_object`, XGrammar's strict mode)
    let r = Recognizer::new(&compile_json_schema(&s, &closed).unwrap()).unwrap();
    assert!(r.recognizes(b"{}") && r.recognizes(br#"{"x":1}"#));
    // so `required` and `minProperties` without `properties` are satisfiable
    let s = json!({"type": "object", "required": ["x"], "minProperties": 2});
    let r = Recognizer::new(&compile_json_schema(&s, &closed).unwrap()).unwrap();
    assert!(r.recognizes(br#"{"x":1,"y":2}"#) && !r.recognizes(br#"{"x":1}"#));
    // an undeclared required name has nowhere to go where members are declared
    let s = json!({"type": "object", "properties": {"a": {}}, "required": ["x"]});
    assert!(compile_json_schema(&s, &closed).is_err());
    // `not` keeps the specification's meaning: `not: {properties: {a: false}}`
    // is "an object with key a"; with members declared it is closed to
    // exactly `{"a": …}`
    let s = json!({"not": {"type": "object", "properties": {"a": false}}, "type": "object",
                   "properties": {"a": {}}});
    let r = Recognizer::new(&compile_json_schema(&s, &closed).unwrap()).unwrap();
    assert!(
        r.recognizes(br#"{"a":1}"#) && !r.recognizes(b"{}") && !r.recognizes(br#"{"a":1,"b":2}"#)
    );
}

/// serde_json output with fixed separators (llguidance's
/// `item_separator`/`key_separator`, Python's `json.dumps(separators=…)`):
/// a serde_json [`Formatter`](serde_json::ser::Formatter) independent of the
/// compiler.
struct Seps<'s>(&'s [u8], &'s [u8]);

impl serde_json::ser::Formatter for Seps<'_> {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(self.0)
        }
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(self.0)
        }
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(self.1)
    }
}

fn dump(v: &Value, item: &str, key: &str) -> String {
    use serde::Serialize;
    let mut out = Vec::new();
    let mut ser =
        serde_json::Serializer::with_formatter(&mut out, Seps(item.as_bytes(), key.as_bytes()));
    v.serialize(&mut ser).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn separators_write_exactly_the_formatter_output() {
    use zapspec_jsonschema::{SchemaError, Whitespace};
    let schema = json!({
        "type": "object",
        "properties": {
            "a": {"type": "array", "items": {"type": "integer"}},
            "b": {"type": "object", "properties": {"c": {"type": "boolean"}}},
            "e": {"enum": [{"x": [1, 2]}, "s"]},
            "u": {"type": "array", "uniqueItems": true, "items": {"enum": ["p", "q"]}}
        },
        "required": ["a"]
    });
    let instances = [
        json!({"a": [1, 2, 3], "b": {"c": true, "zz": null}, "e": {"x": [1, 2]}}),
        json!({"a": []}),
        json!({"a": [5], "e": "s", "u": ["q", "p"]}),
        json!({"a": [1], "q": [1, {"r": 2, "s": [true, {}]}], "w": ", :"}),
    ];
    let oracle = validator(&schema);
    for (item, key) in [(", ", ": "), (",", ":"), (",\n", ":\t"), (" , ", " :  ")] {
        let opts = JsonSchemaOptions {
            whitespace: Whitespace::Separators {
                item_separator: item.into(),
                key_separator: key.into(),
            },
            ..JsonSchemaOptions::default()
        };
        let r = Recognizer::new(&compile_json_schema(&schema, &opts).unwrap()).unwrap();
        for v in &instances {
            assert!(oracle.is_valid(v), "{v}");
            let text = dump(v, item, key);
            assert!(r.recognizes(text.as_bytes()), "{item:?} {key:?}: {text}");
            // other separators are not accepted
            for (i2, k2) in [(",", ":"), (", ", ": "), (",  ", ":  ")] {
                if (i2, k2) != (item, key) {
                    let other = dump(v, i2, k2);
                    if other != text {
                        assert!(!r.recognizes(other.as_bytes()), "{item:?} {key:?}: {other}");
                    }
                }
            }
        }
        // a key repeated or an invalid value stays rejected
        assert!(!r.recognizes(dump(&json!({"a": [1.5]}), item, key).as_bytes()));
        assert!(!r.recognizes(dump(&json!({"a": [], "u": ["p", "p"]}), item, key).as_bytes()));
    }
    // `(",", ":")` is the compact grammar, i.e. `serde_json::to_string`
    let sep = JsonSchemaOptions {
        whitespace: Whitespace::Separators {
            item_separator: ",".into(),
            key_separator: ":".into(),
        },
        ..JsonSchemaOptions::default()
    };
    assert_eq!(
        compile_json_schema(&schema, &sep).unwrap().to_string(),
        compile_json_schema(&schema, &JsonSchemaOptions::default())
            .unwrap()
            .to_string()
    );
    for (item, key) in [
        (";", ":"),
        (",", ": :"),
        (", x", ":"),
        ("", ":"),
        (",", "\u{a0}:"),
    ] {
        let opts = JsonSchemaOptions {
            whitespace: Whitespace::Separators {
                item_separator: item.into(),
                key_separator: key.into(),
            },
            ..JsonSchemaOptions::default()
        };
        assert!(
            matches!(
                compile_json_schema(&schema, &opts),
                Err(SchemaError::Invalid { .. })
            ),
            "{item:?} {key:?}"
        );
    }
}

/// Every ordering of every subset of `keys`, each key with a value of
/// `values` (as objects; `preserve_order` keeps the written order).
fn permuted_objects(keys: &[&str], values: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    // sequences of distinct keys, built one key at a time
    let mut seqs: Vec<Vec<(String, Value)>> = vec![vec![]];
    while let Some(seq) = seqs.pop() {
        out.push(Value::Object(seq.iter().cloned().collect::<Map<_, _>>()));
        for k in keys {
            if seq.iter().any(|(n, _)| n == k) {
                continue;
            }
            for v in values {
                let mut s = seq.clone();
                s.push((k.to_string(), v.clone()));
                seqs.push(s);
            }
        }
    }
    out
}

#[test]
fn any_property_order_is_exact_against_the_validator() {
    use zapspec_jsonschema::{compile_json_schema_report, PropertyOrder, Whitespace};
    let any = JsonSchemaOptions {
        property_order: PropertyOrder::Any,
        ..JsonSchemaOptions::default()
    };
    let cases = [
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {}, "c": {"type": "string"}},
               "required": ["a", "c"], "additionalProperties": false}),
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {}},
               "required": ["b"]}),
        json!({"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
               "minProperties": 2, "maxProperties": 3, "additionalProperties": {"type": "string"}}),
        json!({"type": "object", "properties": {"a": {}, "b": {"type": "integer"}},
               "required": ["z"], "patternProperties": {"^z": {"type": "string"}}}),
        json!({"type": "object", "properties": {"c": {"type": "string"}, "a": {}},
               "maxProperties": 1}),
    ];
    let mut checked = 0;
    for schema in &cases {
        let oracle = validator(schema);
        let g = compile_json_schema(schema, &any).unwrap_or_else(|e| panic!("{schema}: {e}"));
        let r = Recognizer::new(&g).unwrap();
        let (mut valid, mut n) = (0, 0);
        for o in permuted_objects(&["a", "b", "c", "z"], &[json!(1), json!("s")]) {
            let want = oracle.is_valid(&o);
            assert_eq!(
                r.recognizes(o.to_string().as_bytes()),
                want,
                "schema {schema}\ninstance {o}"
            );
            valid += usize::from(want);
            n += 1;
        }
        assert!(valid > 0 && valid < n, "{schema}");
        checked += n;
    }
    eprintln!("{checked} objects checked");
    // a key twice is not accepted (a validator reads such text with one value)
    let r = Recognizer::new(&compile_json_schema(&cases[0], &any).unwrap()).unwrap();
    assert!(r.recognizes(br#"{"c":"x","a":1}"#));
    assert!(!r.recognizes(br#"{"c":"x","a":1,"a":2}"#));
    // flexible whitespace and separators apply as in schema order
    let flex = JsonSchemaOptions {
        whitespace: Whitespace::Flexible { max_ws: 1 },
        ..any.clone()
    };
    let r = Recognizer::new(&compile_json_schema(&cases[0], &flex).unwrap()).unwrap();
    assert!(r.recognizes(b"{ \"c\" : \"x\" , \"a\" : 1 }"));
    let seps = JsonSchemaOptions {
        whitespace: Whitespace::Separators {
            item_separator: ", ".into(),
            key_separator: ": ".into(),
        },
        ..any.clone()
    };
    let r = Recognizer::new(&compile_json_schema(&cases[0], &seps).unwrap()).unwrap();
    assert!(r.recognizes(br#"{"c": "x", "b": [1], "a": 1}"#));
    // schema order by default
    let r =
        Recognizer::new(&compile_json_schema(&cases[0], &JsonSchemaOptions::default()).unwrap())
            .unwrap();
    assert!(r.recognizes(br#"{"a":1,"c":"x"}"#) && !r.recognizes(br#"{"c":"x","a":1}"#));
    // more declared properties than the bound: schema order, reported
    let small = JsonSchemaOptions {
        max_any_order_properties: 2,
        ..any.clone()
    };
    let (g, report) = compile_json_schema_report(&cases[0], &small).unwrap();
    let r = Recognizer::new(&g).unwrap();
    assert!(r.recognizes(br#"{"a":1,"c":"x"}"#) && !r.recognizes(br#"{"c":"x","a":1}"#));
    assert_eq!(report.narrowed.len(), 1, "{report:?}");
    assert!(report.narrowed[0].1.contains("PropertyOrder::Any"));
}
