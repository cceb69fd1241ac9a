//! The output law of the `zapspec` builder's loop on the real model: bounded
//! Dyck D_{1,3,12} over SmolLM2-135M's `(` / `)` tokens after a ChatML
//! prompt (the language of `fvo_law_gap`), where the exact laws are
//! computable. The prefix tree of the language is enumerated with the
//! model's own conditionals (`PrefixTree`: μ^proj of plain constrained
//! sampling, μ* by exact Φ); then each pipeline draws `--draws` sequences
//! and is tested against its law:
//!
//! - Leviathan with no drafter (plain constrained sampling through the
//!   loop), prompt lookup, and the self-speculative drafter (the model's
//!   first `--draft-layers` layers) must sample μ^proj;
//! - FVO-Spec with exact Φ (no drafter, self-speculative) must sample μ*.
//!
//! Per row: χ² goodness of fit (p-value, cells pooled to expected ≥ 5),
//! TV of the empirical law to its target and to the other law, and the TV
//! noise floor of `--draws` exact draws (mean ± sd over 20 replicates) —
//! the test's power against the alternative is the distance between the two
//! laws, TV(μ^proj, μ*), printed with them.
//!
//! `cargo run --profile release-fast -p examples --bin compose_law -- [--draws N] [--seed S] [--out DIR]`

use anyhow::{anyhow, Result};
use clap::Parser;
use zapspec::{Builder, Constraint, Drafter, NoDraft, PhiEstimator, PromptLookup};
use zapspec_backend::GgufWeights;
use zapspec_core::prob::{seeded_rng, tv};
use zapspec_core::LanguageModel;
use zapspec_phi::NoModel;
use zapspec_testkit::stats::{chi_square, noise_floor, tv_counts};
use zapspec_verify::{MemoLm, PrefixTree, TreePhi};

use examples::fvo::progress;
use examples::report::{write_json, MarkdownTable};
use examples::smollm2::SmolLm2;

#[derive(Parser)]
#[command(about = "The zapspec loop's output law on SmolLM2 against the exact laws")]
struct Args {
    /// Sequences drawn per pipeline.
    #[arg(long, default_value_t = 20_000)]
    draws: usize,
    /// Layers of the self-speculative drafter (of 30).
    #[arg(long, default_value_t = 8)]
    draft_layers: usize,
    /// Draft block length γ.
    #[arg(long, default_value_t = 4)]
    gamma: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The user turn of the prompt.
    #[arg(
        long,
        default_value = "Write a short string of balanced parentheses, nothing else."
    )]
    prompt: String,
    #[arg(long, default_value = "examples/results/compose")]
    out: std::path::PathBuf,
}

#[derive(serde::Serialize)]
struct Row {
    pipeline: String,
    law: &'static str,
    chi2_p: f64,
    dof: usize,
    tv_to_law: f64,
    tv_to_other: f64,
    floor: f64,
    floor_sd: f64,
    seconds: f64,
    target_calls: usize,
    accepted: usize,
    rounds: usize,
}

