//! One constrained speculative decoding loop on the real model, built from
//! parts with the `zapspec` facade (issue 18's first step): SmolLM2-135M
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
//! `--schemas N` sweeps N MaskBench schemas. `--edits N` runs edit tasks
//! (a valid MaskBench instance and an instruction to change one value,
//! under its schema) with Copy-as-Decode's copies as drafts
//! ([`CopyDraft`], the document's tokens from a cursor aligned with the
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

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use zapspec::{
    Builder, Constraint, CopyDraft, Drafter, NoDraft, OneStepCheap, PhiEstimator, PromptLookup,
    TreeConfig, TreeLookup, TreeVerify,
};
use zapspec_backend::{CausalLm, GgufWeights};
use zapspec_core::{LanguageModel, TokenId};
use zapspec_phi::{CandidateCut, MonteCarlo, MonteCarloConfig, NoModel, WithModel};

use examples::llg::{compact_schema, LlgConstraint};
use examples::report::{write_json, MarkdownTable};
use examples::smollm2::SmolLm2;
use llguidance::api::TopLevelGrammar;
use llguidance::ParserFactory;

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

/// The work of a Φ estimator over one run, measured by [`Timed`]: wall
/// time inside its calls, calls, candidates `Σ|A_t|`, and the work it
/// reports ([`zapspec_phi::PhiCost`]).
#[derive(serde::Serialize, Clone, Copy, Debug, Default)]
struct PhiClock {
    seconds: f64,
    calls: u64,
    candidates: u64,
    forwards: u64,
    rollouts: u64,
    constraint_ops: u64,
}

/// Times every call of the estimator inside (the loop's Φ cost) into a
/// shared [`PhiClock`]; values are the inner estimator's.
struct Timed<E> {
    inner: E,
    clock: std::rc::Rc<std::cell::Cell<PhiClock>>,
}

impl<E> Timed<E> {
    fn new(inner: E) -> (Self, std::rc::Rc<std::cell::Cell<PhiClock>>) {
        let clock = std::rc::Rc::new(std::cell::Cell::new(PhiClock::default()));
        (
            Timed {
                inner,
                clock: clock.clone(),
            },
            clock,
        )
    }

    fn record(&self, t: Instant, n: usize, r: Option<&zapspec_phi::PhiResult>) {
        let mut c = self.clock.get();
        c.seconds += t.elapsed().as_secs_f64();
        c.calls += 1;
        c.candidates += n as u64;
        if let Some(Ok(w)) = r {
            c.forwards += w.forwards;
            c.rollouts += w.rollouts;
            c.constraint_ops += w.constraint_ops;
        }
        self.clock.set(c);
    }
}

impl<C: Constraint, E: PhiEstimator<C, NoModel>> PhiEstimator<C, NoModel> for Timed<E> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn log_phi_into(
        &mut self,
        q: &zapspec_phi::PhiQuery<'_, C>,
        model: &mut NoModel,
        out: &mut [f64],
    ) -> zapspec_phi::PhiResult {
        let t = Instant::now();
        let r = self.inner.log_phi_into(q, model, out);
        self.record(t, q.mask.count(), Some(&r));
        r
    }
    fn log_phi_shifted(
        &mut self,
        q: &zapspec_phi::PhiQuery<'_, C>,
        model: &mut NoModel,
        out: &mut [f64],
    ) -> zapspec_phi::PhiResult {
        let t = Instant::now();
        let r = self.inner.log_phi_shifted(q, model, out);
        self.record(t, q.mask.count(), Some(&r));
        r
    }
    fn log_phi_shifted_compact(
        &mut self,
        q: &zapspec_phi::PhiQuery<'_, C>,
        model: &mut NoModel,
        valid: zapspec_phi::ValidList<'_>,
        out: &mut [f64],
    ) -> Option<zapspec_phi::PhiResult> {
        let t = Instant::now();
        let r = self.inner.log_phi_shifted_compact(q, model, valid, out)?;
        self.record(t, valid.ids.len(), Some(&r));
        Some(r)
    }
}

