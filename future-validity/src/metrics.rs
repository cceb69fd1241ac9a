//! Terminal-law metrics (paper §6, App. H.1, App. G "TV estimation"): the
//! three laws on an enumerable language, exact TV between them, and the
//! statistics that compare a sampler's output with an exact law — TV of
//! counts ([`tv_counts`], [`empirical_tv`] for keyed samples), the one
//! bootstrap interval of that TV ([`bootstrap_tv_ci`]), the noise floor of
//! an exact sampler at the same N ([`noise_floor`]), Pearson's χ² and the
//! G test ([`chi_square`], [`g_test`]) — and structural statistics of
//! samples.
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
use std::hash::Hash;

use rand::Rng;
use statrs::distribution::{ChiSquared, ContinuousCDF};
use zapspec_core::prob::{self, seeded_rng};
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

    /// μ* as a map member → probability (the reference of [`empirical_tv`]).
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

/// An empirical TV estimate with its bootstrap 95% interval (App. G).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TvEstimate {
    /// `½ Σ_x |f̂(x) − μ(x)|` over the union of supports.
    pub tv: f64,
    /// Lower end of the 95% interval ([`bootstrap_tv_ci`]).
    pub ci_low: f64,
    /// Upper end of the 95% interval ([`bootstrap_tv_ci`]).
    pub ci_high: f64,
    /// Number of samples.
    pub n: usize,
    /// Number of bootstrap resamples.
    pub resamples: usize,
}

/// The paper's bootstrap size (App. G: "Bootstrap 95% CI from 500 resamples").
pub const DEFAULT_RESAMPLES: usize = 500;

/// Empirical TV between keyed samples and a reference law, with the
/// bootstrap 95% interval of [`bootstrap_tv_ci`] (`resamples` resamples,
/// RNG seeded with `seed`). Reference atoms never sampled count fully;
/// sampled atoms missing from the reference count with reference mass 0.
/// Cost: `O(N + |reference| + resamples·(N log |atoms|))`.
pub fn empirical_tv<K: Hash + Eq + Clone>(
    samples: &[K],
    reference: &HashMap<K, f64>,
    resamples: usize,
    seed: u64,
) -> TvEstimate {
    let n = samples.len();
    // Atoms in order of first appearance, then one cell holding the mass of
    // every reference atom never sampled (its count is 0 in every resample).
    let mut index: HashMap<&K, usize> = HashMap::new();
    let mut law: Vec<f64> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    for s in samples {
        let next = index.len();
        let id = *index.entry(s).or_insert_with(|| {
            law.push(reference.get(s).copied().unwrap_or(0.0));
            counts.push(0);
            next
        });
        counts[id] += 1;
    }
    let unseen: f64 = reference
        .iter()
        .filter(|(k, _)| !index.contains_key(k))
        .map(|(_, &p)| p)
        .sum();
    law.push(unseen);
    counts.push(0);
    if n == 0 {
        let tv = 0.5 * law.iter().sum::<f64>();
        return TvEstimate {
            tv,
            ci_low: tv,
            ci_high: tv,
            n,
            resamples,
        };
    }
    let tv = tv_counts(&counts, &law);
    let (ci_low, ci_high) = if resamples == 0 {
        (tv, tv)
    } else {
        bootstrap_tv_ci(&mut seeded_rng(seed), &counts, &law, resamples)
    };
    TvEstimate {
        tv,
        ci_low,
        ci_high,
        n,
        resamples,
    }
}

/// `½ Σ_x |count_x/N − law_x|` (probabilities, not logs); 1 when there are
/// no counts. Cost `O(|law|)`.
pub fn tv_counts(counts: &[usize], law: &[f64]) -> f64 {
    let n: usize = counts.iter().sum();
    if n == 0 {
        return 1.0;
    }
    0.5 * counts
        .iter()
        .zip(law)
        .map(|(&c, &p)| (c as f64 / n as f64 - p).abs())
        .sum::<f64>()
}

/// Draws `n` iid members from `law` (unnormalised weights) into counts by
/// inverse-CDF sampling. Cost `O(|law| + n log |law|)`.
pub fn sample_counts<R: Rng + ?Sized>(rng: &mut R, law: &[f64], n: usize) -> Vec<usize> {
    let mut cdf = Vec::with_capacity(law.len());
    let mut acc = 0.0;
    for &p in law {
        acc += p.max(0.0);
        cdf.push(acc);
    }
    let mut counts = vec![0usize; law.len()];
    if acc <= 0.0 {
        return counts;
    }
    for _ in 0..n {
        let u = rng.random::<f64>() * acc;
        let i = cdf.partition_point(|&c| c <= u).min(law.len() - 1);
        counts[i] += 1;
    }
    counts
}

