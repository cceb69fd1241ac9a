//! [`Format`] → grammar IR.
//!
//! Each format becomes one nonterminal:
//!
//! | format | rules |
//! |---|---|
//! | `const_string` | the literal (ε when empty) |
//! | `json_schema` | the JSON Schema compiler's grammar, embedded; identical schemas (same text, same options) share one copy, within a request and across the requests of one [`StructTagCompiler`] |
//! | `grammar`, `regex` | the GBNF grammar (rule `root`, else the first rule) embedded; the ECMAScript pattern as one regex terminal |
//! | `any_text` | text avoiding its `excludes` and the enclosing tag's end strings ([`zapspec_grammar::avoid::avoiding`]); with `max_chars`, of at most that many characters ([`zapspec_grammar::avoid::avoiding_at_most`]); `max_tokens` is refused |
//! | `sequence`, `or`, `optional`, `plus`, `star`, `repeat` | concatenation, alternatives, `X | ε`, `X X*`, `X*`, `X^min (X | ε)^(max−min)` |
//! | `tag` | `begin content end`, `end` one of the end strings |
//! | `triggered_tags` | `F (T F)*`: `F` text avoiding the triggers, the excludes and the enclosing end strings; `T` a trigger followed by the rest of one of its tags; `at_least_one`: a whole tag first; `stop_after_first`: `F T?` |
//! | `tags_with_separator` | `tag (sep tag)*`, or nothing unless `at_least_one`; `stop_after_first`: one tag |
//! | `dispatch` | `F (p X F)*` with `F` avoiding the patterns (and excludes, and end strings); `loop: false`: `F (p X)?` |
//!
//! End detection follows XGrammar: free text (`any_text`, `triggered_tags`,
//! `dispatch`) anywhere inside a `tag` avoids the nearest enclosing tag's
//! end strings, so `tag("<think>", any_text, "</think>")` ends at the
//! first `</think>`.
//!
//! Choices where XGrammar's documentation is silent or ambiguous, listed:
//! a trigger that is a prefix of another trigger, and an `excludes`
//! string contained in a trigger, are refused (the first makes every tag
//! of the longer trigger match two triggers; the second forbids the
//! trigger itself); `repeat` writes at most
//! [`StructTagOptions::max_repeat`] copies of its content's nonterminal.

use std::sync::Arc;

use rustc_hash::FxHashMap;
use zapspec_grammar::avoid::{avoiding, avoiding_at_most};
use zapspec_grammar::{Grammar, NtId, Symbol, Terminal};
use zapspec_jsonschema::{
    compile_json_schema_report, JsonSchemaOptions, PropertyOrder, Whitespace,
};

use crate::error::StructTagError;
use crate::format::{child, Format, JsonSchemaFormat, JsonStyle, Tag, TagBegin, TagEnd};

/// Options of the structural-tag compiler.
#[derive(Clone, Debug)]
pub struct StructTagOptions {
    /// The options `json_schema` bodies are compiled with (a format's
    /// `any_order` and `max_whitespace_cnt` override theirs; the default:
    /// [`StructTagOptions::default`]).
    pub json: JsonSchemaOptions,
    /// Most repetitions one `repeat` may write out (`min`, or `max` when
    /// bounded).
    pub max_repeat: u64,
    /// Most compiled JSON Schemas a [`StructTagCompiler`] keeps for later
    /// requests (least recently used dropped first; 0: none kept).
    pub schema_cache_entries: usize,
}

impl Default for StructTagOptions {
    /// JSON bodies as XGrammar's structural tags compile them — any
    /// whitespace between tokens (models write `{"city": "Paris"}`),
    /// objects closed where they declare properties (`strict_mode`) — with
    /// strings of any length as one counted terminal, and zapspec's exact
    /// `oneOf`.
    fn default() -> Self {
        Self {
            json: JsonSchemaOptions {
                whitespace: Whitespace::Flexible { max_ws: usize::MAX },
                closed_objects: true,
                max_regex_repeat: zapspec_jsonschema::EARLEY_MAX_REGEX_REPEAT,
                ..JsonSchemaOptions::default()
            },
            max_repeat: 4096,
            schema_cache_entries: 1024,
        }
    }
}

/// Compiles structural tags, keeping the grammars of the JSON Schemas it
/// has compiled (tools' parameter schemas recur across requests) up to
/// [`StructTagOptions::schema_cache_entries`].
#[derive(Debug, Default)]
pub struct StructTagCompiler {
    opts: StructTagOptions,
    schemas: FxHashMap<String, CachedSchema>,
    clock: u64,
}

