//! GEN_BODY delegation (paper Fig. 7's GEN_BODY state, §2.3): the text of
//! every `<gen>…</gen>` op is itself constrained by an inner
//! [`Constraint`] — e.g. an Earley matcher for a grammar — so an edit's new
//! text is grammar-constrained while its copies stay verbatim.
//! [`NestedProgramConstraint`] is the program FSM of [`crate::fsm`] with
//! that delegation.
//!
//! ## The reading: token-aligned gen bodies
//!
//! The inner constraint is token-level over the same vocabulary, the
//! program FSM is byte-level, and a token may straddle `<gen>` or
//! `</gen>`. We pick this reading (the paper does not discuss it):
//!
//! 1. A token sequence is allowed iff its bytes are a prefix of a valid
//!    program (exactly as for [`ProgramConstraint`](crate::ProgramConstraint))
//!    and **every gen body is token-aligned**: a body — the bytes between
//!    `<gen>` and the first raw `</gen>`, or to the end for the open body —
//!    that is non-empty starts at a token boundary and, once closed, ends
//!    at one (the closing `</gen>` starts a token). An empty body may sit
//!    inside one token (`<gen></gen>` as part of a token).
//! 2. The tokens that make up a body are fed, in order, to a **fresh copy
//!    of the inner constraint** (each gen op's text is one member of the
//!    inner language): every one must be allowed, and a body may be closed
//!    only where the inner constraint is accepting (an empty body needs the
//!    inner constraint to accept the empty sequence). The inner EOS is
//!    never fed; the close plays its role.
//! 3. The inner constraint sees the body **as written**, i.e. after
//!    escaping (`\\` and `<\/gen>`; see the crate docs). For inner
//!    languages that never contain `\` or `</gen>` — most grammars of code
//!    edits — the written body is the text.
//! 4. An allowed sequence is one whose every prefix satisfies 1–2, so the
//!    language is prefix-closed. Consequence: body tokens that happen to
//!    spell a prefix of `</gen>` (`</`, `</ge`) are body text and must be
//!    allowed by the inner constraint; if the next token completes the
//!    raw `</gen>`, the body ends where that prefix began, which must be a
//!    token boundary at which the inner constraint was accepting (the
//!    matcher keeps, per body token, the body offset and whether the inner
//!    constraint accepted there). A token that carries body text and then
//!    the close (`x</gen>`) is never allowed: the inner constraint cannot
//!    take part of a token.
//!
//! So within a body, token `t` is allowed iff either (a) its bytes stay
//! body text (never complete `</gen>`) and the inner constraint allows
//! `t`, or (b) it starts the close (`</gen>…`, or the rest of a `</gen>`
//! begun at an accepting boundary) and its remaining bytes are valid
//! structure — which may open a new body only at the token's end or as an
//! empty body.
//!
//! **No dead-end guarantee.** The program FSM alone never reaches a state
//! without continuations; the intersection with an arbitrary inner
//! constraint can (e.g. the inner language allows a body ending in `\`,
//! which the escape rule cannot close), exactly as for any intersection of
//! two constraints. A decoder meets an empty mask, which
//! [`crate::execute`] reports as an error.
//!
//! ## Costs
//!
//! Masks of the structural states and, per body state, the
//! "stays body text" and "closing" token sets are computed by a pruned
//! walk of the shared [`VocabTrie`](crate::VocabTrie) and cached (bounded
//! by [`FsmConfig::mask_cache_cap`](crate::FsmConfig)). A body step costs
//! the inner constraint's mask plus two `|V|/64`-word set operations;
//! advance walks the token's bytes and advances the inner constraint once;
//! rollback undoes inner advances one by one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use zapspec_core::{Constraint, LookAhead, RejectReason, TokenId, TokenSet, Vocabulary};

use crate::fsm::{ByteState, ProgramFsm, GEN_END};

/// Errors building a [`NestedProgramConstraint`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GenBodyError {
    /// The inner constraint ranges over more token ids than the program
    /// vocabulary has.
    #[error("inner constraint over {inner} tokens, the program vocabulary has {outer}")]
    VocabMismatch {
        /// The inner constraint's vocabulary size.
        inner: usize,
        /// The program vocabulary's size.
        outer: usize,
    },
    /// The inner constraint has already consumed its EOS.
    #[error("the inner constraint is already finished")]
    InnerFinished,
}

