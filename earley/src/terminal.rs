//! Terminals as byte DFAs.
//!
//! Every [`Terminal`] of the IR (literal, character class, regex) is turned
//! into one regular expression ([`ByteDfa::regex_of`]) and compiled into a
//! [`ByteDfa`]: a table over byte classes with state [`ByteDfa::DEAD`] = 0,
//! only *live* states (states from which an accepting state is reachable;
//! every other state is merged into `DEAD`) and an explicit accepting flag
//! per state. The eager construction and its layout are
//! `zapspec-grammar`'s ([`zapspec_grammar::dense`]: `regex-automata`'s
//! NFA and dense DFA under [`RegexLimits`], re-tabled into
//! [`DenseTables`]), as is the lazy one ([`zapspec_grammar::lazy`]); this
//! module adds the engine's own layouts beside them: counted repetitions
//! ([`crate::counted`]) and bounded products (module `bounded`), whose
//! transitions are computed from a layout instead of stored.
//!
//! A terminal in progress inside an Earley item carries its DFA state
//! (ZapFormat §4.1: "terminals are … implemented as finite state machines").

use regex_automata::nfa::thompson;
use zapspec_grammar::dense::{self, ByteAutomaton, DenseDfa, DenseTables};
use zapspec_grammar::limits::short_regex;
use zapspec_grammar::{Limit, RegexLimits, Terminal};

use std::sync::Arc;

use crate::bounded::BoundedTables;
use crate::error::EarleyError;
use zapspec_grammar::lazy::LazyTables;

/// The dead state of every [`ByteDfa`] ([`ByteDfa::DEAD`]): no
/// continuation can be accepted.
pub(crate) const DEAD: u32 = zapspec_grammar::lazy::DEAD;

/// A deterministic automaton over bytes with only live states: a dense
/// table built at compile time, or one built state by state on first use
/// (module `zapspec_grammar::lazy`); both answer the same queries.
#[derive(Clone, Debug)]
pub struct ByteDfa {
    classes: [u8; 256],
    ncls: usize,
    tables: Tables,
    start: u32,
    /// Built as a counter times a small automaton ([`crate::counted`]).
    counted: Option<CountedLayout>,
}

#[derive(Clone, Debug)]
enum Tables {
    /// Built at once by `zapspec-grammar`'s eager builder
    /// ([`zapspec_grammar::dense`]), in its layout.
    Dense(DenseTables),
    Lazy(Arc<LazyTables>),
    /// A counted repetition's transitions computed from its layout
    /// ([`crate::counted`]).
    Counted(Arc<CountedTables>),
    /// A regex intersected with a counted repetition, computed from its
    /// pair table and the count (module `bounded`).
    Bounded(Arc<BoundedTables>),
}

impl ByteDfa {
    /// The dead state (the same in every `ByteDfa`): no continuation of
    /// the bytes read can be accepted; [`Self::start`] of an empty
    /// language, [`Self::next`] once a match is impossible.
    pub const DEAD: u32 = DEAD;

    /// The regex (in `regex-syntax` dialect, byte mode allowed) that a
    /// terminal denotes.
    pub fn regex_of(t: &Terminal) -> String {
        match t {
            Terminal::Literal(bytes) => literal_regex(bytes),
            Terminal::Class(c) => {
                if c.is_empty() {
                    return String::from("[a&&b]");
                }
                let mut s = String::from("[");
                for &(a, b) in c.ranges() {
                    s.push_str(&format!("\\x{{{:X}}}", a as u32));
                    if a != b {
                        s.push_str(&format!("-\\x{{{:X}}}", b as u32));
                    }
                }
                s.push(']');
                s
            }
            Terminal::Regex(r) => format!("(?:{r})"),
            // `(?&` opens no valid regex: the key of an intersection is
            // never a regex's; the length makes the split unambiguous
            Terminal::And(a, b) => format!("(?&{})(?:{a})(?:{b})", a.len()),
            // `(?~` opens no valid regex either; the names follow the regex
            // as byte literals, so the key is injective
            Terminal::Except(r, names) => {
                let mut key = format!("(?~{})(?:{r})", r.len());
                for n in names.iter() {
                    key.push('-');
                    key.push_str(&literal_regex(n));
                }
                key
            }
            // `(?^` opens no valid regex: the avoided strings follow the
            // regex as byte literals, as an exception's names do
            Terminal::Avoid(r, strings) => {
                let mut key = format!("(?^{})(?:{r})", r.len());
                for n in strings.iter() {
                    key.push('~');
                    key.push_str(&literal_regex(n));
                }
                key
            }
        }
    }

