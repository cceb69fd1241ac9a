//! The [`Constraint`] trait (one matcher state over a vocabulary), the
//! [`Matcher`] trait that derives it from a language's own transitions, and
//! the [`LookAhead`] extension used by one-step look-ahead.
//!
//! ## The EOS convention
//!
//! Every constraint masks over a vocabulary that contains an EOS token.
//! EOS is in the mask exactly when the tokens so far form a complete member
//! of the language ([`Constraint::is_accepting`]); advancing by EOS
//! *finishes* the matcher, after which the mask is empty and every token is
//! refused ([`RejectReason::Finished`]). Rolling back counts EOS as a token
//! like any other, so speculative decoding can undo it.
//!
//! ## `Matcher` or `Constraint`?
//!
//! That convention is the same for every language, so it is written once:
//! a matcher implements [`Matcher`] — its vocabulary, the allowed non-EOS
//! tokens ([`Matcher::fill_next`]), one step on a non-EOS token
//! ([`Matcher::step`]), undoing steps ([`Matcher::unstep`]) and whether the
//! prefix is a complete member ([`Matcher::is_complete`]) — plus a place to
//! keep the finished flag, and gets [`Constraint`] from the blanket
//! `impl<M: Matcher> Constraint for M` (EOS handling, the finished state,
//! rollback counting and the [`Rejected`] position). Implement
//! [`Constraint`] by hand only for a type whose EOS handling is not its own
//! — e.g. a wrapper that forwards to an inner constraint — or that does not
//! fit the step/unstep shape.
//!
//! ## The look-ahead extension
//!
//! [`LookAhead`] holds the hooks only one-step look-ahead (the
//! future-validity paper's OneStep-Cheap, Def. 9) uses: sparse masks, mask
//! keys and whole-set successor walks. Like `rand`'s `Rng` over `RngCore`,
//! it extends [`Constraint`] without burdening every implementor: every
//! hook has a default meaning "not available", so `impl LookAhead for X {}`
//! is a valid (slow-path) implementation.

use crate::token_set::TokenSet;
use crate::vocab::TokenId;

/// Why a constraint refused a token (the reason in [`Rejected`]): only what
/// every constraint can mean. Why an engine's own language has no
/// transition (a special token under a text grammar, a cached rejected
/// prefix, a bracket past a depth bound) is [`NotAllowed`](RejectReason::NotAllowed)
/// here; an engine that explains further does so in its own types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RejectReason {
    /// EOS was already consumed; nothing may follow it.
    #[error("already finished")]
    Finished,
    /// EOS while the tokens so far are not a complete member.
    #[error("EOS before a complete member")]
    EosNotAccepting,
    /// No member of the language continues the prefix with this token (no
    /// transition, not a viable continuation, not in the valid set; a
    /// special token where the language is text).
    #[error("no member continues with this token")]
    NotAllowed,
    /// A token id outside the constraint's vocabulary.
    #[error("token outside the vocabulary")]
    OutOfVocabulary,
}

/// A token the constraint does not allow at this position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("token {token} rejected at position {position}: {reason}")]
pub struct Rejected {
    /// The refused token.
    pub token: TokenId,
    /// Number of tokens consumed before the rejected one.
    pub position: usize,
    /// Why it was refused.
    pub reason: RejectReason,
}

/// Rolling back more tokens than were consumed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot roll back {requested} tokens: only {available} consumed")]
pub struct RollbackError {
    /// Tokens asked to undo.
    pub requested: usize,
    /// Tokens consumed (EOS included), the most that can be undone.
    pub available: usize,
}

/// One matcher state over a vocabulary: computes the allowed-token mask,
/// advances by a token, forks (`Clone`) and rolls back for speculative
/// decoding.
///
/// Most languages implement [`Matcher`] instead and get this trait from the
/// blanket impl (see the [module docs](self)); the look-ahead hooks of
/// one-step look-ahead are the extension trait [`LookAhead`].
pub trait Constraint: Clone {
    /// Size of the vocabulary the masks range over (EOS included).
    fn vocab_size(&self) -> usize;

