//! SmolLM2-135M-Instruct on the CPU, zapspec beside llama.cpp in one run:
//! prefill and decode tokens/s, the cost of an N-token forward at a long
//! context over one decode step (what verifying a draft of N tokens
//! costs), load time and peak RSS, on 1 and 2 threads.
//!
//! Every measurement is its own process (so each peak RSS is its own):
//! this binary runs itself with `--worker` for zapspec (through the
//! facade's `Model::load_with`, the path a user calls, and the model's
//! `LanguageModel` methods), and `scripts/reference/llama_cpp_speed.py`
//! for llama.cpp (llama-cpp-python), with the same text, prompt, token
//! counts and context. The engines alternate within each repetition so
//! that background load hits them alike; each figure is the median over
//! `--reps` processes.
//!
//! ```sh
//! scripts/fetch-smollm2.sh
//! python3 -m venv venv && venv/bin/pip install llama-cpp-python==0.3.36
//! cargo run --release -p examples --bin smollm2_bench -- \
//!     --llama-python venv/bin/python --out examples/results/smollm2-bench
//! ```

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use examples::smollm2::SmolLm2;
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use serde_json::{json, Value};
use zapspec_backend::GgufWeights;
use zapspec_core::{LanguageModel, TokenId, Vocabulary};

#[derive(Parser, Clone)]
#[command(
    about = "SmolLM2 prefill/decode tokens/s, N-token forward cost and RSS, beside llama.cpp"
)]
struct Args {
    /// Engines: `native` (zapspec's quantised forward, the default load),
    /// `f32` (zapspec's GGUF dequantised to f32 on candle), `llama`
    /// (llama.cpp through `--llama-python`).
    #[arg(long, value_delimiter = ',', default_value = "native,llama")]
    engines: Vec<String>,
    /// Thread counts, each measured separately.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Tokens to decode greedily after the chat prompt (EOS does not stop
    /// it, so every engine decodes exactly this many).
    #[arg(long, default_value_t = 40)]
    decode: usize,
    /// Length of the prefill (tokens of README.md, repeated as needed).
    #[arg(long, default_value_t = 128)]
    prefill: usize,
    /// Context length before the N-token forwards.
    #[arg(long, default_value_t = 1024)]
    context: usize,
    /// Block sizes N of the N-token forwards (1 is the baseline).
    #[arg(long, value_delimiter = ',', default_value = "1,4,8,16")]
    ns: Vec<usize>,
    /// Processes per (engine, threads); figures are medians over them.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Timing repetitions inside a process (median).
    #[arg(long, default_value_t = 5)]
    inner: usize,
    /// The Python with llama-cpp-python 0.3.36 installed.
    #[arg(long, default_value = "python3")]
    llama_python: PathBuf,
    /// Write `smollm2_bench.{md,json,png}` here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run one measurement in this process and print it as JSON.
    #[arg(long, hide = true)]
    worker: Option<String>,
    /// Redraw `smollm2_bench.png` in `--out` from the `smollm2_bench.json`
    /// a run wrote there, measuring nothing.
    #[arg(long)]
    replot: bool,
    /// Accepted for reproducibility; nothing here is random.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn argmax(row: &[f32]) -> TokenId {
    (0..row.len())
        .max_by(|&a, &b| row[a].total_cmp(&row[b]))
        .unwrap_or(0) as TokenId
}

