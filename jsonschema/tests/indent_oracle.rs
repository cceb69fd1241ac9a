//! [`Whitespace::Indent`] against two independent references: the layout
//! of `serde_json`'s `PrettyFormatter` (which writes what Python's
//! `json.dumps(indent=…, separators=(",", ": "))` writes) for valid
//! instances, and for strings sampled from the grammar a re-layout written
//! here from the JSON tokens alone (the sample must be its own re-layout),
//! with the `jsonschema` crate judging validity.

mod sampler;

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;
use serde_json::{json, Value};
use zapspec_grammar::{Limit, Recognizer};
use zapspec_jsonschema::{
    canonical_instances, compile_json_schema, compile_json_schema_report, JsonSchemaOptions,
    PropertyOrder, SchemaError, Whitespace,
};

use sampler::Sampler;

fn indent_opts(indent: &str, item: &str, key: &str) -> JsonSchemaOptions {
    JsonSchemaOptions {
        whitespace: Whitespace::Indent {
            indent: indent.into(),
            item_separator: item.into(),
            key_separator: key.into(),
        },
        ..JsonSchemaOptions::default()
    }
}

/// `v` as `serde_json`'s pretty printer writes it with `indent`.
fn pretty(v: &Value, indent: &str) -> String {
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    v.serialize(&mut ser).unwrap();
    String::from_utf8(out).unwrap()
}

/// The JSON text `s` laid out as `json.dumps(indent=…, separators=(item,
/// key))` does, its scalar tokens kept as written (so that `1.0` and
/// `"\u00e9"` survive); `None` when `s` is no JSON text.
fn relayout(s: &str, indent: &str, item: &str, key: &str) -> Option<String> {
    #[derive(Debug, PartialEq)]
    enum Tok {
        Open(u8),
        Close(u8),
        Comma,
        Colon,
        Scalar(String),
    }
    let b = s.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            c @ (b'[' | b'{') => {
                toks.push(Tok::Open(c));
                i += 1;
            }
            c @ (b']' | b'}') => {
                toks.push(Tok::Close(c));
                i += 1;
            }
            b',' => {
                toks.push(Tok::Comma);
                i += 1;
            }
            b':' => {
                toks.push(Tok::Colon);
                i += 1;
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                toks.push(Tok::Scalar(s.get(start..i)?.to_string()));
            }
            _ => {
                let start = i;
                while i < b.len() && !b" \t\n\r[]{},:\"".contains(&b[i]) {
                    i += 1;
                }
                toks.push(Tok::Scalar(s[start..i].to_string()));
            }
        }
    }
    let mut out = String::new();
    let mut depth = 0usize;
    let nl = |d: usize| format!("\n{}", indent.repeat(d));
    for (j, t) in toks.iter().enumerate() {
        match t {
            Tok::Open(c) => {
                out.push(*c as char);
                depth += 1;
                if !matches!(toks.get(j + 1), Some(Tok::Close(_))) {
                    out.push_str(&nl(depth));
                }
            }
            Tok::Close(c) => {
                depth = depth.checked_sub(1)?;
                if !matches!(toks.get(j.checked_sub(1)?), Some(Tok::Open(_))) {
                    out.push_str(&nl(depth));
                }
                out.push(*c as char);
            }
            Tok::Comma => {
                out.push_str(item);
                out.push_str(&nl(depth));
            }
            Tok::Colon => out.push_str(key),
            Tok::Scalar(x) => out.push_str(x),
        }
    }
    Some(out)
}

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .unwrap()
}

fn schemas() -> Vec<Value> {
    vec![
        json!({"type": "object", "properties": {
            "a": {"type": "array", "items": {"type": "integer"}},
            "b": {"type": "object", "properties": {"c": {"type": "string"}}},
            "t": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}],
                  "items": false},
        }, "required": ["a"]}),
        // recursive through $ref
        json!({"$defs": {"node": {"type": "object", "properties": {
            "v": {"type": "integer"},
            "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2},
        }, "required": ["v"], "additionalProperties": false}},
         "$ref": "#/$defs/node"}),
        // free values, additional properties
        json!({"type": "object", "properties": {"x": {}}, "additionalProperties": {"type": "array"}}),
        json!({}),
        // enum and const containers, unique items, contains
        json!({"type": "object", "properties": {
            "e": {"enum": [{"k": [1, {"z": null}]}, [], {}, "s"]},
            "u": {"type": "array", "items": {"enum": [1, 2, 3]}, "uniqueItems": true},
            "c": {"type": "array", "contains": {"const": 5}},
        }}),
    ]
}

