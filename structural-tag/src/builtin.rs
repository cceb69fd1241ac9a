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
//! offered; `section.separator` comes between calls; `args_excludes` are
//! the arguments' `json_schema.excludes`; `{name}` may also stand in the
//! text after the call id (`call.args`).
//!
//! Two layouts other than free text with calls (`layout`): `blocks`
//! (Kimi-K3: the `response` block, the section after it, optional under
//! `auto`, then `message_end`) and `messages` (gpt-oss Harmony: messages
//! joined by `separator`; a function call is one of `call.begins`'
//! headers, a builtin tool's one of `builtin_call.begins`; the `final`
//! and `analysis` messages end with any of their `end` strings).
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

/// A tool: its name, its arguments' JSON Schema (`true`: any JSON), and
/// whether it is a provider's builtin tool (a browser, a code
/// interpreter: `{"type": "web_search_preview", "name": …}`) rather than
/// a function.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    /// The name the model writes.
    pub name: String,
    /// The arguments' schema.
    pub parameters: Value,
    /// A builtin tool: only the families with a `builtin_call` row write
    /// one (gpt-oss Harmony); the others leave builtin tools out, as
    /// XGrammar's builders do.
    pub builtin: bool,
}

impl Tool {
    /// A function tool named `name` with arguments valid under `parameters`.
    pub fn new(name: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            parameters,
            builtin: false,
        }
    }

    /// A builtin tool named `name` (the name the model writes, e.g.
    /// `browser.search`) with arguments valid under `parameters`.
    pub fn builtin(name: impl Into<String>, parameters: Value) -> Self {
        Self {
            builtin: true,
            ..Self::new(name, parameters)
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
/// not among `tools`, a required or named call the family cannot write
/// (no tools, or builtin tools only in a family without builtin calls),
/// two tools of one name.
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
    // builtin tools only where the family writes them
    let writes_builtin = row.get("builtin_call").is_some();
    let tools: Vec<&Tool> = tools
        .into_iter()
        .filter(|t| writes_builtin || !t.builtin)
        .collect();
    match (&opts.choice, tools.is_empty()) {
        (ToolChoice::Required, true) => {
            return Err(StructTagError::invalid(
                "/tool_choice",
                "Required tool choice needs at least one tool.",
            ))
        }
        (ToolChoice::Named(_), true) => {
            return Err(StructTagError::invalid(
                "/tool_choice",
                "Forced tool choice must resolve to exactly one tool.",
            ))
        }
        _ => {}
    }
    let b = Builder { row, opts };
    let format = match row.get("layout").and_then(Value::as_str) {
        Some("messages") => b.messages(&tools),
        Some("blocks") => b.assemble(b.blocks(&tools)),
        _ => b.assemble(b.text_and_calls(&tools)),
    };
    Ok(json!({"type": "structural_tag", "format": format}))
}

/// One row read under one set of options.
struct Builder<'a> {
    row: &'a Value,
    opts: &'a ToolCallOptions,
}

