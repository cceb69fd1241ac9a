//! Offline draft-graph calibration (Algorithm 2 / Appendix D).
//!
//! 1. [`record_trajectory`]: run vanilla decoding and, for every step `t`,
//!    write the tokens unmasked at steps `t, t+1, …, t+𝓛` as formulas in
//!    the ranks of step `t`'s marginals (Eqs. 10–11).
//! 2. [`build_candidate_graph`]: the all-possibilities graph — per look-ahead
//!    level `k`, the node "everything unmasked up to `t+k`" and its
//!    predecessor "everything up to `t+k−1`"; keep the top-3 most frequent
//!    of each, then add an edge for every strict-subset pair. Nodes and
//!    counts are per level (the paper's reading) unless
//!    [`CalibrationConfig::merge_levels`] is set.
//! 3. [`select_subgraph`]: the connected subgraph of `D` nodes with the
//!    largest total count (Eqs. 24–27), exactly, by branch and bound
//!    ([`select_subgraph_brute_force`] is the paper's exhaustive search,
//!    kept as the test oracle).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use zapspec_core::{DiffusionModel, TokenId};

use crate::decode::{generate_with, Choice, DecodeConfig, DecodeOutput};
use crate::error::SpiffyError;
use crate::formula::{Anchor, DraftFormula};
use crate::graph::{DraftGraph, DraftNode};

/// One calibration timestep: `unmasked[ℓ]` is the formula (in the ranks of
/// step `t`'s marginals) of the tokens unmasked at step `t + ℓ`, for
/// `ℓ = 0 … min(𝓛, steps left in the block − 1)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimestepRecord {
    /// Per look-ahead `ℓ`, the tokens unmasked at `t + ℓ` as `(i, j)` pairs.
    pub unmasked: Vec<DraftFormula>,
}

impl TimestepRecord {
    /// Everything unmasked at look-aheads `0..=k` (Algorithm 2's
    /// `current_node` at level `k`); `None` past the record.
    pub fn cumulative(&self, k: usize) -> Option<DraftFormula> {
        let parts = self.unmasked.get(..=k)?;
        Some(
            parts
                .iter()
                .fold(DraftFormula::default(), |acc, f| acc.union_unchecked(f)),
        )
    }
}

/// A recorded vanilla generation with its look-ahead records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trajectory {
    /// One record per denoising step.
    pub records: Vec<TimestepRecord>,
    /// The vanilla output.
    pub output: DecodeOutput,
}

/// Algorithm 2, part 1: decodes `prompt` with vanilla decoding and records,
/// for every step, the formulas of the tokens unmasked over the next
/// `lookahead` steps. Costs the vanilla run plus `O(steps·𝓛·L·V)`.
pub fn record_trajectory<M: DiffusionModel + ?Sized>(
    model: &mut M,
    prompt: &[TokenId],
    cfg: &DecodeConfig,
    lookahead: usize,
) -> Result<Trajectory, SpiffyError> {
    let mut steps: Vec<(usize, Anchor, Vec<Choice>)> = Vec::new();
    let output = generate_with(model, prompt, cfg, |b, before, marg, chosen| {
        steps.push((
            b,
            Anchor::new(before.to_vec(), marg.clone()),
            chosen.to_vec(),
        ));
    })?;
    let mut records = Vec::with_capacity(steps.len());
    for (t, (b, anchor, _)) in steps.iter().enumerate() {
        let mut unmasked = Vec::new();
        for (bl, _, chosen) in steps[t..].iter().take(lookahead + 1) {
            if bl != b {
                break;
            }
            let mut state = anchor.block().to_vec();
            for c in chosen {
                state[c.offset] = c.token;
            }
            let f = anchor.formula_of(&state).ok_or_else(|| {
                SpiffyError::Formula("a recorded step changed an unmasked position".into())
            })?;
            unmasked.push(f);
        }
        records.push(TimestepRecord { unmasked });
    }
    Ok(Trajectory { records, output })
}

