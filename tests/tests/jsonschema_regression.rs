//! Regression oracle of the JSON Schema compiler: compiles every MaskBench
//! schema with default options and records, per file, a hash of the
//! grammar's GBNF text (`Grammar`'s `Display`) and of the
//! [`canonical_instances`] of each test instance — or the error's category
//! and pointer. For refactors of `zapspec-jsonschema` that must not change
//! its output.
//!
//! `#[ignore]`d (it takes a minute); run it as
//!
//! ```text
//! ZAPSPEC_REGRESSION_OUT=/tmp/before.tsv \
//!   cargo test -p tests --test jsonschema_regression -- --ignored --nocapture
//! # … change the compiler …
//! ZAPSPEC_REGRESSION_OUT=/tmp/after.tsv ZAPSPEC_REGRESSION_BASELINE=/tmp/before.tsv \
//!   cargo test -p tests --test jsonschema_regression -- --ignored --nocapture
//! ```
//!
//! With a baseline the test fails listing every file whose line differs.
//! Skips when `../shared/data/maskbench` is absent.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

use serde_json::Value;
use zapspec_jsonschema::{canonical_instances, compile_json_schema, JsonSchemaOptions};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/maskbench")
}

fn hash(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// One file's line: `name \t outcome`.
fn line(path: &PathBuf, opts: &JsonSchemaOptions) -> String {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("?")
        .to_string();
    let Some(file) = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
    else {
        return format!("{name}\tunreadable");
    };
    let schema = &file["schema"];
    match compile_json_schema(schema, opts) {
        Err(e) => format!(
            "{name}\terr\t{}\t{}\t{}",
            e.category(),
            e.pointer(),
            e.to_string().replace(['\t', '\n'], " ")
        ),
        Ok(g) => {
            let gbnf = g.to_string();
            let mut canon = String::new();
            for test in file["tests"].as_array().into_iter().flatten() {
                match canonical_instances(schema, &test["data"], opts) {
                    Ok(c) => {
                        for v in c {
                            canon.push_str(&v.to_string());
                            canon.push('\n');
                        }
                    }
                    Err(e) => canon.push_str(&format!("E:{}:{}\n", e.category(), e.pointer())),
                }
                canon.push('\u{1}');
            }
            format!(
                "{name}\tok\t{}\t{:016x}\t{:016x}",
                gbnf.len(),
                hash(&gbnf),
                hash(&canon)
            )
        }
    }
}

#[test]
#[ignore = "a minute over all of MaskBench; run for compiler refactors"]
fn jsonschema_regression() {
    let dir = data_dir();
    if !dir.is_dir() {
        println!(
            "jsonschema_regression: SKIPPED, {} is absent",
            dir.display()
        );
        return;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read data dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let opts = JsonSchemaOptions::default();
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let mut lines: Vec<(usize, String)> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let files = &files;
                let opts = &opts;
                sc.spawn(move || {
                    (w..files.len())
                        .step_by(workers)
                        .map(|i| (i, line(&files[i], opts)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("regression worker panicked"))
            .collect()
    });
    lines.sort();
    let text: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    let ok = lines.iter().filter(|(_, l)| l.contains("\tok\t")).count();
    println!(
        "jsonschema_regression: {} files, {ok} compiled",
        lines.len()
    );
    if let Ok(out) = std::env::var("ZAPSPEC_REGRESSION_OUT") {
        std::fs::write(&out, &text).expect("write ZAPSPEC_REGRESSION_OUT");
        println!("written to {out}");
    }
    if let Ok(base) = std::env::var("ZAPSPEC_REGRESSION_BASELINE") {
        let base = std::fs::read_to_string(&base).expect("read ZAPSPEC_REGRESSION_BASELINE");
        let old: Vec<&str> = base.lines().collect();
        let new: Vec<&str> = text.lines().collect();
        let mut diffs = 0usize;
        for (o, n) in old.iter().zip(&new) {
            if o != n {
                diffs += 1;
                println!("- {o}\n+ {n}");
            }
        }
        assert_eq!(old.len(), new.len(), "different numbers of files");
        println!("jsonschema_regression: {diffs} files differ from the baseline");
        assert_eq!(diffs, 0, "{diffs} files differ from the baseline");
    }
}
