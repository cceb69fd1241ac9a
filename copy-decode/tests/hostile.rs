//! Hostile inputs ("a million lines, empty, binary, very long
//! lines"): clear errors or correct output, never a panic, and bounded
//! memory in the token FSM for a million-line document.
//!
//! The FSM's per-document digit automaton is arithmetic
//! (`fsm::digits_viable`, `O(log n)` per digit, no table of `n` states);
//! its only per-document memory is the mask cache, capped by
//! `FsmConfig::mask_cache_cap`, so `n = 1,000,000` costs no more than
//! `n = 10` beyond the masks it visits.

mod ctxlm;
use ctxlm::CtxLm;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use zapspec_copy::{
    git_history, oracle_program, resolve, CanonicalTokens, CopyDecoder, CorpusFilter, ExecConfig,
    FsmConfig, LineIndex, Op, Program, ProgramConstraint, ProgramFsm, ResolveError, TokenBoundary,
};
use zapspec_core::Constraint;
use zapspec_vocab::TokenVocab;

/// Feeds `text`'s byte tokens, checking mask == advance at each; the
/// index of the first refused byte, or `None`.
fn feed(
    c: &mut ProgramConstraint<Arc<TokenVocab>>,
    vocab: &TokenVocab,
    text: &str,
) -> Option<usize> {
    for (i, &t) in vocab.encode(text).unwrap().iter().enumerate() {
        let mask = c.mask();
        let ok = c.advance(t).is_ok();
        assert_eq!(
            mask.contains(t),
            ok,
            "mask and advance disagree at byte {i}"
        );
        if !ok {
            return Some(i);
        }
    }
    None
}

/// A million-line document: the FSM allows exactly `1..=1,000,000`, the
/// mask cache stays under its cap, and resolve / oracle / execution are
/// exact.
#[test]
fn million_lines() {
    let n = 1_000_000usize;
    let vocab = Arc::new(TokenVocab::bytes());
    let cap = 64;
    let fsm = Arc::new(
        ProgramFsm::new(
            Arc::clone(&vocab),
            n,
            FsmConfig {
                mask_cache_cap: cap,
            },
        )
        .unwrap(),
    );
    let ok = "<program>\n<copy lines=\"999999-1000000\"/>\n<copy lines=\"1-1000000\"/>\n<gen>x</gen>\n</program>";
    let mut c = ProgramConstraint::from_fsm(Arc::clone(&fsm));
    assert_eq!(feed(&mut c, &vocab, ok), None);
    c.advance(c.eos()).unwrap();
    assert!(c.is_finished());
    for (bad, at) in [
        // `<program>\n<copy lines="` is 23 bytes.
        ("<program>\n<copy lines=\"1000001", 29),
        ("<program>\n<copy lines=\"1-1000001", 31),
        // `4` may still grow to `40`…; the `"` closing `5-4` is refused.
        ("<program>\n<copy lines=\"5-4\"", 26),
        ("<program>\n<copy lines=\"0", 23),
        ("<program>\n<copy lines=\"10000000", 30),
    ] {
        let mut c = ProgramConstraint::from_fsm(Arc::clone(&fsm));
        assert_eq!(feed(&mut c, &vocab, bad), Some(at), "{bad}");
    }
    assert!(fsm.cached_masks() <= cap, "{} masks", fsm.cached_masks());

    let doc: String = (0..n).map(|i| format!("{}\n", i % 10)).collect();
    let mut after = doc.clone();
    after.replace_range(2 * 500_000..2 * 500_000 + 1, "changed");
    let p = oracle_program(&doc, &after);
    assert_eq!(p.ops.len(), 3);
    assert_eq!(resolve(&p, &doc).as_deref(), Ok(after.as_str()));
    // Output layout, canonical, with a byte vocabulary: the context is
    // the bytes of D′.
    let tok = |s: &str| vocab.encode(s).unwrap();
    let cfg = ExecConfig {
        boundary: TokenBoundary::Canonical,
        ..ExecConfig::default()
    };
    let mut lm = CtxLm::default();
    let ex = CopyDecoder::new(&*vocab, &tok, cfg)
        .execute_output(&mut lm, &[], &doc, &p)
        .unwrap();
    assert_eq!(ex.output, after);
    assert_eq!(lm.ctx.len(), after.len());
    assert_eq!(ex.stats.copies, 2);
}

