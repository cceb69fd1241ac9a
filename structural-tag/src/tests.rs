//! Each format against the reference recognizer, and every refusal at its
//! pointer.

use serde_json::{json, Value};
use zapspec_grammar::Recognizer;

use crate::{compile_structural_tag, StructTagError, StructTagOptions};

fn grammar(format: Value) -> Result<zapspec_grammar::Grammar, StructTagError> {
    compile_structural_tag(
        &json!({"type": "structural_tag", "format": format}),
        &StructTagOptions::default(),
    )
}

fn check(format: Value, accepted: &[&str], refused: &[&str]) {
    let g = grammar(format.clone()).unwrap_or_else(|e| panic!("{format}: {e}"));
    let r = Recognizer::new(&g).unwrap();
    for s in accepted {
        assert!(r.recognizes(s.as_bytes()), "{format}\nshould accept {s:?}");
    }
    for s in refused {
        assert!(!r.recognizes(s.as_bytes()), "{format}\nshould refuse {s:?}");
    }
}

fn refused(format: Value, pointer: &str, needle: &str) {
    let e = grammar(format.clone()).expect_err("refused");
    assert_eq!(e.pointer(), pointer, "{format}: {e}");
    assert!(e.to_string().contains(needle), "{e} lacks {needle:?}");
}

fn city() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
}

