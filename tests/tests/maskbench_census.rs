//! MaskBench census: compile every MaskBench JSON Schema with
//! `zapspec_jsonschema` and check its test instances with the
//! naive reference recognizer (`zapspec_grammar::reference`).
//!
//! * Every schema either compiles or gives a named [`SchemaError`]; the
//!   counts print as Markdown tables (by outcome, by refused keyword, by
//!   split).
//! * For a compiled schema, every **valid** instance must be accepted —
//!   serialised compactly by serde_json, with its object keys in the order
//!   the grammar writes them ([`canonical_instances`]: declared properties
//!   in schema order, then additional ones). JSON objects are unordered,
//!   so this is the same value an LLM constrained by the grammar would
//!   emit; instances already in that order are counted separately. The test
//!   fails if any valid instance is rejected.
//! * **Invalid** instances that are rejected are counted for information
//!   (an accepted one is a soundness gap of the grammar, e.g. `oneOf`
//!   compiled as `anyOf`, or a keyword validators enforce that the compiler
//!   treats as an annotation).
//!
//! Both shared sets: `maskbench` (small real schemas) and `maskbench-hard`
//! (large real-world ones). A valid instance written with an exponent-form
//! number (`1e-06`) where the compiler's documented subset leaves those
//! forms out (numbers under bounds or `multipleOf`; see "The language,
//! precisely" in `zapspec-jsonschema`) is listed apart and does not fail
//! the test; every other rejected valid instance does.
//!
//! Skips (with a message) when a data directory is absent.
//! Run: `cargo test -p tests --test maskbench_census -- --nocapture`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use serde_json::Value;
use zapspec_grammar::reference::Recognizer;
use zapspec_jsonschema::{
    canonical_instances, compile_json_schema_report, JsonSchemaOptions, SchemaError,
};

fn data_dir(set: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data")
        .join(set)
}

/// Whether a JSON value holds a number serde_json writes in exponent form.
fn has_exponent_number(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.to_string().contains(['e', 'E']),
        Value::Array(xs) => xs.iter().any(has_exponent_number),
        Value::Object(m) => m.values().any(has_exponent_number),
        _ => false,
    }
}

#[derive(Default)]
struct Tally {
    schemas: usize,
    compiled: usize,
    refused_keyword: usize,
    other_error: usize,
    valid: usize,
    valid_as_is: usize,
    valid_reordered: usize,
    valid_rejected: usize,
    invalid: usize,
    invalid_rejected: usize,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.schemas += o.schemas;
        self.compiled += o.compiled;
        self.refused_keyword += o.refused_keyword;
        self.other_error += o.other_error;
        self.valid += o.valid;
        self.valid_as_is += o.valid_as_is;
        self.valid_reordered += o.valid_reordered;
        self.valid_rejected += o.valid_rejected;
        self.invalid += o.invalid;
        self.invalid_rejected += o.invalid_rejected;
    }
}

/// What one worker thread found.
#[derive(Default)]
struct Part {
    total: Tally,
    by_split: BTreeMap<String, Tally>,
    errors: BTreeMap<String, usize>,
    failures: Vec<String>,
    /// Valid instances rejected that hold an exponent-form number (the
    /// documented subset), listed apart.
    exponent_subset: Vec<String>,
    invalid_accepted: Vec<String>,
    /// Compiled grammars whose reference recognizer exceeds a limit: an
    /// intersection terminal (`Terminal::And`, a long `format` under
    /// `maxLength`) whose product the recognizer builds eagerly past
    /// `dfa_states`. Their instances are not checked.
    over_limit: Vec<String>,
    ignored_keys: usize,
    unreadable: usize,
    time_compile: f64,
    time_load: f64,
    time_check: f64,
}

#[test]
fn maskbench_census() {
    census(data_dir("maskbench"));
}

#[test]
fn maskbench_hard_census() {
    census(data_dir("maskbench-hard"));
}