#[derive(serde::Serialize, Clone)]
struct Row {
    variant: String,
    tokens: usize,
    target_calls: usize,
    draft_calls: usize,
    rounds: usize,
    accepted: usize,
    /// Drafted nodes (tree mode: every node proposed) and the nodes the
    /// target scored (after the constraint's cut).
    nodes_drafted: usize,
    nodes_scored: usize,
    seconds: f64,
    /// Stopped at `--max-tokens` before EOS.
    capped: bool,
    valid: Option<bool>,
    same_as_plain: Option<bool>,
    /// Edit mode: the output is the edited document (as JSON values).
    edit_applied: Option<bool>,
    /// Φ-study mode: the Φ estimator's own work ([`PhiClock`]).
    #[serde(default)]
    phi: Option<PhiClock>,
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
    gamma: usize,
    args: &Args,
    validator: Option<&jsonschema::Validator>,
) -> Result<(Row, Vec<TokenId>)>
where
    C: Constraint,
    D: Drafter,
    F: PhiEstimator<C, NoModel>,
{
    run_shaped(
        name, m, base, constraint, drafter, fvo, prompt, gamma, None, args, validator,
    )
}

/// A draft-tree shape and how its sampled nodes are verified.
type TreeMode = (TreeConfig, TreeVerify);

/// [`run`] with a draft-tree shape (`Some`: tree mode).
#[allow(clippy::too_many_arguments)]
fn run_shaped<C, D, F>(
    name: &str,
    m: &SmolLm2,
    base: &CausalLm,
    constraint: C,
    drafter: D,
    fvo: Option<F>,
    prompt: &[TokenId],
    gamma: usize,
    tree: Option<TreeMode>,
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
        .gamma(gamma)
        .seed(args.seed)
        .max_tokens(args.max_tokens);
    let b = if args.sampled || args.tree_sampled {
        b
    } else {
        b.greedy()
    };
    let b = match tree {
        Some((shape, how)) => b.tree(shape).tree_verify(how),
        None => b,
    };
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
            nodes_drafted: stats.nodes_drafted,
            nodes_scored: stats.nodes_scored,
            seconds,
            capped,
            valid,
            same_as_plain: None,
            edit_applied: None,
            phi: None,
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

/// Whether two outputs of the same loop are the same: equal, or, where
/// both stopped at the cap `cap` (EOS included, so at least `cap − 1`
/// tokens; a speculative round may commit up to γ tokens past it), equal
/// on their common prefix.
fn same_output(a: &[TokenId], b: &[TokenId], cap: usize) -> bool {
    let capped = |x: &[TokenId]| x.len() + 1 >= cap;
    if capped(a) && capped(b) {
        let n = a.len().min(b.len());
        a[..n] == b[..n]
    } else {
        a == b
    }
}

/// The llguidance-masked row: the same loop with llguidance's matcher as
/// the constraint (its compact JSON, like zapspec's); a schema llguidance
/// refuses gives an empty row (no tokens, validity unknown) that says so.
#[allow(clippy::too_many_arguments)]
fn llg_run<D: Drafter>(
    name: &str,
    m: &SmolLm2,
    base: &CausalLm,
    factory: &ParserFactory,
    schema: &serde_json::Value,
    drafter: D,
    prompt: &[TokenId],
    gamma: usize,
    args: &Args,
    validator: Option<&jsonschema::Validator>,
) -> Result<(Row, Vec<TokenId>)> {
    let grammar = TopLevelGrammar::from_json_schema(compact_schema(schema));
    match LlgConstraint::new(factory, grammar, &m.vocab) {
        Ok(c) => run(
            name,
            m,
            base,
            c,
            drafter,
            None::<OneStepCheap>,
            prompt,
            gamma,
            args,
            validator,
        ),
        Err(e) => Ok((
            Row {
                variant: name.into(),
                tokens: 0,
                target_calls: 0,
                draft_calls: 0,
                rounds: 0,
                accepted: 0,
                nodes_drafted: 0,
                nodes_scored: 0,
                seconds: 0.0,
                capped: false,
                valid: None,
                same_as_plain: None,
                edit_applied: None,
                phi: None,
                text: format!("llguidance refused the schema: {e}"),
            },
            Vec::new(),
        )),
    }
}

/// Every variant on one task; the prompt is prefilled once into `base`.
fn variants(
    m: &SmolLm2,
    factory: &ParserFactory,
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
        args.gamma,
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
        args.gamma,
        args,
        v,
    )?;
    rows.push(r);
    let (r, _) = llg_run(
        "llguidance-masked, no drafter (Leviathan)",
        m,
        b,
        factory,
        schema,
        NoDraft,
        prompt,
        args.gamma,
        args,
        v,
    )?;
    rows.push(r);
    let cap = args.max_tokens;
    let mut push = |(mut r, t): (Row, Vec<TokenId>), base: &[TokenId]| {
        r.same_as_plain = Some(same_output(&t, base, cap));
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
            args.gamma,
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
            args.gamma,
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
        args.gamma,
        args,
        v,
    )?;
    rows.push(r);
    let mut push = |(mut r, t): (Row, Vec<TokenId>)| {
        r.same_as_plain = Some(same_output(&t, &fplain, cap));
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
        args.gamma,
        args,
        v,
    )?);
    let ss = format!(
        "constrained + self-speculative {}/30 layers (FVO-Spec, OneStep-Cheap)",
        args.draft_layers
    );
    push(run(
        &ss,
        m,
        b,
        json,
        selfspec()?,
        fvo(),
        prompt,
        args.gamma,
        args,
        v,
    )?);
    Ok(rows)
}

