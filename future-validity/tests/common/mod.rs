//! Test helpers: random context-dependent LMs and brute-force references.
#![allow(dead_code)]

use zapspec_core::{prob, Constraint, LanguageModel, TokenId};
use zapspec_testkit::toy::{hashed_logits, ClosureLm};

/// A random context-dependent LM: logits hash (seed, context, token) into
/// `[-scale, scale]` ([`hashed_logits`]).
pub fn random_lm(
    vocab: usize,
    seed: u64,
    scale: f32,
) -> ClosureLm<impl Fn(&[TokenId]) -> Vec<f32> + Clone> {
    ClosureLm::new(vocab, move |ctx: &[TokenId]| {
        hashed_logits(seed, ctx, vocab, scale as f64)
    })
}

/// `log p(x · EOS)` under the model, from scratch.
pub fn seq_logp<M: LanguageModel>(
    m: &mut M,
    prompt: &[TokenId],
    x: &[TokenId],
    eos: TokenId,
) -> f64 {
    let mut ctx = prompt.to_vec();
    let mut s = 0.0;
    for &t in x.iter().chain(std::iter::once(&eos)) {
        let l = m.logits_for(&ctx).unwrap();
        s += prob::log_softmax(&l)[t as usize];
        ctx.push(t);
    }
    s
}

/// Every member of the constraint's language below its current state.
pub fn members<C: Constraint>(c: &C) -> Vec<Vec<TokenId>> {
    fn rec<C: Constraint>(c: &mut C, pre: &mut Vec<TokenId>, out: &mut Vec<Vec<TokenId>>) {
        let m = c.mask();
        for t in m.iter() {
            if t == c.eos() {
                out.push(pre.clone());
            } else {
                c.advance(t).unwrap();
                pre.push(t);
                rec(c, pre, out);
                pre.pop();
                c.rollback(1).unwrap();
            }
        }
    }
    let mut out = Vec::new();
    rec(&mut c.fork(), &mut Vec::new(), &mut out);
    out
}

/// Independent membership test for bounded Dyck strings.
pub fn is_dyck(s: &[TokenId], kinds: usize, max_depth: usize, max_len: usize) -> bool {
    if s.len() > max_len {
        return false;
    }
    let mut st = Vec::new();
    for &t in s {
        let t = t as usize;
        if t < kinds {
            st.push(t);
            if st.len() > max_depth {
                return false;
            }
        } else if t < 2 * kinds {
            if st.pop() != Some(t - kinds) {
                return false;
            }
        } else {
            return false;
        }
    }
    st.is_empty()
}

/// Brute force: every string over the `2·kinds` brackets of length ≤ L
/// that is in D_{d,L}.
pub fn brute_dyck(kinds: usize, max_depth: usize, max_len: usize) -> Vec<Vec<TokenId>> {
    let mut out = Vec::new();
    let mut cur: Vec<Vec<TokenId>> = vec![vec![]];
    for _ in 0..=max_len {
        let mut next = Vec::new();
        for s in &cur {
            if is_dyck(s, kinds, max_depth, max_len) {
                out.push(s.clone());
            }
            if s.len() < max_len {
                for t in 0..2 * kinds as TokenId {
                    let mut s2 = s.clone();
                    s2.push(t);
                    next.push(s2);
                }
            }
        }
        cur = next;
    }
    out
}

/// A random DFA constraint over `v` tokens (the last is EOS) with `n`
/// states: each non-EOS transition is dead with probability `1/dead`,
/// half the states accept. `None` when the draw is no valid DFA.
pub fn random_dfa(n: usize, v: usize, seed: u64, dead: u64) -> Option<zapspec_phi::DfaConstraint> {
    use zapspec_phi::exact::regular::DEAD;
    use zapspec_phi::{Dfa, DfaConstraint};
    use zapspec_testkit::toy::splitmix64;
    let eos = (v - 1) as TokenId;
    let trans: Vec<u32> = (0..n * v)
        .map(|i| {
            let h = splitmix64(seed ^ i as u64);
            if i % v == eos as usize || h.is_multiple_of(dead) {
                DEAD
            } else {
                ((h >> 8) % n as u64) as u32
            }
        })
        .collect();
    let accepting: Vec<bool> = (0..n)
        .map(|q| splitmix64(seed ^ (1000 + q as u64)).is_multiple_of(2))
        .collect();
    let d = Dfa::new(n, v, eos, 0, accepting, trans).ok()?;
    Some(DfaConstraint::new(std::sync::Arc::new(d)))
}

/// A row of `v` logits in `[-scale/2, scale/2)`, hashed from `seed` and
/// `salt` (tests keep their own salt, so their recorded regressions stay
/// the same draws).
pub fn hashed_row(v: usize, seed: u64, scale: f32, salt: u64) -> Vec<f32> {
    use zapspec_testkit::toy::splitmix64;
    (0..v)
        .map(|i| {
            let h = splitmix64(seed ^ splitmix64(i as u64 + salt));
            ((h >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale
        })
        .collect()
}
