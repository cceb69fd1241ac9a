//! The named JSON value rules, beside a compiled schema's grammar.
//!
//! XGrammar prints every JSON Schema's grammar with the same library of
//! rules first — `basic_escape`, `basic_string_sub`, `basic_any`,
//! `basic_integer`, `basic_number`, `basic_string`, `basic_boolean`,
//! `basic_null`, `basic_array`, `basic_object` — and grammar text written
//! for XGrammar (an engine's own rules around a schema's, a test that reads
//! the printed rules) refers to them by those names. [`with_library`] adds
//! the same names, each for the JSON values of its kind (RFC 8259), to a
//! grammar that [`compile_json_schema`](crate::compile_json_schema)
//! produced, so that its GBNF can be extended by such text. The schema's
//! language is unchanged: the start symbol is the schema's, and nothing it
//! derives refers to the library (its rules are unreachable from it, which
//! the engine's useless-rule pass drops before compiling).
//!
//! Use it where grammar text is the interface (the Python package's
//! `Grammar.from_json_schema`, whose `str()` is its GBNF); the Rust
//! compiler's output stays the schema's rules alone. Cost: one GBNF parse of
//! ten rules per call.

use zapspec_grammar::gbnf::quote_literal;
use zapspec_grammar::ir::Grammar;

use crate::Whitespace;

/// The library's GBNF, with `ws` between tokens as [`Whitespace`] lays
/// them out: [`Whitespace::Flexible`] its bounded run of `[ \t\n\r]`,
/// [`Whitespace::Separators`] and [`Whitespace::Indent`] their separators
/// (an indent's newlines depend on the depth, which the library's rules,
/// shared by every depth, do not know: they use the separators alone),
/// [`Whitespace::Compact`] none.
pub fn library_gbnf(ws: &Whitespace) -> String {
    let (sp, item, key) = match ws {
        Whitespace::Compact => (String::new(), "\",\"".to_string(), "\":\"".to_string()),
        Whitespace::Flexible { max_ws } => {
            let run = match *max_ws {
                0 => String::new(),
                usize::MAX => " /[ \\t\\n\\r]*/".to_string(),
                n => format!(" /[ \\t\\n\\r]{{0,{n}}}/"),
            };
            (
                run.clone(),
                format!("{run} \",\"{run}"),
                format!("{run} \":\"{run}"),
            )
        }
        Whitespace::Separators {
            item_separator,
            key_separator,
        }
        | Whitespace::Indent {
            item_separator,
            key_separator,
            ..
        } => (
            String::new(),
            quote_literal(item_separator),
            quote_literal(key_separator),
        ),
    };
    format!(
        r#"basic_escape ::= /["\\\/bfnrt]|u[0-9A-Fa-f]{{4}}/
basic_string_sub ::= /([^"\\\x00-\x1F]|\\(["\\\/bfnrt]|u[0-9A-Fa-f]{{4}}))*"/
basic_any ::= basic_number | basic_string | basic_boolean | basic_null | basic_array | basic_object
basic_integer ::= /-?(0|[1-9][0-9]*)/
basic_number ::= /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
basic_string ::= "\"" basic_string_sub
basic_boolean ::= "true" | "false"
basic_null ::= "null"
basic_array ::= "["{sp} basic_any ({item} basic_any)*{sp} "]" | "["{sp} "]"
basic_object ::= "{{"{sp} basic_string {key} basic_any ({item} basic_string {key} basic_any)*{sp} "}}" | "{{"{sp} "}}"
"#
    )
}

