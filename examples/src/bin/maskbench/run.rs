//! The MaskBench protocol for one engine over a list of schema files
//! (JSONSchemaBench `maskbench/README.md`; our data README): compile →
//! TTFM, then per test instance and per token: mask (TBM) → check the
//! token is allowed → advance; at the end, acceptance = EOS in the mask.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use zapspec_core::TokenId;
use zapspec_jsonschema::{canonical_instances, JsonSchemaOptions};
use zapspec_vocab::TokenVocab;

use crate::adapter::Adapter;

/// How test instances are serialised before tokenizing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceOrder {
    /// Compact JSON with object keys in the order the compiled grammars
    /// write them (declared `properties` first, in schema order, then the
    /// others), via `zapspec_jsonschema::canonical_instances`.
    /// Both our compiler and llguidance fix this order; kbnf gets our
    /// grammar. The same text goes to every engine.
    Canonical,
    /// Compact JSON with keys in file order.
    File,
}

/// One test instance, tokenized.
pub struct Instance {
    pub valid: bool,
    pub tokens: Vec<TokenId>,
    /// Other key orders the grammar may fix for this instance (when
    /// `canonical_instances` finds several, e.g. `oneOf` branches that order
    /// the same keys differently). Every engine gets the same rule: a valid
    /// instance passes if one ordering is accepted; an invalid instance is
    /// an invalidation error if any ordering is accepted whole.
    pub alternatives: Vec<Vec<TokenId>>,
}

/// A schema file with its tokenized instances.
pub struct SchemaCase {
    pub file: String,
    pub schema: Value,
    pub instances: Vec<Instance>,
}

/// The schema files of `dir` (`*.json`, sorted by name), every `every`-th
/// (indices 0, every, 2·every, …), at most `limit`.
pub fn list_files(dir: &Path, every: usize, limit: Option<usize>) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out: Vec<PathBuf> = files.into_iter().step_by(every.max(1)).collect();
    if let Some(l) = limit {
        out.truncate(l);
    }
    Ok(out)
}

/// Reads a schema file and tokenizes its instances (not timed).
pub fn load_case(
    path: &Path,
    vocab: &TokenVocab,
    order: InstanceOrder,
) -> Result<SchemaCase, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let schema = v
        .get("schema")
        .cloned()
        .ok_or_else(|| format!("{}: no `schema`", path.display()))?;
    let mut instances = Vec::new();
    if let Some(tests) = v.get("tests").and_then(Value::as_array) {
        for t in tests {
            let valid = t.get("valid").and_then(Value::as_bool).unwrap_or(true);
            let data = t.get("data").cloned().unwrap_or(Value::Null);
            let orderings = match order {
                InstanceOrder::File => vec![data],
                InstanceOrder::Canonical => {
                    canonical_instances(&schema, &data, &JsonSchemaOptions::default())
                        .ok()
                        .filter(|c| !c.is_empty())
                        .unwrap_or_else(|| vec![data])
                }
            };
            let mut encoded = Vec::with_capacity(orderings.len());
            for d in &orderings {
                let s = serde_json::to_string(d).map_err(|e| e.to_string())?;
                encoded.push(vocab.encode(&s).map_err(|e| e.to_string())?);
            }
            let tokens = encoded.remove(0);
            instances.push(Instance {
                valid,
                tokens,
                alternatives: encoded,
            });
        }
    }
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(SchemaCase {
        file,
        schema,
        instances,
    })
}

/// Outcome of one schema.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Compiled, every test came out right.
    #[default]
    Pass,
    /// Compiled, some test came out wrong.
    Fail,
    CompileError,
    /// The per-schema time limit was exceeded (checked between masks).
    Timeout,
    /// A panic caught by `catch_unwind`.
    Panic,
    /// The child process died or hung past the hard limit on this schema.
    Crash,
    /// The file could not be read.
    BadFile,
}