/// One engine's figures in this process (`engine`: native or f32).
fn worker(engine: &str, threads: usize, a: &Args) -> Result<Value> {
    let weights = match engine {
        "native" => GgufWeights::Quantized,
        "f32" => GgufWeights::Dequantized,
        e => bail!("unknown engine {e}"),
    };
    if engine == "f32" {
        // candle's CPU kernels take their threads from rayon's global pool
        std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
    }
    let ns_max = a.ns.iter().copied().max().unwrap_or(1);
    let rss0 = status_kib("VmRSS");
    let t0 = Instant::now();
    let mut m = SmolLm2::load_threads(weights, a.context + ns_max + a.prefill + 64, threads)?;
    let load_s = t0.elapsed().as_secs_f64();
    let rss1 = status_kib("VmRSS");

    let text = include_str!("../../../README.md");
    let mut ids: Vec<TokenId> = m.vocab.encode(text)?;
    while ids.len() < a.prefill.max(a.context + ns_max) {
        ids.extend_from_within(..);
    }
    let pre = &ids[..a.prefill];
    let mut ts = Vec::new();
    for _ in 0..a.inner {
        m.lm.truncate(0);
        let t = Instant::now();
        m.lm.prefill_last(pre)?;
        ts.push(t.elapsed().as_secs_f64());
    }
    let prefill_s = median(ts);

    let prompt = m.prompt(
        Some("You are a helpful AI assistant named SmolLM, trained by Hugging Face"),
        "Name three primary colors, then stop.",
    )?;
    m.lm.truncate(0);
    let mut logits = m.lm.prefill_last(&prompt)?;
    let mut out = Vec::new();
    let t2 = Instant::now();
    for _ in 0..a.decode {
        let t = argmax(&logits);
        out.push(t);
        logits = m.lm.prefill(&[t])?.row(0).to_vec();
    }
    let decode_s = t2.elapsed().as_secs_f64();
    // peak RSS as a user runs the model (before the long-context forwards)
    let rss_peak = status_kib("VmHWM");
    let answer_ids: Vec<TokenId> = out
        .iter()
        .copied()
        .take_while(|&t| t != m.vocab.eos())
        .collect();
    let answer = String::from_utf8_lossy(&m.vocab.decode(&answer_ids)).into_owned();

    // N-token forwards (every row's logits) after `context` tokens.
    m.lm.truncate(0);
    m.lm.prefill_last(&ids[..a.context])?;
    let mut forward = serde_json::Map::new();
    for &n in &a.ns {
        let block = &ids[a.context..a.context + n];
        let mut ts = Vec::new();
        for _ in 0..a.inner {
            m.lm.truncate(a.context);
            let t = Instant::now();
            m.lm.prefill(block)?;
            ts.push(t.elapsed().as_secs_f64());
        }
        forward.insert(n.to_string(), json!(median(ts)));
    }
    Ok(json!({
        "engine": engine,
        "threads": threads,
        "load_s": load_s,
        "prefill_tokens": pre.len(),
        "prefill_tok_per_s": pre.len() as f64 / prefill_s,
        "decode_tokens": out.len(),
        "decode_tok_per_s": out.len() as f64 / decode_s,
        "context": a.context,
        "forward_s": forward,
        "rss_peak_mib": rss_peak as f64 / 1024.0,
        "rss_load_delta_mib": rss1.saturating_sub(rss0) as f64 / 1024.0,
        "answer": answer,
    }))
}

/// Runs one measurement in a child process and parses its JSON line.
fn measure(engine: &str, threads: usize, a: &Args) -> Result<Value> {
    let ns =
        a.ns.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(",");
    let common = [
        "--threads".to_string(),
        threads.to_string(),
        "--prefill".into(),
        a.prefill.to_string(),
        "--decode".into(),
        a.decode.to_string(),
        "--context".into(),
        a.context.to_string(),
        "--ns".into(),
        ns,
    ];
    let mut cmd = if engine == "llama" {
        let script =
            zapspec_backend::shipped_models_dir().join("../scripts/reference/llama_cpp_speed.py");
        let mut c = Command::new(&a.llama_python);
        c.arg(script)
            .args(&common)
            .args(["--reps", &a.inner.to_string()]);
        c
    } else {
        let mut c = Command::new(std::env::current_exe()?);
        c.args(["--worker", engine])
            .args(&common)
            .args(["--inner", &a.inner.to_string()]);
        c
    };
    let out = cmd
        .output()
        .with_context(|| format!("cannot start the {engine} measurement"))?;
    if !out.status.success() {
        bail!(
            "{engine} ({threads} threads) failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .context("no JSON line in the measurement's output")?;
    Ok(serde_json::from_str(line)?)
}

fn get(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(f64::NAN)
}

fn main() -> Result<()> {
    let mut a = Args::parse();
    if let Some(engine) = a.worker.clone() {
        let t = a.threads.first().copied().unwrap_or(1);
        a.threads = vec![t];
        println!("{}", serde_json::to_string(&worker(&engine, t, &a)?)?);
        return Ok(());
    }
    if a.replot {
        let dir = a.out.clone().context("--replot needs --out")?;
        let meta: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("smollm2_bench.json"))?)?;
        let summary = meta["summary"].as_array().cloned().unwrap_or_default();
        plot(&dir.join("smollm2_bench.png"), &a, &summary)?;
        return Ok(());
    }
    examples::smollm2::require_model()?;
    let cells: Vec<(String, usize)> = a
        .threads
        .iter()
        .flat_map(|&t| a.engines.iter().map(move |e| (e.clone(), t)))
        .collect();
    let pb = ProgressBar::new((cells.len() * a.reps) as u64);
    pb.set_style(ProgressStyle::with_template(
        "{bar:40} {pos}/{len} {msg} [{elapsed}]",
    )?);
    let mut runs: Vec<Vec<Value>> = vec![Vec::new(); cells.len()];
    for _ in 0..a.reps {
        for (i, (e, t)) in cells.iter().enumerate() {
            pb.set_message(format!("{e} × {t}"));
            runs[i].push(measure(e, *t, &a)?);
            pb.inc(1);
        }
    }
    pb.finish_and_clear();

    // medians over processes
    let summary: Vec<Value> = cells
        .iter()
        .zip(&runs)
        .map(|((e, t), rs)| {
            let med = |k: &str| median(rs.iter().map(|r| get(r, k)).collect());
            let fwd: serde_json::Map<String, Value> =
                a.ns.iter()
                    .map(|n| {
                        let k = n.to_string();
                        let v = median(
                            rs.iter()
                                .map(|r| r["forward_s"][&k].as_f64().unwrap_or(f64::NAN))
                                .collect(),
                        );
                        (k, json!(v))
                    })
                    .collect();
            json!({
                "engine": e, "threads": t, "processes": rs.len(),
                "prefill_tok_per_s": med("prefill_tok_per_s"),
                "decode_tok_per_s": med("decode_tok_per_s"),
                "load_s": med("load_s"),
                "rss_peak_mib": med("rss_peak_mib"),
                "rss_load_delta_mib": med("rss_load_delta_mib"),
                "forward_s": fwd,
                "answer": rs.first().map(|r| r["answer"].clone()).unwrap_or(Value::Null),
                "runs": rs,
            })
        })
        .collect();
    let md = render(&a, &summary);
    print!("{md}");
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("smollm2_bench.md"), &md)?;
        let meta = json!({
            "machine": examples::host::cpu_name(),
            "args": std::env::args().collect::<Vec<_>>(),
            "summary": summary,
        });
        examples::report::write_json(dir, "smollm2_bench", &meta)?;
        plot(&dir.join("smollm2_bench.png"), &a, &summary)?;
        eprintln!("wrote {}/smollm2_bench.{{md,json,png}}", dir.display());
    }
    Ok(())
}

