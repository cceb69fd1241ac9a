//! Trains the small byte-level models the project ships, on CPU, on a real
//! offline corpus: the valid JSON instances of MaskBench
//! (`../shared/data/maskbench/`, compact serialisation), split into train
//! and held-out sets by schema file.
//!
//! ```text
//! cargo run --release -p examples --bin train -- --kind causal
//! cargo run --release -p examples --bin train -- --kind diffusion
//! ```
//!
//! Writes `models/<kind>-bytes/{config.json, model.safetensors,
//! manifest.json, loss.png}`. The manifest records the corpus, sizes, steps,
//! wall time, held-out bits per byte and the unigram baseline measured on
//! the same held-out bytes. For the diffusion model the held-out figure is
//! LLaDA's variational bound (an upper bound on the true bits per byte).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use rand::Rng;
use zapspec_backend::train::{TrainConfig, Trainer};
use zapspec_backend::{DiffusionAttention, ModelConfig};
use zapspec_core::TokenId;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq)]
enum Kind {
    Causal,
    Diffusion,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq)]
enum Attn {
    Bidirectional,
    BlockCausal,
}

#[derive(Parser, Debug)]
#[command(
    about = "Train a small byte-level causal or masked-diffusion LM on MaskBench JSON instances"
)]
struct Args {
    #[arg(long, value_enum)]
    kind: Kind,
    /// MaskBench directory (JSON files with a `tests` array).
    #[arg(long, default_value = "../shared/data/maskbench")]
    data: PathBuf,
    /// Output directory (default: `models/<kind>-bytes`).
    #[arg(long)]
    out: Option<PathBuf>,
    #[arg(long, default_value_t = 128)]
    hidden: usize,
    #[arg(long, default_value_t = 3)]
    layers: usize,
    #[arg(long, default_value_t = 4)]
    heads: usize,
    /// Context length in bytes.
    #[arg(long, default_value_t = 128)]
    context: usize,
    #[arg(long, default_value_t = 8)]
    batch: usize,
    /// Upper bound on optimiser steps.
    #[arg(long, default_value_t = 3000)]
    steps: usize,
    /// Wall-clock budget for the training loop, in minutes.
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    #[arg(long, default_value_t = 3e-3)]
    lr: f64,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Held-out share of schema files (by a hash of the file name).
    #[arg(long, default_value_t = 0.1)]
    heldout: f64,
    /// Held-out windows per evaluation.
    #[arg(long, default_value_t = 48)]
    eval_windows: usize,
    #[arg(long, default_value_t = 50)]
    eval_every: usize,
    /// Diffusion attention pattern.
    #[arg(long, value_enum, default_value_t = Attn::Bidirectional)]
    attention: Attn,
    /// Diffusion block size (blockwise-causal attention, default decoding block).
    #[arg(long, default_value_t = 16)]
    block_size: usize,
    /// Also train on the Rust source text (`*.rs`) under this directory
    /// (the workspace root); the directories in `--code-heldout` are held
    /// out (the Spiffy example draws its code prompts from them).
    #[arg(long)]
    code: Option<PathBuf>,
    /// Held-out source directories, relative to `--code` (comma separated).
    #[arg(
        long,
        default_value = "dllm-draftgraph/src,core/src,earley/src,spec-verify/src"
    )]
    code_heldout: String,
    /// Blockwise-causal models: train with clean earlier blocks and
    /// per-block masking rates (`Trainer::blockwise_diffusion_loss`)
    /// instead of one rate per window.
    #[arg(long)]
    sdar: bool,
    /// Share of training windows drawn from the source text (with `--code`).
    #[arg(long, default_value_t = 0.25)]
    code_share: f64,
    /// Continue training this checkpoint directory instead of a random
    /// initialisation (its `config.json` replaces the shape arguments).
    #[arg(long)]
    init: Option<PathBuf>,
}

const SEP: TokenId = 256;

/// FNV-1a, for a stable train/held-out split by file name.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

struct Corpus {
    train: Vec<TokenId>,
    heldout: Vec<TokenId>,
    files: (usize, usize),
    instances: (usize, usize),
    skipped_files: usize,
}

