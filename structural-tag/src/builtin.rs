//! Tool-calling formats of model families, as data.
//!
//! Each family is a row of `families.json` (compiled into the crate): the
//! text around a call's arguments (`{name}` is the tool's name; an
//! optional call-id pattern and text after it), the trigger that starts a
//! call in free text, an optional section around all calls of a turn, the
//! reasoning block's delimiters, and the strings free text never contains;
//! `style` names the arguments' `json_schema` style (JSON when absent: the
//! XML styles of module `xml` for the families that write parameters as
//! elements). A section's `trigger` (its `begin` when absent) starts it in
//! free text, its `forced_prefix` comes before it when a call is required;
//! `think.disabled` is the text written for a disabled reasoning block,
//! `think.prompt_ends_inside: false` makes an enabled block start with its
//! `begin`; `no_tools_excludes` are free text's excludes when no tool is
//! offered.
//! The delimiters are those the families' chat templates write (and
//! XGrammar's built-in formats use). One builder, [`tool_calling_format`],
//! reads a row; a family is added by adding a row, not code.
//!
//! What a [`ToolChoice`] becomes (OpenAI's options): `Auto`: free text
//! in which calls may appear after their trigger (`triggered_tags`; with
//! no tools, free text only); `Required`: at least one call and no text
//! before it; `Named`: exactly that call; `None`: free text only.
//! `parallel_tool_calls: false`: at most one call. [`Reasoning`]:
//! `Enabled` (the prompt ends inside an open reasoning block, which the
//! output continues and closes), `Auto` (an optional whole block),
//! `Disabled` (none).

use std::sync::LazyLock;

use serde_json::{json, Map, Value};

use crate::error::StructTagError;

/// The family table (`families.json`).
static TABLE: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../families.json")).expect("families.json is valid JSON")
});

/// The table as JSON: `{"families": {name: row}, "not_built": {name: why}}`.
pub fn families_json() -> &'static Value {
    &TABLE
}

/// The names of the built families.
pub fn families() -> Vec<&'static str> {
    TABLE["families"]
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// A tool: its name and its arguments' JSON Schema (`true`: any JSON).
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    /// The name the model writes.
    pub name: String,
    /// The arguments' schema.
    pub parameters: Value,
}

impl Tool {
    /// A tool named `name` with arguments valid under `parameters`.
    pub fn new(name: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            parameters,
        }
    }
}

/// Whether and which tools the model must call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ToolChoice {
    /// Text, calls, or both.
    #[default]
    Auto,
    /// At least one call, first.
    Required,
    /// Exactly this tool's call.
    Named(String),
    /// No call.
    None,
}

/// The reasoning block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reasoning {
    /// The prompt ends inside an open block: the output closes it first.
    #[default]
    Enabled,
    /// An optional whole block first.
    Auto,
    /// No block.
    Disabled,
}

/// How calls are constrained.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallOptions {
    /// Which calls.
    pub choice: ToolChoice,
    /// The reasoning block.
    pub reasoning: Reasoning,
    /// More than one call per turn.
    pub parallel_tool_calls: bool,
    /// Arguments' properties in any order.
    pub any_order: bool,
    /// Free text never contains the family's special strings.
    pub exclude_special_tokens: bool,
    /// At most this many whitespace characters in a row in arguments.
    pub max_whitespace_cnt: Option<u64>,
}

impl Default for ToolCallOptions {
    fn default() -> Self {
        Self {
            choice: ToolChoice::Auto,
            reasoning: Reasoning::Enabled,
            parallel_tool_calls: true,
            any_order: false,
            exclude_special_tokens: true,
            max_whitespace_cnt: None,
        }
    }
}

fn strs(v: &Value) -> Vec<Value> {
    v.as_array().cloned().unwrap_or_default()
}

fn s<'a>(row: &'a Value, path: &[&str]) -> &'a str {
    let mut v = row;
    for p in path {
        v = &v[*p];
    }
    v.as_str().unwrap_or("")
}

/// `family`'s row of the table; an unknown family, or one not built (with
/// what it needs), is refused.
pub fn family_row(family: &str) -> Result<&'static Value, StructTagError> {
    if let Some(row) = TABLE["families"].get(family) {
        return Ok(row);
    }
    if let Some(why) = TABLE["not_built"].get(family).and_then(Value::as_str) {
        return Err(StructTagError::unsupported(
            "",
            format!("the model format {family:?} is not built in zapspec: it needs {why}"),
        ));
    }
    Err(StructTagError::invalid(
        "",
        format!(
            "Unknown format type: {family}, supported types: {}",
            families().join(", ")
        ),
    ))
}