fn label(e: &str) -> &str {
    match e {
        "native" => "zapspec native (Q4_1)",
        "f32" => "zapspec f32 (candle)",
        "llama" => "llama.cpp",
        other => other,
    }
}

fn render(a: &Args, s: &[Value]) -> String {
    let mut md = String::new();
    md.push_str("# SmolLM2-135M-Instruct: zapspec beside llama.cpp\n\n");
    md.push_str(&format!(
        "Machine: {}. Command: `{}`. Each figure is the median over {} processes per (engine, threads), the engines alternating; inside a process, prefill and N-token forwards are medians of {} timings. Decode: {} greedy tokens after the chat prompt (EOS does not stop it). Prefill: {} tokens of README.md, last row's logits. N-token forward: N tokens of README.md after {} tokens of it, every row's logits (what verifying a draft of N tokens needs).\n\n",
        examples::host::cpu_name(),
        std::env::args().collect::<Vec<_>>().join(" "),
        a.reps,
        a.inner,
        a.decode,
        a.prefill,
        a.context
    ));
    md.push_str("## Speed and memory\n\n| engine | threads | prefill tok/s | decode tok/s | load s | peak RSS MiB | RSS added by the load MiB |\n|---|---|---|---|---|---|---|\n");
    for r in s {
        md.push_str(&format!(
            "| {} | {} | {:.0} | {:.1} | {:.2} | {:.0} | {:.0} |\n",
            label(r["engine"].as_str().unwrap_or("")),
            r["threads"],
            get(r, "prefill_tok_per_s"),
            get(r, "decode_tok_per_s"),
            get(r, "load_s"),
            get(r, "rss_peak_mib"),
            get(r, "rss_load_delta_mib"),
        ));
    }
    // ratios native / llama per thread count
    let find = |e: &str, t: usize| {
        s.iter()
            .find(|r| r["engine"] == e && r["threads"].as_u64() == Some(t as u64))
    };
    let mut ratios = String::new();
    for &t in &a.threads {
        if let (Some(z), Some(l)) = (find("native", t), find("llama", t)) {
            ratios.push_str(&format!(
                "| {t} | {:.2}× | {:.2}× | {:.2}× |\n",
                get(z, "prefill_tok_per_s") / get(l, "prefill_tok_per_s"),
                get(z, "decode_tok_per_s") / get(l, "decode_tok_per_s"),
                get(z, "rss_peak_mib") / get(l, "rss_peak_mib"),
            ));
        }
    }
    if !ratios.is_empty() {
        md.push_str("\nzapspec native over llama.cpp (targets: prefill and decode ≥ 1×, peak RSS ≤ 1.2×):\n\n| threads | prefill | decode | peak RSS |\n|---|---|---|---|\n");
        md.push_str(&ratios);
    }
    md.push_str(&format!(
        "\n## Cost of an N-token forward at a {}-token context\n\nSeconds per forward, and over one single-token forward at the same context (targets for zapspec: N = 4 ≤ 1.3×, N = 8 ≤ 1.6×, N = 16 ≤ 2.5×).\n\n| engine | threads |",
        a.context
    ));
    for n in &a.ns {
        md.push_str(&format!(" N = {n} |"));
    }
    md.push_str("\n|---|---|");
    for _ in &a.ns {
        md.push_str("---|");
    }
    md.push('\n');
    for r in s {
        let base = r["forward_s"]["1"].as_f64();
        md.push_str(&format!(
            "| {} | {} |",
            label(r["engine"].as_str().unwrap_or("")),
            r["threads"]
        ));
        for n in &a.ns {
            let v = r["forward_s"][n.to_string()].as_f64().unwrap_or(f64::NAN);
            match base {
                Some(b) if *n != 1 => md.push_str(&format!(" {:.1} ms ({:.2}×) |", v * 1e3, v / b)),
                _ => md.push_str(&format!(" {:.1} ms |", v * 1e3)),
            }
        }
        md.push('\n');
    }
    md.push_str("\n## Greedy answers\n\n");
    for r in s {
        md.push_str(&format!(
            "- {} × {}: {:?}\n",
            label(r["engine"].as_str().unwrap_or("")),
            r["threads"],
            r["answer"].as_str().unwrap_or("")
        ));
    }
    md
}