    /// The EOS token of that vocabulary.
    fn eos(&self) -> TokenId;

    /// Writes the set of allowed next tokens into `mask` (its universe is
    /// [`vocab_size`](Constraint::vocab_size)); EOS is allowed iff
    /// [`is_accepting`](Constraint::is_accepting). `&mut self` lets engines
    /// update caches.
    fn fill_mask(&mut self, mask: &mut TokenSet);

    /// Consumes token `t`, or refuses it and leaves the state unchanged.
    fn advance(&mut self, t: TokenId) -> Result<(), Rejected>;

    /// Undoes the last `n_tokens` advances.
    fn rollback(&mut self, n_tokens: usize) -> Result<(), RollbackError>;

    /// True when the tokens consumed so far form a complete member of the
    /// language (so EOS is allowed now).
    fn is_accepting(&self) -> bool;

    /// True once EOS has been consumed.
    fn is_finished(&self) -> bool;

    /// Number of tokens consumed (EOS included), i.e. how far `rollback` can go.
    fn num_tokens(&self) -> usize;

    /// An independent copy of the state (for one-step look-ahead and
    /// speculative branches). Engines may share immutable tables.
    fn fork(&self) -> Self {
        self.clone()
    }

    /// A fresh mask, filled.
    fn mask(&mut self) -> TokenSet {
        let mut m = TokenSet::new(self.vocab_size());
        self.fill_mask(&mut m);
        m
    }

    /// Whether `t` would be accepted now (by default: try it on a fork).
    fn allows(&mut self, t: TokenId) -> bool {
        let mut f = self.fork();
        f.advance(t).is_ok()
    }

    /// The sole allowed next token, when the mask has exactly one member
    /// (EOS included: a forced EOS is returned like any other token);
    /// `None` when it has none or several. `scratch` is a mask the caller
    /// reuses; its contents afterwards are unspecified. Default: fill the
    /// mask into `scratch` and ask [`TokenSet::single`]. An engine that can
    /// tell a singleton without building the whole mask (a cached mask, a
    /// state with one outgoing edge) may override it; the answer must equal
    /// the default's.
    fn fill_mask_single(&mut self, scratch: &mut TokenSet) -> Option<TokenId> {
        if scratch.universe() != self.vocab_size() {
            *scratch = TokenSet::new(self.vocab_size());
        }
        self.fill_mask(scratch);
        scratch.single()
    }

    /// Tokens that are forced: while the mask has exactly one member and it
    /// is not EOS, that token is the only continuation (fast-forwarding,
    /// ZapFormat §5 / "jump-forward"). Returns them without consuming them;
    /// stops after `limit` tokens.
    fn forced_tokens(&mut self, limit: usize) -> Vec<TokenId> {
        let mut f = self.fork();
        let mut out = Vec::new();
        let mut m = TokenSet::new(self.vocab_size());
        while out.len() < limit {
            match f.fill_mask_single(&mut m) {
                Some(t) if t != f.eos() => {
                    if f.advance(t).is_err() {
                        break;
                    }
                    out.push(t);
                }
                _ => break,
            }
        }
        out
    }
}

