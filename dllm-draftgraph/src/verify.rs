//! Spiffy decoding: drafting from the current marginals, pruning, one model
//! call for the true block and the `D*` draft blocks, and draft
//! verification by Algorithm 1.
//!
//! Each call `c`: the block's current state `Y` was reached from an
//! *anchor* state `A` with marginals `p(·|A)` (the last ones the model gave).
//! Drafts are `A` plus the tokens of a formula ranked in `p(·|A)`; only
//! formulas strictly containing the tokens `Y \ A` can equal a later state,
//! and the best `D*` of those by total score are sent with `Y` in one call.
//! Then (Algorithm 1) `Y' = Next(Y, p(·|Y))`; if some draft equals `Y'`, its
//! marginals — `p(·|Y')`, exactly what vanilla decoding's next call would
//! return — give `Y'' = Next(Y', p(·|Y'))`, which is checked against the
//! accepted draft's children, and so on. Each acceptance saves one call.
//!
//! **Lossless** (Appendix A.1): every state is produced by the same
//! `Next` from the same marginals with the same step randomness as in
//! vanilla decoding, provided the model's draft marginals equal those of a
//! separate call with the draft written in (true for blockwise-causal
//! models and dual caches, App. A.2).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use zapspec_core::{DiffusionModel, TokenId};

use crate::decode::{initial_sequence, next_state, DecodeConfig, DecodeOutput, StepKey};
use crate::error::SpiffyError;
use crate::formula::{Anchor, DraftFormula};
use crate::graph::DraftGraph;
use crate::marginals::Marginals;
use crate::pruning::prune;

/// Configuration of Spiffy decoding.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpiffyConfig {
    /// The decoding being accelerated.
    pub decode: DecodeConfig,
    /// Draft budget `D*`: draft blocks per model call after pruning (0 is
    /// vanilla decoding).
    pub draft_budget: usize,
    /// Keep the accepted chains (node indices per call) in the stats.
    pub record_chains: bool,
    /// Measure the overhead profile: the `time_*` fields of
    /// [`SpiffyStats`], wall time read from the system clock around each
    /// phase. Off by default (the fields stay zero and the clock is never
    /// read).
    #[serde(default)]
    pub timing: bool,
}

impl Default for SpiffyConfig {
    /// The paper's setting: `D* = 3` over the default decoding.
    fn default() -> Self {
        SpiffyConfig {
            decode: DecodeConfig::default(),
            draft_budget: 3,
            record_chains: false,
            timing: false,
        }
    }
}

/// Counters and the overhead profile (paper Table 3) of a Spiffy run. The
/// `time_*` fields are wall time ([`std::time::Instant`]), measured only
/// with [`SpiffyConfig::timing`] and zero otherwise.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpiffyStats {
    /// Model calls (NFEs).
    pub calls: usize,
    /// Denoising steps (state transitions) taken.
    pub steps: usize,
    /// Drafts accepted (`steps − calls`).
    pub accepted: usize,
    /// Draft blocks sent to the model, over all calls.
    pub drafts_sent: usize,
    /// `accepted_hist[a]`: calls that accepted `a` drafts.
    pub accepted_hist: Vec<usize>,
    /// Graph node indices accepted in each call with an acceptance, in
    /// order (only with [`SpiffyConfig::record_chains`]).
    pub chains: Vec<Vec<usize>>,
    /// Time inside the model's `denoise`.
    pub time_model: Duration,
    /// Drafting: ranking the anchor's positions and writing the current
    /// state as a formula.
    pub time_drafting: Duration,
    /// Pruning: scoring the graph (Eqs. 12–14) and taking the top `D*`.
    pub time_pruning: Duration,
    /// Draft sequence construction: filling formulas into draft blocks.
    pub time_draft_construction: Duration,
    /// Acceptance: comparing drafts with states, following children.
    pub time_acceptance: Duration,
    /// Unmasking (`Next`): marginals and token choice, as vanilla does.
    pub time_unmasking: Duration,
}

impl SpiffyStats {
    fn add(&mut self, o: &SpiffyStats) {
        self.calls += o.calls;
        self.steps += o.steps;
        self.accepted += o.accepted;
        self.drafts_sent += o.drafts_sent;
        if self.accepted_hist.len() < o.accepted_hist.len() {
            self.accepted_hist.resize(o.accepted_hist.len(), 0);
        }
        for (a, &c) in o.accepted_hist.iter().enumerate() {
            self.accepted_hist[a] += c;
        }
        self.chains.extend(o.chains.iter().cloned());
        self.time_model += o.time_model;
        self.time_drafting += o.time_drafting;
        self.time_pruning += o.time_pruning;
        self.time_draft_construction += o.time_draft_construction;
        self.time_acceptance += o.time_acceptance;
        self.time_unmasking += o.time_unmasking;
    }

    /// Sums the stats of several runs.
    pub fn merged<'a>(all: impl IntoIterator<Item = &'a SpiffyStats>) -> SpiffyStats {
        let mut s = SpiffyStats::default();
        for o in all {
            s.add(o);
        }
        s
    }

    /// Mean accepted drafts per model call.
    pub fn acceptance_per_call(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.accepted as f64 / self.calls as f64
        }
    }
}

/// The result of a Spiffy run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpiffyOutput {
    /// Tokens, NFEs and steps (as for vanilla decoding).
    pub output: DecodeOutput,
    /// Counters and timings.
    pub stats: SpiffyStats,
}

/// The opt-in wall clock of [`SpiffyConfig::timing`]: the one place
/// verification reads the time.
#[derive(Debug, Clone, Copy)]
struct Clock(bool);

