//! Ranks (Eqs. 8–11), formulas, the parent relation (Eqs. 4–6), graph
//! files, pruning scores (Eqs. 12–14) and the sampling streams.

use ndarray::array;
use zapspec_spiffy::decode::{next_state, step_uniforms, StepKey};
use zapspec_spiffy::graph::is_parent;
use zapspec_spiffy::marginals::Marginals;
use zapspec_spiffy::pruning::{log_local_scores, log_total_scores, prune};
use zapspec_spiffy::{
    generate, Anchor, DecodeConfig, DraftFormula, DraftGraph, DraftNode, Unmasking,
};
use zapspec_testkit::toy::ToyDiffusion;

const M: u32 = 3; // mask token of the hand-made marginals (vocab 4)

fn f(pairs: &[(u32, u32)]) -> DraftFormula {
    DraftFormula::new(pairs.iter().copied()).unwrap()
}

/// Block of 3, offset 1 unmasked; offset 2 is the most confident.
fn anchor() -> Anchor {
    let ln = |p: f64| p.ln() as f32;
    let logits = array![
        [ln(0.5), ln(0.3), ln(0.2), 0.0],
        [0.0, 0.0, 0.0, 0.0],
        [ln(0.1), ln(0.8), ln(0.1), 5.0],
    ];
    let block = vec![M, 0, M];
    let marg = Marginals::new(&logits, &block, M).unwrap();
    Anchor::new(block, marg)
}

#[test]
fn ranks_follow_eqs_8_to_11() {
    let a = anchor();
    let m = a.marginals();
    assert_eq!(m.position_order(), vec![2, 0]);
    assert_eq!(a.offset_of_rank(1), Some(2));
    assert_eq!(a.offset_of_rank(2), Some(0));
    assert_eq!(a.offset_of_rank(3), None);
    assert_eq!(m.token_at_rank(2, 1), Some(1));
    // tie between tokens 0 and 2 at offset 2: lower id first
    assert_eq!(m.token_at_rank(2, 2), Some(0));
    assert_eq!(m.token_at_rank(2, 3), Some(2));
    assert_eq!(m.token_at_rank(2, 4), None); // the mask token is not in the support
    assert_eq!(m.vocab_rank(0, 2), Some(3));
    assert_eq!(m.vocab_rank(1, 0), None); // unmasked offset
    assert!((m.log_prob(2, 1) - 0.8f64.ln()).abs() < 1e-6);
    assert_eq!(a.fill(&f(&[(1, 1), (2, 2)])), Some(vec![1, 0, 1]));
    assert_eq!(a.fill(&f(&[(3, 1)])), None);
    assert_eq!(a.formula_of(&[2, 0, 1]), Some(f(&[(1, 1), (2, 3)])));
    assert_eq!(a.formula_of(&[M, 1, M]), None); // changed an unmasked offset
}

#[test]
fn formulas_are_validated() {
    assert!(DraftFormula::new([(0, 1)]).is_err());
    assert!(DraftFormula::new([(1, 0)]).is_err());
    assert!(DraftFormula::new([(1, 1), (1, 2)]).is_err());
    assert!(f(&[(1, 1)]).is_strict_subset(&f(&[(1, 1), (2, 1)])));
    assert!(!f(&[(1, 1)]).is_strict_subset(&f(&[(1, 1)])));
    assert_eq!(f(&[(2, 1), (1, 3)]).to_string(), "{(1,3),(2,1)}");
}

#[test]
fn parent_relation_eqs_4_to_6() {
    let n = |p: &[(u32, u32)], level| DraftNode {
        formula: f(p),
        level,
        count: 0,
    };
    let a = n(&[(1, 1), (2, 1)], 1);
    let b = n(&[(1, 1), (2, 1), (3, 1)], 2);
    let c = n(&[(1, 1), (2, 1), (3, 1), (4, 1)], 2);
    assert!(is_parent(&a, &b, Some(1)));
    assert!(!is_parent(&a, &c, Some(1))); // Eq. 5: one token per step
    assert!(is_parent(&a, &c, Some(2)) || c.level != a.level + 1);
    assert!(is_parent(&a, &c, None)); // dynamic: Eq. 6 only
    assert!(!is_parent(&b, &a, None));
}

