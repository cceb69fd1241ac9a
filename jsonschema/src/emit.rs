//! The emitter: a work queue of (nonterminal, schema node) jobs. Each job
//! normalises its node into simple schemas and emits, per simple schema
//! and allowed type, the alternatives of its nonterminal; subschemas get
//! their own nonterminals, created on first use and memoised by content
//! (annotations such as `description` and `title` left out of the key),
//! so a `$ref` used many times (or recursively), and copies of one
//! definition that differ only in their documentation, are compiled once.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use serde_json::Value;

use super::error::{push_ptr, NumberError, SchemaError};
use super::formats::{self, FormatKind};
use super::keys::{KeyAutomaton, KeyPattern};
use super::normalize::Normalizer;
use super::numbers::{
    integer_regex, integer_value_regex, number_regex_multiple, Bounds, Multiple, Num,
};
use super::schema::{NumberKw, SchemaKeys, Simple, StringKw, Sub, TypeSet};
use super::strings::{
    any_key, char_len_range, constrained_string_hir, encode_str, free_string_regex,
    translate_pattern, with_length, FREE_UNIT,
};
use super::{CompileReport, JsonSchemaOptions, Whitespace, MIN_INTERSECTED_LENGTH};
use zapspec_grammar::ir::{CharClass, Grammar, NtId, Symbol, Terminal};
use zapspec_grammar::Limit;

pub(crate) struct Emitter<'a> {
    pub g: Grammar,
    pub norm: Normalizer<'a>,
    pub opts: &'a JsonSchemaOptions,
    memo: HashMap<String, NtId>,
    /// The memo keys of the handles met ([`SchemaKeys`]).
    pub(crate) keys: SchemaKeys,
    /// [`Emitter::memo`]'s answers by the address of a document schema
    /// (borrowed for `'a`, so an address names one schema for the whole
    /// compile): a definition `$ref`-ed from many places has its content
    /// key written once, not once per use.
    /// (Under [`Whitespace::Indent`] the key is the address and the JSON
    /// depth.)
    by_addr: HashMap<(usize, usize), NtId>,
    /// The rules a string part was written as, by its keywords: a schema's
    /// many `format: uri` or equal `pattern` fields are translated,
    /// encoded and printed once ([`Emitter::string`]).
    string_memo: HashMap<StringKw, Vec<Vec<Symbol>>>,
    /// The terminals of "a JSON string that is none of these names"
    /// ([`Emitter::excluding_terminal`]), by the sorted, deduplicated
    /// names: the open objects of one shape (a definition's properties
    /// inlined at many places, the branches of a DNF) encode them once.
    exclusions: HashMap<Vec<String>, Terminal>,
    /// [`options_key`] of the options: with a string schema's keywords,
    /// the key of the process-wide [`string_cache`].
    opts_key: u64,
    /// Work items: nonterminal, subschema, pointer, nesting depth, JSON
    /// depth.
    queue: VecDeque<(NtId, Sub<'a>, String, usize, usize)>,
    /// Nesting depth of the work item being emitted.
    depth: usize,
    /// JSON depth of the value the work item being emitted writes (the
    /// document is 0, its items 1): under [`Whitespace::Indent`] the
    /// indentation of its lines, and part of its memo key.
    pub jdepth: usize,
    /// Under [`Whitespace::Indent`], the nonterminal (without rules) that
    /// stands for the containers too deep to write
    /// ([`JsonSchemaOptions::max_indent_depth`]), and the pointer of the
    /// first of them.
    depth_cut: Option<(NtId, String)>,
    ws: Option<NtId>,
    unit: Option<NtId>,
    star: Option<NtId>,
    pow: Vec<NtId>,
    below_pow: Vec<NtId>,
    pub format_notes: FormatNotes,
    name_counts: HashMap<String, usize>,
    /// How many enum-member checks enclose this compilation
    /// ([`Emitter::compile_sub`]).
    pub member_nesting: usize,
    /// Recognizers of the sibling keywords of object/array `enum` members,
    /// by the siblings' text (`None`: the siblings are unsatisfiable).
    pub member_checks: HashMap<String, Option<std::rc::Rc<zapspec_grammar::Recognizer>>>,
    /// [`CompileReport::narrowed`].
    pub narrowed: Vec<(String, String)>,
}

/// Smallest `max_regex_repeat` at which long strings are written as
/// blocks of counted terminals ([`Emitter::blocked_string`]); below it, as
/// the logarithmic character-level decomposition.
const MIN_BLOCK: u64 = 64;
/// Most blocks of one string written by [`Emitter::blocked_string`] (a
/// nonterminal each; 1,024 blocks of 1,024 characters cover a million
/// characters); longer bounds use the logarithmic decomposition.
const MAX_STRING_BLOCKS: u64 = 1024;

pub(crate) fn lit(s: &str) -> Symbol {
    Symbol::T(Terminal::Literal(s.as_bytes().to_vec()))
}

pub(crate) fn re(s: String) -> Symbol {
    Symbol::T(Terminal::Regex(s))
}

/// Refuses a document nested more than `max` JSON levels ([`Limit::Depth`],
/// at the first location too deep), walking it without recursion: the
/// compiler serialises and clones subschemas, which recurse over them.
fn check_json_depth(root: &Value, max: usize) -> Result<(), SchemaError> {
    let mut stack: Vec<(&Value, usize)> = vec![(root, 0)];
    while let Some((v, d)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Object(m) => Box::new(m.values()),
            Value::Array(a) => Box::new(a.iter()),
            _ => continue,
        };
        if d >= max {
            // Rebuild the pointer of this node: search again, keeping paths
            // (only on the error path).
            return Err(SchemaError::limit(
                Limit::Depth,
                max,
                &pointer_at_depth(root, max),
                format!("the document is nested more than {max} levels"),
            ));
        }
        stack.extend(children.map(|c| (c, d + 1)));
    }
    Ok(())
}

/// Refuses [`Whitespace::Separators`] that are no JSON separator: the item
/// separator must be `,` and the key separator `:`, each with only JSON
/// whitespace (`[ \t\n\r]`) around it.
fn check_separators(w: &Whitespace) -> Result<(), SchemaError> {
    let (mode, item_separator, key_separator) = match w {
        Whitespace::Separators {
            item_separator,
            key_separator,
        } => ("Separators", item_separator, key_separator),
        Whitespace::Indent {
            indent,
            item_separator,
            key_separator,
        } => {
            if indent.len() > MAX_INDENT_UNIT
                || !indent
                    .chars()
                    .all(|x| matches!(x, ' ' | '\t' | '\n' | '\r'))
            {
                return Err(SchemaError::invalid(
                    "indent",
                    "",
                    format!(
                        "Whitespace::Indent: indent {indent:?} must be at most \
                         {MAX_INDENT_UNIT} bytes of JSON whitespace"
                    ),
                ));
            }
            ("Indent", item_separator, key_separator)
        }
        _ => return Ok(()),
    };
    for (name, sep, c) in [
        ("item_separator", item_separator, ','),
        ("key_separator", key_separator, ':'),
    ] {
        let ok = sep.chars().filter(|&x| x == c).count() == 1
            && sep
                .chars()
                .all(|x| x == c || matches!(x, ' ' | '\t' | '\n' | '\r'));
        if !ok {
            return Err(SchemaError::invalid(
                name,
                "",
                format!(
                    "Whitespace::{mode}: {name} {sep:?} must be `{c}` with only JSON whitespace around it"
                ),
            ));
        }
    }
    Ok(())
}

