//! Token masks for a batch of sequences, computed in parallel: what an
//! inference server does once per decoding step, for every running
//! sequence that is constrained by a grammar (the role of XGrammar's
//! `BatchGrammarMatcher::BatchFillNextTokenBitmask` and llguidance's
//! `fill_next_token_bitmask_par`).
//!
//! [`fill_masks`] fills `masks[i]` with the mask of `matchers[i]`, one
//! [rayon] task per sequence, on the rayon pool of the caller: the global
//! pool, or the one of an enclosing
//! [`ThreadPool::install`](rayon::ThreadPool::install) — which is how a
//! server bounds the threads the masks may take (a pool built once with
//! `ThreadPoolBuilder::new().num_threads(k)`), and how the `batch_masks`
//! example compares 1 and 2 threads.
//!
//! ## Sharing
//!
//! The matchers are usually of one grammar, or of a few, and share their
//! [`CompiledGrammar`](crate::CompiledGrammar) (and its
//! [`VocabIndex`](crate::VocabIndex)) by `Arc`; both are `Send + Sync`,
//! as is [`EarleyMatcher`](crate::EarleyMatcher), which this module checks
//! at compile time. The caches they share (pruned-state masks,
//! rejected prefixes, context-independent entries) only hold values that
//! are a function of the parser state, behind locks that are never held
//! while a mask is computed (see the *Threads* section of
//! [`CompiledGrammar`](crate::CompiledGrammar)); so the batch result is
//! the one a sequential loop gives, whatever the thread interleaving (the
//! `batch_equals_sequential` test checks it against matchers of a separate
//! compilation).
//!
//! ## Cost
//!
//! The sum of the per-sequence `fill_mask` costs (see the crate docs:
//! a copy of `|V|/64` words on a pruned-state cache hit), divided over the
//! threads, plus rayon's hand-off: waking the pool's threads and a task per
//! sequence, tens of microseconds on an idle machine but up to
//! milliseconds when the cores are busy with other processes. With the
//! engine's caches a mask of a JSON Schema grammar over o200k is a few µs,
//! so a batch of 64 is ~0.1 ms and the hand-off alone would cost more than
//! the masks. So the calling thread fills masks in order first and hands
//! the rest of the batch to the pool only when the rest is projected (from
//! the masks filled so far) to take longer than
//! [`BatchConfig::handoff_above`] (200 µs): a batch of cheap masks costs
//! what a sequential loop costs, and a batch of expensive ones (cold
//! entries, context-dependent walks, grammars the caches do not fit) goes
//! to the pool after its first 50 µs. Called inside
//! [`ThreadPool::install`](rayon::ThreadPool::install), the "calling
//! thread" is already one of the pool's, and `install` itself pays the
//! hand-off. The `batch_masks` example measures these modes
//! (`examples/results/batch-masks/batch_masks.md`). Two matchers of one grammar that miss on the same parser state
//! at the same time both compute the mask (the first to finish fills the
//! cache); a cold context-independent entry is computed once and waited
//! for by the others.

use rayon::prelude::*;
use zapspec_core::{Constraint, TokenSet};

/// Why [`fill_masks`] refused a batch (nothing is filled then).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    /// There is not one mask per matcher.
    #[error("{matchers} matchers but {masks} masks")]
    LengthMismatch {
        /// Number of matchers.
        matchers: usize,
        /// Number of masks.
        masks: usize,
    },
    /// A mask's universe is not its matcher's vocabulary size.
    #[error(
        "mask {index} ranges over {universe} tokens, its matcher's vocabulary has {vocab_size}"
    )]
    UniverseMismatch {
        /// Position in the batch.
        index: usize,
        /// The mask's [`TokenSet::universe`].
        universe: usize,
        /// The matcher's [`Constraint::vocab_size`].
        vocab_size: usize,
    },
}

/// Fills `masks[i]` with the allowed next tokens of `matchers[i]`
/// ([`Constraint::fill_mask`]) for every `i`, in parallel on the current
/// rayon pool (see the [module docs](self)). Equal to calling `fill_mask`
/// on each in turn. Works for any [`Constraint`] that can be sent to
/// another thread; [`EarleyMatcher`](crate::EarleyMatcher) is the one this
/// crate has in mind.
///
/// Errors, before any mask is written, when the slices differ in length
/// or a mask's universe is not its matcher's vocabulary size.
pub fn fill_masks<C: Constraint + Send>(
    matchers: &mut [C],
    masks: &mut [TokenSet],
) -> Result<(), BatchError> {
    check(matchers, masks)?;
    fill_checked(matchers, masks, &BatchConfig::default());
    Ok(())
}

/// The batch's shape checks of [`fill_masks`].
fn check<C: Constraint>(matchers: &[C], masks: &[TokenSet]) -> Result<(), BatchError> {
    if matchers.len() != masks.len() {
        return Err(BatchError::LengthMismatch {
            matchers: matchers.len(),
            masks: masks.len(),
        });
    }
    for (index, (m, s)) in matchers.iter().zip(masks.iter()).enumerate() {
        if s.universe() != m.vocab_size() {
            return Err(BatchError::UniverseMismatch {
                index,
                universe: s.universe(),
                vocab_size: m.vocab_size(),
            });
        }
    }
    Ok(())
}

