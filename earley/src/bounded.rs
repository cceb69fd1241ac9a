//! A regex intersected with a counted repetition, `A ∩ P X{m,n} S`, as a
//! small product automaton times a counter ([`zapspec_grammar::Terminal::And`]).
//!
//! A JSON string with a `pattern` and a `maxLength: n` is the strings of
//! the pattern's automaton `A` with at most `n` characters, that is
//! `A ∩ "X{0,n}"` where `X` is one string character. No regex says that
//! compactly: written out, the product has `|A| · n` states (a 40-state
//! e-mail pattern under `maxLength: 254` is ten thousand states, as rules
//! or as one regex), built and analysed at compile time, walked one
//! character terminal at a time by the masks. Here the counter is not
//! multiplied out:
//!
//! - the **pairs** `(a, c)` of a state `a` of `A` and a state `c` of the
//!   repetition's *skeleton* (its prefix `P`, one boundary between two
//!   `X`s, `X`'s inner states, `S`'s states: `P X* S` without the count)
//!   are explored once, with per byte class the next pair and whether the
//!   step completes an `X` (`δ ∈ {0, 1}`);
//! - a state is a pair and a count `k ∈ 0..=n`, numbered by arithmetic
//!   (`(pair + 1) << bits | k`), so nothing is stored per count;
//! - a state is **live** (the engine keeps only live states) when some
//!   path from its pair to a pair accepting in both automata completes
//!   `ℓ` more `X`s with `m ≤ k + ℓ ≤ n`. Per pair, the lengths `ℓ ≤ 63`
//!   such paths have are one 64-bit set and the least `ℓ ≥ 64` one number
//!   (both computed once, by a fixpoint over the pair graph), which
//!   answers the question exactly for every `k` when `m ≤ 63` (else the
//!   caller builds the product eagerly).
//!
//! Building costs `O(pairs · classes)` whatever `n`. The context-
//! independent cache meets the counter like [`crate::counted`]: a token of
//! at most `H` bytes completes at most `H` more `X`s, so two states of one
//! pair whose distances to `m` are equal and whose distances to `n` are
//! equal or both past `H` plus the longest finite least length accept,
//! reject and split the same tokens ([`BoundedTables::representative`]).

use zapspec_grammar::lazy::DEAD;

/// Largest `m` whose lengths below it fit the per-pair bit set.
pub(crate) const MAX_MIN: u32 = 63;

/// No finite length.
const INF: u32 = u32::MAX;

/// Per pair, the lengths `ℓ ≤ 63` of paths to an accepting pair (bit `ℓ`)
/// and the least length `ℓ ≥ 64` ([`INF`]: none): the least fixpoint of
/// `L(p) = {0 | p accepting} ∪ ⋃ L(q) + δ(p → q)`, by a worklist over the
/// reversed graph.
fn lengths(rows: &[u32], acc: &[bool], ncls: usize) -> (Vec<u64>, Vec<u32>) {
    let np = acc.len();
    let mut preds: Vec<Vec<(u32, bool)>> = vec![Vec::new(); np];
    for p in 0..np {
        for &e in &rows[p * ncls..(p + 1) * ncls] {
            if e != 0 {
                preds[(e >> 1) as usize - 1].push((p as u32, e & 1 == 1));
            }
        }
    }
    let mut low: Vec<u64> = acc.iter().map(|&x| u64::from(x)).collect();
    let mut far = vec![INF; np];
    let mut queued = acc.to_vec();
    let mut work: Vec<u32> = (0..np as u32).filter(|&p| acc[p as usize]).collect();
    while let Some(q) = work.pop() {
        queued[q as usize] = false;
        let (lq, fq) = (low[q as usize], far[q as usize]);
        for &(p, delta) in &preds[q as usize] {
            let (l, f) = if delta {
                let carried = if lq >> 63 == 1 { 64 } else { INF };
                (lq << 1, carried.min(fq.saturating_add(1)))
            } else {
                (lq, fq)
            };
            let p = p as usize;
            let (nl, nf) = (low[p] | l, far[p].min(f));
            if nl != low[p] || nf != far[p] {
                low[p] = nl;
                far[p] = nf;
                if !queued[p] {
                    queued[p] = true;
                    work.push(p as u32);
                }
            }
        }
    }
    (low, far)
}