/// Configuration of calibration (Algorithm 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalibrationConfig {
    /// Look-ahead `𝓛`: levels of the all-possibilities graph.
    pub lookahead: usize,
    /// Nodes (and in-edge sources) kept per level (the paper: 3).
    pub top_per_level: usize,
    /// Draft budget `D` of the calibrated graph (the paper: 10).
    pub budget: usize,
    /// Levels whose nodes need no parent to be selected (Eq. 24: 2).
    pub root_levels: u32,
    /// How `count(q)` is read (Algorithm 2, part 2). `false` (the default)
    /// is the paper's reading: one node `q_kv` per level `k` a formula is
    /// kept at, counted by how often it is level `k`'s state (the same
    /// formula at two levels is two nodes, two drafts). `true` merges a
    /// formula kept at several levels into one node at the lowest of them,
    /// counted over all levels (how often the draft would have equalled any
    /// later true state): fewer duplicate drafts, but Eq. 27 is then
    /// maximised for other counts, and the chosen graph can be worse under
    /// the paper's objective.
    #[serde(default)]
    pub merge_levels: bool,
    /// Measure [`Calibration::build_time`] and [`Calibration::search_time`]
    /// (wall time from the system clock). Off by default: both stay zero
    /// and the clock is never read.
    #[serde(default)]
    pub timing: bool,
}

impl Default for CalibrationConfig {
    fn default() -> Self {
        CalibrationConfig {
            lookahead: 6,
            top_per_level: 3,
            budget: 10,
            root_levels: 2,
            merge_levels: false,
            timing: false,
        }
    }
}

fn top_k(counts: &HashMap<DraftFormula, u64>, k: usize) -> Vec<DraftFormula> {
    let mut v: Vec<(&DraftFormula, &u64)> = counts.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.into_iter().take(k).map(|(f, _)| f.clone()).collect()
}

/// Algorithm 2, part 2: the all-possibilities graph. Per level `k = 1..=𝓛`
/// the top [`CalibrationConfig::top_per_level`] states "everything unmasked
/// up to `t+k`" become nodes of level `k`, and the top predecessors
/// "everything up to `t+k−1`" nodes of level `k − 1`; then every
/// strict-subset pair is an edge. Counts follow
/// [`CalibrationConfig::merge_levels`]: by default a node of level `k` is
/// counted by how often its formula is level `k`'s state (one node per
/// level, as in the paper); merged, a formula kept at several levels is one
/// node at the lowest of them, counted over all levels.
/// `O(records·𝓛·|q| + n²·|q|)` for `n` nodes.
pub fn build_candidate_graph(
    records: &[TimestepRecord],
    cfg: &CalibrationConfig,
) -> Result<DraftGraph, SpiffyError> {
    let mut level_counts: Vec<HashMap<DraftFormula, u64>> = vec![HashMap::new(); cfg.lookahead + 1];
    let mut prev_counts: Vec<HashMap<DraftFormula, u64>> = vec![HashMap::new(); cfg.lookahead + 1];
    for r in records {
        for k in 1..=cfg.lookahead {
            let (Some(cur), Some(prev)) = (r.cumulative(k), r.cumulative(k - 1)) else {
                break;
            };
            *level_counts[k].entry(cur).or_default() += 1;
            if k >= 2 {
                *prev_counts[k].entry(prev).or_default() += 1;
            }
        }
    }
    // (formula, level) in the order kept, without repeats.
    let mut kept: Vec<(DraftFormula, u32)> = Vec::new();
    for k in 1..=cfg.lookahead {
        let mut keep = |f: DraftFormula, level: usize| {
            let level = level as u32;
            if !kept.iter().any(|(g, l)| *g == f && *l == level) {
                kept.push((f, level));
            }
        };
        for f in top_k(&level_counts[k], cfg.top_per_level) {
            keep(f, k);
        }
        if k >= 2 {
            for f in top_k(&prev_counts[k], cfg.top_per_level) {
                keep(f, k - 1);
            }
        }
    }
    let mut nodes: Vec<DraftNode> = Vec::with_capacity(kept.len());
    if cfg.merge_levels {
        for (formula, level) in kept {
            if let Some(n) = nodes.iter_mut().find(|n| n.formula == formula) {
                n.level = n.level.min(level);
            } else {
                let count = level_counts.iter().filter_map(|m| m.get(&formula)).sum();
                nodes.push(DraftNode {
                    formula,
                    level,
                    count,
                });
            }
        }
    } else {
        for (formula, level) in kept {
            let count = level_counts[level as usize]
                .get(&formula)
                .copied()
                .unwrap_or(0);
            nodes.push(DraftNode {
                formula,
                level,
                count,
            });
        }
    }
    nodes.sort_by(|a, b| {
        a.level
            .cmp(&b.level)
            .then(a.formula.len().cmp(&b.formula.len()))
            .then(a.formula.cmp(&b.formula))
    });
    DraftGraph::with_subset_edges(nodes)
}