fn census(dir: PathBuf) {
    if !dir.is_dir() {
        println!(
            "maskbench_census: SKIPPED, data directory {} is absent",
            dir.display()
        );
        return;
    }
    let t0 = Instant::now();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read data dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    // One worker per core (CI has two); each takes every n-th file.
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let parts: Vec<Part> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let mine: Vec<&PathBuf> = files.iter().skip(w).step_by(workers).collect();
                sc.spawn(move || census_part(&mine))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("census worker panicked"))
            .collect()
    });
    let mut p = Part::default();
    for q in parts {
        p.total.add(&q.total);
        for (k, t) in &q.by_split {
            p.by_split.entry(k.clone()).or_default().add(t);
        }
        for (k, n) in q.errors {
            *p.errors.entry(k).or_default() += n;
        }
        p.failures.extend(q.failures);
        p.exponent_subset.extend(q.exponent_subset);
        p.invalid_accepted.extend(q.invalid_accepted);
        p.over_limit.extend(q.over_limit);
        p.ignored_keys += q.ignored_keys;
        p.unreadable += q.unreadable;
        p.time_compile += q.time_compile;
        p.time_load += q.time_load;
        p.time_check += q.time_check;
    }
    p.failures.sort();
    p.invalid_accepted.sort();
    p.invalid_accepted.truncate(40);
    p.over_limit.sort();
    println!(
        "recognizer over its limits (instances unchecked): {} of {} compiled: {:?}",
        p.over_limit.len(),
        p.total.compiled,
        p.over_limit
    );
    assert!(
        p.over_limit.len() * 100 <= p.total.compiled,
        "{} grammars beyond the recognizer's limits",
        p.over_limit.len()
    );
    let Part {
        total,
        by_split,
        errors,
        failures,
        exponent_subset,
        invalid_accepted,
        over_limit: _,
        ignored_keys,
        unreadable,
        time_compile,
        time_load,
        time_check,
    } = p;
    report(
        t0,
        workers,
        &total,
        &by_split,
        &errors,
        &failures,
        &invalid_accepted,
        ignored_keys,
        unreadable,
        (time_compile, time_load, time_check),
    );
    println!(
        "valid instances with exponent-form numbers outside the documented subset: {} {:?}",
        exponent_subset.len(),
        exponent_subset
    );
    assert!(
        failures.is_empty(),
        "{} valid instances rejected (see above)",
        failures.len()
    );
}

fn census_part(files: &[&PathBuf]) -> Part {
    let opts = JsonSchemaOptions::default();
    let mut total = Tally::default();
    let mut by_split: BTreeMap<String, Tally> = BTreeMap::new();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    let mut exponent_subset: Vec<String> = Vec::new();
    let mut invalid_accepted: Vec<String> = Vec::new();
    let mut over_limit: Vec<String> = Vec::new();
    let mut ignored_keys = 0usize;
    let mut unreadable = 0usize;
    let (mut time_compile, mut time_load, mut time_check) = (0f64, 0f64, 0f64);
    for path in files {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let split = name
            .split("---")
            .next()
            .unwrap_or("?")
            .split('_')
            .next()
            .unwrap_or("?")
            .to_string();
        let Ok(text) = std::fs::read_to_string(path) else {
            unreadable += 1;
            continue;
        };
        let Ok(file) = serde_json::from_str::<Value>(&text) else {
            unreadable += 1;
            continue;
        };
        let t = by_split.entry(split.clone()).or_default();
        t.schemas += 1;
        total.schemas += 1;
        let schema = &file["schema"];
        let tc = Instant::now();
        let compiled = compile_json_schema_report(schema, &opts);
        time_compile += tc.elapsed().as_secs_f64();
        let (grammar, report) = match compiled {
            Ok(x) => x,
            Err(e) => {
                match &e {
                    SchemaError::Unsupported { .. } | SchemaError::UnknownKeyword { .. } => {
                        t.refused_keyword += 1;
                        total.refused_keyword += 1;
                    }
                    _ => {
                        t.other_error += 1;
                        total.other_error += 1;
                    }
                }
                *errors.entry(e.category()).or_default() += 1;
                continue;
            }
        };
        ignored_keys += report.ignored.len();
        t.compiled += 1;
        total.compiled += 1;
        let tr = Instant::now();
        let rec = match Recognizer::new(&grammar) {
            Ok(r) => r,
            Err(zapspec_grammar::GrammarError::LimitExceeded { .. }) => {
                over_limit.push(name);
                continue;
            }
            Err(e) => panic!("{name}: compiled grammar does not load: {e}"),
        };
        time_load += tr.elapsed().as_secs_f64();
        let tr = Instant::now();
        for (i, test) in file["tests"].as_array().into_iter().flatten().enumerate() {
            let data = &test["data"];
            let valid = test["valid"].as_bool().unwrap_or(false);
            let as_is = rec.recognizes(data.to_string().as_bytes());
            let accepted = as_is
                || canonical_instances(schema, data, &opts)
                    .map(|cands| {
                        cands
                            .iter()
                            .any(|c| rec.recognizes(c.to_string().as_bytes()))
                    })
                    .unwrap_or(false);
            let Some(st) = by_split.get_mut(&split) else {
                continue;
            };
            for t in [st, &mut total] {
                if valid {
                    t.valid += 1;
                    if as_is {
                        t.valid_as_is += 1;
                    } else if accepted {
                        t.valid_reordered += 1;
                    } else {
                        t.valid_rejected += 1;
                    }
                } else {
                    t.invalid += 1;
                    if !accepted {
                        t.invalid_rejected += 1;
                    }
                }
            }
            if valid && !accepted && has_exponent_number(data) {
                exponent_subset.push(format!("{name} test {i}"));
            } else if valid && !accepted {
                failures.push(format!(
                    "{name} test {i}: {}",
                    truncate(&data.to_string(), 300)
                ));
            }
            if !valid && accepted && invalid_accepted.len() < 40 {
                invalid_accepted.push(format!(
                    "{name} test {i}: {}",
                    truncate(&data.to_string(), 160)
                ));
            }
        }
        time_check += tr.elapsed().as_secs_f64();
        if tr.elapsed().as_secs_f64() > 0.5 {
            println!("slow: {name} {:.2}s", tr.elapsed().as_secs_f64());
        }
    }
    Part {
        total,
        by_split,
        errors,
        failures,
        exponent_subset,
        invalid_accepted,
        over_limit,
        ignored_keys,
        unreadable,
        time_compile,
        time_load,
        time_check,
    }
}

