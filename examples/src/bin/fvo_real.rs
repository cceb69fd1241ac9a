//! OneStep-Cheap's overhead per FVO-Spec round with a real model as target
//! (future-validity §6.5 / Table 11 on SmolLM2-135M-Instruct instead of a
//! toy bigram LM), side by side with the Uniform baseline (Φ̂ ≡ 1, the
//! LMS/Leviathan law) in one run, same seeds.
//!
//! Target: SmolLM2 (30 layers, dequantised GGUF, CPU). Draft: the same model
//! cut after its first `--draft-layers` layers (early exit into the shared
//! final norm and LM head, [`CausalLm::first_layers`]) — a
//! self-speculative drafter: it shares the tokenizer and every weight, needs
//! no second checkpoint, and costs `draft_layers / 30` of a target forward;
//! an n-gram drafter would propose nothing at most JSON positions.
//! Constraint: zapspec's Earley matcher of the calendar-event schema
//! (`examples/data/event.schema.json`) over the model's 49,152 tokens. Both
//! models condition on a ChatML prompt (`--prompt`, the user turn) through
//! [`SpeculativeDecoder::with_prompt`]; its prefill is shared across
//! sequences and not counted in a round.
//!
//! Per variant: round wall time, Φ̂ share of a round (time inside the
//! estimator / round time), acceptance rate, tokens per round.
//!
//! `cargo run --profile release-fast -p examples --bin fvo_real -- --out DIR`

use std::time::Instant;

use anyhow::Result;
use clap::Parser;
use zapspec_backend::{CausalLm, GgufWeights};
use zapspec_core::prob::seeded_rng;
use zapspec_core::LanguageModel;
use zapspec_earley::{EarleyMatcher, Engine, EngineConfig};
use zapspec_grammar::{simplify, SimplifyConfig};
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions};
use zapspec_phi::NoModel;
use zapspec_phi::{OneStepCheap, PhiEstimator, Uniform};
use zapspec_verify::{
    DecodeState, ForcedTokens, RoundStats, SpecConfig, SpeculativeDecoder, VerifierKind,
};

use examples::fvo::{progress, Timed};
use examples::report::{write_json, MarkdownTable};
use examples::smollm2::SmolLm2;

#[derive(Parser)]
#[command(about = "OneStep-Cheap overhead per FVO-Spec round on SmolLM2")]
struct Args {
    /// Layers of the early-exit draft (of 30).
    #[arg(long, default_value_t = 8)]
    draft_layers: usize,
    /// Draft block length γ.
    #[arg(long, default_value_t = 4)]
    gamma: usize,
    /// Sequences per variant.
    #[arg(long, default_value_t = 6)]
    sequences: usize,
    /// A sequence stops after this many committed tokens.
    #[arg(long, default_value_t = 64)]
    max_committed: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The user turn of the ChatML prompt.
    #[arg(
        long,
        default_value = "Create a calendar event for the team's quarterly review on 2026-12-03; it is confirmed and held online. Answer with one JSON object only."
    )]
    prompt: String,
    #[arg(long, default_value = "results/fvo_real")]
    out: std::path::PathBuf,
}

#[derive(Default, serde::Serialize)]
struct Acc {
    name: String,
    stats: RoundStatsJson,
    wall_s: f64,
    phi_s: f64,
    phi_calls: u64,
}

#[derive(Default, serde::Serialize)]
struct RoundStatsJson {
    rounds: usize,
    drafted: usize,
    accepted: usize,
    emitted: usize,
}

fn run<F: PhiEstimator<EarleyMatcher, NoModel>>(
    dec: &mut SpeculativeDecoder<CausalLm, CausalLm, Timed<F>>,
    start: &EarleyMatcher,
    seed: u64,
    max_committed: usize,
) -> Result<(f64, RoundStats)> {
    let mut rng = seeded_rng(seed);
    let mut st = DecodeState::new(start.clone());
    // keep the prompt's cache (filled once, outside the timed rounds)
    let n = dec.prompt().len();
    let prompt = dec.prompt().to_vec();
    for m in [&mut dec.target, &mut dec.draft] {
        if m.context().len() < n || m.context()[..n] != prompt[..] {
            m.truncate(0);
            m.prefill(&prompt)?;
        }
        m.truncate(n);
    }
    dec.reset_stats();
    let t = Instant::now();
    while !st.is_finished() && st.committed.len() < max_committed {
        dec.round(&mut st, &mut rng)?;
    }
    Ok((t.elapsed().as_secs_f64(), dec.stats()))
}

