//! Tier 1c (paper §5.3): the balanced-gated learned value estimator, a
//! study of the future-validity paper kept beside its experiments (it is
//! not part of `zapspec-phi`: a feasibility prototype with its own
//! trainer, used by no library).
//!
//! For each finite-trie edge `(x<t, y)` a two-layer MLP predicts
//! `log Φ_t(y)` from finite-trie features ([`FEATURE_NAMES`]): prefix
//! depth, valid-branch counts, child-subtree counts, remaining-length
//! statistics, the target token probability, the valid-mass fraction and
//! the OneStep value. Training labels are exact Φ values computed on *other*
//! schemas ([`edge_examples`] uses the exact trie DP); evaluation is
//! leave-one-schema-out, so a held-out schema's labels are never fitted.
//!
//! The structural gate: if every valid (non-EOS) child at a prefix has
//! identical trie statistics (subtree count, remaining-length summary,
//! branch count, terminal flag), the estimator falls back to OneStep-Cheap;
//! otherwise it uses the learned value. The gate looks only at grammar
//! topology, never at logits or labels.
//!
//! The network is tiny (features → `hidden` tanh units → 1), trained
//! full-batch with a hand-rolled Adam on the mean squared error of
//! standardised features; initialisation and everything else is seeded.

use std::sync::Arc;

use ndarray::{Array1, Array2, Axis};
use rand::Rng;
use zapspec_core::prob::{self, seeded_rng};
use zapspec_core::{Constraint, LanguageModel, TokenId};
use zapspec_phi::estimator::{
    check_query, check_vocab, clamp_log, copy_on_mask, PhiCost, PhiEstimator, PhiQuery, PhiResult,
};
use zapspec_phi::exact::trie::TrieTable;
use zapspec_phi::lang::{TokenTrie, TrieConstraint};
use zapspec_phi::PhiError;

/// Number of features per edge.
pub const NUM_FEATURES: usize = 13;

/// Names of the features, in order.
pub const FEATURE_NAMES: [&str; NUM_FEATURES] = [
    "prefix_depth",
    "node_valid_branches",
    "child_valid_branches",
    "log1p_node_subtree",
    "log1p_child_subtree",
    "log_child_subtree_fraction",
    "child_min_remaining",
    "child_max_remaining",
    "child_mean_remaining",
    "child_terminal",
    "log_p_token",
    "log_valid_mass_fraction",
    "log_onestep",
];

/// Topological statistics of every trie node.
#[derive(Debug, Clone)]
pub struct TrieStats {
    /// Members in the node's subtree (strings extending its prefix).
    pub subtree: Vec<f64>,
    /// Min / max / mean number of tokens from the node to a member end.
    pub min_rem: Vec<f64>,
    /// Max number of tokens from the node to a member end.
    pub max_rem: Vec<f64>,
    /// Mean number of tokens from the node to a member end.
    pub mean_rem: Vec<f64>,
    /// Valid next tokens (children, plus EOS at terminal nodes).
    pub branches: Vec<usize>,
    /// Depth of the node (length of its prefix).
    pub depth: Vec<usize>,
}

