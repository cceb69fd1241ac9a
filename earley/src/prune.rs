//! ZapFormat dynamic pruning (§4.2.2–4.2.3): the *compact* step.
//!
//! The dependency graph of §4.2.1 has an edge from an item to every item it
//! helps create (PREDICT, SCAN, COMPLETE). All three operations start from
//! the last Earley set, so an item matters for the future only if an item of
//! the last set is reachable from it. For the items that survive a set being
//! closed, the only edges that still reach the future are the COMPLETE edges
//! `q = (A → α • B β, i, k)` ← `p = (B → γ •, k, j)`: a waiting item `q` in
//! set `k` is needed iff some live item with origin `k` can, by completing,
//! reach `B` (directly, or through other waiting items of set `k` whose own
//! origin is `k`). Everything else is dead:
//!
//! - completed items are dropped once their set is processed (Fig. 3);
//! - scan items (postdot terminal) of every set but the last are dropped —
//!   scanning only reads the last set;
//! - waiting items whose postdot nonterminal no live item needs are dropped;
//! - a set left with no item is dropped entirely ("not referenced by the
//!   union of reference chains of all items in the last Earley set").
//!
//! [`compact`] computes exactly this active set *R* by walking the retained
//! sets newest-first: the needs of set `k` are known once every later set is
//! done, because origins only point backwards. The walk never looks at an
//! item that was pruned before (pruned items are gone), so its cost is the
//! size of the retained chart, not of everything parsed so far; a set whose
//! kept items do not change keeps its `Arc` (no copy). This is the
//! incremental maintenance of §4.2.3.

use std::sync::Arc;

use crate::chart::{Chart, Item};
use crate::grammar::{Rules, Sym, SymKind};

/// Scratch space reused between compactions.
#[derive(Default, Debug, Clone)]
pub(crate) struct Scratch {
    needs: Vec<Vec<u32>>,
    kept: Vec<Item>,
}

/// Compacts `chart` in place (see the module docs). The last set loses its
/// completed items; older sets keep only the waiting items that are needed.
pub(crate) fn compact(g: &Rules, chart: &mut Chart, scratch: &mut Scratch) {
    let n = chart.sets.len();
    if n == 0 {
        return;
    }
    if scratch.needs.len() < n {
        scratch.needs.resize(n, Vec::new());
    }
    for v in scratch.needs.iter_mut().take(n) {
        v.clear();
    }
    let idx_of = |sets: &[(u32, Arc<[Item]>)], p: u32| sets.binary_search_by_key(&p, |s| s.0).ok();
    // The last set: drop completed items; the rest is live.
    {
        let (last_pos, last) = &chart.sets[n - 1];
        let last_pos = *last_pos;
        let keep_all = last.iter().all(|x| !g.sym(x.pos).is_end());
        if !keep_all {
            let v: Vec<Item> = last
                .iter()
                .copied()
                .filter(|x| !g.sym(x.pos).is_end())
                .collect();
            chart.sets[n - 1].1 = v.into();
        }
        for x in chart.sets[n - 1].1.iter() {
            if x.origin != last_pos {
                if let Some(k) = idx_of(&chart.sets, x.origin) {
                    scratch.needs[k].push(g.lhs[x.pos as usize]);
                }
            }
        }
    }
    // Older sets, newest first.
    for k in (0..n - 1).rev() {
        let mut need = std::mem::take(&mut scratch.needs[k]);
        if need.is_empty() {
            scratch.needs[k] = need;
            chart.sets[k].1 = Arc::from(Vec::new());
            continue;
        }
        need.sort_unstable();
        need.dedup();
        let (pos, items) = &chart.sets[k];
        let pos = *pos;
        scratch.kept.clear();
        let mut kept_mask = vec![false; items.len()];
        // Fixpoint over needs that arise inside the set (origin == pos).
        let mut qi = 0;
        while qi < need.len() {
            let b = Sym::nt(need[qi]);
            qi += 1;
            for (j, y) in items.iter().enumerate() {
                if !kept_mask[j] && g.sym(y.pos) == b {
                    kept_mask[j] = true;
                    let l = g.lhs[y.pos as usize];
                    if y.origin == pos {
                        if !need.contains(&l) {
                            need.push(l);
                        }
                    } else if let Some(o) = idx_of(&chart.sets, y.origin) {
                        scratch.needs[o].push(l);
                    }
                }
            }
        }
        let nk = kept_mask.iter().filter(|&&b| b).count();
        if nk != items.len() {
            let v: Vec<Item> = items
                .iter()
                .zip(&kept_mask)
                .filter(|(_, &b)| b)
                .map(|(x, _)| *x)
                .collect();
            chart.sets[k].1 = v.into();
        }
        need.clear();
        scratch.needs[k] = need;
    }
    // Drop empty sets (the last one is kept even when empty of waiting items).
    let last = n - 1;
    let mut i = 0;
    chart.sets.retain(|s| {
        let keep = i == last || !s.1.is_empty();
        i += 1;
        keep
    });
    debug_assert!(chart
        .sets
        .iter()
        .all(|(_, s)| s.iter().all(|x| match g.sym(x.pos).kind() {
            SymKind::Nt(n) => (n as usize) < g.nullable.len(),
            SymKind::Term(t) => (t as usize) < g.terms.len(),
            SymKind::End => true,
        })));
}
