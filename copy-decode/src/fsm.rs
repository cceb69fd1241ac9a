//! The token-level program FSM (paper Fig. 7, §2.3): a [`Constraint`](zapspec_core::Constraint)
//! that allows exactly the token sequences whose concatenated bytes are a
//! prefix of a valid Copy-as-Decode program for a source document of `n`
//! lines, with EOS allowed exactly when the bytes form a complete program.
//!
//! ## The language
//!
//! `<program>\n` (op `\n`)* `</program>`, where an op is
//! `<copy lines="I-J"/>` (decimal, no leading zeros, `1 ≤ I ≤ J ≤ n`) or
//! `<gen>TEXT</gen>` (TEXT UTF-8, possibly empty; `\` is written `\\`,
//! `</gen>` is written `<\/gen>`, a `\` must be followed by `\` or `/`, and
//! the raw bytes `</gen>` end the body). The escape rule is our reading —
//! the paper (Fig. 7, §3) does not specify one; see the crate docs.
//!
//! ## The byte automaton and Fig. 7's five states
//!
//! The matcher runs a deterministic byte automaton ([`ByteState`]) in
//! which every live state can still reach a complete program, so "a token
//! is allowed iff walking its bytes never dies" is exact (tokens that
//! straddle structure, such as `"/>\n<gen>`, are handled by the same walk).
//! Its states map onto the paper's five ([`ByteState::phase`]):
//!
//! | Fig. 7 | byte states |
//! |---|---|
//! | AWAIT_OP | `Header(k)` (inside `<program>\n`), `AwaitOp`, `CopyClose(k)` (inside `"/>\n`), `GenClose` (the `\n` after `</gen>`) |
//! | AFTER_LT | `AfterLt` (after `<`: `c`opy — only when `n ≥ 1` —, `g`en or `/program`) |
//! | COPY_LINES | `CopyOpen(k)`, `First(v)` and `Second { lo, val }`: the integer read so far, bounds checked arithmetically by [`digits_viable`] |
//! | GEN_BODY | `GenOpen(k)`, `Body(m)` (`m` bytes of `</gen>` matched), `Esc` (after `\`), `Utf8 { .. }` (inside a multi-byte character) |
//! | CLOSE | `CloseTag(k)` (inside `</program>`), `Done` |
//!
//! ## Masks and their cost
//!
//! A [`ProgramFsm`] (shared by `Arc` between forks) holds the vocabulary,
//! a [`VocabTrie`] of every ordinary token's bytes (built once per
//! vocabulary in `O(Σ|bytes| + |V| log |V|)`, shareable across documents)
//! and a mask cache keyed by byte state. A state's mask is computed by one
//! depth-first walk of the trie with the byte automaton, skipping a whole
//! subtree as soon as its prefix dies: `O(visited trie nodes)`, which is
//! the whole trie for the GEN_BODY states (a handful of keys: `Body(0..6)`,
//! `Esc`, the `Utf8` states) and only digit/literal paths elsewhere. The
//! number of keys is small except in COPY_LINES, where the key is the part
//! (`I` or `J`), the value read so far and, for `J`, the lower bound `I`
//! (`O(n)` keys for `I`, up to `O(n²)` for `J`); the cache holds at most
//! [`FsmConfig::mask_cache_cap`] entries, after which masks are computed
//! without being stored. A cache hit costs one `|V|/64`-word copy; no
//! decoding step scans the vocabulary. [`Matcher::step`](zapspec_core::Matcher::step) walks only the
//! token's bytes (`O(|token|)`) and recomputes the forced bytes
//! (`O(256 · |forced|)`).
//!
//! Here the body is any UTF-8 text under the escape rule; to constrain it
//! by an inner constraint (a grammar for the new text), use
//! [`NestedProgramConstraint`](crate::NestedProgramConstraint)
//! ([`crate::gen_body`]), which reuses these tables.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use zapspec_core::{LookAhead, RejectReason, TokenId, TokenSet, Vocabulary};
use zapspec_toktrie::TokTrie;

/// `<program>\n`.
const HEADER: &[u8] = b"<program>\n";
/// `<copy lines="`.
const COPY_OPEN: &[u8] = b"<copy lines=\"";
/// `"/>\n`.
const COPY_CLOSE: &[u8] = b"\"/>\n";
/// `<gen>`.
const GEN_OPEN: &[u8] = b"<gen>";
/// `</gen>` (the raw end of a body; `\n` follows it).
pub(crate) const GEN_END: &[u8] = b"</gen>";
/// `</program>`.
const CLOSE_TAG: &[u8] = b"</program>";