/// What happened on one schema (one JSON line of `<engine>.schemas.jsonl`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SchemaResult {
    pub index: usize,
    pub file: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_category: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Compile + first mask, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttfm_us: Option<f64>,
    /// The part of `ttfm_us` spent building terminal automata, µs (engines
    /// that report it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfm_automata_us: Option<f64>,
    /// The schema → grammar step of the compile, µs (engines that report
    /// it; timed in a second run of that step alone, after TTFM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfm_schema_us: Option<f64>,
    /// The part of `ttfm_us` after the compile: starting the matcher and
    /// the first mask, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfm_first_mask_us: Option<f64>,
    /// Time until the compile or the first mask failed, µs (compile
    /// errors only: how long a refusal takes, e.g. at a limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_us: Option<f64>,
    /// Every other mask, ns.
    pub tbm_ns: Vec<u64>,
    pub valid_tests: usize,
    pub invalid_tests: usize,
    /// Valid instances refused (index of the test, token position).
    pub validation_errors: Vec<(usize, usize)>,
    /// Invalid instances accepted whole.
    pub invalidation_errors: Vec<usize>,
    /// Tokens in the mask that `advance` then refused.
    pub mask_advance_mismatch: usize,
    pub tokens: usize,
    /// Max over instances of the engine's peak live items, where reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_items: Option<usize>,
    /// Live heap around the schema (the binary's counting allocator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap: Option<HeapSample>,
    /// The engine's shared-cache byte account after the schema (engines
    /// that report it: ours, `CacheStats::cache_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_bytes: Option<u64>,
}

/// Live heap bytes around one schema, from the counting allocator
/// (`heap`): what the process holds, the engine's shared state included.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct HeapSample {
    /// Before the compile.
    pub before: u64,
    /// After compile + first mask, while the compiled grammar and its
    /// first matcher are held (`held - before`: the grammar's own bytes,
    /// and what the compile added to the engine's shared caches); `None`
    /// when the schema did not compile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<u64>,
    /// After the compiled grammar and its matchers are dropped (`after -
    /// before`: what the schema left behind in the engine). The harness's
    /// own per-schema result vectors are not counted.
    pub after: u64,
    /// The largest live heap in between.
    pub peak: u64,
}

impl SchemaResult {
    /// Heap bytes this result owns (its strings and vectors): subtracted
    /// from the live heap so that a schema's sample counts the engine only.
    fn own_heap_bytes(&self) -> u64 {
        let s = |x: &Option<String>| x.as_ref().map_or(0, String::capacity);
        (self.file.capacity()
            + s(&self.error)
            + s(&self.error_category)
            + self.tbm_ns.capacity() * std::mem::size_of::<u64>()
            + self.validation_errors.capacity() * std::mem::size_of::<(usize, usize)>()
            + self.invalidation_errors.capacity() * std::mem::size_of::<usize>()) as u64
    }
}

/// Runs one schema under `catch_unwind`.
pub fn run_schema(
    adapter: &mut dyn Adapter,
    case: &SchemaCase,
    index: usize,
    timeout: Duration,
) -> SchemaResult {
    let mut res = SchemaResult {
        index,
        file: case.file.clone(),
        ..SchemaResult::default()
    };
    let own0 = res.own_heap_bytes();
    let out = catch_unwind(AssertUnwindSafe(|| {
        run_schema_inner(adapter, case, timeout, &mut res)
    }));
    if let Err(p) = out {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into());
        res.status = Status::Panic;
        res.error = Some(msg);
    }
    // the compiled grammar and its matcher are dropped by now
    let ours = res.own_heap_bytes().saturating_sub(own0);
    if let Some(h) = &mut res.heap {
        h.peak = crate::heap::peak();
        h.after = crate::heap::live().saturating_sub(ours);
    }
    res.cache_bytes = adapter.cache_bytes();
    res
}

