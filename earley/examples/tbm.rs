//! Token-by-token mask timing (TBM) and time to first mask (TTFM) of the
//! engine on MaskBench JSON Schemas over o200k, for each ablation of
//! `EngineConfig` (ZapFormat Table 3), measured in the same run.
//!
//! ```text
//! cargo run -p zapspec-earley --profile release-fast --example tbm -- [N_SCHEMAS] [SEED] [CONFIGS]
//! ```
//! `CONFIGS` is a comma list of
//! `full,noslice,noshare,plainindex,nopruning,nocache,nostate,nofuse,baseline`
//! (`noslice` / `noshare` / `plainindex`: the full engine over an index
//! without vocabulary slices / without residual sharing / without both)
//! (default `full,nopruning,nostate`). Schemas are a seeded sample of
//! `../shared/data/maskbench` (relative to the workspace root); each valid
//! test instance is written in the grammar's key order, tokenized with
//! o200k, and fed token by token: every step times `fill_mask`, checks
//! the next token is allowed, and advances. Each configuration gets its own
//! `VocabIndex` (cold context-independent caches), built outside the timers.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use zapspec_core::{Constraint, TokenSet, Vocabulary};
use zapspec_earley::{Engine, EngineConfig, IndexConfig, VocabIndex};
use zapspec_grammar::reference::Recognizer;
use zapspec_jsonschema::{canonical_instances, compile_json_schema, JsonSchemaOptions};
use zapspec_vocab::TiktokenBpe;
use zapspec_vocab::TokenVocab;

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

fn config(name: &str) -> EngineConfig {
    let d = EngineConfig::default();
    match name {
        "full" | "noslice" | "noshare" | "plainindex" => d,
        "nopruning" => EngineConfig {
            pruning: false,
            ..d
        },
        "nocache" => EngineConfig {
            ci_cache: false,
            ..d
        },
        "nostate" => EngineConfig {
            state_cache: false,
            ..d
        },
        "nofuse" => EngineConfig {
            fuse_terminals: false,
            ..d
        },
        "nopruning_nostate" => EngineConfig {
            pruning: false,
            state_cache: false,
            ..d
        },
        "baseline" => EngineConfig::baseline(),
        other => {
            eprintln!("unknown config {other}");
            std::process::exit(2)
        }
    }
}

