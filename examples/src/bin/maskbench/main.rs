//! MaskBench harness: token-mask latency and correctness of grammar engines
//! on real JSON Schemas (JSONSchemaBench's MaskBench protocol; ZapFormat
//! §5 evaluates throughput and the pruning/cache ablation, Tables 1–4).
//!
//! ```text
//! cargo run --release -p examples --bin maskbench -- ../shared/data/maskbench \
//!     --engine all --every 5 [--limit N] [--timeout-ms 20000] \
//!     [--ablation full,no-prune,no-prune-no-cache] [--out results/maskbench]
//! ```
//!
//! Per schema: compile + first mask = TTFM; then for every test instance
//! (compact JSON, keys in the grammar's canonical order — see
//! [`run::InstanceOrder`]) tokenized with o200k, before each token the mask
//! (TBM), a check that the token is allowed, and advance; at the end the
//! instance is accepted iff EOS is in the mask. Counted: passing schemas,
//! compile errors by reason, validation errors (valid instance refused),
//! invalidation errors (invalid instance accepted whole), timeouts, panics.
//! Single-threaded.
//!
//! Engines (`--engine`, comma-separated; `all` = zapspec,llguidance,kbnf):
//! `zapspec[:variant]` (ours: `zapspec_jsonschema` + `earley`),
//! `llguidance` (its own JSON Schema compiler), `kbnf`/`kbnf-nocache` (our
//! grammar converted to KBNF), `kbnf-json`/`kbnf-json-nocache` (one generic
//! JSON grammar, schema-agnostic). Each engine runs in its own child
//! process (this binary re-executed with `--child`), so its peak memory
//! (VmHWM) is its own; a child that crashes or hangs past the hard limit is
//! restarted after the offending schema, which is counted as a crash. A
//! counting global allocator (module `heap`, this binary only) records each
//! schema's live heap before the compile, after compile + first mask and
//! after the grammar is dropped, and the peak between; the summary's "Live
//! heap" table gives the bytes per compiled grammar of each engine.
//!
//! Limits: the per-schema time limit is checked between masks, so one
//! compile or mask that runs long (kbnf compiles of large grammars) is only
//! stopped by the child's hard limit (2 × timeout + 30 s); kbnf's EOS is a
//! sentinel character (see `examples::kbnf_ir`); `--dump-grammar` prints
//! our grammar and its KBNF form for inspection.
//!
//! Experiment knobs (environment, inherited by the children):
//! `MASKBENCH_MAX_REGEX_REPEAT=N` sets the schema compiler's
//! `max_regex_repeat` (default `EARLEY_MAX_REGEX_REPEAT`, 2^20; string
//! lengths up to `N` as one counted regex, above
//! as blocks of such terminals, or with `MASKBENCH_STRING_BLOCKS=0` as a
//! grammar of one-character units); `MASKBENCH_CACHE_MIB=N` sets the
//! index's `max_cache_bytes`; `MASKBENCH_STATE_CACHE=N` the engine's
//! `state_cache_capacity`.

mod adapter;
mod heap;
mod kbnf_engine;
mod llg;
mod report;
mod run;
mod zapspec;

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use serde::{Deserialize, Serialize};
use zapspec_vocab::{TiktokenBpe, TokenVocab};

use adapter::Adapter;
use report::{
    markdown_ablation, markdown_heap, markdown_reasons, markdown_table, summarize, EngineSummary,
};
use run::{InstanceOrder, SchemaResult, Status};

/// Live heap bytes and their peak, per schema (`heap`; this binary only).
#[global_allocator]
static ALLOC: heap::Counting = heap::Counting;

