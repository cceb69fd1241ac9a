//! Which candidates of `A_t` an estimator scores: [`CandidateCut`].
//!
//! Every estimator of §5 pays per candidate `y ∈ A_t`: OneStep-Cheap
//! (Def. 9, eq. (1)) one successor mass `Σ_{u∈A_{t+1}(x<t y)} p_t(u)`,
//! Monte Carlo (§5.4) `k` rollouts. Under a grammar over a real vocabulary
//! `A_t` can hold most of the vocabulary (inside a JSON string, tens of
//! thousands of tokens) while `p_t` puts nearly all its mass on a few. The
//! FVO-Spec law `p_t(y)Φ̂_t(y) / Σ_{u∈A_t} p_t(u)Φ̂_t(u)` (§4, Prop. 6)
//! weighs each estimate by `p_t(y)`, so the estimate of a candidate of
//! negligible mass matters only where its Φ̂ is large against the others'.
//!
//! A [`CandidateCut`] scores the *head* of `A_t` — the most probable
//! candidates under `p_t`, up to a share `top_p` of `A_t`'s mass and at
//! most `max_candidates` of them — and gives every other candidate (the
//! *tail*) one stated value ([`TailValue`]). EOS, whose `Φ_t(EOS) = 1` is
//! exact and free, is always in the head. The law's ratios on the head are
//! unchanged; what changes is the tail's total weight, from
//! `Σ_{y∈T} p_t(y)Φ̂_t(y)` to `(Σ_{y∈T} p_t(y))·v_tail`. With the head's
//! mean as `v_tail` and the head holding a share `s` of `A_t`'s mass
//! (`s ≥ top_p` unless `max_candidates` stopped it first), the tail weighs
//! `(1 − s)/s` of the head. The cut is therefore close to the uncut
//! estimator where Φ̂ varies by less than about `s/(1 − s)` between head
//! and tail, and it
//! departs from it where a tail candidate's Φ̂ is larger than the head's
//! by more than that (a low-probability token that alone keeps the prefix
//! completable): there the uncut law can prefer the tail token and the
//! cut law does not.
//!
//! `CandidateCut::default()` scores every candidate (the estimators'
//! exact behaviour).

use zapspec_core::TokenId;

use crate::error::PhiError;

/// The value every unscored candidate gets (in `log Φ̂`, on the same scale
/// as the scored ones, so a per-position shift `c_t` of the estimator's
/// values carries over).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TailValue {
    /// The head's `p_t`-weighted mean
    /// `Σ_{y∈H} p_t(y)Φ̂_t(y) / Σ_{y∈H} p_t(y)` — the plug-in estimate of
    /// `Φ̄_t` (§5.4) restricted to the head.
    #[default]
    HeadMean,
    /// The head's smallest estimate (conservative: the tail never gains
    /// weight over any scored candidate).
    HeadMin,
}

/// Which candidates of `A_t` an estimator scores (see the
/// [module docs](self)). `Default` scores all of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CandidateCut {
    /// Score the smallest set of most probable candidates (by `p_t`,
    /// ties towards the smaller token id; EOS, always kept, counted first)
    /// whose mass reaches this share of `A_t`'s mass, with at least one
    /// candidate other than EOS; in `(0, 1]`, `1` (default) keeps every
    /// candidate.
    pub top_p: f64,
    /// Score at most this many candidates (the most probable), EOS not
    /// counted; at least 1, `usize::MAX` (default) for no bound.
    pub max_candidates: usize,
    /// The value of the unscored candidates.
    pub tail: TailValue,
}

impl Default for CandidateCut {
    fn default() -> Self {
        CandidateCut {
            top_p: 1.0,
            max_candidates: usize::MAX,
            tail: TailValue::HeadMean,
        }
    }
}