/// The Φ study on one schema (no drafter): Leviathan; FVO-Spec with
/// OneStep-Cheap scoring every candidate (the estimator's default) and
/// with the candidate cut; and, when `mc` holds, FVO-Spec with Monte Carlo
/// rollouts (batched on a rollout tree of the target's own KV cache,
/// [`zapspec_phi::WithModel`] over a copy of the prompted model) under a
/// cut of at most `--mc-cut-max` candidates. Every FVO row records its
/// estimator's time ([`Timed`]).
fn phi_variants(
    m: &SmolLm2,
    schema: &serde_json::Value,
    prompt: &[TokenId],
    args: &Args,
    mc: bool,
    mc_seq: bool,
) -> Result<Vec<Row>> {
    let validator = jsonschema::validator_for(schema).ok();
    let json = zapspec::json_schema(m.vocab.clone(), schema)?;
    let mut base = m.lm.clone();
    base.truncate(0);
    base.prefill(prompt)?;
    let v = validator.as_ref();
    let b = &base;
    let mut rows = Vec::new();
    let (r, _) = run(
        "constrained, no drafter (Leviathan)",
        m,
        b,
        json.clone(),
        NoDraft,
        None::<OneStepCheap>,
        prompt,
        args.gamma,
        args,
        v,
    )?;
    rows.push(r);
    let mut timed_run = |name: &str, phi: Box<dyn PhiEstimator<_, NoModel>>| -> Result<()> {
        let (t, clock) = Timed::new(phi);
        let (mut r, _) = run(
            name,
            m,
            b,
            json.clone(),
            NoDraft,
            Some(t),
            prompt,
            args.gamma,
            args,
            v,
        )?;
        r.phi = Some(clock.get());
        rows.push(r);
        Ok(())
    };
    timed_run(
        "FVO-Spec, OneStep-Cheap (every candidate)",
        Box::new(OneStepCheap::new()),
    )?;
    let cut = CandidateCut::new(args.cut_top_p, args.cut_max);
    timed_run(
        &format!("FVO-Spec, OneStep-Cheap{}", cut.label()),
        Box::new(OneStepCheap::with_cut(cut)?),
    )?;
    if mc {
        // the estimator's own copy of the target, its KV cache already
        // holding the prompt (positioned at each query's prefix by
        // WithModel, which reuses the common prefix)
        let lm = base.clone();
        let cfg = MonteCarloConfig {
            k: args.mc_k,
            horizon: args.mc_horizon,
            seed: args.seed,
            cut: CandidateCut::new(args.cut_top_p, args.mc_cut_max),
            batched: true,
            ..Default::default()
        };
        let phi = WithModel::new(MonteCarlo::with_config(cfg), lm.clone()).with_prompt(prompt);
        timed_run(
            &format!(
                "FVO-Spec, MC(k={}, h={}){} batched",
                args.mc_k,
                args.mc_horizon,
                cfg.cut.label()
            ),
            Box::new(phi),
        )?;
        if mc_seq {
            let cfg = MonteCarloConfig {
                batched: false,
                ..cfg
            };
            let phi = WithModel::new(MonteCarlo::with_config(cfg), lm).with_prompt(prompt);
            timed_run(
                &format!(
                    "FVO-Spec, MC(k={}, h={}){} one rollout at a time",
                    args.mc_k,
                    args.mc_horizon,
                    cfg.cut.label()
                ),
                Box::new(phi),
            )?;
        }
    }
    Ok(rows)
}

