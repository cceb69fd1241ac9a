//! `Grammar`: a grammar before it meets a tokenizer (XGrammar's
//! `Grammar`): from a JSON Schema, GBNF text, a regex, or the builtin JSON
//! grammar. Holds zapspec's grammar IR and a key (the source text and
//! options) that the compiler caches by.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use zapspec_grammar::{Grammar as Ir, Symbol, Terminal, JSON_CONTAINER_GBNF};
use zapspec_jsonschema::{
    compile_json_schema_report, JsonSchemaOptions, OneOfMode, PropertyOrder, RegexDialect,
    UnknownFormats, UnknownKeywords, Whitespace, EARLEY_MAX_REGEX_REPEAT,
};

use crate::errors::{
    ebnf_error, grammar_error, guard, invalid_json, kind, raise, schema_error,
    structural_tag_error, Fields,
};
use crate::tokenizer::{check_serialized, SERIALIZATION_VERSION};
use zapspec_structtag::{
    parse_structural_tag, tool_calling_format, Reasoning, StructTagCompiler, StructTagOptions,
    Tool, ToolCallOptions, ToolChoice,
};

/// A grammar and the text it was made from.
#[derive(Debug)]
pub(crate) struct GrammarInner {
    /// The grammar IR the engine compiles.
    pub ir: Ir,
    /// What the compiler's cache is keyed by: the kind, the source text
    /// (a schema canonicalised by `serde_json`) and the options.
    pub key: String,
    /// For a grammar parsed from EBNF, how many of its nonterminals are
    /// rules the text defines (ids `0..named`, in definition order; the
    /// rest are the nonterminals the parser makes for groups and
    /// repetitions). `None`: every nonterminal counts as written.
    pub named: Option<usize>,
}

impl GrammarInner {
    /// A grammar whose nonterminals all count as written (not parsed from
    /// EBNF), cached under `key`.
    pub(crate) fn new(ir: Ir, key: String) -> Arc<Self> {
        Arc::new(GrammarInner {
            ir,
            key,
            named: None,
        })
    }
}

/// A grammar: build it with one of the static constructors, compile it for
/// a tokenizer with `GrammarCompiler.compile_grammar`. `str(grammar)` is
/// its GBNF.
#[pyclass(frozen, module = "zapspec")]
pub struct Grammar {
    pub(crate) inner: Arc<GrammarInner>,
}