/// A language's own transitions on non-EOS tokens; the blanket
/// `impl<M: Matcher> Constraint for M` adds the EOS convention (see the
/// [module docs](self)): EOS allowed iff [`is_complete`](Matcher::is_complete),
/// consuming it sets the finished flag, an empty mask and
/// [`RejectReason::Finished`] after it, and rollback that un-finishes
/// first (EOS counts as one token) and hands the remaining count to
/// [`unstep`](Matcher::unstep). The derived
/// [`num_tokens`](Constraint::num_tokens) is
/// [`num_steps`](Matcher::num_steps) plus one when finished.
///
/// `vocab_size` and `eos` share their names with [`Constraint`]'s; where
/// both traits are in scope, call them as `Constraint::eos(&m)`. Implement
/// this trait by path (`impl zapspec_core::Matcher for X`) to keep it out
/// of scope elsewhere.
///
/// Costs: the derived `fill_mask` is [`fill_next`](Matcher::fill_next)
/// plus one bit write; `advance` and `rollback` add `O(1)` to
/// [`step`](Matcher::step) and [`unstep`](Matcher::unstep).
pub trait Matcher: Clone {
    /// Size of the vocabulary the masks range over (EOS included).
    fn vocab_size(&self) -> usize;

    /// The EOS token of that vocabulary.
    fn eos(&self) -> TokenId;

    /// Overwrites `mask` with the allowed non-EOS tokens of the current
    /// (unfinished) state. It may also set the EOS bit, but only when
    /// [`is_complete`](Matcher::is_complete) (a cached full mask may be
    /// copied as is); the caller sets the EOS bit to `is_complete()`
    /// afterwards either way. Never called once finished.
    fn fill_next(&mut self, mask: &mut TokenSet);

    /// Consumes the non-EOS token `t` (the caller has handled EOS and the
    /// finished state), or refuses it with the reason and leaves the state
    /// unchanged.
    fn step(&mut self, t: TokenId) -> Result<(), RejectReason>;

    /// Undoes the last `n` steps; the caller guarantees
    /// `n <= num_steps()` (`n` may be 0).
    fn unstep(&mut self, n: usize);

    /// Non-EOS tokens consumed.
    fn num_steps(&self) -> usize;

    /// True when the steps so far form a complete member of the language
    /// (EOS is allowed). Consulted only while not finished.
    fn is_complete(&self) -> bool;

    /// The finished flag (EOS consumed) the blanket impl keeps.
    fn finished(&self) -> bool;

    /// Sets the finished flag; only the blanket impl calls this.
    fn set_finished(&mut self, finished: bool);
}

impl<M: Matcher> Constraint for M {
    fn vocab_size(&self) -> usize {
        Matcher::vocab_size(self)
    }

    fn eos(&self) -> TokenId {
        Matcher::eos(self)
    }

    fn fill_mask(&mut self, mask: &mut TokenSet) {
        if self.finished() {
            mask.clear();
            return;
        }
        self.fill_next(mask);
        let eos = Matcher::eos(self);
        if self.is_complete() {
            mask.insert(eos);
        } else {
            mask.remove(eos);
        }
    }

    fn advance(&mut self, t: TokenId) -> Result<(), Rejected> {
        let position = Constraint::num_tokens(self);
        let reject = |reason| Rejected {
            token: t,
            position,
            reason,
        };
        if self.finished() {
            return Err(reject(RejectReason::Finished));
        }
        if t == Matcher::eos(self) {
            if self.is_complete() {
                self.set_finished(true);
                return Ok(());
            }
            return Err(reject(RejectReason::EosNotAccepting));
        }
        self.step(t).map_err(reject)
    }

    fn rollback(&mut self, n_tokens: usize) -> Result<(), RollbackError> {
        let available = Constraint::num_tokens(self);
        if n_tokens > available {
            return Err(RollbackError {
                requested: n_tokens,
                available,
            });
        }
        let mut n = n_tokens;
        if n > 0 && self.finished() {
            self.set_finished(false);
            n -= 1;
        }
        self.unstep(n);
        Ok(())
    }

    fn is_accepting(&self) -> bool {
        !self.finished() && self.is_complete()
    }

    fn is_finished(&self) -> bool {
        self.finished()
    }

    fn num_tokens(&self) -> usize {
        self.num_steps() + usize::from(self.finished())
    }
}

