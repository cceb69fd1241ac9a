//! The matchers against brute-force enumeration of their languages.

use std::sync::Arc;

use proptest::prelude::*;
use std::collections::BTreeSet;
use zapspec_core::{Constraint, LookAhead, RejectReason, RollbackError, TokenId, TokenSet};

use crate::{DyckConstraint, DyckRefusal, DyckSpec, TokenTrie, TrieConstraint};

/// Enumerates the language of a constraint by walking its masks.
fn enumerate<C: Constraint>(c: &mut C, prefix: &mut Vec<TokenId>, out: &mut Vec<Vec<TokenId>>) {
    let m = c.mask();
    for t in m.iter() {
        if t == c.eos() {
            out.push(prefix.clone());
            continue;
        }
        c.advance(t).unwrap();
        prefix.push(t);
        enumerate(c, prefix, out);
        prefix.pop();
        c.rollback(1).unwrap();
    }
}

/// Independent membership test for bounded Dyck strings.
fn is_dyck(s: &[TokenId], spec: DyckSpec) -> bool {
    let mut st = Vec::new();
    if s.len() > spec.max_len {
        return false;
    }
    for &t in s {
        let t = t as usize;
        if t < spec.kinds {
            st.push(t);
            if st.len() > spec.max_depth {
                return false;
            }
        } else if st.pop() != Some(t - spec.kinds) {
            return false;
        }
    }
    st.is_empty()
}

#[test]
fn dyck_counts_match_the_paper() {
    for (d, l, n) in [(3, 16, 988), (3, 12, 145)] {
        let spec = DyckSpec {
            kinds: 1,
            max_depth: d,
            max_len: l,
        };
        let mut out = Vec::new();
        enumerate(&mut DyckConstraint::new(spec), &mut Vec::new(), &mut out);
        assert_eq!(out.len(), n, "D_{{{d},{l}}}");
    }
}

#[test]
fn dyck_matches_brute_force() {
    let spec = DyckSpec {
        kinds: 2,
        max_depth: 2,
        max_len: 8,
    };
    let mut out = Vec::new();
    enumerate(&mut DyckConstraint::new(spec), &mut Vec::new(), &mut out);
    let got: BTreeSet<_> = out.into_iter().collect();
    // brute force: every string over the 4 brackets up to length 8
    let mut want = BTreeSet::new();
    let mut cur: Vec<Vec<TokenId>> = vec![vec![]];
    for _ in 0..=spec.max_len {
        let mut next = Vec::new();
        for s in &cur {
            if is_dyck(s, spec) {
                want.insert(s.clone());
            }
            if s.len() < spec.max_len {
                for t in 0..4 {
                    let mut s2 = s.clone();
                    s2.push(t);
                    next.push(s2);
                }
            }
        }
        cur = next;
    }
    assert_eq!(got, want);
}

proptest! {
    #[test]
    fn trie_language_is_its_sequences(seqs in prop::collection::vec(prop::collection::vec(0u32..5, 0..5), 1..8)) {
        let trie = Arc::new(TokenTrie::new(&seqs));
        let mut c = TrieConstraint::new(trie.clone(), 6, 5);
        let mut out = Vec::new();
        enumerate(&mut c, &mut Vec::new(), &mut out);
        let got: BTreeSet<_> = out.into_iter().collect();
        let want: BTreeSet<_> = seqs.iter().cloned().collect();
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(trie.sequences().into_iter().collect::<BTreeSet<_>>(), want);
    }

    #[test]
    fn advance_rollback_restores_masks(ops in prop::collection::vec(0u32..5, 0..30), back in 0usize..10) {
        let spec = DyckSpec { kinds: 2, max_depth: 3, max_len: 10 };
        let mut c = DyckConstraint::new(spec);
        let mut masks = vec![c.mask()];
        for t in ops {
            if c.advance(t).is_ok() {
                masks.push(c.mask());
            }
        }
        let n = back.min(c.num_tokens());
        c.rollback(n).unwrap();
        prop_assert_eq!(c.mask(), masks[masks.len() - 1 - n].clone());
        prop_assert!(c.rollback(c.num_tokens() + 1).is_err());
    }
}

/// `allowed_sparse` lists `fill_mask`'s set, and equal `mask_key`s mean
/// equal masks, on every state reached by a walk.
fn check_sparse_and_keys<C: LookAhead>(c: &mut C, ops: &[TokenId]) {
    let mut by_key: std::collections::HashMap<u64, TokenSet> = Default::default();
    let mut list = Vec::new();
    for &t in ops.iter().chain(std::iter::once(&c.eos())) {
        let m = c.mask();
        // for_each_successor, if supported, agrees with advancing a fork
        let mut seen = Vec::new();
        let c2 = c.clone();
        if c2.for_each_successor(&mut |y, next| seen.push((y, next.to_vec()))) {
            let want: Vec<TokenId> = m.iter().filter(|&y| y != c.eos()).collect();
            assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), want);
            for (y, next) in &seen {
                let mut f = c.fork();
                f.advance(*y).unwrap();
                assert_eq!(
                    TokenSet::from_ids(c.vocab_size(), next.iter().copied()),
                    f.mask()
                );
                assert_eq!(next.len(), f.mask().count());
            }
        }
        assert!(c.allowed_sparse(&mut list));
        assert_eq!(TokenSet::from_ids(c.vocab_size(), list.iter().copied()), m);
        assert_eq!(list.len(), m.count(), "duplicates in the sparse list");
        let k = c.mask_key().expect("key");
        assert_eq!(
            by_key.entry(k).or_insert_with(|| m.clone()),
            &m,
            "key {k} with two masks"
        );
        let _ = c.advance(t);
    }
}

