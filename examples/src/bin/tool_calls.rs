//! Tool calling on SmolLM2-135M-Instruct, constrained by zapspec: Glaive
//! tools from MaskBench (function-parameter schemas; names from the file
//! names), the Hermes/Qwen `<tool_call>` format (`qwen_3`, what SmolLM2
//! writes), every `tool_choice`, greedy and T = 0.7 with fixed seeds.
//! Every call the model writes is parsed, its name checked against the
//! declared tools and its arguments validated against their schema by the
//! `jsonschema` crate (an independent validator); free text is kept as
//! written. Wall-clock per token is the pipeline's `generate_chat`, the
//! call a user makes.
//!
//! ```text
//! scripts/fetch-smollm2.sh
//! cargo run --release -p examples --bin tool_calls -- --seed 0 --out examples/results/tools
//! ```

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::{json, Value};
use zapspec::{Message, Model, Reasoning, Tool, ToolCallOptions, ToolChoice};

#[derive(Parser, Debug)]
struct Args {
    #[arg(long, default_value = "models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")]
    model: PathBuf,
    #[arg(long, default_value = "../shared/data/maskbench")]
    data: PathBuf,
    /// Prompts per (tool_choice, temperature) cell.
    #[arg(long, default_value_t = 4)]
    prompts: usize,
    /// Tools offered per prompt.
    #[arg(long, default_value_t = 3)]
    tools: usize,
    #[arg(long, default_value_t = 160)]
    max_tokens: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Glaive tools (name, parameters) with a valid instance.
fn glaive(dir: &std::path::Path) -> Result<Vec<Tool>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("Glaiveai2K---"))
        })
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let d: Value = serde_json::from_str(&std::fs::read_to_string(&f)?)?;
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let base = stem.trim_start_matches("Glaiveai2K---");
        let name = match base.rsplit_once('_') {
            Some((n, h)) if h.len() == 8 && h.chars().all(|c| c.is_ascii_hexdigit()) => n,
            _ => base,
        };
        if out.iter().any(|t: &Tool| t.name == name) {
            continue;
        }
        // the tools every engine compiles (the facade refuses the rest)
        out.push(Tool::new(name, d["schema"].clone()));
    }
    Ok(out)
}

/// The calls in `text`: (name, arguments) as written, `None` where the
/// JSON does not parse; `truncated` when a call is open at the end.
fn calls(text: &str) -> (Vec<Option<(String, Value)>>, bool) {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("<tool_call>\n") {
        let body = &rest[i + "<tool_call>\n".len()..];
        let Some(j) = body.find("\n</tool_call>") else {
            return (out, true);
        };
        let parsed = serde_json::from_str::<Value>(&body[..j])
            .ok()
            .and_then(|v| {
                Some((
                    v.get("name")?.as_str()?.to_string(),
                    v.get("arguments")?.clone(),
                ))
            });
        out.push(parsed);
        rest = &body[j..];
    }
    (out, false)
}

#[derive(Default, serde::Serialize)]
struct Cell {
    choice: String,
    temperature: f64,
    prompts: usize,
    calls: usize,
    parsed: usize,
    declared: usize,
    valid: usize,
    truncated: usize,
    prompts_with_call: usize,
    tokens: usize,
    seconds: f64,
}

