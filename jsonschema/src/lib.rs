//! # zapspec-jsonschema
//!
//! JSON Schema → grammar, for constrained decoding: the grammar's language
//! is the JSON texts that are valid instances of the schema (exactly, or a
//! documented sound subset of them), so a decoder constrained by it writes
//! only instances a JSON Schema validator accepts. What the compiler cannot
//! translate soundly it refuses with a typed [`SchemaError`] naming the
//! keyword and the JSON pointer.
//!
//! ## Entry points
//!
//! * [`compile_json_schema`] / [`compile_json_schema_report`]: a
//!   `serde_json::Value` schema → a [`Grammar`] of `zapspec-grammar`'s IR
//!   (and a [`CompileReport`] of what was ignored or relaxed), under
//!   [`JsonSchemaOptions`] (whitespace and separators, property order,
//!   closed objects, `oneOf` mode, lenient formats, resource limits; each
//!   field's default is the specification's meaning or a documented
//!   bound).
//! * [`canonical_instances`]: the key order the grammar writes, to test a
//!   valid instance against the grammar.
//! * [`keywords`]: which keywords are implemented, annotations, refused.
//! * [`ecma_regex_to_gbnf`]: an ECMA-262 regex as plain GBNF (no regex
//!   terminals), laid out as XGrammar's regex converter writes it.
//! * [`with_library`]: a compiled grammar with XGrammar's named JSON value
//!   rules (`basic_string`, `basic_object`, …) beside it, for grammar text
//!   that refers to them.
//!
//! ```
//! use serde_json::json;
//! use zapspec_grammar::Recognizer;
//! use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions};
//!
//! let schema = json!({
//!     "type": "object",
//!     "properties": {"when": {"type": "string", "format": "date"}},
//!     "required": ["when"],
//!     "additionalProperties": false
//! });
//! let g = compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
//! let rec = Recognizer::new(&g).unwrap();
//! assert!(rec.recognizes(br#"{"when":"2024-02-29"}"#));
//! assert!(!rec.recognizes(br#"{"when":"2023-02-29"}"#));
//! ```
//!
//! ## Costs
//!
//! The compiler works from a queue (no recursion over the schema); its
//! output is bounded by [`JsonSchemaOptions`] (branches, nonterminals,
//! counted items, depth, a wall-clock budget) and it refuses rather than
//! exceed a bound ([`SchemaError::LimitExceeded`], [`SchemaError::TooLarge`]).
//! Most schemas compile in milliseconds; the terminals' automata are built
//! later, by the consumer of the grammar (`zapspec-earley`, or
//! `zapspec_grammar::Recognizer` in tests), under `zapspec_grammar`'s
//! `RegexLimits`.
//!
//! ## Checked against an independent validator
//!
//! `tests/format_oracle.rs` and `tests/maskbench_oracle.rs` sample strings
//! from compiled grammars (random walks) and check them with the
//! `jsonschema` crate (format validation on); MaskBench's census is
//! `cargo test -p tests --test maskbench_census -- --nocapture`.
//!
//! ## Modules
//! - [`keywords`]: which keywords are implemented, annotations, refused.
//! - `schema`: the typed schema IR. Each schema object of the document is
//!   parsed once into a `Node`: its plain keywords as a `Simple` (a
//!   `TypeSet` of allowed types, the `enum` values, and per JSON type a
//!   keyword struct — `NumberKw`, `StringKw`, `ArrayKw`, `ObjectKw`) and
//!   its applicators, typed; subschemas are `Sub` handles borrowed from the
//!   document (or their complement, or a conjunction of handles), never
//!   rewritten JSON; `allOf` of simple schemas merges one JSON type at a
//!   time.
//! - `normalize`: `$ref`/`allOf`/`anyOf`/`oneOf`/`not`/`if`/dependencies/
//!   `nullable` → a union of merged simple schemas (`normalize::negate`:
//!   complements; `normalize::disjoint`: the proof that `oneOf` branches
//!   are disjoint).
//! - `emit`, `objects` (objects and arrays), `literal` (`enum`/`const`):
//!   the BNF of each JSON type.
//! - `unique`: arrays with `uniqueItems: true` over a finite domain.
//! - `strings`, `formats`, `numbers`: the regex terminals.
//! - `keys`: product automata of patterns, declared names and lengths
//!   (`patternProperties`; `pattern`/`format` with length bounds), and
//!   their regions as regexes or right-linear grammars.
//! - [`canonical`]: the key order the grammar produces, for testing.
//! - [`library`]: the named JSON value rules beside a schema's grammar.
//!
//! ## The language, precisely
//!
//! * **Whitespace.** [`Whitespace::Compact`] (the default): none at all —
//!   with the key order below and serde_json's string escaping this is
//!   exactly the output of `serde_json::to_string`.
//!   [`Whitespace::Flexible`]: between any two tokens (and nowhere else:
//!   not before the first or after the last), a run of at most `max_ws`
//!   JSON whitespace bytes. [`Whitespace::Separators`]: compact output
//!   with fixed item and key separators (e.g. `", "` and `": "`).
//!   [`Whitespace::Indent`]: pretty-printed, exactly as Python's
//!   `json.dumps(obj, indent=…, separators=…)` writes it (each item on its
//!   own line, indented by depth), to a bounded depth.
//! * **Key order.** Objects list their keys in the order of `properties`
//!   (then required names that `properties` does not declare, in
//!   `required` order), then additional properties, in any order. JSON
//!   objects are unordered, so this loses no *value*: every valid instance
//!   has exactly one key order the grammar accepts, given by
//!   [`canonical::canonical_instances`]. That is what an LLM constrained by
//!   this grammar writes; the MaskBench census and harness compare against
//!   it. llguidance does the same ("order of properties is fixed to the
//!   order in schema"), and also places additional properties last.
//!   [`PropertyOrder::Any`] accepts every order instead (each declared
//!   key at most once, the required ones present, additional members
//!   anywhere), up to [`JsonSchemaOptions::max_any_order_properties`]
//!   declared properties per object (default 8); larger objects keep the
//!   schema order and are listed in [`CompileReport::narrowed`].
//! * **Additional properties.** `additionalProperties` defaults to `true`
//!   (JSON Schema's default), so an object schema accepts extra keys after
//!   the declared ones, with values valid for the `additionalProperties`
//!   schema. Extra keys are canonically encoded strings that differ from
//!   every declared name, so no declared key can repeat: one
//!   `Terminal::Except` of the any-key regex and the names' encodings,
//!   whose automaton (the product with the names' trie) the engine builds
//!   when a parse reaches the object ([`except_as_regex`] writes the same
//!   language as one regex, for engines that read regexes only). Two *additional* members may still share a key (a context-free
//!   grammar cannot exclude that); a validator reads such a text with one
//!   of the values, so where `minProperties` is reached only by counting
//!   additional members, a text repeating an additional key can be
//!   invalid (the oracle tests count such samples separately).
//!   [`JsonSchemaOptions::closed_objects`] (default `false`) treats an
//!   absent `additionalProperties` as `false` instead: a documented
//!   narrowing (the grammar accepts a subset of the valid instances).
//! * **Strings.** See module `strings`: free strings allow every
//!   JSON escape; strings constrained by `pattern`/`format` and extra keys
//!   use serde_json's canonical escaping, which makes `pattern` translation
//!   exact. `minLength`/`maxLength` count decoded characters (Unicode
//!   scalar values; a surrogate-pair escape is one character).
//! * **Numbers** (module `numbers`) are compared by mathematical value,
//!   as drafts 6 to 2020-12 say: `1.0`, `1.00` and `1` are one value,
//!   and `-0` is `0`. So `integer` accepts every plain decimal whose
//!   value is an integer (`-?(0|[1-9][0-9]*)(\.0+)?`, also under
//!   `minimum`/`maximum` and an integer `multipleOf`), and an `enum`/`const`
//!   member `1`, alone or inside an array or object, accepts `1.0` (and a
//!   member `1.5` accepts `1.50`). Bounds and `multipleOf` are exact on
//!   the value. Exponent forms (`1e2`, `10E-1`) are accepted only where a
//!   number is otherwise unconstrained (`type: number` without bounds or
//!   `multipleOf`: the full JSON number syntax): everywhere else the
//!   grammar is the documented sound subset of plain decimals, since the
//!   exponent forms of an integer (`1.5e1` is `15`) are no regular
//!   language, and huge exponents overflow validators' `f64` (`1e400`).
//!   The texts `serde_json` writes (`1`, `1.0`, `-0.0`) are all accepted.
//! * **`not`**: exact for the forms whose complement is a union of simple
//!   schemas — `true`/`false`/`{}`, `type`, `enum`/`const` of null,
//!   boolean and string members, `required` (an object lacking a listed
//!   key), numeric bounds, `min`/`max` `Items`/`Length`/`Properties` (a
//!   value of that type beyond the bound), `properties` (an object with a
//!   property present and violating its schema), `not`, a `$ref` to such a
//!   form, and conjunctions of these (De Morgan: one branch per keyword).
//!   Other `not`s are refused.
//! * **`if`/`then`/`else`**: `(if ∧ then) ∨ (¬if ∧ else)`, exact where `not`
//!   of the `if` schema is (above); otherwise refused.
//! * **`$ref`**: a URI reference resolved against the base URI of the
//!   schema resource it appears in (module `resolve`, RFC 3986 with
//!   `fluent-uri`): `$id`s below the root start resources of their own,
//!   relative ones resolved against the enclosing resource; fragments are
//!   JSON pointers or plain-name anchors (`$anchor`, `$dynamicAnchor`,
//!   draft-4 `id: "#name"`) of the target resource (`$dynamicRef` itself is
//!   refused); a fragment-only reference that is
//!   no location of its resource is read against the document root (as
//!   validators that ignore relative ids do: hyper-schemas under `id:
//!   "schema/x"` write document-root pointers). References to other
//!   documents are refused ([`SchemaError::BadRef`]).
//!   Under drafts 3–7 (`$schema`), keywords next to `$ref` are ignored as
//!   those drafts say; otherwise they are intersected with the target.
//! * **`oneOf`** (default [`OneOfMode::RequireDisjoint`]) is compiled
//!   only where its branches are provably disjoint *in the context of the
//!   keywords around it* (different types, disjoint `const`/`enum` values,
//!   also through `anyOf`/`oneOf` of listed values, or — for objects — a
//!   property required by one branch on whose value the two impose
//!   disjoint schemas, including a key the other branch closes out with
//!   `additionalProperties: false`). Where that proof fails but every branch
//!   can be negated (see `not` above), `oneOf: [B₁…Bₙ]` is compiled exactly
//!   as `⋃ᵢ (Bᵢ ∧ ⋀_{j≠i} ¬Bⱼ)`; otherwise the schema is refused.
//!   [`OneOfMode::AsAnyOf`] compiles every `oneOf` as `anyOf` instead (the
//!   grammar cannot express "exactly one"): an instance valid for two
//!   branches is then accepted although invalid — the one known source of
//!   unsound acceptance, so it is opt-in.
//! * **`patternProperties`** (module `keys`): exact. A declared
//!   property also satisfies the schemas of the patterns its name matches;
//!   undeclared keys split into regions by the set of patterns they match
//!   (computed on a product automaton of the patterns and the trie of
//!   declared names), each with the conjunction of those schemas, or
//!   `additionalProperties` for keys no pattern matches (that region is
//!   built without the declared names some pattern matches: they are
//!   outside it anyway, and each name in the trie would copy a pattern's
//!   counter at its node). A region is one
//!   regex terminal: the pattern's own when the region is exactly its
//!   language, else one written from the region's automaton when that is
//!   acyclic up to self-loops (chains of equal states, what counted
//!   repetitions become, are written as counted repetitions), else a
//!   right-linear grammar of the automaton.
//! * **`dependencies`/`dependentRequired`/`dependentSchemas`**: each entry
//!   `k: d` is the exact union "`k` absent, or `k` present and `d` holds"
//!   (`normalize`), so `n` entries multiply the branches by up to `2^n`
//!   (bounded by [`JsonSchemaOptions::max_branches`]).
//! * **`pattern`/`format` with length bounds they do not imply**: one
//!   pattern under a `maxLength` of 16 to `max_regex_repeat` (and a
//!   `minLength` the pattern implies, or of at most 63) is one
//!   intersection terminal, `Terminal::And` of the pattern and a counted
//!   repetition of characters ([`JsonSchemaOptions::intersections`]),
//!   whose product the Earley engine keeps without multiplying out the
//!   count. Two patterns (`pattern` and `format`, or two `allOf`
//!   patterns) without look-around, their length bounds said inside the
//!   first one's regex or absent, are likewise one `Terminal::And` of the
//!   two string regexes: the engine intersects the two regexes' own
//!   automata, which every such string over the same `format` shares
//!   (the format built once, lazily), exploring only the pairs reachable
//!   from the start. Otherwise: the product automaton of the patterns and
//!   a character counter, written like a region above (refused above
//!   20,000 states).
//! * **`format`** (module `formats`): `date`, `duration`, `uuid`, `ipv4`,
//!   `ipv6`, `uri`, `uri-reference`, `uri-template`, `json-pointer` and
//!   `relative-json-pointer` are exact; `time`, `date-time`, `hostname`
//!   and `email` are sound bounded subsets of their RFC languages (a leap
//!   second only in UTC; length limits in tiers; no quoted local parts);
//!   `idn-email`, `idn-hostname`, `iri`, `iri-reference`
//!   and `regex` are refused unless [`JsonSchemaOptions::lenient_formats`]
//!   (then annotations, with a warning in [`CompileReport::warnings`]);
//!   names that are no format of the specification are annotations (as
//!   validators treat them) and listed in [`CompileReport::ignored`], or
//!   refused with [`UnknownFormats::Refuse`].
//! * **`enum`/`const` of objects or arrays next to object/array
//!   keywords**: a member is kept when the compiler's own grammar of the
//!   sibling keywords (same pointer, same root for `$ref`) recognises it
//!   with its keys in the grammar's order; exact where that grammar is,
//!   and a sibling keyword the compiler refuses refuses the schema.
//!   Checks nested in checks (a recursive schema) stop at 4 levels,
//!   refused on `enum`.
//! * **`nullable`** (OpenAPI 3.0, no JSON Schema keyword): ignored by
//!   default, as JSON Schema validators ignore it;
//!   [`JsonSchemaOptions::openapi_nullable`] makes `nullable: true` add
//!   `null`.
//! * **`integer`** under drafts 3–4 (`$schema`) is an integer written
//!   without fraction (`1.0` is no draft-4 integer, also as an `enum`
//!   member, and the grammar writes no `-0` there); later drafts accept
//!   any number with a zero fraction (above, "Numbers").
//! * **Unknown keys** (no keyword of any draft) are ignored like a
//!   validator ignores them, and listed in the [`CompileReport`]; set
//!   [`UnknownKeywords::Reject`] to refuse them.
//! * **`contains`** with `minContains` (default 1) is exact: the array's
//!   states count the items written as `item ∧ contains` up to
//!   `minContains` (at most 64); `maxContains` next to `contains` is
//!   refused (it needs the items *not* valid under `contains`).
//! * **`uniqueItems: true`** (module `unique`) is exact where the items
//!   range over a small finite set of scalars — `enum`/`const` of
//!   scalars, `null`, booleans, integers with both bounds, and unions of
//!   these — of at most [`JsonSchemaOptions::max_unique_values`] distinct
//!   values (JSON equality: `1` and `1.0` are one value): the array's
//!   states are the sets of values written so far (at most
//!   [`JsonSchemaOptions::max_unique_states`]; beyond either bound
//!   [`SchemaError::TooLarge`]). With `maxItems` ≤ 1 it is no constraint.
//!   Other items, and `uniqueItems` beside `prefixItems` or `contains`,
//!   are refused ([`SchemaError::Unsupported`] on `uniqueItems`).
//! * **`unevaluatedProperties` / `unevaluatedItems`** in a schema object
//!   without in-place applicators (`$ref`, `allOf`, `anyOf`, `oneOf`,
//!   `if`, `dependentSchemas`/`dependencies`) and, for items, without
//!   `contains`: the only keywords that evaluate are the object's own, so
//!   they are `additionalProperties` / `items` after `prefixItems` — or
//!   nothing where those are present (2019-09 Core §9.3). Elsewhere they
//!   need the applicators' annotations and are refused.
//! * **Not implemented** (refused with [`SchemaError::Unsupported`]):
//!   `maxContains`, `uniqueItems: true` over other items (above),
//!   `unevaluated*` beside in-place applicators, draft-3 `extends`,
//!   `multipleOf` other than powers of
//!   ten and integers (integers up to 10,000, without bounds or with
//!   both; several `multipleOf`
//!   in one conjunction are first merged into their least common multiple,
//!   which is exact), number bounds beyond
//!   `u128`, two different patterns in one `allOf`, `patternProperties` in
//!   both members of an `allOf` (or next to another member's
//!   `additionalProperties`), `$ref` outside the document.
//! * **Coverage** on MaskBench: `cargo test -p tests --test
//!   maskbench_census -- --nocapture` (recorded results:
//!   `examples/results/history/grammar.md`).
//! * Recursion: a subschema that is just a `$ref` becomes one shared
//!   nonterminal; everything is emitted from a work queue, never by
//!   recursion over the schema, so deep schemas cannot overflow the stack.

