//! Grammar-forced tokens as free drafts (XGrammar's and SGLang's
//! "jump-forward", inside the speculative loop).
//!
//! Where the constraint's token-level mask `A_t` has exactly one member
//! `y` and `y` is not EOS, every law the loop samples from puts
//! probability 1 on `y`. A round therefore first commits such tokens
//! without sampling ([`advance_forced`], at most
//! [`ForcedTokens::max_len`](crate::ForcedTokens::max_len) per round and
//! never past [`SpecConfig::max_tokens`](crate::SpecConfig::max_tokens)),
//! then lets the drafter draft from the context *after* them
//! ([`DraftContext`](crate::DraftContext) includes them), and scores the
//! forced tokens and the draft in the same target forward: the forced
//! tokens are the lead of the block the target is fed (in tree mode, a
//! chain every path of the tree hangs under). A forced stretch of length
//! `m` costs no target forward of its own, where plain constrained
//! decoding spends `m` ([`NoDraft`](crate::NoDraft)) and speculation
//! spends up to `⌈m/(γ+1)⌉`. Counted in
//! [`RoundStats::forced`](crate::RoundStats::forced) and
//! [`RoundReport::forced`](crate::RoundReport::forced).
//!
//! ## Why the output law is unchanged
//!
//! * **Leviathan (`μ^proj`)**: the verifier's target at a position is the
//!   masked `p̃_t(y) = p_t(y)·1[y∈A_t] / Σ_{A_t} p_t`; with `A_t = {y}` it
//!   is 1 on `y` (`compact_log_law` over a one-element list is `[0]`).
//!   Plain constrained decoding, and the loop with forcing off, emit `y`
//!   with probability 1 there, whatever was drafted (a drafted `y` is
//!   accepted with probability `min(1, 1/q̃(y)) = 1` without consuming
//!   randomness; a bonus token is a draw from a one-point law).
//! * **FVO-Spec (`μ*`, `μ^Φ̂`)**: the target is `p_t(y)·Φ̂_t(y)`
//!   renormalised on `A_t` (the decoder's `phi_law`, then
//!   `compact_log_law_aligned`); over a one-element `A_t` the
//!   normalisation divides the single weight by itself, so `y` gets 1
//!   whenever `p_t(y)·Φ̂_t(y) > 0`, for every estimator — the value of
//!   Φ̂ at a forced position never changes the law. The only other
//!   outcomes of that code are errors: `Φ̂ = 0` or `p_t(y) = 0` (no mass,
//!   `EmptySupport`) and a missing estimate (`MissingEstimate`). With the
//!   exact Φ neither is reachable: a prefix the loop reaches has
//!   `Φ > 0`, and with one continuation `Φ(prefix) = p(y)·Φ(prefix·y)`,
//!   so both factors are positive. Forcing does not query Φ̂ at forced
//!   positions, so an estimator that would fail there (or that draws
//!   randomness per call) is simply not asked; its draws at the other
//!   positions are as independent as before.
//! * **Equality diagnostic**: its one-step marginal
//!   `p_i(1 + q_i − ⟨p, q⟩)` is 1 on a one-point valid set as well, so
//!   greedy outputs are unchanged. Its sampled law is biased and depends
//!   on where blocks start (a bonus position is drawn from `π` without
//!   the bias); forcing moves block starts, so its sampled law may differ
//!   with forcing on — as it differs between two values of γ. It is a
//!   diagnostic, not a sampler of a target law.
//! * **Greedy**: the argmax of a one-point law is its point. Greedy
//!   decoding consumes no randomness, so greedy outputs are identical
//!   with forcing on or off, for every drafter and verifier, linear or
//!   tree.
//! * **Top-p**: nucleus truncation keeps the only token.
//!
//! Sampled outputs are identical *in law*, not draw by draw: the drafter
//! now drafts from a later context and consumes the random stream
//! differently. The verification randomness of the positions after the
//! forced tokens is unchanged in kind (forced tokens consume none).
//!
//! **EOS** is never forced: a mask `{EOS}` ends the generation the normal
//! way (the round's verification emits it, and
//! [`StopReason::ConstraintFinished`](crate::StopReason::ConstraintFinished)
//! is reported as before).
//!
//! **Zero target mass.** Forced tokens are committed before the target
//! sees them, so a target that gives the forced token probability 0 (a
//! `−∞` logit on the only valid token) is not detected there: plain
//! decoding reports `EmptySupport` at such a prefix (its `μ^proj` is
//! undefined beyond it), while forcing appends the token. Such a prefix is
//! reached only when the target gives positive mass to a prefix whose sole
//! continuation it rules out — never under a target with finite logits.
//! [`ForcedTokens::off`](crate::ForcedTokens::off) restores the error.
//!
//! ## Token level only
//!
//! Only tokens are forced, never bytes: a token is forced exactly when
//! the *token-level* mask leaves no other token. A grammar that forces a
//! byte string (e.g. a fixed JSON key) but admits several tokenisations of
//! it has a mask with several members there, so nothing is forced and the
//! model chooses the tokenisation as it would without forcing. This is why
//! the token-healing problem of byte-level jump-forward (llguidance,
//! SGLang: forced bytes re-tokenised differently from how a canonical
//! tokenizer would merge them, putting the model off-distribution) does
//! not arise here, and why the law is unchanged rather than approximately
//! so.

