//! OneStep-Cheap's ranked look-ahead ([`RankedCut`]) against the uncut
//! estimator ([`onestep_cheap_reference`], a fresh mask per candidate) on
//! random DFAs and logits: the law `p_t·Φ̂_t` it gives is within its
//! reported TV bound of the uncut law, and that bound within ε; the exact
//! argmax stop keeps the uncut law's argmax; and bad settings are typed
//! errors.

mod common;

use proptest::prelude::*;
use zapspec_core::{Constraint, TokenId, TokenSet};
use zapspec_phi::{
    onestep_cheap_reference, valid_set, DfaConstraint, NoModel, OneStepCheap, PhiError,
    PhiEstimator, PhiQuery, RankedCut,
};

fn dfa(n: usize, v: usize, seed: u64, dead: u64) -> Option<DfaConstraint> {
    common::random_dfa(n, v, seed, dead)
}

fn logits(v: usize, seed: u64, scale: f32) -> Vec<f32> {
    common::hashed_row(v, seed, scale, 11)
}

/// The law `p_t(y)·exp(log_phi[y])` renormalised over `mask`, in f64.
fn law(lg: &[f32], log_phi: &[f64], mask: &TokenSet) -> Vec<(TokenId, f64)> {
    let w: Vec<(TokenId, f64)> = mask
        .iter()
        .map(|y| (y, lg[y as usize] as f64 + log_phi[y as usize]))
        .collect();
    let m = w.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
    let z: f64 = w.iter().map(|x| (x.1 - m).exp()).sum();
    w.into_iter().map(|(y, l)| (y, (l - m).exp() / z)).collect()
}

fn tv(a: &[(TokenId, f64)], b: &[(TokenId, f64)]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x.1 - y.1).abs()).sum::<f64>() / 2.0
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn tv_cut_is_within_its_bound(
        n in 2usize..12, v in 6usize..160, seed in any::<u64>(), dead in 2u64..6,
        walk in prop::collection::vec(any::<u32>(), 0..4),
        scale in 0.5f32..16.0, eps in 1e-4f64..0.3, shifted in any::<bool>(),
    ) {
        let Some(mut c) = dfa(n, v, seed, dead) else { return Ok(()) };
        for t in walk {
            let allowed: Vec<TokenId> = valid_set(&c).iter().filter(|&y| y != c.eos()).collect();
            if allowed.is_empty() {
                break;
            }
            c.advance(allowed[t as usize % allowed.len()]).unwrap();
        }
        let mask = valid_set(&c);
        if mask.is_empty() {
            return Ok(());
        }
        let lg = logits(v, seed ^ 0x5eed, scale);
        let want = onestep_cheap_reference(&c, &lg).unwrap();
        if mask.iter().all(|y| want[y as usize] == f64::NEG_INFINITY) {
            return Ok(());
        }
        let mut est = OneStepCheap::bounded(eps).unwrap();
        let q = PhiQuery::new(&[], &c, &mask, &lg);
        let mut nm = NoModel::new(v);
        let mut got = vec![f64::NAN; v];
        if shifted {
            est.log_phi_shifted(&q, &mut nm, &mut got).unwrap();
        } else {
            est.log_phi_into(&q, &mut nm, &mut got).unwrap();
        }
        for y in mask.iter() {
            prop_assert!(!got[y as usize].is_nan(), "token {} has no value", y);
        }
        let (exact, cut) = (law(&lg, &want, &mask), law(&lg, &got, &mask));
        let d = tv(&exact, &cut);
        let st = est.cut_stats();
        prop_assert!(st.max_tv_bound <= eps, "bound {} > ε {}", st.max_tv_bound, eps);
        prop_assert!(d <= st.max_tv_bound + 1e-6, "TV {} > reported bound {}", d, st.max_tv_bound);
    }

    #[test]
    fn argmax_stop_keeps_the_argmax(
        n in 2usize..12, v in 6usize..160, seed in any::<u64>(), dead in 2u64..6,
        walk in prop::collection::vec(any::<u32>(), 0..4),
        scale in 0.5f32..16.0, eps in prop::option::of(1e-4f64..0.3),
    ) {
        let Some(mut c) = dfa(n, v, seed, dead) else { return Ok(()) };
        for t in walk {
            let allowed: Vec<TokenId> = valid_set(&c).iter().filter(|&y| y != c.eos()).collect();
            if allowed.is_empty() {
                break;
            }
            c.advance(allowed[t as usize % allowed.len()]).unwrap();
        }
        let mask = valid_set(&c);
        if mask.is_empty() {
            return Ok(());
        }
        let lg = logits(v, seed ^ 0xa11, scale);
        let want = onestep_cheap_reference(&c, &lg).unwrap();
        let ranked = RankedCut { tv_epsilon: eps, ..RankedCut::default() };
        let mut est = OneStepCheap::with_ranked(ranked).unwrap();
        let q = PhiQuery::new(&[], &c, &mask, &lg).with_argmax_only(true);
        let mut nm = NoModel::new(v);
        let mut got = vec![f64::NAN; v];
        est.log_phi_shifted(&q, &mut nm, &mut got).unwrap();
        let score = |phi: &[f64], y: TokenId| lg[y as usize] as f64 + phi[y as usize];
        let best = |phi: &[f64]| {
            mask.iter().fold(None::<(TokenId, f64)>, |b, y| {
                let s = score(phi, y);
                match b {
                    Some((_, bs)) if bs >= s => b,
                    _ if s == f64::NEG_INFINITY => b,
                    _ => Some((y, s)),
                }
            })
        };
        let (Some((wy, ws)), Some((gy, _))) = (best(&want), best(&got)) else {
            return Ok(());
        };
        // the token it picks is an argmax of the uncut law (ties aside)
        prop_assert!(
            (score(&want, gy) - ws).abs() <= 1e-9 * ws.abs().max(1.0),
            "picked {} ({}), uncut argmax {} ({})", gy, score(&want, gy), wy, ws
        );
    }
}

#[test]
fn bad_bounds_are_errors() {
    for e in [0.0, -1e-3, 1.0, 2.0, f64::NAN] {
        let r = OneStepCheap::bounded(e);
        assert!(
            matches!(
                r,
                Err(PhiError::Config {
                    field: "ranked.tv_epsilon",
                    ..
                })
            ),
            "ε = {e}: {r:?}"
        );
    }
    assert!(OneStepCheap::bounded(1e-3).is_ok());
    assert!(OneStepCheap::with_ranked(RankedCut::off()).is_ok());
}

/// The bound does stop the scoring on peaked logits over many candidates
/// (so the property above is not checked only on uncut positions).
#[test]
fn the_tv_bound_cuts_peaked_positions() {
    let (mut stops, mut scored, mut classes) = (0, 0, 0);
    for seed in 0..40u64 {
        let Some(c) = dfa(6, 150, seed, 3) else {
            continue;
        };
        let mask = valid_set(&c);
        let lg = logits(150, seed, 24.0);
        let mut est = OneStepCheap::bounded(0.05).unwrap();
        let q = PhiQuery::new(&[], &c, &mask, &lg);
        let mut out = vec![f64::NAN; 150];
        est.log_phi_shifted(&q, &mut NoModel::new(150), &mut out)
            .unwrap();
        let st = est.cut_stats();
        stops += st.tv_stops;
        scored += st.scored;
        classes += st.classes;
    }
    assert!(stops >= 20, "{stops} stops");
    assert!(scored * 4 < classes, "{scored} of {classes} classes scored");
}