impl TrieStats {
    /// The statistics of every node of `trie` (one pass over the nodes).
    pub fn new(trie: &TokenTrie) -> Self {
        let n = trie.num_nodes();
        let mut s = TrieStats {
            subtree: vec![0.0; n],
            min_rem: vec![0.0; n],
            max_rem: vec![0.0; n],
            mean_rem: vec![0.0; n],
            branches: vec![0; n],
            depth: vec![0; n],
        };
        // Pre-order, then process in reverse (children before parents).
        let mut order = Vec::with_capacity(n);
        let mut stack = vec![trie.root()];
        while let Some(a) = stack.pop() {
            order.push(a);
            for (_, c) in trie.children(a) {
                s.depth[c] = s.depth[a] + 1;
                stack.push(c);
            }
        }
        let mut sum_rem = vec![0.0f64; n];
        for &a in order.iter().rev() {
            let term = trie.is_terminal(a);
            let (mut cnt, mut mn, mut mx, mut sm) = if term {
                (1.0, 0.0, 0.0, 0.0)
            } else {
                (0.0, f64::INFINITY, 0.0f64, 0.0)
            };
            let mut br = usize::from(term);
            for (_, c) in trie.children(a) {
                br += 1;
                cnt += s.subtree[c];
                mn = mn.min(s.min_rem[c] + 1.0);
                mx = mx.max(s.max_rem[c] + 1.0);
                sm += sum_rem[c] + s.subtree[c];
            }
            s.subtree[a] = cnt;
            s.min_rem[a] = if mn.is_finite() { mn } else { 0.0 };
            s.max_rem[a] = mx;
            sum_rem[a] = sm;
            s.mean_rem[a] = if cnt > 0.0 { sm / cnt } else { 0.0 };
            s.branches[a] = br;
        }
        s
    }

    /// The gate's signature of a node: (subtree, min, max, mean remaining,
    /// branches, terminal).
    fn signature(&self, trie: &TokenTrie, a: usize) -> (u64, u64, u64, u64, usize, bool) {
        (
            self.subtree[a].to_bits(),
            self.min_rem[a].to_bits(),
            self.max_rem[a].to_bits(),
            self.mean_rem[a].to_bits(),
            self.branches[a],
            trie.is_terminal(a),
        )
    }

    /// The balanced gate (§5.3): all valid non-EOS children of `node` have
    /// identical statistics.
    pub fn balanced(&self, trie: &TokenTrie, node: usize) -> bool {
        let mut sigs = trie.children(node).map(|(_, c)| self.signature(trie, c));
        match sigs.next() {
            None => true,
            Some(first) => sigs.all(|s| s == first),
        }
    }
}

/// Features of edge `(node, y → child)` given the node's next-token
/// log-probabilities `lp` (full vocabulary).
pub fn edge_features(
    trie: &TokenTrie,
    stats: &TrieStats,
    eos: TokenId,
    node: usize,
    child: usize,
    y: TokenId,
    lp: &[f64],
) -> [f64; NUM_FEATURES] {
    let mass = |a: usize| -> f64 {
        let mut xs: Vec<f64> = trie
            .children(a)
            .filter_map(|(u, _)| lp.get(u as usize).copied())
            .collect();
        if trie.is_terminal(a) {
            xs.push(lp.get(eos as usize).copied().unwrap_or(f64::NEG_INFINITY));
        }
        clamp_log(prob::logsumexp(&xs))
    };
    let floor = |x: f64| if x.is_finite() { x } else { -700.0 };
    let lz = mass(node);
    let lpy = lp.get(y as usize).copied().unwrap_or(f64::NEG_INFINITY);
    [
        stats.depth[node] as f64,
        stats.branches[node] as f64,
        stats.branches[child] as f64,
        stats.subtree[node].ln_1p(),
        stats.subtree[child].ln_1p(),
        (stats.subtree[child] / stats.subtree[node].max(1.0)).ln(),
        stats.min_rem[child],
        stats.max_rem[child],
        stats.mean_rem[child],
        f64::from(u8::from(trie.is_terminal(child))),
        floor(lpy),
        floor(lpy - lz),
        floor(mass(child)),
    ]
}

/// One training example: an edge's features and its exact `log Φ`.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeExample {
    /// The edge's features.
    pub features: [f64; NUM_FEATURES],
    /// The exact `log Φ` of the edge (the label).
    pub log_phi: f64,
}