/// Mean and standard deviation of the TV between `reps` exact iid samples of
/// size `n` and `law` itself: the TV an exact sampler shows from sampling
/// noise alone (the baseline every empirical TV is read against).
pub fn noise_floor<R: Rng + ?Sized>(rng: &mut R, law: &[f64], n: usize, reps: usize) -> (f64, f64) {
    let tvs: Vec<f64> = (0..reps)
        .map(|_| tv_counts(&sample_counts(rng, law, n), law))
        .collect();
    mean_sd(&tvs)
}

/// Bootstrap 95% interval of the TV between the sampled law (`counts`) and
/// `law`, resampling the observed samples `reps` times (App. G uses 500).
///
/// The empirical TV is biased upwards by sampling noise and a resampled TV
/// more so, so the plain percentile interval can lie entirely above the
/// point estimate. This is the *basic* (reverse-percentile) interval
/// `[2·TV − q₉₇.₅, 2·TV − q₂.₅]`, which corrects that shift, clipped at 0.
/// `(NaN, NaN)` when `reps = 0`.
pub fn bootstrap_tv_ci<R: Rng + ?Sized>(
    rng: &mut R,
    counts: &[usize],
    law: &[f64],
    reps: usize,
) -> (f64, f64) {
    let n: usize = counts.iter().sum();
    let emp: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
    let mut tvs: Vec<f64> = (0..reps)
        .map(|_| tv_counts(&sample_counts(rng, &emp, n), law))
        .collect();
    tvs.sort_by(|a, b| a.total_cmp(b));
    if tvs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let q = |f: f64| tvs[((tvs.len() - 1) as f64 * f).round() as usize];
    let t = tv_counts(counts, law);
    ((2.0 * t - q(0.975)).max(0.0), (2.0 * t - q(0.025)).max(0.0))
}

/// Sample mean and (n − 1) standard deviation; `(NaN, NaN)` when empty.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let m = xs.iter().sum::<f64>() / xs.len() as f64;
    let v = if xs.len() > 1 {
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64
    } else {
        0.0
    };
    (m, v.sqrt())
}

/// Result of a goodness-of-fit test ([`chi_square`], [`g_test`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChiSquare {
    /// The test statistic.
    pub statistic: f64,
    /// Degrees of freedom: pooled cells − 1.
    pub dof: usize,
    /// Upper-tail p-value under χ²(dof).
    pub p_value: f64,
}

/// Pearson's chi-square test of `counts` against `law`. Cells with expected
/// count below 5 are pooled (in order) so the asymptotic law applies; a
/// count on a cell of probability zero gives `p = 0`.
pub fn chi_square(counts: &[usize], law: &[f64]) -> ChiSquare {
    goodness_of_fit(
        counts,
        law,
        |o, e| if e > 0.0 { (o - e).powi(2) / e } else { 0.0 },
    )
}

/// The likelihood-ratio (G) test of `counts` against `law`:
/// `G = 2 Σ O ln(O/E)` over the same pooled cells as [`chi_square`],
/// referred to χ² with `cells − 1` degrees of freedom. Less sensitive than
/// Pearson's statistic to a few rare cells with small expected counts.
pub fn g_test(counts: &[usize], law: &[f64]) -> ChiSquare {
    goodness_of_fit(counts, law, |o, e| {
        if o > 0.0 && e > 0.0 {
            2.0 * o * (o / e).ln()
        } else {
            0.0
        }
    })
}

/// Pools cells in order until each has expected count ≥ 5, sums
/// `term(observed, expected)` and refers it to χ²(cells − 1).
fn goodness_of_fit(counts: &[usize], law: &[f64], term: impl Fn(f64, f64) -> f64) -> ChiSquare {
    let n: usize = counts.iter().sum();
    let nf = n as f64;
    let mut cells: Vec<(f64, f64)> = Vec::new(); // (observed, expected)
    let (mut po, mut pe) = (0.0, 0.0);
    let mut impossible = false;
    for (&c, &p) in counts.iter().zip(law) {
        if p <= 0.0 && c > 0 {
            impossible = true;
        }
        po += c as f64;
        pe += p * nf;
        if pe >= 5.0 {
            cells.push((po, pe));
            po = 0.0;
            pe = 0.0;
        }
    }
    if pe > 0.0 || po > 0.0 {
        match cells.last_mut() {
            Some(last) => {
                last.0 += po;
                last.1 += pe;
            }
            None => cells.push((po, pe)),
        }
    }
    let statistic: f64 = cells.iter().map(|&(o, e)| term(o, e)).sum::<f64>().max(0.0);
    let dof = cells.len().saturating_sub(1);
    let p_value = if impossible {
        0.0
    } else if dof == 0 {
        1.0
    } else {
        ChiSquared::new(dof as f64)
            .map(|d| 1.0 - d.cdf(statistic))
            .unwrap_or(f64::NAN)
    };
    ChiSquare {
        statistic,
        dof,
        p_value,
    }
}

