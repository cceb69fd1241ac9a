//! GEN_BODY delegation against brute force: on random small vocabularies
//! with testkit inner constraints (a finite token trie, a bounded Dyck
//! language), the mask of [`NestedProgramConstraint`] equals the set of
//! tokens that keep the sequence inside the reading of the module docs —
//! checked here directly from its definition (bytes a program prefix by
//! the reference recognizer; every gen body token-aligned and fed to a
//! fresh inner constraint) — and advance/rollback equals a fresh replay.

use std::sync::Arc;

use proptest::prelude::*;
mod reference;
use reference::is_program_prefix;
use zapspec_copy::fsm::{FsmConfig, ProgramFsm};
use zapspec_copy::{GenBodyError, NestedProgramConstraint};
use zapspec_core::{Constraint, TokenId, TokenSet, Vocabulary};
use zapspec_testkit::{DyckConstraint, DyckSpec, TrieConstraint};
use zapspec_vocab::TokenVocab;

/// Tokens ids 0..5: the Dyck brackets of two kinds and `x` (the Dyck
/// language's EOS id, an ordinary token of the program vocabulary, so it
/// must never be fed to the inner constraint).
/// Ids 5 and 6 start walks inside a program or a body.
const FIXED: &[&[u8]] = &[b"(", b"[", b")", b"]", b"x", b"<program>\n", b"<gen>"];
const PIECES: &[&[u8]] = &[
    b"<program>\n",
    b"<copy lines=\"",
    b"\"/>\n",
    b"\"/>\n<gen>",
    b"\"/>\n<gen></gen>\n",
    b"<gen>",
    b"<gen>(",
    b"<gen></gen>",
    b"</gen>\n",
    b"</gen>\n<gen>",
    b"</gen>",
    b"</",
    b"</ge",
    b"gen>",
    b"n>\n",
    b"/gen>\n<",
    b"()</gen>",
    b"</program>",
    b"\\/",
    b"\\\\",
    b"\\",
    b"<\\/gen>",
    b"1-2",
    b"()",
    b"(]",
];
const ALPHA: &[u8] = b"<>/\"\\-\n012abceglmnoprsy()[]x";

fn vocab_strategy() -> impl Strategy<Value = TokenVocab> {
    let tok = prop_oneof![
        prop::sample::select(PIECES.to_vec()).prop_map(|s| s.to_vec()),
        prop::collection::vec(prop::sample::select(ALPHA.to_vec()), 1..4),
    ];
    prop::collection::vec(tok, 1..30).prop_map(|rand| {
        let mut toks: Vec<Vec<u8>> = FIXED.iter().map(|t| t.to_vec()).collect();
        toks.extend(rand);
        toks.extend(ALPHA.iter().map(|&b| vec![b]));
        toks.push(Vec::new()); // a hole
        toks.push(Vec::new()); // EOS
        let eos = toks.len() as TokenId - 1;
        TokenVocab::from_tokens("random", toks, &[], eos).expect("valid vocab")
    })
}

/// The gen bodies of a program prefix: (start, end) byte offsets, `None`
/// for the open body. Assumes `b` is a program prefix.
fn gen_bodies(b: &[u8]) -> Vec<(usize, Option<usize>)> {
    let mut out = Vec::new();
    let mut pos = b"<program>\n".len();
    while pos < b.len() {
        let rest = &b[pos..];
        if rest.starts_with(b"<gen>") {
            let start = pos + 5;
            let mut i = start;
            loop {
                if i >= b.len() {
                    out.push((start, None));
                    return out;
                }
                if b[i] == b'\\' {
                    i += 2;
                } else if b[i..].starts_with(b"</gen>") {
                    out.push((start, Some(i)));
                    pos = i + 7;
                    break;
                } else {
                    i += 1;
                }
            }
        } else if rest.starts_with(b"<copy") {
            match rest.iter().position(|&c| c == b'\n') {
                Some(k) => pos += k + 1,
                None => return out,
            }
        } else {
            return out;
        }
    }
    out
}

/// The reading, from its definition: bytes a program prefix, every gen
/// body token-aligned (an empty body may sit inside a token) and accepted
/// by a fresh inner constraint (allowed throughout, accepting when closed).
fn semantic_ok<C: Constraint>(vocab: &TokenVocab, toks: &[TokenId], n: u64, proto: &C) -> bool {
    let bytes = vocab.decode(toks);
    if !is_program_prefix(&bytes, n) {
        return false;
    }
    let mut bounds = vec![0usize];
    for &t in toks {
        bounds.push(bounds.last().unwrap() + vocab.token_bytes(t).len());
    }
    for (start, end) in gen_bodies(&bytes) {
        let stop = end.unwrap_or(bytes.len());
        if start == stop {
            if end.is_some() && !proto.is_accepting() {
                return false;
            }
            continue;
        }
        // Fed to a fresh inner constraint: the tokens between two
        // boundaries, or `None` when they are not boundaries or a token
        // is refused.
        let feed = |from: usize, to: usize| -> Option<C> {
            let i = bounds.iter().position(|&b| b == from)?;
            let j = bounds.iter().position(|&b| b == to)?;
            let mut c = proto.clone();
            for &t in &toks[i..j] {
                if t as usize >= c.vocab_size() || t == c.eos() || c.advance(t).is_err() {
                    return None;
                }
            }
            Some(c)
        };
        if end.is_some() {
            if !feed(start, stop).is_some_and(|c| c.is_accepting()) {
                return false;
            }
            continue;
        }
        // The open body: all body text (h1), or body text then a close in
        // progress begun at a boundary where the inner constraint accepted
        // (h2).
        let body = &bytes[start..stop];
        let h1 = feed(start, stop).is_some();
        let h2 = body.iter().rposition(|&c| c == b'<').is_some_and(|k| {
            let tail = &body[k..];
            tail.len() < 6
                && b"</gen>".starts_with(tail)
                && bounds.contains(&(start + k))
                && feed(start, start + k).is_some_and(|c| c.is_accepting())
        });
        if !(h1 || h2) {
            return false;
        }
    }
    true
}

