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

/// What [`apply`] keeps from one call to the next on a matcher: the
/// estimator (rebuilt when `epsilon` changes), the matcher's current mask
/// (filled by the caller) and the two vocabulary-sized rows, so that a
/// call allocates nothing once warm.
pub(crate) struct Scratch {
    est: Option<(Option<f64>, OneStepCheap)>,
    /// The matcher's current mask (EOS bit included when it accepts).
    pub mask: TokenSet,
    el: Vec<f32>,
    out: Vec<f64>,
    stops: Vec<(usize, f32)>,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            est: None,
            mask: TokenSet::new(0),
            el: Vec::new(),
            out: Vec::new(),
            stops: Vec::new(),
        }
    }
}

/// `logits` (the model's row, `logits.len()` ids) masked by the matcher's
/// current mask (`scratch.mask`) and reweighted: an allowed id gets
/// `+ log Φ̂(y) + c` (one constant `c` for the row, which the softmax
/// cancels), every other id `-inf`. Stop tokens stand for the engine's
/// EOS: their logits' mass is EOS's, and each allowed stop token gets
/// EOS's Φ̂ (1). Without stop tokens (`no_stop`), ending is scored with
/// the largest logit's mass.
pub(crate) fn apply(
    m: &EarleyMatcher,
    logits: &mut [f32],
    stop: &[TokenId],
    no_stop: bool,
    epsilon: Option<f64>,
    scratch: &mut Scratch,
) -> Result<PhiRow, PhiError> {
    let ev = m.vocab_size();
    let eos = m.eos();
    let n = logits.len();
    let Scratch {
        est,
        mask,
        el,
        out,
        stops,
    } = scratch;
    // the engine's logits: the model's, stop tokens folded into EOS
    el.clear();
    el.extend_from_slice(&logits[..n.min(ev)]);
    el.resize(ev, f32::NEG_INFINITY);
    stops.clear();
    stops.extend(
        stop.iter()
            .map(|&s| s as usize)
            .filter(|&s| s < n)
            .map(|s| (s, logits[s])),
    );
    for &(s, _) in stops.iter() {
        if s < ev {
            el[s] = f32::NEG_INFINITY;
        }
    }
    let stop_mass = if no_stop || stop.is_empty() {
        logits.iter().copied().fold(f32::NEG_INFINITY, f32::max)
    } else {
        let mx = stops
            .iter()
            .map(|&(_, l)| l)
            .fold(f32::NEG_INFINITY, f32::max);
        if mx.is_finite() {
            mx + stops.iter().map(|&(_, l)| (l - mx).exp()).sum::<f32>().ln()
        } else {
            mx
        }
    };
    if (eos as usize) < ev {
        el[eos as usize] = stop_mass;
    }
    let phi = match est {
        Some((e, p)) if *e == epsilon => p,
        _ => {
            let p = match epsilon {
                Some(e) => OneStepCheap::bounded(e)?,
                None => OneStepCheap::new(),
            };
            &mut est.insert((epsilon, p)).1
        }
    };
    phi.reset_cut_stats();
    out.clear();
    out.resize(ev, f64::NEG_INFINITY);
    phi.log_phi_into_shifted(m, mask, el, out)?;
    let accepts = mask.contains(eos);
    let eos_value = out.get(eos as usize).copied().unwrap_or(f64::NEG_INFINITY);
    let add = |l: f32, v: f64| {
        if v == f64::NEG_INFINITY {
            f32::NEG_INFINITY
        } else {
            l + v as f32
        }
    };
    for (j, l) in logits.iter_mut().enumerate() {
        let v = if j < ev && j != eos as usize && mask.contains(j as TokenId) {
            out[j]
        } else {
            f64::NEG_INFINITY
        };
        *l = add(*l, v);
    }
    // a stop token ends as EOS does (its own logit, EOS's Φ̂)
    let stop_value = if accepts && !no_stop {
        eos_value
    } else {
        f64::NEG_INFINITY
    };
    for &(s, l) in stops.iter() {
        logits[s] = add(l, stop_value);
    }
    Ok(PhiRow {
        tv_bound: phi.cut_stats().max_tv_bound,
    })
}
