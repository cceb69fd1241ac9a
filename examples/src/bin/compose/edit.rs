//! Edit tasks (a MaskBench instance and an instruction to change one
//! value), their variants with copy drafts and the draft-length sweep.

use anyhow::Result;
use zapspec::{Constraint, CopyDraft, NoDraft, OneStepCheap, PromptLookup};
use zapspec_backend::CausalLm;
use zapspec_core::{LanguageModel, TokenId};

use examples::smollm2::SmolLm2;
use llguidance::ParserFactory;

use crate::run::{llg_run, run, same_output, Row};
use crate::Args;

/// One edit task: a valid instance of a MaskBench schema, written in the
/// grammar's key order, and an instruction to change one value.
pub(crate) struct EditTask {
    pub(crate) file: String,
    pub(crate) schema: serde_json::Value,
    /// The document as the prompt quotes it (compact JSON).
    pub(crate) doc: String,
    /// The edited document.
    pub(crate) expected: serde_json::Value,
    /// The user turn.
    pub(crate) instruction: String,
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
pub(crate) fn edit_tasks(args: &Args) -> Result<(Vec<EditTask>, usize)> {
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
