//! Executing programs against toy models: oracle programs resolve to `D′`
//! with forward counts equal to the closed forms of the module docs
//! (decisions counted independently with the reference recognizer);
//! sampled programs always resolve; a short window slides without
//! changing the output. (The regeneration and prompt-lookup baselines are
//! tested with them in the `examples` crate, `tests/copy_study.rs`.)

use std::sync::Arc;

use proptest::prelude::*;
mod reference;
use reference::{is_program, is_program_prefix};
use zapspec_copy::{
    oracle_program, CopyDecoder, ExecConfig, ExecError, NestedProgramConstraint, Program,
    ProgramConstraint,
};
use zapspec_core::model::{LanguageModel, Logits, ModelError};
use zapspec_core::{TokenId, Vocabulary};
use zapspec_testkit::toy::{BigramLm, Windowed};
use zapspec_testkit::TrieConstraint;
use zapspec_vocab::TokenVocab;

fn bytes_vocab() -> Arc<TokenVocab> {
    Arc::new(TokenVocab::bytes())
}

/// Program bytes that need a decision: those where more than one byte
/// continues the prefix (by the reference recognizer).
fn decisions(program: &str, n: u64) -> usize {
    let b = program.as_bytes();
    (0..b.len())
        .filter(|&p| {
            let mut q = b[..p].to_vec();
            q.push(0);
            (0..=255u8)
                .filter(|&x| {
                    *q.last_mut().unwrap() = x;
                    is_program_prefix(&q, n)
                })
                .count()
                > 1
        })
        .count()
}

fn line_doc() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("fn a() {}\n"),
            Just("let x = 1;\n"),
            Just("}\n"),
            Just("x </gen> \\ y\n"),
            Just("\n"),
            Just("return x;")
        ],
        0..8,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Oracle programs executed on a byte vocabulary: output `D′`, and
    /// forwards = 1 + decisions.
    #[test]
    fn oracle_execution_closed_forms(before in line_doc(), after in line_doc(), seed in 0u64..4) {
        let vocab = bytes_vocab();
        let tok = |s: &str| vocab.encode(s).unwrap();
        let n = before.split_inclusive('\n').count();
        let program = oracle_program(&before, &after);
        let printed = program.print();
        prop_assert!(is_program(printed.as_bytes(), n as u64));
        let prompt = tok(&before);
        let mut lm = BigramLm::new(vocab.len(), seed);
        let c = ProgramConstraint::new(Arc::clone(&vocab), n).unwrap();
        let cfg = ExecConfig::default();
        let ex = CopyDecoder::new(&*vocab, &tok, cfg.clone()).execute_program(&mut lm, c, &prompt, &before, &program).unwrap();
        prop_assert_eq!(&ex.output, &after);
        let d = decisions(&printed, n as u64);
        prop_assert_eq!(ex.stats.decided, d);
        let pf = usize::from(!prompt.is_empty());
        prop_assert_eq!(ex.stats.prompt_forwards, pf);
        prop_assert_eq!(ex.stats.forwards, pf + 1 + d);
        prop_assert_eq!(lm.forwards(), pf + 1 + d);
        prop_assert_eq!(ex.stats.decided + ex.stats.forced, printed.len());
        let copied: usize = program.ops.iter().filter_map(|op| op.lines()).map(|r| {
            before.split_inclusive('\n').skip(r.start() - 1).take(r.end() - r.start() + 1).map(str::len).sum::<usize>()
        }).sum();
        prop_assert_eq!(ex.stats.copied, copied);
        prop_assert_eq!(ex.stats.tokens_in, prompt.len() + printed.len() + copied);
        prop_assert_eq!(ex.stats.output_tokens, after.len());
    }
}

#[test]
fn short_window_slides() {
    let vocab = bytes_vocab();
    let tok = |s: &str| vocab.encode(s).unwrap();
    let before = "line one\nline two\nline three\nline four\n".repeat(4);
    let after = before.replace("three", "3");
    let program = oracle_program(&before, &after);
    let n = before.lines().count();
    let mut lm = Windowed {
        inner: BigramLm::new(vocab.len(), 1),
        window: 24,
    };
    let prompt = tok(&before);
    let cfg = ExecConfig::default();
    let c = ProgramConstraint::new(Arc::clone(&vocab), n).unwrap();
    let ex = CopyDecoder::new(&*vocab, &tok, cfg.clone())
        .execute_program(&mut lm, c, &prompt, &before, &program)
        .unwrap();
    assert_eq!(ex.output, after);
    assert!(ex.stats.slide_forwards > 0);
    assert!(ex.stats.forwards > 1 + ex.stats.decided);
    // A window that cannot slide is a typed error.
    let mut tiny = Windowed {
        inner: BigramLm::new(vocab.len(), 1),
        window: 1,
    };
    let cfg1 = ExecConfig {
        slide_keep: 1,
        ..ExecConfig::default()
    };
    let c = ProgramConstraint::new(Arc::clone(&vocab), n).unwrap();
    let err = CopyDecoder::new(&*vocab, &tok, cfg1)
        .execute_program(&mut tiny, c, &prompt, &before, &program);
    assert!(matches!(err, Err(ExecError::Window { .. })), "{err:?}");
}