/// Longest [`Whitespace::Indent`] unit.
const MAX_INDENT_UNIT: usize = 256;

/// The pointer of the first node at JSON depth `depth` (depth-first).
fn pointer_at_depth(root: &Value, depth: usize) -> String {
    let mut stack: Vec<(&Value, String, usize)> = vec![(root, String::new(), 0)];
    while let Some((v, p, d)) = stack.pop() {
        if d == depth {
            return p;
        }
        match v {
            Value::Object(m) => {
                for (k, c) in m.iter().rev() {
                    stack.push((c, push_ptr(&p, k), d + 1));
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate().rev() {
                    stack.push((c, push_ptr(&p, &i.to_string()), d + 1));
                }
            }
            _ => {}
        }
    }
    String::new()
}

/// A readable nonterminal name from a JSON pointer.
fn nt_name(ptr: &str) -> String {
    let last = ptr
        .rsplit('/')
        .find(|s| !s.is_empty() && s.parse::<usize>().is_err())
        .unwrap_or("root");
    let mut s: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    s = s.trim_matches('-').to_string();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s = format!("n-{s}");
    }
    s.truncate(40);
    s
}

/// The numeric bounds of a simple schema.
pub(crate) fn bounds(m: &NumberKw) -> Bounds {
    let mut b = Bounds::default();
    for (v, lower, inc) in [
        (&m.minimum, true, true),
        (&m.exclusive_minimum, true, false),
        (&m.maximum, false, true),
        (&m.exclusive_maximum, false, false),
    ] {
        if let Some(n) = v {
            let n = Num::from_json(n);
            if lower {
                b.lower(n, inc)
            } else {
                b.upper(n, inc)
            }
        }
    }
    b
}

/// The `multipleOf` of a simple schema at `ptr` (refused at the pointer
/// it came from, [`NumberKw::origin`]).
pub(crate) fn multiple_of(m: &NumberKw, ptr: &str) -> Result<Option<Multiple>, SchemaError> {
    match &m.multiple_of {
        None => Ok(None),
        Some(n) => Multiple::new(n).map(Some).map_err(|r| {
            let o = m.origin("multipleOf", ptr);
            let reason = match o.how {
                None => r.to_string(),
                Some(how) => format!("{r}; {n} is {how}, the one multipleOf equivalent to both"),
            };
            SchemaError::unsupported("multipleOf", &o.pointer, reason)
        }),
    }
}

/// The refusal of numeric bounds the regexes cannot hold (`r`), on the
/// bound at fault where `r` names its value, at the pointer it came from,
/// naming every bound of the schema.
fn bound_refusal(s: &Simple<'_>, r: NumberError) -> SchemaError {
    let n = &s.number;
    let kws = [
        ("minimum", &n.minimum),
        ("exclusiveMinimum", &n.exclusive_minimum),
        ("maximum", &n.maximum),
        ("exclusiveMaximum", &n.exclusive_maximum),
    ];
    let value = match r {
        NumberError::BoundOutOfRange(f) | NumberError::BoundNotFinite(f) => Some(f),
        _ => None,
    };
    let present = || kws.iter().filter(|(_, v)| v.is_some());
    let kw = present()
        .find(|(_, v)| value.is_some() && v.as_ref().and_then(|x| x.as_f64()) == value)
        .or_else(|| present().next())
        .map_or("minimum", |(k, _)| *k);
    let all: Vec<String> = present()
        .filter_map(|(k, _)| n.describe(k, &s.ptr))
        .collect();
    SchemaError::unsupported(
        kw,
        &n.origin(kw, &s.ptr).pointer,
        format!("{r}; the bounds: {}", all.join(", ")),
    )
}

/// What `format` handling recorded: unknown names (annotations) and the
/// specification formats compiled as annotations under
/// [`JsonSchemaOptions::lenient_formats`].
#[derive(Debug, Default)]
pub(crate) struct FormatNotes {
    /// Whether refused formats become annotations.
    pub lenient: bool,
    /// What unknown format names do.
    pub unknown: super::UnknownFormats,
    /// `(pointer, "format: NAME")` of unknown names.
    pub ignored: Vec<(String, String)>,
    /// `(pointer, message)` of lenient annotations.
    pub warnings: Vec<(String, String)>,
}

/// The full-match HIR of the ECMA-262 pattern `p` of keyword `kw`.
fn pattern_hir(p: &str, kw: &str, ptr: &str) -> Result<regex_syntax::hir::Hir, SchemaError> {
    translate_pattern(p)
        .map_err(|r| SchemaError::unsupported(kw, ptr, format!("{r} (pattern {p:?})")))
}

/// The full-match HIRs of the patterns a string must *not* match
/// (`not: {pattern}`).
pub(crate) fn not_pattern_hirs(
    m: &StringKw,
    ptr: &str,
) -> Result<Vec<regex_syntax::hir::Hir>, SchemaError> {
    m.not_patterns
        .iter()
        .map(|p| pattern_hir(p, "pattern", ptr))
        .collect()
}

/// The full-match HIR (over decoded characters) of a string's
/// `pattern`s (the keyword's and, from `allOf`, further ones) and
/// `format`, if any.
/// The HIR of a `format`'s regex, parsed once per process (the formats
/// are a fixed table; a URI or date-time regex is kilobytes).
fn format_hir(r: &'static str) -> Result<regex_syntax::hir::Hir, super::error::PatternError> {
    type Memo = std::sync::Mutex<HashMap<&'static str, regex_syntax::hir::Hir>>;
    static MEMO: std::sync::OnceLock<Memo> = std::sync::OnceLock::new();
    let memo = MEMO.get_or_init(Default::default);
    if let Some(h) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(r) {
        return Ok(h.clone());
    }
    let h = super::strings::parse_hir(r)?;
    memo.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(r, h.clone());
    Ok(h)
}

pub(crate) fn string_hir(
    m: &StringKw,
    ptr: &str,
    notes: &mut FormatNotes,
) -> Result<Vec<(regex_syntax::hir::Hir, &'static str)>, SchemaError> {
    let mut out = Vec::new();
    for p in &m.patterns {
        out.push((pattern_hir(p, "pattern", ptr)?, "pattern"));
    }
    match &m.format {
        None => {}
        Some(f) => match formats::lookup(f) {
            FormatKind::Regex(r) => out.push((
                format_hir(r)
                    .map_err(|r| SchemaError::unsupported("format", ptr, r.to_string()))?,
                "format",
            )),
            FormatKind::Refused(why) if notes.lenient => notes.warnings.push((
                ptr.to_string(),
                format!("format `{f}` not enforced (lenient_formats): {why}"),
            )),
            FormatKind::Refused(why) => {
                return Err(SchemaError::unsupported(
                    "format",
                    ptr,
                    format!(
                    "`{f}`: {why} (JsonSchemaOptions::lenient_formats treats it as an annotation)"
                ),
                ))
            }
            FormatKind::Unknown => match notes.unknown {
                super::UnknownFormats::Annotation => notes
                    .ignored
                    .push((ptr.to_string(), format!("format: {f}"))),
                super::UnknownFormats::Refuse => {
                    return Err(SchemaError::unsupported(
                        "format",
                        ptr,
                        format!("`{f}` is no format of the specification (JsonSchemaOptions::unknown_formats is Refuse)"),
                    ))
                }
            },
        },
    }
    Ok(out)
}

