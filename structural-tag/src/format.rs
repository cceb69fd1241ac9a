//! The typed form of a structural tag: [`Format`], parsed once from JSON
//! ([`parse_structural_tag`], [`parse_format`]) with every field checked
//! and every refusal at its JSON pointer. Field names, defaults and
//! checks are XGrammar's structural-tag format (its documentation, "Format
//! Reference"); an unknown field is refused rather than ignored, so a
//! newer format's field is never silently dropped.

use serde_json::{Map, Value};

use crate::error::StructTagError;

/// The largest count or budget a format may give (XGrammar's bound, the
/// non-negative 32-bit integers).
pub const MAX_COUNT: u64 = 2_147_483_647;

/// A token named by id or by its text (resolved with a vocabulary).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TokenRef {
    /// A token id.
    Id(i64),
    /// A token's text.
    Text(String),
}

/// How a `json_schema` body is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JsonStyle {
    /// Plain JSON.
    Json,
    /// One of the XML parameter styles of XGrammar (`qwen_xml`, …), by name.
    Xml(&'static str),
}

/// The XML parameter styles XGrammar names (refused when lowered).
pub const XML_STYLES: &[&str] = &[
    "qwen_xml",
    "minimax_xml",
    "minimax_m3_xml",
    "deepseek_xml",
    "deepseek_v4_1_xml",
    "glm_xml",
    "cohere_xml",
    "kimi_k3_xml",
];

/// A `json_schema` format.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonSchemaFormat {
    /// The schema (an object or a boolean).
    pub json_schema: Value,
    /// How it is written.
    pub style: JsonStyle,
    /// Object properties in any order.
    pub any_order: bool,
    /// At most this many whitespace characters in a row.
    pub max_whitespace_cnt: Option<u64>,
    /// Substrings forbidden in string values (refused when non-empty).
    pub excludes: Vec<String>,
}

/// The end of a `tag`.
#[derive(Clone, Debug, PartialEq)]
pub enum TagEnd {
    /// Any one of these strings (one at least; an empty string ends at once).
    Strings(Vec<String>),
    /// One token.
    Token(TokenRef),
}

/// The begin of a `tag`.
#[derive(Clone, Debug, PartialEq)]
pub enum TagBegin {
    /// A string.
    String(String),
    /// One token.
    Token(TokenRef),
}

/// `begin + content + end`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tag {
    /// The opening delimiter.
    pub begin: TagBegin,
    /// What is between.
    pub content: Box<Format>,
    /// The closing delimiter.
    pub end: TagEnd,
}