/// The structural-tag format (JSON, `{"type": "structural_tag", "format":
/// …}`) of `family`'s tool calls for `tools` under `opts`. Refused: an
/// unknown family (or one not built, with what it needs), a named tool
/// not among `tools`, a required call without tools, two tools of one name.
pub fn tool_calling_format(
    family: &str,
    tools: &[Tool],
    opts: &ToolCallOptions,
) -> Result<Value, StructTagError> {
    let row = family_row(family)?;
    for (i, t) in tools.iter().enumerate() {
        if tools[..i].iter().any(|u| u.name == t.name) {
            return Err(StructTagError::invalid(
                &format!("/tools/{i}"),
                format!("two tools are named {:?}", t.name),
            ));
        }
    }
    let tools: Vec<&Tool> = match &opts.choice {
        ToolChoice::None => Vec::new(),
        ToolChoice::Named(n) => {
            let t = tools.iter().find(|t| &t.name == n).ok_or_else(|| {
                StructTagError::invalid(
                    "/tool_choice",
                    format!("The tool with name '{n}' is not found in the tools list."),
                )
            })?;
            vec![t]
        }
        _ => tools.iter().collect(),
    };
    if opts.choice == ToolChoice::Required && tools.is_empty() {
        return Err(StructTagError::invalid(
            "/tool_choice",
            "Required tool choice needs at least one tool.",
        ));
    }
    let excl = |v: &Value| -> Vec<Value> {
        if opts.exclude_special_tokens {
            strs(v)
        } else {
            Vec::new()
        }
    };
    let call_tag = |t: &Tool, before: &str, after: &str| -> Value {
        let mut args = Map::new();
        args.insert("type".into(), json!("json_schema"));
        args.insert("json_schema".into(), t.parameters.clone());
        if let Some(style) = row.get("style") {
            args.insert("style".into(), style.clone());
        }
        args.insert("any_order".into(), json!(opts.any_order));
        if let Some(n) = opts.max_whitespace_cnt {
            args.insert("max_whitespace_cnt".into(), json!(n));
        }
        let args = Value::Object(args);
        let content = match row["call"].get("id").and_then(Value::as_str) {
            Some(id) => json!({"type": "sequence", "elements": [
                {"type": "regex", "pattern": id},
                {"type": "const_string", "value": s(row, &["call", "args"])},
                args]}),
            None => args,
        };
        json!({"type": "tag",
               "begin": format!("{before}{}", s(row, &["call", "begin"]).replace("{name}", &t.name)),
               "content": content,
               "end": format!("{}{after}", s(row, &["call", "end"]))})
    };
    let once = !opts.parallel_tool_calls;
    let section = row.get("section");
    let text_excludes = if tools.is_empty() {
        excl(row.get("no_tools_excludes").unwrap_or(&row["excludes"]))
    } else {
        excl(row.get("auto_excludes").unwrap_or(&row["excludes"]))
    };
    let suffix = match (&opts.choice, section) {
        (ToolChoice::Auto | ToolChoice::None, _) if tools.is_empty() => {
            json!({"type": "any_text", "excludes": text_excludes})
        }
        (ToolChoice::Named(_), Some(sec)) => call_tag(
            tools[0],
            &format!("{}{}", s(sec, &["forced_prefix"]), s(sec, &["begin"])),
            s(sec, &["end"]),
        ),
        (ToolChoice::Named(_), None) => call_tag(tools[0], "", ""),
        (choice, None) => json!({"type": "triggered_tags",
            "triggers": [s(row, &["trigger"])],
            "tags": tools.iter().map(|t| call_tag(t, "", "")).collect::<Vec<_>>(),
            "excludes": text_excludes,
            "at_least_one": *choice == ToolChoice::Required,
            "stop_after_first": once}),
        (choice, Some(sec)) => {
            let forced = *choice == ToolChoice::Required;
            let begin = if forced {
                format!("{}{}", s(sec, &["forced_prefix"]), s(sec, &["begin"]))
            } else {
                s(sec, &["begin"]).to_string()
            };
            let block = json!({"type": "tag", "begin": begin,
                "content": {"type": "tags_with_separator",
                    "tags": tools.iter().map(|t| call_tag(t, "", "")).collect::<Vec<_>>(),
                    "separator": "", "at_least_one": true, "stop_after_first": once},
                "end": s(sec, &["end"])});
            if forced {
                block
            } else {
                let trigger = sec.get("trigger").unwrap_or(&sec["begin"]);
                json!({"type": "triggered_tags", "triggers": [trigger],
                    "tags": [block], "excludes": text_excludes, "stop_after_first": once})
            }
        }
    };
    let format = match row.get("think") {
        Some(think) if opts.reasoning == Reasoning::Disabled && think.get("disabled").is_some() => {
            json!({"type": "sequence", "elements": [
                {"type": "const_string", "value": s(think, &["disabled"])}, suffix]})
        }
        Some(think) if opts.reasoning != Reasoning::Disabled => {
            let block_excludes = match row.get("reasoning_excludes") {
                Some(r) if opts.reasoning == Reasoning::Enabled => excl(r),
                _ => excl(&row["excludes"]),
            };
            let inside = think
                .get("prompt_ends_inside")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            let begin = if opts.reasoning == Reasoning::Enabled && inside {
                ""
            } else {
                s(think, &["begin"])
            };
            let mut prefix = json!({"type": "tag", "begin": begin,
                "content": {"type": "any_text", "excludes": block_excludes},
                "end": s(think, &["end"])});
            let suffix_text = s(think, &["suffix"]);
            if !suffix_text.is_empty() {
                prefix = json!({"type": "sequence", "elements": [prefix,
                    {"type": "const_string", "value": suffix_text}]});
            }
            if opts.reasoning == Reasoning::Auto {
                prefix = json!({"type": "optional", "content": prefix});
            }
            json!({"type": "sequence", "elements": [prefix, suffix]})
        }
        _ => suffix,
    };
    Ok(json!({"type": "structural_tag", "format": format}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{compile_structural_tag, StructTagOptions};
    use zapspec_grammar::Recognizer;

    fn weather() -> Tool {
        Tool::new(
            "get_weather",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        )
    }

    #[test]
    fn every_family_and_choice_compiles() {
        for f in families() {
            for choice in [
                ToolChoice::Auto,
                ToolChoice::Required,
                ToolChoice::Named("get_weather".into()),
                ToolChoice::None,
            ] {
                for reasoning in [Reasoning::Enabled, Reasoning::Auto, Reasoning::Disabled] {
                    let opts = ToolCallOptions {
                        choice: choice.clone(),
                        reasoning,
                        ..ToolCallOptions::default()
                    };
                    let tag = tool_calling_format(f, &[weather()], &opts).unwrap();
                    compile_structural_tag(&tag, &StructTagOptions::default())
                        .unwrap_or_else(|e| panic!("{f} {opts:?}: {e}"));
                }
            }
        }
    }

    #[test]
    fn qwen_3_calls() {
        let opts = ToolCallOptions {
            reasoning: Reasoning::Disabled,
            ..ToolCallOptions::default()
        };
        let tag = tool_calling_format("qwen_3", &[weather()], &opts).unwrap();
        let g = compile_structural_tag(&tag, &StructTagOptions::default()).unwrap();
        let r = Recognizer::new(&g).unwrap();
        let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        assert!(r.recognizes(format!("Sure. {call}").as_bytes()));
        assert!(!r.recognizes(call.replace("city", "town").as_bytes()));
        assert!(!r.recognizes(call.replace("get_weather", "get_time").as_bytes()));
    }

    #[test]
    fn refusals() {
        let e = tool_calling_format("nope", &[], &ToolCallOptions::default()).unwrap_err();
        assert!(e.to_string().contains("Unknown format type"));
        let e = tool_calling_format("cohere", &[], &ToolCallOptions::default()).unwrap_err();
        assert!(matches!(e, StructTagError::Unsupported { .. }));
        let required = ToolCallOptions {
            choice: ToolChoice::Required,
            ..ToolCallOptions::default()
        };
        assert!(tool_calling_format("llama", &[], &required).is_err());
        let named = ToolCallOptions {
            choice: ToolChoice::Named("x".into()),
            ..ToolCallOptions::default()
        };
        let e = tool_calling_format("llama", &[weather()], &named).unwrap_err();
        assert_eq!(e.pointer(), "/tool_choice");
        let e = tool_calling_format(
            "llama",
            &[weather(), weather()],
            &ToolCallOptions::default(),
        )
        .unwrap_err();
        assert_eq!(e.pointer(), "/tools/1");
    }
}
