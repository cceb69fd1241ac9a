//! OneStep-Cheap's fast paths (per-position successor-mass cache keyed by
//! `mask_key` / `successor_mask_key`, sparse successor lists, the
//! vectorised normaliser) against the straightforward evaluation of
//! Def. 9, eq. (1) ([`onestep_cheap_reference`]: a fresh mask per
//! candidate, f64 log-softmax) on random DFAs, Dyck languages and tries,
//! including masses far below f32 range.

use std::sync::Arc;

use proptest::prelude::*;
use zapspec_core::{Constraint, LookAhead, Rejected, RollbackError, TokenId, TokenSet};
use zapspec_phi::exact::regular::DEAD;
use zapspec_phi::{
    onestep_cheap_reference, valid_set, Dfa, DfaConstraint, NoModel, OneStepCheap, PhiEstimator,
    PhiQuery, ValidList,
};
use zapspec_testkit::toy::{splitmix64, BigramLm};
use zapspec_testkit::TokenTrie;
use zapspec_testkit::{DyckConstraint, DyckSpec, TrieConstraint};

/// Hides a constraint's [`LookAhead`] hooks (sparse lists, mask keys), so
/// OneStep-Cheap takes its generic `fill_mask` path.
#[derive(Clone)]
struct Opaque<C>(C);

impl<C: Constraint> Constraint for Opaque<C> {
    fn vocab_size(&self) -> usize {
        self.0.vocab_size()
    }
    fn eos(&self) -> TokenId {
        self.0.eos()
    }
    fn fill_mask(&mut self, mask: &mut TokenSet) {
        self.0.fill_mask(mask)
    }
    fn advance(&mut self, t: TokenId) -> Result<(), Rejected> {
        self.0.advance(t)
    }
    fn rollback(&mut self, n: usize) -> Result<(), RollbackError> {
        self.0.rollback(n)
    }
    fn is_accepting(&self) -> bool {
        self.0.is_accepting()
    }
    fn is_finished(&self) -> bool {
        self.0.is_finished()
    }
    fn num_tokens(&self) -> usize {
        self.0.num_tokens()
    }
}

/// Every look-ahead hook left at its default ("not available").
impl<C: Constraint> LookAhead for Opaque<C> {}

