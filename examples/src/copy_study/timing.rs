//! Wall-clock of an execution, measured by the caller: `zapspec_copy`'s
//! executors and the [`super::baselines`] count forwards and read no
//! clock, so an experiment wraps its model in [`Timed`] (the duration of
//! every forward: each `prefill` or `next_logits` call) and times the
//! whole call itself ([`timed_run`]).
//!
//! The *edit time* of a run is its wall-clock less the time of its first
//! [`ExecStats::prompt_forwards`] forwards (the prompt's own forwards,
//! window slides while appending it included: the executors count exactly
//! one forward per `prefill` / `next_logits` call, in call order).
//! `truncate` calls are not timed apart (they are part of the edit, or of
//! the set-up before the prompt).

use std::time::{Duration, Instant};

use zapspec_copy::{ExecError, ExecStats, Execution};
use zapspec_core::model::{LanguageModel, Logits, ModelError};
use zapspec_core::TokenId;

/// A model that records the wall-clock duration of each forward
/// (`prefill` or `next_logits`), in call order.
pub struct Timed<'a, M: ?Sized> {
    inner: &'a mut M,
    forwards: Vec<Duration>,
}

impl<'a, M: LanguageModel + ?Sized> Timed<'a, M> {
    /// Wraps `inner`, with no forwards recorded.
    pub fn new(inner: &'a mut M) -> Self {
        Timed {
            inner,
            forwards: Vec::new(),
        }
    }

    /// The durations of the forwards so far, in call order.
    pub fn forwards(&self) -> &[Duration] {
        &self.forwards
    }

    /// The time of the first `n` forwards.
    pub fn first(&self, n: usize) -> Duration {
        self.forwards.iter().take(n).sum()
    }
}

impl<M: LanguageModel + ?Sized> LanguageModel for Timed<'_, M> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }

    fn context(&self) -> &[TokenId] {
        self.inner.context()
    }

    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        let t = Instant::now();
        let out = self.inner.prefill(tokens);
        self.forwards.push(t.elapsed());
        out
    }

    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        let t = Instant::now();
        let out = self.inner.next_logits();
        self.forwards.push(t.elapsed());
        out
    }

    fn truncate(&mut self, len: usize) {
        self.inner.truncate(len)
    }

    fn max_context(&self) -> usize {
        self.inner.max_context()
    }
}

/// An execution with its wall-clock.
#[derive(Debug, Clone)]
pub struct TimedExecution {
    /// The execution (output, tokens, counts).
    pub run: Execution,
    /// Wall-clock of the whole call.
    pub elapsed: Duration,
    /// Of which the prompt's forwards.
    pub prompt_time: Duration,
}

impl TimedExecution {
    /// Wall-clock of the edit itself (the prompt's forwards excluded).
    pub fn edit_time(&self) -> Duration {
        self.elapsed.saturating_sub(self.prompt_time)
    }

    /// The counts of the run.
    pub fn stats(&self) -> &ExecStats {
        &self.run.stats
    }
}

/// Runs `f` on `model` wrapped in [`Timed`] and times it: the whole call
/// and the prompt's forwards (see the module docs).
pub fn timed_run<M: LanguageModel + ?Sized>(
    model: &mut M,
    f: impl FnOnce(&mut Timed<'_, M>) -> Result<Execution, ExecError>,
) -> Result<TimedExecution, ExecError> {
    let mut timed = Timed::new(model);
    let start = Instant::now();
    let run = f(&mut timed)?;
    let elapsed = start.elapsed();
    let prompt_time = timed.first(run.stats.prompt_forwards);
    Ok(TimedExecution {
        run,
        elapsed,
        prompt_time,
    })
}