/// Most values a bounded integer `multipleOf` is written as a list of.
const MAX_LISTED_MULTIPLES: u64 = 4096;

/// The multiples of `k` within `b` when both bounds are given and at most
/// [`MAX_LISTED_MULTIPLES`] of them exist (bounds within ±2^53, where f64
/// is exact on integers); `None` otherwise.
fn bounded_multiples(b: &Bounds, k: u64) -> Option<Vec<i64>> {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    let ((lo, lo_inc), (hi, hi_inc)) = (b.lo?, b.hi?);
    let (lo, hi) = (lo.as_f64(), hi.as_f64());
    if !(lo.abs() <= EXACT && hi.abs() <= EXACT) || k == 0 {
        return None;
    }
    let lo = if lo_inc { lo.ceil() } else { lo.floor() + 1.0 } as i64;
    let hi = if hi_inc { hi.floor() } else { hi.ceil() - 1.0 } as i64;
    let k = i64::try_from(k).ok()?;
    let first = lo.div_euclid(k) * k + if lo.rem_euclid(k) == 0 { 0 } else { k };
    if first > hi {
        return Some(Vec::new());
    }
    let count = (hi - first) / k + 1;
    if count as u64 > MAX_LISTED_MULTIPLES {
        return None;
    }
    Some((0..count).map(|i| first + i * k).collect())
}

/// The rules one string schema's keywords were written as, with the HIRs
/// of their regex terminals: [`string_cache`]'s values.
#[derive(Debug)]
struct CachedString {
    rhss: Vec<Vec<Symbol>>,
    hirs: Vec<(String, Arc<regex_syntax::hir::Hir>)>,
}

/// Most string schemas [`string_cache`] keeps (then it starts afresh).
const STRING_CACHE_ENTRIES: usize = 128;

/// The process's built-in `format` strings already written (a format and
/// at most length bounds: a closed set of names, so the cache does not
/// grow with the schemas a server sees; user `pattern`s are memoised per
/// grammar only), by the options they were written under
/// ([`Emitter::opts_key`]) and their keywords: a format that many schemas
/// share (`email`, `date-time`, `uri`) is translated, encoded and printed
/// once per process, not once per schema (an `email` takes about 9 ms).
/// Bounded by [`STRING_CACHE_ENTRIES`].
struct StringCache(std::sync::Mutex<HashMap<(u64, StringKw), Arc<CachedString>>>);

impl StringCache {
    fn get(&self, k: &(u64, StringKw)) -> Option<Arc<CachedString>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(k)
            .cloned()
    }

    fn insert(&self, k: (u64, StringKw), v: Arc<CachedString>) {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= STRING_CACHE_ENTRIES {
            m.clear();
        }
        m.insert(k, v);
    }
}

fn string_cache() -> &'static StringCache {
    static C: std::sync::OnceLock<StringCache> = std::sync::OnceLock::new();
    C.get_or_init(|| StringCache(std::sync::Mutex::new(HashMap::default())))
}

/// A hash of everything in `opts` (its `Debug` text): the part of
/// [`string_cache`]'s key that keeps apart rules written under different
/// options.
fn options_key(opts: &JsonSchemaOptions) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{opts:?}").hash(&mut h);
    h.finish()
}

impl<'a> Emitter<'a> {
    /// The terminal of the JSON string literals (quotes included) whose
    /// content is none of `names`: [`Terminal::Except`] of the regex of
    /// any key ([`any_key`]) and the names' canonical encodings, which
    /// is exact because the encoding is one-to-one. Engines build its
    /// automaton from the names' trie (`zapspec_grammar::dense::except`)
    /// when a parse reaches it, where the regex that says the same
    /// ([`key_regex_excluding`](super::strings::key_regex_excluding), still used inside `patternProperties`
    /// products) had to be built, printed and parsed with its grammar.
    /// Once per name set and grammar ([`Emitter::exclusions`]).
    pub(crate) fn excluding_terminal(&mut self, names: &[&str]) -> Terminal {
        let mut key: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        key.sort_unstable();
        key.dedup();
        if let Some(t) = self.exclusions.get(&key) {
            return t.clone();
        }
        let (any, hir) = any_key();
        self.adopt_hir(any, hir);
        let encoded = key
            .iter()
            .map(|n| format!("\"{}\"", encode_str(n)).into_bytes());
        let t = Terminal::except(any.clone(), encoded);
        self.exclusions.insert(key, t.clone());
        t
    }

    pub fn compile(
        schema: &'a Value,
        opts: &'a JsonSchemaOptions,
    ) -> Result<(Grammar, CompileReport), SchemaError> {
        check_separators(&opts.whitespace)?;
        check_json_depth(schema, opts.max_json_depth)?;
        Self::compile_at(schema, &Sub::Schema(schema), "", opts, 0, None)
    }

    /// The grammar of `sub`, the subschema at `ptr` of `root` (references
    /// resolve against `root`), inside `member_nesting` enclosing
    /// enum-member checks and within the enclosing compilation's
    /// `deadline`, with [`Whitespace::Compact`]: it recognises values as
    /// `serde_json::to_string` writes them.
    pub(crate) fn compile_sub(
        &self,
        sub: &Sub<'a>,
        ptr: &str,
    ) -> Result<(Grammar, CompileReport), SchemaError> {
        // its texts are recognised as `serde_json` writes them (compact),
        // whatever the layout of the enclosing grammar
        let compact = JsonSchemaOptions {
            whitespace: Whitespace::Compact,
            ..self.opts.clone()
        };
        Emitter::compile_at(
            self.norm.root,
            sub,
            ptr,
            &compact,
            self.member_nesting + 1,
            Some(self.norm.deadline),
        )
    }

    fn compile_at(
        root: &'a Value,
        schema: &Sub<'a>,
        ptr: &str,
        opts: &'a JsonSchemaOptions,
        member_nesting: usize,
        deadline: Option<Option<std::time::Instant>>,
    ) -> Result<(Grammar, CompileReport), SchemaError> {
        let mut e = Emitter {
            g: Grammar::new(),
            norm: Normalizer::new(root, opts),
            opts,
            memo: HashMap::default(),
            keys: SchemaKeys::default(),
            by_addr: HashMap::default(),
            string_memo: HashMap::default(),
            exclusions: HashMap::default(),
            opts_key: options_key(opts),
            queue: VecDeque::new(),
            depth: 0,
            jdepth: 0,
            depth_cut: None,
            ws: None,
            unit: None,
            star: None,
            pow: Vec::new(),
            below_pow: Vec::new(),
            format_notes: FormatNotes {
                lenient: opts.lenient_formats,
                unknown: opts.unknown_formats,
                ..FormatNotes::default()
            },
            name_counts: HashMap::default(),
            member_nesting,
            member_checks: HashMap::default(),
            narrowed: Vec::new(),
        };
        if let Some(d) = deadline {
            e.norm.deadline = d;
        }
        let root = e.node_at(schema, ptr, 0)?;
        while let Some((nt, v, ptr, depth, jdepth)) = e.queue.pop_front() {
            e.depth = depth;
            e.jdepth = jdepth;
            e.norm.check_time(&ptr)?;
            let branches = e.norm.branches(&v, &ptr)?;
            for s in &branches {
                e.simple(nt, s)?;
            }
        }
        e.g.start = root;
        if let Some((cut, at)) = &e.depth_cut {
            // satisfiable only with containers deeper than the bound
            if productive_set(&e.g, Some(*cut))[root.index()]
                && !productive_set(&e.g, None)[root.index()]
            {
                let max = opts.max_indent_depth;
                return Err(SchemaError::limit(
                    Limit::Depth,
                    max,
                    at,
                    format!(
                        "Whitespace::Indent: every value the schema allows nests more than \
                         {max} levels (JsonSchemaOptions::max_indent_depth)"
                    ),
                ));
            }
        }
        let productive = prune_unproductive(&mut e.g);
        if !productive[root.index()] {
            let (pointer, reason) =
                e.norm.first_unsat.clone().unwrap_or_else(|| {
                    (String::new(), "no JSON value satisfies the schema".into())
                });
            return Err(SchemaError::Unsatisfiable { pointer, reason });
        }
        let mut ignored = std::mem::take(&mut e.norm.ignored);
        ignored.extend(e.format_notes.ignored);
        let mut warnings = e.format_notes.warnings;
        warnings.extend(std::mem::take(&mut e.norm.relaxed));
        let narrowed = e.narrowed;
        Ok((
            e.g,
            CompileReport {
                ignored,
                warnings,
                narrowed,
            },
        ))
    }

