//! OneStep-Cheap (Def. 9, eq. (1)) under the Earley matcher, on random
//! grammars over a vocabulary with multi-byte tokens, against the
//! straightforward evaluation `onestep_cheap_reference` (a fresh mask per
//! candidate): equal with every candidate scored (the default), and with a
//! candidate cut the head's values equal the reference's and the tail
//! shares one value (the head's `p_t`-weighted mean). The Earley
//! matcher's successor classes, checked by brute force (every member of a
//! class advanced, its mask compared), and the ranked look-ahead over them:
//! exact without a bound, within its reported TV bound with one, the
//! argmax kept by the argmax stop.

use std::sync::Arc;

use proptest::prelude::*;
use zapspec::{CandidateCut, Constraint, OneStepCheap, PhiEstimator};
use zapspec_core::{LookAhead, SuccessorClasses, TokenId, TokenSet, Vocabulary};
use zapspec_phi::RankedCut;
use zapspec_phi::{onestep_cheap_reference, valid_set, NoModel, PhiQuery};
use zapspec_testkit::toy::splitmix64;
use zapspec_vocab::TokenVocab;

/// Bytes, some multi-byte tokens (several reach the same parser state,
/// some cross terminal boundaries), EOS last.
fn vocab() -> Arc<TokenVocab> {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for t in [
        "ab", "abc", "\"a", "a\"", "12", "1,", ",2", "[1", "]", "x:", "\":", "cab", "yz", "zz",
    ] {
        tokens.push(t.as_bytes().to_vec());
    }
    tokens.push(Vec::new());
    let eos = (tokens.len() - 1) as TokenId;
    Arc::new(TokenVocab::from_tokens("bytes+", tokens, &[], eos).unwrap())
}

/// A grammar from random fragments.
fn grammar(pieces: &[usize]) -> String {
    const FRAGMENTS: [&str; 7] = [
        "\"\\\"\" [a-c]* \"\\\"\"",
        "[0-9]+",
        "\"[\" [0-9]* (\",\" [0-9]+)* \"]\"",
        "(\"x\" | \"yz\")",
        "\"ab\"",
        "(\"x:\" [a-c]+)?",
        "[a-z]*",
    ];
    let body: Vec<&str> = pieces
        .iter()
        .map(|&i| FRAGMENTS[i % FRAGMENTS.len()])
        .collect();
    format!("root ::= {}\n", body.join(" "))
}

