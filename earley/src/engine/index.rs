//! The per-vocabulary [`VocabIndex`]: its fields, its [`IndexConfig`],
//! construction (the token trie and the slices) and accessors.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustc_hash::FxBuildHasher;

use zapspec_core::Vocabulary;

use crate::ci_cache::{Account, CiEntry, TermEntry};
use crate::error::EarleyError;
use crate::slicer::Slice;
use crate::terminal::ByteDfa;
use zapspec_toktrie::TokTrie;

use super::ring::{map_bytes, Ghosts, Ring};
use super::SharedVocab;

/// Everything the engine precomputes once per vocabulary and shares across
/// grammars: the vocabulary, its token trie, and every terminal compiled so
/// far (keyed by regex text) with its lazily filled context-independent
/// mask cache.
pub struct VocabIndex {
    pub(super) vocab: SharedVocab,
    pub(super) trie: TokTrie,
    pub(super) slices: Vec<Slice>,
    pub(super) config: IndexConfig,
    pub(super) terminals: Mutex<HashMap<Arc<str>, Arc<TermEntry>, FxBuildHasher>>,
    /// Context-independent entries by canonical residual automaton.
    pub(super) residuals: Mutex<HashMap<Arc<[u32]>, Arc<CiEntry>, FxBuildHasher>>,
    /// Every terminal compiled over this index and still alive (held by
    /// the map above or by a compiled grammar), in the order eviction
    /// visits them, and where the next sweep starts.
    pub(super) ring: Mutex<Ring>,
    /// Heap bytes of the shared cache: every kept context-independent
    /// entry and every terminal still alive (see [`Account`]), and the
    /// tables below.
    pub(super) account: Arc<Account>,
    /// The bytes charged for the index's own tables (the two maps'
    /// buckets, the ring, the ghosts), as last measured.
    pub(super) tables: Tables,
    /// After a sweep that evicted nothing and left the cache over its
    /// bound (what it visited is in use), the byte count below which no
    /// sweep runs; 0 otherwise, and again 0 when a compiled grammar is
    /// dropped (what it pinned can go).
    pub(super) floor: AtomicUsize,
    /// Logical clock of cache uses (eviction order); advanced by each cold
    /// entry, each terminal lookup and each sweep.
    pub(super) clock: AtomicU64,
    /// A sweep is running (others skip theirs).
    pub(super) evicting: AtomicBool,
    /// The clock at the last sweep of the residual map.
    pub(super) residual_swept: AtomicU64,
    /// Hashes of the terminals released with the one grammar that used
    /// them ([`VocabIndex::release`]): compiled again, such a terminal is
    /// kept past its grammar.
    pub(super) ghosts: Mutex<Ghosts>,
    /// Terminals released with their grammar so far.
    pub(super) released: AtomicUsize,
    /// Sweeps that evicted something, so far.
    pub(super) evictions: AtomicUsize,
    /// Sweeps run so far.
    pub(super) sweeps: AtomicUsize,
    /// Entries and terminals evicted so far.
    pub(super) evicted: AtomicUsize,
    /// Terminal automata built (cache misses of [`Self::terminal`]) and
    /// the nanoseconds their construction took (see
    /// [`CacheStats::dfa_builds`](crate::CacheStats::dfa_builds)).
    pub(super) dfa_builds: AtomicUsize,
    pub(super) dfa_build_nanos: AtomicU64,
    /// Of those, terminals whose automaton was deferred to first use.
    pub(super) deferred: AtomicUsize,
    /// The tokens that are valid UTF-8 prefixes, and all token bytes end
    /// to end: what free-text entries are built from (module
    /// `avoid_text`), on first use.
    pub(super) any_text: std::sync::OnceLock<crate::avoid_text::AnyText>,
}