    /// The nonterminal of a subschema that is an item or member of the
    /// value being emitted (created and queued on first use).
    pub fn node(&mut self, v: &Sub<'a>, ptr: &str) -> Result<NtId, SchemaError> {
        self.node_at(v, ptr, self.jdepth + 1)
    }

    /// The nonterminal of a subschema written at JSON depth `jdepth`
    /// (part of the memo key only under [`Whitespace::Indent`], where
    /// the depth sets the indentation).
    fn node_at(&mut self, v: &Sub<'a>, ptr: &str, jdepth: usize) -> Result<NtId, SchemaError> {
        let indent = matches!(self.opts.whitespace, Whitespace::Indent { .. });
        let jd = if indent { jdepth } else { 0 };
        let addr = match v {
            Sub::Schema(x) => Some((std::ptr::from_ref::<Value>(x) as usize, jd)),
            _ => None,
        };
        if let Some(&nt) = addr.and_then(|a| self.by_addr.get(&a)) {
            return Ok(nt);
        }
        let key = if indent {
            format!("{jd}\u{0}{}", self.keys.key(v))
        } else {
            self.keys.key(v)
        };
        if let Some(&nt) = self.memo.get(&key) {
            if let Some(a) = addr {
                self.by_addr.insert(a, nt);
            }
            return Ok(nt);
        }
        let depth = self.depth + 1;
        if depth > self.opts.max_depth {
            return Err(SchemaError::limit(
                Limit::Depth,
                self.opts.max_depth,
                ptr,
                format!(
                    "subschemas nested more than {} levels (through properties, items or $ref)",
                    self.opts.max_depth
                ),
            ));
        }
        let nt = self.fresh(&nt_name(ptr), ptr)?;
        self.memo.insert(key, nt);
        if let Some(a) = addr {
            self.by_addr.insert(a, nt);
        }
        self.queue
            .push_back((nt, v.clone(), ptr.to_string(), depth, jdepth));
        Ok(nt)
    }

    pub fn fresh(&mut self, name: &str, ptr: &str) -> Result<NtId, SchemaError> {
        if self.g.num_nonterminals() >= self.opts.max_nonterminals {
            return Err(SchemaError::limit(
                Limit::Nonterminals,
                self.opts.max_nonterminals,
                ptr,
                format!("more than {} nonterminals", self.opts.max_nonterminals),
            ));
        }
        // `Grammar::add_nonterminal` scans all names (and rescans on each
        // collision), so hand it names that are already unique.
        let k = self.name_counts.entry(name.to_string()).or_insert(0);
        *k += 1;
        let unique = if *k == 1 {
            name.to_string()
        } else {
            format!("{name}-{}", *k - 1)
        };
        Ok(self.g.add_nonterminal(&unique))
    }

    /// The whitespace symbol between two tokens (none when compact).
    pub fn ws(&mut self) -> Option<Symbol> {
        let Whitespace::Flexible { max_ws } = self.opts.whitespace else {
            return None;
        };
        if max_ws == 0 {
            return None;
        }
        let nt = match self.ws {
            Some(nt) => nt,
            None => {
                let nt = self.g.add_nonterminal("ws");
                self.g.add_rule(nt, vec![]);
                let q = if max_ws == 1 {
                    String::new()
                } else if max_ws == usize::MAX {
                    "+".to_string()
                } else {
                    format!("{{1,{max_ws}}}")
                };
                self.g.add_rule(nt, vec![re(format!("[ \\t\\n\\r]{q}"))]);
                self.ws = Some(nt);
                nt
            }
        };
        Some(Symbol::Nt(nt))
    }

    /// The separator between two array items or object members: `,` and
    /// whitespace, or [`Whitespace::Separators`]' `item_separator`.
    pub fn item_sep(&mut self) -> Vec<Symbol> {
        match &self.opts.whitespace {
            Whitespace::Separators { item_separator, .. } => vec![lit(item_separator)],
            Whitespace::Indent { item_separator, .. } => {
                vec![lit(&format!("{item_separator}{}", self.newline(1)))]
            }
            _ => {
                let mut v = vec![lit(",")];
                v.extend(self.ws());
                v
            }
        }
    }

    /// Under [`Whitespace::Indent`], a newline and the indentation of
    /// JSON depth `self.jdepth + up` (empty otherwise).
    pub fn newline(&self, up: usize) -> String {
        match &self.opts.whitespace {
            Whitespace::Indent { indent, .. } => {
                format!("\n{}", indent.repeat(self.jdepth + up))
            }
            _ => String::new(),
        }
    }

    /// What comes before an item or member of the container being
    /// emitted after `written` others: the item separator, or for the
    /// first one the newline and indentation of [`Whitespace::Indent`]
    /// (nothing in the other modes).
    pub fn lead(&mut self, written: u64) -> Vec<Symbol> {
        if written > 0 {
            return self.item_sep();
        }
        match self.newline(1) {
            nl if nl.is_empty() => vec![],
            nl => vec![lit(&nl)],
        }
    }

    /// The closing bracket of the container being emitted after `written`
    /// items or members: under [`Whitespace::Indent`] on a line of its own
    /// unless the container is empty.
    pub fn close(&self, bracket: &str, written: u64) -> Symbol {
        if written == 0 {
            return lit(bracket);
        }
        lit(&format!("{}{bracket}", self.newline(0)))
    }

    /// Under [`Whitespace::Indent`], whether the container alternatives of
    /// `nt` are too deep to write (their items would lie deeper than
    /// [`JsonSchemaOptions::max_indent_depth`]); if so `nt` derives the
    /// cut marker instead (no string) and the narrowing is recorded once.
    pub fn indent_cut(&mut self, nt: NtId, ptr: &str) -> Result<bool, SchemaError> {
        let max = self.opts.max_indent_depth;
        if !matches!(self.opts.whitespace, Whitespace::Indent { .. }) || self.jdepth < max {
            return Ok(false);
        }
        let cut = match &self.depth_cut {
            Some((c, _)) => *c,
            None => {
                let c = self.fresh("too-deep", ptr)?;
                self.depth_cut = Some((c, ptr.to_string()));
                self.narrowed.push((
                    ptr.to_string(),
                    format!(
                        "Whitespace::Indent: containers nested more than {max} levels \
                         (JsonSchemaOptions::max_indent_depth) are not written"
                    ),
                ));
                c
            }
        };
        self.g.add_rule(nt, vec![Symbol::Nt(cut)]);
        Ok(true)
    }