/// Errors building a [`ProgramFsm`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FsmError {
    /// The vocabulary's EOS id is not one of its token ids.
    #[error("EOS token {eos} outside a vocabulary of {len} tokens")]
    EosOutOfRange {
        /// The EOS id.
        eos: TokenId,
        /// The vocabulary size.
        len: usize,
    },
    /// The vocabulary has more ids than fit a [`TokenId`].
    #[error("vocabulary of {len} tokens is too large for u32 token ids")]
    VocabTooLarge {
        /// The vocabulary size.
        len: usize,
    },
}

/// Settings of a [`ProgramFsm`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsmConfig {
    /// Most masks kept in the per-state cache (default 4096); past it,
    /// masks of new states are computed by a trie walk and not stored.
    pub mask_cache_cap: usize,
}

impl Default for FsmConfig {
    fn default() -> Self {
        FsmConfig {
            mask_cache_cap: 4096,
        }
    }
}

/// The paper's five FSM states (Fig. 7), a coarse view of [`ByteState`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// At an op boundary (also: inside `<program>\n`, `"/>\n`, the `\n`
    /// after `</gen>`).
    AwaitOp,
    /// After `<`: the op-type choice.
    AfterLt,
    /// Inside `<copy lines="I-J`: line-index digits.
    CopyLines,
    /// Inside `<gen>…</gen>`: free generation.
    GenBody,
    /// Inside `</program>` or after it.
    Close,
}

/// One state of the byte automaton of the program language (see the
/// [module docs](self) for the mapping onto Fig. 7). Every state a
/// [`ProgramConstraint`] reaches can still complete a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ByteState {
    /// `k` bytes of `<program>\n` read.
    Header(u8),
    /// At an op boundary: `<` must come next.
    AwaitOp,
    /// After the `<` of an op or of `</program>`.
    AfterLt,
    /// `k` bytes of `<copy lines="` read (`2 ≤ k < 13`).
    CopyOpen(u8),
    /// Digits of `I` read so far, as a number (`0`: none yet).
    First(u64),
    /// Digits of `J` read so far (`val`, `0`: none yet), `lo` is `I`.
    Second {
        /// `I`, the lower bound of `J`.
        lo: u64,
        /// The value of the digits of `J` read so far.
        val: u64,
    },
    /// `k` bytes of `"/>\n` read (`1 ≤ k < 4`).
    CopyClose(u8),
    /// `k` bytes of `<gen>` read (`2 ≤ k < 5`).
    GenOpen(u8),
    /// In a body, not inside an escape or a multi-byte character; `m`
    /// bytes of `</gen>` are the tail of the raw body (`m < 6`).
    Body(u8),
    /// In a body, after a `\` (a `\` or `/` must follow).
    Esc,
    /// In a body, inside a multi-byte UTF-8 character: `need`
    /// continuation bytes remain, the next in `lo..=hi`.
    Utf8 {
        /// Continuation bytes still needed.
        need: u8,
        /// Lowest allowed next byte.
        lo: u8,
        /// Highest allowed next byte.
        hi: u8,
    },
    /// After `</gen>`: `\n` must come next.
    GenClose,
    /// `k` bytes of `</program>` read (`2 ≤ k < 10`).
    CloseTag(u8),
    /// A complete program; no byte may follow.
    Done,
}

impl ByteState {
    /// The state before any byte.
    pub const START: ByteState = ByteState::Header(0);

    /// The paper's coarse state (Fig. 7).
    pub fn phase(self) -> Phase {
        use ByteState::*;
        match self {
            Header(_) | AwaitOp | CopyClose(_) | GenClose => Phase::AwaitOp,
            AfterLt => Phase::AfterLt,
            CopyOpen(_) | First(_) | Second { .. } => Phase::CopyLines,
            GenOpen(_) | Body(_) | Esc | Utf8 { .. } => Phase::GenBody,
            CloseTag(_) | Done => Phase::Close,
        }
    }

