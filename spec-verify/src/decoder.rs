//! The speculate–verify–rollback loop shared by all three verifiers.
//!
//! One round (§3.2, Appendix A):
//! 0. **Force.** While the constraint allows exactly one token and it is
//!    not EOS, that token is committed without sampling (it has
//!    probability 1 under every verifier's law; [`crate::forced`],
//!    [`SpecConfig::forced_tokens`]). The target scores the forced tokens
//!    in step 2's forward, as the lead of the block.
//! 1. **Speculate.** The drafter ([`crate::drafter::Drafter`]) proposes up
//!    to γ tokens after the committed (and forced) tokens — a draft model
//!    `q` from the locally masked draft `q̃_t(y) = q_t(y)·1[y∈A_t]/Z_q`
//!    (Def. 1 applied to `q`), prompt lookup from the context — on a *fork* of the constraint, so the committed
//!    matcher state is untouched (axiom B1) and only allowed tokens are
//!    proposed.
//! 2. **Verify.** One target forward over the block gives `p_t` at every
//!    drafted position plus one bonus position. The verifier's target `π_t` is
//!    the masked `p̃_t` (Leviathan / LMS, B2) or the Φ-reweighted
//!    `p_t·Φ̂_t / Z` (FVO-Spec, Proposition 6). The committed matcher advances
//!    through the block to compute each position's mask `A_t`.
//! 3. **Rollback.** At the first rejection the matcher is rolled back with
//!    [`Constraint::rollback`], the target's cache with
//!    [`LanguageModel::truncate`] and the drafter's with
//!    [`crate::drafter::Drafter::rewind`] (B3, rollback soundness); the correction
//!    token is then committed. If every draft is accepted, a bonus token is
//!    drawn from `π` at the position after the block.
//!
//! In tree mode ([`SpecConfig::tree`]) a round drafts a tree instead
//! ([`Drafter::draft_tree`]), cuts the nodes the constraint refuses with the
//! masks of all nodes in one walk (`zapspec_core::draft_tree_masks`),
//! scores the root and the kept nodes in one
//! [`LanguageModel::tree_logits`] call and walks down the tree, emitting
//! each token from `π` at its node — a draw of `π`, or SpecInfer's
//! multi-step speculative sampling over sampled children — and descending
//! while it is a child's token (see [`crate::tree`]).

use rand::Rng;
use serde::{Deserialize, Serialize};
use zapspec_core::prob::{argmax, sample_log};
use zapspec_core::{
    draft_tree_masks, Constraint, DraftTree, LanguageModel, NodeMask, TokenId, TokenSet,
};
use zapspec_phi::{NoModel, PhiError, PhiEstimator, PhiQuery, ValidList};

use crate::config::{Mode, SpecConfig, VerifierKind};
use crate::drafter::common_prefix;
use crate::drafter::{DraftContext, Drafter};
use crate::forced::advance_forced;
use crate::phi::{compact_log_law, compact_log_law_aligned};
use crate::tree::{TreeConfig, TreeVerify};
use crate::verify::{
    equality_step, greedy_step, leviathan_step, multi_step, Decision, DraftLaw, MultiStep,
};
use crate::VerifyError;

/// Counters of a run of the loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundStats {
    /// Verification rounds.
    pub rounds: usize,
    /// Tokens drafted (EOS included); in tree mode, the nodes the
    /// constraint kept (so the acceptance rate is per kept node, and
    /// [`RoundStats::accepted_per_round`] is the depth reached).
    pub drafted: usize,
    /// Drafted tokens the verifier accepted.
    pub accepted: usize,
    /// Tokens committed (grammar-forced tokens + accepted drafts +
    /// corrections + bonus tokens).
    pub emitted: usize,
    /// Target forward calls (`prefill`/`next_logits`).
    pub target_calls: usize,
    /// Draft forward calls (one per drafted position).
    pub draft_calls: usize,
    /// Nodes drafted: tokens of linear drafts, every node a tree drafter
    /// proposed in tree mode (before the constraint's cut).
    #[serde(default)]
    pub nodes_drafted: usize,
    /// Drafted nodes the target scored (after the cut; EOS nodes are not
    /// fed).
    #[serde(default)]
    pub nodes_scored: usize,
    /// Grammar-forced tokens committed without sampling
    /// ([`SpecConfig::forced_tokens`], [`crate::forced`]); included in
    /// [`RoundStats::emitted`], not in `drafted` or `accepted`. A round
    /// that only forces tokens (the length limit reached) calls no model
    /// and is not counted in `rounds`.
    #[serde(default)]
    pub forced: usize,
    /// Positions whose target law needed Φ̂ (FVO-Spec), and the wall time
    /// spent computing it (the estimator's call, in nanoseconds) in all
    /// and at its slowest position: the cost of the correction beside the
    /// forwards'.
    #[serde(default)]
    pub phi_positions: usize,
    /// Nanoseconds in Φ̂ over those positions.
    #[serde(default)]
    pub phi_nanos: u64,
    /// Nanoseconds of the slowest of them (in [`RoundStats::since`], the
    /// slowest over the whole run).
    #[serde(default)]
    pub phi_max_nanos: u64,
}

impl RoundStats {
    /// Accepted / drafted (1 when nothing was drafted).
    pub fn acceptance_rate(&self) -> f64 {
        if self.drafted == 0 {
            1.0
        } else {
            self.accepted as f64 / self.drafted as f64
        }
    }

    /// Accepted drafted tokens per round (the accepted length; in tree
    /// mode, the depth reached in the tree).
    pub fn accepted_per_round(&self) -> f64 {
        if self.rounds == 0 {
            0.0
        } else {
            self.accepted as f64 / self.rounds as f64
        }
    }