    /// The item and key separators of one-line output: `,` and `:`, or
    /// those of [`Whitespace::Separators`] (under [`Whitespace::Indent`],
    /// its separators, the item separator without the line break).
    pub fn separators(&self) -> (&'a str, &'a str) {
        match &self.opts.whitespace {
            Whitespace::Separators {
                item_separator,
                key_separator,
            }
            | Whitespace::Indent {
                item_separator,
                key_separator,
                ..
            } => (item_separator, key_separator),
            _ => (",", ":"),
        }
    }

    /// Alternatives of `nt` for one simple schema.
    fn simple(&mut self, nt: NtId, s: &Simple<'a>) -> Result<(), SchemaError> {
        let types = s.types();
        if let Some(e) = &s.enum_values {
            return self.enum_values(nt, s, types, e);
        }
        if types.contains(TypeSet::NULL) {
            self.g.add_rule(nt, vec![lit("null")]);
        }
        if types.contains(TypeSet::BOOLEAN) {
            self.g.add_rule(nt, vec![lit("true")]);
            self.g.add_rule(nt, vec![lit("false")]);
        }
        if types.intersects(TypeSet::NUMBER | TypeSet::INTEGER) {
            let b = bounds(&s.number);
            let mult = multiple_of(&s.number, &s.ptr)?;
            let number = types.contains(TypeSet::NUMBER);
            if let Some(Multiple::Int(k)) = mult {
                // both bounds: the multiples in range, listed (exact)
                if let Some(values) = bounded_multiples(&b, k) {
                    if values.is_empty() {
                        self.norm
                            .note_unsat(&s.ptr, "the range contains no multipleOf value");
                        return self.simple_rest(nt, s, types);
                    }
                    let by_value = number || !self.norm.integer_lexical;
                    let alts: Vec<String> = values
                        .iter()
                        .map(|v| match (*v, by_value) {
                            (0, true) => "-?0".to_string(),
                            (v, _) => regex_syntax::escape(&v.to_string()),
                        })
                        .collect();
                    let frac = if by_value { r"(?:\.0+)?" } else { "" };
                    self.g
                        .add_rule(nt, vec![re(format!("(?:{}){frac}", alts.join("|")))]);
                    return self.simple_rest(nt, s, types);
                }
                if b.lo.is_some() || b.hi.is_some() {
                    let n = &s.number;
                    let bounds: Vec<String> =
                        ["minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"]
                            .into_iter()
                            .filter_map(|kw| n.describe(kw, &s.ptr))
                            .collect();
                    let at = n.origin("multipleOf", &s.ptr).pointer;
                    return Err(SchemaError::unsupported(
                        "multipleOf",
                        &at,
                        format!(
                            "{} is an integer above 1, implemented only on numbers without \
                             bounds, and the same instance is bounded by {}",
                            n.describe("multipleOf", &s.ptr).unwrap_or_default(),
                            bounds.join(" and ")
                        ),
                    ));
                }
                // by value (a zero fraction, `-0`) except drafts 3–4 integers
                let by_value = number || !self.norm.integer_lexical;
                self.multiples(nt, k, by_value, &s.ptr)?;
                return self.simple_rest(nt, s, types);
            }
            let r = if number {
                let grid = match mult {
                    Some(Multiple::Grid(d)) => Some(d),
                    _ => None,
                };
                number_regex_multiple(&b, grid).map_err(|r| bound_refusal(s, r))?
            } else if self.norm.integer_lexical {
                integer_regex(&b).map_err(|r| bound_refusal(s, r))?
            } else {
                integer_value_regex(&b).map_err(|r| bound_refusal(s, r))?
            };
            match r {
                Some(r) => self.g.add_rule(nt, vec![re(r)]),
                None => self
                    .norm
                    .note_unsat(&s.ptr, "numeric bounds contradict each other"),
            }
        }
        self.simple_rest(nt, s, types)
    }

    /// The string, array and object alternatives of a simple schema.
    fn simple_rest(&mut self, nt: NtId, s: &Simple<'a>, types: TypeSet) -> Result<(), SchemaError> {
        if types.contains(TypeSet::STRING) {
            self.string(nt, s)?;
        }
        if types.contains(TypeSet::ARRAY) {
            self.array(nt, s)?;
        }
        if types.contains(TypeSet::OBJECT) {
            self.object(nt, s)?;
        }
        Ok(())
    }

    /// The string alternatives of `nt`: memoised by the keywords
    /// ([`Emitter::string_memo`]) when they add rules and no note (a
    /// format not enforced, a contradiction) is due at this place; a
    /// built-in format alone (with length bounds at most) is also shared
    /// across the process's grammars ([`string_cache`]).
    fn string(&mut self, nt: NtId, s: &Simple<'a>) -> Result<(), SchemaError> {
        let sk = &s.string;
        let memoable = sk
            .format
            .as_deref()
            .is_none_or(|f| matches!(formats::lookup(f), FormatKind::Regex(_)));
        if !memoable {
            return self.string_rules(nt, s);
        }
        let shared = sk.format.is_some()
            && sk.patterns.is_empty()
            && sk.not_in.is_empty()
            && sk.not_patterns.is_empty();
        if self.string_replay(nt, sk, shared) {
            return Ok(());
        }
        let before = self.g.rules.len();
        let notes = self.note_counts();
        self.string_rules(nt, s)?;
        let rhss: Vec<Vec<Symbol>> = self.g.rules[before..]
            .iter()
            .filter(|r| r.lhs == nt)
            .map(|r| r.rhs.clone())
            .collect();
        if rhss.is_empty() {
            return Ok(());
        }
        // Shared across grammars when the rules are terminals only
        // (nonterminals are this grammar's) and wrote no note (notes name
        // this schema's pointers).
        if shared
            && self.g.rules.len() == before + rhss.len()
            && rhss.iter().flatten().all(|x| matches!(x, Symbol::T(_)))
            && notes == self.note_counts()
        {
            self.string_share(sk, &rhss);
        }
        self.string_memo.insert(sk.clone(), rhss);
        Ok(())
    }

    /// Adds to `nt` the rules string keywords `sk` were written as before:
    /// in this grammar ([`Emitter::string_memo`]) or, when `shared`, in
    /// another ([`string_cache`], whose regex HIRs the grammar then
    /// adopts). Whether there were such rules.
    fn string_replay(&mut self, nt: NtId, sk: &StringKw, shared: bool) -> bool {
        if let Some(rhss) = self.string_memo.get(sk) {
            for rhs in rhss.clone() {
                self.g.add_rule(nt, rhs);
            }
            return true;
        }
        if !shared {
            return false;
        }
        let Some(hit) = string_cache().get(&(self.opts_key, sk.clone())) else {
            return false;
        };
        for (text, hir) in &hit.hirs {
            self.adopt_hir(text, hir);
        }
        for rhs in &hit.rhss {
            self.g.add_rule(nt, rhs.clone());
        }
        self.string_memo.insert(sk.clone(), hit.rhss.clone());
        true
    }