    /// The HIR of the regex [`ByteDfa::regex_of`] prints for a literal or a
    /// character class, built directly (no text is parsed): a byte string,
    /// or a Unicode class. `None` for a regex terminal (its HIR is the
    /// parse of its text, or the grammar's [`Grammar::regex_hir`]).
    ///
    /// [`Grammar::regex_hir`]: zapspec_grammar::Grammar::regex_hir
    pub fn hir_of(t: &Terminal) -> Option<regex_syntax::hir::Hir> {
        use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir};
        match t {
            Terminal::Literal(bytes) => Some(Hir::literal(bytes.clone())),
            Terminal::Class(c) => Some(Hir::class(Class::Unicode(ClassUnicode::new(
                c.ranges()
                    .iter()
                    .map(|&(a, b)| ClassUnicodeRange::new(a, b)),
            )))),
            Terminal::Regex(_) | Terminal::And(..) | Terminal::Except(..) | Terminal::Avoid(..) => {
                None
            }
        }
    }

    /// Like [`ByteDfa::from_regex_with`] without the counted construction
    /// of [`crate::counted`]: always `regex-automata`'s NFA and DFA (the
    /// reference the counted construction is tested against, and its
    /// ablation).
    pub fn from_regex_general(pattern: &str, limits: &RegexLimits) -> Result<Self, EarleyError> {
        let hir = parse_regex(pattern).map_err(|e| EarleyError::Terminal {
            regex: pattern.to_string(),
            reason: e.to_string(),
        })?;
        Self::check_nfa_bound(&hir, pattern, limits)?;
        Self::from_hir(&hir, pattern, limits)
    }

    /// [`zapspec_grammar::nfa_bytes_lower_bound`] against `limits.nfa_bytes`
    /// ([`dense::check_nfa_bound`]).
    pub(crate) fn check_nfa_bound(
        hir: &regex_syntax::hir::Hir,
        pattern: &str,
        limits: &RegexLimits,
    ) -> Result<(), EarleyError> {
        dense::check_nfa_bound(hir, pattern, limits)
            .map_err(|e| EarleyError::of_terminal(e, pattern))
    }

    /// The general construction: `zapspec-grammar`'s eager builder
    /// ([`dense::determinize`]: `regex-automata`'s Thompson NFA and dense
    /// DFA, re-tabled). Callers have checked the NFA size bound of the
    /// whole regex.
    pub(crate) fn from_hir(
        hir: &regex_syntax::hir::Hir,
        pattern: &str,
        limits: &RegexLimits,
    ) -> Result<Self, EarleyError> {
        dense::determinize(hir, pattern, limits)
            .map(Self::from_dense)
            .map_err(|e| EarleyError::of_terminal(e, pattern))
    }

    /// An eager automaton ([`zapspec_grammar::dense`]).
    pub(crate) fn from_dense(d: DenseDfa) -> Self {
        ByteDfa {
            classes: d.classes,
            ncls: d.tables.stride(),
            tables: Tables::Dense(d.tables),
            start: d.start,
            counted: None,
        }
    }

    /// A counted repetition ([`crate::counted`]) from its layout.
    pub(crate) fn from_counted(
        classes: [u8; 256],
        ncls: usize,
        tables: CountedTables,
        start: u32,
        layout: CountedLayout,
    ) -> Self {
        ByteDfa {
            classes,
            ncls,
            tables: Tables::Counted(Arc::new(tables)),
            start,
            counted: Some(layout),
        }
    }

    /// A bounded product ([`crate::bounded`]) from its tables.
    pub(crate) fn from_bounded(
        classes: [u8; 256],
        ncls: usize,
        tables: BoundedTables,
        start: u32,
    ) -> Self {
        ByteDfa {
            classes,
            ncls,
            tables: Tables::Bounded(Arc::new(tables)),
            start,
            counted: None,
        }
    }

    /// The lazy construction ([`zapspec_grammar::lazy`]) of a regex without
    /// look-around: `regex-automata`'s Thompson NFA (bounded by
    /// `limits.nfa_bytes`), its states determinised on first use, at most
    /// `limits.dfa_states` of them.
    pub(crate) fn lazy_from_hir(
        hir: &regex_syntax::hir::Hir,
        pattern: &str,
        limits: &RegexLimits,
    ) -> Result<Self, EarleyError> {
        let nfa = Self::thompson(hir, pattern, limits)?;
        Ok(Self::lazy_from_nfa(nfa, limits))
    }

    /// The lazy construction over a Thompson NFA without look-around
    /// (also a regular family's, module `family`).
    pub(crate) fn lazy_from_nfa(nfa: thompson::NFA, limits: &RegexLimits) -> Self {
        let (classes, ncls, t, start) = LazyTables::for_nfa(nfa, limits);
        ByteDfa {
            classes,
            ncls,
            tables: Tables::Lazy(Arc::new(t)),
            start,
            counted: None,
        }
    }

    /// `regex-automata`'s Thompson NFA of `hir` (bytes, no captures),
    /// bounded by `limits.nfa_bytes` ([`dense::thompson`]).
    fn thompson(
        hir: &regex_syntax::hir::Hir,
        pattern: &str,
        limits: &RegexLimits,
    ) -> Result<thompson::NFA, EarleyError> {
        dense::thompson(hir, pattern, limits).map_err(|e| EarleyError::of_terminal(e, pattern))
    }

    /// True when the automaton is built state by state (module `zapspec_grammar::lazy`).
    pub fn is_lazy(&self) -> bool {
        matches!(self.tables, Tables::Lazy(_))
    }

    /// Builds every state reachable from the start, breadth first, and
    /// returns whether there are at most `max_states` (a dense automaton:
    /// whether it has). Stops at the first state past the bound.
    pub fn explore(&self, max_states: usize) -> bool {
        let mut reps: Vec<u8> = Vec::with_capacity(self.ncls);
        let mut seen_cls = vec![false; self.ncls];
        for b in 0..=255u8 {
            let c = self.classes[b as usize] as usize;
            if !seen_cls[c] {
                seen_cls[c] = true;
                reps.push(b);
            }
        }
        let mut seen = std::collections::HashSet::from([self.start]);
        let mut queue = std::collections::VecDeque::from([self.start]);
        while let Some(s) = queue.pop_front() {
            if s == DEAD {
                continue;
            }
            for &b in &reps {
                let t = self.next(s, b);
                if t != DEAD && seen.insert(t) {
                    if seen.len() > max_states || self.overflowed() {
                        return false;
                    }
                    queue.push_back(t);
                }
            }
        }
        !self.overflowed()
    }

    /// True when a lazy automaton refused a state for its bound
    /// (module `zapspec_grammar::lazy`: what was computed from it since may be
    /// incomplete).
    pub fn overflowed(&self) -> bool {
        match &self.tables {
            Tables::Lazy(l) => l.overflowed(),
            Tables::Dense(_) | Tables::Counted(_) | Tables::Bounded(_) => false,
        }
    }

    /// The state bound of a lazy automaton (its `dfa_states` when it was
    /// compiled; [`ByteDfa::DEAD`] not counted), `None` for a dense one.
    pub fn state_bound(&self) -> Option<usize> {
        match &self.tables {
            Tables::Lazy(l) => Some(l.cap() - 1),
            Tables::Dense(_) | Tables::Counted(_) | Tables::Bounded(_) => None,
        }
    }

    /// The state whose context-independent entry `s` shares for tokens of
    /// at most `horizon` bytes: `s` itself, except in a counted
    /// repetition ([`crate::counted`]), where states that no such token
    /// can tell apart share one representative.
    pub fn ci_representative(&self, s: u32, horizon: usize) -> u32 {
        match (&self.counted, &self.tables) {
            (Some(l), _) => l.representative(s, horizon),
            (None, Tables::Bounded(t)) => t.representative(s, horizon),
            (None, _) => s,
        }
    }

    /// The slot of the context-independent entry of a representative `s`
    /// ([`Self::ci_representative`] with the same `horizon`): `s` itself,
    /// except in a counted repetition, where the representatives of any
    /// count are numbered compactly (the entry table then has rows for
    /// about `2·horizon` counts, not `n`).
    pub fn ci_slot(&self, s: u32, horizon: usize) -> u32 {
        match (&self.counted, &self.tables) {
            (Some(l), _) => l.slot(s, horizon),
            (None, Tables::Bounded(t)) => t.slot(s, horizon),
            (None, _) => s,
        }
    }

    /// True when the DFA was built as a counted product ([`crate::counted`]).
    pub fn is_counted(&self) -> bool {
        self.counted.is_some()
    }

    /// The start state ([`ByteDfa::DEAD`] when the language is empty).
    #[inline]
    pub fn start(&self) -> u32 {
        self.start
    }

    /// The state after reading `b` in state `s` ([`ByteDfa::DEAD`] = no live continuation).
    #[inline]
    pub fn next(&self, s: u32, b: u8) -> u32 {
        let c = self.classes[b as usize] as usize;
        match &self.tables {
            // `s < num_states`, class < ncls by construction.
            Tables::Dense(t) => t.next(s, c),
            Tables::Lazy(l) => l.next(s, c),
            Tables::Counted(t) => t.next(s, c),
            Tables::Bounded(t) => t.next(s, c),
        }
    }

    /// Over how many characters (bytes other than UTF-8 continuation
    /// bytes) from `s` whether a state is dead does not depend on a count:
    /// in a bounded product (module `bounded`), about the distance to its
    /// bounds less the longest least length; `usize::MAX` for every other
    /// automaton (none counts). Over at most that many characters of
    /// valid UTF-8, [`Self::next_count_free`] walks the same dead ends as
    /// [`Self::next`], through one state per pair instead of one per pair
    /// and count.
    pub fn free_reach(&self, s: u32) -> usize {
        match &self.tables {
            Tables::Bounded(t) => t.free_reach(s),
            _ => usize::MAX,
        }
    }

    /// [`Self::next`] with a bounded product's count left unchanged (see
    /// [`Self::free_reach`]); [`Self::next`] for every other automaton.
    #[inline]
    pub fn next_count_free(&self, s: u32, b: u8) -> u32 {
        match &self.tables {
            Tables::Bounded(t) => t.next_count_free(s, self.classes[b as usize] as usize),
            _ => self.next(s, b),
        }
    }

    /// The byte class of `b` (bytes of one class have the same transitions
    /// from every state).
    #[inline]
    pub fn class(&self, b: u8) -> u8 {
        self.classes[b as usize]
    }

    /// True when the bytes read so far are a complete match.
    #[inline]
    pub fn is_accepting(&self, s: u32) -> bool {
        match &self.tables {
            Tables::Dense(t) => t.is_accepting(s),
            Tables::Lazy(l) => l.is_accepting(s),
            Tables::Counted(t) => t.is_accepting(s),
            Tables::Bounded(t) => t.is_accepting(s),
        }
    }

    /// True when some byte leads from `s` to a live state.
    #[inline]
    pub fn can_continue(&self, s: u32) -> bool {
        match &self.tables {
            Tables::Dense(t) => t.can_continue(s),
            Tables::Lazy(l) => l.can_continue(s),
            Tables::Counted(t) => t.can_continue(s),
            Tables::Bounded(t) => t.can_continue(s),
        }
    }

    /// True when the terminal matches the empty string.
    pub fn is_nullable(&self) -> bool {
        self.start != DEAD && self.is_accepting(self.start)
    }

    /// Number of states, [`ByteDfa::DEAD`] included (of a lazy automaton: built so
    /// far; of a counted one: those laid out, fewer than
    /// [`Self::state_id_bound`]).
    pub fn num_states(&self) -> usize {
        match &self.tables {
            Tables::Dense(t) => t.num_states(),
            Tables::Lazy(l) => l.num_states(),
            Tables::Counted(t) => t.reachable(),
            Tables::Bounded(t) => t.reachable(),
        }
    }

    /// One more than the largest state id: equal to [`Self::num_states`]
    /// except for a counted repetition, whose ids leave unused gaps
    /// ([`crate::counted`]).
    pub fn state_id_bound(&self) -> usize {
        match &self.tables {
            Tables::Counted(t) => t.id_bound(),
            Tables::Bounded(t) => t.id_bound(),
            _ => self.num_states(),
        }
    }

    /// A canonical encoding of the automaton reachable from `s` (states
    /// numbered in breadth-first order, transitions as runs over the 256
    /// bytes, accepting flags), or `None` when more than `max_states` states
    /// are reachable. Two states with equal keys accept the same byte
    /// strings and die on the same ones, so everything computed from the
    /// residual automaton — a context-independent cache entry — can be
    /// shared between terminals (and grammars) whose states have equal keys.
    pub fn residual_key(&self, s: u32, max_states: usize) -> Option<Vec<u32>> {
        if s == DEAD {
            return Some(Vec::new());
        }
        // Bytes where the class changes: transitions are constant between.
        let mut bounds: Vec<u8> = vec![0];
        for b in 1..=255u8 {
            if self.classes[b as usize] != self.classes[b as usize - 1] {
                bounds.push(b);
            }
        }
        let mut order: Vec<u32> = vec![s];
        let mut key = Vec::new();
        let mut i = 0;
        while i < order.len() {
            let q = order[i];
            i += 1;
            key.push(u32::MAX - self.is_accepting(q) as u32);
            let mut prev = u32::MAX;
            for &b in &bounds {
                let t = self.next(q, b);
                let c = if t == DEAD {
                    0
                } else {
                    match order.iter().position(|&o| o == t) {
                        Some(k) => k as u32 + 1,
                        None => {
                            if order.len() == max_states {
                                return None;
                            }
                            order.push(t);
                            order.len() as u32
                        }
                    }
                };
                if c != prev {
                    key.push(((b as u32) << 16) | c);
                    prev = c;
                }
            }
        }
        Some(key)
    }

    /// Runs the DFA over `bytes` from `s`.
    pub fn run(&self, mut s: u32, bytes: &[u8]) -> u32 {
        for &b in bytes {
            if s == DEAD {
                return DEAD;
            }
            s = self.next(s, b);
        }
        s
    }

    /// Heap bytes of the tables (of a lazy automaton: built so far).
    pub fn heap_bytes(&self) -> usize {
        match &self.tables {
            Tables::Dense(t) => t.heap_bytes(),
            Tables::Lazy(l) => l.heap_bytes(),
            Tables::Counted(t) => t.heap_bytes(),
            Tables::Bounded(t) => t.heap_bytes(),
        }
    }
}

