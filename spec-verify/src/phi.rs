//! The verifier's view of future validity: a per-candidate estimate
//! `log Φ̂_t(y)` for every locally valid token `y ∈ A_t` (§4–5).
//!
//! [`PhiSource`] is the narrow interface the loop needs; the estimators of
//! the `future-validity` crate plug in through an adapter, and
//! [`crate::law::PrefixTree::exact_phi`] gives the exact Φ of any finite
//! language by backward recursion (the reference used in tests).

use zapspec_core::{Constraint, TokenId, TokenSet};

/// Supplies `log Φ̂_t(y)` for the candidates of one position.
pub trait PhiSource<C: Constraint> {
    /// A short label for tables.
    fn name(&self) -> String;

    /// Writes `log Φ̂_t(y)` into `out[y]` for every `y ∈ mask` (other entries
    /// are ignored; `-inf` marks a candidate estimated to be a dead end).
    /// `prefix` is every token before position `t`, `constraint` the matcher
    /// state after it, `logits` the target's raw next-token logits `p_t`
    /// there (the row of the verification forward, shared so a source that
    /// needs `p_t` — OneStep-Cheap, Def. 9 — runs no model of its own).
    /// Only the entries of `out` on `mask` may be read or written: a call
    /// costs `O(|A_t|)` plus the source's own work, never a `|V|` pass
    /// imposed by the interface.
    fn log_phi(
        &mut self,
        prefix: &[TokenId],
        constraint: &C,
        mask: &TokenSet,
        logits: &[f32],
        out: &mut [f64],
    ) -> Result<(), String>;

    /// `log Φ̂_t(y) + c_t` for every `y ∈ mask`, where `c_t` is finite and
    /// the same for every candidate of the position. The FVO-Spec law
    /// `p_t(y)Φ̂_t(y) / Σ_{u∈A_t} p_t(u)Φ̂_t(u)` (§4) is invariant to `c_t`,
    /// so the decoder calls this; a source can then skip work that only
    /// fixes the scale (OneStep-Cheap skips the `O(|V|)` log-normaliser of
    /// `p_t`). Default: [`PhiSource::log_phi`] (`c_t = 0`).
    fn log_phi_shifted(
        &mut self,
        prefix: &[TokenId],
        constraint: &C,
        mask: &TokenSet,
        logits: &[f32],
        out: &mut [f64],
    ) -> Result<(), String> {
        self.log_phi(prefix, constraint, mask, logits, out)
    }
}

/// `Φ̂ ≡ 1` (Tier 0, §5.1): FVO-Spec with this source is the Leviathan/LMS
/// verifier.
#[derive(Debug, Clone, Copy, Default)]
pub struct UniformPhi;

impl<C: Constraint> PhiSource<C> for UniformPhi {
    fn name(&self) -> String {
        "Uniform".into()
    }
    fn log_phi(
        &mut self,
        _: &[TokenId],
        _: &C,
        mask: &TokenSet,
        _: &[f32],
        out: &mut [f64],
    ) -> Result<(), String> {
        for y in mask.iter() {
            out[y as usize] = 0.0;
        }
        Ok(())
    }
}

impl<C: Constraint, F: PhiSource<C> + ?Sized> PhiSource<C> for &mut F {
    fn name(&self) -> String {
        (**self).name()
    }
    fn log_phi(
        &mut self,
        prefix: &[TokenId],
        constraint: &C,
        mask: &TokenSet,
        logits: &[f32],
        out: &mut [f64],
    ) -> Result<(), String> {
        (**self).log_phi(prefix, constraint, mask, logits, out)
    }
    fn log_phi_shifted(
        &mut self,
        prefix: &[TokenId],
        constraint: &C,
        mask: &TokenSet,
        logits: &[f32],
        out: &mut [f64],
    ) -> Result<(), String> {
        (**self).log_phi_shifted(prefix, constraint, mask, logits, out)
    }
}

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