/// The options of [`JsonSchemaOptions`] and XGrammar's
/// `compile_json_schema` keywords, read from a keyword dict: every field
/// of the Rust compiler is reachable. Unknown keywords are a `TypeError`.
pub(crate) fn schema_options(
    py: Python<'_>,
    kw: Option<&Bound<'_, PyDict>>,
) -> PyResult<(JsonSchemaOptions, String)> {
    let mut o = JsonSchemaOptions {
        // the engine builds any count in constant space (see the crate docs
        // of zapspec-jsonschema): no block boundaries inside strings
        max_regex_repeat: EARLEY_MAX_REGEX_REPEAT,
        // XGrammar's strict_mode=True default
        closed_objects: true,
        // XGrammar compiles a `oneOf` whose branches overlap as `anyOf`
        // (a looser grammar); `one_of="require_disjoint"` is zapspec's
        // exact reading (refused unless the branches are disjoint)
        one_of: OneOfMode::AsAnyOf,
        ..JsonSchemaOptions::default()
    };
    // XGrammar's default: any whitespace between tokens
    let mut any_whitespace = true;
    let mut indent: Option<i64> = None;
    let mut separators: Option<(String, String)> = None;
    let mut max_ws: Option<usize> = None;
    let bad = |k: &str, why: &str| {
        raise(
            py,
            "SchemaError",
            format!("option {k}: {why}"),
            kind("option"),
        )
    };
    if let Some(kw) = kw {
        for (k, v) in kw.iter() {
            let k: String = k.extract()?;
            match k.as_str() {
                "any_whitespace" => any_whitespace = v.extract()?,
                "indent" => indent = v.extract()?,
                "separators" => separators = v.extract()?,
                "max_whitespace_cnt" => max_ws = v.extract()?,
                // XGrammar's debugging switch: the GBNF is `str(grammar)`
                "print_converted_ebnf" => {
                    let _: bool = v.extract()?;
                }
                "strict_mode" => o.closed_objects = v.extract()?,
                "any_order" => {
                    o.property_order = if v.extract()? {
                        PropertyOrder::Any
                    } else {
                        PropertyOrder::Schema
                    }
                }
                "one_of" => {
                    o.one_of = match v.extract::<String>()?.as_str() {
                        "require_disjoint" => OneOfMode::RequireDisjoint,
                        "as_any_of" => OneOfMode::AsAnyOf,
                        _ => return Err(bad(&k, "expected 'require_disjoint' or 'as_any_of'")),
                    }
                }
                "unknown_keywords" => {
                    o.unknown_keywords = match v.extract::<String>()?.as_str() {
                        "ignore" => UnknownKeywords::Ignore,
                        "reject" | "refuse" => UnknownKeywords::Reject,
                        _ => return Err(bad(&k, "expected 'ignore' or 'reject'")),
                    }
                }
                "unknown_formats" => {
                    o.unknown_formats = match v.extract::<String>()?.as_str() {
                        "annotation" => UnknownFormats::Annotation,
                        "refuse" => UnknownFormats::Refuse,
                        _ => return Err(bad(&k, "expected 'annotation' or 'refuse'")),
                    }
                }
                "lenient_formats" => o.lenient_formats = v.extract()?,
                "openapi_nullable" => o.openapi_nullable = v.extract()?,
                "intersections" => o.intersections = v.extract()?,
                "string_blocks" => o.string_blocks = v.extract()?,
                "max_branches" => o.max_branches = v.extract()?,
                "max_nonterminals" => o.max_nonterminals = v.extract()?,
                "max_counted_items" => o.max_counted_items = v.extract()?,
                "max_regex_repeat" => o.max_regex_repeat = v.extract()?,
                "max_depth" => o.max_depth = v.extract()?,
                "max_json_depth" => o.max_json_depth = v.extract()?,
                "max_indent_depth" => o.max_indent_depth = v.extract()?,
                "max_unique_values" => o.max_unique_values = v.extract()?,
                "max_unique_states" => o.max_unique_states = v.extract()?,
                "max_any_order_properties" => o.max_any_order_properties = v.extract()?,
                "time_budget_s" => {
                    let s: f64 = v.extract()?;
                    if !(s.is_finite() && s > 0.0) {
                        return Err(bad(&k, "must be a positive number of seconds"));
                    }
                    o.time_budget = std::time::Duration::from_secs_f64(s);
                }
                _ => {
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "unexpected keyword argument '{k}' for a JSON Schema grammar"
                    )))
                }
            }
        }
    }
    // XGrammar: any_whitespace=True ignores indent and separators
    o.whitespace = if any_whitespace {
        // XGrammar: no bound unless max_whitespace_cnt is given
        Whitespace::Flexible {
            max_ws: max_ws.unwrap_or(usize::MAX),
        }
    } else if let Some(n) = indent {
        // json.dumps(indent=n): one item a line; XGrammar's (and
        // json.dumps's) separators with an indent are "," and ": "
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n <= 256)
            .ok_or_else(|| bad("indent", "must be None or an integer from 0 to 256"))?;
        let (item, key) = separators.unwrap_or_else(|| (",".into(), ": ".into()));
        Whitespace::Indent {
            indent: " ".repeat(n),
            item_separator: item,
            key_separator: key,
        }
    } else {
        // XGrammar's convention (Python's json.dumps): ", " and ": " when
        // no separators are given
        let (item, key) = separators.unwrap_or_else(|| (", ".into(), ": ".into()));
        if item == "," && key == ":" {
            Whitespace::Compact
        } else {
            Whitespace::Separators {
                item_separator: item,
                key_separator: key,
            }
        }
    };
    let key = format!("{o:?}");
    Ok((o, key))
}

/// `schema` compiled with the GIL released; each relaxation the compiler
/// reports (a `oneOf` compiled as `anyOf`, a format as an annotation)
/// becomes a Python `UserWarning` naming its JSON pointer.
pub(crate) fn compile_schema(
    py: Python<'_>,
    value: &serde_json::Value,
    opts: &JsonSchemaOptions,
) -> PyResult<Ir> {
    let (ir, report) = py
        .detach(|| compile_json_schema_report(value, opts))
        .map_err(|e| schema_error(py, &e))?;
    warn_relaxations(py, &report.warnings)?;
    Ok(ir)
}