/// What one compilation did besides its grammar.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LowerReport {
    /// JSON Schema bodies compiled by the JSON Schema compiler.
    pub schemas_compiled: usize,
    /// JSON Schema bodies taken from an earlier compilation (this request
    /// or an earlier one).
    pub schemas_reused: usize,
    /// The JSON Schema compiler's relaxations, at the pointer of their
    /// `json_schema` format followed by the pointer inside the schema.
    pub warnings: Vec<(String, String)>,
}

impl StructTagCompiler {
    /// A compiler with these options.
    pub fn new(opts: StructTagOptions) -> Self {
        Self {
            opts,
            ..Self::default()
        }
    }

    /// The options.
    pub fn options(&self) -> &StructTagOptions {
        &self.opts
    }

    /// JSON Schemas currently kept.
    pub fn cached_schemas(&self) -> usize {
        self.schemas.len()
    }

    /// The grammar of `format` (a parsed structural tag's format).
    pub fn lower(&mut self, format: &Format) -> Result<(Grammar, LowerReport), StructTagError> {
        let mut l = Lowerer {
            g: Grammar::new(),
            c: self,
            report: LowerReport::default(),
            local: FxHashMap::default(),
        };
        let root = l.g.add_nonterminal("root");
        let top = l.visit(format, "/format", &[])?;
        l.g.add_rule(root, vec![Symbol::Nt(top)]);
        l.g.start = root;
        Ok((l.g, l.report))
    }

    fn schema(
        &mut self,
        key: String,
        value: &serde_json::Value,
        opts: &JsonSchemaOptions,
        ptr: &str,
        report: &mut LowerReport,
    ) -> Result<Arc<Grammar>, StructTagError> {
        self.clock += 1;
        if let Some((g, warnings, used)) = self.schemas.get_mut(&key) {
            *used = self.clock;
            report.schemas_reused += 1;
            report.warnings.extend(
                warnings
                    .iter()
                    .map(|(p, m)| (format!("{ptr}{p}"), m.clone())),
            );
            return Ok(g.clone());
        }
        let (g, rep) =
            compile_json_schema_report(value, opts).map_err(|source| StructTagError::Schema {
                pointer: ptr.to_string(),
                source,
            })?;
        report.schemas_compiled += 1;
        report.warnings.extend(
            rep.warnings
                .iter()
                .map(|(p, m)| (format!("{ptr}{p}"), m.clone())),
        );
        let g = Arc::new(g);
        let cap = self.opts.schema_cache_entries;
        if cap > 0 {
            if self.schemas.len() >= cap {
                if let Some(oldest) = self
                    .schemas
                    .iter()
                    .min_by_key(|(_, (_, _, used))| *used)
                    .map(|(k, _)| k.clone())
                {
                    self.schemas.remove(&oldest);
                }
            }
            self.schemas
                .insert(key, (g.clone(), rep.warnings.clone(), self.clock));
        }
        Ok(g)
    }
}

/// A compiled schema: its grammar, the compiler's warnings, when last used.
type CachedSchema = (Arc<Grammar>, Vec<(String, String)>, u64);

/// One compilation's state.
pub(crate) struct Lowerer<'c> {
    pub(crate) g: Grammar,
    c: &'c mut StructTagCompiler,
    report: LowerReport,
    /// Embedded schemas of this request by key: one copy each.
    local: FxHashMap<String, NtId>,
}

pub(crate) fn lit(s: &str) -> Vec<Symbol> {
    if s.is_empty() {
        Vec::new()
    } else {
        vec![Symbol::T(Terminal::Literal(s.as_bytes().to_vec()))]
    }
}

/// XGrammar's "unlimited" formats: those that can run on without an end
/// (free text, repetitions), which a tag must be able to end.
fn unlimited(f: &Format) -> bool {
    match f {
        Format::AnyText { .. }
        | Format::TriggeredTags { .. }
        | Format::Dispatch { .. }
        | Format::TagsWithSeparator { .. }
        | Format::Star(_)
        | Format::Plus(_)
        | Format::TokenLevel(_) => true,
        Format::Sequence(es) | Format::Or(es) => es.iter().any(|e| unlimited(e) && !excluded(e)),
        Format::Optional(c) => unlimited(c),
        Format::Repeat { max, content, .. } => {
            max.is_none() || (*max != Some(0) && unlimited(content))
        }
        _ => false,
    }
}

