//! Helpers of the `fvo_*` experiment binaries (future-validity paper,
//! App. G/H): a progress bar, and the comparison of an empirical law with an
//! exact one (TV, bootstrap interval, exact-sampler noise floor, χ² and G
//! tests — the statistics themselves live in [`zapspec_testkit::stats`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use zapspec_core::prob::SeededRng;
use zapspec_core::{
    Constraint, LanguageModel, LookAhead, RejectReason, Rejected, RollbackError, TokenId, TokenSet,
};
use zapspec_phi::{PhiEstimator, PhiQuery, PhiResult};
use zapspec_testkit::stats::{bootstrap_tv_ci, chi_square, g_test, noise_floor, tv_counts};

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub fn progress(len: usize, msg: impl Into<String>) -> ProgressBar {
    let pb = ProgressBar::new(len as u64);
    pb.set_style(
        ProgressStyle::with_template("{msg:40} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_message(msg.into());
    pb.enable_steady_tick(Duration::from_millis(250));
    pb
}

/// An empirical law compared with an exact one.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Number of samples.
    pub n: usize,
    /// Plug-in TV of the counts to the exact law.
    pub tv: f64,
    /// Bootstrap 95% interval of the TV ([`bootstrap_tv_ci`]).
    pub ci_lo: f64,
    /// Upper end of the interval.
    pub ci_hi: f64,
    /// Mean of the TV of an exact iid sampler at the same N.
    pub noise_floor: f64,
    /// Standard deviation of that TV.
    pub noise_floor_sd: f64,
    /// `tv − noise_floor`: what the sampler adds beyond sampling noise.
    pub excess: f64,
    /// Pearson χ² goodness-of-fit p-value (cells with expected count < 5
    /// pooled).
    pub chi2_p: f64,
    /// Likelihood-ratio G test p-value (same pooling).
    pub g_p: f64,
}

/// Compares `counts` with `law`: TV, a `bootstrap`-resample interval, the
/// noise floor over `floor_reps` exact samples, χ² and G p-values (in that
/// order of RNG use).
pub fn compare(
    rng: &mut SeededRng,
    counts: &[usize],
    law: &[f64],
    bootstrap: usize,
    floor_reps: usize,
) -> Comparison {
    let n = counts.iter().sum();
    let (ci_lo, ci_hi) = bootstrap_tv_ci(rng, counts, law, bootstrap);
    let (noise_floor, noise_floor_sd) = noise_floor(rng, law, n, floor_reps);
    let tv = tv_counts(counts, law);
    Comparison {
        n,
        tv,
        ci_lo,
        ci_hi,
        noise_floor,
        noise_floor_sd,
        excess: tv - noise_floor,
        chi2_p: chi_square(counts, law).p_value,
        g_p: g_test(counts, law).p_value,
    }
}

/// Elementwise `exp` (log-probabilities to probabilities).
pub fn exp(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| x.exp()).collect()
}

/// [`crate::report::fmt_num`] under the short name the tables use.
pub fn f4(x: f64) -> String {
    crate::report::fmt_num(x)
}

/// A Φ̂ estimator that accumulates the wall time and the thread CPU time
/// spent inside it (the CPU clock, `cpu_time::ThreadTime`, costs a system
/// call, ~0.3 µs, per reading: negligible beside calls of tens of µs, not
/// beside the 0.2 µs calls of a 3-token toy).
pub struct Timed<F> {
    /// The wrapped estimator.
    pub inner: F,
    /// Wall-clock seconds spent in calls so far.
    pub seconds: f64,
    /// Thread CPU seconds spent in calls so far.
    pub cpu_seconds: f64,
    /// Number of calls so far.
    pub calls: u64,
}

impl<F> Timed<F> {
    /// Wraps `inner` with zeroed counters.
    pub fn new(inner: F) -> Self {
        Timed {
            inner,
            seconds: 0.0,
            cpu_seconds: 0.0,
            calls: 0,
        }
    }

    fn time<R>(&mut self, f: impl FnOnce(&mut F) -> R) -> R {
        let (t, c) = (Instant::now(), cpu_time::ThreadTime::now());
        let r = f(&mut self.inner);
        self.cpu_seconds += c.elapsed().as_secs_f64();
        self.seconds += t.elapsed().as_secs_f64();
        self.calls += 1;
        r
    }
}