impl ByteAutomaton for ByteDfa {
    fn start(&self) -> u32 {
        self.start
    }
    #[inline]
    fn next(&self, s: u32, byte: u8) -> u32 {
        ByteDfa::next(self, s, byte)
    }
    fn is_accepting(&self, s: u32) -> bool {
        ByteDfa::is_accepting(self, s)
    }
    fn byte_class(&self, byte: u8) -> u8 {
        self.classes[byte as usize]
    }
}

/// Parses a regex text in the engine's dialect (the texts of
/// [`ByteDfa::regex_of`]: over bytes, so `utf8(false)` — a class may match
/// bytes that are not UTF-8).
pub(crate) fn parse_regex(text: &str) -> Result<regex_syntax::hir::Hir, Box<regex_syntax::Error>> {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(text)
        .map_err(Box::new)
}

/// [`EarleyError::LimitExceeded`] for `limit` at terminal `pattern`.
pub(crate) fn limit_error(pattern: &str, limit: Limit, max: usize, detail: String) -> EarleyError {
    EarleyError::LimitExceeded {
        limit,
        max,
        place: format!("terminal {}", short_regex(pattern)),
        terminal: Some(pattern.to_string()),
        detail,
    }
}

/// A byte-exact regex for a literal: `(?-u:\xHH…)`.
pub fn literal_regex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(8 + 4 * bytes.len());
    s.push_str("(?-u:");
    for b in bytes {
        s.push_str(&format!("\\x{b:02X}"));
    }
    s.push(')');
    s
}