/// How [`fill_masks_with`] splits a batch between the calling thread and
/// the rayon pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchConfig {
    /// The calling thread fills masks in order while the rest of the batch
    /// is projected to take less than this (the masks left times the mean
    /// time of the masks filled so far), and hands the rest to the pool
    /// once it is projected to take more (a projection is trusted after a
    /// quarter of this time has passed). A mask served from a cache costs
    /// a few microseconds, waking the pool's threads and waiting for them
    /// tens to hundreds (milliseconds on a busy machine), so a batch of
    /// cheap masks never pays the hand-off, and a batch of expensive ones
    /// goes to the pool after its first mask or first 50 µs.
    /// `Duration::ZERO`: every mask goes to the pool (the caller only
    /// waits).
    ///
    /// This is a wall-clock policy: the batch reads `std::time::Instant`
    /// after each mask the calling thread fills (the only clock reads of
    /// this module); with `Duration::ZERO` it reads none.
    pub handoff_above: std::time::Duration,
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            handoff_above: std::time::Duration::from_micros(200),
        }
    }
}

/// [`fill_masks`] under an explicit [`BatchConfig`].
pub fn fill_masks_with<C: Constraint + Send>(
    matchers: &mut [C],
    masks: &mut [TokenSet],
    config: &BatchConfig,
) -> Result<(), BatchError> {
    check(matchers, masks)?;
    fill_checked(matchers, masks, config);
    Ok(())
}

/// Fills the masks of a batch whose shapes were checked: in order on the
/// calling thread while the rest is projected to take less than
/// `config.handoff_above`, the rest on the pool, one task per sequence.
fn fill_checked<C: Constraint + Send>(
    matchers: &mut [C],
    masks: &mut [TokenSet],
    config: &BatchConfig,
) {
    let n = matchers.len();
    let mut done = 0;
    if !config.handoff_above.is_zero() {
        // the clock of `BatchConfig::handoff_above` (documented wall time)
        let t0 = std::time::Instant::now();
        for (m, s) in matchers.iter_mut().zip(masks.iter_mut()) {
            m.fill_mask(s);
            done += 1;
            // the projection needs a quarter of the bound behind it: one
            // mask that missed a cache does not send a cheap batch away
            let el = t0.elapsed().as_secs_f64();
            let bound = config.handoff_above.as_secs_f64();
            if el >= bound / 4.0 && el / done as f64 * (n - done) as f64 > bound {
                break;
            }
        }
    }
    matchers[done..]
        .par_iter_mut()
        .zip(masks[done..].par_iter_mut())
        .with_max_len(1)
        .for_each(|(m, s)| m.fill_mask(s));
}

/// [`fill_masks`] into fresh masks, one per matcher.
pub fn masks<C: Constraint + Send>(matchers: &mut [C]) -> Vec<TokenSet> {
    let mut out: Vec<TokenSet> = matchers
        .iter()
        .map(|m| TokenSet::new(m.vocab_size()))
        .collect();
    // The masks were made to fit, so the checks cannot fail.
    fill_checked(matchers, &mut out, &BatchConfig::default());
    out
}

/// Compile-time check of the thread-safety bounds the docs promise: the
/// per-vocabulary index, the engine, a compiled grammar and its matchers
/// are `Send + Sync` (so an `Arc<CompiledGrammar>` can be shared between
/// threads and matchers masked on any of them).
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<crate::VocabIndex>();
    send_sync::<crate::Engine>();
    send_sync::<crate::CompiledGrammar>();
    send_sync::<std::sync::Arc<crate::CompiledGrammar>>();
    send_sync::<crate::EarleyMatcher>();
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use zapspec_core::{TokenId, Vocabulary};
    use zapspec_grammar::Grammar;

    use crate::{Engine, EngineConfig};

    struct Ab;
    impl Vocabulary for Ab {
        fn len(&self) -> usize {
            3
        }
        fn token_bytes(&self, t: TokenId) -> &[u8] {
            [&b"a"[..], b"b", b""][t as usize]
        }
        fn eos(&self) -> TokenId {
            2
        }
        fn is_special(&self, t: TokenId) -> bool {
            t == 2
        }
    }

    /// The bounds, also as an ordinary test (the `const` above is the
    /// check that fails the build).
    #[test]
    fn shared_types_are_send_sync() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<crate::CompiledGrammar>();
        send_sync::<crate::EarleyMatcher>();
        send_sync::<crate::VocabIndex>();
    }

    #[test]
    fn mismatched_batches_are_refused_untouched() {
        let g = Grammar::from_gbnf(r#"root ::= "a" "b"*"#).unwrap();
        let cg = Engine::new(Arc::new(Ab))
            .compile(&g, EngineConfig::default())
            .unwrap();
        let mut ms = vec![cg.matcher(), cg.matcher()];
        let mut one = vec![TokenSet::new(3)];
        assert_eq!(
            fill_masks(&mut ms, &mut one),
            Err(BatchError::LengthMismatch {
                matchers: 2,
                masks: 1
            })
        );
        let mut bad = vec![TokenSet::new(3), TokenSet::new(4)];
        assert_eq!(
            fill_masks(&mut ms, &mut bad),
            Err(BatchError::UniverseMismatch {
                index: 1,
                universe: 4,
                vocab_size: 3
            })
        );
        assert!(bad[0].is_empty(), "nothing is written on error");
        ms[1].advance(0).unwrap();
        let got = masks(&mut ms);
        assert_eq!(got[0], TokenSet::from_ids(3, [0]));
        assert_eq!(got[1], TokenSet::from_ids(3, [1, 2]));
        let mut empty: Vec<crate::EarleyMatcher> = Vec::new();
        assert_eq!(fill_masks(&mut empty, &mut []), Ok(()));
    }
}