pub mod canonical;
mod emit;
mod error;
mod formats;
mod keys;
pub mod keywords;
pub mod library;
mod literal;
mod normalize;
mod numbers;
mod objects;
mod regex_gbnf;
mod resolve;
mod schema;
mod strings;
mod unique;

pub use canonical::canonical_instances;
pub use library::with_library;
pub use regex_gbnf::ecma_regex_to_gbnf;

/// An ECMA-262 regex (the dialect of JSON Schema's `pattern`, and of
/// XGrammar's `Grammar.from_regex`) rewritten in `regex-syntax`'s
/// dialect, meaning kept: `\d`, `\w` and `\b` are ASCII, `\s` is
/// ECMA-262's white space, `.` excludes the four ECMA line terminators, a
/// `[` inside a class is literal. Anchors and quantifiers are left as
/// written. `Err` is a message for a pattern the rewrite refuses (a
/// trailing backslash, a back-reference, …); the result may still be
/// refused by `regex-syntax`'s parser.
///
/// This is [`RegexDialect::AnnexB`], the reading of JSON Schema's
/// `pattern`; [`ecma_regex_to_regex_syntax_in`] takes the dialect.
pub fn ecma_regex_to_regex_syntax(pattern: &str) -> Result<String, String> {
    ecma_regex_to_regex_syntax_in(pattern, RegexDialect::AnnexB)
}