/// Sampled programs (any seed, temperature 1) end as a valid program that
/// resolves, or stop at the token limit; never anything else.
#[test]
fn sampled_programs_resolve() {
    let vocab = bytes_vocab();
    let tok = |s: &str| vocab.encode(s).unwrap();
    let doc = "a\nb\nc\n";
    let mut ok = 0;
    for seed in 0..20u64 {
        let mut lm = BigramLm::new(vocab.len(), seed).with_scale(1.0);
        let c = ProgramConstraint::new(Arc::clone(&vocab), 3).unwrap();
        let cfg = ExecConfig {
            temperature: 1.0,
            seed,
            max_tokens: 400,
            ..ExecConfig::default()
        };
        match CopyDecoder::new(&*vocab, &tok, cfg).decode_program(&mut lm, c, &[], doc) {
            Ok(ex) => {
                let text = String::from_utf8(vocab.decode(&ex.tokens)).unwrap();
                let p = Program::parse(&text).unwrap();
                assert_eq!(zapspec_copy::resolve(&p, doc).unwrap(), ex.output);
                ok += 1;
            }
            Err(ExecError::TokenLimit { .. }) => {}
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    assert!(ok > 0);
}

/// With a nested constraint, every gen op's text is a member of the inner
/// language (here a finite one: "x = 1;\n" or "y;\n").
#[test]
fn nested_gen_bodies_follow_the_inner_language() {
    let vocab = bytes_vocab();
    let tok = |s: &str| vocab.encode(s).unwrap();
    let doc = "a\nb\n";
    let members = ["x = 1;\n", "y;\n"];
    let seqs: Vec<Vec<TokenId>> = members.iter().map(|m| tok(m)).collect();
    let mut seen = 0;
    for seed in 0..30u64 {
        let mut lm = BigramLm::new(vocab.len(), seed).with_scale(0.5);
        let fsm = Arc::new(
            zapspec_copy::ProgramFsm::new(Arc::clone(&vocab), 2, Default::default()).unwrap(),
        );
        let inner = TrieConstraint::from_sequences(&*vocab, &seqs);
        let c = NestedProgramConstraint::new(fsm, inner).unwrap();
        let cfg = ExecConfig {
            temperature: 1.0,
            seed,
            max_tokens: 300,
            ..ExecConfig::default()
        };
        match CopyDecoder::new(&*vocab, &tok, cfg).decode_program(&mut lm, c, &[], doc) {
            Ok(ex) => {
                let text = String::from_utf8(vocab.decode(&ex.tokens)).unwrap();
                for op in Program::parse(&text).unwrap().ops {
                    if let zapspec_copy::Op::Gen { text } = op {
                        assert!(members.contains(&text.as_str()), "{text:?}");
                        seen += 1;
                    }
                }
            }
            Err(ExecError::TokenLimit { .. }) => {}
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    assert!(seen > 0);
}

/// Logits all zero (a cheap model over a large vocabulary).
struct ConstLm {
    vocab: usize,
    ctx: Vec<TokenId>,
}

impl LanguageModel for ConstLm {
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn context(&self) -> &[TokenId] {
        &self.ctx
    }
    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        self.ctx.extend_from_slice(tokens);
        Ok(Logits::zeros((tokens.len(), self.vocab)))
    }
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        Ok(vec![0.0; self.vocab])
    }
    fn truncate(&mut self, len: usize) {
        self.ctx.truncate(len);
    }
}

/// o200k: the op-by-op program tokenization spells the printed program,
/// and an oracle program executes under the plain FSM and under a nested
/// one whose inner language holds the gen texts (body-aligned tokens);
/// a gen text outside the inner language is refused.
#[test]
fn o200k_oracle_execution_plain_and_nested() {
    let vocab =
        Arc::new(zapspec_vocab::TokenVocab::tiktoken(zapspec_vocab::TiktokenBpe::O200k).unwrap());
    let tok = |s: &str| vocab.encode(s).unwrap();
    let before = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
    let after = "fn main() {\n    let x = 2;\n    println!(\"{x}\");\n}\n";
    let program = oracle_program(before, after);
    let ids = zapspec_copy::tokenize_program(&program, &tok);
    assert_eq!(vocab.decode(&ids), program.print().as_bytes());
    let fsm =
        Arc::new(zapspec_copy::ProgramFsm::new(Arc::clone(&vocab), 4, Default::default()).unwrap());
    let dec = CopyDecoder::new(&*vocab, &tok, ExecConfig::default());
    let mut lm = ConstLm {
        vocab: vocab.len(),
        ctx: Vec::new(),
    };
    let prompt = tok(before);
    let c = ProgramConstraint::from_fsm(Arc::clone(&fsm));
    let ex = dec
        .execute_program(&mut lm, c, &prompt, before, &program)
        .unwrap();
    assert_eq!(ex.output, after);
    assert_eq!(ex.stats.copies, 2);
    let gens: Vec<Vec<TokenId>> = program
        .ops
        .iter()
        .filter_map(|op| match op {
            zapspec_copy::Op::Gen { text } => Some(tok(text)),
            _ => None,
        })
        .collect();
    let inner = TrieConstraint::from_sequences(&*vocab, &gens);
    let c = NestedProgramConstraint::new(Arc::clone(&fsm), inner).unwrap();
    let nested = dec
        .execute_program(&mut lm, c, &prompt, before, &program)
        .unwrap();
    assert_eq!(nested.output, after);
    assert_eq!(nested.stats.forwards, ex.stats.forwards);
    let inner = TrieConstraint::from_sequences(&*vocab, [tok("    let x = 3;\n")]);
    let c = NestedProgramConstraint::new(fsm, inner).unwrap();
    let err = dec.execute_program(&mut lm, c, &prompt, before, &program);
    assert!(matches!(err, Err(ExecError::Refused(_))), "{err:?}");
}