use zapspec_core::{Constraint, TokenId, TokenSet};

use crate::VerifyError;

/// Advances `constraint` through the tokens it forces: while its mask has
/// exactly one member ([`Constraint::fill_mask_single`]), that member is
/// not EOS and fewer than `limit` tokens were taken, the member is
/// appended to `out` and consumed. Returns how many were taken. `scratch`
/// is a reused mask (any universe).
///
/// Cost: one `fill_mask_single` per forced token plus one for the
/// position that ends the stretch, and one `advance` per forced token.
pub fn advance_forced<C: Constraint>(
    constraint: &mut C,
    scratch: &mut TokenSet,
    limit: usize,
    out: &mut Vec<TokenId>,
) -> Result<usize, VerifyError> {
    let eos = constraint.eos();
    let mut taken = 0usize;
    while taken < limit && !constraint.is_finished() {
        match constraint.fill_mask_single(scratch) {
            Some(t) if t != eos => {
                constraint.advance(t)?;
                out.push(t);
                taken += 1;
            }
            _ => break,
        }
    }
    Ok(taken)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use zapspec_testkit::{TokenTrie, TrieConstraint};

    #[test]
    fn takes_singletons_stops_at_choices_eos_and_limit() {
        // 0 1 2 forced, then {3, 4}; [5, 6] forced then EOS forced
        let trie = Arc::new(TokenTrie::new([
            vec![0u32, 1, 2, 3],
            vec![0, 1, 2, 4],
            vec![5, 6],
        ]));
        let mut c = TrieConstraint::new(trie.clone(), 8, 7);
        let mut scratch = TokenSet::new(0);
        let mut out = Vec::new();
        assert_eq!(
            advance_forced(&mut c, &mut scratch, 10, &mut out).unwrap(),
            0
        );
        c.advance(0).unwrap();
        assert_eq!(
            advance_forced(&mut c, &mut scratch, 1, &mut out).unwrap(),
            1
        );
        assert_eq!(
            advance_forced(&mut c, &mut scratch, 10, &mut out).unwrap(),
            1
        );
        assert_eq!(out, vec![1, 2]);
        assert_eq!(c.num_tokens(), 3);
        let mut c = TrieConstraint::new(trie, 8, 7);
        c.advance(5).unwrap();
        out.clear();
        assert_eq!(
            advance_forced(&mut c, &mut scratch, 10, &mut out).unwrap(),
            1
        );
        assert_eq!(out, vec![6]);
        assert!(c.is_accepting() && !c.is_finished(), "EOS is never forced");
    }
}
