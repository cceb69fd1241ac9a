//! Directed draft graphs (§4.4.1): nodes are draft formulas, an edge
//! `A → B` says `B` is a possible next denoising state after `A` (the
//! parent/child relation of Eqs. 4–6). Unlike a draft tree a node may have
//! several parents, so a draft can be reached (accepted) along several
//! paths.
//!
//! The graph is a [`petgraph`] `DiGraph`; it serialises to JSON as
//! `{"version": 1, "nodes": [{"formula": [[i, j], …], "level": k,
//! "count": c}, …], "edges": [[parent, child], …]}` so a calibrated graph is
//! a file users share ([`DraftGraph::to_json`], [`DraftGraph::from_json`]).
//! Every edge must go from a formula to a strict superset of it (Eq. 6),
//! which also makes the graph acyclic.

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::Direction;
use serde::{Deserialize, Serialize};

use crate::error::SpiffyError;
use crate::formula::DraftFormula;

/// One draft node `q_kv`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftNode {
    /// The formula `{(i, j)}` filled into the draft block.
    pub formula: DraftFormula,
    /// Look-ahead level `k` (the draft speculates the state `k` steps after
    /// the one being verified).
    pub level: u32,
    /// Calibration frequency (`count(q)` of Eq. 27); 0 for hand-made graphs.
    #[serde(default)]
    pub count: u64,
}

/// Parent/child relation of Eqs. 4–6 for a static unmasking rate `s`:
/// `B` is one level below `A`, has exactly `s` more tokens, and contains
/// all of `A`'s. With `s = None` (dynamic unmasking, where `S_t` varies)
/// only Eq. 6 is checked: `A ⊂ B` strictly.
pub fn is_parent(a: &DraftNode, b: &DraftNode, s: Option<usize>) -> bool {
    match s {
        Some(s) => {
            b.level == a.level + 1
                && a.formula.len() + s == b.formula.len()
                && a.formula.is_subset(&b.formula)
        }
        None => a.formula.is_strict_subset(&b.formula),
    }
}

/// The serialised form of a [`DraftGraph`].
#[derive(Debug, Clone, Serialize, Deserialize)]
struct GraphFile {
    version: u32,
    nodes: Vec<DraftNode>,
    edges: Vec<(usize, usize)>,
}

/// A directed draft graph of draft formulas.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(try_from = "GraphFile", into = "GraphFile")]
pub struct DraftGraph {
    g: DiGraph<DraftNode, ()>,
}

impl TryFrom<GraphFile> for DraftGraph {
    type Error = SpiffyError;
    fn try_from(f: GraphFile) -> Result<Self, SpiffyError> {
        if f.version != 1 {
            return Err(SpiffyError::Graph(format!(
                "unknown graph file version {}",
                f.version
            )));
        }
        DraftGraph::new(f.nodes, f.edges)
    }
}

impl From<DraftGraph> for GraphFile {
    fn from(g: DraftGraph) -> Self {
        GraphFile {
            version: 1,
            edges: g.edges().collect(),
            nodes: g.g.node_weights().cloned().collect(),
        }
    }
}

impl DraftGraph {
    /// A graph from nodes and `(parent, child)` index pairs. Fails on an
    /// index out of range, a formula twice at one level, an empty formula,
    /// or an edge whose child is not a strict superset of its parent. One
    /// formula may be a node at several levels (Algorithm 2's per-level
    /// nodes `q_kv`; see [`crate::calibrate::CalibrationConfig::merge_levels`]).
    pub fn new(nodes: Vec<DraftNode>, edges: Vec<(usize, usize)>) -> Result<Self, SpiffyError> {
        let mut seen = std::collections::HashSet::new();
        for n in &nodes {
            if n.formula.is_empty() {
                return Err(SpiffyError::Graph("a node with an empty formula".into()));
            }
            if !seen.insert((&n.formula, n.level)) {
                return Err(SpiffyError::Graph(format!(
                    "formula {} appears twice at level {}",
                    n.formula, n.level
                )));
            }
        }
        let mut g = DiGraph::with_capacity(nodes.len(), edges.len());
        for n in &nodes {
            g.add_node(n.clone());
        }
        let mut edge_set = std::collections::BTreeSet::new();
        for (a, b) in edges {
            let (Some(na), Some(nb)) = (nodes.get(a), nodes.get(b)) else {
                return Err(SpiffyError::Graph(format!(
                    "edge {a} -> {b} names a node past {}",
                    nodes.len()
                )));
            };
            if !na.formula.is_strict_subset(&nb.formula) {
                return Err(SpiffyError::Graph(format!(
                    "edge {a} -> {b}: {} is not a strict subset of {} (Eq. 6)",
                    na.formula, nb.formula
                )));
            }
            if edge_set.insert((a, b)) {
                g.add_edge(NodeIndex::new(a), NodeIndex::new(b), ());
            }
        }
        Ok(DraftGraph { g })
    }

