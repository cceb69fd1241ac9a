//! The token-level program FSM against the reference recognizer: random
//! small vocabularies (masks equal brute force along random walks,
//! rollback equals replay), o200k on printed programs, bad `n`, bad ids.

use std::sync::Arc;

use proptest::prelude::*;
mod reference;
use reference::{is_program, is_program_prefix};
use zapspec_copy::fsm::{ByteState, FsmConfig, Phase, ProgramConstraint, ProgramFsm};
use zapspec_core::{Constraint, RejectReason, TokenId, TokenSet, Vocabulary};
use zapspec_vocab::{TiktokenBpe, TokenVocab};

const PIECES: &[&[u8]] = &[
    b"<program>\n",
    b"<program>",
    b"<copy lines=\"",
    b"<copy",
    b" lines=\"",
    b"\"/>\n",
    b"\"/>\n<gen>",
    b">\n<",
    b"<gen>",
    b"</gen>\n",
    b"</gen>",
    b"</",
    b"</program>",
    b"program>",
    b"\\/",
    b"\\\\",
    b"<\\/gen>",
    b"1-3",
    b"10",
    b"12",
    "é".as_bytes(),
    b"\xC3",
    b"\xA9",
];
const ALPHA: &[u8] = b"<>/\"\\-\n0123456789abceglmnoprsy";

/// A vocabulary of random tokens plus an EOS (last id) and an extra
/// special token with text.
fn vocab_strategy() -> impl Strategy<Value = TokenVocab> {
    let tok = prop_oneof![
        prop::sample::select(PIECES.to_vec()).prop_map(|s| s.to_vec()),
        prop::collection::vec(prop::sample::select(ALPHA.to_vec()), 1..4),
    ];
    prop::collection::vec(tok, 1..40).prop_map(|mut toks| {
        // Every single byte of the alphabet so walks can go anywhere.
        toks.extend(ALPHA.iter().map(|&b| vec![b]));
        toks.push(b"<gen>".to_vec()); // a special token with text
        let special = toks.len() as TokenId - 1;
        toks.push(Vec::new()); // an empty (hole) token
        toks.push(Vec::new()); // EOS
        let eos = toks.len() as TokenId - 1;
        TokenVocab::from_tokens("random", toks, &[special], eos).expect("valid vocab")
    })
}