#[derive(Parser, Debug, Clone)]
#[command(
    about = "MaskBench: token-mask latency and correctness of grammar engines on JSON Schemas"
)]
struct Args {
    /// Directory of MaskBench schema files.
    dir: PathBuf,
    /// Engines, comma-separated: all, `zapspec[:variant]`, llguidance, kbnf,
    /// kbnf-nocache, kbnf-json, kbnf-json-nocache.
    #[arg(long, default_value = "all")]
    engine: String,
    /// Take every N-th file (sorted by name).
    #[arg(long, default_value_t = 1)]
    every: usize,
    /// At most this many files (after --every).
    #[arg(long)]
    limit: Option<usize>,
    /// Per-schema time limit (checked between masks), ms.
    #[arg(long, default_value_t = 20_000)]
    timeout_ms: u64,
    /// Ablation variants of our engine, comma-separated (full, no-prune,
    /// no-cache, no-prune-no-cache, no-state-cache, no-ci-cache, no-reject,
    /// no-fuse, no-families, baseline); each runs as engine `zapspec:<variant>`.
    #[arg(long)]
    ablation: Option<String>,
    /// Output directory (per-schema JSONL, summaries, Markdown).
    #[arg(long, default_value = "results/maskbench")]
    out: PathBuf,
    /// `canonical` (keys in the grammars' order, default) or `file`.
    #[arg(long, default_value = "canonical")]
    order: String,
    /// zapspec: a fresh vocabulary index per schema (cold mask cache).
    #[arg(long)]
    cold_index: bool,
    /// Run engines in this process, one after the other (no memory figures).
    #[arg(long)]
    in_process: bool,
    /// Print our grammar (GBNF) and its KBNF conversion for each file, and exit.
    #[arg(long)]
    dump_grammar: bool,
    /// Internal: run one engine and write `<out>/<engine>.schemas.jsonl`.
    #[arg(long, hide = true)]
    child: bool,
    /// Internal: first schema index for a (re)started child.
    #[arg(long, hide = true, default_value_t = 0)]
    start: usize,
}

/// One line of a child's JSONL output.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    Start {
        baseline_rss_kib: u64,
        /// Building the adapter (the engine's per-vocabulary work), ms.
        #[serde(default)]
        engine_build_ms: f64,
        /// Live heap bytes then (counting allocator).
        #[serde(default)]
        baseline_heap: u64,
    },
    Schema {
        vmhwm_kib: u64,
        /// VmRSS after the schema, KiB (with the live heap of
        /// `result.heap`: resident memory the heap no longer uses shows
        /// up as the gap).
        #[serde(default)]
        rss_kib: u64,
        result: Box<SchemaResult>,
    },
    End {
        vmhwm_kib: u64,
    },
}

fn proc_status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn engine_list(a: &Args) -> Result<Vec<String>> {
    let mut v = Vec::new();
    for e in a.engine.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        if e == "all" {
            v.extend(["zapspec", "llguidance", "kbnf"].map(String::from));
        } else if e != "none" {
            v.push(e.to_string());
        }
    }
    if let Some(ab) = &a.ablation {
        for x in ab.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            v.push(format!("zapspec:{x}"));
        }
    }
    for e in &v {
        check_engine_name(e)?;
    }
    Ok(v)
}

fn check_engine_name(e: &str) -> Result<()> {
    match e {
        "zapspec" | "llguidance" | "kbnf" | "kbnf-nocache" | "kbnf-json" | "kbnf-json-nocache" => {
            Ok(())
        }
        _ if e
            .strip_prefix("zapspec:")
            .is_some_and(|v| zapspec::variant_config(v).is_some()) =>
        {
            Ok(())
        }
        _ => bail!(
            "unknown engine `{e}` (variants: {})",
            zapspec::VARIANTS.join(", ")
        ),
    }
}

/// Builds an engine adapter by name (once per process).
pub fn make_adapter(
    name: &str,
    vocab: &Arc<TokenVocab>,
    cold_index: bool,
) -> Result<Box<dyn Adapter>> {
    Ok(match name {
        "llguidance" => Box::new(llg::LlgAdapter::new(vocab)?),
        "kbnf" => Box::new(kbnf_engine::KbnfAdapter::new(vocab, true, false)?),
        "kbnf-nocache" => Box::new(kbnf_engine::KbnfAdapter::new(vocab, false, false)?),
        "kbnf-json" => Box::new(kbnf_engine::KbnfAdapter::new(vocab, true, true)?),
        "kbnf-json-nocache" => Box::new(kbnf_engine::KbnfAdapter::new(vocab, false, true)?),
        _ => {
            let variant = name.strip_prefix("zapspec:").unwrap_or("full");
            let cfg = zapspec::variant_config(variant)
                .with_context(|| format!("unknown engine {name}"))?;
            Box::new(zapspec::ZapAdapter::new(
                vocab.clone(),
                cfg,
                zapspec::variant_index(variant),
                cold_index,
            ))
        }
    })
}

