//! Compilation entry points: the per-vocabulary [`VocabIndex`] (token trie
//! and the shared terminal / context-independent cache), [`Engine`] and
//! [`CompiledGrammar`].
//!
//! What is *per process* (built once per vocabulary, excluded from
//! time-to-first-mask): [`VocabIndex::new`] — sorting the vocabulary and
//! building the token trie. What is *per grammar* (included in TTFM):
//! [`Engine::compile`] — terminal fusion, DFA compilation of the grammar's
//! terminals (unless another grammar over the same index already compiled
//! the same terminal), rule flattening, the initial Earley set — and the
//! first `fill_mask`, which computes the context-independent entries of the
//! (terminal, DFA state) pairs it meets (again shared with earlier grammars
//! that met the same pairs).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use rustc_hash::FxBuildHasher;

use zapspec_core::{TokenId, TokenSet, Vocabulary};
use zapspec_grammar::{Grammar, Terminal};

use crate::chart::{initial_chart, Chart};
use crate::ci_cache::{self, Account, CiEntry, TermEntry};
use crate::config::EngineConfig;
use crate::error::EarleyError;
use crate::grammar::Rules;
use crate::prune;
use crate::slicer::Slice;
use crate::terminal::ByteDfa;
use zapspec_toktrie::TokTrie;

/// The vocabulary as the engine keeps it: any [`Vocabulary`], shared.
///
/// A trait object rather than a type parameter: the engine reads token
/// bytes through its token trie when it computes masks, and asks the
/// vocabulary only for the bytes, length, EOS and special flag of the one
/// token being [advanced](zapspec_core::Constraint::advance) (a handful of
/// indirect calls per token). Building the trie and the slices, which
/// read every token, is generic over the concrete vocabulary
/// ([`VocabIndex::with_config`]).
pub type SharedVocab = Arc<dyn Vocabulary + Send + Sync>;

/// Everything the engine precomputes once per vocabulary and shares across
/// grammars: the vocabulary, its token trie, and every terminal compiled so
/// far (keyed by regex text) with its lazily filled context-independent
/// mask cache.
pub struct VocabIndex {
    vocab: SharedVocab,
    trie: TokTrie,
    slices: Vec<Slice>,
    config: IndexConfig,
    terminals: Mutex<HashMap<String, Arc<TermEntry>, FxBuildHasher>>,
    /// Context-independent entries by canonical residual automaton.
    residuals: Mutex<HashMap<Vec<u32>, Arc<CiEntry>, FxBuildHasher>>,
    /// Every terminal compiled over this index and still alive (held by
    /// the map above or by a compiled grammar), in the order eviction
    /// visits them, and where the next sweep starts.
    ring: Mutex<Ring>,
    /// Heap bytes of the shared cache: every kept context-independent
    /// entry and every terminal still alive (see [`Account`]).
    account: Arc<Account>,
    /// After a sweep that visited every terminal, evicted nothing and left
    /// the cache over its bound (all of it is in use), the byte count
    /// below which no sweep runs; 0 otherwise.
    floor: AtomicUsize,
    /// Logical clock of cache uses (eviction order); advanced by each cold
    /// entry, each terminal lookup and each sweep.
    clock: AtomicU64,
    /// A sweep is running (others skip theirs).
    evicting: AtomicBool,
    /// The clock at the last sweep of the residual map.
    residual_swept: AtomicU64,
    /// Hashes of the terminals released with the one grammar that used
    /// them ([`VocabIndex::release`]): compiled again, such a terminal is
    /// kept past its grammar.
    ghosts: Mutex<Ghosts>,
    /// Terminals released with their grammar so far.
    released: AtomicUsize,
    /// Sweeps that evicted something, so far.
    evictions: AtomicUsize,
    /// Entries and terminals evicted so far.
    evicted: AtomicUsize,
    /// Terminal automata built (cache misses of [`Self::terminal`]) and
    /// the nanoseconds their construction took (see
    /// [`CacheStats::dfa_builds`]).
    dfa_builds: AtomicUsize,
    dfa_build_nanos: AtomicU64,
    /// Of those, terminals whose automaton was deferred to first use.
    deferred: AtomicUsize,
}

/// A bounded set of regex-text hashes, oldest forgotten first.
#[derive(Default)]
struct Ghosts {
    set: rustc_hash::FxHashSet<u64>,
    order: std::collections::VecDeque<u64>,
}

impl Ghosts {
    /// Hashes remembered at most.
    const CAPACITY: usize = 1 << 16;

    fn hash(regex: &str) -> u64 {
        use std::hash::BuildHasher;
        FxBuildHasher.hash_one(regex)
    }

