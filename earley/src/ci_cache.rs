//! The context-independent token mask cache (ZapFormat §4.3, after
//! XGrammar's adaptive token mask cache).
//!
//! For an item whose postdot terminal `T` is in DFA state `s`, a token is
//!
//! - **context-independent allowed** when `T`'s DFA, run from `s` over all
//!   the token's bytes, stays live: the token ends strictly inside (or at an
//!   accepting end of) `T`, so it is allowed whatever the rest of the parser
//!   state is (every item of a set can be completed: unproductive rules are
//!   removed at compile time);
//! - **context-dependent** when it is not allowed that way but `T` can end
//!   after `k` of its bytes (`1 ≤ k < len`, DFA accepting there): whether
//!   the remaining `bytes[k..]` are allowed depends on what follows `T` in
//!   the parser state. Those remainders are stored in a small trie
//!   ([`CiEntry::suffixes`]) that the mask computation walks with the
//!   byte-level parser, starting from the set in which `T` has just been
//!   completed;
//! - **rejected** otherwise (the DFA dies before `T` could end).
//!
//! Entries are computed lazily, once per (terminal, DFA state), and shared
//! through `Arc` by every matcher and every grammar over the same vocabulary
//! that contains the same terminal (the key is the terminal's regex text,
//! see [`crate::VocabIndex`]). Each slot records when it was last used, so
//! the index can evict entries not used lately when the shared cache passes
//! its bound ([`crate::IndexConfig::max_cache_bytes`]); an evicted entry is
//! recomputed on its next use. The bound is kept by an [`Account`]: every
//! kept entry and every terminal adds its bytes when it is stored and
//! takes them back when it is dropped, by whoever drops it last. The bytes
//! are what the heap holds for it: its own allocation (the `Arc`'s header
//! included), its tables, its key (a terminal's regex text, an entry's
//! residual key, each stored once and shared with the index's map) and a
//! terminal's per-state slots; the index charges its maps' tables too. Like ZapFormat (and unlike XGrammar) we do
//! not look at the strings that may follow `T` when classifying; that work
//! is left to the suffix walk.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use zapspec_grammar::RegexLimits;

use zapspec_core::{TokenId, TokenSet};

use crate::avoid_text::AvoidText;
use crate::compile::Facts;
use crate::error::EarleyError;
use crate::slicer::{Slice, Tier};
use crate::terminal::ByteDfa;
use crate::walk::{end_classes, live_tokens_into, EndClasses};
use zapspec_grammar::segmented::Segmented;
use zapspec_toktrie::TokTrie;

/// The shared cache's byte count (module docs): entries and terminals
/// charged to it add their heap bytes when stored and subtract them when
/// dropped, so the count is exact whoever drops the last reference (the
/// index, a compiled grammar, a matcher).
#[derive(Debug, Default)]
pub(crate) struct Account(AtomicUsize);

impl Account {
    /// Bytes currently charged.
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn add(&self, n: usize) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn sub(&self, n: usize) {
        self.0.fetch_sub(n, Ordering::Relaxed);
    }
}

/// A terminal compiled for one vocabulary: its DFA and, per DFA state, the
/// lazily computed [`CiEntry`].
///
/// The DFA of a terminal without look-around is built on first use
/// ([`TermEntry::dfa`]), not when its grammar is compiled: a grammar pays
/// only for the terminals its parses reach. What compilation needs (the
/// start state, whether the empty string matches) is read off the
/// terminal's HIR.
#[derive(Debug)]
pub(crate) struct TermEntry {
    /// The terminal's regex text (its key in the index, the same
    /// allocation).
    pub regex: Arc<str>,
    /// The terminal's automaton, once built.
    dfa: OnceLock<ByteDfa>,
    /// What builds it on first use (taken then).
    pending: Mutex<Option<Box<Pending>>>,
    /// [`ByteDfa::start`] of the automaton, built or not.
    start: u32,
    /// [`ByteDfa::is_nullable`] of the automaton, built or not.
    nullable: bool,
    /// The error a deferred build met (the automaton then matches nothing).
    failed: OnceLock<Box<EarleyError>>,
    /// One slot per DFA state, allocated as states appear (a lazy DFA
    /// grows while masks run).
    ci: Segmented<Slot>,
    /// The index clock at this terminal's last use (compile or mask).
    used: AtomicU64,
    /// The index clock when eviction last visited this terminal (a slot
    /// not used since then is evicted at the next visit).
    swept: AtomicU64,
    /// The account this terminal's own bytes are charged to, and the bytes
    /// charged (refreshed as a lazy automaton grows).
    account: Option<Arc<Account>>,
    charged: AtomicUsize,
    /// Compilations that looked the terminal up (saturating at 2: once it
    /// is shared, the count no longer matters).
    compiles: AtomicU32,
    /// The end classes of the last few states a one-step look-ahead asked
    /// about ([`TermEntry::end_classes`]), newest last.
    classes: Mutex<Vec<(u32, Arc<EndClasses>)>>,
    /// The avoided strings of free text (`Terminal::Avoid` over any
    /// text), whose entries are built from the tokens the strings forbid
    /// (module `avoid_text`).
    avoid: Option<Box<AvoidText>>,
}