/// Every edge of a finite trie with exact labels (the trie DP, one forward
/// per node) and features (one more forward per node for the full
/// next-token law). The model's context is restored.
pub fn edge_examples<M: LanguageModel>(
    trie: Arc<TokenTrie>,
    eos: TokenId,
    model: &mut M,
    prompt: &[TokenId],
) -> Result<Vec<EdgeExample>, PhiError> {
    let table = TrieTable::build(trie.clone(), eos, model, prompt)?;
    let stats = TrieStats::new(&trie);
    let saved = model.context().to_vec();
    let mut out = Vec::new();
    let mut stack: Vec<(usize, Vec<TokenId>)> = vec![(trie.root(), prompt.to_vec())];
    let mut res: Result<(), PhiError> = Ok(());
    while let Some((a, ctx)) = stack.pop() {
        let logits = match model.logits_for(&ctx) {
            Ok(l) => l,
            Err(e) => {
                res = Err(e.into());
                break;
            }
        };
        let lp = prob::log_softmax(&logits);
        for (y, c) in trie.children(a) {
            let f = edge_features(&trie, &stats, eos, a, c, y, &lp);
            let l = table.log_phi[c];
            out.push(EdgeExample {
                features: f,
                log_phi: if l.is_finite() { l } else { -700.0 },
            });
            let mut cc = ctx.clone();
            cc.push(y);
            stack.push((c, cc));
        }
    }
    model.logits_for(&saved)?;
    res?;
    Ok(out)
}

/// Configuration of the learned estimator.
#[derive(Debug, Clone, Copy)]
pub struct LearnedConfig {
    /// Hidden units of the MLP.
    pub hidden: usize,
    /// Training epochs.
    pub epochs: usize,
    /// Adam learning rate.
    pub lr: f64,
    /// L2 penalty on the weights.
    pub weight_decay: f64,
    /// Seed of the weight initialisation and shuffling.
    pub seed: u64,
    /// Apply the balanced structural gate (false: the ungated MLP of Table 10).
    pub gate: bool,
}

impl Default for LearnedConfig {
    fn default() -> Self {
        LearnedConfig {
            hidden: 16,
            epochs: 1500,
            lr: 1e-2,
            weight_decay: 1e-4,
            seed: 0,
            gate: true,
        }
    }
}

/// The two-layer MLP `tanh(W1 x + b1) · w2 + b2` on standardised inputs.
#[derive(Debug, Clone)]
pub struct Mlp {
    mean: Array1<f64>,
    std: Array1<f64>,
    w1: Array2<f64>,
    b1: Array1<f64>,
    w2: Array1<f64>,
    b2: f64,
}

struct Adam {
    m: Vec<f64>,
    v: Vec<f64>,
    t: i32,
}

impl Adam {
    fn step(&mut self, params: &mut [f64], grads: &[f64], lr: f64) {
        let (b1, b2, eps) = (0.9, 0.999, 1e-8);
        self.t += 1;
        let c1 = 1.0 - b1f(b1, self.t);
        let c2 = 1.0 - b1f(b2, self.t);
        for i in 0..params.len() {
            self.m[i] = b1 * self.m[i] + (1.0 - b1) * grads[i];
            self.v[i] = b2 * self.v[i] + (1.0 - b2) * grads[i] * grads[i];
            params[i] -= lr * (self.m[i] / c1) / ((self.v[i] / c2).sqrt() + eps);
        }
    }
}

fn b1f(b: f64, t: i32) -> f64 {
    b.powi(t)
}