/// [`ecma_regex_to_regex_syntax`] in `dialect`; a `)` that closes no group
/// and a `(` never closed are refused in both.
///
/// ```
/// use zapspec_jsonschema::{ecma_regex_to_regex_syntax_in, RegexDialect};
///
/// assert_eq!(ecma_regex_to_regex_syntax_in("a{,3}", RegexDialect::AnnexB).unwrap(), r"a\{,3\}");
/// assert!(ecma_regex_to_regex_syntax_in("a{,3}", RegexDialect::Strict).is_err());
/// assert!(ecma_regex_to_regex_syntax_in("[]", RegexDialect::AnnexB).is_ok()); // matches nothing
/// assert!(ecma_regex_to_regex_syntax_in("[]", RegexDialect::Strict).is_err());
/// assert!(ecma_regex_to_regex_syntax_in("abc)", RegexDialect::AnnexB).is_err());
/// ```
pub fn ecma_regex_to_regex_syntax_in(
    pattern: &str,
    dialect: RegexDialect,
) -> Result<String, String> {
    strings::ecma_to_regex_syntax_in(pattern, dialect).map_err(|e| e.to_string())
}

/// [`ecma_regex_to_regex_syntax_in`] with `.` read as `dot` says (XGrammar's
/// `Regex(…)` grammar macro reads `.` as any character, or with `flags`
/// and without `s` as any character but `\n`).
///
/// ```
/// use zapspec_jsonschema::{ecma_regex_to_regex_syntax_with, RegexDialect, RegexDot};
///
/// let any = ecma_regex_to_regex_syntax_with("a.b", RegexDialect::Strict, RegexDot::Any).unwrap();
/// assert_eq!(any, "a(?s:.)b");
/// ```
pub fn ecma_regex_to_regex_syntax_with(
    pattern: &str,
    dialect: RegexDialect,
    dot: RegexDot,
) -> Result<String, String> {
    strings::ecma_to_regex_syntax_dot(pattern, dialect, dot).map_err(|e| e.to_string())
}