/// One format object of a structural tag.
#[derive(Clone, Debug, PartialEq)]
pub enum Format {
    /// `const_string`: exactly `value`.
    ConstString(String),
    /// `json_schema`.
    JsonSchema(JsonSchemaFormat),
    /// `grammar`: EBNF text (GBNF), its `root` rule.
    Grammar(String),
    /// `regex`: an ECMAScript pattern, fully matched.
    Regex(String),
    /// `any_text`: text containing none of `excludes` (nor the enclosing
    /// tag's end strings).
    AnyText {
        /// Strings the text must not contain.
        excludes: Vec<String>,
        /// A budget of tokens (refused when lowered).
        max_tokens: Option<u64>,
        /// A budget of characters.
        max_chars: Option<u64>,
    },
    /// `sequence`: the elements in order.
    Sequence(Vec<Format>),
    /// `or`: one of the elements.
    Or(Vec<Format>),
    /// `optional`: the content or nothing.
    Optional(Box<Format>),
    /// `plus`: the content one or more times.
    Plus(Box<Format>),
    /// `star`: the content any number of times.
    Star(Box<Format>),
    /// `repeat`: the content `min..=max` times (`max` `None`: unbounded).
    Repeat {
        /// Fewest repetitions.
        min: u64,
        /// Most repetitions, or unbounded.
        max: Option<u64>,
        /// What is repeated.
        content: Box<Format>,
    },
    /// `tag`.
    Tag(Tag),
    /// `triggered_tags`: free text; where a trigger appears, one of the
    /// tags whose begin starts with it; then free text again.
    TriggeredTags {
        /// The strings that start a tag.
        triggers: Vec<String>,
        /// The tags (string begins, each starting with one trigger).
        tags: Vec<Tag>,
        /// At least one tag, and no text before the first.
        at_least_one: bool,
        /// Done after the first tag.
        stop_after_first: bool,
        /// Strings the free text must not contain.
        excludes: Vec<String>,
    },
    /// `tags_with_separator`: tags separated by `separator`, nothing else.
    TagsWithSeparator {
        /// The tags.
        tags: Vec<Tag>,
        /// Between two tags.
        separator: String,
        /// At least one tag.
        at_least_one: bool,
        /// At most one tag.
        stop_after_first: bool,
    },
    /// `dispatch`: free text; where a pattern appears, its format follows.
    Dispatch {
        /// Each pattern and the format after it.
        rules: Vec<(String, Format)>,
        /// Free text again after a dispatched format (else done).
        looped: bool,
        /// Strings the free text must not contain.
        excludes: Vec<String>,
    },
    /// A token-level format (`token`, `exclude_token`, `any_tokens`,
    /// `token_triggered_tags`, `token_dispatch`), by type name: parsed,
    /// refused when lowered.
    TokenLevel(&'static str),
}

/// The fields of one JSON object, each taken once; what is left over is
/// an unknown field.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    ptr: &'a str,
    what: &'static str,
    taken: Vec<&'static str>,
}

/// `ptr` extended by `key` (RFC 6901: `~` and `/` escaped).
pub(crate) fn child(ptr: &str, key: &str) -> String {
    format!("{ptr}/{}", key.replace('~', "~0").replace('/', "~1"))
}

impl<'a> Fields<'a> {
    fn new(v: &'a Value, ptr: &'a str, what: &'static str) -> Result<Self, StructTagError> {
        let obj = v
            .as_object()
            .ok_or_else(|| StructTagError::invalid(ptr, format!("{what} must be an object")))?;
        Ok(Self {
            obj,
            ptr,
            what,
            taken: vec!["type"],
        })
    }

    fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.taken.push(key);
        self.obj.get(key).filter(|v| !v.is_null())
    }

    /// The field `key`, or `missing` (XGrammar's message) without it.
    fn required(&mut self, key: &'static str, missing: &str) -> Result<&'a Value, StructTagError> {
        self.get(key)
            .ok_or_else(|| StructTagError::invalid(self.ptr, missing))
    }

    /// A string field; `bad`: the message when it is missing or no string.
    fn string(&mut self, key: &'static str, bad: &str) -> Result<String, StructTagError> {
        let ptr = self.ptr;
        match self.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(StructTagError::invalid(&child(ptr, key), bad)),
            None => Err(StructTagError::invalid(ptr, bad)),
        }
    }

    fn boolean(&mut self, key: &'static str, default: bool) -> Result<bool, StructTagError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| {
                StructTagError::invalid(&child(self.ptr, key), format!("{key} must be a boolean"))
            }),
        }
    }

    fn count(&mut self, key: &'static str) -> Result<Option<u64>, StructTagError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n <= MAX_COUNT => Ok(Some(n)),
                _ => Err(StructTagError::invalid(
                    &child(self.ptr, key),
                    format!("{key} must be null or a non-negative 32-bit integer"),
                )),
            },
        }
    }

    fn strings(
        &mut self,
        key: &'static str,
        non_empty: bool,
    ) -> Result<Vec<String>, StructTagError> {
        let Some(v) = self.get(key) else {
            return Ok(Vec::new());
        };
        let p = child(self.ptr, key);
        let arr = v.as_array().ok_or_else(|| {
            StructTagError::invalid(&p, format!("{key} must be an array of strings"))
        })?;
        arr.iter()
            .enumerate()
            .map(|(i, s)| match s.as_str() {
                Some(s) if !(non_empty && s.is_empty()) => Ok(s.to_string()),
                _ => Err(StructTagError::invalid(
                    &child(&p, &i.to_string()),
                    format!(
                        "{key} must contain {}strings",
                        if non_empty { "non-empty " } else { "" }
                    ),
                )),
            })
            .collect()
    }

    /// An array field; `bad`: the message when it is missing or no array.
    fn array(&mut self, key: &'static str, bad: &str) -> Result<&'a Vec<Value>, StructTagError> {
        let ptr = self.ptr;
        match self.get(key) {
            Some(Value::Array(a)) => Ok(a),
            Some(_) => Err(StructTagError::invalid(&child(ptr, key), bad)),
            None => Err(StructTagError::invalid(ptr, bad)),
        }
    }

    /// Refuses the fields nobody took.
    fn done(self) -> Result<(), StructTagError> {
        for k in self.obj.keys() {
            if !self.taken.contains(&k.as_str()) {
                return Err(StructTagError::invalid(
                    &child(self.ptr, k),
                    format!("{} has no field {k:?}", self.what),
                ));
            }
        }
        Ok(())
    }
}