    /// Committed tokens per verification round.
    pub fn tokens_per_round(&self) -> f64 {
        if self.rounds == 0 {
            0.0
        } else {
            self.emitted as f64 / self.rounds as f64
        }
    }

    /// Adds another run's counters.
    pub fn merge(&mut self, o: &RoundStats) {
        self.rounds += o.rounds;
        self.drafted += o.drafted;
        self.accepted += o.accepted;
        self.emitted += o.emitted;
        self.target_calls += o.target_calls;
        self.draft_calls += o.draft_calls;
        self.nodes_drafted += o.nodes_drafted;
        self.nodes_scored += o.nodes_scored;
        self.forced += o.forced;
        self.phi_positions += o.phi_positions;
        self.phi_nanos += o.phi_nanos;
        self.phi_max_nanos = self.phi_max_nanos.max(o.phi_max_nanos);
    }

    /// Mean microseconds of Φ̂ per position that needed it (0 when none).
    pub fn phi_micros_per_position(&self) -> f64 {
        if self.phi_positions == 0 {
            0.0
        } else {
            self.phi_nanos as f64 / 1e3 / self.phi_positions as f64
        }
    }

    /// These counters less an earlier snapshot `o` of them.
    pub fn since(&self, o: &RoundStats) -> RoundStats {
        RoundStats {
            rounds: self.rounds - o.rounds,
            drafted: self.drafted - o.drafted,
            accepted: self.accepted - o.accepted,
            emitted: self.emitted - o.emitted,
            target_calls: self.target_calls - o.target_calls,
            draft_calls: self.draft_calls - o.draft_calls,
            nodes_drafted: self.nodes_drafted - o.nodes_drafted,
            nodes_scored: self.nodes_scored - o.nodes_scored,
            forced: self.forced - o.forced,
            phi_positions: self.phi_positions - o.phi_positions,
            phi_nanos: self.phi_nanos - o.phi_nanos,
            phi_max_nanos: self.phi_max_nanos,
        }
    }
}

/// The law a scored tree node's children were drawn from, over the
/// drafted nodes merged into it.
#[derive(Clone, Copy)]
enum SlotLaw<'a> {
    /// No merged node has children.
    Unset,
    /// All merged nodes with children drew them from this law.
    Law(&'a DraftLaw),
    /// Merged nodes drew their children from different laws: the draws
    /// are not i.i.d. from one law, so the node is verified naively.
    Mixed,
}

impl<'a> SlotLaw<'a> {
    fn merge(self, l: &'a DraftLaw) -> Self {
        match self {
            SlotLaw::Unset => SlotLaw::Law(l),
            SlotLaw::Law(m) if m == l => self,
            _ => SlotLaw::Mixed,
        }
    }
}

/// The state one sequence is decoded in: the committed matcher and tokens.
#[derive(Debug, Clone)]
pub struct DecodeState<C> {
    /// Matcher state after exactly `committed` (B3).
    pub constraint: C,
    /// Committed tokens, EOS included once finished.
    pub committed: Vec<TokenId>,
}

impl<C: Constraint> DecodeState<C> {
    /// A fresh state; `constraint` must have consumed nothing.
    pub fn new(constraint: C) -> Self {
        DecodeState {
            constraint,
            committed: Vec::new(),
        }
    }
    /// The matcher has consumed EOS.
    pub fn is_finished(&self) -> bool {
        self.constraint.is_finished()
    }
}

/// What one round did: the forced tokens, then the drafted block's
/// accepted part, then the extra token, in commit order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundReport {
    /// Grammar-forced tokens committed at the start of the round, before
    /// the draft ([`crate::forced`]); empty when forcing is off.
    pub forced: Vec<TokenId>,
    /// The drafted block; in tree mode, the accepted path through the tree.
    pub drafted: Vec<TokenId>,
    /// How many of its tokens were accepted.
    pub accepted: usize,
    /// The correction (after a rejection) or bonus token, if any.
    pub extra: Option<TokenId>,
}

/// Why a sequence ended.
///
/// The loop itself ends a sequence for the first three reasons;
/// [`StopReason::StopString`] is set by callers that watch the decoded text
/// (the `zapspec` facade's stop strings).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StopReason {
    /// The target chose EOS where the constraint also allowed other tokens.
    Eos,
    /// The constraint allowed nothing but EOS: the output is a complete
    /// member of its language with no continuation (EOS was forced).
    ConstraintFinished,
    /// [`SpecConfig::max_tokens`] tokens were generated before EOS; the
    /// output is those tokens (a prefix of a member, not a member).
    MaxTokens,
    /// The decoded text reached this stop string (the output is cut after
    /// it, see the facade).
    StopString(String),
}

impl StopReason {
    /// The sequence ended at EOS (chosen or forced): the output is a
    /// complete member of the constraint's language.
    pub fn is_complete(&self) -> bool {
        matches!(self, StopReason::Eos | StopReason::ConstraintFinished)
    }
}

/// One finished sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    /// The tokens, EOS excluded.
    pub tokens: Vec<TokenId>,
    /// Why it ended; a length limit is a stop reason, not an error, so the
    /// tokens are never lost.
    pub stop: StopReason,
    /// The loop's counters for this sequence.
    pub stats: RoundStats,
}