fn run_schema_inner(
    adapter: &mut dyn Adapter,
    case: &SchemaCase,
    timeout: Duration,
    res: &mut SchemaResult,
) {
    adapter.prepare();
    let built0 = adapter.automaton_build_us();
    crate::heap::reset_peak();
    res.heap = Some(HeapSample {
        before: crate::heap::live(),
        ..HeapSample::default()
    });
    let t0 = Instant::now();
    let mut c = match adapter.compile(&case.schema) {
        Ok(c) => c,
        Err(f) => {
            res.refused_us = Some(t0.elapsed().as_nanos() as f64 / 1000.0);
            res.status = Status::CompileError;
            res.error_category = Some(f.category);
            res.error = Some(f.message);
            return;
        }
    };
    let compiled = t0.elapsed();
    let first = c.start().and_then(|_| c.compute_mask());
    let ttfm = t0.elapsed();
    if let (Some(h), Ok(())) = (&mut res.heap, &first) {
        h.held = Some(crate::heap::live());
    }
    res.ttfm_us = Some(ttfm.as_nanos() as f64 / 1000.0);
    res.ttfm_first_mask_us = Some((ttfm - compiled).as_nanos() as f64 / 1000.0);
    res.ttfm_automata_us = built0.zip(adapter.automaton_build_us()).map(|(a, b)| b - a);
    res.ttfm_schema_us = adapter.schema_step_us(&case.schema);
    if let Err(e) = first {
        res.refused_us = res.ttfm_us;
        res.status = Status::CompileError;
        res.error_category = Some("first mask failed".into());
        res.error = Some(e);
        return;
    }
    let mut fresh = true; // the first mask is already computed
    for (k, inst) in case.instances.iter().enumerate() {
        if inst.valid {
            res.valid_tests += 1;
        } else {
            res.invalid_tests += 1;
        }
        if !fresh {
            if let Err(e) = c.start() {
                res.error = Some(e);
            }
        }
        let timed_mask = |c: &mut Box<dyn crate::adapter::Compiled>, res: &mut SchemaResult| {
            let t = Instant::now();
            let r = c.compute_mask();
            res.tbm_ns.push(t.elapsed().as_nanos() as u64);
            r
        };
        let mut accepted = false;
        let mut refused_at = None;
        for (j, tokens) in std::iter::once(&inst.tokens)
            .chain(&inst.alternatives)
            .enumerate()
        {
            if j > 0 {
                if let Err(e) = c.start() {
                    res.error = Some(e);
                }
                fresh = false;
            }
            refused_at = None;
            for (i, &tok) in tokens.iter().enumerate() {
                if !fresh && timed_mask(&mut c, res).is_err() {
                    refused_at = Some(i);
                    break;
                }
                fresh = false;
                res.tokens += 1;
                if !c.allowed(tok) {
                    refused_at = Some(i);
                    break;
                }
                if c.advance(tok).is_err() {
                    res.mask_advance_mismatch += 1;
                    refused_at = Some(i);
                    break;
                }
                if t0.elapsed() > timeout {
                    res.status = Status::Timeout;
                    return;
                }
            }
            accepted = refused_at.is_none() && timed_mask(&mut c, res).is_ok() && c.eos_allowed();
            fresh = false;
            if accepted {
                break;
            }
        }
        if let Some(p) = c.peak_items() {
            res.peak_items = Some(res.peak_items.unwrap_or(0).max(p));
        }
        match (inst.valid, accepted) {
            (true, false) => res
                .validation_errors
                .push((k, refused_at.unwrap_or(inst.tokens.len()))),
            (false, true) => res.invalidation_errors.push(k),
            _ => {}
        }
        if t0.elapsed() > timeout {
            res.status = Status::Timeout;
            return;
        }
    }
    res.status = if res.validation_errors.is_empty() && res.invalidation_errors.is_empty() {
        Status::Pass
    } else {
        Status::Fail
    };
}
