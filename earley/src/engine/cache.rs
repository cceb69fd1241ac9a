//! The shared cache of a [`VocabIndex`]: its clock, byte account and
//! eviction sweeps, terminals released with their grammar, its
//! statistics ([`CacheStats`]), and [`TermEntry::ci`], which fills a
//! terminal's context-independent entries over the index.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rustc_hash::FxBuildHasher;

use zapspec_core::Vocabulary;

use crate::ci_cache::{self, Account, CiEntry, TermEntry};
use crate::slicer::Slice;
use crate::terminal::ByteDfa;

use super::ring::{map_bytes, Ghosts, Ring};
use super::VocabIndex;

impl VocabIndex {
    /// The cache clock (a load: hits do not write a shared counter).
    pub(crate) fn now(&self) -> u64 {
        self.clock.load(Ordering::Relaxed)
    }

    /// Advances the cache clock (each cold entry and each terminal
    /// lookup), so later uses sort after earlier ones.
    pub(crate) fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Slots one sweep visits at most ([`IndexConfig::max_cache_bytes`](crate::IndexConfig::max_cache_bytes));
    /// a sweep stopped by it is continued by the next call that finds the
    /// cache over its bound.
    pub const SWEEP_SLOTS: usize = 4096;

    /// The account the cache's entries and terminals are charged to.
    pub(crate) fn account(&self) -> &Arc<Account> {
        &self.account
    }

