//! One constrained speculative decoding loop on the real model, built from
//! parts with the `zapspec` facade (issue 18's first step): SmolLM2-135M
//! under a JSON Schema, from a ChatML prompt, every combination of drafter
//! (none, prompt lookup, self-speculative: the target's first
//! `--draft-layers` layers) and verifier (Leviathan, FVO-Spec with
//! OneStep-Cheap), plus unconstrained decoding, in one run.
//!
//! The heart of it is README's example:
//!
//! ```ignore
//! let json = zapspec::json_schema(m.vocab.clone(), &schema)?;
//! let out = Builder::new(m.lm.clone(), json)
//!     .drafter(PromptLookup::default())
//!     .prompt(&m.prompt(None, "Create a calendar event …")?)
//!     .build()?.generate()?;
//! ```
//!
//! Per variant: output tokens, target forwards per output token, mean
//! accepted draft length per round, tokens/s, whether the output validates
//! against the schema (the `jsonschema` crate, independent of the
//! grammar), and — greedy by default — whether it equals the drafter-free
//! loop's output token for token (it must, for every drafter under the same
//! verifier).
//!
//! `scripts/fetch-smollm2.sh && cargo run --release -p examples --bin compose -- [--sampled] [--seed N] [--out DIR]`

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use zapspec::{Builder, Constraint, Drafter, NoDraft, OneStepCheap, PhiEstimator, PromptLookup};
use zapspec_backend::{CausalLm, GgufWeights};
use zapspec_core::{LanguageModel, TokenId};
use zapspec_phi::NoModel;

use examples::report::{write_json, MarkdownTable};
use examples::smollm2::SmolLm2;

#[derive(Parser)]
#[command(about = "Constrained speculative decoding on SmolLM2, built from parts")]
struct Args {
    /// JSON Schema file.
    #[arg(long, default_value = "examples/data/event.schema.json")]
    schema: std::path::PathBuf,
    /// The user turn of the ChatML prompt.
    #[arg(
        long,
        default_value = "Create a calendar event for the team's quarterly review on 2026-12-03; it is confirmed and held online. Answer with one JSON object only."
    )]
    prompt: String,
    /// Layers of the self-speculative drafter (of 30).
    #[arg(long, default_value_t = 8)]
    draft_layers: usize,
    /// Draft block length γ.
    #[arg(long, default_value_t = 4)]
    gamma: usize,
    /// Sample (temperature 1) instead of greedy decoding.
    #[arg(long)]
    sampled: bool,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output cap in tokens (EOS included).
    #[arg(long, default_value_t = 160)]
    max_tokens: usize,
    #[arg(long, default_value = "examples/results/compose")]
    out: std::path::PathBuf,
}

#[derive(serde::Serialize)]
struct Row {
    variant: String,
    tokens: usize,
    target_calls: usize,
    draft_calls: usize,
    rounds: usize,
    accepted: usize,
    seconds: f64,
    valid: Option<bool>,
    same_as_plain: Option<bool>,
    text: String,
}

#[allow(clippy::too_many_arguments)]
fn run<C, D, F>(
    name: &str,
    m: &SmolLm2,
    constraint: C,
    drafter: D,
    fvo: Option<F>,
    prompt: &[TokenId],
    args: &Args,
    validator: Option<&jsonschema::Validator>,
) -> Result<(Row, Vec<TokenId>)>
where
    C: Constraint,
    D: Drafter,
    F: PhiEstimator<C, NoModel>,
{
    let b = Builder::new(m.lm.clone(), constraint)
        .drafter(drafter)
        .prompt(prompt)
        .gamma(args.gamma)
        .seed(args.seed)
        .max_tokens(args.max_tokens);
    let b = if args.sampled { b } else { b.greedy() };
    let t = Instant::now();
    // a run that reaches the cap is reported, not fatal
    let (tokens, stats) = match fvo {
        Some(phi) => gen(b.fvo_spec(phi))?,
        None => gen(b)?,
    };
    let seconds = t.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&m.vocab.decode(&tokens)).into_owned();
    let valid = validator
        .map(|v| serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|j| v.is_valid(&j)));
    Ok((
        Row {
            variant: name.into(),
            tokens: tokens.len(),
            target_calls: stats.target_calls,
            draft_calls: stats.draft_calls,
            rounds: stats.rounds,
            accepted: stats.accepted,
            seconds,
            valid,
            same_as_plain: None,
            text,
        },
        tokens,
    ))
}

