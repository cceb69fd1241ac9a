//! Reads a grammar and runs the ZapFormat §4.5 transformation pipeline,
//! printing the grammar after each pass with a table of its size before
//! and after.
//!
//! ```text
//! cargo run -p examples --bin grammar -- path/to/file.gbnf
//! cargo run -p examples --bin grammar -- file.gbnf --no-inline --check '{"a":1}' --json stats.json
//! cargo run -p examples --bin grammar -- ../shared/data/maskbench/Github_easy---o10008.json --ws flexible --max-ws 2
//! ```
//!
//! A `.json` file is a JSON Schema (or a MaskBench file, whose `schema`
//! field is used), compiled by `zapspec_jsonschema`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Parser;
use zapspec_grammar::{
    parse_gbnf, simplify, Grammar, GrammarError, GrammarStats, Recognizer, SimplifyConfig,
};

#[derive(Parser, Debug)]
#[command(about = "Parse a grammar and run the ZapFormat §4.5 transforms, pass by pass")]
struct Args {
    /// Grammar file: GBNF (`.gbnf`, or any other extension).
    path: PathBuf,
    /// Skip useless-rule elimination (first and final pass).
    #[arg(long)]
    no_useless: bool,
    /// Skip nullable-rule elimination.
    #[arg(long)]
    no_nullable: bool,
    /// Skip unit-rule elimination.
    #[arg(long)]
    no_units: bool,
    /// Skip inlining.
    #[arg(long)]
    no_inline: bool,
    /// Skip de-duplication.
    #[arg(long)]
    no_dedupe: bool,
    /// Nullable elimination: split rules with more nullable occurrences.
    #[arg(long, default_value_t = zapspec_grammar::NullableConfig::default().max_optional_per_rule)]
    max_optional: usize,
    /// Inlining: inline a once-used nonterminal only if its user then has
    /// at most this many alternatives (0: only single-rule nonterminals).
    #[arg(long, default_value_t = zapspec_grammar::InlineConfig::default().max_alternatives)]
    inline_max_alternatives: usize,
    /// Print only the tables, not the grammars after each pass.
    #[arg(long)]
    quiet: bool,
    /// Check membership of these strings in the input and the final grammar
    /// (reference recognizer); they must agree.
    #[arg(long)]
    check: Vec<String>,
    /// Measure parsing work on this input file with the reference Earley
    /// recognizer: items and time, input grammar vs. simplified grammar.
    #[arg(long)]
    measure: Option<PathBuf>,
    /// Write the per-pass sizes as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// JSON Schema input (`.json`): whitespace between tokens, `compact`
    /// (none, serde_json's compact output) or `flexible`.
    #[arg(long, default_value = "compact")]
    ws: String,
    /// JSON Schema input with `--ws flexible`: longest whitespace run.
    #[arg(long, default_value_t = 4)]
    max_ws: usize,
    /// JSON Schema input: refuse keys that are no JSON Schema keyword
    /// (default: ignore them as validators do, and list them).
    #[arg(long)]
    strict_keywords: bool,
}

/// Reads a grammar file; the format is chosen by extension.
fn load(path: &Path, args: &Args) -> Result<Grammar> {
    let src =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "json" => load_json_schema(path, &src, args),
        _ => load_gbnf(path, &src),
    }
}

/// A JSON Schema file, or a MaskBench file (its `schema` field).
fn load_json_schema(path: &Path, src: &str, args: &Args) -> Result<Grammar> {
    use zapspec_jsonschema::{
        compile_json_schema_report, JsonSchemaOptions, UnknownKeywords, Whitespace,
    };
    let v: serde_json::Value =
        serde_json::from_str(src).with_context(|| format!("parsing {}", path.display()))?;
    let is_maskbench = v.get("schema").is_some() && v.get("tests").is_some_and(|t| t.is_array());
    let schema = if is_maskbench { &v["schema"] } else { &v };
    let whitespace = match args.ws.as_str() {
        "compact" => Whitespace::Compact,
        "flexible" => Whitespace::Flexible {
            max_ws: args.max_ws,
        },
        other => bail!("--ws must be `compact` or `flexible`, not `{other}`"),
    };
    let opts = JsonSchemaOptions {
        whitespace,
        unknown_keywords: if args.strict_keywords {
            UnknownKeywords::Reject
        } else {
            UnknownKeywords::Ignore
        },
        ..JsonSchemaOptions::default()
    };
    let (g, report) = compile_json_schema_report(schema, &opts)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    for (ptr, key) in &report.ignored {
        eprintln!("note: {}: ignored `{key}` at `{ptr}`", path.display());
    }
    Ok(g)
}

