//! Terminal-law metrics (paper §6, App. H.1): the three laws on an
//! enumerable language and the exact TV / KL between them. The statistics
//! that compare a sampler's output with these laws (TV of counts, bootstrap
//! intervals, χ² and G tests, structural statistics) are study code and
//! live in `zapspec_testkit::stats`.
//!
//! * μ^proj (Def. 1): the locally masked sampling law, the product of the
//!   per-step kernels `p_t(y)1[y∈A_t]/Z_p`.
//! * μ* (Def. 2): the model conditioned on the language,
//!   `p(x·EOS)1[x∈L]/Z_C`.
//! * μ^Φ̂: the product of the Doob kernels `p_t(y)Φ̂_t(y)/Σ p_t Φ̂_t`
//!   (§4) for an estimator Φ̂; with exact Φ it equals μ* (Prop. 6).
//!
//! [`TerminalLaws::enumerate`] enumerates every valid prefix once (a
//! [`PrefixTree`]), so all laws are exact — no sampling.

use std::collections::HashMap;

use zapspec_core::prob;
use zapspec_core::{Constraint, LanguageModel, TokenId};

use crate::certificates::StepDiagnostics;
use crate::error::PhiError;
use crate::estimator::{doob_kernel, Metered, PhiCost, PhiEstimator};
use crate::exact::tree::{Node, PrefixTree};
use crate::exact::ExactConfig;

/// μ^Φ̂ of one estimator and the certificates it earned along the way.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EstimatorLaw {
    /// The estimator's name (for tables).
    pub name: String,
    /// `log μ^Φ̂(x)` for every member (same order as [`TerminalLaws::members`]).
    pub log_mu: Vec<f64>,
    /// `max_t δ_t` over every valid prefix (App. H.1's δ).
    pub max_delta: f64,
    /// Mean of `δ_t` over valid prefixes, weighted by μ^Φ̂'s prefix mass.
    pub mean_delta: f64,
    /// Theorem 7's sequence-level bound `Σ_t E_{x<t∼μ̂}[δ_t/(Φ̄_t−δ_t)]`
    /// (App. B); `inf` when some reachable position is vacuous.
    pub seq_bound: f64,
    /// `max_t ε_t` (relative error, App. C).
    pub max_eps_rel: f64,
    /// Cost spent by the estimator during the enumeration.
    pub cost: PhiCost,
}

/// The laws μ^proj, μ* and μ^Φ̂ on every member of an enumerable language.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TerminalLaws {
    /// Members in DFS (token) order, EOS not included.
    pub members: Vec<Vec<TokenId>>,
    /// `log p(x · EOS)` under the model.
    pub log_p: Vec<f64>,
    /// `log Z_C = log Σ_{x∈L} p(x·EOS) = log Φ(root)`.
    pub log_z: f64,
    /// `log μ*(x)` per member (Def. 2).
    pub log_mu_star: Vec<f64>,
    /// `log μ^proj(x)` per member (Def. 1).
    pub log_mu_proj: Vec<f64>,
    /// `Φ̄` at the empty prefix.
    pub root_phi_bar: f64,
    /// μ^Φ̂ and certificates of each estimator, in the order given.
    pub estimators: Vec<EstimatorLaw>,
}