/// Strings sampled from the grammar are valid JSON, valid for the schema,
/// and laid out exactly as `json.dumps` lays out their tokens.
#[test]
fn sampled_strings_are_valid_and_laid_out_by_depth() {
    let layouts = [
        ("  ", ",", ": "),
        ("    ", ",", ": "),
        ("\t", ", ", ":"),
        ("", ",", ": "),
    ];
    let mut rng = StdRng::seed_from_u64(7);
    for schema in schemas() {
        let v = validator(&schema);
        for (indent, item, key) in layouts {
            let opts = indent_opts(indent, item, key);
            let g = compile_json_schema(&schema, &opts).unwrap();
            let mut smp = Sampler::new(&g);
            smp.max_depth = 40;
            smp.stop = 0.2;
            let mut nested = 0;
            for _ in 0..150 {
                let Some(bytes) = smp.sample(&mut rng) else {
                    continue;
                };
                let s = String::from_utf8(bytes).unwrap();
                let parsed: Value = match serde_json::from_str(&s) {
                    Ok(v) => v,
                    // a free number's exponent past f64 (`1E400`): JSON,
                    // but beyond serde_json's numbers
                    Err(e) if e.to_string().contains("number out of range") => continue,
                    Err(e) => panic!("{schema}: sample {s:?} is no JSON: {e}"),
                };
                assert!(v.is_valid(&parsed), "{schema}: sample {s:?} is invalid");
                assert_eq!(
                    relayout(&s, indent, item, key).as_deref(),
                    Some(s.as_str()),
                    "{schema}: sample not laid out as json.dumps"
                );
                nested += usize::from(s.contains(&format!("\n{indent}{indent}")));
            }
            if !indent.is_empty() && schema != json!({}) {
                assert!(nested > 0, "{schema}: no sample nested two levels");
            }
        }
    }
}