fn brute_mask<C: Constraint>(
    vocab: &TokenVocab,
    committed: &[TokenId],
    n: u64,
    proto: &C,
    finished: bool,
) -> TokenSet {
    let mut m = TokenSet::new(vocab.len());
    if finished {
        return m;
    }
    let mut seq = committed.to_vec();
    for t in 0..vocab.len() as TokenId {
        if vocab.is_special(t) || vocab.token_bytes(t).is_empty() {
            continue;
        }
        seq.push(t);
        if semantic_ok(vocab, &seq, n, proto) {
            m.insert(t);
        }
        seq.pop();
    }
    let bytes = vocab.decode(committed);
    if reference::is_program(&bytes, n) {
        m.insert(vocab.eos());
    }
    m
}

type Walk = Vec<(prop::sample::Index, usize, u8)>;

fn run_walk<C: Constraint + std::fmt::Debug>(
    vocab: Arc<TokenVocab>,
    n: u64,
    cap: usize,
    proto: C,
    prelude: usize,
    walk: Walk,
) -> Result<(), TestCaseError> {
    let fsm = Arc::new(
        ProgramFsm::new(
            Arc::clone(&vocab),
            n as usize,
            FsmConfig {
                mask_cache_cap: cap,
            },
        )
        .unwrap(),
    );
    let mut c = NestedProgramConstraint::new(Arc::clone(&fsm), proto.clone()).unwrap();
    let mut committed: Vec<TokenId> = Vec::new();
    for t in [5, 6].into_iter().take(prelude) {
        c.advance(t).unwrap();
        committed.push(t);
    }
    for (pick, back, op) in walk {
        let mask = c.mask();
        let want = brute_mask(&vocab, &committed, n, &proto, c.is_finished());
        prop_assert_eq!(
            &mask,
            &want,
            "prefix {:?} state {:?}",
            String::from_utf8_lossy(&vocab.decode(&committed)),
            c.state()
        );
        if op < 2 && back <= committed.len() {
            c.rollback(back).unwrap();
            committed.truncate(committed.len() - back);
        } else if op < 4 {
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
        let mut fresh = NestedProgramConstraint::new(Arc::clone(&fsm), proto.clone()).unwrap();
        for &t in &committed {
            fresh.advance(t).unwrap();
        }
        prop_assert_eq!(c.state(), fresh.state());
        prop_assert_eq!(c.num_tokens(), fresh.num_tokens());
        prop_assert_eq!(c.is_finished(), fresh.is_finished());
        prop_assert_eq!(
            c.inner().map(|i| (i.num_tokens(), i.is_accepting())),
            fresh.inner().map(|i| (i.num_tokens(), i.is_accepting()))
        );
        prop_assert_eq!(c.mask(), fresh.mask());
    }
    Ok(())
}

fn walk_strategy() -> impl Strategy<Value = Walk> {
    prop::collection::vec((any::<prop::sample::Index>(), 0usize..4, 0u8..12), 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Inner = a finite language of random token sequences (any tokens,
    /// so bodies containing `</`, `\`, `gen>`… are exercised).
    #[test]
    fn trie_inner_equals_brute_force(
        vocab in vocab_strategy(),
        n in 0u64..=4,
        cap in prop_oneof![Just(0usize), Just(4096)],
        seqs in prop::collection::vec(prop::collection::vec(any::<prop::sample::Index>(), 0..4), 0..5),
        prelude in 0usize..3,
        walk in walk_strategy(),
    ) {
        let vocab = Arc::new(vocab);
        // Ordinary tokens only (the EOS and the hole are the last two ids).
        let ordinary = vocab.len() - 2;
        let seqs: Vec<Vec<TokenId>> = seqs
            .iter()
            .map(|s| s.iter().map(|i| i.index(ordinary) as TokenId).collect())
            .collect();
        let proto = TrieConstraint::from_sequences(&*vocab, &seqs);
        run_walk(vocab, n, cap, proto, prelude, walk)?;
    }

    /// Inner = bounded Dyck over two bracket kinds on ids 0..4 (a smaller
    /// vocabulary than the program's; its EOS id 4 is the token `x`).
    #[test]
    fn dyck_inner_equals_brute_force(
        vocab in vocab_strategy(),
        n in 0u64..=3,
        max_len in 0usize..=6,
        prelude in 0usize..3,
        walk in walk_strategy(),
    ) {
        let spec = DyckSpec { kinds: 2, max_depth: 2, max_len };
        run_walk(Arc::new(vocab), n, 4096, DyckConstraint::new(spec), prelude, walk)?;
    }
}

fn tiny_vocab() -> Arc<TokenVocab> {
    let mut toks: Vec<Vec<u8>> = FIXED.iter().map(|t| t.to_vec()).collect();
    for p in PIECES {
        toks.push(p.to_vec());
    }
    toks.extend(ALPHA.iter().map(|&b| vec![b]));
    toks.push(Vec::new());
    let eos = toks.len() as TokenId - 1;
    Arc::new(TokenVocab::from_tokens("tiny", toks, &[], eos).unwrap())
}

fn id(vocab: &TokenVocab, s: &[u8]) -> TokenId {
    (0..vocab.len() as TokenId)
        .find(|&t| vocab.token_bytes(t) == s)
        .unwrap()
}

#[test]
fn dyck_bodies_decode_to_a_program() {
    let vocab = tiny_vocab();
    let fsm = Arc::new(ProgramFsm::new(Arc::clone(&vocab), 2, FsmConfig::default()).unwrap());
    let spec = DyckSpec {
        kinds: 2,
        max_depth: 2,
        max_len: 4,
    };
    let mut c = NestedProgramConstraint::new(Arc::clone(&fsm), DyckConstraint::new(spec)).unwrap();
    let seq: Vec<&[u8]> = vec![
        b"<program>\n",
        b"<gen>",
        b"(",
        b"[",
        b"]",
        b")",
        b"</gen>\n",
        b"<copy lines=\"",
        b"1-2",
        b"\"/>\n<gen>",
        b"</gen>\n",
        b"</program>",
    ];
    for s in &seq {
        let t = id(&vocab, s);
        assert!(c.mask().contains(t), "{:?}", String::from_utf8_lossy(s));
        c.advance(t).unwrap();
    }
    assert!(c.is_accepting());
    // An unbalanced body cannot close; `x` (the Dyck EOS id) is no body text.
    let mut c = NestedProgramConstraint::new(Arc::clone(&fsm), DyckConstraint::new(spec)).unwrap();
    for s in [&b"<program>\n"[..], b"<gen>", b"("] {
        c.advance(id(&vocab, s)).unwrap();
    }
    let m = c.mask();
    assert!(!m.contains(id(&vocab, b"</gen>")));
    assert!(!m.contains(id(&vocab, b"x")));
    assert!(m.contains(id(&vocab, b")")));
    // `</` is not Dyck text, so the body cannot continue with it either.
    assert!(!m.contains(id(&vocab, b"</")));
}

#[test]
fn bad_inner_is_a_typed_error() {
    let vocab = tiny_vocab();
    let fsm = Arc::new(ProgramFsm::new(Arc::clone(&vocab), 2, FsmConfig::default()).unwrap());
    let big = TrieConstraint::new(Arc::default(), vocab.len() + 1, 0);
    assert_eq!(
        NestedProgramConstraint::new(Arc::clone(&fsm), big).unwrap_err(),
        GenBodyError::VocabMismatch {
            inner: vocab.len() + 1,
            outer: vocab.len()
        }
    );
    let mut done = TrieConstraint::from_sequences(&*vocab, [Vec::<TokenId>::new()]);
    done.advance(vocab.eos()).unwrap();
    assert_eq!(
        NestedProgramConstraint::new(fsm, done).unwrap_err(),
        GenBodyError::InnerFinished
    );
}

/// A body token spelling a prefix of `</gen>` is body text; the next token
/// may complete the close only if the inner constraint accepted where the
/// prefix began.
#[test]
fn close_begun_by_an_earlier_body_token() {
    let vocab = tiny_vocab();
    let fsm = Arc::new(ProgramFsm::new(Arc::clone(&vocab), 0, FsmConfig::default()).unwrap());
    let ge = id(&vocab, b"</ge");
    let rest = id(&vocab, b"n>\n");
    for (langs, closes) in [(vec![vec![], vec![ge]], true), (vec![vec![ge]], false)] {
        let inner = TrieConstraint::from_sequences(&*vocab, &langs);
        let mut c = NestedProgramConstraint::new(Arc::clone(&fsm), inner).unwrap();
        for s in [&b"<program>\n"[..], b"<gen>", b"</ge"] {
            c.advance(id(&vocab, s)).unwrap();
        }
        assert_eq!(c.mask().contains(rest), closes);
        assert_eq!(c.advance(rest).is_ok(), closes);
        if closes {
            c.advance(id(&vocab, b"</program>")).unwrap();
            assert!(c.is_accepting());
            // Rolling back the close restores the body's inner state.
            c.rollback(2).unwrap();
            assert_eq!(c.inner().map(|i| i.num_tokens()), Some(1));
        }
    }
}