/// The transitions of a bounded product computed from its pair table and
/// the count (module docs). State ids: [`DEAD`], then
/// `(pair + 1) << bits | k`.
#[derive(Clone, Debug)]
pub(crate) struct BoundedTables {
    ncls: usize,
    /// Bits of the count in a state id.
    bits: u32,
    m: u32,
    n: u32,
    /// Per pair and class: `(pair + 1) << 1 | δ`, 0 = dead.
    rows: Vec<u32>,
    /// Per pair: accepting in both automata (count aside).
    acc: Vec<bool>,
    /// Per pair: the lengths `ℓ ≤ 63` to acceptance, as bits.
    low: Vec<u64>,
    /// Per pair: the least length `ℓ ≥ 64` to acceptance ([`INF`]: none).
    far: Vec<u32>,
    /// Per pair: the least length to acceptance ([`INF`]: none): at or
    /// past `m`, a state is live exactly when this fits below `n`.
    least: Vec<u32>,
    /// The largest finite `far`, at least 64: past it a distance to `n`
    /// no longer matters.
    far_cap: u32,
    /// Every unit of the repetition reads a byte that is not a UTF-8
    /// continuation byte: units completed are at most the characters read
    /// ([`Self::free_reach`]).
    unit_reads_lead: bool,
}

impl BoundedTables {
    /// The tables of a pair graph: `rows` holds per pair and byte class
    /// `(target pair + 1) << 1 | δ` (0: dead), `acc` per pair whether it
    /// accepts in both automata, count aside; pair 0 is the start. `None`
    /// when `m` is over [`MAX_MIN`] or the ids do not fit `u32`.
    pub(crate) fn new(
        ncls: usize,
        m: u32,
        n: u32,
        rows: Vec<u32>,
        acc: Vec<bool>,
        unit_reads_lead: bool,
    ) -> Option<Self> {
        if m > MAX_MIN || m > n {
            return None;
        }
        let bits = 32 - n.leading_zeros();
        if ((acc.len() as u64 + 1) << bits) >= u64::from(u32::MAX / 2) {
            return None;
        }
        let (low, far) = lengths(&rows, &acc, ncls);
        let far_cap = far.iter().copied().filter(|&f| f != INF).max().unwrap_or(0);
        let least = low
            .iter()
            .zip(&far)
            .map(|(&l, &f)| if l != 0 { l.trailing_zeros() } else { f })
            .collect();
        Some(BoundedTables {
            ncls,
            bits,
            m,
            n,
            rows,
            acc,
            low,
            far,
            least,
            far_cap: far_cap.max(64),
            unit_reads_lead,
        })
    }

    /// The start state: pair 0 with count 0, [`DEAD`] when it is not live
    /// (or there is no pair).
    pub(crate) fn start(&self) -> u32 {
        if !self.acc.is_empty() && self.live(0, 0) {
            self.state(0, 0)
        } else {
            DEAD
        }
    }

    #[inline]
    fn state(&self, pair: u32, k: u32) -> u32 {
        ((pair + 1) << self.bits) | k
    }

    #[inline]
    fn split(&self, s: u32) -> (u32, u32) {
        ((s >> self.bits) - 1, s & ((1 << self.bits) - 1))
    }

    /// Some accepting path from `pair` completes `ℓ` more units with
    /// `m ≤ k + ℓ ≤ n`.
    #[inline]
    fn live(&self, pair: u32, k: u32) -> bool {
        if k > self.n {
            return false;
        }
        let p = pair as usize;
        if k >= self.m {
            // the lengths that fit are `0..=n − k`: the least one decides
            return self.least[p] <= self.n - k;
        }
        let (lo, hi) = (self.m - k, self.n - k);
        let top = hi.min(63);
        if lo <= top {
            let width = top - lo + 1;
            let mask = if width == 64 {
                u64::MAX
            } else {
                ((1u64 << width) - 1) << lo
            };
            if self.low[p] & mask != 0 {
                return true;
            }
        }
        hi >= 64 && self.far[p] <= hi
    }

    /// The pair table's step from `s` on class `c`: the next pair and
    /// count, liveness not checked (`None`: no pair).
    #[inline]
    fn step(&self, s: u32, c: usize) -> Option<(u32, u32)> {
        if s == DEAD {
            return None;
        }
        let (p, k) = self.split(s);
        match self.rows[p as usize * self.ncls + c] {
            0 => None,
            e => Some(((e >> 1) - 1, k + (e & 1))),
        }
    }