/// The look-ahead hooks of one-step look-ahead (the future-validity paper's
/// OneStep-Cheap, Def. 9), an extension of [`Constraint`]: every hook is
/// optional and defaults to "not available", so `impl LookAhead for X {}`
/// is correct and callers fall back to forking and
/// [`fill_mask`](Constraint::fill_mask).
pub trait LookAhead: Constraint {
    /// Sparse mask: when the constraint can list its allowed next tokens
    /// without a vocabulary-sized pass, clears `out`, pushes them (any
    /// order, each once) and returns `true`; otherwise returns `false` and
    /// leaves `out` unspecified. The listed set must equal
    /// [`fill_mask`](Constraint::fill_mask)'s. One-step look-ahead (Def. 9)
    /// scores every candidate's successor set, so this turns `|A_t|` mask
    /// passes of `|V|/64` words into `Σ |A_{t+1}|` work. Default: `false`.
    fn allowed_sparse(&mut self, out: &mut Vec<TokenId>) -> bool {
        let _ = out;
        false
    }

    /// A key of the current mask: two states of the same matcher (same
    /// shared tables) with equal `Some` keys have equal masks, so callers
    /// may cache per-mask work by key (e.g. a DFA's state, a Dyck
    /// automaton's stack top). Default: `None` (no such key).
    fn mask_key(&self) -> Option<u64> {
        None
    }

    /// One-step look-ahead without advancing: `Some(k)` when `t` (not EOS)
    /// is allowed now and the state after `t` would report
    /// [`mask_key`](LookAhead::mask_key) `Some(k)`; `None` when `t` is not
    /// allowed or the constraint cannot tell cheaply (callers then fork and
    /// advance). Lets a look-ahead over a large `A_t` group candidates by
    /// successor mask in O(1) each (a DFA: one table lookup). Default: `None`.
    fn successor_mask_key(&self, t: TokenId) -> Option<u64> {
        let _ = t;
        None
    }

    /// One-step look-ahead over the whole valid set without advancing:
    /// calls `f(t, next)` for every allowed non-EOS token `t`, in
    /// increasing token order, where `next` lists (sparsely, each once) the
    /// tokens allowed after `t`; returns `true`. Constraints that cannot do
    /// this cheaply return `false` without calling `f` (the default). A
    /// trie walks a node's children once instead of searching for each.
    fn for_each_successor(&self, f: &mut dyn FnMut(TokenId, &[TokenId])) -> bool {
        let _ = f;
        false
    }

    /// One-step look-ahead over the whole valid set, grouped by successor
    /// mask: calls `f(key, tokens)` for groups that partition the allowed
    /// non-EOS tokens (each token in exactly one group, groups in any
    /// order), where advancing by any token of a group reaches a state
    /// whose [`mask_key`](LookAhead::mask_key) is `Some(key)`; returns
    /// `true`. Constraints that cannot do this cheaply return `false`
    /// without calling `f` (the default). A DFA lists its state's
    /// precomputed transition classes, so a look-ahead over `|A_t|`
    /// candidates costs one successor mass per distinct successor state
    /// plus one write per candidate.
    fn for_each_successor_group(&self, f: &mut dyn FnMut(u64, &[TokenId])) -> bool {
        let _ = f;
        false
    }

