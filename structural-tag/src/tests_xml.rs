//! The XML styles of `json_schema`; every expectation is XGrammar 0.2.8's
//! answer for the same format and text.

use serde_json::json;

use super::{check, grammar, refused};

#[test]
fn qwen_order_and_required() {
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]}, "style": "qwen_xml"}),
        &[
            "<parameter=name>Bob</parameter>",
            "<parameter=name>Bob</parameter>\n<parameter=age> 7\n</parameter>",
            " <parameter=name><b>x</b> y</parameter> ",
        ],
        &[
            "<parameter=age>7</parameter><parameter=name>Bob</parameter>",
            "<parameter=age>7</parameter>",
            "<parameter=name>Bob</parameter><parameter=age>x</parameter>",
            "<parameter=name>a</parameter>b</parameter>",
            "<parameter=name>Bob</parameter><parameter=zz>1</parameter>",
        ],
    );
}

#[test]
fn qwen_any_order() {
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}, "style": "qwen_xml", "any_order": true}),
        &[
            "<parameter=b>1</parameter><parameter=a>2</parameter>",
            "<parameter=a>1</parameter><parameter=a>2</parameter>",
        ],
        &["<parameter=a>1</parameter>"],
    );
}

#[test]
fn minimax_values() {
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"e": {"enum": ["red", "blue", 3]}, "n": {"type": ["number", "null"]}, "o": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}}, "style": "minimax_xml"}),
        &[
            "<parameter name=\"e\">red</parameter>",
            "<parameter name=\"e\"> 3 </parameter>",
            "<parameter name=\"n\">null</parameter>",
            "<parameter name=\"n\">1.5</parameter>",
            "<parameter name=\"o\">{\"x\": 1}</parameter>",
        ],
        &[
            "<parameter name=\"e\">\"red\"</parameter>",
            "<parameter name=\"o\">{}</parameter>",
            "<parameter name=\"e\">green</parameter>",
        ],
    );
}

#[test]
fn deepseek_string_attribute() {
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"s": {"type": "string"}, "i": {"type": "integer"}, "any": {}}}, "style": "deepseek_xml"}),
        &[
            "<｜DSML｜parameter name=\"s\" string=\"true\">hi</｜DSML｜parameter>",
            "<｜DSML｜parameter name=\"i\" string=\"false\">3</｜DSML｜parameter>",
            "<｜DSML｜parameter name=\"any\" string=\"false\">[1]</｜DSML｜parameter>",
            "<｜DSML｜parameter name=\"any\" string=\"true\">text</｜DSML｜parameter>",
        ],
        &[
            "<｜DSML｜parameter name=\"s\" string=\"false\">hi</｜DSML｜parameter>",
            "<｜DSML｜parameter name=\"i\" string=\"true\">3</｜DSML｜parameter>",
            "<｜DSML｜parameter name=\"any\" string=\"false\">text</｜DSML｜parameter>",
        ],
    );
}

#[test]
fn deepseek_v4_1_spaced() {
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]}, "style": "deepseek_v4_1_xml"}),
        &["<｜DSML｜ parameter name=\"s\" string=\"true\">hi</｜DSML｜ parameter>"],
        &["<｜DSML｜parameter name=\"s\" string=\"true\">hi</｜DSML｜parameter>"],
    );
}

#[test]
fn glm_whitespace() {
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"k": {"type": "string"}, "n": {"type": "integer"}}}, "style": "glm_xml"}),
        &[
            "<arg_key>k</arg_key>\n<arg_value> v </arg_value>",
            "<arg_key>n</arg_key><arg_value>\n1\n</arg_value>",
        ],
        &[
            "<arg_key> k</arg_key><arg_value>v</arg_value>",
            "<arg_key>n</arg_key><arg_value>one</arg_value>",
        ],
    );
}

#[test]
fn kimi_type_attribute() {
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"s": {"type": "string"}, "i": {"type": "integer"}, "q\"&": {"type": "boolean"}, "u": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}, "style": "kimi_k3_xml"}),
        &["<|open|>argument key=\"s\" type=\"string\"<|sep|>x<|close|>argument<|sep|>", "<|open|>argument key=\"i\" type=\"number\"<|sep|>1<|close|>argument<|sep|>", "<|open|>argument key=\"q&quot;&amp;\" type=\"boolean\"<|sep|>true<|close|>argument<|sep|>", "<|open|>argument key=\"u\" type=\"null\"<|sep|>1<|close|>argument<|sep|>"],
        &["<|open|>argument key=\"s\" type=\"number\"<|sep|>x<|close|>argument<|sep|>", "<|open|>argument key=\"i\" type=\"integer\"<|sep|>1<|close|>argument<|sep|>"],
    );
}