/// Where the counted part of a product automaton lies in its state space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CountedLayout {
    /// First state of count 0 (its boundary).
    pub(crate) base: u32,
    /// States per count below `n`: the boundary and `X`'s non-accepting states.
    pub(crate) per: u32,
    /// The repetition's bounds.
    pub(crate) m: u32,
    pub(crate) n: u32,
}

impl CountedLayout {
    /// The representative of `s` for a context-independent entry over
    /// tokens of at most `horizon` bytes (module docs); `s` itself outside
    /// the counted part.
    pub(crate) fn representative(&self, s: u32, horizon: usize) -> u32 {
        match self.locate(s, horizon) {
            Some((k, j, cap)) => {
                self.base + self.count_of_class(self.class_of(k, cap), cap) * self.per + j
            }
            None => s,
        }
    }

    /// A compact slot number for a representative `s` of
    /// [`Self::representative`] with the same `horizon`: its count's class
    /// (within `horizon + 1` of `n`, `m`, within `horizon + 1` below `m`,
    /// or far from both) numbered `0..=2·(horizon+1)`, so a per-state table
    /// of entries has `O(horizon · per)` rows whatever `n` (states past the
    /// counted part follow).
    pub(crate) fn slot(&self, s: u32, horizon: usize) -> u32 {
        if s < self.base {
            return s;
        }
        match self.locate(s, horizon) {
            Some((k, j, cap)) => self.base + self.class_of(k, cap) * self.per + j,
            None => {
                let classes = cap_of(horizon).saturating_mul(2).saturating_add(1);
                self.base + classes * self.per + (s - self.end())
            }
        }
    }