/// Each relaxation of the schema compiler as a Python `UserWarning`.
fn warn_relaxations(py: Python<'_>, warnings: &[(String, String)]) -> PyResult<()> {
    for (pointer, message) in warnings {
        let msg = std::ffi::CString::new(format!("at `{pointer}`: {message}"))
            .unwrap_or_else(|_| c"a JSON Schema relaxation".into());
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyUserWarning>(),
            &msg,
            1,
        )?;
    }
    Ok(())
}

/// The process's structural-tag compiler: JSON bodies compiled with
/// XGrammar's defaults (as `Grammar.from_json_schema` without keywords),
/// their grammars kept for the next request that names the same schema.
static STRUCTURAL_TAGS: std::sync::LazyLock<std::sync::Mutex<Option<StructTagCompiler>>> =
    std::sync::LazyLock::new(|| std::sync::Mutex::new(None));

/// A structural tag's JSON text parsed: `InvalidJSONError` with
/// XGrammar's wording ("Failed to parse JSON") and the line and column.
pub(crate) fn structural_tag_value(py: Python<'_>, text: &str) -> PyResult<serde_json::Value> {
    serde_json::from_str(text).map_err(|e| {
        raise(
            py,
            "InvalidJSONError",
            format!("Failed to parse JSON: {e}"),
            Fields {
                kind: Some("invalid json".into()),
                position: Some((e.line(), e.column())),
                ..Fields::default()
            },
        )
    })
}

/// The JSON text of a structural tag from what `from_structural_tag`
/// takes (`zapspec.structural_tag._structural_tag_json`).
pub(crate) fn structural_tag_text(
    py: Python<'_>,
    args: &Bound<'_, pyo3::types::PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    py.import("zapspec.structural_tag")?
        .getattr("_structural_tag_json")?
        .call(args, kwargs)?
        .extract()
}

/// A JSON Schema argument as `serde_json`: a `str` is parsed, a Pydantic
/// model class gives its `model_json_schema()`, anything else (a `dict`,
/// `bool`) goes through `json.dumps`.
pub(crate) fn schema_value(
    py: Python<'_>,
    schema: &Bound<'_, PyAny>,
) -> PyResult<serde_json::Value> {
    let text: String = if let Ok(s) = schema.cast::<PyString>() {
        s.extract::<String>()?
    } else {
        let obj = if schema.hasattr("model_json_schema")? {
            schema.call_method0("model_json_schema")?
        } else {
            schema.clone()
        };
        py.import("json")?
            .call_method1("dumps", (obj,))
            .map_err(|e| {
                raise(
                    py,
                    "SchemaError",
                    format!("the schema is not JSON-serialisable: {e}"),
                    kind("invalid json"),
                )
            })?
            .extract()?
    };
    serde_json::from_str(&text).map_err(|e| invalid_json(py, "the schema", &e))
}

