//! Future validity in plain decoding: a row of logits reweighted by the
//! OneStep-Cheap estimate Φ̂ (the future-validity paper's Doob transform
//! with h = Φ̂), for `GrammarMatcher.apply_phi_bias_inplace`.
//!
//! Local masking samples μ^proj: the model's law restricted to the tokens
//! the grammar allows now, whether or not the model is likely to finish a
//! valid text after them. Multiplying each allowed token's probability by
//! Φ̂(y), the estimated probability that the text can still be completed
//! after `y`, moves the law towards μ*, the model conditioned on validity.
//! OneStep-Cheap reads Φ̂(y) from the same logits: the mass those logits
//! give the tokens allowed after `y` (Def. 9). It is an estimate, and its
//! quality depends on the model and grammar (`examples/results/fvo-race/`
//! has its measured effect); `epsilon` bounds the extra TV error of
//! scoring only the head of the candidates (`zapspec_phi::RankedCut`).

use zapspec_core::{Constraint, TokenId, TokenSet};
use zapspec_earley::EarleyMatcher;
use zapspec_phi::{OneStepCheap, PhiError};

/// What one reweighting did.
pub(crate) struct PhiRow {
    /// The TV bound of the cut at this position (0 when every class of
    /// candidates was scored).
    pub tv_bound: f64,
}

/// `logits` (the model's row, `logits.len()` ids) masked by the matcher's
/// current mask and reweighted: an allowed id gets `+ log Φ̂(y) + c` (one
/// constant `c` for the row, which the softmax cancels), every other id
/// `-inf`. Stop tokens stand for the engine's EOS: their logits' mass is
/// EOS's, and each allowed stop token gets EOS's Φ̂ (1). Without stop
/// tokens (`no_stop`), ending is scored with the largest logit's mass.
/// `mask` is the matcher's current mask (EOS bit included when it accepts).
pub(crate) fn apply(
    m: &EarleyMatcher,
    mask: &TokenSet,
    logits: &mut [f32],
    stop: &[TokenId],
    no_stop: bool,
    epsilon: Option<f64>,
) -> Result<PhiRow, PhiError> {
    let ev = m.vocab_size();
    let eos = m.eos();
    let n = logits.len();
    let is_stop = |t: usize| stop.iter().any(|&s| s as usize == t);
    // the engine's logits: the model's, stop tokens folded into EOS
    let mut el: Vec<f32> = (0..ev)
        .map(|i| {
            if i < n && !is_stop(i) {
                logits[i]
            } else {
                f32::NEG_INFINITY
            }
        })
        .collect();
    let stop_mass = if no_stop || stop.is_empty() {
        logits.iter().copied().fold(f32::NEG_INFINITY, f32::max)
    } else {
        let ls: Vec<f32> = stop
            .iter()
            .filter(|&&s| (s as usize) < n)
            .map(|&s| logits[s as usize])
            .collect();
        let mx = ls.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        if mx.is_finite() {
            mx + ls.iter().map(|&l| (l - mx).exp()).sum::<f32>().ln()
        } else {
            mx
        }
    };
    if (eos as usize) < ev {
        el[eos as usize] = stop_mass;
    }
    let mut phi = match epsilon {
        Some(e) => OneStepCheap::bounded(e)?,
        None => OneStepCheap::new(),
    };
    let mut out = vec![f64::NEG_INFINITY; ev];
    phi.log_phi_into_shifted(m, mask, &el, &mut out)?;
    let accepts = mask.contains(eos);
    let eos_value = out.get(eos as usize).copied().unwrap_or(f64::NEG_INFINITY);
    for (j, l) in logits.iter_mut().enumerate() {
        let v = if is_stop(j) {
            if accepts && !no_stop {
                eos_value
            } else {
                f64::NEG_INFINITY
            }
        } else if j < ev && j != eos as usize && mask.contains(j as TokenId) {
            out[j]
        } else {
            f64::NEG_INFINITY
        };
        *l = if v == f64::NEG_INFINITY {
            f32::NEG_INFINITY
        } else {
            *l + v as f32
        };
    }
    Ok(PhiRow {
        tv_bound: phi.cut_stats().max_tv_bound,
    })
}