/// How a token's bytes are being read (the trie-walk state).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Tw {
    /// Structure, outside any body.
    S(ByteState),
    /// A body was just opened inside this token: the token ends here, or
    /// an empty body's `</gen>` follows at once.
    Opened,
    /// `k` bytes of a `</gen>` that must complete inside this token.
    Close(u8),
    /// Body text only: the walk must not complete `</gen>`.
    Body(ByteState),
}

fn tw_step(w: Tw, b: u8, n: u64, empty_ok: bool) -> Option<Tw> {
    match w {
        Tw::S(s) => {
            let t = s.step(b, n)?;
            Some(if t.in_body() { Tw::Opened } else { Tw::S(t) })
        }
        Tw::Opened => (empty_ok && b == GEN_END[0]).then_some(Tw::Close(1)),
        Tw::Close(k) => {
            let k = k as usize;
            (GEN_END.get(k) == Some(&b)).then(|| {
                if k + 1 == GEN_END.len() {
                    Tw::S(ByteState::GenClose)
                } else {
                    Tw::Close(k as u8 + 1)
                }
            })
        }
        Tw::Body(s) => s.step(b, n).filter(|t| t.in_body()).map(Tw::Body),
    }
}

fn tw_accept(w: Tw) -> bool {
    !matches!(w, Tw::Close(_))
}

/// The byte state after a token that ended in walk state `w`, and whether
/// it opened a body at its end.
fn tw_end(w: Tw) -> (ByteState, bool) {
    match w {
        Tw::S(s) | Tw::Body(s) => (s, false),
        Tw::Opened => (ByteState::Body(0), true),
        // Not accepted; never reached by callers.
        Tw::Close(_) => (ByteState::GenClose, false),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum MaskKey {
    /// Tokens allowed from a structural state.
    Struct(ByteState),
    /// Tokens that stay body text from a body state.
    Body(ByteState),
    /// Tokens that complete a `</gen>` of which `k` bytes are matched and
    /// continue as valid structure.
    Close(u8),
}

/// The shared tables of a [`NestedProgramConstraint`]: the program FSM and
/// a cache of the delegation's masks.
struct Tables<V> {
    fsm: Arc<ProgramFsm<V>>,
    empty_ok: bool,
    cache: Mutex<HashMap<MaskKey, Arc<TokenSet>>>,
}

impl<V: Vocabulary> Tables<V> {
    fn walk(&self, start: Tw, bytes: &[u8]) -> Option<Tw> {
        let n = self.fsm.num_lines();
        bytes
            .iter()
            .try_fold(start, |w, &b| tw_step(w, b, n, self.empty_ok))
            .filter(|&w| tw_accept(w))
    }

    fn mask(&self, key: MaskKey) -> Arc<TokenSet> {
        let get = || {
            self.cache
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&key)
                .cloned()
        };
        if let Some(m) = get() {
            return m;
        }
        let start = match key {
            MaskKey::Struct(s) => Tw::S(s),
            MaskKey::Body(s) => Tw::Body(s),
            MaskKey::Close(k) => Tw::Close(k),
        };
        let n = self.fsm.num_lines();
        let empty_ok = self.empty_ok;
        let m = Arc::new(self.fsm.trie().mask_walk(
            start,
            |w, b| tw_step(w, b, n, empty_ok),
            tw_accept,
        ));
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if c.len() < self.fsm.config().mask_cache_cap {
            c.insert(key, Arc::clone(&m));
        }
        m
    }
}

/// One consumed token's record.
#[derive(Clone, Debug)]
struct Entry<C> {
    /// Byte state after the token.
    state: ByteState,
    /// Bytes of the open body after the token (0 outside a body).
    body_len: usize,
    /// Whether the inner constraint accepted after the token (in a body).
    accepting: bool,
    /// The token was fed to the inner constraint.
    fed: bool,
    /// The token opened a body at its end (a fresh inner constraint).
    opened: bool,
    /// The inner constraint of the body this token closed.
    closed: Option<C>,
}

/// The program FSM with GEN_BODY delegated to an inner constraint `C`
/// (see the [module docs](self) for the exact reading). A
/// [`zapspec_core::Matcher`], hence a [`Constraint`]; forks share the
/// compiled tables by `Arc` and clone the inner constraint states.
pub struct NestedProgramConstraint<V, C> {
    tables: Arc<Tables<V>>,
    proto: C,
    inner: Option<C>,
    history: Vec<Entry<C>>,
    finished: bool,
}

impl<V, C: Clone> Clone for NestedProgramConstraint<V, C> {
    fn clone(&self) -> Self {
        NestedProgramConstraint {
            tables: Arc::clone(&self.tables),
            proto: self.proto.clone(),
            inner: self.inner.clone(),
            history: self.history.clone(),
            finished: self.finished,
        }
    }
}

impl<V, C> std::fmt::Debug for NestedProgramConstraint<V, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NestedProgramConstraint")
            .field("state", &self.history.last().map(|e| e.state))
            .field("steps", &self.history.len().saturating_sub(1))
            .field("in_body", &self.inner.is_some())
            .field("finished", &self.finished)
            .finish()
    }
}

