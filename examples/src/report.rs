//! Output and command-line plumbing shared by the experiment binaries:
//! Markdown tables, JSON result files, number formatting, and the
//! [`CommonArgs`] (`--out`, `--quick`, `--seed`) every `fvo_*` binary
//! flattens into its `clap` parser.

use std::path::{Path, PathBuf};

/// The arguments every experiment binary takes: `--out DIR` (default
/// `target/experiments`), `--quick` (a smaller smoke run) and `--seed N`
/// (sampling experiments; each has its own default). Flatten it
/// into a binary's `#[derive(Parser)]` with `#[command(flatten)]`.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// Directory the JSON (and plot) results are written to.
    #[arg(long, default_value = "target/experiments")]
    pub out: PathBuf,
    /// A quick smoke run: fewer samples, settings and repeats.
    #[arg(long)]
    pub quick: bool,
    /// Seed of a sampling experiment (default: the seed of the recorded
    /// results, see each binary's `--help`); exact experiments ignore it.
    #[arg(long)]
    pub seed: Option<u64>,
}

impl CommonArgs {
    /// Parses the process arguments of a binary that takes only these,
    /// with `about` as its `--help` text; exits with clap's message on bad
    /// arguments (binaries with more flags flatten [`CommonArgs`] instead).
    pub fn parse_with_about(about: &'static str) -> CommonArgs {
        use clap::{Args, FromArgMatches};
        let name = std::env::args()
            .next()
            .and_then(|a| {
                std::path::Path::new(&a)
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "experiment".into());
        let cmd = CommonArgs::augment_args(clap::Command::new("experiment").bin_name(name))
            .about(about)
            .long_about(None);
        CommonArgs::from_arg_matches(&cmd.get_matches()).unwrap_or_else(|e| e.exit())
    }

    /// The `--seed` given, or this experiment's default seed.
    pub fn seed_or(&self, default: u64) -> u64 {
        self.seed.unwrap_or(default)
    }
}

/// A Markdown table built row by row.
#[derive(Debug, Clone, Default)]
pub struct MarkdownTable {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl MarkdownTable {
    /// An empty table with this header row.
    pub fn new<S: ToString>(header: &[S]) -> Self {
        MarkdownTable {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends one row (one cell per header column).
    pub fn row<S: ToString>(&mut self, cells: &[S]) {
        self.rows
            .push(cells.iter().map(|s| s.to_string()).collect());
    }

    /// The table as GitHub-flavoured Markdown, one line per row.
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
/// below 1e-4; `n/a` for NaN.
pub fn fmt_num(x: f64) -> String {
    if x.is_nan() {
        "n/a".into()
    } else if x != 0.0 && x.abs() < 1e-4 {
        format!("{x:.1e}")
    } else {
        format!("{x:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        common: CommonArgs,
    }

    #[test]
    fn common_args_defaults_and_flags() {
        let c = Cli::try_parse_from(["x"]).unwrap().common;
        assert_eq!(c.out, PathBuf::from("target/experiments"));
        assert!(!c.quick);
        assert_eq!(c.seed_or(16), 16);
        let c = Cli::try_parse_from(["x", "--out", "/tmp/o", "--quick", "--seed", "3"])
            .unwrap()
            .common;
        assert_eq!(c.out, PathBuf::from("/tmp/o"));
        assert!(c.quick);
        assert_eq!(c.seed_or(16), 3);
        assert!(Cli::try_parse_from(["x", "--bogus"]).is_err());
    }

    #[test]
    fn table_and_numbers() {
        let mut t = MarkdownTable::new(&["a", "b"]);
        t.row(&["1", "2"]);
        assert_eq!(t.render(), "| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert_eq!(fmt_num(0.5), "0.5000");
        assert_eq!(fmt_num(1e-6), "1.0e-6");
        assert_eq!(fmt_num(f64::NAN), "n/a");
    }
}