/// The empty document: no copy is allowed (the FSM refuses `c`, the
/// resolver names the op), gens and the empty program work.
#[test]
fn empty_document() {
    let vocab = Arc::new(TokenVocab::bytes());
    let fsm = Arc::new(ProgramFsm::new(Arc::clone(&vocab), 0, FsmConfig::default()).unwrap());
    let mut c = ProgramConstraint::from_fsm(Arc::clone(&fsm));
    assert_eq!(feed(&mut c, &vocab, "<program>\n<c"), Some(11));
    let mut c = ProgramConstraint::from_fsm(fsm);
    assert_eq!(
        feed(&mut c, &vocab, "<program>\n<gen>a</gen>\n</program>"),
        None
    );
    let p = Program::parse("<program>\n<copy lines=\"1-1\"/>\n</program>").unwrap();
    assert!(matches!(
        resolve(&p, ""),
        Err(ResolveError::OutOfRange {
            op: 0,
            lines: 0,
            ..
        })
    ));
    let tok = |s: &str| vocab.encode(s).unwrap();
    for boundary in [TokenBoundary::SpanWise, TokenBoundary::Canonical] {
        let cfg = ExecConfig {
            boundary,
            ..ExecConfig::default()
        };
        let dec = CopyDecoder::new(&*vocab, &tok, cfg);
        let mut lm = CtxLm::default();
        let ex = dec
            .execute_output(&mut lm, &[], "", &oracle_program("", ""))
            .unwrap();
        assert_eq!(ex.output, "");
        assert_eq!(ex.stats.forwards, 0);
        // A copy from the empty document: a typed error, before any forward.
        let err = dec.execute_output(&mut lm, &[], "", &p).unwrap_err();
        assert!(err.to_string().contains("op 0"), "{err}");
    }
}

/// Binary-looking text (NULs, control bytes, a lone `\r`, U+FFFD) is
/// ordinary text: oracle programs round-trip, execution is exact. Non-UTF-8
/// bytes cannot reach the `&str` API; the git loader skips them (below).
#[test]
fn binary_text() {
    let before = "\0\0\n\x01\x02\r\x7f\n\u{fffd}\n\0";
    let after = "\0\n\x01\x02\r\x7f\n\0x\0\n\u{fffd}\n";
    let p = oracle_program(before, after);
    let q = Program::parse(&p.print()).unwrap();
    assert_eq!(resolve(&q, before).as_deref(), Ok(after));
    let vocab = TokenVocab::bytes();
    let tok = |s: &str| vocab.encode(s).unwrap();
    let cfg = ExecConfig {
        boundary: TokenBoundary::Canonical,
        ..ExecConfig::default()
    };
    let mut lm = CtxLm::default();
    let ex = CopyDecoder::new(&vocab, &tok, cfg)
        .execute_output(&mut lm, &[], before, &p)
        .unwrap();
    assert_eq!(ex.output, after);
    assert_eq!(lm.ctx, tok(after));
}

/// One 4 MiB line without a newline, and a 64 KiB line of words under
/// o200k: resolve, oracle and canonical tokens are exact.
#[test]
fn very_long_lines() {
    let line: String = "abcdefghij".repeat(400_000);
    let after = format!("{line}\nnew\n");
    let p = oracle_program(&line, &after);
    assert_eq!(resolve(&p, &line).as_deref(), Ok(after.as_str()));
    assert_eq!(LineIndex::new(&line).len(), 1);
    let q = Program::new(vec![Op::copy(1, 1), Op::gen("x")]);
    assert_eq!(resolve(&q, &line).map(|s| s.len()), Ok(line.len() + 1));

    let o200k = TokenVocab::tiktoken(zapspec_vocab::TiktokenBpe::O200k).unwrap();
    let tok = |s: &str| o200k.encode(s).unwrap();
    let words: String = (0..8_000).map(|i| format!("w{} ", i % 97)).collect();
    let before = format!("{words}\n  x\n");
    let after = format!("{words}\n\n  y\n  x\n");
    let index = LineIndex::new(&before);
    let mut canon = CanonicalTokens::new(8);
    for op in &oracle_program(&before, &after).ops {
        let text = match op {
            Op::Copy { start, end } => index.span(*start, *end).unwrap().to_owned(),
            Op::Gen { text } => text.clone(),
        };
        canon.append(&text, &tok, &o200k);
    }
    assert_eq!(canon.tokens(), &tok(&after)[..]);
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