#[test]
fn graph_files_round_trip_and_are_checked() {
    let g = DraftGraph::top1_chain(4);
    assert_eq!(g.len(), 4);
    assert!(g.has_edge(0, 1) && !g.has_edge(1, 0));
    let s = g.to_json().unwrap();
    let h = DraftGraph::from_json(&s).unwrap();
    assert_eq!(h.to_json().unwrap(), s);
    assert_eq!(h.children(1).collect::<Vec<_>>(), vec![2]);
    assert_eq!(h.parents(1).collect::<Vec<_>>(), vec![0]);
    // one formula at two levels is two nodes (Alg. 2's per-level nodes)
    let two_levels = r#"{"version":1,"nodes":[{"formula":[[1,1]],"level":1},{"formula":[[1,1]],"level":2}],"edges":[]}"#;
    assert_eq!(DraftGraph::from_json(two_levels).unwrap().len(), 2);
    // an edge that is not a strict subset, a bad index, a formula twice at
    // one level, a bad rank, a bad version
    let bad = [
        r#"{"version":1,"nodes":[{"formula":[[1,1]],"level":1},{"formula":[[2,1]],"level":1}],"edges":[[0,1]]}"#,
        r#"{"version":1,"nodes":[{"formula":[[1,1]],"level":1}],"edges":[[0,5]]}"#,
        r#"{"version":1,"nodes":[{"formula":[[1,1]],"level":2},{"formula":[[1,1]],"level":2}],"edges":[]}"#,
        r#"{"version":1,"nodes":[{"formula":[[0,1]],"level":1}],"edges":[]}"#,
        r#"{"version":2,"nodes":[],"edges":[]}"#,
        r#"not json"#,
    ];
    for b in bad {
        assert!(DraftGraph::from_json(b).is_err(), "{b}");
    }
}

#[test]
fn pruning_scores_eqs_12_to_14() {
    let a = anchor();
    let g = DraftGraph::with_subset_edges(vec![
        DraftNode {
            formula: f(&[(1, 1)]),
            level: 1,
            count: 0,
        },
        DraftNode {
            formula: f(&[(1, 1), (2, 1)]),
            level: 2,
            count: 0,
        },
        DraftNode {
            formula: f(&[(1, 1), (3, 1)]),
            level: 2,
            count: 0,
        },
    ])
    .unwrap();
    let local = log_local_scores(&g, &a);
    assert!((local[0].unwrap() - 0.8f64.ln()).abs() < 1e-6);
    assert!((local[1].unwrap() - 0.5 * (0.8f64.ln() + 0.5f64.ln())).abs() < 1e-6);
    assert_eq!(local[2], None); // rank 3 does not exist
    let total = log_total_scores(&g, &local);
    assert!((total[0].unwrap() - 0.5 * (local[0].unwrap() + local[1].unwrap())).abs() < 1e-9);
    assert_eq!(total[1], local[1]);
    // only strict supersets of the current tokens, fillable, best first
    assert_eq!(prune(&g, &a, &DraftFormula::default(), 5), vec![0, 1]);
    assert_eq!(prune(&g, &a, &f(&[(1, 1)]), 5), vec![1]);
    assert_eq!(
        prune(&g, &a, &DraftFormula::default(), 0),
        Vec::<usize>::new()
    );
    // a formula kept at two levels is sent once
    let node = |p: &[(u32, u32)], level| DraftNode {
        formula: f(p),
        level,
        count: 0,
    };
    let g = DraftGraph::with_subset_edges(vec![
        node(&[(1, 1)], 1),
        node(&[(1, 1)], 2),
        node(&[(1, 1), (2, 1)], 2),
    ])
    .unwrap();
    assert_eq!(prune(&g, &a, &DraftFormula::default(), 2), vec![0, 2]);
}

#[test]
fn next_state_static_threshold_and_sampling() {
    let a = anchor();
    let mut cfg = DecodeConfig::default();
    let key = StepKey { block: 0, step: 0 };
    let mut b = a.block().to_vec();
    let ch = next_state(&mut b, a.marginals(), &cfg, key).unwrap();
    assert_eq!((ch.len(), b.clone()), (1, vec![M, 0, 1]));
    cfg.unmasking = Unmasking::Threshold { tau: 0.9 };
    let mut b = a.block().to_vec();
    next_state(&mut b, a.marginals(), &cfg, key).unwrap();
    assert_eq!(b, vec![M, 0, 1]); // none above τ: the most confident one
    cfg.unmasking = Unmasking::Threshold { tau: 0.4 };
    let mut b = a.block().to_vec();
    next_state(&mut b, a.marginals(), &cfg, key).unwrap();
    assert_eq!(b, vec![0, 0, 1]);
    // the step streams depend on (seed, block, step) only
    assert_eq!(step_uniforms(1, key, 4), step_uniforms(1, key, 4));
    assert_ne!(step_uniforms(1, key, 4), step_uniforms(2, key, 4));
    assert_ne!(
        step_uniforms(1, key, 4),
        step_uniforms(1, StepKey { block: 0, step: 1 }, 4)
    );
    let sampled = DecodeConfig {
        gen_len: 24,
        block_len: 8,
        temperature: 1.0,
        seed: 5,
        ..DecodeConfig::default()
    };
    let run = |seed| {
        generate(
            &mut ToyDiffusion::new(12, 11, 3),
            &[1, 2],
            &DecodeConfig { seed, ..sampled },
        )
        .unwrap()
        .tokens
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}