    /// Keeps the rules `rhss` of string keywords `sk` in [`string_cache`],
    /// with the HIRs of their regex terminals.
    fn string_share(&self, sk: &StringKw, rhss: &[Vec<Symbol>]) {
        let mut hirs = Vec::new();
        let mut keep = |t: &String| {
            if let Some(h) = self.g.regex_hir_shared(t) {
                hirs.push((t.clone(), h.clone()));
            }
        };
        for x in rhss.iter().flatten() {
            match x {
                Symbol::T(Terminal::Regex(t) | Terminal::Except(t, _)) => keep(t),
                Symbol::T(Terminal::And(a, b)) => {
                    keep(a);
                    keep(b);
                }
                _ => {}
            }
        }
        let cached = CachedString {
            rhss: rhss.to_vec(),
            hirs,
        };
        string_cache().insert((self.opts_key, sk.clone()), Arc::new(cached));
    }

    /// The HIR of regex terminal `text`, for this grammar unless it has
    /// one (shared, not copied).
    fn adopt_hir(&mut self, text: &str, hir: &Arc<regex_syntax::hir::Hir>) {
        if self.g.regex_hir(text).is_none() {
            self.g.add_regex_hir(text.to_owned(), hir.clone());
        }
    }

    /// How many format notes (ignored, warnings) the grammar has written.
    fn note_counts(&self) -> (usize, usize) {
        (
            self.format_notes.ignored.len(),
            self.format_notes.warnings.len(),
        )
    }

    fn string_rules(&mut self, nt: NtId, s: &Simple<'a>) -> Result<(), SchemaError> {
        let sk = &s.string;
        let min = sk.min_length.unwrap_or(0);
        let max = sk.max_length;
        if max.is_some_and(|m| m < min) {
            self.norm.note_unsat(&s.ptr, "maxLength < minLength");
            return Ok(());
        }
        let nots = not_pattern_hirs(sk, &s.ptr)?;
        if !sk.not_in.is_empty() || !nots.is_empty() {
            let names: Vec<&str> = sk.not_in.iter().map(String::as_str).collect();
            if nots.is_empty()
                && sk.patterns.is_empty()
                && sk.format.is_none()
                && sk.min_length.is_none()
                && sk.max_length.is_none()
            {
                let key = self.excluding_terminal(&names);
                self.g.add_rule(nt, vec![Symbol::T(key)]);
                return Ok(());
            }
            // the product of the patterns/format (those to match and those
            // not to), the length counter and the trie of the excluded strings
            let hirs = string_hir(sk, &s.ptr, &mut self.format_notes)?;
            return self.string_automaton(nt, &hirs, &nots, &names, min, max, &s.ptr);
        }
        match string_hir(sk, &s.ptr, &mut self.format_notes)?.as_slice() {
            [] => {
                let lim = self.opts.max_regex_repeat;
                if min <= lim && max.is_none_or(|m| m <= lim) {
                    self.g.add_rule(nt, vec![re(free_string_regex(min, max))]);
                } else if self.opts.string_blocks
                    && lim >= MIN_BLOCK
                    && max.unwrap_or(min).max(min) / lim < MAX_STRING_BLOCKS
                {
                    self.blocked_string(nt, min, max, lim, &s.ptr)?;
                } else {
                    let mut rhs = vec![lit("\"")];
                    rhs.extend(self.counted_units(min, max)?);
                    rhs.push(lit("\""));
                    self.g.add_rule(nt, rhs);
                }
            }
            [(h, kw)] if with_length(h.clone(), min, max).is_ok() => {
                match with_length(h.clone(), min, max) {
                    Ok(Some(h)) => {
                        let t = self.string_regex(&h, kw, &s.ptr)?;
                        self.g.add_rule(nt, vec![Symbol::T(Terminal::Regex(t))]);
                    }
                    _ => self
                        .norm
                        .note_unsat(&s.ptr, format!("{kw} contradicts minLength/maxLength")),
                }
            }
            [(h, kw)] if self.intersectable(h, min, max) => {
                let a = self.string_regex(h, kw, &s.ptr)?;
                // the least length only where the pattern does not imply it
                let lo = if char_len_range(h).0 >= min { 0 } else { min };
                let b = free_string_regex(lo, max);
                self.g.add_rule(nt, vec![Symbol::T(Terminal::And(a, b))]);
            }
            [(h1, k1), (h2, k2)] if self.opts.intersections && pair_intersectable(h1, h2) => {
                // the length bounds inside one side, where a regex says
                // them (else the product below)
                match with_length(h1.clone(), min, max) {
                    Ok(Some(h1)) => {
                        let a = self.string_regex(&h1, k1, &s.ptr)?;
                        let b = self.string_regex(h2, k2, &s.ptr)?;
                        self.g.add_rule(nt, vec![Symbol::T(Terminal::And(a, b))]);
                    }
                    Ok(None) => self
                        .norm
                        .note_unsat(&s.ptr, format!("{k1} contradicts minLength/maxLength")),
                    Err(_) => {
                        let hirs = [(h1.clone(), *k1), (h2.clone(), *k2)];
                        self.string_automaton(nt, &hirs, &[], &[], min, max, &s.ptr)?
                    }
                }
            }
            hirs => self.string_automaton(nt, hirs, &[], &[], min, max, &s.ptr)?,
        }
        Ok(())
    }

    /// The text of the regex terminal of the JSON strings whose content
    /// `h` matches (keyword `kw`), its HIR kept with the grammar.
    fn string_regex(
        &mut self,
        h: &regex_syntax::hir::Hir,
        kw: &str,
        ptr: &str,
    ) -> Result<String, SchemaError> {
        let h = constrained_string_hir(h)
            .map_err(|r| SchemaError::unsupported(kw, ptr, r.to_string()))?;
        let Terminal::Regex(t) = self.g.regex_terminal(h) else {
            unreachable!("regex_terminal makes a regex terminal")
        };
        Ok(t)
    }

    /// Whether a string of one pattern `h` between `min` and `max`
    /// characters is written as [`Terminal::And`]
    /// ([`JsonSchemaOptions::intersections`]).
    fn intersectable(&self, h: &regex_syntax::hir::Hir, min: u64, max: Option<u64>) -> bool {
        let Some(n) = max else { return false };
        let lo = if char_len_range(h).0 >= min { 0 } else { min };
        self.opts.intersections
            && (MIN_INTERSECTED_LENGTH..=self.opts.max_regex_repeat).contains(&n)
            && lo <= 63
            && h.properties().look_set().is_empty()
    }

