//! Edit corpora: (before, after) pairs from JSONL files and from any local
//! git repository's history (the paper's corpora are HumanEvalFix-Py/JS
//! and ProbeEdit, §3), with size filters ([`CorpusFilter`]).
//!
//! - [`read_jsonl`]: one `{"before": …, "after": …}` object per line
//!   (other fields ignored, blank lines skipped). Cost: one read of the
//!   file and one JSON parse per line.
//! - [`git_history`]: for every non-merge commit, newest first, each
//!   *modified* regular file (`git log --raw`, status `M`, renames off)
//!   gives one pair (its blob before and after the commit). Git is run as
//!   a child process (`std::process::Command`): one `git log`, one
//!   `git cat-file --batch-check` for the blob sizes (so the size filter
//!   reads no content) and one `git cat-file --batch` for the contents of
//!   the pairs kept. Blobs that are not UTF-8 or contain a NUL byte are
//!   skipped and counted ([`GitCorpus::skipped_binary`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// One edit: the document before and after, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditPair {
    /// `D`.
    pub before: String,
    /// `D′`.
    pub after: String,
    /// `file:line` for JSONL, `commit:path` for git.
    pub source: String,
    /// The edit instruction, when the JSONL object has a string
    /// `instruction` field (HumanEvalFix does); `None` for git.
    pub instruction: Option<String>,
}

/// Which pairs to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorpusFilter {
    /// Most pairs kept, in file / history order (default `usize::MAX`).
    pub max_pairs: usize,
    /// Pairs whose `before` or `after` is longer than this many bytes are
    /// skipped (default `usize::MAX`).
    pub max_file_bytes: usize,
    /// Git: most commits read, newest first (default `usize::MAX`).
    pub max_commits: usize,
    /// Git: keep only paths ending with one of these suffixes (e.g.
    /// `".rs"`); empty keeps every path (default).
    pub suffixes: Vec<String>,
    /// Git: the revision whose history is read (default `None`: `HEAD`);
    /// pin it for a reproducible corpus.
    pub rev: Option<String>,
}

impl Default for CorpusFilter {
    fn default() -> Self {
        CorpusFilter {
            max_pairs: usize::MAX,
            max_file_bytes: usize::MAX,
            max_commits: usize::MAX,
            suffixes: Vec::new(),
            rev: None,
        }
    }
}

impl CorpusFilter {
    fn keeps_size(&self, before: usize, after: usize) -> bool {
        before <= self.max_file_bytes && after <= self.max_file_bytes
    }

    fn keeps_path(&self, path: &str) -> bool {
        self.suffixes.is_empty() || self.suffixes.iter().any(|s| path.ends_with(s.as_str()))
    }
}

