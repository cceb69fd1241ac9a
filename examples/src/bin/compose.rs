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
    /// Sweep mode: this many MaskBench schemas (drawn with `--seed` from
    /// the whole shared set), each prompted with an instruction quoting it.
    #[arg(long, default_value_t = 0)]
    schemas: usize,
    /// The MaskBench directory of the sweep.
    #[arg(long, default_value = "../shared/data/maskbench")]
    maskbench: std::path::PathBuf,
    /// Longest schema text quoted in a prompt (bytes; longer ones are cut).
    #[arg(long, default_value_t = 3000)]
    max_schema_bytes: usize,
}

#[derive(serde::Serialize, Clone)]
struct Row {
    variant: String,
    tokens: usize,
    target_calls: usize,
    draft_calls: usize,
    rounds: usize,
    accepted: usize,
    seconds: f64,
    /// Stopped at `--max-tokens` before EOS.
    capped: bool,
    valid: Option<bool>,
    same_as_plain: Option<bool>,
    text: String,
}

#[allow(clippy::too_many_arguments)]
fn run<C, D, F>(
    name: &str,
    m: &SmolLm2,
    base: &CausalLm,
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
    let b = Builder::new(base.clone(), constraint)
        .drafter(drafter)
        .prompt(prompt)
        .gamma(args.gamma)
        .seed(args.seed)
        .max_tokens(args.max_tokens);
    let b = if args.sampled { b } else { b.greedy() };
    let t = Instant::now();
    // a run that reaches the cap is reported, not fatal
    let (tokens, stats, capped) = match fvo {
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
            capped,
            valid,
            same_as_plain: None,
            text,
        },
        tokens,
    ))
}

fn gen<M, C, D, F>(b: Builder<M, C, D, F>) -> Result<(Vec<TokenId>, zapspec::RoundStats, bool)>
where
    M: LanguageModel,
    C: Constraint,
    D: Drafter,
    F: PhiEstimator<C, NoModel>,
{
    let mut p = b.build()?;
    match p.generate() {
        Ok(g) => Ok((g.tokens, g.stats, false)),
        Err(zapspec::Error::Verify(zapspec_verify::VerifyError::TooLong { .. })) => {
            let d = p.decoder();
            let n = d.prompt().len();
            Ok((d.target.context()[n..].to_vec(), p.stats(), true))
        }
        Err(e) => Err(e.into()),
    }
}

/// Every variant on one task; the prompt is prefilled once into `base`.
fn variants(
    m: &SmolLm2,
    schema: &serde_json::Value,
    prompt: &[TokenId],
    args: &Args,
) -> Result<Vec<Row>> {
    let validator = jsonschema::validator_for(schema).ok();
    let json = zapspec::json_schema(m.vocab.clone(), schema)?;
    let free = zapspec::Unconstrained::new(
        zapspec_core::Vocabulary::len(&*m.vocab),
        Constraint::eos(&json),
    );
    let mut base = m.lm.clone();
    base.truncate(0);
    base.prefill(prompt)?;
    let full = m.lm.model().clone();
    // the draft model's prompt cache is filled here, untimed, like the target's
    let selfspec = || -> Result<CausalLm> {
        let mut d = CausalLm::new(Arc::new(full.first_layers(args.draft_layers)));
        d.prefill(prompt)?;
        Ok(d)
    };
    let none: Option<OneStepCheap> = None;
    let fvo = || Some(OneStepCheap::new());
    let v = validator.as_ref();
    let b = &base;
    let mut rows = Vec::new();
    let (r, _) = run(
        "unconstrained, no drafter",
        m,
        b,
        free,
        NoDraft,
        none.clone(),
        prompt,
        args,
        v,
    )?;
    rows.push(r);
    let (r, plain) = run(
        "constrained, no drafter (Leviathan)",
        m,
        b,
        json.clone(),
        NoDraft,
        none.clone(),
        prompt,
        args,
        v,
    )?;
    rows.push(r);
    // equal up to the cap: a round can commit up to γ tokens past it
    let cut = |x: &[TokenId]| x[..x.len().min(args.max_tokens)].to_vec();
    let mut push = |(mut r, t): (Row, Vec<TokenId>), base: &[TokenId]| {
        r.same_as_plain = Some(cut(&t) == cut(base));
        rows.push(r);
    };
    push(
        run(
            "constrained + prompt lookup (Leviathan)",
            m,
            b,
            json.clone(),
            PromptLookup::default(),
            none.clone(),
            prompt,
            args,
            v,
        )?,
        &plain,
    );
    let ss = format!(
        "constrained + self-speculative {}/30 layers (Leviathan)",
        args.draft_layers
    );
    push(
        run(
            &ss,
            m,
            b,
            json.clone(),
            selfspec()?,
            none.clone(),
            prompt,
            args,
            v,
        )?,
        &plain,
    );
    let (r, fplain) = run(
        "constrained, no drafter (FVO-Spec, OneStep-Cheap)",
        m,
        b,
        json.clone(),
        NoDraft,
        fvo(),
        prompt,
        args,
        v,
    )?;
    rows.push(r);
    let mut push = |(mut r, t): (Row, Vec<TokenId>)| {
        r.same_as_plain = Some(cut(&t) == cut(&fplain));
        rows.push(r);
    };
    push(run(
        "constrained + prompt lookup (FVO-Spec, OneStep-Cheap)",
        m,
        b,
        json.clone(),
        PromptLookup::default(),
        fvo(),
        prompt,
        args,
        v,
    )?);
    let ss = format!(
        "constrained + self-speculative {}/30 layers (FVO-Spec, OneStep-Cheap)",
        args.draft_layers
    );
    push(run(&ss, m, b, json, selfspec()?, fvo(), prompt, args, v)?);
    Ok(rows)
}

