//! Output helpers of the experiment binaries: Markdown tables and JSON files.

use std::path::{Path, PathBuf};

/// A Markdown table built row by row.
#[derive(Debug, Clone, Default)]
pub struct MarkdownTable {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl MarkdownTable {
    pub fn new<S: ToString>(header: &[S]) -> Self {
        MarkdownTable {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row<S: ToString>(&mut self, cells: &[S]) {
        self.rows
            .push(cells.iter().map(|s| s.to_string()).collect());
    }

    pub fn render(&self) -> String {
        let mut s = format!(
            "| {} |\n|{}|\n",
            self.header.join(" | "),
            vec!["---"; self.header.len()].join("|")
        );
        for r in &self.rows {
            s.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        s
    }
}

/// Writes `value` as pretty JSON to `dir/name.json`, creating `dir`.
pub fn write_json(dir: &Path, name: &str, value: &serde_json::Value) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{name}.json"));
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    std::fs::write(&path, text)?;
    Ok(path)
}

/// Formats a small probability-like number: fixed 4 decimals, or scientific
/// below 1e-4.
pub fn fmt_num(x: f64) -> String {
    if x.is_nan() {
        "n/a".into()
    } else if x != 0.0 && x.abs() < 1e-4 {
        format!("{x:.1e}")
    } else {
        format!("{x:.4}")
    }
}

/// The `--out DIR` argument (default `target/experiments`) and `--quick`.
#[derive(Debug, Clone)]
pub struct CommonArgs {
    pub out: PathBuf,
    pub quick: bool,
}

impl CommonArgs {
    /// Parses `--out DIR` and `--quick` from the process arguments; anything
    /// else is an error message.
    pub fn from_env() -> Result<Self, String> {
        Self::parse(std::env::args().skip(1))
    }

    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Self, String> {
        let mut out = PathBuf::from("target/experiments");
        let mut quick = false;
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--out" => out = it.next().ok_or("--out needs a directory")?.into(),
                "--quick" => quick = true,
                other => {
                    return Err(format!(
                        "unknown argument {other:?}; usage: [--out DIR] [--quick]"
                    ))
                }
            }
        }
        Ok(CommonArgs { out, quick })
    }
}
