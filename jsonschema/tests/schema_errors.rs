//! Refusals keep their type and JSON pointer and carry the wording that
//! XGrammar's tests match; the two readings of an ECMA-262 regex; integer
//! `multipleOf` up to its bound.

use serde_json::{json, Value};
use zapspec_grammar::Recognizer;
use zapspec_jsonschema::{
    compile_json_schema, ecma_regex_to_regex_syntax, ecma_regex_to_regex_syntax_in,
    JsonSchemaOptions, RegexDialect, SchemaError,
};

fn refusal(schema: Value) -> SchemaError {
    compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap_err()
}

#[test]
fn invalid_values_name_keyword_pointer_and_xgrammar_phrase() {
    let cases = [
        (
            json!({"multipleOf": "x"}),
            "multipleOf",
            "",
            "Value must be a number",
        ),
        (
            json!({"minimum": []}),
            "minimum",
            "",
            "Value must be a number",
        ),
        (
            json!({"minItems": "x"}),
            "minItems",
            "",
            "minItems must be an integer",
        ),
        (
            json!({"minItems": 1.5}),
            "minItems",
            "",
            "minItems must be an integer",
        ),
        (
            json!({"maxItems": -1}),
            "maxItems",
            "",
            "maxItems must be a non-negative integer",
        ),
        (
            json!({"properties": {"a": {"maxLength": -2}}}),
            "maxLength",
            "/properties/a",
            "maxLength must be a non-negative integer",
        ),
        (
            json!({"items": "x"}),
            "items",
            "",
            "items must be a boolean or an object",
        ),
        (
            json!({"unevaluatedItems": 3}),
            "unevaluatedItems",
            "",
            "unevaluatedItems must be a boolean or an object",
        ),
        (
            json!({"propertyNames": "x"}),
            "propertyNames",
            "",
            "propertyNames must be an object",
        ),
        (
            json!({"prefixItems": [{}, "x"]}),
            "prefixItems",
            "/prefixItems/1",
            "prefixItems must be an array of objects or booleans",
        ),
        (
            json!({"prefixItems": {}}),
            "prefixItems",
            "",
            "prefixItems must be an array",
        ),
    ];
    for (schema, kw, ptr, phrase) in cases {
        let e = refusal(schema.clone());
        assert!(
            matches!(&e, SchemaError::Invalid { keyword, pointer, .. } if keyword == kw && pointer == ptr),
            "{schema}: {e:?}"
        );
        assert!(e.to_string().contains(phrase), "{schema}: {e}");
    }
}

#[test]
fn contradictions_name_the_bounds() {
    let cases = [
        (json!({"type": "array", "minItems": 5, "maxItems": 3}), "minItems is greater than maxItems: 5 > 3"),
        (json!({"type": "array", "prefixItems": [{}, {}], "minItems": 3, "items": false}),
         "minItems is greater than the number of prefixItems, but additional items are not allowed: 3 > 2"),
        (json!({"type": "array", "prefixItems": [{}, false], "minItems": 2}),
         "minItems 2 needs an item at prefixItems/1, whose schema is false"),
        (json!({"type": "object", "minProperties": 5, "maxProperties": 3}),
         "minProperties is greater than maxProperties: 5 > 3"),
        (json!({"type": "object", "maxProperties": 1, "required": ["a", "b"]}),
         "maxProperties is less than the number of required properties: 1 < 2"),
        (json!({"type": "object", "properties": {"k": {}}, "additionalProperties": false, "minProperties": 2}),
         "minProperties is greater than the number of properties, but additional properties aren't allowed: 2 > 1"),
    ];
    for (schema, phrase) in cases {
        let e = refusal(schema.clone());
        assert!(
            matches!(e, SchemaError::Unsatisfiable { .. }),
            "{schema}: {e:?}"
        );
        assert!(e.to_string().contains(phrase), "{schema}: {e}");
    }
    // satisfiable: the items that exist are checked (Core 2020-12 §10.3.1.1)
    for schema in [
        json!({"type": "array", "prefixItems": [false]}),
        json!({"type": "array", "prefixItems": [{}, {}, {}], "maxItems": 2}),
    ] {
        let g = compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
        assert!(Recognizer::new(&g).unwrap().recognizes(b"[]"), "{schema}");
    }
}