fn main() -> Result<()> {
    let a = Args::parse();
    if !a.model.exists() {
        anyhow::bail!(
            "{} is missing: run scripts/fetch-smollm2.sh",
            a.model.display()
        );
    }
    let model = Model::load(&a.model)?;
    let mut pool = glaive(&a.data)?;
    // keep the tools the facade's compiler takes alone
    pool.retain(|t| {
        model
            .tool_calls(
                "qwen_3",
                std::slice::from_ref(t),
                &ToolCallOptions::default(),
            )
            .is_ok()
    });
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(a.seed);
    pool.shuffle(&mut rng);
    let mut cells = Vec::new();
    let mut samples = Vec::new();
    for choice_name in ["auto", "required", "named", "none"] {
        for &temperature in &[0.0, 0.7] {
            let mut cell = Cell {
                choice: choice_name.into(),
                temperature,
                ..Cell::default()
            };
            for p in 0..a.prompts {
                let tools: Vec<Tool> = pool
                    .iter()
                    .cycle()
                    .skip(p * a.tools)
                    .take(a.tools)
                    .cloned()
                    .collect();
                let target = &tools[0];
                let choice = match choice_name {
                    "auto" => ToolChoice::Auto,
                    "required" => ToolChoice::Required,
                    "named" => ToolChoice::Named(target.name.clone()),
                    _ => ToolChoice::None,
                };
                let opts = ToolCallOptions {
                    choice,
                    reasoning: Reasoning::Disabled,
                    ..ToolCallOptions::default()
                };
                let matcher = model.tool_calls("qwen_3", &tools, &opts)?;
                let listed: Vec<Value> = tools
                    .iter()
                    .map(|t| json!({"type": "function", "function": {"name": t.name, "parameters": t.parameters}}))
                    .collect();
                let system = format!(
                    "You are a helpful assistant with access to these tools:\n<tools>\n{}\n</tools>\nTo call a tool, write <tool_call>\n{{\"name\": <tool name>, \"arguments\": <arguments as JSON>}}\n</tool_call>",
                    serde_json::to_string(&listed)?
                );
                let user = format!("Please help me: {}.", target.name.replace('_', " "));
                let b = model.builder(matcher).max_tokens(a.max_tokens);
                let mut pipe = if temperature == 0.0 {
                    b.greedy().build()?
                } else {
                    b.temperature(temperature).seed(a.seed + p as u64).build()?
                };
                let t0 = Instant::now();
                let out = pipe.generate_chat(&[Message::system(system), Message::user(user)])?;
                cell.seconds += t0.elapsed().as_secs_f64();
                cell.tokens += out.tokens.len();
                cell.prompts += 1;
                let (found, truncated) = calls(&out.text);
                cell.truncated += usize::from(truncated);
                cell.prompts_with_call += usize::from(!found.is_empty());
                for c in &found {
                    cell.calls += 1;
                    let Some((name, args)) = c else { continue };
                    cell.parsed += 1;
                    let Some(t) = tools.iter().find(|t| &t.name == name) else {
                        continue;
                    };
                    cell.declared += 1;
                    if jsonschema::validator_for(&t.parameters).is_ok_and(|v| v.is_valid(args)) {
                        cell.valid += 1;
                    }
                }
                if p == 0 {
                    samples.push(json!({"choice": choice_name, "temperature": temperature, "text": out.text}));
                }
            }
            eprintln!(
                "{choice_name} T={temperature}: {} calls, {} valid, {:.1} tok/s",
                cell.calls,
                cell.valid,
                cell.tokens as f64 / cell.seconds
            );
            cells.push(cell);
        }
    }
    let mut md = String::from("# Tool calls on SmolLM2-135M-Instruct\n\n");
    md += &format!(
        "Hermes/Qwen `<tool_call>` format (`qwen_3`), {} Glaive tools per prompt (MaskBench), {} prompts per cell, at most {} tokens, seed {}. A call counts as valid when its JSON parses, its name is a declared tool and the `jsonschema` crate validates its arguments; truncated: the length limit ended the output inside a call. Command: `cargo run --release -p examples --bin tool_calls -- --seed {} --prompts {} --tools {} --max-tokens {} --out examples/results/tools`.\n\n",
        a.tools, a.prompts, a.max_tokens, a.seed, a.seed, a.prompts, a.tools, a.max_tokens
    );
    md += "| tool_choice | T | prompts | with a call | calls | parsed | declared name | valid arguments | truncated | tok/s |\n|---|---|---|---|---|---|---|---|---|---|\n";
    for c in &cells {
        md += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} |\n",
            c.choice,
            c.temperature,
            c.prompts,
            c.prompts_with_call,
            c.calls,
            c.parsed,
            c.declared,
            c.valid,
            c.truncated,
            c.tokens as f64 / c.seconds
        );
    }
    md += "\n## First output of each cell\n\n";
    for s in &samples {
        md += &format!(
            "- {} T={}: `{}`\n",
            s["choice"].as_str().unwrap_or(""),
            s["temperature"],
            s["text"]
                .as_str()
                .unwrap_or("")
                .replace('\n', "\\n")
                .replace('`', "'")
        );
    }
    println!("{md}");
    if let Some(out) = a.out {
        std::fs::create_dir_all(&out)?;
        std::fs::write(out.join("smollm2.md"), &md)?;
        std::fs::write(
            out.join("smollm2.json"),
            serde_json::to_string_pretty(
                &json!({"cells": cells, "samples": samples, "seed": a.seed}),
            )?,
        )?;
    }
    Ok(())
}