/// Valid instances of every schema file, compact JSON, each preceded by the
/// separator token.
fn load_corpus(dir: &Path, heldout: f64) -> Result<Corpus> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the corpus directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    let mut c = Corpus {
        train: vec![],
        heldout: vec![],
        files: (0, 0),
        instances: (0, 0),
        skipped_files: 0,
    };
    for p in &names {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let Ok(text) = std::fs::read_to_string(p) else {
            c.skipped_files += 1;
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            c.skipped_files += 1;
            continue;
        };
        let held = (fnv(&name) % 10_000) as f64 / 10_000.0 < heldout;
        let mut n = 0;
        for t in v
            .get("tests")
            .and_then(|t| t.as_array())
            .into_iter()
            .flatten()
        {
            if t.get("valid").and_then(|x| x.as_bool()) != Some(true) {
                continue;
            }
            let Some(data) = t.get("data") else { continue };
            let s = serde_json::to_string(data)?;
            let dst = if held { &mut c.heldout } else { &mut c.train };
            dst.push(SEP);
            dst.extend(s.bytes().map(TokenId::from));
            n += 1;
        }
        if held {
            c.files.1 += 1;
            c.instances.1 += n;
        } else {
            c.files.0 += 1;
            c.instances.0 += n;
        }
    }
    if c.train.is_empty() || c.heldout.is_empty() {
        bail!(
            "the corpus at {} gave no train or no held-out instances",
            dir.display()
        );
    }
    Ok(c)
}

/// Source text: every `*.rs` file under `root` (skipping `target*`,
/// hidden directories and `models`), each file preceded by the separator
/// token; files under a held-out directory go to the second vector.
/// Returns (train, held-out, train files, held-out files).
fn load_code(root: &Path, heldout: &[&str]) -> Result<(Vec<TokenId>, Vec<TokenId>, usize, usize)> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("cannot read {}", d.display()))? {
            let p = e?.path();
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            if p.is_dir() {
                if !(name.starts_with('.') || name.starts_with("target") || name == "models") {
                    stack.push(p);
                }
            } else if name.ends_with(".rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    let (mut tr, mut he, mut nt, mut nh) = (Vec::new(), Vec::new(), 0, 0);
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let rel = f
            .strip_prefix(root)
            .unwrap_or(&f)
            .to_string_lossy()
            .to_string();
        let held = heldout.iter().any(|h| !h.is_empty() && rel.starts_with(h));
        let dst = if held {
            nh += 1;
            &mut he
        } else {
            nt += 1;
            &mut tr
        };
        dst.push(SEP);
        dst.extend(text.bytes().map(TokenId::from));
    }
    Ok((tr, he, nt, nh))
}

/// Cross-entropy (bits/token) of `eval` under add-one-smoothed unigram
/// frequencies of `train`.
fn unigram_bits(train: &[TokenId], eval: &[TokenId], vocab: usize) -> f64 {
    let mut counts = vec![1.0f64; vocab];
    for &t in train {
        counts[t as usize] += 1.0;
    }
    let total: f64 = counts.iter().sum();
    eval.iter()
        .map(|&t| -(counts[t as usize] / total).log2())
        .sum::<f64>()
        / eval.len() as f64
}

/// Linear warm-up over the first 5% of training, then cosine decay to 10%
/// of the peak; `progress` ∈ [0, 1].
fn lr_at(progress: f64, peak: f64) -> f64 {
    let warm = 0.05;
    if progress < warm {
        return peak * (0.05 + 0.95 * progress / warm);
    }
    let p = ((progress - warm) / (1.0 - warm)).min(1.0);
    peak * (0.1 + 0.9 * 0.5 * (1.0 + (std::f64::consts::PI * p).cos()))
}