/// This thread's CPU time in seconds (`cpu_time::ThreadTime`).
pub fn thread_cpu_seconds() -> f64 {
    cpu_time::ThreadTime::now().as_duration().as_secs_f64()
}

impl<C: Constraint, M: LanguageModel, F: PhiEstimator<C, M>> PhiEstimator<C, M> for Timed<F> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn log_phi_into(&mut self, q: &PhiQuery<'_, C>, model: &mut M, out: &mut [f64]) -> PhiResult {
        self.time(|e| e.log_phi_into(q, model, out))
    }
    fn log_phi_shifted(
        &mut self,
        q: &PhiQuery<'_, C>,
        model: &mut M,
        out: &mut [f64],
    ) -> PhiResult {
        self.time(|e| e.log_phi_shifted(q, model, out))
    }
    fn log_phi_shifted_compact(
        &mut self,
        q: &PhiQuery<'_, C>,
        model: &mut M,
        valid: zapspec_phi::ValidList<'_>,
        out: &mut [f64],
    ) -> Option<PhiResult> {
        self.time(|e| e.log_phi_shifted_compact(q, model, valid, out))
    }
}

/// A constraint over a small vocabulary (ids `0..k`, EOS `k`) embedded in
/// a large one: inner token `i` is outer token `map[i]`, inner EOS the
/// outer EOS; every other outer token is refused. (Dyck over the bracket
/// tokens of a real tokenizer.)
#[derive(Clone)]
pub struct Embed<C> {
    inner: C,
    map: Arc<Vec<TokenId>>,
    vocab_size: usize,
    eos: TokenId,
    scratch: Vec<TokenId>,
}

impl<C: Constraint> Embed<C> {
    /// Embeds `inner`: its token `i` becomes `map[i]`, its EOS becomes
    /// `eos`, in a vocabulary of `vocab_size` tokens.
    pub fn new(inner: C, map: Vec<TokenId>, vocab_size: usize, eos: TokenId) -> Self {
        Embed {
            inner,
            map: Arc::new(map),
            vocab_size,
            eos,
            scratch: Vec::new(),
        }
    }

    /// The embedded constraint.
    pub fn inner(&self) -> &C {
        &self.inner
    }

    fn to_inner(&self, t: TokenId) -> Option<TokenId> {
        if t == self.eos {
            return Some(self.inner.eos());
        }
        self.map.iter().position(|&m| m == t).map(|i| i as TokenId)
    }
    fn to_outer(&self, i: TokenId) -> TokenId {
        if i == self.inner.eos() {
            self.eos
        } else {
            self.map[i as usize]
        }
    }
}

impl<C: LookAhead> Constraint for Embed<C> {
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }
    fn eos(&self) -> TokenId {
        self.eos
    }
    fn fill_mask(&mut self, mask: &mut TokenSet) {
        mask.clear();
        let mut l = std::mem::take(&mut self.scratch);
        if !self.inner.allowed_sparse(&mut l) {
            l = self.inner.mask().iter().collect();
        }
        for &i in &l {
            mask.insert(self.to_outer(i));
        }
        self.scratch = l;
    }
    fn advance(&mut self, t: TokenId) -> Result<(), Rejected> {
        match self.to_inner(t) {
            Some(i) => self
                .inner
                .advance(i)
                .map_err(|e| Rejected { token: t, ..e }),
            None => Err(Rejected {
                token: t,
                position: self.inner.num_tokens(),
                reason: RejectReason::NotAllowed,
            }),
        }
    }
    fn rollback(&mut self, n: usize) -> Result<(), RollbackError> {
        self.inner.rollback(n)
    }
    fn is_accepting(&self) -> bool {
        self.inner.is_accepting()
    }
    fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }
    fn num_tokens(&self) -> usize {
        self.inner.num_tokens()
    }
}

/// Forwards the inner constraint's sparse list (mapped to outer ids) and
/// mask key.
impl<C: LookAhead> LookAhead for Embed<C> {
    fn allowed_sparse(&mut self, out: &mut Vec<TokenId>) -> bool {
        if !self.inner.allowed_sparse(out) {
            *out = self.inner.mask().iter().collect();
        }
        for t in out.iter_mut() {
            *t = self.to_outer(*t);
        }
        true
    }
    fn mask_key(&self) -> Option<u64> {
        self.inner.mask_key()
    }
}