    /// One past the last state of the counted part (`k = n`'s boundary).
    fn end(&self) -> u32 {
        self.base + self.n * self.per + 1
    }

    /// State `s` of the counted part as (count, offset in the count, the
    /// horizon's cap); `None` outside it.
    fn locate(&self, s: u32, horizon: usize) -> Option<(u32, u32, u32)> {
        (s >= self.base && s < self.end()).then(|| {
            let (k, j) = ((s - self.base) / self.per, (s - self.base) % self.per);
            (k, j, cap_of(horizon))
        })
    }

    /// The class of count `k`: its distance to `n` when under `cap`
    /// (`0..cap`), `m` itself or beyond it (`cap`), its distance below `m`
    /// when under `cap` (`cap + 1..2·cap`), or far from both (`2·cap`).
    /// Counts of one class accept, reject and split the same tokens of at
    /// most `cap − 1` bytes.
    fn class_of(&self, k: u32, cap: u32) -> u32 {
        let to_max = (self.n - k).min(cap);
        let to_min = self.m.saturating_sub(k).min(cap);
        if to_max < cap {
            to_max
        } else if to_min == 0 {
            cap
        } else if to_min < cap {
            cap + to_min
        } else {
            cap.saturating_mul(2)
        }
    }

    /// The count standing for class `c` of [`Self::class_of`].
    fn count_of_class(&self, c: u32, cap: u32) -> u32 {
        if c < cap {
            self.n - c
        } else if c == cap {
            self.m
        } else if c < cap.saturating_mul(2) {
            self.m - (c - cap)
        } else {
            0
        }
    }
}