/// Sums per variant (rows in the same order for every task).
fn table(rows: &[Vec<Row>]) -> String {
    let mut t = MarkdownTable::new(&[
        "variant",
        "tasks",
        "tokens",
        "target calls / token",
        "accepted / round",
        "tokens/s",
        "valid",
        "hit the cap",
        "= no-drafter output (up to the cap)",
    ]);
    let n = rows.first().map_or(0, Vec::len);
    for i in 0..n {
        let col: Vec<&Row> = rows.iter().map(|r| &r[i]).collect();
        let sum = |f: &dyn Fn(&Row) -> f64| col.iter().map(|r| f(r)).sum::<f64>();
        let tokens = sum(&|r| r.tokens as f64);
        let share = |f: &dyn Fn(&Row) -> Option<bool>| {
            let known: Vec<bool> = col.iter().filter_map(|r| f(r)).collect();
            if known.is_empty() {
                "—".to_string()
            } else {
                format!("{}/{}", known.iter().filter(|&&b| b).count(), known.len())
            }
        };
        t.row(&[
            col[0].variant.clone(),
            col.len().to_string(),
            format!("{tokens:.0}"),
            format!("{:.2}", sum(&|r| r.target_calls as f64) / tokens.max(1.0)),
            format!(
                "{:.2}",
                sum(&|r| r.accepted as f64) / sum(&|r| r.rounds as f64).max(1.0)
            ),
            format!("{:.1}", tokens / sum(&|r| r.seconds).max(1e-9)),
            share(&|r| r.valid),
            share(&|r| Some(r.capped)),
            share(&|r| r.same_as_plain),
        ]);
    }
    t.render()
}

fn main() -> Result<()> {
    let args = Args::parse();
    let m = SmolLm2::load(GgufWeights::default(), 4096)?;
    let mode = if args.sampled {
        "sampled, T = 1"
    } else {
        "greedy"
    };
    let cmd = format!(
        "cargo run --profile release-fast -p examples --bin compose -- --draft-layers {} --gamma {} --seed {} --max-tokens {}{}{}",
        args.draft_layers, args.gamma, args.seed, args.max_tokens,
        if args.sampled { " --sampled" } else { "" },
        if args.schemas > 0 { format!(" --schemas {}", args.schemas) } else { String::new() },
    );
    let (name, md, rows) = if args.schemas == 0 {
        let schema: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&args.schema).with_context(|| format!("{:?}", args.schema))?,
        )?;
        let prompt = m.prompt(None, &args.prompt)?;
        let rows = variants(&m, &schema, &prompt, &args)?;
        let md = format!(
            "# Constrained speculative decoding on SmolLM2-135M-Instruct, built with the `zapspec` builder\n\n\
             Command: `{cmd}` ({mode}); schema `{}`; ChatML prompt: {:?}. CPU, f32-dequantised Q4_1 weights, \
             one sequence per variant; the prompt is prefilled once and not timed.\n\n{}\n\nOutputs:\n\n{}\n",
            args.schema.display(),
            args.prompt,
            table(std::slice::from_ref(&rows)),
            rows.iter()
                .map(|r| format!("- {}: `{}`", r.variant, r.text.replace('\n', " ")))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        ("compose", md, vec![rows])
    } else {
        let files = examples::schema_tasks::shuffled_schema_files(&args.maskbench, args.seed)?;
        let pb = examples::fvo::progress(args.schemas, "schemas");
        let (mut all, mut skipped) = (Vec::new(), Vec::new());
        for f in &files {
            if all.len() == args.schemas {
                break;
            }
            let schema = examples::schema_tasks::read_schema(f)?;
            let user = examples::schema_tasks::schema_instruction(&schema, args.max_schema_bytes)?;
            let prompt = m.prompt(None, &user)?;
            match variants(&m, &schema, &prompt, &args) {
                Ok(rows) => {
                    all.push(rows);
                    pb.inc(1);
                }
                // a schema zapspec refuses is skipped and counted
                Err(e) => skipped.push(format!("{}: {e}", f.display())),
            }
        }
        pb.finish_and_clear();
        let md = format!(
            "# Constrained speculative decoding on SmolLM2-135M-Instruct over MaskBench schemas, built with the `zapspec` builder\n\n\
             Command: `{cmd}` ({mode}); {} schemas drawn with the seed from the whole shared set ({} files taken, {} refused by \
             the compiler and skipped), each prompted (ChatML) with \"Write one JSON value that conforms to this JSON Schema. \
             Reply with the JSON only.\" and the schema's text (cut at {} bytes). CPU, f32-dequantised Q4_1 weights; each \
             prompt is prefilled once and not timed; sums over the schemas.\n\n{}\n",
            all.len(), all.len() + skipped.len(), skipped.len(), args.max_schema_bytes, table(&all),
        );
        ("compose_maskbench", md, all)
    };
    println!("{md}");
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join(format!("{name}.md")), &md)?;
    write_json(&args.out, name, &serde_json::to_value(&rows)?)?;
    Ok(())
}