impl TerminalLaws {
    /// Enumerates the language below the constraint's state (the model's
    /// context holding the same prefix) once as a [`PrefixTree`] (exact Φ,
    /// μ*, μ^proj), then scores each estimator at every valid prefix in
    /// depth-first token order, parents first, with the model positioned
    /// there (each is called once per prefix, so a randomised estimator
    /// contributes one draw, as in the paper's Table 6), and accumulates
    /// μ^Φ̂ and the δ/ε/Theorem-7 diagnostics in one forward sweep. The
    /// model is left at its starting context. Fails with
    /// [`PhiError::TooLarge`] past `max_members` members or the default
    /// [`ExactConfig`] limits, and with [`PhiError::EmptySupport`] when the
    /// language has zero mass (`Z_C = 0`: μ* is undefined). Cost: two model forwards per prefix plus the
    /// estimators, `O(prefixes · |V| · (1 + estimators))` memory.
    pub fn enumerate<C: Constraint, M: LanguageModel>(
        constraint: &C,
        model: &mut M,
        estimators: &mut [&mut dyn PhiEstimator<C, M>],
        max_members: usize,
    ) -> Result<Self, PhiError> {
        let tree = PrefixTree::enumerate_below(constraint, model, ExactConfig::default())?;
        let order = member_order(&tree);
        if let Some(&id) = order.get(max_members) {
            return Err(PhiError::TooLarge {
                limit: max_members,
                depth: tree.nodes()[id].depth,
            });
        }
        let eos = tree.eos() as usize;
        let log_z = tree.log_z();
        // each estimator's work during the enumeration
        let mut metered: Vec<Metered<&mut dyn PhiEstimator<C, M>>> = estimators
            .iter_mut()
            .map(|e| Metered::new(&mut **e))
            .collect();
        let base = model.context().to_vec();
        let r = score(&tree, model, &base, &mut metered);
        model.truncate(base.len());
        let sweep = r?;
        let ends = |end: &[f64]| -> Vec<f64> { order.iter().map(|&id| end[id]).collect() };
        let log_p: Vec<f64> = order
            .iter()
            .map(|&id| {
                let n = &tree.nodes()[id];
                n.log_prefix + n.logp[eos]
            })
            .collect();
        let estimators = metered
            .iter()
            .zip(sweep.estimators)
            .map(|(e, a)| EstimatorLaw {
                name: e.name(),
                log_mu: ends(&a.end),
                max_delta: a.max_delta,
                mean_delta: if a.weight_sum > 0.0 {
                    a.delta_sum / a.weight_sum
                } else {
                    0.0
                },
                seq_bound: a.seq_bound,
                max_eps_rel: a.max_eps,
                cost: e.cost(),
            })
            .collect();
        Ok(TerminalLaws {
            members: order.iter().map(|&id| tree.tokens(id)).collect(),
            log_mu_star: log_p.iter().map(|&l| l - log_z).collect(),
            log_p,
            log_z,
            log_mu_proj: ends(&sweep.proj_end),
            root_phi_bar: sweep.root_phi_bar,
            estimators,
        })
    }

    /// `TV(μ^proj, μ*)`, exact.
    pub fn tv_proj_star(&self) -> f64 {
        prob::tv_log(&self.log_mu_proj, &self.log_mu_star)
    }

    /// `TV(μ^Φ̂_i, μ*)`, exact.
    pub fn tv_est_star(&self, i: usize) -> f64 {
        prob::tv_log(&self.estimators[i].log_mu, &self.log_mu_star)
    }

    /// `KL(μ* ‖ μ^proj)` over the whole sequence.
    pub fn kl_star_proj(&self) -> f64 {
        prob::kl_log(&self.log_mu_star, &self.log_mu_proj)
    }

    /// μ* as a map member → probability (the reference law of an empirical
    /// TV of keyed samples, `zapspec_testkit::stats::empirical_tv`).
    pub fn star_map(&self) -> HashMap<Vec<TokenId>, f64> {
        self.members
            .iter()
            .cloned()
            .zip(self.log_mu_star.iter().map(|l| l.exp()))
            .collect()
    }
}

/// The member nodes of a tree in the order of a walk that, at each prefix,
/// visits the mask in token order and records the prefix itself at its
/// EOS (so a member comes after the subtrees of smaller tokens).
fn member_order<C: Constraint>(tree: &PrefixTree<C>) -> Vec<usize> {
    enum Step {
        Visit(usize),
        Emit(usize),
    }
    let eos = tree.eos();
    let mut out = Vec::with_capacity(tree.num_members());
    let mut stack = vec![Step::Visit(0)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Emit(id) => out.push(id),
            Step::Visit(id) => {
                let n = &tree.nodes()[id];
                let mut kids = n.children.iter().rev().peekable();
                // the mask in reverse token order, so the stack pops it in order
                let mut rev: Vec<Step> = Vec::with_capacity(n.mask.count());
                for y in n.mask.iter().collect::<Vec<_>>().into_iter().rev() {
                    if y == eos {
                        rev.push(Step::Emit(id));
                    } else if let Some(&(_, c)) = kids.next_if(|&&(t, _)| t == y) {
                        rev.push(Step::Visit(c));
                    }
                }
                stack.extend(rev);
            }
        }
    }
    out
}

/// One estimator's running law and diagnostics over the forward sweep.
struct EstimatorSweep {
    /// `log` of μ^Φ̂'s mass of reaching each node (its prefix mass).
    reach: Vec<f64>,
    /// `log μ^Φ̂(x)` at each member node.
    end: Vec<f64>,
    max_delta: f64,
    delta_sum: f64,
    weight_sum: f64,
    seq_bound: f64,
    max_eps: f64,
}