/// How [`crate::OneStepCheap`] ranks the candidates it scores and when it
/// stops: the *ranked look-ahead*.
///
/// Candidates are grouped into classes of equal successor mask where the
/// constraint can tell ([`zapspec_core::LookAhead::successor_classes`]:
/// inside a JSON string almost every token is one class), every other
/// candidate is a class of its own, and classes are scored in decreasing
/// `p_t` mass, one successor mass each. Two stops end the scoring early:
///
/// * **TV bound** (`tv_epsilon = Some(ε)`): with `W` the scored classes'
///   weight `Σ p_t(c)Φ̂_t(c)` (EOS included, `Φ(EOS) = 1`) and `M` the
///   unscored mass `Σ p_t(c)`, every `Φ̂ ≤ 1` puts the unscored weight in
///   `[0, M]` under both the uncut law and the cut one (whatever value
///   `v ≤ 1` the tail gets), so each is the head's law mixed with at most
///   `a = M/(W + M)` of something else, and their total variation is at
///   most `a` (`|q − q'|₁/2 ≤ max(a, a')`). Scoring stops at the first
///   class after which `a ≤ ε`; `a` is reported
///   ([`CutStats::max_tv_bound`]), and over a sequence the per-position
///   bounds add up (a coupling position by position).
/// * **Exact argmax** (`exact_argmax`, for a caller that needs only the
///   argmax, [`crate::PhiQuery::argmax_only`]: greedy decoding): classes
///   in decreasing largest `p_t`, stopped once the best scored weight
///   `p_t(y)Φ̂_t(y)` is strictly above the largest `p_t` left, which no
///   unscored candidate can then reach (`Φ̂ ≤ 1`). The argmax is the
///   uncut one's exactly.
///
/// Unscored classes get the [`TailValue`] of [`CandidateCut::tail`]
/// computed over the scored classes. `RankedCut::default()` has no TV
/// bound (every class scored: the estimator's exact values), the exact
/// argmax stop on and classes on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankedCut {
    /// Stop once the cut's TV bound is at most this; in `(0, 1)`. `None`
    /// (default): score every class.
    pub tv_epsilon: Option<f64>,
    /// For a caller that needs only the argmax, stop once no unscored
    /// candidate can beat the best scored one (exact). Default `true`.
    pub exact_argmax: bool,
    /// Group candidates by successor mask where the constraint can.
    /// Default `true`; `false` scores candidate by candidate (the
    /// ablation).
    pub classes: bool,
}

impl Default for RankedCut {
    fn default() -> Self {
        RankedCut {
            tv_epsilon: None,
            exact_argmax: true,
            classes: true,
        }
    }
}

impl RankedCut {
    /// The TV-bounded cut at `epsilon` (classes and the argmax stop on).
    pub fn tv(epsilon: f64) -> Self {
        RankedCut {
            tv_epsilon: Some(epsilon),
            ..Self::default()
        }
    }

    /// No early stop and no classes: every candidate scored on its own
    /// (the estimator as the paper states it, with no shortcut).
    pub fn off() -> Self {
        RankedCut {
            tv_epsilon: None,
            exact_argmax: false,
            classes: false,
        }
    }

    /// Checks the fields: `tv_epsilon ∈ (0, 1)` when set.
    pub fn validate(&self) -> Result<(), PhiError> {
        if let Some(e) = self.tv_epsilon {
            if !(e > 0.0 && e < 1.0) {
                return Err(PhiError::config(
                    "ranked.tv_epsilon",
                    "must lie in (0, 1) (None scores every candidate)",
                ));
            }
        }
        Ok(())
    }

    /// A short label for tables: `""` for the default, else e.g.
    /// `"[TV ≤ 0.001]"`.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        if let Some(e) = self.tv_epsilon {
            parts.push(format!("TV ≤ {e}"));
        }
        if !self.classes {
            parts.push("no classes".into());
        }
        if !self.exact_argmax {
            parts.push("no argmax stop".into());
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("[{}]", parts.join(", "))
        }
    }
}

/// What the ranked look-ahead did, summed over the positions an estimator
/// scored ([`crate::OneStepCheap::cut_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct CutStats {
    /// Positions scored by the ranked look-ahead.
    pub positions: u64,
    /// Candidates at those positions (EOS included).
    pub candidates: u64,
    /// Classes they formed, and how many of them were scored.
    pub classes: u64,
    /// Classes scored (one successor mass each).
    pub scored: u64,
    /// Positions where the TV bound stopped the scoring early.
    pub tv_stops: u64,
    /// Positions where the exact argmax stop ended the scoring early.
    pub argmax_stops: u64,
    /// Sum and largest of the per-position TV bounds (0 where every
    /// class was scored or the argmax stop applied): the sum bounds the
    /// TV of a whole sampled sequence from the uncut one's law.
    pub sum_tv_bound: f64,
    /// Largest per-position TV bound.
    pub max_tv_bound: f64,
}

/// Reused buffers of [`CandidateCut::head`].
#[derive(Debug, Clone, Default)]
pub(crate) struct CutScratch {
    idx: Vec<usize>,
}

impl CandidateCut {
    /// A cut at mass share `top_p` and at most `max_candidates`
    /// candidates, tail [`TailValue::HeadMean`].
    pub fn new(top_p: f64, max_candidates: usize) -> Self {
        CandidateCut {
            top_p,
            max_candidates,
            ..Default::default()
        }
    }

