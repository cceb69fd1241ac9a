//! The Copy-as-Decode experiments (paper `002_*`) over `zapspec_copy`'s
//! API: what a measurement needs beyond the library's programs, resolver,
//! oracle, token FSM and execution.
//!
//! | module | entry points | cost |
//! |---|---|---|
//! | [`coverage`] | [`line_cover`] (oracle program tokenized op by op), [`token_cover`] / [`TokenMatcher`] (greedy longest-match cover at minimum span `m`, [`MIN_SPANS`]), [`Cover`] (token counts, span-length histogram, [`Cover::merge`]), [`bound`] = `1/((1−f) + f/s)`, [`KernelSpeedups`] (`s(N)`, log-log interpolated, clamped), [`histogram_bound`] = `T / (G + Σ len/s(len))`, [`span_tokenization`] (span-wise vs whole tokenization of `D′`) | line cover: the oracle diff plus one tokenizer pass; token cover: a suffix automaton of the input, expected `O(|in| + |out|)` once, then `O(|out|)` per `m` |
//! | [`perturb`] | [`perturbation_em`]`(pairs, eps, trials, seed)`, [`perturb_program`] (endpoints ± uniform `[−ε, ε]`, clamped to `1..=n`, swapped if reversed; `ChaCha8Rng`) (Fig. 6) | one oracle diff per pair, then `O(|P| + |D′|)` per trial |
//! | [`corpus`] | [`read_jsonl`] and [`git_history`] (each commit's modified files from a local repository, via the `git` executable) give [`EditPair`]s under a [`CorpusFilter`] (most pairs, most bytes per file, most commits, path suffixes); typed [`CorpusError`] | one read and one JSON parse per line; three `git` processes |
//! | [`baselines`] | [`regenerate`] and [`prompt_lookup`] (n-gram drafts, greedy verification; [`lookup_draft`], [`LookupConfig`]) towards a [`Target`], counted on a `zapspec_copy::CountingModel` | one forward per token / per round |
//! | [`timing`] | [`Timed`] (a model recording each forward's duration), [`timed_run`] → [`TimedExecution`] (wall-clock, prompt time, [`TimedExecution::edit_time`]) | one clock read per forward |
//!
//! The composition of coverage with the kernel table, and the noise model,
//! are our readings of the paper; both are spelled out in the module docs.
//! The `copy_coverage` binary runs coverage, bounds and perturbation on
//! the edit corpora (`examples/results/copy-coverage/copy_coverage.md`); `copy_exec`
//! races Copy-as-Decode against the baselines on a model
//! (`examples/results/copy-exec/`); `copy_demo` lets SmolLM2 write programs
//! (`examples/results/copy-demo/`).

pub mod baselines;
pub mod corpus;
pub mod coverage;
pub mod perturb;
pub mod timing;

pub use baselines::{lookup_draft, prompt_lookup, regenerate, LookupConfig, Target};
pub use corpus::{git_history, read_jsonl, CorpusError, CorpusFilter, EditPair, GitCorpus};
pub use coverage::{
    bound, histogram_bound, line_cover, span_tokenization, token_cover, BoundError, Cover,
    KernelSpeedups, SpanTokenization, TokenMatcher, MIN_SPANS,
};
pub use perturb::{perturb_program, perturbation_em};
pub use timing::{timed_run, Timed, TimedExecution};
