//! # zapspec-structtag
//!
//! Structural tags — XGrammar's format for tool calls, reasoning sections
//! and free text mixed with structured regions — compiled onto the
//! zapspec-grammar IR, which the Earley engine (`zapspec-earley`) then
//! compiles for a vocabulary like any other grammar.
//!
//! A structural tag is a tree of formats (XGrammar's documentation,
//! "Structural Tag Usage"): primitives (`const_string`, `json_schema`,
//! `grammar`, `regex`, `any_text`), compositions (`sequence`, `or`,
//! `optional`, `plus`, `star`, `repeat`) and tagging / dispatch (`tag`,
//! `triggered_tags`, `tags_with_separator`, `dispatch`).
//!
//! ## Entry points
//!
//! * [`compile_structural_tag`]: JSON (`{"type": "structural_tag",
//!   "format": …}`) → [`Grammar`], in one call.
//! * [`parse_structural_tag`] / [`parse_format`]: JSON → the typed
//!   [`Format`] tree, every field checked, refusals at a JSON pointer.
//! * [`StructTagCompiler`]: [`Format`] → [`Grammar`], keeping the
//!   compiled JSON Schemas of earlier requests (a server sees the same
//!   tools again and again).
//!
//! | module | what | when to use it |
//! |---|---|---|
//! | [`builtin`] | model families' tool-call formats as data (`families.json`), [`tool_calling_format`] | to constrain a model to its own tool-call syntax |
//! | [`format`](mod@format) | the typed tree and its parser | to build or inspect a structural tag in Rust |
//! | [`lower`] | formats → rules (the table of what each becomes is there) | to compile |
//! | [`error`] | [`StructTagError`], with the JSON pointer of the refused part | |
//!
//! ## Free text
//!
//! Text until a trigger (`triggered_tags`, `dispatch`) or until a tag's
//! end (`any_text` inside a `tag`) is the language of strings that avoid
//! a set of strings: [`zapspec_grammar::avoid::avoiding`] writes it as one
//! `Terminal::Avoid`, which the Earley engine builds as the product of a
//! UTF-8 automaton with the strings' Aho–Corasick automaton. A token
//! inside free text is therefore classified by the engine's
//! context-independent mask cache, keyed by the automaton's state; a cold
//! entry is built from the tokens the strings forbid (those containing a
//! trigger or an excluded string, and in a state after a partial trigger
//! those that complete it), not by a walk of the vocabulary, and a warm
//! mask costs a copy of the cached set plus a parse of those few tokens.

//! ## Not built (refused with [`StructTagError::Unsupported`])
//!
//! Token-level formats (`token`, `exclude_token`, `any_tokens`,
//! `token_triggered_tags`, `token_dispatch`, and `tag`s whose begin or end
//! is a token): the grammar IR is over bytes and names no token ids. Token
//! budgets (`any_text.max_tokens`), the XML parameter style
//! `minimax_m3_xml`, and `json_schema.excludes` on values written as JSON.
//! A character budget (`any_text.max_chars`) is built, as free text of at
//! most that many characters; its automaton grows with the budget times
//! the avoided strings' bytes, so a large budget meets the engine's
//! automaton limit (a typed error) rather than a counter: under
//! `</think>` alone, 3,000 characters compile and 10,000 are refused
//! (`tests/masks.rs`).
//!
//! ## XML parameter styles
//!
//! `json_schema` bodies are JSON (`style: "json"`) or, for tool calls whose
//! arguments are written as one element per parameter, one of XGrammar's
//! XML styles: `qwen_xml` (`<parameter=key>value</parameter>`),
//! `minimax_xml`, `deepseek_xml`, `deepseek_v4_1_xml`, `glm_xml`,
//! `kimi_k3_xml` and `cohere_xml`. String values are raw text, other values
//! JSON (Cohere's objects and arrays nested elements); `excludes` applies
//! to the raw strings (and removes `const` / `enum` values containing an
//! excluded string; `cohere_xml` refuses it, as XGrammar does). The language, and the XGrammar choices
//! kept although debatable, are in the module docs of `xml.rs` (private).

pub mod builtin;
pub mod error;
pub mod format;
pub mod lower;
mod xml;

pub use builtin::{tool_calling_format, Reasoning, Tool, ToolCallOptions, ToolChoice};
pub use error::StructTagError;
pub use format::{
    parse_format, parse_structural_tag, Format, JsonSchemaFormat, Tag, TagBegin, TagEnd,
};
pub use lower::{LowerReport, StructTagCompiler, StructTagOptions};
pub use zapspec_grammar::Grammar;

/// The grammar of a structural tag given as JSON (`{"type":
/// "structural_tag", "format": …}`), compiled with `opts` by a fresh
/// [`StructTagCompiler`].
///
/// ```
/// use serde_json::json;
/// use zapspec_grammar::Recognizer;
/// use zapspec_structtag::{compile_structural_tag, StructTagOptions};
///
/// let tag = json!({"type": "structural_tag", "format": {
///     "type": "triggered_tags",
///     "triggers": ["<tool_call>"],
///     "tags": [{"begin": "<tool_call>", "content": {"type": "json_schema",
///         "json_schema": {"type": "object", "properties": {"city": {"type": "string"}},
///                         "required": ["city"]}}, "end": "</tool_call>"}]}});
/// let g = compile_structural_tag(&tag, &StructTagOptions::default()).unwrap();
/// let r = Recognizer::new(&g).unwrap();
/// assert!(r.recognizes(br#"Let me check. <tool_call>{"city":"Paris"}</tool_call> Done."#));
/// assert!(!r.recognizes(br#"<tool_call>{"town":"Paris"}</tool_call>"#));
/// ```
pub fn compile_structural_tag(
    value: &serde_json::Value,
    opts: &StructTagOptions,
) -> Result<Grammar, StructTagError> {
    let format = parse_structural_tag(value)?;
    StructTagCompiler::new(opts.clone())
        .lower(&format)
        .map(|(g, _)| g)
}

#[cfg(test)]
mod tests;