/// The Φ study's table: per variant, sums over the schemas it ran on.
fn phi_table(rows: &[Vec<Row>]) -> String {
    let mut t = MarkdownTable::new(&[
        "variant",
        "tasks",
        "tokens",
        "target calls / token",
        "all forwards / token",
        "tokens/s",
        "ms / round",
        "Φ ms / round",
        "Φ share of time",
        "|A_t| / call",
        "constraint ops / call",
        "Φ forwards / call",
        "valid",
        "hit the cap",
    ]);
    let mut names: Vec<String> = Vec::new();
    for r in rows.iter().flatten() {
        if !names.contains(&r.variant) {
            names.push(r.variant.clone());
        }
    }
    for name in names {
        let col: Vec<&Row> = rows
            .iter()
            .flatten()
            .filter(|r| r.variant == name)
            .collect();
        let sum = |f: &dyn Fn(&Row) -> f64| col.iter().map(|r| f(r)).sum::<f64>();
        let tokens = sum(&|r| r.tokens as f64);
        let secs = sum(&|r| r.seconds);
        let rounds = sum(&|r| r.rounds as f64).max(1.0);
        let phi = |f: &dyn Fn(&PhiClock) -> f64| sum(&|r| r.phi.as_ref().map_or(0.0, f));
        let has_phi = col.iter().any(|r| r.phi.is_some());
        let calls = phi(&|c| c.calls as f64).max(1.0);
        let opt = |x: f64, digits: usize| {
            if has_phi {
                format!("{x:.digits$}")
            } else {
                "—".into()
            }
        };
        t.row(&[
            name.clone(),
            col.len().to_string(),
            format!("{tokens:.0}"),
            format!("{:.2}", sum(&|r| r.target_calls as f64) / tokens.max(1.0)),
            format!(
                "{:.2}",
                (sum(&|r| r.target_calls as f64) + phi(&|c| c.forwards as f64)) / tokens.max(1.0)
            ),
            format!("{:.1}", tokens / secs.max(1e-9)),
            format!("{:.1}", 1e3 * secs / rounds),
            opt(1e3 * phi(&|c| c.seconds) / rounds, 3),
            if has_phi {
                format!("{:.2}%", 100.0 * phi(&|c| c.seconds) / secs.max(1e-9))
            } else {
                "—".into()
            },
            opt(phi(&|c| c.candidates as f64) / calls, 0),
            opt(phi(&|c| c.constraint_ops as f64) / calls, 1),
            opt(phi(&|c| c.forwards as f64) / calls, 1),
            format!(
                "{}/{}",
                col.iter().filter(|r| r.valid == Some(true)).count(),
                col.len()
            ),
            format!("{}/{}", col.iter().filter(|r| r.capped).count(), col.len()),
        ]);
    }
    t.render()
}

/// One edit task: a valid instance of a MaskBench schema, written in the
/// grammar's key order, and an instruction to change one value.
struct EditTask {
    file: String,
    schema: serde_json::Value,
    /// The document as the prompt quotes it (compact JSON).
    doc: String,
    /// The edited document.
    expected: serde_json::Value,
    /// The user turn.
    instruction: String,
}

/// The leaves (strings, numbers, booleans) of `v` with their JSON pointers.
fn leaves(v: &serde_json::Value, ptr: String, out: &mut Vec<(String, serde_json::Value)>) {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let k = k.replace('~', "~0").replace('/', "~1");
                leaves(x, format!("{ptr}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                leaves(x, format!("{ptr}/{i}"), out);
            }
        }
        Value::Null => {}
        x => out.push((ptr, x.clone())),
    }
}

/// A changed value of the same type: `s` → `s-v2`, `n` → `n + 1`, `b` → `!b`.
fn changed(v: &serde_json::Value) -> Option<serde_json::Value> {
    use serde_json::Value;
    match v {
        Value::String(x) => Some(Value::String(format!("{x}-v2"))),
        Value::Bool(b) => Some(Value::Bool(!b)),
        Value::Number(n) => n
            .as_i64()
            .map(|i| Value::from(i + 1))
            .or_else(|| n.as_f64().map(|f| Value::from(f + 1.0))),
        _ => None,
    }
}