/// The speculative decoder: a target `p`, a draft `q`, a Φ estimator (used
/// by FVO-Spec and the equality diagnostic) and a [`SpecConfig`].
///
/// The estimator is a `zapspec_phi::PhiEstimator<C, NoModel>`: the target's
/// context is at the end of the drafted block, not at the verified
/// position, so the decoder never hands it to the estimator; an estimator
/// that runs a model is wrapped in `zapspec_phi::WithModel` (its own copy).
/// It is called through `log_phi_shifted` with the target row `p_t` of the
/// verification forward and a reused buffer touched only on `A_t`.
pub struct SpeculativeDecoder<P, Q, F> {
    /// The target model `p`.
    pub target: P,
    /// The drafter (a draft model `q`, prompt lookup, …).
    pub draft: Q,
    /// The Φ estimator.
    pub phi: F,
    config: SpecConfig,
    stats: RoundStats,
    /// The model slot handed to `phi` (the target's vocabulary, no forwards).
    no_model: NoModel,
    /// `log Φ̂` by token, reused across rounds; only entries on the current
    /// `A_t` are touched, so a round costs `O(|A_t|)` here, not `O(|V|)`.
    phi_buf: Vec<f64>,
    /// `log Φ̂` aligned with the list of `A_t`
    /// ([`PhiEstimator::log_phi_shifted_compact`]), reused across rounds.
    phi_compact: Vec<f64>,
    /// The target's logits on `A_t` (aligned with its list), reused.
    id_logits: Vec<f32>,
    /// Scratch mask of the forced-token scan, reused.
    forced_mask: TokenSet,
    /// Tokens both models condition on before the first generated token
    /// (outside the constraint); see [`Self::with_prompt`].
    prompt: Vec<TokenId>,
}

impl<P: LanguageModel, Q: Drafter, F> SpeculativeDecoder<P, Q, F> {
    /// Checks the configuration.
    pub fn new(target: P, draft: Q, phi: F, config: SpecConfig) -> Result<Self, VerifyError> {
        config.validate()?;
        if let Some(v) = draft.vocab_size().filter(|&v| v != target.vocab_size()) {
            return Err(VerifyError::VocabMismatch {
                what: "draft model",
                got: v,
                want: target.vocab_size(),
            });
        }
        let no_model = NoModel::new(target.vocab_size());
        Ok(SpeculativeDecoder {
            target,
            draft,
            phi,
            no_model,
            config,
            stats: RoundStats::default(),
            phi_buf: Vec::new(),
            phi_compact: Vec::new(),
            id_logits: Vec::new(),
            forced_mask: TokenSet::new(0),
            prompt: Vec::new(),
        })
    }

    /// Every sequence is generated after `prompt`: the target and the draft
    /// condition on `prompt ++ generated`, while the constraint and the Φ
    /// estimator see the generated tokens only (a prompt is not part of the
    /// constrained output). The loop then samples `μ^proj` / `μ*` of the
    /// prompted target. The prompt's forward is shared across sequences.
    pub fn with_prompt(mut self, prompt: &[TokenId]) -> Self {
        self.prompt = prompt.to_vec();
        self
    }

    /// Replaces the prompt of later sequences (see [`Self::with_prompt`]);
    /// the models' cache of the common prefix of the old and new prompt is
    /// kept by the next [`Self::start`].
    pub fn set_prompt(&mut self, prompt: &[TokenId]) {
        self.prompt.clear();
        self.prompt.extend_from_slice(prompt);
    }

    /// The prompt set by [`Self::with_prompt`] (empty by default).
    pub fn prompt(&self) -> &[TokenId] {
        &self.prompt
    }

    /// The configuration.
    pub fn config(&self) -> &SpecConfig {
        &self.config
    }

    /// Counters accumulated over every call so far.
    pub fn stats(&self) -> RoundStats {
        self.stats
    }

    /// Zeroes the counters.
    pub fn reset_stats(&mut self) {
        self.stats = RoundStats::default();
    }

    fn check_vocab<C: Constraint>(&self, c: &C) -> Result<(), VerifyError> {
        if self.target.vocab_size() != c.vocab_size() {
            return Err(VerifyError::VocabMismatch {
                what: "target model",
                got: self.target.vocab_size(),
                want: c.vocab_size(),
            });
        }
        Ok(())
    }

    /// Decodes one sequence from the initial matcher state `constraint` (which
    /// is cloned, not modified) until EOS or [`SpecConfig::max_tokens`]
    /// tokens ([`Generation::stop`] says which). Equals [`Self::start`],
    /// [`Self::round`] until [`Self::is_done`], then [`Self::finish`] — the
    /// steps a caller runs by hand to stream a sequence.
    pub fn generate<C, R>(&mut self, constraint: &C, rng: &mut R) -> Result<Generation, VerifyError>
    where
        C: Constraint,
        F: PhiEstimator<C, NoModel>,
        R: Rng + ?Sized,
    {
        let before = self.stats;
        let mut state = self.start(constraint)?;
        while !self.is_done(&state) {
            self.round(&mut state, rng)?;
        }
        let (tokens, stop) = self.finish(constraint, state);
        let stats = self.stats.since(&before);
        Ok(Generation {
            tokens,
            stop,
            stats,
        })
    }

    /// A fresh sequence from the initial matcher state `constraint`: checks
    /// the vocabulary, keeps the target's cache of the prompt and rewinds
    /// the drafter to it.
    pub fn start<C: Constraint>(&mut self, constraint: &C) -> Result<DecodeState<C>, VerifyError> {
        self.check_vocab(constraint)?;
        // keep what the models share with the prompt (its KV cache)
        let keep = common_prefix(self.target.context(), &self.prompt);
        self.target.truncate(keep);
        self.draft.rewind(&self.prompt);
        Ok(DecodeState::new(constraint.clone()))
    }

