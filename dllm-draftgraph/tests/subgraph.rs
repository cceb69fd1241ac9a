//! The branch-and-bound subgraph search (Eqs. 24–27) equals the paper's
//! brute force on random small graphs, and is fast at the paper's size.

use proptest::prelude::*;
use zapspec_spiffy::calibrate::{is_connected, select_subgraph, select_subgraph_brute_force};
use zapspec_spiffy::{DraftFormula, DraftGraph, DraftNode};

/// Raw random nodes: `(i, j)` pairs, level, count.
type RawNodes = Vec<(Vec<(u32, u32)>, u32, u64)>;

fn random_graph(raw: RawNodes, keep: &[bool]) -> DraftGraph {
    let mut nodes: Vec<DraftNode> = Vec::new();
    for (pairs, level, count) in raw {
        let mut m = std::collections::BTreeMap::new();
        for (i, j) in pairs {
            m.insert(i, j);
        }
        let Ok(formula) = DraftFormula::new(m) else {
            continue;
        };
        if !formula.is_empty() && nodes.iter().all(|n| n.formula != formula) {
            nodes.push(DraftNode {
                formula,
                level,
                count,
            });
        }
    }
    let mut edges = Vec::new();
    let mut k = 0;
    for a in 0..nodes.len() {
        for b in 0..nodes.len() {
            if nodes[a].formula.is_strict_subset(&nodes[b].formula) {
                if keep.is_empty() || keep[k % keep.len()] {
                    edges.push((a, b));
                }
                k += 1;
            }
        }
    }
    DraftGraph::new(nodes, edges).unwrap()
}

fn arb_raw(max_nodes: usize) -> impl Strategy<Value = RawNodes> {
    prop::collection::vec(
        (
            prop::collection::vec((1u32..6, 1u32..3), 1..5),
            1u32..6,
            prop_oneof![0u64..5, 0u64..1000],
        ),
        0..max_nodes,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn branch_and_bound_equals_brute_force(
        raw in arb_raw(14),
        keep in prop::collection::vec(any::<bool>(), 1..40),
        budget in 0usize..9,
        root_levels in 0u32..4,
    ) {
        let g = random_graph(raw, &keep);
        let fast = select_subgraph(&g, budget, root_levels);
        let slow = select_subgraph_brute_force(&g, budget, root_levels);
        prop_assert_eq!(fast.score, slow.score);
        prop_assert_eq!(fast.nodes.len(), slow.nodes.len());
        prop_assert!(is_connected(&g, &fast.nodes, root_levels));
        let s: u64 = fast.nodes.iter().map(|&v| g.node(v).unwrap().count).sum();
        prop_assert_eq!(s, fast.score);
    }
}

/// A 40-node all-possibilities-like graph (levels 1–10, top-4 per level,
/// heavy-tailed counts): D = 10 in well under a second.
#[test]
fn d10_is_fast() {
    let mut raw = Vec::new();
    let mut x = 12345u64;
    for level in 1..=10u32 {
        for v in 0..4u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // level k: ranks 1..=k+1, with the v-th variant bumping one vocab rank
            let mut pairs: Vec<(u32, u32)> = (1..=level + 1).map(|i| (i, 1)).collect();
            if v > 0 {
                let i = ((x >> 33) % (level as u64 + 1)) as usize;
                pairs[i].1 = 1 + v;
            }
            let count = 10_000 / (level as u64 * (v as u64 + 1)) + (x >> 50) % 50;
            raw.push((pairs, level, count));
        }
    }
    let g = random_graph(raw, &[]);
    let t = std::time::Instant::now();
    let fast = select_subgraph(&g, 10, 2);
    let dt = t.elapsed();
    assert_eq!(fast.nodes.len(), 10);
    assert!(is_connected(&g, &fast.nodes, 2));
    assert!(dt.as_secs_f64() < 1.0, "took {dt:?}");
}
