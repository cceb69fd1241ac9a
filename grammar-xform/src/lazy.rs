//! Lazy terminal automata: DFA states built on first use, by the subset
//! construction over `regex-automata`'s Thompson NFA. The one lazy
//! determinisation of the workspace: behind [`TerminalDfa::lazy_regex`]
//! (the JSON Schema compiler's key automata) and the Earley engine's
//! `ByteDfa` (every terminal of a grammar without look-around).
//!
//! An eager determinisation pays for every state of a terminal's DFA at
//! compile time, though a mask walk visits only the states that the
//! tokens read from the states the parse reaches: a URI pattern, a string
//! pattern under `maxLength` or a key regex excluding hundreds of names
//! costs tens to hundreds of milliseconds of time-to-first-mask that way,
//! most of it for states no token ever reaches. Here a state is an NFA
//! state set, interned when a transition first leads to it (the model is
//! `regex-automata`'s `hybrid` lazy DFA, whose state ids are not stable
//! across cache clears; ours are, since Earley items and product
//! automata hold them).
//!
//! **Exact liveness without the whole automaton.** A state is kept only
//! when it is *live* (an accepting state is reachable from it). Without
//! look-around assertions an NFA state set can reach a match exactly when
//! one of its NFA states can, so the sets are filtered to the NFA states
//! co-reachable to `Match` (computed once on the NFA): a set that becomes
//! empty is [`DEAD`]; every other is live. Regexes with look-around must
//! be determinised eagerly by the caller.
//!
//! **Concurrency.** Transitions are atomic cells in [`Segmented`] rows,
//! [`UNKNOWN`] until computed; readers take no lock. A miss takes the
//! builder's mutex, computes the target, interns it, fills its flags and
//! only then publishes its id (`Release`), so a reader that sees an id
//! (`Acquire`) sees its row and flags in place.
//!
//! **Limits.** At most `cap` states (the [`RegexLimits::dfa_states`]
//! bound). A transition to a new state past the bound answers [`DEAD`]
//! without being stored and marks the automaton [`LazyTables::overflowed`]:
//! what was computed from it since may have left out valid strings, and
//! callers report it as [`Limit::DfaStates`].
//!
//! Cost: a hit is an atomic load; a miss is one subset-construction step
//! (the NFA states of the set, their ε-closure, a hash lookup), about a
//! microsecond for the terminals of JSON Schemas.
//!
//! [`TerminalDfa::lazy_regex`]: crate::TerminalDfa::lazy_regex
//! [`RegexLimits::dfa_states`]: crate::RegexLimits::dfa_states
//! [`Limit::DfaStates`]: crate::Limit::DfaStates

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use regex_automata::nfa::thompson::{State, NFA};
use regex_automata::util::primitives::StateID;
use rustc_hash::FxHashMap;

use crate::segmented::Segmented;

/// The dead state (also [`crate::TerminalDfa::DEAD`] and the Earley
/// engine's `terminal::DEAD`).
pub const DEAD: u32 = 0;

/// A transition not computed yet.
pub const UNKNOWN: u32 = u32::MAX;

/// Lazy automata (of any grammar, in this process) that have refused a
/// state for their bound: a one-load test that lets matchers skip looking
/// for an overflowed terminal when there is none.
static OVERFLOWS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// True when some lazy automaton in this process has overflowed: a one-load
/// test that lets callers skip looking for an overflowed automaton when
/// there is none.
#[inline]
pub fn any_overflowed() -> bool {
    OVERFLOWS.load(Ordering::Relaxed) != 0
}

const ACCEPTING: u8 = 1;
const CONTINUES: u8 = 2;

/// The byte class of every byte, and a byte of each class (the first,
/// classes being numbered in increasing byte order).
pub fn class_table(bc: &regex_automata::util::alphabet::ByteClasses) -> ([u8; 256], Vec<u8>) {
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    for b in 0..=255u8 {
        let c = bc.get(b);
        classes[b as usize] = c;
        if c as usize >= reps.len() {
            reps.resize(c as usize + 1, b);
        }
    }
    // a class first seen after a higher-numbered one got a later byte
    // from `resize`: take its first byte
    let mut seen = vec![false; reps.len()];
    for b in 0..=255u8 {
        let c = classes[b as usize] as usize;
        if !seen[c] {
            seen[c] = true;
            reps[c] = b;
        }
    }
    (classes, reps)
}

/// The lazily built tables of one terminal automaton (module docs).
pub struct LazyTables {
    nfa: NFA,
    ncls: usize,
    /// A byte of each class.
    reps: Vec<u8>,
    /// NFA states from which `Match` is reachable.
    live: Vec<bool>,
    /// Most states, [`DEAD`] included.
    cap: usize,
    /// Rows of `ncls` transitions, state by state.
    rows: Segmented<AtomicU32>,
    /// Per state: [`ACCEPTING`] | [`CONTINUES`].
    flags: Segmented<AtomicU8>,
    builder: Mutex<Builder>,
    overflowed: AtomicBool,
}