    #[inline]
    pub(crate) fn next(&self, s: u32, c: usize) -> u32 {
        let Some((q, k2)) = self.step(s, c) else {
            return DEAD;
        };
        if self.live(q, k2) {
            self.state(q, k2)
        } else {
            DEAD
        }
    }

    #[inline]
    pub(crate) fn is_accepting(&self, s: u32) -> bool {
        if s == DEAD {
            return false;
        }
        let (p, k) = self.split(s);
        self.acc[p as usize] && k >= self.m && k <= self.n
    }

    pub(crate) fn can_continue(&self, s: u32) -> bool {
        s != DEAD && (0..self.ncls).any(|c| self.next(s, c) != DEAD)
    }

    /// Pairs times counts ([`DEAD`] included), for statistics.
    pub(crate) fn reachable(&self) -> usize {
        self.acc.len() * (self.n as usize + 1) + 1
    }

    /// One more than the largest state id.
    pub(crate) fn id_bound(&self) -> usize {
        (self.acc.len() + 1) << self.bits
    }

    /// The characters (bytes other than UTF-8 continuation bytes) over
    /// which, from `s`, a state is live exactly when its pair can reach
    /// acceptance at all: 0 below `m`; else the distance to `n` less the
    /// longest finite least length below it (the cap of [`Self::cap`]),
    /// as units — at most the characters read when every unit reads one,
    /// else at most the bytes, four to a character of valid UTF-8 — over
    /// which [`Self::next_count_free`] may stand for [`Self::next`].
    pub(crate) fn free_reach(&self, s: u32) -> usize {
        if s == DEAD {
            return 0;
        }
        let (_, k) = self.split(s);
        if k < self.m {
            return 0;
        }
        let units = (self.n - k).saturating_sub(self.far_cap) as usize;
        if self.unit_reads_lead {
            units
        } else {
            units / 4
        }
    }

    /// The step of [`Self::next`] with the count left as it is: the next
    /// pair with `s`'s count, [`DEAD`] when the pair cannot reach
    /// acceptance. Within [`Self::free_reach`] characters of a state, a
    /// walk meets a dead state exactly when
    /// [`Self::next`] does, and visits one state per pair (not one per
    /// pair and count).
    #[inline]
    pub(crate) fn next_count_free(&self, s: u32, c: usize) -> u32 {
        let Some((q, _)) = self.step(s, c) else {
            return DEAD;
        };
        let k = self.split(s).1;
        if self.least[q as usize] != INF {
            self.state(q, k)
        } else {
            DEAD
        }
    }

    /// The cap on the distance to `n` for tokens of at most `horizon`
    /// bytes (module docs).
    fn cap(&self, horizon: usize) -> u32 {
        u32::try_from(horizon)
            .unwrap_or(u32::MAX)
            .saturating_add(self.far_cap)
    }

    /// The class of count `k` (`0`: far from `n`, at or past `m`;
    /// `1..=m`: `m − k` below `m`; then the distances to `n` under the
    /// cap, nearest last), numbered so that the classes a string meets
    /// first are small.
    fn class_of(&self, k: u32, cap: u32) -> u32 {
        if k < self.m {
            self.m - k
        } else {
            let to_max = self.n - k;
            if to_max >= cap {
                0
            } else {
                self.m + cap - to_max
            }
        }
    }

    /// The representative of `s` for a context-independent entry over
    /// tokens of at most `horizon` bytes: the state of the same pair whose
    /// count is the least of its class.
    pub(crate) fn representative(&self, s: u32, horizon: usize) -> u32 {
        if s == DEAD {
            return s;
        }
        let (p, k) = self.split(s);
        let cap = self.cap(horizon);
        if k >= self.m && self.n - k >= cap {
            self.state(p, self.n - cap)
        } else {
            s
        }
    }

    /// A compact slot for a representative: class-major, so a terminal
    /// whose strings stay short uses the first `(m + 1) · pairs` slots.
    pub(crate) fn slot(&self, s: u32, horizon: usize) -> u32 {
        if s == DEAD {
            return 0;
        }
        let (p, k) = self.split(s);
        let class = self.class_of(k, self.cap(horizon));
        1 + class * self.acc.len() as u32 + p
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.rows.capacity() * 4
            + self.acc.capacity()
            + self.low.capacity() * 8
            + self.far.capacity() * 4
            + self.least.capacity() * 4
    }
}