/// Edit tasks from the MaskBench files in seeded order: the first valid
/// test instance of each schema that zapspec compiles, rewritten in the
/// grammar's key order (`canonical_instances`), of 60 to `--max-doc-bytes`
/// bytes, and the first leaf (in seeded order) whose changed value keeps
/// the document valid (the `jsonschema` crate).
fn edit_tasks(args: &Args) -> Result<(Vec<EditTask>, usize)> {
    use rand::seq::SliceRandom;
    let files = examples::schema_tasks::shuffled_schema_files(&args.maskbench, args.seed)?;
    let mut rng = zapspec_core::prob::seeded_rng(args.seed);
    let (mut out, mut looked) = (Vec::new(), 0);
    for f in &files {
        if out.len() == args.edits {
            break;
        }
        looked += 1;
        let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f)?)?;
        let Some(schema) = file.get("schema").cloned() else {
            continue;
        };
        let Ok(validator) = jsonschema::validator_for(&schema) else {
            continue;
        };
        let Some(inst) = file["tests"].as_array().and_then(|t| {
            t.iter()
                .find(|x| x["valid"] == true && (x["data"].is_object() || x["data"].is_array()))
                .map(|x| x["data"].clone())
        }) else {
            continue;
        };
        let opts = zapspec_jsonschema::JsonSchemaOptions::default();
        if zapspec_jsonschema::compile_json_schema(&schema, &opts).is_err() {
            continue;
        }
        let Some(doc) = zapspec_jsonschema::canonical_instances(&schema, &inst, &opts)
            .ok()
            .and_then(|c| c.into_iter().next())
        else {
            continue;
        };
        let text = serde_json::to_string(&doc)?;
        if text.len() < 60 || text.len() > args.max_doc_bytes || !validator.is_valid(&doc) {
            continue;
        }
        let mut ls = Vec::new();
        leaves(&doc, String::new(), &mut ls);
        ls.shuffle(&mut rng);
        let edit = ls.into_iter().find_map(|(ptr, old)| {
            let new = changed(&old)?;
            let mut e = doc.clone();
            *e.pointer_mut(&ptr)? = new.clone();
            validator.is_valid(&e).then_some((ptr, old, new, e))
        });
        let Some((ptr, old, new, expected)) = edit else {
            continue;
        };
        let instruction = format!(
            "Here is a JSON document:\n{text}\n\nChange the value at JSON pointer {ptr} from {old} to {new} and keep everything else unchanged. Reply with the whole updated JSON document only, on one line."
        );
        out.push(EditTask {
            file: f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            schema,
            doc: text,
            expected,
            instruction,
        });
    }
    Ok((out, looked))
}

/// What every row of an edit task shares: the ChatML prompt, the schema's
/// validator and Earley matcher, the document's tokens (the copy source)
/// and the model with the prompt prefilled once (untimed).
struct EditSetup {
    prompt: Vec<TokenId>,
    validator: Option<jsonschema::Validator>,
    json: zapspec_earley::EarleyMatcher,
    source: Vec<TokenId>,
    base: CausalLm,
}

impl EditSetup {
    fn new(m: &SmolLm2, task: &EditTask) -> Result<Self> {
        let prompt = m.prompt(None, &task.instruction)?;
        let mut base = m.lm.clone();
        base.truncate(0);
        base.prefill(&prompt)?;
        Ok(EditSetup {
            validator: jsonschema::validator_for(&task.schema).ok(),
            json: zapspec::json_schema(m.vocab.clone(), &task.schema)?,
            source: m.vocab.encode(&task.doc)?,
            prompt,
            base,
        })
    }
}

/// The rows of one edit task, marked: whether each output is the edited
/// document, and whether it equals the output of the row `plain_of(i)`
/// names (its drafter-free baseline; `None`: no comparison).
fn finish_edit(
    mut rows: Vec<(Row, Vec<TokenId>)>,
    task: &EditTask,
    cap: usize,
    plain_of: impl Fn(usize) -> Option<usize>,
) -> Vec<Row> {
    let outputs: Vec<Vec<TokenId>> = rows.iter().map(|(_, t)| t.clone()).collect();
    for (i, (r, t)) in rows.iter_mut().enumerate() {
        r.edit_applied = Some(
            serde_json::from_str::<serde_json::Value>(&r.text).is_ok_and(|j| j == task.expected),
        );
        r.same_as_plain = plain_of(i).map(|j| same_output(t, &outputs[j], cap));
    }
    rows.into_iter().map(|(r, _)| r).collect()
}

