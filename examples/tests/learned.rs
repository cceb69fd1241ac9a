//! The learned tier (paper §5.3, `examples::fvo_study::learned`): training
//! lowers the loss, the structural gate falls back to OneStep-Cheap on
//! balanced tries, and the leave-one-schema-out protocol end to end.

use std::sync::Arc;

use examples::fvo_study::learned::{
    edge_examples, leave_one_schema_out, LearnedConfig, LearnedPhi, TrieStats,
};
use zapspec_core::{LanguageModel, TokenId};
use zapspec_phi::metrics::TerminalLaws;
use zapspec_phi::{ExactTrie, OneStepCheap, PhiEstimator};
use zapspec_testkit::toy::{hashed_logits, ClosureLm};
use zapspec_testkit::{TokenTrie, TrieConstraint};

/// A random LM over `vocab` tokens: logits hash the whole context.
fn random_lm(
    vocab: usize,
    seed: u64,
    scale: f32,
) -> ClosureLm<impl Fn(&[TokenId]) -> Vec<f32> + Clone> {
    ClosureLm::new(vocab, move |ctx: &[TokenId]| {
        hashed_logits(seed, ctx, vocab, scale as f64)
    })
}

fn is_constant(v: &[f64]) -> bool {
    let f: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    f.windows(2).all(|w| (w[0] - w[1]).abs() < 1e-12)
        && f.len() == v.iter().filter(|x| **x > f64::NEG_INFINITY).count()
}

fn trie_of(seqs: &[&[TokenId]]) -> Arc<TokenTrie> {
    Arc::new(TokenTrie::new(seqs.iter().map(|s| s.to_vec())))
}

#[test]
fn learned_estimator_trains_and_gates() {
    // Training "schemas": unbalanced tries; LMs differ per schema.
    let schemas = [
        trie_of(&[&[0, 1], &[0, 2, 1], &[1, 1, 1, 1], &[2]]),
        trie_of(&[&[1, 0], &[1, 2, 2, 0], &[0], &[2, 2]]),
        trie_of(&[&[2, 0, 0], &[2, 1], &[0, 0, 0, 0, 1], &[1, 2]]),
    ];
    let mut ex = Vec::new();
    for (i, t) in schemas.iter().enumerate() {
        let mut lm = random_lm(4, 100 + i as u64, 2.0);
        ex.extend(edge_examples(t.clone(), 3, &mut lm, &[]).unwrap());
    }
    let est = LearnedPhi::train(
        &ex,
        LearnedConfig {
            epochs: 600,
            ..Default::default()
        },
    )
    .unwrap();
    let first = est.losses[0];
    let last = *est.losses.last().unwrap();
    assert!(last < 0.5 * first, "training MSE {first} -> {last}");
    // Balanced trie: every child of the root has the same statistics, so
    // the gate returns OneStep-Cheap exactly.
    let balanced = trie_of(&[&[0, 1], &[1, 1], &[2, 1]]);
    let stats = TrieStats::new(&balanced);
    assert!(stats.balanced(&balanced, balanced.root()));
    let c = TrieConstraint::new(balanced, 4, 3);
    let mut lm = random_lm(4, 5, 2.0);
    let logits = lm.next_logits().unwrap();
    let mut gated = est.clone();
    let g = gated.log_phi(&c, &mut lm, &logits).unwrap();
    let o = OneStepCheap::new().log_phi(&c, &mut lm, &logits).unwrap();
    // Same values (OneStep-Cheap's |V| normaliser uses a fast f32 exp).
    for (a, b) in g.iter().zip(&o) {
        assert!(
            (a - b).abs() < 1e-6 || (a.is_infinite() && b.is_infinite()),
            "{g:?} vs {o:?}"
        );
    }
    assert_eq!(gated.gated, 1);
    // Unbalanced held-out trie: the learned branch is used and varies.
    let held = trie_of(&[&[0], &[1, 2, 2, 2], &[2, 0]]);
    let c = TrieConstraint::new(held.clone(), 4, 3);
    let v = gated.log_phi(&c, &mut lm, &logits).unwrap();
    assert_eq!(gated.learned, 1);
    assert!(!is_constant(&v), "{v:?}");
    let exact = ExactTrie::new().log_phi(&c, &mut lm, &logits).unwrap();
    assert!(!is_constant(&exact));
    assert!(LearnedPhi::train(&[], LearnedConfig::default()).is_err());
}

/// The §5.3 protocol end to end on four random finite "schemas": train on
/// three (exact labels), evaluate the exact terminal law on the held-out
/// one. Prints the TVs; asserts the laws are proper and the held-out
/// labels were not used.
#[test]
fn learned_leave_one_schema_out_protocol() {
    let schemas = [
        trie_of(&[&[0, 1], &[0, 2, 1], &[1, 1, 1, 1], &[2]]),
        trie_of(&[&[1, 0], &[1, 2, 2, 0], &[0], &[2, 2]]),
        trie_of(&[&[2, 0, 0], &[2, 1], &[0, 0, 0, 0, 1], &[1, 2]]),
        trie_of(&[&[0, 0], &[0, 1, 2, 2, 1], &[2, 1, 0], &[1]]),
    ];
    let per: Vec<_> = schemas
        .iter()
        .enumerate()
        .map(|(i, t)| {
            edge_examples(t.clone(), 3, &mut random_lm(4, 200 + i as u64, 2.5), &[]).unwrap()
        })
        .collect();
    for (held, schema) in schemas.iter().enumerate() {
        let mut est = leave_one_schema_out(
            &per,
            held,
            LearnedConfig {
                epochs: 400,
                seed: held as u64,
                ..Default::default()
            },
        )
        .unwrap();
        let n_train: usize = per
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != held)
            .map(|(_, e)| e.len())
            .sum();
        assert!(n_train > 0 && n_train < per.iter().map(|e| e.len()).sum::<usize>());
        let c = TrieConstraint::new(schema.clone(), 4, 3);
        let mut lm = random_lm(4, 200 + held as u64, 2.5);
        let mut one = OneStepCheap::new();
        let mut ests: Vec<&mut dyn PhiEstimator<TrieConstraint, _>> = vec![&mut est, &mut one];
        let laws = TerminalLaws::enumerate(&c, &mut lm, &mut ests, 100).unwrap();
        let s: f64 = laws.estimators[0].log_mu.iter().map(|l| l.exp()).sum();
        assert!((s - 1.0).abs() < 1e-12);
        eprintln!(
            "held-out {held}: TV proj {:.3} onestep {:.3} learned-gated {:.3}",
            laws.tv_proj_star(),
            laws.tv_est_star(1),
            laws.tv_est_star(0)
        );
    }
    assert!(leave_one_schema_out(&per, 9, LearnedConfig::default()).is_err());
}