fn brute_mask(vocab: &TokenVocab, prefix: &[u8], n: u64, finished: bool) -> TokenSet {
    let mut m = TokenSet::new(vocab.len());
    if finished {
        return m;
    }
    for t in 0..vocab.len() as TokenId {
        let b = vocab.token_bytes(t);
        if vocab.is_special(t) || b.is_empty() {
            continue;
        }
        let mut p = prefix.to_vec();
        p.extend_from_slice(b);
        if is_program_prefix(&p, n) {
            m.insert(t);
        }
    }
    if is_program(prefix, n) {
        m.insert(vocab.eos());
    }
    m
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Along random walks (random allowed tokens, EOS included, random
    /// rollbacks), the mask equals brute force and the state equals a
    /// fresh replay of the committed tokens.
    #[test]
    fn mask_equals_brute_force(
        vocab in vocab_strategy(),
        n in 0u64..=30,
        cap in prop_oneof![Just(0usize), Just(4096)],
        walk in prop::collection::vec((any::<prop::sample::Index>(), 0usize..4, 0u8..10), 0..40),
    ) {
        let vocab = Arc::new(vocab);
        let fsm = Arc::new(ProgramFsm::new(Arc::clone(&vocab), n as usize, FsmConfig { mask_cache_cap: cap }).unwrap());
        let mut c = ProgramConstraint::from_fsm(Arc::clone(&fsm));
        let mut committed: Vec<TokenId> = Vec::new();
        for (pick, back, op) in walk {
            let finished = c.is_finished();
            let bytes = vocab.decode(&committed);
            let prefix: &[u8] = &bytes;
            let mask = c.mask();
            prop_assert_eq!(&mask, &brute_mask(&vocab, prefix, n, finished), "prefix {:?} state {:?}", prefix, c.state());
            // forced bytes: every allowed continuation starts with them.
            let forced = c.forced_bytes().to_vec();
            if !forced.is_empty() {
                prop_assert!(!c.is_accepting());
                let mut p = prefix.to_vec();
                p.extend_from_slice(&forced);
                prop_assert!(is_program_prefix(&p, n));
                for b in 0..=255u8 {
                    let mut q = prefix.to_vec();
                    q.push(b);
                    prop_assert_eq!(is_program_prefix(&q, n), b == forced[0]);
                }
            }
            if op < 2 && back <= committed.len() {
                c.rollback(back).unwrap();
                committed.truncate(committed.len() - back);
            } else if op < 3 {
                // any token, allowed or not: refusal leaves the state as is.
                let t = pick.index(vocab.len()) as TokenId;
                match c.advance(t) {
                    Ok(()) => {
                        prop_assert!(mask.contains(t));
                        committed.push(t);
                    }
                    Err(e) => {
                        prop_assert!(!mask.contains(t));
                        prop_assert_eq!(e.position, committed.len());
                    }
                }
            } else if !mask.is_empty() {
                let ids: Vec<TokenId> = mask.iter().collect();
                let t = ids[pick.index(ids.len())];
                c.advance(t).unwrap();
                committed.push(t);
            }
            let mut fresh = ProgramConstraint::from_fsm(Arc::clone(&fsm));
            for &t in &committed {
                fresh.advance(t).unwrap();
            }
            prop_assert_eq!(c.state(), fresh.state());
            prop_assert_eq!(c.num_tokens(), fresh.num_tokens());
            prop_assert_eq!(c.is_finished(), fresh.is_finished());
            prop_assert_eq!(c.forced_bytes(), fresh.forced_bytes());
            prop_assert_eq!(c.mask(), fresh.mask());
        }
        prop_assert!(fsm.cached_masks() <= cap);
    }
}

fn o200k() -> Arc<TokenVocab> {
    Arc::new(TokenVocab::tiktoken(TiktokenBpe::O200k).expect("o200k ships in tiktoken-rs"))
}

/// Feeds `text`'s o200k tokens; returns the index of the first refused
/// token, or `None` when all are accepted.
fn feed(
    c: &mut ProgramConstraint<Arc<TokenVocab>>,
    vocab: &TokenVocab,
    text: &str,
) -> Option<usize> {
    let ids = vocab.encode(text).unwrap();
    for (i, &t) in ids.iter().enumerate() {
        let mask = c.mask();
        let ok = c.advance(t).is_ok();
        assert_eq!(
            mask.contains(t),
            ok,
            "mask and advance disagree at token {i}"
        );
        if !ok {
            return Some(i);
        }
    }
    None
}

#[test]
fn o200k_printed_programs() {
    let vocab = o200k();
    let fsm = Arc::new(ProgramFsm::new(Arc::clone(&vocab), 12, FsmConfig::default()).unwrap());
    let programs = [
        "<program>\n<copy lines=\"1-3\"/>\n<gen>hello</gen>\n</program>",
        "<program>\n</program>",
        "<program>\n<gen></gen>\n</program>",
        "<program>\n<gen>fn main() {\n    println!(\"<\\/gen> \\\\ é 😀\");\n}\n</gen>\n<copy lines=\"4-12\"/>\n<copy lines=\"12-12\"/>\n</program>",
        "<program>\n<copy lines=\"10-11\"/>\n<gen>x</gen>\n<gen>\\/</gen>\n</program>",
    ];
    for p in programs {
        assert!(is_program(p.as_bytes(), 12), "{p}");
        // The parser of `program.rs` reads the same language.
        let parsed = zapspec_copy::Program::parse(p).expect("parses");
        // (`\/` is accepted but not canonical: the printer writes `/`.)
        assert!(is_program(parsed.print().as_bytes(), 12), "{p}");
        let mut c = ProgramConstraint::from_fsm(Arc::clone(&fsm));
        assert_eq!(c.forced_bytes(), b"<program>\n<");
        assert_eq!(feed(&mut c, &vocab, p), None, "{p}");
        assert!(c.is_accepting(), "{p}");
        assert!(c.mask().contains(vocab.eos()));
        c.advance(vocab.eos()).unwrap();
        assert!(c.is_finished() && c.mask().is_empty());
    }
    // Forced bytes at structure points.
    let mut c = ProgramConstraint::from_fsm(Arc::clone(&fsm));
    feed(&mut c, &vocab, "<program>\n<gen>a</gen>");
    // The last token may or may not end exactly at `</gen>`; check by state.
    if c.state() == ByteState::GenClose {
        assert_eq!(c.forced_bytes(), b"\n<");
    }
    // J > n is refused at the token that makes it impossible.
    let bad = "<program>\n<copy lines=\"1-13\"/>\n</program>";
    let ids = vocab.encode(bad).unwrap();
    let mut c = ProgramConstraint::from_fsm(Arc::clone(&fsm));
    let at = feed(&mut c, &vocab, bad).expect("J > n must be refused");
    let upto: Vec<u8> = vocab.decode(&ids[..at]);
    let with: Vec<u8> = vocab.decode(&ids[..=at]);
    assert!(is_program_prefix(&upto, 12));
    assert!(!is_program_prefix(&with, 12));
    assert_eq!(c.num_tokens(), at);
    // The same program is fine for n = 13.
    let mut c13 = ProgramConstraint::new(Arc::clone(&vocab), 13).unwrap();
    assert_eq!(feed(&mut c13, &vocab, bad), None);
    assert!(c13.is_accepting());
}

#[test]
fn o200k_masks_against_reference() {
    let vocab = o200k();
    let n = 12u64;
    let fsm =
        Arc::new(ProgramFsm::new(Arc::clone(&vocab), n as usize, FsmConfig::default()).unwrap());
    let p = "<program>\n<copy lines=\"1-3\"/>\n<gen>a\\\\b</gen>\n</program>";
    let ids = vocab.encode(p).unwrap();
    let mut c = ProgramConstraint::from_fsm(Arc::clone(&fsm));
    // Check the full mask against the reference at every step (|V| calls
    // to the reference per step).
    for k in 0..=ids.len() {
        let prefix = vocab.decode(&ids[..k]);
        let mask = c.mask();
        for t in 0..vocab.len() as TokenId {
            let b = vocab.token_bytes(t);
            let want = if vocab.is_special(t) || b.is_empty() {
                t == vocab.eos() && is_program(&prefix, n)
            } else {
                let mut q = prefix.clone();
                q.extend_from_slice(b);
                is_program_prefix(&q, n)
            };
            assert_eq!(
                mask.contains(t),
                want,
                "step {k}, token {t} {:?}",
                String::from_utf8_lossy(b)
            );
        }
        if let Some(&t) = ids.get(k) {
            c.advance(t).unwrap();
        }
    }
}

#[test]
fn zero_lines_allows_no_copy() {
    let vocab = o200k();
    let mut c = ProgramConstraint::new(Arc::clone(&vocab), 0).unwrap();
    assert_eq!(feed(&mut c, &vocab, "<program>\n<"), None);
    assert_eq!(c.phase(), Phase::AfterLt);
    let m = c.mask();
    for t in m.iter() {
        assert_ne!(vocab.token_bytes(t).first(), Some(&b'c'));
    }
    assert_eq!(
        c.advance(vocab.find(b"c").unwrap()).unwrap_err().reason,
        RejectReason::NotAllowed
    );
    assert_eq!(feed(&mut c, &vocab, "gen>x</gen>\n</program>"), None);
    assert!(c.is_accepting());
}

#[test]
fn no_panic_on_any_token_id() {
    let vocab = o200k();
    let mut c = ProgramConstraint::new(Arc::clone(&vocab), 3).unwrap();
    let len = vocab.len() as TokenId;
    for t in [len, len + 1, TokenId::MAX] {
        assert_eq!(
            c.advance(t).unwrap_err().reason,
            RejectReason::OutOfVocabulary
        );
    }
    // Every special token is refused (EOS: not yet accepting).
    for t in 0..len {
        if vocab.is_special(t) && t != vocab.eos() {
            assert_eq!(c.advance(t).unwrap_err().reason, RejectReason::NotAllowed);
        }
    }
    assert_eq!(
        c.advance(vocab.eos()).unwrap_err().reason,
        RejectReason::EosNotAccepting
    );
    // Every id in a body state: no panic, mask agrees with advance.
    feed(&mut c, &vocab, "<program>\n<gen>");
    let mask = c.mask();
    for t in 0..len {
        let mut f = c.fork();
        assert_eq!(f.advance(t).is_ok(), mask.contains(t), "token {t}");
    }
    assert!(c.rollback(100).is_err());
    c.rollback(c.num_tokens()).unwrap();
    assert_eq!(c.state(), ByteState::START);
}

#[test]
fn dyn_vocabulary_works() {
    let vocab: Arc<dyn Vocabulary + Send + Sync> = o200k();
    let mut c = ProgramConstraint::new(vocab, 2).unwrap();
    assert_eq!(c.forced_bytes(), b"<program>\n<");
    assert!(!c.mask().is_empty());
}