    /// The allowed set of any state of this matcher whose
    /// [`mask_key`](LookAhead::mask_key) is `Some(key)`, borrowed from the
    /// matcher's shared tables — the set [`fill_mask`](Constraint::fill_mask)
    /// would write there, EOS included exactly when it would be — or `None`
    /// when the constraint keeps no such table (the default) or does not
    /// know `key`. With [`for_each_successor_group`](LookAhead::for_each_successor_group)
    /// this makes a whole one-step look-ahead free of forks, advances and
    /// mask copies: a DFA returns its state's precomputed mask, or a sorted
    /// member list when that is sparse.
    fn allowed_by_key(&self, key: u64) -> Option<AllowedRef<'_>> {
        let _ = key;
        None
    }

    /// One-step look-ahead over the valid set grouped by successor mask,
    /// without advancing and without keys: fills `out` with classes that
    /// partition the non-EOS members of `mask` (the constraint's current
    /// allowed set, as [`fill_mask`](Constraint::fill_mask) writes it) so
    /// that advancing by any two tokens of one class reaches states with
    /// equal masks. The classes are the listed ones
    /// ([`SuccessorClasses::iter`]) and, when [`SuccessorClasses::rest`]
    /// is `Some(r)`, one more: every non-EOS member of `mask` not listed,
    /// `r` among them (inside a string of a grammar, most of a vocabulary
    /// is that one class and is never enumerated). Returns `true`;
    /// constraints that cannot tell cheaply return `false` (the default),
    /// leaving `out` unspecified. A look-ahead then pays one successor
    /// mask per class instead of one per candidate, and can rank classes
    /// by their mass before paying for any of them.
    fn successor_classes(&self, mask: &TokenSet, out: &mut SuccessorClasses) -> bool {
        let _ = (mask, out);
        false
    }
}

/// An allowed set borrowed from a matcher's tables
/// ([`LookAhead::allowed_by_key`]).
#[derive(Debug, Clone, Copy)]
pub enum AllowedRef<'a> {
    /// The members, each once (any order).
    Sparse(&'a [TokenId]),
    /// A mask over the whole vocabulary.
    Dense(&'a TokenSet),
}

impl AllowedRef<'_> {
    /// Number of members.
    pub fn len(&self) -> usize {
        match self {
            AllowedRef::Sparse(ids) => ids.len(),
            AllowedRef::Dense(set) => set.count(),
        }
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        match self {
            AllowedRef::Sparse(ids) => ids.is_empty(),
            AllowedRef::Dense(set) => set.is_empty(),
        }
    }
}

/// Candidates grouped by successor mask ([`LookAhead::successor_classes`]):
/// listed classes stored end to end, and an optional implicit class of
/// every candidate not listed. Reused across calls (no allocation once
/// warm).
#[derive(Debug, Clone, Default)]
pub struct SuccessorClasses {
    tokens: Vec<TokenId>,
    /// `ends[i]`: one past the last token of class `i` in `tokens`.
    ends: Vec<u32>,
    rest: Option<TokenId>,
}

impl SuccessorClasses {
    /// Empty: no class listed, no implicit class.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties it for the next call.
    pub fn clear(&mut self) {
        self.tokens.clear();
        self.ends.clear();
        self.rest = None;
    }

    /// Adds `t` to the open class (the next [`Self::close`] ends it).
    pub fn push(&mut self, t: TokenId) {
        self.tokens.push(t);
    }

    /// Ends the open class; nothing happens when it is empty.
    pub fn close(&mut self) {
        let n = self.tokens.len() as u32;
        if self.ends.last().copied().unwrap_or(0) < n {
            self.ends.push(n);
        }
    }

    /// Lists one class (closing the open one first).
    pub fn push_class(&mut self, toks: &[TokenId]) {
        self.close();
        self.tokens.extend_from_slice(toks);
        self.close();
    }

    /// Declares the implicit class of every candidate not listed, with
    /// `representative` one of its members.
    pub fn set_rest(&mut self, representative: TokenId) {
        self.rest = Some(representative);
    }

    /// A member of the implicit class, when there is one.
    pub fn rest(&self) -> Option<TokenId> {
        self.rest
    }

    /// Number of listed classes.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no class is listed.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Number of listed tokens.
    pub fn listed_tokens(&self) -> usize {
        self.ends.last().copied().unwrap_or(0) as usize
    }

    /// Listed class `i`.
    pub fn class(&self, i: usize) -> &[TokenId] {
        let a = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.tokens[a..self.ends[i] as usize]
    }