#[test]
fn regex_dialects() {
    let strict = |p: &str| ecma_regex_to_regex_syntax_in(p, RegexDialect::Strict);
    for (p, phrase) in [
        ("a{,3}", "Invalid repetition"),
        ("a{", "Invalid repetition"),
        ("x{1,2", "Invalid repetition"),
        ("{2}", "nothing to repeat"),
        ("[]", "Empty character class is not allowed in regex."),
        ("a[]b", "Empty character class"),
    ] {
        let e = strict(p).unwrap_err();
        assert!(e.contains(phrase), "{p}: {e}");
        // Annex B: literal text, or the class that matches nothing
        assert!(ecma_regex_to_regex_syntax(p).is_ok(), "{p}");
    }
    for p in ["abc)", "(a))", "a(b", "abc((a)", "[(]a)"] {
        for d in [RegexDialect::Strict, RegexDialect::AnnexB] {
            let e = ecma_regex_to_regex_syntax_in(p, d).unwrap_err();
            assert!(
                e.contains("Unmatched ')'") || e.contains("The parenthesis is not closed."),
                "{p}: {e}"
            );
        }
    }
    for p in ["a{2,3}", "(a)+", r"\(", "[)(]", "a}", "[^]", "(?:x){2}"] {
        assert_eq!(strict(p), ecma_regex_to_regex_syntax(p), "{p}");
        assert!(strict(p).is_ok(), "{p}");
    }
    // ECMA-262 readings the rewrite once refused or misread
    let full = |p: &str, s: &str, d: RegexDialect| {
        let t = ecma_regex_to_regex_syntax_in(p, d).unwrap();
        regex_automata::meta::Regex::new(&format!("^(?:{t})$"))
            .unwrap()
            .is_match(s)
    };
    for d in [RegexDialect::Strict, RegexDialect::AnnexB] {
        // a range ending in `-`
        assert!(full("[+--]+", "+,-", d) && !full("[+--]", ".", d));
        assert!(full("[-a-c+--]", "-", d) && full("[-a-c+--]", ",", d));
        // `\u{...}` (the `u` flag's code point escape)
        assert!(full(r"\u{20BB7}x", "\u{20BB7}x", d));
        // inline flags are no ECMA-262 group: refused in XGrammar's
        // dialect, read as Python and Rust read them in `pattern`
        if d == RegexDialect::Strict {
            let e = ecma_regex_to_regex_syntax_in("(?i)abc", d).unwrap_err();
            assert!(e.contains("group modifier"), "{e}");
        } else {
            assert!(full("(?i)abc", "ABC", d));
        }
        // ES2025's modifier groups are ECMA-262
        assert!(full("(?i:ab)c", "ABc", d) && !full("(?i:ab)c", "abC", d));
        // `--` after a range stays refused (not guessed)
        assert!(ecma_regex_to_regex_syntax_in("[a-c--]", d).is_err());
    }
    // XGrammar's dialect: anchors are empty matches wherever they stand
    let strict_full = |p: &str, s: &str| full(p, s, RegexDialect::Strict);
    assert!(
        strict_full(r"^$|^https://x\.com/", "")
            && strict_full(r"^$|^https://x\.com/", "https://x.com/")
    );
    assert!(strict_full("(a|$)", "") && strict_full("(a|$)", "a") && !strict_full("(a|$)", "b"));
    assert!(strict_full("[$^]", "$") && strict_full(r"\^", "^"));
    // XGrammar's C escapes, in its dialect only
    assert!(full(r"\a\e", "\u{7}\u{1b}", RegexDialect::Strict));
    assert!(ecma_regex_to_regex_syntax(r"\a").is_err());
    let e = strict("a+?+").unwrap_err();
    assert!(
        e.contains("Two consecutive repetition modifiers are not allowed."),
        "{e}"
    );
    // JSON Schema `pattern` keeps the Annex B reading
    let g = compile_json_schema(
        &json!({"type": "string", "pattern": "^a{,3}$"}),
        &JsonSchemaOptions::default(),
    )
    .unwrap();
    let rec = Recognizer::new(&g).unwrap();
    assert!(rec.recognizes(br#""a{,3}""#) && !rec.recognizes(br#""aa""#));
}

#[test]
fn integer_multiple_of_up_to_ten_thousand() {
    for (k, yes, no) in [
        (
            1024u64,
            vec![0i64, 1024, -2048, 10240],
            vec![1000i64, 1025, 512],
        ),
        (9973, vec![9973 * 7, -9973], vec![9973 * 7 + 1, 9972]),
        (10_000, vec![20_000, 0], vec![5000]),
    ] {
        let g = compile_json_schema(
            &json!({"type": "integer", "multipleOf": k}),
            &JsonSchemaOptions::default(),
        )
        .unwrap();
        let rec = Recognizer::new_lazy(&g).unwrap();
        for v in yes {
            assert!(rec.recognizes(v.to_string().as_bytes()), "{v} of {k}");
        }
        for v in no {
            assert!(!rec.recognizes(v.to_string().as_bytes()), "{v} of {k}");
        }
    }
    let e = refusal(json!({"type": "integer", "multipleOf": 10_001}));
    assert!(
        matches!(&e, SchemaError::Unsupported { keyword, .. } if keyword == "multipleOf"),
        "{e}"
    );
}