fn order_of(a: &Args) -> Result<InstanceOrder> {
    match a.order.as_str() {
        "canonical" => Ok(InstanceOrder::Canonical),
        "file" => Ok(InstanceOrder::File),
        o => bail!("--order must be canonical or file, not {o}"),
    }
}

fn safe_name(e: &str) -> String {
    e.replace(':', "_")
}

fn jsonl_path(out: &Path, engine: &str) -> PathBuf {
    out.join(format!("{}.schemas.jsonl", safe_name(engine)))
}

fn progress(n: usize, engine: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::with_draw_target(
        Some(n as u64),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{prefix:>18} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
    ) {
        pb.set_style(style);
    }
    pb.set_prefix(engine.to_string());
    pb
}

/// Runs one engine over `files[start..]`, calling `sink` per schema.
fn run_engine(
    engine: &str,
    adapter: &mut dyn Adapter,
    vocab: &Arc<TokenVocab>,
    files: &[PathBuf],
    start: usize,
    a: &Args,
    mut sink: impl FnMut(SchemaResult) -> Result<()>,
) -> Result<()> {
    let order = order_of(a)?;
    let timeout = Duration::from_millis(a.timeout_ms);
    let pb = progress(files.len(), engine);
    pb.set_position(start as u64);
    let (mut pass, mut done) = (0usize, 0usize);
    for (i, f) in files.iter().enumerate().skip(start) {
        let r = match run::load_case(f, vocab, order) {
            Ok(case) => run::run_schema(adapter, &case, i, timeout),
            Err(e) => SchemaResult {
                index: i,
                file: f.display().to_string(),
                status: Status::BadFile,
                error: Some(e),
                ..Default::default()
            },
        };
        done += 1;
        pass += (r.status == Status::Pass) as usize;
        pb.set_message(format!("pass {pass}/{done}"));
        pb.inc(1);
        sink(r)?;
    }
    pb.finish();
    Ok(())
}

fn load_vocab() -> Result<Arc<TokenVocab>> {
    Ok(Arc::new(
        TokenVocab::tiktoken(TiktokenBpe::O200k).context("loading o200k")?,
    ))
}

fn child_main(a: &Args) -> Result<()> {
    let files = run::list_files(&a.dir, a.every, a.limit)?;
    let vocab = load_vocab()?;
    let engine = a.engine.clone();
    check_engine_name(&engine)?;
    std::fs::create_dir_all(&a.out)?;
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(jsonl_path(&a.out, &engine))?;
    let t_build = Instant::now();
    let mut adapter = make_adapter(&engine, &vocab, a.cold_index)?;
    let engine_build_ms = t_build.elapsed().as_secs_f64() * 1e3;
    writeln!(
        out,
        "{}",
        serde_json::to_string(&Line::Start {
            baseline_rss_kib: proc_status_kib("VmRSS:"),
            engine_build_ms,
            baseline_heap: heap::live(),
        })?
    )?;
    run_engine(&engine, adapter.as_mut(), &vocab, &files, a.start, a, |r| {
        let line = Line::Schema {
            vmhwm_kib: proc_status_kib("VmHWM:"),
            rss_kib: proc_status_kib("VmRSS:"),
            result: Box::new(r),
        };
        writeln!(out, "{}", serde_json::to_string(&line)?)?;
        out.flush()?;
        Ok(())
    })?;
    writeln!(
        out,
        "{}",
        serde_json::to_string(&Line::End {
            vmhwm_kib: proc_status_kib("VmHWM:")
        })?
    )?;
    Ok(())
}