impl<V: Vocabulary, C: Constraint> NestedProgramConstraint<V, C> {
    /// The program FSM `fsm` whose every gen body is constrained by a fresh
    /// copy of `inner` (in its current state). `inner` ranges over the ids
    /// `0..inner.vocab_size()` of the program vocabulary (usually all of
    /// them). `O(1)`: masks are computed lazily.
    pub fn new(fsm: Arc<ProgramFsm<V>>, inner: C) -> Result<Self, GenBodyError> {
        let outer = fsm.vocab().len();
        let inner_size = inner.vocab_size();
        if inner_size > outer {
            return Err(GenBodyError::VocabMismatch {
                inner: inner_size,
                outer,
            });
        }
        if inner.is_finished() {
            return Err(GenBodyError::InnerFinished);
        }
        let empty_ok = inner.is_accepting();
        Ok(NestedProgramConstraint {
            tables: Arc::new(Tables {
                fsm,
                empty_ok,
                cache: Mutex::new(HashMap::new()),
            }),
            proto: inner,
            inner: None,
            history: vec![Entry {
                state: ByteState::START,
                body_len: 0,
                accepting: false,
                fed: false,
                opened: false,
                closed: None,
            }],
            finished: false,
        })
    }

    /// The program FSM's tables.
    pub fn fsm(&self) -> &Arc<ProgramFsm<V>> {
        &self.tables.fsm
    }

    /// The current byte-automaton state.
    pub fn state(&self) -> ByteState {
        self.history.last().map_or(ByteState::START, |e| e.state)
    }

    /// The inner constraint of the open gen body (`None` outside a body).
    pub fn inner(&self) -> Option<&C> {
        self.inner.as_ref()
    }

    /// The literal bytes every continuation starts with (see
    /// [`ProgramConstraint::forced_bytes`](crate::ProgramConstraint::forced_bytes));
    /// inside a body, the inner constraint is not consulted. `O(256 · |forced|)`.
    pub fn forced_bytes(&self) -> Vec<u8> {
        if self.finished {
            Vec::new()
        } else {
            self.tables.fsm.forced_from(self.state())
        }
    }

    /// Whether the inner constraint accepted at the body offset `m` bytes
    /// before the current one, which must be a token boundary of this body.
    fn boundary_accepting(&self, m: usize) -> bool {
        let Some(cur) = self.history.last() else {
            return false;
        };
        let Some(target) = cur.body_len.checked_sub(m) else {
            return false;
        };
        for e in self.history.iter().rev() {
            if e.body_len == target {
                return e.accepting;
            }
            if e.body_len < target || e.opened {
                return false;
            }
        }
        false
    }

    fn inner_accepting(&self) -> bool {
        self.inner.as_ref().is_some_and(|c| c.is_accepting())
    }

    fn push_structural(&mut self, end: Tw, closed: Option<C>) {
        let (state, opened) = tw_end(end);
        if opened {
            self.inner = Some(self.proto.clone());
        }
        self.history.push(Entry {
            state,
            body_len: 0,
            accepting: opened && self.tables.empty_ok,
            fed: false,
            opened,
            closed,
        });
    }
}

impl<V: Vocabulary, C: Constraint> zapspec_core::Matcher for NestedProgramConstraint<V, C> {
    fn vocab_size(&self) -> usize {
        self.tables.fsm.vocab().len()
    }