impl Grammar {
    /// The serialized form (`serialize_json`).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "__VERSION__": SERIALIZATION_VERSION,
            "kind": "Grammar",
            "gbnf": self.inner.ir.to_string(),
            "key": self.inner.key,
        })
    }

    /// The grammar of a serialized form whose version was checked.
    pub(crate) fn from_json(py: Python<'_>, v: &serde_json::Value) -> PyResult<Arc<GrammarInner>> {
        let field = |k: &str| {
            v.get(k).and_then(|x| x.as_str()).ok_or_else(|| {
                raise(
                    py,
                    "DeserializeFormatError",
                    format!("serialized Grammar: no string {k:?}"),
                    kind("format"),
                )
            })
        };
        let (gbnf, key) = (field("gbnf")?, field("key")?);
        let ir = Ir::from_gbnf(gbnf).map_err(|e| {
            raise(
                py,
                "DeserializeFormatError",
                format!("serialized Grammar: its GBNF does not parse: {e}"),
                kind("format"),
            )
        })?;
        Ok(GrammarInner::new(ir, key.to_string()))
    }

    pub(crate) fn json_schema(
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Arc<GrammarInner>> {
        let value = schema_value(py, schema)?;
        let (opts, okey) = schema_options(py, kw)?;
        // XGrammar's named JSON value rules (`basic_string`, ...) beside the
        // schema's: grammar text written against XGrammar's printed rules
        // extends `str(grammar)`; the language is the schema's
        let ir =
            zapspec_jsonschema::with_library(&compile_schema(py, &value, &opts)?, &opts.whitespace);
        Ok(GrammarInner::new(
            ir,
            format!("json\u{0}{value}\u{0}{okey}"),
        ))
    }

    /// `union` (one alternative per grammar) or `concat` (one sequence).
    fn combine(py: Python<'_>, how: &str, grammars: &[PyRef<'_, Grammar>]) -> PyResult<Grammar> {
        if grammars.is_empty() {
            return Err(raise(
                py,
                "GrammarError",
                format!("Grammar.{how} needs at least one grammar"),
                kind("invalid"),
            ));
        }
        let mut ir = Ir::new();
        let root = ir.add_nonterminal("root");
        let mut parts = Vec::with_capacity(grammars.len());
        let mut keys = vec![how.to_string()];
        for (i, g) in grammars.iter().enumerate() {
            parts.push(zapspec_grammar::Symbol::Nt(
                ir.embed(&g.inner.ir, &format!("{how}{i}-")),
            ));
            keys.push(g.inner.key.clone());
        }
        ir.start = root;
        if how == "union" {
            for p in parts {
                ir.add_rule(root, vec![p]);
            }
        } else {
            ir.add_rule(root, parts);
        }
        Ok(Grammar {
            inner: GrammarInner::new(ir, keys.join("\u{0}")),
        })
    }

    /// The grammar of a Lark text: `%json` schemas compiled with
    /// `from_json_schema`'s defaults, `@name` from `named` (a `Grammar`, or
    /// Lark text with its own `start`).
    pub(crate) fn lark(
        py: Python<'_>,
        text: &str,
        named: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Arc<GrammarInner>> {
        let mut keys: Vec<String> = Vec::new();
        let mut resolve = |e: zapspec_grammar::LarkEmbed<'_>| -> Result<Ir, String> {
            match e {
                zapspec_grammar::LarkEmbed::Json(schema) => {
                    let value: serde_json::Value =
                        serde_json::from_str(schema).map_err(|e| format!("bad JSON: {e}"))?;
                    let (opts, _) = schema_options(py, None).map_err(|e| e.to_string())?;
                    compile_schema(py, &value, &opts).map_err(|e| e.to_string())
                }
                zapspec_grammar::LarkEmbed::Named(name) => {
                    let item = named
                        .and_then(|d| d.get_item(name).ok().flatten())
                        .ok_or_else(|| format!("unknown named grammar '@{name}'"))?;
                    let inner = if let Ok(g) = item.cast::<Grammar>() {
                        g.get().inner.clone()
                    } else if let Ok(src) = item.extract::<String>() {
                        Self::lark(py, &src, None).map_err(|e| e.to_string())?
                    } else {
                        return Err(format!(
                            "named_grammars[{name:?}] is neither a Grammar nor Lark text"
                        ));
                    };
                    keys.push(format!("{name}\u{0}{}", inner.key));
                    Ok(inner.ir.clone())
                }
            }
        };
        let ir =
            zapspec_grammar::from_lark(text, &mut resolve).map_err(|e| grammar_error(py, &e))?;
        Ok(GrammarInner::new(
            ir,
            format!("lark\u{0}{text}\u{0}{}", keys.join("\u{0}")),
        ))
    }

    pub(crate) fn ebnf(py: Python<'_>, text: &str, root: &str) -> PyResult<Arc<GrammarInner>> {
        // XGrammar's macros (`Regex`, `Substring`, `TagDispatch`) with its
        // reading of a `Regex` pattern
        let parsed =
            zapspec_grammar::parse_gbnf_with(text, &zapspec_jsonschema::xgrammar_regex_reader)
                .map_err(|e| ebnf_error(py, &e))?;
        let named = Some(parsed.named);
        let mut ir = parsed.grammar;
        match ir.nonterminal(root) {
            Some(nt) => ir.start = nt,
            None if root == "root" => {} // the parser's default: the first rule
            None => {
                return Err(raise(
                    py,
                    "GrammarError",
                    format!("the grammar has no rule named {root:?} (root_rule_name)"),
                    kind("undefined nonterminal"),
                ))
            }
        }
        Ok(Arc::new(GrammarInner {
            ir,
            named,
            key: format!("ebnf\u{0}{root}\u{0}{text}"),
        }))
    }

    /// The grammar of a structural tag's JSON text.
    pub(crate) fn structural_tag(py: Python<'_>, text: &str) -> PyResult<Arc<GrammarInner>> {
        Self::structural_tag_of(py, structural_tag_value(py, text)?)
    }

    /// The grammar of a structural tag already parsed from JSON.
    pub(crate) fn structural_tag_of(
        py: Python<'_>,
        value: serde_json::Value,
    ) -> PyResult<Arc<GrammarInner>> {
        let format = parse_structural_tag(&value).map_err(|e| structural_tag_error(py, &e))?;
        let (json, _) = schema_options(py, None)?;
        let (ir, report) = py
            .detach(|| {
                let mut slot = STRUCTURAL_TAGS.lock().unwrap_or_else(|p| p.into_inner());
                let c = slot.get_or_insert_with(|| {
                    StructTagCompiler::new(StructTagOptions {
                        json,
                        ..StructTagOptions::default()
                    })
                });
                c.lower(&format)
            })
            .map_err(|e| structural_tag_error(py, &e))?;
        warn_relaxations(py, &report.warnings)?;
        Ok(GrammarInner::new(ir, format!("stag\u{0}{value}")))
    }

    pub(crate) fn regex(py: Python<'_>, source: &str) -> PyResult<Arc<GrammarInner>> {
        Self::regex_in(py, source, RegexDialect::Strict)
    }

    /// [`Grammar::regex`] in `dialect` (`Strict` is XGrammar's reading:
    /// `a{,3}` and `[]` refused; `AnnexB` reads them as ECMAScript does
    /// without the `u` flag: literal text, the class matching nothing).
    pub(crate) fn regex_in(
        py: Python<'_>,
        source: &str,
        dialect: RegexDialect,
    ) -> PyResult<Arc<GrammarInner>> {
        // XGrammar's regexes are ECMAScript's (a `[` inside a class is
        // literal, `\d` is ASCII): rewritten for the engine's dialect
        let translated = zapspec_jsonschema::ecma_regex_to_regex_syntax_in(source, dialect)
            .map_err(|m| regex_refusal(py, &m))?;
        let pattern = translated.as_str();
        if let Err(e) = regex_syntax::Parser::new().parse(pattern) {
            let (offset, msg) = match &e {
                regex_syntax::Error::Parse(p) => (p.span().start.offset, p.kind().to_string()),
                regex_syntax::Error::Translate(t) => (t.span().start.offset, t.kind().to_string()),
                _ => (0, e.to_string()),
            };
            return Err(raise(
                py,
                "GrammarError",
                format!("bad regex at offset {offset}: {msg}"),
                Fields {
                    kind: Some("regex".into()),
                    position: Some((1, pattern[..offset.min(pattern.len())].chars().count() + 1)),
                    ..Fields::default()
                },
            ));
        }
        let mut ir = Ir::new();
        let root = ir.add_nonterminal("root");
        ir.add_rule(root, vec![Symbol::T(Terminal::Regex(pattern.to_string()))]);
        ir.start = root;
        let tag = match dialect {
            RegexDialect::Strict => "",
            RegexDialect::AnnexB => "annex-b\u{0}",
        };
        Ok(GrammarInner::new(ir, format!("regex\u{0}{tag}{source}")))
    }
}