    /// The sequence has ended: EOS was committed, or
    /// [`SpecConfig::max_tokens`] tokens were.
    pub fn is_done<C: Constraint>(&self, state: &DecodeState<C>) -> bool {
        state.is_finished() || state.committed.len() >= self.config.max_tokens
    }

    /// The output of a sequence decoded from `initial` (EOS removed, cut
    /// to [`SpecConfig::max_tokens`]: a round can commit past it) and why it
    /// ended. Telling [`StopReason::ConstraintFinished`] from
    /// [`StopReason::Eos`] replays the output on a clone of `initial` and
    /// fills one mask: O(output) matcher steps, no model call.
    pub fn finish<C: Constraint>(
        &self,
        initial: &C,
        state: DecodeState<C>,
    ) -> (Vec<TokenId>, StopReason) {
        let max = self.config.max_tokens;
        let eos = initial.eos();
        let mut tokens = state.committed;
        if state.constraint.is_finished() && tokens.last() == Some(&eos) && tokens.len() <= max + 1
        {
            tokens.pop();
            let mut c = initial.clone();
            let replayed = tokens.iter().all(|&t| c.advance(t).is_ok());
            let mut mask = TokenSet::new(c.vocab_size());
            if replayed {
                c.fill_mask(&mut mask);
            }
            let stop = if replayed && mask.single() == Some(eos) {
                StopReason::ConstraintFinished
            } else {
                StopReason::Eos
            };
            (tokens, stop)
        } else {
            tokens.truncate(max);
            (tokens, StopReason::MaxTokens)
        }
    }

    /// Draws `n` sequences from `constraint` and counts them by member
    /// index (`index` maps a member's tokens to its slot, e.g.
    /// [`crate::PrefixTree::member_index`]). `tick` is called after each
    /// sequence (for progress bars). Returns the counts and the loop's
    /// counters over the `n` draws.
    pub fn sample_counts<C, R>(
        &mut self,
        constraint: &C,
        index: &std::collections::HashMap<Vec<TokenId>, usize>,
        n: usize,
        rng: &mut R,
        mut tick: impl FnMut(usize),
    ) -> Result<(Vec<usize>, RoundStats), VerifyError>
    where
        C: Constraint,
        F: PhiEstimator<C, NoModel>,
        R: Rng + ?Sized,
    {
        let mut counts = vec![0usize; index.len()];
        let mut stats = RoundStats::default();
        for i in 0..n {
            let g = self.generate(constraint, rng)?;
            if g.stop == StopReason::MaxTokens {
                return Err(VerifyError::TooLong {
                    max_tokens: self.config.max_tokens,
                });
            }
            let slot = index
                .get(&g.tokens)
                .ok_or_else(|| VerifyError::OutsideLanguage {
                    tokens: g.tokens.clone(),
                })?;
            counts[*slot] += 1;
            stats.merge(&g.stats);
            tick(i);
        }
        Ok((counts, stats))
    }

    /// One speculate–verify–rollback round on `state`. Afterwards
    /// `state.constraint` has consumed exactly `state.committed`, the target's
    /// context is a prefix of it, and so is the draft's.
    pub fn round<C, R>(
        &mut self,
        state: &mut DecodeState<C>,
        rng: &mut R,
    ) -> Result<RoundReport, VerifyError>
    where
        C: Constraint,
        F: PhiEstimator<C, NoModel>,
        R: Rng + ?Sized,
    {
        let pos0 = state.committed.len();
        if state.is_finished() {
            return Ok(RoundReport {
                forced: Vec::new(),
                drafted: Vec::new(),
                accepted: 0,
                extra: None,
            });
        }
        // 0. Grammar-forced tokens: committed without sampling (probability
        //    1 under every verifier's law, see crate::forced), never past
        //    the length limit; the target scores them with the draft.
        let mut forced = Vec::new();
        let limit = self
            .config
            .forced_tokens
            .limit()
            .min(self.config.max_tokens.saturating_sub(pos0));
        if limit > 0 {
            let mut scratch = std::mem::replace(&mut self.forced_mask, TokenSet::new(0));
            let taken = advance_forced(&mut state.constraint, &mut scratch, limit, &mut forced);
            self.forced_mask = scratch;
            // the matcher consumed exactly `forced`, even on an error
            state.committed.extend_from_slice(&forced);
            self.stats.forced += forced.len();
            self.stats.emitted += forced.len();
            taken?;
            if !forced.is_empty() && state.committed.len() >= self.config.max_tokens {
                return Ok(RoundReport {
                    forced,
                    drafted: Vec::new(),
                    accepted: 0,
                    extra: None,
                });
            }
        }
        let mut report = match self.config.tree {
            Some(shape) => self.tree_round(state, &shape, rng)?,
            None => self.linear_round(state, rng)?,
        };
        report.forced = forced;
        Ok(report)
    }