impl Mlp {
    /// Fits the MLP to `(x, y)` by full-batch Adam; returns it and the
    /// training MSE per epoch.
    pub fn fit(
        x: &Array2<f64>,
        y: &Array1<f64>,
        cfg: &LearnedConfig,
    ) -> Result<(Self, Vec<f64>), PhiError> {
        let (n, f) = x.dim();
        if n == 0 {
            return Err(PhiError::Config {
                field: "examples",
                reason: "no training examples".into(),
            });
        }
        if cfg.hidden == 0 {
            return Err(PhiError::Config {
                field: "hidden",
                reason: "need at least one hidden unit".into(),
            });
        }
        let mean = x.mean_axis(Axis(0)).unwrap_or_else(|| Array1::zeros(f));
        let std = x
            .std_axis(Axis(0), 0.0)
            .mapv(|s| if s > 1e-12 { s } else { 1.0 });
        let xs = (x - &mean) / &std;
        let h = cfg.hidden;
        let mut rng = seeded_rng(cfg.seed);
        let a1 = (6.0 / (f + h) as f64).sqrt();
        let a2 = (6.0 / (h + 1) as f64).sqrt();
        let w1 = Array2::from_shape_fn((h, f), |_| rng.random_range(-a1..a1));
        let w2 = Array1::from_shape_fn(h, |_| rng.random_range(-a2..a2));
        let ymean = y.mean().unwrap_or(0.0);
        let mut mlp = Mlp {
            mean,
            std,
            w1,
            b1: Array1::zeros(h),
            w2,
            b2: ymean,
        };
        let np = h * f + h + h + 1;
        let mut adam = Adam {
            m: vec![0.0; np],
            v: vec![0.0; np],
            t: 0,
        };
        let mut losses = Vec::with_capacity(cfg.epochs);
        let mut params = vec![0.0; np];
        let mut grads = vec![0.0; np];
        for _ in 0..cfg.epochs {
            let z = xs.dot(&mlp.w1.t()) + &mlp.b1;
            let hid = z.mapv(f64::tanh);
            let out = hid.dot(&mlp.w2) + mlp.b2;
            let err = &out - y;
            losses.push(err.mapv(|e| e * e).mean().unwrap_or(0.0));
            let d_out = err.mapv(|e| 2.0 * e / n as f64);
            let g_w2 = hid.t().dot(&d_out) + cfg.weight_decay * &mlp.w2;
            let g_b2 = d_out.sum();
            let d_hid = d_out
                .insert_axis(Axis(1))
                .dot(&mlp.w2.view().insert_axis(Axis(0)));
            let d_z = d_hid * hid.mapv(|v| 1.0 - v * v);
            let g_w1 = d_z.t().dot(&xs) + cfg.weight_decay * &mlp.w1;
            let g_b1 = d_z.sum_axis(Axis(0));
            // Flatten, step, unflatten.
            let mut k = 0;
            for (p, g) in mlp.w1.iter().zip(g_w1.iter()) {
                params[k] = *p;
                grads[k] = *g;
                k += 1;
            }
            for (p, g) in mlp.b1.iter().zip(g_b1.iter()) {
                params[k] = *p;
                grads[k] = *g;
                k += 1;
            }
            for (p, g) in mlp.w2.iter().zip(g_w2.iter()) {
                params[k] = *p;
                grads[k] = *g;
                k += 1;
            }
            params[k] = mlp.b2;
            grads[k] = g_b2;
            adam.step(&mut params, &grads, cfg.lr);
            let mut k = 0;
            for p in mlp.w1.iter_mut() {
                *p = params[k];
                k += 1;
            }
            for p in mlp.b1.iter_mut() {
                *p = params[k];
                k += 1;
            }
            for p in mlp.w2.iter_mut() {
                *p = params[k];
                k += 1;
            }
            mlp.b2 = params[k];
        }
        Ok((mlp, losses))
    }

    /// The network's output for one feature vector.
    pub fn predict(&self, x: &[f64]) -> f64 {
        let mut out = self.b2;
        for j in 0..self.w1.nrows() {
            let mut z = self.b1[j];
            for (i, &xi) in x.iter().enumerate().take(self.w1.ncols()) {
                z += self.w1[[j, i]] * (xi - self.mean[i]) / self.std[i];
            }
            out += self.w2[j] * z.tanh();
        }
        out
    }
}

/// Tier 1c: the (optionally gated) learned estimator on finite tries.
#[derive(Debug, Clone)]
pub struct LearnedPhi {
    mlp: Mlp,
    config: LearnedConfig,
    stats: Option<(Arc<TokenTrie>, TrieStats)>,
    /// Training MSE per epoch.
    pub losses: Vec<f64>,
    /// Positions routed to OneStep by the gate.
    pub gated: u64,
    /// Positions scored by the MLP.
    pub learned: u64,
}

