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
//!    and **every gen body is token-aligned**: a closed body — the bytes
//!    between `<gen>` and the first raw `</gen>` — that is non-empty
//!    starts at a token boundary and ends at one (the closing `</gen>`
//!    starts a token, though it may span several). An empty closed body
//!    may sit inside one token (`<gen></gen>` as part of a token).
//! 2. The tokens that make up a closed body are fed, in order, to a
//!    **fresh copy of the inner constraint** (each gen op's text is one
//!    member of the inner language): every one must be allowed, and the
//!    inner constraint must accept after the last (an empty body: accept
//!    the empty sequence). The inner EOS is never fed; the close plays its
//!    role.
//! 3. The open body (the last one, not closed yet) must have a reading
//!    that can still close: either (h1) it is all body text — aligned, its
//!    tokens allowed by the inner constraint — or (h2) it is body text
//!    followed by a close in progress: a proper prefix of `</gen>` that
//!    begins at a token boundary where the body text so far is aligned
//!    and accepted by the inner constraint. Both can hold: `</` may be
//!    body text of an HTML grammar and the start of the close; the matcher
//!    tracks both (the inner constraint is fed a token only while h1 is
//!    alive; per body token it keeps the body offset and whether a close
//!    may begin there), and the next token decides. This is what lets a
//!    byte-level or BPE vocabulary, where `</gen>` is several tokens,
//!    close a body whose inner language has no `<`.
//! 4. The inner constraint sees the body **as written**, i.e. after
//!    escaping (`\\` and `<\/gen>`; see the crate docs). For inner
//!    languages that never contain `\` or `</gen>` — most grammars of code
//!    edits — the written body is the text.
//!
//! A token that carries body text and then (the start of) the close
//! (`x</gen>`, `x</`) is never allowed unless the whole token is body text
//! the inner constraint allows: the inner constraint cannot take part of
//! a token. Likewise a non-empty body cannot start inside the token that
//! ends `<gen>` — so a program tokenized canonically as a whole (BPE may
//! merge `>` with the body's first bytes) may need re-tokenizing op by op
//! before a nested constraint accepts it; a decoder sampling under the
//! constraint produces aligned tokens by construction.
//!
//! So within a body, token `t` is allowed iff (a) its bytes stay body
//! text (never complete `</gen>`) and either the inner constraint allows
//! `t` (h1 alive) or the token begins or continues a close in progress
//! from an accepting boundary (h2); or (b) it completes a close begun at
//! an accepting boundary (by `t` itself or by the tokens just before it)
//! and its remaining bytes are valid structure, which may open a new body
//! only at the token's end or as an empty body.
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
    /// `k` bytes of a `</gen>` begun at a token boundary, not completed in
    /// this token (a close in progress).
    Partial(u8),
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
        Tw::Partial(k) => {
            let k = k as usize;
            (k + 1 < GEN_END.len() && GEN_END[k] == b).then_some(Tw::Partial(k as u8 + 1))
        }
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
        Tw::Partial(k) => (ByteState::Body(k), false),
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
    /// Tokens that continue a `</gen>` of which `k` bytes are matched
    /// (`k = 0`: begin one) without completing it.
    Partial(u8),
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
            MaskKey::Partial(k) => Tw::Partial(k),
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
    /// Every token of the open body so far was fed to (and allowed by)
    /// the inner constraint — the body-text reading is alive.
    whole: bool,
    /// `whole` and the inner constraint accepts after the token: a close
    /// may begin here.
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
                whole: false,
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

    /// Whether a close may begin at the body offset `m` bytes before the
    /// current one: a token boundary of this body where every body token
    /// so far was fed to the inner constraint and it accepted.
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
            whole: opened,
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
        let whole = self.history.last().is_some_and(|e| e.whole);
        // Body text the inner constraint allows (while it has seen every
        // body token).
        let mut allowed = TokenSet::new(size);
        if let (true, Some(inner)) = (whole, self.inner.as_mut()) {
            let im = inner.mask();
            if im.universe() == size {
                allowed = im;
            } else {
                for t in im.iter() {
                    allowed.insert(t);
                }
            }
            allowed.remove(inner.eos());
            allowed.intersect_with(&self.tables.mask(MaskKey::Body(s)));
        }
        if let ByteState::Body(m) = s {
            // A close begun here (in progress or completed by the token).
            if self.boundary_accepting(0) {
                allowed.union_with(&self.tables.mask(MaskKey::Partial(0)));
                allowed.union_with(&self.tables.mask(MaskKey::Close(0)));
            }
            // A close begun `m` bytes back, continued or completed.
            if m > 0 && self.boundary_accepting(m as usize) {
                allowed.union_with(&self.tables.mask(MaskKey::Partial(m)));
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
            // a special token, or one with no text: never in a program
            return Err(RejectReason::NotAllowed);
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
        // (a) body text: fed to the inner constraint while it has seen
        // every body token and allows this one, or a close in progress
        // begun at an accepting boundary (or both).
        if let Some(Tw::Body(next)) = self.tables.walk(Tw::Body(s), bytes) {
            let (body_len, whole) = self
                .history
                .last()
                .map_or((0, false), |e| (e.body_len, e.whole));
            let new_len = body_len + bytes.len();
            let in_progress = match next {
                ByteState::Body(m2) if m2 > 0 => {
                    // The close began `m2` bytes before the token's end.
                    new_len.checked_sub(m2 as usize).is_some_and(|start| {
                        start <= body_len && { self.boundary_accepting(body_len - start) }
                    })
                }
                _ => false,
            };
            let mut fed = false;
            if whole {
                if let Some(inner) = self.inner.as_mut() {
                    fed = (t as usize) < inner.vocab_size()
                        && t != inner.eos()
                        && inner.advance(t).is_ok();
                }
            }
            if !fed && !in_progress {
                return Err(RejectReason::NotAllowed);
            }
            let accepting = fed && self.inner_accepting();
            self.history.push(Entry {
                state: next,
                body_len: new_len,
                whole: fed,
                accepting,
                fed,
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
            (Tw::Close(0), self.boundary_accepting(0))
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
