//! Does the Earley engine need `zapspec_grammar::simplify`? The masks of
//! every MaskBench schema's grammar compiled as the JSON Schema compiler
//! writes it (the facade's path, `zapspec::compile_json_schema`) and
//! compiled after `simplify`, compared token set by token set.
//!
//! Per schema: the grammar under the facade's options
//! (`zapspec::json_schema_options`), `simplify` with its default passes,
//! both compiled on one shared o200k engine; then both matchers walk
//! (a) every test instance of the file, valid and invalid, tokenized as
//! MaskBench does (compact JSON, keys in the grammar's canonical order),
//! until the instance ends or a token leaves the mask, and (b)
//! `--walks` random walks of up to `--walk-len` tokens, each step a token
//! drawn uniformly from the (shared) mask, seeded by `--seed` and the
//! schema's index. At every step the two masks must be equal, EOS
//! included. Reported: schemas compared, masks compared, schemas and masks
//! that differ (with the first difference), schemas `simplify` failed on,
//! and the time of each step (schema → grammar, `simplify`, the two
//! compiles), as the cost the facade no longer pays.
//!
//! ```text
//! cargo run -p examples --profile release-fast --bin simplify_masks -- \
//!     ../shared/data/maskbench ../shared/data/maskbench-hard --seed 0 \
//!     --out examples/results/simplify-masks
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use examples::maskstats::{fmt_us, Summary};
use examples::report::{write_json, MarkdownTable};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use zapspec_core::{Constraint, TokenId, TokenSet, Vocabulary};
use zapspec_earley::{EarleyMatcher, Engine, EngineConfig};
use zapspec_grammar::{simplify, SimplifyConfig};
use zapspec_jsonschema::canonical_instances;
use zapspec_vocab::{TiktokenBpe, TokenVocab};

#[derive(Parser, Debug)]
#[command(about = "Masks of the facade's grammar vs the same grammar after simplify")]
struct Args {
    /// MaskBench directories (`*.json` files with `schema` and `tests`).
    dirs: Vec<PathBuf>,
    /// Take every N-th file of each directory (sorted by name).
    #[arg(long, default_value_t = 1)]
    every: usize,
    /// Random walks per schema.
    #[arg(long, default_value_t = 4)]
    walks: usize,
    /// Tokens per random walk, at most.
    #[arg(long, default_value_t = 48)]
    walk_len: usize,
    /// Seed of the random walks.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output directory (`masks.md`, `masks.json`).
    #[arg(long, default_value = "examples/results/simplify-masks")]
    out: PathBuf,
}

/// Per directory.
#[derive(Default)]
struct Tally {
    files: usize,
    compared: usize,
    refused: usize,
    simplify_failed: Vec<String>,
    masks: usize,
    differing_schemas: Vec<String>,
    differing_masks: usize,
    compile_us: Vec<f64>,
    simplify_us: Vec<f64>,
    engine_us: Vec<f64>,
    engine_simplified_us: Vec<f64>,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let vocab = Arc::new(TokenVocab::tiktoken(TiktokenBpe::O200k).context("loading o200k")?);
    let engine = Engine::new(vocab.clone());
    let opts = zapspec::json_schema_options();
    let mut tallies: Vec<(String, Tally)> = Vec::new();
    for dir in &a.dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        let files: Vec<PathBuf> = files.into_iter().step_by(a.every.max(1)).collect();
        let pb = indicatif::ProgressBar::new(files.len() as u64);
        let mut t = Tally::default();
        for (i, f) in files.iter().enumerate() {
            pb.inc(1);
            t.files += 1;
            let seed = a.seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            check_file(f, &engine, &vocab, &opts, &a, seed, &mut t)?;
            pb.set_message(format!("diff {}", t.differing_schemas.len()));
        }
        pb.finish_and_clear();
        tallies.push((dir.display().to_string(), t));
    }
    report(&a, &tallies)
}