    /// A short label for tables: `""` when off, else e.g.
    /// `"[top-p 0.99, ≤16]"`.
    pub fn label(&self) -> String {
        if self.is_off() {
            return String::new();
        }
        let mut parts = Vec::new();
        if self.top_p < 1.0 {
            parts.push(format!("top-p {}", self.top_p));
        }
        if self.max_candidates != usize::MAX {
            parts.push(format!("≤{}", self.max_candidates));
        }
        if self.tail == TailValue::HeadMin {
            parts.push("tail min".into());
        }
        format!("[{}]", parts.join(", "))
    }

    /// Whether the cut keeps every candidate of any position.
    pub fn is_off(&self) -> bool {
        self.top_p >= 1.0 && self.max_candidates == usize::MAX
    }

    /// Checks the fields: `top_p ∈ (0, 1]`, `max_candidates ≥ 1`.
    pub fn validate(&self) -> Result<(), PhiError> {
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(PhiError::config("cut.top_p", "must lie in (0, 1]"));
        }
        if self.max_candidates == 0 {
            return Err(PhiError::config(
                "cut.max_candidates",
                "need at least one candidate",
            ));
        }
        Ok(())
    }

    /// The head of a position's candidates: `ids[i]` (the members of
    /// `A_t`, any order) with logits `logits[i]` (`p_t` up to a constant).
    /// Returns the indices into `ids` of the candidates to score, sorted
    /// by index, EOS (`eos`) included when it is a candidate; `None` when
    /// every candidate is to be scored. `O(|A_t|)`: one pass for the max
    /// and the mass, one for a threshold under which the candidates
    /// together hold less than `1 − top_p` of the mass (so none of them
    /// can be in the head), then a sort of what passes it.
    pub(crate) fn head<'s>(
        &self,
        ids: &[TokenId],
        logits: &[f32],
        eos: TokenId,
        scratch: &'s mut CutScratch,
    ) -> Option<&'s [usize]> {
        let n = ids.len().min(logits.len());
        if self.top_p >= 1.0 && self.max_candidates >= n {
            return None;
        }
        let (lse, lmax) = zapspec_kernels::lse::log_sum_exp_max(&logits[..n]);
        let idx = &mut scratch.idx;
        idx.clear();
        let eos_at = (0..n).find(|&i| ids[i] == eos);
        if !lse.is_finite() || !lmax.is_finite() {
            // no mass to rank by (or an infinite logit): the first
            // candidates by index, EOS among them
            idx.extend((0..n).filter(|&i| ids[i] != eos).take(self.max_candidates));
            idx.extend(eos_at);
            idx.sort_unstable();
            return (idx.len() < n).then_some(&idx[..]);
        }
        // candidates with logit below `thr` hold < (1 − top_p) of the mass
        // together (each under (1 − top_p)/n of it), so none is in the head
        let thr = if self.top_p >= 1.0 {
            f64::NEG_INFINITY
        } else {
            lse + ((1.0 - self.top_p) / n as f64).ln()
        };
        idx.extend((0..n).filter(|&i| ids[i] != eos && logits[i] as f64 >= thr));
        let by_weight = |a: &usize, b: &usize| {
            let (la, lb) = (logits[*a], logits[*b]);
            lb.total_cmp(&la).then(ids[*a].cmp(&ids[*b]))
        };
        if idx.is_empty() {
            // EOS holds the head's mass: still score the most probable
            // other candidate, the tail's reference
            idx.extend((0..n).filter(|&i| ids[i] != eos).min_by(by_weight));
        }
        if idx.len() > self.max_candidates {
            idx.select_nth_unstable_by(self.max_candidates - 1, by_weight);
            idx.truncate(self.max_candidates);
        }
        idx.sort_unstable_by(by_weight);
        if self.top_p < 1.0 {
            let lmax = lmax as f64;
            let target = self.top_p * (lse - lmax).exp();
            let w = |i: usize| (logits[i] as f64 - lmax).exp();
            let mut mass = eos_at.map_or(0.0, w);
            let mut keep = 0usize;
            for &i in idx.iter() {
                if keep > 0 && mass >= target {
                    break;
                }
                mass += w(i);
                keep += 1;
            }
            idx.truncate(keep);
        }
        idx.extend(eos_at);
        idx.sort_unstable();
        (idx.len() < n).then_some(&idx[..])
    }

    /// The tail's value from the head's logits and values (`log Φ̂`,
    /// possibly shifted by one constant): see [`TailValue`]. `-inf` when
    /// the head has no finite value.
    pub(crate) fn tail_value(&self, head_logits: &[f32], head_values: &[f64]) -> f64 {
        let lmax = head_logits
            .iter()
            .copied()
            .filter(|l| !l.is_nan())
            .fold(f32::NEG_INFINITY, f32::max) as f64;
        if lmax == f64::NEG_INFINITY {
            return f64::NEG_INFINITY;
        }
        let weights = head_logits.iter().map(|&l| {
            if l.is_nan() {
                f64::NAN
            } else {
                (l as f64 - lmax).exp()
            }
        });
        self.tail.of_head(weights.zip(head_values.iter().copied()))
    }
}