/// Errors while loading a corpus.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CorpusError {
    /// Reading a file or talking to a child process failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A JSONL line is not an object with string `before` and `after`.
    #[error("{file}:{line}: {message}")]
    Jsonl {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A git command failed (not a repository, bad revision…).
    #[error("`git {args}` failed: {stderr}")]
    Git {
        /// Its arguments.
        args: String,
        /// Its standard error.
        stderr: String,
    },
    /// Git's output did not have the expected shape.
    #[error("unexpected git output: {0}")]
    GitOutput(String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CorpusError {
    let what = what.into();
    move |source| CorpusError::Io { what, source }
}

/// Reads `{"before", "after"}` pairs from a JSONL file (see the module
/// docs), applying `filter`'s `max_pairs` and `max_file_bytes`.
pub fn read_jsonl(path: &Path, filter: &CorpusFilter) -> Result<Vec<EditPair>, CorpusError> {
    let text = std::fs::read_to_string(path).map_err(io(format!("reading {}", path.display())))?;
    let file = path.display().to_string();
    let mut pairs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if pairs.len() >= filter.max_pairs {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let err = |message: String| CorpusError::Jsonl {
            file: file.clone(),
            line: i + 1,
            message,
        };
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| err(format!("bad JSON: {e}")))?;
        let field = |k: &str| {
            v.get(k)
                .and_then(|x| x.as_str())
                .map(str::to_owned)
                .ok_or_else(|| err(format!("no string field {k:?}")))
        };
        let (before, after) = (field("before")?, field("after")?);
        if filter.keeps_size(before.len(), after.len()) {
            pairs.push(EditPair {
                before,
                after,
                source: format!("{file}:{}", i + 1),
                instruction: v
                    .get("instruction")
                    .and_then(|x| x.as_str())
                    .map(str::to_owned),
            });
        }
    }
    Ok(pairs)
}

/// Pairs from a repository's history and what was left out.
#[derive(Debug, Clone, Default)]
pub struct GitCorpus {
    /// The pairs kept, newest commit first.
    pub pairs: Vec<EditPair>,
    /// Commits read.
    pub commits: usize,
    /// Modified regular files seen (before any filter).
    pub modified_files: usize,
    /// Skipped by `max_file_bytes`.
    pub skipped_size: usize,
    /// Skipped by `suffixes`.
    pub skipped_path: usize,
    /// Skipped as binary (not UTF-8, or a NUL byte).
    pub skipped_binary: usize,
}

fn git(repo: &Path, args: &[&str]) -> Result<Vec<u8>, CorpusError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .map_err(io("running git"))?;
    if !out.status.success() {
        return Err(CorpusError::Git {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(out.stdout)
}

/// Runs `git cat-file <mode>` with one object name per line on stdin;
/// returns its whole stdout. The requests are written from a thread so a
/// large output cannot block the writer.
fn cat_file(repo: &Path, mode: &str, names: &[String]) -> Result<Vec<u8>, CorpusError> {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["cat-file", mode])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io("running git cat-file"))?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| CorpusError::GitOutput("no stdin".into()))?;
    let input: String = names.iter().map(|n| format!("{n}\n")).collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let mut out = Vec::new();
    child
        .stdout
        .take()
        .ok_or_else(|| CorpusError::GitOutput("no stdout".into()))?
        .read_to_end(&mut out)
        .map_err(io("reading git cat-file"))?;
    let status = child.wait().map_err(io("waiting for git cat-file"))?;
    writer
        .join()
        .map_err(|_| CorpusError::GitOutput("writer thread panicked".into()))?
        .map_err(io("writing to git cat-file"))?;
    if !status.success() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        return Err(CorpusError::Git {
            args: format!("cat-file {mode}"),
            stderr: err.trim().to_owned(),
        });
    }
    Ok(out)
}

/// A modified file of one commit: (commit, path, old blob, new blob).
type Change = (String, String, String, String);

