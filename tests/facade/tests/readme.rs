//! README's Rust snippet is this crate's `src/main.rs`, and it runs on
//! SmolLM2-135M-Instruct (skipped with a message when the model file is
//! absent: `scripts/fetch-smollm2.sh` fetches it).

use std::path::Path;
use std::process::Command;

const README: &str = include_str!("../../../README.md");
const MAIN: &str = include_str!("../src/main.rs");

/// The ```rust blocks of README.
fn rust_blocks(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in md.lines() {
        match (&mut cur, line.trim_end()) {
            (None, "```rust") => cur = Some(String::new()),
            (Some(_), "```") => out.push(cur.take().unwrap_or_default()),
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            _ => {}
        }
    }
    out
}

#[test]
fn readme_snippet_is_this_crate() {
    // the file less its first line (a comment naming this test)
    let body: String = MAIN.lines().skip(1).map(|l| format!("{l}\n")).collect();
    assert!(
        rust_blocks(README).contains(&body),
        "README has no ```rust block equal to tests/facade/src/main.rs (after its first line)"
    );
}

#[test]
fn readme_snippet_runs_on_smollm2() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let model = root.join("models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
    if !model.exists() {
        eprintln!(
            "skipped: {} is absent (scripts/fetch-smollm2.sh fetches it)",
            model.display()
        );
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_facade-tests"))
        .current_dir(&root)
        .output()
        .expect("run the snippet");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = stdout.lines();
    let first = lines.next().unwrap_or_default();
    let stop = lines.next().unwrap_or_default();
    // a complete answer is a JSON object of the schema; a cut one a prefix
    if stop.starts_with("Eos") || stop.starts_with("ConstraintFinished") {
        let v: serde_json::Value = serde_json::from_str(first).expect("JSON");
        for k in ["title", "day", "online"] {
            assert!(v.get(k).is_some(), "{k} missing in {first}");
        }
        assert!(v["online"].is_boolean());
    } else {
        assert!(stop.starts_with("MaxTokens"), "{stop}");
        assert!(first.starts_with('{'), "{first}");
    }
    let streamed = lines.next().unwrap_or_default();
    assert!(streamed.starts_with('{'), "{streamed}");
}