#[pymethods]
impl Grammar {
    /// The grammar of JSON documents valid under `schema` (a `str`, a
    /// `dict`, or a Pydantic model class). XGrammar's keywords
    /// (`any_whitespace=True` — any whitespace, `indent` and `separators` then ignored —, `indent=None` — with `any_whitespace=False`, one line; `indent=n`: laid out as `json.dumps(indent=n)` —,
    /// `separators=None` → `(", ", ": ")` on one line, `(",", ": ")` with an indent, `strict_mode=True`: objects
    /// without `additionalProperties` are closed, `max_whitespace_cnt`,
    /// `any_order`) and every option of zapspec's compiler (`one_of`,
    /// `lenient_formats`, `unknown_formats`, `unknown_keywords`,
    /// `openapi_nullable`, `intersections`, `string_blocks`,
    /// `max_branches`, `max_nonterminals`, `max_counted_items`,
    /// `max_regex_repeat`, `max_depth`, `max_json_depth`, `max_indent_depth`,
    /// `max_unique_values`, `max_unique_states`,
    /// `max_any_order_properties`, `time_budget_s`). A schema the compiler
    /// cannot enforce exactly is refused with `zapspec.SchemaError`
    /// (`kind`, `pointer`), never loosened silently.
    #[staticmethod]
    #[pyo3(signature = (schema, **kwargs))]
    fn from_json_schema(
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        guard(|| {
            Ok(Grammar {
                inner: Self::json_schema(py, schema, kwargs)?,
            })
        })
    }