/// Structural statistics of Dyck-like samples (App. H.6): maximum nesting
/// depth and length.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StructuralStats {
    /// Number of samples (or members of the law).
    pub n: usize,
    /// Mean maximum nesting depth.
    pub mean_depth: f64,
    /// Mean length.
    pub mean_len: f64,
    /// `depth_hist[d]` = fraction of samples with max depth `d`.
    pub depth_hist: Vec<f64>,
    /// `len_hist[l]` = fraction of samples of length `l`.
    pub len_hist: Vec<f64>,
}

/// Maximum nesting depth of a bracket string whose tokens `< kinds` open
/// and `kinds..2·kinds` close.
pub fn max_depth(x: &[TokenId], kinds: usize) -> usize {
    let (mut d, mut m) = (0usize, 0usize);
    for &t in x {
        if (t as usize) < kinds {
            d += 1;
            m = m.max(d);
        } else if (t as usize) < 2 * kinds {
            d = d.saturating_sub(1);
        }
    }
    m
}

impl StructuralStats {
    /// From samples (each with weight 1).
    pub fn of_samples(samples: &[Vec<TokenId>], kinds: usize) -> Self {
        let w = vec![1.0; samples.len()];
        Self::weighted(samples, &w, kinds)
    }

    /// From a law: members with log-probabilities (exact expectations).
    pub fn of_law(members: &[Vec<TokenId>], log_mu: &[f64], kinds: usize) -> Self {
        let w: Vec<f64> = log_mu.iter().map(|l| l.exp()).collect();
        Self::weighted(members, &w, kinds)
    }

    fn weighted(xs: &[Vec<TokenId>], w: &[f64], kinds: usize) -> Self {
        let total: f64 = w.iter().sum();
        let mut dh = Vec::new();
        let mut lh = Vec::new();
        let (mut md, mut ml) = (0.0, 0.0);
        for (x, &wi) in xs.iter().zip(w) {
            let d = max_depth(x, kinds);
            let wi = if total > 0.0 { wi / total } else { 0.0 };
            if dh.len() <= d {
                dh.resize(d + 1, 0.0);
            }
            if lh.len() <= x.len() {
                lh.resize(x.len() + 1, 0.0);
            }
            dh[d] += wi;
            lh[x.len()] += wi;
            md += wi * d as f64;
            ml += wi * x.len() as f64;
        }
        StructuralStats {
            n: xs.len(),
            mean_depth: md,
            mean_len: ml,
            depth_hist: dh,
            len_hist: lh,
        }
    }
}

/// `KL(p ‖ q)` between two histograms of possibly different lengths.
pub fn hist_kl(p: &[f64], q: &[f64]) -> f64 {
    let n = p.len().max(q.len());
    let lp: Vec<f64> = (0..n)
        .map(|i| p.get(i).copied().unwrap_or(0.0).ln())
        .collect();
    let lq: Vec<f64> = (0..n)
        .map(|i| q.get(i).copied().unwrap_or(0.0).ln())
        .collect();
    prob::kl_log(&lp, &lq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zapspec_core::prob::seeded_rng;

    #[test]
    fn exact_samples_pass_and_biased_fail() {
        let law = [0.5, 0.3, 0.15, 0.05];
        let mut rng = seeded_rng(1);
        let c = sample_counts(&mut rng, &law, 20_000);
        assert!(tv_counts(&c, &law) < 0.02);
        assert!(chi_square(&c, &law).p_value > 1e-3);
        let biased = [0.45, 0.35, 0.15, 0.05];
        assert!(chi_square(&c, &biased).p_value < 1e-6);
        let (m, sd) = noise_floor(&mut rng, &law, 20_000, 50);
        assert!(m > 0.0 && m < 0.01 && sd < m);
        let (lo, hi) = bootstrap_tv_ci(&mut rng, &c, &law, 200);
        assert!(lo <= tv_counts(&c, &law) && tv_counts(&c, &law) <= hi);
        // a count on an impossible cell is an outright failure
        assert_eq!(chi_square(&[1, 10], &[0.0, 1.0]).p_value, 0.0);
        // the G test agrees: exact samples pass, the biased law fails
        assert!(g_test(&c, &law).p_value > 1e-3);
        assert!(g_test(&c, &biased).p_value < 1e-6);
        assert_eq!(g_test(&[1, 10], &[0.0, 1.0]).p_value, 0.0);
    }

    #[test]
    fn g_statistic_matches_a_hand_computation() {
        // two cells, expected 50/50, observed 60/40: G = 2(60 ln 1.2 + 40 ln 0.8)
        let g = g_test(&[60, 40], &[0.5, 0.5]);
        let want = 2.0 * (60.0 * 1.2f64.ln() + 40.0 * 0.8f64.ln());
        assert!((g.statistic - want).abs() < 1e-12 && g.dof == 1);
        let x = chi_square(&[60, 40], &[0.5, 0.5]);
        assert!((x.statistic - 4.0).abs() < 1e-12);
        // p of χ²(1) at 4.0 is 0.0455
        assert!((x.p_value - 0.0455).abs() < 1e-3);
    }
}
