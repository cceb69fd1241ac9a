//! The variant sets of the schema sweep and of the Φ study.

use anyhow::Result;
use zapspec::{Constraint, NoDraft, OneStepCheap, PhiEstimator, PromptLookup};
use zapspec_backend::CausalLm;
use zapspec_core::{LanguageModel, TokenId};
use zapspec_phi::{CandidateCut, MonteCarlo, MonteCarloConfig, NoModel, WithModel};

use examples::smollm2::SmolLm2;
use llguidance::ParserFactory;

use crate::run::{llg_run, run, Row, Timed};
use crate::Args;
use examples::schema_tasks::same_output;

/// Every variant on one task; the prompt is prefilled once into `base`.
pub(crate) fn variants(
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
    // the draft model's prompt cache is filled here, untimed, like the target's
    let selfspec = || -> Result<CausalLm> {
        let mut d = m.lm.first_layers(args.draft_layers);
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
pub(crate) fn phi_variants(
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
