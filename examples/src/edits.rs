//! Edit corpora for the `copy_*` experiments: the command-line options
//! ([`CorpusArgs`]) and one loader ([`load`]) shared by `copy_coverage` and
//! `copy_exec`, over [`crate::copy_study::corpus`] (JSONL files and a git
//! repository's history, with size filters).

use std::path::PathBuf;

use crate::copy_study::{git_history, read_jsonl, CorpusFilter};
use anyhow::{Context, Result};

/// Where the (before, after) pairs come from.
#[derive(clap::Args, Debug, Clone)]
pub struct CorpusArgs {
    /// JSONL files of {"before", "after"} pairs.
    #[arg(default_values = [
        "../shared/data/edits/humanevalfix-py.jsonl",
        "../shared/data/edits/humanevalfix-js.jsonl",
        "../shared/data/edits/ripgrep.jsonl",
    ])]
    pub paths: Vec<PathBuf>,
    /// Skip the JSONL files (e.g. with `--git`, to run a repository alone).
    #[arg(long)]
    pub no_jsonl: bool,
    /// A git repository: one more corpus from its history (each non-merge
    /// commit's modified files, newest first).
    #[arg(long)]
    pub git: Option<PathBuf>,
    /// Git: skip files larger than this many bytes (before or after).
    #[arg(long, default_value_t = 100_000)]
    pub git_max_file_bytes: usize,
    /// Git: most pairs.
    #[arg(long, default_value_t = 1000)]
    pub git_max_pairs: usize,
    /// Git: most commits read.
    #[arg(long)]
    pub git_max_commits: Option<usize>,
    /// Git: keep only paths with these suffixes (comma-separated, e.g.
    /// `.rs,.md`); none keeps every path.
    #[arg(long, value_delimiter = ',')]
    pub git_suffix: Vec<String>,
    /// Git: read the history of this revision (default `HEAD`).
    #[arg(long)]
    pub git_rev: Option<String>,
}

/// One corpus: its name, pairs and how it was built.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// File stem for JSONL, `git-<folder>` for a repository.
    pub name: String,
    /// (before, after).
    pub pairs: Vec<(String, String)>,
    /// Where the pairs came from and what the filters left out.
    pub note: String,
}

/// Loads the corpora of `args`: each JSONL file that exists (at most
/// `limit` pairs each; missing files are reported and skipped), then the
/// git repository if given (at most `min(limit, --git-max-pairs)` pairs).
pub fn load(args: &CorpusArgs, limit: usize) -> Result<Vec<Corpus>> {
    let mut out = Vec::new();
    if !args.no_jsonl {
        for path in &args.paths {
            if !path.exists() {
                println!("skipping {}: not found", path.display());
                continue;
            }
            let filter = CorpusFilter {
                max_pairs: limit,
                ..CorpusFilter::default()
            };
            let pairs = read_jsonl(path, &filter)?;
            out.push(Corpus {
                name: path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                note: format!("{} ({} pairs)", path.display(), pairs.len()),
                pairs: pairs.into_iter().map(|p| (p.before, p.after)).collect(),
            });
        }
    }
    if let Some(repo) = &args.git {
        let filter = CorpusFilter {
            max_pairs: limit.min(args.git_max_pairs),
            max_file_bytes: args.git_max_file_bytes,
            max_commits: args.git_max_commits.unwrap_or(usize::MAX),
            suffixes: args.git_suffix.clone(),
            rev: args.git_rev.clone(),
        };
        let g = git_history(repo, &filter)
            .with_context(|| format!("reading the history of {}", repo.display()))?;
        let folder = std::fs::canonicalize(repo)
            .ok()
            .and_then(|p| p.file_name().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "repo".into());
        let note = format!(
            "git history of {} ({folder}) at {}: {} non-merge commits, {} modified files; kept {} pairs \
             (files ≤ {} bytes{}{}); skipped {} by size, {} by path, {} binary",
            repo.display(),
            args.git_rev.as_deref().unwrap_or("HEAD"),
            g.commits,
            g.modified_files,
            g.pairs.len(),
            args.git_max_file_bytes,
            if args.git_suffix.is_empty() {
                String::new()
            } else {
                format!(", paths ending {}", args.git_suffix.join(" / "))
            },
            if filter.max_pairs == usize::MAX {
                String::new()
            } else {
                format!(", at most {} pairs", filter.max_pairs)
            },
            g.skipped_size,
            g.skipped_path,
            g.skipped_binary,
        );
        println!("{note}");
        out.push(Corpus {
            name: format!("git-{folder}"),
            pairs: g.pairs.into_iter().map(|p| (p.before, p.after)).collect(),
            note,
        });
    }
    Ok(out)
}
