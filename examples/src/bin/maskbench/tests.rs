//! Tests of the harness: the MaskBench counting on a fake engine whose
//! language is known, and a smoke run of the real engines on a few small
//! shipped schemas (skipped when the data directory is absent).

use std::sync::OnceLock;

use serde_json::{json, Value};
use zapspec_core::{Constraint, TokenId, TokenSet, Vocabulary};
use zapspec_testkit::TrieConstraint;

use super::*;
use crate::adapter::{CompileFailure, Compiled};

fn vocab() -> Arc<TokenVocab> {
    static V: OnceLock<Arc<TokenVocab>> = OnceLock::new();
    V.get_or_init(|| load_vocab().expect("o200k")).clone()
}

/// A fake engine: the schema `{"enum": [...]}` of strings compiles to the
/// finite language of their compact JSON texts (a `TrieConstraint`).
struct EnumAdapter(Arc<TokenVocab>);

struct EnumCompiled {
    base: TrieConstraint,
    cur: TrieConstraint,
    mask: TokenSet,
}

impl Adapter for EnumAdapter {
    fn compile(&mut self, schema: &Value) -> Result<Box<dyn Compiled>, CompileFailure> {
        let texts: Vec<String> = schema
            .get("enum")
            .and_then(Value::as_array)
            .ok_or_else(|| CompileFailure::new("no enum", "schema has no enum"))?
            .iter()
            .map(|v| serde_json::to_string(v).unwrap_or_default())
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let seqs = refs
            .iter()
            .map(|t| self.0.encode(t))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| CompileFailure::new("vocab", e.to_string()))?;
        let base = TrieConstraint::from_sequences(&self.0, seqs);
        let mask = TokenSet::new(self.0.len());
        Ok(Box::new(EnumCompiled {
            cur: base.clone(),
            base,
            mask,
        }))
    }
}

impl Compiled for EnumCompiled {
    fn start(&mut self) -> Result<(), String> {
        self.cur = self.base.clone();
        Ok(())
    }
    fn compute_mask(&mut self) -> Result<(), String> {
        self.cur.fill_mask(&mut self.mask);
        Ok(())
    }
    fn allowed(&self, t: TokenId) -> bool {
        self.mask.contains(t)
    }
    fn eos_allowed(&self) -> bool {
        self.mask.contains(self.cur.eos())
    }
    fn advance(&mut self, t: TokenId) -> Result<(), String> {
        self.cur.advance(t).map_err(|r| r.reason.to_string())
    }
}

fn case(v: &Arc<TokenVocab>, schema: Value, tests: &[(bool, Value)]) -> run::SchemaCase {
    let instances = tests
        .iter()
        .map(|(valid, d)| run::Instance {
            valid: *valid,
            tokens: v.encode(&serde_json::to_string(d).unwrap()).unwrap(),
            alternatives: Vec::new(),
        })
        .collect();
    run::SchemaCase {
        file: "t.json".into(),
        schema,
        instances,
    }
}

#[test]
fn counting_on_a_known_language() {
    let v = vocab();
    let mut ad = EnumAdapter(v.clone());
    let schema = json!({"enum": ["hello world", "hello"]});
    let c = case(
        &v,
        schema.clone(),
        &[
            (true, json!("hello")),
            (true, json!("hello world")),
            (true, json!("hel")),    // wrongly marked valid → validation error
            (false, json!("hello")), // wrongly marked invalid → invalidation error
            (false, json!("hello world!")), // correctly refused
        ],
    );
    let r = run::run_schema(ad.as_mut_adapter(), &c, 7, Duration::from_secs(10));
    assert_eq!(r.status, Status::Fail);
    assert_eq!((r.valid_tests, r.invalid_tests), (3, 2));
    assert_eq!(r.validation_errors.len(), 1);
    assert_eq!(r.validation_errors[0].0, 2);
    assert_eq!(r.invalidation_errors, vec![3]);
    assert!(r.ttfm_us.is_some() && r.index == 7);
    // One mask per token plus one at the end of each instance, less the
    // first (TTFM), less masks skipped after a refusal.
    let toks: usize = c.instances.iter().map(|i| i.tokens.len()).sum();
    assert!(r.tbm_ns.len() < toks + c.instances.len() && r.tbm_ns.len() >= c.instances.len());
    let ok = case(
        &v,
        schema,
        &[(true, json!("hello")), (false, json!("hell"))],
    );
    assert_eq!(
        run::run_schema(&mut ad, &ok, 0, Duration::from_secs(10)).status,
        Status::Pass
    );
    let bad = case(&v, json!({"type": "string"}), &[]);
    let r = run::run_schema(&mut ad, &bad, 0, Duration::from_secs(10));
    assert_eq!(
        (r.status, r.error_category.as_deref()),
        (Status::CompileError, Some("no enum"))
    );
    let s = summarize("enum", &[r]);
    assert_eq!((s.schemas, s.compile_errors, s.passing), (1, 1, 0));
}