/// States whose end classes a terminal keeps (a look-ahead inside one
/// terminal asks about a handful: a string's body, its escapes).
const CLASS_STATES: usize = 8;

/// One DFA state's entry: empty until first used, emptied again when the
/// index evicts it.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    entry: RwLock<Option<Arc<CiEntry>>>,
    /// The index clock at the entry's last use (LRU eviction).
    used: AtomicU64,
}

impl Slot {
    fn read(&self) -> RwLockReadGuard<'_, Option<Arc<CiEntry>>> {
        self.entry.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Option<Arc<CiEntry>>> {
        self.entry.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a use of the slot at clock `now`.
    pub(crate) fn mark_used(&self, now: u64) {
        self.used.store(now, Ordering::Relaxed);
    }

    /// The entry, when computed.
    pub(crate) fn cached(&self) -> Option<Arc<CiEntry>> {
        self.read().clone()
    }

    /// Stores `e` unless another thread stored an entry first; the stored
    /// entry.
    pub(crate) fn fill(&self, e: Arc<CiEntry>) -> Arc<CiEntry> {
        self.write().get_or_insert(e).clone()
    }

    /// The clock at the slot's last use.
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Empties the slot, returning its entry.
    pub(crate) fn take(&self) -> Option<Arc<CiEntry>> {
        self.write().take()
    }
}

/// Bits of a token set: dense, a list of non-zero words, or a shared
/// slice set (see [`crate::slicer`]) plus a sparse remainder.
#[derive(Debug)]
pub(crate) enum Bits {
    Dense(TokenSet),
    Sparse(Vec<(u32, u64)>),
    Sliced(Arc<TokenSet>, Vec<(u32, u64)>),
}

impl Bits {
    #[inline]
    pub(crate) fn or_into(&self, mask: &mut TokenSet) {
        let sparse = |mask: &mut TokenSet, ws: &[(u32, u64)]| {
            let w = mask.words_mut();
            for &(i, b) in ws {
                w[i as usize] |= b;
            }
        };
        match self {
            Bits::Dense(s) => mask.union_with(s),
            Bits::Sparse(ws) => sparse(mask, ws),
            Bits::Sliced(base, ws) => {
                mask.union_with(base);
                sparse(mask, ws);
            }
        }
    }

    /// Own heap bytes (a shared slice set is not counted).
    fn heap_bytes(&self) -> usize {
        match self {
            Bits::Dense(s) => s.heap_bytes(),
            Bits::Sparse(v) | Bits::Sliced(_, v) => v.capacity() * 16,
        }
    }
}

/// What one (terminal, DFA state) contributes to a mask.
#[derive(Debug)]
pub(crate) struct CiEntry {
    pub(crate) allowed: Bits,
    /// Remainders of the context-dependent tokens after the terminal ends,
    /// as a trie whose entries are the tokens.
    pub(crate) suffixes: TokTrie,
    /// The account the entry's bytes are charged to (`None`: an entry
    /// returned but not cached).
    account: Option<Arc<Account>>,
    /// The residual key the index shares the entry under, if any (the
    /// same allocation as the key of the index's map).
    pub(crate) residual: Option<Arc<[u32]>>,
    /// The index clock when the entry was last found by its residual key.
    pub(crate) used: AtomicU64,
}

impl Drop for CiEntry {
    fn drop(&mut self) {
        if let Some(a) = &self.account {
            a.sub(self.cache_bytes());
        }
    }
}

/// The header an `Arc` allocation adds to its value (strong and weak
/// counts).
pub(crate) const ARC_HEADER: usize = 2 * std::mem::size_of::<usize>();

impl CiEntry {
    /// Charges the entry's bytes to `account` (once, before it is shared,
    /// with its residual key set).
    pub(crate) fn charge(&mut self, account: &Arc<Account>) {
        debug_assert!(self.account.is_none());
        account.add(self.cache_bytes());
        self.account = Some(account.clone());
    }

