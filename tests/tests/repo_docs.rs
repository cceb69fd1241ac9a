//! Docs a newcomer can trust, checked against what exists:
//!
//! * README's layout table has one row per workspace member, with its
//!   package name, and every type or function it names in backticks in the
//!   "holds" column occurs in that crate's sources;
//! * no development-process labels (issue or session numbers) in the
//!   repository's code, docs and manifests (file names: `results_layout`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Workspace members (paths) from the root manifest.
fn members() -> Vec<String> {
    let toml = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let start = toml.find("members = [").expect("members") + "members = [".len();
    let end = start + toml[start..].find(']').unwrap();
    toml[start..end]
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn package_name(member: &str) -> String {
    let toml = std::fs::read_to_string(root().join(member).join("Cargo.toml")).unwrap();
    let line = toml
        .lines()
        .find(|l| l.trim_start().starts_with("name = "))
        .expect("package name");
    line.split('"').nth(1).unwrap().to_string()
}

/// Every `.rs` file under `dir`, concatenated.
fn sources(dir: &Path) -> String {
    let mut out = String::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out += &sources(&p);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out += &std::fs::read_to_string(&p).unwrap_or_default();
        }
    }
    out
}

/// README's layout table: path → (package, holds, status).
fn layout_table() -> BTreeMap<String, (String, String, String)> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find("## Layout").expect("a Layout section");
    let mut rows = BTreeMap::new();
    for line in readme[start..].lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        if cells.len() < 4 || !cells[0].starts_with('`') {
            continue;
        }
        let path = cells[0].trim_matches('`').trim_end_matches('/').to_string();
        rows.insert(
            path,
            (
                // the first name in backticks (a note may follow)
                cells[1].split('`').nth(1).unwrap_or(cells[1]).to_string(),
                cells[2].to_string(),
                cells[3].to_string(),
            ),
        );
    }
    rows
}

#[test]
fn readme_layout_table_is_the_workspace() {
    let table = layout_table();
    let members = members();
    for m in &members {
        let (pkg, holds, status) = table
            .get(m)
            .unwrap_or_else(|| panic!("README's layout table has no row for `{m}/`"));
        assert_eq!(*pkg, package_name(m), "package of `{m}/` in README");
        assert!(!status.is_empty(), "`{m}/` has no status in README");
        let src = sources(&root().join(m));
        // `Name`, `Name::item` or `name()` in backticks: names of code
        for quoted in holds.split('`').skip(1).step_by(2) {
            let ident: String = quoted
                .split("::")
                .last()
                .unwrap_or(quoted)
                .trim_end_matches("()")
                .to_string();
            let is_code = ident.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && ident.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if is_code {
                assert!(
                    src.contains(&ident),
                    "README says `{m}/` holds `{quoted}`, which its sources do not mention"
                );
            }
        }
    }
    for path in table.keys() {
        assert!(
            members.contains(path) || root().join(path).exists(),
            "README's layout table lists `{path}/`, which does not exist"
        );
    }
}

/// Files of the repository worth scanning (no build output, no data).
fn repo_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if name.starts_with('.')
                || name.starts_with("target")
                || ["models", "venv", "node_modules", "__pycache__"].contains(&name.as_str())
            {
                continue;
            }
            repo_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// `text` has a label: the word "issue" or "session" (any case, plural
/// too) followed by a number, with or without `#` — the names of
/// development work, not of the project.
fn label_in(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    for word in ["issue", "session"] {
        let mut from = 0;
        while let Some(i) = lower[from..].find(word) {
            let at = from + i;
            from = at + word.len();
            let before_ok = at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric();
            let rest = lower[from..].trim_start_matches('s');
            let rest = rest.strip_prefix(' ').unwrap_or(rest);
            let rest = rest.strip_prefix('#').unwrap_or(rest);
            if before_ok && rest.starts_with(|c: char| c.is_ascii_digit()) {
                let end = (from + 12).min(text.len());
                let end = (end..=text.len())
                    .find(|&e| text.is_char_boundary(e))
                    .unwrap_or(text.len());
                return Some(text[at..end].to_string());
            }
        }
    }
    None
}

#[test]
fn no_process_labels_in_code_or_docs() {
    let mut files = Vec::new();
    repo_files(&root(), &mut files);
    let mut bad = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(root()).unwrap_or(f).display().to_string();
        let ext = f.extension().map(|x| x.to_string_lossy().into_owned());
        if !matches!(
            ext.as_deref(),
            Some("rs" | "md" | "toml" | "py" | "sh" | "pyi")
        ) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            if let Some(l) = label_in(line) {
                bad.push(format!("{rel}:{}: {l:?}", i + 1));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "development-process labels:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_label_finder_finds_labels() {
    // built at run time, so this file does not carry what it looks for
    let (i, s) = ("issue", "session");
    assert!(label_in(&format!("fixed in {i} 14.")).is_some());
    assert!(label_in(&format!("(I{} #3)", &i[1..])).is_some());
    assert!(label_in(&format!("{s}s 16-18 changed")).is_some());
    assert!(label_in("see the issues tracker").is_none());
    assert!(label_in("tissue 4").is_none());
}
