//! Layout of the recorded runs in `examples/results/`: one folder per
//! experiment, each with a `README.md`, all listed in the index
//! (`examples/results/README.md`); no file name in the repository carries a
//! run label (`_s18.md`, `session`, `issue-12`); and every path under the
//! results folder that a `*.rs` or `*.md` file names exists.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The results folder, as files name it (split so that this file's own
/// text is not taken for a reference).
const RESULTS: &str = concat!("examples/", "results/");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace root")
        .to_path_buf()
}

/// The repository's files, relative to the root: `git ls-files` where git
/// and the repository are there, else a walk that skips hidden folders and
/// build outputs.
fn repo_files() -> Vec<String> {
    let root = root();
    if let Ok(out) = Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(["ls-files", "-z"])
        .output()
    {
        if out.status.success() && !out.stdout.is_empty() {
            return out
                .stdout
                .split(|&b| b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned())
                // Deleted in the working tree but not yet staged.
                .filter(|p| root.join(p).exists())
                .collect();
        }
    }
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.') && !name.starts_with("target") && name != "node_modules" {
                    stack.push(path);
                }
            } else if let Ok(rel) = path.strip_prefix(&root) {
                files.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    files
}

#[test]
fn every_entry_is_an_experiment_folder_with_a_readme_listed_in_the_index() {
    let dir = root().join(RESULTS);
    let index = std::fs::read_to_string(dir.join("README.md")).expect("results index README.md");
    let mut bad = Vec::new();
    let mut folders = 0;
    for e in std::fs::read_dir(&dir).expect("results folder").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if path.is_dir() {
            folders += 1;
            if !path.join("README.md").is_file() {
                bad.push(format!("{name}/ has no README.md"));
            }
            if !index.contains(&format!("]({name}/")) {
                bad.push(format!("{name}/ is not linked from the index"));
            }
        } else if name != "README.md" {
            bad.push(format!("{name} is a file, not an experiment folder"));
        }
    }
    assert!(folders > 0, "no experiment folders in {}", dir.display());
    assert!(bad.is_empty(), "results layout:\n{}", bad.join("\n"));
}

/// A run label in a file name: `_s` and digits before `.` or `_`,
/// `session`, or `issue` with an optional `-` before digits.
fn run_label(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    let b = lower.as_bytes();
    for i in 0..b.len() {
        if b[i..].starts_with(b"_s") {
            let digits = b[i + 2..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits > 0 && matches!(b.get(i + 2 + digits), Some(b'.') | Some(b'_')) {
                return Some("_sN");
            }
        }
        if b[i..].starts_with(b"issue") {
            let mut j = i + 5;
            if b.get(j) == Some(&b'-') {
                j += 1;
            }
            if b.get(j).is_some_and(u8::is_ascii_digit) {
                return Some("issueN");
            }
        }
    }
    lower.contains("session").then_some("session")
}

#[test]
fn run_label_pattern() {
    assert_eq!(run_label("maskbench_full_s18.md"), Some("_sN"));
    assert_eq!(run_label("maskbench_full_s13_rerun.jsonl"), Some("_sN"));
    assert_eq!(run_label("notes_issue-12.md"), Some("issueN"));
    // built at run time, so this file does not carry a label itself
    assert_eq!(run_label(&format!("{}7.md", "Issue")), Some("issueN"));
    assert_eq!(run_label("session_log.txt"), Some("session"));
    assert_eq!(run_label("spiffy_3m_blockcausal.md"), None);
    assert_eq!(run_label("criterion_s.md"), None);
    assert_eq!(run_label("hostile_loaders.rs"), None);
}

#[test]
fn no_file_name_carries_a_run_label() {
    let bad: Vec<String> = repo_files()
        .into_iter()
        .filter_map(|p| {
            let name = p.rsplit('/').next().unwrap_or(&p);
            run_label(name).map(|l| format!("{p} ({l})"))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "file names with run labels:\n{}",
        bad.join("\n")
    );
}

/// Every results path in `text`: the longest run of `[A-Za-z0-9_./-]`
/// after the folder's name, trailing `.`/`-` stripped; `None` for a
/// pattern (the run is followed by `*`, `{` or `<`).
fn results_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(RESULTS) {
        let start = from + at;
        let tail = &text[start..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)))
            .unwrap_or(tail.len());
        from = start + len;
        if tail[len..].starts_with(['*', '{', '<']) {
            continue;
        }
        let path = tail[..len].trim_end_matches(['.', '-']);
        out.push(path.to_string());
    }
    out
}

#[test]
fn results_paths_are_extracted() {
    let r = RESULTS;
    let text = format!(
        "see `{r}a/b.md`. And {r}c/d.json, {r}e/f.{{md,json}} and {r}g*.md; {r}h/.\n{r}<x>"
    );
    assert_eq!(
        results_paths(&text),
        vec![
            format!("{r}a/b.md"),
            format!("{r}c/d.json"),
            format!("{r}h/")
        ]
    );
}

#[test]
fn every_named_results_path_exists() {
    let root = root();
    let mut bad = Vec::new();
    for f in repo_files() {
        if !(f.ends_with(".rs") || f.ends_with(".md")) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(&f)) else {
            continue;
        };
        for p in results_paths(&text) {
            if !root.join(&p).exists() {
                bad.push(format!("{f}: {p}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "dangling results paths:\n{}",
        bad.join("\n")
    );
}