/// A whole structural tag, `{"type": "structural_tag", "format": …}`.
pub fn parse_structural_tag(v: &Value) -> Result<Format, StructTagError> {
    let mut f = Fields::new(v, "", "Structural tag")?;
    match f.obj.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "structural_tag" => {}
        Some(_) => {
            return Err(StructTagError::invalid(
                "/type",
                "Structural tag's type must be a string \"structural_tag\"",
            ))
        }
    }
    let format = f.required("format", "Structural tag must have a format field")?;
    f.done()?;
    parse_format(format, "/format")
}

fn token_ref(v: &Value, ptr: &str) -> Result<TokenRef, StructTagError> {
    match v {
        Value::String(s) => Ok(TokenRef::Text(s.clone())),
        Value::Number(n) => n
            .as_i64()
            .map(TokenRef::Id)
            .ok_or_else(|| StructTagError::invalid(ptr, "a token id must be an integer")),
        _ => Err(StructTagError::invalid(
            ptr,
            "a token must be an integer id or a string",
        )),
    }
}

fn boxed(f: &mut Fields<'_>, key: &'static str) -> Result<Box<Format>, StructTagError> {
    let missing = format!("{} must have a {key} field", f.what);
    let v = f.required(key, &missing)?;
    Ok(Box::new(parse_format(v, &child(f.ptr, key))?))
}

fn elements(f: &mut Fields<'_>) -> Result<Vec<Format>, StructTagError> {
    let what = f.what;
    let arr = f.array(
        "elements",
        &format!("{what} must have an elements field with an array"),
    )?;
    if arr.is_empty() {
        return Err(StructTagError::invalid(
            f.ptr,
            format!("{what} must have at least one element"),
        ));
    }
    let p = child(f.ptr, "elements");
    arr.iter()
        .enumerate()
        .map(|(i, e)| parse_format(e, &child(&p, &i.to_string())))
        .collect()
}

fn tags(f: &mut Fields<'_>) -> Result<Vec<Tag>, StructTagError> {
    let what = f.what;
    let arr = f.array(
        "tags",
        &format!("{what} must have a tags field with an array"),
    )?;
    if arr.is_empty() {
        return Err(StructTagError::invalid(
            f.ptr,
            format!("{what}'s tags must be non-empty"),
        ));
    }
    let p = child(f.ptr, "tags");
    arr.iter()
        .enumerate()
        .map(|(i, t)| parse_tag(t, &child(&p, &i.to_string())))
        .collect()
}