/// Parent side of one engine: spawn children until every schema has a
/// result; a child that dies or makes no progress for `hard` is killed and
/// the schema it was on recorded as a crash.
fn supervise(engine: &str, a: &Args, n_files: usize) -> Result<(EngineSummary, Vec<SchemaResult>)> {
    let path = jsonl_path(&a.out, engine);
    File::create(&path)?; // truncate
    let hard = Duration::from_millis(a.timeout_ms * 2 + 30_000);
    let exe = std::env::current_exe()?;
    let mut results: Vec<SchemaResult> = Vec::new();
    let (mut vmhwm, mut baseline, mut restarts) = (0u64, 0u64, 0usize);
    let mut build_ms = 0f64;
    let mut baseline_heap = 0u64;
    let mut next = 0usize;
    let mut offset = 0u64;
    let t_start = Instant::now();
    while next < n_files {
        let mut cmd = Command::new(&exe);
        cmd.arg(&a.dir)
            .args([
                "--engine",
                engine,
                "--every",
                &a.every.to_string(),
                "--timeout-ms",
                &a.timeout_ms.to_string(),
            ])
            .args(["--order", &a.order, "--start", &next.to_string(), "--child"])
            .arg("--out")
            .arg(&a.out)
            .stdin(Stdio::null());
        if let Some(l) = a.limit {
            cmd.args(["--limit", &l.to_string()]);
        }
        if a.cold_index {
            cmd.arg("--cold-index");
        }
        let mut child = cmd.spawn().context("spawning child")?;
        let mut last = Instant::now();
        let mut ended = false;
        loop {
            std::thread::sleep(Duration::from_millis(100));
            // Read new complete lines.
            let mut f = File::open(&path)?;
            f.seek(SeekFrom::Start(offset))?;
            let mut rd = BufReader::new(f);
            let mut buf = String::new();
            loop {
                buf.clear();
                let n = rd.read_line(&mut buf)?;
                if n == 0 || !buf.ends_with('\n') {
                    break;
                }
                offset += n as u64;
                match serde_json::from_str::<Line>(&buf) {
                    Ok(Line::Start {
                        baseline_rss_kib,
                        engine_build_ms,
                        baseline_heap: h,
                    }) => {
                        baseline = baseline.max(baseline_rss_kib);
                        build_ms = build_ms.max(engine_build_ms);
                        baseline_heap = baseline_heap.max(h);
                    }
                    Ok(Line::Schema {
                        vmhwm_kib, result, ..
                    }) => {
                        vmhwm = vmhwm.max(vmhwm_kib);
                        next = result.index + 1;
                        results.push(*result);
                        last = Instant::now();
                    }
                    Ok(Line::End { vmhwm_kib }) => {
                        vmhwm = vmhwm.max(vmhwm_kib);
                        ended = true;
                    }
                    Err(e) => eprintln!("maskbench: bad line in {}: {e}", path.display()),
                }
            }
            if let Some(status) = child.try_wait()? {
                if ended || next >= n_files {
                    break;
                }
                eprintln!("maskbench: {engine} child exited ({status}) on schema #{next}; restarting after it");
                results.push(SchemaResult {
                    index: next,
                    status: Status::Crash,
                    error: Some(format!("child exited: {status}")),
                    ..Default::default()
                });
                next += 1;
                restarts += 1;
                break;
            }
            if last.elapsed() > hard {
                child.kill().ok();
                child.wait().ok();
                eprintln!("maskbench: {engine} made no progress for {hard:?} on schema #{next}; killed, restarting after it");
                results.push(SchemaResult {
                    index: next,
                    status: Status::Crash,
                    error: Some(format!("hard timeout {hard:?}")),
                    ..Default::default()
                });
                next += 1;
                restarts += 1;
                break;
            }
        }
    }
    let mut s = summarize(engine, &results);
    s.vmhwm_kib = vmhwm;
    s.baseline_rss_kib = baseline;
    s.baseline_heap_bytes = baseline_heap;
    s.engine_build_ms = build_ms;
    s.child_restarts = restarts;
    s.wall_s = t_start.elapsed().as_secs_f64();
    Ok((s, results))
}