impl Clock {
    /// Runs `f`, adding its wall time to `acc` when timing is on.
    fn timed<T>(self, acc: &mut Duration, f: impl FnOnce() -> T) -> T {
        if !self.0 {
            return f();
        }
        let t = Instant::now();
        let r = f();
        *acc += t.elapsed();
        r
    }
}

/// One denoising step of block `block` from the model rows `rows` scored
/// on the block's current state: `Next(Y, p(·|Y))` written into `y`, the
/// block's step counter advanced. Returns the state it stepped from and its
/// marginals (the next anchor). The true step and every accepted draft go
/// through here, so both make vanilla decoding's decision.
fn take_step(
    y: &mut [TokenId],
    rows: &zapspec_core::Logits,
    mask: TokenId,
    dc: &DecodeConfig,
    block: usize,
    step: &mut usize,
) -> Result<(Vec<TokenId>, Marginals), SpiffyError> {
    let src = y.to_vec();
    let marg = Marginals::new(rows, &src, mask)?;
    next_state(y, &marg, dc, StepKey { block, step: *step })?;
    *step += 1;
    Ok((src, marg))
}

/// Spiffy decoding of `prompt` with the draft graph `graph` (Algorithm 1
/// with pruning to `D*`). Token for token the output of
/// [`generate`](crate::decode::generate) with the same
/// [`DecodeConfig`] when the model's draft marginals are exact. Costs one
/// model call per call (the call scores `1 + D*` blocks) plus `O(|G|·V)`
/// drafting and pruning per call.
pub fn generate_spiffy<M: DiffusionModel + ?Sized>(
    model: &mut M,
    prompt: &[TokenId],
    graph: &DraftGraph,
    cfg: &SpiffyConfig,
) -> Result<SpiffyOutput, SpiffyError> {
    let dc = cfg.decode;
    dc.validate()?;
    let mask = model.mask_token();
    let mut seq = initial_sequence(prompt, dc.gen_len, mask);
    let nfe0 = model.nfe();
    let mut st = SpiffyStats::default();
    let clock = Clock(cfg.timing);
    for (b, range) in dc.blocks(prompt.len()).into_iter().enumerate() {
        let mut step = 0usize;
        let mut anchor: Option<(Anchor, DraftFormula)> = None;
        while seq[range.clone()].contains(&mask) {
            // Drafting, pruning, draft construction.
            let ids = match &anchor {
                Some((a, cur)) => clock.timed(&mut st.time_pruning, || {
                    prune(graph, a, cur, cfg.draft_budget)
                }),
                None => Vec::new(),
            };
            let (ids, drafts): (Vec<usize>, Vec<Vec<TokenId>>) =
                clock.timed(&mut st.time_draft_construction, || match &anchor {
                    Some((a, _)) => ids
                        .iter()
                        .filter_map(|&i| {
                            graph
                                .node(i)
                                .and_then(|n| a.fill(&n.formula))
                                .map(|d| (i, d))
                        })
                        .unzip(),
                    None => (Vec::new(), Vec::new()),
                });
            let out = clock.timed(&mut st.time_model, || {
                model.denoise(&seq, range.clone(), &drafts)
            })?;
            st.calls += 1;
            st.drafts_sent += drafts.len();
            if out.drafts.len() != drafts.len() {
                return Err(SpiffyError::Model(zapspec_core::ModelError::Backend(
                    format!(
                        "denoise returned {} draft marginals for {} drafts",
                        out.drafts.len(),
                        drafts.len()
                    ),
                )));
            }

            // The true step.
            let (mut src, mut marg) = clock.timed(&mut st.time_unmasking, || {
                take_step(&mut seq[range.clone()], &out.main, mask, &dc, b, &mut step)
            })?;
            st.steps += 1;

            // Algorithm 1's verification loop.
            let mut chain: Vec<usize> = Vec::new();
            let mut candidates: Vec<usize> = (0..drafts.len()).collect();
            let mut used = vec![false; drafts.len()];
            while seq[range.clone()].contains(&mask) {
                let hit = clock.timed(&mut st.time_acceptance, || {
                    candidates
                        .iter()
                        .copied()
                        .find(|&d| !used[d] && drafts[d].as_slice() == &seq[range.clone()])
                });
                let Some(d) = hit else { break };
                used[d] = true;
                chain.push(ids[d]);
                (src, marg) = clock.timed(&mut st.time_unmasking, || {
                    take_step(
                        &mut seq[range.clone()],
                        &out.drafts[d],
                        mask,
                        &dc,
                        b,
                        &mut step,
                    )
                })?;
                st.steps += 1;
                candidates = clock.timed(&mut st.time_acceptance, || {
                    (0..drafts.len())
                        .filter(|&e| !used[e] && graph.has_edge(ids[d], ids[e]))
                        .collect()
                });
            }
            let a = chain.len();
            st.accepted += a;
            if st.accepted_hist.len() <= a {
                st.accepted_hist.resize(a + 1, 0);
            }
            st.accepted_hist[a] += 1;
            if cfg.record_chains && !chain.is_empty() {
                st.chains.push(chain);
            }

            // The next anchor: the last state the model scored.
            anchor = if seq[range.clone()].contains(&mask) && cfg.draft_budget > 0 {
                clock.timed(&mut st.time_drafting, || {
                    let an = Anchor::new(src, marg);
                    an.formula_of(&seq[range.clone()]).map(|cur| (an, cur))
                })
            } else {
                None
            };
        }
    }
    Ok(SpiffyOutput {
        output: DecodeOutput {
            tokens: seq[prompt.len()..].to_vec(),
            nfe: model.nfe() - nfe0,
            steps: st.steps,
        },
        stats: st,
    })
}
