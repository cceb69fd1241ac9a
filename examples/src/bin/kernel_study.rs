//! Copy-as-Decode's kernel study (§2.4, Fig. 3): one parallel-prefill
//! forward of N tokens against N single-token decode steps, both after the
//! same 1,024-token KV prefix, N ∈ {8, …, 512}; median of ≥ 5 trials;
//! s(N) = T_decode(N) / T_prefill(N).
//!
//! ```text
//! cargo run --release -p examples --bin kernel_study                 # both models, full depth
//! cargo run --release -p examples --bin kernel_study -- --layers 1   # reduced protocol for a small CPU
//! cargo run --release -p examples --features gpu-backend/cuda --bin kernel_study -- --device cuda
//! ```
//!
//! Models: a Qwen2.5-1.5B-shaped decoder with random weights (timings do
//! not depend on weight values; `--layers` keeps the true per-layer shape and
//! the full embedding/LM head but fewer layers), and the shipped byte-level
//! causal model (`models/causal-bytes`; its RoPE table is extended past the
//! trained window so the 1,024-token prefix fits — timing only).
//! Both sides compute the next-token logits of their last position only: a
//! copy needs the KV update plus one row of logits, a decode step needs its
//! row to pick the token. Decode steps are teacher-forced (the same N tokens
//! as the prefill), which costs what greedy decoding costs minus an argmax.
//! Writes `kernel_study.{md,json,png}` to `--out`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use plotters::prelude::*;
use rand::Rng;
use zapspec_backend::{Backend, CausalLm, ModelConfig, Transformer};
use zapspec_core::TokenId;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq)]
enum Which {
    Qwen,
    Shipped,
    Both,
    /// The real SmolLM2-135M-Instruct (Q4_1 GGUF dequantised to f32; fetch
    /// it with `scripts/fetch-smollm2.sh`), at full depth.
    Smollm2,
}

#[derive(Parser, Debug)]
#[command(about = "Parallel prefill vs autoregressive decode (Copy-as-Decode Fig. 3)")]
struct Args {
    #[arg(long, value_enum, default_value_t = Which::Both)]
    model: Which,
    /// Decoder layers of the Qwen2.5-1.5B shape (default: all 28).
    #[arg(long)]
    layers: Option<usize>,
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64,128,256,512")]
    ns: Vec<usize>,
    #[arg(long, default_value_t = 5)]
    trials: usize,
    /// KV prefix length before each span.
    #[arg(long, default_value_t = 1024)]
    prefix: usize,
    /// cpu, cuda or cuda:N.
    #[arg(long, default_value = "cpu")]
    device: String,
    #[arg(long, default_value = "models/causal-bytes")]
    shipped: PathBuf,
    #[arg(long, default_value = "models/kernel-study")]
    out: PathBuf,
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Debug, Clone, serde::Serialize)]
struct Row {
    n: usize,
    prefill_ms: Vec<f64>,
    decode_ms: Vec<f64>,
    prefill_median_ms: f64,
    decode_median_ms: f64,
    speedup: f64,
}

#[derive(Debug, Clone, serde::Serialize)]
struct Study {
    model: String,
    config: String,
    layers: usize,
    full_layers: usize,
    params: usize,
    dtype: String,
    rows: Vec<Row>,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        0.5 * (s[m - 1] + s[m])
    }
}

fn study(name: &str, model: Arc<Transformer>, full_layers: usize, a: &Args) -> Result<Study> {
    let cfg = model.config().clone();
    let vocab = cfg.vocab_size as u32;
    let mut rng = zapspec_core::prob::seeded_rng(a.seed);
    let mut toks =
        |n: usize| -> Vec<TokenId> { (0..n).map(|_| rng.random_range(0..vocab)).collect() };
    let mut base = CausalLm::new(model).with_bos(None);
    let prefix = toks(a.prefix);
    for chunk in prefix.chunks(256) {
        base.prefill_last(chunk)?;
    }
    // Warm-up: one of each, untimed.
    let w = toks(8);
    base.clone().prefill_last(&w)?;
    let mut f = base.clone();
    for &t in &w {
        f.prefill_last(&[t])?;
    }
    let mut rows = Vec::new();
    for &n in &a.ns {
        let span = toks(n);
        let (mut pre, mut dec) = (Vec::new(), Vec::new());
        for trial in 0..a.trials {
            let mut f = base.clone();
            let t = Instant::now();
            f.prefill_last(&span)?;
            pre.push(t.elapsed().as_secs_f64() * 1e3);
            let mut f = base.clone();
            let t = Instant::now();
            for &x in &span {
                f.prefill_last(&[x])?;
            }
            dec.push(t.elapsed().as_secs_f64() * 1e3);
            eprintln!(
                "  {name} N={n} trial {trial}: prefill {:.1} ms, decode {:.1} ms",
                pre[trial], dec[trial]
            );
        }
        let (pm, dm) = (median(&pre), median(&dec));
        rows.push(Row {
            n,
            prefill_ms: pre,
            decode_ms: dec,
            prefill_median_ms: pm,
            decode_median_ms: dm,
            speedup: dm / pm,
        });
    }
    Ok(Study {
        model: name.into(),
        config: format!(
            "hidden {}, {} of {} layers, {} heads, {} KV heads, intermediate {}, vocab {}",
            cfg.hidden_size,
            cfg.num_hidden_layers,
            full_layers,
            cfg.num_attention_heads,
            cfg.kv_heads(),
            cfg.intermediate_size,
            cfg.vocab_size
        ),
        layers: cfg.num_hidden_layers,
        full_layers,
        params: cfg.num_params(),
        dtype: base
            .transformer()
            .map_or_else(String::new, |t| format!("{:?}", t.dtype())),
        rows,
    })
}

