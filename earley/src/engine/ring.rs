//! The bookkeeping beneath the shared cache: [`Ring`], the live terminals
//! in eviction order; [`Ghosts`], the recently evicted ones; and the byte
//! sizes of hash tables the account charges. Plain data: the index holds
//! them, and the cache's sweeps (`cache`) read and update them.

use std::collections::HashMap;
use std::sync::Weak;

use rustc_hash::FxBuildHasher;

use crate::ci_cache::TermEntry;

/// A bounded set of regex-text hashes, oldest forgotten first.
pub(super) struct Ghosts {
    pub(super) set: rustc_hash::FxHashSet<u64>,
    pub(super) order: std::collections::VecDeque<u64>,
    /// Hashes remembered at most.
    capacity: usize,
}

impl Ghosts {
    /// Remembers one hash per 512 bytes of the cache's bound, between 256
    /// and 65,536 (about 1.3 MiB, under the default 32 MiB bound): the
    /// ghosts are charged to the cache, at most about 1/20 of it.
    pub(super) fn with_capacity_for(max_cache_bytes: usize) -> Self {
        Ghosts {
            set: Default::default(),
            order: Default::default(),
            capacity: (max_cache_bytes / 512).clamp(256, 1 << 16),
        }
    }

    pub(super) fn hash(regex: &str) -> u64 {
        use std::hash::BuildHasher;
        FxBuildHasher.hash_one(regex)
    }

    pub(super) fn insert(&mut self, h: u64) {
        if self.set.insert(h) {
            self.order.push_back(h);
            if self.order.len() > self.capacity {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }

    /// Heap bytes of the set and the queue.
    pub(super) fn heap_bytes(&self) -> usize {
        table_bytes(self.set.capacity(), std::mem::size_of::<u64>())
            + self.order.capacity() * std::mem::size_of::<u64>()
    }
}

/// The live terminals in the order eviction visits them, and where the
/// next sweep starts ([`VocabIndex::sweep`]).
///
/// A terminal dropped (released with its grammar, or evicted by a sweep
/// that did not visit its place) leaves a dead `Weak` whose allocation
/// (the terminal's `Arc`, about a kilobyte) stays until its place is
/// visited or the ring is compacted: [`Ring::push`] compacts it whenever it
/// has grown by a quarter (and 64) since the last compaction, so dead
/// places are at most about a fifth of the ring.
#[derive(Default)]
pub(super) struct Ring {
    pub(super) terms: Vec<Weak<TermEntry>>,
    pub(super) hand: usize,
    /// The length at which the next push compacts.
    compact_at: usize,
}

impl Ring {
    /// Adds a terminal, compacting the ring first when it is due (an
    /// amortised O(1) per push).
    pub(super) fn push(&mut self, t: Weak<TermEntry>) {
        if self.terms.len() >= self.compact_at {
            self.compact();
        }
        self.terms.push(t);
    }

    /// Drops the places of dead terminals, keeping the hand on the same
    /// live terminal.
    fn compact(&mut self) {
        let before = self.hand.min(self.terms.len());
        self.hand = self.terms[..before]
            .iter()
            .filter(|w| w.strong_count() > 0)
            .count();
        self.terms.retain(|w| w.strong_count() > 0);
        let n = self.terms.len();
        if self.terms.capacity() > 2 * n + 64 {
            self.terms.shrink_to(n + n / 4 + 64);
        }
        self.compact_at = n + n / 4 + 64;
    }

    /// Heap bytes still held by the dropped terminals of dead places
    /// (each place keeps its terminal's `Arc` allocation: the terminal and
    /// the two reference counts). A pass over the ring.
    pub(super) fn dead_bytes(&self) -> usize {
        let each = std::mem::size_of::<TermEntry>() + 2 * std::mem::size_of::<usize>();
        self.terms.iter().filter(|w| w.strong_count() == 0).count() * each
    }

    /// Heap bytes of the ring's vector.
    pub(super) fn heap_bytes(&self) -> usize {
        self.terms.capacity() * std::mem::size_of::<Weak<TermEntry>>()
    }
}

/// The bytes of a hash map's table: a bucket and a control byte per slot
/// of its capacity (what `hashbrown` allocates, to within a group of
/// control bytes).
pub(super) fn map_bytes<K, V, S>(m: &HashMap<K, V, S>) -> usize {
    table_bytes(m.capacity(), std::mem::size_of::<(K, V)>())
}

/// The bytes of a hash table of `cap` capacity and `size`-byte buckets
/// ([`map_bytes`]).
pub(super) fn table_bytes(cap: usize, size: usize) -> usize {
    if cap == 0 {
        return 0;
    }
    // buckets: a power of two, at most 7/8 full (below 8, one left free)
    let buckets = if cap < 8 { cap + 1 } else { cap / 7 * 8 };
    buckets * (size + 1) + 16
}