/// Valid instances as `serde_json`'s pretty printer writes them (keys in
/// the grammar's order) are accepted; the same values on one line, or
/// with another indentation, are not.
#[test]
fn pretty_printed_instances_are_accepted_and_other_layouts_refused() {
    let cases = [
        (
            0usize,
            vec![
                json!({"a": []}),
                json!({"a": [1, 2, 3], "b": {"c": "x"}, "t": ["s", true]}),
                json!({"a": [-1], "b": {}, "zz": [[], {"q": [1, {"r": null}]}]}),
            ],
        ),
        (
            1,
            vec![
                json!({"v": 1}),
                json!({"v": 1, "kids": []}),
                json!({"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}, {"v": 4, "kids": []}]}]}),
            ],
        ),
        (
            3,
            vec![
                json!([1, [2, [3, {"a": {"b": [true, null, "s"]}}]]]),
                json!({}),
                json!([]),
                json!("x"),
            ],
        ),
        (
            4,
            vec![
                json!({"e": {"k": [1, {"z": null}]}, "u": [3, 1], "c": [0, 5]}),
                json!({"e": [], "u": [], "c": [5]}),
                json!({"e": {}}),
            ],
        ),
    ];
    let all = schemas();
    for (i, instances) in cases {
        let schema = &all[i];
        for indent in ["  ", "    ", "\t"] {
            let opts = indent_opts(indent, ",", ": ");
            let rec = Recognizer::new(&compile_json_schema(schema, &opts).unwrap()).unwrap();
            for inst in &instances {
                assert!(validator(schema).is_valid(inst), "{inst}");
                let c = &canonical_instances(schema, inst, &opts).unwrap()[0];
                let text = pretty(c, indent);
                assert!(rec.recognizes(text.as_bytes()), "{schema}: {text:?}");
                let compact = c.to_string();
                if compact != text {
                    assert!(!rec.recognizes(compact.as_bytes()), "{schema}: {compact:?}");
                }
                let other = pretty(c, if indent == "  " { "   " } else { "  " });
                if other != text {
                    assert!(!rec.recognizes(other.as_bytes()), "{schema}: {other:?}");
                }
            }
        }
    }
}

/// Separators as `json.dumps(indent=2, separators=(", ", ": "))` writes
/// them: the item separator before the line break.
#[test]
fn separators_with_indent_are_json_dumps_layout() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "array"}, "b": {}}});
    let opts = indent_opts("  ", ", ", ": ");
    let rec = Recognizer::new(&compile_json_schema(&schema, &opts).unwrap()).unwrap();
    // Python: json.dumps({"a": [1, 2], "b": {"c": 3}}, indent=2, separators=(", ", ": "))
    let text = "{\n  \"a\": [\n    1, \n    2\n  ], \n  \"b\": {\n    \"c\": 3\n  }\n}";
    assert!(rec.recognizes(text.as_bytes()));
    assert!(!rec.recognizes(text.replace(", \n", ",\n").as_bytes()));
    // any order: every order of the members, each laid out
    let any = JsonSchemaOptions {
        property_order: PropertyOrder::Any,
        ..indent_opts("  ", ",", ": ")
    };
    let schema = json!({"type": "object", "properties": {"first": {"type": "string"},
        "second": {"type": "integer"}}, "required": ["first", "second"],
        "additionalProperties": false});
    let rec = Recognizer::new(&compile_json_schema(&schema, &any).unwrap()).unwrap();
    assert!(rec.recognizes(b"{\n  \"first\": \"x\",\n  \"second\": 1\n}"));
    assert!(rec.recognizes(b"{\n  \"second\": 1,\n  \"first\": \"x\"\n}"));
    assert!(!rec.recognizes(br#"{"first":"x","second":1}"#));
}

/// Containers deeper than `max_indent_depth` are not written (recorded as
/// a narrowing); a schema whose every value is deeper is refused with a
/// typed depth error; malformed layouts are refused.
#[test]
fn depth_bound_and_bad_layouts() {
    let opts = JsonSchemaOptions {
        max_indent_depth: 3,
        ..indent_opts("  ", ",", ": ")
    };
    let (g, report) = compile_json_schema_report(&json!({}), &opts).unwrap();
    assert!(report
        .narrowed
        .iter()
        .any(|(_, m)| m.contains("max_indent_depth")));
    let rec = Recognizer::new(&g).unwrap();
    let ok = json!([[[1, "x"]]]);
    assert!(rec.recognizes(pretty(&ok, "  ").as_bytes()));
    for deep in [
        json!([[[[1]]]]),
        json!([[[[]]]]),
        json!({"a": {"b": {"c": {}}}}),
    ] {
        assert!(!rec.recognizes(pretty(&deep, "  ").as_bytes()), "{deep}");
    }
    // a chain of four required objects: no value within three levels
    let chain = json!({"type": "object", "required": ["a"], "properties": {"a":
        {"type": "object", "required": ["b"], "properties": {"b":
        {"type": "object", "required": ["c"], "properties": {"c":
        {"type": "object", "required": ["d"], "properties": {"d": {"type": "integer"}}}}}}}}});
    let err = compile_json_schema(&chain, &opts).unwrap_err();
    assert!(
        matches!(
            &err,
            SchemaError::LimitExceeded { limit: Limit::Depth, max: 3, pointer, .. }
                if pointer.starts_with("/properties/a/properties/b/properties/c")
        ),
        "{err}"
    );
    // the same chain within the default bound
    assert!(compile_json_schema(&chain, &indent_opts("  ", ",", ": ")).is_ok());
    // a recursive schema that must recurse forever is unsatisfiable
    let endless = json!({"type": "object", "required": ["n"], "properties": {"n": {"$ref": "#"}}});
    assert!(compile_json_schema(&endless, &opts).is_err());
    for (indent, item, key) in [("x", ",", ": "), ("  ", ";", ": "), ("  ", ",", "=")] {
        let err = compile_json_schema(&json!({}), &indent_opts(indent, item, key)).unwrap_err();
        assert!(matches!(err, SchemaError::Invalid { .. }), "{err}");
    }
    let long = " ".repeat(257);
    assert!(compile_json_schema(&json!({}), &indent_opts(&long, ",", ": ")).is_err());
}