    /// The bytes the cache counts for the entry: its `Arc` allocation, its
    /// sets and suffix trie, its residual key.
    pub(crate) fn cache_bytes(&self) -> usize {
        ARC_HEADER
            + std::mem::size_of::<Self>()
            + self.heap_bytes()
            + self
                .residual
                .as_ref()
                .map_or(0, |k| ARC_HEADER + 4 * k.len())
    }

    /// Own heap bytes (a shared slice set is not counted).
    pub fn heap_bytes(&self) -> usize {
        self.allowed.heap_bytes() + self.suffixes.heap_bytes()
    }

    /// The context-independent allowed tokens as a set over `vocab_len` tokens.
    pub fn allowed_tokens(&self, vocab_len: usize) -> TokenSet {
        let mut m = TokenSet::new(vocab_len);
        self.allowed.or_into(&mut m);
        m
    }

    /// The context-dependent `(remainder, token)` entries, sorted.
    pub fn dependent(&self) -> Vec<(Vec<u8>, TokenId)> {
        self.suffixes.entries()
    }

    /// True when the entry was computed through a vocabulary slice.
    pub fn sliced(&self) -> bool {
        matches!(self.allowed, Bits::Sliced(..))
    }
}

/// Compile-time check: the shared cache's entries are `Send + Sync` (the
/// compiled grammars and matchers that hold them are, module `batch`).
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<TermEntry>();
    send_sync::<CiEntry>();
};

/// A terminal's automaton not built yet (its [`Facts`] are the entry's
/// `start` and `nullable`).
#[derive(Debug)]
enum Pending {
    /// A regex's lazy automaton, from its HIR.
    Hir {
        hir: Arc<regex_syntax::hir::Hir>,
        limits: RegexLimits,
    },
    /// A regex without some strings ([`zapspec_grammar::Terminal::Except`]):
    /// the product of the regex's own entry's automaton (shared by every
    /// terminal over the same regex) with the strings' trie.
    Except {
        base: Arc<TermEntry>,
        names: Arc<[Vec<u8>]>,
        limits: RegexLimits,
    },
}

impl Drop for TermEntry {
    fn drop(&mut self) {
        if let Some(a) = &self.account {
            a.sub(*self.charged.get_mut());
        }
    }
}

/// Set once any deferred build has failed (one atomic load spares the
/// matcher a scan of its terminals otherwise).
static ANY_FAILED: AtomicBool = AtomicBool::new(false);

impl TermEntry {
    /// A terminal with no entry computed yet (slots allocated on first
    /// use).
    pub fn new(regex: String, dfa: ByteDfa) -> Self {
        let facts = Facts {
            start: dfa.start(),
            nullable: dfa.is_nullable(),
        };
        Self::with(regex, facts, OnceLock::from(dfa), None)
    }

    /// A terminal whose automaton is built from `hir` on first use
    /// ([`ByteDfa::deferrable`] gave its `facts`).
    pub(crate) fn deferred(
        regex: String,
        hir: Arc<regex_syntax::hir::Hir>,
        limits: RegexLimits,
        facts: Facts,
    ) -> Self {
        let pending = Pending::Hir { hir, limits };
        Self::with(regex, facts, OnceLock::new(), Some(Box::new(pending)))
    }