fn main() -> Result<()> {
    let args = Args::parse();
    let m = SmolLm2::load(GgufWeights::default(), 2048)?;
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("examples/data/event.schema.json")?)?;
    let g = compile_json_schema(&schema, &JsonSchemaOptions::default())?;
    let g = simplify(&g, &SimplifyConfig::default())?.grammar;
    let start = Engine::new(m.vocab.clone())
        .compile(&g, EngineConfig::default())?
        .matcher();
    let prompt = m.prompt(None, &args.prompt)?;
    let target = || m.lm.clone();
    let draft = || m.lm.first_layers(args.draft_layers);
    let cfg = SpecConfig {
        gamma: args.gamma,
        verifier: VerifierKind::FvoSpec,
        max_tokens: usize::MAX,
        // no grammar-forced tokens: keeps the published figures comparable
        forced_tokens: ForcedTokens::off(),
        ..SpecConfig::default()
    };
    let mut du = SpeculativeDecoder::new(target(), draft(), Timed::new(Uniform), cfg.clone())?
        .with_prompt(&prompt);
    let mut dof = SpeculativeDecoder::new(target(), draft(), Timed::new(OneStepCheap::new()), cfg)?
        .with_prompt(&prompt);
    let mut acc = [
        Acc {
            name: "FVO-Spec, Φ̂ ≡ 1 (Uniform; LMS law)".into(),
            ..Acc::default()
        },
        Acc {
            name: "FVO-Spec, OneStep-Cheap".into(),
            ..Acc::default()
        },
    ];
    let pb = progress(args.sequences, "sequences");
    for s in 0..args.sequences {
        let seed = args.seed + s as u64;
        // alternate the order so drift on a shared machine hits both
        for v in if s % 2 == 0 { [0, 1] } else { [1, 0] } {
            let (wall, st) = if v == 0 {
                run(&mut du, &start, seed, args.max_committed)?
            } else {
                run(&mut dof, &start, seed, args.max_committed)?
            };
            let a = &mut acc[v];
            a.wall_s += wall;
            a.stats.rounds += st.rounds;
            a.stats.drafted += st.drafted;
            a.stats.accepted += st.accepted;
            a.stats.emitted += st.emitted;
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    acc[0].phi_s = du.phi.seconds;
    acc[0].phi_calls = du.phi.calls;
    acc[1].phi_s = dof.phi.seconds;
    acc[1].phi_calls = dof.phi.calls;

    let mut t = MarkdownTable::new(&[
        "variant",
        "rounds",
        "round (ms)",
        "Φ̂ per call (µs)",
        "Φ̂ share of a round",
        "acceptance",
        "tokens / round",
    ]);
    for a in &acc {
        let r = a.stats.rounds.max(1) as f64;
        t.row(&[
            a.name.clone(),
            a.stats.rounds.to_string(),
            format!("{:.1}", 1e3 * a.wall_s / r),
            format!("{:.1}", 1e6 * a.phi_s / a.phi_calls.max(1) as f64),
            format!("{:.3}%", 100.0 * a.phi_s / a.wall_s.max(1e-12)),
            format!(
                "{:.3}",
                a.stats.accepted as f64 / a.stats.drafted.max(1) as f64
            ),
            format!("{:.2}", a.stats.emitted as f64 / r),
        ]);
    }
    let md = format!(
        "# OneStep-Cheap overhead per FVO-Spec round, SmolLM2-135M-Instruct target\n\n\
         Command: `fvo_real --draft-layers {} --gamma {} --sequences {} --max-committed {} --seed {}` on {}; \
         ChatML prompt (user turn): {:?}.\n\
         Target SmolLM2 (30 layers, f32-dequantised Q4_1); draft: its first {} layers (early exit); \
         constraint: Earley matcher of `examples/data/event.schema.json` over 49,152 tokens.\n\n{}",
        args.draft_layers,
        args.gamma,
        args.sequences,
        args.max_committed,
        args.seed,
        examples::host::cpu_name(),
        args.prompt,
        args.draft_layers,
        t.render()
    );
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("fvo_real.md"), &md)?;
    write_json(&args.out, "fvo_real", &serde_json::to_value(&acc)?)?;
    println!("{md}");
    Ok(())
}
