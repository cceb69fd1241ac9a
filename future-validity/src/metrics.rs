//! Terminal-law metrics (paper §6, App. H.1): the three laws on an
//! enumerable language, exact TV between them, empirical TV from samples
//! with a bootstrap CI, and structural statistics of samples.
//!
//! * μ^proj (Def. 1): the locally masked sampling law, the product of the
//!   per-step kernels `p_t(y)1[y∈A_t]/Z_p`.
//! * μ* (Def. 2): the model conditioned on the language,
//!   `p(x·EOS)1[x∈L]/Z_C`.
//! * μ^Φ̂: the product of the Doob kernels `p_t(y)Φ̂_t(y)/Σ p_t Φ̂_t`
//!   (§4) for an estimator Φ̂; with exact Φ it equals μ* (Prop. 6).
//!
//! [`TerminalLaws::enumerate`] walks every valid prefix once, so all laws
//! are exact — no sampling.

use std::collections::HashMap;
use std::hash::Hash;

use rand::Rng;
use zapspec_core::prob::{self, seeded_rng};
use zapspec_core::{Constraint, LanguageModel, TokenId};

use crate::certificates::StepDiagnostics;
use crate::error::PhiError;
use crate::estimator::{doob_kernel, PhiCost, PhiEstimator};
use crate::exact::{Exact, ExactConfig};

/// μ^Φ̂ of one estimator and the certificates it earned along the way.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EstimatorLaw {
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
    pub log_mu_star: Vec<f64>,
    pub log_mu_proj: Vec<f64>,
    /// `Φ̄` at the empty prefix.
    pub root_phi_bar: f64,
    pub estimators: Vec<EstimatorLaw>,
}

struct Acc {
    log_mu: f64,
    max_delta: f64,
    delta_sum: f64,
    weight_sum: f64,
    seq_bound: f64,
    max_eps: f64,
}