    /// A regex without some strings whose automaton is built on first use
    /// from `base`'s (the regex's own entry) and the strings' trie
    /// ([`ByteDfa::build_except`]); `facts` as the built automaton will
    /// have them (the caller knows the language is not empty).
    pub(crate) fn deferred_except(
        regex: String,
        base: Arc<TermEntry>,
        names: Arc<[Vec<u8>]>,
        limits: RegexLimits,
        facts: Facts,
    ) -> Self {
        let pending = Pending::Except {
            base,
            names,
            limits,
        };
        Self::with(regex, facts, OnceLock::new(), Some(Box::new(pending)))
    }

    /// The one constructor: an automaton built (`dfa` set, no `pending`)
    /// or to be built on first use (`dfa` empty, `pending` what builds
    /// it), with the start state and nullability `facts` give.
    fn with(
        regex: String,
        facts: Facts,
        dfa: OnceLock<ByteDfa>,
        pending: Option<Box<Pending>>,
    ) -> Self {
        TermEntry {
            regex: regex.into(),
            start: facts.start,
            nullable: facts.nullable,
            dfa,
            pending: Mutex::new(pending),
            failed: OnceLock::new(),
            ci: Segmented::default(),
            used: AtomicU64::new(0),
            swept: AtomicU64::new(0),
            account: None,
            charged: AtomicUsize::new(0),
            compiles: AtomicU32::new(0),
            classes: Mutex::new(Vec::new()),
            avoid: None,
        }
    }

    /// Marks the terminal as free text avoiding `strings` (module
    /// `avoid_text`): its entries are then built from the tokens the
    /// strings forbid.
    pub(crate) fn set_avoid(&mut self, strings: Arc<[Vec<u8>]>) {
        self.avoid = Some(Box::new(AvoidText::new(strings)));
    }

    /// What [`Self::set_avoid`] set.
    pub(crate) fn avoid(&self) -> Option<&AvoidText> {
        self.avoid.as_deref()
    }

    /// The terminal's automaton, built now if this is its first use.
    #[inline]
    pub fn dfa(&self) -> &ByteDfa {
        match self.dfa.get() {
            Some(d) => d,
            None => self.build(),
        }
    }

    #[cold]
    fn build(&self) -> &ByteDfa {
        self.dfa.get_or_init(|| {
            let p = self
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .expect("a terminal without an automaton has a pending build");
            let facts = Facts {
                start: self.start,
                nullable: self.nullable,
            };
            let (d, err) = match *p {
                Pending::Hir { hir, limits } => {
                    ByteDfa::build_deferred(&hir, &self.regex, &limits, facts)
                }
                Pending::Except {
                    base,
                    names,
                    limits,
                } => {
                    let b = base.dfa();
                    match base.build_error() {
                        Some(e) => (ByteDfa::failed(facts), Some(e.clone())),
                        None => ByteDfa::build_except(b, &names, &self.regex, &limits, facts),
                    }
                }
            };
            if let Some(e) = err {
                let _ = self.failed.set(Box::new(e));
                ANY_FAILED.store(true, Ordering::Relaxed);
            }
            d
        })
    }

    /// Bytes the terminal holds: the entry itself and its automaton's
    /// tables, or the HIR it will be built from (not its context-independent
    /// entries, counted on their own).
    pub fn heap_bytes(&self) -> usize {
        let classes: usize = {
            let g = self.classes.lock().unwrap_or_else(|e| e.into_inner());
            g.capacity() * std::mem::size_of::<(u32, Arc<EndClasses>)>()
                + g.iter()
                    .map(|(_, c)| ARC_HEADER + std::mem::size_of::<EndClasses>() + c.heap_bytes())
                    .sum::<usize>()
        };
        std::mem::size_of::<Self>()
            + classes
            + self
                .avoid
                .as_ref()
                .map_or(0, |a| std::mem::size_of::<AvoidText>() + a.heap_bytes())
            + match self.dfa.get() {
                Some(d) => d.heap_bytes(),
                None => self
                    .pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_ref()
                    .map_or(0, |p| match &**p {
                        Pending::Hir { hir, .. } => crate::compile::hir_heap_bytes(hir),
                        Pending::Except { names, .. } => {
                            names.iter().map(|n| n.capacity() + 24).sum::<usize>()
                        }
                    }),
            }
    }