impl LearnedPhi {
    /// Trains on examples from the training schemas (never the held-out one).
    pub fn train(examples: &[EdgeExample], config: LearnedConfig) -> Result<Self, PhiError> {
        let n = examples.len();
        let x = Array2::from_shape_fn((n, NUM_FEATURES), |(i, j)| examples[i].features[j]);
        let y = Array1::from_iter(examples.iter().map(|e| e.log_phi));
        let (mlp, losses) = Mlp::fit(&x, &y, &config)?;
        Ok(LearnedPhi {
            mlp,
            config,
            stats: None,
            losses,
            gated: 0,
            learned: 0,
        })
    }

    /// `log Φ̂` the MLP predicts for one edge (clamped to `≤ 0`).
    pub fn predict(&self, features: &[f64; NUM_FEATURES]) -> f64 {
        clamp_log(self.mlp.predict(features))
    }

    /// The configuration it was trained with.
    pub fn config(&self) -> &LearnedConfig {
        &self.config
    }
}

/// Uses the query's logits only (any `M`); reports one constraint
/// operation per trie edge scored.
impl<M: LanguageModel> PhiEstimator<TrieConstraint, M> for LearnedPhi {
    fn name(&self) -> String {
        if self.config.gate {
            "Learned-Gated".into()
        } else {
            "Learned-MLP".into()
        }
    }
    fn log_phi_into(
        &mut self,
        q: &PhiQuery<'_, TrieConstraint>,
        model: &mut M,
        out: &mut [f64],
    ) -> PhiResult {
        let (constraint, logits) = (q.constraint, q.logits);
        let v = check_vocab(constraint, model, logits)?;
        check_query(q, out)?;
        let mut cost = PhiCost::default();
        let mut full = vec![f64::NEG_INFINITY; v];
        if constraint.is_finished() {
            copy_on_mask(&full, q.mask, out);
            return Ok(cost);
        }
        let trie = constraint.trie().clone();
        if self
            .stats
            .as_ref()
            .is_none_or(|(t, _)| !Arc::ptr_eq(t, &trie))
        {
            self.stats = Some((trie.clone(), TrieStats::new(&trie)));
        }
        let Some((_, stats)) = self.stats.as_ref() else {
            return Err(PhiError::Unsupported("no trie statistics".into()));
        };
        let node = constraint.node();
        let eos = constraint.eos();
        let lp = prob::log_softmax(logits);
        let gate = self.config.gate && stats.balanced(&trie, node);
        if gate {
            self.gated += 1;
        } else {
            self.learned += 1;
        }
        for (y, c) in trie.children(node) {
            if y as usize >= v {
                continue;
            }
            let f = edge_features(&trie, stats, eos, node, c, y, &lp);
            full[y as usize] = if gate {
                // OneStep-Cheap (Def. 9): the last feature.
                if f[NUM_FEATURES - 1] <= -700.0 {
                    f64::NEG_INFINITY
                } else {
                    f[NUM_FEATURES - 1]
                }
            } else {
                clamp_log(self.mlp.predict(&f))
            };
            cost.constraint_ops += 1;
        }
        if trie.is_terminal(node) {
            full[eos as usize] = 0.0;
        }
        copy_on_mask(&full, q.mask, out);
        Ok(cost)
    }
}

/// Leave-one-schema-out training (§5.3, Table 10): fits on the examples of
/// every schema except `held_out`, so the held-out schema's exact labels
/// are never used.
pub fn leave_one_schema_out(
    per_schema: &[Vec<EdgeExample>],
    held_out: usize,
    config: LearnedConfig,
) -> Result<LearnedPhi, PhiError> {
    if held_out >= per_schema.len() {
        return Err(PhiError::Config {
            field: "held_out",
            reason: format!("schema {held_out} of {}", per_schema.len()),
        });
    }
    let train: Vec<EdgeExample> = per_schema
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != held_out)
        .flat_map(|(_, e)| e.iter().cloned())
        .collect();
    LearnedPhi::train(&train, config)
}