/// Logits: Gaussian-ish values times `scale`, plus `junk` subtracted from
/// every third token (masses down to e^-junk).
fn logits(v: usize, seed: u64, scale: f32, junk: f32) -> Vec<f32> {
    (0..v)
        .map(|i| {
            let h = splitmix64(seed ^ splitmix64(i as u64));
            let u = (h >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            u * scale - if i % 3 == 1 { junk } else { 0.0 }
        })
        .collect()
}

/// Compares in probability space: |Φ̂ − Φ_ref| ≤ 1e-6·Φ_ref, and equal
/// supports (`-inf` exactly where the reference is 0).
fn check<C: LookAhead>(c: &C, lg: &[f32]) -> Result<(), TestCaseError> {
    let want = onestep_cheap_reference(c, lg).unwrap();
    let mut lm = BigramLm::new(c.vocab_size(), 0);
    let mut one = OneStepCheap::new();
    let got = one.log_phi(c, &mut lm, lg).unwrap();
    let opaque = one.log_phi(&Opaque(c.clone()), &mut lm, lg).unwrap();
    let mask = valid_set(c);
    let mut into = vec![f64::NAN; c.vocab_size()];
    let q = PhiQuery::new(&[], c, &mask, lg);
    one.log_phi_into(&q, &mut NoModel::new(c.vocab_size()), &mut into)
        .unwrap();
    for y in 0..c.vocab_size() {
        let (w, g, o) = (want[y], got[y], opaque[y]);
        prop_assert!(!g.is_nan() && !o.is_nan());
        if w == f64::NEG_INFINITY {
            prop_assert_eq!(g, f64::NEG_INFINITY, "token {}", y);
            prop_assert_eq!(o, f64::NEG_INFINITY, "token {}", y);
        } else {
            // relative error in Φ, computed in log space (Φ may be 1e-200)
            prop_assert!((g - w).abs() <= 1e-6, "token {y}: {g} vs {w}");
            prop_assert!((o - w).abs() <= 1e-6, "token {y}: opaque {o} vs {w}");
        }
        if mask.contains(y as TokenId) {
            prop_assert_eq!(into[y].to_bits(), g.to_bits());
        } else {
            prop_assert!(into[y].is_nan(), "log_phi_into wrote outside the mask");
        }
    }
    check_shifted(c, lg, &want)?;
    // far from 0 the unnormalised sums over- or underflow f64 and are
    // re-summed relative to their own maximum
    for off in [800.0f32, -800.0] {
        let lo: Vec<f32> = lg.iter().map(|&x| x + off).collect();
        check_shifted(c, &lo, &onestep_cheap_reference(c, &lo).unwrap())?;
    }
    Ok(())
}

/// `log_phi_into_shifted` = the reference plus one constant per position:
/// the same `-inf` support, every finite difference within 1e-6 of
/// `c_t = log Σ_V exp l` (or of 0 when it reports `Some(0)`,
/// which it must when EOS is a candidate), nothing written
/// outside the mask.
fn check_shifted<C: LookAhead>(c: &C, lg: &[f32], want: &[f64]) -> Result<(), TestCaseError> {
    let mask = valid_set(c);
    let mut one = OneStepCheap::new();
    let mut sh = vec![f64::NAN; c.vocab_size()];
    let known = one.log_phi_into_shifted(c, &mask, lg, &mut sh).unwrap();
    let ids: Vec<TokenId> = mask.iter().collect();
    if ids.contains(&c.eos()) {
        prop_assert_eq!(known, Some(0.0));
    }
    // the compact variant writes the same values, by rank in `ids`
    let mut compact = vec![f64::NAN; ids.len()];
    let q = PhiQuery::new(&[], c, &mask, lg);
    let mut nm = NoModel::new(c.vocab_size());
    let id_logits: Vec<f32> = ids.iter().map(|&y| lg[y as usize]).collect();
    let valid = ValidList::new(&ids, &id_logits);
    PhiEstimator::<C, NoModel>::log_phi_shifted_compact(&mut one, &q, &mut nm, valid, &mut compact)
        .expect("OneStep-Cheap has a compact path")
        .unwrap();
    for (i, &y) in ids.iter().enumerate() {
        prop_assert_eq!(
            compact[i].to_bits(),
            sh[y as usize].to_bits(),
            "token {}",
            y
        );
    }
    let mut too_short = vec![0.0; ids.len().saturating_sub(1)];
    if !ids.is_empty() {
        prop_assert!(PhiEstimator::<C, NoModel>::log_phi_shifted_compact(
            &mut one,
            &q,
            &mut nm,
            valid,
            &mut too_short
        )
        .unwrap()
        .is_err());
    }
    let lse = zapspec_core::prob::logsumexp(&lg.iter().map(|&x| x as f64).collect::<Vec<_>>());
    let c_t = known.unwrap_or(lse);
    for y in 0..c.vocab_size() {
        if !mask.contains(y as TokenId) {
            prop_assert!(sh[y].is_nan(), "shifted wrote outside the mask");
        } else if want[y] == f64::NEG_INFINITY {
            prop_assert_eq!(sh[y], f64::NEG_INFINITY, "token {}", y);
        } else {
            let d = sh[y] - want[y];
            prop_assert!(
                (d - c_t).abs() <= 1e-6,
                "token {y}: shifted {} − ref {} = {d}, c_t {c_t}",
                sh[y],
                want[y]
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn dfa_matches_reference(
        n in 1usize..6, v in 2usize..40, seed in any::<u64>(), walk in prop::collection::vec(0u32..40, 0..6),
        scale in 0.1f32..30.0, junk in prop_oneof![Just(0.0f32), 50.0f32..700.0],
    ) {
        let eos = (v - 1) as TokenId;
        let trans: Vec<u32> = (0..n * v)
            .map(|i| {
                let h = splitmix64(seed ^ i as u64);
                if i % v == eos as usize || h.is_multiple_of(3) { DEAD } else { ((h >> 8) % n as u64) as u32 }
            })
            .collect();
        let accepting: Vec<bool> = (0..n).map(|q| splitmix64(seed ^ (1000 + q as u64)).is_multiple_of(2)).collect();
        let Ok(dfa) = Dfa::new(n, v, eos, 0, accepting, trans) else { return Ok(()) };
        let mut c = DfaConstraint::new(Arc::new(dfa));
        for t in walk {
            let _ = c.advance(t % v as u32);
        }
        check(&c, &logits(v, seed, scale, junk))?;
    }

    #[test]
    fn dyck_and_trie_match_reference(
        kinds in 1usize..3, walk in prop::collection::vec(0u32..5, 0..8), seed in any::<u64>(),
        seqs in prop::collection::vec(prop::collection::vec(0u32..30, 0..5), 1..12),
        scale in 0.1f32..30.0, junk in prop_oneof![Just(0.0f32), 50.0f32..700.0],
    ) {
        let spec = DyckSpec { kinds, max_depth: 3, max_len: 10 };
        let mut d = DyckConstraint::new(spec);
        for &t in &walk {
            let _ = d.advance(t % spec.vocab_size() as u32);
        }
        if !d.is_finished() {
            check(&d, &logits(spec.vocab_size(), seed, scale, junk))?;
        }
        let mut t = TrieConstraint::new(Arc::new(TokenTrie::new(&seqs)), 31, 30);
        for &x in &walk {
            let _ = t.advance(x);
        }
        if !t.is_finished() {
            check(&t, &logits(31, seed, scale, junk))?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    /// Sets of at least 48 tokens take the gathered, vectorised sum: DFAs
    /// with dense rows over a few hundred tokens, and tries whose first
    /// tokens have many children (the whole-set walk).
    #[test]
    fn large_sets_match_reference(
        n in 1usize..4, v in 100usize..600, seed in any::<u64>(), walk in prop::collection::vec(0u32..600, 0..4),
        scale in 0.1f32..30.0, junk in prop_oneof![Just(0.0f32), 50.0f32..700.0],
        dead in 2u64..20,
    ) {
        let eos = (v - 1) as TokenId;
        let trans: Vec<u32> = (0..n * v)
            .map(|i| {
                let h = splitmix64(seed ^ i as u64);
                if i % v == eos as usize || h.is_multiple_of(dead) { DEAD } else { ((h >> 8) % n as u64) as u32 }
            })
            .collect();
        let accepting: Vec<bool> = (0..n).map(|q| splitmix64(seed ^ (1000 + q as u64)).is_multiple_of(2)).collect();
        if let Ok(dfa) = Dfa::new(n, v, eos, 0, accepting, trans) {
            let mut c = DfaConstraint::new(Arc::new(dfa));
            for &t in &walk {
                let _ = c.advance(t % v as u32);
            }
            check(&c, &logits(v, seed, scale, junk))?;
        }
        let seqs: Vec<Vec<TokenId>> = (0..300u64)
            .map(|i| {
                let h = splitmix64(seed ^ (7 * i + 3));
                let len = 1 + (h % 3) as usize;
                (0..len)
                    .map(|j| if j == 0 { (h >> 8) as u32 % 3 } else { (splitmix64(h + j as u64) % 290) as u32 })
                    .collect()
            })
            .collect();
        let mut t = TrieConstraint::new(Arc::new(TokenTrie::new(&seqs)), 300, 299);
        if let Some(&x) = walk.first() {
            let _ = t.advance(x % 3);
        }
        if !t.is_finished() {
            check(&t, &logits(300, seed, scale, junk))?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    /// DFAs whose states mix sparse rows (about one token in 64, listed by
    /// `Dfa::allowed` as a sorted member list) and dense ones (borrowed as
    /// the precomputed mask): the successor masses taken from the
    /// matcher's tables (`LookAhead::allowed_by_key`, no fork) equal the
    /// reference, and `Dfa::allowed` lists exactly the state's mask.
    #[test]
    fn sparse_and_dense_states_match_reference(
        n in 2usize..6, v in 200usize..900, seed in any::<u64>(), walk in prop::collection::vec(0u32..900, 0..4),
        scale in 0.1f32..30.0, junk in prop_oneof![Just(0.0f32), 50.0f32..700.0],
    ) {
        let eos = (v - 1) as TokenId;
        let sparse: Vec<bool> = (0..n).map(|q| splitmix64(seed ^ (77 + q as u64)).is_multiple_of(2)).collect();
        let trans: Vec<u32> = (0..n * v)
            .map(|i| {
                let h = splitmix64(seed ^ i as u64);
                let keep = if sparse[i / v] { h.is_multiple_of(64) } else { !h.is_multiple_of(4) };
                if i % v == eos as usize || !keep { DEAD } else { ((h >> 8) % n as u64) as u32 }
            })
            .collect();
        let accepting: Vec<bool> = (0..n).map(|q| splitmix64(seed ^ (1000 + q as u64)).is_multiple_of(2)).collect();
        let Ok(dfa) = Dfa::new(n, v, eos, 0, accepting, trans) else { return Ok(()) };
        let dfa = Arc::new(dfa);
        let mut c = DfaConstraint::new(dfa.clone());
        for q in 0..n as u32 {
            let listed: Vec<TokenId> = match dfa.allowed(q).unwrap() {
                zapspec_core::AllowedRef::Sparse(ids) => ids.to_vec(),
                zapspec_core::AllowedRef::Dense(set) => set.iter().collect(),
            };
            // the state's mask: its live transitions, plus EOS when it accepts
            let mut want: Vec<TokenId> = dfa.successor_groups(q).iter().flat_map(|(_, t)| t.iter().copied()).collect();
            if dfa.accepting[q as usize] {
                want.push(eos);
            }
            want.sort_unstable();
            prop_assert_eq!(&listed, &want);
        }
        for t in walk {
            let _ = c.advance(t % v as u32);
        }
        check(&c, &logits(v, seed, scale, junk))?;
    }
}

#[test]
fn bad_buffers_are_errors() {
    let c = DyckConstraint::new(DyckSpec {
        kinds: 1,
        max_depth: 2,
        max_len: 4,
    });
    let mut one = OneStepCheap::new();
    let mask = valid_set(&c);
    let q3 = PhiQuery::new(&[], &c, &mask, &[0.0; 3]);
    let q2 = PhiQuery::new(&[], &c, &mask, &[0.0; 2]);
    assert!(one
        .log_phi_into(&q3, &mut NoModel::new(3), &mut [0.0; 2])
        .is_err());
    assert!(one
        .log_phi_into(&q2, &mut NoModel::new(3), &mut [0.0; 3])
        .is_err());
    assert!(one
        .log_phi_into_shifted(&c, &mask, &[0.0; 2], &mut [0.0; 3])
        .is_err());
    assert!(one
        .log_phi_into_shifted(&c, &mask, &[0.0; 3], &mut [0.0; 2])
        .is_err());
    let mut out = Vec::new();
    assert!(
        one.log_phi_sparse(&c, &[0, 1], &[0.0; 3], &mut out)
            .is_err(),
        "1 = ')' is refused at the start"
    );
}

/// `cargo test --profile release-fast -p zapspec-phi --test onestep_fast -- --ignored --nocapture`
#[test]
#[ignore]
fn wide_trie_root_timing() {
    let v = 50_257usize;
    let seqs: Vec<Vec<TokenId>> = (0..2000u64)
        .map(|i| {
            let len = 4 + (splitmix64(i) % 5) as usize;
            (0..len)
                .map(|j| {
                    (splitmix64(i * 31 + j as u64 % 3 + (i % 50) * 7) % (v as u64 - 1)) as TokenId
                })
                .collect()
        })
        .collect();
    let c = TrieConstraint::new(Arc::new(TokenTrie::new(&seqs)), v, (v - 1) as TokenId);
    let lg = logits(v, 1, 4.0, 0.0);
    let mask = valid_set(&c);
    let ids: Vec<TokenId> = mask.iter().collect();
    let mut one = OneStepCheap::new();
    let mut out = Vec::new();
    let reps = 200;
    let t = std::time::Instant::now();
    for _ in 0..reps {
        one.log_phi_sparse(&c, &ids, &lg, &mut out).unwrap();
    }
    let full = t.elapsed().as_secs_f64() / reps as f64 * 1e6;
    // shifted (no normaliser), warm and after evicting the caches as the
    // LM forwards between two calls of the decoder do
    let mut sh = vec![0.0; v];
    let t = std::time::Instant::now();
    for _ in 0..reps {
        one.log_phi_into_shifted(&c, &mask, &lg, &mut sh).unwrap();
    }
    let warm = t.elapsed().as_secs_f64() / reps as f64 * 1e6;
    let mut junk = vec![0u64; 4 << 20];
    let mut cold = 0.0;
    for r in 0..reps {
        for (i, j) in junk.iter_mut().enumerate() {
            *j = j.wrapping_add(i as u64 ^ r as u64);
        }
        if std::env::var("WARM_ROW").is_ok() {
            // the decoder's row and buffer are warm (just written)
            std::hint::black_box(lg.iter().sum::<f32>());
            for &y in &ids {
                sh[y as usize] = 0.0;
            }
        }
        let t = std::time::Instant::now();
        one.log_phi_into_shifted(&c, &mask, &lg, &mut sh).unwrap();
        cold += t.elapsed().as_secs_f64();
    }
    std::hint::black_box(&junk);
    println!(
        "shifted: warm {warm:.1} µs, after a 32 MiB sweep {:.1} µs",
        cold / reps as f64 * 1e6
    );
    let mut f = c.clone();
    let t = std::time::Instant::now();
    for _ in 0..reps {
        for &y in &ids {
            f.advance(y).unwrap();
            f.rollback(1).unwrap();
        }
    }
    let adv = t.elapsed().as_secs_f64() / reps as f64 * 1e6;
    let mut list = Vec::new();
    let t = std::time::Instant::now();
    for _ in 0..reps {
        for &y in &ids {
            f.advance(y).unwrap();
            f.allowed_sparse(&mut list);
            f.rollback(1).unwrap();
        }
    }
    let sp = t.elapsed().as_secs_f64() / reps as f64 * 1e6;
    println!("|A| = {}: log_phi_sparse {full:.1} µs, advance+rollback {adv:.1} µs, +allowed_sparse {sp:.1} µs", ids.len());
}

/// The grouped path (a DFA lists its candidates by successor state) writes
/// only inside the caller's mask, agrees with the per-candidate path on a
/// subset of `A_t`, and still refuses a mask with a token outside `A_t`.
#[test]
fn grouped_path_respects_the_callers_mask() {
    const D: u32 = DEAD;
    // states 0, 1; tokens 0..5, EOS 5; state 1 accepts
    #[rustfmt::skip]
    let trans = vec![
        0, 1, 1, D, 0, D,
        1, 0, D, D, D, D,
    ];
    let dfa = Arc::new(Dfa::new(2, 6, 5, 0, vec![false, true], trans).unwrap());
    let c = DfaConstraint::new(dfa.clone());
    let groups: Vec<(u32, Vec<TokenId>)> = dfa.successor_groups(0).to_vec();
    assert_eq!(groups, vec![(0, vec![0, 4]), (1, vec![1, 2])]);
    let lg = logits(6, 7, 3.0, 0.0);
    let mut one = OneStepCheap::new();
    let full = valid_set(&c);
    let mut all = vec![f64::NAN; 6];
    one.log_phi_into_shifted(&c, &full, &lg, &mut all).unwrap();
    let opaque = Opaque(c.clone());
    let mut generic = vec![f64::NAN; 6];
    one.log_phi_into_shifted(&opaque, &full, &lg, &mut generic)
        .unwrap();
    for y in [0usize, 1, 2, 4] {
        assert!((all[y] - generic[y]).abs() < 1e-9, "token {y}");
    }
    let sub = TokenSet::from_ids(6, [1, 4]);
    let mut part = vec![f64::NAN; 6];
    one.log_phi_into_shifted(&c, &sub, &lg, &mut part).unwrap();
    for y in 0..6 {
        if y == 1 || y == 4 {
            assert_eq!(part[y].to_bits(), all[y].to_bits(), "token {y}");
        } else {
            assert!(part[y].is_nan(), "wrote token {y} outside the mask");
        }
    }
    let sup = TokenSet::from_ids(6, [0, 1, 2, 3, 4]);
    let mut out = vec![f64::NAN; 6];
    let err = one.log_phi_into_shifted(&c, &sup, &lg, &mut out);
    assert!(
        matches!(err, Err(zapspec_phi::PhiError::Constraint(ref r)) if r.token == 3),
        "{err:?}"
    );
}

/// The regular-language case of `fvo_overhead` in isolation: a DFA over
/// 200,000 tokens whose current state keeps ~25,000 tokens on a self-loop
/// and sends a few hundred to each of seven other states (the shape of
/// `{"[a-z_]+":[0-9]+…}` over o200k; the other states' rows are sparse).
/// Per call, after a 32 MiB sweep (the
/// LM forward between two calls evicts the caches): writing the values of
/// `A_t` alone (what Uniform costs), and the shifted OneStep-Cheap call.
/// `cargo test --profile release-fast -p zapspec-phi --test onestep_fast -- --ignored --nocapture dfa_self_loop_timing`
#[test]
#[ignore]
fn dfa_self_loop_timing() {
    let v = 200_000usize;
    let n = 8usize;
    let eos = (v - 1) as TokenId;
    let mut trans = vec![DEAD; n * v];
    for q in 0..n {
        for t in 0..v - 1 {
            let h = splitmix64(t as u64 ^ (q as u64) << 40);
            // state 3 (the start): ~25,000 tokens on its self-loop, a few
            // hundred to each other state; the others: sparse rows
            let dense = if q == 3 { 8 } else { 512 };
            trans[q * v + t] = if h.is_multiple_of(dense) {
                q as u32
            } else if h % 997 < 7 {
                ((q + 1 + (h % 997) as usize) % n) as u32
            } else {
                DEAD
            };
        }
    }
    let mut accepting = vec![false; n];
    accepting[7] = true;
    let dfa = Arc::new(Dfa::new(n, v, eos, 3, accepting, trans).unwrap());
    let c = DfaConstraint::new(dfa);
    let mask = valid_set(&c);
    let ids: Vec<TokenId> = mask.iter().collect();
    let mut one = OneStepCheap::new();
    let reps = 300;
    let mut sh = vec![0.0f64; v];
    let mut junk = vec![0u64; 4 << 20];
    let (mut uni, mut cheap, mut cheap_compact, mut gather) = (0.0, 0.0, 0.0, 0.0);
    let mut compact = vec![0.0f64; ids.len()];
    let mut nm = NoModel::new(v);
    for r in 0..reps {
        let lg = logits(v, r as u64, 4.0, 0.0);
        for (i, j) in junk.iter_mut().enumerate() {
            *j = j.wrapping_add(i as u64 ^ r as u64);
        }
        std::hint::black_box(lg.iter().sum::<f32>());
        let t = std::time::Instant::now();
        for y in mask.iter() {
            sh[y as usize] = 0.0;
        }
        uni += t.elapsed().as_secs_f64();
        for (i, j) in junk.iter_mut().enumerate() {
            *j = j.wrapping_add(i as u64 ^ r as u64);
        }
        std::hint::black_box(lg.iter().sum::<f32>());
        let t = std::time::Instant::now();
        one.log_phi_into_shifted(&c, &mask, &lg, &mut sh).unwrap();
        cheap += t.elapsed().as_secs_f64();
        for (i, j) in junk.iter_mut().enumerate() {
            *j = j.wrapping_add(i as u64 ^ r as u64);
        }
        std::hint::black_box(lg.iter().sum::<f32>());
        // the decoder gathers A_t's logits for its own law
        let t = std::time::Instant::now();
        let id_logits: Vec<f32> = ids.iter().map(|&y| lg[y as usize]).collect();
        gather += t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let q = PhiQuery::new(&[], &c, &mask, &lg);
        PhiEstimator::<DfaConstraint, NoModel>::log_phi_shifted_compact(
            &mut one,
            &q,
            &mut nm,
            ValidList::new(&ids, &id_logits),
            &mut compact,
        )
        .unwrap()
        .unwrap();
        cheap_compact += t.elapsed().as_secs_f64();
    }
    std::hint::black_box(&junk);
    println!(
        "|A_t| = {}: writing A_t's values by token {:.1} µs; shifted OneStep-Cheap by token {:.1} µs, compact {:.1} µs (after the caller's gather of A_t's logits, {:.1} µs) per call",
        ids.len(),
        uni / reps as f64 * 1e6,
        cheap / reps as f64 * 1e6,
        cheap_compact / reps as f64 * 1e6,
        gather / reps as f64 * 1e6
    );
}
