//! One constrained speculative decoding loop on the real model, built from
//! parts with the `zapspec` facade: SmolLM2-135M
//! under a JSON Schema, from a ChatML prompt, every combination of drafter
//! (none, prompt lookup, self-speculative: the target's first
//! `--draft-layers` layers) and verifier (Leviathan, FVO-Spec with
//! OneStep-Cheap), plus unconstrained and llguidance-masked decoding (the
//! same loop with llguidance's matcher as the `Constraint`), in one run.
//!
//! The heart of it is README's example:
//!
//! ```ignore
//! let json = zapspec::json_schema(m.vocab.clone(), &schema)?;
//! let out = Builder::new(m.lm.clone(), json)
//!     .drafter(PromptLookup::default())
//!     .build()?
//!     .generate(&m.prompt(None, "Create a calendar event …")?)?;
//! ```
//!
//! Per variant: output tokens, target forwards per output token, mean
//! accepted draft length per round, tokens/s, whether the output validates
//! against the schema (the `jsonschema` crate, independent of the
//! grammar), and — greedy by default — whether it equals the drafter-free
//! loop's output token for token (it must, for every drafter under the same
//! verifier).
//!
//! `--schemas N` sweeps N MaskBench schemas. `--edits N` runs edit tasks
//! (a valid MaskBench instance and an instruction to change one value,
//! under its schema) with Copy-as-Decode's copies as drafts
//! ([`CopyDraft`](zapspec::CopyDraft), the document's tokens from a cursor aligned with the
//! output) beside prompt lookup at the same draft length, and reports
//! whether the edit was applied.
//!
//! `--phi-study` (with `--schemas N`) measures the Φ estimator itself under
//! the Earley constraint: Leviathan beside FVO-Spec with OneStep-Cheap on
//! every candidate and with a candidate cut (`--cut-top-p`, `--cut-max`),
//! and MC(k, h) with batched rollouts on a rollout tree (`--mc-k`,
//! `--mc-horizon`, on the first `--mc-schemas`; `--mc-seq-schemas` adds
//! the one-rollout-at-a-time ablation), each estimator call timed.
//!
//! `scripts/fetch-smollm2.sh && cargo run --release -p examples --bin compose -- [--sampled] [--seed N] [--schemas N | --edits N | --phi-study --schemas N] [--out DIR]`

mod edit;
mod run;
mod tables;
mod trees;
mod variants;

use anyhow::{Context, Result};
use clap::Parser;
use zapspec_backend::GgufWeights;

use examples::report::write_json;
use examples::smollm2::SmolLm2;
use llguidance::ParserFactory;