#[test]
fn property_counts() {
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}, "minProperties": 2, "maxProperties": 2}, "style": "qwen_xml"}),
        &[
            "<parameter=a>1</parameter><parameter=c>1</parameter>",
            "<parameter=b>1</parameter><parameter=c>1</parameter>",
        ],
        &[
            "<parameter=a>1</parameter>",
            "<parameter=a>1</parameter><parameter=b>1</parameter><parameter=c>1</parameter>",
        ],
    );
}

#[test]
fn free_form_keys() {
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}, "style": "qwen_xml"}),
        &[
            "<parameter=a>x</parameter><parameter=zz>1</parameter>",
            "<parameter=zz>1</parameter>",
        ],
        &[
            "<parameter=zz>x</parameter>",
            "<parameter=zz>1</parameter><parameter=a>x</parameter>",
            "<parameter=9z>1</parameter>",
        ],
    );
}

#[test]
fn open_object() {
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object"}, "style": "qwen_xml"}),
        &[
            "",
            "<parameter=x>text</parameter> <parameter=y>[1, 2]</parameter>",
            "<parameter=x>{\"a\": 1}</parameter>",
        ],
        &[],
    );
}

#[test]
fn string_constraints() {
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"p": {"type": "string", "pattern": "[a-z]+"}, "l": {"type": "string", "minLength": 2, "maxLength": 3}, "d": {"type": "string", "format": "date"}}}, "style": "qwen_xml"}),
        &[
            "<parameter=p>abc</parameter>",
            "<parameter=p> abc </parameter>",
            "<parameter=l>xy</parameter>",
            "<parameter=d>2024-02-29</parameter>",
        ],
        &[
            "<parameter=p>ab1</parameter>",
            "<parameter=l>x</parameter>",
            "<parameter=l>wxyz</parameter>",
            // XGrammar accepts it: its `date` regex has no month lengths,
            // zapspec's is RFC 3339 `full-date` (as in the JSON style)
            "<parameter=d>2024-02-30</parameter>",
        ],
    );
}

#[test]
fn excludes_in_raw_strings() {
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"s": {"type": "string"}, "e": {"enum": ["ok", "no!"]}}}, "style": "qwen_xml", "excludes": ["!"]}),
        &[
            "<parameter=s>fine</parameter>",
            "<parameter=e>ok</parameter>",
        ],
        &[
            "<parameter=s>bad!</parameter>",
            "<parameter=e>no!</parameter>",
        ],
    );
}

#[test]
fn max_whitespace() {
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}, "style": "qwen_xml", "max_whitespace_cnt": 1}),
        &["<parameter=a> 1 </parameter> <parameter=b>2</parameter>"],
        &[
            "<parameter=a>  1</parameter>",
            "<parameter=a>1</parameter>\n\n<parameter=b>2</parameter>",
        ],
    );
}
#[test]
fn xml_refusals() {
    let obj = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    refused(
        json!({"type": "json_schema", "json_schema": obj, "style": "minimax_m3_xml"}),
        "/format/style",
        "not built",
    );
    refused(
        json!({"type": "json_schema", "json_schema": obj, "style": "cohere_xml", "excludes": ["<"]}),
        "/format/excludes",
        "non-empty excludes",
    );
    refused(
        json!({"type": "json_schema", "json_schema": obj, "style": "qwen_xml", "max_whitespace_cnt": 0}),
        "/format/max_whitespace_cnt",
        "must be positive",
    );
    refused(
        json!({"type": "json_schema", "json_schema": obj, "style": "qwen_xml", "excludes": ["x "]}),
        "/format/excludes/0",
        "whitespace",
    );
    refused(
        json!({"type": "json_schema", "json_schema": {"type": "string"}, "style": "glm_xml"}),
        "/format/json_schema/type",
        "root schema",
    );
    refused(
        json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}, "style": "qwen_xml", "excludes": ["!"]}),
        "/format/json_schema/properties/n",
        "excludes",
    );
}