/// XGrammar's reading of a `Regex(…)` grammar macro (ECMA-262, as its
/// `Grammar.from_regex` reads a regex: [`RegexDialect::Strict`]), for
/// [`zapspec_grammar::parse_gbnf_with`].
///
/// ```
/// use zapspec_grammar::{parse_gbnf_with, Recognizer};
///
/// let g = parse_gbnf_with(r#"root ::= Regex("\\d{2}")"#, &zapspec_jsonschema::xgrammar_regex_reader)
///     .unwrap()
///     .grammar;
/// assert!(Recognizer::new(&g).unwrap().recognizes(b"42"));
/// assert!(!Recognizer::new(&g).unwrap().recognizes(b"4"));
/// ```
pub fn xgrammar_regex_reader(m: &zapspec_grammar::RegexMacro<'_>) -> Result<String, String> {
    let dot = if m.dot_matches_newline {
        RegexDot::Any
    } else {
        RegexDot::NotNewline
    };
    let re = ecma_regex_to_regex_syntax_with(m.pattern, RegexDialect::Strict, dot)?;
    Ok(if m.case_insensitive {
        format!("(?i:{re})")
    } else {
        re
    })
}

/// What `.` matches in [`ecma_regex_to_regex_syntax_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RegexDot {
    /// Any character but ECMA-262's four line terminators (`\n`, `\r`,
    /// U+2028, U+2029): ECMA-262 without the `s` flag. The default, and
    /// the reading of JSON Schema's `pattern`.
    #[default]
    Ecma,
    /// Any character but `\n` (Python's and Lark's `.`).
    NotNewline,
    /// Any character (ECMA-262's `s` flag).
    Any,
}

/// How [`ecma_regex_to_regex_syntax_in`] reads the constructs on which the
/// readings of an ECMA-262 regex differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RegexDialect {
    /// ECMA-262 without the `u` flag, with its Annex B, as JSON Schema
    /// validators read `pattern`: a `{` that starts no quantifier is
    /// literal text (`a{,3}` matches the five characters `a{,3}`), and
    /// `[]` is the class that matches nothing (`[^]` any character). The
    /// default, and the reading of `pattern`.
    #[default]
    AnnexB,
    /// XGrammar's reading (of `Grammar.from_regex`): a `{` that starts no
    /// quantifier is an error, as under ECMA-262's `u` flag (`a{,3}`,
    /// `a{`, a leading `{2}`), and so is `[]` (XGrammar: "Empty character
    /// class is not allowed in regex."); `[^]` is any character, a lone
    /// `}` literal. The regex is matched whole and `^` / `$` are empty
    /// matches wherever they stand, as XGrammar reads them (`^$|^a` is the
    /// empty string or `a`).
    Strict,
}
/// The regex (`regex-syntax` dialect, fully matched over the decoded
/// string) by which the compiler enforces the `format` name, when it
/// enforces it by one (the formats module's exact and sound-subset
/// classes); `None` for refused and unknown names.
pub fn format_regex(name: &str) -> Option<&'static str> {
    match formats::lookup(name) {
        formats::FormatKind::Regex(r) => Some(r),
        _ => None,
    }
}