/// Builds (before, after) pairs from `repo`'s history (see the module
/// docs), applying every field of `filter`. Errors if `repo` is not a git
/// repository or git is missing.
pub fn git_history(repo: &Path, filter: &CorpusFilter) -> Result<GitCorpus, CorpusError> {
    let mut args = vec![
        "log",
        "--no-merges",
        "--raw",
        "--no-abbrev",
        "--no-renames",
        "--format=%x01%H",
    ];
    let n;
    if filter.max_commits != usize::MAX {
        n = format!("-n{}", filter.max_commits);
        args.push(&n);
    }
    if let Some(r) = &filter.rev {
        args.push("--end-of-options");
        args.push(r);
    }
    let log = git(repo, &args)?;
    let mut corpus = GitCorpus::default();
    let mut changes: Vec<Change> = Vec::new();
    let mut commit = String::new();
    for line in BufReader::new(&log[..]).lines() {
        let line = line.map_err(io("reading git log"))?;
        if let Some(h) = line.strip_prefix('\u{1}') {
            commit = h.to_owned();
            corpus.commits += 1;
            continue;
        }
        let Some(raw) = line.strip_prefix(':') else {
            continue;
        };
        // ":100644 100644 <old> <new> M\t<path>"
        let (meta, path) = raw
            .split_once('\t')
            .ok_or_else(|| CorpusError::GitOutput(format!("raw line without a tab: {line}")))?;
        let f: Vec<&str> = meta.split(' ').collect();
        if f.len() != 5 {
            return Err(CorpusError::GitOutput(format!("raw line: {line}")));
        }
        let regular = |m: &str| m == "100644" || m == "100755";
        if f[4] != "M" || !regular(f[0]) || !regular(f[1]) {
            continue;
        }
        corpus.modified_files += 1;
        if !filter.keeps_path(path) {
            corpus.skipped_path += 1;
            continue;
        }
        changes.push((commit.clone(), path.to_owned(), f[2].into(), f[3].into()));
    }
    // Sizes first: the size filter reads no content.
    let names: Vec<String> = changes
        .iter()
        .flat_map(|c| [c.2.clone(), c.3.clone()])
        .collect();
    let sizes = parse_sizes(&cat_file(repo, "--batch-check", &names)?)?;
    if sizes.len() != names.len() {
        return Err(CorpusError::GitOutput(format!(
            "{} sizes for {} blobs",
            sizes.len(),
            names.len()
        )));
    }
    let mut kept: Vec<&Change> = Vec::new();
    for (c, s) in changes.iter().zip(sizes.chunks(2)) {
        if filter.keeps_size(s[0], s[1]) {
            kept.push(c);
        } else {
            corpus.skipped_size += 1;
        }
    }
    // Contents, in chunks of pairs until `max_pairs` are kept.
    for chunk in kept.chunks(256) {
        if corpus.pairs.len() >= filter.max_pairs {
            break;
        }
        let names: Vec<String> = chunk
            .iter()
            .flat_map(|c| [c.2.clone(), c.3.clone()])
            .collect();
        let blobs = parse_blobs(&cat_file(repo, "--batch", &names)?)?;
        for (c, b) in chunk.iter().zip(blobs.chunks(2)) {
            if corpus.pairs.len() >= filter.max_pairs {
                break;
            }
            let text = |v: &[u8]| {
                if v.contains(&0) {
                    None
                } else {
                    String::from_utf8(v.to_vec()).ok()
                }
            };
            match (text(&b[0]), text(&b[1])) {
                (Some(before), Some(after)) => corpus.pairs.push(EditPair {
                    before,
                    after,
                    source: format!("{}:{}", &c.0[..c.0.len().min(12)], c.1),
                    instruction: None,
                }),
                _ => corpus.skipped_binary += 1,
            }
        }
    }
    Ok(corpus)
}

/// `<sha> <type> <size>` per line.
fn parse_sizes(out: &[u8]) -> Result<Vec<usize>, CorpusError> {
    let text = std::str::from_utf8(out).map_err(|_| CorpusError::GitOutput("non-UTF-8".into()))?;
    text.lines()
        .map(|l| {
            l.rsplit(' ')
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| CorpusError::GitOutput(format!("batch-check line: {l}")))
        })
        .collect()
}

/// `<sha> <type> <size>\n<content>\n` per object.
fn parse_blobs(out: &[u8]) -> Result<Vec<Vec<u8>>, CorpusError> {
    let mut blobs = Vec::new();
    let mut at = 0usize;
    while at < out.len() {
        let nl = out[at..]
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| CorpusError::GitOutput("batch header without newline".into()))?;
        let header = String::from_utf8_lossy(&out[at..at + nl]).into_owned();
        let size: usize = header
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| CorpusError::GitOutput(format!("batch header: {header}")))?;
        let from = at + nl + 1;
        let to = from + size;
        if to > out.len() {
            return Err(CorpusError::GitOutput("truncated blob".into()));
        }
        blobs.push(out[from..to].to_vec());
        at = to + 1;
    }
    Ok(blobs)
}
