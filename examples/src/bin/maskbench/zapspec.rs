//! Our engine: `zapspec_jsonschema` (schema → grammar IR) and the
//! `earley` crate (ZapFormat: pruned Earley, context-independent mask
//! cache, pruned-state cache, rejected prefixes), through their public APIs.

use std::sync::Arc;

use serde_json::Value;
use zapspec_core::{Constraint, TokenId, TokenSet, Vocabulary};
use zapspec_earley::{
    CompiledGrammar, EarleyMatcher, Engine, EngineConfig, IndexConfig, VocabIndex,
};
use zapspec_grammar::Grammar;
use zapspec_jsonschema::{compile_json_schema_report, JsonSchemaOptions, UnknownFormats};
use zapspec_vocab::TokenVocab;

use crate::adapter::{Adapter, CompileFailure, Compiled};

/// The grammar our JSON Schema compiler produces — shared by the `zapspec`
/// and `kbnf` engines. MaskBench counts an accepted invalid instance as a
/// bug, so the compiler runs in its sound mode: compact whitespace,
/// `oneOf` only where its branches are provably disjoint
/// (`OneOfMode::RequireDisjoint`; llguidance refuses `oneOf` too), and a
/// specification `format` the compiler cannot enforce is a refusal rather
/// than an annotation. A `format` no draft defines is an annotation, as the
/// specification and the validators that wrote MaskBench's labels treat it
/// (`MASKBENCH_REFUSE_UNKNOWN_FORMATS=1` refuses it, llguidance's policy).
pub fn schema_grammar(schema: &Value) -> Result<Grammar, CompileFailure> {
    schema_grammar_with(schema, true)
}

/// [`schema_grammar`], with or without intersection terminals
/// (`JsonSchemaOptions::intersections`; `MASKBENCH_INTERSECTIONS=0`
/// turns them off everywhere, the ablation; KBNF has none).
pub fn schema_grammar_with(schema: &Value, intersections: bool) -> Result<Grammar, CompileFailure> {
    let (g, _report) = compile_json_schema_report(schema, &schema_options(intersections))
        .map_err(|e| CompileFailure::new(format!("schema: {}", e.category()), e.to_string()))?;
    Ok(g)
}

/// The compiler options of the run: the facade's
/// ([`::zapspec::json_schema_options`]), with the experiment knobs of the
/// environment applied.
pub fn schema_options(intersections: bool) -> JsonSchemaOptions {
    let mut opts = ::zapspec::json_schema_options();
    if let Some(n) = env_u64("MASKBENCH_MAX_REGEX_REPEAT") {
        opts.max_regex_repeat = n;
    }
    if let Some(b) = env_u64("MASKBENCH_STRING_BLOCKS") {
        opts.string_blocks = b != 0;
    }
    opts.intersections = intersections && env_u64("MASKBENCH_INTERSECTIONS").is_none_or(|b| b != 0);
    if env_u64("MASKBENCH_REFUSE_UNKNOWN_FORMATS").is_some_and(|b| b != 0) {
        opts.unknown_formats = UnknownFormats::Refuse;
    }
    opts
}

/// The ablation variants of `--ablation` (ZapFormat Table 3 and more).
pub fn variant_config(name: &str) -> Option<EngineConfig> {
    let mut c = EngineConfig::default();
    if let Some(n) = env_u64("MASKBENCH_STATE_CACHE") {
        c.state_cache_capacity = usize::try_from(n).unwrap_or(usize::MAX);
    }
    match name {
        "full" => {}
        "no-prune" => c.pruning = false,
        "no-cache" => {
            c.ci_cache = false;
            c.state_cache = false;
        }
        "no-prune-no-cache" => {
            c.pruning = false;
            c.ci_cache = false;
            c.state_cache = false;
        }
        "no-state-cache" => c.state_cache = false,
        "no-ci-cache" => c.ci_cache = false,
        "no-reject" => c.rejected_prefixes = false,
        "no-fuse" => c.fuse_terminals = false,
        "no-families" => c.fuse_families = false,
        "fuse-400k" => c.fuse_max_weight = 400_000,
        "fuse-150k" => c.fuse_max_weight = 150_000,
        "fuse-5m" => c.fuse_max_weight = 5_000_000,
        "baseline" => c = EngineConfig::baseline(),
        "no-slice" | "no-share" | "plain-index" | "eager-dfa" | "regex-literals" => {}
        _ => return None,
    }
    Some(c)
}

/// The vocabulary-index ablations of `--ablation` (cold context-independent
/// entries: vocabulary slices, residual sharing; `zapspec_earley::IndexConfig`).
pub fn variant_index(name: &str) -> IndexConfig {
    let mut c = variant_index_of(name);
    if let Some(mib) = env_u64("MASKBENCH_CACHE_MIB") {
        c.max_cache_bytes = usize::try_from(mib << 20).unwrap_or(usize::MAX);
    }
    c
}