/// The regex (`regex-syntax` dialect, fully matched) by which the
/// compiler writes a `number` (or, with `integer`, an `integer` spelled
/// without a fraction, as drafts 3–4 read it) with the bounds `lo` and
/// `hi`, each a value and whether it is inclusive (`minimum`) or not
/// (`exclusiveMinimum`). `Ok(None)` when no number lies in the bounds;
/// [`SchemaError::Unsupported`] (keyword `minimum` or `maximum`) for a
/// bound the regexes cannot hold (not finite, or beyond `u128`). For
/// tools that show or test the numeric regexes; a schema compiles them
/// itself.
pub fn number_range_regex(
    lo: Option<(f64, bool)>,
    hi: Option<(f64, bool)>,
    integer: bool,
) -> Result<Option<String>, SchemaError> {
    let regex = |lo: Option<(f64, bool)>, hi: Option<(f64, bool)>| {
        let mut b = numbers::Bounds::default();
        if let Some((v, inclusive)) = lo {
            b.lower(numbers::Num::Float(v), inclusive);
        }
        if let Some((v, inclusive)) = hi {
            b.upper(numbers::Num::Float(v), inclusive);
        }
        if integer {
            numbers::integer_regex(&b)
        } else {
            numbers::number_regex_multiple(&b, None)
        }
    };
    regex(lo, hi).map_err(|e| {
        // the bound at fault: the lower one if it fails alone
        let kw = if lo.is_some() && regex(lo, None).is_err() {
            "minimum"
        } else {
            "maximum"
        };
        SchemaError::unsupported(kw, "", e.to_string())
    })
}

/// The one regex of a key terminal the compiler writes as
/// [`Terminal::Except`](zapspec_grammar::Terminal::Except) (a JSON string
/// literal, quotes included, whose content is none of the names): for
/// consumers that read regexes only (a peer engine's grammar format).
/// `None` when `regex` and `names` are not such a terminal (the regex is
/// not the compiler's any-key regex, or a name is no canonically encoded
/// JSON string literal). The regex is a trie of the names with an exit at
/// every node, so it is long: engines read the terminal instead.
pub fn except_as_regex(regex: &str, names: &[Vec<u8>]) -> Option<String> {
    if regex != strings::any_key().0 {
        return None;
    }
    let mut decoded = Vec::with_capacity(names.len());
    for n in names {
        let s: String = serde_json::from_slice(n).ok()?;
        if format!("\"{}\"", strings::encode_str(&s)).as_bytes() != &n[..] {
            return None;
        }
        decoded.push(s);
    }
    let refs: Vec<&str> = decoded.iter().map(String::as_str).collect();
    Some(strings::key_regex_excluding(&refs).to_string())
}

pub use error::SchemaError;

pub use zapspec_grammar::ir::Grammar;

/// Whitespace between tokens.
///
/// ```
/// use serde_json::json;
/// use zapspec_grammar::Recognizer;
/// use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, Whitespace};
///
/// let opts = JsonSchemaOptions {
///     whitespace: Whitespace::Flexible { max_ws: 2 },
///     ..JsonSchemaOptions::default()
/// };
/// let schema = json!({"type": "array", "items": {"type": "integer"}});
/// let rec = Recognizer::new(&compile_json_schema(&schema, &opts).unwrap()).unwrap();
/// assert!(rec.recognizes(b"[1, 2]"));
/// assert!(!rec.recognizes(b"[1,   2]")); // three spaces: more than max_ws
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Whitespace {
    /// No whitespace: serde_json's compact output. The default.
    Compact,
    /// Up to `max_ws` bytes of `[ \t\n\r]` between any two tokens
    /// (`usize::MAX`: any number).
    Flexible {
        /// Most whitespace bytes in one run.
        max_ws: usize,
    },
    /// Fixed separators, as llguidance's `item_separator`/`key_separator`
    /// (and Python's `json.dumps(separators=…)`): exactly
    /// `item_separator` between two array items or object members,
    /// exactly `key_separator` between a key and its value, and no other
    /// whitespace. `", "` and `": "` give Python's default output
    /// (`{"a": [1, 2]}`); `","` and `":"` are [`Whitespace::Compact`].
    /// Each must be its punctuation (`,`, `:`) with only JSON whitespace
    /// around it, else the compilation fails with
    /// [`SchemaError::Invalid`] naming `item_separator`/`key_separator`.
    Separators {
        /// Between two items or members, e.g. `", "`.
        item_separator: String,
        /// Between a key and its value, e.g. `": "`.
        key_separator: String,
    },
    /// Pretty-printed, exactly as Python's `json.dumps(obj, indent=…,
    /// separators=(item_separator, key_separator))` lays a value out: a
    /// non-empty array or object writes each item or member on its own
    /// line, after a newline and `indent` repeated once per level of
    /// nesting (the document itself is level 0, its members level 1),
    /// with `item_separator` between two of them (before the newline), and
    /// its closing bracket on a line of its own at the container's level;
    /// an empty one is `[]` / `{}`; `key_separator` between a key and its
    /// value; no other whitespace. `","` and `": "` are `json.dumps`'s
    /// (and XGrammar's) separators with an indent.
    ///
    /// The layout depends on the depth of each value, which a context-free
    /// grammar cannot count without bound, so each subschema is compiled
    /// once per depth it occurs at, down to
    /// [`JsonSchemaOptions::max_indent_depth`]: a container whose items
    /// would lie deeper is not written (a narrowing recorded in
    /// [`CompileReport::narrowed`]; a schema that no value within the
    /// bound satisfies is refused with [`SchemaError::LimitExceeded`],
    /// [`Limit::Depth`]). `indent` must be JSON whitespace (`"  "`,
    /// `"\t"`; `""` breaks lines without indenting, as `indent=0`), of
    /// at most 256 bytes, and the separators as for
    /// [`Whitespace::Separators`], else [`SchemaError::Invalid`].
    ///
    /// ```
    /// use serde_json::json;
    /// use zapspec_grammar::Recognizer;
    /// use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, Whitespace};
    ///
    /// let opts = JsonSchemaOptions {
    ///     whitespace: Whitespace::Indent {
    ///         indent: "  ".into(),
    ///         item_separator: ",".into(),
    ///         key_separator: ": ".into(),
    ///     },
    ///     ..JsonSchemaOptions::default()
    /// };
    /// let schema = json!({"type": "object", "properties": {"a": {"type": "array"}}});
    /// let rec = Recognizer::new(&compile_json_schema(&schema, &opts).unwrap()).unwrap();
    /// assert!(rec.recognizes(b"{\n  \"a\": [\n    1,\n    2\n  ]\n}"));
    /// assert!(rec.recognizes(b"{\n  \"a\": []\n}") && rec.recognizes(b"{}"));
    /// assert!(!rec.recognizes(br#"{"a": [1, 2]}"#));
    /// ```
    ///
    /// [`Limit::Depth`]: zapspec_grammar::Limit::Depth
    Indent {
        /// One level of indentation, e.g. `"  "`.
        indent: String,
        /// Between two items or members, before the newline, e.g. `","`.
        item_separator: String,
        /// Between a key and its value, e.g. `": "`.
        key_separator: String,
    },
}

