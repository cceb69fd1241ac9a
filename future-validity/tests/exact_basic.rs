//! Exact Φ (prefix-tree enumeration, token-trie table) against the language mass and each other.

mod common;

use std::sync::Arc;

use common::{members, random_lm, seq_logp};
use zapspec_core::{prob, Constraint, LanguageModel};
use zapspec_phi::{Exact, ExactConfig, ExactTrie, Metered, PhiEstimator};
use zapspec_testkit::TokenTrie;
use zapspec_testkit::{DyckConstraint, DyckSpec, TrieConstraint};

#[test]
fn exact_dyck_root_phi_is_language_mass() {
    let spec = DyckSpec {
        kinds: 1,
        max_depth: 2,
        max_len: 6,
    };
    let c = DyckConstraint::new(spec);
    let mut lm = random_lm(spec.vocab_size(), 3, 2.0);
    let mut ex = Exact::new(ExactConfig::default());
    let want: Vec<f64> = members(&c)
        .iter()
        .map(|x| seq_logp(&mut lm, &[], x, spec.eos()))
        .collect();
    let want = prob::logsumexp(&want);
    lm.truncate(0);
    let got = ex.log_phi_prefix(&c, &mut lm).unwrap();
    assert!((got - want).abs() < 1e-10, "{got} vs {want}");
}

#[test]
fn exact_trie_agrees_with_prefix_dp() {
    let trie = Arc::new(TokenTrie::new([
        vec![0u32, 1],
        vec![0, 2, 1],
        vec![1],
        vec![2, 2, 2, 0],
    ]));
    let c = TrieConstraint::new(trie, 4, 3);
    let mut lm = random_lm(4, 9, 3.0);
    let logits = lm.next_logits().unwrap();
    let a = Exact::default().log_phi(&c, &mut lm, &logits).unwrap();
    let b = ExactTrie::new().log_phi(&c, &mut lm, &logits).unwrap();
    assert_eq!(lm.context().len(), 0);
    for (x, y) in a.iter().zip(&b) {
        assert!(
            (x - y).abs() < 1e-12 || (x.is_infinite() && y.is_infinite()),
            "{a:?} {b:?}"
        );
    }
    let _ = c.clone().mask();
}

/// With a prompt in the model's context, the trie table and the prefix DP
/// agree at every position along a member, and the context is restored.
#[test]
fn exact_trie_with_prompt_along_a_path() {
    let trie = Arc::new(TokenTrie::new([
        vec![0u32, 1, 2],
        vec![0, 2],
        vec![1, 1],
        vec![0, 1],
    ]));
    let mut c = TrieConstraint::new(trie, 4, 3);
    let mut lm = random_lm(4, 21, 2.5);
    let prompt = [2u32, 2, 0];
    lm.prefill(&prompt).unwrap();
    let (mut ex, mut et) = (Exact::default(), Metered::new(ExactTrie::new()));
    for t in [0u32, 1, 2] {
        let logits = lm.next_logits().unwrap();
        let a = ex.log_phi(&c, &mut lm, &logits).unwrap();
        let b = et.log_phi(&c, &mut lm, &logits).unwrap();
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() < 1e-12 || (x.is_infinite() && y.is_infinite()),
                "{a:?} {b:?}"
            );
        }
        assert_eq!(&lm.context()[..3], &prompt);
        c.advance(t).unwrap();
        lm.prefill(&[t]).unwrap();
    }
    // the table was built once (one forward per trie node, plus the root)
    assert_eq!(
        et.cost().forwards as usize,
        et.inner().table().unwrap().trie.num_nodes()
    );
}