fn load_gbnf(path: &Path, src: &str) -> Result<Grammar> {
    match parse_gbnf(src) {
        Ok(p) => {
            for w in &p.warnings {
                eprintln!("warning: {}:{w}", path.display());
            }
            Ok(p.grammar)
        }
        Err(e) => bail!("{}", render_error(path, src, &e)),
    }
}

/// `file:line:col: message`, the source line, and a caret under the column.
fn render_error(path: &Path, src: &str, e: &GrammarError) -> String {
    match e.pos() {
        Some(p) => {
            let line = src.lines().nth(p.line.saturating_sub(1)).unwrap_or("");
            let pad: String = line
                .chars()
                .take(p.column.saturating_sub(1))
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            format!("{}: {e}\n  | {line}\n  | {pad}^", path.display())
        }
        None => format!("{}: {e}", path.display()),
    }
}

fn table_row(name: &str, s: &GrammarStats) -> String {
    format!(
        "| {name} | {} | {} | {} | {} | {} |",
        s.nonterminals, s.rules, s.symbols, s.terminals, s.epsilon_rules
    )
}

const HEADER: &str =
    "| | nonterminals | rules | symbols | terminals | ε-rules |\n|---|---:|---:|---:|---:|---:|";

fn main() -> Result<()> {
    let args = Args::parse();
    let g = load(&args.path, &args)?;
    let cfg = SimplifyConfig {
        useless: !args.no_useless,
        nullable: !args.no_nullable,
        units: !args.no_units,
        inline: !args.no_inline,
        dedupe: !args.no_dedupe,
        nullable_config: zapspec_grammar::NullableConfig {
            max_optional_per_rule: args.max_optional,
        },
        inline_config: zapspec_grammar::InlineConfig {
            max_alternatives: args.inline_max_alternatives,
            ..zapspec_grammar::InlineConfig::default()
        },
    };
    if !args.quiet {
        println!("## parsed grammar\n\n```\n{g}```\n");
    }
    let t0 = std::time::Instant::now();
    let s = simplify(&g, &cfg).map_err(|e| anyhow::anyhow!("{}: {e}", args.path.display()))?;
    let elapsed = t0.elapsed();
    for p in &s.passes {
        println!("## after {}\n", p.pass);
        if !args.quiet {
            println!("```\n{}```\n", p.grammar);
        }
        println!(
            "{HEADER}\n{}\n{}\n",
            table_row("before", &p.before),
            table_row("after", &p.after)
        );
    }
    println!(
        "## summary ({:.1} ms)\n\n{}",
        elapsed.as_secs_f64() * 1e3,
        s.stats_table()
    );

    if !args.check.is_empty() {
        let (r0, r1) = (Recognizer::new(&g)?, Recognizer::new(&s.grammar)?);
        println!("| input | in original | in simplified |\n|---|---|---|");
        for w in &args.check {
            let (a, b) = (r0.recognizes(w.as_bytes()), r1.recognizes(w.as_bytes()));
            println!("| `{w}` | {a} | {b} |");
            if a != b {
                bail!("the transforms changed membership of {w:?}: this is a bug");
            }
        }
    }
    let mut measured = serde_json::Value::Null;
    if let Some(m) = &args.measure {
        let input = std::fs::read(m).with_context(|| format!("reading {}", m.display()))?;
        println!(
            "\n## parsing work on {} ({} bytes, reference Earley recognizer)\n",
            m.display(),
            input.len()
        );
        println!(
            "| grammar | rules | accepted | Earley items | time (ms) |\n|---|---:|---|---:|---:|"
        );
        let mut rows = Vec::new();
        for (name, gr) in [("input", &g), ("simplified", &s.grammar)] {
            let r = Recognizer::new(gr)?;
            let t = std::time::Instant::now();
            let ok = r.recognizes(&input);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let items = r.count_items(&input);
            println!("| {name} | {} | {ok} | {items} | {ms:.1} |", gr.rules.len());
            rows.push(
                serde_json::json!({"grammar": name, "rules": gr.rules.len(), "accepted": ok, "items": items, "ms": ms}),
            );
        }
        measured = serde_json::Value::Array(rows);
    }
    if let Some(path) = &args.json {
        let rows: Vec<serde_json::Value> =
            std::iter::once(serde_json::json!({"pass": "input", "stats": s.initial}))
                .chain(s.passes.iter().map(
                    |p| serde_json::json!({"pass": p.pass, "before": p.before, "after": p.after}),
                ))
                .collect();
        let doc = serde_json::json!({"grammar": args.path.display().to_string(), "ms": elapsed.as_secs_f64() * 1e3, "passes": rows, "measure": measured});
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