fn main() -> Result<()> {
    let a = Args::parse();
    if !a.data.is_dir() {
        bail!(
            "corpus directory {} not found (run from the repository root)",
            a.data.display()
        );
    }
    let t0 = Instant::now();
    let corpus = load_corpus(&a.data, a.heldout)?;
    let cfg = match a.kind {
        Kind::Causal => ModelConfig::byte_causal(a.hidden, a.layers, a.heads, a.context + 1),
        Kind::Diffusion => ModelConfig::byte_diffusion(
            a.hidden,
            a.layers,
            a.heads,
            a.context,
            match a.attention {
                Attn::Bidirectional => DiffusionAttention::Bidirectional,
                Attn::BlockCausal => DiffusionAttention::BlockCausal,
            },
            a.block_size,
        ),
    };
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from(match a.kind {
            Kind::Causal => "models/causal-bytes",
            Kind::Diffusion => "models/diffusion-bytes",
        })
    });
    let win = match a.kind {
        Kind::Causal => a.context + 1,
        Kind::Diffusion => a.context,
    };
    eprintln!(
        "corpus: {} train bytes ({} files, {} instances), {} held-out bytes ({} files, {} instances); model {} params",
        corpus.train.len(),
        corpus.files.0,
        corpus.instances.0,
        corpus.heldout.len(),
        corpus.files.1,
        corpus.instances.1,
        cfg.num_params()
    );
    let tc = TrainConfig {
        lr: a.lr,
        weight_decay: 0.0,
        seed: a.seed,
    };
    let mut trainer = match &a.init {
        Some(dir) => Trainer::resume(dir, &tc)?,
        None => Trainer::new(cfg.clone(), &tc)?,
    };
    let cfg = trainer.config().clone();
    // The earlier run's training record, kept in the new manifest.
    let prior_training = a.init.as_ref().and_then(|d| {
        let m = std::fs::read_to_string(d.join("manifest.json")).ok()?;
        let v: serde_json::Value = serde_json::from_str(&m).ok()?;
        v.get("training").cloned()
    });
    let mut rng = zapspec_core::prob::seeded_rng(a.seed);

    // Fixed held-out windows, evenly spaced.
    let n_eval = a.eval_windows.min(corpus.heldout.len() / win).max(1);
    let stride = (corpus.heldout.len() - win) / n_eval.max(1);
    let eval_windows: Vec<Vec<TokenId>> = (0..n_eval)
        .map(|i| corpus.heldout[i * stride..i * stride + win].to_vec())
        .collect();
    let eval_tokens: Vec<TokenId> = match a.kind {
        Kind::Causal => eval_windows.iter().flat_map(|w| w[1..].to_vec()).collect(),
        Kind::Diffusion => eval_windows.concat(),
    };
    let unigram = unigram_bits(&corpus.train, &eval_tokens, cfg.vocab_size);
    let eval_on = |tr: &Trainer, windows: &[Vec<TokenId>]| -> Result<f64> {
        let ln2 = std::f64::consts::LN_2;
        match a.kind {
            Kind::Causal => {
                let mut s = 0.0;
                for c in windows.chunks(16) {
                    s += tr.causal_loss(c)?.to_scalar::<f32>()? as f64 * c.len() as f64;
                }
                Ok(s / windows.len() as f64 / ln2)
            }
            Kind::Diffusion => {
                // Monte-Carlo estimate of the variational bound with
                // stratified masking rates and a fixed seed.
                let mut r = zapspec_core::prob::seeded_rng(12_345);
                let k = 4;
                let mut s = 0.0;
                for rep in 0..k {
                    for c in windows.chunks(16) {
                        let rates: Vec<f64> = (0..c.len())
                            .map(|i| {
                                ((i * k + rep) % (4 * k)) as f64 / (4 * k) as f64
                                    + 0.5 / (4 * k) as f64
                            })
                            .collect();
                        s += tr
                            .diffusion_loss(c, Some(&rates), &mut r)?
                            .to_scalar::<f32>()? as f64
                            * c.len() as f64;
                    }
                }
                Ok(s / (k * windows.len()) as f64 / ln2)
            }
        }
    };
    let eval = |tr: &Trainer| eval_on(tr, &eval_windows);
    // Source text (optional): train and held-out parts, fixed held-out windows.
    let code = match &a.code {
        Some(root) => {
            let held: Vec<&str> = a.code_heldout.split(',').map(str::trim).collect();
            let (tr, he, nt, nh) = load_code(root, &held)?;
            if tr.len() <= win || he.len() <= win {
                bail!("too little source text under {}", root.display());
            }
            eprintln!(
                "source text: {} train bytes ({nt} files), {} held-out bytes ({nh} files)",
                tr.len(),
                he.len()
            );
            let n = 16.min(he.len() / win).max(1);
            let st = (he.len() - win) / n;
            let windows: Vec<Vec<TokenId>> =
                (0..n).map(|i| he[i * st..i * st + win].to_vec()).collect();
            let uni = unigram_bits(&tr, &windows.concat(), cfg.vocab_size);
            Some((tr, he.len(), nt, nh, windows, uni))
        }
        None => None,
    };

    let initial = eval(&trainer)?;
    eprintln!("held-out at init: {initial:.3} bits/byte; unigram baseline {unigram:.3}");
    let budget = a.minutes * 60.0;
    let train_start = Instant::now();
    let total = a.steps;
    let mut train_curve: Vec<(usize, f64)> = Vec::new();
    let mut eval_curve: Vec<(usize, f64)> = vec![(0, initial)];
    let pb = ProgressBar::new(total as u64);
    pb.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg} [{elapsed_precise}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut step = 0;
    let mut ema = None::<f64>;
    while step < total {
        let batch: Vec<Vec<TokenId>> = (0..a.batch)
            .map(|_| {
                let src = match &code {
                    Some(c) if rng.random::<f64>() < a.code_share => &c.0,
                    _ => &corpus.train,
                };
                let o = rng.random_range(0..src.len() - win);
                src[o..o + win].to_vec()
            })
            .collect();
        // The schedule follows whichever budget (steps or wall clock) is
        // further along, so a slow, shared machine still anneals fully.
        let progress =
            (step as f64 / total as f64).max(train_start.elapsed().as_secs_f64() / budget);
        trainer.set_lr(lr_at(progress, a.lr));
        let loss = match a.kind {
            Kind::Causal => trainer.causal_loss(&batch)?,
            Kind::Diffusion if a.attention == Attn::BlockCausal && a.sdar => {
                trainer.blockwise_diffusion_loss(&batch, &mut rng)?
            }
            Kind::Diffusion => trainer.diffusion_loss(&batch, None, &mut rng)?,
        };
        let lv = loss.to_scalar::<f32>()? as f64 / std::f64::consts::LN_2;
        trainer.step(&loss)?;
        ema = Some(ema.map_or(lv, |e| 0.95 * e + 0.05 * lv));
        train_curve.push((step + 1, lv));
        step += 1;
        if step % a.eval_every == 0 || step == total {
            let e = eval(&trainer)?;
            eval_curve.push((step, e));
            if pb.is_hidden() {
                eprintln!(
                    "step {step} [{:.0} s]: train {:.3} held-out {e:.3} bits/byte",
                    train_start.elapsed().as_secs_f64(),
                    ema.unwrap_or(lv)
                );
            }
            pb.set_message(format!(
                "train {:.3} held-out {e:.3} bits/byte",
                ema.unwrap_or(lv)
            ));
        }
        pb.inc(1);
        if train_start.elapsed().as_secs_f64() > budget {
            eprintln!("wall-clock budget reached at step {step}");
            break;
        }
    }
    pb.finish();
    let train_secs = train_start.elapsed().as_secs_f64();
    let final_eval = match eval_curve.last() {
        Some(&(s, e)) if s == step => e,
        _ => {
            let e = eval(&trainer)?;
            eval_curve.push((step, e));
            e
        }
    };

    let code_eval = match &code {
        Some((_, _, _, _, windows, uni)) => {
            Some((eval_on(&trainer, windows)?, *uni, windows.len()))
        }
        None => None,
    };
    let model = trainer.snapshot()?;
    model.save(&out)?;
    let size = std::fs::metadata(out.join("model.safetensors"))?.len();
    let manifest = serde_json::json!({
        "kind": format!("{:?}", a.kind).to_lowercase(),
        "corpus": {
            "source": "MaskBench (JSONSchemaBench subset) valid test instances, compact JSON, one separator token (256) before each",
            "path": a.data.display().to_string(),
            "split": format!("held-out = schema files with fnv1a(file name) mod 10000 < {}", a.heldout * 10_000.0),
            "train_files": corpus.files.0, "heldout_files": corpus.files.1,
            "train_instances": corpus.instances.0, "heldout_instances": corpus.instances.1,
            "train_tokens": corpus.train.len(), "heldout_tokens": corpus.heldout.len(),
            "skipped_files": corpus.skipped_files,
        },
        "model": {
            "params": cfg.num_params(), "hidden": a.hidden, "layers": a.layers, "heads": a.heads,
            "context": a.context, "safetensors_bytes": size,
            "attention": if a.kind == Kind::Diffusion { format!("{:?}", a.attention) } else { "causal".into() },
        },
        "training": {
            "optimizer": "AdamW (candle-nn), no weight decay, 5% warm-up then cosine to 10% over max(step/steps, wall/budget)",
            "loss": if a.kind == Kind::Diffusion && a.attention == Attn::BlockCausal && a.sdar { "blockwise (SDAR-style): clean blocks before a random cut, per-block rates t_b ~ U(0,1), weight 1/t_b" } else if a.kind == Kind::Diffusion { "LLaDA: one rate t ~ U(0,1) per window, weight 1/t" } else { "next-token cross-entropy" },
            "init": a.init.as_ref().map(|d| d.display().to_string()),
            "init_training": prior_training,
            "peak_lr": a.lr, "batch": a.batch, "steps": step, "max_steps": total, "budget_minutes": a.minutes, "seed": a.seed,
            "train_wall_seconds": train_secs, "total_wall_seconds": t0.elapsed().as_secs_f64(),
            "machine": examples::host::cpu_name(),
        },
        "heldout": {
            "windows": eval_windows.len(), "window_tokens": win,
            "bits_per_byte": final_eval,
            "bits_per_byte_at_init": initial,
            "unigram_bits_per_byte": unigram,
            "metric": match a.kind {
                Kind::Causal => "next-token cross-entropy in bits, averaged over held-out windows (a token is a byte or the separator)",
                Kind::Diffusion => "LLaDA variational bound E_t[(1/t) sum_masked -log2 p] / tokens (an upper bound on bits per byte), 4 stratified masking rates per window, seed 12345",
            },
        },
        "code": code.as_ref().map(|c| serde_json::json!({
            "source": "this workspace's *.rs files (target*, hidden dirs and models/ skipped), one separator token before each file",
            "root": a.code.as_ref().map(|r| r.display().to_string()),
            "heldout_dirs": a.code_heldout,
            "train_share_of_windows": a.code_share,
            "train_files": c.2, "heldout_files": c.3,
            "train_tokens": c.0.len(), "heldout_tokens": c.1,
            "heldout_windows": code_eval.map(|e| e.2),
            "heldout_bits_per_byte": code_eval.map(|e| e.0),
            "heldout_unigram_bits_per_byte": code_eval.map(|e| e.1),
        })),
        "curve": { "eval": eval_curve },
    });
    std::fs::write(
        out.join("manifest.json"),
        serde_json::to_string_pretty(&manifest)?,
    )?;
    match examples::host::register_font() {
        Ok(()) => plot(
            &out.join("loss.png"),
            &a,
            &train_curve,
            &eval_curve,
            unigram,
        )?,
        Err(e) => eprintln!("no plot: {e}"),
    }
    println!("| model | params | steps | train s | held-out bits/byte | unigram bits/byte |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| {:?} | {} | {} | {:.0} | {:.3} | {:.3} |",
        a.kind,
        cfg.num_params(),
        step,
        train_secs,
        final_eval,
        unigram
    );
    println!("{}", serde_json::to_string(&manifest["heldout"])?);
    Ok(())
}