/// What to do with keys that are no JSON Schema keyword.
///
/// ```
/// use serde_json::json;
/// use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, SchemaError, UnknownKeywords};
///
/// let schema = json!({"type": "string", "minLenght": 3}); // a typo: no keyword
/// assert!(compile_json_schema(&schema, &JsonSchemaOptions::default()).is_ok());
/// let strict = JsonSchemaOptions {
///     unknown_keywords: UnknownKeywords::Reject,
///     ..JsonSchemaOptions::default()
/// };
/// assert!(matches!(
///     compile_json_schema(&schema, &strict),
///     Err(SchemaError::UnknownKeyword { keyword, .. }) if keyword == "minLenght"
/// ));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnknownKeywords {
    /// Ignore them as validators do (listed in [`CompileReport`]).
    Ignore,
    /// Refuse with [`SchemaError::UnknownKeyword`].
    Reject,
}

/// What to do with a `format` name that no JSON Schema draft defines
/// (`path`, `int32`, `semver` …).
///
/// The specification makes such names annotations: Validation 2020-12
/// §7.2.3 ("custom format attributes" may be supported by agreement), and
/// validators, the `jsonschema` crate among them, accept any string for
/// them. So the default, [`UnknownFormats::Annotation`], is exact: the
/// grammar accepts any string there, as the validator does, and the name
/// is listed in [`CompileReport::ignored`]. [`UnknownFormats::Refuse`] is
/// for callers whose validator gives a custom format a meaning (and the
/// policy llguidance follows by default).
///
/// ```
/// use serde_json::json;
/// use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, UnknownFormats};
///
/// let schema = json!({"type": "string", "format": "semver"});
/// assert!(compile_json_schema(&schema, &JsonSchemaOptions::default()).is_ok());
/// let strict = JsonSchemaOptions {
///     unknown_formats: UnknownFormats::Refuse,
///     ..JsonSchemaOptions::default()
/// };
/// assert!(compile_json_schema(&schema, &strict).is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnknownFormats {
    /// Any string, as validators do (listed in [`CompileReport::ignored`]).
    #[default]
    Annotation,
    /// Refuse the schema with [`SchemaError::Unsupported`] on `format`.
    Refuse,
}

/// How `oneOf` is compiled.
///
/// ```
/// use serde_json::json;
/// use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, OneOfMode};
///
/// // `1` is valid for both branches, so no grammar says "exactly one"
/// let schema = json!({"oneOf": [{"type": "integer"}, {"minimum": 0}]});
/// assert!(compile_json_schema(&schema, &JsonSchemaOptions::default()).is_err());
/// let lax = JsonSchemaOptions {
///     one_of: OneOfMode::AsAnyOf,
///     ..JsonSchemaOptions::default()
/// };
/// assert!(compile_json_schema(&schema, &lax).is_ok());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OneOfMode {
    /// As `anyOf`: an instance valid for two branches is accepted although
    /// `oneOf` makes it invalid. An opt-in approximation (llguidance's
    /// `oneOf` option does the same), for callers who prefer a grammar for
    /// every schema to soundness.
    AsAnyOf,
    /// Only when the branches are provably pairwise disjoint — different
    /// JSON types, disjoint `const`/`enum` values, or a property required by
    /// both branches whose `const`/`enum` values are disjoint (a
    /// discriminated union) — so that `anyOf` is exact; otherwise the schema
    /// is refused with [`SchemaError::Unsupported`] on `oneOf`. Sound: no
    /// instance invalid for `oneOf` is accepted. The default.
    #[default]
    RequireDisjoint,
}

/// The order in which an object's declared properties may be written.
///
/// ```
/// use serde_json::json;
/// use zapspec_grammar::Recognizer;
/// use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, PropertyOrder};
///
/// let schema = json!({"properties": {"a": {}, "b": {}}, "required": ["a"]});
/// let any = JsonSchemaOptions {
///     property_order: PropertyOrder::Any,
///     ..JsonSchemaOptions::default()
/// };
/// let rec = Recognizer::new(&compile_json_schema(&schema, &any).unwrap()).unwrap();
/// assert!(rec.recognizes(br#"{"b":1,"a":2}"#) && rec.recognizes(br#"{"a":2,"b":1}"#));
/// assert!(!rec.recognizes(br#"{"b":1}"#)); // `a` is required
/// assert!(!rec.recognizes(br#"{"a":1,"a":2}"#)); // no key twice
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PropertyOrder {
    /// The order of `properties` (then undeclared required names), then
    /// additional properties: one key order per instance (module docs,
    /// "Key order"), as llguidance does by default. The default.
    #[default]
    Schema,
    /// Any order (llguidance's and XGrammar's flexible order): the
    /// declared properties and the additional ones interleaved in any
    /// order, each declared key at most once and every required one
    /// present. Exact, but the object's states are the sets of declared
    /// properties written, `2^n` of them, so objects with more than
    /// [`JsonSchemaOptions::max_any_order_properties`] declared properties
    /// (or `2^n` times the counted `minProperties`/`maxProperties` above
    /// 65,536) fall back to [`PropertyOrder::Schema`], a narrowing recorded
    /// in [`CompileReport::narrowed`].
    Any,
}