    /// The listed classes, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[TokenId]> + '_ {
        (0..self.len()).map(|i| self.class(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Tokens `0..3`, EOS `3`: strings of at most 4 tokens in which `2`
    /// only follows `0`; complete at even length.
    #[derive(Clone, Debug, Default)]
    struct Toy {
        toks: Vec<TokenId>,
        finished: bool,
    }

    impl Matcher for Toy {
        fn vocab_size(&self) -> usize {
            4
        }
        fn eos(&self) -> TokenId {
            3
        }
        fn fill_next(&mut self, mask: &mut TokenSet) {
            mask.clear();
            for t in 0..3 {
                if self.can_step(t) {
                    mask.insert(t);
                }
            }
        }
        fn step(&mut self, t: TokenId) -> Result<(), RejectReason> {
            if t >= 3 {
                return Err(RejectReason::OutOfVocabulary);
            }
            if !self.can_step(t) {
                return Err(RejectReason::NotAllowed);
            }
            self.toks.push(t);
            Ok(())
        }
        fn unstep(&mut self, n: usize) {
            self.toks.truncate(self.toks.len() - n);
        }
        fn num_steps(&self) -> usize {
            self.toks.len()
        }
        fn is_complete(&self) -> bool {
            self.toks.len() & 1 == 0
        }
        fn finished(&self) -> bool {
            self.finished
        }
        fn set_finished(&mut self, finished: bool) {
            self.finished = finished;
        }
    }

    impl Toy {
        fn can_step(&self, t: TokenId) -> bool {
            self.toks.len() < 4 && (t != 2 || self.toks.last() == Some(&0))
        }
    }

    #[test]
    fn eos_convention_and_reasons() {
        let mut c = Toy::default();
        assert!(c.mask().contains(3), "empty string is complete");
        c.advance(1).unwrap();
        assert!(!c.is_accepting());
        let e = c.advance(3).unwrap_err();
        assert_eq!((e.position, e.reason), (1, RejectReason::EosNotAccepting));
        assert_eq!(c.advance(2).unwrap_err().reason, RejectReason::NotAllowed);
        c.advance(0).unwrap();
        c.advance(3).unwrap();
        assert!(c.is_finished() && c.mask().is_empty());
        assert_eq!(c.num_tokens(), 3);
        let e = c.advance(0).unwrap_err();
        assert_eq!((e.position, e.reason), (3, RejectReason::Finished));
        assert_eq!(
            e.to_string(),
            "token 0 rejected at position 3: already finished"
        );
        assert_eq!(
            c.rollback(4),
            Err(RollbackError {
                requested: 4,
                available: 3
            })
        );
        c.rollback(2).unwrap();
        assert!(!c.is_finished());
        assert_eq!(c.num_tokens(), 1);
        assert_eq!(c.toks, vec![1]);
    }

    proptest! {
        /// Random advances (EOS included) and rollbacks leave the same
        /// state as replaying the committed tokens on a fresh matcher.
        #[test]
        fn advance_rollback_equals_replay(ops in prop::collection::vec((0u32..5, 0usize..4, any::<bool>()), 0..40)) {
            let mut c = Toy::default();
            let mut committed: Vec<TokenId> = Vec::new();
            for (t, back, roll) in ops {
                if roll {
                    let r = c.rollback(back);
                    if back <= committed.len() {
                        prop_assert!(r.is_ok());
                        committed.truncate(committed.len() - back);
                    } else {
                        prop_assert!(r.is_err());
                    }
                } else if c.advance(t).is_ok() {
                    committed.push(t);
                }
                let mut fresh = Toy::default();
                for &u in &committed {
                    fresh.advance(u).unwrap();
                }
                prop_assert_eq!(c.mask(), fresh.mask());
                prop_assert_eq!(c.num_tokens(), committed.len());
                prop_assert_eq!(c.num_tokens(), fresh.num_tokens());
                prop_assert_eq!(c.is_finished(), fresh.is_finished());
                prop_assert_eq!(c.is_accepting(), fresh.is_accepting());
            }
        }
    }
}
