//! Ablation of the ZapFormat §4.5 transform pipeline on real grammars:
//! MaskBench JSON Schemas compiled by `zapspec_jsonschema`, each
//! simplified under several `SimplifyConfig`s, and the parsing work of the
//! reference Earley recognizer (items, time) measured on the schemas' valid
//! test instances. The "none" row is the baseline, measured in the same run.
//!
//! ```text
//! cargo run -p examples --release --bin grammar_ablation -- --stride 10 --json out.json
//! ```

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use zapspec_grammar::{simplify, Grammar, Recognizer, SimplifyConfig};
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions};

#[derive(Parser, Debug)]
#[command(about = "Ablate the grammar transforms on MaskBench schemas, measuring Earley work")]
struct Args {
    /// Directory of MaskBench JSON files.
    #[arg(long, default_value = "../shared/data/maskbench")]
    data: PathBuf,
    /// Use every n-th schema (sorted by file name).
    #[arg(long, default_value_t = 10)]
    stride: usize,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

struct Variant {
    name: &'static str,
    cfg: SimplifyConfig,
}

fn variants() -> Vec<Variant> {
    let d = SimplifyConfig::default();
    vec![
        Variant {
            name: "none (baseline)",
            cfg: SimplifyConfig::none(),
        },
        Variant {
            name: "useless",
            cfg: SimplifyConfig {
                useless: true,
                ..SimplifyConfig::none()
            },
        },
        Variant {
            name: "useless+nullable",
            cfg: SimplifyConfig {
                useless: true,
                nullable: true,
                ..SimplifyConfig::none()
            },
        },
        Variant {
            name: "all but nullable",
            cfg: SimplifyConfig {
                nullable: false,
                ..d.clone()
            },
        },
        Variant {
            name: "all (default)",
            cfg: d,
        },
    ]
}

#[derive(Default, Clone)]
struct Totals {
    rules: usize,
    symbols: usize,
    items: usize,
    simplify_ms: f64,
    parse_ms: f64,
    mismatches: usize,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&args.data)
        .with_context(|| format!("reading {} (MaskBench data)", args.data.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    let vs = variants();
    let mut totals = vec![Totals::default(); vs.len()];
    let (mut schemas, mut instances, mut skipped) = (0usize, 0usize, 0usize);
    let picked: Vec<&PathBuf> = files.iter().step_by(args.stride.max(1)).collect();
    let bar = indicatif::ProgressBar::new(picked.len() as u64);
    for path in picked {
        bar.inc(1);
        let doc: serde_json::Value = match std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
        {
            Some(d) => d,
            None => {
                skipped += 1;
                continue;
            }
        };
        let Ok(g) = compile_json_schema(&doc["schema"], &JsonSchemaOptions::default()) else {
            skipped += 1;
            continue;
        };
        let valid: Vec<String> = doc["tests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["valid"] == serde_json::Value::Bool(true))
            .filter_map(|t| serde_json::to_string(&t["data"]).ok())
            .collect();
        // all variants must succeed for the schema to count
        let mut results: Vec<(Grammar, f64)> = Vec::new();
        for v in &vs {
            let t = Instant::now();
            match simplify(&g, &v.cfg) {
                Ok(s) => results.push((s.grammar, t.elapsed().as_secs_f64() * 1e3)),
                Err(_) => break,
            }
        }
        if results.len() != vs.len() {
            skipped += 1;
            continue;
        }
        schemas += 1;
        instances += valid.len();
        let baseline = Recognizer::new(&g)?;
        for (k, (h, ms)) in results.iter().enumerate() {
            let r = Recognizer::new(h)?;
            let st = h.stats();
            totals[k].rules += st.rules;
            totals[k].symbols += st.symbols;
            totals[k].simplify_ms += ms;
            for inst in &valid {
                let t = Instant::now();
                let ok = r.recognizes(inst.as_bytes());
                totals[k].parse_ms += t.elapsed().as_secs_f64() * 1e3;
                totals[k].items += r.count_items(inst.as_bytes());
                if ok != baseline.recognizes(inst.as_bytes()) {
                    totals[k].mismatches += 1;
                }
            }
        }
    }
    bar.finish_and_clear();
    println!("{schemas} schemas ({skipped} skipped: unreadable, not compiled, or empty language), {instances} valid instances\n");
    println!("| passes | rules | symbols | Earley items | items vs baseline | simplify ms | recognize ms | membership mismatches |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let base_items = totals[0].items.max(1) as f64;
    let mut rows = Vec::new();
    for (v, t) in vs.iter().zip(&totals) {
        println!(
            "| {} | {} | {} | {} | {:+.1}% | {:.0} | {:.0} | {} |",
            v.name,
            t.rules,
            t.symbols,
            t.items,
            (t.items as f64 / base_items - 1.0) * 100.0,
            t.simplify_ms,
            t.parse_ms,
            t.mismatches
        );
        rows.push(serde_json::json!({
            "passes": v.name, "rules": t.rules, "symbols": t.symbols, "items": t.items,
            "simplify_ms": t.simplify_ms, "recognize_ms": t.parse_ms, "mismatches": t.mismatches,
        }));
    }
    if let Some(p) = &args.json {
        let doc = serde_json::json!({"stride": args.stride, "schemas": schemas, "instances": instances, "rows": rows});
        std::fs::write(p, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}
