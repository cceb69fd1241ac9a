//! The tree lines: sampled draft trees on schemas, tree lookup on
//! edit tasks.

use anyhow::Result;
use zapspec::{NoDraft, OneStepCheap, TreeConfig, TreeLookup, TreeVerify};
use zapspec_backend::CausalLm;
use zapspec_core::{LanguageModel, TokenId};

use examples::smollm2::SmolLm2;

use crate::edit::{finish_edit, EditSetup, EditTask};
use crate::run::{run, run_shaped, Row};
use crate::Args;

/// The sampled tree line on one schema (temperature 1, Leviathan): no
/// drafter, the self-speculative draft (the target's first
/// `--draft-layers` layers) linear, then its sampled draft trees
/// (`zapspec_verify::drafter::sampled_tree_from_model`) verified by naive
/// sampling and by SpecInfer's residual rule.
pub(crate) fn tree_sampled_variants(
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
    let selfspec = || -> Result<CausalLm> {
        let mut d = m.lm.first_layers(args.draft_layers);
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
pub(crate) fn tree_sweep_variants(m: &SmolLm2, task: &EditTask, args: &Args) -> Result<Vec<Row>> {
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