/// What [`score`] accumulates.
struct Sweep {
    /// `log μ^proj(x)` at each member node.
    proj_end: Vec<f64>,
    estimators: Vec<EstimatorSweep>,
    root_phi_bar: f64,
}

/// Scores every estimator at every node of `tree` (in node order: depth
/// first, token order, parents before children), with `model` positioned
/// at `base` followed by the node's prefix and handed the node's state,
/// mask and logits, and carries μ^proj, each μ^Φ̂ and the step diagnostics
/// against exact Φ down the tree.
fn score<C: Constraint, M: LanguageModel, E: PhiEstimator<C, M>>(
    tree: &PrefixTree<C>,
    model: &mut M,
    base: &[TokenId],
    ests: &mut [Metered<E>],
) -> Result<Sweep, PhiError> {
    let nodes = tree.nodes();
    let eos = tree.eos();
    let blank = || vec![f64::NEG_INFINITY; nodes.len()];
    let mut proj_reach = blank();
    let mut proj_end = blank();
    proj_reach[0] = 0.0;
    let mut accs: Vec<EstimatorSweep> = ests
        .iter()
        .map(|_| {
            let mut reach = blank();
            reach[0] = 0.0;
            EstimatorSweep {
                reach,
                end: blank(),
                max_delta: 0.0,
                delta_sum: 0.0,
                weight_sum: 0.0,
                seq_bound: 0.0,
                max_eps: 0.0,
            }
        })
        .collect();
    let mut root_phi_bar = f64::NAN;
    let mut ctx = base.to_vec();
    for (id, n) in nodes.iter().enumerate() {
        let v = n.logits.len();
        let empty = || PhiError::EmptySupport { position: n.depth };
        // A node no law reaches (a −∞ logit on the way) may have zero valid
        // mass: its kernel is irrelevant, so it passes −∞ on instead of
        // failing. A reached node with zero valid mass is a real dead end.
        let dead = || vec![f64::NEG_INFINITY; v];
        let kernel_or_dead = |hat: &[f64], reach: f64| match doob_kernel(&n.logits, &n.mask, hat) {
            Ok(k) => Ok(k),
            Err(_) if reach == f64::NEG_INFINITY => Ok(dead()),
            Err(_) => Err(empty()),
        };
        let proj = kernel_or_dead(&vec![0.0; v], proj_reach[id])?;
        // exact per-candidate Φ: the children's log Φ, 0 at EOS
        let mut phi = vec![f64::NEG_INFINITY; v];
        for (y, l) in tree.exact_candidates(id) {
            phi[y as usize] = l;
        }
        ctx.truncate(base.len());
        ctx.extend(tree.tokens(id));
        model.logits_for(&ctx)?;
        for (e, acc) in ests.iter_mut().zip(accs.iter_mut()) {
            let hat = e.log_phi(tree.state(id), model, &n.logits)?;
            let k = kernel_or_dead(&hat, acc.reach[id])?;
            if let Ok(d) = StepDiagnostics::compute(&n.logits, &n.mask, &phi, &hat) {
                let wgt = acc.reach[id].exp();
                acc.max_delta = acc.max_delta.max(d.delta);
                acc.delta_sum += wgt * d.delta;
                acc.weight_sum += wgt;
                acc.max_eps = acc.max_eps.max(d.eps_rel);
                acc.seq_bound += match d.bound {
                    Some(b) => wgt * b,
                    None if wgt > 0.0 => f64::INFINITY,
                    None => 0.0,
                };
                if id == 0 {
                    root_phi_bar = d.phi_bar;
                }
            }
            carry(n, eos, &k, &mut acc.reach, &mut acc.end, id);
        }
        carry(n, eos, &proj, &mut proj_reach, &mut proj_end, id);
    }
    Ok(Sweep {
        proj_end,
        estimators: accs,
        root_phi_bar,
    })
}

/// One forward step of a terminal law: node `id`'s children are reached
/// with `reach[id] + kernel[token]`, and its member ends with the EOS step.
fn carry(n: &Node, eos: TokenId, kernel: &[f64], reach: &mut [f64], end: &mut [f64], id: usize) {
    for &(t, c) in &n.children {
        reach[c] = reach[id] + kernel[t as usize];
    }
    if n.accepting {
        end[id] = reach[id] + kernel[eos as usize];
    }
}
