//! End-to-end race on SmolLM2-135M-Instruct (Q4_1 GGUF, CPU): zapspec's
//! facade against llama.cpp on the same prompts, tokens, temperatures and
//! seeds.
//!
//! Variants (letters as in the report):
//!
//! | | variant | engine |
//! |---|---|---|
//! | (a) | `llama.cpp` | llama-cpp-python, unconstrained (`examples/python/race_llama_cpp.py`) |
//! | (b) | `llama.cpp grammar` | llama-cpp-python with its own grammar engine (`LlamaGrammar.from_json_schema`; schema tasks only) |
//! | (c) | `plain` | zapspec constrained decoding, no drafter, grammar-forced tokens off |
//! | (d) | `forced` | (c) with grammar-forced tokens |
//! | (e) | `lookup` | (d) with prompt-lookup drafts (schemas) or copy drafts of the document (edits) |
//! | (e′) | `tree` | (d) with tree lookup (multi-match prompt lookup) verified in tree mode |
//! | (f) | `fvo` | (e) verified by FVO-Spec with OneStep-Cheap instead of Leviathan |
//!
//! Tasks: `--schemas` MaskBench schemas (the files in seeded order, the
//! first that zapspec compiles; the instruction of `e2e_throughput`
//! quoting the schema) and `--edits` edit tasks (those of `compose
//! --edits`: a valid instance and an instruction to change one value,
//! under its schema), each a one-turn ChatML prompt. The Rust side is the
//! one source of truth: `--dump-tasks` writes every task's prompt token
//! ids, schema and seed, which the Python script reads.
//!
//! Each generation starts from an empty KV cache: its time includes the
//! prompt's prefill (as on the llama.cpp side).
//!
//! ```sh
//! OUT=examples/results/race
//! cargo run --profile release-fast -p examples --bin race -- --dump-tasks $OUT/race_tasks.json
//! python examples/python/race_llama_cpp.py --tasks $OUT/race_tasks.json --out $OUT
//! cargo run --profile release-fast -p examples --bin race -- --llama-json $OUT/race_llama_cpp.json --out $OUT
//! ```

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use zapspec::{
    Builder, CopyDraft, Drafter, EarleyMatcher, Message, NoDraft, OneStepCheap, PhiEstimator,
    PromptLookup, StopReason, TokenId, TreeConfig, TreeLookup,
};
use zapspec_backend::CausalLm;
use zapspec_phi::NoModel;

use examples::report::{write_json, MarkdownTable as Table};
use examples::schema_tasks::same_output;

#[derive(Parser, Clone)]
#[command(about = "End-to-end race on SmolLM2: zapspec's facade vs llama.cpp")]
struct Args {
    /// MaskBench directory.
    #[arg(long, default_value = "../shared/data/maskbench")]
    maskbench: PathBuf,
    /// The GGUF model.
    #[arg(long, default_value = "models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")]
    model: PathBuf,
    /// Seed of the task draw and of sampling (task i samples with
    /// `seed · 1000003 + i`, on both sides).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Schema tasks (MaskBench files in seeded order, the first zapspec
    /// compiles).
    #[arg(long, default_value_t = 50)]
    schemas: usize,
    /// Edit tasks (those of `compose --edits`).
    #[arg(long, default_value_t = 12)]
    edits: usize,
    /// Generated tokens at most per output (EOS not counted).
    #[arg(long, default_value_t = 128)]
    max_tokens: usize,
    /// Threads of the native forward (llama.cpp: `n_threads`).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Temperatures (comma-separated); 0 is greedy decoding.
    #[arg(long, value_delimiter = ',', default_value = "0,0.7")]
    temperature: Vec<f64>,
    /// zapspec variants (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "plain,forced,lookup,tree,fvo"
    )]
    variants: Vec<Variant>,
    /// Output directory.
    #[arg(long, default_value = "examples/results/race")]
    out: PathBuf,
    /// llama.cpp's rows, written by `examples/python/race_llama_cpp.py`,
    /// merged into the report (read once zapspec's runs are done, so the
    /// script may run beside this binary).
    #[arg(long)]
    llama_json: Option<PathBuf>,
    /// Write the task list (prompt token ids, schemas, seeds) to this file
    /// and exit.
    #[arg(long)]
    dump_tasks: Option<PathBuf>,
    /// Longest schema text quoted in a prompt (bytes).
    #[arg(long, default_value_t = 3000)]
    max_schema_bytes: usize,
    /// Edit tasks: documents of at most this many bytes (compact JSON).
    #[arg(long, default_value_t = 400)]
    max_doc_bytes: usize,
    /// Draft length of prompt lookup and of tree lookup on schemas.
    #[arg(long, default_value_t = 4)]
    gamma: usize,
    /// Draft length of copy drafts and of tree lookup on edits.
    #[arg(long, default_value_t = 16)]
    copy_gamma: usize,
    /// (f): the TV bound per position of OneStep-Cheap's ranked
    /// look-ahead (`OneStepCheap::bounded`); 0 scores every candidate
    /// (`OneStepCheap::new()`, still exact-argmax when greedy).
    #[arg(long, default_value_t = 1e-3)]
    fvo_epsilon: f64,
    /// Tree lookup: children per node (at most width × γ nodes).
    #[arg(long, default_value_t = 2)]
    tree_width: usize,
}