    /// True for the states inside a gen body at which body text may
    /// continue (`Body`, `Esc`, `Utf8`), i.e. where a GEN_BODY delegate
    /// ([`crate::gen_body`]) consults its inner constraint.
    pub fn in_body(self) -> bool {
        matches!(
            self,
            ByteState::Body(_) | ByteState::Esc | ByteState::Utf8 { .. }
        )
    }

    /// True for the state of a complete program.
    pub fn is_complete(self) -> bool {
        self == ByteState::Done
    }

    /// The successor on byte `b` for a document of `n` lines, or `None`
    /// when no program continues with `b`. `O(log n)` in COPY_LINES, `O(1)`
    /// elsewhere.
    pub fn step(self, b: u8, n: u64) -> Option<ByteState> {
        use ByteState::*;
        // Advance inside literal `lit` at position `k`; `done` on its end.
        let lit = |lit: &[u8], k: u8, mk: fn(u8) -> ByteState, done: ByteState| {
            let k = k as usize;
            if lit.get(k) != Some(&b) {
                None
            } else if k + 1 == lit.len() {
                Some(done)
            } else {
                Some(mk(k as u8 + 1))
            }
        };
        match self {
            Header(k) => lit(HEADER, k, Header, AwaitOp),
            AwaitOp => (b == b'<').then_some(AfterLt),
            AfterLt => match b {
                b'c' if n >= 1 => Some(CopyOpen(2)),
                b'g' => Some(GenOpen(2)),
                b'/' => Some(CloseTag(2)),
                _ => None,
            },
            CopyOpen(k) => lit(COPY_OPEN, k, CopyOpen, First(0)),
            First(v) => match b {
                b'0'..=b'9' => push_digit(v, b, 1, n).map(First),
                b'-' if v >= 1 && v <= n => Some(Second { lo: v, val: 0 }),
                _ => None,
            },
            Second { lo, val } => match b {
                b'0'..=b'9' => push_digit(val, b, lo, n).map(|val| Second { lo, val }),
                b'"' if val >= lo && val <= n => Some(CopyClose(1)),
                _ => None,
            },
            CopyClose(k) => lit(COPY_CLOSE, k, CopyClose, AwaitOp),
            GenOpen(k) => lit(GEN_OPEN, k, GenOpen, Body(0)),
            Body(m) => {
                let m = m as usize;
                if b == b'\\' {
                    Some(Esc)
                } else if GEN_END.get(m) == Some(&b) {
                    if m + 1 == GEN_END.len() {
                        Some(GenClose)
                    } else {
                        Some(Body(m as u8 + 1))
                    }
                } else if b == b'<' {
                    Some(Body(1))
                } else if b < 0x80 {
                    Some(Body(0))
                } else {
                    utf8_lead(b)
                }
            }
            Esc => matches!(b, b'\\' | b'/').then_some(Body(0)),
            Utf8 { need, lo, hi } => {
                if !(lo..=hi).contains(&b) {
                    None
                } else if need <= 1 {
                    Some(Body(0))
                } else {
                    Some(Utf8 {
                        need: need - 1,
                        lo: 0x80,
                        hi: 0xBF,
                    })
                }
            }
            GenClose => (b == b'\n').then_some(AwaitOp),
            CloseTag(k) => lit(CLOSE_TAG, k, CloseTag, Done),
            Done => None,
        }
    }

    /// Runs `bytes` from this state; `None` when some byte dies.
    /// `O(|bytes|)` (times `O(log n)` in COPY_LINES).
    pub fn walk(self, bytes: &[u8], n: u64) -> Option<ByteState> {
        bytes.iter().try_fold(self, |s, &b| s.step(b, n))
    }
}

/// The state after the lead byte `b ≥ 0x80` of a UTF-8 character (the
/// exact well-formed ranges of Unicode Table 3-7), or `None`.
fn utf8_lead(b: u8) -> Option<ByteState> {
    let (need, lo, hi) = match b {
        0xC2..=0xDF => (1, 0x80, 0xBF),
        0xE0 => (2, 0xA0, 0xBF),
        0xE1..=0xEC | 0xEE..=0xEF => (2, 0x80, 0xBF),
        0xED => (2, 0x80, 0x9F),
        0xF0 => (3, 0x90, 0xBF),
        0xF1..=0xF3 => (3, 0x80, 0xBF),
        0xF4 => (3, 0x80, 0x8F),
        _ => return None,
    };
    Some(ByteState::Utf8 { need, lo, hi })
}

