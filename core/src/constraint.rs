//! The [`Constraint`] trait: one matcher state over a vocabulary.
//!
//! ## The EOS convention
//!
//! Every constraint masks over a vocabulary that contains an EOS token.
//! EOS is in the mask exactly when the tokens so far form a complete member
//! of the language ([`Constraint::is_accepting`]); advancing by EOS
//! *finishes* the matcher, after which the mask is empty. Rolling back counts
//! EOS as a token like any other, so speculative decoding can undo it.

use crate::token_set::TokenSet;
use crate::vocab::TokenId;

/// A token the constraint does not allow at this position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("token {token} rejected at position {position}: {reason}")]
pub struct Rejected {
    pub token: TokenId,
    /// Number of tokens consumed before the rejected one.
    pub position: usize,
    pub reason: String,
}

/// Rolling back more tokens than were consumed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot roll back {requested} tokens: only {available} consumed")]
pub struct RollbackError {
    pub requested: usize,
    pub available: usize,
}

/// The bookkeeping every [`Constraint::rollback`] shares: refuses rolling
/// back more than `available` tokens, un-finishes a matcher whose last
/// token was EOS (which counts as one token), and returns how many
/// non-EOS tokens are left to undo.
pub fn rollback_eos(
    n: usize,
    available: usize,
    finished: &mut bool,
) -> Result<usize, RollbackError> {
    if n > available {
        return Err(RollbackError {
            requested: n,
            available,
        });
    }
    if n > 0 && *finished {
        *finished = false;
        return Ok(n - 1);
    }
    Ok(n)
}

/// One matcher state over a vocabulary: computes the allowed-token mask,
/// advances by a token, forks (`Clone`) and rolls back for speculative
/// decoding.
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

    /// Sparse mask: when the constraint can list its allowed next tokens
    /// without a vocabulary-sized pass, clears `out`, pushes them (any
    /// order, each once) and returns `true`; otherwise returns `false` and
    /// leaves `out` unspecified. The listed set must equal
    /// [`fill_mask`](Constraint::fill_mask)'s. One-step look-ahead (the
    /// future-validity paper's OneStep-Cheap, Def. 9) scores every
    /// candidate's successor set, so this turns `|A_t|` mask passes of
    /// `|V|/64` words into `Σ |A_{t+1}|` work. Default: `false`.
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
    /// [`mask_key`](Constraint::mask_key) `Some(k)`; `None` when `t` is not
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

    /// Tokens that are forced: while the mask has exactly one member and it
    /// is not EOS, that token is the only continuation (fast-forwarding,
    /// ZapFormat §5 / "jump-forward"). Returns them without consuming them;
    /// stops after `limit` tokens.
    fn forced_tokens(&mut self, limit: usize) -> Vec<TokenId> {
        let mut f = self.fork();
        let mut out = Vec::new();
        let mut m = TokenSet::new(self.vocab_size());
        while out.len() < limit {
            f.fill_mask(&mut m);
            match m.single() {
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

//