/// How a [`VocabIndex`] computes and shares context-independent entries.
/// `Default`: the [default slices](crate::slicer::DEFAULT_SLICES) and
/// residual sharing on; each can be switched off for the ablation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexConfig {
    /// The vocabulary slices and their tiers ([`crate::slicer`]); empty:
    /// every cold entry walks the whole token trie.
    pub slices: Vec<crate::slicer::SliceSpec>,
    /// Share entries between terminal states with the same residual
    /// automaton ([`ByteDfa::residual_key`]).
    pub share_residuals: bool,
    /// Residual automata with more states than this are not keyed (the key
    /// would cost more than it saves).
    pub residual_max_states: usize,
    /// Bound on the shared cache: the heap bytes of its context-independent
    /// entries and of its terminals (their allocations, automata or the HIR
    /// a deferred one waits on, keys and per-state slots), counted exactly
    /// as they are stored and dropped, and of the index's own tables (its
    /// two maps, the ring of terminals, the remembered hashes of released
    /// ones), charged as they grow and shrink. When a
    /// new entry or a compile takes the cache above it, a *sweep* evicts
    /// entries not used since the sweep before last visited their terminal
    /// (the CLOCK approximation of least recently used), and terminals no
    /// live grammar holds, until the cache is at three quarters of the
    /// bound. A sweep visits at most [`VocabIndex::SWEEP_SLOTS`] slots and
    /// runs inline, in the mask, step or compile that crossed the bound: no
    /// pass over the whole cache, no thread. An evicted entry is recomputed
    /// on its next use (masks are unchanged). The terminals of live grammars
    /// are pinned (never evicted) but counted; when what is in use alone is
    /// over the bound, sweeps pause until the cache has grown by another
    /// eighth of it. A terminal that only one grammar looked up does not
    /// wait for a sweep: it leaves with that grammar (`VocabIndex::release`).
    /// `usize::MAX`: unbounded. Default 32 MiB (on the 6,730
    /// MaskBench schemas over o200k, one index for all as a server would
    /// hold, peak RSS stays below llguidance's; `examples/results/` has the
    /// runs and the other bounds tried).
    pub max_cache_bytes: usize,
    /// Build the DFAs of terminals without look-around lazily, state by
    /// state as masks and steps reach them (module `zapspec_grammar::lazy`), instead of
    /// determinising them at compile time. Lazy DFAs move the cost of
    /// states no token reaches out of time-to-first-mask, and report a
    /// `dfa_states` overflow at the mask or step that needed the state
    /// (`EarleyMatcher::limit_exceeded`) rather than at compile time.
    pub lazy_dfas: bool,
    /// Build the automaton of a terminal without look-around (and not a
    /// counted repetition, and of a modest NFA) when a mask or step first
    /// reaches it, not when its grammar is compiled: compiling a grammar
    /// builds no automaton its parses never reach (`TermEntry::dfa`). Only
    /// with [`Self::lazy_dfas`]. A deferred build that fails (its NFA past
    /// `RegexLimits::nfa_bytes` despite the estimate that admitted it) is
    /// reported by the matcher like a `dfa_states` overflow.
    pub deferred_terminals: bool,
    /// Write the automaton of a literal terminal down directly (one state
    /// per byte, [`zapspec_grammar::dense::DenseDfa::literal`]) instead of
    /// compiling it as a regex (NFA, then a lazy or eager DFA): a grammar
    /// of thousands of literals (a long `enum`, many keys) no longer pays
    /// an NFA and a lazy closure per transition for each. Literals over
    /// 1 KiB take the regex path. Off: the ablation, and literals under the
    /// regex limits as before.
    pub direct_literals: bool,
    /// Time each terminal automaton built at compile time (wall clock,
    /// `std::time::Instant`) into [`CacheStats::dfa_build_nanos`](crate::CacheStats::dfa_build_nanos)
    /// and [`VocabIndex::dfa_build_stats`]: opt-in, off by default (the
    /// engine reads no clock for it then, and the nanoseconds stay 0).
    pub time_dfa_builds: bool,
    /// Build the context-independent entries of free text (a
    /// [`Terminal::Avoid`](zapspec_grammar::Terminal::Avoid) over any
    /// text) from the tokens its strings forbid instead of a walk of the
    /// token trie (module `avoid_text`; the entries are the same). Off:
    /// the ablation.
    pub avoid_masks: bool,
}