/// The edit variants on one task (greedy unless `--sampled`): no drafter,
/// prompt lookup at γ and at the copy length, copy drafts of the document,
/// each with Leviathan; no drafter and copy drafts with FVO-Spec
/// (OneStep-Cheap); llguidance's masks with no drafter and with copy
/// drafts; and unconstrained decoding.
fn edit_variants(
    m: &SmolLm2,
    factory: &ParserFactory,
    task: &EditTask,
    args: &Args,
) -> Result<Vec<Row>> {
    let EditSetup {
        prompt,
        validator,
        json,
        source,
        base,
    } = EditSetup::new(m, task)?;
    let free = zapspec::Unconstrained::new(
        zapspec_core::Vocabulary::len(&*m.vocab),
        Constraint::eos(&json),
    );
    let none: Option<OneStepCheap> = None;
    let fvo = || Some(OneStepCheap::new());
    let v = validator.as_ref();
    let (b, p, g, cg) = (&base, &prompt[..], args.gamma, args.copy_gamma);
    let copy = || CopyDraft::new(source.clone());
    let rows = vec![
        run(
            "unconstrained, no drafter",
            m,
            b,
            free,
            NoDraft,
            none.clone(),
            p,
            g,
            args,
            v,
        )?,
        run(
            "constrained, no drafter (Leviathan)",
            m,
            b,
            json.clone(),
            NoDraft,
            none.clone(),
            p,
            g,
            args,
            v,
        )?,
        run(
            &format!("constrained + prompt lookup γ={g} (Leviathan)"),
            m,
            b,
            json.clone(),
            PromptLookup::default(),
            none.clone(),
            p,
            g,
            args,
            v,
        )?,
        run(
            &format!("constrained + prompt lookup γ={cg} (Leviathan)"),
            m,
            b,
            json.clone(),
            PromptLookup::default(),
            none.clone(),
            p,
            cg,
            args,
            v,
        )?,
        run(
            &format!("constrained + copy drafts γ={cg} (Leviathan)"),
            m,
            b,
            json.clone(),
            copy(),
            none.clone(),
            p,
            cg,
            args,
            v,
        )?,
        run(
            "constrained, no drafter (FVO-Spec, OneStep-Cheap)",
            m,
            b,
            json.clone(),
            NoDraft,
            fvo(),
            p,
            g,
            args,
            v,
        )?,
        run(
            &format!("constrained + copy drafts γ={cg} (FVO-Spec, OneStep-Cheap)"),
            m,
            b,
            json,
            copy(),
            fvo(),
            p,
            cg,
            args,
            v,
        )?,
        llg_run(
            "llguidance-masked, no drafter (Leviathan)",
            m,
            b,
            factory,
            &task.schema,
            NoDraft,
            p,
            g,
            args,
            v,
        )?,
        llg_run(
            &format!("llguidance-masked + copy drafts γ={cg} (Leviathan)"),
            m,
            b,
            factory,
            &task.schema,
            copy(),
            p,
            cg,
            args,
            v,
        )?,
    ];
    // a schema llguidance refused has no llguidance baseline
    let llg_refused = rows[7].1.is_empty();
    Ok(finish_edit(rows, task, args.max_tokens, |i| match i {
        2..=4 => Some(1),
        6 => Some(5),
        8 if !llg_refused => Some(7),
        _ => None,
    }))
}

/// The scaling line on one edit task: no drafter, then prompt lookup and
/// copy drafts at each draft length of `--gamma-sweep` (Leviathan, greedy
/// unless `--sampled`).
fn sweep_variants(m: &SmolLm2, task: &EditTask, args: &Args) -> Result<Vec<Row>> {
    let EditSetup {
        prompt,
        validator,
        json,
        source,
        base,
    } = EditSetup::new(m, task)?;
    let none: Option<OneStepCheap> = None;
    let v = validator.as_ref();
    let (b, p) = (&base, &prompt[..]);
    let mut rows = vec![run(
        "constrained, no drafter (Leviathan)",
        m,
        b,
        json.clone(),
        NoDraft,
        none.clone(),
        p,
        1,
        args,
        v,
    )?];
    for &g in &args.gamma_sweep {
        rows.push(run(
            &format!("prompt lookup γ={g}"),
            m,
            b,
            json.clone(),
            PromptLookup::default(),
            none.clone(),
            p,
            g,
            args,
            v,
        )?);
        rows.push(run(
            &format!("copy drafts γ={g}"),
            m,
            b,
            json.clone(),
            CopyDraft::new(source.clone()),
            none.clone(),
            p,
            g,
            args,
            v,
        )?);
    }
    Ok(finish_edit(rows, task, args.max_tokens, |i| {
        (i > 0).then_some(0)
    }))
}