/// A selected subgraph (Eq. 27).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// Selected node indices, increasing.
    pub nodes: Vec<usize>,
    /// `Σ count(q)` over the selection.
    pub score: u64,
    /// Search nodes visited (a cost measure).
    pub explored: u64,
}

/// Whether `set` (node indices) is connected in the sense of Eqs. 24–25:
/// every node is at a root level or has a parent in the set.
pub fn is_connected(graph: &DraftGraph, set: &[usize], root_levels: u32) -> bool {
    let mut inside = vec![false; graph.len()];
    for &v in set {
        match inside.get_mut(v) {
            Some(x) => *x = true,
            None => return false,
        }
    }
    set.iter().all(|&v| {
        graph.node(v).is_some_and(|n| n.level <= root_levels) || graph.parents(v).any(|p| inside[p])
    })
}

/// Nodes reachable from the root levels (the nodes any connected set can
/// contain).
fn reachable(graph: &DraftGraph, root_levels: u32) -> Vec<bool> {
    let n = graph.len();
    let mut r = vec![false; n];
    let mut stack: Vec<usize> = (0..n)
        .filter(|&v| graph.node(v).is_some_and(|x| x.level <= root_levels))
        .collect();
    for &v in &stack {
        r[v] = true;
    }
    while let Some(v) = stack.pop() {
        for c in graph.children(v) {
            if !r[c] {
                r[c] = true;
                stack.push(c);
            }
        }
    }
    r
}

fn count_of(graph: &DraftGraph, v: usize) -> u64 {
    graph.node(v).map_or(0, |n| n.count)
}

/// Algorithm 2, part 3, exactly: among the connected sets (Eqs. 24–26) of
/// `min(D, #reachable)` nodes, one of largest `Σ count` (Eq. 27).
///
/// Branch and bound over the nodes in a topological order (parents are
/// strict subsets, so by formula size): each node is included or excluded
/// for good; a node can be included only if it is at a root level or a
/// parent was already included, so every connected set is enumerated
/// exactly once. A branch is cut when its sum plus the largest remaining
/// counts cannot beat the best set found (seeded greedily). Worst case
/// exponential like any exact method, in practice milliseconds for the
/// paper's sizes (`D = 10`, ~30 candidates).
pub fn select_subgraph(graph: &DraftGraph, budget: usize, root_levels: u32) -> Selection {
    let reach = reachable(graph, root_levels);
    let mut order: Vec<usize> = (0..graph.len()).filter(|&v| reach[v]).collect();
    order.sort_by_key(|&v| {
        let n = graph.node(v);
        (
            n.map_or(0, |n| n.formula.len()),
            n.map_or(0, |n| n.level),
            v,
        )
    });
    let r = budget.min(order.len());
    let n = order.len();
    let w: Vec<u64> = order.iter().map(|&v| count_of(graph, v)).collect();
    let mut pos = vec![usize::MAX; graph.len()];
    for (k, &v) in order.iter().enumerate() {
        pos[v] = k;
    }
    let root: Vec<bool> = order
        .iter()
        .map(|&v| graph.node(v).is_some_and(|x| x.level <= root_levels))
        .collect();
    let parents: Vec<Vec<usize>> = order
        .iter()
        .map(|&v| {
            graph
                .parents(v)
                .filter(|&p| reach[p])
                .map(|p| pos[p])
                .collect()
        })
        .collect();
    // suffix[k][m] = sum of the m largest weights among positions k..n.
    let suffix: Vec<Vec<u64>> = (0..=n)
        .map(|k| {
            let mut s: Vec<u64> = w[k..].to_vec();
            s.sort_unstable_by(|a, b| b.cmp(a));
            let mut acc = vec![0u64; s.len() + 1];
            for (m, x) in s.iter().enumerate() {
                acc[m + 1] = acc[m] + x;
            }
            acc
        })
        .collect();

    // Greedy seed: repeatedly add the heaviest includable node.
    let mut chosen = vec![false; n];
    let mut greedy_sum = 0;
    for _ in 0..r {
        let best = (0..n)
            .filter(|&k| !chosen[k] && (root[k] || parents[k].iter().any(|&p| chosen[p])))
            .max_by(|&a, &b| w[a].cmp(&w[b]).then(b.cmp(&a)));
        match best {
            Some(k) => {
                chosen[k] = true;
                greedy_sum += w[k];
            }
            None => break,
        }
    }
    let mut best = Best {
        sum: greedy_sum,
        set: chosen.clone(),
    };

    struct Ctx<'a> {
        n: usize,
        r: usize,
        w: &'a [u64],
        root: &'a [bool],
        parents: &'a [Vec<usize>],
        suffix: &'a [Vec<u64>],
        explored: u64,
    }
    struct Best {
        sum: u64,
        set: Vec<bool>,
    }
    fn dfs(c: &mut Ctx, k: usize, chosen: &mut Vec<bool>, count: usize, sum: u64, best: &mut Best) {
        c.explored += 1;
        if count == c.r {
            if sum > best.sum {
                best.sum = sum;
                best.set = chosen.clone();
            }
            return;
        }
        let need = c.r - count;
        if c.n - k < need || sum + c.suffix[k][need] <= best.sum {
            return;
        }
        if c.root[k] || c.parents[k].iter().any(|&p| chosen[p]) {
            chosen[k] = true;
            dfs(c, k + 1, chosen, count + 1, sum + c.w[k], best);
            chosen[k] = false;
        }
        dfs(c, k + 1, chosen, count, sum, best);
    }
    let mut ctx = Ctx {
        n,
        r,
        w: &w,
        root: &root,
        parents: &parents,
        suffix: &suffix,
        explored: 0,
    };
    let mut scratch = vec![false; n];
    dfs(&mut ctx, 0, &mut scratch, 0, 0, &mut best);
    let mut nodes: Vec<usize> = (0..n).filter(|&k| best.set[k]).map(|k| order[k]).collect();
    nodes.sort_unstable();
    Selection {
        nodes,
        score: best.sum,
        explored: ctx.explored,
    }
}