/// Appends the ASCII digit `d` to the number `v` read so far (`0`: no
/// digits yet) when the result is still a viable prefix of a number in
/// `[lo, hi]` written without leading zeros.
fn push_digit(v: u64, d: u8, lo: u64, hi: u64) -> Option<u64> {
    let d = u64::from(d - b'0');
    if v == 0 && d == 0 {
        return None; // a leading zero (and 0 is never a line number)
    }
    let nv = v.checked_mul(10)?.checked_add(d)?;
    digits_viable(nv, lo, hi).then_some(nv)
}

/// Whether the decimal digits of `v ≥ 1` are a prefix of the decimal
/// digits of some `x ∈ [lo, hi]`: some completion `v·10^k + r`
/// (`0 ≤ r < 10^k`) lands in range. `O(log hi)`; `false` for `v == 0`.
pub fn digits_viable(v: u64, lo: u64, hi: u64) -> bool {
    if v == 0 || lo > hi {
        return false;
    }
    // [a, b] = the numbers with `k` more digits after v's.
    let (mut a, mut b) = (v, v);
    while a <= hi {
        if b >= lo {
            return true;
        }
        a = match a.checked_mul(10) {
            Some(a) => a,
            None => return false,
        };
        b = b.saturating_mul(10).saturating_add(9);
    }
    false
}

/// The bytes of every ordinary token of a vocabulary as a trie: the
/// workspace's one vocabulary trie ([`zapspec_toktrie::TokTrie`], stored
/// flat in depth-first order, so a walk skips a dead subtree in `O(1)`)
/// and the vocabulary size its masks have. Built once per vocabulary
/// (`O(Σ|bytes| + |V| log |V|)`, 12 bytes a node and 4 a token) and
/// shareable between [`ProgramFsm`]s of different documents.
#[derive(Debug, Clone)]
pub struct VocabTrie {
    trie: TokTrie,
    vocab_size: usize,
}

impl VocabTrie {
    /// The trie of `vocab`'s ordinary tokens (special and empty tokens are
    /// left out, so no mask ever contains them).
    pub fn new<V: Vocabulary + ?Sized>(vocab: &V) -> Result<Self, FsmError> {
        let len = vocab.len();
        if u32::try_from(len).is_err() {
            return Err(FsmError::VocabTooLarge { len });
        }
        Ok(VocabTrie {
            trie: TokTrie::from_vocab(vocab),
            vocab_size: len,
        })
    }

    /// Number of trie nodes (distinct non-empty token-byte prefixes).
    pub fn num_nodes(&self) -> usize {
        self.trie.num_nodes() - 1
    }

    /// The vocabulary size the trie was built for.
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The mask of tokens whose bytes never die from `start` (for a
    /// document of `n` lines): one pruned depth-first walk,
    /// `O(visited nodes)`.
    pub fn mask_from(&self, start: ByteState, n: u64) -> TokenSet {
        self.mask_walk(start, |s, b| s.step(b, n), |_| true)
    }

    /// The mask of tokens whose bytes, run through any byte automaton from
    /// `start` with `step`, never die and end in a state `accept` takes:
    /// one pruned depth-first walk ([`TokTrie::walk_states`]),
    /// `O(visited nodes)`. A subtree is skipped as soon as its prefix dies.
    pub fn mask_walk<S: Copy>(
        &self,
        start: S,
        step: impl Fn(S, u8) -> Option<S>,
        accept: impl Fn(S) -> bool,
    ) -> TokenSet {
        let mut mask = TokenSet::new(self.vocab_size);
        self.trie.walk_states(start, step, |_, s, toks| {
            if !toks.is_empty() && accept(s) {
                for &t in toks {
                    mask.insert(t);
                }
            }
        });
        mask
    }
}

/// The compiled, shared tables of the program FSM for one vocabulary and
/// one source document of `n` lines: the vocabulary, its [`VocabTrie`]
/// and the per-state mask cache (bounded by [`FsmConfig::mask_cache_cap`]).
pub struct ProgramFsm<V> {
    vocab: V,
    trie: Arc<VocabTrie>,
    n: u64,
    config: FsmConfig,
    cache: Mutex<HashMap<ByteState, Arc<TokenSet>>>,
}

impl<V> std::fmt::Debug for ProgramFsm<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramFsm")
            .field("n", &self.n)
            .field("vocab_size", &self.trie.vocab_size)
            .field("trie_nodes", &self.trie.num_nodes())
            .field("config", &self.config)
            .finish()
    }
}