    /// A grammar in GBNF (llama.cpp's format, as XGrammar reads it), with
    /// `/regex/` terminals as an extension. The start rule is
    /// `root_rule_name`.
    #[staticmethod]
    #[pyo3(signature = (ebnf_string, *, root_rule_name = "root"))]
    fn from_ebnf(py: Python<'_>, ebnf_string: &str, root_rule_name: &str) -> PyResult<Self> {
        guard(|| {
            Ok(Grammar {
                inner: Self::ebnf(py, ebnf_string, root_rule_name)?,
            })
        })
    }

    /// The strings any of `grammars` matches (XGrammar's
    /// `Grammar.union`); at least one grammar.
    #[staticmethod]
    #[pyo3(signature = (*grammars))]
    fn union(py: Python<'_>, grammars: Vec<PyRef<'_, Grammar>>) -> PyResult<Self> {
        Self::combine(py, "union", &grammars)
    }

    /// The concatenations of one string of each of `grammars`, in order
    /// (XGrammar's `Grammar.concat`); at least one grammar.
    #[staticmethod]
    #[pyo3(signature = (*grammars))]
    fn concat(py: Python<'_>, grammars: Vec<PyRef<'_, Grammar>>) -> PyResult<Self> {
        Self::combine(py, "concat", &grammars)
    }

    /// A grammar in Lark syntax (llguidance's and XGrammar's dialect; the
    /// crate docs of `zapspec_grammar::lark` list what is read): rules and
    /// terminals, `start` as the start rule, `%import common`, `%ignore`,
    /// `%json { schema }` (compiled as `from_json_schema` compiles it),
    /// `@name` from `named_grammars` (a `Grammar` or Lark text). Special
    /// tokens and rule attributes are refused (`zapspec.GrammarError`,
    /// `Lark error at line L, column C: …`). `tokenizer_info` is accepted
    /// for XGrammar's signature: zapspec's grammars name no token ids.
    #[staticmethod]
    #[pyo3(signature = (lark_string, *, tokenizer_info = None, named_grammars = None))]
    fn from_lark(
        py: Python<'_>,
        lark_string: &str,
        tokenizer_info: Option<&Bound<'_, PyAny>>,
        named_grammars: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let _ = tokenizer_info;
        guard(|| {
            Ok(Grammar {
                inner: Self::lark(py, lark_string, named_grammars)?,
            })
        })
    }

    /// The strings fully matched by `regex`, in ECMAScript syntax as
    /// XGrammar reads it (`\d` and `\w` ASCII, a `[` inside a class
    /// literal, `^` / `$` at the ends allowed; a `{` that starts no
    /// quantifier, as in `a{,3}`, and the empty class `[]` are refused).
    /// `annex_b=True` reads those two as ECMAScript does without the `u`
    /// flag (Annex B): `a{,3}` is the literal text, `[]` matches nothing.
    /// `print_converted_ebnf` (XGrammar's debugging switch) is accepted
    /// and ignored: the GBNF is `str(grammar)`.
    #[staticmethod]
    #[pyo3(signature = (regex_string, *, print_converted_ebnf = false, annex_b = false))]
    fn from_regex(
        py: Python<'_>,
        regex_string: &str,
        print_converted_ebnf: bool,
        annex_b: bool,
    ) -> PyResult<Self> {
        let _ = print_converted_ebnf;
        let dialect = regex_dialect(annex_b);
        guard(|| {
            Ok(Grammar {
                inner: Self::regex_in(py, regex_string, dialect)?,
            })
        })
    }

