//! SmolLM2-135M-Instruct on the CPU: load time, resident memory, prefill and
//! decode tokens/s, for one way of holding the GGUF weights
//! (`--weights quantized|dequantized`; run once per mode, so each
//! process's RSS is its own), and a greedy answer to a chat prompt.
//!
//! ```sh
//! scripts/fetch-smollm2.sh
//! cargo run --release -p examples --bin smollm2_bench -- --weights quantized
//! ```

use std::time::Instant;

use anyhow::Result;
use clap::Parser;
use examples::smollm2::{rss_bytes, SmolLm2};
use zapspec_backend::GgufWeights;
use zapspec_core::{LanguageModel, TokenId, Vocabulary};

#[derive(Parser)]
#[command(about = "SmolLM2 load/RSS/tokens-per-second for one weight mode")]
struct Args {
    /// `quantized` (QMatMul on the GGUF blocks) or `dequantized` (f32).
    #[arg(long, default_value = "dequantized")]
    weights: GgufWeights,
    /// Tokens to decode greedily.
    #[arg(long, default_value_t = 64)]
    decode: usize,
    /// Length of the synthetic prefill (tokens).
    #[arg(long, default_value_t = 256)]
    prefill: usize,
    /// Threads (sets RAYON_NUM_THREADS for candle's CPU kernels).
    #[arg(long)]
    threads: Option<usize>,
    /// Write a JSON line of the figures here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

fn main() -> Result<()> {
    let args = Args::parse();
    if let Some(t) = args.threads {
        std::env::set_var("RAYON_NUM_THREADS", t.to_string());
    }
    let rss0 = rss_bytes().unwrap_or(0);
    let t0 = Instant::now();
    let mut m = SmolLm2::load(args.weights, 4096)?;
    let load_s = t0.elapsed().as_secs_f64();
    let rss1 = rss_bytes().unwrap_or(0);

    // Prefill: a real text, repeated to the requested length.
    let text = include_str!("../../../README.md");
    let mut ids: Vec<TokenId> = m.vocab.encode(text)?;
    while ids.len() < args.prefill {
        ids.extend_from_within(..);
    }
    ids.truncate(args.prefill);
    m.lm.truncate(0);
    let t1 = Instant::now();
    m.lm.prefill(&ids)?;
    let prefill_s = t1.elapsed().as_secs_f64();

    // Greedy decode after a chat prompt.
    let prompt = m.prompt(None, "Name three primary colors, then stop.")?;
    m.lm.truncate(0);
    let mut logits = m.lm.prefill(&prompt)?.row(prompt.len() - 1).to_vec();
    let mut out = Vec::new();
    let t2 = Instant::now();
    for _ in 0..args.decode {
        let t = (0..logits.len())
            .max_by(|&a, &b| logits[a].total_cmp(&logits[b]))
            .unwrap_or(0) as TokenId;
        if t == m.vocab.eos() {
            break;
        }
        out.push(t);
        logits = m.lm.prefill(&[t])?.row(0).to_vec();
    }
    let decode_s = t2.elapsed().as_secs_f64();
    let rss2 = rss_bytes().unwrap_or(0);
    let answer = String::from_utf8_lossy(&m.vocab.decode(&out)).into_owned();
    let figures = serde_json::json!({
        "weights": format!("{:?}", args.weights),
        "load_s": load_s,
        "rss_after_load_mib": rss1 as f64 / 1048576.0,
        "rss_load_delta_mib": (rss1.saturating_sub(rss0)) as f64 / 1048576.0,
        "rss_end_mib": rss2 as f64 / 1048576.0,
        "prefill_tokens": ids.len(),
        "prefill_tok_per_s": ids.len() as f64 / prefill_s,
        "decode_tokens": out.len(),
        "decode_tok_per_s": out.len() as f64 / decode_s,
        "answer": answer,
    });
    println!("{}", serde_json::to_string_pretty(&figures)?);
    if let Some(p) = args.json {
        std::fs::write(p, serde_json::to_string(&figures)? + "\n")?;
    }
    Ok(())
}