    /// One round in linear mode: draft a block, score it in one target
    /// forward, verify it position by position, roll back at the first
    /// rejection.
    fn linear_round<C, R>(
        &mut self,
        state: &mut DecodeState<C>,
        rng: &mut R,
    ) -> Result<RoundReport, VerifyError>
    where
        C: Constraint,
        F: PhiEstimator<C, NoModel>,
        R: Rng + ?Sized,
    {
        let eos = state.constraint.eos();
        let pos0 = state.committed.len();
        let vocab = state.constraint.vocab_size();
        let sampled = self.config.mode == Mode::Sampled;

        // 1. Speculate on a fork of the matcher: the drafter proposes only
        //    tokens the constraint allows.
        let mut fork = state.constraint.fork();
        // the models' context: prompt ++ committed ++ drafts
        let base = self.prompt.len();
        let mut ctx = self.prompt.clone();
        ctx.extend_from_slice(&state.committed);
        let request = DraftContext {
            tokens: &ctx,
            prompt_len: base,
            gamma: self.config.gamma,
            sampled,
        };
        let proposal = self.draft.draft(request, &mut fork, rng)?;
        self.stats.draft_calls += proposal.calls;
        if proposal.laws.len() != proposal.tokens.len() || proposal.tokens.len() > self.config.gamma
        {
            return Err(VerifyError::BadDraft {
                tokens: proposal.tokens.len(),
                laws: proposal.laws.len(),
                gamma: self.config.gamma,
            });
        }
        let mut drafts = proposal.tokens;
        let draft_laws = proposal.laws;
        ctx.extend_from_slice(&drafts);
        let mut mask = TokenSet::new(vocab);
        let mut k = drafts.len();
        let drafted = k;
        let mut ends_eos = drafts.last() == Some(&eos);
        let n_rows = if ends_eos { k } else { k + 1 };

        // 2. Verify: one target forward over the block; the committed matcher
        //    advances through the block to give each position's A_t.
        // ctx is prompt ++ committed ++ drafts here
        let rows = self.target_rows(&ctx[..base + pos0], &drafts[..n_rows - 1], vocab)?;
        let use_phi = self.config.verifier.uses_phi();
        let mut laws: Vec<(Vec<TokenId>, Vec<f64>)> = Vec::with_capacity(n_rows);
        for (i, row) in rows.iter().enumerate() {
            let position = pos0 + i;
            state.constraint.fill_mask(&mut mask);
            if mask.is_empty() {
                state.constraint.rollback(i)?;
                return Err(VerifyError::DeadEnd { position });
            }
            let ids: Vec<TokenId> = mask.iter().collect();
            let law = if use_phi {
                ctx.truncate(base + pos0);
                ctx.extend_from_slice(&drafts[..i]);
                match self.phi_law(&ctx[base..], &state.constraint, &mask, &ids, row) {
                    Ok(law) => law,
                    Err(source) => {
                        state.constraint.rollback(i)?;
                        return Err(VerifyError::Phi { position, source });
                    }
                }
            } else {
                compact_log_law(row, &ids, None)
            };
            let Some(law) = law else {
                if i == 0 {
                    return Err(VerifyError::EmptySupport {
                        position,
                        what: "target",
                    });
                }
                // Zero target mass on every valid token after draft i−1: a
                // prefix the target reaches only through a zero-probability
                // draft (then that draft is rejected with certainty) or a
                // genuine dead end (reported below if draft i−1 is accepted).
                // Verify the first i drafts only; no bonus law.
                k = i;
                drafts.truncate(k);
                ends_eos = false;
                break;
            };
            let law = if self.config.top_p < 1.0 && self.config.mode == Mode::Sampled {
                crate::phi::nucleus_log(law, self.config.top_p)
            } else {
                law
            };
            laws.push((ids, law));
            if i < k {
                state.constraint.advance(drafts[i])?;
            }
        }

        // 3. Accept/reject walk (indices into A_t).
        let mut accepted = 0;
        let mut correction = None;
        for (i, &d) in drafts.iter().enumerate() {
            let (ids, target) = &laws[i];
            let Some(j) = ids.iter().position(|&y| y == d) else {
                state.constraint.rollback(k)?;
                return Err(VerifyError::Rejected(zapspec_core::Rejected {
                    token: d,
                    position: pos0 + i,
                    reason: zapspec_core::RejectReason::NotAllowed,
                }));
            };
            // the draft's law on the verifier's A_t (identical unless the
            // constraint is not a function of the prefix); a point law puts
            // all mass on the drafted token
            let remapped;
            let draft = match &draft_laws[i] {
                DraftLaw::Dist { ids: dids, log_q } if dids == ids => log_q,
                DraftLaw::Dist { ids: dids, log_q } => {
                    remapped = ids
                        .iter()
                        .map(|y| {
                            dids.iter()
                                .position(|u| u == y)
                                .map_or(f64::NEG_INFINITY, |j| log_q[j])
                        })
                        .collect::<Vec<f64>>();
                    &remapped
                }
                DraftLaw::Point => {
                    let mut v = vec![f64::NEG_INFINITY; ids.len()];
                    v[j] = 0.0;
                    remapped = v;
                    &remapped
                }
            };
            let decision = match (self.config.mode, self.config.verifier) {
                (Mode::Greedy, _) => greedy_step(target, j),
                (Mode::Sampled, VerifierKind::Equality) => equality_step(rng, target, j),
                (Mode::Sampled, _) => leviathan_step(rng, target, draft, j),
            };
            match decision {
                Decision::Accept => accepted += 1,
                Decision::Reject(y) => {
                    correction = Some(ids[y]);
                    break;
                }
            }
        }

        // 4. Rollback (B3) and commit.
        let extra = match correction {
            Some(y) => {
                state.constraint.rollback(k - accepted)?;
                let keep = base + pos0 + accepted;
                if self.target.context().len() > keep {
                    self.target.truncate(keep);
                }
                ctx.truncate(base + pos0);
                ctx.extend_from_slice(&drafts[..accepted]);
                self.draft.rewind(&ctx);
                state.committed.extend_from_slice(&drafts[..accepted]);
                state.constraint.advance(y)?;
                state.committed.push(y);
                Some(y)
            }
            None if laws.len() == k && !ends_eos => {
                // every draft accepted into a prefix with no target mass
                state.constraint.rollback(k)?;
                return Err(VerifyError::EmptySupport {
                    position: pos0 + k,
                    what: "target",
                });
            }
            None => {
                state.committed.extend_from_slice(&drafts);
                if ends_eos {
                    None
                } else {
                    let (ids, law) = &laws[k];
                    let j = if sampled {
                        sample_log(rng, law).ok()
                    } else {
                        argmax(law)
                    }
                    .ok_or(VerifyError::EmptySupport {
                        position: pos0 + k,
                        what: "target",
                    })?;
                    let y = ids[j];
                    state.constraint.advance(y)?;
                    state.committed.push(y);
                    Some(y)
                }
            }
        };
        self.stats.rounds += 1;
        self.stats.drafted += drafted;
        self.stats.nodes_drafted += drafted;
        self.stats.nodes_scored += n_rows - 1;
        self.stats.accepted += accepted;
        self.stats.emitted += state.committed.len() - pos0;
        Ok(RoundReport {
            forced: Vec::new(),
            drafted: drafts,
            accepted,
            extra,
        })
    }

