//! Dynamic draft-graph pruning (§4.4.4): each step keeps the `D*` nodes of
//! highest total score under the current marginals.
//!
//! Scores are geometric means of probabilities, computed as arithmetic
//! means of log-probabilities (no underflow for long formulas):
//! - local score (Eq. 12): `GM(p_i1 … p_ik)` of the node's tokens;
//! - child score (Eq. 13): `GM` of the children's local scores, over the
//!   children that can be filled now;
//! - total score (Eq. 14): `GM(localScore, childScore)`; a node without a
//!   fillable child scores its local score (the paper leaves this case
//!   open; an empty geometric mean is taken as absent).

use crate::formula::{Anchor, DraftFormula};
use crate::graph::DraftGraph;

/// Log local score (Eq. 12) of every node: `Some(mean log p)` for a node
/// that can be filled from `anchor`, `None` otherwise.
pub fn log_local_scores(graph: &DraftGraph, anchor: &Anchor) -> Vec<Option<f64>> {
    graph
        .nodes()
        .map(|n| {
            let k = n.formula.len().max(1) as f64;
            anchor.log_prob(&n.formula).map(|s| s / k)
        })
        .collect()
}

/// Log total score (Eqs. 13–14) from the log local scores.
pub fn log_total_scores(graph: &DraftGraph, local: &[Option<f64>]) -> Vec<Option<f64>> {
    (0..graph.len())
        .map(|i| {
            let own = local.get(i).copied().flatten()?;
            let kids: Vec<f64> = graph
                .children(i)
                .filter_map(|c| local.get(c).copied().flatten())
                .collect();
            if kids.is_empty() {
                Some(own)
            } else {
                let child = kids.iter().sum::<f64>() / kids.len() as f64;
                Some(0.5 * (own + child))
            }
        })
        .collect()
}

/// The node indices kept for this step: among the nodes whose formula
/// strictly contains `current` (the tokens already unmasked since the
/// anchor — any other draft can never equal a later state) and can be
/// filled, the `budget` of highest total score (ties: lower index), in
/// decreasing score order. A formula that is a node at several levels is
/// kept once (its best-scoring node): the drafts would be equal blocks.
pub fn prune(
    graph: &DraftGraph,
    anchor: &Anchor,
    current: &DraftFormula,
    budget: usize,
) -> Vec<usize> {
    if budget == 0 {
        return Vec::new();
    }
    let local = log_local_scores(graph, anchor);
    let total = log_total_scores(graph, &local);
    let mut ranked: Vec<(usize, f64)> = graph
        .nodes()
        .enumerate()
        .filter(|(_, n)| current.is_strict_subset(&n.formula))
        .filter_map(|(i, _)| total[i].map(|s| (i, s)))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut kept: Vec<usize> = Vec::with_capacity(budget.min(ranked.len()));
    for (i, _) in ranked {
        if kept.len() == budget {
            break;
        }
        let f = graph.node(i).map(|n| &n.formula);
        if !kept.iter().any(|&k| graph.node(k).map(|n| &n.formula) == f) {
            kept.push(i);
        }
    }
    kept
}