/// [`JsonSchemaOptions::max_regex_repeat`] for grammars the Earley engine
/// compiles (it builds any count in constant space): 2^20 characters.
pub const EARLEY_MAX_REGEX_REPEAT: u64 = 1 << 20;

/// The least `maxLength` written as an intersection
/// ([`JsonSchemaOptions::intersections`]): below it the product of
/// the pattern and the counter is small, and the Earley engine's counted
/// layout (`zapspec_earley::counted::MIN_COUNTED`) does not apply.
pub const MIN_INTERSECTED_LENGTH: u64 = 16;

/// Options of [`compile_json_schema`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonSchemaOptions {
    /// Whitespace between tokens (default [`Whitespace::Compact`]).
    pub whitespace: Whitespace,
    /// Whether keys that are no keyword are ignored or refused.
    pub unknown_keywords: UnknownKeywords,
    /// Most branches one schema node may expand to when `anyOf`/`oneOf`
    /// are distributed over `allOf` and sibling keywords.
    pub max_branches: usize,
    /// Most nonterminals of the grammar.
    pub max_nonterminals: usize,
    /// `minItems`/`maxItems`/`minProperties`/`maxProperties` above this are
    /// refused ([`SchemaError::TooLarge`]): each counted position is a
    /// nonterminal.
    pub max_counted_items: u64,
    /// `minLength`/`maxLength` up to this are one counted regex
    /// repetition, `"X{min,max}"`; longer strings are a chain of such
    /// terminals of `max_regex_repeat` characters each
    /// ([`JsonSchemaOptions::string_blocks`]). Default 1024, for consumers
    /// that expand a repetition into `n` copies (the reference recognizer,
    /// an eager DFA). The Earley engine builds any count as a counter times
    /// the character automaton (`zapspec_earley::counted`: transitions
    /// computed from a layout, cache entries numbered per distance to the
    /// bounds), so its cost does not grow with the count; there a large
    /// value ([`EARLEY_MAX_REGEX_REPEAT`]) avoids block boundaries, where a
    /// mask walks most of the vocabulary through the parser.
    pub max_regex_repeat: u64,
    /// Strings longer than `max_regex_repeat` as blocks of counted
    /// terminals of `max_regex_repeat` characters (default `true`); `false`:
    /// the logarithmic character-level decomposition (the ablation).
    pub string_blocks: bool,
    /// A string with one `pattern` (or `format`) and a `maxLength` of
    /// [`MIN_INTERSECTED_LENGTH`] to `max_regex_repeat` characters that
    /// the pattern does not imply (and a `minLength` it implies, or of at
    /// most 63) as one [`Terminal::And`] of the pattern and a counted
    /// repetition of characters (default `true`): the Earley engine keeps
    /// the count out of its states (`zapspec_earley`'s `bounded` module).
    /// Likewise the keys of the one `patternProperties` pattern that some
    /// declared property names match, when the pattern holds a repetition
    /// bounded by at least [`MIN_INTERSECTED_LENGTH`]: one `Terminal::And`
    /// of "no declared name" and the pattern. And a string of two patterns
    /// without look-around (`pattern` with `format`), its length bounds
    /// inside the first pattern's regex or absent: one `Terminal::And` of
    /// the two. `false`: the product of the pattern's
    /// automaton and a character counter (or the trie of the names)
    /// written out as a regex or as rules (the ablation; `|pattern| ·
    /// maxLength` states).
    ///
    /// [`Terminal::And`]: zapspec_grammar::Terminal::And
    pub intersections: bool,
    /// `oneOf` as `anyOf`, or only where that is exact.
    pub one_of: OneOfMode,
    /// Most nesting levels of subschemas reached through `properties`,
    /// `items`, `$ref` … (a `$ref` chain counts each link); deeper schemas
    /// are refused with [`SchemaError::LimitExceeded`] ([`Limit::Depth`])
    /// naming the first location too deep. (Each level serialises the
    /// subschema below it, its memo key, so compile time grows with the
    /// square of the depth: about a second for 500 levels.)
    ///
    /// [`Limit::Depth`]: zapspec_grammar::Limit::Depth
    pub max_depth: usize,
    /// Most nesting levels of the JSON document itself (checked first,
    /// without recursion: the compiler serialises subschemas, which
    /// recurses over them). `serde_json::from_str` already refuses
    /// text nested more than 128 levels; this bounds values built in
    /// memory.
    pub max_json_depth: usize,
    /// Under [`Whitespace::Indent`], the deepest level of nesting written
    /// (the document is level 0, its items or members level 1): a
    /// non-empty or empty container is written only where its items would
    /// lie at most this deep. Each subschema is
    /// compiled once per level it occurs at, so a recursive schema (or a
    /// free value such as `{}`) has up to this many copies of its rules.
    /// Default 32. Ignored by the other whitespace modes.
    pub max_indent_depth: usize,
    /// Wall-clock budget of one compilation; past it the schema is refused
    /// with [`SchemaError::LimitExceeded`] ([`Limit::Time`]). Checked
    /// between work items, so a compilation overruns it by at most one
    /// item's work.
    ///
    /// [`Limit::Time`]: zapspec_grammar::Limit::Time
    pub time_budget: std::time::Duration,
    /// What to do with a `format` of the specification that has no exact
    /// (or documented sound) regex here (`idn-email`, `idn-hostname`,
    /// `iri`, `iri-reference`, `regex`; module `formats`).
    /// `false` (the default): refuse the schema with
    /// [`SchemaError::Unsupported`] on `format`, since a grammar that
    /// ignored the format would accept invalid instances. `true`: treat it
    /// as an annotation (any string) and record a warning in
    /// [`CompileReport::warnings`].
    pub lenient_formats: bool,
    /// What to do with a `format` no draft defines (default: an
    /// annotation, as the specification and validators treat it).
    pub unknown_formats: UnknownFormats,
    /// Whether OpenAPI 3.0's `nullable: true` adds `null` to the schema's
    /// values. JSON Schema has no such keyword and its validators ignore it,
    /// so the default `false` ignores it too (a grammar honouring it would
    /// accept `null` where a JSON Schema validator rejects it); set `true`
    /// for OpenAPI 3.0 schemas.
    pub openapi_nullable: bool,
    /// `uniqueItems: true` is compiled where the items have at most this
    /// many distinct values (module docs: "`uniqueItems`"); more are
    /// refused with [`SchemaError::TooLarge`]. At most 64 are used.
    /// Default 16.
    pub max_unique_values: usize,
    /// Most sets of item values an array with `uniqueItems: true` tracks
    /// (each a nonterminal: the subsets of at most `maxItems` of the
    /// item values); more are refused with [`SchemaError::TooLarge`].
    /// Default 4096 (all subsets of 12 values; 16 values with `maxItems`
    /// up to 3).
    pub max_unique_states: usize,
    /// Whether an object schema without `additionalProperties` is closed
    /// (as if it said `additionalProperties: false`): only declared
    /// properties (and keys matching `patternProperties`) may appear.
    /// Default `false`, JSON Schema's meaning (`additionalProperties`
    /// defaults to `true`). `true` is what many serving stacks do
    /// (OpenAI's structured outputs, XGrammar's strict mode) and an
    /// intentional narrowing: the grammar then accepts a subset of the
    /// valid instances (never an invalid one). It applies to the objects
    /// that declare their members (`properties` or `patternProperties`,
    /// `"properties": {}` included) and say nothing of
    /// `additionalProperties`. An object schema that declares no member
    /// (`{"type": "object"}`, which vLLM compiles for `response_format:
    /// json_object`, or a free-form tool parameter; `{}` and `true` as
    /// values) stays open: any object, as in XGrammar's strict mode, and
    /// `minProperties` without `properties` stays satisfiable. It applies
    /// to the objects the grammar writes,
    /// not to `not`/`oneOf` reasoning, which keeps the specification's
    /// meaning (so closing stays sound under complements), and an
    /// undeclared `required` name is then unsatisfiable unless a
    /// `patternProperties` pattern allows it.
    pub closed_objects: bool,
    /// The order of object properties (default [`PropertyOrder::Schema`]).
    pub property_order: PropertyOrder,
    /// Most declared properties of one object written in any order under
    /// [`PropertyOrder::Any`] (`2^n` states each); larger objects use the
    /// schema's order. Default 8.
    pub max_any_order_properties: usize,
}