/// TBM and TTFM of the engine per `EngineConfig` ablation on a seeded
/// sample of MaskBench schemas over o200k.
#[derive(Parser, Debug)]
struct Cli {
    /// Number of schemas in the sample.
    #[arg(default_value_t = 50)]
    n_schemas: usize,
    /// Seed of the sample.
    #[arg(default_value_t = 1)]
    seed: u64,
    /// Comma list of configurations (full, noslice, noshare, plainindex,
    /// nopruning, nocache, nostate, nofuse, baseline).
    #[arg(default_value = "full,nopruning,nostate")]
    configs: String,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let (n, seed) = (cli.n_schemas, cli.seed);
    let configs: Vec<String> = cli.configs.split(',').map(String::from).collect();
    let dir = std::env::var_os("MASKBENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/maskbench")
        });
    let Ok(rd) = std::fs::read_dir(&dir) else {
        println!("maskbench data not found at {}; skipping", dir.display());
        return Ok(());
    };
    let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    files.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    let vocab = Arc::new(TokenVocab::tiktoken(TiktokenBpe::O200k)?);
    let opts = JsonSchemaOptions::default();
    // Load schemas and token sequences once.
    let mut work = Vec::new();
    for f in files.iter() {
        if work.len() >= n {
            break;
        }
        let text = std::fs::read_to_string(f)?;
        let v: serde_json::Value = serde_json::from_str(&text)?;
        let schema = &v["schema"];
        let t0 = Instant::now();
        let Ok(g) = compile_json_schema(schema, &opts) else {
            continue;
        };
        let schema_us = t0.elapsed().as_secs_f64() * 1e6;
        let rec = Recognizer::new(&g).ok();
        let mut seqs = Vec::new();
        for t in v["tests"].as_array().into_iter().flatten() {
            if t["valid"].as_bool() != Some(true) {
                continue;
            }
            let Ok(c) = canonical_instances(schema, &t["data"], &opts) else {
                continue;
            };
            // Several key orders can be canonical (allOf/oneOf branches):
            // take the one the grammar accepts, asking the independent
            // reference recognizer (not the engine under test).
            let texts: Vec<String> = c
                .iter()
                .map(serde_json::to_string)
                .collect::<Result<_, _>>()?;
            let s = texts
                .iter()
                .find(|s| rec.as_ref().is_some_and(|r| r.recognizes(s.as_bytes())))
                .unwrap_or(&texts[0]);
            seqs.push(vocab.encode(s)?);
        }
        if seqs.is_empty() {
            continue;
        }
        work.push((
            f.file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            g,
            seqs,
            schema_us,
        ));
    }
    println!(
        "{} schemas, {} instances, {} tokens",
        work.len(),
        work.iter().map(|w| w.2.len()).sum::<usize>(),
        work.iter()
            .flat_map(|w| w.2.iter())
            .map(|s| s.len())
            .sum::<usize>()
    );
    println!();
    println!("| config | TBM p50 µs | p90 | p99 | max | mean | TTFM p50 ms | p90 | max | compile errors | rejected valid tokens | EOS errors | state-cache hits | peak items (mean) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut json = Vec::new();
    for cname in &configs {
        let cfg = config(cname);
        let icfg = match cname.as_str() {
            "noslice" => IndexConfig {
                slices: Vec::new(),
                ..IndexConfig::default()
            },
            "noshare" => IndexConfig {
                share_residuals: false,
                ..IndexConfig::default()
            },
            "plainindex" => IndexConfig::plain(),
            _ => IndexConfig::default(),
        };
        let index = VocabIndex::with_config(vocab.clone(), icfg)?;
        let engine = Engine::with_index(index);
        let mut tbm = Vec::new();
        let mut ttfm = Vec::new();
        let mut errs = 0;
        let mut bad = 0;
        let mut eos_bad = 0;
        let mut hits = 0u64;
        let mut masks = 0u64;
        let mut peak = Vec::new();
        let mut mask = TokenSet::new(vocab.len());
        let mut slow: Vec<(f64, String)> = Vec::new();
        for (name, g, seqs, _) in &work {
            let t0 = Instant::now();
            let compiled = match engine.compile(g, cfg) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("{name}: {e}");
                    errs += 1;
                    continue;
                }
            };
            if std::env::var_os("DUMP_GRAMMAR").is_some() {
                eprintln!(
                    "{name}:\n{g}\n--- fused:\n{}",
                    compiled
                        .fused_grammar()
                        .map(|f| f.to_string())
                        .unwrap_or_default()
                );
            }
            let mut m = compiled.matcher();
            m.fill_mask(&mut mask);
            ttfm.push(t0.elapsed().as_secs_f64() * 1e3);
            for seq in seqs {
                let mut m = compiled.matcher();
                let mut ok = true;
                for &t in seq {
                    let t1 = Instant::now();
                    m.fill_mask(&mut mask);
                    let us = t1.elapsed().as_secs_f64() * 1e6;
                    tbm.push(us);
                    if us > 2000.0 {
                        let (sets, items) = m.chart_size();
                        slow.push((
                            us,
                            format!(
                                "{name} step {} next {:?} chart {sets}/{items}",
                                m.num_tokens(),
                                String::from_utf8_lossy(vocab.token_bytes(t))
                            ),
                        ));
                    }
                    if !mask.contains(t) || m.advance(t).is_err() {
                        bad += 1;
                        ok = false;
                        eprintln!(
                            "{name}: token {t} {:?} rejected after {} tokens",
                            String::from_utf8_lossy(vocab.token_bytes(t)),
                            m.num_tokens()
                        );
                        break;
                    }
                }
                if ok {
                    let t1 = Instant::now();
                    m.fill_mask(&mut mask);
                    tbm.push(t1.elapsed().as_secs_f64() * 1e6);
                    if !mask.contains(vocab.eos()) || !m.is_accepting() {
                        eos_bad += 1;
                    }
                }
                peak.push(m.memory().peak_items as f64);
            }
            let c = compiled.counters();
            hits += c.state_cache_hits;
            masks += c.masks;
        }
        slow.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (us, what) in slow.iter().take(8) {
            eprintln!("slow {cname}: {us:.0} µs at {what}");
        }
        let mean = tbm.iter().sum::<f64>() / tbm.len().max(1) as f64;
        let pk = peak.iter().sum::<f64>() / peak.len().max(1) as f64;
        let (p50, p90, p99, mx) = (
            pct(&mut tbm, 0.5),
            pct(&mut tbm, 0.9),
            pct(&mut tbm, 0.99),
            pct(&mut tbm, 1.0),
        );
        let (t50, t90, tmx) = (
            pct(&mut ttfm, 0.5),
            pct(&mut ttfm, 0.9),
            pct(&mut ttfm, 1.0),
        );
        println!(
            "| {cname} | {p50:.1} | {p90:.1} | {p99:.1} | {mx:.0} | {mean:.1} | {t50:.2} | {t90:.2} | {tmx:.1} | {errs} | {bad} | {eos_bad} | {hits}/{masks} | {pk:.1} |"
        );
        json.push(serde_json::json!({"config": cname, "tbm_us": {"p50": p50, "p90": p90, "p99": p99, "max": mx, "mean": mean},
            "ttfm_ms": {"p50": t50, "p90": t90, "max": tmx}, "compile_errors": errs, "rejected_valid": bad, "eos_errors": eos_bad,
            "state_cache_hits": hits, "masks": masks, "mean_peak_items": pk, "samples": tbm.len()}));
    }
    println!();
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}