fn check_file(
    path: &Path,
    engine: &Engine,
    vocab: &Arc<TokenVocab>,
    opts: &zapspec_jsonschema::JsonSchemaOptions,
    a: &Args,
    seed: u64,
    t: &mut Tally,
) -> Result<()> {
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let schema = &v["schema"];
    let t0 = Instant::now();
    let Ok(g) = zapspec_jsonschema::compile_json_schema(schema, opts) else {
        t.refused += 1;
        return Ok(());
    };
    t.compile_us.push(t0.elapsed().as_secs_f64() * 1e6);
    let t1 = Instant::now();
    let simplified = match simplify(&g, &SimplifyConfig::default()) {
        Ok(s) => s.grammar,
        Err(e) => {
            t.simplify_failed.push(format!("{name}: {e}"));
            return Ok(());
        }
    };
    t.simplify_us.push(t1.elapsed().as_secs_f64() * 1e6);
    let t2 = Instant::now();
    let plain = engine.compile(&g, EngineConfig::default());
    t.engine_us.push(t2.elapsed().as_secs_f64() * 1e6);
    let t3 = Instant::now();
    let simp = engine.compile(&simplified, EngineConfig::default());
    t.engine_simplified_us
        .push(t3.elapsed().as_secs_f64() * 1e6);
    let (plain, simp) = match (plain, simp) {
        (Ok(p), Ok(s)) => (p, s),
        (p, s) => {
            if p.is_ok() != s.is_ok() {
                t.differing_schemas
                    .push(format!("{name}: one compile failed, the other did not"));
            } else {
                t.refused += 1;
            }
            return Ok(());
        }
    };
    t.compared += 1;
    let mut paths: Vec<Vec<TokenId>> = Vec::new();
    if let Some(tests) = v["tests"].as_array() {
        for test in tests {
            let data = &test["data"];
            let text = canonical_instances(schema, data, opts)
                .ok()
                .and_then(|c| c.into_iter().next())
                .unwrap_or_else(|| data.clone());
            if let Ok(toks) = vocab.encode(&serde_json::to_string(&text)?) {
                paths.push(toks);
            }
        }
    }
    let n = vocab.len();
    let (mut ma, mut mb) = (TokenSet::new(n), TokenSet::new(n));
    let mut first_diff: Option<String> = None;
    let mut compare = |x: &mut EarleyMatcher, y: &mut EarleyMatcher, at: &str, t: &mut Tally| {
        x.fill_mask(&mut ma);
        y.fill_mask(&mut mb);
        t.masks += 1;
        if ma != mb {
            t.differing_masks += 1;
            if first_diff.is_none() {
                let only_a = ma.iter().find(|&k| !mb.contains(k));
                let only_b = mb.iter().find(|&k| !ma.contains(k));
                first_diff = Some(format!(
                    "{at}: plain {} tokens, simplified {} (first only-plain {only_a:?}, only-simplified {only_b:?})",
                    ma.count(),
                    mb.count()
                ));
            }
            return None;
        }
        Some(ma.clone())
    };
    for (k, toks) in paths.iter().enumerate() {
        let (mut x, mut y) = (plain.matcher(), simp.matcher());
        for (i, &tok) in toks.iter().enumerate() {
            let Some(mask) = compare(&mut x, &mut y, &format!("instance {k} token {i}"), t) else {
                break;
            };
            if !mask.contains(tok) || x.advance(tok).is_err() || y.advance(tok).is_err() {
                break;
            }
        }
        // the mask after the whole instance (EOS or not)
        compare(&mut x, &mut y, &format!("instance {k} end"), t);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let eos = vocab.eos();
    for w in 0..a.walks {
        let (mut x, mut y) = (plain.matcher(), simp.matcher());
        for i in 0..a.walk_len {
            let Some(mask) = compare(&mut x, &mut y, &format!("walk {w} step {i}"), t) else {
                break;
            };
            let allowed: Vec<TokenId> = mask.iter().filter(|&k| k != eos).collect();
            if allowed.is_empty() {
                break;
            }
            let tok = allowed[rng.random_range(0..allowed.len())];
            if x.advance(tok).is_err() || y.advance(tok).is_err() {
                t.differing_schemas.push(format!(
                    "{name}: walk {w} step {i}: a masked token failed to advance"
                ));
                return Ok(());
            }
        }
    }
    if let Some(d) = first_diff {
        t.differing_schemas.push(format!("{name}: {d}"));
    }
    Ok(())
}

fn dist(xs: &[f64]) -> Value {
    let s = Summary::of(xs);
    json!({"count": s.count, "p50_us": s.p50, "p90_us": s.p90, "p99_us": s.p99, "max_us": s.max, "mean_us": s.mean})
}

fn dist_cell(xs: &[f64]) -> String {
    let s = Summary::of(xs);
    format!(
        "{} / {} / {} / {} / {}",
        fmt_us(s.p50),
        fmt_us(s.p90),
        fmt_us(s.p99),
        fmt_us(s.max),
        fmt_us(s.mean)
    )
}

fn report(a: &Args, tallies: &[(String, Tally)]) -> Result<()> {
    let mut md = String::from("# Masks with and without `simplify`\n\n");
    md.push_str(&format!(
        "{} schema file; masks along every test instance and {} random walks of up to {} tokens per schema (seed {}), o200k, one shared engine. Command: `cargo run -p examples --profile release-fast --bin simplify_masks -- {} --every {} --seed {}`.\n\n",
        if a.every == 1 { "Every".to_string() } else { format!("Every {}-th", a.every) },
        a.walks,
        a.walk_len,
        a.seed,
        a.dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(" "),
        a.every,
        a.seed
    ));
    let mut tab = MarkdownTable::new(&[
        "set",
        "files",
        "compared",
        "refused (both)",
        "simplify failed",
        "masks compared",
        "schemas differing",
        "masks differing",
    ]);
    for (d, t) in tallies {
        tab.row(&[
            format!("`{d}`"),
            t.files.to_string(),
            t.compared.to_string(),
            t.refused.to_string(),
            t.simplify_failed.len().to_string(),
            t.masks.to_string(),
            t.differing_schemas.len().to_string(),
            t.differing_masks.to_string(),
        ]);
    }
    md.push_str(&tab.render());
    md.push_str("\nTime per schema, p50 / p90 / p99 / max / mean (one run; the two compiles on one warm engine, so the second of them finds terminals the first built):\n\n");
    let mut tt = MarkdownTable::new(&[
        "set",
        "schema → grammar",
        "simplify",
        "engine compile",
        "engine compile after simplify",
    ]);
    for (d, t) in tallies {
        tt.row(&[
            format!("`{d}`"),
            dist_cell(&t.compile_us),
            dist_cell(&t.simplify_us),
            dist_cell(&t.engine_us),
            dist_cell(&t.engine_simplified_us),
        ]);
    }
    md.push_str(&tt.render());
    for (d, t) in tallies {
        for (what, list) in [
            ("differing", &t.differing_schemas),
            ("simplify failed", &t.simplify_failed),
        ] {
            if !list.is_empty() {
                md.push_str(&format!("\n`{d}`, {what}:\n\n"));
                for l in list {
                    md.push_str(&format!("- {l}\n"));
                }
            }
        }
    }
    std::fs::create_dir_all(&a.out)?;
    std::fs::write(a.out.join("masks.md"), &md)?;
    let j: Vec<Value> = tallies
        .iter()
        .map(|(d, t)| {
            json!({
                "set": d, "files": t.files, "compared": t.compared, "refused": t.refused,
                "simplify_failed": t.simplify_failed, "masks": t.masks,
                "differing_schemas": t.differing_schemas, "differing_masks": t.differing_masks,
                "schema_to_grammar": dist(&t.compile_us), "simplify": dist(&t.simplify_us),
                "engine_compile": dist(&t.engine_us), "engine_compile_simplified": dist(&t.engine_simplified_us),
            })
        })
        .collect();
    write_json(
        &a.out,
        "masks",
        &json!({"seed": a.seed, "walks": a.walks, "walk_len": a.walk_len, "every": a.every, "sets": j}),
    )?;
    println!("{md}");
    Ok(())
}
