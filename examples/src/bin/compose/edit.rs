//! Edit tasks (a MaskBench instance and an instruction to change one
//! value), their variants with copy drafts and the draft-length sweep.

use anyhow::Result;
use zapspec::{Constraint, CopyDraft, NoDraft, OneStepCheap, PromptLookup};
use zapspec_backend::CausalLm;
use zapspec_core::{LanguageModel, TokenId};

use examples::smollm2::SmolLm2;
use llguidance::ParserFactory;

use crate::run::{llg_run, run, Row};
use crate::Args;
use examples::schema_tasks::same_output;
pub(crate) use examples::schema_tasks::EditTask;

/// The edit tasks of `--edits`, `--max-doc-bytes` and `--seed`
/// ([`examples::schema_tasks::edit_tasks`]) and how many files were looked at.
pub(crate) fn edit_tasks(args: &Args) -> Result<(Vec<EditTask>, usize)> {
    examples::schema_tasks::edit_tasks(&args.maskbench, args.seed, args.edits, args.max_doc_bytes)
}

/// What every row of an edit task shares: the ChatML prompt, the schema's
/// validator and Earley matcher, the document's tokens (the copy source)
/// and the model with the prompt prefilled once (untimed).
pub(crate) struct EditSetup {
    pub(crate) prompt: Vec<TokenId>,
    pub(crate) validator: Option<jsonschema::Validator>,
    pub(crate) json: zapspec_earley::EarleyMatcher,
    pub(crate) source: Vec<TokenId>,
    pub(crate) base: CausalLm,
}

impl EditSetup {
    pub(crate) fn new(m: &SmolLm2, task: &EditTask) -> Result<Self> {
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
pub(crate) fn finish_edit(
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
pub(crate) fn edit_variants(
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
pub(crate) fn sweep_variants(m: &SmolLm2, task: &EditTask, args: &Args) -> Result<Vec<Row>> {
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