impl Default for IndexConfig {
    fn default() -> Self {
        IndexConfig {
            slices: crate::slicer::SliceSpec::defaults(),
            share_residuals: true,
            residual_max_states: 64,
            max_cache_bytes: 32 << 20,
            lazy_dfas: true,
            deferred_terminals: true,
            direct_literals: true,
            time_dfa_builds: false,
            avoid_masks: true,
        }
    }
}

impl IndexConfig {
    /// No slices, no sharing: every cold entry is a full trie walk.
    pub fn plain() -> Self {
        IndexConfig {
            slices: Vec::new(),
            share_residuals: false,
            residual_max_states: 0,
            max_cache_bytes: usize::MAX,
            lazy_dfas: true,
            deferred_terminals: true,
            direct_literals: true,
            time_dfa_builds: false,
            avoid_masks: true,
        }
    }
}

/// The bytes charged for each of a [`VocabIndex`]'s own tables, as last
/// measured (each set when its table changes, under its lock).
#[derive(Debug, Default)]
pub(super) struct Tables {
    pub(super) terminals: Charge,
    pub(super) residuals: Charge,
    pub(super) ring: Charge,
    pub(super) ghosts: Charge,
}

/// Bytes charged to an [`Account`] for one table.
#[derive(Debug, Default)]
pub(super) struct Charge(AtomicUsize);

impl Charge {
    /// Charges `n` bytes in place of what was charged before.
    pub(super) fn set(&self, account: &Account, n: usize) {
        let old = self.0.swap(n, Ordering::Relaxed);
        if n >= old {
            account.add(n - old);
        } else {
            account.sub(old - n);
        }
    }
}

impl std::fmt::Debug for VocabIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VocabIndex")
            .field("vocab_len", &self.vocab.len())
            .field("trie_nodes", &self.trie.num_nodes())
            .field("slices", &self.slices.len())
            .finish()
    }
}