/// Free text with its own `excludes` (it ends where they begin).
fn excluded(f: &Format) -> bool {
    match f {
        Format::AnyText { excludes, .. }
        | Format::TriggeredTags { excludes, .. }
        | Format::Dispatch { excludes, .. } => !excludes.is_empty(),
        _ => false,
    }
}

impl Lowerer<'_> {
    pub(crate) fn nt(&mut self, name: &str, alternatives: Vec<Vec<Symbol>>) -> NtId {
        let n = self.g.add_nonterminal(name);
        for rhs in alternatives {
            self.g.add_rule(n, rhs);
        }
        n
    }

    /// The JSON Schema options of a `json_schema` format: the compiler's,
    /// with the format's `any_order` and `max_whitespace_cnt`.
    pub(crate) fn json_opts(&self, j: &JsonSchemaFormat) -> JsonSchemaOptions {
        let mut opts = self.c.opts.json.clone();
        if j.any_order {
            opts.property_order = PropertyOrder::Any;
        }
        if let (Some(n), Whitespace::Flexible { .. }) = (j.max_whitespace_cnt, &opts.whitespace) {
            opts.whitespace = Whitespace::Flexible {
                max_ws: usize::try_from(n).unwrap_or(usize::MAX),
            };
        }
        opts
    }

    /// The JSON Schema compiler's grammar of `schema`, embedded once per
    /// request (and kept by the compiler across requests); `ptr` is the
    /// schema's pointer, for errors and warnings.
    pub(crate) fn embed_json(
        &mut self,
        schema: &serde_json::Value,
        opts: &JsonSchemaOptions,
        ptr: &str,
    ) -> Result<NtId, StructTagError> {
        let key = format!("{schema}\u{0}{opts:?}");
        if let Some(&n) = self.local.get(&key) {
            self.report.schemas_reused += 1;
            return Ok(n);
        }
        let g = self
            .c
            .schema(key.clone(), schema, opts, ptr, &mut self.report)?;
        let n = self.g.embed(&g, "json-");
        self.local.insert(key, n);
        Ok(n)
    }

    /// Text avoiding `strings` and the non-empty `ends`.
    pub(crate) fn free_text(&mut self, name: &str, strings: &[String], ends: &[String]) -> NtId {
        self.free_text_within(name, strings, ends, None)
    }

    /// [`Self::free_text`] of at most `max_chars` characters.
    fn free_text_within(
        &mut self,
        name: &str,
        strings: &[String],
        ends: &[String],
        max_chars: Option<u64>,
    ) -> NtId {
        let all: Vec<&str> = strings
            .iter()
            .chain(ends)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
            .collect();
        match max_chars {
            None => avoiding(&mut self.g, name, &all),
            Some(n) => avoiding_at_most(&mut self.g, name, &all, n),
        }
    }

    fn visit(&mut self, f: &Format, ptr: &str, ends: &[String]) -> Result<NtId, StructTagError> {
        match f {
            Format::ConstString(v) => Ok(self.nt("const_string", vec![lit(v)])),
            Format::JsonSchema(j) => {
                let opts = self.json_opts(j);
                if let JsonStyle::Xml(style) = j.style {
                    return self.xml_schema(j, style, &opts, ptr);
                }
                if !j.excludes.is_empty() {
                    return Err(StructTagError::unsupported(
                        &child(ptr, "excludes"),
                        "excludes inside JSON string values are not built",
                    ));
                }
                self.embed_json(&j.json_schema, &opts, &child(ptr, "json_schema"))
            }
            Format::Grammar(text) => {
                let mut sub =
                    zapspec_grammar::parse_gbnf_with(text, &zapspec_jsonschema::xgrammar_regex_reader)
                        .map_err(|source| StructTagError::Grammar {
                            pointer: child(ptr, "grammar"),
                            source,
                        })?
                        .grammar;
                if let Some(r) = sub.nonterminal("root") {
                    sub.start = r;
                }
                Ok(self.g.embed(&sub, "grammar-"))
            }
            Format::Regex(p) => {
                // XGrammar's reading of its regexes (`a{,3}` and `[]` refused)
                let translated = zapspec_jsonschema::ecma_regex_to_regex_syntax_in(
                    p,
                    zapspec_jsonschema::RegexDialect::Strict,
                )
                .map_err(|m| {
                    StructTagError::Regex {
                        pointer: child(ptr, "pattern"),
                        message: m,
                    }
                })?;
                if let Err(e) = regex_syntax::Parser::new().parse(&translated) {
                    return Err(StructTagError::Regex {
                        pointer: child(ptr, "pattern"),
                        message: e.to_string(),
                    });
                }
                Ok(self.nt(
                    "regex",
                    vec![vec![Symbol::T(Terminal::Regex(translated))]],
                ))
            }
            Format::AnyText {
                excludes,
                max_tokens,
                max_chars,
            } => {
                if max_tokens.is_some() {
                    return Err(StructTagError::unsupported(
                        &child(ptr, "max_tokens"),
                        "a token budget counts tokens, which a byte-level grammar cannot",
                    ));
                }
                Ok(self.free_text_within("any_text", excludes, ends, *max_chars))
            }
            Format::Sequence(es) => {
                let mut rhs = Vec::with_capacity(es.len());
                for (i, e) in es.iter().enumerate() {
                    let p = child(&child(ptr, "elements"), &i.to_string());
                    rhs.push(Symbol::Nt(self.visit(e, &p, ends)?));
                }
                Ok(self.nt("sequence", vec![rhs]))
            }
            Format::Or(es) => {
                let mut alts = Vec::with_capacity(es.len());
                for (i, e) in es.iter().enumerate() {
                    let p = child(&child(ptr, "elements"), &i.to_string());
                    alts.push(vec![Symbol::Nt(self.visit(e, &p, ends)?)]);
                }
                Ok(self.nt("or", alts))
            }
            Format::Optional(c) => {
                let x = self.visit(c, &child(ptr, "content"), ends)?;
                Ok(self.nt("optional", vec![vec![Symbol::Nt(x)], Vec::new()]))
            }
            Format::Star(c) | Format::Plus(c) => {
                let x = self.visit(c, &child(ptr, "content"), ends)?;
                let star = self.g.add_nonterminal("star");
                self.g.add_rule(star, Vec::new());
                self.g.add_rule(star, vec![Symbol::Nt(x), Symbol::Nt(star)]);
                if matches!(f, Format::Plus(_)) {
                    Ok(self.nt("plus", vec![vec![Symbol::Nt(x), Symbol::Nt(star)]]))
                } else {
                    Ok(star)
                }
            }
            Format::Repeat { min, max, content } => {
                let most = max.unwrap_or(*min);
                if most > self.c.opts.max_repeat {
                    return Err(StructTagError::unsupported(
                        ptr,
                        format!(
                            "repeat writes out {most} copies, more than the compiler's max_repeat ({})",
                            self.c.opts.max_repeat
                        ),
                    ));
                }
                let x = self.visit(content, &child(ptr, "content"), ends)?;
                let mut rhs = vec![Symbol::Nt(x); *min as usize];
                match max {
                    None => {
                        let star = self.g.add_nonterminal("repeat-star");
                        self.g.add_rule(star, Vec::new());
                        self.g.add_rule(star, vec![Symbol::Nt(x), Symbol::Nt(star)]);
                        rhs.push(Symbol::Nt(star));
                    }
                    Some(m) if *m > *min => {
                        // (x (x (… | ε) | ε) | ε), max − min levels
                        let mut tail = self.nt("repeat-tail", vec![vec![Symbol::Nt(x)], Vec::new()]);
                        for _ in 1..(m - min) {
                            tail = self.nt(
                                "repeat-tail",
                                vec![vec![Symbol::Nt(x), Symbol::Nt(tail)], Vec::new()],
                            );
                        }
                        rhs.push(Symbol::Nt(tail));
                    }
                    Some(_) => {}
                }
                Ok(self.nt("repeat", vec![rhs]))
            }
            Format::Tag(t) => self.tag(t, ptr),
            Format::TriggeredTags {
                triggers,
                tags,
                at_least_one,
                stop_after_first,
                excludes,
            } => self.triggered_tags(
                triggers,
                tags,
                *at_least_one,
                *stop_after_first,
                excludes,
                ptr,
                ends,
            ),
            Format::TagsWithSeparator {
                tags,
                separator,
                at_least_one,
                stop_after_first,
            } => {
                let mut alts = Vec::with_capacity(tags.len());
                for (i, t) in tags.iter().enumerate() {
                    let p = child(&child(ptr, "tags"), &i.to_string());
                    alts.push(vec![Symbol::Nt(self.tag(t, &p)?)]);
                }
                let any = self.nt("tags_with_separator_tags", alts);
                if *stop_after_first {
                    let mut alts = vec![vec![Symbol::Nt(any)]];
                    if !at_least_one {
                        alts.push(Vec::new());
                    }
                    return Ok(self.nt("tags_with_separator", alts));
                }
                let sub = self.g.add_nonterminal("tags_with_separator_sub");
                self.g.add_rule(sub, Vec::new());
                let mut rhs = lit(separator);
                rhs.extend([Symbol::Nt(any), Symbol::Nt(sub)]);
                self.g.add_rule(sub, rhs);
                let mut alts = vec![vec![Symbol::Nt(any), Symbol::Nt(sub)]];
                if !at_least_one {
                    alts.push(Vec::new());
                }
                Ok(self.nt("tags_with_separator", alts))
            }
            Format::Dispatch {
                rules,
                looped,
                excludes,
            } => {
                let mut avoid: Vec<String> = rules.iter().map(|(p, _)| p.clone()).collect();
                avoid.extend(excludes.iter().cloned());
                let mut alts = Vec::with_capacity(rules.len());
                for (i, (pat, fmt)) in rules.iter().enumerate() {
                    let p = child(&child(&child(ptr, "rules"), &i.to_string()), "1");
                    let x = self.visit(fmt, &p, ends)?;
                    let mut rhs = lit(pat);
                    rhs.push(Symbol::Nt(x));
                    alts.push(rhs);
                }
                let free = self.free_text("dispatch_text", &avoid, ends);
                let t = self.nt("dispatch_rule", alts);
                Ok(self.dispatch_loop("dispatch", free, t, *looped))
            }
            Format::TokenLevel(name) => Err(StructTagError::unsupported(
                ptr,
                format!(
                    "the token-level format {name:?}: zapspec's grammars are over bytes and name no token ids"
                ),
            )),
        }
    }

    /// `F (T F)*` when `looped`, else `F T?`.
    fn dispatch_loop(&mut self, name: &str, free: NtId, t: NtId, looped: bool) -> NtId {
        let d = self.g.add_nonterminal(name);
        self.g.add_rule(d, vec![Symbol::Nt(free)]);
        if looped {
            self.g
                .add_rule(d, vec![Symbol::Nt(free), Symbol::Nt(t), Symbol::Nt(d)]);
        } else {
            self.g.add_rule(d, vec![Symbol::Nt(free), Symbol::Nt(t)]);
        }
        d
    }

    /// The symbols of a tag's end.
    fn end_symbols(&mut self, end: &TagEnd, ptr: &str) -> Result<Vec<Symbol>, StructTagError> {
        match end {
            TagEnd::Token(_) => Err(StructTagError::unsupported(
                &child(ptr, "end"),
                "a token end: zapspec's grammars are over bytes and name no token ids",
            )),
            TagEnd::Strings(s) if s.len() == 1 => Ok(lit(&s[0])),
            TagEnd::Strings(s) => {
                let alts = s.iter().map(|e| lit(e)).collect();
                Ok(vec![Symbol::Nt(self.nt("tag_end", alts))])
            }
        }
    }

    /// A tag's begin, its content's nonterminal and its end's symbols.
    fn tag_parts(
        &mut self,
        t: &Tag,
        ptr: &str,
    ) -> Result<(String, NtId, Vec<Symbol>), StructTagError> {
        let TagBegin::String(begin) = &t.begin else {
            return Err(StructTagError::unsupported(
                &child(ptr, "begin"),
                "a token begin: zapspec's grammars are over bytes and name no token ids",
            ));
        };
        let ends: Vec<String> = match &t.end {
            TagEnd::Strings(s) => s.clone(),
            TagEnd::Token(_) => Vec::new(),
        };
        if let TagEnd::Strings(s) = &t.end {
            if unlimited(&t.content) && s.iter().all(String::is_empty) && !excluded(&t.content) {
                return Err(StructTagError::invalid(
                    &child(ptr, "end"),
                    "when the content is unlimited, at least one end string must be non-empty",
                ));
            }
        }
        let end = self.end_symbols(&t.end, ptr)?;
        let content = self.visit(&t.content, &child(ptr, "content"), &ends)?;
        Ok((begin.clone(), content, end))
    }

    /// `begin[skip..] content end` as a nonterminal.
    fn tag_rule(&mut self, parts: &(String, NtId, Vec<Symbol>), skip: usize) -> NtId {
        let (begin, content, end) = parts;
        let mut rhs = lit(&begin[skip..]);
        rhs.push(Symbol::Nt(*content));
        rhs.extend(end.iter().cloned());
        self.nt("tag", vec![rhs])
    }

    /// A tag.
    fn tag(&mut self, t: &Tag, ptr: &str) -> Result<NtId, StructTagError> {
        let parts = self.tag_parts(t, ptr)?;
        Ok(self.tag_rule(&parts, 0))
    }

    #[allow(clippy::too_many_arguments)]
    fn triggered_tags(
        &mut self,
        triggers: &[String],
        tags: &[Tag],
        at_least_one: bool,
        stop_after_first: bool,
        excludes: &[String],
        ptr: &str,
        ends: &[String],
    ) -> Result<NtId, StructTagError> {
        for (i, a) in triggers.iter().enumerate() {
            for (j, b) in triggers.iter().enumerate() {
                if i != j && b.starts_with(a.as_str()) && (a != b || i < j) {
                    return Err(StructTagError::invalid(
                        &child(&child(ptr, "triggers"), &j.to_string()),
                        format!("trigger {a:?} is a prefix of trigger {b:?}: a tag cannot tell them apart"),
                    ));
                }
            }
            for (k, e) in excludes.iter().enumerate() {
                if a.contains(e.as_str()) {
                    return Err(StructTagError::invalid(
                        &child(&child(ptr, "excludes"), &k.to_string()),
                        format!("the excluded string {e:?} is inside trigger {a:?}, which could then never start a tag"),
                    ));
                }
            }
        }
        // each tag's trigger
        let mut of_tag = Vec::with_capacity(tags.len());
        for (i, t) in tags.iter().enumerate() {
            let p = child(&child(ptr, "tags"), &i.to_string());
            let TagBegin::String(begin) = &t.begin else {
                return Err(StructTagError::invalid(
                    &child(&p, "begin"),
                    "tags in triggered_tags must have a string begin, not a token format begin",
                ));
            };
            let mut hits = triggers
                .iter()
                .enumerate()
                .filter(|(_, tr)| begin.starts_with(tr.as_str()));
            match (hits.next(), hits.next()) {
                (Some((k, _)), None) => of_tag.push(k),
                (Some(_), Some(_)) => {
                    return Err(StructTagError::invalid(
                        &p,
                        "one tag matches multiple triggers in a triggered tags format",
                    ))
                }
                (None, _) => {
                    return Err(StructTagError::invalid(
                        &p,
                        format!("one tag does not match any trigger in a triggered tags format (begin {begin:?})"),
                    ))
                }
            }
        }
        let parts: Vec<(String, NtId, Vec<Symbol>)> = tags
            .iter()
            .enumerate()
            .map(|(i, t)| self.tag_parts(t, &child(&child(ptr, "tags"), &i.to_string())))
            .collect::<Result<_, _>>()?;
        let whole: Vec<NtId> = parts.iter().map(|p| self.tag_rule(p, 0)).collect();
        if at_least_one && stop_after_first {
            let alts = whole.iter().map(|&n| vec![Symbol::Nt(n)]).collect();
            return Ok(self.nt("triggered_tags", alts));
        }
        // after the free text: a trigger, then the rest of one of its tags
        let mut alts = Vec::new();
        for (k, tr) in triggers.iter().enumerate() {
            let mut group = Vec::new();
            for (i, p) in parts.iter().enumerate() {
                if of_tag[i] == k {
                    group.push(vec![Symbol::Nt(self.tag_rule(p, tr.len()))]);
                }
            }
            if group.is_empty() {
                continue;
            }
            let g = self.nt("triggered_tags_group", group);
            let mut rhs = lit(tr);
            rhs.push(Symbol::Nt(g));
            alts.push(rhs);
        }
        let mut avoid = triggers.to_vec();
        avoid.extend(excludes.iter().cloned());
        let free = self.free_text("triggered_tags_text", &avoid, ends);
        let t = self.nt("triggered_tags_dispatch", alts);
        let d = self.dispatch_loop("triggered_tags_sub", free, t, !stop_after_first);
        if at_least_one {
            let alts = whole.iter().map(|&n| vec![Symbol::Nt(n)]).collect();
            let first = self.nt("triggered_tags_first", alts);
            return Ok(self.nt(
                "triggered_tags",
                vec![vec![Symbol::Nt(first), Symbol::Nt(d)]],
            ));
        }
        Ok(d)
    }
}