impl TerminalLaws {
    /// Enumerates the language below the constraint's state (the model's
    /// context holding the same prefix), scoring each estimator at every
    /// valid prefix (each is called once per prefix, so a randomised
    /// estimator contributes one draw, as in the paper's Table 6).
    pub fn enumerate<C: Constraint, M: LanguageModel>(
        constraint: &C,
        model: &mut M,
        estimators: &mut [&mut dyn PhiEstimator<C, M>],
        max_members: usize,
    ) -> Result<Self, PhiError> {
        let mut exact = Exact::new(ExactConfig::default());
        let log_z = exact.log_phi_prefix(constraint, model)?;
        let costs0: Vec<PhiCost> = estimators.iter().map(|e| e.cost()).collect();
        let mut w = Walker {
            exact,
            max_members,
            members: Vec::new(),
            log_p: Vec::new(),
            log_proj: Vec::new(),
            log_hat: vec![Vec::new(); estimators.len()],
            root_phi_bar: f64::NAN,
        };
        let mut c = constraint.fork();
        let mut accs: Vec<Acc> = (0..estimators.len())
            .map(|_| Acc {
                log_mu: 0.0,
                max_delta: 0.0,
                delta_sum: 0.0,
                weight_sum: 0.0,
                seq_bound: 0.0,
                max_eps: 0.0,
            })
            .collect();
        let logits = model.next_logits()?;
        w.walk(
            &mut c,
            model,
            estimators,
            &logits,
            0.0,
            0.0,
            &mut accs,
            &mut Vec::new(),
            true,
        )?;
        let log_mu_star = w.log_p.iter().map(|&l| l - log_z).collect();
        let ests = estimators
            .iter()
            .zip(accs)
            .zip(w.log_hat)
            .zip(costs0)
            .map(|(((e, a), log_mu), c0)| {
                let c1 = e.cost();
                EstimatorLaw {
                    name: e.name(),
                    log_mu,
                    max_delta: a.max_delta,
                    mean_delta: if a.weight_sum > 0.0 {
                        a.delta_sum / a.weight_sum
                    } else {
                        0.0
                    },
                    seq_bound: a.seq_bound,
                    max_eps_rel: a.max_eps,
                    cost: PhiCost {
                        calls: c1.calls - c0.calls,
                        forwards: c1.forwards - c0.forwards,
                        rollouts: c1.rollouts - c0.rollouts,
                        rollout_tokens: c1.rollout_tokens - c0.rollout_tokens,
                        constraint_ops: c1.constraint_ops - c0.constraint_ops,
                    },
                }
            })
            .collect();
        Ok(TerminalLaws {
            members: w.members,
            log_p: w.log_p,
            log_z,
            log_mu_star,
            log_mu_proj: w.log_proj,
            root_phi_bar: w.root_phi_bar,
            estimators: ests,
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

struct Walker {
    exact: Exact,
    max_members: usize,
    members: Vec<Vec<TokenId>>,
    log_p: Vec<f64>,
    log_proj: Vec<f64>,
    log_hat: Vec<Vec<f64>>,
    root_phi_bar: f64,
}

impl Walker {
    #[allow(clippy::too_many_arguments)]
    fn walk<C: Constraint, M: LanguageModel>(
        &mut self,
        c: &mut C,
        m: &mut M,
        ests: &mut [&mut dyn PhiEstimator<C, M>],
        logits: &[f32],
        log_p: f64,
        log_proj: f64,
        accs: &mut [Acc],
        path: &mut Vec<TokenId>,
        root: bool,
    ) -> Result<(), PhiError> {
        let eos = c.eos();
        let mask = c.mask();
        let v = logits.len();
        let lp = prob::log_softmax(logits);
        let proj =
            doob_kernel(logits, &mask, &vec![0.0; v]).map_err(|_| PhiError::EmptySupport {
                position: path.len(),
            })?;
        let phi = self.exact.log_phi(c, m, logits)?;
        let mut kernels = Vec::with_capacity(ests.len());
        for (e, acc) in ests.iter_mut().zip(accs.iter_mut()) {
            let hat = e.log_phi(c, m, logits)?;
            let k = doob_kernel(logits, &mask, &hat).map_err(|_| PhiError::EmptySupport {
                position: path.len(),
            })?;
            if let Ok(d) = StepDiagnostics::compute(logits, &mask, &phi, &hat) {
                let wgt = acc.log_mu.exp();
                acc.max_delta = acc.max_delta.max(d.delta);
                acc.delta_sum += wgt * d.delta;
                acc.weight_sum += wgt;
                acc.max_eps = acc.max_eps.max(d.eps_rel);
                acc.seq_bound += match d.bound {
                    Some(b) => wgt * b,
                    None if wgt > 0.0 => f64::INFINITY,
                    None => 0.0,
                };
                if root {
                    self.root_phi_bar = d.phi_bar;
                }
            }
            kernels.push(k);
        }
        let saved: Vec<f64> = accs.iter().map(|a| a.log_mu).collect();
        let base = m.context().len();
        for y in mask.iter() {
            let i = y as usize;
            for (a, k) in accs.iter_mut().zip(&kernels) {
                a.log_mu += k[i];
            }
            if y == eos {
                if self.members.len() >= self.max_members {
                    return Err(PhiError::TooLarge {
                        limit: self.max_members,
                        depth: path.len(),
                    });
                }
                self.members.push(path.clone());
                self.log_p.push(log_p + lp[i]);
                self.log_proj.push(log_proj + proj[i]);
                for (h, a) in self.log_hat.iter_mut().zip(accs.iter()) {
                    h.push(a.log_mu);
                }
            } else {
                c.advance(y)?;
                path.push(y);
                let r = m.prefill(&[y]).map_err(PhiError::from).and_then(|rows| {
                    let row: Vec<f32> = rows.row(0).to_vec();
                    self.walk(
                        c,
                        m,
                        ests,
                        &row,
                        log_p + lp[i],
                        log_proj + proj[i],
                        accs,
                        path,
                        false,
                    )
                });
                m.truncate(base);
                path.pop();
                let _ = c.rollback(1);
                r?;
            }
            for (a, s) in accs.iter_mut().zip(&saved) {
                a.log_mu = *s;
            }
        }
        Ok(())
    }
}

/// An empirical TV estimate with its bootstrap 95% interval (App. G).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TvEstimate {
    /// `½ Σ_x |f̂(x) − μ(x)|` over the union of supports.
    pub tv: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub n: usize,
    pub resamples: usize,
}

/// The paper's bootstrap size (App. G: "Bootstrap 95% CI from 500 resamples").
pub const DEFAULT_RESAMPLES: usize = 500;

/// Empirical TV between samples and a reference law, with a percentile
/// bootstrap CI (`resamples` resamples of size N, seeded). Reference atoms
/// never sampled count fully; sampled atoms missing from the reference
/// count with reference mass 0.
pub fn empirical_tv<K: Hash + Eq + Clone>(
    samples: &[K],
    reference: &HashMap<K, f64>,
    resamples: usize,
    seed: u64,
) -> TvEstimate {
    let n = samples.len();
    // Index atoms.
    let mut index: HashMap<&K, usize> = HashMap::new();
    let mut ref_mass: Vec<f64> = Vec::new();
    let mut ids = Vec::with_capacity(n);
    for s in samples {
        let next = index.len();
        let id = *index.entry(s).or_insert_with(|| {
            ref_mass.push(reference.get(s).copied().unwrap_or(0.0));
            next
        });
        ids.push(id);
    }
    let unseen: f64 = reference
        .iter()
        .filter(|(k, _)| !index.contains_key(k))
        .map(|(_, &p)| p)
        .sum();
    let tv_of = |counts: &[usize]| -> f64 {
        if n == 0 {
            return 0.5 * (ref_mass.iter().sum::<f64>() + unseen);
        }
        let s: f64 = counts
            .iter()
            .zip(&ref_mass)
            .map(|(&c, &r)| (c as f64 / n as f64 - r).abs())
            .sum();
        0.5 * (s + unseen)
    };
    let mut counts = vec![0usize; ref_mass.len()];
    for &i in &ids {
        counts[i] += 1;
    }
    let tv = tv_of(&counts);
    let mut rng = seeded_rng(seed);
    let mut boots = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        counts.iter_mut().for_each(|c| *c = 0);
        for _ in 0..n {
            counts[ids[rng.random_range(0..n)]] += 1;
        }
        boots.push(tv_of(&counts));
    }
    boots.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| -> f64 {
        if boots.is_empty() {
            return tv;
        }
        let i = ((p * (boots.len() - 1) as f64).round() as usize).min(boots.len() - 1);
        boots[i]
    };
    TvEstimate {
        tv,
        ci_low: q(0.025),
        ci_high: q(0.975),
        n,
        resamples,
    }
}

/// Structural statistics of Dyck-like samples (App. H.6): maximum nesting
/// depth and length.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StructuralStats {
    pub n: usize,
    pub mean_depth: f64,
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