    /// A free string of `min..=max` characters, longer than one counted
    /// terminal may be (`max_regex_repeat`, here `block`), as a chain of
    /// counted terminals of at most `block` characters: `block`-character
    /// blocks for the part of `min` above `block`, then per further block
    /// either the rest and the closing quote (`X{lo,block−1}"`) or one more
    /// block. Every length has one parse, each piece is one terminal (built
    /// cheaply as a counter, `zapspec_earley::counted`, and shared by every
    /// string of the grammar), and a token crosses a piece boundary only
    /// once per `block` characters, where the character-level
    /// decomposition ([`Self::counted_units`]) made every character a
    /// boundary.
    fn blocked_string(
        &mut self,
        nt: NtId,
        min: u64,
        max: Option<u64>,
        block: u64,
        ptr: &str,
    ) -> Result<(), SchemaError> {
        let rep = |lo: u64, hi: Option<u64>| match hi {
            None => format!("{{{lo},}}"),
            Some(h) if h == lo => format!("{{{lo}}}"),
            Some(h) => format!("{{{lo},{h}}}"),
        };
        let piece = |first: bool, lo: u64, hi: Option<u64>, close: bool| {
            format!(
                "{}{FREE_UNIT}{}{}",
                if first { "\"" } else { "" },
                rep(lo, hi),
                if close { "\"" } else { "" }
            )
        };
        let (mut cur, mut lo, mut hi, mut first) = (nt, min, max, true);
        loop {
            if hi.is_some_and(|h| h <= block) {
                self.g.add_rule(cur, vec![re(piece(first, lo, hi, true))]);
                return Ok(());
            }
            if lo < block {
                if hi.is_none() {
                    self.g.add_rule(cur, vec![re(piece(first, lo, None, true))]);
                    return Ok(());
                }
                // the rest ends in this block, or a full block follows
                let end = Some(block - 1);
                self.g.add_rule(cur, vec![re(piece(first, lo, end, true))]);
                lo = block;
            }
            let next = self.fresh("chars-block", ptr)?;
            let full = Some(block);
            self.g.add_rule(
                cur,
                vec![re(piece(first, block, full, false)), Symbol::Nt(next)],
            );
            cur = next;
            lo -= block;
            hi = hi.map(|h| h - block);
            first = false;
        }
    }