/// A `tag` object (its `type` may be left out where only tags can stand).
pub fn parse_tag(v: &Value, ptr: &str) -> Result<Tag, StructTagError> {
    let mut f = Fields::new(v, ptr, "Tag format")?;
    match f.obj.get("type") {
        None => {}
        Some(Value::String(t)) if t == "tag" => {}
        Some(_) => {
            return Err(StructTagError::invalid(
                &child(ptr, "type"),
                "Tag format's type must be a string \"tag\"",
            ))
        }
    }
    let begin = match f.required("begin", "Tag format's begin field must be a string")? {
        Value::String(s) => TagBegin::String(s.clone()),
        v @ Value::Object(_) => TagBegin::Token(token_format(v, &child(ptr, "begin"))?),
        _ => {
            return Err(StructTagError::invalid(
                &child(ptr, "begin"),
                "Tag format's begin field must be a string or a token format",
            ))
        }
    };
    let content = boxed(&mut f, "content")?;
    let end = match f.required("end", "Tag format must have an end field")? {
        Value::String(s) => TagEnd::Strings(vec![s.clone()]),
        Value::Array(a) => {
            if a.is_empty() {
                return Err(StructTagError::invalid(
                    &child(ptr, "end"),
                    "Tag format's end array cannot be empty",
                ));
            }
            let mut ends = Vec::with_capacity(a.len());
            for (i, s) in a.iter().enumerate() {
                let s = s.as_str().ok_or_else(|| {
                    StructTagError::invalid(
                        &child(&child(ptr, "end"), &i.to_string()),
                        "Tag format's end array must contain only strings",
                    )
                })?;
                ends.push(s.to_string());
            }
            TagEnd::Strings(ends)
        }
        v @ Value::Object(_) => TagEnd::Token(token_format(v, &child(ptr, "end"))?),
        _ => {
            return Err(StructTagError::invalid(
                &child(ptr, "end"),
                "Tag format's end field must be a string or array of strings",
            ))
        }
    };
    f.done()?;
    Ok(Tag {
        begin,
        content,
        end,
    })
}

/// A `{"type": "token", "token": …}` object.
fn token_format(v: &Value, ptr: &str) -> Result<TokenRef, StructTagError> {
    let mut f = Fields::new(v, ptr, "Token format")?;
    if f.obj.get("type").and_then(Value::as_str) != Some("token") {
        return Err(StructTagError::invalid(
            ptr,
            "a tag's begin or end must be a string or a token format",
        ));
    }
    let t = f.required("token", "Token format must have a token field")?;
    let t = token_ref(t, &child(ptr, "token"))?;
    f.done()?;
    Ok(t)
}