impl<V: Vocabulary> ProgramFsm<V> {
    /// Compiles the FSM for `vocab` and a document of `n` lines, building
    /// the vocabulary trie (see [`VocabTrie::new`] for the cost).
    pub fn new(vocab: V, n: usize, config: FsmConfig) -> Result<Self, FsmError> {
        let trie = Arc::new(VocabTrie::new(&vocab)?);
        Self::with_trie(vocab, trie, n, config)
    }

    /// Compiles the FSM reusing a trie built for the same vocabulary
    /// (`O(1)`: masks are computed lazily).
    pub fn with_trie(
        vocab: V,
        trie: Arc<VocabTrie>,
        n: usize,
        config: FsmConfig,
    ) -> Result<Self, FsmError> {
        let len = vocab.len();
        let eos = vocab.eos();
        if eos as usize >= len {
            return Err(FsmError::EosOutOfRange { eos, len });
        }
        if trie.vocab_size != len {
            // A trie of another vocabulary: rebuild rather than mis-mask.
            let trie = Arc::new(VocabTrie::new(&vocab)?);
            return Self::with_trie(vocab, trie, n, config);
        }
        Ok(ProgramFsm {
            vocab,
            trie,
            n: n as u64,
            config,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The number of source lines `n`.
    pub fn num_lines(&self) -> u64 {
        self.n
    }

    /// The settings the tables were compiled with.
    pub fn config(&self) -> FsmConfig {
        self.config
    }

    /// The vocabulary.
    pub fn vocab(&self) -> &V {
        &self.vocab
    }

    /// The vocabulary trie (to share with another document's FSM).
    pub fn trie(&self) -> &Arc<VocabTrie> {
        &self.trie
    }

    /// Masks currently cached.
    pub fn cached_masks(&self) -> usize {
        self.cache
            .lock()
            .map(|c| c.len())
            .unwrap_or_else(|e| e.into_inner().len())
    }

    /// The mask of non-EOS tokens allowed in `state`: a cache hit, or one
    /// pruned trie walk (stored while the cache is under its cap).
    pub fn mask_for(&self, state: ByteState) -> Arc<TokenSet> {
        let lock = |c: &Mutex<HashMap<ByteState, Arc<TokenSet>>>| {
            c.lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&state)
                .cloned()
        };
        if let Some(m) = lock(&self.cache) {
            return m;
        }
        let m = Arc::new(self.trie.mask_from(state, self.n));
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if c.len() < self.config.mask_cache_cap {
            c.insert(state, Arc::clone(&m));
        }
        m
    }

    /// The longest byte string every continuation of `state` starts with
    /// (empty in a complete state). `O(256 · |result|)`.
    pub fn forced_from(&self, state: ByteState) -> Vec<u8> {
        let mut out = Vec::new();
        let mut s = state;
        // Forced runs are short (a literal, a digit or two); the bound only
        // guards against a bug looping forever.
        while out.len() < 64 && !s.is_complete() {
            let mut only = None;
            for b in 0..=255u8 {
                if let Some(t) = s.step(b, self.n) {
                    if only.is_some() {
                        return out;
                    }
                    only = Some((b, t));
                }
            }
            match only {
                Some((b, t)) => {
                    out.push(b);
                    s = t;
                }
                None => break,
            }
        }
        out
    }
}

/// The program FSM as a matcher: a [`zapspec_core::Matcher`] (hence a
/// [`zapspec_core::Constraint`]) and a [`LookAhead`] with the default
/// hooks. Forks share the [`ProgramFsm`] by `Arc`; the state is the
/// history of byte states (one per consumed token), so `rollback` is a
/// truncation.
pub struct ProgramConstraint<V> {
    fsm: Arc<ProgramFsm<V>>,
    history: Vec<ByteState>,
    forced: Vec<u8>,
    finished: bool,
}

impl<V> Clone for ProgramConstraint<V> {
    fn clone(&self) -> Self {
        ProgramConstraint {
            fsm: Arc::clone(&self.fsm),
            history: self.history.clone(),
            forced: self.forced.clone(),
            finished: self.finished,
        }
    }
}

impl<V> std::fmt::Debug for ProgramConstraint<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramConstraint")
            .field("state", &self.history.last())
            .field("steps", &(self.history.len().saturating_sub(1)))
            .field("finished", &self.finished)
            .finish()
    }
}