impl Default for JsonSchemaOptions {
    fn default() -> Self {
        JsonSchemaOptions {
            whitespace: Whitespace::Compact,
            unknown_keywords: UnknownKeywords::Ignore,
            max_branches: 256,
            max_nonterminals: 200_000,
            max_counted_items: 2048,
            max_regex_repeat: 1024,
            string_blocks: true,
            intersections: true,
            one_of: OneOfMode::RequireDisjoint,
            max_depth: 512,
            max_json_depth: 2048,
            max_indent_depth: 32,
            time_budget: std::time::Duration::from_secs(60),
            lenient_formats: false,
            unknown_formats: UnknownFormats::Annotation,
            openapi_nullable: false,
            max_unique_values: 16,
            max_unique_states: 4096,
            closed_objects: false,
            property_order: PropertyOrder::Schema,
            max_any_order_properties: 8,
        }
    }
}

/// What the compiler ignored, for the record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompileReport {
    /// `(pointer, key)` of every key that is no JSON Schema keyword, and
    /// `(pointer, "format: NAME")` of every unknown format.
    pub ignored: Vec<(String, String)>,
    /// `(pointer, message)` of every relaxation that makes the grammar
    /// accept more than the schema: a specification `format` compiled as
    /// an annotation under [`JsonSchemaOptions::lenient_formats`], and a
    /// `oneOf` whose branches are not provably disjoint compiled as
    /// `anyOf` under [`OneOfMode::AsAnyOf`].
    pub warnings: Vec<(String, String)>,
    /// `(pointer, message)` of every option not honoured in a way that
    /// makes the grammar accept *less* (sound): today an object written
    /// in schema order although [`JsonSchemaOptions::property_order`] is
    /// [`PropertyOrder::Any`], because it has too many properties.
    pub narrowed: Vec<(String, String)>,
}

/// Compiles a JSON Schema into a grammar (see the module docs for the
/// exact language).
///
/// ```
/// use serde_json::json;
/// use zapspec_grammar::Recognizer;
/// use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions, SchemaError};
///
/// let opts = JsonSchemaOptions::default();
/// let g = compile_json_schema(&json!({"enum": ["a", 1]}), &opts).unwrap();
/// let rec = Recognizer::new(&g).unwrap();
/// assert!(rec.recognizes(br#""a""#) && rec.recognizes(b"1"));
/// assert!(!rec.recognizes(br#""b""#));
///
/// // what cannot be compiled soundly is refused, with the keyword and where
/// let schema = json!({"properties": {"tags": {"type": "array", "uniqueItems": true}}});
/// let err = compile_json_schema(&schema, &opts).unwrap_err();
/// assert!(matches!(&err, SchemaError::Unsupported { keyword, .. } if keyword == "uniqueItems"));
/// assert_eq!(err.pointer(), "/properties/tags");
/// ```
pub fn compile_json_schema(
    schema: &serde_json::Value,
    opts: &JsonSchemaOptions,
) -> Result<Grammar, SchemaError> {
    compile_json_schema_report(schema, opts).map(|(g, _)| g)
}

/// [`compile_json_schema`], also returning what was ignored.
///
/// ```
/// use serde_json::json;
/// use zapspec_jsonschema::{compile_json_schema_report, JsonSchemaOptions};
///
/// let schema = json!({"type": "string", "x-vendor": 1, "format": "semver"});
/// let (_, report) = compile_json_schema_report(&schema, &JsonSchemaOptions::default()).unwrap();
/// assert_eq!(
///     report.ignored,
///     vec![
///         (String::new(), "x-vendor".to_string()),
///         (String::new(), "format: semver".to_string()),
///     ]
/// );
/// ```
pub fn compile_json_schema_report(
    schema: &serde_json::Value,
    opts: &JsonSchemaOptions,
) -> Result<(Grammar, CompileReport), SchemaError> {
    emit::Emitter::compile(schema, opts)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_keys;