    fn eos(&self) -> TokenId {
        self.tables.fsm.vocab().eos()
    }

    fn fill_next(&mut self, mask: &mut TokenSet) {
        let s = self.state();
        if !s.in_body() {
            let m = self.tables.mask(MaskKey::Struct(s));
            if mask.universe() == m.universe() {
                mask.words_mut().copy_from_slice(m.words());
            } else {
                *mask = (*m).clone();
            }
            return;
        }
        let size = self.tables.fsm.vocab().len();
        // Body text the inner constraint allows.
        let mut allowed = TokenSet::new(size);
        if let Some(inner) = self.inner.as_mut() {
            let im = inner.mask();
            if im.universe() == size {
                allowed = im;
            } else {
                for t in im.iter() {
                    allowed.insert(t);
                }
            }
            allowed.remove(inner.eos());
        }
        allowed.intersect_with(&self.tables.mask(MaskKey::Body(s)));
        if let ByteState::Body(m) = s {
            if self.inner_accepting() {
                allowed.union_with(&self.tables.mask(MaskKey::Close(0)));
            }
            if m > 0 && self.boundary_accepting(m as usize) {
                allowed.union_with(&self.tables.mask(MaskKey::Close(m)));
            }
        }
        *mask = allowed;
    }

    fn step(&mut self, t: TokenId) -> Result<(), RejectReason> {
        let vocab = self.tables.fsm.vocab();
        if t as usize >= vocab.len() {
            return Err(RejectReason::OutOfVocabulary);
        }
        let bytes = vocab.token_bytes(t);
        if vocab.is_special(t) || bytes.is_empty() {
            return Err(RejectReason::SpecialToken);
        }
        let s = self.state();
        if !s.in_body() {
            let end = self
                .tables
                .walk(Tw::S(s), bytes)
                .ok_or(RejectReason::NotAllowed)?;
            self.push_structural(end, None);
            return Ok(());
        }
        // (a) body text the inner constraint allows.
        if let Some(Tw::Body(next)) = self.tables.walk(Tw::Body(s), bytes) {
            let len = bytes.len();
            let inner = self.inner.as_mut().ok_or(RejectReason::NotAllowed)?;
            if t as usize >= inner.vocab_size() || t == inner.eos() {
                return Err(RejectReason::NotAllowed);
            }
            inner.advance(t).map_err(|_| RejectReason::NotAllowed)?;
            let accepting = inner.is_accepting();
            let body_len = self.history.last().map_or(0, |e| e.body_len) + len;
            self.history.push(Entry {
                state: next,
                body_len,
                accepting,
                fed: true,
                opened: false,
                closed: None,
            });
            return Ok(());
        }
        // (b) the close, begun by this token or at an earlier boundary.
        let ByteState::Body(m) = s else {
            return Err(RejectReason::NotAllowed);
        };
        let (start, ok) = if bytes.first() == Some(&GEN_END[0]) {
            (Tw::Close(0), self.inner_accepting())
        } else if m > 0 {
            (Tw::Close(m), self.boundary_accepting(m as usize))
        } else {
            return Err(RejectReason::NotAllowed);
        };
        let end = self
            .tables
            .walk(start, bytes)
            .ok_or(RejectReason::NotAllowed)?;
        if !ok {
            return Err(RejectReason::NotAllowed);
        }
        let closed = self.inner.take();
        self.push_structural(end, closed);
        Ok(())
    }

    fn unstep(&mut self, n: usize) {
        for _ in 0..n {
            if self.history.len() <= 1 {
                break;
            }
            let Some(e) = self.history.pop() else { break };
            if e.fed {
                if let Some(inner) = self.inner.as_mut() {
                    // Fed tokens are counted, so this cannot overrun.
                    let _ = inner.rollback(1);
                }
            }
            if e.opened {
                self.inner = None;
            }
            if let Some(c) = e.closed {
                self.inner = Some(c);
            }
        }
    }

    fn num_steps(&self) -> usize {
        self.history.len() - 1
    }

    fn is_complete(&self) -> bool {
        self.state().is_complete()
    }

    fn finished(&self) -> bool {
        self.finished
    }

    fn set_finished(&mut self, finished: bool) {
        self.finished = finished;
    }
}

impl<V: Vocabulary, C: Constraint> LookAhead for NestedProgramConstraint<V, C> {}