fn print_reports(a: &Args, sums: &[EngineSummary], per_engine: &[Vec<SchemaResult>]) -> Result<()> {
    std::fs::create_dir_all(&a.out)?;
    let mut all = File::create(a.out.join("summary.jsonl"))?;
    for s in sums {
        let line = serde_json::to_string(s)?;
        println!("{line}");
        writeln!(all, "{line}")?;
        std::fs::write(
            a.out.join(format!("{}.summary.json", safe_name(&s.engine))),
            serde_json::to_string_pretty(s)?,
        )?;
    }
    let mut md = format!(
        "## MaskBench ({} schema files from `{}`, every {}, o200k, timeout {} ms)\n\n",
        sums.first().map_or(0, |s| s.schemas),
        a.dir.display(),
        a.every,
        a.timeout_ms
    );
    md.push_str(&markdown_table(sums));
    if sums.len() > 1 {
        let common = report::common_set(sums, per_engine);
        let mut f = File::create(a.out.join("common.summary.jsonl"))?;
        for s in &common.sums {
            writeln!(f, "{}", serde_json::to_string(s)?)?;
        }
        md.push_str(&report::markdown_common(&common));
    }
    md.push_str(&markdown_heap(sums));
    md.push_str(&markdown_reasons(sums, 12));
    let abl: Vec<EngineSummary> = sums
        .iter()
        .filter(|s| s.engine == "zapspec" || s.engine.starts_with("zapspec:"))
        .cloned()
        .collect();
    if abl.len() > 1 {
        md.push_str("\n### Ablation (our engine)\n\n");
        md.push_str(&markdown_ablation(&abl));
    }
    println!("\n{md}");
    std::fs::write(a.out.join("summary.md"), md)?;
    Ok(())
}

fn main() -> Result<()> {
    let a = Args::parse();
    // Panics are caught per schema and counted; keep them to one line.
    std::panic::set_hook(Box::new(|info| {
        let loc = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("maskbench: panic at {loc}");
    }));
    if a.child {
        return child_main(&a);
    }
    if a.dump_grammar {
        for f in run::list_files(&a.dir, a.every, a.limit)? {
            let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f)?)?;
            println!("## {}", f.display());
            match zapspec::schema_grammar(&v["schema"]) {
                Ok(g) => {
                    println!("### GBNF\n{g}");
                    let k = zapspec::schema_grammar_with(&v["schema"], false);
                    match k.map(|k| examples::kbnf_ir::to_kbnf(&k, true)) {
                        Ok(Ok(k)) => println!("### KBNF\n{k}"),
                        Ok(Err(e)) => println!("### KBNF conversion failed: {e}"),
                        Err(e) => println!("### KBNF grammar failed: {}", e.message),
                    }
                }
                Err(e) => println!("compile error: {}", e.message),
            }
        }
        return Ok(());
    }
    let engines = engine_list(&a)?;
    let files = run::list_files(&a.dir, a.every, a.limit)
        .with_context(|| format!("listing {}", a.dir.display()))?;
    if files.is_empty() {
        bail!("no *.json files in {}", a.dir.display());
    }
    eprintln!(
        "maskbench: {} schema files, engines: {}",
        files.len(),
        engines.join(", ")
    );
    std::fs::create_dir_all(&a.out)?;
    let mut sums = Vec::new();
    let mut per_engine = Vec::new();
    if a.in_process {
        let vocab = load_vocab()?;
        for e in &engines {
            let t = Instant::now();
            let mut results = Vec::new();
            let mut adapter = make_adapter(e, &vocab, a.cold_index)?;
            run_engine(e, adapter.as_mut(), &vocab, &files, 0, &a, |r| {
                results.push(r);
                Ok(())
            })?;
            let mut s = summarize(e, &results);
            s.wall_s = t.elapsed().as_secs_f64();
            sums.push(s);
            per_engine.push(results);
        }
    } else {
        for e in &engines {
            let (s, results) = supervise(e, &a, files.len())?;
            sums.push(s);
            per_engine.push(results);
        }
    }
    print_reports(&a, &sums, &per_engine)
}

#[cfg(test)]
mod tests;
