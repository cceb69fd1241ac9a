//! The Copy-as-Decode experiment code of `examples::copy_study`: oracle
//! programs round-trip on the real edit corpora (`../shared/data/edits/`;
//! the paper's "oracle programs round-trip on all 482 cases" result, here
//! on ripgrep and HumanEvalFix-Py/JS) and on git histories, the corpus
//! readers' typed errors and filters, span-wise vs whole tokenization,
//! and the baselines: regeneration and prompt lookup match their closed
//! forms, prompt lookup is lossless, a short window slides.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use examples::copy_study::{
    git_history, lookup_draft, prompt_lookup, read_jsonl, regenerate, span_tokenization, timed_run,
    CorpusError, CorpusFilter, LookupConfig, Target,
};
use proptest::prelude::*;
use zapspec_copy::{oracle_program, resolve, ExecConfig, ExecError, LineIndex, Program};
use zapspec_core::{TokenId, Vocabulary};
use zapspec_testkit::toy::{BigramLm, Windowed};
use zapspec_vocab::TokenVocab;

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

/// This repository's own history (a third corpus): pairs from
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

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        st.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&st.stderr)
    );
}

/// A repository whose history modifies a text file, a binary file (NUL
/// bytes) and a non-UTF-8 file: one pair, two skipped as binary; the size
/// filter skips by blob size.
#[test]
fn git_history_skips_binary_and_large() {
    if Command::new("git").arg("--version").output().is_err() {
        println!("skipping: no git");
        return;
    }
    let dir = std::env::temp_dir().join(format!("copy-decode-git-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q"]);
    std::fs::write(dir.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(dir.join("b.bin"), b"\0\x01\n").unwrap();
    std::fs::write(dir.join("c.txt"), b"\xff\xfe\n").unwrap();
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "one"]);
    std::fs::write(dir.join("a.txt"), "one\n2\ntwo\n").unwrap();
    std::fs::write(dir.join("b.bin"), b"\0\x02\n").unwrap();
    std::fs::write(dir.join("c.txt"), b"\xff\xfd\n").unwrap();
    git(&dir, &["commit", "-q", "-am", "two"]);
    let g = git_history(&dir, &CorpusFilter::default()).unwrap();
    assert_eq!(g.commits, 2);
    assert_eq!(g.modified_files, 3);
    assert_eq!(g.skipped_binary, 2);
    assert_eq!(g.pairs.len(), 1);
    assert_eq!(g.pairs[0].before, "one\ntwo\n");
    assert_eq!(g.pairs[0].after, "one\n2\ntwo\n");
    assert!(g.pairs[0].source.ends_with(":a.txt"));
    let small = CorpusFilter {
        max_file_bytes: 8,
        ..CorpusFilter::default()
    };
    let g = git_history(&dir, &small).unwrap();
    assert_eq!((g.skipped_size, g.pairs.len()), (1, 0));
    let _ = std::fs::remove_dir_all(&dir);
}

fn bytes_vocab() -> Arc<TokenVocab> {
    Arc::new(TokenVocab::bytes())
}

/// Documents of up to 8 short lines (the last may lack its newline).
fn line_doc() -> impl Strategy<Value = String> {
    "([a-c {};]{0,6}\n){0,7}[a-c ]{0,4}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Teacher-forced on `D′` with a byte vocabulary: both baselines
    /// output `D′`; forwards = 1 + |D′| (regeneration), 1 + rounds
    /// (prompt lookup).
    #[test]
    fn baseline_closed_forms(before in line_doc(), after in line_doc(), seed in 0u64..4) {
        let vocab = bytes_vocab();
        let tok = |s: &str| vocab.encode(s).unwrap();
        let prompt = tok(&before);
        let pf = usize::from(!prompt.is_empty());
        let mut lm = BigramLm::new(vocab.len(), seed);
        let cfg = ExecConfig::default();
        let target = tok(&after);
        let re = regenerate(&mut lm, &*vocab, &prompt, Target::Teacher(&target), &cfg).unwrap();
        prop_assert_eq!(&re.output, &after);
        prop_assert_eq!(re.stats.forwards, 1 + after.len());
        prop_assert_eq!(re.stats.forwards - re.stats.prompt_forwards, after.len() + 1 - pf);

        let pl = prompt_lookup(&mut lm, &*vocab, &prompt, Target::Teacher(&target), &LookupConfig::default(), &cfg).unwrap();
        prop_assert_eq!(&pl.output, &after);
        prop_assert_eq!(pl.stats.decided + pl.stats.accepted, after.len());
        prop_assert_eq!(pl.stats.forwards, 1 + pl.stats.decided);
    }
}