impl TailValue {
    /// The tail's value from the head's `(weight, value)` pairs: weights
    /// linear and of any common scale (a NaN weight leaves its pair out),
    /// values `log Φ̂` (NaN: not a value). `-inf` when the head has no
    /// finite value. [`CandidateCut`] weighs candidates by their logits,
    /// the ranked look-ahead classes by their mass.
    pub(crate) fn of_head<I>(self, head: I) -> f64
    where
        I: Iterator<Item = (f64, f64)> + Clone,
    {
        match self {
            TailValue::HeadMin => {
                let m = head
                    .map(|(_, v)| v)
                    .filter(|v| !v.is_nan())
                    .fold(f64::INFINITY, f64::min);
                // an empty head: no value to take
                if m == f64::INFINITY {
                    f64::NEG_INFINITY
                } else {
                    m
                }
            }
            TailValue::HeadMean => {
                let vmax = head
                    .clone()
                    .map(|(_, v)| v)
                    .filter(|v| !v.is_nan())
                    .fold(f64::NEG_INFINITY, f64::max);
                if vmax == f64::NEG_INFINITY {
                    return f64::NEG_INFINITY;
                }
                let (mut num, mut den) = (0.0f64, 0.0f64);
                for (w, v) in head {
                    if w.is_nan() {
                        continue;
                    }
                    den += w;
                    if !v.is_nan() {
                        num += w * (v - vmax).exp();
                    }
                }
                if num > 0.0 && den > 0.0 {
                    vmax + (num / den).ln()
                } else {
                    f64::NEG_INFINITY
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_keeps_everything() {
        let mut s = CutScratch::default();
        let c = CandidateCut::default();
        assert!(c.is_off());
        assert!(c.head(&[1, 2, 3], &[0.0, 1.0, 2.0], 9, &mut s).is_none());
    }

    #[test]
    fn top_p_keeps_the_smallest_head() {
        let mut s = CutScratch::default();
        // p ∝ 0.5, 0.3, 0.15, 0.05 over ids 10, 11, 12, 13 (shuffled)
        let ids = [12, 10, 13, 11];
        let l: Vec<f32> = [0.15f32, 0.5, 0.05, 0.3].iter().map(|p| p.ln()).collect();
        let c = CandidateCut::new(0.75, usize::MAX);
        assert_eq!(c.head(&ids, &l, 99, &mut s), Some(&[1, 3][..]));
        let c = CandidateCut::new(0.5, usize::MAX);
        assert_eq!(c.head(&ids, &l, 99, &mut s), Some(&[1][..]));
        let c = CandidateCut::new(1.0, 3);
        assert_eq!(c.head(&ids, &l, 99, &mut s), Some(&[0, 1, 3][..]));
        // EOS is always kept, its mass counted, not its number
        let c = CandidateCut::new(0.5, usize::MAX);
        assert_eq!(c.head(&ids, &l, 13, &mut s), Some(&[1, 2][..]));
        let c = CandidateCut::new(0.1, usize::MAX);
        assert_eq!(c.head(&ids, &l, 10, &mut s), Some(&[1, 3][..]));
        let c = CandidateCut::new(1.0, 3);
        assert!(c.head(&ids, &l, 13, &mut s).is_none());
    }

    #[test]
    fn tail_values() {
        let c = CandidateCut::default();
        let l = [0.0f32, 0.0];
        let v = [0.5f64.ln(), 1.0f64.ln()];
        assert!((c.tail_value(&l, &v) - 0.75f64.ln()).abs() < 1e-12);
        let c = CandidateCut {
            tail: TailValue::HeadMin,
            ..c
        };
        assert!((c.tail_value(&l, &v) - 0.5f64.ln()).abs() < 1e-12);
        let c = CandidateCut::default();
        assert_eq!(
            c.tail_value(&l, &[f64::NEG_INFINITY, f64::NEG_INFINITY]),
            f64::NEG_INFINITY
        );
    }

    #[test]
    fn bad_configs_are_errors() {
        assert!(CandidateCut::new(0.0, 5).validate().is_err());
        assert!(CandidateCut::new(f64::NAN, 5).validate().is_err());
        assert!(CandidateCut::new(0.9, 0).validate().is_err());
        assert!(CandidateCut::new(0.9, 5).validate().is_ok());
    }
}