/// The interned states (under the mutex).
#[derive(Default)]
struct Builder {
    ids: FxHashMap<Arc<[u32]>, u32>,
    /// The NFA state set of each state ([`DEAD`]'s is empty), shared with
    /// `ids`.
    sets: Vec<Arc<[u32]>>,
    /// Bytes held by `ids` and `sets`.
    bytes: usize,
    // scratch of the subset construction, reused
    stack: Vec<StateID>,
    seen: Vec<bool>,
    touched: Vec<StateID>,
    targets: Vec<StateID>,
    out: Vec<u32>,
}

impl std::fmt::Debug for LazyTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyTables")
            .field("nfa_states", &self.nfa.states().len())
            .field("classes", &self.ncls)
            .field("states", &self.num_states())
            .field("cap", &self.cap)
            .field("overflowed", &self.overflowed())
            .finish()
    }
}

impl LazyTables {
    /// The lazy automaton of `nfa` (which has no look-around) under
    /// `limits`: the class of every byte, the number of classes, the
    /// tables (at most `limits.dfa_states` states besides [`DEAD`]) and
    /// the start state. What `TerminalDfa::lazy_hir` and the Earley
    /// engine's lazy `ByteDfa` are built from.
    pub fn for_nfa(nfa: NFA, limits: &crate::RegexLimits) -> ([u8; 256], usize, Self, u32) {
        let (classes, reps) = class_table(nfa.byte_classes());
        let ncls = reps.len();
        let (tables, start) = LazyTables::new(nfa, reps, limits.dfa_states.saturating_add(1));
        (classes, ncls, tables, start)
    }