impl EnumAdapter {
    fn as_mut_adapter(&mut self) -> &mut dyn Adapter {
        self
    }
}

/// An engine whose grammars hold 1 MiB and leave 64 KiB behind in the
/// engine each: the heap samples see both (lower bounds only: other tests
/// allocate in the same process meanwhile).
struct Leaky {
    inner: EnumAdapter,
    kept: Vec<Vec<u8>>,
}

struct Holding {
    inner: Box<dyn Compiled>,
    _bytes: Vec<u8>,
}

impl Adapter for Leaky {
    fn compile(&mut self, schema: &Value) -> Result<Box<dyn Compiled>, CompileFailure> {
        self.kept.push(vec![1u8; 64 << 10]);
        Ok(Box::new(Holding {
            inner: self.inner.compile(schema)?,
            _bytes: vec![1u8; 1 << 20],
        }))
    }
}

impl Compiled for Holding {
    fn start(&mut self) -> Result<(), String> {
        self.inner.start()
    }
    fn compute_mask(&mut self) -> Result<(), String> {
        self.inner.compute_mask()
    }
    fn allowed(&self, t: TokenId) -> bool {
        self.inner.allowed(t)
    }
    fn eos_allowed(&self) -> bool {
        self.inner.eos_allowed()
    }
    fn advance(&mut self, t: TokenId) -> Result<(), String> {
        self.inner.advance(t)
    }
}

#[test]
fn heap_samples_see_the_grammar_and_what_it_leaves() {
    let v = vocab();
    let mut ad = Leaky {
        inner: EnumAdapter(v.clone()),
        kept: Vec::new(),
    };
    let c = case(&v, json!({"enum": ["a", "b"]}), &[(true, json!("a"))]);
    let r = run::run_schema(&mut ad, &c, 0, Duration::from_secs(10));
    assert_eq!(r.status, Status::Pass);
    let h = r.heap.expect("heap sampled");
    let held = h.held.expect("compiled") as i64 - h.before as i64;
    let left = h.after as i64 - h.before as i64;
    assert!(held >= 1 << 20, "{h:?}");
    assert!(left >= 64 << 10, "{h:?}");
    assert!(h.peak >= h.before + (1 << 20), "{h:?}");
    let s = summarize("leaky", &[r]);
    let md = report::markdown_heap(&[s]);
    assert!(md.contains("| bytes per compiled grammar p50 |"), "{md}");
    assert!(md.contains("| left behind per schema max |"), "{md}");
}

/// Small shipped schemas for the smoke run.
const SMOKE_FILES: &[&str] = &[
    "Github_easy---o10008.json",
    "Github_easy---o10009.json",
    "Github_easy---o10010.json",
    "Github_easy---o10011.json",
];

#[test]
fn smoke_all_engines_on_small_schemas() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/maskbench");
    if !dir.is_dir() {
        eprintln!(
            "SKIPPED: MaskBench data not found at {} (see HELPERS.md)",
            dir.display()
        );
        return;
    }
    let v = vocab();
    let files: Vec<PathBuf> = SMOKE_FILES
        .iter()
        .map(|f| dir.join(f))
        .filter(|p| p.exists())
        .collect();
    assert!(
        !files.is_empty(),
        "smoke files missing from {}",
        dir.display()
    );
    let cases: Vec<run::SchemaCase> = files
        .iter()
        .map(|f| run::load_case(f, &v, InstanceOrder::Canonical).expect("loads"))
        .collect();
    let mut by_engine: Vec<(String, Vec<SchemaResult>)> = Vec::new();
    for engine in ["llguidance", "zapspec", "kbnf", "kbnf-json"] {
        let mut ad = make_adapter(engine, &v, false).expect("adapter");
        let rs: Vec<SchemaResult> = cases
            .iter()
            .enumerate()
            .map(|(i, c)| run::run_schema(ad.as_mut(), c, i, Duration::from_secs(30)))
            .collect();
        for r in &rs {
            assert!(
                !matches!(r.status, Status::Panic | Status::Timeout),
                "{engine} on {}: {r:?}",
                r.file
            );
            assert_eq!(r.mask_advance_mismatch, 0, "{engine} on {}", r.file);
        }
        by_engine.push((engine.to_string(), rs));
    }
    let get = |e: &str| &by_engine.iter().find(|(n, _)| n == e).unwrap().1;
    // llguidance is the reference engine: it passes these schemas.
    for r in get("llguidance") {
        assert_eq!(r.status, Status::Pass, "llguidance on {}: {r:?}", r.file);
    }
    // The generic JSON grammar accepts every valid instance.
    for r in get("kbnf-json") {
        assert!(
            r.validation_errors.is_empty(),
            "kbnf-json on {}: {r:?}",
            r.file
        );
    }
    // zapspec and kbnf run the same grammar: identical verdicts per instance.
    for (z, k) in get("zapspec").iter().zip(get("kbnf")) {
        assert_eq!(
            z.status == Status::CompileError,
            k.status == Status::CompileError,
            "{}",
            z.file
        );
        assert_eq!(z.validation_errors, k.validation_errors, "{}", z.file);
        assert_eq!(z.invalidation_errors, k.invalidation_errors, "{}", z.file);
    }
}