fn plot(
    path: &Path,
    a: &Args,
    train: &[(usize, f64)],
    eval: &[(usize, f64)],
    unigram: f64,
) -> Result<()> {
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let xmax = train.last().map_or(1, |t| t.0).max(1) as f64;
    let ymax = train
        .iter()
        .chain(eval)
        .map(|p| p.1)
        .fold(unigram, f64::max)
        * 1.05;
    let mut ch = ChartBuilder::on(&root)
        .caption(
            format!("{:?} byte LM on MaskBench JSON: loss (bits/byte)", a.kind),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)?;
    ch.configure_mesh()
        .x_desc("step")
        .y_desc("bits per byte")
        .draw()?;
    // smoothed training loss
    let mut ema = None::<f64>;
    let sm: Vec<(f64, f64)> = train
        .iter()
        .map(|&(s, l)| {
            let e = ema.map_or(l, |e: f64| 0.9 * e + 0.1 * l);
            ema = Some(e);
            (s as f64, e)
        })
        .collect();
    ch.draw_series(LineSeries::new(sm, &BLUE))?
        .label("train (EMA)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    ch.draw_series(LineSeries::new(
        eval.iter().map(|&(s, l)| (s as f64, l)),
        RED.stroke_width(2),
    ))?
    .label("held-out")
    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    ch.draw_series(LineSeries::new(
        vec![(0.0, unigram), (xmax, unigram)],
        BLACK.stroke_width(1),
    ))?
    .label("unigram baseline")
    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
    ch.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
