//! Generates from the shipped byte-level models.
//!
//! ```text
//! cargo run --release -p examples --bin generate -- --kind causal --prompt '{"name": '
//! cargo run --release -p examples --bin generate -- --kind diffusion --prompt '{"name": ' --len 48
//! ```

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, ValueEnum};
use zapspec_backend::causal::{generate, GenerateOptions};
use zapspec_backend::diffusion::{generate_blockwise, DiffusionGenerateOptions};
use zapspec_backend::{Backend, DiffusionCache};
use zapspec_core::{DiffusionModel, TokenId};

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq)]
enum Kind {
    Causal,
    Diffusion,
}

#[derive(Parser, Debug)]
struct Args {
    #[arg(long, value_enum, default_value_t = Kind::Causal)]
    kind: Kind,
    #[arg(long)]
    model: Option<PathBuf>,
    #[arg(long, default_value = "{\"")]
    prompt: String,
    #[arg(long, default_value_t = 64)]
    len: usize,
    /// Causal: sampling temperature (0 = greedy).
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// Diffusion: tokens unmasked per step.
    #[arg(long, default_value_t = 1)]
    per_step: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long, default_value = "cpu")]
    device: String,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let device = a.device.parse::<Backend>()?.device()?;
    let prompt: Vec<TokenId> = a.prompt.bytes().map(TokenId::from).collect();
    let t = std::time::Instant::now();
    let (out, calls) = match a.kind {
        Kind::Causal => {
            let dir = a
                .model
                .clone()
                .unwrap_or_else(|| "models/causal-bytes".into());
            let mut lm = zapspec_backend::load_causal(&dir, &device)?;
            let opts = GenerateOptions {
                max_new_tokens: a.len,
                temperature: a.temperature,
                seed: a.seed,
                stop: Some(256),
            };
            let out = generate(&mut lm, &prompt, &opts)?;
            let f = lm.forwards();
            (out, f)
        }
        Kind::Diffusion => {
            let dir = a
                .model
                .clone()
                .unwrap_or_else(|| "models/diffusion-bytes".into());
            let mut lm =
                zapspec_backend::load_diffusion(&dir, &device)?.with_cache(DiffusionCache::Dual);
            let opts = DiffusionGenerateOptions {
                gen_len: a.len,
                block_len: lm.block_size(),
                tokens_per_step: a.per_step,
            };
            let (out, _) = generate_blockwise(&mut lm, &prompt, &opts)?;
            let f = lm.nfe();
            (out, f)
        }
    };
    let text: Vec<u8> = out.iter().filter(|&&t| t < 256).map(|&t| t as u8).collect();
    println!("{}{}", a.prompt, String::from_utf8_lossy(&text));
    eprintln!(
        "{} tokens, {calls} model calls, {:.2} s",
        out.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