#[allow(clippy::too_many_arguments)]
fn report(
    t0: Instant,
    workers: usize,
    total: &Tally,
    by_split: &BTreeMap<String, Tally>,
    errors: &BTreeMap<String, usize>,
    failures: &[String],
    invalid_accepted: &[String],
    ignored_keys: usize,
    unreadable: usize,
    (time_compile, time_load, time_check): (f64, f64, f64),
) {
    let pct = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    println!(
        "\n## MaskBench census ({} schema files, {:.1} s)\n",
        total.schemas,
        t0.elapsed().as_secs_f64()
    );
    println!("{workers} worker threads; CPU time: compile {time_compile:.1} s, recognizer set-up {time_load:.1} s, instance checks {time_check:.1} s\n");
    println!("| outcome | schemas | % |\n|---|---:|---:|");
    println!(
        "| compiled | {} | {:.1} |",
        total.compiled,
        pct(total.compiled, total.schemas)
    );
    println!(
        "| refused by keyword | {} | {:.1} |",
        total.refused_keyword,
        pct(total.refused_keyword, total.schemas)
    );
    println!(
        "| other error | {} | {:.1} |",
        total.other_error,
        pct(total.other_error, total.schemas)
    );
    if unreadable > 0 {
        println!("| unreadable file | {unreadable} | |");
    }
    println!("\n| error | schemas |\n|---|---:|");
    let mut errs: Vec<_> = errors.iter().collect();
    errs.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (k, v) in errs {
        println!("| {k} | {v} |");
    }
    println!("\n| split | schemas | compiled | refused kw | other err | valid | as is | reordered | valid rejected | invalid | invalid rejected |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (s, t) in by_split
        .iter()
        .chain(std::iter::once((&"**all**".to_string(), total)))
    {
        println!(
            "| {s} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            t.schemas,
            t.compiled,
            t.refused_keyword,
            t.other_error,
            t.valid,
            t.valid_as_is,
            t.valid_reordered,
            t.valid_rejected,
            t.invalid,
            t.invalid_rejected
        );
    }
    println!(
        "\nvalid instances accepted: {} of {} ({} as serialised, {} after reordering keys to schema order); \
         invalid instances rejected: {} of {} ({:.1}%); unknown keys ignored: {ignored_keys}",
        total.valid_as_is + total.valid_reordered,
        total.valid,
        total.valid_as_is,
        total.valid_reordered,
        total.invalid_rejected,
        total.invalid,
        pct(total.invalid_rejected, total.invalid)
    );
    if !invalid_accepted.is_empty() {
        println!("\nsome accepted invalid instances (information):");
        for f in invalid_accepted {
            println!("  {f}");
        }
    }
    for f in failures.iter().take(50) {
        println!("VALID REJECTED: {f}");
    }
    assert!(
        failures.is_empty(),
        "{} valid instances rejected (see above)",
        failures.len()
    );
}

fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        s.to_string()
    } else {
        let mut end = n;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &s[..end])
    }
}