#[test]
fn cohere_typed_values() {
    let v = |k: &str, t: &str, body: &str| {
        format!("<cofl:value name=\"{k}\" type=\"{t}\">{body}</cofl:value>")
    };
    let item = |t: &str, body: &str| format!("<cofl:value type=\"{t}\">{body}</cofl:value>");
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "string"},
        "n": {"type": "integer"},
        "o": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
        "l": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "e": {"enum": ["u", 1]}},
        "required": ["a"]});
    let both = format!("{}\n{}", v("a", "raw", "hi </b>"), v("n", "json", " 3 "));
    let nested = format!(
        "{} {}",
        v("a", "raw", "x"),
        v("o", "dict", &v("x", "raw", "1"))
    );
    let list = format!(
        "{}{}",
        v("a", "raw", "x"),
        v(
            "l",
            "list",
            &format!("{}{}", item("raw", "p"), item("raw", "q"))
        )
    );
    let three = format!(
        "{}{}",
        v("a", "raw", "x"),
        v("l", "list", &format!("{0}{0}{0}", item("raw", "p")))
    );
    let spaced = format!(
        "{}{}",
        v("a", "raw", "x"),
        v(
            "l",
            "list",
            &format!("{} {}", item("raw", "p"), item("raw", "q"))
        )
    );
    let enum_ok = format!("{}{}{}", v("a", "raw", "x"), v("e", "raw", "u"), "");
    let enum_num = format!("{}{}", v("a", "raw", "x"), v("e", "json", "1"));
    let enum_bad = format!("{}{}", v("a", "raw", "x"), v("e", "raw", "1"));
    check(
        json!({"type": "json_schema", "json_schema": schema, "style": "cohere_xml"}),
        &[
            v("a", "raw", "hi").as_str(),
            &both,
            &nested,
            &list,
            &enum_ok,
            &enum_num,
        ],
        &[
            "",
            v("n", "json", "3").as_str(),
            &v("a", "json", "\"hi\""),
            &three,
            &spaced,
            &enum_bad,
            &format!("{}{}", v("a", "raw", "x"), v("o", "dict", "")),
        ],
    );
    // free-form keys: any but the declared ones; unconstrained values typed
    let free = json!({"type": "object", "properties": {"ab": {"type": "string"}}, "additionalProperties": true});
    check(
        json!({"type": "json_schema", "json_schema": free, "style": "cohere_xml"}),
        &[
            v("a", "json", "1").as_str(),
            &v("abc", "dict", &v("k&amp;", "list", &item("raw", "z"))),
            &format!("{}{}", v("ab", "raw", "s"), v("b", "json", "null")),
        ],
        &[
            v("ab", "json", "1").as_str(),
            &v("a<", "json", "1"),
            &v("q", "json", "\"s\""),
        ],
    );
}

#[test]
fn cohere_recursive_refs() {
    let v = |k: &str, t: &str, body: &str| {
        format!("<cofl:value name=\"{k}\" type=\"{t}\">{body}</cofl:value>")
    };
    let schema = json!({"type": "object",
        "$defs": {"Alias": {"$ref": "#/$defs/Node"},
                  "Node": {"type": "object", "properties": {"name": {"type": "string"}, "child": {"$ref": "#/$defs/Alias"}},
                           "required": ["name"], "additionalProperties": false}},
        "properties": {"root": {"$ref": "#/$defs/Alias"}}, "required": ["root"], "additionalProperties": false});
    let deep = v(
        "root",
        "dict",
        &format!(
            "{}{}",
            v("name", "raw", "a"),
            v("child", "dict", &v("name", "raw", "b"))
        ),
    );
    check(
        json!({"type": "json_schema", "json_schema": schema, "style": "cohere_xml"}),
        &[&deep],
        &[&deep.replace("\"child\" type=\"dict\"", "\"child\" type=\"json\"")],
    );
    // a non-pure self-reference nests without end: refused, not overflowed
    let looping = json!({"type": "object", "$defs": {"N": {"type": "object", "properties": {"c": {"$ref": "#/$defs/N", "minProperties": 0}}}},
        "properties": {"c": {"$ref": "#/$defs/N", "minProperties": 0}}});
    let e = grammar(json!({"type": "json_schema", "json_schema": looping, "style": "cohere_xml"}))
        .expect_err("refused");
    assert!(
        e.pointer()
            .starts_with("/format/json_schema/properties/c/properties/c"),
        "{e}"
    );
    assert!(e.to_string().contains("deeper than 128"), "{e}");
}

#[test]
fn anchored_patterns_match_whole() {
    let schema = json!({"type": "object", "properties": {
        "u": {"type": "string", "pattern": "^(|https://.*)$"},
        "d": {"type": "string", "pattern": "^a\\$"}}, "required": ["u"]});
    check(
        json!({"type": "json_schema", "json_schema": schema, "style": "qwen_xml"}),
        &[
            "<parameter=u></parameter>",
            "<parameter=u>https://x.com/</parameter>",
            "<parameter=u></parameter><parameter=d>a$</parameter>",
        ],
        &[
            "<parameter=u>http://x.com/</parameter>",
            "<parameter=u></parameter><parameter=d>a</parameter>",
        ],
    );
}
