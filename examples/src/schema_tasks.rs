//! MaskBench schemas as generation tasks for a chat model: the files of
//! the shared set in a seeded order, and the instruction that quotes a
//! schema (used by `e2e_throughput` and `compose`).

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