/// A zapspec variant.
#[derive(ValueEnum, Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Variant {
    /// (c) constrained, no drafter, forced tokens off.
    Plain,
    /// (d) plain with grammar-forced tokens.
    Forced,
    /// (e) forced + prompt lookup (schemas) / copy drafts (edits).
    Lookup,
    /// (e′) forced + tree lookup in tree mode.
    Tree,
    /// (f) forced + the drafter of (e), FVO-Spec (OneStep-Cheap).
    Fvo,
}

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::Plain => "(c) plain",
            Variant::Forced => "(d) forced",
            Variant::Lookup => "(e) lookup",
            Variant::Tree => "(e′) tree",
            Variant::Fvo => "(f) fvo",
        }
    }
}

const LLAMA: &str = "(a) llama.cpp";
const LLAMA_GRAMMAR: &str = "(b) llama.cpp grammar";

/// Task families.
const FAMILIES: [&str; 2] = ["schema", "edit"];

/// One task: a prompt under a schema.
#[derive(Serialize)]
struct TaskOut<'a> {
    id: &'a str,
    family: &'a str,
    file: &'a str,
    seed: u64,
    schema: &'a serde_json::Value,
    prompt_tokens: &'a [TokenId],
    prompt_text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected: Option<&'a serde_json::Value>,
}

struct Task {
    id: String,
    family: &'static str,
    file: String,
    seed: u64,
    schema: serde_json::Value,
    prompt: Vec<TokenId>,
    /// Edits: the document's tokens (the copy drafter's source).
    source: Vec<TokenId>,
    /// Edits: the edited document.
    expected: Option<serde_json::Value>,
    json: EarleyMatcher,
    validator: Option<jsonschema::Validator>,
}