/// One format object at `ptr`.
pub fn parse_format(v: &Value, ptr: &str) -> Result<Format, StructTagError> {
    let obj = v
        .as_object()
        .ok_or_else(|| StructTagError::invalid(ptr, "Format must be an object"))?;
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(_) => {
            return Err(StructTagError::invalid(
                &child(ptr, "type"),
                "Format's type must be a string",
            ))
        }
        None => {
            return Err(StructTagError::invalid(
                ptr,
                format!("Invalid format: {v} has no type field"),
            ))
        }
    };
    let format = match ty {
        "const_string" => {
            let mut f = Fields::new(v, ptr, "ConstString format")?;
            let value = f.string(
                "value",
                "ConstString format must have a value field with a string",
            )?;
            f.done()?;
            Format::ConstString(value)
        }
        "json_schema" | "qwen_xml_parameter" => {
            let mut f = Fields::new(v, ptr, "JSON schema format")?;
            const BAD: &str =
                "JSON schema format must have a json_schema field with a object or boolean value";
            let schema = f.required("json_schema", BAD)?;
            if !(schema.is_object() || schema.is_boolean()) {
                return Err(StructTagError::invalid(&child(ptr, "json_schema"), BAD));
            }
            let style = if ty == "qwen_xml_parameter" {
                JsonStyle::Xml("qwen_xml")
            } else {
                match f.get("style") {
                    None => JsonStyle::Json,
                    Some(Value::String(s)) if s == "json" => JsonStyle::Json,
                    Some(Value::String(s)) if XML_STYLES.contains(&s.as_str()) => {
                        JsonStyle::Xml(XML_STYLES.iter().find(|x| **x == s).expect("listed"))
                    }
                    Some(_) => {
                        return Err(StructTagError::invalid(
                            &child(ptr, "style"),
                            format!(
                                "style must be \"json\", {}",
                                XML_STYLES
                                    .iter()
                                    .map(|x| format!("\"{x}\""))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        ))
                    }
                }
            };
            let any_order = f.boolean("any_order", false)?;
            let max_whitespace_cnt = f.count("max_whitespace_cnt")?;
            let excludes = f.strings("excludes", true)?;
            f.done()?;
            Format::JsonSchema(JsonSchemaFormat {
                json_schema: schema.clone(),
                style,
                any_order,
                max_whitespace_cnt,
                excludes,
            })
        }
        "grammar" => {
            let mut f = Fields::new(v, ptr, "Grammar format")?;
            const BAD: &str = "Grammar format must have a grammar field with a non-empty string";
            let g = f.string("grammar", BAD)?;
            if g.trim().is_empty() {
                return Err(StructTagError::invalid(&child(ptr, "grammar"), BAD));
            }
            f.done()?;
            Format::Grammar(g)
        }
        "regex" => {
            let mut f = Fields::new(v, ptr, "Regex format")?;
            const BAD: &str = "Regex format must have a pattern field with a non-empty string";
            let p = f.string("pattern", BAD)?;
            if p.is_empty() {
                return Err(StructTagError::invalid(&child(ptr, "pattern"), BAD));
            }
            f.done()?;
            Format::Regex(p)
        }
        "any_text" => {
            let mut f = Fields::new(v, ptr, "AnyText format")?;
            let excludes = f.strings("excludes", false)?;
            let max_tokens = f.count("max_tokens")?;
            let max_chars = f.count("max_chars")?;
            f.done()?;
            Format::AnyText {
                excludes,
                max_tokens,
                max_chars,
            }
        }
        "sequence" => {
            let mut f = Fields::new(v, ptr, "Sequence format")?;
            let e = elements(&mut f)?;
            f.done()?;
            Format::Sequence(e)
        }
        "or" => {
            let mut f = Fields::new(v, ptr, "Or format")?;
            let e = elements(&mut f)?;
            f.done()?;
            Format::Or(e)
        }
        "optional" | "plus" | "star" => {
            let mut f = Fields::new(
                v,
                ptr,
                match ty {
                    "optional" => "Optional format",
                    "plus" => "Plus format",
                    _ => "Star format",
                },
            )?;
            let c = boxed(&mut f, "content")?;
            f.done()?;
            match ty {
                "optional" => Format::Optional(c),
                "plus" => Format::Plus(c),
                _ => Format::Star(c),
            }
        }
        "repeat" => {
            let mut f = Fields::new(v, ptr, "Repeat format")?;
            let int = |f: &mut Fields<'_>, k: &'static str| -> Result<i64, StructTagError> {
                f.required(k, &format!("Repeat format must have a {k} field (number)"))?
                    .as_i64()
                    .ok_or_else(|| {
                        StructTagError::invalid(
                            &child(ptr, k),
                            format!("Repeat {k} must be an integer"),
                        )
                    })
            };
            let min = int(&mut f, "min")?;
            let max = int(&mut f, "max")?;
            if min < 0 {
                return Err(StructTagError::invalid(
                    &child(ptr, "min"),
                    "Repeat min must be >= 0",
                ));
            }
            if max < -1 {
                return Err(StructTagError::invalid(
                    &child(ptr, "max"),
                    "Repeat max must be -1 (unbounded) or >= 0",
                ));
            }
            if max != -1 && min > max {
                return Err(StructTagError::invalid(ptr, "Repeat min must be <= max"));
            }
            if min as u64 > MAX_COUNT || (max >= 0 && max as u64 > MAX_COUNT) {
                return Err(StructTagError::invalid(
                    ptr,
                    "Repeat bounds must be non-negative 32-bit integers",
                ));
            }
            let content = boxed(&mut f, "content")?;
            f.done()?;
            Format::Repeat {
                min: min as u64,
                max: (max >= 0).then_some(max as u64),
                content,
            }
        }
        "tag" => Format::Tag(parse_tag(v, ptr)?),
        "triggered_tags" => {
            let mut f = Fields::new(v, ptr, "Triggered tags format")?;
            let arr = f.array(
                "triggers",
                "Triggered tags format must have a triggers field with an array",
            )?;
            let mut triggers = Vec::with_capacity(arr.len());
            for (i, t) in arr.iter().enumerate() {
                match t.as_str() {
                    Some(t) if !t.is_empty() => triggers.push(t.to_string()),
                    _ => {
                        return Err(StructTagError::invalid(
                            &child(&child(ptr, "triggers"), &i.to_string()),
                            "Triggered tags format's triggers must be non-empty strings",
                        ))
                    }
                }
            }
            if triggers.is_empty() {
                return Err(StructTagError::invalid(
                    &child(ptr, "triggers"),
                    "Triggered tags format's triggers must be non-empty",
                ));
            }
            let tags = tags(&mut f)?;
            let at_least_one = f.boolean("at_least_one", false)?;
            let stop_after_first = f.boolean("stop_after_first", false)?;
            let excludes = f.strings("excludes", true)?;
            f.done()?;
            Format::TriggeredTags {
                triggers,
                tags,
                at_least_one,
                stop_after_first,
                excludes,
            }
        }
        "tags_with_separator" => {
            let mut f = Fields::new(v, ptr, "Tags with separator format")?;
            let tags = tags(&mut f)?;
            let separator = f.string(
                "separator",
                "Tags with separator format's separator field must be a string",
            )?;
            let at_least_one = f.boolean("at_least_one", false)?;
            let stop_after_first = f.boolean("stop_after_first", false)?;
            f.done()?;
            Format::TagsWithSeparator {
                tags,
                separator,
                at_least_one,
                stop_after_first,
            }
        }
        "dispatch" => {
            let mut f = Fields::new(v, ptr, "Dispatch format")?;
            let arr = f.array(
                "rules",
                "Dispatch format must have a rules field with an array",
            )?;
            if arr.is_empty() {
                return Err(StructTagError::invalid(
                    &child(ptr, "rules"),
                    "a dispatch format's rules must be non-empty",
                ));
            }
            let rp = child(ptr, "rules");
            let mut rules = Vec::with_capacity(arr.len());
            for (i, r) in arr.iter().enumerate() {
                let p = child(&rp, &i.to_string());
                let pair = r.as_array().filter(|a| a.len() == 2).ok_or_else(|| {
                    StructTagError::invalid(&p, "a dispatch rule must be a 2-element array")
                })?;
                let pat = pair[0].as_str().filter(|s| !s.is_empty()).ok_or_else(|| {
                    StructTagError::invalid(
                        &child(&p, "0"),
                        "a dispatch rule's first element must be a non-empty string",
                    )
                })?;
                rules.push((pat.to_string(), parse_format(&pair[1], &child(&p, "1"))?));
            }
            let looped = f.boolean("loop", true)?;
            let excludes = f.strings("excludes", true)?;
            f.done()?;
            Format::Dispatch {
                rules,
                looped,
                excludes,
            }
        }
        "token" => Format::TokenLevel("token"),
        "exclude_token" => Format::TokenLevel("exclude_token"),
        "any_tokens" => Format::TokenLevel("any_tokens"),
        "token_triggered_tags" => Format::TokenLevel("token_triggered_tags"),
        "token_dispatch" => Format::TokenLevel("token_dispatch"),
        other => {
            return Err(StructTagError::invalid(
                &child(ptr, "type"),
                format!("Format type not recognized: {other}"),
            ))
        }
    };
    Ok(format)
}
