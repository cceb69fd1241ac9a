//! Canonical tokenization at span boundaries: with
//! [`TokenBoundary::Canonical`] the model's context after the prompt is
//! exactly `tok(D′)` at the end of [`CopyDecoder::execute_output`] (and the
//! canonical tokens equal `tok(prefix)` after every op), on random edits
//! with a byte vocabulary and o200k, and on the real corpora with o200k.

mod ctxlm;
use ctxlm::CtxLm;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use proptest::prelude::*;
use zapspec_copy::{
    oracle_program, CanonicalTokens, CopyDecoder, ExecConfig, LineIndex, Op, TokenBoundary,
};
use zapspec_core::TokenId;
use zapspec_vocab::{TiktokenBpe, TokenVocab};

/// o200k, loaded once for all tests and cases.
fn o200k() -> Arc<TokenVocab> {
    static V: OnceLock<Arc<TokenVocab>> = OnceLock::new();
    Arc::clone(V.get_or_init(|| {
        Arc::new(TokenVocab::tiktoken(TiktokenBpe::O200k).expect("o200k ships in tiktoken-rs"))
    }))
}

/// Op texts of the oracle program of (before, after).
fn op_texts(before: &str, after: &str) -> Vec<String> {
    let index = LineIndex::new(before);
    oracle_program(before, after)
        .ops
        .iter()
        .map(|op| match op {
            Op::Copy { start, end } => index.span(*start, *end).unwrap().to_owned(),
            Op::Gen { text } => text.clone(),
        })
        .collect()
}

/// Executes the oracle program in the output layout with `boundary`;
/// returns the context after the prompt and the stats.
fn run(
    vocab: &TokenVocab,
    before: &str,
    after: &str,
    boundary: TokenBoundary,
) -> (Vec<TokenId>, zapspec_copy::ExecStats) {
    let tok = |s: &str| vocab.encode(s).unwrap();
    let cfg = ExecConfig {
        boundary,
        ..ExecConfig::default()
    };
    let prompt = tok(before);
    let mut lm = CtxLm::default();
    let ex = CopyDecoder::new(vocab, &tok, cfg)
        .execute_output(&mut lm, &prompt, before, &oracle_program(before, after))
        .unwrap();
    assert_eq!(ex.output, after);
    assert_eq!(lm.forwards, ex.stats.forwards);
    assert_eq!(&lm.ctx[..prompt.len()], &prompt[..]);
    assert_eq!(&lm.ctx[prompt.len()..], &ex.tokens[..]);
    (lm.ctx[prompt.len()..].to_vec(), ex.stats)
}

fn code_doc() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("fn a() {\n"),
            Just("    let x = 1;\n"),
            Just("        return x;\n"),
            Just("}\n"),
            Just("\n"),
            Just("\n\n"),
            Just("  \t \n"),
            Just("x = 'é' + \"ü\"\n"),
            Just("    "),
            Just("数字 = 12345\n"),
            Just("return x;"),
        ],
        0..10,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// o200k: the final context is `tok(D′)` exactly in canonical mode;
    /// the canonical tokens equal `tok(prefix)` after every op, with any
    /// window.
    #[test]
    fn canonical_context_is_tok_of_output_o200k(before in code_doc(), after in code_doc(), window in 1usize..6) {
        let vocab = o200k();
        let (ctx, st) = run(&vocab, &before, &after, TokenBoundary::Canonical);
        prop_assert_eq!(&ctx, &vocab.encode(&after).unwrap());
        prop_assert!(st.truncated <= st.rolled_back);
        let mut canon = CanonicalTokens::new(window);
        let tok = |s: &str| vocab.encode(s).unwrap();
        for t in op_texts(&before, &after) {
            canon.append(&t, &tok, &*vocab);
            prop_assert_eq!(canon.tokens(), &vocab.encode(canon.text()).unwrap()[..]);
        }
    }

    /// A byte vocabulary never merges: canonical and span-wise contexts
    /// are both `tok(D′)`, with nothing rolled back.
    #[test]
    fn byte_vocab_never_rolls_back(before in code_doc(), after in code_doc()) {
        let vocab = TokenVocab::bytes();
        let (canon, st) = run(&vocab, &before, &after, TokenBoundary::Canonical);
        let (span, _) = run(&vocab, &before, &after, TokenBoundary::SpanWise);
        let whole = vocab.encode(&after).unwrap();
        prop_assert_eq!(&canon, &whole);
        prop_assert_eq!(&span, &whole);
        prop_assert_eq!(st.rolled_back, 0);
    }
}

/// The example of the crate docs: o200k reads `"\n\n"` as one token, so
/// span-wise `"a\n" | "\n" | "b\n"` differs from `tok(D′)`; canonical mode
/// rolls the `"\n"` back and re-tokenizes it with the blank line.
#[test]
fn o200k_blank_line_boundary() {
    let vocab = o200k();
    let before = "a\nb\n";
    let after = "a\n\nb\n";
    let whole = vocab.encode(after).unwrap();
    let (span, _) = run(&vocab, before, after, TokenBoundary::SpanWise);
    assert_ne!(span, whole);
    let (canon, st) = run(&vocab, before, after, TokenBoundary::Canonical);
    assert_eq!(canon, whole);
    assert!(st.rolled_back >= 1, "{st:?}");
    assert!(st.rollbacks >= 1, "{st:?}");
}

fn edits_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/edits")
}

/// Every pair of HumanEvalFix-Py/JS and the first 60 ripgrep pairs, o200k:
/// the canonical tokens of the oracle program's op texts equal
/// `tok(D′)` exactly (window 8, as in [`ExecConfig::default`]).
#[test]
fn corpora_canonical_equals_whole_o200k() {
    let vocab = o200k();
    let tok = |s: &str| vocab.encode(s).unwrap();
    for (name, limit) in [
        ("humanevalfix-py", usize::MAX),
        ("humanevalfix-js", usize::MAX),
        ("ripgrep", 60),
    ] {
        let path = edits_dir().join(format!("{name}.jsonl"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            println!("skipping corpus {name}: {} is absent", path.display());
            continue;
        };
        let (mut pairs, mut fallbacks) = (0usize, 0usize);
        for line in text.lines().filter(|l| !l.trim().is_empty()).take(limit) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let (before, after) = (v["before"].as_str().unwrap(), v["after"].as_str().unwrap());
            let mut canon = CanonicalTokens::new(8);
            for t in op_texts(before, after) {
                canon.append(&t, &tok, &*vocab);
            }
            assert_eq!(canon.text(), after);
            assert!(
                canon.tokens() == &tok(after)[..],
                "{name} pair {pairs}: canonical tokens differ from tok(D′)"
            );
            fallbacks += canon.fallbacks();
            pairs += 1;
        }
        println!("{name}: {pairs} pairs canonical = tok(D′); {fallbacks} full re-tokenizations");
    }
}