fn main() -> Result<()> {
    let a = Args::parse();
    let backend: Backend = a.device.parse()?;
    let device = backend.device()?;
    let dtype = backend.dtype();
    let machine = if device.is_cpu() {
        examples::host::cpu_name()
    } else {
        format!("{} (host CPU: {})", a.device, examples::host::cpu_name())
    };
    eprintln!("machine: {machine}");
    let mut studies = Vec::new();
    let need = a.prefix + a.ns.iter().copied().max().unwrap_or(0) + 16;
    if matches!(a.model, Which::Qwen | Which::Both) {
        let mut cfg = ModelConfig::qwen2_5_1_5b();
        let full = cfg.num_hidden_layers;
        cfg.num_hidden_layers = a.layers.unwrap_or(full).clamp(1, full);
        cfg.max_position_embeddings = need.max(2048);
        eprintln!(
            "building {} random weights ({} layers) …",
            cfg.num_params(),
            cfg.num_hidden_layers
        );
        let m = Transformer::random(cfg, a.seed, dtype, &device)?;
        studies.push(study(
            "Qwen2.5-1.5B shape (random weights)",
            Arc::new(m),
            full,
            &a,
        )?);
        write_outputs(&studies, &machine, &a)?;
    }
    if matches!(a.model, Which::Shipped | Which::Both) {
        let dir = &a.shipped;
        let model = if dir.join("config.json").exists() {
            let mut cfg = zapspec_backend::weights::read_config(dir)?;
            let w = zapspec_backend::weights::read_weights(dir, &cfg, dtype, &device)?;
            cfg.max_position_embeddings = cfg.max_position_embeddings.max(need);
            Some(Transformer::from_weights(cfg, w, &device)?)
        } else {
            eprintln!("{} not found: skipping the shipped model", dir.display());
            None
        };
        if let Some(m) = model {
            let l = m.config().num_hidden_layers;
            studies.push(study(
                &format!("shipped {}", dir.display()),
                Arc::new(m),
                l,
                &a,
            )?);
        }
    }
    if a.model == Which::Smollm2 {
        let path = examples::smollm2::require_model()?;
        let opts = zapspec_backend::GgufOptions {
            weights: zapspec_backend::GgufWeights::Dequantized,
            max_context: Some(need),
            ..Default::default()
        };
        let lm = zapspec_backend::load_gguf(&path, &device, &opts)?;
        let l = lm.config().num_hidden_layers;
        let model = lm
            .transformer()
            .expect("the dequantised load runs on candle")
            .clone();
        studies.push(study(
            "SmolLM2-135M-Instruct (Q4_1 GGUF dequantised to f32, real weights)",
            model,
            l,
            &a,
        )?);
    }
    write_outputs(&studies, &machine, &a)?;
    eprintln!("wrote {}/kernel_study.{{md,json,png}}", a.out.display());
    Ok(())
}