    /// The tokens that keep the automaton live from state `s`, grouped by
    /// the state they end in ([`crate::walk::end_classes`]): computed on
    /// first use, kept for the last [`CLASS_STATES`] states asked (their
    /// bytes charged with the terminal's), not kept when the lazy
    /// automaton refused a state meanwhile (the classes may then miss
    /// tokens, which a caller treats as classes of their own).
    pub(crate) fn end_classes(&self, s: u32, trie: &TokTrie, vocab_len: usize) -> Arc<EndClasses> {
        let lock = || self.classes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, c)) = lock().iter().find(|e| e.0 == s) {
            return c.clone();
        }
        let dfa = self.dfa();
        let c = Arc::new(end_classes(dfa, s, trie, vocab_len));
        if dfa.overflowed() {
            return c;
        }
        {
            let mut g = lock();
            if g.len() >= CLASS_STATES {
                g.remove(0);
            }
            g.push((s, c.clone()));
        }
        self.recharge();
        c
    }

    /// The automaton if it has been built.
    pub fn built(&self) -> Option<&ByteDfa> {
        self.dfa.get()
    }

    /// The automaton's start state ([`DEAD`](crate::ByteDfa::DEAD): the language
    /// is empty), without building it.
    pub fn start(&self) -> u32 {
        self.start
    }

    /// [`ByteDfa::is_accepting`], answered for the start state without
    /// building the automaton (an item just predicted asks it).
    #[inline]
    pub fn is_accepting(&self, s: u32) -> bool {
        if s == self.start {
            self.nullable
        } else {
            self.dfa().is_accepting(s)
        }
    }

    /// True when the terminal matches the empty string, without building
    /// its automaton.
    pub fn is_nullable(&self) -> bool {
        self.nullable
    }

    /// The error its deferred build met, if it was built and failed (the
    /// automaton then matches nothing; the matcher reports it).
    pub fn build_error(&self) -> Option<&EarleyError> {
        if !ANY_FAILED.load(Ordering::Relaxed) {
            return None;
        }
        self.failed.get().map(|e| &**e)
    }

    /// Records a use at clock `now`.
    pub(crate) fn touch(&self, now: u64) {
        self.used.store(now, Ordering::Relaxed);
    }

    /// The index clock at the terminal's last use.
    pub(crate) fn last_used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Records a compilation's lookup.
    pub(crate) fn note_compile(&self) {
        let _ = self
            .compiles
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < 2).then_some(n + 1)
            });
    }

    /// True when at most one compilation has looked the terminal up.
    pub(crate) fn single_use(&self) -> bool {
        self.compiles.load(Ordering::Relaxed) <= 1
    }

    /// Records an eviction visit at clock `now`; the clock of the previous
    /// visit (0 before the first).
    pub(crate) fn visit(&self, now: u64) -> u64 {
        self.swept.swap(now, Ordering::Relaxed)
    }

    /// The terminal's own bytes as the cache counts them: its `Arc`
    /// allocation, its automaton or pending HIR, its key (shared with the
    /// index's map) and its per-state slots.
    pub(crate) fn cache_bytes(&self) -> usize {
        ARC_HEADER
            + self.heap_bytes()
            + ARC_HEADER
            + self.regex.len()
            + self.ci.allocated() * std::mem::size_of::<Slot>()
    }

    /// Charges the terminal's bytes to `account` (before it is shared).
    pub(crate) fn charge(&mut self, account: &Arc<Account>) {
        debug_assert!(self.account.is_none());
        let n = self.cache_bytes();
        account.add(n);
        *self.charged.get_mut() = n;
        self.account = Some(account.clone());
    }

    /// Brings the charged bytes up to date (a lazy automaton grows as masks
    /// reach its states; a deferred one is built on first use).
    pub(crate) fn recharge(&self) {
        if let Some(a) = &self.account {
            let n = self.cache_bytes();
            let old = self.charged.swap(n, Ordering::Relaxed);
            a.add(n);
            a.sub(old);
        }
    }

    /// The per-DFA-state slots allocated so far.
    pub(crate) fn slots(&self) -> impl Iterator<Item = &Slot> + '_ {
        self.ci.iter()
    }

    /// The slot of DFA state `s` (a state of [`TermEntry::dfa`]).
    pub(crate) fn slot(&self, s: u32) -> &Slot {
        self.ci.get_or_init(s as usize, Slot::default)
    }

    /// The computed entries (shared ones included).
    pub(crate) fn entries(&self) -> impl Iterator<Item = Arc<CiEntry>> + '_ {
        self.ci.iter().filter_map(Slot::cached)
    }
}