fn logits(v: usize, seed: u64, scale: f32) -> Vec<f32> {
    (0..v)
        .map(|i| {
            let h = splitmix64(seed ^ splitmix64(i as u64 + 3));
            ((h >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn earley_onestep_matches_reference(
        pieces in prop::collection::vec(0usize..7, 1..4),
        walk in prop::collection::vec(any::<u32>(), 0..6),
        seed in any::<u64>(), scale in 0.5f32..12.0,
        top_p in 0.3f64..0.999, max in 1usize..8,
    ) {
        let vocab = vocab();
        let v = vocab.len();
        let mut c = zapspec::gbnf(vocab.clone(), &grammar(&pieces)).unwrap();
        for t in walk {
            // a random allowed token (EOS excluded)
            let allowed: Vec<TokenId> = valid_set(&c).iter().filter(|&y| y != c.eos()).collect();
            if allowed.is_empty() {
                break;
            }
            c.advance(allowed[t as usize % allowed.len()]).unwrap();
        }
        let lg = logits(v, seed, scale);
        let want = onestep_cheap_reference(&c, &lg).unwrap();
        let mask = valid_set(&c);
        let q = PhiQuery::new(&[], &c, &mask, &lg);
        let mut nm = NoModel::new(v);
        let mut got = vec![f64::NAN; v];
        OneStepCheap::new().log_phi_into(&q, &mut nm, &mut got).unwrap();
        for y in mask.iter() {
            let (g, w) = (got[y as usize], want[y as usize]);
            if w == f64::NEG_INFINITY {
                prop_assert_eq!(g, f64::NEG_INFINITY, "token {}", y);
            } else {
                prop_assert!((g - w).abs() <= 1e-6, "token {y}: {g} vs {w}");
            }
        }
        // the cut: the head (the most probable candidates) keeps the
        // reference values, the tail one value
        let cut = CandidateCut::new(top_p, max);
        let mut cut_vals = vec![f64::NAN; v];
        OneStepCheap::with_cut(cut).unwrap().log_phi_into(&q, &mut nm, &mut cut_vals).unwrap();
        let mut by_p: Vec<TokenId> = mask.iter().filter(|&y| y != c.eos()).collect();
        by_p.sort_by(|&a, &b| lg[b as usize].total_cmp(&lg[a as usize]).then(a.cmp(&b)));
        // the most probable candidate is always scored
        if let Some(&top) = by_p.first() {
            let (g, w) = (cut_vals[top as usize], want[top as usize]);
            prop_assert!(g == w || (g - w).abs() <= 1e-6, "top {top}: {g} vs {w}");
        }
        let differing: Vec<f64> = by_p
            .iter()
            .filter(|&&y| {
                let (g, w) = (cut_vals[y as usize], want[y as usize]);
                !(g == w || (g - w).abs() <= 1e-6)
            })
            .map(|&y| cut_vals[y as usize])
            .collect();
        prop_assert!(differing.windows(2).all(|w| w[0].to_bits() == w[1].to_bits()));
        prop_assert!(by_p.len() - differing.len() >= by_p.len().min(1));
        if mask.contains(c.eos()) {
            prop_assert_eq!(cut_vals[c.eos() as usize], 0.0);
        }
    }
}

/// The law `p_t(y)·exp(log_phi[y])` renormalised over `mask`.
fn law(lg: &[f32], log_phi: &[f64], mask: &TokenSet) -> Vec<f64> {
    let w: Vec<f64> = mask
        .iter()
        .map(|y| lg[y as usize] as f64 + log_phi[y as usize])
        .collect();
    let m = w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let z: f64 = w.iter().map(|l| (l - m).exp()).sum();
    w.into_iter().map(|l| (l - m).exp() / z).collect()
}

/// A random walk of allowed non-EOS tokens.
fn walked(pieces: &[usize], walk: &[u32]) -> zapspec::EarleyMatcher {
    let mut c = zapspec::gbnf(vocab(), &grammar(pieces)).unwrap();
    for &t in walk {
        let allowed: Vec<TokenId> = valid_set(&c).iter().filter(|&y| y != c.eos()).collect();
        if allowed.is_empty() {
            break;
        }
        c.advance(allowed[t as usize % allowed.len()]).unwrap();
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn earley_successor_classes_have_equal_masks(
        pieces in prop::collection::vec(0usize..7, 1..4),
        walk in prop::collection::vec(any::<u32>(), 0..6),
    ) {
        let c = walked(&pieces, &walk);
        let mask = valid_set(&c);
        let mut cls = SuccessorClasses::new();
        if !c.successor_classes(&mask, &mut cls) {
            return Ok(());
        }
        let after = |y: TokenId| {
            let mut f = c.fork();
            f.advance(y).unwrap();
            valid_set(&f)
        };
        let mut listed: Vec<TokenId> = Vec::new();
        for class in cls.iter() {
            prop_assert!(!class.is_empty());
            let m0 = after(class[0]);
            for &y in class {
                prop_assert!(mask.contains(y) && y != c.eos(), "{} listed, not a candidate", y);
                prop_assert_eq!(&after(y), &m0, "class of {} and {}", class[0], y);
                listed.push(y);
            }
        }
        listed.sort_unstable();
        let n = listed.len();
        listed.dedup();
        prop_assert_eq!(listed.len(), n, "a token listed twice");
        let rest: Vec<TokenId> = mask
            .iter()
            .filter(|&y| y != c.eos() && listed.binary_search(&y).is_err())
            .collect();
        match cls.rest() {
            Some(r) => {
                prop_assert!(rest.contains(&r));
                let m0 = after(r);
                for &y in &rest {
                    prop_assert_eq!(&after(y), &m0, "rest: {} and {}", r, y);
                }
            }
            None => prop_assert!(rest.is_empty(), "unlisted candidates without a rest class"),
        }
    }

    #[test]
    fn earley_ranked_lookahead_against_the_reference(
        pieces in prop::collection::vec(0usize..7, 1..4),
        walk in prop::collection::vec(any::<u32>(), 0..6),
        seed in any::<u64>(), scale in 0.5f32..12.0, eps in 1e-4f64..0.2,
    ) {
        let c = walked(&pieces, &walk);
        let v = c.vocab_size();
        let mask = valid_set(&c);
        if mask.is_empty() {
            return Ok(());
        }
        let lg = logits(v, seed, scale);
        let want = onestep_cheap_reference(&c, &lg).unwrap();
        let mut nm = NoModel::new(v);
        let q = PhiQuery::new(&[], &c, &mask, &lg);
        // no bound: classes scored once each, the reference's values
        let mut got = vec![f64::NAN; v];
        OneStepCheap::with_ranked(RankedCut::default()).unwrap()
            .log_phi_into(&q, &mut nm, &mut got).unwrap();
        for y in mask.iter() {
            let (g, w) = (got[y as usize], want[y as usize]);
            prop_assert!(g == w || (g - w).abs() <= 1e-6, "token {y}: {g} vs {w}");
        }
        if mask.iter().all(|y| want[y as usize] == f64::NEG_INFINITY) {
            return Ok(());
        }
        // a bound: the law within it
        let mut est = OneStepCheap::bounded(eps).unwrap();
        let mut cut = vec![f64::NAN; v];
        est.log_phi_shifted(&q, &mut nm, &mut cut).unwrap();
        let (a, b) = (law(&lg, &want, &mask), law(&lg, &cut, &mask));
        let d = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum::<f64>() / 2.0;
        let bound = est.cut_stats().max_tv_bound;
        prop_assert!(bound <= eps && d <= bound + 1e-6, "TV {d}, bound {bound}, ε {eps}");
        // the argmax stop: the uncut law's argmax
        let mut am = vec![f64::NAN; v];
        OneStepCheap::new()
            .log_phi_shifted(&q.with_argmax_only(true), &mut nm, &mut am).unwrap();
        let pick = |phi: &[f64]| {
            mask.iter()
                .map(|y| (y, lg[y as usize] as f64 + phi[y as usize]))
                .fold((0, f64::NEG_INFINITY), |b, x| if x.1 > b.1 { x } else { b })
        };
        let ((_, ws), (gy, _)) = (pick(&want), pick(&am));
        let gs = lg[gy as usize] as f64 + want[gy as usize];
        prop_assert!((gs - ws).abs() <= 1e-6, "picked {gy} ({gs}), best {ws}");
    }
}