/// The paper's exhaustive search: every set of `min(D, #reachable)` nodes,
/// checked for connectivity. `O(C(n, D)·D)`; a test oracle for
/// [`select_subgraph`].
pub fn select_subgraph_brute_force(
    graph: &DraftGraph,
    budget: usize,
    root_levels: u32,
) -> Selection {
    let reach = reachable(graph, root_levels);
    let r = budget.min(reach.iter().filter(|&&x| x).count());
    let n = graph.len();
    let mut best: Option<(u64, Vec<usize>)> = None;
    let mut explored = 0u64;
    let mut comb: Vec<usize> = (0..r).collect();
    loop {
        explored += 1;
        if is_connected(graph, &comb, root_levels) {
            let s: u64 = comb.iter().map(|&v| count_of(graph, v)).sum();
            if best.as_ref().is_none_or(|b| s > b.0) {
                best = Some((s, comb.clone()));
            }
        }
        // Next combination in lexicographic order.
        let mut i = r;
        loop {
            if i == 0 {
                let (score, nodes) = best.unwrap_or_default();
                return Selection {
                    nodes,
                    score,
                    explored,
                };
            }
            i -= 1;
            if comb[i] < n - r + i {
                comb[i] += 1;
                for k in i + 1..r {
                    comb[k] = comb[k - 1] + 1;
                }
                break;
            }
        }
    }
}

/// The outcome of calibration.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    /// The calibrated draft graph of `D` nodes (the shareable file).
    pub graph: DraftGraph,
    /// The all-possibilities graph it was selected from.
    pub candidates: DraftGraph,
    /// The selection (indices into `candidates`).
    pub selection: Selection,
    /// Wall time to build the all-possibilities graph (only with
    /// [`CalibrationConfig::timing`]; zero otherwise).
    pub build_time: Duration,
    /// Wall time of the subgraph search, Eqs. 24–27 (only with
    /// [`CalibrationConfig::timing`]; zero otherwise).
    pub search_time: Duration,
}

/// Algorithm 2, parts 2 and 3, from recorded timesteps.
pub fn calibrate(
    records: &[TimestepRecord],
    cfg: &CalibrationConfig,
) -> Result<Calibration, SpiffyError> {
    if cfg.lookahead == 0 || cfg.top_per_level == 0 {
        return Err(SpiffyError::Config {
            field: "calibration",
            reason: "lookahead and top_per_level must be at least 1".into(),
        });
    }
    // The opt-in wall clock of `CalibrationConfig::timing`.
    let start = || cfg.timing.then(Instant::now);
    let elapsed = |t: Option<Instant>| t.map_or(Duration::ZERO, |t| t.elapsed());
    let t0 = start();
    let candidates = build_candidate_graph(records, cfg)?;
    let build_time = elapsed(t0);
    let t1 = start();
    let selection = select_subgraph(&candidates, cfg.budget, cfg.root_levels);
    let search_time = elapsed(t1);
    let graph = candidates.induced(&selection.nodes)?;
    Ok(Calibration {
        graph,
        candidates,
        selection,
        build_time,
        search_time,
    })
}