    /// Nodes with an edge for every strict-subset pair `p ⊂ q` (Algorithm
    /// 2's "additional edges"). `O(n²·|q|)`.
    pub fn with_subset_edges(nodes: Vec<DraftNode>) -> Result<Self, SpiffyError> {
        let mut edges = Vec::new();
        for (a, na) in nodes.iter().enumerate() {
            for (b, nb) in nodes.iter().enumerate() {
                if na.formula.is_strict_subset(&nb.formula) {
                    edges.push((a, b));
                }
            }
        }
        DraftGraph::new(nodes, edges)
    }

    /// The uncalibrated chain for greedy static unmasking with one token per
    /// step: level `k` unmasks position ranks `1..=k+1` with their top
    /// tokens, `{(1,1),…,(k+1,1)}`, for `k = 1..=depth`.
    pub fn top1_chain(depth: u32) -> Self {
        let nodes: Vec<DraftNode> = (1..=depth)
            .map(|k| DraftNode {
                formula: DraftFormula::new((1..=k + 1).map(|i| (i, 1))).unwrap_or_default(),
                level: k,
                count: 0,
            })
            .collect();
        let edges = (1..nodes.len()).map(|b| (b - 1, b)).collect();
        // Consecutive prefixes are strict subsets: this cannot fail.
        DraftGraph::new(nodes, edges).unwrap_or_default()
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.g.node_count()
    }

    /// Whether the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.g.node_count() == 0
    }

    /// Node `i`.
    pub fn node(&self, i: usize) -> Option<&DraftNode> {
        self.g.node_weight(NodeIndex::new(i))
    }

    /// All nodes, by index.
    pub fn nodes(&self) -> impl Iterator<Item = &DraftNode> + '_ {
        self.g.node_weights()
    }

    /// All `(parent, child)` edges.
    pub fn edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.g
            .raw_edges()
            .iter()
            .map(|e| (e.source().index(), e.target().index()))
    }

    /// Children of node `i` (`children(A)`, Eqs. 4–6).
    pub fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.g
            .neighbors_directed(NodeIndex::new(i), Direction::Outgoing)
            .map(|n| n.index())
    }

    /// Parents of node `i`.
    pub fn parents(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.g
            .neighbors_directed(NodeIndex::new(i), Direction::Incoming)
            .map(|n| n.index())
    }

    /// Whether `a → b` is an edge.
    pub fn has_edge(&self, a: usize, b: usize) -> bool {
        a < self.len()
            && b < self.len()
            && self.g.contains_edge(NodeIndex::new(a), NodeIndex::new(b))
    }

    /// The underlying petgraph graph.
    pub fn petgraph(&self) -> &DiGraph<DraftNode, ()> {
        &self.g
    }

    /// The subgraph induced by `keep` (node indices), renumbered in the
    /// order given.
    pub fn induced(&self, keep: &[usize]) -> Result<Self, SpiffyError> {
        let mut index = vec![usize::MAX; self.len()];
        let mut nodes = Vec::with_capacity(keep.len());
        for (new, &old) in keep.iter().enumerate() {
            let n = self
                .node(old)
                .ok_or_else(|| SpiffyError::Graph(format!("no node {old}")))?;
            index[old] = new;
            nodes.push(n.clone());
        }
        let edges = self
            .edges()
            .filter(|&(a, b)| index[a] != usize::MAX && index[b] != usize::MAX)
            .map(|(a, b)| (index[a], index[b]))
            .collect();
        DraftGraph::new(nodes, edges)
    }

    /// Pretty JSON (the shareable graph file).
    pub fn to_json(&self) -> Result<String, SpiffyError> {
        Ok(serde_json::to_string_pretty(self)?)
    }

    /// Parses and validates a graph file.
    pub fn from_json(s: &str) -> Result<Self, SpiffyError> {
        Ok(serde_json::from_str(s)?)
    }
}