impl<V: Vocabulary> ProgramConstraint<V> {
    /// A matcher at the start of a program for `vocab` and a document of
    /// `n` lines (`n = 0`: no copy op is allowed), with default settings.
    /// Builds the vocabulary trie; use [`from_fsm`](Self::from_fsm) to
    /// share compiled tables.
    pub fn new(vocab: V, n: usize) -> Result<Self, FsmError> {
        Ok(Self::from_fsm(Arc::new(ProgramFsm::new(
            vocab,
            n,
            FsmConfig::default(),
        )?)))
    }

    /// A matcher at the start of a program over shared compiled tables.
    pub fn from_fsm(fsm: Arc<ProgramFsm<V>>) -> Self {
        let forced = fsm.forced_from(ByteState::START);
        ProgramConstraint {
            fsm,
            history: vec![ByteState::START],
            forced,
            finished: false,
        }
    }

    /// The shared tables.
    pub fn fsm(&self) -> &Arc<ProgramFsm<V>> {
        &self.fsm
    }

    /// The current byte-automaton state.
    pub fn state(&self) -> ByteState {
        self.history.last().copied().unwrap_or(ByteState::START)
    }

    /// The paper's coarse state (Fig. 7) of the current position.
    pub fn phase(&self) -> Phase {
        self.state().phase()
    }

    /// The literal bytes that must come next whatever the program is (e.g.
    /// `<program>\n` at the start, `/>\n<` after a copy's closing `"`, the
    /// `\n` after `</gen>`), for a decoder to tokenize and prefill. Empty
    /// once finished, in a complete state, or where a choice remains (after
    /// `</gen` the body may still continue, so `>` is not forced there).
    pub fn forced_bytes(&self) -> &[u8] {
        if self.finished {
            &[]
        } else {
            &self.forced
        }
    }

    fn reason(&self, t: TokenId) -> Result<ByteState, RejectReason> {
        let vocab = &self.fsm.vocab;
        if t as usize >= vocab.len() {
            return Err(RejectReason::OutOfVocabulary);
        }
        let bytes = vocab.token_bytes(t);
        if vocab.is_special(t) || bytes.is_empty() {
            // a special token, or one with no text: never in a program
            return Err(RejectReason::NotAllowed);
        }
        self.state()
            .walk(bytes, self.fsm.n)
            .ok_or(RejectReason::NotAllowed)
    }
}

impl<V: Vocabulary> zapspec_core::Matcher for ProgramConstraint<V> {
    fn vocab_size(&self) -> usize {
        self.fsm.vocab.len()
    }

    fn eos(&self) -> TokenId {
        self.fsm.vocab.eos()
    }

    fn fill_next(&mut self, mask: &mut TokenSet) {
        let m = self.fsm.mask_for(self.state());
        if mask.universe() == m.universe() {
            mask.words_mut().copy_from_slice(m.words());
        } else {
            *mask = (*m).clone();
        }
    }

    fn step(&mut self, t: TokenId) -> Result<(), RejectReason> {
        let s = self.reason(t)?;
        self.history.push(s);
        self.forced = self.fsm.forced_from(s);
        Ok(())
    }

    fn unstep(&mut self, n: usize) {
        let keep = self.history.len().saturating_sub(n).max(1);
        self.history.truncate(keep);
        self.forced = self.fsm.forced_from(self.state());
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

impl<V: Vocabulary> LookAhead for ProgramConstraint<V> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_viable(v: u64, lo: u64, hi: u64) -> bool {
        let s = v.to_string();
        v != 0 && (lo..=hi).any(|x| x.to_string().starts_with(&s))
    }

    #[test]
    fn digits_viable_matches_brute_force() {
        for hi in 0..=130u64 {
            for lo in 0..=hi + 1 {
                for v in 0..=250u64 {
                    assert_eq!(
                        digits_viable(v, lo, hi),
                        brute_viable(v, lo, hi),
                        "v={v} lo={lo} hi={hi}"
                    );
                }
            }
        }
        assert!(digits_viable(1, u64::MAX - 5, u64::MAX));
        assert!(!digits_viable(2, u64::MAX - 5, u64::MAX));
    }
}