/// Greedy prompt lookup equals greedy regeneration (losslessness), on a
/// bigram model whose greedy text cycles (so drafts are accepted).
#[test]
fn prompt_lookup_is_lossless() {
    let vocab = bytes_vocab();
    for seed in 0..6u64 {
        let mut lm = BigramLm::new(vocab.len(), seed);
        let prompt = vocab.encode("abcabcabd").unwrap();
        let target = Target::Greedy {
            eos: vocab.eos(),
            max_new: 200,
        };
        let cfg = ExecConfig::default();
        let plain = regenerate(&mut lm, &*vocab, &prompt, target, &cfg).unwrap();
        let fast = prompt_lookup(
            &mut lm,
            &*vocab,
            &prompt,
            target,
            &LookupConfig::default(),
            &cfg,
        )
        .unwrap();
        assert_eq!(plain.tokens, fast.tokens, "seed {seed}");
        assert!(fast.stats.forwards <= plain.stats.forwards);
        if plain.tokens.len() == 200 {
            // A cycle: drafts from the output itself are accepted.
            assert!(fast.stats.accepted > 0, "seed {seed}");
        }
    }
}

#[test]
fn lookup_draft_takes_the_most_recent_longest_match() {
    let cfg = LookupConfig {
        max_ngram: 3,
        min_ngram: 1,
        num_draft: 2,
    };
    // suffix [1,2] occurs at 0 and 4 (most recent: 4 → draft [7, 1]).
    assert_eq!(lookup_draft(&[1, 2, 5, 9, 1, 2, 7, 1, 2], &cfg), vec![7, 1]);
    assert_eq!(lookup_draft(&[1, 2, 3], &cfg), Vec::<TokenId>::new());
    assert_eq!(lookup_draft(&[], &cfg), Vec::<TokenId>::new());
}

#[test]
fn baselines_on_a_short_window() {
    let vocab = bytes_vocab();
    let tok = |s: &str| vocab.encode(s).unwrap();
    let before = "line one\nline two\nline three\nline four\n".repeat(4);
    let after = before.replace("three", "3");
    let mut lm = Windowed {
        inner: BigramLm::new(vocab.len(), 1),
        window: 24,
    };
    let prompt = tok(&before);
    let target = tok(&after);
    let cfg = ExecConfig::default();
    let pl = timed_run(&mut lm, |m| {
        prompt_lookup(
            m,
            &*vocab,
            &prompt,
            Target::Teacher(&target),
            &LookupConfig::default(),
            &cfg,
        )
    })
    .unwrap();
    assert_eq!(pl.run.output, after);
    assert!(pl.run.stats.slide_forwards > 0);
    assert!(pl.prompt_time <= pl.elapsed);
    assert!(pl.edit_time() <= pl.elapsed);
    let mut tiny = Windowed {
        inner: BigramLm::new(vocab.len(), 1),
        window: 1,
    };
    let cfg1 = ExecConfig {
        slide_keep: 1,
        ..ExecConfig::default()
    };
    let err = regenerate(&mut tiny, &*vocab, &prompt, Target::Teacher(&target), &cfg1);
    assert!(matches!(err, Err(ExecError::Window { .. })), "{err:?}");
}

/// Span-wise vs whole tokenization: bytes never differ; o200k joins a run
/// of newlines (`"\n\n"`) across a span boundary.
#[test]
fn span_tokenization_bytes_and_o200k() {
    // copy 1-1 "a\n", gen "\n", copy 2-2 "b\n": o200k reads "\n\n" as one
    // token across the first boundary.
    let before = "a\nb\n";
    let after = "a\n\nb\n";
    let bytes = bytes_vocab();
    let st = span_tokenization(before, after, &|s: &str| bytes.encode(s).unwrap(), &*bytes);
    assert_eq!(
        (
            st.pairs,
            st.pairs_differing,
            st.boundaries,
            st.boundaries_crossed
        ),
        (1, 0, 2, 0)
    );
    assert_eq!(st.whole_tokens, after.len());
    let o200k = zapspec_vocab::TokenVocab::tiktoken(zapspec_vocab::TiktokenBpe::O200k).unwrap();
    let st = span_tokenization(before, after, &|s: &str| o200k.encode(s).unwrap(), &o200k);
    assert_eq!(st.boundaries, 2);
    assert_eq!(st.boundaries_crossed, 1, "{st:?}");
    assert_eq!(st.pairs_differing, 1);
}
