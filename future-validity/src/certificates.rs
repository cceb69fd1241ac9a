//! Fidelity certificates of the paper: Theorem 7 (additive Φ error), the
//! relative-error corollary (App. C), the KL gap identity (Prop. 5 /
//! App. F), Hoeffding widths for Monte Carlo (§5.4), and per-step
//! diagnostics that evaluate them against exact Φ.

use zapspec_core::{prob, TokenSet};

use crate::error::PhiError;
use crate::estimator::doob_kernel;

/// Theorem 7: if `|Φ̂_t − Φ_t| ≤ δ` on `A_t` and `δ < Φ̄_t`, then
/// `TV(μ̂_t, μ*_t) ≤ δ/(Φ̄_t − δ)`. `None` when the bound does not apply
/// (`δ ≥ Φ̄_t`, i.e. vacuous).
pub fn theorem7_bound(delta: f64, phi_bar: f64) -> Option<f64> {
    if delta.is_nan() || phi_bar.is_nan() || delta < 0.0 || delta >= phi_bar {
        None
    } else {
        Some(delta / (phi_bar - delta))
    }
}

/// Relative-error corollary (App. C): if `Φ̂_t(y)/Φ_t(y) ∈ [1−ε, 1+ε]` for
/// every `y ∈ A_t`, then `TV(μ̂_t, μ*_t) ≤ min(1, ε/(1−ε))`.
pub fn relative_error_bound(eps: f64) -> f64 {
    if eps.is_nan() || eps >= 1.0 {
        1.0
    } else {
        (eps.max(0.0) / (1.0 - eps.max(0.0))).min(1.0)
    }
}

/// Hoeffding half-width `√(ln(2/α)/(2k))` (§5.4).
pub fn hoeffding_half_width(k: usize, alpha: f64) -> f64 {
    if k == 0 {
        return f64::INFINITY;
    }
    ((2.0 / alpha).ln() / (2.0 * k as f64)).sqrt()
}

/// §5.4's union-bound certificate with a known `Φ̄_t`:
/// `ε/(Φ̄_t − ε)`, `ε = √(ln(2|A_t|/α)/(2k))`; `None` when vacuous.
pub fn mc_tv_certificate(k: usize, candidates: usize, alpha: f64, phi_bar: f64) -> Option<f64> {
    let eps = hoeffding_half_width(k, alpha / candidates.max(1) as f64);
    theorem7_bound(eps, phi_bar)
}

/// Smallest `k` for which the §5.4 certificate is at most `target_tv`
/// (the Monte Carlo sample-complexity estimate): solving
/// `ε/(Φ̄−ε) ≤ τ` gives `ε ≤ τΦ̄/(1+τ)`, so `k ≥ ln(2|A|/α)/(2ε²)`.
pub fn mc_sample_complexity(
    target_tv: f64,
    candidates: usize,
    alpha: f64,
    phi_bar: f64,
) -> Option<usize> {
    if !(target_tv > 0.0 && phi_bar > 0.0 && alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    let eps = target_tv * phi_bar / (1.0 + target_tv);
    let k = (2.0 * candidates.max(1) as f64 / alpha).ln() / (2.0 * eps * eps);
    Some(k.ceil() as usize)
}

/// The two sides of the gap identity (App. F):
/// `D_KL(μ*_t ‖ μ^proj_t) = E_{Y∼μ*_t}[log Φ_t(Y)/Φ̄_t]`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct KlGap {
    /// `Σ μ* log(μ*/μ^proj)`, computed from the two kernels.
    pub direct: f64,
    /// `E_{μ*}[log Φ] − log Φ̄`.
    pub identity: f64,
    /// `Φ̄_t = E_{μ^proj}[Φ_t]`.
    pub phi_bar: f64,
}

/// Evaluates both sides of the KL identity for one position.
pub fn kl_gap(logits: &[f32], mask: &TokenSet, log_phi: &[f64]) -> Result<KlGap, PhiError> {
    let v = logits.len();
    let proj = doob_kernel(logits, mask, &vec![0.0; v])?;
    let star = doob_kernel(logits, mask, log_phi)?;
    let direct = prob::kl_log(&star, &proj);
    let log_phi_bar = log_phi_bar(&proj, log_phi);
    let mut e = 0.0;
    for y in mask.iter() {
        let i = y as usize;
        if star[i] > f64::NEG_INFINITY {
            e += star[i].exp() * log_phi[i];
        }
    }
    Ok(KlGap {
        direct,
        identity: e - log_phi_bar,
        phi_bar: log_phi_bar.exp(),
    })
}

/// `log Φ̄_t = log Σ_y μ^proj_t(y) Φ_t(y)`.
pub fn log_phi_bar(log_proj: &[f64], log_phi: &[f64]) -> f64 {
    let xs: Vec<f64> = log_proj
        .iter()
        .zip(log_phi)
        .map(|(a, b)| a + b)
        .filter(|x| !x.is_nan())
        .collect();
    prob::logsumexp(&xs).min(0.0)
}

/// Per-position comparison of an estimate Φ̂ with exact Φ (App. H.1
/// metrics), and the certificates it earns.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StepDiagnostics {
    /// `δ = max_{y∈A_t} |Φ̂(y) − Φ(y)|`.
    pub delta: f64,
    /// `ε = max_{y∈A_t, Φ>0} |Φ̂(y)/Φ(y) − 1|` (`inf` if Φ̂ > 0 = Φ somewhere).
    pub eps_rel: f64,
    /// `Φ̄_t = E_{μ^proj_t}[Φ_t]`.
    pub phi_bar: f64,
    /// `TV(μ̂_t, μ*_t)`, exact.
    pub tv: f64,
    /// `TV(μ^proj_t, μ*_t)`, exact.
    pub tv_proj: f64,
    /// Theorem 7's bound, `None` when vacuous.
    pub bound: Option<f64>,
    /// The relative-error bound `min(1, ε/(1−ε))`.
    pub rel_bound: f64,
}

impl StepDiagnostics {
    /// Compares `log_phi_hat` with `log_phi` (exact) at one position.
    pub fn compute(
        logits: &[f32],
        mask: &TokenSet,
        log_phi: &[f64],
        log_phi_hat: &[f64],
    ) -> Result<Self, PhiError> {
        let v = logits.len();
        let proj = doob_kernel(logits, mask, &vec![0.0; v])?;
        let star = doob_kernel(logits, mask, log_phi)?;
        let hat = doob_kernel(logits, mask, log_phi_hat)?;
        let mut delta = 0.0f64;
        let mut eps = 0.0f64;
        for y in mask.iter() {
            let i = y as usize;
            let (a, b) = (log_phi_hat[i].exp(), log_phi[i].exp());
            delta = delta.max((a - b).abs());
            if b > 0.0 {
                eps = eps.max(((log_phi_hat[i] - log_phi[i]).exp() - 1.0).abs());
            } else if a > 0.0 {
                eps = f64::INFINITY;
            }
        }
        let phi_bar = log_phi_bar(&proj, log_phi).exp();
        Ok(StepDiagnostics {
            delta,
            eps_rel: eps,
            phi_bar,
            tv: prob::tv_log(&hat, &star),
            tv_proj: prob::tv_log(&proj, &star),
            bound: theorem7_bound(delta, phi_bar),
            rel_bound: relative_error_bound(eps),
        })
    }
}