fn gen<M, C, D, F>(b: Builder<M, C, D, F>) -> Result<(Vec<TokenId>, zapspec::RoundStats)>
where
    M: LanguageModel,
    C: Constraint,
    D: Drafter,
    F: PhiEstimator<C, NoModel>,
{
    let mut p = b.build()?;
    match p.generate() {
        Ok(g) => Ok((g.tokens, g.stats)),
        Err(zapspec::Error::Verify(zapspec_verify::VerifyError::TooLong { .. })) => {
            let d = p.decoder();
            let n = d.prompt().len();
            Ok((d.target.context()[n..].to_vec(), p.stats()))
        }
        Err(e) => Err(e.into()),
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let m = SmolLm2::load(GgufWeights::default(), 2048)?;
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&args.schema).with_context(|| format!("{:?}", args.schema))?,
    )?;
    let validator = jsonschema::validator_for(&schema)?;
    let json = zapspec::json_schema(m.vocab.clone(), &schema)?;
    let free = zapspec::Unconstrained::new(
        zapspec_core::Vocabulary::len(&*m.vocab),
        Constraint::eos(&json),
    );
    let prompt = m.prompt(None, &args.prompt)?;
    let full = m.lm.model().clone();
    let selfspec = || CausalLm::new(Arc::new(full.first_layers(args.draft_layers)));
    let none: Option<OneStepCheap> = None;
    let fvo = || Some(OneStepCheap::new());
    let v = Some(&validator);
    let mut rows = Vec::new();
    let (r, _) = run(
        "unconstrained, no drafter",
        &m,
        free,
        NoDraft,
        none.clone(),
        &prompt,
        &args,
        v,
    )?;
    rows.push(r);
    let (r, plain) = run(
        "constrained, no drafter (Leviathan)",
        &m,
        json.clone(),
        NoDraft,
        none.clone(),
        &prompt,
        &args,
        v,
    )?;
    rows.push(r);
    let mut push = |(mut r, t): (Row, Vec<TokenId>), base: &[TokenId]| {
        r.same_as_plain = Some(t == base);
        rows.push(r);
    };
    push(
        run(
            "constrained + prompt lookup (Leviathan)",
            &m,
            json.clone(),
            PromptLookup::default(),
            none.clone(),
            &prompt,
            &args,
            v,
        )?,
        &plain,
    );
    push(
        run(
            &format!(
                "constrained + self-speculative {}/30 layers (Leviathan)",
                args.draft_layers
            ),
            &m,
            json.clone(),
            selfspec(),
            none.clone(),
            &prompt,
            &args,
            v,
        )?,
        &plain,
    );
    let (r, fplain) = run(
        "constrained, no drafter (FVO-Spec, OneStep-Cheap)",
        &m,
        json.clone(),
        NoDraft,
        fvo(),
        &prompt,
        &args,
        v,
    )?;
    rows.push(r);
    let mut push = |(mut r, t): (Row, Vec<TokenId>)| {
        r.same_as_plain = Some(t == fplain);
        rows.push(r);
    };
    push(run(
        "constrained + prompt lookup (FVO-Spec, OneStep-Cheap)",
        &m,
        json.clone(),
        PromptLookup::default(),
        fvo(),
        &prompt,
        &args,
        v,
    )?);
    push(run(
        &format!(
            "constrained + self-speculative {}/30 layers (FVO-Spec, OneStep-Cheap)",
            args.draft_layers
        ),
        &m,
        json.clone(),
        selfspec(),
        fvo(),
        &prompt,
        &args,
        v,
    )?);

    let mut t = MarkdownTable::new(&[
        "variant",
        "tokens",
        "target calls / token",
        "accepted / round",
        "tokens/s",
        "valid",
        "= no-drafter output",
    ]);
    for r in &rows {
        let yn = |b: Option<bool>| {
            b.map_or("—".to_string(), |b| {
                if b {
                    "yes".into()
                } else {
                    "**no**".into()
                }
            })
        };
        t.row(&[
            r.variant.clone(),
            r.tokens.to_string(),
            format!("{:.2}", r.target_calls as f64 / r.tokens.max(1) as f64),
            format!("{:.2}", r.accepted as f64 / r.rounds.max(1) as f64),
            format!("{:.1}", r.tokens as f64 / r.seconds.max(1e-9)),
            yn(r.valid),
            yn(r.same_as_plain),
        ]);
    }
    let mode = if args.sampled {
        "sampled, T = 1"
    } else {
        "greedy"
    };
    let md = format!(
        "# Constrained speculative decoding on SmolLM2-135M-Instruct, built with the `zapspec` builder\n\n\
         Command: `compose --draft-layers {} --gamma {} --seed {} --max-tokens {}{}` ({mode}); schema `{}`; \
         ChatML prompt: {:?}. CPU, f32-dequantised Q4_1 weights, one sequence per variant \
         (the first variant also pays the prompt's prefill).\n\n{}\n\nOutputs:\n\n{}\n",
        args.draft_layers, args.gamma, args.seed, args.max_tokens,
        if args.sampled { " --sampled" } else { "" },
        args.schema.display(), args.prompt, t.render(),
        rows.iter().map(|r| format!("- {}: `{}`", r.variant, r.text.replace('\n', " "))).collect::<Vec<_>>().join("\n"),
    );
    println!("{md}");
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("compose.md"), &md)?;
    write_json(&args.out, "compose", &serde_json::to_value(&rows)?)?;
    Ok(())
}