/// Classifies every token for `dfa` in state `s` (module docs): through
/// the first slice contained in the state when there is one (only the
/// tokens outside the slice are walked), by a walk of the whole trie
/// otherwise.
pub(crate) fn compute(
    dfa: &ByteDfa,
    s: u32,
    trie: &TokTrie,
    slices: &[Slice],
    vocab_len: usize,
) -> CiEntry {
    // The first slice wholly allowed, else the largest tier allowed.
    let mut best: Option<&Tier> = None;
    for sl in slices {
        if best.is_some_and(|b| b.num_tokens() >= sl.num_tokens()) {
            continue;
        }
        if let Some(t) = sl.tier_for(dfa, s) {
            if best.is_none_or(|b| t.num_tokens() > b.num_tokens()) {
                best = Some(t);
            }
            if std::ptr::eq(t, &sl.tiers()[0]) {
                break;
            }
        }
    }
    if let Some(t) = best {
        let (extra, suffixes) = classify(dfa, s, t.rest(), vocab_len, false);
        let Bits::Sparse(extra) = extra else {
            unreachable!("classify without dense output gives sparse words")
        };
        return CiEntry {
            allowed: Bits::Sliced(t.tokens().clone(), extra),
            suffixes,
            account: None,
            residual: None,
            used: AtomicU64::new(0),
        };
    }
    let (allowed, suffixes) = classify(dfa, s, trie, vocab_len, true);
    CiEntry {
        allowed,
        suffixes,
        account: None,
        residual: None,
        used: AtomicU64::new(0),
    }
}

/// The entry of a free-text state from the set of tokens it allows and
/// the trie of the remainders of the context-dependent ones (module
/// `avoid_text`).
pub(crate) fn from_parts(allowed: TokenSet, suffixes: TokTrie) -> CiEntry {
    CiEntry {
        allowed: Bits::Dense(allowed),
        suffixes,
        account: None,
        residual: None,
        used: AtomicU64::new(0),
    }
}

/// Walks `trie` with `dfa` from `s`: the tokens that keep the DFA live, and
/// the trie of the remainders of the context-dependent ones (merged from
/// the subtrees below the nodes where the terminal can end).
///
/// The tokens are collected in a per-thread scratch set of the vocabulary
/// ([`live_tokens_into`]) and kept as the words they touched
/// ([`Bits::Sparse`]) when those are under a quarter of the set's words,
/// else (`dense` allowed) as a copy of the set ([`Bits::Dense`]); only the
/// touched words of the scratch are cleared. A literal's or a key's entry
/// holds a handful of tokens: it no longer allocates, zeroes and scans a
/// set of the whole vocabulary.
fn classify(
    dfa: &ByteDfa,
    s: u32,
    trie: &TokTrie,
    vocab_len: usize,
    dense: bool,
) -> (Bits, TokTrie) {
    thread_local! {
        static SCRATCH: std::cell::RefCell<(TokenSet, Vec<u32>)> =
            std::cell::RefCell::new((TokenSet::new(0), Vec::new()));
    }
    SCRATCH.with(|cell| {
        let mut guard = cell.borrow_mut();
        let (set, touched) = &mut *guard;
        if set.universe() != vocab_len {
            *set = TokenSet::new(vocab_len);
        }
        touched.clear();
        let mut ends: Vec<u32> = Vec::new();
        live_tokens_into(dfa, s, trie, set.words_mut(), touched, |i| ends.push(i));
        let suffixes = trie.merge_subtrees(&ends, |t| !set.contains(t));
        let nwords = set.words().len();
        let bits = if dense && touched.len() * 4 >= nwords {
            let copy = set.clone();
            set.clear();
            Bits::Dense(copy)
        } else {
            touched.sort_unstable();
            let words = set.words_mut();
            let ws = touched
                .iter()
                .map(|&i| (i, std::mem::take(&mut words[i as usize])))
                .collect();
            Bits::Sparse(ws)
        };
        (bits, suffixes)
    })
}