    /// Keeps the cache near its bound (called after a cold entry is stored
    /// and before a grammar is compiled; no slot lock is held then): when
    /// it is over, one bounded sweep ([`IndexConfig::max_cache_bytes`](crate::IndexConfig::max_cache_bytes)).
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
        self.sweeps.fetch_add(1, Ordering::Relaxed);
        let now = self.tick();
        let (mut slots, mut visited, mut gone) = (0usize, 0usize, 0usize);
        {
            // Entries only the residual map holds, not found by their key
            // since the previous sweep.
            // (a pass over the map, not counted in the sweep's slots:
            // the map only holds charged entries, so it is bounded too,
            // and counting it would let a large map starve the ring, the
            // one place its entries are freed from)
            let prev = self.residual_swept.swap(now, Ordering::Relaxed);
            let mut map = self.residuals.lock().unwrap_or_else(|e| e.into_inner());
            map.retain(|_, e| {
                let keep = Arc::strong_count(e) > 1 || e.used.load(Ordering::Relaxed) >= prev;
                gone += usize::from(!keep);
                keep
            });
            shrink(&mut map);
            self.tables.residuals.set(&self.account, map_bytes(&map));
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
                if map.get(&*t.regex).is_some_and(|x| Arc::ptr_eq(x, &t)) {
                    map.remove(&*t.regex);
                    gone += 1;
                }
            }
            ring.hand = h + 1;
        }
        self.tables.ring.set(&self.account, ring.heap_bytes());
        drop(ring);
        {
            let mut map = self.lock();
            shrink(&mut map);
            self.tables.terminals.set(&self.account, map_bytes(&map));
        }
        // Over the bound after a sweep that evicted nothing: what it
        // visited is pinned by live grammars. The next sweep waits until
        // the account has grown by an eighth of the bound or of itself,
        // whichever is more, or until a grammar is dropped (`release`). A
        // live grammar with more terminals than one sweep visits (a
        // 35,000-string enum) would otherwise be swept at each of its cold
        // entries, for nothing; spaced geometrically, sweeps cost amortised
        // O(1) per byte charged.
        let bytes = self.account.get();
        let floor = if bytes > max && gone == 0 {
            bytes.saturating_add((max / 8).max(bytes / 8))
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
    pub(super) fn release(&self, terms: &[Arc<TermEntry>]) {
        self.floor.store(0, Ordering::Relaxed);
        let mut map = self.lock();
        let mut ghosts = self.ghosts.lock().unwrap_or_else(|e| e.into_inner());
        let mut n = 0;
        for t in terms {
            if t.single_use() && map.get(&*t.regex).is_some_and(|x| Arc::ptr_eq(x, t)) {
                map.remove(&*t.regex);
                ghosts.insert(Ghosts::hash(&t.regex));
                n += 1;
            }
        }
        if n > 0 {
            shrink(&mut map);
            self.tables.terminals.set(&self.account, map_bytes(&map));
            self.tables.ghosts.set(&self.account, ghosts.heap_bytes());
        }
        self.released.fetch_add(n, Ordering::Relaxed);
    }

    /// Charges the ring's vector after a push.
    pub(super) fn charge_ring(&self, ring: &Ring) {
        self.tables.ring.set(&self.account, ring.heap_bytes());
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

    /// Terminal automata built so far and the wall-clock nanoseconds spent
    /// building them, 0 unless [`IndexConfig::time_dfa_builds`](crate::IndexConfig::time_dfa_builds)
    /// is on (two atomic loads; [`Self::cache_stats`] walks the cache).
    pub fn dfa_build_stats(&self) -> (usize, u64) {
        (
            self.dfa_builds.load(Ordering::Relaxed),
            self.dfa_build_nanos.load(Ordering::Relaxed),
        )
    }

    /// The bytes the cache counts against
    /// [`IndexConfig::max_cache_bytes`](crate::IndexConfig::max_cache_bytes)
    /// now: [`CacheStats::cache_bytes`] as one atomic load
    /// ([`Self::cache_stats`] walks the cache).
    pub fn cache_bytes(&self) -> usize {
        self.account.get()
    }

    /// Statistics of the shared terminal cache.
    pub fn cache_stats(&self) -> CacheStats {
        let m = self.lock();
        let mut s = CacheStats {
            terminals: m.len(),
            evictions: self.evictions.load(Ordering::Relaxed),
            sweeps: self.sweeps.load(Ordering::Relaxed),
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
        drop(m);
        s.dead_place_bytes = self
            .ring
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .dead_bytes();
        s
    }
}

/// Gives back most of a map's table once it is at most a quarter full
/// (tables grow as a cache fills, and keep their size when it is swept).
fn shrink<K: std::hash::Hash + Eq, V>(m: &mut std::collections::HashMap<K, V, FxBuildHasher>) {
    if m.capacity() > 4 * m.len() + 64 {
        m.shrink_to(2 * m.len());
    }
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
    /// Eviction sweeps run, evicting or not.
    pub sweeps: usize,
    /// Entries and terminals those sweeps evicted.
    pub evicted: usize,
    /// Heap bytes the cache counts against `IndexConfig::max_cache_bytes`
    /// (its entries, its terminals and the index's tables, as last
    /// charged).
    pub cache_bytes: usize,
    /// Terminals that only one grammar used, released with it (not kept
    /// in the cache past their grammar).
    pub released: usize,
    /// Terminal automata built so far (cache misses, failed builds
    /// included), and the wall-clock nanoseconds spent building them at
    /// compile time: the part of time-to-first-mask that goes to automata
    /// (determinisation, or a lazy DFA's NFA and start state; the states a
    /// lazy DFA builds later, inside masks, are not counted here), measured
    /// only with the opt-in
    /// [`IndexConfig::time_dfa_builds`](crate::IndexConfig::time_dfa_builds)
    /// (else 0).
    pub dfa_builds: usize,
    /// See [`CacheStats::dfa_builds`](crate::CacheStats::dfa_builds).
    pub dfa_build_nanos: u64,
    /// Of [`CacheStats::dfa_builds`](crate::CacheStats::dfa_builds), terminals deferred to their first
    /// use ([`IndexConfig::deferred_terminals`](crate::IndexConfig::deferred_terminals)): their automata are built
    /// by the masks and steps that reach them, outside `dfa_build_nanos`.
    pub deferred: usize,
    /// Heap bytes of terminals already dropped whose place in the
    /// eviction ring is not yet reclaimed: each keeps its allocation (not
    /// its tables or entries) until a sweep visits the place or the ring
    /// compacts, which keeps such places to about a fifth of the ring.
    /// Not part of [`CacheStats::cache_bytes`]; it rises and falls with
    /// the ring's compactions.
    pub dead_place_bytes: usize,
}

/// The context-independent entries of a terminal are computed over the
/// index that compiled it (its token trie, slices and shared residual
/// entries); this is the one place the cache meets the index, so
/// `ci_cache` sits below `engine` in the module order.
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
            let fast = self
                .avoid()
                .and_then(|a| a.entry(self.dfa(), s, trie, index.any_text(), &**index.vocab()));
            if let Some((allowed, suffixes)) = fast {
                return (ci_cache::from_parts(allowed, suffixes), true);
            }
            let e = ci_cache::compute(self.dfa(), s, trie, slices, vocab_len);
            (e, !self.dfa().overflowed())
        };
        let key = index.residual_key(self.dfa(), s);
        let e = match key {
            // charged there, with its key
            Some(key) if !self.dfa().overflowed() => index.shared_entry(key, fresh),
            _ => {
                let (mut e, keep) = fresh();
                if keep {
                    e.charge(index.account());
                }
                Arc::new(e)
            }
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