    /// The grammar of a structural tag (XGrammar's format, module
    /// `zapspec.structural_tag`): a `StructuralTag`, its JSON text or a
    /// `dict`; or, deprecated, `(tags, triggers)` with a list of
    /// `StructuralTagItem`. A tag the compiler refuses is
    /// `zapspec.InvalidStructuralTagError` with its JSON pointer.
    #[staticmethod]
    #[pyo3(signature = (*args, **kwargs))]
    fn from_structural_tag(
        py: Python<'_>,
        args: &Bound<'_, pyo3::types::PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        guard(|| {
            let text = structural_tag_text(py, args, kwargs)?;
            Ok(Grammar {
                inner: Self::structural_tag(py, &text)?,
            })
        })
    }

    /// A JSON object or array (RFC 8259 inside), whitespace between its
    /// tokens but none before or after it: XGrammar's builtin JSON
    /// grammar (`"x"`, `1`, `" {}"`, `"{} "` are refused).
    #[staticmethod]
    fn builtin_json_grammar(py: Python<'_>) -> PyResult<Self> {
        guard(|| {
            Ok(Grammar {
                inner: Self::ebnf(py, JSON_CONTAINER_GBNF, "root")?,
            })
        })
    }

    /// This grammar as JSON (its GBNF and its cache key);
    /// `deserialize_json` rebuilds it.
    fn serialize_json(&self) -> String {
        self.to_json().to_string()
    }

    /// A grammar from `serialize_json`'s text: `zapspec.InvalidJSONError`,
    /// `DeserializeFormatError` or `DeserializeVersionError` for text it
    /// did not write.
    #[staticmethod]
    fn deserialize_json(py: Python<'_>, json_string: &str) -> PyResult<Self> {
        guard(|| {
            let v = check_serialized(py, json_string, "Grammar")?;
            Ok(Grammar {
                inner: Self::from_json(py, &v)?,
            })
        })
    }

    /// The grammar in GBNF.
    fn __str__(&self) -> String {
        self.inner.ir.to_string()
    }

    fn __repr__(&self) -> String {
        let s = self.inner.ir.stats();
        format!(
            "Grammar(nonterminals={}, rules={}, terminals={})",
            s.nonterminals, s.rules, s.terminals
        )
    }
}

/// The ids of the grammar's rules that derive the empty string, in
/// ascending order (XGrammar's `testing._get_allow_empty_rule_ids`). A
/// rule's id is its place in the grammar's rule list: for EBNF, the rules
/// in the order the text defines them, without the nonterminals the parser
/// adds for groups and repetitions (XGrammar reads `[a-z]*` without a rule
/// of its own too).
#[pyfunction]
pub(crate) fn _allow_empty_rule_ids(py: Python<'_>, grammar: &Grammar) -> PyResult<Vec<usize>> {
    let g = &grammar.inner;
    let nullable =
        zapspec_grammar::nullable::nullable_symbols(&g.ir).map_err(|e| grammar_error(py, &e))?;
    let named = g.named.unwrap_or(nullable.len()).min(nullable.len());
    Ok((0..named).filter(|&i| nullable[i]).collect())
}

/// The regex (Python `re` and Rust `regex` syntax, anchored with `^…$`)
/// of the JSON numbers between `start` and `end` as the JSON Schema
/// compiler writes `minimum` / `maximum` (`exclusive_*` for the exclusive
/// forms), or of the integers with `integer=True`: the same language as a
/// schema's number or integer with those bounds. `^()$` when no number
/// is in the range. XGrammar's `testing._generate_float_regex` and
/// `_generate_range_regex` (XGrammar writes its own, looser regex: at most
/// six fraction digits).
#[pyfunction]
#[pyo3(signature = (start=None, end=None, exclusive_start=false, exclusive_end=false, integer=false))]
pub(crate) fn _number_range_regex(
    py: Python<'_>,
    start: Option<f64>,
    end: Option<f64>,
    exclusive_start: bool,
    exclusive_end: bool,
    integer: bool,
) -> PyResult<String> {
    let re = zapspec_jsonschema::number_range_regex(
        start.map(|v| (v, !exclusive_start)),
        end.map(|v| (v, !exclusive_end)),
        integer,
    )
    .map_err(|e| schema_error(py, &e))?;
    Ok(format!("^({})$", re.unwrap_or_default()))
}

/// The model families' table (`zapspec-structtag`'s `families.json`), as
/// JSON text.
#[pyfunction]
pub(crate) fn _builtin_families_json() -> String {
    zapspec_structtag::builtin::families_json().to_string()
}

