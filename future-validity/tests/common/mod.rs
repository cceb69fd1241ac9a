//! Test helpers: random context-dependent LMs and brute-force references.
#![allow(dead_code)]

use zapspec_core::toy::{splitmix64, ClosureLm};
use zapspec_core::{prob, Constraint, LanguageModel, TokenId};

/// A random context-dependent LM: logits hash (seed, context, token) into
/// `[-scale, scale]`; `dead` tokens get an extra `offset` (e.g. −40 to make
/// Φ tiny).
pub fn random_lm(
    vocab: usize,
    seed: u64,
    scale: f32,
) -> ClosureLm<impl Fn(&[TokenId]) -> Vec<f32> + Clone> {
    ClosureLm::new(vocab, move |ctx: &[TokenId]| {
        let mut h = splitmix64(seed);
        for &t in ctx {
            h = splitmix64(h ^ (t as u64 + 1));
        }
        (0..vocab)
            .map(|y| {
                let r = splitmix64(h ^ ((y as u64 + 7) * 0x9E37_79B9));
                let u = (r >> 11) as f64 / (1u64 << 53) as f64;
                ((2.0 * u - 1.0) * scale as f64) as f32
            })
            .collect()
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