    /// The tables of `nfa` (which has no look-around) over its byte
    /// classes, `reps` a byte of each, at most `cap` states; and the start
    /// state ([`DEAD`] or 1).
    pub fn new(nfa: NFA, reps: Vec<u8>, cap: usize) -> (Self, u32) {
        let ncls = reps.len();
        let live = co_reachable(&nfa);
        let n = nfa.states().len();
        let t = LazyTables {
            nfa,
            ncls,
            reps,
            live,
            cap: cap.max(2),
            rows: Segmented::with_stride(ncls),
            flags: Segmented::default(),
            builder: Mutex::new(Builder {
                seen: vec![false; n],
                ..Builder::default()
            }),
            overflowed: AtomicBool::new(false),
        };
        let start = {
            let mut b = t.lock();
            // DEAD: every transition to itself, no flags.
            b.sets.push(Arc::new([]));
            for cell in t.alloc_row(0) {
                cell.store(DEAD, Ordering::Relaxed);
            }
            b.targets.clear();
            b.targets.push(t.nfa.start_anchored());
            t.closure(&mut b);
            if b.out.is_empty() {
                DEAD
            } else {
                t.intern(&mut b).unwrap_or(DEAD)
            }
        };
        (t, start)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Builder> {
        self.builder.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates the row (transitions [`UNKNOWN`]) and flags of state `s`.
    fn alloc_row(&self, s: u32) -> &[AtomicU32] {
        self.flags.get_or_init(s as usize, || AtomicU8::new(0));
        self.rows
            .row_or_init(s as usize, || AtomicU32::new(UNKNOWN))
    }

    /// The ε-closure of `b.targets`, kept to the live byte-reading and
    /// `Match` states, sorted, in `b.out`.
    fn closure(&self, b: &mut Builder) {
        let Builder {
            stack,
            seen,
            touched,
            targets,
            out,
            ..
        } = b;
        out.clear();
        for &s in targets.iter() {
            if !seen[s.as_usize()] {
                seen[s.as_usize()] = true;
                touched.push(s);
                stack.push(s);
            }
        }
        while let Some(s) = stack.pop() {
            let mut push = |t: StateID| {
                if !seen[t.as_usize()] {
                    seen[t.as_usize()] = true;
                    touched.push(t);
                    stack.push(t);
                }
            };
            match self.nfa.state(s) {
                State::ByteRange { .. }
                | State::Sparse(_)
                | State::Dense(_)
                | State::Match { .. } => {
                    if self.live[s.as_usize()] {
                        out.push(s.as_u32());
                    }
                }
                State::Union { alternates } => alternates.iter().rev().for_each(|&t| push(t)),
                State::BinaryUnion { alt1, alt2 } => {
                    push(*alt2);
                    push(*alt1);
                }
                State::Capture { next, .. } | State::Look { next, .. } => push(*next),
                State::Fail => {}
            }
        }
        for s in touched.drain(..) {
            seen[s.as_usize()] = false;
        }
        out.sort_unstable();
    }

    /// The id of the set in `b.out` (non-empty), interning it; `None` past
    /// the cap.
    fn intern(&self, b: &mut Builder) -> Option<u32> {
        if let Some(&id) = b.ids.get(b.out.as_slice()) {
            return Some(id);
        }
        let set: Arc<[u32]> = b.out.as_slice().into();
        if b.sets.len() >= self.cap {
            if !self.overflowed.swap(true, Ordering::Relaxed) {
                OVERFLOWS.fetch_add(1, Ordering::Relaxed);
            }
            return None;
        }
        let id = b.sets.len() as u32;
        let mut f = 0u8;
        for &q in set.iter() {
            match self.nfa.state(StateID::new_unchecked(q as usize)) {
                State::Match { .. } => f |= ACCEPTING,
                // live, so some byte leads on to a live state
                _ => f |= CONTINUES,
            }
        }
        self.alloc_row(id);
        if let Some(fl) = self.flags.get(id as usize) {
            fl.store(f, Ordering::Relaxed);
        }
        b.bytes += set.len() * 4 + 16 + 3 * 8 + 4;
        b.sets.push(set.clone());
        b.ids.insert(set, id);
        Some(id)
    }

    /// The transition of `s` on class `c`.
    #[inline]
    pub fn next(&self, s: u32, c: usize) -> u32 {
        match self.rows.row(s as usize).and_then(|r| r.get(c)) {
            Some(cell) => match cell.load(Ordering::Acquire) {
                UNKNOWN => self.next_slow(s, c),
                t => t,
            },
            None => DEAD,
        }
    }

    #[cold]
    fn next_slow(&self, s: u32, c: usize) -> u32 {
        let mut b = self.lock();
        let Some(cell) = self.rows.row(s as usize).and_then(|r| r.get(c)) else {
            return DEAD;
        };
        let t = cell.load(Ordering::Acquire);
        if t != UNKNOWN {
            return t;
        }
        let byte = self.reps[c];
        let b = &mut *b;
        let Some(set) = b.sets.get(s as usize) else {
            return DEAD;
        };
        b.targets.clear();
        b.targets.extend(set.iter().filter_map(|&q| {
            match self.nfa.state(StateID::new_unchecked(q as usize)) {
                State::ByteRange { trans } => trans.matches_byte(byte).then_some(trans.next),
                State::Sparse(sp) => sp.matches_byte(byte),
                State::Dense(d) => d.matches_byte(byte),
                _ => None,
            }
        }));
        self.closure(b);
        let id = if b.out.is_empty() {
            DEAD
        } else {
            match self.intern(b) {
                Some(id) => id,
                // past the cap: not stored (module docs)
                None => return DEAD,
            }
        };
        cell.store(id, Ordering::Release);
        id
    }

    /// True when the bytes read so far (state `s`) are a match.
    #[inline]
    pub fn is_accepting(&self, s: u32) -> bool {
        self.flag(s) & ACCEPTING != 0
    }

    /// True when some byte leads from `s` to a live state.
    #[inline]
    pub fn can_continue(&self, s: u32) -> bool {
        self.flag(s) & CONTINUES != 0
    }

    #[inline]
    fn flag(&self, s: u32) -> u8 {
        self.flags
            .get(s as usize)
            .map_or(0, |f| f.load(Ordering::Relaxed))
    }

    /// Most states, [`DEAD`] included.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// States built so far, [`DEAD`] included.
    pub fn num_states(&self) -> usize {
        self.lock().sets.len()
    }

    /// True when a transition was refused for the state bound (module docs).
    pub fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Relaxed)
    }

    /// Heap bytes: the NFA, the allocated rows and flags, the state sets.
    pub fn heap_bytes(&self) -> usize {
        self.nfa.memory_usage()
            + self.rows.allocated() * 4
            + self.flags.allocated()
            + self.live.len()
            + self.lock().bytes
    }
}

/// The NFA states from which a `Match` state is reachable (every edge
/// counted: exact for NFAs without look-around).
fn co_reachable(nfa: &NFA) -> Vec<bool> {
    let n = nfa.states().len();
    let mut rev: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut live = vec![false; n];
    let mut stack = Vec::new();
    for (i, st) in nfa.states().iter().enumerate() {
        let mut edge = |t: StateID| rev[t.as_usize()].push(i as u32);
        match st {
            State::ByteRange { trans } => edge(trans.next),
            State::Sparse(sp) => sp.transitions.iter().for_each(|t| edge(t.next)),
            State::Dense(d) => d
                .transitions
                .iter()
                .filter(|&&t| t != StateID::ZERO)
                .for_each(|&t| edge(t)),
            State::Union { alternates } => alternates.iter().for_each(|&t| edge(t)),
            State::BinaryUnion { alt1, alt2 } => {
                edge(*alt1);
                edge(*alt2);
            }
            State::Capture { next, .. } | State::Look { next, .. } => edge(*next),
            State::Match { .. } => {
                live[i] = true;
                stack.push(i);
            }
            State::Fail => {}
        }
    }
    while let Some(i) = stack.pop() {
        for &p in &rev[i] {
            if !live[p as usize] {
                live[p as usize] = true;
                stack.push(p as usize);
            }
        }
    }
    live
}
