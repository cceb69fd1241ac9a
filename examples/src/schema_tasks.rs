//! MaskBench schemas as generation tasks for a chat model: the files of
//! the shared set in a seeded order, and the instruction that quotes a
//! schema (used by `e2e_throughput`, `compose` and `race`), and edit tasks
//! built from the schemas' valid instances (`compose --edits`, `race`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rand::seq::SliceRandom;
use zapspec_core::prob::seeded_rng;

/// The `*.json` files of `dir`, sorted, then shuffled with `seed` (so a
/// prefix of the list is a seeded sample of the whole set).
pub fn shuffled_schema_files(dir: &Path, seed: u64) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{} (the shared MaskBench data)", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files.shuffle(&mut seeded_rng(seed));
    Ok(files)
}

/// The schema of a MaskBench file (its `schema` member, or the file).
pub fn read_schema(path: &Path) -> Result<serde_json::Value> {
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    Ok(json.get("schema").cloned().unwrap_or(json))
}

/// The user turn asking for one instance of `schema`, quoting its compact
/// text cut at `max_bytes` (on a character boundary, marked `…`).
pub fn schema_instruction(schema: &serde_json::Value, max_bytes: usize) -> Result<String> {
    let mut text = serde_json::to_string(schema)?;
    if text.len() > max_bytes {
        let mut cut = max_bytes;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str(" …");
    }
    Ok(format!(
        "Write one JSON value that conforms to this JSON Schema. Reply with the JSON only.\n\nSchema:\n{text}"
    ))
}

/// One edit task: a valid instance of a MaskBench schema, written in the
/// grammar's key order, and an instruction to change one value.
pub struct EditTask {
    /// The MaskBench file name.
    pub file: String,
    /// Its schema.
    pub schema: serde_json::Value,
    /// The document as the prompt quotes it (compact JSON).
    pub doc: String,
    /// The edited document.
    pub expected: serde_json::Value,
    /// The user turn.
    pub instruction: String,
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
/// grammar's key order (`canonical_instances`), of 60 to `max_doc_bytes`
/// bytes, and the first leaf (in seeded order) whose changed value keeps
/// the document valid (the `jsonschema` crate).
pub fn edit_tasks(
    maskbench: &Path,
    seed: u64,
    n: usize,
    max_doc_bytes: usize,
) -> Result<(Vec<EditTask>, usize)> {
    let files = shuffled_schema_files(maskbench, seed)?;
    let mut rng = seeded_rng(seed);
    let (mut out, mut looked) = (Vec::new(), 0);
    for f in &files {
        if out.len() == n {
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
        if text.len() < 60 || text.len() > max_doc_bytes || !validator.is_valid(&doc) {
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

/// Whether two outputs of generation loops over the same task are the
/// same: equal, or, where both stopped at the cap of `cap` tokens
/// (`zapspec::StopReason::MaxTokens`: the output is cut there), equal on
/// their common prefix.
pub fn same_output(a: &[zapspec_core::TokenId], b: &[zapspec_core::TokenId], cap: usize) -> bool {
    let capped = |x: &[zapspec_core::TokenId]| x.len() >= cap;
    if capped(a) && capped(b) {
        let n = a.len().min(b.len());
        a[..n] == b[..n]
    } else {
        a == b
    }
}