    /// The Φ̂-reweighted target law on the valid set `ids` (the list of
    /// `mask`, token order) at the position after `prefix` (the generated
    /// tokens, `constraint` consumed exactly them), from the target's
    /// logits `row`: `p_t(y)·Φ̂_t(y)` renormalised on `A_t`, entry `i` for
    /// `ids[i]`; `Ok(None)` when it has no mass. Φ̂ is asked for values on
    /// `A_t` in an `|A_t|` buffer when the estimator can
    /// (`log_phi_shifted_compact`), by token in a `|V|` one otherwise;
    /// both buffers are reused across calls and touched only on `A_t`.
    fn phi_law<C>(
        &mut self,
        prefix: &[TokenId],
        constraint: &C,
        mask: &TokenSet,
        ids: &[TokenId],
        row: &[f32],
    ) -> Result<Option<Vec<f64>>, PhiError>
    where
        C: Constraint,
        F: PhiEstimator<C, NoModel>,
    {
        let vocab = constraint.vocab_size();
        // compact_log_law renormalises over A_t: a per-position constant in
        // log Φ̂ cancels (PhiEstimator::log_phi_shifted)
        // greedy decoding reads only the law's argmax (both walks), which
        // an estimator may then find without scoring every candidate
        let q = PhiQuery::new(prefix, constraint, mask, row)
            .with_argmax_only(self.config.mode == Mode::Greedy);
        // the valid set's logits, gathered once for Φ̂ and the law
        self.id_logits.clear();
        self.id_logits.extend(
            ids.iter()
                .map(|&y| row.get(y as usize).copied().unwrap_or(f32::NEG_INFINITY)),
        );
        // Φ̂'s own time (the gather above and the law below are what
        // Leviathan's law does too)
        let started = std::time::Instant::now();
        self.phi_compact.clear();
        self.phi_compact.resize(ids.len(), f64::NAN);
        let compact = self.phi.log_phi_shifted_compact(
            &q,
            &mut self.no_model,
            ValidList::new(ids, &self.id_logits),
            &mut self.phi_compact,
        );
        match compact {
            Some(r) => {
                r?;
            }
            None => {
                if self.phi_buf.len() != vocab {
                    self.phi_buf = vec![f64::NAN; vocab];
                }
                for &y in ids {
                    self.phi_buf[y as usize] = f64::NAN;
                }
                self.phi
                    .log_phi_shifted(&q, &mut self.no_model, &mut self.phi_buf)?;
                for (&y, c) in ids.iter().zip(self.phi_compact.iter_mut()) {
                    *c = self.phi_buf[y as usize];
                }
            }
        };
        let ns = started.elapsed().as_nanos().min(u64::MAX as u128) as u64;
        self.stats.phi_positions += 1;
        self.stats.phi_nanos += ns;
        self.stats.phi_max_nanos = self.stats.phi_max_nanos.max(ns);
        if let Some(j) = self.phi_compact.iter().position(|v| v.is_nan()) {
            return Err(PhiError::MissingEstimate { token: ids[j] });
        }
        Ok(compact_log_law_aligned(&self.id_logits, &self.phi_compact))
    }