/// `horizon + 1` as a count bound (tokens of at most `horizon` bytes
/// complete at most `horizon` units).
fn cap_of(horizon: usize) -> u32 {
    u32::try_from(horizon)
        .unwrap_or(u32::MAX - 1)
        .saturating_add(1)
}

/// The transitions of `P X{m,n} S` computed from the layout instead of
/// stored: `O(|X| + |S|)` table entries for any `n`, so building the
/// automaton costs microseconds and a few KiB whatever the count.
///
/// State ids: [`ByteDfa::DEAD`], the prefix chain `1..base`, then count `k`'s block
/// at `base + k·stride` (offset 0: the boundary; `1..per`: `X`'s
/// non-accepting states; `stride` is `per` rounded up to a power of two so
/// that a state splits into count and offset by a shift and a mask), the
/// last boundary (`k = n`) at `s_base - 1`, then `S`'s states from
/// `s_base`. Ids at offsets `per..stride` are never reached.
#[derive(Clone, Debug)]
pub(crate) struct CountedTables {
    pub(crate) ncls: usize,
    /// The class of each prefix byte (a class of its own).
    pub(crate) prefix_cls: Vec<u8>,
    pub(crate) base: u32,
    pub(crate) shift: u32,
    pub(crate) m: u32,
    pub(crate) n: u32,
    /// Row 0: from a boundary, where an `X` may start; rows `1..per`: from
    /// `X`'s states. Entries are offsets in the count's block (`stride`:
    /// the next count's boundary; 0: [`ByteDfa::DEAD`]).
    pub(crate) x_rows: Vec<u32>,
    /// `S`'s start transitions from a boundary (states of `S`, 0 = dead).
    pub(crate) s_start: Vec<u32>,
    pub(crate) s_start_accepting: bool,
    pub(crate) s_start_continues: bool,
    pub(crate) s_base: u32,
    /// `S`'s transitions, by `S` state (row 0 unused), in `S`'s numbering.
    pub(crate) s_rows: Vec<u32>,
    pub(crate) s_acc: Vec<bool>,
    pub(crate) s_cont: Vec<bool>,
    /// States laid out ([`ByteDfa::DEAD`] included; a few, such as `X`'s start
    /// inside each count, may be unreachable), for statistics and the
    /// state bound.
    pub(crate) reachable: usize,
}