proptest! {
    #[test]
    fn sparse_masks_and_keys_agree(ops in prop::collection::vec(0u32..6, 0..24), seqs in prop::collection::vec(prop::collection::vec(0u32..5, 0..5), 1..8)) {
        let spec = DyckSpec { kinds: 2, max_depth: 3, max_len: 10 };
        check_sparse_and_keys(&mut DyckConstraint::new(spec), &ops);
        let trie = Arc::new(TokenTrie::new(&seqs));
        check_sparse_and_keys(&mut TrieConstraint::new(trie, 6, 5), &ops);
    }
}

#[test]
fn eos_finishes_and_rolls_back() {
    let trie = Arc::new(TokenTrie::new([vec![0u32], vec![0, 1]]));
    let mut c = TrieConstraint::new(trie, 3, 2);
    assert!(c.advance(2).is_err());
    c.advance(0).unwrap();
    assert!(c.is_accepting());
    assert_eq!(c.forced_tokens(5), Vec::<TokenId>::new()); // 1 or EOS: not forced
    c.advance(2).unwrap();
    assert!(c.is_finished());
    assert!(c.mask().is_empty());
    assert!(c.advance(1).is_err());
    c.rollback(1).unwrap();
    assert!(!c.is_finished());
    c.advance(1).unwrap();
    assert_eq!(c.num_tokens(), 2);
}

#[test]
fn forced_tokens_follow_single_paths() {
    let trie = Arc::new(TokenTrie::new([vec![0u32, 1, 2], vec![0, 1, 3]]));
    let mut c = TrieConstraint::new(trie, 5, 4);
    assert_eq!(c.forced_tokens(10), vec![0, 1]);
    assert_eq!(c.num_tokens(), 0, "forced_tokens must not consume");
}

/// Replays `committed` on a fresh matcher.
fn replay<C: Constraint>(fresh: &C, committed: &[TokenId]) -> C {
    let mut c = fresh.clone();
    for &t in committed {
        c.advance(t).unwrap();
    }
    c
}

/// Random advances (EOS included) and rollbacks through the blanket
/// `Constraint` impl of a `Matcher` give the state of a fresh matcher
/// replayed through the committed tokens: same mask, `num_tokens`,
/// `is_finished`, `is_accepting` and refusals' positions.
fn check_replay<C: Constraint>(fresh: &C, ops: &[(TokenId, usize, bool)]) {
    let mut c = fresh.clone();
    let mut committed: Vec<TokenId> = Vec::new();
    for &(t, back, roll) in ops {
        if roll {
            let r = c.rollback(back);
            if back <= committed.len() {
                assert!(r.is_ok());
                committed.truncate(committed.len() - back);
            } else {
                assert_eq!(
                    r,
                    Err(RollbackError {
                        requested: back,
                        available: committed.len()
                    })
                );
            }
        } else {
            match c.advance(t) {
                Ok(()) => committed.push(t),
                Err(e) => assert_eq!((e.token, e.position), (t, committed.len())),
            }
        }
        let mut r = replay(fresh, &committed);
        assert_eq!(c.mask(), r.mask());
        assert_eq!(c.num_tokens(), committed.len());
        assert_eq!(c.num_tokens(), r.num_tokens());
        assert_eq!(c.is_finished(), r.is_finished());
        assert_eq!(c.is_accepting(), r.is_accepting());
        assert_eq!(c.is_finished(), committed.last() == Some(&c.eos()));
    }
}

proptest! {
    #[test]
    fn advance_rollback_equals_replay(
        ops in prop::collection::vec((0u32..6, 0usize..4, prop::bool::weighted(0.3)), 0..40),
        seqs in prop::collection::vec(prop::collection::vec(0u32..5, 0..5), 1..8),
    ) {
        let spec = DyckSpec { kinds: 2, max_depth: 3, max_len: 10 };
        check_replay(&DyckConstraint::new(spec), &ops);
        let trie = Arc::new(TokenTrie::new(&seqs));
        check_replay(&TrieConstraint::new(trie, 6, 5), &ops);
    }
}

#[test]
fn refusals_are_typed() {
    let spec = DyckSpec {
        kinds: 1,
        max_depth: 1,
        max_len: 4,
    };
    let mut c = DyckConstraint::new(spec);
    let reason = |c: &mut DyckConstraint, t| c.advance(t).unwrap_err().reason;
    assert_eq!(reason(&mut c, 1), RejectReason::NotAllowed);
    assert_eq!(c.refusal(1), Some(DyckRefusal::Mismatch));
    assert_eq!(reason(&mut c, 3), RejectReason::OutOfVocabulary);
    c.advance(0).unwrap();
    assert_eq!(reason(&mut c, 0), RejectReason::NotAllowed);
    assert_eq!(c.refusal(0), Some(DyckRefusal::DepthOrLength));
    assert_eq!(c.refusal(3), Some(DyckRefusal::OutOfVocabulary));
    assert_eq!(c.refusal(1), None);
    assert_eq!(reason(&mut c, 2), RejectReason::EosNotAccepting);
    c.advance(1).unwrap();
    c.advance(2).unwrap();
    assert_eq!(c.num_tokens(), 3, "EOS counts as a token");
    assert_eq!(c.len(), 2, "EOS is not a bracket");
    let e = c.advance(0).unwrap_err();
    assert_eq!((e.position, e.reason), (3, RejectReason::Finished));
    let trie = Arc::new(TokenTrie::new([vec![0u32]]));
    let mut t = TrieConstraint::new(trie, 3, 2);
    assert_eq!(t.advance(1).unwrap_err().reason, RejectReason::NotAllowed);
}