impl VocabIndex {
    /// Builds the token trie of `vocab` (special tokens and empty tokens
    /// excluded: they never spell grammar text) and the
    /// [default slices](crate::slicer::DEFAULT_SLICES). Cost: sorting the
    /// token strings and one pass over them (O(Σ |token| + n log n)), plus
    /// one trie walk per slice; once per process and vocabulary.
    pub fn new<V: Vocabulary + Send + Sync + 'static>(vocab: Arc<V>) -> Arc<Self> {
        Self::with_config(vocab, IndexConfig::default())
            .expect("the default slices are valid regexes")
    }

    /// Like [`VocabIndex::new`] with the given [`IndexConfig`] (an error
    /// when a slice regex does not compile). The trie and the slices are
    /// built through the concrete `V`; the index then keeps it as a
    /// [`SharedVocab`].
    pub fn with_config<V: Vocabulary + Send + Sync + 'static>(
        vocab: Arc<V>,
        config: IndexConfig,
    ) -> Result<Arc<Self>, EarleyError> {
        Self::build(&*vocab, vocab.clone(), config)
    }

    /// Like [`VocabIndex::with_config`] for a vocabulary that is already a
    /// trait object.
    pub fn with_shared_vocab(
        vocab: SharedVocab,
        config: IndexConfig,
    ) -> Result<Arc<Self>, EarleyError> {
        Self::build(&*vocab, vocab.clone(), config)
    }

    /// The trie and slices of `v`, which is `vocab`.
    fn build<V: Vocabulary + ?Sized>(
        v: &V,
        vocab: SharedVocab,
        config: IndexConfig,
    ) -> Result<Arc<Self>, EarleyError> {
        let trie = TokTrie::from_vocab(v);
        let slices = config
            .slices
            .iter()
            .map(|sp| Slice::new(&sp.regex, &sp.tiers, &trie, v))
            .collect::<Result<Vec<_>, _>>()?;
        let ghosts = Ghosts::with_capacity_for(config.max_cache_bytes);
        Ok(Arc::new(VocabIndex {
            vocab,
            trie,
            slices,
            config,
            terminals: Mutex::new(HashMap::default()),
            residuals: Mutex::new(HashMap::default()),
            ring: Mutex::new(Ring::default()),
            account: Arc::new(Account::default()),
            tables: Tables::default(),
            floor: AtomicUsize::new(0),
            residual_swept: AtomicU64::new(0),
            ghosts: Mutex::new(ghosts),
            released: AtomicUsize::new(0),
            clock: AtomicU64::new(0),
            evicting: AtomicBool::new(false),
            evictions: AtomicUsize::new(0),
            sweeps: AtomicUsize::new(0),
            evicted: AtomicUsize::new(0),
            dfa_builds: AtomicUsize::new(0),
            deferred: AtomicUsize::new(0),
            dfa_build_nanos: AtomicU64::new(0),
            any_text: std::sync::OnceLock::new(),
        }))
    }

    /// The tokens that are valid UTF-8 prefixes and the token bytes end
    /// to end (module `avoid_text`), built on first use: one pass over the
    /// vocabulary's bytes, kept for the index's lifetime.
    pub(crate) fn any_text(&self) -> &crate::avoid_text::AnyText {
        self.any_text
            .get_or_init(|| crate::avoid_text::AnyText::new(&self.trie, &*self.vocab))
    }

    /// How this index computes and shares context-independent entries.
    pub fn config(&self) -> &IndexConfig {
        &self.config
    }

    /// The residual key of `dfa` in state `s`, when sharing is on and the
    /// residual automaton is small enough.
    pub(crate) fn residual_key(&self, dfa: &ByteDfa, s: u32) -> Option<Vec<u32>> {
        if !self.config.share_residuals {
            return None;
        }
        dfa.residual_key(s, self.config.residual_max_states)
    }

    /// The shared entry of a residual key, computing it (outside the lock)
    /// on first use.
    /// The entry is charged to the cache's account here, with its key
    /// (`compute` does not charge it).
    pub(crate) fn shared_entry(
        &self,
        key: Vec<u32>,
        compute: impl FnOnce() -> (CiEntry, bool),
    ) -> Arc<CiEntry> {
        let lock = || self.residuals.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = lock().get(&*key) {
            e.used.store(self.now(), Ordering::Relaxed);
            return e.clone();
        }
        // `keep` false: the entry may be incomplete (a lazy DFA hit its
        // state bound while it was computed), so it is not shared.
        let (mut e, keep) = compute();
        if !keep {
            return Arc::new(e);
        }
        let key: Arc<[u32]> = key.into();
        e.residual = Some(key.clone());
        e.used = AtomicU64::new(self.tick());
        e.charge(&self.account);
        let mut map = lock();
        let e = map.entry(key).or_insert_with(|| Arc::new(e)).clone();
        self.tables.residuals.set(&self.account, map_bytes(&map));
        e
    }

    /// The vocabulary slices used by cold context-independent entries.
    pub fn slices(&self) -> &[Slice] {
        &self.slices
    }

    /// The vocabulary this index was built for.
    pub fn vocab(&self) -> &SharedVocab {
        &self.vocab
    }

    /// The token trie of the vocabulary (its non-special, non-empty tokens).
    pub(crate) fn trie(&self) -> &TokTrie {
        &self.trie
    }

    /// Number of nodes of the token trie (root and end sentinel included),
    /// what a cold context-independent entry walks at worst.
    pub fn trie_nodes(&self) -> usize {
        self.trie.num_nodes()
    }

    /// Number of tokens in the token trie: the vocabulary's non-special,
    /// non-empty tokens (what grammar text can be spelt with).
    pub fn trie_tokens(&self) -> usize {
        self.trie.num_tokens()
    }
}