    /// A string whose content matches every HIR of `hirs` (`pattern`,
    /// `format`) and none of `nots` (`not: {pattern}`), is none of
    /// `excluded` (`not: {enum: [strings]}`) and has between `min` and
    /// `max` characters, where no single regex says so: the product
    /// automaton of the HIRs, the trie of `excluded` and a character
    /// counter ([`super::keys::KeyAutomaton::with_length`]), whose region
    /// "every pattern of `hirs` and none of `nots`" is written as a regex or
    /// a right-linear grammar.
    #[allow(clippy::too_many_arguments)]
    fn string_automaton(
        &mut self,
        nt: NtId,
        hirs: &[(regex_syntax::hir::Hir, &'static str)],
        nots: &[regex_syntax::hir::Hir],
        excluded: &[&str],
        min: u64,
        max: Option<u64>,
        ptr: &str,
    ) -> Result<(), SchemaError> {
        let kw = match hirs {
            [] => "not",
            [(_, k)] => k,
            _ => "format",
        };
        let pats: Vec<KeyPattern> = hirs
            .iter()
            .map(|(h, k)| KeyPattern::from_hir(k, h.clone()))
            .chain(nots.iter().map(|h| KeyPattern::from_hir("not", h.clone())))
            .collect::<Result<_, _>>()
            .map_err(|r| r.into_schema(kw, ptr, ""))?;
        let refs: Vec<&KeyPattern> = pats.iter().collect();
        let ka = KeyAutomaton::with_length(&refs, hirs.len(), excluded, min, max).map_err(|r| {
            r.into_schema(
                kw,
                ptr,
                &format!("{kw} with minLength/maxLength or another pattern: "),
            )
        })?;
        // at most 64 patterns here (else `with_length` failed)
        let must = match hirs.len() {
            0 => 0,
            n => u64::MAX >> (64 - n),
        };
        let r = ka.region(must);
        if r.states.is_empty() {
            self.norm.note_unsat(
                ptr,
                format!("{kw} contradicts minLength/maxLength or another pattern"),
            );
            return Ok(());
        }
        let sym = match r.to_regex() {
            Some(x) => re(x),
            None => self.region_key(&r, ptr)?,
        };
        self.g.add_rule(nt, vec![sym]);
        Ok(())
    }

    /// The canonical integers that are multiples of `k` (`by_value`: also
    /// written with a zero fraction `.0…`, and zero as `-0`, as every draft
    /// reads `number` and drafts 6+ `integer`): a right-linear grammar
    /// whose states are the residues mod `k` of the digits read so far.
    fn multiples(
        &mut self,
        nt: NtId,
        k: u64,
        by_value: bool,
        ptr: &str,
    ) -> Result<(), SchemaError> {
        let frac = if by_value {
            let f = self.fresh("zero-frac", ptr)?;
            self.g.add_rule(f, vec![]);
            self.g.add_rule(f, vec![re(r"\.0+".to_string())]);
            vec![Symbol::Nt(f)]
        } else {
            vec![]
        };
        let res: Vec<NtId> = (0..k)
            .map(|r| self.fresh(&format!("mod{k}-{r}"), ptr))
            .collect::<Result<_, _>>()?;
        let digits = |from: u64| {
            let mut by: Vec<(u64, Vec<char>)> = Vec::new();
            for d in from..10 {
                let c = char::from(b'0' + d as u8);
                let t = d % k;
                match by.iter_mut().find(|(x, _)| *x == t) {
                    Some((_, v)) => v.push(c),
                    None => by.push((t, vec![c])),
                }
            }
            by
        };
        for r in 0..k {
            if r == 0 {
                self.g.add_rule(res[0], frac.clone());
            }
            for (t, cs) in digits(0) {
                let to = (10 * r + t) % k;
                let class = CharClass::new(cs.iter().map(|&c| (c, c)), false);
                self.g.add_rule(
                    res[r as usize],
                    vec![
                        Symbol::T(Terminal::Class(class)),
                        Symbol::Nt(res[to as usize]),
                    ],
                );
            }
        }
        let pos = self.fresh(&format!("mod{k}-pos"), ptr)?;
        for (t, cs) in digits(1) {
            let class = CharClass::new(cs.iter().map(|&c| (c, c)), false);
            self.g.add_rule(
                pos,
                vec![
                    Symbol::T(Terminal::Class(class)),
                    Symbol::Nt(res[t as usize]),
                ],
            );
        }
        let mut zero = vec![lit("0")];
        zero.extend(frac.iter().cloned());
        self.g.add_rule(nt, zero);
        if by_value {
            // zero written `-0`
            let mut neg_zero = vec![lit("-0")];
            neg_zero.extend(frac);
            self.g.add_rule(nt, neg_zero);
        }
        self.g.add_rule(nt, vec![Symbol::Nt(pos)]);
        self.g.add_rule(nt, vec![lit("-"), Symbol::Nt(pos)]);
        Ok(())
    }

    /// Symbols deriving between `min` and `max` string characters with
    /// O(log max) nonterminals: `P_k` derives exactly 2^k characters,
    /// `Q_k` between 0 and 2^k − 1.
    fn counted_units(&mut self, min: u64, max: Option<u64>) -> Result<Vec<Symbol>, SchemaError> {
        let unit = match self.unit {
            Some(u) => u,
            None => {
                let u = self.g.add_nonterminal("char");
                self.g.add_rule(u, vec![re(FREE_UNIT.to_string())]);
                let star = self.g.add_nonterminal("chars");
                self.g.add_rule(star, vec![]);
                self.g.add_rule(star, vec![Symbol::Nt(u), Symbol::Nt(star)]);
                self.unit = Some(u);
                self.star = Some(star);
                self.pow.push(u);
                let q0 = self.g.add_nonterminal("chars-below-1");
                self.g.add_rule(q0, vec![]);
                self.below_pow.push(q0);
                u
            }
        };
        let _ = unit;
        let star = self.star.unwrap_or(unit);
        let mut out = Vec::new();
        // exactly `min`: P_k for the set bits of min
        for k in 0..64 {
            if min >> k & 1 == 1 {
                out.push(Symbol::Nt(self.pow_nt(k)));
            }
        }
        match max {
            None => out.push(Symbol::Nt(star)),
            Some(m) => out.extend(self.counted_upto(m - min)?),
        }
        Ok(out)
    }

    /// Between 0 and `r` characters: with 2^k ≤ r < 2^(k+1),
    /// `≤ r  =  Q_k | P_k (≤ r − 2^k)`.
    fn counted_upto(&mut self, r: u64) -> Result<Vec<Symbol>, SchemaError> {
        if r == 0 {
            return Ok(vec![]);
        }
        let k = 63 - r.leading_zeros() as usize;
        let chain = self.fresh("chars-upto", "")?;
        let q = self.below_nt(k);
        self.g.add_rule(chain, vec![Symbol::Nt(q)]);
        let p = self.pow_nt(k);
        let mut rhs = vec![Symbol::Nt(p)];
        rhs.extend(self.counted_upto(r - (1 << k))?);
        self.g.add_rule(chain, rhs);
        Ok(vec![Symbol::Nt(chain)])
    }

    /// `P_k`: exactly 2^k characters.
    fn pow_nt(&mut self, k: usize) -> NtId {
        while self.pow.len() <= k {
            let prev = self.pow[self.pow.len() - 1];
            let nt = self
                .g
                .add_nonterminal(&format!("chars-x{}", 1u64 << self.pow.len()));
            self.g
                .add_rule(nt, vec![Symbol::Nt(prev), Symbol::Nt(prev)]);
            self.pow.push(nt);
        }
        self.pow[k]
    }

    /// `Q_k`: between 0 and 2^k − 1 characters.
    fn below_nt(&mut self, k: usize) -> NtId {
        while self.below_pow.len() <= k {
            let j = self.below_pow.len();
            let prev = self.below_pow[j - 1];
            let p = self.pow_nt(j - 1);
            let nt = self
                .g
                .add_nonterminal(&format!("chars-below-{}", 1u64 << j));
            self.g.add_rule(nt, vec![Symbol::Nt(prev)]);
            self.g.add_rule(nt, vec![Symbol::Nt(p), Symbol::Nt(prev)]);
            self.below_pow.push(nt);
        }
        self.below_pow[k]
    }

    pub fn child(
        &mut self,
        v: &Sub<'a>,
        ptr: &str,
        kw: &str,
        key: &str,
    ) -> Result<NtId, SchemaError> {
        let p = push_ptr(&push_ptr(ptr, kw), key);
        self.node(v, &p)
    }
}

/// Removes rules that mention a nonterminal deriving no string; returns
/// which nonterminals derive some string. Language-preserving.
pub(crate) fn prune_unproductive(g: &mut Grammar) -> Vec<bool> {
    let productive = productive_set(g, None);
    g.rules.retain(|r| {
        productive[r.lhs.index()]
            && r.rhs
                .iter()
                .all(|s| !matches!(s, Symbol::Nt(x) if !productive[x.index()]))
    });
    productive
}

/// Which nonterminals derive some string, taking `assume` (if any) to
/// derive one: a worklist over the rules that use each nonterminal (each
/// rule waits for its nonterminal occurrences), linear in the grammar's
/// size where a fixpoint over all rules took a pass per level of nesting.
fn productive_set(g: &Grammar, assume: Option<NtId>) -> Vec<bool> {
    let n = g.num_nonterminals();
    let mut productive = vec![false; n];
    // the rules each nonterminal occurs in (once per occurrence), as one
    // flat list with offsets
    let mut start = vec![0u32; n + 1];
    for r in &g.rules {
        for s in &r.rhs {
            if let Symbol::Nt(x) = s {
                start[x.index() + 1] += 1;
            }
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut uses = vec![0u32; start[n] as usize];
    let mut waiting = vec![0u32; g.rules.len()];
    for (ri, r) in g.rules.iter().enumerate() {
        for s in &r.rhs {
            if let Symbol::Nt(x) = s {
                uses[fill[x.index()] as usize] = ri as u32;
                fill[x.index()] += 1;
                waiting[ri] += 1;
            }
        }
    }
    let mut work: Vec<usize> = Vec::new();
    let mark = |x: usize, productive: &mut Vec<bool>, work: &mut Vec<usize>| {
        if !productive[x] {
            productive[x] = true;
            work.push(x);
        }
    };
    if let Some(a) = assume {
        mark(a.index(), &mut productive, &mut work);
    }
    for (ri, r) in g.rules.iter().enumerate() {
        if waiting[ri] == 0 {
            mark(r.lhs.index(), &mut productive, &mut work);
        }
    }
    while let Some(x) = work.pop() {
        for &ri in &uses[start[x] as usize..start[x + 1] as usize] {
            let w = &mut waiting[ri as usize];
            *w -= 1;
            if *w == 0 {
                mark(g.rules[ri as usize].lhs.index(), &mut productive, &mut work);
            }
        }
    }
    productive
}

/// Whether a string matching two patterns (`pattern` and `format`, two
/// `allOf` patterns) is written as [`Terminal::And`] of their two string
/// regexes, which the engine intersects from their automata, rather than
/// as this compiler's product written back as one regex
/// ([`Emitter::string_automaton`]): when neither looks around (the
/// engine's intersection reads plain automata).
fn pair_intersectable(a: &regex_syntax::hir::Hir, b: &regex_syntax::hir::Hir) -> bool {
    a.properties().look_set().is_empty() && b.properties().look_set().is_empty()
}

#[cfg(test)]
mod productive_tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition: the least fixpoint, by passes over all rules.
    fn reference(g: &Grammar, assume: Option<NtId>) -> Vec<bool> {
        let mut p = vec![false; g.num_nonterminals()];
        if let Some(a) = assume {
            p[a.index()] = true;
        }
        loop {
            let mut changed = false;
            for r in &g.rules {
                if !p[r.lhs.index()]
                    && r.rhs
                        .iter()
                        .all(|s| !matches!(s, Symbol::Nt(x) if !p[x.index()]))
                {
                    p[r.lhs.index()] = true;
                    changed = true;
                }
            }
            if !changed {
                return p;
            }
        }
    }

    proptest! {
        #[test]
        fn worklist_equals_the_fixpoint(
            n in 1usize..8,
            rules in proptest::collection::vec(
                (0usize..8, proptest::collection::vec(proptest::option::of(0usize..8), 0..4)),
                0..16,
            ),
            assume in proptest::option::of(0usize..8),
        ) {
            let mut g = Grammar::default();
            let nts: Vec<NtId> = (0..n).map(|i| g.add_nonterminal(&format!("n{i}"))).collect();
            for (lhs, rhs) in rules {
                let rhs = rhs
                    .into_iter()
                    .map(|x| match x {
                        Some(i) => Symbol::Nt(nts[i % n]),
                        None => lit("a"),
                    })
                    .collect();
                g.add_rule(nts[lhs % n], rhs);
            }
            let assume = assume.map(|i| nts[i % n]);
            prop_assert_eq!(productive_set(&g, assume), reference(&g, assume));
        }
    }
}