use edit::{edit_tasks, edit_variants, sweep_variants};
use tables::{phi_table, plot_sweep, plot_tree_sweep, table};
use trees::{tree_sampled_variants, tree_sweep_variants};
use variants::{phi_variants, variants};

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
    /// Edit mode: this many edit tasks (a valid MaskBench instance, drawn
    /// with `--seed`, and an instruction to change one value), under the
    /// instance's schema, with copy drafts beside the other drafters.
    #[arg(long, default_value_t = 0)]
    edits: usize,
    /// Draft length of the copy drafter (and of a prompt-lookup row at the
    /// same length) in edit mode.
    #[arg(long, default_value_t = 16)]
    copy_gamma: usize,
    /// Edit mode: documents of at most this many bytes (compact JSON).
    #[arg(long, default_value_t = 600)]
    max_doc_bytes: usize,
    /// Edit mode: instead of the variant table, the scaling line — no
    /// drafter, then prompt lookup and copy drafts at each of these draft
    /// lengths (comma-separated), with a PNG of the token-rate speed-up.
    #[arg(long, value_delimiter = ',')]
    gamma_sweep: Vec<usize>,
    /// With `--edits` and `--gamma-sweep`: the tree line instead — no
    /// drafter, then tree lookup (multi-match prompt lookup) verified in
    /// tree mode at each draft length × each of these tree widths
    /// (comma-separated; at most width × γ nodes), written to
    /// `compose_tree_scaling.{md,json,png}`.
    #[arg(long, value_delimiter = ',')]
    tree_widths: Vec<usize>,
    /// With `--schemas N`: the sampled tree line instead (temperature 1
    /// whatever `--sampled` says) — no drafter, the self-speculative draft
    /// linear, and its sampled draft trees (`--tree-width` children per
    /// node, `--tree-nodes` nodes, depth ≤ `--gamma`) verified by naive
    /// sampling and by SpecInfer's residual rule, written to
    /// `compose_tree_sampled.{md,json}`.
    #[arg(long)]
    tree_sampled: bool,
    /// Sampled tree line: children drawn per node.
    #[arg(long, default_value_t = 2)]
    tree_width: usize,
    /// Sampled tree line: most nodes of a tree.
    #[arg(long, default_value_t = 16)]
    tree_nodes: usize,
    /// Φ-study mode (with `--schemas N`): no drafter, Leviathan beside
    /// FVO-Spec with OneStep-Cheap scoring every candidate and with the
    /// candidate cut (`--cut-top-p`, `--cut-max`), plus Monte Carlo when
    /// `--mc-k > 0` (on its first `--mc-schemas` schemas); the estimator's
    /// own time is measured around each call, written to
    /// `compose_phi.{md,json}`.
    #[arg(long)]
    phi_study: bool,
    /// Candidate cut of the cut rows: the head's share of `A_t`'s mass.
    #[arg(long, default_value_t = 0.99)]
    cut_top_p: f64,
    /// Candidate cut of the cut rows: at most this many candidates.
    #[arg(long, default_value_t = 16)]
    cut_max: usize,
    /// Φ study: Monte Carlo rollouts per candidate (0: no MC rows).
    #[arg(long, default_value_t = 0)]
    mc_k: usize,
    /// Φ study: Monte Carlo rollout horizon (tokens after the candidate).
    #[arg(long, default_value_t = 8)]
    mc_horizon: usize,
    /// Φ study: the MC rows run on the first this many schemas only.
    #[arg(long, default_value_t = 5)]
    mc_schemas: usize,
    /// Φ study: the MC rows score at most this many candidates.
    #[arg(long, default_value_t = 4)]
    mc_cut_max: usize,
    /// Φ study: on the first this many schemas, also MC with the rollouts
    /// one after another (each from the prefix's KV cache, no rollout tree):
    /// the batching ablation.
    #[arg(long, default_value_t = 0)]
    mc_seq_schemas: usize,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let m = SmolLm2::load(GgufWeights::default(), 4096)?;
    let env = examples::llg::tok_env(&m.vocab);
    let mut factory = ParserFactory::new_simple(&env)?;
    factory.quiet();
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
    let (name, md, rows) = if args.tree_sampled {
        let files = examples::schema_tasks::shuffled_schema_files(&args.maskbench, args.seed)?;
        let n = args.schemas.max(1);
        let pb = examples::fvo::progress(n, "schemas");
        let (mut all, mut skipped) = (Vec::new(), Vec::new());
        for f in &files {
            if all.len() == n {
                break;
            }
            let schema = examples::schema_tasks::read_schema(f)?;
            let user = examples::schema_tasks::schema_instruction(&schema, args.max_schema_bytes)?;
            let prompt = m.prompt(None, &user)?;
            match tree_sampled_variants(&m, &schema, &prompt, &args) {
                Ok(rows) => {
                    all.push(rows);
                    pb.inc(1);
                }
                Err(e) => skipped.push(format!("{}: {e}", f.display())),
            }
        }
        pb.finish_and_clear();
        let md = format!(
            "# Sampled draft trees: naive sampling against SpecInfer's residual verification, MaskBench schemas on SmolLM2-135M-Instruct\n\n\
             Command: `cargo run --profile release-fast -p examples --bin compose -- --tree-sampled --schemas {} --seed {} \
             --draft-layers {} --gamma {} --tree-width {} --tree-nodes {} --max-tokens {}` (sampled, T = 1, Leviathan verifier, \
             every row under the schema's Earley matcher). {} schemas drawn with the seed from the whole shared set ({} refused by \
             the compiler and skipped), prompted as in `compose_maskbench.md`. Draft: the target's first {} layers \
             (self-speculative). Tree rows: the draft model samples a tree breadth first — {} i.i.d. draws from its masked law \
             per node, at most {} nodes, depth ≤ γ = {} (`zapspec_verify::drafter::sampled_tree_from_model`; a repeated draw \
             is a leaf) — scored by the target in one forward under a tree attention mask, then walked: \
             \"naive sampling\" draws each token from the target's masked law and descends if it is a child's token; \
             \"residual\" runs SpecInfer's multi-step speculative sampling (`TreeVerify::Residual`: the draws in draw order, \
             accepted with probability min(1, p/q) against p and then the residuals norm(max(p − q, 0))). Both are exact \
             (the output law is plain constrained sampling's), so the outputs differ only by the random stream. \
             \"accepted / round\": drafted tokens accepted per round (the depth reached); \"target calls / token\": target \
             forwards per output token. CPU, f32-dequantised Q4_1 weights, 2 shared cores; each prompt is prefilled once and \
             not timed; sums over the schemas; one sample per row and schema, so the rows follow different trajectories \
             (token counts differ), and with this few rounds accepted / round varies more between trajectories than between \
             the two rules (per-schema rows in the .json): the rules' effect at equal contexts is measured on toy models in \
             `spec-verify/tests/tree_sampled.rs`.\n\n{}\n",
            args.schemas.max(1), args.seed, args.draft_layers, args.gamma, args.tree_width, args.tree_nodes, args.max_tokens,
            all.len(), skipped.len(), args.draft_layers, args.tree_width, args.tree_nodes, args.gamma, table(&all),
        );
        ("compose_tree_sampled", md, all)
    } else if args.phi_study {
        let files = examples::schema_tasks::shuffled_schema_files(&args.maskbench, args.seed)?;
        let pb = examples::fvo::progress(args.schemas.max(1), "schemas");
        let (mut all, mut skipped) = (Vec::new(), Vec::new());
        for f in &files {
            if all.len() == args.schemas.max(1) {
                break;
            }
            let schema = examples::schema_tasks::read_schema(f)?;
            let user = examples::schema_tasks::schema_instruction(&schema, args.max_schema_bytes)?;
            let prompt = m.prompt(None, &user)?;
            let mc = args.mc_k > 0 && all.len() < args.mc_schemas;
            let mc_seq = mc && all.len() < args.mc_seq_schemas;
            match phi_variants(&m, &schema, &prompt, &args, mc, mc_seq) {
                Ok(rows) => {
                    all.push(rows);
                    pb.inc(1);
                }
                Err(e) => skipped.push(format!("{}: {e}", f.display())),
            }
        }
        pb.finish_and_clear();
        let mc_cmd = if args.mc_k > 0 {
            format!(
                " --mc-k {} --mc-horizon {} --mc-schemas {} --mc-cut-max {} --mc-seq-schemas {}",
                args.mc_k, args.mc_horizon, args.mc_schemas, args.mc_cut_max, args.mc_seq_schemas
            )
        } else {
            String::new()
        };
        let md = format!(
            "# The Φ estimator's cost and effect under the Earley constraint on SmolLM2-135M-Instruct (no drafter)\n\n\
             Command: `{cmd} --phi-study --cut-top-p {} --cut-max {}{mc_cmd}` ({mode}); {} MaskBench schemas drawn with the seed \
             ({} refused by the compiler and skipped), prompted as in `compose_maskbench.md`. CPU, f32-dequantised Q4_1 weights; \
             each prompt is prefilled once and not timed; sums over the schemas a row ran on. \"Φ ms / round\": wall time inside \
             the estimator's calls (measured around each call) per verification round; \"Φ share\": of the row's whole time. \
             \"|A_t| / call\": candidates per Φ call; \"constraint ops / call\": advances, masks and walks on forks the estimator \
             reports; \"Φ forwards / call\": model forwards of the estimator (MC: the batched rollout forwards plus one to \
             position its model copy); \"all forwards / token\": the target's and the estimator's. The MC rows run on the \
             first {} schemas only (each rollout step is one forward of the 135M model on CPU: expensive), so compare them \
             with the other rows of `compose_phi.json` on the same schemas.\n\n{}\n",
            args.cut_top_p, args.cut_max, all.len(), skipped.len(), args.mc_schemas.min(all.len()), phi_table(&all),
        );
        ("compose_phi", md, all)
    } else if args.edits > 0 && !args.gamma_sweep.is_empty() && !args.tree_widths.is_empty() {
        let (tasks, looked) = edit_tasks(&args)?;
        let pb = examples::fvo::progress(tasks.len(), "edits");
        let mut all = Vec::new();
        for t in &tasks {
            all.push(tree_sweep_variants(&m, t, &args).with_context(|| t.file.clone())?);
            pb.inc(1);
        }
        pb.finish_and_clear();
        std::fs::create_dir_all(&args.out)?;
        let png = args.out.join("compose_tree_scaling.png");
        if let Err(e) = examples::host::register_font()
            .and_then(|()| plot_tree_sweep(&png, &args.gamma_sweep, &args.tree_widths, &all))
        {
            eprintln!("no plot: {e}");
        }
        let list = |v: &[usize]| {
            v.iter()
                .map(|g| g.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let md = format!(
            "# The tree line: draft length × tree width against token rate and acceptance, edits under a JSON Schema on SmolLM2-135M-Instruct\n\n\
             Command: `{cmd} --edits {} --max-doc-bytes {} --gamma-sweep {} --tree-widths {}` ({mode}); the edit tasks of `compose_edits.md` \
             ({} tasks from {} MaskBench files, same seed), every row under the schema's Earley matcher. Drafter: tree lookup \
             (`zapspec_verify::TreeLookup`: the continuations of up to 8 earlier occurrences of the context's last 3/2/1 tokens, \
             merged by shared prefix) in tree mode (`Builder::tree`): a tree of depth γ, at most `width` children per node and \
             width × γ nodes; the nodes the grammar refuses are cut with the masks of all nodes in one walk \
             (`draft_tree_masks`), the rest scored in one forward under a tree attention mask (`CausalLm::tree_logits`), \
             then walked (the verifier's argmax at each node; a child with that token is accepted). Width 1 is a chain \
             (prompt lookup's first match). \"nodes scored / round\": drafted nodes the target scored per round. CPU, \
             f32-dequantised Q4_1 weights; each prompt is prefilled once and not timed; sums over the tasks. \
             Plot: `compose_tree_scaling.png` (token-rate speed-up over no drafter; mean accepted tokens per round).\n\n{}\n",
            args.edits, args.max_doc_bytes, list(&args.gamma_sweep), list(&args.tree_widths), tasks.len(), looked, table(&all),
        );
        ("compose_tree_scaling", md, all)
    } else if args.edits > 0 && !args.gamma_sweep.is_empty() {
        let (tasks, looked) = edit_tasks(&args)?;
        let pb = examples::fvo::progress(tasks.len(), "edits");
        let mut all = Vec::new();
        for t in &tasks {
            all.push(sweep_variants(&m, t, &args).with_context(|| t.file.clone())?);
            pb.inc(1);
        }
        pb.finish_and_clear();
        std::fs::create_dir_all(&args.out)?;
        let png = args.out.join("compose_scaling.png");
        // a plot that cannot be drawn (no font on this host) is reported,
        // and the tables are still written
        if let Err(e) =
            examples::host::register_font().and_then(|()| plot_sweep(&png, &args.gamma_sweep, &all))
        {
            eprintln!("no plot: {e}");
        }
        let gs: Vec<String> = args.gamma_sweep.iter().map(|g| g.to_string()).collect();
        let md = format!(
            "# The scaling line: draft length against token rate and acceptance, edits under a JSON Schema on SmolLM2-135M-Instruct\n\n\
             Command: `{cmd} --edits {} --max-doc-bytes {} --gamma-sweep {}` ({mode}); the edit tasks of `compose_edits.md` \
             ({} tasks from {} MaskBench files, same seed), Leviathan verification, every row under the schema's Earley matcher. \
             Linear drafts only; the tree-width axis is `compose_tree_scaling.md` (`--tree-widths`). \
             Plot: `compose_scaling.png` (token-rate speed-up over no drafter; mean accepted tokens per round).\n\n{}\n",
            args.edits, args.max_doc_bytes, gs.join(","), tasks.len(), looked, table(&all),
        );
        ("compose_scaling", md, all)
    } else if args.edits > 0 {
        let (tasks, looked) = edit_tasks(&args)?;
        let pb = examples::fvo::progress(tasks.len(), "edits");
        let mut all = Vec::new();
        for t in &tasks {
            all.push(edit_variants(&m, &factory, t, &args).with_context(|| t.file.clone())?);
            pb.inc(1);
        }
        pb.finish_and_clear();
        let md = format!(
            "# Edits under a JSON Schema on SmolLM2-135M-Instruct: copy drafts beside the other drafters, built with the `zapspec` builder\n\n\
             Command: `{cmd} --edits {} --copy-gamma {} --max-doc-bytes {}` ({mode}); {} edit tasks from {} MaskBench files in seeded \
             order: the first valid test instance of a schema zapspec compiles, in the grammar's key order, 60–{} bytes of compact \
             JSON, and one leaf changed (`s` → `s-v2`, `n` → `n+1`, `b` → `!b`; the first leaf in seeded order whose change keeps \
             the document valid). ChatML prompt: \"Here is a JSON document: … Change the value at JSON pointer P from OLD to NEW \
             and keep everything else unchanged. Reply with the whole updated JSON document only, on one line.\" The copy drafter's \
             source is the document's tokens. CPU, f32-dequantised Q4_1 weights; each prompt is prefilled once and not timed; sums \
             over the tasks. \"edit applied\": the output parses to the edited document.\n\n{}\n\nTasks: {}\n",
            args.edits, args.copy_gamma, args.max_doc_bytes, tasks.len(), looked, args.max_doc_bytes, table(&all),
            tasks.iter().map(|t| format!("`{}`", t.file)).collect::<Vec<_>>().join(", "),
        );
        ("compose_edits", md, all)
    } else if args.schemas == 0 {
        let schema: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&args.schema).with_context(|| format!("{:?}", args.schema))?,
        )?;
        let prompt = m.prompt(None, &args.prompt)?;
        let rows = variants(&m, &factory, &schema, &prompt, &args)?;
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
            match variants(&m, &factory, &schema, &prompt, &args) {
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