/// Writes kernel_study.{md,json,png} (after every model, so a cut-off
/// run keeps what it measured).
fn write_outputs(studies: &[Study], machine: &str, a: &Args) -> Result<()> {
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let md = markdown(studies, machine, a);
    println!("{md}");
    std::fs::write(a.out.join("kernel_study.md"), md)?;
    let json = serde_json::json!({
        "machine": machine, "device": a.device, "prefix_tokens": a.prefix, "trials": a.trials,
        "protocol": protocol(a), "studies": studies,
    });
    std::fs::write(
        a.out.join("kernel_study.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    match examples::host::register_font() {
        Ok(()) => plot(&a.out.join("kernel_study.png"), studies, machine)?,
        Err(e) => eprintln!("no plot: {e}"),
    }
    Ok(())
}

fn protocol(a: &Args) -> String {
    format!(
        "after a {}-token KV prefix (random tokens), time one parallel-prefill forward of N tokens (last-row logits) vs N teacher-forced single-token decode steps (one row of logits each), each from a fork of the same prefix cache; {} trials per N after one untimed warm-up, median reported; device {}{}",
        a.prefix,
        a.trials,
        a.device,
        match a.layers {
            Some(l) => format!("; REDUCED: the Qwen2.5-1.5B shape with {l} decoder layer(s) (true per-layer shape, full 151936x1536 embedding/LM head)"),
            None => String::new(),
        }
    )
}

fn markdown(studies: &[Study], machine: &str, a: &Args) -> String {
    let mut s = format!("## Kernel study: parallel prefill vs N decode steps\n\nMachine: {machine}\n\nProtocol: {}\n", protocol(a));
    for st in studies {
        s += &format!(
            "\n### {} — {} ({} params, {})\n\n",
            st.model, st.config, st.params, st.dtype
        );
        s += "| N | T_prefill (ms) | T_decode (ms) | decode ms/token | s(N) |\n|---:|---:|---:|---:|---:|\n";
        for r in &st.rows {
            s += &format!(
                "| {} | {:.1} | {:.1} | {:.2} | {:.1}× |\n",
                r.n,
                r.prefill_median_ms,
                r.decode_median_ms,
                r.decode_median_ms / r.n as f64,
                r.speedup
            );
        }
    }
    s += "\nPaper (Copy-as-Decode Fig. 3, A100 80GB, bf16, Qwen2.5-1.5B/7B): s(N) from 6.8× (N=8) to 303× (N=512).\n";
    s
}

fn plot(path: &Path, studies: &[Study], machine: &str) -> Result<()> {
    let root = BitMapBackend::new(path, (1200, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let (l, r) = root.split_horizontally(600);
    let colors = [BLUE, RED, GREEN, MAGENTA];
    let all: Vec<&Row> = studies.iter().flat_map(|s| &s.rows).collect();
    if all.is_empty() {
        root.present()?;
        return Ok(());
    }
    let nmax = all.iter().map(|r| r.n).max().unwrap_or(512) as f64 * 1.2;
    let nmin = all.iter().map(|r| r.n).min().unwrap_or(8) as f64 / 1.2;
    let tmin = all
        .iter()
        .map(|r| r.prefill_median_ms.min(r.decode_median_ms))
        .fold(f64::MAX, f64::min)
        / 1.5;
    let tmax = all
        .iter()
        .map(|r| r.decode_median_ms.max(r.prefill_median_ms))
        .fold(0.0, f64::max)
        * 1.5;
    let mut c = ChartBuilder::on(&l)
        .caption("(a) wall-clock per span", ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((nmin..nmax).log_scale(), (tmin..tmax).log_scale())?;
    c.configure_mesh()
        .x_desc("span N (tokens)")
        .y_desc("ms")
        .draw()?;
    for (i, st) in studies.iter().enumerate() {
        let col = colors[i % colors.len()];
        c.draw_series(LineSeries::new(
            st.rows.iter().map(|r| (r.n as f64, r.decode_median_ms)),
            col.stroke_width(2),
        ))?
        .label(format!("{}: decode", short(&st.model)))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        c.draw_series(LineSeries::new(
            st.rows.iter().map(|r| (r.n as f64, r.prefill_median_ms)),
            col.stroke_width(1),
        ))?
        .label(format!("{}: prefill", short(&st.model)))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(1)));
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    let smax = all.iter().map(|r| r.speedup).fold(1.0, f64::max) * 1.5;
    let mut c = ChartBuilder::on(&r)
        .caption(
            format!(
                "(b) s(N) — {}",
                machine.chars().take(40).collect::<String>()
            ),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((nmin..nmax).log_scale(), (0.5..smax).log_scale())?;
    c.configure_mesh()
        .x_desc("span N (tokens)")
        .y_desc("T_decode / T_prefill")
        .draw()?;
    for (i, st) in studies.iter().enumerate() {
        let col = colors[i % colors.len()];
        c.draw_series(LineSeries::new(
            st.rows.iter().map(|r| (r.n as f64, r.speedup)),
            col.stroke_width(2),
        ))?
        .label(short(&st.model))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        c.draw_series(
            st.rows
                .iter()
                .map(|r| Circle::new((r.n as f64, r.speedup), 3, col.filled())),
        )?;
    }
    // the linear overhead-dominated regime s(N) = N
    c.draw_series(LineSeries::new(
        [(nmin, nmin), (nmax, nmax)],
        BLACK.mix(0.4),
    ))?
    .label("s(N) = N")
    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

fn short(s: &str) -> String {
    s.split(" (").next().unwrap_or(s).to_string()
}