/// `schema` (a compiled schema's grammar) with the library's rules added
/// under their exact names: the library's nonterminals are created first,
/// so a schema rule of the same name (a property called `basic_string`)
/// gets a suffix instead. The start symbol is `schema`'s.
pub fn with_library(schema: &Grammar, ws: &Whitespace) -> Grammar {
    let lib = Grammar::from_gbnf(&library_gbnf(ws))
        .expect("the library's GBNF is fixed text with separators checked by the compiler");
    let mut g = Grammar::new();
    g.embed(&lib, "");
    g.start = g.embed(schema, "");
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{compile_json_schema, JsonSchemaOptions};
    use serde_json::json;
    use zapspec_grammar::Recognizer;

    const NAMES: [&str; 10] = [
        "basic_escape",
        "basic_string_sub",
        "basic_any",
        "basic_integer",
        "basic_number",
        "basic_string",
        "basic_boolean",
        "basic_null",
        "basic_array",
        "basic_object",
    ];

    fn layouts() -> Vec<Whitespace> {
        vec![
            Whitespace::Compact,
            Whitespace::Flexible { max_ws: usize::MAX },
            Whitespace::Flexible { max_ws: 2 },
            Whitespace::Separators {
                item_separator: ", ".into(),
                key_separator: ": ".into(),
            },
        ]
    }

    #[test]
    fn names_are_exact_and_the_language_is_the_schemas() {
        // a property named like a library rule keeps the library's name free
        let schema = json!({"type": "object", "properties": {"basic_string": {"type": "integer"}},
                            "required": ["basic_string"]});
        for ws in layouts() {
            let opts = JsonSchemaOptions {
                whitespace: ws.clone(),
                ..Default::default()
            };
            let plain = compile_json_schema(&schema, &opts).unwrap();
            let g = with_library(&plain, &ws);
            let text = g.to_string();
            for n in NAMES {
                assert!(text.contains(&format!("\n{n} ::=")), "{n} in\n{text}");
            }
            assert!(text.starts_with("root ::="), "{text}");
            let (a, b) = (
                Recognizer::new(&plain).unwrap(),
                Recognizer::new(&g).unwrap(),
            );
            for s in [
                r#"{"basic_string":1}"#,
                r#"{"basic_string": 1}"#,
                r#"{"basic_string":"x"}"#,
                r#"{}"#,
                "1",
            ] {
                assert_eq!(
                    a.recognizes(s.as_bytes()),
                    b.recognizes(s.as_bytes()),
                    "{s}"
                );
            }
            // the printed text parses back to the same language
            let back = Grammar::from_gbnf(&text).unwrap();
            let c = Recognizer::new(&back).unwrap();
            assert!(
                c.recognizes(br#"{"basic_string":1}"#) == a.recognizes(br#"{"basic_string":1}"#)
            );
        }
    }

    /// Each library rule, used as the start symbol, is its kind of JSON
    /// value: checked against serde_json on a fixed set of texts.
    #[test]
    fn rules_are_rfc_8259_values() {
        let texts = [
            "0",
            "-0",
            "01",
            "1.5",
            "1.",
            "1e5",
            "-1E+2",
            "\"\"",
            "\"a\\u00e9\\n\"",
            "\"\\x\"",
            "\"\u{1}\"",
            "true",
            "null",
            "nul",
            "[]",
            "[1,\"a\",[{}]]",
            "[1,]",
            "{}",
            "{\"a\":1,\"b\":[null]}",
            "{\"a\"}",
            "{1:2}",
        ];
        let ws = Whitespace::Compact;
        let lib = Grammar::from_gbnf(&library_gbnf(&ws)).unwrap();
        type IsKind = fn(&serde_json::Value) -> bool;
        let kinds: [(&str, IsKind); 6] = [
            ("basic_any", |_| true),
            ("basic_number", |v| v.is_number()),
            ("basic_integer", |v| v.is_number()),
            ("basic_string", |v| v.is_string()),
            ("basic_array", |v| v.is_array()),
            ("basic_object", |v| v.is_object()),
        ];
        for (name, is_kind) in kinds {
            let mut g = lib.clone();
            g.start = g.nonterminal(name).unwrap();
            let rec = Recognizer::new(&g).unwrap();
            for t in texts {
                let want = serde_json::from_str::<serde_json::Value>(t)
                    .map(|v| {
                        is_kind(&v) && (name != "basic_integer" || !t.contains(['.', 'e', 'E']))
                    })
                    .unwrap_or(false);
                assert_eq!(rec.recognizes(t.as_bytes()), want, "{name} on {t}");
            }
        }
    }
}