/// The sampled tree line on one schema (temperature 1, Leviathan): no
/// drafter, the self-speculative draft (the target's first
/// `--draft-layers` layers) linear, then its sampled draft trees
/// (`zapspec_verify::drafter::sampled_tree_from_model`) verified by naive
/// sampling and by SpecInfer's residual rule.
fn tree_sampled_variants(
    m: &SmolLm2,
    schema: &serde_json::Value,
    prompt: &[TokenId],
    args: &Args,
) -> Result<Vec<Row>> {
    let validator = jsonschema::validator_for(schema).ok();
    let json = zapspec::json_schema(m.vocab.clone(), schema)?;
    let mut base = m.lm.clone();
    base.truncate(0);
    base.prefill(prompt)?;
    let full = m.lm.model().clone();
    let selfspec = || -> Result<CausalLm> {
        let mut d = CausalLm::new(Arc::new(full.first_layers(args.draft_layers)));
        d.prefill(prompt)?;
        Ok(d)
    };
    let none: Option<OneStepCheap> = None;
    let v = validator.as_ref();
    let b = &base;
    let shape = TreeConfig {
        max_width: args.tree_width,
        max_nodes: args.tree_nodes,
    };
    let mut rows = Vec::new();
    rows.push(
        run(
            "constrained, no drafter",
            m,
            b,
            json.clone(),
            NoDraft,
            none.clone(),
            prompt,
            args.gamma,
            args,
            v,
        )?
        .0,
    );
    rows.push(
        run(
            &format!("self-spec linear γ={} (Leviathan rule)", args.gamma),
            m,
            b,
            json.clone(),
            selfspec()?,
            none.clone(),
            prompt,
            args.gamma,
            args,
            v,
        )?
        .0,
    );
    for (how, name) in [
        (TreeVerify::Naive, "naive sampling"),
        (TreeVerify::Residual, "residual (SpecInfer)"),
    ] {
        rows.push(
            run_shaped(
                &format!(
                    "self-spec sampled tree γ={} width={} nodes={}, {name}",
                    args.gamma, args.tree_width, args.tree_nodes
                ),
                m,
                b,
                json.clone(),
                selfspec()?,
                none.clone(),
                prompt,
                args.gamma,
                Some((shape, how)),
                args,
                v,
            )?
            .0,
        );
    }
    Ok(rows)
}

/// The tree line on one edit task: no drafter, then tree lookup in tree
/// mode at each draft length of `--gamma-sweep` × each width of
/// `--tree-widths` (at most width × γ nodes; Leviathan, greedy unless
/// `--sampled`). Rows: the baseline, then γ-major.
fn tree_sweep_variants(m: &SmolLm2, task: &EditTask, args: &Args) -> Result<Vec<Row>> {
    let EditSetup {
        prompt,
        validator,
        json,
        base,
        ..
    } = EditSetup::new(m, task)?;
    let none: Option<OneStepCheap> = None;
    let v = validator.as_ref();
    let (b, p) = (&base, &prompt[..]);
    let mut rows = vec![run(
        "constrained, no drafter (Leviathan)",
        m,
        b,
        json.clone(),
        NoDraft,
        none.clone(),
        p,
        1,
        args,
        v,
    )?];
    for &g in &args.gamma_sweep {
        for &w in &args.tree_widths {
            let shape = TreeConfig {
                max_width: w,
                max_nodes: (w * g).max(1),
            };
            rows.push(run_shaped(
                &format!("tree lookup γ={g} width={w}"),
                m,
                b,
                json.clone(),
                TreeLookup::default(),
                none.clone(),
                p,
                g,
                Some((shape, TreeVerify::default())),
                args,
                v,
            )?);
        }
    }
    Ok(finish_edit(rows, task, args.max_tokens, |i| {
        (i > 0).then_some(0)
    }))
}