/// One generation, zapspec's or llama.cpp's.
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Row {
    task: String,
    family: String,
    variant: String,
    temperature: f64,
    /// `ok`, or why there is no output (`refused`, `error`, `crashed`).
    status: String,
    #[serde(default)]
    reason: Option<String>,
    /// Output tokens (EOS excluded).
    #[serde(default)]
    tokens: usize,
    /// Wall time of the whole call (prefill included).
    #[serde(default)]
    total_s: f64,
    /// Time to the first output token.
    #[serde(default)]
    ttft_s: Option<f64>,
    /// Target forward calls (llama.cpp: `llama_decode` calls).
    #[serde(default)]
    forwards: usize,
    /// Output tokens the grammar forced (zapspec).
    #[serde(default)]
    forced: usize,
    /// Positions whose law needed Φ̂ (FVO-Spec), the seconds spent in Φ̂
    /// and at its slowest position (zapspec's `RoundStats`).
    #[serde(default)]
    phi_positions: usize,
    #[serde(default)]
    phi_s: f64,
    #[serde(default)]
    phi_max_s: f64,
    #[serde(default)]
    stop: String,
    #[serde(default)]
    valid: Option<bool>,
    #[serde(default)]
    equal_to_plain: Option<bool>,
    #[serde(default)]
    edit_applied: Option<bool>,
    #[serde(default)]
    text: String,
    /// The output's token ids (read from llama.cpp's rows; not written).
    #[serde(default, skip_serializing)]
    output_tokens: Vec<TokenId>,
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args
        .temperature
        .iter()
        .any(|t| !(t.is_finite() && *t >= 0.0))
    {
        bail!("temperatures must be finite and ≥ 0");
    }
    let t0 = Instant::now();
    let model = zapspec::Model::load_with(
        &args.model,
        &zapspec::LoadOptions {
            native: zapspec_backend::NativeOptions {
                threads: args.threads,
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .with_context(|| format!("{} (scripts/fetch-smollm2.sh)", args.model.display()))?;
    let load_s = t0.elapsed().as_secs_f64();
    let (tasks, looked) = build_tasks(&args, &model)?;
    if let Some(path) = &args.dump_tasks {
        dump_tasks(&args, &model, &tasks, path)?;
        println!("wrote {} tasks to {}", tasks.len(), path.display());
        return Ok(());
    }
    std::fs::create_dir_all(&args.out)?;

    // warm-up (not recorded): the first forward after loading is slower
    if let Some(t) = tasks.first() {
        let b = model.builder(t.json.clone()).greedy().max_tokens(8);
        b.build()?.generate(&t.prompt)?;
    }
    let runs = tasks.len() * args.temperature.len() * args.variants.len();
    let bar = ProgressBar::new(runs as u64);
    bar.set_style(ProgressStyle::with_template(
        "{bar:40} {pos}/{len} {msg} [{elapsed}<{eta}]",
    )?);
    let mut rows = Vec::new();
    for task in &tasks {
        for &temp in &args.temperature {
            let mut plain: Option<Vec<TokenId>> = None;
            for &v in &args.variants {
                bar.set_message(format!("{} {} T={temp}", task.id, v.label()));
                let mut r = match run_variant(&model, task, v, temp, &args) {
                    Ok(r) => r,
                    Err(e) => error_row(task, v.label(), temp, &e.to_string()),
                };
                finish_row(&mut r, task);
                if v == Variant::Plain {
                    plain = (r.status == "ok").then(|| r.output_tokens.clone());
                }
                r.equal_to_plain = plain
                    .as_ref()
                    .filter(|_| v != Variant::Plain && r.status == "ok")
                    .map(|p| same_output(&r.output_tokens, p, args.max_tokens));
                rows.push(r);
                bar.inc(1);
            }
        }
    }
    bar.finish();
    // read after zapspec's runs, so that the llama.cpp side may run at the
    // same time in another process (each on its own core)
    let llama = match &args.llama_json {
        Some(p) => Some(read_llama(p, &tasks, &args)?),
        None => None,
    };
    let llama_info = llama
        .as_ref()
        .map(|l| (l.command.clone(), l.versions.to_string()));
    if let Some(mut ll) = llama.map(|l| l.rows) {
        for r in &mut ll {
            if let Some(task) = tasks.iter().find(|t| t.id == r.task) {
                finish_row(r, task);
                r.equal_to_plain = rows
                    .iter()
                    .find(|p| {
                        p.task == r.task
                            && p.temperature == r.temperature
                            && p.variant == Variant::Plain.label()
                    })
                    .filter(|_| r.status == "ok")
                    .map(|p| same_output(&r.output_tokens, &p.output_tokens, args.max_tokens));
            }
        }
        ll.append(&mut rows);
        rows = ll;
    }
    report(&args, &tasks, looked, load_s, &rows, llama_info)
}

/// The schema and edit tasks, and how many MaskBench files were looked at
/// for the schema tasks.
fn build_tasks(args: &Args, model: &zapspec::Model) -> Result<(Vec<Task>, usize)> {
    let mut tasks = Vec::new();
    let files = examples::schema_tasks::shuffled_schema_files(&args.maskbench, args.seed)?;
    let mut looked = 0;
    for f in &files {
        if tasks.len() == args.schemas {
            break;
        }
        looked += 1;
        let schema = examples::schema_tasks::read_schema(f)?;
        let Ok(json) = model.json_schema(&schema) else {
            continue;
        };
        let user = examples::schema_tasks::schema_instruction(&schema, args.max_schema_bytes)?;
        let i = tasks.len();
        tasks.push(Task {
            id: format!("schema-{i:03}"),
            family: "schema",
            file: name_of(f),
            seed: task_seed(args.seed, i),
            validator: jsonschema::validator_for(&schema).ok(),
            prompt: model.tokenizer.encode_chat(&[Message::user(user)])?,
            source: Vec::new(),
            expected: None,
            schema,
            json,
        });
    }
    let (edits, _) = examples::schema_tasks::edit_tasks(
        &args.maskbench,
        args.seed,
        args.edits,
        args.max_doc_bytes,
    )?;
    for (k, e) in edits.into_iter().enumerate() {
        let i = tasks.len();
        tasks.push(Task {
            id: format!("edit-{k:03}"),
            family: "edit",
            file: e.file,
            seed: task_seed(args.seed, i),
            validator: jsonschema::validator_for(&e.schema).ok(),
            prompt: model
                .tokenizer
                .encode_chat(&[Message::user(e.instruction)])?,
            source: model.tokenizer.encode(&e.doc)?,
            expected: Some(e.expected),
            json: model.json_schema(&e.schema)?,
            schema: e.schema,
        });
    }
    Ok((tasks, looked))
}

fn task_seed(seed: u64, i: usize) -> u64 {
    seed.wrapping_mul(1_000_003).wrapping_add(i as u64)
}

fn dump_tasks(args: &Args, model: &zapspec::Model, tasks: &[Task], path: &Path) -> Result<()> {
    let list: Vec<TaskOut> = tasks
        .iter()
        .map(|t| TaskOut {
            id: &t.id,
            family: t.family,
            file: &t.file,
            seed: t.seed,
            schema: &t.schema,
            prompt_tokens: &t.prompt,
            prompt_text: model.tokenizer.decode(&t.prompt),
            expected: t.expected.as_ref(),
        })
        .collect();
    let v = serde_json::json!({
        "model": args.model,
        "seed": args.seed,
        "max_tokens": args.max_tokens,
        "threads": args.threads,
        "temperatures": args.temperature,
        "stop_tokens": [model.eos()],
        "tasks": list,
    });
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(&v)?)?;
    Ok(())
}

/// What the Python script writes.
#[derive(Deserialize)]
struct LlamaFile {
    #[serde(default)]
    command: String,
    #[serde(default)]
    versions: serde_json::Value,
    rows: Vec<Row>,
}

fn read_llama(path: &Path, tasks: &[Task], args: &Args) -> Result<LlamaFile> {
    let f: LlamaFile = serde_json::from_str(
        &std::fs::read_to_string(path).with_context(|| path.display().to_string())?,
    )
    .with_context(|| format!("{}: not the Python script's output", path.display()))?;
    let missing = tasks
        .iter()
        .filter(|t| !f.rows.iter().any(|r| r.task == t.id))
        .count();
    if missing > 0 {
        eprintln!(
            "warning: {} has no rows for {missing} of the {} tasks (was it run on the same --dump-tasks file?)",
            path.display(),
            tasks.len()
        );
    }
    for r in &f.rows {
        if !args.temperature.contains(&r.temperature) {
            eprintln!(
                "warning: {} has rows at T={}, not in --temperature",
                path.display(),
                r.temperature
            );
            break;
        }
    }
    Ok(f)
}

/// Grammar-forced tokens on or off: the one place the variants (c) and
/// (d) differ.
fn forced<D, F>(
    b: Builder<CausalLm, EarleyMatcher, D, F>,
    on: bool,
) -> Builder<CausalLm, EarleyMatcher, D, F> {
    b.forced_tokens(on)
}

/// One generation of `variant` on `task` at `temp`.
fn run_variant(
    model: &zapspec::Model,
    task: &Task,
    variant: Variant,
    temp: f64,
    args: &Args,
) -> Result<Row> {
    let b = model
        .builder(task.json.clone())
        .max_tokens(args.max_tokens)
        .seed(task.seed);
    let b = if temp == 0.0 {
        b.greedy()
    } else {
        b.sampled().temperature(temp)
    };
    let edit = task.family == "edit";
    let lookup_gamma = if edit { args.copy_gamma } else { args.gamma };
    let m = match variant {
        Variant::Plain => measure(forced(b, false).drafter(NoDraft), &task.prompt)?,
        Variant::Forced => measure(forced(b, true).drafter(NoDraft), &task.prompt)?,
        Variant::Lookup | Variant::Fvo => {
            let b = forced(b, true).gamma(lookup_gamma);
            match (edit, variant == Variant::Fvo) {
                (true, false) => {
                    measure(b.drafter(CopyDraft::new(task.source.clone())), &task.prompt)?
                }
                (true, true) => measure(
                    b.drafter(CopyDraft::new(task.source.clone()))
                        .fvo_spec(fvo_estimator(args)?),
                    &task.prompt,
                )?,
                (false, false) => measure(b.drafter(PromptLookup::default()), &task.prompt)?,
                (false, true) => measure(
                    b.drafter(PromptLookup::default())
                        .fvo_spec(fvo_estimator(args)?),
                    &task.prompt,
                )?,
            }
        }
        Variant::Tree => {
            let g = lookup_gamma;
            let shape = TreeConfig {
                max_width: args.tree_width,
                max_nodes: (args.tree_width * g).max(1),
            };
            measure(
                forced(b, true)
                    .gamma(g)
                    .drafter(TreeLookup::default())
                    .tree(shape),
                &task.prompt,
            )?
        }
    };
    Ok(Row {
        task: task.id.clone(),
        family: task.family.into(),
        variant: variant.label().into(),
        temperature: temp,
        status: "ok".into(),
        reason: None,
        tokens: m.tokens.len(),
        total_s: m.total_s,
        ttft_s: m.ttft_s,
        forwards: m.forwards,
        forced: m.forced,
        phi_positions: m.phi_positions,
        phi_s: m.phi_s,
        phi_max_s: m.phi_max_s,
        stop: m.stop,
        valid: None,
        equal_to_plain: None,
        edit_applied: None,
        text: m.text,
        output_tokens: m.tokens,
    })
}

struct Measured {
    tokens: Vec<TokenId>,
    text: String,
    stop: String,
    total_s: f64,
    ttft_s: Option<f64>,
    forwards: usize,
    forced: usize,
    phi_positions: usize,
    phi_s: f64,
    phi_max_s: f64,
}

/// Builds the pipeline and streams one generation: wall time of the whole
/// facade call (build, prefill, decoding), time to the first streamed
/// text (after the round that decided the first token).
/// (f)'s estimator: OneStep-Cheap with the ranked look-ahead's TV bound
/// `--fvo-epsilon` (0: every candidate scored).
fn fvo_estimator(args: &Args) -> Result<OneStepCheap> {
    if args.fvo_epsilon == 0.0 {
        return Ok(OneStepCheap::new());
    }
    Ok(OneStepCheap::bounded(args.fvo_epsilon)?)
}

fn measure<D, F>(b: Builder<CausalLm, EarleyMatcher, D, F>, prompt: &[TokenId]) -> Result<Measured>
where
    D: Drafter,
    F: PhiEstimator<EarleyMatcher, NoModel>,
{
    let t0 = Instant::now();
    let mut first = None;
    let mut pipe = b.build()?;
    let g = pipe.generate_stream(prompt, |_| {
        first.get_or_insert_with(|| t0.elapsed().as_secs_f64());
    })?;
    let total_s = t0.elapsed().as_secs_f64();
    let stop = match &g.stop {
        StopReason::MaxTokens => "length".to_string(),
        s => format!("{s:?}").to_lowercase(),
    };
    Ok(Measured {
        ttft_s: first.or((!g.tokens.is_empty()).then_some(total_s)),
        tokens: g.tokens,
        text: g.text,
        stop,
        total_s,
        forwards: g.stats.target_calls,
        forced: g.stats.forced,
        phi_positions: g.stats.phi_positions,
        phi_s: g.stats.phi_nanos as f64 / 1e9,
        phi_max_s: g.stats.phi_max_nanos as f64 / 1e9,
    })
}

fn error_row(task: &Task, variant: &str, temp: f64, e: &str) -> Row {
    Row {
        task: task.id.clone(),
        family: task.family.into(),
        variant: variant.into(),
        temperature: temp,
        status: "error".into(),
        reason: Some(e.chars().take(300).collect()),
        tokens: 0,
        total_s: 0.0,
        ttft_s: None,
        forwards: 0,
        forced: 0,
        phi_positions: 0,
        phi_s: 0.0,
        phi_max_s: 0.0,
        stop: String::new(),
        valid: None,
        equal_to_plain: None,
        edit_applied: None,
        text: String::new(),
        output_tokens: Vec::new(),
    }
}

/// Validity under the task's schema (the `jsonschema` crate) and, for
/// edits, whether the output is the edited document.
fn finish_row(r: &mut Row, task: &Task) {
    if r.status != "ok" {
        return;
    }
    let parsed = serde_json::from_str::<serde_json::Value>(r.text.trim()).ok();
    r.valid = Some(match (&parsed, &task.validator) {
        (Some(j), Some(v)) => v.is_valid(j),
        _ => false,
    });
    r.edit_applied = task
        .expected
        .as_ref()
        .map(|e| parsed.as_ref().is_some_and(|j| j == e));
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// the report

/// Aggregates of one variant over the tasks of one (family, temperature).
#[derive(Serialize, Default, Clone)]
struct Summary {
    variant: String,
    family: String,
    temperature: f64,
    attempted: usize,
    generated: usize,
    tokens: usize,
    total_s: f64,
    tok_s_mean: Option<f64>,
    tok_s_p50: Option<f64>,
    tok_s_aggregate: Option<f64>,
    ttft_ms_p50: Option<f64>,
    ttft_ms_p90: Option<f64>,
    after_ttft_tok_s_aggregate: Option<f64>,
    forwards_per_token: Option<f64>,
    forced_per_token: Option<f64>,
    /// Mean and largest µs of Φ̂ per position that needed it, and Φ̂'s share
    /// of the wall time.
    phi_us_per_position: Option<f64>,
    phi_us_max: Option<f64>,
    phi_share: Option<f64>,
    valid: usize,
    equal_to_plain: usize,
    compared: usize,
    edit_applied: usize,
}

fn quantile(xs: &mut [f64], q: f64) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let pos = q * (xs.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    Some(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo as f64))
}

fn summarize(rows: &[&Row], variant: &str, family: &str, temp: f64) -> Summary {
    let ok: Vec<&&Row> = rows.iter().filter(|r| r.status == "ok").collect();
    let mut rates: Vec<f64> = ok
        .iter()
        .filter(|r| r.total_s > 0.0)
        .map(|r| r.tokens as f64 / r.total_s)
        .collect();
    let mut ttft: Vec<f64> = ok
        .iter()
        .filter_map(|r| r.ttft_s)
        .map(|s| s * 1e3)
        .collect();
    let tokens: usize = ok.iter().map(|r| r.tokens).sum();
    let total_s: f64 = ok.iter().map(|r| r.total_s).sum();
    let forwards: usize = ok.iter().map(|r| r.forwards).sum();
    let forced: usize = ok.iter().map(|r| r.forced).sum();
    let phi_positions: usize = ok.iter().map(|r| r.phi_positions).sum();
    let phi_s: f64 = ok.iter().map(|r| r.phi_s).sum();
    let phi_max_s = ok.iter().map(|r| r.phi_max_s).fold(0.0, f64::max);
    // the tokens after the first and the time after TTFT
    let (after_tokens, after_s) = ok
        .iter()
        .filter_map(|r| Some((r.tokens.saturating_sub(1), r.total_s - r.ttft_s?)))
        .fold((0, 0.0), |(n, s), (k, t)| (n + k, s + t));
    Summary {
        variant: variant.into(),
        family: family.into(),
        temperature: temp,
        attempted: rows.len(),
        generated: ok.len(),
        tokens,
        total_s,
        tok_s_mean: (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64),
        tok_s_p50: quantile(&mut rates, 0.5),
        tok_s_aggregate: (total_s > 0.0).then(|| tokens as f64 / total_s),
        ttft_ms_p50: quantile(&mut ttft, 0.5),
        ttft_ms_p90: quantile(&mut ttft, 0.9),
        after_ttft_tok_s_aggregate: (after_s > 0.0).then(|| after_tokens as f64 / after_s),
        forwards_per_token: (tokens > 0).then(|| forwards as f64 / tokens as f64),
        forced_per_token: (tokens > 0).then(|| forced as f64 / tokens as f64),
        phi_us_per_position: (phi_positions > 0).then(|| phi_s * 1e6 / phi_positions as f64),
        phi_us_max: (phi_positions > 0).then_some(phi_max_s * 1e6),
        phi_share: (phi_positions > 0 && total_s > 0.0).then(|| phi_s / total_s),
        valid: ok.iter().filter(|r| r.valid == Some(true)).count(),
        equal_to_plain: ok.iter().filter(|r| r.equal_to_plain == Some(true)).count(),
        compared: ok.iter().filter(|r| r.equal_to_plain.is_some()).count(),
        edit_applied: ok.iter().filter(|r| r.edit_applied == Some(true)).count(),
    }
}

fn f(x: Option<f64>, prec: usize) -> String {
    x.map_or("–".into(), |v| format!("{v:.prec$}"))
}

/// Median over the tasks both ran of `num`'s tokens/s over `den`'s.
fn paired_median(rows: &[&Row], num: &str, den: &str) -> Option<f64> {
    let rate = |v: &str, task: &str| {
        rows.iter()
            .find(|r| r.variant == v && r.task == task && r.status == "ok" && r.total_s > 0.0)
            .map(|r| r.tokens as f64 / r.total_s)
    };
    let mut ratios: Vec<f64> = rows
        .iter()
        .filter(|r| r.variant == num)
        .filter_map(|r| Some(rate(num, &r.task)? / rate(den, &r.task).filter(|&d| d > 0.0)?))
        .collect();
    quantile(&mut ratios, 0.5)
}

fn report(
    args: &Args,
    tasks: &[Task],
    looked: usize,
    load_s: f64,
    rows: &[Row],
    llama: Option<(String, String)>,
) -> Result<()> {
    let mut variants: Vec<String> = Vec::new();
    for r in rows {
        if !variants.contains(&r.variant) {
            variants.push(r.variant.clone());
        }
    }
    let zap_cmd = format!(
        "cargo run --profile release-fast -p examples --bin race -- --seed {} --schemas {} --edits {} --max-tokens {} --threads {} --temperature {} --variants {} --out {}{}",
        args.seed,
        args.schemas,
        args.edits,
        args.max_tokens,
        args.threads,
        args.temperature.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(","),
        args.variants
            .iter()
            .map(|v| format!("{v:?}").to_lowercase())
            .collect::<Vec<_>>()
            .join(","),
        args.out.display(),
        args.llama_json
            .as_ref()
            .map_or(String::new(), |p| format!(" --llama-json {}", p.display())),
    );
    let mut md = vec![
        "# Race: zapspec vs llama.cpp on SmolLM2-135M-Instruct (Q4_1 GGUF, CPU)".to_string(),
        String::new(),
        format!(
            "Machine: {}. Threads: {} (zapspec's native forward and llama.cpp's `n_threads`/`n_threads_batch`). Model load: {load_s:.2} s.",
            examples::host::cpu_name(),
            args.threads
        ),
        String::new(),
        "Commands (from the repository root):".into(),
        String::new(),
    ];
    if let Some((command, versions)) = &llama {
        md.push(format!("- llama.cpp: `{command}` (versions: `{versions}`)"));
    }
    md.push(format!("- zapspec: `{zap_cmd}`"));
    md.push(String::new());
    let n_schema = tasks.iter().filter(|t| t.family == "schema").count();
    let n_edit = tasks.len() - n_schema;
    md.push(format!(
        "Tasks: {n_schema} MaskBench schemas (the files in seeded order (seed {}), the first {n_schema} zapspec compiles, of {looked} looked at; the `e2e_throughput` instruction quoting the schema, cut at {} bytes) and {n_edit} edit tasks (those of `compose --edits`: a valid instance of ≤ {} bytes and an instruction to change one value). \
         Every prompt is a one-turn ChatML conversation; both engines get the same prompt token ids (`--dump-tasks`). At most {} output tokens; temperature 0 is greedy, otherwise pure temperature sampling (no top-k/top-p/min-p on either side) seeded per task. \
         Each generation starts from an empty KV cache, so its time includes the prompt's prefill; schema compilation (zapspec's Earley matcher, llama.cpp's `LlamaGrammar.from_json_schema`) is outside the time, llama.cpp's GBNF parse inside it.",
        args.seed, args.max_schema_bytes, args.max_doc_bytes, args.max_tokens
    ));
    md.push(String::new());
    md.push(format!(
        "Variants: (a) llama.cpp unconstrained; (b) llama.cpp with its grammar sampler (schemas only); (c) zapspec plain constrained decoding (`NoDraft`, forced tokens off); (d) (c) with grammar-forced tokens; \
         (e) (d) + prompt lookup γ={} (schemas) / copy drafts of the document γ={} (edits); (e′) (d) + tree lookup (width {}, γ={} on schemas, {} on edits) in tree mode; \
         (f) (e) with the FVO-Spec verifier (OneStep-Cheap, {}) — its target law is μ* (Φ̂-reweighted), not plain decoding's, so its output may differ from (c) even greedily.",
        args.gamma, args.copy_gamma, args.tree_width, args.gamma, args.copy_gamma,
        if args.fvo_epsilon == 0.0 {
            "every candidate scored: `OneStepCheap::new()`, exact argmax stop when greedy".to_string()
        } else {
            format!("ranked look-ahead, TV bound {} per position: `OneStepCheap::bounded({})`; greedy: the exact argmax stop", args.fvo_epsilon, args.fvo_epsilon)
        }
    ));
    md.push(String::new());
    md.push(
        "Columns: tokens/s per task = output tokens (EOS excluded) / wall time of the whole call (zapspec: `Builder::build` + `Pipeline::generate_stream`; llama.cpp: `Llama.generate` until EOS or the cap), mean and median over tasks, and aggregate = Σ tokens / Σ time. \
         Tok/s after TTFT: Σ (tokens − 1) / Σ (time − TTFT), the decoding rate without the prefill. TTFT: zapspec, the first `generate_stream` text callback (after the round that decided the first token: prefill + mask + first token); llama.cpp, the first token the generator yields (prefill + sampling). \
         Forwards per token: target forward calls (llama.cpp: `llama_decode` calls) / output tokens; forced per token: output tokens zapspec committed as grammar-forced (`RoundStats::forced`) / output tokens. Φ̂ µs / position: the estimator's wall time per verified position whose law needed it (`RoundStats::phi_nanos` / `phi_positions`; mean, and the slowest position), Φ̂ share: Σ Φ̂ time / Σ wall time — the correction's own cost, apart from the change of law (fewer drafts accepted) that (f)'s forwards per token show. Valid: the output parses and the `jsonschema` crate's `validator_for` accepts it. \
         = (c): the output's tokens equal those of (c) on the same task and temperature (up to the cap when both hit it); for llama.cpp rows a cross-engine comparison.".into(),
    );
    md.push(String::new());
    let mut summaries = Vec::new();
    let mut ratios_all = Vec::new();
    for family in FAMILIES {
        for &temp in &args.temperature {
            let fam: Vec<&Row> = rows
                .iter()
                .filter(|r| r.family == family && r.temperature == temp)
                .collect();
            if fam.is_empty() {
                continue;
            }
            md.push(format!(
                "## {family} tasks, T = {temp}{}",
                if temp == 0.0 { " (greedy)" } else { "" }
            ));
            md.push(String::new());
            let mut t = Table::new(&[
                "variant",
                "outputs",
                "tok/s mean",
                "tok/s p50",
                "tok/s aggregate",
                "TTFT p50 ms",
                "TTFT p90 ms",
                "tok/s after TTFT",
                "forwards / token",
                "forced / token",
                "Φ̂ µs / position (mean / max)",
                "Φ̂ share of time",
                "valid",
                "= (c)",
                "edit applied",
            ]);
            let mut by = std::collections::BTreeMap::new();
            for v in &variants {
                let vr: Vec<&Row> = fam.iter().copied().filter(|r| &r.variant == v).collect();
                if vr.is_empty() {
                    continue;
                }
                let s = summarize(&vr, v, family, temp);
                t.row(&[
                    v.clone(),
                    format!("{}/{}", s.generated, s.attempted),
                    f(s.tok_s_mean, 1),
                    f(s.tok_s_p50, 1),
                    f(s.tok_s_aggregate, 1),
                    f(s.ttft_ms_p50, 0),
                    f(s.ttft_ms_p90, 0),
                    f(s.after_ttft_tok_s_aggregate, 1),
                    f(s.forwards_per_token, 2),
                    f(s.forced_per_token, 2),
                    match (s.phi_us_per_position, s.phi_us_max) {
                        (Some(a), Some(m)) => format!("{a:.0} / {m:.0}"),
                        _ => "—".into(),
                    },
                    s.phi_share
                        .map_or("—".into(), |x| format!("{:.1}%", 100.0 * x)),
                    format!("{}/{}", s.valid, s.generated),
                    if s.compared > 0 {
                        format!("{}/{}", s.equal_to_plain, s.compared)
                    } else {
                        "—".into()
                    },
                    if family == "edit" {
                        format!("{}/{}", s.edit_applied, s.generated)
                    } else {
                        "—".into()
                    },
                ]);
                by.insert(v.clone(), s.clone());
                summaries.push(s);
            }
            md.push(t.render());
            let mut rt = Table::new(&["ratio", "aggregate tok/s", "median of per-task ratios"]);
            let c = Variant::Plain.label();
            let d = Variant::Forced.label();
            let e = Variant::Lookup.label();
            let fv = Variant::Fvo.label();
            let mut ratios = Vec::new();
            for (num, den) in [
                (d, c),
                (e, c),
                (fv, e),
                (d, LLAMA),
                (d, LLAMA_GRAMMAR),
                (e, LLAMA),
                (e, LLAMA_GRAMMAR),
            ] {
                let (Some(n), Some(dd)) = (by.get(num), by.get(den)) else {
                    continue;
                };
                let agg = n
                    .tok_s_aggregate
                    .zip(dd.tok_s_aggregate)
                    .map(|(a, b)| a / b);
                let med = paired_median(&fam, num, den);
                rt.row(&[format!("{num} / {den}"), f(agg, 2), f(med, 2)]);
                ratios.push(
                    serde_json::json!({"num": num, "den": den, "aggregate": agg, "median": med}),
                );
            }
            if !ratios.is_empty() {
                md.push(String::new());
                md.push(rt.render());
            }
            ratios_all
                .push(serde_json::json!({"family": family, "temperature": temp, "ratios": ratios}));
            md.push(String::new());
        }
    }
    // greedy decoding with Leviathan (drafts, trees, forced tokens) is
    // lossless: its outputs must be those of (c)
    let lossless = [
        Variant::Forced.label(),
        Variant::Lookup.label(),
        Variant::Tree.label(),
    ];
    let differ: Vec<&Row> = rows
        .iter()
        .filter(|r| r.temperature == 0.0 && lossless.contains(&r.variant.as_str()))
        .filter(|r| r.equal_to_plain == Some(false))
        .collect();
    if args.temperature.contains(&0.0) {
        md.push("## Greedy outputs that differ from (c)".into());
        md.push(String::new());
        if differ.is_empty() {
            md.push("None: at T = 0 every output of (d), (e) and (e′) equals (c)'s.".into());
        }
        for r in differ {
            md.push(format!("- {} on `{}`", r.variant, r.task));
        }
        md.push(String::new());
    }
    let errors: Vec<&Row> = rows.iter().filter(|r| r.status != "ok").collect();
    if !errors.is_empty() {
        md.push("## Outputs missing".into());
        md.push(String::new());
        for r in errors {
            md.push(format!(
                "- {} on `{}` at T={}: {} {}",
                r.variant,
                r.task,
                r.temperature,
                r.status,
                r.reason.as_deref().unwrap_or("")
            ));
        }
        md.push(String::new());
    }
    md.push("## Tasks".into());
    md.push(String::new());
    for t in tasks {
        md.push(format!(
            "- `{}`: `{}` ({} prompt tokens)",
            t.id,
            t.file,
            t.prompt.len()
        ));
    }
    md.push(String::new());
    md.push("![tokens/s per variant and task family](race.png)".into());
    md.push(String::new());
    let md = md.join("\n");
    std::fs::write(args.out.join("race.md"), &md)?;
    write_json(
        &args.out,
        "race",
        &serde_json::json!({
            "command": zap_cmd,
            "llama_command": llama.as_ref().map(|l| l.0.clone()),
            "machine": examples::host::cpu_name(),
            "threads": args.threads,
            "summaries": summaries,
            "ratios": ratios_all,
            "rows": rows,
        }),
    )?;
    examples::host::register_font()
        .and_then(|()| plot(&args.out.join("race.png"), args, &variants, &summaries))?;
    println!("{md}");
    Ok(())
}

/// Aggregate tokens/s per variant, one panel per (family, temperature).
fn plot(path: &Path, args: &Args, variants: &[String], sums: &[Summary]) -> Result<()> {
    use plotters::prelude::*;
    let panels: Vec<(&str, f64)> = FAMILIES
        .iter()
        .flat_map(|&fam| args.temperature.iter().map(move |&t| (fam, t)))
        .filter(|(fam, t)| sums.iter().any(|s| s.family == *fam && s.temperature == *t))
        .collect();
    if panels.is_empty() {
        return Ok(());
    }
    let cols = args.temperature.len().max(1);
    let rows_n = panels.len().div_ceil(cols);
    let root =
        BitMapBackend::new(path, (560 * cols as u32, 400 * rows_n as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let areas = root.split_evenly((rows_n, cols));
    let palette = [
        RGBColor(170, 170, 170),
        RGBColor(110, 110, 110),
        RGBColor(90, 130, 200),
        RGBColor(40, 80, 170),
        RGBColor(60, 160, 90),
        RGBColor(30, 120, 60),
        RGBColor(200, 120, 50),
    ];
    for ((fam, temp), area) in panels.iter().zip(areas.iter()) {
        let vals: Vec<(usize, &String, f64)> = variants
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                sums.iter()
                    .find(|s| &s.variant == v && s.family == *fam && s.temperature == *temp)
                    .and_then(|s| s.tok_s_aggregate)
                    .map(|x| (i, v, x))
            })
            .collect();
        let ymax = vals.iter().map(|v| v.2).fold(1.0f64, f64::max) * 1.2;
        let n = vals.len().max(1);
        let mut chart = ChartBuilder::on(area)
            .caption(format!("{fam} tasks, T = {temp}"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..n as f64, 0.0..ymax)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .disable_x_axis()
            .y_desc("tokens/s (aggregate)")
            .draw()?;
        for (k, (i, v, x)) in vals.iter().enumerate() {
            let color = palette[*i % palette.len()];
            let (l, r) = (k as f64 + 0.1, k as f64 + 0.9);
            chart.draw_series(std::iter::once(Rectangle::new(
                [(l, 0.0), (r, *x)],
                color.filled(),
            )))?;
            let short = v.split(' ').next().unwrap_or(v);
            chart.draw_series(std::iter::once(Text::new(
                format!("{short} {x:.0}"),
                (k as f64 + 0.12, x + ymax * 0.06),
                ("sans-serif", 13),
            )))?;
        }
    }
    root.present()?;
    Ok(())
}
