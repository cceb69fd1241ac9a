//! OneStep-Cheap with a [`CandidateCut`] against an independent reference:
//! the head chosen by sorting `A_t` by `p_t` (the cut's definition), the
//! head's values from [`onestep_cheap_reference`] (Def. 9, eq. (1)), the
//! tail's value from the head's reference values; and the cut at
//! `top_p = 1`, no bound, equal bit for bit to the uncut estimator.

mod common;

use proptest::prelude::*;
use zapspec_core::{Constraint, TokenId};
use zapspec_phi::{
    onestep_cheap_reference, valid_set, CandidateCut, DfaConstraint, NoModel, OneStepCheap,
    PhiEstimator, PhiQuery, TailValue, ValidList,
};

fn dfa(n: usize, v: usize, seed: u64, dead: u64) -> Option<DfaConstraint> {
    common::random_dfa(n, v, seed, dead)
}

fn logits(v: usize, seed: u64, scale: f32) -> Vec<f32> {
    common::hashed_row(v, seed, scale, 7)
}

/// The head by the cut's definition (EOS kept and its mass counted, at
/// least one other candidate), from a full sort in f64.
/// `None` when a mass sum lies too close to the boundary to decide.
fn reference_head(
    ids: &[TokenId],
    lg: &[f32],
    eos: TokenId,
    cut: &CandidateCut,
) -> Option<Vec<TokenId>> {
    let lmax = ids
        .iter()
        .map(|&y| lg[y as usize] as f64)
        .fold(f64::NEG_INFINITY, f64::max);
    let w = |y: TokenId| (lg[y as usize] as f64 - lmax).exp();
    let z: f64 = ids.iter().map(|&y| w(y)).sum();
    let mut order: Vec<TokenId> = ids.iter().copied().filter(|&y| y != eos).collect();
    order.sort_by(|&a, &b| lg[b as usize].total_cmp(&lg[a as usize]).then(a.cmp(&b)));
    let mut mass = if ids.contains(&eos) { w(eos) } else { 0.0 };
    let mut head = Vec::new();
    for &y in &order {
        if head.len() >= cut.max_candidates {
            break;
        }
        if cut.top_p < 1.0 && !head.is_empty() && mass >= cut.top_p * z {
            break;
        }
        mass += w(y);
        head.push(y);
        if cut.top_p < 1.0 && ((mass - cut.top_p * z) / z).abs() < 1e-5 {
            return None;
        }
    }
    if ids.contains(&eos) {
        head.push(eos);
    }
    head.sort_unstable();
    Some(head)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn cut_matches_reference(
        n in 1usize..5, v in 3usize..300, seed in any::<u64>(), walk in prop::collection::vec(0u32..300, 0..4),
        scale in 0.1f32..20.0, dead in 2u64..6,
        top_p in prop_oneof![Just(1.0f64), 0.05f64..1.0], max in prop_oneof![Just(usize::MAX), 1usize..20],
        min_tail in any::<bool>(),
    ) {
        let Some(mut c) = dfa(n, v, seed, dead) else { return Ok(()) };
        for t in walk {
            let _ = c.advance(t % v as u32);
        }
        let lg = logits(v, seed, scale);
        let tail = if min_tail { TailValue::HeadMin } else { TailValue::HeadMean };
        let cut = CandidateCut { top_p, max_candidates: max, tail };
        let mut est = OneStepCheap::with_cut(cut).unwrap();
        let mask = valid_set(&c);
        let ids: Vec<TokenId> = mask.iter().collect();
        let want = onestep_cheap_reference(&c, &lg).unwrap();
        let mut got = vec![f64::NAN; v];
        let q = PhiQuery::new(&[], &c, &mask, &lg);
        let mut nm = NoModel::new(v);
        est.log_phi_into(&q, &mut nm, &mut got).unwrap();
        let Some(head) = reference_head(&ids, &lg, c.eos(), &cut) else { return Ok(()) };
        // the tail's value from the head's reference values
        let hl: Vec<f64> = head.iter().map(|&y| lg[y as usize] as f64).collect();
        let hv: Vec<f64> = head.iter().map(|&y| want[y as usize]).collect();
        let tail_want = match tail {
            TailValue::HeadMin => hv.iter().copied().fold(f64::INFINITY, f64::min),
            TailValue::HeadMean => {
                let m = hl.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let den: f64 = hl.iter().map(|l| (l - m).exp()).sum();
                let num: f64 = hl.iter().zip(&hv).map(|(l, v)| (l - m).exp() * v.exp()).sum();
                if num > 0.0 { (num / den).ln() } else { f64::NEG_INFINITY }
            }
        };
        for &y in &ids {
            let w = if head.binary_search(&y).is_ok() { want[y as usize] } else { tail_want };
            let g = got[y as usize];
            if w == f64::NEG_INFINITY || g == f64::NEG_INFINITY {
                prop_assert!(w.exp() < 1e-12 && g.exp() < 1e-12, "token {y}: {g} vs {w}");
            } else {
                prop_assert!((g - w).abs() <= 1e-6, "token {y}: {g} vs {w} (head {:?})", head);
            }
        }
        // the shifted compact path: the same values up to one constant
        let id_logits: Vec<f32> = ids.iter().map(|&y| lg[y as usize]).collect();
        let mut compact = vec![f64::NAN; ids.len()];
        PhiEstimator::<_, NoModel>::log_phi_shifted_compact(
            &mut est, &q, &mut nm, ValidList::new(&ids, &id_logits), &mut compact,
        ).unwrap().unwrap();
        let mut shift = None;
        for (i, &y) in ids.iter().enumerate() {
            let (g, s) = (got[y as usize], compact[i]);
            prop_assert!(!s.is_nan());
            if g == f64::NEG_INFINITY || g < -700.0 {
                continue;
            }
            let d = s - g;
            let d0 = *shift.get_or_insert(d);
            prop_assert!((d - d0).abs() <= 1e-6, "token {y}: shift {d} vs {d0}");
        }
    }

    #[test]
    fn cut_off_is_the_uncut_estimator(
        n in 1usize..5, v in 3usize..200, seed in any::<u64>(), scale in 0.1f32..20.0,
    ) {
        let Some(c) = dfa(n, v, seed, 3) else { return Ok(()) };
        let lg = logits(v, seed, scale);
        let mask = valid_set(&c);
        let q = PhiQuery::new(&[], &c, &mask, &lg);
        let mut nm = NoModel::new(v);
        let (mut a, mut b) = (vec![f64::NAN; v], vec![f64::NAN; v]);
        PhiEstimator::<_, NoModel>::log_phi_shifted(&mut OneStepCheap::new(), &q, &mut nm, &mut a).unwrap();
        let mut off = OneStepCheap::with_cut(CandidateCut::default()).unwrap();
        PhiEstimator::<_, NoModel>::log_phi_shifted(&mut off, &q, &mut nm, &mut b).unwrap();
        // a cut that keeps everything at this position is no cut either
        let mut all = OneStepCheap::with_cut(CandidateCut::new(1.0, v)).unwrap();
        let mut d = vec![f64::NAN; v];
        PhiEstimator::<_, NoModel>::log_phi_shifted(&mut all, &q, &mut nm, &mut d).unwrap();
        for y in 0..v {
            prop_assert_eq!(a[y].to_bits(), b[y].to_bits());
            prop_assert_eq!(a[y].to_bits(), d[y].to_bits());
        }
    }
}

#[test]
fn bad_cuts_are_errors() {
    assert!(OneStepCheap::with_cut(CandidateCut::new(0.0, 4)).is_err());
    assert!(OneStepCheap::with_cut(CandidateCut::new(0.5, 0)).is_err());
}
