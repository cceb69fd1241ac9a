//! The JSON Schema compiler alone (schema → grammar IR, the first step of
//! the facade's `zapspec::compile_json_schema`), timed per schema file on
//! the MaskBench sets: the distribution, and the slowest files with their
//! grammar sizes. For profiling (`perf record`) the compiler without the
//! engine, and for its share of time-to-first-mask.
//!
//! ```text
//! cargo run -p examples --profile release-fast --bin schema_compile -- \
//!     ../shared/data/maskbench-hard --repeat 3 --slowest 20
//! ```

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use examples::maskstats::{fmt_us, Summary};
use serde_json::Value;

#[derive(Parser, Debug)]
#[command(about = "Time the JSON Schema compiler alone on MaskBench schema files")]
struct Args {
    /// MaskBench directories (`*.json` files with a `schema`).
    dirs: Vec<PathBuf>,
    /// Take every N-th file of each directory (sorted by name).
    #[arg(long, default_value_t = 1)]
    every: usize,
    /// Compile each schema this many times; the minimum is reported.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// List this many of the slowest files.
    #[arg(long, default_value_t = 10)]
    slowest: usize,
    /// Only files whose name contains this.
    #[arg(long)]
    only: Option<String>,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let opts = zapspec::json_schema_options();
    for dir in &a.dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .filter(|p| {
                a.only
                    .as_ref()
                    .is_none_or(|o| p.to_string_lossy().contains(o.as_str()))
            })
            .collect();
        files.sort();
        let mut rows: Vec<(f64, String, usize, bool)> = Vec::new();
        for f in files.iter().step_by(a.every.max(1)) {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(f)?)?;
            let schema = &v["schema"];
            let mut best = f64::INFINITY;
            let mut size = 0;
            let mut ok = false;
            for _ in 0..a.repeat.max(1) {
                let t = Instant::now();
                let r = zapspec_jsonschema::compile_json_schema(schema, &opts);
                best = best.min(t.elapsed().as_secs_f64() * 1e6);
                if let Ok(g) = &r {
                    size = g.rules.len();
                }
                ok = r.is_ok();
            }
            let name = f
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            rows.push((best, name, size, ok));
        }
        let times: Vec<f64> = rows.iter().filter(|r| r.3).map(|r| r.0).collect();
        let s = Summary::of(&times);
        println!(
            "{}: {} compiled of {}; p50 {} p90 {} p99 {} p99.9 {} max {} mean {}; total {}",
            dir.display(),
            times.len(),
            rows.len(),
            fmt_us(s.p50),
            fmt_us(s.p90),
            fmt_us(s.p99),
            fmt_us(s.p999),
            fmt_us(s.max),
            fmt_us(s.mean),
            fmt_us(times.iter().sum())
        );
        rows.sort_by(|x, y| y.0.total_cmp(&x.0));
        for (t, name, size, ok) in rows.iter().take(a.slowest) {
            println!(
                "  {name}: {} ({} rules{})",
                fmt_us(*t),
                size,
                if *ok { "" } else { ", refused" }
            );
        }
    }
    Ok(())
}