impl CountedTables {
    #[inline]
    pub(crate) fn next(&self, s: u32, c: usize) -> u32 {
        if s == DEAD {
            DEAD
        } else if s < self.base {
            if self.prefix_cls[s as usize - 1] as usize == c {
                s + 1
            } else {
                DEAD
            }
        } else if s < self.s_base {
            let o = s - self.base;
            let r = o & ((1 << self.shift) - 1);
            let block = s - r;
            if r != 0 {
                return match self.x_rows[r as usize * self.ncls + c] {
                    0 => DEAD,
                    t => block + t,
                };
            }
            let k = o >> self.shift;
            if k < self.n {
                let t = self.x_rows[c];
                if t != 0 {
                    return block + t;
                }
            }
            if k >= self.m {
                let q = self.s_start[c];
                if q != DEAD {
                    return self.s_base + q - 1;
                }
            }
            DEAD
        } else {
            let q = (s - self.s_base + 1) as usize;
            match self.s_rows[q * self.ncls + c] {
                DEAD => DEAD,
                t => self.s_base + t - 1,
            }
        }
    }

    /// The count of a boundary state, `None` for other states.
    fn boundary(&self, s: u32) -> Option<u32> {
        let o = s.checked_sub(self.base)?;
        (s < self.s_base && o & ((1 << self.shift) - 1) == 0).then_some(o >> self.shift)
    }

    #[inline]
    pub(crate) fn is_accepting(&self, s: u32) -> bool {
        if s >= self.s_base {
            return self.s_acc[(s - self.s_base + 1) as usize];
        }
        self.boundary(s)
            .is_some_and(|k| k >= self.m && self.s_start_accepting)
    }

    #[inline]
    pub(crate) fn can_continue(&self, s: u32) -> bool {
        if s == DEAD {
            false
        } else if s >= self.s_base {
            self.s_cont[(s - self.s_base + 1) as usize]
        } else {
            // prefix and X states continue (X is live and not yet
            // complete); a boundary continues into an X or into S
            self.boundary(s)
                .is_none_or(|k| k < self.n || (k >= self.m && self.s_start_continues))
        }
    }

    /// One more than the largest state id.
    pub(crate) fn id_bound(&self) -> usize {
        self.s_base as usize + self.s_acc.len() - 1
    }

    /// States laid out ([`ByteDfa::DEAD`] included).
    pub(crate) fn reachable(&self) -> usize {
        self.reachable
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        (self.x_rows.capacity() + self.s_start.capacity() + self.s_rows.capacity()) * 4
            + self.prefix_cls.capacity()
            + self.s_acc.capacity()
            + self.s_cont.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zapspec_grammar::CharClass;

    fn matches(d: &ByteDfa, s: &[u8]) -> bool {
        let st = d.run(d.start(), s);
        st != DEAD && d.is_accepting(st)
    }

    #[test]
    fn literal_class_regex() {
        let d = ByteDfa::compile(&Terminal::Literal(b"ab\xff".to_vec())).unwrap();
        assert!(matches(&d, b"ab\xff"));
        assert!(!matches(&d, b"ab"));
        assert_ne!(d.run(d.start(), b"ab"), DEAD);
        assert_eq!(d.run(d.start(), b"b"), DEAD);
        let c = ByteDfa::compile(&Terminal::Class(CharClass::new(
            [('a', 'c'), ('é', 'é')],
            false,
        )))
        .unwrap();
        assert!(matches(&c, b"b") && matches(&c, "é".as_bytes()) && !matches(&c, b"d"));
        assert!(!matches(&c, b"ab"));
        let r = ByteDfa::compile(&Terminal::Regex("[0-9]*".into())).unwrap();
        assert!(r.is_nullable() && matches(&r, b"0123") && !matches(&r, b"1a"));
        let alt = ByteDfa::compile(&Terminal::Regex("a|ab".into())).unwrap();
        assert!(matches(&alt, b"a") && matches(&alt, b"ab"));
        let empty = ByteDfa::compile(&Terminal::Class(CharClass::new([], false))).unwrap();
        assert_eq!(empty.start(), DEAD);
        assert!(ByteDfa::from_regex("(").is_err());
    }
}