    /// One round in tree mode (see [`crate::tree`]): draft a tree, cut the
    /// nodes the constraint refuses with the masks of all nodes in one
    /// walk, score the root and the kept nodes in one target call, and
    /// walk down the tree emitting each token from the verifier's law at
    /// its node (naive sampling, or multi-step speculative sampling over
    /// sampled children: [`crate::tree`]).
    fn tree_round<C, R>(
        &mut self,
        state: &mut DecodeState<C>,
        shape: &TreeConfig,
        rng: &mut R,
    ) -> Result<RoundReport, VerifyError>
    where
        C: Constraint,
        F: PhiEstimator<C, NoModel>,
        R: Rng + ?Sized,
    {
        let eos = state.constraint.eos();
        let pos0 = state.committed.len();
        let vocab = state.constraint.vocab_size();
        let sampled = self.config.mode == Mode::Sampled;
        let gamma = self.config.gamma;

        // 1. Draft a tree (on a fork the drafter may use).
        let base = self.prompt.len();
        let mut ctx = self.prompt.clone();
        ctx.extend_from_slice(&state.committed);
        let mut fork = state.constraint.fork();
        let request = DraftContext {
            tokens: &ctx,
            prompt_len: base,
            gamma,
            sampled,
        };
        let proposal = self.draft.draft_tree(request, shape, &mut fork, rng)?;
        self.stats.draft_calls += proposal.calls;
        let tree = proposal.tree;
        let depth = tree.depth();
        if tree.len() > shape.max_nodes || depth > gamma {
            return Err(VerifyError::BadTree {
                nodes: tree.len(),
                depth,
                max_nodes: shape.max_nodes,
                gamma,
            });
        }

        // 2. Cut: the masks at the root and at every node in one walk of
        //    the committed matcher (left as it was); refused nodes and
        //    their subtrees go, EOS nodes stay as leaves without a row,
        //    equal siblings are merged.
        let masks = draft_tree_masks(&mut state.constraint, &tree)?;
        if masks.root.is_empty() {
            return Err(VerifyError::DeadEnd { position: pos0 });
        }
        let mut scored = DraftTree::default();
        let mut node_masks: Vec<TokenSet> = Vec::new();
        // children by slot: the root is slot 0, scored node s is slot s + 1;
        // a child is (token, its scored node, or None for EOS)
        let mut kids: Vec<Vec<(TokenId, Option<usize>)>> = vec![Vec::new()];
        // by slot: every drafted child's token in index (draw) order,
        // repeats and refused tokens included — the attempts of the
        // residual rule — and the law they were drawn from (None: point
        // laws, or children of merged nodes drawn from different laws)
        let mut attempts: Vec<Vec<TokenId>> = vec![Vec::new()];
        let point = DraftLaw::Point;
        let law_of = |slot: usize| proposal.laws.get(slot).unwrap_or(&point);
        let (tree_kids, _) = tree.children();
        // a drafted node's children law, if it has children
        let kids_law = |i: usize| (!tree_kids[i].is_empty()).then(|| law_of(i + 1));
        let mut slot_law: Vec<SlotLaw> = vec![SlotLaw::Law(law_of(0))];
        // each drafted node's slot in `kids` (None: cut, or EOS)
        let mut slot_of: Vec<Option<usize>> = vec![None; tree.len()];
        let mut kept = 0usize;
        for (i, m) in masks.nodes.into_iter().enumerate() {
            let parent_slot = match tree.parents()[i] {
                None => 0,
                Some(p) => match slot_of[p] {
                    Some(s) => s,
                    None => continue,
                },
            };
            let t = tree.tokens()[i];
            attempts[parent_slot].push(t);
            let NodeMask::Valid(m) = m else { continue };
            kept += 1;
            if let Some(&(_, c)) = kids[parent_slot].iter().find(|(u, _)| *u == t) {
                slot_of[i] = c.map(|c| c + 1);
                // a merged node: its children must come from the same law
                if let (Some(s), Some(l)) = (slot_of[i], kids_law(i)) {
                    slot_law[s] = slot_law[s].merge(l);
                }
                continue;
            }
            if t == eos {
                kids[parent_slot].push((t, None));
                continue;
            }
            let s = scored.push(parent_slot.checked_sub(1), t)?;
            kids[parent_slot].push((t, Some(s)));
            kids.push(Vec::new());
            attempts.push(Vec::new());
            slot_law.push(kids_law(i).map_or(SlotLaw::Unset, SlotLaw::Law));
            node_masks.push(m);
            slot_of[i] = Some(s + 1);
        }

        // 3. Score the root and every kept node in one target call.
        let (root_row, rows) = self.target_tree_rows(&ctx, &scored, vocab)?;

        // 4. Walk: draw from the verifier's law at the node; descend while
        //    the draw is a child's token.
        let mut slot = 0usize;
        let mut prefix = state.committed.clone();
        let mut accepted = 0usize;
        let mut extra = None;
        loop {
            let position = pos0 + accepted;
            let (mask, row) = match slot.checked_sub(1) {
                None => (&masks.root, &root_row[..]),
                Some(s) => (&node_masks[s], &rows[s][..]),
            };
            let ids: Vec<TokenId> = mask.iter().collect();
            if ids.is_empty() {
                state.constraint.rollback(accepted)?;
                return Err(VerifyError::DeadEnd { position });
            }
            let law = if self.config.verifier.uses_phi() {
                match self.phi_law(&prefix, &state.constraint, mask, &ids, row) {
                    Ok(law) => law,
                    Err(source) => {
                        state.constraint.rollback(accepted)?;
                        return Err(VerifyError::Phi { position, source });
                    }
                }
            } else {
                compact_log_law(row, &ids, None)
            };
            let Some(law) = law.map(|l| {
                if self.config.top_p < 1.0 && sampled {
                    crate::phi::nucleus_log(l, self.config.top_p)
                } else {
                    l
                }
            }) else {
                state.constraint.rollback(accepted)?;
                return Err(VerifyError::EmptySupport {
                    position,
                    what: "target",
                });
            };
            let residual = match (sampled, self.config.tree_verify, slot_law[slot]) {
                (true, TreeVerify::Residual, SlotLaw::Law(dl)) if !attempts[slot].is_empty() => {
                    dl.log_q_on(&ids)
                }
                _ => None,
            };
            let j = match residual {
                // SpecInfer's multi-step speculative sampling over the
                // draws, in draw order (a refused draw is an attempt
                // rejected with certainty)
                Some(lq) => {
                    let tries: Vec<Option<usize>> = attempts[slot]
                        .iter()
                        .map(|t| ids.binary_search(t).ok())
                        .collect();
                    multi_step(rng, &law, &lq, &tries).map(MultiStep::index)
                }
                None if sampled => sample_log(rng, &law).ok(),
                None => argmax(&law),
            };
            let Some(j) = j else {
                state.constraint.rollback(accepted)?;
                return Err(VerifyError::EmptySupport {
                    position,
                    what: "target",
                });
            };
            let y = ids[j];
            state.constraint.advance(y)?;
            prefix.push(y);
            match kids[slot].iter().find(|(u, _)| *u == y) {
                Some(&(_, Some(s))) => {
                    accepted += 1;
                    slot = s + 1;
                }
                Some(&(_, None)) => {
                    // the drafted EOS
                    accepted += 1;
                    break;
                }
                None => {
                    extra = Some(y);
                    break;
                }
            }
        }

        // 5. Commit; the models keep what they share with the new context.
        let drafted_path = prefix[pos0..pos0 + accepted].to_vec();
        ctx.extend_from_slice(&drafted_path);
        self.draft.rewind(&ctx);
        state.committed = prefix;
        ctx.extend_from_slice(&state.committed[pos0 + accepted..]);
        let keep = common_prefix(self.target.context(), &ctx);
        if self.target.context().len() > keep {
            self.target.truncate(keep);
        }
        self.stats.rounds += 1;
        self.stats.drafted += kept;
        self.stats.nodes_drafted += tree.len();
        self.stats.nodes_scored += scored.len();
        self.stats.accepted += accepted;
        self.stats.emitted += state.committed.len() - pos0;
        Ok(RoundReport {
            forced: Vec::new(),
            drafted: drafted_path,
            accepted,
            extra,
        })
    }

