//! Oracle programs on the real edit corpora (`../shared/data/edits/`; the
//! paper's "oracle programs round-trip on all 482 cases" result, here on
//! ripgrep and HumanEvalFix-Py/JS) and hostile documents.

use std::path::PathBuf;

use zapspec_copy::{
    git_history, oracle_program, read_jsonl, resolve, CorpusError, CorpusFilter, LineIndex, Op,
    Program, ResolveError,
};

fn edits_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/edits")
}

#[test]
fn corpora_round_trip() {
    let dir = edits_dir();
    for name in ["ripgrep", "humanevalfix-py", "humanevalfix-js"] {
        let path = dir.join(format!("{name}.jsonl"));
        if !path.exists() {
            println!("skipping corpus {name}: {} is absent", path.display());
            continue;
        }
        let corpus = read_jsonl(&path, &CorpusFilter::default()).unwrap();
        let (mut pairs, mut ops, mut copied_lines, mut out_lines) =
            (0usize, 0usize, 0usize, 0usize);
        let (mut gen_bytes, mut out_bytes) = (0usize, 0usize);
        for (i, pair) in corpus.iter().enumerate() {
            let (before, after) = (pair.before.as_str(), pair.after.as_str());
            let p = oracle_program(before, after);
            let printed = p.print();
            let q = Program::parse(&printed).unwrap_or_else(|e| {
                panic!("{name}:{}: printed program does not parse: {e}", i + 1)
            });
            assert_eq!(q, p, "{name}:{}: parse(print(p)) != p", i + 1);
            assert_eq!(q.print(), printed, "{name}:{}", i + 1);
            let got = resolve(&q, before)
                .unwrap_or_else(|e| panic!("{name}:{}: does not resolve: {e}", i + 1));
            assert!(
                got == after,
                "{name}:{}: resolved text differs from `after`",
                i + 1
            );
            let st = p.stats();
            pairs += 1;
            ops += st.ops;
            copied_lines += st.copied_lines;
            gen_bytes += st.generated_bytes;
            out_lines += LineIndex::new(after).len();
            out_bytes += after.len();
        }
        assert!(pairs > 0, "{name}: no pairs");
        println!(
            "{name}: {pairs} pairs, 100% round-trip, {ops} ops ({:.2}/pair), \
             {:.1}% of output lines copied, {:.1}% of output bytes generated",
            ops as f64 / pairs as f64,
            100.0 * copied_lines as f64 / out_lines.max(1) as f64,
            100.0 * gen_bytes as f64 / out_bytes.max(1) as f64,
        );
    }
}

#[test]
fn hostile_documents() {
    // Empty document: no lines, every copy fails, gens work.
    let one = |s, e| Program::new(vec![Op::copy(s, e)]);
    assert_eq!(
        resolve(&one(1, 1), ""),
        Err(ResolveError::OutOfRange {
            op: 0,
            start: 1,
            end: 1,
            lines: 0
        })
    );
    assert_eq!(oracle_program("", ""), Program::default());

    // A million lines.
    let n = 1_000_000;
    let doc: String = (0..n).map(|i| format!("{}\n", i % 10)).collect();
    assert_eq!(resolve(&one(1, n), &doc).as_deref(), Ok(doc.as_str()));
    assert_eq!(
        resolve(&one(1, n + 1), &doc),
        Err(ResolveError::OutOfRange {
            op: 0,
            start: 1,
            end: n + 1,
            lines: n
        })
    );
    let ix = LineIndex::new(&doc);
    assert_eq!(ix.line(n), Some("9\n"));
    assert_eq!(ix.span(n - 1, n), Some("8\n9\n"));
    let p = Program::parse("<program>\n<copy lines=\"1-1000000\"/>\n</program>").unwrap();
    assert_eq!(ix.resolve(&p).map(|s| s.len()), Ok(doc.len()));

    // NUL bytes and other control characters are ordinary text.
    let nul = "a\0b\n\0\n\0\r\n\0";
    assert_eq!(LineIndex::new(nul).len(), 4);
    let after = "\0\n\0x\0\n\0";
    let p = oracle_program(nul, after);
    assert_eq!(
        resolve(&Program::parse(&p.print()).unwrap(), nul).as_deref(),
        Ok(after)
    );
    assert_eq!(resolve(&one(2, 4), nul).as_deref(), Ok("\0\n\0\r\n\0"));
}

/// This repository's own history: pairs from
/// the last 30 commits' modified files up to 64 KiB, each round-tripping
/// through its oracle program; the filters hold.
#[test]
fn git_history_round_trip() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let filter = CorpusFilter {
        max_pairs: 40,
        max_file_bytes: 64 * 1024,
        max_commits: 30,
        suffixes: vec![".rs".into(), ".md".into(), ".toml".into()],
        rev: Some("HEAD".into()),
    };
    let corpus = match git_history(&repo, &filter) {
        Ok(c) => c,
        // A source tarball without `.git`: nothing to test.
        Err(CorpusError::Git { stderr, .. }) => {
            println!("skipping: not a git checkout ({stderr})");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(corpus.commits <= 30);
    assert!(corpus.pairs.len() <= 40);
    for p in &corpus.pairs {
        assert!(p.before.len() <= 64 * 1024 && p.after.len() <= 64 * 1024);
        assert!(
            [".rs", ".md", ".toml"]
                .iter()
                .any(|s| p.source.ends_with(s)),
            "{}",
            p.source
        );
        let prog = oracle_program(&p.before, &p.after);
        let q = Program::parse(&prog.print()).unwrap();
        assert_eq!(
            resolve(&q, &p.before).as_deref(),
            Ok(p.after.as_str()),
            "{}",
            p.source
        );
    }
    println!(
        "git: {} commits, {} modified files, {} pairs (skipped: {} size, {} path, {} binary)",
        corpus.commits,
        corpus.modified_files,
        corpus.pairs.len(),
        corpus.skipped_size,
        corpus.skipped_path,
        corpus.skipped_binary
    );
}

/// A folder that is not a repository: a typed error, no panic.
#[test]
fn git_history_not_a_repo() {
    let dir = std::env::temp_dir().join(format!("copy-decode-not-a-repo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let r = git_history(&dir, &CorpusFilter::default());
    let _ = std::fs::remove_dir(&dir);
    assert!(matches!(r, Err(CorpusError::Git { .. })), "{r:?}");
}

/// Bad JSONL: the file and line are named.
#[test]
fn jsonl_errors_name_the_line() {
    let path = std::env::temp_dir().join(format!("copy-decode-bad-{}.jsonl", std::process::id()));
    std::fs::write(
        &path,
        "{\"before\": \"a\", \"after\": \"b\"}\n\n{\"before\": 1}\n",
    )
    .unwrap();
    let r = read_jsonl(&path, &CorpusFilter::default());
    let _ = std::fs::remove_file(&path);
    match r {
        Err(CorpusError::Jsonl { line, .. }) => assert_eq!(line, 3),
        other => panic!("{other:?}"),
    }
}