/// `family`'s tool-call structural tag as JSON text: `tools` as (name,
/// parameters' JSON, builtin tool) triples, `choice` one of `auto`, `required`, `none`
/// or `named` (with `named`), `reasoning` one of `enabled`, `auto`,
/// `disabled`.
#[pyfunction]
#[pyo3(signature = (family, tools, choice, named, reasoning, parallel_tool_calls, any_order, exclude_special_tokens, max_whitespace_cnt))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn _builtin_structural_tag_json(
    py: Python<'_>,
    family: &str,
    tools: Vec<(String, String, bool)>,
    choice: &str,
    named: Option<String>,
    reasoning: &str,
    parallel_tool_calls: bool,
    any_order: bool,
    exclude_special_tokens: bool,
    max_whitespace_cnt: Option<u64>,
) -> PyResult<String> {
    guard(|| {
        let mut ts = Vec::with_capacity(tools.len());
        for (name, params, builtin) in tools {
            let parameters = serde_json::from_str(&params)
                .map_err(|e| invalid_json(py, "a tool's parameters", &e))?;
            ts.push(if builtin {
                Tool::builtin(name, parameters)
            } else {
                Tool::new(name, parameters)
            });
        }
        let bad = |what: &str| pyo3::exceptions::PyValueError::new_err(what.to_string());
        let choice = match (choice, named) {
            ("auto", _) => ToolChoice::Auto,
            ("required", _) => ToolChoice::Required,
            ("none", _) => ToolChoice::None,
            ("named", Some(n)) => ToolChoice::Named(n),
            _ => {
                return Err(bad(
                    "choice must be auto, required, none or named (with a name)",
                ))
            }
        };
        let reasoning = match reasoning {
            "enabled" => Reasoning::Enabled,
            "auto" => Reasoning::Auto,
            "disabled" => Reasoning::Disabled,
            _ => return Err(bad("reasoning must be enabled, auto or disabled")),
        };
        let opts = ToolCallOptions {
            choice,
            reasoning,
            parallel_tool_calls,
            any_order,
            exclude_special_tokens,
            max_whitespace_cnt,
        };
        tool_calling_format(family, &ts, &opts)
            .map(|v| v.to_string())
            .map_err(|e| tool_error(&e))
    })
}

/// Refuses a family the table does not build (`ValueError`, the table's
/// message): what `get_model_structural_tag` asks before it reads tools.
/// `regex` (read as `Grammar.from_regex` reads it) as the right-hand side
/// of a plain GBNF rule, laid out as XGrammar's regex converter writes it
/// (`zapspec_jsonschema::ecma_regex_to_gbnf`); `zapspec.GrammarError` for a
/// regex that reading refuses.
#[pyfunction]
#[pyo3(signature = (regex, annex_b = false))]
pub(crate) fn _regex_to_gbnf(py: Python<'_>, regex: &str, annex_b: bool) -> PyResult<String> {
    let dialect = regex_dialect(annex_b);
    // the same refusals, messages and positions as `Grammar.from_regex`
    Grammar::regex_in(py, regex, dialect)?;
    zapspec_jsonschema::ecma_regex_to_gbnf(regex, dialect).map_err(|m| regex_refusal(py, &m))
}

/// `Grammar.from_regex`'s reading: XGrammar's, or Annex B's.
fn regex_dialect(annex_b: bool) -> RegexDialect {
    if annex_b {
        RegexDialect::AnnexB
    } else {
        RegexDialect::Strict
    }
}

/// A regex the ECMAScript reading refuses, as `zapspec.GrammarError`.
fn regex_refusal(py: Python<'_>, message: &str) -> PyErr {
    raise(
        py,
        "GrammarError",
        format!("bad regex: {message}"),
        Fields {
            kind: Some("regex".into()),
            position: Some((1, 1)),
            ..Fields::default()
        },
    )
}

#[pyfunction]
pub(crate) fn _builtin_check_family(family: &str) -> PyResult<()> {
    zapspec_structtag::builtin::family_row(family)
        .map(|_| ())
        .map_err(|e| tool_error(&e))
}

/// A refused tool-call format as XGrammar's builders raise it: a
/// `ValueError` (its pointer, when it has one, in the message).
fn tool_error(e: &zapspec_structtag::StructTagError) -> PyErr {
    use zapspec_structtag::StructTagError as E;
    let msg = match e {
        E::Invalid { pointer, message } | E::Unsupported { pointer, message }
            if pointer.is_empty() =>
        {
            message.clone()
        }
        _ => e.to_string(),
    };
    pyo3::exceptions::PyValueError::new_err(msg)
}