    /// Target logits after `committed` (the root row) and after every node
    /// of `tree` appended to it, in one [`LanguageModel::tree_logits`]
    /// call: the committed tokens past the target's cache (at least the
    /// last one, re-fed as in [`Self::target_rows`]) go in as a chain with
    /// the tree under its last node. Two calls on the first round, where
    /// the context is empty.
    fn target_tree_rows(
        &mut self,
        committed: &[TokenId],
        tree: &DraftTree,
        vocab: usize,
    ) -> Result<(Vec<f32>, Vec<Vec<f32>>), VerifyError> {
        let (root, rows) = if committed.is_empty() {
            self.target.truncate(0);
            let root = self.target.next_logits()?;
            self.stats.target_calls += 1;
            let rows = if tree.is_empty() {
                Vec::new()
            } else {
                self.stats.target_calls += 1;
                let m = self.target.tree_logits(tree)?;
                m.rows().into_iter().map(|r| r.to_vec()).collect()
            };
            (root, rows)
        } else {
            let common = common_prefix(self.target.context(), committed).min(committed.len() - 1);
            self.target.truncate(common);
            let lead = &committed[common..];
            let off = lead.len();
            let mut full = DraftTree::chain(lead.to_vec());
            for (p, &t) in tree.parents().iter().zip(tree.tokens()) {
                full.push(Some(p.map_or(off - 1, |p| p + off)), t)?;
            }
            let m = self.target.tree_logits(&full)?;
            self.stats.target_calls += 1;
            if m.nrows() != full.len() {
                return Err(VerifyError::Model(zapspec_core::ModelError::Backend(
                    format!(
                        "target returned {} rows for a tree of {}",
                        m.nrows(),
                        full.len()
                    ),
                )));
            }
            let mut it = m.rows().into_iter().skip(off - 1).map(|r| r.to_vec());
            let root = it.next().unwrap_or_default();
            (root, it.collect())
        };
        if rows.len() != tree.len() {
            return Err(VerifyError::Model(zapspec_core::ModelError::Backend(
                format!(
                    "target returned {} rows for a tree of {}",
                    rows.len(),
                    tree.len()
                ),
            )));
        }
        if let Some(r) = std::iter::once(&root)
            .chain(&rows)
            .find(|r| r.len() != vocab)
        {
            return Err(VerifyError::VocabMismatch {
                what: "target logits",
                got: r.len(),
                want: vocab,
            });
        }
        Ok((root, rows))
    }

    /// Target logits at the position after `committed` and after each of
    /// `block`, in one forward pass: the last committed token is re-fed
    /// together with the block (its KV entry is recomputed), so a round costs
    /// one target call (two on the first round, where the context is empty).
    fn target_rows(
        &mut self,
        committed: &[TokenId],
        block: &[TokenId],
        vocab: usize,
    ) -> Result<Vec<Vec<f32>>, VerifyError> {
        let mut rows = Vec::with_capacity(block.len() + 1);
        if committed.is_empty() {
            self.target.truncate(0);
            rows.push(self.target.next_logits()?);
            self.stats.target_calls += 1;
            if !block.is_empty() {
                let m = self.target.prefill(block)?;
                self.stats.target_calls += 1;
                rows.extend(m.rows().into_iter().map(|r| r.to_vec()));
            }
        } else {
            let common = common_prefix(self.target.context(), committed).min(committed.len() - 1);
            self.target.truncate(common);
            let mut feed = committed[common..].to_vec();
            feed.extend_from_slice(block);
            let m = self.target.prefill(&feed)?;
            self.stats.target_calls += 1;
            let skip = m.nrows().saturating_sub(block.len() + 1);
            rows.extend(m.rows().into_iter().skip(skip).map(|r| r.to_vec()));
        }
        if rows.len() != block.len() + 1 {
            return Err(VerifyError::Model(zapspec_core::ModelError::Backend(
                format!(
                    "target returned {} rows for a block of {}",
                    rows.len(),
                    block.len() + 1
                ),
            )));
        }
        if let Some(r) = rows.iter().find(|r| r.len() != vocab) {
            return Err(VerifyError::VocabMismatch {
                what: "target logits",
                got: r.len(),
                want: vocab,
            });
        }
        Ok(rows)
    }
}