#[test]
fn primitives() {
    check(
        json!({"type": "const_string", "value": "Hello!"}),
        &["Hello!"],
        &["Hello", "Hello!!", ""],
    );
    check(json!({"type": "const_string", "value": ""}), &[""], &["x"]);
    check(
        json!({"type": "json_schema", "json_schema": city()}),
        &[r#"{"city":"Paris"}"#],
        &[r#"{"city":1}"#, "{}"],
    );
    check(
        json!({"type": "grammar", "grammar": "root ::= \"yes\" | \"no\""}),
        &["yes", "no"],
        &["maybe"],
    );
    check(
        json!({"type": "regex", "pattern": "[A-Z]{3}-\\d{4}"}),
        &["ABC-1234"],
        &["ABC-123", "abc-1234"],
    );
    check(
        json!({"type": "any_text", "excludes": ["<function="]}),
        &["", "free text", "<function"],
        &["a <function=f>"],
    );
}

#[test]
fn compositions() {
    let a = json!({"type": "const_string", "value": "a"});
    let b = json!({"type": "const_string", "value": "b"});
    check(
        json!({"type": "sequence", "elements": [a, b]}),
        &["ab"],
        &["a", "ba"],
    );
    check(
        json!({"type": "or", "elements": [a, b]}),
        &["a", "b"],
        &["ab", ""],
    );
    check(
        json!({"type": "optional", "content": a}),
        &["", "a"],
        &["aa"],
    );
    check(json!({"type": "plus", "content": a}), &["a", "aaa"], &[""]);
    check(json!({"type": "star", "content": a}), &["", "aaa"], &["b"]);
    check(
        json!({"type": "repeat", "min": 1, "max": 3, "content": a}),
        &["a", "aa", "aaa"],
        &["", "aaaa"],
    );
    check(
        json!({"type": "repeat", "min": 2, "max": -1, "content": a}),
        &["aa", "aaaaa"],
        &["a"],
    );
    check(
        json!({"type": "repeat", "min": 0, "max": 0, "content": a}),
        &[""],
        &["a"],
    );
}

#[test]
fn tags_end_their_free_text() {
    check(
        json!({"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"}),
        &["<think></think>", "<think>a < b </thin</think>"],
        &["<think>a</think>b", "<think>a</think></think>", "<think>"],
    );
    // any_text deep inside the tag still stops at the tag's end
    check(
        json!({"type": "tag", "begin": "[", "content": {"type": "sequence", "elements": [
            {"type": "any_text"}, {"type": "const_string", "value": "!"}]}, "end": ["]", ")"]}),
        &["[x!]", "[!)"],
        &["[x]!]", "[x!"],
    );
}

#[test]
fn a_character_budget_counts_characters_before_the_end() {
    let think = |n: u64| {
        json!({"type": "tag", "begin": "<think>", "content":
            {"type": "any_text", "excludes": ["</think>"], "max_chars": n}, "end": "</think>"})
    };
    check(
        think(3),
        &[
            "<think></think>",
            "<think>dea</think>",
            "<think>中中中</think>",
            "<think></t</think>",
        ],
        &[
            "<think>dede</think>",
            "<think>中中中中</think>",
            "<think>a</think></think>",
        ],
    );
    check(think(0), &["<think></think>"], &["<think>a</think>"]);
    // a token budget stays refused, at its pointer
    refused(
        json!({"type": "any_text", "max_tokens": 2, "max_chars": 3}),
        "/format/max_tokens",
        "token budget",
    );
}

fn weather_tags() -> Value {
    json!([
        {"type": "tag", "begin": "<function=get_weather>", "content":
            {"type": "json_schema", "json_schema": city()}, "end": "</function>"},
        {"type": "tag", "begin": "<function=get_time>", "content":
            {"type": "json_schema", "json_schema": {"type": "object", "properties":
                {"tz": {"type": "string"}}, "required": ["tz"]}}, "end": "</function>"}
    ])
}

#[test]
fn triggered_tags() {
    let call = r#"<function=get_weather>{"city":"SF"}</function>"#;
    let time = r#"<function=get_time>{"tz":"UTC"}</function>"#;
    let tt = |at_least_one: bool, stop_after_first: bool| {
        json!({"type": "triggered_tags", "triggers": ["<function="], "tags": weather_tags(),
               "at_least_one": at_least_one, "stop_after_first": stop_after_first})
    };
    let text_call = format!("I will call. {call}");
    let two = format!("a {call} b {time} c");
    let bad = r#"x <function=get_weather>{"tz":"UTC"}</function>"#;
    let unknown = r#"x <function=other>{}</function>"#;
    check(
        tt(false, false),
        &["", "plain text", &text_call, &two, "<function"],
        &[bad, unknown],
    );
    let after = format!("{call} then text");
    let call_two = format!("{call}{time}");
    check(
        tt(true, false),
        &[call, &after, &call_two],
        &["", "text", &text_call],
    );
    check(tt(false, true), &["", "text", &text_call], &[&two, &after]);
    check(
        tt(true, true),
        &[call, time],
        &["", &text_call, &call_two, &after],
    );
}

#[test]
fn triggered_tags_inside_a_tag_stop_at_its_end() {
    check(
        json!({"type": "tag", "begin": "<r>", "content": {"type": "triggered_tags",
            "triggers": ["<function="], "tags": weather_tags()}, "end": "</r>"}),
        &[
            "<r>x</r>",
            r#"<r>x<function=get_weather>{"city":"a"}</function>y</r>"#,
        ],
        &["<r>x</r>y</r>", "<r>x"],
    );
}

#[test]
fn tags_with_separator_and_dispatch() {
    let tags =
        json!([{"begin": "<a>", "content": {"type": "const_string", "value": "1"}, "end": "</a>"}]);
    check(
        json!({"type": "tags_with_separator", "tags": tags, "separator": ","}),
        &["", "<a>1</a>", "<a>1</a>,<a>1</a>"],
        &["<a>1</a>,", "x<a>1</a>"],
    );
    check(
        json!({"type": "tags_with_separator", "tags": tags, "separator": ",", "at_least_one": true, "stop_after_first": true}),
        &["<a>1</a>"],
        &["", "<a>1</a>,<a>1</a>"],
    );
    let rules = json!([["<f1>", {"type": "const_string", "value": "X"}], ["<f2>", {"type": "const_string", "value": "Y"}]]);
    check(
        json!({"type": "dispatch", "rules": rules, "excludes": ["</end>"]}),
        &["", "text <f1>X more <f2>Y"],
        &["<f1>Y", "x </end>"],
    );
    check(
        json!({"type": "dispatch", "rules": rules, "loop": false}),
        &["text <f1>X"],
        &["<f1>X more"],
    );
}

#[test]
fn refusals_name_their_place() {
    refused(json!({"type": "nope"}), "/format/type", "not recognized");
    refused(json!({"type": "const_string"}), "/format", "value");
    refused(
        json!({"type": "const_string", "value": "a", "extra": 1}),
        "/format/extra",
        "no field",
    );
    refused(
        json!({"type": "sequence", "elements": []}),
        "/format",
        "at least one element",
    );
    refused(
        json!({"type": "sequence", "elements": [{"type": "regex", "pattern": "("}]}),
        "/format/elements/0/pattern",
        "regex",
    );
    refused(
        json!({"type": "json_schema", "json_schema": {"type": "integer", "minimum": 5, "maximum": 1}}),
        "/format/json_schema",
        "json_schema",
    );
    refused(
        json!({"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": ""}),
        "/format/end",
        "at least one end string",
    );
    refused(
        json!({"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": []}),
        "/format/end",
        "cannot be empty",
    );
    refused(
        json!({"type": "triggered_tags", "triggers": ["<f", "<fu"], "tags": weather_tags()}),
        "/format/triggers/1",
        "prefix",
    );
    refused(
        json!({"type": "triggered_tags", "triggers": ["<tool>"], "tags": weather_tags()}),
        "/format/tags/0",
        "does not match any trigger",
    );
    refused(
        json!({"type": "triggered_tags", "triggers": ["<function="], "tags": weather_tags(), "excludes": ["func"]}),
        "/format/excludes/0",
        "inside trigger",
    );
    refused(
        json!({"type": "token", "token": 1}),
        "/format",
        "token-level",
    );
    refused(
        json!({"type": "any_text", "max_tokens": -1}),
        "/format/max_tokens",
        "non-negative 32-bit integer",
    );
    refused(
        json!({"type": "repeat", "min": 3, "max": 1, "content": {"type": "const_string", "value": "a"}}),
        "/format",
        "min must be <= max",
    );
    let e =
        compile_structural_tag(&json!({"format": 1}), &StructTagOptions::default()).unwrap_err();
    assert_eq!(e.pointer(), "/format");
    let e = compile_structural_tag(&json!([]), &StructTagOptions::default()).unwrap_err();
    assert_eq!(e.pointer(), "");
}

#[test]
fn identical_schemas_are_compiled_once() {
    let tags: Vec<Value> = (0..20)
        .map(|i| json!({"begin": format!("<f{i}>"), "content": {"type": "json_schema", "json_schema": city()}, "end": "</f>"}))
        .collect();
    let format = crate::parse_structural_tag(
        &json!({"format": {"type": "triggered_tags", "triggers": ["<f"], "tags": tags}}),
    )
    .unwrap();
    let mut c = crate::StructTagCompiler::new(StructTagOptions::default());
    let (_, rep) = c.lower(&format).unwrap();
    assert_eq!((rep.schemas_compiled, rep.schemas_reused), (1, 19));
    let (_, rep) = c.lower(&format).unwrap();
    assert_eq!(rep.schemas_compiled, 0);
}

#[path = "tests_xml.rs"]
mod xml;