/// MaskBench times the call a user makes: with no experiment knob set,
/// the adapter's options are the facade's, and its compiled grammar gives
/// the masks of the facade's `zapspec::json_schema` along an instance.
#[test]
fn the_adapter_compiles_what_the_facade_compiles() {
    let knobs = [
        "MASKBENCH_MAX_REGEX_REPEAT",
        "MASKBENCH_STRING_BLOCKS",
        "MASKBENCH_INTERSECTIONS",
        "MASKBENCH_REFUSE_UNKNOWN_FORMATS",
    ];
    if knobs.iter().any(|k| std::env::var_os(k).is_some()) {
        eprintln!("skipped: a MASKBENCH_* knob is set");
        return;
    }
    assert_eq!(
        zapspec::schema_options(true),
        ::zapspec::json_schema_options()
    );
    let schema = json!({
        "type": "object",
        "properties": {"id": {"type": "integer", "minimum": 3}, "tag": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5}},
        "required": ["id"]
    });
    let v = vocab();
    let mut adapter = zapspec::ZapAdapter::new(
        v.clone(),
        zapspec::variant_config("full").expect("full"),
        zapspec::variant_index("full"),
        false,
    );
    let mut ours = adapter.compile(&schema).expect("compiles");
    let mut facade = ::zapspec::json_schema(v.clone(), &schema).expect("compiles");
    ours.start().expect("start");
    let tokens = v.encode(r#"{"id":42,"tag":"abc"}"#).expect("encodes");
    let mut mask = TokenSet::new(v.len());
    for &t in &tokens {
        ours.compute_mask().expect("mask");
        facade.fill_mask(&mut mask);
        for probe in (0..v.len() as TokenId).step_by(97).chain([t, v.eos()]) {
            assert_eq!(ours.allowed(probe), mask.contains(probe), "token {probe}");
        }
        ours.advance(t).expect("advance");
        facade.advance(t).expect("advance");
    }
    ours.compute_mask().expect("mask");
    facade.fill_mask(&mut mask);
    assert!(ours.eos_allowed() && mask.contains(v.eos()));
}

#[test]
fn the_common_set_keeps_only_what_every_engine_compiled() {
    let r = |index: usize, status: Status, ttfm: f64| SchemaResult {
        index,
        file: format!("dir/s{index}.json"),
        status,
        ttfm_us: (status != Status::CompileError).then_some(ttfm),
        ..Default::default()
    };
    // Schema 1 is refused by llguidance, schema 2 crashes ours; 0 and 3
    // are compiled by both (3 compiled but failing a test still counts).
    let ours = vec![
        r(0, Status::Pass, 100.0),
        r(1, Status::Pass, 9_000.0),
        r(2, Status::Crash, 0.0),
        r(3, Status::Fail, 300.0),
    ];
    let theirs = vec![
        r(0, Status::Pass, 50.0),
        r(1, Status::CompileError, 0.0),
        r(2, Status::Pass, 10.0),
        r(3, Status::Pass, 600.0),
    ];
    let sums = vec![
        summarize("zapspec", &ours),
        summarize("llguidance", &theirs),
    ];
    let c = report::common_set(&sums, &[ours, theirs]);
    assert_eq!(c.schemas, 2);
    assert_eq!(c.sums[0].ttfm_us.count, 2);
    assert_eq!(c.sums[0].ttfm_us.max, 300.0);
    assert_eq!(c.sums[1].ttfm_us.max, 600.0);
    let (engine, ratio, slower, over2) = c.ratio.clone().expect("llguidance ran");
    assert_eq!(engine, "zapspec");
    assert_eq!((ratio.max, slower, over2), (2.0, 0.5, 0));
    assert_eq!(c.slowest[0], ("dir/s3.json".into(), 300.0, 600.0));
    assert!(report::markdown_common(&c).contains("| `s3.json` |"));
}
