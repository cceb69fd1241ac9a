//! The budget-gated hybrid of §5.6 (an engineering sketch in the paper).
//!
//! Stage 1 (pre-trigger): compute OneStep-Cheap Φ̂¹ˢ and its dispersion
//! `log(Φ̂_max/Φ̂_min)` over the candidates. If the dispersion exceeds `τ_d`
//! and the position has high entropy (`H(μ^proj_t) > τ_H`), escalate.
//! Stage 2 (post-trigger): Monte Carlo rollouts with budget `k`; if the TV
//! impact `TV(μ̂^MC_t, μ̂^1s_t)` of switching is below `τ_tv`, fall back to
//! OneStep. Easy positions pay no rollouts.

use zapspec_core::{prob, LanguageModel, LookAhead};

use crate::estimator::{
    check_query, check_vocab, copy_on_mask, doob_kernel, PhiEstimator, PhiQuery, PhiResult,
};
use crate::montecarlo::{MonteCarlo, MonteCarloConfig};
use crate::onestep::OneStepCheap;

/// Thresholds of the two stages; `Default`: `τ_d = ln 2`, `τ_H = 0.1` nats,
/// `τ_tv = 0.01`, MC with `k = 8`.
#[derive(Debug, Clone, Copy)]
pub struct HybridConfig {
    /// Dispersion threshold `τ_d` on `log(Φ̂_max/Φ̂_min)` (a dead-end
    /// candidate makes the dispersion infinite).
    pub tau_dispersion: f64,
    /// Entropy threshold `τ_H` (nats) of μ^proj_t.
    pub tau_entropy: f64,
    /// Minimum TV impact `τ_tv` for keeping the MC estimate.
    pub tau_tv: f64,
    /// The Monte Carlo stage.
    pub mc: MonteCarloConfig,
}

impl Default for HybridConfig {
    fn default() -> Self {
        HybridConfig {
            tau_dispersion: std::f64::consts::LN_2,
            tau_entropy: 0.1,
            tau_tv: 0.01,
            mc: MonteCarloConfig::default(),
        }
    }
}

/// How the hybrid routed the positions it scored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct HybridStats {
    /// Positions scored.
    pub positions: u64,
    /// Positions that passed the stage-1 trigger.
    pub escalated: u64,
    /// Escalated positions whose MC estimate was kept.
    pub used_mc: u64,
}

/// §5.6: OneStep everywhere, Monte Carlo where OneStep is dispersed and the
/// position uncertain, and only when it changes the kernel.
#[derive(Debug, Clone)]
pub struct BudgetGatedHybrid {
    config: HybridConfig,
    onestep: OneStepCheap,
    mc: MonteCarlo,
    stats: HybridStats,
}

impl BudgetGatedHybrid {
    /// Both stages, fresh (MC seeded from `config.mc`).
    pub fn new(config: HybridConfig) -> Self {
        BudgetGatedHybrid {
            config,
            onestep: OneStepCheap::new(),
            mc: MonteCarlo::with_config(config.mc),
            stats: HybridStats::default(),
        }
    }
    /// How the positions scored so far were routed.
    pub fn stats(&self) -> HybridStats {
        self.stats
    }
}

/// `log(Φ̂_max/Φ̂_min)` over the non-EOS candidates of `mask`.
pub fn dispersion(
    log_phi: &[f64],
    mask: &zapspec_core::TokenSet,
    eos: zapspec_core::TokenId,
) -> f64 {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for y in mask.iter().filter(|&y| y != eos) {
        let v = log_phi[y as usize];
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi == f64::NEG_INFINITY || lo == f64::INFINITY {
        0.0
    } else if lo == f64::NEG_INFINITY {
        f64::INFINITY
    } else {
        hi - lo
    }
}

/// Shannon entropy (nats) of a log-probability vector.
pub fn entropy_log(lp: &[f64]) -> f64 {
    -lp.iter()
        .filter(|v| v.is_finite())
        .map(|&v| v.exp() * v)
        .sum::<f64>()
}

/// Reports the work of both stages (OneStep's constraint operations, the
/// rollouts of escalated positions).
impl<C: LookAhead, M: LanguageModel> PhiEstimator<C, M> for BudgetGatedHybrid {
    fn name(&self) -> String {
        format!("Hybrid(k={})", self.config.mc.k)
    }
    fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, model: &mut M, out: &mut [f64]) -> PhiResult {
        let (mask, logits) = (q.mask, q.logits);
        check_vocab(q.constraint, model, logits)?;
        let v = check_query(q, out)?;
        let mut one = vec![f64::NEG_INFINITY; v];
        // the gate reads every estimate's dispersion: no argmax shortcut
        let q = &q.with_argmax_only(false);
        let mut work = PhiEstimator::<C, M>::log_phi_into(&mut self.onestep, q, model, &mut one)?;
        self.stats.positions += 1;
        let disp = dispersion(&one, mask, q.constraint.eos());
        let proj = doob_kernel(logits, mask, &vec![0.0; logits.len()])?;
        if disp <= self.config.tau_dispersion || entropy_log(&proj) <= self.config.tau_entropy {
            copy_on_mask(&one, mask, out);
            return Ok(work);
        }
        self.stats.escalated += 1;
        let mut mc = vec![f64::NEG_INFINITY; v];
        work = work.add(&PhiEstimator::<C, M>::log_phi_into(
            &mut self.mc,
            q,
            model,
            &mut mc,
        )?);
        let k_one = doob_kernel(logits, mask, &one);
        let k_mc = doob_kernel(logits, mask, &mc);
        let keep = match (k_one, k_mc) {
            (Ok(a), Ok(b)) if prob::tv_log(&a, &b) < self.config.tau_tv => &one,
            (Err(_), Err(_)) => &one,
            (_, Ok(_)) => {
                self.stats.used_mc += 1;
                &mc
            }
            (Ok(_), Err(_)) => &one,
        };
        copy_on_mask(keep, mask, out);
        Ok(work)
    }
}
