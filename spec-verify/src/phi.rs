//! The verifier's target law at one position, from per-candidate
//! estimates `log Φ̂_t(y)` (§4–5).
//!
//! The estimates come from any [`zapspec_phi::PhiEstimator`] — the one Φ
//! interface, which the decoder calls through
//! [`PhiEstimator::log_phi_shifted`](zapspec_phi::PhiEstimator::log_phi_shifted)
//! with a reused buffer; [`crate::law::TreePhi::exact_phi`] gives the
//! exact Φ of any finite language by backward recursion (the reference used
//! in tests).

use zapspec_core::{TokenId, TokenSet};

/// The verifier's target law at one position, in log space: the masked law
/// `p̃_t` (Def. 1) when `log_phi` is `None`, otherwise the Doob-transformed
/// law `p_t(y)Φ̂_t(y) / Σ_{u∈A_t} p_t(u)Φ̂_t(u)` (§4). Entries outside the
/// mask are `-inf`. `None` when the law has no mass on `A_t`.
pub fn target_log_law(
    target_logp: &[f64],
    mask: &TokenSet,
    log_phi: Option<&[f64]>,
) -> Option<Vec<f64>> {
    let mut out = vec![f64::NEG_INFINITY; target_logp.len()];
    for y in mask.iter() {
        let y = y as usize;
        if y < out.len() {
            let lphi = log_phi.map_or(0.0, |l| l[y]);
            // Φ̂ may be NaN from a broken estimator: treat as a dead end.
            out[y] = if lphi.is_nan() {
                f64::NEG_INFINITY
            } else {
                target_logp[y] + lphi
            };
        }
    }
    zapspec_core::prob::renormalize_log(&mut out).ok()?;
    Some(out)
}

/// The same law over an explicit candidate list `ids` (the valid set `A_t`
/// in token order): entry `i` is `log π(ids[i])`. `logits` are the target's
/// next-token logits (any additive shift); `log_phi`, when given, is indexed
/// by token. This is what the decoder uses — it touches `|A_t|` entries,
/// not the whole vocabulary. `None` when the law has no mass on `ids`.
pub fn compact_log_law(
    logits: &[f32],
    ids: &[TokenId],
    log_phi: Option<&[f64]>,
) -> Option<Vec<f64>> {
    let mut out: Vec<f64> = ids
        .iter()
        .map(|&y| {
            let l = logits
                .get(y as usize)
                .map_or(f64::NEG_INFINITY, |&v| v as f64);
            let lphi = log_phi.map_or(0.0, |p| p[y as usize]);
            let v = l + lphi;
            if v.is_nan() {
                f64::NEG_INFINITY
            } else {
                v
            }
        })
        .collect();
    zapspec_core::prob::renormalize_log(&mut out).ok()?;
    Some(out)
}

/// [`compact_log_law`] from the valid set's logits and estimates, both
/// aligned with its list: `id_logits[i]` is the logit of `ids[i]` and
/// `log_phi[i]` its `log Φ̂_t` (up to one constant), as
/// [`PhiEstimator::log_phi_shifted_compact`](zapspec_phi::PhiEstimator::log_phi_shifted_compact)
/// writes them. `None` when the law has no mass, or the lengths differ.
pub fn compact_log_law_aligned(id_logits: &[f32], log_phi: &[f64]) -> Option<Vec<f64>> {
    if id_logits.len() != log_phi.len() {
        return None;
    }
    let mut out: Vec<f64> = id_logits
        .iter()
        .zip(log_phi)
        .map(|(&l, &lphi)| {
            let v = l as f64 + lphi;
            if v.is_nan() {
                f64::NEG_INFINITY
            } else {
                v
            }
        })
        .collect();
    zapspec_core::prob::renormalize_log(&mut out).ok()?;
    Some(out)
}

/// Nucleus (top-p) truncation of a log law (Holtzman et al. 2020): keeps
/// the smallest set of most probable entries whose mass reaches `top_p`
/// (ties broken towards the smaller index, so the result is a function of
/// the law), sets the rest to `-inf` and renormalises. `top_p ≥ 1` returns
/// the law unchanged. `O(n log n)` in the support size.
pub fn nucleus_log(mut law: Vec<f64>, top_p: f64) -> Vec<f64> {
    if top_p >= 1.0 {
        return law;
    }
    let mut order: Vec<usize> = (0..law.len())
        .filter(|&i| law[i] > f64::NEG_INFINITY)
        .collect();
    order.sort_by(|&a, &b| law[b].total_cmp(&law[a]).then(a.cmp(&b)));
    let mut mass = 0.0;
    let mut keep = order.len();
    for (n, &i) in order.iter().enumerate() {
        mass += law[i].exp();
        if mass >= top_p {
            keep = n + 1;
            break;
        }
    }
    for &i in &order[keep..] {
        law[i] = f64::NEG_INFINITY;
    }
    // the kept entries carry positive mass, so renormalising cannot fail
    let _ = zapspec_core::prob::renormalize_log(&mut law);
    law
}

#[cfg(test)]
mod tests {
    use super::nucleus_log;

    #[test]
    fn nucleus_keeps_the_smallest_head_reaching_p() {
        let law: Vec<f64> = [0.5, 0.3, 0.15, 0.05]
            .iter()
            .map(|p: &f64| p.ln())
            .collect();
        let exp = |v: Vec<f64>| v.iter().map(|x| x.exp()).collect::<Vec<_>>();
        let t = exp(nucleus_log(law.clone(), 0.75));
        assert!((t[0] - 0.625).abs() < 1e-12 && (t[1] - 0.375).abs() < 1e-12);
        assert_eq!((t[2], t[3]), (0.0, 0.0));
        let t = exp(nucleus_log(law.clone(), 0.5));
        assert_eq!(t, vec![1.0, 0.0, 0.0, 0.0]);
        let t = exp(nucleus_log(law.clone(), 1.0));
        assert!((t[3] - 0.05).abs() < 1e-12);
        // ties: the smaller index first
        let tie = vec![0.5f64.ln(), 0.5f64.ln()];
        assert_eq!(exp(nucleus_log(tie, 0.4)), vec![1.0, 0.0]);
    }
}