#[allow(clippy::too_many_arguments)]
fn draw<M, C, D, F>(
    prompt: &[zapspec_core::TokenId],
    name: &str,
    b: Builder<M, C, D, F>,
    index: &std::collections::HashMap<Vec<zapspec_core::TokenId>, usize>,
    law: (&'static str, &[f64]),
    other: &[f64],
    args: &Args,
) -> Result<Row>
where
    M: LanguageModel,
    C: Constraint,
    D: Drafter,
    F: PhiEstimator<C, NoModel>,
{
    let mut p = b.build()?;
    let mut counts = vec![0usize; index.len()];
    let t = std::time::Instant::now();
    let pb = progress(args.draws, name.to_string());
    for _ in 0..args.draws {
        let g = p.generate(prompt)?;
        let slot = index
            .get(&g.tokens)
            .ok_or_else(|| anyhow!("{name}: a draw outside the language: {:?}", g.tokens))?;
        counts[*slot] += 1;
        pb.inc(1);
    }
    pb.finish_and_clear();
    let seconds = t.elapsed().as_secs_f64();
    let fit = chi_square(&counts, law.1);
    let (floor, floor_sd) = noise_floor(&mut seeded_rng(args.seed ^ 0xF100), law.1, args.draws, 20);
    let s = p.stats();
    Ok(Row {
        pipeline: name.into(),
        law: law.0,
        chi2_p: fit.p_value,
        dof: fit.dof,
        tv_to_law: tv_counts(&counts, law.1),
        tv_to_other: tv_counts(&counts, other),
        floor,
        floor_sd,
        seconds,
        target_calls: s.target_calls,
        accepted: s.accepted,
        rounds: s.rounds,
    })
}

fn main() -> Result<()> {
    let args = Args::parse();
    let m = SmolLm2::load(GgufWeights::default(), 2048)?;
    let (c, open, close) = m.bracket_dyck(3, 12)?;
    let prompt = m.prompt(None, &args.prompt)?;
    let t = std::time::Instant::now();
    let mut lm = MemoLm::new(m.lm.clone());
    lm.prefill(&prompt)?;
    let tree = PrefixTree::enumerate(&c, &mut lm, 100_000)?;
    let enum_s = t.elapsed().as_secs_f64();
    let exp = |v: Vec<f64>| v.into_iter().map(f64::exp).collect::<Vec<f64>>();
    let (proj, star) = (exp(tree.log_mu_proj()), exp(tree.log_mu_star()));
    let index = tree.member_index();
    let selfspec = || MemoLm::new(m.lm.first_layers(args.draft_layers));
    let target = || MemoLm::new(m.lm.clone());
    let base = |seed: u64| {
        Builder::new(target(), c.clone())
            .gamma(args.gamma)
            .seed(args.seed.wrapping_mul(1000).wrapping_add(seed))
    };
    let ss = format!("self-speculative {}/30 layers", args.draft_layers);
    let rows = vec![
        draw(
            &prompt,
            "Leviathan, no drafter",
            base(1),
            &index,
            ("μ^proj", &proj),
            &star,
            &args,
        )?,
        draw(
            &prompt,
            "Leviathan, prompt lookup",
            base(2).drafter(PromptLookup::default()),
            &index,
            ("μ^proj", &proj),
            &star,
            &args,
        )?,
        draw(
            &prompt,
            &format!("Leviathan, {ss}"),
            base(3).drafter(selfspec()),
            &index,
            ("μ^proj", &proj),
            &star,
            &args,
        )?,
        draw(
            &prompt,
            "FVO-Spec exact Φ, no drafter",
            base(4).drafter(NoDraft).fvo_spec(tree.exact_phi()),
            &index,
            ("μ*", &star),
            &proj,
            &args,
        )?,
        draw(
            &prompt,
            &format!("FVO-Spec exact Φ, {ss}"),
            base(5).drafter(selfspec()).fvo_spec(tree.exact_phi()),
            &index,
            ("μ*", &star),
            &proj,
            &args,
        )?,
    ];
    let mut t = MarkdownTable::new(&[
        "pipeline",
        "must sample",
        "χ² p (dof)",
        "TV to it",
        "noise floor of exact draws",
        "TV to the other law",
        "target calls / round",
        "accepted / round",
        "s",
    ]);
    for r in &rows {
        t.row(&[
            r.pipeline.clone(),
            r.law.into(),
            format!("{:.3} ({})", r.chi2_p, r.dof),
            format!("{:.4}", r.tv_to_law),
            format!("{:.4} ± {:.4}", r.floor, r.floor_sd),
            format!("{:.4}", r.tv_to_other),
            format!("{:.2}", r.target_calls as f64 / r.rounds.max(1) as f64),
            format!("{:.2}", r.accepted as f64 / r.rounds.max(1) as f64),
            format!("{:.1}", r.seconds),
        ]);
    }
    let md = format!(
        "# The `zapspec` loop's output law on SmolLM2-135M-Instruct\n\n\
         Command: `cargo run --profile release-fast -p examples --bin compose_law -- --draws {} --gamma {} --draft-layers {} --seed {}`. \
         Language: bounded Dyck (one bracket type, depth ≤ 3, length ≤ 12) over SmolLM2's `(` = {open} and `)` = {close}, EOS `<|im_end|>`, \
         after the ChatML prompt {:?}. {} members; the exact laws from the model's own conditionals (prefix tree enumerated in {enum_s:.1} s); \
         TV(μ^proj, μ*) = {:.4} — the alternative each test must tell apart. {} draws per pipeline, sampled at temperature 1.\n\n{}\n",
        args.draws, args.gamma, args.draft_layers, args.seed, args.prompt, index.len(), tv(&proj, &star), args.draws, t.render(),
    );
    println!("{md}");
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("compose_law.md"), &md)?;
    write_json(&args.out, "compose_law", &serde_json::to_value(&rows)?)?;
    Ok(())
}