fn plot(path: &std::path::Path, a: &Args, s: &[Value]) -> Result<()> {
    examples::host::register_font()?;
    let root = BitMapBackend::new(path, (1200, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let (l, r) = root.split_horizontally(600);
    let colors = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];
    // (a) tok/s bars: decode and prefill per engine × threads
    let ymax = s
        .iter()
        .map(|r| get(r, "decode_tok_per_s").max(get(r, "prefill_tok_per_s")))
        .fold(1.0, f64::max)
        * 1.15;
    let mut c = ChartBuilder::on(&l)
        .caption("(a) tokens/s (D: decode, P: prefill)", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..(2 * s.len()) as f64, 0f64..ymax)?;
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("tokens/s")
        .draw()?;
    for (i, r) in s.iter().enumerate() {
        let col = colors[i % colors.len()];
        for (j, (k, tag)) in [("decode_tok_per_s", "D"), ("prefill_tok_per_s", "P")]
            .iter()
            .enumerate()
        {
            let x = (2 * i + j) as f64;
            let v = get(r, k);
            c.draw_series(std::iter::once(Rectangle::new(
                [(x + 0.1, 0.0), (x + 0.9, v)],
                col.mix(if j == 0 { 0.9 } else { 0.45 }).filled(),
            )))?;
            c.draw_series(std::iter::once(Text::new(
                format!("{tag}{}", r["threads"]),
                (x + 0.3, v + ymax * 0.02),
                ("sans-serif", 12),
            )))?;
        }
        c.draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())?
            .label(
                label(r["engine"].as_str().unwrap_or("")).to_string()
                    + &format!(" × {}", r["threads"]),
            )
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], col.filled()));
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    // (b) N-token forward cost over one step
    let nmax = a.ns.iter().copied().max().unwrap_or(16) as f64;
    let rmax = s
        .iter()
        .flat_map(|r| {
            let b = r["forward_s"]["1"].as_f64().unwrap_or(1.0);
            a.ns.iter()
                .map(move |n| r["forward_s"][n.to_string()].as_f64().unwrap_or(0.0) / b)
        })
        .fold(1.0, f64::max)
        * 1.1;
    let mut c = ChartBuilder::on(&r)
        .caption(
            format!(
                "(b) N-token forward / 1-token forward, context {}",
                a.context
            ),
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..nmax + 1.0, 0f64..rmax)?;
    c.configure_mesh().x_desc("N").y_desc("× one step").draw()?;
    for (i, r) in s.iter().enumerate() {
        let col = colors[i % colors.len()];
        let b = r["forward_s"]["1"].as_f64().unwrap_or(1.0);
        let pts: Vec<(f64, f64)> =
            a.ns.iter()
                .map(|n| {
                    (
                        *n as f64,
                        r["forward_s"][n.to_string()].as_f64().unwrap_or(0.0) / b,
                    )
                })
                .collect();
        c.draw_series(LineSeries::new(pts.clone(), col.stroke_width(2)))?
            .label(
                label(r["engine"].as_str().unwrap_or("")).to_string()
                    + &format!(" × {}", r["threads"]),
            )
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        c.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, col.filled())))?;
    }
    c.draw_series(LineSeries::new(
        [(1.0, 1.0), (4.0, 1.3), (8.0, 1.6), (16.0, 2.5)],
        BLACK.stroke_width(1),
    ))?
    .label("target")
    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(1)));
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}