/// An experiment knob from the environment (inherited by the engine's
/// child processes): `MASKBENCH_MAX_REGEX_REPEAT` (the schema compiler's
/// `max_regex_repeat`), `MASKBENCH_STRING_BLOCKS` (0: its
/// `string_blocks` off), `MASKBENCH_CACHE_MIB` (the index's
/// `max_cache_bytes`, MiB), `MASKBENCH_STATE_CACHE` (the engine's
/// `state_cache_capacity`, entries).
fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn variant_index_of(name: &str) -> IndexConfig {
    match name {
        "no-slice" => IndexConfig {
            slices: Vec::new(),
            ..IndexConfig::default()
        },
        "no-share" => IndexConfig {
            share_residuals: false,
            ..IndexConfig::default()
        },
        "eager-dfa" => IndexConfig {
            lazy_dfas: false,
            ..IndexConfig::default()
        },
        "regex-literals" => IndexConfig {
            direct_literals: false,
            ..IndexConfig::default()
        },
        "plain-index" | "baseline" => IndexConfig::plain(),
        _ => IndexConfig::default(),
    }
}

pub const VARIANTS: &[&str] = &[
    "full",
    "no-prune",
    "no-cache",
    "no-prune-no-cache",
    "no-state-cache",
    "no-ci-cache",
    "no-reject",
    "no-fuse",
    "no-families",
    "fuse-400k",
    "no-slice",
    "no-share",
    "plain-index",
    "eager-dfa",
    "regex-literals",
    "baseline",
];

pub struct ZapAdapter {
    vocab: Arc<TokenVocab>,
    engine: Engine,
    config: EngineConfig,
    index: IndexConfig,
    /// A fresh vocabulary index per schema (cold context-independent cache).
    cold: bool,
}

impl ZapAdapter {
    pub fn new(
        vocab: Arc<TokenVocab>,
        config: EngineConfig,
        index: IndexConfig,
        cold: bool,
    ) -> Self {
        ZapAdapter {
            engine: Self::engine(&vocab, &index),
            vocab,
            config,
            index,
            cold,
        }
    }

    fn engine(vocab: &Arc<TokenVocab>, index: &IndexConfig) -> Engine {
        // The index configurations come from `variant_index`: fixed, valid
        // slice regexes.
        // the index times its automaton builds for `automaton_build_us`
        let index = IndexConfig {
            time_dfa_builds: true,
            ..index.clone()
        };
        Engine::with_index(
            VocabIndex::with_config(vocab.clone(), index).expect("valid slice regexes"),
        )
    }
}

impl Adapter for ZapAdapter {
    fn prepare(&mut self) {
        if self.cold {
            self.engine = Self::engine(&self.vocab, &self.index);
        }
    }

    fn automaton_build_us(&self) -> Option<f64> {
        Some(self.engine.index().dfa_build_stats().1 as f64 / 1000.0)
    }

    fn cache_bytes(&self) -> Option<u64> {
        Some(self.engine.index().cache_bytes() as u64)
    }

    fn schema_step_us(&mut self, schema: &Value) -> Option<f64> {
        let t0 = std::time::Instant::now();
        let ok = schema_grammar(schema).is_ok();
        ok.then(|| t0.elapsed().as_nanos() as f64 / 1000.0)
    }

    fn compile(&mut self, schema: &Value) -> Result<Box<dyn Compiled>, CompileFailure> {
        // The facade's one path, the call a user makes.
        let cg = ::zapspec::compile_json_schema(
            &self.engine,
            schema,
            &schema_options(true),
            self.config,
        )
        .map_err(|e| match e {
            ::zapspec::Error::Schema(e) => {
                CompileFailure::new(format!("schema: {}", e.category()), e.to_string())
            }
            e => {
                let msg = e.to_string();
                let head: String = msg
                    .split([':', '/'])
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(40)
                    .collect();
                CompileFailure::new(format!("earley: {}", head.trim()), msg)
            }
        })?;
        let mask = TokenSet::new(self.vocab.len());
        Ok(Box::new(ZapCompiled {
            m: cg.matcher(),
            cg,
            mask,
            eos: self.vocab.eos(),
        }))
    }
}

struct ZapCompiled {
    cg: Arc<CompiledGrammar>,
    m: EarleyMatcher,
    mask: TokenSet,
    eos: TokenId,
}

impl Compiled for ZapCompiled {
    fn start(&mut self) -> Result<(), String> {
        self.m = self.cg.matcher();
        Ok(())
    }

    fn compute_mask(&mut self) -> Result<(), String> {
        self.m.fill_mask(&mut self.mask);
        Ok(())
    }

    fn allowed(&self, t: TokenId) -> bool {
        self.mask.contains(t)
    }

    fn eos_allowed(&self) -> bool {
        self.mask.contains(self.eos)
    }

    fn advance(&mut self, t: TokenId) -> Result<(), String> {
        self.m.advance(t).map_err(|r| r.reason.to_string())
    }

    fn peak_items(&self) -> Option<usize> {
        Some(self.m.memory().peak_items)
    }
}