/// The tree line's PNG: token-rate speed-up over no drafter and mean
/// accepted tokens per round against the draft length, one line per tree
/// width (rows as [`tree_sweep_variants`] orders them).
fn plot_tree_sweep(
    path: &std::path::Path,
    gammas: &[usize],
    widths: &[usize],
    rows: &[Vec<Row>],
) -> Result<()> {
    use plotters::prelude::*;
    let base = rate(rows, 0);
    let acc = |i: usize| {
        let a: f64 = rows.iter().map(|r| r[i].accepted as f64).sum();
        let n: f64 = rows.iter().map(|r| r[i].rounds as f64).sum();
        a / n.max(1.0)
    };
    let idx = |k: usize, j: usize| 1 + k * widths.len() + j;
    let root = BitMapBackend::new(path, (1100, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(550);
    let xmax = gammas.iter().copied().max().unwrap_or(1) as f64 * 1.05;
    let speed_of = |i: usize| rate(rows, i) / base;
    let metrics: [&dyn Fn(usize) -> f64; 2] = [&speed_of, &acc];
    let panels = [
        (&left, "token rate vs no drafter", "× tokens/s"),
        (&right, "accepted tokens per round", "tokens"),
    ];
    let colors = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];
    for ((area, title, ydesc), f) in panels.into_iter().zip(metrics) {
        let lines: Vec<Vec<(f64, f64)>> = (0..widths.len())
            .map(|j| {
                gammas
                    .iter()
                    .enumerate()
                    .map(|(k, &g)| (g as f64, f(idx(k, j))))
                    .collect()
            })
            .collect();
        let ymax = lines.iter().flatten().map(|p| p.1).fold(1.0f64, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)?;
        chart
            .configure_mesh()
            .x_desc("draft length γ (tree depth)")
            .y_desc(ydesc)
            .draw()?;
        for (j, pts) in lines.iter().enumerate() {
            let color = colors[j % colors.len()];
            chart
                .draw_series(LineSeries::new(pts.clone(), color))?
                .label(format!("width {}", widths[j]))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart.draw_series(
                pts.iter()
                    .map(|&(x, y)| Circle::new((x, y), 4, color.filled())),
            )?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// Token rate over all tasks of row `i`.
fn rate(rows: &[Vec<Row>], i: usize) -> f64 {
    let tokens: f64 = rows.iter().map(|r| r[i].tokens as f64).sum();
    let secs: f64 = rows.iter().map(|r| r[i].seconds).sum();
    tokens / secs.max(1e-9)
}

/// The scaling line's PNG: token-rate speed-up over no drafter (left axis)
/// and mean accepted tokens per round, against the draft length.
fn plot_sweep(path: &std::path::Path, gammas: &[usize], rows: &[Vec<Row>]) -> Result<()> {
    use plotters::prelude::*;
    let base = rate(rows, 0);
    let acc = |i: usize| {
        let a: f64 = rows.iter().map(|r| r[i].accepted as f64).sum();
        let n: f64 = rows.iter().map(|r| r[i].rounds as f64).sum();
        a / n.max(1.0)
    };
    let series = |off: usize, f: &dyn Fn(usize) -> f64| -> Vec<(f64, f64)> {
        gammas
            .iter()
            .enumerate()
            .map(|(k, &g)| (g as f64, f(1 + 2 * k + off)))
            .collect()
    };
    let speed_pl = series(0, &|i| rate(rows, i) / base);
    let speed_copy = series(1, &|i| rate(rows, i) / base);
    let acc_pl = series(0, &acc);
    let acc_copy = series(1, &acc);
    let root = BitMapBackend::new(path, (1100, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(550);
    let xmax = gammas.iter().copied().max().unwrap_or(1) as f64 * 1.05;
    for (area, title, ydesc, a, b) in [
        (
            &left,
            "token rate vs no drafter",
            "× tokens/s",
            &speed_pl,
            &speed_copy,
        ),
        (
            &right,
            "accepted tokens per round",
            "tokens",
            &acc_pl,
            &acc_copy,
        ),
    ] {
        let ymax = a.iter().chain(b.iter()).map(|p| p.1).fold(1.0f64, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)?;
        chart
            .configure_mesh()
            .x_desc("draft length γ")
            .y_desc(ydesc)
            .draw()?;
        for (pts, color, label) in [(a, BLUE, "prompt lookup"), (b, RED, "copy drafts")] {
            chart
                .draw_series(LineSeries::new(pts.clone(), color))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart.draw_series(
                pts.iter()
                    .map(|&(x, y)| Circle::new((x, y), 4, color.filled())),
            )?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// Sums per variant (rows in the same order for every task).
fn table(rows: &[Vec<Row>]) -> String {
    let mut t = MarkdownTable::new(&[
        "variant",
        "tasks",
        "tokens",
        "target calls / token",
        "accepted / round",
        "nodes scored / round",
        "tokens/s",
        "valid",
        "hit the cap",
        "= no-drafter output (up to the cap)",
        "edit applied",
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
            format!(
                "{:.2}",
                sum(&|r| r.nodes_scored as f64) / sum(&|r| r.rounds as f64).max(1.0)
            ),
            format!("{:.1}", tokens / sum(&|r| r.seconds).max(1e-9)),
            share(&|r| r.valid),
            share(&|r| Some(r.capped)),
            share(&|r| r.same_as_plain),
            share(&|r| r.edit_applied),
        ]);
    }
    t.render()
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