    fn insert(&mut self, h: u64) {
        if self.set.insert(h) {
            self.order.push_back(h);
            if self.order.len() > Self::CAPACITY {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }
}

/// The live terminals in the order eviction visits them, and where the
/// next sweep starts ([`VocabIndex::sweep`]).
#[derive(Default)]
struct Ring {
    terms: Vec<Weak<TermEntry>>,
    hand: usize,
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
    /// entries and of its terminals (their automata, or the HIR a deferred
    /// one waits on), counted exactly as they are stored and dropped. When a
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
        Ok(Arc::new(VocabIndex {
            vocab,
            trie,
            slices,
            config,
            terminals: Mutex::new(HashMap::default()),
            residuals: Mutex::new(HashMap::default()),
            ring: Mutex::new(Ring::default()),
            account: Arc::new(Account::default()),
            floor: AtomicUsize::new(0),
            residual_swept: AtomicU64::new(0),
            ghosts: Mutex::new(Ghosts::default()),
            released: AtomicUsize::new(0),
            clock: AtomicU64::new(0),
            evicting: AtomicBool::new(false),
            evictions: AtomicUsize::new(0),
            evicted: AtomicUsize::new(0),
            dfa_builds: AtomicUsize::new(0),
            deferred: AtomicUsize::new(0),
            dfa_build_nanos: AtomicU64::new(0),
        }))
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
    pub(crate) fn shared_entry(
        &self,
        key: Vec<u32>,
        compute: impl FnOnce() -> (CiEntry, bool),
    ) -> Arc<CiEntry> {
        let lock = || self.residuals.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = lock().get(&key) {
            e.used.store(self.now(), Ordering::Relaxed);
            return e.clone();
        }
        // `keep` false: the entry may be incomplete (a lazy DFA hit its
        // state bound while it was computed), so it is not shared.
        let (mut e, keep) = compute();
        if !keep {
            return Arc::new(e);
        }
        e.residual = Some(key.clone().into_boxed_slice());
        e.used = AtomicU64::new(self.tick());
        lock().entry(key).or_insert_with(|| Arc::new(e)).clone()
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

    /// The shared entry of a terminal given as regex text.
    pub(crate) fn terminal_regex(&self, regex: String) -> Result<Arc<TermEntry>, EarleyError> {
        self.terminal_regex_with(regex, &zapspec_grammar::RegexLimits::default())
    }

    /// [`Self::terminal_regex`] under explicit limits (an entry compiled
    /// earlier is reused whatever the limits it was compiled under).
    pub(crate) fn terminal_regex_with(
        &self,
        regex: String,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        self.terminal_built(regex, |re| self.entry_of_text(re, limits))
    }

    /// [`Self::entry_of`] the parse of `regex`.
    fn entry_of_text(
        &self,
        regex: &str,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<TermEntry, EarleyError> {
        let hir = crate::terminal::parse_regex(regex).map_err(|e| EarleyError::Terminal {
            regex: regex.to_string(),
            reason: e.to_string(),
        })?;
        self.entry_of(regex, Arc::new(hir), limits, self.config.lazy_dfas)
    }

    /// The entry of `hir` (the language of `regex`): deferred to its first
    /// use where [`ByteDfa::deferrable`] allows (`IndexConfig::lazy_dfas`
    /// on, no look-around, not a counted repetition, a modest NFA), built
    /// now otherwise.
    fn entry_of(
        &self,
        regex: &str,
        hir: Arc<regex_syntax::hir::Hir>,
        limits: &zapspec_grammar::RegexLimits,
        lazy: bool,
    ) -> Result<TermEntry, EarleyError> {
        if self.config.deferred_terminals {
            if let Some(facts) = ByteDfa::deferrable(&hir, limits, lazy) {
                self.deferred.fetch_add(1, Ordering::Relaxed);
                return Ok(TermEntry::deferred(regex.to_string(), hir, *limits, facts));
            }
        }
        let dfa = ByteDfa::from_parsed(&hir, regex, limits, lazy)?;
        Ok(TermEntry::new(regex.to_string(), dfa))
    }

    /// The shared entry of a regular family's terminal ([`crate::family`]),
    /// keyed by its text like a regex.
    pub(crate) fn terminal_family(
        &self,
        family: &crate::family::Family,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        self.terminal_built(
            ByteDfa::regex_of(&Terminal::Regex(family.key().to_string())),
            |re| Ok(TermEntry::new(re.to_string(), family.dfa(limits)?)),
        )
    }

    /// The entry of `regex` from the cache, or built by `build` and stored.
    fn terminal_built(
        &self,
        regex: String,
        build: impl FnOnce(&str) -> Result<TermEntry, EarleyError>,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        if let Some(e) = self.lock().get(&regex) {
            e.touch(self.tick());
            e.note_compile();
            return Ok(e.clone());
        }
        let t0 = std::time::Instant::now();
        let entry = build(&regex);
        self.dfa_builds.fetch_add(1, Ordering::Relaxed);
        self.dfa_build_nanos.fetch_add(
            u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        let mut entry = entry?;
        entry.charge(&self.account);
        let ours = Arc::new(entry);
        ours.touch(self.tick());
        ours.note_compile();
        if self
            .ghosts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .set
            .contains(&Ghosts::hash(&regex))
        {
            // released once already: a second grammar uses it
            ours.note_compile();
        }
        let e = self
            .lock()
            .entry(regex)
            .or_insert_with(|| ours.clone())
            .clone();
        if Arc::ptr_eq(&e, &ours) {
            self.ring
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .terms
                .push(Arc::downgrade(&e));
        }
        Ok(e)
    }

    /// The cache clock (a load: hits do not write a shared counter).
    pub(crate) fn now(&self) -> u64 {
        self.clock.load(Ordering::Relaxed)
    }

    /// Advances the cache clock (each cold entry and each terminal
    /// lookup), so later uses sort after earlier ones.
    pub(crate) fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Slots one sweep visits at most ([`IndexConfig::max_cache_bytes`]);
    /// a sweep stopped by it is continued by the next call that finds the
    /// cache over its bound.
    pub const SWEEP_SLOTS: usize = 4096;

    /// The account the cache's entries and terminals are charged to.
    pub(crate) fn account(&self) -> &Arc<Account> {
        &self.account
    }

    /// Keeps the cache near its bound (called after a cold entry is stored
    /// and before a grammar is compiled; no slot lock is held then): when
    /// it is over, one bounded sweep ([`IndexConfig::max_cache_bytes`]).
    pub(crate) fn enforce_bound(&self) {
        let bytes = self.account.get();
        if bytes <= self.config.max_cache_bytes
            || bytes <= self.floor.load(Ordering::Relaxed)
            || self.evicting.swap(true, Ordering::Acquire)
        {
            return;
        }
        self.sweep();
        self.evicting.store(false, Ordering::Release);
    }

    /// One sweep (the caller has set `evicting`): first the residual map,
    /// whose entries no slot holds and no terminal has found by key since
    /// the previous sweep are dropped; then the clock hand over the ring of
    /// live terminals. At each terminal: every slot not used since the
    /// terminal's previous visit gives up its entry (freed unless another
    /// slot holds it; the residual map's reference goes with the last
    /// slot's); a terminal only the map holds and not used since its
    /// previous visit leaves the map (freed with its entries). Stops at
    /// three quarters of the bound, after [`Self::SWEEP_SLOTS`] slots, or
    /// after one turn of the ring. Cost: the residual map's entries and the slots visited, plus
    /// a lock of the residual map per entry freed that was shared by key.
    /// Returns what it evicted.
    fn sweep(&self) -> usize {
        let max = self.config.max_cache_bytes;
        let target = max / 4 * 3;
        let now = self.tick();
        let (mut slots, mut visited, mut gone) = (0usize, 0usize, 0usize);
        {
            // Entries only the residual map holds, not found by their key
            // since the previous sweep.
            let prev = self.residual_swept.swap(now, Ordering::Relaxed);
            let mut map = self.residuals.lock().unwrap_or_else(|e| e.into_inner());
            slots += map.len();
            map.retain(|_, e| {
                let keep = Arc::strong_count(e) > 1 || e.used.load(Ordering::Relaxed) >= prev;
                gone += usize::from(!keep);
                keep
            });
        }
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let turn = ring.terms.len();
        while self.account.get() > target
            && slots < Self::SWEEP_SLOTS
            && visited < turn
            && !ring.terms.is_empty()
        {
            if ring.hand >= ring.terms.len() {
                ring.hand = 0;
            }
            let h = ring.hand;
            let Some(t) = ring.terms[h].upgrade() else {
                // its place takes the last terminal, visited next
                ring.terms.swap_remove(h);
                continue;
            };
            visited += 1;
            let prev = t.visit(now);
            for slot in t.slots() {
                slots += 1;
                if slot.used() < prev {
                    if let Some(e) = slot.take() {
                        gone += 1;
                        self.release_residual(e);
                    }
                }
            }
            t.recharge();
            // the map's reference and ours: no grammar holds it
            if Arc::strong_count(&t) == 2 && t.last_used() < prev {
                let mut map = self.lock();
                if map.get(&t.regex).is_some_and(|x| Arc::ptr_eq(x, &t)) {
                    map.remove(&t.regex);
                    gone += 1;
                }
            }
            ring.hand = h + 1;
        }
        let bytes = self.account.get();
        let floor = if visited >= turn && gone == 0 && bytes > max {
            bytes.saturating_add(max / 8)
        } else {
            0
        };
        self.floor.store(floor, Ordering::Relaxed);
        if gone > 0 {
            self.evictions.fetch_add(1, Ordering::Relaxed);
            self.evicted.fetch_add(gone, Ordering::Relaxed);
        }
        gone
    }

    /// Called when a compiled grammar is dropped: its terminals that no
    /// other compilation has looked up leave the map now, freed with the
    /// grammar (and their entries with them) rather than later by a sweep.
    /// A schema's own terminals (its keys, its patterns) are rarely met
    /// again; freeing them while their memory is still warm keeps the heap
    /// from filling with holes that later allocations land in. Their
    /// hashes are remembered ([`Ghosts::CAPACITY`]), so a terminal compiled
    /// again is kept past its second grammar.
    fn release(&self, terms: &[Arc<TermEntry>]) {
        let mut map = self.lock();
        let mut ghosts = self.ghosts.lock().unwrap_or_else(|e| e.into_inner());
        let mut n = 0;
        for t in terms {
            if t.single_use() && map.get(&t.regex).is_some_and(|x| Arc::ptr_eq(x, t)) {
                map.remove(&t.regex);
                ghosts.insert(Ghosts::hash(&t.regex));
                n += 1;
            }
        }
        self.released.fetch_add(n, Ordering::Relaxed);
    }

    /// Drops an entry a slot gave up, and its residual key's reference too
    /// when that is the only other one left.
    fn release_residual(&self, e: Arc<CiEntry>) {
        if let Some(key) = &e.residual {
            if Arc::strong_count(&e) == 2 {
                let mut map = self.residuals.lock().unwrap_or_else(|e| e.into_inner());
                if map.get(&**key).is_some_and(|x| Arc::ptr_eq(x, &e)) {
                    map.remove(&**key);
                }
            }
        }
    }

    /// What the terminal given as regex text (in [`ByteDfa::regex_of`]'s
    /// dialect), after it has read `prefix`, contributes to any mask: its
    /// context-independent cache entry as plain data, computed on first
    /// use (and the terminal compiled on first use) like a mask would;
    /// `None` when no match starts with `prefix`. For inspecting and
    /// measuring the cache: masks never need it.
    pub fn terminal_tokens(
        &self,
        regex: &str,
        prefix: &[u8],
    ) -> Result<Option<TerminalTokens>, EarleyError> {
        let e = self.terminal_regex(regex.to_string())?;
        let s = e.dfa().run(e.dfa().start(), prefix);
        if s == ByteDfa::DEAD {
            return Ok(None);
        }
        let c = e.ci(s, self);
        Ok(Some(TerminalTokens {
            allowed: c.allowed_tokens(self.vocab.len()),
            dependent: c.dependent(),
            sliced: c.sliced(),
        }))
    }

    pub(crate) fn terminal(
        &self,
        t: &Terminal,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        if let Terminal::And(..) = t {
            return self.terminal_and(t, || None, || None, limits);
        }
        self.terminal_regex_with(ByteDfa::regex_of(t), limits)
    }

    /// The entry of an intersection ([`Terminal::And`], any other
    /// terminal: as [`Self::terminal`]), built on a miss by
    /// [`ByteDfa::from_and`] from the HIRs `a` and `b` give (`None`: the
    /// parse of the text). Built at once, not deferred: its pair table is
    /// what compilation reads the start state from.
    pub(crate) fn terminal_and(
        &self,
        t: &Terminal,
        a: impl FnOnce() -> Option<Arc<regex_syntax::hir::Hir>>,
        b: impl FnOnce() -> Option<Arc<regex_syntax::hir::Hir>>,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        let Terminal::And(ta, tb) = t else {
            return self.terminal(t, limits);
        };
        self.terminal_built(ByteDfa::regex_of(t), |key| {
            let hir = |h: Option<Arc<regex_syntax::hir::Hir>>, text: &str| match h {
                Some(h) => Ok(h),
                None => crate::terminal::parse_regex(text)
                    .map(Arc::new)
                    .map_err(|e| EarleyError::Terminal {
                        regex: text.to_string(),
                        reason: e.to_string(),
                    }),
            };
            let (ha, hb) = (hir(a(), ta)?, hir(b(), tb)?);
            let dfa = ByteDfa::from_and(&ha, &hb, key, limits)?;
            Ok(TermEntry::new(key.to_string(), dfa))
        })
    }

    /// [`Self::terminal`] of a regex terminal whose HIR the grammar holds
    /// ([`Grammar::regex_hir`]): built from the HIR on a miss, not from
    /// its text (the cache is still keyed by the text).
    pub(crate) fn terminal_parsed(
        &self,
        t: &Terminal,
        hir: &Arc<regex_syntax::hir::Hir>,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        let lazy = self.config.lazy_dfas;
        self.terminal_built(ByteDfa::regex_of(t), |re| {
            self.entry_of(re, hir.clone(), limits, lazy)
        })
    }

    /// [`Self::terminal`] built, on a miss, from the HIR `hir` makes
    /// (called only then; `None`: parse the text): a literal's or class's
    /// ([`ByteDfa::hir_of`]), a fused regex's ([`crate::fuse::Fused::hir`]).
    pub(crate) fn terminal_hir_on_miss(
        &self,
        t: &Terminal,
        hir: impl FnOnce() -> Option<regex_syntax::hir::Hir>,
        limits: &zapspec_grammar::RegexLimits,
    ) -> Result<Arc<TermEntry>, EarleyError> {
        let lazy = self.config.lazy_dfas;
        self.terminal_built(ByteDfa::regex_of(t), |re| match hir() {
            Some(h) => self.entry_of(re, Arc::new(h), limits, lazy),
            None => self.entry_of_text(re, limits),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<TermEntry>, FxBuildHasher>> {
        self.terminals.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Terminal automata built so far and the nanoseconds spent building
    /// them (two atomic loads; [`Self::cache_stats`] walks the cache).
    pub fn dfa_build_stats(&self) -> (usize, u64) {
        (
            self.dfa_builds.load(Ordering::Relaxed),
            self.dfa_build_nanos.load(Ordering::Relaxed),
        )
    }

    /// Statistics of the shared terminal cache.
    pub fn cache_stats(&self) -> CacheStats {
        let m = self.lock();
        let mut s = CacheStats {
            terminals: m.len(),
            evictions: self.evictions.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
            cache_bytes: self.account.get(),
            released: self.released.load(Ordering::Relaxed),
            dfa_builds: self.dfa_builds.load(Ordering::Relaxed),
            dfa_build_nanos: self.dfa_build_nanos.load(Ordering::Relaxed),
            deferred: self.deferred.load(Ordering::Relaxed),
            shared_entries: self
                .residuals
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .len(),
            ..Default::default()
        };
        let mut seen = rustc_hash::FxHashSet::default();
        for e in m.values() {
            for c in e.entries() {
                s.ci_entries += 1;
                if seen.insert(Arc::as_ptr(&c)) {
                    s.ci_bytes += c.heap_bytes();
                }
            }
            s.dfa_states += e.built().map_or(0, ByteDfa::num_states);
        }
        s.ci_bytes += self.slices.iter().map(Slice::heap_bytes).sum::<usize>();
        s
    }
}

/// What one state of a terminal contributes to every mask
/// ([`VocabIndex::terminal_tokens`]): its context-independent cache entry
/// (module `ci_cache`), as plain data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TerminalTokens {
    /// The tokens allowed whatever follows the terminal: its automaton
    /// stays live over all their bytes.
    pub allowed: TokenSet,
    /// The context-dependent tokens, sorted: `(bytes[k..], token)` for
    /// each `k` (`1 ≤ k < len`) after which the terminal may end, of each
    /// token not in [`Self::allowed`] whose bytes the automaton reads
    /// that far. Whether one is allowed depends on what the grammar lets
    /// follow the terminal; a mask parses the remainder to find out.
    pub dependent: Vec<(Vec<u8>, TokenId)>,
    /// The entry was computed through a vocabulary slice
    /// ([`IndexConfig::slices`]): only the tokens outside it were walked.
    pub sliced: bool,
}

/// Sizes of the shared terminal / context-independent mask cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Terminals (distinct regexes) compiled so far.
    pub terminals: usize,
    /// DFA states summed over those terminals.
    pub dfa_states: usize,
    /// (terminal, DFA state) entries computed so far.
    pub ci_entries: usize,
    /// Distinct entries shared by residual key.
    pub shared_entries: usize,
    /// Heap bytes of the distinct entries and of the slices.
    pub ci_bytes: usize,
    /// Eviction sweeps that evicted something
    /// (`IndexConfig::max_cache_bytes`).
    pub evictions: usize,
    /// Entries and terminals those sweeps evicted.
    pub evicted: usize,
    /// Heap bytes the cache counts against `IndexConfig::max_cache_bytes`
    /// (its entries and terminals, as last charged).
    pub cache_bytes: usize,
    /// Terminals that only one grammar used, released with it (not kept
    /// in the cache past their grammar).
    pub released: usize,
    /// Terminal automata built so far (cache misses, failed builds
    /// included), and the wall-clock nanoseconds spent building them at
    /// compile time (the part of time-to-first-mask that goes to automata:
    /// determinisation, or a lazy DFA's NFA and start state; the states a
    /// lazy DFA builds later, inside masks, are not counted here).
    pub dfa_builds: usize,
    /// See [`CacheStats::dfa_builds`].
    pub dfa_build_nanos: u64,
    /// Of [`CacheStats::dfa_builds`], terminals deferred to their first
    /// use ([`IndexConfig::deferred_terminals`]): their automata are built
    /// by the masks and steps that reach them, outside `dfa_build_nanos`.
    pub deferred: usize,
}

/// The engine for one vocabulary: compiles grammars against a shared
/// [`VocabIndex`]. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Engine {
    index: Arc<VocabIndex>,
}

impl Engine {
    /// Builds the per-vocabulary index (the token trie; see
    /// [`VocabIndex::new`] for its cost).
    pub fn new<V: Vocabulary + Send + Sync + 'static>(vocab: Arc<V>) -> Self {
        Engine {
            index: VocabIndex::new(vocab),
        }
    }

    /// An engine over an existing index.
    pub fn with_index(index: Arc<VocabIndex>) -> Self {
        Engine { index }
    }

    /// The shared per-vocabulary index.
    pub fn index(&self) -> &Arc<VocabIndex> {
        &self.index
    }

    /// Compiles `grammar` for this vocabulary.
    pub fn compile(
        &self,
        grammar: &Grammar,
        config: EngineConfig,
    ) -> Result<Arc<CompiledGrammar>, EarleyError> {
        CompiledGrammar::new(grammar, self.index.clone(), config)
    }
}

/// A grammar compiled for a vocabulary; makes matchers. Holds the
/// pruned-state cache and the rejected-prefix set, shared by all its
/// matchers (across sequences and requests).
///
/// ## Threads
///
/// `CompiledGrammar` (like [`VocabIndex`] and [`Engine`]) is `Send + Sync`
/// and is meant to be shared by `Arc` between the threads of a server; its
/// matchers ([`EarleyMatcher`](crate::EarleyMatcher)) are `Send + Sync` too and may be moved to
/// (or masked on) any thread — see [`crate::batch`], which masks a batch of
/// them in parallel. Everything the matchers of one grammar share is
/// behind a lock or written once: the pruned-state cache is an `RwLock`
/// (hits take the read lock, so concurrent hits do not serialise), the
/// rejected-prefix set a `Mutex`, the counters atomics, and the
/// context-independent entries of the shared [`VocabIndex`] slots behind
/// an `RwLock` each (a cold entry is computed outside the lock; two threads
/// that miss at once may both compute it, and the first stored is kept). No
/// lock is held while a mask is computed or a token parsed, and the
/// shared state only ever caches values that are a function of the parser
/// state, so a mask does not depend on which thread, or which other
/// sequence, filled a cache first. A `const` assertion in
/// [`crate::batch`] checks the bounds at compile time.
pub struct CompiledGrammar {
    index: Arc<VocabIndex>,
    rules: Rules,
    config: EngineConfig,
    initial: Arc<Chart>,
    state_cache: RwLock<HashMap<Box<[u32]>, Arc<TokenSet>, FxBuildHasher>>,
    rejected: Mutex<RejectedPrefixes>,
    counters: AtomicCounters,
    fused: Option<Grammar>,
}

impl Drop for CompiledGrammar {
    fn drop(&mut self) {
        self.index.release(&self.rules.terms);
    }
}

/// [`EngineConfig::compile_time_budget`] of one compilation.
struct Deadline {
    start: std::time::Instant,
    budget: std::time::Duration,
}

impl Deadline {
    fn new(budget: std::time::Duration) -> Self {
        Deadline {
            start: std::time::Instant::now(),
            budget,
        }
    }

    /// `LimitExceeded { time_budget }` at `place` once the budget is spent.
    fn check(&self, place: &str) -> Result<(), EarleyError> {
        let spent = self.start.elapsed();
        if spent <= self.budget {
            return Ok(());
        }
        Err(EarleyError::LimitExceeded {
            limit: zapspec_grammar::Limit::Time,
            max: usize::try_from(self.budget.as_millis()).unwrap_or(usize::MAX),
            place: format!("grammar compilation, {place}"),
            terminal: None,
            detail: format!(
                "{:.3} s spent, more than compile_time_budget {:.3} s (max in ms)",
                spent.as_secs_f64(),
                self.budget.as_secs_f64()
            ),
        })
    }
}

/// The rejected-prefix set (§4.4): per parser-state fingerprint, the byte
/// prefixes known to have no viable continuation from that state.
type RejectedPrefixes = HashMap<u64, Vec<Box<[u8]>>, FxBuildHasher>;

/// The [`Counters`] of a compiled grammar as atomics, so matchers on
/// different threads count without a lock (relaxed: they are statistics,
/// read as a snapshot by [`CompiledGrammar::counters`]).
#[derive(Debug, Default)]
struct AtomicCounters {
    masks: AtomicU64,
    state_cache_hits: AtomicU64,
    rejected_prefix_hits: AtomicU64,
    peak_set_items: AtomicUsize,
}

impl AtomicCounters {
    /// Adds one to `c`.
    #[inline]
    fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a set of `n` items.
    #[inline]
    fn observe_set(&self, n: usize) {
        if n > self.peak_set_items.load(Ordering::Relaxed) {
            self.peak_set_items.fetch_max(n, Ordering::Relaxed);
        }
    }
}

/// Cache hit counters of a compiled grammar.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Masks asked for (`fill_mask` calls before the end of the sequence).
    pub masks: u64,
    /// Of those, masks served by the pruned-state cache.
    pub state_cache_hits: u64,
    /// Tokens rejected by the rejected-prefix set without parsing.
    pub rejected_prefix_hits: u64,
    /// Largest Earley set built so far by an advance or a mask of any
    /// matcher (items; what [`EngineConfig::max_set_items`] bounds).
    pub peak_set_items: usize,
}

impl std::fmt::Debug for CompiledGrammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGrammar")
            .field("positions", &self.rules.num_positions())
            .field("terminals", &self.rules.terms.len())
            .field("config", &self.config)
            .finish()
    }
}

impl CompiledGrammar {
    /// A terminal whose automaton left the last advance or mask possibly
    /// incomplete: a lazy DFA that refused a state for its bound (module
    /// `zapspec_grammar::lazy`), or a deferred build that failed
    /// ([`TermEntry::dfa`]). One atomic load each when no automaton in the
    /// process has. Unbuilt terminals are not built to be asked.
    pub(crate) fn terminal_trouble(&self) -> Option<TerminalTrouble> {
        if zapspec_grammar::lazy::any_overflowed() {
            let over = self.rules.terms.iter().find_map(|t| {
                let d = t.built()?;
                d.state_bound()
                    .filter(|_| d.overflowed())
                    .map(|max| TerminalTrouble::Overflow {
                        regex: t.regex.clone(),
                        max,
                    })
            });
            if over.is_some() {
                return over;
            }
        }
        self.rules
            .terms
            .iter()
            .find_map(|t| t.build_error().cloned().map(TerminalTrouble::Failed))
    }

    /// How many of the grammar's terminals have their automaton built, of
    /// how many: a terminal deferred at compile time
    /// ([`IndexConfig::deferred_terminals`]) is built by the first mask or
    /// step that reaches it, so a terminal no parse reached is still
    /// unbuilt.
    pub fn terminals_built(&self) -> (usize, usize) {
        let t = &self.rules.terms;
        (t.iter().filter(|e| e.built().is_some()).count(), t.len())
    }

    /// Compiles `grammar` over `index`.
    pub fn new(
        grammar: &Grammar,
        index: Arc<VocabIndex>,
        config: EngineConfig,
    ) -> Result<Arc<Self>, EarleyError> {
        index.enforce_bound();
        let deadline = Deadline::new(config.compile_time_budget);
        let (mut rules, fused) = Self::fused_rules(grammar, &index, &config, &deadline)?;
        rules.max_set_items = config.max_set_items;
        deadline.check("after terminal compilation")?;
        let mut chart = initial_chart(&rules).map_err(|n| EarleyError::LimitExceeded {
            limit: zapspec_grammar::Limit::SetItems,
            max: config.max_set_items,
            place: "the initial Earley set (compile)".into(),
            terminal: None,
            detail: format!(
                "the closure of the start symbol reached {n} items, more than max_set_items {}",
                config.max_set_items
            ),
        })?;
        if config.pruning {
            prune::compact(&rules, &mut chart, &mut prune::Scratch::default());
        }
        let counters = AtomicCounters::default();
        counters.observe_set(chart.last().len());
        Ok(Arc::new(CompiledGrammar {
            index,
            rules,
            config,
            initial: Arc::new(chart),
            state_cache: RwLock::new(HashMap::default()),
            rejected: Mutex::new(HashMap::default()),
            counters,
            fused,
        }))
    }

    /// Terminal fusion, then the rules. A fused terminal the regex compiler
    /// refuses (fusion bounds size and nesting, but an NFA or DFA can still
    /// exceed its limits) un-fuses the nonterminal it came from and fusion
    /// is redone; after a few rounds, or when an original terminal is the
    /// culprit, the rules are used as written. Fusion is an optimisation:
    /// the language never depends on it.
    fn fused_rules(
        grammar: &Grammar,
        index: &Arc<VocabIndex>,
        config: &EngineConfig,
        deadline: &Deadline,
    ) -> Result<(Rules, Option<Grammar>), EarleyError> {
        // Compiled from a HIR where one is known (the grammar's table, a
        // literal's or class's, a fused regex's), not from a parse of the
        // text.
        let term = |t: &Terminal| {
            deadline.check("terminal compilation")?;
            let limits = &config.regex_limits;
            match t {
                Terminal::Regex(text) => match grammar.regex_hir_shared(text) {
                    Some(hir) => index.terminal_parsed(t, hir, limits),
                    None => index.terminal(t, limits),
                },
                Terminal::And(a, b) => index.terminal_and(
                    t,
                    || grammar.regex_hir_shared(a).cloned(),
                    || grammar.regex_hir_shared(b).cloned(),
                    limits,
                ),
                _ => index.terminal_hir_on_miss(t, || ByteDfa::hir_of(t), limits),
            }
        };
        if config.fuse_terminals {
            let mut excluded: Vec<zapspec_grammar::NtId> = Vec::new();
            for round in 0..8 {
                deadline.check(&format!("terminal fusion, round {}", round + 1))?;
                let fused = crate::fuse::fuse_with(
                    grammar,
                    config.fuse_max_weight,
                    &excluded,
                    config.fuse_families,
                );
                let re = &fused.terminal;
                let mut hirs = fused.hirs(grammar);
                let term = |t: &Terminal| {
                    if let Terminal::Regex(text) = t {
                        if let Some(f) = fused.families.get(text) {
                            deadline.check("terminal compilation")?;
                            return index.terminal_family(f, &config.regex_limits);
                        }
                        if grammar.regex_hir(text).is_none() {
                            deadline.check("terminal compilation")?;
                            return index.terminal_hir_on_miss(
                                t,
                                || hirs.get(text),
                                &config.regex_limits,
                            );
                        }
                    }
                    term(t)
                };
                match Rules::new(&fused.grammar, term) {
                    Ok(r) => return Ok((r, Some(fused.grammar))),
                    Err(e) => {
                        let regex = match &e {
                            EarleyError::Terminal { regex, .. }
                            | EarleyError::LimitExceeded {
                                terminal: Some(regex),
                                ..
                            } => regex,
                            _ => return Err(e),
                        };
                        let culprit = re.iter().position(|r| {
                            r.as_ref().is_some_and(|r| {
                                ByteDfa::regex_of(&Terminal::Regex(r.clone())) == *regex
                            })
                        });
                        let Some(nt) = culprit else { break };
                        let nt = zapspec_grammar::NtId(nt as u32);
                        if let Some(e) = Self::same_when_unfused(grammar, nt, &e) {
                            return Err(e);
                        }
                        excluded.push(nt);
                    }
                }
            }
        }
        Ok((Rules::new(grammar, term)?, None))
    }

    /// When the fused terminal of `nt` exceeded a limit (`e`) and `nt` is
    /// one rule of one regex terminal, un-fusing it would compile the same
    /// language again (twice the time of a refusal, 0.75 s in release
    /// for the `gbnf` fuzz target's exponential DFA): the refusal, placed
    /// as the un-fused grammar would place it (rule `nt`, its terminal).
    fn same_when_unfused(
        grammar: &Grammar,
        nt: zapspec_grammar::NtId,
        e: &EarleyError,
    ) -> Option<EarleyError> {
        let mut rules = grammar.rules.iter().filter(|r| r.lhs == nt);
        let (Some(rule), None) = (rules.next(), rules.next()) else {
            return None;
        };
        let [zapspec_grammar::Symbol::T(t @ Terminal::Regex(_))] = rule.rhs.as_slice() else {
            return None;
        };
        let regex = ByteDfa::regex_of(t);
        let place = format!(
            "rule `{}`, terminal {}",
            grammar.name(nt),
            zapspec_grammar::limits::short_regex(&regex)
        );
        match e.clone() {
            EarleyError::LimitExceeded {
                limit, max, detail, ..
            } => Some(EarleyError::LimitExceeded {
                limit,
                max,
                place,
                terminal: Some(regex),
                detail,
            }),
            _ => None,
        }
    }

    /// The switches this grammar was compiled with.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The per-vocabulary index the grammar was compiled against.
    pub fn index(&self) -> &Arc<VocabIndex> {
        &self.index
    }

    /// The vocabulary the grammar was compiled for.
    pub fn vocab(&self) -> &SharedVocab {
        &self.index.vocab
    }

    /// The grammar after terminal fusion (when enabled).
    pub fn fused_grammar(&self) -> Option<&Grammar> {
        self.fused.as_ref()
    }

    /// Number of distinct terminals and of dotted rule positions.
    pub fn size(&self) -> (usize, usize) {
        (self.rules.terms.len(), self.rules.num_positions())
    }

    /// Cache counters so far.
    pub fn counters(&self) -> Counters {
        let c = &self.counters;
        Counters {
            masks: c.masks.load(Ordering::Relaxed),
            state_cache_hits: c.state_cache_hits.load(Ordering::Relaxed),
            rejected_prefix_hits: c.rejected_prefix_hits.load(Ordering::Relaxed),
            peak_set_items: c.peak_set_items.load(Ordering::Relaxed),
        }
    }

    /// Number of masks in the pruned-state cache.
    pub fn state_cache_len(&self) -> usize {
        self.state_cache
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    pub(crate) fn vocab_len(&self) -> usize {
        self.index.vocab.len()
    }

    /// The flattened rules (what a matcher's charts are over).
    #[inline]
    pub(crate) fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The (pruned) chart of the empty input, shared by every new matcher.
    pub(crate) fn initial_chart(&self) -> Arc<Chart> {
        self.initial.clone()
    }

    /// The pruned-state cache's mask for the chart key `key`, counting a
    /// hit.
    pub(crate) fn cached_mask(&self, key: &[u32]) -> Option<Arc<TokenSet>> {
        let m = self
            .state_cache
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned();
        if m.is_some() {
            AtomicCounters::bump(&self.counters.state_cache_hits);
        }
        m
    }

    /// Stores `mask` in the pruned-state cache under the chart key `key`
    /// (the cache is emptied when it holds
    /// [`EngineConfig::state_cache_capacity`] masks).
    pub(crate) fn cache_mask(&self, key: &[u32], mask: &TokenSet) {
        let capacity = self.config.state_cache_capacity;
        let mut cache = self.state_cache.write().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= capacity {
            cache.clear();
        }
        if capacity > 0 {
            cache.insert(key.into(), Arc::new(mask.clone()));
        }
    }

    /// True when a prefix of `bytes` is known to have no viable
    /// continuation from the parser state of fingerprint `fp` (the
    /// rejected-prefix set, §4.4), counting a hit.
    pub(crate) fn rejected_prefix(&self, fp: u64, bytes: &[u8]) -> bool {
        let hit = self
            .rejected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&fp)
            .is_some_and(|v| v.iter().any(|p| bytes.starts_with(p)));
        if hit {
            AtomicCounters::bump(&self.counters.rejected_prefix_hits);
        }
        hit
    }

    /// Records that `token[..len]`, the part of a token's bytes parsed
    /// until it failed, has no viable continuation from the parser state
    /// of fingerprint `fp` (unless a recorded prefix covers `token`).
    pub(crate) fn reject_prefix(&self, fp: u64, token: &[u8], len: usize) {
        let mut r = self.rejected.lock().unwrap_or_else(|e| e.into_inner());
        let v = r.entry(fp).or_default();
        if !v.iter().any(|p| token.starts_with(p)) {
            v.push(token[..len].into());
        }
    }

    /// Counts a mask asked for ([`Counters::masks`]).
    #[inline]
    pub(crate) fn count_mask(&self) {
        AtomicCounters::bump(&self.counters.masks);
    }

    /// Records an Earley set of `n` items ([`Counters::peak_set_items`]).
    #[inline]
    pub(crate) fn observe_set(&self, n: usize) {
        self.counters.observe_set(n);
    }
}

/// The context-independent entries of a terminal are computed over the
/// index that compiled it (its token trie, slices and shared residual
/// entries); this is the one place the cache meets the index, so
/// `ci_cache` sits below `engine` in the module order.
/// Why a terminal's automaton may have left a mask or advance incomplete
/// ([`CompiledGrammar::terminal_trouble`]).
#[derive(Clone, Debug)]
pub(crate) enum TerminalTrouble {
    /// A lazy DFA refused a state for its bound `max` (`dfa_states`).
    Overflow { regex: String, max: usize },
    /// A deferred build failed (the terminal matches nothing).
    Failed(EarleyError),
}

impl TermEntry {
    /// The entry for DFA state `s` (computed on first use, over the index's
    /// token trie and with its slices).
    ///
    /// With residual sharing on (the index's default), the entry is first
    /// looked up by the canonical key of the automaton reachable from `s`
    /// ([`ByteDfa::residual_key`]): the string-interior states of the many
    /// different key and value terminals of JSON Schema grammars share one
    /// entry per vocabulary.
    pub(crate) fn ci(&self, s: u32, index: &VocabIndex) -> Arc<CiEntry> {
        // States no token can tell apart share one slot (counted
        // repetitions, `crate::counted`).
        let horizon = index.trie().max_depth();
        let s = self.dfa().ci_representative(s, horizon);
        let slot = self.slot(self.dfa().ci_slot(s, horizon));
        let now = index.now();
        slot.mark_used(now);
        self.touch(now);
        if let Some(e) = slot.cached() {
            return e;
        }
        // An entry computed while (or after) a lazy DFA refused a state
        // for its bound may leave tokens out: it is returned, not cached
        // (the matcher reports the overflow).
        let fresh = || {
            let (trie, slices, vocab_len) = (index.trie(), index.slices(), index.vocab().len());
            let mut e = ci_cache::compute(self.dfa(), s, trie, slices, vocab_len);
            let keep = !self.dfa().overflowed();
            if keep {
                e.charge(index.account());
            }
            (e, keep)
        };
        let key = index.residual_key(self.dfa(), s);
        let e = match key {
            Some(key) if !self.dfa().overflowed() => index.shared_entry(key, fresh),
            _ => Arc::new(fresh().0),
        };
        if self.dfa().overflowed() {
            return e;
        }
        slot.mark_used(index.tick());
        // Two threads may compute the same cold entry; the first stored wins.
        let e = slot.fill(e);
        // the walk grew the automaton (a lazy DFA's states, a deferred
        // build): charge that too
        self.recharge();
        index.enforce_bound();
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zapspec_core::{Constraint, TokenId};

    /// A vocabulary that is not `zapspec_vocab::TokenVocab`: `a`, `b`,
    /// `ab`, `ba`, then EOS.
    struct Tiny;

    const TINY: [&[u8]; 5] = [b"a", b"b", b"ab", b"ba", b""];

    impl Vocabulary for Tiny {
        fn len(&self) -> usize {
            TINY.len()
        }
        fn token_bytes(&self, t: TokenId) -> &[u8] {
            TINY[t as usize]
        }
        fn eos(&self) -> TokenId {
            4
        }
        fn is_special(&self, t: TokenId) -> bool {
            t == 4
        }
    }

    /// A vocabulary of `words` and an empty EOS token after them.
    fn words(words: &[&str]) -> Arc<zapspec_vocab::TokenVocab> {
        let mut toks: Vec<Vec<u8>> = words.iter().map(|s| s.as_bytes().to_vec()).collect();
        toks.push(Vec::new());
        let eos = toks.len() as u32 - 1;
        Arc::new(
            zapspec_vocab::TokenVocab::from_tokens("random", toks, &[eos], eos)
                .expect("valid vocabulary"),
        )
    }

    /// States of different terminals with the same residual automaton
    /// share one entry (one `Arc`); different residual languages do not.
    /// The entries' contents: `tests/slices.rs`.
    #[test]
    fn equal_residuals_share_one_arc() {
        let vocab = words(&["a", "ab", "\"", "a\"", "\",", "b\"}", "é", "\\n"]);
        let index = VocabIndex::new(vocab);
        let open = |re: &str, pre: &[u8]| {
            let e = index
                .terminal_regex(re.to_string())
                .expect("regex compiles");
            let s = e.dfa().run(e.dfa().start(), pre);
            assert_ne!(s, ByteDfa::DEAD);
            e.ci(s, &index)
        };
        let a = open(r#""[^"\\\x00-\x1F]*""#, b"\"");
        let b = open(r#""(?:x|yz)[^"\\\x00-\x1F]*""#, b"\"yz");
        let c = open(r#""[^"\\\x00-\x1F]{0,5}""#, b"\"");
        assert!(Arc::ptr_eq(&a, &b), "same residual language, same entry");
        assert!(!Arc::ptr_eq(&a, &c), "bounded string is another language");
    }

    /// The cache's bytes recounted from what it holds: the terminals in
    /// the map (charges brought up to date), the distinct entries of their
    /// slots and of the residual map. Equal to the account once no grammar
    /// or matcher outside the map holds anything.
    fn recount(index: &VocabIndex) -> usize {
        let map = index.lock();
        let mut seen = rustc_hash::FxHashSet::default();
        let mut n = 0;
        for t in map.values() {
            t.recharge();
            n += t.cache_bytes();
            for e in t.entries() {
                if seen.insert(Arc::as_ptr(&e)) {
                    n += e.heap_bytes();
                }
            }
        }
        for e in index.residuals.lock().unwrap().values() {
            if seen.insert(Arc::as_ptr(e)) {
                n += e.heap_bytes();
            }
        }
        n
    }

    /// The `k`th grammar of the cache tests (strings of bounded length,
    /// counted letters, a starred tail), masked along a fixed token walk;
    /// the masks.
    fn masks_along(engine: &Engine, k: usize) -> Vec<TokenSet> {
        let g = Grammar::from_gbnf(&format!(
            r#"root ::= "\"" [ab1é]{{0,{}}} "\"" [x1]{{{}}} | "12" [ab]*"#,
            k % 9 + 1,
            k % 4
        ))
        .unwrap();
        let c = engine.compile(&g, EngineConfig::default()).unwrap();
        let mut m = c.matcher();
        let mut out = Vec::new();
        for t in [3u32, 0, 2, 9, 3, 8] {
            out.push(m.mask());
            if m.advance(t).is_err() {
                break;
            }
        }
        out
    }

    /// A terminal only one grammar looked up leaves the cache with that
    /// grammar; one a second grammar looked up (alive at the same time, or
    /// compiled again after the first was dropped) stays.
    #[test]
    fn single_use_terminals_leave_with_their_grammar() {
        let index = VocabIndex::new(words(&["a", "ab", "b", "1", "12", "x"]));
        let engine = Engine::with_index(index.clone());
        let compile = |src: &str| {
            engine
                .compile(&Grammar::from_gbnf(src).unwrap(), EngineConfig::default())
                .unwrap()
        };
        let cached = |re: &str| index.lock().contains_key(re);
        // one grammar: its terminals go with it
        let g = compile(r#"root ::= [ab]{2,3} "x""#);
        let mut m = g.matcher();
        let _ = m.mask();
        let terms = index.cache_stats().terminals;
        assert!(terms > 0);
        drop((m, g));
        assert_eq!(index.cache_stats().terminals, 0);
        assert_eq!(index.cache_stats().released, terms);
        // compiled again: remembered, kept past the second grammar
        drop(compile(r#"root ::= [ab]{2,3} "x""#));
        assert_eq!(index.cache_stats().terminals, terms);
        // two grammars alive over a shared terminal: it stays with the second
        let a = compile(r#"root ::= [1x]{4,5}"#);
        let shared: Vec<String> = a.rules.terms.iter().map(|t| t.regex.clone()).collect();
        assert!(!shared.is_empty());
        let b = compile(r#"root ::= [1x]{4,5}"#);
        drop(a);
        for re in &shared {
            assert!(cached(re), "{re} left with the first of two grammars");
        }
        drop(b);
    }

    /// Four threads masking grammars over one index whose bound forces
    /// sweeps while other threads read and fill slots: every mask equals
    /// an unbounded index's, and afterwards the account equals a recount.
    #[test]
    fn concurrent_sweeps_keep_masks_and_account() {
        let vocab = words(&["a", "ab", "b", "\"", "a\"", "\",", "1", "12", "x", "é"]);
        let bounded = Engine::with_index(
            VocabIndex::with_config(
                vocab.clone(),
                IndexConfig {
                    max_cache_bytes: 4 << 10,
                    ..IndexConfig::default()
                },
            )
            .expect("index"),
        );
        let free = Engine::with_index(
            VocabIndex::with_config(
                vocab,
                IndexConfig {
                    max_cache_bytes: usize::MAX,
                    ..IndexConfig::default()
                },
            )
            .expect("index"),
        );
        let want: Vec<Vec<TokenSet>> = (0..36).map(|k| masks_along(&free, k)).collect();
        std::thread::scope(|s| {
            for t in 0..4 {
                let (bounded, want) = (&bounded, &want);
                s.spawn(move || {
                    for round in 0..3 {
                        for k in (t..36).step_by(4) {
                            let k = (k + 9 * round) % 36;
                            assert_eq!(masks_along(bounded, k), want[k], "grammar {k}");
                        }
                    }
                });
            }
        });
        let index = bounded.index();
        let s = index.cache_stats();
        assert!(s.evictions > 0, "{s:?}");
        assert_eq!(index.account().get(), recount(index));
    }

    /// The account equals a recount of what the cache holds (terminals in
    /// the map, distinct entries of their slots and of the residual map)
    /// after every grammar, with sharing on and a bound small enough that
    /// sweeps evict entries, residual keys and terminals; and once no
    /// grammar is alive, sweeps bring the cache under its bound.
    #[test]
    fn account_is_exact_and_sweeps_keep_the_bound() {
        let vocab = words(&["a", "ab", "b", "\"", "a\"", "\",", "1", "12", "x", "é"]);
        let max = 6 << 10;
        let index = VocabIndex::with_config(
            vocab,
            IndexConfig {
                max_cache_bytes: max,
                ..IndexConfig::default()
            },
        )
        .expect("index");
        let engine = Engine::with_index(index.clone());
        for k in 0..40 {
            masks_along(&engine, k);
            let n = recount(&index);
            assert_eq!(index.account().get(), n, "after grammar {k}");
        }
        let s = index.cache_stats();
        assert!(s.evictions > 0 && s.evicted > 0, "{s:?}");
        for _ in 0..3 {
            index.enforce_bound();
        }
        let n = recount(&index);
        assert!(n <= max, "{:?}", index.cache_stats());
        assert_eq!(index.account().get(), n);
    }

    #[test]
    fn any_vocabulary_concrete_or_shared() {
        let g = Grammar::from_gbnf(r#"root ::= "a" "b"*"#).unwrap();
        let concrete = Engine::new(Arc::new(Tiny));
        let shared: SharedVocab = Arc::new(Tiny);
        let shared = Engine::with_index(
            VocabIndex::with_shared_vocab(shared, IndexConfig::default()).unwrap(),
        );
        for e in [concrete, shared] {
            let mut m = e.compile(&g, EngineConfig::default()).unwrap().matcher();
            assert_eq!(m.mask(), TokenSet::from_ids(5, [0, 2]));
            m.advance(2).unwrap();
            assert_eq!(m.mask(), TokenSet::from_ids(5, [1, 4]));
            assert!(m.advance(3).is_err());
            m.advance(4).unwrap();
            assert!(m.is_finished());
        }
    }
}