impl Builder<'_> {
    fn excl(&self, v: &Value) -> Vec<Value> {
        if self.opts.exclude_special_tokens {
            strs(v)
        } else {
            Vec::new()
        }
    }

    /// A tool's arguments.
    fn args(&self, t: &Tool) -> Value {
        let row = self.row;
        let opts = self.opts;
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
        let ex = self.excl(&row["args_excludes"]);
        if !ex.is_empty() {
            args.insert("excludes".into(), Value::Array(ex));
        }
        Value::Object(args)
    }

    /// One call: `call.begin` (or `begin`, for a Harmony variant), the
    /// optional id and the text after it, the arguments, `call.end`.
    fn call_tag(&self, t: &Tool, before: &str, after: &str) -> Value {
        let row = self.row;
        let args = self.args(t);
        let content = match row["call"].get("id").and_then(Value::as_str) {
            Some(id) => json!({"type": "sequence", "elements": [
                {"type": "regex", "pattern": id},
                {"type": "const_string", "value": s(row, &["call", "args"]).replace("{name}", &t.name)},
                args]}),
            None => args,
        };
        json!({"type": "tag",
               "begin": format!("{before}{}", s(row, &["call", "begin"]).replace("{name}", &t.name)),
               "content": content,
               "end": format!("{}{after}", s(row, &["call", "end"]))})
    }

    /// All calls of a turn inside the section `sec` (at least one).
    fn section_block(&self, sec: &Value, tools: &[&Tool], begin: String) -> Value {
        json!({"type": "tag", "begin": begin,
            "content": {"type": "tags_with_separator",
                "tags": tools.iter().map(|t| self.call_tag(t, "", "")).collect::<Vec<_>>(),
                "separator": s(sec, &["separator"]), "at_least_one": true,
                "stop_after_first": !self.opts.parallel_tool_calls},
            "end": s(sec, &["end"])})
    }

    /// Free text with calls after their trigger, or the calls alone.
    fn text_and_calls(&self, tools: &[&Tool]) -> Value {
        let row = self.row;
        let opts = self.opts;
        let once = !opts.parallel_tool_calls;
        let section = row.get("section");
        let text_excludes = if tools.is_empty() {
            self.excl(row.get("no_tools_excludes").unwrap_or(&row["excludes"]))
        } else {
            self.excl(row.get("auto_excludes").unwrap_or(&row["excludes"]))
        };
        match (&opts.choice, section) {
            (ToolChoice::Auto | ToolChoice::None, _) if tools.is_empty() => {
                json!({"type": "any_text", "excludes": text_excludes})
            }
            (ToolChoice::Named(_), Some(sec)) => self.call_tag(
                tools[0],
                &format!("{}{}", s(sec, &["forced_prefix"]), s(sec, &["begin"])),
                s(sec, &["end"]),
            ),
            (ToolChoice::Named(_), None) => self.call_tag(tools[0], "", ""),
            (choice, None) => json!({"type": "triggered_tags",
                "triggers": [s(row, &["trigger"])],
                "tags": tools.iter().map(|t| self.call_tag(t, "", "")).collect::<Vec<_>>(),
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
                let block = self.section_block(sec, tools, begin);
                if forced {
                    block
                } else {
                    let trigger = sec.get("trigger").unwrap_or(&sec["begin"]);
                    json!({"type": "triggered_tags", "triggers": [trigger],
                        "tags": [block], "excludes": text_excludes, "stop_after_first": once})
                }
            }
        }
    }

    /// Kimi-K3's blocks: the response block (its opening marker already in
    /// the prompt when reasoning is off), the tools block (optional under
    /// `auto`), then the message's end.
    fn blocks(&self, tools: &[&Tool]) -> Value {
        let row = self.row;
        let opts = self.opts;
        let resp = &row["response"];
        let begin = if opts.reasoning == Reasoning::Disabled {
            ""
        } else {
            s(resp, &["begin"])
        };
        let mut elements = vec![json!({"type": "tag", "begin": begin,
            "content": {"type": "any_text", "excludes": self.excl(&row["excludes"])},
            "end": s(resp, &["end"])})];
        let sec = &row["section"];
        let begin = s(sec, &["begin"]).to_string();
        match &opts.choice {
            _ if tools.is_empty() => {}
            ToolChoice::Auto => elements.push(
                json!({"type": "optional", "content": self.section_block(sec, tools, begin)}),
            ),
            _ => elements.push(self.section_block(sec, tools, begin)),
        }
        elements.push(json!({"type": "const_string", "value": s(row, &["message_end"])}));
        json!({"type": "sequence", "elements": elements})
    }

    /// The reasoning block before `suffix` (`think` of the row).
    fn assemble(&self, suffix: Value) -> Value {
        let row = self.row;
        let opts = self.opts;
        match row.get("think") {
            Some(think)
                if opts.reasoning == Reasoning::Disabled && think.get("disabled").is_some() =>
            {
                json!({"type": "sequence", "elements": [
                    {"type": "const_string", "value": s(think, &["disabled"])}, suffix]})
            }
            Some(think) if opts.reasoning != Reasoning::Disabled => {
                let block_excludes = match row.get("reasoning_excludes") {
                    Some(r) if opts.reasoning == Reasoning::Enabled => self.excl(r),
                    _ => self.excl(&row["excludes"]),
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
        }
    }

    /// gpt-oss Harmony: a stream of messages joined by `separator`, each a
    /// call (one tag per header variant of `call.begins` /
    /// `builtin_call.begins`), the final answer (not when a call is
    /// required or named) or the analysis (unless reasoning is disabled).
    /// Without parallel calls, at most one call, which ends the stream.
    fn messages(&self, tools: &[&Tool]) -> Value {
        let row = self.row;
        let opts = self.opts;
        let mut calls = Vec::new();
        for t in tools {
            let spec = if t.builtin {
                &row["builtin_call"]
            } else {
                &row["call"]
            };
            for b in strs(&spec["begins"]) {
                calls.push(json!({"type": "tag",
                    "begin": b.as_str().unwrap_or("").replace("{name}", &t.name),
                    "content": self.args(t), "end": s(spec, &["end"])}));
            }
        }
        let message = |m: &Value| {
            json!({"type": "tag", "begin": s(m, &["begin"]),
                "content": {"type": "any_text"}, "end": m["end"].clone()})
        };
        let mut others = Vec::new();
        if matches!(opts.choice, ToolChoice::Auto | ToolChoice::None) {
            others.push(message(&row["final"]));
        }
        if opts.reasoning != Reasoning::Disabled {
            others.push(message(&row["analysis"]));
        }
        let sep = s(row, &["separator"]);
        if opts.parallel_tool_calls || calls.is_empty() {
            let mut all = calls;
            all.extend(others);
            return json!({"type": "tags_with_separator", "tags": all, "separator": sep});
        }
        let one_call = json!({"type": "tags_with_separator", "tags": calls, "separator": sep,
            "at_least_one": true, "stop_after_first": true});
        if others.is_empty() {
            return json!({"type": "optional", "content": one_call});
        }
        json!({"type": "or", "elements": [
            {"type": "tags_with_separator", "tags": others, "separator": sep},
            one_call,
            {"type": "sequence", "elements": [
                {"type": "tags_with_separator", "tags": others, "separator": sep, "at_least_one": true},
                {"type": "const_string", "value": sep},
                one_call]}]})
    }
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

    fn recognizer(family: &str, tools: &[Tool], opts: &ToolCallOptions) -> Recognizer {
        let tag = tool_calling_format(family, tools, opts).unwrap();
        let g = compile_structural_tag(&tag, &StructTagOptions::default()).unwrap();
        Recognizer::new(&g).unwrap()
    }

    fn with(choice: ToolChoice, reasoning: Reasoning) -> ToolCallOptions {
        ToolCallOptions {
            choice,
            reasoning,
            ..ToolCallOptions::default()
        }
    }

    #[test]
    fn deepseek_r1_code_blocks() {
        let r = recognizer(
            "deepseek_r1",
            &[weather()],
            &with(ToolChoice::Auto, Reasoning::Enabled),
        );
        let call = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>";
        let one = format!("<｜tool▁calls▁begin｜>{call}<｜tool▁calls▁end｜>");
        let two = format!("<｜tool▁calls▁begin｜>{call}\n{call}<｜tool▁calls▁end｜>");
        let glued = format!("<｜tool▁calls▁begin｜>{call}{call}<｜tool▁calls▁end｜>");
        assert!(r.recognizes(format!("hm</think>Sure. {one}").as_bytes()));
        assert!(r.recognizes(format!("hm</think>{two}").as_bytes()));
        assert!(!r.recognizes(format!("hm</think>{glued}").as_bytes()));
        assert!(!r.recognizes(format!("hm</think>{}", one.replace("```json\n", "")).as_bytes()));
    }

    #[test]
    fn cohere_calls() {
        let r = recognizer(
            "cohere",
            &[weather()],
            &with(ToolChoice::Required, Reasoning::Disabled),
        );
        let call = "<cofl:tool_call id=\"0\" name=\"get_weather\"><cofl:value name=\"city\" type=\"raw\">Paris</cofl:value></cofl:tool_call>";
        assert!(r.recognizes(format!("<cofl:tool_calls>{call}{call}</cofl:tool_calls>").as_bytes()));
        assert!(
            !r.recognizes(format!("Sure. <cofl:tool_calls>{call}</cofl:tool_calls>").as_bytes())
        );
        assert!(!r.recognizes(
            format!(
                "<cofl:tool_calls>{}</cofl:tool_calls>",
                call.replace("raw", "json")
            )
            .as_bytes()
        ));
    }

    #[test]
    fn kimi_k3_blocks() {
        let call = "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>";
        let end = "<|close|>message<|sep|>";
        let r = recognizer(
            "kimi_k3",
            &[weather()],
            &with(ToolChoice::Auto, Reasoning::Enabled),
        );
        let think = "hm<|close|>think<|sep|><|open|>response<|sep|>ok<|close|>response<|sep|>";
        assert!(r.recognizes(format!("{think}{end}").as_bytes()));
        assert!(r.recognizes(format!("{think}{call}{end}").as_bytes()));
        assert!(!r.recognizes(format!("{think}{call}").as_bytes()));
        let r = recognizer(
            "kimi_k3",
            &[weather()],
            &with(ToolChoice::Required, Reasoning::Disabled),
        );
        assert!(r.recognizes(format!("ok<|close|>response<|sep|>{call}{end}").as_bytes()));
        assert!(!r.recognizes(format!("ok<|close|>response<|sep|>{end}").as_bytes()));
    }

    #[test]
    fn harmony_messages() {
        let search = Tool::builtin(
            "browser.search",
            json!({"type": "object", "properties": {"query": {"type": "string"}}}),
        );
        let tools = [weather(), search];
        let r = recognizer(
            "harmony",
            &tools,
            &with(ToolChoice::Auto, Reasoning::Enabled),
        );
        let analysis = "<|channel|>analysis<|message|>hm<|end|>";
        let call = "<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
        let alt = " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>";
        let browse =
            "<|channel|>commentary to=browser.search code<|message|>{\"query\": \"q\"}<|call|>";
        let fin = "<|channel|>final<|message|>Sunny.<|return|>";
        for ok in [
            format!("{analysis}<|start|>assistant{call}"),
            format!("{alt}<|start|>assistant{fin}"),
            browse.to_string(),
        ] {
            assert!(r.recognizes(ok.as_bytes()), "{ok}");
        }
        assert!(!r.recognizes(format!("{analysis}{call}").as_bytes()));
        assert!(!r.recognizes(browse.replace("code", "json").as_bytes()));
        // one call at most, and it ends the turn
        let one = ToolCallOptions {
            parallel_tool_calls: false,
            ..with(ToolChoice::Auto, Reasoning::Disabled)
        };
        let r = recognizer("harmony", &tools, &one);
        assert!(r.recognizes(format!("{fin}<|start|>assistant{call}").as_bytes()));
        assert!(!r.recognizes(format!("{call}<|start|>assistant{browse}").as_bytes()));
        assert!(!r.recognizes(format!("{call}<|start|>assistant{fin}").as_bytes()));
        assert!(!r.recognizes(analysis.as_bytes()));
    }

    #[test]
    fn builtin_tools_only_where_written() {
        let search = Tool::builtin("browser.search", json!(true));
        let named = with(
            ToolChoice::Named("browser.search".into()),
            Reasoning::Disabled,
        );
        let e = tool_calling_format("llama", std::slice::from_ref(&search), &named).unwrap_err();
        assert_eq!(e.pointer(), "/tool_choice");
        let required = with(ToolChoice::Required, Reasoning::Disabled);
        assert!(tool_calling_format("qwen_3", std::slice::from_ref(&search), &required).is_err());
        // left out of an auto turn: free text only, the trigger no longer
        // starting a call
        let r = recognizer(
            "llama",
            &[search],
            &with(ToolChoice::Auto, Reasoning::Disabled),
        );
        assert!(r.recognizes(b"{\"name\": 1}"));
        let r = recognizer(
            "llama",
            &[weather()],
            &with(ToolChoice::Auto, Reasoning::Disabled),
        );
        assert!(!r.recognizes(b"{\"name\": 1}"));
    }

    #[test]
    fn refusals() {
        let e = tool_calling_format("nope", &[], &ToolCallOptions::default()).unwrap_err();
        assert!(e.to_string().contains("Unknown format type"));
        let e = tool_calling_format("minimax_m3", &[], &ToolCallOptions::default()).unwrap_err();
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
